/*  Integration tests of requests upstream (SPEC §4, WIRE.md §9) on real
    PostgreSQL and MariaDB with the injected clock: the req_track
    repository and the RESP guard (db/mx_requests), the COUTMSGS access
    (db/mx_mailbox), and the requests actor (actors/mx_requests).

    Waiting is on database events: a trigger NOTIFYs on every req_track
    change and the test LISTENs. Where the actor must have finished what it
    was doing, the test sends it a command and waits for the answer: the
    actor handles one thing at a time.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <poll.h>

#include "mx_actor.h"
#include "mx_config.h"
#include "mx_mailbox.h"
#include "mx_pg.h"
#include "mx_request.h"
#include "mx_sis.h"
#include "mx_testactor.h"
#include "mx_testenv.h"
#include "mx_tz.h"

#include "mx_requests_actor.h"
#include "mx_requests.h"

#define WAIT_MS 20000
#define T0 1767225600000LL          //  2026-01-01T00:00:00Z = 08:00 in Shanghai
#define MINUTE 60000LL
#define TIMEOUT (10 * MINUTE)       //  msgx.requests.timeout default

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    MYSQL *mb_admin;            //  the test's own mailbox connection
    mx_clock_t *clock;
    mx_config_t *config;
    mx_tz_t *zone;
    PGconn *conn;               //  the test's own connection, LISTENing
    mx_actor_args_t args;
    zactor_t *actor;
    uint64_t admin_sequence;
} fixture_t;

static const char *s_watch_sql =
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify ('mx_test', TG_TABLE_NAME); RETURN NEW; END $$;"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON req_track FOR EACH ROW EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

static void
s_configure (fixture_t *fx, const char *key, const char *value)
{
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_set (fx->config, key, value, errors))
        fail_msg ("config %s = %s: %s", key, value, (char *) zlist_first (errors));
    zlist_destroy (&errors);
}

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    fx->pg = mx_testpg_new ();
    fx->mb = mx_testmb_new ();
    fx->mb_admin = mx_testmb_connect (fx->mb);
    fx->clock = mx_clock_new_fake (T0);
    fx->conn = mx_testpg_connect_schema (fx->pg, s_watch_sql);
    char *error = NULL;

    fx->config = mx_config_new_defaults ();
    char port [16];
    snprintf (port, sizeof port, "%d", mx_testmb_port (fx->mb));
    s_configure (fx, "msgx.pg.conninfo", mx_testpg_conninfo (fx->pg));
    s_configure (fx, "mailbox.shared-mysql.enabled", "true");
    s_configure (fx, "mailbox.shared-mysql.host", mx_testmb_host (fx->mb));
    s_configure (fx, "mailbox.shared-mysql.port", port);
    s_configure (fx, "mailbox.shared-mysql.user", mx_testmb_user (fx->mb));
    s_configure (fx, "mailbox.shared-mysql.password", mx_testmb_password (fx->mb));
    s_configure (fx, "mailbox.shared-mysql.database", mx_testmb_database (fx->mb));
    //  Not UTC, so a unit or zone slip in DATE_INSERTED shows.
    s_configure (fx, "mailbox.shared-mysql.time-zone", "+08:00");
    fx->zone = mx_tz_load (fx->config->operation_day_zone, &error);
    assert_non_null (fx->zone);
    *state = fx;
    return 0;
}

static void
s_stop (fixture_t *fx)
{
    mx_actor_destroy (&fx->actor);
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    s_stop (fx);
    PQfinish (fx->conn);
    mx_tz_destroy (&fx->zone);
    mx_config_destroy (&fx->config);
    mx_clock_destroy (&fx->clock);
    mysql_close (fx->mb_admin);
    mx_testmb_destroy (&fx->mb);
    mx_testpg_destroy (&fx->pg);
    free (fx);
    return 0;
}

//  ---------------------------------------------------------------------
//  PostgreSQL helpers

//  First cell of a query with text parameters ("" when no row), malloc'd.
static char *
s_value (fixture_t *fx, const char *sql, int nparams, const char *const *params)
{
    PGresult *res = PQexecParams (fx->conn, sql, nparams, NULL, params, NULL, NULL, 0);
    if (PQresultStatus (res) != PGRES_TUPLES_OK)
        fail_msg ("%s: %s", sql, PQerrorMessage (fx->conn));
    char *value = strdup (PQntuples (res) ? PQgetvalue (res, 0, 0) : "");
    PQclear (res);
    return value;
}

static void
s_expect (fixture_t *fx, const char *sql, const char *expected)
{
    char *value = s_value (fx, sql, 0, NULL);
    if (strcmp (value, expected) != 0)
        fail_msg ("%s\n  gave '%s', expected '%s'", sql, value, expected);
    free (value);
}

//  The same for a query about one request ($1 = its id).
static void
s_expect_request (fixture_t *fx, int64_t id, const char *sql, const char *expected)
{
    char text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (id, text) };
    char *value = s_value (fx, sql, 1, params);
    if (strcmp (value, expected) != 0)
        fail_msg ("%s [$1 = %s]\n  gave '%s', expected '%s'", sql, text, value, expected);
    free (value);
}

static void
s_exec (fixture_t *fx, const char *sql)
{
    PGresult *res = PQexec (fx->conn, sql);
    if (PQresultStatus (res) != PGRES_COMMAND_OK && PQresultStatus (res) != PGRES_TUPLES_OK)
        fail_msg ("%s: %s", sql, PQerrorMessage (fx->conn));
    PQclear (res);
}

//  The whole row as text, to prove that nothing about it changed.
static char *
s_snapshot (fixture_t *fx, int64_t id)
{
    char text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (id, text) };
    return s_value (fx, "SELECT row_to_json (r)::text FROM req_track r WHERE id = $1", 1, params);
}

//  ---------------------------------------------------------------------
//  Mailbox helpers

static int64_t
s_mb_count (fixture_t *fx, const char *sql)
{
    if (mysql_real_query (fx->mb_admin, sql, strlen (sql)))
        fail_msg ("%s: %s", sql, mysql_error (fx->mb_admin));
    MYSQL_RES *res = mysql_store_result (fx->mb_admin);
    assert_non_null (res);
    MYSQL_ROW row = mysql_fetch_row (res);
    int64_t count = row && row [0] ? strtoll (row [0], NULL, 10) : -1;
    mysql_free_result (res);
    return count;
}

static int64_t
s_outbound_rows (fixture_t *fx)
{
    return s_mb_count (fx, "SELECT COUNT(*) FROM COUTMSGS");
}

//  Columns of the row with the highest COUTMSGS_ID, as text ("NULL" for
//  NULL): the text, ROUTINGID, DATE_INSERTED in the session zone (+08:00)
//  and the flags added up with their NULL count.
typedef struct {
    char xml [1024];
    char routing [32];
    char inserted [32];
    char flags [32];
    int64_t id;
} s_outbound_t;

static void
s_last_outbound (fixture_t *fx, s_outbound_t *out)
{
    const char *set_zone = "SET time_zone = '+08:00'";
    if (mysql_real_query (fx->mb_admin, set_zone, strlen (set_zone)))
        fail_msg ("%s: %s", set_zone, mysql_error (fx->mb_admin));
    const char *sql =
        "SELECT COUTMSGS_ID, COUTMSGS_CLOB_MSG, ROUTINGID, CAST(COUTMSGS_DATE_INSERTED AS CHAR),"
        " CONCAT(COALESCE(COUTMSGS_TRUEFALS_GROUP + COUTMSGS_NO_MESSAGES + COUTMSGS_GROUP_ORDER"
        " + COUTMSGS_GROUP_ID + COUTMSGS_FINAL_GROUP_IND + COUTMSGS_ACK_REQD + COUTMSGS_ACK_RESEND_TIMES"
        " + COUTMSGS_ACK_DATE_RECV + COUTMSGS_ENCRYPT + COUTMSGS_ERROR, 'NULL'))"
        " FROM COUTMSGS ORDER BY COUTMSGS_ID DESC LIMIT 1";
    if (mysql_real_query (fx->mb_admin, sql, strlen (sql)))
        fail_msg ("%s: %s", sql, mysql_error (fx->mb_admin));
    MYSQL_RES *res = mysql_store_result (fx->mb_admin);
    assert_non_null (res);
    MYSQL_ROW row = mysql_fetch_row (res);
    assert_non_null (row);
    out->id = strtoll (row [0], NULL, 10);
    snprintf (out->xml, sizeof out->xml, "%s", row [1] ? row [1] : "NULL");
    snprintf (out->routing, sizeof out->routing, "%s", row [2] ? row [2] : "NULL");
    snprintf (out->inserted, sizeof out->inserted, "%s", row [3] ? row [3] : "NULL");
    snprintf (out->flags, sizeof out->flags, "%s", row [4] ? row [4] : "NULL");
    mysql_free_result (res);
}

//  COUTMSGS_DATE_SENT = now on row id, as the upstream does once it sent it.
static void
s_upstream_took (fixture_t *fx, int64_t id)
{
    const char *sql = "UPDATE COUTMSGS SET COUTMSGS_DATE_SENT = NOW() WHERE COUTMSGS_ID = ?";
    MYSQL_STMT *stmt = mysql_stmt_init (fx->mb_admin);
    assert_non_null (stmt);
    long long value = id;
    MYSQL_BIND param;
    memset (&param, 0, sizeof param);
    param.buffer_type = MYSQL_TYPE_LONGLONG;
    param.buffer = &value;
    if (mysql_stmt_prepare (stmt, sql, strlen (sql)) || mysql_stmt_bind_param (stmt, &param)
    ||  mysql_stmt_execute (stmt))
        fail_msg ("%s: %s", sql, mysql_stmt_error (stmt));
    assert_int_equal (mysql_stmt_affected_rows (stmt), 1);
    mysql_stmt_close (stmt);
}

//  ---------------------------------------------------------------------
//  Requests, sent by hand (no actor)

static int64_t
s_local (fixture_t *fx, int year, int month, int day, int hour, int minute, int second)
{
    return mx_tz_local_to_utc (fx->zone, year, month, day, hour, minute, second);
}

static mx_requests_row_t
s_register (fixture_t *fx, mx_request_kind_t kind, const char *rtype, int64_t now)
{
    mx_request_t request = { .kind = kind };
    if (kind == MX_REQUEST_RQFD) {
        request.window_begin = s_local (fx, 2026, 1, 2, 0, 0, 0);
        request.window_end = s_local (fx, 2026, 1, 2, 23, 59, 0);
    }
    else
        snprintf (request.rtype, sizeof request.rtype, "%s", rtype);
    mx_requests_row_t row;
    int64_t superseded = 0;
    char *error = NULL;
    if (mx_requests_register (fx->conn, &request, "tester", "tester", TIMEOUT, now, &row, &superseded, &error))
        fail_msg ("register: %s", error);
    return row;
}

//  Registered and marked SENT at sent_ms, with a made-up COUTMSGS_ID.
static mx_requests_row_t
s_sent (fixture_t *fx, mx_request_kind_t kind, const char *rtype, int64_t sent_ms)
{
    mx_requests_row_t row = s_register (fx, kind, rtype, sent_ms);
    char *error = NULL;
    if (mx_requests_mark_sent (fx->conn, row.id, 900 + row.id, sent_ms, TIMEOUT, &error) != 1)
        fail_msg ("mark sent: %s", error ? error : "not REGISTERED");
    assert_int_equal (mx_requests_get (fx->conn, row.id, &row, &error), 1);
    return row;
}

//  The SCHD/RESP guard in a transaction of its own; returns 1 / 0.
static int
s_schedule_resp (fixture_t *fx, int64_t dttm_ms, int64_t msg_id, int64_t now, int64_t *request_id,
                 const char **outcome)
{
    char *error = NULL;
    s_exec (fx, "BEGIN");
    int rc = mx_requests_match_schedule_resp (fx->conn, dttm_ms, msg_id, now, request_id, outcome, &error);
    if (rc < 0)
        fail_msg ("guard: %s", error);
    s_exec (fx, "COMMIT");
    return rc;
}

//  DTTM as the codec reads it from a real SCHD/RESP envelope.
static int64_t
s_resp_dttm (fixture_t *fx, const char *dttm)
{
    char xml [512];
    snprintf (xml, sizeof xml,
        "<MSG><META><SNDR>AODB</SNDR><SEQN>7</SEQN><DTTM>%s</DTTM><TYPE>SCHD</TYPE><STYP>RESP</STYP></META>"
        "<SCHD><RECS>0</RECS></SCHD></MSG>", dttm);
    mx_sis_options_t options = { .zone = fx->zone, .max_bytes = 1 << 20 };
    mx_sis_status_t status;
    char *error = NULL;
    mx_sis_msg_t *msg = mx_sis_decode (xml, strlen (xml), &options, &status, &error);
    if (!msg)
        fail_msg ("decode: %s", error);
    assert_int_equal (mx_sis_kind (msg), MX_SIS_KIND_SCHD_RESP);
    int64_t ms = mx_sis_meta (msg)->dttm_ms;
    mx_sis_destroy (&msg);
    return ms;
}

//  ---------------------------------------------------------------------
//  Repository

static void
test_second_request_expires_the_first (void **state)
{
    fixture_t *fx = *state;
    mx_requests_row_t rqrd = s_register (fx, MX_REQUEST_RQRD, "SLST", T0);
    mx_requests_row_t first = s_register (fx, MX_REQUEST_RQFD, NULL, T0);
    assert_int_equal (first.state, MX_REQUEST_REGISTERED);
    assert_true (first.expires_at == T0 + TIMEOUT);

    mx_request_t request = { .kind = MX_REQUEST_RQFD, .window_begin = T0, .window_end = T0 + MINUTE };
    mx_requests_row_t second;
    int64_t superseded = -1;
    char *error = NULL;
    assert_int_equal (mx_requests_register (fx->conn, &request, "tester", "tester", TIMEOUT, T0 + 5000,
                                            &second, &superseded, &error), 0);
    assert_true (superseded == first.id);
    assert_int_equal (second.request.seqn, first.request.seqn + 1);
    s_expect_request (fx, first.id, "SELECT state || ' ' || last_error FROM req_track WHERE id = $1",
                      "EXPIRED superseded by a newer RQFD request (SEQN 000003)");
    //  Closed at the registration that superseded it.
    s_expect_request (fx, first.id, "SELECT expires_at = to_timestamp (1767225605) FROM req_track WHERE id = $1", "t");
    s_expect_request (fx, second.id, "SELECT state FROM req_track WHERE id = $1", "REGISTERED");
    //  The other kind is not touched.
    s_expect_request (fx, rqrd.id, "SELECT state FROM req_track WHERE id = $1", "REGISTERED");
    s_expect (fx, "SELECT count(*) FROM audit_log WHERE action = 'request' AND result = 'ok' AND os_user = 'tester'", "3");
    s_expect (fx, "SELECT (target->>'superseded')::bigint = (SELECT min (id) + 1 FROM req_track) FROM audit_log"
                  " ORDER BY id DESC LIMIT 1", "t");
    //  The schema still allows only one open request per kind.
    PGresult *res = PQexec (fx->conn, "INSERT INTO req_track (kind, window_begin, window_end, seqn, registered_at)"
                                      " VALUES ('RQFD', now (), now (), 9, now ())");
    assert_int_equal (PQresultStatus (res), PGRES_FATAL_ERROR);
    PQclear (res);
}

static void
test_seqn_is_persisted_and_wraps (void **state)
{
    fixture_t *fx = *state;
    s_exec (fx, "UPDATE req_seqn SET last_seqn = 999998");
    mx_requests_row_t a = s_register (fx, MX_REQUEST_RQRD, "GLST", T0);
    mx_requests_row_t b = s_register (fx, MX_REQUEST_RQRD, "GLST", T0);
    mx_requests_row_t c = s_register (fx, MX_REQUEST_RQFD, NULL, T0);
    assert_int_equal (a.request.seqn, 999999);
    assert_int_equal (b.request.seqn, 1);
    assert_int_equal (c.request.seqn, 2);
    s_expect (fx, "SELECT last_seqn FROM req_seqn", "2");
}

static void
test_timeout_expires_open_requests (void **state)
{
    fixture_t *fx = *state;
    mx_requests_row_t sent = s_sent (fx, MX_REQUEST_RQFD, NULL, T0);
    mx_requests_row_t unsent = s_register (fx, MX_REQUEST_RQRD, "SLST", T0 + MINUTE);
    mx_requests_row_t expired [2];
    int count = -1;
    char *error = NULL;
    //  One millisecond early: nothing.
    assert_int_equal (mx_requests_expire (fx->conn, T0 + TIMEOUT - 1, expired, 2, &count, &error), 0);
    assert_int_equal (count, 0);
    assert_int_equal (mx_requests_expire (fx->conn, T0 + TIMEOUT, expired, 2, &count, &error), 0);
    assert_int_equal (count, 1);
    assert_true (expired [0].id == sent.id);
    assert_int_equal (expired [0].state, MX_REQUEST_EXPIRED);
    s_expect_request (fx, sent.id, "SELECT last_error FROM req_track WHERE id = $1",
                      "no response within msgx.requests.timeout");
    //  Unsent, timed from its registration.
    assert_int_equal (mx_requests_note_error (fx->conn, unsent.id, "mailbox down", &error), 0);
    assert_int_equal (mx_requests_expire (fx->conn, T0 + MINUTE + TIMEOUT, expired, 2, &count, &error), 0);
    assert_int_equal (count, 1);
    s_expect_request (fx, unsent.id, "SELECT state || ': ' || last_error FROM req_track WHERE id = $1",
                      "EXPIRED: not sent within msgx.requests.timeout: mailbox down");
    //  Closed requests stay closed.
    assert_int_equal (mx_requests_mark_sent (fx->conn, unsent.id, 5, T0, TIMEOUT, &error), 0);
    assert_int_equal (mx_requests_mark_waiting (fx->conn, sent.id, &error), 0);
}

//  ---------------------------------------------------------------------
//  RESP guard

static void
test_resp_without_request (void **state)
{
    fixture_t *fx = *state;
    int64_t request_id = 0;
    const char *outcome = NULL;
    assert_int_equal (s_schedule_resp (fx, T0, 11, T0, &request_id, &outcome), 0);
    assert_string_equal (outcome, "no-matching-request");
    assert_true (request_id == -1);
    //  A request not sent yet cannot have been answered.
    s_register (fx, MX_REQUEST_RQFD, NULL, T0);
    assert_int_equal (s_schedule_resp (fx, T0 + 1000, 12, T0 + 1000, &request_id, &outcome), 0);
    assert_string_equal (outcome, "no-matching-request");
    s_expect (fx, "SELECT count(*) FROM audit_log WHERE action = 'degraded-match'", "0");
}

static void
test_resp_matches_and_closes (void **state)
{
    fixture_t *fx = *state;
    mx_requests_row_t request = s_sent (fx, MX_REQUEST_RQFD, NULL, T0 + 700);
    int64_t request_id = 0;
    const char *outcome = NULL;
    //  A rolled-back business transaction leaves the request open.
    char *error = NULL;
    s_exec (fx, "BEGIN");
    assert_int_equal (mx_requests_match_schedule_resp (fx->conn, T0 + 60000, 21, T0 + 60000, &request_id,
                                                       &outcome, &error), 1);
    s_exec (fx, "ROLLBACK");
    s_expect_request (fx, request.id, "SELECT state FROM req_track WHERE id = $1", "SENT");
    s_expect (fx, "SELECT count(*) FROM audit_log WHERE action = 'degraded-match'", "0");

    assert_int_equal (s_schedule_resp (fx, T0 + 60000, 22, T0 + 61000, &request_id, &outcome), 1);
    assert_string_equal (outcome, "degraded-match");
    assert_true (request_id == request.id);
    s_expect_request (fx, request.id,
                      "SELECT state || ' ' || done_msg_id || ' ' || (done_at = to_timestamp (1767225661))"
                      " FROM req_track WHERE id = $1", "DONE 22 true");
    s_expect (fx, "SELECT actor || ' ' || result || ' ' || (target->>'msg_id') || ' ' || (target->>'seqn')"
                  " || ' ' || (os_user IS NULL) FROM audit_log WHERE action = 'degraded-match'",
              "processor ok 22 1 true");
    //  A second response finds nothing open; the closed request stays.
    char *before = s_snapshot (fx, request.id);
    assert_int_equal (s_schedule_resp (fx, T0 + 90000, 23, T0 + 90000, &request_id, &outcome), 0);
    assert_string_equal (outcome, "no-matching-request");
    char *after = s_snapshot (fx, request.id);
    assert_string_equal (before, after);
    free (before);
    free (after);
}

static void
test_resp_older_than_the_send_is_stale (void **state)
{
    fixture_t *fx = *state;
    mx_requests_row_t request = s_sent (fx, MX_REQUEST_RQFD, NULL, T0 + 700);
    char *before = s_snapshot (fx, request.id);
    int64_t request_id = 0;
    const char *outcome = NULL;
    assert_int_equal (s_schedule_resp (fx, T0 - 1000, 31, T0 + 5000, &request_id, &outcome), 0);
    assert_string_equal (outcome, "stale-response");
    assert_true (request_id == request.id);
    char *after = s_snapshot (fx, request.id);
    assert_string_equal (before, after);
    free (before);
    free (after);
    //  The second it was sent in is not stale: DTTM has whole seconds.
    assert_int_equal (s_schedule_resp (fx, T0, 32, T0 + 5000, &request_id, &outcome), 1);
}

static void
test_late_resp_after_expiry_changes_nothing (void **state)
{
    fixture_t *fx = *state;
    mx_requests_row_t request = s_sent (fx, MX_REQUEST_RQFD, NULL, T0);
    int64_t request_id = 0;
    const char *outcome = NULL;
    //  Past the deadline, before the sweep ran: already expired.
    char *before = s_snapshot (fx, request.id);
    assert_int_equal (s_schedule_resp (fx, T0 + TIMEOUT, 41, T0 + TIMEOUT, &request_id, &outcome), 0);
    assert_string_equal (outcome, "request-expired");
    char *after = s_snapshot (fx, request.id);
    assert_string_equal (before, after);
    free (before);
    free (after);
    //  After the sweep.
    mx_requests_row_t expired [2];
    int count = 0;
    char *error = NULL;
    assert_int_equal (mx_requests_expire (fx->conn, T0 + TIMEOUT + 1, expired, 2, &count, &error), 0);
    assert_int_equal (count, 1);
    before = s_snapshot (fx, request.id);
    assert_int_equal (s_schedule_resp (fx, T0 + TIMEOUT + 5000, 42, T0 + TIMEOUT + 5000, &request_id, &outcome), 0);
    assert_string_equal (outcome, "request-expired");
    assert_true (request_id == request.id);
    after = s_snapshot (fx, request.id);
    assert_string_equal (before, after);
    free (before);
    free (after);
    //  Superseded requests are expired too, for a response to them.
    mx_requests_row_t next = s_sent (fx, MX_REQUEST_RQFD, NULL, T0 + TIMEOUT + 10000);
    s_register (fx, MX_REQUEST_RQFD, NULL, T0 + TIMEOUT + 20000);
    assert_int_equal (s_schedule_resp (fx, T0 + TIMEOUT + 15000, 43, T0 + TIMEOUT + 25000, &request_id, &outcome), 0);
    assert_string_equal (outcome, "request-expired");
    assert_true (request_id == next.id);
    s_expect (fx, "SELECT count(*) FROM req_track WHERE state = 'DONE'", "0");
    s_expect (fx, "SELECT count(*) FROM audit_log WHERE action = 'degraded-match'", "0");
}

//  DTTM is airport local time (Asia/Shanghai, +08:00), sent_at a UTC
//  instant: they are compared as instants, at second precision, whatever
//  the zone of the session.
static void
test_resp_zone_and_units (void **state)
{
    fixture_t *fx = *state;
    //  Sent 2026-01-01T00:00:00.600Z = 08:00:00.600 local.
    mx_requests_row_t request = s_sent (fx, MX_REQUEST_RQFD, NULL, T0 + 600);
    s_exec (fx, "SET TimeZone = 'America/New_York'");
    int64_t request_id = 0;
    const char *outcome = NULL;
    //  07:59:59 local is the second before: stale (read as UTC, the same
    //  text would be hours later).
    assert_int_equal (s_schedule_resp (fx, s_resp_dttm (fx, "20260101075959"), 51, T0 + 5000, &request_id, &outcome), 0);
    assert_string_equal (outcome, "stale-response");
    //  00:00:00 local text of the same day, read as UTC, would match; in
    //  the airport zone it is eight hours before the send.
    assert_int_equal (s_schedule_resp (fx, s_resp_dttm (fx, "20260101000000"), 52, T0 + 5000, &request_id, &outcome), 0);
    assert_string_equal (outcome, "stale-response");
    //  08:00:00 local: the second it was sent.
    assert_int_equal (s_schedule_resp (fx, s_resp_dttm (fx, "20260101080000"), 53, T0 + 5000, &request_id, &outcome), 1);
    assert_true (request_id == request.id);
}

static void
test_reference_resp (void **state)
{
    fixture_t *fx = *state;
    mx_requests_row_t request = s_sent (fx, MX_REQUEST_RQRD, "SLST", T0);
    int64_t request_id = 0;
    const char *outcome = NULL;
    char *error = NULL;
    s_exec (fx, "BEGIN");
    //  Another list does not answer it; nor does a schedule response.
    assert_int_equal (mx_requests_match_reference_resp (fx->conn, "GLST", T0 + 5000, 61, T0 + 5000,
                                                        &request_id, &outcome, &error), 0);
    assert_string_equal (outcome, "no-matching-request");
    assert_int_equal (mx_requests_match_schedule_resp (fx->conn, T0 + 5000, 62, T0 + 5000,
                                                       &request_id, &outcome, &error), 0);
    assert_string_equal (outcome, "no-matching-request");
    assert_int_equal (mx_requests_match_reference_resp (fx->conn, "SLST", T0 + 5000, 63, T0 + 5000,
                                                        &request_id, &outcome, &error), 1);
    assert_string_equal (outcome, "degraded-match");
    s_exec (fx, "COMMIT");
    s_expect_request (fx, request.id, "SELECT state || ' ' || done_msg_id FROM req_track WHERE id = $1", "DONE 63");
    s_expect (fx, "SELECT target->>'list' FROM audit_log WHERE action = 'degraded-match'", "SLST");
}

//  ---------------------------------------------------------------------
//  COUTMSGS

static void
test_outbound_insert_and_find (void **state)
{
    fixture_t *fx = *state;
    mx_mailbox_t *mailbox = mx_mailbox_new (fx->config);
    mx_request_t request = { .kind = MX_REQUEST_RQRD, .rtype = "SLST", .seqn = 42 };
    char *error = NULL;
    char *xml = mx_request_encode (&request, fx->zone, T0 + 1500, &error);
    int64_t id = 0;
    if (mx_mailbox_outbound_insert (mailbox, MX_REQUEST_RQRD, xml, strlen (xml), T0 + 1500, &id, &error))
        fail_msg ("insert: %s", error);
    s_outbound_t row;
    s_last_outbound (fx, &row);
    assert_true (row.id == id);
    assert_string_equal (row.xml, xml);
    assert_string_equal (row.routing, "MSGXRQRD");
    assert_string_equal (row.inserted, "2026-01-01 08:00:01");
    assert_string_equal (row.flags, "0");

    mx_outbound_row_t found;
    assert_int_equal (mx_mailbox_outbound_find (mailbox, MX_REQUEST_RQRD, 42, T0, &found, &error), 1);
    assert_true (found.id == id);
    assert_true (found.inserted_ms == T0 + 1000);
    assert_true (found.sent_ms == -1);
    //  Other SEQN, other routing, inserted before the bound: not it.
    assert_int_equal (mx_mailbox_outbound_find (mailbox, MX_REQUEST_RQRD, 4, T0, &found, &error), 0);
    assert_int_equal (mx_mailbox_outbound_find (mailbox, MX_REQUEST_RQFD, 42, T0, &found, &error), 0);
    assert_int_equal (mx_mailbox_outbound_find (mailbox, MX_REQUEST_RQRD, 42, T0 + 2000, &found, &error), 0);
    //  The upstream sent it.
    s_upstream_took (fx, id);
    assert_int_equal (mx_mailbox_outbound_find (mailbox, MX_REQUEST_RQRD, 42, T0, &found, &error), 1);
    assert_true (found.sent_ms > 0);
    free (xml);
    mx_mailbox_destroy (&mailbox);
}

static void
test_shadow_refuses_outbound (void **state)
{
    fixture_t *fx = *state;
    s_configure (fx, "msgx.shadow", "true");
    mx_mailbox_t *mailbox = mx_mailbox_new (fx->config);
    int64_t id = 7;
    char *error = NULL;
    assert_int_equal (mx_mailbox_outbound_insert (mailbox, MX_REQUEST_RQFD, "<MSG/>", 6, T0, &id, &error), -1);
    assert_non_null (strstr (error, "shadow mode"));
    free (error);
    assert_true (id == 0);
    assert_int_equal (s_outbound_rows (fx), 0);
    //  Reading stays allowed.
    mx_outbound_row_t found;
    error = NULL;
    assert_int_equal (mx_mailbox_outbound_find (mailbox, MX_REQUEST_RQFD, 1, T0, &found, &error), 0);
    mx_mailbox_destroy (&mailbox);

    //  The actor refuses the request outright: nothing registered, audited.
    fx->args = (mx_actor_args_t) { .name = "requests", .config = fx->config, .clock = fx->clock };
    char *detail = NULL;
    fx->actor = mx_actor_start (mx_requests_actor, &fx->args, 10000, &detail, &error);
    if (!fx->actor)
        fail_msg ("start: %s", error);
    assert_non_null (strstr (detail, "shadow"));
    free (detail);
    mx_cmd_send (zactor_sock (fx->actor), MX_CMD_ADMIN, (uint64_t) 1, "request",
                 "{\"kind\":\"reference\",\"list\":\"SLST\",\"os_user\":\"ops\"}");
    zmsg_t *rest = NULL;
    assert_int_equal (mx_cmd_recv_timeout (zactor_sock (fx->actor), WAIT_MS, &rest), MX_CMD_ADMIN_REPLY);
    char *request_id = mx_cmd_pop_str (rest), *status = mx_cmd_pop_str (rest), *payload = mx_cmd_pop_str (rest);
    mx_cmd_done (&rest);
    assert_string_equal (status, "ERR");
    assert_non_null (strstr (payload, "shadow"));
    free (request_id);
    free (status);
    free (payload);
    s_expect (fx, "SELECT count(*) FROM req_track", "0");
    s_expect (fx, "SELECT os_user || ' ' || result FROM audit_log WHERE action = 'request'", "ops refused");
    assert_int_equal (s_outbound_rows (fx), 0);
}

//  ---------------------------------------------------------------------
//  The actor

static void
s_start (fixture_t *fx)
{
    fx->args = (mx_actor_args_t) { .name = "requests", .config = fx->config, .clock = fx->clock };
    fx->actor = mx_testactor_start (mx_requests_actor, &fx->args, "requests", NULL);
}

//  One admin command; returns the payload (malloc'd), *ok the status.
static char *
s_admin (fixture_t *fx, const char *verb, const char *args, bool *ok)
{
    uint64_t sequence = ++fx->admin_sequence;
    mx_cmd_send (zactor_sock (fx->actor), MX_CMD_ADMIN, sequence, verb, args);
    zmsg_t *rest = NULL;
    mx_cmd_t reply = mx_cmd_recv_timeout (zactor_sock (fx->actor), WAIT_MS, &rest);
    if (reply != MX_CMD_ADMIN_REPLY)
        fail_msg ("no ADMIN_REPLY to %s %s", verb, args);
    char *request_id = mx_cmd_pop_str (rest), *status = mx_cmd_pop_str (rest), *payload = mx_cmd_pop_str (rest);
    mx_cmd_done (&rest);
    assert_true (strtoull (request_id, NULL, 10) == sequence);
    *ok = strcmp (status, "OK") == 0;
    free (request_id);
    free (status);
    return payload;
}

//  Waits until the actor has finished what it was doing.
static void
s_settle (fixture_t *fx)
{
    bool ok = true;
    char *payload = s_admin (fx, "ping", "{}", &ok);
    assert_false (ok);
    assert_non_null (strstr (payload, "does not handle"));
    free (payload);
}

//  request with --yes → OK {id, seqn, state}.
static json_t *
s_request_ok (fixture_t *fx, const char *args)
{
    bool ok = false;
    json_t *acting = json_loads (args, 0, NULL);
    assert_non_null (acting);
    json_object_set_new (acting, "yes", json_true ());
    char *acting_text = json_dumps (acting, JSON_COMPACT);
    json_decref (acting);
    char *payload = s_admin (fx, "request", acting_text, &ok);
    free (acting_text);
    if (!ok)
        fail_msg ("request %s refused: %s", args, payload);
    json_t *reply = json_loads (payload, 0, NULL);
    assert_non_null (reply);
    free (payload);
    return reply;
}

static void
test_actor_sends_a_request (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    mx_clock_advance (fx->clock, 1500);         //  08:00:01.500 local
    //  Without --yes nothing is sent; the dry run says what would go.
    bool ok = true;
    char *payload = s_admin (fx, "request", "{\"kind\":\"schedule\",\"from\":\"2026-01-02T00:00\","
                                            "\"to\":\"2026-01-02T23:59\",\"os_user\":\"ops\"}", &ok);
    assert_false (ok);
    assert_non_null (strstr (payload, "add --yes to act, or --dry-run to look first"));
    free (payload);
    payload = s_admin (fx, "request", "{\"kind\":\"schedule\",\"from\":\"2026-01-02T00:00\","
                                      "\"to\":\"2026-01-02T23:59\",\"os_user\":\"ops\",\"dry_run\":true}", &ok);
    assert_true (ok);
    json_t *preview = json_loads (payload, 0, NULL);
    assert_non_null (preview);
    assert_true (json_is_true (json_object_get (preview, "dry_run")));
    assert_string_equal (json_string_value (json_object_get (preview, "kind")), "RQFD");
    assert_string_equal (json_string_value (json_object_get (preview, "routing")), "MSGXRQFD");
    assert_string_equal (json_string_value (json_object_get (preview, "from")), "2026-01-02T00:00");
    assert_true (json_is_null (json_object_get (preview, "supersedes")));
    json_decref (preview);
    free (payload);
    s_expect (fx, "SELECT count(*) FROM req_track", "0");
    s_expect (fx, "SELECT string_agg (os_user || ' ' || result, ',') FROM audit_log WHERE action = 'request'",
              "ops dry-run");
    assert_int_equal (s_outbound_rows (fx), 0);
    //  Counted once sent (the registry is the process's: compare).
    uint64_t sent_before = mx_metrics_counter_value (mx_requests_outcome (MX_REQUEST_RQFD, "sent"));
    json_t *reply = s_request_ok (fx, "{\"kind\":\"schedule\",\"from\":\"2026-01-02T00:00\","
                                      "\"to\":\"2026-01-02T23:59\",\"os_user\":\"ops\"}");
    assert_int_equal (mx_metrics_counter_value (mx_requests_outcome (MX_REQUEST_RQFD, "sent")), sent_before + 1);
    int64_t id = json_integer_value (json_object_get (reply, "id"));
    assert_int_equal (json_integer_value (json_object_get (reply, "seqn")), 1);
    assert_string_equal (json_string_value (json_object_get (reply, "state")), "SENT");
    json_decref (reply);

    s_outbound_t row;
    s_last_outbound (fx, &row);
    assert_string_equal (row.xml,
        "<MSG><META><SNDR>MSGX</SNDR><SEQN>000001</SEQN><DTTM>20260101080001</DTTM>"
        "<TYPE>RQFD</TYPE><STYP>NONE</STYP></META>"
        "<RQFD><STDB>02JAN260000</STDB><STDE>02JAN262359</STDE></RQFD></MSG>");
    assert_string_equal (row.routing, "MSGXRQFD");
    assert_string_equal (row.inserted, "2026-01-01 08:00:01");
    assert_string_equal (row.flags, "0");
    char expected [64];
    snprintf (expected, sizeof expected, "SENT %" PRId64 " true true", row.id);
    s_expect_request (fx, id, "SELECT state || ' ' || coutmsgs_id || ' ' || (sent_at = to_timestamp (1767225601.5))"
                              " || ' ' || (expires_at = sent_at + interval '10 minutes') FROM req_track WHERE id = $1",
                      expected);
    s_expect (fx, "SELECT os_user || ' ' || result || ' ' || (target->>'kind') || ' ' || (target->>'window_begin')"
                  " FROM audit_log WHERE action = 'request' AND result = 'ok'", "ops ok RQFD 2026-01-01T16:00:00Z");

    //  The upstream takes it: WAITING on the next round.
    s_upstream_took (fx, row.id);
    mx_clock_advance (fx->clock, 5000);
    mx_testpg_wait (fx->conn, "SELECT state = 'WAITING' FROM req_track");
    //  No response within the timeout: EXPIRED.
    mx_clock_advance (fx->clock, TIMEOUT);
    mx_testpg_wait (fx->conn, "SELECT state = 'EXPIRED' FROM req_track");
    s_expect (fx, "SELECT last_error FROM req_track", "no response within msgx.requests.timeout");
    assert_int_equal (s_outbound_rows (fx), 1);
}

static void
test_actor_second_request_expires_the_first (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    json_t *first = s_request_ok (fx, "{\"kind\":\"reference\",\"list\":\"SLST\",\"os_user\":\"ops\"}");
    json_t *second = s_request_ok (fx, "{\"kind\":\"reference\",\"list\":\"GLST\",\"os_user\":\"ops\"}");
    assert_string_equal (json_string_value (json_object_get (second, "state")), "SENT");
    assert_int_equal (json_integer_value (json_object_get (second, "seqn")), 2);
    s_expect_request (fx, json_integer_value (json_object_get (first, "id")),
                      "SELECT state FROM req_track WHERE id = $1", "EXPIRED");
    s_expect (fx, "SELECT count(*) FROM req_track WHERE state = 'SENT'", "1");
    assert_int_equal (s_outbound_rows (fx), 2);
    json_decref (first);
    json_decref (second);
}

static void
test_actor_refuses_bad_arguments (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    struct {
        const char *args;
        const char *reason;
    } cases [] = {
        { "{\"kind\":\"schedule\",\"from\":\"2026-01-02\",\"to\":\"2026-01-02T23:59\"}", "YYYY-MM-DDTHH:MM" },
        { "{\"kind\":\"schedule\",\"from\":\"2026-01-03T00:00\",\"to\":\"2026-01-02T23:59\"}", "before" },
        { "{\"kind\":\"schedule\",\"from\":\"2126-01-02T00:00\",\"to\":\"2126-01-02T23:59\"}", "2000..2099" },
        { "{\"kind\":\"schedule\"}", "YYYY-MM-DDTHH:MM" },
        { "{\"kind\":\"reference\",\"list\":\"NOPE\"}", "not a reference list" },
        { "{\"kind\":\"flights\"}", "kind schedule" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        bool ok = true;
        char *payload = s_admin (fx, "request", cases [i].args, &ok);
        if (ok || !strstr (payload, cases [i].reason))
            fail_msg ("%s answered %s %s", cases [i].args, ok ? "OK" : "ERR", payload);
        free (payload);
    }
    s_expect (fx, "SELECT count(*) FROM req_track", "0");
    s_expect (fx, "SELECT count(*) FROM audit_log WHERE action = 'request' AND result = 'refused'", "6");
    assert_int_equal (s_outbound_rows (fx), 0);
}

//  A crash between the COUTMSGS insert and the PostgreSQL update: the row
//  is there, the request still REGISTERED. The restarted actor finds the
//  row by its SEQN and sends nothing again.
static void
test_crash_between_the_two_writes (void **state)
{
    fixture_t *fx = *state;
    mx_requests_row_t request = s_register (fx, MX_REQUEST_RQFD, NULL, T0);
    mx_mailbox_t *mailbox = mx_mailbox_new (fx->config);
    char *error = NULL;
    char *xml = mx_request_encode (&request.request, fx->zone, T0 + 2000, &error);
    int64_t coutmsgs_id = 0;
    if (mx_mailbox_outbound_insert (mailbox, MX_REQUEST_RQFD, xml, strlen (xml), T0 + 2000, &coutmsgs_id, &error))
        fail_msg ("insert: %s", error);
    free (xml);
    mx_mailbox_destroy (&mailbox);

    mx_clock_advance (fx->clock, 3 * MINUTE);
    s_start (fx);
    s_settle (fx);
    char expected [64];
    snprintf (expected, sizeof expected, "SENT %" PRId64 " true", coutmsgs_id);
    s_expect_request (fx, request.id, "SELECT state || ' ' || coutmsgs_id || ' ' || (sent_at = to_timestamp (1767225602))"
                                      " FROM req_track WHERE id = $1", expected);
    assert_int_equal (s_outbound_rows (fx), 1);

    //  Another restart: SENT stays SENT, still one row.
    s_stop (fx);
    s_start (fx);
    s_settle (fx);
    s_expect_request (fx, request.id, "SELECT state FROM req_track WHERE id = $1", "SENT");
    assert_int_equal (s_outbound_rows (fx), 1);
    //  Timed from the real send, not from the repair.
    mx_clock_set (fx->clock, T0 + 2000 + TIMEOUT);
    mx_testpg_wait (fx->conn, "SELECT state = 'EXPIRED' FROM req_track");
}

//  A row with the same SEQN from an earlier turn of the counter is not
//  taken for this request's.
static void
test_old_row_with_the_same_seqn (void **state)
{
    fixture_t *fx = *state;
    mx_mailbox_t *mailbox = mx_mailbox_new (fx->config);
    mx_request_t old = { .kind = MX_REQUEST_RQRD, .rtype = "SLST", .seqn = 1 };
    char *error = NULL;
    char *xml = mx_request_encode (&old, fx->zone, T0 - 86400000, &error);
    int64_t old_id = 0;
    assert_int_equal (mx_mailbox_outbound_insert (mailbox, MX_REQUEST_RQRD, xml, strlen (xml), T0 - 86400000,
                                                  &old_id, &error), 0);
    free (xml);
    mx_mailbox_destroy (&mailbox);

    s_start (fx);
    json_t *reply = s_request_ok (fx, "{\"kind\":\"reference\",\"list\":\"SLST\",\"os_user\":\"ops\"}");
    assert_int_equal (json_integer_value (json_object_get (reply, "seqn")), 1);
    assert_string_equal (json_string_value (json_object_get (reply, "state")), "SENT");
    json_decref (reply);
    assert_int_equal (s_outbound_rows (fx), 2);
    s_outbound_t row;
    s_last_outbound (fx, &row);
    assert_true (row.id != old_id);
    char expected [32];
    snprintf (expected, sizeof expected, "%" PRId64, row.id);
    s_expect (fx, "SELECT coutmsgs_id FROM req_track", expected);
}

static void
test_daily_schedule_request (void **state)
{
    fixture_t *fx = *state;
    s_configure (fx, "msgx.requests.daily-schedule-at", "22:00");
    //  2026-01-01 21:59 local.
    mx_clock_set (fx->clock, s_local (fx, 2026, 1, 1, 21, 59, 0));
    s_start (fx);
    s_settle (fx);
    s_expect (fx, "SELECT count(*) FROM req_track", "0");

    mx_clock_advance (fx->clock, MINUTE);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 1 AND bool_and (state = 'SENT') FROM req_track");
    //  The coming operation day, 2 January local; not audited (no operator).
    s_expect (fx, "SELECT kind || ' ' || requested_by || ' ' || (window_begin = '2026-01-02 00:00+08')"
                  " || ' ' || (window_end = '2026-01-02 23:59+08') FROM req_track",
              "RQFD msgxd daily true true");
    s_expect (fx, "SELECT count(*) FROM audit_log", "0");
    s_outbound_t row;
    s_last_outbound (fx, &row);
    assert_non_null (strstr (row.xml, "<STDB>02JAN260000</STDB><STDE>02JAN262359</STDE>"));

    //  Once a day, across restarts.
    s_stop (fx);
    mx_clock_advance (fx->clock, MINUTE);
    s_start (fx);
    s_settle (fx);
    s_expect (fx, "SELECT count(*) FROM req_track", "1");

    //  The next day, at 22:00 again: the 3rd.
    mx_clock_set (fx->clock, s_local (fx, 2026, 1, 2, 22, 0, 0));
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM req_track WHERE window_begin = '2026-01-03 00:00+08' OR state = 'EXPIRED'");
    mx_testpg_wait (fx->conn, "SELECT count(*) = 1 FROM req_track WHERE state = 'SENT' AND window_begin = '2026-01-03 00:00+08'");
    assert_int_equal (s_outbound_rows (fx), 2);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_second_request_expires_the_first, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_seqn_is_persisted_and_wraps, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_timeout_expires_open_requests, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_resp_without_request, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_resp_matches_and_closes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_resp_older_than_the_send_is_stale, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_late_resp_after_expiry_changes_nothing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_resp_zone_and_units, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_reference_resp, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_outbound_insert_and_find, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_shadow_refuses_outbound, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_actor_sends_a_request, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_actor_second_request_expires_the_first, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_actor_refuses_bad_arguments, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_crash_between_the_two_writes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_old_row_with_the_same_seqn, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_daily_schedule_request, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
