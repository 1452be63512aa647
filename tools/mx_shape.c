/*  mx_shape - see mx_shape.h.  */
#include "mx_shape.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *s_names [MX_SHAPE_COUNT] = {
#define S_NAME(kind, name, doc) name,
    MX_SHAPES (S_NAME)
#undef S_NAME
};

static const char *s_docs [MX_SHAPE_COUNT] = {
#define S_DOC(kind, name, doc) doc,
    MX_SHAPES (S_DOC)
#undef S_DOC
};

static const char s_head [] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20260101080000</DTTM>"
    "<TYPE>FLOP</TYPE><STYP>REMC</STYP></META>\n"
    "<FLOP><FLID>1</FLID><REMC>x</REMC>";
static const char s_tail [] = "</FLOP></MSG>\n";

const char *
mx_shape_name (mx_shape_kind_t kind)
{
    assert ((int) kind >= 0 && kind < MX_SHAPE_COUNT);
    return s_names [kind];
}

const char *
mx_shape_doc (mx_shape_kind_t kind)
{
    assert ((int) kind >= 0 && kind < MX_SHAPE_COUNT);
    return s_docs [kind];
}

int
mx_shape_find (const char *name)
{
    for (int i = 0; i < MX_SHAPE_COUNT; i++)
        if (strcmp (name, s_names [i]) == 0)
            return i;
    return -1;
}

typedef struct {
    char *text;
    size_t used;
    size_t bytes;                   //  the size asked for
} s_writer_t;

//  Appends unit if it fits with reserve bytes still free behind it.
static bool
s_fits (s_writer_t *writer, const char *unit, size_t length, size_t reserve)
{
    if (writer->used + length + reserve > writer->bytes)
        return false;
    memcpy (writer->text + writer->used, unit, length);
    writer->used += length;
    return true;
}

static void
s_put (s_writer_t *writer, const char *text)
{
    size_t length = strlen (text);
    assert (writer->used + length <= writer->bytes);
    memcpy (writer->text + writer->used, text, length);
    writer->used += length;
}

//  n in base 36, lower case: a distinct short name part per n.
static void
s_base36 (size_t n, char *buf)
{
    char digits [24];
    size_t count = 0;
    do {
        digits [count++] = "0123456789abcdefghijklmnopqrstuvwxyz" [n % 36];
        n /= 36;
    } while (n);
    for (size_t i = 0; i < count; i++)
        buf [i] = digits [count - 1 - i];
    buf [count] = '\0';
}

//  Repeats unit (a fixed text) while it fits.
static size_t
s_repeat (s_writer_t *writer, const char *unit, size_t reserve_each, size_t reserve)
{
    size_t length = strlen (unit);
    size_t count = 0;
    while (s_fits (writer, unit, length, reserve + (count + 1) * reserve_each))
        count++;
    return count;
}

static void
s_fill (s_writer_t *writer, mx_shape_kind_t kind, size_t reserve)
{
    char unit [128];
    char id [24];
    switch (kind) {
        case MX_SHAPE_DEEP: {
            size_t depth = s_repeat (writer, "<D>", strlen ("</D>"), reserve);
            for (size_t i = 0; i < depth; i++)
                s_put (writer, "</D>");
            break;
        }
        case MX_SHAPE_WIDE:
            s_put (writer, "<W");
            for (size_t n = 0; ; n++) {
                s_base36 (n, id);
                int length = snprintf (unit, sizeof unit, " a%s=\"\"", id);
                if (!s_fits (writer, unit, (size_t) length, reserve + 2))
                    break;
            }
            s_put (writer, "/>");
            break;
        case MX_SHAPE_PIECES:
            s_put (writer, "<P>");
            s_repeat (writer, "x<!---->", 0, reserve + 4);
            s_put (writer, "</P>");
            break;
        case MX_SHAPE_NAME:
            s_put (writer, "<N");
            while (s_fits (writer, "N", 1, reserve + 2))
                ;
            s_put (writer, "/>");
            break;
        case MX_SHAPE_NAMESPACES:
            for (size_t n = 0; ; n++) {
                s_base36 (n, id);
                int length = snprintf (unit, sizeof unit, "<p%s:E xmlns:p%s=\"u\"/>", id, id);
                if (!s_fits (writer, unit, (size_t) length, reserve))
                    break;
            }
            break;
        case MX_SHAPE_ENTITIES:
            s_put (writer, "<E>");
            s_repeat (writer, "&amp;", 0, reserve + 4);
            s_put (writer, "</E>");
            break;
        case MX_SHAPE_ELEMENTS:
            s_repeat (writer, "<e/>", 0, reserve);
            break;
        case MX_SHAPE_DISTINCT:
            for (size_t n = 0; ; n++) {
                s_base36 (n, id);
                int length = snprintf (unit, sizeof unit, "<e%s/>", id);
                if (!s_fits (writer, unit, (size_t) length, reserve))
                    break;
            }
            break;
        case MX_SHAPE_TEXT:
            s_put (writer, "<T>");
            s_repeat (writer, "x", 0, reserve + 4);
            s_put (writer, "</T>");
            break;
        case MX_SHAPE_COUNT:
            assert (false);
    }
}

char *
mx_shape_make (mx_shape_kind_t kind, size_t bytes, size_t *size)
{
    assert ((int) kind >= 0 && kind < MX_SHAPE_COUNT);
    assert (size);
    size_t fixed = strlen (s_head) + strlen (s_tail) + 16;
    if (bytes < fixed)
        bytes = fixed;
    s_writer_t writer = { .text = malloc (bytes + 1), .bytes = bytes };
    if (!writer.text)
        return NULL;
    s_put (&writer, s_head);
    s_fill (&writer, kind, strlen (s_tail));
    //  Whatever a unit could not fill: blanks inside FLOP.
    memset (writer.text + writer.used, ' ', bytes - strlen (s_tail) - writer.used);
    writer.used = bytes - strlen (s_tail);
    s_put (&writer, s_tail);
    writer.text [writer.used] = '\0';
    *size = writer.used;
    return writer.text;
}

char *
mx_shape_read_file (const char *path, size_t *size)
{
    assert (path && size);
    FILE *file = fopen (path, "rb");
    if (!file)
        return NULL;
    size_t capacity = 1 << 16, used = 0;
    char *data = malloc (capacity);
    while (data) {
        used += fread (data + used, 1, capacity - used, file);
        if (used < capacity)
            break;
        capacity *= 2;
        char *bigger = realloc (data, capacity);
        if (!bigger) {
            free (data);
            data = NULL;
        }
        else
            data = bigger;
    }
    bool failed = ferror (file);
    fclose (file);
    if (failed) {
        free (data);
        return NULL;
    }
    *size = used;
    return data;
}
