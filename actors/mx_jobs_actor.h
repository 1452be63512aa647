/*  mx_jobs_actor - the maintenance actor (SPEC §6.2): once a day after
    msgx.history.run-at in the airport time zone, the history sweep of
    flights, schd_snap_log retention and the proc_state archive, in that
    order (db/mx_jobs.h).

    Every job runs in bounded batches, each its own transaction on the
    actor's own connection, and the actor goes back to its pipe between
    batches, so it stays responsive and never holds rows the FIFO needs
    for long. A run that fails is retried a few minutes later from the
    start (every step is idempotent).
*/
#ifndef MX_JOBS_ACTOR_H_INCLUDED
#define MX_JOBS_ACTOR_H_INCLUDED

#include "mx_actor.h"
#include "mx_tz.h"

//  zactor function; args is an mx_actor_args_t.
void mx_jobs_actor (zsock_t *pipe, void *args);

//  When the daily run is due: run_at minutes after local midnight of the
//  local day of now_ms, or of the next day when the run of today already
//  started (last_day = the local day, days since 1970-01-01, of the last
//  run; -1 = none). Returns now_ms when it is due already.
int64_t mx_jobs_next_run (const mx_tz_t *zone, int run_at, int64_t now_ms, int64_t last_day);

#endif
