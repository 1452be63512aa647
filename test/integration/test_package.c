/*  The Debian package, on this machine: built with cpack, checked by
    lintian, installed with dpkg -i, its unit verified by systemd-analyze,
    the installed msgxd run as user msgx on the packaged configuration,
    msgxctl used by a member of msgx-admin, then purged.

    The packaged /etc/msgxd/msgxd.zpl is used as installed: the throwaway
    servers come in through environment overrides, which win over the file
    (the same way /etc/msgxd/msgxd.env works under systemd). The admin
    socket and its group come from the file.

    Needs root (dpkg). systemd is not PID 1 in every test environment, so
    msgxd is started by setpriv as msgx with msgx's groups, as the unit
    would (User=msgx, SupplementaryGroups=msgx-admin).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <czmq.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "mx_testenv.h"
#include "mx_testproc.h"
#include "mx_version.h"

#define WAIT_MS 20000
#define BUILD_MS 600000
#define SOCKET "/run/msgxd/admin.sock"

typedef struct {
    char *deb;                  //  the package file cpack writes
    char *listing;              //  dpkg -c of it
} fixture_t;

static fixture_t s_fx;

//  Runs argv; fails the test with its output when the exit code is not want.
static char *
s_run (const char *const *argv, const char *const *env, int want, int timeout_ms)
{
    char *out = NULL, *err = NULL;
    int code = mx_testproc_run (argv, env, timeout_ms, &out, &err);
    if (code != want)
        fail_msg ("%s exited %d, expected %d\nstdout:\n%s\nstderr:\n%s", argv [0], code, want,
                  out ? out : "", err ? err : "");
    free (err);
    return out;
}

static void
s_purge (void)
{
    const char *argv [] = { "dpkg", "--purge", "msgxd", NULL };
    free (s_run (argv, NULL, 0, WAIT_MS));
}

static bool
s_exists (const char *path)
{
    struct stat st;
    return lstat (path, &st) == 0;
}

static int
s_setup (void **state)
{
    if (geteuid () != 0)
        fail_msg ("the package test installs with dpkg and must run as root");
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    const char *arch_argv [] = { "dpkg", "--print-architecture", NULL };
    char *arch = s_run (arch_argv, NULL, 0, WAIT_MS);
    arch [strcspn (arch, "\n")] = '\0';
    s_fx.deb = zsys_sprintf ("%s/package/msgxd_%s_%s.deb", build, MX_VERSION, arch);
    free (arch);
    //  The daemon takes its endpoint from the packaged file, msgxctl finds
    //  the socket by itself: no inherited override may steer either.
    unsetenv ("MSGX_ADMIN_ENDPOINT");
    //  Whatever an earlier run left installed goes first.
    s_purge ();
    *state = &s_fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    //  Even after a failure, nothing of the package stays installed.
    const char *argv [] = { "dpkg", "--purge", "msgxd", NULL };
    char *out = NULL, *err = NULL;
    mx_testproc_run (argv, NULL, WAIT_MS, &out, &err);
    free (out);
    free (err);
    free (fx->deb);
    free (fx->listing);
    return 0;
}

//  ---------------------------------------------------------------------

static void
test_cpack_builds_a_package_lintian_accepts (void **state)
{
    fixture_t *fx = *state;
    const char *build = getenv ("MX_BUILD_DIR");
    const char *cpack = getenv ("MX_CPACK");
    assert_non_null (cpack);
    char *config = zsys_sprintf ("%s/CPackConfig.cmake", build);
    unlink (fx->deb);
    const char *argv [] = { cpack, "-G", "DEB", "--config", config, NULL };
    free (s_run (argv, NULL, 0, BUILD_MS));
    free (config);
    assert_true (s_exists (fx->deb));

    //  No error and no warning: the package carries no lintian overrides.
    const char *lintian [] = { "lintian", "--fail-on", "error,warning", fx->deb, NULL };
    char *out = s_run (lintian, NULL, 0, BUILD_MS);
    if (strstr (out, "E: ") || strstr (out, "W: "))
        fail_msg ("lintian:\n%s", out);
    free (out);
}

static void
test_the_package_holds_binaries_unit_conffiles_and_manual_pages (void **state)
{
    fixture_t *fx = *state;
    const char *argv [] = { "dpkg", "-c", fx->deb, NULL };
    fx->listing = s_run (argv, NULL, 0, WAIT_MS);
    const char *expected [] = {
        " ./usr/sbin/msgxd\n", " ./usr/bin/msgxctl\n", " ./usr/bin/msgx-gen\n",
        " ./usr/bin/msgx-diff\n", " ./usr/share/man/man1/msgx-diff.1.gz\n",
        " ./lib/systemd/system/msgxd.service\n",
        " ./usr/lib/sysusers.d/msgxd.conf\n", " ./usr/lib/tmpfiles.d/msgxd.conf\n",
        " ./etc/msgxd/msgxd.zpl\n",
        " ./usr/share/man/man8/msgxd.8.gz\n", " ./usr/share/man/man1/msgxctl.1.gz\n",
        " ./usr/share/man/man5/msgxd.conf.5.gz\n",
        " ./usr/share/doc/msgxd/copyright\n", " ./usr/share/doc/msgxd/changelog.gz\n",
        " ./usr/share/doc/msgxd/operations.md\n",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected [0]; i++)
        if (!strstr (fx->listing, expected [i]))
            fail_msg ("dpkg -c lacks%s%s", expected [i], fx->listing);

    const char *info [] = { "dpkg-deb", "--info", fx->deb, NULL };
    char *out = s_run (info, NULL, 0, WAIT_MS);
    char *version = zsys_sprintf ("\n Version: %s\n", MX_VERSION);
    assert_non_null (strstr (out, version));
    assert_non_null (strstr (out, "conffiles"));
    assert_non_null (strstr (out, "systemd"));
    free (version);
    free (out);
    const char *conffiles [] = { "dpkg-deb", "--info", fx->deb, "conffiles", NULL };
    out = s_run (conffiles, NULL, 0, WAIT_MS);
    assert_string_equal (out, "/etc/msgxd/msgxd.zpl\n");
    free (out);
}

static void
test_dpkg_installs_it_and_systemd_accepts_the_unit (void **state)
{
    fixture_t *fx = *state;
    const char *install [] = { "dpkg", "-i", fx->deb, NULL };
    free (s_run (install, NULL, 0, BUILD_MS));

    const char *query [] = { "dpkg-query", "-W", "-f=${Version}", "msgxd", NULL };
    char *out = s_run (query, NULL, 0, WAIT_MS);
    assert_string_equal (out, MX_VERSION);
    free (out);

    //  One version everywhere: the package, both programs (and the gauge,
    //  below).
    const char *versions [][3] = { { "/usr/sbin/msgxd", "--version", NULL },
                                   { "/usr/bin/msgxctl", "--version", NULL } };
    for (int i = 0; i < 2; i++) {
        out = s_run (versions [i], NULL, 0, WAIT_MS);
        char *want = zsys_sprintf ("%s (commit %s)\n", MX_VERSION, MX_COMMIT);
        assert_non_null (strstr (out, want));
        free (want);
        free (out);
    }

    const char *verify [] = { "systemd-analyze", "verify", "/lib/systemd/system/msgxd.service", NULL };
    char *err = NULL;
    out = NULL;
    int code = mx_testproc_run (verify, NULL, WAIT_MS, &out, &err);
    if (code != 0 || *out || *err)
        fail_msg ("systemd-analyze verify exited %d:\n%s%s", code, out, err);
    free (out);
    free (err);

    //  postinst: the user, the group with msgx in it, the folders.
    struct passwd *user = getpwnam ("msgx");
    assert_non_null (user);
    struct group *admin = getgrnam ("msgx-admin");
    assert_non_null (admin);
    bool member = false;
    for (char **name = admin->gr_mem; *name; name++)
        member = member || streq (*name, "msgx");
    assert_true (member);
    struct stat st;
    assert_int_equal (stat ("/etc/msgxd", &st), 0);
    assert_int_equal (st.st_mode & 0777, 0750);
    assert_int_equal (st.st_gid, user->pw_gid);
    assert_int_equal (stat ("/run/msgxd", &st), 0);
    assert_int_equal (st.st_uid, user->pw_uid);
}

static void
test_installed_msgxd_runs_as_msgx_and_msgx_admin_members_use_msgxctl (void **state)
{
    (void) state;
    mx_testpg_t *pg = mx_testpg_new ();
    mx_testmb_t *mb = mx_testmb_new ();
    mx_testkafka_t *kafka = mx_testkafka_new (1);
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (kafka);
    assert_int_equal (rd_kafka_mock_topic_create (cluster, "msgx.flight.events", 3, 1), 0);
    assert_int_equal (rd_kafka_mock_topic_create (cluster, "msgx.flight.state", 3, 1), 0);
    int port = mx_testenv_free_port ();
    //  The sample's placeholders, replaced; everything else as installed.
    char *env [32] = {
        zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (pg)),
        zsys_sprintf ("MSGX_KAFKA_BOOTSTRAP_SERVERS=%s", mx_testkafka_bootstraps (kafka)),
        zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", port),
    };
    size_t count = 3 + mx_testmb_environment (mb, "+00:00", env + 3);
    //  The test servers speak plaintext: trusted explicitly, as a site
    //  would have to.
    const char *trusted [] = {
        "MSGX_PG_ALLOW_UNVERIFIED=true",
        "MSGX_KAFKA_SECURITY_PROTOCOL=plaintext", "MSGX_KAFKA_SECURITY_SSL_CA_LOCATION=",
        "MSGX_KAFKA_SECURITY_ALLOW_PLAINTEXT=true",
        "MAILBOX_SHARED_MYSQL_SSL_MODE=disabled", "MAILBOX_SHARED_MYSQL_SSL_CA=",
        "MAILBOX_SHARED_MYSQL_ALLOW_UNVERIFIED=true",
    };
    for (size_t i = 0; i < sizeof trusted / sizeof trusted [0]; i++)
        env [count++] = strdup (trusted [i]);
    const char *argv [] = { "setpriv", "--reuid=msgx", "--regid=msgx", "--init-groups", "--",
                            "/usr/sbin/msgxd", "--config", "/etc/msgxd/msgxd.zpl", NULL };
    mx_testproc_t *daemon = mx_testproc_new (argv, (const char *const *) env);
    assert_non_null (daemon);
    if (!mx_testproc_expect_stderr (daemon, "role active", WAIT_MS))
        fail_msg ("the installed msgxd did not become active:\n%s", mx_testproc_stderr (daemon));
    assert_non_null (strstr (mx_testproc_stderr (daemon), "profile prod"));

    struct stat st;
    assert_int_equal (stat (SOCKET, &st), 0);
    assert_int_equal (st.st_mode & 0777, 0660);
    assert_int_equal (st.st_uid, getpwnam ("msgx")->pw_uid);
    assert_int_equal (st.st_gid, getgrnam ("msgx-admin")->gr_gid);

    //  A member of msgx-admin, no --endpoint: msgxctl finds the packaged socket.
    const char *member [] = { "setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=msgx-admin", "--",
                              "/usr/bin/msgxctl", "status", "--json", NULL };
    char *out = s_run (member, NULL, 0, WAIT_MS);
    json_t *status = json_loads (out, 0, NULL);
    assert_non_null (status);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    assert_int_equal (json_integer_value (json_object_get (status, "pid")), mx_testproc_pid (daemon));
    json_decref (status);
    free (out);

    //  Anyone else is not let in, and told why.
    const char *outsider [] = { "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                "/usr/bin/msgxctl", "--timeout", "500", "status", NULL };
    free (s_run (outsider, NULL, 4, WAIT_MS));

    //  The gauge names the same version and commit as --version.
    char *head = NULL, *body = NULL;
    assert_int_equal (mx_testhttp_get (port, "/metrics", 10, &head, &body), 200);
    char value [32];
    mx_testhttp_sample (body, "msgx_build_info{version=\"" MX_VERSION "\",commit=\"" MX_COMMIT "\"}",
                        value, sizeof value);
    assert_string_equal (value, "1");
    free (head);
    free (body);

    assert_int_equal (mx_testproc_signal (daemon, SIGTERM), 0);
    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &wstatus), 0);
    assert_true (WIFEXITED (wstatus));
    assert_int_equal (WEXITSTATUS (wstatus), 0);
    assert_false (s_exists (SOCKET));
    mx_testproc_destroy (&daemon);
    for (int i = 0; env [i]; i++)
        free (env [i]);
    mx_testkafka_destroy (&kafka);
    mx_testmb_destroy (&mb);
    mx_testpg_destroy (&pg);
}

static void
test_purge_leaves_nothing_but_the_system_user (void **state)
{
    fixture_t *fx = *state;
    assert_non_null (fx->listing);
    s_purge ();
    const char *query [] = { "dpkg-query", "-W", "-f=${db:Status-Status}", "msgxd", NULL };
    char *out = NULL, *err = NULL;
    int code = mx_testproc_run (query, NULL, WAIT_MS, &out, &err);
    //  Purged: unknown to dpkg (exit 1), or known as not-installed.
    assert_true (code == 1 || (code == 0 && streq (out, "not-installed")));
    free (out);
    free (err);

    //  Every file and folder of the package's own (their paths name msgx),
    //  and what the unit, tmpfiles and msgxd made.
    char *listing = strdup (fx->listing);
    for (char *line = strtok (listing, "\n"); line; line = strtok (NULL, "\n")) {
        char *path = strstr (line, " ./");
        assert_non_null (path);
        path += 2;
        size_t length = strlen (path);
        if (length > 1 && path [length - 1] == '/')
            path [length - 1] = '\0';
        if (strstr (path, "msgx") && s_exists (path))
            fail_msg ("%s is still there after dpkg --purge", path);
    }
    free (listing);
    const char *made [] = { "/etc/msgxd", "/run/msgxd", "/var/lib/msgxd" };
    for (size_t i = 0; i < sizeof made / sizeof made [0]; i++)
        if (s_exists (made [i]))
            fail_msg ("%s is still there after dpkg --purge", made [i]);

    //  The system user and group stay, as Debian leaves system users: files
    //  they own may live on elsewhere, and a reused ID would inherit them.
    assert_non_null (getpwnam ("msgx"));
    assert_non_null (getgrnam ("msgx-admin"));
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_cpack_builds_a_package_lintian_accepts),
        cmocka_unit_test (test_the_package_holds_binaries_unit_conffiles_and_manual_pages),
        cmocka_unit_test (test_dpkg_installs_it_and_systemd_accepts_the_unit),
        cmocka_unit_test (test_installed_msgxd_runs_as_msgx_and_msgx_admin_members_use_msgxctl),
        cmocka_unit_test (test_purge_leaves_nothing_but_the_system_user),
    };
    return cmocka_run_group_tests (tests, s_setup, s_teardown);
}
