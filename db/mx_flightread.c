/*  mx_flightread - see mx_flightread.h.  */
#include "mx_flightread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_pg.h"

//  NULL parameters switch a filter off; the day index narrows first.
static const char *s_list_sql =
    "SELECT flid, state_version FROM flight_schd"
    " WHERE operation_day BETWEEN $1::date AND $2::date"
    "   AND ($3::text IS NULL OR alcd = $3::text)"
    "   AND ($4::text IS NULL OR mvin = $4::text)"
    "   AND ($5::bigint IS NULL OR updated_at >= to_timestamp ($5::bigint / 1000.0))"
    "   AND flid > $6::bigint"
    " ORDER BY flid LIMIT $7::bigint";

int
mx_flightread_list (PGconn *conn, const mx_flightread_filter_t *filter, int64_t after,
                    size_t max, int64_t *flids, int64_t *versions, size_t *count, char **error)
{
    char since [MX_PG_INT64_BUFSIZE], after_text [MX_PG_INT64_BUFSIZE], limit [MX_PG_INT64_BUFSIZE];
    const char *params [7] = {
        filter->day_from, filter->day_to, filter->airline, filter->mvin,
        filter->changed_since >= 0 ? mx_pg_int64_text (filter->changed_since, since) : NULL,
        mx_pg_int64_text (after, after_text), mx_pg_int64_text ((int64_t) max, limit)
    };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, s_list_sql, 7, params, &res, error))
        return -1;
    size_t rows = (size_t) PQntuples (res);
    for (size_t row = 0; row < rows && row < max; row++) {
        flids [row] = mx_pg_get_int64 (res, (int) row, 0);
        if (versions)
            versions [row] = mx_pg_get_int64 (res, (int) row, 1);
    }
    *count = rows < max ? rows : max;
    PQclear (res);
    return 0;
}

int
mx_flightread_day (PGconn *conn, int64_t now_ms, const char *zone, int days, char *day,
                   char **error)
{
    char now_text [MX_PG_INT64_BUFSIZE], days_text [MX_PG_INT64_BUFSIZE];
    const char *params [3] = { mx_pg_int64_text (now_ms, now_text), zone,
                               mx_pg_int64_text (days, days_text) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "SELECT to_char ((to_timestamp ($1::bigint / 1000.0) AT TIME ZONE $2::text)::date"
            "                + $3::int, 'YYYY-MM-DD')", 3, params, &res, error))
        return -1;
    snprintf (day, MX_FLIGHTREAD_DAY_BUFSIZE, "%s", mx_pg_get_text (res, 0, 0));
    PQclear (res);
    return 0;
}

int
mx_flightread_reference (PGconn *conn, const char *list, char **json, int64_t *count,
                         char **error)
{
    const char *params [1] = { list };
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "SELECT coalesce (jsonb_agg (jsonb_build_object ("
            "           'key', rkey, 'value', value,"
            "           'updated_at', to_char (updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),"
            "           'last_msg_id', last_msg_id) ORDER BY rkey), '[]'::jsonb)::text, count(*)"
            "  FROM ref_master WHERE rtype = $1::text", 1, params, &res, error))
        return -1;
    *json = strdup (mx_pg_get_text (res, 0, 0));
    *count = mx_pg_get_int64 (res, 0, 1);
    PQclear (res);
    if (!*json) {
        *error = strdup ("out of memory");
        return -1;
    }
    return 0;
}
