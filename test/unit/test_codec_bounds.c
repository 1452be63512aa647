/*  Unit tests: the codec's shape bounds (msgx.codec.max-*, domain/mx_xml_shape)
    on hostile shapes of up to 16 MiB, at the edge of each bound, and on
    real messages. Speed is bench_codec's to print; here every shape must
    be decided, and a bound must refuse at the same byte whatever follows
    it (the cost of a refusal does not grow with the message).  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_gen.h"
#include "mx_metrics.h"
#include "mx_shape.h"
#include "mx_sis.h"
#include "mx_tz.h"
#include "mx_xml_shape.h"

static mx_tz_t *s_zone;

static int
s_group_setup (void **state)
{
    (void) state;
    s_zone = mx_tz_load ("Asia/Shanghai", NULL);
    return s_zone ? 0 : -1;
}

static int
s_group_teardown (void **state)
{
    (void) state;
    mx_tz_destroy (&s_zone);
    return 0;
}

static mx_sis_options_t
s_options (void)
{
    return (mx_sis_options_t) { .zone = s_zone, .max_bytes = 32 << 20 };
}

//  Decodes; returns the status and *error (malloc'd, or NULL when accepted).
static mx_sis_status_t
s_decide (const char *xml, size_t size, const mx_sis_options_t *options, char **error)
{
    mx_sis_status_t status = MX_SIS_OK;
    *error = NULL;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, options, &status, error);
    mx_sis_destroy (&msg);
    return status;
}

//  "(line L, byte B)" of a bound's refusal: B.
static size_t
s_refused_at (const char *error)
{
    const char *at = strstr (error, ", byte ");
    assert_non_null (at);
    return (size_t) strtoull (at + strlen (", byte "), NULL, 10);
}

//  Which bound each shape breaks under the defaults; NULL: accepted, or
//  refused by libxml2's own ceilings (then "not well-formed XML").
static const char *
s_expected_bound (mx_shape_kind_t kind)
{
    switch (kind) {
        case MX_SHAPE_DEEP:       return "msgx.codec.max-depth (32)";
        case MX_SHAPE_WIDE:       return "msgx.codec.max-attributes (64)";
        case MX_SHAPE_PIECES:     return "msgx.codec.max-text-pieces (64)";
        case MX_SHAPE_NAME:       return "msgx.codec.max-name-length (256)";
        case MX_SHAPE_NAMESPACES: return "msgx.codec.max-namespaces (32)";
        case MX_SHAPE_DISTINCT:   return "msgx.codec.max-distinct-names (2048)";
        default:                  return NULL;
    }
}

//  Every shape at 1, 4 and 16 MiB is decided; a bound refuses at the same
//  byte at every size.
static void
test_every_shape_is_decided (void **state)
{
    (void) state;
    mx_sis_options_t options = s_options ();
    const size_t sizes [] = { 1 << 20, 4 << 20, 16 << 20 };
    for (int kind = 0; kind < MX_SHAPE_COUNT; kind++) {
        size_t first_at = 0;
        for (size_t i = 0; i < sizeof sizes / sizeof sizes [0]; i++) {
            size_t size;
            char *xml = mx_shape_make ((mx_shape_kind_t) kind, sizes [i], &size);
            assert_non_null (xml);
            assert_int_equal (size, sizes [i]);
            char *error = NULL;
            mx_sis_status_t status = s_decide (xml, size, &options, &error);
            free (xml);
            const char *bound = s_expected_bound ((mx_shape_kind_t) kind);
            print_message ("%-10s %8zu KiB: %s %.100s\n", mx_shape_name (kind), sizes [i] >> 10,
                           mx_sis_status_name (status), error ? error : "");
            if (bound) {
                assert_int_equal (status, MX_SIS_MALFORMED);
                if (!strstr (error, bound))
                    fail_msg ("%s: '%s' does not name %s", mx_shape_name (kind), error, bound);
                size_t at = s_refused_at (error);
                assert_true (at < 64 * 1024);
                if (i == 0)
                    first_at = at;
                assert_int_equal (at, first_at);
            }
            else
                assert_true (status == MX_SIS_OK || (status == MX_SIS_MALFORMED && error));
            free (error);
        }
    }
}

//  A shape refused by a bound set to what it holds plus one is accepted at
//  the bound itself; each refusal names the bound and counts it.
static void
test_each_bound_at_its_edge (void **state)
{
    (void) state;
    struct {
        const char *xml;
        mx_xml_bound_t bound;
        size_t holds;               //  what the message has of it
    } cases [] = {
        { "<MSG a=\"1\" b=\"2\" c=\"3\"/>", MX_XML_BOUND_attributes, 3 },
        { "<MSG><A/><B>x</B></MSG>", MX_XML_BOUND_nodes, 4 },
        { "<MSG><A><B/></A></MSG>", MX_XML_BOUND_depth, 3 },
        { "<MSG>a<!--1-->b<?p?>c</MSG>", MX_XML_BOUND_text_pieces, 5 },
        { "<MSG><ABCDEFGH/></MSG>", MX_XML_BOUND_name_length, 8 },
        { "<MSG xmlns=\"u\" xmlns:a=\"v\"><a:B xmlns:b=\"w\"/></MSG>",
          MX_XML_BOUND_namespaces, 3 },
        { "<MSG><A/><B C=\"1\"/><A/></MSG>", MX_XML_BOUND_distinct_names, 4 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        mx_xml_shape_t limits = { 0 }, seen;
        size_t size = strlen (cases [i].xml);
        assert_int_equal (mx_xml_shape_check (cases [i].xml, size, false, &limits, &seen, NULL),
                          MX_XML_BOUND_NONE);
        mx_sis_options_t options = s_options ();
        switch (cases [i].bound) {
#define S_SET(member, key, doc) \
            case MX_XML_BOUND_##member: \
                assert_int_equal (seen.member, cases [i].holds); \
                options.limits.member = cases [i].holds; \
                break;
            MX_XML_BOUNDS (S_SET)
#undef S_SET
            default:
                fail ();
        }
        //  At the bound: past the shape check (then refused for want of META).
        char *error = NULL;
        assert_int_equal (s_decide (cases [i].xml, size, &options, &error), MX_SIS_MALFORMED);
        if (!strstr (error, "META is missing"))
            fail_msg ("case %zu at its bound: %s", i, error);
        free (error);
        //  One below: refused, naming the key.
        switch (cases [i].bound) {
#define S_LOWER(member, key, doc) \
            case MX_XML_BOUND_##member: options.limits.member--; break;
            MX_XML_BOUNDS (S_LOWER)
#undef S_LOWER
            default:
                fail ();
        }
        char labels [64];
        snprintf (labels, sizeof labels, "bound=%s", mx_xml_bound_key (cases [i].bound));
        mx_metrics_counter_t *refused = mx_metrics_counter ("msgx_codec_refused_total", "", labels);
        uint64_t before = mx_metrics_counter_value (refused);
        assert_int_equal (s_decide (cases [i].xml, size, &options, &error), MX_SIS_MALFORMED);
        char key [64];
        snprintf (key, sizeof key, "msgx.codec.%s (%zu) exceeded", mx_xml_bound_key (cases [i].bound),
                  cases [i].holds - 1);
        if (!strstr (error, key))
            fail_msg ("case %zu: '%s' does not name %s", i, error, key);
        print_message ("%s\n", error);
        free (error);
        assert_int_equal (mx_metrics_counter_value (refused), before + 1);
    }
}

static void
s_within_margin (const char *what, const mx_xml_shape_t *seen, size_t margin)
{
    mx_sis_options_t defaults = s_options ();
    mx_config_t *config = mx_config_new_defaults ();
    defaults.limits = mx_sis_limits (config);
    mx_config_destroy (&config);
#define S_MARGIN(member, key, doc) \
    if (seen->member * margin > defaults.limits.member) \
        fail_msg ("%s: %s %zu is within %zu times of the default %zu", what, key, \
                  seen->member, margin, defaults.limits.member);
    MX_XML_BOUNDS (S_MARGIN)
#undef S_MARGIN
}

//  The defaults stand at least 4 times above every real sample and a
//  2,000-flight DNLD in one message (docs/reliability.md).
static void
test_real_messages_are_far_below_the_defaults (void **state)
{
    (void) state;
    const char *source = getenv ("MX_SOURCE_DIR");
    if (!source)
        fail_msg ("MX_SOURCE_DIR is not set (run through ctest)");
    char folder [1024];
    snprintf (folder, sizeof folder, "%s/test/data/sis", source);
    DIR *dir = opendir (folder);
    assert_non_null (dir);
    mx_xml_shape_t none = { 0 };
    size_t files = 0;
    for (struct dirent *entry; (entry = readdir (dir)); ) {
        if (entry->d_name [0] == '.')
            continue;
        char path [2048];
        snprintf (path, sizeof path, "%s/%s", folder, entry->d_name);
        FILE *file = fopen (path, "rb");
        assert_non_null (file);
        static char text [1 << 20];
        size_t size = fread (text, 1, sizeof text, file);
        fclose (file);
        mx_xml_shape_t seen;
        assert_int_equal (mx_xml_shape_check (text, size, false, &none, &seen, NULL),
                          MX_XML_BOUND_NONE);
        s_within_margin (entry->d_name, &seen, 4);
        files++;
    }
    closedir (dir);
    assert_true (files > 100);

    mx_gen_options_t gen_options;
    mx_gen_options_init (&gen_options);
    gen_options.flights = 2000;
    gen_options.per_message = 0;
    gen_options.updates = 0;
    mx_gen_t *gen = mx_gen_new (&gen_options);
    assert_non_null (gen);
    mx_gen_kind_t kind;
    char *dnld = mx_gen_next (gen, &kind);
    assert_non_null (dnld);
    mx_xml_shape_t seen;
    assert_int_equal (mx_xml_shape_check (dnld, strlen (dnld), false, &none, &seen, NULL),
                      MX_XML_BOUND_NONE);
    print_message ("2,000-flight DNLD: %zu bytes, %zu nodes\n", strlen (dnld), seen.nodes);
    s_within_margin ("2,000-flight DNLD", &seen, 4);
    mx_sis_options_t options = s_options ();
    char *error = NULL;
    assert_int_equal (s_decide (dnld, strlen (dnld), &options, &error), MX_SIS_OK);
    free (dnld);
    mx_gen_destroy (&gen);
}

//  Where the scan cannot go on, libxml2 refuses at that byte and stops
//  there: nothing after it is parsed, whatever it holds.
static void
test_the_parser_stops_where_the_scan_stopped (void **state)
{
    (void) state;
    size_t size;
    char *wide = mx_shape_make (MX_SHAPE_WIDE, 4 << 20, &size);
    assert_non_null (wide);
    //  "<MSG><<W a0=..." : a '<' that starts nothing, then 4 MiB of attributes.
    char *at = strstr (wide, "<W ");
    assert_non_null (at);
    char *xml = malloc (size + 8);
    assert_non_null (xml);
    int head = snprintf (xml, size + 8, "<MSG><");
    memcpy (xml + head, at, size - (size_t) (at - wide));
    size_t length = (size_t) head + size - (size_t) (at - wide);
    free (wide);
    mx_xml_shape_t limits = { .attributes = 64 }, seen;
    assert_int_equal (mx_xml_shape_check (xml, length, false, &limits, &seen, NULL),
                      MX_XML_BOUND_NONE);
    assert_int_equal (seen.attributes, 0);
    mx_sis_options_t options = s_options ();
    char *error = NULL;
    assert_int_equal (s_decide (xml, length, &options, &error), MX_SIS_MALFORMED);
    if (!strstr (error, "not well-formed XML") || !strstr (error, "line 1"))
        fail_msg ("%s", error);
    free (error);
    free (xml);
}

static void
test_ebcdic_is_refused (void **state)
{
    (void) state;
    //  "<?xml" in EBCDIC (code page 037), as libxml2 would detect it.
    const char ebcdic [] = "\x4C\x6F\xA7\x94\x93\x40\xA5\x85\x99\xA2\x89\x96\x95";
    mx_sis_options_t options = s_options ();
    char *error = NULL;
    assert_int_equal (s_decide (ebcdic, sizeof ebcdic - 1, &options, &error), MX_SIS_CODEC_ERROR);
    if (!strstr (error, "EBCDIC"))
        fail_msg ("%s", error);
    free (error);
}

//  In GB18030 bytes a character may end in ']': "]]>" inside one is no end
//  of a CDATA section, and the scan must not stop there.
static void
test_gb18030_trail_bytes_are_not_markup (void **state)
{
    (void) state;
    //  0x81 0x5D is one GB18030 character whose second byte is ']'.
    const char xml [] =
        "<?xml version=\"1.0\" encoding=\"GB18030\"?>"
        "<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20210123053500</DTTM>"
        "<TYPE>FLOP</TYPE><STYP>REMC</STYP></META><FLOP><FLID>1</FLID>"
        "<REMC><![CDATA[\x81\x5D]><Z a=\"1\" b=\"2\"/>]]></REMC><A1 b=\"1\"/></FLOP></MSG>";
    mx_xml_shape_t limits = { 0 }, seen;
    assert_int_equal (mx_xml_shape_check (xml, sizeof xml - 1, true, &limits, &seen, NULL),
                      MX_XML_BOUND_NONE);
    //  <Z a b> is text; <A1 b> after the section is an element.
    assert_int_equal (seen.attributes, 1);
    assert_int_equal (seen.depth, 3);
    mx_sis_options_t options = s_options ();
    options.raw_bytes = true;
    char *error = NULL;
    mx_sis_status_t status = s_decide (xml, sizeof xml - 1, &options, &error);
    if (status != MX_SIS_OK)
        fail_msg ("%s", error ? error : "?");
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_every_shape_is_decided),
        cmocka_unit_test (test_each_bound_at_its_edge),
        cmocka_unit_test (test_real_messages_are_far_below_the_defaults),
        cmocka_unit_test (test_the_parser_stops_where_the_scan_stopped),
        cmocka_unit_test (test_ebcdic_is_refused),
        cmocka_unit_test (test_gb18030_trail_bytes_are_not_markup),
    };
    return cmocka_run_group_tests (tests, s_group_setup, s_group_teardown);
}
