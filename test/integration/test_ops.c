/*  Integration tests of the operations surface through the real binaries:
    /health and /metrics scraped over HTTP from a running msgxd (active,
    standby, PostgreSQL refusing connections), msgxctl show, and msgxctl
    status --watch drawn in a tmux pane. Waiting is always on a process's
    output, a NOTIFY, a FIFO or tmux wait-for: never a sleep.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 30000
#define IO_TIMEOUT_S 20

//  One daemon: its environment, HTTP port and admin endpoint.
typedef struct {
    char *vars [32];
    int count;
    int port;
    int compat_port;            //  the compat entry's own bind
    char *endpoint;
    mx_testproc_t *proc;
} daemon_t;

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;            //  NULL unless the test uses the mailbox
    PGconn *conn;
    char *dir;
    char msgxd [1024];
    char msgxctl [1024];
    daemon_t daemons [2];       //  whatever a failed test leaves is killed
    char tmux_socket [64];      //  a tmux server of our own, when started
} fixture_t;


typedef struct {
    int status;
    char *head;
    char *body;
} reply_t;

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    assert_non_null (fx);
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    snprintf (fx->msgxd, sizeof fx->msgxd, "%s/cmd/msgxd", build);
    snprintf (fx->msgxctl, sizeof fx->msgxctl, "%s/cmd/msgxctl", build);
    fx->pg = mx_testpg_new ();
    fx->conn = PQconnectdb (mx_testpg_conninfo (fx->pg));
    assert_int_equal (PQstatus (fx->conn), CONNECTION_OK);
    fx->dir = mx_testenv_tmpdir ();
    *state = fx;
    return 0;
}

static void s_daemon_free (daemon_t *self);

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    for (int i = 0; i < 2; i++) {
        mx_testproc_destroy (&fx->daemons [i].proc);
        s_daemon_free (&fx->daemons [i]);
    }
    if (*fx->tmux_socket) {
        const char *argv [] = { "tmux", "-L", fx->tmux_socket, "kill-server", NULL };
        mx_testproc_run (argv, NULL, WAIT_MS, NULL, NULL);      //  gone already is fine
    }
    PQfinish (fx->conn);
    mx_testpg_destroy (&fx->pg);
    mx_testmb_destroy (&fx->mb);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

static void
s_daemon_var (daemon_t *self, char *var)
{
    assert_true (self->count < 31);
    self->vars [self->count++] = var;
}

//  A daemon called name on the test database; extra "KEY=VALUE" strings
//  (NULL-terminated, may be NULL) are added. With the mailbox when fx has one.
static void
s_daemon_start (fixture_t *fx, daemon_t *self, const char *name, const char *const *extra)
{
    memset (self, 0, sizeof *self);
    self->port = mx_testenv_free_port ();
    self->endpoint = zsys_sprintf ("ipc://%s/%s.sock", fx->dir, name);
    s_daemon_var (self, zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (fx->pg)));
    s_daemon_var (self, zsys_sprintf ("MSGX_ADMIN_ENDPOINT=%s", self->endpoint));
    s_daemon_var (self, strdup ("MSGX_PROFILE=dev"));
    s_daemon_var (self, zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", self->port));
    do
        self->compat_port = mx_testenv_free_port ();
    while (self->compat_port == self->port);
    s_daemon_var (self, strdup ("MSGX_HTTP_COMPAT_ENABLED=true"));
    s_daemon_var (self, zsys_sprintf ("MSGX_HTTP_COMPAT_BIND=127.0.0.1:%d", self->compat_port));
    s_daemon_var (self, strdup ("MSGX_HTTP_COMPAT_ALLOW=127.0.0.1"));
    //  Every scrape reads the database afresh.
    s_daemon_var (self, strdup ("MSGX_HEALTH_BACKLOG_CACHE_TTL_MS=0"));
    if (fx->mb) {
        s_daemon_var (self, strdup ("MAILBOX_SHARED_MYSQL_ENABLED=true"));
        s_daemon_var (self, zsys_sprintf ("MAILBOX_SHARED_MYSQL_HOST=%s", mx_testmb_host (fx->mb)));
        s_daemon_var (self, zsys_sprintf ("MAILBOX_SHARED_MYSQL_PORT=%d", mx_testmb_port (fx->mb)));
        s_daemon_var (self, zsys_sprintf ("MAILBOX_SHARED_MYSQL_USER=%s", mx_testmb_user (fx->mb)));
        s_daemon_var (self, zsys_sprintf ("MAILBOX_SHARED_MYSQL_PASSWORD=%s", mx_testmb_password (fx->mb)));
        s_daemon_var (self, zsys_sprintf ("MAILBOX_SHARED_MYSQL_DATABASE=%s", mx_testmb_database (fx->mb)));
        s_daemon_var (self, strdup ("MAILBOX_SHARED_MYSQL_TIME_ZONE=+00:00"));
        //  A hole is held for the whole test, never released by age.
        s_daemon_var (self, strdup ("MSGX_PIPELINE_MAX_COMMIT_DELAY=1h"));
    }
    for (int i = 0; extra && extra [i]; i++)
        s_daemon_var (self, strdup (extra [i]));
    const char *argv [] = { fx->msgxd, NULL };
    self->proc = mx_testproc_new (argv, (const char *const *) self->vars);
    assert_non_null (self->proc);
}

//  SIGTERM, then an ordered exit with code 0.
static void
s_daemon_stop (daemon_t *self)
{
    if (self->proc) {
        mx_testproc_signal (self->proc, SIGTERM);
        int wstatus = 0;
        assert_int_equal (mx_testproc_wait (self->proc, WAIT_MS, &wstatus), 0);
        assert_true (WIFEXITED (wstatus));
        assert_int_equal (WEXITSTATUS (wstatus), 0);
        mx_testproc_destroy (&self->proc);
    }
    s_daemon_free (self);
}

static void
s_daemon_free (daemon_t *self)
{
    for (int i = 0; i < self->count; i++)
        free (self->vars [i]);
    self->count = 0;
    free (self->endpoint);
    self->endpoint = NULL;
}

//  msgxctl against the daemon; returns its exit code.
static int
s_ctl (fixture_t *fx, daemon_t *daemon, const char *const *words, char **out, char **err)
{
    const char *argv [16] = { fx->msgxctl, "--endpoint", daemon->endpoint };
    int count = 3;
    for (int i = 0; words [i]; i++)
        argv [count++] = words [i];
    argv [count] = NULL;
    int code = mx_testproc_run (argv, NULL, WAIT_MS, out, err);
    //  Unreachable is never expected here: show why.
    if (code == 3 && daemon->proc) {
        printf ("# msgxctl %s: %s", words [0], *err ? *err : "");
        const char *log = mx_testproc_stderr (daemon->proc);
        size_t length = strlen (log);
        printf ("# daemon log:\n%s\n", length > 6000 ? log + length - 6000 : log);
    }
    return code;
}

static void
s_http (int port, const char *request, reply_t *reply)
{
    reply->status = mx_testhttp_exchange (port, request, IO_TIMEOUT_S, &reply->head, &reply->body);
}

static void
s_get (int port, const char *path, reply_t *reply)
{
    char request [256];
    snprintf (request, sizeof request, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    s_http (port, request, reply);
}

static json_t *
s_get_health (int port, int *status)
{
    reply_t reply;
    s_get (port, "/health", &reply);
    *status = reply.status;
    assert_non_null (strstr (reply.head, "Content-Type: application/json"));
    json_t *health = json_loads (reply.body, 0, NULL);
    if (!health)
        fail_msg ("/health is not JSON: %s", reply.body);
    free (reply.head);
    free (reply.body);
    return health;
}

static void
s_reply_free (reply_t *reply)
{
    free (reply->head);
    free (reply->body);
}

static void
s_expect_sample (const char *body, const char *series, const char *expected)
{
    char buf [64];
    assert_string_equal (mx_testhttp_sample (body, series, buf, sizeof buf), expected);
}

static const char *
s_dependency_detail (json_t *health, const char *name, bool *ok)
{
    json_t *dep = json_object_get (json_object_get (health, "dependencies"), name);
    *ok = json_is_true (json_object_get (dep, "ok"));
    return json_string_value (json_object_get (dep, "detail"));
}

//  NOTIFY on every proc_state change, so mx_testpg_wait wakes (after the
//  daemon has migrated the schema).
static void
s_watch_rows (fixture_t *fx)
{
    mx_testpg_exec (fx->conn,
        "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN PERFORM pg_notify ('mx_test', ''); RETURN NULL; END $$;"
        "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON proc_state FOR EACH ROW"
        " EXECUTE FUNCTION mx_test_watch ();"
        "CREATE TRIGGER mx_test_watch_cursor AFTER INSERT OR UPDATE ON inbox_cursor FOR EACH ROW"
        " EXECUTE FUNCTION mx_test_watch ();"
        "LISTEN mx_test;");
}

static int64_t
s_now_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

//  Mailbox rows from..to (LDM updates, ignored: they end SKIPPED), except hole.
static void
s_fill_mailbox (fixture_t *fx, int from, int to, int hole)
{
    char xml [512];
    for (int id = from; id <= to; id++) {
        if (id == hole)
            continue;
        snprintf (xml, sizeof xml, "<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260101080000</DTTM>"
                  "<TYPE>LDM</TYPE><STYP>UPD</STYP></META><LDM/></MSG>", id);
        assert_int_equal (mx_testmb_insert (fx->mb, id, xml, s_now_ms ()), id);
    }
}

//  ---------------------------------------------------------------------
//  /metrics and /health of an idle daemon against what the rows say
//
//  The daemon is held still by a hole in the mailbox IDs (released only
//  after an hour): ingress and pump have nothing to do, so the figures
//  stand still while the test compares them.

static void
test_scrape_matches_the_database (void **state)
{
    fixture_t *fx = *state;
    fx->mb = mx_testmb_new ();
    //  1..5 drain, 6 is a hole, 7..10 wait behind it.
    s_fill_mailbox (fx, 1, 10, 6);
    daemon_t *daemon = &fx->daemons [0];
    const char *extra [] = { "MSGX_PIPELINE_AUTOSTART=true", NULL };
    s_daemon_start (fx, daemon, "scrape", extra);
    assert_non_null (mx_testproc_expect_stderr (daemon->proc, "role active", WAIT_MS));
    s_watch_rows (fx);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 5 FROM proc_state"
                              " WHERE msg_id <= 5 AND state = 'SKIPPED' AND backfill_at IS NOT NULL");
    //  Two marks owed again, not due for a day: the sweep leaves them.
    mx_testpg_exec (fx->conn, "UPDATE proc_state SET backfill_at = NULL, backfill_next_at = now() + interval '1 day'"
                              " WHERE msg_id IN (1, 2)");

    char *unfinished = mx_testpg_value (fx->conn,
        "SELECT count(*) FROM proc_state WHERE state IN ('PENDING', 'FAILED')");
    char *unmarked = mx_testpg_value (fx->conn,
        "SELECT count(*) FROM proc_state WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')"
        " AND backfill_next_at IS NOT NULL AND backfill_at IS NULL AND backfill_abandoned_at IS NULL");
    char *lag = mx_testpg_value (fx->conn, "SELECT 10 - committed_up_to FROM inbox_cursor");
    assert_string_equal (unmarked, "2");
    assert_string_equal (lag, "5");                 //  W = 5: the hole holds it

    reply_t reply;
    s_get (daemon->port, "/metrics", &reply);
    assert_int_equal (reply.status, 200);
    assert_non_null (strstr (reply.head, "Content-Type: text/plain; version=0.0.4"));
    s_expect_sample (reply.body, "msgx_pipeline_backlog_unfinished", unfinished);
    s_expect_sample (reply.body, "msgx_pipeline_backfill_unmarked_terminal", unmarked);
    s_expect_sample (reply.body, "msgx_pipeline_watermark_lag", lag);
    s_expect_sample (reply.body, "msgx_outbox_pending{target=\"KAFKA:msg\"}", "0");
    s_expect_sample (reply.body, "msgx_events_delivery_lag_seconds{target=\"KAFKA:msg\"}", "0");
    s_expect_sample (reply.body, "msgx_instance_active", "1");
    s_expect_sample (reply.body, "msgx_pipeline_paused", "0");
    s_reply_free (&reply);

    int status = 0;
    json_t *health = s_get_health (daemon->port, &status);
    assert_int_equal (status, 200);
    assert_string_equal (json_string_value (json_object_get (health, "status")), "ok");
    assert_string_equal (json_string_value (json_object_get (health, "role")), "active");
    assert_true (json_is_false (json_object_get (json_object_get (health, "pipeline"), "paused")));
    bool ok = false;
    s_dependency_detail (health, "mailbox", &ok);
    assert_true (ok);
    json_t *backlog = json_object_get (health, "backlog");
    assert_int_equal (json_integer_value (json_object_get (backlog, "unfinished")), atoi (unfinished));
    assert_int_equal (json_integer_value (json_object_get (backlog, "backfill_unmarked_terminal")), 2);
    assert_int_equal (json_integer_value (json_object_get (backlog, "watermark_lag")), 5);
    json_decref (health);

    //  Still what the rows say.
    char *again = mx_testpg_value (fx->conn, "SELECT count(*) FROM proc_state WHERE state IN ('PENDING', 'FAILED')");
    assert_string_equal (again, unfinished);
    free (again);
    free (unfinished);
    free (unmarked);
    free (lag);
    s_daemon_stop (daemon);
}

//  ---------------------------------------------------------------------
//  PostgreSQL stops accepting connections: NaN, never a made-up 0

static void
test_nan_when_postgresql_refuses_connections (void **state)
{
    fixture_t *fx = *state;
    daemon_t *daemon = &fx->daemons [0];
    const char *extra [] = { "MSGX_PIPELINE_AUTOSTART=true", NULL };
    s_daemon_start (fx, daemon, "nan", extra);
    assert_non_null (mx_testproc_expect_stderr (daemon->proc, "role active", WAIT_MS));
    reply_t reply;
    s_get (daemon->port, "/metrics", &reply);
    s_expect_sample (reply.body, "msgx_pipeline_backlog_unfinished", "0");
    s_reply_free (&reply);

    //  Existing sessions (the instance lock among them) stay; the metrics
    //  actor's is cut and no new one is let in.
    //  (From another database: PostgreSQL refuses it on the current one.)
    char *conninfo = zsys_sprintf ("%s dbname=postgres", mx_testpg_conninfo (fx->pg));
    PGconn *admin = PQconnectdb (conninfo);
    free (conninfo);
    assert_int_equal (PQstatus (admin), CONNECTION_OK);
    //  ALTER DATABASE takes no parameters: the name goes in escaped.
    char *name = PQescapeIdentifier (admin, mx_testpg_dbname (fx->pg), strlen (mx_testpg_dbname (fx->pg)));
    char *sql = zsys_sprintf ("ALTER DATABASE %s ALLOW_CONNECTIONS false", name);
    mx_testpg_exec (admin, sql);
    free (sql);
    mx_testpg_expect (fx->conn, "SELECT count(pg_terminate_backend (pid)) FROM pg_stat_activity"
                                " WHERE datname = current_database() AND application_name = 'msgxd-metrics'", "1");

    s_get (daemon->port, "/metrics", &reply);
    assert_int_equal (reply.status, 200);
    const char *gauges [] = {
        "msgx_pipeline_backlog_unfinished", "msgx_pipeline_backlog_oldest_unprocessed_seconds",
        "msgx_pipeline_backfill_unmarked_terminal", "msgx_pipeline_backfill_abandoned",
        "msgx_pipeline_watermark_lag", "msgx_outbox_pending{target=\"KAFKA:schd\"}",
        "msgx_events_delivery_lag_seconds{target=\"KAFKA:msg\"}",
    };
    for (size_t i = 0; i < sizeof gauges / sizeof gauges [0]; i++)
        s_expect_sample (reply.body, gauges [i], "NaN");
    s_reply_free (&reply);

    int status = 0;
    json_t *health = s_get_health (daemon->port, &status);
    assert_int_equal (status, 503);
    assert_string_equal (json_string_value (json_object_get (health, "status")), "degraded");
    bool ok = true;
    const char *detail = s_dependency_detail (health, "postgresql", &ok);
    assert_false (ok);
    assert_non_null (detail);
    assert_non_null (strstr (detail, "postgresql unreachable"));
    //  Named, never described by the driver (its text names the database).
    assert_string_equal (json_string_value (json_array_get (json_object_get (health, "down"), 0)), "postgresql");
    assert_null (strstr (detail, mx_testpg_dbname (fx->pg)));
    assert_true (json_is_null (json_object_get (json_object_get (health, "backlog"), "unfinished")));
    json_decref (health);

    //  Let it back in: the figures come back.
    sql = zsys_sprintf ("ALTER DATABASE %s ALLOW_CONNECTIONS true", name);
    mx_testpg_exec (admin, sql);
    free (sql);
    PQfreemem (name);
    PQfinish (admin);
    s_get (daemon->port, "/metrics", &reply);
    s_expect_sample (reply.body, "msgx_pipeline_backlog_unfinished", "0");
    s_reply_free (&reply);
    s_daemon_stop (daemon);
}

//  ---------------------------------------------------------------------
//  Two daemons on one database: the standby answers too, and tells

static void
test_standby_reports_standby (void **state)
{
    fixture_t *fx = *state;
    daemon_t *a = &fx->daemons [0], *b = &fx->daemons [1];
    const char *extra [] = { "MSGX_PIPELINE_AUTOSTART=true", NULL };
    s_daemon_start (fx, a, "a", extra);
    assert_non_null (mx_testproc_expect_stderr (a->proc, "role active", WAIT_MS));
    s_daemon_start (fx, b, "b", extra);
    assert_non_null (mx_testproc_expect_stderr (b->proc, "role standby", WAIT_MS));

    int status = 0;
    json_t *health = s_get_health (a->port, &status);
    assert_int_equal (status, 200);
    assert_string_equal (json_string_value (json_object_get (health, "role")), "active");
    json_decref (health);

    //  Paused by msgxctl: still 200 (an operator's choice, not a fault),
    //  and it says paused.
    char *out = NULL, *err = NULL;
    const char *pause [] = { "pause", NULL };
    assert_int_equal (s_ctl (fx, a, pause, &out, &err), 0);
    free (out);
    free (err);
    health = s_get_health (a->port, &status);
    assert_int_equal (status, 200);
    assert_true (json_is_true (json_object_get (json_object_get (health, "pipeline"), "paused")));
    json_decref (health);
    reply_t paused;
    s_get (a->port, "/metrics", &paused);
    s_expect_sample (paused.body, "msgx_pipeline_paused", "1");
    s_reply_free (&paused);
    const char *resume [] = { "resume", NULL };
    assert_int_equal (s_ctl (fx, a, resume, &out, &err), 0);
    free (out);
    free (err);
    health = s_get_health (a->port, &status);
    assert_true (json_is_false (json_object_get (json_object_get (health, "pipeline"), "paused")));
    json_decref (health);

    health = s_get_health (b->port, &status);
    assert_int_equal (status, 503);
    assert_string_equal (json_string_value (json_object_get (health, "status")), "standby");
    assert_string_equal (json_string_value (json_object_get (health, "role")), "standby");
    bool ok = false;
    s_dependency_detail (health, "postgresql", &ok);
    assert_true (ok);                               //  as it really is
    assert_true (json_is_false (json_object_get (json_object_get (health, "pipeline"), "paused")));
    json_decref (health);

    //  Live on both; ready only on the active.
    reply_t reply;
    const int ports [] = { a->port, b->port };
    for (int i = 0; i < 2; i++) {
        s_get (ports [i], "/health/live", &reply);
        assert_int_equal (reply.status, 200);
        s_reply_free (&reply);
        s_get (ports [i], "/health/ready", &reply);
        assert_int_equal (reply.status, i == 0 ? 200 : 503);
        s_reply_free (&reply);
    }
    s_get (b->port, "/metrics", &reply);
    assert_int_equal (reply.status, 200);
    s_expect_sample (reply.body, "msgx_instance_active", "0");
    s_expect_sample (reply.body, "msgx_pipeline_backlog_unfinished", "0");
    s_reply_free (&reply);

    //  The compat entry is the active instance's alone.
    s_http (b->compat_port, "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\n"
                    "Content-Length: 4\r\nConnection: close\r\n\r\n<x/>", &reply);
    assert_int_equal (reply.status, 503);
    assert_non_null (strstr (reply.body, "this instance is standby, not active"));
    s_reply_free (&reply);
    s_get (b->port, "/metrics", &reply);
    s_expect_sample (reply.body, "msgx_compat_requests_total{outcome=\"unavailable\"}", "1");
    s_expect_sample (reply.body, "msgx_compat_requests_total{outcome=\"unauthorized\"}", "0");
    s_reply_free (&reply);

    //  The active goes; the standby takes over and /health follows.
    s_daemon_stop (a);
    assert_non_null (mx_testproc_expect_stderr (b->proc, "role active", WAIT_MS));
    health = s_get_health (b->port, &status);
    assert_int_equal (status, 200);
    assert_string_equal (json_string_value (json_object_get (health, "role")), "active");
    json_decref (health);
    s_get (b->port, "/health/ready", &reply);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
    s_daemon_stop (b);
}

//  ---------------------------------------------------------------------
//  The default start (autostart false) with the mailbox enabled: every
//  pipeline actor, the requests actor included, takes PAUSE and RESUME.

static void
test_paused_start_with_the_mailbox (void **state)
{
    fixture_t *fx = *state;
    fx->mb = mx_testmb_new ();
    s_fill_mailbox (fx, 1, 3, 0);
    daemon_t *daemon = &fx->daemons [0];
    s_daemon_start (fx, daemon, "paused", NULL);
    assert_non_null (mx_testproc_expect_stderr (daemon->proc, "role active", WAIT_MS));
    int status = 0;
    json_t *health = s_get_health (daemon->port, &status);
    assert_int_equal (status, 200);
    assert_true (json_is_true (json_object_get (json_object_get (health, "pipeline"), "paused")));
    json_decref (health);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state", "0");

    char *out = NULL, *err = NULL;
    const char *resume [] = { "resume", NULL };
    assert_int_equal (s_ctl (fx, daemon, resume, &out, &err), 0);
    free (out);
    free (err);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 3 FROM proc_state WHERE state = 'SKIPPED'");
    const char *pause [] = { "pause", NULL };
    assert_int_equal (s_ctl (fx, daemon, pause, &out, &err), 0);
    free (out);
    free (err);
    health = s_get_health (daemon->port, &status);
    assert_int_equal (status, 200);
    assert_true (json_is_true (json_object_get (json_object_get (health, "pipeline"), "paused")));
    json_decref (health);
    s_daemon_stop (daemon);             //  exit 0: nobody died of the pause
}

//  ---------------------------------------------------------------------
//  msgxctl show

static char *
s_read_sample (const char *name)
{
    char path [1024];
    snprintf (path, sizeof path, "%s/test/data/sis/%s", getenv ("MX_SOURCE_DIR"), name);
    FILE *file = fopen (path, "rb");
    if (!file)
        fail_msg ("sample not found: %s", path);
    char *text = calloc (1, 1 << 20);
    assert_non_null (text);
    size_t size = fread (text, 1, (1 << 20) - 1, file);
    fclose (file);
    text [size] = '\0';
    return text;
}

static void
test_show (void **state)
{
    fixture_t *fx = *state;
    fx->mb = mx_testmb_new ();
    char *schedule = s_read_sample ("SCHD_DNLD_01.xml");
    assert_int_equal (mx_testmb_insert (fx->mb, 1, schedule, s_now_ms ()), 1);
    free (schedule);
    const char *broken = "<MSG><META><SNDR>AODB</SNDR><SEQN>7</SEQN></META><SCHD";
    assert_int_equal (mx_testmb_insert (fx->mb, 2, broken, s_now_ms ()), 2);
    daemon_t *daemon = &fx->daemons [0];
    const char *extra [] = { "MSGX_PIPELINE_AUTOSTART=true", NULL };
    s_daemon_start (fx, daemon, "show", extra);
    assert_non_null (mx_testproc_expect_stderr (daemon->proc, "role active", WAIT_MS));
    s_watch_rows (fx);
    mx_testpg_wait (fx->conn, "SELECT string_agg (msg_id || ':' || state, ' ' ORDER BY msg_id) = '1:SUCCEEDED 2:DEAD'"
                              " FROM proc_state");
    char *events = mx_testpg_value (fx->conn, "SELECT count(*) FROM msg_event WHERE msg_id = 1");
    assert_true (atoi (events) >= 2);

    char *out = NULL, *err = NULL;
    const char *show_ok [] = { "show", "1", NULL };
    assert_int_equal (s_ctl (fx, daemon, show_ok, &out, &err), 0);
    assert_non_null (strstr (out, "message     1 SUCCEEDED"));
    assert_non_null (strstr (out, "type/styp   SCHD/DNLD"));
    assert_non_null (strstr (out, "decoded     SCHD_DNLD SCHD/DNLD SNDR AODB SEQN 345935"));
    assert_non_null (strstr (out, "flights     15 16"));
    char *line = zsys_sprintf ("events      %s\n", events);
    assert_non_null (strstr (out, line));
    free (line);
    assert_non_null (strstr (out, "KAFKA:msg"));
    assert_non_null (strstr (out, "<FLID>15</FLID>"));
    free (out);
    free (err);

    const char *show_json [] = { "show", "1", "--json", NULL };
    assert_int_equal (s_ctl (fx, daemon, show_json, &out, &err), 0);
    json_t *reply = json_loads (out, 0, NULL);
    assert_non_null (reply);
    json_t *row = json_object_get (reply, "state");
    assert_string_equal (json_string_value (json_object_get (row, "state")), "SUCCEEDED");
    assert_true (json_is_integer (json_object_get (row, "attempts")));
    assert_true (json_is_string (json_object_get (row, "finished_at")));
    json_t *flights = json_object_get (json_object_get (reply, "decoded"), "flights");
    assert_int_equal (json_array_size (flights), 2);
    assert_int_equal (json_integer_value (json_array_get (flights, 0)), 15);
    assert_int_equal (json_array_size (json_object_get (reply, "events")), (size_t) atoi (events));
    json_t *event = json_array_get (json_object_get (reply, "events"), 0);
    assert_true (json_is_integer (json_object_get (event, "event_id")));
    assert_true (json_is_integer (json_object_get (event, "flid")));
    assert_true (json_is_string (json_object_get (event, "state")));
    assert_int_equal (json_integer_value (json_object_get (json_object_get (reply, "raw"), "bytes")),
                      (json_int_t) strlen (json_string_value (json_object_get (json_object_get (reply, "raw"), "xml"))));
    json_decref (reply);
    free (out);
    free (err);
    free (events);

    const char *show_dead [] = { "show", "2", NULL };
    assert_int_equal (s_ctl (fx, daemon, show_dead, &out, &err), 0);
    assert_non_null (strstr (out, "message     2 DEAD"));
    assert_non_null (strstr (out, "class       MALFORMED"));
    assert_non_null (strstr (out, "decoded     MALFORMED: "));
    assert_non_null (strstr (out, "events      0\n"));
    assert_non_null (strstr (out, broken));
    free (out);
    free (err);

    const char *show_unknown [] = { "show", "999", NULL };
    assert_int_equal (s_ctl (fx, daemon, show_unknown, &out, &err), 1);
    assert_non_null (strstr (err, "no message 999"));
    free (out);
    free (err);

    const char *show_bad [] = { "show", "x1", NULL };
    assert_int_equal (s_ctl (fx, daemon, show_bad, &out, &err), 2);
    free (out);
    free (err);
    s_daemon_stop (daemon);
}

//  ---------------------------------------------------------------------
//  msgxctl status --watch

static void
test_watch_without_a_tty_and_without_a_daemon (void **state)
{
    fixture_t *fx = *state;
    //  Nobody there at the start: exit 3 at once.
    char *endpoint = zsys_sprintf ("ipc://%s/nobody.sock", fx->dir);
    const char *none [] = { fx->msgxctl, "--endpoint", endpoint, "status", "--watch", NULL };
    char *out = NULL, *err = NULL;
    assert_int_equal (mx_testproc_run (none, NULL, WAIT_MS, &out, &err), 3);
    assert_non_null (strstr (err, "unreachable"));
    free (out);
    free (err);
    free (endpoint);

    const char *bad [] = { fx->msgxctl, "status", "--watch", "--interval", "soon", NULL };
    assert_int_equal (mx_testproc_run (bad, NULL, WAIT_MS, &out, &err), 2);
    free (out);
    free (err);

    //  On a pipe: plain lines, one per sample; SIGTERM ends it with 0.
    daemon_t *daemon = &fx->daemons [0];
    s_daemon_start (fx, daemon, "plain", NULL);
    assert_non_null (mx_testproc_expect_stderr (daemon->proc, "role active", WAIT_MS));
    const char *argv [] = { fx->msgxctl, "--endpoint", daemon->endpoint, "status", "--watch",
                            "--interval", "50ms", NULL };
    mx_testproc_t *watch = mx_testproc_new (argv, NULL);
    assert_non_null (watch);
    assert_non_null (mx_testproc_expect_stdout (watch, "role=active(paused) W=0", WAIT_MS));
    assert_non_null (mx_testproc_expect_stdout (watch, "backlog=0", WAIT_MS));
    assert_int_equal (mx_testproc_signal (watch, SIGTERM), 0);
    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (watch, WAIT_MS, &wstatus), 0);
    assert_true (WIFEXITED (wstatus));
    assert_int_equal (WEXITSTATUS (wstatus), 0);
    assert_null (strstr (mx_testproc_stdout (watch), "\033["));
    mx_testproc_destroy (&watch);

    //  The daemon goes away: the watch says so and keeps trying.
    watch = mx_testproc_new (argv, NULL);
    assert_non_null (watch);
    assert_non_null (mx_testproc_expect_stdout (watch, "role=active", WAIT_MS));
    s_daemon_stop (daemon);
    assert_non_null (mx_testproc_expect_stdout (watch, "daemon unreachable", WAIT_MS));
    assert_non_null (mx_testproc_expect_stdout (watch, "daemon unreachable", WAIT_MS));
    assert_int_equal (mx_testproc_signal (watch, SIGINT), 0);
    assert_int_equal (mx_testproc_wait (watch, WAIT_MS, &wstatus), 0);
    assert_int_equal (WEXITSTATUS (wstatus), 0);
    mx_testproc_destroy (&watch);
}

//  tmux on a server of its own (-L socket).
typedef struct {
    char socket [64];
    char *fifo;
    int fifo_read;
    int fifo_write;             //  ours: the FIFO never reports hang-up
} tmux_t;

static int
s_tmux (tmux_t *self, const char *const *words, char **out)
{
    const char *argv [24] = { "tmux", "-L", self->socket };
    int count = 3;
    for (int i = 0; words [i]; i++)
        argv [count++] = words [i];
    argv [count] = NULL;
    const char *env [] = { "TERM=xterm", NULL };
    char *err = NULL;
    int code = mx_testproc_run (argv, env, WAIT_MS, out, &err);
    if (code != 0)
        fail_msg ("tmux %s failed (%d): %s", words [0], code, err ? err : "");
    free (err);
    return code;
}

static char *
s_pane (tmux_t *self)
{
    char *out = NULL;
    const char *capture [] = { "capture-pane", "-p", "-t", "watch", NULL };
    s_tmux (self, capture, &out);
    return out;
}

//  True if the text after `label` starts with a digit.
static bool
s_digit_after (const char *pane, const char *label)
{
    const char *at = strstr (pane, label);
    return at && at [strlen (label)] >= '0' && at [strlen (label)] <= '9';
}

typedef bool (s_pane_check_fn) (const char *pane);

//  Reads what the pane prints (through the FIFO) until check accepts the
//  captured screen; fails after WAIT_MS. Returns the accepted screen.
static char *
s_pane_wait (tmux_t *self, s_pane_check_fn *check, const char *what)
{
    int64_t deadline = zclock_mono () + WAIT_MS;
    while (true) {
        char *pane = s_pane (self);
        if (check (pane))
            return pane;
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            fail_msg ("the watch pane never showed %s; last screen:\n%s", what, pane);
        free (pane);
        struct pollfd item = { self->fifo_read, POLLIN, 0 };
        int rc = poll (&item, 1, (int) left);
        assert_true (rc >= 0 || errno == EINTR);
        char sink [4096];
        while (read (self->fifo_read, sink, sizeof sink) > 0)
            ;
    }
}

static bool
s_shows_held_at_hole (const char *pane)
{
    return strstr (pane, "W         20 ") && strstr (pane, "drained   20 since start")
        && s_digit_after (pane, "rate ") && s_digit_after (pane, "ETA ") && strstr (pane, "hole   at 21");
}

static bool
s_shows_done (const char *pane)
{
    return strstr (pane, "] 100%") && strstr (pane, "backlog   0 ") && strstr (pane, "ETA done");
}

static void
s_expect_80_columns (const char *pane)
{
    const char *line = pane;
    while (*line) {
        size_t length = strcspn (line, "\n");
        if (length > 80)
            fail_msg ("a line of %zu columns: %.*s", length, (int) length, line);
        line += length;
        if (*line)
            line++;
    }
}

static void
test_watch_in_tmux (void **state)
{
    fixture_t *fx = *state;
    fx->mb = mx_testmb_new ();
    daemon_t *daemon = &fx->daemons [0];
    const char *extra [] = { "MSGX_PIPELINE_AUTOSTART=true", NULL };
    s_daemon_start (fx, daemon, "watch", extra);
    assert_non_null (mx_testproc_expect_stderr (daemon->proc, "role active", WAIT_MS));

    tmux_t tmux = { .fifo_read = -1, .fifo_write = -1 };
    snprintf (tmux.socket, sizeof tmux.socket, "mx-ops-%d", (int) getpid ());
    snprintf (fx->tmux_socket, sizeof fx->tmux_socket, "%s", tmux.socket);
    tmux.fifo = zsys_sprintf ("%s/pane.fifo", fx->dir);
    assert_int_equal (mkfifo (tmux.fifo, 0600), 0);
    tmux.fifo_read = open (tmux.fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    assert_true (tmux.fifo_read >= 0);
    tmux.fifo_write = open (tmux.fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    assert_true (tmux.fifo_write >= 0);

    //  The pane is wider than 80 columns, so a long line would show.
    char *exit_file = zsys_sprintf ("%s/watch.exit", fx->dir);
    //  The shell traps INT so that Ctrl-C reaches msgxctl alone and the
    //  shell goes on to record its exit code.
    char *command = zsys_sprintf ("trap true INT; %s --endpoint %s status --watch --interval 100ms; echo $? > %s;"
                                  " tmux -L %s wait-for -S watch-ended",
                                  fx->msgxctl, daemon->endpoint, exit_file, tmux.socket);
    const char *session [] = { "new-session", "-d", "-s", "watch", "-x", "120", "-y", "30", command, NULL };
    s_tmux (&tmux, session, NULL);
    //  The server outlives the shell: the wait for its last signal below
    //  must find the server even when the shell has ended first.
    const char *remain [] = { "set-option", "-w", "-t", "watch", "remain-on-exit", "on", NULL };
    s_tmux (&tmux, remain, NULL);
    char *pipe_command = zsys_sprintf ("cat >> %s", tmux.fifo);
    const char *pipe_pane [] = { "pipe-pane", "-o", "-t", "watch", pipe_command, NULL };
    s_tmux (&tmux, pipe_pane, NULL);

    char *pane = s_pane_wait (&tmux, s_shows_done, "the idle start");
    assert_non_null (strstr (pane, "role      active"));
    free (pane);

    //  A backlog arrives: 1..20 drain; 21 is a hole that holds 22..40
    //  until the test fills it.
    s_fill_mailbox (fx, 1, 40, 21);
    pane = s_pane_wait (&tmux, s_shows_held_at_hole, "20 drained, held at the hole, with a rate and an ETA");
    assert_non_null (strstr (pane, "[######"));
    s_expect_80_columns (pane);
    free (pane);

    //  The hole fills: the rest drains to the end.
    s_fill_mailbox (fx, 21, 21, 0);
    pane = s_pane_wait (&tmux, s_shows_done, "100% and backlog 0");
    s_expect_80_columns (pane);
    assert_non_null (strstr (pane, "[############################################################] 100%"));
    free (pane);

    //  Ctrl-C: exit 0.
    const char *keys [] = { "send-keys", "-t", "watch", "C-c", NULL };
    s_tmux (&tmux, keys, NULL);
    const char *wait_ended [] = { "wait-for", "watch-ended", NULL };
    s_tmux (&tmux, wait_ended, NULL);
    FILE *file = fopen (exit_file, "r");
    assert_non_null (file);
    int code = -1;
    assert_int_equal (fscanf (file, "%d", &code), 1);
    fclose (file);
    assert_int_equal (code, 0);

    //  The pane stays after its shell (remain-on-exit): end the server.
    const char *kill_server [] = { "tmux", "-L", tmux.socket, "kill-server", NULL };
    mx_testproc_run (kill_server, NULL, WAIT_MS, NULL, NULL);
    *fx->tmux_socket = '\0';
    close (tmux.fifo_read);
    close (tmux.fifo_write);
    free (tmux.fifo);
    free (pipe_command);
    free (command);
    free (exit_file);
    s_daemon_stop (daemon);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_scrape_matches_the_database, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_nan_when_postgresql_refuses_connections, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_standby_reports_standby, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_paused_start_with_the_mailbox, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_show, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_watch_without_a_tty_and_without_a_daemon, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_watch_in_tmux, s_setup, s_teardown),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
