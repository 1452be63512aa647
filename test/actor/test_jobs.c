/*  Integration tests of the daily maintenance jobs (SPEC §6.2): the jobs
    actor with the injected clock, and the batches of db/mx_jobs, against
    a real PostgreSQL.

    Waiting is on database events: triggers NOTIFY on every change of the
    tables the jobs touch, and the test LISTENs.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <libpq-fe.h>
#include <poll.h>

#include "mx_actor.h"
#include "mx_config.h"
#include "mx_metrics.h"
#include "mx_migrate.h"
#include "mx_outbox.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_rawstore.h"
#include "mx_testactor.h"
#include "mx_testenv.h"
#include "mx_tz.h"

#include "mx_jobs_actor.h"
#include "mx_jobs.h"

#define WAIT_MS 20000
//  2026-01-20 03:00 in Asia/Shanghai (UTC+8), half an hour before run-at.
#define T0 1768849200000LL
#define RUN_AT (T0 + 30 * 60 * 1000)
#define HOUR_MS (3600LL * 1000)
#define DAY_MS (24 * HOUR_MS)

typedef struct {
    mx_testpg_t *pg;
    mx_clock_t *clock;
    mx_config_t *config;
    PGconn *conn;               //  the test's own connection, LISTENing
    mx_actor_args_t args;
    zactor_t *actor;
} fixture_t;

static const char *s_watch_sql =
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify ('mx_test', TG_TABLE_NAME); RETURN NULL; END $$;"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE OR DELETE ON proc_state_hst"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE OR DELETE ON flight_schd_hst"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE OR DELETE ON schd_snap_log"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

//  Flights on both sides of every bound (today's operation day is
//  2026-01-20; retention 7 days keeps 2026-01-13 on; quiet 2 days means
//  not updated since 2026-01-17 19:30Z).
static const char *s_data_sql =
    "INSERT INTO flight_schd (flid, alcd, flno, mvin, sodt, operation_day, state_version, lifecycle,"
    " deleted_at, updated_at, extra) VALUES"
    //  old and quiet: moves, tombstone
    " (101, 'CZ', '3101', 'D', '2026-01-10 08:00+08', '2026-01-10', 3, 'ACTIVE', NULL,"
    "  '2026-01-11 00:00Z', '{\"XTRA\":\"kept\"}'),"
    //  old and deleted by FDEL (recently): moves, no new tombstone
    " (102, 'CZ', '3102', 'A', '2026-01-10 09:00+08', '2026-01-10', 5, 'DELETED', '2026-01-19 00:00Z',"
    "  '2026-01-19 00:00Z', '{}'),"
    //  within retention: stays
    " (103, 'CZ', '3103', 'D', '2026-01-18 08:00+08', '2026-01-18', 1, 'ACTIVE', NULL,"
    "  '2026-01-11 00:00Z', '{}'),"
    //  old but changed today: not quiet, stays
    " (104, 'CZ', '3104', 'D', '2026-01-05 08:00+08', '2026-01-05', 9, 'ACTIVE', NULL,"
    "  '2026-01-20 00:00Z', '{}'),"
    //  the last day out of retention: moves
    " (105, 'MU', '5105', 'A', '2026-01-12 23:00+08', '2026-01-12', 2, 'ACTIVE', NULL,"
    "  '2026-01-13 00:00Z', '{}'),"
    //  the first day in retention: stays
    " (106, 'MU', '5106', 'A', '2026-01-13 01:00+08', '2026-01-13', 2, 'ACTIVE', NULL,"
    "  '2026-01-13 00:00Z', '{}');"
    "INSERT INTO flight_stand (flid, psno, psst) VALUES (101, 1, 'S1'), (101, 2, 'S2'), (103, 1, 'S9');"
    "INSERT INTO flight_gate (flid, gtno, gate) VALUES (101, 1, 'G1'), (102, 1, 'G2');"
    "INSERT INTO flight_checkin (flid, ckno, chkc) VALUES (101, 1, 'C1');"
    "INSERT INTO flight_carousel (flid, clno, belt) VALUES (105, 1, 'B1');"
    "INSERT INTO flight_chute (flid, chno, chut) VALUES (101, 1, 'U1');"
    "INSERT INTO flight_airbridge (flid, asno, abdg, abop) VALUES (101, 1, 'A1', 'D');"
    "INSERT INTO flight_chock (flid, csno, chid) VALUES (101, 1, 'ON');"
    "INSERT INTO flight_delay (flid, seq, code, dura) VALUES (101, 1, '93', 45);"
    "INSERT INTO flight_route_point (flid, kind, rtno, apcd) VALUES"
    " (101, 'ROUT', 1, 'PEK'), (101, 'ROUT', 2, 'CAN'), (101, 'ERUT', 1, 'SHA');"
    //  snapshot log: 90 days back is 2025-10-21 19:30Z
    "INSERT INTO schd_snap_log (msg_id, styp, recv_at) VALUES"
    " (11, 'DNLD', '2025-10-01 00:00Z'), (12, 'DNLD', '2025-11-01 00:00Z');"
    //  proc_state: 30 days back is 2025-12-20 19:30Z
    "INSERT INTO identity (identity_key, msg_id) VALUES ('AODB|FLOP|UPD|1', 1);"
    "INSERT INTO proc_state (msg_id, state, identity_key, error_class, finished_at, backfill_next_at,"
    " backfill_at, backfill_abandoned_at, backfill_abandoned_reason) VALUES"
    //  settled marks, old: move
    " (1, 'SUCCEEDED', 'AODB|FLOP|UPD|1', NULL, '2025-12-01 00:00Z', NULL, '2025-12-01 00:00Z', NULL, NULL),"
    " (2, 'DEAD', NULL, 'MALFORMED', '2025-12-01 00:00Z', '2025-12-01 00:00Z', NULL, '2025-12-02 00:00Z', 'MISSING'),"
    //  mark still owed: stays
    " (3, 'SKIPPED', NULL, NULL, '2025-12-01 00:00Z', '2025-12-01 00:00Z', NULL, NULL, NULL),"
    //  settled but young: stays
    " (4, 'SUCCEEDED', NULL, NULL, '2026-01-10 00:00Z', NULL, '2026-01-10 00:00Z', NULL, NULL);"
    "INSERT INTO proc_state (msg_id, state, attempts, error_class, updated_at) VALUES"
    " (5, 'FAILED', 1, 'INFRA', '2025-11-01 00:00Z');"
    "INSERT INTO proc_state (msg_id, state, updated_at) VALUES (6, 'PENDING', '2025-11-01 00:00Z');"
    //  retained raw texts: 7 days back is 2026-01-12 19:30Z
    "INSERT INTO raw_message (msg_id, kept_at, raw) VALUES"
    " (21, '2026-01-01 00:00Z', '<MSG/>'), (22, '2026-01-12 00:00Z', '<MSG/>'), (23, '2026-01-18 00:00Z', '<MSG/>');";

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    fx->pg = mx_testactor_pg (&fx->conn);
    fx->clock = mx_clock_new_fake (T0);
    mx_testpg_exec (fx->conn, s_watch_sql);
    mx_testpg_exec (fx->conn, s_data_sql);
    fx->config = mx_testactor_config (fx->pg);
    mx_testactor_set (fx->config, "msgx.history.history-store-enabled", "true");
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
s_start (fixture_t *fx, char **detail)
{
    fx->args = (mx_actor_args_t) { "jobs", fx->config, fx->clock, "test", NULL, NULL };
    fx->actor = mx_testactor_start (mx_jobs_actor, &fx->args, "jobs", detail);
}

//  ---------------------------------------------------------------------

static void
test_next_run_once_a_day_in_airport_time (void **state)
{
    (void) state;
    char *error = NULL;
    mx_tz_t *zone = mx_tz_load ("Asia/Shanghai", &error);
    assert_non_null (zone);
    int64_t today = mx_tz_local_day (zone, T0);
    assert_int_equal (today, mx_tz_days_from_civil (2026, 1, 20));
    //  Before run-at: today's; after it: now; once run: tomorrow's.
    assert_int_equal (mx_jobs_next_run (zone, 210, T0, -1), RUN_AT);
    assert_int_equal (mx_jobs_next_run (zone, 210, RUN_AT + 1, -1), RUN_AT + 1);
    assert_int_equal (mx_jobs_next_run (zone, 210, RUN_AT + 1, today), RUN_AT + DAY_MS);
    //  Late in the local evening (23:59) after today's run.
    assert_int_equal (mx_jobs_next_run (zone, 210, T0 + 21 * HOUR_MS - 60000, today), RUN_AT + DAY_MS);
    //  Right after local midnight the day is a new one.
    assert_int_equal (mx_jobs_next_run (zone, 210, T0 + 21 * HOUR_MS, today), RUN_AT + DAY_MS);
    assert_int_equal (mx_jobs_next_run (zone, 0, T0, -1), T0);
    mx_tz_destroy (&zone);
}

static void
test_daily_run_moves_history_trims_log_and_archives (void **state)
{
    fixture_t *fx = *state;
    char *detail = NULL;
    s_start (fx, &detail);
    assert_non_null (strstr (detail, "03:30 Asia/Shanghai"));
    free (detail);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM flight_schd", "6");
    mx_clock_advance (fx->clock, RUN_AT - T0);
    //  The archive is the last step of a run.
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM proc_state_hst");

    //  History: the whole flight with all its sets, stamped with the run.
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid::text, ',' ORDER BY flid) FROM flight_schd", "103,104,106");
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid || ':' || state_version || ':' || lifecycle, ',' ORDER BY flid)"
                        " FROM flight_schd_hst", "101:3:ACTIVE,102:5:DELETED,105:2:ACTIVE");
    mx_testpg_expect (fx->conn, "SELECT bool_and (archived_at = to_timestamp (1768851000)) FROM flight_schd_hst", "t");
    mx_testpg_expect (fx->conn, "SELECT extra->>'XTRA' || ' ' || operation_day || ' ' || (sodt = '2026-01-10 08:00+08')"
                        " FROM flight_schd_hst WHERE flid = 101", "kept 2026-01-10 true");
    mx_testpg_expect (fx->conn,
        "SELECT (SELECT string_agg (psst, ',' ORDER BY psno) FROM flight_stand_hst WHERE flid = 101)"
        " || ' ' || (SELECT string_agg (gate, ',' ORDER BY flid) FROM flight_gate_hst)"
        " || ' ' || (SELECT chkc FROM flight_checkin_hst) || ' ' || (SELECT belt FROM flight_carousel_hst WHERE flid = 105)"
        " || ' ' || (SELECT chut FROM flight_chute_hst) || ' ' || (SELECT abdg || '/' || abop FROM flight_airbridge_hst)"
        " || ' ' || (SELECT chid FROM flight_chock_hst) || ' ' || (SELECT code || '/' || dura FROM flight_delay_hst)"
        " || ' ' || (SELECT string_agg (kind || rtno || apcd, ',' ORDER BY kind DESC, rtno) FROM flight_route_point_hst)",
        "S1,S2 G1,G2 C1 B1 U1 A1/D ON 93/45 ROUT1PEK,ROUT2CAN,ERUT1SHA");
    mx_testpg_expect (fx->conn,
        "SELECT (SELECT count(*) FROM flight_stand) || ' ' || (SELECT count(*) FROM flight_gate)"
        " || ' ' || (SELECT count(*) FROM flight_route_point) || ' ' || (SELECT count(*) FROM flight_delay)"
        " || ' ' || (SELECT count(*) FROM flight_carousel)", "1 0 0 0 0");
    //  A tombstone for each flight never deleted by FDEL, null value.
    mx_testpg_expect (fx->conn, "SELECT string_agg (target || ':' || event_type || ':' || flid || ':' || state_version || ':'"
                        " || (payload IS NULL) || ':' || (msg_id IS NULL) || ':' || state, ',' ORDER BY flid)"
                        " FROM msg_event", "KAFKA:schd:TOMBSTONE:101:4:true:true:PENDING,"
                                           "KAFKA:schd:TOMBSTONE:105:3:true:true:PENDING");
    //  Snapshot log: only the row past 90 days goes.
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id::text, ',') FROM schd_snap_log", "12");
    //  Archive: settled and old only; PENDING/FAILED never.
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || state, ',' ORDER BY msg_id) FROM proc_state_hst",
                    "1:SUCCEEDED,2:DEAD");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id::text, ',' ORDER BY msg_id) FROM proc_state", "3,4,5,6");
    mx_testpg_expect (fx->conn, "SELECT identity_key || ' ' || (archived_at = to_timestamp (1768851000))"
                        " || ' ' || (backfill_at = '2025-12-01 00:00Z') FROM proc_state_hst WHERE msg_id = 1",
                    "AODB|FLOP|UPD|1 true true");
    mx_testpg_expect (fx->conn, "SELECT backfill_abandoned_reason FROM proc_state_hst WHERE msg_id = 2", "MISSING");
    //  Raw retention, the run's last step: only the copies past 7 days go.
    mx_testpg_wait (fx->conn, "SELECT count(*) = 1 FROM raw_message");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id::text, ',') FROM raw_message", "23");
    //  The identity outlives the archive: a new message with the same
    //  business identity is still found to be a duplicate of 1.
    mx_testpg_exec (fx->conn, "INSERT INTO proc_state (msg_id) VALUES (7)");
    char *error = NULL;
    assert_int_equal (mx_procstate_bind_identity (fx->conn, 7, "AODB|FLOP|UPD|1", RUN_AT, &error), 1);
    mx_testpg_expect (fx->conn, "SELECT identity_key IS NULL FROM proc_state WHERE msg_id = 7", "t");

    //  The next day's run takes what has become old since.
    mx_testpg_exec (fx->conn, "INSERT INTO flight_schd (flid, alcd, flno, mvin, sodt, operation_day, lifecycle, updated_at)"
               " VALUES (107, 'CA', '1107', 'D', '2026-01-13 08:00+08', '2026-01-13', 'ACTIVE', '2026-01-13 00:00Z')");
    mx_clock_advance (fx->clock, DAY_MS);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM flight_schd_hst WHERE flid IN (106, 107)");
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid::text, ',' ORDER BY flid) FROM flight_schd", "103,104");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM msg_event WHERE flid IN (106, 107) AND event_type = 'TOMBSTONE'", "2");
}

//  The read API's state-document cache (mx_doc_cache.h): the flights the
//  history sweep deletes leave it, and a read of one begun before the
//  sweep never enters it afterwards; the flights that stay stay.
static void
test_history_sweep_leaves_the_read_cache (void **state)
{
    fixture_t *fx = *state;
    mx_doc_cache_t *cache = mx_doc_cache_new (16, 65536, 0);
    assert_non_null (cache);
    mx_doc_cache_enable (cache);
    for (int64_t flid = 101; flid <= 106; flid++)
        assert_true (mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), flid, 1, "{}", 2));
    uint64_t before = mx_doc_cache_ticket (cache);
    fx->args = (mx_actor_args_t) { "jobs", fx->config, fx->clock, "test", NULL, cache };
    fx->actor = mx_testactor_start (mx_jobs_actor, &fx->args, "jobs", NULL);
    mx_clock_advance (fx->clock, RUN_AT - T0);
    //  The archive comes after the history step, on the same thread.
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM proc_state_hst");
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid::text, ',' ORDER BY flid) FROM flight_schd", "103,104,106");
    int64_t version = 0;
    for (int64_t flid = 101; flid <= 106; flid++) {
        bool kept = flid == 103 || flid == 104 || flid == 106;
        assert_int_equal (mx_doc_cache_get (cache, flid, &version, NULL, NULL), kept);
    }
    assert_false (mx_doc_cache_put (cache, before, 101, 1, "{}", 2));
    assert_true (mx_doc_cache_put (cache, before, 103, 1, "{}", 2));
    mx_actor_destroy (&fx->actor);
    mx_doc_cache_destroy (&cache);
}

static void
test_disabled_store_deletes_nothing (void **state)
{
    fixture_t *fx = *state;
    mx_testactor_set (fx->config, "msgx.history.history-store-enabled", "false");
    char *detail = NULL;
    s_start (fx, &detail);
    assert_non_null (strstr (detail, "nothing deleted"));
    free (detail);
    mx_clock_advance (fx->clock, RUN_AT - T0);
    //  The same run still trims the log and archives.
    mx_testpg_wait (fx->conn, "SELECT count(*) = 2 FROM proc_state_hst");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM schd_snap_log", "1");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM flight_schd", "6");
    mx_testpg_expect (fx->conn, "SELECT (SELECT count(*) FROM flight_schd_hst) + (SELECT count(*) FROM flight_stand_hst)"
                        " + (SELECT count(*) FROM msg_event)", "0");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM flight_stand", "3");
}

static void
test_batches_are_bounded_and_skip_held_rows (void **state)
{
    fixture_t *fx = *state;
    char *error = NULL;
    PGconn *conn = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test-jobs", 30000, &error);
    PGconn *processor = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test-processor", 30000, &error);
    assert_non_null (conn);
    assert_non_null (processor);
    int64_t count = 0;
    mx_jobs_history_t which = {
        .before_day = mx_tz_days_from_civil (2026, 1, 13), .quiet_before_ms = T0 - 2 * DAY_MS
    };
    assert_int_equal (mx_jobs_history_count (conn, &which, &count, &error), 0);
    assert_int_equal (count, 3);

    //  The processor holds 101 (it is changing it): skipped, not waited for.
    assert_int_equal (mx_pg_begin (processor, &error), 0);
    assert_int_equal (mx_pg_exec (processor, "SELECT 1 FROM flight_schd WHERE flid = 101 FOR UPDATE", 0, NULL,
                                  NULL, &error), 0);
    int moved = 0, tombstones = 0;
    assert_int_equal (mx_jobs_history_batch (conn, &which, 1, T0, &moved, &tombstones, NULL, NULL, &error), 0);
    assert_int_equal (moved, 1);
    assert_int_equal (tombstones, 0);          //  102, deleted by FDEL
    assert_int_equal (mx_jobs_history_batch (conn, &which, 1, T0, &moved, &tombstones, NULL, NULL, &error), 0);
    assert_int_equal (moved, 1);
    assert_int_equal (tombstones, 1);          //  105
    assert_int_equal (mx_jobs_history_batch (conn, &which, 1, T0, &moved, &tombstones, NULL, NULL, &error), 0);
    assert_int_equal (moved, 0);
    assert_int_equal (mx_pg_commit (processor, &error), 0);
    assert_int_equal (mx_jobs_history_batch (conn, &which, 5, T0, &moved, &tombstones, NULL, NULL, &error), 0);
    assert_int_equal (moved, 1);
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid::text, ',' ORDER BY flid) FROM flight_schd_hst", "101,102,105");

    //  Archive and log, one row a batch.
    assert_int_equal (mx_jobs_archive_batch (conn, T0 - 30 * DAY_MS, 1, T0, &moved, &error), 0);
    assert_int_equal (moved, 1);
    assert_int_equal (mx_jobs_archive_batch (conn, T0 - 30 * DAY_MS, 1, T0, &moved, &error), 0);
    assert_int_equal (moved, 1);
    assert_int_equal (mx_jobs_archive_batch (conn, T0 - 30 * DAY_MS, 1, T0, &moved, &error), 0);
    assert_int_equal (moved, 0);
    assert_int_equal (mx_jobs_snap_log_batch (conn, T0 - 90 * DAY_MS, 1, &moved, &error), 0);
    assert_int_equal (moved, 1);
    assert_int_equal (mx_jobs_snap_log_batch (conn, T0 - 90 * DAY_MS, 1, &moved, &error), 0);
    assert_int_equal (moved, 0);

    //  Raw retention: the processor holds 22 (a replay reads it): skipped.
    assert_int_equal (mx_pg_begin (processor, &error), 0);
    assert_int_equal (mx_pg_exec (processor, "SELECT 1 FROM raw_message WHERE msg_id = 22 FOR UPDATE", 0, NULL,
                                  NULL, &error), 0);
    assert_int_equal (mx_rawstore_sweep (conn, T0 - 7 * DAY_MS, 1, &moved, &error), 0);
    assert_int_equal (moved, 1);
    assert_int_equal (mx_rawstore_sweep (conn, T0 - 7 * DAY_MS, 1, &moved, &error), 0);
    assert_int_equal (moved, 0);
    assert_int_equal (mx_pg_commit (processor, &error), 0);
    assert_int_equal (mx_rawstore_sweep (conn, T0 - 7 * DAY_MS, 5, &moved, &error), 0);
    assert_int_equal (moved, 1);
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id::text, ',') FROM raw_message", "23");
    assert_null (error);
    mx_pg_disconnect (&conn);
    mx_pg_disconnect (&processor);
}

//  Outbox retention 2 days (T0 is 2026-01-19 19:00Z). Delivered events
//  older than that go; PENDING and DEAD ones never; on the compacted
//  topics a SENT event stays while an older DEAD event of its key does, so
//  that a dead-letter replay keeps refusing that older state.
static const char *s_outbox_sql =
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE OR DELETE ON msg_event"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "INSERT INTO msg_event (event_id, target, partition_key, event_type, flid, state_version, payload, state,"
    " last_error, sent_at, created_at) VALUES"
    " (1001, 'KAFKA:schd', '201', 'UPSERT', 201, 1, '{}', 'DEAD', 'refused', NULL, '2026-01-09 19:00Z'),"
    " (1002, 'KAFKA:msg', '201', 'UPSERT', 201, 1, '{}', 'PENDING', NULL, NULL, '2026-01-09 19:00Z'),"
    " (1003, 'KAFKA:msg', '202', 'UPSERT', 202, 1, '{}', 'DEAD', 'refused', NULL, '2026-01-09 19:00Z'),"
    " (1004, 'KAFKA:ref', 'L:K', 'UPSERT', 0, 1, '{}', 'DEAD', 'refused', NULL, '2026-01-09 19:00Z'),"
    " (1005, 'KAFKA:schd', '201', 'UPSERT', 201, 2, '{}', 'SENT', NULL, '2026-01-14 19:00Z', '2026-01-14 19:00Z'),"
    " (1006, 'KAFKA:schd', '202', 'UPSERT', 202, 1, '{}', 'SENT', NULL, '2026-01-14 19:00Z', '2026-01-14 19:00Z'),"
    " (1007, 'KAFKA:schd', '202', 'UPSERT', 202, 2, '{}', 'SENT', NULL, '2026-01-15 19:00Z', '2026-01-15 19:00Z'),"
    " (1008, 'KAFKA:ref', 'L:K', 'UPSERT', 0, 2, '{}', 'SENT', NULL, '2026-01-15 19:00Z', '2026-01-15 19:00Z'),"
    " (1009, 'KAFKA:ref', 'L:J', 'UPSERT', 0, 1, '{}', 'SENT', NULL, '2026-01-15 19:00Z', '2026-01-15 19:00Z'),"
    " (1010, 'KAFKA:schd', '203', 'UPSERT', 203, 1, '{}', 'SENT', NULL, '2026-01-15 19:00Z', '2026-01-15 19:00Z'),"
    " (1011, 'KAFKA:schd', '203', 'UPSERT', 203, 2, '{}', 'DEAD', 'refused', NULL, '2026-01-16 19:00Z'),"
    " (1012, 'KAFKA:msg', '204', 'UPSERT', 204, 1, '{}', 'SENT', NULL, '2026-01-16 19:00Z', '2026-01-16 19:00Z'),"
    " (1013, 'KAFKA:msg', '205', 'UPSERT', 205, 1, '{}', 'SENT', NULL, '2026-01-18 19:00Z', '2026-01-18 19:00Z');";

static uint64_t
s_purged (const char *target)
{
    return mx_metrics_counter_value (mx_metrics_counter_by ("msgx_outbox_purged_total", NULL, "target", target));
}

static void
test_outbox_retention (void **state)
{
    fixture_t *fx = *state;
    mx_testactor_set (fx->config, "msgx.outbox.retention", "2d");
    mx_testactor_set (fx->config, "msgx.outbox.purge-period", "1h");
    mx_testpg_exec (fx->conn, s_outbox_sql);
    uint64_t msg = s_purged (MX_OUTBOX_TARGET_MSG), schd = s_purged (MX_OUTBOX_TARGET_SCHD),
             ref = s_purged (MX_OUTBOX_TARGET_REF);
    char *detail = NULL;
    s_start (fx, &detail);
    free (detail);
    //  Nothing before the first pass, one period after the start.
    mx_clock_advance (fx->clock, HOUR_MS - 1);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM msg_event WHERE event_id > 1000", "13");
    mx_clock_advance (fx->clock, 1);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 8 FROM msg_event WHERE event_id > 1000");
    mx_testpg_expect (fx->conn, "SELECT string_agg (event_id::text, ',' ORDER BY event_id) FROM msg_event"
                                " WHERE event_id > 1000", "1001,1002,1003,1004,1005,1008,1011,1013");

    //  Replay of dead events inside the retention: the older dead states
    //  are still refused for the newer one delivered, the newest goes.
    char *error = NULL, *json = NULL;
    int64_t ids [] = { 1001, 1004, 1011 };
    if (mx_outbox_replay_candidates (fx->conn, ids, 3, false, &json, &error))
        fail_msg ("candidates: %s", error);
    assert_non_null (strstr (json, "superseded by event 1005 (SENT)"));
    assert_non_null (strstr (json, "superseded by event 1008 (SENT)"));
    assert_non_null (strstr (json, "\"event_id\" : 1011, \"target\" : \"KAFKA:schd\""));
    free (json);
    int moved = 0;
    if (mx_outbox_replay (fx->conn, ids, 3, "tester", T0, &moved, &error))
        fail_msg ("replay: %s", error);
    assert_int_equal (moved, 1);
    mx_testpg_expect (fx->conn, "SELECT state FROM msg_event WHERE event_id = 1011", "PENDING");

    //  The next pass, two days on, takes what has aged since; PENDING and
    //  DEAD rows stay whatever their age.
    mx_clock_advance (fx->clock, 2 * DAY_MS);
    mx_testpg_wait (fx->conn, "SELECT count(*) = 7 FROM msg_event WHERE event_id > 1000");
    mx_testpg_expect (fx->conn, "SELECT string_agg (event_id || ':' || state, ',' ORDER BY event_id) FROM msg_event"
                                " WHERE event_id > 1000",
                      "1001:DEAD,1002:PENDING,1003:DEAD,1004:DEAD,1005:SENT,1008:SENT,1011:PENDING");
    //  The metrics, once the actor has stopped (it counts after each commit).
    mx_actor_destroy (&fx->actor);
    assert_int_equal (s_purged (MX_OUTBOX_TARGET_MSG) - msg, 2);
    assert_int_equal (s_purged (MX_OUTBOX_TARGET_SCHD) - schd, 3);
    assert_int_equal (s_purged (MX_OUTBOX_TARGET_REF) - ref, 1);
}

//  A pass walks the outbox a page at a time and stops at the events
//  created after the cut-off.
static void
test_outbox_purge_pages (void **state)
{
    fixture_t *fx = *state;
    mx_testpg_exec (fx->conn, s_outbox_sql);
    char *error = NULL;
    PGconn *conn = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test-jobs", 30000, &error);
    assert_non_null (conn);
    mx_outbox_purge_t walk = { 0 };
    int64_t before = T0 - 2 * DAY_MS;
    int deleted = 0, pages = 0;
    while (!walk.done) {
        if (mx_outbox_purge (conn, before, 2, &walk, &error))
            fail_msg ("purge: %s", error);
        deleted += walk.deleted_msg + walk.deleted_schd + walk.deleted_ref;
        pages++;
        assert_true (pages < 20);
    }
    assert_int_equal (deleted, 5);
    //  1001..1013 in pages of two: the page of 1013 (created 01-18) ends it.
    assert_int_equal (pages, 7);
    assert_int_equal (walk.after_id, 1013);
    mx_pg_disconnect (&conn);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_next_run_once_a_day_in_airport_time),
        cmocka_unit_test_setup_teardown (test_daily_run_moves_history_trims_log_and_archives, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_history_sweep_leaves_the_read_cache, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_disabled_store_deletes_nothing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_batches_are_bounded_and_skip_held_rows, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_outbox_retention, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_outbox_purge_pages, s_setup, s_teardown),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
