/*  mx_requests_actor - the requests actor: schedule and reference requests
    upstream through COUTMSGS (SPEC §4, WIRE.md §9).

    ADMIN "request" (routed by control) registers a request, sends it at
    once and answers ADMIN_REPLY OK {id, seqn, state} (state REGISTERED when
    the mailbox did not answer: retried) or ERR with the reason; both are
    written to audit_log (ok / refused). Refused outright in shadow mode.

    Rounds run on its own timer (the injected clock; the first one within
    START, before any other command). A round sends what is still
    REGISTERED, repairs a send interrupted between the mailbox insert and
    the PostgreSQL update by finding the COUTMSGS row by its SEQN (never by
    inserting twice), moves SENT to WAITING once the upstream has taken the
    row (COUTMSGS_DATE_SENT), expires requests past msgx.requests.timeout,
    and registers the daily RQFD for the coming operation day once per
    local day at or after msgx.requests.daily-schedule-at.
*/
#ifndef MX_REQUESTS_ACTOR_H_INCLUDED
#define MX_REQUESTS_ACTOR_H_INCLUDED

#include "mx_actor.h"
#include "mx_metrics.h"
#include "mx_request.h"

//  zactor function; args is an mx_actor_args_t. Needs the mailbox
//  (mailbox.shared-mysql.enabled).
void mx_requests_actor (zsock_t *pipe, void *args);

//  msgx_requests_total{kind,outcome}: kind RQFD or RQRD; outcome one of
//  mx_requests_outcomes: sent (its COUTMSGS row confirmed), answered (a
//  response matched it: counted by the processor), failed (a send attempt
//  failed; retried), timeout (expired without an answer).
extern const char *const mx_requests_outcomes [];
extern const size_t mx_requests_outcome_count;
mx_metrics_counter_t *mx_requests_outcome (mx_request_kind_t kind, const char *outcome);
//  Every kind and outcome at 0 (msgxd's start).
void mx_requests_register_metrics (void);

#endif
