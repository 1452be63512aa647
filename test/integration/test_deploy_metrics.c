/*  The metric names in deploy/grafana/msgxd-dashboard.json and
    deploy/prometheus/alerts.yaml exist: each is served by a running msgxd
    (GET /metrics, against the test PostgreSQL and MariaDB), or, for a
    labelled series that only appears once something happened, is named
    in the daemon's sources. /health names the dependencies the runbook
    explains.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>

#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 30000
#define IO_TIMEOUT_S 20

static const char *s_dashboards [] = {
    "deploy/grafana/msgxd-dashboard.json",
    "deploy/prometheus/alerts.yaml",
};

//  Folders whose C sources name the metrics.
static const char *s_source_dirs [] = { "core", "actors", "db", "domain" };

static char *
s_source_path (const char *relative)
{
    const char *root = getenv ("MX_SOURCE_DIR");
    assert_non_null (root);
    return zsys_sprintf ("%s/%s", root, relative);
}

static char *
s_read (const char *path)
{
    FILE *file = fopen (path, "rb");
    if (!file)
        fail_msg ("cannot read %s: %s", path, strerror (errno));
    fseek (file, 0, SEEK_END);
    long size = ftell (file);
    fseek (file, 0, SEEK_SET);
    char *text = malloc ((size_t) size + 1);
    assert_non_null (text);
    assert_int_equal (fread (text, 1, (size_t) size, file), (size_t) size);
    text [size] = '\0';
    fclose (file);
    return text;
}

//  Every C source of the daemon, concatenated.
static char *
s_sources (void)
{
    zchunk_t *all = zchunk_new (NULL, 1 << 20);
    for (size_t i = 0; i < sizeof s_source_dirs / sizeof s_source_dirs [0]; i++) {
        char *dir_path = s_source_path (s_source_dirs [i]);
        DIR *dir = opendir (dir_path);
        if (!dir)
            fail_msg ("cannot list %s", dir_path);
        struct dirent *entry;
        while ((entry = readdir (dir))) {
            size_t length = strlen (entry->d_name);
            if (length < 3 || strcmp (entry->d_name + length - 2, ".c") != 0)
                continue;
            char *path = zsys_sprintf ("%s/%s", dir_path, entry->d_name);
            char *text = s_read (path);
            zchunk_extend (all, text, strlen (text));
            free (text);
            free (path);
        }
        closedir (dir);
        free (dir_path);
    }
    zchunk_extend (all, "", 1);
    char *text = strdup ((char *) zchunk_data (all));
    zchunk_destroy (&all);
    return text;
}

typedef struct {
    int status;
    char *body;
} reply_t;

static void
s_get (int port, const char *path, reply_t *reply)
{
    char *head = NULL;
    reply->status = mx_testhttp_get (port, path, IO_TIMEOUT_S, &head, &reply->body);
    free (head);
}

//  Metric families of a Prometheus text body: name -> type.
static zhashx_t *
s_families (const char *body)
{
    zhashx_t *families = zhashx_new ();
    zhashx_set_destructor (families, (zhashx_destructor_fn *) zstr_free);
    zhashx_set_duplicator (families, (zhashx_duplicator_fn *) strdup);
    for (const char *line = body; *line; ) {
        char name [256], type [32];
        if (sscanf (line, "# TYPE %255s %31s", name, type) == 2)
            zhashx_update (families, name, type);
        const char *eol = strchr (line, '\n');
        line = eol ? eol + 1 : line + strlen (line);
    }
    return families;
}

static bool
s_ends_with (const char *text, const char *suffix)
{
    size_t length = strlen (text), suffix_length = strlen (suffix);
    return length > suffix_length && streq (text + length - suffix_length, suffix);
}

//  Known when served, when it is a served histogram's _bucket/_sum/_count,
//  or when the sources name it in quotes (created on first use).
static bool
s_known (const char *name, zhashx_t *families, const char *sources)
{
    if (zhashx_lookup (families, name))
        return true;
    const char *suffixes [] = { "_bucket", "_sum", "_count" };
    for (size_t i = 0; i < 3; i++)
        if (s_ends_with (name, suffixes [i])) {
            char *base = strndup (name, strlen (name) - strlen (suffixes [i]));
            const char *type = (const char *) zhashx_lookup (families, base);
            char *quoted = zsys_sprintf ("\"%s\"", base);
            bool known = (type && streq (type, "histogram")) || strstr (sources, quoted);
            free (quoted);
            free (base);
            if (known)
                return true;
        }
    char *quoted = zsys_sprintf ("\"%s\"", name);
    bool known = strstr (sources, quoted) != NULL;
    free (quoted);
    return known;
}

static void
test_dashboard_and_alerts_use_only_real_metrics (void **state)
{
    (void) state;
    mx_testpg_t *pg = mx_testpg_new ();
    mx_testmb_t *mb = mx_testmb_new ();
    char *dir = mx_testenv_tmpdir ();
    int port = mx_testenv_free_port ();
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    char *msgxd = zsys_sprintf ("%s/cmd/msgxd", build);
    char *env [] = {
        zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (pg)),
        zsys_sprintf ("MSGX_ADMIN_ENDPOINT=ipc://%s/admin.sock", dir),
        zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", port),
        strdup ("MSGX_PROFILE=dev"),
        strdup ("MSGX_PIPELINE_AUTOSTART=true"),
        strdup ("MAILBOX_SHARED_MYSQL_ENABLED=true"),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_HOST=%s", mx_testmb_host (mb)),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_PORT=%d", mx_testmb_port (mb)),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_USER=%s", mx_testmb_user (mb)),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_PASSWORD=%s", mx_testmb_password (mb)),
        zsys_sprintf ("MAILBOX_SHARED_MYSQL_DATABASE=%s", mx_testmb_database (mb)),
        strdup ("MAILBOX_SHARED_MYSQL_TIME_ZONE=+00:00"),
        NULL
    };
    const char *argv [] = { msgxd, NULL };
    mx_testproc_t *daemon = mx_testproc_new (argv, (const char *const *) env);
    assert_non_null (daemon);
    if (!mx_testproc_expect_stderr (daemon, "control started", WAIT_MS))
        fail_msg ("msgxd did not start:\n%s", mx_testproc_stderr (daemon));

    reply_t metrics = { 0 };
    s_get (port, "/metrics", &metrics);
    assert_int_equal (metrics.status, 200);
    zhashx_t *families = s_families (metrics.body);
    assert_non_null (zhashx_lookup (families, "msgx_pipeline_backlog_unfinished"));

    //  The dependencies the runbook's /health table explains.
    reply_t health = { 0 };
    s_get (port, "/health", &health);
    json_t *document = json_loads (health.body, 0, NULL);
    assert_non_null (document);
    json_t *dependencies = json_object_get (document, "dependencies");
    const char *names [] = { "postgresql", "mailbox", "kafka" };
    for (size_t i = 0; i < 3; i++) {
        json_t *dependency = json_object_get (dependencies, names [i]);
        if (!json_is_object (dependency))
            fail_msg ("/health has no dependency %s: %s", names [i], health.body);
        assert_true (json_is_boolean (json_object_get (dependency, "ok")));
        assert_true (json_is_boolean (json_object_get (dependency, "required")));
        assert_true (json_is_string (json_object_get (dependency, "detail")));
    }
    //  The summary the runbook explains: 200 only when ok.
    const char *summary = json_string_value (json_object_get (document, "status"));
    assert_non_null (summary);
    if (!streq (summary, "ok") && !streq (summary, "standby") && !streq (summary, "degraded"))
        fail_msg ("/health status '%s' is not ok, standby or degraded", summary);
    assert_int_equal (health.status, streq (summary, "ok") ? 200 : 503);
    assert_true (json_is_string (json_object_get (document, "role")));
    json_decref (document);

    char *sources = s_sources ();
    zlistx_t *unknown = zlistx_new ();
    zlistx_set_destructor (unknown, (zlistx_destructor_fn *) zstr_free);
    zlistx_set_duplicator (unknown, (zlistx_duplicator_fn *) strdup);
    size_t checked = 0;
    for (size_t i = 0; i < sizeof s_dashboards / sizeof s_dashboards [0]; i++) {
        char *path = s_source_path (s_dashboards [i]);
        char *text = s_read (path);
        for (const char *scan = text; (scan = strstr (scan, "msgx_")); ) {
            //  A name starts here only if no name character precedes it.
            if (scan > text && (isalnum ((unsigned char) scan [-1]) || scan [-1] == '_')) {
                scan += 5;
                continue;
            }
            size_t length = strspn (scan, "abcdefghijklmnopqrstuvwxyz0123456789_");
            char *name = strndup (scan, length);
            checked++;
            if (!s_known (name, families, sources)) {
                char *entry = zsys_sprintf ("%s (in %s)", name, s_dashboards [i]);
                zlistx_add_end (unknown, entry);
                free (entry);
            }
            free (name);
            scan += length;
        }
        free (text);
        free (path);
    }
    assert_true (checked > 20);
    if (zlistx_size (unknown)) {
        zchunk_t *list = zchunk_new (NULL, 256);
        for (char *entry = (char *) zlistx_first (unknown); entry; entry = (char *) zlistx_next (unknown)) {
            zchunk_extend (list, "\n  ", 3);
            zchunk_extend (list, entry, strlen (entry));
        }
        zchunk_extend (list, "", 1);
        fail_msg ("metric names that msgxd neither serves nor defines:%s", (char *) zchunk_data (list));
    }

    assert_int_equal (mx_testproc_signal (daemon, SIGTERM), 0);
    int status = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &status), 0);
    assert_true (WIFEXITED (status));
    assert_int_equal (WEXITSTATUS (status), 0);

    zlistx_destroy (&unknown);
    free (sources);
    zhashx_destroy (&families);
    free (health.body);
    free (metrics.body);
    mx_testproc_destroy (&daemon);
    for (size_t i = 0; env [i]; i++)
        free (env [i]);
    free (msgxd);
    mx_testenv_rmtree (dir);
    free (dir);
    mx_testmb_destroy (&mb);
    mx_testpg_destroy (&pg);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_dashboard_and_alerts_use_only_real_metrics),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
