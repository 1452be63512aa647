/*  mx_requests - see mx_requests.h.  */
#include "mx_requests.h"

#include <assert.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mx_pg.h"
#include "mx_procstate.h"

#define TS(n) "to_timestamp ($" #n "::bigint / 1000.0)"
//  $a + $b milliseconds as a timestamp.
#define TS_PLUS(a, b) "to_timestamp (($" #a "::bigint + $" #b "::bigint) / 1000.0)"
#define MS(col) "coalesce ((extract (epoch FROM " col ") * 1000)::bigint, -1)"

#define S_OPEN "('REGISTERED', 'SENT', 'WAITING')"

//  Columns of mx_requests_row_t, in s_row's order.
#define S_COLUMNS \
    "id, kind, coalesce (rtype, ''), " MS ("window_begin") ", " MS ("window_end") ", seqn, state," \
    " coalesce (coutmsgs_id, -1), " MS ("registered_at") ", " MS ("sent_at") ", " MS ("expires_at") "," \
    " " MS ("done_at") ", coalesce (done_msg_id, -1)"

static void
s_row (const PGresult *res, int row, mx_requests_row_t *out)
{
    memset (out, 0, sizeof *out);
    out->id = mx_pg_get_int64 (res, row, 0);
    const char *kind = mx_pg_get_text (res, row, 1);
    out->request.kind = kind && strcmp (kind, "RQFD") == 0 ? MX_REQUEST_RQFD : MX_REQUEST_RQRD;
    snprintf (out->request.rtype, sizeof out->request.rtype, "%s", mx_pg_get_text (res, row, 2));
    out->request.window_begin = mx_pg_get_int64 (res, row, 3);
    out->request.window_end = mx_pg_get_int64 (res, row, 4);
    out->request.seqn = (int) mx_pg_get_int64 (res, row, 5);
    //  The CHECK constraint admits only the five names.
    int state = mx_request_state_lookup (mx_pg_get_text (res, row, 6));
    assert (state >= 0);
    out->state = (mx_request_state_t) state;
    out->coutmsgs_id = mx_pg_get_int64 (res, row, 7);
    out->registered_at = mx_pg_get_int64 (res, row, 8);
    out->sent_at = mx_pg_get_int64 (res, row, 9);
    out->expires_at = mx_pg_get_int64 (res, row, 10);
    out->done_at = mx_pg_get_int64 (res, row, 11);
    out->done_msg_id = mx_pg_get_int64 (res, row, 12);
}

//  "2021-01-13T07:20:00.250Z" for audit texts (UTC: no zone at hand here).
static const char *
s_iso_utc (int64_t ms, char *buf, size_t size)
{
    time_t seconds = (time_t) (ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    int millis = (int) (ms - (int64_t) seconds * 1000);
    struct tm tm;
    gmtime_r (&seconds, &tm);
    char base [32];
    strftime (base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    if (millis)
        snprintf (buf, size, "%s.%03dZ", base, millis);
    else
        snprintf (buf, size, "%sZ", base);
    return buf;
}

static int
s_abort (PGconn *conn)
{
    char *ignored = NULL;
    mx_pg_rollback (conn, &ignored);
    free (ignored);
    return -1;
}

//  ---------------------------------------------------------------------
//  Registration

int
mx_requests_register (PGconn *conn, const mx_request_t *request, const char *requested_by,
                      const char *os_user, int64_t timeout_ms, int64_t now_ms,
                      mx_requests_row_t *row, int64_t *superseded, char **error)
{
    assert (conn && request && requested_by && row && superseded);
    assert (timeout_ms > 0);
    *superseded = -1;
    const char *kind = mx_request_kind_name (request->kind);
    bool schedule = request->kind == MX_REQUEST_RQFD;
    if (mx_pg_begin (conn, error))
        return -1;

    //  The counter row is locked until commit: SEQNs are handed out once.
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT last_seqn FROM req_seqn FOR UPDATE", 0, NULL, &res, error))
        return s_abort (conn);
    if (PQntuples (res) != 1) {
        PQclear (res);
        *error = strdup ("req_seqn holds no counter row (the schema migration creates it)");
        return s_abort (conn);
    }
    int last = (int) mx_pg_get_int64 (res, 0, 0);
    PQclear (res);
    int seqn = mx_request_seqn_next (last);
    char now [MX_PG_INT64_BUFSIZE], seqn_text [MX_PG_INT64_BUFSIZE];
    mx_pg_int64_text (now_ms, now);
    mx_pg_int64_text (seqn, seqn_text);
    const char *counter [] = { seqn_text, now };
    if (mx_pg_exec (conn, "UPDATE req_seqn SET last_seqn = $1, updated_at = " TS (2), 2, counter, NULL, error))
        return s_abort (conn);

    //  The open one of this kind goes first: the unique index allows one.
    char padded [MX_REQUEST_SEQN_BUFSIZE];
    char *why = NULL;
    if (asprintf (&why, "superseded by a newer %s request (SEQN %s)", kind,
                  mx_request_seqn_format (seqn, padded, sizeof padded)) < 0) {
        *error = strdup ("out of memory");
        return s_abort (conn);
    }
    const char *expire [] = { kind, now, why };
    int rc = mx_pg_exec (conn,
        "UPDATE req_track SET state = 'EXPIRED', last_error = $3,"
        " expires_at = least (coalesce (expires_at, " TS (2) "), " TS (2) ")"
        " WHERE kind = $1 AND state IN " S_OPEN " RETURNING id",
        3, expire, &res, error);
    free (why);
    if (rc)
        return s_abort (conn);
    if (PQntuples (res) > 0)
        *superseded = mx_pg_get_int64 (res, 0, 0);
    PQclear (res);

    char begin [MX_PG_INT64_BUFSIZE], end [MX_PG_INT64_BUFSIZE], timeout [MX_PG_INT64_BUFSIZE];
    const char *insert [] = {
        kind, schedule ? NULL : request->rtype,
        schedule ? mx_pg_int64_text (request->window_begin, begin) : NULL,
        schedule ? mx_pg_int64_text (request->window_end, end) : NULL,
        seqn_text, requested_by, now, mx_pg_int64_text (timeout_ms, timeout)
    };
    if (mx_pg_exec (conn,
            "INSERT INTO req_track (kind, rtype, window_begin, window_end, seqn, state, requested_by,"
            " registered_at, expires_at)"
            " VALUES ($1, $2, " TS (3) ", " TS (4) ", $5, 'REGISTERED', $6, " TS (7) ", " TS_PLUS (7, 8) ")"
            " RETURNING " S_COLUMNS,
            8, insert, &res, error))
        return s_abort (conn);
    s_row (res, 0, row);
    PQclear (res);

    if (os_user) {
        json_t *target = json_pack ("{s:I,s:s,s:i}", "request_id", (json_int_t) row->id, "kind", kind,
                                    "seqn", seqn);
        char iso [40];
        if (schedule) {
            json_object_set_new (target, "window_begin", json_string (s_iso_utc (request->window_begin, iso, sizeof iso)));
            json_object_set_new (target, "window_end", json_string (s_iso_utc (request->window_end, iso, sizeof iso)));
        }
        else
            json_object_set_new (target, "list", json_string (request->rtype));
        if (*superseded >= 0)
            json_object_set_new (target, "superseded", json_integer (*superseded));
        char *target_text = json_dumps (target, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref (target);
        rc = mx_audit_write (conn, "msgxctl", os_user, "request", target_text, "ok",
                             "registered; sent through COUTMSGS by the requests actor", now_ms, error);
        free (target_text);
        if (rc)
            return s_abort (conn);
    }
    if (mx_pg_commit (conn, error))
        return s_abort (conn);
    return 0;
}

//  ---------------------------------------------------------------------
//  Reads and transitions

int
mx_requests_get (PGconn *conn, int64_t id, mx_requests_row_t *row, char **error)
{
    char id_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (id, id_text) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT " S_COLUMNS " FROM req_track WHERE id = $1", 1, params, &res, error))
        return -1;
    int found = PQntuples (res) > 0;
    if (found)
        s_row (res, 0, row);
    PQclear (res);
    return found;
}

int
mx_requests_open (PGconn *conn, mx_requests_row_t rows [2], int *count, char **error)
{
    *count = 0;
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT " S_COLUMNS " FROM req_track WHERE state IN " S_OPEN " ORDER BY kind, id",
                    0, NULL, &res, error))
        return -1;
    int n = PQntuples (res);
    for (int i = 0; i < n && i < 2; i++)
        s_row (res, i, &rows [i]);
    *count = n < 2 ? n : 2;
    PQclear (res);
    return 0;
}

static int
s_affected (PGconn *conn, const char *sql, int nparams, const char *const *params, char **error)
{
    PGresult *res = NULL;
    if (mx_pg_exec (conn, sql, nparams, params, &res, error))
        return -1;
    int affected = atoi (PQcmdTuples (res));
    PQclear (res);
    return affected > 0 ? 1 : 0;
}

int
mx_requests_mark_sent (PGconn *conn, int64_t id, int64_t coutmsgs_id, int64_t sent_ms,
                       int64_t timeout_ms, char **error)
{
    char id_text [MX_PG_INT64_BUFSIZE], out [MX_PG_INT64_BUFSIZE], sent [MX_PG_INT64_BUFSIZE],
         timeout [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (id, id_text), mx_pg_int64_text (coutmsgs_id, out),
        mx_pg_int64_text (sent_ms, sent), mx_pg_int64_text (timeout_ms, timeout)
    };
    return s_affected (conn,
        "UPDATE req_track SET state = 'SENT', coutmsgs_id = $2, sent_at = " TS (3) ","
        " expires_at = " TS_PLUS (3, 4) ", last_error = NULL"
        " WHERE id = $1 AND state = 'REGISTERED'",
        4, params, error);
}

int
mx_requests_mark_waiting (PGconn *conn, int64_t id, char **error)
{
    char id_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (id, id_text) };
    return s_affected (conn, "UPDATE req_track SET state = 'WAITING' WHERE id = $1 AND state = 'SENT'",
                       1, params, error);
}

int
mx_requests_note_error (PGconn *conn, int64_t id, const char *text, char **error)
{
    char id_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (id, id_text), text };
    return s_affected (conn, "UPDATE req_track SET last_error = $2 WHERE id = $1 AND state IN " S_OPEN,
                       2, params, error) < 0 ? -1 : 0;
}

int
mx_requests_expire (PGconn *conn, int64_t now_ms, mx_requests_row_t *expired, int max,
                    int *count, char **error)
{
    *count = 0;
    char now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (now_ms, now) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "UPDATE req_track SET state = 'EXPIRED', last_error = CASE WHEN state = 'REGISTERED'"
            "  THEN 'not sent within msgx.requests.timeout' || coalesce (': ' || last_error, '')"
            "  ELSE 'no response within msgx.requests.timeout' END"
            " WHERE state IN " S_OPEN " AND expires_at <= " TS (1)
            " RETURNING " S_COLUMNS,
            1, params, &res, error))
        return -1;
    *count = PQntuples (res);
    for (int i = 0; i < *count && i < max; i++)
        s_row (res, i, &expired [i]);
    PQclear (res);
    return 0;
}

int
mx_requests_registered_since (PGconn *conn, const char *requested_by, int64_t since_ms, char **error)
{
    char since [MX_PG_INT64_BUFSIZE];
    const char *params [] = { requested_by, mx_pg_int64_text (since_ms, since) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT 1 FROM req_track WHERE requested_by = $1 AND registered_at >= " TS (2) " LIMIT 1",
                    2, params, &res, error))
        return -1;
    int found = PQntuples (res) > 0;
    PQclear (res);
    return found;
}

//  ---------------------------------------------------------------------
//  RESP guard

static int
s_match (PGconn *conn, mx_request_kind_t kind, const char *rtype, const char *resp_name,
         int64_t resp_dttm_ms, int64_t msg_id, int64_t now_ms,
         int64_t *request_id, const char **outcome, char **error)
{
    assert (conn && request_id && outcome);
    *request_id = -1;
    *outcome = NULL;
    const char *params [] = { mx_request_kind_name (kind), rtype };
    PGresult *res = NULL;
    //  The last request sent, locked: the timeout sweep and a new
    //  registration wait for this transaction, and vice versa.
    if (mx_pg_exec (conn,
            "SELECT " S_COLUMNS " FROM req_track"
            " WHERE kind = $1 AND ($2::text IS NULL OR rtype = $2) AND sent_at IS NOT NULL"
            " ORDER BY id DESC LIMIT 1 FOR UPDATE",
            2, params, &res, error))
        return -1;
    mx_requests_row_t row = { .id = -1, .state = MX_REQUEST_REGISTERED, .sent_at = -1, .expires_at = -1 };
    if (PQntuples (res) > 0)
        s_row (res, 0, &row);
    PQclear (res);
    mx_request_resp_t decision = mx_request_resp_decide (row.state, row.sent_at, row.expires_at,
                                                         resp_dttm_ms, now_ms);
    *request_id = row.id;
    if (decision != MX_REQUEST_RESP_MATCH) {
        *outcome = mx_request_resp_outcome (decision);
        return 0;
    }
    char id_text [MX_PG_INT64_BUFSIZE], msg [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *done [] = {
        mx_pg_int64_text (row.id, id_text), mx_pg_int64_text (msg_id, msg), mx_pg_int64_text (now_ms, now)
    };
    int written = s_affected (conn,
        "UPDATE req_track SET state = 'DONE', done_at = " TS (3) ", done_msg_id = $2"
        " WHERE id = $1 AND state IN ('SENT', 'WAITING')",
        3, done, error);
    if (written < 0)
        return -1;
    if (written == 0) {
        //  Only when called outside a transaction, so the lock did not
        //  hold: the request closed meanwhile, and stays as it is.
        *outcome = mx_request_resp_outcome (MX_REQUEST_RESP_EXPIRED);
        return 0;
    }
    json_t *target = json_pack ("{s:I,s:I,s:s,s:i}", "request_id", (json_int_t) row.id,
                                "msg_id", (json_int_t) msg_id, "kind", mx_request_kind_name (kind),
                                "seqn", row.request.seqn);
    if (rtype)
        json_object_set_new (target, "list", json_string (rtype));
    char *target_text = json_dumps (target, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (target);
    char dttm [40], sent [40];
    char *detail = NULL;
    if (asprintf (&detail, "%s DTTM %s is not before the request's send time %s (second precision);"
                  " matched by kind and time only, the upstream echoes no request reference",
                  resp_name, s_iso_utc (resp_dttm_ms, dttm, sizeof dttm),
                  s_iso_utc (row.sent_at, sent, sizeof sent)) < 0)
        detail = NULL;
    int rc = mx_audit_write (conn, "processor", NULL, "degraded-match", target_text, "ok", detail,
                             now_ms, error);
    free (target_text);
    free (detail);
    if (rc)
        return -1;
    *outcome = mx_request_resp_outcome (decision);
    return 1;
}

int
mx_requests_match_schedule_resp (PGconn *conn, int64_t resp_dttm_ms, int64_t msg_id, int64_t now_ms,
                                 int64_t *request_id, const char **outcome, char **error)
{
    return s_match (conn, MX_REQUEST_RQFD, NULL, "SCHD/RESP", resp_dttm_ms, msg_id, now_ms,
                    request_id, outcome, error);
}

int
mx_requests_match_reference_resp (PGconn *conn, const char *rtype, int64_t resp_dttm_ms,
                                  int64_t msg_id, int64_t now_ms, int64_t *request_id,
                                  const char **outcome, char **error)
{
    assert (rtype);
    char name [32];
    snprintf (name, sizeof name, "%.8s/RESP", rtype);
    return s_match (conn, MX_REQUEST_RQRD, rtype, name, resp_dttm_ms, msg_id, now_ms,
                    request_id, outcome, error);
}
