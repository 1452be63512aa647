/*  msgx-diff without servers: the mapping's validation, each normaliser,
    and the comparison with its report (counts, match rate, examples, the
    text and HTML renderings).  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mx_diff.h"
#include "mx_diff_map.h"

static mx_diff_map_t *
s_map (const char *text)
{
    char *error = NULL;
    mx_diff_map_t *map = mx_diff_map_parse (text, "test.json", &error);
    if (!map)
        fail_msg ("mapping refused: %s", error);
    return map;
}

//  The mapping is refused, the error holding every expected part.
static void
s_refused (const char *text, const char *const *parts)
{
    char *error = NULL;
    mx_diff_map_t *map = mx_diff_map_parse (text, "test.json", &error);
    assert_null (map);
    assert_non_null (error);
    for (size_t i = 0; parts [i]; i++)
        if (!strstr (error, parts [i]))
            fail_msg ("'%s' not in: %s", parts [i], error);
    free (error);
}

static void
s_expect (const mx_diff_field_t *field, const char *value, bool legacy, const char *expected)
{
    char *got = mx_diff_normalise (field, value, legacy);
    if (expected == NULL ? got != NULL : (got == NULL || strcmp (got, expected)))
        fail_msg ("%s('%s') gave '%s', expected '%s'", field->code, value ? value : "NULL",
                  got ? got : "NULL", expected ? expected : "NULL");
    free (got);
}

static void
test_mapping_errors_name_what_and_where (void **state)
{
    (void) state;
    s_refused ("{", (const char *[]) { "test.json: line 1", NULL });
    s_refused ("[]", (const char *[]) { "not a JSON object", NULL });
    s_refused ("{\"table\": \"t; DROP TABLE x\", \"key\": [{\"column\": \"id\", \"code\": \"FLID\"}],"
               " \"fields\": [{\"column\": \"g\", \"code\": \"STND\"}]}",
               (const char *[]) { "'table' wants", NULL });
    s_refused ("{\"table\": \"t\", \"key\": [{\"column\": \"id\", \"code\": \"FLID\"}],"
               " \"fields\": [{\"column\": \"g\", \"code\": \"NOPE\"},"
               "              {\"column\": \"e\", \"code\": \"ESTT\", \"normalise\": [{\"time\": {\"zone\": \"Mars/Base\"}}]},"
               "              {\"column\": \"s\", \"code\": \"STND\", \"normalise\": [\"squash\"]},"
               "              {\"column\": \"t\", \"code\": \"STND\", \"normalise\": [\"time\"]},"
               "              {\"column\": \"u v\", \"code\": \"GTDT.0.GATE\"},"
               "              {\"column\": \"w\", \"code\": \"GTDT.1.NOPE\"},"
               "              {\"column\": \"x\", \"code\": \"ETDT.GATE\"},"
               "              {\"column\": \"y\", \"code\": \"ESTT\", \"normalise\": [{\"time\": {\"format\": \"%Q\"}}]}],"
               " \"extra\": 1}",
               (const char *[]) { "fields[0] (column g): unknown wire code 'NOPE'",
                                  "fields[1] (column e): normalise[0]: time: bad zone 'Mars/Base'",
                                  "fields[2] (column s): normalise[0]: unknown normaliser 'squash'",
                                  "fields[3] (column t): normalise[0]: time normaliser on STND, which is not a time",
                                  "fields[4]: column 'u v' is not a plain identifier",
                                  "bad record key '0'", "GTDT has no field NOPE", "no set element 'ETDT'",
                                  "unknown directive in format '%Q'", "unknown member 'extra'", NULL });
    s_refused ("{\"table\": \"t\", \"key\": [{\"column\": \"id\", \"code\": \"GTDT.1.GATE\"}],"
               " \"fields\": []}",
               (const char *[]) { "key[0]: GTDT.1.GATE is a set field", "'fields' wants a non-empty array", NULL });
}

static void
test_codes_resolve_to_msgxd_columns (void **state)
{
    (void) state;
    mx_diff_map_t *map = s_map (
        "{\"table\": \"aodb.flights\", \"day\": \"op_day\", \"key\": [{\"column\": \"id\", \"code\": \"FLID\"}],"
        " \"fields\": [{\"column\": \"a\", \"code\": \"ESTT\"}, {\"column\": \"b\", \"code\": \"GTDT.2.GATE\"},"
        "              {\"column\": \"c\", \"code\": \"DELY.DURA\"}, {\"column\": \"d\", \"code\": \"ERUT.1.APCD\"},"
        "              {\"column\": \"e\", \"code\": \"MAXP\"}]}");
    assert_true (map->flid_key);
    assert_string_equal (map->day_column, "op_day");
    assert_string_equal (map->fields [0].table, "flight_schd");
    assert_string_equal (map->fields [0].msgx_column, "estt");
    assert_int_equal (map->fields [0].type, MX_DIFF_TIME);
    assert_string_equal (map->fields [1].table, "flight_gate");
    assert_string_equal (map->fields [1].set_key, "gtno");
    assert_int_equal (map->fields [1].record, 2);
    assert_string_equal (map->fields [2].table, "flight_delay");
    assert_string_equal (map->fields [2].set_key, "seq");
    assert_int_equal (map->fields [2].record, 0);
    assert_int_equal (map->fields [2].type, MX_DIFF_INT);
    assert_string_equal (map->fields [3].set_kind, "ERUT");
    assert_string_equal (map->fields [3].set_key, "rtno");
    assert_int_equal (map->fields [4].type, MX_DIFF_INT);
    mx_diff_map_destroy (&map);
    mx_diff_map_destroy (&map);
}

static void
test_normalisers (void **state)
{
    (void) state;
    mx_diff_map_t *map = s_map (
        "{\"table\": \"t\", \"key\": [{\"column\": \"id\", \"code\": \"FLID\", \"normalise\": [\"number\"]}],"
        " \"fields\": [{\"column\": \"a\", \"code\": \"FLNO\", \"normalise\": [\"trim\"]},"
        "              {\"column\": \"b\", \"code\": \"ALCD\", \"normalise\": [\"trim\", \"upper\"]},"
        "              {\"column\": \"c\", \"code\": \"FTSS\", \"normalise\": [\"lower\", {\"map\": {\"cx\": \"CNL\", \"dl\": \"DLY\"}}]},"
        "              {\"column\": \"d\", \"code\": \"MAXP\", \"normalise\": [\"number\"]},"
        "              {\"column\": \"e\", \"code\": \"ESTT\", \"normalise\": [{\"time\": {\"zone\": \"Europe/Vienna\"}}]},"
        "              {\"column\": \"f\", \"code\": \"ACTT\", \"normalise\": [{\"time\": {\"format\": \"%d%b%y%H%M\", \"zone\": \"Asia/Shanghai\"}}]},"
        "              {\"column\": \"g\", \"code\": \"APPT\"},"
        "              {\"column\": \"h\", \"code\": \"BOTM\", \"normalise\": [{\"time\": {\"format\": \"%s\"}}]},"
        "              {\"column\": \"i\", \"code\": \"STND\"}]}");
    const mx_diff_field_t *f = map->fields;
    //  trim
    s_expect (&f [0], "  1234 \t", true, "1234");
    s_expect (&f [0], "1234", false, "1234");
    s_expect (&f [0], "   ", true, NULL);            //  empty is none
    s_expect (&f [0], NULL, true, NULL);
    //  trim + case, on both sides
    s_expect (&f [1], " ca ", true, "CA");
    s_expect (&f [1], "ca", false, "CA");
    //  code table: legacy only; unmapped values kept
    s_expect (&f [2], "CX", true, "CNL");
    s_expect (&f [2], "xx", true, "xx");
    s_expect (&f [2], "CX", false, "cx");
    //  number
    s_expect (&f [3], "007", true, "7");
    s_expect (&f [3], "-0.50", true, "-0.5");
    s_expect (&f [3], "-0.00", true, "0");
    s_expect (&f [3], "12.000", true, "12");
    s_expect (&f [3], "+3", true, "3");
    s_expect (&f [3], "12a", true, "12a");
    s_expect (&map->keys [0], "0042", true, "42");
    //  time: a wall time in a zone, winter and summer
    s_expect (&f [4], "2021-01-23 10:30:00", true, "2021-01-23T09:30:00Z");
    s_expect (&f [4], "2021-07-23 10:30", true, "2021-07-23T08:30:00Z");
    s_expect (&f [4], "2021-07-23T10:30:00.250", true, "2021-07-23T08:30:00Z");
    //  an offset in the text wins over the zone
    s_expect (&f [4], "2021-07-23 10:30:00+00", true, "2021-07-23T10:30:00Z");
    s_expect (&f [4], "2021-07-23 10:30:00-02:30", true, "2021-07-23T13:00:00Z");
    s_expect (&f [4], "2021-07-23T10:30:00Z", true, "2021-07-23T10:30:00Z");
    //  msgxd's side is canonical already: no zone applied
    s_expect (&f [4], "2021-07-23T10:30:00Z", false, "2021-07-23T10:30:00Z");
    //  not a time: kept, so it differs
    s_expect (&f [4], "2021-02-30 10:00", true, "2021-02-30 10:00");
    s_expect (&f [4], "soon", true, "soon");
    //  the wire's own form, in a zone
    s_expect (&f [5], "23JAN212359", true, "2021-01-23T15:59:00Z");
    s_expect (&f [5], "23jan212359", true, "2021-01-23T15:59:00Z");
    s_expect (&f [5], "23XYZ212359", true, "23XYZ212359");
    //  a time without a normaliser: ISO-like UTC
    s_expect (&f [6], "2021-01-23 10:30:00", true, "2021-01-23T10:30:00Z");
    s_expect (&f [7], "1611397800", true, "2021-01-23T10:30:00Z");
    //  no normaliser: exact text
    s_expect (&f [8], " A1", true, " A1");

    char buf [MX_DIFF_TIME_BUFSIZE];
    assert_string_equal (mx_diff_format_time (0, buf), "1970-01-01T00:00:00Z");
    assert_string_equal (mx_diff_format_time (-1, buf), "1969-12-31T23:59:59Z");
    assert_string_equal (mx_diff_format_time (1611397800999, buf), "2021-01-23T10:30:00Z");
    mx_diff_map_destroy (&map);
}

static void
test_identifiers (void **state)
{
    (void) state;
    assert_true (mx_diff_identifier_ok ("gate_1", false));
    assert_true (mx_diff_identifier_ok ("aodb.flights", true));
    assert_false (mx_diff_identifier_ok ("aodb.flights", false));
    assert_false (mx_diff_identifier_ok ("a.b.c", true));
    assert_false (mx_diff_identifier_ok ("1abc", false));
    assert_false (mx_diff_identifier_ok ("a`b", false));
    assert_false (mx_diff_identifier_ok ("a.", true));
    assert_false (mx_diff_identifier_ok ("", false));
}

static json_t *
s_run (mx_diff_map_t *map, double threshold)
{
    mx_diff_t *diff = mx_diff_new (map, 2, 10);
    char *error = NULL;
    //  msgxd: flights 1..4; legacy: 2..5, flight 3's gate differs,
    //  flight 4's only by trailing space, flight 2 twice.
    const char *gates [] = { "A1", "A2", "A3", "A<4>" };
    for (int i = 0; i < 4; i++) {
        char flid [8];
        snprintf (flid, sizeof flid, "%d", i + 1);
        const char *keys [] = { flid };
        const char *values [] = { gates [i], NULL };
        assert_int_equal (mx_diff_add_msgx (diff, i + 1, keys, values, &error), 0);
    }
    mx_diff_set_msgx (diff, 2, 1, "x", true);
    mx_diff_set_msgx (diff, 2, 1, NULL, true);
    mx_diff_set_msgx (diff, 2, 1, "y", true);
    mx_diff_set_msgx (diff, 99, 1, "ignored", true);
    const char *keys [] = { "1" };
    const char *values [] = { NULL, NULL };
    //  a second flight with key 1 is refused
    assert_int_equal (mx_diff_add_msgx (diff, 7, keys, values, &error), -1);
    assert_non_null (strstr (error, "share the key"));
    free (error);
    const char *rows [][3] = {
        { "2", "A2", "x,,y" }, { "2", "A2", "x,,y" }, { "3", "B3", NULL }, { "4", "A<4> ", NULL },
        { "5", "A5", NULL }
    };
    for (size_t r = 0; r < 5; r++)
        mx_diff_add_legacy (diff, rows [r], rows [r] + 1);
    json_t *report = mx_diff_report (diff, json_pack ("{s:s}", "day", "2021-01-23"), threshold);
    mx_diff_destroy (&diff);
    mx_diff_destroy (&diff);
    return report;
}

static void
test_report_counts_rates_and_examples (void **state)
{
    (void) state;
    mx_diff_map_t *map = s_map (
        "{\"table\": \"t\", \"key\": [{\"column\": \"id\", \"code\": \"FLID\"}],"
        " \"fields\": [{\"column\": \"gate\", \"code\": \"GTDT.1.GATE\", \"normalise\": [\"trim\"]},"
        "              {\"column\": \"belts\", \"code\": \"CLDT.BELT\"}]}");
    json_t *report = s_run (map, 50);
    json_t *flights = json_object_get (report, "flights");
    assert_int_equal (json_integer_value (json_object_get (flights, "msgxd")), 4);
    assert_int_equal (json_integer_value (json_object_get (flights, "legacy")), 5);
    assert_int_equal (json_integer_value (json_object_get (flights, "both")), 3);
    assert_int_equal (json_integer_value (json_object_get (flights, "only_msgxd")), 1);
    assert_int_equal (json_integer_value (json_object_get (flights, "only_legacy")), 1);
    assert_int_equal (json_integer_value (json_object_get (flights, "legacy_duplicates")), 1);
    json_t *gate = json_array_get (json_object_get (report, "fields"), 0);
    assert_int_equal (json_integer_value (json_object_get (gate, "compared")), 3);
    assert_int_equal (json_integer_value (json_object_get (gate, "mismatched")), 1);
    json_t *example = json_array_get (json_object_get (gate, "examples"), 0);
    assert_int_equal (json_integer_value (json_object_get (example, "flid")), 3);
    assert_string_equal (json_string_value (json_object_get (json_object_get (example, "legacy"), "raw")), "B3");
    json_t *belts = json_array_get (json_object_get (report, "fields"), 1);
    assert_int_equal (json_integer_value (json_object_get (belts, "mismatched")), 0);
    //  2 fields x (3 compared + 2 missing) expected, 2 + 3 matched
    assert_int_equal (json_integer_value (json_object_get (json_object_get (report, "values"), "expected")), 10);
    assert_int_equal (json_integer_value (json_object_get (json_object_get (report, "values"), "matched")), 5);
    assert_true (json_real_value (json_object_get (report, "match_rate")) == 50.0);
    assert_true (json_is_true (json_object_get (report, "passed")));
    assert_string_equal (json_string_value (json_object_get (json_array_get (json_object_get (report, "only_legacy"), 0), "key")),
                         "id=5");

    //  Renderings: text names the differences, HTML escapes values.
    char *text = NULL, *html = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    mx_diff_write_text (report, out);
    fclose (out);
    assert_non_null (strstr (text, "only in msgxd: FLID 1"));
    assert_non_null (strstr (text, "only in legacy: id=5"));
    assert_non_null (strstr (text, "FLID 3: msgxd \"A3\" legacy \"B3\""));
    assert_non_null (strstr (text, "match rate 50.000 %"));
    out = open_memstream (&html, &size);
    assert_int_equal (mx_diff_write_html (report, out), 0);
    fclose (out);
    assert_non_null (strstr (html, "<!DOCTYPE html>"));
    assert_non_null (strstr (html, "width:66.7%"));
    assert_null (strstr (html, "<script"));
    free (text);
    free (html);
    json_decref (report);

    report = s_run (map, 50.1);
    assert_true (json_is_false (json_object_get (report, "passed")));
    json_decref (report);
    mx_diff_map_destroy (&map);
}

static void
test_html_escapes_every_value (void **state)
{
    (void) state;
    mx_diff_map_t *map = s_map (
        "{\"table\": \"t\", \"key\": [{\"column\": \"id\", \"code\": \"FLID\"}],"
        " \"fields\": [{\"column\": \"gate\", \"code\": \"STND\"}]}");
    mx_diff_t *diff = mx_diff_new (map, 5, 10);
    char *error = NULL;
    const char *keys [] = { "1" }, *values [] = { "<b>&\"'" };
    assert_int_equal (mx_diff_add_msgx (diff, 1, keys, values, &error), 0);
    const char *row [] = { "1", "<script>\x01" };
    mx_diff_add_legacy (diff, row, row + 1);
    json_t *report = mx_diff_report (diff, json_pack ("{s:I, s:I}", "flid_from", 1, "flid_to", 9), 99.9);
    char *html = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&html, &size);
    assert_int_equal (mx_diff_write_html (report, out), 0);
    fclose (out);
    assert_null (strstr (html, "<script"));
    assert_null (strstr (html, "<b>&"));
    assert_non_null (strstr (html, "&lt;b&gt;&amp;&quot;&#39;"));
    assert_non_null (strstr (html, "&lt;script&gt;&#x01;"));
    assert_non_null (strstr (html, "FLID 1-9"));
    free (html);
    json_decref (report);
    mx_diff_destroy (&diff);
    mx_diff_map_destroy (&map);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_mapping_errors_name_what_and_where),
        cmocka_unit_test (test_codes_resolve_to_msgxd_columns),
        cmocka_unit_test (test_normalisers),
        cmocka_unit_test (test_identifiers),
        cmocka_unit_test (test_report_counts_rates_and_examples),
        cmocka_unit_test (test_html_escapes_every_value),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
