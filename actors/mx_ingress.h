/*  mx_ingress - mailbox polling, the watermark W, holes, cutover seeding, late-arrival detection (SPEC §3.1).  */
#ifndef MX_INGRESS_H_INCLUDED
#define MX_INGRESS_H_INCLUDED

#include "mx_actor.h"

//  zactor function; args is an mx_actor_args_t.
void mx_ingress_actor (zsock_t *pipe, void *args);

#endif
