/*  mx_jobs - see mx_jobs.h.

    The daily run is a small state machine: each turn of the loop runs one
    batch of the current step and goes back to the poller with a zero
    timeout, so $TERM is seen between any two batches.
*/
#include "mx_jobs_actor.h"
//  The repository of the same name, by path: both headers are mx_jobs.h.
#include "mx_jobs.h"

#include <assert.h>

#include "mx_flight.h"
#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_outbox.h"
#include "mx_pg.h"
#include "mx_rawstore.h"

#define ACTOR "jobs"
//  Rows per transaction of every job.
#define S_BATCH 500
//  A failed run starts again after this.
#define S_RETRY_MS (5 * 60 * 1000)
#define S_DAY_MS (24LL * 3600 * 1000)

//  S_OUTBOX is a pass of its own (msgx.outbox.purge-period), not part of
//  the daily run.
typedef enum { S_IDLE, S_HISTORY, S_SNAP_LOG, S_ARCHIVE, S_RAW, S_OUTBOX } s_step_t;

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    PGconn *pg;
    mx_tz_t *zone;
    s_step_t step;
    int64_t next_run;           //  INT64_MAX before START
    int64_t last_day;           //  local day of the last run started, -1 = none
    //  The current run: bounds fixed when it starts, and what it did.
    int64_t started_at;
    mx_jobs_history_t history;
    int64_t snap_log_before;
    int64_t archive_before;
    int64_t raw_before;
    int64_t flights_moved;
    int64_t tombstones;
    int64_t snap_log_deleted;
    int64_t archived;
    int64_t raw_deleted;
    //  Outbox retention: the next pass, and the current one.
    int64_t outbox_next;        //  INT64_MAX: retention 0, never
    int64_t outbox_before;
    mx_outbox_purge_t outbox_walk;
    int64_t outbox_deleted;
    mx_metrics_counter_t *purged_msg;
    mx_metrics_counter_t *purged_schd;
    mx_metrics_counter_t *purged_ref;
    //  The flights of the history batch under way, held off in the read
    //  API's cache until its outcome is known.
    int64_t picked [S_BATCH];
    size_t picked_count;
} s_jobs_t;

static void
s_picked (void *self_, const int64_t *flids, size_t count)
{
    s_jobs_t *self = (s_jobs_t *) self_;
    assert (count <= S_BATCH);
    memcpy (self->picked, flids, count * sizeof *flids);
    self->picked_count = count;
    mx_doc_cache_write_begin (self->args->doc_cache, flids, count, NULL);
}

int64_t
mx_jobs_next_run (const mx_tz_t *zone, int run_at, int64_t now_ms, int64_t last_day)
{
    assert (zone);
    assert (run_at >= 0 && run_at < 24 * 60);
    int64_t today = mx_tz_local_day (zone, now_ms);
    int64_t day = last_day == today ? today + 1 : today;
    int year, month, mday;
    mx_tz_civil_from_days (day, &year, &month, &mday);
    int64_t at = mx_tz_local_to_utc (zone, year, month, mday, run_at / 60, run_at % 60, 0);
    return at > now_ms ? at : now_ms;
}

static int
s_pg (s_jobs_t *self, char **error)
{
    if (self->pg && PQstatus (self->pg) == CONNECTION_OK)
        return 0;
    mx_pg_disconnect (&self->pg);
    self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-jobs", self->config->pg_statement_timeout, error);
    return self->pg ? 0 : -1;
}

static void
s_begin_run (s_jobs_t *self)
{
    const mx_config_t *config = self->config;
    int64_t now = mx_clock_now (self->clock);
    self->started_at = now;
    self->last_day = mx_tz_local_day (self->zone, now);
    int64_t today = mx_flight_operation_day (self->zone, now, (int) config->operation_day_cutoff_hour);
    self->history = (mx_jobs_history_t) {
        .before_day = today - config->history_retention_days,
        .quiet_before_ms = now - config->history_quiet_days * S_DAY_MS
    };
    self->snap_log_before = now - config->history_snap_log_retention_days * S_DAY_MS;
    self->archive_before = now - config->archive_after_days * S_DAY_MS;
    //  raw-retention 0 keeps nothing new; what was kept before goes now.
    self->raw_before = now - config->pipeline_raw_retention;
    self->flights_moved = self->tombstones = self->snap_log_deleted = self->archived = self->raw_deleted = 0;
    self->step = S_HISTORY;
}

static void
s_begin_outbox (s_jobs_t *self)
{
    self->outbox_before = mx_clock_now (self->clock) - self->config->outbox_retention;
    self->outbox_walk = (mx_outbox_purge_t) { 0 };
    self->outbox_deleted = 0;
    self->step = S_OUTBOX;
}

//  One page of the outbox pass; back to idle when the walk is done.
static int
s_outbox_step (s_jobs_t *self, char **error)
{
    if (mx_outbox_purge (self->pg, self->outbox_before, S_BATCH, &self->outbox_walk, error))
        return -1;
    const mx_outbox_purge_t *walk = &self->outbox_walk;
    mx_metrics_add (self->purged_msg, (uint64_t) walk->deleted_msg);
    mx_metrics_add (self->purged_schd, (uint64_t) walk->deleted_schd);
    mx_metrics_add (self->purged_ref, (uint64_t) walk->deleted_ref);
    self->outbox_deleted += walk->deleted_msg + walk->deleted_schd + walk->deleted_ref;
    if (!walk->done)
        return 0;
    mx_log_emit (MX_LOG_INFO, ACTOR, json_pack ("{s:I}", "outbox_purged", (json_int_t) self->outbox_deleted),
                 "outbox retention: %" PRId64 " delivered event%s deleted", self->outbox_deleted,
                 self->outbox_deleted == 1 ? "" : "s");
    self->step = S_IDLE;
    self->outbox_next = mx_clock_now (self->clock) + self->config->outbox_purge_period;
    return 0;
}

//  The store is off: say what would move, move nothing.
static int
s_history_disabled (s_jobs_t *self, char **error)
{
    int64_t count = 0;
    if (mx_jobs_history_count (self->pg, &self->history, &count, error))
        return -1;
    mx_log_emit (MX_LOG_INFO, ACTOR, json_pack ("{s:I}", "flights_due", (json_int_t) count),
                 "history sweep skipped: msgx.history.history-store-enabled=false, %" PRId64
                 " flight%s due for history, nothing deleted", count, count == 1 ? "" : "s");
    return 0;
}

//  One batch of the current step; moves to the next step when a batch
//  comes back short. Returns -1 on failure.
static int
s_run_step (s_jobs_t *self, char **error)
{
    if (s_pg (self, error))
        return -1;
    int64_t now = mx_clock_now (self->clock);
    int done = 0;
    if (self->step == S_OUTBOX)
        return s_outbox_step (self, error);
    switch (self->step) {
        case S_HISTORY: {
            if (!self->config->history_history_store_enabled) {
                if (s_history_disabled (self, error))
                    return -1;
                break;
            }
            int tombstones = 0;
            self->picked_count = 0;
            int rc = mx_jobs_history_batch (self->pg, &self->history, S_BATCH, now, &done, &tombstones,
                                            s_picked, self, error);
            //  The outcome known (a failed commit's is not: it counts too),
            //  before the next step: the read API never answers a flight
            //  that is gone (mx_doc_cache.h).
            mx_doc_cache_invalidate (self->args->doc_cache, self->picked, self->picked_count);
            if (rc)
                return -1;
            self->flights_moved += done;
            self->tombstones += tombstones;
            break;
        }
        case S_SNAP_LOG:
            if (mx_jobs_snap_log_batch (self->pg, self->snap_log_before, S_BATCH, &done, error))
                return -1;
            self->snap_log_deleted += done;
            break;
        case S_ARCHIVE:
            if (mx_jobs_archive_batch (self->pg, self->archive_before, S_BATCH, now, &done, error))
                return -1;
            self->archived += done;
            break;
        case S_RAW:
            if (mx_rawstore_sweep (self->pg, self->raw_before, S_BATCH, &done, error))
                return -1;
            self->raw_deleted += done;
            break;
        case S_IDLE:
        case S_OUTBOX:
            assert (!"jobs: no step to run");
    }
    if (done == S_BATCH)
        return 0;
    self->step = self->step == S_HISTORY ? S_SNAP_LOG : self->step == S_SNAP_LOG ? S_ARCHIVE
               : self->step == S_ARCHIVE ? S_RAW : S_IDLE;
    if (self->step == S_IDLE) {
        mx_log_emit (MX_LOG_INFO, ACTOR,
                     json_pack ("{s:I,s:I,s:I,s:I,s:I}", "flights_moved", (json_int_t) self->flights_moved,
                                "tombstones", (json_int_t) self->tombstones,
                                "snap_log_deleted", (json_int_t) self->snap_log_deleted,
                                "archived", (json_int_t) self->archived,
                                "raw_deleted", (json_int_t) self->raw_deleted),
                     "daily jobs done: %" PRId64 " flights to history (%" PRId64 " tombstones), %" PRId64
                     " snapshot log rows deleted, %" PRId64 " proc_state rows archived, %" PRId64
                     " retained raw texts expired",
                     self->flights_moved, self->tombstones, self->snap_log_deleted, self->archived,
                     self->raw_deleted);
        self->next_run = mx_jobs_next_run (self->zone, self->config->history_run_at, mx_clock_now (self->clock),
                                           self->last_day);
    }
    return 0;
}

static void
s_turn (s_jobs_t *self)
{
    if (self->step == S_IDLE) {
        int64_t now = mx_clock_now (self->clock);
        if (now >= self->next_run)
            s_begin_run (self);
        else
        if (now >= self->outbox_next)
            s_begin_outbox (self);
        else
            return;
    }
    char *error = NULL;
    if (s_run_step (self, &error) == 0)
        return;
    //  Committed batches stay; the run starts over later and finds only
    //  what is left.
    const char *names [] = { "", "history sweep", "snapshot log retention", "archive", "raw text retention",
                             "outbox retention" };
    mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:s}", "error_class", "INFRA"),
                 "%s failed: %s; %s in %d minutes", names [self->step], error ? error : "unknown error",
                 self->step == S_OUTBOX ? "the next pass" : "the daily jobs run again", S_RETRY_MS / 60000);
    free (error);
    if (mx_pg_is_connection_error (self->pg))
        mx_pg_disconnect (&self->pg);
    //  A failed outbox pass waits for its own retry; the daily run keeps
    //  its time.
    if (self->step == S_OUTBOX)
        self->outbox_next = mx_clock_now (self->clock) + S_RETRY_MS;
    else {
        self->last_day = -1;
        self->next_run = mx_clock_now (self->clock) + S_RETRY_MS;
    }
    self->step = S_IDLE;
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_jobs_t *self = (s_jobs_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            char *error = NULL;
            self->zone = mx_tz_load (self->config->operation_day_zone, &error);
            if (!self->zone) {
                char *reason = zsys_sprintf ("airport time zone: %s", error);
                mx_actor_reply_failed (self->pipe, reason);
                free (reason);
                free (error);
                break;
            }
            int run_at = self->config->history_run_at;
            char *detail = zsys_sprintf ("daily after %02d:%02d %s; history store %s", run_at / 60, run_at % 60,
                                         mx_tz_name (self->zone),
                                         self->config->history_history_store_enabled ? "on" : "off (nothing deleted)");
            //  The times before the answer: a clock that moves once the
            //  actor has started finds them set.
            self->next_run = mx_jobs_next_run (self->zone, run_at, mx_clock_now (self->clock), -1);
            //  The first pass one period after the start, then every period.
            self->outbox_next = self->config->outbox_retention > 0
                              ? mx_clock_now (self->clock) + self->config->outbox_purge_period : INT64_MAX;
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            break;
        }
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;              //  jobs are off the FIFO path
        default:
            assert (!"jobs: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

//  Mid-run: only look at the pipe between batches.
static int64_t
s_deadline (void *self_)
{
    s_jobs_t *self = (s_jobs_t *) self_;
    if (self->step != S_IDLE)
        return INT64_MIN;
    return self->next_run < self->outbox_next ? self->next_run : self->outbox_next;
}

static void
s_wake (void *self_)
{
    s_jobs_t *self = (s_jobs_t *) self_;
    if (self->zone)
        s_turn (self);
}

void
mx_jobs_actor (zsock_t *pipe, void *args)
{
    s_jobs_t self_s = { 0 };
    s_jobs_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->clock = self->args->clock;
    self->step = S_IDLE;
    self->next_run = INT64_MAX;
    self->last_day = -1;
    self->outbox_next = INT64_MAX;
    const char *help = "Delivered events the outbox retention deleted (msgx.outbox.retention)";
    self->purged_msg = mx_metrics_counter_by ("msgx_outbox_purged_total", help, "target", MX_OUTBOX_TARGET_MSG);
    self->purged_schd = mx_metrics_counter_by ("msgx_outbox_purged_total", help, "target", MX_OUTBOX_TARGET_SCHD);
    self->purged_ref = mx_metrics_counter_by ("msgx_outbox_purged_total", help, "target", MX_OUTBOX_TARGET_REF);

    mx_actor_ops_t ops = { .command = s_command, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    mx_pg_disconnect (&self->pg);
    mx_tz_destroy (&self->zone);
}
