/*  mx_backfill - see mx_backfill.h.  */
#include "mx_backfill.h"

#include <assert.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_backoff.h"
#include "mx_bulk.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_utf8.h"

#define TS(n) "to_timestamp ($" #n "::bigint / 1000.0)"

//  A mark is owed: the partial index proc_state_backfill_sweep_idx repeats
//  this predicate, so keep them literally equal.
#define S_OWED "state IN ('SUCCEEDED', 'SKIPPED', 'DEAD') AND backfill_next_at IS NOT NULL" \
               " AND backfill_at IS NULL AND backfill_abandoned_at IS NULL"

static const char *s_outcome_names [] = { "CONFIRMED", "MISSING", "RETRY", "EXHAUSTED" };

static void
s_rollback (PGconn *conn)
{
    char *ignored = NULL;
    mx_pg_rollback (conn, &ignored);
    free (ignored);
}

int
mx_backfill_lock (PGconn *conn, int64_t from, int64_t to, int64_t now_ms, int64_t overdue_before_ms,
                  int limit, mx_backfill_row_t *rows, char **error)
{
    assert (conn && rows);
    assert (limit >= 1);
    if (mx_pg_begin (conn, error))
        return -1;
    char from_text [MX_PG_INT64_BUFSIZE], to_text [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    char overdue [MX_PG_INT64_BUFSIZE], limit_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (from, from_text), mx_pg_int64_text (to, to_text), mx_pg_int64_text (now_ms, now),
        mx_pg_int64_text (overdue_before_ms, overdue), mx_pg_int64_text (limit, limit_text)
    };
    PGresult *res = NULL;
    //  received_at NULL makes the overdue comparison NULL, never true.
    //  SKIP LOCKED: a row a replay is moving is the replay's; the gate
    //  never waits for it.
    if (mx_pg_exec (conn,
            "SELECT msg_id, backfill_attempts FROM proc_state"
            " WHERE " S_OWED " AND msg_id BETWEEN $1::bigint AND $2::bigint"
            " AND (backfill_next_at <= " TS (3) " OR received_at <= " TS (4) ")"
            " ORDER BY backfill_attempts, msg_id LIMIT $5::integer"
            " FOR UPDATE SKIP LOCKED",
            5, params, &res, error)) {
        s_rollback (conn);
        return -1;
    }
    int count = PQntuples (res);
    for (int i = 0; i < count; i++) {
        rows [i].msg_id = mx_pg_get_int64 (res, i, 0);
        rows [i].attempts = (int) mx_pg_get_int64 (res, i, 1);
    }
    PQclear (res);
    if (count == 0)
        s_rollback (conn);
    return count;
}

void
mx_backfill_decide (const mx_backfill_row_t *row, mx_mark_t mark, const char *error,
                    const mx_backfill_policy_t *policy, int64_t now_ms, mx_backfill_result_t *result)
{
    assert (row && policy && result);
    assert (policy->max_attempts >= 1);
    *result = (mx_backfill_result_t) { .msg_id = row->msg_id, .attempts = row->attempts, .next_at = -1 };
    switch (mark) {
        case MX_MARK_WRITTEN:
        case MX_MARK_ALREADY:
            result->outcome = MX_BACKFILL_CONFIRMED;
            break;
        case MX_MARK_MISSING:
            result->outcome = MX_BACKFILL_MISSING;
            result->attempts = row->attempts + 1;
            result->error = "mailbox row missing";
            break;
        case MX_MARK_ERROR:
            result->attempts = row->attempts + 1;
            result->error = error ? error : "mailbox write failed";
            if (result->attempts >= policy->max_attempts)
                result->outcome = MX_BACKFILL_EXHAUSTED;
            else {
                result->outcome = MX_BACKFILL_RETRY;
                result->next_at = now_ms + mx_backoff_doubling_ms (policy->backoff_ms, policy->backoff_cap_ms,
                                                                   result->attempts);
            }
            break;
    }
}

int
mx_backfill_record (PGconn *conn, const mx_backfill_result_t *results, size_t count, int64_t now_ms,
                    char **error)
{
    assert (conn);
    assert (results || count == 0);
    if (count == 0)
        return mx_pg_commit (conn, error);
    //  The outcomes travel as parallel arrays, one element per row: values
    //  are never pasted into the statement, and arrays cost the server
    //  less to read than a JSON document of the same rows.
    int64_t *ids = (int64_t *) calloc (count, sizeof (int64_t));
    int64_t *attempts = (int64_t *) calloc (count, sizeof (int64_t));
    int64_t *next_ats = (int64_t *) calloc (count, sizeof (int64_t));
    const char **outcomes = (const char **) calloc (count, sizeof (char *));
    const char **errors = (const char **) calloc (count, sizeof (char *));
    assert (ids && attempts && next_ats && outcomes && errors);
    for (size_t i = 0; i < count; i++) {
        const mx_backfill_result_t *result = &results [i];
        ids [i] = result->msg_id;
        attempts [i] = result->attempts;
        //  Read for a RETRY only.
        next_ats [i] = result->outcome == MX_BACKFILL_RETRY ? result->next_at : 0;
        outcomes [i] = s_outcome_names [result->outcome];
        //  The server refuses text that is not UTF-8, and one such error
        //  would fail the whole record: that error is not kept.
        const char *text = result->outcome != MX_BACKFILL_CONFIRMED ? result->error : NULL;
        errors [i] = text && mx_utf8_invalid_at ((const unsigned char *) text, strlen (text)) == strlen (text)
                   ? text : NULL;
    }
    char *arrays [5] = {
        mx_bulk_int_array (ids, count), mx_bulk_text_array (outcomes, count), mx_bulk_int_array (attempts, count),
        mx_bulk_int_array (next_ats, count), mx_bulk_text_array (errors, count)
    };
    free (ids);
    free (attempts);
    free (next_ats);
    free (outcomes);
    free (errors);
    char now [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        arrays [0], arrays [1], arrays [2], arrays [3], arrays [4], mx_pg_int64_text (now_ms, now)
    };
    //  A confirmed mark clears the intent; an abandoned one keeps it (the
    //  mark is still owed, recover re-arms it); a retry moves next_at. The
    //  ids repeated as msg_id = ANY make the rows probes of the primary
    //  key: joined to the unnested arrays alone, the planner may hash the
    //  whole table.
    int rc = mx_pg_exec (conn,
        "UPDATE proc_state p SET"
        " backfill_at = CASE WHEN o.outcome = 'CONFIRMED' THEN " TS (6) " ELSE p.backfill_at END,"
        " backfill_next_at = CASE o.outcome WHEN 'CONFIRMED' THEN NULL"
        "   WHEN 'RETRY' THEN to_timestamp (o.next_at / 1000.0) ELSE p.backfill_next_at END,"
        " backfill_attempts = o.attempts,"
        " backfill_error = CASE WHEN o.outcome = 'CONFIRMED' THEN NULL ELSE o.error END,"
        " backfill_abandoned_at = CASE WHEN o.outcome IN ('MISSING', 'EXHAUSTED') THEN " TS (6) " END,"
        " backfill_abandoned_reason = CASE WHEN o.outcome IN ('MISSING', 'EXHAUSTED') THEN o.outcome END,"
        " updated_at = " TS (6)
        " FROM unnest ($1::bigint[], $2::text[], $3::integer[], $4::bigint[], $5::text[])"
        "   AS o (msg_id, outcome, attempts, next_at, error)"
        " WHERE p.msg_id = ANY ($1::bigint[]) AND p.msg_id = o.msg_id",
        6, params, NULL, error);
    for (int i = 0; i < 5; i++)
        free (arrays [i]);
    if (rc) {
        s_rollback (conn);
        return -1;
    }
    return mx_pg_commit (conn, error);
}

void
mx_backfill_release (PGconn *conn)
{
    s_rollback (conn);
}

//  "[1,2,3]" of ids.
static json_t *
s_id_array (const int64_t *ids, size_t count)
{
    json_t *array = json_array ();
    for (size_t i = 0; i < count; i++)
        json_array_append_new (array, json_integer (ids [i]));
    return array;
}

int
mx_backfill_recover (PGconn *conn, const int64_t *ids, size_t id_count, bool all, bool dry_run,
                     const char *os_user, int64_t now_ms, json_t **rows, char **error)
{
    assert (conn && rows);
    assert (all || ids || id_count == 0);
    *rows = NULL;
    json_t *asked = s_id_array (ids, all ? 0 : id_count);
    char *asked_text = json_dumps (asked, JSON_COMPACT);
    json_decref (asked);
    char now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { all ? "true" : "false", asked_text, mx_pg_int64_text (now_ms, now) };
    if (mx_pg_begin (conn, error)) {
        free (asked_text);
        return -1;
    }
    PGresult *res = NULL;
    int rc = mx_pg_exec (conn,
        "WITH rearmed AS ("
        "  UPDATE proc_state p SET backfill_abandoned_at = NULL, backfill_abandoned_reason = NULL,"
        "  backfill_attempts = 0, backfill_next_at = " TS (3) ", updated_at = " TS (3)
        "  FROM (SELECT msg_id, backfill_abandoned_reason AS reason, backfill_error AS error FROM proc_state"
        "        WHERE backfill_abandoned_at IS NOT NULL AND backfill_at IS NULL"
        "        AND state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')"
        "        AND ($1::boolean OR msg_id IN (SELECT value::bigint FROM json_array_elements_text ($2::json)))"
        "        FOR UPDATE) was"
        "  WHERE p.msg_id = was.msg_id"
        "  RETURNING was.msg_id, was.reason, was.error)"
        " SELECT msg_id, reason, error FROM rearmed ORDER BY msg_id",
        3, params, &res, error);
    free (asked_text);
    if (rc) {
        s_rollback (conn);
        return -1;
    }
    size_t count = (size_t) PQntuples (res);
    int64_t *list = (int64_t *) calloc (count + 1, sizeof (int64_t));
    assert (list);
    json_t *found = json_array ();
    for (size_t i = 0; i < count; i++) {
        list [i] = mx_pg_get_int64 (res, (int) i, 0);
        json_array_append_new (found, json_pack ("{s:I,s:s?,s:s?}", "msg_id", (json_int_t) list [i],
            "reason", PQgetisnull (res, (int) i, 1) ? NULL : PQgetvalue (res, (int) i, 1),
            "error", PQgetisnull (res, (int) i, 2) ? NULL : PQgetvalue (res, (int) i, 2)));
    }
    PQclear (res);
    json_t *target = json_pack ("{s:o}", "msg_ids", s_id_array (list, count));
    free (list);
    if (all)
        json_object_set_new (target, "all", json_true ());
    else
        json_object_set_new (target, "asked", s_id_array (ids, id_count));
    char *target_text = json_dumps (target, JSON_COMPACT);
    json_decref (target);
    char detail [80];
    snprintf (detail, sizeof detail, "%zu abandoned mark%s %s", count, count == 1 ? "" : "s",
              dry_run ? "would be re-armed" : "re-armed");
    //  A dry run undoes the statement, then records that it looked.
    if (dry_run)
        s_rollback (conn);
    rc = mx_audit_write (conn, "msgxctl", os_user, "backfill-recover", target_text, dry_run ? "dry-run" : "ok",
                         detail, now_ms, error);
    free (target_text);
    if (!dry_run && (rc || mx_pg_commit (conn, error))) {
        s_rollback (conn);
        rc = -1;
    }
    if (rc) {
        json_decref (found);
        return -1;
    }
    *rows = found;
    return 0;
}
