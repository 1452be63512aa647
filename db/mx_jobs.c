/*  mx_jobs - see mx_jobs.h.  */
#include "mx_jobs.h"

#include <assert.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_flight_repo.h"
#include "mx_pg.h"

#define TS(n) "to_timestamp ($" #n "::bigint / 1000.0)"

//  Flights the history sweep takes ($1 day, $2 quiet-before ms).
#define S_HISTORY_WHERE \
    " WHERE operation_day < DATE '1970-01-01' + $1::integer" \
    " AND (lifecycle = 'DELETED' OR updated_at < " TS (2) ")"

//  A live row as a row of its history table, matched by column name (not
//  position, which migrations may not keep equal), plus archived_at.
#define S_COPY(name, table) \
    ", " name " AS (INSERT INTO " table "_hst SELECT r.* FROM " table " t CROSS JOIN stamp" \
    "  CROSS JOIN LATERAL jsonb_populate_record (NULL::" table "_hst, to_jsonb (t) || stamp.v) AS r" \
    "  WHERE t.flid = ANY ($1::bigint[]) RETURNING 1)"

//  Every set table of V001 (ROUT and ERUT share flight_route_point).
static const char *s_history_copy =
    "WITH stamp AS (SELECT jsonb_build_object ('archived_at', " TS (2) ") AS v)"
    S_COPY ("c_stand", "flight_stand")
    S_COPY ("c_gate", "flight_gate")
    S_COPY ("c_checkin", "flight_checkin")
    S_COPY ("c_carousel", "flight_carousel")
    S_COPY ("c_chute", "flight_chute")
    S_COPY ("c_airbridge", "flight_airbridge")
    S_COPY ("c_chock", "flight_chock")
    S_COPY ("c_delay", "flight_delay")
    S_COPY ("c_route", "flight_route_point")
    S_COPY ("c_flight", "flight_schd")
    " SELECT (SELECT count(*) FROM c_flight)";

static void
s_rollback (PGconn *conn)
{
    char *ignored = NULL;
    mx_pg_rollback (conn, &ignored);
    free (ignored);
}

int
mx_jobs_history_count (PGconn *conn, const mx_jobs_history_t *which, int64_t *count, char **error)
{
    assert (conn && which && count);
    *count = 0;
    char day [MX_PG_INT64_BUFSIZE], quiet [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (which->before_day, day), mx_pg_int64_text (which->quiet_before_ms, quiet)
    };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT count(*) FROM flight_schd" S_HISTORY_WHERE, 2, params, &res, error))
        return -1;
    *count = mx_pg_get_int64 (res, 0, 0);
    PQclear (res);
    return 0;
}

//  "{1,2,3}" for a bigint[] parameter.
static char *
s_bigint_array (const int64_t *values, size_t count)
{
    size_t size = 3 + count * 22;
    char *text = (char *) malloc (size);
    assert (text);
    size_t used = 0;
    text [used++] = '{';
    for (size_t i = 0; i < count; i++)
        used += (size_t) snprintf (text + used, size - used, "%s%" PRId64, i ? "," : "", values [i]);
    text [used++] = '}';
    text [used] = 0;
    return text;
}

int
mx_jobs_history_batch (PGconn *conn, const mx_jobs_history_t *which, int limit, int64_t now_ms,
                       int *moved, int *tombstones, mx_jobs_picked_fn *picked, void *arg, char **error)
{
    assert (conn && which && moved && tombstones);
    assert (limit >= 1);
    *moved = 0;
    *tombstones = 0;
    if (mx_pg_begin (conn, error))
        return -1;
    char day [MX_PG_INT64_BUFSIZE], quiet [MX_PG_INT64_BUFSIZE], limit_text [MX_PG_INT64_BUFSIZE];
    const char *pick_params [] = {
        mx_pg_int64_text (which->before_day, day), mx_pg_int64_text (which->quiet_before_ms, quiet),
        mx_pg_int64_text (limit, limit_text)
    };
    PGresult *res = NULL;
    //  The flight row lock keeps the processor off these flights until
    //  commit; a flight it holds now is being changed, so it is not quiet
    //  and is skipped.
    if (mx_pg_exec (conn, "SELECT flid, lifecycle = 'ACTIVE', state_version FROM flight_schd" S_HISTORY_WHERE
                          " ORDER BY operation_day, flid LIMIT $3::integer FOR UPDATE SKIP LOCKED",
                    3, pick_params, &res, error)) {
        s_rollback (conn);
        return -1;
    }
    int count = PQntuples (res);
    if (count == 0) {
        PQclear (res);
        return mx_pg_commit (conn, error);
    }
    int64_t *flids = (int64_t *) calloc ((size_t) count, sizeof (int64_t));
    assert (flids);
    for (int i = 0; i < count; i++)
        flids [i] = mx_pg_get_int64 (res, i, 0);
    if (picked)
        picked (arg, flids, (size_t) count);
    char *flid_array = s_bigint_array (flids, (size_t) count);
    free (flids);
    char now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { flid_array, mx_pg_int64_text (now_ms, now) };
    PGresult *copied = NULL;
    if (mx_pg_exec (conn, s_history_copy, 2, params, &copied, error))
        goto failed;
    bool complete = mx_pg_get_int64 (copied, 0, 0) == count;
    PQclear (copied);
    if (!complete) {
        *error = strdup ("history copy did not take every selected flight");
        goto failed;
    }
    //  Consumers of KAFKA:schd learn the flight is gone; one deleted by
    //  FDEL has had its tombstone already.
    for (int i = 0; i < count; i++) {
        if (strcmp (PQgetvalue (res, i, 1), "t") != 0)
            continue;
        int64_t event_id = 0;
        if (mx_event_insert (conn, MX_TARGET_SCHD, MX_EVENT_TOMBSTONE, mx_pg_get_int64 (res, i, 0),
                             mx_pg_get_int64 (res, i, 2) + 1, 0, NULL, now_ms, &event_id, error))
            goto failed;
        (*tombstones)++;
    }
    //  The set tables follow by ON DELETE CASCADE.
    const char *delete_params [] = { flid_array };
    if (mx_pg_exec (conn, "DELETE FROM flight_schd WHERE flid = ANY ($1::bigint[])", 1, delete_params,
                    NULL, error))
        goto failed;
    if (mx_pg_commit (conn, error))
        goto failed;
    PQclear (res);
    free (flid_array);
    *moved = count;
    return 0;

failed:
    s_rollback (conn);
    PQclear (res);
    free (flid_array);
    *tombstones = 0;
    return -1;
}

int
mx_jobs_snap_log_batch (PGconn *conn, int64_t before_ms, int limit, int *deleted, char **error)
{
    assert (conn && deleted);
    assert (limit >= 1);
    *deleted = 0;
    char before [MX_PG_INT64_BUFSIZE], limit_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (before_ms, before), mx_pg_int64_text (limit, limit_text) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "DELETE FROM schd_snap_log WHERE id IN (SELECT id FROM schd_snap_log"
                          " WHERE recv_at < " TS (1) " ORDER BY id LIMIT $2::integer)",
                    2, params, &res, error))
        return -1;
    *deleted = atoi (PQcmdTuples (res));
    PQclear (res);
    return 0;
}

int
mx_jobs_archive_batch (PGconn *conn, int64_t before_ms, int limit, int64_t now_ms, int *moved,
                       char **error)
{
    assert (conn && moved);
    assert (limit >= 1);
    *moved = 0;
    char before [MX_PG_INT64_BUFSIZE], limit_text [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (before_ms, before), mx_pg_int64_text (limit, limit_text), mx_pg_int64_text (now_ms, now)
    };
    PGresult *res = NULL;
    //  One statement: a row is copied and deleted together or not at all.
    //  The state predicate repeats proc_state_archive_idx's literally.
    if (mx_pg_exec (conn,
            "WITH picked AS ("
            "  SELECT msg_id FROM proc_state WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')"
            "  AND finished_at < " TS (1)
            "  AND (backfill_at IS NOT NULL OR backfill_abandoned_at IS NOT NULL)"
            "  ORDER BY finished_at LIMIT $2::integer FOR UPDATE SKIP LOCKED),"
            " moved AS (DELETE FROM proc_state p USING picked WHERE p.msg_id = picked.msg_id RETURNING p.*),"
            " stamp AS (SELECT jsonb_build_object ('archived_at', " TS (3) ") AS v)"
            " INSERT INTO proc_state_hst SELECT r.* FROM moved m CROSS JOIN stamp"
            " CROSS JOIN LATERAL jsonb_populate_record (NULL::proc_state_hst, to_jsonb (m) || stamp.v) AS r",
            3, params, &res, error))
        return -1;
    *moved = atoi (PQcmdTuples (res));
    PQclear (res);
    return 0;
}
