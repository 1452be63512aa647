/*  Unit tests of the metrics registry (core/mx_metrics): the exact
    Prometheus text, label escaping, NaN for unknown gauges, histograms,
    lock-free updates from several threads, and the metrics the actors
    declare next to their counting, registered from the start.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mx_actor.h"
#include "mx_delivery.h"
#include "mx_metrics.h"
#include "mx_processor.h"
#include "mx_version.h"

static int
s_reset (void **state)
{
    (void) state;
    mx_metrics_reset ();
    return 0;
}

static void
s_expect_render (const char *expected)
{
    char *text = mx_metrics_render ();
    assert_non_null (text);
    assert_string_equal (text, expected);
    free (text);
}

static void
test_empty (void **state)
{
    (void) state;
    s_expect_render ("");
}

static void
test_counter_and_gauge (void **state)
{
    (void) state;
    mx_metrics_counter_t *a = mx_metrics_counter ("msgx_things_total", "Things seen", "type=FLOP,state=SUCCEEDED");
    mx_metrics_counter_t *b = mx_metrics_counter ("msgx_things_total", "Things seen", "type=ARRV,state=DEAD");
    mx_metrics_gauge_t *g = mx_metrics_gauge ("msgx_level", "A level", NULL);
    //  Get-or-create returns the same handle.
    assert_ptr_equal (a, mx_metrics_counter ("msgx_things_total", "ignored", "type=FLOP,state=SUCCEEDED"));
    mx_metrics_add (a, 3);
    mx_metrics_add (a, 4);
    mx_metrics_add (b, 1);
    mx_metrics_gauge_set (g, 2.5);
    assert_int_equal (mx_metrics_counter_value (a), 7);
    s_expect_render (
        "# HELP msgx_things_total Things seen\n"
        "# TYPE msgx_things_total counter\n"
        "msgx_things_total{type=\"FLOP\",state=\"SUCCEEDED\"} 7\n"
        "msgx_things_total{type=\"ARRV\",state=\"DEAD\"} 1\n"
        "# HELP msgx_level A level\n"
        "# TYPE msgx_level gauge\n"
        "msgx_level 2.5\n");
    mx_metrics_counter_set (b, 10);
    mx_metrics_gauge_set (g, 0.1);
    char *text = mx_metrics_render ();
    assert_non_null (strstr (text, "msgx_things_total{type=\"ARRV\",state=\"DEAD\"} 10\n"));
    assert_non_null (strstr (text, "msgx_level 0.1\n"));
    free (text);
}

static void
test_gauge_unknown_is_nan (void **state)
{
    (void) state;
    mx_metrics_gauge_t *g = mx_metrics_gauge ("msgx_lag", "Lag", "target=KAFKA:msg");
    assert_true (isnan (mx_metrics_gauge_value (g)));
    s_expect_render (
        "# HELP msgx_lag Lag\n"
        "# TYPE msgx_lag gauge\n"
        "msgx_lag{target=\"KAFKA:msg\"} NaN\n");
    mx_metrics_gauge_set (g, 0);
    mx_metrics_gauge_set (mx_metrics_gauge ("msgx_inf", "Inf", NULL), INFINITY);
    s_expect_render (
        "# HELP msgx_lag Lag\n"
        "# TYPE msgx_lag gauge\n"
        "msgx_lag{target=\"KAFKA:msg\"} 0\n"
        "# HELP msgx_inf Inf\n"
        "# TYPE msgx_inf gauge\n"
        "msgx_inf +Inf\n");
    mx_metrics_gauge_set (g, NAN);
    char *text = mx_metrics_render ();
    assert_non_null (strstr (text, "msgx_lag{target=\"KAFKA:msg\"} NaN\n"));
    free (text);
}

static void
test_escaping (void **state)
{
    (void) state;
    mx_metrics_gauge_set (mx_metrics_gauge ("msgx_odd", "Help with \\ and\nnewline and \"quotes\"",
                                            "path=C:\\dir,quote=say \"hi\",line=a\nb"), 1);
    s_expect_render (
        "# HELP msgx_odd Help with \\\\ and\\nnewline and \"quotes\"\n"
        "# TYPE msgx_odd gauge\n"
        "msgx_odd{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",line=\"a\\nb\"} 1\n");
}

static void
test_histogram (void **state)
{
    (void) state;
    static const double bounds [] = { 0.5, 1, 5 };
    mx_metrics_histogram_t *h = mx_metrics_histogram ("msgx_latency_seconds", "Latency", "kind=x", bounds, 3);
    mx_metrics_histogram_observe (h, 0.25);
    mx_metrics_histogram_observe (h, 0.5);     //  le is inclusive
    mx_metrics_histogram_observe (h, 3);
    mx_metrics_histogram_observe (h, 100);
    s_expect_render (
        "# HELP msgx_latency_seconds Latency\n"
        "# TYPE msgx_latency_seconds histogram\n"
        "msgx_latency_seconds_bucket{kind=\"x\",le=\"0.5\"} 2\n"
        "msgx_latency_seconds_bucket{kind=\"x\",le=\"1\"} 2\n"
        "msgx_latency_seconds_bucket{kind=\"x\",le=\"5\"} 3\n"
        "msgx_latency_seconds_bucket{kind=\"x\",le=\"+Inf\"} 4\n"
        "msgx_latency_seconds_sum{kind=\"x\"} 103.75\n"
        "msgx_latency_seconds_count{kind=\"x\"} 4\n");
}

static void
test_standard (void **state)
{
    (void) state;
    mx_actors_register_metrics ();
    mx_metrics_add (mx_processor_messages ("FLOP", "SUCCEEDED"), 2);
    mx_metrics_add (mx_delivery_events_sent ("KAFKA:msg"), 5);
    mx_metrics_histogram_observe (mx_processor_batch_size (), 7);
    char *text = mx_metrics_render ();
    assert_non_null (strstr (text, "# TYPE msgx_pipeline_hole_aged_out_total counter\n"
                                   "msgx_pipeline_hole_aged_out_total 0\n"));
    assert_non_null (strstr (text, "msgx_pipeline_late_arrival_detected_total 0\n"));
    assert_non_null (strstr (text, "msgx_crash_loop_total 0\n"));
    assert_non_null (strstr (text, "msgx_events_sent_total{target=\"KAFKA:msg\"} 5\n"));
    assert_non_null (strstr (text, "msgx_events_sent_total{target=\"KAFKA:schd\"} 0\n"));
    //  Exactly-once delivery's figures, at 0 before any look.
    assert_non_null (strstr (text, "msgx_delivery_inspected_total{target=\"KAFKA:msg\"} 0\n"));
    assert_non_null (strstr (text, "msgx_delivery_inspections_total{target=\"KAFKA:schd\",result=\"failed\"} 0\n"));
    assert_non_null (strstr (text, "msgx_delivery_inspection_seconds_count{target=\"KAFKA:msg\"} 0\n"));
    //  Latency: mailbox polls, and ingress record -> acknowledgement.
    assert_non_null (strstr (text, "# TYPE msgx_ingress_polls_total counter\nmsgx_ingress_polls_total 0\n"));
    assert_non_null (strstr (text, "# TYPE msgx_delivery_latency_seconds histogram\n"));
    assert_non_null (strstr (text, "msgx_delivery_latency_seconds_bucket{target=\"KAFKA:msg\",le=\"0.001\"} 0\n"));
    assert_non_null (strstr (text, "msgx_delivery_latency_seconds_count{target=\"KAFKA:ref\"} 0\n"));
    assert_non_null (strstr (text, "msgx_messages_total{type=\"FLOP\",state=\"SUCCEEDED\"} 2\n"));
    assert_non_null (strstr (text, "msgx_batch_size_bucket{le=\"5\"} 0\n"));
    assert_non_null (strstr (text, "msgx_batch_size_bucket{le=\"10\"} 1\n"));
    assert_non_null (strstr (text, "msgx_batch_size_count 1\n"));
    assert_non_null (strstr (text, "# TYPE msgx_processing_seconds histogram\n"));
    assert_non_null (strstr (text, "msgx_log_dropped_total 0\n"));
    assert_non_null (strstr (text, "# TYPE msgx_build_info gauge\n"
                                   "msgx_build_info{version=\"" MX_VERSION "\",commit=\"" MX_COMMIT "\"} 1\n"));
    free (text);
}

#define S_THREADS 4
#define S_ROUNDS 100000

typedef struct {
    mx_metrics_counter_t *counter;
    mx_metrics_histogram_t *histogram;
} s_work_t;

static void *
s_worker (void *arg)
{
    s_work_t *work = (s_work_t *) arg;
    for (int i = 0; i < S_ROUNDS; i++) {
        mx_metrics_add (work->counter, 1);
        mx_metrics_histogram_observe (work->histogram, 0.5);
        //  Registration of the same series from several threads at once.
        if (i % 10000 == 0)
            assert_ptr_equal (mx_metrics_counter ("msgx_work_total", "Work", "kind=w"), work->counter);
    }
    return NULL;
}

static void
test_concurrency (void **state)
{
    (void) state;
    static const double bounds [] = { 1 };
    s_work_t work = {
        .counter = mx_metrics_counter ("msgx_work_total", "Work", "kind=w"),
        .histogram = mx_metrics_histogram ("msgx_work_seconds", "Work time", NULL, bounds, 1)
    };
    pthread_t threads [S_THREADS];
    for (int i = 0; i < S_THREADS; i++)
        assert_int_equal (pthread_create (&threads [i], NULL, s_worker, &work), 0);
    for (int i = 0; i < S_THREADS; i++)
        assert_int_equal (pthread_join (threads [i], NULL), 0);
    assert_int_equal (mx_metrics_counter_value (work.counter), (uint64_t) S_THREADS * S_ROUNDS);
    char *text = mx_metrics_render ();
    assert_non_null (strstr (text, "msgx_work_total{kind=\"w\"} 400000\n"));
    assert_non_null (strstr (text, "msgx_work_seconds_bucket{le=\"1\"} 400000\n"));
    assert_non_null (strstr (text, "msgx_work_seconds_sum 200000\n"));
    assert_non_null (strstr (text, "msgx_work_seconds_count 400000\n"));
    free (text);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_empty, s_reset, s_reset),
        cmocka_unit_test_setup_teardown (test_counter_and_gauge, s_reset, s_reset),
        cmocka_unit_test_setup_teardown (test_gauge_unknown_is_nan, s_reset, s_reset),
        cmocka_unit_test_setup_teardown (test_escaping, s_reset, s_reset),
        cmocka_unit_test_setup_teardown (test_histogram, s_reset, s_reset),
        cmocka_unit_test_setup_teardown (test_standard, s_reset, s_reset),
        cmocka_unit_test_setup_teardown (test_concurrency, s_reset, s_reset),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
