/*  Integration tests: the real msgxd and msgxctl binaries against the test
    PostgreSQL. Waiting is always on a process's output or exit.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 20000

typedef struct {
    mx_testpg_t *pg;
    char *dir;
    char msgxd [1024];
    char msgxctl [1024];
} fixture_t;

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    snprintf (fx->msgxd, sizeof fx->msgxd, "%s/cmd/msgxd", build);
    snprintf (fx->msgxctl, sizeof fx->msgxctl, "%s/cmd/msgxctl", build);
    fx->pg = mx_testpg_new ();
    fx->dir = mx_testenv_tmpdir ();
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_testpg_destroy (&fx->pg);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

//  Environment for one daemon instance called `name`.
typedef struct {
    char *vars [10];
} env_t;

static void
s_env (fixture_t *fx, const char *name, env_t *env)
{
    memset (env, 0, sizeof *env);
    env->vars [0] = zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (fx->pg));
    env->vars [1] = zsys_sprintf ("MSGX_ADMIN_ENDPOINT=ipc://%s/%s.sock", fx->dir, name);
    env->vars [2] = strdup ("MSGX_PIPELINE_AUTOSTART=true");
    env->vars [3] = strdup ("MSGX_PROFILE=dev");
    env->vars [4] = zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", mx_testenv_free_port ());
}

static void
s_env_free (env_t *env)
{
    for (int i = 0; env->vars [i]; i++)
        free (env->vars [i]);
}

static mx_testproc_t *
s_start (fixture_t *fx, env_t *env)
{
    const char *argv [] = { fx->msgxd, NULL };
    mx_testproc_t *proc = mx_testproc_new (argv, (const char *const *) env->vars);
    assert_non_null (proc);
    return proc;
}

static int
s_ctl (fixture_t *fx, const char *name, const char *verb, const char *extra, char **out, char **err)
{
    char *endpoint = zsys_sprintf ("ipc://%s/%s.sock", fx->dir, name);
    const char *argv [] = { fx->msgxctl, "--endpoint", endpoint, verb, extra, NULL };
    int code = mx_testproc_run (argv, NULL, WAIT_MS, out, err);
    free (endpoint);
    return code;
}

static double
s_seconds (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

//  ---------------------------------------------------------------------

static void
test_bad_config_exits_78_naming_each_problem (void **state)
{
    fixture_t *fx = *state;
    const char *argv [] = { fx->msgxd, NULL };
    const char *env [] = { "MSGX_PIPELINE_CLAIM_BATCH=0", "MSGX_PROFILE=qa",
                           "MSGX_PIPELINE_POLL_INTERVAL=soon", NULL };
    char *out = NULL, *err = NULL;
    int code = mx_testproc_run (argv, env, WAIT_MS, &out, &err);
    assert_int_equal (code, 78);
    assert_non_null (strstr (err, "msgx.pipeline.claim-batch"));
    assert_non_null (strstr (err, "msgx.profile"));
    assert_non_null (strstr (err, "msgx.pipeline.poll-interval"));
    assert_non_null (strstr (err, "3 configuration problems"));
    free (out);
    free (err);

    //  A config file that does not exist is a config problem too.
    const char *argv2 [] = { fx->msgxd, "--config", "/nonexistent/msgxd.zpl", NULL };
    code = mx_testproc_run (argv2, NULL, WAIT_MS, &out, &err);
    assert_int_equal (code, 78);
    assert_non_null (strstr (err, "/nonexistent/msgxd.zpl"));
    free (out);
    free (err);

    const char *argv3 [] = { fx->msgxd, "--no-such-flag", NULL };
    code = mx_testproc_run (argv3, NULL, WAIT_MS, &out, &err);
    assert_int_equal (code, 2);
    free (out);
    free (err);
}

static void
test_prod_without_brokers_refuses_to_start (void **state)
{
    fixture_t *fx = *state;
    const char *argv [] = { fx->msgxd, "--check-config", NULL };
    const char *env [] = { "MSGX_PROFILE=prod", "MSGX_KAFKA_ACKS=1", NULL };
    char *out = NULL, *err = NULL;
    int code = mx_testproc_run (argv, env, WAIT_MS, &out, &err);
    assert_int_equal (code, 78);
    assert_non_null (strstr (err, "msgx.kafka.bootstrap-servers"));
    assert_non_null (strstr (err, "msgx.kafka.acks"));
    free (out);
    free (err);
}

//  A tcp:// admin endpoint off loopback has no authentication: refused
//  at start, exit 78, before anything is bound.
static void
test_admin_tcp_off_loopback_refused (void **state)
{
    fixture_t *fx = *state;
    const char *argv [] = { fx->msgxd, NULL };
    const char *endpoints [] = { "MSGX_ADMIN_ENDPOINT=tcp://0.0.0.0:5555", "MSGX_ADMIN_ENDPOINT=tcp://*:5555",
                                 "MSGX_ADMIN_ENDPOINT=tcp://10.1.2.3:5555" };
    for (size_t i = 0; i < sizeof endpoints / sizeof endpoints [0]; i++) {
        const char *env [] = { endpoints [i], NULL };
        char *out = NULL, *err = NULL;
        assert_int_equal (mx_testproc_run (argv, env, WAIT_MS, &out, &err), 78);
        assert_non_null (strstr (err, "must be on a loopback address"));
        free (out);
        free (err);
    }
}

//  msgxctl over tcp with the given CURVE certificates (NULL: none).
static int
s_ctl_curve (fixture_t *fx, const char *endpoint, const char *server, const char *cert, char **out, char **err)
{
    const char *argv [12] = { fx->msgxctl, "--endpoint", endpoint, "--timeout", "1000" };
    int argc = 5;
    if (server) {
        argv [argc++] = "--curve-server";
        argv [argc++] = server;
    }
    if (cert) {
        argv [argc++] = "--curve-cert";
        argv [argc++] = cert;
    }
    argv [argc++] = "status";
    argv [argc] = NULL;
    return mx_testproc_run (argv, NULL, WAIT_MS, out, err);
}

//  With CURVE the admin endpoint may listen off loopback: only a client
//  that knows the daemon's public key and whose own certificate is in the
//  clients folder gets any answer.
static void
test_admin_tcp_with_curve (void **state)
{
    fixture_t *fx = *state;
    char *clients = zsys_sprintf ("%s/clients", fx->dir);
    assert_int_equal (mkdir (clients, 0700), 0);
    char *server_path = zsys_sprintf ("%s/server.cert", fx->dir);
    char *allowed_path = zsys_sprintf ("%s/operator.cert", fx->dir);
    char *stranger_path = zsys_sprintf ("%s/stranger.cert", fx->dir);
    char *allowed_public = zsys_sprintf ("%s/operator.cert", clients);
    zcert_t *server = zcert_new ();
    zcert_t *allowed = zcert_new ();
    zcert_t *stranger = zcert_new ();
    assert_int_equal (zcert_save (server, server_path), 0);
    assert_int_equal (zcert_save (allowed, allowed_path), 0);
    assert_int_equal (zcert_save (stranger, stranger_path), 0);
    assert_int_equal (zcert_save_public (allowed, allowed_public), 0);

    env_t env;
    s_env (fx, "curve", &env);
    int port = mx_testenv_free_port ();
    free (env.vars [1]);
    env.vars [1] = zsys_sprintf ("MSGX_ADMIN_ENDPOINT=tcp://0.0.0.0:%d", port);
    env.vars [5] = zsys_sprintf ("MSGX_ADMIN_CURVE_SERVER_CERT=%s", server_path);
    env.vars [6] = zsys_sprintf ("MSGX_ADMIN_CURVE_CLIENTS=%s", clients);
    mx_testproc_t *daemon = s_start (fx, &env);
    assert_non_null (mx_testproc_expect_stderr (daemon, "role active", WAIT_MS));
    char *endpoint = zsys_sprintf ("tcp://127.0.0.1:%d", port);

    char *out = NULL, *err = NULL;
    assert_int_equal (s_ctl_curve (fx, endpoint, server_path, allowed_path, &out, &err), 0);
    assert_non_null (strstr (out, "role        active"));
    free (out);
    free (err);
    //  The audit row of a replay names the CURVE client next to the claim.
    const char *replay [] = { fx->msgxctl, "--endpoint", endpoint, "--curve-server", server_path,
                              "--curve-cert", allowed_path, "replay", "--events", "--all", "--dry-run", NULL };
    int code = mx_testproc_run (replay, NULL, WAIT_MS, &out, &err);
    if (code != 0)
        fail_msg ("replay over CURVE: exit %d: %s%s", code, out, err);
    free (out);
    free (err);
    PGconn *conn = PQconnectdb (mx_testpg_conninfo (fx->pg));
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    PGresult *res = PQexec (conn, "SELECT os_user FROM audit_log WHERE action = 'replay-events'");
    assert_int_equal (PQntuples (res), 1);
    char *key = zsys_sprintf ("[curve key %s,", zcert_public_txt (allowed));
    bool named = strstr (PQgetvalue (res, 0, 0), key) != NULL;
    free (key);
    if (!named)
        fail_msg ("audit row without the CURVE peer: %s", PQgetvalue (res, 0, 0));
    PQclear (res);
    PQfinish (conn);
    //  No CURVE at all, a certificate not in the folder: no verb answered.
    assert_int_equal (s_ctl_curve (fx, endpoint, NULL, NULL, &out, &err), 3);
    free (out);
    free (err);
    assert_int_equal (s_ctl_curve (fx, endpoint, server_path, stranger_path, &out, &err), 3);
    free (out);
    free (err);
    //  The right client certificate but a wrong idea of the server's key.
    assert_int_equal (s_ctl_curve (fx, endpoint, stranger_path, allowed_path, &out, &err), 3);
    free (out);
    free (err);

    mx_testproc_signal (daemon, SIGTERM);
    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &wstatus), 0);
    assert_int_equal (WEXITSTATUS (wstatus), 0);
    mx_testproc_destroy (&daemon);
    zcert_destroy (&server);
    zcert_destroy (&allowed);
    zcert_destroy (&stranger);
    free (endpoint);
    free (allowed_public);
    free (stranger_path);
    free (allowed_path);
    free (server_path);
    free (clients);
    s_env_free (&env);
}

//  A running daemon given a recognisable password by every path (inline
//  in the conninfo, as a variable, from a file) whose mailbox and brokers
//  refuse it: the password is in no log line and no msgxctl output.
static void
test_secrets_never_logged (void **state)
{
    fixture_t *fx = *state;
    char *file = zsys_sprintf ("%s/sasl.password", fx->dir);
    FILE *out_file = fopen (file, "w");
    assert_non_null (out_file);
    fputs ("sasl-S3cret-2\n", out_file);
    fclose (out_file);
    env_t env;
    s_env (fx, "secret", &env);
    free (env.vars [0]);
    env.vars [0] = zsys_sprintf ("MSGX_PG_CONNINFO=%s password=pg-S3cret-1 sslpassword=key-S3cret-3",
                                 mx_testpg_conninfo (fx->pg));
    const char *more [] = {
        "MAILBOX_SHARED_MYSQL_ENABLED=true", "MAILBOX_SHARED_MYSQL_HOST=127.0.0.1",
        "MAILBOX_SHARED_MYSQL_PORT=1", "MAILBOX_SHARED_MYSQL_USER=msgx",
        "MAILBOX_SHARED_MYSQL_PASSWORD=mb-S3cret-4",
        "MSGX_KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:1", "MSGX_KAFKA_SECURITY_PROTOCOL=sasl_plaintext",
        "MSGX_KAFKA_SECURITY_SASL_MECHANISMS=PLAIN", "MSGX_KAFKA_SECURITY_SASL_USERNAME=msgx",
        NULL
    };
    const char *all [24] = { NULL };
    size_t count = 0;
    for (int i = 0; env.vars [i]; i++)
        all [count++] = env.vars [i];
    for (int i = 0; more [i]; i++)
        all [count++] = more [i];
    char *sasl = zsys_sprintf ("MSGX_KAFKA_SECURITY_SASL_PASSWORD_FILE=%s", file);
    all [count++] = sasl;
    all [count++] = "MSGX_LOG_LEVEL=debug";
    const char *argv [] = { fx->msgxd, NULL };
    mx_testproc_t *daemon = mx_testproc_new (argv, all);
    assert_non_null (daemon);
    assert_non_null (mx_testproc_expect_stderr (daemon, "cannot connect to the mailbox", WAIT_MS));
    char *out = NULL, *err = NULL;
    assert_int_equal (s_ctl (fx, "secret", "status", NULL, &out, &err), 0);
    if (strstr (out, "S3cret") || strstr (err, "S3cret"))
        fail_msg ("a secret in msgxctl status:\n%s%s", out, err);
    free (out);
    free (err);
    mx_testproc_signal (daemon, SIGTERM);
    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &wstatus), 0);
    const char *log = mx_testproc_stderr (daemon);
    if (strstr (log, "S3cret") || strstr (mx_testproc_stdout (daemon), "S3cret"))
        fail_msg ("a secret in the log:\n%s", log);
    mx_testproc_destroy (&daemon);
    free (sasl);
    free (file);
    s_env_free (&env);
}

static void
test_msgxctl_without_daemon_exits_3 (void **state)
{
    fixture_t *fx = *state;
    char *out = NULL, *err = NULL;
    assert_int_equal (s_ctl (fx, "nobody", "status", NULL, &out, &err), 3);
    assert_non_null (strstr (err, "unreachable"));
    free (out);
    free (err);
    //  A tcp endpoint with nothing behind it: no reply within the timeout.
    const char *argv [] = { fx->msgxctl, "--endpoint", "tcp://127.0.0.1:1", "--timeout", "300", "status", NULL };
    assert_int_equal (mx_testproc_run (argv, NULL, WAIT_MS, &out, &err), 3);
    assert_non_null (strstr (err, "no reply"));
    free (out);
    free (err);
}

static void
test_msgxctl_usage_errors_exit_2 (void **state)
{
    fixture_t *fx = *state;
    char *out = NULL, *err = NULL;
    const char *cases [][4] = {
        { fx->msgxctl, NULL },
        { fx->msgxctl, "frobnicate", NULL },
        { fx->msgxctl, "status", "--bogus", NULL },
        { fx->msgxctl, "--timeout", "-5", "status" },
        { fx->msgxctl, "dead", NULL },
        { fx->msgxctl, "backfill", "recover", NULL },
        { fx->msgxctl, "request", "schedule", "--from" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        const char *argv [6] = { 0 };
        for (int j = 0; j < 4 && cases [i][j]; j++)
            argv [j] = cases [i][j];
        assert_int_equal (mx_testproc_run (argv, NULL, WAIT_MS, &out, &err), 2);
        assert_true (strlen (err) > 0);
        free (out);
        free (err);
    }
}

static void
test_status_against_a_running_daemon (void **state)
{
    fixture_t *fx = *state;
    env_t env;
    s_env (fx, "a", &env);
    mx_testproc_t *daemon = s_start (fx, &env);
    assert_non_null (mx_testproc_expect_stderr (daemon, "role active", WAIT_MS));

    char *out = NULL, *err = NULL;
    assert_int_equal (s_ctl (fx, "a", "status", NULL, &out, &err), 0);
    assert_non_null (strstr (out, "role        active"));
    assert_non_null (strstr (out, "W=0"));
    assert_non_null (strstr (out, "head        none"));
    assert_non_null (strstr (out, "embedded mock cluster"));
    free (out);
    free (err);

    assert_int_equal (s_ctl (fx, "a", "status", "--json", &out, &err), 0);
    json_t *status = json_loads (out, 0, NULL);
    assert_non_null (status);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    assert_int_equal (json_integer_value (json_object_get (status, "pid")), mx_testproc_pid (daemon));
    assert_int_equal (json_integer_value (json_object_get (json_object_get (status, "counts"), "DEAD")), 0);
    json_decref (status);
    free (out);
    free (err);

    //  The admin socket is 0600.
    char *path = zsys_sprintf ("%s/a.sock", fx->dir);
    struct stat st;
    assert_int_equal (stat (path, &st), 0);
    assert_int_equal (st.st_mode & 0777, 0600);

    //  SIGTERM: ordered shutdown, exit 0, socket removed.
    double t0 = s_seconds ();
    assert_int_equal (mx_testproc_signal (daemon, SIGTERM), 0);
    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &wstatus), 0);
    printf ("# SIGTERM to exit: %.0f ms\n", (s_seconds () - t0) * 1000);
    assert_true (WIFEXITED (wstatus));
    assert_int_equal (WEXITSTATUS (wstatus), 0);
    assert_non_null (strstr (mx_testproc_stderr (daemon), "received Terminated"));
    assert_non_null (strstr (mx_testproc_stderr (daemon), "msgxd stopped (exit code 0)"));
    assert_int_not_equal (stat (path, &st), 0);
    free (path);
    mx_testproc_destroy (&daemon);

    //  Restart: migrations already applied, none applied again.
    daemon = s_start (fx, &env);
    assert_non_null (mx_testproc_expect_stderr (daemon, "(0 migrations applied now)", WAIT_MS));
    assert_non_null (mx_testproc_expect_stderr (daemon, "role active", WAIT_MS));
    mx_testproc_signal (daemon, SIGINT);
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &wstatus), 0);
    assert_int_equal (WEXITSTATUS (wstatus), 0);
    mx_testproc_destroy (&daemon);
    s_env_free (&env);
}

static void
test_standby_takes_over_after_sigkill (void **state)
{
    fixture_t *fx = *state;
    env_t env_a, env_b;
    s_env (fx, "a", &env_a);
    s_env (fx, "b", &env_b);
    mx_testproc_t *a = s_start (fx, &env_a);
    assert_non_null (mx_testproc_expect_stderr (a, "role active", WAIT_MS));
    mx_testproc_t *b = s_start (fx, &env_b);
    assert_non_null (mx_testproc_expect_stderr (b, "role standby", WAIT_MS));

    char *out = NULL, *err = NULL;
    assert_int_equal (s_ctl (fx, "b", "status", NULL, &out, &err), 0);
    assert_non_null (strstr (out, "role        standby"));
    free (out);
    free (err);
    assert_int_equal (s_ctl (fx, "b", "pause", NULL, &out, &err), 1);
    assert_non_null (strstr (err, "standby"));
    free (out);
    free (err);

    double t0 = s_seconds ();
    assert_int_equal (mx_testproc_signal (a, SIGKILL), 0);
    assert_non_null (mx_testproc_expect_stderr (b, "role active", WAIT_MS));
    printf ("# standby takeover after SIGKILL of the active: %.0f ms\n", (s_seconds () - t0) * 1000);
    assert_int_equal (s_ctl (fx, "b", "status", "--json", &out, &err), 0);
    json_t *status = json_loads (out, 0, NULL);
    assert_non_null (status);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    assert_int_equal (json_integer_value (json_object_get (status, "pid")), mx_testproc_pid (b));
    json_decref (status);
    free (out);
    free (err);
    mx_testproc_destroy (&a);
    mx_testproc_signal (b, SIGTERM);
    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (b, WAIT_MS, &wstatus), 0);
    assert_int_equal (WEXITSTATUS (wstatus), 0);
    mx_testproc_destroy (&b);
    s_env_free (&env_a);
    s_env_free (&env_b);
}

static void
test_losing_the_lock_connection_fences_and_exits (void **state)
{
    fixture_t *fx = *state;
    env_t env;
    s_env (fx, "f", &env);
    mx_testproc_t *daemon = s_start (fx, &env);
    assert_non_null (mx_testproc_expect_stderr (daemon, "role active", WAIT_MS));

    PGconn *conn = PQconnectdb (mx_testpg_conninfo (fx->pg));
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    PGresult *res = PQexec (conn, "SELECT count(pg_terminate_backend (pid)) FROM pg_stat_activity"
                                  " WHERE application_name = 'msgxd-lock' AND datname = current_database()");
    assert_int_equal (PQresultStatus (res), PGRES_TUPLES_OK);
    assert_string_equal (PQgetvalue (res, 0, 0), "1");
    PQclear (res);
    PQfinish (conn);

    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &wstatus), 0);
    assert_true (WIFEXITED (wstatus));
    assert_int_equal (WEXITSTATUS (wstatus), 75);
    assert_non_null (strstr (mx_testproc_stderr (daemon), "lost the PostgreSQL connection holding the instance lock"));
    mx_testproc_destroy (&daemon);
    s_env_free (&env);
}

//  The inbound pipeline through the real binaries: status explains W, the
//  hole and the head; cutover is refused on a used instance; replay works
//  from the command line.
static void
test_cli_against_a_draining_daemon (void **state)
{
    fixture_t *fx = *state;
    mx_testmb_t *mb = mx_testmb_new ();
    char xml [512];
    for (int id = 1; id <= 4; id++) {
        if (id == 3)
            continue;           //  a hole
        snprintf (xml, sizeof xml, "<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260101080000</DTTM>"
                  "<TYPE>LDM</TYPE><STYP>UPD</STYP></META><LDM/></MSG>", id);
        assert_int_equal (mx_testmb_insert (mb, id, xml, 1767225600000LL), id);
    }
    env_t env;
    s_env (fx, "p", &env);
    char *extra [] = {
        strdup ("MAILBOX_SHARED_MYSQL_ENABLED=true"),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_HOST=%s", mx_testmb_host (mb)),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_PORT=%d", mx_testmb_port (mb)),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_USER=%s", mx_testmb_user (mb)),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_PASSWORD=%s", mx_testmb_password (mb)),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_DATABASE=%s", mx_testmb_database (mb)),
        strdup ("MAILBOX_SHARED_MYSQL_TIME_ZONE=+00:00"),
        strdup ("MSGX_PIPELINE_MAX_ATTEMPTS=1"),
        NULL
    };
    const char *all [20];
    int count = 0;
    for (int i = 0; env.vars [i]; i++)
        all [count++] = env.vars [i];
    for (int i = 0; extra [i]; i++)
        all [count++] = extra [i];
    all [count] = NULL;
    const char *argv [] = { fx->msgxd, NULL };
    mx_testproc_t *daemon = mx_testproc_new (argv, all);
    assert_non_null (mx_testproc_expect_stderr (daemon, "role active", WAIT_MS));
    assert_non_null (mx_testproc_expect_stderr (daemon, "hole at 3", WAIT_MS));

    //  The unsupported message fills the hole: W moves, it runs and dies.
    const char *schs = "<MSG><META><SNDR>AODB</SNDR><SEQN>77</SEQN><DTTM>20260101080000</DTTM>"
                       "<TYPE>SCHS</TYPE><STYP>DNLD</STYP></META><SCHS/></MSG>";
    assert_int_equal (mx_testmb_insert (mb, 3, schs, 1767225600000LL), 3);
    assert_non_null (mx_testproc_expect_stderr (daemon, "3 DEAD (attempts exhausted)", WAIT_MS));

    char *out = NULL, *err = NULL;
    //  The row for 4 follows 3 in FIFO order.
    PGconn *conn = PQconnectdb (mx_testpg_conninfo (fx->pg));
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    assert_int_equal (s_ctl (fx, "p", "status", NULL, &out, &err), 0);
    assert_non_null (strstr (out, "W=4"));
    assert_non_null (strstr (out, "no hole"));
    assert_non_null (strstr (out, "enabled: ingress"));
    free (out);
    free (err);

    //  Cutover on a used instance: refused, exit 1, reason given; without
    //  --yes nothing is tried, and the dry run says it would be refused.
    char *endpoint = zsys_sprintf ("ipc://%s/p.sock", fx->dir);
    const char *cutover_noyes [] = { fx->msgxctl, "--endpoint", endpoint, "cutover", "max", NULL };
    assert_int_equal (mx_testproc_run (cutover_noyes, NULL, WAIT_MS, &out, &err), 1);
    assert_non_null (strstr (err, "add --yes to act, or --dry-run to look first"));
    free (out);
    free (err);
    const char *cutover_dry [] = { fx->msgxctl, "--endpoint", endpoint, "cutover", "max", "--dry-run", NULL };
    assert_int_equal (mx_testproc_run (cutover_dry, NULL, WAIT_MS, &out, &err), 1);
    assert_non_null (strstr (err, "not fresh"));
    free (out);
    free (err);
    const char *cutover [] = { fx->msgxctl, "--endpoint", endpoint, "cutover", "max", "--yes", NULL };
    assert_int_equal (mx_testproc_run (cutover, NULL, WAIT_MS, &out, &err), 1);
    assert_non_null (strstr (err, "not fresh"));
    free (out);
    free (err);

    //  The dead letters, as the operator sees them.
    const char *dead [] = { fx->msgxctl, "--endpoint", endpoint, "dead", "list", NULL };
    assert_int_equal (mx_testproc_run (dead, NULL, WAIT_MS, &out, &err), 0);
    assert_non_null (strstr (out, "SCHS/DNLD"));
    assert_non_null (strstr (out, "1 dead message(s)"));
    free (out);
    free (err);
    const char *dead_events [] = { fx->msgxctl, "--endpoint", endpoint, "dead", "list", "--events", "--json", NULL };
    assert_int_equal (mx_testproc_run (dead_events, NULL, WAIT_MS, &out, &err), 0);
    assert_non_null (strstr (out, "\"rows\": []"));
    free (out);
    free (err);

    //  Abandoned marks: the preview, then re-armed (none here); a request
    //  upstream: the preview sends nothing, --yes sends it.
    const char *recover_dry [] = { fx->msgxctl, "--endpoint", endpoint, "backfill", "recover", "--all", "--dry-run", NULL };
    assert_int_equal (mx_testproc_run (recover_dry, NULL, WAIT_MS, &out, &err), 0);
    assert_non_null (strstr (out, "dry run: 0 abandoned mark(s) would be re-armed"));
    free (out);
    free (err);
    const char *recover [] = { fx->msgxctl, "--endpoint", endpoint, "backfill", "recover", "--all", "--yes", NULL };
    assert_int_equal (mx_testproc_run (recover, NULL, WAIT_MS, &out, &err), 0);
    assert_non_null (strstr (out, "0 abandoned mark(s) re-armed"));
    free (out);
    free (err);
    const char *request_dry [] = { fx->msgxctl, "--endpoint", endpoint, "request", "reference", "SLST", "--dry-run", NULL };
    assert_int_equal (mx_testproc_run (request_dry, NULL, WAIT_MS, &out, &err), 0);
    assert_non_null (strstr (out, "dry run: would send RQRD for the reference list SLST through COUTMSGS as MSGXRQRD"));
    assert_non_null (strstr (out, "nothing sent"));
    free (out);
    free (err);
    const char *request_noyes [] = { fx->msgxctl, "--endpoint", endpoint, "request", "reference", "SLST", NULL };
    assert_int_equal (mx_testproc_run (request_noyes, NULL, WAIT_MS, &out, &err), 1);
    assert_non_null (strstr (err, "add --yes"));
    free (out);
    free (err);
    const char *request [] = { fx->msgxctl, "--endpoint", endpoint, "--json", "request", "reference", "SLST", "--yes", NULL };
    assert_int_equal (mx_testproc_run (request, NULL, WAIT_MS, &out, &err), 0);
    assert_non_null (strstr (out, "\"seqn\""));
    free (out);
    free (err);
    MYSQL *mysql = mx_testmb_connect (mb);
    assert_int_equal (mysql_query (mysql, "SELECT ROUTINGID FROM COUTMSGS"), 0);
    MYSQL_RES *rows = mysql_store_result (mysql);
    assert_int_equal (mysql_num_rows (rows), 1);
    assert_string_equal (mysql_fetch_row (rows) [0], "MSGXRQRD");
    mysql_free_result (rows);
    mysql_close (mysql);

    //  Replay from the command line: dry run, then act.
    const char *dry [] = { fx->msgxctl, "--endpoint", endpoint, "replay", "--class", "EXHAUSTED", "--dry-run", NULL };
    assert_int_equal (mx_testproc_run (dry, NULL, WAIT_MS, &out, &err), 0);
    assert_non_null (strstr (out, "SCHS/DNLD"));
    assert_non_null (strstr (out, "dry run: nothing moved"));
    free (out);
    free (err);
    const char *noyes [] = { fx->msgxctl, "--endpoint", endpoint, "replay", "--id", "3", NULL };
    assert_int_equal (mx_testproc_run (noyes, NULL, WAIT_MS, &out, &err), 1);
    assert_non_null (strstr (err, "--yes"));
    free (out);
    free (err);
    const char *yes [] = { fx->msgxctl, "--endpoint", endpoint, "replay", "--id", "3", "--yes", NULL };
    assert_int_equal (mx_testproc_run (yes, NULL, WAIT_MS, &out, &err), 0);
    assert_non_null (strstr (out, "1 message(s) back to PENDING"));
    free (out);
    free (err);
    const char *bad [] = { fx->msgxctl, "--endpoint", endpoint, "replay", "--id", "x3", NULL };
    assert_int_equal (mx_testproc_run (bad, NULL, WAIT_MS, &out, &err), 2);
    free (out);
    free (err);
    //  Replayed, it runs again and (still unsupported) dies again: the log
    //  line comes before the commit, so wait for the row itself.
    assert_non_null (mx_testproc_expect_stderr (daemon, "3 DEAD (attempts exhausted)", WAIT_MS));
    mx_testpg_exec (conn, "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
                          " BEGIN PERFORM pg_notify ('mx_test', ''); RETURN NEW; END $$;"
                          "CREATE TRIGGER mx_test_watch AFTER UPDATE ON proc_state FOR EACH ROW"
                          " EXECUTE FUNCTION mx_test_watch (); LISTEN mx_test;");
    mx_testpg_wait (conn, "SELECT state = 'DEAD' AND processing_started_at IS NOT NULL FROM proc_state WHERE msg_id = 3");
    PGresult *res = PQexec (conn, "SELECT string_agg (msg_id || ':' || state, ' ' ORDER BY msg_id) FROM proc_state");
    assert_string_equal (PQgetvalue (res, 0, 0), "1:SKIPPED 2:SKIPPED 3:DEAD 4:SKIPPED");
    PQclear (res);
    //  The audit row names the account msgxctl claims and the peer the
    //  kernel saw on the ipc socket: this test's own uid.
    res = PQexec (conn, "SELECT os_user FROM audit_log WHERE action = 'replay' AND result = 'ok'");
    assert_int_equal (PQntuples (res), 1);
    char *real = zsys_sprintf ("[uid %u (", (unsigned) getuid ());
    if (!strstr (PQgetvalue (res, 0, 0), real) || !strstr (PQgetvalue (res, 0, 0), " pid "))
        fail_msg ("audit row without the peer's uid and pid: %s", PQgetvalue (res, 0, 0));
    free (real);
    PQclear (res);

    //  A request over msgx.admin.max-request-bytes is dropped unread (no
    //  answer), and the daemon answers the next one.
    zsock_t *client = zsock_new (ZMQ_REQ);
    assert_non_null (client);
    zsock_set_rcvtimeo (client, 1000);
    //  No second connection: the count is of the one the request cost.
    zsock_set_reconnect_ivl (client, -1);
    assert_int_equal (zsock_connect (client, "%s", endpoint), 0);
    size_t size = 128 * 1024;
    char *huge = malloc (size + 1);
    memset (huge, 'x', size);
    huge [size] = '\0';
    zstr_sendx (client, "status", huge, NULL);
    assert_null (zstr_recv (client));
    free (huge);
    zsock_destroy (&client);
    const char *after [] = { fx->msgxctl, "--endpoint", endpoint, "status", NULL };
    assert_int_equal (mx_testproc_run (after, NULL, WAIT_MS, &out, &err), 0);
    free (out);
    free (err);
    //  ... and counted: the daemon says so in its log and in /metrics.
    assert_non_null (mx_testproc_expect_stderr (daemon, "closed before a whole request arrived", WAIT_MS));
    int http_port = atoi (strrchr (env.vars [4], ':') + 1);
    char *head = NULL, *body = NULL;
    assert_int_equal (mx_testhttp_get (http_port, "/metrics", 10, &head, &body), 200);
    char sample [32];
    assert_string_equal (mx_testhttp_sample (body, "msgx_admin_requests_dropped_total", sample, sizeof sample), "1");
    free (head);
    free (body);
    res = PQexec (conn, "SELECT string_agg (action || ':' || result, ',' ORDER BY id) FROM audit_log");
    assert_string_equal (PQgetvalue (res, 0, 0),
                         "cutover:dry-run,cutover:refused,backfill-recover:dry-run,backfill-recover:ok,"
                         "request:dry-run,request:ok,replay:dry-run,replay:ok");
    PQclear (res);
    PQfinish (conn);

    mx_testproc_signal (daemon, SIGTERM);
    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &wstatus), 0);
    assert_int_equal (WEXITSTATUS (wstatus), 0);
    mx_testproc_destroy (&daemon);
    free (endpoint);
    for (int i = 0; extra [i]; i++)
        free (extra [i]);
    s_env_free (&env);
    mx_testmb_destroy (&mb);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_bad_config_exits_78_naming_each_problem, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_prod_without_brokers_refuses_to_start, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_admin_tcp_off_loopback_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_admin_tcp_with_curve, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_secrets_never_logged, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_msgxctl_without_daemon_exits_3, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_msgxctl_usage_errors_exit_2, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_status_against_a_running_daemon, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_standby_takes_over_after_sigkill, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_losing_the_lock_connection_fences_and_exits, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_cli_against_a_draining_daemon, s_setup, s_teardown),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
