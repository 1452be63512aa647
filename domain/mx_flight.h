/*  mx_flight - the operational flight state (WIRE.md §6) and the decoded
    bodies that change it. Pure data and pure functions: no I/O.

    Values are held as canonical text so that state read from PostgreSQL
    and state computed from a message compare byte for byte:
      S  text as received, surrounding whitespace trimmed
      I  decimal integer without leading zeros or sign "+"
      T  UTC epoch milliseconds as decimal (from ddMONyyHHmm in the airport
         zone)
      M  minutes as decimal (DELY DURA: HHMM on the wire)
    NULL means SQL NULL / "no value".

    Ownership: every char * and json_t * inside a struct is owned by that
    struct and freed by its destroy/reset function.
*/
#ifndef MX_FLIGHT_H_INCLUDED
#define MX_FLIGHT_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_text.h"
#include "mx_tz.h"

//  ---------------------------------------------------------------------
//  Field tables

typedef enum { MX_TYPE_S, MX_TYPE_I, MX_TYPE_T, MX_TYPE_M } mx_value_type_t;

typedef enum {
#define MX_SCALAR(name, code, type, styp) MX_F_##name,
#include "mx_flight_fields.def"
#undef MX_SCALAR
    MX_F_COUNT
} mx_scalar_t;

typedef enum {
#define MX_SET(name, element, table, key) MX_SET_##name,
#define MX_SET_FIELD(set, code, type, source)
#include "mx_flight_sets.def"
#undef MX_SET
#undef MX_SET_FIELD
    MX_SET_COUNT
} mx_set_kind_t;

//  The JSONB "rare" sets on flight_schd, kept as received.
typedef enum { MX_RARE_PSHT, MX_RARE_TIPT, MX_RARE_SRVT, MX_RARE_VIPF, MX_RARE_COUNT } mx_rare_t;

#define MX_SET_MAX_FIELDS 8

typedef struct {
    const char *code;               //  "STND"
    mx_value_type_t type;
    const char *styp;               //  FLOP subtype that sets it, "" none
} mx_scalar_info_t;

typedef struct {
    const char *element;            //  "PSDT"
    const char *table;              //  "flight_stand"
    const char *key;                //  "PSNO", "" for DELY (position)
    size_t field_count;
    const char *field_codes [MX_SET_MAX_FIELDS];
    mx_value_type_t field_types [MX_SET_MAX_FIELDS];
    const char *field_sources [MX_SET_MAX_FIELDS];  //  "child", "attr", "text"
} mx_set_info_t;

const mx_scalar_info_t *mx_scalar_info (mx_scalar_t scalar);
const mx_set_info_t *mx_set_info (mx_set_kind_t set);
const char *mx_rare_code (mx_rare_t rare);          //  "PSHT"
//  Lookups by wire code / element; -1 when unknown.
int mx_scalar_lookup (const char *code);
int mx_set_lookup (const char *element);
int mx_rare_lookup (const char *element);

//  ---------------------------------------------------------------------
//  Flight state

typedef struct {
    int key;                                    //  PSNO.. / position for DELY
    char *values [MX_SET_MAX_FIELDS];           //  by field index of the set
} mx_set_record_t;

typedef struct {
    size_t count;
    mx_set_record_t *records;                   //  ascending key
} mx_set_t;

typedef struct {
    int64_t flid;
    char *scalars [MX_F_COUNT];
    mx_set_t sets [MX_SET_COUNT];
    json_t *rare [MX_RARE_COUNT];               //  NULL = no value
    json_t *extra;                              //  object, never NULL: unknown elements code -> text
    //  Bookkeeping, kept by the repository:
    int32_t operation_day;                      //  days since 1970-01-01, -1 = not derived yet
    int64_t state_version;                      //  0 = never stored
    int64_t last_msg_id;
    bool deleted;
    int64_t deleted_at;                         //  ms, -1
} mx_flight_t;

mx_flight_t *mx_flight_new (int64_t flid);
void mx_flight_destroy (mx_flight_t **self_p);
mx_flight_t *mx_flight_dup (const mx_flight_t *self);
//  Set one scalar (value copied; NULL clears).
void mx_flight_set_scalar (mx_flight_t *self, mx_scalar_t scalar, const char *value);
//  Replace a whole set (records deep-copied; sorted by key).
void mx_flight_set_set (mx_flight_t *self, mx_set_kind_t set, const mx_set_t *records);
void mx_set_reset (mx_set_t *set);
bool mx_set_equal (const mx_set_t *a, const mx_set_t *b);

//  ---------------------------------------------------------------------
//  Decoded bodies (filled by the codec, domain/mx_sis_body.h)

//  One FLTR of a SCHD message: the full state as the upstream sees it.
//  Fields absent or empty are NULL / empty sets (no "unchanged").
typedef struct {
    mx_flight_t *flight;
    char *ffid;                                 //  informational, may be NULL
} mx_fltr_t;

typedef struct {
    size_t count;
    mx_fltr_t *records;
    int declared;                               //  RECS
} mx_schedule_t;

//  How a FLOP touches one value: absent (unchanged), set, or cleared.
typedef enum { MX_ABSENT = 0, MX_PRESENT, MX_CLEARED } mx_presence_t;

//  One FLOP block. Only what is present changes the flight.
typedef struct {
    int64_t flid;
    char *ffid;
    char styp [9];
    mx_presence_t scalar_presence [MX_F_COUNT];
    char *scalars [MX_F_COUNT];                 //  value when MX_PRESENT
    mx_presence_t set_presence [MX_SET_COUNT];
    mx_set_t sets [MX_SET_COUNT];               //  replacement when MX_PRESENT
    mx_presence_t rare_presence [MX_RARE_COUNT];
    json_t *rare [MX_RARE_COUNT];
    json_t *extra;                              //  unknown elements present (object, never NULL)
    bool fdel;                                  //  FLOP/FDEL or TYPE=FDEL
} mx_flop_t;

void mx_flop_destroy (mx_flop_t **self_p);
void mx_schedule_destroy (mx_schedule_t **self_p);

//  ---------------------------------------------------------------------
//  Decisions: pure functions from (current state, body) to the next state
//  and what changed. "changed" receives the wire codes that differ
//  (scalars by code, sets by element, rare sets by element, "EXTRA",
//  "LIFECYCLE"), as a JSON array owned by the caller; empty = no change.

//  Operation day of a SODT (UTC ms) in zone with the cutoff hour (WIRE §8).
int32_t mx_flight_operation_day (const mx_tz_t *zone, int64_t sodt_ms, int cutoff_hour);

//  A schedule record onto current (NULL when the flight is new). Returns
//  the next state (new object) or NULL with *error for a protocol problem
//  (a different OPERATION_DAY: "cross-day FLID <n>").
mx_flight_t *mx_flight_apply_fltr (const mx_flight_t *current, const mx_fltr_t *fltr,
                                   const mx_tz_t *zone, int cutoff_hour,
                                   json_t **changed, char **error);

//  A FLOP onto current (never NULL: unknown flights are skipped before).
mx_flight_t *mx_flight_apply_flop (const mx_flight_t *current, const mx_flop_t *flop, json_t **changed);

//  The same onto flight itself, changing only the values the FLOP carries
//  and that differ: returns what changed (as mx_flight_diff would say,
//  empty when nothing did). Bookkeeping (version, last message) is the
//  caller's.
json_t *mx_flight_apply_flop_into (mx_flight_t *flight, const mx_flop_t *flop);

//  FDEL: lifecycle DELETED at now_ms; already deleted → no change.
mx_flight_t *mx_flight_apply_fdel (const mx_flight_t *current, int64_t now_ms, json_t **changed);

//  The differences between two states, as above.
json_t *mx_flight_diff (const mx_flight_t *before, const mx_flight_t *after);

//  ---------------------------------------------------------------------
//  Documents (SPEC §5)

typedef struct {
    int64_t event_id;           //  filled when known (0 before insert)
    int64_t msg_id;
    const char *type;           //  META TYPE / STYP / SEQN / DTTM text
    const char *styp;
    int64_t seqn;
    const char *dttm;
} mx_event_meta_t;

//  Full state document: every scalar by wire code (T as ISO-8601 with the
//  zone's offset, I as JSON integers, S as strings, null when NULL), sets
//  as arrays of objects (key attribute included), rare sets as received,
//  "extra" object, "flid", "operation_day" (YYYY-MM-DD), "state_version",
//  "lifecycle" (ACTIVE / DELETED).
json_t *mx_flight_state_doc (const mx_flight_t *flight, const mx_tz_t *zone);

//  KAFKA:msg document: {"event_id","msg_id","flid","type","styp","seqn",
//  "dttm","state_version","changed":[codes],"state":{state doc}}.
json_t *mx_flight_msg_doc (const mx_flight_t *flight, const mx_event_meta_t *meta,
                           json_t *changed, const mx_tz_t *zone);

//  Both documents of one change as compact text (JSON_COMPACT |
//  JSON_PRESERVE_ORDER, the bytes json_dumps gives for the two documents
//  above), the state built once: *msg_text always, *schd_text (the state
//  document) only when want_schd. Both malloc'd.
void mx_flight_event_texts (const mx_flight_t *flight, const mx_event_meta_t *meta, json_t *changed,
                            const mx_tz_t *zone, bool want_schd, char **msg_text, char **schd_text);

//  The state document alone as that text, into text (emptied first).
void mx_flight_state_text_into (const mx_flight_t *flight, const mx_tz_t *zone, mx_text_t *text);

//  The same two texts written into buffers the caller keeps from one
//  change to the next (emptied first): the KAFKA:msg document into
//  msg_text, the state document into state_text.
void mx_flight_event_texts_into (const mx_flight_t *flight, const mx_event_meta_t *meta, json_t *changed,
                                 const mx_tz_t *zone, mx_text_t *msg_text, mx_text_t *state_text);

#endif
