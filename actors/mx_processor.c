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

#include "mx_flight.h"
#include "mx_flight_repo.h"
#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_sis.h"
#include "mx_sis_body.h"
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
    uint64_t transactions;
} s_processor_t;

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
    json_t *msg_doc = mx_flight_msg_doc (after, &event, changed, self->zone);
    char *msg_text = json_dumps (msg_doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (msg_doc);
    char *schd_text = NULL;
    if (!tombstone) {
        json_t *state = mx_flight_state_doc (after, self->zone);
        schd_text = json_dumps (state, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref (state);
    }
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
        char text [64];
        snprintf (text, sizeof text, "%s rows changed %d", reference->rtype, changed);
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
        char *text = zsys_sprintf ("message of %zu bytes is larger than msgx.codec.max-message-bytes (%zu)",
                                   size, max_bytes);
        s_outcome_t outcome = s_finish (self, msg_id, MX_STATE_DEAD, MX_ERR_MALFORMED, text, NULL);
        free (text);
        return outcome;
    }

    //  3. Decode the envelope.
    mx_sis_options_t options = {
        .zone = self->zone, .max_bytes = max_bytes,
        .ignore_types = self->config->pipeline_ignore_types.items,
        .ignore_count = self->config->pipeline_ignore_types.count
    };
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
//  A batch

static int
s_pg (s_processor_t *self, char **error)
{
    if (self->pg && PQstatus (self->pg) == CONNECTION_OK && PQtransactionStatus (self->pg) == PQTRANS_IDLE)
        return 0;
    mx_pg_disconnect (&self->pg);
    self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-processor",
                              self->config->pg_statement_timeout, error);
    return self->pg ? 0 : -1;
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
        if (done == count && count < limit)
            count += s_next_ready (self, ids [count - 1], ids + count, limit - count);
    }
    free (ids);
    if (broken) {
        char *ignored = NULL;
        mx_pg_rollback (self->pg, &ignored);
        free (ignored);
        return "UNKNOWN";
    }
    if (mx_pg_commit (self->pg, &error)) {
        mx_warn (ACTOR, "commit of a batch of %zu failed, nothing of it stays: %s", done, error);
        free (error);
        return "UNKNOWN";
    }
    self->transactions++;
    self->processed += done;
    if (done > 1)
        mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:I,s:i}", "msg_id", (json_int_t) head, "batch", (int) done),
                     "applied %zu messages in one transaction", done);
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
}
