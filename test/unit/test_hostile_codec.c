/*  Unit tests: what the fuzz targets found or must never find in the SIS
    codec's refusals. Every error line is stored in PostgreSQL text columns
    and logged as JSON, so it must be one line of valid UTF-8 whatever
    bytes the message held.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_utf8.h"
#include "mx_sis.h"
#include "mx_tz.h"

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

//  Refused with status; the error line is UTF-8, one line, and holds words.
static void
s_refused_utf8 (const char *xml, size_t size, mx_sis_status_t expected, const char *words)
{
    mx_sis_options_t options = { .zone = s_zone, .max_bytes = 1024 * 1024 };
    mx_sis_status_t status = MX_SIS_OK;
    char *error = NULL;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, &options, &status, &error);
    assert_null (msg);
    assert_int_equal (status, expected);
    assert_non_null (error);
    size_t length = strlen (error);
    assert_null (strchr (error, '\n'));
    if (!strstr (error, words))
        fail_msg ("'%s' not in '%s'", words, error);
    size_t bad = mx_utf8_invalid_at ((const unsigned char *) error, length);
    //  Copied before failing: a failed test must not also leak.
    char line [512];
    snprintf (line, sizeof line, "%s", error);
    free (error);
    if (bad != length)
        fail_msg ("error line is not UTF-8 at byte %zu: %s", bad, line);
}

static const char s_meta [] =
    "<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20210123053500</DTTM>"
    "<TYPE>FLOP</TYPE><STYP>REMC</STYP></META><FLOP><FLID>1</FLID><REMC>x</REMC></FLOP></MSG>";

//  Found by fuzz_sis_decode: the name of an unsupported encoding is
//  quoted from the raw bytes of the prolog (domain/mx_sis.c,
//  s_check_prolog), so a byte like 0x87 reaches the error line, which
//  PostgreSQL then refuses to store ("invalid byte sequence for encoding
//  UTF8").
static void
test_unsupported_encoding_name_is_quoted_as_utf8 (void **state)
{
    (void) state;
    const char *names [] = { "UTF-\x87", "\xff\xfe", "GB\xc8\xcb", "x\xe4\xba" };
    for (size_t i = 0; i < sizeof names / sizeof names [0]; i++) {
        char xml [1024];
        snprintf (xml, sizeof xml, "<?xml version=\"1.0\" encoding=\"%s\"?>%s", names [i], s_meta);
        s_refused_utf8 (xml, strlen (xml), MX_SIS_CODEC_ERROR, "is not supported");
    }
}

//  Found by fuzz_sis_decode: libxml2's message quotes the input around the
//  error ("Comment not terminated <!--..."), and mx_sis.c keeps the first
//  159 bytes of it (s_keep_error), which may end in the middle of a
//  character.
static void
test_libxml2_message_is_not_cut_mid_character (void **state)
{
    (void) state;
    char text [1024] = "";
    for (int i = 0; i < 200; i++)
        strcat (text, i % 2 ? "\xe4\xba\xba" : "\xe5\x91\x98" "a");
    for (int shift = 0; shift < 4; shift++) {
        char xml [2048];
        snprintf (xml, sizeof xml, "<MSG><META><SNDR>%.*s</SNDR></META><!--%s", shift, "AODB", text);
        s_refused_utf8 (xml, strlen (xml), MX_SIS_MALFORMED, "not well-formed XML");
    }
}

//  The other refusals that quote input: values decoded by libxml2 (UTF-8
//  already, cut on a character boundary), and bytes libxml2 rejects.
static void
test_quoted_values_stay_utf8 (void **state)
{
    (void) state;
    //  A long SNDR of 3-byte characters: the excerpt is cut, never mid-character.
    char sndr [400] = "";
    for (int i = 0; i < 40; i++)
        strcat (sndr, "\xe4\xba\xba");
    char *xml = NULL;
    assert_true (asprintf (&xml, "<MSG><META><SNDR>%s</SNDR><SEQN>1</SEQN>"
                           "<DTTM>20210123053500</DTTM><TYPE>FLOP</TYPE><STYP>REMC</STYP>"
                           "</META></MSG>", sndr) > 0);
    s_refused_utf8 (xml, strlen (xml), MX_SIS_MALFORMED, "META/SNDR");
    free (xml);
    //  Invalid UTF-8 in a value: libxml2 refuses it and says where.
    const char broken [] = "<MSG><META><SNDR>AO\xff\xfe</SNDR></META></MSG>";
    s_refused_utf8 (broken, sizeof broken - 1, MX_SIS_MALFORMED, "not well-formed XML");
    //  A root element named in another script.
    const char root [] = "<\xe6\xb6\x88\xe6\x81\xaf/>";
    s_refused_utf8 (root, sizeof root - 1, MX_SIS_MALFORMED, "expected <MSG>");
    //  Invalid GB18030 bytes.
    char *gb = NULL;
    assert_true (asprintf (&gb, "<?xml version=\"1.0\" encoding=\"GB18030\"?>"
                           "<MSG><META><SNDR>\x81\x20</SNDR></META></MSG>") > 0);
    s_refused_utf8 (gb, strlen (gb), MX_SIS_MALFORMED, "not well-formed XML");
    free (gb);
}

//  Deep nesting: the depth bound (msgx.codec.max-depth) refuses it before
//  libxml2 sees it; the decoder never recurses over input depth.
static void
test_deep_nesting_is_refused (void **state)
{
    (void) state;
    size_t depth = 100000;
    size_t size = strlen (s_meta) + depth * 7 + 64;
    char *xml = malloc (size);
    assert_non_null (xml);
    char *at = xml;
    at += sprintf (at, "%.*s", (int) (strstr (s_meta, "<FLOP>") - s_meta), s_meta);
    for (size_t i = 0; i < depth; i++)
        at += sprintf (at, "<X>");
    for (size_t i = 0; i < depth; i++)
        at += sprintf (at, "</X>");
    at += sprintf (at, "</MSG>");
    s_refused_utf8 (xml, (size_t) (at - xml), MX_SIS_MALFORMED, "msgx.codec.max-depth");
    free (xml);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_unsupported_encoding_name_is_quoted_as_utf8),
        cmocka_unit_test (test_libxml2_message_is_not_cut_mid_character),
        cmocka_unit_test (test_quoted_values_stay_utf8),
        cmocka_unit_test (test_deep_nesting_is_refused),
    };
    return cmocka_run_group_tests (tests, s_group_setup, s_group_teardown);
}
