/*  mx_dispatcher - see mx_dispatcher.h.

    One batch is out at a time. While it is out the actor keeps serving its
    pipe: a wake-up is remembered, $TERM drops the batch (its events stay
    PENDING and go again after a restart).

    It also runs msgxctl replay --events (ADMIN replay-events): between
    delivery rounds, so a replay never changes the outbox under a batch.
*/
#include "mx_dispatcher.h"

#include <assert.h>

#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_outbox.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_producer.h"

#define ACTOR "dispatcher"

//  librdkafka reports every message within message.timeout.ms, scanning
//  for timeouts about once a second; past this much more the batch is
//  given up (purged) so the actor can never wait for ever.
#define S_REPORT_GRACE_MS 5000

typedef enum { S_WAITING, S_ACKED, S_FAILED } s_slot_state_t;

typedef struct {
    s_slot_state_t state;
    char *reason;
    bool possibly_persisted;
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
    //  The batch out, NULL when none.
    mx_outbox_batch_t *batch;
    s_slot_t *slots;
    uint64_t batch_seq;         //  in the high half of each tag: a late report of an old batch is ignored
    bool purged;                //  the batch was given up once already
    size_t sent;                //  events handed to the producer (a prefix)
    size_t reported;
    int64_t batch_deadline;
    int64_t rounds;             //  full batches in this wake-up
    bool woken;                 //  EVENTS_COMMITTED while the batch was out
    int64_t next_round;
    zlist_t *admin_waiting;     //  ADMIN requests (zmsg_t) held while a batch is out
    mx_problem_t problem;
    mx_metrics_counter_t *sent_total;
    mx_metrics_counter_t *failed_total;
} s_dispatcher_t;

//  A producer that failed fatally cannot keep the order any more: replace it.
static int
s_producer (s_dispatcher_t *self)
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
s_batch_free (s_dispatcher_t *self)
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

//  Every report is in (or nothing could be sent): mark the acknowledged
//  prefix, record the first failure, decide when to look again.
static void
s_settle (s_dispatcher_t *self)
{
    mx_outbox_batch_t *batch = self->batch;
    int64_t now = mx_clock_now (self->clock);
    size_t prefix = 0;
    while (prefix < batch->count && self->slots [prefix].state == S_ACKED)
        prefix++;
    bool woken = self->woken;
    self->woken = false;
    int64_t *ids = (int64_t *) calloc (prefix + 1, sizeof (int64_t));
    for (size_t i = 0; i < prefix; i++)
        ids [i] = batch->events [i].event_id;
    char *error = NULL;
    int rc = mx_outbox_mark_sent (self->pg, ids, prefix, now, NULL, &error);
    free (ids);
    if (rc) {
        //  Kafka has them; they go once more (same event ids) when
        //  PostgreSQL answers again.
        mx_problem_report (&self->problem, "cannot mark delivered events SENT", error);
        self->next_round = now + self->config->pipeline_poll_interval;
        s_batch_free (self);
        return;
    }
    mx_metrics_add (self->sent_total, prefix);
    if (prefix < batch->count) {
        mx_metrics_add (self->failed_total, 1);
        const mx_outbox_event_t *event = &batch->events [prefix];
        const s_slot_t *slot = &self->slots [prefix];
        mx_outbox_failure_t failure = { event->event_id, slot->reason ? slot->reason : "no delivery report" };
        mx_outbox_outcome_t outcome = { 0 };
        size_t done = 0;
        if (mx_outbox_fail (self->pg, &failure, 1, (int) self->config->delivery_max_attempts,
                            self->config->delivery_backoff.items, self->config->delivery_backoff.count,
                            now, &outcome, &done, &error)) {
            mx_problem_report (&self->problem, "cannot record a failed delivery", error);
            self->next_round = now + self->config->pipeline_poll_interval;
        }
        else
        if (done == 1 && outcome.dead) {
            mx_log_emit (MX_LOG_ERROR, ACTOR,
                         json_pack ("{s:I,s:I,s:i,s:s}", "event_id", (json_int_t) event->event_id,
                                    "flid", (json_int_t) event->flid, "attempts", outcome.attempts,
                                    "error_class", "EXHAUSTED"),
                         "event %" PRId64 " DEAD after %d attempts, kept as the dead-letter record: %s",
                         event->event_id, outcome.attempts, failure.reason);
            self->next_round = now;
        }
        else
        if (done == 1) {
            mx_log_emit (MX_LOG_WARN, ACTOR,
                         json_pack ("{s:I,s:I,s:i,s:I,s:b}", "event_id", (json_int_t) event->event_id,
                                    "flid", (json_int_t) event->flid, "attempts", outcome.attempts,
                                    "next_at", (json_int_t) outcome.next_attempt_at,
                                    "possibly_persisted", slot->possibly_persisted),
                         "event %" PRId64 " not delivered (attempt %d): %s; %zu after it wait",
                         event->event_id, outcome.attempts, failure.reason, batch->count - prefix - 1);
            self->next_round = outcome.next_attempt_at;
        }
        else
            self->next_round = now;
        self->rounds = 0;
    }
    else
    if (batch->count == (size_t) self->config->pipeline_delivery_batch
    &&  ++self->rounds < self->config->pipeline_delivery_drain_rounds)
        self->next_round = now;         //  full: more may wait, same wake-up
    else {
        //  The wake-up is over; a backlog left goes at the next one.
        self->rounds = 0;
        self->next_round = woken ? now : now + self->config->pipeline_poll_interval;
    }
    if (prefix > 0)
        mx_log_emit (MX_LOG_DEBUG, ACTOR,
                     json_pack ("{s:I,s:I}", "first", (json_int_t) batch->events [0].event_id,
                                "last", (json_int_t) batch->events [prefix - 1].event_id),
                     "%zu events delivered", prefix);
    s_batch_free (self);
}

static void
s_on_report (const mx_producer_report_t *report, void *arg)
{
    s_dispatcher_t *self = (s_dispatcher_t *) arg;
    //  A report of a batch given up on has no slot any more.
    uint64_t index = report->tag & 0xffffffffu;
    if (!self->batch || report->tag >> 32 != self->batch_seq || index >= self->sent)
        return;
    s_slot_t *slot = &self->slots [index];
    if (slot->state != S_WAITING)
        return;
    slot->state = report->acked ? S_ACKED : S_FAILED;
    if (!report->acked) {
        slot->reason = strdup (report->reason ? report->reason : "not acknowledged");
        slot->possibly_persisted = report->possibly_persisted;
    }
    self->reported++;
}

static void
s_reports (s_dispatcher_t *self)
{
    if (!self->producer)
        return;
    mx_producer_drain (self->producer, s_on_report, self);
    if (self->batch && self->reported == self->sent)
        s_settle (self);
}

//  librdkafka bounds every report by message.timeout.ms; this bounds the
//  wait should it not: purge first (reports follow), then replace the
//  producer and count the silent ones as failed.
static void
s_overdue (s_dispatcher_t *self)
{
    size_t missing = self->sent - self->reported;
    if (!self->purged) {
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:s}", "error_class", "INFRA"),
                     "%zu delivery reports overdue: giving the batch up", missing);
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
s_round (s_dispatcher_t *self)
{
    assert (!self->batch);
    int64_t now = mx_clock_now (self->clock);
    if (mx_actor_pg (&self->pg, self->config, ACTOR, &self->problem) || s_producer (self)) {
        self->next_round = now + self->config->pipeline_poll_interval;
        return;
    }
    mx_outbox_batch_t *batch = NULL;
    char *error = NULL;
    if (mx_outbox_take (self->pg, MX_OUTBOX_TARGET_MSG, (size_t) self->config->pipeline_delivery_batch, now,
                        &batch, &error)) {
        mx_problem_report (&self->problem, "cannot read the outbox", error);
        self->next_round = now + self->config->pipeline_poll_interval;
        return;
    }
    mx_problem_recovered (&self->problem);
    if (batch->count == 0) {
        //  Nothing ready: the head's due time, else the safety sweep.
        self->next_round = batch->waiting_until >= 0 ? batch->waiting_until
                         : now + self->config->pipeline_poll_interval;
        self->rounds = 0;
        mx_outbox_batch_destroy (&batch);
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
        if (mx_producer_send (self->producer, self->config->kafka_topic_msg, event->key, event->payload,
                              headers.items, headers.count, self->batch_seq << 32 | i, &error)) {
            //  Not queued: the events behind it are not sent either.
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

//  ---------------------------------------------------------------------
//  Replay of dead letters (mx_outbox_replay_candidates says what goes)

//  "event 7: not DEAD: state SENT; event 9: no such event" for the rows
//  refused, NULL when none is.
static char *
s_refusals (json_t *rows)
{
    char *text = NULL;
    size_t index;
    json_t *row;
    json_array_foreach (rows, index, row) {
        const char *refused = json_string_value (json_object_get (row, "refused"));
        if (!refused)
            continue;
        char *more = zsys_sprintf ("%s%sevent %" JSON_INTEGER_FORMAT ": %s", text ? text : "", text ? "; " : "",
                                   json_integer_value (json_object_get (row, "event_id")), refused);
        free (text);
        text = more;
    }
    return text;
}

static void
s_audit (s_dispatcher_t *self, const char *user, json_t *args, const char *result, const char *detail)
{
    char *target = json_dumps (args, JSON_COMPACT | JSON_SORT_KEYS);
    char *error = NULL;
    if (mx_audit_write (self->pg, "msgxctl", user, "replay-events", target, result, detail,
                        mx_clock_now (self->clock), &error)) {
        mx_warn (ACTOR, "cannot write the audit log: %s", error);
        free (error);
    }
    free (target);
}

//  Returns the reply payload; *ok tells OK or ERR.
static char *
s_replay_events (s_dispatcher_t *self, json_t *args, bool *ok)
{
    *ok = false;
    json_t *id_list = json_object_get (args, "ids");
    bool all = json_is_true (json_object_get (args, "all"));
    bool dry_run = json_is_true (json_object_get (args, "dry_run"));
    bool yes = json_is_true (json_object_get (args, "yes"));
    const char *user = json_string_value (json_object_get (args, "os_user"));
    if (!!id_list == all)
        return strdup ("replay --events needs exactly one of --ids N[,N...] or --all");
    size_t count;
    int64_t *ids;
    char *refused = mx_actor_admin_ids (id_list, "replay --events --ids", "event", &ids, &count);
    if (refused)
        return refused;
    if (!dry_run && !yes) {
        free (ids);
        return strdup ("replay --events sends dead events again: add --yes to act, or --dry-run to look first");
    }
    if (mx_actor_pg (&self->pg, self->config, ACTOR, &self->problem)) {
        free (ids);
        return strdup ("PostgreSQL unreachable");
    }
    char *error = NULL, *rows_text = NULL;
    if (mx_outbox_replay_candidates (self->pg, ids, count, all, &rows_text, &error)) {
        free (ids);
        char *reply = zsys_sprintf ("cannot list the dead events: %s", error);
        free (error);
        return reply;
    }
    free (ids);
    json_t *rows = json_loads (rows_text, 0, NULL);
    free (rows_text);
    assert (rows);
    //  Ids asked for are all or nothing: the operator named them.
    char *refusals = id_list ? s_refusals (rows) : NULL;
    if (refusals) {
        char *reply = zsys_sprintf ("nothing replayed: %s", refusals);
        s_audit (self, user, args, "refused", refusals);
        free (refusals);
        json_decref (rows);
        return reply;
    }
    int moved = 0;
    if (dry_run)
        s_audit (self, user, args, "dry-run", NULL);
    else {
        size_t index, heads = 0;
        json_t *row;
        int64_t *go = (int64_t *) calloc (json_array_size (rows) + 1, sizeof (int64_t));
        assert (go);
        json_array_foreach (rows, index, row)
            if (!json_string_value (json_object_get (row, "refused")))
                go [heads++] = json_integer_value (json_object_get (row, "event_id"));
        int rc = mx_outbox_replay (self->pg, go, heads, user, mx_clock_now (self->clock), &moved, &error);
        free (go);
        if (rc) {
            json_decref (rows);
            char *reply = zsys_sprintf ("replay failed, nothing moved: %s", error);
            free (error);
            return reply;
        }
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:i,s:s}", "moved", moved, "os_user", user ? user : ""),
                     "replay: %d dead event%s back to PENDING", moved, moved == 1 ? "" : "s");
        //  Deliver at once; control wakes the schd-aggregator.
        self->next_round = mx_clock_now (self->clock);
        self->rounds = 0;
    }
    json_t *reply = json_pack ("{s:b,s:o,s:i}", "dry_run", dry_run, "rows", rows, "moved", moved);
    char *text = json_dumps (reply, JSON_COMPACT);
    json_decref (reply);
    *ok = true;
    return text;
}

static void
s_handle_admin (s_dispatcher_t *self, zmsg_t **rest_p)
{
    zmsg_t *rest = *rest_p;
    char *request = mx_cmd_pop_str (rest);
    char *verb = mx_cmd_pop_str (rest);
    char *args_text = mx_cmd_pop_str (rest);
    mx_cmd_done (rest_p);
    json_t *args = json_loads (args_text, 0, NULL);
    bool ok = false;
    char *payload = args && strcmp (verb, "replay-events") == 0 ? s_replay_events (self, args, &ok)
                  : zsys_sprintf ("dispatcher does not handle '%s'", verb);
    mx_cmd_send (self->pipe, MX_CMD_ADMIN_REPLY, strtoull (request, NULL, 10), ok ? "OK" : "ERR", payload);
    free (payload);
    json_decref (args);
    free (request);
    free (verb);
    free (args_text);
}

static void
s_handle_pipe (s_dispatcher_t *self)
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
            char *detail = zsys_sprintf ("KAFKA:msg to topic %s at %s; %" PRId64 " events a batch, up to %"
                                         PRId64 " batches a wake-up", self->config->kafka_topic_msg,
                                         self->bootstrap, self->config->pipeline_delivery_batch,
                                         self->config->pipeline_delivery_drain_rounds);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            //  Start-up sweep: whatever an earlier run left PENDING.
            self->next_round = mx_clock_now (self->clock);
            break;
        }
        case MX_CMD_EVENTS_COMMITTED:
            if (self->batch)
                self->woken = true;
            else
            if (self->started)
                self->next_round = mx_clock_now (self->clock);
            break;
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;              //  pausing stops claiming messages, not delivering what they made
        case MX_CMD_ADMIN:
            if (self->batch) {
                //  Answered once the batch out is settled.
                zlist_append (self->admin_waiting, rest);
                return;
            }
            s_handle_admin (self, &rest);
            return;
        default:
            assert (!"dispatcher: unexpected command");
    }
    mx_cmd_done (&rest);
}

void
mx_dispatcher_actor (zsock_t *pipe, void *args)
{
    s_dispatcher_t self_s = { 0 };
    s_dispatcher_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->problem.actor = ACTOR;
    self->sent_total = mx_metrics_events_sent ("KAFKA:msg");
    self->failed_total = mx_metrics_events_failed ("KAFKA:msg");
    self->clock = self->args->clock;
    self->next_round = INT64_MAX;
    self->batch_deadline = INT64_MAX;
    self->admin_waiting = zlist_new ();
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
        int64_t deadline = self->batch ? self->batch_deadline : self->next_round;
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
        //  Between rounds: the requests held while the batch was out.
        while (!self->batch && zlist_size (self->admin_waiting) > 0) {
            zmsg_t *request = (zmsg_t *) zlist_pop (self->admin_waiting);
            s_handle_admin (self, &request);
        }
        now = mx_clock_now (self->clock);
        if (!self->batch && self->started && now >= self->next_round)
            s_round (self);
    }
    //  Requests still held get no answer: their msgxctl times out.
    while (zlist_size (self->admin_waiting) > 0) {
        zmsg_t *request = (zmsg_t *) zlist_pop (self->admin_waiting);
        zmsg_destroy (&request);
    }
    zlist_destroy (&self->admin_waiting);
    s_batch_free (self);
    mx_producer_destroy (&self->producer);
    mx_pg_disconnect (&self->pg);
    zsock_destroy (&self->ticks);
    mx_problem_clear (&self->problem);
}
