/*  mx_request - requests upstream, without I/O (docs/reference/wire.md §9,
    SPEC §4): the RQFD / RQRD encoding, the outbound SEQN counter's wrap,
    the airport-time formats they use, the window of the coming operation
    day, and the degraded rule that matches a RESP to a request.

    Times are UTC epoch milliseconds; every local time is read or written
    in the airport zone (msgx.operation-day.zone).
*/
#ifndef MX_REQUEST_H_INCLUDED
#define MX_REQUEST_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_tz.h"

//  SNDR of every request we send.
#define MX_REQUEST_SNDR "MSGX"
//  SEQN runs 000001..999999, then wraps to 000001.
#define MX_REQUEST_SEQN_MAX 999999
//  Room for a SEQN ("000123").
#define MX_REQUEST_SEQN_BUFSIZE 7
//  Room for the text that finds a request in the outbound mailbox
//  ("<SEQN>000123</SEQN>").
#define MX_REQUEST_MARKER_BUFSIZE 24
//  Room for META DTTM ("yyyyMMddHHmmss").
#define MX_REQUEST_DTTM_BUFSIZE 15
//  Room for a window bound ("ddMONyyHHmm").
#define MX_REQUEST_WINDOW_BUFSIZE 12
//  Room for a reference list code (1..8 characters).
#define MX_REQUEST_RTYPE_BUFSIZE 9

typedef enum {
    MX_REQUEST_RQFD,            //  schedule of a window, answered by SCHD/RESP
    MX_REQUEST_RQRD             //  one reference list, answered by <list>/RESP
} mx_request_kind_t;

//  req_track.state. REGISTERED, SENT and WAITING are open; DONE and
//  EXPIRED are closed for good.
typedef enum {
    MX_REQUEST_REGISTERED,      //  recorded, not yet confirmed in COUTMSGS
    MX_REQUEST_SENT,            //  the COUTMSGS row is confirmed
    MX_REQUEST_WAITING,         //  the upstream took the row (COUTMSGS_DATE_SENT set)
    MX_REQUEST_DONE,            //  a response matched and was applied
    MX_REQUEST_EXPIRED          //  timed out, or superseded by a newer request of its kind
} mx_request_state_t;

//  What a request asks for.
typedef struct {
    mx_request_kind_t kind;
    char rtype [MX_REQUEST_RTYPE_BUFSIZE];  //  RQRD: list code; "" for RQFD
    int64_t window_begin;                   //  RQFD: STDB (whole minute)
    int64_t window_end;                     //  RQFD: STDE, inclusive (whole minute)
    int seqn;                               //  1..999999
} mx_request_t;

//  How a response relates to the request it could answer.
typedef enum {
    MX_REQUEST_RESP_MATCH,      //  apply it and close the request DONE
    MX_REQUEST_RESP_NO_REQUEST, //  nothing sent that it could answer
    MX_REQUEST_RESP_EXPIRED,    //  its request timed out or was superseded
    MX_REQUEST_RESP_STALE       //  DTTM before the request was sent
} mx_request_resp_t;

//  "RQFD" / "RQRD".
const char *
    mx_request_kind_name (mx_request_kind_t kind);

//  "REGISTERED" ... "EXPIRED".
const char *
    mx_request_state_name (mx_request_state_t state);

//  Inverse of mx_request_state_name; -1 for an unknown name.
int
    mx_request_state_lookup (const char *name);

//  The SEQN after last (0 = none sent yet, else 1..999999): 1..999999,
//  999999 is followed by 1.
int
    mx_request_seqn_next (int last);

//  SEQN as six zero-padded digits; size >= MX_REQUEST_SEQN_BUFSIZE.
const char *
    mx_request_seqn_format (int seqn, char *buf, size_t size);

//  "<SEQN>nnnnnn</SEQN>", exactly as mx_request_encode writes it: finds the
//  request's row in COUTMSGS. size >= MX_REQUEST_MARKER_BUFSIZE.
const char *
    mx_request_seqn_marker (int seqn, char *buf, size_t size);

//  META DTTM: yyyyMMddHHmmss, local time of utc_ms (seconds truncated).
//  size >= MX_REQUEST_DTTM_BUFSIZE. Returns buf, or NULL when the year is
//  outside 0000..9999.
const char *
    mx_request_format_dttm (const mx_tz_t *zone, int64_t utc_ms, char *buf, size_t size);

//  Window bound: ddMONyyHHmm, local time of utc_ms (seconds truncated).
//  size >= MX_REQUEST_WINDOW_BUFSIZE. Returns buf, or NULL when the year
//  is outside 2000..2099 (yy means 20yy).
const char *
    mx_request_format_window (const mx_tz_t *zone, int64_t utc_ms, char *buf, size_t size);

//  Local time "YYYY-MM-DDTHH:MM" (what msgxctl takes) → UTC ms. Returns 0,
//  or -1 with *error (malloc'd line, if error is not NULL) for anything
//  else, including an impossible date.
int
    mx_request_parse_local (const mx_tz_t *zone, const char *text, int64_t *utc_ms, char **error);

//  The RQFD window of the coming operation day: the first operation day
//  that begins after now_ms. An operation day D runs from D cutoff_hour:00
//  to D+1 cutoff_hour:00 local (WIRE.md §8); STDB is its first minute and
//  STDE its last one (e.g. 23JAN210000..23JAN212359 for cutoff 0).
void
    mx_request_coming_day (const mx_tz_t *zone, int cutoff_hour, int64_t now_ms,
                           int64_t *window_begin, int64_t *window_end);

//  UTC ms of local minute minute_of_day (0..1439) on the local calendar day
//  day (days since 1970-01-01).
int64_t
    mx_request_daily_at (const mx_tz_t *zone, int64_t day, int minute_of_day);

//  The request as it goes into COUTMSGS_CLOB_MSG, DTTM = dttm_ms, e.g.
//  <MSG><META><SNDR>MSGX</SNDR><SEQN>000123</SEQN><DTTM>20210113152000</DTTM>
//  <TYPE>RQFD</TYPE><STYP>NONE</STYP></META><RQFD><STDB>23JAN210000</STDB>
//  <STDE>23JAN212359</STDE></RQFD></MSG> (one line, no declaration).
//  RQRD carries STYP = RTYP = the list code. Returns malloc'd text, or NULL
//  with *error (malloc'd line) when a value cannot be written: SEQN out of
//  range, a list code that is not 1..8 upper-case letters or digits, a
//  window out of 2000..2099 or ending before it begins.
char *
    mx_request_encode (const mx_request_t *self, const mx_tz_t *zone, int64_t dttm_ms, char **error);

//  The degraded match (WIRE.md §9 Decision): the upstream echoes nothing,
//  so a response is related to the last request of its kind that was sent
//  (sent_ms >= 0; -1 = none was sent). state is that request's state,
//  expires_ms its deadline. Both times are compared in whole seconds: a
//  DTTM is read from airport local time to UTC ms by the codec, sent_ms is
//  UTC ms, so the zone is already out of the comparison.
//    nothing sent, or the request is DONE already  → NO_REQUEST
//    DTTM before the second it was sent             → STALE
//    EXPIRED, or now_ms >= expires_ms                → EXPIRED
//    SENT or WAITING                                 → MATCH
mx_request_resp_t
    mx_request_resp_decide (mx_request_state_t state, int64_t sent_ms, int64_t expires_ms,
                            int64_t resp_dttm_ms, int64_t now_ms);

//  proc_state outcome of a decision: "degraded-match", "no-matching-request",
//  "request-expired", "stale-response". Static text.
const char *
    mx_request_resp_outcome (mx_request_resp_t resp);

#endif
