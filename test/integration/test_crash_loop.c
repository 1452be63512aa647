/*  Crash-loop quarantine: a message on which msgxd aborts (or hangs) sits
    in the middle of a stream. The test restarts msgxd each time it dies,
    as a supervisor would. After msgx.pipeline.crash-loop-starts deaths on
    it the message is DEAD(EXHAUSTED) crash-loop, every other message is
    processed in msg_id order and nothing is lost.

    The faults come from msgxd-hooked (test/harness/mx_test_hooks): a raw
    text with the marker makes its processor abort, or hang until the
    processing watchdog (msgx.pipeline.message-deadline) ends the process.
    Waiting is on NOTIFYs from a trigger and on the child's exit, with a
    deadline: never a sleep.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "mx_migrate.h"
#include "mx_test_hooks.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 120000
#define CRASH_LOOP_STARTS 3
#define POISON_ID 120

static const char *s_watch_sql =
    "CREATE TABLE mx_test_order (seq bigserial PRIMARY KEY, msg_id bigint, state text, tx bigint);"
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  IF NEW.state IN ('SUCCEEDED','SKIPPED','DEAD') AND OLD.state NOT IN ('SUCCEEDED','SKIPPED','DEAD') THEN"
    "   INSERT INTO mx_test_order (msg_id, state, tx) VALUES (NEW.msg_id, NEW.state, txid_current ());"
    "  END IF;"
    "  PERFORM pg_notify ('mx_test', '');"
    "  RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER mx_test_watch AFTER UPDATE ON proc_state FOR EACH ROW EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

static int64_t
s_int (PGconn *conn, const char *sql)
{
    char *value = mx_testpg_value (conn, sql);
    int64_t result = strtoll (value, NULL, 10);
    free (value);
    return result;
}

static bool
s_true (PGconn *conn, const char *sql)
{
    char *value = mx_testpg_value (conn, sql);
    bool result = strcmp (value, "t") == 0;
    free (value);
    return result;
}

//  Runs until `done` holds (returns true) or the daemon exits by itself
//  (returns false, *status set); fails after WAIT_MS without either.
static bool
s_run_until (PGconn *conn, mx_testproc_t *daemon, const char *done, int *status)
{
    int64_t deadline = zclock_mono () + WAIT_MS;
    while (true) {
        if (s_true (conn, done))
            return true;
        if (mx_testproc_wait (daemon, 0, status) == 0)
            return false;
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            fail_msg ("neither done nor exited after %d ms:\n%s", WAIT_MS, mx_testproc_stderr (daemon));
        //  A dying daemon sends no NOTIFY: look at it again within 200 ms.
        struct pollfd item = { PQsocket (conn), POLLIN, 0 };
        poll (&item, 1, left > 200 ? 200 : (int) left);
        PQconsumeInput (conn);
        PGnotify *notify;
        while ((notify = PQnotifies (conn)))
            PQfreemem (notify);
    }
}

static void
s_crash_loop (const char *fault)
{
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    //  The aborts must not leave core files behind.
    struct rlimit no_core = { 0, 0 };
    assert_int_equal (setrlimit (RLIMIT_CORE, &no_core), 0);
    mx_testpg_t *pg = mx_testpg_new ();
    mx_testmb_t *mb = mx_testmb_new ();
    char *dir = mx_testenv_tmpdir ();
    PGconn *conn = PQconnectdb (mx_testpg_conninfo (pg));
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    char *error = NULL;
    int applied = 0;
    if (mx_migrate_apply (conn, &applied, &error))
        fail_msg ("migrations: %s", error);
    mx_testpg_exec (conn, s_watch_sql);

    //  The stream: a schedule and updates from the real msgx-gen.
    char gen [1024], port [16];
    snprintf (gen, sizeof gen, "%s/tools/msgx-gen", build);
    snprintf (port, sizeof port, "%d", mx_testmb_port (mb));
    const char *gen_argv [] = {
        gen, "--mysql", "--seed", "7", "--flights", "40", "--per-message", "10", "--updates", "300",
        "--host", mx_testmb_host (mb), "--port", port, "--user", mx_testmb_user (mb),
        "--password", mx_testmb_password (mb), "--database", mx_testmb_database (mb), NULL
    };
    char *out = NULL, *err = NULL;
    assert_int_equal (mx_testproc_run (gen_argv, NULL, WAIT_MS, &out, &err), 0);
    free (out);
    free (err);
    //  The marked message, in the middle: the marker rides in a comment
    //  after the root, so the text is otherwise what it was.
    char *xml = mx_testmb_take (mb, POISON_ID);
    assert_non_null (xml);
    char *marked = zsys_sprintf ("%s<!--" MX_TEST_FAULT_MARKER "-->", xml);
    assert_int_equal (mx_testmb_insert (mb, POISON_ID, marked, -1), POISON_ID);
    free (xml);
    free (marked);
    int64_t mailbox_rows = 0, max_id = 0;
    {
        MYSQL *m = mx_testmb_connect (mb);
        assert_int_equal (mysql_query (m, "SELECT COUNT(*), MAX(CMINMSGS_ID) FROM CMINMSGS"), 0);
        MYSQL_RES *res = mysql_store_result (m);
        MYSQL_ROW row = mysql_fetch_row (res);
        mailbox_rows = strtoll (row [0], NULL, 10);
        max_id = strtoll (row [1], NULL, 10);
        mysql_free_result (res);
        mysql_close (m);
    }

    char *env [32];
    size_t n = 0;
    env [n++] = zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (pg));
    env [n++] = zsys_sprintf ("MSGX_ADMIN_ENDPOINT=ipc://%s/admin.sock", dir);
    //  A port of its own: tests run side by side.
    env [n++] = zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", mx_testenv_free_port ());
    n += mx_testmb_environment (mb, "+00:00", env + n);
    env [n++] = zsys_sprintf ("MSGX_TEST_FAULT=%s", fault);
    env [n++] = zsys_sprintf ("MSGX_PIPELINE_CRASH_LOOP_STARTS=%d", CRASH_LOOP_STARTS);
    env [n++] = strdup ("MSGX_PIPELINE_MESSAGE_DEADLINE=1s");
    env [n++] = strdup ("MSGX_PIPELINE_AUTOSTART=true");
    env [n++] = strdup ("MSGX_PIPELINE_POLL_INTERVAL=50ms");
    env [n++] = strdup ("MSGX_PIPELINE_CLAIM_BATCH=500");
    env [n++] = strdup ("MSGX_LOG_LEVEL=warn");
    env [n] = NULL;
    char msgxd [1024];
    snprintf (msgxd, sizeof msgxd, "%s/test/integration/msgxd-hooked", build);
    const char *argv [] = { msgxd, NULL };

    char done_sql [256];
    snprintf (done_sql, sizeof done_sql,
              "SELECT (SELECT committed_up_to FROM inbox_cursor) = %" PRId64
              " AND NOT EXISTS (SELECT 1 FROM proc_state WHERE state IN ('PENDING', 'FAILED'))", max_id);
    //  The supervisor: restart after each death, until the stream is done.
    int deaths = 0;
    mx_testproc_t *daemon = NULL;
    while (true) {
        daemon = mx_testproc_new (argv, (const char *const *) env);
        assert_non_null (daemon);
        int status = 0;
        if (s_run_until (conn, daemon, done_sql, &status))
            break;
        const char *log = mx_testproc_stderr (daemon);
        if (strcmp (fault, "abort") == 0) {
            if (!WIFSIGNALED (status) || WTERMSIG (status) != SIGABRT)
                fail_msg ("msgxd ended otherwise than by the abort (status %d):\n%s", status, log);
        }
        else
        if (!WIFEXITED (status) || WEXITSTATUS (status) == 0 || !strstr (log, "message-deadline"))
            fail_msg ("msgxd did not exit non-zero on its watchdog (status %d):\n%s", status, log);
        mx_testproc_destroy (&daemon);
        deaths++;
        //  One more than the limit at most: the first death may come while
        //  the batch before it is committed and the message is read ahead.
        if (deaths > CRASH_LOOP_STARTS + 1)
            fail_msg ("still dying after %d restarts", deaths);
    }
    printf ("# %s: %d deaths before the quarantine\n", fault, deaths);
    assert_true (deaths >= CRASH_LOOP_STARTS);
    //  The quarantine says so at ERROR, naming the message.
    const char *line = mx_testproc_expect_stderr (daemon, "crash-loop", 10000);
    assert_non_null (line);
    assert_non_null (strstr (line, "\"level\":\"error\""));
    assert_non_null (strstr (line, "\"msg_id\":" "120"));
    mx_testproc_signal (daemon, SIGTERM);
    int status = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &status), 0);
    assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
    mx_testproc_destroy (&daemon);

    //  The audit.
    char sql [512];
    snprintf (sql, sizeof sql, "SELECT state || ' ' || error_class || ' ' || (last_error LIKE 'crash-loop:%%')"
                               " FROM proc_state WHERE msg_id = %d", POISON_ID);
    char *poison = mx_testpg_value (conn, sql);
    assert_string_equal (poison, "DEAD EXHAUSTED true");
    free (poison);
    assert_int_equal (s_int (conn, "SELECT count(*) FROM proc_state"), mailbox_rows);
    assert_int_equal (s_int (conn, "SELECT count(*) FROM proc_state WHERE state = 'DEAD'"), 1);
    assert_int_equal (s_int (conn, "SELECT count(*) FROM proc_state WHERE state NOT IN ('SUCCEEDED', 'SKIPPED')"
                                   " AND msg_id <> 120"), 0);
    assert_int_equal (s_int (conn, "SELECT count(*) FROM mx_test_order"),
                      s_int (conn, "SELECT count(DISTINCT msg_id) FROM mx_test_order"));
    assert_int_equal (s_int (conn, "SELECT count(*) FROM mx_test_order"), mailbox_rows);
    //  Order: across transactions, no message finished before an earlier one.
    assert_int_equal (s_int (conn,
        "SELECT count(*) FROM (SELECT min_id, max (max_id) OVER (ORDER BY tx ROWS BETWEEN UNBOUNDED PRECEDING"
        " AND 1 PRECEDING) AS before FROM (SELECT tx, min (msg_id) AS min_id, max (msg_id) AS max_id"
        " FROM mx_test_order GROUP BY tx) g) w WHERE min_id < before"), 0);
    //  No double business effect: per flight, KAFKA:msg versions run 1..n;
    //  KAFKA:schd (one per flight and batch) repeats none; both end at the
    //  flight's version.
    assert_int_equal (s_int (conn,
        "SELECT count(*) FROM (SELECT target, flid, count(*) AS n, count(DISTINCT state_version) AS d,"
        " min(state_version) AS lo, max(state_version) AS hi FROM msg_event GROUP BY target, flid) e"
        " JOIN flight_schd f USING (flid) WHERE e.n <> e.d OR e.hi <> f.state_version"
        "    OR (e.target = 'KAFKA:msg' AND (e.lo <> 1 OR e.hi <> e.n))"),
        0);

    for (size_t i = 0; i < n; i++)
        free (env [i]);
    PQfinish (conn);
    mx_testmb_destroy (&mb);
    mx_testpg_destroy (&pg);
    mx_testenv_rmtree (dir);
    free (dir);
}

static void
test_abort_on_a_message_quarantines_it_after_the_restarts (void **state)
{
    (void) state;
    s_crash_loop ("abort");
}

static void
test_hang_on_a_message_ends_in_the_same_quarantine (void **state)
{
    (void) state;
    s_crash_loop ("hang");
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_abort_on_a_message_quarantines_it_after_the_restarts),
        cmocka_unit_test (test_hang_on_a_message_ends_in_the_same_quarantine),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
