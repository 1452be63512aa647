/*  mx_dispatcher - KAFKA:msg delivery from the outbox (SPEC §5).

    Per wake-up (EVENTS_COMMITTED, the start-up sweep, a retry falling due,
    or the safety sweep every msgx.pipeline.poll-interval in case a wake-up
    was lost) it takes up to delivery-batch PENDING events in event_id
    order, produces them all to msgx.kafka.topic.msg (key = FLID, headers
    per SPEC §5), waits for every delivery report in its poll loop, and
    marks SENT only the acknowledged prefix in one statement. The first
    event not acknowledged ends the wake-up: attempts + 1 and a backoff
    (msgx.delivery.backoff), or DEAD at msgx.delivery.max-attempts, kept as
    the dead-letter record. A head that backs off stops the whole target
    until due. What follows a failure is sent again later, with the same
    event id: at-least-once; exactly-once (the default), the new producer
    first finds what the brokers wrote of it (mx_delivery_ready) and only
    the rest goes again. A wake-up ends after delivery-drain-rounds
    batches: a backlog left waits for the next wake-up, so catching up
    without new traffic runs at drain-rounds x delivery-batch events per
    poll-interval.
*/
#ifndef MX_DISPATCHER_H_INCLUDED
#define MX_DISPATCHER_H_INCLUDED

#include "mx_actor.h"

//  Started under this name it delivers KAFKA:ref (msgx.kafka.topic.reference,
//  key LIST:KEY) the same way.
#define MX_REF_DISPATCHER "ref-dispatcher"

//  zactor function; args is an mx_actor_args_t.
void mx_dispatcher_actor (zsock_t *pipe, void *args);

#endif
