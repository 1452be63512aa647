/*  sis_mutator - libFuzzer's custom mutator for fuzz_sis_decode: besides
    libFuzzer's own byte mutations (with the dictionary), grows the shapes
    that cost an XML parser more than linear time, at a random place and
    to a random size around the codec's bounds (msgx.codec.*):

    - a wide tag: one element with many attributes;
    - deep nesting: an element wrapped in many others;
    - split text: text cut into pieces by comments and CDATA sections;
    - namespace declarations, and a long name;
    - many sibling elements of distinct names.

    A byte-level mutator almost never builds these (it would need
    thousands of coordinated insertions), yet they are what held the FIFO.
    Only the libFuzzer build links this file.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t LLVMFuzzerMutate (uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator (uint8_t *data, size_t size, size_t max_size, unsigned int seed);

typedef struct {
    uint8_t *out;
    size_t used;
    size_t room;
} s_buf_t;

static int
s_put (s_buf_t *buf, const char *text)
{
    size_t length = strlen (text);
    if (buf->used + length > buf->room)
        return -1;
    memcpy (buf->out + buf->used, text, length);
    buf->used += length;
    return 0;
}

//  How many repetitions: mostly near the default bounds (32, 64, 256,
//  2048), sometimes far beyond them.
static size_t
s_count (unsigned int *seed)
{
    static const size_t around [] = { 32, 64, 256, 2048, 20000 };
    size_t base = around [rand_r (seed) % 5];
    return base - 2 + (size_t) (rand_r (seed) % 5);
}

//  Writes one hostile construct into buf; stops quietly when it is full
//  (the rest of the input is then cut, which is a mutation too).
static void
s_construct (s_buf_t *buf, unsigned int *seed)
{
    size_t count = s_count (seed);
    char piece [64];
    switch (rand_r (seed) % 6) {
        case 0:
            s_put (buf, "<W");
            for (size_t i = 0; i < count; i++) {
                snprintf (piece, sizeof piece, " a%zu=\"%zu\"", i, i);
                if (s_put (buf, piece))
                    return;
            }
            s_put (buf, "/>");
            break;
        case 1:
            for (size_t i = 0; i < count && !s_put (buf, "<D>"); i++)
                ;
            for (size_t i = 0; i < count && !s_put (buf, "</D>"); i++)
                ;
            break;
        case 2:
            s_put (buf, "<REMC>");
            for (size_t i = 0; i < count; i++)
                if (s_put (buf, i % 3 == 2 ? "x<![CDATA[y]]>" : "x<!-- -->"))
                    return;
            s_put (buf, "</REMC>");
            break;
        case 3:
            for (size_t i = 0; i < count; i++) {
                snprintf (piece, sizeof piece, "<p%zu:E xmlns:p%zu=\"u\"/>", i, i);
                if (s_put (buf, piece))
                    return;
            }
            break;
        case 4:
            s_put (buf, "<N");
            for (size_t i = 0; i < count && !s_put (buf, "N"); i++)
                ;
            s_put (buf, "/>");
            break;
        default:
            for (size_t i = 0; i < count; i++) {
                snprintf (piece, sizeof piece, "<e%zu/>", i);
                if (s_put (buf, piece))
                    return;
            }
            break;
    }
}

size_t
LLVMFuzzerCustomMutator (uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    //  Three times in four libFuzzer's own mutations: they find the rest.
    if (seed % 4 != 0 || size == 0)
        return LLVMFuzzerMutate (data, size, max_size);
    //  Insert at a tag boundary when there is one, so the construct lands
    //  inside the document rather than in a name.
    size_t at = (size_t) rand_r (&seed) % size;
    while (at < size && data [at] != '<')
        at++;
    if (at == size)
        at = (size_t) rand_r (&seed) % (size + 1);
    uint8_t *tail = malloc (size - at + 1);
    if (!tail)
        return size;
    memcpy (tail, data + at, size - at);
    s_buf_t buf = { .out = data, .used = at, .room = max_size };
    s_construct (&buf, &seed);
    size_t keep = size - at < buf.room - buf.used ? size - at : buf.room - buf.used;
    memcpy (data + buf.used, tail, keep);
    free (tail);
    return buf.used + keep;
}
