/*  mx_readmodel - see mx_readmodel.h.  */
#include "mx_readmodel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_pg.h"

const char *mx_readmodel_targets [MX_READMODEL_TARGETS] = { "KAFKA:msg", "KAFKA:schd", "KAFKA:ref" };

//  The backlog in one statement. Each part repeats the predicate of a
//  partial index (head, backfill sweep, outbox pending) so it stays cheap.
static const char *s_backlog_sql =
    "SELECT c.committed_up_to,"
    "       u.n, (extract (epoch FROM u.oldest) * 1000)::bigint,"
    "       m.n, (extract (epoch FROM m.oldest) * 1000)::bigint,"
    "       a.n, h.n, h.late,"
    "       o.msg_pending, o.msg_dead, o.schd_pending, o.schd_dead, o.ref_pending, o.ref_dead,"
    "       (extract (epoch FROM e.msg_oldest) * 1000)::bigint,"
    "       (extract (epoch FROM e.schd_oldest) * 1000)::bigint,"
    "       (extract (epoch FROM e.ref_oldest) * 1000)::bigint"
    "  FROM inbox_cursor c"
    " CROSS JOIN (SELECT count(*) AS n, min (coalesce (received_at, created_at)) AS oldest"
    "               FROM proc_state WHERE state IN ('PENDING', 'FAILED')) u"
    " CROSS JOIN (SELECT count(*) AS n, min (coalesce (finished_at, updated_at)) AS oldest"
    "               FROM proc_state"
    "              WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')"
    "                AND backfill_next_at IS NOT NULL"
    "                AND backfill_at IS NULL"
    "                AND backfill_abandoned_at IS NULL) m"
    " CROSS JOIN (SELECT count(*) AS n FROM proc_state"
    "              WHERE backfill_abandoned_at IS NOT NULL AND backfill_at IS NULL) a"
    " CROSS JOIN (SELECT count(*) AS n, count (late_detected_at) AS late FROM released_hole) h"
    " CROSS JOIN (SELECT count(*) FILTER (WHERE target = 'KAFKA:msg' AND state = 'PENDING') AS msg_pending,"
    "                    count(*) FILTER (WHERE target = 'KAFKA:msg' AND state = 'DEAD') AS msg_dead,"
    "                    count(*) FILTER (WHERE target = 'KAFKA:schd' AND state = 'PENDING') AS schd_pending,"
    "                    count(*) FILTER (WHERE target = 'KAFKA:schd' AND state = 'DEAD') AS schd_dead,"
    "                    count(*) FILTER (WHERE target = 'KAFKA:ref' AND state = 'PENDING') AS ref_pending,"
    "                    count(*) FILTER (WHERE target = 'KAFKA:ref' AND state = 'DEAD') AS ref_dead"
    "               FROM msg_event WHERE state IN ('PENDING', 'DEAD')) o"
    //  The oldest undelivered event per target: the first in delivery
    //  order, one step down msg_event_pending_idx.
    " CROSS JOIN (SELECT (SELECT created_at FROM msg_event WHERE target = 'KAFKA:msg' AND state = 'PENDING'"
    "                      ORDER BY event_id LIMIT 1) AS msg_oldest,"
    "                    (SELECT created_at FROM msg_event WHERE target = 'KAFKA:schd' AND state = 'PENDING'"
    "                      ORDER BY event_id LIMIT 1) AS schd_oldest,"
    "                    (SELECT created_at FROM msg_event WHERE target = 'KAFKA:ref' AND state = 'PENDING'"
    "                      ORDER BY event_id LIMIT 1) AS ref_oldest) e";


//  A time column as ms, -1 for NULL.
static int64_t
s_ms (PGresult *res, int col)
{
    return PQgetisnull (res, 0, col) ? -1 : mx_pg_get_int64 (res, 0, col);
}

int
mx_readmodel_backlog (PGconn *conn, mx_backlog_t *backlog, char **error)
{
    PGresult *res = NULL;
    if (mx_pg_exec (conn, s_backlog_sql, 0, NULL, &res, error))
        return -1;
    if (PQntuples (res) != 1) {
        PQclear (res);
        *error = strdup ("backlog snapshot: inbox_cursor has no row");
        return -1;
    }
    *backlog = (mx_backlog_t) {
        .watermark = mx_pg_get_int64 (res, 0, 0),
        .unfinished = mx_pg_get_int64 (res, 0, 1), .oldest_unfinished = s_ms (res, 2),
        .unmarked = mx_pg_get_int64 (res, 0, 3), .oldest_unmarked = s_ms (res, 4),
        .abandoned = mx_pg_get_int64 (res, 0, 5),
        .released_holes = mx_pg_get_int64 (res, 0, 6), .late_holes = mx_pg_get_int64 (res, 0, 7)
    };
    for (int i = 0; i < MX_READMODEL_TARGETS; i++) {
        backlog->pending [i] = mx_pg_get_int64 (res, 0, 8 + 2 * i);
        backlog->dead [i] = mx_pg_get_int64 (res, 0, 9 + 2 * i);
        backlog->oldest_pending [i] = s_ms (res, 8 + 2 * MX_READMODEL_TARGETS + i);
    }
    PQclear (res);
    return 0;
}

int
mx_readmodel_ping (PGconn *conn, const char **detail, char **error)
{
    if (mx_pg_exec (conn, "SELECT 1", 0, NULL, NULL, error)) {
        *detail = "SELECT 1 failed";
        return -1;
    }
    *detail = "SELECT 1 answered";
    return 0;
}

//  ---------------------------------------------------------------------
//  msgxctl status, dead and show

static json_t *
s_value (PGresult *res, int row, int col, bool number)
{
    if (PQgetisnull (res, row, col))
        return json_null ();
    const char *text = PQgetvalue (res, row, col);
    return number ? json_integer (strtoll (text, NULL, 10)) : json_string (text);
}

int
mx_readmodel_cursor (PGconn *conn, int64_t now_ms, json_t **cursor, int64_t *w, char **error)
{
    *cursor = NULL;
    *w = 0;
    char now_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (now_ms, now_text) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "SELECT committed_up_to,"
            " to_char (hole_since AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),"
            " ($1::bigint - (extract (epoch FROM hole_since) * 1000)::bigint) / 1000,"
            " to_char (seeded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
            " FROM inbox_cursor", 1, params, &res, error))
        return -1;
    if (PQntuples (res) == 1) {
        *w = strtoll (PQgetvalue (res, 0, 0), NULL, 10);
        *cursor = json_pack ("{s:I,s:o,s:o,s:o}", "w", (json_int_t) *w,
                             "hole_since", s_value (res, 0, 1, false), "hole_age_s", s_value (res, 0, 2, true),
                             "seeded_at", s_value (res, 0, 3, false));
    }
    PQclear (res);
    return 0;
}

int
mx_readmodel_head (PGconn *conn, int64_t now_ms, json_t **head, bool *backing_off, char **error)
{
    *head = NULL;
    *backing_off = false;
    char now_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (now_ms, now_text) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "SELECT msg_id, state, attempts,"
            " to_char (next_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),"
            " next_attempt_at IS NOT NULL AND extract (epoch FROM next_attempt_at) * 1000 > $1::bigint"
            " FROM proc_state WHERE state IN ('PENDING', 'FAILED') ORDER BY msg_id LIMIT 1",
            1, params, &res, error))
        return -1;
    if (PQntuples (res) == 1) {
        *head = json_pack ("{s:I,s:s,s:o,s:o}", "msg_id", (json_int_t) strtoll (PQgetvalue (res, 0, 0), NULL, 10),
                           "state", PQgetvalue (res, 0, 1), "attempts", s_value (res, 0, 2, true),
                           "next_attempt_at", s_value (res, 0, 3, false));
        *backing_off = strcmp (PQgetvalue (res, 0, 4), "t") == 0;
    }
    PQclear (res);
    return 0;
}

int
mx_readmodel_counts (PGconn *conn, json_t **counts, char **error)
{
    *counts = NULL;
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT state, count(*) FROM proc_state GROUP BY state", 0, NULL, &res, error))
        return -1;
    *counts = json_pack ("{s:i,s:i,s:i,s:i,s:i}", "PENDING", 0, "FAILED", 0, "SUCCEEDED", 0, "SKIPPED", 0, "DEAD", 0);
    for (int row = 0; row < PQntuples (res); row++)
        json_object_set_new (*counts, PQgetvalue (res, row, 0), s_value (res, row, 1, true));
    PQclear (res);
    return 0;
}

int
mx_readmodel_queue (PGconn *conn, int64_t *unfinished, int64_t *unmarked, int64_t *registered, char **error)
{
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "SELECT count(*) FILTER (WHERE state IN ('PENDING', 'FAILED')),"
            "       count(*) FILTER (WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')"
            "                          AND backfill_next_at IS NOT NULL AND backfill_at IS NULL"
            "                          AND backfill_abandoned_at IS NULL),"
            "       coalesce (max (msg_id), 0)"
            "  FROM proc_state", 0, NULL, &res, error))
        return -1;
    *unfinished = mx_pg_get_int64 (res, 0, 0);
    *unmarked = mx_pg_get_int64 (res, 0, 1);
    *registered = mx_pg_get_int64 (res, 0, 2);
    PQclear (res);
    return 0;
}

int
mx_readmodel_dead (PGconn *conn, bool events, int64_t limit, int64_t after, char **rows,
                   int64_t *total, bool *more, char **error)
{
    *rows = NULL;
    char limit_text [MX_PG_INT64_BUFSIZE], after_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (limit, limit_text), mx_pg_int64_text (after, after_text) };
    PGresult *res = NULL;
    //  One statement: the page and the counts it is part of, as one snapshot.
    if (mx_pg_exec (conn, events
            ? "SELECT coalesce (json_agg (r ORDER BY r.event_id), '[]')::text,"
              " (SELECT count(*) FROM msg_event WHERE state = 'DEAD'),"
              " (SELECT count(*) FROM msg_event WHERE state = 'DEAD' AND event_id > $2::bigint),"
              " count(*) FROM ("
              " SELECT event_id, target, flid, state_version, msg_id, event_type, attempts, last_error,"
              " created_at FROM msg_event WHERE state = 'DEAD' AND event_id > $2::bigint"
              " ORDER BY event_id LIMIT $1::bigint) r"
            : "SELECT coalesce (json_agg (r ORDER BY r.msg_id), '[]')::text,"
              " (SELECT count(*) FROM proc_state WHERE state = 'DEAD'),"
              " (SELECT count(*) FROM proc_state WHERE state = 'DEAD' AND msg_id > $2::bigint),"
              " count(*) FROM ("
              " SELECT msg_id, msg_type AS type, msg_styp AS styp, error_class, last_error, attempts,"
              " finished_at, backfill_at IS NOT NULL AS marked, backfill_abandoned_reason AS mark_abandoned"
              " FROM proc_state WHERE state = 'DEAD' AND msg_id > $2::bigint ORDER BY msg_id LIMIT $1::bigint) r",
            2, params, &res, error))
        return -1;
    *rows = strdup (PQgetvalue (res, 0, 0));
    *total = strtoll (PQgetvalue (res, 0, 1), NULL, 10);
    *more = strtoll (PQgetvalue (res, 0, 2), NULL, 10) > strtoll (PQgetvalue (res, 0, 3), NULL, 10);
    PQclear (res);
    return 0;
}

int
mx_readmodel_message (PGconn *conn, int64_t msg_id, char **row, char **events, char **error)
{
    *row = *events = NULL;
    char id_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (msg_id, id_text) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "SELECT (SELECT row_to_json (r)::text FROM ("
            "  SELECT msg_id, state, source, msg_type AS type, msg_styp AS styp, identity_key, attempts,"
            "   error_class, last_error, outcome, received_at, processing_started_at, created_at, updated_at,"
            "   finished_at, next_attempt_at, backfill_next_at, backfill_at AS marked_at, backfill_attempts,"
            "   backfill_error, backfill_abandoned_at, backfill_abandoned_reason, NULL::timestamptz AS archived_at"
            "   FROM proc_state WHERE msg_id = $1::bigint"
            "  UNION ALL"
            "  SELECT msg_id, state, source, msg_type, msg_styp, identity_key, attempts,"
            "   error_class, last_error, outcome, received_at, processing_started_at, created_at, updated_at,"
            "   finished_at, next_attempt_at, backfill_next_at, backfill_at, backfill_attempts,"
            "   backfill_error, backfill_abandoned_at, backfill_abandoned_reason, archived_at"
            "   FROM proc_state_hst WHERE msg_id = $1::bigint"
            "  LIMIT 1) r),"
            " (SELECT coalesce (json_agg (e ORDER BY e.event_id), '[]')::text FROM ("
            "  SELECT event_id, target, flid, state_version, event_type, state, attempts, last_error,"
            "   created_at, sent_at FROM msg_event WHERE msg_id = $1::bigint) e)",
            1, params, &res, error))
        return -1;
    *row = PQgetisnull (res, 0, 0) ? NULL : strdup (PQgetvalue (res, 0, 0));
    *events = strdup (PQgetvalue (res, 0, 1));
    PQclear (res);
    return 0;
}

int
mx_readmodel_flight_history (PGconn *conn, int64_t flid, char **messages, char **events,
                             char **error)
{
    char flid_text [MX_PG_INT64_BUFSIZE];
    const char *params [1] = { mx_pg_int64_text (flid, flid_text) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn,
            "WITH e AS (SELECT * FROM msg_event WHERE flid = $1::bigint)"
            " SELECT (SELECT coalesce (json_agg (json_build_object ("
            "            'msg_id', e.msg_id, 'type', p.msg_type, 'styp', p.msg_styp,"
            "            'received_at', p.received_at, 'state_version', e.state_version,"
            "            'event_type', e.event_type, 'changed', e.payload::jsonb -> 'changed')"
            "            ORDER BY e.event_id), '[]')"
            "           FROM e LEFT JOIN proc_state p ON p.msg_id = e.msg_id"
            "          WHERE e.target = 'KAFKA:msg')::text,"
            "        (SELECT coalesce (json_agg (json_build_object ("
            "            'event_id', event_id, 'target', target, 'event_type', event_type,"
            "            'state_version', state_version, 'msg_id', msg_id, 'state', state,"
            "            'attempts', attempts, 'created_at', created_at, 'sent_at', sent_at,"
            "            'merged_into', merged_into) ORDER BY event_id), '[]')"
            "           FROM e)::text",
            1, params, &res, error))
        return -1;
    *messages = strdup (PQgetvalue (res, 0, 0));
    *events = strdup (PQgetvalue (res, 0, 1));
    PQclear (res);
    if (!*messages || !*events) {
        free (*messages);
        free (*events);
        *error = strdup ("out of memory");
        return -1;
    }
    return 0;
}
