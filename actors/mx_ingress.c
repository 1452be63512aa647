/*  mx_ingress - the actor around mx_inbox: polls the mailbox at the pace
    of mx_poll_pace (every poll-fast while rows keep arriving, backing off
    to poll-interval when idle, at once again while batches come back
    full), checks released holes every late-detect-period, seeds W on
    cutover, and tells control when W moved so the pump looks at the head
    at once. An unreadable mailbox is an infrastructure failure, never "no
    new messages": W stays.
*/
#include "mx_ingress.h"

#include <assert.h>

#include "mx_inbox.h"
#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_poll_pace.h"

#define ACTOR "ingress"

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    bool paused;
    mx_inbox_t *inbox;
    int64_t next_poll;
    mx_poll_pace_t pace;
    mx_metrics_counter_t *polls;
    int64_t next_late_check;
    mx_problem_t problem;
    int64_t reported_hole;      //  hole position already logged
    uint64_t holes_released;
    uint64_t late_detected;
} s_ingress_t;

//  One round started at now; returns when the next one is due (the pace
//  counts from the start of a round, so the period is the one between
//  starts). The round is counted once it is over.
static int64_t
s_poll (s_ingress_t *self, int64_t now)
{
    mx_inbox_round_t round;
    char *error = NULL;
    int rc = mx_inbox_round (self->inbox, now, &round, &error);
    mx_metrics_add (self->polls, 1);
    if (rc) {
        mx_problem_report (&self->problem, NULL, error);
        return mx_poll_pace_failed (&self->pace, now);
    }
    mx_problem_recovered (&self->problem);
    if (round.released) {
        self->holes_released++;
        mx_metrics_add (mx_ingress_hole_aged_out (), 1);
        mx_log_emit (MX_LOG_WARN, ACTOR,
                     json_pack ("{s:I,s:I}", "id_from", (json_int_t) round.released_from,
                                "id_to", (json_int_t) round.released_to),
                     "hole %" PRId64 "..%" PRId64 " aged out after %" PRId64 " ms: released, W jumps over it",
                     round.released_from, round.released_to, self->config->pipeline_max_commit_delay);
    }
    if (round.hole_since >= 0 && self->reported_hole != round.w + 1) {
        self->reported_hole = round.w + 1;
        mx_log_emit (MX_LOG_INFO, ACTOR, json_pack ("{s:I}", "w", (json_int_t) round.w),
                     "hole at %" PRId64 ": W waits for it (at most %" PRId64 " ms)",
                     round.w + 1, self->config->pipeline_max_commit_delay);
    }
    if (round.w != round.w_before) {
        mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:I,s:i}", "w", (json_int_t) round.w, "enqueued", round.enqueued),
                     "W %" PRId64 " -> %" PRId64, round.w_before, round.w);
        mx_cmd_send (self->pipe, MX_CMD_W_MOVED, (uint64_t) round.w);
    }
    return mx_poll_pace_next (&self->pace, now, round.w != round.w_before, round.again);
}

static void
s_late_check (s_ingress_t *self)
{
    int detected = 0;
    char *message = NULL, *error = NULL;
    if (mx_inbox_late_check (self->inbox, mx_clock_now (self->clock), &detected, &message, &error)) {
        mx_problem_report (&self->problem, NULL, error);
        return;
    }
    if (detected > 0) {
        self->late_detected += (uint64_t) detected;
        mx_metrics_add (mx_ingress_late_arrival (), (uint64_t) detected);
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:i}", "late_arrivals", detected),
                     "late arrival: %s; not enqueued: the upstream committed these later than "
                     "max-commit-delay allows", message);
    }
    free (message);
}

//  At start: seed from configuration on a fresh instance. An instance
//  seeded before keeps its W (the key stays set across restarts).
static int
s_cutover_configured (s_ingress_t *self, char **reason)
{
    const char *value = self->config->pipeline_cutover_watermark;
    if (!*value)
        return 0;
    char *error = NULL;
    int seeded = mx_inbox_seeded (self->inbox, &error);
    if (seeded < 0) {
        *reason = zsys_sprintf ("configured cutover '%s': %s", value, error);
        free (error);
        return -1;
    }
    if (seeded) {
        mx_info (ACTOR, "cutover done earlier; msgx.pipeline.cutover-watermark=%s ignored", value);
        return 0;
    }
    int64_t w = 0;
    char *message = NULL;
    int rc = mx_inbox_cutover (self->inbox, value, "msgxd (configuration)", mx_clock_now (self->clock), false,
                               &w, &message);
    if (rc < 0)
        *reason = zsys_sprintf ("configured cutover '%s' failed: %s", value, message);
    else
    if (rc == 0)
        mx_error (ACTOR, "configured cutover '%s' not applied: %s", value, message);
    else
        mx_info (ACTOR, "%s", message);
    free (message);
    return rc < 0 ? -1 : 0;
}

static void
s_handle_admin (s_ingress_t *self, zmsg_t **rest_p)
{
    mx_cmd_ADMIN_t admin;
    mx_cmd_ADMIN_take (rest_p, &admin);
    const char *verb = admin.verb, *args_text = admin.args;
    json_t *args = json_loads (args_text, 0, NULL);
    const char *value = json_string_value (json_object_get (args, "watermark"));
    const char *user = json_string_value (json_object_get (args, "os_user"));
    bool dry_run = json_is_true (json_object_get (args, "dry_run"));
    bool yes = json_is_true (json_object_get (args, "yes"));
    bool ok = false;
    char *payload = NULL;
    if (strcmp (verb, "cutover") != 0)
        payload = zsys_sprintf ("ingress does not handle '%s'", verb);
    else
    if (!value)
        payload = strdup ("cutover needs a watermark: min, zero, max or an ID");
    else
    if (!dry_run && !yes)
        payload = strdup ("cutover seeds W once, for good: add --yes to act, or --dry-run to look first");
    else {
        int64_t w = 0;
        char *message = NULL;
        int rc = mx_inbox_cutover (self->inbox, value, user ? user : "unknown", mx_clock_now (self->clock),
                                   dry_run, &w, &message);
        if (rc == 1) {
            ok = true;
            if (!dry_run)
                mx_info (ACTOR, "%s by msgxctl", message);
            json_t *reply = json_pack ("{s:b,s:s,s:I,s:s}", "dry_run", dry_run, "watermark", value,
                                       "w", (json_int_t) w, "message", message);
            payload = json_dumps (reply, JSON_COMPACT);
            json_decref (reply);
            free (message);
            if (!dry_run) {
                self->next_poll = mx_clock_now (self->clock);
                if (w > 0)
                    mx_cmd_send (self->pipe, MX_CMD_W_MOVED, (uint64_t) w);
            }
        }
        else
            payload = message;
    }
    mx_cmd_send (self->pipe, MX_CMD_ADMIN_REPLY, admin.request, ok ? "OK" : "ERR", payload);
    free (payload);
    json_decref (args);
    mx_cmd_ADMIN_free (&admin);
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_ingress_t *self = (s_ingress_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            char *reason = NULL;
            if (s_cutover_configured (self, &reason)) {
                mx_actor_reply_failed (self->pipe, reason);
                free (reason);
                break;
            }
            char *detail = zsys_sprintf ("polling every %" PRId64 " ms while rows arrive, backing off to every %"
                                         PRId64 " ms when idle, %" PRId64 " rows a round", self->pace.fast,
                                         self->pace.idle, self->config->pipeline_claim_batch);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            int64_t now = mx_clock_now (self->clock);
            self->next_poll = now;
            if (self->config->pipeline_late_detect_period > 0)
                self->next_late_check = now + self->config->pipeline_late_detect_period;
            break;
        }
        case MX_CMD_PAUSE:
            self->paused = true;
            break;
        case MX_CMD_RESUME:
            self->paused = false;
            self->next_poll = mx_clock_now (self->clock);
            break;
        case MX_CMD_ADMIN:
            s_handle_admin (self, &rest);
            break;
        default:
            assert (!"ingress: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

static int64_t
s_deadline (void *self_)
{
    s_ingress_t *self = (s_ingress_t *) self_;
    return self->paused ? INT64_MAX
         : self->next_poll < self->next_late_check ? self->next_poll : self->next_late_check;
}

static void
s_wake (void *self_)
{
    s_ingress_t *self = (s_ingress_t *) self_;
    if (self->paused)
        return;
    int64_t now = mx_clock_now (self->clock);
    if (now >= self->next_poll)
        self->next_poll = s_poll (self, now);
    if (now >= self->next_late_check) {
        s_late_check (self);
        self->next_late_check = mx_clock_now (self->clock) + self->config->pipeline_late_detect_period;
    }
}

void
mx_ingress_actor (zsock_t *pipe, void *args)
{
    s_ingress_t self_s = { 0 };
    s_ingress_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->problem.actor = ACTOR;
    self->clock = self->args->clock;
    self->inbox = mx_inbox_new (self->config);
    self->pace = mx_poll_pace (self->config->pipeline_poll_fast, self->config->pipeline_poll_interval);
    self->polls = mx_ingress_polls ();
    //  Nothing runs before START: the parent's first message back must be
    //  the reply to it.
    self->next_poll = INT64_MAX;
    self->next_late_check = INT64_MAX;
    self->reported_hole = -1;

    mx_actor_ops_t ops = { .command = s_command, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    mx_inbox_destroy (&self->inbox);
    mx_problem_clear (&self->problem);
}

mx_metrics_counter_t *
mx_ingress_polls (void)
{
    return mx_metrics_counter ("msgx_ingress_polls_total",
                               "Mailbox polling rounds (each reads the inbox cursor and the mailbox above W)", NULL);
}

mx_metrics_counter_t *
mx_ingress_hole_aged_out (void)
{
    return mx_metrics_counter ("msgx_pipeline_hole_aged_out_total",
                               "Mailbox ID holes released by ageing (max-commit-delay passed)", NULL);
}

mx_metrics_counter_t *
mx_ingress_late_arrival (void)
{
    return mx_metrics_counter ("msgx_pipeline_late_arrival_detected_total",
                               "Mailbox rows found in released holes after the watermark passed them", NULL);
}
