/*  mx_backfill - the processed-mark bookkeeping of proc_state (SPEC §6.1):
    which marks are owed now, the batched gate that keeps a mark and a
    replay of the same row apart, and the outcomes of a batch written in
    one statement.

    The gate. mx_backfill_lock opens a transaction and locks (FOR UPDATE)
    the rows it returns while they are in the state that owes a mark:
    terminal, intent set, not confirmed, not abandoned (the predicate of
    mx_procstate_backfill_lock, for a set of rows). The caller writes each
    mark into the mailbox while the locks are held, then mx_backfill_record
    writes every outcome in one UPDATE and commits. A replay needs the same
    row locks, so it either committed first (the row is PENDING, owes
    nothing and is not returned) or waits until the outcomes are committed.
    A terminal state written by a transaction that has not committed is not
    visible here, so it is never marked; if that transaction rolls back,
    nothing was written. Rows somebody else holds are skipped (SKIP
    LOCKED): the gate never waits.

    Lock hold time: one batch of mailbox writes. Each write is bounded by
    the mailbox timeouts (connect + write + read, twice when a lost
    connection is retried), and the caller stops at the first failed
    write, so the locks are held at most limit x one bounded write while
    the mailbox answers slowly, and one bounded failure when it is down. A
    replay waits that long at most (bounded further by its lock_timeout).

    Times are UTC epoch milliseconds. Functions return 0 (or a count) on
    success and -1 with *error (a malloc'd line) on failure.
*/
#ifndef MX_BACKFILL_H_INCLUDED
#define MX_BACKFILL_H_INCLUDED

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_mailbox.h"

typedef struct {
    int64_t msg_id;
    int attempts;               //  backfill_attempts so far
} mx_backfill_row_t;

typedef enum {
    MX_BACKFILL_CONFIRMED,      //  the mark was written now, or found written before
    MX_BACKFILL_MISSING,        //  no mailbox row: abandoned (MISSING)
    MX_BACKFILL_RETRY,          //  transient failure: attempts + 1, next try later
    MX_BACKFILL_EXHAUSTED       //  transient failure at the limit: abandoned (EXHAUSTED)
} mx_backfill_outcome_t;

typedef struct {
    int64_t msg_id;
    mx_backfill_outcome_t outcome;
    int attempts;               //  backfill_attempts after this try
    int64_t next_at;            //  RETRY: when to try again
    const char *error;          //  not CONFIRMED: the reason, kept in backfill_error
} mx_backfill_result_t;

//  Retry policy of a transient failure (msgx.pipeline.backfill-*).
typedef struct {
    int max_attempts;
    int64_t backoff_ms;         //  first delay; doubles per attempt
    int64_t backoff_cap_ms;
} mx_backfill_policy_t;

//  BEGIN, then lock up to limit owed rows that are due: backfill_next_at
//  <= now, or received_at <= overdue_before (received_at NULL: never by
//  that branch), with from <= msg_id <= to, ordered by backfill_attempts,
//  msg_id. rows holds limit entries. Returns the count; when > 0 the
//  transaction is open (finish with mx_backfill_record or
//  mx_backfill_release), when 0 or -1 it is closed.
int mx_backfill_lock (PGconn *conn, int64_t from, int64_t to, int64_t now_ms,
                      int64_t overdue_before_ms, int limit, mx_backfill_row_t *rows,
                      char **error);

//  The outcome of one mailbox mark for a row (pure): WRITTEN and ALREADY
//  confirm, MISSING abandons at once, ERROR retries after
//  backoff_ms * 2^(attempts-1) (capped) or abandons at max_attempts.
//  error is the mark's reason (ERROR) and is kept by pointer.
void mx_backfill_decide (const mx_backfill_row_t *row, mx_mark_t mark, const char *error,
                         const mx_backfill_policy_t *policy, int64_t now_ms,
                         mx_backfill_result_t *result);

//  Record the outcomes of the rows locked by mx_backfill_lock in one
//  UPDATE and COMMIT. Locked rows without a result stay as they were. On
//  failure the transaction is rolled back: nothing is recorded, and a
//  mark already written is found ALREADY next time.
int mx_backfill_record (PGconn *conn, const mx_backfill_result_t *results, size_t count,
                        int64_t now_ms, char **error);

//  ROLLBACK of the gate's transaction; harmless when none is open.
void mx_backfill_release (PGconn *conn);

//  Re-arm abandoned marks (msgxctl backfill recover): the listed ids, or
//  every abandoned row when all is true. Abandonment is cleared,
//  backfill_attempts = 0, backfill_next_at = now; the audit_log row is
//  written in the same transaction (actor msgxctl, action
//  backfill-recover). *rows gets the re-armed marks as they were, by
//  msg_id ascending: [{msg_id, reason (MISSING|EXHAUSTED), error}] (a new
//  reference). dry_run: the same statement rolled back, so the preview is
//  exactly what an act would re-arm now; only the audit row (result
//  dry-run) stays.
int mx_backfill_recover (PGconn *conn, const int64_t *ids, size_t id_count, bool all, bool dry_run,
                         const char *os_user, int64_t now_ms, json_t **rows, char **error);

#endif
