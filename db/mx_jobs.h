/*  mx_jobs - the maintenance statements (SPEC §6.2): history sweep of
    flights, schd_snap_log retention, proc_state archive.

    Each call is one bounded batch in its own transaction on the caller's
    connection (the jobs actor's, never a FIFO actor's). Rows another
    transaction holds are skipped (SKIP LOCKED): a job never waits for the
    processor or a replay, and takes them next time. Call again while a
    batch comes back full.

    Times are UTC epoch milliseconds; days are days since 1970-01-01.
    Functions return 0 and -1 with *error (a malloc'd line) on failure;
    a failed batch is rolled back whole.
*/
#ifndef MX_JOBS_H_INCLUDED
#define MX_JOBS_H_INCLUDED

#include <libpq-fe.h>
#include <stdint.h>

//  Which flights leave the live tables: operation_day before
//  before_day, and DELETED or not updated since quiet_before.
typedef struct {
    int64_t before_day;
    int64_t quiet_before_ms;
} mx_jobs_history_t;

//  How many live flights the history sweep would take now.
int mx_jobs_history_count (PGconn *conn, const mx_jobs_history_t *which, int64_t *count,
                           char **error);

//  Up to limit flights, in ONE transaction: copy flight_schd and every set
//  and route point row to the *_hst tables (archived_at = now), enqueue a
//  KAFKA:schd TOMBSTONE (null value, state_version + 1, no msg_id) for each
//  flight still ACTIVE (never deleted by FDEL), delete the live rows.
//  *moved gets the flights moved, *tombstones the events enqueued.
//  picked (when not NULL) is called with the flights once they are
//  selected and locked, before they are deleted and committed: the read
//  API's cache holds them off until the caller knows the outcome.
typedef void (mx_jobs_picked_fn) (void *arg, const int64_t *flids, size_t count);
int mx_jobs_history_batch (PGconn *conn, const mx_jobs_history_t *which, int limit, int64_t now_ms,
                           int *moved, int *tombstones, mx_jobs_picked_fn *picked, void *arg, char **error);

//  Delete up to limit schd_snap_log rows received before before_ms.
int mx_jobs_snap_log_batch (PGconn *conn, int64_t before_ms, int limit, int *deleted, char **error);

//  Move up to limit terminal proc_state rows finished before before_ms
//  whose mark is settled (confirmed or abandoned) to proc_state_hst
//  (archived_at = now). PENDING/FAILED rows and rows still owing a mark
//  never move; the identity table is not touched, so it keeps
//  deduplicating against archived messages.
int mx_jobs_archive_batch (PGconn *conn, int64_t before_ms, int limit, int64_t now_ms, int *moved,
                           char **error);

#endif
