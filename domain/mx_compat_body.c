/*  mx_compat_body - see mx_compat_body.h.  */
#include "mx_compat_body.h"
#include "mx_utf8.h"

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  Longest excerpt of a header value quoted in an answer.
#define S_QUOTE_MAX 64

static unsigned int
s_refuse (unsigned int status, char **why, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

static unsigned int
s_refuse (unsigned int status, char **why, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *text = NULL;
    if (vasprintf (&text, fmt, args) < 0)
        text = NULL;
    va_end (args);
    if (!text)
        text = strdup ("refused (out of memory formatting the reason)");
    assert (text);
    *why = text;
    return status;
}

//  [start, start + length) as printable ASCII, at most S_QUOTE_MAX bytes:
//  the answer is one text line whatever the client sent.
static const char *
s_quote (const char *start, size_t length, char *buf, size_t size)
{
    assert (size > S_QUOTE_MAX);
    if (length > S_QUOTE_MAX)
        length = S_QUOTE_MAX;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char) start [i];
        buf [i] = c < 0x20 || c >= 0x7f ? '?' : (char) c;
    }
    buf [length] = '\0';
    return buf;
}

static bool
s_is_blank (char c)
{
    return c == ' ' || c == '\t';
}

//  [*start, *end) without surrounding blanks.
static void
s_trim (const char **start, const char **end)
{
    while (*start < *end && s_is_blank (**start))
        (*start)++;
    while (*end > *start && s_is_blank ((*end) [-1]))
        (*end)--;
}

unsigned int
mx_compat_body_check_media_type (const char *value, char **why)
{
    assert (why);
    char quoted [S_QUOTE_MAX + 1];
    if (!value || !*value)
        return s_refuse (MX_COMPAT_BODY_BAD_MEDIA_TYPE, why,
                         "missing Content-Type: send the raw XML as application/xml or text/xml,"
                         " charset utf-8");
    const char *type = value;
    const char *type_end = strchr (value, ';');
    if (!type_end)
        type_end = value + strlen (value);
    s_trim (&type, &type_end);
    size_t type_length = (size_t) (type_end - type);
    bool xml = type_length == 15 && strncasecmp (type, "application/xml", 15) == 0;
    bool text = type_length > 5 && strncasecmp (type, "text/", 5) == 0;
    for (const char *scan = type + 5; text && scan < type_end; scan++)
        text = *scan != '/' && !s_is_blank (*scan);
    if (!xml && !text)
        return s_refuse (MX_COMPAT_BODY_BAD_MEDIA_TYPE, why,
                         "unsupported media type '%s': send the raw XML as application/xml"
                         " or text/*", s_quote (type, type_length, quoted, sizeof quoted));
    //  Parameters: only charset matters, and only utf-8 is stored as is.
    const char *next = *type_end == ';' ? type_end + 1 : NULL;
    while (next) {
        const char *name = next;
        const char *end = strchr (next, ';');
        next = end ? end + 1 : NULL;
        if (!end)
            end = name + strlen (name);
        const char *equals = memchr (name, '=', (size_t) (end - name));
        if (!equals)
            continue;
        const char *name_end = equals;
        s_trim (&name, &name_end);
        if (name_end - name != 7 || strncasecmp (name, "charset", 7) != 0)
            continue;
        const char *charset = equals + 1;
        s_trim (&charset, &end);
        if (end - charset >= 2 && *charset == '"' && end [-1] == '"') {
            charset++;
            end--;
        }
        size_t length = (size_t) (end - charset);
        if (length != 5 || strncasecmp (charset, "utf-8", 5) != 0)
            return s_refuse (MX_COMPAT_BODY_BAD_MEDIA_TYPE, why,
                             "unsupported charset '%s': the body must be utf-8",
                             s_quote (charset, length, quoted, sizeof quoted));
    }
    return 0;
}

unsigned int
mx_compat_body_check_length (const char *value, size_t max_body, size_t *expected, char **why)
{
    assert (expected && why);
    *expected = 0;
    if (!value)
        return 0;
    char quoted [S_QUOTE_MAX + 1];
    const char *start = value;
    const char *end = value + strlen (value);
    s_trim (&start, &end);
    bool number = start < end;
    bool above = false;
    size_t length = 0;
    for (const char *scan = start; number && scan < end; scan++) {
        if (*scan < '0' || *scan > '9')
            number = false;
        else
        if (!above) {
            size_t digit = (size_t) (*scan - '0');
            if (length > (SIZE_MAX - digit) / 10)
                above = true;
            else
                length = length * 10 + digit;
        }
    }
    if (!number)
        return s_refuse (MX_COMPAT_BODY_BAD_REQUEST, why,
                         "Content-Length '%s' is not a number of bytes",
                         s_quote (value, strlen (value), quoted, sizeof quoted));
    if (above || length > max_body)
        return s_refuse (MX_COMPAT_BODY_TOO_LARGE, why,
                         "body of %s bytes is larger than the limit of %zu bytes"
                         " (msgx.http.max-body-bytes)",
                         s_quote (start, (size_t) (end - start), quoted, sizeof quoted), max_body);
    *expected = length;
    return 0;
}

unsigned int
mx_compat_body_check (const char *body, size_t size, size_t max_body, char **why)
{
    assert (body || size == 0);
    assert (why);
    if (size == 0)
        return s_refuse (MX_COMPAT_BODY_BAD_REQUEST, why, "empty body: POST the raw XML message");
    if (size > max_body)
        return s_refuse (MX_COMPAT_BODY_TOO_LARGE, why,
                         "body larger than the limit of %zu bytes (msgx.http.max-body-bytes)",
                         max_body);
    size_t bad = mx_utf8_invalid_at ((const unsigned char *) body, size);
    if (bad < size)
        return s_refuse (MX_COMPAT_BODY_BAD_REQUEST, why,
                         "body is not valid UTF-8 (byte %zu of %zu)", bad, size);
    //  XML has no U+0000, and the body travels on as a C string.
    const char *nul = (const char *) memchr (body, '\0', size);
    if (nul)
        return s_refuse (MX_COMPAT_BODY_BAD_REQUEST, why,
                         "body holds a NUL byte (byte %zu of %zu), which XML cannot carry",
                         (size_t) (nul - body), size);
    return 0;
}

bool
mx_compat_body_bearer_ok (const char *value, const char *token, size_t token_length)
{
    assert (token);
    if (!value || strncasecmp (value, "Bearer ", 7) != 0)
        return false;
    const char *given = value + 7;
    while (*given == ' ')
        given++;
    size_t given_length = strlen (given);
    while (given_length > 0 && given [given_length - 1] == ' ')
        given_length--;
    //  Every byte of the expected token is looked at whatever the answer, so
    //  the time taken tells nothing about how much of a guess was right.
    unsigned int diff = given_length != token_length;
    for (size_t i = 0; i < token_length; i++) {
        unsigned char other = i < given_length ? (unsigned char) given [i] : 0;
        diff |= (unsigned int) (other ^ (unsigned char) token [i]);
    }
    return token_length > 0 && diff == 0;
}
