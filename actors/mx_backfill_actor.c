/*  mx_backfill - see mx_backfill.h.

    One batch: lock the owed rows (gate), write each mark into the mailbox
    (a guarded UPDATE, one by one), record every outcome in one statement
    and commit. Marks are idempotent (a mark written but not recorded reads
    ALREADY next time), so a failure anywhere after a write only costs a
    repeat, never a wrong record.
*/
#include "mx_backfill_actor.h"
//  The repository of the same name, by path: both headers are mx_backfill.h.
#include "mx_backfill.h"

#include <assert.h>

#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_pg.h"

#define ACTOR "backfill"
//  Rows held per batch at most, whatever backfill-batch says: the locks
//  are held for a batch of mailbox writes.
#define S_MAX_BATCH 10000

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    bool started;
    PGconn *pg;
    mx_mailbox_t *mailbox;
    mx_backfill_policy_t policy;
    int limit;
    mx_backfill_row_t *rows;
    mx_backfill_result_t *results;
    mx_mark_t *marks;
    int64_t *ids;               //  the rows' msg_ids, for the mailbox
    int64_t next_sweep;         //  INT64_MAX = none (before START, shadow)
    char *last_problem;         //  logged once until it changes
    uint64_t written;
    uint64_t already;
    uint64_t missing;
    uint64_t retried;
    uint64_t exhausted;
} s_backfill_t;

//  A PostgreSQL failure is logged once per distinct text: an outage is
//  one line, not one per period.
static void
s_problem (s_backfill_t *self, const char *what, char *error)
{
    char *line = zsys_sprintf ("%s: %s", what, error ? error : "unknown error");
    if (!self->last_problem || strcmp (self->last_problem, line) != 0)
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:s}", "error_class", "INFRA"), "%s; retrying", line);
    free (self->last_problem);
    self->last_problem = line;
    free (error);
    if (mx_pg_is_connection_error (self->pg))
        mx_pg_disconnect (&self->pg);
}

static int
s_pg (s_backfill_t *self)
{
    if (self->pg && PQstatus (self->pg) == CONNECTION_OK)
        return 0;
    mx_pg_disconnect (&self->pg);
    char *error = NULL;
    self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-backfill", self->config->pg_statement_timeout,
                              &error);
    if (!self->pg) {
        s_problem (self, "PostgreSQL unreachable", error);
        return -1;
    }
    return 0;
}

//  Log and count one recorded outcome.
static void
s_report (s_backfill_t *self, const mx_backfill_result_t *result, mx_mark_t mark, int64_t now)
{
    json_int_t msg_id = (json_int_t) result->msg_id;
    switch (result->outcome) {
        case MX_BACKFILL_CONFIRMED:
            if (mark == MX_MARK_ALREADY) {
                self->already++;
                mx_log_emit (MX_LOG_INFO, ACTOR, json_pack ("{s:I}", "msg_id", msg_id),
                             "%" PRId64 " was already marked in the mailbox: left as it was, confirmed",
                             result->msg_id);
            }
            else {
                self->written++;
                mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:I}", "msg_id", msg_id),
                             "%" PRId64 " marked processed", result->msg_id);
            }
            break;
        case MX_BACKFILL_MISSING:
            self->missing++;
            mx_log_emit (MX_LOG_ERROR, ACTOR,
                         json_pack ("{s:I,s:s,s:I}", "msg_id", msg_id, "alert", "backfill-missing",
                                    "missing_total", (json_int_t) self->missing),
                         "mailbox row %" PRId64 " is missing: its mark is abandoned (MISSING); "
                         "msgxctl backfill recover re-arms it", result->msg_id);
            break;
        case MX_BACKFILL_RETRY:
            self->retried++;
            mx_log_emit (MX_LOG_WARN, ACTOR,
                         json_pack ("{s:I,s:s,s:i,s:I}", "msg_id", msg_id, "error_class", "INFRA",
                                    "attempts", result->attempts, "next_at", (json_int_t) result->next_at),
                         "mark of %" PRId64 " failed (attempt %d of %d): %s; next try in %" PRId64 " ms",
                         result->msg_id, result->attempts, self->policy.max_attempts, result->error,
                         result->next_at - now);
            break;
        case MX_BACKFILL_EXHAUSTED:
            self->exhausted++;
            mx_log_emit (MX_LOG_ERROR, ACTOR,
                         json_pack ("{s:I,s:s,s:i,s:I}", "msg_id", msg_id, "alert", "backfill-exhausted",
                                    "attempts", result->attempts, "exhausted_total", (json_int_t) self->exhausted),
                         "mark of %" PRId64 " abandoned (EXHAUSTED) after %d attempts: %s; "
                         "msgxctl backfill recover re-arms it", result->msg_id, result->attempts, result->error);
            break;
    }
}

//  One gated batch of owed marks with from <= msg_id <= to, due at now
//  (which also stamps the marks and outcomes). Returns 1 when
//  the batch was full and every mark settled (there may be more), 0 when
//  there is no more or a write failed (the rest waits for the next
//  sweep), -1 on PostgreSQL trouble.
static int
s_batch (s_backfill_t *self, int64_t now, int64_t from, int64_t to)
{
    if (s_pg (self))
        return -1;
    char *error = NULL;
    int count = mx_backfill_lock (self->pg, from, to, now, now - self->config->pipeline_overdue_backfill,
                                  self->limit, self->rows, &error);
    if (count < 0) {
        s_problem (self, "cannot select the owed marks", error);
        return -1;
    }
    if (self->last_problem) {
        mx_info (ACTOR, "PostgreSQL readable again");
        free (self->last_problem);
        self->last_problem = NULL;
    }
    mx_mark_t *marks = self->marks;
    for (int i = 0; i < count; i++)
        self->ids [i] = self->rows [i].msg_id;
    //  A failed chunk stops the batch: its rows count an attempt, the rows
    //  after it wait for the next sweep untouched.
    char *mark_error = NULL;
    size_t done = mx_mailbox_mark_many (self->mailbox, self->ids, (size_t) count, now, marks, &mark_error);
    bool failed = done < (size_t) count || mark_error;
    for (size_t i = 0; i < done; i++)
        mx_backfill_decide (&self->rows [i], marks [i], marks [i] == MX_MARK_ERROR ? mark_error : NULL,
                            &self->policy, now, &self->results [i]);
    int rc = count > 0 ? mx_backfill_record (self->pg, self->results, done, now, &error) : 0;
    if (rc)
        s_problem (self, "cannot record the outcome of the marks (a mark written stays and is found "
                         "already marked next time)", error);
    else
        for (size_t i = 0; i < done; i++)
            s_report (self, &self->results [i], marks [i], now);
    free (mark_error);
    if (rc)
        return -1;
    return !failed && count == self->limit ? 1 : 0;
}

static void
s_sweep (s_backfill_t *self)
{
    //  The period counts from the time the sweep looked at, so a clock
    //  that moved meanwhile makes the next sweep due, never later.
    int64_t now = mx_clock_now (self->clock);
    int rc = s_batch (self, now, 1, INT64_MAX);
    //  A full, clean batch: more may be owed; look again at once, after
    //  the pipe had its turn.
    self->next_sweep = now + (rc == 1 ? 0 : self->config->pipeline_backfill_period);
}

static void
s_marks_owed (s_backfill_t *self, zmsg_t **rest_p)
{
    mx_cmd_MARKS_OWED_t owed;
    mx_cmd_MARKS_OWED_take (rest_p, &owed);
    int64_t from = (int64_t) owed.from, to = (int64_t) owed.to;
    if (!self->started || self->config->shadow)
        return;
    //  A processing batch is bounded (process-batch), so this is too.
    while (s_batch (self, mx_clock_now (self->clock), from, to) == 1)
        ;
}

//  ---------------------------------------------------------------------
//  backfill-recover

static char *
s_recover (s_backfill_t *self, json_t *args, bool *ok)
{
    *ok = false;
    json_t *id_list = json_object_get (args, "ids");
    bool all = json_is_true (json_object_get (args, "all"));
    bool dry_run = json_is_true (json_object_get (args, "dry_run"));
    bool yes = json_is_true (json_object_get (args, "yes"));
    const char *user = json_string_value (json_object_get (args, "os_user"));
    if (all == (id_list != NULL))
        return strdup ("backfill recover needs exactly one of --id N... or --all");
    size_t count;
    int64_t *ids;
    char *refused = mx_actor_admin_ids (id_list, "backfill recover --id", "message", &ids, &count);
    if (refused)
        return refused;
    if (!dry_run && !yes) {
        free (ids);
        return strdup ("backfill recover writes marks into the mailbox again: add --yes to act, "
                       "or --dry-run to look first");
    }
    if (s_pg (self)) {
        free (ids);
        return strdup ("PostgreSQL unreachable: nothing re-armed");
    }
    json_t *rows = NULL;
    char *error = NULL;
    int rc = mx_backfill_recover (self->pg, ids, count, all, dry_run, user, mx_clock_now (self->clock),
                                  &rows, &error);
    free (ids);
    if (rc) {
        char *reply = zsys_sprintf ("backfill recover failed, nothing re-armed: %s", error);
        s_problem (self, "backfill recover", error);
        return reply;
    }
    size_t rearmed = json_array_size (rows);
    json_t *list = json_array ();
    size_t index;
    json_t *row;
    json_array_foreach (rows, index, row)
        json_array_append (list, json_object_get (row, "msg_id"));
    json_t *reply = json_pack ("{s:b,s:i,s:o,s:o}", "dry_run", dry_run, "rearmed", dry_run ? 0 : (int) rearmed,
                               "msg_ids", list, "rows", rows);
    char *text = json_dumps (reply, JSON_COMPACT);
    json_decref (reply);
    if (!dry_run)
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:i,s:s}", "rearmed", (int) rearmed, "os_user", user ? user : ""),
                     "backfill recover: %zu abandoned mark%s re-armed", rearmed, rearmed == 1 ? "" : "s");
    *ok = true;
    return text;
}

static void
s_handle_admin (s_backfill_t *self, zmsg_t **rest_p)
{
    mx_cmd_ADMIN_t admin;
    mx_cmd_ADMIN_take (rest_p, &admin);
    const char *verb = admin.verb, *args_text = admin.args;
    json_t *args = json_loads (args_text, 0, NULL);
    bool ok = false;
    char *payload = NULL;
    if (strcmp (verb, "backfill-recover") != 0)
        payload = zsys_sprintf ("backfill does not handle '%s'", verb);
    else
    if (!json_is_object (args))
        payload = strdup ("backfill recover: the arguments are not a JSON object");
    else
        payload = s_recover (self, args, &ok);
    mx_cmd_send (self->pipe, MX_CMD_ADMIN_REPLY, admin.request, ok ? "OK" : "ERR", payload);
    //  Re-armed rows are due now.
    if (ok && !json_is_true (json_object_get (args, "dry_run")) && self->started && !self->config->shadow)
        self->next_sweep = mx_clock_now (self->clock);
    free (payload);
    json_decref (args);
    mx_cmd_ADMIN_free (&admin);
}

//  ---------------------------------------------------------------------

static void
s_start (s_backfill_t *self)
{
    const mx_config_t *config = self->config;
    self->started = true;
    if (config->shadow) {
        mx_warn (ACTOR, "shadow mode (msgx.shadow=true): no processed mark is written to the mailbox, "
                        "none is attempted");
        mx_actor_reply_started (self->pipe, "shadow mode: no processed marks are written");
        return;
    }
    self->limit = config->pipeline_backfill_batch > S_MAX_BATCH ? S_MAX_BATCH : (int) config->pipeline_backfill_batch;
    if (self->limit < config->pipeline_backfill_batch)
        mx_warn (ACTOR, "msgx.pipeline.backfill-batch=%" PRId64 " is read as %d: a batch holds its row locks "
                        "for all of its mailbox writes", config->pipeline_backfill_batch, self->limit);
    self->rows = (mx_backfill_row_t *) calloc ((size_t) self->limit, sizeof (mx_backfill_row_t));
    self->results = (mx_backfill_result_t *) calloc ((size_t) self->limit, sizeof (mx_backfill_result_t));
    self->marks = (mx_mark_t *) calloc ((size_t) self->limit, sizeof (mx_mark_t));
    self->ids = (int64_t *) calloc ((size_t) self->limit, sizeof (int64_t));
    assert (self->rows && self->results && self->marks && self->ids);
    self->policy = (mx_backfill_policy_t) {
        .max_attempts = (int) config->pipeline_backfill_max_attempts,
        .backoff_ms = config->pipeline_backfill_backoff,
        .backoff_cap_ms = config->pipeline_backfill_backoff_cap
    };
    char *detail = zsys_sprintf ("sweep every %" PRId64 " ms, %d rows a batch, at most %d attempts",
                                 config->pipeline_backfill_period, self->limit, self->policy.max_attempts);
    mx_actor_reply_started (self->pipe, detail);
    free (detail);
    //  Catch up at once with whatever an earlier run left owed.
    self->next_sweep = mx_clock_now (self->clock);
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_backfill_t *self = (s_backfill_t *) self_;
    switch (cmd) {
        case MX_CMD_START:
            s_start (self);
            break;
        case MX_CMD_MARKS_OWED:
            s_marks_owed (self, &rest);
            break;
        case MX_CMD_ADMIN:
            s_handle_admin (self, &rest);
            break;
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;              //  marks are off the FIFO path
        default:
            assert (!"backfill: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

static int64_t
s_deadline (void *self_)
{
    return ((s_backfill_t *) self_)->next_sweep;
}

static void
s_wake (void *self_)
{
    s_backfill_t *self = (s_backfill_t *) self_;
    if (mx_clock_now (self->clock) >= self->next_sweep)
        s_sweep (self);
}

void
mx_backfill_actor (zsock_t *pipe, void *args)
{
    s_backfill_t self_s = { 0 };
    s_backfill_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->clock = self->args->clock;
    self->mailbox = mx_mailbox_new (self->config);
    //  Nothing runs before START.
    self->next_sweep = INT64_MAX;

    mx_actor_ops_t ops = { .command = s_command, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    if (self->written || self->already || self->missing || self->retried || self->exhausted)
        mx_info (ACTOR, "stopped: %" PRIu64 " marks written, %" PRIu64 " already marked, %" PRIu64 " missing, %"
                        PRIu64 " failed attempts, %" PRIu64 " exhausted",
                 self->written, self->already, self->missing, self->retried, self->exhausted);
    mx_pg_disconnect (&self->pg);
    mx_mailbox_destroy (&self->mailbox);
    free (self->rows);
    free (self->results);
    free (self->marks);
    free (self->ids);
    free (self->last_problem);
}
