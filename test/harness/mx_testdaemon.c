/*  mx_testdaemon - see mx_testdaemon.h.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "mx_testdaemon.h"

static void
s_add (mx_testdaemon_env_t *env, char *var)
{
    if (!var)
        fail_msg ("mx_testdaemon: out of memory");
    if (env->count == MX_TESTDAEMON_VARS_MAX)
        fail_msg ("mx_testdaemon: more than %d environment variables", MX_TESTDAEMON_VARS_MAX);
    env->vars [env->count++] = var;
    env->vars [env->count] = NULL;
}

void
mx_testdaemon_env_init (mx_testdaemon_env_t *env, mx_testpg_t *pg, mx_testmb_t *mb, const char *dir,
                        const char *admin_file, int http_port)
{
    memset (env, 0, sizeof *env);
    env->http_port = http_port ? http_port : mx_testenv_free_port ();
    s_add (env, zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (pg)));
    s_add (env, zsys_sprintf ("MSGX_ADMIN_ENDPOINT=ipc://%s/%s", dir, admin_file));
    s_add (env, strdup ("MSGX_PIPELINE_AUTOSTART=true"));
    s_add (env, strdup ("MSGX_PIPELINE_POLL_INTERVAL=50ms"));
    s_add (env, zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", env->http_port));
    char *mailbox [7];
    size_t count = mx_testmb_environment (mb, "+00:00", mailbox);
    for (size_t i = 0; i < count; i++)
        s_add (env, mailbox [i]);
}

void
mx_testdaemon_env_add (mx_testdaemon_env_t *env, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    char *var = zsys_vprintf (format, args);
    va_end (args);
    s_add (env, var);
}

void
mx_testdaemon_env_free (mx_testdaemon_env_t *env)
{
    for (size_t i = 0; i < env->count; i++)
        free (env->vars [i]);
    env->count = 0;
    env->vars [0] = NULL;
}

mx_testproc_t *
mx_testdaemon_start (const char *program, const mx_testdaemon_env_t *env, const char *role)
{
    const char *build = getenv ("MX_BUILD_DIR");
    if (!build)
        fail_msg ("mx_testdaemon: MX_BUILD_DIR is not set (ctest sets it)");
    char *path = zsys_sprintf ("%s/%s", build, program);
    char *needle = zsys_sprintf ("role %s", role);
    const char *argv [] = { path, NULL };
    mx_testproc_t *daemon = mx_testproc_new (argv, (const char *const *) env->vars);
    if (!daemon)
        fail_msg ("cannot start %s (the reason is on stderr)", path);
    if (!mx_testproc_expect_stderr (daemon, needle, MX_TESTDAEMON_WAIT_MS))
        fail_msg ("%s did not become %s: %s", program, role, mx_testproc_stderr (daemon));
    free (needle);
    free (path);
    return daemon;
}

long long
mx_testdaemon_wait_processed (PGconn *conn, mx_testmb_t *mb, bool outbox)
{
    MYSQL *mysql = mx_testmb_connect (mb);
    if (mysql_query (mysql, "SELECT COUNT(*) FROM CMINMSGS"))
        fail_msg ("counting the mailbox's messages: %s", mysql_error (mysql));
    MYSQL_RES *res = mysql_store_result (mysql);
    MYSQL_ROW row = res ? mysql_fetch_row (res) : NULL;
    if (!row || !row [0])
        fail_msg ("counting the mailbox's messages: no answer");
    char total [32];
    snprintf (total, sizeof total, "%s", row [0]);
    mysql_free_result (res);
    mysql_close (mysql);
    const char *params [] = { total };
    if (outbox)
        mx_testpg_wait_params (conn,
            "SELECT count(*) FILTER (WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')) >= $1::bigint"
            "   AND count(*) FILTER (WHERE state IN ('PENDING', 'FAILED')) = 0"
            "   AND NOT EXISTS (SELECT 1 FROM msg_event WHERE state = 'PENDING') FROM proc_state", 1, params);
    else
        mx_testpg_wait_params (conn,
            "SELECT count(*) FILTER (WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')) >= $1::bigint"
            "   AND count(*) FILTER (WHERE state IN ('PENDING', 'FAILED')) = 0 FROM proc_state", 1, params);
    return strtoll (total, NULL, 10);
}

char *
mx_testdaemon_gen (const char *build, mx_testmb_t *mb, const char *const *args, int timeout_ms)
{
    char *gen = zsys_sprintf ("%s/tools/msgx-gen", build);
    char port [16];
    snprintf (port, sizeof port, "%d", mx_testmb_port (mb));
    const char *mailbox [] = {
        "--host", mx_testmb_host (mb), "--port", port, "--user", mx_testmb_user (mb),
        "--password", mx_testmb_password (mb), "--database", mx_testmb_database (mb)
    };
    size_t given = 0;
    while (args [given])
        given++;
    size_t count = 2 + given + sizeof mailbox / sizeof mailbox [0];
    const char **argv = (const char **) calloc (count + 1, sizeof *argv);
    if (!argv)
        fail_msg ("mx_testdaemon_gen: out of memory");
    size_t at = 0;
    argv [at++] = gen;
    argv [at++] = "--mysql";
    for (size_t i = 0; i < given; i++)
        argv [at++] = args [i];
    for (size_t i = 0; i < sizeof mailbox / sizeof mailbox [0]; i++)
        argv [at++] = mailbox [i];
    char *out = NULL, *err = NULL;
    if (mx_testproc_run (argv, NULL, timeout_ms, &out, &err) != 0)
        fail_msg ("msgx-gen: %s%s", out ? out : "", err ? err : "");
    free (err);
    free (argv);
    free (gen);
    return out;
}

void
mx_testdaemon_stop (mx_testproc_t **daemon_p)
{
    mx_testproc_signal (*daemon_p, SIGTERM);
    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (*daemon_p, MX_TESTDAEMON_WAIT_MS, &wstatus), 0);
    if (getenv ("MX_TEST_DUMP"))
        fprintf (stderr, "%s", mx_testproc_stderr (*daemon_p));
    assert_true (WIFEXITED (wstatus));
    assert_int_equal (WEXITSTATUS (wstatus), 0);
    mx_testproc_destroy (daemon_p);
}
