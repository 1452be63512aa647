/*  mx_delivery - see mx_delivery.h.  */
#include "mx_delivery.h"

#include <assert.h>

#include "mx_kafka_tail.h"
#include "mx_log.h"
#include "mx_producer.h"

//  librdkafka reports every message within message.timeout.ms, scanning
//  for timeouts about once a second; past this much more the batch is
//  given up (purged) so the actor can never wait for ever.
#define S_REPORT_GRACE_MS 5000

//  Exactly-once: records read back first from each partition's end;
//  the reads double while every record read is still PENDING.
#define S_INSPECT_FIRST 16

struct mx_delivery_t {
    const mx_config_t *config;
    mx_clock_t *clock;
    const char *actor;
    const char *target;
    const char *topic;
    const char *what;
    mx_delivery_settle_fn *settle;
    mx_outbox_mark_fn *mark;
    void *owner;
    const char *bootstrap;
    mx_producer_t *producer;
    bool exactly_once;
    bool inspect_owed;          //  the topic was not looked at since the producer or a failed mark
    mx_metrics_counter_t *inspected;
    mx_metrics_counter_t *inspections_ok;
    mx_metrics_counter_t *inspections_failed;
    mx_metrics_histogram_t *inspect_seconds;
    mx_metrics_histogram_t *latency;
    mx_outbox_batch_t *batch;   //  the batch out, NULL when none
    mx_delivery_slot_t *slots;
    uint64_t batch_seq;         //  in the high half of each tag: a late report of an old batch is ignored
    bool purged;                //  the batch was given up once already
    size_t sent;                //  events handed to the producer (a prefix)
    size_t reported;
    int64_t deadline;
    size_t full;                //  a batch this large means a backlog
};

static mx_metrics_counter_t *
s_inspections (const char *target, const char *result)
{
    char labels [128];
    snprintf (labels, sizeof labels, "target=%s,result=%s", target, result);
    return mx_metrics_counter ("msgx_delivery_inspections_total",
                               "Looks at what the topic's partitions hold before a new producer sends (exactly-once)",
                               labels);
}

static mx_metrics_histogram_t *
s_inspect_seconds (const char *target)
{
    static const double bounds [] = { 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
    char labels [128];
    snprintf (labels, sizeof labels, "target=%s", target);
    return mx_metrics_histogram ("msgx_delivery_inspection_seconds",
                                 "Time of one look at what the topic's partitions hold (exactly-once)", labels,
                                 bounds, sizeof bounds / sizeof bounds [0]);
}

//  Ingress record -> acknowledgement: fine buckets where the latency
//  target lies (a few ms), coarse ones for a backlog.
static mx_metrics_histogram_t *
s_latency (const char *target)
{
    static const double bounds [] = { 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05,
                                      0.075, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300 };
    char labels [128];
    snprintf (labels, sizeof labels, "target=%s", target);
    return mx_metrics_histogram ("msgx_delivery_latency_seconds",
                                 "From the ingress record of the message (proc_state created_at) to the Kafka"
                                 " acknowledgement of its event", labels, bounds, sizeof bounds / sizeof bounds [0]);
}

static mx_metrics_counter_t *
s_inspected (const char *target)
{
    return mx_metrics_counter_by ("msgx_delivery_inspected_total",
                                  "PENDING events found already on the topic and marked SENT, not sent again",
                                  "target", target);
}

void
mx_delivery_register_metrics (const char *target)
{
    mx_delivery_events_sent (target);
    mx_delivery_events_failed (target);
    s_inspected (target);
    s_inspections (target, "ok");
    s_inspections (target, "failed");
    s_inspect_seconds (target);
    s_latency (target);
}

mx_delivery_t *
mx_delivery_new (const mx_config_t *config, mx_clock_t *clock, const char *actor, const char *target,
                 const char *topic, const char *what, mx_delivery_settle_fn *settle, mx_outbox_mark_fn *mark,
                 void *owner)
{
    mx_delivery_t *self = (mx_delivery_t *) zmalloc (sizeof (mx_delivery_t));
    *self = (mx_delivery_t) {
        .config = config, .clock = clock, .actor = actor, .target = target, .topic = topic, .what = what,
        .settle = settle, .mark = mark, .owner = owner, .deadline = INT64_MAX,
        .full = (size_t) config->pipeline_delivery_batch,
        .exactly_once = mx_config_exactly_once (config),
        .inspected = s_inspected (target),
        .inspections_ok = s_inspections (target, "ok"),
        .inspections_failed = s_inspections (target, "failed"),
        .inspect_seconds = s_inspect_seconds (target),
        .latency = s_latency (target)
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
    self->inspect_owed = self->exactly_once;
    return self->producer ? 0 : -1;
}

//  ---------------------------------------------------------------------
//  Exactly-once: what the partitions hold already (docs/architecture.md,
//  "Exactly once on the wire"). Each partition holds a prefix of what each
//  producer sent to it, and whatever an earlier producer left PENDING on
//  it was written after every record whose event is marked: so reading
//  back from the end, every record whose event is still PENDING is on the
//  wire, and the first one that is not ends the search.

typedef struct {
    size_t found;               //  trailing records whose events are PENDING
    bool done;
} s_look_t;

//  One round: which of the ids read so far are PENDING; a partition is
//  done at its first record that is not, at its start, or at the cap.
static int
s_look_round (mx_delivery_t *self, PGconn *pg, mx_kafka_tail_t *tail, s_look_t *looks, int64_t *more,
              int64_t cap, char **error)
{
    size_t parts = mx_kafka_tail_count (tail), total = 0;
    for (size_t i = 0; i < parts; i++)
        if (!looks [i].done)
            total += mx_kafka_tail_part (tail, i)->count;
    int64_t *ids = (int64_t *) calloc (total + 1, sizeof (int64_t));
    bool *pending = (bool *) calloc (total + 1, sizeof (bool));
    assert (ids && pending);
    size_t at = 0;
    for (size_t i = 0; i < parts; i++)
        if (!looks [i].done) {
            const mx_kafka_tail_part_t *part = mx_kafka_tail_part (tail, i);
            if (part->count)
                memcpy (ids + at, part->ids, part->count * sizeof (int64_t));
            at += part->count;
        }
    int rc = mx_outbox_pending_among (pg, self->target, ids, total, pending, error);
    at = 0;
    for (size_t i = 0; rc == 0 && i < parts; i++) {
        more [i] = 0;
        if (looks [i].done)
            continue;
        const mx_kafka_tail_part_t *part = mx_kafka_tail_part (tail, i);
        size_t found = 0;
        while (found < part->count && pending [at + part->count - 1 - found])
            found++;
        at += part->count;
        looks [i].found = found;
        int64_t read = part->high - part->from;
        if (found < part->count || part->from <= part->low)
            looks [i].done = true;
        else
        if (read >= cap) {
            //  More than any producer ever had out: not ours to judge.
            mx_log_emit (MX_LOG_WARN, self->actor, json_pack ("{s:s,s:i}", "topic", self->topic,
                                                             "partition", (int) part->partition),
                         "%s [%d]: the last %" PRId64 " records all carry PENDING events; the records"
                         " before them are taken as not there", self->topic, (int) part->partition, read);
            looks [i].done = true;
        }
        else
            more [i] = read == 0 ? S_INSPECT_FIRST : read + read <= cap ? read : cap - read;
    }
    free (ids);
    free (pending);
    return rc;
}

static int
s_id_compare (const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return x < y ? -1 : x > y;
}

//  Reads back every partition of the topic, marks the PENDING events found
//  there SENT and logs what each partition held.
static int
s_inspect (mx_delivery_t *self, PGconn *pg, char **error)
{
    int64_t started = zclock_mono ();
    mx_kafka_tail_t *tail = mx_kafka_tail_open (self->config, self->bootstrap, self->actor, self->topic,
                                                started + self->config->delivery_inspect_timeout, error);
    if (!tail)
        return -1;
    size_t parts = mx_kafka_tail_count (tail);
    s_look_t *looks = (s_look_t *) calloc (parts + 1, sizeof (s_look_t));
    int64_t *more = (int64_t *) calloc (parts + 1, sizeof (int64_t));
    assert (looks && more);
    int64_t batch = self->config->pipeline_delivery_batch > self->config->schd_flush_limit
                  ? self->config->pipeline_delivery_batch : self->config->schd_flush_limit;
    int64_t cap = 2 * batch + S_INSPECT_FIRST;
    bool reading = false;
    for (size_t i = 0; i < parts; i++) {
        const mx_kafka_tail_part_t *part = mx_kafka_tail_part (tail, i);
        looks [i].done = part->high <= part->low;
        more [i] = looks [i].done ? 0 : S_INSPECT_FIRST;
        reading |= !looks [i].done;
    }
    int rc = 0;
    while (rc == 0 && reading) {
        rc = mx_kafka_tail_extend (tail, more, error)
          || s_look_round (self, pg, tail, looks, more, cap, error) ? -1 : 0;
        reading = false;
        for (size_t i = 0; i < parts; i++)
            reading |= more [i] > 0;
    }
    size_t total = 0;
    for (size_t i = 0; i < parts; i++)
        total += looks [i].found;
    int64_t *found = (int64_t *) calloc (total + 1, sizeof (int64_t));
    assert (found);
    json_t *report = json_array ();
    size_t at = 0;
    int64_t records = 0;
    for (size_t i = 0; rc == 0 && i < parts; i++) {
        const mx_kafka_tail_part_t *part = mx_kafka_tail_part (tail, i);
        records += part->records;
        if (looks [i].found)
            memcpy (found + at, part->ids + part->count - looks [i].found, looks [i].found * sizeof (int64_t));
        at += looks [i].found;
        if (part->high > part->low)
            json_array_append_new (report, json_pack ("{s:i,s:I,s:I,s:I,s:I}", "partition", (int) part->partition,
                                                      "high", (json_int_t) part->high,
                                                      "read", (json_int_t) part->records,
                                                      "last_event_id", (json_int_t) (part->count ? part->ids [part->count - 1] : 0),
                                                      "already_there", (json_int_t) looks [i].found));
    }
    //  A partition written at-least-once before may hold an event twice.
    qsort (found, total, sizeof (int64_t), s_id_compare);
    size_t distinct = 0;
    for (size_t i = 0; i < total; i++)
        if (distinct == 0 || found [distinct - 1] != found [i])
            found [distinct++] = found [i];
    total = distinct;
    int marked = 0;
    if (rc == 0 && total > 0)
        rc = self->mark (pg, found, total, mx_clock_now (self->clock), &marked, error);
    double seconds = (double) (zclock_mono () - started) / 1000.0;
    if (rc == 0) {
        mx_metrics_add (self->inspected, total);
        mx_metrics_histogram_observe (self->inspect_seconds, seconds);
        mx_log_emit (MX_LOG_INFO, self->actor,
                     json_pack ("{s:s,s:s,s:I,s:I,s:i,s:o}", "target", self->target, "topic", self->topic,
                                "records_read", (json_int_t) records, "already_there", (json_int_t) total,
                                "marked", marked, "partitions", report),
                     "%s: %zu partitions looked at in %.3f s; %zu PENDING events already there, marked SENT"
                     " and not sent again", self->topic, parts, seconds, total);
    }
    else
        json_decref (report);
    free (found);
    free (looks);
    free (more);
    mx_kafka_tail_destroy (&tail);
    return rc;
}

int
mx_delivery_ready (mx_delivery_t *self, PGconn *pg, mx_problem_t *problem)
{
    char *error = NULL;
    if (!self->producer || mx_producer_failed (self->producer, NULL)) {
        mx_producer_destroy (&self->producer);
        self->producer = mx_producer_new (self->config, self->bootstrap, self->actor, &error);
        if (!self->producer) {
            mx_problem_report (problem, "cannot create the Kafka producer", error);
            return -1;
        }
        self->inspect_owed = self->exactly_once;
    }
    if (self->inspect_owed) {
        if (s_inspect (self, pg, &error)) {
            mx_metrics_add (self->inspections_failed, 1);
            mx_problem_report (problem, "cannot tell what the topic holds already; nothing is sent until it can",
                               error);
            return -1;
        }
        mx_metrics_add (self->inspections_ok, 1);
        self->inspect_owed = false;
    }
    return 0;
}

void
mx_delivery_reinspect (mx_delivery_t *self)
{
    self->inspect_owed = self->exactly_once;
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
    bool all_acked = true;
    for (size_t i = 0; i < self->batch->count; i++)
        all_acked &= self->slots [i].state == MX_SLOT_ACKED;
    if (self->exactly_once && !all_acked && self->producer) {
        //  A record not acknowledged may be on the wire or not, and one
        //  behind it on its partition must never follow it there after a
        //  gap: this producer sends nothing more; the next one looks first.
        mx_log_emit (MX_LOG_INFO, self->actor, NULL,
                     "a %s was not wholly acknowledged: a new Kafka producer looks at what the topic holds"
                     " before it sends", self->what);
        mx_producer_destroy (&self->producer);
    }
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
    if (self->sent == 0) {
        s_settle (self);
        return;
    }
    //  Linger is for a backlog: records that come together go in one
    //  request. A batch that is not full is all there is: it goes now.
    if (self->sent < self->full)
        mx_producer_hurry (self->producer);
}

void
mx_delivery_set_full (mx_delivery_t *self, size_t full)
{
    self->full = full;
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
    int64_t recorded_at = self->batch->events [index].recorded_at;
    if (report->acked && recorded_at > 0) {
        int64_t waited = mx_clock_now (self->clock) - recorded_at;
        mx_metrics_histogram_observe (self->latency, waited > 0 ? (double) waited / 1000.0 : 0.0);
    }
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
