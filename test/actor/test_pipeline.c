/*  Integration tests of the inbound lifecycle (SPEC §3) on real
    PostgreSQL and MariaDB, with the injected clock.

    Waiting is on database events: the test database gets a trigger that
    NOTIFYs on every proc_state / inbox_cursor change and records terminal
    transitions in order, and the test LISTENs.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <poll.h>

#include "mx_actor.h"
#include "mx_config.h"
#include "mx_control.h"
#include "mx_inbox.h"
#include "mx_ingress.h"
#include "mx_metrics.h"
#include "mx_pg.h"
#include "mx_processor.h"
#include "mx_procstate.h"
#include "mx_pump.h"
#include "mx_rawstore.h"
#include "mx_testactor.h"
#include "mx_testenv.h"

#include <unistd.h>

#define WAIT_MS 20000
#define DELAY 300000            //  max-commit-delay in these tests
#define T0 1767225600000LL      //  2026-01-01T00:00:00Z

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    char *dir;
    mx_clock_t *clock;
    mx_config_t *config;
    PGconn *conn;
    zactor_t *control;          //  destroyed by teardown too, before the databases go
    mx_control_args_t args;     //  lives as long as control               //  the test's own connection, LISTENing
} fixture_t;

static const char *s_watch_sql =
    "CREATE TABLE mx_test_order (seq bigserial PRIMARY KEY, msg_id bigint, state text, has_intent boolean,"
    " tx bigint DEFAULT txid_current ());"
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  IF TG_TABLE_NAME = 'proc_state' THEN"
    "   IF NEW.state IN ('SUCCEEDED','SKIPPED','DEAD')"
    "      AND (TG_OP = 'INSERT' OR OLD.state NOT IN ('SUCCEEDED','SKIPPED','DEAD')) THEN"
    "    INSERT INTO mx_test_order (msg_id, state, has_intent)"
    "    VALUES (NEW.msg_id, NEW.state, NEW.backfill_next_at IS NOT NULL AND NEW.finished_at IS NOT NULL);"
    "   END IF;"
    "  END IF;"
    "  PERFORM pg_notify ('mx_test', TG_TABLE_NAME);"
    "  RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON proc_state FOR EACH ROW EXECUTE FUNCTION mx_test_watch ();"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON inbox_cursor FOR EACH ROW EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    fx->pg = mx_testactor_pg (&fx->conn);
    fx->mb = mx_testmb_new ();
    fx->dir = mx_testenv_tmpdir ();
    fx->clock = mx_clock_new_fake (T0);
    mx_testpg_exec (fx->conn, s_watch_sql);

    mx_config_t *config = mx_testactor_config (fx->pg);
    char port [16], endpoint [512];
    snprintf (port, sizeof port, "%d", mx_testmb_port (fx->mb));
    snprintf (endpoint, sizeof endpoint, "ipc://%s/admin.sock", fx->dir);
    const char *settings [][2] = {
        { "msgx.admin.endpoint", endpoint },
        { "msgx.pipeline.autostart", "true" },
        { "msgx.pipeline.max-commit-delay", "5m" },
        { "msgx.pipeline.max-attempts", "2" },
        { "msgx.pipeline.backoff-ms", "1000" },
        { "msgx.pipeline.claim-batch", "10" },
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings [0]; i++)
        if (mx_config_set (config, settings [i][0], settings [i][1], NULL))
            fail_msg ("config %s", settings [i][0]);
    mx_testmb_configure (fx->mb, config, "+00:00");
    fx->config = config;
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_actor_destroy (&fx->control);
    mx_testactor_release (&fx->conn, &fx->config, &fx->clock, &fx->pg);
    mx_testmb_destroy (&fx->mb);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

//  ---------------------------------------------------------------------
//  Helpers

//  Seasonal schedules have no processor: UNSUPPORTED, retried, then DEAD.
static const char *
s_schs (int seqn, char *buf, size_t size)
{
    snprintf (buf, size,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN>"
        "<DTTM>20260101080000</DTTM><TYPE>SCHS</TYPE><STYP>DNLD</STYP></META>"
        "<SCHS><FLID>1001</FLID></SCHS></MSG>", seqn);
    return buf;
}

static const char *
s_ldm (int seqn, char *buf, size_t size)
{
    snprintf (buf, size,
        "<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260101080000</DTTM>"
        "<TYPE>LDM</TYPE><STYP>UPD</STYP></META><LDM>x</LDM></MSG>", seqn);
    return buf;
}

static const char *s_malformed = "<MSG><META><SNDR>AODB</SNDR></META>";

static void
s_insert (fixture_t *fx, int64_t id, const char *xml)
{
    assert_int_equal (mx_testmb_insert (fx->mb, id, xml, T0), id);
}

static void
s_round (mx_inbox_t *inbox, int64_t now, mx_inbox_round_t *round)
{
    char *error = NULL;
    if (mx_inbox_round (inbox, now, round, &error))
        fail_msg ("round failed: %s", error);
}

//  ---------------------------------------------------------------------
//  Ingress rounds

static void
test_repeated_scans_never_duplicate_or_lose (void **state)
{
    fixture_t *fx = *state;
    char xml [512];
    for (int id = 1; id <= 5; id++)
        s_insert (fx, id, s_ldm (id, xml, sizeof xml));
    mx_inbox_t *inbox = mx_inbox_new (fx->config);
    mx_inbox_round_t round;
    s_round (inbox, T0, &round);
    assert_int_equal (round.w, 5);
    assert_int_equal (round.enqueued, 5);
    s_round (inbox, T0 + 1, &round);
    assert_int_equal (round.enqueued, 0);
    assert_int_equal (round.w, 5);
    //  An enqueue interrupted after the rows but before the cursor: the
    //  next scan sees the same IDs again and adds nothing twice.
    PQclear (PQexec (fx->conn, "UPDATE inbox_cursor SET committed_up_to = 2"));
    s_round (inbox, T0 + 2, &round);
    assert_int_equal (round.w, 5);
    assert_int_equal (round.enqueued, 0);
    mx_testpg_expect (fx->conn, "SELECT count(*) || '/' || count(DISTINCT msg_id) || '/' || min(msg_id) || '/' || max(msg_id)"
                        " FROM proc_state WHERE state = 'PENDING' AND source = 'poll'", "5/5/1/5");
    mx_testpg_expect (fx->conn, "SELECT bool_and (received_at = to_timestamp (1767225600)) FROM proc_state", "t");
    mx_inbox_destroy (&inbox);
}

static void
test_hole_holds_w_then_only_the_hole_is_released (void **state)
{
    fixture_t *fx = *state;
    char xml [512];
    for (int id = 1; id <= 6; id++)
        if (id != 3 && id != 5)
            s_insert (fx, id, s_ldm (id, xml, sizeof xml));
    mx_inbox_t *inbox = mx_inbox_new (fx->config);
    mx_inbox_round_t round;
    s_round (inbox, T0, &round);
    assert_int_equal (round.w, 2);
    assert_int_equal (round.hole_since, T0);
    s_round (inbox, T0 + DELAY - 1, &round);       //  within the window
    assert_int_equal (round.w, 2);
    assert_int_equal (round.hole_since, T0);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state", "2");
    //  Aged: hole 3 released alone; hole 5 is new and gets a full window.
    s_round (inbox, T0 + DELAY, &round);
    assert_true (round.released);
    assert_int_equal (round.released_from, 3);
    assert_int_equal (round.released_to, 3);
    assert_int_equal (round.w, 4);
    assert_int_equal (round.hole_since, T0 + DELAY);
    mx_testpg_expect (fx->conn, "SELECT id_from || '-' || id_to FROM released_hole", "3-3");
    s_round (inbox, T0 + 2 * DELAY - 1, &round);
    assert_int_equal (round.w, 4);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE msg_id IN (3, 5)", "0");
    //  Late arrival of 3 in its released hole: detected, never enqueued.
    s_insert (fx, 3, s_ldm (3, xml, sizeof xml));
    int detected = 0;
    char *message = NULL, *error = NULL;
    assert_int_equal (mx_inbox_late_check (inbox, T0 + 2 * DELAY, &detected, &message, &error), 0);
    assert_int_equal (detected, 1);
    assert_non_null (strstr (message, "released hole 3..3"));
    free (message);
    assert_int_equal (mx_inbox_late_check (inbox, T0 + 2 * DELAY + 1, &detected, &message, &error), 0);
    assert_int_equal (detected, 0);                 //  counted once
    mx_testpg_expect (fx->conn, "SELECT late_ids::text FROM released_hole", "{3}");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE msg_id = 3", "0");
    mx_inbox_destroy (&inbox);
}

static void s_mailbox_sql (fixture_t *fx, const char *sql);

//  A released hole of 1000 IDs filled late: every ID is found, over
//  several pages, at most late-detect-ids a round, each counted once.
static void
test_late_arrivals_cover_a_hole_wider_than_a_page (void **state)
{
    fixture_t *fx = *state;
    assert_int_equal (mx_config_set (fx->config, "msgx.pipeline.late-detect-ids", "600", NULL), 0);
    char xml [512];
    s_insert (fx, 1, s_ldm (1, xml, sizeof xml));
    s_insert (fx, 1002, s_ldm (1002, xml, sizeof xml));
    mx_inbox_t *inbox = mx_inbox_new (fx->config);
    mx_inbox_round_t round;
    s_round (inbox, T0, &round);
    s_round (inbox, T0 + DELAY, &round);
    assert_true (round.released);
    assert_int_equal (round.released_from, 2);
    assert_int_equal (round.released_to, 1001);
    //  The whole hole arrives late, in one statement (MariaDB's sequence
    //  engine gives the IDs).
    s_mailbox_sql (fx, "INSERT INTO CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS)"
                       " SELECT seq, '<x/>', 'VALID' FROM seq_2_to_1001");

    int64_t now = T0 + DELAY + 1;
    int detected = 0;
    char *message = NULL, *error = NULL;
    //  First round: its bound, 600 IDs (pages of 256, 256, 88).
    assert_int_equal (mx_inbox_late_check (inbox, now, &detected, &message, &error), 0);
    assert_int_equal (detected, 600);
    assert_non_null (strstr (message, "600 in released hole 2..1001 (2,3,"));
    assert_non_null (strstr (message, "and 580 more)"));
    free (message);
    mx_testpg_expect (fx->conn, "SELECT array_length (late_ids, 1) || ' ' || late_ids [600] FROM released_hole", "600 601");
    //  Second round: the pass goes on where it stopped.
    assert_int_equal (mx_inbox_late_check (inbox, now + 1, &detected, &message, &error), 0);
    assert_int_equal (detected, 400);
    assert_non_null (strstr (message, "400 in released hole 2..1001 (602,603,"));
    free (message);
    //  A new pass finds nothing new: each ID counted once.
    assert_int_equal (mx_inbox_late_check (inbox, now + 2, &detected, &message, &error), 0);
    assert_int_equal (detected, 0);
    assert_null (message);
    mx_testpg_expect (fx->conn, "SELECT array_length (late_ids, 1) || ' ' || late_ids [1] || ' ' || late_ids [1000]"
                        " || ' ' || (SELECT count (DISTINCT x) FROM unnest (late_ids) x) FROM released_hole",
                      "1000 2 1001 1000");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE msg_id BETWEEN 2 AND 1001", "0");
    mx_inbox_destroy (&inbox);
}

static void
test_filled_hole_resets_and_a_new_hole_gets_a_full_window (void **state)
{
    fixture_t *fx = *state;
    char xml [512];
    s_insert (fx, 1, s_ldm (1, xml, sizeof xml));
    s_insert (fx, 3, s_ldm (3, xml, sizeof xml));
    s_insert (fx, 5, s_ldm (5, xml, sizeof xml));
    mx_inbox_t *inbox = mx_inbox_new (fx->config);
    mx_inbox_round_t round;
    s_round (inbox, T0, &round);
    assert_int_equal (round.w, 1);
    assert_int_equal (round.hole_since, T0);
    //  Hole 2 fills just before it would age; hole 4 is new.
    s_insert (fx, 2, s_ldm (2, xml, sizeof xml));
    s_round (inbox, T0 + DELAY - 1, &round);
    assert_int_equal (round.w, 3);
    assert_int_equal (round.hole_since, T0 + DELAY - 1);
    //  The old timer would have expired now; the new one has not.
    s_round (inbox, T0 + DELAY + 1000, &round);
    assert_int_equal (round.w, 3);
    assert_false (round.released);
    s_insert (fx, 4, s_ldm (4, xml, sizeof xml));
    s_round (inbox, T0 + DELAY + 2000, &round);
    assert_int_equal (round.w, 5);
    assert_int_equal (round.hole_since, -1);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM released_hole", "0");
    mx_inbox_destroy (&inbox);
}

static void
s_mailbox_sql (fixture_t *fx, const char *sql)
{
    MYSQL *conn = mx_testmb_connect (fx->mb);
    assert_non_null (conn);
    if (mysql_query (conn, sql))
        fail_msg ("%s: %s", sql, mysql_error (conn));
    mysql_close (conn);
}

static void
test_unreadable_mailbox_is_a_failure_not_an_empty_batch (void **state)
{
    fixture_t *fx = *state;
    mx_metrics_counter_t *connect = mx_inbox_failures ("connect");
    mx_metrics_counter_t *query = mx_inbox_failures ("query");
    uint64_t connects = mx_metrics_counter_value (connect), queries = mx_metrics_counter_value (query);
    //  A mailbox the query fails on: counted as query.
    s_mailbox_sql (fx, "RENAME TABLE CMINMSGS TO CMINMSGS_AWAY");
    mx_inbox_t *inbox = mx_inbox_new (fx->config);
    mx_inbox_round_t round;
    char *error = NULL;
    assert_int_equal (mx_inbox_round (inbox, T0, &round, &error), -1);
    assert_non_null (strstr (error, "mailbox unreadable"));
    free (error);
    assert_int_equal (mx_metrics_counter_value (query), queries + 1);
    assert_int_equal (mx_metrics_counter_value (connect), connects);
    s_mailbox_sql (fx, "RENAME TABLE CMINMSGS_AWAY TO CMINMSGS");
    assert_int_equal (mx_inbox_round (inbox, T0, &round, &error), 0);
    mx_inbox_destroy (&inbox);

    //  A mailbox nobody listens for: counted as connect.
    assert_int_equal (mx_config_set (fx->config, "mailbox.shared-mysql.port", "1", NULL), 0);
    inbox = mx_inbox_new (fx->config);
    assert_int_equal (mx_inbox_round (inbox, T0, &round, &error), -1);
    assert_non_null (strstr (error, "mailbox unreadable"));
    free (error);
    assert_int_equal (mx_metrics_counter_value (connect), connects + 1);
    assert_int_equal (mx_metrics_counter_value (query), queries + 1);
    mx_testpg_expect (fx->conn, "SELECT committed_up_to FROM inbox_cursor", "0");
    mx_inbox_destroy (&inbox);
}

static void
test_cutover_forms_and_refusal_on_a_used_instance (void **state)
{
    fixture_t *fx = *state;
    char xml [512];
    for (int id = 101; id <= 104; id++)
        s_insert (fx, id, s_ldm (id, xml, sizeof xml));
    mx_inbox_t *inbox = mx_inbox_new (fx->config);
    int64_t w = 0;
    char *message = NULL;
    assert_int_equal (mx_inbox_cutover (inbox, "soon", "tester", T0, false, &w, &message), 0);
    assert_non_null (strstr (message, "invalid cutover watermark"));
    free (message);
    //  The dry run says what min would give, and seeds nothing.
    assert_int_equal (mx_inbox_cutover (inbox, "min", "tester", T0, true, &w, &message), 1);
    assert_int_equal (w, 100);
    assert_non_null (strstr (message, "would be seeded to 100"));
    free (message);
    mx_testpg_expect (fx->conn, "SELECT committed_up_to || '/' || (seeded_at IS NOT NULL) FROM inbox_cursor", "0/false");
    assert_int_equal (mx_inbox_cutover (inbox, "min", "tester", T0, false, &w, &message), 1);
    assert_int_equal (w, 100);
    free (message);
    mx_testpg_expect (fx->conn, "SELECT committed_up_to || '/' || (seeded_at IS NOT NULL) FROM inbox_cursor", "100/true");
    //  A second cutover is refused: the instance is not fresh any more; its
    //  dry run says so too.
    assert_int_equal (mx_inbox_cutover (inbox, "max", "tester", T0, true, &w, &message), 0);
    assert_non_null (strstr (message, "not fresh"));
    free (message);
    assert_int_equal (mx_inbox_cutover (inbox, "max", "tester", T0, false, &w, &message), 0);
    assert_non_null (strstr (message, "not fresh"));
    free (message);
    mx_testpg_expect (fx->conn, "SELECT committed_up_to FROM inbox_cursor", "100");
    mx_testpg_expect (fx->conn, "SELECT string_agg (result, ',' ORDER BY id) FROM audit_log WHERE action = 'cutover'",
                    "dry-run,ok,dry-run,refused");
    mx_inbox_round_t round;
    s_round (inbox, T0, &round);
    assert_int_equal (round.w, 104);
    assert_int_equal (round.enqueued, 4);
    mx_inbox_destroy (&inbox);

    //  max and an explicit ID on fresh databases.
    PQclear (PQexec (fx->conn, "TRUNCATE proc_state; UPDATE inbox_cursor SET committed_up_to = 0, seeded_at = NULL"));
    inbox = mx_inbox_new (fx->config);
    assert_int_equal (mx_inbox_cutover (inbox, "max", NULL, T0, false, &w, &message), 1);
    assert_int_equal (w, 104);
    free (message);
    PQclear (PQexec (fx->conn, "UPDATE inbox_cursor SET committed_up_to = 0, seeded_at = NULL"));
    assert_int_equal (mx_inbox_cutover (inbox, "102", NULL, T0, false, &w, &message), 1);
    assert_int_equal (w, 102);
    free (message);
    PQclear (PQexec (fx->conn, "UPDATE inbox_cursor SET committed_up_to = 0, seeded_at = NULL"));
    assert_int_equal (mx_inbox_cutover (inbox, "zero", NULL, T0, false, &w, &message), 1);
    assert_int_equal (w, 0);
    free (message);
    mx_inbox_destroy (&inbox);
}

//  ---------------------------------------------------------------------
//  The whole inbound pipeline through control

static const mx_actor_def_t s_pipeline [] = {
    { "processor", mx_processor_actor, true },
    { "pump", mx_pump_actor, true },
    { "ingress", mx_ingress_actor, true },
};

static zactor_t *
s_start (fixture_t *fx, mx_control_args_t *args)
{
    *args = (mx_control_args_t) { fx->config, fx->clock, s_pipeline, 3, "none", NULL };
    zactor_t *control = mx_testactor_start (mx_control_actor, args, "control", NULL);
    fx->control = control;
    return control;
}

static char *
s_admin (fixture_t *fx, const char *verb, const char *args, char **payload)
{
    zsock_t *req = zsock_new_req (fx->config->admin_endpoint);
    zstr_sendm (req, verb);
    zstr_send (req, args);
    zmq_pollitem_t item = { zsock_resolve (req), 0, ZMQ_POLLIN, 0 };
    assert_int_equal (zmq_poll (&item, 1, WAIT_MS), 1);
    char *verdict = NULL;
    zstr_recvx (req, &verdict, payload, NULL);
    zsock_destroy (&req);
    return verdict;
}

static void
test_failed_head_blocks_everything_behind_it_until_due (void **state)
{
    fixture_t *fx = *state;
    char xml [512];
    s_insert (fx, 1, s_schs (1, xml, sizeof xml));     //  UNSUPPORTED
    s_insert (fx, 2, s_malformed);
    s_insert (fx, 3, s_ldm (3, xml, sizeof xml));
    s_insert (fx, 4, s_ldm (3, xml, sizeof xml));      //  same identity as 3
    s_start (fx, &fx->args);

    mx_testpg_wait (fx->conn, "SELECT state = 'FAILED' AND attempts = 1 FROM proc_state WHERE msg_id = 1");
    mx_testpg_expect (fx->conn, "SELECT error_class || ' ' || (next_attempt_at = to_timestamp (1767225601))"
                        " FROM proc_state WHERE msg_id = 1", "UNSUPPORTED true");
    //  Nothing behind the head moves while it backs off (fake clock: no
    //  amount of real time changes that).
    mx_testpg_expect (fx->conn, "SELECT string_agg (state, ',' ORDER BY msg_id) FROM proc_state WHERE msg_id > 1",
                    "PENDING,PENDING,PENDING");
    mx_clock_advance (fx->clock, 999);
    mx_testpg_expect (fx->conn, "SELECT attempts FROM proc_state WHERE msg_id = 1", "1");
    //  Due: the retry runs, attempts reach max-attempts (2): DEAD(EXHAUSTED),
    //  and the rest drains in order.
    mx_clock_advance (fx->clock, 1);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 4 FROM mx_test_order");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || state, ' ' ORDER BY tx, msg_id) FROM mx_test_order",
                    "1:DEAD 2:DEAD 3:SKIPPED 4:SKIPPED");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || coalesce (error_class, '-') || ':' || coalesce (outcome, '-'),"
                        " ' ' ORDER BY msg_id) FROM proc_state",
                    "1:EXHAUSTED:- 2:MALFORMED:- 3:-:ignored:LDM 4:-:duplicate-of:3");
    mx_testpg_expect (fx->conn, "SELECT last_error LIKE 'UNSUPPORTED: no processor for SCHS/DNLD%' FROM proc_state WHERE msg_id = 1", "t");
    //  Non-business terminals: intent and finish written with the state,
    //  no flight and no event touched.
    mx_testpg_expect (fx->conn, "SELECT bool_and (has_intent) FROM mx_test_order", "t");
    mx_testpg_expect (fx->conn, "SELECT (SELECT count(*) FROM flight_schd) + (SELECT count(*) FROM msg_event)", "0");
    //  The retry kept its own identity: not its own duplicate.
    mx_testpg_expect (fx->conn, "SELECT msg_id FROM identity WHERE identity_key = 'AODB|SCHS|DNLD|1'", "1");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM identity", "2");
    mx_actor_destroy (&fx->control);
}

//  A FLOP STND; without its <STND> the payload is missing. pad: that many
//  spaces after <MSG> (the same message, that much larger).
static const char *
s_stnd_padded (int seqn, bool payload, size_t pad, char *buf, size_t size)
{
    assert_true (pad + 512 <= size);
    memcpy (buf, "<MSG>", 5);
    memset (buf + 5, ' ', pad);
    snprintf (buf + 5 + pad, size - 5 - pad,
        "<META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260101080000</DTTM>"
        "<TYPE>FLOP</TYPE><STYP>STND</STYP></META><FLOP><FLID>1001</FLID>%s</FLOP></MSG>",
        seqn, payload ? "<STND>S1</STND>" : "");
    return buf;
}


//  The identity binds before "payload missing" counts: a duplicate whose
//  payload is missing is SKIPPED, and one that is not holds its identity
//  while it ends DEAD(MALFORMED). batch "1" takes the message-by-message
//  path, the default the bulk path.
static void
s_payload_missing_case (fixture_t *fx, const char *batch, size_t pad)
{
    assert_int_equal (mx_config_set (fx->config, "msgx.pipeline.process-batch", batch, NULL), 0);
    size_t size = pad + 512;
    char *xml = (char *) malloc (size);
    assert_non_null (xml);
    s_insert (fx, 1, s_stnd_padded (1, true, pad, xml, size));    //  unknown flight
    s_insert (fx, 2, s_stnd_padded (1, false, pad, xml, size));   //  1 again, payload missing
    s_insert (fx, 3, s_stnd_padded (3, false, pad, xml, size));   //  payload missing
    s_insert (fx, 4, s_stnd_padded (3, true, pad, xml, size));    //  3 again
    free (xml);
    s_start (fx, &fx->args);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 4 FROM mx_test_order");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || state || ':' || coalesce (error_class, '-')"
                        " || ':' || coalesce (outcome, '-'), ' ' ORDER BY msg_id) FROM proc_state",
                      "1:SKIPPED:-:unknown-flight:1001 2:SKIPPED:-:duplicate-of:1 "
                      "3:DEAD:MALFORMED:- 4:SKIPPED:-:duplicate-of:3");
    mx_testpg_expect (fx->conn, "SELECT last_error LIKE 'payload missing: FLOP/STND%' FROM proc_state WHERE msg_id = 3",
                      "t");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || '=' || identity_key, ' ' ORDER BY msg_id) FROM identity",
                      "1=AODB|FLOP|STND|1 3=AODB|FLOP|STND|3");
    mx_testpg_expect (fx->conn, "SELECT bool_and (has_intent) FROM mx_test_order", "t");
    mx_actor_destroy (&fx->control);
}

static void
test_duplicate_with_payload_missing_is_skipped_one_by_one (void **state)
{
    s_payload_missing_case (*state, "1", 0);
}

static void
test_duplicate_with_payload_missing_is_skipped_in_a_batch (void **state)
{
    s_payload_missing_case (*state, "100", 0);
}

//  The same in batches cut by the byte budget: each message some 30 KB, the
//  budget 64 KiB, so a batch's mailbox read keeps fewer messages than the
//  rows' states were read for, and the rest come with the next batches.
static void
test_duplicate_with_payload_missing_is_skipped_in_batches_cut_by_bytes (void **state)
{
    fixture_t *fx = (fixture_t *) *state;
    assert_int_equal (mx_config_set (fx->config, "msgx.pipeline.batch-bytes", "65536", NULL), 0);
    s_payload_missing_case (fx, "100", 30000);
}

//  ---------------------------------------------------------------------
//  Adaptive mailbox polling (mx_poll_pace inside ingress): every
//  poll-fast while rows keep arriving, doubling when nothing comes, up to
//  poll-interval. Each poll is counted (msgx_ingress_polls_total); the
//  test waits for the count on its LISTENing connection, with a deadline.

static void
s_wait_polls (fixture_t *fx, mx_metrics_counter_t *polls, uint64_t expected)
{
    int64_t deadline = zclock_mono () + WAIT_MS;
    while (mx_metrics_counter_value (polls) < expected) {
        if (zclock_mono () > deadline)
            fail_msg ("ingress polled %" PRIu64 " times, not %" PRIu64 " (%" PRId64 " ms after T0)",
                      mx_metrics_counter_value (polls), expected, mx_clock_now (fx->clock) - T0);
        struct pollfd item = { PQsocket (fx->conn), POLLIN, 0 };
        if (poll (&item, 1, 5) > 0 && PQconsumeInput (fx->conn)) {
            PGnotify *notify;
            while ((notify = PQnotifies (fx->conn)))
                PQfreemem (notify);
        }
    }
    assert_int_equal (mx_metrics_counter_value (polls), expected);
}

//  The clock moves by delta; the poll due then runs and is counted.
static void
s_poll_after (fixture_t *fx, mx_metrics_counter_t *polls, int64_t delta, uint64_t *count)
{
    mx_clock_advance (fx->clock, delta);
    s_wait_polls (fx, polls, ++*count);
}

static void
test_ingress_polls_fast_while_rows_arrive_and_backs_off_when_idle (void **state)
{
    fixture_t *fx = *state;
    assert_int_equal (mx_config_set (fx->config, "msgx.pipeline.poll-fast", "10ms", NULL), 0);
    assert_int_equal (mx_config_set (fx->config, "msgx.pipeline.poll-interval", "1s", NULL), 0);
    mx_metrics_counter_t *polls = mx_ingress_polls ();
    uint64_t count = mx_metrics_counter_value (polls);
    char xml [512];
    s_insert (fx, 1, s_ldm (1, xml, sizeof xml));
    s_start (fx, &fx->args);
    //  The first poll at START admits row 1: fast from now on.
    mx_testpg_wait (fx->conn, "SELECT count(*) = 1 FROM proc_state WHERE msg_id = 1");
    s_wait_polls (fx, polls, ++count);

    //  A row arriving is read poll-fast later, not poll-interval.
    s_insert (fx, 2, s_ldm (2, xml, sizeof xml));
    mx_clock_advance (fx->clock, 9);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE msg_id = 2", "0");
    s_poll_after (fx, polls, 1, &count);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 1 FROM proc_state WHERE msg_id = 2");

    //  Nothing more: 10, 20, 40 ms apart, then 80.
    s_poll_after (fx, polls, 10, &count);
    s_poll_after (fx, polls, 20, &count);
    s_poll_after (fx, polls, 40, &count);
    s_insert (fx, 3, s_ldm (3, xml, sizeof xml));
    mx_clock_advance (fx->clock, 79);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE msg_id = 3", "0");
    assert_int_equal (mx_metrics_counter_value (polls), count);
    s_poll_after (fx, polls, 1, &count);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 1 FROM proc_state WHERE msg_id = 3");

    //  Row 3 made it fast again; then the back-off reaches poll-interval
    //  and stays there.
    const int64_t periods [] = { 10, 20, 40, 80, 160, 320, 640, 1000, 1000 };
    for (size_t i = 0; i < sizeof periods / sizeof periods [0]; i++)
        s_poll_after (fx, polls, periods [i], &count);
    s_insert (fx, 4, s_ldm (4, xml, sizeof xml));
    mx_clock_advance (fx->clock, 999);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE msg_id = 4", "0");
    assert_int_equal (mx_metrics_counter_value (polls), count);
    s_poll_after (fx, polls, 1, &count);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 1 FROM proc_state WHERE msg_id = 4");
}

static void
test_compat_row_above_w_waits_for_the_watermark (void **state)
{
    fixture_t *fx = *state;
    char xml [512];
    s_insert (fx, 1, s_ldm (1, xml, sizeof xml));
    s_insert (fx, 2, s_ldm (2, xml, sizeof xml));
    //  4 came through the compat entry while 3 is not visible yet.
    s_insert (fx, 4, s_ldm (4, xml, sizeof xml));
    char *error = NULL;
    assert_int_equal (mx_procstate_insert_compat (fx->conn, 4, T0, T0, &error), 0);
    //  ... and the mailbox row 4 is hidden from polling by the hole at 3.
    s_start (fx, &fx->args);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM mx_test_order");
    mx_testpg_wait (fx->conn, "SELECT hole_since IS NOT NULL FROM inbox_cursor");
    mx_testpg_expect (fx->conn, "SELECT state || ' ' || source FROM proc_state WHERE msg_id = 4", "PENDING compat");
    char *payload = NULL;
    char *verdict = s_admin (fx, "status", "{}", &payload);
    assert_string_equal (verdict, "OK");
    assert_non_null (strstr (payload, "above the watermark"));
    zstr_free (&verdict);
    zstr_free (&payload);
    //  3 arrives: W catches up, 3 then 4 in order.
    s_insert (fx, 3, s_ldm (3, xml, sizeof xml));
    mx_clock_advance (fx->clock, 1000);                 //  next poll
    mx_testpg_wait (fx->conn, "SELECT count(*) = 4 FROM mx_test_order");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id::text, ',' ORDER BY tx, msg_id) FROM mx_test_order", "1,2,3,4");
    mx_actor_destroy (&fx->control);
}

static void
test_replay_moves_exhausted_rows_back_and_they_run_again (void **state)
{
    fixture_t *fx = *state;
    char xml [512];
    s_insert (fx, 1, s_schs (1, xml, sizeof xml));
    s_insert (fx, 2, s_malformed);
    assert_int_equal (mx_config_set (fx->config, "msgx.pipeline.max-attempts", "1", NULL), 0);
    s_start (fx, &fx->args);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM mx_test_order");

    char *payload = NULL;
    char *verdict = s_admin (fx, "replay", "{\"class\":\"EXHAUSTED\"}", &payload);
    assert_string_equal (verdict, "ERR");
    assert_non_null (strstr (payload, "--yes"));
    zstr_free (&verdict);
    zstr_free (&payload);

    verdict = s_admin (fx, "replay", "{\"ids\":[1,2,99],\"dry_run\":true,\"os_user\":\"ops\"}", &payload);
    assert_string_equal (verdict, "OK");
    json_t *reply = json_loads (payload, 0, NULL);
    json_t *rows = json_object_get (reply, "rows");
    assert_int_equal (json_array_size (rows), 3);
    json_t *first = json_array_get (rows, 0);
    assert_int_equal (json_integer_value (json_object_get (first, "msg_id")), 1);
    assert_true (json_is_null (json_object_get (first, "refused")));
    json_t *flights = json_object_get (first, "flights");
    assert_int_equal (json_array_size (flights), 1);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (flights, 0), "flid")), 1001);
    assert_non_null (strstr (json_string_value (json_object_get (json_array_get (rows, 1), "refused")),
                             "not replayable"));
    assert_string_equal (json_string_value (json_object_get (json_array_get (rows, 2), "refused")), "no such message");
    json_decref (reply);
    zstr_free (&verdict);
    zstr_free (&payload);
    mx_testpg_expect (fx->conn, "SELECT state FROM proc_state WHERE msg_id = 1", "DEAD");

    verdict = s_admin (fx, "replay", "{\"class\":\"EXHAUSTED\",\"yes\":true,\"os_user\":\"ops\"}", &payload);
    assert_string_equal (verdict, "OK");
    assert_non_null (strstr (payload, "\"moved\":1"));
    zstr_free (&verdict);
    zstr_free (&payload);
    //  It runs again (and, still unsupported, ends DEAD again); identity kept.
    mx_testpg_wait (fx->conn, "SELECT count(*) = 3 FROM mx_test_order");
    mx_testpg_expect (fx->conn, "SELECT msg_id || ':' || state FROM mx_test_order ORDER BY tx, msg_id OFFSET 2 LIMIT 1", "1:DEAD");
    mx_testpg_expect (fx->conn, "SELECT msg_id FROM identity", "1");
    mx_testpg_expect (fx->conn, "SELECT string_agg (split_part (os_user, ' [', 1) || ':' || result, ',' ORDER BY id)"
                        " FROM audit_log WHERE action = 'replay'", "ops:dry-run,ops:ok");
    //  Next to the claimed user, the peer the kernel saw: this process.
    char uid [24], pid [24];
    snprintf (uid, sizeof uid, "%u", (unsigned) getuid ());
    snprintf (pid, sizeof pid, "%d", (int) getpid ());
    const char *peer [] = { uid, pid };
    char *verified = mx_testpg_value_params (fx->conn, "SELECT bool_and (os_user LIKE 'ops [uid ' || $1 || ' (%) pid '"
                                             " || $2 || ']') FROM audit_log WHERE action = 'replay'", 2, peer);
    assert_string_equal (verified, "t");
    free (verified);
    mx_actor_destroy (&fx->control);
}


//  ---------------------------------------------------------------------
//  Raw retention: a processed message's text outlives its mailbox row
//  for msgx.pipeline.raw-retention, then it is gone (raw-missing).

static void
test_retained_raw_text_outlives_the_mailbox_row (void **state)
{
    fixture_t *fx = *state;
    char xml [512], ldm [512];
    s_insert (fx, 1, s_schs (1, xml, sizeof xml));         //  one by one: UNSUPPORTED
    s_insert (fx, 2, s_ldm (2, ldm, sizeof ldm));          //  the batch path: SKIPPED
    assert_int_equal (mx_config_set (fx->config, "msgx.pipeline.max-attempts", "1", NULL), 0);
    s_start (fx, &fx->args);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM mx_test_order");
    char expected [64];
    snprintf (expected, sizeof expected, "1,2 %zu", strlen (ldm));
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id::text, ',' ORDER BY msg_id)"
                        " || ' ' || max (octet_length (raw) * (msg_id = 2)::int) FROM raw_message", expected);
    //  The mailbox owner purges the marked rows.
    s_mailbox_sql (fx, "DELETE FROM CMINMSGS WHERE CMINMSGS_ID IN (1, 2)");

    char *payload = NULL;
    char *verdict = s_admin (fx, "show", "{\"msg_id\":2}", &payload);
    assert_string_equal (verdict, "OK");
    json_t *reply = json_loads (payload, 0, NULL);
    json_t *raw = json_object_get (reply, "raw");
    assert_string_equal (json_string_value (json_object_get (raw, "source")), "retention");
    assert_string_equal (json_string_value (json_object_get (raw, "xml")), ldm);
    assert_string_equal (json_string_value (json_object_get (json_object_get (reply, "decoded"), "type")), "LDM");
    json_decref (reply);
    zstr_free (&verdict);
    zstr_free (&payload);

    //  Replayed from the retained copy: unsupported again, not raw-missing;
    //  the dry run names its flight from the copy too.
    verdict = s_admin (fx, "replay", "{\"ids\":[1],\"dry_run\":true}", &payload);
    assert_string_equal (verdict, "OK");
    assert_non_null (strstr (payload, "\"flid\":1001"));
    zstr_free (&verdict);
    zstr_free (&payload);
    verdict = s_admin (fx, "replay", "{\"ids\":[1],\"yes\":true,\"os_user\":\"ops\"}", &payload);
    assert_string_equal (verdict, "OK");
    zstr_free (&verdict);
    zstr_free (&payload);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 3 FROM mx_test_order");
    mx_testpg_expect (fx->conn, "SELECT state || ' ' || error_class || ' ' || (last_error LIKE '%raw-missing%')"
                        " FROM proc_state WHERE msg_id = 1", "DEAD EXHAUSTED false");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM raw_message", "2");

    //  The jobs' sweep eight days later (7d by default) removes both
    //  copies: a replay now ends DEAD(raw-missing). The sweep is called
    //  with that time; the pipeline's clock stays (moved 8 days, it would
    //  see the replay's batch held that long if its answer was not in yet).
    int64_t later = mx_clock_now (fx->clock) + 8 * 24 * 3600 * 1000LL;
    int deleted = 0;
    char *error = NULL;
    if (mx_rawstore_sweep (fx->conn, later - fx->config->pipeline_raw_retention, 500, &deleted, &error))
        fail_msg ("sweep: %s", error);
    assert_int_equal (deleted, 2);
    verdict = s_admin (fx, "replay", "{\"ids\":[1],\"yes\":true,\"os_user\":\"ops\"}", &payload);
    assert_string_equal (verdict, "OK");
    zstr_free (&verdict);
    zstr_free (&payload);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 4 FROM mx_test_order");
    mx_testpg_expect (fx->conn, "SELECT state || ' ' || error_class || ' ' || outcome FROM proc_state WHERE msg_id = 1",
                      "DEAD MALFORMED raw-missing");
    verdict = s_admin (fx, "show", "{\"msg_id\":2}", &payload);
    assert_string_equal (verdict, "OK");
    assert_non_null (strstr (payload, "not retained and no such row in CMINMSGS"));
    zstr_free (&verdict);
    zstr_free (&payload);
    mx_actor_destroy (&fx->control);
}

//  ---------------------------------------------------------------------
//  Mutual exclusion of replay, backfill marking and poison escalation,
//  with the interleaving forced on two connections.

static void
test_replay_and_backfill_never_interleave (void **state)
{
    fixture_t *fx = *state;
    char *error = NULL;
    PGconn *backfill = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test-backfill", 30000, &error);
    PGconn *replay = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test-replay", 30000, &error);
    assert_non_null (backfill);
    assert_non_null (replay);
    PQclear (PQexec (fx->conn, "INSERT INTO proc_state (msg_id) VALUES (7)"));
    assert_int_equal (mx_procstate_finish (fx->conn, 7, MX_STATE_DEAD, MX_ERR_EXHAUSTED, "x", NULL, T0, &error), 1);

    //  Backfill holds the row (about to write the mark): replay waits, and
    //  with a bounded lock wait gives up without moving anything.
    assert_int_equal (mx_procstate_backfill_lock (backfill, 7, &error), 1);
    int64_t ids [] = { 7 };
    int moved = -1;
    assert_int_equal (mx_procstate_replay (replay, MX_ERR_NONE, ids, 1, "ops", 200, T0, &moved, &error), -1);
    assert_non_null (strstr (error, "55P03"));          //  lock_not_available
    free (error);
    error = NULL;
    assert_int_equal (moved, 0);
    mx_testpg_expect (fx->conn, "SELECT state FROM proc_state WHERE msg_id = 7", "DEAD");
    //  The mark is confirmed; then the replay goes through.
    assert_int_equal (mx_procstate_backfill_confirm (backfill, 7, T0 + 1, &error), 0);
    assert_int_equal (mx_procstate_replay (replay, MX_ERR_NONE, ids, 1, "ops", 200, T0 + 2, &moved, &error), 0);
    assert_int_equal (moved, 1);

    //  The other order: the replay committed first, so a backfill finds
    //  nothing owed and writes no mark for a row that is PENDING again.
    assert_int_equal (mx_procstate_finish (fx->conn, 7, MX_STATE_DEAD, MX_ERR_EXHAUSTED, "y", NULL, T0 + 3, &error), 1);
    assert_int_equal (mx_procstate_replay (replay, MX_ERR_NONE, ids, 1, "ops", 200, T0 + 4, &moved, &error), 0);
    assert_int_equal (moved, 1);
    assert_int_equal (mx_procstate_backfill_lock (backfill, 7, &error), 0);
    mx_testpg_expect (fx->conn, "SELECT state || ' ' || (backfill_next_at IS NULL) FROM proc_state WHERE msg_id = 7", "PENDING true");

    //  Poison escalation only takes a FAILED row: after a replay moved it,
    //  a late escalation is a no-op.
    bool dead = false;
    int64_t backoff [] = { 1000 };
    assert_int_equal (mx_procstate_fail (fx->conn, 7, MX_ERR_INFRA, "down", T0 + 5, 5, backoff, 1, 60000, &dead, &error), 1);
    assert_int_equal (mx_procstate_replay (replay, MX_ERR_INFRA, NULL, 0, "ops", 200, T0 + 6, &moved, &error), 0);
    assert_int_equal (moved, 1);
    assert_int_equal (mx_procstate_poison (fx->conn, 7, "head-deadline exceeded", T0 + 7, &error), 0);
    mx_testpg_expect (fx->conn, "SELECT state FROM proc_state WHERE msg_id = 7", "PENDING");
    mx_pg_disconnect (&backfill);
    mx_pg_disconnect (&replay);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_repeated_scans_never_duplicate_or_lose, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_hole_holds_w_then_only_the_hole_is_released, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_late_arrivals_cover_a_hole_wider_than_a_page, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_filled_hole_resets_and_a_new_hole_gets_a_full_window, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_unreadable_mailbox_is_a_failure_not_an_empty_batch, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_cutover_forms_and_refusal_on_a_used_instance, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_failed_head_blocks_everything_behind_it_until_due, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_duplicate_with_payload_missing_is_skipped_one_by_one, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_duplicate_with_payload_missing_is_skipped_in_a_batch, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_duplicate_with_payload_missing_is_skipped_in_batches_cut_by_bytes,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_compat_row_above_w_waits_for_the_watermark, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_ingress_polls_fast_while_rows_arrive_and_backs_off_when_idle,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_replay_moves_exhausted_rows_back_and_they_run_again, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_replay_and_backfill_never_interleave, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_retained_raw_text_outlives_the_mailbox_row, s_setup, s_teardown),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
