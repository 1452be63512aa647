/*  mx_tz - named IANA time zones without touching the process environment.

    setenv ("TZ") + tzset is process-global and not thread-safe, so a zone is
    read from the system's compiled file /usr/share/zoneinfo/<name> (TZif,
    RFC 8536, versions 1 to 4; the 64-bit data of version 2+ and its footer
    POSIX TZ rule for instants after the last transition). A loaded zone is
    immutable: share it freely between threads.

    Times are UTC epoch milliseconds; offsets are seconds east of UTC.
    Leap-second ("right/") zone files are refused.
*/
#ifndef MX_TZ_H_INCLUDED
#define MX_TZ_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Room for mx_tz_format_iso with any year 0000..9999, milliseconds and an
//  offset with seconds (historic local mean time).
#define MX_TZ_ISO_BUFSIZE 40
//  Room for mx_tz_format_date ("YYYY-MM-DD").
#define MX_TZ_DATE_BUFSIZE 11

typedef struct _mx_tz_t mx_tz_t;

//  Load a zone by name, e.g. "Asia/Shanghai" or "UTC". Refuses empty names,
//  absolute paths, "..", characters other than letters, digits and "/_+-",
//  missing files, directories and files that are not valid TZif. Returns
//  NULL with *error (malloc'd one line, if error is not NULL) on failure.
mx_tz_t *
    mx_tz_load (const char *name, char **error);

//  Safe on NULL and twice; NULLs the pointer.
void
    mx_tz_destroy (mx_tz_t **self_p);

const char *
    mx_tz_name (const mx_tz_t *self);

//  Local wall time in the zone → UTC ms. Fields must form a valid calendar
//  time (see mx_tz_days_in_month). A wall time that does not exist (spring
//  forward gap) is read with the offset in force before the gap, so 02:30 in
//  a 02:00→03:00 gap becomes 03:30 after it. A wall time that occurs twice
//  (fall back overlap) gives the earlier instant.
int64_t
    mx_tz_local_to_utc (const mx_tz_t *self, int year, int month, int day,
                        int hour, int minute, int second);

//  UTC offset in seconds at the instant utc_ms.
int
    mx_tz_offset_at (const mx_tz_t *self, int64_t utc_ms);

//  ISO-8601 local time with offset, e.g. "2021-01-23T05:35:00+08:00".
//  Milliseconds (".250") appear only when not zero, offset seconds only when
//  not zero. size >= 32 (MX_TZ_ISO_BUFSIZE fits every case). Returns buf.
const char *
    mx_tz_format_iso (const mx_tz_t *self, int64_t utc_ms, char *buf, size_t size);

//  Local calendar date at utc_ms, as days since 1970-01-01.
int64_t
    mx_tz_local_day (const mx_tz_t *self, int64_t utc_ms);

//  Local calendar date at utc_ms as "YYYY-MM-DD"; size >= MX_TZ_DATE_BUFSIZE.
//  Returns buf.
const char *
    mx_tz_format_date (const mx_tz_t *self, int64_t utc_ms, char *buf, size_t size);

//  Proleptic Gregorian calendar helpers, no zone involved.
//  Days since 1970-01-01 of year-month-day (month 1..12).
int64_t
    mx_tz_days_from_civil (int year, int month, int day);

//  Inverse of mx_tz_days_from_civil.
void
    mx_tz_civil_from_days (int64_t days, int *year, int *month, int *day);

//  Days in month (1..12) of year; 0 for a month out of range.
int
    mx_tz_days_in_month (int year, int month);

#endif
