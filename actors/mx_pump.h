/*  mx_pump - the FIFO scheduling loop (SPEC §3.2) and the single writer of lifecycle transitions outside processing: poison escalation and replay run here, between messages, so they never race an in-flight one.  */
#ifndef MX_PUMP_H_INCLUDED
#define MX_PUMP_H_INCLUDED

#include "mx_actor.h"
#include "mx_metrics.h"

//  zactor function; args is an mx_actor_args_t.
void mx_pump_actor (zsock_t *pipe, void *args);

//  msgx_crash_loop_total: heads quarantined as DEAD(EXHAUSTED) crash-loop.
mx_metrics_counter_t *mx_pump_crash_loop (void);

#endif
