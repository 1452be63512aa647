/*  mx_request - see mx_request.h.  */
#include "mx_request.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *s_months [12] = {
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"
};

static const char *s_state_names [] = {
    [MX_REQUEST_REGISTERED] = "REGISTERED",
    [MX_REQUEST_SENT] = "SENT",
    [MX_REQUEST_WAITING] = "WAITING",
    [MX_REQUEST_DONE] = "DONE",
    [MX_REQUEST_EXPIRED] = "EXPIRED",
};

#define S_STATE_COUNT ((int) (sizeof s_state_names / sizeof s_state_names [0]))

static void
s_set_error (char **error, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
s_set_error (char **error, const char *fmt, ...)
{
    if (!error)
        return;
    va_list args;
    va_start (args, fmt);
    char *text = NULL;
    if (vasprintf (&text, fmt, args) < 0)
        text = NULL;
    va_end (args);
    *error = text;
}

static int64_t
s_floor_div (int64_t value, int64_t by)
{
    int64_t quotient = value / by;
    return (value % by != 0 && (value < 0) != (by < 0)) ? quotient - 1 : quotient;
}

//  Local calendar fields of utc_ms in zone, seconds truncated.
typedef struct {
    int year, month, day, hour, minute, second;
} s_local_t;

static s_local_t
s_local (const mx_tz_t *zone, int64_t utc_ms)
{
    int64_t local_s = s_floor_div (utc_ms, 1000) + mx_tz_offset_at (zone, utc_ms);
    int64_t days = s_floor_div (local_s, 86400);
    int64_t in_day = local_s - days * 86400;
    s_local_t local;
    mx_tz_civil_from_days (days, &local.year, &local.month, &local.day);
    local.hour = (int) (in_day / 3600);
    local.minute = (int) (in_day % 3600 / 60);
    local.second = (int) (in_day % 60);
    return local;
}

const char *
mx_request_kind_name (mx_request_kind_t kind)
{
    return kind == MX_REQUEST_RQFD ? "RQFD" : "RQRD";
}

const char *
mx_request_state_name (mx_request_state_t state)
{
    assert ((int) state >= 0 && (int) state < S_STATE_COUNT);
    return s_state_names [state];
}

int
mx_request_state_lookup (const char *name)
{
    for (int state = 0; name && state < S_STATE_COUNT; state++)
        if (strcmp (s_state_names [state], name) == 0)
            return state;
    return -1;
}

int
mx_request_seqn_next (int last)
{
    assert (last >= 0 && last <= MX_REQUEST_SEQN_MAX);
    return last % MX_REQUEST_SEQN_MAX + 1;
}

const char *
mx_request_seqn_format (int seqn, char *buf, size_t size)
{
    assert (seqn >= 1 && seqn <= MX_REQUEST_SEQN_MAX);
    assert (size >= MX_REQUEST_SEQN_BUFSIZE);
    snprintf (buf, size, "%06d", seqn);
    return buf;
}

const char *
mx_request_seqn_marker (int seqn, char *buf, size_t size)
{
    assert (size >= MX_REQUEST_MARKER_BUFSIZE);
    char digits [MX_REQUEST_SEQN_BUFSIZE];
    snprintf (buf, size, "<SEQN>%s</SEQN>", mx_request_seqn_format (seqn, digits, sizeof digits));
    return buf;
}

const char *
mx_request_format_dttm (const mx_tz_t *zone, int64_t utc_ms, char *buf, size_t size)
{
    assert (zone && size >= MX_REQUEST_DTTM_BUFSIZE);
    s_local_t local = s_local (zone, utc_ms);
    if (local.year < 0 || local.year > 9999)
        return NULL;
    snprintf (buf, size, "%04d%02d%02d%02d%02d%02d", local.year, local.month, local.day,
              local.hour, local.minute, local.second);
    return buf;
}

const char *
mx_request_format_window (const mx_tz_t *zone, int64_t utc_ms, char *buf, size_t size)
{
    assert (zone && size >= MX_REQUEST_WINDOW_BUFSIZE);
    s_local_t local = s_local (zone, utc_ms);
    if (local.year < 2000 || local.year > 2099)
        return NULL;
    snprintf (buf, size, "%02d%s%02d%02d%02d", local.day, s_months [local.month - 1],
              local.year - 2000, local.hour, local.minute);
    return buf;
}

//  n decimal digits at text; -1 if any is not a digit.
static int
s_digits (const char *text, int n)
{
    int value = 0;
    for (int i = 0; i < n; i++) {
        if (text [i] < '0' || text [i] > '9')
            return -1;
        value = value * 10 + (text [i] - '0');
    }
    return value;
}

int
mx_request_parse_local (const mx_tz_t *zone, const char *text, int64_t *utc_ms, char **error)
{
    assert (zone && utc_ms);
    //  YYYY-MM-DDTHH:MM, nothing more.
    bool shaped = text && strlen (text) == 16 && text [4] == '-' && text [7] == '-'
               && text [10] == 'T' && text [13] == ':';
    int year = shaped ? s_digits (text, 4) : -1;
    int month = shaped ? s_digits (text + 5, 2) : -1;
    int day = shaped ? s_digits (text + 8, 2) : -1;
    int hour = shaped ? s_digits (text + 11, 2) : -1;
    int minute = shaped ? s_digits (text + 14, 2) : -1;
    if (year < 0 || month < 1 || month > 12 || day < 1 || day > mx_tz_days_in_month (year, month)
    ||  hour < 0 || hour > 23 || minute < 0 || minute > 59) {
        s_set_error (error, "'%.40s' is not a local time YYYY-MM-DDTHH:MM", text ? text : "(none)");
        return -1;
    }
    *utc_ms = mx_tz_local_to_utc (zone, year, month, day, hour, minute, 0);
    return 0;
}

int64_t
mx_request_daily_at (const mx_tz_t *zone, int64_t day, int minute_of_day)
{
    assert (zone);
    assert (minute_of_day >= 0 && minute_of_day < 24 * 60);
    int year, month, mday;
    mx_tz_civil_from_days (day, &year, &month, &mday);
    return mx_tz_local_to_utc (zone, year, month, mday, minute_of_day / 60, minute_of_day % 60, 0);
}

void
mx_request_coming_day (const mx_tz_t *zone, int cutoff_hour, int64_t now_ms,
                       int64_t *window_begin, int64_t *window_end)
{
    assert (zone && window_begin && window_end);
    assert (cutoff_hour >= 0 && cutoff_hour <= 23);
    //  The operation day in progress is the local date of now - cutoff.
    int64_t current = mx_tz_local_day (zone, now_ms - (int64_t) cutoff_hour * 3600000);
    *window_begin = mx_request_daily_at (zone, current + 1, cutoff_hour * 60);
    *window_end = mx_request_daily_at (zone, current + 2, cutoff_hour * 60) - 60000;
}

static bool
s_list_code (const char *rtype)
{
    size_t length = strlen (rtype);
    if (length < 1 || length > MX_REQUEST_RTYPE_BUFSIZE - 1)
        return false;
    for (size_t i = 0; i < length; i++)
        if (!((rtype [i] >= 'A' && rtype [i] <= 'Z') || (rtype [i] >= '0' && rtype [i] <= '9')))
            return false;
    return true;
}

char *
mx_request_encode (const mx_request_t *self, const mx_tz_t *zone, int64_t dttm_ms, char **error)
{
    assert (self && zone);
    if (self->seqn < 1 || self->seqn > MX_REQUEST_SEQN_MAX) {
        s_set_error (error, "SEQN %d is outside 1..%d", self->seqn, MX_REQUEST_SEQN_MAX);
        return NULL;
    }
    char seqn [MX_REQUEST_SEQN_BUFSIZE], dttm [MX_REQUEST_DTTM_BUFSIZE];
    mx_request_seqn_format (self->seqn, seqn, sizeof seqn);
    if (!mx_request_format_dttm (zone, dttm_ms, dttm, sizeof dttm)) {
        s_set_error (error, "DTTM of %lld ms is outside years 0000..9999", (long long) dttm_ms);
        return NULL;
    }
    char *xml = NULL;
    int rc;
    if (self->kind == MX_REQUEST_RQFD) {
        char begin [MX_REQUEST_WINDOW_BUFSIZE], end [MX_REQUEST_WINDOW_BUFSIZE];
        if (!mx_request_format_window (zone, self->window_begin, begin, sizeof begin)
        ||  !mx_request_format_window (zone, self->window_end, end, sizeof end)) {
            s_set_error (error, "a schedule window must lie within the years 2000..2099 (STDB/STDE write yy)");
            return NULL;
        }
        if (self->window_end < self->window_begin) {
            s_set_error (error, "the schedule window ends (%s) before it begins (%s)", end, begin);
            return NULL;
        }
        rc = asprintf (&xml,
            "<MSG><META><SNDR>" MX_REQUEST_SNDR "</SNDR><SEQN>%s</SEQN><DTTM>%s</DTTM>"
            "<TYPE>RQFD</TYPE><STYP>NONE</STYP></META>"
            "<RQFD><STDB>%s</STDB><STDE>%s</STDE></RQFD></MSG>", seqn, dttm, begin, end);
    }
    else {
        //  Letters and digits only, so the code needs no escaping.
        if (!s_list_code (self->rtype)) {
            s_set_error (error, "'%.16s' is not a reference list code", self->rtype);
            return NULL;
        }
        rc = asprintf (&xml,
            "<MSG><META><SNDR>" MX_REQUEST_SNDR "</SNDR><SEQN>%s</SEQN><DTTM>%s</DTTM>"
            "<TYPE>RQRD</TYPE><STYP>%s</STYP></META>"
            "<RQRD><RTYP>%s</RTYP></RQRD></MSG>", seqn, dttm, self->rtype, self->rtype);
    }
    if (rc < 0) {
        s_set_error (error, "out of memory encoding a request");
        return NULL;
    }
    return xml;
}

mx_request_resp_t
mx_request_resp_decide (mx_request_state_t state, int64_t sent_ms, int64_t expires_ms,
                        int64_t resp_dttm_ms, int64_t now_ms)
{
    if (sent_ms < 0 || state == MX_REQUEST_DONE || state == MX_REQUEST_REGISTERED)
        return MX_REQUEST_RESP_NO_REQUEST;
    //  Second precision: DTTM has no milliseconds, sent_at has.
    if (s_floor_div (resp_dttm_ms, 1000) < s_floor_div (sent_ms, 1000))
        return MX_REQUEST_RESP_STALE;
    if (state == MX_REQUEST_EXPIRED || (expires_ms >= 0 && now_ms >= expires_ms))
        return MX_REQUEST_RESP_EXPIRED;
    return MX_REQUEST_RESP_MATCH;
}

const char *
mx_request_resp_outcome (mx_request_resp_t resp)
{
    switch (resp) {
        case MX_REQUEST_RESP_MATCH:      return "degraded-match";
        case MX_REQUEST_RESP_NO_REQUEST: return "no-matching-request";
        case MX_REQUEST_RESP_EXPIRED:    return "request-expired";
        case MX_REQUEST_RESP_STALE:      return "stale-response";
    }
    return "no-matching-request";
}
