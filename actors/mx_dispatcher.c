/*  mx_dispatcher - see mx_dispatcher.h.

    One batch is out at a time. While it is out the actor keeps serving its
    pipe: a wake-up is remembered, $TERM drops the batch (its events stay
    PENDING and go again after a restart).

    It also runs msgxctl replay --events (ADMIN replay-events): between
    delivery rounds, so a replay never changes the outbox under a batch.
*/
#include "mx_dispatcher.h"

#include <assert.h>

#include "mx_admin.h"
#include "mx_delivery.h"
#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_outbox.h"
#include "mx_pg.h"
#include "mx_procstate.h"

#define ACTOR "dispatcher"

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    bool started;
    PGconn *pg;
    const char *bootstrap;
    const char *target;         //  KAFKA:msg, or KAFKA:ref for the ref-dispatcher
    char topic [MX_CONFIG_TOPIC_BUFSIZE];   //  mx_config_topic: suffixed on a shadow instance
    mx_delivery_t *delivery;    //  the producer and the batch out
    int64_t rounds;             //  full batches in this wake-up
    bool woken;                 //  EVENTS_COMMITTED while the batch was out
    bool durable;               //  the session's synchronous_commit (s_durable)
    int64_t next_round;
    //  Where a batch's time goes, for the debug log (zclock_usecs): the
    //  first wake-up not yet answered by a take, the one the batch out
    //  answers, its take, its send.
    int64_t woken_at, answers, take_at, taken_at, sent_at;
    zlist_t *admin_waiting;     //  ADMIN requests (zmsg_t) held while a batch is out
    mx_problem_t problem;
    mx_metrics_counter_t *sent_total;
    mx_metrics_counter_t *failed_total;
} s_dispatcher_t;

//  Whether the session's commits wait for the WAL flush
//  (synchronous_commit). Without a backlog they do not: the commits are
//  SENT marks and failed attempts, and only a crash of PostgreSQL itself
//  (not of msgxd) loses the last of them, a few hundred milliseconds'
//  worth (3 x wal_writer_delay): with exactly-once the next producer finds
//  those events on the topic and marks them (docs/architecture.md), with
//  at-least-once they go once more, which that mode allows. The wait for
//  the disk would otherwise sit between every acknowledgement and the
//  next batch. Under a backlog (full batches) they do, so what a crash can
//  lose stays far below what the look at the topic reads back. A replay
//  of dead events (an operator's request) is always durable.
static int
s_durable (s_dispatcher_t *self, bool durable)
{
    if (!self->pg)
        return -1;
    if (self->durable == durable)
        return 0;
    char *error = NULL;
    if (mx_pg_exec (self->pg, durable ? "SET synchronous_commit = on" : "SET synchronous_commit = off",
                    0, NULL, NULL, &error)) {
        mx_problem_report (&self->problem, "cannot set synchronous_commit", error);
        //  A new session starts durable.
        mx_pg_disconnect (&self->pg);
        self->durable = true;
        return -1;
    }
    self->durable = durable;
    return 0;
}

//  The session, (re)connected when needed (a new one commits durably).
//  A new session may follow a crash of PostgreSQL that lost the last SENT
//  marks committed without waiting for the disk: their events read as
//  PENDING again although Kafka has them, so exactly-once looks at the
//  topic again before it sends.
static int
s_pg (s_dispatcher_t *self)
{
    bool connected = self->pg && PQstatus (self->pg) == CONNECTION_OK;
    if (mx_actor_pg (&self->pg, self->config, ACTOR, &self->problem))
        return -1;
    if (!connected) {
        self->durable = true;
        mx_delivery_reinspect (self->delivery);
    }
    return 0;
}

//  Every report is in (or nothing could be sent): mark the acknowledged
//  prefix, record the first failure, decide when to look again.
static void
s_settle (void *owner, const mx_outbox_batch_t *batch, const mx_delivery_slot_t *slots)
{
    s_dispatcher_t *self = (s_dispatcher_t *) owner;
    int64_t now = mx_clock_now (self->clock);
    int64_t acked_at = zclock_usecs ();
    size_t prefix = 0;
    while (prefix < batch->count && slots [prefix].state == MX_SLOT_ACKED)
        prefix++;
    bool woken = self->woken;
    self->woken = false;
    int64_t *ids = (int64_t *) calloc (prefix + 1, sizeof (int64_t));
    for (size_t i = 0; i < prefix; i++)
        ids [i] = batch->events [i].event_id;
    char *error = NULL;
    int rc = -1;
    if (s_durable (self, batch->count >= (size_t) self->config->pipeline_delivery_batch))
        error = strdup ("no PostgreSQL session");
    else
        rc = mx_outbox_mark_sent (self->pg, ids, prefix, now, NULL, &error);
    free (ids);
    if (rc) {
        //  Kafka has them: found there before the next round
        //  (exactly-once), or sent once more with the same event ids.
        mx_delivery_reinspect (self->delivery);
        mx_problem_report (&self->problem, "cannot mark delivered events SENT", error);
        self->next_round = now + self->config->pipeline_poll_interval;
        return;
    }
    mx_metrics_add (self->sent_total, prefix);
    if (prefix < batch->count) {
        mx_metrics_add (self->failed_total, 1);
        const mx_outbox_event_t *event = &batch->events [prefix];
        const mx_delivery_slot_t *slot = &slots [prefix];
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
                     "%zu events delivered (us: wake-up to take %" PRId64 ", take %" PRId64 ", send %" PRId64
                     ", acknowledged %" PRId64 ", marked %" PRId64 ")", prefix,
                     self->answers ? self->take_at - self->answers : 0, self->taken_at - self->take_at,
                     self->sent_at - self->taken_at, acked_at - self->sent_at, zclock_usecs () - acked_at);
}

static void
s_round (s_dispatcher_t *self)
{
    int64_t now = mx_clock_now (self->clock);
    if (s_pg (self)
    ||  mx_delivery_ready (self->delivery, self->pg, &self->problem)) {
        self->next_round = now + self->config->pipeline_poll_interval;
        return;
    }
    mx_outbox_batch_t *batch = NULL;
    char *error = NULL;
    self->take_at = zclock_usecs ();
    self->answers = self->woken_at;
    self->woken_at = 0;
    if (mx_outbox_take (self->pg, self->target, (size_t) self->config->pipeline_delivery_batch, now,
                        &batch, &error)) {
        mx_problem_report (&self->problem, "cannot read the outbox", error);
        //  A session that was lost is replaced at once (a server still
        //  down makes that round wait the poll interval).
        bool lost = PQstatus (self->pg) != CONNECTION_OK;
        self->next_round = lost ? now : now + self->config->pipeline_poll_interval;
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
    self->taken_at = zclock_usecs ();
    mx_delivery_send (self->delivery, batch);
    self->sent_at = zclock_usecs ();
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
    char *refused = mx_admin_ids (id_list, "replay --events --ids", "event", &ids, &count);
    if (refused)
        return refused;
    if (!dry_run && !yes) {
        free (ids);
        return strdup ("replay --events sends dead events again: add --yes to act, or --dry-run to look first");
    }
    if (s_pg (self)) {
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
        //  The operator is told it is done: durable before the reply.
        int rc = s_durable (self, true);
        if (rc)
            error = strdup ("cannot make the session's commits durable");
        else
            rc = mx_outbox_replay (self->pg, go, heads, user, mx_clock_now (self->clock), &moved, &error);
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
    mx_cmd_ADMIN_t admin;
    mx_cmd_ADMIN_take (rest_p, &admin);
    const char *verb = admin.verb, *args_text = admin.args;
    json_t *args = json_loads (args_text, 0, NULL);
    bool ok = false;
    char *payload = args && strcmp (verb, "replay-events") == 0 ? s_replay_events (self, args, &ok)
                  : zsys_sprintf ("dispatcher does not handle '%s'", verb);
    mx_cmd_send (self->pipe, MX_CMD_ADMIN_REPLY, admin.request, ok ? "OK" : "ERR", payload);
    free (payload);
    json_decref (args);
    mx_cmd_ADMIN_free (&admin);
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_dispatcher_t *self = (s_dispatcher_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            self->bootstrap = self->args->kafka_bootstrap && *self->args->kafka_bootstrap
                            ? self->args->kafka_bootstrap : self->config->kafka_bootstrap_servers;
            if (!mx_config_publishes (self->config)) {
                mx_warn (ACTOR, "shadow mode (msgx.shadow-publish = false): nothing is published, "
                                "%s events stay PENDING in this instance's outbox", self->target);
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
            char *detail = zsys_sprintf ("%s to topic %s at %s; %" PRId64 " events a batch, up to %"
                                         PRId64 " batches a wake-up", self->target, self->topic,
                                         self->bootstrap, self->config->pipeline_delivery_batch,
                                         self->config->pipeline_delivery_drain_rounds);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            //  Start-up sweep: whatever an earlier run left PENDING.
            self->next_round = mx_clock_now (self->clock);
            break;
        }
        case MX_CMD_EVENTS_COMMITTED:
            if (!self->woken_at)
                self->woken_at = zclock_usecs ();
            if (mx_delivery_busy (self->delivery))
                self->woken = true;
            else
            if (self->started)
                self->next_round = mx_clock_now (self->clock);
            break;
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;              //  pausing stops claiming messages, not delivering what they made
        case MX_CMD_ADMIN:
            if (mx_delivery_busy (self->delivery)) {
                //  Answered once the batch out is settled.
                zlist_append (self->admin_waiting, rest);
                return true;
            }
            s_handle_admin (self, &rest);
            return true;
        default:
            assert (!"dispatcher: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

//  The producer's delivery reports, while it exists.
static size_t
s_sources (void *self_, mx_actor_source_t *sources, size_t max)
{
    return mx_delivery_sources (((s_dispatcher_t *) self_)->delivery, sources, max);
}

static int64_t
s_deadline (void *self_)
{
    s_dispatcher_t *self = (s_dispatcher_t *) self_;
    return mx_delivery_busy (self->delivery) ? mx_delivery_deadline (self->delivery) : self->next_round;
}

static void
s_wake (void *self_)
{
    s_dispatcher_t *self = (s_dispatcher_t *) self_;
    mx_delivery_check (self->delivery);
    //  Between rounds: the requests held while the batch was out.
    while (!mx_delivery_busy (self->delivery) && zlist_size (self->admin_waiting) > 0) {
        zmsg_t *request = (zmsg_t *) zlist_pop (self->admin_waiting);
        s_handle_admin (self, &request);
    }
    int64_t now = mx_clock_now (self->clock);
    if (!mx_delivery_busy (self->delivery) && self->started && now >= self->next_round)
        s_round (self);
}

void
mx_dispatcher_actor (zsock_t *pipe, void *args)
{
    s_dispatcher_t self_s = { 0 };
    s_dispatcher_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    //  The same delivery, one event after the other, serves KAFKA:ref
    //  under the name ref-dispatcher (mx_actors.c).
    bool ref = self->args->name && streq (self->args->name, MX_REF_DISPATCHER);
    self->target = ref ? MX_OUTBOX_TARGET_REF : MX_OUTBOX_TARGET_MSG;
    self->problem.actor = ref ? MX_REF_DISPATCHER : ACTOR;
    self->sent_total = mx_delivery_events_sent (self->target);
    self->failed_total = mx_delivery_events_failed (self->target);
    self->clock = self->args->clock;
    self->durable = true;
    self->next_round = INT64_MAX;
    if (ref)
        mx_config_ref_topic (self->config, self->topic);
    else
        mx_config_topic (self->config, false, self->topic);
    self->delivery = mx_delivery_new (self->config, self->clock, self->problem.actor, self->target, self->topic,
                                      "batch", s_settle, mx_outbox_mark_sent, self);
    self->admin_waiting = zlist_new ();

    mx_actor_ops_t ops = { .command = s_command, .sources = s_sources, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    //  Requests still held get no answer: their msgxctl times out.
    while (zlist_size (self->admin_waiting) > 0) {
        zmsg_t *request = (zmsg_t *) zlist_pop (self->admin_waiting);
        zmsg_destroy (&request);
    }
    zlist_destroy (&self->admin_waiting);
    mx_delivery_destroy (&self->delivery);
    mx_pg_disconnect (&self->pg);
    mx_problem_clear (&self->problem);
}
