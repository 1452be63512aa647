/*  Integration tests of msgxd's log output: the text limit and UTF-8
    handling of every line, configuration problems as JSON lines, and the
    native journal route read back from a real systemd-journald.

    The journald is private: the test process takes a mount namespace of
    its own with fresh tmpfs over /run and /var/log, starts
    systemd-journald there (it binds /run/systemd/journal/...), waits for
    its READY=1 on a NOTIFY_SOCKET, connects msgxd's stderr to the journal
    as systemd does ($JOURNAL_STREAM naming the stream), then asks journald
    to sync and reads the entries with the journal API. It needs root, as
    the package test does.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

#include "mx_log.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 20000

static char s_msgxd [1024];

//  Everything written to a pipe sink by body (), as one string.
static char *
s_capture (void (*body) (void))
{
    int fds [2];
    assert_int_equal (pipe (fds), 0);
    assert_int_equal (mx_log_start (fds [1], 64), 0);
    body ();
    mx_log_stop ();
    close (fds [1]);
    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream (&text, &size);
    char buffer [4096];
    ssize_t got;
    while ((got = read (fds [0], buffer, sizeof buffer)) > 0)
        fwrite (buffer, 1, (size_t) got, stream);
    fclose (stream);
    close (fds [0]);
    return text;
}

//  The one JSON line of text; fails unless there is exactly one.
static json_t *
s_one_line (const char *text)
{
    const char *newline = strchr (text, '\n');
    assert_non_null (newline);
    assert_int_equal (newline [1], 0);
    json_error_t error;
    json_t *line = json_loadb (text, (size_t) (newline - text), 0, &error);
    if (!line)
        fail_msg ("not a JSON line (%s): %.200s", error.text, text);
    return line;
}

static void
s_emit_long (void)
{
    //  "a" then 'é' (2 bytes) 10000 times: byte MX_LOG_MESSAGE_MAX falls in
    //  the middle of a character.
    char *text = malloc (20002);
    text [0] = 'a';
    for (int i = 0; i < 10000; i++)
        memcpy (text + 1 + 2 * i, "\xc3\xa9", 2);
    text [20001] = 0;
    mx_error ("test", "%s", text);
    free (text);
}

static void
test_long_text_is_cut_on_a_character_boundary (void **state)
{
    (void) state;
    char *text = s_capture (s_emit_long);
    json_t *line = s_one_line (text);
    const char *msg = json_string_value (json_object_get (line, "msg"));
    assert_non_null (msg);
    const char *marker = strstr (msg, MX_LOG_CUT_MARKER);
    assert_non_null (marker);
    assert_string_equal (marker, MX_LOG_CUT_MARKER "20001 bytes in all]");
    size_t kept = (size_t) (marker - msg);
    assert_true (kept <= MX_LOG_MESSAGE_MAX);
    assert_true (kept >= MX_LOG_MESSAGE_MAX - 1);
    //  'a' and whole characters only: an odd byte count.
    assert_int_equal (kept % 2, 1);
    assert_int_equal (memcmp (msg + kept - 2, "\xc3\xa9", 2), 0);
    json_decref (line);
    free (text);
}

static void
s_emit_exact (void)
{
    char *text = malloc (MX_LOG_MESSAGE_MAX + 1);
    memset (text, 'x', MX_LOG_MESSAGE_MAX);
    text [MX_LOG_MESSAGE_MAX] = 0;
    mx_warn ("test", "%s", text);
    free (text);
}

static void
test_text_at_the_limit_is_kept_whole (void **state)
{
    (void) state;
    char *text = s_capture (s_emit_exact);
    json_t *line = s_one_line (text);
    const char *msg = json_string_value (json_object_get (line, "msg"));
    assert_int_equal (strlen (msg), MX_LOG_MESSAGE_MAX);
    assert_null (strstr (msg, MX_LOG_CUT_MARKER));
    json_decref (line);
    free (text);
}

static void
s_emit_invalid (void)
{
    //  A stray byte, an overlong '/', and a character cut at the end.
    mx_log_emit (MX_LOG_WARN, "ingress", json_pack ("{s:I}", "msg_id", (json_int_t) 9),
                 "bad \xff byte, overlong \xc0\xaf, fine \xc3\xa9, cut \xe2\x82");
}

static void
test_bytes_that_are_not_utf8_are_escaped_not_lost (void **state)
{
    (void) state;
    char *text = s_capture (s_emit_invalid);
    json_t *line = s_one_line (text);
    assert_string_equal (json_string_value (json_object_get (line, "msg")),
                         "bad \\xFF byte, overlong \\xC0\\xAF, fine \xc3\xa9, cut \\xE2\\x82");
    assert_int_equal (json_integer_value (json_object_get (line, "msg_id")), 9);
    json_decref (line);
    free (text);
}

//  Exit-78 lines are what an operator reads first: JSON like the others.
static void
test_configuration_problems_are_json_lines (void **state)
{
    (void) state;
    const char *argv [] = { s_msgxd, NULL };
    const char *env [] = { "MSGX_PIPELINE_CLAIM_BATCH=0", "MSGX_PROFILE=qa", NULL };
    char *out = NULL, *err = NULL;
    assert_int_equal (mx_testproc_run (argv, env, WAIT_MS, &out, &err), 78);
    int lines = 0;
    bool counted = false;
    for (char *at = err; *at; ) {
        char *end = strchr (at, '\n');
        assert_non_null (end);
        json_error_t error;
        json_t *line = json_loadb (at, (size_t) (end - at), 0, &error);
        if (!line)
            fail_msg ("stderr line %d is not JSON (%s): %.*s", lines + 1, error.text, (int) (end - at), at);
        assert_string_equal (json_string_value (json_object_get (line, "level")), "error");
        assert_string_equal (json_string_value (json_object_get (line, "actor")), "config");
        if (strstr (json_string_value (json_object_get (line, "msg")), "2 configuration problems"))
            counted = true;
        json_decref (line);
        lines++;
        at = end + 1;
    }
    assert_int_equal (lines, 3);
    assert_true (counted);
    free (out);
    free (err);
}

//  ---------------------------------------------------------------------
//  A private journald

typedef struct {
    mx_testproc_t *journald;
    char *dir;
} journal_t;

static void
s_mount_tmpfs (const char *where)
{
    if (mount ("tmpfs", where, "tmpfs", 0, "mode=0755") != 0)
        fail_msg ("mount tmpfs on %s: %s", where, strerror (errno));
}

//  Mount namespace of our own, journald in it, READY=1 received.
static void
s_journal_start (journal_t *self)
{
    if (geteuid () != 0)
        fail_msg ("the journal test starts a private systemd-journald and must run as root");
    if (unshare (CLONE_NEWNS) != 0)
        fail_msg ("unshare (CLONE_NEWNS): %s", strerror (errno));
    //  Nothing mounted here may reach the host.
    assert_int_equal (mount ("none", "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    //  The notify socket lives outside the folders hidden below.
    self->dir = mx_testenv_tmpdir ();
    s_mount_tmpfs ("/run");
    s_mount_tmpfs ("/var/log");

    int notify = socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true (notify >= 0);
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    snprintf (address.sun_path, sizeof address.sun_path, "%s/notify", self->dir);
    assert_int_equal (bind (notify, (struct sockaddr *) &address, sizeof address), 0);
    char *variable = NULL;
    assert_true (asprintf (&variable, "NOTIFY_SOCKET=%s", address.sun_path) > 0);
    const char *argv [] = { "/lib/systemd/systemd-journald", NULL };
    const char *env [] = { variable, NULL };
    self->journald = mx_testproc_new (argv, env);
    assert_non_null (self->journald);
    free (variable);

    bool ready = false;
    struct timespec start;
    clock_gettime (CLOCK_MONOTONIC, &start);
    while (!ready) {
        struct timespec now;
        clock_gettime (CLOCK_MONOTONIC, &now);
        int left = WAIT_MS - (int) ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000);
        struct pollfd item = { notify, POLLIN, 0 };
        if (left <= 0 || poll (&item, 1, left) != 1)
            fail_msg ("systemd-journald sent no READY=1: %s", mx_testproc_stderr (self->journald));
        char datagram [1024];
        ssize_t got = recv (notify, datagram, sizeof datagram - 1, 0);
        assert_true (got >= 0);
        datagram [got] = 0;
        ready = strstr (datagram, "READY=1") != NULL;
    }
    close (notify);
}

static void
s_journal_stop (journal_t *self)
{
    mx_testproc_signal (self->journald, SIGTERM);
    int status = 0;
    assert_int_equal (mx_testproc_wait (self->journald, WAIT_MS, &status), 0);
    mx_testproc_destroy (&self->journald);
    mx_testenv_rmtree (self->dir);
    free (self->dir);
}

//  journald has written everything it received.
static void
s_journal_sync (void)
{
    const char *argv [] = { "journalctl", "--sync", NULL };
    char *out = NULL, *err = NULL;
    int code = mx_testproc_run (argv, NULL, WAIT_MS, &out, &err);
    if (code != 0)
        fail_msg ("journalctl --sync exited %d: %s", code, err);
    free (out);
    free (err);
}

//  Value of field in the current entry, malloc'd; NULL when absent.
static char *
s_field (sd_journal *journal, const char *field)
{
    const void *data = NULL;
    size_t size = 0;
    if (sd_journal_get_data (journal, field, &data, &size) < 0)
        return NULL;
    size_t skip = strlen (field) + 1;           //  "FIELD="
    return strndup ((const char *) data + skip, size - skip);
}

//  The current entry's fields of those asked for, as a JSON object.
static json_t *
s_entry_fields (sd_journal *journal, const char *const *fields)
{
    json_t *entry = json_object ();
    for (int i = 0; fields [i]; i++) {
        char *value = s_field (journal, fields [i]);
        if (value)
            json_object_set_new (entry, fields [i], json_string (value));
        free (value);
    }
    return entry;
}

//  The entries of one SYSLOG_IDENTIFIER, oldest first, as a JSON array of
//  objects holding the fields asked for.
static json_t *
s_entries (const char *identifier, const char *const *fields)
{
    sd_journal *journal = NULL;
    assert_int_equal (sd_journal_open (&journal, SD_JOURNAL_LOCAL_ONLY), 0);
    char *match = NULL;
    assert_true (asprintf (&match, "SYSLOG_IDENTIFIER=%s", identifier) > 0);
    assert_int_equal (sd_journal_add_match (journal, match, 0), 0);
    free (match);
    json_t *entries = json_array ();
    SD_JOURNAL_FOREACH (journal)
        json_array_append_new (entries, s_entry_fields (journal, fields));
    sd_journal_close (journal);
    return entries;
}

static const char *
s_get (json_t *entry, const char *field)
{
    const char *value = json_string_value (json_object_get (entry, field));
    if (!value) {
        char *text = json_dumps (entry, JSON_COMPACT);
        fail_msg ("no %s in %s", field, text);
    }
    return value;
}

//  msgxd started the way systemd starts it: stderr on a journal stream,
//  $JOURNAL_STREAM naming it, and only the variables of env.
static pid_t
s_spawn_on_journal (char *const *env)
{
    int stream = sd_journal_stream_fd ("msgxd", LOG_INFO, 0);
    if (stream < 0)
        fail_msg ("no journal stream: %s", strerror (-stream));
    struct stat st;
    assert_int_equal (fstat (stream, &st), 0);
    char variable [64];
    snprintf (variable, sizeof variable, "JOURNAL_STREAM=%llu:%llu",
              (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
    char *all [16] = { variable };
    for (int i = 0; env [i]; i++) {
        assert_true (i + 2 < 16);
        all [i + 1] = env [i];
    }
    pid_t pid = fork ();
    assert_true (pid >= 0);
    if (pid == 0) {
        dup2 (stream, STDERR_FILENO);
        int null = open ("/dev/null", O_RDWR);
        dup2 (null, STDIN_FILENO);
        dup2 (null, STDOUT_FILENO);
        char *argv [] = { s_msgxd, NULL };
        execve (s_msgxd, argv, all);
        _exit (127);
    }
    close (stream);
    return pid;
}

static int
s_exit_code (pid_t pid)
{
    int status = 0;
    assert_int_equal (waitpid (pid, &status, 0), pid);
    assert_true (WIFEXITED (status));
    return WEXITSTATUS (status);
}

//  Waits until msgxd wrote an entry with field=value; returns the fields
//  asked for.
static json_t *
s_wait_entry (const char *match, const char *const *fields)
{
    sd_journal *journal = NULL;
    assert_int_equal (sd_journal_open (&journal, SD_JOURNAL_LOCAL_ONLY), 0);
    assert_int_equal (sd_journal_add_match (journal, "SYSLOG_IDENTIFIER=msgxd", 0), 0);
    assert_int_equal (sd_journal_add_match (journal, match, 0), 0);
    struct timespec start, now;
    clock_gettime (CLOCK_MONOTONIC, &start);
    json_t *entry = NULL;
    while (!entry) {
        if (sd_journal_next (journal) > 0) {
            entry = s_entry_fields (journal, fields);
            break;
        }
        clock_gettime (CLOCK_MONOTONIC, &now);
        int64_t left_us = (int64_t) WAIT_MS * 1000 - ((int64_t) (now.tv_sec - start.tv_sec) * 1000000
                                                      + (now.tv_nsec - start.tv_nsec) / 1000);
        if (left_us <= 0)
            fail_msg ("no journal entry with %s", match);
        //  Woken by journald writing (inotify), not by time.
        assert_true (sd_journal_wait (journal, (uint64_t) left_us) >= 0);
    }
    sd_journal_close (journal);
    return entry;
}

static void
test_error_lines_reach_the_journal_at_priority_3 (void **state)
{
    (void) state;
    journal_t journal = { 0 };
    s_journal_start (&journal);

    //  A bad configuration: its ERROR lines are native entries at
    //  priority 3, not text on the stream.
    char claim_batch [] = "MSGX_PIPELINE_CLAIM_BATCH=0", profile [] = "MSGX_PROFILE=qa";
    char *bad [] = { claim_batch, profile, NULL };
    assert_int_equal (s_exit_code (s_spawn_on_journal (bad)), 78);
    //  The structured fields, from this process through the same code.
    mx_log_set_journal (true);
    mx_log_emit (MX_LOG_ERROR, "processor",
                 json_pack ("{s:I,s:I,s:s,s:b}", "msg_id", (json_int_t) 42, "flid", (json_int_t) 7,
                            "error_class", "INFRA", "late", 1),
                 "message %d failed", 42);
    mx_log_emit (MX_LOG_WARN, "ingress", NULL, "a warning");
    mx_info ("pump", "some information");
    mx_debug ("pump", "below the level: not sent");
    mx_log_set_journal (false);
    s_journal_sync ();

    const char *fields [] = { "MESSAGE", "PRIORITY", "ACTOR", "MSG_ID", "FLID", "ERROR_CLASS", "LATE",
                              "_TRANSPORT", NULL };
    json_t *daemon = s_entries ("msgxd", fields);
    //  Two problems and the count, nothing else (no stream text).
    assert_int_equal (json_array_size (daemon), 3);
    size_t index;
    json_t *entry;
    json_array_foreach (daemon, index, entry) {
        assert_string_equal (s_get (entry, "PRIORITY"), "3");
        assert_string_equal (s_get (entry, "ACTOR"), "config");
        assert_string_equal (s_get (entry, "_TRANSPORT"), "journal");
    }
    bool named = false;
    json_array_foreach (daemon, index, entry)
        named |= strstr (s_get (entry, "MESSAGE"), "msgx.pipeline.claim-batch") != NULL;
    assert_true (named);
    assert_non_null (strstr (s_get (json_array_get (daemon, 2), "MESSAGE"), "2 configuration problems"));
    json_decref (daemon);

    json_t *own = s_entries (program_invocation_short_name, fields);
    assert_int_equal (json_array_size (own), 3);
    json_t *error = json_array_get (own, 0);
    assert_string_equal (s_get (error, "MESSAGE"), "message 42 failed");
    assert_string_equal (s_get (error, "PRIORITY"), "3");
    assert_string_equal (s_get (error, "ACTOR"), "processor");
    assert_string_equal (s_get (error, "MSG_ID"), "42");
    assert_string_equal (s_get (error, "FLID"), "7");
    assert_string_equal (s_get (error, "ERROR_CLASS"), "INFRA");
    assert_string_equal (s_get (error, "LATE"), "true");
    assert_string_equal (s_get (json_array_get (own, 1), "PRIORITY"), "4");
    assert_string_equal (s_get (json_array_get (own, 2), "PRIORITY"), "6");
    assert_string_equal (s_get (json_array_get (own, 2), "ACTOR"), "pump");
    json_decref (own);

    s_journal_stop (&journal);
}

//  A running daemon: its info lines at 6, and when it is fenced (the
//  connection holding the instance lock is killed) the error at 3.
static void
test_a_running_daemon_logs_to_the_journal (void **state)
{
    (void) state;
    mx_testpg_t *pg = mx_testpg_new ();
    journal_t journal = { 0 };
    s_journal_start (&journal);
    char *env [] = {
        zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (pg)),
        zsys_sprintf ("MSGX_ADMIN_ENDPOINT=ipc://%s/admin.sock", journal.dir),
        zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", mx_testenv_free_port ()),
        strdup ("MSGX_PROFILE=dev"),
        NULL
    };
    pid_t daemon = s_spawn_on_journal (env);
    const char *fields [] = { "MESSAGE", "PRIORITY", "ACTOR", "ROLE", "_TRANSPORT", NULL };
    json_t *active = s_wait_entry ("ROLE=active", fields);
    assert_string_equal (s_get (active, "PRIORITY"), "6");
    assert_string_equal (s_get (active, "ACTOR"), "control");
    assert_string_equal (s_get (active, "_TRANSPORT"), "journal");
    json_decref (active);

    PGconn *conn = PQconnectdb (mx_testpg_conninfo (pg));
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    PGresult *res = PQexec (conn, "SELECT count(pg_terminate_backend (pid)) FROM pg_stat_activity"
                                  " WHERE application_name = 'msgxd-lock' AND datname = current_database()");
    assert_string_equal (PQgetvalue (res, 0, 0), "1");
    PQclear (res);
    PQfinish (conn);
    assert_int_equal (s_exit_code (daemon), 75);
    json_t *fenced = s_wait_entry ("ROLE=fenced", fields);
    assert_string_equal (s_get (fenced, "PRIORITY"), "3");
    assert_string_equal (s_get (fenced, "_TRANSPORT"), "journal");
    json_decref (fenced);

    for (int i = 0; env [i]; i++)
        free (env [i]);
    s_journal_stop (&journal);
    mx_testpg_destroy (&pg);
}

int
main (void)
{
    const char *build = getenv ("MX_BUILD_DIR");
    if (!build) {
        fprintf (stderr, "MX_BUILD_DIR is not set: run this test through ctest\n");
        return 1;
    }
    snprintf (s_msgxd, sizeof s_msgxd, "%s/cmd/msgxd", build);
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_long_text_is_cut_on_a_character_boundary),
        cmocka_unit_test (test_text_at_the_limit_is_kept_whole),
        cmocka_unit_test (test_bytes_that_are_not_utf8_are_escaped_not_lost),
        cmocka_unit_test (test_configuration_problems_are_json_lines),
        //  Last: these leave this process in a mount namespace of its own.
        cmocka_unit_test (test_error_lines_reach_the_journal_at_priority_3),
        cmocka_unit_test (test_a_running_daemon_logs_to_the_journal),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
