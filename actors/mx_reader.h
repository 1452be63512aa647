/*  mx_reader - answers the admin reads (msgxctl status, show and dead)
    off the control loop, so control never waits on a database read while
    it watches the instance lock for fencing.

    Control starts it before anything else, on every instance, and stops
    it last. Its own PostgreSQL session reads through db/mx_readmodel; its
    own mailbox connection reads the raw text for show and the mailbox's
    highest ID for status. What status says about control itself (role,
    pause, uptime, the actors that run, why PostgreSQL is not reached yet,
    Kafka) control pushes as INSTANCE whenever it changes (proto/mx_cmd.def).
    Requests come as ADMIN and are answered with ADMIN_REPLY.
*/
#ifndef MX_READER_H_INCLUDED
#define MX_READER_H_INCLUDED

#include "mx_actor.h"

//  zactor function; args is an mx_actor_args_t owned by control.
void mx_reader_actor (zsock_t *pipe, void *args);

#endif
