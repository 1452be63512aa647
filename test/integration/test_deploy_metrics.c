/*  Every series that deploy/prometheus/alerts.yaml and
    deploy/grafana/msgxd-dashboard.json select exists on a freshly started
    msgxd (GET /metrics against the test PostgreSQL and MariaDB), before
    anything was counted: the expressions are parsed here for their metric
    names, equality label matchers (state="DEAD", class="INFRA") and
    grouping labels (by (target)), so a rule never waits for a series that
    appears only with its first count (increase() would miss that count).
    /health names the dependencies the runbook explains.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>

#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 30000
#define IO_TIMEOUT_S 20
#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:"

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

//  The PromQL expressions of the alert rules: each "expr:" line.
static void
s_alert_exprs (const char *text, zlistx_t *exprs)
{
    for (const char *line = text; *line; ) {
        const char *eol = strchr (line, '\n');
        size_t length = eol ? (size_t) (eol - line) : strlen (line);
        char *copy = strndup (line, length);
        char *at = strstr (copy, "expr:");
        if (at) {
            at += 5;
            while (*at == ' ')
                at++;
            zlistx_add_end (exprs, at);
        }
        free (copy);
        line = eol ? eol + 1 : line + length;
    }
}

//  The dashboard's expressions: every "expr" member, wherever it is.
static void
s_dashboard_exprs (json_t *node, zlistx_t *exprs)
{
    if (json_is_object (node)) {
        const char *key;
        json_t *value;
        json_object_foreach (node, key, value)
            if (streq (key, "expr") && json_is_string (value))
                zlistx_add_end (exprs, (void *) json_string_value (value));
            else
                s_dashboard_exprs (value, exprs);
    }
    else
    if (json_is_array (node)) {
        size_t index;
        json_t *value;
        json_array_foreach (node, index, value)
            s_dashboard_exprs (value, exprs);
    }
}

//  Whether a sample line of the scrape is of series name and carries each
//  of the labels: "key=\"value\"" (an equality matcher) or "key=" (any
//  value, for a grouping label).
static bool
s_sample_matches (const char *line, size_t length, const char *name, zlistx_t *labels)
{
    size_t name_length = strlen (name);
    if (length <= name_length || strncmp (line, name, name_length) != 0
    ||  (line [name_length] != '{' && line [name_length] != ' '))
        return false;
    const char *open = line + name_length;
    const char *close = *open == '{' ? memchr (open, '}', length - name_length) : NULL;
    for (const char *label = (const char *) zlistx_first (labels); label;
         label = (const char *) zlistx_next (labels)) {
        if (!close)
            return false;
        bool found = false;
        size_t label_length = strlen (label);
        for (const char *at = open; at + label_length < close && !found; at++)
            found = (*at == '{' || *at == ',') && strncmp (at + 1, label, label_length) == 0;
        if (!found)
            return false;
    }
    return true;
}

static bool
s_served (const char *body, const char *name, zlistx_t *labels)
{
    for (const char *line = body; *line; ) {
        const char *eol = strchr (line, '\n');
        size_t length = eol ? (size_t) (eol - line) : strlen (line);
        if (*line != '#' && s_sample_matches (line, length, name, labels))
            return true;
        line = eol ? eol + 1 : line + length;
    }
    return false;
}

//  job and instance are the labels Prometheus gives every scraped series.
static bool
s_prometheus_label (const char *label, size_t length)
{
    return (length == 3 && strncmp (label, "job", 3) == 0)
        || (length == 8 && strncmp (label, "instance", 8) == 0);
}

//  The labels that aggregations "by (a, b)" group on, when the name at
//  name_at is inside the aggregation's argument.
static void
s_grouping (const char *expr, const char *name_at, zlistx_t *labels)
{
    for (const char *by = expr; (by = strstr (by, "by (")); by += 4) {
        if (by > expr && (isalnum ((unsigned char) by [-1]) || by [-1] == '_'))
            continue;
        const char *list = by + 4;
        const char *list_end = strchr (list, ')');
        if (!list_end)
            return;
        //  The argument: the parenthesis after the list, to its match.
        const char *arg = list_end + 1;
        while (*arg == ' ')
            arg++;
        if (*arg != '(')
            continue;
        int depth = 0;
        const char *end = arg;
        for (; *end; end++) {
            depth += *end == '(' ? 1 : *end == ')' ? -1 : 0;
            if (depth == 0)
                break;
        }
        if (name_at < arg || name_at >= end)
            continue;
        char *copy = strndup (list, (size_t) (list_end - list));
        char *saved = NULL;
        for (char *label = strtok_r (copy, ", ", &saved); label; label = strtok_r (NULL, ", ", &saved)) {
            if (s_prometheus_label (label, strlen (label)))
                continue;
            char *entry = zsys_sprintf ("%s=", label);
            zlistx_add_end (labels, entry);
            free (entry);
        }
        free (copy);
    }
}

//  Checks every series an expression selects; each missing one goes to
//  missing as "series (in where)". Returns how many were checked.
static size_t
s_check_expr (const char *expr, const char *where, const char *body, zlistx_t *missing)
{
    size_t checked = 0;
    for (const char *scan = expr; (scan = strstr (scan, "msgx_")); ) {
        if (scan > expr && strchr (NAME_CHARS, scan [-1])) {
            scan += 5;
            continue;
        }
        size_t length = strspn (scan, NAME_CHARS);
        char *name = strndup (scan, length);
        zlistx_t *labels = zlistx_new ();
        zlistx_set_destructor (labels, (zlistx_destructor_fn *) zstr_free);
        zlistx_set_duplicator (labels, (zlistx_duplicator_fn *) strdup);
        const char *after = scan + length;
        if (*after == '{') {
            const char *close = strchr (after, '}');
            assert_non_null (close);
            char *matchers = strndup (after + 1, (size_t) (close - after - 1));
            char *saved = NULL;
            for (char *matcher = strtok_r (matchers, ",", &saved); matcher; matcher = strtok_r (NULL, ",", &saved)) {
                while (*matcher == ' ')
                    matcher++;
                size_t key_length = strspn (matcher, NAME_CHARS);
                //  Only equality matchers name a series.
                if (matcher [key_length] != '=' || matcher [key_length + 1] == '~'
                ||  s_prometheus_label (matcher, key_length))
                    continue;
                zlistx_add_end (labels, matcher);
            }
            free (matchers);
        }
        s_grouping (expr, scan, labels);
        checked++;
        if (!s_served (body, name, labels)) {
            zchunk_t *entry = zchunk_new (NULL, 128);
            zchunk_extend (entry, name, strlen (name));
            for (const char *label = (const char *) zlistx_first (labels); label;
                 label = (const char *) zlistx_next (labels)) {
                zchunk_extend (entry, " ", 1);
                zchunk_extend (entry, label, strlen (label));
            }
            char *text = zsys_sprintf ("%.*s (in %s: %s)", (int) zchunk_size (entry),
                                       (char *) zchunk_data (entry), where, expr);
            zlistx_add_end (missing, text);
            free (text);
            zchunk_destroy (&entry);
        }
        zlistx_destroy (&labels);
        free (name);
        scan += length;
    }
    return checked;
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
    assert_non_null (strstr (metrics.body, "# TYPE msgx_pipeline_backlog_unfinished gauge\n"));

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

    //  Every expression of both files, each selected series served now.
    zlistx_t *exprs = zlistx_new ();
    zlistx_set_destructor (exprs, (zlistx_destructor_fn *) zstr_free);
    zlistx_set_duplicator (exprs, (zlistx_duplicator_fn *) strdup);
    char *alerts_path = s_source_path ("deploy/prometheus/alerts.yaml");
    char *alerts = s_read (alerts_path);
    s_alert_exprs (alerts, exprs);
    size_t alert_count = zlistx_size (exprs);
    char *dashboard_path = s_source_path ("deploy/grafana/msgxd-dashboard.json");
    json_error_t json_error;
    json_t *dashboard = json_load_file (dashboard_path, 0, &json_error);
    if (!dashboard)
        fail_msg ("%s: %s (line %d)", dashboard_path, json_error.text, json_error.line);
    s_dashboard_exprs (dashboard, exprs);
    assert_true (alert_count > 10);
    assert_true (zlistx_size (exprs) > alert_count + 20);

    zlistx_t *missing = zlistx_new ();
    zlistx_set_destructor (missing, (zlistx_destructor_fn *) zstr_free);
    zlistx_set_duplicator (missing, (zlistx_duplicator_fn *) strdup);
    size_t checked = 0, index = 0;
    for (const char *expr = (const char *) zlistx_first (exprs); expr;
         expr = (const char *) zlistx_next (exprs), index++)
        checked += s_check_expr (expr, index < alert_count ? "alerts.yaml" : "msgxd-dashboard.json",
                                 metrics.body, missing);
    assert_true (checked > 30);
    if (zlistx_size (missing)) {
        zchunk_t *list = zchunk_new (NULL, 256);
        for (char *entry = (char *) zlistx_first (missing); entry; entry = (char *) zlistx_next (missing)) {
            zchunk_extend (list, "\n  ", 3);
            zchunk_extend (list, entry, strlen (entry));
        }
        zchunk_extend (list, "", 1);
        fail_msg ("series selected by the alerts or the dashboard that a fresh msgxd does not serve:%s\n"
                  "scrape:\n%s", (char *) zchunk_data (list), metrics.body);
    }
    //  The batch histogram reaches the configured batch sizes (process-batch
    //  defaults to 2000, at most 10000), and the series once duplicated is gone.
    assert_non_null (strstr (metrics.body, "msgx_batch_size_bucket{le=\"2000\"} 0\n"));
    assert_non_null (strstr (metrics.body, "msgx_batch_size_bucket{le=\"10000\"} 0\n"));
    assert_null (strstr (metrics.body, "msgx_events_pending"));
    //  The counters of what used to be counted only inside, at 0.
    const char *counters [] = {
        "msgx_instance_fenced_total", "msgx_instance_takeovers_total",
        "msgx_requests_total{kind=\"RQFD\",outcome=\"sent\"}",
        "msgx_requests_total{kind=\"RQRD\",outcome=\"answered\"}",
        "msgx_requests_total{kind=\"RQFD\",outcome=\"failed\"}",
        "msgx_requests_total{kind=\"RQRD\",outcome=\"timeout\"}",
        "msgx_messages_dead_total{class=\"EXHAUSTED\"}",
        "msgx_messages_failed_total{class=\"INFRA\"}",
        "msgx_messages_total{type=\"-\",state=\"DEAD\"}",
    };
    for (size_t i = 0; i < sizeof counters / sizeof counters [0]; i++) {
        char value [64];
        assert_string_equal (mx_testhttp_sample (metrics.body, counters [i], value, sizeof value), "0");
    }
    assert_non_null (strstr (metrics.body, "\nmsgx_build_info{version=\""));

    assert_int_equal (mx_testproc_signal (daemon, SIGTERM), 0);
    int status = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &status), 0);
    assert_true (WIFEXITED (status));
    assert_int_equal (WEXITSTATUS (status), 0);

    zlistx_destroy (&missing);
    json_decref (dashboard);
    free (dashboard_path);
    free (alerts);
    free (alerts_path);
    zlistx_destroy (&exprs);
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
