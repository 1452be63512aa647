/*  mx_xml_shape - the shape of an XML text, measured in one linear pass
    before a parser sees it, and checked against bounds.

    libxml2 is not linear in every dimension of its input: it compares the
    attributes of one element pairwise (80,000 attributes on one element
    cost 11 s), looks namespace prefixes up through every declaration in
    scope, and keeps every distinct name in its dictionary. Counting these
    first, in time proportional to the bytes, lets the codec refuse a
    message whose parse would hold the FIFO, saying which bound it broke
    and where.

    The scan follows XML's syntax for what it counts (tags, attributes,
    comments, processing instructions, CDATA sections, text). It stops
    counting where the text cannot be XML (an unterminated construct, a '<'
    that starts nothing): the parser refuses at or before that byte, and the
    codec stops the parser at its first fatal error, so nothing the scan
    did not count is ever parsed. It counts generously where XML is strict
    (no check that end tags match, attributes may touch), which can only
    refuse sooner.
*/
#ifndef MX_XML_SHAPE_H_INCLUDED
#define MX_XML_SHAPE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

//  Every bound: member, configuration key (after "msgx.codec."), what it
//  counts. The order is the order of mx_xml_bound_t.
#define MX_XML_BOUNDS(X) \
    X (attributes,     "max-attributes",     "attributes on one element") \
    X (nodes,          "max-nodes",          "nodes: elements, attributes, text pieces, comments and processing instructions") \
    X (depth,          "max-depth",          "elements nested in one another") \
    X (text_pieces,    "max-text-pieces",    "text runs, CDATA sections, comments and processing instructions in a row, between two tags") \
    X (name_length,    "max-name-length",    "bytes in one element or attribute name") \
    X (namespaces,     "max-namespaces",     "namespace declarations (xmlns attributes)") \
    X (distinct_names, "max-distinct-names", "distinct element and attribute names")

//  Measured: the largest value of each dimension in one text. As bounds:
//  the largest allowed; 0 in a bound means "no bound" (measuring).
typedef struct {
#define MX_XML_MEMBER(member, key, doc) size_t member;
    MX_XML_BOUNDS (MX_XML_MEMBER)
#undef MX_XML_MEMBER
} mx_xml_shape_t;

typedef enum {
    MX_XML_BOUND_NONE = 0,
#define MX_XML_ENUM(member, key, doc) MX_XML_BOUND_##member,
    MX_XML_BOUNDS (MX_XML_ENUM)
#undef MX_XML_ENUM
    MX_XML_BOUND_COUNT
} mx_xml_bound_t;

//  Scans xml [0..size). gb18030: the bytes are GB18030 (a multi-byte
//  character may hold ASCII bytes such as ']'); otherwise UTF-8 or ASCII.
//  Fills *seen (may be NULL) with what it counted up to where it stopped.
//  Returns the first bound of limits exceeded, or MX_XML_BOUND_NONE; then
//  *error (if not NULL) is a malloc'd line naming the bound's key, its value
//  and where, e.g. "msgx.codec.max-attributes (64) exceeded: <MSG> has more
//  attributes (line 1, byte 1043)". The line may quote bytes of the input.
mx_xml_bound_t
    mx_xml_shape_check (const char *xml, size_t size, bool gb18030,
                        const mx_xml_shape_t *limits, mx_xml_shape_t *seen, char **error);

//  libxml2's one initialisation, which must come before threads parse
//  concurrently; every user of libxml2 here calls it first.
void
    mx_xml_init (void);

//  "max-attributes", ... (the configuration key after "msgx.codec.").
const char *
    mx_xml_bound_key (mx_xml_bound_t bound);

#endif
