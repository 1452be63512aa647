/*  Unit tests: the watermark rule of SPEC §3.1 and the mailbox polling
    pace (mx_poll_pace).  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "mx_poll_pace.h"
#include "mx_watermark.h"

#define DELAY 300000        //  max-commit-delay 5 min
#define N(a) (sizeof (a) / sizeof (a) [0])

static void
test_contiguous_run_moves_w (void **state)
{
    (void) state;
    int64_t ids [] = { 1, 2, 3, 4 };
    mx_watermark_t r = mx_watermark_advance (0, -1, ids, N (ids), 1000, DELAY);
    assert_int_equal (r.w, 4);
    assert_int_equal (r.admitted, 4);
    assert_int_equal (r.hole_since, -1);
    assert_false (r.released);
    assert_false (r.stopped_at_hole);
}

static void
test_nothing_new_changes_nothing (void **state)
{
    (void) state;
    mx_watermark_t r = mx_watermark_advance (7, 5000, NULL, 0, 9000, DELAY);
    assert_int_equal (r.w, 7);
    assert_int_equal (r.hole_since, 5000);
    assert_int_equal (r.admitted, 0);
}

static void
test_first_hole_starts_the_timer_and_holds_w (void **state)
{
    (void) state;
    int64_t ids [] = { 11, 12, 14, 15 };
    mx_watermark_t r = mx_watermark_advance (10, -1, ids, N (ids), 1000, DELAY);
    assert_int_equal (r.w, 12);
    assert_int_equal (r.admitted, 2);
    assert_int_equal (r.hole_since, 1000);
    assert_true (r.stopped_at_hole);
    assert_false (r.released);
}

static void
test_hole_within_the_window_holds_w (void **state)
{
    (void) state;
    int64_t ids [] = { 14, 15 };
    mx_watermark_t r = mx_watermark_advance (12, 1000, ids, N (ids), 1000 + DELAY - 1, DELAY);
    assert_int_equal (r.w, 12);
    assert_int_equal (r.admitted, 0);
    assert_int_equal (r.hole_since, 1000);
}

static void
test_aged_hole_is_released_alone (void **state)
{
    (void) state;
    //  Hole 13 aged out; 16..17 missing too: a new hole with a fresh timer.
    int64_t ids [] = { 14, 15, 18 };
    mx_watermark_t r = mx_watermark_advance (12, 1000, ids, N (ids), 1000 + DELAY, DELAY);
    assert_true (r.released);
    assert_int_equal (r.released_from, 13);
    assert_int_equal (r.released_to, 13);
    assert_int_equal (r.w, 15);
    assert_int_equal (r.admitted, 2);
    assert_int_equal (r.hole_since, 1000 + DELAY);
    assert_true (r.stopped_at_hole);
}

static void
test_wide_aged_hole_released_as_one_range (void **state)
{
    (void) state;
    int64_t ids [] = { 20, 21 };
    mx_watermark_t r = mx_watermark_advance (12, 0, ids, N (ids), DELAY * 3, DELAY);
    assert_true (r.released);
    assert_int_equal (r.released_from, 13);
    assert_int_equal (r.released_to, 19);
    assert_int_equal (r.w, 21);
    assert_int_equal (r.hole_since, -1);
    assert_false (r.stopped_at_hole);
}

static void
test_filled_hole_clears_the_timer (void **state)
{
    (void) state;
    int64_t ids [] = { 13, 14, 15 };
    mx_watermark_t r = mx_watermark_advance (12, 1000, ids, N (ids), 2000, DELAY);
    assert_int_equal (r.w, 15);
    assert_int_equal (r.hole_since, -1);
    assert_false (r.released);
}

static void
test_new_hole_after_a_filled_one_gets_a_full_window (void **state)
{
    (void) state;
    //  The old hole (13) was seen long ago; it filled, and 16 is missing now.
    int64_t ids [] = { 13, 14, 15, 17 };
    int64_t now = 1000 + DELAY * 10;
    mx_watermark_t r = mx_watermark_advance (12, 1000, ids, N (ids), now, DELAY);
    assert_int_equal (r.w, 15);
    assert_int_equal (r.hole_since, now);
    assert_false (r.released);
    //  Next round, one tick before its own window ends: still held.
    int64_t next [] = { 17 };
    r = mx_watermark_advance (15, now, next, N (next), now + DELAY - 1, DELAY);
    assert_int_equal (r.w, 15);
    assert_false (r.released);
}

static void
test_at_most_one_release_per_round (void **state)
{
    (void) state;
    int64_t ids [] = { 14, 16 };
    mx_watermark_t r = mx_watermark_advance (12, 0, ids, N (ids), DELAY * 100, DELAY);
    assert_true (r.released);
    assert_int_equal (r.released_from, 13);
    assert_int_equal (r.w, 14);
    assert_int_equal (r.hole_since, DELAY * 100);
    //  The second hole (15) is released only after its own full window.
    int64_t next [] = { 16 };
    r = mx_watermark_advance (14, DELAY * 100, next, N (next), DELAY * 101 - 1, DELAY);
    assert_false (r.released);
    r = mx_watermark_advance (14, DELAY * 100, next, N (next), DELAY * 101, DELAY);
    assert_true (r.released);
    assert_int_equal (r.released_from, 15);
    assert_int_equal (r.w, 16);
}

//  ---------------------------------------------------------------------
//  Polling pace: fast 10 ms, idle 1000 ms

static void
test_pace_starts_idle (void **state)
{
    (void) state;
    mx_poll_pace_t pace = mx_poll_pace (10, 1000);
    //  A quiet start: no burst of empty polls.
    assert_int_equal (mx_poll_pace_next (&pace, 5000, false, false), 6000);
    assert_int_equal (mx_poll_pace_next (&pace, 6000, false, false), 7000);
}

static void
test_pace_is_fast_while_rows_arrive (void **state)
{
    (void) state;
    mx_poll_pace_t pace = mx_poll_pace (10, 1000);
    assert_int_equal (mx_poll_pace_next (&pace, 5000, true, false), 5010);
    assert_int_equal (mx_poll_pace_next (&pace, 5010, true, false), 5020);
    //  A full batch: at once, and fast after it.
    assert_int_equal (mx_poll_pace_next (&pace, 5020, true, true), 5020);
    assert_int_equal (mx_poll_pace_next (&pace, 5020, true, false), 5030);
}

static void
test_pace_backs_off_to_idle_by_doubling (void **state)
{
    (void) state;
    mx_poll_pace_t pace = mx_poll_pace (10, 1000);
    int64_t now = mx_poll_pace_next (&pace, 0, true, false);
    assert_int_equal (now, 10);
    const int64_t periods [] = { 20, 40, 80, 160, 320, 640, 1000, 1000, 1000 };
    for (size_t i = 0; i < N (periods); i++) {
        int64_t next = mx_poll_pace_next (&pace, now, false, false);
        assert_int_equal (next - now, periods [i]);
        now = next;
    }
    //  One row after the long quiet: fast again at once.
    assert_int_equal (mx_poll_pace_next (&pace, now, true, false), now + 10);
}

static void
test_pace_failure_waits_the_idle_period (void **state)
{
    (void) state;
    mx_poll_pace_t pace = mx_poll_pace (10, 1000);
    mx_poll_pace_next (&pace, 0, true, false);
    assert_int_equal (mx_poll_pace_failed (&pace, 10), 1010);
    //  Recovered and rows come: fast again.
    assert_int_equal (mx_poll_pace_next (&pace, 1010, true, false), 1020);
}

static void
test_pace_fast_never_slower_than_idle (void **state)
{
    (void) state;
    //  poll-interval below poll-fast: every poll at poll-interval.
    mx_poll_pace_t pace = mx_poll_pace (10, 5);
    assert_int_equal (mx_poll_pace_next (&pace, 0, true, false), 5);
    assert_int_equal (mx_poll_pace_next (&pace, 5, false, false), 10);
    //  An odd idle period is reached, not overshot.
    pace = mx_poll_pace (10, 1500);
    int64_t now = mx_poll_pace_next (&pace, 0, true, false), last = 0;
    for (int i = 0; i < 10; i++) {
        int64_t next = mx_poll_pace_next (&pace, now, false, false);
        last = next - now;
        assert_true (last <= 1500);
        now = next;
    }
    assert_int_equal (last, 1500);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_contiguous_run_moves_w),
        cmocka_unit_test (test_nothing_new_changes_nothing),
        cmocka_unit_test (test_first_hole_starts_the_timer_and_holds_w),
        cmocka_unit_test (test_hole_within_the_window_holds_w),
        cmocka_unit_test (test_aged_hole_is_released_alone),
        cmocka_unit_test (test_wide_aged_hole_released_as_one_range),
        cmocka_unit_test (test_filled_hole_clears_the_timer),
        cmocka_unit_test (test_new_hole_after_a_filled_one_gets_a_full_window),
        cmocka_unit_test (test_at_most_one_release_per_round),
        cmocka_unit_test (test_pace_starts_idle),
        cmocka_unit_test (test_pace_is_fast_while_rows_arrive),
        cmocka_unit_test (test_pace_backs_off_to_idle_by_doubling),
        cmocka_unit_test (test_pace_failure_waits_the_idle_period),
        cmocka_unit_test (test_pace_fast_never_slower_than_idle),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
