/*  msgx-fault - the whole pipeline under a fault schedule, then an audit in
    the manner of Jepsen's queue checker.

    A seeded mailbox of generated messages of every kind (with duplicates,
    malformed, ignored, unsupported and hostile ones, holes that never fill
    and holes that fill late) drains through msgxd while a schedule chosen
    from the seed strikes: kill -9 of the active msgxd, PostgreSQL stopped
    with `pg_ctl stop -m immediate` and started again, MariaDB restarted,
    every Kafka broker set down and up, produce errors injected, a standby
    msgxd running alongside that takes over. The program owns all of it:
    its own PostgreSQL and MariaDB (deploy/local/mx-servers, durable
    settings), its own Kafka mock cluster (reached by msgxd over TCP), and
    msgxd as child processes that it restarts after every death, as a
    supervisor would. Faults fire after a number of terminal transitions
    (LISTEN on a test trigger), never after a sleep.

    Then a reference: the same accepted messages, one msgxd, no faults, one
    message per transaction. The audit compares and counts; any bad count
    makes the exit code 1.

    With msgx.delivery.semantics = exactly-once (the default, --semantics)
    no event may reach a topic twice: the audit's "redelivered" (events
    read more than once) must be 0; at-least-once counts them, and only
    loss, reordering and the rest are faults.

    usage: msgx-fault [--messages N] [--kills K] [--seed S] [--build DIR]
                      [--source DIR] [--quick] [--semantics exactly-once|at-least-once]
    Exit codes: 0 audit clean, 1 audit found something, 2 usage or set-up.
*/
#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "mx_gen.h"
#include "mx_kafka_embedded.h"
#include "mx_migrate.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define S_WAIT_MS 180000            //  no progress at all for this long: the run failed
#define S_TOPIC_MSG "msgx.flight.events"
#define S_TOPIC_SCHD "msgx.flight.state"
#define S_TOPIC_REF "msgx.reference"
//  The mock cluster keeps at most 5 MiB per partition (older records are
//  dropped, like retention): enough partitions keep every record of a run.
#define S_PARTITION_BYTES (5 * 1024 * 1024)
#define S_BROKERS 3
//  Kafka protocol API key of Produce (RD_KAFKAP_Produce is not in the public headers).
#define S_API_PRODUCE 0
#define S_SLOTS 2                   //  msgxd instances at most: active + standby

//  Terminal transitions and processed marks, seen by the suite through
//  NOTIFY; an order table for the audit.
static const char *s_watch_sql =
    "CREATE TABLE mx_test_order (seq bigserial PRIMARY KEY, msg_id bigint, state text, tx bigint);"
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    "  IF NEW.state IN ('SUCCEEDED','SKIPPED','DEAD') AND OLD.state NOT IN ('SUCCEEDED','SKIPPED','DEAD') THEN"
    "   INSERT INTO mx_test_order (msg_id, state, tx) VALUES (NEW.msg_id, NEW.state, txid_current ());"
    "   PERFORM pg_notify ('mx_test', NEW.msg_id::text);"
    "  ELSIF NEW.backfill_at IS DISTINCT FROM OLD.backfill_at"
    "     OR NEW.backfill_abandoned_at IS DISTINCT FROM OLD.backfill_abandoned_at THEN"
    "   PERFORM pg_notify ('mx_marks', '');"
    "  END IF;"
    "  RETURN NEW;"
    " END $$;"
    "CREATE TRIGGER mx_test_watch AFTER UPDATE ON proc_state FOR EACH ROW EXECUTE FUNCTION mx_test_watch ();"
    "CREATE FUNCTION mx_test_events () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify ('mx_marks', ''); RETURN NULL; END $$;"
    "CREATE TRIGGER mx_test_events AFTER UPDATE ON msg_event FOR EACH STATEMENT"
    " EXECUTE FUNCTION mx_test_events ();"
    "CREATE FUNCTION mx_test_cursor () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify ('mx_marks', ''); RETURN NULL; END $$;"
    "CREATE TRIGGER mx_test_cursor AFTER UPDATE ON inbox_cursor FOR EACH STATEMENT"
    " EXECUTE FUNCTION mx_test_cursor ();";

typedef enum {
    F_KILL, F_PG_CRASH, F_MARIADB_RESTART, F_KAFKA_DOWN, F_KAFKA_UP, F_PRODUCE_ERRORS,
    F_STANDBY_START, F_STANDBY_STOP
} s_fault_kind_t;

static const char *s_fault_names [] = {
    "kill -9 of the active msgxd", "PostgreSQL stop -m immediate + start", "MariaDB restart",
    "Kafka brokers down", "Kafka brokers up", "Kafka produce errors injected",
    "standby msgxd started", "standby msgxd stopped"
};

typedef struct {
    s_fault_kind_t kind;
    int64_t after;                  //  terminal transitions since the previous fault
} s_fault_t;

//  A late row is put back at a fault point, as soon as W stops at its hole
//  (it should be taken in order), or only once its hole was released (a
//  late arrival, never processed).
#define S_LATE_AT_FAULT 0
#define S_LATE_AT_HOLE 1
#define S_LATE_AFTER_RELEASE 2

typedef struct {
    int64_t id;
    char *xml;
    int mode;                       //  S_LATE_*: when it is put back
    bool inserted;
} s_late_t;

typedef struct {
    //  Options
    int messages;
    int kills;
    uint64_t seed;
    const char *build;
    const char *source;
    bool quick;
    const char *semantics;          //  msgx.delivery.semantics of every msgxd
    //  Servers and Kafka
    char *dir;
    char *env_file;
    char *servers;                  //  deploy/local/mx-servers
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    mx_kafka_embedded_t *kafka;
    int partitions;
    PGconn *watch;                  //  LISTENs; reconnected after a PostgreSQL crash
    MYSQL *my;                      //  for late rows; reconnected after a MariaDB restart
    //  The mailbox
    int64_t max_id;
    int64_t rows_loaded;
    int64_t never [256];
    size_t never_count;
    s_late_t late [256];
    size_t late_count;
    size_t kind_counts [MX_GEN_KINDS];
    //  msgxd
    char *msgxd;
    char **env;                     //  common KEY=VALUE list, NULL-terminated
    mx_testproc_t *slot [S_SLOTS];
    char *slot_env [S_SLOTS][3];
    bool slot_wanted [S_SLOTS];
    bool active [S_SLOTS];          //  said "role active" (it dies when it loses the role)
    int64_t starts, deaths, fenced_exits, takeovers;
    //  Faults
    s_fault_t *faults;
    size_t fault_count;
    size_t fired [F_STANDBY_STOP + 1];
    int64_t transitions_seen;
} s_suite_t;

static void s_die (const char *format, ...) __attribute__ ((format (printf, 1, 2), noreturn));

//  Whatever happens, the children and servers this program started go.
static char *s_cleanup_servers;
static char *s_cleanup_env;
static pid_t s_cleanup_pids [S_SLOTS];

static void
s_cleanup (void)
{
    for (int i = 0; i < S_SLOTS; i++)
        if (s_cleanup_pids [i] > 0)
            kill (s_cleanup_pids [i], SIGKILL);
    if (s_cleanup_servers && s_cleanup_env) {
        const char *argv [] = { s_cleanup_servers, "stop", "--env", s_cleanup_env, NULL };
        mx_testproc_run (argv, NULL, 60000, NULL, NULL);
    }
}

static void
s_die (const char *format, ...)
{
    va_list args;
    va_start (args, format);
    fprintf (stderr, "msgx-fault: ");
    vfprintf (stderr, format, args);
    fprintf (stderr, "\n");
    va_end (args);
    exit (2);
}

//  The suite's own PRNG (splitmix64): the schedule depends on the seed only.
static uint64_t s_rng_state;

static uint64_t
s_rand (void)
{
    uint64_t z = (s_rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t
s_rand_range (int64_t low, int64_t high)
{
    return high <= low ? low : low + (int64_t) (s_rand () % (uint64_t) (high - low + 1));
}

//  ---------------------------------------------------------------------
//  PostgreSQL helpers (the harness's fail on error, and this is no cmocka test)

static PGconn *
s_pg_connect (const char *conninfo)
{
    PGconn *conn = PQconnectdb (conninfo);
    if (PQstatus (conn) != CONNECTION_OK)
        s_die ("cannot connect to PostgreSQL: %s", PQerrorMessage (conn));
    return conn;
}

static PGresult *
s_query (PGconn *conn, const char *sql, int nparams, const char *const *values)
{
    PGresult *res = PQexecParams (conn, sql, nparams, NULL, values, NULL, NULL, 0);
    ExecStatusType status = PQresultStatus (res);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
        s_die ("query failed: %s\n  %s", PQerrorMessage (conn), sql);
    return res;
}

//  Several statements, no values.
static void
s_exec (PGconn *conn, const char *sql)
{
    PGresult *res = PQexec (conn, sql);
    ExecStatusType status = PQresultStatus (res);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
        s_die ("statement failed: %s", PQerrorMessage (conn));
    PQclear (res);
}

static int64_t
s_int (PGconn *conn, const char *sql)
{
    PGresult *res = s_query (conn, sql, 0, NULL);
    int64_t value = PQntuples (res) > 0 && !PQgetisnull (res, 0, 0) ? strtoll (PQgetvalue (res, 0, 0), NULL, 10) : 0;
    PQclear (res);
    return value;
}

static int64_t
s_int_param (PGconn *conn, const char *sql, int64_t param)
{
    char text [32];
    snprintf (text, sizeof text, "%" PRId64, param);
    const char *values [] = { text };
    PGresult *res = s_query (conn, sql, 1, values);
    int64_t value = PQntuples (res) > 0 && !PQgetisnull (res, 0, 0) ? strtoll (PQgetvalue (res, 0, 0), NULL, 10) : 0;
    PQclear (res);
    return value;
}

//  A boolean or a count: true for 't' or a number other than 0.
static bool
s_true (PGconn *conn, const char *sql, int64_t param)
{
    char text [32];
    snprintf (text, sizeof text, "%" PRId64, param);
    const char *values [] = { text };
    PGresult *res = s_query (conn, sql, 1, values);
    const char *value = PQntuples (res) > 0 ? PQgetvalue (res, 0, 0) : "";
    bool result = strcmp (value, "t") == 0 || strtoll (value, NULL, 10) != 0;
    PQclear (res);
    return result;
}

//  ---------------------------------------------------------------------
//  MariaDB helpers

static MYSQL *
s_my (s_suite_t *self)
{
    if (self->my && mysql_ping (self->my) == 0)
        return self->my;
    if (self->my)
        mysql_close (self->my);
    self->my = mx_testmb_connect (self->mb);
    if (!self->my)
        s_die ("cannot connect to MariaDB");
    return self->my;
}

static int64_t
s_my_int (MYSQL *my, const char *sql)
{
    if (mysql_query (my, sql))
        s_die ("MariaDB: %s\n  %s", mysql_error (my), sql);
    MYSQL_RES *res = mysql_store_result (my);
    MYSQL_ROW row = res ? mysql_fetch_row (res) : NULL;
    int64_t value = row && row [0] ? strtoll (row [0], NULL, 10) : 0;
    if (res)
        mysql_free_result (res);
    return value;
}

//  Inserts (id, xml) as the upstream would: STATUS 'VALID', received now.
static void
s_my_insert (MYSQL_STMT *stmt, int64_t id, const char *xml)
{
    MYSQL_BIND bind [2];
    memset (bind, 0, sizeof bind);
    long long id_value = id;
    unsigned long length = (unsigned long) strlen (xml);
    bind [0].buffer_type = MYSQL_TYPE_LONGLONG;
    bind [0].buffer = &id_value;
    bind [1].buffer_type = MYSQL_TYPE_STRING;
    bind [1].buffer = (void *) xml;
    bind [1].buffer_length = length;
    bind [1].length = &length;
    if (mysql_stmt_bind_param (stmt, bind) || mysql_stmt_execute (stmt))
        s_die ("cannot insert mailbox row %" PRId64 ": %s", id, mysql_stmt_error (stmt));
}

static MYSQL_STMT *
s_my_insert_stmt (MYSQL *my)
{
    static const char *sql = "INSERT INTO CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED,"
                             " CMINMSGS_STATUS) VALUES (?, ?, UTC_TIMESTAMP(), 'VALID')";
    MYSQL_STMT *stmt = mysql_stmt_init (my);
    if (!stmt || mysql_stmt_prepare (stmt, sql, (unsigned long) strlen (sql)))
        s_die ("cannot prepare the mailbox insert: %s", mysql_error (my));
    return stmt;
}

//  ---------------------------------------------------------------------
//  Servers

static void
s_servers (s_suite_t *self, const char *command)
{
    const char *argv [] = { self->servers, command, "--env", self->env_file, NULL, NULL };
    if (strcmp (command, "start") == 0)
        argv [4] = "--durable";
    char *out = NULL, *err = NULL;
    int rc = mx_testproc_run (argv, NULL, S_WAIT_MS, &out, &err);
    if (rc != 0)
        s_die ("mx-servers %s failed (%d): %s%s", command, rc, out ? out : "", err ? err : "");
    free (out);
    free (err);
}

static void
s_watch_connect (s_suite_t *self)
{
    if (self->watch)
        PQfinish (self->watch);
    self->watch = s_pg_connect (mx_testpg_conninfo (self->pg));
    PQclear (s_query (self->watch, "LISTEN mx_test", 0, NULL));
    PQclear (s_query (self->watch, "LISTEN mx_marks", 0, NULL));
}

//  ---------------------------------------------------------------------
//  The mailbox: generated, loaded with explicit IDs; holes chosen here

static void
s_mailbox_load (s_suite_t *self)
{
    mx_gen_options_t opts;
    mx_gen_options_init (&opts);
    opts.seed = self->seed;
    opts.flights = self->messages >= 20000 ? 1000 : 100;
    opts.per_message = 50;
    opts.updates = (size_t) self->messages - (opts.flights + opts.per_message - 1) / opts.per_message;
    opts.duplicate_ppm = 30000;
    opts.malformed_ppm = 20000;
    opts.ignored_ppm = 30000;
    //  Each unsupported message holds the FIFO through every retry.
    opts.unsupported_ppm = self->messages >= 20000 ? 200 : 700;
    opts.reference_ppm = 20000;
    opts.adhoc_ppm = 10000;
    opts.schd_delete_ppm = 2000;
    opts.hostile_ppm = 100;
    opts.oversize_bytes = 64 * 1024;
    opts.fdel_type_ppm = 500000;
    char reason [256];
    if (mx_gen_options_check (&opts, reason, sizeof reason))
        s_die ("generator options: %s", reason);
    mx_gen_t *gen = mx_gen_new (&opts);
    size_t total = mx_gen_total (gen);
    size_t schedule = (opts.flights + opts.per_message - 1) / opts.per_message;

    //  Holes: some IDs never used, some messages held back to fill late.
    size_t holes = (size_t) (self->messages / 5000 > 4 ? self->messages / 5000 : 4);
    if (holes > 100)
        holes = 100;
    bool *never_before = (bool *) calloc (total, sizeof (bool));
    bool *late = (bool *) calloc (total, sizeof (bool));
    assert (never_before && late);
    for (size_t i = 0; i < holes; i++) {
        size_t at;
        do at = (size_t) s_rand_range ((int64_t) schedule + 10, (int64_t) total - 20);
        while (never_before [at] || late [at]);
        never_before [at] = true;
        do at = (size_t) s_rand_range ((int64_t) schedule + 10, (int64_t) total - 20);
        while (never_before [at] || late [at]);
        late [at] = true;
    }
    MYSQL *my = s_my (self);
    if (mysql_autocommit (my, 0))
        s_die ("MariaDB autocommit: %s", mysql_error (my));
    MYSQL_STMT *stmt = s_my_insert_stmt (my);
    int64_t id = 0;
    size_t index = 0, in_tx = 0;
    char *xml;
    mx_gen_kind_t kind;
    while ((xml = mx_gen_next (gen, &kind))) {
        self->kind_counts [kind]++;
        if (never_before [index])
            self->never [self->never_count++] = ++id;
        id++;
        if (late [index]) {
            s_late_t *entry = &self->late [self->late_count];
            entry->id = id;
            entry->xml = xml;
            entry->mode = (int) (self->late_count % 3);
            self->late_count++;
        }
        else {
            s_my_insert (stmt, id, xml);
            self->rows_loaded++;
            free (xml);
            if (++in_tx == 500) {
                if (mysql_commit (my))
                    s_die ("MariaDB commit: %s", mysql_error (my));
                in_tx = 0;
            }
        }
        index++;
    }
    if (mysql_commit (my) || mysql_autocommit (my, 1))
        s_die ("MariaDB commit: %s", mysql_error (my));
    mysql_stmt_close (stmt);
    self->max_id = id;
    free (never_before);
    free (late);
    mx_gen_destroy (&gen);
}

//  Puts back late rows: the first `count` still missing of those that fill
//  at a fault point, those whose hole W has reached, and those whose hole
//  W has passed (released).
static void
s_late_fill (s_suite_t *self, size_t count, int64_t watermark)
{
    MYSQL *my = NULL;
    MYSQL_STMT *stmt = NULL;
    for (size_t i = 0; i < self->late_count; i++) {
        s_late_t *entry = &self->late [i];
        if (entry->inserted)
            continue;
        bool now = entry->mode == S_LATE_AFTER_RELEASE ? watermark >= entry->id
                 : entry->mode == S_LATE_AT_HOLE ? watermark >= entry->id - 1 : count > 0;
        if (!now)
            continue;
        if (!stmt) {
            my = s_my (self);
            stmt = s_my_insert_stmt (my);
        }
        s_my_insert (stmt, entry->id, entry->xml);
        entry->inserted = true;
        if (entry->mode == S_LATE_AT_FAULT)
            count--;
    }
    if (stmt)
        mysql_stmt_close (stmt);
}

static bool
s_late_all_in (s_suite_t *self)
{
    for (size_t i = 0; i < self->late_count; i++)
        if (!self->late [i].inserted)
            return false;
    return true;
}

//  ---------------------------------------------------------------------
//  msgxd instances

static char **
s_env_new (const char *pg_conninfo, mx_testmb_t *mb, const char *bootstrap, bool reference, const char *semantics)
{
    zlist_t *list = zlist_new ();
    zlist_append (list, zsys_sprintf ("MSGX_DELIVERY_SEMANTICS=%s", semantics));
    zlist_append (list, zsys_sprintf ("MSGX_PG_CONNINFO=%s", pg_conninfo));
    zlist_append (list, zsys_sprintf ("MAILBOX_SHARED_MYSQL_HOST=%s", mx_testmb_host (mb)));
    zlist_append (list, zsys_sprintf ("MAILBOX_SHARED_MYSQL_PORT=%d", mx_testmb_port (mb)));
    zlist_append (list, zsys_sprintf ("MAILBOX_SHARED_MYSQL_USER=%s", mx_testmb_user (mb)));
    zlist_append (list, zsys_sprintf ("MAILBOX_SHARED_MYSQL_PASSWORD=%s", mx_testmb_password (mb)));
    zlist_append (list, zsys_sprintf ("MAILBOX_SHARED_MYSQL_DATABASE=%s", mx_testmb_database (mb)));
    const char *fixed [] = {
        "MAILBOX_SHARED_MYSQL_ENABLED=true", "MAILBOX_SHARED_MYSQL_TIME_ZONE=+00:00",
        "MSGX_PROFILE=dev", "MSGX_LOG_LEVEL=info",
        "MSGX_PIPELINE_AUTOSTART=true", "MSGX_PIPELINE_POLL_INTERVAL=50ms",
        "MSGX_PIPELINE_CLAIM_BATCH=500",
        //  A mailbox restart must not exhaust a message (the retries
        //  outlast it); an unsupported one still ends after a few seconds.
        "MSGX_PIPELINE_MAX_ATTEMPTS=5", "MSGX_PIPELINE_BACKOFF_MS=25,250,750,1500",
        "MSGX_PIPELINE_BACKFILL_PERIOD=1s", "MSGX_PIPELINE_BACKFILL_BACKOFF=200ms",
        "MSGX_PIPELINE_BACKFILL_BACKOFF_CAP=1s", "MSGX_PIPELINE_LATE_DETECT_PERIOD=1s",
        "MSGX_SCHD_FLUSH_PERIOD=200ms", "MSGX_INSTANCE_STANDBY_RETRY=200ms",
        //  Kafka outages are retried, never given up: nothing may go DEAD.
        "MSGX_DELIVERY_MAX_ATTEMPTS=100000", "MSGX_DELIVERY_BACKOFF=100ms,250ms,500ms",
        //  Short, so a broker outage ends deliveries in failure (and re-sends).
        "MSGX_KAFKA_DELIVERY_TIMEOUT=2s",
        NULL
    };
    for (size_t i = 0; fixed [i]; i++)
        zlist_append (list, strdup (fixed [i]));
    if (reference) {
        zlist_append (list, strdup ("MSGX_PIPELINE_PROCESS_BATCH=1"));
        zlist_append (list, strdup ("MSGX_PIPELINE_MAX_COMMIT_DELAY=100ms"));
    }
    else
        zlist_append (list, strdup ("MSGX_PIPELINE_MAX_COMMIT_DELAY=1s"));
    if (bootstrap)
        zlist_append (list, zsys_sprintf ("MSGX_KAFKA_BOOTSTRAP_SERVERS=%s", bootstrap));
    size_t count = zlist_size (list);
    char **env = (char **) calloc (count + 4, sizeof (char *));
    assert (env);
    size_t i = 0;
    for (char *item = (char *) zlist_first (list); item; item = (char *) zlist_next (list))
        env [i++] = item;
    zlist_destroy (&list);
    return env;
}

static void
s_env_destroy (char ***env_p)
{
    if (*env_p) {
        for (size_t i = 0; (*env_p) [i]; i++)
            free ((*env_p) [i]);
        free (*env_p);
        *env_p = NULL;
    }
}

//  Starts msgxd in slot i with env plus the slot's own admin socket and
//  HTTP port (two instances may run at once).
static mx_testproc_t *
s_msgxd_start (s_suite_t *self, char **env, int i)
{
    size_t count = 0;
    while (env [count])
        count++;
    free (self->slot_env [i][0]);
    free (self->slot_env [i][1]);
    self->slot_env [i][0] = zsys_sprintf ("MSGX_ADMIN_ENDPOINT=ipc://%s/admin-%d.sock", self->dir, i);
    self->slot_env [i][1] = zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", mx_testenv_free_port ());
    env [count] = self->slot_env [i][0];
    env [count + 1] = self->slot_env [i][1];
    const char *argv [] = { self->msgxd, NULL };
    mx_testproc_t *proc = mx_testproc_new (argv, (const char *const *) env);
    env [count] = env [count + 1] = NULL;
    if (!proc)
        s_die ("cannot start %s", self->msgxd);
    s_cleanup_pids [i] = mx_testproc_pid (proc);
    self->starts++;
    return proc;
}

static void
s_msgxd_report (mx_testproc_t *proc, const char *why)
{
    const char *err = mx_testproc_stderr (proc);
    size_t length = strlen (err);
    fprintf (stderr, "msgx-fault: %s; last output of msgxd:\n%s\n", why,
             length > 4000 ? err + length - 4000 : err);
}

//  Reaps instances that died; the supervisor brings the wanted ones back.
static void
s_supervise (s_suite_t *self)
{
    for (int i = 0; i < S_SLOTS; i++) {
        int status = 0;
        if (self->slot [i] && mx_testproc_wait (self->slot [i], 0, &status) == 0) {
            self->deaths++;
            if (WIFEXITED (status) && WEXITSTATUS (status) == 75)
                self->fenced_exits++;
            else
            if (!WIFSIGNALED (status)) {
                //  Anything else than fencing or our signal is a failure.
                s_msgxd_report (self->slot [i], "msgxd exited by itself");
                exit (1);
            }
            mx_testproc_destroy (&self->slot [i]);
            s_cleanup_pids [i] = 0;
        }
        if (!self->slot [i] && self->slot_wanted [i]) {
            self->slot [i] = s_msgxd_start (self, self->env, i);
            self->active [i] = false;
        }
    }
}

//  The slot holding the instance lock: waits until one says so.
static int
s_active (s_suite_t *self)
{
    int64_t deadline = zclock_mono () + S_WAIT_MS;
    while (zclock_mono () < deadline) {
        s_supervise (self);
        for (int i = 0; i < S_SLOTS; i++)
            if (self->slot [i] && self->active [i])
                return i;
        for (int i = 0; i < S_SLOTS; i++)
            if (self->slot [i] && mx_testproc_expect_stderr (self->slot [i], "role active", 100)) {
                self->active [i] = true;
                return i;
            }
    }
    s_die ("no msgxd became active within %d ms", S_WAIT_MS);
}

//  Waits for terminal transitions (returns how many) or any other
//  notification, for up to timeout_ms; keeps the instances supervised.
//  *any: some notification came.
static int64_t
s_wait_events (s_suite_t *self, int timeout_ms, bool *any)
{
    s_supervise (self);
    struct pollfd item = { PQsocket (self->watch), POLLIN, 0 };
    poll (&item, 1, timeout_ms);
    if (!PQconsumeInput (self->watch))
        s_die ("the watch connection broke: %s", PQerrorMessage (self->watch));
    int64_t count = 0;
    PGnotify *notify;
    *any = false;
    while ((notify = PQnotifies (self->watch))) {
        if (strcmp (notify->relname, "mx_test") == 0)
            count++;
        *any = true;
        PQfreemem (notify);
    }
    self->transitions_seen += count;
    return count;
}

//  ---------------------------------------------------------------------
//  Faults

static void
s_kafka_brokers (s_suite_t *self, bool up)
{
    rd_kafka_mock_cluster_t *cluster = mx_kafka_embedded_cluster (self->kafka);
    for (int32_t broker = 1; broker <= S_BROKERS; broker++) {
        rd_kafka_resp_err_t err = up ? rd_kafka_mock_broker_set_up (cluster, broker)
                                     : rd_kafka_mock_broker_set_down (cluster, broker);
        if (err)
            s_die ("broker %d %s: %s", broker, up ? "up" : "down", rd_kafka_err2str (err));
    }
}

static int64_t s_t0;

static void
s_fire (s_suite_t *self, s_fault_kind_t kind)
{
    self->fired [kind]++;
    int64_t now = zclock_mono ();
    switch (kind) {
        case F_KILL: {
            int active = s_active (self);
            int other = 1 - active;
            bool standby = self->slot [other] != NULL;
            mx_testproc_signal (self->slot [active], SIGKILL);
            int status = 0;
            if (mx_testproc_wait (self->slot [active], S_WAIT_MS, &status))
                s_die ("msgxd survived SIGKILL");
            self->deaths++;
            mx_testproc_destroy (&self->slot [active]);
            s_cleanup_pids [active] = 0;
            if (standby) {
                //  The standby must take over (and the killed one comes back as standby).
                if (!mx_testproc_expect_stderr (self->slot [other], "role active", S_WAIT_MS)) {
                    s_msgxd_report (self->slot [other], "the standby did not take over");
                    exit (1);
                }
                self->active [other] = true;
                self->takeovers++;
            }
            s_supervise (self);
            break;
        }
        case F_PG_CRASH: {
            int active = s_active (self);
            s_servers (self, "pg-stop-immediate");
            //  The active instance loses its lock connection: fenced, exit 75.
            int status = 0;
            if (mx_testproc_wait (self->slot [active], S_WAIT_MS, &status))
                s_die ("msgxd did not stop after PostgreSQL went away");
            if (!WIFEXITED (status) || WEXITSTATUS (status) != 75) {
                s_msgxd_report (self->slot [active], "msgxd did not exit 75 (fenced) when PostgreSQL went away");
                exit (1);
            }
            s_servers (self, "pg-start");
            s_watch_connect (self);
            s_supervise (self);
            break;
        }
        case F_MARIADB_RESTART:
            s_servers (self, "mariadb-restart");
            break;
        case F_KAFKA_DOWN:
            s_kafka_brokers (self, false);
            break;
        case F_KAFKA_UP:
            s_kafka_brokers (self, true);
            break;
        case F_PRODUCE_ERRORS:
            //  Retriable ones (librdkafka retries them) and fatal ones for
            //  the batch (the daemon re-sends, same event ids).
            rd_kafka_mock_push_request_errors (mx_kafka_embedded_cluster (self->kafka), S_API_PRODUCE, 8,
                RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
                RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR, RD_KAFKA_RESP_ERR_INVALID_MSG,
                RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
            break;
        case F_STANDBY_START: {
            int active = s_active (self);
            int other = 1 - active;
            self->slot_wanted [other] = true;
            s_supervise (self);
            if (!mx_testproc_expect_stderr (self->slot [other], "role standby", S_WAIT_MS)) {
                s_msgxd_report (self->slot [other], "the second msgxd did not become standby");
                exit (1);
            }
            break;
        }
        case F_STANDBY_STOP: {
            int active = s_active (self);
            int other = 1 - active;
            self->slot_wanted [other] = false;
            self->slot_wanted [active] = true;
            if (self->slot [other]) {
                mx_testproc_signal (self->slot [other], SIGTERM);
                int status = 0;
                if (mx_testproc_wait (self->slot [other], S_WAIT_MS, &status))
                    s_die ("the standby did not stop on SIGTERM");
                mx_testproc_destroy (&self->slot [other]);
                s_cleanup_pids [other] = 0;
            }
            break;
        }
    }
    printf ("  %6.1f s  %6" PRId64 " transitions  %s (%.1f s)\n", (double) (zclock_mono () - s_t0) / 1000.0,
            self->transitions_seen, s_fault_names [kind], (double) (zclock_mono () - now) / 1000.0);
    fflush (stdout);
}

//  The schedule: kills and the other faults in a seeded order, spread over
//  the expected terminal transitions; Kafka comes back two steps after it
//  went down, the standby runs through the middle part.
static void
s_schedule (s_suite_t *self)
{
    int others = self->quick ? 1 : 2;
    size_t count = (size_t) self->kills + (size_t) others * 4 + 2;
    s_fault_kind_t *kinds = (s_fault_kind_t *) calloc (count + 8, sizeof (s_fault_kind_t));
    size_t n = 0;
    for (int i = 0; i < self->kills; i++)
        kinds [n++] = F_KILL;
    for (int i = 0; i < others; i++) {
        kinds [n++] = F_PG_CRASH;
        kinds [n++] = F_MARIADB_RESTART;
        kinds [n++] = F_KAFKA_DOWN;
        kinds [n++] = F_PRODUCE_ERRORS;
    }
    //  Fisher-Yates
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t) s_rand_range (0, (int64_t) i);
        s_fault_kind_t t = kinds [i];
        kinds [i] = kinds [j];
        kinds [j] = t;
    }
    self->faults = (s_fault_t *) calloc (n + 8, sizeof (s_fault_t));
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == n / 5)
            self->faults [out++].kind = F_STANDBY_START;
        if (i == (n * 4) / 5)
            self->faults [out++].kind = F_STANDBY_STOP;
        self->faults [out++].kind = kinds [i];
        if (kinds [i] == F_KAFKA_DOWN)
            self->faults [out++].kind = F_KAFKA_UP;
    }
    self->fault_count = out;
    //  About 85% of the messages end while faults still strike.
    int64_t gap = (int64_t) self->messages * 85 / 100 / (int64_t) (out + 1);
    for (size_t i = 0; i < out; i++)
        //  Brokers stay down long enough for deliveries to time out.
        self->faults [i].after = self->faults [i].kind == F_KAFKA_UP
                               ? s_rand_range (gap, gap * 2) : s_rand_range (gap / 2, gap * 3 / 2);
    free (kinds);
}

//  ---------------------------------------------------------------------
//  Runs

static const char *s_done_sql =
    "SELECT (SELECT committed_up_to FROM inbox_cursor) >= $1::bigint"
    " AND NOT EXISTS (SELECT 1 FROM proc_state WHERE state IN ('PENDING', 'FAILED'))"
    " AND NOT EXISTS (SELECT 1 FROM proc_state WHERE backfill_at IS NULL AND backfill_abandoned_at IS NULL)"
    " AND NOT EXISTS (SELECT 1 FROM msg_event WHERE state = 'PENDING')";

//  Every message taken and finished (deliveries and marks may still be owed).
static const char *s_drained_sql =
    "SELECT (SELECT committed_up_to FROM inbox_cursor) >= $1::bigint"
    " AND NOT EXISTS (SELECT 1 FROM proc_state WHERE state IN ('PENDING', 'FAILED'))";

static void
s_faulted_run (s_suite_t *self)
{
    self->env = s_env_new (mx_testpg_conninfo (self->pg), self->mb, mx_kafka_embedded_bootstraps (self->kafka), false,
                           self->semantics);
    self->slot_wanted [0] = true;
    s_supervise (self);
    size_t next = 0;
    int64_t since = 0;
    size_t late_per_fault = self->late_count / (self->fault_count ? self->fault_count : 1) + 1;
    int64_t last_progress = zclock_mono ();
    while (true) {
        bool any = false;
        int64_t got = s_wait_events (self, 500, &any);
        since += got;
        if (any)
            last_progress = zclock_mono ();
        int64_t watermark = s_int (self->watch, "SELECT committed_up_to FROM inbox_cursor");
        if (next == self->fault_count && s_late_all_in (self) && s_true (self->watch, s_done_sql, self->max_id))
            break;
        //  Drained before the schedule ran out: the rest strikes at once
        //  (Kafka comes back, the last kills hit an idle daemon).
        bool idle = got == 0 && next < self->fault_count && s_true (self->watch, s_drained_sql, self->max_id);
        if (next < self->fault_count && (since >= self->faults [next].after || idle)) {
            s_fire (self, self->faults [next].kind);
            next++;
            since = 0;
            last_progress = zclock_mono ();
            //  Late rows fill while the faults go on.
            s_late_fill (self, late_per_fault, -1);
            continue;
        }
        if (next == self->fault_count)
            s_late_fill (self, self->late_count, watermark);
        else
            s_late_fill (self, 0, watermark);
        if (zclock_mono () - last_progress > S_WAIT_MS) {
            for (int i = 0; i < S_SLOTS; i++)
                if (self->slot [i])
                    s_msgxd_report (self->slot [i], "no progress");
            s_die ("no progress for %d ms (W %" PRId64 ", max ID %" PRId64 "; %" PRId64 " open messages, %" PRId64
                   " marks owed, %" PRId64 " events PENDING, %zu of %zu faults fired)", S_WAIT_MS, watermark,
                   self->max_id, s_int (self->watch, "SELECT count(*) FROM proc_state WHERE state IN ('PENDING','FAILED')"),
                   s_int (self->watch, "SELECT count(*) FROM proc_state WHERE backfill_at IS NULL"
                                       " AND backfill_abandoned_at IS NULL"),
                   s_int (self->watch, "SELECT count(*) FROM msg_event WHERE state = 'PENDING'"), next, self->fault_count);
        }
    }
    for (int i = 0; i < S_SLOTS; i++) {
        self->slot_wanted [i] = false;
        if (self->slot [i]) {
            mx_testproc_signal (self->slot [i], SIGTERM);
            int status = 0;
            if (mx_testproc_wait (self->slot [i], S_WAIT_MS, &status))
                s_die ("msgxd did not stop on SIGTERM");
            mx_testproc_destroy (&self->slot [i]);
            s_cleanup_pids [i] = 0;
        }
    }
}

//  The same accepted messages, one msgxd, no faults, one message per
//  transaction. Returns the reference's PostgreSQL database.
static mx_testpg_t *
s_reference_run (s_suite_t *self, mx_testmb_t **mb_p, double *seconds)
{
    mx_testmb_t *mb = mx_testmb_new ();
    mx_testpg_t *pg = mx_testpg_new ();
    MYSQL *my = s_my (self);
    //  Identifiers cannot be parameters; both names are the harness's own
    //  (mxt_<pid>_<counter>_<random>), never input.
    char *copy = zsys_sprintf ("INSERT INTO `%s`.CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED,"
                               " CMINMSGS_STATUS) SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED,"
                               " 'VALID' FROM `%s`.CMINMSGS", mx_testmb_database (mb), mx_testmb_database (self->mb));
    if (mysql_query (my, copy))
        s_die ("copying the mailbox: %s", mysql_error (my));
    free (copy);
    //  Late rows that came after their hole was released were never
    //  accepted: they are not in the reference either.
    MYSQL *ref = mx_testmb_connect (mb);
    MYSQL_STMT *stmt = mysql_stmt_init (ref);
    static const char *del = "DELETE FROM CMINMSGS WHERE CMINMSGS_ID = ?";
    if (!stmt || mysql_stmt_prepare (stmt, del, (unsigned long) strlen (del)))
        s_die ("cannot prepare the delete: %s", mysql_error (ref));
    for (size_t i = 0; i < self->late_count; i++) {
        if (!s_true (self->watch, "SELECT count(*) FROM released_hole WHERE $1::bigint BETWEEN id_from AND id_to",
                     self->late [i].id))
            continue;
        long long id = self->late [i].id;
        MYSQL_BIND bind;
        memset (&bind, 0, sizeof bind);
        bind.buffer_type = MYSQL_TYPE_LONGLONG;
        bind.buffer = &id;
        if (mysql_stmt_bind_param (stmt, &bind) || mysql_stmt_execute (stmt))
            s_die ("delete: %s", mysql_stmt_error (stmt));
    }
    mysql_stmt_close (stmt);
    mysql_close (ref);

    PGconn *conn = s_pg_connect (mx_testpg_conninfo (pg));
    int applied = 0;
    char *error = NULL;
    if (mx_migrate_apply (conn, &applied, &error))
        s_die ("migrations: %s", error);
    s_exec (conn, s_watch_sql);
    PQclear (s_query (conn, "LISTEN mx_test", 0, NULL));
    PQclear (s_query (conn, "LISTEN mx_marks", 0, NULL));
    char **env = s_env_new (mx_testpg_conninfo (pg), mb, NULL, true, self->semantics);
    int64_t t0 = zclock_mono ();
    mx_testproc_t *proc = s_msgxd_start (self, env, 0);
    int64_t last = zclock_mono ();
    while (!s_true (conn, "SELECT (SELECT committed_up_to FROM inbox_cursor) >= $1::bigint"
                          " AND NOT EXISTS (SELECT 1 FROM proc_state WHERE state IN ('PENDING', 'FAILED'))",
                    self->max_id)) {
        int status;
        if (mx_testproc_wait (proc, 0, &status) == 0) {
            s_msgxd_report (proc, "the reference msgxd exited");
            exit (1);
        }
        struct pollfd item = { PQsocket (conn), POLLIN, 0 };
        if (poll (&item, 1, 500) > 0)
            last = zclock_mono ();
        PQconsumeInput (conn);
        PGnotify *notify;
        while ((notify = PQnotifies (conn)))
            PQfreemem (notify);
        if (zclock_mono () - last > S_WAIT_MS) {
            s_msgxd_report (proc, "the reference run made no progress");
            exit (1);
        }
    }
    *seconds = (double) (zclock_mono () - t0) / 1000.0;
    mx_testproc_signal (proc, SIGTERM);
    int status = 0;
    if (mx_testproc_wait (proc, S_WAIT_MS, &status))
        s_die ("the reference msgxd did not stop");
    mx_testproc_destroy (&proc);
    s_cleanup_pids [0] = 0;
    s_env_destroy (&env);
    PQfinish (conn);
    *mb_p = mb;
    return pg;
}

//  ---------------------------------------------------------------------
//  Audit

//  Rows (key, text) of sql in both databases; counts keys whose text
//  differs or that only one side has.
static int64_t
s_compare (PGconn *a, PGconn *b, const char *what, const char *sql)
{
    PGresult *ra = s_query (a, sql, 0, NULL);
    PGresult *rb = s_query (b, sql, 0, NULL);
    zhashx_t *left = zhashx_new ();
    for (int row = 0; row < PQntuples (ra); row++)
        zhashx_insert (left, PQgetvalue (ra, row, 0), PQgetvalue (ra, row, 1));
    int64_t mismatches = 0;
    int shown = 0;
    for (int row = 0; row < PQntuples (rb); row++) {
        const char *key = PQgetvalue (rb, row, 0);
        const char *text = (const char *) zhashx_lookup (left, key);
        if (!text || strcmp (text, PQgetvalue (rb, row, 1)) != 0) {
            mismatches++;
            if (shown++ < 3)
                printf ("  mismatch %s %s:\n    run:       %.400s\n    reference: %.400s\n", what, key,
                        text ? text : "(none)", PQgetvalue (rb, row, 1));
        }
        zhashx_delete (left, key);
    }
    for (const char *text = (const char *) zhashx_first (left); text; text = (const char *) zhashx_next (left)) {
        mismatches++;
        if (shown++ < 3)
            printf ("  mismatch %s %s: only in the run: %.400s\n", what, (const char *) zhashx_cursor (left), text);
    }
    zhashx_destroy (&left);
    PQclear (ra);
    PQclear (rb);
    return mismatches;
}

typedef struct {
    int64_t max_id;                 //  highest event id seen for the key
    int64_t last_id;
    int64_t last_version;
    bool last_null;
    char *last_payload;
} s_key_state_t;

static void
s_key_state_free (void **item)
{
    if (*item) {
        s_key_state_t *state = (s_key_state_t *) *item;
        free (state->last_payload);
        free (state);
        *item = NULL;
    }
}

static void
s_line_free (void **item)
{
    free (*item);
    *item = NULL;
}

typedef struct {
    int64_t records;
    int64_t distinct;
    int64_t resends;                //  copies beyond the first
    int64_t redelivered;            //  events read more than once
    int64_t out_of_order;
    int64_t no_event_id;
    int64_t trimmed;                //  offsets below the low watermark
    zhashx_t *ids;                  //  event id -> present
    zhashx_t *keys;                 //  FLID -> s_key_state_t
    zlistx_t *lines;                //  every record as JSON, for the contract check
} s_topic_audit_t;

static const char *
s_header (rd_kafka_message_t *message, const char *name, char *buffer, size_t size)
{
    rd_kafka_headers_t *headers = NULL;
    const void *value = NULL;
    size_t length = 0;
    if (rd_kafka_message_headers (message, &headers) || !headers
    ||  rd_kafka_header_get_last (headers, name, &value, &length) || !value || length >= size)
        return NULL;
    memcpy (buffer, value, length);
    buffer [length] = 0;
    return buffer;
}

//  Reads a topic from its beginning to the offsets it has now.
static void
s_topic_read (const char *bootstrap, const char *topic, int partitions, s_topic_audit_t *audit)
{
    char errstr [512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    if (rd_kafka_conf_set (conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr)
    ||  rd_kafka_conf_set (conf, "group.id", "msgx-fault-audit", errstr, sizeof errstr)
    ||  rd_kafka_conf_set (conf, "enable.auto.commit", "false", errstr, sizeof errstr)
    ||  rd_kafka_conf_set (conf, "log_level", "3", errstr, sizeof errstr))
        s_die ("consumer configuration: %s", errstr);
    rd_kafka_t *consumer = rd_kafka_new (RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!consumer)
        s_die ("consumer: %s", errstr);
    int64_t *high = (int64_t *) calloc ((size_t) partitions, sizeof (int64_t));
    int64_t *next = (int64_t *) calloc ((size_t) partitions, sizeof (int64_t));
    assert (high && next);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new (partitions);
    for (int32_t p = 0; p < partitions; p++) {
        int64_t low = 0;
        rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets (consumer, topic, p, &low, &high [p], 30000);
        if (err)
            s_die ("watermarks of %s [%d]: %s", topic, p, rd_kafka_err2str (err));
        //  Records the mock cluster dropped cannot be audited: counted, bad.
        audit->trimmed += low;
        next [p] = low;
        rd_kafka_topic_partition_list_add (list, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    if (rd_kafka_assign (consumer, list))
        s_die ("cannot assign %s", topic);
    rd_kafka_topic_partition_list_destroy (list);
    audit->ids = zhashx_new ();
    audit->keys = zhashx_new ();
    audit->lines = zlistx_new ();
    zlistx_set_destructor (audit->lines, s_line_free);
    zhashx_set_destructor (audit->keys, s_key_state_free);
    int64_t deadline = zclock_mono () + S_WAIT_MS;
    while (true) {
        bool all = true;
        for (int p = 0; p < partitions; p++)
            if (next [p] < high [p])
                all = false;
        if (all)
            break;
        if (zclock_mono () > deadline)
            s_die ("reading %s took too long", topic);
        rd_kafka_message_t *message = rd_kafka_consumer_poll (consumer, 1000);
        if (!message)
            continue;
        if (message->err) {
            if (message->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                s_die ("consuming %s: %s", topic, rd_kafka_message_errstr (message));
            rd_kafka_message_destroy (message);
            continue;
        }
        next [message->partition] = message->offset + 1;
        audit->records++;
        zlistx_add_end (audit->lines, mx_testkafka_message_json (message));
        char id_text [32], version_text [32];
        char key [32];
        size_t key_length = message->key_len < sizeof key - 1 ? message->key_len : sizeof key - 1;
        memcpy (key, message->key ? message->key : "", message->key ? key_length : 0);
        key [message->key ? key_length : 0] = 0;
        if (!s_header (message, "msgx-event-id", id_text, sizeof id_text)) {
            audit->no_event_id++;
            rd_kafka_message_destroy (message);
            continue;
        }
        int64_t id = strtoll (id_text, NULL, 10);
        int64_t version = s_header (message, "msgx-state-version", version_text, sizeof version_text)
                        ? strtoll (version_text, NULL, 10) : -1;
        s_key_state_t *state = (s_key_state_t *) zhashx_lookup (audit->keys, key);
        if (!state) {
            state = (s_key_state_t *) calloc (1, sizeof *state);
            assert (state);
            zhashx_insert (audit->keys, key, state);
        }
        intptr_t copies = (intptr_t) zhashx_lookup (audit->ids, id_text);
        if (copies) {
            audit->resends++;               //  at-least-once: the same id again
            audit->redelivered += copies == 1;
            zhashx_update (audit->ids, id_text, (void *) (copies + 1));
        }
        else {
            zhashx_insert (audit->ids, id_text, (void *) 1);
            audit->distinct++;
            if (id < state->max_id)
                audit->out_of_order++;      //  a new id behind a newer one: reordered
        }
        if (id > state->max_id)
            state->max_id = id;
        state->last_id = id;
        state->last_version = version;
        state->last_null = message->payload == NULL;
        free (state->last_payload);
        state->last_payload = message->payload ? strndup ((const char *) message->payload, message->len) : NULL;
        rd_kafka_message_destroy (message);
    }
    rd_kafka_consumer_close (consumer);
    rd_kafka_destroy (consumer);
    free (high);
    free (next);
}

static void
s_topic_audit_destroy (s_topic_audit_t *audit)
{
    zhashx_destroy (&audit->ids);
    zhashx_destroy (&audit->keys);
    zlistx_destroy (&audit->lines);
}

//  Records of both topics that break the consumer contract (docs/consumers.md),
//  checked by the same validator as the integration tests; the report on
//  stderr when there are any.
static int64_t
s_contract_invalid (s_topic_audit_t *msg, s_topic_audit_t *schd)
{
    size_t count = zlistx_size (msg->lines) + zlistx_size (schd->lines);
    const char **lines = (const char **) calloc (count + 1, sizeof (char *));
    assert (lines);
    size_t at = 0;
    for (const char *line = zlistx_first (msg->lines); line; line = zlistx_next (msg->lines))
        lines [at++] = line;
    for (const char *line = zlistx_first (schd->lines); line; line = zlistx_next (schd->lines))
        lines [at++] = line;
    char *report = NULL;
    int rc = mx_testkafka_validate_lines (lines, count, S_TOPIC_MSG, S_TOPIC_SCHD, &report);
    free (lines);
    //  The summary, last line: "N records, V valid, I invalid (...)".
    const char *summary = strstr (report, " valid, ");
    int64_t invalid = summary ? strtoll (summary + strlen (" valid, "), NULL, 10) : -1;
    if (rc != 0 || invalid != 0) {
        fprintf (stderr, "%s", report);
        if (invalid <= 0)
            invalid = 1;
    }
    free (report);
    return invalid;
}

typedef struct {
    const char *name;
    int64_t value;
    bool bad;                       //  must be 0
} s_figure_t;

static s_figure_t s_figures [64];
static size_t s_figure_count;

static void
s_figure (const char *name, int64_t value, bool bad)
{
    assert (s_figure_count < sizeof s_figures / sizeof s_figures [0]);
    s_figures [s_figure_count++] = (s_figure_t) { name, value, bad };
}

static int
s_audit (s_suite_t *self, PGconn *conn, PGconn *ref, double run_seconds, double ref_seconds)
{
    MYSQL *my = s_my (self);
    int64_t mailbox_rows = s_my_int (my, "SELECT COUNT(*) FROM CMINMSGS");
    int64_t marked = s_my_int (my, "SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL"
                                   " AND CMINMSGS_STATUS = 'PROCESSED'");
    int64_t rows = s_int (conn, "SELECT count(*) FROM proc_state");
    int64_t released = s_int (conn, "SELECT coalesce (sum (id_to - id_from + 1), 0) FROM released_hole");
    int64_t in_holes = s_int (conn, "SELECT count(*) FROM proc_state p JOIN released_hole h"
                                    " ON p.msg_id BETWEEN h.id_from AND h.id_to");
    //  Every ID 1..max: a proc_state row or a released hole, never both, never neither.
    int64_t covered = s_int_param (conn,
        "SELECT count(*) FROM generate_series (1, $1::bigint) g (id)"
        " WHERE EXISTS (SELECT 1 FROM proc_state WHERE msg_id = g.id)"
        "    OR EXISTS (SELECT 1 FROM released_hole WHERE g.id BETWEEN id_from AND id_to)", self->max_id);
    //  Lost: a message the mailbox had when W passed it, not in proc_state.
    //  The late rows put back after their release are the only mailbox rows
    //  a released hole may hold.
    int64_t late_released = 0, late_processed = 0, planned_in_holes = 0;
    for (size_t i = 0; i < self->late_count; i++) {
        bool in_hole = s_true (conn, "SELECT count(*) FROM released_hole WHERE $1::bigint BETWEEN id_from AND id_to",
                               self->late [i].id);
        late_released += in_hole;
        late_processed += s_true (conn, "SELECT count(*) FROM proc_state WHERE msg_id = $1::bigint",
                                  self->late [i].id);
        planned_in_holes += in_hole;
    }
    for (size_t i = 0; i < self->never_count; i++)
        planned_in_holes += s_true (conn, "SELECT count(*) FROM released_hole WHERE $1::bigint BETWEEN id_from AND id_to",
                                    self->never [i]);
    //  Each term on its own: a surplus in one must not hide a loss in another.
    int64_t not_taken = mailbox_rows - late_released - rows;      //  mailbox rows never taken in
    int64_t real_released = released - planned_in_holes;         //  released IDs that were real messages
    int64_t uncovered = self->max_id - covered;                   //  IDs neither processed nor released
    int64_t lost = (not_taken > 0 ? not_taken : 0) + (real_released > 0 ? real_released : 0) + uncovered;
    if (not_taken < 0 || real_released < 0)
        printf ("  more proc_state rows or planned holes than expected: %" PRId64 ", %" PRId64 "\n",
                not_taken, real_released);
    int64_t surplus = (not_taken < 0 ? -not_taken : 0) + (real_released < 0 ? -real_released : 0);
    int64_t not_terminal = s_int (conn, "SELECT count(*) FROM proc_state WHERE state NOT IN ('SUCCEEDED','SKIPPED','DEAD')");
    int64_t transitions = s_int (conn, "SELECT count(*) FROM mx_test_order");
    int64_t distinct_transitions = s_int (conn, "SELECT count(DISTINCT msg_id) FROM mx_test_order");
    int64_t reordered = s_int (conn,
        "SELECT count(*) FROM (SELECT min_id, max (max_id) OVER (ORDER BY tx ROWS BETWEEN UNBOUNDED PRECEDING"
        " AND 1 PRECEDING) AS before FROM (SELECT tx, min (msg_id) AS min_id, max (msg_id) AS max_id"
        " FROM mx_test_order GROUP BY tx) g) w WHERE min_id < before");
    reordered += s_int (conn, "SELECT count(*) FROM (SELECT finished_at < lag (finished_at) OVER (ORDER BY msg_id)"
                              " AS bad FROM proc_state) t WHERE bad");
    //  Double effect: per flight the KAFKA:msg versions run 1..n without
    //  gap or repeat, KAFKA:schd's (one per flight and batch) repeat none,
    //  both end at the flight's version and follow the event ids; each
    //  identity is bound by one message only.
    int64_t double_effects = s_int (conn,
        "SELECT count(*) FROM (SELECT target, flid, count(*) AS n, count(DISTINCT state_version) AS d,"
        " min(state_version) AS lo, max(state_version) AS hi FROM msg_event WHERE target <> 'KAFKA:ref'"
        " GROUP BY target, flid) e"
        " LEFT JOIN flight_schd f USING (flid)"
        " WHERE e.n <> e.d OR e.hi IS DISTINCT FROM f.state_version"
        "    OR (e.target = 'KAFKA:msg' AND (e.lo <> 1 OR e.hi <> e.n))");
    double_effects += s_int (conn,
        "SELECT count(*) FROM (SELECT state_version < lag (state_version) OVER"
        " (PARTITION BY target, partition_key ORDER BY event_id) AS bad FROM msg_event) t WHERE bad");
    double_effects += s_int (conn, "SELECT count(*) FROM identity i LEFT JOIN proc_state p"
                                   " ON p.identity_key = i.identity_key WHERE p.msg_id IS DISTINCT FROM i.msg_id");
    double_effects += transitions - distinct_transitions;
    int64_t unmarked = s_int (conn, "SELECT count(*) FROM proc_state WHERE state IN ('SUCCEEDED','SKIPPED','DEAD')"
                                    " AND backfill_at IS NULL AND (backfill_abandoned_at IS NULL"
                                    " OR backfill_abandoned_reason IS NULL)");
    int64_t abandoned = s_int (conn, "SELECT count(*) FROM proc_state WHERE backfill_abandoned_at IS NOT NULL");
    int64_t confirmed = s_int (conn, "SELECT count(*) FROM proc_state WHERE backfill_at IS NOT NULL");
    //  Confirmed in PostgreSQL but not in the mailbox: a mark that was
    //  claimed and is not there.
    unmarked += confirmed > marked ? confirmed - marked : 0;

    //  Against the reference.
    static const char *sets [] = {
        "flight_stand", "flight_gate", "flight_checkin", "flight_carousel", "flight_chute",
        "flight_airbridge", "flight_chock", "flight_delay", "flight_route_point", NULL
    };
    int64_t state_mismatch = s_compare (conn, ref, "flight",
        "SELECT flid::text, (to_jsonb (f) - 'created_at' - 'updated_at' - 'deleted_at')::text FROM flight_schd f");
    for (size_t i = 0; sets [i]; i++) {
        //  Table names from the fixed list above, not input.
        char *sql = zsys_sprintf ("SELECT flid::text, jsonb_agg (to_jsonb (t) ORDER BY to_jsonb (t)::text)::text"
                                  " FROM %s t GROUP BY flid", sets [i]);
        state_mismatch += s_compare (conn, ref, sets [i], sql);
        free (sql);
    }
    state_mismatch += s_compare (conn, ref, "ref_master",
        "SELECT rtype || '/' || rkey, (to_jsonb (r) - 'updated_at')::text FROM ref_master r");
    int64_t message_mismatch = s_compare (conn, ref, "message",
        "SELECT msg_id::text, concat_ws ('|', state, error_class, outcome, msg_type, msg_styp, identity_key)"
        " FROM proc_state");
    //  KAFKA:schd has one event per flight and batch, and batches differ
    //  between the runs: its newest event per flight is compared, and each
    //  of its states must be that of the KAFKA:msg event of its version.
    int64_t event_mismatch = s_compare (conn, ref, "events",
        "SELECT target || '/' || partition_key || '/' || state_version, concat_ws ('|', event_type, msg_id)"
        " FROM msg_event WHERE target <> 'KAFKA:schd'");
    event_mismatch += s_compare (conn, ref, "newest KAFKA:schd events",
        "SELECT DISTINCT ON (partition_key) partition_key, concat_ws ('|', event_type, state_version, msg_id)"
        " FROM msg_event WHERE target = 'KAFKA:schd' ORDER BY partition_key, event_id DESC");
    event_mismatch += s_int (conn,
        "SELECT count(*) FROM msg_event s LEFT JOIN msg_event m"
        "  ON m.target = 'KAFKA:msg' AND m.flid = s.flid AND m.state_version = s.state_version"
        " WHERE s.target = 'KAFKA:schd' AND s.msg_id IS NOT NULL AND (m.event_id IS NULL"
        "   OR s.payload::jsonb IS DISTINCT FROM"
        "      CASE WHEN s.event_type = 'TOMBSTONE' THEN NULL ELSE m.payload::jsonb -> 'state' END)");

    //  Kafka.
    bool exactly_once = strcmp (self->semantics, "at-least-once") != 0;
    s_topic_audit_t msg = { 0 }, schd = { 0 };
    s_topic_read (mx_kafka_embedded_bootstraps (self->kafka), S_TOPIC_MSG, self->partitions, &msg);
    s_topic_read (mx_kafka_embedded_bootstraps (self->kafka), S_TOPIC_SCHD, self->partitions, &schd);
    //  KAFKA:ref (reference data, key LIST:KEY): audited like KAFKA:msg.
    s_topic_audit_t refdata = { 0 };
    s_topic_read (mx_kafka_embedded_bootstraps (self->kafka), S_TOPIC_REF, self->partitions, &refdata);
    int64_t missing = 0, phantom = 0, schd_mismatch = 0;
    PGresult *res = s_query (conn, "SELECT event_id::text, target, coalesce (merged_into::text, ''), state"
                                   " FROM msg_event ORDER BY event_id", 0, NULL);
    zhashx_t *known = zhashx_new ();
    for (int row = 0; row < PQntuples (res); row++) {
        const char *id = PQgetvalue (res, row, 0);
        bool is_msg = strcmp (PQgetvalue (res, row, 1), "KAFKA:msg") == 0;
        bool is_ref = strcmp (PQgetvalue (res, row, 1), "KAFKA:ref") == 0;
        zhashx_insert (known, id, (void *) (is_msg ? "m" : is_ref ? "r" : "s"));
        if (strcmp (PQgetvalue (res, row, 3), "SENT") != 0)
            continue;
        if (is_msg || is_ref)
            missing += zhashx_lookup (is_msg ? msg.ids : refdata.ids, id) == NULL;
        else {
            const char *carrier = *PQgetvalue (res, row, 2) ? PQgetvalue (res, row, 2) : id;
            missing += zhashx_lookup (schd.ids, carrier) == NULL;
        }
    }
    PQclear (res);
    for (const void *v = zhashx_first (msg.ids); v; v = zhashx_next (msg.ids)) {
        const char *kind = (const char *) zhashx_lookup (known, (const char *) zhashx_cursor (msg.ids));
        phantom += !kind || *kind != 'm';
    }
    for (const void *v = zhashx_first (schd.ids); v; v = zhashx_next (schd.ids)) {
        const char *kind = (const char *) zhashx_lookup (known, (const char *) zhashx_cursor (schd.ids));
        phantom += !kind || *kind != 's';
    }
    for (const void *v = zhashx_first (refdata.ids); v; v = zhashx_next (refdata.ids)) {
        const char *kind = (const char *) zhashx_lookup (known, (const char *) zhashx_cursor (refdata.ids));
        phantom += !kind || *kind != 'r';
    }
    zhashx_destroy (&known);
    //  The last KAFKA:schd record per flight is its final state: the
    //  version, tombstone iff deleted, and the payload of the newest event.
    res = s_query (conn, "SELECT f.flid::text, f.state_version, f.lifecycle = 'DELETED', coalesce (e.payload, '')"
                         " FROM flight_schd f LEFT JOIN (SELECT DISTINCT ON (flid) flid, payload FROM msg_event"
                         "  WHERE target = 'KAFKA:schd' ORDER BY flid, state_version DESC) e USING (flid)", 0, NULL);
    int shown = 0;
    for (int row = 0; row < PQntuples (res); row++) {
        s_key_state_t *state = (s_key_state_t *) zhashx_lookup (schd.keys, PQgetvalue (res, row, 0));
        int64_t version = strtoll (PQgetvalue (res, row, 1), NULL, 10);
        bool deleted = strcmp (PQgetvalue (res, row, 2), "t") == 0;
        const char *payload = PQgetvalue (res, row, 3);
        bool ok = state && state->last_version == version && state->last_null == deleted
               && (deleted || (state->last_payload && strcmp (state->last_payload, payload) == 0));
        if (!ok) {
            schd_mismatch++;
            if (shown++ < 3)
                printf ("  KAFKA:schd mismatch flight %s: version %" PRId64 "/%" PRId64 " deleted %d/%d\n",
                        PQgetvalue (res, row, 0), state ? state->last_version : -1, version,
                        state ? state->last_null : -1, deleted);
        }
    }
    PQclear (res);
    int64_t undelivered = s_int (conn, "SELECT count(*) FROM msg_event WHERE state <> 'SENT'");

    //  The table.
    int64_t ids = self->max_id;
    s_figure ("mailbox IDs (1..max)", ids, false);
    s_figure ("mailbox rows", mailbox_rows, false);
    s_figure ("proc_state rows", rows, false);
    s_figure ("  SUCCEEDED", s_int (conn, "SELECT count(*) FROM proc_state WHERE state = 'SUCCEEDED'"), false);
    s_figure ("  SKIPPED", s_int (conn, "SELECT count(*) FROM proc_state WHERE state = 'SKIPPED'"), false);
    s_figure ("    of which duplicates", s_int (conn, "SELECT count(*) FROM proc_state WHERE outcome LIKE 'duplicate-of:%'"), false);
    s_figure ("    of which ignored", s_int (conn, "SELECT count(*) FROM proc_state WHERE outcome LIKE 'ignored:%'"), false);
    s_figure ("  DEAD", s_int (conn, "SELECT count(*) FROM proc_state WHERE state = 'DEAD'"), false);
    s_figure ("    MALFORMED", s_int (conn, "SELECT count(*) FROM proc_state WHERE error_class = 'MALFORMED'"), false);
    s_figure ("    PROTOCOL", s_int (conn, "SELECT count(*) FROM proc_state WHERE error_class = 'PROTOCOL'"), false);
    s_figure ("    EXHAUSTED", s_int (conn, "SELECT count(*) FROM proc_state WHERE error_class = 'EXHAUSTED'"), false);
    s_figure ("  not terminal", not_terminal, true);
    s_figure ("aged holes (IDs released)", released, false);
    s_figure ("  never filled", (int64_t) self->never_count, false);
    s_figure ("  filled after release (late arrivals)", late_released, false);
    s_figure ("late rows processed in order", late_processed, false);
    s_figure ("late arrivals detected", s_int (conn, "SELECT coalesce (sum (cardinality (late_ids)), 0) FROM released_hole"), false);
    s_figure ("processed inside a released hole", in_holes, true);
    s_figure ("lost", lost, true);
    s_figure ("unexpected rows or holes", surplus, true);
    s_figure ("duplicated effects", double_effects, true);
    s_figure ("reordered", reordered, true);
    s_figure ("state mismatches vs reference", state_mismatch, true);
    s_figure ("terminal-state mismatches vs reference", message_mismatch, true);
    s_figure ("event mismatches vs reference", event_mismatch, true);
    s_figure ("outbox events", s_int (conn, "SELECT count(*) FROM msg_event"), false);
    s_figure ("  not SENT (PENDING or DEAD)", undelivered, true);
    s_figure ("Kafka KAFKA:msg records", msg.records, false);
    s_figure ("  distinct event ids", msg.distinct, false);
    s_figure ("  redelivered (events read more than once)", msg.redelivered, exactly_once);
    s_figure ("  copies beyond the first", msg.resends, exactly_once);
    s_figure ("  out of order", msg.out_of_order, true);
    s_figure ("Kafka KAFKA:schd records", schd.records, false);
    s_figure ("  distinct event ids", schd.distinct, false);
    s_figure ("  redelivered (events read more than once)", schd.redelivered, exactly_once);
    s_figure ("  copies beyond the first", schd.resends, exactly_once);
    s_figure ("  out of order", schd.out_of_order, true);
    s_figure ("Kafka KAFKA:ref records", refdata.records, false);
    s_figure ("  redelivered (events read more than once)", refdata.redelivered, exactly_once);
    s_figure ("  out of order", refdata.out_of_order, true);
    s_figure ("redelivered", msg.redelivered + schd.redelivered + refdata.redelivered, exactly_once);
    s_figure ("records dropped by mock retention", msg.trimmed + schd.trimmed + refdata.trimmed, true);
    s_figure ("records without an event id", msg.no_event_id + schd.no_event_id + refdata.no_event_id, true);
    s_figure ("records of no outbox event", phantom, true);
    s_figure ("acknowledged but missing", missing, true);
    s_figure ("final KAFKA:schd mismatches", schd_mismatch, true);
    s_figure ("records breaking the consumer contract", s_contract_invalid (&msg, &schd), true);
    s_figure ("processed marks in the mailbox", marked, false);
    s_figure ("marks abandoned with a reason", abandoned, false);
    s_figure ("unmarked without reason", unmarked, true);
    s_topic_audit_destroy (&msg);
    s_topic_audit_destroy (&schd);
    s_topic_audit_destroy (&refdata);

    printf ("\nfault schedule (seed %" PRIu64 ", %s):\n", self->seed, self->semantics);
    for (int kind = 0; kind <= F_STANDBY_STOP; kind++)
        printf ("  %-44s %zu\n", s_fault_names [kind], self->fired [kind]);
    printf ("  %-44s %" PRId64 "\n", "msgxd starts", self->starts);
    printf ("  %-44s %" PRId64 "\n", "msgxd deaths", self->deaths);
    printf ("  %-44s %" PRId64 "\n", "  of which fenced exits (75)", self->fenced_exits);
    printf ("  %-44s %" PRId64 "\n", "standby takeovers", self->takeovers);
    printf ("\ngenerated messages:");
    for (int kind = 0; kind < MX_GEN_KINDS; kind++)
        if (self->kind_counts [kind])
            printf (" %s %zu", mx_gen_kind_name ((mx_gen_kind_t) kind), self->kind_counts [kind]);
    printf ("\n\naudit:\n");
    int bad = 0;
    for (size_t i = 0; i < s_figure_count; i++) {
        bool wrong = s_figures [i].bad && s_figures [i].value != 0;
        bad += wrong;
        printf ("  %-44s %10" PRId64 "%s\n", s_figures [i].name, s_figures [i].value, wrong ? "   <-- must be 0" : "");
    }
    printf ("\nfaulted run %.1f s, reference run %.1f s (one message per transaction)\n", run_seconds, ref_seconds);
    printf ("%s%s\n", bad ? "AUDIT FAILED" : "audit clean: 0 lost, 0 reordered, 0 double effects, 0 unmarked without reason",
            bad || !exactly_once ? "" : ", 0 redelivered");
    return bad ? 1 : 0;
}

//  ---------------------------------------------------------------------

static void
s_usage (void)
{
    fprintf (stderr, "usage: msgx-fault [--messages N] [--kills K] [--seed S] [--build DIR] [--source DIR] [--quick]"
                     " [--semantics exactly-once|at-least-once]\n");
    exit (2);
}

int
main (int argc, char *argv [])
{
    s_suite_t suite = { .messages = 100000, .kills = 20, .seed = 20261130, .semantics = "exactly-once" };
    s_suite_t *self = &suite;
    self->build = getenv ("MX_BUILD_DIR");
    self->source = getenv ("MX_SOURCE_DIR");
    static struct option options [] = {
        { "messages", required_argument, NULL, 'm' }, { "kills", required_argument, NULL, 'k' },
        { "seed", required_argument, NULL, 's' }, { "build", required_argument, NULL, 'b' },
        { "source", required_argument, NULL, 'S' }, { "quick", no_argument, NULL, 'q' },
        { "semantics", required_argument, NULL, 'e' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "", options, NULL)) != -1) {
        switch (option) {
            case 'm': self->messages = atoi (optarg); break;
            case 'k': self->kills = atoi (optarg); break;
            case 's': self->seed = strtoull (optarg, NULL, 10); break;
            case 'b': self->build = optarg; break;
            case 'S': self->source = optarg; break;
            case 'q': self->quick = true; break;
            case 'e': self->semantics = optarg; break;
            default: s_usage ();
        }
    }
    if (optind < argc || self->messages < 1000 || self->kills < 1 || !self->build || !self->source
    ||  (strcmp (self->semantics, "exactly-once") != 0 && strcmp (self->semantics, "at-least-once") != 0))
        s_usage ();
    s_rng_state = self->seed;
    zsys_init ();
    zsys_set_logstream (NULL);
    signal (SIGPIPE, SIG_IGN);
    setvbuf (stdout, NULL, _IOLBF, 0);

    self->dir = mx_testenv_tmpdir ();
    self->env_file = zsys_sprintf ("%s/servers.env", self->dir);
    //  The record validator of the harness finds the sources here.
    setenv ("MX_SOURCE_DIR", self->source, 1);
    self->servers = zsys_sprintf ("%s/deploy/local/mx-servers", self->source);
    self->msgxd = zsys_sprintf ("%s/cmd/msgxd", self->build);
    printf ("msgx-fault: seed %" PRIu64 ", %d messages, %d kills, %s\n", self->seed, self->messages, self->kills,
            self->semantics);
    int64_t t0 = zclock_mono ();
    s_cleanup_servers = self->servers;
    s_cleanup_env = self->env_file;
    atexit (s_cleanup);
    s_servers (self, "start");
    setenv ("MX_TEST_ENV", self->env_file, 1);
    self->pg = mx_testpg_new ();
    self->mb = mx_testmb_new ();
    const char *topics [] = { S_TOPIC_MSG, S_TOPIC_SCHD, S_TOPIC_REF, NULL };
    char *error = NULL;
    //  About 3 KiB per state document, one per message and topic; keys
    //  (FLIDs) spread unevenly, so eight times the room.
    self->partitions = (int) ((int64_t) self->messages * 3072 * 8 / S_PARTITION_BYTES) + 3;
    self->kafka = mx_kafka_embedded_new (S_BROKERS, topics, self->partitions, &error);
    if (!self->kafka)
        s_die ("Kafka mock cluster: %s", error);

    PGconn *conn = s_pg_connect (mx_testpg_conninfo (self->pg));
    int applied = 0;
    if (mx_migrate_apply (conn, &applied, &error))
        s_die ("migrations: %s", error);
    s_exec (conn, s_watch_sql);
    PQfinish (conn);
    s_watch_connect (self);

    s_mailbox_load (self);
    printf ("mailbox: %" PRId64 " rows loaded, IDs 1..%" PRId64 ", %zu holes never filled, %zu late rows (%.1f s)\n",
            self->rows_loaded, self->max_id, self->never_count, self->late_count,
            (double) (zclock_mono () - t0) / 1000.0);
    s_schedule (self);
    printf ("fault schedule: %zu faults\n", self->fault_count);

    int64_t t1 = s_t0 = zclock_mono ();
    s_faulted_run (self);
    double run_seconds = (double) (zclock_mono () - t1) / 1000.0;
    printf ("faulted run done in %.1f s\n", run_seconds);

    mx_testmb_t *ref_mb = NULL;
    double ref_seconds = 0;
    mx_testpg_t *ref_pg = s_reference_run (self, &ref_mb, &ref_seconds);
    PGconn *ref = s_pg_connect (mx_testpg_conninfo (ref_pg));
    int rc = s_audit (self, self->watch, ref, run_seconds, ref_seconds);
    printf ("total %.1f s\n", (double) (zclock_mono () - t0) / 1000.0);

    PQfinish (ref);
    PQfinish (self->watch);
    if (self->my)
        mysql_close (self->my);
    mx_testpg_destroy (&ref_pg);
    mx_testmb_destroy (&ref_mb);
    mx_testpg_destroy (&self->pg);
    mx_testmb_destroy (&self->mb);
    mx_kafka_embedded_destroy (&self->kafka);
    s_servers (self, "stop");
    s_cleanup_servers = NULL;
    memset (s_cleanup_pids, 0, sizeof s_cleanup_pids);
    mx_testenv_rmtree (self->dir);
    for (size_t i = 0; i < self->late_count; i++)
        free (self->late [i].xml);
    for (int i = 0; i < S_SLOTS; i++) {
        free (self->slot_env [i][0]);
        free (self->slot_env [i][1]);
    }
    s_env_destroy (&self->env);
    free (self->faults);
    free (self->dir);
    free (self->env_file);
    free (self->servers);
    free (self->msgxd);
    zsys_shutdown ();
    return rc;
}
