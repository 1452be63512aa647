/*  mx_bulk - the processor's batch statements: one round trip for many
    messages (array parameters), inside the caller's transaction.
    Times are UTC epoch ms. Returns 0 / -1 with *error (malloc'd line).
*/
#ifndef MX_BULK_H_INCLUDED
#define MX_BULK_H_INCLUDED

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_flight_repo.h"
#include "mx_procstate.h"

//  A PostgreSQL array literal of values (NULL entries stay NULL). malloc'd.
char *mx_bulk_text_array (const char *const *values, size_t count);
char *mx_bulk_int_array (const int64_t *values, size_t count);

//  Read each row's state and attempts, in msg_id order of ids. Rows not
//  PENDING/FAILED are reported with their state. state/attempts arrays are
//  filled per index of ids; a missing row gets state -1. Writes nothing:
//  mx_bulk_finish_send records the start time with the outcome.
int mx_bulk_start (PGconn *conn, const int64_t *ids, size_t count, int *states, int *attempts,
                   char **error);
//  The same in two halves, for work done while the server answers (the
//  mailbox read of the batch): after a successful send the connection runs
//  nothing until the result has been taken.
int mx_bulk_start_send (PGconn *conn, const int64_t *ids, size_t count, char **error);
int mx_bulk_start_result (PGconn *conn, const int64_t *ids, size_t count, int *states, int *attempts,
                          char **error);

//  Bind identities (the keys of messages in msg_id order) in the identity
//  table: holders [i] gets the msg_id holding keys [i] afterwards (ids [i]
//  itself, or an earlier message). One statement. The key of a message
//  that holds it goes onto its proc_state row with mx_bulk_finish_send.
int mx_bulk_bind_identities (PGconn *conn, const int64_t *ids, const char *const *keys, size_t count,
                             int64_t now_ms, int64_t *holders, char **error);

typedef struct {
    int64_t msg_id;
    mx_state_t state;                   //  SUCCEEDED / SKIPPED / DEAD
    mx_error_class_t error_class;
    const char *last_error;             //  may be NULL
    const char *outcome;                //  may be NULL
    const char *type, *styp;            //  META, may be NULL
    const char *identity_key;           //  the key it holds (bound), or NULL
} mx_bulk_terminal_t;

//  Terminal states with their backfill intent, one UPDATE for all; also
//  processing_started_at (if not yet set) and identity_key (if given and
//  not yet set), as the message-by-message path leaves them.
//  Sent in two halves, for work done while the server writes them: after
//  a successful send the connection runs nothing else until the result
//  (with the same count) has been taken.
int mx_bulk_finish_send (PGconn *conn, const mx_bulk_terminal_t *rows, size_t count, int64_t now_ms,
                         char **error);
int mx_bulk_finish_result (PGconn *conn, size_t count, char **error);

typedef struct {
    mx_target_t target;
    mx_event_type_t type;
    int64_t flid;
    int64_t state_version;
    int64_t msg_id;
    const char *payload;                //  NULL: null value (tombstone on KAFKA:schd)
} mx_bulk_event_t;

//  Outbox rows streamed into one COPY while they are produced: the server
//  inserts the first rows while the caller computes the next. open draws
//  `max` event ids (given out in order by put; an unused one is a gap in
//  the sequence) and starts the COPY: until close, the connection runs no
//  other statement. put never fails on its own: the first failure is kept
//  and close ends the COPY with an error (the transaction then fails) and
//  returns it. close frees the stream.
typedef struct mx_bulk_copy_t mx_bulk_copy_t;
int mx_bulk_events_open (PGconn *conn, size_t max, int64_t now_ms, mx_bulk_copy_t **copy, char **error);
void mx_bulk_events_put (mx_bulk_copy_t *copy, const mx_bulk_event_t *event);
int mx_bulk_events_close (mx_bulk_copy_t **copy, char **error);

#endif
