/*  Integration tests of the domain (WIRE.md, SPEC §3.3 batching, §4, §5):
    the real samples through the pipeline, schedule snapshots, protocol
    rejection, cross-day rollback, a transaction killed in mid-batch, and
    events matching state versions one to one. Real PostgreSQL and
    MariaDB; waiting is on database NOTIFYs.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <dirent.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <poll.h>

#include "mx_actor.h"
#include "mx_config.h"
#include "mx_control.h"
#include "mx_ingress.h"
#include "mx_processor.h"
#include "mx_pump.h"
#include "mx_sis.h"
#include "mx_sis_body.h"
#include "mx_testactor.h"
#include "mx_testenv.h"
#include "mx_tz.h"

#define WAIT_MS 30000
#define T0 1767225600000LL

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    char *dir;
    mx_clock_t *clock;
    mx_config_t *config;
    PGconn *conn;
    zactor_t *control;          //  destroyed by teardown too, before the databases go
    mx_control_args_t args;     //  lives as long as control
    mx_tz_t *zone;
} fixture_t;

//  mx_test_tx records the top-level transaction of every terminal
//  transition (txid_current is the same inside savepoints).
static const char *s_watch_sql =
    "CREATE TABLE mx_test_tx (msg_id bigint, tx bigint);"
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  IF NEW.state IN ('SUCCEEDED', 'SKIPPED', 'DEAD') THEN"
    "   INSERT INTO mx_test_tx VALUES (NEW.msg_id, txid_current ());"
    "  END IF;"
    "  PERFORM pg_notify ('mx_test', ''); RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON proc_state FOR EACH ROW EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

static void
s_set (mx_config_t *config, const char *key, const char *value)
{
    if (mx_config_set (config, key, value, NULL))
        fail_msg ("config %s = %s", key, value);
}

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    fx->pg = mx_testpg_new ();
    fx->mb = mx_testmb_new ();
    fx->dir = mx_testenv_tmpdir ();
    fx->conn = mx_testpg_connect_schema (fx->pg, s_watch_sql);
    char *error = NULL;
    fx->zone = mx_tz_load ("Asia/Shanghai", &error);
    assert_non_null (fx->zone);
    mx_config_t *config = mx_config_new_defaults ();
    char port [16], endpoint [512];
    snprintf (port, sizeof port, "%d", mx_testmb_port (fx->mb));
    snprintf (endpoint, sizeof endpoint, "ipc://%s/admin.sock", fx->dir);
    s_set (config, "msgx.pg.conninfo", mx_testpg_conninfo (fx->pg));
    s_set (config, "msgx.admin.endpoint", endpoint);
    s_set (config, "msgx.pipeline.autostart", "true");
    s_set (config, "msgx.pipeline.max-attempts", "1");
    s_set (config, "msgx.pipeline.poll-interval", "50ms");
    s_set (config, "msgx.pipeline.claim-batch", "500");
    mx_testmb_configure (fx->mb, config, "+00:00");
    fx->config = config;
    //  Real time here: these tests wait for the pipeline to drain, and the
    //  pump retries a broken transaction after poll-interval.
    fx->clock = mx_clock_new_system ();
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_actor_destroy (&fx->control);
    PQfinish (fx->conn);
    mx_config_destroy (&fx->config);
    mx_clock_destroy (&fx->clock);
    mx_tz_destroy (&fx->zone);
    mx_testmb_destroy (&fx->mb);
    mx_testpg_destroy (&fx->pg);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

static void
s_wait_all_finished (fixture_t *fx, int64_t count)
{
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT count(*) = %" PRId64 " FROM proc_state"
                               " WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')", count);
    mx_testpg_wait (fx->conn, sql);
}

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
s_read_file (const char *path)
{
    FILE *file = fopen (path, "rb");
    if (!file)
        fail_msg ("cannot read %s", path);
    fseek (file, 0, SEEK_END);
    long size = ftell (file);
    fseek (file, 0, SEEK_SET);
    char *text = calloc (1, (size_t) size + 1);
    if (fread (text, 1, (size_t) size, file) != (size_t) size)
        fail_msg ("short read of %s", path);
    fclose (file);
    return text;
}

static int
s_compare (const void *a, const void *b)
{
    return strcmp (*(char *const *) a, *(char *const *) b);
}

//  Events per flight carry versions 1..n without gap or repeat, on both
//  targets, and the last one is the flight's state_version.
static void
s_assert_events_match_versions (fixture_t *fx)
{
    //  KAFKA:msg: every version once, 1 to the flight's. KAFKA:schd: no
    //  version twice, up to the flight's (a flight changed more than once
    //  by the messages applied together has one event, at its newest).
    mx_testpg_expect (fx->conn,
        "SELECT count(*) FROM ("
        " SELECT target, flid, count(*) AS n, count(DISTINCT state_version) AS d, min(state_version) AS lo,"
        "        max(state_version) AS hi FROM msg_event GROUP BY target, flid) e"
        " JOIN flight_schd f USING (flid)"
        " WHERE e.n <> e.d OR e.hi <> f.state_version"
        "    OR (e.target = 'KAFKA:msg' AND (e.lo <> 1 OR e.hi <> e.n))", "0");
    //  Delivery order (event_id) follows the versions of each flight.
    mx_testpg_expect (fx->conn,
        "SELECT count(*) FROM (SELECT state_version < lag (state_version) OVER"
        " (PARTITION BY target, flid ORDER BY event_id) AS bad FROM msg_event) t WHERE bad", "0");
    mx_testpg_expect (fx->conn,
        "SELECT count(*) FROM flight_schd f WHERE NOT EXISTS"
        " (SELECT 1 FROM msg_event e WHERE e.flid = f.flid AND e.target = 'KAFKA:schd')", "0");
    //  A KAFKA:schd document is the state of the KAFKA:msg event of the
    //  same version.
    mx_testpg_expect (fx->conn,
        "SELECT count(*) FROM msg_event s JOIN msg_event m USING (flid, state_version)"
        " WHERE s.target = 'KAFKA:schd' AND m.target = 'KAFKA:msg'"
        "   AND s.payload::jsonb IS DISTINCT FROM"
        "       CASE WHEN s.event_type = 'TOMBSTONE' THEN NULL ELSE m.payload::jsonb -> 'state' END", "0");
}

//  ---------------------------------------------------------------------

static void
test_every_sample_reaches_the_state_wire_predicts (void **state)
{
    fixture_t *fx = *state;
    char dir_path [1024];
    snprintf (dir_path, sizeof dir_path, "%s/test/data/sis", getenv ("MX_SOURCE_DIR"));
    DIR *dir = opendir (dir_path);
    if (!dir)
        fail_msg ("samples not found at %s", dir_path);
    char *names [256];
    size_t count = 0;
    for (struct dirent *entry; (entry = readdir (dir));)
        if (strstr (entry->d_name, ".xml") && strcmp (entry->d_name, "SCHD_DNLD_01.xml") != 0
        &&  strcmp (entry->d_name, "FLOP_FDEL_01.xml") != 0)
            names [count++] = strdup (entry->d_name);
    closedir (dir);
    qsort (names, count, sizeof (char *), s_compare);
    //  The schedule first (it creates flights 15 and 16), the delete last.
    memmove (names + 1, names, count * sizeof (char *));
    names [0] = strdup ("SCHD_DNLD_01.xml");
    count++;
    names [count++] = strdup ("FLOP_FDEL_01.xml");
    assert_int_equal (count, 172);

    //  What WIRE.md predicts for each, in feeding order.
    json_t *expected = json_array ();
    zhashx_t *identities = zhashx_new ();
    zhashx_set_duplicator (identities, (zhashx_duplicator_fn *) strdup);
    zhashx_set_destructor (identities, (zhashx_destructor_fn *) zstr_free);
    bool flight_known [2] = { false, false };           //  15, 16
    bool deleted = false;
    mx_sis_options_t options = { .zone = fx->zone, .max_bytes = 16 * 1024 * 1024,
                                 .ignore_types = fx->config->pipeline_ignore_types.items,
                                 .ignore_count = fx->config->pipeline_ignore_types.count,
                                 .keep_envelope = true };
    for (size_t i = 0; i < count; i++) {
        char path [1300];
        snprintf (path, sizeof path, "%s/%s", dir_path, names [i]);
        char *xml = s_read_file (path);
        int64_t id = (int64_t) i + 1;
        assert_int_equal (mx_testmb_insert (fx->mb, id, xml, T0), id);
        mx_sis_status_t status;
        char *error = NULL;
        mx_sis_msg_t *msg = mx_sis_decode (xml, strlen (xml), &options, &status, &error);
        free (xml);
        char *outcome;
        if (!msg) {
            assert_int_equal (status, MX_SIS_MALFORMED);
            outcome = strdup ("DEAD MALFORMED");
            free (error);
        }
        else {
            free (error);                                   //  set when the payload is missing
            error = NULL;
            char key [128];
            mx_sis_identity (mx_sis_meta (msg), false, key, sizeof key);
            const char *first = zhashx_lookup (identities, key);
            mx_sis_kind_t kind = mx_sis_kind (msg);
            const char *type = mx_sis_meta (msg)->type;
            if (first)
                outcome = zsys_sprintf ("SKIPPED duplicate-of:%s", first);
            else
            if (status == MX_SIS_MALFORMED)                 //  payload missing, identity bound
                outcome = strdup ("DEAD MALFORMED");
            else
            if (strcmp (type, "REGN") == 0)
                outcome = strdup ("SKIPPED ignored:REGN");
            else
            if (kind == MX_SIS_KIND_REFERENCE) {
                mx_reference_t *ref = NULL;
                mx_body_status_t body = mx_sis_reference (msg, &ref, &error);
                outcome = strdup (body == MX_BODY_OK ? "SUCCEEDED" : "DEAD PROTOCOL");
                mx_reference_destroy (&ref);
                free (error);
            }
            else
            if (kind == MX_SIS_KIND_SCHD_DNLD) {
                outcome = strdup ("SUCCEEDED");
                flight_known [0] = flight_known [1] = true;
            }
            else
            if (kind == MX_SIS_KIND_FLOP || kind == MX_SIS_KIND_FDEL) {
                mx_flop_t *flop = NULL;
                mx_body_status_t body = mx_sis_flop (msg, fx->zone, &flop, &error);
                free (error);
                if (body == MX_BODY_PROTOCOL)
                    outcome = strdup ("DEAD PROTOCOL");
                else
                if (body != MX_BODY_OK)
                    outcome = strdup ("DEAD EXHAUSTED");        //  max-attempts 1
                else
                if (!((flop->flid == 15 && flight_known [0]) || (flop->flid == 16 && flight_known [1])))
                    outcome = zsys_sprintf ("SKIPPED unknown-flight:%" PRId64, flop->flid);
                else
                if (deleted && flop->flid == 15 && !flop->fdel)
                    outcome = zsys_sprintf ("SKIPPED flight-deleted:%" PRId64, flop->flid);
                else {
                    outcome = strdup ("SUCCEEDED");
                    if (flop->fdel && flop->flid == 15)
                        deleted = true;
                }
                mx_flop_destroy (&flop);
            }
            else
                outcome = strdup ("DEAD EXHAUSTED");            //  SCHS: unsupported, one attempt
            if (!first) {
                char *id_text = zsys_sprintf ("%" PRId64, id);
                zhashx_insert (identities, key, id_text);
                free (id_text);
            }
            mx_sis_destroy (&msg);
        }
        json_array_append_new (expected, json_pack ("{s:s,s:s}", "file", names [i], "outcome", outcome));
        free (outcome);
    }
    zhashx_destroy (&identities);

    s_start (fx, &fx->args);
    s_wait_all_finished (fx, (int64_t) count);
    mx_actor_destroy (&fx->control);

    //  Compare, message by message.
    PGresult *res = PQexec (fx->conn,
        "SELECT msg_id, state || CASE WHEN state = 'DEAD' THEN ' ' || error_class"
        "                             WHEN state = 'SKIPPED' THEN ' ' || outcome ELSE '' END"
        " FROM proc_state ORDER BY msg_id");
    assert_int_equal (PQntuples (res), (int) count);
    int mismatches = 0, succeeded = 0;
    for (size_t i = 0; i < count; i++) {
        const char *want = json_string_value (json_object_get (json_array_get (expected, i), "outcome"));
        const char *got = PQgetvalue (res, (int) i, 1);
        if (strcmp (want, got) != 0) {
            printf ("# %s: expected %s, got %s\n", names [i], want, got);
            mismatches++;
        }
        succeeded += strcmp (got, "SUCCEEDED") == 0;
    }
    PQclear (res);
    printf ("# %zu samples, %d SUCCEEDED, %d mismatches\n", count, succeeded, mismatches);
    assert_int_equal (mismatches, 0);
    assert_true (succeeded > 60);

    //  Flights 15 and 16 as SCHD_DNLD_01 describes them: the KAFKA:schd
    //  document of message 1 carries every field of their FLTR.
    json_error_t json_error;
    char *doc_text = mx_testpg_value (fx->conn, "SELECT payload FROM msg_event WHERE msg_id = 1 AND target = 'KAFKA:schd' AND flid = 15");
    json_t *doc = json_loads (doc_text, 0, &json_error);
    assert_non_null (doc);
    const char *fields [][2] = {
        { "ALCD", "YG" }, { "FLNO", "YG9028" }, { "MVIN", "D" }, { "SODT", "2021-01-23T05:35:00+08:00" },
        { "FLTY", "W" }, { "FLIN", "D" }, { "ACFT", "733" }, { "RENO", "B2574" }, { "TAOP", "YG" },
        { "TAFL", "YG9061" }, { "TRML", "T2" }, { "STND", "504" }, { "EXSC", "RCFLOP" }, { "FTSS", "RCFLOP" },
        { "operation_day", "2021-01-23" }, { "lifecycle", "ACTIVE" }
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields [0]; i++) {
        const char *value = json_string_value (json_object_get (doc, fields [i][0]));
        if (!value || strcmp (value, fields [i][1]) != 0)
            fail_msg ("flight 15 %s: '%s', expected '%s'", fields [i][0], value ? value : "(null)", fields [i][1]);
    }
    assert_int_equal (json_integer_value (json_object_get (doc, "TAID")), 16);
    assert_int_equal (json_integer_value (json_object_get (doc, "MAXP")), 300);
    assert_int_equal (json_integer_value (json_object_get (doc, "PHAG")), 110009);
    assert_int_equal (json_integer_value (json_object_get (doc, "FHAG")), 110009);
    assert_int_equal (json_integer_value (json_object_get (doc, "MHAG")), 110009);
    assert_int_equal (json_integer_value (json_object_get (doc, "state_version")), 1);
    assert_int_equal (json_array_size (json_object_get (doc, "PSDT")), 1);
    assert_int_equal (json_array_size (json_object_get (doc, "ROUT")), 1);
    assert_int_equal (json_array_size (json_object_get (doc, "ERUT")), 2);
    json_t *stand = json_array_get (json_object_get (doc, "PSDT"), 0);
    assert_string_equal (json_string_value (json_object_get (stand, "PSST")), "504");
    assert_string_equal (json_string_value (json_object_get (stand, "STST")), "2021-01-23T02:37:00+08:00");
    json_t *erut2 = json_array_get (json_object_get (doc, "ERUT"), 1);
    assert_string_equal (json_string_value (json_object_get (erut2, "APCD")), "XIY");
    assert_string_equal (json_string_value (json_object_get (erut2, "SCAT")), "2021-01-23T07:10:00+08:00");
    json_decref (doc);
    free (doc_text);
    doc_text = mx_testpg_value (fx->conn, "SELECT payload FROM msg_event WHERE msg_id = 1 AND target = 'KAFKA:schd' AND flid = 16");
    doc = json_loads (doc_text, 0, &json_error);
    assert_non_null (doc);
    assert_string_equal (json_string_value (json_object_get (doc, "FLNO")), "YG9061");
    assert_string_equal (json_string_value (json_object_get (doc, "MVIN")), "A");
    assert_string_equal (json_string_value (json_object_get (doc, "SODT")), "2021-01-23T03:25:00+08:00");
    json_decref (doc);
    free (doc_text);

    //  Flight 15 was deleted last: a tombstone (null) on KAFKA:schd, the
    //  document with lifecycle DELETED on KAFKA:msg.
    mx_testpg_expect (fx->conn, "SELECT lifecycle FROM flight_schd WHERE flid = 15", "DELETED");
    mx_testpg_expect (fx->conn, "SELECT event_type || ' ' || (payload IS NULL) FROM msg_event"
                        " WHERE flid = 15 AND target = 'KAFKA:schd' ORDER BY event_id DESC LIMIT 1", "TOMBSTONE true");
    mx_testpg_expect (fx->conn, "SELECT payload::jsonb->'state'->>'lifecycle' FROM msg_event"
                        " WHERE flid = 15 AND target = 'KAFKA:msg' ORDER BY event_id DESC LIMIT 1", "DELETED");
    //  Reference data landed.
    mx_testpg_expect (fx->conn, "SELECT count(DISTINCT rtype) > 10 FROM ref_master", "t");
    s_assert_events_match_versions (fx);
    //  Non-business terminals wrote no events.
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM msg_event e JOIN proc_state p USING (msg_id) WHERE p.state <> 'SUCCEEDED'", "0");
    json_decref (expected);
    for (size_t i = 0; i < count; i++)
        free (names [i]);
}

//  ---------------------------------------------------------------------


//  A DNLD with `count` flights 100.., SEQN seqn, aircraft acft, and the
//  FLTR of flight 100 + odd_day (if >= 0) on another day.
static char *
s_dnld (int seqn, int count, int declared, const char *acft, int odd_day)
{
    char *body = strdup ("");
    for (int i = 0; i < count; i++) {
        char fltr [512];
        snprintf (fltr, sizeof fltr,
                  "<FLTR><FLID>%d</FLID><ALCD>CA</ALCD><FLNO>CA%d</FLNO><MVIN>D</MVIN><SODT>%s</SODT>"
                  "<FLTY>W</FLTY><FLIN>D</FLIN><ACFT>%s</ACFT></FLTR>", 100 + i, 100 + i,
                  i == odd_day ? "24JAN211000" : "23JAN211000", acft);
        char *next = zsys_sprintf ("%s%s", body, fltr);
        free (body);
        body = next;
    }
    char *xml = zsys_sprintf ("<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20210122220000</DTTM>"
                              "<TYPE>SCHD</TYPE><STYP>DNLD</STYP></META><SCHD><RECS>%d</RECS>%s</SCHD></MSG>",
                              seqn, declared, body);
    free (body);
    return xml;
}

static void
test_snapshots_replay_reject_and_cross_day (void **state)
{
    fixture_t *fx = *state;
    char *xml;
    xml = s_dnld (1, 3, 3, "733", -1);                  //  creates 100..102
    mx_testmb_insert (fx->mb, 1, xml, T0);
    free (xml);
    xml = s_dnld (2, 3, 3, "733", -1);                  //  same content again: nothing changes
    mx_testmb_insert (fx->mb, 2, xml, T0);
    free (xml);
    xml = s_dnld (3, 3, 4, "320", -1);                  //  RECS says 4: protocol reject
    mx_testmb_insert (fx->mb, 3, xml, T0);
    free (xml);
    xml = s_dnld (4, 3, 3, "321", 2);                   //  flight 102 on another day: all rolled back
    mx_testmb_insert (fx->mb, 4, xml, T0);
    free (xml);
    xml = s_dnld (5, 2, 2, "330", -1);                  //  100, 101 change; 102 untouched (absent)
    mx_testmb_insert (fx->mb, 5, xml, T0);
    free (xml);
    s_start (fx, &fx->args);
    s_wait_all_finished (fx, 5);
    mx_actor_destroy (&fx->control);
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || state || ':' || coalesce (error_class, '') || ':'"
                        " || coalesce (outcome, last_error), ' | ' ORDER BY msg_id) FROM proc_state",
                    "1:SUCCEEDED::flights inserted 3, updated 0, unchanged 0"
                    " | 2:SUCCEEDED::flights inserted 0, updated 0, unchanged 3"
                    " | 3:DEAD:PROTOCOL:RECS 4 but 3 FLTR record(s)"
                    " | 4:DEAD:PROTOCOL:cross-day FLID 102"
                    " | 5:SUCCEEDED::flights inserted 0, updated 2, unchanged 0");
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid || ':' || acft || ':v' || state_version || ':m' || last_msg_id, ' '"
                        " ORDER BY flid) FROM flight_schd", "100:330:v2:m5 101:330:v2:m5 102:733:v1:m1");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM msg_event WHERE msg_id IN (2, 3, 4)", "0");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || flights_inserted || '/' || flights_updated || '/' || flights_unchanged,"
                        " ' ' ORDER BY msg_id) FROM schd_snap_log", "1:3/0/0 2:0/0/3 5:0/2/0");
    s_assert_events_match_versions (fx);
}

//  A FLOP for one of the flights of s_dnld, with its own SEQN.
static void
s_insert_flop (fixture_t *fx, int64_t id, int seqn, int flid, const char *body)
{
    char flop [512];
    snprintf (flop, sizeof flop,
              "<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20210123080000</DTTM><TYPE>FLOP</TYPE>"
              "<STYP>STND</STYP></META><FLOP><FLID>%d</FLID>%s</FLOP></MSG>", seqn, flid, body);
    mx_testmb_insert (fx->mb, id, flop, T0);
}

//  Runs `setup` (SQL of the test), then a DNLD of flights 100..103 and a
//  STND update of each in four messages, until all five are terminal.
static void
s_dnld_then_four_stands (fixture_t *fx, const char *setup)
{
    PGresult *res = PQexec (fx->conn, setup);
    assert_int_equal (PQresultStatus (res), PGRES_COMMAND_OK);
    PQclear (res);
    char *xml = s_dnld (1, 4, 4, "733", -1);
    mx_testmb_insert (fx->mb, 1, xml, T0);
    free (xml);
    s_start (fx, &fx->args);
    s_wait_all_finished (fx, 1);            //  the flights exist: updates now
    for (int i = 0; i < 4; i++) {
        char stand [32];
        snprintf (stand, sizeof stand, "<STND>S%d</STND>", i);
        s_insert_flop (fx, 2 + i, 10 + i, 100 + i, stand);
    }
    s_wait_all_finished (fx, 5);
    mx_actor_destroy (&fx->control);
}

//  The processor's connection dies in the middle of a batch: every message
//  of it stays as it was, then all are applied exactly once.
static void
test_transaction_killed_mid_batch_applies_nothing_twice (void **state)
{
    fixture_t *fx = *state;
    s_dnld_then_four_stands (fx,
        "CREATE SEQUENCE mx_test_once;"
        "CREATE FUNCTION mx_test_kill () RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN"
        "  IF NEW.flid = 102 AND nextval ('mx_test_once') = 1 THEN"
        "   PERFORM pg_terminate_backend (pg_backend_pid ());"
        "  END IF;"
        "  RETURN NEW;"
        " END $$;"
        "CREATE TRIGGER mx_test_kill BEFORE UPDATE ON flight_schd FOR EACH ROW EXECUTE FUNCTION mx_test_kill ();");
    mx_testpg_expect (fx->conn, "SELECT last_value FROM mx_test_once", "2");    //  it did fire once
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || state || ':' || attempts, ' ' ORDER BY msg_id)"
                        " FROM proc_state", "1:SUCCEEDED:0 2:SUCCEEDED:0 3:SUCCEEDED:0 4:SUCCEEDED:0 5:SUCCEEDED:0");
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid || ':' || stnd || ':v' || state_version, ' ' ORDER BY flid)"
                        " FROM flight_schd", "100:S0:v2 101:S1:v2 102:S2:v2 103:S3:v2");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM msg_event", "16");
    s_assert_events_match_versions (fx);
    //  Batching: the four updates took fewer transactions than messages,
    //  and the killed one left no trace.
    mx_testpg_expect (fx->conn, "SELECT count(DISTINCT tx) < 4 FROM mx_test_tx WHERE msg_id > 1", "t");
}

//  The outbox rows of a batch are streamed while the batch is applied; the
//  server refuses one in the middle of the stream: the batch leaves nothing,
//  is redone message by message, and every event is there once, in order.
static void
test_outbox_refused_mid_stream_redoes_the_batch (void **state)
{
    fixture_t *fx = *state;
    s_dnld_then_four_stands (fx,
        "CREATE SEQUENCE mx_test_once;"
        "CREATE FUNCTION mx_test_refuse () RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN"
        "  IF NEW.flid = 102 AND NEW.msg_id > 1 AND nextval ('mx_test_once') = 1 THEN"
        "   RAISE EXCEPTION 'outbox refused for the test';"
        "  END IF;"
        "  RETURN NEW;"
        " END $$;"
        "CREATE TRIGGER mx_test_refuse BEFORE INSERT ON msg_event FOR EACH ROW EXECUTE FUNCTION mx_test_refuse ();");
    //  It did refuse once (the redo's two rows of flight 102 drew more).
    mx_testpg_expect (fx->conn, "SELECT last_value >= 2 FROM mx_test_once", "t");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || state || ':' || attempts, ' ' ORDER BY msg_id)"
                        " FROM proc_state", "1:SUCCEEDED:0 2:SUCCEEDED:0 3:SUCCEEDED:0 4:SUCCEEDED:0 5:SUCCEEDED:0");
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid || ':' || stnd || ':v' || state_version, ' ' ORDER BY flid)"
                        " FROM flight_schd", "100:S0:v2 101:S1:v2 102:S2:v2 103:S3:v2");
    //  Each change once, and event ids in message order per target.
    mx_testpg_expect (fx->conn, "SELECT count(*) || ' ' || count(DISTINCT (target, flid, state_version)) FROM msg_event",
                      "16 16");
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id::text, ' ' ORDER BY event_id) FROM msg_event"
                        " WHERE target = 'KAFKA:msg' AND msg_id > 1", "2 3 4 5");
    s_assert_events_match_versions (fx);
}

//  Under a backlog each full batch reads and decodes the next messages
//  while it commits; the batches that use them settle every kind of
//  outcome exactly as reading them in the batch would.
static void
test_read_ahead_batches_settle_every_outcome (void **state)
{
    fixture_t *fx = *state;
    s_set (fx->config, "msgx.pipeline.process-batch", "3");
    char *xml = s_dnld (1, 4, 4, "733", -1);            //  creates 100..103
    mx_testmb_insert (fx->mb, 1, xml, T0);
    free (xml);
    s_insert_flop (fx, 2, 10, 100, "<STND>A1</STND>");
    s_insert_flop (fx, 3, 11, 101, "<STND>B1</STND>");
    s_insert_flop (fx, 4, 12, 102, "<STND>C1</STND>");
    mx_testmb_insert (fx->mb, 5, "<MSG><META><SNDR>AODB</SNDR>", T0);
    s_insert_flop (fx, 6, 11, 101, "<STND>B1</STND>");     //  message 3 again
    s_insert_flop (fx, 7, 13, 999, "<STND>Z9</STND>");     //  no such flight
    s_insert_flop (fx, 8, 14, 100, "<STND>A1</STND>");     //  what it is already
    s_insert_flop (fx, 9, 15, 100, "<STND>A2</STND>");
    mx_testmb_insert (fx->mb, 10,
        "<MSG><META><SNDR>AODB</SNDR><SEQN>16</SEQN><DTTM>20210123080000</DTTM><TYPE>FLOP</TYPE>"
        "<STYP>FDEL</STYP></META><FLOP><FLID>103</FLID><FDEL></FDEL></FLOP></MSG>", T0);
    s_insert_flop (fx, 11, 17, 103, "<STND>D1</STND>");    //  deleted just before
    s_insert_flop (fx, 12, 18, 102, "<STND>C2</STND>");
    s_start (fx, &fx->args);
    s_wait_all_finished (fx, 12);
    mx_actor_destroy (&fx->control);
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || state || ':' || coalesce (error_class, '')"
                        " || ':' || coalesce (outcome, ''), ' | ' ORDER BY msg_id) FROM proc_state",
                      "1:SUCCEEDED::flights inserted 4, updated 0, unchanged 0 | 2:SUCCEEDED:: | 3:SUCCEEDED:: | "
                      "4:SUCCEEDED:: | 5:DEAD:MALFORMED: | 6:SKIPPED::duplicate-of:3 | "
                      "7:SKIPPED::unknown-flight:999 | 8:SUCCEEDED::no-change | 9:SUCCEEDED:: | "
                      "10:SUCCEEDED:: | 11:SKIPPED::flight-deleted:103 | 12:SUCCEEDED::");
    mx_testpg_expect (fx->conn, "SELECT string_agg (flid || ':' || CASE WHEN flid < 103 THEN stnd ELSE '' END"
                        " || ':v' || state_version || ':' || lifecycle, ' ' ORDER BY flid) FROM flight_schd",
                      "100:A2:v3:ACTIVE 101:B1:v2:ACTIVE 102:C2:v3:ACTIVE 103::v2:DELETED");
    //  Five transactions of three at most: batching went on throughout.
    mx_testpg_expect (fx->conn, "SELECT count(DISTINCT tx) <= 5 FROM mx_test_tx", "t");
    s_assert_events_match_versions (fx);
    //  Every change has its KAFKA:msg event; KAFKA:schd has one per flight
    //  and transaction that changed it, at the newest state (a batch that
    //  creates a flight and changes it has one state of it).
    mx_testpg_expect (fx->conn,
        "SELECT count(*) FROM (SELECT m.flid, count(DISTINCT t.tx) AS txs FROM msg_event m"
        "  JOIN mx_test_tx t USING (msg_id) WHERE m.target = 'KAFKA:msg' GROUP BY m.flid) c"
        " FULL JOIN (SELECT flid, count(*) AS n FROM msg_event WHERE target = 'KAFKA:schd' GROUP BY flid) s"
        " USING (flid) WHERE c.txs IS DISTINCT FROM s.n", "0");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM msg_event WHERE target = 'KAFKA:msg'", "10");
    mx_testpg_expect (fx->conn, "SELECT count(*) < 10 FROM msg_event WHERE target = 'KAFKA:schd'", "t");
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_every_sample_reaches_the_state_wire_predicts, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_snapshots_replay_reject_and_cross_day, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_transaction_killed_mid_batch_applies_nothing_twice, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_outbox_refused_mid_stream_redoes_the_batch, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_read_ahead_batches_settle_every_outcome, s_setup, s_teardown),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
