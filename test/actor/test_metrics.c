/*  Integration tests of GET /health and GET /metrics: the metrics actor and
    the http actor run in-process against the test PostgreSQL (migrated), a
    test MariaDB mailbox and a Kafka mock cluster; requests go over plain
    sockets. The figures served are compared with what the rows say.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "mx_actor.h"
#include "mx_clock.h"
#include "mx_config.h"
#include "mx_http.h"
#include "mx_ingress.h"
#include "mx_metrics.h"
#include "mx_metrics_actor.h"
#include "mx_migrate.h"
#include "mx_pg.h"
#include "mx_testactor.h"
#include "mx_testenv.h"

//  2024-03-01T12:00:00Z: the fake clock's time.
#define NOW_MS 1709294400000LL
#define IO_TIMEOUT_S 20

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    mx_testkafka_t *kafka;
    PGconn *conn;
    mx_clock_t *clock;
    mx_config_t *config;
    char scope [32];
    mx_actor_args_t metrics_args;
    mx_actor_args_t http_args;
    zactor_t *metrics;
    zactor_t *http;
    int port;
} fixture_t;

typedef struct {
    int status;
    char *body;
} reply_t;

static void
s_set (mx_config_t *config, const char *key, const char *value)
{
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_set (config, key, value, errors))
        fail_msg ("config %s = %s: %s", key, value, (char *) zlist_first (errors));
    zlist_destroy (&errors);
}

static int
s_setup (void **state)
{
    static int scopes;
    fixture_t *fx = calloc (1, sizeof *fx);
    assert_non_null (fx);
    fx->pg = mx_testpg_new ();
    char *error = NULL;
    fx->conn = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test_metrics", 0, &error);
    if (!fx->conn || mx_migrate_apply (fx->conn, NULL, &error))
        fail_msg ("PostgreSQL set-up: %s", error);
    fx->mb = mx_testmb_new ();
    fx->kafka = mx_testkafka_new (1);
    fx->clock = mx_clock_new_fake (NOW_MS);
    fx->port = mx_testenv_free_port ();
    snprintf (fx->scope, sizeof fx->scope, "test-metrics-%d", ++scopes);

    mx_config_t *config = mx_config_new_defaults ();
    char text [64];
    s_set (config, "msgx.pg.conninfo", mx_testpg_conninfo (fx->pg));
    snprintf (text, sizeof text, "127.0.0.1:%d", fx->port);
    s_set (config, "msgx.http.bind", text);
    s_set (config, "msgx.health.backlog-cache-ttl-ms", "0");
    mx_testmb_configure (fx->mb, config, "+00:00");
    s_set (config, "mailbox.shared-mysql.connect-timeout", "2s");
    fx->config = config;
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_actor_destroy (&fx->http);
    mx_actor_destroy (&fx->metrics);
    mx_metrics_reset ();
    mx_config_destroy (&fx->config);
    mx_clock_destroy (&fx->clock);
    mx_testkafka_destroy (&fx->kafka);
    mx_testmb_destroy (&fx->mb);
    mx_pg_disconnect (&fx->conn);
    mx_testpg_destroy (&fx->pg);
    free (fx);
    return 0;
}

//  Starts the metrics actor (unless with_metrics is false), then http.
static void
s_start (fixture_t *fx, bool with_metrics)
{
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_validate (fx->config, errors))
        fail_msg ("config invalid: %s", (char *) zlist_first (errors));
    zlist_destroy (&errors);
    mx_actor_args_t args = { .config = fx->config, .clock = fx->clock, .scope = fx->scope,
                             .kafka_bootstrap = mx_testkafka_bootstraps (fx->kafka) };
    fx->metrics_args = args;
    fx->metrics_args.name = "metrics";
    fx->http_args = args;
    fx->http_args.name = "http";
    if (with_metrics)
        fx->metrics = mx_testactor_start (mx_metrics_actor, &fx->metrics_args, "metrics actor", NULL);
    fx->http = mx_testactor_start (mx_http_actor, &fx->http_args, "http actor", NULL);
}

static void
s_get (fixture_t *fx, const char *path, reply_t *reply)
{
    char *head = NULL;
    reply->status = mx_testhttp_get (fx->port, path, IO_TIMEOUT_S, &head, &reply->body);
    if (strstr (path, "metrics"))
        assert_non_null (strstr (head, "Content-Type: text/plain; version=0.0.4"));
    else
        assert_non_null (strstr (head, "Content-Type: application/json"));
    free (head);
}

static void
s_expect_sample (const char *body, const char *series, const char *expected)
{
    char buf [64];
    assert_string_equal (mx_testhttp_sample (body, series, buf, sizeof buf), expected);
}

//  Known rows: W = 5; 3 messages waiting (oldest received 60 s before
//  now), 1 mark owed (finished 120 s before now), 1 abandoned, one
//  released hole; outbox: 2 pending KAFKA:msg, 1 DEAD KAFKA:schd, 1 sent.
static void
s_seed (fixture_t *fx)
{
    mx_testpg_exec (fx->conn, "UPDATE inbox_cursor SET committed_up_to = 5");
    mx_testpg_exec (fx->conn,
        "INSERT INTO proc_state (msg_id, state, received_at) VALUES"
        " (3, 'PENDING', '2024-03-01 11:59:00+00'),"
        " (4, 'FAILED',  '2024-03-01 11:59:30+00'),"
        " (5, 'PENDING', NULL)");
    mx_testpg_exec (fx->conn,
        "INSERT INTO proc_state (msg_id, state, finished_at, backfill_next_at) VALUES"
        " (1, 'SUCCEEDED', '2024-03-01 11:58:00+00', '2024-03-01 11:58:00+00')");
    mx_testpg_exec (fx->conn,
        "INSERT INTO proc_state (msg_id, state, finished_at, backfill_next_at,"
        "                        backfill_abandoned_at, backfill_abandoned_reason) VALUES"
        " (2, 'DEAD', '2024-03-01 11:50:00+00', NULL, '2024-03-01 11:51:00+00', 'MISSING')");
    mx_testpg_exec (fx->conn,
        "INSERT INTO released_hole (id_from, id_to, released_at) VALUES (6, 6, now())");
    //  The oldest undelivered KAFKA:msg event was written 90 s before now.
    mx_testpg_exec (fx->conn,
        "INSERT INTO msg_event (target, partition_key, event_type, flid, state_version, state, created_at) VALUES"
        " ('KAFKA:msg', 'k', 'UPSERT', 1, 1, 'PENDING', '2024-03-01 11:58:30+00'),"
        " ('KAFKA:msg', 'k', 'UPSERT', 1, 2, 'PENDING', '2024-03-01 11:59:50+00'),"
        " ('KAFKA:msg', 'k', 'UPSERT', 1, 3, 'SENT', '2024-03-01 11:00:00+00'),"
        " ('KAFKA:schd', 'k', 'UPSERT', 1, 1, 'DEAD', '2024-03-01 11:00:00+00')");
    //  The highest mailbox ID is 9: the watermark lags by 4.
    mx_testmb_insert (fx->mb, 9, "<x/>", NOW_MS);
}

static void
test_values_match_the_database (void **state)
{
    fixture_t *fx = *state;
    s_seed (fx);
    s_start (fx, true);
    reply_t reply;
    s_get (fx, "/metrics", &reply);
    assert_int_equal (reply.status, 200);
    const char *body = reply.body;
    s_expect_sample (body, "msgx_pipeline_backlog_unfinished", "3");
    s_expect_sample (body, "msgx_pipeline_backlog_oldest_unprocessed_seconds", "60");
    s_expect_sample (body, "msgx_pipeline_backfill_unmarked_terminal", "1");
    s_expect_sample (body, "msgx_pipeline_backfill_abandoned", "1");
    s_expect_sample (body, "msgx_pipeline_backfill_oldest_unmarked_seconds", "120");
    s_expect_sample (body, "msgx_pipeline_watermark_lag", "4");
    s_expect_sample (body, "msgx_outbox_pending{target=\"KAFKA:msg\"}", "2");
    s_expect_sample (body, "msgx_outbox_dead{target=\"KAFKA:msg\"}", "0");
    s_expect_sample (body, "msgx_outbox_pending{target=\"KAFKA:schd\"}", "0");
    s_expect_sample (body, "msgx_outbox_dead{target=\"KAFKA:schd\"}", "1");
    s_expect_sample (body, "msgx_pipeline_hole_aged_out_total", "0");
    s_expect_sample (body, "msgx_ingress_failures_total{class=\"connect\"}", "0");
    s_expect_sample (body, "msgx_ingress_failures_total{class=\"lost\"}", "0");
    s_expect_sample (body, "msgx_ingress_failures_total{class=\"query\"}", "0");
    assert_null (strstr (body, "msgx_events_pending"));
    s_expect_sample (body, "msgx_events_delivery_lag_seconds{target=\"KAFKA:msg\"}", "90");
    s_expect_sample (body, "msgx_events_delivery_lag_seconds{target=\"KAFKA:schd\"}", "0");
    //  An http actor nobody tells its role serves as active and running.
    s_expect_sample (body, "msgx_instance_active", "1");
    s_expect_sample (body, "msgx_pipeline_paused", "0");
    assert_non_null (strstr (body, "# TYPE msgx_pipeline_backlog_unfinished gauge\n"));
    assert_non_null (strstr (body, "# TYPE msgx_processing_seconds histogram\n"));
    free (reply.body);

    //  A counter another actor increments shows on the next scrape.
    mx_metrics_add (mx_ingress_late_arrival (), 2);
    s_get (fx, "/metrics", &reply);
    s_expect_sample (reply.body, "msgx_pipeline_late_arrival_detected_total", "2");
    free (reply.body);

    s_get (fx, "/health", &reply);
    assert_int_equal (reply.status, 200);
    json_t *health = json_loads (reply.body, 0, NULL);
    assert_non_null (health);
    assert_string_equal (json_string_value (json_object_get (health, "status")), "ok");
    assert_string_equal (json_string_value (json_object_get (health, "role")), "active");
    json_t *deps = json_object_get (health, "dependencies");
    assert_true (json_is_true (json_object_get (json_object_get (deps, "postgresql"), "ok")));
    assert_true (json_is_true (json_object_get (json_object_get (deps, "mailbox"), "ok")));
    assert_true (json_is_true (json_object_get (json_object_get (deps, "kafka"), "ok")));
    json_t *backlog = json_object_get (health, "backlog");
    assert_int_equal (json_integer_value (json_object_get (backlog, "unfinished")), 3);
    assert_int_equal (json_integer_value (json_object_get (backlog, "watermark")), 5);
    assert_int_equal (json_integer_value (json_object_get (backlog, "mailbox_max_id")), 9);
    assert_int_equal (json_integer_value (json_object_get (backlog, "released_holes")), 1);
    json_decref (health);
    free (reply.body);
}

static void
test_mailbox_down (void **state)
{
    fixture_t *fx = *state;
    char text [16];
    snprintf (text, sizeof text, "%d", mx_testenv_free_port ());
    s_set (fx->config, "mailbox.shared-mysql.host", "127.0.0.1");
    s_set (fx->config, "mailbox.shared-mysql.port", text);
    s_start (fx, true);
    reply_t reply;
    s_get (fx, "/health", &reply);
    assert_int_equal (reply.status, 503);
    json_t *health = json_loads (reply.body, 0, NULL);
    assert_non_null (health);
    assert_string_equal (json_string_value (json_object_get (health, "status")), "degraded");
    json_t *deps = json_object_get (health, "dependencies");
    json_t *mailbox = json_object_get (deps, "mailbox");
    assert_true (json_is_false (json_object_get (mailbox, "ok")));
    assert_non_null (strstr (json_string_value (json_object_get (mailbox, "detail")), "mailbox unreachable"));
    //  Which dependency is down, by name; never its host, port or user.
    json_t *down = json_object_get (health, "down");
    assert_int_equal (json_array_size (down), 1);
    assert_string_equal (json_string_value (json_array_get (down, 0)), "mailbox");
    assert_null (strstr (reply.body, "127.0.0.1"));
    assert_null (strstr (reply.body, text));
    if (*fx->config->mailbox_shared_mysql_user)
        assert_null (strstr (reply.body, fx->config->mailbox_shared_mysql_user));
    assert_true (json_is_true (json_object_get (json_object_get (deps, "postgresql"), "ok")));
    //  The backlog is still known; only the lag needs the mailbox.
    json_t *backlog = json_object_get (health, "backlog");
    assert_int_equal (json_integer_value (json_object_get (backlog, "unfinished")), 0);
    assert_true (json_is_null (json_object_get (backlog, "watermark_lag")));
    json_decref (health);
    free (reply.body);

    s_get (fx, "/metrics", &reply);
    assert_int_equal (reply.status, 200);
    s_expect_sample (reply.body, "msgx_pipeline_watermark_lag", "NaN");
    s_expect_sample (reply.body, "msgx_pipeline_backlog_unfinished", "0");
    free (reply.body);
}

static void
test_postgresql_down (void **state)
{
    fixture_t *fx = *state;
    char conninfo [128];
    int port = mx_testenv_free_port ();
    snprintf (conninfo, sizeof conninfo, "host=127.0.0.1 port=%d user=postgres dbname=none connect_timeout=2",
              port);
    s_set (fx->config, "msgx.pg.conninfo", conninfo);
    s_start (fx, true);
    reply_t reply;
    s_get (fx, "/metrics", &reply);
    assert_int_equal (reply.status, 200);
    const char *body = reply.body;
    s_expect_sample (body, "msgx_pipeline_backlog_unfinished", "NaN");
    s_expect_sample (body, "msgx_pipeline_backlog_oldest_unprocessed_seconds", "NaN");
    s_expect_sample (body, "msgx_pipeline_backfill_unmarked_terminal", "NaN");
    s_expect_sample (body, "msgx_pipeline_backfill_abandoned", "NaN");
    s_expect_sample (body, "msgx_pipeline_backfill_oldest_unmarked_seconds", "NaN");
    s_expect_sample (body, "msgx_pipeline_watermark_lag", "NaN");
    s_expect_sample (body, "msgx_outbox_pending{target=\"KAFKA:msg\"}", "NaN");
    s_expect_sample (body, "msgx_outbox_dead{target=\"KAFKA:schd\"}", "NaN");
    s_expect_sample (body, "msgx_events_delivery_lag_seconds{target=\"KAFKA:msg\"}", "NaN");
    free (reply.body);

    s_get (fx, "/health", &reply);
    assert_int_equal (reply.status, 503);
    json_t *health = json_loads (reply.body, 0, NULL);
    assert_non_null (health);
    json_t *pg = json_object_get (json_object_get (health, "dependencies"), "postgresql");
    assert_true (json_is_false (json_object_get (pg, "ok")));
    json_t *backlog = json_object_get (health, "backlog");
    assert_true (json_is_null (json_object_get (backlog, "unfinished")));
    assert_non_null (json_string_value (json_object_get (backlog, "error")));
    assert_string_equal (json_string_value (json_array_get (json_object_get (health, "down"), 0)), "postgresql");
    //  Neither the server's address nor the driver's words.
    char port_text [16];
    snprintf (port_text, sizeof port_text, "%d", port);
    assert_null (strstr (reply.body, "127.0.0.1"));
    assert_null (strstr (reply.body, port_text));
    assert_null (strstr (reply.body, "user"));
    assert_null (strstr (reply.body, "connection to server"));
    json_decref (health);
    free (reply.body);
}

static void
test_cache_ttl (void **state)
{
    fixture_t *fx = *state;
    s_set (fx->config, "msgx.health.backlog-cache-ttl-ms", "30000");
    s_seed (fx);
    s_start (fx, true);
    reply_t reply;
    s_get (fx, "/metrics", &reply);
    s_expect_sample (reply.body, "msgx_pipeline_backlog_unfinished", "3");
    free (reply.body);

    mx_testpg_exec (fx->conn, "INSERT INTO proc_state (msg_id, state) VALUES (6, 'PENDING')");
    mx_clock_advance (fx->clock, 29999);
    s_get (fx, "/metrics", &reply);
    s_expect_sample (reply.body, "msgx_pipeline_backlog_unfinished", "3");
    free (reply.body);
    s_get (fx, "/health", &reply);
    json_t *health = json_loads (reply.body, 0, NULL);
    json_t *backlog = json_object_get (health, "backlog");
    assert_int_equal (json_integer_value (json_object_get (backlog, "unfinished")), 3);
    assert_int_equal (json_integer_value (json_object_get (backlog, "age_ms")), 29999);
    json_decref (health);
    free (reply.body);

    mx_clock_advance (fx->clock, 1);
    s_get (fx, "/metrics", &reply);
    s_expect_sample (reply.body, "msgx_pipeline_backlog_unfinished", "4");
    free (reply.body);
}

static void
test_metrics_actor_silent (void **state)
{
    fixture_t *fx = *state;
    s_start (fx, false);
    reply_t reply;
    s_get (fx, "/health", &reply);
    assert_int_equal (reply.status, 503);
    assert_non_null (strstr (reply.body, "metrics actor did not answer"));
    free (reply.body);
}

//  Told it is a paused standby (as control tells it, before START), the
//  http actor says so on /health with 503 and refuses the compat entry;
//  told active and paused, /health is 200 and says paused.
static void
test_role_and_pause_as_told (void **state)
{
    fixture_t *fx = *state;
    s_start (fx, true);
    mx_actor_destroy (&fx->http);
    char *detail = NULL, *error = NULL;
    fx->http = mx_actor_start_service (mx_http_actor, &fx->http_args, "standby", true, 10000, &detail, &error);
    if (!fx->http)
        fail_msg ("http actor did not start: %s", error);
    free (detail);
    reply_t reply;
    s_get (fx, "/health", &reply);
    assert_int_equal (reply.status, 503);
    json_t *health = json_loads (reply.body, 0, NULL);
    assert_non_null (health);
    assert_string_equal (json_string_value (json_object_get (health, "status")), "standby");
    assert_string_equal (json_string_value (json_object_get (health, "role")), "standby");
    assert_true (json_is_true (json_object_get (json_object_get (health, "pipeline"), "paused")));
    json_decref (health);
    free (reply.body);
    s_get (fx, "/metrics", &reply);
    s_expect_sample (reply.body, "msgx_instance_active", "0");
    s_expect_sample (reply.body, "msgx_pipeline_paused", "1");
    free (reply.body);

    //  Live but not ready: a standby takes no work.
    s_get (fx, "/health/live", &reply);
    assert_int_equal (reply.status, 200);
    free (reply.body);
    s_get (fx, "/health/ready", &reply);
    assert_int_equal (reply.status, 503);
    health = json_loads (reply.body, 0, NULL);
    assert_string_equal (json_string_value (json_object_get (health, "status")), "standby");
    assert_int_equal (json_array_size (json_object_get (health, "down")), 0);
    json_decref (health);
    free (reply.body);

    //  Active but paused: healthy (a pause is the operator's choice).
    mx_cmd_send (zactor_sock (fx->http), MX_CMD_ROLE, "active", 1);
    s_get (fx, "/health", &reply);
    assert_int_equal (reply.status, 200);
    health = json_loads (reply.body, 0, NULL);
    assert_string_equal (json_string_value (json_object_get (health, "status")), "ok");
    assert_string_equal (json_string_value (json_object_get (health, "role")), "active");
    assert_true (json_is_true (json_object_get (json_object_get (health, "pipeline"), "paused")));
    json_decref (health);
    free (reply.body);
    s_get (fx, "/health/ready", &reply);
    assert_int_equal (reply.status, 200);
    free (reply.body);
}

//  A locked mailbox table holds up the metrics actor's check, never the
//  http actor: /health/live answers at once, /metrics and /health answer
//  when their wait runs out (the mailbox figures unknown), and all is
//  well again once the lock goes.
static void
test_locked_mailbox_blocks_no_answer (void **state)
{
    fixture_t *fx = *state;
    s_start (fx, true);
    MYSQL *locker = mx_testmb_connect (fx->mb);
    const char *lock = "LOCK TABLES CMINMSGS WRITE";
    if (mysql_real_query (locker, lock, strlen (lock)))
        fail_msg ("%s: %s", lock, mysql_error (locker));
    reply_t reply;
    s_get (fx, "/health/live", &reply);
    assert_int_equal (reply.status, 200);
    free (reply.body);
    s_get (fx, "/metrics", &reply);
    assert_int_equal (reply.status, 200);
    s_expect_sample (reply.body, "msgx_pipeline_watermark_lag", "NaN");
    free (reply.body);
    s_get (fx, "/health", &reply);
    assert_int_equal (reply.status, 503);
    assert_non_null (strstr (reply.body, "\"down\":[\"metrics\"]"));
    free (reply.body);
    const char *unlock = "UNLOCK TABLES";
    if (mysql_real_query (locker, unlock, strlen (unlock)))
        fail_msg ("%s: %s", unlock, mysql_error (locker));
    mysql_close (locker);
    //  Bounded poll: the metrics actor works off the requests that waited.
    int64_t deadline = zclock_mono () + IO_TIMEOUT_S * 1000;
    while (true) {
        s_get (fx, "/health", &reply);
        int status = reply.status;
        free (reply.body);
        if (status == 200)
            break;
        if (zclock_mono () > deadline)
            fail_msg ("/health never came back to 200 after the unlock");
    }
}

int
main (void)
{
    zsys_init ();
    zsys_handler_set (NULL);
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_values_match_the_database, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_mailbox_down, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_postgresql_down, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_cache_ttl, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_metrics_actor_silent, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_role_and_pause_as_told, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_locked_mailbox_blocks_no_answer, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
