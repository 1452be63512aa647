/*  mx_procstate - see mx_procstate.h.  */
#include "mx_procstate.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_backoff.h"
#include "mx_bulk.h"
#include "mx_pg.h"

//  SQL fragments: a bigint ms parameter as timestamptz (NULL stays NULL),
//  and a timestamptz column as bigint ms (-1 for NULL).
#define TS(n) "to_timestamp ($" #n "::bigint / 1000.0)"
#define MS(col) "coalesce ((extract (epoch FROM " col ") * 1000)::bigint, -1)"

//  Terminal states owe a processed mark from the moment they are written.
#define S_TERMINAL_SET "finished_at = " TS (2) ", updated_at = " TS (2) ", backfill_next_at = " TS (2)

static mx_state_t
s_state_lookup (const char *name)
{
    int state = mx_state_lookup (name);
    assert (state >= 0 && "state not in the schema's list");
    return state < 0 ? MX_STATE_PENDING : (mx_state_t) state;
}

//  Text of ms, or NULL (SQL NULL) for -1.
static const char *
s_ts (int64_t ms, char buf [MX_PG_INT64_BUFSIZE])
{
    return ms < 0 ? NULL : mx_pg_int64_text (ms, buf);
}

//  ---------------------------------------------------------------------
//  Cursor

int
mx_cursor_get (PGconn *conn, mx_cursor_t *cursor, char **error)
{
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT committed_up_to, " MS ("hole_since") ", " MS ("seeded_at")
                          " FROM inbox_cursor", 0, NULL, &res, error))
        return -1;
    if (PQntuples (res) != 1) {
        PQclear (res);
        *error = strdup ("inbox_cursor has no row: the schema is not migrated");
        return -1;
    }
    cursor->w = mx_pg_get_int64 (res, 0, 0);
    cursor->hole_since = mx_pg_get_int64 (res, 0, 1);
    cursor->seeded_at = mx_pg_get_int64 (res, 0, 2);
    PQclear (res);
    return 0;
}

//  "{1,2,3}" for a bigint[] parameter; "NULL" entries for negatives.
static char *
s_bigint_array (const int64_t *values, size_t count, bool negative_is_null)
{
    size_t size = 2 + count * 22;
    char *text = (char *) malloc (size + 1);
    assert (text);
    size_t used = 0;
    text [used++] = '{';
    for (size_t i = 0; i < count; i++) {
        if (negative_is_null && values [i] < 0)
            used += (size_t) snprintf (text + used, size - used, "%sNULL", i ? "," : "");
        else
            used += (size_t) snprintf (text + used, size - used, "%s%" PRId64, i ? "," : "", values [i]);
    }
    text [used++] = '}';
    text [used] = 0;
    return text;
}

int
mx_procstate_enqueue (PGconn *conn, const int64_t *ids, const int64_t *received, size_t count,
                      int64_t w, int64_t hole_since, int64_t released_from, int64_t released_to,
                      int64_t now_ms, int *inserted, char **error)
{
    *inserted = 0;
    //  Lost with a crashed server, the rows and W go back together and are
    //  read again from the mailbox. Inside an open transaction the SET
    //  LOCAL would reach the caller's: refused, as mx_pg_begin_unflushed.
    if (PQtransactionStatus (conn) != PQTRANS_IDLE) {
        if (error)
            *error = strdup ("cannot record new messages: a transaction is already open");
        return -1;
    }
    char now [MX_PG_INT64_BUFSIZE];
    mx_pg_int64_text (now_ms, now);
    char *id_array = count > 0 ? s_bigint_array (ids, count, false) : NULL;
    char *received_array = count > 0 ? s_bigint_array (received, count, true) : NULL;
    const char *insert_params [] = { id_array, received_array, now };
    char from [MX_PG_INT64_BUFSIZE], to [MX_PG_INT64_BUFSIZE];
    const char *hole_params [] = { mx_pg_int64_text (released_from, from), mx_pg_int64_text (released_to, to), now };
    char w_text [MX_PG_INT64_BUFSIZE], hole [MX_PG_INT64_BUFSIZE];
    const char *cursor_params [] = { mx_pg_int64_text (w, w_text), s_ts (hole_since, hole), now };
    //  One round trip for the whole transaction: ingress's record is on
    //  the path of every message (docs/architecture.md, "Latency").
    PGresult *res = NULL;
    mx_pg_stmt_t stmts [6];
    size_t n = 0;
    stmts [n++] = (mx_pg_stmt_t) { "BEGIN", 0, NULL, NULL, false };
    stmts [n++] = (mx_pg_stmt_t) { "SET LOCAL synchronous_commit = off", 0, NULL, NULL, false };
    if (count > 0)
        stmts [n++] = (mx_pg_stmt_t) {
            "INSERT INTO proc_state (msg_id, state, source, received_at, created_at, updated_at)"
            " SELECT id, 'PENDING', 'poll', to_timestamp (received / 1000.0), " TS (3) ", " TS (3)
            " FROM unnest ($1::bigint[], $2::bigint[]) AS t (id, received)"
            " ON CONFLICT (msg_id) DO NOTHING", 3, insert_params, &res, true };
    if (released_from > 0)
        stmts [n++] = (mx_pg_stmt_t) { "INSERT INTO released_hole (id_from, id_to, released_at)"
                                       " VALUES ($1, $2, " TS (3) ")", 3, hole_params, NULL, true };
    stmts [n++] = (mx_pg_stmt_t) { "UPDATE inbox_cursor SET committed_up_to = $1, hole_since = " TS (2)
                                   ", updated_at = " TS (3), 3, cursor_params, NULL, true };
    stmts [n++] = (mx_pg_stmt_t) { "COMMIT", 0, NULL, NULL, false };
    int rc = mx_pg_pipeline (conn, stmts, n, NULL, error);
    free (id_array);
    free (received_array);
    if (rc) {
        PQclear (res);
        char *ignored = NULL;
        mx_pg_rollback (conn, &ignored);
        free (ignored);
        return -1;
    }
    if (res) {
        *inserted = atoi (PQcmdTuples (res));
        PQclear (res);
    }
    return 0;
}

int
mx_cursor_seed (PGconn *conn, int64_t w, int64_t now_ms, bool dry_run, char **error)
{
    char w_text [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (w, w_text), mx_pg_int64_text (now_ms, now) };
    PGresult *res = NULL;
    //  One statement: the freshness check and the seed cannot be split by
    //  another writer. The dry run asks the same question.
#define S_FRESH " WHERE committed_up_to = 0 AND seeded_at IS NULL AND NOT EXISTS (SELECT 1 FROM proc_state)"
    if (dry_run
        ? mx_pg_exec (conn, "SELECT committed_up_to FROM inbox_cursor" S_FRESH, 0, NULL, &res, error)
        : mx_pg_exec (conn,
            "UPDATE inbox_cursor SET committed_up_to = $1, seeded_at = " TS (2) ", hole_since = NULL,"
            " updated_at = " TS (2) S_FRESH
            " RETURNING committed_up_to", 2, params, &res, error))
        return -1;
#undef S_FRESH
    int seeded = PQntuples (res);
    PQclear (res);
    if (!seeded)
        *error = strdup ("cutover refused: this instance is not fresh (W is not 0, it was seeded "
                         "before, or messages are already recorded)");
    return seeded;
}

int
mx_procstate_insert_compat (PGconn *conn, int64_t msg_id, int64_t received_ms,
                            int64_t now_ms, char **error)
{
    char id [MX_PG_INT64_BUFSIZE], received [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (msg_id, id), s_ts (received_ms, received), mx_pg_int64_text (now_ms, now)
    };
    return mx_pg_exec (conn,
        "INSERT INTO proc_state (msg_id, state, source, received_at, created_at, updated_at)"
        " VALUES ($1, 'PENDING', 'compat', " TS (2) ", " TS (3) ", " TS (3) ")"
        " ON CONFLICT (msg_id) DO NOTHING",
        3, params, NULL, error);
}

//  ---------------------------------------------------------------------
//  Head and lifecycle

#define S_ROW_COLUMNS "msg_id, state, attempts, " MS ("next_attempt_at") ", " MS ("processing_started_at") \
                      ", " MS ("updated_at") ", " MS ("received_at") ", identity_key IS NOT NULL" \
                      ", coalesce ((SELECT s.starts FROM proc_suspect s WHERE s.msg_id = proc_state.msg_id), 0)"

//  The S_ROW_COLUMNS of row 0, starting at column `at`.
static void
s_row_read_at (PGresult *res, int at, mx_head_t *row)
{
    row->msg_id = mx_pg_get_int64 (res, 0, at);
    row->state = s_state_lookup (PQgetvalue (res, 0, at + 1));
    row->attempts = (int) mx_pg_get_int64 (res, 0, at + 2);
    row->next_attempt_at = mx_pg_get_int64 (res, 0, at + 3);
    row->processing_started_at = mx_pg_get_int64 (res, 0, at + 4);
    row->updated_at = mx_pg_get_int64 (res, 0, at + 5);
    row->received_at = mx_pg_get_int64 (res, 0, at + 6);
    row->identity_bound = strcmp (PQgetvalue (res, 0, at + 7), "t") == 0;
    row->starts = (int) mx_pg_get_int64 (res, 0, at + 8);
}

static void
s_row_read (PGresult *res, mx_head_t *row)
{
    s_row_read_at (res, 0, row);
}

int
mx_procstate_head (PGconn *conn, mx_head_t *head, int64_t *w, char **error)
{
    PGresult *res = NULL;
    //  The head predicate repeats the partial index's literally.
    if (mx_pg_exec (conn, "SELECT c.committed_up_to, h.* FROM inbox_cursor c LEFT JOIN LATERAL ("
                          " SELECT " S_ROW_COLUMNS " FROM proc_state"
                          " WHERE state IN ('PENDING', 'FAILED') ORDER BY msg_id LIMIT 1) h ON true",
                    0, NULL, &res, error))
        return -1;
    if (PQntuples (res) != 1) {
        PQclear (res);
        *error = strdup ("inbox_cursor has no row: the schema is not migrated");
        return -1;
    }
    *w = mx_pg_get_int64 (res, 0, 0);
    int found = !PQgetisnull (res, 0, 1);
    if (found)
        s_row_read_at (res, 1, head);
    PQclear (res);
    return found;
}

int
mx_procstate_get (PGconn *conn, int64_t msg_id, mx_head_t *row, char **error)
{
    char id [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (msg_id, id) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT " S_ROW_COLUMNS " FROM proc_state WHERE msg_id = $1",
                    1, params, &res, error))
        return -1;
    int found = PQntuples (res);
    if (found)
        s_row_read (res, row);
    PQclear (res);
    return found;
}

//  Runs a guarded UPDATE; returns 1 if it changed the row, 0 if not.
static int
s_update (PGconn *conn, const char *sql, int nparams, const char *const *params, char **error)
{
    PGresult *res = NULL;
    if (mx_pg_exec (conn, sql, nparams, params, &res, error))
        return -1;
    int changed = atoi (PQcmdTuples (res)) > 0;
    PQclear (res);
    return changed;
}

int
mx_procstate_batch_start (PGconn *conn, int64_t head, int64_t *ids, size_t max, size_t *count,
                          int64_t now_ms, int64_t *journal, char **error)
{
    assert (max >= 1);
    *count = 0;
    *journal = 0;
    char head_text [MX_PG_INT64_BUFSIZE], limit [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (head, head_text), mx_pg_int64_text ((int64_t) max, limit) };
    //  A start lost with a crashed server counts no death of msgxd.
    //  Inside an open transaction the SET LOCAL would reach the caller's.
    if (PQtransactionStatus (conn) != PQTRANS_IDLE) {
        if (error)
            *error = strdup ("cannot record a batch's start: a transaction is already open");
        return -1;
    }
    //  Two round trips: the ready list, then the record, its commit and the
    //  batch's own BEGIN.
    PGresult *res = NULL;
    mx_pg_stmt_t look [] = {
        { "BEGIN", 0, NULL, NULL, false },
        { "SET LOCAL synchronous_commit = off", 0, NULL, NULL, false },
        { "SELECT msg_id, state = 'PENDING' AND msg_id <= (SELECT committed_up_to FROM inbox_cursor),"
          " EXISTS (SELECT 1 FROM proc_suspect s WHERE s.msg_id = proc_state.msg_id)"
          " FROM proc_state WHERE state IN ('PENDING', 'FAILED') AND msg_id >= $1::bigint"
          " ORDER BY msg_id LIMIT $2::bigint", 2, params, &res, true }
    };
    if (mx_pg_pipeline (conn, look, sizeof look / sizeof look [0], NULL, error))
        goto failed;
    int rows = PQntuples (res);
    if (rows > 0 && mx_pg_get_int64 (res, 0, 0) == head) {
        ids [(*count)++] = head;
        //  A suspect goes alone, and the batch stops before the next one.
        bool head_suspect = strcmp (PQgetvalue (res, 0, 2), "t") == 0;
        for (int row = 1; !head_suspect && row < rows; row++) {
            if (strcmp (PQgetvalue (res, row, 1), "t") != 0 || strcmp (PQgetvalue (res, row, 2), "t") == 0)
                break;
            ids [(*count)++] = mx_pg_get_int64 (res, row, 0);
        }
    }
    PQclear (res);
    res = NULL;
    char first [MX_PG_INT64_BUFSIZE], last [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *insert_params [] = {
        mx_pg_int64_text (ids [0], first), mx_pg_int64_text (ids [*count ? *count - 1 : 0], last),
        mx_pg_int64_text (now_ms, now)
    };
    //  The head's start mark goes with it (the head-deadline counts from
    //  it); lost with a crashed server, the deadline counts from the row's
    //  last update instead.
    mx_pg_stmt_t record [] = {
        { "WITH started AS (UPDATE proc_state SET processing_started_at = " TS (3) ","
          "   updated_at = " TS (3) " WHERE msg_id = $1 AND processing_started_at IS NULL"
          "   AND state IN ('PENDING', 'FAILED'))"
          " INSERT INTO proc_start (first_id, last_id, started_at) VALUES ($1, $2, " TS (3) ")"
          " RETURNING id", 3, insert_params, &res, true },
        { "COMMIT", 0, NULL, NULL, false },
        { "BEGIN", 0, NULL, NULL, false }
    };
    size_t skip = *count > 0 ? 0 : 1, done = 0;
    int rc = mx_pg_pipeline (conn, record + skip, sizeof record / sizeof record [0] - skip, &done, error);
    if (res) {
        *journal = mx_pg_get_int64 (res, 0, 0);
        PQclear (res);
    }
    if (rc) {
        //  Committed but not begun again: the row stays the caller's
        //  (mx_procstate_batch_end after the failure).
        if (done + skip < 2)
            *journal = 0;
        char *ignored = NULL;
        mx_pg_rollback (conn, &ignored);
        free (ignored);
        *count = 0;
        return -1;
    }
    return 0;

failed:;
    char *ignored = NULL;
    mx_pg_rollback (conn, &ignored);
    free (ignored);
    *count = 0;
    *journal = 0;
    return -1;
}

int
mx_procstate_batch_end (PGconn *conn, int64_t journal, char **error)
{
    char id [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (journal, id) };
    return mx_pg_exec (conn, "DELETE FROM proc_start WHERE id = $1", 1, params, NULL, error);
}

int
mx_procstate_batch_commit_send (PGconn *conn, int64_t journal, mx_procstate_commit_t *commit, char **error)
{
    assert (conn && commit);
    memset (commit, 0, sizeof *commit);
    if (journal) {
        commit->params [0] = mx_pg_int64_text (journal, commit->journal);
        commit->stmts [commit->count++] = (mx_pg_stmt_t) { "DELETE FROM proc_start WHERE id = $1", 1,
                                                           commit->params, NULL, true };
    }
    commit->stmts [commit->count++] = (mx_pg_stmt_t) { "COMMIT", 0, NULL, NULL, false };
    if (mx_pg_pipeline_send (conn, commit->stmts, commit->count, error)) {
        char *ignored = NULL;
        mx_pg_rollback (conn, &ignored);
        free (ignored);
        return -1;
    }
    return 0;
}

int
mx_procstate_batch_commit_result (PGconn *conn, mx_procstate_commit_t *commit, char **error)
{
    assert (conn && commit);
    if (mx_pg_pipeline_result (conn, commit->stmts, commit->count, NULL, error) == 0)
        return 0;
    //  The DELETE failed and the COMMIT was skipped: the transaction is
    //  still open, failed.
    char *ignored = NULL;
    mx_pg_rollback (conn, &ignored);
    free (ignored);
    return -1;
}

int
mx_procstate_settle_starts (PGconn *conn, int *counted, char **error)
{
    *counted = 0;
    PGresult *res = NULL;
    //  One statement: a journal row is counted and gone together.
    if (mx_pg_exec (conn,
            "WITH gone AS (DELETE FROM proc_start RETURNING first_id, last_id)"
            " INSERT INTO proc_suspect (msg_id, starts)"
            " SELECT p.msg_id, count(*) FROM proc_state p JOIN gone"
            "   ON p.msg_id BETWEEN gone.first_id AND gone.last_id"
            " WHERE p.state IN ('PENDING', 'FAILED') GROUP BY p.msg_id"
            " ON CONFLICT (msg_id) DO UPDATE SET starts = proc_suspect.starts + EXCLUDED.starts",
            0, NULL, &res, error))
        return -1;
    *counted = atoi (PQcmdTuples (res));
    PQclear (res);
    return 0;
}

int
mx_procstate_crash_loop (PGconn *conn, int64_t msg_id, int starts, int64_t now_ms, char **error)
{
    char id [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE], starts_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (msg_id, id), mx_pg_int64_text (now_ms, now), mx_pg_int64_text (starts, starts_text)
    };
    return s_update (conn,
        "UPDATE proc_state SET state = 'DEAD', error_class = 'EXHAUSTED',"
        " last_error = 'crash-loop: started ' || $3 || ' times without an outcome (the process died or hung on it)',"
        " next_attempt_at = NULL, outcome = NULL, " S_TERMINAL_SET
        " WHERE msg_id = $1 AND state IN ('PENDING', 'FAILED')",
        3, params, error);
}

int
mx_procstate_mark_started (PGconn *conn, int64_t msg_id, int64_t now_ms, char **error)
{
    char id [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (msg_id, id), mx_pg_int64_text (now_ms, now) };
    return s_update (conn, "UPDATE proc_state SET processing_started_at = " TS (2) ", updated_at = " TS (2)
                           " WHERE msg_id = $1 AND processing_started_at IS NULL"
                           " AND state IN ('PENDING', 'FAILED')", 2, params, error) < 0 ? -1 : 0;
}

int
mx_procstate_set_kind (PGconn *conn, int64_t msg_id, const char *type, const char *styp,
                       int64_t now_ms, char **error)
{
    char id [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (msg_id, id), mx_pg_int64_text (now_ms, now), type, styp };
    return s_update (conn, "UPDATE proc_state SET msg_type = $3, msg_styp = $4, updated_at = " TS (2)
                           " WHERE msg_id = $1 AND (msg_type IS DISTINCT FROM $3 OR msg_styp IS DISTINCT FROM $4)",
                     4, params, error) < 0 ? -1 : 0;
}

int
mx_procstate_finish (PGconn *conn, int64_t msg_id, mx_state_t state, mx_error_class_t error_class,
                     const char *last_error, const char *outcome, int64_t now_ms, char **error)
{
    assert (state == MX_STATE_SKIPPED || state == MX_STATE_DEAD || state == MX_STATE_SUCCEEDED);
    char id [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (msg_id, id), mx_pg_int64_text (now_ms, now), mx_state_name (state),
        error_class == MX_ERR_NONE ? NULL : mx_error_class_name (error_class), last_error, outcome
    };
    return s_update (conn,
        "UPDATE proc_state SET state = $3, error_class = $4, last_error = coalesce ($5, last_error),"
        " outcome = $6, next_attempt_at = NULL, " S_TERMINAL_SET
        " WHERE msg_id = $1 AND state IN ('PENDING', 'FAILED')",
        6, params, error);
}

int
mx_procstate_fail (PGconn *conn, int64_t msg_id, mx_error_class_t error_class, const char *last_error,
                   int64_t now_ms, int max_attempts, const int64_t *backoff, size_t backoff_count,
                   int64_t backoff_cap, bool *dead, char **error)
{
    mx_head_t row;
    int found = mx_procstate_get (conn, msg_id, &row, error);
    if (found <= 0)
        return found;
    if (row.state != MX_STATE_PENDING && row.state != MX_STATE_FAILED)
        return 0;
    int attempts = row.attempts + 1;
    *dead = attempts >= max_attempts;
    char id [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE], count [MX_PG_INT64_BUFSIZE];
    char next [MX_PG_INT64_BUFSIZE];
    if (*dead) {
        //  The class becomes EXHAUSTED; the reason text stays.
        const char *params [] = {
            mx_pg_int64_text (msg_id, id), mx_pg_int64_text (now_ms, now),
            mx_pg_int64_text (attempts, count), last_error, mx_error_class_name (error_class)
        };
        return s_update (conn,
            "UPDATE proc_state SET state = 'DEAD', error_class = 'EXHAUSTED', attempts = $3,"
            " last_error = $5 || ': ' || $4, next_attempt_at = NULL, outcome = NULL, " S_TERMINAL_SET
            " WHERE msg_id = $1 AND state IN ('PENDING', 'FAILED') AND attempts = $3 - 1",
            5, params, error);
    }
    int64_t delay = mx_backoff_list_ms (backoff, backoff_count, backoff_cap, attempts);
    const char *params [] = {
        mx_pg_int64_text (msg_id, id), mx_pg_int64_text (now_ms, now), mx_pg_int64_text (attempts, count),
        mx_error_class_name (error_class), last_error, mx_pg_int64_text (now_ms + delay, next)
    };
    //  attempts = $3 - 1 makes a concurrent second writer a no-op: a
    //  failure is counted once, where the message is held.
    return s_update (conn,
        "UPDATE proc_state SET state = 'FAILED', error_class = $4, last_error = $5, attempts = $3,"
        " next_attempt_at = " TS (6) ", updated_at = " TS (2)
        " WHERE msg_id = $1 AND state IN ('PENDING', 'FAILED') AND attempts = $3 - 1",
        6, params, error);
}

int
mx_procstate_poison (PGconn *conn, int64_t msg_id, const char *why, int64_t now_ms, char **error)
{
    char id [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (msg_id, id), mx_pg_int64_text (now_ms, now), why };
    return s_update (conn,
        "UPDATE proc_state SET state = 'DEAD', error_class = 'EXHAUSTED',"
        " last_error = coalesce (last_error || ' ', '') || '(' || $3 || ')', next_attempt_at = NULL, "
        S_TERMINAL_SET " WHERE msg_id = $1 AND state = 'FAILED'",
        3, params, error);
}

int64_t
mx_procstate_bind_identity (PGconn *conn, int64_t msg_id, const char *key, int64_t now_ms, char **error)
{
    char id [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { key, mx_pg_int64_text (msg_id, id), mx_pg_int64_text (now_ms, now) };
    PGresult *res = NULL;
    //  One statement: claim the key in the identity table (which outlives
    //  archiving), learn who holds it, and record it on our row if it is
    //  ours.
    if (mx_pg_exec (conn,
            "WITH claimed AS ("
            "  INSERT INTO identity (identity_key, msg_id, bound_at) VALUES ($1, $2, " TS (3) ")"
            "  ON CONFLICT (identity_key) DO NOTHING RETURNING msg_id),"
            " holder AS ("
            "  SELECT msg_id FROM claimed UNION ALL"
            "  SELECT msg_id FROM identity WHERE identity_key = $1 LIMIT 1),"
            " recorded AS ("
            "  UPDATE proc_state SET identity_key = $1, updated_at = " TS (3)
            "  WHERE msg_id = $2 AND identity_key IS NULL AND $2 = (SELECT msg_id FROM holder LIMIT 1)"
            "  RETURNING msg_id)"
            " SELECT msg_id FROM holder LIMIT 1",
            3, params, &res, error))
        return -1;
    int64_t holder = PQntuples (res) ? mx_pg_get_int64 (res, 0, 0) : -1;
    PQclear (res);
    if (holder < 0)
        *error = strdup ("identity binding returned no holder");
    return holder;
}

//  ---------------------------------------------------------------------
//  Replay

#define S_REPLAYABLE "state IN ('FAILED', 'DEAD') AND error_class IN ('CODEC_ERROR', 'UNSUPPORTED', 'INFRA', 'EXHAUSTED')"

int
mx_procstate_replay_candidates (PGconn *conn, mx_error_class_t error_class, const int64_t *ids,
                                size_t id_count, char **json, char **error)
{
    *json = NULL;
    char *id_array = s_bigint_array (ids, id_count, false);
    const char *params [] = {
        error_class == MX_ERR_NONE ? NULL : mx_error_class_name (error_class), id_array
    };
    PGresult *res = NULL;
    //  Asked-for ids that do not qualify are listed with the reason, so a
    //  dry run tells the operator exactly what would and would not move.
    int rc = mx_pg_exec (conn,
        "WITH asked AS (SELECT unnest ($2::bigint[]) AS msg_id)"
        " SELECT coalesce (json_agg (item ORDER BY (item->>'msg_id')::bigint), '[]')::text FROM ("
        "  SELECT json_build_object ('msg_id', p.msg_id, 'state', p.state, 'error_class', p.error_class,"
        "   'last_error', p.last_error, 'type', p.msg_type, 'styp', p.msg_styp, 'attempts', p.attempts,"
        "   'backfill_confirmed', p.backfill_at IS NOT NULL,"
        "   'refused', CASE WHEN p.msg_id IS NULL THEN NULL WHEN p." S_REPLAYABLE " THEN NULL"
        "     ELSE 'not replayable: state ' || p.state || coalesce (', class ' || p.error_class, '') END) AS item"
        "  FROM proc_state p WHERE ($1::text IS NOT NULL AND p.error_class = $1 AND p." S_REPLAYABLE ")"
        "     OR p.msg_id IN (SELECT msg_id FROM asked)"
        "  UNION ALL"
        "  SELECT json_build_object ('msg_id', a.msg_id, 'refused', 'no such message') FROM asked a"
        "  WHERE NOT EXISTS (SELECT 1 FROM proc_state p WHERE p.msg_id = a.msg_id)) rows",
        2, params, &res, error);
    free (id_array);
    if (rc)
        return -1;
    *json = strdup (PQgetvalue (res, 0, 0));
    PQclear (res);
    return 0;
}

int
mx_procstate_replay (PGconn *conn, mx_error_class_t error_class, const int64_t *ids, size_t id_count,
                     const char *os_user, int64_t lock_timeout_ms, int64_t now_ms, int *moved, char **error)
{
    *moved = 0;
    if (mx_pg_begin (conn, error))
        return -1;
    char timeout [MX_PG_INT64_BUFSIZE];
    const char *timeout_params [] = { mx_pg_int64_text (lock_timeout_ms, timeout) };
    if (mx_pg_exec (conn, "SELECT set_config ('lock_timeout', $1 || 'ms', true)",
                    1, timeout_params, NULL, error))
        goto failed;
    char *id_array = s_bigint_array (ids, id_count, false);
    char now [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        error_class == MX_ERR_NONE ? NULL : mx_error_class_name (error_class), id_array,
        mx_pg_int64_text (now_ms, now)
    };
    PGresult *res = NULL;
    //  Row locks make this wait for a backfill that holds the row, and make
    //  a later backfill see the row PENDING (and so not mark it).
    //  Its unfinished starts go too: a replayed message starts afresh.
    int rc = mx_pg_exec (conn,
        "WITH moved AS (UPDATE proc_state SET state = 'PENDING', attempts = 0, next_attempt_at = NULL,"
        " processing_started_at = NULL, backfill_next_at = NULL, backfill_attempts = 0,"
        " backfill_error = NULL, backfill_abandoned_at = NULL, backfill_abandoned_reason = NULL,"
        " finished_at = NULL, outcome = NULL, updated_at = " TS (3)
        " WHERE " S_REPLAYABLE " AND (($1::text IS NOT NULL AND error_class = $1)"
        "   OR msg_id = ANY ($2::bigint[]))"
        " RETURNING msg_id),"
        " cleared AS (DELETE FROM proc_suspect s USING moved WHERE s.msg_id = moved.msg_id)"
        " SELECT msg_id FROM moved ORDER BY msg_id",
        3, params, &res, error);
    free (id_array);
    if (rc)
        goto failed;
    *moved = PQntuples (res);
    size_t count = (size_t) *moved;
    int64_t *moved_ids = (int64_t *) calloc (count + 1, sizeof (int64_t));
    for (size_t i = 0; i < count; i++)
        moved_ids [i] = mx_pg_get_int64 (res, (int) i, 0);
    PQclear (res);
    char *moved_array = s_bigint_array (moved_ids, count, false);
    free (moved_ids);
    //  {1,2} -> [1,2] for the JSON target.
    moved_array [0] = '[';
    moved_array [strlen (moved_array) - 1] = ']';
    char *target = NULL;
    if (asprintf (&target, "{\"msg_ids\":%s%s%s%s}", moved_array,
                  error_class != MX_ERR_NONE ? ",\"class\":\"" : "",
                  error_class != MX_ERR_NONE ? mx_error_class_name (error_class) : "",
                  error_class != MX_ERR_NONE ? "\"" : "") < 0)
        target = NULL;
    free (moved_array);
    char detail [64];
    snprintf (detail, sizeof detail, "%d row%s back to PENDING", *moved, *moved == 1 ? "" : "s");
    rc = mx_audit_write (conn, "msgxctl", os_user, "replay", target, "ok", detail, now_ms, error);
    free (target);
    if (rc)
        goto failed;
    return mx_pg_commit (conn, error);

failed:;
    char *ignored = NULL;
    mx_pg_rollback (conn, &ignored);
    free (ignored);
    *moved = 0;
    return -1;
}

//  ---------------------------------------------------------------------
//  Backfill gate

int
mx_procstate_backfill_lock (PGconn *conn, int64_t msg_id, char **error)
{
    if (mx_pg_begin (conn, error))
        return -1;
    char id [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (msg_id, id) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT msg_id FROM proc_state WHERE msg_id = $1"
                          " AND state IN ('SUCCEEDED', 'SKIPPED', 'DEAD') AND backfill_next_at IS NOT NULL"
                          " AND backfill_at IS NULL AND backfill_abandoned_at IS NULL FOR UPDATE",
                    1, params, &res, error)) {
        mx_procstate_backfill_release (conn);
        return -1;
    }
    int locked = PQntuples (res);
    PQclear (res);
    if (!locked)
        mx_procstate_backfill_release (conn);
    return locked;
}

int
mx_procstate_backfill_confirm (PGconn *conn, int64_t msg_id, int64_t now_ms, char **error)
{
    char id [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (msg_id, id), mx_pg_int64_text (now_ms, now) };
    if (mx_pg_exec (conn, "UPDATE proc_state SET backfill_at = " TS (2) ", backfill_next_at = NULL,"
                          " backfill_error = NULL, updated_at = " TS (2) " WHERE msg_id = $1",
                    2, params, NULL, error)) {
        mx_procstate_backfill_release (conn);
        return -1;
    }
    return mx_pg_commit (conn, error);
}

void
mx_procstate_backfill_release (PGconn *conn)
{
    char *ignored = NULL;
    mx_pg_rollback (conn, &ignored);
    free (ignored);
}

//  ---------------------------------------------------------------------
//  Audit

int
mx_audit_write (PGconn *conn, const char *actor, const char *os_user, const char *action,
                const char *target_json, const char *result, const char *detail,
                int64_t now_ms, char **error)
{
    char now [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (now_ms, now), actor, os_user, action, target_json, result, detail
    };
    return mx_pg_exec (conn,
        "INSERT INTO audit_log (at, actor, os_user, action, target, result, detail)"
        " VALUES (" TS (1) ", $2, $3, $4, $5::jsonb, $6, $7)",
        7, params, NULL, error);
}

int
mx_released_holes_due (PGconn *conn, int64_t now_ms, int64_t window_ms, int64_t limit,
                       mx_released_hole_t **holes, size_t *count, char **error)
{
    *holes = NULL;
    *count = 0;
    char now_text [MX_PG_INT64_BUFSIZE], window [MX_PG_INT64_BUFSIZE], batch [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (now_ms, now_text), mx_pg_int64_text (window_ms, window), mx_pg_int64_text (limit, batch)
    };
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "SELECT id, id_from, id_to, coalesce (array_length (late_ids, 1), 0) FROM released_hole"
            " WHERE released_at > to_timestamp (($1::bigint - $2::bigint) / 1000.0)"
            " ORDER BY last_checked_at NULLS FIRST, id LIMIT $3::bigint",
            3, params, &res, error))
        return -1;
    size_t rows = (size_t) PQntuples (res);
    *holes = (mx_released_hole_t *) calloc (rows + 1, sizeof (mx_released_hole_t));
    assert (*holes);
    for (size_t row = 0; row < rows; row++)
        (*holes) [row] = (mx_released_hole_t) {
            mx_pg_get_int64 (res, (int) row, 0), mx_pg_get_int64 (res, (int) row, 1),
            mx_pg_get_int64 (res, (int) row, 2), (int) mx_pg_get_int64 (res, (int) row, 3)
        };
    *count = rows;
    PQclear (res);
    return 0;
}

int
mx_released_hole_checked (PGconn *conn, int64_t id, int64_t now_ms, const int64_t *found, size_t count,
                          int64_t **added, size_t *added_count, char **error)
{
    *added = NULL;
    *added_count = 0;
    char id_text [MX_PG_INT64_BUFSIZE], now_text [MX_PG_INT64_BUFSIZE];
    char *array = count ? mx_bulk_int_array (found, count) : NULL;
    const char *params [] = { mx_pg_int64_text (id, id_text), mx_pg_int64_text (now_ms, now_text), array };
    PGresult *res = NULL;
    //  Set operations, not a search of the array per ID: a hole the
    //  upstream filled late may hold many.
    int rc = mx_pg_exec (conn,
            "WITH hole AS (SELECT id, coalesce (late_ids, '{}') AS known FROM released_hole WHERE id = $1::bigint),"
            " added AS (SELECT unnest (coalesce ($3::bigint[], '{}')) AS late EXCEPT SELECT unnest (known) FROM hole),"
            " checked AS (UPDATE released_hole r SET last_checked_at = to_timestamp ($2::bigint / 1000.0),"
            "   late_ids = CASE WHEN EXISTS (SELECT 1 FROM added)"
            "     THEN ARRAY (SELECT unnest (h.known) UNION SELECT late FROM added ORDER BY 1) ELSE r.late_ids END,"
            "   late_detected_at = CASE WHEN EXISTS (SELECT 1 FROM added)"
            "     THEN coalesce (r.late_detected_at, to_timestamp ($2::bigint / 1000.0)) ELSE r.late_detected_at END"
            "   FROM hole h WHERE r.id = h.id RETURNING r.id)"
            " SELECT late FROM added ORDER BY late", 3, params, &res, error);
    free (array);
    if (rc)
        return -1;
    size_t rows = (size_t) PQntuples (res);
    *added = (int64_t *) calloc (rows + 1, sizeof (int64_t));
    assert (*added);
    for (size_t row = 0; row < rows; row++)
        (*added) [row] = mx_pg_get_int64 (res, (int) row, 0);
    *added_count = rows;
    PQclear (res);
    return 0;
}
