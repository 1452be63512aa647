/*  mx_sis_body - decoding of SIS message bodies (WIRE.md §5-§7) into the
    structs of mx_flight.h, after mx_sis_decode accepted the envelope.

    Outcomes, by the error classes of SPEC §3.3 / WIRE.md:
      MX_BODY_OK           *out filled (caller destroys it)
      MX_BODY_PROTOCOL     whole package rejected, nothing to write: RECS
                           missing or != record count, a mandatory FLTR field
                           missing/invalid, FLID repeated in one message, not
                           exactly one FLOP block, FLID not numeric, <FDEL>
                           with content, OPERATION_DAY not derivable
      MX_BODY_CODEC_ERROR  a value this codec cannot convert (date-time not
                           in a listed format, number out of range): retried
      MX_BODY_UNSUPPORTED  a FLOP that carries only unknown elements
    *error gets one malloc'd line saying what and where.
*/
#ifndef MX_SIS_BODY_H_INCLUDED
#define MX_SIS_BODY_H_INCLUDED

#include "mx_flight.h"
#include "mx_sis.h"

typedef enum {
    MX_BODY_OK = 0, MX_BODY_PROTOCOL, MX_BODY_CODEC_ERROR, MX_BODY_UNSUPPORTED
} mx_body_status_t;

const char *mx_body_status_name (mx_body_status_t status);

//  SCHD DNLD / RESP / ADFT: the FLTR records.
mx_body_status_t mx_sis_schedule (const mx_sis_msg_t *msg, const mx_tz_t *zone,
                                  mx_schedule_t **out, char **error);

//  SCHD DEL: the listed FLIDs (each FLTR's FLID; other FLTR fields are
//  ignored). *flids malloc'd.
mx_body_status_t mx_sis_schedule_del (const mx_sis_msg_t *msg, int64_t **flids, size_t *count,
                                      char **error);

//  FLOP (any of the 48 subtypes) and FDEL (FLOP/FDEL or TYPE=FDEL).
mx_body_status_t mx_sis_flop (const mx_sis_msg_t *msg, const mx_tz_t *zone,
                              mx_flop_t **out, char **error);

//  Reference lists (WIRE §7): RECS then n records named after the TYPE; the
//  key is the text of a record's first child element; value = children as
//  an object (a repeated child becomes an array).
typedef struct {
    char *key;
    json_t *value;
} mx_ref_record_t;

typedef struct {
    char rtype [9];
    char styp [9];
    int declared;
    size_t count;
    mx_ref_record_t *records;
} mx_reference_t;

mx_body_status_t mx_sis_reference (const mx_sis_msg_t *msg, mx_reference_t **out, char **error);
void mx_reference_destroy (mx_reference_t **self_p);

//  Every FLID element of the body with a positive decimal value, in
//  document order, whatever the kind (what a replay shows of a message).
//  *flids malloc'd (NULL when none); returns the count.
size_t mx_sis_body_flids (const mx_sis_msg_t *msg, int64_t **flids);

//  Body date-time "ddMONyyHHmm" (local, zone) -> UTC ms; -1 if invalid.
int64_t mx_sis_parse_datetime (const char *text, const mx_tz_t *zone);

#endif
