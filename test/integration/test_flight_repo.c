/*  test_flight_repo - the flight repository against a real PostgreSQL.

    Every test gets a fresh migrated database. Round trips and statements
    are counted on the wire: libpq's trace of the frontend messages (one
    Sync per round trip, one Execute per statement).
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_flight_repo.h"
#include "mx_migrate.h"
#include "mx_pg.h"
#include "mx_sis.h"
#include "mx_sis_body.h"
#include "mx_testenv.h"
#include "mx_tz.h"

//  23JAN210535 Asia/Shanghai, the SODT of the real sample's flight 15.
#define S_BASE_MS INT64_C(1611351300000)
#define S_MINUTE_MS INT64_C(60000)
#define S_NOW_MS INT64_C(1611360000000)

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
    self->conn = s_connect (self->pg, "test_flight_repo");
    char *error = NULL;
    if (mx_migrate_apply (self->conn, NULL, &error))
        fail_msg ("migrate: %s", error);
    *state = self;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    mx_pg_disconnect (&self->conn);
    mx_testpg_destroy (&self->pg);
    free (self);
    return 0;
}

//  ---------------------------------------------------------------------
//  SQL helpers

static void
s_exec (PGconn *conn, const char *sql)
{
    char *error = NULL;
    PGresult *res = PQexec (conn, sql);
    if (mx_pg_check (conn, res, sql, &error))
        fail_msg ("%s", error);
    PQclear (res);
}

//  First cell, malloc'd; NULL for no row or SQL NULL.
static char *
s_value (PGconn *conn, const char *sql, int nparams, const char *const *values)
{
    PGresult *res = NULL;
    char *error = NULL;
    if (mx_pg_exec (conn, sql, nparams, values, &res, &error))
        fail_msg ("%s", error);
    char *text = NULL;
    if (PQntuples (res) > 0 && !PQgetisnull (res, 0, 0))
        text = strdup (PQgetvalue (res, 0, 0));
    PQclear (res);
    return text;
}

static void
s_assert_value (PGconn *conn, const char *sql, const char *expected)
{
    char *text = s_value (conn, sql, 0, NULL);
    if (!expected && text)
        fail_msg ("%s: expected NULL, got \"%s\"", sql, text);
    if (expected && (!text || strcmp (text, expected) != 0))
        fail_msg ("%s: expected \"%s\", got \"%s\"", sql, expected, text ? text : "NULL");
    free (text);
}

static void
s_begin (PGconn *conn)
{
    char *error = NULL;
    if (mx_pg_begin (conn, &error))
        fail_msg ("%s", error);
}

static void
s_commit (PGconn *conn)
{
    char *error = NULL;
    if (mx_pg_commit (conn, &error))
        fail_msg ("%s", error);
}

static void
s_rollback (PGconn *conn)
{
    char *error = NULL;
    if (mx_pg_rollback (conn, &error))
        fail_msg ("%s", error);
}

//  ---------------------------------------------------------------------
//  Wire counting

typedef struct {
    FILE *file;
    char *text;
    size_t size;
    int round_trips;            //  Sync messages sent
    int statements;             //  Execute messages sent
} s_trace_t;

static void
s_trace_start (PGconn *conn, s_trace_t *trace)
{
    memset (trace, 0, sizeof *trace);
    trace->file = open_memstream (&trace->text, &trace->size);
    assert_non_null (trace->file);
    PQtrace (conn, trace->file);
    PQsetTraceFlags (conn, PQTRACE_SUPPRESS_TIMESTAMPS);
}

//  Lines are "F|B <tab> length <tab> message ...".
static void
s_trace_stop (PGconn *conn, s_trace_t *trace)
{
    PQuntrace (conn);
    fclose (trace->file);
    for (char *line = trace->text; line && *line; ) {
        char *end = strchr (line, '\n');
        if (end)
            *end = 0;
        if (strncmp (line, "F\t", 2) == 0) {
            const char *message = strchr (line + 2, '\t');
            if (message && strncmp (message + 1, "Sync", 4) == 0)
                trace->round_trips++;
            if (message && strncmp (message + 1, "Execute", 7) == 0)
                trace->statements++;
        }
        line = end ? end + 1 : NULL;
    }
    free (trace->text);
    trace->text = NULL;
}

//  ---------------------------------------------------------------------
//  Flights

//  A canonical value of the type, different for every (seed, index).
static char *
s_canonical (mx_value_type_t type, const char *code, int seed, int index)
{
    char *text = NULL;
    int rc = -1;
    switch (type) {
        case MX_TYPE_S:
            rc = asprintf (&text, "%s-%d-%d O'Neil \"q\" \\ 中文", code, seed, index);
            break;
        case MX_TYPE_I:
            rc = asprintf (&text, "%d", (index % 5 == 4 ? -1 : 1) * (1000 * seed + index));
            break;
        case MX_TYPE_T:
            rc = asprintf (&text, "%" PRId64, S_BASE_MS + (int64_t) (seed * 100 + index) * S_MINUTE_MS);
            break;
        case MX_TYPE_M:
            rc = asprintf (&text, "%d", 60 * seed + index);
            break;
    }
    assert_true (rc > 0);
    return text;
}

//  count records keyed first_key, first_key + 2, ... (DELY 1..n); every
//  third value NULL.
static void
s_fill_set (mx_flight_t *flight, mx_set_kind_t kind, size_t count, int seed)
{
    const mx_set_info_t *info = mx_set_info (kind);
    mx_set_t set = { count, count ? calloc (count, sizeof (mx_set_record_t)) : NULL };
    for (size_t i = 0; i < count; i++) {
        set.records [i].key = *info->key ? (int) (1 + 2 * i) : (int) (i + 1);
        for (size_t f = 0; f < info->field_count; f++)
            if ((i + f) % 3 != 2)
                set.records [i].values [f] = s_canonical (info->field_types [f], info->element,
                                                           seed + (int) kind, (int) (10 * i + f));
    }
    mx_flight_set_set (flight, kind, &set);
    mx_set_reset (&set);
}

//  Every scalar, every set (two records each), every rare set and extra.
static mx_flight_t *
s_full_flight (int64_t flid)
{
    mx_flight_t *flight = mx_flight_new (flid);
    for (int k = 0; k < MX_F_COUNT; k++) {
        const mx_scalar_info_t *info = mx_scalar_info ((mx_scalar_t) k);
        char *value = s_canonical (info->type, info->code, 1, k);
        mx_flight_set_scalar (flight, (mx_scalar_t) k, value);
        free (value);
    }
    mx_flight_set_scalar (flight, MX_F_MVIN, "D");
    mx_flight_set_scalar (flight, MX_F_SODT, "1611351300000");
    for (int k = 0; k < MX_SET_COUNT; k++)
        s_fill_set (flight, (mx_set_kind_t) k, 2, 10 * (k + 1));
    //  ABOP is text since V002: a real message carries "D" there.
    free (flight->sets [MX_SET_AIRBRIDGE].records [0].values [1]);
    flight->sets [MX_SET_AIRBRIDGE].records [0].values [1] = strdup ("D");
    for (int r = 0; r < MX_RARE_COUNT; r++)
        flight->rare [r] = json_pack ("{s:s,s:[s,s],s:n}", mx_rare_code ((mx_rare_t) r), "1",
                                      "LIST", "a", "中文", "EMPTY");
    json_object_set_new (flight->extra, "ZZXX", json_string ("kept as received"));
    flight->operation_day = 18650;
    flight->state_version = 1;
    flight->last_msg_id = 42;
    return flight;
}

//  Only what a FLTR must carry.
static mx_flight_t *
s_small_flight (int64_t flid)
{
    mx_flight_t *flight = mx_flight_new (flid);
    mx_flight_set_scalar (flight, MX_F_ALCD, "YG");
    mx_flight_set_scalar (flight, MX_F_FLNO, "YG9028");
    mx_flight_set_scalar (flight, MX_F_MVIN, "A");
    mx_flight_set_scalar (flight, MX_F_SODT, "1611351300000");
    mx_flight_set_scalar (flight, MX_F_FLTY, "W");
    mx_flight_set_scalar (flight, MX_F_FLIN, "D");
    mx_flight_set_scalar (flight, MX_F_ACFT, "733");
    flight->operation_day = 18650;
    flight->state_version = 1;
    flight->last_msg_id = 7;
    return flight;
}

//  Loaded equals expected: no wire code differs, bookkeeping the same.
//  mx_flight_repo_load_each's hand-over: keeps each flight, in order.
static void
s_collect (mx_flight_t *flight, void *list)
{
    zlist_append ((zlist_t *) list, flight);
}

static void
s_assert_same (const mx_flight_t *expected, const mx_flight_t *loaded)
{
    assert_non_null (loaded);
    json_t *changed = mx_flight_diff (expected, loaded);
    //  diff reports LIFECYCLE for a flight compared with nothing only.
    if (json_array_size (changed) != 0) {
        char *text = json_dumps (changed, 0);
        fail_msg ("loaded flight %" PRId64 " differs: %s", expected->flid, text);
    }
    json_decref (changed);
    assert_int_equal (loaded->flid, expected->flid);
    assert_int_equal (loaded->operation_day, expected->operation_day);
    assert_int_equal (loaded->state_version, expected->state_version);
    assert_int_equal (loaded->last_msg_id, expected->last_msg_id);
    assert_int_equal (loaded->deleted, expected->deleted);
    assert_int_equal (loaded->deleted_at, expected->deleted_at);
}

static void
s_save (PGconn *conn, const mx_flight_t *before, const mx_flight_t *after)
{
    char *error = NULL;
    if (mx_flight_repo_save (conn, before, after, S_NOW_MS, &error))
        fail_msg ("save %" PRId64 ": %s", after->flid, error);
}

static mx_flight_t *
s_load_one (PGconn *conn, int64_t flid, bool lock)
{
    mx_flight_t *flight = NULL;
    char *error = NULL;
    if (mx_flight_repo_load (conn, &flid, 1, lock, &flight, &error))
        fail_msg ("load %" PRId64 ": %s", flid, error);
    return flight;
}

//  ---------------------------------------------------------------------
//  Tests

static void
test_abop_is_text (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    s_assert_value (self->conn,
        "SELECT string_agg (table_name || '.' || data_type, ',' ORDER BY table_name)"
        " FROM information_schema.columns WHERE table_schema = current_schema ()"
        " AND column_name = 'abop'",
        "flight_airbridge.text,flight_airbridge_hst.text");
}

static void
test_round_trip (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    mx_flight_t *full = s_full_flight (15);
    mx_flight_t *small = s_small_flight (16);

    s_begin (self->conn);
    s_trace_t trace;
    s_trace_start (self->conn, &trace);
    s_save (self->conn, NULL, full);
    s_trace_stop (self->conn, &trace);
    //  One pipeline: the flight_schd row and one INSERT per set.
    assert_int_equal (trace.round_trips, 1);
    assert_int_equal (trace.statements, 1 + MX_SET_COUNT);
    s_trace_start (self->conn, &trace);
    s_save (self->conn, NULL, small);
    s_trace_stop (self->conn, &trace);
    assert_int_equal (trace.round_trips, 1);
    assert_int_equal (trace.statements, 1);
    s_commit (self->conn);

    //  What the database holds, independently of the repository's reading.
    s_assert_value (self->conn, "SELECT abop FROM flight_airbridge WHERE flid = 15 AND asno = 1", "D");
    s_assert_value (self->conn,
        "SELECT string_agg (kind || rtno, ',' ORDER BY kind, rtno) FROM flight_route_point"
        " WHERE flid = 15", "ERUT1,ERUT3,ROUT1,ROUT3");
    s_assert_value (self->conn, "SELECT sodt = '2021-01-23 05:35+08' FROM flight_schd WHERE flid = 15", "t");
    s_assert_value (self->conn, "SELECT operation_day FROM flight_schd WHERE flid = 15", "2021-01-23");
    s_assert_value (self->conn, "SELECT string_agg (seq::text, ',' ORDER BY seq) FROM flight_delay"
                                " WHERE flid = 15", "1,2");
    s_assert_value (self->conn, "SELECT extra ->> 'ZZXX' FROM flight_schd WHERE flid = 15",
                    "kept as received");
    s_assert_value (self->conn, "SELECT created_at = to_timestamp (1611360000) FROM flight_schd"
                                " WHERE flid = 15", "t");
    s_assert_value (self->conn, "SELECT psht IS NULL AND extra = '{}' AND last_msg_id = 7"
                                " FROM flight_schd WHERE flid = 16", "t");

    //  One round trip for any number of flights, locked or not; missing
    //  and repeated flids are answered in place.
    int64_t flids [] = { 16, 999, 15, 16 };
    mx_flight_t *out [4];
    char *error = NULL;
    for (int lock = 0; lock <= 1; lock++) {
        s_begin (self->conn);
        s_trace_start (self->conn, &trace);
        if (mx_flight_repo_load (self->conn, flids, 4, lock, out, &error))
            fail_msg ("load: %s", error);
        s_trace_stop (self->conn, &trace);
        s_commit (self->conn);
        assert_int_equal (trace.round_trips, 1);
        assert_int_equal (trace.statements, 1);
        s_assert_same (small, out [0]);
        assert_null (out [1]);
        s_assert_same (full, out [2]);
        s_assert_same (small, out [3]);
        assert_true (out [0] != out [3]);
        for (int i = 0; i < 4; i++)
            mx_flight_destroy (&out [i]);
    }
    //  Nothing asked, nothing sent.
    s_trace_start (self->conn, &trace);
    assert_int_equal (mx_flight_repo_load (self->conn, NULL, 0, false, NULL, &error), 0);
    s_trace_stop (self->conn, &trace);
    assert_int_equal (trace.round_trips, 0);

    //  Row by row, in flid order, a missing flight skipped: the same states.
    int64_t ascending [] = { 15, 16, 999 };
    zlist_t *each = zlist_new ();
    for (int twice = 0; twice < 2; twice++) {       //  prepared, then by name
        if (mx_flight_repo_load_each (self->conn, ascending, 3, s_collect, each, &error))
            fail_msg ("load each: %s", error);
        assert_int_equal (zlist_size (each), 2);
        mx_flight_t *first = (mx_flight_t *) zlist_pop (each);
        mx_flight_t *second = (mx_flight_t *) zlist_pop (each);
        s_assert_same (full, first);
        s_assert_same (small, second);
        mx_flight_destroy (&first);
        mx_flight_destroy (&second);
    }
    zlist_destroy (&each);

    mx_flight_destroy (&full);
    mx_flight_destroy (&small);
}

//  More flights than one statement of mx_flight_repo_load_each reads: the
//  chunks go in one pipeline and the flights come back whole, in flid
//  order whatever the order asked, missing and repeated flids skipped.
static void
test_load_each_chunks (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    enum { S_FLIGHTS = 130 };
    mx_flight_t *saved [S_FLIGHTS];
    s_begin (self->conn);
    for (int i = 0; i < S_FLIGHTS; i++) {
        saved [i] = i % 3 ? s_small_flight (1000 + i) : s_full_flight (1000 + i);
        s_save (self->conn, NULL, saved [i]);
    }
    s_commit (self->conn);
    //  Descending, with a missing flid in the middle and a repeated one.
    int64_t asked [S_FLIGHTS + 2];
    size_t count = 0;
    for (int i = S_FLIGHTS - 1; i >= 0; i--) {
        asked [count++] = 1000 + i;
        if (i == 70)
            asked [count++] = 999999;
    }
    asked [count++] = 1005;
    char *error = NULL;
    zlist_t *each = zlist_new ();
    for (int twice = 0; twice < 2; twice++) {       //  prepared, then by name
        s_trace_t trace;
        s_trace_start (self->conn, &trace);
        if (mx_flight_repo_load_each (self->conn, asked, count, s_collect, each, &error))
            fail_msg ("load each: %s", error);
        s_trace_stop (self->conn, &trace);
        assert_true (trace.statements >= 3);        //  several chunks...
        assert_int_equal (trace.round_trips, twice ? 1 : 2);    //  ...in one pipeline
        assert_int_equal (zlist_size (each), S_FLIGHTS);
        for (int i = 0; i < S_FLIGHTS; i++) {
            mx_flight_t *loaded = (mx_flight_t *) zlist_pop (each);
            s_assert_same (saved [i], loaded);
            mx_flight_destroy (&loaded);
        }
    }
    zlist_destroy (&each);
    for (int i = 0; i < S_FLIGHTS; i++)
        mx_flight_destroy (&saved [i]);
}

static void
test_load_missing (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    assert_null (s_load_one (self->conn, 4711, false));
    assert_null (s_load_one (self->conn, 4711, true));
}

//  A trigger per flight_schd column records every column an UPDATE
//  names (BEFORE UPDATE OF fires on the SET list, not on changed values).
static void
s_install_touch_log (PGconn *conn)
{
    s_exec (conn,
        "CREATE TABLE touched (col text);"
        "CREATE FUNCTION touched_log () RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN INSERT INTO touched VALUES (TG_ARGV [0]); RETURN NEW; END $$;"
        "DO $$ DECLARE c text; BEGIN"
        "  FOR c IN SELECT column_name FROM information_schema.columns"
        "           WHERE table_schema = current_schema () AND table_name = 'flight_schd' LOOP"
        "    EXECUTE format ('CREATE TRIGGER %I BEFORE UPDATE OF %I ON flight_schd"
        "                     FOR EACH ROW EXECUTE FUNCTION touched_log (%L)', 'touch_' || c, c, c);"
        "  END LOOP;"
        " END $$;");
}

static void
s_assert_touched (PGconn *conn, const char *expected)
{
    s_assert_value (conn, "SELECT string_agg (col, ',' ORDER BY col) FROM touched", expected);
    s_exec (conn, "DELETE FROM touched");
}

static void
test_update_touches_changed_columns (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    mx_flight_t *before = s_full_flight (15);
    s_save (self->conn, NULL, before);
    s_install_touch_log (self->conn);

    //  One scalar.
    mx_flight_t *after = mx_flight_dup (before);
    mx_flight_set_scalar (after, MX_F_STND, "505");
    after->state_version = 2;
    after->last_msg_id = 43;
    s_begin (self->conn);
    s_trace_t trace;
    s_trace_start (self->conn, &trace);
    s_save (self->conn, before, after);
    s_trace_stop (self->conn, &trace);
    s_commit (self->conn);
    assert_int_equal (trace.round_trips, 1);
    assert_int_equal (trace.statements, 1);
    s_assert_touched (self->conn, "last_msg_id,state_version,stnd,updated_at");
    s_assert_value (self->conn, "SELECT stnd || '/' || state_version || '/' || last_msg_id"
                                " FROM flight_schd WHERE flid = 15", "505/2/43");
    mx_flight_t *loaded = s_load_one (self->conn, 15, false);
    s_assert_same (after, loaded);
    mx_flight_destroy (&loaded);

    //  A time cleared, an integer changed, a rare set and extra.
    mx_flight_destroy (&before);
    before = after;
    after = mx_flight_dup (before);
    mx_flight_set_scalar (after, MX_F_ESTT, NULL);
    mx_flight_set_scalar (after, MX_F_MAXP, "301");
    json_decref (after->rare [MX_RARE_VIPF]);
    after->rare [MX_RARE_VIPF] = NULL;
    json_object_set_new (after->extra, "NEWX", json_string ("y"));
    after->state_version = 3;
    after->last_msg_id = 44;
    s_save (self->conn, before, after);
    s_assert_touched (self->conn, "estt,extra,last_msg_id,maxp,state_version,updated_at,vipf");
    loaded = s_load_one (self->conn, 15, false);
    s_assert_same (after, loaded);
    assert_null (loaded->scalars [MX_F_ESTT]);
    assert_null (loaded->rare [MX_RARE_VIPF]);
    mx_flight_destroy (&loaded);

    //  A set only: flight_schd gets its bookkeeping, nothing else.
    mx_flight_destroy (&before);
    before = after;
    after = mx_flight_dup (before);
    s_fill_set (after, MX_SET_CHOCK, 1, 77);
    after->state_version = 4;
    after->last_msg_id = 45;
    s_save (self->conn, before, after);
    s_assert_touched (self->conn, "last_msg_id,state_version,updated_at");

    //  Delete, then bring back: lifecycle with deleted_at.
    mx_flight_destroy (&before);
    before = after;
    after = mx_flight_dup (before);
    after->deleted = true;
    after->deleted_at = S_NOW_MS + 1234;
    after->state_version = 5;
    s_save (self->conn, before, after);
    s_assert_touched (self->conn, "deleted_at,last_msg_id,lifecycle,state_version,updated_at");
    s_assert_value (self->conn, "SELECT lifecycle || ' ' || (extract (epoch FROM deleted_at) * 1000)::bigint"
                                " FROM flight_schd WHERE flid = 15", "DELETED 1611360001234");
    loaded = s_load_one (self->conn, 15, false);
    s_assert_same (after, loaded);
    mx_flight_destroy (&loaded);
    mx_flight_destroy (&before);
    before = after;
    after = mx_flight_dup (before);
    after->deleted = false;
    after->deleted_at = -1;
    after->state_version = 6;
    s_save (self->conn, before, after);
    s_assert_touched (self->conn, "deleted_at,last_msg_id,lifecycle,state_version,updated_at");
    s_assert_value (self->conn, "SELECT lifecycle || coalesce (deleted_at::text, '-')"
                                " FROM flight_schd WHERE flid = 15", "ACTIVE-");
    loaded = s_load_one (self->conn, 15, false);
    s_assert_same (after, loaded);
    mx_flight_destroy (&loaded);

    //  Nothing differs: nothing is sent.
    s_trace_start (self->conn, &trace);
    s_save (self->conn, after, after);
    s_trace_stop (self->conn, &trace);
    assert_int_equal (trace.round_trips, 0);
    s_assert_touched (self->conn, NULL);

    mx_flight_destroy (&before);
    mx_flight_destroy (&after);
}

//  Physical row ids: a row deleted and written again gets a new one.
static char *
s_ctids (PGconn *conn, const char *table_where)
{
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT string_agg (ctid::text, ',' ORDER BY ctid) FROM %s", table_where);
    return s_value (conn, sql, 0, NULL);
}

static void
test_set_replacement (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    mx_flight_t *before = s_full_flight (15);
    mx_flight_t *other = s_full_flight (16);
    s_save (self->conn, NULL, before);
    s_save (self->conn, NULL, other);
    char *rout_ids = s_ctids (self->conn, "flight_route_point WHERE kind = 'ROUT'");
    char *stand_ids = s_ctids (self->conn, "flight_stand");
    char *other_gate_ids = s_ctids (self->conn, "flight_gate WHERE flid = 16");

    mx_flight_t *after = mx_flight_dup (before);
    s_fill_set (after, MX_SET_GATE, 3, 99);            //  replaced, larger
    s_fill_set (after, MX_SET_EROUTE, 0, 0);           //  emptied
    s_fill_set (after, MX_SET_DELAY, 1, 98);           //  replaced, smaller
    after->state_version = 2;
    after->last_msg_id = 43;
    s_begin (self->conn);
    s_trace_t trace;
    s_trace_start (self->conn, &trace);
    s_save (self->conn, before, after);
    s_trace_stop (self->conn, &trace);
    s_commit (self->conn);
    //  flight_schd, GATE delete + insert, ERUT delete, DELY delete + insert.
    assert_int_equal (trace.round_trips, 1);
    assert_int_equal (trace.statements, 6);

    mx_flight_t *loaded = s_load_one (self->conn, 15, false);
    s_assert_same (after, loaded);
    mx_flight_destroy (&loaded);
    s_assert_value (self->conn, "SELECT string_agg (kind || rtno, ',' ORDER BY kind, rtno)"
                                " FROM flight_route_point WHERE flid = 15", "ROUT1,ROUT3");
    s_assert_value (self->conn, "SELECT string_agg (gtno::text, ',' ORDER BY gtno)"
                                " FROM flight_gate WHERE flid = 15", "1,3,5");
    //  Unchanged sets, and the other flight's rows, were not rewritten.
    char *ids = s_ctids (self->conn, "flight_route_point WHERE kind = 'ROUT'");
    assert_string_equal (ids, rout_ids);
    free (ids);
    ids = s_ctids (self->conn, "flight_stand");
    assert_string_equal (ids, stand_ids);
    free (ids);
    ids = s_ctids (self->conn, "flight_gate WHERE flid = 16");
    assert_string_equal (ids, other_gate_ids);
    free (ids);
    loaded = s_load_one (self->conn, 16, false);
    s_assert_same (other, loaded);
    mx_flight_destroy (&loaded);

    free (rout_ids);
    free (stand_ids);
    free (other_gate_ids);
    mx_flight_destroy (&before);
    mx_flight_destroy (&after);
    mx_flight_destroy (&other);
}

static void
test_lock (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    mx_flight_t *flight = s_small_flight (15);
    s_save (self->conn, NULL, flight);
    PGconn *other = s_connect (self->pg, "test_flight_repo_other");
    s_exec (other, "SET lock_timeout = '200ms'");

    s_begin (self->conn);
    mx_flight_t *mine = s_load_one (self->conn, 15, true);
    assert_non_null (mine);

    //  Reading without the lock does not wait; locking does, and gives up.
    s_begin (other);
    mx_flight_t *seen = s_load_one (other, 15, false);
    s_assert_same (flight, seen);
    mx_flight_destroy (&seen);
    int64_t flid = 15;
    char *error = NULL;
    assert_int_equal (mx_flight_repo_load (other, &flid, 1, true, &seen, &error), -1);
    assert_null (seen);
    assert_non_null (strstr (error, "55P03"));
    free (error);
    s_rollback (other);

    //  The lock holder writes; once it commits the other one gets the lock
    //  and sees the new state.
    mx_flight_t *after = mx_flight_dup (mine);
    mx_flight_set_scalar (after, MX_F_STND, "600");
    after->state_version = 2;
    s_save (self->conn, mine, after);
    s_commit (self->conn);
    s_begin (other);
    seen = s_load_one (other, 15, true);
    s_assert_same (after, seen);
    s_rollback (other);

    mx_flight_destroy (&seen);
    mx_flight_destroy (&mine);
    mx_flight_destroy (&after);
    mx_flight_destroy (&flight);
    mx_pg_disconnect (&other);
}

static void
test_operation_day_immutable (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    mx_flight_t *before = s_small_flight (15);
    s_save (self->conn, NULL, before);
    mx_flight_t *after = mx_flight_dup (before);
    after->operation_day++;
    after->state_version = 2;
    s_begin (self->conn);
    char *error = NULL;
    assert_int_equal (mx_flight_repo_save (self->conn, before, after, S_NOW_MS, &error), -1);
    assert_non_null (strstr (error, "23514"));
    assert_non_null (strstr (error, "immutable"));
    free (error);
    s_rollback (self->conn);
    mx_flight_t *loaded = s_load_one (self->conn, 15, false);
    s_assert_same (before, loaded);

    //  A flight without an operation day is refused before any SQL.
    mx_flight_t *bare = s_small_flight (17);
    bare->operation_day = -1;
    assert_int_equal (mx_flight_repo_save (self->conn, NULL, bare, S_NOW_MS, &error), -1);
    assert_non_null (strstr (error, "operation day"));
    free (error);

    mx_flight_destroy (&bare);
    mx_flight_destroy (&loaded);
    mx_flight_destroy (&before);
    mx_flight_destroy (&after);
}

//  Writes that must fail, and leave the connection usable. First an UPDATE
//  against a state that is not the stored one: the load/save pair was not
//  made under one lock.
static void
test_refused_writes (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    mx_flight_t *before = s_small_flight (15);
    s_save (self->conn, NULL, before);
    mx_flight_t *stale = mx_flight_dup (before);
    stale->state_version = 5;
    mx_flight_t *after = mx_flight_dup (stale);
    mx_flight_set_scalar (after, MX_F_STND, "1");
    s_fill_set (after, MX_SET_GATE, 1, 3);
    after->state_version = 6;
    s_begin (self->conn);
    char *error = NULL;
    assert_int_equal (mx_flight_repo_save (self->conn, stale, after, S_NOW_MS, &error), -1);
    assert_non_null (strstr (error, "changed since it was loaded"));
    free (error);
    s_rollback (self->conn);
    //  The connection is usable again (pipeline left, transaction gone).
    mx_flight_t *loaded = s_load_one (self->conn, 15, false);
    s_assert_same (before, loaded);
    mx_flight_destroy (&loaded);

    //  A statement that fails inside the pipeline: the rest is skipped and
    //  the error names it.
    mx_flight_t *bad = mx_flight_dup (before);
    mx_flight_set_scalar (bad, MX_F_MAXP, "many");
    bad->state_version = 2;
    s_begin (self->conn);
    assert_int_equal (mx_flight_repo_save (self->conn, before, bad, S_NOW_MS, &error), -1);
    assert_non_null (strstr (error, "22P02"));
    free (error);
    s_rollback (self->conn);
    loaded = s_load_one (self->conn, 15, false);
    s_assert_same (before, loaded);

    mx_flight_destroy (&loaded);
    mx_flight_destroy (&bad);

    //  Text that is not UTF-8 is refused, in a set before anything is sent,
    //  in a scalar by the server.
    bad = mx_flight_dup (before);
    s_fill_set (bad, MX_SET_GATE, 1, 3);
    free (bad->sets [MX_SET_GATE].records [0].values [0]);
    bad->sets [MX_SET_GATE].records [0].values [0] = strdup ("G\xff");
    bad->state_version = 2;
    assert_int_equal (mx_flight_repo_save (self->conn, before, bad, S_NOW_MS, &error), -1);
    assert_non_null (strstr (error, "GTDT GATE of record 1 is not valid UTF-8"));
    free (error);
    mx_flight_destroy (&bad);
    bad = mx_flight_dup (before);
    mx_flight_set_scalar (bad, MX_F_REMC, "R\xff");
    bad->state_version = 2;
    s_begin (self->conn);
    assert_int_equal (mx_flight_repo_save (self->conn, before, bad, S_NOW_MS, &error), -1);
    assert_non_null (strstr (error, "22021"));
    free (error);
    s_rollback (self->conn);
    mx_flight_destroy (&bad);
    mx_flight_destroy (&before);
    mx_flight_destroy (&stale);
    mx_flight_destroy (&after);
}

static void
test_event_insert (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    char *error = NULL;
    int64_t ids [4] = { 0 };
    s_begin (self->conn);
    s_trace_t trace;
    s_trace_start (self->conn, &trace);
    assert_int_equal (mx_event_insert (self->conn, MX_TARGET_MSG, MX_EVENT_UPSERT, 15, 2, 900,
        "{\"event_id\":0,\"msg_id\":900,\"flid\":15,\"changed\":[\"STND\"],"
        "\"state\":{\"STND\":\"50\\\"4\",\"REMC\":\"中文\",\"ESTT\":null}}",
        S_NOW_MS, &ids [0], &error), 0);
    s_trace_stop (self->conn, &trace);
    assert_int_equal (trace.round_trips, 1);
    assert_int_equal (trace.statements, 1);
    assert_int_equal (mx_event_insert (self->conn, MX_TARGET_SCHD, MX_EVENT_UPSERT, 15, 2, 900,
        "{\"flid\":15,\"STND\":\"504\",\"lifecycle\":\"ACTIVE\"}", S_NOW_MS, &ids [1], &error), 0);
    assert_int_equal (mx_event_insert (self->conn, MX_TARGET_SCHD, MX_EVENT_TOMBSTONE, 15, 3, 901,
                                       NULL, S_NOW_MS, &ids [2], &error), 0);
    //  A job-made event has no message.
    assert_int_equal (mx_event_insert (self->conn, MX_TARGET_MSG, MX_EVENT_TOMBSTONE, 16, 4, 0,
        "{\"lifecycle\":\"DELETED\"}", S_NOW_MS + 5, &ids [3], &error), 0);
    s_commit (self->conn);
    assert_true (ids [0] > 0);
    assert_true (ids [1] > ids [0]);
    assert_true (ids [2] > ids [1]);
    assert_true (ids [3] > ids [2]);

    char expected [512];
    PGresult *res = NULL;
    if (mx_pg_exec (self->conn,
            "SELECT event_id, target, partition_key, event_type, flid, state_version,"
            " coalesce (msg_id::text, '-'), payload, state, (extract (epoch FROM created_at) * 1000)::bigint"
            " FROM msg_event ORDER BY event_id", 0, NULL, &res, &error))
        fail_msg ("%s", error);
    assert_int_equal (PQntuples (res), 4);
    for (int row = 0; row < 4; row++) {
        assert_int_equal (mx_pg_get_int64 (res, row, 0), ids [row]);
        assert_string_equal (PQgetvalue (res, row, 8), "PENDING");
    }
    //  The payload keeps its text and order; event_id is the row's.
    snprintf (expected, sizeof expected,
        "%" PRId64 "|KAFKA:msg|15|UPSERT|15|2|900|{\"event_id\":%" PRId64 ",\"msg_id\":900,\"flid\":15,"
        "\"changed\":[\"STND\"],\"state\":{\"STND\":\"50\\\"4\",\"REMC\":\"中文\",\"ESTT\":null}}",
        ids [0], ids [0]);
    char actual [512];
    snprintf (actual, sizeof actual, "%s|%s|%s|%s|%s|%s|%s|%s", PQgetvalue (res, 0, 0),
              PQgetvalue (res, 0, 1), PQgetvalue (res, 0, 2), PQgetvalue (res, 0, 3),
              PQgetvalue (res, 0, 4), PQgetvalue (res, 0, 5), PQgetvalue (res, 0, 6),
              PQgetvalue (res, 0, 7));
    assert_string_equal (actual, expected);
    assert_int_equal (mx_pg_get_int64 (res, 0, 9), S_NOW_MS);
    //  A document without event_id (the KAFKA:schd state) stays as it is.
    assert_string_equal (PQgetvalue (res, 1, 7), "{\"flid\":15,\"STND\":\"504\",\"lifecycle\":\"ACTIVE\"}");
    assert_string_equal (PQgetvalue (res, 1, 1), "KAFKA:schd");
    //  Tombstone on KAFKA:schd: null value.
    assert_true (PQgetisnull (res, 2, 7));
    assert_string_equal (PQgetvalue (res, 2, 3), "TOMBSTONE");
    assert_string_equal (PQgetvalue (res, 2, 1), "KAFKA:schd");
    assert_string_equal (PQgetvalue (res, 3, 6), "-");
    assert_string_equal (PQgetvalue (res, 3, 2), "16");
    assert_string_equal (PQgetvalue (res, 3, 7), "{\"lifecycle\":\"DELETED\"}");
    PQclear (res);

    //  A payload that is not a JSON object is refused.
    int64_t id = -1;
    assert_int_equal (mx_event_insert (self->conn, MX_TARGET_MSG, MX_EVENT_UPSERT, 15, 5, 902,
                                       "[1,2]", S_NOW_MS, &id, &error), -1);
    assert_int_equal (id, 0);
    assert_non_null (error);
    free (error);
}

static void
test_snap_log (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    char *error = NULL;
    assert_int_equal (mx_snap_log_insert (self->conn, 900, "DNLD", S_BASE_MS, S_BASE_MS + S_MINUTE_MS,
                                          S_NOW_MS, 2, 3, 4, &error), 0);
    assert_int_equal (mx_snap_log_insert (self->conn, 901, "RESP", -1, -1, S_NOW_MS, 0, 0, 0, &error), 0);
    s_assert_value (self->conn,
        "SELECT string_agg (concat_ws ('|', msg_id, styp,"
        " coalesce ((extract (epoch FROM scope_begin) * 1000)::bigint::text, '-'),"
        " coalesce ((extract (epoch FROM scope_end) * 1000)::bigint::text, '-'),"
        " (extract (epoch FROM recv_at) * 1000)::bigint,"
        " flights_inserted, flights_updated, flights_unchanged), ',' ORDER BY id) FROM schd_snap_log",
        "900|DNLD|1611351300000|1611351360000|1611360000000|2|3|4,"
        "901|RESP|-|-|1611360000000|0|0|0");
}

//  A reference message built inline: keys[i] with value {"CODE": key, "V": values[i]}.
static int
s_ref_apply (PGconn *conn, const char *rtype, const char *styp, int64_t msg_id,
             const char *const *keys, const char *const *values, size_t count)
{
    mx_reference_t ref;
    memset (&ref, 0, sizeof ref);
    snprintf (ref.rtype, sizeof ref.rtype, "%s", rtype);
    snprintf (ref.styp, sizeof ref.styp, "%s", styp);
    ref.declared = (int) count;
    ref.count = count;
    mx_ref_record_t records [8];
    assert_true (count <= 8);
    ref.records = records;
    for (size_t i = 0; i < count; i++) {
        records [i].key = (char *) keys [i];
        records [i].value = json_pack ("{s:s,s:s}", "CODE", keys [i], "V", values [i]);
    }
    int changed = -1;
    char *error = NULL;
    if (mx_reference_apply (conn, &ref, msg_id, S_NOW_MS, &changed, &error))
        fail_msg ("reference %s %s: %s", rtype, styp, error);
    for (size_t i = 0; i < count; i++)
        json_decref (records [i].value);
    return changed;
}

static void
s_assert_refs (PGconn *conn, const char *rtype, const char *expected)
{
    const char *params [] = { rtype };
    char *text = s_value (conn,
        "SELECT string_agg (rkey || '=' || (value ->> 'V') || '@' || last_msg_id, ',' ORDER BY rkey)"
        " FROM ref_master WHERE rtype = $1", 1, params);
    if (!expected)
        assert_null (text);
    else {
        assert_non_null (text);
        assert_string_equal (text, expected);
    }
    free (text);
}

static void
test_reference (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    PGconn *conn = self->conn;
    const char *k3 [] = { "G1", "G2", "G3" }, *v3 [] = { "a", "b", "c" };
    assert_int_equal (s_ref_apply (conn, "GLST", "DNLD", 100, k3, v3, 3), 3);
    const char *s1 [] = { "S1" };
    assert_int_equal (s_ref_apply (conn, "SLST", "DNLD", 101, s1, s1, 1), 1);
    s_assert_refs (conn, "GLST", "G1=a@100,G2=b@100,G3=c@100");

    //  Replace: G1 same (left alone), G2 new value, G4 new, G3 gone.
    const char *k4 [] = { "G1", "G2", "G4" }, *v4 [] = { "a", "B", "d" };
    assert_int_equal (s_ref_apply (conn, "GLST", "RESP", 102, k4, v4, 3), 3);
    s_assert_refs (conn, "GLST", "G1=a@100,G2=B@102,G4=d@102");
    s_assert_refs (conn, "SLST", "S1=S1@101");
    s_assert_value (conn, "SELECT updated_at = to_timestamp (1611360000) FROM ref_master"
                          " WHERE rtype = 'GLST' AND rkey = 'G2'", "t");

    //  ADD / UPD upsert; the same value again changes nothing.
    const char *k5 [] = { "G5" }, *v5 [] = { "e" };
    assert_int_equal (s_ref_apply (conn, "GLST", "ADD", 103, k5, v5, 1), 1);
    assert_int_equal (s_ref_apply (conn, "GLST", "ADD", 104, k5, v5, 1), 0);
    const char *k1 [] = { "G1" }, *v1 [] = { "A" };
    assert_int_equal (s_ref_apply (conn, "GLST", "UPD", 105, k1, v1, 1), 1);
    const char *k6 [] = { "G6" }, *v6 [] = { "f" };
    assert_int_equal (s_ref_apply (conn, "GLST", "UPD", 106, k6, v6, 1), 1);
    s_assert_refs (conn, "GLST", "G1=A@105,G2=B@102,G4=d@102,G5=e@103,G6=f@106");

    //  DEL removes the listed keys; an unknown key is no error.
    const char *kd [] = { "G1", "G9" };
    assert_int_equal (s_ref_apply (conn, "GLST", "DEL", 107, kd, kd, 2), 1);
    s_assert_refs (conn, "GLST", "G2=B@102,G4=d@102,G5=e@103,G6=f@106");

    //  A key twice in one message: the later record wins.
    const char *kt [] = { "G7", "G7" }, *vt [] = { "first", "second" };
    assert_int_equal (s_ref_apply (conn, "GLST", "DNLD", 108, kt, vt, 2), 5);
    s_assert_refs (conn, "GLST", "G7=second@108");

    //  An empty download empties the list, and only that list.
    assert_int_equal (s_ref_apply (conn, "GLST", "DNLD", 109, NULL, NULL, 0), 1);
    s_assert_refs (conn, "GLST", NULL);
    s_assert_refs (conn, "SLST", "S1=S1@101");

    mx_reference_t odd;
    memset (&odd, 0, sizeof odd);
    strcpy (odd.rtype, "GLST");
    strcpy (odd.styp, "XXX");
    int changed = -1;
    char *error = NULL;
    assert_int_equal (mx_reference_apply (conn, &odd, 110, S_NOW_MS, &changed, &error), -1);
    assert_non_null (strstr (error, "XXX"));
    free (error);
}

//  ---------------------------------------------------------------------
//  Real samples through the codec: what a message makes is what loads.

static mx_sis_msg_t *
s_sample (const char *name, const mx_tz_t *zone)
{
    const char *source = getenv ("MX_SOURCE_DIR");
    assert_non_null (source);
    char path [1024];
    snprintf (path, sizeof path, "%s/test/data/sis/%s", source, name);
    FILE *file = fopen (path, "rb");
    if (!file)
        fail_msg ("cannot open %s", path);
    char *xml = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&xml, &size);
    char buf [4096];
    size_t n;
    while ((n = fread (buf, 1, sizeof buf, file)) > 0)
        fwrite (buf, 1, n, out);
    fclose (file);
    fclose (out);
    mx_sis_options_t options = { .zone = zone, .max_bytes = 16 << 20 };
    mx_sis_status_t status;
    char *error = NULL;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, &options, &status, &error);
    free (xml);
    if (!msg)
        fail_msg ("%s: %s", name, error);
    return msg;
}

static void
test_real_samples (void **state)
{
    fixture_t *self = (fixture_t *) *state;
    char *error = NULL;
    mx_tz_t *zone = mx_tz_load ("Asia/Shanghai", &error);
    assert_non_null (zone);

    //  SCHD DNLD: every FLTR as a new flight.
    mx_sis_msg_t *msg = s_sample ("SCHD_DNLD_01.xml", zone);
    mx_schedule_t *schedule = NULL;
    if (mx_sis_schedule (msg, zone, &schedule, &error) != MX_BODY_OK)
        fail_msg ("SCHD_DNLD_01: %s", error);
    assert_int_equal (schedule->count, 2);
    mx_flight_t *saved [2];
    s_begin (self->conn);
    for (size_t i = 0; i < schedule->count; i++) {
        json_t *changed = NULL;
        saved [i] = mx_flight_apply_fltr (NULL, &schedule->records [i], zone, 0, &changed, &error);
        if (!saved [i])
            fail_msg ("apply_fltr: %s", error);
        json_decref (changed);
        saved [i]->state_version = 1;
        saved [i]->last_msg_id = 1;
        s_save (self->conn, NULL, saved [i]);
    }
    s_commit (self->conn);
    for (size_t i = 0; i < 2; i++) {
        mx_flight_t *loaded = s_load_one (self->conn, saved [i]->flid, false);
        s_assert_same (saved [i], loaded);
        mx_flight_destroy (&loaded);
    }
    s_assert_value (self->conn, "SELECT sodt = '2021-01-23 05:35+08' AND operation_day = '2021-01-23'"
                                " FROM flight_schd WHERE flid = 15", "t");
    s_assert_value (self->conn, "SELECT string_agg (kind || rtno || apcd, ',' ORDER BY kind, rtno)"
                                " FROM flight_route_point WHERE flid = 15", "ERUT1CTU,ERUT2XIY,ROUT1XIY");
    mx_schedule_destroy (&schedule);
    mx_sis_destroy (&msg);

    //  FLOP ABTM with ABOP "D", onto flight 15 renamed to the sample's FLID.
    msg = s_sample ("FLOP_ABTM_01.xml", zone);
    mx_flop_t *flop = NULL;
    if (mx_sis_flop (msg, zone, &flop, &error) != MX_BODY_OK)
        fail_msg ("FLOP_ABTM_01: %s", error);
    mx_flight_t *base = mx_flight_dup (saved [0]);
    base->flid = flop->flid;
    s_save (self->conn, NULL, base);
    mx_flight_t *current = s_load_one (self->conn, flop->flid, true);
    json_t *changed = NULL;
    mx_flight_t *next = mx_flight_apply_flop (current, flop, &changed);
    assert_int_equal (json_array_size (changed), 1);
    json_decref (changed);
    next->state_version = current->state_version + 1;
    next->last_msg_id = 2;
    s_save (self->conn, current, next);
    mx_flight_t *loaded = s_load_one (self->conn, flop->flid, false);
    s_assert_same (next, loaded);
    s_assert_value (self->conn, "SELECT abdg || abop FROM flight_airbridge WHERE flid = 121112312", "212D");
    mx_flight_destroy (&loaded);
    mx_flight_destroy (&next);
    mx_flight_destroy (&current);
    mx_flight_destroy (&base);
    mx_flop_destroy (&flop);
    mx_sis_destroy (&msg);

    //  A reference download: one row per record.
    msg = s_sample ("GLST_DNLD_01.xml", zone);
    mx_reference_t *ref = NULL;
    if (mx_sis_reference (msg, &ref, &error) != MX_BODY_OK)
        fail_msg ("GLST_DNLD_01: %s", error);
    int count = -1;
    if (mx_reference_apply (self->conn, ref, 3, S_NOW_MS, &count, &error))
        fail_msg ("reference: %s", error);
    assert_int_equal (count, (int) ref->count);
    char expected [16];
    snprintf (expected, sizeof expected, "%zu", ref->count);
    s_assert_value (self->conn, "SELECT count (*) FROM ref_master WHERE rtype = 'GLST'", expected);
    mx_reference_destroy (&ref);
    mx_sis_destroy (&msg);

    for (size_t i = 0; i < 2; i++)
        mx_flight_destroy (&saved [i]);
    mx_tz_destroy (&zone);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_abop_is_text, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_round_trip, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_load_missing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_load_each_chunks, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_update_touches_changed_columns, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_set_replacement, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_lock, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_operation_day_immutable, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_refused_writes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_event_insert, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_snap_log, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_reference, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_real_samples, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
