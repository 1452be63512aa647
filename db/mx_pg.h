/*  mx_pg - small libpq helpers shared by every actor.

    Every connection is bounded: connect_timeout and TCP keepalives are added
    unless the conninfo sets them, and each session gets a statement_timeout
    and TimeZone=UTC, so a hung server becomes an error, never a stuck actor.

    Functions return 0 on success and -1 on failure. On failure, if error is
    not NULL, *error is set (overwritten, not freed) to a malloc'd one-line
    reason, with the SQLSTATE when the server sent one; the caller frees it.
*/
#ifndef MX_PG_H_INCLUDED
#define MX_PG_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>
#include <libpq-fe.h>

//  Defaults added unless the conninfo sets the keyword itself.
#define MX_PG_CONNECT_TIMEOUT_S     "5"
#define MX_PG_KEEPALIVES_IDLE_S     "10"
#define MX_PG_KEEPALIVES_INTERVAL_S "5"
#define MX_PG_KEEPALIVES_COUNT      "3"

//  Room for any int64 as decimal text, for query parameters.
#define MX_PG_INT64_BUFSIZE 24

//  Connect with conninfo (key=value or URI form). application_name, if not
//  NULL, names the connection in pg_stat_activity and overrides the one in
//  conninfo. statement_timeout_ms >= 0; 0 means no statement timeout.
//  Returns an open connection, or NULL with *error set.
PGconn *
    mx_pg_connect (const char *conninfo, const char *application_name,
                   int64_t statement_timeout_ms, char **error);

//  Close conn and NULL the pointer; safe on NULL and twice.
void
    mx_pg_disconnect (PGconn **conn_p);

//  Run one statement with nparams text parameters ($1..$n; a NULL entry is
//  SQL NULL). Succeeds on PGRES_COMMAND_OK or PGRES_TUPLES_OK. On success,
//  if res_out is not NULL, *res_out takes the result (caller PQclear's it);
//  otherwise the result is cleared. On failure *res_out is NULL.
int
    mx_pg_exec (PGconn *conn, const char *sql, int nparams,
                const char *const *values, PGresult **res_out, char **error);

//  Runs one statement as mx_pg_exec does, each row handed to row (res,
//  row, arg) as it arrives, in a result freed after the call (single-row
//  mode): a large result is never held whole beside what the caller
//  builds from it. 0, or -1 with *error (rows before the failure were
//  handed over).
typedef void (mx_pg_row_fn) (const PGresult *res, int row, void *arg);
int
    mx_pg_exec_rows (PGconn *conn, const char *sql, int nparams,
                     const char *const *values, mx_pg_row_fn *row, void *arg, char **error);

//  mx_pg_exec and mx_pg_exec_rows for a statement run again and again on
//  the same connection: prepared (named) at its first run on the
//  connection, by name after that, so it is parsed and planned once. sql
//  must live as long as the process (a literal): it is remembered.
int
    mx_pg_exec_named (PGconn *conn, const char *sql, int nparams,
                      const char *const *values, PGresult **res_out, char **error);
int
    mx_pg_exec_rows_named (PGconn *conn, const char *sql, int nparams,
                           const char *const *values, mx_pg_row_fn *row, void *arg, char **error);

//  Check a result obtained directly from libpq (async, pipeline mode).
//  Does not clear res. A NULL res counts as a failure of conn.
int
    mx_pg_check (PGconn *conn, const PGresult *res, const char *sql, char **error);

int
    mx_pg_begin (PGconn *conn, char **error);
//  BEGIN a transaction whose COMMIT does not wait for the WAL to reach the
//  disk (synchronous_commit off for it alone). Only for a transaction that
//  (a) a crash of the PostgreSQL server may lose without harm, because what
//  it records is recorded again or does not matter, and (b) nothing carries
//  out of PostgreSQL before a later durable commit of the FIFO path, whose
//  flush takes all earlier WAL with it. A kill of msgxd loses no committed
//  transaction either way: the server has it. docs/reliability.md lists
//  the transactions that use it.
int
    mx_pg_begin_unflushed (PGconn *conn, char **error);
//  Fails also when the server answers a COMMIT with a rollback (the
//  transaction had already failed).
//  The result of a statement sent with PQsend*: takes the first result,
//  reads the connection up to the end of that statement's results and
//  checks it as mx_pg_exec does. On success *res_out (if given) gets the
//  result for the caller to PQclear.
int
    mx_pg_take (PGconn *conn, const char *sql, PGresult **res_out, char **error);

int
    mx_pg_commit (PGconn *conn, char **error);
//  The same COMMIT in two halves, for work done while the server commits:
//  after a successful send, the connection runs nothing until the result
//  has been taken.
int
    mx_pg_commit_send (PGconn *conn, char **error);
int
    mx_pg_commit_result (PGconn *conn, char **error);
//  One statement of a pipeline. res, if not NULL, takes its result when
//  the statement succeeded, also when a later one failed (the caller
//  PQclear's it); NULL otherwise. named: run by name as mx_pg_exec_named
//  does (sql then a literal), prepared before the pipeline the first time.
typedef struct {
    const char *sql;
    int nparams;
    const char *const *values;
    PGresult **res;
    bool named;
} mx_pg_stmt_t;

//  Reads the results left up to the Sync's own (a lost connection ends
//  with NULL) and leaves pipeline mode. 0, or -1 with *error.
int
    mx_pg_pipeline_leave (PGconn *conn, char **error);

//  Runs the statements in one round trip (libpq pipeline mode: all sent,
//  one Sync, then every result read). After the first failure the server
//  skips the rest. A COMMIT answered with a rollback is a failure. *done
//  (if given) gets how many statements succeeded, a prefix: what a failure
//  left behind (e.g. whether a COMMIT in the list went through). Returns
//  0, or -1 with *error for the first failure; an explicit transaction the
//  list left open and failed is the caller's to roll back.
int
    mx_pg_pipeline (PGconn *conn, mx_pg_stmt_t *stmts, size_t count, size_t *done, char **error);
//  The same in two halves, for work done while the server runs them:
//  after a successful send the connection runs nothing until the results
//  have been taken (stmts must stay valid in between). A failed send has
//  left pipeline mode already; its result half must not be called.
int
    mx_pg_pipeline_send (PGconn *conn, mx_pg_stmt_t *stmts, size_t count, char **error);
int
    mx_pg_pipeline_result (PGconn *conn, mx_pg_stmt_t *stmts, size_t count, size_t *done, char **error);

//  Rolls back the open transaction; harmless when none is open.
int
    mx_pg_rollback (PGconn *conn, char **error);

//  Integer value of a cell; SQL NULL reads as 0 (check PQgetisnull when it
//  matters). The cell must be an integer column of our own query.
int64_t
    mx_pg_get_int64 (const PGresult *res, int row, int col);

//  Text value of a cell, or NULL for SQL NULL. Owned by res.
const char *
    mx_pg_get_text (const PGresult *res, int row, int col);

//  The five-character SQLSTATE of a failed result, or "" if there is none
//  (success, or a client-side failure such as a lost connection).
const char *
    mx_pg_sqlstate (const PGresult *res);

//  True when conn is gone (never opened, lost, reset): reconnect rather than
//  blame the statement.
bool
    mx_pg_is_connection_error (const PGconn *conn);

//  Format value as decimal text in buf; returns buf.
const char *
    mx_pg_int64_text (int64_t value, char buf[MX_PG_INT64_BUFSIZE]);

#endif
