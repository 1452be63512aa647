/*  mx_delivery - see mx_delivery.h.  */
#include "mx_delivery.h"

#include <assert.h>

#include "mx_log.h"
#include "mx_producer.h"

//  librdkafka reports every message within message.timeout.ms, scanning
//  for timeouts about once a second; past this much more the batch is
//  given up (purged) so the actor can never wait for ever.
#define S_REPORT_GRACE_MS 5000

struct mx_delivery_t {
    const mx_config_t *config;
    mx_clock_t *clock;
    const char *actor;
    const char *topic;
    const char *what;
    mx_delivery_settle_fn *settle;
    void *owner;
    const char *bootstrap;
    mx_producer_t *producer;
    mx_outbox_batch_t *batch;   //  the batch out, NULL when none
    mx_delivery_slot_t *slots;
    uint64_t batch_seq;         //  in the high half of each tag: a late report of an old batch is ignored
    bool purged;                //  the batch was given up once already
    size_t sent;                //  events handed to the producer (a prefix)
    size_t reported;
    int64_t deadline;
};

mx_delivery_t *
mx_delivery_new (const mx_config_t *config, mx_clock_t *clock, const char *actor, const char *topic,
                 const char *what, mx_delivery_settle_fn *settle, void *owner)
{
    mx_delivery_t *self = (mx_delivery_t *) zmalloc (sizeof (mx_delivery_t));
    *self = (mx_delivery_t) {
        .config = config, .clock = clock, .actor = actor, .topic = topic, .what = what,
        .settle = settle, .owner = owner, .deadline = INT64_MAX
    };
    return self;
}

static void
s_batch_free (mx_delivery_t *self)
{
    if (self->batch)
        for (size_t i = 0; i < self->batch->count; i++)
            free (self->slots [i].reason);
    free (self->slots);
    self->slots = NULL;
    mx_outbox_batch_destroy (&self->batch);
    self->sent = self->reported = 0;
    self->purged = false;
    self->deadline = INT64_MAX;
}

void
mx_delivery_destroy (mx_delivery_t **self_p)
{
    mx_delivery_t *self = *self_p;
    if (!self)
        return;
    s_batch_free (self);
    mx_producer_destroy (&self->producer);
    free (self);
    *self_p = NULL;
}

int
mx_delivery_start (mx_delivery_t *self, const char *bootstrap, char **error)
{
    self->bootstrap = bootstrap;
    self->producer = mx_producer_new (self->config, bootstrap, self->actor, error);
    return self->producer ? 0 : -1;
}

int
mx_delivery_ready (mx_delivery_t *self, mx_problem_t *problem)
{
    if (self->producer && !mx_producer_failed (self->producer, NULL))
        return 0;
    mx_producer_destroy (&self->producer);
    char *error = NULL;
    self->producer = mx_producer_new (self->config, self->bootstrap, self->actor, &error);
    if (!self->producer) {
        mx_problem_report (problem, "cannot create the Kafka producer", error);
        return -1;
    }
    return 0;
}

bool
mx_delivery_busy (const mx_delivery_t *self)
{
    return self->batch != NULL;
}

static void
s_settle (mx_delivery_t *self)
{
    self->settle (self->owner, self->batch, self->slots);
    s_batch_free (self);
}

void
mx_delivery_send (mx_delivery_t *self, mx_outbox_batch_t *batch)
{
    assert (!self->batch && self->producer);
    int64_t now = mx_clock_now (self->clock);
    self->batch = batch;
    self->batch_seq = (self->batch_seq + 1) & 0xffffffffu;
    self->slots = (mx_delivery_slot_t *) calloc (batch->count + 1, sizeof (mx_delivery_slot_t));
    assert (self->slots);
    for (size_t i = 0; i < batch->count; i++) {
        mx_outbox_event_t *event = &batch->events [i];
        mx_outbox_headers_t headers;
        mx_outbox_headers (event, &headers);
        mx_producer_header_t items [sizeof headers.items / sizeof headers.items [0]];
        for (size_t h = 0; h < headers.count; h++)
            items [h] = (mx_producer_header_t) { headers.items [h].name, headers.items [h].value };
        char *error = NULL;
        //  A TOMBSTONE has no payload: a null value, so compaction drops the key.
        //  The payload goes to the producer: nothing after this reads it.
        if (mx_producer_send (self->producer, self->topic, event->key, &event->payload,
                              items, headers.count, self->batch_seq << 32 | i, &error)) {
            //  Not queued (the producer is full or broken): the events
            //  behind it are not sent either.
            self->slots [i].state = MX_SLOT_FAILED;
            self->slots [i].reason = error;
            break;
        }
        self->sent++;
    }
    self->deadline = now + self->config->kafka_delivery_timeout + self->config->kafka_linger_ms
                   + S_REPORT_GRACE_MS;
    if (self->sent == 0)
        s_settle (self);
}

int
mx_delivery_fd (mx_delivery_t *self)
{
    return self->producer ? mx_producer_fd (self->producer) : -1;
}

static void
s_on_report (const mx_producer_report_t *report, void *arg)
{
    mx_delivery_t *self = (mx_delivery_t *) arg;
    //  A report of a batch given up on has no slot any more.
    uint64_t index = report->tag & 0xffffffffu;
    if (!self->batch || report->tag >> 32 != self->batch_seq || index >= self->sent)
        return;
    mx_delivery_slot_t *slot = &self->slots [index];
    if (slot->state != MX_SLOT_WAITING)
        return;
    slot->state = report->acked ? MX_SLOT_ACKED : MX_SLOT_FAILED;
    if (!report->acked) {
        slot->reason = strdup (report->reason ? report->reason : "not acknowledged");
        slot->possibly_persisted = report->possibly_persisted;
    }
    self->reported++;
}

void
mx_delivery_reports (mx_delivery_t *self)
{
    if (!self->producer)
        return;
    mx_producer_drain (self->producer, s_on_report, self);
    if (self->batch && self->reported == self->sent)
        s_settle (self);
}

static bool
s_reports_ready (void *owner, void *arg)
{
    (void) owner;
    mx_delivery_reports ((mx_delivery_t *) arg);
    return false;
}

size_t
mx_delivery_sources (mx_delivery_t *self, mx_actor_source_t *sources, size_t max)
{
    if (!self->producer || max < 1)
        return 0;
    sources [0] = (mx_actor_source_t) { .fd = mx_producer_fd (self->producer), .ready = s_reports_ready, .arg = self };
    return 1;
}

int64_t
mx_delivery_deadline (const mx_delivery_t *self)
{
    return self->batch ? self->deadline : INT64_MAX;
}

static void
s_overdue (mx_delivery_t *self)
{
    size_t missing = self->sent - self->reported;
    if (!self->purged) {
        mx_log_emit (MX_LOG_WARN, self->actor, json_pack ("{s:s}", "error_class", "INFRA"),
                     "%zu delivery reports overdue: giving the %s up", missing, self->what);
        self->purged = true;
        self->deadline = mx_clock_now (self->clock) + S_REPORT_GRACE_MS;
        mx_producer_purge (self->producer);
        return;
    }
    mx_log_emit (MX_LOG_ERROR, self->actor, json_pack ("{s:s}", "error_class", "INFRA"),
                 "%zu delivery reports never came: replacing the Kafka producer", missing);
    mx_producer_destroy (&self->producer);
    for (size_t i = 0; i < self->sent; i++)
        if (self->slots [i].state == MX_SLOT_WAITING) {
            self->slots [i].state = MX_SLOT_FAILED;
            self->slots [i].reason = strdup ("no delivery report in time");
        }
    s_settle (self);
}

bool
mx_delivery_check (mx_delivery_t *self)
{
    if (self->batch && mx_clock_now (self->clock) >= self->deadline)
        s_overdue (self);
    return self->batch != NULL;
}

mx_metrics_counter_t *
mx_delivery_events_sent (const char *target)
{
    return mx_metrics_counter_by ("msgx_events_sent_total", "Outbox events acknowledged by their target",
                                  "target", target);
}

mx_metrics_counter_t *
mx_delivery_events_failed (const char *target)
{
    return mx_metrics_counter_by ("msgx_events_failed_total", "Outbox event delivery attempts that failed",
                                  "target", target);
}
