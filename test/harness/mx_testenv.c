/*  mx_testenv - real servers for integration tests (see mx_testenv.h).

    Failures here are the harness's, not the code under test's: each one says
    what is missing and fails the running test at once.
*/
#include "mx_testenv.h"

#include <assert.h>
#include <errno.h>
#include <ftw.h>
#include <iconv.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "mx_kafka_embedded.h"
#include "mx_migrate.h"
#include "mx_testproc.h"
#include "mx_testenv_mailbox_sql.h"

#define S_ENV_MAX 64
#define S_NAME_MAX 64

struct _mx_testpg_t {
    char dbname [S_NAME_MAX];
    char *conninfo;
};

struct _mx_testmb_t {
    char database [S_NAME_MAX];
    char *host;
    int port;
    char *user;
    char *password;
    MYSQL *conn;                //  for mx_testmb_insert, opened on first use
};

struct _mx_testkafka_t {
    mx_kafka_embedded_t *embedded;  //  the daemon's own dev-profile cluster
};

//  The env file, read once. Fixed storage: nothing to free at exit.
static struct {
    char key [64];
    char value [1024];
} s_env [S_ENV_MAX];
static size_t s_env_count;
static bool s_env_loaded;
static pthread_mutex_t s_env_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint s_name_counter;

static _Noreturn void
    s_fail (const char *format, ...) __attribute__ ((format (printf, 1, 2)));

static _Noreturn void
s_fail (const char *format, ...)
{
    char message [1024];
    va_list args;
    va_start (args, format);
    vsnprintf (message, sizeof message, format, args);
    va_end (args);
    fflush (stdout);
    //  Inside a test this fails just that test; outside one it exits.
    fail_msg ("mx_testenv: %s", message);
    abort ();
}

static char *
s_strdup (const char *text)
{
    char *copy = strdup (text);
    if (!copy)
        s_fail ("out of memory");
    return copy;
}

static void
s_trim_end (char *text)
{
    size_t len = strlen (text);
    while (len > 0 && (text [len - 1] == '\n' || text [len - 1] == '\r'
                       || text [len - 1] == ' ' || text [len - 1] == '\t'))
        text [--len] = 0;
}

//  Returns NULL on success, else why the file could not be used.
static const char *
s_env_load_file (const char *path, char *why, size_t why_size)
{
    FILE *file = fopen (path, "r");
    if (!file) {
        snprintf (why, why_size, "cannot read env file %s: %s"
                  " (servers_start did not run or failed)", path, strerror (errno));
        return why;
    }
    char line [1200];
    while (fgets (line, sizeof line, file)) {
        s_trim_end (line);
        if (line [0] == 0 || line [0] == '#')
            continue;
        char *equals = strchr (line, '=');
        if (!equals || equals == line)
            continue;
        *equals = 0;
        char *value = equals + 1;
        //  The script quotes values with spaces so that bash can source them.
        size_t len = strlen (value);
        if (len >= 2 && (value [0] == '\'' || value [0] == '"') && value [len - 1] == value [0]) {
            value [len - 1] = 0;
            value++;
        }
        if (s_env_count == S_ENV_MAX || strlen (line) >= sizeof s_env [0].key
        ||  strlen (value) >= sizeof s_env [0].value) {
            fclose (file);
            snprintf (why, why_size, "env file %s: too many or too long entries", path);
            return why;
        }
        strcpy (s_env [s_env_count].key, line);
        strcpy (s_env [s_env_count].value, value);
        s_env_count++;
    }
    fclose (file);
    return NULL;
}

static void
s_env_load (void)
{
    char why [512] = "";
    bool failed = false;
    pthread_mutex_lock (&s_env_mutex);
    if (!s_env_loaded) {
        const char *path = getenv ("MX_TEST_ENV");
        if (!path || !*path) {
            snprintf (why, sizeof why, "MX_TEST_ENV is not set: run this test through ctest,"
                      " whose servers_start fixture starts the test servers");
            failed = true;
        }
        else
        if (s_env_load_file (path, why, sizeof why)) {
            s_env_count = 0;
            failed = true;
        }
        else
            s_env_loaded = true;
    }
    pthread_mutex_unlock (&s_env_mutex);
    if (failed)
        s_fail ("%s", why);
}

const char *
mx_testenv_get (const char *key)
{
    assert (key);
    s_env_load ();
    for (size_t index = 0; index < s_env_count; index++)
        if (strcmp (s_env [index].key, key) == 0)
            return s_env [index].value;
    return NULL;
}

static const char *
s_require (const char *key)
{
    const char *value = mx_testenv_get (key);
    if (!value || !*value)
        s_fail ("env file %s has no %s", getenv ("MX_TEST_ENV"), key);
    return value;
}

//  mxt_<pid>_<counter>_<random>: unique across parallel test processes and
//  across runs that reuse a server.
static void
s_new_name (char *name, size_t size)
{
    uint32_t random = 0;
    if (getrandom (&random, sizeof random, 0) != sizeof random)
        random = (uint32_t) time (NULL) ^ (uint32_t) clock ();
    unsigned counter = atomic_fetch_add (&s_name_counter, 1) + 1;
    snprintf (name, size, "mxt_%ld_%u_%08" PRIx32, (long) getpid (), counter, random);
    //  Identifiers cannot be parameters: allow nothing that needs quoting.
    for (const char *scan = name; *scan; scan++)
        assert ((*scan >= 'a' && *scan <= 'z') || (*scan >= '0' && *scan <= '9') || *scan == '_');
}

// ---------------------------------------------------------------- PostgreSQL

static PGconn *
s_pg_admin (void)
{
    const char *conninfo = s_require ("MX_PG_CONNINFO");
    PGconn *conn = PQconnectdb (conninfo);
    if (PQstatus (conn) != CONNECTION_OK) {
        char why [512];
        snprintf (why, sizeof why, "%s", PQerrorMessage (conn));
        PQfinish (conn);
        s_fail ("PostgreSQL test server unreachable (%s): %s", conninfo, why);
    }
    return conn;
}

//  Runs a statement without values on the admin connection.
static void
s_pg_exec (PGconn *conn, const char *sql)
{
    PGresult *result = PQexec (conn, sql);
    if (PQresultStatus (result) != PGRES_COMMAND_OK) {
        char why [512];
        snprintf (why, sizeof why, "%s", PQresultErrorMessage (result));
        PQclear (result);
        PQfinish (conn);
        s_fail ("PostgreSQL: %s failed: %s", sql, why);
    }
    PQclear (result);
}

static char *
s_pg_statement (PGconn *conn, const char *before, const char *dbname, const char *after)
{
    char *ident = PQescapeIdentifier (conn, dbname, strlen (dbname));
    if (!ident)
        s_fail ("PQescapeIdentifier: %s", PQerrorMessage (conn));
    char *sql = NULL;
    if (asprintf (&sql, "%s%s%s", before, ident, after) < 0)
        s_fail ("out of memory");
    PQfreemem (ident);
    return sql;
}

mx_testpg_t *
mx_testpg_new (void)
{
    mx_testpg_t *self = calloc (1, sizeof *self);
    if (!self)
        s_fail ("out of memory");
    s_new_name (self->dbname, sizeof self->dbname);

    PGconn *admin = s_pg_admin ();
    //  template0: nobody is ever connected to it, so parallel tests never
    //  trip over "source database is being accessed by other users".
    char *sql = s_pg_statement (admin, "CREATE DATABASE ", self->dbname,
                                " TEMPLATE template0 ENCODING 'UTF8'");
    s_pg_exec (admin, sql);
    free (sql);
    PQfinish (admin);

    if (asprintf (&self->conninfo, "host=%s port=%s user=%s dbname=%s",
                  s_require ("MX_PG_HOST"), s_require ("MX_PG_PORT"),
                  s_require ("MX_PG_USER"), self->dbname) < 0)
        s_fail ("out of memory");
    return self;
}

const char *
mx_testpg_conninfo (mx_testpg_t *self)
{
    assert (self);
    return self->conninfo;
}

const char *
mx_testpg_dbname (mx_testpg_t *self)
{
    assert (self);
    return self->dbname;
}

void
mx_testpg_destroy (mx_testpg_t **self_p)
{
    assert (self_p);
    mx_testpg_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    PGconn *admin = s_pg_admin ();
    //  FORCE terminates the backends still connected (a daemon under test
    //  may not have closed its pool yet).
    char *sql = s_pg_statement (admin, "DROP DATABASE IF EXISTS ", self->dbname,
                                " WITH (FORCE)");
    free (self->conninfo);
    free (self);
    s_pg_exec (admin, sql);
    free (sql);
    PQfinish (admin);
}

// ---------------------------------------------------------------- MariaDB

static MYSQL *
s_mb_connect (const char *host, int port, const char *user, const char *password,
              const char *database, unsigned long flags)
{
    MYSQL *conn = mysql_init (NULL);
    if (!conn)
        s_fail ("mysql_init: out of memory");
    unsigned int timeout = 10;
    unsigned int protocol = MYSQL_PROTOCOL_TCP;
    mysql_options (conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options (conn, MYSQL_OPT_PROTOCOL, &protocol);
    mysql_options (conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (!mysql_real_connect (conn, host, user, password, database,
                             (unsigned int) port, NULL, flags)) {
        char why [512];
        snprintf (why, sizeof why, "%s", mysql_error (conn));
        mysql_close (conn);
        s_fail ("MariaDB test server unreachable (%s:%d, user %s, database %s): %s",
                host, port, user, database? database: "(none)", why);
    }
    return conn;
}

static MYSQL *
s_mb_admin (void)
{
    return s_mb_connect (s_require ("MX_MYSQL_HOST"), atoi (s_require ("MX_MYSQL_PORT")),
                         s_require ("MX_MYSQL_USER"), s_require ("MX_MYSQL_PASSWORD"),
                         NULL, 0);
}

//  Runs one or more statements without values; drains every result.
static void
s_mb_exec (MYSQL *conn, const char *sql, const char *what)
{
    if (mysql_real_query (conn, sql, strlen (sql)))
        s_fail ("MariaDB: %s failed: %s", what, mysql_error (conn));
    int status;
    do {
        MYSQL_RES *result = mysql_store_result (conn);
        if (result)
            mysql_free_result (result);
        else
        if (mysql_field_count (conn) != 0)
            s_fail ("MariaDB: %s: %s", what, mysql_error (conn));
        status = mysql_next_result (conn);
        if (status > 0)
            s_fail ("MariaDB: %s failed: %s", what, mysql_error (conn));
    } while (status == 0);
}

static MYSQL_STMT *
s_mb_prepare (MYSQL *conn, const char *sql)
{
    MYSQL_STMT *stmt = mysql_stmt_init (conn);
    if (!stmt)
        s_fail ("mysql_stmt_init: %s", mysql_error (conn));
    if (mysql_stmt_prepare (stmt, sql, strlen (sql)))
        s_fail ("MariaDB: prepare %s: %s", sql, mysql_stmt_error (stmt));
    return stmt;
}

mx_testmb_t *
mx_testmb_new (void)
{
    mx_testmb_t *self = calloc (1, sizeof *self);
    if (!self)
        s_fail ("out of memory");
    s_new_name (self->database, sizeof self->database);
    self->host = s_strdup (s_require ("MX_MYSQL_HOST"));
    self->port = atoi (s_require ("MX_MYSQL_PORT"));
    self->user = s_strdup (s_require ("MX_MYSQL_USER"));
    self->password = s_strdup (s_require ("MX_MYSQL_PASSWORD"));

    MYSQL *admin = s_mb_admin ();
    char sql [256];
    //  The name is ours and checked by s_new_name; identifiers cannot be
    //  parameters.
    snprintf (sql, sizeof sql, "CREATE DATABASE `%s` CHARACTER SET utf8mb4"
              " COLLATE utf8mb4_unicode_ci", self->database);
    s_mb_exec (admin, sql, "CREATE DATABASE");
    mysql_close (admin);

    MYSQL *conn = s_mb_connect (self->host, self->port, self->user, self->password,
                                self->database, CLIENT_MULTI_STATEMENTS);
    s_mb_exec (conn, mx_testenv_mailbox_sql, "db/mailbox/mailbox.sql");
    mysql_close (conn);
    return self;
}

const char *
mx_testmb_host (mx_testmb_t *self)
{
    assert (self);
    return self->host;
}

int
mx_testmb_port (mx_testmb_t *self)
{
    assert (self);
    return self->port;
}

const char *
mx_testmb_user (mx_testmb_t *self)
{
    assert (self);
    return self->user;
}

const char *
mx_testmb_password (mx_testmb_t *self)
{
    assert (self);
    return self->password;
}

const char *
mx_testmb_database (mx_testmb_t *self)
{
    assert (self);
    return self->database;
}

MYSQL *
mx_testmb_connect (mx_testmb_t *self)
{
    assert (self);
    return s_mb_connect (self->host, self->port, self->user, self->password,
                         self->database, 0);
}

int64_t
mx_testmb_insert (mx_testmb_t *self, int64_t id, const char *xml, int64_t received_ms)
{
    assert (self);
    assert (xml);
    if (!self->conn)
        self->conn = mx_testmb_connect (self);

    const char *sql = id > 0
        ? "INSERT INTO CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED,"
          " CMINMSGS_STATUS) VALUES (?, ?, ?, 'VALID')"
        : "INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED,"
          " CMINMSGS_STATUS) VALUES (?, ?, 'VALID')";
    MYSQL_STMT *stmt = s_mb_prepare (self->conn, sql);

    MYSQL_BIND bind [3];
    memset (bind, 0, sizeof bind);
    int index = 0;
    long long id_value = id;
    if (id > 0) {
        bind [index].buffer_type = MYSQL_TYPE_LONGLONG;
        bind [index].buffer = &id_value;
        index++;
    }
    unsigned long xml_length = (unsigned long) strlen (xml);
    bind [index].buffer_type = MYSQL_TYPE_STRING;
    bind [index].buffer = (void *) xml;
    bind [index].buffer_length = xml_length;
    bind [index].length = &xml_length;
    index++;

    MYSQL_TIME received;
    memset (&received, 0, sizeof received);
    my_bool received_null = received_ms < 0;
    if (!received_null) {
        time_t seconds = (time_t) (received_ms / 1000);
        struct tm utc;
        gmtime_r (&seconds, &utc);
        received.year = (unsigned) utc.tm_year + 1900;
        received.month = (unsigned) utc.tm_mon + 1;
        received.day = (unsigned) utc.tm_mday;
        received.hour = (unsigned) utc.tm_hour;
        received.minute = (unsigned) utc.tm_min;
        received.second = (unsigned) utc.tm_sec;
        received.time_type = MYSQL_TIMESTAMP_DATETIME;
    }
    bind [index].buffer_type = MYSQL_TYPE_DATETIME;
    bind [index].buffer = &received;
    bind [index].is_null = &received_null;

    if (mysql_stmt_bind_param (stmt, bind) || mysql_stmt_execute (stmt))
        s_fail ("MariaDB: insert into CMINMSGS (id %" PRId64 "): %s",
                id, mysql_stmt_error (stmt));
    int64_t new_id = id > 0? id: (int64_t) mysql_stmt_insert_id (stmt);
    mysql_stmt_close (stmt);
    return new_id;
}

char *
mx_testmb_take (mx_testmb_t *self, int64_t id)
{
    assert (self);
    if (!self->conn)
        self->conn = mx_testmb_connect (self);
    MYSQL_STMT *stmt = s_mb_prepare (self->conn,
        "SELECT CMINMSGS_CLOB_MSG FROM CMINMSGS WHERE CMINMSGS_ID = ?");
    long long id_value = id;
    MYSQL_BIND param;
    memset (&param, 0, sizeof param);
    param.buffer_type = MYSQL_TYPE_LONGLONG;
    param.buffer = &id_value;
    unsigned long length = 0;
    my_bool is_null = 0;
    MYSQL_BIND column;
    memset (&column, 0, sizeof column);
    column.buffer_type = MYSQL_TYPE_STRING;
    column.length = &length;
    column.is_null = &is_null;
    if (mysql_stmt_bind_param (stmt, &param) || mysql_stmt_execute (stmt)
    ||  mysql_stmt_bind_result (stmt, &column))
        s_fail ("MariaDB: read CMINMSGS %" PRId64 ": %s", id, mysql_stmt_error (stmt));
    int rc = mysql_stmt_fetch (stmt);
    char *xml = NULL;
    if (rc == 0 || rc == MYSQL_DATA_TRUNCATED) {
        //  Learn the length first, then fetch the whole text.
        xml = calloc (1, length + 1);
        column.buffer = xml;
        column.buffer_length = length;
        if (length > 0 && mysql_stmt_fetch_column (stmt, &column, 0, 0))
            s_fail ("MariaDB: fetch CMINMSGS %" PRId64 ": %s", id, mysql_stmt_error (stmt));
    }
    mysql_stmt_close (stmt);
    if (!xml)
        return NULL;
    stmt = s_mb_prepare (self->conn, "DELETE FROM CMINMSGS WHERE CMINMSGS_ID = ?");
    if (mysql_stmt_bind_param (stmt, &param) || mysql_stmt_execute (stmt))
        s_fail ("MariaDB: delete CMINMSGS %" PRId64 ": %s", id, mysql_stmt_error (stmt));
    mysql_stmt_close (stmt);
    return xml;
}

//  Kills connections still using `database`: an open transaction would
//  otherwise make DROP DATABASE wait for its metadata lock.
static void
s_mb_kill_users (MYSQL *admin, const char *database)
{
    MYSQL_STMT *select = s_mb_prepare (admin,
        "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()");
    MYSQL_BIND param;
    memset (&param, 0, sizeof param);
    unsigned long database_length = (unsigned long) strlen (database);
    param.buffer_type = MYSQL_TYPE_STRING;
    param.buffer = (void *) database;
    param.buffer_length = database_length;
    param.length = &database_length;
    if (mysql_stmt_bind_param (select, &param) || mysql_stmt_execute (select))
        s_fail ("MariaDB: listing connections of %s: %s", database, mysql_stmt_error (select));

    unsigned long long ids [64];
    size_t id_count = 0;
    unsigned long long id = 0;
    MYSQL_BIND result;
    memset (&result, 0, sizeof result);
    result.buffer_type = MYSQL_TYPE_LONGLONG;
    result.buffer = &id;
    result.is_unsigned = 1;
    if (mysql_stmt_bind_result (select, &result) || mysql_stmt_store_result (select))
        s_fail ("MariaDB: listing connections of %s: %s", database, mysql_stmt_error (select));
    while (mysql_stmt_fetch (select) == 0 && id_count < 64)
        ids [id_count++] = id;
    mysql_stmt_close (select);

    for (size_t index = 0; index < id_count; index++) {
        MYSQL_STMT *kill = s_mb_prepare (admin, "KILL ?");
        MYSQL_BIND kill_param;
        memset (&kill_param, 0, sizeof kill_param);
        kill_param.buffer_type = MYSQL_TYPE_LONGLONG;
        kill_param.buffer = &ids [index];
        kill_param.is_unsigned = 1;
        //  It may have gone by itself meanwhile: not an error.
        if (mysql_stmt_bind_param (kill, &kill_param) == 0)
            mysql_stmt_execute (kill);
        mysql_stmt_close (kill);
    }
}

void
mx_testmb_destroy (mx_testmb_t **self_p)
{
    assert (self_p);
    mx_testmb_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    if (self->conn)
        mysql_close (self->conn);

    MYSQL *admin = s_mb_admin ();
    s_mb_kill_users (admin, self->database);
    char sql [256];
    snprintf (sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", self->database);
    free (self->host);
    free (self->user);
    free (self->password);
    free (self);
    s_mb_exec (admin, sql, "DROP DATABASE");
    mysql_close (admin);
}

// ---------------------------------------------------------------- Kafka

mx_testkafka_t *
mx_testkafka_new (int brokers)
{
    assert (brokers > 0);
    mx_testkafka_t *self = calloc (1, sizeof *self);
    if (!self)
        s_fail ("out of memory");
    char *error = NULL;
    self->embedded = mx_kafka_embedded_new (brokers, NULL, 0, &error);
    if (!self->embedded)
        s_fail ("Kafka mock cluster (%d brokers) did not start: %s", brokers, error ? error : "?");
    return self;
}

const char *
mx_testkafka_bootstraps (mx_testkafka_t *self)
{
    assert (self);
    return mx_kafka_embedded_bootstraps (self->embedded);
}

rd_kafka_mock_cluster_t *
mx_testkafka_cluster (mx_testkafka_t *self)
{
    assert (self);
    return mx_kafka_embedded_cluster (self->embedded);
}

void
mx_testkafka_destroy (mx_testkafka_t **self_p)
{
    assert (self_p);
    mx_testkafka_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    mx_kafka_embedded_destroy (&self->embedded);
    free (self);
}

// ---------------------------------------------------------------- files

char *
mx_testenv_tmpdir (void)
{
    const char *base = getenv ("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    char *path = NULL;
    if (asprintf (&path, "%s/mxt-XXXXXX", base) < 0)
        s_fail ("out of memory");
    if (!mkdtemp (path))
        s_fail ("mkdtemp %s: %s", path, strerror (errno));
    return path;
}

static int
s_remove_entry (const char *path, const struct stat *info, int flag, struct FTW *ftw)
{
    if (remove (path) != 0 && errno != ENOENT)
        fprintf (stderr, "mx_testenv: cannot remove %s: %s\n", path, strerror (errno));
    return 0;
}

void
mx_testenv_rmtree (const char *dir)
{
    assert (dir);
    //  Guard against an empty or root path from a broken caller.
    assert (*dir && strcmp (dir, "/") != 0);
    nftw (dir, s_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

//  True when port can be bound on 127.0.0.1 now (0: any port, returned
//  in *port).
static bool
s_port_bindable (int *port)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        s_fail ("socket: %s", strerror (errno));
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) *port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    socklen_t length = sizeof addr;
    bool ok = bind (fd, (struct sockaddr *) &addr, sizeof addr) == 0
           && getsockname (fd, (struct sockaddr *) &addr, &length) == 0;
    close (fd);
    if (ok)
        *port = ntohs (addr.sin_port);
    return ok;
}

//  Ports this process was given: a test takes all its ports before its
//  daemons bind them, so bindable alone would not keep it from getting one
//  twice. Tests are single-threaded where they take ports.
static int s_given [1024];
static size_t s_given_count;

static bool
s_port_given (int port)
{
    for (size_t i = 0; i < s_given_count; i++)
        if (s_given [i] == port)
            return true;
    return false;
}

static int
s_port_give (int port)
{
    if (s_given_count < sizeof s_given / sizeof s_given [0])
        s_given [s_given_count++] = port;
    return port;
}

//  A port below the kernel's ephemeral range: between this call and the
//  daemon's bind, no client socket of the tests running beside it (their
//  PostgreSQL, MariaDB and Kafka connections) can be given it, as a port
//  from bind (0) could.
int
mx_testenv_free_port (void)
{
    int ephemeral = 32768;
    FILE *range = fopen ("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (range) {
        if (fscanf (range, "%d", &ephemeral) != 1)
            ephemeral = 32768;
        fclose (range);
    }
    const int low = 20000;
    if (ephemeral - low >= 1000) {
        struct timespec now;
        clock_gettime (CLOCK_MONOTONIC, &now);
        unsigned int seed = (unsigned int) getpid () ^ (unsigned int) now.tv_nsec;
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = low + rand_r (&seed) % (ephemeral - low);
            if (!s_port_given (port) && s_port_bindable (&port))
                return s_port_give (port);
        }
    }
    int port = 0;
    if (!s_port_bindable (&port))
        s_fail ("cannot find a free port: %s", strerror (errno));
    return port;
}

PGconn *
mx_testpg_connect_schema (mx_testpg_t *pg, const char *watch)
{
    PGconn *conn = PQconnectdb (mx_testpg_conninfo (pg));
    if (PQstatus (conn) != CONNECTION_OK)
        s_fail ("cannot connect to the test's PostgreSQL: %s", PQerrorMessage (conn));
    char *error = NULL;
    if (mx_migrate_apply (conn, NULL, &error))
        s_fail ("migrations: %s", error);
    if (watch)
        mx_testpg_exec (conn, watch);
    return conn;
}

void
mx_testpg_exec (PGconn *conn, const char *sql)
{
    PGresult *res = PQexec (conn, sql);
    if (PQresultStatus (res) != PGRES_COMMAND_OK && PQresultStatus (res) != PGRES_TUPLES_OK)
        s_fail ("%.200s: %s", sql, PQerrorMessage (conn));
    PQclear (res);
}

char *
mx_testpg_value (PGconn *conn, const char *sql)
{
    return mx_testpg_value_params (conn, sql, 0, NULL);
}

char *
mx_testpg_value_params (PGconn *conn, const char *sql, int nparams, const char *const *values)
{
    PGresult *res = PQexecParams (conn, sql, nparams, NULL, values, NULL, NULL, 0);
    if (PQresultStatus (res) != PGRES_TUPLES_OK)
        s_fail ("%.200s: %s", sql, PQerrorMessage (conn));
    char *value = s_strdup (PQntuples (res) && !PQgetisnull (res, 0, 0) ? PQgetvalue (res, 0, 0) : "");
    PQclear (res);
    return value;
}

void
mx_testpg_expect (PGconn *conn, const char *sql, const char *expected)
{
    char *value = mx_testpg_value (conn, sql);
    if (strcmp (value, expected) != 0)
        s_fail ("%s\n  gave '%s'\n  expected '%s'", sql, value, expected);
    free (value);
}

static int64_t
s_mono_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
s_wait (PGconn *conn, const char *condition, int nparams, const char *const *values, const char *show)
{
    int64_t deadline = s_mono_ms () + 30000;
    while (true) {
        char *value = mx_testpg_value_params (conn, condition, nparams, values);
        bool done = strcmp (value, "t") == 0;
        free (value);
        if (done)
            return;
        int64_t left = deadline - s_mono_ms ();
        if (left <= 0) {
            char *shown = show ? mx_testpg_value (conn, show) : NULL;
            s_fail ("condition never became true: %s%s%s", condition, shown ? "\n  " : "", shown ? shown : "");
        }
        struct pollfd item = { PQsocket (conn), POLLIN, 0 };
        poll (&item, 1, (int) left);
        PQconsumeInput (conn);
        PGnotify *notify;
        while ((notify = PQnotifies (conn)))
            PQfreemem (notify);
    }
}

void
mx_testpg_wait (PGconn *conn, const char *condition)
{
    s_wait (conn, condition, 0, NULL, NULL);
}

void
mx_testpg_wait_showing (PGconn *conn, const char *condition, const char *show)
{
    s_wait (conn, condition, 0, NULL, show);
}

void
mx_testpg_wait_params (PGconn *conn, const char *condition, int nparams, const char *const *values)
{
    s_wait (conn, condition, nparams, values, NULL);
}

//  Test binaries print their verdicts on stdout; a test killed on its
//  timeout must not lose what it said before.
__attribute__ ((constructor)) static void
s_unbuffered_stdout (void)
{
    setvbuf (stdout, NULL, _IOLBF, 0);
}

void
mx_testmb_wait (MYSQL *conn, const char *count_sql)
{
    //  MariaDB has no NOTIFY: a short poll, bounded like mx_testpg_wait.
    int64_t deadline = zclock_mono () + 30000;
    while (true) {
        if (mysql_real_query (conn, count_sql, strlen (count_sql)))
            s_fail ("%s: %s", count_sql, mysql_error (conn));
        MYSQL_RES *res = mysql_store_result (conn);
        MYSQL_ROW row = res ? mysql_fetch_row (res) : NULL;
        bool done = row && row [0] && strtoll (row [0], NULL, 10) > 0;
        mysql_free_result (res);
        if (done)
            return;
        if (zclock_mono () > deadline)
            s_fail ("condition never became true: %s", count_sql);
        zclock_sleep (5);
    }
}

void
mx_testmb_configure (mx_testmb_t *mb, mx_config_t *config, const char *time_zone)
{
    char port [16];
    snprintf (port, sizeof port, "%d", mx_testmb_port (mb));
    const char *settings [][2] = {
        { "mailbox.shared-mysql.enabled", "true" },
        { "mailbox.shared-mysql.host", mx_testmb_host (mb) },
        { "mailbox.shared-mysql.port", port },
        { "mailbox.shared-mysql.user", mx_testmb_user (mb) },
        { "mailbox.shared-mysql.password", mx_testmb_password (mb) },
        { "mailbox.shared-mysql.database", mx_testmb_database (mb) },
        { "mailbox.shared-mysql.time-zone", time_zone },
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings [0]; i++)
        if (mx_config_set (config, settings [i][0], settings [i][1], NULL))
            s_fail ("config %s = %s refused", settings [i][0], settings [i][1]);
}

size_t
mx_testmb_environment (mx_testmb_t *mb, const char *time_zone, char **vars)
{
    size_t count = 0;
    vars [count++] = strdup ("MAILBOX_SHARED_MYSQL_ENABLED=true");
    vars [count++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_HOST=%s", mx_testmb_host (mb));
    vars [count++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_PORT=%d", mx_testmb_port (mb));
    vars [count++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_USER=%s", mx_testmb_user (mb));
    vars [count++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_PASSWORD=%s", mx_testmb_password (mb));
    vars [count++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_DATABASE=%s", mx_testmb_database (mb));
    vars [count++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_TIME_ZONE=%s", time_zone);
    for (size_t i = 0; i < count; i++)
        if (!vars [i])
            s_fail ("out of memory");
    return count;
}

char *
mx_testenv_to_gb18030 (const char *text, size_t *size_p)
{
    iconv_t cd = iconv_open ("GB18030", "UTF-8");
    if (cd == (iconv_t) -1)
        s_fail ("iconv cannot convert UTF-8 to GB18030: %s", strerror (errno));
    size_t in_left = strlen (text);
    size_t out_size = in_left * 2 + 1;      //  GB18030 needs at most 4 bytes for UTF-8's 2..4
    char *out = (char *) calloc (1, out_size);
    assert (out);
    char *in = (char *) text;
    char *cursor = out;
    size_t out_left = out_size - 1;
    if (iconv (cd, &in, &in_left, &cursor, &out_left) == (size_t) -1)
        s_fail ("iconv UTF-8 -> GB18030: %s", strerror (errno));
    iconv_close (cd);
    *size_p = (size_t) (cursor - out);
    return out;
}

int
mx_testhttp_exchange (int port, const char *request, int timeout_s, char **head, char **body)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        s_fail ("socket: %s", strerror (errno));
    struct timeval timeout = { .tv_sec = timeout_s };
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if (connect (fd, (struct sockaddr *) &addr, sizeof addr))
        s_fail ("connect to 127.0.0.1:%d: %s", port, strerror (errno));
    size_t length = strlen (request);
    if (send (fd, request, length, MSG_NOSIGNAL) != (ssize_t) length)
        s_fail ("send to 127.0.0.1:%d: %s", port, strerror (errno));
    size_t size = 0, capacity = 8192;
    char *data = (char *) malloc (capacity);
    assert (data);
    while (true) {
        if (size + 1 >= capacity) {
            capacity *= 2;
            data = (char *) realloc (data, capacity);
            assert (data);
        }
        ssize_t got = recv (fd, data + size, capacity - size - 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            s_fail ("no HTTP reply from 127.0.0.1:%d within %d s", port, timeout_s);
        if (got == 0)
            break;
        size += (size_t) got;
    }
    close (fd);
    data [size] = '\0';
    int status = 0;
    char *end = strstr (data, "\r\n\r\n");
    if (!end || sscanf (data, "HTTP/1.%*d %d", &status) != 1)
        s_fail ("not an HTTP reply: %.200s", data);
    *body = s_strdup (end + 4);
    *end = '\0';
    *head = data;
    return status;
}

bool
mx_testhttp_dechunk (const char *body, char **payload)
{
    size_t length = strlen (body);
    char *out = (char *) malloc (length + 1);
    assert (out);
    size_t size = 0;
    const char *scan = body;
    bool complete = false;
    while (*scan) {
        char *end = NULL;
        unsigned long chunk = strtoul (scan, &end, 16);
        const char *line_end = strstr (scan, "\r\n");
        if (end == scan || !line_end)
            break;                      //  cut inside a size line
        scan = line_end + 2;
        if (chunk == 0) {
            complete = strncmp (scan, "\r\n", 2) == 0;
            break;
        }
        size_t left = strlen (scan);
        size_t take = chunk < left ? chunk : left;
        memcpy (out + size, scan, take);
        size += take;
        if (take < chunk || strncmp (scan + chunk, "\r\n", 2) != 0)
            break;                      //  cut inside a chunk
        scan += chunk + 2;
    }
    out [size] = '\0';
    *payload = out;
    return complete;
}

int
mx_testhttp_get (int port, const char *path, int timeout_s, char **head, char **body)
{
    char request [512];
    snprintf (request, sizeof request, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    return mx_testhttp_exchange (port, request, timeout_s, head, body);
}

const char *
mx_testhttp_sample (const char *body, const char *series, char *buf, size_t size)
{
    size_t key_size = strlen (series) + 3;
    char *key = (char *) malloc (key_size);
    assert (key);
    snprintf (key, key_size, "\n%s ", series);
    const char *at = strstr (body, key);
    free (key);
    if (!at)
        s_fail ("no sample for %s in:\n%s", series, body);
    at += strlen (series) + 2;
    snprintf (buf, size, "%.*s", (int) strcspn (at, "\n"), at);
    return buf;
}

rd_kafka_t *
mx_testkafka_consumer (mx_testkafka_t *self, const char *group, const char *topic_a, const char *topic_b,
                       int partitions)
{
    char errstr [512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    const char *settings [][2] = {
        { "bootstrap.servers", mx_testkafka_bootstraps (self) },
        { "group.id", group },
        { "enable.auto.commit", "false" },
        { "enable.partition.eof", "false" },
        { "log_level", "2" },
        { "fetch.wait.max.ms", "10" },
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings [0]; i++)
        if (rd_kafka_conf_set (conf, settings [i][0], settings [i][1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
            s_fail ("consumer %s: %s", settings [i][0], errstr);
    rd_kafka_t *consumer = rd_kafka_new (RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!consumer)
        s_fail ("consumer: %s", errstr);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new (2 * partitions);
    for (int p = 0; p < partitions; p++) {
        rd_kafka_topic_partition_list_add (list, topic_a, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_topic_partition_list_add (list, topic_b, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_resp_err_t err = rd_kafka_assign (consumer, list);
    rd_kafka_topic_partition_list_destroy (list);
    if (err)
        s_fail ("consumer assign: %s", rd_kafka_err2str (err));
    return consumer;
}

int64_t
mx_testkafka_header_int (rd_kafka_headers_t *headers, const char *name)
{
    const void *value = NULL;
    size_t size = 0;
    if (!headers || rd_kafka_header_get_last (headers, name, &value, &size))
        return -1;
    char text [32];
    if (size >= sizeof text)
        s_fail ("header %s of %zu bytes is not a number", name, size);
    memcpy (text, value, size);
    text [size] = 0;
    return strtoll (text, NULL, 10);
}

char *
mx_testkafka_header_text (rd_kafka_headers_t *headers, const char *name)
{
    const void *value = NULL;
    size_t size = 0;
    if (!headers || rd_kafka_header_get_last (headers, name, &value, &size))
        return NULL;
    return strndup ((const char *) value, size);
}

bool
mx_testkafka_poll (rd_kafka_t *consumer, int timeout_ms, mx_testkafka_record_t *record)
{
    rd_kafka_message_t *message = rd_kafka_consumer_poll (consumer, timeout_ms);
    if (!message)
        return false;
    if (message->err) {
        rd_kafka_message_destroy (message);
        return false;
    }
    rd_kafka_headers_t *headers = NULL;
    rd_kafka_message_headers (message, &headers);
    *record = (mx_testkafka_record_t) {
        .topic = s_strdup (rd_kafka_topic_name (message->rkt)),
        .offset = message->offset,
        .partition = message->partition,
        .key = strndup ((const char *) message->key, message->key_len),
        .value = message->payload ? strndup ((const char *) message->payload, message->len) : NULL,
        .event_id = mx_testkafka_header_int (headers, "msgx-event-id"),
        .msg_id = mx_testkafka_header_int (headers, "msgx-msg-id"),
        .version = mx_testkafka_header_int (headers, "msgx-state-version"),
        .event_type = mx_testkafka_header_text (headers, "msgx-event-type"),
        .source = mx_testkafka_header_text (headers, "msgx-source"),
        .json = mx_testkafka_message_json (message),
    };
    rd_kafka_message_destroy (message);
    return true;
}

void
mx_testkafka_record_free (mx_testkafka_record_t *record)
{
    free (record->topic);
    free (record->key);
    free (record->value);
    free (record->event_type);
    free (record->source);
    free (record->json);
    memset (record, 0, sizeof *record);
}

//  A JSON string of size bytes; the record must be UTF-8 like the contract.
static json_t *
s_json_text (const void *text, size_t size, const char *what)
{
    if (!text)
        return json_null ();
    json_t *value = json_stringn ((const char *) text, size);
    if (!value)
        s_fail ("record %s of %zu bytes is not UTF-8", what, size);
    return value;
}

char *
mx_testkafka_message_json (const rd_kafka_message_t *message)
{
    json_t *headers = json_array ();
    rd_kafka_headers_t *list = NULL;
    if (rd_kafka_message_headers (message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *name;
        const void *value;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all (list, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
             i++) {
            json_array_append_new (headers, json_string (name));
            json_array_append_new (headers, s_json_text (value, size, "header"));
        }
    }
    json_t *record = json_pack ("{s:s, s:i, s:I, s:o, s:o, s:o}",
        "topic", rd_kafka_topic_name (message->rkt), "partition", (int) message->partition,
        "offset", (json_int_t) message->offset, "headers", headers,
        "key", s_json_text (message->key, message->key_len, "key"),
        "payload", s_json_text (message->payload, message->len, "payload"));
    if (!record)
        s_fail ("cannot write a record as JSON");
    char *line = json_dumps (record, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (record);
    if (!line)
        s_fail ("out of memory");
    return line;
}

int
mx_testkafka_validate_lines (const char *const *lines, size_t count, const char *msg_topic,
                             const char *schd_topic, char **report)
{
    const char *source = getenv ("MX_SOURCE_DIR");
    if (!source || !*source)
        s_fail ("MX_SOURCE_DIR is not set: cannot find the record validator");
    char *dir = mx_testenv_tmpdir ();
    char *path = NULL, *script = NULL;
    if (asprintf (&path, "%s/records.jsonl", dir) < 0
    ||  asprintf (&script, "%s/test/harness/mx-validate-records", source) < 0)
        s_fail ("out of memory");
    FILE *file = fopen (path, "w");
    if (!file)
        s_fail ("%s: %s", path, strerror (errno));
    for (size_t i = 0; i < count; i++)
        fprintf (file, "%s\n", lines [i]);
    if (fclose (file))
        s_fail ("%s: %s", path, strerror (errno));
    const char *argv [] = { script, "--msg-topic", msg_topic, "--schd-topic", schd_topic, path, NULL };
    char *err = NULL;
    int rc = mx_testproc_run (argv, NULL, 120000, report, &err);
    if (rc < 0 || rc > 1)
        s_fail ("%s exited %d: %s%s", script, rc, *report ? *report : "", err ? err : "");
    if (err && *err)
        fprintf (stderr, "%s", err);
    free (err);
    mx_testenv_rmtree (dir);
    free (dir);
    free (path);
    free (script);
    return rc;
}

void
mx_testkafka_validate (const mx_testkafka_record_t *records, size_t count, const char *msg_topic,
                       const char *schd_topic)
{
    if (count == 0)
        return;
    const char **lines = (const char **) calloc (count, sizeof (char *));
    if (!lines)
        s_fail ("out of memory");
    for (size_t i = 0; i < count; i++)
        lines [i] = records [i].json;
    char *report = NULL;
    int rc = mx_testkafka_validate_lines (lines, count, msg_topic, schd_topic, &report);
    free (lines);
    if (rc != 0) {
        //  The whole report on stderr: fail_msg keeps only its first lines.
        fprintf (stderr, "%s", report);
        s_fail ("records break the consumer contract: %.600s", report);
    }
    free (report);
}

void
mx_testkafka_records_add (mx_testkafka_record_t **records, size_t *count, const mx_testkafka_record_t *record)
{
    //  Capacity doubles at each power of two, so it follows from count.
    if (*count == 0 || (*count >= 64 && (*count & (*count - 1)) == 0)) {
        size_t room = *count == 0 ? 64 : 2 * *count;
        *records = (mx_testkafka_record_t *) realloc (*records, room * sizeof (mx_testkafka_record_t));
        assert (*records);
    }
    (*records) [(*count)++] = *record;
}

void
mx_testkafka_read_all (rd_kafka_t *consumer, const char *topic_a, const char *topic_b, int partitions,
                       int timeout_ms, mx_testkafka_record_t **records, size_t *count)
{
    const char *topics [] = { topic_a, topic_b };
    size_t first = *count;
    int64_t deadline = s_mono_ms () + timeout_ms;
    for (int t = 0; t < 2; t++)
        for (int32_t p = 0; p < partitions; p++) {
            int64_t low = 0, high = 0;
            rd_kafka_resp_err_t err;
            //  A blocking metadata round trip, then the query again.
            while ((err = rd_kafka_query_watermark_offsets (consumer, topics [t], p, &low, &high, timeout_ms))
                   == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION && s_mono_ms () < deadline) {
                const struct rd_kafka_metadata *metadata = NULL;
                if (rd_kafka_metadata (consumer, 1, NULL, &metadata, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR)
                    rd_kafka_metadata_destroy (metadata);
            }
            if (err)
                s_fail ("watermarks of %s [%d]: %s", topics [t], p, rd_kafka_err2str (err));
            while (true) {
                int64_t next = 0;
                for (size_t i = 0; i < *count; i++)
                    if (strcmp ((*records) [i].topic, topics [t]) == 0 && (*records) [i].partition == p
                    &&  (*records) [i].offset + 1 > next)
                        next = (*records) [i].offset + 1;
                if (next >= high)
                    break;
                if (s_mono_ms () > deadline)
                    s_fail ("%s [%d]: read up to %" PRId64 " of %" PRId64, topics [t], p, next, high);
                mx_testkafka_record_t record;
                if (mx_testkafka_poll (consumer, 500, &record))
                    mx_testkafka_records_add (records, count, &record);
            }
        }
    //  Read together with the reference topic, topic_a is that one.
    mx_testkafka_validate (*records + first, *count - first,
                           strcmp (topic_a, MX_TESTKAFKA_REF_TOPIC) == 0 ? "" : topic_a, topic_b);
}
