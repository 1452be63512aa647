/*  mx_sis_body - see mx_sis_body.h.

    One block decoder serves FLTR (SCHD) and FLOP: it reads every element of
    the block into an mx_flop_t (presence + canonical value). A FLOP keeps
    that; a FLTR turns it into a full flight where CLEARED and ABSENT are
    both NULL.

    Error classes: a structural problem (repeated element, set record
    without a valid key, PORT POID not O|C, mandatory field) is PROTOCOL
    and stops at once; a value the codec cannot convert is CODEC_ERROR and
    is only remembered, so that a PROTOCOL problem anywhere in the package
    wins (dead beats retried: a retry could never succeed).

    Decisions where WIRE.md leaves room:
    - FDIV/FRET/FLAB present: the element describes the whole value, so
      an absent or empty attribute clears its scalar, like empty text.
    - <PORT/> empty clears PORT_OPEN and PORT_CLOSE.
    - An empty set element (<GTDT/>) means "empty set" (PRESENT, count 0);
      empty elements next to non-empty ones add nothing.
    - Rare sets (PSHT, TIPT, SRVT, VIPF) are always an array of objects, one
      per element; an empty element alone clears the value (NULL), which is
      also what a FLTR without the element gives.
    - Unknown elements go to extra: a plain leaf as its text; an element
      with attributes as its serialised XML (attributes kept); an element
      with children only as its serialised inner XML. A repeated unknown
      element becomes an array of those texts, in document order. An empty
      unknown element is JSON null in a FLOP (clears the key) and left out
      of a FLTR (no value).
    - Unknown children inside a set record are not kept (no column).
    - A FLOP of one subtype may carry other known elements: all are taken.
      Whether the subtype's own element is there is the envelope's check
      (payload missing); here only "nothing known at all" is UNSUPPORTED.
    - FDEL (FLOP/FDEL or TYPE FDEL): styp is "FDEL", only FLID/FFID read.
    - A FLID listed twice in SCHD/DEL, and a key repeated in a reference
      list, are PROTOCOL like a repeated FLID in a schedule.
*/
#include "mx_sis_body.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/xmlsave.h>
#include <libxml/xpath.h>
#include <czmq.h>

//  Longest excerpt of a bad value quoted in an error line.
#define S_QUOTE_MAX 40

// ---------------------------------------------------------------------------
//  Field tables (from the shared .def files)

typedef struct {
    const char *code;
    mx_value_type_t type;
} s_scalar_def_t;

static const s_scalar_def_t s_scalars [MX_F_COUNT] = {
#define MX_SCALAR(name, code, type, styp) [MX_F_##name] = { code, MX_TYPE_##type },
#include "mx_flight_fields.def"
#undef MX_SCALAR
};

typedef struct {
    const char *element;
    const char *key;
} s_set_def_t;

static const s_set_def_t s_sets [MX_SET_COUNT] = {
#define MX_SET(name, element, table, key) [MX_SET_##name] = { element, key },
#define MX_SET_FIELD(set, code, type, source)
#include "mx_flight_sets.def"
#undef MX_SET
#undef MX_SET_FIELD
};

typedef struct {
    mx_set_kind_t set;
    const char *code;
    mx_value_type_t type;
    const char *source;
} s_set_field_def_t;

static const s_set_field_def_t s_set_fields [] = {
#define MX_SET(name, element, table, key)
#define MX_SET_FIELD(set, code, type, source) { MX_SET_##set, code, MX_TYPE_##type, source },
#include "mx_flight_sets.def"
#undef MX_SET
#undef MX_SET_FIELD
};

#define S_SET_FIELD_COUNT (sizeof s_set_fields / sizeof s_set_fields [0])

static const char *s_rares [MX_RARE_COUNT] = {
    [MX_RARE_PSHT] = "PSHT", [MX_RARE_TIPT] = "TIPT",
    [MX_RARE_SRVT] = "SRVT", [MX_RARE_VIPF] = "VIPF"
};

//  Elements whose text is one scalar and whose attributes are others.
typedef struct {
    mx_scalar_t text;
    size_t attr_count;
    const char *attrs [2];
    mx_scalar_t attr_scalars [2];
} s_attr_scalar_t;

static const s_attr_scalar_t s_attr_scalars [] = {
    { MX_F_FDIV, 2, { "DDES", "DDIR" }, { MX_F_FDIV_DDES, MX_F_FDIV_DDIR } },
    { MX_F_FRET, 1, { "REID", NULL },   { MX_F_FRET_REID, MX_F_FRET_REID } },
    { MX_F_FLAB, 1, { "ARES", NULL },   { MX_F_FLAB_ARES, MX_F_FLAB_ARES } },
};

#define S_ATTR_SCALAR_COUNT (sizeof s_attr_scalars / sizeof s_attr_scalars [0])

//  What an element of a FLTR or FLOP block is.
typedef enum {
    S_ELEMENT_UNKNOWN,
    S_ELEMENT_IDENT,            //  FLID, FFID: read by the caller
    S_ELEMENT_SCALAR,           //  plain scalar, text = value
    S_ELEMENT_ATTR_SCALAR,      //  FDIV / FRET / FLAB
    S_ELEMENT_PORT,
    S_ELEMENT_SET,
    S_ELEMENT_RARE
} s_element_kind_t;

static s_element_kind_t
s_classify (const char *name, int *index)
{
    *index = -1;
    if (strcmp (name, "FLID") == 0 || strcmp (name, "FFID") == 0)
        return S_ELEMENT_IDENT;
    if (strcmp (name, "PORT") == 0)
        return S_ELEMENT_PORT;
    for (size_t i = 0; i < S_ATTR_SCALAR_COUNT; i++)
        if (strcmp (name, s_scalars [s_attr_scalars [i].text].code) == 0) {
            *index = (int) i;
            return S_ELEMENT_ATTR_SCALAR;
        }
    for (int i = 0; i < MX_F_COUNT; i++) {
        //  FDIV_DDES, PORT_OPEN...: column names, never element names.
        if (strchr (s_scalars [i].code, '_'))
            continue;
        if (strcmp (name, s_scalars [i].code) == 0) {
            *index = i;
            return S_ELEMENT_SCALAR;
        }
    }
    for (int i = 0; i < MX_SET_COUNT; i++)
        if (strcmp (name, s_sets [i].element) == 0) {
            *index = i;
            return S_ELEMENT_SET;
        }
    for (int i = 0; i < MX_RARE_COUNT; i++)
        if (strcmp (name, s_rares [i]) == 0) {
            *index = i;
            return S_ELEMENT_RARE;
        }
    return S_ELEMENT_UNKNOWN;
}

// ---------------------------------------------------------------------------
//  Errors

typedef struct {
    mx_body_status_t status;    //  MX_BODY_OK until something failed
    char *text;
} s_error_t;

static void
s_error_set (s_error_t *error, mx_body_status_t status, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

//  Records a failure. PROTOCOL replaces a CODEC_ERROR seen before; any
//  other later failure keeps the first one.
static void
s_error_set (s_error_t *error, mx_body_status_t status, const char *fmt, ...)
{
    assert (status != MX_BODY_OK);
    if (error->status != MX_BODY_OK
    && !(status == MX_BODY_PROTOCOL && error->status != MX_BODY_PROTOCOL))
        return;
    va_list args;
    va_start (args, fmt);
    char *text = NULL;
    if (vasprintf (&text, fmt, args) < 0)
        text = strdup ("out of memory formatting an error");
    va_end (args);
    //  One line, whatever the input contained.
    for (char *scan = text; scan && *scan; scan++)
        if ((unsigned char) *scan < 0x20 || *scan == 0x7f)
            *scan = ' ';
    free (error->text);
    error->text = text;
    error->status = status;
}

static mx_body_status_t
s_error_return (s_error_t *error, char **error_p)
{
    mx_body_status_t status = error->status;
    if (error_p && status != MX_BODY_OK)
        *error_p = error->text;
    else
        free (error->text);
    error->text = NULL;
    return status;
}

//  A bounded, printable excerpt of an untrusted value for an error line.
static const char *
s_quote (const char *value, char *buf, size_t size)
{
    assert (size > S_QUOTE_MAX + 4);
    size_t out = 0;
    for (const char *scan = value; *scan && out < S_QUOTE_MAX; scan++) {
        unsigned char c = (unsigned char) *scan;
        buf [out++] = (c < 0x20 || c == 0x7f) ? '?' : (char) c;
    }
    if (value [out] != '\0') {
        //  Never cut a UTF-8 sequence in half.
        while (out > 0 && ((unsigned char) value [out] & 0xC0) == 0x80)
            out--;
        memcpy (buf + out, "...", 3);
        out += 3;
    }
    buf [out] = '\0';
    return buf;
}

#define S_QUOTE_BUFSIZE (S_QUOTE_MAX + 8)

const char *
mx_body_status_name (mx_body_status_t status)
{
    switch (status) {
        case MX_BODY_OK:          return "OK";
        case MX_BODY_PROTOCOL:    return "PROTOCOL";
        case MX_BODY_CODEC_ERROR: return "CODEC_ERROR";
        case MX_BODY_UNSUPPORTED: return "UNSUPPORTED";
    }
    assert (false);
    return "?";
}

// ---------------------------------------------------------------------------
//  XML helpers

static void *
s_alloc (size_t size)
{
    void *memory = calloc (1, size);
    assert (memory);
    return memory;
}

static char *
s_strdup (const char *text)
{
    char *copy = strdup (text);
    assert (copy);
    return copy;
}

static bool
s_is_space (char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool
s_named (xmlNodePtr node, const char *name)
{
    return node && node->type == XML_ELEMENT_NODE
        && strcmp ((const char *) node->name, name) == 0;
}

static xmlNodePtr
s_child (xmlNodePtr parent, const char *name, int *count)
{
    xmlNodePtr found = NULL;
    int seen = 0;
    for (xmlNodePtr node = parent->children; node; node = node->next)
        if (s_named (node, name)) {
            if (!found)
                found = node;
            seen++;
        }
    if (count)
        *count = seen;
    return found;
}

static bool
s_has_elements (xmlNodePtr node)
{
    for (xmlNodePtr child = node->children; child; child = child->next)
        if (child->type == XML_ELEMENT_NODE)
            return true;
    return false;
}

static char *
s_trimmed (const char *text)
{
    while (s_is_space (*text))
        text++;
    size_t length = strlen (text);
    while (length > 0 && s_is_space (text [length - 1]))
        length--;
    char *copy = strndup (text, length);
    assert (copy);
    return copy;
}

static bool
s_is_text (xmlNodePtr node)
{
    return (node->type == XML_TEXT_NODE || node->type == XML_CDATA_SECTION_NODE)
        && node->content;
}

//  The element's own text (its direct text children), trimmed; malloc'd.
//  Joined in one copy: text split into many pieces (by comments) must
//  cost its length, not pieces times length.
static char *
s_own_text (xmlNodePtr node)
{
    size_t length = 0;
    for (xmlNodePtr child = node->children; child; child = child->next)
        if (s_is_text (child))
            length += strlen ((const char *) child->content);
    char *joined = s_alloc (length + 1);
    size_t used = 0;
    for (xmlNodePtr child = node->children; child; child = child->next)
        if (s_is_text (child)) {
            size_t piece = strlen ((const char *) child->content);
            memcpy (joined + used, child->content, piece);
            used += piece;
        }
    char *text = s_trimmed (joined);
    free (joined);
    return text;
}

//  Attribute value trimmed, malloc'd; NULL when the attribute is absent.
static char *
s_attr (xmlNodePtr node, const char *name)
{
    xmlChar *value = xmlGetProp (node, (const xmlChar *) name);
    if (!value)
        return NULL;
    char *text = s_trimmed ((const char *) value);
    xmlFree (value);
    return text;
}

//  No attributes, no child elements, blank text: "<X/>", "<X> </X>".
static bool
s_is_empty (xmlNodePtr node)
{
    if (node->properties || s_has_elements (node))
        return false;
    char *text = s_own_text (node);
    bool empty = *text == '\0';
    free (text);
    return empty;
}

static int
s_line (xmlNodePtr node)
{
    return (int) xmlGetLineNo (node);
}

//  Serialised XML of node (outer) or of its children (inner), UTF-8,
//  trimmed; malloc'd.
static char *
s_serialise (xmlNodePtr node, bool inner)
{
    xmlBufferPtr buffer = xmlBufferCreate ();
    assert (buffer);
    xmlSaveCtxtPtr save = xmlSaveToBuffer (buffer, "UTF-8", XML_SAVE_NO_DECL);
    assert (save);
    if (inner)
        for (xmlNodePtr child = node->children; child; child = child->next)
            xmlSaveTree (save, child);
    else
        xmlSaveTree (save, node);
    xmlSaveClose (save);
    const xmlChar *content = xmlBufferContent (buffer);
    char *text = s_trimmed (content ? (const char *) content : "");
    xmlBufferFree (buffer);
    return text;
}

//  Adds value under key; a key seen before turns into an array.
static void
s_object_add (json_t *object, const char *key, json_t *value)
{
    json_t *old = json_object_get (object, key);
    if (!old)
        json_object_set_new (object, key, value);
    else
    if (json_is_array (old))
        json_array_append_new (old, value);
    else {
        json_t *array = json_array ();
        json_array_append (array, old);
        json_array_append_new (array, value);
        json_object_set_new (object, key, array);
    }
}

//  An element as a JSON object: attributes, then children by name (a leaf
//  child as its text, a child with attributes or children as an object);
//  own text, if any beside children, under "#text".
static json_t *
s_element_object (xmlNodePtr node)
{
    json_t *object = json_object ();
    for (xmlAttrPtr attr = node->properties; attr; attr = attr->next) {
        xmlChar *value = xmlNodeGetContent ((xmlNodePtr) attr);
        char *text = s_trimmed (value ? (const char *) value : "");
        xmlFree (value);
        s_object_add (object, (const char *) attr->name, json_string (text));
        free (text);
    }
    for (xmlNodePtr child = node->children; child; child = child->next) {
        if (child->type != XML_ELEMENT_NODE)
            continue;
        json_t *value;
        if (child->properties || s_has_elements (child))
            value = s_element_object (child);
        else {
            char *text = s_own_text (child);
            value = json_string (text);
            free (text);
        }
        s_object_add (object, (const char *) child->name, value);
    }
    char *text = s_own_text (node);
    if (*text)
        s_object_add (object, "#text", json_string (text));
    free (text);
    return object;
}

// ---------------------------------------------------------------------------
//  Values

static const char *s_months [12] = {
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"
};

static bool
s_digits_at (const char *text, size_t count, int *value)
{
    int result = 0;
    for (size_t i = 0; i < count; i++) {
        if (text [i] < '0' || text [i] > '9')
            return false;
        result = result * 10 + (text [i] - '0');
    }
    *value = result;
    return true;
}

int64_t
mx_sis_parse_datetime (const char *text, const mx_tz_t *zone)
{
    assert (text && zone);
    if (strlen (text) != 11)
        return -1;
    int day, year, hour, minute;
    if (!s_digits_at (text, 2, &day) || !s_digits_at (text + 5, 2, &year)
    ||  !s_digits_at (text + 7, 2, &hour) || !s_digits_at (text + 9, 2, &minute))
        return -1;
    int month = 0;
    for (int i = 0; i < 12 && !month; i++)
        if (memcmp (text + 2, s_months [i], 3) == 0)
            month = i + 1;
    year += 2000;
    if (!month || day < 1 || day > mx_tz_days_in_month (year, month)
    ||  hour > 23 || minute > 59)
        return -1;
    return mx_tz_local_to_utc (zone, year, month, day, hour, minute, 0);
}

//  Decimal integer with an optional sign; false if not a number or out of
//  int64 range.
static bool
s_parse_int (const char *text, int64_t *value)
{
    const char *digits = text;
    if (*digits == '-' || *digits == '+')
        digits++;
    if (!*digits)
        return false;
    for (const char *scan = digits; *scan; scan++)
        if (*scan < '0' || *scan > '9')
            return false;
    errno = 0;
    long long result = strtoll (text, NULL, 10);
    if (errno == ERANGE)
        return false;
    *value = (int64_t) result;
    return true;
}

//  FLID: a positive integer.
static bool
s_parse_flid (const char *text, int64_t *flid)
{
    return text && *text != '-' && *text != '+' && s_parse_int (text, flid) && *flid > 0;
}

//  Canonical text of a non-empty value of type, malloc'd; NULL when it
//  cannot be converted (why: into reason).
static char *
s_canonical (const char *text, mx_value_type_t type, const mx_tz_t *zone, const char **reason)
{
    char buffer [32];
    switch (type) {
        case MX_TYPE_S:
            return s_strdup (text);
        case MX_TYPE_I: {
            int64_t value;
            if (!s_parse_int (text, &value)) {
                *reason = "is not an integer in range";
                return NULL;
            }
            snprintf (buffer, sizeof buffer, "%lld", (long long) value);
            return s_strdup (buffer);
        }
        case MX_TYPE_T: {
            int64_t ms = mx_sis_parse_datetime (text, zone);
            if (ms == -1) {
                *reason = "is not a date-time ddMONyyHHmm";
                return NULL;
            }
            snprintf (buffer, sizeof buffer, "%lld", (long long) ms);
            return s_strdup (buffer);
        }
        case MX_TYPE_M: {
            int hours, minutes;
            if (strlen (text) != 4 || !s_digits_at (text, 2, &hours)
            ||  !s_digits_at (text + 2, 2, &minutes) || minutes > 59) {
                *reason = "is not a duration HHMM";
                return NULL;
            }
            snprintf (buffer, sizeof buffer, "%d", hours * 60 + minutes);
            return s_strdup (buffer);
        }
    }
    assert (false);
    return NULL;
}

//  Repeats: a hash of the keys seen so far, so that a list of n records
//  costs n look-ups, not n² comparisons (a 16 MiB message may hold 10^5).
//  Returns the 1-based position key was first seen at, or 0 after noting
//  it at position.
static size_t
s_seen (zhashx_t **seen, const char *key, size_t position)
{
    assert (position > 0);
    if (!*seen) {
        *seen = zhashx_new ();
        assert (*seen);
    }
    void *first = zhashx_lookup (*seen, key);
    if (first)
        return (size_t) (uintptr_t) first;
    zhashx_insert (*seen, key, (void *) (uintptr_t) position);
    return 0;
}

// ---------------------------------------------------------------------------
//  Block decoding (FLTR and FLOP)

typedef struct {
    const mx_tz_t *zone;
    const char *where;          //  "FLTR 2 (FLID 16)", "FLOP (FLID 15)"
    s_error_t *error;
    bool seen_scalar [MX_F_COUNT];
    bool seen_set [MX_SET_COUNT];
    bool seen_port_empty;
    mx_set_t records [MX_SET_COUNT];
    size_t capacity [MX_SET_COUNT];
    json_t *rare [MX_RARE_COUNT];   //  arrays being built
    bool rare_seen [MX_RARE_COUNT];
    zhashx_t *keys [MX_SET_COUNT];  //  record keys seen, see s_seen
} s_block_t;

//  Sets one scalar of the flop from text (NULL or "" clears). Returns -1
//  on a PROTOCOL problem.
static int
s_put_scalar (s_block_t *block, mx_flop_t *flop, mx_scalar_t scalar, const char *text,
              xmlNodePtr node)
{
    const char *code = s_scalars [scalar].code;
    if (block->seen_scalar [scalar]) {
        s_error_set (block->error, MX_BODY_PROTOCOL, "%s: %s appears more than once (line %d)",
                     block->where, code, s_line (node));
        return -1;
    }
    block->seen_scalar [scalar] = true;
    if (!text || !*text) {
        flop->scalar_presence [scalar] = MX_CLEARED;
        return 0;
    }
    const char *reason = NULL;
    char *value = s_canonical (text, s_scalars [scalar].type, block->zone, &reason);
    if (!value) {
        char quoted [S_QUOTE_BUFSIZE];
        s_error_set (block->error, MX_BODY_CODEC_ERROR, "%s: %s '%s' %s (line %d)",
                     block->where, code, s_quote (text, quoted, sizeof quoted), reason,
                     s_line (node));
        return 0;
    }
    flop->scalar_presence [scalar] = MX_PRESENT;
    flop->scalars [scalar] = value;
    return 0;
}

static int
s_read_scalar (s_block_t *block, mx_flop_t *flop, mx_scalar_t scalar, xmlNodePtr node)
{
    if (s_has_elements (node)) {
        s_error_set (block->error, MX_BODY_PROTOCOL, "%s: %s holds elements, not a value (line %d)",
                     block->where, s_scalars [scalar].code, s_line (node));
        return -1;
    }
    char *text = s_own_text (node);
    int rc = s_put_scalar (block, flop, scalar, text, node);
    free (text);
    return rc;
}

static int
s_read_attr_scalar (s_block_t *block, mx_flop_t *flop, const s_attr_scalar_t *def,
                    xmlNodePtr node)
{
    if (s_read_scalar (block, flop, def->text, node) == -1)
        return -1;
    for (size_t i = 0; i < def->attr_count; i++) {
        char *text = s_attr (node, def->attrs [i]);
        int rc = s_put_scalar (block, flop, def->attr_scalars [i], text, node);
        free (text);
        if (rc == -1)
            return -1;
    }
    return 0;
}

//  PORT {POTM, POID=O|C}: children (attributes accepted too).
static char *
s_port_part (xmlNodePtr node, const char *name)
{
    xmlNodePtr child = s_child (node, name, NULL);
    if (child)
        return s_own_text (child);
    return s_attr (node, name);
}

static int
s_read_port (s_block_t *block, mx_flop_t *flop, xmlNodePtr node)
{
    if (s_is_empty (node)) {
        if (block->seen_port_empty || block->seen_scalar [MX_F_PORT_OPEN]
        ||  block->seen_scalar [MX_F_PORT_CLOSE]) {
            s_error_set (block->error, MX_BODY_PROTOCOL,
                         "%s: empty PORT beside another PORT (line %d)",
                         block->where, s_line (node));
            return -1;
        }
        block->seen_port_empty = true;
        if (s_put_scalar (block, flop, MX_F_PORT_OPEN, NULL, node) == -1)
            return -1;
        return s_put_scalar (block, flop, MX_F_PORT_CLOSE, NULL, node);
    }
    if (block->seen_port_empty) {
        s_error_set (block->error, MX_BODY_PROTOCOL, "%s: PORT beside an empty PORT (line %d)",
                     block->where, s_line (node));
        return -1;
    }
    char *poid = s_port_part (node, "POID");
    char *potm = s_port_part (node, "POTM");
    int rc = 0;
    if (poid && strcmp (poid, "O") == 0)
        rc = s_put_scalar (block, flop, MX_F_PORT_OPEN, potm, node);
    else
    if (poid && strcmp (poid, "C") == 0)
        rc = s_put_scalar (block, flop, MX_F_PORT_CLOSE, potm, node);
    else {
        char quoted [S_QUOTE_BUFSIZE];
        s_error_set (block->error, MX_BODY_PROTOCOL, "%s: PORT POID '%s' is not O or C (line %d)",
                     block->where, s_quote (poid ? poid : "", quoted, sizeof quoted),
                     s_line (node));
        rc = -1;
    }
    free (poid);
    free (potm);
    return rc;
}

static int
s_record_compare (const void *a, const void *b)
{
    int left = ((const mx_set_record_t *) a)->key;
    int right = ((const mx_set_record_t *) b)->key;
    return (left > right) - (left < right);
}

static int
s_read_set_record (s_block_t *block, mx_set_kind_t kind, xmlNodePtr node)
{
    const s_set_def_t *def = &s_sets [kind];
    mx_set_t *set = &block->records [kind];
    char quoted [S_QUOTE_BUFSIZE];
    int key;
    if (*def->key) {
        char *text = s_attr (node, def->key);
        int64_t value = -1;
        bool valid = text && s_parse_int (text, &value) && *text != '-' && *text != '+'
                  && value <= INT_MAX;
        if (!valid)
            s_error_set (block->error, MX_BODY_PROTOCOL,
                         "%s: %s %s '%s' is not a record number (line %d)",
                         block->where, def->element, def->key,
                         s_quote (text ? text : "", quoted, sizeof quoted), s_line (node));
        free (text);
        if (!valid)
            return -1;
        key = (int) value;
        char key_text [16];
        snprintf (key_text, sizeof key_text, "%d", key);
        if (s_seen (&block->keys [kind], key_text, set->count + 1)) {
            s_error_set (block->error, MX_BODY_PROTOCOL,
                         "%s: %s %s %d appears more than once (line %d)",
                         block->where, def->element, def->key, key, s_line (node));
            return -1;
        }
    }
    else
        key = (int) set->count + 1;        //  DELY: position 1..n

    if (set->count == block->capacity [kind]) {
        size_t capacity = block->capacity [kind] ? block->capacity [kind] * 2 : 4;
        mx_set_record_t *records = realloc (set->records, capacity * sizeof (mx_set_record_t));
        assert (records);
        set->records = records;
        block->capacity [kind] = capacity;
    }
    mx_set_record_t *record = &set->records [set->count++];
    memset (record, 0, sizeof *record);
    record->key = key;

    size_t field = 0;
    for (size_t i = 0; i < S_SET_FIELD_COUNT; i++) {
        const s_set_field_def_t *field_def = &s_set_fields [i];
        if (field_def->set != kind)
            continue;
        assert (field < MX_SET_MAX_FIELDS);
        char *text = NULL;
        if (strcmp (field_def->source, "child") == 0) {
            int count;
            xmlNodePtr child = s_child (node, field_def->code, &count);
            if (count > 1 || (child && s_has_elements (child))) {
                s_error_set (block->error, MX_BODY_PROTOCOL,
                             "%s: %s %d: %s %s (line %d)", block->where, def->element, key,
                             field_def->code, count > 1 ? "appears more than once"
                                                        : "holds elements, not a value",
                             s_line (child));
                return -1;
            }
            if (child)
                text = s_own_text (child);
        }
        else
        if (strcmp (field_def->source, "attr") == 0)
            text = s_attr (node, field_def->code);
        else {
            assert (strcmp (field_def->source, "text") == 0);
            text = s_own_text (node);
        }
        if (text && *text) {
            const char *reason = NULL;
            record->values [field] = s_canonical (text, field_def->type, block->zone, &reason);
            if (!record->values [field])
                s_error_set (block->error, MX_BODY_CODEC_ERROR, "%s: %s %d: %s '%s' %s (line %d)",
                             block->where, def->element, key, field_def->code,
                             s_quote (text, quoted, sizeof quoted), reason, s_line (node));
        }
        free (text);
        field++;
    }
    return 0;
}

static int
s_read_set (s_block_t *block, mx_set_kind_t kind, xmlNodePtr node)
{
    block->seen_set [kind] = true;
    if (s_is_empty (node))
        return 0;                   //  "empty element → empty set"
    return s_read_set_record (block, kind, node);
}

static void
s_read_rare (s_block_t *block, mx_rare_t rare, xmlNodePtr node)
{
    block->rare_seen [rare] = true;
    if (s_is_empty (node))
        return;
    if (!block->rare [rare])
        block->rare [rare] = json_array ();
    json_array_append_new (block->rare [rare], s_element_object (node));
}

static void
s_read_unknown (mx_flop_t *flop, xmlNodePtr node)
{
    if (s_is_empty (node)) {
        //  Present and empty clears, as for every known element.
        s_object_add (flop->extra, (const char *) node->name, json_null ());
        return;
    }
    char *text;
    if (node->properties)
        text = s_serialise (node, false);
    else
    if (s_has_elements (node))
        text = s_serialise (node, true);
    else
        text = s_own_text (node);
    s_object_add (flop->extra, (const char *) node->name, json_string (text));
    free (text);
}

static void
s_block_reset (s_block_t *block)
{
    for (int i = 0; i < MX_SET_COUNT; i++)
        mx_set_reset (&block->records [i]);
    for (int i = 0; i < MX_RARE_COUNT; i++)
        json_decref (block->rare [i]);
    for (int i = 0; i < MX_SET_COUNT; i++)
        zhashx_destroy (&block->keys [i]);
}

//  Reads every element of block other than FLID/FFID into flop. Returns
//  -1 on a PROTOCOL problem; a CODEC_ERROR is left in error and the block
//  is read on.
static int
s_decode_block (xmlNodePtr block_node, const mx_tz_t *zone, const char *where,
                mx_flop_t *flop, s_error_t *error)
{
    s_block_t block;
    memset (&block, 0, sizeof block);
    block.zone = zone;
    block.where = where;
    block.error = error;
    if (!flop->extra)
        flop->extra = json_object ();

    int rc = 0;
    for (xmlNodePtr node = block_node->children; node && rc == 0; node = node->next) {
        if (node->type != XML_ELEMENT_NODE)
            continue;
        int index;
        switch (s_classify ((const char *) node->name, &index)) {
            case S_ELEMENT_IDENT:
                break;
            case S_ELEMENT_SCALAR:
                rc = s_read_scalar (&block, flop, (mx_scalar_t) index, node);
                break;
            case S_ELEMENT_ATTR_SCALAR:
                rc = s_read_attr_scalar (&block, flop, &s_attr_scalars [index], node);
                break;
            case S_ELEMENT_PORT:
                rc = s_read_port (&block, flop, node);
                break;
            case S_ELEMENT_SET:
                rc = s_read_set (&block, (mx_set_kind_t) index, node);
                break;
            case S_ELEMENT_RARE:
                s_read_rare (&block, (mx_rare_t) index, node);
                break;
            case S_ELEMENT_UNKNOWN:
                s_read_unknown (flop, node);
                break;
        }
    }
    if (rc == 0) {
        for (int i = 0; i < MX_SET_COUNT; i++) {
            if (!block.seen_set [i])
                continue;
            mx_set_t *set = &block.records [i];
            if (set->count > 1)
                qsort (set->records, set->count, sizeof (mx_set_record_t), s_record_compare);
            flop->set_presence [i] = MX_PRESENT;
            flop->sets [i] = *set;
            memset (set, 0, sizeof *set);
        }
        for (int i = 0; i < MX_RARE_COUNT; i++) {
            if (!block.rare_seen [i])
                continue;
            flop->rare_presence [i] = block.rare [i] ? MX_PRESENT : MX_CLEARED;
            flop->rare [i] = block.rare [i];
            block.rare [i] = NULL;
        }
    }
    s_block_reset (&block);
    return rc;
}

static bool
s_touches_anything (const mx_flop_t *flop)
{
    for (int i = 0; i < MX_F_COUNT; i++)
        if (flop->scalar_presence [i] != MX_ABSENT)
            return true;
    for (int i = 0; i < MX_SET_COUNT; i++)
        if (flop->set_presence [i] != MX_ABSENT)
            return true;
    for (int i = 0; i < MX_RARE_COUNT; i++)
        if (flop->rare_presence [i] != MX_ABSENT)
            return true;
    return false;
}

//  FLID and FFID of a block: exactly one FLID, a positive integer; FFID
//  at most once (NULL when absent or empty).
static int
s_read_ident (xmlNodePtr block, const char *what, int64_t *flid, char **ffid, s_error_t *error)
{
    int count;
    xmlNodePtr node = s_child (block, "FLID", &count);
    if (!node) {
        s_error_set (error, MX_BODY_PROTOCOL, "%s: FLID is missing (line %d)", what,
                     s_line (block));
        return -1;
    }
    if (count > 1) {
        s_error_set (error, MX_BODY_PROTOCOL, "%s: FLID appears %d times (line %d)", what,
                     count, s_line (node));
        return -1;
    }
    char *text = s_own_text (node);
    bool valid = !s_has_elements (node) && s_parse_flid (text, flid);
    if (!valid) {
        char quoted [S_QUOTE_BUFSIZE];
        s_error_set (error, MX_BODY_PROTOCOL, "%s: FLID '%s' is not a positive integer (line %d)",
                     what, s_quote (text, quoted, sizeof quoted), s_line (node));
    }
    free (text);
    if (!valid)
        return -1;
    if (ffid) {
        node = s_child (block, "FFID", &count);
        if (count > 1) {
            s_error_set (error, MX_BODY_PROTOCOL, "%s: FFID appears %d times (line %d)", what,
                         count, s_line (node));
            return -1;
        }
        *ffid = node ? s_own_text (node) : NULL;
        if (*ffid && !**ffid) {
            free (*ffid);
            *ffid = NULL;
        }
    }
    return 0;
}

// ---------------------------------------------------------------------------
//  SCHD

//  RECS of parent: present once, a non-negative integer.
static int
s_read_recs (xmlNodePtr parent, int *declared, s_error_t *error)
{
    int count;
    xmlNodePtr node = s_child (parent, "RECS", &count);
    if (!node) {
        s_error_set (error, MX_BODY_PROTOCOL, "RECS is missing (line %d)", s_line (parent));
        return -1;
    }
    if (count > 1) {
        s_error_set (error, MX_BODY_PROTOCOL, "RECS appears %d times (line %d)", count,
                     s_line (node));
        return -1;
    }
    char *text = s_own_text (node);
    int64_t value = -1;
    bool valid = !s_has_elements (node) && *text != '-' && *text != '+'
              && s_parse_int (text, &value) && value <= INT_MAX;
    if (!valid) {
        char quoted [S_QUOTE_BUFSIZE];
        s_error_set (error, MX_BODY_PROTOCOL, "RECS '%s' is not a record count (line %d)",
                     s_quote (text, quoted, sizeof quoted), s_line (node));
    }
    free (text);
    if (!valid)
        return -1;
    *declared = (int) value;
    return 0;
}

//  SCHD body: RECS equal to the FLTR count, and every FLTR's FLID valid and
//  unique. Fills flids (malloc'd, *count entries) and the FLTR nodes.
static int
s_read_schd_frame (const mx_sis_msg_t *msg, int *declared, int64_t **flids,
                   xmlNodePtr **nodes, size_t *count, s_error_t *error)
{
    xmlNodePtr schd = mx_sis_body (msg);
    if (!schd) {
        s_error_set (error, MX_BODY_PROTOCOL, "no <SCHD> in MSG");
        return -1;
    }
    if (s_read_recs (schd, declared, error) == -1)
        return -1;
    int fltr_count;
    s_child (schd, "FLTR", &fltr_count);
    if (fltr_count != *declared) {
        s_error_set (error, MX_BODY_PROTOCOL, "RECS %d but %d FLTR record(s)", *declared,
                     fltr_count);
        return -1;
    }
    *count = (size_t) fltr_count;
    *flids = s_alloc ((*count + 1) * sizeof (int64_t));
    *nodes = s_alloc ((*count + 1) * sizeof (xmlNodePtr));
    size_t index = 0;
    zhashx_t *seen = NULL;
    for (xmlNodePtr node = schd->children; node; node = node->next) {
        if (!s_named (node, "FLTR"))
            continue;
        char what [32];
        snprintf (what, sizeof what, "FLTR %zu", index + 1);
        int64_t flid;
        if (s_read_ident (node, what, &flid, NULL, error) == -1) {
            zhashx_destroy (&seen);
            return -1;
        }
        char flid_text [24];
        snprintf (flid_text, sizeof flid_text, "%lld", (long long) flid);
        size_t first = s_seen (&seen, flid_text, index + 1);
        if (first) {
            s_error_set (error, MX_BODY_PROTOCOL, "%s: FLID %lld repeats FLTR %zu (line %d)",
                         what, (long long) flid, first, s_line (node));
            zhashx_destroy (&seen);
            return -1;
        }
        (*flids) [index] = flid;
        (*nodes) [index] = node;
        index++;
    }
    zhashx_destroy (&seen);
    return 0;
}

//  The mandatory FLTR fields, checked on the raw text so that a bad SODT is
//  PROTOCOL (the package cannot be placed on a day), not CODEC_ERROR.
static int
s_check_mandatory (xmlNodePtr fltr, const char *where, const mx_tz_t *zone, s_error_t *error)
{
    static const char *fields [] = { "ALCD", "FLNO", "MVIN", "SODT", "FLTY", "FLIN", "ACFT" };
    char quoted [S_QUOTE_BUFSIZE];
    for (size_t i = 0; i < sizeof fields / sizeof fields [0]; i++) {
        const char *field = fields [i];
        xmlNodePtr node = s_child (fltr, field, NULL);
        char *text = node && !s_has_elements (node) ? s_own_text (node) : NULL;
        const char *problem = NULL;
        if (!node)
            problem = "is missing";
        else
        if (!text)
            problem = "holds elements, not a value";
        else
        if (!*text)
            problem = "is empty";
        else
        if (strcmp (field, "MVIN") == 0 && strcmp (text, "A") != 0 && strcmp (text, "D") != 0)
            problem = "is not A or D";
        else
        if (strcmp (field, "FLIN") == 0 && strcmp (text, "D") != 0 && strcmp (text, "I") != 0
        &&  strcmp (text, "M") != 0)
            problem = "is not D, I or M";
        else
        if (strcmp (field, "SODT") == 0 && mx_sis_parse_datetime (text, zone) == -1)
            problem = "is not a valid date-time ddMONyyHHmm, so no operation day";
        if (problem) {
            if (text && *text)
                s_error_set (error, MX_BODY_PROTOCOL, "%s: %s '%s' %s (line %d)", where, field,
                             s_quote (text, quoted, sizeof quoted), problem, s_line (node));
            else
                s_error_set (error, MX_BODY_PROTOCOL, "%s: %s %s (line %d)", where, field,
                             problem, s_line (node ? node : fltr));
            free (text);
            return -1;
        }
        free (text);
    }
    return 0;
}

//  A decoded FLTR block as a full flight: CLEARED and ABSENT are NULL.
static mx_flight_t *
s_flight_from (int64_t flid, mx_flop_t *decoded)
{
    mx_flight_t *flight = mx_flight_new (flid);
    assert (flight);
    for (int i = 0; i < MX_F_COUNT; i++)
        if (decoded->scalar_presence [i] == MX_PRESENT)
            mx_flight_set_scalar (flight, (mx_scalar_t) i, decoded->scalars [i]);
    for (int i = 0; i < MX_SET_COUNT; i++)
        if (decoded->sets [i].count > 0)
            mx_flight_set_set (flight, (mx_set_kind_t) i, &decoded->sets [i]);
    for (int i = 0; i < MX_RARE_COUNT; i++) {
        json_decref (flight->rare [i]);
        flight->rare [i] = decoded->rare [i];
        decoded->rare [i] = NULL;
    }
    //  A FLTR is the full state: an empty unknown element is no value.
    const char *code;
    void *scratch;
    json_t *value;
    json_object_foreach_safe (decoded->extra, scratch, code, value)
        if (json_is_null (value))
            json_object_del (decoded->extra, code);
    json_decref (flight->extra);
    flight->extra = decoded->extra;
    decoded->extra = NULL;
    return flight;
}

mx_body_status_t
mx_sis_schedule (const mx_sis_msg_t *msg, const mx_tz_t *zone, mx_schedule_t **out,
                 char **error)
{
    assert (msg && zone && out);
    mx_sis_kind_t kind = mx_sis_kind (msg);
    assert (kind == MX_SIS_KIND_SCHD_DNLD || kind == MX_SIS_KIND_SCHD_RESP
         || kind == MX_SIS_KIND_SCHD_ADFT);
    *out = NULL;
    s_error_t failure = { MX_BODY_OK, NULL };
    int declared = 0;
    int64_t *flids = NULL;
    xmlNodePtr *nodes = NULL;
    size_t count = 0;
    mx_flop_t **decoded = NULL;
    int rc = s_read_schd_frame (msg, &declared, &flids, &nodes, &count, &failure);
    if (rc == 0) {
        //  Every record is checked before anything is built.
        decoded = s_alloc ((count + 1) * sizeof (mx_flop_t *));
        for (size_t i = 0; i < count && rc == 0; i++) {
            char where [64];
            snprintf (where, sizeof where, "FLTR %zu (FLID %lld)", i + 1, (long long) flids [i]);
            rc = s_check_mandatory (nodes [i], where, zone, &failure);
            if (rc == 0) {
                decoded [i] = s_alloc (sizeof (mx_flop_t));
                decoded [i]->flid = flids [i];
                decoded [i]->extra = json_object ();
                rc = s_decode_block (nodes [i], zone, where, decoded [i], &failure);
            }
            if (rc == 0) {
                int ffid_count;
                xmlNodePtr ffid = s_child (nodes [i], "FFID", &ffid_count);
                if (ffid_count > 1) {
                    s_error_set (&failure, MX_BODY_PROTOCOL, "%s: FFID appears %d times (line %d)",
                                 where, ffid_count, s_line (ffid));
                    rc = -1;
                }
                else
                if (ffid) {
                    decoded [i]->ffid = s_own_text (ffid);
                    if (!*decoded [i]->ffid) {
                        free (decoded [i]->ffid);
                        decoded [i]->ffid = NULL;
                    }
                }
            }
        }
    }
    if (failure.status == MX_BODY_OK) {
        mx_schedule_t *schedule = s_alloc (sizeof (mx_schedule_t));
        schedule->declared = declared;
        schedule->count = count;
        schedule->records = s_alloc ((count + 1) * sizeof (mx_fltr_t));
        for (size_t i = 0; i < count; i++) {
            schedule->records [i].flight = s_flight_from (flids [i], decoded [i]);
            schedule->records [i].ffid = decoded [i]->ffid;
            decoded [i]->ffid = NULL;
        }
        *out = schedule;
    }
    for (size_t i = 0; decoded && i < count; i++)
        mx_flop_destroy (&decoded [i]);
    free (decoded);
    free (flids);
    free (nodes);
    return s_error_return (&failure, error);
}

mx_body_status_t
mx_sis_schedule_del (const mx_sis_msg_t *msg, int64_t **flids, size_t *count, char **error)
{
    assert (msg && flids && count);
    assert (mx_sis_kind (msg) == MX_SIS_KIND_SCHD_DEL);
    *flids = NULL;
    *count = 0;
    s_error_t failure = { MX_BODY_OK, NULL };
    int declared;
    int64_t *list = NULL;
    xmlNodePtr *nodes = NULL;
    size_t length = 0;
    if (s_read_schd_frame (msg, &declared, &list, &nodes, &length, &failure) == 0) {
        *flids = list;
        *count = length;
        list = NULL;
    }
    free (list);
    free (nodes);
    return s_error_return (&failure, error);
}

// ---------------------------------------------------------------------------
//  FLOP and FDEL

//  Exactly one element named name (or, with other, named either) in MSG.
static int
s_count_blocks (xmlNodePtr block, const char *name, const char *other)
{
    int count = 0;
    for (xmlNodePtr node = block->parent ? block->parent->children : block; node;
         node = node->next)
        if (s_named (node, name) || (other && s_named (node, other)))
            count++;
    return count;
}

static int
s_read_fdel (xmlNodePtr flop, mx_flop_t *out, s_error_t *error)
{
    int count;
    xmlNodePtr fdel = s_child (flop, "FDEL", &count);
    if (count > 1) {
        s_error_set (error, MX_BODY_PROTOCOL, "FLOP (FLID %lld): FDEL appears %d times (line %d)",
                     (long long) out->flid, count, s_line (fdel));
        return -1;
    }
    if (fdel && !s_is_empty (fdel)) {
        s_error_set (error, MX_BODY_PROTOCOL, "FLOP (FLID %lld): FDEL must be empty (line %d)",
                     (long long) out->flid, s_line (fdel));
        return -1;
    }
    out->fdel = true;
    return 0;
}

mx_body_status_t
mx_sis_flop (const mx_sis_msg_t *msg, const mx_tz_t *zone, mx_flop_t **out, char **error)
{
    assert (msg && zone && out);
    mx_sis_kind_t kind = mx_sis_kind (msg);
    assert (kind == MX_SIS_KIND_FLOP || kind == MX_SIS_KIND_FDEL);
    *out = NULL;
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    s_error_t failure = { MX_BODY_OK, NULL };
    xmlNodePtr block = mx_sis_body (msg);
    bool fdel_block = block && s_named (block, "FDEL");
    if (!block || (!s_named (block, "FLOP") && !fdel_block)) {
        s_error_set (&failure, MX_BODY_PROTOCOL, "%s/%s: no <FLOP> block", meta->type, meta->styp);
        return s_error_return (&failure, error);
    }
    int blocks = kind == MX_SIS_KIND_FDEL && strcmp (meta->type, "FDEL") == 0
               ? s_count_blocks (block, "FLOP", "FDEL")
               : s_count_blocks (block, "FLOP", NULL);
    if (blocks != 1) {
        s_error_set (&failure, MX_BODY_PROTOCOL, "%s/%s: %d <%s> blocks, expected exactly one",
                     meta->type, meta->styp, blocks, (const char *) block->name);
        return s_error_return (&failure, error);
    }
    mx_flop_t *flop = s_alloc (sizeof (mx_flop_t));
    flop->extra = json_object ();
    int rc = s_read_ident (block, fdel_block ? "FDEL" : "FLOP", &flop->flid, &flop->ffid,
                           &failure);
    if (rc == 0 && kind == MX_SIS_KIND_FDEL) {
        snprintf (flop->styp, sizeof flop->styp, "FDEL");
        if (fdel_block)
            flop->fdel = true;
        else
            rc = s_read_fdel (block, flop, &failure);
    }
    else
    if (rc == 0) {
        snprintf (flop->styp, sizeof flop->styp, "%s", meta->styp);
        char where [48];
        snprintf (where, sizeof where, "FLOP (FLID %lld)", (long long) flop->flid);
        rc = s_decode_block (block, zone, where, flop, &failure);
        if (rc == 0 && failure.status == MX_BODY_OK && !s_touches_anything (flop)) {
            char *names = json_dumps (flop->extra, JSON_COMPACT | JSON_SORT_KEYS);
            char quoted [S_QUOTE_BUFSIZE];
            s_error_set (&failure, MX_BODY_UNSUPPORTED,
                         "%s: FLOP/%s carries no element this codec knows (only %s)",
                         where, meta->styp, s_quote (names ? names : "{}", quoted, sizeof quoted));
            free (names);
        }
    }
    if (failure.status == MX_BODY_OK)
        *out = flop;
    else
        mx_flop_destroy (&flop);
    return s_error_return (&failure, error);
}

// ---------------------------------------------------------------------------
//  Reference lists

mx_body_status_t
mx_sis_reference (const mx_sis_msg_t *msg, mx_reference_t **out, char **error)
{
    assert (msg && out);
    assert (mx_sis_kind (msg) == MX_SIS_KIND_REFERENCE);
    *out = NULL;
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    s_error_t failure = { MX_BODY_OK, NULL };
    xmlNodePtr root = mx_sis_body (msg);
    assert (root);
    int declared;
    if (s_read_recs (root, &declared, &failure) == -1)
        return s_error_return (&failure, error);
    int count;
    s_child (root, meta->type, &count);
    if (count != declared) {
        s_error_set (&failure, MX_BODY_PROTOCOL, "RECS %d but %d %s record(s)", declared, count,
                     meta->type);
        return s_error_return (&failure, error);
    }
    mx_reference_t *reference = s_alloc (sizeof (mx_reference_t));
    snprintf (reference->rtype, sizeof reference->rtype, "%s", meta->type);
    snprintf (reference->styp, sizeof reference->styp, "%s", meta->styp);
    reference->declared = declared;
    reference->records = s_alloc (((size_t) count + 1) * sizeof (mx_ref_record_t));
    zhashx_t *seen = NULL;
    for (xmlNodePtr node = root->children; node; node = node->next) {
        if (!s_named (node, meta->type))
            continue;
        size_t index = reference->count + 1;
        xmlNodePtr first = node->children;
        while (first && first->type != XML_ELEMENT_NODE)
            first = first->next;
        char *key = first && !s_has_elements (first) ? s_own_text (first) : NULL;
        if (!key || !*key) {
            s_error_set (&failure, MX_BODY_PROTOCOL, "%s %zu: %s (line %d)", meta->type, index,
                         !first ? "has no key element"
                                : key ? "key is empty" : "key holds elements, not a value",
                         s_line (first ? first : node));
            free (key);
            break;
        }
        size_t first_at = s_seen (&seen, key, index);
        if (first_at) {
            char quoted [S_QUOTE_BUFSIZE];
            s_error_set (&failure, MX_BODY_PROTOCOL, "%s %zu: key '%s' repeats %s %zu (line %d)",
                         meta->type, index, s_quote (key, quoted, sizeof quoted),
                         meta->type, first_at, s_line (node));
        }
        if (failure.status != MX_BODY_OK) {
            free (key);
            break;
        }
        mx_ref_record_t *record = &reference->records [reference->count++];
        record->key = key;
        record->value = s_element_object (node);
    }
    zhashx_destroy (&seen);
    if (failure.status == MX_BODY_OK)
        *out = reference;
    else
        mx_reference_destroy (&reference);
    return s_error_return (&failure, error);
}

void
mx_reference_destroy (mx_reference_t **self_p)
{
    assert (self_p);
    mx_reference_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->count; i++) {
        free (self->records [i].key);
        json_decref (self->records [i].value);
    }
    free (self->records);
    free (self);
    *self_p = NULL;
}

size_t
mx_sis_body_flids (const mx_sis_msg_t *msg, int64_t **flids)
{
    *flids = NULL;
    xmlNodePtr body = mx_sis_body (msg);
    xmlXPathContextPtr context = body ? xmlXPathNewContext (body->doc) : NULL;
    xmlXPathObjectPtr found = context ? xmlXPathNodeEval (body, (const xmlChar *) ".//FLID", context) : NULL;
    int nodes = found && found->nodesetval ? found->nodesetval->nodeNr : 0;
    size_t count = 0;
    if (nodes > 0)
        *flids = (int64_t *) calloc ((size_t) nodes, sizeof (int64_t));
    for (int i = 0; *flids && i < nodes; i++) {
        xmlChar *text = xmlNodeGetContent (found->nodesetval->nodeTab [i]);
        char *end = NULL;
        long long flid = text ? strtoll ((const char *) text, &end, 10) : 0;
        if (text && end && *end == 0 && flid > 0)
            (*flids) [count++] = flid;
        xmlFree (text);
    }
    xmlXPathFreeObject (found);
    xmlXPathFreeContext (context);
    return count;
}
