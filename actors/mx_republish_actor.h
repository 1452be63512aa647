/*  mx_republish_actor - the republisher: msgxctl republish.

    Starts, cancels and runs the one re-publish job (db/mx_republish): the
    current state documents of the flights asked for go to KAFKA:schd and,
    with --reference, every reference entry to KAFKA:ref, as outbox events
    the delivering actors send like any other. It writes at most
    msgx.republish.rate events a second, in steps of a tenth of that (1 to
    500 events), each its own transaction on the actor's own PostgreSQL
    session, so the FIFO never waits on it for more than one step's locks.
    After each step it tells control EVENTS_COMMITTED, which wakes the
    delivery. At START it continues a job an earlier life of msgxd left
    RUNNING, after its cursor. Counts msgx_republish_events_total{target}
    and sets msgx_republish_remaining (events left of the running job).
*/
#ifndef MX_REPUBLISH_ACTOR_H_INCLUDED
#define MX_REPUBLISH_ACTOR_H_INCLUDED

#include "mx_actor.h"
#include "mx_metrics.h"

//  zactor function; args is an mx_actor_args_t.
void mx_republish_actor (zsock_t *pipe, void *args);

//  Its metrics, registered at start by mx_actors_register_metrics.
mx_metrics_counter_t *mx_republish_events (const char *target);
mx_metrics_gauge_t *mx_republish_remaining (void);

#endif
