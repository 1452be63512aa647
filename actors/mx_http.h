/*  mx_http - the http actor: GET /health, /health/live, /health/ready and
    /metrics on msgx.http.bind (docs/reference/spec.md §8), and the compat
    entry POST /cminmsgs/send (§3.1) on a bind of its own,
    msgx.http.compat.bind, only when msgx.http.compat.enabled = true.

    libmicrohttpd runs inside the actor's own thread (MHD_USE_EPOLL, no
    internal threads): each daemon's epoll fd sits in the actor's zmq_poll
    loop next to the pipe. No handler ever waits inside MHD_run: what needs
    a database is asked of another thread and the connection is suspended
    (MHD_ALLOW_SUSPEND_RESUME) until the answer is back, so a slow or
    locked database delays only the requests that need it. Connections are
    bounded in number (msgx.http.max-connections), per client address
    (msgx.http.per-ip-connections), memory and idle time (msgx.http.
    idle-timeout), and bodies in size.

    POST /cminmsgs/send (compat bind): first who may write: a client outside
    msgx.http.compat.allow (when set) is 403; without the bearer token of
    msgx.http.compat.token-file (when set), 401. Then the raw XML (any text
    type or application/xml, UTF-8) is checked and handed to the compat
    writer (mx_compat_writer.h), which inserts it into CMINMSGS and its
    PENDING proc_state row; the answer is 200 text/plain with the new ID.
    Refusals answer one text/plain line: 400 empty, not UTF-8 or holding a
    NUL, 404 unknown path, 405 other method, 413 too large, 415 media type
    or charset, 503 instance not active (standby), mailbox disabled,
    unreachable or shadow mode (nothing written). On the service bind
    POST /cminmsgs/send is 404. Every request to the entry is counted in
    msgx_compat_requests_total{outcome}.

    The read API (msgx.api.bind, only when msgx.api.enabled = true): GET
    only; with msgx.api.token-file set, no or a wrong bearer token is 401.
    Everything else (paths, parameters, limits, the reads) is the api
    reader's (mx_api_reader.h); answers and refusals are JSON, on active
    and standby alike. On the active instance GET /flights/{flid} is first
    looked up in the state-document cache (mx_doc_cache.h, args->doc_cache)
    and a hit (200, or 304 on a matching If-None-Match) answered here at
    once, with no reader and no PostgreSQL; a miss goes to a reader. A streamed answer (GET /all/flights) is written as
    its pieces come (chunked): the connection is suspended while no piece
    is in hand, at most two are held (the one being written and the next),
    and the next is asked for only when there is room, so a slow client
    holds back the reads, never this loop; a piece marked failed ends the
    response without its terminating chunk.

    GET /health/live answers at once, 200 on every instance, active or
    standby: the process and its http thread run. GET /health/ready and
    GET /health (kept for existing probes, the same answer) ask the
    metrics actor (mx_metrics_actor.h) for its snapshot, waiting at most
    2 s without blocking, and answer application/json
    {"status":"ok"|"standby"|"degraded","role":..., "pipeline":{"paused":b},
     "down":[names],"dependencies":{name:{"ok":b,"required":b,"detail":s}},
     "backlog":{...}}: 200 when the instance is active and every required
    dependency is ok (paused or not), else 503; "down" names the required
    dependencies that are not ok ("postgresql", "mailbox", "kafka", or
    "metrics" when the metrics actor did not answer). The details are the
    metrics actor's fixed phrases: never a host, a user or a driver's error
    text. GET /metrics answers text/plain; version=0.0.4: the registry
    (core/mx_metrics) with the snapshot gauges just refreshed by the same
    request (NaN when the metrics actor is silent), plus
    msgx_instance_active and msgx_pipeline_paused. Other methods on these
    paths answer 405.

    Start-up follows mx_actor.h: args is an mx_actor_args_t *; START binds
    (START_FAILED names the address and the reason, or why the token file
    is refused: unreadable, empty, or in prod open to others), "$TERM"
    stops (the write in hand finishes first). ROLE (control sends it before
    START and on every change) sets the role and pause state; an http
    actor never told serves as active and running. PAUSE and RESUME are
    ignored.
*/
#ifndef MX_HTTP_H_INCLUDED
#define MX_HTTP_H_INCLUDED

#include "mx_actor.h"

void
    mx_http_actor (zsock_t *pipe, void *args);

//  Declares msgx_compat_requests_total with each outcome at 0.
void
    mx_http_register_metrics (void);

#endif
