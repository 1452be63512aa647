/*  fuzz_compat_body - the compat entry's checks (mx_compat_body) on
    arbitrary requests, in the order the http actor makes them.

    Input: "<Content-Type>\n<Content-Length>\n<body>". Without a first
    newline there is no Content-Type header, without a second no
    Content-Length; header values end at a NUL, as MHD hands them over.

    Checked besides memory safety: a refusal is 400, 413 or 415 with one
    printable line; an accepted length is within the limit; the UTF-8 check
    agrees with an independent validator (the well-formed byte sequences of
    the Unicode standard, table 3-7).
*/
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mx_compat_body.h"
#include "mx_utf8.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

//  Small, so that fuzzed bodies reach the limit.
#define S_MAX_BODY ((size_t) 4096)

static void
s_check_refusal (unsigned int status, char *why, unsigned int allowed)
{
    if (status == 0) {
        if (why)
            abort ();
        return;
    }
    if (status != allowed && !(allowed == 0 && (status == MX_COMPAT_BODY_BAD_REQUEST
                                              || status == MX_COMPAT_BODY_TOO_LARGE)))
        abort ();
    if (!why || !*why || strlen (why) > 512)
        abort ();
    for (const char *scan = why; *scan; scan++)
        if ((unsigned char) *scan < 0x20 || (unsigned char) *scan >= 0x7f)
            abort ();
    free (why);
}

//  Unicode 3-7, byte range by byte range; independent of the code under
//  test on purpose.
static size_t
s_reference_utf8 (const unsigned char *text, size_t size)
{
    size_t at = 0;
    while (at < size) {
        unsigned char b0 = text [at];
        size_t length;
        unsigned char lo = 0x80, hi = 0xBF;
        if (b0 <= 0x7F) { at++; continue; }
        else if (b0 >= 0xC2 && b0 <= 0xDF) length = 2;
        else if (b0 == 0xE0) { length = 3; lo = 0xA0; }
        else if (b0 >= 0xE1 && b0 <= 0xEC) length = 3;
        else if (b0 == 0xED) { length = 3; hi = 0x9F; }
        else if (b0 >= 0xEE && b0 <= 0xEF) length = 3;
        else if (b0 == 0xF0) { length = 4; lo = 0x90; }
        else if (b0 >= 0xF1 && b0 <= 0xF3) length = 4;
        else if (b0 == 0xF4) { length = 4; hi = 0x8F; }
        else return at;
        if (size - at < length)
            return at;
        if (text [at + 1] < lo || text [at + 1] > hi)
            return at;
        for (size_t k = 2; k < length; k++)
            if (text [at + k] < 0x80 || text [at + k] > 0xBF)
                return at;
        at += length;
    }
    return size;
}

//  Next line of [*at, end) as a NUL-terminated copy, or NULL when there is
//  no newline left (the rest is then the body).
static char *
s_line (const uint8_t **at, const uint8_t *end)
{
    const uint8_t *newline = memchr (*at, '\n', (size_t) (end - *at));
    if (!newline)
        return NULL;
    char *line = strndup ((const char *) *at, (size_t) (newline - *at));
    if (!line)
        abort ();
    *at = newline + 1;
    return line;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const uint8_t *at = data;
    const uint8_t *end = data + size;
    char *type = s_line (&at, end);
    char *length = type ? s_line (&at, end) : NULL;
    const char *body = (const char *) at;
    size_t body_size = (size_t) (end - at);

    //  UTF-8 against the reference, on the whole input.
    if (mx_utf8_invalid_at (data, size) != s_reference_utf8 (data, size))
        abort ();

    char *why = NULL;
    unsigned int status = mx_compat_body_check_media_type (type, &why);
    s_check_refusal (status, why, MX_COMPAT_BODY_BAD_MEDIA_TYPE);
    if (!type && status == 0)
        abort ();                   //  a missing Content-Type is never fine

    why = NULL;
    size_t expected = 0;
    status = mx_compat_body_check_length (length, S_MAX_BODY, &expected, &why);
    s_check_refusal (status, why, 0);
    if (status == 0 && expected > S_MAX_BODY)
        abort ();
    if (!length && (status != 0 || expected != 0))
        abort ();

    why = NULL;
    status = mx_compat_body_check (body, body_size, S_MAX_BODY, &why);
    bool valid = s_reference_utf8 ((const unsigned char *) body, body_size) == body_size;
    if ((status == 0) != (body_size > 0 && body_size <= S_MAX_BODY && valid))
        abort ();
    s_check_refusal (status, why, 0);
    free (type);
    free (length);
    return 0;
}
