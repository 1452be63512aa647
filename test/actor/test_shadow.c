/*  A shadow instance (msgx.shadow) beside the live system, on real
    PostgreSQL and MariaDB and a Kafka mock cluster reached over TCP: a
    generated day goes through the whole pipeline, the shared mailbox is
    byte for byte what it was (checksums), the production topics stay
    empty and the suffixed topics get the events. With publish = false no
    topic gets anything. A shadow configuration that would publish to the
    production topics is refused.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <mysql.h>

#include "mx_actor.h"
#include "mx_aggregator.h"
#include "mx_backfill_actor.h"
#include "mx_config.h"
#include "mx_control.h"
#include "mx_dispatcher.h"
#include "mx_gen.h"
#include "mx_ingress.h"
#include "mx_processor.h"
#include "mx_pump.h"
#include "mx_requests_actor.h"
#include "mx_testactor.h"
#include "mx_testenv.h"

#define T0 1611360000000LL      //  2021-01-23T00:00:00Z, the generated day
#define TOPIC_MSG "msgx.flight.events"
#define TOPIC_SCHD "msgx.flight.state"
#define WAIT_MS 30000

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    mx_testkafka_t *kafka;
    char *dir;
    mx_clock_t *clock;
    mx_config_t *config;
    PGconn *conn;               //  the test's own, LISTENing
    zactor_t *control;
    mx_control_args_t args;
    size_t messages;
} fixture_t;

static const char *s_watch_sql =
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify ('mx_test', TG_TABLE_NAME); RETURN NULL; END $$;"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON proc_state"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON msg_event"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

static const mx_actor_def_t s_pipeline [] = {
    { "processor", mx_processor_actor, true },
    { "pump", mx_pump_actor, true },
    { "ingress", mx_ingress_actor, true },
    { "requests", mx_requests_actor, true },
    { "backfill", mx_backfill_actor, true },
    { "dispatcher", mx_dispatcher_actor, false },
    { "schd-aggregator", mx_aggregator_actor, false },
};

//  A small generated day in the mailbox: a schedule, then updates.
static size_t
s_fill_mailbox (fixture_t *fx)
{
    mx_gen_options_t opts;
    mx_gen_options_init (&opts);
    opts.seed = 20;
    opts.flights = 6;
    opts.updates = 40;
    opts.day = "2021-01-23";
    mx_gen_t *gen = mx_gen_new (&opts);
    assert_non_null (gen);
    size_t count = 0;
    char *text;
    while ((text = mx_gen_next (gen, NULL))) {
        count++;
        assert_int_equal (mx_testmb_insert (fx->mb, (int64_t) count, text, T0), (int64_t) count);
        free (text);
    }
    mx_gen_destroy (&gen);
    return count;
}

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    fx->pg = mx_testactor_pg (&fx->conn);
    fx->mb = mx_testmb_new ();
    fx->kafka = mx_testkafka_new (1);
    fx->dir = mx_testenv_tmpdir ();
    fx->clock = mx_clock_new_fake (T0);
    mx_testpg_exec (fx->conn, s_watch_sql);

    //  The production topics exist (the live system writes them), and the
    //  shadow ones beside them.
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    const char *topics [] = { TOPIC_MSG, TOPIC_SCHD, TOPIC_MSG ".shadow", TOPIC_SCHD ".shadow" };
    for (size_t t = 0; t < 4; t++)
        assert_int_equal (rd_kafka_mock_topic_create (cluster, topics [t], 1, 1), 0);

    mx_config_t *config = mx_testactor_config (fx->pg);
    char endpoint [512];
    snprintf (endpoint, sizeof endpoint, "ipc://%s/admin.sock", fx->dir);
    mx_testactor_set (config, "msgx.admin.endpoint", endpoint);
    mx_testactor_set (config, "msgx.pipeline.autostart", "true");
    mx_testactor_set (config, "msgx.kafka.bootstrap-servers", mx_testkafka_bootstraps (fx->kafka));
    mx_testactor_set (config, "msgx.kafka.topic.msg", TOPIC_MSG);
    mx_testactor_set (config, "msgx.kafka.topic.schd", TOPIC_SCHD);
    mx_testactor_set (config, "msgx.schd.flush-period", "1s");
    mx_testactor_set (config, "msgx.operation-day.zone", "UTC");
    mx_testactor_set (config, "msgx.shadow", "true");
    mx_testmb_configure (fx->mb, config, "+00:00");
    fx->config = config;
    fx->messages = s_fill_mailbox (fx);
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_actor_destroy (&fx->control);
    mx_testactor_release (&fx->conn, &fx->config, &fx->clock, &fx->pg);
    mx_testkafka_destroy (&fx->kafka);
    mx_testmb_destroy (&fx->mb);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

//  Checksums and row counts of both shared tables.
static char *
s_mailbox_checksum (fixture_t *fx)
{
    MYSQL *conn = mx_testmb_connect (fx->mb);
    assert_non_null (conn);
    if (mysql_query (conn, "CHECKSUM TABLE CMINMSGS, COUTMSGS EXTENDED"))
        fail_msg ("checksum: %s", mysql_error (conn));
    MYSQL_RES *res = mysql_store_result (conn);
    assert_non_null (res);
    char *sum = strdup ("");
    MYSQL_ROW row;
    while ((row = mysql_fetch_row (res))) {
        char *next = zsys_sprintf ("%s %s=%s", sum, row [0], row [1] ? row [1] : "NULL");
        free (sum);
        sum = next;
    }
    mysql_free_result (res);
    mysql_close (conn);
    return sum;
}

//  Records a topic holds (high watermark of its one partition).
static int64_t
s_topic_records (fixture_t *fx, const char *topic)
{
    char errstr [256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    assert_int_equal (rd_kafka_conf_set (conf, "bootstrap.servers", mx_testkafka_bootstraps (fx->kafka), errstr,
                                         sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_t *client = rd_kafka_new (RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null (client);
    int64_t low = 0, high = 0;
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets (client, topic, 0, &low, &high, WAIT_MS);
    if (err)
        fail_msg ("watermarks of %s: %s", topic, rd_kafka_err2str (err));
    rd_kafka_destroy (client);
    return high;
}

static void
s_start (fixture_t *fx)
{
    fx->args = (mx_control_args_t) { fx->config, fx->clock, s_pipeline, sizeof s_pipeline / sizeof s_pipeline [0],
                                     "mock cluster", mx_testkafka_bootstraps (fx->kafka) };
    fx->control = mx_testactor_start (mx_control_actor, &fx->args, "control", NULL);
}

static char *
s_admin (fixture_t *fx, const char *verb, const char *args)
{
    zsock_t *req = zsock_new_req (fx->config->admin_endpoint);
    zstr_sendm (req, verb);
    zstr_send (req, args);
    zmq_pollitem_t item = { zsock_resolve (req), 0, ZMQ_POLLIN, 0 };
    assert_int_equal (zmq_poll (&item, 1, WAIT_MS), 1);
    char *verdict = NULL, *payload = NULL;
    zstr_recvx (req, &verdict, &payload, NULL);
    assert_string_equal (verdict, "OK");
    zstr_free (&verdict);
    zsock_destroy (&req);
    return payload;
}

//  Every message terminal; then, when published, every event sent.
static void
s_drain (fixture_t *fx, bool published)
{
    char condition [256];
    snprintf (condition, sizeof condition,
              "SELECT count(*) = %zu FROM proc_state WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')", fx->messages);
    mx_testpg_wait (fx->conn, condition);
    mx_testpg_expect (fx->conn, "SELECT count(*) > 0 FROM msg_event", "t");
    if (!published)
        return;
    //  The schd-aggregator flushes on the injected clock.
    mx_clock_advance (fx->clock, 2000);
    mx_testpg_wait (fx->conn, "SELECT NOT EXISTS (SELECT 1 FROM msg_event WHERE state = 'PENDING')");
}

static void
test_shadow_run_writes_nothing_shared_and_publishes_to_the_suffixed_topics (void **state)
{
    fixture_t *fx = *state;
    char *before = s_mailbox_checksum (fx);
    s_start (fx);
    s_drain (fx, true);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM msg_event WHERE state <> 'SENT'", "0");
    //  Nothing marked, nothing requested: the mailbox is what it was.
    char *after = s_mailbox_checksum (fx);
    assert_string_equal (before, after);
    free (before);
    free (after);
    //  Production topics empty; the shadow ones hold every event.
    assert_int_equal (s_topic_records (fx, TOPIC_MSG), 0);
    assert_int_equal (s_topic_records (fx, TOPIC_SCHD), 0);
    char *events = mx_testpg_value (fx->conn, "SELECT count(*) FROM msg_event WHERE target = 'KAFKA:msg'");
    assert_int_equal (s_topic_records (fx, TOPIC_MSG ".shadow"), atoll (events));
    free (events);
    assert_true (s_topic_records (fx, TOPIC_SCHD ".shadow") > 0);
    //  Status says shadow, and where the events go.
    char *status = s_admin (fx, "status", "{}");
    json_t *reply = json_loads (status, 0, NULL);
    assert_true (json_is_true (json_object_get (reply, "shadow")));
    assert_string_equal (json_string_value (json_object_get (json_object_get (reply, "topics"), "msg")),
                         TOPIC_MSG ".shadow");
    json_decref (reply);
    zstr_free (&status);
    mx_actor_destroy (&fx->control);
}

static void
test_shadow_without_publishing_writes_no_topic (void **state)
{
    fixture_t *fx = *state;
    mx_testactor_set (fx->config, "msgx.shadow-publish", "false");
    char *before = s_mailbox_checksum (fx);
    s_start (fx);
    s_drain (fx, false);
    mx_clock_advance (fx->clock, 2000);
    char *after = s_mailbox_checksum (fx);
    assert_string_equal (before, after);
    free (before);
    free (after);
    //  The events stay in this instance's outbox.
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM msg_event WHERE state <> 'PENDING'", "0");
    const char *topics [] = { TOPIC_MSG, TOPIC_SCHD, TOPIC_MSG ".shadow", TOPIC_SCHD ".shadow" };
    for (size_t t = 0; t < 4; t++)
        assert_int_equal (s_topic_records (fx, topics [t]), 0);
    char *status = s_admin (fx, "status", "{}");
    json_t *reply = json_loads (status, 0, NULL);
    assert_true (json_is_true (json_object_get (reply, "shadow")));
    assert_true (json_is_null (json_object_get (reply, "topics")));
    json_decref (reply);
    zstr_free (&status);
    mx_actor_destroy (&fx->control);
}

//  Without a suffix a publishing shadow would write the production topics.
static void
test_shadow_on_the_production_topics_is_refused (void **state)
{
    (void) state;
    mx_config_t *config = mx_config_new_defaults ();
    mx_testactor_set (config, "msgx.profile", "prod");
    mx_testactor_set (config, "msgx.kafka.bootstrap-servers", "127.0.0.1:9092");
    mx_testactor_set (config, "msgx.shadow", "true");
    mx_testactor_set (config, "msgx.shadow-topic-suffix", "");
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    assert_int_not_equal (mx_config_validate (config, errors), 0);
    bool named = false;
    for (char *line = zlist_first (errors); line; line = zlist_next (errors))
        named |= strstr (line, "msgx.shadow-topic-suffix") && strstr (line, "production topics");
    assert_true (named);
    zlist_destroy (&errors);
    //  Not publishing at all is a choice: accepted as far as shadow goes.
    mx_testactor_set (config, "msgx.shadow-publish", "false");
    errors = zlist_new ();
    zlist_autofree (errors);
    mx_config_validate (config, errors);
    for (char *line = zlist_first (errors); line; line = zlist_next (errors))
        assert_null (strstr (line, "msgx.shadow-topic-suffix"));
    zlist_destroy (&errors);
    //  Suffixed topics are the default.
    char buf [MX_CONFIG_TOPIC_BUFSIZE];
    mx_testactor_set (config, "msgx.shadow-topic-suffix", ".shadow");
    assert_string_equal (mx_config_topic (config, false, buf), "msgx.flight.events.shadow");
    assert_string_equal (mx_config_ref_topic (config, buf), "msgx.reference.shadow");
    mx_testactor_set (config, "msgx.shadow", "false");
    assert_string_equal (mx_config_topic (config, true, buf), "msgx.flight.state");
    assert_string_equal (mx_config_ref_topic (config, buf), "msgx.reference");
    mx_config_destroy (&config);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_shadow_run_writes_nothing_shared_and_publishes_to_the_suffixed_topics,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_shadow_without_publishing_writes_no_topic, s_setup, s_teardown),
        cmocka_unit_test (test_shadow_on_the_production_topics_is_refused),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
