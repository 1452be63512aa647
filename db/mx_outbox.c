/*  mx_outbox - see mx_outbox.h.  */
#include "mx_outbox.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_bulk.h"
#include "mx_pg.h"
#include "mx_procstate.h"

//  A bigint ms parameter as timestamptz, and a timestamptz column as bigint
//  ms (-1 for NULL).
#define TS(n) "to_timestamp ($" #n "::bigint / 1000.0)"
#define MS(col) "coalesce ((extract (epoch FROM " col ") * 1000)::bigint, -1)"
//  Targets whose topic is log-compacted: only a key's newest state may be
//  the last one sent, so a replay goes by key (a flight's FLID, a reference
//  entry's LIST:KEY) and never sends a state older than one already out.
#define S_COMPACTED_TARGETS "'" MX_OUTBOX_TARGET_SCHD "', '" MX_OUTBOX_TARGET_REF "'"

//  TYPE/STYP of the message that made an event; the row may have been
//  archived since.
#define S_SOURCE \
    " CASE WHEN coalesce (p.msg_type, h.msg_type) IS NULL THEN NULL" \
    "      ELSE coalesce (p.msg_type, h.msg_type) || coalesce ('/' || coalesce (p.msg_styp, h.msg_styp), '') END"
//  Each a probe of the primary key per event (LIMIT 1 keeps the planner
//  from joining, and so from hashing a whole table).
#define S_SOURCE_JOIN(alias) \
    " LEFT JOIN LATERAL (SELECT msg_id, msg_type, msg_styp, created_at FROM proc_state" \
    "  WHERE msg_id = " alias ".msg_id LIMIT 1) p ON true" \
    " LEFT JOIN LATERAL (SELECT msg_type, msg_styp FROM proc_state_hst" \
    "  WHERE msg_id = " alias ".msg_id AND p.msg_id IS NULL LIMIT 1) h ON true"

//  Column order of both takes.
enum {
    S_COL_EVENT_ID, S_COL_FLID, S_COL_KEY, S_COL_TYPE, S_COL_VERSION, S_COL_MSG_ID, S_COL_PAYLOAD,
    S_COL_SOURCE, S_COL_ATTEMPTS, S_COL_NEXT_AT, S_COL_RECORDED_AT
};

static char *
s_strdup_or_null (const char *text)
{
    return text ? strdup (text) : NULL;
}

void
mx_outbox_batch_destroy (mx_outbox_batch_t **self_p)
{
    assert (self_p);
    mx_outbox_batch_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->count; i++) {
        free (self->events [i].key);
        free (self->events [i].event_type);
        free (self->events [i].payload);
        free (self->events [i].source);
    }
    free (self->events);
    free (self);
    *self_p = NULL;
}

void
mx_outbox_headers (const mx_outbox_event_t *event, mx_outbox_headers_t *self)
{
    assert (event && self);
    snprintf (self->event_id, sizeof self->event_id, "%" PRId64, event->event_id);
    snprintf (self->msg_id, sizeof self->msg_id, "%" PRId64, event->msg_id);
    snprintf (self->state_version, sizeof self->state_version, "%" PRId64, event->state_version);
    size_t count = 0;
    self->items [count++] = (mx_outbox_header_t) { "msgx-event-id", self->event_id };
    if (event->msg_id > 0)
        self->items [count++] = (mx_outbox_header_t) { "msgx-msg-id", self->msg_id };
    self->items [count++] = (mx_outbox_header_t) { "msgx-state-version", self->state_version };
    self->items [count++] = (mx_outbox_header_t) { "msgx-event-type", event->event_type };
    if (event->source)
        self->items [count++] = (mx_outbox_header_t) { "msgx-source", event->source };
    self->items [count++] = (mx_outbox_header_t) { "msgx-schema-version", MX_OUTBOX_SCHEMA_VERSION };
    self->count = count;
}

static mx_outbox_batch_t *
s_batch_new (size_t room)
{
    mx_outbox_batch_t *self = (mx_outbox_batch_t *) calloc (1, sizeof (mx_outbox_batch_t));
    assert (self);
    self->events = (mx_outbox_event_t *) calloc (room + 1, sizeof (mx_outbox_event_t));
    assert (self->events);
    self->waiting_until = -1;
    return self;
}

static void
s_batch_add (mx_outbox_batch_t *self, const PGresult *res, int row)
{
    mx_outbox_event_t *event = &self->events [self->count++];
    event->event_id = mx_pg_get_int64 (res, row, S_COL_EVENT_ID);
    event->flid = mx_pg_get_int64 (res, row, S_COL_FLID);
    event->key = strdup (mx_pg_get_text (res, row, S_COL_KEY));
    event->event_type = strdup (mx_pg_get_text (res, row, S_COL_TYPE));
    event->state_version = mx_pg_get_int64 (res, row, S_COL_VERSION);
    event->msg_id = mx_pg_get_int64 (res, row, S_COL_MSG_ID);
    event->payload = s_strdup_or_null (mx_pg_get_text (res, row, S_COL_PAYLOAD));
    event->source = s_strdup_or_null (mx_pg_get_text (res, row, S_COL_SOURCE));
    event->attempts = (int) mx_pg_get_int64 (res, row, S_COL_ATTEMPTS);
    event->recorded_at = mx_pg_get_int64 (res, row, S_COL_RECORDED_AT);
}

//  A take's rows into its batch, up to the first one not due yet.
typedef struct {
    mx_outbox_batch_t *batch;
    size_t room;
    int64_t now_ms;             //  INT64_MAX: every row is due
} s_take_t;

static void
s_take_row (const PGresult *res, int row, void *arg)
{
    s_take_t *take = (s_take_t *) arg;
    mx_outbox_batch_t *self = take->batch;
    if (self->waiting_until >= 0 || self->count == take->room)
        return;
    int64_t due = take->now_ms == INT64_MAX ? 0 : mx_pg_get_int64 (res, row, S_COL_NEXT_AT);
    if (due > take->now_ms) {
        self->waiting_until = due;
        return;
    }
    s_batch_add (self, res, row);
}

//  Runs a take's statement row by row: the payloads are copied out as
//  they come, never beside the whole result (a batch of 2,000 events is
//  some 5 MB of payloads).
static int
s_take (PGconn *conn, const char *sql, const char *const *params, size_t limit, int64_t now_ms,
        mx_outbox_batch_t **batch, char **error)
{
    s_take_t take = { s_batch_new (limit), limit, now_ms };
    if (mx_pg_exec_rows (conn, sql, 2, params, s_take_row, &take, error)) {
        mx_outbox_batch_destroy (&take.batch);
        return -1;
    }
    *batch = take.batch;
    return 0;
}

int
mx_outbox_take (PGconn *conn, const char *target, size_t limit, int64_t now_ms,
                mx_outbox_batch_t **batch, char **error)
{
    assert (conn && target && batch);
    *batch = NULL;
    char limit_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { target, mx_pg_int64_text ((int64_t) limit, limit_text) };
    //  A walk down msg_event_pending_idx, one row at a time from the
    //  head: each step is "the next PENDING row of the target", a probe
    //  that only that index answers in order, so the plan holds whatever
    //  the statistics say. One statement for the whole batch would be
    //  planned from the estimated backlog; estimated small, it reads and
    //  sorts every PENDING row, and as those are the newest, the primary
    //  key order crosses every SENT row first.
    return s_take (conn,
            "WITH RECURSIVE walk (event_id, n) AS ("
            "  SELECT 0::bigint, 0::bigint"
            "  UNION ALL"
            "  SELECT m.event_id, w.n + 1 FROM walk w"
            "  CROSS JOIN LATERAL (SELECT event_id FROM msg_event"
            "   WHERE (target, event_id) > ($1::text, w.event_id) AND target <= $1::text AND state = 'PENDING'"
            "   ORDER BY target, event_id LIMIT 1) m"
            "  WHERE w.n < $2::bigint)"
            " SELECT e.event_id, e.flid, e.partition_key, e.event_type, e.state_version, coalesce (e.msg_id, 0),"
            " e.payload," S_SOURCE ", e.attempts, " MS ("e.next_attempt_at") ", " MS ("p.created_at")
            " FROM walk w"
            " CROSS JOIN LATERAL (SELECT * FROM msg_event WHERE event_id = w.event_id LIMIT 1) e"
            S_SOURCE_JOIN ("e")
            " WHERE w.n > 0"
            " ORDER BY e.event_id",
            params, limit, now_ms, batch, error);
}

int
mx_outbox_take_schd (PGconn *conn, size_t limit, int64_t now_ms, mx_outbox_batch_t **batch, char **error)
{
    assert (conn && batch);
    *batch = NULL;
    char limit_text [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text ((int64_t) limit, limit_text), mx_pg_int64_text (now_ms, now) };
    //  The newest event of a FLID is the last one committed: versions rise
    //  with event_id while a flight lives, and event_id still orders right
    //  when a FLID comes back after the history sweep with fresh versions.
    //  Two probes of msg_event_schd_open_idx per FLID with PENDING events:
    //  the walk from one FLID to the next finds its oldest event, then its
    //  newest; whole rows are read for the FLIDs taken only. The cost
    //  follows the FLIDs waiting, not the events. The walk starts below
    //  any FLID so that every step is the same parameterised probe.
    //  Every row taken is due: the statement picked them by next_attempt_at.
    return s_take (conn,
            "WITH RECURSIVE walk (flid, first_id) AS ("
            "  SELECT (-9223372036854775807 - 1)::bigint, NULL::bigint"
            "  UNION ALL"
            "  SELECT n.flid, n.event_id FROM walk w"
            "  CROSS JOIN LATERAL (SELECT flid, event_id FROM msg_event"
            "   WHERE target = '" MX_OUTBOX_TARGET_SCHD "' AND state = 'PENDING' AND flid > w.flid"
            "   ORDER BY flid, event_id LIMIT 1) n),"
            " heads AS ("
            "  SELECT w.first_id, n.event_id FROM walk w"
            "  CROSS JOIN LATERAL (SELECT event_id, next_attempt_at FROM msg_event"
            "   WHERE target = '" MX_OUTBOX_TARGET_SCHD "' AND state = 'PENDING' AND flid = w.flid"
            "   ORDER BY event_id DESC LIMIT 1) n"
            "  WHERE w.first_id IS NOT NULL"
            "  AND (n.next_attempt_at IS NULL OR n.next_attempt_at <= " TS (2) ")"
            "  ORDER BY w.first_id LIMIT $1::bigint)"
            " SELECT r.event_id, r.flid, r.partition_key, r.event_type, r.state_version, coalesce (r.msg_id, 0),"
            "  r.payload," S_SOURCE ", r.attempts, " MS ("r.next_attempt_at") ", " MS ("p.created_at")
            " FROM heads s"
            " CROSS JOIN LATERAL (SELECT * FROM msg_event WHERE event_id = s.event_id LIMIT 1) r"
            S_SOURCE_JOIN ("r")
            " ORDER BY s.first_id",
            params, limit, INT64_MAX, batch, error);
}

static int
s_mark (PGconn *conn, const char *sql, const int64_t *event_ids, size_t count, int64_t now_ms, int *marked,
        char **error)
{
    if (marked)
        *marked = 0;
    if (count == 0)
        return 0;
    char *ids = mx_bulk_int_array (event_ids, count);
    char now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { ids, mx_pg_int64_text (now_ms, now) };
    PGresult *res = NULL;
    int rc = mx_pg_exec (conn, sql, 2, params, &res, error);
    free (ids);
    if (rc)
        return -1;
    if (marked)
        *marked = atoi (PQcmdTuples (res));
    PQclear (res);
    return 0;
}

int
mx_outbox_mark_sent (PGconn *conn, const int64_t *event_ids, size_t count, int64_t now_ms, int *marked,
                     char **error)
{
    assert (conn && (event_ids || count == 0));
    return s_mark (conn,
        //  Joined to the ids, each row is a probe of the primary key; with
        //  event_id = ANY the planner may AND in msg_event_pending_idx, a
        //  scan of the whole backlog.
        "UPDATE msg_event e SET state = 'SENT', sent_at = " TS (2)
        " FROM unnest ($1::bigint[]) AS u (id)"
        " WHERE e.event_id = u.id AND e.state = 'PENDING'",
        event_ids, count, now_ms, marked, error);
}

int
mx_outbox_mark_schd_sent (PGconn *conn, const int64_t *event_ids, size_t count, int64_t now_ms, int *marked,
                          char **error)
{
    assert (conn && (event_ids || count == 0));
    //  Each acknowledged event by its key, then its FLID's PENDING events
    //  up to it by msg_event_schd_open_idx (OFFSET 0 keeps that a probe per
    //  FLID, never a join of the target's whole backlog), then the rows
    //  changed by their keys again.
    return s_mark (conn,
        "WITH acked AS ("
        "  SELECT a.event_id, a.flid FROM unnest ($1::bigint[]) AS u (id)"
        "  CROSS JOIN LATERAL (SELECT event_id, flid FROM msg_event"
        "   WHERE event_id = u.id AND target = '" MX_OUTBOX_TARGET_SCHD "' LIMIT 1) a),"
        " merged AS ("
        "  SELECT m.event_id, a.event_id AS into_id FROM acked a"
        "  CROSS JOIN LATERAL (SELECT event_id FROM msg_event"
        "   WHERE target = '" MX_OUTBOX_TARGET_SCHD "' AND state = 'PENDING'"
        "   AND flid = a.flid AND event_id <= a.event_id OFFSET 0) m)"
        " UPDATE msg_event e SET state = 'SENT', sent_at = " TS (2) ","
        " merged_into = CASE WHEN e.event_id = m.into_id THEN NULL ELSE m.into_id END"
        " FROM merged m"
        " WHERE e.event_id = ANY (ARRAY (SELECT event_id FROM merged)) AND e.event_id = m.event_id"
        " AND e.state = 'PENDING'",
        event_ids, count, now_ms, marked, error);
}

int
mx_outbox_fail (PGconn *conn, const mx_outbox_failure_t *failures, size_t count, int max_attempts,
                const int64_t *backoff, size_t backoff_count, int64_t now_ms,
                mx_outbox_outcome_t *outcomes, size_t *done, char **error)
{
    assert (conn && (failures || count == 0));
    assert (backoff && backoff_count > 0 && max_attempts > 0);
    if (done)
        *done = 0;
    if (count == 0)
        return 0;
    int64_t *ids = (int64_t *) calloc (count, sizeof (int64_t));
    const char **reasons = (const char **) calloc (count, sizeof (char *));
    assert (ids && reasons);
    for (size_t i = 0; i < count; i++) {
        ids [i] = failures [i].event_id;
        reasons [i] = failures [i].reason ? failures [i].reason : "unknown failure";
    }
    char *id_array = mx_bulk_int_array (ids, count);
    char *reason_array = mx_bulk_text_array (reasons, count);
    char *steps = mx_bulk_int_array (backoff, backoff_count);
    char limit [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        id_array, reason_array, mx_pg_int64_text (max_attempts, limit), mx_pg_int64_text (now_ms, now), steps
    };
    PGresult *res = NULL;
    int rc = mx_pg_exec (conn,
        "WITH failed AS ("
        "  UPDATE msg_event e SET attempts = e.attempts + 1, last_error = u.reason,"
        "   state = CASE WHEN e.attempts + 1 >= $3::int THEN 'DEAD' ELSE 'PENDING' END,"
        "   next_attempt_at = CASE WHEN e.attempts + 1 >= $3::int THEN NULL"
        "    ELSE to_timestamp (($4::bigint"
        "         + ($5::bigint[]) [least (e.attempts + 1, cardinality ($5::bigint[]))]) / 1000.0) END"
        "  FROM unnest ($1::bigint[], $2::text[]) AS u (id, reason)"
        "  WHERE e.event_id = u.id AND e.state = 'PENDING'"
        "  RETURNING e.event_id, e.target, e.flid, e.state, e.attempts, e.next_attempt_at),"
        " superseded AS ("
        "  UPDATE msg_event o SET state = 'DEAD', merged_into = f.event_id,"
        "   last_error = 'superseded by event ' || f.event_id || ', which is DEAD'"
        "  FROM failed f"
        "  WHERE f.state = 'DEAD' AND f.target = '" MX_OUTBOX_TARGET_SCHD "'"
        "  AND o.target = '" MX_OUTBOX_TARGET_SCHD "' AND o.state = 'PENDING'"
        "  AND o.flid = f.flid AND o.event_id < f.event_id)"
        " SELECT event_id, attempts, state = 'DEAD', " MS ("next_attempt_at") " FROM failed",
        5, params, &res, error);
    free (id_array);
    free (reason_array);
    free (steps);
    free (ids);
    free (reasons);
    if (rc)
        return -1;
    size_t rows = (size_t) PQntuples (res);
    for (size_t row = 0; outcomes && row < rows && row < count; row++) {
        outcomes [row].event_id = mx_pg_get_int64 (res, (int) row, 0);
        outcomes [row].attempts = (int) mx_pg_get_int64 (res, (int) row, 1);
        outcomes [row].dead = strcmp (PQgetvalue (res, (int) row, 2), "t") == 0;
        outcomes [row].next_attempt_at = mx_pg_get_int64 (res, (int) row, 3);
    }
    if (done)
        *done = rows;
    PQclear (res);
    return 0;
}

//  ---------------------------------------------------------------------
//  Replay of dead letters

int
mx_outbox_pending_among (PGconn *conn, const char *target, const int64_t *ids, size_t count, bool *pending,
                         char **error)
{
    assert (conn && target && pending && (ids || count == 0));
    for (size_t i = 0; i < count; i++)
        pending [i] = false;
    if (count == 0)
        return 0;
    char *id_array = mx_bulk_int_array (ids, count);
    const char *params [] = { id_array, target };
    PGresult *res = NULL;
    //  One probe of the primary key per id, its position back with it.
    int rc = mx_pg_exec (conn,
        "SELECT a.n - 1 FROM unnest ($1::bigint[]) WITH ORDINALITY a (event_id, n)"
        " WHERE EXISTS (SELECT 1 FROM msg_event e WHERE e.event_id = a.event_id"
        "  AND e.target = $2::text AND e.state = 'PENDING')",
        2, params, &res, error);
    free (id_array);
    if (rc)
        return -1;
    for (int row = 0; row < PQntuples (res); row++) {
        int64_t index = mx_pg_get_int64 (res, row, 0);
        if (index >= 0 && (size_t) index < count)
            pending [index] = true;
    }
    PQclear (res);
    return 0;
}

int
mx_outbox_replay_candidates (PGconn *conn, const int64_t *ids, size_t count, bool all, char **json,
                             char **error)
{
    assert (conn && json && (ids || count == 0));
    *json = NULL;
    char *id_array = mx_bulk_int_array (ids, count);
    const char *params [] = { id_array, all ? "true" : "false" };
    PGresult *res = NULL;
    //  Ids asked for that cannot go are listed with the reason, so a dry
    //  run says exactly what would and would not move.
    int rc = mx_pg_exec (conn,
        "WITH asked AS (SELECT DISTINCT unnest ($1::bigint[]) AS event_id),"
        " dead_keyed AS (SELECT event_id, target, flid, partition_key FROM msg_event"
        "  WHERE target IN (" S_COMPACTED_TARGETS ") AND state = 'DEAD'),"
        " newest AS (SELECT DISTINCT ON (target, flid, partition_key) target, flid, partition_key, event_id, state"
        "  FROM msg_event WHERE (target, flid, partition_key) IN (SELECT target, flid, partition_key FROM dead_keyed"
        "   WHERE $2::bool OR event_id IN (SELECT event_id FROM asked))"
        "  ORDER BY target, flid, partition_key, event_id DESC),"
        " picked AS (SELECT e.*, n.event_id AS newest_id, n.state AS newest_state,"
        "  CASE WHEN e.target = '" MX_OUTBOX_TARGET_SCHD "' THEN 'FLID ' || e.flid ELSE 'key ' || e.partition_key END"
        "   AS subject,"
        "  CASE WHEN e.target = '" MX_OUTBOX_TARGET_SCHD "' THEN 'flight' ELSE 'entry' END AS noun"
        "  FROM msg_event e"
        "  LEFT JOIN newest n ON n.target = e.target AND n.flid = e.flid AND n.partition_key = e.partition_key"
        "  WHERE e.event_id IN (SELECT event_id FROM asked)"
        "  OR ($2::bool AND e.state = 'DEAD' AND (e.target NOT IN (" S_COMPACTED_TARGETS ")"
        "      OR e.event_id = n.event_id OR (n.state <> 'DEAD' AND e.merged_into IS NULL))))"
        " SELECT coalesce (json_agg (item ORDER BY (item->>'event_id')::bigint), '[]')::text FROM ("
        "  SELECT json_build_object ('event_id', p.event_id, 'target', p.target, 'flid', p.flid,"
        "   'state_version', p.state_version, 'event_type', p.event_type, 'msg_id', p.msg_id, 'state', p.state,"
        "   'attempts', p.attempts, 'last_error', p.last_error,"
        "   'carries', CASE WHEN p.state = 'DEAD' AND p.event_id = p.newest_id"
        "    THEN (SELECT count(*) FROM dead_keyed d WHERE d.target = p.target AND d.flid = p.flid"
        "     AND d.partition_key = p.partition_key AND d.event_id < p.event_id) ELSE 0 END,"
        "   'refused', CASE WHEN p.state <> 'DEAD' THEN 'not DEAD: state ' || p.state"
        "    WHEN p.newest_id <> p.event_id AND p.newest_state = 'DEAD'"
        "     THEN 'goes with event ' || p.newest_id || ', the newest state of ' || p.subject"
        "      || ': replay that one'"
        "    WHEN p.newest_id <> p.event_id"
        "     THEN 'superseded by event ' || p.newest_id || ' (' || p.newest_state || '), a later state of '"
        "      || p.subject || ': sending this one would move the ' || p.noun || ' back' END) AS item"
        "  FROM picked p"
        "  UNION ALL"
        "  SELECT json_build_object ('event_id', a.event_id, 'refused', 'no such event') FROM asked a"
        "  WHERE NOT EXISTS (SELECT 1 FROM msg_event e WHERE e.event_id = a.event_id)) candidates",
        2, params, &res, error);
    free (id_array);
    if (rc)
        return -1;
    *json = strdup (PQgetvalue (res, 0, 0));
    PQclear (res);
    return 0;
}

int
mx_outbox_replay (PGconn *conn, const int64_t *ids, size_t count, const char *os_user, int64_t now_ms,
                  int *moved, char **error)
{
    assert (conn && moved && (ids || count == 0));
    *moved = 0;
    if (mx_pg_begin (conn, error))
        return -1;
    char *id_array = mx_bulk_int_array (ids, count);
    const char *params [] = { id_array };
    PGresult *res = NULL;
    //  The head is locked and checked again (still DEAD, still the newest
    //  state of its key) in the statement that re-arms it.
    int rc = mx_pg_exec (conn,
        "WITH heads AS (SELECT h.event_id, h.target, h.flid, h.partition_key FROM msg_event h"
        "  WHERE h.event_id = ANY ($1::bigint[]) AND h.state = 'DEAD'"
        "  AND NOT EXISTS (SELECT 1 FROM msg_event n WHERE h.target IN (" S_COMPACTED_TARGETS ")"
        "   AND n.target = h.target AND n.flid = h.flid AND n.partition_key = h.partition_key"
        "   AND n.event_id > h.event_id)"
        "  FOR UPDATE OF h),"
        " rearmed AS (UPDATE msg_event e SET state = 'PENDING', attempts = 0, next_attempt_at = NULL,"
        "  merged_into = NULL, last_error = 'replayed, was: ' || coalesce (e.last_error, '-')"
        "  FROM heads h WHERE e.state = 'DEAD' AND (e.event_id = h.event_id"
        "   OR (h.target IN (" S_COMPACTED_TARGETS ") AND e.target = h.target"
        "       AND e.flid = h.flid AND e.partition_key = h.partition_key AND e.event_id < h.event_id))"
        "  RETURNING e.event_id)"
        " SELECT json_build_object ('event_ids', coalesce (json_agg (event_id ORDER BY event_id), '[]'))::text,"
        "  count(*) FROM rearmed",
        1, params, &res, error);
    free (id_array);
    if (rc)
        goto failed;
    int rows = (int) mx_pg_get_int64 (res, 0, 1);
    char detail [64];
    snprintf (detail, sizeof detail, "%d event%s back to PENDING", rows, rows == 1 ? "" : "s");
    rc = mx_audit_write (conn, "msgxctl", os_user, "replay-events", PQgetvalue (res, 0, 0), "ok", detail,
                         now_ms, error);
    PQclear (res);
    if (rc || mx_pg_commit (conn, error))
        goto failed;
    *moved = rows;
    return 0;

failed:;
    char *ignored = NULL;
    mx_pg_rollback (conn, &ignored);
    free (ignored);
    return -1;
}

//  ---------------------------------------------------------------------
//  Retention

int
mx_outbox_purge (PGconn *conn, int64_t before_ms, int limit, mx_outbox_purge_t *walk, char **error)
{
    assert (conn && walk && limit >= 1);
    walk->deleted_msg = walk->deleted_schd = walk->deleted_ref = 0;
    char after [MX_PG_INT64_BUFSIZE], limit_text [MX_PG_INT64_BUFSIZE], before [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (walk->after_id, after), mx_pg_int64_text (limit, limit_text),
        mx_pg_int64_text (before_ms, before)
    };
    PGresult *res = NULL;
    //  One statement, so one short transaction. The page is a range of the
    //  primary key; the rows to delete are probed by key again (= ANY of an
    //  array keeps the planner from joining the page to the whole table).
    //  A row changed meanwhile is checked again by the DELETE (still SENT).
    //  The compacted keys' older open events are probes of
    //  msg_event_schd_open_idx (FLID), msg_event_dead_idx and
    //  msg_event_pending_idx (LIST:KEY).
    int rc = mx_pg_exec (conn,
        "WITH page AS MATERIALIZED (SELECT event_id, state, sent_at, created_at FROM msg_event"
        "  WHERE event_id > $1::bigint ORDER BY event_id LIMIT $2::integer),"
        " gone AS (DELETE FROM msg_event e"
        "  WHERE e.event_id = ANY (ARRAY (SELECT event_id FROM page"
        "   WHERE state = 'SENT' AND sent_at < " TS (3) "))"
        "  AND e.state = 'SENT'"
        "  AND NOT (e.target = '" MX_OUTBOX_TARGET_SCHD "' AND EXISTS (SELECT 1 FROM msg_event o"
        "   WHERE o.target = '" MX_OUTBOX_TARGET_SCHD "' AND o.state IN ('PENDING', 'DEAD')"
        "   AND o.flid = e.flid AND o.event_id < e.event_id))"
        "  AND NOT (e.target = '" MX_OUTBOX_TARGET_REF "' AND (EXISTS (SELECT 1 FROM msg_event o"
        "    WHERE o.target = '" MX_OUTBOX_TARGET_REF "' AND o.state = 'DEAD'"
        "    AND o.partition_key = e.partition_key AND o.event_id < e.event_id)"
        "   OR EXISTS (SELECT 1 FROM msg_event o"
        "    WHERE o.target = '" MX_OUTBOX_TARGET_REF "' AND o.state = 'PENDING'"
        "    AND o.partition_key = e.partition_key AND o.event_id < e.event_id)))"
        "  RETURNING e.target)"
        " SELECT (SELECT count(*) FROM page), coalesce ((SELECT max (event_id) FROM page), $1::bigint),"
        "  coalesce ((SELECT bool_or (created_at >= " TS (3) ") FROM page), false),"
        "  (SELECT count(*) FROM gone WHERE target = '" MX_OUTBOX_TARGET_MSG "'),"
        "  (SELECT count(*) FROM gone WHERE target = '" MX_OUTBOX_TARGET_SCHD "'),"
        "  (SELECT count(*) FROM gone WHERE target = '" MX_OUTBOX_TARGET_REF "')",
        3, params, &res, error);
    if (rc)
        return -1;
    int64_t examined = mx_pg_get_int64 (res, 0, 0);
    walk->after_id = mx_pg_get_int64 (res, 0, 1);
    //  Events are created in event_id order (each writer draws its ids in
    //  its transaction), so past one created after the cut-off, none can
    //  have been sent before it.
    walk->done = examined < limit || strcmp (PQgetvalue (res, 0, 2), "t") == 0;
    walk->deleted_msg = (int) mx_pg_get_int64 (res, 0, 3);
    walk->deleted_schd = (int) mx_pg_get_int64 (res, 0, 4);
    walk->deleted_ref = (int) mx_pg_get_int64 (res, 0, 5);
    PQclear (res);
    return 0;
}
