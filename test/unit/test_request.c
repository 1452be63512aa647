/*  Unit tests of domain/mx_request: the RQFD / RQRD text (WIRE.md §9),
    the SEQN counter's wrap, airport-time formats and parsing, the coming
    operation day, and the degraded RESP match with its zone and units.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_request.h"
#include "mx_tz.h"

static mx_tz_t *s_shanghai;
static mx_tz_t *s_berlin;
static mx_tz_t *s_utc;

static int
s_load_zones (void **state)
{
    char *error = NULL;
    s_shanghai = mx_tz_load ("Asia/Shanghai", &error);
    s_berlin = mx_tz_load ("Europe/Berlin", &error);
    s_utc = mx_tz_load ("UTC", &error);
    if (!s_shanghai || !s_berlin || !s_utc)
        fail_msg ("zone: %s", error);
    return 0;
}

static int
s_free_zones (void **state)
{
    mx_tz_destroy (&s_shanghai);
    mx_tz_destroy (&s_berlin);
    mx_tz_destroy (&s_utc);
    return 0;
}

//  UTC ms of a local wall time in zone.
static int64_t
s_at (const mx_tz_t *zone, int year, int month, int day, int hour, int minute, int second)
{
    return mx_tz_local_to_utc (zone, year, month, day, hour, minute, second);
}

//  UTC ms of a UTC wall time.
static int64_t
s_utc_at (int year, int month, int day, int hour, int minute, int second)
{
    return (mx_tz_days_from_civil (year, month, day) * 86400 + hour * 3600 + minute * 60 + second) * 1000;
}

//  ---------------------------------------------------------------------
//  SEQN

static void
test_seqn_wraps (void **state)
{
    assert_int_equal (mx_request_seqn_next (0), 1);
    assert_int_equal (mx_request_seqn_next (1), 2);
    assert_int_equal (mx_request_seqn_next (999998), 999999);
    assert_int_equal (mx_request_seqn_next (999999), 1);
    //  A full turn visits every value once and comes back.
    int seqn = 0;
    for (int i = 0; i < MX_REQUEST_SEQN_MAX; i++) {
        seqn = mx_request_seqn_next (seqn);
        assert_true (seqn >= 1 && seqn <= MX_REQUEST_SEQN_MAX);
        assert_int_equal (seqn, i + 1);
    }
    assert_int_equal (mx_request_seqn_next (seqn), 1);
}

static void
test_seqn_format (void **state)
{
    char buf [MX_REQUEST_SEQN_BUFSIZE], marker [MX_REQUEST_MARKER_BUFSIZE];
    assert_string_equal (mx_request_seqn_format (1, buf, sizeof buf), "000001");
    assert_string_equal (mx_request_seqn_format (123, buf, sizeof buf), "000123");
    assert_string_equal (mx_request_seqn_format (999999, buf, sizeof buf), "999999");
    assert_string_equal (mx_request_seqn_marker (42, marker, sizeof marker), "<SEQN>000042</SEQN>");
}

//  ---------------------------------------------------------------------
//  Encoding

static void
test_encode_rqfd_exact (void **state)
{
    //  WIRE.md §9's example: sent 2021-01-13 15:20 local (07:20Z), the
    //  window of 23 January local.
    mx_request_t request = {
        .kind = MX_REQUEST_RQFD, .seqn = 123,
        .window_begin = s_at (s_shanghai, 2021, 1, 23, 0, 0, 0),
        .window_end = s_at (s_shanghai, 2021, 1, 23, 23, 59, 0)
    };
    char *error = NULL;
    char *xml = mx_request_encode (&request, s_shanghai, s_utc_at (2021, 1, 13, 7, 20, 0) + 999, &error);
    assert_non_null (xml);
    assert_string_equal (xml,
        "<MSG><META><SNDR>MSGX</SNDR><SEQN>000123</SEQN><DTTM>20210113152000</DTTM>"
        "<TYPE>RQFD</TYPE><STYP>NONE</STYP></META>"
        "<RQFD><STDB>23JAN210000</STDB><STDE>23JAN212359</STDE></RQFD></MSG>");
    free (xml);
}

static void
test_encode_rqrd_exact (void **state)
{
    mx_request_t request = { .kind = MX_REQUEST_RQRD, .rtype = "SLST", .seqn = 999999 };
    char *error = NULL;
    char *xml = mx_request_encode (&request, s_shanghai, s_utc_at (2021, 12, 31, 16, 0, 5), &error);
    assert_non_null (xml);
    //  16:00:05Z is already the next day in Shanghai.
    assert_string_equal (xml,
        "<MSG><META><SNDR>MSGX</SNDR><SEQN>999999</SEQN><DTTM>20220101000005</DTTM>"
        "<TYPE>RQRD</TYPE><STYP>SLST</STYP></META><RQRD><RTYP>SLST</RTYP></RQRD></MSG>");
    free (xml);
}

static void
test_encode_refuses (void **state)
{
    int64_t now = s_utc_at (2021, 1, 13, 7, 20, 0);
    int64_t day = s_at (s_shanghai, 2021, 1, 23, 0, 0, 0);
    struct {
        mx_request_t request;
        const char *why;
    } cases [] = {
        { { .kind = MX_REQUEST_RQRD, .rtype = "SLST", .seqn = 0 }, "SEQN 0" },
        { { .kind = MX_REQUEST_RQRD, .rtype = "SLST", .seqn = 1000000 }, "SEQN 1000000" },
        { { .kind = MX_REQUEST_RQRD, .rtype = "", .seqn = 1 }, "empty list" },
        { { .kind = MX_REQUEST_RQRD, .rtype = "slst", .seqn = 1 }, "lower case" },
        { { .kind = MX_REQUEST_RQRD, .rtype = "A<B>", .seqn = 1 }, "markup" },
        { { .kind = MX_REQUEST_RQFD, .seqn = 1, .window_begin = day, .window_end = day - 60000 }, "ends first" },
        { { .kind = MX_REQUEST_RQFD, .seqn = 1, .window_begin = s_at (s_shanghai, 1999, 12, 31, 0, 0, 0),
            .window_end = day }, "1999" },
        { { .kind = MX_REQUEST_RQFD, .seqn = 1, .window_begin = day,
            .window_end = s_at (s_shanghai, 2100, 1, 1, 0, 0, 0) }, "2100" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *error = NULL;
        char *xml = mx_request_encode (&cases [i].request, s_shanghai, now, &error);
        if (xml)
            fail_msg ("%s: encoded %s", cases [i].why, xml);
        assert_non_null (error);
        free (error);
    }
}

//  ---------------------------------------------------------------------
//  Airport time

static void
test_dttm_in_zone (void **state)
{
    char buf [MX_REQUEST_DTTM_BUFSIZE];
    int64_t instant = s_utc_at (2021, 1, 13, 16, 30, 15) + 250;
    assert_string_equal (mx_request_format_dttm (s_shanghai, instant, buf, sizeof buf), "20210114003015");
    assert_string_equal (mx_request_format_dttm (s_utc, instant, buf, sizeof buf), "20210113163015");
    assert_string_equal (mx_request_format_dttm (s_berlin, instant, buf, sizeof buf), "20210113173015");
    //  Summer time in Berlin: +02:00.
    assert_string_equal (mx_request_format_dttm (s_berlin, s_utc_at (2021, 7, 1, 10, 0, 0), buf, sizeof buf),
                         "20210701120000");
}

static void
test_window_format (void **state)
{
    char buf [MX_REQUEST_WINDOW_BUFSIZE];
    const char *months [] = { "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC" };
    for (int month = 1; month <= 12; month++) {
        char expected [16];
        snprintf (expected, sizeof expected, "05%s210930", months [month - 1]);
        assert_string_equal (mx_request_format_window (s_shanghai, s_at (s_shanghai, 2021, month, 5, 9, 30, 0),
                                                       buf, sizeof buf), expected);
    }
    //  Seconds are dropped, yy is 20yy.
    assert_string_equal (mx_request_format_window (s_shanghai, s_at (s_shanghai, 2000, 1, 1, 0, 0, 59), buf, sizeof buf),
                         "01JAN000000");
    assert_string_equal (mx_request_format_window (s_shanghai, s_at (s_shanghai, 2099, 12, 31, 23, 59, 0), buf, sizeof buf),
                         "31DEC992359");
    assert_null (mx_request_format_window (s_shanghai, s_at (s_shanghai, 1999, 12, 31, 23, 59, 0), buf, sizeof buf));
    assert_null (mx_request_format_window (s_shanghai, s_at (s_shanghai, 2100, 1, 1, 0, 0, 0), buf, sizeof buf));
}

static void
test_parse_local (void **state)
{
    int64_t ms = 0;
    char *error = NULL;
    assert_int_equal (mx_request_parse_local (s_shanghai, "2021-01-23T00:00", &ms, &error), 0);
    assert_true (ms == s_utc_at (2021, 1, 22, 16, 0, 0));
    assert_int_equal (mx_request_parse_local (s_utc, "2021-01-23T00:00", &ms, &error), 0);
    assert_true (ms == s_utc_at (2021, 1, 23, 0, 0, 0));
    assert_int_equal (mx_request_parse_local (s_berlin, "2021-07-01T12:00", &ms, &error), 0);
    assert_true (ms == s_utc_at (2021, 7, 1, 10, 0, 0));
    assert_int_equal (mx_request_parse_local (s_shanghai, "2024-02-29T23:59", &ms, &error), 0);

    const char *bad [] = {
        "", "2021-01-23", "2021-01-23 00:00", "2021-01-23T00:00:00", "2021-1-23T00:00", "2021-02-29T00:00",
        "2021-13-01T00:00", "2021-01-32T00:00", "2021-01-23T24:00", "2021-01-23T23:60", "2021-01-23T0a:00",
        "+021-01-23T00:00", "2021-01-23T00:00Z"
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        error = NULL;
        if (mx_request_parse_local (s_shanghai, bad [i], &ms, &error) == 0)
            fail_msg ("'%s' was accepted", bad [i]);
        assert_non_null (error);
        assert_non_null (strstr (error, "YYYY-MM-DDTHH:MM"));
        free (error);
    }
    error = NULL;
    assert_int_equal (mx_request_parse_local (s_shanghai, NULL, &ms, &error), -1);
    free (error);
}

static void
test_coming_day (void **state)
{
    int64_t begin = 0, end = 0;
    char b [MX_REQUEST_WINDOW_BUFSIZE], e [MX_REQUEST_WINDOW_BUFSIZE];
    //  Evening: tomorrow.
    mx_request_coming_day (s_shanghai, 0, s_at (s_shanghai, 2021, 1, 22, 22, 0, 0), &begin, &end);
    assert_string_equal (mx_request_format_window (s_shanghai, begin, b, sizeof b), "23JAN210000");
    assert_string_equal (mx_request_format_window (s_shanghai, end, e, sizeof e), "23JAN212359");
    assert_true (end - begin == (24 * 60 - 1) * 60000LL);
    //  Just after midnight the 23rd has begun: the 24th comes next.
    mx_request_coming_day (s_shanghai, 0, s_at (s_shanghai, 2021, 1, 23, 0, 30, 0), &begin, &end);
    assert_string_equal (mx_request_format_window (s_shanghai, begin, b, sizeof b), "24JAN210000");
    //  Cutoff 04:00: at 02:00 the 22nd is still in progress.
    mx_request_coming_day (s_shanghai, 4, s_at (s_shanghai, 2021, 1, 23, 2, 0, 0), &begin, &end);
    assert_string_equal (mx_request_format_window (s_shanghai, begin, b, sizeof b), "23JAN210400");
    assert_string_equal (mx_request_format_window (s_shanghai, end, e, sizeof e), "24JAN210359");
    //  Year end.
    mx_request_coming_day (s_shanghai, 0, s_at (s_shanghai, 2021, 12, 31, 18, 0, 0), &begin, &end);
    assert_string_equal (mx_request_format_window (s_shanghai, begin, b, sizeof b), "01JAN220000");
    //  Spring forward in Berlin: a 23-hour operation day, local bounds kept.
    mx_request_coming_day (s_berlin, 0, s_at (s_berlin, 2021, 3, 27, 20, 0, 0), &begin, &end);
    assert_true (begin == s_utc_at (2021, 3, 27, 23, 0, 0));
    assert_true (end == s_utc_at (2021, 3, 28, 21, 59, 0));
    assert_string_equal (mx_request_format_window (s_berlin, begin, b, sizeof b), "28MAR210000");
    assert_string_equal (mx_request_format_window (s_berlin, end, e, sizeof e), "28MAR212359");
}

static void
test_daily_at (void **state)
{
    int64_t day = mx_tz_days_from_civil (2021, 1, 23);
    assert_true (mx_request_daily_at (s_shanghai, day, 22 * 60 + 30) == s_utc_at (2021, 1, 23, 14, 30, 0));
    assert_true (mx_request_daily_at (s_utc, day, 0) == s_utc_at (2021, 1, 23, 0, 0, 0));
}

//  ---------------------------------------------------------------------
//  The degraded RESP match

static void
test_resp_decide (void **state)
{
    int64_t sent = s_utc_at (2021, 1, 13, 7, 20, 0) + 700;      //  15:20:00.700 local
    int64_t expires = sent + 600000;
    int64_t now = sent + 60000;
    //  The same second counts: DTTM has no milliseconds.
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_SENT, sent, expires, sent - 700, now), MX_REQUEST_RESP_MATCH);
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_WAITING, sent, expires, sent + 5000, now), MX_REQUEST_RESP_MATCH);
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_SENT, sent, expires, sent - 701, now), MX_REQUEST_RESP_STALE);
    //  Nothing sent, or answered already.
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_SENT, -1, -1, sent, now), MX_REQUEST_RESP_NO_REQUEST);
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_DONE, sent, expires, sent + 5000, now), MX_REQUEST_RESP_NO_REQUEST);
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_REGISTERED, -1, expires, sent + 5000, now), MX_REQUEST_RESP_NO_REQUEST);
    //  Expired by state, or past its deadline before the sweep ran.
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_EXPIRED, sent, expires, sent + 5000, now), MX_REQUEST_RESP_EXPIRED);
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_SENT, sent, expires, sent + 5000, expires), MX_REQUEST_RESP_EXPIRED);
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_WAITING, sent, expires, sent + 5000, expires - 1), MX_REQUEST_RESP_MATCH);
    //  Older than the send is stale, whatever became of the request.
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_EXPIRED, sent, expires, sent - 5000, now), MX_REQUEST_RESP_STALE);

    assert_string_equal (mx_request_resp_outcome (MX_REQUEST_RESP_MATCH), "degraded-match");
    assert_string_equal (mx_request_resp_outcome (MX_REQUEST_RESP_NO_REQUEST), "no-matching-request");
    assert_string_equal (mx_request_resp_outcome (MX_REQUEST_RESP_EXPIRED), "request-expired");
    assert_string_equal (mx_request_resp_outcome (MX_REQUEST_RESP_STALE), "stale-response");
}

//  A RESP DTTM is airport local time, sent_at is UTC: compared as instants.
static void
test_resp_zone_and_units (void **state)
{
    int64_t sent = s_utc_at (2021, 1, 13, 7, 20, 0) + 500;      //  07:20:00.500Z = 15:20:00.500 +08:00
    int64_t expires = sent + 600000;
    //  DTTM 20210113152000 read in the airport zone is the sent second.
    int64_t resp = s_at (s_shanghai, 2021, 1, 13, 15, 20, 0);
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_SENT, sent, expires, resp, sent + 1000), MX_REQUEST_RESP_MATCH);
    //  One second earlier local is stale, though 15:19:59 looks "later"
    //  than 07:20 as wall-clock text.
    resp = s_at (s_shanghai, 2021, 1, 13, 15, 19, 59);
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_SENT, sent, expires, resp, sent + 1000), MX_REQUEST_RESP_STALE);
    //  Read as UTC (the wrong zone) the same text would be 8 hours late
    //  and past the timeout.
    resp = s_at (s_utc, 2021, 1, 13, 15, 20, 0);
    assert_int_equal (mx_request_resp_decide (MX_REQUEST_SENT, sent, expires, resp, resp), MX_REQUEST_RESP_EXPIRED);
}

static void
test_names (void **state)
{
    assert_string_equal (mx_request_kind_name (MX_REQUEST_RQFD), "RQFD");
    assert_string_equal (mx_request_kind_name (MX_REQUEST_RQRD), "RQRD");
    const char *names [] = { "REGISTERED", "SENT", "WAITING", "DONE", "EXPIRED" };
    for (int state_ = 0; state_ < 5; state_++) {
        assert_string_equal (mx_request_state_name ((mx_request_state_t) state_), names [state_]);
        assert_int_equal (mx_request_state_lookup (names [state_]), state_);
    }
    assert_int_equal (mx_request_state_lookup ("PENDING"), -1);
    assert_int_equal (mx_request_state_lookup (NULL), -1);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_seqn_wraps),
        cmocka_unit_test (test_seqn_format),
        cmocka_unit_test (test_encode_rqfd_exact),
        cmocka_unit_test (test_encode_rqrd_exact),
        cmocka_unit_test (test_encode_refuses),
        cmocka_unit_test (test_dttm_in_zone),
        cmocka_unit_test (test_window_format),
        cmocka_unit_test (test_parse_local),
        cmocka_unit_test (test_coming_day),
        cmocka_unit_test (test_daily_at),
        cmocka_unit_test (test_resp_decide),
        cmocka_unit_test (test_resp_zone_and_units),
        cmocka_unit_test (test_names),
    };
    return cmocka_run_group_tests (tests, s_load_zones, s_free_zones);
}
