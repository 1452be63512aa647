/*  Unit tests: mx_tz against the system's zone files.

    Expected instants were taken from `zdump -v` of the same zone files when
    the test was written, e.g.
      zdump -v -c 1988,1989 Asia/Shanghai
      Sat Apr 16 17:59:59 1988 UT = Sun Apr 17 01:59:59 1988 CST gmtoff=28800
      Sat Apr 16 18:00:00 1988 UT = Sun Apr 17 03:00:00 1988 CDT gmtoff=32400
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mx_tz.h"

#define S_MS(seconds) ((int64_t) (seconds) * 1000)

static mx_tz_t *
s_load (const char *name)
{
    char *error = NULL;
    mx_tz_t *zone = mx_tz_load (name, &error);
    if (!zone)
        fail_msg ("cannot load %s: %s", name, error ? error : "(no error)");
    assert_null (error);
    assert_string_equal (mx_tz_name (zone), name);
    return zone;
}

static void
s_assert_iso (const mx_tz_t *zone, int64_t utc_ms, const char *expected)
{
    char buf [32];
    assert_string_equal (mx_tz_format_iso (zone, utc_ms, buf, sizeof buf), expected);
}

static void
test_civil_calendar (void **state)
{
    (void) state;
    assert_int_equal (mx_tz_days_from_civil (1970, 1, 1), 0);
    assert_int_equal (mx_tz_days_from_civil (1969, 12, 31), -1);
    assert_int_equal (mx_tz_days_from_civil (2000, 3, 1), 11017);
    assert_int_equal (mx_tz_days_from_civil (2021, 1, 23), 18650);
    assert_int_equal (mx_tz_days_from_civil (1600, 1, 1), -135140);
    //  Round trip over four centuries either side of the epoch.
    for (int64_t days = -146097; days <= 146097; days += 17) {
        int year, month, day;
        mx_tz_civil_from_days (days, &year, &month, &day);
        assert_true (day >= 1 && day <= mx_tz_days_in_month (year, month));
        assert_int_equal (mx_tz_days_from_civil (year, month, day), days);
    }
    assert_int_equal (mx_tz_days_in_month (2024, 2), 29);
    assert_int_equal (mx_tz_days_in_month (2023, 2), 28);
    assert_int_equal (mx_tz_days_in_month (2000, 2), 29);
    assert_int_equal (mx_tz_days_in_month (1900, 2), 28);
    assert_int_equal (mx_tz_days_in_month (2021, 4), 30);
    assert_int_equal (mx_tz_days_in_month (2021, 12), 31);
    assert_int_equal (mx_tz_days_in_month (2021, 0), 0);
    assert_int_equal (mx_tz_days_in_month (2021, 13), 0);
}

static void
test_shanghai (void **state)
{
    (void) state;
    mx_tz_t *zone = s_load ("Asia/Shanghai");
    //  Today: +08:00 all year.
    int64_t utc = mx_tz_local_to_utc (zone, 2021, 1, 23, 5, 35, 0);
    assert_int_equal (utc, S_MS (1611351300));          //  2021-01-22T21:35:00Z
    assert_int_equal (mx_tz_offset_at (zone, utc), 28800);
    s_assert_iso (zone, utc, "2021-01-23T05:35:00+08:00");
    assert_int_equal (mx_tz_local_to_utc (zone, 2018, 11, 5, 22, 31, 26), S_MS (1541428286));
    assert_int_equal (mx_tz_offset_at (zone, mx_tz_local_to_utc (zone, 2024, 7, 1, 12, 0, 0)),
                      28800);

    //  Daylight saving 1986-1991 (zdump above): 1988-04-17 02:00 CST -> 03:00 CDT.
    assert_int_equal (mx_tz_offset_at (zone, S_MS (577216800) - 1000), 28800);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (577216800)), 32400);
    s_assert_iso (zone, S_MS (577216800), "1988-04-17T03:00:00+09:00");
    //  Mid-summer 1988 is CDT.
    assert_int_equal (mx_tz_local_to_utc (zone, 1988, 7, 1, 12, 0, 0), S_MS (583729200));
    assert_int_equal (mx_tz_offset_at (zone, S_MS (583729200)), 32400);
    //  02:30 did not exist that night: read with the offset before the gap.
    int64_t gap = mx_tz_local_to_utc (zone, 1988, 4, 17, 2, 30, 0);
    assert_int_equal (gap, S_MS (577218600));
    s_assert_iso (zone, gap, "1988-04-17T03:30:00+09:00");
    //  Local mean time before 1901, with seconds in the offset.
    s_assert_iso (zone, S_MS (-2177481944), "1900-12-31T23:59:59+08:05:43");
    s_assert_iso (zone, S_MS (-2177481943), "1900-12-31T23:54:17+08:00");

    //  Local date: 2021-01-22T16:30Z is already the 23rd in Shanghai.
    char date [MX_TZ_DATE_BUFSIZE];
    assert_int_equal (mx_tz_local_day (zone, S_MS (1611333000)), 18650);
    assert_string_equal (mx_tz_format_date (zone, S_MS (1611333000), date, sizeof date),
                         "2021-01-23");
    assert_int_equal (mx_tz_local_day (zone, S_MS (1611333000 - 1800) - 1), 18649);
    //  Before the epoch: 1969-12-31T16:30Z is 1970-01-01 00:30 local.
    assert_int_equal (mx_tz_local_day (zone, S_MS (-27000)), 0);
    assert_int_equal (mx_tz_local_day (zone, S_MS (-27000 - 1800) - 1), -1);
    mx_tz_destroy (&zone);
    mx_tz_destroy (&zone);
    assert_null (zone);
}

static void
test_utc (void **state)
{
    (void) state;
    mx_tz_t *zone = s_load ("UTC");
    assert_int_equal (mx_tz_local_to_utc (zone, 2021, 1, 1, 0, 0, 0), S_MS (1609459200));
    assert_int_equal (mx_tz_local_to_utc (zone, 1970, 1, 1, 0, 0, 0), 0);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4109878800)), 0);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (-2177481944)), 0);
    s_assert_iso (zone, S_MS (1609459200), "2021-01-01T00:00:00+00:00");
    s_assert_iso (zone, S_MS (1609459200) + 250, "2021-01-01T00:00:00.250+00:00");
    s_assert_iso (zone, -1, "1969-12-31T23:59:59.999+00:00");
    //  Years of more than four digits take the slower path, same format.
    s_assert_iso (zone, S_MS (253402300799), "9999-12-31T23:59:59+00:00");
    s_assert_iso (zone, S_MS (253402300800) + 5, "10000-01-01T00:00:00.005+00:00");
    char date [MX_TZ_DATE_BUFSIZE];
    assert_string_equal (mx_tz_format_date (zone, S_MS (-27000), date, sizeof date),
                         "1969-12-31");
    assert_int_equal (mx_tz_local_day (zone, S_MS (-27000)), -1);
    mx_tz_destroy (&zone);
}

static void
test_berlin_both_transitions (void **state)
{
    (void) state;
    mx_tz_t *zone = s_load ("Europe/Berlin");
    //  2024-03-31 02:00 CET -> 03:00 CEST at 01:00Z.
    assert_int_equal (mx_tz_offset_at (zone, S_MS (1711846800) - 1), 3600);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (1711846800)), 7200);
    assert_int_equal (mx_tz_local_to_utc (zone, 2024, 3, 31, 1, 59, 59), S_MS (1711846799));
    assert_int_equal (mx_tz_local_to_utc (zone, 2024, 3, 31, 3, 0, 0), S_MS (1711846800));
    //  Gap: 02:30 is read with the offset before it (+01:00) and is 03:30 CEST.
    int64_t gap = mx_tz_local_to_utc (zone, 2024, 3, 31, 2, 30, 0);
    assert_int_equal (gap, S_MS (1711848600));
    s_assert_iso (zone, gap, "2024-03-31T03:30:00+02:00");

    //  2024-10-27 03:00 CEST -> 02:00 CET at 01:00Z.
    assert_int_equal (mx_tz_offset_at (zone, S_MS (1729990800) - 1), 7200);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (1729990800)), 3600);
    //  Overlap: 02:30 happens twice; the earlier one (CEST) is chosen.
    int64_t overlap = mx_tz_local_to_utc (zone, 2024, 10, 27, 2, 30, 0);
    assert_int_equal (overlap, S_MS (1729989000));
    s_assert_iso (zone, overlap, "2024-10-27T02:30:00+02:00");
    s_assert_iso (zone, overlap + S_MS (3600), "2024-10-27T02:30:00+01:00");
    assert_int_equal (mx_tz_local_to_utc (zone, 2024, 10, 27, 3, 0, 0), S_MS (1729994400));
    assert_int_equal (mx_tz_local_to_utc (zone, 2024, 10, 27, 1, 59, 59), S_MS (1729987199));
    s_assert_iso (zone, mx_tz_local_to_utc (zone, 2024, 1, 15, 12, 0, 0),
                  "2024-01-15T12:00:00+01:00");
    mx_tz_destroy (&zone);
}

static void
test_new_york (void **state)
{
    (void) state;
    mx_tz_t *zone = s_load ("America/New_York");
    //  Gap 2024-03-10 02:00 EST -> 03:00 EDT: 02:30 read as EST.
    assert_int_equal (mx_tz_local_to_utc (zone, 2024, 3, 10, 2, 30, 0), S_MS (1710055800));
    s_assert_iso (zone, S_MS (1710055800), "2024-03-10T03:30:00-04:00");
    //  Overlap 2024-11-03 01:30 happens twice: the earlier one is EDT.
    int64_t overlap = mx_tz_local_to_utc (zone, 2024, 11, 3, 1, 30, 0);
    assert_int_equal (overlap, S_MS (1730611800));
    s_assert_iso (zone, overlap, "2024-11-03T01:30:00-04:00");
    s_assert_iso (zone, overlap + S_MS (3600), "2024-11-03T01:30:00-05:00");
    //  Negative offsets and milliseconds before the epoch.
    s_assert_iso (zone, -1, "1969-12-31T18:59:59.999-05:00");
    assert_int_equal (mx_tz_local_day (zone, -1), -1);
    mx_tz_destroy (&zone);
}

//  After the last transition of the file the footer rule decides.
static void
test_far_future_footer_rules (void **state)
{
    (void) state;
    mx_tz_t *zone = s_load ("Europe/Berlin");       //  CET-1CEST,M3.5.0,M10.5.0/3
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4109878800) - 1), 3600);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4109878800)), 7200);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4128627600) - 1), 7200);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4128627600)), 3600);
    assert_int_equal (mx_tz_local_to_utc (zone, 2100, 7, 1, 12, 0, 0),
                      S_MS (4118119200));      //  10:00Z, CEST
    s_assert_iso (zone, mx_tz_local_to_utc (zone, 2100, 3, 28, 2, 30, 0),
                  "2100-03-28T03:30:00+02:00");
    s_assert_iso (zone, mx_tz_local_to_utc (zone, 2100, 10, 31, 2, 30, 0),
                  "2100-10-31T02:30:00+02:00");
    mx_tz_destroy (&zone);

    zone = s_load ("Australia/Sydney");             //  AEST-10AEDT,M10.1.0,M4.1.0/3
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4110451200) - 1), 39600);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4110451200)), 36000);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4126176000) - 1), 36000);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4126176000)), 39600);
    s_assert_iso (zone, mx_tz_local_to_utc (zone, 2100, 1, 1, 0, 0, 0),
                  "2100-01-01T00:00:00+11:00");
    mx_tz_destroy (&zone);

    zone = s_load ("America/Nuuk");                 //  <-02>2<-01>,M3.5.0/-1,M10.5.0/0
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4109878800) - 1), -7200);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4109878800)), -3600);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4128627600) - 1), -3600);
    assert_int_equal (mx_tz_offset_at (zone, S_MS (4128627600)), -7200);
    mx_tz_destroy (&zone);

    zone = s_load ("Asia/Shanghai");                //  CST-8
    s_assert_iso (zone, mx_tz_local_to_utc (zone, 2100, 7, 1, 12, 0, 0),
                  "2100-07-01T12:00:00+08:00");
    mx_tz_destroy (&zone);
}

static void
s_assert_refused (const char *name, const char *reason)
{
    char *error = NULL;
    mx_tz_t *zone = mx_tz_load (name, &error);
    assert_null (zone);
    assert_non_null (error);
    if (!strstr (error, reason))
        fail_msg ("zone '%s': error '%s' does not say '%s'", name ? name : "(null)",
                  error, reason);
    assert_null (strchr (error, '\n'));
    free (error);
    //  Without an error pointer it fails the same, quietly.
    assert_null (mx_tz_load (name, NULL));
}

static void
test_bad_names (void **state)
{
    (void) state;
    s_assert_refused (NULL, "empty");
    s_assert_refused ("", "empty");
    s_assert_refused ("../../etc/passwd", "not a time zone name");
    s_assert_refused ("Asia/../Asia/Shanghai", "not a time zone name");
    s_assert_refused ("/etc/localtime", "not a time zone name");
    s_assert_refused ("Asia/Shanghai ", "not a time zone name");
    s_assert_refused ("zone.tab", "not a time zone name");
    s_assert_refused ("Nowhere/City", "unknown time zone");
    s_assert_refused ("Asia", "unknown time zone");
    s_assert_refused ("leapseconds", "not a compiled time zone");
    s_assert_refused ("right/UTC", "leap seconds");
}

//  One loaded zone, read from several threads at once.
typedef struct {
    const mx_tz_t *zone;
    int64_t sum;
} s_worker_t;

static void *
s_worker (void *arg)
{
    s_worker_t *worker = arg;
    for (int day = 0; day < 2000; day++) {
        int64_t days = mx_tz_days_from_civil (2020, 1, 1) + day;
        int year, month, mday;
        mx_tz_civil_from_days (days, &year, &month, &mday);
        int64_t utc = mx_tz_local_to_utc (worker->zone, year, month, mday, 12, 0, 0);
        worker->sum += utc / 1000 + mx_tz_offset_at (worker->zone, utc);
    }
    return NULL;
}

static void
test_shared_between_threads (void **state)
{
    (void) state;
    mx_tz_t *zone = s_load ("Europe/Berlin");
    s_worker_t alone = { zone, 0 };
    s_worker (&alone);
    s_worker_t workers [4];
    pthread_t threads [4];
    for (int i = 0; i < 4; i++) {
        workers [i] = (s_worker_t) { zone, 0 };
        assert_int_equal (pthread_create (&threads [i], NULL, s_worker, &workers [i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal (pthread_join (threads [i], NULL), 0);
        assert_int_equal (workers [i].sum, alone.sum);
    }
    mx_tz_destroy (&zone);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_civil_calendar),
        cmocka_unit_test (test_shanghai),
        cmocka_unit_test (test_utc),
        cmocka_unit_test (test_berlin_both_transitions),
        cmocka_unit_test (test_new_york),
        cmocka_unit_test (test_far_future_footer_rules),
        cmocka_unit_test (test_bad_names),
        cmocka_unit_test (test_shared_between_threads),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
