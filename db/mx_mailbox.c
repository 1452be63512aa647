/*  mx_mailbox - see mx_mailbox.h.  */
#include "mx_mailbox.h"
#include "mx_log.h"

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#define S_LOG "mailbox"

//  Epoch milliseconds of a DATETIME column as the session time zone reads
//  it; NULL stays NULL. FLOOR keeps milliseconds should the column have a
//  fractional part, CAST makes the type BIGINT whatever the column.
#define S_EPOCH_MS(col) "CAST(FLOOR(UNIX_TIMESTAMP(" col ") * 1000) AS SIGNED)"

//  Marks per statement: the ids go as this many placeholders, a short
//  chunk repeating its first id (IN ignores the repeats).
#define S_MARK_CHUNK 64
#define S_MARK_PLACES8 "?,?,?,?,?,?,?,?"
#define S_MARK_PLACES \
    S_MARK_PLACES8 "," S_MARK_PLACES8 "," S_MARK_PLACES8 "," S_MARK_PLACES8 "," \
    S_MARK_PLACES8 "," S_MARK_PLACES8 "," S_MARK_PLACES8 "," S_MARK_PLACES8

//  Prepared once per connection, in this order.
typedef enum {
    S_SCAN,
    S_READ,
    S_INSERT,
    S_MARK_LOCK,
    S_MARK,
    S_BOUNDS,
    S_EXISTING,
    S_READ_RANGE,
    S_OUT_INSERT,
    S_OUT_FIND,
    S_STMT_COUNT
} s_stmt_id_t;

static const char *s_sql [S_STMT_COUNT] = {
    [S_SCAN] =
        "SELECT CMINMSGS_ID, " S_EPOCH_MS ("CMINMSGS_DATE_RECEIVED")
        " FROM CMINMSGS WHERE CMINMSGS_ID > ? ORDER BY CMINMSGS_ID LIMIT ?",
    //  The text only travels when it fits: an oversized row is refused by
    //  its length without loading it.
    [S_READ] =
        "SELECT LENGTH(CMINMSGS_CLOB_MSG),"
        " CASE WHEN LENGTH(CMINMSGS_CLOB_MSG) <= ? THEN CMINMSGS_CLOB_MSG END"
        " FROM CMINMSGS WHERE CMINMSGS_ID = ?",
    [S_INSERT] =
        "INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS)"
        " VALUES (?, FROM_UNIXTIME(?), 'VALID')",
    //  WIRE §1: written once, only where no mark exists; never overwritten.
    //  A chunk of marks is one transaction: its rows read (which are there,
    //  which are marked), then the unmarked ones marked. No FOR UPDATE:
    //  MySQL wants more than the column UPDATE grant for it; a row marked
    //  by someone else in between shows in the count (see s_mark_chunk).
    [S_MARK_LOCK] =
        "SELECT CMINMSGS_ID, CMINMSGS_DATE_PROCESSED IS NULL FROM CMINMSGS"
        " WHERE CMINMSGS_ID IN (" S_MARK_PLACES ")",
    [S_MARK] =
        "UPDATE CMINMSGS SET CMINMSGS_STATUS = ?, CMINMSGS_DATE_PROCESSED = FROM_UNIXTIME(?)"
        " WHERE CMINMSGS_ID IN (" S_MARK_PLACES ") AND CMINMSGS_DATE_PROCESSED IS NULL",
    [S_BOUNDS] =
        "SELECT COALESCE(MIN(CMINMSGS_ID), 0), COALESCE(MAX(CMINMSGS_ID), 0) FROM CMINMSGS",
    [S_EXISTING] =
        "SELECT CMINMSGS_ID FROM CMINMSGS WHERE CMINMSGS_ID BETWEEN ? AND ?"
        " ORDER BY CMINMSGS_ID LIMIT ?",
    //  The byte budget is applied by the server (the bytes of the rows
    //  before each one, in ID order): rows past it are never sent.
    [S_READ_RANGE] =
        "SELECT m.CMINMSGS_ID, LENGTH(m.CMINMSGS_CLOB_MSG),"
        " CASE WHEN LENGTH(m.CMINMSGS_CLOB_MSG) <= ? THEN m.CMINMSGS_CLOB_MSG END"
        " FROM (SELECT CMINMSGS_ID AS id, ROW_NUMBER() OVER (ORDER BY CMINMSGS_ID) AS n,"
        "        COALESCE(SUM(LENGTH(CMINMSGS_CLOB_MSG)) OVER (ORDER BY CMINMSGS_ID"
        "                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before_bytes"
        "       FROM CMINMSGS WHERE CMINMSGS_ID BETWEEN ? AND ?) w"
        " JOIN CMINMSGS m ON m.CMINMSGS_ID = w.id"
        " WHERE w.n = 1 OR w.before_bytes + LENGTH(m.CMINMSGS_CLOB_MSG) <= ?"
        " ORDER BY m.CMINMSGS_ID",
    //  WIRE §1: the flag columns are written 0.
    [S_OUT_INSERT] =
        "INSERT INTO COUTMSGS (COUTMSGS_CLOB_MSG, COUTMSGS_DATE_INSERTED, ROUTINGID,"
        " COUTMSGS_TRUEFALS_GROUP, COUTMSGS_NO_MESSAGES, COUTMSGS_GROUP_ORDER, COUTMSGS_GROUP_ID,"
        " COUTMSGS_FINAL_GROUP_IND, COUTMSGS_ACK_REQD, COUTMSGS_ACK_RESEND_TIMES,"
        " COUTMSGS_ACK_DATE_RECV, COUTMSGS_ENCRYPT, COUTMSGS_ERROR)"
        " VALUES (?, FROM_UNIXTIME(?), ?, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)",
    //  The SEQN marker is a bound value; LOCATE needs no LIKE escaping.
    [S_OUT_FIND] =
        "SELECT COUTMSGS_ID, " S_EPOCH_MS ("COUTMSGS_DATE_INSERTED") ", " S_EPOCH_MS ("COUTMSGS_DATE_SENT")
        " FROM COUTMSGS WHERE ROUTINGID = ? AND COUTMSGS_DATE_INSERTED >= FROM_UNIXTIME(?)"
        " AND LOCATE(?, COUTMSGS_CLOB_MSG) > 0 ORDER BY COUTMSGS_ID LIMIT 1",
};

static const char *s_stmt_names [S_STMT_COUNT] = {
    [S_SCAN] = "scan", [S_READ] = "read", [S_INSERT] = "insert", [S_MARK_LOCK] = "mark lookup",
    [S_MARK] = "mark", [S_BOUNDS] = "bounds", [S_EXISTING] = "existing",
    [S_READ_RANGE] = "range read", [S_OUT_INSERT] = "outbound insert",
    [S_OUT_FIND] = "outbound lookup",
};

struct _mx_mailbox_t {
    const mx_config_t *config;
    MYSQL *conn;                        //  NULL = not connected
    MYSQL_STMT *stmts [S_STMT_COUNT];   //  prepared lazily on conn
    unsigned int last_errno;            //  of the last failed call, 0 if none
    mx_mailbox_failure_t failure;       //  of the last call
};

static pthread_once_t s_library_once = PTHREAD_ONCE_INIT;

//  mysql_init initialises the library on first use, which is not safe when
//  two actor threads get there at the same time.
static void
s_library_init (void)
{
    mysql_library_init (0, NULL, NULL);
}

//  ---------------------------------------------------------------------
//  Errors

//  Control characters and runs of blanks become one space: error lines
//  must stay on one line.
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

static int
s_stmt_failed (mx_mailbox_t *self, MYSQL_STMT *stmt, s_stmt_id_t id, char **error)
{
    self->last_errno = mysql_stmt_errno (stmt);
    s_set_error (error, "mailbox %s failed: %s (error %u)", s_stmt_names [id],
                 mysql_stmt_error (stmt), self->last_errno);
    return -1;
}

//  Errors after which the connection is gone, not the statement wrong.
static bool
s_is_connection_lost (unsigned int code)
{
    return code == CR_SERVER_GONE_ERROR || code == CR_SERVER_LOST
        || code == CR_SERVER_LOST_EXTENDED || code == ER_CONNECTION_KILLED
        || code == ER_SERVER_SHUTDOWN;
}

//  ---------------------------------------------------------------------
//  Connection

static void
s_disconnect (mx_mailbox_t *self)
{
    for (int id = 0; id < S_STMT_COUNT; id++)
        if (self->stmts [id]) {
            mysql_stmt_close (self->stmts [id]);
            self->stmts [id] = NULL;
        }
    if (self->conn) {
        mysql_close (self->conn);
        self->conn = NULL;
    }
}

//  Where the mailbox is, for messages.
static void
s_where (const mx_config_t *config, char *buf, size_t size)
{
    if (*config->mailbox_shared_mysql_socket)
        snprintf (buf, size, "socket %s", config->mailbox_shared_mysql_socket);
    else
        snprintf (buf, size, "%s:%" PRId64, config->mailbox_shared_mysql_host,
                  config->mailbox_shared_mysql_port);
}

static void
s_bind_string (MYSQL_BIND *bind, const char *text, unsigned long *length)
{
    memset (bind, 0, sizeof *bind);
    bind->buffer_type = MYSQL_TYPE_STRING;
    bind->buffer = (void *) text;
    bind->buffer_length = *length;
    bind->length = length;
}

static void
s_bind_longlong (MYSQL_BIND *bind, long long *value, my_bool *is_null)
{
    memset (bind, 0, sizeof *bind);
    bind->buffer_type = MYSQL_TYPE_LONGLONG;
    bind->buffer = value;
    bind->is_null = is_null;
}

//  The session time zone is a bound value: MariaDB prepares SET with a
//  placeholder, so the configured text never becomes SQL.
static int
s_set_time_zone (mx_mailbox_t *self, char **error)
{
    const char *zone = self->config->mailbox_shared_mysql_time_zone;
    const char *sql = "SET time_zone = ?";
    MYSQL_STMT *stmt = mysql_stmt_init (self->conn);
    if (!stmt) {
        s_set_error (error, "cannot set the mailbox session time zone: out of memory");
        return -1;
    }
    MYSQL_BIND param;
    unsigned long length = (unsigned long) strlen (zone);
    s_bind_string (&param, zone, &length);
    int rc = 0;
    if (mysql_stmt_prepare (stmt, sql, strlen (sql))
    ||  mysql_stmt_bind_param (stmt, &param)
    ||  mysql_stmt_execute (stmt)) {
        self->last_errno = mysql_stmt_errno (stmt);
        s_set_error (error, "cannot set the mailbox session time zone '%s'"
                     " (mailbox.shared-mysql.time-zone): %s (error %u)",
                     zone, mysql_stmt_error (stmt), self->last_errno);
        rc = -1;
    }
    mysql_stmt_close (stmt);
    return rc;
}

//  TLS as mailbox.shared-mysql.ssl-mode says: required encrypts (and
//  refuses a server without TLS), verify-full also checks the server's
//  certificate against ssl-ca and its name against the host.
static void
s_tls_options (MYSQL *conn, const mx_config_t *config)
{
    const char *mode = config->mailbox_shared_mysql_ssl_mode;
    if (strcmp (mode, "disabled") == 0)
        return;
    my_bool on = 1;
    my_bool verify = strcmp (mode, "verify-full") == 0;
    mysql_options (conn, MYSQL_OPT_SSL_ENFORCE, &on);
    mysql_options (conn, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    if (*config->mailbox_shared_mysql_ssl_ca)
        mysql_options (conn, MYSQL_OPT_SSL_CA, config->mailbox_shared_mysql_ssl_ca);
    if (*config->mailbox_shared_mysql_ssl_cert)
        mysql_options (conn, MYSQL_OPT_SSL_CERT, config->mailbox_shared_mysql_ssl_cert);
    if (*config->mailbox_shared_mysql_ssl_key)
        mysql_options (conn, MYSQL_OPT_SSL_KEY, config->mailbox_shared_mysql_ssl_key);
}

static int
s_connect (mx_mailbox_t *self, char **error)
{
    if (self->conn)
        return 0;
    const mx_config_t *config = self->config;
    char where [300];
    s_where (config, where, sizeof where);

    MYSQL *conn = mysql_init (NULL);
    if (!conn) {
        s_set_error (error, "cannot connect to the mailbox at %s: out of memory", where);
        return -1;
    }
    //  Whole seconds, at least 1 (checked by mx_config_validate).
    unsigned int connect_s = (unsigned int) (config->mailbox_shared_mysql_connect_timeout / 1000);
    unsigned int read_s = (unsigned int) (config->mailbox_shared_mysql_read_timeout / 1000);
    unsigned int write_s = (unsigned int) (config->mailbox_shared_mysql_write_timeout / 1000);
    const char *socket = *config->mailbox_shared_mysql_socket
                       ? config->mailbox_shared_mysql_socket : NULL;
    unsigned int protocol = socket ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_TCP;
    my_bool off = 0;
    unsigned int no_local_infile = 0;
    mysql_options (conn, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_options (conn, MYSQL_OPT_READ_TIMEOUT, &read_s);
    mysql_options (conn, MYSQL_OPT_WRITE_TIMEOUT, &write_s);
    mysql_options (conn, MYSQL_OPT_PROTOCOL, &protocol);
    mysql_options (conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    //  We reconnect ourselves, knowing which statements may be repeated.
    mysql_options (conn, MYSQL_OPT_RECONNECT, &off);
    mysql_options (conn, MYSQL_OPT_LOCAL_INFILE, &no_local_infile);
    s_tls_options (conn, config);

    const char *user = config->mailbox_shared_mysql_user;
    const char *password = config->mailbox_shared_mysql_password;
    if (!mysql_real_connect (conn, socket ? "localhost" : config->mailbox_shared_mysql_host,
                             *user ? user : NULL, *password ? password : NULL,
                             config->mailbox_shared_mysql_database,
                             (unsigned int) config->mailbox_shared_mysql_port, socket, 0)) {
        self->last_errno = mysql_errno (conn);
        s_set_error (error, "cannot connect to the mailbox at %s (database %s, user %s, ssl-mode %s): %s (error %u)",
                     where, config->mailbox_shared_mysql_database, *user ? user : "(default)",
                     config->mailbox_shared_mysql_ssl_mode, mysql_error (conn), self->last_errno);
        mysql_close (conn);
        return -1;
    }
    self->conn = conn;
    if (s_set_time_zone (self, error)) {
        s_disconnect (self);
        return -1;
    }
    if (mysql_autocommit (conn, 1)) {
        self->last_errno = mysql_errno (conn);
        s_set_error (error, "cannot turn on autocommit on the mailbox connection: %s (error %u)",
                     mysql_error (conn), self->last_errno);
        s_disconnect (self);
        return -1;
    }
    return 0;
}

//  The prepared statement id on the current connection, or NULL with
//  *error set.
static MYSQL_STMT *
s_stmt (mx_mailbox_t *self, s_stmt_id_t id, char **error)
{
    assert (self->conn);
    if (self->stmts [id])
        return self->stmts [id];
    MYSQL_STMT *stmt = mysql_stmt_init (self->conn);
    if (!stmt) {
        self->last_errno = mysql_errno (self->conn);
        s_set_error (error, "mailbox %s failed: out of memory", s_stmt_names [id]);
        return NULL;
    }
    if (mysql_stmt_prepare (stmt, s_sql [id], strlen (s_sql [id]))) {
        s_stmt_failed (self, stmt, id, error);
        mysql_stmt_close (stmt);
        return NULL;
    }
    self->stmts [id] = stmt;
    return stmt;
}

//  Runs params through the statement; for a SELECT the result set is then
//  open and must be fetched and freed by the caller.
static MYSQL_STMT *
s_execute (mx_mailbox_t *self, s_stmt_id_t id, MYSQL_BIND *params, char **error)
{
    MYSQL_STMT *stmt = s_stmt (self, id, error);
    if (!stmt)
        return NULL;
    if ((params && mysql_stmt_bind_param (stmt, params)) || mysql_stmt_execute (stmt)) {
        s_stmt_failed (self, stmt, id, error);
        return NULL;
    }
    return stmt;
}

//  One operation against an open connection: >= 0 success, -1 failure
//  with *error and self->last_errno set.
typedef int (s_op_fn) (mx_mailbox_t *self, void *args, char **error);

typedef enum {
    S_RETRY_ONCE,           //  idempotent: may run again on a fresh connection
    S_PING_FIRST            //  not idempotent: check a reused connection before sending
} s_policy_t;

static int
s_run (mx_mailbox_t *self, s_op_fn *op, void *args, s_policy_t policy, char **error)
{
    for (int attempt = 0; ; attempt++) {
        bool reused = self->conn != NULL;
        self->last_errno = 0;
        self->failure = MX_MAILBOX_FAILURE_NONE;
        if (reused && policy == S_PING_FIRST && mysql_ping (self->conn)) {
            mx_log_emit (MX_LOG_INFO, S_LOG, NULL,
                         "connection lost (%s); reconnecting", mysql_error (self->conn));
            s_disconnect (self);
            reused = false;
        }
        if (s_connect (self, error)) {
            self->failure = MX_MAILBOX_FAILURE_CONNECT;
            return -1;
        }
        char *op_error = NULL;
        int rc = op (self, args, &op_error);
        if (rc >= 0)
            return rc;
        bool lost = s_is_connection_lost (self->last_errno);
        self->failure = lost ? MX_MAILBOX_FAILURE_LOST : MX_MAILBOX_FAILURE_QUERY;
        //  Whatever failed, the next call starts on a new connection.
        s_disconnect (self);
        if (policy == S_RETRY_ONCE && reused && lost && attempt == 0) {
            mx_log_emit (MX_LOG_INFO, S_LOG, NULL,
                         "connection lost (%s); retrying on a new connection",
                         op_error ? op_error : "unknown error");
            free (op_error);
            continue;
        }
        if (error)
            *error = op_error;
        else
            free (op_error);
        return -1;
    }
}

//  ---------------------------------------------------------------------
//  Operations

typedef struct {
    long long after_id;
    long long limit;
    mx_mailbox_row_t *rows;
    int count;
} s_scan_t;

static int
s_scan (mx_mailbox_t *self, void *args_, char **error)
{
    s_scan_t *args = (s_scan_t *) args_;
    args->count = 0;
    MYSQL_BIND params [2];
    s_bind_longlong (&params [0], &args->after_id, NULL);
    s_bind_longlong (&params [1], &args->limit, NULL);
    MYSQL_STMT *stmt = s_execute (self, S_SCAN, params, error);
    if (!stmt)
        return -1;

    long long id = 0, received = 0;
    my_bool received_null = 0;
    MYSQL_BIND result [2];
    s_bind_longlong (&result [0], &id, NULL);
    s_bind_longlong (&result [1], &received, &received_null);
    int rc = 0;
    if (mysql_stmt_bind_result (stmt, result))
        rc = s_stmt_failed (self, stmt, S_SCAN, error);
    while (rc == 0) {
        int fetched = mysql_stmt_fetch (stmt);
        if (fetched == MYSQL_NO_DATA)
            break;
        if (fetched != 0) {
            rc = s_stmt_failed (self, stmt, S_SCAN, error);
            break;
        }
        assert (args->count < args->limit);        //  LIMIT holds
        args->rows [args->count].id = id;
        args->rows [args->count].received_ms = received_null ? -1 : received;
        args->count++;
    }
    mysql_stmt_free_result (stmt);
    if (rc)
        args->count = 0;
    return rc;
}

int
mx_mailbox_scan (mx_mailbox_t *self, int64_t after_id, int limit,
                 mx_mailbox_row_t *rows, int *count, char **error)
{
    assert (self);
    assert (limit >= 1);
    assert (rows && count);
    s_scan_t args = { .after_id = after_id, .limit = limit, .rows = rows };
    int rc = s_run (self, s_scan, &args, S_RETRY_ONCE, error);
    *count = rc == 0 ? args.count : 0;
    return rc == 0 ? 0 : -1;
}

typedef struct {
    long long id;
    long long max_bytes;
    char *xml;
    size_t size;
    bool found;
} s_read_t;

static int
s_read (mx_mailbox_t *self, void *args_, char **error)
{
    s_read_t *args = (s_read_t *) args_;
    args->found = false;
    MYSQL_BIND params [2];
    s_bind_longlong (&params [0], &args->max_bytes, NULL);
    s_bind_longlong (&params [1], &args->id, NULL);
    MYSQL_STMT *stmt = s_execute (self, S_READ, params, error);
    if (!stmt)
        return -1;

    //  The text is bound without a buffer: the fetch reports its length,
    //  then mysql_stmt_fetch_column copies it into one of the right size.
    long long length = 0;
    unsigned long text_length = 0;
    my_bool length_null = 0, text_null = 0, text_error = 0;
    MYSQL_BIND result [2];
    s_bind_longlong (&result [0], &length, &length_null);
    memset (&result [1], 0, sizeof result [1]);
    result [1].buffer_type = MYSQL_TYPE_STRING;
    result [1].length = &text_length;
    result [1].is_null = &text_null;
    result [1].error = &text_error;
    int rc = 0;
    if (mysql_stmt_bind_result (stmt, result))
        rc = s_stmt_failed (self, stmt, S_READ, error);
    int fetched = rc ? 1 : mysql_stmt_fetch (stmt);
    if (rc == 0 && fetched != 0 && fetched != MYSQL_NO_DATA && fetched != MYSQL_DATA_TRUNCATED)
        rc = s_stmt_failed (self, stmt, S_READ, error);
    if (rc == 0 && fetched != MYSQL_NO_DATA) {
        args->found = true;
        args->size = (size_t) length;
        //  A NULL text (the upstream's schema may allow it) reads as empty.
        if (!text_null || length_null) {
            text_length = text_null ? 0 : text_length;
            args->xml = (char *) malloc ((size_t) text_length + 1);
            if (!args->xml) {
                s_set_error (error, "mailbox read of row %lld: out of memory for %lu bytes",
                             args->id, text_length);
                rc = -1;
            }
            else
            if (text_length > 0) {
                MYSQL_BIND column;
                memset (&column, 0, sizeof column);
                column.buffer_type = MYSQL_TYPE_STRING;
                column.buffer = args->xml;
                column.buffer_length = text_length;
                column.length = &text_length;
                if (mysql_stmt_fetch_column (stmt, &column, 1, 0))
                    rc = s_stmt_failed (self, stmt, S_READ, error);
            }
            if (rc == 0) {
                args->xml [text_length] = '\0';
                args->size = (size_t) text_length;
            }
        }
    }
    mysql_stmt_free_result (stmt);
    if (rc) {
        free (args->xml);
        args->xml = NULL;
        args->found = false;
    }
    return rc;
}

int
mx_mailbox_read (mx_mailbox_t *self, int64_t id, size_t max_bytes,
                 char **xml, size_t *size, char **error)
{
    assert (self);
    assert (xml && size);
    *xml = NULL;
    *size = 0;
    s_read_t args = {
        .id = id,
        .max_bytes = max_bytes > (size_t) LLONG_MAX ? LLONG_MAX : (long long) max_bytes
    };
    if (s_run (self, s_read, &args, S_RETRY_ONCE, error))
        return -1;
    if (!args.found)
        return 0;
    *xml = args.xml;
    *size = args.size;
    return 1;
}

typedef struct {
    long long from, to;
    long long max_bytes;
    long long budget;               //  bytes of text read at most (one row always)
    int64_t until;                  //  the first id not answered for
    mx_mailbox_text_t *rows;
    size_t count;
} s_read_range_t;

static void
s_read_range_reset (s_read_range_t *args)
{
    for (size_t i = 0; i < args->count; i++)
        free (args->rows [i].xml);
    free (args->rows);
    args->rows = NULL;
    args->count = 0;
}

static int
s_read_range (mx_mailbox_t *self, void *args_, char **error)
{
    s_read_range_t *args = (s_read_range_t *) args_;
    s_read_range_reset (args);
    MYSQL_BIND params [4];
    s_bind_longlong (&params [0], &args->max_bytes, NULL);
    s_bind_longlong (&params [1], &args->from, NULL);
    s_bind_longlong (&params [2], &args->to, NULL);
    s_bind_longlong (&params [3], &args->budget, NULL);
    MYSQL_STMT *stmt = s_execute (self, S_READ_RANGE, params, error);
    if (!stmt)
        return -1;
    long long id = 0, length = 0;
    unsigned long text_length = 0;
    my_bool id_null = 0, length_null = 0, text_null = 0, text_error = 0;
    MYSQL_BIND result [3];
    s_bind_longlong (&result [0], &id, &id_null);
    s_bind_longlong (&result [1], &length, &length_null);
    memset (&result [2], 0, sizeof result [2]);
    result [2].buffer_type = MYSQL_TYPE_STRING;
    result [2].length = &text_length;
    result [2].is_null = &text_null;
    result [2].error = &text_error;
    int rc = mysql_stmt_bind_result (stmt, result) ? s_stmt_failed (self, stmt, S_READ_RANGE, error) : 0;
    //  The rows array grows as rows come: a range may span a wide gap of
    //  IDs (released holes) holding few rows.
    size_t capacity = 0;
    while (rc == 0) {
        int fetched = mysql_stmt_fetch (stmt);
        if (fetched == MYSQL_NO_DATA)
            break;
        if (fetched != 0 && fetched != MYSQL_DATA_TRUNCATED) {
            rc = s_stmt_failed (self, stmt, S_READ_RANGE, error);
            break;
        }
        if (args->count == capacity) {
            capacity = capacity ? 2 * capacity : 256;
            mx_mailbox_text_t *grown = (mx_mailbox_text_t *) realloc (args->rows, capacity * sizeof (mx_mailbox_text_t));
            if (!grown) {
                s_set_error (error, "mailbox range read: out of memory for %zu rows", capacity);
                rc = -1;
                break;
            }
            args->rows = grown;
        }
        mx_mailbox_text_t *row = &args->rows [args->count++];
        memset (row, 0, sizeof *row);
        row->id = id;
        row->size = length_null ? 0 : (size_t) length;
        if (text_null && !length_null)
            continue;                   //  oversized: length only
        text_length = text_null ? 0 : text_length;
        row->xml = (char *) malloc ((size_t) text_length + 1);
        if (!row->xml) {
            s_set_error (error, "mailbox range read: out of memory for %lu bytes", text_length);
            rc = -1;
            break;
        }
        if (text_length > 0) {
            MYSQL_BIND column;
            memset (&column, 0, sizeof column);
            column.buffer_type = MYSQL_TYPE_STRING;
            column.buffer = row->xml;
            column.buffer_length = text_length;
            column.length = &text_length;
            if (mysql_stmt_fetch_column (stmt, &column, 2, 0)) {
                rc = s_stmt_failed (self, stmt, S_READ_RANGE, error);
                break;
            }
        }
        row->xml [text_length] = '\0';
        row->size = (size_t) text_length;
    }
    mysql_stmt_free_result (stmt);
    if (rc)
        s_read_range_reset (args);
    //  Rows the budget left out may follow the last one sent: the ids
    //  after it are answered for by a later read. None sent: the whole
    //  range is empty (the first row is always sent).
    args->until = args->count ? args->rows [args->count - 1].id + 1 : (int64_t) args->to + 1;
    return rc;
}

int
mx_mailbox_read_range (mx_mailbox_t *self, int64_t from, int64_t to, size_t max_bytes, size_t budget,
                       mx_mailbox_text_t **rows, size_t *count, int64_t *until, char **error)
{
    assert (self && rows && count);
    assert (from <= to);
    s_read_range_t args = {
        .from = from, .to = to,
        .max_bytes = max_bytes > (size_t) LLONG_MAX ? LLONG_MAX : (long long) max_bytes,
        .budget = budget > (size_t) LLONG_MAX ? LLONG_MAX : (long long) budget
    };
    int rc = s_run (self, s_read_range, &args, S_RETRY_ONCE, error);
    *rows = args.rows;
    *count = args.count;
    if (until)
        *until = args.until;
    return rc;
}

typedef struct {
    const char *xml;
    unsigned long size;
    long long received_s;
    int64_t id;
} s_insert_t;

static int
s_insert (mx_mailbox_t *self, void *args_, char **error)
{
    s_insert_t *args = (s_insert_t *) args_;
    MYSQL_BIND params [2];
    s_bind_string (&params [0], args->xml, &args->size);
    s_bind_longlong (&params [1], &args->received_s, NULL);
    MYSQL_STMT *stmt = s_execute (self, S_INSERT, params, error);
    if (!stmt)
        return -1;
    args->id = (int64_t) mysql_stmt_insert_id (stmt);
    if (args->id <= 0) {
        s_set_error (error, "mailbox insert: the server returned no CMINMSGS_ID");
        return -1;
    }
    return 0;
}

int
mx_mailbox_insert (mx_mailbox_t *self, const char *xml, size_t size,
                   int64_t received_ms, int64_t *id, char **error)
{
    assert (self);
    assert (xml && id);
    assert (received_ms >= 0);
    *id = 0;
    if (self->config->shadow) {
        s_set_error (error, "shadow mode: msgx.shadow = true forbids writing to the shared mailbox");
        return -1;
    }
    s_insert_t args = {
        .xml = xml, .size = (unsigned long) size, .received_s = received_ms / 1000
    };
    if (s_run (self, s_insert, &args, S_PING_FIRST, error))
        return -1;
    *id = args.id;
    return 0;
}

//  s_mark_chunk's answer when the chunk must be redone row by row.
#define S_MARK_RACED 1

typedef struct {
    const int64_t *ids;                     //  at most S_MARK_CHUNK
    size_t count;
    long long now_s;
    mx_mark_t *marks;                       //  count outcomes
} s_mark_args_t;

static int
s_query (mx_mailbox_t *self, const char *sql, const char *what, char **error)
{
    if (mysql_query (self->conn, sql) == 0)
        return 0;
    self->last_errno = mysql_errno (self->conn);
    s_set_error (error, "mailbox %s failed: %s (error %u)", what, mysql_error (self->conn), self->last_errno);
    return -1;
}

//  The chunk's ids as the statement's S_MARK_CHUNK values.
static void
s_bind_ids (MYSQL_BIND *params, long long *values, const int64_t *ids, size_t count)
{
    for (size_t i = 0; i < S_MARK_CHUNK; i++) {
        values [i] = (long long) ids [i < count ? i : 0];
        s_bind_longlong (&params [i], &values [i], NULL);
    }
}

//  Reads which ids of the chunk exist (present) and are unmarked.
static int
s_mark_lock (mx_mailbox_t *self, const s_mark_args_t *args, bool *present, bool *unmarked, char **error)
{
    MYSQL_BIND params [S_MARK_CHUNK];
    long long values [S_MARK_CHUNK];
    s_bind_ids (params, values, args->ids, args->count);
    MYSQL_STMT *stmt = s_execute (self, S_MARK_LOCK, params, error);
    if (!stmt)
        return -1;
    long long id = 0, open = 0;
    MYSQL_BIND result [2];
    s_bind_longlong (&result [0], &id, NULL);
    s_bind_longlong (&result [1], &open, NULL);
    int rc = mysql_stmt_bind_result (stmt, result) ? s_stmt_failed (self, stmt, S_MARK_LOCK, error) : 0;
    while (rc == 0) {
        int fetched = mysql_stmt_fetch (stmt);
        if (fetched == MYSQL_NO_DATA)
            break;
        if (fetched != 0 && fetched != MYSQL_DATA_TRUNCATED) {
            rc = s_stmt_failed (self, stmt, S_MARK_LOCK, error);
            break;
        }
        for (size_t i = 0; i < args->count; i++)
            if (args->ids [i] == (int64_t) id) {
                present [i] = true;
                unmarked [i] = open != 0;
            }
    }
    mysql_stmt_free_result (stmt);
    return rc;
}

static int
s_mark_chunk (mx_mailbox_t *self, void *args_, char **error)
{
    s_mark_args_t *args = (s_mark_args_t *) args_;
    assert (args->count > 0 && args->count <= S_MARK_CHUNK);
    bool present [S_MARK_CHUNK] = { false }, unmarked [S_MARK_CHUNK] = { false };
    if (s_query (self, "START TRANSACTION", "mark transaction", error))
        return -1;
    int rc = s_mark_lock (self, args, present, unmarked, error);
    //  The unmarked ones, marked: every one of them changes unless someone
    //  else marked it since the read.
    int64_t open_ids [S_MARK_CHUNK];
    size_t open_count = 0;
    for (size_t i = 0; i < args->count && rc == 0; i++) {
        bool seen = false;
        for (size_t k = 0; k < open_count; k++)
            seen |= open_ids [k] == args->ids [i];
        if (unmarked [i] && !seen)
            open_ids [open_count++] = args->ids [i];
    }
    if (rc == 0 && open_count > 0) {
        const char *value = self->config->mailbox_processed_value;
        unsigned long value_length = (unsigned long) strlen (value);
        MYSQL_BIND params [2 + S_MARK_CHUNK];
        long long values [S_MARK_CHUNK];
        s_bind_string (&params [0], value, &value_length);
        s_bind_longlong (&params [1], &args->now_s, NULL);
        s_bind_ids (params + 2, values, open_ids, open_count);
        MYSQL_STMT *stmt = s_execute (self, S_MARK, params, error);
        if (!stmt)
            rc = -1;
        else
        if (mysql_stmt_affected_rows (stmt) != (my_ulonglong) open_count) {
            //  Marked by someone else meanwhile: a single row is then
            //  marked already; a chunk cannot tell which, so it is undone
            //  and redone row by row (S_MARK_RACED).
            if (args->count > 1) {
                mysql_rollback (self->conn);
                return S_MARK_RACED;
            }
            unmarked [0] = false;
        }
    }
    if (rc == 0 && mysql_commit (self->conn)) {
        self->last_errno = mysql_errno (self->conn);
        s_set_error (error, "mailbox mark commit failed: %s (error %u)", mysql_error (self->conn),
                     self->last_errno);
        rc = -1;
    }
    if (rc) {
        //  The connection is dropped after a failure; this only helps a
        //  server that is still there let go of the locks sooner.
        mysql_rollback (self->conn);
        return -1;
    }
    for (size_t i = 0; i < args->count; i++)
        args->marks [i] = !present [i] ? MX_MARK_MISSING : unmarked [i] ? MX_MARK_WRITTEN : MX_MARK_ALREADY;
    return 0;
}

size_t
mx_mailbox_mark_many (mx_mailbox_t *self, const int64_t *ids, size_t count, int64_t now_ms,
                      mx_mark_t *marks, char **error)
{
    assert (self);
    assert ((ids && marks) || count == 0);
    assert (now_ms >= 0);
    for (size_t i = 0; i < count; i++)
        marks [i] = MX_MARK_ERROR;
    if (count == 0)
        return 0;
    if (self->config->shadow) {
        s_set_error (error, "shadow mode: msgx.shadow = true forbids writing the processed mark");
        return count;
    }
    for (size_t at = 0; at < count; at += S_MARK_CHUNK) {
        s_mark_args_t args = {
            .ids = ids + at, .count = count - at < S_MARK_CHUNK ? count - at : S_MARK_CHUNK,
            .now_s = now_ms / 1000, .marks = marks + at
        };
        //  A chunk that was committed before the connection went reads as
        //  ALREADY when it runs again.
        char *chunk_error = NULL;
        if (s_run (self, s_mark_chunk, &args, S_RETRY_ONCE, &chunk_error) == 0)
            continue;
        //  One row that cannot be marked must not hold back the others
        //  (nor a row marked by someone else the chunk's outcomes): the
        //  chunk again row by row, up to the first that fails.
        free (chunk_error);
        for (size_t i = 0; i < args.count; i++) {
            s_mark_args_t one = { .ids = args.ids + i, .count = 1, .now_s = args.now_s, .marks = args.marks + i };
            if (s_run (self, s_mark_chunk, &one, S_RETRY_ONCE, error))
                return at + i + 1;
        }
    }
    return count;
}

mx_mark_t
mx_mailbox_mark (mx_mailbox_t *self, int64_t id, int64_t now_ms, char **error)
{
    mx_mark_t mark = MX_MARK_ERROR;
    mx_mailbox_mark_many (self, &id, 1, now_ms, &mark, error);
    return mark;
}

typedef struct {
    long long min_id;
    long long max_id;
} s_bounds_t;

static int
s_bounds (mx_mailbox_t *self, void *args_, char **error)
{
    s_bounds_t *args = (s_bounds_t *) args_;
    MYSQL_STMT *stmt = s_execute (self, S_BOUNDS, NULL, error);
    if (!stmt)
        return -1;
    MYSQL_BIND result [2];
    s_bind_longlong (&result [0], &args->min_id, NULL);
    s_bind_longlong (&result [1], &args->max_id, NULL);
    int rc = 0;
    if (mysql_stmt_bind_result (stmt, result) || mysql_stmt_fetch (stmt) != 0)
        rc = s_stmt_failed (self, stmt, S_BOUNDS, error);
    mysql_stmt_free_result (stmt);
    return rc;
}

int
mx_mailbox_bounds (mx_mailbox_t *self, int64_t *min_id, int64_t *max_id, char **error)
{
    assert (self);
    assert (min_id && max_id);
    *min_id = *max_id = 0;
    s_bounds_t args = { 0 };
    if (s_run (self, s_bounds, &args, S_RETRY_ONCE, error))
        return -1;
    *min_id = args.min_id;
    *max_id = args.max_id;
    return 0;
}

typedef struct {
    long long from;
    long long to;
    long long max;
    int64_t *ids;
    int count;
} s_existing_t;

static int
s_existing (mx_mailbox_t *self, void *args_, char **error)
{
    s_existing_t *args = (s_existing_t *) args_;
    args->count = 0;
    MYSQL_BIND params [3];
    s_bind_longlong (&params [0], &args->from, NULL);
    s_bind_longlong (&params [1], &args->to, NULL);
    s_bind_longlong (&params [2], &args->max, NULL);
    MYSQL_STMT *stmt = s_execute (self, S_EXISTING, params, error);
    if (!stmt)
        return -1;
    long long id = 0;
    MYSQL_BIND result;
    s_bind_longlong (&result, &id, NULL);
    int rc = 0;
    if (mysql_stmt_bind_result (stmt, &result))
        rc = s_stmt_failed (self, stmt, S_EXISTING, error);
    while (rc == 0) {
        int fetched = mysql_stmt_fetch (stmt);
        if (fetched == MYSQL_NO_DATA)
            break;
        if (fetched != 0) {
            rc = s_stmt_failed (self, stmt, S_EXISTING, error);
            break;
        }
        assert (args->count < args->max);          //  LIMIT holds
        args->ids [args->count++] = id;
    }
    mysql_stmt_free_result (stmt);
    if (rc)
        args->count = 0;
    return rc;
}

int
mx_mailbox_existing (mx_mailbox_t *self, int64_t from, int64_t to,
                     int64_t *ids, int max, int *count, char **error)
{
    assert (self);
    assert (max >= 1);
    assert (ids && count);
    s_existing_t args = { .from = from, .to = to, .max = max, .ids = ids };
    int rc = s_run (self, s_existing, &args, S_RETRY_ONCE, error);
    *count = rc == 0 ? args.count : 0;
    return rc == 0 ? 0 : -1;
}

//  ---------------------------------------------------------------------
//  Outbound requests (COUTMSGS)

static const char *
s_routing (const mx_mailbox_t *self, mx_request_kind_t kind)
{
    return kind == MX_REQUEST_RQFD ? self->config->mailbox_outbound_routing_rqfd
                                   : self->config->mailbox_outbound_routing_rqrd;
}

typedef struct {
    const char *xml;
    unsigned long size;
    long long inserted_s;
    const char *routing;
    unsigned long routing_size;
    int64_t id;
} s_out_insert_t;

static int
s_out_insert (mx_mailbox_t *self, void *args_, char **error)
{
    s_out_insert_t *args = (s_out_insert_t *) args_;
    MYSQL_BIND params [3];
    s_bind_string (&params [0], args->xml, &args->size);
    s_bind_longlong (&params [1], &args->inserted_s, NULL);
    s_bind_string (&params [2], args->routing, &args->routing_size);
    MYSQL_STMT *stmt = s_execute (self, S_OUT_INSERT, params, error);
    if (!stmt)
        return -1;
    args->id = (int64_t) mysql_stmt_insert_id (stmt);
    if (args->id <= 0) {
        s_set_error (error, "mailbox outbound insert: the server returned no COUTMSGS_ID");
        return -1;
    }
    return 0;
}

int
mx_mailbox_outbound_insert (mx_mailbox_t *self, mx_request_kind_t kind, const char *xml, size_t size,
                            int64_t now_ms, int64_t *id, char **error)
{
    assert (self);
    assert (xml && id);
    assert (now_ms >= 0);
    *id = 0;
    if (self->config->shadow) {
        s_set_error (error, "shadow mode: msgx.shadow = true forbids writing requests into COUTMSGS");
        return -1;
    }
    const char *routing = s_routing (self, kind);
    s_out_insert_t args = {
        .xml = xml, .size = (unsigned long) size, .inserted_s = now_ms / 1000,
        .routing = routing, .routing_size = (unsigned long) strlen (routing)
    };
    //  Never repeated once sent: the row may exist; the caller finds it by
    //  its SEQN (mx_mailbox_outbound_find) before it ever inserts again.
    if (s_run (self, s_out_insert, &args, S_PING_FIRST, error))
        return -1;
    *id = args.id;
    return 0;
}

typedef struct {
    const char *routing;
    unsigned long routing_size;
    long long since_s;
    char marker [MX_REQUEST_MARKER_BUFSIZE];
    unsigned long marker_size;
    mx_outbound_row_t row;
    bool found;
} s_out_find_t;

static int
s_out_find (mx_mailbox_t *self, void *args_, char **error)
{
    s_out_find_t *args = (s_out_find_t *) args_;
    args->found = false;
    MYSQL_BIND params [3];
    s_bind_string (&params [0], args->routing, &args->routing_size);
    s_bind_longlong (&params [1], &args->since_s, NULL);
    s_bind_string (&params [2], args->marker, &args->marker_size);
    MYSQL_STMT *stmt = s_execute (self, S_OUT_FIND, params, error);
    if (!stmt)
        return -1;
    long long id = 0, inserted = 0, sent = 0;
    my_bool inserted_null = 0, sent_null = 0;
    MYSQL_BIND result [3];
    s_bind_longlong (&result [0], &id, NULL);
    s_bind_longlong (&result [1], &inserted, &inserted_null);
    s_bind_longlong (&result [2], &sent, &sent_null);
    int rc = 0;
    if (mysql_stmt_bind_result (stmt, result))
        rc = s_stmt_failed (self, stmt, S_OUT_FIND, error);
    int fetched = rc ? MYSQL_NO_DATA : mysql_stmt_fetch (stmt);
    if (rc == 0 && fetched != 0 && fetched != MYSQL_NO_DATA)
        rc = s_stmt_failed (self, stmt, S_OUT_FIND, error);
    if (rc == 0 && fetched == 0) {
        args->found = true;
        args->row.id = id;
        args->row.inserted_ms = inserted_null ? -1 : inserted;
        args->row.sent_ms = sent_null ? -1 : sent;
    }
    mysql_stmt_free_result (stmt);
    return rc;
}

int
mx_mailbox_outbound_find (mx_mailbox_t *self, mx_request_kind_t kind, int seqn, int64_t since_ms,
                          mx_outbound_row_t *row, char **error)
{
    assert (self && row);
    assert (since_ms >= 0);
    memset (row, 0, sizeof *row);
    const char *routing = s_routing (self, kind);
    s_out_find_t args = {
        .routing = routing, .routing_size = (unsigned long) strlen (routing), .since_s = since_ms / 1000
    };
    mx_request_seqn_marker (seqn, args.marker, sizeof args.marker);
    args.marker_size = (unsigned long) strlen (args.marker);
    if (s_run (self, s_out_find, &args, S_RETRY_ONCE, error))
        return -1;
    if (args.found)
        *row = args.row;
    return args.found ? 1 : 0;
}

//  ---------------------------------------------------------------------
//  Life cycle

mx_mailbox_t *
mx_mailbox_new (const mx_config_t *config)
{
    assert (config);
    pthread_once (&s_library_once, s_library_init);
    mx_mailbox_t *self = (mx_mailbox_t *) calloc (1, sizeof *self);
    assert (self);
    self->config = config;
    return self;
}

void
mx_mailbox_destroy (mx_mailbox_t **self_p)
{
    assert (self_p);
    mx_mailbox_t *self = *self_p;
    if (!self)
        return;
    s_disconnect (self);
    free (self);
    *self_p = NULL;
}

void
mx_mailbox_release (mx_mailbox_t *self)
{
    assert (self);
    s_disconnect (self);
}

bool
mx_mailbox_connected (mx_mailbox_t *self)
{
    assert (self);
    return self->conn != NULL;
}

mx_mailbox_failure_t
mx_mailbox_failure (const mx_mailbox_t *self)
{
    assert (self);
    return self->failure;
}

const char *
mx_mailbox_failure_name (mx_mailbox_failure_t failure)
{
    static const char *names [MX_MAILBOX_FAILURE_COUNT] = {
        [MX_MAILBOX_FAILURE_NONE] = "none", [MX_MAILBOX_FAILURE_CONNECT] = "connect",
        [MX_MAILBOX_FAILURE_LOST] = "lost", [MX_MAILBOX_FAILURE_QUERY] = "query"
    };
    return failure < MX_MAILBOX_FAILURE_COUNT ? names [failure] : "none";
}
