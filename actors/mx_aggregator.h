/*  mx_aggregator - the schd-aggregator: KAFKA:schd merged latest-state
    delivery (SPEC §5).

    A flush takes up to msgx.schd.flush-limit FLIDs with PENDING KAFKA:schd
    events, keeps the newest event of each, and sends it to
    msgx.kafka.topic.schd (key = FLID): an UPSERT carries the full flight
    state, a TOMBSTONE is a null value. On acknowledgement the event is SENT
    and every older PENDING event of its FLID with it (merged_into = the one
    sent): consumers get the latest state, not every step. A failed event
    backs off on its own (msgx.delivery.backoff) and is DEAD at
    msgx.delivery.max-attempts; its FLID waits, the others go on.

    Flushes come every msgx.schd.flush-period; EVENTS_COMMITTED brings one
    forward only when the last flush is a period old, so there is at most
    one flush per period - unless a flush was full (the backlog exceeds
    flush-limit), then the next follows at once. The periodic flush is
    also the safety sweep for a lost wake-up. No order with KAFKA:msg.
*/
#ifndef MX_AGGREGATOR_H_INCLUDED
#define MX_AGGREGATOR_H_INCLUDED

#include "mx_actor.h"

//  zactor function; args is an mx_actor_args_t.
void mx_aggregator_actor (zsock_t *pipe, void *args);

#endif
