/*  Unit tests: the lifecycle rules of domain/mx_apply without any database:
    entry guard, raw text, envelope, ignored types, duplicates (also of a
    message whose payload is missing), unsupported kinds, FLOP/FDEL onto
    known, unknown and deleted flights, schedules (counts, scope,
    cross-day), SCHD DEL and schedule responses.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_apply.h"

static mx_tz_t *s_zone;
static char s_ldm [] = "LDM";
static char *s_ignored [] = { s_ldm };

static mx_apply_rules_t
s_rules (void)
{
    return (mx_apply_rules_t) {
        .zone = s_zone, .cutoff_hour = 4, .max_attempts = 3, .max_bytes = 4096,
        .ignore_types = s_ignored, .ignore_count = 1, .identity_include_day = false
    };
}

static int
s_setup (void **state)
{
    (void) state;
    s_zone = mx_tz_load ("Asia/Shanghai", NULL);
    return s_zone ? 0 : -1;
}

static int
s_teardown (void **state)
{
    (void) state;
    mx_tz_destroy (&s_zone);
    return 0;
}

//  The changes a message made, as the writer would see them.
typedef struct {
    int count;
    int tombstones;
    int64_t last_version;
} s_changes_t;

static void
s_on_change (void *arg, const mx_change_t *change)
{
    s_changes_t *changes = (s_changes_t *) arg;
    changes->count++;
    changes->tombstones += change->tombstone;
    changes->last_version = change->after->state_version;
    assert_true (json_array_size (change->changed) > 0);
    assert_non_null (change->meta);
}

static char *
s_xml (const char *type, const char *styp, const char *body, int seqn)
{
    char *xml = NULL;
    int size = asprintf (&xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN>"
        "<DTTM>20210123053500</DTTM><TYPE>%s</TYPE><STYP>%s</STYP></META>%s</MSG>\n",
        seqn, type, styp, body);
    assert_true (size > 0);
    return xml;
}

//  Decodes a message of msg_id; its identity is its own.
static void
s_decode (mx_apply_msg_t *m, int64_t msg_id, const char *type, const char *styp, const char *body)
{
    mx_apply_rules_t rules = s_rules ();
    memset (m, 0, sizeof *m);
    m->msg_id = msg_id;
    char *xml = s_xml (type, styp, body, (int) msg_id);
    mx_apply_decode (&rules, m, true, xml, strlen (xml));
    free (xml);
}

static void
s_expect (const mx_apply_msg_t *m, mx_state_t state, mx_error_class_t error_class, const char *detail)
{
    assert_true (m->outcome.decided);
    if (m->outcome.state != state)
        print_message ("%" PRId64 ": %s\n", m->msg_id, m->outcome.text ? m->outcome.text : "-");
    assert_string_equal (mx_state_name (m->outcome.state), mx_state_name (state));
    assert_int_equal (m->outcome.error_class, error_class);
    if (detail)
        assert_string_equal (m->outcome.detail, detail);
}

//  Loads the flights the message reads from `stored` (NULL: none).
static void
s_load (mx_flightset_t *flights, const mx_apply_msg_t *m, const mx_flight_t *stored)
{
    for (size_t i = 0; i < mx_apply_flight_count (m); i++) {
        mx_flight_slot_t *slot = mx_flightset_add (flights, mx_apply_flight_id (m, i));
        if (!slot->before && !slot->now)
            mx_flightset_load (slot, stored && stored->flid == slot->flid ? mx_flight_dup (stored) : NULL);
    }
}

static void
s_run (mx_apply_msg_t *m, mx_flightset_t *flights, s_changes_t *changes)
{
    mx_apply_rules_t rules = s_rules ();
    mx_apply_message (&rules, m, flights, 1000, s_on_change, changes);
}

#define S_FLTR(flid, day) \
    "<FLTR><FLID>" flid "</FLID><ALCD>YG</ALCD><FLNO>YG9028</FLNO><MVIN>D</MVIN>" \
    "<SODT>" day "JAN210535</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>733</ACFT></FLTR>"

static void
test_entry_and_raw (void **state)
{
    (void) state;
    mx_apply_rules_t rules = s_rules ();
    mx_apply_msg_t m = { .msg_id = 1 };
    assert_false (mx_apply_entry (&rules, &m, MX_STATE_PENDING, 9));
    assert_false (mx_apply_entry (&rules, &m, MX_STATE_FAILED, 2));
    assert_true (mx_apply_entry (&rules, &m, MX_STATE_FAILED, 3));
    s_expect (&m, MX_STATE_DEAD, MX_ERR_EXHAUSTED, NULL);
    mx_apply_msg_reset (&m);

    mx_apply_decode (&rules, &m, false, NULL, 0);
    s_expect (&m, MX_STATE_DEAD, MX_ERR_MALFORMED, "raw-missing");
    mx_apply_msg_reset (&m);

    mx_apply_decode (&rules, &m, true, NULL, 5000);
    s_expect (&m, MX_STATE_DEAD, MX_ERR_MALFORMED, NULL);
    assert_non_null (strstr (m.outcome.text, "5000 bytes"));
    mx_apply_msg_reset (&m);

    const char *broken = "<MSG><META>";
    mx_apply_decode (&rules, &m, true, broken, strlen (broken));
    s_expect (&m, MX_STATE_DEAD, MX_ERR_MALFORMED, NULL);
    assert_null (m.msg);
    mx_apply_msg_reset (&m);
}

static void
test_ignored_duplicate_unsupported (void **state)
{
    (void) state;
    mx_apply_msg_t m;
    s_decode (&m, 5, "LDM", "DNLD", "<LDM/>");
    s_expect (&m, MX_STATE_SKIPPED, MX_ERR_NONE, "ignored:LDM");
    assert_false (mx_apply_identity (&m, 5));
    assert_true (m.holds_key);
    //  A duplicate is SKIPPED whatever else was decided.
    assert_true (mx_apply_identity (&m, 3));
    assert_false (m.holds_key);
    s_expect (&m, MX_STATE_SKIPPED, MX_ERR_NONE, "duplicate-of:3");
    mx_apply_msg_reset (&m);

    s_decode (&m, 6, "SCHS", "DNLD", "<SCHS/>");
    s_expect (&m, MX_STATE_FAILED, MX_ERR_UNSUPPORTED, NULL);
    assert_non_null (strstr (m.outcome.text, "no processor for SCHS/DNLD"));
    mx_apply_msg_reset (&m);

    //  A FLOP body the codec refuses as a protocol problem is DEAD.
    s_decode (&m, 7, "FLOP", "STND", "<FLOP><STND>S1</STND></FLOP>");
    s_expect (&m, MX_STATE_DEAD, MX_ERR_PROTOCOL, NULL);
    assert_int_equal (mx_apply_flight_count (&m), 0);
    mx_apply_msg_reset (&m);
}

static void
test_payload_missing_after_the_identity (void **state)
{
    (void) state;
    mx_apply_msg_t m;
    //  Payload missing is DEAD(MALFORMED), yet the envelope and its
    //  identity are kept: the identity binds first.
    s_decode (&m, 8, "FLOP", "TOBT", "<FLOP><FLID>1001</FLID></FLOP>");
    s_expect (&m, MX_STATE_DEAD, MX_ERR_MALFORMED, NULL);
    assert_non_null (strstr (m.outcome.text, "payload missing: FLOP/TOBT"));
    assert_non_null (m.msg);
    assert_string_equal (m.key, "AODB|FLOP|TOBT|8");
    assert_int_equal (mx_apply_flight_count (&m), 0);
    //  Its own identity: it stays DEAD(MALFORMED) and holds the key.
    assert_false (mx_apply_identity (&m, 8));
    assert_true (m.holds_key);
    s_expect (&m, MX_STATE_DEAD, MX_ERR_MALFORMED, NULL);
    //  Held by an earlier message: a duplicate, SKIPPED.
    assert_true (mx_apply_identity (&m, 2));
    s_expect (&m, MX_STATE_SKIPPED, MX_ERR_NONE, "duplicate-of:2");
    assert_null (m.outcome.text);
    mx_apply_msg_reset (&m);

    //  Every kind's missing body alike.
    s_decode (&m, 9, "SCHD", "DNLD", "");
    s_expect (&m, MX_STATE_DEAD, MX_ERR_MALFORMED, NULL);
    assert_non_null (strstr (m.outcome.text, "no <SCHD> in MSG"));
    assert_true (mx_apply_identity (&m, 4));
    s_expect (&m, MX_STATE_SKIPPED, MX_ERR_NONE, "duplicate-of:4");
    mx_apply_msg_reset (&m);

    //  A broken envelope has no identity to bind.
    const char *broken = "<MSG><META><SNDR>AODB</SNDR></META><FLOP/></MSG>";
    mx_apply_rules_t rules = s_rules ();
    memset (&m, 0, sizeof m);
    mx_apply_decode (&rules, &m, true, broken, strlen (broken));
    s_expect (&m, MX_STATE_DEAD, MX_ERR_MALFORMED, NULL);
    assert_null (m.msg);
    mx_apply_msg_reset (&m);
}

static void
test_flop (void **state)
{
    (void) state;
    mx_flight_t *stored = mx_flight_new (15);
    stored->state_version = 4;
    mx_flight_set_scalar (stored, MX_F_STND, "S1");
    s_changes_t changes = { 0 };

    mx_apply_msg_t m;
    s_decode (&m, 10, "FLOP", "STND", "<FLOP><FLID>16</FLID><STND>S2</STND></FLOP>");
    assert_false (m.outcome.decided);
    mx_flightset_t *flights = mx_flightset_new ();
    s_load (flights, &m, stored);
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SKIPPED, MX_ERR_NONE, "unknown-flight:16");
    assert_int_equal (changes.count, 0);
    mx_apply_msg_reset (&m);

    s_decode (&m, 11, "FLOP", "STND", "<FLOP><FLID>15</FLID><STND>S2</STND></FLOP>");
    s_load (flights, &m, stored);
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL);
    assert_null (m.outcome.detail);
    assert_int_equal (changes.count, 1);
    assert_int_equal (changes.last_version, 5);
    mx_flight_slot_t *slot = mx_flightset_get (flights, 15);
    assert_string_equal (slot->now->scalars [MX_F_STND], "S2");
    assert_int_equal (slot->now->last_msg_id, 11);
    assert_string_equal (slot->before->scalars [MX_F_STND], "S1");
    mx_apply_msg_reset (&m);

    //  The same again: nothing changes.
    s_decode (&m, 12, "FLOP", "STND", "<FLOP><FLID>15</FLID><STND>S2</STND></FLOP>");
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SUCCEEDED, MX_ERR_NONE, "no-change");
    assert_int_equal (changes.count, 1);
    mx_apply_msg_reset (&m);

    //  FDEL: a tombstone; after it a FLOP is skipped, a second FDEL changes nothing.
    s_decode (&m, 13, "FLOP", "FDEL", "<FLOP><FLID>15</FLID><FDEL></FDEL></FLOP>");
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL);
    assert_int_equal (changes.tombstones, 1);
    assert_int_equal (changes.last_version, 6);
    mx_apply_msg_reset (&m);
    s_decode (&m, 14, "FLOP", "STND", "<FLOP><FLID>15</FLID><STND>S3</STND></FLOP>");
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SKIPPED, MX_ERR_NONE, "flight-deleted:15");
    mx_apply_msg_reset (&m);
    s_decode (&m, 15, "FLOP", "FDEL", "<FLOP><FLID>15</FLID><FDEL></FDEL></FLOP>");
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SUCCEEDED, MX_ERR_NONE, "no-change");
    assert_int_equal (changes.count, 2);
    mx_apply_msg_reset (&m);

    mx_flightset_destroy (&flights);
    mx_flight_destroy (&stored);
}

static void
test_schedule (void **state)
{
    (void) state;
    s_changes_t changes = { 0 };
    mx_flightset_t *flights = mx_flightset_new ();
    mx_apply_msg_t m;
    s_decode (&m, 20, "SCHD", "DNLD", "<SCHD><RECS>2</RECS>" S_FLTR ("15", "23") S_FLTR ("16", "23") "</SCHD>");
    assert_int_equal (mx_apply_flight_count (&m), 2);
    s_load (flights, &m, NULL);
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SUCCEEDED, MX_ERR_NONE, "flights inserted 2, updated 0, unchanged 0");
    assert_true (m.snapshot.present);
    assert_true (m.snapshot.scope_begin > 0);
    assert_int_equal (m.snapshot.scope_begin, m.snapshot.scope_end);
    assert_int_equal (changes.count, 2);
    assert_int_equal (changes.last_version, 1);
    mx_apply_msg_reset (&m);

    s_decode (&m, 21, "SCHD", "ADFT", "<SCHD><RECS>1</RECS>" S_FLTR ("15", "23") "</SCHD>");
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SUCCEEDED, MX_ERR_NONE, "flights inserted 0, updated 0, unchanged 1");
    mx_apply_msg_reset (&m);

    //  A record on another operation day rejects the whole package.
    s_decode (&m, 22, "SCHD", "DNLD", "<SCHD><RECS>2</RECS>" S_FLTR ("16", "23") S_FLTR ("15", "25") "</SCHD>");
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_DEAD, MX_ERR_PROTOCOL, NULL);
    assert_non_null (strstr (m.outcome.text, "15"));
    assert_false (m.snapshot.present);
    assert_int_equal (changes.count, 2);
    mx_apply_msg_reset (&m);

    //  SCHD DEL: one known, one unknown.
    s_decode (&m, 23, "SCHD", "DEL", "<SCHD><RECS>2</RECS><FLTR><FLID>16</FLID></FLTR>"
                                     "<FLTR><FLID>99</FLID></FLTR></SCHD>");
    s_load (flights, &m, NULL);
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SUCCEEDED, MX_ERR_NONE, "flights deleted 1, unknown 1");
    assert_int_equal (changes.tombstones, 1);
    assert_int_equal (changes.last_version, 2);
    mx_apply_msg_reset (&m);
    mx_flightset_destroy (&flights);
}

static void
test_schedule_response (void **state)
{
    (void) state;
    mx_apply_rules_t rules = s_rules ();
    s_changes_t changes = { 0 };
    mx_flightset_t *flights = mx_flightset_new ();
    mx_apply_msg_t m;
    const char *body = "<SCHD><RECS>1</RECS>" S_FLTR ("15", "23") "</SCHD>";
    s_decode (&m, 30, "SCHD", "RESP", body);
    assert_false (m.outcome.decided);
    mx_apply_response (&rules, &m, false, "no open schedule request");
    s_expect (&m, MX_STATE_SKIPPED, MX_ERR_NONE, "no open schedule request");
    mx_apply_msg_reset (&m);

    s_decode (&m, 31, "SCHD", "RESP", body);
    mx_apply_response (&rules, &m, true, NULL);
    s_load (flights, &m, NULL);
    s_run (&m, flights, &changes);
    s_expect (&m, MX_STATE_SUCCEEDED, MX_ERR_NONE, "flights inserted 1, updated 0, unchanged 0");
    mx_apply_msg_reset (&m);
    mx_flightset_destroy (&flights);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_entry_and_raw),
        cmocka_unit_test (test_ignored_duplicate_unsupported),
        cmocka_unit_test (test_payload_missing_after_the_identity),
        cmocka_unit_test (test_flop),
        cmocka_unit_test (test_schedule),
        cmocka_unit_test (test_schedule_response),
    };
    return cmocka_run_group_tests (tests, s_setup, s_teardown);
}
