/*  test_republish - the reference topic and msgxctl republish against real
    servers: PostgreSQL, the MariaDB mailbox, the real msgxd and msgxctl,
    and a Kafka mock cluster of the test's own reached over TCP (it outlives
    a killed msgxd).

    - the samples' reference messages reach the reference topic: its
      compacted view (the newest record per LIST:KEY) equals ref_master;
      a deletion is a tombstone; republish --reference (alone) sends every
      entry again
    - a generated day; a consumer that lost its copy reads the state topic
      after a marker: republish --day restores the compacted view of the
      day (equal to flight_schd); without --yes it is refused, --dry-run
      counts, a second job is refused while one runs
    - SIGKILL of msgxd in the middle of the job (msgx.republish.rate keeps
      it long enough): the next start continues after the job's cursor, so
      every flight of the day is re-published exactly once
    Every record read is checked by mx-validate-records.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "mx_testdaemon.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 60000
#define DAY "2021-01-23"
#define TOPIC_MSG "msgx.flight.events"
#define TOPIC_SCHD "msgx.flight.state"
#define TOPIC_REF MX_TESTKAFKA_REF_TOPIC
#define PARTITIONS 3

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    mx_testkafka_t *kafka;
    char *dir;
    char build [1024];
    PGconn *conn;
    rd_kafka_t *consumer;
    mx_testkafka_record_t *records;
    size_t count;
    int http_port;              //  of the daemon started last
} fixture_t;

//  mx_testpg_wait wakes on these: every change of what the waits ask about.
static const char *s_watch_sql =
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify ('mx_test', TG_TABLE_NAME); RETURN NULL; END $$;"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE OR DELETE ON proc_state"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE OR DELETE ON msg_event"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE OR DELETE ON ref_master"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON republish_job"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    assert_non_null (fx);
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    snprintf (fx->build, sizeof fx->build, "%s", build);
    fx->pg = mx_testpg_new ();
    fx->mb = mx_testmb_new ();
    fx->kafka = mx_testkafka_new (1);
    //  Created as an operator would (the mock cluster knows no compaction).
    const char *topics [] = { TOPIC_MSG, TOPIC_SCHD, TOPIC_REF };
    for (size_t i = 0; i < 3; i++)
        assert_int_equal (rd_kafka_mock_topic_create (mx_testkafka_cluster (fx->kafka), topics [i], PARTITIONS, 1),
                          RD_KAFKA_RESP_ERR_NO_ERROR);
    fx->dir = mx_testenv_tmpdir ();
    //  The schema first, so the waits can LISTEN to its changes.
    fx->conn = mx_testpg_connect_schema (fx->pg, s_watch_sql);
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    for (size_t i = 0; i < fx->count; i++)
        mx_testkafka_record_free (&fx->records [i]);
    free (fx->records);
    if (fx->consumer)
        rd_kafka_destroy (fx->consumer);
    PQfinish (fx->conn);
    mx_testkafka_destroy (&fx->kafka);
    mx_testmb_destroy (&fx->mb);
    mx_testpg_destroy (&fx->pg);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

static mx_testproc_t *
s_start (fixture_t *fx, const char *rate)
{
    mx_testdaemon_env_t env;
    mx_testdaemon_env_init (&env, fx->pg, fx->mb, fx->dir, "admin.sock", 0);
    fx->http_port = env.http_port;
    mx_testdaemon_env_add (&env, "MSGX_KAFKA_BOOTSTRAP_SERVERS=%s", mx_testkafka_bootstraps (fx->kafka));
    mx_testdaemon_env_add (&env, "MSGX_REPUBLISH_RATE=%s", rate);
    mx_testdaemon_env_add (&env, "MSGX_SCHD_FLUSH_PERIOD=100ms");
    mx_testdaemon_env_add (&env, "MSGX_PIPELINE_MAX_ATTEMPTS=1");
    mx_testdaemon_env_add (&env, "MSGX_LOG_LEVEL=info");
    mx_testproc_t *daemon = mx_testdaemon_start ("cmd/msgxd", &env, "active");
    mx_testdaemon_env_free (&env);
    return daemon;
}

//  msgxctl ARGS... against the daemon, which must exit with code
//  expected; *out gets its stdout and stderr (malloc'd).
static void
s_ctl (fixture_t *fx, int expected, char **out, const char *first, ...)
{
    char msgxctl [1200], endpoint [1200];
    snprintf (msgxctl, sizeof msgxctl, "%s/cmd/msgxctl", fx->build);
    snprintf (endpoint, sizeof endpoint, "ipc://%s/admin.sock", fx->dir);
    const char *argv [16] = { msgxctl, "--endpoint", endpoint, first };
    size_t n = 4;
    va_list args;
    va_start (args, first);
    const char *arg;
    while ((arg = va_arg (args, const char *)) && n < 15)
        argv [n++] = arg;
    va_end (args);
    argv [n] = NULL;
    char *stdout_text = NULL, *stderr_text = NULL;
    int rc = mx_testproc_run (argv, NULL, WAIT_MS, &stdout_text, &stderr_text);
    *out = zsys_sprintf ("%s%s", stdout_text ? stdout_text : "", stderr_text ? stderr_text : "");
    free (stdout_text);
    free (stderr_text);
    if (rc != expected)
        fail_msg ("msgxctl %s ...: exit %d, not %d: %s", first, rc, expected, *out);
}

//  One sample of the daemon's /metrics, as an integer.
static int64_t
s_metric (fixture_t *fx, const char *series)
{
    char *head = NULL, *body = NULL;
    assert_int_equal (mx_testhttp_get (fx->http_port, "/metrics", 10, &head, &body), 200);
    char value [64];
    mx_testhttp_sample (body, series, value, sizeof value);
    free (head);
    free (body);
    return (int64_t) strtod (value, NULL);
}

//  The daemon says the job is done.
static void
s_wait_done (mx_testproc_t *daemon)
{
    if (!mx_testproc_expect_stderr (daemon, " done: every event written", WAIT_MS))
        fail_msg ("the republish job did not end: %s", mx_testproc_stderr (daemon));
}

static char *
s_read_file (const char *path)
{
    FILE *file = fopen (path, "rb");
    assert_non_null (file);
    zchunk_t *chunk = zchunk_read (file, 1 << 20);
    fclose (file);
    assert_non_null (chunk);
    char *text = strndup ((char *) zchunk_data (chunk), zchunk_size (chunk));
    zchunk_destroy (&chunk);
    return text;
}

//  Reads what the brokers hold now of topic (and the state topic, which
//  mx_testkafka_read_all reads with it); returns where this read began.
static size_t
s_read (fixture_t *fx, const char *topic)
{
    if (!fx->consumer)
        fx->consumer = mx_testkafka_consumer (fx->kafka, "test-republish", topic, TOPIC_SCHD, PARTITIONS);
    size_t first = fx->count;
    mx_testkafka_read_all (fx->consumer, topic, TOPIC_SCHD, PARTITIONS, WAIT_MS, &fx->records, &fx->count);
    return first;
}

//  The compacted view of topic from record `from` on: key -> the newest
//  record (its index), as a compacted topic keeps it.
static zhashx_t *
s_compacted (fixture_t *fx, const char *topic, size_t from)
{
    zhashx_t *view = zhashx_new ();
    for (size_t i = from; i < fx->count; i++)
        if (strcmp (fx->records [i].topic, topic) == 0 && fx->records [i].key) {
            const mx_testkafka_record_t *old = (const mx_testkafka_record_t *) zhashx_lookup (view, fx->records [i].key);
            //  One key is in one partition: a later offset is newer.
            if (!old || old->offset < fx->records [i].offset)
                zhashx_update (view, fx->records [i].key, &fx->records [i]);
        }
    return view;
}

static int
s_cmp_text (const void *a, const void *b)
{
    return strcmp (*(const char *const *) a, *(const char *const *) b);
}

//  The items sorted and joined by ';' (malloc'd); frees them and items.
static char *
s_join_sorted (char **items, size_t count)
{
    qsort (items, count, sizeof *items, s_cmp_text);
    zchunk_t *out = zchunk_new (NULL, 0);
    for (size_t i = 0; i < count; i++) {
        if (i)
            zchunk_extend (out, ";", 1);
        zchunk_extend (out, items [i], strlen (items [i]));
        free (items [i]);
    }
    free (items);
    zchunk_extend (out, "", 1);
    char *text = strdup ((char *) zchunk_data (out));
    zchunk_destroy (&out);
    return text;
}

//  "key=value-json;..." of the live entries of a compacted reference view,
//  sorted by key, for comparison with ref_master (malloc'd).
static char *
s_reference_view (zhashx_t *view)
{
    size_t size = zhashx_size (view), live = 0;
    char **items = calloc (size + 1, sizeof *items);
    for (const mx_testkafka_record_t *record = zhashx_first (view); record; record = zhashx_next (view)) {
        if (!record->value)
            continue;           //  a tombstone: compaction removes the key
        json_t *doc = json_loads (record->value, 0, NULL);
        assert_non_null (doc);
        char *value = json_dumps (json_object_get (doc, "value"), JSON_COMPACT | JSON_SORT_KEYS);
        items [live++] = zsys_sprintf ("%s=%s", record->key, value);
        free (value);
        json_decref (doc);
    }
    return s_join_sorted (items, live);
}

//  The same of ref_master, each value through jansson so both sides are
//  written alike.
static char *
s_reference_table (fixture_t *fx)
{
    PGresult *res = PQexec (fx->conn, "SELECT rtype || ':' || rkey, value::text FROM ref_master");
    assert_int_equal (PQresultStatus (res), PGRES_TUPLES_OK);
    size_t rows = (size_t) PQntuples (res);
    char **items = calloc (rows + 1, sizeof *items);
    for (size_t i = 0; i < rows; i++) {
        json_t *value = json_loads (PQgetvalue (res, (int) i, 1), 0, NULL);
        assert_non_null (value);
        char *text = json_dumps (value, JSON_COMPACT | JSON_SORT_KEYS);
        items [i] = zsys_sprintf ("%s=%s", PQgetvalue (res, (int) i, 0), text);
        free (text);
        json_decref (value);
    }
    PQclear (res);
    return s_join_sorted (items, rows);
}

static void
s_expect_reference_view (fixture_t *fx, size_t from, const char *what)
{
    zhashx_t *view = s_compacted (fx, TOPIC_REF, from);
    char *topic = s_reference_view (view);
    char *table = s_reference_table (fx);
    if (strcmp (topic, table) != 0)
        fail_msg ("%s: the reference topic's compacted view\n  %.600s\ndiffers from ref_master\n  %.600s",
                  what, topic, table);
    print_message ("%s: %zu keys on the reference topic, equal to ref_master\n", what, zhashx_size (view));
    free (topic);
    free (table);
    zhashx_destroy (&view);
}

static int
s_cmp_int64 (const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return x < y ? -1 : x > y;
}

static void
test_reference_topic (void **state)
{
    fixture_t *fx = *state;
    //  Every reference message of the samples (LIST_STYP_NN.xml), in name order.
    char path [1200];
    snprintf (path, sizeof path, "%s/test/data/sis", getenv ("MX_SOURCE_DIR"));
    DIR *dir = opendir (path);
    assert_non_null (dir);
    char **names = calloc (512, sizeof *names);
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir (dir)) && count < 511) {
        const char *styp = strlen (entry->d_name) > 5 && entry->d_name [4] == '_' ? entry->d_name + 5 : "";
        if (strncmp (styp, "DNLD_", 5) == 0 || strncmp (styp, "RESP_", 5) == 0 || strncmp (styp, "ADD_", 4) == 0
        ||  strncmp (styp, "UPD_", 4) == 0 || strncmp (styp, "DEL_", 4) == 0)
            names [count++] = strdup (entry->d_name);
    }
    closedir (dir);
    qsort (names, count, sizeof *names, s_cmp_text);
    assert_true (count > 40);
    int64_t id = 0;
    for (size_t i = 0; i < count; i++) {
        char file [1400];
        snprintf (file, sizeof file, "%s/%s", path, names [i]);
        char *xml = s_read_file (file);
        assert_non_null (xml);
        id++;
        assert_int_equal (mx_testmb_insert (fx->mb, id, xml, -1), id);
        free (xml);
        free (names [i]);
    }
    free (names);

    mx_testproc_t *daemon = s_start (fx, "500");
    mx_testdaemon_wait_processed (fx->conn, fx->mb, true);
    mx_testpg_expect (fx->conn, "SELECT count (DISTINCT rtype) > 10 FROM ref_master", "t");
    //  One event per entry change, each with its list and key.
    mx_testpg_expect (fx->conn, "SELECT count(*) > 0 AND bool_and (flid = 0 AND partition_key LIKE '%:%')"
                                " FROM msg_event WHERE target = 'KAFKA:ref'", "t");
    size_t first = s_read (fx, TOPIC_REF);
    s_expect_reference_view (fx, first, "after the samples");

    //  A deletion of an entry that exists: its key ends in a tombstone.
    char *list = mx_testpg_value (fx->conn, "SELECT min (rtype) FROM ref_master WHERE rtype = 'GLST'");
    assert_string_equal (list, "GLST");
    char *key = mx_testpg_value (fx->conn, "SELECT min (rkey) FROM ref_master WHERE rtype = 'GLST'");
    char *del = zsys_sprintf ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><MSG><META><SNDR>AODB</SNDR>"
                              "<SEQN>999001</SEQN><DTTM>20210123090000</DTTM><TYPE>GLST</TYPE><STYP>DEL</STYP>"
                              "</META><RECS>1</RECS><GLST><GCOD>%s</GCOD></GLST></MSG>", key);
    id++;
    assert_int_equal (mx_testmb_insert (fx->mb, id, del, -1), id);
    free (del);
    const char *params [] = { key };
    mx_testpg_wait_params (fx->conn, "SELECT NOT EXISTS (SELECT 1 FROM ref_master WHERE rtype = 'GLST'"
                                     " AND rkey = $1::text)", 1, params);
    mx_testdaemon_wait_processed (fx->conn, fx->mb, true);
    first = s_read (fx, TOPIC_REF);
    char *record_key = zsys_sprintf ("GLST:%s", key);
    zhashx_t *view = s_compacted (fx, TOPIC_REF, 0);
    const mx_testkafka_record_t *gone = (const mx_testkafka_record_t *) zhashx_lookup (view, record_key);
    assert_non_null (gone);
    assert_null (gone->value);
    assert_string_equal (gone->event_type, "TOMBSTONE");
    assert_int_equal (gone->msg_id, id);
    zhashx_destroy (&view);
    s_expect_reference_view (fx, 0, "after a deletion");
    free (record_key);
    free (list);
    free (key);

    //  Every entry again, on demand, to a consumer that reads only from here.
    char *out = NULL;
    s_ctl (fx, 0, &out, "republish", "--reference", "--dry-run", "--json", NULL);
    json_t *reply = json_loads (out, 0, NULL);
    assert_non_null (reply);
    char *entries = mx_testpg_value (fx->conn, "SELECT count(*) FROM ref_master");
    assert_int_equal (json_integer_value (json_object_get (reply, "entries")), strtoll (entries, NULL, 10));
    assert_int_equal (json_integer_value (json_object_get (reply, "flights")), 0);
    json_decref (reply);
    free (out);
    s_ctl (fx, 0, &out, "republish", "--reference", "--yes", NULL);
    free (out);
    s_wait_done (daemon);
    mx_testdaemon_wait_processed (fx->conn, fx->mb, true);
    first = s_read (fx, TOPIC_REF);
    size_t again = 0;
    for (size_t i = first; i < fx->count; i++)
        again += strcmp (fx->records [i].topic, TOPIC_REF) == 0;
    assert_int_equal (again, strtoll (entries, NULL, 10));
    s_expect_reference_view (fx, first, "re-published");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM audit_log WHERE action = 'republish'"
                                " AND result IN ('dry-run', 'ok')", "2");
    char series [128];
    snprintf (series, sizeof series, "msgx_republish_events_total{target=\"KAFKA:ref\"}");
    assert_int_equal (s_metric (fx, series), strtoll (entries, NULL, 10));
    assert_true (s_metric (fx, "msgx_events_sent_total{target=\"KAFKA:ref\"}") >= 2 * strtoll (entries, NULL, 10));
    free (entries);
    mx_testdaemon_stop (&daemon);
}

static void
test_republish_day (void **state)
{
    fixture_t *fx = *state;
    //  A day of flights with updates and deletions, by msgx-gen.
    const char *gen_args [] = {
        "--seed", "11", "--flights", "80", "--per-message", "40", "--updates", "240",
        "--day", DAY, NULL
    };
    char *out = mx_testdaemon_gen (fx->build, fx->mb, gen_args, WAIT_MS);
    free (out);

    //  20 events a second: the job of 80 flights lasts about 4 s, long
    //  enough to be killed in the middle.
    mx_testproc_t *daemon = s_start (fx, "20");
    mx_testdaemon_wait_processed (fx->conn, fx->mb, true);
    char *flights = mx_testpg_value (fx->conn, "SELECT count(*) FROM flight_schd WHERE operation_day = '" DAY "'");
    int64_t day_flights = strtoll (flights, NULL, 10);
    assert_true (day_flights >= 40);
    s_read (fx, TOPIC_MSG);
    //  The consumer that lost its copy reads from here on.
    size_t marker = fx->count;

    //  Refused without --yes; a dry run counts.
    s_ctl (fx, 1, &out, "republish", "--day", DAY, NULL);
    assert_non_null (strstr (out, "--yes"));
    free (out);
    s_ctl (fx, 1, &out, "republish", "--day", "2021-02-30", "--yes", NULL);
    assert_non_null (strstr (out, "YYYY-MM-DD"));
    free (out);
    s_ctl (fx, 1, &out, "republish", "--flid", "999999999", "--yes", NULL);
    assert_non_null (strstr (out, "no flight 999999999"));
    free (out);
    s_ctl (fx, 0, &out, "republish", "--day", DAY, "--dry-run", NULL);
    char *expected = zsys_sprintf ("dry run: %" PRId64 " flight(s) and 0 reference entries would be sent", day_flights);
    if (!strstr (out, expected))
        fail_msg ("dry run said: %s", out);
    free (expected);
    free (out);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM republish_job", "0");
    char *before = mx_testpg_value (fx->conn, "SELECT coalesce (max (event_id), 0) FROM msg_event");

    //  The job; a second one is refused while it runs.
    s_ctl (fx, 0, &out, "republish", "--day", DAY, "--yes", NULL);
    assert_non_null (strstr (out, "started"));
    free (out);
    s_ctl (fx, 1, &out, "republish", "--all", "--yes", NULL);
    assert_non_null (strstr (out, "one job at a time"));
    free (out);

    //  Killed in the middle.
    mx_testpg_wait (fx->conn, "SELECT flights_sent > 0 FROM republish_job");
    mx_testproc_signal (daemon, SIGKILL);
    int wstatus = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &wstatus), 0);
    assert_true (WIFSIGNALED (wstatus));
    mx_testproc_destroy (&daemon);
    char *progress = mx_testpg_value (fx->conn, "SELECT state || ' ' || flights_sent || ' of ' || flights_total"
                                                " || ' up to ' || cursor_flid FROM republish_job");
    char *sent_before = mx_testpg_value (fx->conn, "SELECT flights_sent FROM republish_job");
    print_message ("killed with the job at %s\n", progress);
    mx_testpg_expect (fx->conn, "SELECT state = 'RUNNING' AND flights_sent < flights_total"
                                " AND cursor_flid > 0 FROM republish_job", "t");
    free (progress);

    //  The next start goes on after the cursor.
    daemon = s_start (fx, "20");
    if (!mx_testproc_expect_stderr (daemon, "continues after a restart", WAIT_MS))
        fail_msg ("the job did not continue: %s", mx_testproc_stderr (daemon));
    s_wait_done (daemon);
    mx_testpg_expect (fx->conn, "SELECT state FROM republish_job", "DONE");
    const char *params [] = { before };
    //  Every flight of the day exactly once, at its current version.
    char *once = mx_testpg_value_params (fx->conn,
        "SELECT count(*) = (SELECT count(*) FROM flight_schd WHERE operation_day = '" DAY "')"
        "   AND bool_and (n = 1 AND version = current)"
        "  FROM (SELECT e.flid, count(*) AS n, max (e.state_version) AS version, max (f.state_version) AS current"
        "          FROM msg_event e JOIN flight_schd f USING (flid)"
        "         WHERE e.event_id > $1::bigint AND e.target = 'KAFKA:schd' GROUP BY e.flid) r", 1, params);
    assert_string_equal (once, "t");
    free (once);
    mx_testpg_expect (fx->conn, "SELECT flights_sent = flights_total FROM republish_job", "t");
    //  This life of msgxd counted what it sent after the restart.
    assert_int_equal (s_metric (fx, "msgx_republish_events_total{target=\"KAFKA:schd\"}"),
                      day_flights - strtoll (sent_before, NULL, 10));
    assert_int_equal (s_metric (fx, "msgx_republish_remaining"), 0);
    free (sent_before);
    s_ctl (fx, 0, &out, "status", NULL);
    if (!strstr (out, "republish   job ") || !strstr (out, " DONE (day " DAY ")"))
        fail_msg ("status says: %s", out);
    free (out);

    //  The state topic after the marker is the day's compacted view.
    mx_testdaemon_wait_processed (fx->conn, fx->mb, true);
    s_read (fx, TOPIC_MSG);
    zhashx_t *view = s_compacted (fx, TOPIC_SCHD, marker);
    assert_int_equal ((int64_t) zhashx_size (view), day_flights);
    int64_t *live = calloc (zhashx_size (view) + 1, sizeof *live);
    size_t lives = 0;
    for (const mx_testkafka_record_t *record = zhashx_first (view); record; record = zhashx_next (view))
        if (record->value) {
            json_t *doc = json_loads (record->value, 0, NULL);
            assert_non_null (doc);
            assert_int_equal (json_integer_value (json_object_get (doc, "state_version")), record->version);
            assert_string_equal (json_string_value (json_object_get (doc, "operation_day")), DAY);
            json_decref (doc);
            live [lives++] = strtoll (record->key, NULL, 10) * 1000000 + record->version;
        }
    qsort (live, lives, sizeof *live, s_cmp_int64);
    zchunk_t *got = zchunk_new (NULL, 0);
    for (size_t i = 0; i < lives; i++) {
        char item [64];
        snprintf (item, sizeof item, "%s%" PRId64 ":%" PRId64, i ? "," : "", live [i] / 1000000, live [i] % 1000000);
        zchunk_extend (got, item, strlen (item));
    }
    zchunk_extend (got, "", 1);
    mx_testpg_expect (fx->conn, "SELECT coalesce (string_agg (flid || ':' || state_version, ',' ORDER BY flid), '')"
                                "  FROM flight_schd WHERE operation_day = '" DAY "' AND lifecycle = 'ACTIVE'",
                      (char *) zchunk_data (got));
    print_message ("%zu live flights of %" PRId64 " restored on the state topic\n", lives, day_flights);
    zchunk_destroy (&got);
    free (live);
    zhashx_destroy (&view);

    //  A job is cancelled between two steps; nothing is left running.
    s_ctl (fx, 1, &out, "republish", "--cancel", NULL);
    assert_non_null (strstr (out, "nothing to cancel"));
    free (out);
    s_ctl (fx, 0, &out, "republish", "--all", "--yes", NULL);
    free (out);
    s_ctl (fx, 0, &out, "republish", "--cancel", NULL);
    assert_non_null (strstr (out, "cancelled"));
    free (out);
    mx_testpg_expect (fx->conn, "SELECT state || ' ' || (flights_sent < flights_total)"
                                "  FROM republish_job ORDER BY job_id DESC LIMIT 1", "CANCELLED true");
    s_ctl (fx, 0, &out, "status", NULL);
    if (!strstr (out, " CANCELLED (all)"))
        fail_msg ("status says: %s", out);
    free (out);
    mx_testpg_expect (fx->conn, "SELECT string_agg (result, ',' ORDER BY id) FROM audit_log"
                                " WHERE action = 'republish'", "refused,dry-run,ok,refused,refused,ok,ok");
    free (flights);
    free (before);
    mx_testdaemon_stop (&daemon);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_reference_topic, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_republish_day, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
