/*  mx_text - see mx_text.h. */
#include "mx_text.h"

#include <assert.h>
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
