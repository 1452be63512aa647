/*  mx_testevent - outbox payloads for tests that write msg_event rows
    themselves: the documents msgxd would write, so that what is delivered
    passes the consumer contract (docs/consumers.md).
*/
#ifndef MX_TESTEVENT_H_INCLUDED
#define MX_TESTEVENT_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

//  The payload of version `version` of flight flid, changed by message
//  msg_id (FLOP/UPD): for target "KAFKA:msg" the event document (with
//  event_id), for "KAFKA:schd" the state document. With tombstone the
//  flight is DELETED; a KAFKA:schd tombstone is a null value (NULL).
//  malloc'd.
char *
    mx_testevent_payload (const char *target, int64_t event_id, int64_t flid, int64_t version, int64_t msg_id,
                          bool tombstone);

#endif
