/*  mx_testenv - real servers for integration tests.

    ctest starts PostgreSQL and MariaDB once per run (deploy/local/mx-servers)
    and names the env file it wrote in MX_TEST_ENV. Each test then takes its
    own fresh database from those servers, and its own Kafka mock cluster.

    A missing env file or an unreachable server fails the running test
    loudly (cmocka fail_msg, or exit outside a test): never a skip.
*/
#ifndef MX_TESTENV_H_INCLUDED
#define MX_TESTENV_H_INCLUDED

#include <stdint.h>
#include <libpq-fe.h>
#include "mx_config.h"
#include <mysql.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _mx_testpg_t mx_testpg_t;
typedef struct _mx_testmb_t mx_testmb_t;
typedef struct _mx_testkafka_t mx_testkafka_t;

//  Fresh empty PostgreSQL database on the test server, named
//  mxt_<pid>_<counter>_<random>.
mx_testpg_t *
    mx_testpg_new (void);

//  "host=127.0.0.1 port=N user=postgres dbname=mxt_..."
const char *
    mx_testpg_conninfo (mx_testpg_t *self);

const char *
    mx_testpg_dbname (mx_testpg_t *self);

//  Terminates the database's backends and drops it. Safe twice.
void
    mx_testpg_destroy (mx_testpg_t **self_p);

//  Fresh MariaDB database holding the mailbox tables (db/mailbox/mailbox.sql,
//  built into the library).
mx_testmb_t *
    mx_testmb_new (void);

const char *
    mx_testmb_host (mx_testmb_t *self);

int
    mx_testmb_port (mx_testmb_t *self);

const char *
    mx_testmb_user (mx_testmb_t *self);

const char *
    mx_testmb_password (mx_testmb_t *self);

const char *
    mx_testmb_database (mx_testmb_t *self);

//  New TCP connection to that database (utf8mb4); the caller mysql_close()s.
MYSQL *
    mx_testmb_connect (mx_testmb_t *self);

//  Inserts a CMINMSGS row with STATUS 'VALID': explicit CMINMSGS_ID if
//  id > 0, else AUTO_INCREMENT. received_ms is Unix time in milliseconds,
//  written as UTC wall-clock seconds (the test server runs with time zone
//  +00:00); received_ms < 0 leaves CMINMSGS_DATE_RECEIVED NULL.
//  Returns the row's ID.
int64_t
    mx_testmb_insert (mx_testmb_t *self, int64_t id, const char *xml, int64_t received_ms);

//  Remove row id from CMINMSGS and return its text (malloc'd), or NULL when
//  there is no such row: makes a hole that a test can fill later.
char *
    mx_testmb_take (mx_testmb_t *self, int64_t id);

//  Drops the database (killing connections still open on it). Safe twice.
void
    mx_testmb_destroy (mx_testmb_t **self_p);

//  Kafka mock cluster with `brokers` brokers, listening on 127.0.0.1.
mx_testkafka_t *
    mx_testkafka_new (int brokers);

//  "127.0.0.1:port,..." for bootstrap.servers.
const char *
    mx_testkafka_bootstraps (mx_testkafka_t *self);

//  For rd_kafka_mock_* calls (topic creation, injected errors, broker down).
rd_kafka_mock_cluster_t *
    mx_testkafka_cluster (mx_testkafka_t *self);

void
    mx_testkafka_destroy (mx_testkafka_t **self_p);

//  A consumer of the cluster (group `group`, no commits, quiet logs: tests
//  take brokers down on purpose) assigned partitions 0..partitions-1 of
//  both topics from the beginning. The caller destroys it.
rd_kafka_t *
    mx_testkafka_consumer (mx_testkafka_t *self, const char *group, const char *topic_a,
                           const char *topic_b, int partitions);

//  One record as msgxd publishes it: where it is, key, value and headers.
typedef struct {
    char *topic;
    int64_t offset;
    int32_t partition;
    char *key;
    char *value;                //  NULL for a tombstone
    int64_t event_id;           //  headers; -1 when absent
    int64_t msg_id;
    int64_t version;
    char *event_type;
    char *source;
    char *json;                 //  the whole record, as mx_testkafka_message_json
} mx_testkafka_record_t;

//  One poll of consumer: true with *record filled (free it with
//  mx_testkafka_record_free), false when nothing (or an error event) came.
bool
    mx_testkafka_poll (rd_kafka_t *consumer, int timeout_ms, mx_testkafka_record_t *record);

void
    mx_testkafka_record_free (mx_testkafka_record_t *record);

//  Appends a copy of *record (its strings taken) to *records (*count
//  entries), growing it as mx_testkafka_read_all does: both may fill one
//  array.
void
    mx_testkafka_records_add (mx_testkafka_record_t **records, size_t *count, const mx_testkafka_record_t *record);

//  Consumes until *records holds everything the brokers hold now: up to the
//  high watermark of partitions 0..partitions-1 of both topics. Appends to
//  *records (realloc'd; *count entries) what it reads; fails the test if
//  that takes longer than timeout_ms. A partition still without a leader
//  in the consumer's metadata after an outage is looked up again. The
//  records read are validated (mx_testkafka_validate) with topic_a as the
//  KAFKA:msg topic (or KAFKA:ref when it is MX_TESTKAFKA_REF_TOPIC) and
//  topic_b as the KAFKA:schd one.
void
    mx_testkafka_read_all (rd_kafka_t *consumer, const char *topic_a, const char *topic_b, int partitions,
                           int timeout_ms, mx_testkafka_record_t **records, size_t *count);

//  A record as one line of `kcat -J`: {"topic", "partition", "offset",
//  "headers": [name, value, ...], "key", "payload"}, key and payload null
//  when absent. malloc'd.
char *
    mx_testkafka_message_json (const rd_kafka_message_t *message);

//  The KAFKA:ref topic the validator knows (msgx.kafka.topic.reference's
//  default): tests that read reference records keep it.
#define MX_TESTKAFKA_REF_TOPIC "msgx.reference"

//  Runs test/harness/mx-validate-records (the consumer contract: headers,
//  key, payload against docs/schemas) over count such lines, msg_topic
//  being KAFKA:msg, schd_topic KAFKA:schd and MX_TESTKAFKA_REF_TOPIC KAFKA:ref. Returns its exit code (0:
//  every record valid, 1: one is not), *report (malloc'd) its output.
int
    mx_testkafka_validate_lines (const char *const *lines, size_t count, const char *msg_topic,
                                 const char *schd_topic, char **report);

//  The same over records; fails the test if one is invalid.
void
    mx_testkafka_validate (const mx_testkafka_record_t *records, size_t count, const char *msg_topic,
                           const char *schd_topic);

//  A record header as an integer (-1 when absent) or as text (malloc'd,
//  NULL when absent).
int64_t
    mx_testkafka_header_int (rd_kafka_headers_t *headers, const char *name);
char *
    mx_testkafka_header_text (rd_kafka_headers_t *headers, const char *name);

//  Value of `key` in the env file, NULL if absent.
const char *
    mx_testenv_get (const char *key);

//  Fresh mkdtemp folder; the caller frees the string and removes the folder
//  with mx_testenv_rmtree.
char *
    mx_testenv_tmpdir (void);

//  Removes dir and everything below it (does not follow symlinks).
void
    mx_testenv_rmtree (const char *dir);

//  A test's own connection to pg with msgxd's schema applied (the
//  migrations, under their lock: a daemon migrating at the same time
//  waits), then watch (SQL, e.g. the triggers and the LISTEN of the
//  test's waits; NULL for none). Any failure fails the test.
PGconn *
    mx_testpg_connect_schema (mx_testpg_t *pg, const char *watch);

//  A watch for it: a NOTIFY on channel mx_test (payload the table) after
//  every statement that changes proc_state, LISTENed to; so waits on
//  processing wake as it moves on.
#define MX_TESTPG_WATCH_PROC_STATE \
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$" \
    " BEGIN PERFORM pg_notify ('mx_test', TG_TABLE_NAME); RETURN NULL; END $$;" \
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE OR DELETE ON proc_state" \
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();" \
    "LISTEN mx_test;"

//  On a test's own PostgreSQL connection; any SQL error fails the test.
void
    mx_testpg_exec (PGconn *conn, const char *sql);
//  First column of the first row ("" for no row or NULL); caller frees.
char *
    mx_testpg_value (PGconn *conn, const char *sql);
void
    mx_testpg_expect (PGconn *conn, const char *sql, const char *expected);
//  Waits until `condition` (a boolean query) is true, woken by the NOTIFYs
//  conn LISTENs to; fails the test after 30 s.
void
    mx_testpg_wait (PGconn *conn, const char *condition);
//  The same; a timeout also shows the first value of the query show.
void
    mx_testpg_wait_showing (PGconn *conn, const char *condition, const char *show);
//  The same with parameters ($1..$n, text values): test values never go
//  into the SQL text.
char *
    mx_testpg_value_params (PGconn *conn, const char *sql, int nparams, const char *const *values);
void
    mx_testpg_wait_params (PGconn *conn, const char *condition, int nparams, const char *const *values);

//  Waits until `count_sql` (one row, one integer column) answers above 0
//  on a test's own MariaDB connection; fails the test after 30 s.
void
    mx_testmb_wait (MYSQL *conn, const char *count_sql);

//  Point config at the test mailbox mb: enabled, host, port, user,
//  password, database and the session time zone (e.g. "+00:00").
void
    mx_testmb_configure (mx_testmb_t *mb, mx_config_t *config, const char *time_zone);

//  The same as environment overrides for a child msgxd: writes the seven
//  malloc'd "KEY=VALUE" strings (MAILBOX_SHARED_MYSQL_ENABLED ... _TIME_ZONE)
//  to vars [0..6], which must have room; the caller frees them. Returns 7.
size_t
    mx_testmb_environment (mx_testmb_t *mb, const char *time_zone, char **vars);

//  text (UTF-8) converted to GB18030 with iconv, as a real GB18030 sender
//  writes it; *size_p gets the byte count (the result is NUL-terminated).
char *
    mx_testenv_to_gb18030 (const char *text, size_t *size_p);

//  One HTTP/1.1 exchange with 127.0.0.1:port: sends request as it is, reads
//  until the server closes (the request should say Connection: close).
//  Returns the status; *head (status line and headers) and *body are
//  malloc'd. No connection, no reply within timeout_s, or a reply that is
//  not HTTP fails the test.
int
    mx_testhttp_exchange (int port, const char *request, int timeout_s, char **head, char **body);

//  The payload of a body sent with Transfer-Encoding: chunked, malloc'd
//  into *payload. Returns true when the body ends with the terminating
//  zero-size chunk, false when it was cut short (what came is kept).
bool
    mx_testhttp_dechunk (const char *body, char **payload);

//  GET path, with Connection: close.
int
    mx_testhttp_get (int port, const char *path, int timeout_s, char **head, char **body);

//  The value of one sample (series = name with its labels, exactly as
//  rendered) in a Prometheus text body, copied into buf; fails the test
//  when the series is not there.
const char *
    mx_testhttp_sample (const char *body, const char *series, char *buf, size_t size);

//  A loopback TCP port nobody uses now, below the ephemeral range, and
//  never one this process was given before (a test takes several ports
//  before its daemons bind any of them).
int
    mx_testenv_free_port (void);

#ifdef __cplusplus
}
#endif

#endif
