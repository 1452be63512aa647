/*  mx_pg - small libpq helpers shared by every actor.  */

#include "mx_pg.h"
#include "mx_log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Longest SQL excerpt quoted in an error line.
#define S_SQL_EXCERPT 60

//  Turn every run of control characters and spaces into one space and trim
//  both ends: libpq messages span lines, our error lines must not.
static void
s_one_line (char *text)
{
    char *out = text;
    bool space = false;
    for (const char *in = text; *in; in++) {
        unsigned char c = (unsigned char) *in;
        if (c == ' ' || c < 0x20 || c == 0x7f)
            space = out != text;
        else {
            if (space)
                *out++ = ' ';
            space = false;
            *out++ = (char) c;
        }
    }
    *out = '\0';
}

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
    int rc = vasprintf (&text, fmt, args);
    va_end (args);
    if (rc < 0)
        text = strdup ("out of memory formatting an error");
    if (text)
        s_one_line (text);
    *error = text;
}

//  First characters of sql on one line, for error lines.
static void
s_sql_excerpt (const char *sql, char *buf, size_t size)
{
    assert (size > 4);
    snprintf (buf, size, "%s", sql ? sql : "");
    s_one_line (buf);
    if (strlen (buf) > S_SQL_EXCERPT && size > S_SQL_EXCERPT + 4)
        strcpy (buf + S_SQL_EXCERPT, "...");
}

static const char *
s_field (const PGresult *res, int code)
{
    const char *value = res ? PQresultErrorField (res, code) : NULL;
    return value ? value : "";
}

//  Server notices and warnings go to our log: libpq's default printer would
//  write plain text into the JSON-lines stream on stderr.
static void
s_notice_receiver (void *arg, const PGresult *res)
{
    (void) arg;
    const char *severity = s_field (res, PG_DIAG_SEVERITY_NONLOCALIZED);
    mx_log_level_t level = MX_LOG_DEBUG;
    if (strcmp (severity, "WARNING") == 0)
        level = MX_LOG_WARN;
    else
    if (strcmp (severity, "NOTICE") == 0 || strcmp (severity, "INFO") == 0)
        level = MX_LOG_INFO;
    json_t *fields = json_pack ("{s:s}", "sqlstate", mx_pg_sqlstate (res));
    mx_log_emit (level, "pg", fields, "PostgreSQL %s: %s",
                 *severity ? severity : "notice",
                 s_field (res, PG_DIAG_MESSAGE_PRIMARY));
}

PGconn *
mx_pg_connect (const char *conninfo, const char *application_name,
               int64_t statement_timeout_ms, char **error)
{
    assert (conninfo);
    assert (statement_timeout_ms >= 0);

    //  Validate up front so a typo gets its own message, not a connect error.
    char *parse_error = NULL;
    PQconninfoOption *options = PQconninfoParse (conninfo, &parse_error);
    if (!options) {
        s_set_error (error, "invalid PostgreSQL conninfo: %s",
                     parse_error ? parse_error : "out of memory");
        PQfreemem (parse_error);
        return NULL;
    }
    PQconninfoFree (options);

    //  Entries before the expanded dbname are defaults the conninfo may
    //  override; entries after it override the conninfo (libpq rule).
    const char *keywords [8];
    const char *values [8];
    int n = 0;
    keywords [n] = "connect_timeout";     values [n++] = MX_PG_CONNECT_TIMEOUT_S;
    keywords [n] = "keepalives";          values [n++] = "1";
    keywords [n] = "keepalives_idle";     values [n++] = MX_PG_KEEPALIVES_IDLE_S;
    keywords [n] = "keepalives_interval"; values [n++] = MX_PG_KEEPALIVES_INTERVAL_S;
    keywords [n] = "keepalives_count";    values [n++] = MX_PG_KEEPALIVES_COUNT;
    keywords [n] = "dbname";              values [n++] = conninfo;
    if (application_name) {
        keywords [n] = "application_name";
        values [n++] = application_name;
    }
    keywords [n] = NULL;
    values [n] = NULL;

    PGconn *conn = PQconnectdbParams (keywords, values, 1);
    if (!conn) {
        s_set_error (error, "cannot connect to PostgreSQL: out of memory");
        return NULL;
    }
    if (PQstatus (conn) != CONNECTION_OK) {
        const char *db = PQdb (conn);
        s_set_error (error, "cannot connect to PostgreSQL database \"%s\": %s",
                     db ? db : "", PQerrorMessage (conn));
        PQfinish (conn);
        return NULL;
    }
    PQsetNoticeReceiver (conn, s_notice_receiver, NULL);

    char timeout [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (statement_timeout_ms, timeout) };
    char *set_error = NULL;
    //  Bitmap scans off: every statement of ours reads by key or walks an
    //  index in order. The queue tables' statistics are always stale (the
    //  backlog grows and drains between two analyses), and an estimate of
    //  a few rows makes the planner turn an ordered "next row" probe into a
    //  bitmap scan of the whole backlog plus a sort, once per step (seen:
    //  2.8 s instead of 20 ms for one schd-aggregator take). JIT off: no
    //  statement of ours runs long enough to repay compiling it, yet a
    //  batch's estimates (a subplan per row of a 2000-row array) pass
    //  jit_above_cost and each such statement paid 10-20 ms to compile.
    if (mx_pg_exec (conn,
                    "SELECT set_config ('statement_timeout', $1, false),"
                    "       set_config ('TimeZone', 'UTC', false),"
                    "       set_config ('enable_bitmapscan', 'off', false),"
                    "       set_config ('jit', 'off', false)",
                    1, params, NULL, &set_error)) {
        s_set_error (error, "cannot set up PostgreSQL session: %s",
                     set_error ? set_error : "unknown error");
        free (set_error);
        PQfinish (conn);
        return NULL;
    }
    return conn;
}

void
mx_pg_disconnect (PGconn **conn_p)
{
    assert (conn_p);
    if (*conn_p) {
        PQfinish (*conn_p);
        *conn_p = NULL;
    }
}

int
mx_pg_check (PGconn *conn, const PGresult *res, const char *sql, char **error)
{
    ExecStatusType status = res ? PQresultStatus (res) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
        return 0;
    if (!error)
        return -1;

    char excerpt [S_SQL_EXCERPT + 8];
    s_sql_excerpt (sql, excerpt, sizeof excerpt);
    const char *sqlstate = mx_pg_sqlstate (res);
    if (*sqlstate) {
        const char *detail = s_field (res, PG_DIAG_MESSAGE_DETAIL);
        s_set_error (error, "SQL \"%s\" failed: %s %s%s%s%s", excerpt, sqlstate,
                     s_field (res, PG_DIAG_MESSAGE_PRIMARY),
                     *detail ? " (" : "", detail, *detail ? ")" : "");
    }
    else {
        //  No server error: the client side failed (lost connection, OOM).
        const char *message = res ? PQresultErrorMessage (res) : "";
        if (!*message && conn)
            message = PQerrorMessage (conn);
        if (!*message)
            message = PQresStatus (status);
        s_set_error (error, "SQL \"%s\" failed: %s", excerpt, message);
    }
    return -1;
}

//  Hands a checked result to the caller (or frees it); a failed one is
//  freed and reported.
static int
s_checked (PGconn *conn, PGresult *res, const char *sql, PGresult **res_out, char **error)
{
    if (mx_pg_check (conn, res, sql, error)) {
        PQclear (res);
        return -1;
    }
    if (res_out)
        *res_out = res;
    else
        PQclear (res);
    return 0;
}

int
mx_pg_exec (PGconn *conn, const char *sql, int nparams,
            const char *const *values, PGresult **res_out, char **error)
{
    assert (conn);
    assert (sql);
    assert (nparams >= 0);
    assert (nparams == 0 || values);
    if (res_out)
        *res_out = NULL;

    return s_checked (conn, PQexecParams (conn, sql, nparams, NULL, values, NULL, NULL, 0), sql, res_out, error);
}

//  Statements run by name: a handful of texts each actor runs again and
//  again (the dispatcher's take and SENT mark) cost more to parse and plan
//  than to run. Prepared once per connection, remembered per thread (a
//  connection is used by one thread) and forgotten when the connection is
//  another. Bounded: past the limit, texts run unnamed.
#define S_NAMED_MAX 32

typedef struct {
    PGconn *conn;
    int backend_pid;
    size_t count;
    const char *sql [S_NAMED_MAX];
} s_named_t;

static __thread s_named_t s_named;

//  Into name the name of sql on conn, prepared first when new. 1 named,
//  0 past the bound (run it unnamed), -1 the prepare failed (*error).
static int
s_named_for (PGconn *conn, const char *sql, int nparams, char *name, size_t size, char **error)
{
    int pid = PQbackendPID (conn);
    if (s_named.conn != conn || s_named.backend_pid != pid) {
        s_named.conn = conn;
        s_named.backend_pid = pid;
        s_named.count = 0;
    }
    for (size_t i = 0; i < s_named.count; i++)
        if (s_named.sql [i] == sql || strcmp (s_named.sql [i], sql) == 0) {
            snprintf (name, size, "mxp%zu", i);
            return 1;
        }
    if (s_named.count == S_NAMED_MAX)
        return 0;
    snprintf (name, size, "mxp%zu", s_named.count);
    if (s_checked (conn, PQprepare (conn, name, sql, nparams, NULL), sql, NULL, error))
        return -1;
    s_named.sql [s_named.count++] = sql;
    return 1;
}

static int
s_exec_rows (PGconn *conn, const char *name, const char *sql, int nparams,
             const char *const *values, mx_pg_row_fn *row, void *arg, char **error)
{
    assert (conn && sql && row);
    assert (nparams >= 0);
    assert (nparams == 0 || values);
    int sent = name ? PQsendQueryPrepared (conn, name, nparams, values, NULL, NULL, 0)
                    : PQsendQueryParams (conn, sql, nparams, NULL, values, NULL, NULL, 0);
    if (sent != 1)
        return s_checked (conn, NULL, sql, NULL, error);
    //  Refused only when it comes too late; the rows then come in one
    //  result, handed over the same way.
    PQsetSingleRowMode (conn);
    int rc = 0;
    PGresult *res;
    while ((res = PQgetResult (conn)) != NULL) {
        ExecStatusType status = PQresultStatus (res);
        if (rc == 0 && (status == PGRES_SINGLE_TUPLE || status == PGRES_TUPLES_OK))
            for (int r = 0; r < PQntuples (res); r++)
                row (res, r, arg);
        else
        if (rc == 0)
            rc = mx_pg_check (conn, res, sql, error);
        PQclear (res);
    }
    return rc;
}

int
mx_pg_exec_rows (PGconn *conn, const char *sql, int nparams,
                 const char *const *values, mx_pg_row_fn *row, void *arg, char **error)
{
    return s_exec_rows (conn, NULL, sql, nparams, values, row, arg, error);
}

int
mx_pg_exec_rows_named (PGconn *conn, const char *sql, int nparams,
                       const char *const *values, mx_pg_row_fn *row, void *arg, char **error)
{
    assert (conn && sql);
    char name [24];
    int named = s_named_for (conn, sql, nparams, name, sizeof name, error);
    if (named < 0)
        return -1;
    return s_exec_rows (conn, named ? name : NULL, sql, nparams, values, row, arg, error);
}

int
mx_pg_exec_named (PGconn *conn, const char *sql, int nparams,
                  const char *const *values, PGresult **res_out, char **error)
{
    assert (conn && sql);
    assert (nparams >= 0);
    assert (nparams == 0 || values);
    if (res_out)
        *res_out = NULL;
    char name [24];
    int named = s_named_for (conn, sql, nparams, name, sizeof name, error);
    if (named < 0)
        return -1;
    if (!named)
        return mx_pg_exec (conn, sql, nparams, values, res_out, error);
    return s_checked (conn, PQexecPrepared (conn, name, nparams, values, NULL, NULL, 0), sql, res_out, error);
}

int
mx_pg_begin (PGconn *conn, char **error)
{
    return mx_pg_exec (conn, "BEGIN", 0, NULL, NULL, error);
}

int
mx_pg_begin_unflushed (PGconn *conn, char **error)
{
    //  Inside an open transaction BEGIN only warns, and the SET LOCAL
    //  would reach the caller's transaction: refused.
    if (PQtransactionStatus (conn) != PQTRANS_IDLE) {
        s_set_error (error, "cannot begin an unflushed transaction: a transaction is already open");
        return -1;
    }
    //  One simple query, one round trip: SET LOCAL lasts until the COMMIT.
    return s_checked (conn, PQexec (conn, "BEGIN; SET LOCAL synchronous_commit = off"),
                      "BEGIN; SET LOCAL synchronous_commit = off", NULL, error);
}

int
mx_pg_commit_send (PGconn *conn, char **error)
{
    if (PQsendQueryParams (conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) != 1) {
        s_set_error (error, "cannot send COMMIT: %s", PQerrorMessage (conn));
        return -1;
    }
    return 0;
}

int
mx_pg_take (PGconn *conn, const char *sql, PGresult **res_out, char **error)
{
    if (res_out)
        *res_out = NULL;
    PGresult *res = PQgetResult (conn), *more;
    while ((more = PQgetResult (conn)) != NULL)
        PQclear (more);
    return s_checked (conn, res, sql, res_out, error);
}

int
mx_pg_commit_result (PGconn *conn, char **error)
{
    PGresult *res = NULL;
    if (mx_pg_take (conn, "COMMIT", &res, error))
        return -1;
    //  COMMIT of a failed transaction "succeeds" as a rollback; for the
    //  caller nothing was committed.
    bool rolled_back = strcmp (PQcmdStatus (res), "ROLLBACK") == 0;
    PQclear (res);
    if (rolled_back) {
        s_set_error (error, "COMMIT failed: the transaction had failed and was rolled back");
        return -1;
    }
    return 0;
}

int
mx_pg_commit (PGconn *conn, char **error)
{
    return mx_pg_commit_send (conn, error) ? -1 : mx_pg_commit_result (conn, error);
}

int
mx_pg_pipeline_leave (PGconn *conn, char **error)
{
    PGresult *res;
    while ((res = PQgetResult (conn)) != NULL) {
        ExecStatusType status = PQresultStatus (res);
        PQclear (res);
        if (status == PGRES_PIPELINE_SYNC)
            break;
    }
    if (PQexitPipelineMode (conn) != 1) {
        s_set_error (error, "cannot leave pipeline mode: %s", PQerrorMessage (conn));
        return -1;
    }
    return 0;
}

int
mx_pg_pipeline_send (PGconn *conn, mx_pg_stmt_t *stmts, size_t count, char **error)
{
    assert (conn && (stmts || count == 0));
    for (size_t i = 0; i < count; i++)
        if (stmts [i].res)
            *stmts [i].res = NULL;
    //  Names are known (or prepared) before: PQprepare is not for pipeline mode.
    char (*names) [24] = (char (*) [24]) calloc (count + 1, sizeof *names);
    assert (names);
    for (size_t i = 0; i < count; i++)
        if (stmts [i].named
        &&  s_named_for (conn, stmts [i].sql, stmts [i].nparams, names [i], sizeof names [i], error) < 0) {
            free (names);
            return -1;
        }
    if (PQenterPipelineMode (conn) != 1) {
        s_set_error (error, "cannot enter pipeline mode: %s", PQerrorMessage (conn));
        free (names);
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        assert (stmts [i].sql && stmts [i].nparams >= 0 && (stmts [i].nparams == 0 || stmts [i].values));
        int sent = names [i][0]
                 ? PQsendQueryPrepared (conn, names [i], stmts [i].nparams, stmts [i].values, NULL, NULL, 0)
                 : PQsendQueryParams (conn, stmts [i].sql, stmts [i].nparams, NULL, stmts [i].values,
                                      NULL, NULL, 0);
        if (sent != 1) {
            free (names);
            char excerpt [S_SQL_EXCERPT + 8];
            s_sql_excerpt (stmts [i].sql, excerpt, sizeof excerpt);
            s_set_error (error, "cannot send \"%s\": %s", excerpt, PQerrorMessage (conn));
            //  What went is ended by a Sync and read away, so the
            //  connection leaves pipeline mode usable (or is lost).
            if (PQpipelineSync (conn) == 1)
                for (size_t k = 0; k < i; k++) {
                    PGresult *res;
                    while ((res = PQgetResult (conn)) != NULL)
                        PQclear (res);
                }
            char *ignored = NULL;
            mx_pg_pipeline_leave (conn, &ignored);
            free (ignored);
            return -1;
        }
    }
    free (names);
    if (PQpipelineSync (conn) != 1) {
        s_set_error (error, "cannot send a pipeline: %s", PQerrorMessage (conn));
        char *ignored = NULL;
        mx_pg_pipeline_leave (conn, &ignored);
        free (ignored);
        return -1;
    }
    return 0;
}

int
mx_pg_pipeline_result (PGconn *conn, mx_pg_stmt_t *stmts, size_t count, size_t *done, char **error)
{
    assert (conn && (stmts || count == 0));
    int rc = 0;
    size_t ok = 0;
    for (size_t i = 0; i < count; i++) {
        PGresult *res = PQgetResult (conn);
        if (!res) {
            //  Lost: nothing more comes.
            if (rc == 0)
                rc = s_checked (conn, NULL, stmts [i].sql, NULL, error);
            break;
        }
        PGresult *more;
        while ((more = PQgetResult (conn)) != NULL)
            PQclear (more);
        if (rc) {
            PQclear (res);      //  skipped by the server (PIPELINE_ABORTED)
            continue;
        }
        if (mx_pg_check (conn, res, stmts [i].sql, error))
            rc = -1;
        else
        if (strcmp (stmts [i].sql, "COMMIT") == 0 && strcmp (PQcmdStatus (res), "ROLLBACK") == 0) {
            s_set_error (error, "COMMIT failed: the transaction had failed and was rolled back");
            rc = -1;
        }
        if (rc == 0 && stmts [i].res) {
            *stmts [i].res = res;
            res = NULL;
        }
        PQclear (res);
        if (rc == 0)
            ok++;
    }
    char *left = NULL;
    if (mx_pg_pipeline_leave (conn, &left) && rc == 0) {
        rc = -1;
        if (error)
            *error = left;
        else
            free (left);
    }
    else
        free (left);
    if (done)
        *done = ok;
    return rc;
}

int
mx_pg_pipeline (PGconn *conn, mx_pg_stmt_t *stmts, size_t count, size_t *done, char **error)
{
    if (done)
        *done = 0;
    if (mx_pg_pipeline_send (conn, stmts, count, error))
        return -1;
    return mx_pg_pipeline_result (conn, stmts, count, done, error);
}

int
mx_pg_rollback (PGconn *conn, char **error)
{
    assert (conn);
    if (PQtransactionStatus (conn) == PQTRANS_IDLE)
        return 0;
    return mx_pg_exec (conn, "ROLLBACK", 0, NULL, NULL, error);
}

int64_t
mx_pg_get_int64 (const PGresult *res, int row, int col)
{
    assert (res);
    assert (row >= 0 && row < PQntuples (res));
    assert (col >= 0 && col < PQnfields (res));
    if (PQgetisnull (res, row, col))
        return 0;
    const char *text = PQgetvalue (res, row, col);
    char *end = NULL;
    errno = 0;
    long long value = strtoll (text, &end, 10);
    //  Our own query chose this column: anything but an integer is our bug.
    assert (errno == 0 && end != text && *end == '\0');
    return (int64_t) value;
}

const char *
mx_pg_get_text (const PGresult *res, int row, int col)
{
    assert (res);
    assert (row >= 0 && row < PQntuples (res));
    assert (col >= 0 && col < PQnfields (res));
    if (PQgetisnull (res, row, col))
        return NULL;
    return PQgetvalue (res, row, col);
}

const char *
mx_pg_sqlstate (const PGresult *res)
{
    return s_field (res, PG_DIAG_SQLSTATE);
}

bool
mx_pg_is_connection_error (const PGconn *conn)
{
    return conn == NULL || PQstatus (conn) != CONNECTION_OK;
}

const char *
mx_pg_int64_text (int64_t value, char buf [MX_PG_INT64_BUFSIZE])
{
    assert (buf);
    snprintf (buf, MX_PG_INT64_BUFSIZE, "%" PRId64, value);
    return buf;
}
