/*  mx_text - see mx_text.h. */
#include "mx_text.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
mx_text_append (mx_text_t *self, const char *data, size_t size)
{
    assert (self);
    if (self->size + size + 1 > self->capacity) {
        size_t want = self->capacity ? self->capacity * 2 : 4096;
        while (want < self->size + size + 1)
            want *= 2;
        char *grown = (char *) realloc (self->data, want);
        assert (grown);
        self->data = grown;
        self->capacity = want;
    }
    memcpy (self->data + self->size, data, size);
    self->size += size;
    self->data [self->size] = '\0';
}

void
mx_text_puts (mx_text_t *self, const char *text)
{
    mx_text_append (self, text, strlen (text));
}

void
mx_text_reset (mx_text_t *self)
{
    assert (self);
    self->size = 0;
    if (self->data)
        self->data [0] = '\0';
}

char *
mx_text_escape_controls (const char *text)
{
    assert (text);
    mx_text_t out = { 0 };
    mx_text_append (&out, "", 0);               //  "" for empty text, never NULL
    const unsigned char *at = (const unsigned char *) text;
    while (*at) {
        const unsigned char *run = at;
        while (*at && *at != '\\' && (*at >= 0x20 || *at == '\n' || *at == '\t') && *at != 0x7f
           &&  !(at [0] == 0xc2 && at [1] >= 0x80 && at [1] <= 0x9f))
            at++;
        mx_text_append (&out, (const char *) run, (size_t) (at - run));
        if (!*at)
            break;
        char escape [8];
        if (*at == '\\') {
            mx_text_puts (&out, "\\\\");
            at++;
        }
        else
        if (*at == 0xc2) {
            snprintf (escape, sizeof escape, "\\u%04x", (unsigned int) at [1]);
            mx_text_puts (&out, escape);
            at += 2;
        }
        else {
            snprintf (escape, sizeof escape, "\\x%02x", (unsigned int) *at);
            mx_text_puts (&out, escape);
            at++;
        }
    }
    return out.data;
}
