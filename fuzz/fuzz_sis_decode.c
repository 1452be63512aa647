/*  fuzz_sis_decode - the SIS codec on arbitrary bytes: the envelope decoder
    (mx_sis_decode), the body decoder of whatever kind it accepted, and the
    pure flight decisions on a decoded body.

    Besides "no crash, no leak, no sanitizer report" it checks what the
    pipeline relies on:
    - a refusal has a status and one error line, valid UTF-8 (it is stored
      in PostgreSQL text columns and logged as JSON);
    - an accepted message has META values within WIRE.md §2's bounds;
    - applying a decoded FLTR or FLOP onto its own result changes nothing
      (a re-sent message never bumps the version twice).
*/
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_utf8.h"
#include "mx_flight.h"
#include "mx_sis.h"
#include "mx_sis_body.h"
#include "mx_tz.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

//  Above the fuzzers' -max_len, so the limit itself is the unit tests' job;
//  oversized inputs still go through the size check.
#define S_MAX_BYTES ((size_t) 1024 * 1024)

static mx_tz_t *s_zone;

static void
s_free_zone (void)
{
    mx_tz_destroy (&s_zone);
}

static const mx_tz_t *
s_airport_zone (void)
{
    if (!s_zone) {
        char *error = NULL;
        s_zone = mx_tz_load ("Asia/Shanghai", &error);
        if (!s_zone) {
            fprintf (stderr, "fuzz_sis_decode: cannot load Asia/Shanghai: %s\n", error);
            abort ();
        }
        atexit (s_free_zone);
    }
    return s_zone;
}

//  An error line as the pipeline stores it: present, one line, and UTF-8
//  (PostgreSQL refuses anything else, and the FIFO would stall on it).
static void
s_check_error (const char *error)
{
    if (!error)
        abort ();
    size_t length = strlen (error);
    if (length == 0 || strchr (error, '\n') || strchr (error, '\r'))
        abort ();
    if (mx_utf8_invalid_at ((const unsigned char *) error, length) != length)
        abort ();
}

static void
s_check_meta (const mx_sis_meta_t *meta)
{
    size_t sndr = strlen (meta->sndr), type = strlen (meta->type), styp = strlen (meta->styp);
    if (sndr < 1 || sndr > MX_SIS_CODE_MAX || type < 1 || type > MX_SIS_CODE_MAX
    ||  styp < 1 || styp > MX_SIS_CODE_MAX || strlen (meta->dttm) != 14
    ||  meta->seqn < 1 || meta->seqn > MX_SIS_SEQN_MAX
    ||  strchr (meta->sndr, '|') || strchr (meta->type, '|') || strchr (meta->styp, '|'))
        abort ();
    char identity [MX_SIS_IDENTITY_BUFSIZE];
    mx_sis_identity (meta, false, identity, sizeof identity);
    mx_sis_identity (meta, true, identity, sizeof identity);
}

static void
s_expect_no_change (json_t *changed)
{
    if (!changed || !json_is_array (changed) || json_array_size (changed) != 0)
        abort ();
}

static void
s_documents (const mx_flight_t *flight, const mx_sis_meta_t *meta, json_t *changed,
             const mx_tz_t *zone)
{
    mx_event_meta_t event = {
        .event_id = 1, .msg_id = 1, .type = meta->type, .styp = meta->styp,
        .seqn = meta->seqn, .dttm = meta->dttm
    };
    json_t *doc = mx_flight_msg_doc (flight, &event, changed, zone);
    char *text = json_dumps (doc, JSON_COMPACT);
    if (!text)
        abort ();                   //  every event must serialise
    free (text);
    json_decref (doc);
}

static void
s_schedule (const mx_sis_msg_t *msg, const mx_tz_t *zone)
{
    mx_schedule_t *schedule = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_schedule (msg, zone, &schedule, &error);
    if (status != MX_BODY_OK) {
        s_check_error (error);
        if (schedule)
            abort ();
        free (error);
        return;
    }
    if (!schedule || error || schedule->count != (size_t) schedule->declared)
        abort ();
    for (size_t i = 0; i < schedule->count; i++) {
        const mx_fltr_t *fltr = &schedule->records [i];
        json_t *changed = NULL;
        mx_flight_t *first = mx_flight_apply_fltr (NULL, fltr, zone, 0, &changed, &error);
        if (!first) {
            s_check_error (error);
            free (error);
            error = NULL;
            continue;
        }
        s_documents (first, mx_sis_meta (msg), changed, zone);
        json_decref (changed);
        //  The same record again: no change.
        mx_flight_t *second = mx_flight_apply_fltr (first, fltr, zone, 0, &changed, &error);
        if (!second)
            abort ();
        s_expect_no_change (changed);
        json_decref (changed);
        mx_flight_destroy (&second);
        mx_flight_destroy (&first);
    }
    mx_schedule_destroy (&schedule);
}

static void
s_schedule_del (const mx_sis_msg_t *msg)
{
    int64_t *flids = NULL;
    size_t count = 0;
    char *error = NULL;
    mx_body_status_t status = mx_sis_schedule_del (msg, &flids, &count, &error);
    if (status != MX_BODY_OK) {
        s_check_error (error);
        free (error);
    }
    for (size_t i = 0; i < count; i++)
        if (flids [i] <= 0)
            abort ();
    free (flids);
}

static void
s_flop (const mx_sis_msg_t *msg, const mx_tz_t *zone)
{
    mx_flop_t *flop = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_flop (msg, zone, &flop, &error);
    if (status != MX_BODY_OK) {
        s_check_error (error);
        if (flop)
            abort ();
        free (error);
        return;
    }
    if (!flop || error || flop->flid <= 0)
        abort ();
    mx_flight_t *current = mx_flight_new (flop->flid);
    json_t *changed = NULL;
    mx_flight_t *next = flop->fdel ? mx_flight_apply_fdel (current, 1000, &changed)
                                   : mx_flight_apply_flop (current, flop, &changed);
    s_documents (next, mx_sis_meta (msg), changed, zone);
    json_decref (changed);
    //  The same FLOP again: no change.
    mx_flight_t *again = flop->fdel ? mx_flight_apply_fdel (next, 2000, &changed)
                                    : mx_flight_apply_flop (next, flop, &changed);
    s_expect_no_change (changed);
    json_decref (changed);
    json_t *state = mx_flight_state_doc (again, zone);
    json_decref (state);
    mx_flight_destroy (&again);
    mx_flight_destroy (&next);
    mx_flight_destroy (&current);
    mx_flop_destroy (&flop);
}

static void
s_reference (const mx_sis_msg_t *msg)
{
    mx_reference_t *reference = NULL;
    char *error = NULL;
    mx_body_status_t status = mx_sis_reference (msg, &reference, &error);
    if (status != MX_BODY_OK) {
        s_check_error (error);
        if (reference)
            abort ();
        free (error);
        return;
    }
    if (!reference || reference->count != (size_t) reference->declared)
        abort ();
    for (size_t i = 0; i < reference->count; i++) {
        char *text = json_dumps (reference->records [i].value, JSON_COMPACT);
        if (!text || !*reference->records [i].key)
            abort ();
        free (text);
    }
    mx_reference_destroy (&reference);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const mx_tz_t *zone = s_airport_zone ();
    //  The daemon's default ignore list (msgx.pipeline.ignore-types).
    static char ldm [] = "LDM", regn [] = "REGN", rsta [] = "RSTA", eror [] = "EROR";
    static char *ignored [] = { ldm, regn, rsta, eror };
    mx_sis_options_t options = {
        .zone = zone, .max_bytes = S_MAX_BYTES,
        .ignore_types = ignored, .ignore_count = sizeof ignored / sizeof ignored [0],
        //  Mostly the daemon's UTF-8 channel; every eighth input through
        //  the declared-encoding converters as well.
        .raw_bytes = size > 0 && data [size - 1] % 8 == 0
    };
    mx_sis_status_t status = MX_SIS_OK;
    char *error = NULL;
    mx_sis_msg_t *msg = mx_sis_decode ((const char *) data, size, &options, &status, &error);
    if (!msg) {
        if (status != MX_SIS_MALFORMED && status != MX_SIS_CODEC_ERROR)
            abort ();
        s_check_error (error);
        free (error);
        return 0;
    }
    if (status != MX_SIS_OK || error)
        abort ();
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    s_check_meta (meta);
    bool is_ignored = false;
    for (size_t i = 0; i < options.ignore_count; i++)
        is_ignored = is_ignored || strcmp (meta->type, ignored [i]) == 0;
    if (!is_ignored)
        switch (mx_sis_kind (msg)) {
            case MX_SIS_KIND_SCHD_DNLD:
            case MX_SIS_KIND_SCHD_RESP:
            case MX_SIS_KIND_SCHD_ADFT:
                s_schedule (msg, zone);
                break;
            case MX_SIS_KIND_SCHD_DEL:
                s_schedule_del (msg);
                break;
            case MX_SIS_KIND_FLOP:
            case MX_SIS_KIND_FDEL:
                s_flop (msg, zone);
                break;
            case MX_SIS_KIND_REFERENCE:
                s_reference (msg);
                break;
            case MX_SIS_KIND_OTHER:
                break;
        }
    mx_sis_destroy (&msg);
    return 0;
}
