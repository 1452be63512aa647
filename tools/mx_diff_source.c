/*  mx_diff_source - see mx_diff_source.h.  */
#include "mx_diff_source.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "mx_config.h"
#include "mx_pg.h"
#include "mx_text.h"

static void
s_set_error (char **error, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    if (vasprintf (error, format, args) < 0)
        *error = NULL;
    va_end (args);
}

//  ---------------------------------------------------------------------
//  PostgreSQL, both sides: rows one at a time (single-row mode).

//  A row handler returns 0 to go on, -1 to stop (its reason kept in its
//  context): the statement is then cancelled, not read to its end.
typedef int (s_row_fn) (void *context, const PGresult *row);

static int
s_pg_stream (PGconn *conn, const char *sql, int nparams, const char *const *params,
             s_row_fn *row_fn, void *context, char **error)
{
    if (!PQsendQueryParams (conn, sql, nparams, NULL, params, NULL, NULL, 0)
    ||  !PQsetSingleRowMode (conn)) {
        s_set_error (error, "cannot send a query: %s", PQerrorMessage (conn));
        return -1;
    }
    int rc = 0;
    bool stopped = false;
    PGresult *res;
    while ((res = PQgetResult (conn))) {
        ExecStatusType status = PQresultStatus (res);
        if (status == PGRES_SINGLE_TUPLE) {
            if (!stopped && row_fn (context, res)) {
                stopped = true;
                char reason [256];
                PGcancel *cancel = PQgetCancel (conn);
                if (cancel) {
                    PQcancel (cancel, reason, sizeof reason);
                    PQfreeCancel (cancel);
                }
            }
        }
        else if (status != PGRES_TUPLES_OK && rc == 0 && !stopped) {
            mx_pg_check (conn, res, sql, error);
            rc = -1;
        }
        PQclear (res);
    }
    return rc;
}

static bool
s_loopback (const char *host)
{
    return strncmp (host, "127.", 4) == 0 || strcmp (host, "::1") == 0 || strcmp (host, "localhost") == 0;
}

//  hosts as libpq takes them (comma-separated; a path or none is a Unix
//  socket): does one of them go over the network?
static bool
s_remote (const char *hosts)
{
    if (!hosts || !*hosts)
        return false;
    char *copy = strdup (hosts), *save = NULL;
    bool remote = false;
    for (char *host = strtok_r (copy, ",", &save); host && !remote; host = strtok_r (NULL, ",", &save))
        remote = *host != '/' && *host != '@' && !s_loopback (host);
    free (copy);
    return remote;
}

//  A server reached over the network must be verified, unless allowed.
static int
s_pg_tls_check (const char *conninfo, bool allow_unverified, const char *what, char **error)
{
    if (allow_unverified)
        return 0;
    char *parse_error = NULL;
    PQconninfoOption *options = PQconninfoParse (conninfo, &parse_error);
    PQfreemem (parse_error);
    if (!options)
        return 0;                       //  the connection says what is wrong
    const char *host = getenv ("PGHOST"), *hostaddr = getenv ("PGHOSTADDR");
    for (PQconninfoOption *option = options; option->keyword; option++)
        if (option->val && *option->val && strcmp (option->keyword, "host") == 0)
            host = option->val;
        else
        if (option->val && *option->val && strcmp (option->keyword, "hostaddr") == 0)
            hostaddr = option->val;
    bool remote = s_remote (hostaddr && *hostaddr ? hostaddr : host);
    PQconninfoFree (options);
    char *mode = remote ? mx_config_pg_sslmode (conninfo) : NULL;
    int rc = 0;
    if (mode && strcmp (mode, "verify-ca") && strcmp (mode, "verify-full")) {
        s_set_error (error, "%s: sslmode %s does not verify the server: use sslmode=verify-full (or verify-ca)"
                     " with sslrootcert, or --allow-unverified for a network you trust", what, mode);
        rc = -1;
    }
    free (mode);
    return rc;
}

//  One snapshot for every statement, and nothing written by mistake.
static PGconn *
s_pg_open (const char *conninfo, int timeout_s, bool allow_unverified, const char *what, char **error)
{
    if (s_pg_tls_check (conninfo, allow_unverified, what, error))
        return NULL;
    char *reason = NULL;
    PGconn *conn = mx_pg_connect (conninfo, "msgx-diff", (int64_t) timeout_s * 1000, &reason);
    if (conn && mx_pg_exec (conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL, &reason))
        mx_pg_disconnect (&conn);
    if (!conn) {
        s_set_error (error, "%s: %s", what, reason ? reason : "cannot connect");
        free (reason);
    }
    return conn;
}

//  msgxd's value of a column as text: times as epoch ms, made canonical
//  when read.
static void
s_msgx_expr (mx_text_t *sql, const char *alias, const mx_diff_field_t *field)
{
    char expr [200];
    if (field->type == MX_DIFF_TIME)
        snprintf (expr, sizeof expr, ", (extract (epoch FROM %s.%s) * 1000)::bigint::text",
                  alias, field->msgx_column);
    else
        snprintf (expr, sizeof expr, ", %s.%s::text", alias, field->msgx_column);
    mx_text_puts (sql, expr);
}

static const char *
s_msgx_value (const mx_diff_field_t *field, const char *text, char *buf)
{
    if (!text || field->type != MX_DIFF_TIME)
        return text;
    return mx_diff_format_time (strtoll (text, NULL, 10), buf);
}

typedef struct {
    const mx_diff_map_t *map;
    mx_diff_t *diff;
    size_t field;                       //  set rows: which field
    int rc;
    char *error;
} s_msgx_t;

static int
s_msgx_flight (void *context, const PGresult *row)
{
    s_msgx_t *self = context;
    const mx_diff_map_t *map = self->map;
    const char *keys [map->key_count + 1];
    const char *values [map->field_count + 1];
    char times [map->key_count + map->field_count + 1][MX_DIFF_TIME_BUFSIZE];
    int column = 1;
    for (size_t i = 0; i < map->key_count; i++)
        keys [i] = s_msgx_value (&map->keys [i], mx_pg_get_text (row, 0, column++), times [i]);
    for (size_t i = 0; i < map->field_count; i++) {
        const mx_diff_field_t *field = &map->fields [i];
        values [i] = NULL;
        if (strcmp (field->table, "flight_schd") == 0)
            values [i] = s_msgx_value (field, mx_pg_get_text (row, 0, column++),
                                       times [map->key_count + i]);
    }
    if (mx_diff_add_msgx (self->diff, mx_pg_get_int64 (row, 0, 0), keys, values, &self->error))
        self->rc = -1;
    return self->rc;
}

static int
s_msgx_set_row (void *context, const PGresult *row)
{
    s_msgx_t *self = context;
    const mx_diff_field_t *field = &self->map->fields [self->field];
    char buf [MX_DIFF_TIME_BUFSIZE];
    mx_diff_set_msgx (self->diff, mx_pg_get_int64 (row, 0, 0), self->field,
                      s_msgx_value (field, mx_pg_get_text (row, 0, 1), buf), field->record == 0);
    return 0;
}

//  The window on flight_schd as alias f; $1 (day) or $1, $2 (FLIDs).
static int
s_msgx_window (mx_text_t *sql, const mx_diff_window_t *window, const char **params,
               char flids [2][MX_PG_INT64_BUFSIZE])
{
    mx_text_puts (sql, " WHERE f.lifecycle = 'ACTIVE'");
    if (window->day) {
        mx_text_puts (sql, " AND f.operation_day = $1::date");
        params [0] = window->day;
        return 1;
    }
    mx_text_puts (sql, " AND f.flid BETWEEN $1::bigint AND $2::bigint");
    params [0] = mx_pg_int64_text (window->flid_from, flids [0]);
    params [1] = mx_pg_int64_text (window->flid_to, flids [1]);
    return 2;
}

static int
s_msgx_sets (PGconn *conn, const mx_diff_window_t *window, s_msgx_t *load, char **error)
{
    const mx_diff_map_t *map = load->map;
    for (size_t i = 0; i < map->field_count; i++) {
        const mx_diff_field_t *field = &map->fields [i];
        if (strcmp (field->table, "flight_schd") == 0)
            continue;
        mx_text_t sql = { 0 };
        mx_text_puts (&sql, "SELECT s.flid");
        s_msgx_expr (&sql, "s", field);
        mx_text_puts (&sql, " FROM ");
        mx_text_puts (&sql, field->table);
        mx_text_puts (&sql, " s JOIN flight_schd f ON f.flid = s.flid");
        const char *params [4];
        char flids [2][MX_PG_INT64_BUFSIZE], record [MX_PG_INT64_BUFSIZE], place [64];
        int nparams = s_msgx_window (&sql, window, params, flids);
        if (field->set_kind) {
            params [nparams++] = field->set_kind;
            snprintf (place, sizeof place, " AND s.kind = $%d::text", nparams);
            mx_text_puts (&sql, place);
        }
        if (field->record) {
            params [nparams++] = mx_pg_int64_text (field->record, record);
            snprintf (place, sizeof place, " AND s.%s = $%d::int", field->set_key, nparams);
            mx_text_puts (&sql, place);
        }
        snprintf (place, sizeof place, " ORDER BY s.flid, s.%s", field->set_key);
        mx_text_puts (&sql, place);
        load->field = i;
        int rc = s_pg_stream (conn, sql.data, nparams, params, s_msgx_set_row, load, error);
        free (sql.data);
        if (rc)
            return -1;
    }
    return 0;
}

int
mx_diff_source_msgx (const char *conninfo, int timeout_s, bool allow_unverified,
                     const mx_diff_map_t *map, const mx_diff_window_t *window, mx_diff_t *diff,
                     char **error)
{
    PGconn *conn = s_pg_open (conninfo, timeout_s, allow_unverified, "msgxd's PostgreSQL", error);
    if (!conn)
        return -1;
    mx_text_t sql = { 0 };
    mx_text_puts (&sql, "SELECT f.flid");
    for (size_t i = 0; i < map->key_count; i++)
        s_msgx_expr (&sql, "f", &map->keys [i]);
    for (size_t i = 0; i < map->field_count; i++)
        if (strcmp (map->fields [i].table, "flight_schd") == 0)
            s_msgx_expr (&sql, "f", &map->fields [i]);
    mx_text_puts (&sql, " FROM flight_schd f");
    const char *params [2];
    char flids [2][MX_PG_INT64_BUFSIZE];
    int nparams = s_msgx_window (&sql, window, params, flids);
    mx_text_puts (&sql, " ORDER BY f.flid");
    s_msgx_t load = { .map = map, .diff = diff };
    char *reason = NULL;
    int rc = s_pg_stream (conn, sql.data, nparams, params, s_msgx_flight, &load, &reason);
    free (sql.data);
    if (rc == 0 && load.rc) {
        reason = load.error;
        rc = -1;
    }
    else
        free (load.error);
    if (rc == 0)
        rc = s_msgx_sets (conn, window, &load, &reason);
    if (rc) {
        s_set_error (error, "msgxd's PostgreSQL: %s", reason ? reason : "cannot read the flights");
        free (reason);
    }
    mx_pg_disconnect (&conn);
    return rc;
}

//  ---------------------------------------------------------------------
//  The legacy side

//  SELECT key..., field... FROM table WHERE <window>, each name quoted by
//  quote (MariaDB: backquotes; PostgreSQL: none, names are unquoted
//  identifiers and fold as they do in SQL), ? or $n placeholders.
static char *
s_legacy_sql (const mx_diff_map_t *map, const mx_diff_window_t *window, bool mysql, char **error)
{
    const char *quote = mysql ? "`" : "";
    const char *cast = mysql ? "" : "::text";
    mx_text_t sql = { 0 };
    mx_text_puts (&sql, "SELECT ");
    for (size_t i = 0; i < map->key_count + map->field_count; i++) {
        const mx_diff_field_t *field = i < map->key_count ? &map->keys [i] : &map->fields [i - map->key_count];
        char column [200];
        snprintf (column, sizeof column, "%s%s%s%s%s", i ? ", " : "", quote, field->column, quote, cast);
        mx_text_puts (&sql, column);
    }
    mx_text_puts (&sql, " FROM ");
    //  schema.table: each part quoted
    const char *dot = strchr (map->table, '.');
    char table [300];
    if (dot)
        snprintf (table, sizeof table, "%s%.*s%s.%s%s%s", quote, (int) (dot - map->table), map->table,
                  quote, quote, dot + 1, quote);
    else
        snprintf (table, sizeof table, "%s%s%s", quote, map->table, quote);
    mx_text_puts (&sql, table);
    char where [300];
    if (window->day) {
        if (!map->day_column) {
            s_set_error (error, "--day needs the mapping's \"day\" column (the legacy operation day); "
                         "or compare a FLID range with --flid");
            free (sql.data);
            return NULL;
        }
        snprintf (where, sizeof where, " WHERE %s%s%s = %s", quote, map->day_column, quote,
                  mysql ? "?" : "$1");
    }
    else {
        if (!map->flid_key) {
            s_set_error (error, "--flid needs a mapping whose key is FLID alone; compare by --day");
            free (sql.data);
            return NULL;
        }
        snprintf (where, sizeof where, " WHERE %s%s%s BETWEEN %s", quote, map->keys [0].column, quote,
                  mysql ? "? AND ?" : "$1 AND $2");
    }
    mx_text_puts (&sql, where);
    //  In key order, so the examples are the same from run to run.
    for (size_t i = 0; i < map->key_count; i++) {
        char column [200];
        snprintf (column, sizeof column, "%s%s%s%s", i ? ", " : " ORDER BY ", quote, map->keys [i].column, quote);
        mx_text_puts (&sql, column);
    }
    return sql.data;
}

typedef struct {
    const mx_diff_map_t *map;
    mx_diff_t *diff;
} s_legacy_t;

static int
s_legacy_pg_row (void *context, const PGresult *row)
{
    s_legacy_t *self = context;
    const mx_diff_map_t *map = self->map;
    const char *keys [map->key_count + 1];
    const char *values [map->field_count + 1];
    for (size_t i = 0; i < map->key_count; i++)
        keys [i] = mx_pg_get_text (row, 0, (int) i);
    for (size_t i = 0; i < map->field_count; i++)
        values [i] = mx_pg_get_text (row, 0, (int) (map->key_count + i));
    mx_diff_add_legacy (self->diff, keys, values);
    return 0;
}

static int
s_legacy_pg (const mx_diff_legacy_t *legacy, const mx_diff_map_t *map,
             const mx_diff_window_t *window, mx_diff_t *diff, char **error)
{
    char *sql = s_legacy_sql (map, window, false, error);
    if (!sql)
        return -1;
    PGconn *conn = s_pg_open (legacy->uri, legacy->timeout_s, legacy->allow_unverified,
                              "the legacy PostgreSQL", error);
    if (!conn) {
        free (sql);
        return -1;
    }
    const char *params [2];
    char flids [2][MX_PG_INT64_BUFSIZE];
    int nparams = 1;
    if (window->day)
        params [0] = window->day;
    else {
        params [0] = mx_pg_int64_text (window->flid_from, flids [0]);
        params [1] = mx_pg_int64_text (window->flid_to, flids [1]);
        nparams = 2;
    }
    s_legacy_t context = { map, diff };
    char *reason = NULL;
    int rc = s_pg_stream (conn, sql, nparams, params, s_legacy_pg_row, &context, &reason);
    if (rc) {
        s_set_error (error, "the legacy PostgreSQL: %s", reason ? reason : "cannot read the table");
        free (reason);
    }
    free (sql);
    mx_pg_disconnect (&conn);
    return rc;
}

//  mysql://[user@]host[:port]/database or mysql://[user@]/database?socket=PATH
typedef struct {
    char user [512];
    char host [512];
    unsigned int port;
    char database [512];
    char socket [512];
} s_mysql_uri_t;

static int
s_mysql_uri (const char *uri, s_mysql_uri_t *out, char **error)
{
    memset (out, 0, sizeof *out);
    const char *rest = strstr (uri, "://") + 3;
    const char *slash = strchr (rest, '/');
    if (!slash) {
        s_set_error (error, "the legacy URI names no database (mysql://[USER@]HOST[:PORT]/DATABASE)");
        return -1;
    }
    char authority [400];
    if (strlen (rest) >= sizeof authority) {
        s_set_error (error, "the legacy URI is too long");
        return -1;
    }
    snprintf (authority, sizeof authority, "%.*s", (int) (slash - rest), rest);
    char *at = strrchr (authority, '@');
    char *hostport = authority;
    if (at) {
        *at = '\0';
        if (strchr (authority, ':')) {
            s_set_error (error, "the legacy URI carries a password: put it in a file (--legacy-password-file)");
            return -1;
        }
        snprintf (out->user, sizeof out->user, "%s", authority);
        hostport = at + 1;
    }
    char *colon = strrchr (hostport, ':');
    if (colon) {
        *colon = '\0';
        char *end = NULL;
        long port = strtol (colon + 1, &end, 10);
        if (*end || port < 1 || port > 65535) {
            s_set_error (error, "the legacy URI has a bad port '%s'", colon + 1);
            return -1;
        }
        out->port = (unsigned int) port;
    }
    snprintf (out->host, sizeof out->host, "%s", *hostport ? hostport : "127.0.0.1");
    const char *query = strchr (slash + 1, '?');
    size_t length = query ? (size_t) (query - slash - 1) : strlen (slash + 1);
    snprintf (out->database, sizeof out->database, "%.*s", (int) length, slash + 1);
    if (query) {
        if (strncmp (query + 1, "socket=", 7)) {
            s_set_error (error, "the legacy URI knows one option, socket=PATH (TLS: --legacy-ssl-*)");
            return -1;
        }
        snprintf (out->socket, sizeof out->socket, "%s", query + 8);
    }
    if (!*out->database) {
        s_set_error (error, "the legacy URI names no database (mysql://[USER@]HOST[:PORT]/DATABASE)");
        return -1;
    }
    return 0;
}

//  The password file's first line.
static int
s_read_secret (const char *path, char *secret, size_t size, char **error)
{
    FILE *file = fopen (path, "r");
    if (!file) {
        s_set_error (error, "cannot read the password file %s: %s", path, strerror (errno));
        return -1;
    }
    if (!fgets (secret, (int) size, file))
        secret [0] = '\0';
    fclose (file);
    secret [strcspn (secret, "\r\n")] = '\0';
    return 0;
}

static MYSQL *
s_mysql_open (const mx_diff_legacy_t *legacy, char **error)
{
    s_mysql_uri_t uri;
    if (s_mysql_uri (legacy->uri, &uri, error))
        return NULL;
    char password [512] = "";
    if (legacy->password_file && s_read_secret (legacy->password_file, password, sizeof password, error))
        return NULL;
    //  Verified TLS unless the server is on this host.
    const char *mode = legacy->ssl_mode ? legacy->ssl_mode
                     : (*uri.socket || s_loopback (uri.host)) ? "disabled" : "verify-full";
    bool remote = !*uri.socket && !s_loopback (uri.host);
    if (remote && strcmp (mode, "verify-full") && !legacy->allow_unverified) {
        s_set_error (error, "the legacy store at %s: ssl-mode %s does not verify the server: use verify-full"
                     " with --legacy-ssl-ca, or --allow-unverified for a network you trust", uri.host, mode);
        return NULL;
    }
    MYSQL *conn = mysql_init (NULL);
    if (!conn) {
        s_set_error (error, "cannot connect to the legacy store: out of memory");
        return NULL;
    }
    unsigned int timeout = (unsigned int) legacy->timeout_s;
    unsigned int protocol = *uri.socket ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_TCP;
    unsigned int no_local_infile = 0;
    mysql_options (conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options (conn, MYSQL_OPT_READ_TIMEOUT, &timeout);
    mysql_options (conn, MYSQL_OPT_WRITE_TIMEOUT, &timeout);
    mysql_options (conn, MYSQL_OPT_PROTOCOL, &protocol);
    mysql_options (conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_options (conn, MYSQL_OPT_LOCAL_INFILE, &no_local_infile);
    if (strcmp (mode, "disabled") != 0) {
        my_bool on = 1, verify = strcmp (mode, "verify-full") == 0;
        mysql_options (conn, MYSQL_OPT_SSL_ENFORCE, &on);
        mysql_options (conn, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
        if (legacy->ssl_ca)
            mysql_options (conn, MYSQL_OPT_SSL_CA, legacy->ssl_ca);
        if (legacy->ssl_cert)
            mysql_options (conn, MYSQL_OPT_SSL_CERT, legacy->ssl_cert);
        if (legacy->ssl_key)
            mysql_options (conn, MYSQL_OPT_SSL_KEY, legacy->ssl_key);
    }
    if (!mysql_real_connect (conn, *uri.socket ? "localhost" : uri.host, *uri.user ? uri.user : NULL,
                             *password ? password : NULL, uri.database, uri.port,
                             *uri.socket ? uri.socket : NULL, 0)) {
        s_set_error (error, "cannot connect to the legacy store at %s:%u (database %s, user %s, ssl-mode %s): %s (error %u)",
                     *uri.socket ? uri.socket : uri.host, uri.port ? uri.port : 3306, uri.database,
                     *uri.user ? uri.user : "(default)", mode, mysql_error (conn), mysql_errno (conn));
        mysql_close (conn);
        conn = NULL;
    }
    memset (password, 0, sizeof password);
    return conn;
}

//  A statement with one bound value (MariaDB prepares SET with a
//  placeholder, so the value never becomes SQL text).
static int
s_mysql_set (MYSQL *conn, const char *sql, long long value)
{
    MYSQL_STMT *stmt = mysql_stmt_init (conn);
    if (!stmt)
        return -1;
    MYSQL_BIND param;
    memset (&param, 0, sizeof param);
    param.buffer_type = MYSQL_TYPE_LONGLONG;
    param.buffer = &value;
    int rc = mysql_stmt_prepare (stmt, sql, strlen (sql)) || mysql_stmt_bind_param (stmt, &param)
          || mysql_stmt_execute (stmt) ? -1 : 0;
    mysql_stmt_close (stmt);
    return rc;
}

//  The statement timeout (MariaDB's max_statement_time in seconds, else
//  MySQL's max_execution_time in ms), then a read-only snapshot.
static int
s_mysql_session (MYSQL *conn, int timeout_s, char **error)
{
    if (s_mysql_set (conn, "SET SESSION max_statement_time = ?", timeout_s)
    &&  s_mysql_set (conn, "SET SESSION max_execution_time = ?", (long long) timeout_s * 1000)) {
        s_set_error (error, "the legacy store: cannot set a statement timeout: %s", mysql_error (conn));
        return -1;
    }
    if (mysql_query (conn, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")) {
        s_set_error (error, "the legacy store: cannot start a read-only transaction: %s (error %u)",
                     mysql_error (conn), mysql_errno (conn));
        return -1;
    }
    return 0;
}

#define S_CELL 256

typedef struct {
    MYSQL_BIND *binds;
    char (*cells) [S_CELL];
    unsigned long *lengths;
    my_bool *nulls;
    my_bool *errors;
    char **large;                       //  a value longer than a cell, fetched again
} s_mysql_row_t;

static int
s_mysql_fetch_rows (MYSQL_STMT *stmt, size_t columns, const mx_diff_map_t *map, mx_diff_t *diff,
                    char **error)
{
    s_mysql_row_t row = {
        calloc (columns, sizeof (MYSQL_BIND)), calloc (columns, S_CELL), calloc (columns, sizeof (unsigned long)),
        calloc (columns, sizeof (my_bool)), calloc (columns, sizeof (my_bool)), calloc (columns, sizeof (char *))
    };
    for (size_t i = 0; i < columns; i++) {
        row.binds [i].buffer_type = MYSQL_TYPE_STRING;
        row.binds [i].buffer = row.cells [i];
        row.binds [i].buffer_length = S_CELL;
        row.binds [i].length = &row.lengths [i];
        row.binds [i].is_null = &row.nulls [i];
        row.binds [i].error = &row.errors [i];
    }
    int rc = mysql_stmt_bind_result (stmt, row.binds) ? -1 : 0;
    const char *values [columns + 1];
    while (rc == 0) {
        int fetched = mysql_stmt_fetch (stmt);
        if (fetched == MYSQL_NO_DATA)
            break;
        if (fetched == 1) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < columns && rc == 0; i++) {
            free (row.large [i]);
            row.large [i] = NULL;
            values [i] = row.nulls [i] ? NULL : row.cells [i];
            if (!row.nulls [i] && row.lengths [i] >= S_CELL) {
                MYSQL_BIND again;
                memset (&again, 0, sizeof again);
                row.large [i] = calloc (1, row.lengths [i] + 1);
                again.buffer_type = MYSQL_TYPE_STRING;
                again.buffer = row.large [i];
                again.buffer_length = row.lengths [i] + 1;
                if (!row.large [i] || mysql_stmt_fetch_column (stmt, &again, (unsigned int) i, 0))
                    rc = -1;
                values [i] = row.large [i];
            }
            else if (!row.nulls [i])
                row.cells [i][row.lengths [i]] = '\0';
        }
        if (rc == 0)
            mx_diff_add_legacy (diff, values, values + map->key_count);
    }
    if (rc)
        s_set_error (error, "the legacy store: cannot read the rows: %s (error %u)", mysql_stmt_error (stmt),
                     mysql_stmt_errno (stmt));
    for (size_t i = 0; i < columns; i++)
        free (row.large [i]);
    free (row.binds);
    free (row.cells);
    free (row.lengths);
    free (row.nulls);
    free (row.errors);
    free (row.large);
    return rc;
}

static int
s_legacy_mysql (const mx_diff_legacy_t *legacy, const mx_diff_map_t *map,
                const mx_diff_window_t *window, mx_diff_t *diff, char **error)
{
    char *sql = s_legacy_sql (map, window, true, error);
    if (!sql)
        return -1;
    MYSQL *conn = s_mysql_open (legacy, error);
    if (!conn || s_mysql_session (conn, legacy->timeout_s, error)) {
        if (conn)
            mysql_close (conn);
        free (sql);
        return -1;
    }
    MYSQL_STMT *stmt = mysql_stmt_init (conn);
    MYSQL_BIND params [2];
    memset (params, 0, sizeof params);
    unsigned long day_length = window->day ? (unsigned long) strlen (window->day) : 0;
    long long flids [2] = { window->flid_from, window->flid_to };
    if (window->day) {
        params [0].buffer_type = MYSQL_TYPE_STRING;
        params [0].buffer = (void *) window->day;
        params [0].buffer_length = day_length;
        params [0].length = &day_length;
    }
    else
        for (int i = 0; i < 2; i++) {
            params [i].buffer_type = MYSQL_TYPE_LONGLONG;
            params [i].buffer = &flids [i];
        }
    int rc = 0;
    //  No mysql_stmt_store_result: rows come from the server as fetched.
    if (!stmt || mysql_stmt_prepare (stmt, sql, strlen (sql)) || mysql_stmt_bind_param (stmt, params)
    ||  mysql_stmt_execute (stmt)) {
        s_set_error (error, "the legacy store: %s (error %u) in: %s", stmt ? mysql_stmt_error (stmt) : "out of memory",
                     stmt ? mysql_stmt_errno (stmt) : 0, sql);
        rc = -1;
    }
    else
        rc = s_mysql_fetch_rows (stmt, map->key_count + map->field_count, map, diff, error);
    if (stmt)
        mysql_stmt_close (stmt);
    mysql_close (conn);
    free (sql);
    return rc;
}

int
mx_diff_source_legacy (const mx_diff_legacy_t *legacy, const mx_diff_map_t *map,
                       const mx_diff_window_t *window, mx_diff_t *diff, char **error)
{
    const char *uri = legacy->uri;
    if (strncmp (uri, "mysql://", 8) == 0 || strncmp (uri, "mariadb://", 10) == 0)
        return s_legacy_mysql (legacy, map, window, diff, error);
    if (strncmp (uri, "postgresql://", 13) == 0 || strncmp (uri, "postgres://", 11) == 0)
        return s_legacy_pg (legacy, map, window, diff, error);
    s_set_error (error, "the legacy URI must start with mysql://, mariadb://, postgresql:// or postgres://");
    return -1;
}
