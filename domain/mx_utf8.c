/*  mx_utf8 - see mx_utf8.h. */
#include "mx_utf8.h"

#include <assert.h>
#include <stdint.h>

size_t
mx_utf8_invalid_at (const unsigned char *text, size_t size)
{
    assert (text || size == 0);
    size_t at = 0;
    while (at < size) {
        unsigned char lead = text [at];
        if (lead < 0x80) {
            at++;
            continue;
        }
        size_t length;
        uint32_t code, least;
        if (lead >= 0xC2 && lead <= 0xDF) {
            length = 2; code = lead & 0x1F; least = 0x80;
        }
        else
        if (lead >= 0xE0 && lead <= 0xEF) {
            length = 3; code = lead & 0x0F; least = 0x800;
        }
        else
        if (lead >= 0xF0 && lead <= 0xF4) {
            length = 4; code = lead & 0x07; least = 0x10000;
        }
        else
            return at;
        if (size - at < length)
            return at;
        for (size_t k = 1; k < length; k++) {
            if ((text [at + k] & 0xC0) != 0x80)
                return at;
            code = (code << 6) | (text [at + k] & 0x3F);
        }
        if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
            return at;
        at += length;
    }
    return size;
}
