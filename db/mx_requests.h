/*  mx_requests - the req_track repository (requests upstream, SPEC §4),
    the persisted outbound SEQN counter (req_seqn), and the RESP guard the
    processor calls inside its business transaction.

    Lifecycle: REGISTERED → SENT → WAITING → DONE | EXPIRED. At most one
    request per kind (RQFD, RQRD) is open (a partial unique index);
    registering a new one expires the open one of its kind in the same
    transaction. SENT is written only once the COUTMSGS row is confirmed,
    with its COUTMSGS_ID. expires_at is registered_at + timeout until the
    request is sent, then sent_at + timeout; a request closed early
    (superseded) gets expires_at = the time it was closed. DONE and
    EXPIRED are final: nothing here ever changes a closed request.

    Times are UTC epoch milliseconds, -1 for SQL NULL. Functions return 0
    (or a count / found flag) on success and -1 with *error (a malloc'd
    line) on failure.
*/
#ifndef MX_REQUESTS_H_INCLUDED
#define MX_REQUESTS_H_INCLUDED

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "mx_request.h"

//  One req_track row.
typedef struct {
    int64_t id;
    mx_request_t request;       //  kind, rtype / window, seqn
    mx_request_state_t state;
    int64_t coutmsgs_id;        //  -1 until sent
    int64_t registered_at;
    int64_t sent_at;
    int64_t expires_at;
    int64_t done_at;            //  DONE only
    int64_t done_msg_id;        //  the RESP that closed it; -1
} mx_requests_row_t;

//  Register request (kind and rtype or window; its seqn is ignored) in ONE
//  transaction: take the next SEQN from req_seqn, expire the open request
//  of the kind, insert the new one REGISTERED (requested_by: the OS user of
//  the CLI peer, or "daily"), and when os_user is not NULL write the
//  audit_log row 'request'. *row gets the new request; *superseded the id
//  of the request it expired, or -1.
int mx_requests_register (PGconn *conn, const mx_request_t *request, const char *requested_by,
                          const char *os_user, int64_t timeout_ms, int64_t now_ms,
                          mx_requests_row_t *row, int64_t *superseded, char **error);

//  One request by id: 1 found, 0 none, -1 failure.
int mx_requests_get (PGconn *conn, int64_t id, mx_requests_row_t *row, char **error);

//  The open requests (REGISTERED, SENT, WAITING), at most one per kind,
//  RQFD first. *count gets 0..2.
int mx_requests_open (PGconn *conn, mx_requests_row_t rows [2], int *count, char **error);

//  REGISTERED → SENT: coutmsgs_id, sent_at = sent_ms, expires_at = sent_ms
//  + timeout_ms. Returns 1 written, 0 the request was not REGISTERED any
//  more (superseded or expired meanwhile), -1.
int mx_requests_mark_sent (PGconn *conn, int64_t id, int64_t coutmsgs_id, int64_t sent_ms,
                           int64_t timeout_ms, char **error);

//  SENT → WAITING (the upstream took the COUTMSGS row). 1 written, 0 not
//  SENT any more, -1.
int mx_requests_mark_waiting (PGconn *conn, int64_t id, char **error);

//  Why the last send attempt of an open request failed (last_error).
int mx_requests_note_error (PGconn *conn, int64_t id, const char *text, char **error);

//  Timeout sweep: every open request with expires_at <= now_ms becomes
//  EXPIRED (last_error says whether it was ever sent). Up to max of them
//  are copied to expired; *count gets how many were expired in all.
int mx_requests_expire (PGconn *conn, int64_t now_ms, mx_requests_row_t *expired, int max,
                        int *count, char **error);

//  Whether a request was registered by requested_by at or after since_ms:
//  1 yes, 0 no, -1 failure (the daily RQFD runs once per day).
int mx_requests_registered_since (PGconn *conn, const char *requested_by, int64_t since_ms,
                                  char **error);

//  ---------------------------------------------------------------------
//  RESP guard (SPEC §4, WIRE.md §9 Decision). Call inside the caller's
//  business transaction: the request row is locked until it ends, and a
//  rollback of the business part undoes the closing too, so a request is
//  DONE only when its response was applied.
//
//  The candidate is the last request of the kind that was sent (for RQRD:
//  of that list); mx_request_resp_decide relates the response to it. On a
//  match the request becomes DONE (done_at, done_msg_id = msg_id) and the
//  audit_log row 'degraded-match' is written; *outcome =
//  "degraded-match". Otherwise nothing is written and *outcome is
//  "no-matching-request", "request-expired" or "stale-response" (static
//  text). *request_id gets the candidate's id, or -1 when there is none.
//  Returns 1 matched, 0 not matched, -1 failure (*outcome NULL).

//  SCHD/RESP and open RQFD: not matched → the processor ends the message
//  SKIPPED(<outcome>) and applies nothing.
int mx_requests_match_schedule_resp (PGconn *conn, int64_t resp_dttm_ms, int64_t msg_id, int64_t now_ms,
                                     int64_t *request_id, const char **outcome, char **error);

//  <list>/RESP and open RQRD of list rtype. Reference data is applied
//  whether or not a request matches (a list is complete in itself and
//  WIRE.md §7 applies RESP like DNLD); only the closing of the request
//  depends on the match. Call it after the data was applied.
int mx_requests_match_reference_resp (PGconn *conn, const char *rtype, int64_t resp_dttm_ms,
                                      int64_t msg_id, int64_t now_ms, int64_t *request_id,
                                      const char **outcome, char **error);

#endif
