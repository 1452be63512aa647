/*  mx_pump - see mx_pump.h.

    One tick (SPEC §3.2): find the head (lowest PENDING/FAILED); a head
    above W is not claimed; a poisoned FAILED head becomes DEAD(EXHAUSTED);
    a FAILED head waits for next_attempt_at and nothing behind it moves;
    otherwise it goes to the processor. The pump waits by message (WAKE from
    control when W moves, PROCESSED from the processor) or until the next
    deadline on the injected clock; it never sleeps between messages.
*/
#include "mx_pump.h"

#include <assert.h>
#include <unistd.h>

#include "mx_admin.h"
#include "mx_flight_repo.h"
#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_metrics.h"
#include "mx_pg.h"
#include "mx_processor.h"
#include "mx_procstate.h"
#include "mx_rawstore.h"
#include "mx_sis.h"
#include "mx_sis_body.h"
#include "mx_tz.h"

#define ACTOR "pump"
#define REPLAY_LOCK_TIMEOUT_MS 10000
//  The watchdog's exit: EX_SOFTWARE, and the hard limit on stopping in order.
#define S_STALL_EXIT_CODE 70
#define S_STALL_EXIT_S 5

typedef struct {
    zsock_t *pipe;
    zsock_t *processor;         //  PAIR to the processor's data socket
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    bool paused;
    PGconn *pg;
    mx_mailbox_t *mailbox;      //  replay's dry run reads raw messages
    mx_tz_t *zone;
    uint64_t epoch;
    int64_t in_flight;          //  msg_id handed to the processor, 0 = none
    int64_t in_flight_since;    //  when it was handed over (the watchdog's start)
    bool stalled;               //  the watchdog fired: FATAL sent, nothing more
    int64_t next_check;         //  deadline of the next tick
    int64_t deadline;           //  the one the loop waits for (s_deadline)
    int64_t warned_w;           //  "head above W" said once per W
    zmsg_t *pending_admin;      //  a replay waiting for the in-flight message
    mx_problem_t problem;
} s_pump_t;

static void
s_later (s_pump_t *self, int64_t delay_ms)
{
    self->next_check = mx_clock_now (self->clock) + delay_ms;
}

//  One scheduling step; loops over poison escalations, stops at the first
//  wait or hand-over.
static void
s_tick (s_pump_t *self)
{
    while (!self->paused && !self->in_flight) {
        if (mx_actor_pg (&self->pg, self->config, ACTOR, &self->problem)) {
            s_later (self, self->config->pipeline_poll_interval);
            return;
        }
        char *error = NULL;
        //  Batches an earlier life of msgxd started and never finished:
        //  counted against their messages before the head is looked at.
        int counted = 0;
        if (mx_procstate_settle_starts (self->pg, &counted, &error)) {
            mx_problem_report (&self->problem, "cannot count the starts of unfinished batches", error);
            s_later (self, self->config->pipeline_poll_interval);
            return;
        }
        if (counted > 0)
            mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:i}", "messages", counted),
                         "msgxd ended during the processing of %d message%s: one unfinished start counted for each;"
                         " they are processed one at a time now", counted, counted == 1 ? "" : "s");
        mx_head_t head;
        mx_cursor_t cursor = { 0 };
        int found = mx_procstate_head (self->pg, &head, &cursor.w, &error);
        if (found < 0) {
            mx_problem_report (&self->problem, "cannot read the FIFO head", error);
            s_later (self, self->config->pipeline_poll_interval);
            return;
        }
        //  1. No head: wait for a wake-up (or the poll interval).
        if (!found) {
            self->next_check = INT64_MAX;
            return;
        }
        mx_problem_recovered (&self->problem);
        //  2. Above W: only compat rows get here; claiming would let it
        //  overtake smaller IDs ingress has not seen yet.
        if (head.msg_id > cursor.w) {
            if (self->warned_w != cursor.w) {
                self->warned_w = cursor.w;
                mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:I,s:I}", "msg_id", (json_int_t) head.msg_id,
                                                            "w", (json_int_t) cursor.w),
                             "head %" PRId64 " is above W=%" PRId64 ": not claimed until ingress moves W past it",
                             head.msg_id, cursor.w);
            }
            self->next_check = INT64_MAX;       //  W_MOVED wakes us
            return;
        }
        int64_t now = mx_clock_now (self->clock);
        //  3a. Crash loop: started this often without an outcome, the
        //  process died or hung on it each time; the FIFO goes on.
        if (head.starts >= self->config->pipeline_crash_loop_starts) {
            int rc = mx_procstate_crash_loop (self->pg, head.msg_id, head.starts, now, &error);
            if (rc < 0) {
                mx_problem_report (&self->problem, "cannot quarantine a crash-looping head", error);
                s_later (self, self->config->pipeline_poll_interval);
                return;
            }
            mx_log_emit (MX_LOG_ERROR, ACTOR,
                         json_pack ("{s:I,s:s,s:s,s:i}", "msg_id", (json_int_t) head.msg_id, "state", "DEAD",
                                    "error_class", "EXHAUSTED", "starts", head.starts),
                         "%" PRId64 " DEAD(EXHAUSTED): crash-loop: started %d times without an outcome; quarantined,"
                         " the FIFO goes on (msgxctl show %" PRId64 ", then replay --id %" PRId64 " once fixed)",
                         head.msg_id, head.starts, head.msg_id, head.msg_id);
            if (rc == 1) {
                mx_metrics_add (mx_pump_crash_loop (), 1);
                mx_metrics_add (mx_processor_messages_dead ("EXHAUSTED"), 1);
                mx_cmd_send (self->pipe, MX_CMD_MARKS_OWED, (uint64_t) head.msg_id, (uint64_t) head.msg_id);
            }
            continue;
        }
        if (head.state == MX_STATE_FAILED) {
            //  3. Poisoned: by attempts or by time at the head.
            int64_t since = head.processing_started_at >= 0 ? head.processing_started_at : head.updated_at;
            bool by_attempts = head.attempts >= self->config->pipeline_max_attempts;
            bool by_time = now - since >= self->config->pipeline_head_deadline;
            if (by_attempts || by_time) {
                const char *why = by_attempts ? "attempts exhausted" : "head-deadline exceeded";
                int rc = mx_procstate_poison (self->pg, head.msg_id, why, now, &error);
                if (rc < 0) {
                    mx_problem_report (&self->problem, "cannot escalate a poisoned head", error);
                    s_later (self, self->config->pipeline_poll_interval);
                    return;
                }
                mx_log_emit (MX_LOG_WARN, ACTOR,
                             json_pack ("{s:I,s:s,s:s,s:i}", "msg_id", (json_int_t) head.msg_id, "state", "DEAD",
                                        "error_class", "EXHAUSTED", "attempts", head.attempts),
                             "%" PRId64 " DEAD(EXHAUSTED): %s", head.msg_id, why);
                if (rc == 1) {
                    mx_metrics_add (mx_processor_messages_dead ("EXHAUSTED"), 1);
                    mx_cmd_send (self->pipe, MX_CMD_MARKS_OWED, (uint64_t) head.msg_id, (uint64_t) head.msg_id);
                }
                continue;
            }
            //  4. Backing off: nothing behind it moves.
            if (head.next_attempt_at > now) {
                self->next_check = head.next_attempt_at < now + self->config->pipeline_head_deadline
                                 ? head.next_attempt_at : since + self->config->pipeline_head_deadline;
                return;
            }
        }
        //  5. Process (the processor marks the head started with its
        //  proc_start row).
        self->in_flight = head.msg_id;
        self->in_flight_since = now;
        self->epoch++;
        mx_cmd_send (self->processor, MX_CMD_PROCESS, (uint64_t) head.msg_id, self->epoch);
        return;
    }
}

//  The processor has held one PROCESS past msgx.pipeline.message-deadline:
//  it hangs (or crawls) on the batch. Its starts are counted already, so
//  exiting for the supervisor to restart turns the hang into the crash
//  loop that quarantines the message. A hung thread cannot be stopped in
//  order, so the process gets a hard limit too (main's watchdog, SIGALRM).
static void
s_watchdog (s_pump_t *self)
{
    int64_t held = mx_clock_now (self->clock) - self->in_flight_since;
    mx_log_emit (MX_LOG_ERROR, ACTOR, json_pack ("{s:I,s:I}", "msg_id", (json_int_t) self->in_flight,
                                                 "held_ms", (json_int_t) held),
                 "processing of the batch at %" PRId64 " has taken %" PRId64 " ms, past msgx.pipeline.message-deadline:"
                 " exiting for the supervisor to restart msgxd (its start is counted; a repeat quarantines it)",
                 self->in_flight, held);
    self->stalled = true;
    alarm (S_STALL_EXIT_S);
    mx_cmd_send (self->pipe, MX_CMD_FATAL, S_STALL_EXIT_CODE, "processing exceeded msgx.pipeline.message-deadline");
}

//  ---------------------------------------------------------------------
//  Replay (SPEC §3.4): runs between messages, so it never races one.

//  Flights named by a message, with their current version and whether a
//  later message has changed them since.
static json_t *
s_flights_of (s_pump_t *self, int64_t msg_id)
{
    json_t *flights = json_array ();
    char *xml = NULL, *error = NULL;
    size_t size = 0;
    size_t max_bytes = (size_t) self->config->codec_max_message_bytes;
    mx_raw_source_t source;
    if (mx_rawstore_load (self->pg, self->mailbox, msg_id, max_bytes, &xml, &size, &source, &error) <= 0 || !xml) {
        free (error);
        return flights;
    }
    mx_sis_options_t options = {
        .zone = self->zone, .max_bytes = max_bytes,
        .ignore_types = self->config->pipeline_ignore_types.items,
        .ignore_count = self->config->pipeline_ignore_types.count,
        .limits = mx_sis_limits (self->config)
    };
    mx_sis_status_t status;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, &options, &status, &error);
    free (xml);
    if (!msg) {
        free (error);
        return flights;
    }
    int64_t *flids = NULL;
    size_t count = mx_sis_body_flids (msg, &flids);
    for (size_t i = 0; i < count; i++) {
        json_t *flight = json_pack ("{s:I}", "flid", (json_int_t) flids [i]);
        int64_t version = 0, last_msg_id = 0;
        bool changed_since = false;
        int found = mx_flight_repo_version (self->pg, flids [i], msg_id, &version, &last_msg_id, &changed_since,
                                            &error);
        if (found == 1) {
            json_object_set_new (flight, "state_version", json_integer (version));
            json_object_set_new (flight, "last_msg_id", json_integer (last_msg_id));
            json_object_set_new (flight, "changed_since", json_boolean (changed_since));
        }
        else
        if (found == 0)
            json_object_set_new (flight, "state_version", json_null ());
        else
            free (error);
        error = NULL;
        json_array_append_new (flights, flight);
    }
    free (flids);
    mx_sis_destroy (&msg);
    return flights;
}

//  Returns the reply payload; *ok tells OK or ERR.
static char *
s_replay (s_pump_t *self, json_t *args, bool *ok)
{
    *ok = false;
    const char *class_name = json_string_value (json_object_get (args, "class"));
    json_t *id_list = json_object_get (args, "ids");
    bool dry_run = json_is_true (json_object_get (args, "dry_run"));
    bool yes = json_is_true (json_object_get (args, "yes"));
    const char *user = json_string_value (json_object_get (args, "os_user"));
    if (!!class_name == !!id_list)
        return strdup ("replay needs exactly one of --class CLASS or --id N...");
    mx_error_class_t error_class = MX_ERR_NONE;
    if (class_name) {
        error_class = mx_error_class_lookup (class_name);
        if (error_class != MX_ERR_CODEC_ERROR && error_class != MX_ERR_UNSUPPORTED
        &&  error_class != MX_ERR_INFRA && error_class != MX_ERR_EXHAUSTED)
            return zsys_sprintf ("class '%s' is not replayable: only CODEC_ERROR, UNSUPPORTED, INFRA, EXHAUSTED",
                                 class_name);
    }
    size_t count;
    int64_t *ids;
    char *refused = mx_admin_ids (id_list, "replay --id", "message", &ids, &count);
    if (refused)
        return refused;
    if (!dry_run && !yes) {
        free (ids);
        return strdup ("replay changes the FIFO: add --yes to act, or --dry-run to look first");
    }
    if (mx_actor_pg (&self->pg, self->config, ACTOR, &self->problem)) {
        free (ids);
        return strdup ("PostgreSQL unreachable");
    }
    char *error = NULL, *rows_text = NULL;
    if (mx_procstate_replay_candidates (self->pg, error_class, ids, count, &rows_text, &error)) {
        free (ids);
        char *reply = zsys_sprintf ("cannot list the rows: %s", error);
        free (error);
        return reply;
    }
    json_t *rows = json_loads (rows_text, 0, NULL);
    free (rows_text);
    size_t index;
    json_t *row;
    json_array_foreach (rows, index, row)
        if (json_is_null (json_object_get (row, "refused")) || !json_object_get (row, "refused"))
            json_object_set_new (row, "flights",
                                 s_flights_of (self, json_integer_value (json_object_get (row, "msg_id"))));
    int moved = 0;
    if (!dry_run) {
        if (mx_procstate_replay (self->pg, error_class, ids, count, user, REPLAY_LOCK_TIMEOUT_MS,
                                 mx_clock_now (self->clock), &moved, &error)) {
            free (ids);
            json_decref (rows);
            char *reply = zsys_sprintf ("replay failed, nothing moved: %s", error);
            free (error);
            return reply;
        }
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:i,s:s}", "moved", moved, "os_user", user ? user : ""),
                     "replay: %d message%s back to PENDING", moved, moved == 1 ? "" : "s");
    }
    else {
        char *target = json_dumps (args, JSON_COMPACT);
        if (mx_audit_write (self->pg, "msgxctl", user, "replay", target, "dry-run", NULL,
                            mx_clock_now (self->clock), &error)) {
            mx_warn (ACTOR, "cannot write the audit log: %s", error);
            free (error);
        }
        free (target);
    }
    free (ids);
    json_t *reply = json_pack ("{s:b,s:o,s:i}", "dry_run", dry_run, "rows", rows, "moved", moved);
    char *text = json_dumps (reply, JSON_COMPACT);
    json_decref (reply);
    *ok = true;
    return text;
}

static void
s_handle_admin (s_pump_t *self, zmsg_t **rest_p)
{
    mx_cmd_ADMIN_t admin;
    mx_cmd_ADMIN_take (rest_p, &admin);
    const char *verb = admin.verb, *args_text = admin.args;
    json_t *args = json_loads (args_text, 0, NULL);
    bool ok = false;
    char *payload = strcmp (verb, "replay") == 0 ? s_replay (self, args, &ok)
                  : zsys_sprintf ("pump does not handle '%s'", verb);
    mx_cmd_send (self->pipe, MX_CMD_ADMIN_REPLY, admin.request, ok ? "OK" : "ERR", payload);
    free (payload);
    json_decref (args);
    mx_cmd_ADMIN_free (&admin);
    self->next_check = mx_clock_now (self->clock);
}

//  ---------------------------------------------------------------------

static void
s_handle_processor (s_pump_t *self)
{
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (self->processor, &rest);
    if (!rest)
        return;
    assert (cmd == MX_CMD_PROCESSED);
    mx_cmd_PROCESSED_t processed;
    mx_cmd_PROCESSED_take (&rest, &processed);
    if (processed.epoch == self->epoch) {
        self->in_flight = 0;
        //  The outcome could not be recorded (PostgreSQL trouble): look
        //  again after a pause instead of spinning on the same head.
        if (strcmp (processed.state, "UNKNOWN") == 0)
            s_later (self, self->config->pipeline_poll_interval);
        else
            self->next_check = mx_clock_now (self->clock);
    }
    mx_cmd_PROCESSED_free (&processed);
    //  A replay that waited for this message runs now.
    if (self->pending_admin && !self->in_flight)
        s_handle_admin (self, &self->pending_admin);
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_pump_t *self = (s_pump_t *) self_;
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
            char endpoint [256];
            mx_actor_endpoint (self->args, "processor", endpoint, sizeof endpoint);
            self->processor = zsock_new (ZMQ_PAIR);
            if (zsock_connect (self->processor, "%s", endpoint) < 0) {
                mx_actor_reply_failed (self->pipe, "cannot reach the processor (start it before the pump)");
                break;
            }
            self->next_check = mx_clock_now (self->clock);
            mx_actor_reply_started (self->pipe, "FIFO by msg_id, one message at a time");
            break;
        }
        case MX_CMD_PAUSE:
            self->paused = true;
            break;
        case MX_CMD_RESUME:
            self->paused = false;
            self->next_check = mx_clock_now (self->clock);
            break;
        case MX_CMD_WAKE:
            self->next_check = mx_clock_now (self->clock);
            break;
        case MX_CMD_ADMIN:
            if (self->in_flight) {
                //  One at a time: the replay waits for the message in flight.
                zmsg_destroy (&self->pending_admin);
                self->pending_admin = rest;
                return true;
            }
            s_handle_admin (self, &rest);
            return true;
        default:
            assert (!"pump: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

static bool
s_processor_ready (void *self_, void *arg)
{
    (void) arg;
    s_handle_processor ((s_pump_t *) self_);
    return false;
}

//  The processor's data socket, once started.
static size_t
s_sources (void *self_, mx_actor_source_t *sources, size_t max)
{
    s_pump_t *self = (s_pump_t *) self_;
    if (!self->processor || max < 1)
        return 0;
    sources [0] = (mx_actor_source_t) { .sock = self->processor, .ready = s_processor_ready };
    return 1;
}

//  Without a wake-up, look again every poll interval anyway: a compat row
//  or a lost wake-up must not wait forever.
static int64_t
s_deadline (void *self_)
{
    s_pump_t *self = (s_pump_t *) self_;
    int64_t deadline = self->next_check;
    if (!self->paused && !self->in_flight && deadline == INT64_MAX && self->processor)
        deadline = mx_clock_now (self->clock) + self->config->pipeline_poll_interval;
    if (self->paused || self->in_flight || !self->processor)
        deadline = INT64_MAX;
    //  The watchdog runs whether paused or not: a paused pump still waits
    //  for the batch in flight.
    if (self->in_flight && !self->stalled)
        deadline = self->in_flight_since + self->config->pipeline_message_deadline;
    self->deadline = deadline;
    return deadline;
}

static void
s_wake (void *self_)
{
    s_pump_t *self = (s_pump_t *) self_;
    if (self->in_flight && !self->stalled
    &&  mx_clock_now (self->clock) - self->in_flight_since >= self->config->pipeline_message_deadline) {
        s_watchdog (self);
        return;
    }
    if (self->processor && mx_clock_now (self->clock) >= self->deadline)
        s_tick (self);
    else
    if (self->processor && self->next_check <= mx_clock_now (self->clock))
        s_tick (self);
}

void
mx_pump_actor (zsock_t *pipe, void *args)
{
    s_pump_t self_s = { 0 };
    s_pump_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->problem.actor = ACTOR;
    self->clock = self->args->clock;
    self->mailbox = mx_mailbox_new (self->config);
    self->next_check = INT64_MAX;
    self->warned_w = -1;
    mx_actor_ops_t ops = { .command = s_command, .sources = s_sources, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    zmsg_destroy (&self->pending_admin);
    zsock_destroy (&self->processor);
    mx_pg_disconnect (&self->pg);
    mx_mailbox_destroy (&self->mailbox);
    mx_tz_destroy (&self->zone);
    mx_problem_clear (&self->problem);
}

mx_metrics_counter_t *
mx_pump_crash_loop (void)
{
    return mx_metrics_counter ("msgx_crash_loop_total",
                               "Heads quarantined as DEAD(EXHAUSTED) crash-loop: started msgx.pipeline.crash-loop-starts"
                               " times without an outcome", NULL);
}
