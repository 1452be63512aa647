/*  mx_bulk - see mx_bulk.h.  */
#include "mx_bulk.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_pg.h"

#include <czmq.h>
#include <time.h>

#define TS(n) "to_timestamp ($" #n "::bigint / 1000.0)"

char *
mx_bulk_text_array (const char *const *values, size_t count)
{
    size_t size = 3;
    for (size_t i = 0; i < count; i++)
        size += values [i] ? 2 * strlen (values [i]) + 3 : 5;
    char *text = (char *) malloc (size);
    assert (text);
    char *out = text;
    *out++ = '{';
    for (size_t i = 0; i < count; i++) {
        if (i)
            *out++ = ',';
        if (!values [i]) {
            memcpy (out, "NULL", 4);
            out += 4;
            continue;
        }
        *out++ = '"';
        for (const char *in = values [i]; *in; in++) {
            if (*in == '"' || *in == '\\')
                *out++ = '\\';
            *out++ = *in;
        }
        *out++ = '"';
    }
    *out++ = '}';
    *out = 0;
    return text;
}

char *
mx_bulk_int_array (const int64_t *values, size_t count)
{
    size_t size = 3 + count * 21;
    char *text = (char *) malloc (size);
    assert (text);
    size_t used = 0;
    text [used++] = '{';
    for (size_t i = 0; i < count; i++)
        used += (size_t) snprintf (text + used, size - used, "%s%" PRId64, i ? "," : "", values [i]);
    text [used++] = '}';
    text [used] = 0;
    return text;
}

//  One index probe per id: a plan from stale statistics could otherwise
//  scan the whole backlog for each batch.
#define S_START_SQL \
    "SELECT p.msg_id, p.state, p.attempts FROM unnest ($1::bigint[]) AS w (wanted)" \
    " CROSS JOIN LATERAL (SELECT msg_id, state, attempts FROM proc_state" \
    "                     WHERE msg_id = w.wanted LIMIT 1) AS p"

int
mx_bulk_start_send (PGconn *conn, const int64_t *ids, size_t count, char **error)
{
    char *id_array = mx_bulk_int_array (ids, count);
    const char *params [] = { id_array };
    int rc = 0;
    if (PQsendQueryParams (conn, S_START_SQL, 1, NULL, params, NULL, NULL, 0) != 1) {
        if (asprintf (error, "cannot send the batch's states query: %s", PQerrorMessage (conn)) < 0)
            *error = NULL;
        rc = -1;
    }
    free (id_array);
    return rc;
}

int
mx_bulk_start_result (PGconn *conn, const int64_t *ids, size_t count, int *states, int *attempts,
                      char **error)
{
    PGresult *res = NULL;
    if (mx_pg_take (conn, S_START_SQL, &res, error))
        return -1;
    static const char *names [] = { "PENDING", "FAILED", "SUCCEEDED", "SKIPPED", "DEAD" };
    for (size_t i = 0; i < count; i++)
        states [i] = -1;
    for (int row = 0; row < PQntuples (res); row++) {
        int64_t id = mx_pg_get_int64 (res, row, 0);
        for (size_t i = 0; i < count; i++)
            if (ids [i] == id) {
                for (int s = 0; s < 5; s++)
                    if (strcmp (PQgetvalue (res, row, 1), names [s]) == 0)
                        states [i] = s;
                attempts [i] = (int) mx_pg_get_int64 (res, row, 2);
            }
    }
    PQclear (res);
    return 0;
}

int
mx_bulk_start (PGconn *conn, const int64_t *ids, size_t count, int *states, int *attempts, char **error)
{
    if (mx_bulk_start_send (conn, ids, count, error))
        return -1;
    return mx_bulk_start_result (conn, ids, count, states, attempts, error);
}

int
mx_bulk_bind_identities (PGconn *conn, const int64_t *ids, const char *const *keys, size_t count,
                         int64_t now_ms, int64_t *holders, char **error)
{
    char *id_array = mx_bulk_int_array (ids, count);
    char *key_array = mx_bulk_text_array (keys, count);
    char now [MX_PG_INT64_BUFSIZE];
    const char *params [] = { id_array, key_array, mx_pg_int64_text (now_ms, now) };
    PGresult *res = NULL;
    //  Rows go in msg_id order, so within the batch the earliest message
    //  takes a repeated key; the identity table outlives archiving. The key
    //  goes onto proc_state with the terminal UPDATE (mx_bulk_finish_send): one
    //  write of each row, not two.
    int rc = mx_pg_exec (conn,
        "WITH wanted AS (SELECT * FROM unnest ($1::bigint[], $2::text[]) WITH ORDINALITY AS w (msg_id, key, ord)),"
        " claimed AS ("
        "  INSERT INTO identity (identity_key, msg_id, bound_at)"
        "  SELECT key, msg_id, " TS (3) " FROM wanted ORDER BY ord"
        "  ON CONFLICT (identity_key) DO NOTHING RETURNING identity_key, msg_id),"
        //  An earlier holder by index probe: a join could hash the whole
        //  identity table, which grows with every message.
        " holder AS ("
        "  SELECT w.ord, w.msg_id, coalesce (c.msg_id,"
        "         (SELECT i.msg_id FROM identity i WHERE i.identity_key = w.key)) AS holder, w.key"
        "  FROM wanted w LEFT JOIN claimed c ON c.identity_key = w.key)"
        " SELECT ord, holder FROM holder ORDER BY ord",
        3, params, &res, error);
    free (id_array);
    free (key_array);
    if (rc)
        return -1;
    if ((size_t) PQntuples (res) != count) {
        PQclear (res);
        *error = strdup ("identity binding returned the wrong number of rows");
        return -1;
    }
    for (size_t i = 0; i < count; i++)
        holders [i] = mx_pg_get_int64 (res, (int) i, 1);
    PQclear (res);
    return 0;
}

int
mx_bulk_finish_send (PGconn *conn, const mx_bulk_terminal_t *rows, size_t count, int64_t now_ms, char **error)
{
    if (count == 0)
        return 0;
    int64_t *ids = (int64_t *) calloc (count, sizeof (int64_t));
    const char **states = (const char **) calloc (count, sizeof (char *));
    const char **classes = (const char **) calloc (count, sizeof (char *));
    const char **errors = (const char **) calloc (count, sizeof (char *));
    const char **outcomes = (const char **) calloc (count, sizeof (char *));
    const char **types = (const char **) calloc (count, sizeof (char *));
    const char **styps = (const char **) calloc (count, sizeof (char *));
    const char **keys = (const char **) calloc (count, sizeof (char *));
    for (size_t i = 0; i < count; i++) {
        ids [i] = rows [i].msg_id;
        states [i] = mx_state_name (rows [i].state);
        classes [i] = rows [i].error_class == MX_ERR_NONE ? NULL : mx_error_class_name (rows [i].error_class);
        errors [i] = rows [i].last_error;
        outcomes [i] = rows [i].outcome;
        types [i] = rows [i].type;
        styps [i] = rows [i].styp;
        keys [i] = rows [i].identity_key;
    }
    char *arrays [8] = {
        mx_bulk_int_array (ids, count), mx_bulk_text_array (states, count), mx_bulk_text_array (classes, count),
        mx_bulk_text_array (errors, count), mx_bulk_text_array (outcomes, count),
        mx_bulk_text_array (types, count), mx_bulk_text_array (styps, count), mx_bulk_text_array (keys, count)
    };
    char now [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        arrays [0], arrays [1], arrays [2], arrays [3], arrays [4], arrays [5], arrays [6],
        mx_pg_int64_text (now_ms, now), arrays [7]
    };
    //  Each row: terminal state and backfill intent together, as the
    //  single-message UPDATE does, with what the message-by-message path
    //  writes on the way there (start time, identity key): each row is
    //  written once per batch, each write of it costing every index.
    int rc = 0;
    if (PQsendQueryParams (conn,
        "UPDATE proc_state p SET state = t.state, error_class = t.class,"
        " last_error = coalesce (t.error, p.last_error), outcome = t.outcome,"
        " msg_type = coalesce (t.type, p.msg_type), msg_styp = coalesce (t.styp, p.msg_styp),"
        " identity_key = coalesce (p.identity_key, t.key),"
        " processing_started_at = coalesce (p.processing_started_at, " TS (8) "),"
        " next_attempt_at = NULL, finished_at = " TS (8) ", updated_at = " TS (8) ", backfill_next_at = " TS (8)
        " FROM unnest ($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],"
        "              $9::text[])"
        "   AS t (msg_id, state, class, error, outcome, type, styp, key)"
        " WHERE p.msg_id = t.msg_id AND p.state IN ('PENDING', 'FAILED')"
        //  The ids again, so proc_state is probed by index, not hashed whole.
        " AND p.msg_id = ANY ($1::bigint[])",
        9, NULL, params, NULL, NULL, 0) != 1) {
        if (asprintf (error, "cannot send the terminal states: %s", PQerrorMessage (conn)) < 0)
            *error = NULL;
        rc = -1;
    }
    for (int i = 0; i < 8; i++)
        free (arrays [i]);
    free (ids);
    free (states);
    free (classes);
    free (errors);
    free (outcomes);
    free (types);
    free (styps);
    free (keys);
    return rc;
}

int
mx_bulk_finish_result (PGconn *conn, size_t count, char **error)
{
    if (count == 0)
        return 0;
    PGresult *res = NULL;
    if (mx_pg_take (conn, "UPDATE proc_state (terminal states)", &res, error))
        return -1;
    int updated = atoi (PQcmdTuples (res));
    PQclear (res);
    if ((size_t) updated != count) {
        if (asprintf (error, "terminal update changed %d rows, expected %zu", updated, count) < 0)
            *error = NULL;
        return -1;
    }
    return 0;
}

//  COPY text format: backslash, tab, newline and carriage return escaped.
static void
s_copy_field (zchunk_t *out, const char *value)
{
    if (!value) {
        zchunk_extend (out, "\\N", 2);
        return;
    }
    const char *run = value;
    for (const char *at = value; ; at++) {
        const char *escape = *at == '\\' ? "\\\\" : *at == '\t' ? "\\t" : *at == '\n' ? "\\n"
                           : *at == '\r' ? "\\r" : NULL;
        if (escape || !*at) {
            zchunk_extend (out, run, (size_t) (at - run));
            if (!*at)
                break;
            zchunk_extend (out, escape, 2);
            run = at + 1;
        }
    }
}

//  Rows are handed to libpq in pieces of about this size, so the server
//  inserts them while the caller goes on producing the next ones.
#define S_COPY_PIECE 65536

struct mx_bulk_copy_t {
    PGconn *conn;
    PGresult *ids;                      //  the event ids drawn, in order
    size_t max;
    size_t used;
    char created [48];                  //  created_at of every row
    zchunk_t *out;                      //  rows not yet handed to libpq
    char *error;                        //  first failure, reported by close
};

static void
s_copy_fail (mx_bulk_copy_t *self, const char *what)
{
    if (!self->error && asprintf (&self->error, "%s: %s", what, PQerrorMessage (self->conn)) < 0)
        self->error = NULL;
}

static void
s_copy_flush (mx_bulk_copy_t *self)
{
    if (zchunk_size (self->out) == 0)
        return;
    if (!self->error && PQputCopyData (self->conn, (const char *) zchunk_data (self->out),
                                       (int) zchunk_size (self->out)) != 1)
        s_copy_fail (self, "COPY msg_event");
    zchunk_set (self->out, NULL, 0);
}

int
mx_bulk_events_open (PGconn *conn, size_t max, int64_t now_ms, mx_bulk_copy_t **copy, char **error)
{
    *copy = NULL;
    //  The ids first, in order: they go into the documents. An id drawn
    //  and not used is a gap in the sequence, as a rollback leaves.
    char count_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text ((int64_t) max, count_text) };
    PGresult *ids = NULL;
    //  The sequence is looked up once: pg_get_serial_sequence per row cost
    //  more than the nextval itself (4 ms for a batch's thousand ids).
    if (mx_pg_exec (conn, "WITH s AS MATERIALIZED"
                          " (SELECT pg_get_serial_sequence ('msg_event', 'event_id')::regclass AS seq)"
                          " SELECT nextval (s.seq) FROM s, generate_series (1, $1::bigint) ORDER BY 1",
                    1, params, &ids, error))
        return -1;
    if ((size_t) PQntuples (ids) != max) {
        PQclear (ids);
        *error = strdup ("could not draw event ids");
        return -1;
    }
    PGresult *res = PQexec (conn, "COPY msg_event (event_id, target, partition_key, event_type, flid,"
                                  " state_version, msg_id, payload, created_at) FROM STDIN");
    if (PQresultStatus (res) != PGRES_COPY_IN) {
        if (mx_pg_check (conn, res, "COPY msg_event", error) == 0)
            *error = strdup ("COPY msg_event did not start");
        PQclear (res);
        PQclear (ids);
        return -1;
    }
    PQclear (res);
    mx_bulk_copy_t *self = (mx_bulk_copy_t *) calloc (1, sizeof (mx_bulk_copy_t));
    assert (self);
    self->conn = conn;
    self->ids = ids;
    self->max = max;
    self->out = zchunk_new (NULL, S_COPY_PIECE + 8192);
    time_t seconds = (time_t) (now_ms / 1000);
    struct tm tm;
    gmtime_r (&seconds, &tm);
    size_t n = strftime (self->created, sizeof self->created, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf (self->created + n, sizeof self->created - n, ".%03d+00", (int) (now_ms % 1000));
    *copy = self;
    return 0;
}

void
mx_bulk_events_put (mx_bulk_copy_t *self, const mx_bulk_event_t *event)
{
    if (self->used == self->max) {
        if (!self->error)
            self->error = strdup ("more events than event ids drawn for them");
        return;
    }
    const char *id = PQgetvalue (self->ids, (int) self->used++, 0);
    zchunk_t *out = self->out;
    char line [256];
    char msg_id [MX_PG_INT64_BUFSIZE] = "\\N";
    if (event->msg_id > 0)
        mx_pg_int64_text (event->msg_id, msg_id);
    snprintf (line, sizeof line, "%s\t%s\t%" PRId64 "\t%s\t%" PRId64 "\t%" PRId64 "\t%s\t", id,
              event->target == MX_TARGET_MSG ? "KAFKA:msg" : "KAFKA:schd", event->flid,
              event->type == MX_EVENT_UPSERT ? "UPSERT" : "TOMBSTONE", event->flid, event->state_version,
              msg_id);
    zchunk_extend (out, line, strlen (line));
    const char *payload = event->payload;
    static const char prefix [] = "{\"event_id\":0,";
    if (payload && strncmp (payload, prefix, sizeof prefix - 1) == 0) {
        char head [64];
        snprintf (head, sizeof head, "{\"event_id\":%s,", id);
        s_copy_field (out, head);
        s_copy_field (out, payload + sizeof prefix - 1);
    }
    else
        s_copy_field (out, payload);
    zchunk_extend (out, "\t", 1);
    zchunk_extend (out, self->created, strlen (self->created));
    zchunk_extend (out, "\n", 1);
    if (zchunk_size (out) >= S_COPY_PIECE)
        s_copy_flush (self);
}

int
mx_bulk_events_close (mx_bulk_copy_t **copy_p, char **error)
{
    mx_bulk_copy_t *self = *copy_p;
    if (!self)
        return 0;
    *copy_p = NULL;
    s_copy_flush (self);
    //  After a failure the COPY is ended with an error: nothing of it stays,
    //  and the caller's transaction fails with it.
    if (PQputCopyEnd (self->conn, self->error ? "aborted by msgxd" : NULL) != 1)
        s_copy_fail (self, "COPY msg_event");
    char *failed = NULL;
    if (mx_pg_take (self->conn, "COPY msg_event", NULL, &failed) && !self->error)
        self->error = failed;
    else
        free (failed);
    int rc = self->error ? -1 : 0;
    if (rc)
        *error = self->error;
    PQclear (self->ids);
    zchunk_destroy (&self->out);
    free (self);
    return rc;
}
