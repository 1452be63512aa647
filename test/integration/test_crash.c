/*  Crash test: kill -9 of msgxd at event-chosen moments while a mixed
    mailbox (valid, malformed, duplicate, ignored, unsupported, with holes
    that never fill and holes that fill late) drains; restart after each
    kill. Afterwards every message has exactly one terminal state (or sits
    in a released hole), identities are bound once, and terminal states were
    reached in msg_id order.

    "When" to kill is chosen by counting terminal transitions (LISTEN on a
    trigger), never by sleeping. MX_CRASH_MESSAGES and MX_CRASH_KILLS size
    the run (defaults 5000 and 10).  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "mx_migrate.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 120000

static const char *s_watch_sql =
    "CREATE TABLE mx_test_order (seq bigserial PRIMARY KEY, msg_id bigint, state text, tx bigint);"
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  IF NEW.state IN ('SUCCEEDED','SKIPPED','DEAD') AND OLD.state NOT IN ('SUCCEEDED','SKIPPED','DEAD') THEN"
    "   INSERT INTO mx_test_order (msg_id, state, tx) VALUES (NEW.msg_id, NEW.state, txid_current ());"
    "   PERFORM pg_notify ('mx_test', NEW.msg_id::text);"
    "  ELSIF NEW.backfill_at IS DISTINCT FROM OLD.backfill_at THEN"
    "   PERFORM pg_notify ('mx_marks', '');"
    "  END IF;"
    "  RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER mx_test_watch AFTER UPDATE ON proc_state FOR EACH ROW EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test; LISTEN mx_marks;";

static int
s_env_int (const char *name, int fallback)
{
    const char *text = getenv (name);
    return text && atoi (text) > 0 ? atoi (text) : fallback;
}

static int64_t
s_int (PGconn *conn, const char *sql)
{
    char *value = mx_testpg_value (conn, sql);
    int64_t result = strtoll (value, NULL, 10);
    free (value);
    return result;
}

//  Waits until `count` more terminal transitions were notified, or the
//  daemon exits (returns false then).
static bool
s_wait_transitions (PGconn *conn, mx_testproc_t *daemon, int count)
{
    int64_t deadline = zclock_mono () + WAIT_MS;
    while (count > 0) {
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            fail_msg ("no progress for %d ms", WAIT_MS);
        int status;
        if (mx_testproc_wait (daemon, 0, &status) == 0)
            return false;
        struct pollfd item = { PQsocket (conn), POLLIN, 0 };
        poll (&item, 1, left > 1000 ? 1000 : (int) left);
        PQconsumeInput (conn);
        PGnotify *notify;
        while ((notify = PQnotifies (conn))) {
            if (strcmp (notify->relname, "mx_test") == 0)
                count--;
            PQfreemem (notify);
        }
    }
    return true;
}

//  Waits for any notification (or the daemon's exit: returns false).
static bool
s_wait_any_change (PGconn *conn, mx_testproc_t *daemon)
{
    int64_t deadline = zclock_mono () + WAIT_MS;
    while (zclock_mono () < deadline) {
        int status;
        if (mx_testproc_wait (daemon, 0, &status) == 0)
            return false;
        struct pollfd item = { PQsocket (conn), POLLIN, 0 };
        poll (&item, 1, 1000);
        PQconsumeInput (conn);
        PGnotify *notify;
        bool any = false;
        while ((notify = PQnotifies (conn))) {
            any = true;
            PQfreemem (notify);
        }
        if (any)
            return true;
    }
    fail_msg ("no change for %d ms", WAIT_MS);
    return false;
}

static void
test_kill_9_while_draining_loses_and_repeats_nothing (void **state)
{
    (void) state;
    int messages = s_env_int ("MX_CRASH_MESSAGES", 5000);
    int kills = s_env_int ("MX_CRASH_KILLS", 10);
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    mx_testpg_t *pg = mx_testpg_new ();
    mx_testmb_t *mb = mx_testmb_new ();
    char *dir = mx_testenv_tmpdir ();
    PGconn *conn = PQconnectdb (mx_testpg_conninfo (pg));
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    char *error = NULL;
    int applied = 0;
    if (mx_migrate_apply (conn, &applied, &error))
        fail_msg ("migrations: %s", error);
    PQclear (PQexec (conn, s_watch_sql));

    //  The mailbox: a generated mix, loaded by the real msgx-gen.
    char gen [1024], port [16], updates [16];
    snprintf (gen, sizeof gen, "%s/tools/msgx-gen", build);
    snprintf (port, sizeof port, "%d", mx_testmb_port (mb));
    snprintf (updates, sizeof updates, "%d", messages - 2);
    const char *gen_argv [] = {
        gen, "--mysql", "--seed", "42", "--flights", "100", "--per-message", "50", "--updates", updates,
        "--duplicates", "3", "--malformed", "2", "--ignored", "3", "--unsupported", "2",
        "--host", mx_testmb_host (mb), "--port", port, "--user", mx_testmb_user (mb),
        "--password", mx_testmb_password (mb), "--database", mx_testmb_database (mb), NULL
    };
    char *out = NULL, *err = NULL;
    assert_int_equal (mx_testproc_run (gen_argv, NULL, WAIT_MS, &out, &err), 0);
    printf ("# %s", out);
    free (out);
    free (err);

    //  Holes: five never fill; five are taken out now and put back late.
    int64_t never [5], late [5];
    char *late_xml [5];
    for (int i = 0; i < 5; i++) {
        never [i] = 300 + i * (messages / 6);
        late [i] = 150 + i * (messages / 6);
        char *gone = mx_testmb_take (mb, never [i]);
        assert_non_null (gone);
        free (gone);
        late_xml [i] = mx_testmb_take (mb, late [i]);
        assert_non_null (late_xml [i]);
    }

    char conninfo [512], endpoint [512], host [128], user [128], password [128], database [128];
    snprintf (conninfo, sizeof conninfo, "MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (pg));
    snprintf (endpoint, sizeof endpoint, "MSGX_ADMIN_ENDPOINT=ipc://%s/admin.sock", dir);
    snprintf (host, sizeof host, "MAILBOX_SHARED_MYSQL_HOST=%s", mx_testmb_host (mb));
    char port_env [64];
    snprintf (port_env, sizeof port_env, "MAILBOX_SHARED_MYSQL_PORT=%d", mx_testmb_port (mb));
    snprintf (user, sizeof user, "MAILBOX_SHARED_MYSQL_USER=%s", mx_testmb_user (mb));
    snprintf (password, sizeof password, "MAILBOX_SHARED_MYSQL_PASSWORD=%s", mx_testmb_password (mb));
    snprintf (database, sizeof database, "MAILBOX_SHARED_MYSQL_DATABASE=%s", mx_testmb_database (mb));
    const char *env [] = {
        conninfo, endpoint, host, port_env, user, password, database,
        "MAILBOX_SHARED_MYSQL_ENABLED=true", "MAILBOX_SHARED_MYSQL_TIME_ZONE=+00:00",
        "MSGX_PIPELINE_AUTOSTART=true", "MSGX_PIPELINE_POLL_INTERVAL=50ms",
        "MSGX_PIPELINE_CLAIM_BATCH=200", "MSGX_PIPELINE_MAX_COMMIT_DELAY=1s",
        "MSGX_PIPELINE_MAX_ATTEMPTS=2", "MSGX_PIPELINE_BACKOFF_MS=1", "MSGX_LOG_LEVEL=warn", NULL
    };
    char msgxd [1024];
    snprintf (msgxd, sizeof msgxd, "%s/cmd/msgxd", build);
    const char *argv [] = { msgxd, NULL };

    //  Kill after a pseudo-random number of terminal transitions each time.
    uint32_t seed = 12345;
    int killed = 0, late_put_back = 0;
    int64_t t0 = zclock_mono ();
    while (killed < kills) {
        mx_testproc_t *daemon = mx_testproc_new (argv, env);
        seed = seed * 1103515245 + 12345;
        int after = 50 + (int) ((seed >> 8) % 400);
        bool alive = s_wait_transitions (conn, daemon, after);
        if (!alive)
            fail_msg ("msgxd exited by itself:\n%s", mx_testproc_stderr (daemon));
        mx_testproc_signal (daemon, SIGKILL);
        int status = 0;
        assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &status), 0);
        assert_true (WIFSIGNALED (status));
        mx_testproc_destroy (&daemon);
        killed++;
        //  A late hole fills while the daemon is down.
        if (late_put_back < 5) {
            int64_t id = late [late_put_back];
            assert_int_equal (mx_testmb_insert (mb, id, late_xml [late_put_back], -1), id);
            late_put_back++;
        }
    }
    while (late_put_back < 5) {
        assert_int_equal (mx_testmb_insert (mb, late [late_put_back], late_xml [late_put_back], -1),
                          late [late_put_back]);
        late_put_back++;
    }
    //  Final run to the end: every mailbox ID finished or in a released hole.
    mx_testproc_t *daemon = mx_testproc_new (argv, env);
    int64_t max_id = 0;
    {
        MYSQL *m = mx_testmb_connect (mb);
        assert_int_equal (mysql_query (m, "SELECT MAX(CMINMSGS_ID) FROM CMINMSGS"), 0);
        MYSQL_RES *res = mysql_store_result (m);
        max_id = strtoll (mysql_fetch_row (res) [0], NULL, 10);
        mysql_free_result (res);
        mysql_close (m);
    }
    char done_sql [256];
    snprintf (done_sql, sizeof done_sql,
              "SELECT (SELECT committed_up_to FROM inbox_cursor) = %" PRId64
              " AND NOT EXISTS (SELECT 1 FROM proc_state WHERE state IN ('PENDING', 'FAILED'))", max_id);
    while (true) {
        char *done = mx_testpg_value (conn, done_sql);
        bool finished = strcmp (done, "t") == 0;
        free (done);
        if (finished)
            break;
        if (!s_wait_transitions (conn, daemon, 1))
            fail_msg ("msgxd exited by itself:\n%s", mx_testproc_stderr (daemon));
    }
    double seconds = (double) (zclock_mono () - t0) / 1000.0;
    //  Every processed mark lands in the mailbox (the backfill actor tries
    //  each at once and sweeps the rest).
    while (true) {
        char *pending = mx_testpg_value (conn, "SELECT count(*) FROM proc_state WHERE backfill_at IS NULL"
                                       " AND backfill_abandoned_at IS NULL");
        bool marked = strcmp (pending, "0") == 0;
        free (pending);
        if (marked)
            break;
        if (!s_wait_any_change (conn, daemon))
            fail_msg ("msgxd exited by itself:\n%s", mx_testproc_stderr (daemon));
    }
    mx_testproc_signal (daemon, SIGTERM);
    int status = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &status), 0);
    mx_testproc_destroy (&daemon);

    //  The audit.
    int64_t rows = s_int (conn, "SELECT count(*) FROM proc_state");
    int64_t terminal = s_int (conn, "SELECT count(*) FROM proc_state WHERE state IN ('SUCCEEDED','SKIPPED','DEAD')"
                                    " AND finished_at IS NOT NULL AND backfill_at IS NOT NULL");
    int64_t released = s_int (conn, "SELECT coalesce (sum (id_to - id_from + 1), 0) FROM released_hole");
    int64_t in_holes = s_int (conn, "SELECT count(*) FROM proc_state p JOIN released_hole h"
                                    " ON p.msg_id BETWEEN h.id_from AND h.id_to");
    int64_t transitions = s_int (conn, "SELECT count(*) FROM mx_test_order");
    int64_t distinct_transitions = s_int (conn, "SELECT count(DISTINCT msg_id) FROM mx_test_order");
    //  Order: a batch becomes terminal at once (one transaction); across
    //  transactions, no message may finish before an earlier one.
    int64_t out_of_order = s_int (conn,
        "SELECT count(*) FROM (SELECT min_id, max (max_id) OVER (ORDER BY tx ROWS BETWEEN UNBOUNDED PRECEDING"
        " AND 1 PRECEDING) AS before FROM (SELECT tx, min (msg_id) AS min_id, max (msg_id) AS max_id"
        " FROM mx_test_order GROUP BY tx) g) w WHERE min_id < before");
    int64_t finished_disorder = s_int (conn,
        "SELECT count(*) FROM (SELECT finished_at < lag (finished_at) OVER (ORDER BY msg_id) AS bad"
        " FROM proc_state) t WHERE bad");
    int64_t identities = s_int (conn, "SELECT count(*) FROM identity");
    int64_t bound_rows = s_int (conn, "SELECT count(*) FROM proc_state WHERE identity_key IS NOT NULL");
    int64_t identity_mismatch = s_int (conn, "SELECT count(*) FROM identity i LEFT JOIN proc_state p"
                                             " ON p.identity_key = i.identity_key WHERE p.msg_id IS DISTINCT FROM i.msg_id");
    int64_t bad_duplicates = s_int (conn, "SELECT count(*) FROM proc_state WHERE outcome LIKE 'duplicate-of:%'"
                                          " AND split_part (outcome, ':', 2)::bigint >= msg_id");
    int64_t skipped_dup = s_int (conn, "SELECT count(*) FROM proc_state WHERE outcome LIKE 'duplicate-of:%'");
    //  No double business effect: per flight, KAFKA:msg versions run 1..n
    //  without gap or repeat; KAFKA:schd (one per flight and batch) repeats
    //  none; both end at the flight's version.
    int64_t version_breaks = s_int (conn,
        "SELECT count(*) FROM (SELECT target, flid, count(*) AS n, count(DISTINCT state_version) AS d,"
        " min(state_version) AS lo, max(state_version) AS hi FROM msg_event GROUP BY target, flid) e"
        " JOIN flight_schd f USING (flid) WHERE e.n <> e.d OR e.hi <> f.state_version"
        "    OR (e.target = 'KAFKA:msg' AND (e.lo <> 1 OR e.hi <> e.n))");
    //  ... and event ids (delivery order) follow the versions per flight.
    version_breaks += s_int (conn,
        "SELECT count(*) FROM (SELECT state_version < lag (state_version) OVER"
        " (PARTITION BY target, flid ORDER BY event_id) AS bad FROM msg_event) t WHERE bad");
    int64_t succeeded = s_int (conn, "SELECT count(*) FROM proc_state WHERE state = 'SUCCEEDED'");
    int64_t events = s_int (conn, "SELECT count(*) FROM msg_event");
    int64_t dead = s_int (conn, "SELECT count(*) FROM proc_state WHERE state = 'DEAD'");
    int64_t skipped = s_int (conn, "SELECT count(*) FROM proc_state WHERE state = 'SKIPPED'");
    int64_t mailbox_rows = 0;
    {
        MYSQL *m = mx_testmb_connect (mb);
        assert_int_equal (mysql_query (m, "SELECT COUNT(*) FROM CMINMSGS"), 0);
        MYSQL_RES *res = mysql_store_result (m);
        mailbox_rows = strtoll (mysql_fetch_row (res) [0], NULL, 10);
        mysql_free_result (res);
        mysql_close (m);
    }
    int64_t late_arrivals = mailbox_rows - rows;
    int64_t marked_in_mailbox = 0;
    {
        MYSQL *m = mx_testmb_connect (mb);
        assert_int_equal (mysql_query (m, "SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL"
                                          " AND CMINMSGS_STATUS = 'PROCESSED'"), 0);
        MYSQL_RES *res = mysql_store_result (m);
        marked_in_mailbox = strtoll (mysql_fetch_row (res) [0], NULL, 10);
        mysql_free_result (res);
        mysql_close (m);
    }
    printf ("# %" PRId64 " processed marks in the mailbox\n", marked_in_mailbox);
    assert_int_equal (marked_in_mailbox, rows);
    printf ("# crash test: %d kills, %" PRId64 " mailbox rows, %" PRId64 " processed (%" PRId64 " DEAD, %" PRId64
            " SKIPPED of which %" PRId64 " duplicates), %" PRId64 " IDs in released holes, %" PRId64
            " late arrivals, %.1f s\n", killed, mailbox_rows, rows, dead, skipped, skipped_dup, released,
            late_arrivals, seconds);
    printf ("# %" PRId64 " SUCCEEDED, %" PRId64 " events; lost %" PRId64 ", repeated transitions %" PRId64
            ", out of order %" PRId64 ", double effects %" PRId64 "\n", succeeded, events,
            mailbox_rows - rows - late_arrivals, transitions - distinct_transitions, out_of_order, version_breaks);
    assert_int_equal (terminal, rows);                  //  one terminal state each, with its intent
    assert_int_equal (transitions, distinct_transitions);
    assert_int_equal (transitions, rows);
    assert_int_equal (in_holes, 0);                     //  nothing processed inside a released hole
    assert_true (released >= 5);                        //  the five that never filled
    assert_true (late_arrivals >= 0 && late_arrivals <= 5);
    assert_int_equal (rows + late_arrivals, mailbox_rows);
    assert_int_equal (out_of_order, 0);
    assert_int_equal (finished_disorder, 0);
    assert_int_equal (identities, bound_rows);
    assert_int_equal (identity_mismatch, 0);
    assert_int_equal (bad_duplicates, 0);
    assert_true (skipped_dup > 0);
    assert_int_equal (version_breaks, 0);
    assert_true (succeeded > messages / 2);

    for (int i = 0; i < 5; i++)
        free (late_xml [i]);
    PQfinish (conn);
    mx_testmb_destroy (&mb);
    mx_testpg_destroy (&pg);
    mx_testenv_rmtree (dir);
    free (dir);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_kill_9_while_draining_loses_and_repeats_nothing),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
