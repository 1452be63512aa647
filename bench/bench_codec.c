/*  bench_codec - decode time of hostile messages by size (docs/reliability.md).

    bench_codec [--unbounded] [SIZE | FILE]...

    For every kind of msgx-shape (tools/mx_shape.h) and every SIZE (bytes,
    with an optional K or M suffix; default 1M 4M 16M), builds the message
    and decodes it as msgxd does (envelope, then the FLOP or schedule body
    when the envelope passed), and prints one row: the time, the time per
    MiB, and what the codec decided. Linear time shows as a flat ms/MiB
    column. Each FILE (an argument not starting with a digit) is decoded
    the same way in a row of its own: a real message, for comparison.
    --unbounded sets every msgx.codec.max-* bound to its ceiling, to show
    what the same input costs libxml2 without the shape check (keep the
    sizes small: some shapes are quadratic there).

    Figures, not assertions: nothing here fails on a slow machine.
*/
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mx_shape.h"
#include "mx_flight.h"
#include "mx_sis.h"
#include "mx_sis_body.h"
#include "mx_tz.h"

static double
s_now_ms (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return (double) now.tv_sec * 1000.0 + (double) now.tv_nsec / 1e6;
}

static size_t
s_size (const char *text)
{
    char *end = NULL;
    unsigned long long value = strtoull (text, &end, 10);
    if (end && (*end == 'K' || *end == 'k'))
        value *= 1024, end++;
    else
    if (end && (*end == 'M' || *end == 'm'))
        value *= 1024 * 1024, end++;
    if (!end || *end || value == 0) {
        fprintf (stderr, "usage: bench_codec [--unbounded] [SIZE[K|M]...]\n");
        exit (2);
    }
    return (size_t) value;
}

//  Decodes like the processor: envelope, then the body of a FLOP.
static const char *
s_decode (const char *xml, size_t size, const mx_sis_options_t *options, char *why, size_t room)
{
    mx_sis_status_t status;
    char *error = NULL;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, options, &status, &error);
    if (!msg) {
        snprintf (why, room, "%s", error ? error : "");
        free (error);
        return mx_sis_status_name (status);
    }
    mx_body_status_t body = MX_BODY_OK;
    mx_sis_kind_t kind = mx_sis_kind (msg);
    if (kind == MX_SIS_KIND_FLOP || kind == MX_SIS_KIND_FDEL) {
        mx_flop_t *flop = NULL;
        body = mx_sis_flop (msg, options->zone, &flop, &error);
        mx_flop_destroy (&flop);
    }
    else
    if (kind == MX_SIS_KIND_SCHD_DNLD || kind == MX_SIS_KIND_SCHD_RESP
    ||  kind == MX_SIS_KIND_SCHD_ADFT) {
        mx_schedule_t *schedule = NULL;
        body = mx_sis_schedule (msg, options->zone, &schedule, &error);
        mx_schedule_destroy (&schedule);
    }
    snprintf (why, room, "%s", error ? error : "");
    free (error);
    mx_sis_destroy (&msg);
    return body == MX_BODY_OK ? "OK" : mx_body_status_name (body);
}

static void
s_row (const char *what, const char *xml, size_t size, const mx_sis_options_t *options)
{
    char why [512];
    double start = s_now_ms ();
    const char *decided = s_decode (xml, size, options, why, sizeof why);
    double took = s_now_ms () - start;
    printf ("%-10s %10zu %12.2f %10.2f %-11s %.90s\n", what, size, took,
            took / ((double) size / (1 << 20)), decided, why);
    fflush (stdout);
}

int
main (int argc, char *argv [])
{
    bool unbounded = argc > 1 && strcmp (argv [1], "--unbounded") == 0;
    int first = unbounded ? 2 : 1;
    size_t sizes [32];
    size_t count = 0;
    const char *files [32];
    size_t file_count = 0;
    for (int i = first; i < argc; i++)
        if (argv [i][0] >= '0' && argv [i][0] <= '9') {
            if (count < 32)
                sizes [count++] = s_size (argv [i]);
        }
        else
        if (file_count < 32)
            files [file_count++] = argv [i];
    if (count == 0 && file_count == 0) {
        sizes [0] = 1 << 20, sizes [1] = 4 << 20, sizes [2] = 16 << 20;
        count = 3;
    }
    mx_tz_t *zone = mx_tz_load ("Asia/Shanghai", NULL);
    if (!zone)
        return 1;
    mx_sis_options_t options = { .zone = zone, .max_bytes = 64 << 20 };
    if (unbounded)
        //  The configuration's ceilings (core/mx_config.c).
        options.limits = (mx_xml_shape_t) {
            .attributes = INT32_MAX, .nodes = INT64_MAX, .depth = 256,
            .text_pieces = INT64_MAX, .name_length = 50000, .namespaces = INT32_MAX,
            .distinct_names = INT32_MAX
        };
    printf ("%-10s %10s %12s %10s %-11s %s\n", "shape", "bytes", "ms", "ms/MiB", "decided", "why");
    for (size_t i = 0; i < file_count; i++) {
        size_t size = 0;
        char *xml = mx_shape_read_file (files [i], &size);
        if (!xml) {
            fprintf (stderr, "bench_codec: cannot read %s\n", files [i]);
            return 1;
        }
        s_row ("file", xml, size, &options);
        free (xml);
    }
    for (int kind = 0; kind < MX_SHAPE_COUNT; kind++)
        for (size_t i = 0; i < count; i++) {
            size_t size;
            char *xml = mx_shape_make ((mx_shape_kind_t) kind, sizes [i], &size);
            if (!xml)
                return 1;
            s_row (mx_shape_name (kind), xml, size, &options);
            free (xml);
        }
    mx_tz_destroy (&zone);
    return 0;
}
