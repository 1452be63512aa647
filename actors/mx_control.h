/*  mx_control - the supervisor and single point of FIFO decisions.

    Holds the instance lock (a PostgreSQL session advisory lock on its own
    connection) for the life of the process. Without the lock it is a hot
    standby: it waits on pg_advisory_lock asynchronously, so it takes over
    the moment the active instance's connection dies. With the lock it
    applies migrations, starts the pipeline actors in order and stops them in
    reverse. Losing the lock connection fences the instance: every child is
    stopped at once and FATAL goes to main, which exits.
    Serves the admin protocol (proto/mx_admin.def) on msgx.admin.endpoint.
*/
#ifndef MX_CONTROL_H_INCLUDED
#define MX_CONTROL_H_INCLUDED

#include "mx_actor.h"
#include "mx_metrics.h"

//  Exit code after fencing (EX_TEMPFAIL): a supervisor may restart us.
#define MX_EXIT_FENCED 75

typedef struct {
    const mx_config_t *config;
    mx_clock_t *clock;
    const mx_actor_def_t *children;     //  start order
    size_t child_count;
    const char *kafka_description;      //  for status; e.g. "embedded mock cluster at ..."
    const char *kafka_bootstrap;        //  effective bootstrap servers, handed to the children
} mx_control_args_t;

//  zactor function; args is an mx_control_args_t owned by the caller.
void mx_control_actor (zsock_t *pipe, void *args);

//  msgx_instance_fenced_total (the lock connection broke while active: the
//  instance stops and exits 75) and msgx_instance_takeovers_total (a
//  standby was granted the lock: a failover), at 0 (msgxd's start).
void mx_control_register_metrics (void);

//  msgx_admin_requests_dropped_total: admin connections closed before a
//  whole request arrived (over msgx.admin.max-request-bytes, or cut off).
mx_metrics_counter_t *mx_control_admin_dropped (void);

#endif
