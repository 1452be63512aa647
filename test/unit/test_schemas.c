/*  test_schemas - the consumer contract's validator (docs/schemas,
    test/harness/mx-validate-records) against documents made by the domain
    code: a flight with every scalar, set, rare set and extra filled passes,
    and each deliberately wrong record fails with the reason named.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_flight.h"
#include "mx_testenv.h"
#include "mx_tz.h"

#define TOPIC_MSG  "msgx.flight.events"
#define TOPIC_SCHD "msgx.flight.state"
#define FLID       4711
#define SODT_MS    "1767254400000"

//  A value of each type, as the repository holds it.
static const char *
s_value (mx_value_type_t type)
{
    switch (type) {
        case MX_TYPE_T: return SODT_MS;
        case MX_TYPE_I: return "42";
        case MX_TYPE_M: return "90";
        default:        return "X1";
    }
}

//  Everything a flight can hold, filled; deleted or not.
static mx_flight_t *
s_full_flight (bool deleted)
{
    mx_flight_t *flight = mx_flight_new (FLID);
    for (int index = 0; index < MX_F_COUNT; index++)
        mx_flight_set_scalar (flight, (mx_scalar_t) index, s_value (mx_scalar_info ((mx_scalar_t) index)->type));
    for (int index = 0; index < MX_SET_COUNT; index++) {
        const mx_set_info_t *info = mx_set_info ((mx_set_kind_t) index);
        mx_set_record_t record = { .key = 1 };
        for (size_t field = 0; field < info->field_count; field++)
            record.values [field] = (char *) s_value (info->field_types [field]);
        mx_set_t set = { .count = 1, .records = &record };
        mx_flight_set_set (flight, (mx_set_kind_t) index, &set);
    }
    for (int index = 0; index < MX_RARE_COUNT; index++)
        flight->rare [index] = json_pack ("[{s:s, s:{s:s}, s:[s,s]}]", "PSHN", "1", "SUB", "#text", "a",
                                          "REP", "x", "y");
    json_object_set_new (flight->extra, "NEWE", json_string ("text"));
    json_object_set_new (flight->extra, "TWICE", json_pack ("[s,s]", "a", "b"));
    flight->operation_day = 20454;
    flight->state_version = 3;
    flight->last_msg_id = 77;
    flight->deleted = deleted;
    flight->deleted_at = deleted ? INT64_C (1767258000000) : -1;
    return flight;
}

typedef struct {
    char *msg;                  //  KAFKA:msg document of an UPSERT
    char *state;                //  KAFKA:schd document
    char *tombstone;            //  KAFKA:msg document of an FDEL
} docs_t;

static void
s_docs (docs_t *docs, const char *zone_name)
{
    mx_tz_t *zone = mx_tz_load (zone_name, NULL);
    assert_non_null (zone);
    mx_event_meta_t meta = {
        .event_id = 900, .msg_id = 77, .type = "FLOP", .styp = "GTDT", .seqn = 1243, .dttm = "20260101160000"
    };
    mx_flight_t *flight = s_full_flight (false);
    json_t *changed = json_pack ("[s,s,s]", "GTDT", "EXTRA", "PSHT");
    mx_flight_event_texts (flight, &meta, changed, zone, true, &docs->msg, &docs->state);
    json_decref (changed);
    mx_flight_destroy (&flight);
    flight = s_full_flight (true);
    changed = json_pack ("[s]", "LIFECYCLE");
    char *unused = NULL;
    mx_flight_event_texts (flight, &meta, changed, zone, false, &docs->tombstone, &unused);
    json_decref (changed);
    mx_flight_destroy (&flight);
    mx_tz_destroy (&zone);
}

static void
s_docs_free (docs_t *docs)
{
    free (docs->msg);
    free (docs->state);
    free (docs->tombstone);
}

//  One record line as kcat -J prints it. headers: a JSON array text.
static int s_offset;             //  each line its own offset, to find it in a report

static char *
s_line (const char *topic, const char *headers, const char *key, const char *payload)
{
    json_t *record = json_pack ("{s:s, s:i, s:i, s:o, s:s?, s:s?}", "topic", topic, "partition", 0,
                                "offset", s_offset++,
                                "headers", json_loads (headers, 0, NULL), "key", key, "payload", payload);
    assert_non_null (record);
    char *line = json_dumps (record, JSON_COMPACT);
    json_decref (record);
    return line;
}

#define H_MSG(type, version) \
    "[\"msgx-event-id\",\"900\",\"msgx-msg-id\",\"77\",\"msgx-state-version\",\"3\"," \
    "\"msgx-event-type\",\"" type "\",\"msgx-source\",\"FLOP/GTDT\",\"msgx-schema-version\",\"" version "\"]"
#define H_JOB \
    "[\"msgx-event-id\",\"901\",\"msgx-state-version\",\"4\",\"msgx-event-type\",\"TOMBSTONE\"," \
    "\"msgx-schema-version\",\"1\"]"

//  Wrong records, each with the reason its report line must give.
typedef struct {
    char *lines [32];
    const char *reasons [32];
    size_t count;
} wrong_t;

static void
s_wrong (wrong_t *self, char *line, const char *reason)
{
    assert_true (self->count < 32);
    self->lines [self->count] = line;
    self->reasons [self->count++] = reason;
}

//  One run of the validator over all of them: each is refused for its reason.
static void
s_expect_invalid (wrong_t *self)
{
    char *report = NULL;
    int rc = mx_testkafka_validate_lines ((const char *const *) self->lines, self->count, TOPIC_MSG, TOPIC_SCHD,
                                          &report);
    assert_int_equal (rc, 1);
    for (size_t i = 0; i < self->count; i++) {
        json_t *record = json_loads (self->lines [i], 0, NULL);
        char where [128];
        snprintf (where, sizeof where, "%s [0] @%" JSON_INTEGER_FORMAT ": ",
                  json_string_value (json_object_get (record, "topic")),
                  json_integer_value (json_object_get (record, "offset")));
        json_decref (record);
        bool found = false;
        for (const char *at = strstr (report, where); at && !found; at = strstr (at + 1, where)) {
            size_t length = strcspn (at, "\n");
            char *line = strndup (at, length);
            found = strstr (line, self->reasons [i]) != NULL;
            free (line);
        }
        if (!found)
            fail_msg ("no \"%s\" for %s in:\n%s", self->reasons [i], where, report);
        free (self->lines [i]);
    }
    char summary [64];
    snprintf (summary, sizeof summary, "%zu records, 0 valid, %zu invalid", self->count, self->count);
    assert_non_null (strstr (report, summary));
    free (report);
}

//  A document with one change made through jansson.
static char *
s_edit (const char *text, const char *path_member, json_t *value)
{
    json_t *doc = json_loads (text, 0, NULL);
    assert_non_null (doc);
    json_t *target = doc;
    if (strncmp (path_member, "state.", 6) == 0) {
        target = json_object_get (doc, "state");
        path_member += 6;
    }
    if (value)
        json_object_set_new (target, path_member, value);
    else
        json_object_del (target, path_member);
    char *edited = json_dumps (doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (doc);
    return edited;
}

static void
test_documents_of_the_code_are_valid (void **state)
{
    (void) state;
    const char *zones [] = { "UTC", "Asia/Shanghai", "America/St_Johns" };
    char *lines [15];
    size_t count = 0;
    for (size_t z = 0; z < 3; z++) {
        docs_t docs;
        s_docs (&docs, zones [z]);
        lines [count++] = s_line (TOPIC_MSG, H_MSG ("UPSERT", "1"), "4711", docs.msg);
        lines [count++] = s_line (TOPIC_SCHD, H_MSG ("UPSERT", "1"), "4711", docs.state);
        lines [count++] = s_line (TOPIC_MSG, H_MSG ("TOMBSTONE", "1"), "4711", docs.tombstone);
        lines [count++] = s_line (TOPIC_SCHD, H_MSG ("TOMBSTONE", "1"), "4711", NULL);
        lines [count++] = s_line (TOPIC_SCHD, H_JOB, "4711", NULL);
        s_docs_free (&docs);
    }
    char *report = NULL;
    int rc = mx_testkafka_validate_lines ((const char *const *) lines, count, TOPIC_MSG, TOPIC_SCHD, &report);
    if (rc != 0)
        fail_msg ("%s", report);
    assert_non_null (strstr (report, "15 records, 15 valid, 0 invalid"));
    free (report);
    for (size_t i = 0; i < count; i++)
        free (lines [i]);
}

static void
test_wrong_records_are_refused (void **state)
{
    (void) state;
    docs_t docs;
    s_docs (&docs, "Asia/Shanghai");
    wrong_t wrong = { .count = 0 };
    char *doc;
    //  Payload drift: a member missing, one added, one of another type.
    doc = s_edit (docs.msg, "changed", NULL);
    s_wrong (&wrong, s_line (TOPIC_MSG, H_MSG ("UPSERT", "1"), "4711", doc), "'changed' is a required property");
    free (doc);
    doc = s_edit (docs.state, "NEWF", json_string ("x"));
    s_wrong (&wrong, s_line (TOPIC_SCHD, H_MSG ("UPSERT", "1"), "4711", doc), "Additional properties");
    free (doc);
    doc = s_edit (docs.msg, "state.SODT", json_integer (1767254400));
    s_wrong (&wrong, s_line (TOPIC_MSG, H_MSG ("UPSERT", "1"), "4711", doc), "state/SODT");
    free (doc);
    doc = s_edit (docs.msg, "changed", json_pack ("[s]", "NOPE"));
    s_wrong (&wrong, s_line (TOPIC_MSG, H_MSG ("UPSERT", "1"), "4711", doc), "changed/0");
    free (doc);
    doc = s_edit (docs.state, "lifecycle", json_string ("GONE"));
    s_wrong (&wrong, s_line (TOPIC_SCHD, H_MSG ("UPSERT", "1"), "4711", doc), "lifecycle");
    free (doc);
    //  Headers and key against the payload.
    s_wrong (&wrong, s_line (TOPIC_MSG, H_MSG ("UPSERT", "2"), "4711", docs.msg), "header msgx-schema-version '2'");
    s_wrong (&wrong, s_line (TOPIC_MSG, "[\"msgx-event-id\",\"900\"]", "4711", docs.msg),
             "header msgx-schema-version missing");
    s_wrong (&wrong, s_line (TOPIC_MSG, H_MSG ("UPSERT", "1"), "4712", docs.msg), "key is 4712");
    s_wrong (&wrong, s_line (TOPIC_MSG, H_MSG ("TOMBSTONE", "1"), "4711", docs.msg), "a TOMBSTONE whose state is ACTIVE");
    s_wrong (&wrong, s_line (TOPIC_SCHD, H_MSG ("TOMBSTONE", "1"), "4711", docs.state), "TOMBSTONE has a value");
    s_wrong (&wrong, s_line (TOPIC_MSG, H_MSG ("UPSERT", "1"), "4711", NULL), "null value on the KAFKA:msg topic");
    s_wrong (&wrong, s_line (TOPIC_MSG, H_MSG ("UPSERT", "1"), "4711", "{\"event_id\":"), "payload is not JSON");
    s_wrong (&wrong, s_line ("other.topic", H_MSG ("UPSERT", "1"), "4711", docs.msg), "not a topic of msgxd");
    s_expect_invalid (&wrong);
    s_docs_free (&docs);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_documents_of_the_code_are_valid),
        cmocka_unit_test (test_wrong_records_are_refused),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
