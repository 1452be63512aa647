/*  mx_shape - hostile SIS messages of a given size: a valid envelope (FLOP
    REMC, FLID 1) whose FLOP block carries one pathological construct
    grown to fill the size. Used by the codec bounds test, the codec
    benchmark and msgx-shape.
*/
#ifndef MX_SHAPE_H_INCLUDED
#define MX_SHAPE_H_INCLUDED

#include <stddef.h>

//  Kind, name, what the message holds.
#define MX_SHAPES(X) \
    X (DEEP,       "deep",       "elements nested in one another") \
    X (WIDE,       "wide",       "one element with distinct attributes") \
    X (PIECES,     "pieces",     "one element's text split by comments") \
    X (NAME,       "name",       "one element with a huge name") \
    X (NAMESPACES, "namespaces", "sibling elements each declaring a namespace prefix") \
    X (ENTITIES,   "entities",   "one text of character references (&amp;)") \
    X (ELEMENTS,   "elements",   "empty sibling elements of one name") \
    X (DISTINCT,   "distinct",   "empty sibling elements, each of another name") \
    X (TEXT,       "text",       "one plain text (the baseline)")

typedef enum {
#define MX_SHAPE_ENUM(kind, name, doc) MX_SHAPE_##kind,
    MX_SHAPES (MX_SHAPE_ENUM)
#undef MX_SHAPE_ENUM
    MX_SHAPE_COUNT
} mx_shape_kind_t;

//  "deep", "wide", ...
const char *
    mx_shape_name (mx_shape_kind_t kind);

const char *
    mx_shape_doc (mx_shape_kind_t kind);

//  The kind named name, or -1.
int
    mx_shape_find (const char *name);

//  A message of exactly bytes bytes (at least the envelope, about 200),
//  malloc'd and NUL-terminated; *size its length. NULL when out of memory.
char *
    mx_shape_make (mx_shape_kind_t kind, size_t bytes, size_t *size);

//  The whole file at path, malloc'd (not NUL-terminated); *size its
//  length. NULL when it cannot be read. For the tools that measure or
//  decode real messages beside the shapes.
char *
    mx_shape_read_file (const char *path, size_t *size);

#endif
