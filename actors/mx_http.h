/*  mx_http - the http actor: the compat entry POST /cminmsgs/send
    (docs/reference/spec.md §3.1), GET /health and GET /metrics (§8).

    libmicrohttpd runs inside the actor's own thread (MHD_USE_EPOLL, no
    internal threads): its epoll fd sits in the actor's zmq_poll loop next
    to the pipe. Listens on msgx.http.bind. Connections are bounded in
    number, memory and idle time, and bodies in size, so slow or hostile
    clients cannot starve others or exhaust memory.

    POST /cminmsgs/send takes the raw XML (any text type or application/xml,
    UTF-8), inserts it into CMINMSGS (STATUS 'VALID', DATE_RECEIVED now),
    then the PENDING proc_state row (source compat), and answers 200
    text/plain with the new ID. Refusals answer one text/plain line:
    400 empty or not UTF-8, 404 unknown path, 405 other method, 413 too
    large, 415 media type or charset, 503 instance not active (standby),
    mailbox disabled, unreachable or shadow mode (nothing written). A failed proc_state insert is only
    logged: polling registers the row later. Both writes run inside the
    actor's loop, so a slow mailbox or PostgreSQL delays other HTTP clients
    by at most their configured timeouts.

    GET /health asks the metrics actor (mx_metrics_actor.h) for its
    snapshot, waiting at most 2 s, and answers application/json
    {"status":"ok"|"standby"|"degraded","role":"active"|"standby"|...,
    "pipeline":{"paused":b},"dependencies":{...},"backlog":{...}}: 200 when
    the instance is active and every required dependency is ok (paused or
    not), else 503; 503 with "error":"metrics actor did not answer ..."
    when it is silent. GET /metrics answers text/plain; version=0.0.4: the
    registry (core/mx_metrics) with the snapshot gauges just refreshed by
    the same request (NaN when the metrics actor is silent), plus
    msgx_instance_active and msgx_pipeline_paused. Other methods on these
    two paths answer 405.

    Start-up follows mx_actor.h: args is an mx_actor_args_t *; START binds
    (START_FAILED names the address and the reason), "$TERM" stops.
    ROLE (control sends it before START and on every change) sets the role
    and pause state; an http actor never told serves as active and running.
    PAUSE and RESUME are ignored.
*/
#ifndef MX_HTTP_H_INCLUDED
#define MX_HTTP_H_INCLUDED

#include "mx_actor.h"

void
    mx_http_actor (zsock_t *pipe, void *args);

#endif
