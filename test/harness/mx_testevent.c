/*  mx_testevent - see mx_testevent.h.  */
#include "mx_testevent.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "mx_flight.h"
#include "mx_tz.h"

//  2026-01-01 08:00 UTC: the day and time every test flight is scheduled.
#define S_SODT_MS INT64_C (1767254400000)

char *
mx_testevent_payload (const char *target, int64_t event_id, int64_t flid, int64_t version, int64_t msg_id,
                      bool tombstone)
{
    assert (target);
    bool schd = strcmp (target, "KAFKA:schd") == 0;
    if (schd && tombstone)
        return NULL;
    mx_tz_t *zone = mx_tz_load ("UTC", NULL);
    assert (zone);
    mx_flight_t *flight = mx_flight_new (flid);
    assert (flight);
    mx_flight_set_scalar (flight, MX_F_ALCD, "CA");
    mx_flight_set_scalar (flight, MX_F_FLNO, "CA1234");
    mx_flight_set_scalar (flight, MX_F_MVIN, "D");
    mx_flight_set_scalar (flight, MX_F_SODT, "1767254400000");
    flight->operation_day = (int32_t) (S_SODT_MS / 86400000);
    flight->state_version = version;
    flight->last_msg_id = msg_id;
    flight->deleted = tombstone;
    flight->deleted_at = tombstone ? S_SODT_MS : -1;
    mx_event_meta_t meta = {
        .event_id = event_id, .msg_id = msg_id, .type = "FLOP", .styp = "UPD", .seqn = msg_id,
        .dttm = "20260101160000"
    };
    json_t *changed = json_pack ("[s]", tombstone ? "LIFECYCLE" : "FLNO");
    char *msg_text = NULL, *schd_text = NULL;
    mx_flight_event_texts (flight, &meta, changed, zone, schd, &msg_text, &schd_text);
    json_decref (changed);
    mx_flight_destroy (&flight);
    mx_tz_destroy (&zone);
    if (schd) {
        free (msg_text);
        return schd_text;
    }
    return msg_text;
}
