/*  mx_ingress - mailbox polling, the watermark W, holes, cutover seeding, late-arrival detection (SPEC §3.1).  */
#ifndef MX_INGRESS_H_INCLUDED
#define MX_INGRESS_H_INCLUDED

#include "mx_actor.h"
#include "mx_metrics.h"

//  zactor function; args is an mx_actor_args_t.
void mx_ingress_actor (zsock_t *pipe, void *args);

//  Its metrics: polling rounds, holes released by ageing, rows found in
//  released holes.
mx_metrics_counter_t *mx_ingress_polls (void);              //  msgx_ingress_polls_total
mx_metrics_counter_t *mx_ingress_hole_aged_out (void);      //  msgx_pipeline_hole_aged_out_total
mx_metrics_counter_t *mx_ingress_late_arrival (void);       //  msgx_pipeline_late_arrival_detected_total

#endif
