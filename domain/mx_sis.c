/*  mx_sis - see mx_sis.h.  */
#include "mx_sis.h"
#include "mx_metrics.h"
#include "mx_utf8.h"

#include <assert.h>
#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <libxml/SAX2.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>

//  No NOENT / DTDLOAD / DTDATTR / XINCLUDE / HUGE, ever. NOCDATA: body
//  decoders see CDATA as plain text. BIG_LINES: true line numbers in errors.
//  COMPACT: a short text (most values) lives inside its node instead of
//  in an allocation of its own (about 1 MiB less for a 2,000-flight DNLD).
#define S_PARSE_OPTIONS \
    (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA \
     | XML_PARSE_BIG_LINES | XML_PARSE_COMPACT)

//  Bytes handed to the push parser at a time.
#define S_PUSH_CHUNK ((size_t) 256 * 1024)

//  Longest excerpt of a bad value quoted in an error line.
#define S_QUOTE_MAX 40

struct _mx_sis_msg_t {
    xmlDocPtr doc;
    mx_sis_meta_t meta;
    mx_sis_kind_t kind;
    xmlNodePtr body;
    void *payload;                  //  decoded body, attached by a body decoder
    void (*payload_free) (void *);
};

//  What libxml2 reports while parsing one message.
typedef struct {
    char message [160];
    int code;
    int line;
    int column;
    bool set;
} s_xml_error_t;

typedef struct {
    s_xml_error_t fatal;            //  first fatal error of the parser
    s_xml_error_t encoding;         //  first conversion or input error
} s_xml_errors_t;

static const char *s_kind_names [MX_SIS_KIND_COUNT] = {
    "SCHD_DNLD", "SCHD_RESP", "SCHD_ADFT", "SCHD_DEL", "FLOP", "FDEL", "REFERENCE", "OTHER"
};

//  WIRE.md §7.
static const char *s_reference_types [] = {
    "GLST", "SLST", "CLST", "BLST", "CHLT", "PLST", "TLST", "ABDG", "AIRC", "AIRL", "ARPT",
    "CITY", "COUL", "REGL", "ABNR", "DLYL", "HLTR", "ORGN", "STTS", "FLTL", "VIPL", "VIPS",
    "REGN", NULL
};

static const char *s_reference_styps [] = { "DNLD", "RESP", "ADD", "UPD", "DEL", NULL };

//  WIRE.md §6: the 48 FLOP subtypes.
static const char *s_flop_subtypes [] = {
    "FLTY", "FLIN", "ACFT", "RENO", "TRML", "MAXP", "RUNW", "STND", "TAOP", "HNAG",
    "EXSS", "FTSS", "REMC", "VIPP", "CNCL", "FDIV", "FRET", "FLAB", "APPT", "BOTM",
    "LACL", "FINT", "EGSR", "EGST", "COBT", "CTOT", "EOBT", "TOBT", "IEST", "PEDT",
    "NEAT", "PADT", "NAAT", "PORT", "PSDT", "GTDT", "CKDT", "CLDT", "CHDT", "ABTM",
    "CHOT", "DELY", "ROUT", "ERUT", "PSHT", "TIPT", "SRVT", "VIPF", NULL
};

//  Subtypes carried by elements other than the one named like the subtype
//  (WIRE.md §6 "FLOP rules"): any one of them is enough.
typedef struct {
    const char *styp;
    const char *elements [4];       //  NULL-terminated
} s_flop_carrier_t;

static const s_flop_carrier_t s_flop_carriers [] = {
    { "HNAG", { "FHAG", "PHAG", "MHAG", NULL } },
    { "TAOP", { "TAOP", "TAFL", "TAID", NULL } },
    { "EXSS", { "EXSC", "EXSR", NULL, NULL } },
    { "VIPP", { "VIPP", "VIPR", NULL, NULL } },
};

static pthread_once_t s_defaults_once = PTHREAD_ONCE_INIT;
static mx_xml_shape_t s_default_limits;

static void
s_load_default_limits (void)
{
    //  The defaults live in the configuration table, nowhere else.
    mx_config_t *defaults = mx_config_new_defaults ();
    assert (defaults);
    s_default_limits = mx_sis_limits (defaults);
    mx_config_destroy (&defaults);
}

mx_xml_shape_t
mx_sis_limits (const mx_config_t *config)
{
    assert (config);
    return (mx_xml_shape_t) {
#define S_LIMIT(member, key, doc) \
        .member = config->codec_max_##member > 0 ? (size_t) config->codec_max_##member : 0,
        MX_XML_BOUNDS (S_LIMIT)
#undef S_LIMIT
    };
}

//  The options' bounds, defaults where a member is 0.
static mx_xml_shape_t
s_limits (const mx_sis_options_t *options)
{
    pthread_once (&s_defaults_once, s_load_default_limits);
    mx_xml_shape_t limits = options->limits;
#define S_DEFAULT(member, key, doc) \
    if (limits.member == 0) \
        limits.member = s_default_limits.member;
    MX_XML_BOUNDS (S_DEFAULT)
#undef S_DEFAULT
    return limits;
}

static void
s_set_error (char **error, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
s_set_error (char **error, const char *fmt, ...)
{
    if (!error)
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
    //  And valid UTF-8: libxml2 quotes input cut mid-character, and an
    //  error PostgreSQL cannot store would hold the FIFO forever.
    size_t length = text ? strlen (text) : 0;
    for (size_t at = 0; at < length; at++) {
        at += mx_utf8_invalid_at ((const unsigned char *) text + at, length - at);
        if (at < length)
            text [at] = '?';
    }
    *error = text;
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
    //  Never cut a UTF-8 sequence in half.
    if (value [out] != '\0') {
        while (out > 0 && ((unsigned char) value [out] & 0xC0) == 0x80)
            out--;
        memcpy (buf + out, "...", 3);
        out += 3;
    }
    buf [out] = '\0';
    return buf;
}

static bool
s_in_list (const char *value, const char *const *list)
{
    for (size_t i = 0; list [i]; i++)
        if (strcmp (value, list [i]) == 0)
            return true;
    return false;
}

bool
mx_sis_is_reference_type (const char *type)
{
    assert (type);
    return s_in_list (type, s_reference_types);
}

bool
mx_sis_is_flop_subtype (const char *styp)
{
    assert (styp);
    return s_in_list (styp, s_flop_subtypes);
}

const char *
mx_sis_kind_name (mx_sis_kind_t kind)
{
    assert ((int) kind >= 0 && kind < MX_SIS_KIND_COUNT);
    return s_kind_names [kind];
}

const char *
mx_sis_status_name (mx_sis_status_t status)
{
    switch (status) {
        case MX_SIS_OK:          return "OK";
        case MX_SIS_MALFORMED:   return "MALFORMED";
        case MX_SIS_CODEC_ERROR: return "CODEC_ERROR";
    }
    assert (false);
    return "?";
}

// ---------------------------------------------------------------------------
//  Before parsing: encoding and prolog

static bool
s_starts (const char *p, const char *end, const char *prefix)
{
    size_t length = strlen (prefix);
    return (size_t) (end - p) >= length && memcmp (p, prefix, length) == 0;
}

static const char *
s_find (const char *p, const char *end, const char *needle)
{
    size_t length = strlen (needle);
    for (; (size_t) (end - p) >= length; p++)
        if (memcmp (p, needle, length) == 0)
            return p;
    return NULL;
}

static bool
s_is_space (char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

//  The encoding declared in the XML declaration that starts at p, copied
//  into buf ("" when none is declared). The declaration's syntax is left
//  to libxml2: this only finds the name.
static void
s_declared_encoding (const char *p, const char *end, char *buf, size_t size)
{
    buf [0] = '\0';
    if (!s_starts (p, end, "<?xml") || end - p < 6 || !s_is_space (p [5]))
        return;
    const char *close = s_find (p, end, "?>");
    if (!close)
        return;
    const char *scan = s_find (p, close, "encoding");
    if (!scan)
        return;
    scan += strlen ("encoding");
    while (scan < close && s_is_space (*scan))
        scan++;
    if (scan >= close || *scan++ != '=')
        return;
    while (scan < close && s_is_space (*scan))
        scan++;
    if (scan >= close || (*scan != '"' && *scan != '\''))
        return;
    char quote = *scan++;
    size_t length = 0;
    while (scan < close && *scan != quote && length + 1 < size)
        buf [length++] = *scan++;
    buf [length] = '\0';
}

//  Refuses, before libxml2 sees the text, what must never be parsed: text
//  in an encoding we do not support, and any markup declaration ("<!" other
//  than a comment) before the root element, i.e. a DOCTYPE with its DTD and
//  entity declarations. Comments and processing instructions are skipped.
//  The scanned bytes are ASCII in both UTF-8 and GB18030 ('<', '!', '-',
//  '?' and '>' never occur inside a GB18030 multi-byte character).
static int
s_check_prolog (const char *xml, size_t size, bool raw_bytes, bool *gb18030_bytes,
                mx_sis_status_t *status, char **error)
{
    *gb18030_bytes = false;
    const char *p = xml;
    const char *end = xml + size;
    const unsigned char *bytes = (const unsigned char *) xml;
    bool utf8_bom = false;
    if (size >= 2 && ((bytes [0] == 0xFE && bytes [1] == 0xFF)
                  ||  (bytes [0] == 0xFF && bytes [1] == 0xFE)
                  ||  bytes [0] == 0 || bytes [1] == 0)) {
        *status = MX_SIS_CODEC_ERROR;
        s_set_error (error, "encoding UTF-16/UTF-32 is not supported (only UTF-8 and GB18030)");
        return -1;
    }
    if (size >= 3 && bytes [0] == 0xEF && bytes [1] == 0xBB && bytes [2] == 0xBF) {
        utf8_bom = true;
        p += 3;
    }
    //  "<?xm" in EBCDIC: libxml2 would detect it and convert.
    if (s_starts (p, end, "\x4C\x6F\xA7\x94")) {
        *status = MX_SIS_CODEC_ERROR;
        s_set_error (error, "encoding EBCDIC is not supported (only UTF-8 and GB18030)");
        return -1;
    }
    char encoding [48];
    s_declared_encoding (p, end, encoding, sizeof encoding);
    if (*encoding) {
        bool utf8 = strcasecmp (encoding, "UTF-8") == 0;
        bool gb18030 = strcasecmp (encoding, "GB18030") == 0;
        if (!utf8 && !gb18030) {
            char quoted [S_QUOTE_MAX + 8];
            *status = MX_SIS_CODEC_ERROR;
            s_set_error (error, "encoding %s is not supported (only UTF-8 and GB18030)",
                         s_quote (encoding, quoted, sizeof quoted));
            return -1;
        }
        if (gb18030 && utf8_bom) {
            *status = MX_SIS_MALFORMED;
            s_set_error (error, "not well-formed XML: a UTF-8 byte order mark "
                                "contradicts encoding GB18030");
            return -1;
        }
        *gb18030_bytes = gb18030 && raw_bytes;
    }
    while (p < end) {
        if (s_is_space (*p))
            p++;
        else
        if (s_starts (p, end, "<!--")) {
            const char *close = s_find (p + 4, end, "-->");
            if (!close)
                break;              //  libxml2 reports the open comment
            p = close + 3;
        }
        else
        if (s_starts (p, end, "<!")) {
            *status = MX_SIS_MALFORMED;
            s_set_error (error, "DOCTYPE not allowed: DTDs and entity declarations "
                                "are refused (offset %zu)", (size_t) (p - xml));
            return -1;
        }
        else
        if (s_starts (p, end, "<?")) {
            const char *close = s_find (p + 2, end, "?>");
            if (!close)
                break;
            p = close + 2;
        }
        else
            break;                  //  the root element, or text libxml2 refuses
    }
    return 0;
}

// ---------------------------------------------------------------------------
//  Parsing

#if LIBXML_VERSION >= 21200
typedef const xmlError *s_error_ptr_t;
#else
typedef xmlErrorPtr s_error_ptr_t;
#endif

static void
s_keep_error (s_xml_error_t *slot, s_error_ptr_t error)
{
    if (slot->set)
        return;
    slot->set = true;
    slot->code = error->code;
    slot->line = error->line;
    slot->column = error->int2;
    snprintf (slot->message, sizeof slot->message, "%s",
              error->message ? error->message : "unknown error");
    //  libxml2 messages end with a newline.
    size_t length = strlen (slot->message);
    while (length > 0 && s_is_space (slot->message [length - 1]))
        slot->message [--length] = '\0';
}

//  Errors of the parser context; userData of a fresh context is the
//  context itself.
static void
s_context_error (void *data, s_error_ptr_t error)
{
    xmlParserCtxtPtr ctxt = (xmlParserCtxtPtr) data;
    s_xml_errors_t *errors = ctxt ? (s_xml_errors_t *) ctxt->_private : NULL;
    if (!errors || !error)
        return;
    if (error->domain == XML_FROM_I18N || error->domain == XML_FROM_IO)
        s_keep_error (&errors->encoding, error);
    else
    if (error->level == XML_ERR_FATAL)
        s_keep_error (&errors->fatal, error);
}

//  libxml2 reports failed input conversion (invalid GB18030 bytes) without
//  a context; this catches those instead of libxml2 printing them to stderr.
static void
s_thread_error (void *data, s_error_ptr_t error)
{
    s_xml_errors_t *errors = (s_xml_errors_t *) data;
    if (errors && error && error->level >= XML_ERR_ERROR)
        s_keep_error (&errors->encoding, error);
}

static bool
s_is_element (xmlNodePtr node, const char *name)
{
    return node && node->type == XML_ELEMENT_NODE && strcmp ((const char *) node->name, name) == 0;
}

//  SCHD under the root MSG, or FLTR under it: elements whose own text no
//  decoder reads (their children are taken by name, text skipped).
static bool
s_schedule_frame (xmlNodePtr node)
{
    if (s_is_element (node, "FLTR"))
        node = node->parent;
    return s_is_element (node, "SCHD") && s_is_element (node->parent, "MSG")
        && node->parent->parent && node->parent->parent->type == XML_DOCUMENT_NODE;
}

//  Text handed to the tree. The white space that lays out a schedule
//  between its records and their fields is never read, yet as nodes of
//  their own it was a fifth of a DNLD's tree (6 of 29 MiB for 2,000
//  flights), which sets msgxd's peak memory: it is left out there, and
//  only there (elsewhere blank text may matter: a value, serialised
//  unknown content).
static void
s_characters (void *data, const xmlChar *text, int length)
{
    xmlParserCtxtPtr ctxt = (xmlParserCtxtPtr) data;
    int blank = 0;
    while (blank < length && s_is_space ((char) text [blank]))
        blank++;
    if (blank == length && s_schedule_frame (ctxt->node))
        return;
    xmlSAX2Characters (data, text, length);
}

static xmlDocPtr
s_parse (const char *xml, size_t size, bool raw_bytes, mx_sis_status_t *status, char **error)
{
    //  The push parser returns at its first fatal error (the pull parser
    //  reads on to the end with its callbacks off, at whatever cost the
    //  rest of the text has, which the shape check did not count).
    xmlParserCtxtPtr ctxt = xmlCreatePushParserCtxt (NULL, NULL, NULL, 0, NULL);
    if (!ctxt) {
        *status = MX_SIS_CODEC_ERROR;
        s_set_error (error, "out of memory creating an XML parser");
        return NULL;
    }
    s_xml_errors_t errors;
    memset (&errors, 0, sizeof errors);
    ctxt->_private = &errors;
    //  The SAX handler belongs to this context: no global error handler.
    ctxt->sax->serror = s_context_error;
    //  libxml2 keeps this handler per thread; it is ours only for this call.
    xmlStructuredErrorFunc saved_handler = xmlStructuredError;
    void *saved_context = xmlStructuredErrorContext;
    xmlSetStructuredErrorFunc (&errors, s_thread_error);
    //  Text read from the mailbox is UTF-8 whatever its prolog declares:
    //  the declaration names the bytes the sender wrote, long converted.
    int parse_options = S_PARSE_OPTIONS | (raw_bytes ? 0 : XML_PARSE_IGNORE_ENC);
    xmlDocPtr doc = NULL;
    if (xmlCtxtUseOptions (ctxt, parse_options) == 0) {
        //  Both: with them equal libxml2 asks no heuristic of its own
        //  which white space is ignorable.
        ctxt->sax->characters = s_characters;
        ctxt->sax->ignorableWhitespace = s_characters;
        //  In chunks: libxml2 refuses to look further ahead than 10 MB
        //  ("Huge input lookup") without XML_PARSE_HUGE.
        size_t offset = 0;
        do {
            size_t chunk = size - offset < S_PUSH_CHUNK ? size - offset : S_PUSH_CHUNK;
            bool last = offset + chunk == size;
            xmlParseChunk (ctxt, xml + offset, (int) chunk, last);
            offset += chunk;
            if (!ctxt->wellFormed || ctxt->instate == XML_PARSER_EOF)
                break;
        } while (offset < size);
        doc = ctxt->myDoc;
        ctxt->myDoc = NULL;
    }
    xmlSetStructuredErrorFunc (saved_context, saved_handler);

    //  Namespace errors (an undeclared prefix) are not fatal and are
    //  accepted; a failed conversion fails even if the rest parsed.
    if (!doc || !ctxt->wellFormed || errors.encoding.set) {
        s_xml_error_t *first = errors.encoding.set ? &errors.encoding : &errors.fatal;
        if (!first->set) {
            const xmlError *last = xmlCtxtGetLastError (ctxt);
            first->code = last ? last->code : XML_ERR_INTERNAL_ERROR;
            first->line = last ? last->line : 0;
            first->column = last ? last->int2 : 0;
            snprintf (first->message, sizeof first->message, "%s",
                      last && last->message ? last->message : "unknown error");
        }
        if (first->code == XML_ERR_UNSUPPORTED_ENCODING) {
            *status = MX_SIS_CODEC_ERROR;
            s_set_error (error, "encoding is not supported here: %s", first->message);
        }
        else
        if (first == &errors.encoding) {
            *status = MX_SIS_MALFORMED;
            s_set_error (error, "not well-formed XML: bytes invalid for the declared "
                                "encoding: %s", first->message);
        }
        else {
            *status = MX_SIS_MALFORMED;
            s_set_error (error, "not well-formed XML: %s (line %d, column %d)",
                         first->message, first->line, first->column);
        }
        xmlFreeDoc (doc);
        doc = NULL;
    }
    ctxt->_private = NULL;
    xmlFreeParserCtxt (ctxt);
    return doc;
}

// ---------------------------------------------------------------------------
//  Envelope

static bool
s_named (xmlNodePtr node, const char *name)
{
    return node && node->type == XML_ELEMENT_NODE
        && strcmp ((const char *) node->name, name) == 0;
}

//  First element child of parent named name, or NULL; *count (if not NULL)
//  gets how many there are.
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

static xmlNodePtr
s_first_element_after_meta (xmlNodePtr root)
{
    for (xmlNodePtr node = root->children; node; node = node->next)
        if (node->type == XML_ELEMENT_NODE && !s_named (node, "META"))
            return node;
    return NULL;
}

//  Trimmed text of a leaf element, malloc'd; NULL if it has child elements.
static char *
s_leaf_text (xmlNodePtr node)
{
    for (xmlNodePtr child = node->children; child; child = child->next)
        if (child->type == XML_ELEMENT_NODE)
            return NULL;
    xmlChar *content = xmlNodeGetContent (node);
    const char *start = content ? (const char *) content : "";
    while (s_is_space (*start))
        start++;
    size_t length = strlen (start);
    while (length > 0 && s_is_space (start [length - 1]))
        length--;
    char *text = strndup (start, length);
    xmlFree (content);
    return text;
}

static int
s_fail (mx_sis_status_t *status, char **error, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

static int
s_fail (mx_sis_status_t *status, char **error, const char *fmt, ...)
{
    *status = MX_SIS_MALFORMED;
    if (error) {
        va_list args;
        va_start (args, fmt);
        char *text = NULL;
        if (vasprintf (&text, fmt, args) < 0)
            text = NULL;
        va_end (args);
        s_set_error (error, "%s", text ? text : "out of memory formatting an error");
        free (text);
    }
    return -1;
}

static int
s_check_code (const char *field, const char *value, int line, char *dest,
              mx_sis_status_t *status, char **error)
{
    char quoted [S_QUOTE_MAX + 8];
    size_t length = strlen (value);
    if (length > MX_SIS_CODE_MAX)
        return s_fail (status, error, "META/%s '%s' is longer than %d characters (line %d)",
                       field, s_quote (value, quoted, sizeof quoted), MX_SIS_CODE_MAX, line);
    for (const char *scan = value; *scan; scan++)
        if ((unsigned char) *scan <= ' ' || (unsigned char) *scan >= 0x7f || *scan == '|')
            return s_fail (status, error, "META/%s '%s' may only hold printable ASCII "
                           "other than '|' (line %d)",
                           field, s_quote (value, quoted, sizeof quoted), line);
    memcpy (dest, value, length + 1);
    return 0;
}

static int
s_check_seqn (const char *value, int line, mx_sis_meta_t *meta,
              mx_sis_status_t *status, char **error)
{
    char quoted [S_QUOTE_MAX + 8];
    for (const char *scan = value; *scan; scan++)
        if (!isdigit ((unsigned char) *scan))
            return s_fail (status, error, "META/SEQN '%s' is not a number (line %d)",
                           s_quote (value, quoted, sizeof quoted), line);
    const char *digits = value;
    while (*digits == '0')
        digits++;
    int64_t seqn = 0;
    if (strlen (digits) <= 6)
        for (const char *scan = digits; *scan; scan++)
            seqn = seqn * 10 + (*scan - '0');
    else
        seqn = MX_SIS_SEQN_MAX + 1;
    if (seqn < 1 || seqn > MX_SIS_SEQN_MAX)
        return s_fail (status, error, "META/SEQN '%s' is out of range 1..%d (line %d)",
                       s_quote (value, quoted, sizeof quoted), MX_SIS_SEQN_MAX, line);
    meta->seqn = seqn;
    return 0;
}

static int
s_digits (const char *text, int count)
{
    int value = 0;
    for (int i = 0; i < count; i++)
        value = value * 10 + (text [i] - '0');
    return value;
}

static int
s_check_dttm (const char *value, int line, const mx_tz_t *zone, mx_sis_meta_t *meta,
              mx_sis_status_t *status, char **error)
{
    char quoted [S_QUOTE_MAX + 8];
    bool digits = strlen (value) == 14;
    for (const char *scan = value; *scan && digits; scan++)
        digits = isdigit ((unsigned char) *scan);
    if (!digits)
        return s_fail (status, error, "META/DTTM '%s' is not a timestamp yyyyMMddHHmmss (line %d)",
                       s_quote (value, quoted, sizeof quoted), line);
    int year = s_digits (value, 4);
    int month = s_digits (value + 4, 2);
    int day = s_digits (value + 6, 2);
    int hour = s_digits (value + 8, 2);
    int minute = s_digits (value + 10, 2);
    int second = s_digits (value + 12, 2);
    if (year < 1 || day < 1 || day > mx_tz_days_in_month (year, month)
    ||  hour > 23 || minute > 59 || second > 59)
        return s_fail (status, error, "META/DTTM '%s' is not a valid date and time (line %d)",
                       value, line);
    memcpy (meta->dttm, value, 15);
    meta->dttm_ms = mx_tz_local_to_utc (zone, year, month, day, hour, minute, second);
    return 0;
}

static int
s_read_meta (xmlNodePtr root, const mx_tz_t *zone, mx_sis_meta_t *meta,
             mx_sis_status_t *status, char **error)
{
    int count;
    xmlNodePtr node = s_child (root, "META", &count);
    if (!node)
        return s_fail (status, error, "META is missing");
    if (count > 1)
        return s_fail (status, error, "META appears %d times (line %d)",
                       count, (int) xmlGetLineNo (node));
    static const char *fields [] = { "SNDR", "SEQN", "DTTM", "TYPE", "STYP" };
    for (size_t i = 0; i < sizeof fields / sizeof fields [0]; i++) {
        const char *field = fields [i];
        xmlNodePtr child = s_child (node, field, &count);
        if (!child)
            return s_fail (status, error, "META/%s is missing (META at line %d)",
                           field, (int) xmlGetLineNo (node));
        int line = (int) xmlGetLineNo (child);
        if (count > 1)
            return s_fail (status, error, "META/%s appears %d times (line %d)",
                           field, count, line);
        char *value = s_leaf_text (child);
        int rc;
        if (!value)
            rc = s_fail (status, error, "META/%s holds elements, not a value (line %d)",
                         field, line);
        else
        if (!*value)
            rc = s_fail (status, error, "META/%s is empty (line %d)", field, line);
        else
        if (i == 0)
            rc = s_check_code (field, value, line, meta->sndr, status, error);
        else
        if (i == 1)
            rc = s_check_seqn (value, line, meta, status, error);
        else
        if (i == 2)
            rc = s_check_dttm (value, line, zone, meta, status, error);
        else
            rc = s_check_code (field, value, line, i == 3? meta->type: meta->styp,
                               status, error);
        free (value);
        if (rc == -1)
            return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------
//  Kind and body

static mx_sis_kind_t
s_kind_of (const mx_sis_meta_t *meta)
{
    const char *type = meta->type;
    const char *styp = meta->styp;
    if (strcmp (type, "SCHD") == 0) {
        if (strcmp (styp, "DNLD") == 0)
            return MX_SIS_KIND_SCHD_DNLD;
        if (strcmp (styp, "RESP") == 0)
            return MX_SIS_KIND_SCHD_RESP;
        if (strcmp (styp, "ADFT") == 0)
            return MX_SIS_KIND_SCHD_ADFT;
        if (strcmp (styp, "DEL") == 0)
            return MX_SIS_KIND_SCHD_DEL;
        return MX_SIS_KIND_OTHER;
    }
    if (strcmp (type, "FLOP") == 0) {
        if (strcmp (styp, "FDEL") == 0)
            return MX_SIS_KIND_FDEL;
        return s_in_list (styp, s_flop_subtypes) ? MX_SIS_KIND_FLOP : MX_SIS_KIND_OTHER;
    }
    if (strcmp (type, "FDEL") == 0)
        return MX_SIS_KIND_FDEL;
    if (mx_sis_is_reference_type (type) && s_in_list (styp, s_reference_styps))
        return MX_SIS_KIND_REFERENCE;
    return MX_SIS_KIND_OTHER;
}

//  True if the FLOP block carries an element of the subtype; otherwise
//  names what is missing into buf.
static bool
s_flop_carries (xmlNodePtr flop, const char *styp, char *buf, size_t size)
{
    for (size_t i = 0; i < sizeof s_flop_carriers / sizeof s_flop_carriers [0]; i++) {
        const s_flop_carrier_t *carrier = &s_flop_carriers [i];
        if (strcmp (carrier->styp, styp) != 0)
            continue;
        size_t used = (size_t) snprintf (buf, size, "none of");
        for (int j = 0; carrier->elements [j]; j++) {
            if (s_child (flop, carrier->elements [j], NULL))
                return true;
            used += (size_t) snprintf (buf + used, size - used, "%s <%s>", j? ",": "",
                                       carrier->elements [j]);
        }
        snprintf (buf + used, size - used, " in FLOP (line %d)", (int) xmlGetLineNo (flop));
        return false;
    }
    snprintf (buf, size, "no <%s> in FLOP (line %d)", styp, (int) xmlGetLineNo (flop));
    return s_child (flop, styp, NULL) != NULL;
}

//  Finds the body element of the kind; MALFORMED "payload missing" when it
//  is absent, unless check is false (ignored types).
static int
s_find_body (mx_sis_msg_t *self, xmlNodePtr root, bool check,
             mx_sis_status_t *status, char **error)
{
    const mx_sis_meta_t *meta = &self->meta;
    char missing [128] = "";
    switch (self->kind) {
        case MX_SIS_KIND_SCHD_DNLD:
        case MX_SIS_KIND_SCHD_RESP:
        case MX_SIS_KIND_SCHD_ADFT:
        case MX_SIS_KIND_SCHD_DEL:
            self->body = s_child (root, "SCHD", NULL);
            if (!self->body)
                snprintf (missing, sizeof missing, "no <SCHD> in MSG");
            break;
        case MX_SIS_KIND_FLOP:
            self->body = s_child (root, "FLOP", NULL);
            if (!self->body)
                snprintf (missing, sizeof missing, "no <FLOP> in MSG");
            else
            if (s_flop_carries (self->body, meta->styp, missing, sizeof missing))
                missing [0] = '\0';
            break;
        case MX_SIS_KIND_FDEL:
            if (strcmp (meta->type, "FLOP") == 0) {
                self->body = s_child (root, "FLOP", NULL);
                if (!self->body)
                    snprintf (missing, sizeof missing, "no <FLOP> in MSG");
                else
                if (!s_child (self->body, "FDEL", NULL))
                    snprintf (missing, sizeof missing, "no <FDEL> in FLOP (line %d)",
                              (int) xmlGetLineNo (self->body));
            }
            else {
                for (xmlNodePtr node = root->children; node && !self->body; node = node->next)
                    if (s_named (node, "FDEL") || s_named (node, "FLOP"))
                        self->body = node;
                if (!self->body)
                    snprintf (missing, sizeof missing, "no <FDEL> or <FLOP> in MSG");
            }
            break;
        case MX_SIS_KIND_REFERENCE:
            self->body = root;
            if (!s_child (root, "RECS", NULL))
                snprintf (missing, sizeof missing, "no <RECS> in MSG");
            break;
        case MX_SIS_KIND_OTHER:
            self->body = s_first_element_after_meta (root);
            break;
    }
    if (!*missing || !check)
        return 0;
    return s_fail (status, error, "payload missing: %s/%s: %s", meta->type, meta->styp, missing);
}

//  The shape bounds, before libxml2 sees the text.
static int
s_check_shape (const char *xml, size_t size, bool gb18030_bytes,
               const mx_sis_options_t *options, mx_sis_status_t *status, char **error)
{
    mx_xml_shape_t limits = s_limits (options);
    char *why = NULL;
    mx_xml_bound_t bound = mx_xml_shape_check (xml, size, gb18030_bytes, &limits, NULL, &why);
    if (bound == MX_XML_BOUND_NONE)
        return 0;
    //  Labels are "k=v": the key is one of our own constants.
    char labels [64];
    snprintf (labels, sizeof labels, "bound=%s", mx_xml_bound_key (bound));
    mx_metrics_add (mx_metrics_counter ("msgx_codec_refused_total",
                                        "Messages the codec refused on a shape bound "
                                        "(msgx.codec.*), wherever the decode ran", labels), 1);
    *status = MX_SIS_MALFORMED;
    s_set_error (error, "%s", why ? why : "out of memory describing a shape bound");
    free (why);
    return -1;
}

static bool
s_is_ignored (const mx_sis_options_t *options, const char *type)
{
    for (size_t i = 0; i < options->ignore_count; i++)
        if (options->ignore_types [i] && strcmp (options->ignore_types [i], type) == 0)
            return true;
    return false;
}

mx_sis_msg_t *
mx_sis_decode (const char *xml, size_t size, const mx_sis_options_t *options,
               mx_sis_status_t *status, char **error)
{
    assert (xml || size == 0);
    assert (options && options->zone && options->max_bytes > 0);
    assert (options->ignore_count == 0 || options->ignore_types);
    assert (status);
    mx_xml_init ();

    if (size > options->max_bytes || size > INT_MAX) {
        *status = MX_SIS_MALFORMED;
        s_set_error (error, "message of %zu bytes is larger than the limit of %zu bytes",
                     size, options->max_bytes);
        return NULL;
    }
    if (size == 0) {
        s_fail (status, error, "not well-formed XML: the message is empty");
        return NULL;
    }
    bool gb18030_bytes;
    if (s_check_prolog (xml, size, options->raw_bytes, &gb18030_bytes, status, error) == -1)
        return NULL;
    if (s_check_shape (xml, size, gb18030_bytes, options, status, error) == -1)
        return NULL;
    xmlDocPtr doc = s_parse (xml, size, options->raw_bytes, status, error);
    if (!doc)
        return NULL;

    mx_sis_msg_t *self = calloc (1, sizeof (mx_sis_msg_t));
    if (!self) {
        xmlFreeDoc (doc);
        *status = MX_SIS_CODEC_ERROR;
        s_set_error (error, "out of memory decoding a message");
        return NULL;
    }
    self->doc = doc;
    xmlNodePtr root = xmlDocGetRootElement (doc);
    int rc = 0;
    //  The prolog check already refused these; a DTD must never slip through.
    if (doc->intSubset || doc->extSubset)
        rc = s_fail (status, error, "DOCTYPE not allowed: DTDs and entity declarations are refused");
    else
    if (!root)
        rc = s_fail (status, error, "not well-formed XML: no root element");
    else
    if (!s_named (root, "MSG")) {
        char quoted [S_QUOTE_MAX + 8];
        rc = s_fail (status, error, "root element is <%s>, expected <MSG> (line %d)",
                     s_quote ((const char *) root->name, quoted, sizeof quoted),
                     (int) xmlGetLineNo (root));
    }
    if (rc == 0)
        rc = s_read_meta (root, options->zone, &self->meta, status, error);
    if (rc == 0) {
        self->kind = s_kind_of (&self->meta);
        bool check = !s_is_ignored (options, self->meta.type);
        rc = s_find_body (self, root, check, status, error);
        if (rc == -1 && options->keep_envelope)
            return self;                //  payload missing, the envelope good
    }
    if (rc == -1) {
        mx_sis_destroy (&self);
        return NULL;
    }
    *status = MX_SIS_OK;
    return self;
}

void
mx_sis_destroy (mx_sis_msg_t **self_p)
{
    assert (self_p);
    mx_sis_msg_t *self = *self_p;
    if (!self)
        return;
    if (self->payload_free)
        self->payload_free (self->payload);
    xmlFreeDoc (self->doc);
    free (self);
    *self_p = NULL;
}

const mx_sis_meta_t *
mx_sis_meta (const mx_sis_msg_t *self)
{
    assert (self);
    return &self->meta;
}

mx_sis_kind_t
mx_sis_kind (const mx_sis_msg_t *self)
{
    assert (self);
    return self->kind;
}

xmlNodePtr
mx_sis_body (const mx_sis_msg_t *self)
{
    assert (self);
    return self->body;
}

void
mx_sis_drop_tree (mx_sis_msg_t *self)
{
    assert (self);
    xmlFreeDoc (self->doc);
    self->doc = NULL;
    self->body = NULL;
}

void
mx_sis_set_payload (mx_sis_msg_t *self, void *payload, void (*free_fn) (void *))
{
    assert (self);
    if (self->payload_free && self->payload != payload)
        self->payload_free (self->payload);
    self->payload = payload;
    self->payload_free = free_fn;
}

void *
mx_sis_payload (const mx_sis_msg_t *self)
{
    assert (self);
    return self->payload;
}

const char *
mx_sis_identity (const mx_sis_meta_t *meta, bool include_day, char *buf, size_t size)
{
    assert (meta && buf);
    assert (size >= MX_SIS_IDENTITY_BUFSIZE);
    int length = snprintf (buf, size, "%s|%s|%s|%lld", meta->sndr, meta->type, meta->styp,
                           (long long) meta->seqn);
    if (include_day)
        snprintf (buf + length, size - (size_t) length, "|%.8s", meta->dttm);
    return buf;
}
