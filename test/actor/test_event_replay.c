/*  Integration tests of msgxctl replay --events: dead-lettered outbox
    events sent again. Control runs in-process with the dispatcher and the
    schd-aggregator on real PostgreSQL, a Kafka mock cluster and the
    injected clock; the real msgxctl binary talks to its admin socket; a
    real consumer reads the topics back.

    The outage is brokers refusing every produce (INVALID_RECORD): what the
    producers hand over is never written, so whatever the consumer finds
    later came from the replay. (Partitions without a leader would not do:
    an exactly-once producer then cannot look at the topics and sends
    nothing, so nothing fails.) Waiting is on
    NOTIFYs from a trigger on msg_event, on msgxctl's exit and on the
    consumer's poll: never a sleep.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>

#include "mx_actor.h"
#include "mx_aggregator.h"
#include "mx_config.h"
#include "mx_control.h"
#include "mx_dispatcher.h"
#include "mx_testenv.h"
#include "mx_testevent.h"
#include "mx_testproc.h"

#define WAIT_MS 30000
#define T0 1767225600000LL      //  2026-01-01T00:00:00Z
#define PARTITIONS 3
#define TOPIC_MSG "msgx.flight.events"
#define TOPIC_SCHD "msgx.flight.state"
#define PRODUCE 0               //  Kafka protocol ApiKey of ProduceRequest

typedef mx_testkafka_record_t record_t;

typedef struct {
    mx_testpg_t *pg;
    mx_testkafka_t *kafka;
    mx_clock_t *clock;
    char *dir;
    char msgxctl [1024];
    PGconn *conn;               //  the test's own, LISTENing
    mx_config_t *configs [2];
    zactor_t *controls [2];
    mx_control_args_t args [2];
    rd_kafka_t *consumer;
    record_t *records;
    size_t record_count;
    int64_t next_msg_id;
} fixture_t;

static const mx_actor_def_t s_delivery_actors [] = {
    { "dispatcher", mx_dispatcher_actor, false },
    { "schd-aggregator", mx_aggregator_actor, false },
};

//  ---------------------------------------------------------------------
//  Database

static char *
s_value (fixture_t *fx, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

//  Test SQL with the test's own integer ids formatted in.
static char *
s_value (fixture_t *fx, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *sql = zsys_vprintf (fmt, args);
    va_end (args);
    char *value = mx_testpg_value (fx->conn, sql);
    free (sql);
    return value;
}

static void
s_expect (fixture_t *fx, const char *expected, const char *fmt, ...) __attribute__ ((format (printf, 3, 4)));

static void
s_expect (fixture_t *fx, const char *expected, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *sql = zsys_vprintf (fmt, args);
    va_end (args);
    mx_testpg_expect (fx->conn, sql, expected);
    free (sql);
}

static void
s_wait (fixture_t *fx, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
s_wait (fixture_t *fx, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *sql = zsys_vprintf (fmt, args);
    va_end (args);
    mx_testpg_wait (fx->conn, sql);
    free (sql);
}

static int64_t
s_int (fixture_t *fx, const char *sql)
{
    char *value = mx_testpg_value (fx->conn, sql);
    int64_t number = strtoll (value, NULL, 10);
    free (value);
    return number;
}

//  One outbox row as the processor writes it, for a message FLOP/UPD;
//  state other than PENDING for rows a test sets up as history.
static int64_t
s_event (fixture_t *fx, const char *target, int64_t flid, int64_t version, const char *state)
{
    char flid_text [24], version_text [24], msg_text [24], id_text [24];
    snprintf (flid_text, sizeof flid_text, "%" PRId64, flid);
    snprintf (version_text, sizeof version_text, "%" PRId64, version);
    int64_t msg_id = ++fx->next_msg_id;
    snprintf (msg_text, sizeof msg_text, "%" PRId64, msg_id);
    int64_t event_id = s_int (fx, "SELECT nextval (pg_get_serial_sequence ('msg_event', 'event_id'))");
    snprintf (id_text, sizeof id_text, "%" PRId64, event_id);
    char *payload = mx_testevent_payload (target, event_id, flid, version, msg_id, false);
    const char *proc [] = { msg_text };
    PGresult *res = PQexecParams (fx->conn, "INSERT INTO proc_state (msg_id, state, msg_type, msg_styp)"
                                            " VALUES ($1, 'SUCCEEDED', 'FLOP', 'UPD')", 1, NULL, proc, NULL, NULL, 0);
    if (PQresultStatus (res) != PGRES_COMMAND_OK)
        fail_msg ("insert proc_state: %s", PQerrorMessage (fx->conn));
    PQclear (res);
    const char *params [] = { target, flid_text, version_text, msg_text, payload, state, id_text };
    res = PQexecParams (fx->conn,
        "INSERT INTO msg_event (target, partition_key, event_type, flid, state_version, msg_id, payload, state,"
        " attempts, last_error, event_id)"
        " VALUES ($1, $2::text, 'UPSERT', $2::bigint, $3::bigint, $4::bigint, $5, $6,"
        "  CASE WHEN $6 = 'DEAD' THEN 2 ELSE 0 END, CASE WHEN $6 = 'DEAD' THEN 'Local: Message timed out' END,"
        "  $7::bigint)", 7, NULL, params, NULL, NULL, 0);
    if (PQresultStatus (res) != PGRES_COMMAND_OK)
        fail_msg ("insert event: %s", PQerrorMessage (fx->conn));
    PQclear (res);
    free (payload);
    return event_id;
}

//  ---------------------------------------------------------------------
//  Kafka

static void
s_leaders (fixture_t *fx, bool up)
{
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    const char *topics [] = { TOPIC_MSG, TOPIC_SCHD };
    for (int t = 0; t < 2; t++)
        for (int p = 0; p < PARTITIONS; p++)
            assert_int_equal (rd_kafka_mock_partition_set_leader (cluster, topics [t], p,
                                                                  up ? (p == 1 ? 2 : 1) : -1), 0);
}

//  Every produce refused (the brokers answer, so an exactly-once producer's
//  look at the topics succeeds and each delivery fails), or none any more.
static void
s_refuse_produce (fixture_t *fx, bool refuse)
{
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    if (!refuse) {
        rd_kafka_mock_clear_request_errors (cluster, PRODUCE);
        return;
    }
    rd_kafka_resp_err_t errors [64];
    for (size_t i = 0; i < sizeof errors / sizeof errors [0]; i++)
        errors [i] = RD_KAFKA_RESP_ERR_INVALID_RECORD;
    rd_kafka_mock_push_request_errors_array (cluster, PRODUCE, sizeof errors / sizeof errors [0], errors);
}

static void
s_consumer_start (fixture_t *fx)
{
    fx->consumer = mx_testkafka_consumer (fx->kafka, "mx-test-event-replay", TOPIC_MSG, TOPIC_SCHD, PARTITIONS);
}

//  Everything the brokers hold now, into fx->records.
static void
s_read_all (fixture_t *fx)
{
    mx_testkafka_read_all (fx->consumer, TOPIC_MSG, TOPIC_SCHD, PARTITIONS, WAIT_MS, &fx->records, &fx->record_count);
}

//  The one record of event_id on topic, checked against its outbox row:
//  key, value and every header as the first delivery would have had them.
static void
s_expect_record (fixture_t *fx, const char *topic, int64_t event_id)
{
    record_t *found = NULL;
    for (size_t i = 0; i < fx->record_count; i++)
        if (strcmp (fx->records [i].topic, topic) == 0 && fx->records [i].event_id == event_id) {
            if (found)
                fail_msg ("event %" PRId64 " twice on %s", event_id, topic);
            found = &fx->records [i];
        }
    if (!found)
        fail_msg ("event %" PRId64 " not on %s", event_id, topic);
    char *row = s_value (fx, "SELECT partition_key || '|' || payload || '|' || msg_id || '|' || state_version"
                             " || '|' || event_type || '|FLOP/UPD' FROM msg_event WHERE event_id = %" PRId64,
                         event_id);
    char *seen = zsys_sprintf ("%s|%s|%" PRId64 "|%" PRId64 "|%s|%s", found->key, found->value, found->msg_id,
                               found->version, found->event_type, found->source);
    assert_string_equal (seen, row);
    free (seen);
    free (row);
}

static size_t
s_count (fixture_t *fx, const char *topic)
{
    size_t count = 0;
    for (size_t i = 0; i < fx->record_count; i++)
        count += strcmp (fx->records [i].topic, topic) == 0;
    return count;
}

//  ---------------------------------------------------------------------
//  Fixture

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    assert_non_null (fx);
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    snprintf (fx->msgxctl, sizeof fx->msgxctl, "%s/cmd/msgxctl", build);
    fx->pg = mx_testpg_new ();
    fx->kafka = mx_testkafka_new (2);
    fx->clock = mx_clock_new_fake (T0);
    fx->dir = mx_testenv_tmpdir ();
    fx->conn = mx_testpg_connect_schema (fx->pg,
        "CREATE TABLE mx_test_log (seq bigserial PRIMARY KEY, event_id bigint, state text);"
        "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN"
        "  INSERT INTO mx_test_log (event_id, state) VALUES (NEW.event_id, NEW.state);"
        "  PERFORM pg_notify ('mx_test', '');"
        "  RETURN NEW;"
        " END $$;"
        "CREATE TRIGGER mx_test_watch AFTER UPDATE ON msg_event FOR EACH ROW EXECUTE FUNCTION mx_test_watch ();"
        "LISTEN mx_test;");
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    assert_int_equal (rd_kafka_mock_topic_create (cluster, TOPIC_MSG, PARTITIONS, 1), 0);
    assert_int_equal (rd_kafka_mock_topic_create (cluster, TOPIC_SCHD, PARTITIONS, 1), 0);
    s_leaders (fx, true);
    s_consumer_start (fx);
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    for (int i = 1; i >= 0; i--) {
        mx_actor_destroy (&fx->controls [i]);
        mx_config_destroy (&fx->configs [i]);
    }
    rd_kafka_consumer_close (fx->consumer);
    rd_kafka_destroy (fx->consumer);
    for (size_t i = 0; i < fx->record_count; i++) {
        mx_testkafka_record_free (&fx->records [i]);
    }
    free (fx->records);
    PQfinish (fx->conn);
    mx_clock_destroy (&fx->clock);
    mx_testkafka_destroy (&fx->kafka);
    mx_testpg_destroy (&fx->pg);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

//  Instance i: control with the dispatcher and the schd-aggregator, admin
//  on <dir>/<i>.sock. Instance 0 takes the instance lock; a second one
//  waits as the standby.
static void
s_instance_start (fixture_t *fx, int i)
{
    mx_config_t *config = mx_config_new_defaults ();
    char *endpoint = zsys_sprintf ("ipc://%s/%d.sock", fx->dir, i);
    const char *settings [][2] = {
        { "msgx.admin.endpoint", endpoint },
        { "msgx.pg.conninfo", mx_testpg_conninfo (fx->pg) },
        { "msgx.kafka.bootstrap-servers", mx_testkafka_bootstraps (fx->kafka) },
        { "msgx.pipeline.autostart", "true" },
        { "msgx.kafka.delivery-timeout", "2s" },
        { "msgx.delivery.max-attempts", "2" },
        { "msgx.delivery.backoff", "1s" },
        { "msgx.schd.flush-period", "3s" },
    };
    for (size_t k = 0; k < sizeof settings / sizeof settings [0]; k++)
        if (mx_config_set (config, settings [k][0], settings [k][1], NULL))
            fail_msg ("config %s", settings [k][0]);
    free (endpoint);
    zlist_t *errors = zlist_new ();
    if (mx_config_validate (config, errors))
        fail_msg ("config: %s", (char *) zlist_first (errors));
    zlist_destroy (&errors);
    fx->configs [i] = config;
    fx->args [i] = (mx_control_args_t) {
        config, fx->clock, s_delivery_actors, 2, "mock cluster", mx_testkafka_bootstraps (fx->kafka)
    };
    char *detail = NULL, *error = NULL;
    fx->controls [i] = mx_actor_start (mx_control_actor, &fx->args [i], 10000, &detail, &error);
    if (!fx->controls [i])
        fail_msg ("control %d: %s", i, error);
    free (detail);
}

//  msgxctl against instance i; returns its exit code. words ends with NULL.
static int
s_ctl (fixture_t *fx, int i, char **out, char **err, const char *const *words)
{
    const char *argv [16] = { fx->msgxctl, "--endpoint", fx->configs [i]->admin_endpoint };
    int count = 3;
    for (int k = 0; words [k]; k++)
        argv [count++] = words [k];
    argv [count] = NULL;
    char *ignored_out = NULL, *ignored_err = NULL;
    int code = mx_testproc_run (argv, NULL, WAIT_MS, out ? out : &ignored_out, err ? err : &ignored_err);
    free (ignored_out);
    free (ignored_err);
    return code;
}

//  Advances the clock until the condition holds; each step is one backoff
//  and one flush period, and is taken only once something moved, so a
//  round in flight is never hurried past its own deadline.
static void
s_drive_until (fixture_t *fx, const char *condition)
{
    for (int step = 0; step < 20; step++) {
        char *done = mx_testpg_value (fx->conn, condition);
        bool reached = strcmp (done, "t") == 0;
        free (done);
        if (reached)
            return;
        int64_t changes = s_int (fx, "SELECT count(*) FROM mx_test_log");
        mx_clock_advance (fx->clock, 3000);
        s_wait (fx, "SELECT count(*) > %" PRId64 " FROM mx_test_log", changes);
    }
    fail_msg ("never reached: %s", condition);
}

//  ---------------------------------------------------------------------
//  Tests

//  An outage longer than max-attempts: events go DEAD. Back up, a dry run
//  lists them and changes nothing; --yes sends them again, with their own
//  event ids and headers, the newest state of each flight only.
static void
test_dead_events_after_an_outage_are_delivered_again (void **state)
{
    fixture_t *fx = *state;
    s_refuse_produce (fx, true);
    int64_t m1 = s_event (fx, "KAFKA:msg", 101, 1, "PENDING");
    int64_t m2 = s_event (fx, "KAFKA:msg", 102, 1, "PENDING");
    int64_t s1 = s_event (fx, "KAFKA:schd", 201, 1, "PENDING");
    int64_t s2 = s_event (fx, "KAFKA:schd", 201, 2, "PENDING");
    int64_t s3 = s_event (fx, "KAFKA:schd", 202, 1, "PENDING");
    s_instance_start (fx, 0);
    //  The start-up sweep takes them; each fails twice (1s apart) and dies.
    s_drive_until (fx, "SELECT count(*) = 5 FROM msg_event WHERE state = 'DEAD'");
    s_expect (fx, "DEAD:2:- DEAD:2:- DEAD:0:S DEAD:2:- DEAD:2:-",
              "SELECT string_agg (state || ':' || attempts || ':' || CASE WHEN merged_into = %" PRId64 " THEN 'S'"
              " ELSE coalesce (merged_into::text, '-') END, ' ' ORDER BY event_id) FROM msg_event", s2);
    s_refuse_produce (fx, false);

    //  Dry run: listed, nothing changed.
    int64_t changes = s_int (fx, "SELECT count(*) FROM mx_test_log");
    char *out = NULL, *err = NULL;
    const char *dry [] = { "--json", "replay", "--events", "--all", "--dry-run", NULL };
    assert_int_equal (s_ctl (fx, 0, &out, &err, dry), 0);
    json_t *reply = json_loads (out, 0, NULL);
    assert_non_null (reply);
    assert_true (json_is_true (json_object_get (reply, "dry_run")));
    assert_int_equal (json_integer_value (json_object_get (reply, "moved")), 0);
    json_t *rows = json_object_get (reply, "rows");
    int64_t listed [] = { m1, m2, s2, s3 };
    assert_int_equal (json_array_size (rows), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *row = json_array_get (rows, i);
        assert_int_equal (json_integer_value (json_object_get (row, "event_id")), listed [i]);
        assert_true (json_is_null (json_object_get (row, "refused")));
        assert_int_equal (json_integer_value (json_object_get (row, "carries")), listed [i] == s2 ? 1 : 0);
    }
    json_decref (reply);
    free (out);
    free (err);
    assert_int_equal (s_int (fx, "SELECT count(*) FROM mx_test_log"), changes);
    s_expect (fx, "5", "SELECT count(*) FROM msg_event WHERE state = 'DEAD'");
    s_expect (fx, "dry-run", "SELECT string_agg (result, ',' ORDER BY id) FROM audit_log"
                             " WHERE action = 'replay-events' AND os_user IS NOT NULL");

    //  The table form says the same.
    const char *table [] = { "replay", "--events", "--all", "--dry-run", NULL };
    assert_int_equal (s_ctl (fx, 0, &out, &err, table), 0);
    assert_non_null (strstr (out, "(+1 older state of the flight)"));
    assert_non_null (strstr (out, "dry run: nothing moved"));
    free (out);
    free (err);

    //  For real: the dispatcher goes at once (the clock does not move)...
    const char *yes [] = { "replay", "--events", "--all", "--yes", NULL };
    assert_int_equal (s_ctl (fx, 0, &out, &err, yes), 0);
    assert_non_null (strstr (out, "5 event(s) back to PENDING"));
    free (out);
    free (err);
    s_wait (fx, "SELECT count(*) = 2 FROM msg_event WHERE state = 'SENT' AND event_id IN (%" PRId64 ", %" PRId64 ")",
            m1, m2);
    //  ... the aggregator at its next flush.
    s_drive_until (fx, "SELECT count(*) = 5 FROM msg_event WHERE state = 'SENT'");
    s_expect (fx, "0:true 0:true 0:true 0:true 0:true",
              "SELECT string_agg (attempts || ':' || (last_error LIKE 'replayed, was: %%'), ' ' ORDER BY event_id)"
              " FROM msg_event");
    char *merged = s_value (fx, "SELECT merged_into FROM msg_event WHERE event_id = %" PRId64, s1);
    assert_int_equal (strtoll (merged, NULL, 10), s2);
    free (merged);
    s_expect (fx, "dry-run,dry-run,ok", "SELECT string_agg (result, ',' ORDER BY id) FROM audit_log"
                                " WHERE action = 'replay-events'");
    char *target = s_value (fx, "SELECT target->>'event_ids' FROM audit_log WHERE result = 'ok'");
    char *expected = zsys_sprintf ("[%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]",
                                   m1, m2, s1, s2, s3);
    assert_string_equal (target, expected);
    free (target);
    free (expected);

    //  On the topics: each once, as it was; the older state of FLID 201 not.
    s_read_all (fx);
    assert_int_equal (s_count (fx, TOPIC_MSG), 2);
    assert_int_equal (s_count (fx, TOPIC_SCHD), 2);
    s_expect_record (fx, TOPIC_MSG, m1);
    s_expect_record (fx, TOPIC_MSG, m2);
    s_expect_record (fx, TOPIC_SCHD, s2);
    s_expect_record (fx, TOPIC_SCHD, s3);

    const char *dead [] = { "--json", "dead", "list", "--events", NULL };
    assert_int_equal (s_ctl (fx, 0, &out, &err, dead), 0);
    assert_non_null (strstr (out, "\"rows\": []"));
    free (out);
    free (err);
}

//  What cannot go is refused with the reason, and an id list is all or
//  nothing; --all leaves a superseded state where it is.
static void
test_events_that_cannot_go_are_refused (void **state)
{
    fixture_t *fx = *state;
    int64_t sent = s_event (fx, "KAFKA:msg", 101, 1, "SENT");
    int64_t dead = s_event (fx, "KAFKA:msg", 102, 1, "DEAD");
    //  FLID 301: a dead state merged into a newer dead one.
    int64_t older = s_event (fx, "KAFKA:schd", 301, 1, "DEAD");
    int64_t newest = s_event (fx, "KAFKA:schd", 301, 2, "DEAD");
    char *sql = zsys_sprintf ("UPDATE msg_event SET merged_into = %" PRId64 " WHERE event_id = %" PRId64,
                              newest, older);
    mx_testpg_exec (fx->conn, sql);
    free (sql);
    //  FLID 302: a dead state, then a later one delivered.
    int64_t stale = s_event (fx, "KAFKA:schd", 302, 1, "DEAD");
    int64_t later = s_event (fx, "KAFKA:schd", 302, 2, "SENT");
    s_instance_start (fx, 0);

    struct {
        const char *ids;
        const char *reason;
    } cases [] = {
        { NULL, "not DEAD: state SENT" },
        { "999999", "event 999999: no such event" },
        { NULL, "the newest state of FLID 301: replay that one" },
        { NULL, "a later state of FLID 302: sending this one would move the flight back" },
    };
    char ids [4][64];
    snprintf (ids [0], sizeof ids [0], "%" PRId64 ",%" PRId64, dead, sent);
    snprintf (ids [1], sizeof ids [1], "%s", cases [1].ids);
    snprintf (ids [2], sizeof ids [2], "%" PRId64, older);
    snprintf (ids [3], sizeof ids [3], "%" PRId64, stale);
    char *out = NULL, *err = NULL;
    int64_t changes = s_int (fx, "SELECT count(*) FROM mx_test_log");
    for (int i = 0; i < 4; i++) {
        const char *words [] = { "replay", "--events", "--ids", ids [i], "--yes", NULL };
        assert_int_equal (s_ctl (fx, 0, &out, &err, words), 1);
        if (!strstr (err, cases [i].reason))
            fail_msg ("--ids %s: '%s' does not say '%s'", ids [i], err, cases [i].reason);
        free (out);
        free (err);
    }
    assert_int_equal (s_int (fx, "SELECT count(*) FROM mx_test_log"), changes);
    s_expect (fx, "4", "SELECT count(*) FROM audit_log WHERE action = 'replay-events' AND result = 'refused'");

    //  Acting needs --yes; bad usage is exit 2.
    const char *no_yes [] = { "replay", "--events", "--all", NULL };
    assert_int_equal (s_ctl (fx, 0, &out, &err, no_yes), 1);
    assert_non_null (strstr (err, "add --yes"));
    free (out);
    free (err);
    const char *neither [] = { "replay", "--events", "--yes", NULL };
    assert_int_equal (s_ctl (fx, 0, NULL, NULL, neither), 2);
    const char *both [] = { "replay", "--events", "--all", "--ids", "7", "--yes", NULL };
    assert_int_equal (s_ctl (fx, 0, NULL, NULL, both), 2);
    const char *bad [] = { "replay", "--events", "--ids", "7,x", "--yes", NULL };
    assert_int_equal (s_ctl (fx, 0, NULL, NULL, bad), 2);

    //  --all: the dead KAFKA:msg event and FLID 301 (with its older state);
    //  FLID 302's dead state is listed with why it stays.
    const char *all [] = { "--json", "replay", "--events", "--all", "--yes", NULL };
    assert_int_equal (s_ctl (fx, 0, &out, &err, all), 0);
    json_t *reply = json_loads (out, 0, NULL);
    assert_non_null (reply);
    assert_int_equal (json_integer_value (json_object_get (reply, "moved")), 3);
    json_t *rows = json_object_get (reply, "rows");
    assert_int_equal (json_array_size (rows), 3);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (rows, 0), "event_id")), dead);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (rows, 1), "event_id")), newest);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (rows, 2), "event_id")), stale);
    assert_non_null (strstr (json_string_value (json_object_get (json_array_get (rows, 2), "refused")),
                             "superseded by event"));
    json_decref (reply);
    free (out);
    free (err);
    s_wait (fx, "SELECT state = 'SENT' FROM msg_event WHERE event_id = %" PRId64, dead);
    char *condition = zsys_sprintf ("SELECT state = 'SENT' AND merged_into = %" PRId64 " FROM msg_event"
                                    " WHERE event_id = %" PRId64, newest, older);
    s_drive_until (fx, condition);
    free (condition);
    s_expect (fx, "DEAD", "SELECT state FROM msg_event WHERE event_id = %" PRId64, stale);
    s_expect (fx, "SENT", "SELECT state FROM msg_event WHERE event_id = %" PRId64, later);
}

//  A reference entry's topic is compacted too: a replay goes by its key
//  (LIST:KEY), never sending an entry older than one already out.
static int64_t
s_ref_event (fixture_t *fx, const char *key, int64_t version, const char *state)
{
    int64_t event_id = s_event (fx, "KAFKA:ref", 0, version, state);
    char id_text [24];
    snprintf (id_text, sizeof id_text, "%" PRId64, event_id);
    const char *params [] = { key, id_text };
    PGresult *res = PQexecParams (fx->conn, "UPDATE msg_event SET partition_key = $1 WHERE event_id = $2::bigint",
                                  2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus (res) != PGRES_COMMAND_OK)
        fail_msg ("update event: %s", PQerrorMessage (fx->conn));
    PQclear (res);
    return event_id;
}

static void
test_reference_entries_replay_by_key (void **state)
{
    fixture_t *fx = *state;
    int64_t stale = s_ref_event (fx, "AIRL:CA", 1, "DEAD");
    s_ref_event (fx, "AIRL:CA", 2, "SENT");
    int64_t older = s_ref_event (fx, "AIRL:MU", 1, "DEAD");
    int64_t newest = s_ref_event (fx, "AIRL:MU", 2, "DEAD");
    int64_t alone = s_ref_event (fx, "AIRL:FM", 1, "DEAD");
    s_instance_start (fx, 0);

    struct {
        int64_t id;
        const char *reason;
    } cases [] = {
        { stale, "a later state of key AIRL:CA: sending this one would move the entry back" },
        { older, "the newest state of key AIRL:MU: replay that one" },
    };
    char *out = NULL, *err = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char ids [24];
        snprintf (ids, sizeof ids, "%" PRId64, cases [i].id);
        const char *words [] = { "replay", "--events", "--ids", ids, "--yes", NULL };
        assert_int_equal (s_ctl (fx, 0, &out, &err, words), 1);
        if (!strstr (err, cases [i].reason))
            fail_msg ("--ids %s: '%s' does not say '%s'", ids, err, cases [i].reason);
        free (out);
        free (err);
    }

    //  --all would send AIRL:MU's newest (carrying its older state) and
    //  AIRL:FM, and leaves AIRL:CA's stale entry where it is.
    const char *all [] = { "--json", "replay", "--events", "--all", "--dry-run", NULL };
    assert_int_equal (s_ctl (fx, 0, &out, &err, all), 0);
    json_t *reply = json_loads (out, 0, NULL);
    assert_non_null (reply);
    json_t *rows = json_object_get (reply, "rows");
    assert_int_equal (json_array_size (rows), 3);
    json_t *first = json_array_get (rows, 0), *second = json_array_get (rows, 1), *third = json_array_get (rows, 2);
    assert_int_equal (json_integer_value (json_object_get (first, "event_id")), stale);
    assert_non_null (strstr (json_string_value (json_object_get (first, "refused")), "superseded by event"));
    assert_int_equal (json_integer_value (json_object_get (second, "event_id")), newest);
    assert_true (json_is_null (json_object_get (second, "refused")));
    assert_int_equal (json_integer_value (json_object_get (second, "carries")), 1);
    assert_int_equal (json_integer_value (json_object_get (third, "event_id")), alone);
    assert_true (json_is_null (json_object_get (third, "refused")));
    json_decref (reply);
    free (out);
    free (err);
    s_expect (fx, "DEAD", "SELECT state FROM msg_event WHERE event_id = %" PRId64, newest);
}

//  Only the active instance replays.
static void
test_a_standby_refuses (void **state)
{
    fixture_t *fx = *state;
    int64_t dead = s_event (fx, "KAFKA:msg", 102, 1, "DEAD");
    s_instance_start (fx, 0);
    //  START_OK comes before the lock attempt, a status reply after it:
    //  instance 0 holds the lock before instance 1 tries.
    char *out = NULL, *err = NULL;
    const char *status [] = { "--json", "status", NULL };
    assert_int_equal (s_ctl (fx, 0, &out, &err, status), 0);
    assert_non_null (strstr (out, "\"role\": \"active\""));
    free (out);
    free (err);
    s_instance_start (fx, 1);
    assert_int_equal (s_ctl (fx, 1, &out, &err, status), 0);
    assert_non_null (strstr (out, "\"role\": \"standby\""));
    free (out);
    free (err);
    const char *yes [] = { "replay", "--events", "--all", "--yes", NULL };
    assert_int_equal (s_ctl (fx, 1, &out, &err, yes), 1);
    assert_non_null (strstr (err, "not active"));
    free (out);
    free (err);
    s_expect (fx, "DEAD", "SELECT state FROM msg_event WHERE event_id = %" PRId64, dead);
    //  The active one does it.
    assert_int_equal (s_ctl (fx, 0, NULL, NULL, yes), 0);
    s_wait (fx, "SELECT state = 'SENT' FROM msg_event WHERE event_id = %" PRId64, dead);
}

int
main (void)
{
    zsys_handler_set (NULL);
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_dead_events_after_an_outage_are_delivered_again, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_events_that_cannot_go_are_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_reference_entries_replay_by_key, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_a_standby_refuses, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
