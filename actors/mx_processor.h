/*  mx_processor - one message at a time: read raw, decode, identity, dispatch, terminal state (SPEC §3.3). Data socket: a PAIR bound on <scope>/processor; PROCESS in, PROCESSED out.  */
#ifndef MX_PROCESSOR_H_INCLUDED
#define MX_PROCESSOR_H_INCLUDED

#include "mx_actor.h"
#include "mx_metrics.h"

//  zactor function; args is an mx_actor_args_t.
void mx_processor_actor (zsock_t *pipe, void *args);

//  Its metrics (the pump counts poisoned heads into messages_dead too).
//  msgx_messages_total{type,state}: state a terminal proc_state state.
mx_metrics_counter_t *mx_processor_messages (const char *type, const char *state);
//  msgx_messages_failed_total{class}: class an error class (INFRA, CODEC_ERROR, ...).
mx_metrics_counter_t *mx_processor_messages_failed (const char *error_class);
//  msgx_messages_dead_total{class}: messages that ended DEAD, by the class
//  they ended with (MALFORMED, PROTOCOL, EXHAUSTED, ...).
mx_metrics_counter_t *mx_processor_messages_dead (const char *error_class);
//  Every series above with a known label set, at 0 (msgxd's start).
void mx_processor_register_metrics (void);
mx_metrics_histogram_t *mx_processor_batch_size (void);           //  msgx_batch_size (messages per batch)
mx_metrics_histogram_t *mx_processor_seconds (void);              //  msgx_processing_seconds (PROCESS -> commit)

#endif
