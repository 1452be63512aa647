/*  mx_utf8 - UTF-8 validity, the rule jansson, PostgreSQL and Kafka
    consumers hold text to: no overlong forms, no surrogates, nothing above
    U+10FFFF.
*/
#ifndef MX_UTF8_H_INCLUDED
#define MX_UTF8_H_INCLUDED

#include <stddef.h>

//  Offset of the first byte that breaks UTF-8, or size if text is valid.
size_t
    mx_utf8_invalid_at (const unsigned char *text, size_t size);

#endif
