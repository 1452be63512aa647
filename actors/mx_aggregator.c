/*  mx_aggregator - see mx_aggregator.h.

    One flush is out at a time; its reports are collected in the poll loop
    (the producer's pipe), then settled in two statements: the acknowledged
    events with everything they merge, and the failures.
*/
#include "mx_aggregator.h"

#include <assert.h>

#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_outbox.h"
#include "mx_pg.h"
#include "mx_producer.h"

#define ACTOR "schd-aggregator"

//  Past message.timeout.ms and librdkafka's once-a-second timeout scan,
//  the flush is given up so the actor never waits for ever.
#define S_REPORT_GRACE_MS 5000

typedef enum { S_WAITING, S_ACKED, S_FAILED } s_slot_state_t;

typedef struct {
    s_slot_state_t state;
    char *reason;
} s_slot_t;

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    zsock_t *ticks;
    bool terminated;
    bool started;
    PGconn *pg;
    mx_producer_t *producer;
    const char *bootstrap;
    //  The flush out, NULL when none.
    mx_outbox_batch_t *batch;
    s_slot_t *slots;
    uint64_t batch_seq;         //  in the high half of each tag: a late report of an old flush is ignored
    bool purged;
    size_t sent;
    size_t reported;
    int64_t batch_deadline;
    int64_t last_flush;         //  start of the last flush, INT64_MIN before the first
    int64_t next_flush;
    mx_problem_t problem;
    mx_metrics_counter_t *sent_total;
    mx_metrics_counter_t *failed_total;
} s_aggregator_t;

static int
s_producer (s_aggregator_t *self)
{
    if (self->producer && !mx_producer_failed (self->producer, NULL))
        return 0;
    mx_producer_destroy (&self->producer);
    char *error = NULL;
    self->producer = mx_producer_new (self->config, self->bootstrap, ACTOR, &error);
    if (!self->producer) {
        mx_problem_report (&self->problem, "cannot create the Kafka producer", error);
        return -1;
    }
    return 0;
}

static void
s_batch_free (s_aggregator_t *self)
{
    if (self->batch)
        for (size_t i = 0; i < self->batch->count; i++)
            free (self->slots [i].reason);
    free (self->slots);
    self->slots = NULL;
    mx_outbox_batch_destroy (&self->batch);
    self->sent = self->reported = 0;
    self->purged = false;
    self->batch_deadline = INT64_MAX;
}

static void
s_schedule (s_aggregator_t *self, bool full)
{
    int64_t now = mx_clock_now (self->clock);
    self->next_flush = full ? now : self->last_flush + self->config->schd_flush_period;
}

static void
s_record_failures (s_aggregator_t *self, int64_t now)
{
    mx_outbox_batch_t *batch = self->batch;
    size_t count = 0;
    mx_outbox_failure_t *failures = (mx_outbox_failure_t *) calloc (batch->count, sizeof (mx_outbox_failure_t));
    mx_outbox_outcome_t *outcomes = (mx_outbox_outcome_t *) calloc (batch->count, sizeof (mx_outbox_outcome_t));
    assert (failures && outcomes);
    for (size_t i = 0; i < batch->count; i++)
        //  Flights never queued (behind a failed send) are not failures of
        //  theirs: they stay as they are.
        if (self->slots [i].state == S_FAILED)
            failures [count++] = (mx_outbox_failure_t) {
                batch->events [i].event_id, self->slots [i].reason ? self->slots [i].reason : "not sent"
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
                reason = self->slots [k].reason ? self->slots [k].reason : "not sent";
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
s_settle (s_aggregator_t *self)
{
    mx_outbox_batch_t *batch = self->batch;
    int64_t now = mx_clock_now (self->clock);
    int64_t *acked = (int64_t *) calloc (batch->count + 1, sizeof (int64_t));
    assert (acked);
    size_t count = 0;
    for (size_t i = 0; i < batch->count; i++)
        if (self->slots [i].state == S_ACKED)
            acked [count++] = batch->events [i].event_id;
    int marked = 0;
    char *error = NULL;
    if (mx_outbox_mark_schd_sent (self->pg, acked, count, now, &marked, &error))
        //  Kafka has them; the next flush sends the latest state again.
        mx_problem_report (&self->problem, "cannot mark delivered states SENT", error);
    else
    if (count > 0) {
        mx_metrics_add (self->sent_total, (uint64_t) marked);
        mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:i,s:i}", "flights", (int) count, "events", marked),
                     "%zu flight states delivered for %d events", count, marked);
    }
    free (acked);
    s_record_failures (self, now);
    s_schedule (self, batch->count == (size_t) self->config->schd_flush_limit);
    s_batch_free (self);
}

static void
s_on_report (const mx_producer_report_t *report, void *arg)
{
    s_aggregator_t *self = (s_aggregator_t *) arg;
    uint64_t index = report->tag & 0xffffffffu;
    if (!self->batch || report->tag >> 32 != self->batch_seq || index >= self->sent)
        return;
    s_slot_t *slot = &self->slots [index];
    if (slot->state != S_WAITING)
        return;
    slot->state = report->acked ? S_ACKED : S_FAILED;
    if (!report->acked)
        slot->reason = strdup (report->reason ? report->reason : "not acknowledged");
    self->reported++;
}

static void
s_reports (s_aggregator_t *self)
{
    if (!self->producer)
        return;
    mx_producer_drain (self->producer, s_on_report, self);
    if (self->batch && self->reported == self->sent)
        s_settle (self);
}

static void
s_overdue (s_aggregator_t *self)
{
    size_t missing = self->sent - self->reported;
    if (!self->purged) {
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:s}", "error_class", "INFRA"),
                     "%zu delivery reports overdue: giving the flush up", missing);
        self->purged = true;
        self->batch_deadline = mx_clock_now (self->clock) + S_REPORT_GRACE_MS;
        mx_producer_purge (self->producer);
        return;
    }
    mx_log_emit (MX_LOG_ERROR, ACTOR, json_pack ("{s:s}", "error_class", "INFRA"),
                 "%zu delivery reports never came: replacing the Kafka producer", missing);
    mx_producer_destroy (&self->producer);
    for (size_t i = 0; i < self->sent; i++)
        if (self->slots [i].state == S_WAITING) {
            self->slots [i].state = S_FAILED;
            self->slots [i].reason = strdup ("no delivery report in time");
        }
    s_settle (self);
}

static void
s_flush (s_aggregator_t *self)
{
    assert (!self->batch);
    int64_t now = mx_clock_now (self->clock);
    self->last_flush = now;
    if (mx_actor_pg (&self->pg, self->config, ACTOR, &self->problem) || s_producer (self)) {
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
    self->batch = batch;
    self->batch_seq = (self->batch_seq + 1) & 0xffffffffu;
    self->slots = (s_slot_t *) calloc (batch->count, sizeof (s_slot_t));
    assert (self->slots);
    for (size_t i = 0; i < batch->count; i++) {
        const mx_outbox_event_t *event = &batch->events [i];
        mx_outbox_headers_t headers;
        mx_outbox_headers (event, &headers);
        //  A TOMBSTONE has no payload: a null value, so compaction drops the key.
        if (mx_producer_send (self->producer, self->config->kafka_topic_schd, event->key, event->payload,
                              headers.items, headers.count, self->batch_seq << 32 | i, &error)) {
            //  Queueing failed (the producer is full or broken): the rest
            //  of the flush waits for the next one.
            self->slots [i].state = S_FAILED;
            self->slots [i].reason = error;
            break;
        }
        self->sent++;
    }
    self->batch_deadline = now + self->config->kafka_delivery_timeout + self->config->kafka_linger_ms
                         + S_REPORT_GRACE_MS;
    if (self->sent == 0)
        s_settle (self);
}

static void
s_handle_pipe (s_aggregator_t *self)
{
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (self->pipe, &rest);
    if (!rest) {
        self->terminated = true;
        return;
    }
    switch (cmd) {
        case MX_CMD_TERM:
            self->terminated = true;
            break;
        case MX_CMD_START: {
            self->bootstrap = self->args->kafka_bootstrap && *self->args->kafka_bootstrap
                            ? self->args->kafka_bootstrap : self->config->kafka_bootstrap_servers;
            char *error = NULL;
            self->producer = mx_producer_new (self->config, self->bootstrap, ACTOR, &error);
            if (!self->producer) {
                mx_actor_reply_failed (self->pipe, error);
                free (error);
                break;
            }
            self->started = true;
            char *detail = zsys_sprintf ("KAFKA:schd to topic %s at %s; every %" PRId64 " ms, up to %" PRId64
                                         " flights a flush", self->config->kafka_topic_schd, self->bootstrap,
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
            if (self->started && !self->batch) {
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
    self->sent_total = mx_metrics_events_sent ("KAFKA:schd");
    self->failed_total = mx_metrics_events_failed ("KAFKA:schd");
    self->clock = self->args->clock;
    self->next_flush = INT64_MAX;
    self->last_flush = INT64_MIN;
    self->batch_deadline = INT64_MAX;
    if (mx_clock_endpoint (self->clock))
        self->ticks = zsock_new_sub (mx_clock_endpoint (self->clock), "");
    zsock_signal (pipe, 0);

    while (!self->terminated) {
        zmq_pollitem_t items [3];
        int count = 0;
        items [count++] = (zmq_pollitem_t) { zsock_resolve (self->pipe), 0, ZMQ_POLLIN, 0 };
        int tick_index = -1, report_index = -1;
        if (self->ticks) {
            tick_index = count;
            items [count++] = (zmq_pollitem_t) { zsock_resolve (self->ticks), 0, ZMQ_POLLIN, 0 };
        }
        if (self->producer) {
            report_index = count;
            items [count++] = (zmq_pollitem_t) { NULL, mx_producer_fd (self->producer), ZMQ_POLLIN, 0 };
        }
        int64_t deadline = self->batch ? self->batch_deadline : self->next_flush;
        if (zmq_poll (items, count, mx_clock_timeout (self->clock, deadline)) < 0 && zmq_errno () != EINTR)
            break;
        if (items [0].revents & ZMQ_POLLIN) {
            s_handle_pipe (self);
            continue;
        }
        if (tick_index >= 0 && (items [tick_index].revents & ZMQ_POLLIN)) {
            char *tick = zstr_recv (self->ticks);
            zstr_free (&tick);
        }
        if (report_index >= 0 && (items [report_index].revents & ZMQ_POLLIN))
            s_reports (self);
        int64_t now = mx_clock_now (self->clock);
        if (self->batch && now >= self->batch_deadline)
            s_overdue (self);
        else
        if (!self->batch && self->started && now >= self->next_flush)
            s_flush (self);
    }
    s_batch_free (self);
    mx_producer_destroy (&self->producer);
    mx_pg_disconnect (&self->pg);
    zsock_destroy (&self->ticks);
    mx_problem_clear (&self->problem);
}
