/*  mx_tz - see mx_tz.h. TZif layout: RFC 8536.  */
#include "mx_tz.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_ZONEINFO_DIR      "/usr/share/zoneinfo"
//  Real zone files are a few KiB; anything far bigger is not one.
#define S_MAX_FILE_BYTES    (256 * 1024)
#define S_MAX_NAME          255
#define S_HEADER_BYTES      44
//  Offsets beyond a day and a bit are not real; this also keeps the
//  arithmetic below far away from overflow.
#define S_MAX_UTOFF         (26 * 3600)
//  RFC 8536 §3.3.1 extends POSIX rule times to -167..167 hours.
#define S_MAX_RULE_HOURS    167
#define S_DEFAULT_RULE_TIME (2 * 3600)

typedef enum {
    S_DATE_JULIAN1,             //  Jn: 1..365, February 29 never counted
    S_DATE_JULIAN0,             //  n: 0..365, February 29 counted
    S_DATE_MONTH                //  Mm.w.d: weekday d of week w (5 = last) of month m
} s_date_kind_t;

typedef struct {
    s_date_kind_t kind;
    int day;                    //  Julian day, or weekday 0 (Sunday)..6
    int week;
    int month;
    int32_t time;               //  seconds after local midnight, may be negative
} s_rule_date_t;

struct _mx_tz_t {
    char *name;
    size_t count;               //  transitions
    int64_t *times;             //  UTC seconds, strictly ascending
    uint8_t *types;             //  per transition, index into utoffs
    size_t type_count;
    int32_t *utoffs;
    //  Footer rule, for instants at or after the last transition.
    bool has_rule;
    int32_t std_off;
    bool has_dst;
    int32_t dst_off;
    s_rule_date_t dst_start;    //  wall clock in standard time
    s_rule_date_t dst_end;      //  wall clock in daylight time
};

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
        text = strdup ("out of memory formatting an error");
    va_end (args);
    *error = text;
}

static int64_t
s_floor_div (int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t
s_floor_mod (int64_t a, int64_t b)
{
    return a - s_floor_div (a, b) * b;
}

static bool
s_is_leap (int64_t year)
{
    return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

//  Howard Hinnant's days_from_civil / civil_from_days (public domain).
int64_t
mx_tz_days_from_civil (int year, int month, int day)
{
    assert (month >= 1 && month <= 12);
    int64_t y = (int64_t) year - (month <= 2);
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t mp = month > 2 ? month - 3 : month + 9;
    int64_t doy = (153 * mp + 2) / 5 + day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void
mx_tz_civil_from_days (int64_t days, int *year, int *month, int *day)
{
    assert (year && month && day);
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    *day = (int) (doy - (153 * mp + 2) / 5 + 1);
    *month = (int) m;
    *year = (int) (yoe + era * 400 + (m <= 2));
}

int
mx_tz_days_in_month (int year, int month)
{
    static const int days [12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    if (month < 1 || month > 12)
        return 0;
    return month == 2 && s_is_leap (year) ? 29 : days [month - 1];
}

// ---------------------------------------------------------------------------
//  Footer: POSIX TZ string, e.g. "CET-1CEST,M3.5.0,M10.5.0/3"

static const char *
s_parse_abbr (const char *p)
{
    const char *start;
    if (*p == '<') {
        start = ++p;
        while (isalnum ((unsigned char) *p) || *p == '+' || *p == '-')
            p++;
        if (*p != '>' || p - start < 3)
            return NULL;
        return p + 1;
    }
    start = p;
    while (isalpha ((unsigned char) *p))
        p++;
    return p - start >= 3 ? p : NULL;
}

//  [+-]hh[:mm[:ss]] with hh <= max_hours.
static const char *
s_parse_hms (const char *p, int max_hours, int32_t *value)
{
    int sign = 1;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    int parts [3] = { 0, 0, 0 };
    for (int part = 0; part < 3; part++) {
        if (part > 0) {
            if (*p != ':')
                break;
            p++;
        }
        int digits = 0;
        while (isdigit ((unsigned char) *p) && digits < 3) {
            parts [part] = parts [part] * 10 + (*p++ - '0');
            digits++;
        }
        if (digits == 0 || isdigit ((unsigned char) *p))
            return NULL;
    }
    if (parts [0] > max_hours || parts [1] > 59 || parts [2] > 59)
        return NULL;
    *value = sign * (parts [0] * 3600 + parts [1] * 60 + parts [2]);
    return p;
}

static const char *
s_parse_number (const char *p, int low, int high, int *value)
{
    int digits = 0;
    int number = 0;
    while (isdigit ((unsigned char) *p) && digits < 4) {
        number = number * 10 + (*p++ - '0');
        digits++;
    }
    if (digits == 0 || number < low || number > high)
        return NULL;
    *value = number;
    return p;
}

static const char *
s_parse_rule_date (const char *p, s_rule_date_t *date)
{
    memset (date, 0, sizeof *date);
    if (*p == 'J') {
        date->kind = S_DATE_JULIAN1;
        p = s_parse_number (p + 1, 1, 365, &date->day);
    }
    else
    if (*p == 'M') {
        date->kind = S_DATE_MONTH;
        p = s_parse_number (p + 1, 1, 12, &date->month);
        if (p && *p == '.')
            p = s_parse_number (p + 1, 1, 5, &date->week);
        else
            p = NULL;
        if (p && *p == '.')
            p = s_parse_number (p + 1, 0, 6, &date->day);
        else
            p = NULL;
    }
    else {
        date->kind = S_DATE_JULIAN0;
        p = s_parse_number (p, 0, 365, &date->day);
    }
    if (!p)
        return NULL;
    date->time = S_DEFAULT_RULE_TIME;
    if (*p == '/')
        p = s_parse_hms (p + 1, S_MAX_RULE_HOURS, &date->time);
    return p;
}

static int
s_parse_rule (mx_tz_t *self, const char *text)
{
    int32_t value;
    const char *p = s_parse_abbr (text);
    if (p)
        p = s_parse_hms (p, 24, &value);
    if (!p)
        return -1;
    self->std_off = -value;         //  POSIX counts west of UTC as positive
    self->has_rule = true;
    if (*p == '\0')
        return 0;
    p = s_parse_abbr (p);
    if (!p)
        return -1;
    self->has_dst = true;
    self->dst_off = self->std_off + 3600;
    if (*p != ',' && *p != '\0') {
        p = s_parse_hms (p, 24, &value);
        if (!p)
            return -1;
        self->dst_off = -value;
    }
    //  A daylight zone without rules leaves the switch dates to the
    //  implementation; zic always writes them, so refuse rather than guess.
    if (*p != ',')
        return -1;
    p = s_parse_rule_date (p + 1, &self->dst_start);
    if (!p || *p != ',')
        return -1;
    p = s_parse_rule_date (p + 1, &self->dst_end);
    if (!p || *p != '\0')
        return -1;
    if (abs (self->std_off) >= S_MAX_UTOFF || abs (self->dst_off) >= S_MAX_UTOFF)
        return -1;
    return 0;
}

//  The rule's instant in year, as local seconds counted like UTC seconds.
static int64_t
s_rule_local (const s_rule_date_t *date, int year)
{
    int64_t days;
    if (date->kind == S_DATE_JULIAN1) {
        days = mx_tz_days_from_civil (year, 1, 1) + date->day - 1;
        if (s_is_leap (year) && date->day >= 60)
            days++;
    }
    else
    if (date->kind == S_DATE_JULIAN0)
        days = mx_tz_days_from_civil (year, 1, 1) + date->day;
    else {
        int64_t first = mx_tz_days_from_civil (year, date->month, 1);
        int weekday = (int) s_floor_mod (first + 4, 7);      //  1970-01-01 was a Thursday
        days = first + (date->day - weekday + 7) % 7 + 7 * (date->week - 1);
        while (days - first >= mx_tz_days_in_month (year, date->month))
            days -= 7;
    }
    return days * 86400 + date->time;
}

static int32_t
s_rule_offset (const mx_tz_t *self, int64_t t)
{
    if (!self->has_dst)
        return self->std_off;
    int year, month, day;
    mx_tz_civil_from_days (s_floor_div (t + self->std_off, 86400), &year, &month, &day);
    //  The latest switch at or before t decides; looking at the neighbouring
    //  years too covers rule times past midnight of New Year's Eve.
    bool dst = false;
    int64_t latest = INT64_MIN;
    for (int y = year - 1; y <= year + 1; y++) {
        int64_t on = s_rule_local (&self->dst_start, y) - self->std_off;
        int64_t off = s_rule_local (&self->dst_end, y) - self->dst_off;
        if (off <= t && off > latest) {
            latest = off;
            dst = false;
        }
        //  On a tie the start wins: "all year daylight time" rules end one
        //  year exactly when the next one starts.
        if (on <= t && on >= latest) {
            latest = on;
            dst = true;
        }
    }
    return dst ? self->dst_off : self->std_off;
}

// ---------------------------------------------------------------------------
//  TZif

static int64_t
s_be32 (const uint8_t *p)
{
    uint32_t value = (uint32_t) p [0] << 24 | (uint32_t) p [1] << 16
                   | (uint32_t) p [2] << 8 | (uint32_t) p [3];
    return (int32_t) value;
}

static int64_t
s_be64 (const uint8_t *p)
{
    uint64_t value = 0;
    for (int i = 0; i < 8; i++)
        value = value << 8 | p [i];
    return (int64_t) value;
}

typedef struct {
    size_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
} s_counts_t;

static size_t
s_block_size (const s_counts_t *counts, size_t time_size)
{
    return counts->timecnt * (time_size + 1) + counts->typecnt * 6 + counts->charcnt
         + counts->leapcnt * (time_size + 4) + counts->isstdcnt + counts->isutcnt;
}

static int
s_read_header (const uint8_t *data, size_t size, size_t at, s_counts_t *counts)
{
    if (size < S_HEADER_BYTES || at > size - S_HEADER_BYTES
    ||  memcmp (data + at, "TZif", 4) != 0)
        return -1;
    const uint8_t *p = data + at + 20;
    size_t *fields [6] = { &counts->isutcnt, &counts->isstdcnt, &counts->leapcnt,
                           &counts->timecnt, &counts->typecnt, &counts->charcnt };
    for (int i = 0; i < 6; i++) {
        uint32_t value = (uint32_t) s_be32 (p + 4 * i);
        if (value > S_MAX_FILE_BYTES)
            return -1;
        *fields [i] = value;
    }
    return 0;
}

//  Parses one data block at data [at]; returns its size or 0 on error.
static size_t
s_read_block (mx_tz_t *self, const uint8_t *data, size_t size, size_t at,
              const s_counts_t *counts, size_t time_size, char **error)
{
    size_t block = s_block_size (counts, time_size);
    if (block > size - at) {
        s_set_error (error, "time zone file of '%s' is truncated", self->name);
        return 0;
    }
    if (counts->typecnt == 0 || counts->typecnt > 256
    ||  (counts->isstdcnt != 0 && counts->isstdcnt != counts->typecnt)
    ||  (counts->isutcnt != 0 && counts->isutcnt != counts->typecnt)) {
        s_set_error (error, "time zone file of '%s' is inconsistent", self->name);
        return 0;
    }
    if (counts->leapcnt > 0) {
        s_set_error (error, "time zone '%s' counts leap seconds; use a zone without them",
                     self->name);
        return 0;
    }
    self->count = counts->timecnt;
    self->type_count = counts->typecnt;
    self->times = calloc (counts->timecnt ? counts->timecnt : 1, sizeof (int64_t));
    self->types = calloc (counts->timecnt ? counts->timecnt : 1, 1);
    self->utoffs = calloc (counts->typecnt, sizeof (int32_t));
    if (!self->times || !self->types || !self->utoffs) {
        s_set_error (error, "out of memory loading time zone '%s'", self->name);
        return 0;
    }
    const uint8_t *p = data + at;
    for (size_t i = 0; i < counts->timecnt; i++, p += time_size) {
        self->times [i] = time_size == 8 ? s_be64 (p) : s_be32 (p);
        if (i > 0 && self->times [i] <= self->times [i - 1]) {
            s_set_error (error, "time zone file of '%s' has unordered transitions", self->name);
            return 0;
        }
    }
    for (size_t i = 0; i < counts->timecnt; i++, p++) {
        if (*p >= counts->typecnt) {
            s_set_error (error, "time zone file of '%s' is inconsistent", self->name);
            return 0;
        }
        self->types [i] = *p;
    }
    for (size_t i = 0; i < counts->typecnt; i++, p += 6) {
        int64_t utoff = s_be32 (p);
        if (utoff <= -S_MAX_UTOFF || utoff >= S_MAX_UTOFF) {
            s_set_error (error, "time zone file of '%s' has an offset of %lld s",
                         self->name, (long long) utoff);
            return 0;
        }
        self->utoffs [i] = (int32_t) utoff;
    }
    return block;
}

static int
s_parse_tzif (mx_tz_t *self, const uint8_t *data, size_t size, char **error)
{
    s_counts_t counts;
    if (s_read_header (data, size, 0, &counts) == -1) {
        s_set_error (error, "'%s' is not a compiled time zone (TZif) file", self->name);
        return -1;
    }
    uint8_t version = data [4];
    if (version == 0)
        return s_read_block (self, data, size, S_HEADER_BYTES, &counts, 4, error) ? 0 : -1;

    //  Version 2+: skip the 32-bit data, read the 64-bit data and the footer.
    size_t at = S_HEADER_BYTES + s_block_size (&counts, 4);
    if (at > size || s_read_header (data, size, at, &counts) == -1) {
        s_set_error (error, "time zone file of '%s' is truncated", self->name);
        return -1;
    }
    at += S_HEADER_BYTES;
    size_t block = s_read_block (self, data, size, at, &counts, 8, error);
    if (!block)
        return -1;
    at += block;
    const uint8_t *footer = data + at;
    const uint8_t *end = at < size ? memchr (footer + 1, '\n', size - at - 1) : NULL;
    if (at >= size || footer [0] != '\n' || !end) {
        s_set_error (error, "time zone file of '%s' has no footer", self->name);
        return -1;
    }
    size_t length = (size_t) (end - footer - 1);
    if (length == 0)
        return 0;           //  no rule: the last transition holds forever
    char *rule = strndup ((const char *) footer + 1, length);
    if (!rule || memchr (rule, '\0', length) || s_parse_rule (self, rule) == -1) {
        s_set_error (error, "time zone '%s' has a rule this code does not understand: %.*s",
                     self->name, (int) length, (const char *) footer + 1);
        free (rule);
        return -1;
    }
    free (rule);
    return 0;
}

static bool
s_name_is_plain (const char *name)
{
    if (name [0] == '/' || strstr (name, ".."))
        return false;
    for (const char *scan = name; *scan; scan++)
        if (!isalnum ((unsigned char) *scan) && !strchr ("/_+-", *scan))
            return false;
    return true;
}

//  Reads the whole file; returns a malloc'd buffer or NULL with *error set.
static uint8_t *
s_read_file (const char *name, size_t *size_p, char **error)
{
    char path [sizeof S_ZONEINFO_DIR + S_MAX_NAME + 2];
    snprintf (path, sizeof path, "%s/%s", S_ZONEINFO_DIR, name);
    int fd = open (path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        if (errno == ENOENT || errno == ENOTDIR)
            s_set_error (error, "unknown time zone '%s' (no file %s)", name, path);
        else
            s_set_error (error, "cannot open %s: %s", path, strerror (errno));
        return NULL;
    }
    struct stat status;
    uint8_t *data = NULL;
    if (fstat (fd, &status) == -1 || !S_ISREG (status.st_mode)) {
        s_set_error (error, "unknown time zone '%s' (%s is not a zone file)", name, path);
        goto fail;
    }
    if (status.st_size > S_MAX_FILE_BYTES) {
        s_set_error (error, "'%s' is not a compiled time zone (TZif) file", name);
        goto fail;
    }
    size_t size = (size_t) status.st_size;
    data = malloc (size ? size : 1);
    if (!data) {
        s_set_error (error, "out of memory loading time zone '%s'", name);
        goto fail;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t got = read (fd, data + done, size - done);
        if (got == -1 && errno == EINTR)
            continue;
        if (got <= 0) {
            s_set_error (error, "cannot read %s: %s", path, got == 0? "file shrank": strerror (errno));
            goto fail;
        }
        done += (size_t) got;
    }
    close (fd);
    *size_p = size;
    return data;
fail:
    free (data);
    close (fd);
    return NULL;
}

mx_tz_t *
mx_tz_load (const char *name, char **error)
{
    if (!name || !*name) {
        s_set_error (error, "time zone name is empty (expected e.g. Asia/Shanghai)");
        return NULL;
    }
    if (strlen (name) > S_MAX_NAME || !s_name_is_plain (name)) {
        s_set_error (error, "'%.64s' is not a time zone name (expected e.g. Asia/Shanghai)", name);
        return NULL;
    }
    size_t size = 0;
    uint8_t *data = s_read_file (name, &size, error);
    if (!data)
        return NULL;
    mx_tz_t *self = calloc (1, sizeof (mx_tz_t));
    if (self)
        self->name = strdup (name);
    if (!self || !self->name) {
        s_set_error (error, "out of memory loading time zone '%s'", name);
        mx_tz_destroy (&self);
        free (data);
        return NULL;
    }
    int rc = s_parse_tzif (self, data, size, error);
    free (data);
    if (rc == -1)
        mx_tz_destroy (&self);
    return self;
}

void
mx_tz_destroy (mx_tz_t **self_p)
{
    assert (self_p);
    mx_tz_t *self = *self_p;
    if (!self)
        return;
    free (self->name);
    free (self->times);
    free (self->types);
    free (self->utoffs);
    free (self);
    *self_p = NULL;
}

const char *
mx_tz_name (const mx_tz_t *self)
{
    assert (self);
    return self->name;
}

static int32_t
s_offset_at (const mx_tz_t *self, int64_t t)
{
    if (self->count == 0)
        return self->has_rule ? s_rule_offset (self, t) : self->utoffs [0];
    //  RFC 8536 §3.2: type 0 before the first transition.
    if (t < self->times [0])
        return self->utoffs [0];
    if (t >= self->times [self->count - 1] && self->has_rule)
        return s_rule_offset (self, t);
    size_t low = 0;
    size_t high = self->count;      //  times [low] <= t < times [high]
    while (high - low > 1) {
        size_t middle = low + (high - low) / 2;
        if (self->times [middle] <= t)
            low = middle;
        else
            high = middle;
    }
    return self->utoffs [self->types [low]];
}

int
mx_tz_offset_at (const mx_tz_t *self, int64_t utc_ms)
{
    assert (self);
    return s_offset_at (self, s_floor_div (utc_ms, 1000));
}

int64_t
mx_tz_local_to_utc (const mx_tz_t *self, int year, int month, int day,
                    int hour, int minute, int second)
{
    assert (self);
    assert (month >= 1 && month <= 12);
    assert (day >= 1 && day <= mx_tz_days_in_month (year, month));
    assert (hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59);
    assert (second >= 0 && second <= 59);
    int64_t local = mx_tz_days_from_civil (year, month, day) * 86400
                  + hour * 3600 + minute * 60 + second;
    //  Every instant u with u + offset(u) == local lies within a day of
    //  local; the offsets a day either side, and the ones they lead to, are
    //  the candidates. Zones with two changes within one day are not real.
    int32_t before = s_offset_at (self, local - 86400);
    int32_t after = s_offset_at (self, local + 86400);
    int32_t candidates [4] = {
        before, after, s_offset_at (self, local - before), s_offset_at (self, local - after)
    };
    int64_t best = INT64_MAX;
    for (int i = 0; i < 4; i++) {
        int64_t utc = local - candidates [i];
        if (s_offset_at (self, utc) == candidates [i] && utc < best)
            best = utc;
    }
    if (best == INT64_MAX)
        best = local - before;      //  in a gap: the offset before it
    return best * 1000;
}

//  Local broken-down time of utc_ms.
static void
s_local_fields (const mx_tz_t *self, int64_t utc_ms, int64_t *days, int64_t *second_of_day,
                int32_t *offset)
{
    int64_t utc = s_floor_div (utc_ms, 1000);
    *offset = s_offset_at (self, utc);
    int64_t local = utc + *offset;
    *days = s_floor_div (local, 86400);
    *second_of_day = local - *days * 86400;
}

//  value as exactly `width` decimal digits (0 <= value < 10^width).
static char *
s_digits (char *at, int value, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        at [i] = (char) ('0' + value % 10);
        value /= 10;
    }
    return at + width;
}

//  ".mmm" when not a whole second, then the offset +hh:mm[:ss]; ends the text.
static void
s_iso_tail (char *at, int millis, int32_t offset)
{
    if (millis) {
        *at++ = '.';
        at = s_digits (at, millis, 3);
    }
    int magnitude = abs (offset);
    *at++ = offset < 0 ? '-' : '+';
    at = s_digits (at, magnitude / 3600 % 100, 2);
    *at++ = ':';
    at = s_digits (at, magnitude / 60 % 60, 2);
    if (magnitude % 60) {
        *at++ = ':';
        at = s_digits (at, magnitude % 60, 2);
    }
    *at = '\0';
}

const char *
mx_tz_format_iso (const mx_tz_t *self, int64_t utc_ms, char *buf, size_t size)
{
    assert (self);
    assert (buf && size >= 32);
    int64_t days, sod;
    int32_t offset;
    s_local_fields (self, utc_ms, &days, &sod, &offset);
    int year, month, day;
    mx_tz_civil_from_days (days, &year, &month, &day);
    //  Written digit by digit: the documents format every time of a
    //  flight at each change, and snprintf was most of that.
    int millis = (int) s_floor_mod (utc_ms, 1000);
    char text [64];
    char *at = text;
    if (year < 0 || year > 9999)
        at += snprintf (text, 32, "%04d-%02d-%02dT%02d:%02d:%02d", year, month, day,
                        (int) (sod / 3600), (int) (sod / 60 % 60), (int) (sod % 60));
    else {
        at = s_digits (at, year, 4);
        *at++ = '-';
        at = s_digits (at, month, 2);
        *at++ = '-';
        at = s_digits (at, day, 2);
        *at++ = 'T';
        at = s_digits (at, (int) (sod / 3600), 2);
        *at++ = ':';
        at = s_digits (at, (int) (sod / 60 % 60), 2);
        *at++ = ':';
        at = s_digits (at, (int) (sod % 60), 2);
    }
    s_iso_tail (at, millis, offset);
    size_t length = strlen (text);
    if (length >= size)
        length = size - 1;
    memcpy (buf, text, length);
    buf [length] = '\0';
    return buf;
}

int64_t
mx_tz_local_day (const mx_tz_t *self, int64_t utc_ms)
{
    assert (self);
    int64_t days, sod;
    int32_t offset;
    s_local_fields (self, utc_ms, &days, &sod, &offset);
    return days;
}

const char *
mx_tz_format_date (const mx_tz_t *self, int64_t utc_ms, char *buf, size_t size)
{
    assert (buf && size >= MX_TZ_DATE_BUFSIZE);
    int year, month, day;
    mx_tz_civil_from_days (mx_tz_local_day (self, utc_ms), &year, &month, &day);
    snprintf (buf, size, "%04d-%02d-%02d", year, month, day);
    return buf;
}
