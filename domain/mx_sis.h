/*  mx_sis - SIS message codec: envelope, kind and business identity
    (docs/reference/wire.md §2-§4).

    mx_sis_decode parses one raw mailbox message and checks the envelope
    (META) and that the body element of its kind is present. Body values are
    decoded by later units from the parsed document this one keeps
    (mx_sis_body), and may attach their result (mx_sis_set_payload).

    Parsing is safe for hostile input: the size limit is checked before
    parsing; a DOCTYPE, DTD or entity declaration is refused before libxml2
    sees the text (so no entity is ever expanded and nothing is fetched);
    one linear pass checks the shape bounds (mx_xml_shape.h: attributes per
    element, nodes, depth, text pieces, name length, namespaces, distinct
    names) so that no message costs libxml2 more than linear time; libxml2
    stops at its first fatal error; the network is off; each call has its
    own parser context and collects libxml2's errors there, never through
    libxml2's global handlers. A refusal on a bound is counted in
    msgx_codec_refused_total{bound}, wherever the decode ran.

    Encodings: UTF-8 and GB18030 declared in the XML prolog are accepted; no
    declaration means UTF-8 (the XML default). Any other declared encoding,
    or UTF-16/UTF-32/EBCDIC text, is a CODEC_ERROR (a later codec may support it);
    bytes that are invalid for the encoding make the message MALFORMED.
    CDATA sections are merged into text nodes (XML_PARSE_NOCDATA), so body
    decoders only ever see text.

    Element names are matched by local name (namespaces are ignored) and
    exactly (upper case). Values are trimmed of spaces, tabs and line ends.
    SNDR, TYPE and STYP are 1..8 printable ASCII characters other than '|'
    (the identity separator).

    A decoded message is immutable; different messages may be decoded and
    used on different threads at the same time.
*/
#ifndef MX_SIS_H_INCLUDED
#define MX_SIS_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libxml/tree.h>

#include "mx_config.h"
#include "mx_tz.h"
#include "mx_xml_shape.h"

typedef enum {
    MX_SIS_OK = 0,
    MX_SIS_MALFORMED,               //  dead, never retried
    MX_SIS_CODEC_ERROR              //  retried; replayable once the codec supports it
} mx_sis_status_t;

typedef enum {
    MX_SIS_KIND_SCHD_DNLD,
    MX_SIS_KIND_SCHD_RESP,
    MX_SIS_KIND_SCHD_ADFT,
    MX_SIS_KIND_SCHD_DEL,
    MX_SIS_KIND_FLOP,               //  TYPE FLOP with one of the 48 subtypes
    MX_SIS_KIND_FDEL,               //  TYPE FLOP STYP FDEL, or TYPE FDEL (any STYP)
    MX_SIS_KIND_REFERENCE,          //  reference list code, STYP DNLD/RESP/ADD/UPD/DEL
    MX_SIS_KIND_OTHER               //  any TYPE/STYP not above (SCHS, LDM, ...)
} mx_sis_kind_t;

#define MX_SIS_KIND_COUNT (MX_SIS_KIND_OTHER + 1)

//  Longest SNDR, TYPE, STYP.
#define MX_SIS_CODE_MAX 8
#define MX_SIS_SEQN_MAX 999999
//  Room for any identity, with the day appended.
#define MX_SIS_IDENTITY_BUFSIZE 48

typedef struct {
    char sndr [MX_SIS_CODE_MAX + 1];    //  1..8 chars
    int64_t seqn;                       //  normalised integer value 1..999999
    char dttm [15];                     //  as received, yyyyMMddHHmmss
    int64_t dttm_ms;                    //  UTC epoch ms of DTTM read in the airport zone
    char type [MX_SIS_CODE_MAX + 1];
    char styp [MX_SIS_CODE_MAX + 1];
} mx_sis_meta_t;

typedef struct {
    const mx_tz_t *zone;                //  airport zone (msgx.operation-day.zone)
    size_t max_bytes;                   //  msgx.codec.max-message-bytes, > 0
    //  TYPEs on the ignore list (msgx.pipeline.ignore-types): their body is
    //  not checked, since they end as SKIPPED(ignored) whatever they carry
    //  (REGN is both a reference list and ignored). May be NULL with count 0.
    char *const *ignore_types;
    size_t ignore_count;
    //  false (the daemon): the text came through a UTF-8 channel (the
    //  mailbox's utf8mb4 column, the compat entry), so a GB18030 prolog is
    //  ignored and the text parsed as UTF-8. true: the bytes as a GB18030
    //  sender wrote them, converted by the declared encoding.
    bool raw_bytes;
    //  Shape bounds (msgx.codec.max-attributes, ...; mx_sis_limits); a
    //  member left 0 takes the key's default.
    mx_xml_shape_t limits;
    //  true (the lifecycle): a message whose envelope is valid but whose
    //  body element is missing ("payload missing") is returned all the
    //  same, with *status MX_SIS_MALFORMED and *error set, so that its
    //  identity is bound before it is refused (a duplicate is SKIPPED).
    bool keep_envelope;
} mx_sis_options_t;

//  The shape bounds configured in config (msgx.codec.*).
mx_xml_shape_t
    mx_sis_limits (const mx_config_t *config);

typedef struct _mx_sis_msg_t mx_sis_msg_t;

//  Decode the raw message xml [0..size) (need not be NUL-terminated).
//  Returns the message with *status MX_SIS_OK, or NULL with *status
//  MX_SIS_MALFORMED / MX_SIS_CODEC_ERROR and, if error is not NULL, *error a
//  malloc'd line saying what and where, e.g.
//  "META/SEQN 'x12' is not a number (line 5)". With keep_envelope, a
//  missing payload returns the message with *status MX_SIS_MALFORMED.
mx_sis_msg_t *
    mx_sis_decode (const char *xml, size_t size, const mx_sis_options_t *options,
                   mx_sis_status_t *status, char **error);

//  Frees the message, its document and any attached payload. Safe on NULL
//  and twice; NULLs the pointer.
void
    mx_sis_destroy (mx_sis_msg_t **self_p);

const mx_sis_meta_t *
    mx_sis_meta (const mx_sis_msg_t *self);

mx_sis_kind_t
    mx_sis_kind (const mx_sis_msg_t *self);

//  The body element: <SCHD> for SCHD kinds, the <FLOP> block for FLOP and
//  FLOP/FDEL, <FDEL> or <FLOP> (whichever comes first) for TYPE FDEL, <MSG>
//  for reference lists (RECS and the records are its children). For OTHER
//  and ignored types: the first element after META, or NULL. Owned by the
//  message.
xmlNodePtr
    mx_sis_body (const mx_sis_msg_t *self);

//  Frees the parsed tree (a tree is some 30 times its text) once the body
//  is decoded: the envelope (meta, kind) and the payload stay; mx_sis_body
//  is NULL from then on.
void
    mx_sis_drop_tree (mx_sis_msg_t *self);

//  Attach a decoded body; destroy calls free_fn (payload) if free_fn is not
//  NULL. Replaces, and frees, a payload attached before.
void
    mx_sis_set_payload (mx_sis_msg_t *self, void *payload, void (*free_fn) (void *));

//  The attached payload, or NULL.
void *
    mx_sis_payload (const mx_sis_msg_t *self);

//  "SCHD_DNLD", "SCHD_RESP", "SCHD_ADFT", "SCHD_DEL", "FLOP", "FDEL",
//  "REFERENCE", "OTHER".
const char *
    mx_sis_kind_name (mx_sis_kind_t kind);

//  "OK", "MALFORMED", "CODEC_ERROR" (the error_class names of PROC_STATE).
const char *
    mx_sis_status_name (mx_sis_status_t status);

//  Business identity SNDR|TYPE|STYP|SEQN (SEQN as integer, "001243" gives
//  1243); with include_day the local date yyyyMMdd of DTTM is appended
//  ("|20181105"). size >= MX_SIS_IDENTITY_BUFSIZE. Returns buf.
const char *
    mx_sis_identity (const mx_sis_meta_t *meta, bool include_day, char *buf, size_t size);

//  True if type is a reference list code (WIRE.md §7 table).
bool
    mx_sis_is_reference_type (const char *type);

//  True if styp is one of the 48 FLOP subtypes of WIRE.md §6 (FDEL is not
//  one of them: FLOP/FDEL is the FDEL kind).
bool
    mx_sis_is_flop_subtype (const char *styp);

#endif
