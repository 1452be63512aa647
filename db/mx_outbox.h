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


#define MX_OUTBOX_TARGET_MSG  "KAFKA:msg"
#define MX_OUTBOX_TARGET_SCHD "KAFKA:schd"
#define MX_OUTBOX_TARGET_REF  "KAFKA:ref"

//  The KAFKA:ref document of a ref_master entry (docs/schemas/ref.schema.json)
//  as an SQL expression: list is the list's SQL, alias names a row with
//  rkey, value, updated_at and last_msg_id. The read API's reference lists
//  show the same members but list.
#define MX_REF_DOC(list, alias) \
    "jsonb_build_object ('list', " list ", 'key', " alias ".rkey, 'value', " alias ".value," \
    " 'updated_at', to_char (" alias ".updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')," \
    " 'last_msg_id', " alias ".last_msg_id)::text"

typedef struct {
    int64_t event_id;
    int64_t flid;
    char *key;                          //  partition_key: the FLID as decimal text
    char *event_type;                   //  UPSERT | TOMBSTONE
    int64_t state_version;
    int64_t msg_id;                     //  0: made by a job, not by a message
    char *payload;                      //  NULL: null value (or handed to the producer)
    char *source;                       //  "TYPE/STYP" of the message, NULL when unknown
    int attempts;                       //  failed deliveries so far
    //  ms: when ingress recorded the message that made it (proc_state
    //  created_at); -1 when unknown (made by a job, or archived)
    int64_t recorded_at;
} mx_outbox_event_t;

typedef struct {
    size_t count;
    mx_outbox_event_t *events;
    //  mx_outbox_take: due time of the row that backs off and stopped the
    //  batch, -1 if none.
    int64_t waiting_until;
} mx_outbox_batch_t;

void mx_outbox_batch_destroy (mx_outbox_batch_t **self_p);

//  Version of the payload documents (docs/consumers.md): the major of
//  docs/schemas/*.schema.json, raised only by a change consumers must adapt to.
#define MX_OUTBOX_SCHEMA_VERSION "1"

//  The Kafka headers of an event (docs/consumers.md): msgx-event-id,
//  msgx-msg-id, msgx-state-version, msgx-event-type, msgx-source,
//  msgx-schema-version. An event made by a job has no msgx-msg-id and no
//  msgx-source. Points into event and self.
typedef struct {
    const char *name;
    const char *value;                  //  text
} mx_outbox_header_t;

typedef struct {
    mx_outbox_header_t items [6];
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

//  The mark functions above, as the delivery unit takes them.
typedef int (mx_outbox_mark_fn) (PGconn *conn, const int64_t *event_ids, size_t count, int64_t now_ms,
                                 int *marked, char **error);

//  Which of ids (any order, repeats allowed) are PENDING events of target:
//  pending [i] for ids [i]. Exactly-once delivery asks it of the event ids
//  a topic's partitions end with.
int mx_outbox_pending_among (PGconn *conn, const char *target, const int64_t *ids, size_t count, bool *pending,
                             char **error);

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

//  ---------------------------------------------------------------------
//  Replay of dead letters (msgxctl replay --events)
//
//  KAFKA:msg: every DEAD row goes again on its own. KAFKA:schd: the unit is
//  the FLID. Its newest event, when DEAD, goes again together with every
//  older DEAD event of the FLID (those merged into it and older dead
//  states): the aggregator sends the newest alone and, on its
//  acknowledgement, marks the older ones SENT merged into it, exactly as it
//  does for a backlog of PENDING states. A DEAD state older than the
//  FLID's newest event is never sent on its own: a newer one that is
//  PENDING or SENT carries a later state, and sending the older one after
//  it would move the flight back on the compacted topic. Since such a FLID
//  has no PENDING event while its newest is DEAD, no flush of the
//  aggregator holds it while the rows are re-armed.

//  What a replay would take: with all, every replayable DEAD event (for
//  KAFKA:schd, the newest of each FLID), plus the FLIDs' older dead states
//  that cannot go, with the reason; else the events ids asks for. *json
//  (malloc'd) gets a JSON array, in event_id order, of {event_id, target,
//  flid, state_version, event_type, msg_id, state, attempts, last_error,
//  carries, refused}: carries counts the older DEAD events of the FLID that
//  go with it; refused is null, or says why the event cannot go.
int mx_outbox_replay_candidates (PGconn *conn, const int64_t *ids, size_t count, bool all, char **json,
                                 char **error);

//  Re-arms the events (ids: replayable candidates) in one transaction with
//  its audit_log row (action replay-events): DEAD -> PENDING, attempts 0,
//  next_attempt_at and merged_into NULL, last_error kept behind
//  "replayed, was: "; for KAFKA:schd the FLID's older DEAD events with it.
//  Conditions are checked again as the rows are locked: an event that
//  stopped qualifying is left alone. *moved gets the rows changed.
int mx_outbox_replay (PGconn *conn, const int64_t *ids, size_t count, const char *os_user, int64_t now_ms,
                      int *moved, char **error);

//  ---------------------------------------------------------------------
//  Retention (msgx.outbox.retention, the jobs actor)
//
//  A pass walks the outbox in event_id order, a page of rows per call, and
//  deletes the SENT events of the page sent before the cut-off. PENDING and
//  DEAD events are never deleted. A SENT event of a compacted topic
//  (KAFKA:schd, KAFKA:ref) stays while an older PENDING or DEAD event of
//  its key exists: a dead-letter replay takes the newest event of a key for
//  its newest state, and must keep finding this one.

typedef struct {
    int64_t after_id;                   //  in/out: the walk's position, 0 to start a pass
    bool done;                          //  out: nothing further can be due (page short, or
                                        //  it reached events created after the cut-off)
    int deleted_msg;                    //  out: rows deleted by this call, per target
    int deleted_schd;
    int deleted_ref;
} mx_outbox_purge_t;

//  One page of up to limit events after walk->after_id, in its own
//  transaction (a short one: the page's rows only).
int mx_outbox_purge (PGconn *conn, int64_t before_ms, int limit, mx_outbox_purge_t *walk, char **error);

#endif
