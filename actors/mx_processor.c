/*  mx_processor - see mx_processor.h.

    Every outcome is written where the message is held, once: a terminal
    state with its backfill intent in one UPDATE, or a failed attempt with
    its backoff. Kinds without a business processor in this build are
    UNSUPPORTED: retried, then DEAD(EXHAUSTED), replayable when support
    arrives.
*/
#include "mx_processor.h"

#include <assert.h>

#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_sis.h"
#include "mx_tz.h"

#define ACTOR "processor"

typedef struct {
    zsock_t *pipe;
    zsock_t *data;              //  PAIR from the pump
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    bool terminated;
    PGconn *pg;
    mx_mailbox_t *mailbox;
    mx_tz_t *zone;
    uint64_t processed;
} s_processor_t;

//  What happened to one message, for the reply and the log.
typedef struct {
    mx_state_t state;
    bool unknown;               //  the outcome could not be recorded
} s_result_t;

static int
s_pg (s_processor_t *self, char **error)
{
    if (self->pg && PQstatus (self->pg) == CONNECTION_OK)
        return 0;
    mx_pg_disconnect (&self->pg);
    self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-processor",
                              self->config->pg_statement_timeout, error);
    return self->pg ? 0 : -1;
}

static void
s_log_outcome (int64_t msg_id, const char *state, const char *error_class, const char *text)
{
    json_t *fields = json_pack ("{s:I,s:s}", "msg_id", (json_int_t) msg_id, "state", state);
    if (error_class)
        json_object_set_new (fields, "error_class", json_string (error_class));
    mx_log_emit (error_class ? MX_LOG_WARN : MX_LOG_DEBUG, ACTOR, fields, "%" PRId64 " %s%s%s",
                 msg_id, state, text ? ": " : "", text ? text : "");
}

//  A terminal without business effect: one UPDATE, state + intent.
static s_result_t
s_finish (s_processor_t *self, int64_t msg_id, mx_state_t state, mx_error_class_t error_class,
          const char *text, const char *outcome)
{
    char *error = NULL;
    int rc = mx_procstate_finish (self->pg, msg_id, state, error_class, text, outcome,
                                  mx_clock_now (self->clock), &error);
    if (rc < 0) {
        mx_log_emit (MX_LOG_ERROR, ACTOR, json_pack ("{s:I}", "msg_id", (json_int_t) msg_id),
                     "cannot record %s for %" PRId64 ": %s", mx_state_name (state), msg_id, error);
        free (error);
        return (s_result_t) { MX_STATE_PENDING, true };
    }
    s_log_outcome (msg_id, mx_state_name (state),
                   error_class == MX_ERR_NONE ? NULL : mx_error_class_name (error_class),
                   outcome ? outcome : text);
    return (s_result_t) { state, false };
}

//  A failed attempt: backoff, or DEAD(EXHAUSTED) at the limit.
static s_result_t
s_fail (s_processor_t *self, int64_t msg_id, mx_error_class_t error_class, const char *text)
{
    char *error = NULL;
    bool dead = false;
    const mx_config_t *config = self->config;
    int rc = mx_procstate_fail (self->pg, msg_id, error_class, text, mx_clock_now (self->clock),
                                (int) config->pipeline_max_attempts, config->pipeline_backoff_ms.items,
                                config->pipeline_backoff_ms.count, config->pipeline_backoff_cap_ms,
                                &dead, &error);
    if (rc < 0) {
        mx_log_emit (MX_LOG_ERROR, ACTOR, json_pack ("{s:I}", "msg_id", (json_int_t) msg_id),
                     "cannot record the failure of %" PRId64 " (%s): %s", msg_id, text, error);
        free (error);
        return (s_result_t) { MX_STATE_PENDING, true };
    }
    json_t *fields = json_pack ("{s:I,s:s,s:s}", "msg_id", (json_int_t) msg_id,
                                "error_class", dead ? "EXHAUSTED" : mx_error_class_name (error_class),
                                "state", dead ? "DEAD" : "FAILED");
    mx_log_emit (MX_LOG_WARN, ACTOR, fields, "%" PRId64 " %s: %s: %s", msg_id,
                 dead ? "DEAD (attempts exhausted)" : "FAILED", mx_error_class_name (error_class), text);
    return (s_result_t) { dead ? MX_STATE_DEAD : MX_STATE_FAILED, false };
}

static bool
s_ignored (s_processor_t *self, const char *type)
{
    const mx_config_string_list_t *list = &self->config->pipeline_ignore_types;
    for (size_t i = 0; i < list->count; i++)
        if (strcmp (list->items [i], type) == 0)
            return true;
    return false;
}

static s_result_t
s_process (s_processor_t *self, int64_t msg_id)
{
    char *error = NULL;
    if (s_pg (self, &error)) {
        mx_warn (ACTOR, "PostgreSQL unreachable: %s", error);
        free (error);
        return (s_result_t) { MX_STATE_PENDING, true };
    }
    mx_head_t row;
    int found = mx_procstate_get (self->pg, msg_id, &row, &error);
    if (found <= 0) {
        mx_warn (ACTOR, "cannot read proc_state %" PRId64 ": %s", msg_id, found < 0 ? error : "no such row");
        free (error);
        return (s_result_t) { MX_STATE_PENDING, true };
    }
    if (row.state != MX_STATE_PENDING && row.state != MX_STATE_FAILED)
        return (s_result_t) { row.state, false };         //  already finished
    //  1. Entry guard.
    if (row.state == MX_STATE_FAILED && row.attempts >= self->config->pipeline_max_attempts)
        return s_finish (self, msg_id, MX_STATE_DEAD, MX_ERR_EXHAUSTED, NULL, NULL);

    //  2. Raw text from the mailbox.
    char *xml = NULL;
    size_t size = 0;
    size_t max_bytes = (size_t) self->config->codec_max_message_bytes;
    int raw = mx_mailbox_read (self->mailbox, msg_id, max_bytes, &xml, &size, &error);
    if (raw < 0) {
        char *text = zsys_sprintf ("mailbox read failed: %s", error);
        free (error);
        s_result_t result = s_fail (self, msg_id, MX_ERR_INFRA, text);
        free (text);
        return result;
    }
    if (raw == 0)
        return s_finish (self, msg_id, MX_STATE_DEAD, MX_ERR_MALFORMED, "raw-missing", "raw-missing");
    if (!xml) {
        char *text = zsys_sprintf ("message of %zu bytes is larger than msgx.codec.max-message-bytes (%zu)",
                                   size, max_bytes);
        s_result_t result = s_finish (self, msg_id, MX_STATE_DEAD, MX_ERR_MALFORMED, text, NULL);
        free (text);
        return result;
    }

    //  3. Decode.
    mx_sis_options_t options = {
        .zone = self->zone, .max_bytes = max_bytes,
        .ignore_types = self->config->pipeline_ignore_types.items,
        .ignore_count = self->config->pipeline_ignore_types.count
    };
    mx_sis_status_t status;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, &options, &status, &error);
    free (xml);
    if (!msg) {
        s_result_t result = status == MX_SIS_MALFORMED
            ? s_finish (self, msg_id, MX_STATE_DEAD, MX_ERR_MALFORMED, error, NULL)
            : s_fail (self, msg_id, MX_ERR_CODEC_ERROR, error);
        free (error);
        return result;
    }
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    int64_t now = mx_clock_now (self->clock);
    if (mx_procstate_set_kind (self->pg, msg_id, meta->type, meta->styp, now, &error)) {
        s_result_t result = s_fail (self, msg_id, MX_ERR_INFRA, error);
        free (error);
        mx_sis_destroy (&msg);
        return result;
    }

    //  4. Identity: its own statement, so it survives a rollback of the
    //  business part and a retry is never its own duplicate.
    char key [128];
    mx_sis_identity (meta, self->config->identity_include_day_boundary, key, sizeof key);
    int64_t holder = mx_procstate_bind_identity (self->pg, msg_id, key, now, &error);
    if (holder < 0) {
        s_result_t result = s_fail (self, msg_id, MX_ERR_INFRA, error);
        free (error);
        mx_sis_destroy (&msg);
        return result;
    }
    s_result_t result;
    if (holder != msg_id) {
        char outcome [48];
        snprintf (outcome, sizeof outcome, "duplicate-of:%" PRId64, holder);
        result = s_finish (self, msg_id, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, outcome);
    }
    else
    //  5. Dispatch.
    if (s_ignored (self, meta->type)) {
        char outcome [32];
        snprintf (outcome, sizeof outcome, "ignored:%s", meta->type);
        result = s_finish (self, msg_id, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, outcome);
    }
    else {
        char *text = zsys_sprintf ("no processor for %s/%s (%s) in this version",
                                   meta->type, meta->styp, mx_sis_kind_name (mx_sis_kind (msg)));
        result = s_fail (self, msg_id, MX_ERR_UNSUPPORTED, text);
        free (text);
    }
    mx_sis_destroy (&msg);
    return result;
}

static void
s_handle_data (s_processor_t *self)
{
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (self->data, &rest);
    if (!rest)
        return;
    assert (cmd == MX_CMD_PROCESS);
    char *id_text = mx_cmd_pop_str (rest);
    char *epoch = mx_cmd_pop_str (rest);
    mx_cmd_done (&rest);
    int64_t msg_id = strtoll (id_text, NULL, 10);
    s_result_t result = s_process (self, msg_id);
    self->processed++;
    mx_cmd_send (self->data, MX_CMD_PROCESSED, (uint64_t) msg_id, strtoull (epoch, NULL, 10),
                 result.unknown ? "UNKNOWN" : mx_state_name (result.state));
    free (id_text);
    free (epoch);
}

static void
s_handle_pipe (s_processor_t *self)
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
            self->data = zsock_new (ZMQ_PAIR);
            if (zsock_bind (self->data, "%s", endpoint) < 0) {
                mx_actor_reply_failed (self->pipe, "cannot bind the processor's data socket");
                break;
            }
            mx_actor_reply_started (self->pipe, "decoding with libxml2 (no entities, no network)");
            break;
        }
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;              //  the pump decides what runs
        default:
            assert (!"processor: unexpected command");
    }
    mx_cmd_done (&rest);
}

void
mx_processor_actor (zsock_t *pipe, void *args)
{
    s_processor_t self_s = { 0 };
    s_processor_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->clock = self->args->clock;
    self->mailbox = mx_mailbox_new (self->config);
    zsock_signal (pipe, 0);
    while (!self->terminated) {
        zmq_pollitem_t items [] = {
            { zsock_resolve (self->pipe), 0, ZMQ_POLLIN, 0 },
            { self->data ? zsock_resolve (self->data) : NULL, 0, ZMQ_POLLIN, 0 }
        };
        if (zmq_poll (items, self->data ? 2 : 1, -1) < 0 && zmq_errno () != EINTR)
            break;
        if (items [0].revents & ZMQ_POLLIN)
            s_handle_pipe (self);
        else
        if (self->data && (items [1].revents & ZMQ_POLLIN))
            s_handle_data (self);
    }
    zsock_destroy (&self->data);
    mx_pg_disconnect (&self->pg);
    mx_mailbox_destroy (&self->mailbox);
    mx_tz_destroy (&self->zone);
}
