/*  mx_apply - the rules of the inbound lifecycle as pure functions: a
    message's raw text and the flights it touches in; its outcome (state,
    error class, detail), the flight changes and their events out. No I/O:
    the processor loads what a batch needs, runs these in msg_id order and
    writes what they decided.

    A message goes through three steps, each of which may settle it:
      mx_apply_entry    before reading it (attempts exhausted)
      mx_apply_decode   its raw text (missing, too large, malformed,
                        codec error, ignored type, body, kind)
      mx_apply_identity a duplicate of an earlier message
      mx_apply_response a schedule response that answers no request
      mx_apply_message  its body onto the flights
*/
#ifndef MX_APPLY_H_INCLUDED
#define MX_APPLY_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_flight.h"
#include "mx_lifecycle.h"
#include "mx_sis.h"
#include "mx_sis_body.h"

//  What happened to one message. state FAILED is a failed attempt: the
//  caller counts it (backoff, or DEAD(EXHAUSTED) at the limit).
typedef struct {
    bool decided;
    mx_state_t state;
    mx_error_class_t error_class;
    char *text;                     //  last_error, NULL when none
    char *detail;                   //  outcome, NULL when none
} mx_outcome_t;

//  Decides the outcome (texts copied; a later decision replaces it).
void mx_outcome_set (mx_outcome_t *self, mx_state_t state, mx_error_class_t error_class,
                     const char *text, const char *detail);
void mx_outcome_reset (mx_outcome_t *self);

//  What the rules read of the configuration.
typedef struct {
    const mx_tz_t *zone;
    int cutoff_hour;                //  msgx.operation.day-cutoff-hour
    int max_attempts;               //  msgx.pipeline.max-attempts
    size_t max_bytes;               //  msgx.codec.max-message-bytes
    char *const *ignore_types;
    size_t ignore_count;
    mx_xml_shape_t limits;          //  msgx.codec.max-attributes, ...; 0 takes the default
    bool identity_include_day;
} mx_apply_rules_t;

//  How a decoded message changes the flights.
typedef enum {
    MX_PLAN_NONE,                   //  no flight: the outcome is decided, or reference data
    MX_PLAN_FLOP,                   //  FLOP / FDEL: one flight
    MX_PLAN_SCHEDULE,               //  SCHD DNLD / ADFT / RESP: every FLTR, all or nothing
    MX_PLAN_SCHEDULE_DEL            //  SCHD DEL: each listed flight deleted
} mx_plan_t;

//  The row of schd_snap_log of an applied schedule.
typedef struct {
    bool present;
    int64_t scope_begin, scope_end; //  ms, -1 when no record has a SODT
    int inserted, updated, unchanged;
} mx_snapshot_t;

//  One message through the steps. Owns everything it points to.
typedef struct {
    int64_t msg_id;
    mx_sis_msg_t *msg;              //  NULL until the envelope decodes
    mx_sis_kind_t kind;
    char key [128];                 //  its identity (when msg)
    bool holds_key;                 //  bound to this message (not a duplicate)
    mx_plan_t plan;
    mx_flop_t *flop;
    mx_schedule_t *schedule;
    int64_t *del_flids;             //  SCHD DEL
    size_t del_count;
    mx_reference_t *reference;      //  reference data (applied by the repository)
    mx_snapshot_t snapshot;
    mx_outcome_t outcome;
} mx_apply_msg_t;

void mx_apply_msg_reset (mx_apply_msg_t *self);
//  Frees the decoded body (flop, schedule, deletions, reference list) once
//  it is applied and written; the envelope, the key and the outcome stay.
void mx_apply_msg_release_body (mx_apply_msg_t *self);

//  FAILED after attempts at or over the limit: DEAD(EXHAUSTED) before any
//  work. True when this settles the message.
bool mx_apply_entry (const mx_apply_rules_t *rules, mx_apply_msg_t *self, mx_state_t state, int attempts);

//  The raw text (present false: no mailbox row; xml NULL with size: over
//  the size limit) into the envelope, identity key, plan and body, or into
//  the outcome that settles it. A missing payload (DEAD(MALFORMED)) keeps
//  the envelope and key: the identity is bound before it, and a duplicate
//  ends SKIPPED (mx_apply_identity).
void mx_apply_decode (const mx_apply_rules_t *rules, mx_apply_msg_t *self, bool present,
                      const char *xml, size_t size);

//  A schedule response is applied only when it answers an open request
//  (the match is the caller's read): unmatched, SKIPPED with why; matched,
//  its FLTR records decoded as for SCHD DNLD.
void mx_apply_response (const mx_apply_rules_t *rules, mx_apply_msg_t *self, bool matched,
                        const char *why);

//  Its identity is held by holder: an earlier message makes it SKIPPED
//  (duplicate-of), whatever its body said. True when it is a duplicate.
bool mx_apply_identity (mx_apply_msg_t *self, int64_t holder);

//  The flights a batch holds: for each, the state loaded (NULL: none
//  stored) and the state as the batch has made it so far.
typedef struct {
    int64_t flid;
    const mx_flight_t *before;
    mx_flight_t *now;
    bool before_owned;          //  false: before is the caller's (mx_flightset_load_kept)
} mx_flight_slot_t;

typedef struct mx_flightset_t mx_flightset_t;

mx_flightset_t *mx_flightset_new (void);
void mx_flightset_destroy (mx_flightset_t **self_p);
//  The slot of flid, or NULL when the set does not hold it.
mx_flight_slot_t *mx_flightset_get (mx_flightset_t *self, int64_t flid);
//  A slot for flid (before and now NULL), or the one held already.
mx_flight_slot_t *mx_flightset_add (mx_flightset_t *self, int64_t flid);
//  The loaded state of a slot (taken; NULL: no such flight).
void mx_flightset_load (mx_flight_slot_t *slot, mx_flight_t *loaded);
//  The same with a stored state the caller keeps, unchanged, for as long as
//  the set lives (lent, not copied: now is the only copy).
void mx_flightset_load_kept (mx_flight_slot_t *slot, const mx_flight_t *kept);
size_t mx_flightset_size (const mx_flightset_t *self);
//  Iteration in no particular order; NULL at the end.
mx_flight_slot_t *mx_flightset_first (mx_flightset_t *self);
mx_flight_slot_t *mx_flightset_next (mx_flightset_t *self);

//  The flights a message's plan reads: the count, then each by index.
size_t mx_apply_flight_count (const mx_apply_msg_t *self);
int64_t mx_apply_flight_id (const mx_apply_msg_t *self, size_t index);

//  One flight change, handed to the caller as it is made; valid during the
//  call only. after has its new state_version and last_msg_id.
typedef struct {
    const mx_flight_t *after;
    json_t *changed;                //  the wire codes that differ
    bool tombstone;                 //  the change deletes the flight
    int64_t msg_id;
    const mx_sis_meta_t *meta;
} mx_change_t;

typedef void (mx_change_fn) (void *arg, const mx_change_t *change);

//  Applies the message's plan onto the flights (each already in the set),
//  in order, calling change for each flight change, and decides its
//  outcome. now_ms stamps a deletion. A message already decided is left.
void mx_apply_message (const mx_apply_rules_t *rules, mx_apply_msg_t *self, mx_flightset_t *flights,
                       int64_t now_ms, mx_change_fn *change, void *arg);

//  The events a message's plan can make at most (two per flight change).
size_t mx_apply_most_events (const mx_apply_msg_t *self);

#endif
