/*  The log level of a running msgxd changes without a restart: msgxctl
    log-level for every actor or for one, and SIGHUP re-reading the
    configuration file. The instance stays active throughout (same process,
    role active); a configuration that does not load on SIGHUP is refused
    with a clear line and the running level is kept. msgxd's own command
    line errors are JSON lines like every other line.

    Control logs every admin request at debug ("admin request status"), so
    a status call shows whether control writes debug lines; each change of
    level is logged whatever the level, which fences the log: every line
    control wrote before it precedes it.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>

#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 20000
#define DEBUG_LINE "admin request status"

typedef struct {
    char *dir;
    char msgxd [1024];
    char msgxctl [1024];
    char *config;               //  the ZPL file msgxd reads
    char *endpoint;
    mx_testpg_t *pg;
    mx_testproc_t *daemon;
    size_t fence;               //  stderr before this offset is checked
} fixture_t;

static void
s_write_config (fixture_t *fx, const char *text)
{
    FILE *file = fopen (fx->config, "w");
    assert_non_null (file);
    assert_true (fputs (text, file) >= 0);
    assert_int_equal (fclose (file), 0);
}

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    snprintf (fx->msgxd, sizeof fx->msgxd, "%s/cmd/msgxd", build);
    snprintf (fx->msgxctl, sizeof fx->msgxctl, "%s/cmd/msgxctl", build);
    fx->dir = mx_testenv_tmpdir ();
    fx->config = zsys_sprintf ("%s/msgxd.zpl", fx->dir);
    fx->endpoint = zsys_sprintf ("ipc://%s/admin.sock", fx->dir);
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_testproc_destroy (&fx->daemon);
    mx_testpg_destroy (&fx->pg);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx->config);
    free (fx->endpoint);
    free (fx);
    return 0;
}

//  msgxctl --endpoint E words...; returns the exit code, *out its stdout.
static int
s_ctl (fixture_t *fx, const char *const *words, char **out)
{
    const char *argv [16] = { fx->msgxctl, "--endpoint", fx->endpoint };
    int n = 3;
    for (int i = 0; words [i]; i++)
        argv [n++] = words [i];
    argv [n] = NULL;
    char *err = NULL;
    int code = mx_testproc_run (argv, NULL, WAIT_MS, out, &err);
    if (code != 0 && code != 1)
        fail_msg ("msgxctl %s: exit %d: %s", words [0], code, err);
    free (err);
    return code;
}

//  Waits for a line with needle; fails with the log when none comes.
static const char *
s_expect (fixture_t *fx, const char *needle)
{
    const char *line = mx_testproc_expect_stderr (fx->daemon, needle, WAIT_MS);
    if (!line)
        fail_msg ("no log line with '%s':\n%s", needle, mx_testproc_stderr (fx->daemon));
    return line;
}

//  Whether control wrote its debug line for a status call: the call, then
//  a level change of an actor that never logs (main's level is not
//  control's), whose line is written after everything control wrote
//  before it.
static bool
s_status_logged_debug (fixture_t *fx)
{
    char *out = NULL;
    const char *status [] = { "status", "--json", NULL };
    assert_int_equal (s_ctl (fx, status, &out), 0);
    json_t *reply = json_loads (out, 0, NULL);
    assert_non_null (reply);
    //  The instance never stops being the active one.
    assert_string_equal (json_string_value (json_object_get (reply, "role")), "active");
    json_decref (reply);
    free (out);
    const char *fence [] = { "log-level", "error", "config", NULL };
    assert_int_equal (s_ctl (fx, fence, &out), 0);
    free (out);
    s_expect (fx, "log level error for actor config");
    const char *all = mx_testproc_stderr (fx->daemon);
    const char *end = strstr (all + fx->fence, "log level error for actor config");
    assert_non_null (end);
    char *window = strndup (all + fx->fence, (size_t) (end - all - fx->fence));
    bool logged = strstr (window, DEBUG_LINE) != NULL;
    free (window);
    fx->fence = (size_t) (end - all) + 1;
    return logged;
}

static void
test_log_level_changes_at_runtime_and_on_sighup (void **state)
{
    fixture_t *fx = *state;
    fx->pg = mx_testpg_new ();
    s_write_config (fx, "msgx.log.level = info\n");
    char *vars [] = {
        zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (fx->pg)),
        zsys_sprintf ("MSGX_ADMIN_ENDPOINT=%s", fx->endpoint),
        strdup ("MSGX_PIPELINE_AUTOSTART=true"),
        strdup ("MSGX_PROFILE=dev"),
        zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", mx_testenv_free_port ()),
        NULL
    };
    const char *argv [] = { fx->msgxd, "--config", fx->config, NULL };
    fx->daemon = mx_testproc_new (argv, (const char *const *) vars);
    assert_non_null (fx->daemon);
    s_expect (fx, "role active");
    pid_t pid = mx_testproc_pid (fx->daemon);

    //  info: no debug lines.
    assert_false (s_status_logged_debug (fx));

    //  debug for control alone: its debug lines appear at once.
    char *out = NULL;
    const char *control_debug [] = { "log-level", "debug", "control", NULL };
    assert_int_equal (s_ctl (fx, control_debug, &out), 0);
    assert_non_null (strstr (out, "log level info; "));
    assert_non_null (strstr (out, "control debug"));
    free (out);
    const char *line = s_expect (fx, "log level debug for actor control, set by msgxctl");
    json_t *entry = json_loads (line, 0, NULL);
    assert_non_null (entry);
    assert_string_equal (json_string_value (json_object_get (entry, "target_actor")), "control");
    assert_non_null (json_object_get (entry, "os_user"));
    json_decref (entry);
    assert_true (s_status_logged_debug (fx));

    //  A level for every actor drops the single ones: gone again.
    const char *every_info [] = { "log-level", "info", "--json", NULL };
    assert_int_equal (s_ctl (fx, every_info, &out), 0);
    json_t *reply = json_loads (out, 0, NULL);
    assert_non_null (reply);
    assert_string_equal (json_string_value (json_object_get (reply, "level")), "info");
    assert_int_equal (json_object_size (json_object_get (reply, "actors")), 0);
    json_decref (reply);
    free (out);
    assert_false (s_status_logged_debug (fx));

    //  Refused: an actor that does not exist, a level that does not.
    const char *nobody [] = { "log-level", "debug", "nobody", NULL };
    assert_int_equal (s_ctl (fx, nobody, &out), 1);
    free (out);

    //  SIGHUP applies the file's level to every actor, and names a
    //  changed key that waits for a restart.
    s_write_config (fx, "msgx.log.level = debug\nmsgx.pipeline.claim-batch = 77\n");
    assert_int_equal (mx_testproc_signal (fx->daemon, SIGHUP), 0);
    s_expect (fx, "configuration reloaded (SIGHUP): msgx.log.level debug for every actor (was info)");
    s_expect (fx, "applied only at the next restart: msgx.pipeline.claim-batch");
    assert_true (s_status_logged_debug (fx));

    //  A configuration that does not load is refused; debug stays.
    s_write_config (fx, "msgx.log.level = loud\n");
    assert_int_equal (mx_testproc_signal (fx->daemon, SIGHUP), 0);
    line = s_expect (fx, "msgx.log.level");
    assert_non_null (strstr (line, "\"level\":\"error\""));
    line = s_expect (fx, "reload refused: 1 configuration problem; the running settings stay");
    entry = json_loads (line, 0, NULL);
    assert_non_null (entry);
    assert_string_equal (json_string_value (json_object_get (entry, "level")), "error");
    json_decref (entry);
    //  The fence above set config to error, so the file's debug for every
    //  other actor is what shows here.
    assert_true (s_status_logged_debug (fx));

    //  The same process all along, never standby, and it stops cleanly.
    assert_int_equal (mx_testproc_pid (fx->daemon), pid);
    assert_null (strstr (mx_testproc_stderr (fx->daemon), "role standby"));
    assert_int_equal (mx_testproc_signal (fx->daemon, SIGTERM), 0);
    int status = 0;
    assert_int_equal (mx_testproc_wait (fx->daemon, WAIT_MS, &status), 0);
    assert_true (WIFEXITED (status));
    assert_int_equal (WEXITSTATUS (status), 0);
    for (size_t i = 0; vars [i]; i++)
        free (vars [i]);
}

//  A bad command line: exit 2 and one JSON line naming what is wrong.
static void
test_command_line_errors_are_json_lines (void **state)
{
    fixture_t *fx = *state;
    const char *cases [][3] = {
        { "--bogus", NULL, "unknown option '--bogus'" },
        { "extra", NULL, "unexpected argument 'extra'" },
        { "--config-sample", "big", "--config-sample takes dev or prod, not 'big'" },
        { "--config", NULL, "--config needs a value" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        const char *argv [] = { fx->msgxd, cases [i][0], cases [i][1], NULL };
        char *out = NULL, *err = NULL;
        int code = mx_testproc_run (argv, NULL, WAIT_MS, &out, &err);
        json_error_t error;
        json_t *entry = json_loads (err, 0, &error);
        if (code != 2 || !entry)
            fail_msg ("msgxd %s: exit %d, stderr not one JSON line (%s):\n%s", cases [i][0], code, error.text, err);
        assert_string_equal (json_string_value (json_object_get (entry, "level")), "error");
        const char *msg = json_string_value (json_object_get (entry, "msg"));
        if (!msg || !strstr (msg, cases [i][2]))
            fail_msg ("msgxd %s: expected '%s':\n%s", cases [i][0], cases [i][2], err);
        assert_non_null (json_object_get (entry, "hint"));
        json_decref (entry);
        free (out);
        free (err);
    }
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_log_level_changes_at_runtime_and_on_sighup, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_command_line_errors_are_json_lines, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
