/*  Unit tests: the flight model, the decisions (FLTR, every FLOP subtype,
    FDEL), operation day and the JSON documents. Bodies are built inline;
    no XML is involved.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_flight.h"

#define S_FLID 42

static mx_tz_t *s_zone;             //  Asia/Shanghai, the default airport zone
static mx_tz_t *s_utc;
static mx_tz_t *s_berlin;           //  a zone with daylight saving time

static int
s_setup (void **state)
{
    (void) state;
    s_zone = mx_tz_load ("Asia/Shanghai", NULL);
    s_utc = mx_tz_load ("UTC", NULL);
    s_berlin = mx_tz_load ("Europe/Berlin", NULL);
    return s_zone && s_utc && s_berlin? 0: -1;
}

static int
s_teardown (void **state)
{
    (void) state;
    mx_tz_destroy (&s_zone);
    mx_tz_destroy (&s_utc);
    mx_tz_destroy (&s_berlin);
    return 0;
}

//  ---------------------------------------------------------------------
//  Builders

//  Canonical T text of a local time in zone; text must hold 24 bytes.
static const char *
s_time_text (char *text, const mx_tz_t *zone, int year, int month, int day, int hour,
             int minute)
{
    snprintf (text, 24, "%lld",
              (long long) mx_tz_local_to_utc (zone, year, month, day, hour, minute, 0));
    return text;
}

static int32_t
s_day (int year, int month, int day)
{
    return (int32_t) mx_tz_days_from_civil (year, month, day);
}

//  A sample value of a type, distinct per salt.
static const char *
s_sample (mx_value_type_t type, int salt, char *text)
{
    switch (type) {
        case MX_TYPE_S: snprintf (text, 24, "V%d", salt); break;
        case MX_TYPE_I: snprintf (text, 24, "%d", 100 + salt); break;
        case MX_TYPE_M: snprintf (text, 24, "%d", 30 + salt); break;
        case MX_TYPE_T:
            s_time_text (text, s_zone, 2021, 1, 23, 6, salt % 60);
            break;
    }
    return text;
}

//  A stored flight: the mandatory fields, day derived, version 3.
static mx_flight_t *
s_flight (void)
{
    char text [24];
    mx_flight_t *flight = mx_flight_new (S_FLID);
    mx_flight_set_scalar (flight, MX_F_ALCD, "CA");
    mx_flight_set_scalar (flight, MX_F_FLNO, "CA101");
    mx_flight_set_scalar (flight, MX_F_MVIN, "A");
    mx_flight_set_scalar (flight, MX_F_SODT, s_time_text (text, s_zone, 2021, 1, 23, 5, 35));
    mx_flight_set_scalar (flight, MX_F_FLTY, "W/Z");
    mx_flight_set_scalar (flight, MX_F_FLIN, "D");
    mx_flight_set_scalar (flight, MX_F_ACFT, "320");
    flight->operation_day = s_day (2021, 1, 23);
    flight->state_version = 3;
    flight->last_msg_id = 100;
    return flight;
}

//  A FLTR record with the mandatory fields of s_flight, no bookkeeping.
static mx_fltr_t
s_fltr (void)
{
    mx_fltr_t fltr = { .flight = s_flight (), .ffid = NULL };
    fltr.flight->operation_day = -1;
    fltr.flight->state_version = 0;
    fltr.flight->last_msg_id = 0;
    return fltr;
}

static mx_flop_t *
s_flop (const char *styp)
{
    mx_flop_t *flop = calloc (1, sizeof (mx_flop_t));
    assert_non_null (flop);
    flop->flid = S_FLID;
    flop->ffid = strdup ("CA-CA101-A-23JAN210535-D");
    snprintf (flop->styp, sizeof flop->styp, "%s", styp);
    flop->extra = json_object ();
    return flop;
}

//  Appends one record; values beyond the set's fields stay NULL.
static void
s_set_add (mx_set_t *set, int key, const char *const values [MX_SET_MAX_FIELDS])
{
    set->records = realloc (set->records, (set->count + 1) * sizeof (mx_set_record_t));
    assert_non_null (set->records);
    mx_set_record_t *record = &set->records [set->count++];
    memset (record, 0, sizeof *record);
    record->key = key;
    for (size_t field = 0; field < MX_SET_MAX_FIELDS; field++)
        record->values [field] = values [field]? strdup (values [field]): NULL;
}

//  A record of the set with a sample value in every field.
static void
s_set_add_sample (mx_set_t *set, mx_set_kind_t kind, int key, int salt)
{
    const mx_set_info_t *info = mx_set_info (kind);
    char texts [MX_SET_MAX_FIELDS][24];
    const char *values [MX_SET_MAX_FIELDS] = { NULL };
    for (size_t field = 0; field < info->field_count; field++)
        values [field] = s_sample (info->field_types [field], salt + (int) field, texts [field]);
    s_set_add (set, key, values);
}

//  Checks and releases a "changed" list.
static void
s_assert_changed (json_t *changed, const char *expected)
{
    assert_non_null (changed);
    assert_true (json_is_array (changed));
    char *text = json_dumps (changed, JSON_COMPACT);
    assert_non_null (text);
    if (strcmp (text, expected) != 0)
        fail_msg ("changed %s, expected %s", text, expected);
    free (text);
    json_decref (changed);
}

static char *
s_dump (const json_t *doc)
{
    char *text = json_dumps (doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_non_null (text);
    return text;
}

static bool
s_text_equal_for_test (const char *a, const char *b)
{
    return a && b? strcmp (a, b) == 0: a == b;
}

//  No business difference between two flights.
static void
s_assert_same (const mx_flight_t *a, const mx_flight_t *b)
{
    s_assert_changed (mx_flight_diff (a, b), "[]");
}

//  ---------------------------------------------------------------------
//  Tables

static void
test_tables_scalars (void **state)
{
    (void) state;
    assert_int_equal (MX_F_COUNT, 58);
    const mx_scalar_info_t *stnd = mx_scalar_info (MX_F_STND);
    assert_string_equal (stnd->code, "STND");
    assert_int_equal (stnd->type, MX_TYPE_S);
    assert_string_equal (stnd->styp, "STND");
    assert_string_equal (mx_scalar_info (MX_F_TAID)->styp, "TAOP");
    assert_int_equal (mx_scalar_info (MX_F_TAID)->type, MX_TYPE_I);
    assert_int_equal (mx_scalar_info (MX_F_CNCL)->type, MX_TYPE_T);
    assert_string_equal (mx_scalar_info (MX_F_SODT)->styp, "");
    assert_string_equal (mx_scalar_info (MX_F_PORT_CLOSE)->code, "PORT_CLOSE");
    for (int index = 0; index < MX_F_COUNT; index++)
        assert_int_equal (mx_scalar_lookup (mx_scalar_info (index)->code), index);
    assert_int_equal (mx_scalar_lookup ("FLID"), -1);
    assert_int_equal (mx_scalar_lookup ("stnd"), -1);
    assert_int_equal (mx_scalar_lookup (""), -1);
    assert_int_equal (mx_scalar_lookup (NULL), -1);
}

static void
test_tables_sets (void **state)
{
    (void) state;
    assert_int_equal (MX_SET_COUNT, 10);
    const mx_set_info_t *stand = mx_set_info (MX_SET_STAND);
    assert_string_equal (stand->element, "PSDT");
    assert_string_equal (stand->table, "flight_stand");
    assert_string_equal (stand->key, "PSNO");
    assert_int_equal (stand->field_count, 3);
    assert_string_equal (stand->field_codes [0], "PSST");
    assert_int_equal (stand->field_types [1], MX_TYPE_T);
    assert_string_equal (stand->field_sources [2], "child");

    const mx_set_info_t *delay = mx_set_info (MX_SET_DELAY);
    assert_string_equal (delay->key, "");
    assert_int_equal (delay->field_count, 4);
    assert_string_equal (delay->field_codes [2], "DURA");
    assert_int_equal (delay->field_types [2], MX_TYPE_M);
    assert_string_equal (delay->field_sources [2], "attr");
    assert_string_equal (delay->field_codes [3], "REASON");
    assert_string_equal (delay->field_sources [3], "text");

    //  ABOP is text: the real sample FLOP_ABTM_01 carries "D" there.
    const mx_set_info_t *airbridge = mx_set_info (MX_SET_AIRBRIDGE);
    assert_string_equal (airbridge->field_codes [1], "ABOP");
    assert_int_equal (airbridge->field_types [1], MX_TYPE_S);

    assert_string_equal (mx_set_info (MX_SET_ROUTE)->table, "flight_route_point");
    assert_string_equal (mx_set_info (MX_SET_EROUTE)->table, "flight_route_point");
    assert_int_equal (mx_set_info (MX_SET_GATE)->field_count, 6);
    assert_int_equal (mx_set_info (MX_SET_CHECKIN)->field_count, 7);
    assert_int_equal (mx_set_info (MX_SET_CHOCK)->field_count, 3);
    assert_int_equal (mx_set_info (MX_SET_ROUTE)->field_count, 5);
    for (int index = 0; index < MX_SET_COUNT; index++) {
        const mx_set_info_t *info = mx_set_info (index);
        assert_int_equal (mx_set_lookup (info->element), index);
        assert_true (info->field_count > 0 && info->field_count <= MX_SET_MAX_FIELDS);
        for (size_t field = 0; field < info->field_count; field++)
            assert_non_null (info->field_codes [field]);
        for (size_t field = info->field_count; field < MX_SET_MAX_FIELDS; field++)
            assert_null (info->field_codes [field]);
    }
    assert_int_equal (mx_set_lookup ("PSNO"), -1);
    assert_int_equal (mx_set_lookup (NULL), -1);
}

static void
test_tables_rare (void **state)
{
    (void) state;
    const char *codes [] = { "PSHT", "TIPT", "SRVT", "VIPF" };
    for (int index = 0; index < MX_RARE_COUNT; index++) {
        assert_string_equal (mx_rare_code (index), codes [index]);
        assert_int_equal (mx_rare_lookup (codes [index]), index);
    }
    assert_int_equal (mx_rare_lookup ("PSDT"), -1);
    assert_int_equal (mx_rare_lookup (NULL), -1);
}

//  WIRE §4: 48 FLOP subtypes besides FDEL, each found in exactly one table.
static void
test_tables_subtypes (void **state)
{
    (void) state;
    const char *seen [MX_F_COUNT + MX_SET_COUNT + MX_RARE_COUNT];
    size_t count = 0;
    for (int index = 0; index < MX_F_COUNT; index++) {
        const char *styp = mx_scalar_info (index)->styp;
        if (!*styp)
            continue;
        bool known = false;
        for (size_t other = 0; other < count; other++)
            known = known || strcmp (seen [other], styp) == 0;
        if (!known)
            seen [count++] = styp;
    }
    assert_int_equal (count, 34);
    for (int index = 0; index < MX_SET_COUNT; index++)
        seen [count++] = mx_set_info (index)->element;
    for (int index = 0; index < MX_RARE_COUNT; index++)
        seen [count++] = mx_rare_code (index);
    assert_int_equal (count, 48);
    for (size_t index = 0; index < count; index++)
        for (size_t other = index + 1; other < count; other++)
            assert_string_not_equal (seen [index], seen [other]);
}

//  ---------------------------------------------------------------------
//  Lifecycle

static void
test_flight_new_destroy (void **state)
{
    (void) state;
    mx_flight_t *flight = mx_flight_new (7);
    assert_int_equal (flight->flid, 7);
    for (int index = 0; index < MX_F_COUNT; index++)
        assert_null (flight->scalars [index]);
    for (int index = 0; index < MX_SET_COUNT; index++)
        assert_int_equal (flight->sets [index].count, 0);
    for (int index = 0; index < MX_RARE_COUNT; index++)
        assert_null (flight->rare [index]);
    assert_true (json_is_object (flight->extra));
    assert_int_equal (json_object_size (flight->extra), 0);
    assert_int_equal (flight->operation_day, -1);
    assert_int_equal (flight->state_version, 0);
    assert_int_equal (flight->last_msg_id, 0);
    assert_false (flight->deleted);
    assert_int_equal (flight->deleted_at, -1);
    mx_flight_destroy (&flight);
    assert_null (flight);
    mx_flight_destroy (&flight);
}

static void
test_flight_set_scalar (void **state)
{
    (void) state;
    mx_flight_t *flight = mx_flight_new (7);
    char value [] = "101";
    mx_flight_set_scalar (flight, MX_F_STND, value);
    value [0] = '9';                //  copied, not kept
    assert_string_equal (flight->scalars [MX_F_STND], "101");
    //  Setting a value to itself keeps it.
    mx_flight_set_scalar (flight, MX_F_STND, flight->scalars [MX_F_STND]);
    assert_string_equal (flight->scalars [MX_F_STND], "101");
    mx_flight_set_scalar (flight, MX_F_STND, NULL);
    assert_null (flight->scalars [MX_F_STND]);
    mx_flight_destroy (&flight);
}

static void
test_flight_set_set (void **state)
{
    (void) state;
    mx_set_t stands = { 0 };
    s_set_add (&stands, 3, (const char *[MX_SET_MAX_FIELDS]) { "C" });
    s_set_add (&stands, 1, (const char *[MX_SET_MAX_FIELDS]) { "A", "1000" });
    s_set_add (&stands, 2, (const char *[MX_SET_MAX_FIELDS]) { "B" });

    mx_flight_t *flight = mx_flight_new (7);
    mx_flight_set_set (flight, MX_SET_STAND, &stands);
    const mx_set_t *stored = &flight->sets [MX_SET_STAND];
    assert_int_equal (stored->count, 3);
    assert_int_equal (stored->records [0].key, 1);
    assert_int_equal (stored->records [1].key, 2);
    assert_int_equal (stored->records [2].key, 3);
    assert_string_equal (stored->records [0].values [0], "A");
    assert_string_equal (stored->records [0].values [1], "1000");
    assert_null (stored->records [0].values [2]);
    assert_string_equal (stored->records [2].values [0], "C");

    //  A deep copy: the source can change or go.
    stands.records [0].values [0][0] = 'X';
    mx_set_reset (&stands);
    assert_int_equal (stands.count, 0);
    assert_null (stands.records);
    assert_string_equal (stored->records [2].values [0], "C");

    //  Replacing by itself keeps the records.
    mx_flight_set_set (flight, MX_SET_STAND, &flight->sets [MX_SET_STAND]);
    assert_int_equal (flight->sets [MX_SET_STAND].count, 3);
    assert_string_equal (flight->sets [MX_SET_STAND].records [1].values [0], "B");

    mx_flight_set_set (flight, MX_SET_STAND, NULL);
    assert_int_equal (flight->sets [MX_SET_STAND].count, 0);
    mx_set_reset (&stands);
    mx_flight_destroy (&flight);
}

static void
test_set_equal (void **state)
{
    (void) state;
    mx_set_t a = { 0 }, b = { 0 }, empty = { 0 };
    assert_true (mx_set_equal (&a, &b));
    assert_true (mx_set_equal (NULL, &empty));
    assert_true (mx_set_equal (NULL, NULL));
    s_set_add (&a, 1, (const char *[MX_SET_MAX_FIELDS]) { "A", NULL, "5" });
    s_set_add (&b, 1, (const char *[MX_SET_MAX_FIELDS]) { "A", NULL, "5" });
    assert_true (mx_set_equal (&a, &b));
    assert_false (mx_set_equal (&a, NULL));
    assert_false (mx_set_equal (&a, &empty));

    //  A NULL field differs from any text, the empty one too.
    free (b.records [0].values [1]);
    b.records [0].values [1] = strdup ("");
    assert_false (mx_set_equal (&a, &b));
    free (b.records [0].values [1]);
    b.records [0].values [1] = NULL;
    free (b.records [0].values [2]);
    b.records [0].values [2] = strdup ("6");
    assert_false (mx_set_equal (&a, &b));
    free (b.records [0].values [2]);
    b.records [0].values [2] = strdup ("5");
    b.records [0].key = 2;
    assert_false (mx_set_equal (&a, &b));
    b.records [0].key = 1;
    assert_true (mx_set_equal (&a, &b));
    s_set_add (&b, 2, (const char *[MX_SET_MAX_FIELDS]) { "B" });
    assert_false (mx_set_equal (&a, &b));
    mx_set_reset (&a);
    mx_set_reset (&b);
}

static void
test_flight_dup (void **state)
{
    (void) state;
    mx_flight_t *flight = s_flight ();
    s_set_add_sample (&flight->sets [MX_SET_GATE], MX_SET_GATE, 1, 0);
    flight->rare [MX_RARE_TIPT] = json_pack ("{s:s}", "TIPN", "1");
    json_object_set_new (flight->extra, "ZZZZ", json_string ("z"));
    flight->deleted = true;
    flight->deleted_at = 1234;

    mx_flight_t *copy = mx_flight_dup (flight);
    s_assert_same (flight, copy);
    assert_int_equal (copy->flid, S_FLID);
    assert_int_equal (copy->operation_day, flight->operation_day);
    assert_int_equal (copy->state_version, 3);
    assert_int_equal (copy->last_msg_id, 100);
    assert_true (copy->deleted);
    assert_int_equal (copy->deleted_at, 1234);
    assert_ptr_not_equal (copy->scalars [MX_F_ALCD], flight->scalars [MX_F_ALCD]);
    assert_ptr_not_equal (copy->sets [MX_SET_GATE].records, flight->sets [MX_SET_GATE].records);
    assert_ptr_not_equal (copy->rare [MX_RARE_TIPT], flight->rare [MX_RARE_TIPT]);
    assert_ptr_not_equal (copy->extra, flight->extra);

    //  Changing the copy leaves the original alone.
    json_object_set_new (copy->extra, "ZZZZ", json_string ("y"));
    mx_flight_set_scalar (copy, MX_F_ALCD, "MU");
    assert_string_equal (flight->scalars [MX_F_ALCD], "CA");
    assert_string_equal (json_string_value (json_object_get (flight->extra, "ZZZZ")), "z");
    s_assert_changed (mx_flight_diff (flight, copy), "[\"ALCD\",\"EXTRA\"]");
    mx_flight_destroy (&copy);
    mx_flight_destroy (&flight);
}

static void
test_bodies_destroy (void **state)
{
    (void) state;
    mx_flop_t *flop = s_flop ("PSDT");
    flop->scalar_presence [MX_F_STND] = MX_PRESENT;
    flop->scalars [MX_F_STND] = strdup ("101");
    flop->set_presence [MX_SET_STAND] = MX_PRESENT;
    s_set_add_sample (&flop->sets [MX_SET_STAND], MX_SET_STAND, 1, 0);
    flop->rare_presence [MX_RARE_VIPF] = MX_PRESENT;
    flop->rare [MX_RARE_VIPF] = json_object ();
    json_object_set_new (flop->extra, "ZZZZ", json_string ("z"));
    mx_flop_destroy (&flop);
    assert_null (flop);
    mx_flop_destroy (&flop);

    mx_schedule_t *schedule = calloc (1, sizeof (mx_schedule_t));
    schedule->declared = 2;
    schedule->count = 2;
    schedule->records = calloc (2, sizeof (mx_fltr_t));
    schedule->records [0] = s_fltr ();
    schedule->records [0].ffid = strdup ("CA-CA101-A-23JAN210535-D");
    schedule->records [1] = s_fltr ();
    mx_schedule_destroy (&schedule);
    assert_null (schedule);
    mx_schedule_destroy (&schedule);
}

//  ---------------------------------------------------------------------
//  Operation day (WIRE §8)

static void
test_operation_day (void **state)
{
    (void) state;
    //  05:35 in Shanghai is 21:35 UTC the day before: the local date counts.
    int64_t sodt = mx_tz_local_to_utc (s_zone, 2021, 1, 23, 5, 35, 0);
    assert_int_equal (mx_flight_operation_day (s_zone, sodt, 0), s_day (2021, 1, 23));
    assert_int_equal (mx_flight_operation_day (s_utc, sodt, 0), s_day (2021, 1, 22));
    assert_int_equal (mx_flight_operation_day (s_zone, sodt, 5), s_day (2021, 1, 23));
    assert_int_equal (mx_flight_operation_day (s_zone, sodt, 6), s_day (2021, 1, 22));

    //  Around local midnight.
    int64_t midnight = mx_tz_local_to_utc (s_zone, 2021, 1, 24, 0, 0, 0);
    assert_int_equal (mx_flight_operation_day (s_zone, midnight, 0), s_day (2021, 1, 24));
    assert_int_equal (mx_flight_operation_day (s_zone, midnight - 60000, 0), s_day (2021, 1, 23));
    //  With cutoff 4 the day runs 04:00 .. 03:59 the next morning.
    int64_t early = mx_tz_local_to_utc (s_zone, 2021, 1, 24, 3, 59, 0);
    int64_t four = mx_tz_local_to_utc (s_zone, 2021, 1, 24, 4, 0, 0);
    assert_int_equal (mx_flight_operation_day (s_zone, early, 4), s_day (2021, 1, 23));
    assert_int_equal (mx_flight_operation_day (s_zone, four, 4), s_day (2021, 1, 24));
    //  Across a year end.
    int64_t new_year = mx_tz_local_to_utc (s_zone, 2021, 1, 1, 1, 30, 0);
    assert_int_equal (mx_flight_operation_day (s_zone, new_year, 2), s_day (2020, 12, 31));

    //  The cutoff is elapsed hours: on the spring-forward day in Berlin
    //  03:30 CEST minus 3 hours is 23:30 CET of the day before.
    int64_t spring = mx_tz_local_to_utc (s_berlin, 2021, 3, 28, 3, 30, 0);
    assert_int_equal (mx_flight_operation_day (s_berlin, spring, 3), s_day (2021, 3, 27));
    int64_t later = mx_tz_local_to_utc (s_berlin, 2021, 3, 28, 4, 30, 0);
    assert_int_equal (mx_flight_operation_day (s_berlin, later, 3), s_day (2021, 3, 28));
    //  Same instant, zones a day apart.
    int64_t evening = mx_tz_local_to_utc (s_berlin, 2021, 3, 27, 20, 0, 0);
    assert_int_equal (mx_flight_operation_day (s_berlin, evening, 0), s_day (2021, 3, 27));
    assert_int_equal (mx_flight_operation_day (s_zone, evening, 0), s_day (2021, 3, 28));
}

//  ---------------------------------------------------------------------
//  FLTR

static void
test_fltr_new_flight (void **state)
{
    (void) state;
    mx_fltr_t fltr = s_fltr ();
    mx_flight_set_scalar (fltr.flight, MX_F_STND, "101");
    mx_flight_set_scalar (fltr.flight, MX_F_MAXP, "180");
    s_set_add_sample (&fltr.flight->sets [MX_SET_CHECKIN], MX_SET_CHECKIN, 1, 0);
    fltr.flight->rare [MX_RARE_SRVT] = json_pack ("{s:s}", "SRTC", "ATN");
    json_object_set_new (fltr.flight->extra, "ZZZZ", json_string ("z"));

    json_t *changed = NULL;
    char *error = NULL;
    mx_flight_t *next = mx_flight_apply_fltr (NULL, &fltr, s_zone, 0, &changed, &error);
    assert_non_null (next);
    assert_null (error);
    s_assert_changed (changed, "[\"ALCD\",\"FLNO\",\"MVIN\",\"SODT\",\"FLTY\",\"FLIN\",\"ACFT\","
                               "\"MAXP\",\"STND\",\"CKDT\",\"SRVT\",\"EXTRA\",\"LIFECYCLE\"]");
    s_assert_same (fltr.flight, next);
    assert_int_equal (next->flid, S_FLID);
    assert_int_equal (next->operation_day, s_day (2021, 1, 23));
    assert_int_equal (next->state_version, 0);
    assert_int_equal (next->last_msg_id, 0);
    assert_false (next->deleted);
    assert_int_equal (next->deleted_at, -1);
    mx_flight_destroy (&next);

    //  The cutoff moves the day of a new flight.
    next = mx_flight_apply_fltr (NULL, &fltr, s_zone, 6, &changed, &error);
    assert_non_null (next);
    assert_int_equal (next->operation_day, s_day (2021, 1, 22));
    json_decref (changed);
    mx_flight_destroy (&next);
    mx_flight_destroy (&fltr.flight);
}

static void
test_fltr_existing_flight (void **state)
{
    (void) state;
    char text [24];
    mx_flight_t *current = s_flight ();
    mx_flight_set_scalar (current, MX_F_STND, "101");
    mx_flight_set_scalar (current, MX_F_REMC, "old remark");
    s_set_add_sample (&current->sets [MX_SET_GATE], MX_SET_GATE, 1, 0);
    current->rare [MX_RARE_PSHT] = json_pack ("{s:s}", "PSHN", "1");
    json_object_set_new (current->extra, "XYZW", json_string ("1"));

    //  The FLTR is the whole flight: what it lacks goes.
    mx_fltr_t fltr = s_fltr ();
    mx_flight_set_scalar (fltr.flight, MX_F_ACFT, "321");
    mx_flight_set_scalar (fltr.flight, MX_F_ESTT, s_time_text (text, s_zone, 2021, 1, 23, 5, 50));
    s_set_add_sample (&fltr.flight->sets [MX_SET_STAND], MX_SET_STAND, 1, 0);
    json_object_set_new (fltr.flight->extra, "ABCD", json_string ("2"));

    json_t *changed = NULL;
    char *error = NULL;
    mx_flight_t *next = mx_flight_apply_fltr (current, &fltr, s_zone, 0, &changed, &error);
    assert_non_null (next);
    assert_null (error);
    s_assert_changed (changed, "[\"ACFT\",\"STND\",\"REMC\",\"ESTT\",\"PSDT\",\"GTDT\",\"PSHT\","
                               "\"EXTRA\"]");
    assert_string_equal (next->scalars [MX_F_ACFT], "321");
    assert_null (next->scalars [MX_F_STND]);
    assert_null (next->scalars [MX_F_REMC]);
    assert_string_equal (next->scalars [MX_F_ESTT], text);
    assert_int_equal (next->sets [MX_SET_GATE].count, 0);
    assert_int_equal (next->sets [MX_SET_STAND].count, 1);
    assert_null (next->rare [MX_RARE_PSHT]);
    assert_int_equal (json_object_size (next->extra), 1);
    assert_string_equal (json_string_value (json_object_get (next->extra, "ABCD")), "2");
    //  Bookkeeping comes from the current state; the caller bumps.
    assert_int_equal (next->operation_day, s_day (2021, 1, 23));
    assert_int_equal (next->state_version, 3);
    assert_int_equal (next->last_msg_id, 100);
    assert_false (next->deleted);
    //  The inputs are untouched.
    assert_string_equal (current->scalars [MX_F_STND], "101");
    assert_int_equal (current->sets [MX_SET_GATE].count, 1);

    //  The same FLTR again changes nothing.
    mx_flight_t *again = mx_flight_apply_fltr (next, &fltr, s_zone, 0, &changed, &error);
    assert_non_null (again);
    s_assert_changed (changed, "[]");
    s_assert_same (next, again);
    mx_flight_destroy (&again);

    //  A later SODT on the same operation day is a plain change.
    mx_flight_set_scalar (fltr.flight, MX_F_SODT, s_time_text (text, s_zone, 2021, 1, 23, 23, 59));
    again = mx_flight_apply_fltr (next, &fltr, s_zone, 0, &changed, &error);
    assert_non_null (again);
    s_assert_changed (changed, "[\"SODT\"]");
    mx_flight_destroy (&again);

    mx_flight_destroy (&next);
    mx_flight_destroy (&current);
    mx_flight_destroy (&fltr.flight);
}

static void
test_fltr_cross_day (void **state)
{
    (void) state;
    char text [24];
    mx_flight_t *current = s_flight ();
    mx_fltr_t fltr = s_fltr ();
    mx_flight_set_scalar (fltr.flight, MX_F_SODT, s_time_text (text, s_zone, 2021, 1, 24, 0, 5));
    //  *changed is NULL on refusal, whatever it held.
    json_t *held = json_array ();
    json_t *changed = held;
    char *error = NULL;
    mx_flight_t *next = mx_flight_apply_fltr (current, &fltr, s_zone, 0, &changed, &error);
    assert_null (next);
    assert_null (changed);
    json_decref (held);
    assert_string_equal (error, "cross-day FLID 42");
    free (error);
    error = NULL;

    //  With cutoff 1, 00:05 still belongs to the 23rd ...
    next = mx_flight_apply_fltr (current, &fltr, s_zone, 1, &changed, &error);
    assert_non_null (next);
    assert_null (error);
    s_assert_changed (changed, "[\"SODT\"]");
    mx_flight_destroy (&next);

    //  ... and with cutoff 6, 05:35 itself belongs to the 22nd.
    mx_flight_set_scalar (fltr.flight, MX_F_SODT, current->scalars [MX_F_SODT]);
    next = mx_flight_apply_fltr (current, &fltr, s_zone, 6, &changed, &error);
    assert_null (next);
    assert_string_equal (error, "cross-day FLID 42");
    free (error);
    error = NULL;

    //  A deleted flight keeps its day as well.
    current->deleted = true;
    current->deleted_at = 5000;
    mx_flight_set_scalar (fltr.flight, MX_F_SODT, s_time_text (text, s_zone, 2021, 1, 25, 9, 0));
    next = mx_flight_apply_fltr (current, &fltr, s_zone, 0, &changed, &error);
    assert_null (next);
    assert_string_equal (error, "cross-day FLID 42");
    free (error);
    error = NULL;

    //  No SODT: no day to compare, refused with a reason.
    mx_flight_set_scalar (fltr.flight, MX_F_SODT, NULL);
    next = mx_flight_apply_fltr (NULL, &fltr, s_zone, 0, &changed, &error);
    assert_null (next);
    assert_null (changed);
    assert_non_null (error);
    assert_non_null (strstr (error, "SODT"));
    free (error);
    //  Without a place for the reason.
    assert_null (mx_flight_apply_fltr (NULL, &fltr, s_zone, 0, &changed, NULL));
    mx_flight_destroy (&current);
    mx_flight_destroy (&fltr.flight);
}

static void
test_fltr_deleted_flight (void **state)
{
    (void) state;
    mx_flight_t *current = s_flight ();
    current->deleted = true;
    current->deleted_at = 1611351300000;
    mx_fltr_t fltr = s_fltr ();
    json_t *changed = NULL;
    char *error = NULL;
    mx_flight_t *next = mx_flight_apply_fltr (current, &fltr, s_zone, 0, &changed, &error);
    assert_non_null (next);
    //  A new schedule is authoritative: the flight is back.
    s_assert_changed (changed, "[\"LIFECYCLE\"]");
    assert_false (next->deleted);
    assert_int_equal (next->deleted_at, -1);
    assert_int_equal (next->state_version, 3);
    mx_flight_destroy (&next);
    mx_flight_destroy (&current);
    mx_flight_destroy (&fltr.flight);
}

//  ---------------------------------------------------------------------
//  FLOP

//  The changed list of the scalars of one subtype, in table order;
//  first_only: just the first of them.
static void
s_styp_codes (const char *styp, bool first_only, char *text, size_t size)
{
    snprintf (text, size, "[");
    for (int index = 0; index < MX_F_COUNT; index++)
        if (strcmp (mx_scalar_info (index)->styp, styp) == 0) {
            size_t used = strlen (text);
            snprintf (text + used, size - used, "%s\"%s\"", used > 1? ",": "",
                      mx_scalar_info (index)->code);
            if (first_only)
                break;
        }
    size_t used = strlen (text);
    snprintf (text + used, size - used, "]");
}

//  A FLOP of styp touching its scalars: how (PRESENT with sample values
//  of salt, or CLEARED); first_only: only the first, the others ABSENT.
static mx_flop_t *
s_scalar_flop (const char *styp, mx_presence_t how, int salt, bool first_only)
{
    mx_flop_t *flop = s_flop (styp);
    for (int index = 0; index < MX_F_COUNT; index++)
        if (strcmp (mx_scalar_info (index)->styp, styp) == 0) {
            char text [24];
            flop->scalar_presence [index] = how;
            if (how == MX_PRESENT)
                flop->scalars [index] =
                    strdup (s_sample (mx_scalar_info (index)->type, salt + index, text));
            if (first_only)
                break;
        }
    return flop;
}

static void
s_check_scalar_styp (const char *styp)
{
    char codes [256], first [64];
    s_styp_codes (styp, false, codes, sizeof codes);
    s_styp_codes (styp, true, first, sizeof first);
    json_t *changed = NULL;
    mx_flight_t *current = s_flight ();

    //  Set.
    mx_flop_t *flop = s_scalar_flop (styp, MX_PRESENT, 1, false);
    mx_flight_t *set = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, codes);
    for (int index = 0; index < MX_F_COUNT; index++)
        if (flop->scalar_presence [index] == MX_PRESENT)
            assert_string_equal (set->scalars [index], flop->scalars [index]);
        else
            assert_true (!current->scalars [index]
                         || strcmp (set->scalars [index], current->scalars [index]) == 0);
    assert_int_equal (set->state_version, current->state_version);
    assert_int_equal (set->last_msg_id, current->last_msg_id);
    assert_int_equal (set->operation_day, current->operation_day);

    //  The same values again: no change.
    mx_flight_t *same = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, "[]");
    s_assert_same (set, same);
    mx_flight_destroy (&same);
    mx_flop_destroy (&flop);

    //  Only the first element present: the others stay as they are.
    flop = s_scalar_flop (styp, MX_PRESENT, 20, true);
    mx_flight_t *partial = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, first);
    for (int index = 0; index < MX_F_COUNT; index++)
        if (flop->scalar_presence [index] == MX_ABSENT)
            assert_true (s_text_equal_for_test (partial->scalars [index], set->scalars [index]));
    mx_flight_destroy (&partial);
    mx_flop_destroy (&flop);

    //  Nothing present: unchanged.
    flop = s_flop (styp);
    mx_flight_t *absent = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, "[]");
    s_assert_same (set, absent);
    mx_flight_destroy (&absent);
    mx_flop_destroy (&flop);

    //  Cleared: NULL, then clearing again changes nothing.
    flop = s_scalar_flop (styp, MX_CLEARED, 0, false);
    mx_flight_t *cleared = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, codes);
    for (int index = 0; index < MX_F_COUNT; index++)
        if (flop->scalar_presence [index] == MX_CLEARED)
            assert_null (cleared->scalars [index]);
    same = mx_flight_apply_flop (cleared, flop, &changed);
    s_assert_changed (changed, "[]");
    mx_flight_destroy (&same);
    mx_flight_destroy (&cleared);
    mx_flop_destroy (&flop);

    mx_flight_destroy (&set);
    mx_flight_destroy (&current);
}

//  Every subtype of mx_flight_fields.def: set, no-op, partial, absent,
//  clear.
static void
test_flop_scalars_every_styp (void **state)
{
    (void) state;
    size_t checked = 0;
    for (int index = 0; index < MX_F_COUNT; index++) {
        const char *styp = mx_scalar_info (index)->styp;
        if (!*styp)
            continue;
        //  The first scalar of its subtype stands for the group.
        bool first = true;
        for (int other = 0; other < index; other++)
            first = first && strcmp (mx_scalar_info (other)->styp, styp) != 0;
        if (first) {
            s_check_scalar_styp (styp);
            checked++;
        }
    }
    assert_int_equal (checked, 34);
}

//  Subtypes carrying several elements, by name.
static void
test_flop_scalar_groups (void **state)
{
    (void) state;
    json_t *changed = NULL;
    mx_flight_t *current = s_flight ();
    mx_flight_set_scalar (current, MX_F_FHAG, "11");
    mx_flight_set_scalar (current, MX_F_MHAG, "12");

    //  HNAG with PHAG only: FHAG and MHAG stay.
    mx_flop_t *flop = s_flop ("HNAG");
    flop->scalar_presence [MX_F_PHAG] = MX_PRESENT;
    flop->scalars [MX_F_PHAG] = strdup ("10");
    mx_flight_t *next = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, "[\"PHAG\"]");
    assert_string_equal (next->scalars [MX_F_PHAG], "10");
    assert_string_equal (next->scalars [MX_F_FHAG], "11");
    assert_string_equal (next->scalars [MX_F_MHAG], "12");
    mx_flight_destroy (&next);

    //  HNAG clearing MHAG, setting FHAG to its value: only MHAG changes.
    flop->scalar_presence [MX_F_PHAG] = MX_ABSENT;
    flop->scalar_presence [MX_F_FHAG] = MX_PRESENT;
    flop->scalars [MX_F_FHAG] = strdup ("11");
    flop->scalar_presence [MX_F_MHAG] = MX_CLEARED;
    next = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, "[\"MHAG\"]");
    assert_null (next->scalars [MX_F_MHAG]);
    assert_string_equal (next->scalars [MX_F_FHAG], "11");
    mx_flight_destroy (&next);
    mx_flop_destroy (&flop);

    //  CNCL empty: the cancellation is undone.
    char text [24];
    mx_flight_set_scalar (current, MX_F_CNCL, s_time_text (text, s_zone, 2021, 1, 23, 4, 0));
    flop = s_flop ("CNCL");
    flop->scalar_presence [MX_F_CNCL] = MX_CLEARED;
    next = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, "[\"CNCL\"]");
    assert_null (next->scalars [MX_F_CNCL]);
    mx_flight_destroy (&next);
    mx_flop_destroy (&flop);

    //  PORT: open and close times, together.
    flop = s_flop ("PORT");
    flop->scalar_presence [MX_F_PORT_OPEN] = MX_PRESENT;
    flop->scalars [MX_F_PORT_OPEN] = strdup (s_time_text (text, s_zone, 2021, 1, 23, 5, 0));
    flop->scalar_presence [MX_F_PORT_CLOSE] = MX_CLEARED;
    next = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, "[\"PORT_OPEN\"]");
    assert_string_equal (next->scalars [MX_F_PORT_OPEN], text);
    mx_flight_destroy (&next);
    mx_flop_destroy (&flop);
    mx_flight_destroy (&current);
}

//  Every set of mx_flight_sets.def: replace (sorted), no-op in any order,
//  change one field, absent, empty element, cleared.
static void
s_check_set (mx_set_kind_t kind)
{
    const mx_set_info_t *info = mx_set_info (kind);
    char codes [32];
    snprintf (codes, sizeof codes, "[\"%s\"]", info->element);
    json_t *changed = NULL;
    mx_flight_t *current = s_flight ();

    mx_flop_t *flop = s_flop (info->element);
    flop->set_presence [kind] = MX_PRESENT;
    s_set_add_sample (&flop->sets [kind], kind, 2, 10);
    s_set_add_sample (&flop->sets [kind], kind, 1, 0);
    mx_flight_t *set = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, codes);
    const mx_set_t *records = &set->sets [kind];
    assert_int_equal (records->count, 2);
    assert_int_equal (records->records [0].key, 1);
    assert_int_equal (records->records [1].key, 2);
    for (size_t field = 0; field < info->field_count; field++) {
        assert_string_equal (records->records [0].values [field],
                             flop->sets [kind].records [1].values [field]);
        assert_string_equal (records->records [1].values [field],
                             flop->sets [kind].records [0].values [field]);
    }
    mx_flop_destroy (&flop);

    //  The same records, in key order this time: no change.
    flop = s_flop (info->element);
    flop->set_presence [kind] = MX_PRESENT;
    s_set_add_sample (&flop->sets [kind], kind, 1, 0);
    s_set_add_sample (&flop->sets [kind], kind, 2, 10);
    mx_flight_t *same = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, "[]");
    mx_flight_destroy (&same);

    //  One field of one record differs: the whole set is replaced.
    mx_set_record_t *last = &flop->sets [kind].records [1];
    size_t field = info->field_count - 1;
    free (last->values [field]);
    last->values [field] = NULL;
    mx_flight_t *replaced = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, codes);
    assert_null (replaced->sets [kind].records [1].values [field]);
    mx_flight_destroy (&replaced);
    mx_flop_destroy (&flop);

    //  Absent: unchanged.
    flop = s_flop (info->element);
    mx_flight_t *absent = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, "[]");
    assert_int_equal (absent->sets [kind].count, 2);
    mx_flight_destroy (&absent);

    //  Present with no records (empty element): empty set.
    flop->set_presence [kind] = MX_PRESENT;
    mx_flight_t *empty = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, codes);
    assert_int_equal (empty->sets [kind].count, 0);
    same = mx_flight_apply_flop (empty, flop, &changed);
    s_assert_changed (changed, "[]");
    mx_flight_destroy (&same);
    mx_flight_destroy (&empty);

    //  Cleared: empty set as well.
    flop->set_presence [kind] = MX_CLEARED;
    mx_flight_t *cleared = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, codes);
    assert_int_equal (cleared->sets [kind].count, 0);
    assert_null (cleared->sets [kind].records);
    mx_flight_destroy (&cleared);
    mx_flop_destroy (&flop);

    //  The input flight is untouched by all of it.
    assert_int_equal (set->sets [kind].count, 2);
    mx_flight_destroy (&set);
    mx_flight_destroy (&current);
}

static void
test_flop_sets_every_element (void **state)
{
    (void) state;
    for (int kind = 0; kind < MX_SET_COUNT; kind++)
        s_check_set (kind);
}

//  DELY: key is the position; the order of the wire is the order kept.
static void
test_flop_delay (void **state)
{
    (void) state;
    char text [24];
    s_time_text (text, s_zone, 2003, 12, 15, 16, 5);
    mx_flop_t *flop = s_flop ("DELY");
    flop->set_presence [MX_SET_DELAY] = MX_PRESENT;
    s_set_add (&flop->sets [MX_SET_DELAY], 1,
               (const char *[MX_SET_MAX_FIELDS]) { "YY", text, "120", "YYYYYYY" });
    s_set_add (&flop->sets [MX_SET_DELAY], 2,
               (const char *[MX_SET_MAX_FIELDS]) { "XX", text, "121", "XXXXXXX" });
    mx_flight_t *current = s_flight ();
    json_t *changed = NULL;
    mx_flight_t *next = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, "[\"DELY\"]");
    assert_int_equal (next->sets [MX_SET_DELAY].count, 2);
    assert_string_equal (next->sets [MX_SET_DELAY].records [0].values [0], "YY");
    assert_string_equal (next->sets [MX_SET_DELAY].records [1].values [3], "XXXXXXX");

    //  Swapping the two reasons is a change.
    mx_set_record_t *records = flop->sets [MX_SET_DELAY].records;
    char *swap = records [0].values [0];
    records [0].values [0] = records [1].values [0];
    records [1].values [0] = swap;
    mx_flight_t *swapped = mx_flight_apply_flop (next, flop, &changed);
    s_assert_changed (changed, "[\"DELY\"]");
    assert_string_equal (swapped->sets [MX_SET_DELAY].records [0].values [0], "XX");
    mx_flight_destroy (&swapped);
    mx_flight_destroy (&next);
    mx_flight_destroy (&current);
    mx_flop_destroy (&flop);
}

static void
s_check_rare (mx_rare_t rare)
{
    const char *code = mx_rare_code (rare);
    char codes [32];
    snprintf (codes, sizeof codes, "[\"%s\"]", code);
    json_t *changed = NULL;
    mx_flight_t *current = s_flight ();

    mx_flop_t *flop = s_flop (code);
    flop->rare_presence [rare] = MX_PRESENT;
    flop->rare [rare] = json_pack ("{s:s,s:s}", "K1", "v1", "K2", "由于机器问题");
    mx_flight_t *set = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, codes);
    assert_true (json_equal (set->rare [rare], flop->rare [rare]));
    assert_ptr_not_equal (set->rare [rare], flop->rare [rare]);
    for (int other = 0; other < MX_RARE_COUNT; other++)
        if (other != (int) rare)
            assert_null (set->rare [other]);

    //  Equal content: no change.
    mx_flight_t *same = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, "[]");
    mx_flight_destroy (&same);

    //  Different content replaces it.
    json_object_set_new (flop->rare [rare], "K2", json_string ("v2"));
    mx_flight_t *other = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, codes);
    assert_string_equal (json_string_value (json_object_get (other->rare [rare], "K2")), "v2");
    mx_flight_destroy (&other);

    //  Absent: unchanged.
    json_decref (flop->rare [rare]);
    flop->rare [rare] = NULL;
    flop->rare_presence [rare] = MX_ABSENT;
    mx_flight_t *absent = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, "[]");
    assert_non_null (absent->rare [rare]);
    mx_flight_destroy (&absent);

    //  Cleared: NULL, and again no change.
    flop->rare_presence [rare] = MX_CLEARED;
    mx_flight_t *cleared = mx_flight_apply_flop (set, flop, &changed);
    s_assert_changed (changed, codes);
    assert_null (cleared->rare [rare]);
    same = mx_flight_apply_flop (cleared, flop, &changed);
    s_assert_changed (changed, "[]");
    mx_flight_destroy (&same);
    mx_flight_destroy (&cleared);
    mx_flop_destroy (&flop);
    mx_flight_destroy (&set);
    mx_flight_destroy (&current);
}

static void
test_flop_rare_every_element (void **state)
{
    (void) state;
    for (int rare = 0; rare < MX_RARE_COUNT; rare++)
        s_check_rare (rare);
}

static void
test_flop_extra_merge (void **state)
{
    (void) state;
    json_t *changed = NULL;
    mx_flight_t *current = s_flight ();
    json_object_set_new (current->extra, "AAAA", json_string ("1"));
    json_object_set_new (current->extra, "BBBB", json_string ("2"));

    mx_flop_t *flop = s_flop ("STND");
    json_object_set_new (flop->extra, "BBBB", json_string ("3"));
    json_object_set_new (flop->extra, "CCCC", json_string ("4"));
    mx_flight_t *next = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, "[\"EXTRA\"]");
    char *text = s_dump (next->extra);
    assert_string_equal (text, "{\"AAAA\":\"1\",\"BBBB\":\"3\",\"CCCC\":\"4\"}");
    free (text);

    //  The same unknown values again: no change.
    mx_flight_t *same = mx_flight_apply_flop (next, flop, &changed);
    s_assert_changed (changed, "[]");
    mx_flight_destroy (&same);

    //  A null value takes the key away.
    json_object_clear (flop->extra);
    json_object_set_new (flop->extra, "AAAA", json_null ());
    mx_flight_t *removed = mx_flight_apply_flop (next, flop, &changed);
    s_assert_changed (changed, "[\"EXTRA\"]");
    text = s_dump (removed->extra);
    assert_string_equal (text, "{\"BBBB\":\"3\",\"CCCC\":\"4\"}");
    free (text);
    mx_flight_destroy (&removed);

    //  Nothing unknown: extra untouched.
    json_object_clear (flop->extra);
    same = mx_flight_apply_flop (next, flop, &changed);
    s_assert_changed (changed, "[]");
    assert_int_equal (json_object_size (same->extra), 3);
    mx_flight_destroy (&same);
    mx_flight_destroy (&next);
    mx_flop_destroy (&flop);
    mx_flight_destroy (&current);
}

//  A FLOP touching several kinds of values: the order of "changed" is
//  scalars in table order, sets, rare sets, EXTRA.
static void
test_flop_changed_order (void **state)
{
    (void) state;
    mx_flop_t *flop = s_flop ("STND");
    flop->rare_presence [MX_RARE_VIPF] = MX_PRESENT;
    flop->rare [MX_RARE_VIPF] = json_pack ("{s:s}", "VPCD", "1");
    json_object_set_new (flop->extra, "QQQQ", json_string ("q"));
    flop->set_presence [MX_SET_EROUTE] = MX_PRESENT;
    s_set_add_sample (&flop->sets [MX_SET_EROUTE], MX_SET_EROUTE, 1, 0);
    flop->set_presence [MX_SET_STAND] = MX_PRESENT;
    s_set_add_sample (&flop->sets [MX_SET_STAND], MX_SET_STAND, 1, 0);
    flop->scalar_presence [MX_F_NAAT] = MX_PRESENT;
    flop->scalars [MX_F_NAAT] = strdup ("1611351300000");
    flop->scalar_presence [MX_F_STND] = MX_PRESENT;
    flop->scalars [MX_F_STND] = strdup ("101");
    flop->scalar_presence [MX_F_FLTY] = MX_CLEARED;
    flop->rare_presence [MX_RARE_PSHT] = MX_CLEARED;       //  already NULL
    mx_flight_t *current = s_flight ();
    json_t *changed = NULL;
    mx_flight_t *next = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, "[\"FLTY\",\"STND\",\"NAAT\",\"PSDT\",\"ERUT\",\"VIPF\",\"EXTRA\"]");
    //  In place: the same state, and what changed is what mx_flight_diff
    //  says of the two; once more, nothing.
    mx_flight_t *in_place = mx_flight_dup (current);
    changed = mx_flight_apply_flop_into (in_place, flop);
    s_assert_same (next, in_place);
    char *said = s_dump (changed);
    json_t *diff = mx_flight_diff (current, in_place);
    char *diffed = s_dump (diff);
    assert_string_equal (said, diffed);
    free (said);
    free (diffed);
    json_decref (diff);
    json_decref (changed);
    s_assert_changed (mx_flight_apply_flop_into (in_place, flop), "[]");
    mx_flight_destroy (&in_place);
    mx_flight_destroy (&next);
    mx_flight_destroy (&current);
    mx_flop_destroy (&flop);
}

//  FLOPs apply to a flight as it is, also a deleted one (the processor
//  skips those before): values change, the lifecycle does not.
static void
test_flop_keeps_lifecycle (void **state)
{
    (void) state;
    mx_flight_t *current = s_flight ();
    current->deleted = true;
    current->deleted_at = 77;
    mx_flop_t *flop = s_scalar_flop ("STND", MX_PRESENT, 0, false);
    json_t *changed = NULL;
    mx_flight_t *next = mx_flight_apply_flop (current, flop, &changed);
    s_assert_changed (changed, "[\"STND\"]");
    assert_true (next->deleted);
    assert_int_equal (next->deleted_at, 77);
    mx_flight_destroy (&next);
    mx_flop_destroy (&flop);
    mx_flight_destroy (&current);
}

//  ---------------------------------------------------------------------
//  FDEL

static void
test_fdel (void **state)
{
    (void) state;
    mx_flight_t *current = s_flight ();
    json_t *changed = NULL;
    mx_flight_t *deleted = mx_flight_apply_fdel (current, 1611351300000, &changed);
    s_assert_changed (changed, "[\"LIFECYCLE\"]");
    assert_true (deleted->deleted);
    assert_int_equal (deleted->deleted_at, 1611351300000);
    assert_string_equal (deleted->scalars [MX_F_ALCD], "CA");
    assert_int_equal (deleted->state_version, 3);
    assert_false (current->deleted);

    //  Already deleted: no change, the first time stays.
    mx_flight_t *again = mx_flight_apply_fdel (deleted, 1611351400000, &changed);
    s_assert_changed (changed, "[]");
    assert_true (again->deleted);
    assert_int_equal (again->deleted_at, 1611351300000);
    mx_flight_destroy (&again);
    mx_flight_destroy (&deleted);
    mx_flight_destroy (&current);
}

//  ---------------------------------------------------------------------
//  Diff

static void
test_diff (void **state)
{
    (void) state;
    mx_flight_t *before = s_flight ();
    mx_flight_t *after = mx_flight_dup (before);
    s_assert_changed (mx_flight_diff (before, after), "[]");

    //  Bookkeeping is not business state.
    after->state_version = 9;
    after->last_msg_id = 9;
    s_assert_changed (mx_flight_diff (before, after), "[]");

    mx_flight_set_scalar (after, MX_F_PAXC, "150");
    mx_flight_set_scalar (after, MX_F_ALCD, "MU");
    s_set_add_sample (&after->sets [MX_SET_CHOCK], MX_SET_CHOCK, 1, 0);
    s_set_add_sample (&after->sets [MX_SET_CAROUSEL], MX_SET_CAROUSEL, 1, 0);
    after->rare [MX_RARE_TIPT] = json_object ();
    json_object_set_new (after->extra, "ZZZZ", json_string (""));
    after->deleted = true;
    after->deleted_at = 1;
    s_assert_changed (mx_flight_diff (before, after),
                      "[\"ALCD\",\"PAXC\",\"CLDT\",\"CHOT\",\"TIPT\",\"EXTRA\",\"LIFECYCLE\"]");
    //  An empty text is a value, unlike NULL.
    mx_flight_set_scalar (before, MX_F_REMC, "");
    s_assert_changed (mx_flight_diff (before, after),
                      "[\"ALCD\",\"REMC\",\"PAXC\",\"CLDT\",\"CHOT\",\"TIPT\",\"EXTRA\","
                      "\"LIFECYCLE\"]");

    //  From nothing: every value present, and the lifecycle.
    s_assert_changed (mx_flight_diff (NULL, before),
                      "[\"ALCD\",\"FLNO\",\"MVIN\",\"SODT\",\"FLTY\",\"FLIN\",\"ACFT\",\"REMC\","
                      "\"LIFECYCLE\"]");
    mx_flight_destroy (&after);
    mx_flight_destroy (&before);
}

//  ---------------------------------------------------------------------
//  Documents

//  A small flight with a value of every kind.
static mx_flight_t *
s_doc_flight (void)
{
    char text [24], strt [24];
    mx_flight_t *flight = mx_flight_new (S_FLID);
    mx_flight_set_scalar (flight, MX_F_ALCD, "CA");
    mx_flight_set_scalar (flight, MX_F_FLNO, "CA101");
    mx_flight_set_scalar (flight, MX_F_MVIN, "A");
    mx_flight_set_scalar (flight, MX_F_SODT, s_time_text (text, s_zone, 2021, 1, 23, 5, 35));
    mx_flight_set_scalar (flight, MX_F_MAXP, "180");
    mx_flight_set_scalar (flight, MX_F_STND, "101");
    mx_flight_set_scalar (flight, MX_F_REMC, "天气原因");
    mx_flight_set_scalar (flight, MX_F_PAXC, "0");
    s_time_text (text, s_zone, 2021, 1, 23, 5, 40);
    s_set_add (&flight->sets [MX_SET_STAND], 1, (const char *[MX_SET_MAX_FIELDS]) { "101", text });
    s_time_text (strt, s_zone, 2021, 1, 23, 6, 0);
    s_set_add (&flight->sets [MX_SET_DELAY], 1,
               (const char *[MX_SET_MAX_FIELDS]) { "YY", strt, "90", "WX" });
    flight->rare [MX_RARE_PSHT] = json_pack ("{s:s,s:s}", "PSHN", "1", "PSID", "IN");
    json_object_set_new (flight->extra, "ZZZZ", json_string ("z"));
    flight->operation_day = s_day (2021, 1, 23);
    flight->state_version = 2;
    flight->last_msg_id = 17;
    return flight;
}

//  The document text of s_doc_flight after the members named.
#define S_DOC_SCALARS \
    "\"ALCD\":\"CA\",\"ALSC\":null,\"FLNO\":\"CA101\",\"MVIN\":\"A\"," \
    "\"SODT\":\"2021-01-23T05:35:00+08:00\",\"FLTY\":null,\"FLIN\":null,\"ACFT\":null," \
    "\"RENO\":null,\"TRML\":null,\"MAXP\":180,\"RUNW\":null,\"STND\":\"101\",\"TAOP\":null," \
    "\"TAFL\":null,\"TAID\":null,\"CSOP\":null,\"CSFT\":null,\"MAID\":null,\"PHAG\":null," \
    "\"FHAG\":null,\"MHAG\":null,\"EXSC\":null,\"EXSR\":null,\"FTSS\":null," \
    "\"REMC\":\"天气原因\",\"VIPP\":null,\"VIPR\":null,\"CNCL\":null,\"FDIV_DDES\":null," \
    "\"FDIV_DDIR\":null,\"FDIV\":null,\"FRET_REID\":null,\"FRET\":null,\"FLAB_ARES\":null," \
    "\"FLAB\":null,\"ESTT\":null,\"ACTT\":null,\"APPT\":null,\"BOTM\":null,\"LACL\":null," \
    "\"FINT\":null,\"EGSR\":null,\"EGST\":null,\"COBT\":null,\"CTOT\":null,\"EOBT\":null," \
    "\"TOBT\":null,\"IEST\":null,\"PEDT\":null,\"NEAT\":null,\"PADT\":null,\"NAAT\":null," \
    "\"PORT_OPEN\":null,\"PORT_CLOSE\":null,\"LBNO\":null,\"LBWT\":null,\"PAXC\":0," \
    "\"PSDT\":[{\"PSNO\":1,\"PSST\":\"101\",\"STST\":\"2021-01-23T05:40:00+08:00\",\"STET\":null}]," \
    "\"GTDT\":[],\"CKDT\":[],\"CLDT\":[],\"CHDT\":[],\"ABTM\":[],\"CHOT\":[]," \
    "\"DELY\":[{\"SEQ\":1,\"CODE\":\"YY\",\"STRT\":\"2021-01-23T06:00:00+08:00\",\"DURA\":90," \
    "\"REASON\":\"WX\"}],\"ROUT\":[],\"ERUT\":[]," \
    "\"PSHT\":{\"PSHN\":\"1\",\"PSID\":\"IN\"},\"TIPT\":null,\"SRVT\":null,\"VIPF\":null," \
    "\"extra\":{\"ZZZZ\":\"z\"}"

static void
test_state_doc (void **state)
{
    (void) state;
    mx_flight_t *flight = s_doc_flight ();
    json_t *doc = mx_flight_state_doc (flight, s_zone);
    char *text = s_dump (doc);
    assert_string_equal (text,
        "{\"flid\":42,\"operation_day\":\"2021-01-23\",\"state_version\":2,"
        "\"lifecycle\":\"ACTIVE\",\"deleted_at\":null," S_DOC_SCALARS "}");
    free (text);
    //  The document holds copies.
    assert_ptr_not_equal (json_object_get (doc, "PSHT"), flight->rare [MX_RARE_PSHT]);
    assert_ptr_not_equal (json_object_get (doc, "extra"), flight->extra);
    json_decref (doc);

    //  Deleted, in another zone: times follow the zone's offset.
    flight->deleted = true;
    flight->deleted_at = mx_tz_local_to_utc (s_zone, 2021, 1, 23, 7, 0, 0) + 250;
    doc = mx_flight_state_doc (flight, s_utc);
    assert_string_equal (json_string_value (json_object_get (doc, "lifecycle")), "DELETED");
    assert_string_equal (json_string_value (json_object_get (doc, "deleted_at")),
                         "2021-01-22T23:00:00.250+00:00");
    assert_string_equal (json_string_value (json_object_get (doc, "SODT")),
                         "2021-01-22T21:35:00+00:00");
    //  The operation day is the stored one, whatever the zone.
    assert_string_equal (json_string_value (json_object_get (doc, "operation_day")), "2021-01-23");
    json_decref (doc);
    mx_flight_destroy (&flight);
}

static void
test_state_doc_edges (void **state)
{
    (void) state;
    //  Not derived yet: null day; a value that is not canonical is kept as
    //  text rather than lost.
    mx_flight_t *flight = mx_flight_new (5);
    mx_flight_set_scalar (flight, MX_F_MAXP, "many");
    mx_flight_set_scalar (flight, MX_F_ESTT, "soon");
    mx_flight_set_scalar (flight, MX_F_TAID, "-12");
    json_decref (flight->extra);
    flight->extra = NULL;
    json_t *doc = mx_flight_state_doc (flight, s_zone);
    assert_true (json_is_null (json_object_get (doc, "operation_day")));
    assert_string_equal (json_string_value (json_object_get (doc, "MAXP")), "many");
    assert_string_equal (json_string_value (json_object_get (doc, "ESTT")), "soon");
    assert_int_equal (json_integer_value (json_object_get (doc, "TAID")), -12);
    assert_true (json_is_object (json_object_get (doc, "extra")));
    assert_int_equal (json_object_size (doc), 5 + MX_F_COUNT + MX_SET_COUNT + MX_RARE_COUNT + 1);
    json_decref (doc);
    mx_flight_destroy (&flight);

    //  Keys of rare sets and extra come out sorted, so a state read back
    //  from jsonb gives the same text as one decoded from the wire.
    flight = mx_flight_new (5);
    flight->rare [MX_RARE_SRVT] = json_pack ("{s:s,s:[{s:s,s:s}],s:s}", "SRTC", "ATN",
                                             "LIST", "B", "2", "A", "1", "ABCD", "x");
    json_object_set_new (flight->extra, "ZZZZ", json_string ("z"));
    json_object_set_new (flight->extra, "AAAA", json_string ("a"));
    doc = mx_flight_state_doc (flight, s_zone);
    char *text = s_dump (json_object_get (doc, "SRVT"));
    assert_string_equal (text,
        "{\"ABCD\":\"x\",\"LIST\":[{\"A\":\"1\",\"B\":\"2\"}],\"SRTC\":\"ATN\"}");
    free (text);
    text = s_dump (json_object_get (doc, "extra"));
    assert_string_equal (text, "{\"AAAA\":\"a\",\"ZZZZ\":\"z\"}");
    free (text);
    json_decref (doc);
    mx_flight_destroy (&flight);
}

static void
test_msg_doc (void **state)
{
    (void) state;
    mx_flight_t *flight = s_doc_flight ();
    flight->state_version = 3;
    mx_event_meta_t meta = {
        .event_id = 0, .msg_id = 17, .type = "FLOP", .styp = "STND", .seqn = 1243,
        .dttm = "20210123053000"
    };
    json_t *changed = json_pack ("[s]", "STND");
    json_t *doc = mx_flight_msg_doc (flight, &meta, changed, s_zone);
    char *text = s_dump (doc);
    assert_string_equal (text,
        "{\"event_id\":0,\"msg_id\":17,\"flid\":42,\"type\":\"FLOP\",\"styp\":\"STND\","
        "\"seqn\":1243,\"dttm\":\"20210123053000\",\"state_version\":3,\"changed\":[\"STND\"],"
        "\"state\":{\"flid\":42,\"operation_day\":\"2021-01-23\",\"state_version\":3,"
        "\"lifecycle\":\"ACTIVE\",\"deleted_at\":null," S_DOC_SCALARS "}}");
    free (text);
    //  The caller keeps its list.
    json_array_append_new (changed, json_string ("PSDT"));
    assert_int_equal (json_array_size (json_object_get (doc, "changed")), 1);
    json_decref (changed);
    json_decref (doc);

    //  Tombstone on KAFKA:msg: the same document, lifecycle DELETED.
    json_t *fdel_changed = NULL;
    mx_flight_t *deleted = mx_flight_apply_fdel (flight, 1611351300000, &fdel_changed);
    deleted->state_version = 4;
    meta = (mx_event_meta_t) { .event_id = 9, .msg_id = 18, .type = "FDEL", .styp = "FDEL",
                               .seqn = 1, .dttm = NULL };
    doc = mx_flight_msg_doc (deleted, &meta, fdel_changed, s_zone);
    text = s_dump (json_object_get (doc, "changed"));
    assert_string_equal (text, "[\"LIFECYCLE\"]");
    free (text);
    assert_int_equal (json_integer_value (json_object_get (doc, "event_id")), 9);
    assert_true (json_is_null (json_object_get (doc, "dttm")));
    json_t *inner = json_object_get (doc, "state");
    assert_string_equal (json_string_value (json_object_get (inner, "lifecycle")), "DELETED");
    assert_string_equal (json_string_value (json_object_get (inner, "deleted_at")),
                         "2021-01-23T05:35:00+08:00");
    assert_int_equal (json_integer_value (json_object_get (inner, "state_version")), 4);
    json_decref (doc);

    //  No list given: an empty one.
    doc = mx_flight_msg_doc (deleted, &meta, NULL, s_zone);
    assert_int_equal (json_array_size (json_object_get (doc, "changed")), 0);
    json_decref (doc);
    json_decref (fdel_changed);
    mx_flight_destroy (&deleted);
    mx_flight_destroy (&flight);
}

//  The texts written straight are json_dumps of the two documents, byte
//  for byte, whatever the flight holds.
static void
s_check_texts (const mx_flight_t *flight, const mx_event_meta_t *meta, json_t *changed, const mx_tz_t *zone)
{
    char *msg_text = NULL, *schd_text = NULL;
    mx_flight_event_texts (flight, meta, changed, zone, true, &msg_text, &schd_text);
    json_t *doc = mx_flight_msg_doc (flight, meta, changed, zone);
    char *expected = s_dump (doc);
    assert_string_equal (msg_text, expected);
    free (expected);
    json_decref (doc);
    doc = mx_flight_state_doc (flight, zone);
    expected = s_dump (doc);
    assert_string_equal (schd_text, expected);
    free (expected);
    json_decref (doc);
    free (msg_text);
    free (schd_text);
    mx_flight_event_texts (flight, meta, changed, zone, false, &msg_text, &schd_text);
    assert_null (schd_text);
    free (msg_text);
}

static void
test_event_texts_equal_documents (void **state)
{
    (void) state;
    mx_event_meta_t meta = {
        .event_id = 12, .msg_id = 17, .type = "FLOP", .styp = "STND", .seqn = 1243, .dttm = "20210123053000"
    };
    json_t *changed = json_pack ("[s,s]", "STND", "PSDT");
    mx_flight_t *flight = s_doc_flight ();
    s_check_texts (flight, &meta, changed, s_zone);
    s_check_texts (flight, &meta, NULL, s_utc);
    //  Every scalar and every set field with a value of its type, then
    //  text that needs escaping, text that is not UTF-8, values that are
    //  not canonical, rare sets and extra with keys out of order.
    for (int k = 0; k < MX_F_COUNT; k++) {
        char text [24];
        mx_flight_set_scalar (flight, (mx_scalar_t) k, s_sample (mx_scalar_info ((mx_scalar_t) k)->type, k, text));
    }
    for (int kind = 0; kind < MX_SET_COUNT; kind++)
        for (int key = 1; key <= 3; key++)
            s_set_add_sample (&flight->sets [kind], (mx_set_kind_t) kind, key, kind + key);
    flight->rare [MX_RARE_SRVT] = json_pack ("{s:s,s:[{s:s,s:s}],s:s}", "SRTC", "ATN",
                                             "LIST", "B", "2", "A", "1", "ABCD", "x");
    json_object_set_new (flight->extra, "AAAA", json_pack ("{s:i,s:n,s:b}", "z", 1, "a", "m", 0));
    s_check_texts (flight, &meta, changed, s_zone);
    s_check_texts (flight, &meta, changed, s_berlin);
    mx_flight_set_scalar (flight, MX_F_REMC, "a\"b\\c\nd\re\tf\bg\fh\x01i\x1fj/k\x7f\u00e9\u2028");
    mx_flight_set_scalar (flight, MX_F_FTSS, "bad \xff\xfe");
    mx_flight_set_scalar (flight, MX_F_EXSC, "\xed\xa0\x80");        //  a surrogate
    mx_flight_set_scalar (flight, MX_F_MAXP, "many");
    mx_flight_set_scalar (flight, MX_F_ESTT, "soon");
    mx_flight_set_scalar (flight, MX_F_TAID, "-9223372036854775808");
    mx_flight_set_scalar (flight, MX_F_PHAG, NULL);
    mx_set_t *gates = &flight->sets [MX_SET_GATE];
    free (gates->records [0].values [0]);
    gates->records [0].values [0] = strdup ("G\"1\xc3");
    meta.type = "FL\"OP";
    meta.styp = NULL;
    meta.dttm = "\x80";
    meta.seqn = -1;
    s_check_texts (flight, &meta, changed, s_zone);
    //  Deleted, no day yet, no extra.
    flight->deleted = true;
    flight->deleted_at = 1611351300123;
    flight->operation_day = -1;
    json_decref (flight->extra);
    flight->extra = NULL;
    s_check_texts (flight, &meta, NULL, s_zone);
    flight->deleted_at = -1;
    s_check_texts (flight, &meta, NULL, s_zone);
    json_decref (changed);
    mx_flight_destroy (&flight);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_tables_scalars),
        cmocka_unit_test (test_tables_sets),
        cmocka_unit_test (test_tables_rare),
        cmocka_unit_test (test_tables_subtypes),
        cmocka_unit_test (test_flight_new_destroy),
        cmocka_unit_test (test_flight_set_scalar),
        cmocka_unit_test (test_flight_set_set),
        cmocka_unit_test (test_set_equal),
        cmocka_unit_test (test_flight_dup),
        cmocka_unit_test (test_bodies_destroy),
        cmocka_unit_test (test_operation_day),
        cmocka_unit_test (test_fltr_new_flight),
        cmocka_unit_test (test_fltr_existing_flight),
        cmocka_unit_test (test_fltr_cross_day),
        cmocka_unit_test (test_fltr_deleted_flight),
        cmocka_unit_test (test_flop_scalars_every_styp),
        cmocka_unit_test (test_flop_scalar_groups),
        cmocka_unit_test (test_flop_sets_every_element),
        cmocka_unit_test (test_flop_delay),
        cmocka_unit_test (test_flop_rare_every_element),
        cmocka_unit_test (test_flop_extra_merge),
        cmocka_unit_test (test_flop_changed_order),
        cmocka_unit_test (test_flop_keeps_lifecycle),
        cmocka_unit_test (test_fdel),
        cmocka_unit_test (test_diff),
        cmocka_unit_test (test_state_doc),
        cmocka_unit_test (test_state_doc_edges),
        cmocka_unit_test (test_msg_doc),
        cmocka_unit_test (test_event_texts_equal_documents),
    };
    return cmocka_run_group_tests (tests, s_setup, s_teardown);
}
