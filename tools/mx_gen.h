/*  mx_gen - deterministic SIS traffic generator.

    Plans one operation day of flights at a home airport and renders the
    upstream's messages for it (WIRE.md): first the schedule (SCHD/DNLD,
    up to per_message FLTR records each), then a stream of operational
    updates (FLOP) whose DTTM advances over the day. A share of the update
    stream can be replaced by exact duplicates, malformed messages, ignored
    types (LDM, RSTA, EROR) and unsupported ones (SCHS), and - when asked -
    by reference-list messages (the 23 lists of WIRE.md §7), ad-hoc flights
    (SCHD/ADFT), schedule deletions (SCHD/DEL) and hostile messages (DOCTYPE,
    entity expansion, external entities, oversized text). FDEL can take the
    TYPE=FDEL form, and the mailbox ID sequence can get holes, some of which
    are filled late (the message is written after all others).

    The output depends only on the options: the generator has its own PRNG
    and its own calendar arithmetic (no rand(), no time zone, no locale), so
    the same options give byte-identical messages on every machine. The
    flights of a day depend only on seed, flights, day, first_flid and
    airport, so a longer or shorter update stream keeps the same schedule.
*/
#ifndef MX_GEN_H_INCLUDED
#define MX_GEN_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct _mx_gen_t mx_gen_t;

typedef enum {
    MX_GEN_SCHEDULE = 0,    //  SCHD/DNLD
    MX_GEN_UPDATE,          //  FLOP of one of the subtypes, FDEL included
    MX_GEN_DUPLICATE,       //  byte-identical re-send of a recent update
    MX_GEN_MALFORMED,       //  must end DEAD(MALFORMED) in the daemon
    MX_GEN_IGNORED,         //  LDM, RSTA or EROR
    MX_GEN_UNSUPPORTED,     //  SCHS/DNLD
    MX_GEN_REFERENCE,       //  reference list: DNLD, ADD, UPD or DEL
    MX_GEN_ADHOC,           //  SCHD/ADFT: new flights, or full records of known ones
    MX_GEN_SCHD_DELETE,     //  SCHD/DEL: the listed flights are deleted
    MX_GEN_HOSTILE          //  DOCTYPE, entities, oversized: must end DEAD(MALFORMED)
} mx_gen_kind_t;
#define MX_GEN_KINDS 10

typedef struct {
    uint64_t seed;
    size_t flights;             //  flights of the day
    size_t updates;             //  messages after the schedule, all kinds
    size_t per_message;         //  FLTR per SCHD message, 0 = all in one
    const char *day;            //  operation day, "YYYY-MM-DD" (2001..2098)
    int64_t first_flid;         //  0 = derived from the day (unique per day)
    uint32_t first_seqn;        //  1..999999
    const char *sender;         //  META SNDR, 1..8 chars
    const char *airport;        //  home airport, 3 letters
    const char *mix;            //  FLOP subtype weights "STND:5,TOBT:3", NULL = built in
    //  Shares of the update stream, in parts per million
    uint32_t duplicate_ppm;
    uint32_t malformed_ppm;
    uint32_t ignored_ppm;
    uint32_t unsupported_ppm;
    //  Share of FLOPs that clear their element(s) (present and empty)
    uint32_t clear_ppm;
    //  Further shares of the update stream (all 0 by default). The shares
    //  above and these together are at most 100%.
    uint32_t reference_ppm;
    uint32_t adhoc_ppm;
    uint32_t schd_delete_ppm;
    uint32_t hostile_ppm;
    //  Share of flight deletions written as TYPE=FDEL instead of FLOP/FDEL
    uint32_t fdel_type_ppm;
    //  Reference lists to use, "GLST,SLST", NULL = all 23
    const char *lists;
    //  Hostile "oversized" messages are at least this long (bytes)
    size_t oversize_bytes;
    //  Mailbox ID sequence: share of messages preceded by 1..3 unused IDs,
    //  and share of messages written after all others (a hole that fills
    //  late). Drawn apart from the messages: the texts do not change.
    uint32_t hole_ppm;
    uint32_t late_ppm;
} mx_gen_options_t;

//  META of a generated message; for a malformed one, what it was meant to
//  carry (a real upstream fills the CMINMSGS_SUBSYSTEM_* copies that way).
typedef struct {
    char sndr [9];
    uint32_t seqn;
    char dttm [15];             //  yyyyMMddHHmmss
    char type [5];
    char styp [5];
    int64_t flid;               //  FLOP, FDEL, LDM: the flight; 0 otherwise
    const char *defect;         //  malformed, hostile: what is wrong; else NULL
    uint64_t slot;              //  place in the mailbox ID sequence, from 0
    bool late;                  //  to be written after every other message
} mx_gen_meta_t;

//  Fill opts with the defaults (seed 1, 200 flights, 1000 updates, 500 per
//  message, day 2021-01-23, SEQN from 1, sender AODB, airport CTU, 3% clears,
//  oversized messages of 1 MiB + 1 byte, nothing else).
void mx_gen_options_init (mx_gen_options_t *opts);

//  0 if opts can build a generator, else -1 and a reason in reason[size].
int mx_gen_options_check (const mx_gen_options_t *opts, char *reason, size_t size);

//  New generator, or NULL if mx_gen_options_check refuses the options.
//  Copies what it needs: opts and its strings can go afterwards.
mx_gen_t *mx_gen_new (const mx_gen_options_t *opts);

//  Destroy; safe on NULL and twice.
void mx_gen_destroy (mx_gen_t **self_p);

//  Next message of the stream (malloc'd XML, the caller frees it) and its
//  kind if kind is not NULL; NULL once mx_gen_total messages were returned.
char *mx_gen_next (mx_gen_t *self, mx_gen_kind_t *kind);

//  META of the message last returned by mx_gen_next (NULL before the first).
const mx_gen_meta_t *mx_gen_meta (mx_gen_t *self);

//  Messages in the whole stream: schedule messages + updates.
size_t mx_gen_total (mx_gen_t *self);

//  Messages of kind returned so far.
size_t mx_gen_count (mx_gen_t *self, mx_gen_kind_t kind);

//  Mailbox IDs left unused so far (holes that never fill) and messages
//  marked late so far.
uint64_t mx_gen_holes (mx_gen_t *self);
size_t mx_gen_late (mx_gen_t *self);

//  Lower-case name of kind: "schedule", "update", ..., "schd-delete"
const char *mx_gen_kind_name (mx_gen_kind_t kind);

//  The FLOP subtypes the generator knows, in table order (FDEL last).
size_t mx_gen_subtype_count (void);
const char *mx_gen_subtype_name (size_t index);

//  The reference lists of WIRE.md §7 (TYPE code, key element), table order.
size_t mx_gen_list_count (void);
const char *mx_gen_list_name (size_t index);
const char *mx_gen_list_key (size_t index);

#endif
