/*  Integration tests of delivery to Kafka (SPEC §5): the dispatcher
    (KAFKA:msg) and the schd-aggregator (KAFKA:schd), run in-process on real
    PostgreSQL and a Kafka mock cluster of two brokers, with the injected
    clock. A real consumer reads both topics back.

    Waiting is on replies: database notifications (a trigger on msg_event
    NOTIFYs and logs every change with its transaction) and the consumer's
    poll. Reading "everything there is" means reading up to the high
    watermark of every partition, so counts are exact.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>

#include "mx_actor.h"
#include "mx_aggregator.h"
#include "mx_config.h"
#include "mx_delivery.h"
#include "mx_dispatcher.h"
#include "mx_metrics.h"
#include "mx_migrate.h"
#include "mx_testactor.h"
#include "mx_testenv.h"
#include "mx_testevent.h"

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
    mx_config_t *config;
    PGconn *conn;               //  the test's own connection, LISTENing
    rd_kafka_t *consumer;
    record_t *records;
    size_t record_count;
    int64_t next_msg_id;
    mx_actor_args_t args;
    zactor_t *actor;
} fixture_t;

static const char *s_watch_sql =
    "CREATE TABLE mx_test_log (seq bigserial PRIMARY KEY, event_id bigint, state text, attempts int,"
    " merged_into bigint, tx bigint DEFAULT txid_current ());"
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  IF TG_OP = 'UPDATE' THEN"
    "   INSERT INTO mx_test_log (event_id, state, attempts, merged_into)"
    "   VALUES (NEW.event_id, NEW.state, NEW.attempts, NEW.merged_into);"
    "  END IF;"
    "  PERFORM pg_notify ('mx_test', 'msg_event');"
    "  RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON msg_event FOR EACH ROW EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

//  ---------------------------------------------------------------------
//  Consumer

static void
s_consumer_start (fixture_t *fx)
{
    fx->consumer = mx_testkafka_consumer (fx->kafka, "mx-test-delivery", TOPIC_MSG, TOPIC_SCHD, PARTITIONS);
}

//  Everything the brokers hold now, into fx->records.
static void
s_read_all (fixture_t *fx)
{
    mx_testkafka_read_all (fx->consumer, TOPIC_MSG, TOPIC_SCHD, PARTITIONS, WAIT_MS, &fx->records, &fx->record_count);
}

static size_t
s_count (fixture_t *fx, const char *topic)
{
    size_t count = 0;
    for (size_t i = 0; i < fx->record_count; i++)
        if (strcmp (fx->records [i].topic, topic) == 0)
            count++;
    return count;
}

static size_t
s_count_event (fixture_t *fx, const char *topic, int64_t event_id)
{
    size_t count = 0;
    for (size_t i = 0; i < fx->record_count; i++)
        if (strcmp (fx->records [i].topic, topic) == 0 && fx->records [i].event_id == event_id)
            count++;
    return count;
}

//  What a consumer deduplicating on event id sees must be in order per
//  FLID: the first copy of each event comes after the first copies of every
//  earlier event of its flight; one key stays on one partition.
static void
s_check_order (fixture_t *fx, const char *topic)
{
    zhashx_t *last = zhashx_new ();         //  key -> last first-seen event id
    zhashx_t *partition = zhashx_new ();    //  key -> partition + 1
    zhashx_t *seen = zhashx_new ();         //  event id -> copy
    for (size_t i = 0; i < fx->record_count; i++) {
        record_t *record = &fx->records [i];
        if (strcmp (record->topic, topic) != 0)
            continue;
        assert_true (record->event_id > 0);
        intptr_t owner = (intptr_t) zhashx_lookup (partition, record->key);
        if (owner && owner != record->partition + 1)
            fail_msg ("%s: key %s on partitions %d and %d", topic, record->key, (int) owner - 1, record->partition);
        zhashx_update (partition, record->key, (void *) (intptr_t) (record->partition + 1));
        char id [32];
        snprintf (id, sizeof id, "%" PRId64, record->event_id);
        record_t *first = (record_t *) zhashx_lookup (seen, id);
        if (first) {
            //  A resend: the same event, byte for byte.
            assert_string_equal (first->key, record->key);
            assert_true ((!first->value && !record->value) || strcmp (first->value, record->value) == 0);
            continue;
        }
        zhashx_insert (seen, id, record);
        intptr_t before = (intptr_t) zhashx_lookup (last, record->key);
        if (before >= record->event_id)
            fail_msg ("%s: FLID %s: event %" PRId64 " after event %" PRId64, topic, record->key,
                      record->event_id, (int64_t) before);
        zhashx_update (last, record->key, (void *) (intptr_t) record->event_id);
    }
    zhashx_destroy (&last);
    zhashx_destroy (&partition);
    zhashx_destroy (&seen);
}

//  The partition librdkafka's default partitioner gives a key.
static int32_t
s_partition_of (int64_t flid)
{
    char key [32];
    snprintf (key, sizeof key, "%" PRId64, flid);
    return rd_kafka_msg_partitioner_consistent_random (NULL, key, strlen (key), PARTITIONS, NULL, NULL);
}

//  ---------------------------------------------------------------------
//  Database

static char *
s_value (fixture_t *fx, const char *sql)
{
    PGresult *res = PQexec (fx->conn, sql);
    if (PQresultStatus (res) != PGRES_TUPLES_OK)
        fail_msg ("%s: %s", sql, PQerrorMessage (fx->conn));
    char *value = strdup (PQntuples (res) && !PQgetisnull (res, 0, 0) ? PQgetvalue (res, 0, 0) : "");
    PQclear (res);
    return value;
}

static void
s_assert_value (fixture_t *fx, const char *sql, const char *expected)
{
    char *value = s_value (fx, sql);
    if (strcmp (value, expected) != 0)
        fail_msg ("%s\n  gave '%s', expected '%s'", sql, value, expected);
    free (value);
}

static int64_t
s_int (fixture_t *fx, const char *sql)
{
    char *value = s_value (fx, sql);
    int64_t number = strtoll (value, NULL, 10);
    free (value);
    return number;
}

static void
s_exec (fixture_t *fx, const char *sql, int count, const char *const *params)
{
    PGresult *res = PQexecParams (fx->conn, sql, count, NULL, params, NULL, NULL, 0);
    if (PQresultStatus (res) != PGRES_COMMAND_OK && PQresultStatus (res) != PGRES_TUPLES_OK)
        fail_msg ("%s: %s", sql, PQerrorMessage (fx->conn));
    PQclear (res);
}

//  One outbox row as the processor writes it, for a message FLOP/UPD (made
//  in proc_state), or made by a job when job is true (the row has no
//  msg_id; its document is still a message's: only the headers differ).
//  Returns its event id.
static int64_t
s_event_full (fixture_t *fx, const char *target, int64_t flid, int64_t version, const char *type, bool job)
{
    char flid_text [24], version_text [24], msg_text [24], id_text [24];
    snprintf (flid_text, sizeof flid_text, "%" PRId64, flid);
    snprintf (version_text, sizeof version_text, "%" PRId64, version);
    int64_t msg_id = job ? fx->next_msg_id + 1 : ++fx->next_msg_id;
    snprintf (msg_text, sizeof msg_text, "%" PRId64, msg_id);
    char *id = s_value (fx, "SELECT nextval (pg_get_serial_sequence ('msg_event', 'event_id'))");
    int64_t event_id = strtoll (id, NULL, 10);
    snprintf (id_text, sizeof id_text, "%" PRId64, event_id);
    free (id);
    char *payload = mx_testevent_payload (target, event_id, flid, version, msg_id, strcmp (type, "TOMBSTONE") == 0);
    if (!job) {
        const char *params [] = { msg_text };
        s_exec (fx, "INSERT INTO proc_state (msg_id, state, msg_type, msg_styp) VALUES ($1, 'SUCCEEDED', 'FLOP', 'UPD')",
                1, params);
    }
    const char *params [] = { target, flid_text, type, version_text, job ? NULL : msg_text, payload, id_text };
    s_exec (fx,
        "INSERT INTO msg_event (target, partition_key, event_type, flid, state_version, msg_id, payload, event_id)"
        " VALUES ($1, $2::text, $3, $2::bigint, $4::bigint, $5::bigint, $6, $7::bigint)", 7, params);
    free (payload);
    return event_id;
}

static int64_t
s_event (fixture_t *fx, const char *target, int64_t flid, int64_t version)
{
    return s_event_full (fx, target, flid, version, "UPSERT", false);
}

//  ---------------------------------------------------------------------
//  Fixture

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    fx->pg = mx_testpg_new ();
    fx->kafka = mx_testkafka_new (2);
    fx->clock = mx_clock_new_fake (T0);
    fx->conn = PQconnectdb (mx_testpg_conninfo (fx->pg));
    assert_int_equal (PQstatus (fx->conn), CONNECTION_OK);
    char *error = NULL;
    int applied = 0;
    if (mx_migrate_apply (fx->conn, &applied, &error))
        fail_msg ("migrations: %s", error);
    PGresult *res = PQexec (fx->conn, s_watch_sql);
    if (PQresultStatus (res) != PGRES_COMMAND_OK)
        fail_msg ("watch trigger: %s", PQerrorMessage (fx->conn));
    PQclear (res);

    //  Partitions 0 and 2 led by broker 1, partition 1 by broker 2.
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    const char *topics [] = { TOPIC_MSG, TOPIC_SCHD };
    for (int t = 0; t < 2; t++) {
        assert_int_equal (rd_kafka_mock_topic_create (cluster, topics [t], PARTITIONS, 1), 0);
        for (int p = 0; p < PARTITIONS; p++)
            assert_int_equal (rd_kafka_mock_partition_set_leader (cluster, topics [t], p, p == 1 ? 2 : 1), 0);
    }

    mx_config_t *config = mx_config_new_defaults ();
    const char *settings [][2] = {
        { "msgx.pg.conninfo", mx_testpg_conninfo (fx->pg) },
        { "msgx.kafka.bootstrap-servers", mx_testkafka_bootstraps (fx->kafka) },
        { "msgx.kafka.delivery-timeout", "2s" },
        { "msgx.delivery.max-attempts", "3" },
        { "msgx.delivery.backoff", "1s,5s" },
        { "msgx.pipeline.delivery-batch", "4" },
        { "msgx.pipeline.delivery-drain-rounds", "2" },
        { "msgx.schd.flush-period", "3s" },
        { "msgx.schd.flush-limit", "10" },
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings [0]; i++)
        if (mx_config_set (config, settings [i][0], settings [i][1], NULL))
            fail_msg ("config %s", settings [i][0]);
    zlist_t *errors = zlist_new ();
    if (mx_config_validate (config, errors))
        fail_msg ("config: %s", (char *) zlist_first (errors));
    zlist_destroy (&errors);
    fx->config = config;
    s_consumer_start (fx);
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_actor_destroy (&fx->actor);
    rd_kafka_consumer_close (fx->consumer);
    rd_kafka_destroy (fx->consumer);
    for (size_t i = 0; i < fx->record_count; i++) {
        mx_testkafka_record_free (&fx->records [i]);
    }
    free (fx->records);
    PQfinish (fx->conn);
    mx_config_destroy (&fx->config);
    mx_clock_destroy (&fx->clock);
    mx_testkafka_destroy (&fx->kafka);
    mx_testpg_destroy (&fx->pg);
    free (fx);
    return 0;
}

static void
s_start (fixture_t *fx, const char *name, zactor_fn *fn)
{
    fx->args = (mx_actor_args_t) {
        .name = name, .config = fx->config, .clock = fx->clock, .scope = "test-delivery",
        .kafka_bootstrap = mx_testkafka_bootstraps (fx->kafka)
    };
    fx->actor = mx_testactor_start (fn, &fx->args, name, NULL);
}

static void
s_wake (fixture_t *fx)
{
    mx_cmd_send (zactor_sock (fx->actor), MX_CMD_EVENTS_COMMITTED);
}

//  The cases that show what at-least-once delivery resends.
static void
s_at_least_once (fixture_t *fx)
{
    assert_int_equal (mx_config_set (fx->config, "msgx.delivery.semantics", "at-least-once", NULL), 0);
}

//  Waits until the consumer has read every one of ids from topic (the
//  brokers hold them, acknowledged or not); appends to fx->records.
static void
s_wait_records (fixture_t *fx, const char *topic, const int64_t *ids, size_t count)
{
    int64_t deadline = zclock_mono () + WAIT_MS;
    while (true) {
        size_t seen = 0;
        for (size_t i = 0; i < count; i++)
            seen += s_count_event (fx, topic, ids [i]) > 0;
        if (seen == count)
            return;
        if (zclock_mono () > deadline)
            fail_msg ("%zu of %zu records on %s within %d ms", seen, count, topic, WAIT_MS);
        record_t record;
        if (mx_testkafka_poll (fx->consumer, 500, &record))
            mx_testkafka_records_add (&fx->records, &fx->record_count, &record);
    }
}

//  Two FLIDs from base on, one led by each broker (partition 1 is broker 2's).
static void
s_flids_on_both_brokers (int64_t base, int64_t *on_one, int64_t *on_two)
{
    *on_one = *on_two = 0;
    for (int64_t flid = base; flid < base + 100 && (!*on_one || !*on_two); flid++) {
        if (s_partition_of (flid) == 1 && !*on_two)
            *on_two = flid;
        if (s_partition_of (flid) != 1 && !*on_one)
            *on_one = flid;
    }
    assert_true (*on_one && *on_two);
}

//  The next produce answer of each broker is held back for a minute: the
//  brokers write what they get, the producer hears nothing.
static void
s_stall_answers (fixture_t *fx)
{
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    for (int32_t broker = 1; broker <= 2; broker++)
        assert_int_equal (rd_kafka_mock_broker_push_request_error_rtts (cluster, broker, PRODUCE, 1,
                                                                        RD_KAFKA_RESP_ERR_NO_ERROR, 60000), 0);
}

//  ---------------------------------------------------------------------
//  Dispatcher

static void
test_dispatcher_delivers_in_event_id_order_with_key_and_headers (void **state)
{
    fixture_t *fx = *state;
    //  Three flights, interleaved; a job-made event; a KAFKA:msg tombstone
    //  (a document saying DELETED, not a null value).
    for (int version = 1; version <= 3; version++)
        for (int64_t flid = 101; flid <= 103; flid++)
            s_event (fx, "KAFKA:msg", flid, version);
    int64_t job = s_event_full (fx, "KAFKA:msg", 102, 4, "TOMBSTONE", true);
    int64_t tombstone = s_event_full (fx, "KAFKA:msg", 101, 4, "TOMBSTONE", false);
    //  Start-up sweep: what an earlier run left PENDING goes at once, two
    //  batches of 4 (delivery-drain-rounds = 2); the rest at the next
    //  wake-up, here the sweep one poll-interval later.
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 8 FROM msg_event WHERE state = 'SENT'");
    s_assert_value (fx, "SELECT string_agg (event_id::text, ',' ORDER BY event_id) FROM msg_event"
                        " WHERE state = 'PENDING'", "9,10,11");
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 11 FROM msg_event WHERE state = 'SENT'");
    s_assert_value (fx, "SELECT count(*) FILTER (WHERE sent_at = to_timestamp (1767225600)) || '/'"
                        " || count(*) FILTER (WHERE sent_at = to_timestamp (1767225601)) || '/' || max (attempts)"
                        " FROM msg_event", "8/3/0");
    s_read_all (fx);
    assert_int_equal (s_count (fx, TOPIC_MSG), 11);
    assert_int_equal (s_count (fx, TOPIC_SCHD), 0);
    for (size_t i = 0; i < fx->record_count; i++) {
        record_t *record = &fx->records [i];
        char sql [256];
        snprintf (sql, sizeof sql, "SELECT flid || '|' || state_version || '|' || event_type || '|' || payload"
                                   " FROM msg_event WHERE event_id = %" PRId64, record->event_id);
        char *row = s_value (fx, sql);
        char *expected = zsys_sprintf ("%s|%" PRId64 "|%s|%s", record->key, record->version,
                                       record->event_type, record->value);
        assert_string_equal (row, expected);
        free (expected);
        free (row);
        if (record->event_id == job) {
            assert_int_equal (record->msg_id, -1);
            assert_null (record->source);
        }
        else {
            assert_true (record->msg_id > 0);
            assert_string_equal (record->source, "FLOP/UPD");
        }
        if (record->event_id == tombstone) {
            assert_string_equal (record->event_type, "TOMBSTONE");
            assert_non_null (strstr (record->value, "\"lifecycle\":\"DELETED\""));
        }
    }
    //  Per partition the log is in event_id order (nothing failed: no copy).
    for (size_t i = 0; i < fx->record_count; i++)
        for (size_t k = i + 1; k < fx->record_count; k++)
            if (fx->records [i].partition == fx->records [k].partition)
                assert_true (fx->records [i].event_id < fx->records [k].event_id);
    s_check_order (fx, TOPIC_MSG);
    //  SENT in event_id order: never a later event in an earlier statement.
    s_assert_value (fx, "SELECT count(*) FROM mx_test_log a JOIN mx_test_log b ON a.event_id < b.event_id"
                        " WHERE a.state = 'SENT' AND b.state = 'SENT' AND a.tx > b.tx", "0");

    //  A wake-up delivers at once: the fake clock does not move.
    int64_t late = s_event (fx, "KAFKA:msg", 104, 1);
    s_wake (fx);
    char sql [128];
    snprintf (sql, sizeof sql, "SELECT state = 'SENT' FROM msg_event WHERE event_id = %" PRId64, late);
    mx_testpg_wait (fx->conn, sql);
    s_read_all (fx);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, late), 1);
}

//  The latency metric: from the ingress record of the message
//  (proc_state created_at) to the acknowledgement of its event, on the
//  injected clock; a job's event (no message) is not counted.
static uint64_t
s_sample (const char *body, const char *series)
{
    char *at = strstr (body, series);
    if (!at)
        fail_msg ("no sample %s in:\n%s", series, body);
    return strtoull (at + strlen (series), NULL, 10);
}

static void
test_dispatcher_counts_ingress_record_to_acknowledgement (void **state)
{
    fixture_t *fx = *state;
    const char *count = "msgx_delivery_latency_seconds_count{target=\"KAFKA:msg\"} ";
    const char *within_5ms = "msgx_delivery_latency_seconds_bucket{target=\"KAFKA:msg\",le=\"0.005\"} ";
    const char *within_7_5ms = "msgx_delivery_latency_seconds_bucket{target=\"KAFKA:msg\",le=\"0.0075\"} ";
    mx_delivery_register_metrics ("KAFKA:msg");
    char *before = mx_metrics_render ();
    //  Recorded by ingress 7 ms before the fake clock's now.
    s_event (fx, "KAFKA:msg", 101, 1);
    s_exec (fx, "UPDATE proc_state SET created_at = to_timestamp (1767225599.993)", 0, NULL);
    s_event_full (fx, "KAFKA:msg", 102, 1, "UPSERT", true);
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM msg_event WHERE state = 'SENT'");
    char *after = mx_metrics_render ();
    assert_int_equal (s_sample (after, count) - s_sample (before, count), 1);
    assert_int_equal (s_sample (after, within_5ms) - s_sample (before, within_5ms), 0);
    assert_int_equal (s_sample (after, within_7_5ms) - s_sample (before, within_7_5ms), 1);
    free (before);
    free (after);
}

//  The brokers write a batch but the acknowledgement never comes in time:
//  the events go again, with the same event ids, and nothing behind the
//  first is marked SENT before it.
static void
test_dispatcher_at_least_once_lost_acknowledgement_resends_same_event_ids (void **state)
{
    fixture_t *fx = *state;
    s_at_least_once (fx);
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    //  One delivery first, so the producer is ready when the answers stall.
    int64_t warm = s_event (fx, "KAFKA:msg", 200, 1);
    //  The start-up sweep may have run before the row was committed.
    s_wake (fx);
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT state = 'SENT' FROM msg_event WHERE event_id = %" PRId64, warm);
    mx_testpg_wait (fx->conn, sql);
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    //  The next produce answer of each broker comes after delivery-timeout (2s).
    for (int32_t broker = 1; broker <= 2; broker++)
        assert_int_equal (rd_kafka_mock_broker_push_request_error_rtts (cluster, broker, PRODUCE, 1,
                                                                        RD_KAFKA_RESP_ERR_NO_ERROR, 5000), 0);
    int64_t ids [4];
    for (int i = 0; i < 4; i++)
        ids [i] = s_event (fx, "KAFKA:msg", 201 + i % 2, 1 + i / 2);
    s_wake (fx);
    snprintf (sql, sizeof sql, "SELECT attempts = 1 FROM msg_event WHERE event_id = %" PRId64, ids [0]);
    mx_testpg_wait (fx->conn, sql);
    s_assert_value (fx, "SELECT string_agg (state || ':' || attempts, ' ' ORDER BY event_id) FROM msg_event",
                    "SENT:0 PENDING:1 PENDING:0 PENDING:0 PENDING:0");
    s_assert_value (fx, "SELECT next_attempt_at = to_timestamp (1767225601) FROM msg_event WHERE attempts = 1", "t");
    s_assert_value (fx, "SELECT last_error <> '' FROM msg_event WHERE attempts = 1", "t");
    //  Backing off: nothing moves until due.
    mx_clock_advance (fx->clock, 999);
    s_assert_value (fx, "SELECT count(*) FROM msg_event WHERE state = 'SENT'", "1");
    mx_clock_advance (fx->clock, 1);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 5 FROM msg_event WHERE state = 'SENT'");
    s_read_all (fx);
    //  The head was written although never acknowledged: it came twice,
    //  both copies alike (s_check_order compares them); so may the others.
    assert_int_equal (s_count_event (fx, TOPIC_MSG, ids [0]), 2);
    for (int i = 1; i < 4; i++)
        assert_in_range (s_count_event (fx, TOPIC_MSG, ids [i]), 1, 2);
    s_check_order (fx, TOPIC_MSG);
    //  Nothing after the head was SENT before it.
    snprintf (sql, sizeof sql, "SELECT count(*) FROM mx_test_log l, mx_test_log h WHERE h.event_id = %" PRId64
                               " AND h.state = 'SENT' AND l.state = 'SENT' AND l.event_id > h.event_id AND l.tx < h.tx", ids [0]);
    s_assert_value (fx, sql, "0");
}

//  Broker 2 refuses a produce: the events before the first one it leads
//  are SENT, that one backs off, everything after it waits (even what broker
//  1 acknowledged) and goes again in order (at-least-once).
static void
test_dispatcher_at_least_once_failed_batch_keeps_target_order (void **state)
{
    fixture_t *fx = *state;
    s_at_least_once (fx);
    //  Flights on broker 1 (partitions 0, 2) and on broker 2 (partition 1).
    int64_t on_one, on_two;
    s_flids_on_both_brokers (300, &on_one, &on_two);
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    assert_int_equal (rd_kafka_mock_broker_push_request_error_rtts (cluster, 2, PRODUCE, 1,
                                                                    RD_KAFKA_RESP_ERR_INVALID_RECORD, 0), 0);
    //  One batch (delivery-batch = 4): 1, 1, 2, 1 by leader. One
    //  transaction: the start-up sweep, running meanwhile, takes all four
    //  or none, never the first ones alone (d would then wait for c).
    s_exec (fx, "BEGIN", 0, NULL);
    int64_t a = s_event (fx, "KAFKA:msg", on_one, 1);
    int64_t b = s_event (fx, "KAFKA:msg", on_one, 2);
    int64_t c = s_event (fx, "KAFKA:msg", on_two, 1);
    int64_t d = s_event (fx, "KAFKA:msg", on_one, 3);
    s_exec (fx, "COMMIT", 0, NULL);
    s_wake (fx);
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT attempts = 1 FROM msg_event WHERE event_id = %" PRId64, c);
    mx_testpg_wait (fx->conn, sql);
    s_assert_value (fx, "SELECT string_agg (state || ':' || attempts, ' ' ORDER BY event_id) FROM msg_event",
                    "SENT:0 SENT:0 PENDING:1 PENDING:0");
    s_read_all (fx);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, c), 0);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, d), 1);
    //  Due: the rest goes in order; d twice (at-least-once), c once.
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 4 FROM msg_event WHERE state = 'SENT'");
    s_read_all (fx);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, a), 1);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, b), 1);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, c), 1);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, d), 2);
    s_check_order (fx, TOPIC_MSG);
}

//  A head that fails max-attempts times stays DEAD as the dead-letter
//  record; the target goes on behind it.
static void
test_dispatcher_exhausted_event_stays_dead (void **state)
{
    fixture_t *fx = *state;
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    rd_kafka_mock_push_request_errors (cluster, PRODUCE, 3, RD_KAFKA_RESP_ERR_INVALID_RECORD,
                                       RD_KAFKA_RESP_ERR_INVALID_RECORD, RD_KAFKA_RESP_ERR_INVALID_RECORD);
    int64_t head = s_event (fx, "KAFKA:msg", 401, 1);
    s_wake (fx);
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT attempts = 1 FROM msg_event WHERE event_id = %" PRId64, head);
    mx_testpg_wait (fx->conn, sql);
    //  Two more behind it wait for it.
    int64_t next = s_event (fx, "KAFKA:msg", 401, 2);
    int64_t other = s_event (fx, "KAFKA:msg", 402, 1);
    s_wake (fx);
    mx_clock_advance (fx->clock, 1000);                 //  backoff 1s
    snprintf (sql, sizeof sql, "SELECT attempts = 2 FROM msg_event WHERE event_id = %" PRId64, head);
    mx_testpg_wait (fx->conn, sql);
    s_assert_value (fx, "SELECT count(*) FROM msg_event WHERE state = 'SENT'", "0");
    mx_clock_advance (fx->clock, 5000);                 //  backoff 5s
    snprintf (sql, sizeof sql, "SELECT state = 'DEAD' FROM msg_event WHERE event_id = %" PRId64, head);
    mx_testpg_wait (fx->conn, sql);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM msg_event WHERE state = 'SENT'");
    snprintf (sql, sizeof sql, "SELECT attempts || ' ' || (next_attempt_at IS NULL) || ' ' || (sent_at IS NULL)"
                               " || ' ' || (last_error LIKE 'INVALID_RECORD: %%')"
                               " FROM msg_event WHERE event_id = %" PRId64, head);
    s_assert_value (fx, sql, "3 true true true");
    s_read_all (fx);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, head), 0);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, next), 1);
    assert_int_equal (s_count_event (fx, TOPIC_MSG, other), 1);
    s_check_order (fx, TOPIC_MSG);
}

//  All brokers down: deliveries time out and back off; back up, everything
//  arrives, nothing lost, in order.
static void
test_dispatcher_at_least_once_brokers_down_then_up_loses_nothing (void **state)
{
    fixture_t *fx = *state;
    s_at_least_once (fx);
    assert_int_equal (mx_config_set (fx->config, "msgx.delivery.max-attempts", "10", NULL), 0);
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    //  One delivery first, so the producer is connected when they go down.
    int64_t before = s_event (fx, "KAFKA:msg", 501, 1);
    s_wake (fx);
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT state = 'SENT' FROM msg_event WHERE event_id = %" PRId64, before);
    mx_testpg_wait (fx->conn, sql);
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    assert_int_equal (rd_kafka_mock_broker_set_down (cluster, -1), 0);
    int64_t ids [6];
    for (int i = 0; i < 6; i++)
        ids [i] = s_event (fx, "KAFKA:msg", 501 + i % 3, 2 + i / 3);
    s_wake (fx);
    snprintf (sql, sizeof sql, "SELECT attempts = 1 FROM msg_event WHERE event_id = %" PRId64, ids [0]);
    mx_testpg_wait (fx->conn, sql);
    s_assert_value (fx, "SELECT count(*) FROM msg_event WHERE state = 'SENT'", "1");
    assert_int_equal (rd_kafka_mock_broker_set_up (cluster, -1), 0);
    //  The producer reconnects at its own pace: retries follow the backoff
    //  until everything is through.
    while (s_int (fx, "SELECT count(*) FROM msg_event WHERE state = 'SENT'") < 7) {
        int64_t changes = s_int (fx, "SELECT count(*) FROM mx_test_log");
        assert_true (s_int (fx, "SELECT max(attempts) FROM msg_event") < 10);
        mx_clock_advance (fx->clock, 5000);
        snprintf (sql, sizeof sql, "SELECT count(*) > %" PRId64 " FROM mx_test_log", changes);
        mx_testpg_wait (fx->conn, sql);
    }
    s_read_all (fx);
    for (int i = 0; i < 6; i++)
        assert_true (s_count_event (fx, TOPIC_MSG, ids [i]) >= 1);
    s_check_order (fx, TOPIC_MSG);
    s_assert_value (fx, "SELECT count(*) FROM msg_event WHERE state <> 'SENT'", "0");
}

//  With the dispatcher started: one event delivered (the producer is
//  connected), then four events of two FLIDs (one per broker, from base
//  + 1 on) into ids, written by the brokers whose answers never come.
static void
s_stalled_batch (fixture_t *fx, int64_t base, int64_t ids [4], int64_t *one, int64_t *two)
{
    int64_t warm = s_event (fx, "KAFKA:msg", base, 1);
    //  The start-up sweep may have run before the row was committed.
    s_wake (fx);
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT state = 'SENT' FROM msg_event WHERE event_id = %" PRId64, warm);
    mx_testpg_wait (fx->conn, sql);
    s_flids_on_both_brokers (base + 1, one, two);
    s_stall_answers (fx);
    //  One transaction: a take woken late by the warm-up (its start-up
    //  sweep and its wake-up) sees all four or none, never a first one
    //  alone in a batch whose answers then never come.
    s_exec (fx, "BEGIN", 0, NULL);
    for (int i = 0; i < 4; i++)
        ids [i] = s_event (fx, "KAFKA:msg", i % 2 ? *two : *one, 1 + i / 2);
    s_exec (fx, "COMMIT", 0, NULL);
    s_wake (fx);
    s_wait_records (fx, TOPIC_MSG, ids, 4);
}

//  Exactly-once: the brokers wrote a batch whose acknowledgements never
//  came. The batch is given up (delivery-timeout), the producer replaced,
//  and the new one finds every record on its partition: marked SENT, not
//  sent again.
static void
test_dispatcher_exactly_once_lost_acknowledgement_sends_nothing_twice (void **state)
{
    fixture_t *fx = *state;
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    int64_t ids [4], one, two;
    s_stalled_batch (fx, 200, ids, &one, &two);
    char sql [256];
    //  delivery-timeout + linger, then the grace of the purge.
    mx_clock_advance (fx->clock, 2005);
    mx_clock_advance (fx->clock, 5000);
    snprintf (sql, sizeof sql, "SELECT attempts = 1 FROM msg_event WHERE event_id = %" PRId64, ids [0]);
    mx_testpg_wait (fx->conn, sql);
    s_assert_value (fx, "SELECT count(*) FROM msg_event WHERE state = 'SENT'", "1");
    //  Due: the new producer looks first.
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 5 FROM msg_event WHERE state = 'SENT'");
    s_read_all (fx);
    for (int i = 0; i < 4; i++)
        assert_int_equal (s_count_event (fx, TOPIC_MSG, ids [i]), 1);
    assert_int_equal (s_count (fx, TOPIC_MSG), 5);
    s_check_order (fx, TOPIC_MSG);
}

//  Exactly-once: broker 2 refuses a produce, which ends the producer
//  (gapless guarantee). What broker 1 wrote of the batch is found there;
//  the refused event goes once, after its backoff.
static void
test_dispatcher_exactly_once_failed_batch_sends_each_event_once (void **state)
{
    fixture_t *fx = *state;
    int64_t one, two;
    s_flids_on_both_brokers (300, &one, &two);
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    assert_int_equal (rd_kafka_mock_broker_push_request_error_rtts (cluster, 2, PRODUCE, 1,
                                                                    RD_KAFKA_RESP_ERR_INVALID_RECORD, 0), 0);
    int64_t ids [4];
    ids [0] = s_event (fx, "KAFKA:msg", one, 1);
    ids [1] = s_event (fx, "KAFKA:msg", one, 2);
    ids [2] = s_event (fx, "KAFKA:msg", two, 1);
    ids [3] = s_event (fx, "KAFKA:msg", one, 3);
    s_wake (fx);
    mx_testpg_wait (fx->conn, "SELECT max (attempts) = 1 FROM msg_event");
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 4 FROM msg_event WHERE state = 'SENT'");
    s_read_all (fx);
    for (int i = 0; i < 4; i++)
        assert_int_equal (s_count_event (fx, TOPIC_MSG, ids [i]), 1);
    s_check_order (fx, TOPIC_MSG);
}

//  Exactly-once: the dispatcher's SENT marks, committed without waiting
//  for the disk, were lost with a crash of PostgreSQL (the events read as
//  PENDING again although Kafka has them) and the crash ended the
//  dispatcher's session. Its new session looks at the topic before it
//  sends: the three are marked SENT, only the new event goes.
static void
test_dispatcher_exactly_once_new_session_looks_before_it_sends (void **state)
{
    fixture_t *fx = *state;
    int64_t one, two;
    s_flids_on_both_brokers (700, &one, &two);
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    int64_t ids [4];
    ids [0] = s_event (fx, "KAFKA:msg", one, 1);
    ids [1] = s_event (fx, "KAFKA:msg", two, 1);
    ids [2] = s_event (fx, "KAFKA:msg", one, 2);
    s_wake (fx);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 3 FROM msg_event WHERE state = 'SENT'");
    //  The marks lost and the session ended in one transaction, as in a
    //  crash: no round of the old session may see the events PENDING (a
    //  wake-up left from the first batch could run one in between), and
    //  none of a new session may see them SENT: the backend is gone up to
    //  100 ms before pg_terminate_backend returns, and a new session could
    //  look at the topic in between. The table's lock holds every reader
    //  until the marks are lost for good, as a crash of the server would.
    //  Returns once the backend is gone (or fails the test after 30 s).
    s_exec (fx, "BEGIN", 0, NULL);
    s_exec (fx, "LOCK TABLE msg_event IN ACCESS EXCLUSIVE MODE", 0, NULL);
    s_assert_value (fx, "WITH lost AS (UPDATE msg_event SET state = 'PENDING', sent_at = NULL RETURNING 1)"
                        " SELECT bool_and (pg_terminate_backend (pid, 30000)) FROM pg_stat_activity"
                        " WHERE application_name = 'msgxd-dispatcher' AND (SELECT count(*) FROM lost) = 3", "t");
    s_exec (fx, "COMMIT", 0, NULL);
    ids [3] = s_event (fx, "KAFKA:msg", two, 2);
    s_wake (fx);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 4 FROM msg_event WHERE state = 'SENT'");
    s_read_all (fx);
    for (int i = 0; i < 4; i++)
        assert_int_equal (s_count_event (fx, TOPIC_MSG, ids [i]), 1);
    assert_int_equal (s_count (fx, TOPIC_MSG), 4);
    s_check_order (fx, TOPIC_MSG);
}

//  An outbox and topics written at-least-once, left with records on the
//  wire whose events are still PENDING (the acknowledgements never came,
//  the dispatcher stopped); the dispatcher started again exactly-once
//  finds them, sends only what is missing: nothing lost, nothing twice.
static void
test_dispatcher_switch_to_exactly_once_loses_and_duplicates_nothing (void **state)
{
    fixture_t *fx = *state;
    s_at_least_once (fx);
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    int64_t ids [6], one, two;
    s_stalled_batch (fx, 600, ids, &one, &two);
    mx_actor_destroy (&fx->actor);
    s_assert_value (fx, "SELECT count(*) FROM msg_event WHERE state = 'PENDING'", "4");
    assert_int_equal (mx_config_set (fx->config, "msgx.delivery.semantics", "exactly-once", NULL), 0);
    ids [4] = s_event (fx, "KAFKA:msg", one, 3);
    ids [5] = s_event (fx, "KAFKA:msg", two, 3);
    s_start (fx, "dispatcher", mx_dispatcher_actor);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 7 FROM msg_event WHERE state = 'SENT'");
    s_read_all (fx);
    for (int i = 0; i < 6; i++)
        assert_int_equal (s_count_event (fx, TOPIC_MSG, ids [i]), 1);
    assert_int_equal (s_count (fx, TOPIC_MSG), 7);
    s_check_order (fx, TOPIC_MSG);
}

//  ---------------------------------------------------------------------
//  schd-aggregator

static void
test_aggregator_sends_the_newest_state_once_per_window (void **state)
{
    fixture_t *fx = *state;
    //  The start-up flush takes what an earlier run left.
    int64_t left = s_event (fx, "KAFKA:schd", 600, 1);
    s_start (fx, "schd-aggregator", mx_aggregator_actor);
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT state = 'SENT' FROM msg_event WHERE event_id = %" PRId64, left);
    mx_testpg_wait (fx->conn, sql);
    //  50 versions of one flight, committed in two transactions, each
    //  followed by a wake-up: neither flushes before the period is over.
    int64_t newest = 0, created = 0, deleted = 0;
    for (int half = 0; half < 2; half++) {
        s_exec (fx, "BEGIN", 0, NULL);
        for (int version = 1 + 25 * half; version <= 25 + 25 * half; version++)
            newest = s_event (fx, "KAFKA:schd", 601, version);
        if (half == 1) {
            //  A flight created and deleted in the same window.
            created = s_event (fx, "KAFKA:schd", 602, 1);
            deleted = s_event_full (fx, "KAFKA:schd", 602, 2, "TOMBSTONE", false);
        }
        s_exec (fx, "COMMIT", 0, NULL);
        s_wake (fx);
    }
    mx_clock_advance (fx->clock, 3000);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 53 FROM msg_event WHERE state = 'SENT'");
    s_read_all (fx);
    assert_int_equal (s_count (fx, TOPIC_SCHD), 3);
    assert_int_equal (s_count (fx, TOPIC_MSG), 0);
    for (size_t i = 0; i < fx->record_count; i++) {
        record_t *record = &fx->records [i];
        if (strcmp (record->key, "601") == 0) {
            assert_int_equal (record->event_id, newest);
            assert_int_equal (record->version, 50);
            assert_string_equal (record->event_type, "UPSERT");
            assert_string_equal (record->source, "FLOP/UPD");
            assert_non_null (strstr (record->value, "\"state_version\":50"));
        }
        else
        if (strcmp (record->key, "602") == 0) {
            assert_int_equal (record->event_id, deleted);
            assert_string_equal (record->event_type, "TOMBSTONE");
            assert_null (record->value);
        }
        else
            assert_int_equal (record->event_id, left);
    }
    snprintf (sql, sizeof sql, "SELECT count(*) FROM msg_event WHERE flid = 601 AND merged_into = %" PRId64, newest);
    s_assert_value (fx, sql, "49");
    snprintf (sql, sizeof sql, "SELECT merged_into IS NULL FROM msg_event WHERE event_id = %" PRId64, newest);
    s_assert_value (fx, sql, "t");
    snprintf (sql, sizeof sql, "SELECT merged_into FROM msg_event WHERE event_id = %" PRId64, created);
    assert_int_equal (s_int (fx, sql), deleted);
    //  The window's flush marked all of it in one statement.
    s_assert_value (fx, "SELECT count(DISTINCT tx) FROM mx_test_log WHERE state = 'SENT'", "2");
    s_check_order (fx, TOPIC_SCHD);
}

//  A backlog beyond flush-limit (10 here) does not wait for the period.
static void
test_aggregator_backlog_beyond_the_limit_flushes_at_once (void **state)
{
    fixture_t *fx = *state;
    for (int64_t flid = 801; flid <= 825; flid++)
        s_event (fx, "KAFKA:schd", flid, 1);
    s_start (fx, "schd-aggregator", mx_aggregator_actor);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 25 FROM msg_event WHERE state = 'SENT'");
    //  10 + 10 + 5, the flights waiting longest first; the clock never moved.
    s_assert_value (fx, "SELECT string_agg (n::text, ',' ORDER BY tx) FROM (SELECT tx, count(*) AS n,"
                        " min (event_id) AS first FROM mx_test_log WHERE state = 'SENT' GROUP BY tx) t",
                    "10,10,5");
    s_assert_value (fx, "SELECT bool_and (a.event_id < b.event_id) FROM mx_test_log a, mx_test_log b"
                        " WHERE a.tx < b.tx", "t");
    s_read_all (fx);
    assert_int_equal (s_count (fx, TOPIC_SCHD), 25);
}

//  A state Kafka refuses backs off on its own; a newer state of the flight
//  goes instead and carries the failed one; a state that keeps failing is
//  DEAD with the older states it stood for.
static void
test_aggregator_failure_backs_off_then_newer_state_or_dead (void **state)
{
    fixture_t *fx = *state;
    rd_kafka_mock_cluster_t *cluster = mx_testkafka_cluster (fx->kafka);
    //  One flight per broker-1 partition is enough: every produce fails once.
    rd_kafka_mock_push_request_errors (cluster, PRODUCE, 1, RD_KAFKA_RESP_ERR_INVALID_RECORD);
    //  Committed before the start, so the start-up flush takes it: had it
    //  come during that flush, the flush after it would fall a period
    //  later than this test's steps assume.
    int64_t failed = s_event (fx, "KAFKA:schd", 701, 1);
    s_start (fx, "schd-aggregator", mx_aggregator_actor);
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT attempts = 1 AND state = 'PENDING' FROM msg_event WHERE event_id = %" PRId64,
              failed);
    mx_testpg_wait (fx->conn, sql);
    int64_t newer = s_event (fx, "KAFKA:schd", 701, 2);
    mx_clock_advance (fx->clock, 3000);
    snprintf (sql, sizeof sql, "SELECT state = 'SENT' FROM msg_event WHERE event_id = %" PRId64, newer);
    mx_testpg_wait (fx->conn, sql);
    snprintf (sql, sizeof sql, "SELECT state || ' ' || merged_into FROM msg_event WHERE event_id = %" PRId64, failed);
    char expected [64];
    snprintf (expected, sizeof expected, "SENT %" PRId64, newer);
    s_assert_value (fx, sql, expected);

    //  Exhaustion: three failures (max-attempts = 3), 1s and 5s apart.
    rd_kafka_mock_push_request_errors (cluster, PRODUCE, 3, RD_KAFKA_RESP_ERR_INVALID_RECORD,
                                       RD_KAFKA_RESP_ERR_INVALID_RECORD, RD_KAFKA_RESP_ERR_INVALID_RECORD);
    int64_t old = s_event (fx, "KAFKA:schd", 702, 1);
    int64_t dying = s_event (fx, "KAFKA:schd", 702, 2);
    for (int attempt = 1; attempt <= 3; attempt++) {
        mx_clock_advance (fx->clock, attempt == 3 ? 6000 : 3000);
        char want [16], event [24];
        snprintf (want, sizeof want, "%d", attempt);
        snprintf (event, sizeof event, "%" PRId64, dying);
        const char *values [] = { want, event };
        mx_testpg_wait_params (fx->conn, "SELECT attempts = $1::int FROM msg_event WHERE event_id = $2::bigint",
                               2, values);
    }
    snprintf (sql, sizeof sql, "SELECT string_agg (state || ' ' || coalesce (merged_into::text, '-'), ',' ORDER BY event_id)"
                               " FROM msg_event WHERE flid = 702");
    snprintf (expected, sizeof expected, "DEAD %" PRId64 ",DEAD -", dying);
    s_assert_value (fx, sql, expected);
    //  A later state of the flight goes as usual.
    int64_t later = s_event (fx, "KAFKA:schd", 702, 3);
    mx_clock_advance (fx->clock, 3000);
    snprintf (sql, sizeof sql, "SELECT state = 'SENT' FROM msg_event WHERE event_id = %" PRId64, later);
    mx_testpg_wait (fx->conn, sql);
    s_read_all (fx);
    assert_int_equal (s_count_event (fx, TOPIC_SCHD, failed), 0);
    assert_int_equal (s_count_event (fx, TOPIC_SCHD, newer), 1);
    assert_int_equal (s_count_event (fx, TOPIC_SCHD, old), 0);
    assert_int_equal (s_count_event (fx, TOPIC_SCHD, dying), 0);
    assert_int_equal (s_count_event (fx, TOPIC_SCHD, later), 1);
    s_check_order (fx, TOPIC_SCHD);
}

int
main (void)
{
    zsys_handler_set (NULL);
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_dispatcher_delivers_in_event_id_order_with_key_and_headers,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dispatcher_counts_ingress_record_to_acknowledgement, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dispatcher_at_least_once_lost_acknowledgement_resends_same_event_ids,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dispatcher_at_least_once_failed_batch_keeps_target_order,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dispatcher_exhausted_event_stays_dead, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dispatcher_at_least_once_brokers_down_then_up_loses_nothing,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dispatcher_exactly_once_lost_acknowledgement_sends_nothing_twice,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dispatcher_exactly_once_failed_batch_sends_each_event_once,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dispatcher_exactly_once_new_session_looks_before_it_sends,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dispatcher_switch_to_exactly_once_loses_and_duplicates_nothing,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_aggregator_sends_the_newest_state_once_per_window,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_aggregator_backlog_beyond_the_limit_flushes_at_once,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_aggregator_failure_backs_off_then_newer_state_or_dead,
                                         s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
