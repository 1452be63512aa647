/*  The republisher (msgxctl republish) with the injected clock against a
    real PostgreSQL: paced steps (msgx.republish.rate 10: one event a step,
    the next 100 ms of the clock later), refusals, a job continued by the
    next start after its cursor, each flight and entry once, a deleted
    flight as a tombstone, cancel.

    Each step tells its parent EVENTS_COMMITTED; the test waits for that,
    then moves the clock for the next one.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "mx_actor.h"
#include "mx_config.h"
#include "mx_republish_actor.h"
#include "mx_testactor.h"
#include "mx_testenv.h"

#define WAIT_MS 20000
#define T0 1768849200000LL
#define STEP_MS 100

typedef struct {
    mx_testpg_t *pg;
    mx_clock_t *clock;
    mx_config_t *config;
    PGconn *conn;
    mx_actor_args_t args;
    zactor_t *actor;
    uint64_t admin_sequence;
} fixture_t;

//  Six flights of 2026-01-20 (one deleted), two of another day, three
//  reference entries.
static const char *s_data_sql =
    "INSERT INTO flight_schd (flid, alcd, flno, mvin, sodt, operation_day, state_version, last_msg_id,"
    " lifecycle, deleted_at) VALUES"
    " (201, 'CZ', '3201', 'D', '2026-01-20 08:00+08', '2026-01-20', 3, 31, 'ACTIVE', NULL),"
    " (202, 'CZ', '3202', 'A', '2026-01-20 09:00+08', '2026-01-20', 1, 32, 'ACTIVE', NULL),"
    " (203, 'CZ', '3203', 'D', '2026-01-20 10:00+08', '2026-01-20', 7, 33, 'DELETED', '2026-01-19 00:00Z'),"
    " (204, 'MU', '5204', 'A', '2026-01-20 11:00+08', '2026-01-20', 2, 34, 'ACTIVE', NULL),"
    " (205, 'MU', '5205', 'D', '2026-01-20 12:00+08', '2026-01-20', 2, 35, 'ACTIVE', NULL),"
    " (206, 'MU', '5206', 'A', '2026-01-20 13:00+08', '2026-01-20', 4, 36, 'ACTIVE', NULL),"
    " (301, 'CA', '1301', 'D', '2026-01-21 08:00+08', '2026-01-21', 1, 37, 'ACTIVE', NULL),"
    " (302, 'CA', '1302', 'A', '2026-01-21 09:00+08', '2026-01-21', 1, 38, 'ACTIVE', NULL);"
    "INSERT INTO ref_master (rtype, rkey, value, last_msg_id) VALUES"
    " ('GLST', 'G1', '{\"GCOD\":\"G1\",\"PIER\":\"A\"}', 41),"
    " ('GLST', 'G2', '{\"GCOD\":\"G2\"}', 42),"
    " ('SLST', 'S:1', '{\"SCOD\":\"S:1\"}', NULL);";

//  mx_testpg_wait wakes on these.
static const char *s_watch_sql =
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify ('mx_test', TG_TABLE_NAME); RETURN NULL; END $$;"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON republish_job"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    fx->pg = mx_testactor_pg (&fx->conn);
    fx->clock = mx_clock_new_fake (T0);
    mx_testpg_exec (fx->conn, s_data_sql);
    mx_testpg_exec (fx->conn, s_watch_sql);
    fx->config = mx_testactor_config (fx->pg);
    mx_testactor_set (fx->config, "msgx.republish.rate", "10");
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_actor_destroy (&fx->actor);
    mx_testactor_release (&fx->conn, &fx->config, &fx->clock, &fx->pg);
    free (fx);
    return 0;
}

static void
s_start (fixture_t *fx)
{
    fx->args = (mx_actor_args_t) { .name = "republisher", .config = fx->config, .clock = fx->clock };
    char *detail = NULL;
    fx->actor = mx_testactor_start (mx_republish_actor, &fx->args, "republisher", &detail);
    assert_non_null (strstr (detail, "up to 10 events/s, 1 a step"));
    free (detail);
}

//  One admin request; returns the payload parsed when OK (else NULL, the
//  refusal into *refusal, malloc'd, when given).
static json_t *
s_admin (fixture_t *fx, const char *args, char **refusal)
{
    uint64_t sequence = ++fx->admin_sequence;
    mx_cmd_send (zactor_sock (fx->actor), MX_CMD_ADMIN, sequence, "republish", args);
    zmsg_t *rest = NULL;
    mx_cmd_t reply;
    //  A step may tell EVENTS_COMMITTED before the reply comes.
    while ((reply = mx_cmd_recv_timeout (zactor_sock (fx->actor), WAIT_MS, &rest)) == MX_CMD_EVENTS_COMMITTED)
        mx_cmd_done (&rest);
    if (reply != MX_CMD_ADMIN_REPLY)
        fail_msg ("no ADMIN_REPLY to republish %s", args);
    char *request_id = mx_cmd_pop_str (rest), *status = mx_cmd_pop_str (rest), *payload = mx_cmd_pop_str (rest);
    mx_cmd_done (&rest);
    assert_true (strtoull (request_id, NULL, 10) == sequence);
    json_t *parsed = NULL;
    if (strcmp (status, "OK") == 0) {
        parsed = json_loads (payload, 0, NULL);
        assert_non_null (parsed);
    }
    if (refusal)
        *refusal = parsed ? NULL : strdup (payload);
    else
    if (!parsed)
        fail_msg ("republish %s refused: %s", args, payload);
    free (request_id);
    free (status);
    free (payload);
    return parsed;
}

//  The next step's EVENTS_COMMITTED.
static void
s_step_done (fixture_t *fx)
{
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv_timeout (zactor_sock (fx->actor), WAIT_MS, &rest);
    mx_cmd_done (&rest);
    if (cmd != MX_CMD_EVENTS_COMMITTED)
        fail_msg ("no step of the republisher within %d ms", WAIT_MS);
}

static void
test_paced_job_continues_after_a_restart (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    json_t *reply = s_admin (fx, "{\"day\":\"2026-01-20\",\"reference\":true,\"dry_run\":true}", NULL);
    assert_int_equal (json_integer_value (json_object_get (reply, "flights")), 6);
    assert_int_equal (json_integer_value (json_object_get (reply, "entries")), 3);
    json_decref (reply);
    char *refusal = NULL;
    assert_null (s_admin (fx, "{\"day\":\"2026-01-20\"}", &refusal));
    assert_non_null (strstr (refusal, "add --yes"));
    free (refusal);
    assert_null (s_admin (fx, "{\"day\":\"2026-01-20\",\"all\":true,\"yes\":true}", &refusal));
    assert_non_null (strstr (refusal, "exactly one of"));
    free (refusal);
    assert_null (s_admin (fx, "{\"flids\":[201,999],\"yes\":true}", &refusal));
    assert_string_equal (refusal, "nothing sent: no flight 999");
    free (refusal);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM republish_job", "0");

    reply = s_admin (fx, "{\"day\":\"2026-01-20\",\"reference\":true,\"yes\":true,\"os_user\":\"tester\"}", NULL);
    assert_int_equal (json_integer_value (json_object_get (reply, "job_id")), 1);
    json_decref (reply);
    //  One event a step, the next step one 100 ms of the clock later.
    s_step_done (fx);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM msg_event", "1");
    mx_clock_advance (fx->clock, STEP_MS);
    s_step_done (fx);
    mx_testpg_expect (fx->conn, "SELECT count(*) || ' ' || max (flid) FROM msg_event", "2 202");
    mx_testpg_expect (fx->conn, "SELECT cursor_flid || ' ' || flights_sent FROM republish_job", "202 2");
    assert_null (s_admin (fx, "{\"all\":true,\"yes\":true}", &refusal));
    assert_non_null (strstr (refusal, "republish job 1 is running (2 of 9 events sent): one job at a time"));
    free (refusal);

    //  Stopped in the middle; the next start goes on after the cursor.
    mx_actor_destroy (&fx->actor);
    s_start (fx);
    for (int step = 0; step < 7; step++) {
        s_step_done (fx);
        mx_clock_advance (fx->clock, STEP_MS);
    }
    mx_testpg_wait (fx->conn, "SELECT state = 'DONE' FROM republish_job");
    mx_testpg_expect (fx->conn, "SELECT flights_sent || ' ' || entries_sent FROM republish_job", "6 3");
    //  Each flight of the day once, at its version, carrying the message
    //  that made it; the deleted one as a tombstone.
    mx_testpg_expect (fx->conn,
        "SELECT string_agg (flid || ':' || state_version || ':' || event_type || ':' || msg_id"
        "                   || ':' || (payload IS NULL), ',' ORDER BY event_id)"
        "  FROM msg_event WHERE target = 'KAFKA:schd'",
        "201:3:UPSERT:31:false,202:1:UPSERT:32:false,203:7:TOMBSTONE:33:true,"
        "204:2:UPSERT:34:false,205:2:UPSERT:35:false,206:4:UPSERT:36:false");
    mx_testpg_expect (fx->conn,
        "SELECT bool_and ((payload::jsonb)->>'flid' = flid::text"
        "                 AND (payload::jsonb)->>'state_version' = state_version::text)"
        "  FROM msg_event WHERE target = 'KAFKA:schd' AND payload IS NOT NULL", "t");
    //  Every entry, in LIST, KEY order, with its document.
    mx_testpg_expect (fx->conn,
        "SELECT string_agg (partition_key || ':' || flid || ':' || state_version || ':'"
        "                   || ((payload::jsonb) - 'updated_at')::text, ' ' ORDER BY event_id)"
        "  FROM msg_event WHERE target = 'KAFKA:ref'",
        "GLST:G1:0:41:{\"key\": \"G1\", \"list\": \"GLST\", \"value\": {\"GCOD\": \"G1\", \"PIER\": \"A\"}, \"last_msg_id\": 41} "
        "GLST:G2:0:42:{\"key\": \"G2\", \"list\": \"GLST\", \"value\": {\"GCOD\": \"G2\"}, \"last_msg_id\": 42} "
        "SLST:S:1:0:0:{\"key\": \"S:1\", \"list\": \"SLST\", \"value\": {\"SCOD\": \"S:1\"}, \"last_msg_id\": null}");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM audit_log WHERE action = 'republish' AND os_user = 'tester'"
                                " AND result = 'ok'", "1");
}

static void
test_cancel_between_steps (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    char *refusal = NULL;
    assert_null (s_admin (fx, "{\"cancel\":true}", &refusal));
    assert_string_equal (refusal, "no republish job runs: nothing to cancel");
    free (refusal);
    assert_null (s_admin (fx, "{\"cancel\":true,\"reference\":true}", &refusal));
    assert_non_null (strstr (refusal, "exactly one of"));
    free (refusal);
    //  The reference entries alone: no flight.
    json_t *alone = s_admin (fx, "{\"reference\":true,\"dry_run\":true}", NULL);
    assert_int_equal (json_integer_value (json_object_get (alone, "flights")), 0);
    assert_int_equal (json_integer_value (json_object_get (alone, "entries")), 3);
    json_decref (alone);
    json_decref (s_admin (fx, "{\"all\":true,\"yes\":true}", NULL));
    s_step_done (fx);
    json_t *reply = s_admin (fx, "{\"cancel\":true}", NULL);
    assert_true (json_is_true (json_object_get (reply, "cancelled")));
    assert_int_equal (json_integer_value (json_object_get (reply, "left")), 7);
    json_decref (reply);
    mx_testpg_expect (fx->conn, "SELECT state || ' ' || flights_sent FROM republish_job", "CANCELLED 1");
    //  A new job may start at once.
    reply = s_admin (fx, "{\"flids\":[302],\"yes\":true}", NULL);
    assert_int_equal (json_integer_value (json_object_get (reply, "flights")), 1);
    json_decref (reply);
    s_step_done (fx);
    mx_clock_advance (fx->clock, STEP_MS);
    mx_testpg_wait (fx->conn, "SELECT state = 'DONE' FROM republish_job WHERE job_id = 2");
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid::text, ',' ORDER BY event_id) FROM msg_event", "201,302");
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_paced_job_continues_after_a_restart, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_cancel_between_steps, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
