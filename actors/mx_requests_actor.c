/*  mx_requests - see mx_requests.h.

    A send is: look for the request's COUTMSGS row by its SEQN (ROUTINGID
    and "inserted since the request was registered" narrow it), insert it
    only when there is none, then mark the request SENT with that row's ID.
    The lookup comes first every time, so a crash or a lost answer between
    the mailbox insert and the PostgreSQL update is repaired by the next
    attempt (at start-up, or on the next round) without a second row. Only
    this actor sends, and the instance lock keeps it single.
*/
#include "mx_requests_actor.h"
//  The repository of the same name, by path: both headers are mx_requests.h.
#include "mx_requests.h"

#include <assert.h>

#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_request.h"
#include "mx_sis.h"
#include "mx_tz.h"

#define ACTOR "requests"
//  requested_by of the daily RQFD: has a space, so no OS user has it.
#define S_DAILY "msgxd daily"
//  How often an unsent request is retried and a sent one is checked for
//  the upstream's pick-up, while one is open.
#define S_RETRY_MS 5000

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    PGconn *pg;
    mx_mailbox_t *mailbox;
    mx_tz_t *zone;
    int64_t next_round;         //  INT64_MAX until START
    char *last_problem;         //  logged once until it changes
    bool round_failed;
} s_requests_t;

static json_t *
s_fields (const mx_requests_row_t *row)
{
    return json_pack ("{s:I,s:s,s:i}", "request_id", (json_int_t) row->id,
                      "kind", mx_request_kind_name (row->request.kind), "seqn", row->request.seqn);
}

//  A failure is logged once per distinct text, so an outage is one line.
static void
s_problem (s_requests_t *self, char *error)
{
    self->round_failed = true;
    if (!self->last_problem || strcmp (self->last_problem, error) != 0)
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:s}", "error_class", "INFRA"), "%s; retrying", error);
    free (self->last_problem);
    self->last_problem = error;
}

static int
s_pg (s_requests_t *self, char **error)
{
    if (self->pg && PQstatus (self->pg) == CONNECTION_OK)
        return 0;
    mx_pg_disconnect (&self->pg);
    char *why = NULL;
    self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-requests", self->config->pg_statement_timeout, &why);
    if (self->pg)
        return 0;
    *error = zsys_sprintf ("PostgreSQL unreachable: %s", why);
    free (why);
    return -1;
}

//  Keep the reason on the request; a failure to do so is only logged.
const char *const mx_requests_outcomes [] = { "sent", "answered", "failed", "timeout" };
const size_t mx_requests_outcome_count = sizeof mx_requests_outcomes / sizeof mx_requests_outcomes [0];

mx_metrics_counter_t *
mx_requests_outcome (mx_request_kind_t kind, const char *outcome)
{
    char labels [64];
    snprintf (labels, sizeof labels, "kind=%s,outcome=%s", mx_request_kind_name (kind), outcome);
    return mx_metrics_counter ("msgx_requests_total",
                               "Requests upstream (RQFD schedule, RQRD reference) by outcome", labels);
}

void
mx_requests_register_metrics (void)
{
    const mx_request_kind_t kinds [] = { MX_REQUEST_RQFD, MX_REQUEST_RQRD };
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < mx_requests_outcome_count; i++)
            mx_requests_outcome (kinds [k], mx_requests_outcomes [i]);
}

//  A send attempt that failed: counted, recorded on the request.
static void
s_note (s_requests_t *self, const mx_requests_row_t *row, const char *text)
{
    mx_metrics_add (mx_requests_outcome (row->request.kind, "failed"), 1);
    char *error = NULL;
    if (mx_requests_note_error (self->pg, row->id, text, &error)) {
        mx_warn (ACTOR, "cannot record the send failure of request %" PRId64 ": %s", row->id, error);
        free (error);
    }
}

//  ---------------------------------------------------------------------
//  Sending

static void
s_marked_sent (s_requests_t *self, const mx_requests_row_t *row, int64_t coutmsgs_id, int64_t sent_ms,
               bool repaired)
{
    char *error = NULL;
    int written = mx_requests_mark_sent (self->pg, row->id, coutmsgs_id, sent_ms,
                                         self->config->requests_timeout, &error);
    if (written < 0) {
        //  The row exists: the next attempt finds it by SEQN.
        char *line = zsys_sprintf ("request %" PRId64 " is in COUTMSGS (row %" PRId64 ") but not yet marked SENT: %s",
                                   row->id, coutmsgs_id, error);
        free (error);
        s_problem (self, line);
        return;
    }
    if (written > 0)
        mx_metrics_add (mx_requests_outcome (row->request.kind, "sent"), 1);
    json_t *fields = s_fields (row);
    json_object_set_new (fields, "coutmsgs_id", json_integer (coutmsgs_id));
    if (written == 0)
        mx_log_emit (MX_LOG_WARN, ACTOR, fields, "request %" PRId64 " closed before it was marked SENT;"
                     " its COUTMSGS row %" PRId64 " stays as it is", row->id, coutmsgs_id);
    else
    if (repaired)
        mx_log_emit (MX_LOG_WARN, ACTOR, fields, "request %" PRId64 " was already in COUTMSGS (row %" PRId64
                     ", found by its SEQN): marked SENT without sending it again", row->id, coutmsgs_id);
    else
        mx_log_emit (MX_LOG_INFO, ACTOR, fields, "request %" PRId64 " %s SEQN %06d sent (COUTMSGS row %" PRId64 ")",
                     row->id, mx_request_kind_name (row->request.kind), row->request.seqn, coutmsgs_id);
}

//  One REGISTERED request: find its row, else insert it, then SENT.
static void
s_send (s_requests_t *self, const mx_requests_row_t *row, int64_t now)
{
    assert (row->state == MX_REQUEST_REGISTERED);
    mx_outbound_row_t out;
    char *error = NULL;
    int found = mx_mailbox_outbound_find (self->mailbox, row->request.kind, row->request.seqn,
                                          row->registered_at, &out, &error);
    if (found < 0) {
        //  Unknown whether it is there: inserting now could send it twice.
        s_note (self, row, error);
        s_problem (self, zsys_sprintf ("cannot look request %" PRId64 " up in COUTMSGS: %s", row->id, error));
        free (error);
        return;
    }
    if (found) {
        s_marked_sent (self, row, out.id, out.inserted_ms, true);
        return;
    }
    if (now >= row->expires_at)
        return;                 //  too late to ask: the sweep expires it
    char *xml = mx_request_encode (&row->request, self->zone, now, &error);
    if (!xml) {
        //  Arguments are checked before registration; this stays until it expires.
        s_note (self, row, error);
        mx_log_emit (MX_LOG_ERROR, ACTOR, s_fields (row), "request %" PRId64 " cannot be encoded: %s", row->id, error);
        free (error);
        return;
    }
    int64_t coutmsgs_id = 0;
    int rc = mx_mailbox_outbound_insert (self->mailbox, row->request.kind, xml, strlen (xml), now,
                                         &coutmsgs_id, &error);
    free (xml);
    if (rc) {
        s_note (self, row, error);
        s_problem (self, zsys_sprintf ("cannot send request %" PRId64 " through COUTMSGS: %s", row->id, error));
        free (error);
        return;
    }
    s_marked_sent (self, row, coutmsgs_id, now, false);
}

//  SENT: the upstream sets COUTMSGS_DATE_SENT when it has taken the row.
static void
s_watch (s_requests_t *self, const mx_requests_row_t *row)
{
    mx_outbound_row_t out;
    char *error = NULL;
    int found = mx_mailbox_outbound_find (self->mailbox, row->request.kind, row->request.seqn,
                                          row->registered_at, &out, &error);
    if (found < 0) {
        s_problem (self, error);
        return;
    }
    if (!found || out.id != row->coutmsgs_id || out.sent_ms < 0)
        return;
    if (mx_requests_mark_waiting (self->pg, row->id, &error) < 0) {
        s_problem (self, error);
        return;
    }
    mx_log_emit (MX_LOG_INFO, ACTOR, s_fields (row), "request %" PRId64 " taken by the upstream; waiting for the response",
                 row->id);
}

//  ---------------------------------------------------------------------
//  Rounds

static void
s_expire (s_requests_t *self, int64_t now)
{
    mx_requests_row_t expired [2];
    int count = 0;
    char *error = NULL;
    if (mx_requests_expire (self->pg, now, expired, 2, &count, &error)) {
        s_problem (self, error);
        return;
    }
    for (int i = 0; i < count && i < 2; i++) {
        mx_metrics_add (mx_requests_outcome (expired [i].request.kind, "timeout"), 1);
        mx_log_emit (MX_LOG_WARN, ACTOR, s_fields (&expired [i]), "request %" PRId64 " %s SEQN %06d expired: %s",
                     expired [i].id, mx_request_kind_name (expired [i].request.kind), expired [i].request.seqn,
                     expired [i].sent_at < 0 ? "never sent within msgx.requests.timeout"
                                             : "no response within msgx.requests.timeout");
    }
}

static int
s_register (s_requests_t *self, const mx_request_t *request, const char *requested_by, const char *os_user,
            int64_t now, mx_requests_row_t *row, char **error)
{
    int64_t superseded = -1;
    if (mx_requests_register (self->pg, request, requested_by, os_user, self->config->requests_timeout,
                              now, row, &superseded, error))
        return -1;
    mx_log_emit (MX_LOG_INFO, ACTOR, s_fields (row), "request %" PRId64 " %s SEQN %06d registered by %s",
                 row->id, mx_request_kind_name (request->kind), row->request.seqn, requested_by);
    if (superseded >= 0)
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:I}", "request_id", (json_int_t) superseded),
                     "request %" PRId64 " expired: superseded by request %" PRId64, superseded, row->id);
    s_send (self, row, now);
    return 0;
}

//  The daily RQFD, once per local day after daily-schedule-at (also when
//  msgxd starts later that day). Returns when to look again.
static int64_t
s_daily (s_requests_t *self, int64_t now)
{
    int at_minute = self->config->requests_daily_schedule_at;
    if (at_minute < 0)
        return INT64_MAX;
    int64_t today = mx_tz_local_day (self->zone, now);
    int64_t at = mx_request_daily_at (self->zone, today, at_minute);
    if (now < at)
        return at;
    int64_t tomorrow = mx_request_daily_at (self->zone, today + 1, at_minute);
    char *error = NULL;
    int done = mx_requests_registered_since (self->pg, S_DAILY, at, &error);
    if (done < 0) {
        s_problem (self, error);
        return now + S_RETRY_MS;
    }
    if (done)
        return tomorrow;
    if (self->config->shadow) {
        mx_warn (ACTOR, "daily RQFD not registered: msgx.shadow = true forbids writing requests into COUTMSGS");
        return tomorrow;
    }
    mx_request_t request = { .kind = MX_REQUEST_RQFD };
    mx_request_coming_day (self->zone, (int) self->config->operation_day_cutoff_hour, now,
                           &request.window_begin, &request.window_end);
    mx_requests_row_t row;
    if (s_register (self, &request, S_DAILY, NULL, now, &row, &error)) {
        s_problem (self, zsys_sprintf ("cannot register the daily RQFD: %s", error));
        free (error);
        return now + S_RETRY_MS;
    }
    return tomorrow;
}

static void
s_round (s_requests_t *self)
{
    int64_t now = mx_clock_now (self->clock);
    self->round_failed = false;
    char *error = NULL;
    if (s_pg (self, &error)) {
        s_problem (self, error);
        self->next_round = now + S_RETRY_MS;
        return;
    }
    mx_requests_row_t open [2];
    int count = 0;
    if (mx_requests_open (self->pg, open, &count, &error)) {
        s_problem (self, error);
        self->next_round = now + S_RETRY_MS;
        return;
    }
    for (int i = 0; i < count; i++)
        if (open [i].state == MX_REQUEST_REGISTERED)
            s_send (self, &open [i], now);
        else
        if (open [i].state == MX_REQUEST_SENT)
            s_watch (self, &open [i]);
    s_expire (self, now);
    int64_t next = s_daily (self, now);

    //  Next: every retry period while something is unsent or not taken,
    //  and at the earliest deadline.
    if (mx_requests_open (self->pg, open, &count, &error)) {
        s_problem (self, error);
        count = 0;
    }
    for (int i = 0; i < count; i++) {
        if (open [i].state != MX_REQUEST_WAITING && now + S_RETRY_MS < next)
            next = now + S_RETRY_MS;
        if (open [i].expires_at >= 0 && open [i].expires_at < next)
            next = open [i].expires_at;
    }
    if (self->round_failed && now + S_RETRY_MS < next)
        next = now + S_RETRY_MS;
    if (!self->round_failed && self->last_problem) {
        mx_info (ACTOR, "recovered: PostgreSQL and the mailbox answer again");
        free (self->last_problem);
        self->last_problem = NULL;
    }
    self->next_round = next;
}

//  ---------------------------------------------------------------------
//  Admin: request schedule|reference

//  Arguments → request; NULL on success, else the reason (malloc'd).
static char *
s_parse_request (s_requests_t *self, json_t *args, mx_request_t *request)
{
    memset (request, 0, sizeof *request);
    const char *kind = json_string_value (json_object_get (args, "kind"));
    if (kind && strcmp (kind, "schedule") == 0) {
        request->kind = MX_REQUEST_RQFD;
        const char *from = json_string_value (json_object_get (args, "from"));
        const char *to = json_string_value (json_object_get (args, "to"));
        char *error = NULL;
        if (mx_request_parse_local (self->zone, from, &request->window_begin, &error)
        ||  mx_request_parse_local (self->zone, to, &request->window_end, &error)) {
            char *reason = zsys_sprintf ("request schedule: %s (local time in %s)", error, mx_tz_name (self->zone));
            free (error);
            return reason;
        }
        char text [MX_REQUEST_WINDOW_BUFSIZE];
        if (!mx_request_format_window (self->zone, request->window_begin, text, sizeof text)
        ||  !mx_request_format_window (self->zone, request->window_end, text, sizeof text))
            return strdup ("request schedule: the window must lie within the years 2000..2099 (STDB/STDE write yy)");
        if (request->window_end < request->window_begin)
            return zsys_sprintf ("request schedule: --to %s is before --from %s", to, from);
        return NULL;
    }
    if (kind && strcmp (kind, "reference") == 0) {
        request->kind = MX_REQUEST_RQRD;
        const char *list = json_string_value (json_object_get (args, "list"));
        if (!list || !mx_sis_is_reference_type (list))
            return zsys_sprintf ("request reference: '%.16s' is not a reference list code (WIRE.md §7: GLST, SLST, ...)",
                                 list ? list : "");
        snprintf (request->rtype, sizeof request->rtype, "%s", list);
        return NULL;
    }
    return strdup ("request needs kind schedule (from, to) or reference (list)");
}

//  A refused request is audited too when PostgreSQL answers.
static void
s_audit_refused (s_requests_t *self, const char *os_user, const char *args_text, const char *reason)
{
    char *error = NULL;
    if (s_pg (self, &error) == 0
    &&  mx_audit_write (self->pg, "msgxctl", os_user, "request", args_text, "refused", reason,
                        mx_clock_now (self->clock), &error) == 0)
        return;
    mx_warn (ACTOR, "cannot audit a refused request: %s", error ? error : "?");
    free (error);
}

//  What request would register now, nothing written but the audit row
//  (dry-run): the kind, its window or list as asked, where it would go, and
//  the open request of its kind it would supersede. NULL on success.
static char *
s_preview (s_requests_t *self, const mx_request_t *request, json_t *args, const char *os_user,
           const char *args_text, json_t **reply)
{
    char *error = NULL;
    mx_requests_row_t open [2];
    int count = 0;
    if (s_pg (self, &error) || mx_requests_open (self->pg, open, &count, &error)) {
        char *reason = zsys_sprintf ("request preview: %s", error);
        free (error);
        return reason;
    }
    json_int_t supersedes = -1;
    for (int i = 0; i < count && i < 2; i++)
        if (open [i].request.kind == request->kind)
            supersedes = (json_int_t) open [i].id;
    bool schedule = request->kind == MX_REQUEST_RQFD;
    *reply = json_pack ("{s:b,s:s,s:s,s:s,s:s?,s:s?,s:s?}",
        "dry_run", true, "kind", mx_request_kind_name (request->kind),
        "routing", schedule ? self->config->mailbox_outbound_routing_rqfd : self->config->mailbox_outbound_routing_rqrd,
        "zone", mx_tz_name (self->zone),
        "from", schedule ? json_string_value (json_object_get (args, "from")) : NULL,
        "to", schedule ? json_string_value (json_object_get (args, "to")) : NULL,
        "list", schedule ? NULL : request->rtype);
    json_object_set_new (*reply, "timeout_ms", json_integer ((json_int_t) self->config->requests_timeout));
    json_object_set_new (*reply, "supersedes", supersedes >= 0 ? json_integer (supersedes) : json_null ());
    if (mx_audit_write (self->pg, "msgxctl", os_user, "request", args_text, "dry-run", NULL,
                        mx_clock_now (self->clock), &error)) {
        mx_warn (ACTOR, "cannot audit a request dry run: %s", error);
        free (error);
    }
    return NULL;
}

static void
s_handle_admin (s_requests_t *self, zmsg_t **rest_p)
{
    mx_cmd_ADMIN_t admin;
    mx_cmd_ADMIN_take (rest_p, &admin);
    const char *verb = admin.verb, *args_text = admin.args;
    json_t *args = json_loads (args_text, 0, NULL);
    const char *os_user = json_string_value (json_object_get (args, "os_user"));
    if (!os_user)
        os_user = "unknown";
    bool ok = false;
    char *payload = NULL;
    mx_request_t request;
    if (strcmp (verb, "request") != 0)
        payload = zsys_sprintf ("requests does not handle '%s'", verb);
    else
    if (!json_is_object (args))
        payload = strdup ("request: the arguments are not a JSON object");
    else
    if (self->config->shadow) {
        payload = strdup ("request refused: msgx.shadow = true forbids writing requests into COUTMSGS");
        s_audit_refused (self, os_user, args_text, payload);
    }
    else
    if ((payload = s_parse_request (self, args, &request)))
        s_audit_refused (self, os_user, args_text, payload);
    else
    if (json_is_true (json_object_get (args, "dry_run"))) {
        json_t *reply = NULL;
        if (!(payload = s_preview (self, &request, args, os_user, args_text, &reply))) {
            payload = json_dumps (reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
            json_decref (reply);
            ok = true;
        }
    }
    else
    if (!json_is_true (json_object_get (args, "yes")))
        payload = strdup ("request sends a message upstream through COUTMSGS: add --yes to act, "
                          "or --dry-run to look first");
    else {
        int64_t now = mx_clock_now (self->clock);
        mx_requests_row_t row;
        char *error = NULL;
        if (s_pg (self, &error) || s_register (self, &request, os_user, os_user, now, &row, &error)) {
            payload = zsys_sprintf ("request not registered: %s", error);
            free (error);
        }
        else {
            //  The state as the send left it (REGISTERED when the mailbox
            //  did not answer: retried every few seconds).
            mx_requests_row_t after = row;
            if (mx_requests_get (self->pg, row.id, &after, &error) < 0) {
                mx_warn (ACTOR, "cannot read request %" PRId64 " back: %s", row.id, error);
                free (error);
            }
            json_t *reply = json_pack ("{s:I,s:i,s:s}", "id", (json_int_t) row.id, "seqn", row.request.seqn,
                                       "state", mx_request_state_name (after.state));
            payload = json_dumps (reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
            json_decref (reply);
            ok = true;
        }
        self->next_round = mx_clock_now (self->clock);
    }
    mx_cmd_send (self->pipe, MX_CMD_ADMIN_REPLY, admin.request, ok ? "OK" : "ERR", payload);
    free (payload);
    json_decref (args);
    mx_cmd_ADMIN_free (&admin);
}

//  ---------------------------------------------------------------------
//  Actor

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_requests_t *self = (s_requests_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            char *error = NULL;
            self->zone = mx_tz_load (self->config->operation_day_zone, &error);
            if (!self->zone) {
                char *reason = zsys_sprintf ("airport zone msgx.operation-day.zone: %s", error);
                mx_actor_reply_failed (self->pipe, reason);
                free (reason);
                free (error);
                mx_cmd_done (&rest);
                mx_actor_wait_term (self->pipe);
                return false;
            }
            int at = self->config->requests_daily_schedule_at;
            char daily [48] = "no daily RQFD";
            if (at >= 0)
                snprintf (daily, sizeof daily, "daily RQFD at %02d:%02d", at / 60, at % 60);
            char *detail = zsys_sprintf ("timeout %" PRId64 " ms, %s%s", self->config->requests_timeout, daily,
                                         self->config->shadow ? "; shadow mode: nothing is sent" : "");
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            //  The first round at once, before any other command: it
            //  repairs a send that a crash interrupted.
            s_round (self);
            break;
        }
        case MX_CMD_ADMIN:
            assert (self->zone);        //  control routes only to started actors
            s_handle_admin (self, &rest);
            break;
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;              //  a pause stops claiming inbound work; requests upstream go on
        default:
            assert (!"requests: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

static int64_t
s_deadline (void *self_)
{
    return ((s_requests_t *) self_)->next_round;
}

static void
s_wake (void *self_)
{
    s_requests_t *self = (s_requests_t *) self_;
    if (mx_clock_now (self->clock) >= self->next_round)
        s_round (self);
}

void
mx_requests_actor (zsock_t *pipe, void *args)
{
    s_requests_t self_s = { 0 };
    s_requests_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->clock = self->args->clock;
    self->mailbox = mx_mailbox_new (self->config);
    self->next_round = INT64_MAX;

    mx_actor_ops_t ops = { .command = s_command, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    mx_pg_disconnect (&self->pg);
    mx_mailbox_destroy (&self->mailbox);
    mx_tz_destroy (&self->zone);
    free (self->last_problem);
}
