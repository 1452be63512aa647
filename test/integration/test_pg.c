/*  test_pg - the libpq helpers against a real PostgreSQL.  */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mx_log.h"
#include "mx_pg.h"
#include "mx_testenv.h"

static mx_testpg_t *s_pg;

static int
s_group_setup (void **state)
{
    (void) state;
    s_pg = mx_testpg_new ();
    return s_pg ? 0 : -1;
}

static int
s_group_teardown (void **state)
{
    (void) state;
    mx_testpg_destroy (&s_pg);
    mx_testpg_destroy (&s_pg);
    return 0;
}

static PGconn *
s_connect (const char *name, int64_t timeout_ms)
{
    char *error = NULL;
    PGconn *conn = mx_pg_connect (mx_testpg_conninfo (s_pg), name, timeout_ms, &error);
    if (!conn)
        fail_msg ("connect: %s", error ? error : "?");
    return conn;
}

//  First cell of a query that must succeed, malloc'd; NULL for SQL NULL.
//  Value libpq actually used for keyword on conn.
static char *
s_option (PGconn *conn, const char *keyword)
{
    PQconninfoOption *options = PQconninfo (conn);
    assert_non_null (options);
    char *value = NULL;
    for (PQconninfoOption *o = options; o->keyword; o++)
        if (strcmp (o->keyword, keyword) == 0 && o->val)
            value = strdup (o->val);
    PQconninfoFree (options);
    return value;
}

static void
s_assert_option (PGconn *conn, const char *keyword, const char *expect)
{
    char *value = s_option (conn, keyword);
    if (!value || strcmp (value, expect) != 0)
        fail_msg ("%s is %s, expected %s", keyword, value ? value : "unset", expect);
    free (value);
}

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

//  A TCP socket on 127.0.0.1 bound to a free port; listening if asked.
static int
s_socket (bool listening, int *port)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    assert_true (fd >= 0);
    struct sockaddr_in addr = { .sin_family = AF_INET };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    assert_int_equal (bind (fd, (struct sockaddr *) &addr, sizeof addr), 0);
    socklen_t len = sizeof addr;
    assert_int_equal (getsockname (fd, (struct sockaddr *) &addr, &len), 0);
    *port = ntohs (addr.sin_port);
    if (listening)
        assert_int_equal (listen (fd, 4), 0);
    return fd;
}

//  Adds each row's first cell to *(int64_t *) arg.
static void
s_sum_rows (const PGresult *res, int row, void *arg)
{
    *(int64_t *) arg += mx_pg_get_int64 (res, row, 0);
}

static void
test_session_settings (void **state)
{
    (void) state;
    PGconn *conn = s_connect ("msgxd/test", 2500);
    mx_testpg_expect (conn, "SHOW statement_timeout", "2500ms");
    mx_testpg_expect (conn, "SHOW TimeZone", "UTC");
    mx_testpg_expect (conn, "SHOW application_name", "msgxd/test");
    mx_testpg_expect (conn, "SELECT '2021-01-23 05:35:00+08'::timestamptz::text",
                    "2021-01-22 21:35:00+00");
    s_assert_option (conn, "connect_timeout", MX_PG_CONNECT_TIMEOUT_S);
    s_assert_option (conn, "keepalives", "1");
    s_assert_option (conn, "keepalives_idle", MX_PG_KEEPALIVES_IDLE_S);
    s_assert_option (conn, "keepalives_interval", MX_PG_KEEPALIVES_INTERVAL_S);
    s_assert_option (conn, "keepalives_count", MX_PG_KEEPALIVES_COUNT);
    assert_false (mx_pg_is_connection_error (conn));
    mx_pg_disconnect (&conn);
    assert_null (conn);
    mx_pg_disconnect (&conn);

    //  0 = no statement timeout.
    conn = s_connect (NULL, 0);
    mx_testpg_expect (conn, "SHOW statement_timeout", "0");
    mx_pg_disconnect (&conn);
}

//  What the conninfo says wins over our defaults; the caller's
//  application_name wins over the conninfo.
static void
test_conninfo_overrides (void **state)
{
    (void) state;
    char conninfo [512];
    snprintf (conninfo, sizeof conninfo,
              "%s connect_timeout=7 keepalives_idle=30 application_name=fromconf",
              mx_testpg_conninfo (s_pg));
    char *error = NULL;
    PGconn *conn = mx_pg_connect (conninfo, "mine", 1000, &error);
    if (!conn)
        fail_msg ("%s", error);
    s_assert_option (conn, "connect_timeout", "7");
    s_assert_option (conn, "keepalives_idle", "30");
    s_assert_option (conn, "keepalives_interval", MX_PG_KEEPALIVES_INTERVAL_S);
    mx_testpg_expect (conn, "SHOW application_name", "mine");
    mx_pg_disconnect (&conn);

    //  Without an application_name of ours, the conninfo's stays.
    conn = mx_pg_connect (conninfo, NULL, 1000, &error);
    if (!conn)
        fail_msg ("%s", error);
    mx_testpg_expect (conn, "SHOW application_name", "fromconf");
    mx_pg_disconnect (&conn);
}

static void
test_statement_timeout (void **state)
{
    (void) state;
    PGconn *conn = s_connect ("timeout", 200);
    char *error = NULL;
    PGresult *res = (PGresult *) 1;
    double started = s_now ();
    //  The server waits 30 s; the session's statement_timeout cuts it short.
    assert_int_equal (mx_pg_exec (conn, "SELECT pg_sleep (30)", 0, NULL, &res, &error), -1);
    assert_true (s_now () - started < 10);
    assert_null (res);
    assert_non_null (error);
    assert_non_null (strstr (error, "57014"));
    assert_non_null (strstr (error, "statement timeout"));
    assert_null (strchr (error, '\n'));
    free (error);
    //  A statement error, not a lost connection: the session goes on.
    assert_false (mx_pg_is_connection_error (conn));
    mx_testpg_expect (conn, "SELECT 1", "1");

    //  The same through raw libpq and mx_pg_sqlstate.
    res = PQexec (conn, "SELECT pg_sleep (30)");
    assert_string_equal (mx_pg_sqlstate (res), "57014");
    error = NULL;
    assert_int_equal (mx_pg_check (conn, res, "SELECT pg_sleep (30)", &error), -1);
    assert_non_null (strstr (error, "57014"));
    free (error);
    PQclear (res);
    mx_pg_disconnect (&conn);
}

static void
test_bad_conninfo (void **state)
{
    (void) state;
    const char *bad [] = {
        "host=127.0.0.1 nosuchoption=1",
        "this is not a conninfo",
        "postgresql://127.0.0.1:notaport/x?sslmode",
        NULL
    };
    for (const char **conninfo = bad; *conninfo; conninfo++) {
        char *error = NULL;
        assert_null (mx_pg_connect (*conninfo, "bad", 1000, &error));
        assert_non_null (error);
        if (!strstr (error, "PostgreSQL"))
            fail_msg ("unclear error for \"%s\": %s", *conninfo, error);
        assert_null (strchr (error, '\n'));
        free (error);
    }
    //  error may be NULL when the caller does not want the text.
    assert_null (mx_pg_connect ("nosuchoption=1", NULL, 0, NULL));
}

static void
test_unreachable_server (void **state)
{
    (void) state;
    //  Nothing listens on a port that was bound and released.
    int port = 0;
    int fd = s_socket (false, &port);
    close (fd);
    char conninfo [256];
    snprintf (conninfo, sizeof conninfo,
              "host=127.0.0.1 port=%d user=postgres dbname=nowhere", port);
    char *error = NULL;
    assert_null (mx_pg_connect (conninfo, "unreachable", 1000, &error));
    assert_non_null (error);
    char port_text [16];
    snprintf (port_text, sizeof port_text, "%d", port);
    assert_non_null (strstr (error, "cannot connect to PostgreSQL"));
    assert_non_null (strstr (error, port_text));
    assert_null (strchr (error, '\n'));
    free (error);

    //  A peer that accepts TCP but never answers is cut off by
    //  connect_timeout instead of hanging the caller.
    fd = s_socket (true, &port);
    snprintf (conninfo, sizeof conninfo,
              "host=127.0.0.1 port=%d user=postgres dbname=nowhere connect_timeout=2"
              " sslmode=disable", port);
    double started = s_now ();
    error = NULL;
    assert_null (mx_pg_connect (conninfo, "silent", 1000, &error));
    assert_true (s_now () - started < 8);
    assert_non_null (error);
    assert_non_null (strstr (error, "timeout"));
    free (error);
    close (fd);
}

static void
test_exec (void **state)
{
    (void) state;
    PGconn *conn = s_connect ("exec", 5000);
    PGresult *res = NULL;
    char *error = NULL;

    const char *params [] = { "9223372036854775807", NULL, "héllo" };
    assert_int_equal (mx_pg_exec (conn,
        "SELECT $1::bigint, $2::bigint, $3::text, -42::bigint",
        3, params, &res, &error), 0);
    assert_null (error);
    assert_int_equal (mx_pg_get_int64 (res, 0, 0), INT64_MAX);
    assert_int_equal (mx_pg_get_int64 (res, 0, 1), 0);
    assert_null (mx_pg_get_text (res, 0, 1));
    assert_string_equal (mx_pg_get_text (res, 0, 2), "héllo");
    assert_int_equal (mx_pg_get_int64 (res, 0, 3), -42);
    PQclear (res);

    //  A statement error names the SQLSTATE and the statement, on one line.
    res = (PGresult *) 1;
    assert_int_equal (mx_pg_exec (conn, "SELEC 1", 0, NULL, &res, &error), -1);
    assert_null (res);
    assert_non_null (strstr (error, "42601"));
    assert_non_null (strstr (error, "SELEC 1"));
    free (error);
    error = NULL;
    assert_int_equal (mx_pg_exec (conn, "SELECT 1/0", 0, NULL, NULL, &error), -1);
    assert_non_null (strstr (error, "22012"));
    free (error);
    assert_false (mx_pg_is_connection_error (conn));

    //  Values are never pasted into SQL: a quote is just data.
    const char *quote [] = { "x'); DROP TABLE t; --" };
    assert_int_equal (mx_pg_exec (conn, "SELECT length ($1)", 1, quote, &res, NULL), 0);
    assert_int_equal (mx_pg_get_int64 (res, 0, 0), strlen (quote [0]));
    PQclear (res);

    char buf [MX_PG_INT64_BUFSIZE];
    assert_string_equal (mx_pg_int64_text (INT64_MIN, buf), "-9223372036854775808");
    assert_string_equal (mx_pg_int64_text (0, buf), "0");
    assert_string_equal (mx_pg_sqlstate (NULL), "");
    mx_pg_disconnect (&conn);
}

static void
test_transactions (void **state)
{
    (void) state;
    PGconn *conn = s_connect ("tx", 5000);
    char *error = NULL;
    assert_int_equal (mx_pg_exec (conn, "CREATE TEMP TABLE t (v integer PRIMARY KEY)",
                                  0, NULL, NULL, &error), 0);
    //  Nothing open: rollback is a no-op.
    assert_int_equal (mx_pg_rollback (conn, &error), 0);

    assert_int_equal (mx_pg_begin (conn, &error), 0);
    assert_int_equal (mx_pg_exec (conn, "INSERT INTO t VALUES (1)", 0, NULL, NULL, &error), 0);
    assert_int_equal (mx_pg_rollback (conn, &error), 0);
    mx_testpg_expect (conn, "SELECT count(*) FROM t", "0");

    assert_int_equal (mx_pg_begin (conn, &error), 0);
    assert_int_equal (mx_pg_exec (conn, "INSERT INTO t VALUES (1)", 0, NULL, NULL, &error), 0);
    assert_int_equal (mx_pg_commit (conn, &error), 0);
    mx_testpg_expect (conn, "SELECT count(*) FROM t", "1");

    //  A COMMIT after a failed statement is a rollback, and says so.
    assert_int_equal (mx_pg_begin (conn, &error), 0);
    assert_int_equal (mx_pg_exec (conn, "INSERT INTO t VALUES (2)", 0, NULL, NULL, &error), 0);
    assert_int_equal (mx_pg_exec (conn, "INSERT INTO t VALUES (1)", 0, NULL, NULL, &error), -1);
    assert_non_null (strstr (error, "23505"));
    free (error);
    error = NULL;
    assert_int_equal (mx_pg_commit (conn, &error), -1);
    assert_non_null (strstr (error, "rolled back"));
    free (error);
    assert_int_equal (PQtransactionStatus (conn), PQTRANS_IDLE);
    mx_testpg_expect (conn, "SELECT count(*) FROM t", "1");

    //  An unflushed transaction turns synchronous_commit off for itself
    //  only: the session's setting is back after its COMMIT and after its
    //  ROLLBACK, and what it committed is there.
    assert_int_equal (mx_pg_exec (conn, "SET synchronous_commit = on", 0, NULL, NULL, &error), 0);
    assert_int_equal (mx_pg_begin_unflushed (conn, &error), 0);
    assert_int_equal (PQtransactionStatus (conn), PQTRANS_INTRANS);
    mx_testpg_expect (conn, "SHOW synchronous_commit", "off");
    assert_int_equal (mx_pg_exec (conn, "INSERT INTO t VALUES (3)", 0, NULL, NULL, &error), 0);
    assert_int_equal (mx_pg_commit (conn, &error), 0);
    mx_testpg_expect (conn, "SHOW synchronous_commit", "on");
    mx_testpg_expect (conn, "SELECT count(*) FROM t", "2");
    assert_int_equal (mx_pg_begin_unflushed (conn, &error), 0);
    assert_int_equal (mx_pg_exec (conn, "INSERT INTO t VALUES (4)", 0, NULL, NULL, &error), 0);
    assert_int_equal (mx_pg_rollback (conn, &error), 0);
    mx_testpg_expect (conn, "SHOW synchronous_commit", "on");
    mx_testpg_expect (conn, "SELECT count(*) FROM t", "2");
    //  Inside an open transaction it is refused, and that transaction
    //  keeps waiting for the disk.
    assert_int_equal (mx_pg_begin (conn, &error), 0);
    assert_int_equal (mx_pg_begin_unflushed (conn, &error), -1);
    assert_non_null (strstr (error, "already open"));
    free (error);
    error = NULL;
    mx_testpg_expect (conn, "SHOW synchronous_commit", "on");
    assert_int_equal (mx_pg_rollback (conn, &error), 0);
    mx_pg_disconnect (&conn);
}

//  A pipeline runs its statements in order in one round trip; a failure
//  reports the first statement that failed, skips the rest, says how far
//  it went, and leaves the connection usable outside pipeline mode.
static void
test_pipeline (void **state)
{
    (void) state;
    PGconn *conn = s_connect ("pipeline", 5000);
    char *error = NULL;
    assert_int_equal (mx_pg_exec (conn, "CREATE TEMP TABLE p (v integer PRIMARY KEY)",
                                  0, NULL, NULL, &error), 0);
    assert_int_equal (mx_pg_exec (conn, "SET synchronous_commit = on", 0, NULL, NULL, &error), 0);
    const char *one [] = { "1" }, *two [] = { "2" };
    PGresult *inserted = NULL, *read = NULL;
    mx_pg_stmt_t ok [] = {
        { "BEGIN", 0, NULL, NULL, false },
        { "SET LOCAL synchronous_commit = off", 0, NULL, NULL, false },
        { "INSERT INTO p VALUES ($1), ($1::integer + 10)", 1, one, &inserted, false },
        { "SELECT current_setting ('synchronous_commit'), count(*) FROM p WHERE v > $1", 1, one, &read, false },
        { "COMMIT", 0, NULL, NULL, false }
    };
    size_t done = 99;
    assert_int_equal (mx_pg_pipeline (conn, ok, 5, &done, &error), 0);
    assert_int_equal (done, 5);
    assert_non_null (inserted);
    assert_string_equal (PQcmdTuples (inserted), "2");
    assert_non_null (read);
    assert_string_equal (PQgetvalue (read, 0, 0), "off");
    assert_string_equal (PQgetvalue (read, 0, 1), "1");
    PQclear (inserted);
    PQclear (read);
    assert_int_equal (PQpipelineStatus (conn), PQ_PIPELINE_OFF);
    assert_int_equal (PQtransactionStatus (conn), PQTRANS_IDLE);
    mx_testpg_expect (conn, "SELECT count(*) FROM p", "2");
    mx_testpg_expect (conn, "SHOW synchronous_commit", "on");

    //  The duplicate fails: the INSERT after it and the COMMIT are skipped,
    //  the transaction is left open and failed for the caller to roll back.
    mx_pg_stmt_t failing [] = {
        { "BEGIN", 0, NULL, NULL, false },
        { "INSERT INTO p VALUES ($1)", 1, two, &inserted, false },
        { "INSERT INTO p VALUES ($1)", 1, one, NULL, false },
        { "INSERT INTO p VALUES ($1::integer + 100)", 1, two, NULL, false },
        { "COMMIT", 0, NULL, NULL, false }
    };
    assert_int_equal (mx_pg_pipeline (conn, failing, 5, &done, &error), -1);
    assert_int_equal (done, 2);
    assert_non_null (strstr (error, "23505"));
    assert_non_null (strstr (error, "INSERT INTO p VALUES ($1)"));
    free (error);
    error = NULL;
    //  The result of a statement that succeeded is the caller's.
    assert_non_null (inserted);
    PQclear (inserted);
    assert_int_equal (PQpipelineStatus (conn), PQ_PIPELINE_OFF);
    assert_int_equal (PQtransactionStatus (conn), PQTRANS_INERROR);
    assert_int_equal (mx_pg_rollback (conn, &error), 0);
    mx_testpg_expect (conn, "SELECT count(*) FROM p", "2");

    //  A COMMIT answered with a rollback is a failure.
    assert_int_equal (mx_pg_begin (conn, &error), 0);
    assert_int_equal (mx_pg_exec (conn, "INSERT INTO p VALUES (1)", 0, NULL, NULL, &error), -1);
    free (error);
    error = NULL;
    mx_pg_stmt_t commit [] = { { "COMMIT", 0, NULL, NULL, false } };
    assert_int_equal (mx_pg_pipeline (conn, commit, 1, &done, &error), -1);
    assert_int_equal (done, 0);
    assert_non_null (strstr (error, "rolled back"));
    free (error);
    error = NULL;
    assert_int_equal (PQtransactionStatus (conn), PQTRANS_IDLE);

    //  The two halves, with work between them.
    mx_pg_stmt_t halves [] = {
        { "INSERT INTO p VALUES ($1)", 1, two, NULL, false },
        { "SELECT count(*) FROM p", 0, NULL, &read, false }
    };
    assert_int_equal (mx_pg_pipeline_send (conn, halves, 2, &error), 0);
    assert_int_equal (mx_pg_pipeline_result (conn, halves, 2, &done, &error), 0);
    assert_int_equal (done, 2);
    assert_string_equal (PQgetvalue (read, 0, 0), "3");
    PQclear (read);

    //  A named statement in a pipeline: prepared the first time, by name
    //  after that.
    static const char *named_sql = "SELECT count(*) FROM p WHERE v >= $1::integer";
    for (int round = 0; round < 2; round++) {
        mx_pg_stmt_t named [] = {
            { "INSERT INTO p VALUES ($1::integer + 20 + $2::integer)", 2, (const char *[]) { "2", round ? "1" : "0" },
              NULL, false },
            { named_sql, 1, two, &read, true }
        };
        assert_int_equal (mx_pg_pipeline (conn, named, 2, &done, &error), 0);
        assert_int_equal (done, 2);
        assert_int_equal (mx_pg_get_int64 (read, 0, 0), 3 + round);
        PQclear (read);
    }
    mx_testpg_expect (conn, "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'mxp%'", "1");
    mx_pg_disconnect (&conn);
}

//  A statement run by name is prepared once per connection and gives what
//  the same statement gives unnamed; a new connection prepares it again.
static void
test_exec_named (void **state)
{
    (void) state;
    static const char *sql = "SELECT $1::integer * 2";
    static const char *rows_sql = "SELECT g FROM generate_series (1, $1::integer) AS g";
    char *error = NULL;
    for (int round = 0; round < 2; round++) {
        PGconn *conn = s_connect ("named", 5000);
        for (int i = 1; i <= 3; i++) {
            char text [16];
            snprintf (text, sizeof text, "%d", i);
            const char *params [] = { text };
            PGresult *res = NULL;
            assert_int_equal (mx_pg_exec_named (conn, sql, 1, params, &res, &error), 0);
            assert_int_equal (mx_pg_get_int64 (res, 0, 0), 2 * i);
            PQclear (res);
        }
        mx_testpg_expect (conn, "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'mxp%'", "1");
        mx_testpg_expect (conn, "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'mxp%'", sql);
        mx_pg_disconnect (&conn);
    }
    //  Rows, one at a time; a failure of the statement is reported with it.
    PGconn *conn = s_connect ("named rows", 5000);
    const char *three [] = { "3" };
    int64_t sum = 0;
    assert_int_equal (mx_pg_exec_rows_named (conn, rows_sql, 1, three, s_sum_rows, &sum, &error), 0);
    assert_int_equal (sum, 6);
    assert_int_equal (mx_pg_exec_rows_named (conn, rows_sql, 1, three, s_sum_rows, &sum, &error), 0);
    assert_int_equal (sum, 12);
    const char *bad [] = { "x" };
    assert_int_equal (mx_pg_exec_rows_named (conn, rows_sql, 1, bad, s_sum_rows, &sum, &error), -1);
    assert_non_null (strstr (error, "22P02"));
    free (error);
    mx_testpg_expect (conn, "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'mxp%'", "1");
    mx_pg_disconnect (&conn);
}

//  A connection the server has dropped is reported as such, not as a bad
//  statement.
static void
test_connection_lost (void **state)
{
    (void) state;
    assert_true (mx_pg_is_connection_error (NULL));
    PGconn *victim = s_connect ("victim", 5000);
    PGconn *killer = s_connect ("killer", 5000);
    char pid [16];
    snprintf (pid, sizeof pid, "%d", PQbackendPID (victim));
    const char *params [] = { pid };
    PGresult *res = NULL;
    char *error = NULL;
    //  Waits until the backend is gone.
    assert_int_equal (mx_pg_exec (killer, "SELECT pg_terminate_backend ($1::int, 30000)",
                                  1, params, &res, &error), 0);
    assert_string_equal (PQgetvalue (res, 0, 0), "t");
    PQclear (res);

    assert_int_equal (mx_pg_exec (victim, "SELECT 1", 0, NULL, NULL, &error), -1);
    assert_non_null (error);
    assert_null (strchr (error, '\n'));
    free (error);
    assert_true (mx_pg_is_connection_error (victim));
    assert_false (mx_pg_is_connection_error (killer));
    mx_pg_disconnect (&victim);

    //  The same for a pipeline: a failure with one line, no result left
    //  for the caller, nothing hangs.
    victim = s_connect ("pipeline victim", 5000);
    snprintf (pid, sizeof pid, "%d", PQbackendPID (victim));
    assert_int_equal (mx_pg_exec (killer, "SELECT pg_terminate_backend ($1::int, 30000)",
                                  1, params, &res, &error), 0);
    PQclear (res);
    PGresult *read = NULL;
    mx_pg_stmt_t stmts [] = {
        { "BEGIN", 0, NULL, NULL, false },
        { "SELECT 1", 0, NULL, &read, true },
        { "COMMIT", 0, NULL, NULL, false }
    };
    size_t done = 99;
    assert_int_equal (mx_pg_pipeline (victim, stmts, 3, &done, &error), -1);
    assert_int_equal (done, 0);
    assert_null (read);
    assert_non_null (error);
    assert_null (strchr (error, '\n'));
    free (error);
    assert_true (mx_pg_is_connection_error (victim));
    mx_pg_disconnect (&victim);
    mx_pg_disconnect (&killer);
}

//  Server notices reach our JSON log, not libpq's plain-text stderr printer.
static void
test_notices_are_logged (void **state)
{
    (void) state;
    int pipe_fd [2];
    assert_int_equal (pipe (pipe_fd), 0);
    assert_int_equal (mx_log_start (pipe_fd [1], 64), 0);
    PGconn *conn = s_connect ("notices", 5000);
    char *error = NULL;
    assert_int_equal (mx_pg_exec (conn,
        "DO $$ BEGIN RAISE WARNING 'disk nearly full'; END $$", 0, NULL, NULL, &error), 0);
    mx_pg_disconnect (&conn);
    mx_log_stop ();
    //  Restore stderr as the sink for whatever logs next.
    assert_int_equal (mx_log_start (STDERR_FILENO, 64), 0);
    mx_log_stop ();

    close (pipe_fd [1]);
    char text [8192];
    size_t size = 0;
    ssize_t rc;
    while ((rc = read (pipe_fd [0], text + size, sizeof text - 1 - size)) > 0)
        size += (size_t) rc;
    close (pipe_fd [0]);
    text [size] = '\0';
    if (!strstr (text, "disk nearly full") || !strstr (text, "\"level\":\"warn\""))
        fail_msg ("warning not logged: %s", text);
    assert_non_null (strstr (text, "\"sqlstate\":\"01000\""));
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_session_settings),
        cmocka_unit_test (test_conninfo_overrides),
        cmocka_unit_test (test_statement_timeout),
        cmocka_unit_test (test_bad_conninfo),
        cmocka_unit_test (test_unreachable_server),
        cmocka_unit_test (test_exec),
        cmocka_unit_test (test_transactions),
        cmocka_unit_test (test_pipeline),
        cmocka_unit_test (test_exec_named),
        cmocka_unit_test (test_connection_lost),
        cmocka_unit_test (test_notices_are_logged),
    };
    return cmocka_run_group_tests (tests, s_group_setup, s_group_teardown);
}
