/*  mx_processor - see mx_processor.h.

    A PROCESS for the FIFO head opens one PostgreSQL transaction. The head
    and then each following ready message (PENDING, <= W, in msg_id order,
    up to msgx.pipeline.process-batch) is applied inside its own SAVEPOINT,
    its identity bound just before it. A message whose business part fails
    rolls back to its savepoint, records FAILED and ends the batch; a
    failure of the transaction itself rolls everything back, leaving every
    message as it was. So any crash point leaves exactly what processing
    one at a time would (SPEC §3.3).

    Outcomes are written where the message is held, once: a business
    success as flight changes + outbox events + SUCCEEDED + backfill
    intent; a non-business terminal as one UPDATE (state + intent); a
    failed attempt with its backoff.
*/
#include "mx_processor.h"

#include <assert.h>

#include "mx_bulk.h"
#include "mx_flight.h"
#include "mx_flight_repo.h"
#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_mailbox.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_requests.h"
#include "mx_sis.h"
#include "mx_sis_body.h"
#include "mx_tz.h"

#define ACTOR "processor"

typedef struct s_ahead_t s_ahead_t;

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
    uint64_t transactions;
    char current_type [16];     //  TYPE of the message in hand, "-" before decoding
    zhashx_t *flights;          //  flid -> mx_flight_t as committed by a batch of ours
    zlistx_t *flights_owed;     //  flight states of the open batch, for `flights` at commit
    s_ahead_t *ahead;           //  the next messages, decoded
    int64_t replied_at;         //  zclock_usecs of the last PROCESSED, for the debug log
    mx_text_t doc_msg;          //  a change's documents, the buffers kept from one to the next
    mx_text_t doc_state;
} s_processor_t;

//  Flights kept between batches; past this the whole cache starts again.
#define S_FLIGHTS_KEPT 8192

//  What happened to one message.
typedef enum {
    S_DONE,                     //  terminal (SUCCEEDED / SKIPPED / DEAD) recorded
    S_RETRY,                    //  FAILED (or DEAD at the limit) recorded: the batch ends
    S_BROKEN                    //  the transaction is unusable: roll the batch back
} s_step_t;

typedef struct {
    s_step_t step;
    mx_state_t state;
} s_outcome_t;

//  ---------------------------------------------------------------------
//  Recording outcomes

static s_outcome_t
s_broken (int64_t msg_id, const char *what, char *error)
{
    mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:I,s:s}", "msg_id", (json_int_t) msg_id, "error_class", "INFRA"),
                 "%s for %" PRId64 ": %s; the batch rolls back", what, msg_id, error ? error : "?");
    free (error);
    return (s_outcome_t) { S_BROKEN, MX_STATE_PENDING };
}

//  A terminal without business effect: one UPDATE, state + intent.
static s_outcome_t
s_finish (s_processor_t *self, int64_t msg_id, mx_state_t state, mx_error_class_t error_class,
          const char *text, const char *outcome)
{
    char *error = NULL;
    if (mx_procstate_finish (self->pg, msg_id, state, error_class, text, outcome,
                             mx_clock_now (self->clock), &error) < 0)
        return s_broken (msg_id, "cannot record the outcome", error);
    mx_metrics_add (mx_metrics_messages (self->current_type, mx_state_name (state)), 1);
    if (state == MX_STATE_DEAD)
        mx_metrics_add (mx_metrics_messages_dead (mx_error_class_name (error_class)), 1);
    json_t *fields = json_pack ("{s:I,s:s}", "msg_id", (json_int_t) msg_id, "state", mx_state_name (state));
    if (error_class != MX_ERR_NONE)
        json_object_set_new (fields, "error_class", json_string (mx_error_class_name (error_class)));
    mx_log_emit (error_class != MX_ERR_NONE ? MX_LOG_WARN : MX_LOG_DEBUG, ACTOR, fields, "%" PRId64 " %s%s%s",
                 msg_id, mx_state_name (state), outcome || text ? ": " : "", outcome ? outcome : text ? text : "");
    return (s_outcome_t) { S_DONE, state };
}

//  A failed attempt: backoff, or DEAD(EXHAUSTED) at the limit.
static s_outcome_t
s_fail (s_processor_t *self, int64_t msg_id, mx_error_class_t error_class, const char *text)
{
    char *error = NULL;
    bool dead = false;
    const mx_config_t *config = self->config;
    if (mx_procstate_fail (self->pg, msg_id, error_class, text, mx_clock_now (self->clock),
                           (int) config->pipeline_max_attempts, config->pipeline_backoff_ms.items,
                           config->pipeline_backoff_ms.count, config->pipeline_backoff_cap_ms,
                           &dead, &error) < 0)
        return s_broken (msg_id, "cannot record a failed attempt", error);
    mx_metrics_add (mx_metrics_messages_failed (mx_error_class_name (error_class)), 1);
    if (dead) {
        mx_metrics_add (mx_metrics_messages (self->current_type, "DEAD"), 1);
        mx_metrics_add (mx_metrics_messages_dead ("EXHAUSTED"), 1);
    }
    json_t *fields = json_pack ("{s:I,s:s,s:s}", "msg_id", (json_int_t) msg_id,
                                "error_class", dead ? "EXHAUSTED" : mx_error_class_name (error_class),
                                "state", dead ? "DEAD" : "FAILED");
    mx_log_emit (MX_LOG_WARN, ACTOR, fields, "%" PRId64 " %s: %s: %s", msg_id,
                 dead ? "DEAD (attempts exhausted)" : "FAILED", mx_error_class_name (error_class), text);
    return (s_outcome_t) { S_RETRY, dead ? MX_STATE_DEAD : MX_STATE_FAILED };
}

//  ---------------------------------------------------------------------
//  Savepoints: the business part of one message

static int
s_sql (s_processor_t *self, const char *sql, char **error)
{
    return mx_pg_exec (self->pg, sql, 0, NULL, NULL, error);
}

//  The business part failed: undo it, then record the attempt.
static s_outcome_t
s_business_failed (s_processor_t *self, int64_t msg_id, mx_error_class_t error_class, const char *text)
{
    char *error = NULL;
    if (s_sql (self, "ROLLBACK TO SAVEPOINT message", &error))
        return s_broken (msg_id, "cannot roll back to the savepoint", error);
    return s_fail (self, msg_id, error_class, text);
}

//  A business-free end found inside the business part (unknown flight,
//  protocol rejection after a lookup): undo, then one UPDATE.
static s_outcome_t
s_business_terminal (s_processor_t *self, int64_t msg_id, mx_state_t state, mx_error_class_t error_class,
                     const char *text, const char *outcome)
{
    char *error = NULL;
    if (s_sql (self, "ROLLBACK TO SAVEPOINT message", &error))
        return s_broken (msg_id, "cannot roll back to the savepoint", error);
    return s_finish (self, msg_id, state, error_class, text, outcome);
}

//  Store one changed flight and its two events (KAFKA:msg, KAFKA:schd).
static int
s_store_change (s_processor_t *self, const mx_flight_t *before, mx_flight_t *after, json_t *changed,
                const mx_sis_meta_t *meta, int64_t msg_id, char **error)
{
    int64_t now = mx_clock_now (self->clock);
    after->state_version = (before ? before->state_version : 0) + 1;
    after->last_msg_id = msg_id;
    if (mx_flight_repo_save (self->pg, before, after, now, error))
        return -1;
    mx_event_meta_t event = {
        .msg_id = msg_id, .type = meta->type, .styp = meta->styp, .seqn = meta->seqn, .dttm = meta->dttm
    };
    bool tombstone = after->deleted && (!before || !before->deleted);
    char *msg_text = NULL, *schd_text = NULL;
    mx_flight_event_texts (after, &event, changed, self->zone, !tombstone, &msg_text, &schd_text);
    int64_t event_id = 0;
    mx_event_type_t type = tombstone ? MX_EVENT_TOMBSTONE : MX_EVENT_UPSERT;
    int rc = mx_event_insert (self->pg, MX_TARGET_MSG, type, after->flid, after->state_version, msg_id,
                              msg_text, now, &event_id, error)
          || mx_event_insert (self->pg, MX_TARGET_SCHD, type, after->flid, after->state_version, msg_id,
                              schd_text, now, &event_id, error);
    free (msg_text);
    free (schd_text);
    return rc ? -1 : 0;
}

//  FLOP / FDEL: one flight.
static s_outcome_t
s_apply_flop (s_processor_t *self, int64_t msg_id, const mx_sis_msg_t *msg)
{
    mx_flop_t *flop = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_flop (msg, self->zone, &flop, &error);
    if (status != MX_BODY_OK) {
        s_outcome_t outcome =
            status == MX_BODY_PROTOCOL ? s_business_terminal (self, msg_id, MX_STATE_DEAD, MX_ERR_PROTOCOL, error, NULL)
          : s_business_failed (self, msg_id, status == MX_BODY_UNSUPPORTED ? MX_ERR_UNSUPPORTED : MX_ERR_CODEC_ERROR,
                               error);
        free (error);
        return outcome;
    }
    mx_flight_t *current = NULL;
    if (mx_flight_repo_load (self->pg, &flop->flid, 1, true, &current, &error)) {
        mx_flop_destroy (&flop);
        return s_broken (msg_id, "cannot load the flight", error);
    }
    char outcome_text [64];
    s_outcome_t outcome;
    if (!current) {
        snprintf (outcome_text, sizeof outcome_text, "unknown-flight:%" PRId64, flop->flid);
        outcome = s_business_terminal (self, msg_id, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, outcome_text);
    }
    else
    if (current->deleted && !flop->fdel) {
        snprintf (outcome_text, sizeof outcome_text, "flight-deleted:%" PRId64, flop->flid);
        outcome = s_business_terminal (self, msg_id, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, outcome_text);
    }
    else {
        json_t *changed = NULL;
        mx_flight_t *next = flop->fdel ? mx_flight_apply_fdel (current, mx_clock_now (self->clock), &changed)
                                       : mx_flight_apply_flop (current, flop, &changed);
        if (json_array_size (changed) > 0
        &&  s_store_change (self, current, next, changed, mx_sis_meta (msg), msg_id, &error)) {
            outcome = s_broken (msg_id, "cannot store the flight change", error);
        }
        else
            outcome = s_finish (self, msg_id, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL,
                                json_array_size (changed) ? NULL : "no-change");
        json_decref (changed);
        mx_flight_destroy (&next);
    }
    mx_flight_destroy (&current);
    mx_flop_destroy (&flop);
    return outcome;
}

//  SCHD DNLD / ADFT: every FLTR, all or nothing.
static s_outcome_t
s_apply_schedule (s_processor_t *self, int64_t msg_id, const mx_sis_msg_t *msg)
{
    mx_schedule_t *schedule = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_schedule (msg, self->zone, &schedule, &error);
    if (status != MX_BODY_OK) {
        s_outcome_t outcome = status == MX_BODY_PROTOCOL
            ? s_business_terminal (self, msg_id, MX_STATE_DEAD, MX_ERR_PROTOCOL, error, NULL)
            : s_business_failed (self, msg_id, status == MX_BODY_UNSUPPORTED ? MX_ERR_UNSUPPORTED : MX_ERR_CODEC_ERROR,
                                 error);
        free (error);
        return outcome;
    }
    size_t count = schedule->count;
    int64_t *flids = (int64_t *) calloc (count + 1, sizeof (int64_t));
    mx_flight_t **current = (mx_flight_t **) calloc (count + 1, sizeof (mx_flight_t *));
    for (size_t i = 0; i < count; i++)
        flids [i] = schedule->records [i].flight->flid;
    s_outcome_t outcome = { S_DONE, MX_STATE_SUCCEEDED };
    int inserted = 0, updated = 0, unchanged = 0;
    int64_t scope_begin = INT64_MAX, scope_end = INT64_MIN;
    if (mx_flight_repo_load (self->pg, flids, count, true, current, &error))
        outcome = s_broken (msg_id, "cannot load the flights", error);
    for (size_t i = 0; i < count && outcome.step == S_DONE; i++) {
        json_t *changed = NULL;
        char *protocol = NULL;
        mx_flight_t *next = mx_flight_apply_fltr (current [i], &schedule->records [i], self->zone,
                                                  (int) self->config->operation_day_cutoff_hour, &changed, &protocol);
        if (!next) {
            //  Cross-day FLID: the whole package goes, nothing written.
            outcome = s_business_terminal (self, msg_id, MX_STATE_DEAD, MX_ERR_PROTOCOL, protocol, NULL);
            free (protocol);
            json_decref (changed);
            break;
        }
        const char *sodt = next->scalars [MX_F_SODT];
        if (sodt) {
            int64_t at = strtoll (sodt, NULL, 10);
            scope_begin = at < scope_begin ? at : scope_begin;
            scope_end = at > scope_end ? at : scope_end;
        }
        if (json_array_size (changed) == 0)
            unchanged++;
        else
        if (s_store_change (self, current [i], next, changed, mx_sis_meta (msg), msg_id, &error))
            outcome = s_broken (msg_id, "cannot store a flight of the schedule", error);
        else
        if (current [i])
            updated++;
        else
            inserted++;
        json_decref (changed);
        mx_flight_destroy (&next);
    }
    if (outcome.step == S_DONE && outcome.state == MX_STATE_SUCCEEDED) {
        if (mx_snap_log_insert (self->pg, msg_id, mx_sis_meta (msg)->styp,
                                scope_begin == INT64_MAX ? -1 : scope_begin, scope_end == INT64_MIN ? -1 : scope_end,
                                mx_clock_now (self->clock), inserted, updated, unchanged, &error))
            outcome = s_broken (msg_id, "cannot write the snapshot log", error);
        else {
            char text [96];
            snprintf (text, sizeof text, "flights inserted %d, updated %d, unchanged %d", inserted, updated, unchanged);
            outcome = s_finish (self, msg_id, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, text);
        }
    }
    for (size_t i = 0; i < count; i++)
        mx_flight_destroy (&current [i]);
    free (current);
    free (flids);
    mx_schedule_destroy (&schedule);
    return outcome;
}

//  SCHD DEL: each listed flight as an FDEL; unknown ones are skipped.
static s_outcome_t
s_apply_schedule_del (s_processor_t *self, int64_t msg_id, const mx_sis_msg_t *msg)
{
    int64_t *flids = NULL;
    size_t count = 0;
    char *error = NULL;
    mx_body_status_t status = mx_sis_schedule_del (msg, &flids, &count, &error);
    if (status != MX_BODY_OK) {
        s_outcome_t outcome = status == MX_BODY_PROTOCOL
            ? s_business_terminal (self, msg_id, MX_STATE_DEAD, MX_ERR_PROTOCOL, error, NULL)
            : s_business_failed (self, msg_id, MX_ERR_CODEC_ERROR, error);
        free (error);
        return outcome;
    }
    mx_flight_t **current = (mx_flight_t **) calloc (count + 1, sizeof (mx_flight_t *));
    s_outcome_t outcome = { S_DONE, MX_STATE_SUCCEEDED };
    int deleted = 0, unknown = 0;
    if (mx_flight_repo_load (self->pg, flids, count, true, current, &error))
        outcome = s_broken (msg_id, "cannot load the flights", error);
    for (size_t i = 0; i < count && outcome.step == S_DONE; i++) {
        if (!current [i]) {
            unknown++;
            continue;
        }
        json_t *changed = NULL;
        mx_flight_t *next = mx_flight_apply_fdel (current [i], mx_clock_now (self->clock), &changed);
        if (json_array_size (changed)
        &&  s_store_change (self, current [i], next, changed, mx_sis_meta (msg), msg_id, &error))
            outcome = s_broken (msg_id, "cannot delete a flight", error);
        else
        if (json_array_size (changed))
            deleted++;
        json_decref (changed);
        mx_flight_destroy (&next);
    }
    if (outcome.step == S_DONE) {
        char text [96];
        snprintf (text, sizeof text, "flights deleted %d, unknown %d", deleted, unknown);
        outcome = s_finish (self, msg_id, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, text);
    }
    for (size_t i = 0; i < count; i++)
        mx_flight_destroy (&current [i]);
    free (current);
    free (flids);
    return outcome;
}

static s_outcome_t
s_apply_reference (s_processor_t *self, int64_t msg_id, const mx_sis_msg_t *msg)
{
    mx_reference_t *reference = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_reference (msg, &reference, &error);
    if (status != MX_BODY_OK) {
        s_outcome_t outcome = status == MX_BODY_PROTOCOL
            ? s_business_terminal (self, msg_id, MX_STATE_DEAD, MX_ERR_PROTOCOL, error, NULL)
            : s_business_failed (self, msg_id, MX_ERR_CODEC_ERROR, error);
        free (error);
        return outcome;
    }
    int changed = 0;
    s_outcome_t outcome;
    if (mx_reference_apply (self->pg, reference, msg_id, mx_clock_now (self->clock), &changed, &error))
        outcome = s_broken (msg_id, "cannot apply reference data", error);
    else {
        //  A reference response closes the open request of its list when it
        //  matches; the data is applied either way.
        const char *closed = "";
        if (strcmp (reference->styp, "RESP") == 0) {
            int64_t request_id = 0;
            const char *why = NULL;
            int matched = mx_requests_match_reference_resp (self->pg, reference->rtype, mx_sis_meta (msg)->dttm_ms,
                                                            msg_id, mx_clock_now (self->clock), &request_id, &why,
                                                            &error);
            if (matched < 0) {
                mx_reference_destroy (&reference);
                return s_broken (msg_id, "cannot match the response to a request", error);
            }
            closed = matched ? "; request closed" : "; no open request matched";
        }
        char text [96];
        snprintf (text, sizeof text, "%s rows changed %d%s", reference->rtype, changed, closed);
        outcome = s_finish (self, msg_id, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, text);
    }
    mx_reference_destroy (&reference);
    return outcome;
}

//  ---------------------------------------------------------------------
//  One message, inside the batch transaction

static bool
s_ignored (s_processor_t *self, const char *type)
{
    const mx_config_string_list_t *list = &self->config->pipeline_ignore_types;
    for (size_t i = 0; i < list->count; i++)
        if (strcmp (list->items [i], type) == 0)
            return true;
    return false;
}

//  What the codec needs of the configuration.
static mx_sis_options_t
s_sis_options (const s_processor_t *self)
{
    return (mx_sis_options_t) {
        .zone = self->zone, .max_bytes = (size_t) self->config->codec_max_message_bytes,
        .ignore_types = self->config->pipeline_ignore_types.items,
        .ignore_count = self->config->pipeline_ignore_types.count,
        .limits = mx_sis_limits (self->config)
    };
}

//  The MALFORMED text of a message over the size limit. malloc'd.
static char *
s_too_large (size_t size, size_t max_bytes)
{
    return zsys_sprintf ("message of %zu bytes is larger than msgx.codec.max-message-bytes (%zu)", size, max_bytes);
}

static s_outcome_t
s_dispatch (s_processor_t *self, int64_t msg_id, const mx_sis_msg_t *msg)
{
    char *error = NULL;
    if (s_sql (self, "SAVEPOINT message", &error))
        return s_broken (msg_id, "cannot open a savepoint", error);
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    s_outcome_t outcome;
    switch (mx_sis_kind (msg)) {
        case MX_SIS_KIND_FLOP:
        case MX_SIS_KIND_FDEL:
            outcome = s_apply_flop (self, msg_id, msg);
            break;
        case MX_SIS_KIND_SCHD_DNLD:
        case MX_SIS_KIND_SCHD_ADFT:
            outcome = s_apply_schedule (self, msg_id, msg);
            break;
        case MX_SIS_KIND_SCHD_DEL:
            outcome = s_apply_schedule_del (self, msg_id, msg);
            break;
        case MX_SIS_KIND_SCHD_RESP: {
            //  A schedule response is applied only when it answers an open
            //  RQFD (degraded rule, audited); the match and the snapshot
            //  commit or roll back together.
            int64_t request_id = 0;
            const char *why = NULL;
            int matched = mx_requests_match_schedule_resp (self->pg, meta->dttm_ms, msg_id,
                                                           mx_clock_now (self->clock), &request_id, &why, &error);
            if (matched < 0)
                outcome = s_broken (msg_id, "cannot match the response to a request", error);
            else
            if (matched == 0)
                outcome = s_business_terminal (self, msg_id, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, why);
            else
                outcome = s_apply_schedule (self, msg_id, msg);
            break;
        }
        case MX_SIS_KIND_REFERENCE:
            outcome = s_apply_reference (self, msg_id, msg);
            break;
        default: {
            //  SCHD RESP waits for the request guard; SCHS and the rest
            //  have no processor: retried, then DEAD(EXHAUSTED), replayable.
            char *text = zsys_sprintf ("no processor for %s/%s (%s) in this version",
                                       meta->type, meta->styp, mx_sis_kind_name (mx_sis_kind (msg)));
            outcome = s_business_failed (self, msg_id, MX_ERR_UNSUPPORTED, text);
            free (text);
        }
    }
    if (outcome.step != S_BROKEN && s_sql (self, "RELEASE SAVEPOINT message", &error))
        return s_broken (msg_id, "cannot release the savepoint", error);
    return outcome;
}

static s_outcome_t
s_process_one (s_processor_t *self, int64_t msg_id)
{
    char *error = NULL;
    snprintf (self->current_type, sizeof self->current_type, "-");
    mx_head_t row;
    int found = mx_procstate_get (self->pg, msg_id, &row, &error);
    if (found <= 0)
        return s_broken (msg_id, "cannot read its proc_state row", found < 0 ? error : strdup ("no such row"));
    if (row.state != MX_STATE_PENDING && row.state != MX_STATE_FAILED)
        return (s_outcome_t) { S_DONE, row.state };         //  finished meanwhile
    //  1. Entry guard.
    if (row.state == MX_STATE_FAILED && row.attempts >= self->config->pipeline_max_attempts)
        return s_finish (self, msg_id, MX_STATE_DEAD, MX_ERR_EXHAUSTED, NULL, NULL);
    int64_t now = mx_clock_now (self->clock);
    if (row.processing_started_at < 0 && mx_procstate_mark_started (self->pg, msg_id, now, &error))
        return s_broken (msg_id, "cannot mark it started", error);

    //  2. Raw text from the mailbox.
    char *xml = NULL;
    size_t size = 0;
    size_t max_bytes = (size_t) self->config->codec_max_message_bytes;
    int raw = mx_mailbox_read (self->mailbox, msg_id, max_bytes, &xml, &size, &error);
    if (raw < 0) {
        char *text = zsys_sprintf ("mailbox read failed: %s", error);
        free (error);
        s_outcome_t outcome = s_fail (self, msg_id, MX_ERR_INFRA, text);
        free (text);
        return outcome;
    }
    if (raw == 0)
        return s_finish (self, msg_id, MX_STATE_DEAD, MX_ERR_MALFORMED, "raw-missing", "raw-missing");
    if (!xml) {
        char *text = s_too_large (size, max_bytes);
        s_outcome_t outcome = s_finish (self, msg_id, MX_STATE_DEAD, MX_ERR_MALFORMED, text, NULL);
        free (text);
        return outcome;
    }

    //  3. Decode the envelope.
    mx_sis_options_t options = s_sis_options (self);
    mx_sis_status_t status;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, &options, &status, &error);
    free (xml);
    if (!msg) {
        s_outcome_t outcome = status == MX_SIS_MALFORMED
            ? s_finish (self, msg_id, MX_STATE_DEAD, MX_ERR_MALFORMED, error, NULL)
            : s_fail (self, msg_id, MX_ERR_CODEC_ERROR, error);
        free (error);
        return outcome;
    }
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    snprintf (self->current_type, sizeof self->current_type, "%s", meta->type);
    s_outcome_t outcome;
    if (mx_procstate_set_kind (self->pg, msg_id, meta->type, meta->styp, now, &error)) {
        outcome = s_broken (msg_id, "cannot record the message kind", error);
        goto done;
    }
    //  4. Identity, bound before the business savepoint: a rollback of
    //  the business part keeps it, so a retry is never its own duplicate.
    char key [128];
    mx_sis_identity (meta, self->config->identity_include_day_boundary, key, sizeof key);
    int64_t holder = mx_procstate_bind_identity (self->pg, msg_id, key, now, &error);
    if (holder < 0) {
        outcome = s_broken (msg_id, "cannot bind the identity", error);
        goto done;
    }
    if (holder != msg_id) {
        char text [48];
        snprintf (text, sizeof text, "duplicate-of:%" PRId64, holder);
        outcome = s_finish (self, msg_id, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, text);
        goto done;
    }
    //  5. Dispatch.
    if (s_ignored (self, meta->type)) {
        char text [32];
        snprintf (text, sizeof text, "ignored:%s", meta->type);
        outcome = s_finish (self, msg_id, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, text);
        goto done;
    }
    outcome = s_dispatch (self, msg_id, msg);
done:
    mx_sis_destroy (&msg);
    return outcome;
}

//  ---------------------------------------------------------------------
//  The bulk path: a run of ordinary messages (non-business terminals,
//  FLOP/FDEL, SCHD DNLD/ADFT) decoded and applied in memory, written in a
//  handful of statements. Everything it cannot settle in memory (a CODEC
//  or UNSUPPORTED failure, reference data, SCHD DEL, unknown kinds) ends
//  the run; those go through the message-by-message path after it. A
//  database error rolls the whole batch back and it is redone message by
//  message, so the outcome is always what one-at-a-time processing gives.

typedef enum { B_TERMINAL, B_FLOP, B_SCHEDULE } s_plan_t;

typedef struct {
    int64_t msg_id;
    char *xml;                  //  from the range read (owned by the rows array)
    size_t size;
    bool present;
    mx_sis_msg_t *msg;
    char key [128];
    bool holds_key;             //  bound: the key goes onto its row
    s_plan_t plan;
    mx_flop_t *flop;
    mx_schedule_t *schedule;
    mx_bulk_terminal_t terminal;
    char *text;                 //  owned texts for the terminal row
    char *outcome;
    bool stop;                  //  read ahead: needs the message-by-message path
} s_item_t;

//  The messages after a full batch, read and decoded while its states are
//  written and committed and while the pump hands over the next head:
//  under a backlog the next batch is exactly those, and their decoding
//  then costs the chain nothing.
struct s_ahead_t {
    int64_t after;              //  the rows read come after this id
    int64_t read_at;            //  zclock_mono
    mx_mailbox_text_t *raw;
    size_t raw_count;
    s_item_t *items;            //  one per raw row
    size_t decoded;             //  items [0, decoded) are
};

//  Past this age a read-ahead is not used (an operator may have changed
//  the mailbox meanwhile).
#define S_AHEAD_FRESH_MS 1000

//  A flight as loaded (before) and as it stands after the batch so far.
typedef struct {
    mx_flight_t *before;        //  NULL: new in this batch
    mx_flight_t *now;
} s_slot_t;

static void
s_item_terminal (s_item_t *item, mx_state_t state, mx_error_class_t error_class, const char *text, const char *outcome)
{
    free (item->text);
    free (item->outcome);
    item->plan = B_TERMINAL;
    item->text = text ? strdup (text) : NULL;
    item->outcome = outcome ? strdup (outcome) : NULL;
    item->terminal.msg_id = item->msg_id;
    item->terminal.state = state;
    item->terminal.error_class = error_class;
}

static void
s_item_free (s_item_t *item)
{
    mx_sis_destroy (&item->msg);
    mx_flop_destroy (&item->flop);
    mx_schedule_destroy (&item->schedule);
    free (item->text);
    free (item->outcome);
    item->text = item->outcome = NULL;
}

//  Decodes a message whose raw text is in hand into its plan or its
//  terminal outcome. Depends on the configuration and the zone only, so it
//  may run ahead of the batch. false: the message needs the
//  message-by-message path (a codec error, a kind the bulk path lacks).
static bool
s_item_decode (s_processor_t *self, s_item_t *item)
{
    char *error = NULL;
    size_t max_bytes = (size_t) self->config->codec_max_message_bytes;
    if (!item->xml) {
        char *text = s_too_large (item->size, max_bytes);
        s_item_terminal (item, MX_STATE_DEAD, MX_ERR_MALFORMED, text, NULL);
        free (text);
        return true;
    }
    mx_sis_options_t options = s_sis_options (self);
    mx_sis_status_t status;
    item->msg = mx_sis_decode (item->xml, item->size, &options, &status, &error);
    if (!item->msg) {
        if (status != MX_SIS_MALFORMED) {
            free (error);
            return false;               //  CODEC_ERROR: a failed attempt, not ours
        }
        s_item_terminal (item, MX_STATE_DEAD, MX_ERR_MALFORMED, error, NULL);
        free (error);
        return true;
    }
    const mx_sis_meta_t *meta = mx_sis_meta (item->msg);
    item->terminal.type = meta->type;
    item->terminal.styp = meta->styp;
    mx_sis_identity (meta, self->config->identity_include_day_boundary, item->key, sizeof item->key);
    if (s_ignored (self, meta->type)) {
        char outcome [32];
        snprintf (outcome, sizeof outcome, "ignored:%s", meta->type);
        s_item_terminal (item, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, outcome);
        return true;
    }
    mx_sis_kind_t kind = mx_sis_kind (item->msg);
    mx_body_status_t body = MX_BODY_OK;
    if (kind == MX_SIS_KIND_FLOP || kind == MX_SIS_KIND_FDEL) {
        body = mx_sis_flop (item->msg, self->zone, &item->flop, &error);
        item->plan = B_FLOP;
    }
    else
    if (kind == MX_SIS_KIND_SCHD_DNLD || kind == MX_SIS_KIND_SCHD_ADFT) {
        body = mx_sis_schedule (item->msg, self->zone, &item->schedule, &error);
        item->plan = B_SCHEDULE;
    }
    else
        return false;                   //  reference, SCHD DEL, unsupported: message by message
    if (body == MX_BODY_PROTOCOL) {
        s_item_terminal (item, MX_STATE_DEAD, MX_ERR_PROTOCOL, error, NULL);
        free (error);
        return true;
    }
    free (error);
    return body == MX_BODY_OK;
}

static void
s_ahead_destroy (s_ahead_t **self_p)
{
    s_ahead_t *self = *self_p;
    if (!self)
        return;
    for (size_t r = 0; r < self->raw_count; r++) {
        if (self->items)
            s_item_free (&self->items [r]);
        if (self->raw)
            free (self->raw [r].xml);
    }
    free (self->raw);
    free (self->items);
    free (self);
    *self_p = NULL;
}

//  Reads the mailbox rows after `last`, up to a batch of them.
static void
s_ahead_read (s_processor_t *self, int64_t last)
{
    s_ahead_destroy (&self->ahead);
    s_ahead_t *ahead = (s_ahead_t *) calloc (1, sizeof (s_ahead_t));
    assert (ahead);
    ahead->after = last;
    ahead->read_at = zclock_mono ();
    char *error = NULL;
    if (mx_mailbox_read_range (self->mailbox, last + 1, last + self->config->pipeline_process_batch,
                               (size_t) self->config->codec_max_message_bytes,
                               &ahead->raw, &ahead->raw_count, &error)) {
        mx_debug (ACTOR, "no read-ahead after %" PRId64 ": %s", last, error);
        free (error);
        s_ahead_destroy (&ahead);
        return;
    }
    ahead->items = (s_item_t *) calloc (ahead->raw_count + 1, sizeof (s_item_t));
    assert (ahead->items);
    for (size_t r = 0; r < ahead->raw_count; r++) {
        s_item_t *item = &ahead->items [r];
        item->msg_id = ahead->raw [r].id;
        item->present = true;
        item->xml = ahead->raw [r].xml;
        item->size = ahead->raw [r].size;
    }
    self->ahead = ahead;
}

//  Decodes what the read-ahead holds. With `until`, stops early once that
//  connection has its result in (the states, the commit: the batch then
//  goes on at once, and the rest is decoded while the pump picks the next
//  head).
static void
s_ahead_decode (s_processor_t *self, PGconn *until)
{
    s_ahead_t *ahead = self->ahead;
    while (ahead && ahead->decoded < ahead->raw_count) {
        s_item_t *item = &ahead->items [ahead->decoded++];
        item->stop = !s_item_decode (self, item);
        if (until && ahead->decoded % 16 == 0 && (!PQconsumeInput (until) || !PQisBusy (until)))
            break;
    }
}

//  True when the read-ahead holds every one of ids (a batch's, ascending).
static bool
s_ahead_covers (const s_ahead_t *ahead, const int64_t *ids, size_t count)
{
    if (!ahead || zclock_mono () - ahead->read_at > S_AHEAD_FRESH_MS)
        return false;
    size_t r = 0;
    for (size_t i = 0; i < count; i++) {
        while (r < ahead->raw_count && ahead->raw [r].id < ids [i])
            r++;
        if (r == ahead->raw_count || ahead->raw [r].id != ids [i])
            return false;
    }
    return true;
}

static void
s_slot_destroy (void **item)
{
    s_slot_t *slot = (s_slot_t *) *item;
    mx_flight_destroy (&slot->before);
    mx_flight_destroy (&slot->now);
    free (slot);
    *item = NULL;
}

//  Events of one change, streamed into the batch's outbox COPY in order.
static void
s_change_events (s_processor_t *self, mx_bulk_copy_t *copy, const mx_flight_t *before,
                 const mx_flight_t *after, json_t *changed, const mx_sis_meta_t *meta, int64_t msg_id)
{
    mx_event_meta_t event = {
        .msg_id = msg_id, .type = meta->type, .styp = meta->styp, .seqn = meta->seqn, .dttm = meta->dttm
    };
    bool tombstone = after->deleted && (!before || !before->deleted);
    mx_flight_event_texts_into (after, &event, changed, self->zone, &self->doc_msg, &self->doc_state);
    mx_event_type_t type = tombstone ? MX_EVENT_TOMBSTONE : MX_EVENT_UPSERT;
    mx_bulk_event_t msg_event = { MX_TARGET_MSG, type, after->flid, after->state_version, msg_id,
                                  self->doc_msg.data };
    mx_bulk_event_t schd_event = { MX_TARGET_SCHD, type, after->flid, after->state_version, msg_id,
                                   tombstone ? NULL : self->doc_state.data };
    mx_bulk_events_put (copy, &msg_event);
    mx_bulk_events_put (copy, &schd_event);
}

static void
s_flight_free (void **item)
{
    mx_flight_destroy ((mx_flight_t **) item);
}

//  The batch committed: its flight states are what is stored now.
static void
s_flights_committed (s_processor_t *self)
{
    if (zhashx_size (self->flights) + zlistx_size (self->flights_owed) > S_FLIGHTS_KEPT)
        zhashx_purge (self->flights);
    mx_flight_t *flight;
    while ((flight = (mx_flight_t *) zlistx_detach (self->flights_owed, NULL))) {
        char key [24];
        snprintf (key, sizeof key, "%" PRId64, flight->flid);
        zhashx_update (self->flights, key, flight);
    }
}

static s_slot_t *
s_slot (zhashx_t *slots, int64_t flid)
{
    char key [24];
    snprintf (key, sizeof key, "%" PRId64, flid);
    return (s_slot_t *) zhashx_lookup (slots, key);
}

//  Applies ids [0..count) as far as it can; *applied gets how many
//  (a prefix). Returns -1 when the database failed (roll back).
static int
s_bulk (s_processor_t *self, const int64_t *ids, size_t count, size_t *applied)
{
    *applied = 0;
    char *error = NULL;
    int64_t now = mx_clock_now (self->clock);
    size_t max_bytes = (size_t) self->config->codec_max_message_bytes;
    int *states = (int *) calloc (count, sizeof (int));
    int *attempts = (int *) calloc (count, sizeof (int));
    s_item_t *items = (s_item_t *) calloc (count, sizeof (s_item_t));
    mx_mailbox_text_t *raw = NULL;
    size_t raw_count = 0;
    zhashx_t *slots = zhashx_new ();
    zhashx_set_destructor (slots, s_slot_destroy);
    mx_bulk_copy_t *copy = NULL;
    zlistx_t *snaps = zlistx_new ();
    zlistx_set_destructor (snaps, (czmq_destructor *) zstr_free);
    int rc = 0;
    size_t prefix = 0;
    //  Where a batch's time goes, for the debug log.
    int64_t phase [9] = { zclock_usecs () };
#define S_PHASE(n) phase [n] = zclock_usecs ()

    //  The raw texts: decoded already if the read-ahead holds the batch.
    bool covered = s_ahead_covers (self->ahead, ids, count);
    if (covered)
        s_ahead_decode (self, NULL);
    s_ahead_t *ahead = self->ahead;
    self->ahead = NULL;
    if (!covered)
        s_ahead_destroy (&ahead);
    else {
        raw = ahead->raw;
        raw_count = ahead->raw_count;
        ahead->raw = NULL;
    }
    if (mx_bulk_start (self->pg, ids, count, states, attempts, &error)
    ||  (!ahead && mx_mailbox_read_range (self->mailbox, ids [0], ids [count - 1], max_bytes,
                                          &raw, &raw_count, &error))) {
        mx_warn (ACTOR, "batch of %zu from %" PRId64 ": %s; redoing it message by message", count, ids [0], error);
        free (error);
        rc = -1;
        goto done;
    }
    S_PHASE (1);
    //  Pass 1: decode, in order, up to the first message the bulk path
    //  cannot settle in memory.
    size_t next_raw = 0;
    for (prefix = 0; prefix < count; prefix++) {
        s_item_t *item = &items [prefix];
        item->msg_id = ids [prefix];
        if (states [prefix] != MX_STATE_PENDING && states [prefix] != MX_STATE_FAILED)
            break;
        while (next_raw < raw_count && raw [next_raw].id < item->msg_id)
            next_raw++;
        if (next_raw < raw_count && raw [next_raw].id == item->msg_id) {
            item->present = true;
            item->xml = raw [next_raw].xml;
            item->size = raw [next_raw].size;
        }
        if (states [prefix] == MX_STATE_FAILED && attempts [prefix] >= self->config->pipeline_max_attempts) {
            s_item_terminal (item, MX_STATE_DEAD, MX_ERR_EXHAUSTED, NULL, NULL);
            continue;
        }
        if (!item->present) {
            s_item_terminal (item, MX_STATE_DEAD, MX_ERR_MALFORMED, "raw-missing", "raw-missing");
            continue;
        }
        if (ahead) {
            *item = ahead->items [next_raw];
            memset (&ahead->items [next_raw], 0, sizeof (s_item_t));
            if (item->stop)
                break;
        }
        else
        if (!s_item_decode (self, item))
            break;
    }
    if (prefix == 0)
        goto done;
    S_PHASE (2);

    //  Identities, all at once, in msg_id order: a duplicate is SKIPPED
    //  whatever its body says (step 4 comes before dispatch).
    {
        int64_t *bind_ids = (int64_t *) calloc (prefix, sizeof (int64_t));
        const char **keys = (const char **) calloc (prefix, sizeof (char *));
        size_t *owners = (size_t *) calloc (prefix, sizeof (size_t));
        size_t binds = 0;
        for (size_t i = 0; i < prefix; i++)
            if (items [i].msg) {
                bind_ids [binds] = items [i].msg_id;
                keys [binds] = items [i].key;
                owners [binds++] = i;
            }
        int64_t *holders = (int64_t *) calloc (binds + 1, sizeof (int64_t));
        if (binds && mx_bulk_bind_identities (self->pg, bind_ids, keys, binds, now, holders, &error)) {
            mx_warn (ACTOR, "identity binding of a batch failed: %s; redoing it message by message", error);
            free (error);
            rc = -1;
        }
        for (size_t b = 0; rc == 0 && b < binds; b++)
            if (holders [b] == bind_ids [b])
                items [owners [b]].holds_key = true;
            else {
                char outcome [48];
                snprintf (outcome, sizeof outcome, "duplicate-of:%" PRId64, holders [b]);
                s_item_terminal (&items [owners [b]], MX_STATE_SKIPPED, MX_ERR_NONE, NULL, outcome);
            }
        free (bind_ids);
        free (keys);
        free (owners);
        free (holders);
        if (rc)
            goto done;
    }

    S_PHASE (3);
    //  The flights the batch touches, locked and loaded in one query.
    {
        zlistx_t *wanted = zlistx_new ();
        for (size_t i = 0; i < prefix; i++) {
            if (items [i].plan == B_FLOP)
                zlistx_add_end (wanted, &items [i].flop->flid);
            else
            if (items [i].plan == B_SCHEDULE)
                for (size_t r = 0; r < items [i].schedule->count; r++)
                    zlistx_add_end (wanted, &items [i].schedule->records [r].flight->flid);
        }
        size_t flight_count = zlistx_size (wanted);
        int64_t *flids = (int64_t *) calloc (flight_count + 1, sizeof (int64_t));
        size_t unique = 0;
        for (int64_t *flid = (int64_t *) zlistx_first (wanted); flid; flid = (int64_t *) zlistx_next (wanted)) {
            char key [24];
            snprintf (key, sizeof key, "%" PRId64, *flid);
            if (zhashx_lookup (slots, key))
                continue;
            zhashx_insert (slots, key, zmalloc (sizeof (s_slot_t)));
            flids [unique++] = *flid;
        }
        zlistx_destroy (&wanted);
        //  Lock all, then read whole only those whose stored state is not
        //  the one a batch of ours committed last (state_version and
        //  last_msg_id tell: every stored change bumps the version).
        mx_flight_t **loaded = (mx_flight_t **) calloc (unique + 1, sizeof (mx_flight_t *));
        int64_t *versions = (int64_t *) calloc (unique + 1, sizeof (int64_t));
        int64_t *last_msg_ids = (int64_t *) calloc (unique + 1, sizeof (int64_t));
        int64_t *missed = (int64_t *) calloc (unique + 1, sizeof (int64_t));
        size_t misses = 0;
        if (unique && mx_flight_repo_lock (self->pg, flids, unique, versions, last_msg_ids, &error))
            rc = -1;
        for (size_t f = 0; f < unique && rc == 0; f++) {
            if (versions [f] < 0)
                continue;               //  no such flight
            char key [24];
            snprintf (key, sizeof key, "%" PRId64, flids [f]);
            const mx_flight_t *kept = (const mx_flight_t *) zhashx_lookup (self->flights, key);
            if (kept && kept->state_version == versions [f] && kept->last_msg_id == last_msg_ids [f])
                loaded [f] = mx_flight_dup (kept);
            else
                missed [misses++] = flids [f];
        }
        mx_flight_t **read = (mx_flight_t **) calloc (misses + 1, sizeof (mx_flight_t *));
        if (rc == 0 && misses && mx_flight_repo_load (self->pg, missed, misses, true, read, &error))
            rc = -1;
        for (size_t f = 0, m = 0; f < unique && m < misses && rc == 0; f++)
            if (versions [f] >= 0 && !loaded [f] && flids [f] == missed [m])
                loaded [f] = read [m++];
        free (read);
        free (missed);
        free (versions);
        free (last_msg_ids);
        if (rc) {
            mx_warn (ACTOR, "cannot load the flights of a batch: %s; redoing it message by message", error);
            free (error);
        }
        for (size_t f = 0; f < unique; f++) {
            s_slot_t *slot = s_slot (slots, flids [f]);
            slot->before = loaded [f];
            slot->now = loaded [f] ? mx_flight_dup (loaded [f]) : NULL;
        }
        free (loaded);
        free (flids);
        if (rc)
            goto done;
    }

    //  Pass 2: apply in order, in memory, streaming the events into one
    //  COPY as they come, so that PostgreSQL stores the first while the
    //  next are computed. Ids are drawn for the most events the batch can
    //  make (two per flight change).
    {
        size_t most = 0;
        for (size_t i = 0; i < prefix; i++)
            most += items [i].plan == B_FLOP ? 2 : items [i].plan == B_SCHEDULE ? 2 * items [i].schedule->count : 0;
        if (most && mx_bulk_events_open (self->pg, most, now, &copy, &error)) {
            mx_warn (ACTOR, "cannot start the outbox rows of a batch: %s; redoing it message by message", error);
            free (error);
            rc = -1;
            goto done;
        }
    }
    S_PHASE (4);
    for (size_t i = 0; i < prefix; i++) {
        s_item_t *item = &items [i];
        if (item->plan == B_FLOP) {
            s_slot_t *slot = s_slot (slots, item->flop->flid);
            char outcome [64];
            if (!slot->now) {
                snprintf (outcome, sizeof outcome, "unknown-flight:%" PRId64, item->flop->flid);
                s_item_terminal (item, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, outcome);
                continue;
            }
            if (slot->now->deleted && !item->flop->fdel) {
                snprintf (outcome, sizeof outcome, "flight-deleted:%" PRId64, item->flop->flid);
                s_item_terminal (item, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, outcome);
                continue;
            }
            json_t *changed = NULL;
            mx_flight_t *next = item->flop->fdel ? mx_flight_apply_fdel (slot->now, now, &changed)
                                                 : mx_flight_apply_flop (slot->now, item->flop, &changed);
            bool any = json_array_size (changed) > 0;
            if (any) {
                next->state_version = slot->now->state_version + 1;
                next->last_msg_id = item->msg_id;
                s_change_events (self, copy, slot->now, next, changed, mx_sis_meta (item->msg), item->msg_id);
                mx_flight_destroy (&slot->now);
                slot->now = next;
                next = NULL;
            }
            mx_flight_destroy (&next);
            json_decref (changed);
            s_item_terminal (item, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, any ? NULL : "no-change");
        }
        else
        if (item->plan == B_SCHEDULE) {
            //  All records first, into copies: a cross-day record rejects
            //  the whole package and leaves the flights as they were.
            size_t records = item->schedule->count;
            mx_flight_t **next = (mx_flight_t **) calloc (records + 1, sizeof (mx_flight_t *));
            json_t **changed = (json_t **) calloc (records + 1, sizeof (json_t *));
            char *protocol = NULL;
            for (size_t r = 0; r < records && !protocol; r++) {
                s_slot_t *slot = s_slot (slots, item->schedule->records [r].flight->flid);
                next [r] = mx_flight_apply_fltr (slot->now, &item->schedule->records [r], self->zone,
                                                 (int) self->config->operation_day_cutoff_hour, &changed [r], &protocol);
            }
            if (protocol) {
                s_item_terminal (item, MX_STATE_DEAD, MX_ERR_PROTOCOL, protocol, NULL);
                free (protocol);
            }
            else {
                int inserted = 0, updated = 0, unchanged = 0;
                int64_t scope_begin = INT64_MAX, scope_end = INT64_MIN;
                for (size_t r = 0; r < records; r++) {
                    s_slot_t *slot = s_slot (slots, next [r]->flid);
                    const char *sodt = next [r]->scalars [MX_F_SODT];
                    if (sodt) {
                        int64_t at = strtoll (sodt, NULL, 10);
                        scope_begin = at < scope_begin ? at : scope_begin;
                        scope_end = at > scope_end ? at : scope_end;
                    }
                    if (json_array_size (changed [r]) == 0) {
                        unchanged++;
                        continue;
                    }
                    if (slot->now)
                        updated++;
                    else
                        inserted++;
                    next [r]->state_version = (slot->now ? slot->now->state_version : 0) + 1;
                    next [r]->last_msg_id = item->msg_id;
                    s_change_events (self, copy, slot->now, next [r], changed [r],
                                     mx_sis_meta (item->msg), item->msg_id);
                    mx_flight_destroy (&slot->now);
                    slot->now = next [r];
                    next [r] = NULL;
                }
                zlistx_add_end (snaps, zsys_sprintf ("%" PRId64 " %s %" PRId64 " %" PRId64 " %d %d %d",
                                                     item->msg_id, mx_sis_meta (item->msg)->styp,
                                                     scope_begin == INT64_MAX ? -1 : scope_begin,
                                                     scope_end == INT64_MIN ? -1 : scope_end,
                                                     inserted, updated, unchanged));
                char outcome [96];
                snprintf (outcome, sizeof outcome, "flights inserted %d, updated %d, unchanged %d",
                          inserted, updated, unchanged);
                s_item_terminal (item, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, outcome);
            }
            for (size_t r = 0; r < records; r++) {
                mx_flight_destroy (&next [r]);
                json_decref (changed [r]);
            }
            free (next);
            free (changed);
        }
    }

    S_PHASE (5);
    //  Writes: the rest of the events, each touched flight once (its final
    //  state), the snapshot log, and every terminal state with its intent.
    if (mx_bulk_events_close (&copy, &error))
        rc = -1;
    S_PHASE (6);
    if (rc == 0) {
        size_t slot_count = zhashx_size (slots), changed = 0;
        const mx_flight_t **before = (const mx_flight_t **) calloc (slot_count + 1, sizeof (mx_flight_t *));
        const mx_flight_t **after = (const mx_flight_t **) calloc (slot_count + 1, sizeof (mx_flight_t *));
        for (s_slot_t *slot = (s_slot_t *) zhashx_first (slots); slot; slot = (s_slot_t *) zhashx_next (slots))
            if (slot->now && (!slot->before || slot->before->state_version != slot->now->state_version)) {
                before [changed] = slot->before;
                after [changed++] = slot->now;
            }
        if (changed && mx_flight_repo_save_many (self->pg, before, after, changed, now, &error))
            rc = -1;
        free (before);
        free (after);
    }
    S_PHASE (7);
    for (char *snap = (char *) zlistx_first (snaps); snap && rc == 0; snap = (char *) zlistx_next (snaps)) {
        long long msg_id, begin, end;
        int inserted, updated, unchanged;
        char styp [16];
        if (sscanf (snap, "%lld %15s %lld %lld %d %d %d", &msg_id, styp, &begin, &end,
                    &inserted, &updated, &unchanged) == 7
        &&  mx_snap_log_insert (self->pg, msg_id, styp, begin, end, now, inserted, updated, unchanged, &error))
            rc = -1;
    }
    if (rc == 0) {
        mx_bulk_terminal_t *rows = (mx_bulk_terminal_t *) calloc (prefix + 1, sizeof (mx_bulk_terminal_t));
        for (size_t i = 0; i < prefix; i++) {
            rows [i] = items [i].terminal;
            rows [i].last_error = items [i].text;
            rows [i].outcome = items [i].outcome;
            rows [i].identity_key = items [i].holds_key ? items [i].key : NULL;
        }
        //  A full batch says a backlog: the next messages are read and
        //  decoded while the server writes these states (and then commits).
        if (mx_bulk_finish_send (self->pg, rows, prefix, now, &error))
            rc = -1;
        else {
            if (prefix == (size_t) self->config->pipeline_process_batch) {
                s_ahead_read (self, ids [prefix - 1]);
                s_ahead_decode (self, self->pg);
            }
            if (mx_bulk_finish_result (self->pg, prefix, &error))
                rc = -1;
        }
        free (rows);
    }
    S_PHASE (8);
    if (rc == 0)
        mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:I,s:i,s:b}", "msg_id", (json_int_t) ids [0],
                                                    "batch", (int) prefix, "read_ahead", ahead != NULL),
                     "bulk phases (us): read %" PRId64 " decode %" PRId64 " identities %" PRId64 " flights %" PRId64
                     " apply %" PRId64 " events after it %" PRId64 " write flights %" PRId64 " states %" PRId64,
                     phase [1] - phase [0], phase [2] - phase [1], phase [3] - phase [2], phase [4] - phase [3],
                     phase [5] - phase [4], phase [6] - phase [5], phase [7] - phase [6], phase [8] - phase [7]);
    if (rc) {
        mx_warn (ACTOR, "writing a batch of %zu failed: %s; redoing it message by message", prefix, error);
        free (error);
        goto done;
    }
    for (size_t i = 0; i < prefix; i++)
        mx_metrics_add (mx_metrics_messages (items [i].terminal.type ? items [i].terminal.type : "-",
                                             mx_state_name (items [i].terminal.state)), 1);
    for (size_t i = 0; i < prefix; i++)
        if (items [i].terminal.state == MX_STATE_DEAD)
            mx_metrics_add (mx_metrics_messages_dead (mx_error_class_name (items [i].terminal.error_class)), 1);
    for (size_t i = 0; i < prefix; i++)
        if (items [i].terminal.state == MX_STATE_DEAD)
            mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:I,s:s,s:s}", "msg_id", (json_int_t) items [i].msg_id,
                                                        "state", "DEAD", "error_class",
                                                        mx_error_class_name (items [i].terminal.error_class)),
                         "%" PRId64 " DEAD: %s: %s", items [i].msg_id,
                         mx_error_class_name (items [i].terminal.error_class), items [i].text ? items [i].text : "");
    //  The final states go to the cache once the transaction commits.
    for (s_slot_t *slot = (s_slot_t *) zhashx_first (slots); slot; slot = (s_slot_t *) zhashx_next (slots))
        if (slot->now) {
            zlistx_add_end (self->flights_owed, slot->now);
            slot->now = NULL;
        }
    *applied = prefix;

done:
    for (size_t i = 0; i < count; i++)
        s_item_free (&items [i]);
    s_ahead_destroy (&ahead);
    for (size_t r = 0; r < raw_count; r++)
        free (raw [r].xml);
    free (raw);
    free (items);
    free (states);
    free (attempts);
    zhashx_destroy (&slots);
    if (copy) {
        char *ignored = NULL;
        mx_bulk_events_close (&copy, &ignored);
        free (ignored);
    }
    zlistx_destroy (&snaps);
    return rc;
}
#undef S_PHASE

//  ---------------------------------------------------------------------
//  A batch

static int
s_pg (s_processor_t *self, char **error)
{
    if (self->pg && PQstatus (self->pg) == CONNECTION_OK && PQtransactionStatus (self->pg) == PQTRANS_IDLE)
        return 0;
    mx_pg_disconnect (&self->pg);
    self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-processor",
                              self->config->pg_statement_timeout, error);
    if (!self->pg)
        return -1;
    //  Event payloads are JSON of a few KB, compressed as they are stored:
    //  lz4 costs a fraction of the default pglz (a third of a batch's
    //  outbox insert went there). A server built without lz4 keeps pglz.
    char *refused = NULL;
    if (mx_pg_exec (self->pg, "SET default_toast_compression = 'lz4'", 0, NULL, NULL, &refused)) {
        mx_info (ACTOR, "event payloads stay compressed with pglz: %s", refused);
        free (refused);
    }
    return 0;
}

//  The ready messages after `after`: PENDING rows in msg_id order up to W,
//  stopping at the first FAILED one (it holds the FIFO).
static size_t
s_next_ready (s_processor_t *self, int64_t after, int64_t *ids, size_t max)
{
    char after_text [MX_PG_INT64_BUFSIZE], limit [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (after, after_text), mx_pg_int64_text ((int64_t) max, limit) };
    PGresult *res = NULL;
    char *error = NULL;
    if (mx_pg_exec (self->pg,
            "SELECT msg_id, state = 'PENDING' AND msg_id <= (SELECT committed_up_to FROM inbox_cursor)"
            " FROM proc_state WHERE state IN ('PENDING', 'FAILED') AND msg_id > $1::bigint"
            " ORDER BY msg_id LIMIT $2::bigint", 2, params, &res, &error)) {
        mx_warn (ACTOR, "cannot look for more ready messages: %s", error);
        free (error);
        return 0;
    }
    size_t count = 0;
    for (int row = 0; row < PQntuples (res) && strcmp (PQgetvalue (res, row, 1), "t") == 0; row++)
        ids [count++] = mx_pg_get_int64 (res, row, 0);
    PQclear (res);
    return count;
}

//  Returns the head's state name for the reply, or "UNKNOWN".
static const char *
s_process_batch (s_processor_t *self, int64_t head)
{
    int64_t started = zclock_mono ();
    //  Where the time around the batch goes, for the debug log (us).
    int64_t at_start = zclock_usecs (), at_ready = 0, at_commit = 0;
    char *error = NULL;
    if (s_pg (self, &error) || mx_pg_begin (self->pg, &error)) {
        mx_warn (ACTOR, "PostgreSQL unusable: %s", error);
        free (error);
        return "UNKNOWN";
    }
    size_t limit = (size_t) self->config->pipeline_process_batch;
    int64_t *ids = (int64_t *) calloc (limit + 1, sizeof (int64_t));
    size_t count = 1, done = 0;
    ids [0] = head;
    mx_state_t head_state = MX_STATE_PENDING;
    bool broken = false;
    if (limit > 1) {
        count += s_next_ready (self, head, ids + 1, limit - 1);
        at_ready = zclock_usecs ();
        if (s_bulk (self, ids, count, &done)) {
            //  Roll back and redo the whole batch message by message.
            zlistx_purge (self->flights_owed);
            char *ignored = NULL;
            mx_pg_rollback (self->pg, &ignored);
            free (ignored);
            done = 0;
            count = 1;
            if (s_pg (self, &error) || mx_pg_begin (self->pg, &error)) {
                mx_warn (ACTOR, "PostgreSQL unusable: %s", error);
                free (error);
                free (ids);
                return "UNKNOWN";
            }
        }
        else
        if (done > 0) {
            head_state = MX_STATE_SUCCEEDED;        //  terminal, whichever
            count = done;                           //  the rest comes with the next PROCESS
        }
        else
            count = 1;          //  the head needs the message-by-message path; then back to bulk
    }
    bool extend = limit > 1 ? false : true;
    while (done < count && !broken) {
        s_outcome_t outcome = s_process_one (self, ids [done]);
        if (outcome.step == S_BROKEN) {
            broken = true;
            break;
        }
        if (done == 0)
            head_state = outcome.state;
        done++;
        if (outcome.step == S_RETRY)
            break;                      //  a failed message ends the batch
        if (extend && done == count && count < limit)
            count += s_next_ready (self, ids [count - 1], ids + count, limit - count);
    }
    int64_t last = done ? ids [done - 1] : head;
    free (ids);
    if (broken) {
        zlistx_purge (self->flights_owed);
        char *ignored = NULL;
        mx_pg_rollback (self->pg, &ignored);
        free (ignored);
        return "UNKNOWN";
    }
    //  A full batch says a backlog: the next messages are read and decoded
    //  while the server commits this one.
    at_commit = zclock_usecs ();
    int commit_rc = mx_pg_commit_send (self->pg, &error);
    if (commit_rc == 0) {
        if (limit > 1 && done == limit && !(self->ahead && self->ahead->after == last))
            s_ahead_read (self, last);
        s_ahead_decode (self, self->pg);
        commit_rc = mx_pg_commit_result (self->pg, &error);
    }
    if (commit_rc)
        zlistx_purge (self->flights_owed);
    else
        s_flights_committed (self);
    if (commit_rc) {
        mx_warn (ACTOR, "commit of a batch of %zu failed, nothing of it stays: %s", done, error);
        free (error);
        return "UNKNOWN";
    }
    self->transactions++;
    self->processed += done;
    mx_metrics_histogram_observe (mx_metrics_batch_size (), (double) done);
    mx_metrics_histogram_observe (mx_metrics_processing_seconds (), (double) (zclock_mono () - started) / 1000.0);
    //  Wake delivery and backfill: the events and marks of this batch are
    //  committed now.
    mx_cmd_send (self->pipe, MX_CMD_EVENTS_COMMITTED);
    if (done > 0)
        mx_cmd_send (self->pipe, MX_CMD_MARKS_OWED, (uint64_t) head, (uint64_t) last);
    if (done > 1)
        mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:I,s:i}", "msg_id", (json_int_t) head, "batch", (int) done),
                     "applied %zu messages in one transaction (us: waited for it %" PRId64 ", begin and ready list %"
                     PRId64 ", commit and read-ahead %" PRId64 ")", done,
                     self->replied_at ? at_start - self->replied_at : 0, at_ready ? at_ready - at_start : 0,
                     zclock_usecs () - at_commit);
    return mx_state_name (head_state);
}

//  ---------------------------------------------------------------------

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
    const char *state = s_process_batch (self, msg_id);
    mx_cmd_send (self->data, MX_CMD_PROCESSED, (uint64_t) msg_id, strtoull (epoch, NULL, 10), state);
    self->replied_at = zclock_usecs ();
    s_ahead_decode (self, NULL);
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
            //  The pump stops before the processor: a PROCESSED it can no
            //  longer take must not hold the processor from seeing $TERM.
            zsock_set_sndtimeo (self->data, 0);
            zsock_set_linger (self->data, 0);
            if (zsock_bind (self->data, "%s", endpoint) < 0) {
                mx_actor_reply_failed (self->pipe, "cannot bind the processor's data socket");
                break;
            }
            char *detail = zsys_sprintf ("up to %" PRId64 " messages a transaction; libxml2 without entities or network",
                                         self->config->pipeline_process_batch);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
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
    self->flights = zhashx_new ();
    zhashx_set_destructor (self->flights, s_flight_free);
    self->flights_owed = zlistx_new ();
    zlistx_set_destructor (self->flights_owed, s_flight_free);
    //  EVENTS_COMMITTED and MARKS_OWED are wake-up hints (delivery and
    //  backfill sweep anyway): never block on them, e.g. while control is
    //  busy stopping the actors and not reading this pipe.
    zsock_set_sndtimeo (pipe, 0);
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
    if (self->processed)
        mx_info (ACTOR, "stopped after %" PRIu64 " messages in %" PRIu64 " transactions",
                 self->processed, self->transactions);
    zsock_destroy (&self->data);
    mx_pg_disconnect (&self->pg);
    mx_mailbox_destroy (&self->mailbox);
    mx_tz_destroy (&self->zone);
    zhashx_destroy (&self->flights);
    zlistx_destroy (&self->flights_owed);
    s_ahead_destroy (&self->ahead);
    free (self->doc_msg.data);
    free (self->doc_state.data);
}
