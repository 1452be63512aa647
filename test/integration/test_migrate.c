/*  test_migrate - schema migrations against a real PostgreSQL.

    Every test gets a fresh empty database from the test server.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mx_migrate.h"
#include "mx_outbox.h"
#include "mx_pg.h"
#include "mx_testenv.h"

typedef struct {
    mx_testpg_t *pg;
    PGconn *conn;
} fixture_t;

static PGconn *
s_connect (mx_testpg_t *pg, const char *name)
{
    char *error = NULL;
    PGconn *conn = mx_pg_connect (mx_testpg_conninfo (pg), name, 30000, &error);
    if (!conn)
        fail_msg ("connect: %s", error ? error : "?");
    return conn;
}

static int
s_setup (void **state)
{
    fixture_t *self = (fixture_t *) calloc (1, sizeof (fixture_t));
    assert_non_null (self);
    self->pg = mx_testpg_new ();
    assert_non_null (self->pg);
    self->conn = s_connect (self->pg, "test_migrate");
    *state = self;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    mx_pg_disconnect (&self->conn);
    mx_pg_disconnect (&self->conn);
    mx_testpg_destroy (&self->pg);
    free (self);
    return 0;
}

//  Run sql (must succeed); returns the first cell as a malloc'd string, or
//  NULL for no row / SQL NULL.
static char *
s_value (PGconn *conn, const char *sql, int nparams, const char *const *values)
{
    PGresult *res = NULL;
    char *error = NULL;
    if (mx_pg_exec (conn, sql, nparams, values, &res, &error))
        fail_msg ("%s", error);
    char *text = NULL;
    if (PQntuples (res) > 0 && PQnfields (res) > 0 && !PQgetisnull (res, 0, 0))
        text = strdup (PQgetvalue (res, 0, 0));
    PQclear (res);
    return text;
}

static int64_t
s_count (PGconn *conn, const char *sql, int nparams, const char *const *values)
{
    char *text = s_value (conn, sql, nparams, values);
    assert_non_null (text);
    int64_t value = strtoll (text, NULL, 10);
    free (text);
    return value;
}

//  Run sql, one or more statements without parameters, which must succeed.
static void
s_exec_ok (PGconn *conn, const char *sql)
{
    char *error = NULL;
    PGresult *res = PQexec (conn, sql);
    if (mx_pg_check (conn, res, sql, &error))
        fail_msg ("%s", error);
    PQclear (res);
}

//  Run sql, which must fail; returns its SQLSTATE.
static const char *
s_exec_fails (PGconn *conn, const char *sql)
{
    static char sqlstate [6];
    PGresult *res = PQexec (conn, sql);
    ExecStatusType status = PQresultStatus (res);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
        fail_msg ("expected failure: %s", sql);
    snprintf (sqlstate, sizeof sqlstate, "%s", mx_pg_sqlstate (res));
    PQclear (res);
    return sqlstate;
}

static void
s_apply_ok (PGconn *conn, int expect_applied)
{
    int applied = -1;
    char *error = NULL;
    if (mx_migrate_apply (conn, &applied, &error))
        fail_msg ("mx_migrate_apply: %s", error);
    assert_null (error);
    assert_int_equal (applied, expect_applied);
}

static void
s_apply_refused (PGconn *conn, const char *expect_in_error)
{
    int applied = -1;
    char *error = NULL;
    assert_int_equal (mx_migrate_apply (conn, &applied, &error), -1);
    assert_int_equal (applied, 0);
    assert_non_null (error);
    if (!strstr (error, expect_in_error))
        fail_msg ("error \"%s\" lacks \"%s\"", error, expect_in_error);
    assert_null (strchr (error, '\n'));
    free (error);
}

//  Every table SPEC.md section 2 names.
static const char *s_tables [] = {
    "schema_migrations",
    "proc_state", "identity", "inbox_cursor", "released_hole", "msg_event",
    "flight_schd", "flight_stand", "flight_gate", "flight_checkin",
    "flight_carousel", "flight_chute", "flight_airbridge", "flight_chock",
    "flight_delay", "flight_route_point",
    "schd_snap_log", "req_track", "ref_master", "req_seqn",
    "flight_schd_hst", "flight_stand_hst", "flight_gate_hst",
    "flight_checkin_hst", "flight_carousel_hst", "flight_chute_hst",
    "flight_airbridge_hst", "flight_chock_hst", "flight_delay_hst",
    "flight_route_point_hst", "proc_state_hst",
    "audit_log",
    NULL
};

static void
test_embedded_table (void **state)
{
    (void) state;
    assert_true (mx_migrate_count () >= 1);
    const mx_migrate_entry_t *first = mx_migrate_entry (0);
    assert_int_equal (first->version, 1);
    assert_string_equal (first->name, "baseline");
    assert_string_equal (first->file, "V001__baseline.sql");
    assert_int_equal (strlen (first->sql), first->sql_len);
    assert_int_equal (strlen (first->checksum), 64);
    int previous = 0;
    for (int i = 0; i < mx_migrate_count (); i++) {
        assert_true (mx_migrate_entry (i)->version > previous);
        previous = mx_migrate_entry (i)->version;
    }
    assert_int_equal (mx_migrate_latest_version (), previous);
}

static void
test_fresh_database (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_apply_ok (self->conn, mx_migrate_count ());

    for (const char **table = s_tables; *table; table++) {
        const char *params [] = { *table };
        int64_t found = s_count (self->conn,
            "SELECT count(*) FROM information_schema.tables"
            " WHERE table_schema = current_schema () AND table_name = $1"
            "   AND table_type = 'BASE TABLE'", 1, params);
        if (found != 1)
            fail_msg ("table %s is missing", *table);
    }

    //  The cursor row exists from the start, W = 0, nothing else set.
    assert_int_equal (s_count (self->conn, "SELECT count(*) FROM inbox_cursor", 0, NULL), 1);
    assert_int_equal (s_count (self->conn,
        "SELECT count(*) FROM inbox_cursor WHERE committed_up_to = 0"
        " AND hole_since IS NULL AND seeded_at IS NULL", 0, NULL), 1);
    assert_int_equal (s_count (self->conn,
        "SELECT count(*) FROM req_seqn WHERE last_seqn = 0", 0, NULL), 1);

    //  Each recorded checksum is the SHA-256 of exactly the text that ran.
    assert_int_equal (s_count (self->conn, "SELECT count(*) FROM schema_migrations", 0, NULL),
                      mx_migrate_count ());
    for (int i = 0; i < mx_migrate_count (); i++) {
        const mx_migrate_entry_t *entry = mx_migrate_entry (i);
        char version [16];
        snprintf (version, sizeof version, "%d", entry->version);
        const char *params [] = { version, entry->sql, entry->name };
        assert_int_equal (s_count (self->conn,
            "SELECT count(*) FROM schema_migrations WHERE version = $1"
            "   AND name = $3"
            "   AND checksum = encode (sha256 (convert_to ($2, 'UTF8')), 'hex')",
            3, params), 1);
    }
}

static void
test_second_run_applies_nothing (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_apply_ok (self->conn, mx_migrate_count ());
    char *applied_at = s_value (self->conn,
        "SELECT max(applied_at)::text FROM schema_migrations", 0, NULL);
    s_apply_ok (self->conn, 0);
    s_apply_ok (self->conn, 0);
    assert_int_equal (s_count (self->conn, "SELECT count(*) FROM schema_migrations", 0, NULL),
                      mx_migrate_count ());
    char *again = s_value (self->conn,
        "SELECT max(applied_at)::text FROM schema_migrations", 0, NULL);
    assert_string_equal (applied_at, again);
    free (applied_at);
    free (again);
    //  Data survives a re-run: nothing is re-created.
    s_exec_ok (self->conn, "UPDATE inbox_cursor SET committed_up_to = 42");
    s_apply_ok (self->conn, 0);
    assert_int_equal (s_count (self->conn,
        "SELECT committed_up_to FROM inbox_cursor", 0, NULL), 42);
}

static void
test_changed_migration_refused (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_apply_ok (self->conn, mx_migrate_count ());
    s_exec_ok (self->conn,
        "UPDATE schema_migrations SET checksum = 'deadbeef' WHERE version = 1");
    s_apply_refused (self->conn, "migration V001 was changed after it was applied");
    //  The refusal leaves no transaction open behind it.
    assert_int_equal (PQtransactionStatus (self->conn), PQTRANS_IDLE);
}

static void
test_newer_database_refused (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_apply_ok (self->conn, mx_migrate_count ());
    char version [16];
    snprintf (version, sizeof version, "%d", mx_migrate_latest_version () + 1);
    const char *params [] = { version };
    char *error = NULL;
    if (mx_pg_exec (self->conn,
            "INSERT INTO schema_migrations (version, name, checksum, applied_at)"
            " VALUES ($1, 'from_the_future', 'x', now ())", 1, params, NULL, &error))
        fail_msg ("%s", error);
    s_apply_refused (self->conn, "newer than this msgxd knows");
}

static void
test_unknown_version_refused (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_apply_ok (self->conn, mx_migrate_count ());
    s_exec_ok (self->conn,
        "INSERT INTO schema_migrations (version, name, checksum, applied_at)"
        " VALUES (0, 'stray', 'x', now ())");
    s_apply_refused (self->conn, "database has migration V000 which this msgxd does not know");
}

//  A migration that fails leaves nothing behind: not its tables, not its
//  schema_migrations row.
static void
test_failed_migration_rolls_back (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_exec_ok (self->conn, "CREATE TABLE audit_log (x integer)");
    s_apply_refused (self->conn, "migration V001 (V001__baseline.sql) failed");
    assert_int_equal (PQtransactionStatus (self->conn), PQTRANS_IDLE);
    assert_int_equal (s_count (self->conn, "SELECT count(*) FROM schema_migrations", 0, NULL), 0);
    assert_null (s_value (self->conn, "SELECT to_regclass ('proc_state')::text", 0, NULL));
    //  Once the obstacle is gone the same database migrates normally.
    s_exec_ok (self->conn, "DROP TABLE audit_log");
    s_apply_ok (self->conn, mx_migrate_count ());
}

//  A connection lost under the applier is an error, never a crash or a
//  half-applied schema.
static void
test_lost_connection (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    PGconn *victim = s_connect (self->pg, "victim");
    char pid [16];
    snprintf (pid, sizeof pid, "%d", PQbackendPID (victim));
    const char *params [] = { pid };
    assert_int_equal (s_count (self->conn,
        "SELECT count(*) FROM pg_terminate_backend ($1::int, 30000) AS gone WHERE gone",
        1, params), 1);
    //  First call finds out on its first statement, the second up front.
    s_apply_refused (victim, "cannot lock for schema migration");
    assert_true (mx_pg_is_connection_error (victim));
    s_apply_refused (victim, "connection is not open");
    mx_pg_disconnect (&victim);
    assert_null (s_value (self->conn, "SELECT to_regclass ('proc_state')::text", 0, NULL));
}

typedef struct {
    PGconn *conn;
    int rc;
    int applied;
    char *error;
} applier_t;

static void *
s_applier (void *arg)
{
    applier_t *applier = (applier_t *) arg;
    applier->rc = mx_migrate_apply (applier->conn, &applier->applied, &applier->error);
    return NULL;
}

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

//  Two appliers released at the same instant: each version is applied by
//  exactly one of them, and both succeed.
static void
test_concurrent_appliers (void **state)
{
    fixture_t *self = (fixture_t *) *state;

    //  Hold the migration lock so both appliers queue on it before either
    //  can start; releasing it makes them race.
    char *error = NULL;
    const char *key [] = { MX_MIGRATE_LOCK_KEY };
    if (mx_pg_begin (self->conn, &error)
    ||  mx_pg_exec (self->conn, "SELECT pg_advisory_xact_lock ($1::bigint)",
                    1, key, NULL, &error))
        fail_msg ("%s", error);

    applier_t appliers [2] = {
        { .conn = s_connect (self->pg, "applier-a") },
        { .conn = s_connect (self->pg, "applier-b") }
    };
    pthread_t threads [2];
    for (int i = 0; i < 2; i++)
        assert_int_equal (pthread_create (&threads [i], NULL, s_applier, &appliers [i]), 0);

    //  Each check is a round trip that waits on the server's answer.
    PGconn *watcher = s_connect (self->pg, "watcher");
    double deadline = s_now () + 30;
    int64_t waiting = 0;
    while (waiting < 2 && s_now () < deadline)
        waiting = s_count (watcher,
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE d.datname = current_database () AND l.locktype = 'advisory'"
            "   AND NOT l.granted", 0, NULL);
    if (waiting != 2)
        fail_msg ("%d appliers waited for the migration lock, expected 2", (int) waiting);
    if (mx_pg_commit (self->conn, &error))
        fail_msg ("%s", error);

    for (int i = 0; i < 2; i++)
        assert_int_equal (pthread_join (threads [i], NULL), 0);
    for (int i = 0; i < 2; i++) {
        if (appliers [i].rc)
            fail_msg ("applier %d: %s", i, appliers [i].error);
        mx_pg_disconnect (&appliers [i].conn);
    }
    assert_int_equal (appliers [0].applied + appliers [1].applied, mx_migrate_count ());
    assert_int_equal (s_count (watcher, "SELECT count(*) FROM schema_migrations", 0, NULL),
                      mx_migrate_count ());
    assert_int_equal (s_count (watcher, "SELECT count(*) FROM inbox_cursor", 0, NULL), 1);
    mx_pg_disconnect (&watcher);
}

//  ---------------------------------------------------------------------------
//  The schema itself

typedef struct {
    const char *column;
    const char *type;           //  information_schema data_type
} column_t;

//  WIRE.md section 6: every FLIGHT_SCHD scalar, by wire code.
static const column_t s_flight_scalars [] = {
    { "flid", "bigint" }, { "alcd", "text" }, { "alsc", "text" },
    { "flno", "text" }, { "mvin", "text" },
    { "sodt", "timestamp with time zone" }, { "operation_day", "date" },
    { "flty", "text" }, { "flin", "text" }, { "acft", "text" },
    { "reno", "text" }, { "trml", "text" }, { "maxp", "bigint" },
    { "runw", "text" }, { "stnd", "text" },
    { "taop", "text" }, { "tafl", "text" }, { "taid", "bigint" },
    { "csop", "text" }, { "csft", "text" }, { "maid", "bigint" },
    { "phag", "bigint" }, { "fhag", "bigint" }, { "mhag", "bigint" },
    { "exsc", "text" }, { "exsr", "text" }, { "ftss", "text" },
    { "remc", "text" }, { "vipp", "bigint" }, { "vipr", "bigint" },
    { "cncl", "timestamp with time zone" },
    { "fdiv_ddes", "text" }, { "fdiv_ddir", "text" }, { "fdiv", "text" },
    { "fret_reid", "text" }, { "fret", "text" },
    { "flab_ares", "text" }, { "flab", "text" },
    { "estt", "timestamp with time zone" }, { "actt", "timestamp with time zone" },
    { "appt", "timestamp with time zone" }, { "botm", "timestamp with time zone" },
    { "lacl", "timestamp with time zone" }, { "fint", "timestamp with time zone" },
    { "egsr", "timestamp with time zone" }, { "egst", "timestamp with time zone" },
    { "cobt", "timestamp with time zone" }, { "ctot", "timestamp with time zone" },
    { "eobt", "timestamp with time zone" }, { "tobt", "timestamp with time zone" },
    { "iest", "timestamp with time zone" }, { "pedt", "timestamp with time zone" },
    { "neat", "timestamp with time zone" }, { "padt", "timestamp with time zone" },
    { "naat", "timestamp with time zone" },
    { "port_open", "timestamp with time zone" }, { "port_close", "timestamp with time zone" },
    { "lbno", "bigint" }, { "lbwt", "bigint" }, { "paxc", "bigint" },
    { "psht", "jsonb" }, { "tipt", "jsonb" }, { "srvt", "jsonb" }, { "vipf", "jsonb" },
    { "extra", "jsonb" }, { "state_version", "bigint" }, { "last_msg_id", "bigint" },
    { "lifecycle", "text" }, { "deleted_at", "timestamp with time zone" },
    { "created_at", "timestamp with time zone" }, { "updated_at", "timestamp with time zone" },
    { NULL, NULL }
};

static void
s_assert_column (PGconn *conn, const char *table, const char *column, const char *type)
{
    const char *params [] = { table, column };
    char *found = s_value (conn,
        "SELECT data_type FROM information_schema.columns"
        " WHERE table_schema = current_schema () AND table_name = $1"
        "   AND column_name = $2", 2, params);
    if (!found)
        fail_msg ("%s.%s is missing", table, column);
    if (strcmp (found, type) != 0)
        fail_msg ("%s.%s is %s, expected %s", table, column, found, type);
    free (found);
}

//  Primary key columns of table, comma-separated in key order.
static char *
s_primary_key (PGconn *conn, const char *table)
{
    const char *params [] = { table };
    return s_value (conn,
        "SELECT string_agg (a.attname, ',' ORDER BY k.n)"
        "  FROM pg_index i"
        "  CROSS JOIN LATERAL unnest (i.indkey) WITH ORDINALITY AS k (attnum, n)"
        "  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum"
        " WHERE i.indrelid = $1::regclass AND i.indisprimary", 1, params);
}

static void
test_flight_columns (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_apply_ok (self->conn, mx_migrate_count ());
    for (const column_t *c = s_flight_scalars; c->column; c++)
        s_assert_column (self->conn, "flight_schd", c->column, c->type);

    //  The sets, with their keys and a timestamp child each.
    const column_t sets [] = {
        { "flight_stand", "psno" }, { "flight_gate", "gtno" },
        { "flight_checkin", "ckno" }, { "flight_carousel", "clno" },
        { "flight_chute", "chno" }, { "flight_airbridge", "asno" },
        { "flight_chock", "csno" }, { "flight_delay", "seq" },
        { NULL, NULL }
    };
    for (const column_t *s = sets; s->column; s++) {
        s_assert_column (self->conn, s->column, "flid", "bigint");
        s_assert_column (self->conn, s->column, s->type, "integer");
        char *key = s_primary_key (self->conn, s->column);
        char expect [64];
        snprintf (expect, sizeof expect, "flid,%s", s->type);
        assert_non_null (key);
        assert_string_equal (key, expect);
        free (key);
    }
    s_assert_column (self->conn, "flight_stand", "stst", "timestamp with time zone");
    s_assert_column (self->conn, "flight_delay", "dura", "integer");
    s_assert_column (self->conn, "flight_delay", "reason", "text");
    s_assert_column (self->conn, "flight_route_point", "scat", "timestamp with time zone");
    char *key = s_primary_key (self->conn, "flight_route_point");
    assert_string_equal (key, "flid,kind,rtno");
    free (key);
}

//  Every history table has its live table's columns, in order, plus
//  archived_at.
static void
test_history_tables_mirror_live (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_apply_ok (self->conn, mx_migrate_count ());
    const char *live [] = {
        "flight_schd", "flight_stand", "flight_gate", "flight_checkin",
        "flight_carousel", "flight_chute", "flight_airbridge", "flight_chock",
        "flight_delay", "flight_route_point", "proc_state", NULL
    };
    for (const char **table = live; *table; table++) {
        char hst [64];
        snprintf (hst, sizeof hst, "%s_hst", *table);
        const char *params [] = { *table, hst };
        const char *sql =
            "SELECT string_agg (column_name || ':' || data_type, ',' ORDER BY ordinal_position)"
            "  FROM information_schema.columns"
            " WHERE table_schema = current_schema () AND table_name = $1";
        char *live_columns = s_value (self->conn, sql, 1, params);
        char *hst_columns = s_value (self->conn, sql, 1, params + 1);
        assert_non_null (live_columns);
        assert_non_null (hst_columns);
        char expect [4096];
        snprintf (expect, sizeof expect, "%s,archived_at:timestamp with time zone",
                  live_columns);
        assert_string_equal (hst_columns, expect);
        free (live_columns);
        free (hst_columns);
    }
    //  Archiving is a plain copy: the copy of a flight goes in as it is.
    s_exec_ok (self->conn,
        "INSERT INTO flight_schd (flid, alcd, flno, mvin, sodt, operation_day, last_msg_id)"
        " VALUES (15, 'YG', 'YG9028', 'D', '2021-01-22 21:35:00+00', '2021-01-23', 7);"
        "INSERT INTO flight_schd_hst SELECT f.*, now () FROM flight_schd f;"
        "INSERT INTO flight_schd_hst SELECT f.*, now () + interval '1 day' FROM flight_schd f");
    assert_int_equal (s_count (self->conn,
        "SELECT count(*) FROM flight_schd_hst WHERE flid = 15", 0, NULL), 2);
}

static void
test_constraints (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    PGconn *conn = self->conn;
    s_apply_ok (conn, mx_migrate_count ());

    //  Enumerations.
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO proc_state (msg_id, state) VALUES (1, 'DONE')"), "23514");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO proc_state (msg_id, source) VALUES (1, 'http')"), "23514");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO proc_state (msg_id, error_class) VALUES (1, 'OOPS')"), "23514");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO proc_state (msg_id, state, backfill_abandoned_at,"
        " backfill_abandoned_reason) VALUES (1, 'DEAD', now (), 'LOST')"), "23514");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO msg_event (target, partition_key, event_type, flid, state_version)"
        " VALUES ('KAFKA:other', '1', 'UPSERT', 1, 1)"), "23514");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO req_track (kind, seqn, registered_at) VALUES ('RQXX', 1, now ())"),
        "23514");

    //  A mark is never owed by a row that is not terminal.
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO proc_state (msg_id, state, backfill_next_at)"
        " VALUES (1, 'FAILED', now ())"), "23514");
    s_exec_ok (conn,
        "INSERT INTO proc_state (msg_id, state, backfill_next_at, identity_key)"
        " VALUES (1, 'SUCCEEDED', now (), 'AODB|FLOP|PSDT|1243')");
    assert_string_equal (s_exec_fails (conn,
        "UPDATE proc_state SET state = 'PENDING' WHERE msg_id = 1"), "23514");

    //  Business identity is unique.
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO proc_state (msg_id, identity_key) VALUES (2, 'AODB|FLOP|PSDT|1243')"),
        "23505");

    //  inbox_cursor and req_seqn hold exactly one row.
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO inbox_cursor (committed_up_to) VALUES (5)"), "23505");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO inbox_cursor (id, committed_up_to) VALUES (false, 5)"), "23514");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO req_seqn (last_seqn) VALUES (5)"), "23505");

    //  At most one open request per kind; a closed one does not count.
    s_exec_ok (conn,
        "INSERT INTO req_track (kind, window_begin, window_end, seqn, registered_at)"
        " VALUES ('RQFD', '2021-01-23', '2021-01-24', 1, now ())");
    s_exec_ok (conn,
        "INSERT INTO req_track (kind, rtype, seqn, registered_at)"
        " VALUES ('RQRD', 'SLST', 2, now ())");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO req_track (kind, window_begin, window_end, seqn, registered_at)"
        " VALUES ('RQFD', '2021-01-24', '2021-01-25', 3, now ())"), "23505");
    //  SENT needs the COUTMSGS row.
    assert_string_equal (s_exec_fails (conn,
        "UPDATE req_track SET state = 'SENT' WHERE kind = 'RQFD'"), "23514");
    s_exec_ok (conn, "UPDATE req_track SET state = 'EXPIRED' WHERE kind = 'RQFD'");
    s_exec_ok (conn,
        "INSERT INTO req_track (kind, window_begin, window_end, seqn, registered_at)"
        " VALUES ('RQFD', '2021-01-24', '2021-01-25', 3, now ())");

    //  operation_day is immutable; sets go with their flight.
    s_exec_ok (conn,
        "INSERT INTO flight_schd (flid, alcd, flno, mvin, sodt, operation_day)"
        " VALUES (15, 'YG', 'YG9028', 'D', '2021-01-22 21:35:00+00', '2021-01-23');"
        "INSERT INTO flight_stand (flid, psno, psst) VALUES (15, 1, '504');"
        "INSERT INTO flight_delay (flid, seq, code, dura) VALUES (15, 1, 'YY', 120);"
        "INSERT INTO flight_route_point (flid, kind, rtno, apcd) VALUES (15, 'ROUT', 1, 'XIY');"
        "INSERT INTO flight_route_point (flid, kind, rtno, apcd) VALUES (15, 'ERUT', 1, 'CTU')");
    assert_string_equal (s_exec_fails (conn,
        "UPDATE flight_schd SET operation_day = '2021-01-24' WHERE flid = 15"), "23514");
    s_exec_ok (conn, "UPDATE flight_schd SET operation_day = '2021-01-23', acft = '733'"
                     " WHERE flid = 15");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO flight_route_point (flid, kind, rtno) VALUES (15, 'XRUT', 2)"), "23514");
    assert_string_equal (s_exec_fails (conn,
        "INSERT INTO flight_stand (flid, psno) VALUES (16, 1)"), "23503");
    assert_string_equal (s_exec_fails (conn,
        "UPDATE flight_schd SET lifecycle = 'DELETED' WHERE flid = 15"), "23514");
    s_exec_ok (conn, "DELETE FROM flight_schd WHERE flid = 15");
    assert_int_equal (s_count (conn,
        "SELECT (SELECT count(*) FROM flight_stand) + (SELECT count(*) FROM flight_delay)"
        "     + (SELECT count(*) FROM flight_route_point)", 0, NULL), 0);
}

//  The FIFO head, the backfill sweep and the dispatcher read through their
//  partial indexes when they spell the predicate as the schema does.
static void
s_assert_plan_uses (PGconn *conn, const char *query, const char *index)
{
    char sql [1024];
    snprintf (sql, sizeof sql, "EXPLAIN (FORMAT TEXT) %s", query);
    PGresult *res = NULL;
    char *error = NULL;
    if (mx_pg_exec (conn, sql, 0, NULL, &res, &error))
        fail_msg ("%s", error);
    bool found = false;
    for (int row = 0; row < PQntuples (res); row++)
        if (strstr (PQgetvalue (res, row, 0), index))
            found = true;
    PQclear (res);
    if (!found)
        fail_msg ("plan of \"%s\" does not use %s", query, index);
}

static void
test_partial_indexes (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_apply_ok (self->conn, mx_migrate_count ());
    s_exec_ok (self->conn, "SET enable_seqscan = off");
    s_assert_plan_uses (self->conn,
        "SELECT msg_id, state FROM proc_state WHERE state IN ('PENDING', 'FAILED')"
        " ORDER BY msg_id LIMIT 1",
        "proc_state_head_idx");
    s_assert_plan_uses (self->conn,
        "SELECT msg_id FROM proc_state"
        " WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')"
        "   AND backfill_next_at IS NOT NULL AND backfill_at IS NULL"
        "   AND backfill_abandoned_at IS NULL"
        "   AND (backfill_next_at <= now () OR received_at + interval '30 days' <= now ())"
        " ORDER BY backfill_attempts, msg_id LIMIT 100",
        "proc_state_backfill_sweep_idx");
    s_assert_plan_uses (self->conn,
        "SELECT event_id FROM msg_event WHERE target = 'KAFKA:msg' AND state = 'PENDING'"
        " ORDER BY event_id LIMIT 100",
        "msg_event_pending_idx");
}

//  Applies the embedded migrations below version `below` as mx_migrate
//  would, so that a test can hold data written under an older schema.
static void
s_apply_below (PGconn *conn, int below)
{
    s_exec_ok (conn,
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
        " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now ())");
    for (int i = 0; i < mx_migrate_count (); i++) {
        const mx_migrate_entry_t *entry = mx_migrate_entry (i);
        if (entry->version >= below)
            break;
        s_exec_ok (conn, entry->sql);
        char version [16];
        snprintf (version, sizeof version, "%d", entry->version);
        const char *params [] = { version, entry->name, entry->checksum };
        char *ignored = s_value (conn,
            "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3) RETURNING version",
            3, params);
        free (ignored);
    }
}

//  A flight document of some 3 KB that compresses as the real ones do:
//  the same member names every time, short values that vary.
static char *
s_payload (int seed)
{
    size_t room = 8192, at = 0;
    char *text = (char *) malloc (room);
    assert_non_null (text);
    text [at++] = '{';
    for (int i = 0; i < 160; i++)
        at += (size_t) snprintf (text + at, room - at, "%s\"member%03d\":\"%06x\"", i ? "," : "",
                                 i, (unsigned) ((seed * 7919 + i * 104729) & 0xffffff));
    snprintf (text + at, room - at, "}");
    return text;
}

static void
s_insert_event (PGconn *conn, const char *target, int64_t flid, const char *state, const char *payload)
{
    char flid_text [24];
    snprintf (flid_text, sizeof flid_text, "%" PRId64, flid);
    const char *params [] = { target, flid_text, state, payload };
    char *id = s_value (conn,
        "INSERT INTO msg_event (target, partition_key, event_type, flid, state_version, msg_id, payload,"
        " state, sent_at, created_at)"
        " VALUES ($1, $2::text, 'UPSERT', $2::text::bigint, 1, 1, $4, $3::text,"
        "  CASE WHEN $3::text = 'SENT' THEN now () END, now ()) RETURNING event_id",
        4, params);
    free (id);
}

#define TOAST_INSERTS \
    "SELECT pg_stat_get_xact_tuples_inserted (reltoastrelid) FROM pg_class WHERE relname = 'msg_event'"

//  V007 moves no row: events written under V006, PENDING, SENT and DEAD,
//  keep their state and payload and are delivered as before. Events
//  written after it keep their payload in the TOAST relation, and marking
//  them SENT writes nothing there.
static void
test_outbox_state_apart (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_apply_below (self->conn, 7);
    for (int i = 1; i <= 10; i++) {
        char *payload = s_payload (i);
        s_insert_event (self->conn, "KAFKA:msg", i, i <= 4 ? "PENDING" : i <= 8 ? "SENT" : "DEAD", payload);
        s_insert_event (self->conn, "KAFKA:schd", i, i <= 4 ? "PENDING" : "SENT", payload);
        free (payload);
    }
    char *before = s_value (self->conn,
        "SELECT md5 (string_agg (event_id || state || payload || coalesce (sent_at::text, '-'), ','"
        " ORDER BY event_id)) FROM msg_event", 0, NULL);
    s_apply_ok (self->conn, mx_migrate_count () - 6);
    char *after = s_value (self->conn,
        "SELECT md5 (string_agg (event_id || state || payload || coalesce (sent_at::text, '-'), ','"
        " ORDER BY event_id)) FROM msg_event", 0, NULL);
    assert_string_equal (before, after);
    free (before);
    free (after);

    //  The old PENDING events go as they did, payload included.
    mx_outbox_batch_t *batch = NULL;
    char *error = NULL;
    if (mx_outbox_take (self->conn, MX_OUTBOX_TARGET_MSG, 100, INT64_MAX - 1, &batch, &error))
        fail_msg ("take: %s", error);
    assert_int_equal (batch->count, 4);
    char *expected = s_payload (1);
    assert_string_equal (batch->events [0].payload, expected);
    free (expected);
    int64_t ids [4];
    for (size_t i = 0; i < 4; i++)
        ids [i] = batch->events [i].event_id;
    mx_outbox_batch_destroy (&batch);
    int marked = 0;
    if (mx_outbox_mark_sent (self->conn, ids, 4, 1000, &marked, &error))
        fail_msg ("mark: %s", error);
    assert_int_equal (marked, 4);
    assert_int_equal (s_count (self->conn,
        "SELECT count(*) FROM msg_event WHERE target = 'KAFKA:msg' AND state = 'SENT'", 0, NULL), 8);

    //  New events: the payload goes to the TOAST relation as it is
    //  written, and marking the events SENT inserts nothing there.
    //  (The backend's counts not yet reported are read with the
    //  transaction's: the difference is the statements' own.)
    s_exec_ok (self->conn, "BEGIN");
    int64_t toasted = s_count (self->conn, TOAST_INSERTS, 0, NULL);
    for (int i = 11; i <= 20; i++) {
        char *payload = s_payload (i);
        s_insert_event (self->conn, "KAFKA:msg", i, "PENDING", payload);
        free (payload);
    }
    assert_true (s_count (self->conn, TOAST_INSERTS, 0, NULL) - toasted >= 10);
    s_exec_ok (self->conn, "COMMIT");
    s_exec_ok (self->conn, "BEGIN");
    char *pending = s_value (self->conn,
        "SELECT array_agg (event_id) FROM msg_event WHERE target = 'KAFKA:msg' AND state = 'PENDING'", 0, NULL);
    assert_non_null (pending);
    toasted = s_count (self->conn, TOAST_INSERTS, 0, NULL);
    const char *params [] = { pending };
    assert_int_equal (s_count (self->conn,
        "WITH u AS (UPDATE msg_event SET state = 'SENT', sent_at = now ()"
        " WHERE event_id = ANY ($1::bigint[]) RETURNING 1) SELECT count(*) FROM u", 1, params), 10);
    free (pending);
    assert_int_equal (s_count (self->conn, TOAST_INSERTS, 0, NULL) - toasted, 0);
    s_exec_ok (self->conn, "COMMIT");
    expected = s_payload (20);
    const char *want [] = { expected };
    assert_int_equal (s_count (self->conn,
        "SELECT count(*) FROM msg_event WHERE flid = 20 AND state = 'SENT' AND payload = $1", 1, want), 1);
    free (expected);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_embedded_table),
        cmocka_unit_test_setup_teardown (test_fresh_database, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_second_run_applies_nothing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_changed_migration_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_newer_database_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_unknown_version_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_failed_migration_rolls_back, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_lost_connection, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_concurrent_appliers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_flight_columns, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_history_tables_mirror_live, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_constraints, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_partial_indexes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_outbox_state_apart, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
