/*  mx_republish_actor - see mx_republish_actor.h.  */
#include "mx_republish_actor.h"

#include <assert.h>
#include <inttypes.h>

#include "mx_admin.h"
#include "mx_log.h"
#include "mx_outbox.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_republish.h"
#include "mx_tz.h"

#define ACTOR "republisher"
//  A step writes a tenth of a second's worth of events, at most this many.
#define S_STEP_MAX 500

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    PGconn *pg;
    mx_tz_t *zone;
    mx_problem_t problem;
    bool started;
    bool looked;                //  a job left RUNNING by an earlier life was looked for
    int64_t job_id;             //  the running job, 0 when none
    int64_t next_step;          //  INT64_MAX: nothing to do
} s_republisher_t;

mx_metrics_counter_t *
mx_republish_events (const char *target)
{
    return mx_metrics_counter_by ("msgx_republish_events_total",
                                  "Events written into the outbox by msgxctl republish jobs", "target", target);
}

mx_metrics_gauge_t *
mx_republish_remaining (void)
{
    return mx_metrics_gauge ("msgx_republish_remaining",
                             "Events the running republish job has still to write (0 when none runs)", NULL);
}

static size_t
s_step_size (const mx_config_t *config)
{
    int64_t size = config->republish_rate / 10;
    return (size_t) (size < 1 ? 1 : size > S_STEP_MAX ? S_STEP_MAX : size);
}

static int
s_ready (s_republisher_t *self)
{
    if (mx_actor_pg (&self->pg, self->config, ACTOR, &self->problem))
        return -1;
    if (!self->zone) {
        char *error = NULL;
        self->zone = mx_tz_load (self->config->operation_day_zone, &error);
        if (!self->zone) {
            mx_problem_report (&self->problem, "cannot load the airport time zone", error);
            return -1;
        }
    }
    return 0;
}

static void
s_audit (s_republisher_t *self, const char *user, json_t *args, const char *result, const char *detail)
{
    char *target = json_dumps (args, JSON_COMPACT | JSON_SORT_KEYS);
    char *error = NULL;
    if (mx_audit_write (self->pg, "msgxctl", user, "republish", target, result, detail,
                        mx_clock_now (self->clock), &error)) {
        mx_warn (ACTOR, "cannot write the audit log: %s", error);
        free (error);
    }
    free (target);
}

//  A calendar date YYYY-MM-DD.
static bool
s_valid_day (const char *text)
{
    int year, month, day;
    char end;
    if (!text || strlen (text) != 10 || sscanf (text, "%4d-%2d-%2d%c", &year, &month, &day, &end) != 3
    ||  text [4] != '-' || text [7] != '-' || month < 1 || month > 12 || day < 1)
        return false;
    static const int days [] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return day <= days [month - 1] + (month == 2 && leap);
}

static char *
s_cancel (s_republisher_t *self, json_t *args, const char *user, bool *ok)
{
    int64_t job_id = 0, left = 0;
    char *error = NULL;
    int found = mx_republish_cancel (self->pg, mx_clock_now (self->clock), &job_id, &left, &error);
    if (found < 0) {
        char *reply = zsys_sprintf ("cannot cancel: %s", error);
        free (error);
        return reply;
    }
    if (!found) {
        s_audit (self, user, args, "refused", "no job runs");
        return strdup ("no republish job runs: nothing to cancel");
    }
    s_audit (self, user, args, "ok", NULL);
    mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:I,s:I,s:s}", "job_id", (json_int_t) job_id,
                                                "left", (json_int_t) left, "os_user", user ? user : ""),
                 "republish job %" PRId64 " cancelled with %" PRId64 " events still to send", job_id, left);
    if (job_id == self->job_id) {
        self->job_id = 0;
        self->next_step = INT64_MAX;
        mx_metrics_gauge_set (mx_republish_remaining (), 0);
    }
    *ok = true;
    return zsys_sprintf ("{\"cancelled\":true,\"job_id\":%" PRId64 ",\"left\":%" PRId64 "}", job_id, left);
}

//  Returns the reply payload; *ok tells OK or ERR.
static char *
s_republish (s_republisher_t *self, json_t *args, bool *ok)
{
    *ok = false;
    json_t *flid_list = json_object_get (args, "flids");
    const char *day = json_string_value (json_object_get (args, "day"));
    bool all = json_is_true (json_object_get (args, "all"));
    bool cancel = json_is_true (json_object_get (args, "cancel"));
    bool dry_run = json_is_true (json_object_get (args, "dry_run"));
    bool yes = json_is_true (json_object_get (args, "yes"));
    const char *user = json_string_value (json_object_get (args, "os_user"));
    bool reference = json_is_true (json_object_get (args, "reference"));
    int scopes = !!flid_list + !!json_object_get (args, "day") + all + cancel;
    if (scopes > 1 || (scopes == 0 && !reference) || (cancel && reference))
        return strdup ("republish needs exactly one of --flid N..., --day YYYY-MM-DD, --all, --reference"
                       " (alone: the reference entries only) or --cancel");
    if (json_object_get (args, "day") && !s_valid_day (day))
        return strdup ("republish --day wants a date YYYY-MM-DD");
    mx_republish_scope_t scope = {
        .day = day, .all = all, .reference = reference
    };
    int64_t *flids = NULL;
    if (flid_list) {
        char *refused = mx_admin_ids (flid_list, "republish --flid", "flight", &flids, &scope.count);
        if (refused)
            return refused;
        scope.flids = flids;
    }
    if (s_ready (self)) {
        free (flids);
        return strdup ("PostgreSQL unreachable");
    }
    if (cancel) {
        free (flids);
        return s_cancel (self, args, user, ok);
    }
    int64_t flights = 0, entries = 0;
    char *error = NULL, *unknown = NULL;
    if (mx_republish_count (self->pg, &scope, &flights, &entries, &unknown, &error)) {
        free (flids);
        char *reply = zsys_sprintf ("cannot count what to send: %s", error);
        free (error);
        return reply;
    }
    //  FLIDs asked for are all or nothing: the operator named them.
    if (unknown) {
        free (flids);
        char *reply = zsys_sprintf ("nothing sent: no flight %s", unknown);
        s_audit (self, user, args, "refused", reply);
        free (unknown);
        return reply;
    }
    if (dry_run) {
        free (flids);
        s_audit (self, user, args, "dry-run", NULL);
        *ok = true;
        return zsys_sprintf ("{\"dry_run\":true,\"flights\":%" PRId64 ",\"entries\":%" PRId64 "}", flights, entries);
    }
    if (!yes) {
        free (flids);
        return strdup ("republish sends the current states to Kafka again: add --yes to act, or --dry-run to count first");
    }
    int64_t job_id = 0;
    char *running = NULL;
    int created = mx_republish_create (self->pg, &scope, user, mx_clock_now (self->clock), &job_id, &running,
                                       &error);
    free (flids);
    if (created < 0) {
        char *reply = zsys_sprintf ("cannot start the job: %s", error);
        free (error);
        return reply;
    }
    if (!created) {
        s_audit (self, user, args, "refused", running);
        return running;
    }
    char detail [64];
    snprintf (detail, sizeof detail, "job %" PRId64, job_id);
    s_audit (self, user, args, "ok", detail);
    mx_log_emit (MX_LOG_WARN, ACTOR,
                 json_pack ("{s:I,s:I,s:I,s:s}", "job_id", (json_int_t) job_id, "flights", (json_int_t) flights,
                            "entries", (json_int_t) entries, "os_user", user ? user : ""),
                 "republish job %" PRId64 " started: %" PRId64 " flights, %" PRId64 " reference entries at up to %"
                 PRId64 " events/s", job_id, flights, entries, self->config->republish_rate);
    self->job_id = job_id;
    self->next_step = mx_clock_now (self->clock);
    mx_metrics_gauge_set (mx_republish_remaining (), (double) (flights + entries));
    *ok = true;
    return zsys_sprintf ("{\"job_id\":%" PRId64 ",\"flights\":%" PRId64 ",\"entries\":%" PRId64 "}",
                         job_id, flights, entries);
}

static void
s_handle_admin (s_republisher_t *self, zmsg_t **rest_p)
{
    mx_cmd_ADMIN_t admin;
    mx_cmd_ADMIN_take (rest_p, &admin);
    json_t *args = json_loads (admin.args, 0, NULL);
    bool ok = false;
    char *payload = args && strcmp (admin.verb, "republish") == 0 ? s_republish (self, args, &ok)
                  : zsys_sprintf ("republisher does not handle '%s'", admin.verb);
    mx_cmd_send (self->pipe, MX_CMD_ADMIN_REPLY, admin.request, ok ? "OK" : "ERR", payload);
    free (payload);
    json_decref (args);
    mx_cmd_ADMIN_free (&admin);
}

//  One step of the running job, paced: the next one after the time its
//  events take at msgx.republish.rate.
static void
s_step (s_republisher_t *self)
{
    int64_t now = mx_clock_now (self->clock);
    if (s_ready (self)) {
        self->next_step = now + self->config->pipeline_poll_interval;
        return;
    }
    char *error = NULL;
    if (!self->looked) {
        //  A job an earlier life of msgxd left RUNNING goes on after its cursor.
        int found = mx_republish_running (self->pg, &self->job_id, &error);
        if (found < 0) {
            mx_problem_report (&self->problem, "cannot look for a running republish job", error);
            self->next_step = now + self->config->pipeline_poll_interval;
            return;
        }
        self->looked = true;
        if (found)
            mx_log_emit (MX_LOG_INFO, ACTOR, json_pack ("{s:I}", "job_id", (json_int_t) self->job_id),
                         "republish job %" PRId64 " continues after a restart", self->job_id);
    }
    if (self->job_id == 0) {
        self->next_step = INT64_MAX;
        return;
    }
    mx_republish_step_t step;
    if (mx_republish_step (self->pg, self->job_id, s_step_size (self->config), self->zone, now, &step, &error)) {
        mx_problem_report (&self->problem, "republish step failed, retried", error);
        self->next_step = now + self->config->pipeline_poll_interval;
        return;
    }
    mx_problem_recovered (&self->problem);
    mx_metrics_add (mx_republish_events (MX_OUTBOX_TARGET_SCHD), (uint64_t) step.flights);
    mx_metrics_add (mx_republish_events (MX_OUTBOX_TARGET_REF), (uint64_t) step.entries);
    mx_metrics_gauge_set (mx_republish_remaining (), (double) step.remaining);
    int64_t sent = step.flights + step.entries;
    if (sent > 0)
        mx_cmd_send (self->pipe, MX_CMD_EVENTS_COMMITTED);
    if (!step.running) {
        mx_log_emit (MX_LOG_INFO, ACTOR, json_pack ("{s:I}", "job_id", (json_int_t) self->job_id),
                     "republish job %" PRId64 " done: every event written", self->job_id);
        self->job_id = 0;
        self->next_step = INT64_MAX;
        return;
    }
    self->next_step = now + sent * 1000 / self->config->republish_rate;
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_republisher_t *self = (s_republisher_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            self->started = true;
            self->next_step = mx_clock_now (self->clock);       //  look for a job left running
            char *detail = zsys_sprintf ("up to %" PRId64 " events/s, %zu a step", self->config->republish_rate,
                                         s_step_size (self->config));
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            break;
        }
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;              //  a job is the operator's own; pausing the FIFO does not stop it
        case MX_CMD_ADMIN:
            s_handle_admin (self, &rest);
            return true;
        default:
            assert (!"republisher: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

static int64_t
s_deadline (void *self_)
{
    return ((s_republisher_t *) self_)->next_step;
}

static void
s_wake (void *self_)
{
    s_republisher_t *self = (s_republisher_t *) self_;
    if (self->started && mx_clock_now (self->clock) >= self->next_step)
        s_step (self);
}

void
mx_republish_actor (zsock_t *pipe, void *args)
{
    s_republisher_t self_s = { 0 };
    s_republisher_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->clock = self->args->clock;
    self->problem.actor = ACTOR;
    self->next_step = INT64_MAX;
    mx_actor_ops_t ops = { .command = s_command, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    mx_tz_destroy (&self->zone);
    mx_pg_disconnect (&self->pg);
    mx_problem_clear (&self->problem);
}
