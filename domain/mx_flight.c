/*  mx_flight - see mx_flight.h.

    Decisions in brief (WIRE.md §5, §6, §8; SPEC §4):
    - A FLTR is the whole flight: what it lacks becomes NULL / empty, its
      extra replaces the stored one. A FLTR for a DELETED flight brings it
      back to ACTIVE (a new schedule is authoritative; "LIFECYCLE" changes).
    - A FLOP changes only what it carries: PRESENT sets (a set is replaced
      as a whole), CLEARED clears, ABSENT leaves alone. Extra is merged.
    - OPERATION_DAY is fixed when a flight is created; a FLTR deriving
      another day for a stored flight is refused ("cross-day FLID <n>").
    - Bookkeeping (operation day, state_version, last_msg_id) is carried
      over from the current state; the caller bumps the version by one and
      sets last_msg_id only when "changed" is not empty.
*/
#include "mx_flight.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_text.h"
#include "mx_utf8.h"

#define S_HOUR_MS INT64_C (3600000)

//  JSON name of DELY's key: its position, not an attribute of the wire.
#define S_DELAY_KEY "SEQ"

static const mx_scalar_info_t s_scalars [MX_F_COUNT] = {
#define MX_SCALAR(name, code, type, styp) [MX_F_##name] = { code, MX_TYPE_##type, styp },
#include "mx_flight_fields.def"
#undef MX_SCALAR
};

static const char *s_rare_codes [MX_RARE_COUNT] = {
    [MX_RARE_PSHT] = "PSHT", [MX_RARE_TIPT] = "TIPT", [MX_RARE_SRVT] = "SRVT",
    [MX_RARE_VIPF] = "VIPF"
};

//  The set table is assembled once from the flat list of the .def file;
//  every field names its set, so the order of appending is the column
//  order.
typedef struct {
    mx_set_kind_t set;
    const char *code;
    mx_value_type_t type;
    const char *source;
} s_set_field_t;

static const s_set_field_t s_set_fields [] = {
#define MX_SET(name, element, table, key)
#define MX_SET_FIELD(set, code, type, source) { MX_SET_##set, code, MX_TYPE_##type, source },
#include "mx_flight_sets.def"
#undef MX_SET
#undef MX_SET_FIELD
};

static mx_set_info_t s_sets [MX_SET_COUNT] = {
#define MX_SET(name, element, table, key) \
    [MX_SET_##name] = { element, table, key, 0, { 0 }, { 0 }, { 0 } },
#define MX_SET_FIELD(set, code, type, source)
#include "mx_flight_sets.def"
#undef MX_SET
#undef MX_SET_FIELD
};

static pthread_once_t s_sets_once = PTHREAD_ONCE_INIT;

static void
s_sets_build (void)
{
    for (size_t index = 0; index < sizeof s_set_fields / sizeof s_set_fields [0]; index++) {
        const s_set_field_t *field = &s_set_fields [index];
        mx_set_info_t *info = &s_sets [field->set];
        //  A set with more fields than a record holds is a table error.
        assert (info->field_count < MX_SET_MAX_FIELDS);
        info->field_codes [info->field_count] = field->code;
        info->field_types [info->field_count] = field->type;
        info->field_sources [info->field_count] = field->source;
        info->field_count++;
    }
}

const mx_scalar_info_t *
mx_scalar_info (mx_scalar_t scalar)
{
    assert (scalar >= 0 && scalar < MX_F_COUNT);
    return &s_scalars [scalar];
}

const mx_set_info_t *
mx_set_info (mx_set_kind_t set)
{
    assert (set >= 0 && set < MX_SET_COUNT);
    pthread_once (&s_sets_once, s_sets_build);
    return &s_sets [set];
}

const char *
mx_rare_code (mx_rare_t rare)
{
    assert (rare >= 0 && rare < MX_RARE_COUNT);
    return s_rare_codes [rare];
}

int
mx_scalar_lookup (const char *code)
{
    if (code)
        for (int index = 0; index < MX_F_COUNT; index++)
            if (strcmp (s_scalars [index].code, code) == 0)
                return index;
    return -1;
}

int
mx_set_lookup (const char *element)
{
    if (element)
        for (int index = 0; index < MX_SET_COUNT; index++)
            if (strcmp (s_sets [index].element, element) == 0)
                return index;
    return -1;
}

int
mx_rare_lookup (const char *element)
{
    if (element)
        for (int index = 0; index < MX_RARE_COUNT; index++)
            if (strcmp (s_rare_codes [index], element) == 0)
                return index;
    return -1;
}

//  ---------------------------------------------------------------------
//  Small helpers

static char *
s_strdup (const char *text)
{
    if (!text)
        return NULL;
    char *copy = strdup (text);
    assert (copy);
    return copy;
}

static bool
s_text_equal (const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp (a, b) == 0;
}

//  jansson calls two NULLs unequal; here both mean "no value".
static bool
s_json_equal (const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    return json_equal ((json_t *) a, (json_t *) b) != 0;
}

static json_t *
s_json_copy (const json_t *value)
{
    if (!value)
        return NULL;
    json_t *copy = json_deep_copy (value);
    assert (copy);
    return copy;
}

//  Canonical decimal text (I, T, M) to a number; false if it is not one.
static bool
s_parse_int64 (const char *text, int64_t *value)
{
    if (!text || !*text)
        return false;
    errno = 0;
    char *end = NULL;
    long long number = strtoll (text, &end, 10);
    if (errno || *end)
        return false;
    *value = (int64_t) number;
    return true;
}

static void s_error (char **error, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

static void
s_error (char **error, const char *format, ...)
{
    if (!error)
        return;
    va_list args;
    va_start (args, format);
    if (vasprintf (error, format, args) < 0)
        *error = NULL;
    va_end (args);
}

//  ---------------------------------------------------------------------
//  Sets

static void
s_record_copy (mx_set_record_t *target, const mx_set_record_t *source)
{
    target->key = source->key;
    for (size_t field = 0; field < MX_SET_MAX_FIELDS; field++)
        target->values [field] = s_strdup (source->values [field]);
}

//  Deep copy of source into the empty target, sorted by key. Insertion
//  sort: sets are a handful of records, and it is stable, so records with
//  the same key keep their wire order.
static void
s_set_copy (mx_set_t *target, const mx_set_t *source)
{
    target->count = 0;
    target->records = NULL;
    if (!source || source->count == 0)
        return;
    target->records = calloc (source->count, sizeof (mx_set_record_t));
    assert (target->records);
    for (size_t index = 0; index < source->count; index++) {
        mx_set_record_t record;
        s_record_copy (&record, &source->records [index]);
        size_t slot = index;
        while (slot > 0 && target->records [slot - 1].key > record.key) {
            target->records [slot] = target->records [slot - 1];
            slot--;
        }
        target->records [slot] = record;
    }
    target->count = source->count;
}

void
mx_set_reset (mx_set_t *set)
{
    assert (set);
    for (size_t index = 0; index < set->count; index++)
        for (size_t field = 0; field < MX_SET_MAX_FIELDS; field++)
            free (set->records [index].values [field]);
    free (set->records);
    set->records = NULL;
    set->count = 0;
}

bool
mx_set_equal (const mx_set_t *a, const mx_set_t *b)
{
    size_t count_a = a? a->count: 0;
    size_t count_b = b? b->count: 0;
    if (count_a != count_b)
        return false;
    for (size_t index = 0; index < count_a; index++) {
        const mx_set_record_t *record_a = &a->records [index];
        const mx_set_record_t *record_b = &b->records [index];
        if (record_a->key != record_b->key)
            return false;
        for (size_t field = 0; field < MX_SET_MAX_FIELDS; field++)
            if (!s_text_equal (record_a->values [field], record_b->values [field]))
                return false;
    }
    return true;
}

//  ---------------------------------------------------------------------
//  Flight

mx_flight_t *
mx_flight_new (int64_t flid)
{
    mx_flight_t *self = calloc (1, sizeof (mx_flight_t));
    assert (self);
    self->flid = flid;
    self->extra = json_object ();
    assert (self->extra);
    self->operation_day = -1;
    self->state_version = 0;
    self->last_msg_id = 0;
    self->deleted = false;
    self->deleted_at = -1;
    return self;
}

void
mx_flight_destroy (mx_flight_t **self_p)
{
    assert (self_p);
    mx_flight_t *self = *self_p;
    if (!self)
        return;
    for (int index = 0; index < MX_F_COUNT; index++)
        free (self->scalars [index]);
    for (int index = 0; index < MX_SET_COUNT; index++)
        mx_set_reset (&self->sets [index]);
    for (int index = 0; index < MX_RARE_COUNT; index++)
        json_decref (self->rare [index]);
    json_decref (self->extra);
    free (self);
    *self_p = NULL;
}

mx_flight_t *
mx_flight_dup (const mx_flight_t *self)
{
    assert (self);
    mx_flight_t *copy = mx_flight_new (self->flid);
    for (int index = 0; index < MX_F_COUNT; index++)
        copy->scalars [index] = s_strdup (self->scalars [index]);
    for (int index = 0; index < MX_SET_COUNT; index++)
        s_set_copy (&copy->sets [index], &self->sets [index]);
    for (int index = 0; index < MX_RARE_COUNT; index++)
        copy->rare [index] = s_json_copy (self->rare [index]);
    if (self->extra) {
        json_decref (copy->extra);
        copy->extra = s_json_copy (self->extra);
    }
    copy->operation_day = self->operation_day;
    copy->state_version = self->state_version;
    copy->last_msg_id = self->last_msg_id;
    copy->deleted = self->deleted;
    copy->deleted_at = self->deleted_at;
    return copy;
}

void
mx_flight_set_scalar (mx_flight_t *self, mx_scalar_t scalar, const char *value)
{
    assert (self);
    assert (scalar >= 0 && scalar < MX_F_COUNT);
    //  Copy first: value may be the string being replaced.
    char *copy = s_strdup (value);
    free (self->scalars [scalar]);
    self->scalars [scalar] = copy;
}

void
mx_flight_set_set (mx_flight_t *self, mx_set_kind_t set, const mx_set_t *records)
{
    assert (self);
    assert (set >= 0 && set < MX_SET_COUNT);
    mx_set_t copy;
    s_set_copy (&copy, records);
    mx_set_reset (&self->sets [set]);
    self->sets [set] = copy;
}

//  ---------------------------------------------------------------------
//  Bodies

void
mx_flop_destroy (mx_flop_t **self_p)
{
    assert (self_p);
    mx_flop_t *self = *self_p;
    if (!self)
        return;
    free (self->ffid);
    for (int index = 0; index < MX_F_COUNT; index++)
        free (self->scalars [index]);
    for (int index = 0; index < MX_SET_COUNT; index++)
        mx_set_reset (&self->sets [index]);
    for (int index = 0; index < MX_RARE_COUNT; index++)
        json_decref (self->rare [index]);
    json_decref (self->extra);
    free (self);
    *self_p = NULL;
}

void
mx_schedule_destroy (mx_schedule_t **self_p)
{
    assert (self_p);
    mx_schedule_t *self = *self_p;
    if (!self)
        return;
    for (size_t index = 0; index < self->count; index++) {
        mx_flight_destroy (&self->records [index].flight);
        free (self->records [index].ffid);
    }
    free (self->records);
    free (self);
    *self_p = NULL;
}

//  ---------------------------------------------------------------------
//  Decisions

int32_t
mx_flight_operation_day (const mx_tz_t *zone, int64_t sodt_ms, int cutoff_hour)
{
    assert (zone);
    return (int32_t) mx_tz_local_day (zone, sodt_ms - (int64_t) cutoff_hour * S_HOUR_MS);
}

json_t *
mx_flight_diff (const mx_flight_t *before, const mx_flight_t *after)
{
    assert (after);
    json_t *changed = json_array ();
    assert (changed);
    for (int index = 0; index < MX_F_COUNT; index++)
        if (!s_text_equal (before? before->scalars [index]: NULL, after->scalars [index]))
            json_array_append_new (changed, json_string (s_scalars [index].code));
    for (int index = 0; index < MX_SET_COUNT; index++)
        if (!mx_set_equal (before? &before->sets [index]: NULL, &after->sets [index]))
            json_array_append_new (changed, json_string (mx_set_info (index)->element));
    for (int index = 0; index < MX_RARE_COUNT; index++)
        if (!s_json_equal (before? before->rare [index]: NULL, after->rare [index]))
            json_array_append_new (changed, json_string (s_rare_codes [index]));
    //  A missing extra counts as the empty object.
    json_t *empty = json_object ();
    const json_t *extra_before = before && before->extra? before->extra: empty;
    const json_t *extra_after = after->extra? after->extra: empty;
    if (!s_json_equal (extra_before, extra_after))
        json_array_append_new (changed, json_string ("EXTRA"));
    json_decref (empty);
    //  A flight coming into being is a lifecycle change too, so a new
    //  flight never has an empty list.
    if (!before || before->deleted != after->deleted)
        json_array_append_new (changed, json_string ("LIFECYCLE"));
    return changed;
}

mx_flight_t *
mx_flight_apply_fltr (const mx_flight_t *current, const mx_fltr_t *fltr,
                      const mx_tz_t *zone, int cutoff_hour,
                      json_t **changed, char **error)
{
    assert (fltr && fltr->flight);
    assert (zone);
    assert (changed);
    const mx_flight_t *record = fltr->flight;
    assert (!current || current->flid == record->flid);
    *changed = NULL;

    int64_t sodt;
    if (!s_parse_int64 (record->scalars [MX_F_SODT], &sodt)) {
        s_error (error, "FLID %" PRId64 ": no valid SODT, operation day not derivable",
                 record->flid);
        return NULL;
    }
    int32_t day = mx_flight_operation_day (zone, sodt, cutoff_hour);
    if (current) {
        int32_t current_day = current->operation_day;
        int64_t current_sodt;
        //  Stored flights always carry their day; derive it only for a
        //  state that was never stored.
        if (current_day < 0 && s_parse_int64 (current->scalars [MX_F_SODT], &current_sodt))
            current_day = mx_flight_operation_day (zone, current_sodt, cutoff_hour);
        if (current_day >= 0 && current_day != day) {
            s_error (error, "cross-day FLID %" PRId64, record->flid);
            return NULL;
        }
    }
    mx_flight_t *next = mx_flight_dup (record);
    if (current) {
        next->operation_day = current->operation_day >= 0? current->operation_day: day;
        next->state_version = current->state_version;
        next->last_msg_id = current->last_msg_id;
    }
    else {
        next->operation_day = day;
        next->state_version = 0;
        next->last_msg_id = 0;
    }
    next->deleted = false;
    next->deleted_at = -1;
    *changed = mx_flight_diff (current, next);
    return next;
}

json_t *
mx_flight_apply_flop_into (mx_flight_t *flight, const mx_flop_t *flop)
{
    assert (flight);
    assert (flop);
    assert (flight->flid == flop->flid);
    //  FDEL is a lifecycle change with a time: mx_flight_apply_fdel.
    assert (!flop->fdel);
    //  Only what the FLOP carries can change: each value is compared with
    //  the flight's and replaced when it differs, in mx_flight_diff's order.
    json_t *changed = json_array ();
    assert (changed);
    for (int index = 0; index < MX_F_COUNT; index++) {
        if (flop->scalar_presence [index] == MX_ABSENT)
            continue;
        const char *value = flop->scalar_presence [index] == MX_PRESENT ? flop->scalars [index] : NULL;
        if (s_text_equal (flight->scalars [index], value))
            continue;
        mx_flight_set_scalar (flight, index, value);
        json_array_append_new (changed, json_string (s_scalars [index].code));
    }
    for (int index = 0; index < MX_SET_COUNT; index++) {
        if (flop->set_presence [index] == MX_ABSENT)
            continue;
        //  The copy is sorted by key: compared as the flight would hold it.
        mx_set_t next = { 0 };
        if (flop->set_presence [index] == MX_PRESENT)
            s_set_copy (&next, &flop->sets [index]);
        if (mx_set_equal (&flight->sets [index], &next)) {
            mx_set_reset (&next);
            continue;
        }
        mx_set_reset (&flight->sets [index]);
        flight->sets [index] = next;
        json_array_append_new (changed, json_string (mx_set_info (index)->element));
    }
    for (int index = 0; index < MX_RARE_COUNT; index++) {
        if (flop->rare_presence [index] == MX_ABSENT)
            continue;
        const json_t *value = flop->rare_presence [index] == MX_PRESENT ? flop->rare [index] : NULL;
        if (s_json_equal (flight->rare [index], value))
            continue;
        json_decref (flight->rare [index]);
        flight->rare [index] = s_json_copy (value);
        json_array_append_new (changed, json_string (s_rare_codes [index]));
    }
    //  Unknown elements merge into extra; a JSON null (an unknown element
    //  the codec reports as cleared) removes its key.
    bool extra_changed = false;
    if (flop->extra) {
        const char *code;
        json_t *value;
        json_object_foreach (flop->extra, code, value) {
            json_t *held = json_object_get (flight->extra, code);
            if (json_is_null (value)) {
                if (held) {
                    json_object_del (flight->extra, code);
                    extra_changed = true;
                }
            }
            else
            if (!held || !json_equal (held, value)) {
                json_object_set_new (flight->extra, code, s_json_copy (value));
                extra_changed = true;
            }
        }
    }
    if (extra_changed)
        json_array_append_new (changed, json_string ("EXTRA"));
    return changed;
}

mx_flight_t *
mx_flight_apply_flop (const mx_flight_t *current, const mx_flop_t *flop, json_t **changed)
{
    assert (current);
    assert (changed);
    mx_flight_t *next = mx_flight_dup (current);
    *changed = mx_flight_apply_flop_into (next, flop);
    return next;
}

mx_flight_t *
mx_flight_apply_fdel (const mx_flight_t *current, int64_t now_ms, json_t **changed)
{
    assert (current);
    assert (changed);
    mx_flight_t *next = mx_flight_dup (current);
    if (!next->deleted) {
        next->deleted = true;
        next->deleted_at = now_ms;
    }
    *changed = mx_flight_diff (current, next);
    return next;
}

//  ---------------------------------------------------------------------
//  Documents

//  JSON of one canonical value. A value that is not canonical (it cannot
//  be, from the codec or the repository) is kept as text, never dropped.
static json_t *
s_value_json (mx_value_type_t type, const char *text, const mx_tz_t *zone)
{
    if (!text)
        return json_null ();
    int64_t number;
    if (type == MX_TYPE_T && s_parse_int64 (text, &number)) {
        char iso [MX_TZ_ISO_BUFSIZE];
        return json_string (mx_tz_format_iso (zone, number, iso, sizeof iso));
    }
    if ((type == MX_TYPE_I || type == MX_TYPE_M) && s_parse_int64 (text, &number))
        return json_integer ((json_int_t) number);
    //  libxml2 and PostgreSQL hand out UTF-8; jansson refuses anything else.
    json_t *string = json_string (text);
    return string? string: json_null ();
}

static int
s_key_compare (const void *a, const void *b)
{
    return strcmp (*(const char *const *) a, *(const char *const *) b);
}

//  Deep copy with object keys in byte order. Rare sets and extra come
//  from the codec in wire order but from jsonb in jsonb's order; sorting
//  gives one document for one state, whichever way it was read.
static json_t *
s_json_sorted (const json_t *value)
{
    if (json_is_array (value)) {
        json_t *array = json_array ();
        assert (array);
        for (size_t index = 0; index < json_array_size (value); index++)
            json_array_append_new (array, s_json_sorted (json_array_get (value, index)));
        return array;
    }
    if (!json_is_object (value))
        return s_json_copy (value);
    size_t count = json_object_size (value);
    const char **keys = calloc (count + 1, sizeof (char *));
    assert (keys);
    size_t index = 0;
    const char *key;
    json_t *member;
    json_object_foreach ((json_t *) value, key, member)
        keys [index++] = key;
    qsort (keys, count, sizeof (char *), s_key_compare);
    json_t *object = json_object ();
    assert (object);
    for (index = 0; index < count; index++)
        json_object_set_new (object, keys [index],
                             s_json_sorted (json_object_get (value, keys [index])));
    free (keys);
    return object;
}

static json_t *
s_set_json (mx_set_kind_t set, const mx_set_t *records, const mx_tz_t *zone)
{
    const mx_set_info_t *info = mx_set_info (set);
    const char *key = *info->key? info->key: S_DELAY_KEY;
    json_t *array = json_array ();
    assert (array);
    for (size_t index = 0; index < records->count; index++) {
        const mx_set_record_t *record = &records->records [index];
        json_t *object = json_object ();
        assert (object);
        json_object_set_new (object, key, json_integer (record->key));
        for (size_t field = 0; field < info->field_count; field++)
            json_object_set_new (object, info->field_codes [field],
                                 s_value_json (info->field_types [field],
                                               record->values [field], zone));
        json_array_append_new (array, object);
    }
    return array;
}

json_t *
mx_flight_state_doc (const mx_flight_t *flight, const mx_tz_t *zone)
{
    assert (flight);
    assert (zone);
    json_t *doc = json_object ();
    assert (doc);
    json_object_set_new (doc, "flid", json_integer ((json_int_t) flight->flid));
    if (flight->operation_day >= 0) {
        int year, month, day;
        mx_tz_civil_from_days (flight->operation_day, &year, &month, &day);
        char date [MX_TZ_DATE_BUFSIZE + 8];
        snprintf (date, sizeof date, "%04d-%02d-%02d", year, month, day);
        json_object_set_new (doc, "operation_day", json_string (date));
    }
    else
        json_object_set_new (doc, "operation_day", json_null ());
    json_object_set_new (doc, "state_version", json_integer ((json_int_t) flight->state_version));
    json_object_set_new (doc, "lifecycle", json_string (flight->deleted? "DELETED": "ACTIVE"));
    if (flight->deleted && flight->deleted_at >= 0) {
        char iso [MX_TZ_ISO_BUFSIZE];
        json_object_set_new (doc, "deleted_at",
                             json_string (mx_tz_format_iso (zone, flight->deleted_at,
                                                            iso, sizeof iso)));
    }
    else
        json_object_set_new (doc, "deleted_at", json_null ());

    for (int index = 0; index < MX_F_COUNT; index++)
        json_object_set_new (doc, s_scalars [index].code,
                             s_value_json (s_scalars [index].type, flight->scalars [index], zone));
    for (int index = 0; index < MX_SET_COUNT; index++)
        json_object_set_new (doc, mx_set_info (index)->element,
                             s_set_json (index, &flight->sets [index], zone));
    for (int index = 0; index < MX_RARE_COUNT; index++)
        json_object_set_new (doc, s_rare_codes [index],
                             flight->rare [index]? s_json_sorted (flight->rare [index])
                                                 : json_null ());
    json_object_set_new (doc, "extra",
                         flight->extra? s_json_sorted (flight->extra): json_object ());
    return doc;
}

static json_t *
s_string_or_null (const char *text)
{
    json_t *string = text? json_string (text): NULL;
    return string? string: json_null ();
}

//  The KAFKA:msg document up to, without, its last member "state".
static json_t *
s_msg_head (const mx_flight_t *flight, const mx_event_meta_t *meta, json_t *changed)
{
    json_t *doc = json_object ();
    assert (doc);
    //  event_id first: the outbox insert rewrites it in the text.
    json_object_set_new (doc, "event_id", json_integer ((json_int_t) meta->event_id));
    json_object_set_new (doc, "msg_id", json_integer ((json_int_t) meta->msg_id));
    json_object_set_new (doc, "flid", json_integer ((json_int_t) flight->flid));
    json_object_set_new (doc, "type", s_string_or_null (meta->type));
    json_object_set_new (doc, "styp", s_string_or_null (meta->styp));
    json_object_set_new (doc, "seqn", json_integer ((json_int_t) meta->seqn));
    json_object_set_new (doc, "dttm", s_string_or_null (meta->dttm));
    json_object_set_new (doc, "state_version", json_integer ((json_int_t) flight->state_version));
    //  A copy: the caller keeps its list and may still change it.
    json_object_set_new (doc, "changed", changed? s_json_copy (changed): json_array ());
    return doc;
}

json_t *
mx_flight_msg_doc (const mx_flight_t *flight, const mx_event_meta_t *meta,
                   json_t *changed, const mx_tz_t *zone)
{
    assert (flight);
    assert (meta);
    assert (zone);
    json_t *doc = s_msg_head (flight, meta, changed);
    json_object_set_new (doc, "state", mx_flight_state_doc (flight, zone));
    return doc;
}

//  ---------------------------------------------------------------------
//  Document text, written straight into a buffer
//
//  The same bytes json_dumps gives for the documents above with
//  JSON_COMPACT | JSON_PRESERVE_ORDER (test_flight checks it flight by
//  flight), without building them as trees first: a change's documents
//  were most of the processor's time, in allocations.

static void
s_text_int (mx_text_t *self, int64_t value)
{
    //  Digits from the right (what %" PRId64 " gives, without printf).
    char digits [24];
    char *at = digits + sizeof digits;
    uint64_t magnitude = value < 0 ? 0 - (uint64_t) value : (uint64_t) value;
    do
        *--at = (char) ('0' + magnitude % 10);
    while (magnitude /= 10);
    if (value < 0)
        *--at = '-';
    mx_text_append (self, at, (size_t) (digits + sizeof digits - at));
}

//  A JSON string as jansson writes it: '"', '\\' and control characters
//  escaped, everything else as it is. Text that is not UTF-8 is null, as
//  json_string refuses it.
static void
s_text_string (mx_text_t *self, const char *text)
{
    size_t size = strlen (text);
    if (mx_utf8_invalid_at ((const unsigned char *) text, size) != size) {
        mx_text_append (self, "null", 4);
        return;
    }
    mx_text_append (self, "\"", 1);
    size_t run = 0;
    for (size_t at = 0; at < size; at++) {
        unsigned char c = (unsigned char) text [at];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        mx_text_append (self, text + run, at - run);
        run = at + 1;
        char escape [8];
        switch (c) {
            case '"':  mx_text_append (self, "\\\"", 2); break;
            case '\\': mx_text_append (self, "\\\\", 2); break;
            case '\b': mx_text_append (self, "\\b", 2); break;
            case '\f': mx_text_append (self, "\\f", 2); break;
            case '\n': mx_text_append (self, "\\n", 2); break;
            case '\r': mx_text_append (self, "\\r", 2); break;
            case '\t': mx_text_append (self, "\\t", 2); break;
            default:
                snprintf (escape, sizeof escape, "\\u%04X", (unsigned int) c);
                mx_text_append (self, escape, 6);
        }
    }
    mx_text_append (self, text + run, size - run);
    mx_text_append (self, "\"", 1);
}

static void
s_text_string_or_null (mx_text_t *self, const char *text)
{
    if (text)
        s_text_string (self, text);
    else
        mx_text_append (self, "null", 4);
}

//  ,"key": (or "key": first); keys are our own ASCII names.
static void
s_text_key (mx_text_t *self, const char *key, bool first)
{
    if (!first)
        mx_text_append (self, ",", 1);
    mx_text_append (self, "\"", 1);
    mx_text_puts (self, key);
    mx_text_append (self, "\":", 2);
}

//  A value that has its tree anyway (rare sets, extra, changed).
static void
s_text_json (mx_text_t *self, const json_t *value)
{
    char *text = json_dumps (value, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    assert (text);
    mx_text_puts (self, text);
    free (text);
}

static void
s_text_value (mx_text_t *self, mx_value_type_t type, const char *text, const mx_tz_t *zone)
{
    if (!text) {
        mx_text_append (self, "null", 4);
        return;
    }
    int64_t number;
    if (type == MX_TYPE_T && s_parse_int64 (text, &number)) {
        char iso [MX_TZ_ISO_BUFSIZE];
        s_text_string (self, mx_tz_format_iso (zone, number, iso, sizeof iso));
    }
    else
    if ((type == MX_TYPE_I || type == MX_TYPE_M) && s_parse_int64 (text, &number))
        s_text_int (self, number);
    else
        s_text_string (self, text);
}

//  As s_json_sorted dumped: jansson sorts object keys in byte order too.
static void
s_text_sorted (mx_text_t *self, const json_t *value)
{
    char *text = json_dumps (value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    assert (text);
    mx_text_puts (self, text);
    free (text);
}

//  mx_flight_state_doc as text.
static void
s_state_text (mx_text_t *self, const mx_flight_t *flight, const mx_tz_t *zone)
{
    mx_text_append (self, "{", 1);
    s_text_key (self, "flid", true);
    s_text_int (self, flight->flid);
    s_text_key (self, "operation_day", false);
    if (flight->operation_day >= 0) {
        int year, month, day;
        mx_tz_civil_from_days (flight->operation_day, &year, &month, &day);
        char date [MX_TZ_DATE_BUFSIZE + 8];
        snprintf (date, sizeof date, "%04d-%02d-%02d", year, month, day);
        s_text_string (self, date);
    }
    else
        mx_text_append (self, "null", 4);
    s_text_key (self, "state_version", false);
    s_text_int (self, flight->state_version);
    s_text_key (self, "lifecycle", false);
    mx_text_puts (self, flight->deleted ? "\"DELETED\"" : "\"ACTIVE\"");
    s_text_key (self, "deleted_at", false);
    if (flight->deleted && flight->deleted_at >= 0) {
        char iso [MX_TZ_ISO_BUFSIZE];
        s_text_string (self, mx_tz_format_iso (zone, flight->deleted_at, iso, sizeof iso));
    }
    else
        mx_text_append (self, "null", 4);
    for (int index = 0; index < MX_F_COUNT; index++) {
        s_text_key (self, s_scalars [index].code, false);
        s_text_value (self, s_scalars [index].type, flight->scalars [index], zone);
    }
    for (int index = 0; index < MX_SET_COUNT; index++) {
        const mx_set_info_t *info = mx_set_info ((mx_set_kind_t) index);
        const mx_set_t *set = &flight->sets [index];
        s_text_key (self, info->element, false);
        mx_text_append (self, "[", 1);
        for (size_t r = 0; r < set->count; r++) {
            const mx_set_record_t *record = &set->records [r];
            mx_text_append (self, r ? ",{" : "{", r ? 2 : 1);
            s_text_key (self, *info->key ? info->key : S_DELAY_KEY, true);
            s_text_int (self, record->key);
            for (size_t field = 0; field < info->field_count; field++) {
                s_text_key (self, info->field_codes [field], false);
                s_text_value (self, info->field_types [field], record->values [field], zone);
            }
            mx_text_append (self, "}", 1);
        }
        mx_text_append (self, "]", 1);
    }
    for (int index = 0; index < MX_RARE_COUNT; index++) {
        s_text_key (self, s_rare_codes [index], false);
        if (flight->rare [index])
            s_text_sorted (self, flight->rare [index]);
        else
            mx_text_append (self, "null", 4);
    }
    s_text_key (self, "extra", false);
    if (flight->extra)
        s_text_sorted (self, flight->extra);
    else
        mx_text_append (self, "{}", 2);
    mx_text_append (self, "}", 1);
}

void
mx_flight_state_text_into (const mx_flight_t *flight, const mx_tz_t *zone, mx_text_t *text)
{
    assert (flight && zone && text);
    mx_text_reset (text);
    s_state_text (text, flight, zone);
}

void
mx_flight_event_texts_into (const mx_flight_t *flight, const mx_event_meta_t *meta, json_t *changed,
                            const mx_tz_t *zone, mx_text_t *msg_text, mx_text_t *state_text)
{
    assert (flight);
    assert (meta);
    assert (zone);
    assert (msg_text && state_text);
    mx_text_reset (state_text);
    s_state_text (state_text, flight, zone);
    //  s_msg_head's members, then "state" last.
    mx_text_t *text = msg_text;
    mx_text_reset (text);
    mx_text_append (text, "{", 1);
    s_text_key (text, "event_id", true);
    s_text_int (text, meta->event_id);
    s_text_key (text, "msg_id", false);
    s_text_int (text, meta->msg_id);
    s_text_key (text, "flid", false);
    s_text_int (text, flight->flid);
    s_text_key (text, "type", false);
    s_text_string_or_null (text, meta->type);
    s_text_key (text, "styp", false);
    s_text_string_or_null (text, meta->styp);
    s_text_key (text, "seqn", false);
    s_text_int (text, meta->seqn);
    s_text_key (text, "dttm", false);
    s_text_string_or_null (text, meta->dttm);
    s_text_key (text, "state_version", false);
    s_text_int (text, flight->state_version);
    s_text_key (text, "changed", false);
    if (changed)
        s_text_json (text, changed);
    else
        mx_text_append (text, "[]", 2);
    s_text_key (text, "state", false);
    mx_text_append (text, state_text->data, state_text->size);
    mx_text_append (text, "}", 1);
}

void
mx_flight_event_texts (const mx_flight_t *flight, const mx_event_meta_t *meta, json_t *changed,
                       const mx_tz_t *zone, bool want_schd, char **msg_text, char **schd_text)
{
    assert (msg_text && schd_text);
    mx_text_t text = { 0 }, state = { 0 };
    mx_flight_event_texts_into (flight, meta, changed, zone, &text, &state);
    *msg_text = text.data;
    if (want_schd)
        *schd_text = state.data;
    else {
        *schd_text = NULL;
        free (state.data);
    }
}
