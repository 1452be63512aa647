/*  Unit tests: the compat entry's request checks (mx_compat_body).  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_compat_body.h"
#include "mx_utf8.h"

//  Refused with status, one printable line containing words. (why_p, not
//  *why_p: the check in the same call sets it.)
static void
s_refused (unsigned int got, char **why_p, unsigned int status, const char *words)
{
    char *why = *why_p;
    *why_p = NULL;
    if (got != status)
        fail_msg ("expected %u, got %u (%s)", status, got, why ? why : "no reason");
    assert_non_null (why);
    for (const char *scan = why; *scan; scan++)
        if ((unsigned char) *scan < 0x20 || (unsigned char) *scan >= 0x7f)
            fail_msg ("reason is not one printable line: %s", why);
    if (!strstr (why, words))
        fail_msg ("'%s' not in '%s'", words, why);
    free (why);
}

static void
test_media_types (void **state)
{
    (void) state;
    const char *accepted [] = {
        "application/xml", "text/xml", "text/plain", "TEXT/XML; Charset=\"UTF-8\"",
        "application/xml;charset=utf-8", "  text/xml  ;  charset = utf-8 ", "text/xml; boundary=x",
        "text/xml; charset", "text/x-sis"
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted [0]; i++) {
        char *why = NULL;
        if (mx_compat_body_check_media_type (accepted [i], &why))
            fail_msg ("'%s' refused: %s", accepted [i], why);
        assert_null (why);
    }
    char *why = NULL;
    s_refused (mx_compat_body_check_media_type (NULL, &why), &why, 415, "missing Content-Type");
    s_refused (mx_compat_body_check_media_type ("", &why), &why, 415, "missing Content-Type");
    s_refused (mx_compat_body_check_media_type ("application/json", &why), &why, 415,
               "unsupported media type 'application/json'");
    s_refused (mx_compat_body_check_media_type ("text/", &why), &why, 415, "unsupported media type");
    s_refused (mx_compat_body_check_media_type ("text/x/y", &why), &why, 415, "unsupported media type");
    s_refused (mx_compat_body_check_media_type ("textual/xml", &why), &why, 415, "textual/xml");
    s_refused (mx_compat_body_check_media_type ("application/xmlx", &why), &why, 415, "xmlx");
    s_refused (mx_compat_body_check_media_type ("text/xml; charset=iso-8859-1", &why), &why, 415,
               "unsupported charset 'iso-8859-1'");
    s_refused (mx_compat_body_check_media_type ("text/xml; charset=gb18030", &why), &why, 415,
               "charset 'gb18030': the body must be utf-8");
    s_refused (mx_compat_body_check_media_type ("text/xml; charset=\"\"", &why), &why, 415,
               "charset ''");
    //  Hostile header values: quoted as one printable, bounded line.
    s_refused (mx_compat_body_check_media_type ("\xff\xfe/\x01xml", &why), &why, 415, "'\x3f\x3f/?xml'");
    char *long_type = malloc (10001);
    memset (long_type, 'a', 10000);
    long_type [10000] = '\0';
    unsigned int status = mx_compat_body_check_media_type (long_type, &why);
    assert_int_equal (status, 415);
    assert_true (strlen (why) < 200);
    free (why);
    memcpy (long_type, "text/xml;charset=", 17);
    status = mx_compat_body_check_media_type (long_type, &why);
    assert_int_equal (status, 415);
    assert_true (strlen (why) < 200);
    free (why);
    free (long_type);
}

static void
test_length (void **state)
{
    (void) state;
    size_t expected = 99;
    char *why = NULL;
    assert_int_equal (mx_compat_body_check_length (NULL, 1000, &expected, &why), 0);
    assert_int_equal (expected, 0);
    assert_int_equal (mx_compat_body_check_length ("1000", 1000, &expected, &why), 0);
    assert_int_equal (expected, 1000);
    assert_int_equal (mx_compat_body_check_length (" 0 ", 1000, &expected, &why), 0);
    assert_int_equal (expected, 0);
    assert_null (why);
    s_refused (mx_compat_body_check_length ("1001", 1000, &expected, &why), &why, 413,
               "body of 1001 bytes is larger than the limit of 1000 bytes (msgx.http.max-body-bytes)");
    assert_int_equal (expected, 0);
    //  Beyond size_t: still 413, never a wrap-around.
    s_refused (mx_compat_body_check_length ("99999999999999999999999999", 1000, &expected, &why),
               &why, 413, "limit of 1000 bytes");
    s_refused (mx_compat_body_check_length ("18446744073709551616", SIZE_MAX, &expected, &why),
               &why, 413, "larger than the limit");
    s_refused (mx_compat_body_check_length ("-1", 1000, &expected, &why), &why, 400, "not a number");
    s_refused (mx_compat_body_check_length ("", 1000, &expected, &why), &why, 400, "not a number");
    s_refused (mx_compat_body_check_length ("12abc", 1000, &expected, &why), &why, 400, "'12abc'");
}

static void
test_utf8 (void **state)
{
    (void) state;
    struct {
        const char *text;
        size_t invalid_at;          //  SIZE_MAX: valid
    } cases [] = {
        { "", SIZE_MAX },
        { "plain ascii", SIZE_MAX },
        { "\xe4\xba\xba\xe5\x91\x98", SIZE_MAX },           //  人员
        { "\xf0\x9f\x98\x80", SIZE_MAX },                   //  U+1F600
        { "\xf4\x8f\xbf\xbf", SIZE_MAX },                   //  U+10FFFF
        { "\xed\x9f\xbf", SIZE_MAX },                       //  U+D7FF
        { "a\xc3\x28", 1 },                                 //  broken continuation
        { "ab\xc0\xaf", 2 },                                //  overlong '/'
        { "\xe0\x80\xaf", 0 },                              //  overlong, 3 bytes
        { "\xf0\x80\x80\xaf", 0 },                          //  overlong, 4 bytes
        { "\xed\xa0\x80", 0 },                              //  surrogate U+D800
        { "\xf4\x90\x80\x80", 0 },                          //  above U+10FFFF
        { "\xf5\x80\x80\x80", 0 },                          //  no such lead byte
        { "x\x80", 1 },                                     //  lone continuation
        { "<a/>\xe8\x88", 4 },                              //  cut at the end
        { "\xff\xfe<\0", 0 },                               //  UTF-16 byte order mark
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        const char *text = cases [i].text;
        size_t size = strlen (text);
        size_t want = cases [i].invalid_at == SIZE_MAX ? size : cases [i].invalid_at;
        size_t got = mx_utf8_invalid_at ((const unsigned char *) text, size);
        if (got != want)
            fail_msg ("case %zu: invalid at %zu, expected %zu", i, got, want);
    }
    //  A NUL byte is valid UTF-8 (U+0000); the XML decoder refuses it later.
    assert_int_equal (mx_utf8_invalid_at ((const unsigned char *) "a\0b", 3), 3);
}

static void
test_body (void **state)
{
    (void) state;
    char *why = NULL;
    assert_int_equal (mx_compat_body_check ("<MSG/>", 6, 1000, &why), 0);
    assert_null (why);
    assert_int_equal (mx_compat_body_check ("<MSG/>", 6, 6, &why), 0);
    s_refused (mx_compat_body_check ("", 0, 1000, &why), &why, 400, "empty body");
    s_refused (mx_compat_body_check (NULL, 0, 1000, &why), &why, 400, "empty body");
    s_refused (mx_compat_body_check ("<MSG/>", 6, 5, &why), &why, 413,
               "body larger than the limit of 5 bytes (msgx.http.max-body-bytes)");
    s_refused (mx_compat_body_check ("<a>\xc3\x28</a>", 8, 1000, &why), &why, 400,
               "body is not valid UTF-8 (byte 3 of 8)");
    s_refused (mx_compat_body_check ("<a>\0</a>", 8, 1000, &why), &why, 400,
               "body holds a NUL byte (byte 3 of 8)");
}

static void
test_bearer (void **state)
{
    (void) state;
    const char *token = "s3cret.TOKEN-42";
    size_t length = strlen (token);
    const char *good [] = { "Bearer s3cret.TOKEN-42", "bearer s3cret.TOKEN-42", "BEARER   s3cret.TOKEN-42 " };
    for (size_t i = 0; i < sizeof good / sizeof good [0]; i++)
        if (!mx_compat_body_bearer_ok (good [i], token, length))
            fail_msg ("'%s' refused", good [i]);
    const char *bad [] = { NULL, "", "Bearer", "Bearer ", "Bearer s3cret.TOKEN-4", "Bearer s3cret.TOKEN-421",
                           "Bearer S3CRET.TOKEN-42", "Basic s3cret.TOKEN-42", "s3cret.TOKEN-42",
                           "Bearers3cret.TOKEN-42", "Bearer s3cret.TOKEN-42 extra" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        if (mx_compat_body_bearer_ok (bad [i], token, length))
            fail_msg ("'%s' accepted", bad [i] ? bad [i] : "(no header)");
    //  No token configured accepts nothing.
    assert_false (mx_compat_body_bearer_ok ("Bearer ", "", 0));
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_media_types),
        cmocka_unit_test (test_length),
        cmocka_unit_test (test_utf8),
        cmocka_unit_test (test_body),
        cmocka_unit_test (test_bearer),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
