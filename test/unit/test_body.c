/*  Unit tests: SIS body decoding (schedule, FLOP/FDEL, reference lists) on
    every real sample (test/data/sis/) and on hand-made bodies.

    Expected times are written as the airport's local wall time and turned
    into UTC milliseconds with timegm and the fixed +08:00 of Asia/Shanghai,
    independently of the decoder.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mx_sis_body.h"
#include "mx_testenv.h"
#include "mx_tz.h"

#define S_MAX_BYTES (16u * 1024 * 1024)

static mx_tz_t *s_zone;

//  "23JAN210535", the time most hand-made bodies carry, as canonical text.
#define S_T1 "23JAN210535"
static char s_t1_ms [32];

// ---------------------------------------------------------------------------
//  Helpers

//  printf into a new string (asserts on failure).
static char *
s_format (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

static char *
s_format (const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *text = NULL;
    int rc = vasprintf (&text, fmt, args);
    va_end (args);
    assert_true (rc >= 0);
    return text;
}

//  UTC ms of a local wall time in Asia/Shanghai (UTC+8, no DST since 1991).
static int64_t
s_local_ms (int year, int month, int day, int hour, int minute)
{
    struct tm tm;
    memset (&tm, 0, sizeof tm);
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    return ((int64_t) timegm (&tm) - 8 * 3600) * 1000;
}

//  The same as canonical text, in a rotating static buffer.
static const char *
s_local (int year, int month, int day, int hour, int minute)
{
    static char buffers [8][32];
    static int next = 0;
    char *buffer = buffers [next++ % 8];
    snprintf (buffer, 32, "%lld", (long long) s_local_ms (year, month, day, hour, minute));
    return buffer;
}

static char *
s_message (const char *type, const char *styp, const char *body)
{
    return s_format (
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<MSG xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">\n"
        "\t<META>\n\t\t<SNDR>AODB</SNDR>\n\t\t<SEQN>1243</SEQN>\n"
        "\t\t<DTTM>20210123053500</DTTM>\n\t\t<TYPE>%s</TYPE>\n\t\t<STYP>%s</STYP>\n"
        "\t</META>\n%s\n</MSG>\n", type, styp, body);
}

static mx_sis_msg_t *
s_decode_ignoring (const char *xml, size_t size, const char *ignored)
{
    char *ignore_types [1] = { (char *) ignored };
    mx_sis_options_t options = {
        .zone = s_zone, .max_bytes = S_MAX_BYTES,
        .ignore_types = ignored ? ignore_types : NULL, .ignore_count = ignored ? 1 : 0
    };
    mx_sis_status_t status = MX_SIS_CODEC_ERROR;
    char *error = NULL;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, &options, &status, &error);
    if (!msg)
        fail_msg ("envelope refused (%s): %s", mx_sis_status_name (status), error);
    return msg;
}

//  Envelope of TYPE/STYP around body, decoded (must pass the envelope).
static mx_sis_msg_t *
s_decode (const char *type, const char *styp, const char *body)
{
    char *xml = s_message (type, styp, body);
    mx_sis_msg_t *msg = s_decode_ignoring (xml, strlen (xml), NULL);
    free (xml);
    return msg;
}

static void
s_expect_error (mx_body_status_t status, char *error, mx_body_status_t expected,
                const char *fragment)
{
    if (status != expected)
        fail_msg ("expected %s, got %s: %s", mx_body_status_name (expected),
                  mx_body_status_name (status), error ? error : "(no error)");
    assert_non_null (error);
    if (!strstr (error, fragment))
        fail_msg ("error '%s' does not contain '%s'", error, fragment);
    free (error);
}

//  FLOP/styp around the elements body (FLID 15), decoded to a flop.
static mx_flop_t *
s_flop_ok (const char *styp, const char *elements)
{
    char *body = s_format ("<FLOP><FLID>15</FLID><FFID>CA-CA101-A-12DEC031345-D</FFID>"
                                  "%s</FLOP>", elements);
    mx_sis_msg_t *msg = s_decode ("FLOP", styp, body);
    free (body);
    mx_flop_t *flop = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_flop (msg, s_zone, &flop, &error);
    if (status != MX_BODY_OK)
        fail_msg ("FLOP/%s: %s: %s", styp, mx_body_status_name (status), error);
    assert_null (error);
    assert_non_null (flop);
    assert_int_equal (flop->flid, 15);
    assert_string_equal (flop->ffid, "CA-CA101-A-12DEC031345-D");
    assert_false (flop->fdel);
    mx_sis_destroy (&msg);
    return flop;
}

static void
s_flop_fails (const char *type, const char *styp, const char *body, mx_body_status_t expected,
              const char *fragment)
{
    mx_sis_msg_t *msg = s_decode (type, styp, body);
    mx_flop_t *flop = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_flop (msg, s_zone, &flop, &error);
    assert_null (flop);
    s_expect_error (status, error, expected, fragment);
    mx_sis_destroy (&msg);
}

//  A FLTR with the mandatory fields (flid, mvin) and more elements.
static char *
s_fltr (const char *flid, const char *mvin, const char *more)
{
    return s_format (
        "<FLTR><FLID>%s</FLID><ALCD>YG</ALCD><FLNO>YG9028</FLNO><MVIN>%s</MVIN>"
        "<SODT>" S_T1 "</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>733</ACFT>%s</FLTR>",
        flid, mvin, more);
}

//  SCHD body of recs and the FLTRs a and b (b may be NULL).
static mx_sis_msg_t *
s_schd (const char *styp, const char *recs, char *a, char *b)
{
    char *body = s_format ("<SCHD>%s%s%s</SCHD>", recs, a ? a : "", b ? b : "");
    free (a);
    free (b);
    mx_sis_msg_t *msg = s_decode ("SCHD", styp, body);
    free (body);
    return msg;
}

static mx_schedule_t *
s_schedule_ok (mx_sis_msg_t *msg)
{
    mx_schedule_t *schedule = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_schedule (msg, s_zone, &schedule, &error);
    if (status != MX_BODY_OK)
        fail_msg ("schedule: %s: %s", mx_body_status_name (status), error);
    assert_non_null (schedule);
    return schedule;
}

static void
s_schedule_fails (mx_sis_msg_t *msg, mx_body_status_t expected, const char *fragment)
{
    mx_schedule_t *schedule = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_schedule (msg, s_zone, &schedule, &error);
    assert_null (schedule);
    s_expect_error (status, error, expected, fragment);
    mx_sis_destroy (&msg);
}

static char *
s_json (const json_t *value)
{
    char *text = json_dumps (value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    assert_non_null (text);
    return text;
}

static void
s_assert_json (const json_t *value, const char *expected)
{
    assert_non_null (value);
    char *text = s_json (value);
    if (strcmp (text, expected) != 0)
        fail_msg ("JSON %s, expected %s", text, expected);
    free (text);
}

//  Expected value of a scalar, set (element -> value) or rare set.
typedef struct {
    const char *code;
    const char *value;
} s_pair_t;

static const char *
s_lookup (const s_pair_t *pairs, const char *code)
{
    for (size_t i = 0; pairs && pairs [i].code; i++)
        if (strcmp (pairs [i].code, code) == 0)
            return pairs [i].value;
    return NULL;
}

static const char *
s_expand (const char *value)
{
    return strcmp (value, "@T1") == 0 ? s_t1_ms : value;
}

//  Every scalar of the flight equals pairs (NULL when not listed).
static void
s_assert_scalars (const mx_flight_t *flight, const s_pair_t *pairs)
{
    for (int i = 0; i < MX_F_COUNT; i++) {
        const char *code = mx_scalar_info ((mx_scalar_t) i)->code;
        const char *expected = s_lookup (pairs, code);
        const char *actual = flight->scalars [i];
        if (!expected && actual)
            fail_msg ("FLID %lld %s = '%s', expected NULL", (long long) flight->flid, code, actual);
        if (expected && (!actual || strcmp (actual, s_expand (expected)) != 0))
            fail_msg ("FLID %lld %s = '%s', expected '%s'", (long long) flight->flid, code,
                      actual ? actual : "NULL", s_expand (expected));
    }
}

//  One set record: key and the field values in column order ("" = NULL).
static void
s_assert_record (const mx_set_t *set, size_t index, int key, const char *const *values)
{
    assert_true (index < set->count);
    const mx_set_record_t *record = &set->records [index];
    assert_int_equal (record->key, key);
    for (size_t i = 0; i < MX_SET_MAX_FIELDS; i++) {
        const char *expected = values [i];
        if (!expected || !*expected) {
            if (record->values [i])
                fail_msg ("record %d field %zu = '%s', expected NULL", key, i, record->values [i]);
        }
        else
        if (!record->values [i] || strcmp (record->values [i], expected) != 0)
            fail_msg ("record %d field %zu = '%s', expected '%s'", key, i,
                      record->values [i] ? record->values [i] : "NULL", expected);
    }
}

//  The flop touches exactly what pairs list: scalars PRESENT with value,
//  sets PRESENT with value = record count, rare sets PRESENT with value =
//  JSON; with cleared, everything listed is cleared instead (sets: PRESENT
//  and empty). Everything else ABSENT, extra empty.
static void
s_assert_flop (const mx_flop_t *flop, const s_pair_t *pairs, bool cleared)
{
    for (int i = 0; i < MX_F_COUNT; i++) {
        const char *code = mx_scalar_info ((mx_scalar_t) i)->code;
        const char *expected = s_lookup (pairs, code);
        if (!expected) {
            if (flop->scalar_presence [i] != MX_ABSENT)
                fail_msg ("FLOP/%s: %s is touched, expected absent", flop->styp, code);
        }
        else
        if (cleared) {
            if (flop->scalar_presence [i] != MX_CLEARED || flop->scalars [i])
                fail_msg ("FLOP/%s: %s is not cleared", flop->styp, code);
        }
        else
        if (flop->scalar_presence [i] != MX_PRESENT
        ||  strcmp (flop->scalars [i], s_expand (expected)) != 0)
            fail_msg ("FLOP/%s: %s = '%s' (%d), expected '%s'", flop->styp, code,
                      flop->scalars [i] ? flop->scalars [i] : "NULL",
                      (int) flop->scalar_presence [i], s_expand (expected));
    }
    for (int i = 0; i < MX_SET_COUNT; i++) {
        const char *element = mx_set_info ((mx_set_kind_t) i)->element;
        const char *expected = s_lookup (pairs, element);
        if (!expected) {
            if (flop->set_presence [i] != MX_ABSENT || flop->sets [i].count)
                fail_msg ("FLOP/%s: set %s is touched, expected absent", flop->styp, element);
        }
        else
        if (flop->set_presence [i] != MX_PRESENT
        ||  flop->sets [i].count != (cleared ? 0 : (size_t) atoi (expected)))
            fail_msg ("FLOP/%s: set %s has %zu records (%d)", flop->styp, element,
                      flop->sets [i].count, (int) flop->set_presence [i]);
    }
    for (int i = 0; i < MX_RARE_COUNT; i++) {
        const char *code = mx_rare_code ((mx_rare_t) i);
        const char *expected = s_lookup (pairs, code);
        if (!expected)
            assert_int_equal (flop->rare_presence [i], MX_ABSENT);
        else
        if (cleared) {
            assert_int_equal (flop->rare_presence [i], MX_CLEARED);
            assert_null (flop->rare [i]);
        }
        else {
            assert_int_equal (flop->rare_presence [i], MX_PRESENT);
            s_assert_json (flop->rare [i], expected);
        }
    }
    assert_true (json_is_object (flop->extra));
    if (json_object_size (flop->extra) != 0) {
        char *text = s_json (flop->extra);
        fail_msg ("FLOP/%s: extra %s, expected empty", flop->styp, text);
    }
}

static char *
s_samples_dir (void)
{
    const char *source = getenv ("MX_SOURCE_DIR");
    if (!source)
        fail_msg ("MX_SOURCE_DIR is not set (run through ctest)");
    char *dir = s_format ("%s/test/data/sis", source);
    return dir;
}

static char *
s_read_sample (const char *name, size_t *size)
{
    char *dir = s_samples_dir ();
    char *path = s_format ("%s/%s", dir, name);
    free (dir);
    FILE *file = fopen (path, "rb");
    if (!file)
        fail_msg ("%s: %s", path, strerror (errno));
    free (path);
    assert_int_equal (fseek (file, 0, SEEK_END), 0);
    long length = ftell (file);
    assert_true (length > 0);
    rewind (file);
    char *xml = malloc ((size_t) length + 1);
    assert_non_null (xml);
    assert_int_equal (fread (xml, 1, (size_t) length, file), (size_t) length);
    xml [length] = '\0';
    fclose (file);
    *size = (size_t) length;
    return xml;
}

static mx_sis_msg_t *
s_sample (const char *name)
{
    size_t size;
    char *xml = s_read_sample (name, &size);
    mx_sis_msg_t *msg = s_decode_ignoring (xml, size, NULL);
    free (xml);
    return msg;
}

static mx_flop_t *
s_sample_flop (const char *name)
{
    mx_sis_msg_t *msg = s_sample (name);
    mx_flop_t *flop = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_flop (msg, s_zone, &flop, &error);
    if (status != MX_BODY_OK)
        fail_msg ("%s: %s: %s", name, mx_body_status_name (status), error);
    mx_sis_destroy (&msg);
    return flop;
}

// ---------------------------------------------------------------------------
//  Date-time

static void
test_parse_datetime (void **state)
{
    (void) state;
    assert_int_equal (mx_sis_parse_datetime ("23JAN210535", s_zone),
                      s_local_ms (2021, 1, 23, 5, 35));
    assert_int_equal (mx_sis_parse_datetime ("01JAN000000", s_zone),
                      s_local_ms (2000, 1, 1, 0, 0));
    assert_int_equal (mx_sis_parse_datetime ("31DEC992359", s_zone),
                      s_local_ms (2099, 12, 31, 23, 59));
    assert_int_equal (mx_sis_parse_datetime ("29FEB241200", s_zone),
                      s_local_ms (2024, 2, 29, 12, 0));
    static const char *months [] = { "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                     "JUL", "AUG", "SEP", "OCT", "NOV", "DEC" };
    for (int i = 0; i < 12; i++) {
        char text [16];
        snprintf (text, sizeof text, "15%s181850", months [i]);
        assert_int_equal (mx_sis_parse_datetime (text, s_zone),
                          s_local_ms (2018, i + 1, 15, 18, 50));
    }
    static const char *invalid [] = {
        "", "23JAN21053", "23JAN2105350", "23jan210535", "23Jan210535", "23XYZ210535",
        "29FEB231200", "31APR210000", "00JAN210000", "32JAN210000", "23JAN212400",
        "23JAN212360", "2021-01-23T05:35", "23JAN21", " 23JAN21053", "23JAN21053 ",
        "+3JAN210535", "23JAN2-0535", "20210123053500"
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid [0]; i++)
        if (mx_sis_parse_datetime (invalid [i], s_zone) != -1)
            fail_msg ("'%s' was accepted", invalid [i]);
}

// ---------------------------------------------------------------------------
//  Every real sample

static void
test_every_sample (void **state)
{
    (void) state;
    char *dir = s_samples_dir ();
    DIR *handle = opendir (dir);
    if (!handle)
        fail_msg ("samples directory %s: %s", dir, strerror (errno));
    int files = 0, schedules = 0, flops = 0, fdels = 0, references = 0, other = 0;
    int protocol = 0, malformed = 0;
    struct dirent *entry;
    while ((entry = readdir (handle))) {
        const char *name = entry->d_name;
        size_t length = strlen (name);
        if (length < 5 || strcmp (name + length - 4, ".xml") != 0)
            continue;
        files++;
        size_t size;
        char *xml = s_read_sample (name, &size);
        mx_sis_options_t options = { .zone = s_zone, .max_bytes = S_MAX_BYTES };
        mx_sis_status_t envelope = MX_SIS_OK;
        char *error = NULL;
        mx_sis_msg_t *msg = mx_sis_decode (xml, size, &options, &envelope, &error);
        free (xml);
        //  The envelope's own refusals: not well-formed, and FLOP/TOBT
        //  without its element (payload missing).
        if (strcmp (name, "ABNR_ADD_01.xml") == 0 || strcmp (name, "FLOP_TOBT_01.xml") == 0) {
            assert_null (msg);
            assert_int_equal (envelope, MX_SIS_MALFORMED);
            free (error);
            malformed++;
            continue;
        }
        if (!msg)
            fail_msg ("%s: envelope refused: %s", name, error);
        bool violates = strcmp (name, "AIRC_DNLD_01.xml") == 0
                     || strcmp (name, "FLTL_ADD_01.xml") == 0;
        mx_body_status_t status = MX_BODY_OK;
        switch (mx_sis_kind (msg)) {
            case MX_SIS_KIND_SCHD_DNLD:
            case MX_SIS_KIND_SCHD_RESP:
            case MX_SIS_KIND_SCHD_ADFT: {
                mx_schedule_t *schedule = NULL;
                status = mx_sis_schedule (msg, s_zone, &schedule, &error);
                if (status == MX_BODY_OK) {
                    assert_int_equal (schedule->count, (size_t) schedule->declared);
                    schedules++;
                }
                mx_schedule_destroy (&schedule);
                break;
            }
            case MX_SIS_KIND_SCHD_DEL: {
                int64_t *flids = NULL;
                size_t count = 0;
                status = mx_sis_schedule_del (msg, &flids, &count, &error);
                free (flids);
                schedules++;
                break;
            }
            case MX_SIS_KIND_FLOP:
            case MX_SIS_KIND_FDEL: {
                mx_flop_t *flop = NULL;
                status = mx_sis_flop (msg, s_zone, &flop, &error);
                if (status == MX_BODY_OK) {
                    assert_true (flop->flid > 0);
                    if (flop->fdel)
                        fdels++;
                    else {
                        //  The subtype's own element made it through.
                        assert_string_equal (flop->styp, mx_sis_meta (msg)->styp);
                        flops++;
                    }
                }
                mx_flop_destroy (&flop);
                break;
            }
            case MX_SIS_KIND_REFERENCE: {
                mx_reference_t *reference = NULL;
                status = mx_sis_reference (msg, &reference, &error);
                if (status == MX_BODY_OK) {
                    assert_int_equal (reference->count, (size_t) reference->declared);
                    assert_string_equal (reference->rtype, mx_sis_meta (msg)->type);
                    for (size_t i = 0; i < reference->count; i++) {
                        assert_true (*reference->records [i].key);
                        assert_true (json_is_object (reference->records [i].value));
                    }
                    references++;
                }
                mx_reference_destroy (&reference);
                break;
            }
            case MX_SIS_KIND_OTHER:
                //  SCHS: not in scope, no body decoder.
                assert_string_equal (mx_sis_meta (msg)->type, "SCHS");
                other++;
                break;
        }
        if (violates) {
            if (status != MX_BODY_PROTOCOL)
                fail_msg ("%s: %s, expected PROTOCOL", name, mx_body_status_name (status));
            assert_non_null (strstr (error, "RECS"));
            protocol++;
        }
        else
        if (status != MX_BODY_OK)
            fail_msg ("%s: %s: %s", name, mx_body_status_name (status), error);
        free (error);
        mx_sis_destroy (&msg);
    }
    closedir (handle);
    free (dir);
    print_message ("%d samples: %d schedule, %d FLOP, %d FDEL, %d reference, %d other, "
                   "%d protocol, %d malformed\n", files, schedules, flops, fdels, references,
                   other, protocol, malformed);
    assert_int_equal (files, 172);
    assert_int_equal (schedules, 1);
    assert_int_equal (flops, 69);
    assert_int_equal (fdels, 1);
    assert_int_equal (other, 2);
    assert_int_equal (protocol, 2);
    assert_int_equal (malformed, 2);
    assert_int_equal (references, 172 - 1 - 69 - 1 - 2 - 2 - 2);
}

//  SCHD_DNLD_01: both flights, every field of their FLTR written out.
static void
test_sample_schedule (void **state)
{
    (void) state;
    mx_sis_msg_t *msg = s_sample ("SCHD_DNLD_01.xml");
    assert_int_equal (mx_sis_kind (msg), MX_SIS_KIND_SCHD_DNLD);
    mx_schedule_t *schedule = s_schedule_ok (msg);
    assert_int_equal (schedule->declared, 2);
    assert_int_equal (schedule->count, 2);

    const mx_flight_t *f15 = schedule->records [0].flight;
    assert_int_equal (f15->flid, 15);
    assert_null (schedule->records [0].ffid);
    const s_pair_t scalars15 [] = {
        { "ALCD", "YG" }, { "FLNO", "YG9028" }, { "MVIN", "D" },
        { "SODT", s_local (2021, 1, 23, 5, 35) }, { "FLTY", "W" }, { "FLIN", "D" },
        { "ACFT", "733" }, { "RENO", "B2574" }, { "TAOP", "YG" }, { "TAFL", "YG9061" },
        { "TAID", "16" }, { "TRML", "T2" }, { "MAXP", "300" }, { "STND", "504" },
        { "PHAG", "110009" }, { "FHAG", "110009" }, { "MHAG", "110009" },
        { "EXSC", "RCFLOP" }, { "FTSS", "RCFLOP" }, { NULL, NULL }
    };
    s_assert_scalars (f15, scalars15);
    //  ROUT RTNO 1: APCD, SCAT, SADC, SCDT, SDDC.
    assert_int_equal (f15->sets [MX_SET_ROUTE].count, 1);
    s_assert_record (&f15->sets [MX_SET_ROUTE], 0, 1,
                     (const char *[MX_SET_MAX_FIELDS]) { "XIY", s_local (2021, 1, 23, 7, 10) });
    assert_int_equal (f15->sets [MX_SET_EROUTE].count, 2);
    s_assert_record (&f15->sets [MX_SET_EROUTE], 0, 1,
                     (const char *[MX_SET_MAX_FIELDS]) { "CTU", "", "",
                                                         s_local (2021, 1, 23, 5, 35) });
    s_assert_record (&f15->sets [MX_SET_EROUTE], 1, 2,
                     (const char *[MX_SET_MAX_FIELDS]) { "XIY", s_local (2021, 1, 23, 7, 10) });
    //  PSDT PSNO 1: PSST, STST, STET.
    assert_int_equal (f15->sets [MX_SET_STAND].count, 1);
    s_assert_record (&f15->sets [MX_SET_STAND], 0, 1,
                     (const char *[MX_SET_MAX_FIELDS]) { "504", s_local (2021, 1, 23, 2, 37),
                                                         s_local (2021, 1, 23, 5, 49) });

    const mx_flight_t *f16 = schedule->records [1].flight;
    assert_int_equal (f16->flid, 16);
    const s_pair_t scalars16 [] = {
        { "ALCD", "YG" }, { "FLNO", "YG9061" }, { "MVIN", "A" },
        { "SODT", s_local (2021, 1, 23, 3, 25) }, { "FLTY", "W" }, { "FLIN", "D" },
        { "ACFT", "733" }, { "RENO", "B2574" }, { "TAOP", "YG" }, { "TAFL", "YG9028" },
        { "TAID", "15" }, { "TRML", "T2" }, { "MAXP", "300" }, { "STND", "504" },
        { "PHAG", "110009" }, { "FHAG", "110009" }, { "MHAG", "110009" },
        { "EXSC", "RCFLOP" }, { "FTSS", "RCFLOP" }, { NULL, NULL }
    };
    s_assert_scalars (f16, scalars16);
    assert_int_equal (f16->sets [MX_SET_ROUTE].count, 1);
    s_assert_record (&f16->sets [MX_SET_ROUTE], 0, 1,
                     (const char *[MX_SET_MAX_FIELDS]) { "HGH", "", "",
                                                         s_local (2021, 1, 23, 0, 10) });
    assert_int_equal (f16->sets [MX_SET_EROUTE].count, 2);
    s_assert_record (&f16->sets [MX_SET_EROUTE], 0, 1,
                     (const char *[MX_SET_MAX_FIELDS]) { "HGH", "", "",
                                                         s_local (2021, 1, 23, 0, 10) });
    s_assert_record (&f16->sets [MX_SET_EROUTE], 1, 2,
                     (const char *[MX_SET_MAX_FIELDS]) { "CTU", s_local (2021, 1, 23, 3, 25) });
    assert_int_equal (f16->sets [MX_SET_STAND].count, 1);
    s_assert_record (&f16->sets [MX_SET_STAND], 0, 1,
                     (const char *[MX_SET_MAX_FIELDS]) { "504", s_local (2021, 1, 23, 2, 37),
                                                         s_local (2021, 1, 23, 5, 49) });

    //  Absent lists are empty, nothing rare, nothing unknown.
    for (int f = 0; f < 2; f++) {
        const mx_flight_t *flight = schedule->records [f].flight;
        for (int i = 0; i < MX_SET_COUNT; i++)
            if (i != MX_SET_ROUTE && i != MX_SET_EROUTE && i != MX_SET_STAND)
                assert_int_equal (flight->sets [i].count, 0);
        for (int i = 0; i < MX_RARE_COUNT; i++)
            assert_null (flight->rare [i]);
        assert_int_equal (json_object_size (flight->extra), 0);
    }
    mx_schedule_destroy (&schedule);
    mx_schedule_destroy (&schedule);
    assert_null (schedule);
    mx_sis_destroy (&msg);
}

// ---------------------------------------------------------------------------
//  Real FLOP samples, value by value

static void
test_sample_flops (void **state)
{
    (void) state;
    mx_flop_t *flop = s_sample_flop ("FLOP_DELY_01.xml");
    const mx_set_t *delay = &flop->sets [MX_SET_DELAY];
    assert_int_equal (flop->set_presence [MX_SET_DELAY], MX_PRESENT);
    assert_int_equal (delay->count, 3);
    const char *strt = s_local (2003, 12, 15, 16, 5);
    s_assert_record (delay, 0, 1, (const char *[MX_SET_MAX_FIELDS]) { "YY", strt, "120", "YYYYYYY" });
    s_assert_record (delay, 1, 2, (const char *[MX_SET_MAX_FIELDS]) { "XX", strt, "121", "XXXXXXX" });
    s_assert_record (delay, 2, 3, (const char *[MX_SET_MAX_FIELDS]) { "ZZ", strt, "122", "ZZZZZZZ" });
    mx_flop_destroy (&flop);

    flop = s_sample_flop ("FLOP_DELY_02.xml");
    assert_int_equal (flop->set_presence [MX_SET_DELAY], MX_PRESENT);
    assert_int_equal (flop->sets [MX_SET_DELAY].count, 0);
    mx_flop_destroy (&flop);

    flop = s_sample_flop ("FLOP_FDIV_01.xml");
    s_assert_flop (flop, (const s_pair_t []) { { "FDIV", "INCLEMENT WEATHER" },
                   { "FDIV_DDES", "HKG" }, { "FDIV_DDIR", "TO" }, { NULL, NULL } }, false);
    mx_flop_destroy (&flop);
    //  DDES="" clears the diversion airport, the rest is set.
    flop = s_sample_flop ("FLOP_FDIV_02.xml");
    assert_int_equal (flop->scalar_presence [MX_F_FDIV_DDES], MX_CLEARED);
    assert_string_equal (flop->scalars [MX_F_FDIV_DDIR], "TO");
    assert_string_equal (flop->scalars [MX_F_FDIV], "INCLEMENT WEATHER");
    mx_flop_destroy (&flop);
    flop = s_sample_flop ("FLOP_FDIV_04.xml");
    assert_string_equal (flop->scalars [MX_F_FDIV_DDES], "HKG");
    assert_int_equal (flop->scalar_presence [MX_F_FDIV_DDIR], MX_CLEARED);
    mx_flop_destroy (&flop);

    flop = s_sample_flop ("FLOP_FRET_02.xml");
    assert_string_equal (flop->scalars [MX_F_FRET_REID], "G");
    assert_int_equal (flop->scalar_presence [MX_F_FRET], MX_CLEARED);
    mx_flop_destroy (&flop);
    flop = s_sample_flop ("FLOP_FLAB_03.xml");
    assert_int_equal (flop->scalar_presence [MX_F_FLAB], MX_CLEARED);
    assert_int_equal (flop->scalar_presence [MX_F_FLAB_ARES], MX_CLEARED);
    mx_flop_destroy (&flop);

    flop = s_sample_flop ("FLOP_PORT_01.xml");
    s_assert_flop (flop, (const s_pair_t []) { { "PORT_OPEN", s_local (2018, 8, 10, 18, 55) },
                                               { NULL, NULL } }, false);
    mx_flop_destroy (&flop);

    flop = s_sample_flop ("FLOP_SRVT_01.xml");
    s_assert_flop (flop, (const s_pair_t []) { { "SRVT",
        "[{\"SANR\":\"MACHINE\",\"SARR\":\"由于机器问题延误服务事务\",\"SRET\":\"12DEC211430\","
        "\"SRPR\":\"\",\"SRQT\":\"2\",\"SRST\":\"12DEC211400\",\"SRTC\":\"ATN\"}]" },
        { NULL, NULL } }, false);
    mx_flop_destroy (&flop);
    flop = s_sample_flop ("FLOP_SRVT_02.xml");
    assert_int_equal (json_array_size (flop->rare [MX_RARE_SRVT]), 3);
    assert_string_equal (json_string_value (json_object_get (
        json_array_get (flop->rare [MX_RARE_SRVT], 2), "SRPR")), "107007");
    mx_flop_destroy (&flop);
    flop = s_sample_flop ("FLOP_SRVT_03.xml");
    s_assert_flop (flop, (const s_pair_t []) { { "SRVT", "" }, { NULL, NULL } }, true);
    mx_flop_destroy (&flop);

    flop = s_sample_flop ("FLOP_PSHT_01.xml");
    s_assert_flop (flop, (const s_pair_t []) { { "PSHT",
        "[{\"PSHN\":\"1\",\"PSID\":\"IN\",\"PSTM\":\"10AUG181346\",\"PUST\":\"504\"}]" },
        { NULL, NULL } }, false);
    mx_flop_destroy (&flop);
    flop = s_sample_flop ("FLOP_TIPT_01.xml");
    s_assert_flop (flop, (const s_pair_t []) { { "TIPT",
        "[{\"TRST\":\"503\",\"TRTM\":\"10AUG181350\"},{\"TRST\":\"504\",\"TRTM\":\"10AUG181344\"}]" },
        { NULL, NULL } }, false);
    mx_flop_destroy (&flop);

    //  ABOP is text: the real sample carries "D".
    flop = s_sample_flop ("FLOP_ABTM_01.xml");
    assert_int_equal (flop->flid, 121112312);
    s_assert_record (&flop->sets [MX_SET_AIRBRIDGE], 0, 1,
                     (const char *[MX_SET_MAX_FIELDS]) { "212", "D", s_local (2006, 12, 10, 13, 43) });
    mx_flop_destroy (&flop);

    flop = s_sample_flop ("FLOP_GTDT_01.xml");
    assert_int_equal (flop->sets [MX_SET_GATE].count, 3);
    s_assert_record (&flop->sets [MX_SET_GATE], 1, 2,
                     (const char *[MX_SET_MAX_FIELDS]) { "G33", s_local (2003, 12, 15, 18, 5),
                                                         s_local (2003, 12, 15, 19, 25), "", "",
                                                         "I" });
    mx_flop_destroy (&flop);

    //  One of the pair cleared, the other set.
    flop = s_sample_flop ("FLOP_VIPP_02.xml");
    assert_int_equal (flop->scalar_presence [MX_F_VIPP], MX_CLEARED);
    assert_null (flop->scalars [MX_F_VIPP]);
    assert_int_equal (flop->scalar_presence [MX_F_VIPR], MX_PRESENT);
    assert_string_equal (flop->scalars [MX_F_VIPR], "3");
    mx_flop_destroy (&flop);

    flop = s_sample_flop ("FLOP_HNAG_02.xml");
    s_assert_flop (flop, (const s_pair_t []) { { "PHAG", "" }, { "FHAG", "" }, { "MHAG", "" },
                                               { NULL, NULL } }, true);
    mx_flop_destroy (&flop);
    flop = s_sample_flop ("FLOP_CNCL_02.xml");
    s_assert_flop (flop, (const s_pair_t []) { { "CNCL", "" }, { NULL, NULL } }, true);
    mx_flop_destroy (&flop);
    flop = s_sample_flop ("FLOP_PADT_01.xml");
    s_assert_flop (flop, (const s_pair_t []) { { "PADT", "" }, { NULL, NULL } }, true);
    mx_flop_destroy (&flop);

    flop = s_sample_flop ("FLOP_FDEL_01.xml");
    assert_true (flop->fdel);
    assert_int_equal (flop->flid, 15);
    assert_string_equal (flop->styp, "FDEL");
    assert_string_equal (flop->ffid, "CA-CA101-A-12DEC031345-D");
    mx_flop_destroy (&flop);
    mx_flop_destroy (&flop);
    assert_null (flop);
}

// ---------------------------------------------------------------------------
//  Every FLOP subtype: set, clear, absent

typedef struct {
    const char *styp;
    const char *set_body;
    const char *clear_body;
    s_pair_t expect [4];        //  code -> value; sets: record count; rare: JSON
} s_subtype_case_t;

#define S_TIME_CASE(code) \
    { code, "<" code ">" S_T1 "</" code ">", "<" code "></" code ">", { { code, "@T1" } } }

static const s_subtype_case_t s_subtype_cases [] = {
    { "FLTY", "<FLTY>C</FLTY>", "<FLTY/>", { { "FLTY", "C" } } },
    { "FLIN", "<FLIN> I </FLIN>", "<FLIN></FLIN>", { { "FLIN", "I" } } },
    { "ACFT", "<ACFT>358</ACFT>", "<ACFT>  </ACFT>", { { "ACFT", "358" } } },
    { "RENO", "<RENO>B2574</RENO>", "<RENO/>", { { "RENO", "B2574" } } },
    { "TRML", "<TRML>T3</TRML>", "<TRML/>", { { "TRML", "T3" } } },
    { "MAXP", "<MAXP>0130</MAXP>", "<MAXP/>", { { "MAXP", "130" } } },
    { "RUNW", "<RUNW>02L</RUNW>", "<RUNW/>", { { "RUNW", "02L" } } },
    { "STND", "<STND>S209</STND>", "<STND></STND>", { { "STND", "S209" } } },
    { "TAOP", "<TAOP>CA</TAOP><TAFL>CA201</TAFL><TAID>6213345</TAID>",
              "<TAOP/><TAFL/><TAID/>",
              { { "TAOP", "CA" }, { "TAFL", "CA201" }, { "TAID", "6213345" } } },
    { "HNAG", "<FHAG>234523</FHAG><PHAG>22313</PHAG><MHAG>234524</MHAG>",
              "<FHAG/><PHAG></PHAG><MHAG> </MHAG>",
              { { "FHAG", "234523" }, { "PHAG", "22313" }, { "MHAG", "234524" } } },
    { "EXSS", "<EXSC>DELAY</EXSC><EXSR>delay for one hour</EXSR>", "<EXSC/><EXSR/>",
              { { "EXSC", "DELAY" }, { "EXSR", "delay for one hour" } } },
    { "FTSS", "<FTSS>DELY</FTSS>", "<FTSS/>", { { "FTSS", "DELY" } } },
    { "REMC", "<REMC>Bag loading Delay</REMC>", "<REMC/>", { { "REMC", "Bag loading Delay" } } },
    { "VIPP", "<VIPP>2</VIPP><VIPR>3</VIPR>", "<VIPP/><VIPR/>",
              { { "VIPP", "2" }, { "VIPR", "3" } } },
    S_TIME_CASE ("CNCL"),
    { "FDIV", "<FDIV DDES=\"HKG\" DDIR=\"TO\">INCLEMENT WEATHER</FDIV>", "<FDIV/>",
              { { "FDIV", "INCLEMENT WEATHER" }, { "FDIV_DDES", "HKG" }, { "FDIV_DDIR", "TO" } } },
    { "FRET", "<FRET REID=\"G\">EXIT DOOR FAULT</FRET>", "<FRET></FRET>",
              { { "FRET", "EXIT DOOR FAULT" }, { "FRET_REID", "G" } } },
    { "FLAB", "<FLAB ARES=\"G\">POOR VISIBILITY</FLAB>", "<FLAB ARES=\"\"></FLAB>",
              { { "FLAB", "POOR VISIBILITY" }, { "FLAB_ARES", "G" } } },
    S_TIME_CASE ("APPT"), S_TIME_CASE ("BOTM"), S_TIME_CASE ("LACL"), S_TIME_CASE ("FINT"),
    S_TIME_CASE ("EGSR"), S_TIME_CASE ("EGST"), S_TIME_CASE ("COBT"), S_TIME_CASE ("CTOT"),
    S_TIME_CASE ("EOBT"), S_TIME_CASE ("TOBT"), S_TIME_CASE ("IEST"), S_TIME_CASE ("PEDT"),
    S_TIME_CASE ("NEAT"), S_TIME_CASE ("PADT"), S_TIME_CASE ("NAAT"),
    { "PORT", "<PORT><POTM>" S_T1 "</POTM><POID>C</POID></PORT>"
              "<PORT><POID>O</POID><POTM>" S_T1 "</POTM></PORT>", "<PORT/>",
              { { "PORT_OPEN", "@T1" }, { "PORT_CLOSE", "@T1" } } },
    { "PSDT", "<PSDT PSNO=\"2\"><PSST>R211</PSST></PSDT><PSDT PSNO=\"1\"><PSST>S211</PSST>"
              "<STST>" S_T1 "</STST></PSDT>", "<PSDT/>", { { "PSDT", "2" } } },
    { "GTDT", "<GTDT GTNO=\"1\"><GATE>G28</GATE><GTYP>D</GTYP></GTDT>", "<GTDT></GTDT>",
              { { "GTDT", "1" } } },
    { "CKDT", "<CKDT CKNO=\"1\"><CHKC>01</CHKC></CKDT><CKDT CKNO=\"2\"><CHKC>17</CHKC></CKDT>",
              "<CKDT/>", { { "CKDT", "2" } } },
    { "CLDT", "<CLDT CLNO=\"1\"><BELT>B01</BELT><FBAG>" S_T1 "</FBAG></CLDT>", "<CLDT/>",
              { { "CLDT", "1" } } },
    { "CHDT", "<CHDT CHNO=\"1\"><CHUT>CH0021</CHUT></CHDT>", "<CHDT/>", { { "CHDT", "1" } } },
    { "ABTM", "<ABTM ASNO=\"1\"><ABDG>212</ABDG><ABOP>D</ABOP></ABTM>", "<ABTM/>",
              { { "ABTM", "1" } } },
    { "CHOT", "<CHOT CSNO=\"1\"><CHTM>" S_T1 "</CHTM><CHID>ON</CHID></CHOT>", "<CHOT/>",
              { { "CHOT", "1" } } },
    { "DELY", "<DELY CODE=\"YY\" STRT=\"" S_T1 "\" DURA=\"0130\">reason</DELY>", "<DELY></DELY>",
              { { "DELY", "1" } } },
    { "ROUT", "<ROUT RTNO=\"1\"><APCD>XIY</APCD></ROUT><ROUT RTNO=\"2\"><APCD>CTU</APCD></ROUT>",
              "<ROUT/>", { { "ROUT", "2" } } },
    { "ERUT", "<ERUT RTNO=\"1\"><APCD>SHA</APCD><SCDT>" S_T1 "</SCDT></ERUT>", "<ERUT/>",
              { { "ERUT", "1" } } },
    { "PSHT", "<PSHT PSHN=\"1\"><PSID>IN</PSID></PSHT>", "<PSHT/>",
              { { "PSHT", "[{\"PSHN\":\"1\",\"PSID\":\"IN\"}]" } } },
    { "TIPT", "<TIPT><TRST>503</TRST></TIPT><TIPT><TRST>504</TRST></TIPT>", "<TIPT></TIPT>",
              { { "TIPT", "[{\"TRST\":\"503\"},{\"TRST\":\"504\"}]" } } },
    { "SRVT", "<SRVT><SRTC>ATN</SRTC><SARR>由于机器问题</SARR></SRVT>", "<SRVT/>",
              { { "SRVT", "[{\"SARR\":\"由于机器问题\",\"SRTC\":\"ATN\"}]" } } },
    { "VIPF", "<VIPF><VPCD>VC11030</VPCD><VFES>3</VFES></VIPF>", "<VIPF/>",
              { { "VIPF", "[{\"VFES\":\"3\",\"VPCD\":\"VC11030\"}]" } } },
};

#define S_SUBTYPE_CASES (sizeof s_subtype_cases / sizeof s_subtype_cases [0])

static void
test_every_subtype (void **state)
{
    (void) state;
    assert_int_equal (S_SUBTYPE_CASES, 48);
    for (size_t i = 0; i < S_SUBTYPE_CASES; i++) {
        const s_subtype_case_t *test = &s_subtype_cases [i];
        assert_true (mx_sis_is_flop_subtype (test->styp));
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal (test->styp, s_subtype_cases [j].styp);

        mx_flop_t *flop = s_flop_ok (test->styp, test->set_body);
        assert_string_equal (flop->styp, test->styp);
        s_assert_flop (flop, test->expect, false);
        mx_flop_destroy (&flop);

        flop = s_flop_ok (test->styp, test->clear_body);
        s_assert_flop (flop, test->expect, true);
        mx_flop_destroy (&flop);

        //  Absent: a FLOP of another subtype leaves every value of this
        //  one untouched.
        const s_subtype_case_t *other = &s_subtype_cases [(i + 1) % S_SUBTYPE_CASES];
        flop = s_flop_ok (other->styp, other->set_body);
        for (size_t k = 0; k < 4 && test->expect [k].code; k++) {
            const char *code = test->expect [k].code;
            int scalar = mx_scalar_lookup (code);
            int set = mx_set_lookup (code);
            int rare = mx_rare_lookup (code);
            if (scalar >= 0)
                assert_int_equal (flop->scalar_presence [scalar], MX_ABSENT);
            else
            if (set >= 0)
                assert_int_equal (flop->set_presence [set], MX_ABSENT);
            else {
                assert_true (rare >= 0);
                assert_int_equal (flop->rare_presence [rare], MX_ABSENT);
            }
        }
        mx_flop_destroy (&flop);
    }
}

static void
test_set_records (void **state)
{
    (void) state;
    //  Records sorted by key; DELY keys are positions; DURA 0130 is 90.
    mx_flop_t *flop = s_flop_ok ("PSDT", "<PSDT PSNO=\"2\"><PSST>R211</PSST></PSDT>"
                                         "<PSDT PSNO=\"1\"><PSST>S211</PSST>"
                                         "<STST>" S_T1 "</STST></PSDT>");
    assert_string_equal (flop->styp, "PSDT");
    s_assert_record (&flop->sets [MX_SET_STAND], 0, 1,
                     (const char *[MX_SET_MAX_FIELDS]) { "S211", s_t1_ms });
    s_assert_record (&flop->sets [MX_SET_STAND], 1, 2, (const char *[MX_SET_MAX_FIELDS]) { "R211" });
    mx_flop_destroy (&flop);

    flop = s_flop_ok ("DELY", "<DELY CODE=\"YY\" STRT=\"" S_T1 "\" DURA=\"0130\">weather</DELY>"
                              "<DELY CODE=\"93\" DURA=\"0000\"/><DELY/>"
                              "<DELY DURA=\"9959\">  late crew  </DELY>");
    const mx_set_t *delay = &flop->sets [MX_SET_DELAY];
    assert_int_equal (delay->count, 3);
    s_assert_record (delay, 0, 1, (const char *[MX_SET_MAX_FIELDS]) { "YY", s_t1_ms, "90", "weather" });
    s_assert_record (delay, 1, 2, (const char *[MX_SET_MAX_FIELDS]) { "93", "", "0" });
    s_assert_record (delay, 2, 3, (const char *[MX_SET_MAX_FIELDS]) { "", "", "5999", "late crew" });
    mx_flop_destroy (&flop);

    //  A set element's unknown child has no column: not kept.
    flop = s_flop_ok ("GTDT", "<GTDT GTNO=\"7\"><GATE>G1</GATE><XXXX>1</XXXX></GTDT>");
    s_assert_record (&flop->sets [MX_SET_GATE], 0, 7, (const char *[MX_SET_MAX_FIELDS]) { "G1" });
    assert_int_equal (json_object_size (flop->extra), 0);
    mx_flop_destroy (&flop);
}

static void
test_port (void **state)
{
    (void) state;
    const char *open_close = "<PORT><POTM>" S_T1 "</POTM><POID>O</POID></PORT>"
                             "<PORT><POID>C</POID><POTM>23JAN210600</POTM></PORT>";
    mx_flop_t *flop = s_flop_ok ("PORT", open_close);
    s_assert_flop (flop, (const s_pair_t []) { { "PORT_OPEN", "@T1" },
                   { "PORT_CLOSE", s_local (2021, 1, 23, 6, 0) }, { NULL, NULL } }, false);
    mx_flop_destroy (&flop);

    //  <PORT/> clears both; an empty POTM clears only its side.
    flop = s_flop_ok ("PORT", "<PORT/>");
    s_assert_flop (flop, (const s_pair_t []) { { "PORT_OPEN", "" }, { "PORT_CLOSE", "" },
                                               { NULL, NULL } }, true);
    mx_flop_destroy (&flop);
    flop = s_flop_ok ("PORT", "<PORT><POTM/><POID>O</POID></PORT>");
    s_assert_flop (flop, (const s_pair_t []) { { "PORT_OPEN", "" }, { NULL, NULL } }, true);
    mx_flop_destroy (&flop);

    s_flop_fails ("FLOP", "PORT", "<FLOP><FLID>15</FLID><PORT><POTM>" S_T1 "</POTM>"
                  "<POID>X</POID></PORT></FLOP>", MX_BODY_PROTOCOL,
                  "FLOP (FLID 15): PORT POID 'X' is not O or C");
    s_flop_fails ("FLOP", "PORT", "<FLOP><FLID>15</FLID><PORT><POTM>" S_T1 "</POTM></PORT></FLOP>",
                  MX_BODY_PROTOCOL, "PORT POID '' is not O or C");
    s_flop_fails ("FLOP", "PORT", "<FLOP><FLID>15</FLID><PORT><POID>O</POID></PORT>"
                  "<PORT><POID>O</POID></PORT></FLOP>", MX_BODY_PROTOCOL,
                  "PORT_OPEN appears more than once");
    s_flop_fails ("FLOP", "PORT", "<FLOP><FLID>15</FLID><PORT/><PORT><POID>O</POID></PORT></FLOP>",
                  MX_BODY_PROTOCOL, "PORT beside an empty PORT");
}

//  Known elements beside the subtype's are taken; unknown ones kept.
static void
test_extra (void **state)
{
    (void) state;
    mx_flop_t *flop = s_flop_ok ("STND",
        "<STND>S209</STND><GATE>ignored?</GATE><RUNW>02L</RUNW><ZZZZ> v 1 </ZZZZ>"
        "<NEST><A>1</A><B x=\"y\">2</B></NEST><ATTR k=\"v\">t</ATTR>"
        "<REP>1</REP><REP>2</REP><EMPT/><FDIV_DDES>XXX</FDIV_DDES>");
    assert_string_equal (flop->scalars [MX_F_STND], "S209");
    assert_string_equal (flop->scalars [MX_F_RUNW], "02L");
    s_assert_json (flop->extra,
        "{\"ATTR\":\"<ATTR k=\\\"v\\\">t</ATTR>\",\"EMPT\":null,\"FDIV_DDES\":\"XXX\","
        "\"GATE\":\"ignored?\",\"NEST\":\"<A>1</A><B x=\\\"y\\\">2</B>\",\"REP\":[\"1\",\"2\"],"
        "\"ZZZZ\":\"v 1\"}");
    mx_flop_destroy (&flop);

    //  In a FLTR an empty unknown element is no value.
    mx_sis_msg_t *msg = s_schd ("ADFT", "<RECS>1</RECS>",
                                s_fltr ("7", "A", "<ZZZZ>z</ZZZZ><EMPT></EMPT>"), NULL);
    mx_schedule_t *schedule = s_schedule_ok (msg);
    s_assert_json (schedule->records [0].flight->extra, "{\"ZZZZ\":\"z\"}");
    mx_schedule_destroy (&schedule);
    mx_sis_destroy (&msg);
}

//  White space in text nodes directly under SCHD and FLTR (false: none).
static bool
s_frame_has_text (xmlNodePtr node)
{
    for (xmlNodePtr child = node->children; child; child = child->next) {
        if (child->type == XML_TEXT_NODE)
            return true;
        if (child->type == XML_ELEMENT_NODE && strcmp ((const char *) child->name, "FLTR") == 0
        &&  s_frame_has_text (child))
            return true;
    }
    return false;
}

//  A schedule laid out on lines decodes as the same schedule on one line:
//  the layout between records and fields is not kept in the tree, the
//  white space inside a value or an unknown element is.
static void
test_schedule_layout (void **state)
{
    (void) state;
    const char *fltr_more = "<ZZZZ>\n  <A>1</A>\n  <B>2</B>\n</ZZZZ><RUNW> </RUNW>";
    mx_sis_msg_t *flat = s_schd ("DNLD", "<RECS>1</RECS>", s_fltr ("7", "A", fltr_more), NULL);
    char *fltr = s_fltr ("7", "A", fltr_more);
    char *laid_out = s_format ("\n\t<RECS>1</RECS>\n\t%s\n", fltr);
    free (fltr);
    //  Line breaks and tabs between the FLTR's fields too.
    char *body = s_format ("<SCHD>%s</SCHD>", laid_out);
    free (laid_out);
    char *spaced = NULL;
    size_t length = 0;
    FILE *out = open_memstream (&spaced, &length);
    assert_non_null (out);
    for (const char *p = body; *p; p++) {
        if (*p == '<' && p [1] != '/' && p != body && p [-1] == '>')
            fputs ("\n\t\t", out);
        fputc (*p, out);
    }
    fclose (out);
    free (body);
    mx_sis_msg_t *msg = s_decode ("SCHD", "DNLD", spaced);
    free (spaced);
    assert_false (s_frame_has_text (mx_sis_body (msg)));
    mx_schedule_t *a = s_schedule_ok (flat), *b = s_schedule_ok (msg);
    assert_int_equal (a->count, 1);
    assert_int_equal (b->count, 1);
    char *a_extra = s_json (a->records [0].flight->extra), *b_extra = s_json (b->records [0].flight->extra);
    assert_string_equal (b_extra, a_extra);
    assert_non_null (strstr (b_extra, "</A>\\n  <B>"));
    free (a_extra);
    free (b_extra);
    for (int i = 0; i < MX_F_COUNT; i++) {
        const char *x = a->records [0].flight->scalars [i], *y = b->records [0].flight->scalars [i];
        if (x || y)
            assert_string_equal (x ? x : "-", y ? y : "-");
    }
    mx_schedule_destroy (&a);
    mx_schedule_destroy (&b);
    mx_sis_destroy (&flat);
    mx_sis_destroy (&msg);
}

//  A FLOP with nothing this codec knows. The envelope already refuses a
//  FLOP without its subtype's element, so the message is decoded with FLOP
//  on the ignore list, which skips that check.
static void
test_unsupported (void **state)
{
    (void) state;
    char *xml = s_message ("FLOP", "STND", "<FLOP><FLID>15</FLID><FFID>x</FFID>"
                                           "<XSTD>S209</XSTD></FLOP>");
    mx_sis_msg_t *msg = s_decode_ignoring (xml, strlen (xml), "FLOP");
    free (xml);
    mx_flop_t *flop = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_flop (msg, s_zone, &flop, &error);
    assert_null (flop);
    s_expect_error (status, error, MX_BODY_UNSUPPORTED, "FLOP/STND carries no element");
    mx_sis_destroy (&msg);

    //  Nothing at all beside FLID: also nothing to apply.
    xml = s_message ("FLOP", "TOBT", "<FLOP><FLID>15</FLID></FLOP>");
    msg = s_decode_ignoring (xml, strlen (xml), "FLOP");
    free (xml);
    status = mx_sis_flop (msg, s_zone, &flop, &error);
    assert_null (flop);
    s_expect_error (status, error, MX_BODY_UNSUPPORTED, "carries no element");
    mx_sis_destroy (&msg);
}

static void
test_fdel (void **state)
{
    (void) state;
    //  FLOP/FDEL.
    mx_sis_msg_t *msg = s_decode ("FLOP", "FDEL", "<FLOP><FLID>42</FLID><FDEL/></FLOP>");
    mx_flop_t *flop = NULL;
    char *error = NULL;
    assert_int_equal (mx_sis_flop (msg, s_zone, &flop, &error), MX_BODY_OK);
    assert_true (flop->fdel);
    assert_int_equal (flop->flid, 42);
    assert_null (flop->ffid);
    assert_string_equal (flop->styp, "FDEL");
    s_assert_flop (flop, NULL, false);
    mx_flop_destroy (&flop);
    mx_sis_destroy (&msg);

    //  TYPE FDEL with <FDEL><FLID/><FFID/></FDEL>, and with a <FLOP> block.
    msg = s_decode ("FDEL", "NONE", "<FDEL><FLID>43</FLID><FFID>CA-1</FFID></FDEL>");
    assert_int_equal (mx_sis_flop (msg, s_zone, &flop, &error), MX_BODY_OK);
    assert_true (flop->fdel);
    assert_int_equal (flop->flid, 43);
    assert_string_equal (flop->ffid, "CA-1");
    mx_flop_destroy (&flop);
    mx_sis_destroy (&msg);
    msg = s_decode ("FDEL", "FDEL", "<FLOP><FLID>44</FLID><FDEL></FDEL></FLOP>");
    assert_int_equal (mx_sis_flop (msg, s_zone, &flop, &error), MX_BODY_OK);
    assert_true (flop->fdel);
    assert_int_equal (flop->flid, 44);
    mx_flop_destroy (&flop);
    mx_sis_destroy (&msg);

    //  A FLOP that is not FDEL never deletes.
    flop = s_flop_ok ("STND", "<STND>1</STND>");
    assert_false (flop->fdel);
    mx_flop_destroy (&flop);

    s_flop_fails ("FLOP", "FDEL", "<FLOP><FLID>15</FLID><FDEL>now</FDEL></FLOP>",
                  MX_BODY_PROTOCOL, "FLOP (FLID 15): FDEL must be empty");
    s_flop_fails ("FLOP", "FDEL", "<FLOP><FLID>15</FLID><FDEL><X/></FDEL></FLOP>",
                  MX_BODY_PROTOCOL, "FDEL must be empty");
    s_flop_fails ("FLOP", "FDEL", "<FLOP><FLID>15</FLID><FDEL/><FDEL/></FLOP>",
                  MX_BODY_PROTOCOL, "FDEL appears 2 times");
    s_flop_fails ("FDEL", "NONE", "<FDEL><FLID>x</FLID></FDEL>", MX_BODY_PROTOCOL,
                  "FDEL: FLID 'x' is not a positive integer");
    s_flop_fails ("FDEL", "NONE", "<FDEL><FLID>1</FLID></FDEL><FLOP><FLID>1</FLID></FLOP>",
                  MX_BODY_PROTOCOL, "2 <FDEL> blocks, expected exactly one");
}

static void
test_flop_protocol (void **state)
{
    (void) state;
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID>15</FLID><STND>1</STND></FLOP>"
                  "<FLOP><FLID>16</FLID><STND>2</STND></FLOP>", MX_BODY_PROTOCOL,
                  "FLOP/STND: 2 <FLOP> blocks, expected exactly one");
    s_flop_fails ("FLOP", "STND", "<FLOP><STND>1</STND></FLOP>", MX_BODY_PROTOCOL,
                  "FLOP: FLID is missing");
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID>CA101</FLID><STND>1</STND></FLOP>",
                  MX_BODY_PROTOCOL, "FLOP: FLID 'CA101' is not a positive integer");
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID></FLID><STND>1</STND></FLOP>",
                  MX_BODY_PROTOCOL, "FLID '' is not a positive integer");
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID>0</FLID><STND>1</STND></FLOP>",
                  MX_BODY_PROTOCOL, "FLID '0' is not a positive integer");
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID>-4</FLID><STND>1</STND></FLOP>",
                  MX_BODY_PROTOCOL, "FLID '-4' is not a positive integer");
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID>99999999999999999999</FLID><STND>1</STND></FLOP>",
                  MX_BODY_PROTOCOL, "is not a positive integer");
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID>1</FLID><FLID>1</FLID><STND>1</STND></FLOP>",
                  MX_BODY_PROTOCOL, "FLID appears 2 times");
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID>15</FLID><STND>1</STND><STND>2</STND></FLOP>",
                  MX_BODY_PROTOCOL, "FLOP (FLID 15): STND appears more than once");
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID>15</FLID><STND><X>1</X></STND></FLOP>",
                  MX_BODY_PROTOCOL, "STND holds elements, not a value");
    s_flop_fails ("FLOP", "GTDT", "<FLOP><FLID>15</FLID><GTDT><GATE>1</GATE></GTDT></FLOP>",
                  MX_BODY_PROTOCOL, "GTDT GTNO '' is not a record number");
    s_flop_fails ("FLOP", "GTDT", "<FLOP><FLID>15</FLID><GTDT GTNO=\"x\"><GATE>1</GATE></GTDT></FLOP>",
                  MX_BODY_PROTOCOL, "GTDT GTNO 'x' is not a record number");
    s_flop_fails ("FLOP", "GTDT", "<FLOP><FLID>15</FLID><GTDT GTNO=\"1\"><GATE>1</GATE></GTDT>"
                  "<GTDT GTNO=\"1\"><GATE>2</GATE></GTDT></FLOP>",
                  MX_BODY_PROTOCOL, "GTDT GTNO 1 appears more than once");
    s_flop_fails ("FLOP", "GTDT", "<FLOP><FLID>15</FLID><GTDT GTNO=\"1\"><GATE>1</GATE>"
                  "<GATE>2</GATE></GTDT></FLOP>", MX_BODY_PROTOCOL, "GTDT 1: GATE appears more than once");
    //  PROTOCOL wins over a CODEC_ERROR met before it.
    s_flop_fails ("FLOP", "STND", "<FLOP><FLID>15</FLID><APPT>bad</APPT><STND>1</STND>"
                  "<STND>2</STND></FLOP>", MX_BODY_PROTOCOL, "STND appears more than once");
}

static void
test_codec_errors (void **state)
{
    (void) state;
    s_flop_fails ("FLOP", "APPT", "<FLOP><FLID>15</FLID><APPT>2021-01-23 05:35</APPT></FLOP>",
                  MX_BODY_CODEC_ERROR,
                  "FLOP (FLID 15): APPT '2021-01-23 05:35' is not a date-time ddMONyyHHmm");
    s_flop_fails ("FLOP", "CNCL", "<FLOP><FLID>15</FLID><CNCL>31FEB211200</CNCL></FLOP>",
                  MX_BODY_CODEC_ERROR, "CNCL '31FEB211200' is not a date-time");
    s_flop_fails ("FLOP", "MAXP", "<FLOP><FLID>15</FLID><MAXP>lots</MAXP></FLOP>",
                  MX_BODY_CODEC_ERROR, "MAXP 'lots' is not an integer in range");
    s_flop_fails ("FLOP", "MAXP", "<FLOP><FLID>15</FLID><MAXP>9223372036854775808</MAXP></FLOP>",
                  MX_BODY_CODEC_ERROR, "is not an integer in range");
    s_flop_fails ("FLOP", "TAOP", "<FLOP><FLID>15</FLID><TAOP>CA</TAOP><TAID>1.5</TAID></FLOP>",
                  MX_BODY_CODEC_ERROR, "TAID '1.5' is not an integer");
    s_flop_fails ("FLOP", "DELY", "<FLOP><FLID>15</FLID><DELY CODE=\"A\" DURA=\"1:30\"/></FLOP>",
                  MX_BODY_CODEC_ERROR, "DELY 1: DURA '1:30' is not a duration HHMM");
    s_flop_fails ("FLOP", "DELY", "<FLOP><FLID>15</FLID><DELY CODE=\"A\" DURA=\"0160\"/></FLOP>",
                  MX_BODY_CODEC_ERROR, "DURA '0160' is not a duration HHMM");
    s_flop_fails ("FLOP", "GTDT", "<FLOP><FLID>15</FLID><GTDT GTNO=\"3\"><PGOT>10SEP20</PGOT>"
                  "</GTDT></FLOP>", MX_BODY_CODEC_ERROR, "GTDT 3: PGOT '10SEP20' is not a date-time");
    s_flop_fails ("FLOP", "PORT", "<FLOP><FLID>15</FLID><PORT><POTM>soon</POTM><POID>O</POID>"
                  "</PORT></FLOP>", MX_BODY_CODEC_ERROR, "PORT_OPEN 'soon' is not a date-time");

    //  Integers are canonical: sign, leading zeros.
    mx_flop_t *flop = s_flop_ok ("HNAG", "<PHAG>+007</PHAG><FHAG>-0</FHAG><MHAG>-12</MHAG>");
    s_assert_flop (flop, (const s_pair_t []) { { "PHAG", "7" }, { "FHAG", "0" }, { "MHAG", "-12" },
                                               { NULL, NULL } }, false);
    mx_flop_destroy (&flop);

    //  A bad optional value in a FLTR.
    mx_sis_msg_t *msg = s_schd ("DNLD", "<RECS>1</RECS>",
                                s_fltr ("15", "A", "<ESTT>23JAN21</ESTT>"), NULL);
    s_schedule_fails (msg, MX_BODY_CODEC_ERROR, "FLTR 1 (FLID 15): ESTT '23JAN21' is not a date-time");
    msg = s_schd ("DNLD", "<RECS>1</RECS>", s_fltr ("15", "A", "<LBNO>x</LBNO>"), NULL);
    s_schedule_fails (msg, MX_BODY_CODEC_ERROR, "LBNO 'x' is not an integer");
}

// ---------------------------------------------------------------------------
//  SCHD

static void
test_schedule_fields (void **state)
{
    (void) state;
    //  Every kind of field in a FLTR; FLTR order kept; FFID kept.
    char *a = s_fltr ("0031", "D",
        "<FFID>YG-YG9028-D-23JAN210535-D</FFID><ALSC> EN </ALSC><CSOP>MU</CSOP><CSFT>MU1</CSFT>"
        "<MAID>30</MAID><ESTT>23JAN210540</ESTT><ACTT></ACTT><LBNO>12</LBNO><LBWT>300</LBWT>"
        "<PAXC>150</PAXC><CNCL/><FDIV DDES=\"HKG\">WX</FDIV><PORT><POID>C</POID>"
        "<POTM>23JAN210500</POTM></PORT><DELY CODE=\"A\" DURA=\"0130\">r</DELY>"
        "<GTDT GTNO=\"2\"><GATE>G2</GATE></GTDT><GTDT GTNO=\"1\"><GATE>G1</GATE></GTDT>"
        "<CKDT/><VIPF><VPCD>V1</VPCD></VIPF><PSHT/><REMC>中文备注</REMC>");
    char *b = s_fltr ("30", "A", "");
    mx_sis_msg_t *msg = s_schd ("RESP", "<RECS> 2 </RECS>", a, b);
    mx_schedule_t *schedule = s_schedule_ok (msg);
    assert_int_equal (schedule->count, 2);
    const mx_flight_t *flight = schedule->records [0].flight;
    assert_int_equal (flight->flid, 31);
    assert_string_equal (schedule->records [0].ffid, "YG-YG9028-D-23JAN210535-D");
    const s_pair_t expected [] = {
        { "ALCD", "YG" }, { "ALSC", "EN" }, { "FLNO", "YG9028" }, { "MVIN", "D" }, { "SODT", "@T1" },
        { "FLTY", "W" }, { "FLIN", "D" }, { "ACFT", "733" }, { "CSOP", "MU" }, { "CSFT", "MU1" },
        { "MAID", "30" }, { "ESTT", s_local (2021, 1, 23, 5, 40) }, { "LBNO", "12" },
        { "LBWT", "300" }, { "PAXC", "150" }, { "FDIV", "WX" }, { "FDIV_DDES", "HKG" },
        { "PORT_CLOSE", s_local (2021, 1, 23, 5, 0) }, { "REMC", "中文备注" }, { NULL, NULL }
    };
    s_assert_scalars (flight, expected);
    assert_int_equal (flight->sets [MX_SET_DELAY].count, 1);
    s_assert_record (&flight->sets [MX_SET_DELAY], 0, 1,
                     (const char *[MX_SET_MAX_FIELDS]) { "A", "", "90", "r" });
    assert_int_equal (flight->sets [MX_SET_GATE].count, 2);
    s_assert_record (&flight->sets [MX_SET_GATE], 0, 1, (const char *[MX_SET_MAX_FIELDS]) { "G1" });
    s_assert_record (&flight->sets [MX_SET_GATE], 1, 2, (const char *[MX_SET_MAX_FIELDS]) { "G2" });
    assert_int_equal (flight->sets [MX_SET_CHECKIN].count, 0);
    s_assert_json (flight->rare [MX_RARE_VIPF], "[{\"VPCD\":\"V1\"}]");
    assert_null (flight->rare [MX_RARE_PSHT]);

    flight = schedule->records [1].flight;
    assert_int_equal (flight->flid, 30);
    assert_null (schedule->records [1].ffid);
    mx_schedule_destroy (&schedule);
    mx_sis_destroy (&msg);

    //  An empty schedule is a valid package.
    msg = s_schd ("DNLD", "<RECS>0</RECS>", NULL, NULL);
    schedule = s_schedule_ok (msg);
    assert_int_equal (schedule->count, 0);
    mx_schedule_destroy (&schedule);
    mx_sis_destroy (&msg);
}

static void
test_schedule_protocol (void **state)
{
    (void) state;
    s_schedule_fails (s_schd ("DNLD", "", s_fltr ("15", "A", ""), NULL),
                      MX_BODY_PROTOCOL, "RECS is missing");
    s_schedule_fails (s_schd ("DNLD", "<RECS>2</RECS>", s_fltr ("15", "A", ""), NULL),
                      MX_BODY_PROTOCOL, "RECS 2 but 1 FLTR record(s)");
    s_schedule_fails (s_schd ("DNLD", "<RECS>1</RECS>", s_fltr ("15", "A", ""),
                              s_fltr ("16", "A", "")),
                      MX_BODY_PROTOCOL, "RECS 1 but 2 FLTR record(s)");
    s_schedule_fails (s_schd ("ADFT", "<RECS>two</RECS>", s_fltr ("15", "A", ""), NULL),
                      MX_BODY_PROTOCOL, "RECS 'two' is not a record count");
    s_schedule_fails (s_schd ("ADFT", "<RECS>1</RECS><RECS>1</RECS>", s_fltr ("15", "A", ""), NULL),
                      MX_BODY_PROTOCOL, "RECS appears 2 times");
    s_schedule_fails (s_schd ("DNLD", "<RECS>2</RECS>", s_fltr ("15", "A", ""),
                              s_fltr ("abc", "A", "")),
                      MX_BODY_PROTOCOL, "FLTR 2: FLID 'abc' is not a positive integer");
    s_schedule_fails (s_schd ("DNLD", "<RECS>2</RECS>", s_fltr ("15", "A", ""),
                              s_fltr ("015", "D", "")),
                      MX_BODY_PROTOCOL, "FLTR 2: FLID 15 repeats FLTR 1");
    s_schedule_fails (s_schd ("DNLD", "<RECS>1</RECS>",
                              strdup ("<FLTR><ALCD>YG</ALCD></FLTR>"), NULL),
                      MX_BODY_PROTOCOL, "FLTR 1: FLID is missing");
    s_schedule_fails (s_schd ("DNLD", "<RECS>2</RECS>", s_fltr ("15", "A", ""),
                              s_fltr ("16", "X", "")),
                      MX_BODY_PROTOCOL, "FLTR 2 (FLID 16): MVIN 'X' is not A or D");

    //  Each mandatory field: missing, and empty.
    static const char *mandatory [] = { "ALCD", "FLNO", "MVIN", "SODT", "FLTY", "FLIN", "ACFT" };
    for (size_t i = 0; i < sizeof mandatory / sizeof mandatory [0]; i++) {
        char *fltr = s_fltr ("16", "A", "");
        char open [16], close [16], *start, *end;
        snprintf (open, sizeof open, "<%s>", mandatory [i]);
        snprintf (close, sizeof close, "</%s>", mandatory [i]);
        start = strstr (fltr, open);
        end = strstr (fltr, close);
        assert_true (start && end);
        char *empty = s_format ("%.*s<%s/>%s", (int) (start - fltr), fltr, mandatory [i],
                               end + strlen (close));
        memmove (start, end + strlen (close), strlen (end + strlen (close)) + 1);
        char message [64];
        snprintf (message, sizeof message, "FLTR 1 (FLID 16): %s is missing", mandatory [i]);
        s_schedule_fails (s_schd ("DNLD", "<RECS>1</RECS>", fltr, NULL), MX_BODY_PROTOCOL, message);
        snprintf (message, sizeof message, "FLTR 1 (FLID 16): %s is empty", mandatory [i]);
        s_schedule_fails (s_schd ("DNLD", "<RECS>1</RECS>", empty, NULL), MX_BODY_PROTOCOL, message);
    }
    char *fltr = s_fltr ("16", "A", "");
    memcpy (strstr (fltr, "<FLIN>D") + 6, "Q", 1);
    s_schedule_fails (s_schd ("DNLD", "<RECS>1</RECS>", fltr, NULL),
                      MX_BODY_PROTOCOL, "FLIN 'Q' is not D, I or M");
    //  SODT not a body date-time: no operation day, PROTOCOL (not CODEC).
    fltr = s_fltr ("16", "A", "");
    memcpy (strstr (fltr, S_T1), "30FEB210535", 11);
    s_schedule_fails (s_schd ("DNLD", "<RECS>1</RECS>", fltr, NULL),
                      MX_BODY_PROTOCOL, "FLTR 1 (FLID 16): SODT '30FEB210535' is not a valid date-time");

    //  Structure inside a FLTR.
    s_schedule_fails (s_schd ("DNLD", "<RECS>1</RECS>",
                              s_fltr ("16", "A", "<STND>1</STND><STND>2</STND>"), NULL),
                      MX_BODY_PROTOCOL, "FLTR 1 (FLID 16): STND appears more than once");
    s_schedule_fails (s_schd ("DNLD", "<RECS>1</RECS>",
                              s_fltr ("16", "A", "<ROUT><APCD>X</APCD></ROUT>"), NULL),
                      MX_BODY_PROTOCOL, "ROUT RTNO '' is not a record number");
    s_schedule_fails (s_schd ("DNLD", "<RECS>1</RECS>",
                              s_fltr ("16", "A", "<FFID>a</FFID><FFID>b</FFID>"), NULL),
                      MX_BODY_PROTOCOL, "FFID appears 2 times");
    //  A PROTOCOL problem in a later FLTR wins over a CODEC_ERROR before it.
    s_schedule_fails (s_schd ("DNLD", "<RECS>2</RECS>", s_fltr ("15", "A", "<ESTT>x</ESTT>"),
                              s_fltr ("16", "X", "")),
                      MX_BODY_PROTOCOL, "FLTR 2 (FLID 16): MVIN 'X' is not A or D");
}

static void
test_schedule_del (void **state)
{
    (void) state;
    mx_sis_msg_t *msg = s_decode ("SCHD", "DEL", "<SCHD><RECS>3</RECS>"
        "<FLTR><FLID>15</FLID><ALCD>YG</ALCD></FLTR><FLTR><FLID>7</FLID></FLTR>"
        "<FLTR><FFID>x</FFID><FLID> 016 </FLID></FLTR></SCHD>");
    int64_t *flids = NULL;
    size_t count = 0;
    char *error = NULL;
    assert_int_equal (mx_sis_schedule_del (msg, &flids, &count, &error), MX_BODY_OK);
    assert_null (error);
    assert_int_equal (count, 3);
    assert_int_equal (flids [0], 15);
    assert_int_equal (flids [1], 7);
    assert_int_equal (flids [2], 16);
    free (flids);
    mx_sis_destroy (&msg);

    static const struct { const char *body; const char *fragment; } bad [] = {
        { "<SCHD><FLTR><FLID>15</FLID></FLTR></SCHD>", "RECS is missing" },
        { "<SCHD><RECS>2</RECS><FLTR><FLID>15</FLID></FLTR></SCHD>", "RECS 2 but 1 FLTR" },
        { "<SCHD><RECS>1</RECS><FLTR><FLID>x</FLID></FLTR></SCHD>", "FLTR 1: FLID 'x'" },
        { "<SCHD><RECS>2</RECS><FLTR><FLID>15</FLID></FLTR><FLTR><FLID>15</FLID></FLTR></SCHD>",
          "FLTR 2: FLID 15 repeats FLTR 1" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        msg = s_decode ("SCHD", "DEL", bad [i].body);
        flids = NULL;
        mx_body_status_t status = mx_sis_schedule_del (msg, &flids, &count, &error);
        assert_null (flids);
        assert_int_equal (count, 0);
        s_expect_error (status, error, MX_BODY_PROTOCOL, bad [i].fragment);
        mx_sis_destroy (&msg);
    }
}

// ---------------------------------------------------------------------------
//  Reference lists

static mx_body_status_t
s_reference (const char *type, const char *styp, const char *body, mx_reference_t **reference,
             char **error)
{
    mx_sis_msg_t *msg = s_decode (type, styp, body);
    assert_int_equal (mx_sis_kind (msg), MX_SIS_KIND_REFERENCE);
    *reference = NULL;
    *error = NULL;
    mx_body_status_t status = mx_sis_reference (msg, reference, error);
    mx_sis_destroy (&msg);
    return status;
}

static void
test_reference (void **state)
{
    (void) state;
    mx_sis_msg_t *msg = s_sample ("GLST_DNLD_01.xml");
    mx_reference_t *reference = NULL;
    char *error = NULL;
    assert_int_equal (mx_sis_reference (msg, &reference, &error), MX_BODY_OK);
    assert_string_equal (reference->rtype, "GLST");
    assert_string_equal (reference->styp, "DNLD");
    assert_int_equal (reference->declared, 1);
    assert_int_equal (reference->count, 1);
    assert_string_equal (reference->records [0].key, "G17");
    s_assert_json (reference->records [0].value,
        "{\"GCAT\":\"D\",\"GCOD\":\"G17\",\"GNMC\":\"Gate for CA中文\",\"GTML\":\"T1\","
        "\"GTNM\":\"Gate for CA\",\"PIER\":\"C\"}");
    mx_reference_destroy (&reference);
    mx_reference_destroy (&reference);
    assert_null (reference);
    mx_sis_destroy (&msg);

    //  Repeated child → array; attributes; nested child → object; empty.
    assert_int_equal (s_reference ("SLST", "ADD",
        "<RECS>2</RECS><SLST><SCOD> S1 </SCOD><TAG>a</TAG><TAG>b</TAG><NOTE/></SLST>"
        "<SLST kind=\"x\"><SCOD>S2</SCOD><SUB><A>1</A></SUB></SLST>", &reference, &error),
        MX_BODY_OK);
    assert_int_equal (reference->count, 2);
    assert_string_equal (reference->records [0].key, "S1");
    s_assert_json (reference->records [0].value,
                   "{\"NOTE\":\"\",\"SCOD\":\"S1\",\"TAG\":[\"a\",\"b\"]}");
    assert_string_equal (reference->records [1].key, "S2");
    s_assert_json (reference->records [1].value,
                   "{\"SCOD\":\"S2\",\"SUB\":{\"A\":\"1\"},\"kind\":\"x\"}");
    mx_reference_destroy (&reference);

    assert_int_equal (s_reference ("DLYL", "DEL", "<RECS>0</RECS>", &reference, &error),
                      MX_BODY_OK);
    assert_int_equal (reference->count, 0);
    mx_reference_destroy (&reference);

    static const struct { const char *body; const char *fragment; } bad [] = {
        { "<RECS>1</RECS>", "RECS 1 but 0 SLST record(s)" },
        { "<RECS>1</RECS><SLST><SCOD>1</SCOD></SLST><SLST><SCOD>2</SCOD></SLST>",
          "RECS 1 but 2 SLST record(s)" },
        { "<RECS>x</RECS><SLST><SCOD>1</SCOD></SLST>", "RECS 'x' is not a record count" },
        { "<RECS>-1</RECS>", "RECS '-1' is not a record count" },
        { "<RECS>1</RECS><SLST><SCOD> </SCOD></SLST>", "SLST 1: key is empty" },
        { "<RECS>1</RECS><SLST>text</SLST>", "SLST 1: has no key element" },
        { "<RECS>1</RECS><SLST><SCOD><X/></SCOD></SLST>", "key holds elements" },
        { "<RECS>2</RECS><SLST><SCOD>A</SCOD></SLST><SLST><SCOD>A</SCOD></SLST>",
          "SLST 2: key 'A' repeats SLST 1" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        mx_body_status_t status = s_reference ("SLST", "UPD", bad [i].body, &reference, &error);
        assert_null (reference);
        s_expect_error (status, error, MX_BODY_PROTOCOL, bad [i].fragment);
    }

    //  The real violations.
    static const char *violations [] = { "AIRC_DNLD_01.xml", "FLTL_ADD_01.xml" };
    for (size_t i = 0; i < 2; i++) {
        msg = s_sample (violations [i]);
        mx_body_status_t status = mx_sis_reference (msg, &reference, &error);
        assert_null (reference);
        s_expect_error (status, error, MX_BODY_PROTOCOL, i == 0 ? "RECS 1 but 2 AIRC record(s)"
                                                               : "RECS 2 but 1 FLTL record(s)");
        mx_sis_destroy (&msg);
    }
}

// ---------------------------------------------------------------------------
//  GB18030

static void
test_gb18030 (void **state)
{
    (void) state;
    const char *remark = "由于机器问题延误 𠀀";
    char *body = s_format ("<FLOP><FLID>15</FLID><REMC>%s</REMC><XNOT>备注</XNOT>"
                                  "</FLOP>", remark);
    char *xml = s_message ("FLOP", "REMC", body);
    free (body);
    char *declared = s_format ("<?xml version=\"1.0\" encoding=\"GB18030\"?>\n%s",
                           strstr (xml, "<MSG"));
    free (xml);
    size_t size;
    char *gb = mx_testenv_to_gb18030 (declared, &size);
    free (declared);
    //  The bytes really are GB18030, not UTF-8 ("由" is D3 C9).
    assert_non_null (memmem (gb, size, "\xD3\xC9", 2));
    //  Bytes as the sender wrote them (the mailbox hands over UTF-8).
    mx_sis_options_t options = { .zone = s_zone, .max_bytes = S_MAX_BYTES, .raw_bytes = true };
    mx_sis_status_t status = MX_SIS_CODEC_ERROR;
    mx_sis_msg_t *msg = mx_sis_decode (gb, size, &options, &status, NULL);
    assert_non_null (msg);
    free (gb);
    mx_flop_t *flop = NULL;
    char *error = NULL;
    assert_int_equal (mx_sis_flop (msg, s_zone, &flop, &error), MX_BODY_OK);
    assert_string_equal (flop->scalars [MX_F_REMC], remark);
    s_assert_json (flop->extra, "{\"XNOT\":\"备注\"}");
    mx_flop_destroy (&flop);
    mx_sis_destroy (&msg);
}

static void
test_status_names (void **state)
{
    (void) state;
    assert_string_equal (mx_body_status_name (MX_BODY_OK), "OK");
    assert_string_equal (mx_body_status_name (MX_BODY_PROTOCOL), "PROTOCOL");
    assert_string_equal (mx_body_status_name (MX_BODY_CODEC_ERROR), "CODEC_ERROR");
    assert_string_equal (mx_body_status_name (MX_BODY_UNSUPPORTED), "UNSUPPORTED");
}

static int
s_setup (void **state)
{
    (void) state;
    char *error = NULL;
    s_zone = mx_tz_load ("Asia/Shanghai", &error);
    if (!s_zone) {
        fprintf (stderr, "Asia/Shanghai: %s\n", error);
        free (error);
        return -1;
    }
    snprintf (s_t1_ms, sizeof s_t1_ms, "%lld", (long long) s_local_ms (2021, 1, 23, 5, 35));
    return 0;
}

static int
s_teardown (void **state)
{
    (void) state;
    mx_tz_destroy (&s_zone);
    return 0;
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_parse_datetime),
        cmocka_unit_test (test_every_sample),
        cmocka_unit_test (test_sample_schedule),
        cmocka_unit_test (test_sample_flops),
        cmocka_unit_test (test_every_subtype),
        cmocka_unit_test (test_set_records),
        cmocka_unit_test (test_port),
        cmocka_unit_test (test_extra),
        cmocka_unit_test (test_schedule_layout),
        cmocka_unit_test (test_unsupported),
        cmocka_unit_test (test_fdel),
        cmocka_unit_test (test_flop_protocol),
        cmocka_unit_test (test_codec_errors),
        cmocka_unit_test (test_schedule_fields),
        cmocka_unit_test (test_schedule_protocol),
        cmocka_unit_test (test_schedule_del),
        cmocka_unit_test (test_reference),
        cmocka_unit_test (test_gb18030),
        cmocka_unit_test (test_status_names),
    };
    return cmocka_run_group_tests (tests, s_setup, s_teardown);
}
