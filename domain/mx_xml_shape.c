/*  mx_xml_shape - see mx_xml_shape.h.  */
#include "mx_xml_shape.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/dict.h>

//  Longest excerpt of a name quoted in an error line.
#define S_QUOTE_MAX 40

static const char *s_keys [MX_XML_BOUND_COUNT] = {
    [MX_XML_BOUND_NONE] = "",
#define S_KEY(member, key, doc) [MX_XML_BOUND_##member] = key,
    MX_XML_BOUNDS (S_KEY)
#undef S_KEY
};

typedef struct {
    const char *start;
    const char *end;
    bool gb18030;
    const mx_xml_shape_t *limits;
    mx_xml_shape_t seen;
    size_t depth;                   //  now, not the largest
    size_t run;                     //  pieces since the last tag
    size_t nodes;
    size_t namespaces;
    xmlDictPtr names;               //  libxml2's dictionary: hashing seeded per process
    mx_xml_bound_t broken;
    const char *where;              //  where the broken bound was passed
    const char *name;               //  the element or name concerned, if any
    size_t name_length;
} s_scan_t;

static pthread_once_t s_init_once = PTHREAD_ONCE_INIT;

static void
s_init_libxml (void)
{
    xmlInitParser ();
}

void
mx_xml_init (void)
{
    pthread_once (&s_init_once, s_init_libxml);
}

const char *
mx_xml_bound_key (mx_xml_bound_t bound)
{
    assert (bound > MX_XML_BOUND_NONE && bound < MX_XML_BOUND_COUNT);
    return s_keys [bound];
}

static size_t *
s_member (mx_xml_shape_t *shape, mx_xml_bound_t bound)
{
    switch (bound) {
#define S_CASE(member, key, doc) case MX_XML_BOUND_##member: return &shape->member;
        MX_XML_BOUNDS (S_CASE)
#undef S_CASE
        default: break;
    }
    assert (false);
    return NULL;
}

//  Records value for bound; true (and the scan is over) when it passes
//  the limit.
static bool
s_count (s_scan_t *scan, mx_xml_bound_t bound, size_t value, const char *where,
         const char *name, size_t name_length)
{
    size_t *largest = s_member (&scan->seen, bound);
    if (value > *largest)
        *largest = value;
    size_t limit = *s_member ((mx_xml_shape_t *) scan->limits, bound);
    if (limit == 0 || value <= limit)
        return false;
    scan->broken = bound;
    scan->where = where;
    scan->name = name;
    scan->name_length = name_length;
    return true;
}

static bool
s_starts (const char *p, const char *end, const char *prefix)
{
    size_t length = strlen (prefix);
    return (size_t) (end - p) >= length && memcmp (p, prefix, length) == 0;
}

static bool
s_is_space (char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static const char *
s_skip_space (const char *p, const char *end)
{
    while (p < end && s_is_space (*p))
        p++;
    return p;
}

//  Bytes of the GB18030 character starting with lead byte *p (>= 0x81):
//  four when the second byte is a digit, otherwise two.
static size_t
s_gb18030_length (const char *p, const char *end)
{
    if (end - p >= 2 && p [1] >= '0' && p [1] <= '9')
        return 4;
    return 2;
}

//  End of the name starting at p (p itself when there is none). ASCII name
//  characters by XML's rules; every non-ASCII character is taken as one,
//  the parser checks it. A name longer than the bound ends one byte past
//  it: that is enough to refuse it, and a 16 MiB name costs no more.
static const char *
s_name_end (const s_scan_t *scan, const char *p)
{
    const char *end = scan->end;
    size_t limit = scan->limits->name_length;
    if (limit && limit < (size_t) (end - p))
        end = p + limit + 1;
    while (p < end) {
        unsigned char c = (unsigned char) *p;
        if (c >= 0x80)
            p += scan->gb18030 && c >= 0x81 && c <= 0xFE ? s_gb18030_length (p, end) : 1;
        else
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        ||  c == '_' || c == ':' || c == '.' || c == '-')
            p++;
        else
            break;
    }
    return p < end ? p : end;
}

//  "]]>" after p; in GB18030 a ']' may be the second byte of a character.
static const char *
s_cdata_end (const s_scan_t *scan, const char *p)
{
    const char *end = scan->end;
    if (!scan->gb18030)
        return memmem (p, (size_t) (end - p), "]]>", 3);
    while (p < end) {
        unsigned char c = (unsigned char) *p;
        if (c >= 0x81 && c <= 0xFE)
            p += s_gb18030_length (p, end);
        else
        if (s_starts (p, end, "]]>"))
            return p;
        else
            p++;
    }
    return NULL;
}

static bool
s_node (s_scan_t *scan, const char *where)
{
    return s_count (scan, MX_XML_BOUND_nodes, ++scan->nodes, where, NULL, 0);
}

//  A text run, CDATA section, comment or processing instruction at where.
static bool
s_piece (s_scan_t *scan, const char *where)
{
    return s_node (scan, where)
        || s_count (scan, MX_XML_BOUND_text_pieces, ++scan->run, where, NULL, 0);
}

//  An element or attribute name: its length, and whether it is new.
static bool
s_name (s_scan_t *scan, const char *name, size_t length)
{
    if (s_count (scan, MX_XML_BOUND_name_length, length, name, name, length))
        return true;
    if (length > INT32_MAX
    ||  !xmlDictLookup (scan->names, (const xmlChar *) name, (int) length))
        return false;               //  out of memory: the parser will say so
    return s_count (scan, MX_XML_BOUND_distinct_names, (size_t) xmlDictSize (scan->names),
                    name, name, length);
}

//  The start tag at p ("<name"); returns the byte after it, or NULL when
//  the scan is over (a bound passed, or not a tag).
static const char *
s_start_tag (s_scan_t *scan, const char *p)
{
    const char *end = scan->end;
    const char *tag = p;
    const char *element = p + 1;
    const char *after = s_name_end (scan, element);
    size_t element_length = (size_t) (after - element);
    if (element_length == 0)
        return NULL;
    scan->run = 0;
    if (s_node (scan, tag)
    ||  s_count (scan, MX_XML_BOUND_depth, ++scan->depth, tag, element, element_length)
    ||  s_name (scan, element, element_length))
        return NULL;
    size_t attributes = 0;
    p = after;
    while (true) {
        p = s_skip_space (p, end);
        if (p >= end)
            return NULL;
        if (*p == '>')
            return p + 1;
        if (*p == '/') {
            if (end - p < 2 || p [1] != '>')
                return NULL;
            scan->depth--;
            return p + 2;
        }
        const char *name = p;
        after = s_name_end (scan, name);
        size_t length = (size_t) (after - name);
        if (length == 0)
            return NULL;
        if (s_count (scan, MX_XML_BOUND_attributes, ++attributes, name, element, element_length)
        ||  s_node (scan, name)
        ||  s_name (scan, name, length))
            return NULL;
        if ((length == 5 && memcmp (name, "xmlns", 5) == 0)
        ||  (length > 6 && memcmp (name, "xmlns:", 6) == 0))
            if (s_count (scan, MX_XML_BOUND_namespaces, ++scan->namespaces, name, name, length))
                return NULL;
        p = s_skip_space (after, end);
        if (p >= end || *p != '=')
            return NULL;
        p = s_skip_space (p + 1, end);
        if (p >= end || (*p != '"' && *p != '\''))
            return NULL;
        const char *close = memchr (p + 1, *p, (size_t) (end - p - 1));
        if (!close)
            return NULL;
        p = close + 1;
    }
}

static void
s_scan (s_scan_t *scan)
{
    const char *p = scan->start;
    const char *end = scan->end;
    while (p < end) {
        if (*p != '<') {
            const char *next = memchr (p, '<', (size_t) (end - p));
            if (s_piece (scan, p))
                return;
            p = next ? next : end;
            continue;
        }
        const char *close = NULL;
        if (s_starts (p, end, "<!--")) {
            close = memmem (p + 4, (size_t) (end - p - 4), "-->", 3);
            if (!close || s_piece (scan, p))
                return;
            p = close + 3;
        }
        else
        if (s_starts (p, end, "<![CDATA[")) {
            close = s_cdata_end (scan, p + 9);
            if (!close || s_piece (scan, p))
                return;
            p = close + 3;
        }
        else
        if (s_starts (p, end, "<?")) {
            close = memmem (p + 2, (size_t) (end - p - 2), "?>", 2);
            if (!close || s_piece (scan, p))
                return;
            p = close + 2;
        }
        else
        if (s_starts (p, end, "</")) {
            //  Whether it matches its start tag is the parser's question.
            scan->run = 0;
            if (scan->depth > 0)
                scan->depth--;
            p = s_skip_space (s_name_end (scan, p + 2), end);
            if (p >= end || *p != '>')
                return;
            p++;
        }
        else
        if (s_starts (p, end, "<!"))
            return;                 //  a DOCTYPE (refused before) or not XML
        else {
            p = s_start_tag (scan, p);
            if (!p)
                return;
        }
    }
}

static int
s_line_of (const char *start, const char *where)
{
    int line = 1;
    for (const char *p = start; p < where && (p = memchr (p, '\n', (size_t) (where - p))); p++)
        line++;
    return line;
}

static char *
s_describe (const s_scan_t *scan)
{
    char name [S_QUOTE_MAX + 8] = "";
    size_t length = scan->name_length < S_QUOTE_MAX ? scan->name_length : S_QUOTE_MAX;
    if (scan->name)
        snprintf (name, sizeof name, "%.*s%s", (int) length, scan->name,
                  length < scan->name_length ? "..." : "");
    char what [S_QUOTE_MAX + 96];
    switch (scan->broken) {
        case MX_XML_BOUND_attributes:
            snprintf (what, sizeof what, "<%s> has more attributes", name);
            break;
        case MX_XML_BOUND_nodes:
            snprintf (what, sizeof what, "the message has more nodes");
            break;
        case MX_XML_BOUND_depth:
            snprintf (what, sizeof what, "<%s> is nested deeper", name);
            break;
        case MX_XML_BOUND_text_pieces:
            snprintf (what, sizeof what, "more text pieces, comments or processing "
                                         "instructions in a row");
            break;
        case MX_XML_BOUND_name_length:
            snprintf (what, sizeof what, "the name '%s' is longer", name);
            break;
        case MX_XML_BOUND_namespaces:
            snprintf (what, sizeof what, "more namespace declarations");
            break;
        case MX_XML_BOUND_distinct_names:
            snprintf (what, sizeof what, "more distinct names ('%s' is one too many)", name);
            break;
        default:
            assert (false);
            what [0] = '\0';
    }
    char *text = NULL;
    size_t limit = *s_member ((mx_xml_shape_t *) scan->limits, scan->broken);
    if (asprintf (&text, "msgx.codec.%s (%zu) exceeded: %s (line %d, byte %zu)",
                  s_keys [scan->broken], limit, what, s_line_of (scan->start, scan->where),
                  (size_t) (scan->where - scan->start)) < 0)
        text = NULL;
    return text;
}

mx_xml_bound_t
mx_xml_shape_check (const char *xml, size_t size, bool gb18030,
                    const mx_xml_shape_t *limits, mx_xml_shape_t *seen, char **error)
{
    assert (xml || size == 0);
    assert (limits);
    mx_xml_init ();
    s_scan_t scan = {
        .start = xml, .end = xml + size, .gb18030 = gb18030, .limits = limits,
        .names = xmlDictCreate ()
    };
    if (scan.names)
        s_scan (&scan);
    else {
        //  Out of memory: refuse rather than parse unbounded.
        scan.broken = MX_XML_BOUND_distinct_names;
        scan.where = xml;
    }
    if (scan.broken && error)
        *error = s_describe (&scan);
    if (seen)
        *seen = scan.seen;
    xmlDictFree (scan.names);
    return scan.broken;
}
