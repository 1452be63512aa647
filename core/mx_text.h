/*  mx_text - a growing text buffer, always NUL-terminated: for output
    written piece by piece (the Prometheus exposition, event documents);
    and text made safe to show on a terminal.
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

//  text (UTF-8) made safe for a terminal: every control character but
//  newline and tab, which are layout, written visibly: C0 and DEL as \xNN,
//  C1 (U+0080..U+009F, which some terminals obey like ESC [) as \u00NN,
//  and the backslash doubled so the escapes cannot be forged. Malloc'd.
char *mx_text_escape_controls (const char *text);

#endif
