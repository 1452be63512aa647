/*  test_diff_legacy - msgx-diff against real servers: a day generated into the
    MariaDB mailbox by msgx-gen and processed by the real msgxd into
    PostgreSQL; a legacy table built from msgxd's state with known
    differences, on MariaDB and on PostgreSQL.

    Real differences: two flights missing from the legacy table, one
    flight only in it, three changed gates. Format-only differences:
    scheduled times stored as local wall time (Asia/Shanghai), flight
    numbers with trailing spaces, every third airline in lower case.

    - with normalisers the report finds exactly the real differences;
      without them the format ones appear too, each counted exactly
    - a business key (ALCD, FLNO, SODT, MVIN) matches as FLID does
    - a legacy table on PostgreSQL, by day and by FLID range
    - exit codes by threshold; bad mapping, bad arguments and an
      unreachable legacy store exit 2 with a reason
    - --json valid against docs/schemas/diff-report.schema.json, the
      mappings against diff-mapping.schema.json; --html self-contained,
      values escaped
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <mysql.h>

#include "mx_testdaemon.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 60000
#define DAY "2021-01-23"
#define ZONE "Asia/Shanghai"
#define CHANGED_GATES 3
#define LEGACY_ONLY_FLID "900000001"

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    char *dir;
    char build [1024];
    char source [1024];
    PGconn *conn;
    char *password_file;
    char *mysql_uri;
    char *pg_uri;
    //  What the legacy table on MariaDB was built with
    int64_t flights;                //  msgxd's flights of the day
    int64_t compared;               //  on both sides
    int64_t lower_airlines;         //  of those, airline in lower case
    char missing [2][32];           //  FLIDs left out of the legacy table
    char changed [CHANGED_GATES][32];
} fixture_t;

static fixture_t *s_fx;

static void
s_write (const char *path, const char *text)
{
    FILE *file = fopen (path, "w");
    assert_non_null (file);
    assert_true (fputs (text, file) >= 0);
    assert_int_equal (fclose (file), 0);
}

//  Runs msgx-diff with args (NULL-terminated); returns its exit code,
//  *out and *err (malloc'd).
static int
s_diff (const char *const *args, char **out, char **err)
{
    const char *argv [40];
    char binary [1200], msgx [1200];
    snprintf (binary, sizeof binary, "%s/tools/msgx-diff", s_fx->build);
    snprintf (msgx, sizeof msgx, "MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (s_fx->pg));
    size_t n = 0;
    argv [n++] = binary;
    for (size_t i = 0; args [i] && n < 39; i++)
        argv [n++] = args [i];
    argv [n] = NULL;
    const char *env [] = { msgx, NULL };
    return mx_testproc_run (argv, env, WAIT_MS, out, err);
}

//  msgx-diff --json with args: the report (the exit code checked).
static json_t *
s_report (const char *const *args, int expected_rc)
{
    const char *argv [40];
    size_t n = 0;
    for (size_t i = 0; args [i] && n < 37; i++)
        argv [n++] = args [i];
    argv [n++] = "--json";
    argv [n] = NULL;
    char *out = NULL, *err = NULL;
    int rc = s_diff (argv, &out, &err);
    if (rc != expected_rc)
        fail_msg ("msgx-diff exited %d, not %d:\n%s%s", rc, expected_rc, out, err);
    json_error_t error;
    json_t *report = json_loads (out, 0, &error);
    if (!report)
        fail_msg ("msgx-diff --json: %s:\n%s", error.text, out);
    //  Valid against the documented schema.
    char *path = zsys_sprintf ("%s/report.json", s_fx->dir);
    s_write (path, out);
    char *script = zsys_sprintf ("%s/test/harness/mx-validate-json", s_fx->source);
    char *schema = zsys_sprintf ("%s/docs/schemas/diff-report.schema.json", s_fx->source);
    const char *validate [] = { script, schema, path, NULL };
    char *vout = NULL, *verr = NULL;
    if (mx_testproc_run (validate, NULL, WAIT_MS, &vout, &verr) != 0)
        fail_msg ("the report does not match diff-report.schema.json:\n%s%s\n%s", vout, verr, out);
    free (vout);
    free (verr);
    free (script);
    free (schema);
    free (path);
    free (out);
    free (err);
    return report;
}

static json_int_t
s_count (json_t *report, const char *what)
{
    return json_integer_value (json_object_get (json_object_get (report, "flights"), what));
}

static json_t *
s_field (json_t *report, const char *code)
{
    size_t i;
    json_t *field;
    json_array_foreach (json_object_get (report, "fields"), i, field)
        if (strcmp (json_string_value (json_object_get (field, "code")), code) == 0)
            return field;
    fail_msg ("no field %s in the report", code);
    return NULL;
}

static json_int_t
s_mismatched (json_t *report, const char *code)
{
    return json_integer_value (json_object_get (s_field (report, code), "mismatched"));
}

//  A mapping file in the test folder, checked against its schema.
static char *
s_mapping (const char *name, const char *text)
{
    char *path = zsys_sprintf ("%s/%s", s_fx->dir, name);
    s_write (path, text);
    char *script = zsys_sprintf ("%s/test/harness/mx-validate-json", s_fx->source);
    char *schema = zsys_sprintf ("%s/docs/schemas/diff-mapping.schema.json", s_fx->source);
    const char *validate [] = { script, schema, path, NULL };
    char *out = NULL, *err = NULL;
    if (mx_testproc_run (validate, NULL, WAIT_MS, &out, &err) != 0)
        fail_msg ("mapping %s does not match diff-mapping.schema.json:\n%s%s", name, out, err);
    free (out);
    free (err);
    free (script);
    free (schema);
    return path;
}

static const char *s_normalised_fields =
    "  \"fields\": ["
    "    {\"column\": \"airline\", \"code\": \"ALCD\", \"normalise\": [\"upper\"]},"
    "    {\"column\": \"flight_no\", \"code\": \"FLNO\", \"normalise\": [\"trim\"]},"
    "    {\"column\": \"adid\", \"code\": \"MVIN\"},"
    "    {\"column\": \"std\", \"code\": \"SODT\", \"normalise\": [{\"time\": {\"zone\": \"" ZONE "\"}}]},"
    "    {\"column\": \"gate\", \"code\": \"GTDT.1.GATE\", \"normalise\": [\"trim\"]},"
    "    {\"column\": \"stand\", \"code\": \"STND\"}]}";

static const char *s_raw_fields =
    "  \"fields\": ["
    "    {\"column\": \"airline\", \"code\": \"ALCD\"},"
    "    {\"column\": \"flight_no\", \"code\": \"FLNO\"},"
    "    {\"column\": \"adid\", \"code\": \"MVIN\"},"
    "    {\"column\": \"std\", \"code\": \"SODT\"},"
    "    {\"column\": \"gate\", \"code\": \"GTDT.1.GATE\"},"
    "    {\"column\": \"stand\", \"code\": \"STND\"}]}";

//  ---------------------------------------------------------------------
//  The day through msgxd, then the legacy tables

static void
s_run_the_day (fixture_t *fx)
{
    const char *gen_args [] = {
        "--seed", "11", "--flights", "60", "--per-message", "30", "--updates", "200",
        "--day", DAY, NULL
    };
    free (mx_testdaemon_gen (fx->build, fx->mb, gen_args, WAIT_MS));

    mx_testdaemon_env_t env;
    mx_testdaemon_env_init (&env, fx->pg, fx->mb, fx->dir, "admin.sock", 0);
    mx_testdaemon_env_add (&env, "MSGX_OPERATION_DAY_ZONE=" ZONE);
    mx_testproc_t *daemon = mx_testdaemon_start ("cmd/msgxd", &env, "active");
    long long total = mx_testdaemon_wait_processed (fx->conn, fx->mb, false);
    mx_testdaemon_stop (&daemon);
    mx_testdaemon_env_free (&env);
    print_message ("# %lld messages processed\n", total);
}

//  msgxd's flights of the day, as a legacy system keeps them: local wall
//  times, padded flight numbers, some airlines in lower case.
static const char *s_legacy_rows_sql =
    "SELECT f.flid::text, f.operation_day::text,"
    "       CASE WHEN f.flid % 3 = 0 THEN lower (f.alcd) ELSE f.alcd END,"
    "       f.flno || '  ', f.mvin,"
    "       to_char (f.sodt AT TIME ZONE $1::text, 'YYYY-MM-DD HH24:MI:SS'),"
    "       g.gate, f.stnd"
    "  FROM flight_schd f LEFT JOIN flight_gate g ON g.flid = f.flid AND g.gtno = 1"
    " WHERE f.operation_day = $2::date AND f.lifecycle = 'ACTIVE' ORDER BY f.flid";

static void
s_build_mariadb_legacy (fixture_t *fx)
{
    MYSQL *m = mx_testmb_connect (fx->mb);
    if (mysql_query (m, "CREATE TABLE legacy_flights (flight_id BIGINT PRIMARY KEY, op_day DATE,"
                        " airline VARCHAR(8), flight_no VARCHAR(16), adid CHAR(1), std DATETIME,"
                        " gate VARCHAR(16), stand VARCHAR(16))"))
        fail_msg ("legacy table: %s", mysql_error (m));
    const char *params [] = { ZONE, DAY };
    PGresult *res = PQexecParams (fx->conn, s_legacy_rows_sql, 2, NULL, params, NULL, NULL, 0);
    assert_int_equal (PQresultStatus (res), PGRES_TUPLES_OK);
    int rows = PQntuples (res);
    assert_true (rows > 20);
    fx->flights = rows;
    MYSQL_STMT *stmt = mysql_stmt_init (m);
    const char *insert = "INSERT INTO legacy_flights VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    assert_int_equal (mysql_stmt_prepare (stmt, insert, strlen (insert)), 0);
    //  Rows 0 and 1 left out; the next three with a gate get another one
    //  (one that needs escaping in HTML); and one flight msgxd does not have.
    static const char *gates [CHANGED_GATES] = { "Z9", "<G&1>", "Z7" };
    int changed = 0;
    for (int row = 0; row <= rows; row++) {
        const char *values [8];
        for (int c = 0; c < 8; c++)
            values [c] = row < rows && !PQgetisnull (res, row, c) ? PQgetvalue (res, row, c) : NULL;
        if (row < 2) {
            snprintf (fx->missing [row], sizeof fx->missing [row], "%s", values [0]);
            continue;
        }
        if (changed < CHANGED_GATES && row < rows && values [6]) {
            snprintf (fx->changed [changed], sizeof fx->changed [changed], "%s", values [0]);
            values [6] = gates [changed++];
        }
        if (row == rows) {
            const char *extra [8] = { LEGACY_ONLY_FLID, DAY, "ZZ", "9999", "A", "2021-01-23 08:00:00", "A1", NULL };
            memcpy (values, extra, sizeof values);
        }
        else {
            fx->compared++;
            if (strtoll (values [0], NULL, 10) % 3 == 0)
                fx->lower_airlines++;
        }
        MYSQL_BIND bind [8];
        unsigned long lengths [8];
        my_bool nulls [8];
        memset (bind, 0, sizeof bind);
        for (int c = 0; c < 8; c++) {
            nulls [c] = values [c] == NULL;
            lengths [c] = values [c] ? (unsigned long) strlen (values [c]) : 0;
            bind [c].buffer_type = MYSQL_TYPE_STRING;
            bind [c].buffer = (void *) values [c];
            bind [c].buffer_length = lengths [c];
            bind [c].length = &lengths [c];
            bind [c].is_null = &nulls [c];
        }
        if (mysql_stmt_bind_param (stmt, bind) || mysql_stmt_execute (stmt))
            fail_msg ("legacy row: %s", mysql_stmt_error (stmt));
    }
    assert_int_equal (changed, CHANGED_GATES);
    mysql_stmt_close (stmt);
    PQclear (res);
    mysql_close (m);
    print_message ("# legacy table on MariaDB: %" PRId64 " flights of msgxd, %" PRId64 " kept\n",
                   fx->flights, fx->compared);
}

//  The same on PostgreSQL (a schema of its own in msgxd's database): the
//  first flight left out, the second with another gate.
static void
s_build_pg_legacy (fixture_t *fx)
{
    mx_testpg_exec (fx->conn,
        "CREATE SCHEMA legacy;"
        "CREATE TABLE legacy.flights AS"
        " SELECT f.flid AS flight_id, f.operation_day AS op_day, f.alcd AS airline,"
        "        f.flno || ' ' AS flight_no, f.mvin AS adid,"
        "        (f.sodt AT TIME ZONE '" ZONE "') AS std, g.gate, f.stnd AS stand"
        "   FROM flight_schd f LEFT JOIN flight_gate g ON g.flid = f.flid AND g.gtno = 1"
        "  WHERE f.operation_day = '" DAY "' AND f.lifecycle = 'ACTIVE';"
        "DELETE FROM legacy.flights WHERE flight_id = (SELECT min (flight_id) FROM legacy.flights);"
        "UPDATE legacy.flights SET gate = 'PG1' WHERE flight_id = (SELECT min (flight_id) FROM legacy.flights);");
}

static int
s_group_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    s_fx = fx;
    snprintf (fx->build, sizeof fx->build, "%s", getenv ("MX_BUILD_DIR"));
    snprintf (fx->source, sizeof fx->source, "%s", getenv ("MX_SOURCE_DIR"));
    fx->pg = mx_testpg_new ();
    fx->mb = mx_testmb_new ();
    fx->dir = mx_testenv_tmpdir ();
    fx->conn = mx_testpg_connect_schema (fx->pg, MX_TESTPG_WATCH_PROC_STATE);
    fx->password_file = zsys_sprintf ("%s/legacy.password", fx->dir);
    char *password = zsys_sprintf ("%s\n", mx_testmb_password (fx->mb));
    s_write (fx->password_file, password);
    free (password);
    fx->mysql_uri = zsys_sprintf ("mysql://%s@%s:%d/%s", mx_testmb_user (fx->mb), mx_testmb_host (fx->mb),
                                  mx_testmb_port (fx->mb), mx_testmb_database (fx->mb));
    fx->pg_uri = zsys_sprintf ("postgresql://%s@%s:%s/%s", PQuser (fx->conn), PQhost (fx->conn),
                               PQport (fx->conn), PQdb (fx->conn));
    s_run_the_day (fx);
    s_build_mariadb_legacy (fx);
    s_build_pg_legacy (fx);
    *state = fx;
    return 0;
}

static int
s_group_teardown (void **state)
{
    fixture_t *fx = *state;
    PQfinish (fx->conn);
    mx_testmb_destroy (&fx->mb);
    mx_testpg_destroy (&fx->pg);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx->password_file);
    free (fx->mysql_uri);
    free (fx->pg_uri);
    free (fx);
    return 0;
}

//  ---------------------------------------------------------------------

static void
s_expect_only_real_differences (json_t *report)
{
    fixture_t *fx = s_fx;
    assert_int_equal (s_count (report, "msgxd"), fx->flights);
    assert_int_equal (s_count (report, "legacy"), fx->compared + 1);
    assert_int_equal (s_count (report, "both"), fx->compared);
    assert_int_equal (s_count (report, "only_msgxd"), 2);
    assert_int_equal (s_count (report, "only_legacy"), 1);
    assert_int_equal (s_count (report, "legacy_duplicates"), 0);
    json_t *only = json_object_get (report, "only_msgxd");
    for (int i = 0; i < 2; i++) {
        char flid [32];
        snprintf (flid, sizeof flid, "%" JSON_INTEGER_FORMAT,
                  json_integer_value (json_object_get (json_array_get (only, (size_t) i), "flid")));
        assert_string_equal (flid, fx->missing [i]);
    }
    //  The gates that changed, and nothing else.
    assert_int_equal (s_mismatched (report, "GTDT.1.GATE"), CHANGED_GATES);
    //  (in the legacy rows' key order: by FLID or by the business key)
    json_t *examples = json_object_get (s_field (report, "GTDT.1.GATE"), "examples");
    assert_int_equal (json_array_size (examples), CHANGED_GATES);
    for (int i = 0; i < CHANGED_GATES; i++) {
        bool found = false;
        for (size_t e = 0; e < CHANGED_GATES; e++) {
            char flid [32];
            snprintf (flid, sizeof flid, "%" JSON_INTEGER_FORMAT,
                      json_integer_value (json_object_get (json_array_get (examples, e), "flid")));
            found = found || strcmp (flid, fx->changed [i]) == 0;
        }
        if (!found)
            fail_msg ("the changed gate of FLID %s is not reported", fx->changed [i]);
    }
    const char *clean [] = { "ALCD", "FLNO", "MVIN", "SODT", "STND" };
    for (size_t i = 0; i < 5; i++)
        if (s_mismatched (report, clean [i]))
            fail_msg ("%s differs with the normalisers: %s", clean [i],
                      json_dumps (s_field (report, clean [i]), JSON_COMPACT));
    assert_false (json_is_true (json_object_get (report, "passed")));
}

static void
test_normalisers_leave_exactly_the_real_differences (void **state)
{
    fixture_t *fx = *state;
    char *text = zsys_sprintf ("{\"table\": \"legacy_flights\", \"day\": \"op_day\","
                               "  \"key\": [{\"column\": \"flight_id\", \"code\": \"FLID\"}],%s",
                               s_normalised_fields);
    char *map = s_mapping ("by-flid.json", text);
    free (text);
    const char *args [] = { "--mapping", map, "--legacy", fx->mysql_uri, "--legacy-password-file",
                            fx->password_file, "--day", DAY, "--examples", "10", NULL };
    json_t *report = s_report (args, 1);
    s_expect_only_real_differences (report);
    json_t *example = json_array_get (json_object_get (s_field (report, "GTDT.1.GATE"), "examples"), 1);
    assert_string_equal (json_string_value (json_object_get (json_object_get (example, "legacy"), "raw")), "<G&1>");
    //  3 gates + 6 fields x 3 flights on one side only
    json_int_t expected = 6 * (fx->compared + 3);
    assert_int_equal (json_integer_value (json_object_get (json_object_get (report, "values"), "expected")), expected);
    assert_int_equal (json_integer_value (json_object_get (json_object_get (report, "values"), "matched")),
                      6 * fx->compared - CHANGED_GATES);
    json_decref (report);

    //  The same flights by a business key: airline, number, time, direction.
    text = zsys_sprintf ("{\"table\": \"legacy_flights\", \"day\": \"op_day\", \"key\": ["
                         " {\"column\": \"airline\", \"code\": \"ALCD\", \"normalise\": [\"upper\"]},"
                         " {\"column\": \"flight_no\", \"code\": \"FLNO\", \"normalise\": [\"trim\"]},"
                         " {\"column\": \"std\", \"code\": \"SODT\", \"normalise\": [{\"time\": {\"zone\": \"" ZONE "\"}}]},"
                         " {\"column\": \"adid\", \"code\": \"MVIN\"}],%s", s_normalised_fields);
    char *business = s_mapping ("by-business-key.json", text);
    free (text);
    const char *by_business [] = { "--mapping", business, "--legacy", fx->mysql_uri, "--legacy-password-file",
                                   fx->password_file, "--day", DAY, "--examples", "10", NULL };
    report = s_report (by_business, 1);
    s_expect_only_real_differences (report);
    json_decref (report);
    free (business);

    //  The text report says the same for people.
    char *out = NULL, *err = NULL;
    assert_int_equal (s_diff (args, &out, &err), 1);
    char *line = zsys_sprintf ("only in msgxd: FLID %s", fx->missing [0]);
    assert_non_null (strstr (out, line));
    assert_non_null (strstr (out, "only in legacy: flight_id=" LEGACY_ONLY_FLID));
    assert_non_null (strstr (out, "legacy \"<G&1>\""));
    assert_non_null (strstr (out, "BELOW THRESHOLD"));
    print_message ("%s", out);
    free (line);
    free (out);
    free (err);
    free (map);
}

static void
test_without_normalisers_the_format_differences_appear (void **state)
{
    fixture_t *fx = *state;
    char *text = zsys_sprintf ("{\"table\": \"legacy_flights\", \"day\": \"op_day\","
                               "  \"key\": [{\"column\": \"flight_id\", \"code\": \"FLID\"}],%s", s_raw_fields);
    char *map = s_mapping ("raw.json", text);
    free (text);
    const char *args [] = { "--mapping", map, "--legacy", fx->mysql_uri, "--legacy-password-file",
                            fx->password_file, "--day", DAY, NULL };
    json_t *report = s_report (args, 1);
    assert_int_equal (s_count (report, "only_msgxd"), 2);
    assert_int_equal (s_count (report, "only_legacy"), 1);
    assert_int_equal (s_mismatched (report, "GTDT.1.GATE"), CHANGED_GATES);
    assert_int_equal (s_mismatched (report, "FLNO"), fx->compared);        //  trailing spaces
    assert_int_equal (s_mismatched (report, "SODT"), fx->compared);        //  8 hours off
    assert_int_equal (s_mismatched (report, "ALCD"), fx->lower_airlines);  //  case
    assert_true (fx->lower_airlines > 0);
    assert_int_equal (s_mismatched (report, "MVIN"), 0);
    assert_int_equal (s_mismatched (report, "STND"), 0);
    //  An example shows both values, raw and as compared.
    json_t *example = json_array_get (json_object_get (s_field (report, "SODT"), "examples"), 0);
    const char *ours = json_string_value (json_object_get (json_object_get (example, "msgxd"), "normalised"));
    const char *theirs = json_string_value (json_object_get (json_object_get (example, "legacy"), "normalised"));
    assert_non_null (ours);
    assert_non_null (theirs);
    assert_string_not_equal (ours, theirs);
    json_decref (report);
    free (map);
}

static void
test_legacy_on_postgresql (void **state)
{
    fixture_t *fx = *state;
    char *text = zsys_sprintf ("{\"table\": \"legacy.flights\", \"day\": \"op_day\","
                               "  \"key\": [{\"column\": \"flight_id\", \"code\": \"FLID\"}],%s",
                               s_normalised_fields);
    char *map = s_mapping ("pg.json", text);
    free (text);
    const char *args [] = { "--mapping", map, "--legacy", fx->pg_uri, "--day", DAY, NULL };
    json_t *report = s_report (args, 1);
    assert_int_equal (s_count (report, "only_msgxd"), 1);
    assert_int_equal (s_count (report, "only_legacy"), 0);
    assert_int_equal (s_count (report, "both"), fx->flights - 1);
    assert_int_equal (s_mismatched (report, "GTDT.1.GATE"), 1);
    const char *clean [] = { "ALCD", "FLNO", "MVIN", "SODT", "STND" };
    for (size_t i = 0; i < 5; i++)
        assert_int_equal (s_mismatched (report, clean [i]), 0);
    json_decref (report);

    //  A FLID range: the flights from the second one on (the one with the
    //  changed gate) match but for that gate.
    char *range = mx_testpg_value (fx->conn,
        "SELECT min (flight_id) || '-' || max (flight_id) FROM legacy.flights");
    const char *by_range [] = { "--mapping", map, "--legacy", fx->pg_uri, "--flid", range,
                                "--threshold", "99", NULL };
    report = s_report (by_range, 0);
    assert_int_equal (s_count (report, "only_msgxd"), 0);
    assert_int_equal (s_count (report, "both"), fx->flights - 1);
    assert_int_equal (s_mismatched (report, "GTDT.1.GATE"), 1);
    assert_int_equal (json_integer_value (json_object_get (json_object_get (report, "window"), "flid_from")),
                      strtoll (range, NULL, 10));
    json_decref (report);
    free (range);
    free (map);
}

static void
test_exit_codes_by_threshold_and_the_html_report (void **state)
{
    fixture_t *fx = *state;
    char *text = zsys_sprintf ("{\"table\": \"legacy_flights\", \"day\": \"op_day\","
                               "  \"key\": [{\"column\": \"flight_id\", \"code\": \"FLID\"}],%s",
                               s_normalised_fields);
    char *map = s_mapping ("threshold.json", text);
    free (text);
    char *html = zsys_sprintf ("%s/report.html", fx->dir);
    json_t *report = s_report ((const char *[]) { "--mapping", map, "--legacy", fx->mysql_uri,
                                                  "--legacy-password-file", fx->password_file, "--day", DAY,
                                                  "--threshold", "0", "--html", html, NULL }, 0);
    double rate = json_real_value (json_object_get (report, "match_rate"));
    assert_true (rate > 80 && rate < 99.9);
    json_decref (report);
    char above [32], below [32];
    snprintf (above, sizeof above, "%.4f", rate + 0.001);
    snprintf (below, sizeof below, "%.4f", rate - 0.001);
    report = s_report ((const char *[]) { "--mapping", map, "--legacy", fx->mysql_uri, "--legacy-password-file",
                                          fx->password_file, "--day", DAY, "--threshold", below, NULL }, 0);
    json_decref (report);
    report = s_report ((const char *[]) { "--mapping", map, "--legacy", fx->mysql_uri, "--legacy-password-file",
                                          fx->password_file, "--day", DAY, "--threshold", above, NULL }, 1);
    json_decref (report);
    //  An empty day matches fully: nothing is expected.
    report = s_report ((const char *[]) { "--mapping", map, "--legacy", fx->mysql_uri, "--legacy-password-file",
                                          fx->password_file, "--day", "2021-01-01", "--threshold", "100", NULL }, 0);
    assert_int_equal (s_count (report, "msgxd"), 0);
    json_decref (report);

    //  The HTML page: self-contained, a bar per field, values escaped.
    zfile_t *file = zfile_new (NULL, html);
    assert_non_null (file);
    assert_int_equal (zfile_input (file), 0);
    zchunk_t *chunk = zfile_read (file, (size_t) zfile_cursize (file), 0);
    char *page = zchunk_strdup (chunk);
    assert_non_null (strstr (page, "<!DOCTYPE html>"));
    assert_non_null (strstr (page, "class=\"bar\""));
    assert_non_null (strstr (page, "&lt;G&amp;1&gt;"));
    assert_null (strstr (page, "<G&1>"));
    assert_null (strstr (page, "<script"));
    assert_null (strstr (page, "http://"));
    assert_null (strstr (page, "https://"));
    free (page);
    zchunk_destroy (&chunk);
    zfile_destroy (&file);
    free (html);
    free (map);
}

//  args must fail with exit code 2 and a message holding why.
static void
s_refused (const char *const *args, const char *why)
{
    char *out = NULL, *err = NULL;
    int rc = s_diff (args, &out, &err);
    if (rc != 2 || !strstr (err, why))
        fail_msg ("expected exit 2 and '%s', got %d:\n%s%s", why, rc, out, err);
    free (out);
    free (err);
}

static void
test_bad_mapping_arguments_and_connections_exit_2 (void **state)
{
    fixture_t *fx = *state;
    char *good = zsys_sprintf ("%s/by-flid.json", fx->dir);
    char *bad = zsys_sprintf ("%s/bad.json", fx->dir);
    s_write (bad, "{\"table\": \"legacy_flights\", \"key\": [{\"column\": \"flight_id\", \"code\": \"FLID\"}],"
                  " \"fields\": [{\"column\": \"gate\", \"code\": \"GATEX\"},"
                  "              {\"column\": \"std\", \"code\": \"SODT\", \"normalise\": [{\"time\": {\"zone\": \"Nowhere/City\"}}]},"
                  "              {\"column\": \"stand\", \"code\": \"STND\", \"normalise\": [\"fold\"]}]}");
    s_refused ((const char *[]) { "--mapping", bad, "--legacy", fx->mysql_uri, "--day", DAY, NULL },
               "unknown wire code 'GATEX'");
    s_refused ((const char *[]) { "--mapping", bad, "--legacy", fx->mysql_uri, "--day", DAY, NULL },
               "bad zone 'Nowhere/City'");
    s_refused ((const char *[]) { "--mapping", bad, "--legacy", fx->mysql_uri, "--day", DAY, NULL },
               "unknown normaliser 'fold'");
    s_refused ((const char *[]) { "--mapping", good, "--legacy", fx->mysql_uri, NULL }, "either --day");
    s_refused ((const char *[]) { "--mapping", good, "--legacy", fx->mysql_uri, "--day", "2021-02-30", NULL },
               "--day wants a date");
    s_refused ((const char *[]) { "--mapping", good, "--legacy", fx->mysql_uri, "--flid", "9-3", NULL },
               "--flid wants A-B");
    s_refused ((const char *[]) { "--mapping", good, "--legacy", fx->mysql_uri, "--day", DAY,
                                  "--threshold", "101", NULL }, "--threshold wants");
    s_refused ((const char *[]) { "--mapping", good, "--legacy", "oracle://x/y", "--day", DAY, NULL },
               "must start with mysql://");
    s_refused ((const char *[]) { "--mapping", good, "--legacy", "mysql://u:secret@127.0.0.1/db", "--day", DAY, NULL },
               "carries a password");
    //  A business-key mapping cannot select a FLID range.
    char *business = zsys_sprintf ("%s/by-business-key.json", fx->dir);
    s_refused ((const char *[]) { "--mapping", business, "--legacy", fx->mysql_uri, "--legacy-password-file",
                                  fx->password_file, "--flid", "1-9", NULL }, "--flid needs a mapping whose key is FLID");
    //  More flights than msgx-diff may hold.
    s_refused ((const char *[]) { "--mapping", good, "--legacy", fx->mysql_uri, "--legacy-password-file",
                                  fx->password_file, "--day", DAY, "--max-flights", "5", NULL },
               "more than 5 flights");
    //  Over the network a server must be verified (192.0.2.1 is never
    //  reached: refused before connecting).
    s_refused ((const char *[]) { "--mapping", good, "--legacy", "mysql://diff@192.0.2.1/aodb",
                                  "--legacy-ssl-mode", "required", "--day", DAY, NULL },
               "ssl-mode required does not verify the server");
    s_refused ((const char *[]) { "--mapping", good, "--legacy", "postgresql://diff@192.0.2.1/aodb?sslmode=require",
                                  "--day", DAY, NULL }, "sslmode require does not verify the server");
    s_refused ((const char *[]) { "--mapping", good, "--legacy", fx->mysql_uri, "--day", DAY,
                                  "--msgx", "host=192.0.2.1,127.0.0.1 dbname=msgx sslmode=prefer", NULL },
               "msgxd's PostgreSQL: sslmode prefer does not verify the server");
    //  Nobody listens there.
    char *closed = zsys_sprintf ("mysql://%s@127.0.0.1:%d/%s", mx_testmb_user (fx->mb), mx_testenv_free_port (),
                                 mx_testmb_database (fx->mb));
    s_refused ((const char *[]) { "--mapping", good, "--legacy", closed, "--day", DAY, "--timeout", "5", NULL },
               "cannot connect to the legacy store at 127.0.0.1");
    //  A wrong password is refused by the server; the password is never shown.
    char *wrong = zsys_sprintf ("%s/wrong.password", fx->dir);
    s_write (wrong, "not-the-password\n");
    char *out = NULL, *err = NULL;
    assert_int_equal (s_diff ((const char *[]) { "--mapping", good, "--legacy", fx->mysql_uri,
                                                 "--legacy-password-file", wrong, "--day", DAY, NULL }, &out, &err), 2);
    assert_non_null (strstr (err, "cannot connect to the legacy store"));
    assert_null (strstr (err, "not-the-password"));
    free (out);
    free (err);
    //  A legacy table that is not there.
    char *missing = zsys_sprintf ("%s/missing.json", fx->dir);
    s_write (missing, "{\"table\": \"no_such_table\", \"day\": \"op_day\","
                      " \"key\": [{\"column\": \"flight_id\", \"code\": \"FLID\"}],"
                      " \"fields\": [{\"column\": \"gate\", \"code\": \"GTDT.1.GATE\"}]}");
    s_refused ((const char *[]) { "--mapping", missing, "--legacy", fx->mysql_uri, "--legacy-password-file",
                                  fx->password_file, "--day", DAY, NULL }, "no_such_table");
    free (missing);
    free (wrong);
    free (closed);
    free (business);
    free (bad);
    free (good);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_normalisers_leave_exactly_the_real_differences),
        cmocka_unit_test (test_without_normalisers_the_format_differences_appear),
        cmocka_unit_test (test_legacy_on_postgresql),
        cmocka_unit_test (test_exit_codes_by_threshold_and_the_html_report),
        cmocka_unit_test (test_bad_mapping_arguments_and_connections_exit_2),
    };
    return cmocka_run_group_tests (tests, s_group_setup, s_group_teardown);
}
