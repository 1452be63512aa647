/*  mx_compat_writer - the compat entry's writes, off the http actor's
    thread: a child zactor of http that owns its own mailbox and PostgreSQL
    connections. http hands it each checked body (COMPAT_WRITE) and keeps
    the client's connection suspended until COMPAT_WRITTEN comes back, so a
    slow or locked database never stops libmicrohttpd from answering
    /health, /metrics or other clients.

    One write at a time, in the order received: IDs follow the order in
    which the bodies were complete. The writer inserts into CMINMSGS
    (STATUS 'VALID'), then the PENDING proc_state row (source compat). A
    failed proc_state insert is logged and counted, not refused: the
    mailbox row exists and ingress registers it when it polls.

    args is an mx_compat_writer_args_t * that outlives the actor. It runs
    mx_actor_run: "$TERM" stops it (after the write in hand).
*/
#ifndef MX_COMPAT_WRITER_H_INCLUDED
#define MX_COMPAT_WRITER_H_INCLUDED

#include "mx_actor.h"

typedef struct {
    const char *name;                   //  for its log lines
    const mx_config_t *config;
} mx_compat_writer_args_t;

void
    mx_compat_writer_actor (zsock_t *pipe, void *args);

#endif
