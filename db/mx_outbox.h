/*  mx_outbox - the delivery side of msg_event (SPEC §5).

    The processor writes PENDING rows; the dispatcher (KAFKA:msg) and the
    schd-aggregator (KAFKA:schd) take them here, mark what Kafka
    acknowledged SENT and record what it did not. event_id is the delivery
    order. Only the delivering actor of a target changes that target's rows.
    Times are UTC epoch milliseconds. Functions return 0 / -1 with *error
    (a malloc'd line).
*/
#ifndef MX_OUTBOX_H_INCLUDED
#define MX_OUTBOX_H_INCLUDED

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_producer.h"

#define MX_OUTBOX_TARGET_MSG  "KAFKA:msg"
#define MX_OUTBOX_TARGET_SCHD "KAFKA:schd"

typedef struct {
    int64_t event_id;
    int64_t flid;
    char *key;                          //  partition_key: the FLID as decimal text
    char *event_type;                   //  UPSERT | TOMBSTONE
    int64_t state_version;
    int64_t msg_id;                     //  0: made by a job, not by a message
    char *payload;                      //  NULL: null value
    char *source;                       //  "TYPE/STYP" of the message, NULL when unknown
    int attempts;                       //  failed deliveries so far
} mx_outbox_event_t;

typedef struct {
    size_t count;
    mx_outbox_event_t *events;
    //  mx_outbox_take: due time of the row that backs off and stopped the
    //  batch, -1 if none.
    int64_t waiting_until;
} mx_outbox_batch_t;

void mx_outbox_batch_destroy (mx_outbox_batch_t **self_p);

//  The Kafka headers of an event (SPEC §5): msgx-event-id, msgx-msg-id,
//  msgx-state-version, msgx-event-type, msgx-source. An event made by a job
//  has no msgx-msg-id and no msgx-source. Points into event and self.
typedef struct {
    mx_producer_header_t items [5];
    size_t count;
    char event_id [24];
    char msg_id [24];
    char state_version [24];
} mx_outbox_headers_t;

void mx_outbox_headers (const mx_outbox_event_t *event, mx_outbox_headers_t *self);

//  KAFKA:msg and any other target delivered one by one: up to limit
//  PENDING events of target in event_id order. A row that backs off
//  (next_attempt_at after now) ends the batch: nothing behind it goes first.
int mx_outbox_take (PGconn *conn, const char *target, size_t limit, int64_t now_ms,
                    mx_outbox_batch_t **batch, char **error);

//  KAFKA:schd: for up to limit FLIDs with PENDING events (the FLIDs waiting
//  longest first), the newest event of each: the last one committed, which
//  carries the highest state_version of the flight. A FLID whose newest
//  event backs off is left out until due.
int mx_outbox_take_schd (PGconn *conn, size_t limit, int64_t now_ms, mx_outbox_batch_t **batch,
                         char **error);

//  The acknowledged events, SENT, in one statement. *marked (may be NULL):
//  rows changed.
int mx_outbox_mark_sent (PGconn *conn, const int64_t *event_ids, size_t count, int64_t now_ms,
                         int *marked, char **error);

//  KAFKA:schd, in one statement: each acknowledged event SENT, and every
//  older PENDING event of its FLID SENT with merged_into = it (the state it
//  carried is included). *marked (may be NULL): rows changed, merged ones
//  included.
int mx_outbox_mark_schd_sent (PGconn *conn, const int64_t *event_ids, size_t count, int64_t now_ms,
                              int *marked, char **error);

typedef struct {
    int64_t event_id;
    const char *reason;
} mx_outbox_failure_t;

typedef struct {
    int64_t event_id;
    int attempts;                       //  after this failure
    bool dead;                          //  reached max_attempts: DEAD, the dead-letter record
    int64_t next_attempt_at;            //  -1 when dead
} mx_outbox_outcome_t;

//  Failed deliveries, in one statement: attempts + 1 and last_error; then
//  DEAD when attempts reach max_attempts, else PENDING again at
//  now + backoff [attempts - 1] (the last step repeats). A KAFKA:schd event
//  that dies takes the older PENDING events of its FLID with it (DEAD,
//  merged_into = it): sending them later would move the flight back.
//  outcomes (may be NULL) has room for count; *done gets how many rows
//  were still PENDING and changed.
int mx_outbox_fail (PGconn *conn, const mx_outbox_failure_t *failures, size_t count, int max_attempts,
                    const int64_t *backoff, size_t backoff_count, int64_t now_ms,
                    mx_outbox_outcome_t *outcomes, size_t *done, char **error);

#endif
