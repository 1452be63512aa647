/*  mx_apply - see mx_apply.h.  */
#include "mx_apply.h"

#include <czmq.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  ---------------------------------------------------------------------
//  Outcomes

void
mx_outcome_set (mx_outcome_t *self, mx_state_t state, mx_error_class_t error_class,
                const char *text, const char *detail)
{
    mx_outcome_reset (self);
    self->decided = true;
    self->state = state;
    self->error_class = error_class;
    self->text = text ? strdup (text) : NULL;
    self->detail = detail ? strdup (detail) : NULL;
}

void
mx_outcome_reset (mx_outcome_t *self)
{
    free (self->text);
    free (self->detail);
    memset (self, 0, sizeof *self);
}

void
mx_apply_msg_release_body (mx_apply_msg_t *self)
{
    mx_flop_destroy (&self->flop);
    mx_schedule_destroy (&self->schedule);
    free (self->del_flids);
    self->del_flids = NULL;
    self->del_count = 0;
    mx_reference_destroy (&self->reference);
}

void
mx_apply_msg_reset (mx_apply_msg_t *self)
{
    mx_sis_destroy (&self->msg);
    mx_flop_destroy (&self->flop);
    mx_schedule_destroy (&self->schedule);
    free (self->del_flids);
    mx_reference_destroy (&self->reference);
    mx_outcome_reset (&self->outcome);
    memset (self, 0, sizeof *self);
}

//  ---------------------------------------------------------------------
//  Before the body

bool
mx_apply_entry (const mx_apply_rules_t *rules, mx_apply_msg_t *self, mx_state_t state, int attempts)
{
    if (state != MX_STATE_FAILED || attempts < rules->max_attempts)
        return false;
    mx_outcome_set (&self->outcome, MX_STATE_DEAD, MX_ERR_EXHAUSTED, NULL, NULL);
    return true;
}

static bool
s_ignored (const mx_apply_rules_t *rules, const char *type)
{
    for (size_t i = 0; i < rules->ignore_count; i++)
        if (strcmp (rules->ignore_types [i], type) == 0)
            return true;
    return false;
}

//  A body the codec refused: PROTOCOL is the message's fault (DEAD), the
//  rest a failed attempt (replayable once the codec knows better).
static void
s_body_refused (mx_apply_msg_t *self, mx_body_status_t status, mx_error_class_t otherwise, char *error)
{
    if (status == MX_BODY_PROTOCOL)
        mx_outcome_set (&self->outcome, MX_STATE_DEAD, MX_ERR_PROTOCOL, error, NULL);
    else
        mx_outcome_set (&self->outcome, MX_STATE_FAILED, otherwise, error, NULL);
    free (error);
}

static void
s_decode_body (const mx_apply_rules_t *rules, mx_apply_msg_t *self)
{
    char *error = NULL;
    mx_body_status_t status = MX_BODY_OK;
    mx_error_class_t otherwise = MX_ERR_CODEC_ERROR;
    switch (self->kind) {
        case MX_SIS_KIND_FLOP:
        case MX_SIS_KIND_FDEL:
            self->plan = MX_PLAN_FLOP;
            status = mx_sis_flop (self->msg, rules->zone, &self->flop, &error);
            otherwise = status == MX_BODY_UNSUPPORTED ? MX_ERR_UNSUPPORTED : MX_ERR_CODEC_ERROR;
            break;
        case MX_SIS_KIND_SCHD_DNLD:
        case MX_SIS_KIND_SCHD_ADFT:
            self->plan = MX_PLAN_SCHEDULE;
            status = mx_sis_schedule (self->msg, rules->zone, &self->schedule, &error);
            otherwise = status == MX_BODY_UNSUPPORTED ? MX_ERR_UNSUPPORTED : MX_ERR_CODEC_ERROR;
            break;
        case MX_SIS_KIND_SCHD_RESP:
            self->plan = MX_PLAN_SCHEDULE;          //  decoded once it answers a request
            return;
        case MX_SIS_KIND_SCHD_DEL:
            self->plan = MX_PLAN_SCHEDULE_DEL;
            status = mx_sis_schedule_del (self->msg, &self->del_flids, &self->del_count, &error);
            break;
        case MX_SIS_KIND_REFERENCE:
            status = mx_sis_reference (self->msg, &self->reference, &error);
            break;
        default: {
            //  SCHS and the rest have no processor: retried, then
            //  DEAD(EXHAUSTED), replayable by a later version.
            const mx_sis_meta_t *meta = mx_sis_meta (self->msg);
            char *text = zsys_sprintf ("no processor for %s/%s (%s) in this version",
                                       meta->type, meta->styp, mx_sis_kind_name (self->kind));
            mx_outcome_set (&self->outcome, MX_STATE_FAILED, MX_ERR_UNSUPPORTED, text, NULL);
            free (text);
            return;
        }
    }
    if (status != MX_BODY_OK) {
        self->plan = MX_PLAN_NONE;
        s_body_refused (self, status, otherwise, error);
    }
    else
        free (error);
}

void
mx_apply_decode (const mx_apply_rules_t *rules, mx_apply_msg_t *self, bool present,
                 const char *xml, size_t size)
{
    if (!present) {
        mx_outcome_set (&self->outcome, MX_STATE_DEAD, MX_ERR_MALFORMED, "raw-missing", "raw-missing");
        return;
    }
    if (!xml) {
        char *text = zsys_sprintf ("message of %zu bytes is larger than msgx.codec.max-message-bytes (%zu)",
                                   size, rules->max_bytes);
        mx_outcome_set (&self->outcome, MX_STATE_DEAD, MX_ERR_MALFORMED, text, NULL);
        free (text);
        return;
    }
    //  The envelope is kept when the payload is missing: the identity is
    //  bound before that refusal counts, so a duplicate ends SKIPPED.
    mx_sis_options_t options = {
        .zone = rules->zone, .max_bytes = rules->max_bytes,
        .ignore_types = rules->ignore_types, .ignore_count = rules->ignore_count,
        .limits = rules->limits, .keep_envelope = true
    };
    mx_sis_status_t status;
    char *error = NULL;
    self->msg = mx_sis_decode (xml, size, &options, &status, &error);
    if (status == MX_SIS_MALFORMED)
        mx_outcome_set (&self->outcome, MX_STATE_DEAD, MX_ERR_MALFORMED, error, NULL);
    else
    if (status != MX_SIS_OK)
        mx_outcome_set (&self->outcome, MX_STATE_FAILED, MX_ERR_CODEC_ERROR, error, NULL);
    free (error);
    if (!self->msg)
        return;
    const mx_sis_meta_t *meta = mx_sis_meta (self->msg);
    self->kind = mx_sis_kind (self->msg);
    mx_sis_identity (meta, rules->identity_include_day, self->key, sizeof self->key);
    if (!self->outcome.decided && s_ignored (rules, meta->type)) {
        char detail [32];
        snprintf (detail, sizeof detail, "ignored:%s", meta->type);
        mx_outcome_set (&self->outcome, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, detail);
    }
    if (!self->outcome.decided)
        s_decode_body (rules, self);
    //  What is decoded no longer needs the tree; a schedule response is
    //  decoded later, once it answers a request (mx_apply_response).
    if (self->kind != MX_SIS_KIND_SCHD_RESP)
        mx_sis_drop_tree (self->msg);
}

void
mx_apply_response (const mx_apply_rules_t *rules, mx_apply_msg_t *self, bool matched, const char *why)
{
    if (!matched) {
        self->plan = MX_PLAN_NONE;
        mx_outcome_set (&self->outcome, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, why);
        return;
    }
    char *error = NULL;
    mx_body_status_t status = mx_sis_schedule (self->msg, rules->zone, &self->schedule, &error);
    if (status != MX_BODY_OK) {
        self->plan = MX_PLAN_NONE;
        s_body_refused (self, status, status == MX_BODY_UNSUPPORTED ? MX_ERR_UNSUPPORTED : MX_ERR_CODEC_ERROR,
                        error);
    }
    else
        free (error);
}

bool
mx_apply_identity (mx_apply_msg_t *self, int64_t holder)
{
    self->holds_key = holder == self->msg_id;
    if (self->holds_key)
        return false;
    char detail [48];
    snprintf (detail, sizeof detail, "duplicate-of:%" PRId64, holder);
    self->plan = MX_PLAN_NONE;
    mx_outcome_set (&self->outcome, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, detail);
    return true;
}

//  ---------------------------------------------------------------------
//  The flights of a batch

struct mx_flightset_t {
    zhashx_t *slots;                //  flid text -> mx_flight_slot_t
};

static void
s_before_drop (mx_flight_slot_t *slot)
{
    if (slot->before_owned) {
        mx_flight_t *owned = (mx_flight_t *) slot->before;
        mx_flight_destroy (&owned);
    }
    slot->before = NULL;
    slot->before_owned = false;
}

static void
s_slot_destroy (void **item)
{
    mx_flight_slot_t *slot = (mx_flight_slot_t *) *item;
    s_before_drop (slot);
    mx_flight_destroy (&slot->now);
    free (slot);
    *item = NULL;
}

mx_flightset_t *
mx_flightset_new (void)
{
    mx_flightset_t *self = (mx_flightset_t *) zmalloc (sizeof (mx_flightset_t));
    self->slots = zhashx_new ();
    zhashx_set_destructor (self->slots, s_slot_destroy);
    return self;
}

void
mx_flightset_destroy (mx_flightset_t **self_p)
{
    mx_flightset_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->slots);
    free (self);
    *self_p = NULL;
}

mx_flight_slot_t *
mx_flightset_get (mx_flightset_t *self, int64_t flid)
{
    char key [24];
    snprintf (key, sizeof key, "%" PRId64, flid);
    return (mx_flight_slot_t *) zhashx_lookup (self->slots, key);
}

mx_flight_slot_t *
mx_flightset_add (mx_flightset_t *self, int64_t flid)
{
    mx_flight_slot_t *slot = mx_flightset_get (self, flid);
    if (slot)
        return slot;
    char key [24];
    snprintf (key, sizeof key, "%" PRId64, flid);
    slot = (mx_flight_slot_t *) zmalloc (sizeof (mx_flight_slot_t));
    slot->flid = flid;
    zhashx_insert (self->slots, key, slot);
    return slot;
}

void
mx_flightset_load (mx_flight_slot_t *slot, mx_flight_t *loaded)
{
    s_before_drop (slot);
    mx_flight_destroy (&slot->now);
    slot->before = loaded;
    slot->before_owned = loaded != NULL;
    slot->now = loaded ? mx_flight_dup (loaded) : NULL;
}

void
mx_flightset_load_kept (mx_flight_slot_t *slot, const mx_flight_t *kept)
{
    s_before_drop (slot);
    mx_flight_destroy (&slot->now);
    slot->before = kept;
    slot->now = mx_flight_dup (kept);
}

size_t
mx_flightset_size (const mx_flightset_t *self)
{
    return zhashx_size (self->slots);
}

mx_flight_slot_t *
mx_flightset_first (mx_flightset_t *self)
{
    return (mx_flight_slot_t *) zhashx_first (self->slots);
}

mx_flight_slot_t *
mx_flightset_next (mx_flightset_t *self)
{
    return (mx_flight_slot_t *) zhashx_next (self->slots);
}

size_t
mx_apply_flight_count (const mx_apply_msg_t *self)
{
    if (self->outcome.decided)
        return 0;
    switch (self->plan) {
        case MX_PLAN_FLOP:          return self->flop ? 1 : 0;
        case MX_PLAN_SCHEDULE:      return self->schedule ? self->schedule->count : 0;
        case MX_PLAN_SCHEDULE_DEL:  return self->del_count;
        default:                    return 0;
    }
}

int64_t
mx_apply_flight_id (const mx_apply_msg_t *self, size_t index)
{
    switch (self->plan) {
        case MX_PLAN_FLOP:          return self->flop->flid;
        case MX_PLAN_SCHEDULE:      return self->schedule->records [index].flight->flid;
        case MX_PLAN_SCHEDULE_DEL:  return self->del_flids [index];
        default:                    return -1;
    }
}

size_t
mx_apply_most_events (const mx_apply_msg_t *self)
{
    return 2 * mx_apply_flight_count (self);
}

//  ---------------------------------------------------------------------
//  The body onto the flights

//  next becomes the slot's state: a new version made by this message.
static void
s_change (mx_apply_msg_t *self, mx_flight_slot_t *slot, mx_flight_t *next, json_t *changed,
          mx_change_fn *change, void *arg)
{
    next->state_version = (slot->now ? slot->now->state_version : 0) + 1;
    next->last_msg_id = self->msg_id;
    mx_change_t event = {
        .after = next, .changed = changed, .msg_id = self->msg_id, .meta = mx_sis_meta (self->msg),
        .tombstone = next->deleted && (!slot->now || !slot->now->deleted)
    };
    change (arg, &event);
    mx_flight_destroy (&slot->now);
    slot->now = next;
}

//  The slot's state was changed in place by this message (never its
//  lifecycle): its new version.
static void
s_changed (mx_apply_msg_t *self, mx_flight_slot_t *slot, json_t *changed, mx_change_fn *change, void *arg)
{
    slot->now->state_version++;
    slot->now->last_msg_id = self->msg_id;
    mx_change_t event = {
        .after = slot->now, .changed = changed, .msg_id = self->msg_id, .meta = mx_sis_meta (self->msg),
        .tombstone = false
    };
    change (arg, &event);
}

//  FLOP / FDEL: an unknown flight is skipped, and so is a deleted one
//  unless the message deletes it.
static void
s_apply_flop (mx_apply_msg_t *self, mx_flightset_t *flights, int64_t now_ms,
              mx_change_fn *change, void *arg)
{
    const mx_flop_t *flop = self->flop;
    mx_flight_slot_t *slot = mx_flightset_get (flights, flop->flid);
    char detail [64];
    if (!slot || !slot->now) {
        snprintf (detail, sizeof detail, "unknown-flight:%" PRId64, flop->flid);
        mx_outcome_set (&self->outcome, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, detail);
        return;
    }
    if (slot->now->deleted && !flop->fdel) {
        snprintf (detail, sizeof detail, "flight-deleted:%" PRId64, flop->flid);
        mx_outcome_set (&self->outcome, MX_STATE_SKIPPED, MX_ERR_NONE, NULL, detail);
        return;
    }
    json_t *changed = NULL;
    bool any;
    if (flop->fdel) {
        mx_flight_t *next = mx_flight_apply_fdel (slot->now, now_ms, &changed);
        any = json_array_size (changed) > 0;
        if (any)
            s_change (self, slot, next, changed, change, arg);
        else
            mx_flight_destroy (&next);
    }
    else {
        //  Onto the state itself: a FLOP changes a few values of a flight,
        //  and a copy of the whole flight per message cost more than the rest
        //  of applying it (slot->before keeps the stored state).
        changed = mx_flight_apply_flop_into (slot->now, flop);
        any = json_array_size (changed) > 0;
        if (any)
            s_changed (self, slot, changed, change, arg);
    }
    json_decref (changed);
    mx_outcome_set (&self->outcome, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, any ? NULL : "no-change");
}

//  The scope of a schedule: the first and last SODT of its records
//  (begin INT64_MAX, end INT64_MIN before the first).
static void
s_scope (mx_snapshot_t *snapshot, const mx_flight_t *flight)
{
    const char *sodt = flight->scalars [MX_F_SODT];
    if (!sodt)
        return;
    int64_t at = strtoll (sodt, NULL, 10);
    snapshot->scope_begin = at < snapshot->scope_begin ? at : snapshot->scope_begin;
    snapshot->scope_end = at > snapshot->scope_end ? at : snapshot->scope_end;
}

//  SCHD DNLD / ADFT / RESP: all records first, into copies, so that a
//  cross-day record rejects the whole package and leaves every flight.
static void
s_apply_schedule (const mx_apply_rules_t *rules, mx_apply_msg_t *self, mx_flightset_t *flights,
                  mx_change_fn *change, void *arg)
{
    size_t records = self->schedule->count;
    mx_flight_t **next = (mx_flight_t **) calloc (records + 1, sizeof (mx_flight_t *));
    json_t **changed = (json_t **) calloc (records + 1, sizeof (json_t *));
    char *protocol = NULL;
    for (size_t r = 0; r < records && !protocol; r++) {
        mx_flight_slot_t *slot = mx_flightset_get (flights, self->schedule->records [r].flight->flid);
        next [r] = mx_flight_apply_fltr (slot ? slot->now : NULL, &self->schedule->records [r], rules->zone,
                                         rules->cutoff_hour, &changed [r], &protocol);
    }
    if (protocol) {
        mx_outcome_set (&self->outcome, MX_STATE_DEAD, MX_ERR_PROTOCOL, protocol, NULL);
        free (protocol);
    }
    else {
        mx_snapshot_t *snapshot = &self->snapshot;
        *snapshot = (mx_snapshot_t) { .present = true, .scope_begin = INT64_MAX, .scope_end = INT64_MIN };
        for (size_t r = 0; r < records; r++) {
            mx_flight_slot_t *slot = mx_flightset_add (flights, next [r]->flid);
            s_scope (snapshot, next [r]);
            if (json_array_size (changed [r]) == 0) {
                snapshot->unchanged++;
                continue;
            }
            if (slot->now)
                snapshot->updated++;
            else
                snapshot->inserted++;
            s_change (self, slot, next [r], changed [r], change, arg);
            next [r] = NULL;
        }
        if (snapshot->scope_begin == INT64_MAX)
            snapshot->scope_begin = snapshot->scope_end = -1;
        char detail [96];
        snprintf (detail, sizeof detail, "flights inserted %d, updated %d, unchanged %d",
                  snapshot->inserted, snapshot->updated, snapshot->unchanged);
        mx_outcome_set (&self->outcome, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, detail);
    }
    for (size_t r = 0; r < records; r++) {
        mx_flight_destroy (&next [r]);
        json_decref (changed [r]);
    }
    free (next);
    free (changed);
}

//  SCHD DEL: each listed flight as an FDEL; unknown ones are counted.
static void
s_apply_schedule_del (mx_apply_msg_t *self, mx_flightset_t *flights, int64_t now_ms,
                      mx_change_fn *change, void *arg)
{
    int deleted = 0, unknown = 0;
    for (size_t i = 0; i < self->del_count; i++) {
        mx_flight_slot_t *slot = mx_flightset_get (flights, self->del_flids [i]);
        if (!slot || !slot->now) {
            unknown++;
            continue;
        }
        json_t *changed = NULL;
        mx_flight_t *next = mx_flight_apply_fdel (slot->now, now_ms, &changed);
        if (json_array_size (changed)) {
            s_change (self, slot, next, changed, change, arg);
            deleted++;
        }
        else
            mx_flight_destroy (&next);
        json_decref (changed);
    }
    char detail [96];
    snprintf (detail, sizeof detail, "flights deleted %d, unknown %d", deleted, unknown);
    mx_outcome_set (&self->outcome, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, detail);
}

void
mx_apply_message (const mx_apply_rules_t *rules, mx_apply_msg_t *self, mx_flightset_t *flights,
                  int64_t now_ms, mx_change_fn *change, void *arg)
{
    if (self->outcome.decided)
        return;
    if (self->plan == MX_PLAN_FLOP)
        s_apply_flop (self, flights, now_ms, change, arg);
    else
    if (self->plan == MX_PLAN_SCHEDULE && self->schedule)
        s_apply_schedule (rules, self, flights, change, arg);
    else
    if (self->plan == MX_PLAN_SCHEDULE_DEL)
        s_apply_schedule_del (self, flights, now_ms, change, arg);
}
