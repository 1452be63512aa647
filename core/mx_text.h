/*  mx_text - a growing text buffer, always NUL-terminated: for output
    written piece by piece (the Prometheus exposition, event documents).
*/
#ifndef MX_TEXT_H_INCLUDED
#define MX_TEXT_H_INCLUDED

#include <stddef.h>

//  Zero-initialised is empty; data is malloc'd and belongs to the caller
//  (free it, or keep it and forget the buffer).
typedef struct {
    char *data;
    size_t size;                //  bytes, without the NUL
    size_t capacity;
} mx_text_t;

void mx_text_append (mx_text_t *self, const char *data, size_t size);
void mx_text_puts (mx_text_t *self, const char *text);
//  Empty again, keeping the memory for what comes next.
void mx_text_reset (mx_text_t *self);

#endif
