/*  mx_rawstore - see mx_rawstore.h.

    Texts travel as bytea: read in binary results (no hex to decode),
    written as a binary parameter or, for a batch, hex in one COPY.
*/
#include "mx_rawstore.h"

#include <assert.h>
#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mx_pg.h"

//  Rows are handed to libpq in pieces of about this size.
#define S_COPY_PIECE 65536

const char *
mx_rawstore_source_name (mx_raw_source_t source)
{
    return source == MX_RAW_RETAINED ? "retention" : source == MX_RAW_MAILBOX ? "mailbox" : "none";
}

static void
s_set_error (char **error, const char *what)
{
    if (error)
        *error = strdup (what);
}

//  msg_id (int8), full length (int8) and the text unless over max_bytes,
//  all binary.
static PGresult *
s_select (PGconn *conn, const char *sql, int64_t a, int64_t b, size_t max_bytes, char **error)
{
    char a_text [MX_PG_INT64_BUFSIZE], b_text [MX_PG_INT64_BUFSIZE], max_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = {
        mx_pg_int64_text (a, a_text), mx_pg_int64_text (b, b_text),
        mx_pg_int64_text (max_bytes > INT64_MAX ? INT64_MAX : (int64_t) max_bytes, max_text)
    };
    PGresult *res = PQexecParams (conn, sql, 3, NULL, params, NULL, NULL, 1);
    if (mx_pg_check (conn, res, sql, error)) {
        PQclear (res);
        return NULL;
    }
    return res;
}

static int64_t
s_int8 (const PGresult *res, int row, int col)
{
    uint64_t value;
    memcpy (&value, PQgetvalue (res, row, col), sizeof value);
    return (int64_t) be64toh (value);
}

//  Row `row` of s_select's result into a mailbox text entry.
static void
s_take (const PGresult *res, int row, mx_mailbox_text_t *text)
{
    text->id = s_int8 (res, row, 0);
    text->size = (size_t) s_int8 (res, row, 1);
    text->xml = NULL;
    if (PQgetisnull (res, row, 2))
        return;
    size_t length = (size_t) PQgetlength (res, row, 2);
    text->xml = (char *) malloc (length + 1);
    assert (text->xml);
    memcpy (text->xml, PQgetvalue (res, row, 2), length);
    text->xml [length] = 0;
    text->size = length;
}

//  octet_length reads the stored length: nothing is decompressed for a
//  text that is not sent.
#define S_COLUMNS "SELECT msg_id, octet_length (raw)::bigint," \
                  " CASE WHEN octet_length (raw) <= $3::bigint THEN raw END FROM raw_message"

int
mx_rawstore_read (PGconn *conn, int64_t msg_id, size_t max_bytes, char **xml, size_t *size, char **error)
{
    assert (conn && xml && size);
    *xml = NULL;
    *size = 0;
    PGresult *res = s_select (conn, S_COLUMNS " WHERE msg_id BETWEEN $1::bigint AND $2::bigint",
                              msg_id, msg_id, max_bytes, error);
    if (!res)
        return -1;
    int found = PQntuples (res) > 0;
    if (found) {
        mx_mailbox_text_t text;
        s_take (res, 0, &text);
        *xml = text.xml;
        *size = text.size;
    }
    PQclear (res);
    return found;
}

int
mx_rawstore_read_range (PGconn *conn, int64_t from, int64_t to, size_t max_bytes,
                        mx_mailbox_text_t **rows, size_t *count, char **error)
{
    assert (conn && rows && count);
    *rows = NULL;
    *count = 0;
    PGresult *res = s_select (conn, S_COLUMNS " WHERE msg_id BETWEEN $1::bigint AND $2::bigint ORDER BY msg_id",
                              from, to, max_bytes, error);
    if (!res)
        return -1;
    size_t n = (size_t) PQntuples (res);
    *rows = (mx_mailbox_text_t *) calloc (n + 1, sizeof (mx_mailbox_text_t));
    assert (*rows);
    for (size_t i = 0; i < n; i++)
        s_take (res, (int) i, &(*rows) [i]);
    *count = n;
    PQclear (res);
    return 0;
}

int
mx_rawstore_load (PGconn *conn, mx_mailbox_t *mailbox, int64_t msg_id, size_t max_bytes,
                  char **xml, size_t *size, mx_raw_source_t *source, char **error)
{
    *source = MX_RAW_NONE;
    char *failed = NULL;
    int found = mx_rawstore_read (conn, msg_id, max_bytes, xml, size, &failed);
    if (found == 1) {
        *source = MX_RAW_RETAINED;
        return 1;
    }
    if (found < 0) {
        if (error && asprintf (error, "retained raw text: %s", failed ? failed : "?") < 0)
            *error = NULL;
        free (failed);
        return -1;
    }
    if (!mailbox)
        return 0;
    found = mx_mailbox_read (mailbox, msg_id, max_bytes, xml, size, error);
    if (found == 1)
        *source = MX_RAW_MAILBOX;
    return found;
}

//  "YYYY-MM-DD HH:MM:SS.mmm+00" of now_ms.
static void
s_timestamp (int64_t now_ms, char *buf, size_t size)
{
    time_t seconds = (time_t) (now_ms / 1000);
    struct tm tm;
    gmtime_r (&seconds, &tm);
    size_t n = strftime (buf, size, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf (buf + n, size - n, ".%03d+00", (int) (now_ms % 1000));
}

int
mx_rawstore_keep (PGconn *conn, int64_t msg_id, const char *xml, size_t size, int64_t now_ms, char **error)
{
    assert (conn && xml);
    //  libpq's output buffer grows to the largest statement and never
    //  shrinks: a large text goes by COPY in pieces instead of as one
    //  parameter.
    if (size > S_COPY_PIECE) {
        mx_mailbox_text_t *kept = NULL;
        size_t count = 0;
        if (mx_rawstore_read_range (conn, msg_id, msg_id, 0, &kept, &count, error))
            return -1;
        for (size_t i = 0; i < count; i++)
            free (kept [i].xml);
        free (kept);
        if (count)
            return 0;                   //  kept already
        mx_mailbox_text_t row = { msg_id, (char *) xml, size };
        return mx_rawstore_keep_many (conn, &row, 1, now_ms, error);
    }
    char id_text [MX_PG_INT64_BUFSIZE], at [48];
    s_timestamp (now_ms, at, sizeof at);
    const char *params [] = { mx_pg_int64_text (msg_id, id_text), at, xml };
    int lengths [] = { 0, 0, (int) size };
    int formats [] = { 0, 0, 1 };
    const char *sql = "INSERT INTO raw_message (msg_id, kept_at, raw) VALUES ($1::bigint, $2::timestamptz, $3::bytea)"
                      " ON CONFLICT (msg_id) DO NOTHING";
    PGresult *res = PQexecParams (conn, sql, 3, NULL, params, lengths, formats, 0);
    int rc = mx_pg_check (conn, res, sql, error);
    PQclear (res);
    return rc;
}

static int
s_put (PGconn *conn, const char *data, size_t size, char **error)
{
    if (size && PQputCopyData (conn, data, (int) size) != 1) {
        if (error && asprintf (error, "COPY raw_message: %s", PQerrorMessage (conn)) < 0)
            *error = NULL;
        return -1;
    }
    return 0;
}

int
mx_rawstore_keep_many (PGconn *conn, const mx_mailbox_text_t *rows, size_t count, int64_t now_ms,
                       char **error)
{
    assert (conn);
    size_t wanted = 0;
    for (size_t i = 0; i < count; i++)
        wanted += rows [i].xml != NULL;
    if (wanted == 0)
        return 0;
    PGresult *res = PQexec (conn, "COPY raw_message (msg_id, kept_at, raw) FROM STDIN");
    if (PQresultStatus (res) != PGRES_COPY_IN) {
        if (mx_pg_check (conn, res, "COPY raw_message", error) == 0)
            s_set_error (error, "COPY raw_message did not start");
        PQclear (res);
        return -1;
    }
    PQclear (res);
    char at [48];
    s_timestamp (now_ms, at, sizeof at);
    static const char hex [] = "0123456789abcdef";
    size_t capacity = S_COPY_PIECE * 2 + 256, used = 0;
    char *out = (char *) malloc (capacity);
    assert (out);
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        if (!rows [i].xml)
            continue;
        //  The row's head, then its bytes as hex (\\x: a backslash escaped
        //  for COPY), handed over a piece at a time.
        used += (size_t) snprintf (out + used, capacity - used, "%" PRId64 "\t%s\t\\\\x", rows [i].id, at);
        const unsigned char *bytes = (const unsigned char *) rows [i].xml;
        for (size_t b = 0; b < rows [i].size; b++) {
            out [used++] = hex [bytes [b] >> 4];
            out [used++] = hex [bytes [b] & 15];
            if (used >= S_COPY_PIECE * 2) {
                rc = s_put (conn, out, used, error);
                used = 0;
                if (rc)
                    break;
            }
        }
        out [used++] = '\n';
        if (used >= S_COPY_PIECE) {
            rc = rc ? rc : s_put (conn, out, used, error);
            used = 0;
        }
    }
    if (rc == 0)
        rc = s_put (conn, out, used, error);
    free (out);
    //  After a failure the COPY ends with an error, and the caller's
    //  transaction with it.
    if (PQputCopyEnd (conn, rc ? "aborted by msgxd" : NULL) != 1 && rc == 0) {
        if (error && asprintf (error, "COPY raw_message: %s", PQerrorMessage (conn)) < 0)
            *error = NULL;
        rc = -1;
    }
    char *failed = NULL;
    if (mx_pg_take (conn, "COPY raw_message", NULL, &failed) && rc == 0) {
        if (error)
            *error = failed;
        else
            free (failed);
        return -1;
    }
    free (failed);
    return rc;
}

int
mx_rawstore_sweep (PGconn *conn, int64_t before_ms, int limit, int *deleted, char **error)
{
    assert (conn && deleted && limit >= 1);
    *deleted = 0;
    if (mx_pg_begin (conn, error))
        return -1;
    char before [48], limit_text [MX_PG_INT64_BUFSIZE];
    s_timestamp (before_ms, before, sizeof before);
    const char *params [] = { before, mx_pg_int64_text (limit, limit_text) };
    PGresult *res = NULL;
    //  The BRIN index on kept_at is read by a bitmap scan only, which the
    //  sessions otherwise plan without (mx_pg). Rows the processor holds
    //  are left for next time.
    if (mx_pg_exec (conn, "SET LOCAL enable_bitmapscan = on", 0, NULL, NULL, error)
    ||  mx_pg_exec (conn, "DELETE FROM raw_message WHERE msg_id IN (SELECT msg_id FROM raw_message"
                          " WHERE kept_at < $1::timestamptz LIMIT $2::integer FOR UPDATE SKIP LOCKED)",
                    2, params, &res, error)) {
        char *ignored = NULL;
        mx_pg_rollback (conn, &ignored);
        free (ignored);
        return -1;
    }
    *deleted = atoi (PQcmdTuples (res));
    PQclear (res);
    if (mx_pg_commit (conn, error)) {
        *deleted = 0;
        return -1;
    }
    return 0;
}
