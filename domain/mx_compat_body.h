/*  mx_compat_body - what the compat entry (POST /cminmsgs/send, SPEC §1)
    checks before a body goes into the mailbox. Pure functions, no I/O: the
    http actor calls them, and the fuzz target fuzz_compat_body drives them
    with arbitrary bytes.

    Every check returns 0 when the request may go on, or the HTTP status
    that refuses it (400, 413 or 415) with *why a malloc'd line for the
    answer: one line, printable ASCII (bytes of the request that are not
    are quoted as '?'), never longer than a few hundred bytes whatever the
    input.
*/
#ifndef MX_COMPAT_BODY_H_INCLUDED
#define MX_COMPAT_BODY_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#define MX_COMPAT_BODY_BAD_REQUEST    400u
#define MX_COMPAT_BODY_TOO_LARGE      413u
#define MX_COMPAT_BODY_BAD_MEDIA_TYPE 415u

//  The Content-Type header value (NULL when absent): application/xml or any
//  text/<subtype>, with a charset parameter (if any) of utf-8. Else 415.
unsigned int
    mx_compat_body_check_media_type (const char *value, char **why);

//  The Content-Length header value (NULL when absent: *expected 0). A
//  number above max_body is 413, text that is not a decimal number 400;
//  else *expected gets the length.
unsigned int
    mx_compat_body_check_length (const char *value, size_t max_body, size_t *expected,
                                 char **why);

//  The complete body: empty is 400, more than max_body bytes 413, not
//  UTF-8 or holding a NUL byte 400 (saying at which byte).
unsigned int
    mx_compat_body_check (const char *body, size_t size, size_t max_body, char **why);

//  The Authorization header value (NULL when absent) against the expected
//  token: true only for "Bearer <token>" (the scheme in any case). The
//  comparison takes the same time wherever the first difference is.
bool
    mx_compat_body_bearer_ok (const char *value, const char *token, size_t token_length);

#endif
