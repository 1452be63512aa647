/*  mx_api_reader - the read API's database work, off the http actor's
    thread: a child zactor of http with its own PostgreSQL session (the
    statement timeout msgx.api.statement-timeout bounds every read). http
    hands it each request (API_GET) with the connection suspended and
    answers when API_ANSWER comes back, so a slow database never stops
    libmicrohttpd from serving other clients.

    It reads only PostgreSQL, never the control loop's state, so a standby
    answers as the active does. Paths, parameters and limits are checked
    here, one place: every refusal is a JSON error {"error":{"code",
    "message"}} counted in msgx_api_requests_total by outcome.

    args is an mx_api_reader_args_t * that outlives the actor. It runs
    mx_actor_run: "$TERM" stops it (after the request in hand).
*/
#ifndef MX_API_READER_H_INCLUDED
#define MX_API_READER_H_INCLUDED

#include "mx_actor.h"

typedef struct {
    const char *name;                   //  for its log lines
    const mx_config_t *config;
} mx_api_reader_args_t;

//  Registers the read API's metric series (so they show before the first request).
void
    mx_api_reader_register_metrics (void);

//  Counts a refusal decided by http itself (authentication): outcome is
//  "unauthorized" or "forbidden".
void
    mx_api_reader_count (const char *outcome);

void
    mx_api_reader_actor (zsock_t *pipe, void *args);

#endif
