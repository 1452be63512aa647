/*  mx_processor - one message at a time: read raw, decode, identity, dispatch, terminal state (SPEC §3.3). Data socket: a PAIR bound on <scope>/processor; PROCESS in, PROCESSED out.  */
#ifndef MX_PROCESSOR_H_INCLUDED
#define MX_PROCESSOR_H_INCLUDED

#include "mx_actor.h"

//  zactor function; args is an mx_actor_args_t.
void mx_processor_actor (zsock_t *pipe, void *args);

#endif
