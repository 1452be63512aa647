/*  mx_aggregator - see mx_aggregator.h.

    One flush is out at a time; its reports are collected in the poll loop
    (the producer's pipe), then settled in two statements: the acknowledged
    events with everything they merge, and the failures.
*/
#include "mx_aggregator.h"

#include <assert.h>

#include "mx_delivery.h"
#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_outbox.h"
#include "mx_pg.h"

#define ACTOR "schd-aggregator"

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    bool started;
    PGconn *pg;
    const char *bootstrap;
    char topic [MX_CONFIG_TOPIC_BUFSIZE];   //  mx_config_topic: suffixed on a shadow instance
    mx_delivery_t *delivery;    //  the producer and the flush out
    int64_t last_flush;         //  start of the last flush, INT64_MIN before the first
    int64_t next_flush;
    mx_problem_t problem;
    mx_metrics_counter_t *sent_total;
    mx_metrics_counter_t *failed_total;
} s_aggregator_t;

static void
s_schedule (s_aggregator_t *self, bool full)
{
    int64_t now = mx_clock_now (self->clock);
    self->next_flush = full ? now : self->last_flush + self->config->schd_flush_period;
}

static void
s_record_failures (s_aggregator_t *self, const mx_outbox_batch_t *batch, const mx_delivery_slot_t *slots,
                   int64_t now)
{
    size_t count = 0;
    mx_outbox_failure_t *failures = (mx_outbox_failure_t *) calloc (batch->count, sizeof (mx_outbox_failure_t));
    mx_outbox_outcome_t *outcomes = (mx_outbox_outcome_t *) calloc (batch->count, sizeof (mx_outbox_outcome_t));
    assert (failures && outcomes);
    for (size_t i = 0; i < batch->count; i++)
        //  Flights never queued (behind a failed send) are not failures of
        //  theirs: they stay as they are.
        if (slots [i].state == MX_SLOT_FAILED)
            failures [count++] = (mx_outbox_failure_t) {
                batch->events [i].event_id, slots [i].reason ? slots [i].reason : "not sent"
            };
    size_t done = 0;
    char *error = NULL;
    mx_metrics_add (self->failed_total, count);
    if (count && mx_outbox_fail (self->pg, failures, count, (int) self->config->delivery_max_attempts,
                                 self->config->delivery_backoff.items, self->config->delivery_backoff.count,
                                 now, outcomes, &done, &error))
        mx_problem_report (&self->problem, "cannot record failed deliveries", error);
    for (size_t i = 0; i < done; i++) {
        const char *reason = "";
        int64_t flid = 0;
        for (size_t k = 0; k < batch->count; k++)
            if (batch->events [k].event_id == outcomes [i].event_id) {
                reason = slots [k].reason ? slots [k].reason : "not sent";
                flid = batch->events [k].flid;
            }
        if (outcomes [i].dead)
            mx_log_emit (MX_LOG_ERROR, ACTOR,
                         json_pack ("{s:I,s:I,s:i,s:s}", "event_id", (json_int_t) outcomes [i].event_id,
                                    "flid", (json_int_t) flid, "attempts", outcomes [i].attempts,
                                    "error_class", "EXHAUSTED"),
                         "event %" PRId64 " (FLID %" PRId64 ") DEAD after %d attempts, with the older states"
                         " it stood for; kept as the dead-letter record: %s",
                         outcomes [i].event_id, flid, outcomes [i].attempts, reason);
        else
            mx_log_emit (MX_LOG_WARN, ACTOR,
                         json_pack ("{s:I,s:I,s:i,s:I}", "event_id", (json_int_t) outcomes [i].event_id,
                                    "flid", (json_int_t) flid, "attempts", outcomes [i].attempts,
                                    "next_at", (json_int_t) outcomes [i].next_attempt_at),
                         "event %" PRId64 " (FLID %" PRId64 ") not delivered (attempt %d): %s",
                         outcomes [i].event_id, flid, outcomes [i].attempts, reason);
    }
    free (failures);
    free (outcomes);
}

//  Every report is in: the acknowledged with what they merge, then the
//  failures, each in one statement.
static void
s_settle (void *owner, const mx_outbox_batch_t *batch, const mx_delivery_slot_t *slots)
{
    s_aggregator_t *self = (s_aggregator_t *) owner;
    int64_t now = mx_clock_now (self->clock);
    int64_t *acked = (int64_t *) calloc (batch->count + 1, sizeof (int64_t));
    assert (acked);
    size_t count = 0;
    for (size_t i = 0; i < batch->count; i++)
        if (slots [i].state == MX_SLOT_ACKED)
            acked [count++] = batch->events [i].event_id;
    int marked = 0;
    char *error = NULL;
    if (mx_outbox_mark_schd_sent (self->pg, acked, count, now, &marked, &error)) {
        //  Kafka has them: found there before the next flush
        //  (exactly-once), or the latest state sent again.
        mx_delivery_reinspect (self->delivery);
        mx_problem_report (&self->problem, "cannot mark delivered states SENT", error);
    }
    else
    if (count > 0) {
        mx_metrics_add (self->sent_total, (uint64_t) marked);
        mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:i,s:i}", "flights", (int) count, "events", marked),
                     "%zu flight states delivered for %d events", count, marked);
    }
    free (acked);
    s_record_failures (self, batch, slots, now);
    s_schedule (self, batch->count == (size_t) self->config->schd_flush_limit);
}

static void
s_flush (s_aggregator_t *self)
{
    int64_t now = mx_clock_now (self->clock);
    self->last_flush = now;
    if (mx_actor_pg (&self->pg, self->config, ACTOR, &self->problem)
    ||  mx_delivery_ready (self->delivery, self->pg, &self->problem)) {
        s_schedule (self, false);
        return;
    }
    mx_outbox_batch_t *batch = NULL;
    char *error = NULL;
    if (mx_outbox_take_schd (self->pg, (size_t) self->config->schd_flush_limit, now, &batch, &error)) {
        mx_problem_report (&self->problem, "cannot read the outbox", error);
        s_schedule (self, false);
        return;
    }
    mx_problem_recovered (&self->problem);
    if (batch->count == 0) {
        mx_outbox_batch_destroy (&batch);
        s_schedule (self, false);
        return;
    }
    mx_delivery_send (self->delivery, batch);
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_aggregator_t *self = (s_aggregator_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            self->bootstrap = self->args->kafka_bootstrap && *self->args->kafka_bootstrap
                            ? self->args->kafka_bootstrap : self->config->kafka_bootstrap_servers;
            if (!mx_config_publishes (self->config)) {
                mx_warn (ACTOR, "shadow mode (msgx.shadow-publish = false): nothing is published, "
                                "%s events stay PENDING in this instance's outbox", "KAFKA:schd");
                mx_actor_reply_started (self->pipe, "shadow mode: nothing is published (msgx.shadow-publish = false)");
                break;
            }
            char *error = NULL;
            if (mx_delivery_start (self->delivery, self->bootstrap, &error)) {
                mx_actor_reply_failed (self->pipe, error);
                free (error);
                break;
            }
            self->started = true;
            char *detail = zsys_sprintf ("KAFKA:schd to topic %s at %s; every %" PRId64 " ms, up to %" PRId64
                                         " flights a flush", self->topic, self->bootstrap,
                                         self->config->schd_flush_period, self->config->schd_flush_limit);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            //  Start-up sweep: whatever an earlier run left PENDING.
            self->next_flush = mx_clock_now (self->clock);
            break;
        }
        case MX_CMD_EVENTS_COMMITTED:
            //  At most one flush per period: a wake-up only brings forward
            //  a flush whose period has passed.
            if (self->started && !mx_delivery_busy (self->delivery)) {
                int64_t due = self->last_flush == INT64_MIN ? mx_clock_now (self->clock)
                            : self->last_flush + self->config->schd_flush_period;
                if (due < self->next_flush)
                    self->next_flush = due;
            }
            break;
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;              //  pausing stops claiming messages, not delivering what they made
        default:
            assert (!"schd-aggregator: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

//  The producer's delivery reports, while it exists.
static size_t
s_sources (void *self_, mx_actor_source_t *sources, size_t max)
{
    return mx_delivery_sources (((s_aggregator_t *) self_)->delivery, sources, max);
}

static int64_t
s_deadline (void *self_)
{
    s_aggregator_t *self = (s_aggregator_t *) self_;
    return mx_delivery_busy (self->delivery) ? mx_delivery_deadline (self->delivery) : self->next_flush;
}

static void
s_wake (void *self_)
{
    s_aggregator_t *self = (s_aggregator_t *) self_;
    if (!mx_delivery_check (self->delivery) && self->started && mx_clock_now (self->clock) >= self->next_flush)
        s_flush (self);
}

void
mx_aggregator_actor (zsock_t *pipe, void *args)
{
    s_aggregator_t self_s = { 0 };
    s_aggregator_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->problem.actor = ACTOR;
    self->sent_total = mx_delivery_events_sent ("KAFKA:schd");
    self->failed_total = mx_delivery_events_failed ("KAFKA:schd");
    self->clock = self->args->clock;
    self->next_flush = INT64_MAX;
    self->last_flush = INT64_MIN;
    mx_config_topic (self->config, true, self->topic);
    self->delivery = mx_delivery_new (self->config, self->clock, ACTOR, MX_OUTBOX_TARGET_SCHD, self->topic,
                                      "flush", s_settle, mx_outbox_mark_schd_sent, self);
    mx_delivery_set_full (self->delivery, (size_t) self->config->schd_flush_limit);

    mx_actor_ops_t ops = { .command = s_command, .sources = s_sources, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    mx_delivery_destroy (&self->delivery);
    mx_pg_disconnect (&self->pg);
    mx_problem_clear (&self->problem);
}
