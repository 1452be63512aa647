/*  mx_procstate - the proc_state repository: one row per inbound message,
    its lifecycle, identity binding and backfill intent, plus the inbox
    cursor (W, hole_since).

    Times are UTC epoch milliseconds, -1 for SQL NULL. Every function
    returns 0 (or a count / found flag) on success and -1 with *error (a
    malloc'd line) on failure.

    Lifecycle writes are guarded by the state they expect (WHERE state IN
    ('PENDING','FAILED')), and every terminal write sets the backfill intent
    in the same statement (SPEC §3.3).
*/
#ifndef MX_PROCSTATE_H_INCLUDED
#define MX_PROCSTATE_H_INCLUDED

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_lifecycle.h"
#include "mx_pg.h"

//  ---------------------------------------------------------------------
//  Inbox cursor

typedef struct {
    int64_t w;                  //  committed_up_to
    int64_t hole_since;         //  -1 = no hole timer
    int64_t seeded_at;          //  -1 = never seeded
} mx_cursor_t;

int mx_cursor_get (PGconn *conn, mx_cursor_t *cursor, char **error);

//  Ingress round: in ONE transaction, a PENDING row (source poll) for each
//  id (ON CONFLICT DO NOTHING), the released hole if any (from > 0), and
//  the new cursor. *inserted gets the number of new rows.
int mx_procstate_enqueue (PGconn *conn, const int64_t *ids, const int64_t *received,
                          size_t count, int64_t w, int64_t hole_since,
                          int64_t released_from, int64_t released_to,
                          int64_t now_ms, int *inserted, char **error);

//  Cutover seeding: W = w and seeded_at = now in one statement, only on a
//  fresh instance (W = 0 and proc_state empty). Returns 1 seeded, 0 refused
//  (*error says why), -1 failure. dry_run: the same check, nothing written
//  (1: it would seed now).
int mx_cursor_seed (PGconn *conn, int64_t w, int64_t now_ms, bool dry_run, char **error);

//  Released holes (the late-arrival check): those released within
//  window_ms before now, least recently checked first, at most limit.
typedef struct {
    int64_t id;
    int64_t from, to;           //  the missing IDs it jumped over
    int late;                   //  late arrivals recorded so far
} mx_released_hole_t;

int mx_released_holes_due (PGconn *conn, int64_t now_ms, int64_t window_ms, int64_t limit,
                           mx_released_hole_t **holes, size_t *count, char **error);

//  A hole visited at now: the IDs found in it (any part of it, none:
//  count 0) are added to its late arrivals, each once, with the time of
//  the first detection. *added (malloc'd, ascending) and *added_count get
//  the IDs that were not recorded before.
int mx_released_hole_checked (PGconn *conn, int64_t id, int64_t now_ms, const int64_t *found,
                              size_t count, int64_t **added, size_t *added_count, char **error);

//  Compat entry: a PENDING row with source 'compat'; nothing if it exists.
int mx_procstate_insert_compat (PGconn *conn, int64_t msg_id, int64_t received_ms,
                                int64_t now_ms, char **error);

//  ---------------------------------------------------------------------
//  The FIFO head and the lifecycle

typedef struct {
    int64_t msg_id;
    mx_state_t state;
    int attempts;
    int64_t next_attempt_at;
    int64_t processing_started_at;
    int64_t updated_at;
    int64_t received_at;
    bool identity_bound;
    int starts;                 //  unfinished starts (proc_suspect): msgxd ended during its batch
} mx_head_t;

//  Lowest PENDING/FAILED row and the watermark W, read in ONE statement
//  (one snapshot): read apart, ingress could commit a smaller ID and a
//  higher W in between, and a compat row above the old W would look
//  claimable ahead of it. Returns 1 found, 0 none (*w still set), -1.
int mx_procstate_head (PGconn *conn, mx_head_t *head, int64_t *w, char **error);
//  The same, for one row (any state). Returns 1 found, 0 none, -1.
int mx_procstate_get (PGconn *conn, int64_t msg_id, mx_head_t *row, char **error);

//  The batch a PROCESS of `head` takes, recorded before any work: the
//  head, then the ready messages after it (PENDING, <= W, in order,
//  stopping at the first FAILED one or the first suspect), at
//  most max in all; a suspect (a proc_suspect row) head goes alone. A proc_start row of the
//  range is committed (*journal its id), with the head's first start mark
//  (processing_started_at): a crash or a hang during the work leaves the
//  row behind. The commit does not wait for the disk (mx_pg_begin_unflushed).
//  *count 0 when the head is not PENDING/FAILED any more. On success the
//  batch's own transaction is open (BEGIN sent with the commit: two round
//  trips in all). On failure nothing is open; *journal, when not 0, was
//  committed (only the BEGIN after it failed) and is the caller's to end.
int mx_procstate_batch_start (PGconn *conn, int64_t head, int64_t *ids, size_t max, size_t *count,
                              int64_t now_ms, int64_t *journal, char **error);
//  The batch's proc_start row deleted: inside its business transaction (it
//  goes with the outcomes), or after a rollback while the process runs on.
int mx_procstate_batch_end (PGconn *conn, int64_t journal, char **error);

//  The batch's end and COMMIT in one round trip, in two halves for work
//  done while the server commits: the proc_start row `journal` (none when
//  0) deleted inside the batch's transaction, then the COMMIT. After a
//  successful send the connection runs nothing until the result is taken;
//  commit holds what the two halves share. A failure rolls back: nothing
//  of the batch stays, and its proc_start row is still there for the
//  caller to end, as after any rollback.
typedef struct {
    char journal [MX_PG_INT64_BUFSIZE];
    const char *params [1];
    mx_pg_stmt_t stmts [2];
    size_t count;
} mx_procstate_commit_t;
int mx_procstate_batch_commit_send (PGconn *conn, int64_t journal, mx_procstate_commit_t *commit, char **error);
int mx_procstate_batch_commit_result (PGconn *conn, mx_procstate_commit_t *commit, char **error);
//  The proc_start rows left behind by an earlier life of msgxd: one
//  unfinished start in proc_suspect for each PENDING/FAILED message of each
//  range, the rows deleted, in one statement. Called only while no batch is in flight. *counted gets the
//  messages counted.
int mx_procstate_settle_starts (PGconn *conn, int *counted, char **error);
//  A crash-looping head: DEAD(EXHAUSTED) "crash-loop: ..." with the intent.
//  Returns 1 written, 0 not PENDING/FAILED any more, -1.
int mx_procstate_crash_loop (PGconn *conn, int64_t msg_id, int starts, int64_t now_ms, char **error);

//  processing_started_at = now, the first time only.
int mx_procstate_mark_started (PGconn *conn, int64_t msg_id, int64_t now_ms, char **error);

//  Record the decoded META (type/styp) on the row.
int mx_procstate_set_kind (PGconn *conn, int64_t msg_id, const char *type, const char *styp,
                           int64_t now_ms, char **error);

//  A non-business terminal in one UPDATE: state, class (MX_ERR_NONE for
//  SKIPPED), last_error, outcome, finished_at and the backfill intent.
//  Returns 1 written, 0 the row was not PENDING/FAILED any more.
int mx_procstate_finish (PGconn *conn, int64_t msg_id, mx_state_t state,
                         mx_error_class_t error_class, const char *last_error,
                         const char *outcome, int64_t now_ms, char **error);

//  A failed attempt, one UPDATE: attempts + 1; at max_attempts the row goes
//  straight to DEAD(EXHAUSTED) with the intent (last_error kept), else
//  FAILED with next_attempt_at = now + backoff for that attempt.
//  *dead tells which. Returns 1 written, 0 not PENDING/FAILED, -1.
int mx_procstate_fail (PGconn *conn, int64_t msg_id, mx_error_class_t error_class,
                       const char *last_error, int64_t now_ms, int max_attempts,
                       const int64_t *backoff, size_t backoff_count, int64_t backoff_cap,
                       bool *dead, char **error);

//  Poison escalation of a FAILED head: DEAD(EXHAUSTED) with the intent,
//  last_error kept. Returns 1 written, 0 not FAILED any more, -1.
int mx_procstate_poison (PGconn *conn, int64_t msg_id, const char *why, int64_t now_ms,
                         char **error);

//  Bind the business identity (its own statement, outside any business
//  transaction, so a rollback keeps it). Returns the msg_id that holds the
//  key (this one, or the earlier duplicate), -1 on failure.
int64_t mx_procstate_bind_identity (PGconn *conn, int64_t msg_id, const char *key,
                                    int64_t now_ms, char **error);

//  ---------------------------------------------------------------------
//  Replay (SPEC §3.4)

//  Rows replay may take: FAILED/DEAD with class CODEC_ERROR, UNSUPPORTED,
//  INFRA or EXHAUSTED. Selection by class (error_class != MX_ERR_NONE) or
//  by ids. The result is a JSON array text (malloc'd) of the matching rows
//  {msg_id, state, error_class, last_error, type, styp, attempts,
//  backfill_confirmed}; non-replayable ids asked for are listed with a
//  "refused" reason.
int mx_procstate_replay_candidates (PGconn *conn, mx_error_class_t error_class,
                                    const int64_t *ids, size_t id_count,
                                    char **json, char **error);

//  Move the selected replayable rows back to PENDING (attempts 0,
//  next_attempt_at, processing_started_at, backfill intent cleared, identity
//  kept) and write the audit_log row, in one transaction. Rows locked by a
//  backfill in progress are waited for (bounded by lock_timeout_ms), so a
//  replay and a mark never interleave. *moved gets the count.
int mx_procstate_replay (PGconn *conn, mx_error_class_t error_class,
                         const int64_t *ids, size_t id_count, const char *os_user,
                         int64_t lock_timeout_ms, int64_t now_ms, int *moved, char **error);

//  ---------------------------------------------------------------------
//  Backfill gate: the processed mark is written while the row is locked
//  in a state that owes it, so a replay (which needs the same row lock)
//  can never put the row back to PENDING between the check and the mark.

//  BEGIN + lock the row if it is terminal with an unconfirmed, unabandoned
//  intent. Returns 1 locked (transaction open: call _confirm or _release),
//  0 nothing owed (transaction closed), -1 failure (closed).
int mx_procstate_backfill_lock (PGconn *conn, int64_t msg_id, char **error);
//  Record the confirmed mark and COMMIT.
int mx_procstate_backfill_confirm (PGconn *conn, int64_t msg_id, int64_t now_ms, char **error);
//  ROLLBACK without recording anything.
void mx_procstate_backfill_release (PGconn *conn);

//  ---------------------------------------------------------------------
//  Audit

int mx_audit_write (PGconn *conn, const char *actor, const char *os_user, const char *action,
                    const char *target_json, const char *result, const char *detail,
                    int64_t now_ms, char **error);

#endif
