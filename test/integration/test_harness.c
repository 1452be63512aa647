/*  The test harness itself: fresh databases on the real servers, the
    mailbox DDL, Kafka mock clusters reached over TCP, child processes.
*/
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>
#include <libpq-fe.h>

#include "mx_testenv.h"
#include "mx_testproc.h"

static int64_t
s_now_ms (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

// ---------------------------------------------------------------- PostgreSQL

static PGconn *
s_pg_connect (const char *conninfo)
{
    PGconn *conn = PQconnectdb (conninfo);
    if (PQstatus (conn) != CONNECTION_OK)
        fail_msg ("connect %s: %s", conninfo, PQerrorMessage (conn));
    return conn;
}

static void
s_pg_ok (PGconn *conn, const char *sql)
{
    PGresult *result = PQexec (conn, sql);
    if (PQresultStatus (result) != PGRES_COMMAND_OK)
        fail_msg ("%s: %s", sql, PQresultErrorMessage (result));
    PQclear (result);
}

//  Number of databases named `dbname` on the server.
static int
s_pg_database_count (const char *dbname)
{
    PGconn *admin = s_pg_connect (mx_testenv_get ("MX_PG_CONNINFO"));
    const char *params [1] = { dbname };
    PGresult *result = PQexecParams (admin,
        "SELECT count(*) FROM pg_database WHERE datname = $1", 1, NULL, params, NULL, NULL, 0);
    assert_int_equal (PQresultStatus (result), PGRES_TUPLES_OK);
    int count = atoi (PQgetvalue (result, 0, 0));
    PQclear (result);
    PQfinish (admin);
    return count;
}

static void
test_pg_fresh_database (void **state)
{
    mx_testpg_t *pg = mx_testpg_new ();
    assert_non_null (pg);
    const char *dbname = mx_testpg_dbname (pg);
    assert_true (strncmp (dbname, "mxt_", 4) == 0);
    assert_non_null (strstr (mx_testpg_conninfo (pg), "host=127.0.0.1 "));
    assert_non_null (strstr (mx_testpg_conninfo (pg), dbname));
    char *saved_name = strdup (dbname);

    PGconn *conn = s_pg_connect (mx_testpg_conninfo (pg));
    PGresult *result = PQexec (conn, "SELECT current_database(), "
        "(SELECT count(*) FROM pg_tables WHERE schemaname = 'public')");
    assert_int_equal (PQresultStatus (result), PGRES_TUPLES_OK);
    assert_string_equal (PQgetvalue (result, 0, 0), saved_name);
    assert_string_equal (PQgetvalue (result, 0, 1), "0");
    PQclear (result);

    s_pg_ok (conn, "CREATE TABLE probe (id bigint PRIMARY KEY, text text NOT NULL)");
    const char *params [2] = { "7", "航班 ok" };
    result = PQexecParams (conn, "INSERT INTO probe VALUES ($1, $2)", 2, NULL, params, NULL, NULL, 0);
    assert_int_equal (PQresultStatus (result), PGRES_COMMAND_OK);
    PQclear (result);
    result = PQexec (conn, "SELECT text FROM probe WHERE id = 7");
    assert_int_equal (PQntuples (result), 1);
    assert_string_equal (PQgetvalue (result, 0, 0), "航班 ok");
    PQclear (result);

    //  The connection is still open: destroy must terminate it and drop.
    assert_int_equal (s_pg_database_count (saved_name), 1);
    mx_testpg_destroy (&pg);
    assert_null (pg);
    mx_testpg_destroy (&pg);
    assert_int_equal (s_pg_database_count (saved_name), 0);
    result = PQexec (conn, "SELECT 1");
    assert_int_not_equal (PQresultStatus (result), PGRES_TUPLES_OK);
    PQclear (result);
    PQfinish (conn);
    free (saved_name);
}

static void
test_pg_independent (void **state)
{
    mx_testpg_t *first = mx_testpg_new ();
    mx_testpg_t *second = mx_testpg_new ();
    assert_string_not_equal (mx_testpg_dbname (first), mx_testpg_dbname (second));

    PGconn *one = s_pg_connect (mx_testpg_conninfo (first));
    PGconn *two = s_pg_connect (mx_testpg_conninfo (second));
    s_pg_ok (one, "CREATE TABLE only_in_first (id int)");
    PGresult *result = PQexec (two, "SELECT to_regclass('only_in_first') IS NULL");
    assert_string_equal (PQgetvalue (result, 0, 0), "t");
    PQclear (result);
    PQfinish (one);
    PQfinish (two);

    char *second_name = strdup (mx_testpg_dbname (second));
    mx_testpg_destroy (&first);
    assert_int_equal (s_pg_database_count (second_name), 1);
    mx_testpg_destroy (&second);
    assert_int_equal (s_pg_database_count (second_name), 0);
    free (second_name);
}

// ---------------------------------------------------------------- MariaDB

static void
s_mb_query (MYSQL *conn, const char *sql)
{
    if (mysql_query (conn, sql))
        fail_msg ("%s: %s", sql, mysql_error (conn));
}

//  Single-value query without parameters; returns a copy (NULL for SQL NULL).
static char *
s_mb_value (MYSQL *conn, const char *sql)
{
    s_mb_query (conn, sql);
    MYSQL_RES *result = mysql_store_result (conn);
    assert_non_null (result);
    MYSQL_ROW row = mysql_fetch_row (result);
    assert_non_null (row);
    char *value = row [0]? strdup (row [0]): NULL;
    mysql_free_result (result);
    return value;
}

static int
s_mb_schema_count (const char *database)
{
    MYSQL *admin = mysql_init (NULL);
    assert_non_null (mysql_real_connect (admin, mx_testenv_get ("MX_MYSQL_HOST"),
        mx_testenv_get ("MX_MYSQL_USER"), mx_testenv_get ("MX_MYSQL_PASSWORD"), NULL,
        (unsigned) atoi (mx_testenv_get ("MX_MYSQL_PORT")), NULL, 0));
    MYSQL_STMT *stmt = mysql_stmt_init (admin);
    const char *sql = "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?";
    assert_int_equal (mysql_stmt_prepare (stmt, sql, strlen (sql)), 0);
    MYSQL_BIND param;
    memset (&param, 0, sizeof param);
    unsigned long length = (unsigned long) strlen (database);
    param.buffer_type = MYSQL_TYPE_STRING;
    param.buffer = (void *) database;
    param.buffer_length = length;
    param.length = &length;
    long long count = -1;
    MYSQL_BIND result;
    memset (&result, 0, sizeof result);
    result.buffer_type = MYSQL_TYPE_LONGLONG;
    result.buffer = &count;
    assert_int_equal (mysql_stmt_bind_param (stmt, &param), 0);
    assert_int_equal (mysql_stmt_execute (stmt), 0);
    assert_int_equal (mysql_stmt_bind_result (stmt, &result), 0);
    assert_int_equal (mysql_stmt_fetch (stmt), 0);
    mysql_stmt_close (stmt);
    mysql_close (admin);
    return (int) count;
}

static void
test_mailbox_ddl_and_insert (void **state)
{
    mx_testmb_t *mb = mx_testmb_new ();
    assert_non_null (mb);
    assert_string_equal (mx_testmb_host (mb), "127.0.0.1");
    assert_true (mx_testmb_port (mb) > 0);
    assert_string_equal (mx_testmb_user (mb), "msgx");
    assert_string_equal (mx_testmb_password (mb), "msgx");
    char *database = strdup (mx_testmb_database (mb));
    assert_int_equal (s_mb_schema_count (database), 1);

    MYSQL *conn = mx_testmb_connect (mb);
    assert_non_null (conn);
    char *value = s_mb_value (conn, "SELECT COUNT(*) FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'CMINMSGS'");
    assert_string_equal (value, "10");
    free (value);
    value = s_mb_value (conn, "SELECT COUNT(*) FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'COUTMSGS'");
    assert_string_equal (value, "15");
    free (value);
    value = s_mb_value (conn, "SELECT CONCAT(DATA_TYPE, ',', IS_NULLABLE) FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'CMINMSGS'"
        " AND COLUMN_NAME = 'CMINMSGS_CLOB_MSG'");
    assert_string_equal (value, "mediumtext,NO");
    free (value);
    value = s_mb_value (conn, "SELECT CONCAT(ENGINE, ',', TABLE_COLLATION) FROM information_schema.TABLES"
        " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'CMINMSGS'");
    assert_string_equal (value, "InnoDB,utf8mb4_unicode_ci");
    free (value);

    //  2021-01-23 05:35:07.999 UTC, the milliseconds are dropped.
    const int64_t received_ms = INT64_C (1611380107999);
    assert_int_equal (mx_testmb_insert (mb, 42, "<MSG>航班 😀</MSG>", received_ms), 42);
    assert_int_equal (mx_testmb_insert (mb, 0, "<MSG>auto</MSG>", received_ms), 43);
    assert_int_equal (mx_testmb_insert (mb, -1, "<MSG>null date</MSG>", -1), 44);
    assert_int_equal (mx_testmb_insert (mb, 100, "<MSG>gap</MSG>", 0), 100);

    value = s_mb_value (conn, "SELECT CONCAT_WS('|', CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED,"
        " CMINMSGS_STATUS, IFNULL(CMINMSGS_DATE_PROCESSED, 'unprocessed')) FROM CMINMSGS"
        " WHERE CMINMSGS_ID = 42");
    assert_string_equal (value, "<MSG>航班 😀</MSG>|2021-01-23 05:35:07|VALID|unprocessed");
    free (value);
    value = s_mb_value (conn, "SELECT CMINMSGS_DATE_RECEIVED FROM CMINMSGS WHERE CMINMSGS_ID = 43");
    assert_string_equal (value, "2021-01-23 05:35:07");
    free (value);
    value = s_mb_value (conn, "SELECT CMINMSGS_DATE_RECEIVED FROM CMINMSGS WHERE CMINMSGS_ID = 44");
    assert_null (value);
    value = s_mb_value (conn, "SELECT CMINMSGS_DATE_RECEIVED FROM CMINMSGS WHERE CMINMSGS_ID = 100");
    assert_string_equal (value, "1970-01-01 00:00:00");
    free (value);
    value = s_mb_value (conn, "SELECT GROUP_CONCAT(CMINMSGS_ID ORDER BY CMINMSGS_ID) FROM CMINMSGS");
    assert_string_equal (value, "42,43,44,100");
    free (value);

    //  An open transaction on the database must not block the drop.
    s_mb_query (conn, "START TRANSACTION");
    s_mb_query (conn, "UPDATE CMINMSGS SET CMINMSGS_STATUS = 'LOCKED' WHERE CMINMSGS_ID = 42");
    mx_testmb_destroy (&mb);
    assert_null (mb);
    mx_testmb_destroy (&mb);
    assert_int_equal (s_mb_schema_count (database), 0);
    mysql_close (conn);
    free (database);
}

static void
test_mailbox_independent (void **state)
{
    mx_testmb_t *first = mx_testmb_new ();
    mx_testmb_t *second = mx_testmb_new ();
    assert_string_not_equal (mx_testmb_database (first), mx_testmb_database (second));
    assert_int_equal (mx_testmb_insert (first, 0, "<MSG/>", -1), 1);
    assert_int_equal (mx_testmb_insert (second, 0, "<MSG/>", -1), 1);
    MYSQL *conn = mx_testmb_connect (second);
    char *value = s_mb_value (conn, "SELECT COUNT(*) FROM CMINMSGS");
    assert_string_equal (value, "1");
    free (value);
    mysql_close (conn);
    mx_testmb_destroy (&first);
    mx_testmb_destroy (&second);
}

// ---------------------------------------------------------------- Kafka

static void
test_kafka_roundtrip (void **state)
{
    mx_testkafka_t *kafka = mx_testkafka_new (3);
    assert_non_null (kafka);
    const char *bootstraps = mx_testkafka_bootstraps (kafka);
    //  Three brokers, three addresses.
    int commas = 0;
    for (const char *scan = bootstraps; *scan; scan++)
        commas += *scan == ',';
    assert_int_equal (commas, 2);
    assert_true (strncmp (bootstraps, "127.0.0.1:", 10) == 0);
    assert_int_equal (rd_kafka_mock_topic_create (mx_testkafka_cluster (kafka),
                                                  "harness.probe", 1, 3), RD_KAFKA_RESP_ERR_NO_ERROR);

    char errstr [512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    assert_int_equal (rd_kafka_conf_set (conf, "bootstrap.servers", bootstraps, errstr, sizeof errstr),
                      RD_KAFKA_CONF_OK);
    assert_int_equal (rd_kafka_conf_set (conf, "enable.idempotence", "true", errstr, sizeof errstr),
                      RD_KAFKA_CONF_OK);
    rd_kafka_t *producer = rd_kafka_new (RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    assert_non_null (producer);
    const char *payload = "{\"flid\":42}";
    assert_int_equal (rd_kafka_producev (producer,
        RD_KAFKA_V_TOPIC ("harness.probe"),
        RD_KAFKA_V_PARTITION (0),
        RD_KAFKA_V_KEY ("42", 2),
        RD_KAFKA_V_VALUE ((void *) payload, strlen (payload)),
        RD_KAFKA_V_MSGFLAGS (RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_END), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal (rd_kafka_flush (producer, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal (rd_kafka_outq_len (producer), 0);
    rd_kafka_destroy (producer);

    conf = rd_kafka_conf_new ();
    assert_int_equal (rd_kafka_conf_set (conf, "bootstrap.servers", bootstraps, errstr, sizeof errstr),
                      RD_KAFKA_CONF_OK);
    assert_int_equal (rd_kafka_conf_set (conf, "group.id", "harness", errstr, sizeof errstr),
                      RD_KAFKA_CONF_OK);
    rd_kafka_t *consumer = rd_kafka_new (RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null (consumer);
    rd_kafka_topic_partition_list_t *partitions = rd_kafka_topic_partition_list_new (1);
    rd_kafka_topic_partition_list_add (partitions, "harness.probe", 0)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
    assert_int_equal (rd_kafka_assign (consumer, partitions), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy (partitions);

    bool received = false;
    int64_t deadline = s_now_ms () + 20000;
    while (!received && s_now_ms () < deadline) {
        rd_kafka_message_t *message = rd_kafka_consumer_poll (consumer, 500);
        if (!message)
            continue;
        if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            assert_int_equal (message->len, strlen (payload));
            assert_memory_equal (message->payload, payload, message->len);
            assert_int_equal (message->key_len, 2);
            assert_memory_equal (message->key, "42", 2);
            assert_int_equal (message->offset, 0);
            received = true;
        }
        rd_kafka_message_destroy (message);
    }
    assert_true (received);
    rd_kafka_consumer_close (consumer);
    rd_kafka_destroy (consumer);
    mx_testkafka_destroy (&kafka);
    assert_null (kafka);
    mx_testkafka_destroy (&kafka);
}

// ---------------------------------------------------------------- processes

static void
test_proc_expect_and_exit (void **state)
{
    const char *argv [] = { "/bin/sh", "-c",
        "echo starting >&2; echo \"value=$MX_PROBE\" >&2; echo ready-42 >&2;"
        " echo out-line; printf 'tail-without-newline' >&2; exit 3", NULL };
    const char *env [] = { "MX_PROBE=hello", NULL };
    mx_testproc_t *proc = mx_testproc_new (argv, env);
    assert_non_null (proc);
    assert_true (mx_testproc_pid (proc) > 0);

    assert_string_equal (mx_testproc_expect_stderr (proc, "value=", 5000), "value=hello");
    assert_string_equal (mx_testproc_expect_stderr (proc, "ready", 5000), "ready-42");
    assert_string_equal (mx_testproc_expect_stdout (proc, "out", 5000), "out-line");
    assert_string_equal (mx_testproc_expect_stderr (proc, "without", 5000), "tail-without-newline");
    //  Everything has been matched or passed: end of output, no wait.
    assert_null (mx_testproc_expect_stderr (proc, "starting", 5000));

    int status = 0;
    assert_int_equal (mx_testproc_wait (proc, 5000, &status), 0);
    assert_true (WIFEXITED (status));
    assert_int_equal (WEXITSTATUS (status), 3);
    assert_non_null (strstr (mx_testproc_stderr (proc), "starting\n"));
    assert_string_equal (mx_testproc_stdout (proc), "out-line\n");
    //  Waiting again returns the same status; signalling a reaped child fails.
    assert_int_equal (mx_testproc_wait (proc, 0, &status), 0);
    assert_int_equal (WEXITSTATUS (status), 3);
    assert_int_equal (mx_testproc_signal (proc, SIGTERM), -1);
    mx_testproc_destroy (&proc);
    assert_null (proc);
    mx_testproc_destroy (&proc);
}

static void
test_proc_expect_moves_forward (void **state)
{
    const char *argv [] = { "/bin/sh", "-c", "echo a1 >&2; echo b >&2; echo a2 >&2", NULL };
    mx_testproc_t *proc = mx_testproc_new (argv, NULL);
    assert_non_null (proc);
    assert_string_equal (mx_testproc_expect_stderr (proc, "a", 5000), "a1");
    assert_string_equal (mx_testproc_expect_stderr (proc, "a", 5000), "a2");
    assert_null (mx_testproc_expect_stderr (proc, "a", 5000));
    //  A miss does not move the start: "b" lies before the last match.
    assert_null (mx_testproc_expect_stderr (proc, "b", 5000));
    mx_testproc_destroy (&proc);

    //  A miss leaves later lines available.
    const char *argv2 [] = { "/bin/sh", "-c", "echo x1 >&2; echo y1 >&2", NULL };
    proc = mx_testproc_new (argv2, NULL);
    assert_non_null (proc);
    assert_null (mx_testproc_expect_stderr (proc, "zzz", 5000));
    assert_string_equal (mx_testproc_expect_stderr (proc, "x", 5000), "x1");
    assert_string_equal (mx_testproc_expect_stderr (proc, "y", 5000), "y1");
    mx_testproc_destroy (&proc);
}

static void
test_proc_timeout_and_kill (void **state)
{
    //  Blocks for ever without burning CPU.
    const char *argv [] = { "/bin/sh", "-c", "echo up >&2; exec tail -f /dev/null", NULL };
    mx_testproc_t *proc = mx_testproc_new (argv, NULL);
    assert_non_null (proc);
    assert_non_null (mx_testproc_expect_stderr (proc, "up", 5000));

    int64_t start = s_now_ms ();
    assert_null (mx_testproc_expect_stderr (proc, "never", 200));
    int64_t elapsed = s_now_ms () - start;
    assert_true (elapsed >= 190 && elapsed < 3000);

    int status = 0;
    start = s_now_ms ();
    assert_int_equal (mx_testproc_wait (proc, 100, &status), -1);
    elapsed = s_now_ms () - start;
    assert_true (elapsed >= 90 && elapsed < 3000);

    //  destroy kills and reaps: the pid is gone afterwards.
    pid_t pid = mx_testproc_pid (proc);
    assert_int_equal (kill (pid, 0), 0);
    mx_testproc_destroy (&proc);
    assert_int_equal (kill (pid, 0), -1);
    assert_int_equal (errno, ESRCH);
}

static void
test_proc_signal (void **state)
{
    const char *argv [] = { "/bin/sh", "-c",
        "tail -f /dev/null & echo \"child=$!\" >&2;"
        " trap 'echo got-term >&2; exit 7' TERM; echo armed >&2; wait", NULL };
    mx_testproc_t *proc = mx_testproc_new (argv, NULL);
    assert_non_null (proc);
    const char *line = mx_testproc_expect_stderr (proc, "child=", 5000);
    assert_non_null (line);
    pid_t child = (pid_t) atoi (line + strlen ("child="));
    assert_true (child > 0);
    assert_non_null (mx_testproc_expect_stderr (proc, "armed", 5000));
    assert_int_equal (mx_testproc_signal (proc, SIGTERM), 0);
    assert_string_equal (mx_testproc_expect_stderr (proc, "got-term", 5000), "got-term");
    int status = 0;
    //  The background tail still holds the pipes: the exit is seen on the
    //  pid, not on end of output.
    assert_int_equal (mx_testproc_wait (proc, 5000, &status), 0);
    assert_true (WIFEXITED (status));
    assert_int_equal (WEXITSTATUS (status), 7);
    assert_int_equal (kill (child, SIGKILL), 0);
    mx_testproc_destroy (&proc);

    const char *argv2 [] = { "/bin/sh", "-c", "echo up >&2; exec tail -f /dev/null", NULL };
    proc = mx_testproc_new (argv2, NULL);
    assert_non_null (mx_testproc_expect_stderr (proc, "up", 5000));
    assert_int_equal (mx_testproc_signal (proc, SIGKILL), 0);
    assert_int_equal (mx_testproc_wait (proc, 5000, &status), 0);
    assert_true (WIFSIGNALED (status));
    assert_int_equal (WTERMSIG (status), SIGKILL);
    mx_testproc_destroy (&proc);
}

static void
test_proc_large_output (void **state)
{
    //  1 MB on stdout before the stderr line: both pipes must be drained.
    const char *argv [] = { "/bin/sh", "-c",
        "head -c 1000000 /dev/zero | tr '\\0' x; echo; echo done >&2", NULL };
    mx_testproc_t *proc = mx_testproc_new (argv, NULL);
    assert_non_null (proc);
    assert_string_equal (mx_testproc_expect_stderr (proc, "done", 20000), "done");
    int status = 0;
    assert_int_equal (mx_testproc_wait (proc, 20000, &status), 0);
    assert_int_equal (WEXITSTATUS (status), 0);
    assert_int_equal (strlen (mx_testproc_stdout (proc)), 1000001);
    mx_testproc_destroy (&proc);
}

static void
test_proc_run (void **state)
{
    const char *argv [] = { "/bin/sh", "-c", "echo hi; echo oops >&2; exit 5", NULL };
    char *out = NULL, *err = NULL;
    assert_int_equal (mx_testproc_run (argv, NULL, 5000, &out, &err), 5);
    assert_string_equal (out, "hi\n");
    assert_string_equal (err, "oops\n");
    free (out);
    free (err);

    //  PATH search and environment override.
    const char *argv2 [] = { "sh", "-c", "printf %s \"$HOME\"", NULL };
    const char *env [] = { "HOME=/nowhere", NULL };
    assert_int_equal (mx_testproc_run (argv2, env, 5000, &out, NULL), 0);
    assert_string_equal (out, "/nowhere");
    free (out);

    //  Signal deaths are 128 + signal; stdin is /dev/null.
    const char *argv3 [] = { "/bin/sh", "-c", "cat; kill -TERM $$", NULL };
    assert_int_equal (mx_testproc_run (argv3, NULL, 5000, NULL, NULL), 128 + SIGTERM);

    const char *argv4 [] = { "/bin/sh", "-c", "echo partial; exec tail -f /dev/null", NULL };
    int64_t start = s_now_ms ();
    assert_int_equal (mx_testproc_run (argv4, NULL, 300, &out, NULL), -1);
    assert_true (s_now_ms () - start < 5000);
    assert_string_equal (out, "partial\n");
    free (out);

    const char *argv5 [] = { "/nonexistent/msgx-binary", NULL };
    assert_null (mx_testproc_new (argv5, NULL));
    assert_int_equal (mx_testproc_run (argv5, NULL, 1000, &out, &err), -1);
    assert_string_equal (out, "");
    free (out);
    free (err);
}

//  A test that fails leaves its test function by longjmp, past its own
//  stop of what it started: the harness kills every child still running
//  when the test program exits. This program, run again with
//  MX_TEST_HARNESS_ORPHAN set, starts a child, prints its pid and exits
//  without stopping it; the child must be gone once it has exited.
static void
test_proc_children_die_with_the_program (void **state)
{
    char self [4096];
    ssize_t length = readlink ("/proc/self/exe", self, sizeof self - 1);
    assert_true (length > 0);
    self [length] = '\0';
    const char *argv [] = { self, NULL };
    const char *env [] = { "MX_TEST_HARNESS_ORPHAN=1", NULL };
    char *out = NULL;
    assert_int_equal (mx_testproc_run (argv, env, 10000, &out, NULL), 0);
    long pid = strtol (out, NULL, 10);
    free (out);
    assert_true (pid > 1);
    assert_int_equal (kill ((pid_t) pid, 0), -1);
    assert_int_equal (errno, ESRCH);
}

//  Held to the end on purpose (never destroyed): reachable, so the leak
//  checker of a sanitizer build does not count it.
static mx_testproc_t *s_orphan;

static int
s_orphan_main (void)
{
    const char *argv [] = { "/bin/sh", "-c", "echo up >&2; exec tail -f /dev/null", NULL };
    s_orphan = mx_testproc_new (argv, NULL);
    if (!s_orphan || !mx_testproc_expect_stderr (s_orphan, "up", 5000))
        return 1;
    printf ("%d\n", (int) mx_testproc_pid (s_orphan));
    return 0;
}

// ---------------------------------------------------------------- helpers

static void
test_env_and_tmpdir (void **state)
{
    assert_non_null (mx_testenv_get ("MX_PG_PORT"));
    assert_non_null (mx_testenv_get ("MX_MYSQL_SOCKET"));
    assert_string_equal (mx_testenv_get ("MX_PG_HOST"), "127.0.0.1");
    assert_non_null (strstr (mx_testenv_get ("MX_PG_CONNINFO"), "dbname=postgres"));
    assert_null (mx_testenv_get ("MX_NO_SUCH_KEY"));

    char *dir = mx_testenv_tmpdir ();
    assert_non_null (dir);
    char *other = mx_testenv_tmpdir ();
    assert_string_not_equal (dir, other);
    char path [512];
    snprintf (path, sizeof path, "%s/sub/deeper", dir);
    char sub [512];
    snprintf (sub, sizeof sub, "%s/sub", dir);
    assert_int_equal (mkdir (sub, 0700), 0);
    assert_int_equal (mkdir (path, 0700), 0);
    snprintf (path, sizeof path, "%s/sub/deeper/file", dir);
    FILE *file = fopen (path, "w");
    assert_non_null (file);
    fputs ("x", file);
    fclose (file);
    //  A symlink out of the tree is removed, not followed.
    snprintf (path, sizeof path, "%s/link", dir);
    assert_int_equal (symlink (other, path), 0);

    mx_testenv_rmtree (dir);
    struct stat info;
    assert_int_equal (stat (dir, &info), -1);
    assert_int_equal (stat (other, &info), 0);
    mx_testenv_rmtree (other);
    assert_int_equal (stat (other, &info), -1);
    free (dir);
    free (other);
}

int
main (void)
{
    if (getenv ("MX_TEST_HARNESS_ORPHAN"))
        return s_orphan_main ();
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_env_and_tmpdir),
        cmocka_unit_test (test_pg_fresh_database),
        cmocka_unit_test (test_pg_independent),
        cmocka_unit_test (test_mailbox_ddl_and_insert),
        cmocka_unit_test (test_mailbox_independent),
        cmocka_unit_test (test_kafka_roundtrip),
        cmocka_unit_test (test_proc_expect_and_exit),
        cmocka_unit_test (test_proc_expect_moves_forward),
        cmocka_unit_test (test_proc_timeout_and_kill),
        cmocka_unit_test (test_proc_signal),
        cmocka_unit_test (test_proc_large_output),
        cmocka_unit_test (test_proc_run),
        cmocka_unit_test (test_proc_children_die_with_the_program),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
