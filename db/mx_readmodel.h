/*  mx_readmodel - what the instance reports about itself, read from
    PostgreSQL: the backlog figures of /health and /metrics, and the
    liveness check. Read-only; every function runs one statement on the
    caller's connection. Times are UTC epoch ms, -1 for none.
*/
#ifndef MX_READMODEL_H_INCLUDED
#define MX_READMODEL_H_INCLUDED

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

//  The outbox targets, in the order of mx_backlog_t's arrays.
#define MX_READMODEL_TARGETS 3
extern const char *mx_readmodel_targets [MX_READMODEL_TARGETS];

typedef struct {
    int64_t watermark;
    int64_t unfinished;                 //  PENDING/FAILED
    int64_t oldest_unfinished;          //  received (or created) at
    int64_t unmarked;                   //  terminal, mark owed
    int64_t oldest_unmarked;            //  finished (or updated) at
    int64_t abandoned;                  //  marks given up
    int64_t released_holes;
    int64_t late_holes;                 //  released holes with a late arrival
    int64_t pending [MX_READMODEL_TARGETS];
    int64_t dead [MX_READMODEL_TARGETS];
    int64_t oldest_pending [MX_READMODEL_TARGETS];  //  created at
} mx_backlog_t;

//  The backlog in one statement. Returns 0, or -1 with *error (malloc'd;
//  also when inbox_cursor has no row).
int mx_readmodel_backlog (PGconn *conn, mx_backlog_t *backlog, char **error);

//  A round trip to the server. Returns 0 with *detail (static text), or
//  -1 with *error (malloc'd, may be NULL).
int mx_readmodel_ping (PGconn *conn, const char **detail, char **error);

//  ---------------------------------------------------------------------
//  msgxctl status, dead and show (JSON as msgxctl prints it)

//  The inbox cursor: *cursor {w, hole_since, hole_age_s, seeded_at} (NULL
//  when there is no row) and *w. Returns 0 / -1 with *error.
int mx_readmodel_cursor (PGconn *conn, int64_t now_ms, json_t **cursor, int64_t *w, char **error);

//  The FIFO head: *head {msg_id, state, attempts, next_attempt_at} (NULL
//  when none) and *backing_off (its next attempt is after now).
int mx_readmodel_head (PGconn *conn, int64_t now_ms, json_t **head, bool *backing_off, char **error);

//  Messages per state: {PENDING, FAILED, SUCCEEDED, SKIPPED, DEAD}.
int mx_readmodel_counts (PGconn *conn, json_t **counts, char **error);

//  Unfinished messages, terminal ones still owing their mark, and the
//  highest registered ID (0 when none).
int mx_readmodel_queue (PGconn *conn, int64_t *unfinished, int64_t *unmarked, int64_t *registered,
                        char **error);

//  One page of DEAD rows as a JSON array text (malloc'd): at most limit
//  rows with IDs above after, oldest first; messages, or with events the
//  outbox's dead letters. total counts every DEAD row and more says whether
//  rows follow this page, both from the page's own snapshot.
int mx_readmodel_dead (PGconn *conn, bool events, int64_t limit, int64_t after, char **rows,
                       int64_t *total, bool *more, char **error);

//  One message: its proc_state row (or its archived one) as JSON text
//  (*row NULL when neither has it) and its outbox events as a JSON array
//  text; both malloc'd.
int mx_readmodel_message (PGconn *conn, int64_t msg_id, char **row, char **events, char **error);

//  One flight's history for msgxctl flight: *messages, a JSON array text
//  of the messages that changed it (KAFKA:msg events, oldest first:
//  msg_id, type, styp, received_at, state_version, changed codes), and
//  *events, every outbox event for it (event_id, target, event_type,
//  state_version, msg_id, state, attempts, created_at, sent_at); both
//  malloc'd. Reads msg_event by flid: no index serves that, so it is
//  bounded by the session's statement timeout.
int mx_readmodel_flight_history (PGconn *conn, int64_t flid, char **messages, char **events,
                                 char **error);

#endif
