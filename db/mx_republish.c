/*  mx_republish - see mx_republish.h.  */
#include "mx_republish.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <czmq.h>

#include "mx_flight.h"
#include "mx_flight_repo.h"
#include "mx_outbox.h"
#include "mx_pg.h"

#define TS(n) "to_timestamp ($" #n "::bigint / 1000.0)"

//  A scope as parameters $1 scope name, $2 day, $3 flids (bigint[] text),
//  $4 reference.
#define S_IN_SCOPE(alias) \
    " ($1::text = 'all' OR ($1::text = 'day' AND " alias ".operation_day = $2::date)" \
    "  OR ($1::text = 'flids' AND " alias ".flid = ANY ($3::bigint[])))"

typedef struct {
    const char *values [4];
    char *flids;                //  "{1,2,3}", NULL when the scope is no list
} s_scope_params_t;

static void
s_scope_params (const mx_republish_scope_t *scope, s_scope_params_t *params)
{
    params->flids = NULL;
    if (scope->count > 0) {
        size_t size = scope->count * 21 + 3;
        params->flids = (char *) malloc (size);
        assert (params->flids);
        size_t used = 0;
        params->flids [used++] = '{';
        for (size_t i = 0; i < scope->count; i++)
            used += (size_t) snprintf (params->flids + used, size - used, "%s%" PRId64, i ? "," : "",
                                       scope->flids [i]);
        snprintf (params->flids + used, size - used, "}");
    }
    params->values [0] = scope->count > 0 ? "flids" : scope->day ? "day" : scope->all ? "all" : "reference";
    params->values [1] = scope->count > 0 ? NULL : scope->day;
    params->values [2] = params->flids;
    params->values [3] = scope->reference ? "true" : "false";
}

int
mx_republish_count (PGconn *conn, const mx_republish_scope_t *scope, int64_t *flights,
                    int64_t *entries, char **unknown, char **error)
{
    assert (conn && scope && flights && entries);
    if (unknown)
        *unknown = NULL;
    s_scope_params_t params;
    s_scope_params (scope, &params);
    PGresult *res = NULL;
    int rc = mx_pg_exec (conn,
        "SELECT (SELECT count (*) FROM flight_schd f WHERE" S_IN_SCOPE ("f") "),"
        " CASE WHEN $4::bool THEN (SELECT count (*) FROM ref_master) ELSE 0 END,"
        " (SELECT string_agg (a.flid::text, ', ' ORDER BY a.flid)"
        "  FROM (SELECT DISTINCT unnest ($3::bigint[]) AS flid) a"
        "  WHERE NOT EXISTS (SELECT 1 FROM flight_schd f WHERE f.flid = a.flid))",
        4, params.values, &res, error);
    free (params.flids);
    if (rc)
        return -1;
    *flights = mx_pg_get_int64 (res, 0, 0);
    *entries = mx_pg_get_int64 (res, 0, 1);
    if (unknown && !PQgetisnull (res, 0, 2))
        *unknown = strdup (mx_pg_get_text (res, 0, 2));
    PQclear (res);
    return 0;
}

int
mx_republish_create (PGconn *conn, const mx_republish_scope_t *scope, const char *os_user,
                     int64_t now_ms, int64_t *job_id, char **running, char **error)
{
    assert (conn && scope && job_id && running);
    *job_id = 0;
    *running = NULL;
    s_scope_params_t params;
    s_scope_params (scope, &params);
    char now [MX_PG_INT64_BUFSIZE];
    const char *values [] = {
        params.values [0], params.values [1], params.values [2], params.values [3], os_user,
        mx_pg_int64_text (now_ms, now)
    };
    //  The running job, if any, answers instead: the index would refuse
    //  the insert anyway, this says which job is in the way.
    PGresult *res = NULL;
    int rc = mx_pg_exec (conn,
        "WITH busy AS (SELECT job_id, flights_sent + entries_sent AS sent,"
        "               flights_total + entries_total AS total FROM republish_job WHERE state = 'RUNNING'),"
        " made AS (INSERT INTO republish_job (scope, flids, day, reference, flights_total, entries_total,"
        "          os_user, created_at, updated_at)"
        "  SELECT $1::text, $3::bigint[], $2::date, $4::bool,"
        "   (SELECT count (*) FROM flight_schd f WHERE" S_IN_SCOPE ("f") "),"
        "   CASE WHEN $4::bool THEN (SELECT count (*) FROM ref_master) ELSE 0 END,"
        "   $5::text, " TS (6) ", " TS (6)
        "  WHERE NOT EXISTS (SELECT 1 FROM busy) RETURNING job_id)"
        " SELECT (SELECT job_id FROM made), b.job_id, b.sent, b.total"
        " FROM (SELECT 1) one LEFT JOIN busy b ON true",
        6, values, &res, error);
    free (params.flids);
    if (rc)
        return -1;
    int created = !PQgetisnull (res, 0, 0);
    if (created)
        *job_id = mx_pg_get_int64 (res, 0, 0);
    else
        *running = zsys_sprintf ("republish job %" PRId64 " is running (%" PRId64 " of %" PRId64
                                 " events sent): one job at a time; wait for it or republish --cancel",
                                 mx_pg_get_int64 (res, 0, 1), mx_pg_get_int64 (res, 0, 2),
                                 mx_pg_get_int64 (res, 0, 3));
    PQclear (res);
    return created;
}

int
mx_republish_running (PGconn *conn, int64_t *job_id, char **error)
{
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT job_id FROM republish_job WHERE state = 'RUNNING'", 0, NULL, &res, error))
        return -1;
    int found = PQntuples (res) == 1;
    *job_id = found ? mx_pg_get_int64 (res, 0, 0) : 0;
    PQclear (res);
    return found;
}

int
mx_republish_cancel (PGconn *conn, int64_t now_ms, int64_t *job_id, int64_t *left, char **error)
{
    char now [MX_PG_INT64_BUFSIZE];
    const char *values [] = { mx_pg_int64_text (now_ms, now) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "UPDATE republish_job SET state = 'CANCELLED', finished_at = " TS (1) ", updated_at = " TS (1)
            " WHERE state = 'RUNNING'"
            " RETURNING job_id, greatest (flights_total + entries_total - flights_sent - entries_sent, 0)",
            1, values, &res, error))
        return -1;
    int found = PQntuples (res) == 1;
    *job_id = found ? mx_pg_get_int64 (res, 0, 0) : 0;
    *left = found ? mx_pg_get_int64 (res, 0, 1) : 0;
    PQclear (res);
    return found;
}

//  The next flights of the job after its cursor, in FLID order.
#define S_NEXT_FLIGHTS \
    "SELECT f.flid FROM republish_job j JOIN flight_schd f ON f.flid > j.cursor_flid" \
    " AND (j.scope = 'all' OR (j.scope = 'day' AND f.operation_day = j.day)" \
    "      OR (j.scope = 'flids' AND f.flid = ANY (j.flids)))" \
    " WHERE j.job_id = $1::bigint ORDER BY f.flid LIMIT $2::bigint"

//  The next entries after the cursor: locked (FOR SHARE waits for a
//  reference message changing one), their events written, the cursor
//  moved to the last one; no row when none is left.
#define S_NEXT_ENTRIES \
    "WITH next AS (SELECT r.rtype, r.rkey, r.value, r.updated_at, r.last_msg_id" \
    "  FROM ref_master r, republish_job j WHERE j.job_id = $1::bigint" \
    "  AND (j.cursor_rtype IS NULL OR (r.rtype, r.rkey) > (j.cursor_rtype, j.cursor_rkey))" \
    "  ORDER BY r.rtype, r.rkey LIMIT $2::bigint FOR SHARE OF r)," \
    " ev AS (INSERT INTO msg_event (target, partition_key, event_type, flid, state_version, msg_id," \
    "  payload, created_at)" \
    "  SELECT '" MX_OUTBOX_TARGET_REF "', n.rtype || ':' || n.rkey, 'UPSERT', 0, coalesce (n.last_msg_id, 0)," \
    "  n.last_msg_id, " MX_REF_DOC ("n.rtype", "n") ", " TS (3) \
    "  FROM next n ORDER BY n.rtype, n.rkey RETURNING 1)," \
    " last AS (SELECT rtype, rkey FROM next ORDER BY rtype DESC, rkey DESC LIMIT 1)" \
    " UPDATE republish_job j SET cursor_rtype = last.rtype, cursor_rkey = last.rkey," \
    "  entries_sent = j.entries_sent + (SELECT count (*) FROM ev), updated_at = " TS (3) \
    " FROM last WHERE j.job_id = $1::bigint" \
    " RETURNING (SELECT count (*) FROM ev)"

//  The flights' events; *sent gets how many were written.
static int
s_send_flights (PGconn *conn, const int64_t *flids, size_t count, const mx_tz_t *zone, int64_t now_ms,
                int64_t *sent, char **error)
{
    *sent = 0;
    mx_flight_t **flights = (mx_flight_t **) calloc (count, sizeof *flights);
    assert (flights);
    //  Locked: a message changing one of them waits for this step (and
    //  this step for it), so the event written here is the newest.
    int rc = mx_flight_repo_load (conn, flids, count, true, flights, error);
    for (size_t i = 0; i < count && rc == 0; i++) {
        const mx_flight_t *flight = flights [i];
        if (!flight)
            continue;           //  gone meanwhile (the history job)
        char *text = NULL;
        if (!flight->deleted) {
            json_t *doc = mx_flight_state_doc (flight, zone);
            text = json_dumps (doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
            json_decref (doc);
            assert (text);
        }
        int64_t event_id = 0;
        rc = mx_event_insert (conn, MX_TARGET_SCHD, flight->deleted ? MX_EVENT_TOMBSTONE : MX_EVENT_UPSERT,
                              flight->flid, flight->state_version, flight->last_msg_id, text, now_ms,
                              &event_id, error);
        free (text);
        if (rc == 0)
            (*sent)++;
    }
    for (size_t i = 0; i < count; i++)
        mx_flight_destroy (&flights [i]);
    free (flights);
    return rc;
}

static int
s_step (PGconn *conn, int64_t job_id, size_t limit, const mx_tz_t *zone, int64_t now_ms,
        mx_republish_step_t *step, char **error)
{
    char id [MX_PG_INT64_BUFSIZE], limit_text [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *values [] = {
        mx_pg_int64_text (job_id, id), mx_pg_int64_text ((int64_t) limit, limit_text),
        mx_pg_int64_text (now_ms, now)
    };
    //  The job row, locked: a cancel waits for the step, then wins.
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT state = 'RUNNING', reference FROM republish_job"
                          " WHERE job_id = $1::bigint FOR UPDATE", 1, values, &res, error))
        return -1;
    bool running = PQntuples (res) == 1 && strcmp (PQgetvalue (res, 0, 0), "t") == 0;
    bool reference = running && strcmp (PQgetvalue (res, 0, 1), "t") == 0;
    PQclear (res);
    if (!running)
        return 0;
    step->running = true;

    if (mx_pg_exec (conn, S_NEXT_FLIGHTS, 2, values, &res, error))
        return -1;
    size_t count = (size_t) PQntuples (res);
    int64_t *flids = (int64_t *) calloc (count + 1, sizeof *flids);
    assert (flids);
    for (size_t i = 0; i < count; i++)
        flids [i] = mx_pg_get_int64 (res, (int) i, 0);
    PQclear (res);
    if (count > 0) {
        int rc = s_send_flights (conn, flids, count, zone, now_ms, &step->flights, error);
        char last [MX_PG_INT64_BUFSIZE], sent [MX_PG_INT64_BUFSIZE];
        const char *move [] = {
            values [0], mx_pg_int64_text (flids [count - 1], last), mx_pg_int64_text (step->flights, sent),
            values [2]
        };
        free (flids);
        if (rc)
            return -1;
        return mx_pg_exec (conn, "UPDATE republish_job SET cursor_flid = $2::bigint,"
                                 " flights_sent = flights_sent + $3::bigint, updated_at = " TS (4)
                                 " WHERE job_id = $1::bigint", 4, move, NULL, error);
    }
    free (flids);
    if (reference) {
        if (mx_pg_exec (conn, S_NEXT_ENTRIES, 3, values, &res, error))
            return -1;
        int rows = PQntuples (res);
        step->entries = rows == 1 ? mx_pg_get_int64 (res, 0, 0) : 0;
        PQclear (res);
        if (rows == 1)
            return 0;
    }
    step->running = false;
    const char *done [] = { values [0], values [2] };
    return mx_pg_exec (conn, "UPDATE republish_job SET state = 'DONE', finished_at = " TS (2) ","
                             " updated_at = " TS (2) " WHERE job_id = $1::bigint", 2, done, NULL, error);
}

int
mx_republish_step (PGconn *conn, int64_t job_id, size_t limit, const mx_tz_t *zone, int64_t now_ms,
                   mx_republish_step_t *step, char **error)
{
    assert (conn && zone && step && limit > 0);
    *step = (mx_republish_step_t) { 0 };
    if (mx_pg_begin (conn, error))
        return -1;
    if (s_step (conn, job_id, limit, zone, now_ms, step, error)) {
        mx_pg_rollback (conn, NULL);
        *step = (mx_republish_step_t) { 0 };
        return -1;
    }
    char id [MX_PG_INT64_BUFSIZE];
    const char *values [] = { mx_pg_int64_text (job_id, id) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT greatest (flights_total + entries_total - flights_sent - entries_sent, 0)"
                          " FROM republish_job WHERE job_id = $1::bigint", 1, values, &res, error)
    ||  mx_pg_commit (conn, error)) {
        PQclear (res);
        mx_pg_rollback (conn, NULL);
        *step = (mx_republish_step_t) { 0 };
        return -1;
    }
    step->remaining = step->running && PQntuples (res) == 1 ? mx_pg_get_int64 (res, 0, 0) : 0;
    PQclear (res);
    return 0;
}

int
mx_republish_status (PGconn *conn, json_t **job, char **error)
{
    *job = NULL;
    //  A standby of a newer release may read a schema the active has not
    //  migrated yet: no table, no job.
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT to_regclass ('republish_job') IS NOT NULL", 0, NULL, &res, error))
        return -1;
    bool exists = strcmp (PQgetvalue (res, 0, 0), "t") == 0;
    PQclear (res);
    if (!exists) {
        *job = json_null ();
        return 0;
    }
    if (mx_pg_exec (conn,
            "SELECT json_build_object ('job_id', job_id, 'state', state, 'scope', scope, 'flids', flids,"
            " 'day', day, 'reference', reference, 'flights_total', flights_total,"
            " 'entries_total', entries_total, 'flights_sent', flights_sent, 'entries_sent', entries_sent,"
            " 'remaining', CASE WHEN state = 'RUNNING'"
            "   THEN greatest (flights_total + entries_total - flights_sent - entries_sent, 0) ELSE 0 END,"
            " 'cursor_flid', cursor_flid, 'os_user', os_user,"
            " 'created_at', to_char (created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
            " 'finished_at', to_char (finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))::text"
            " FROM republish_job ORDER BY job_id DESC LIMIT 1", 0, NULL, &res, error))
        return -1;
    *job = PQntuples (res) == 1 ? json_loads (mx_pg_get_text (res, 0, 0), 0, NULL) : json_null ();
    PQclear (res);
    if (!*job)
        *job = json_null ();
    return 0;
}
