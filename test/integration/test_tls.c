/*  TLS to every dependency, against real TLS servers with a CA the test
    servers made (deploy/local/mx-servers start --tls): PostgreSQL and the
    MariaDB mailbox are reached with verification, and a wrong CA or a
    wrong host name is refused with one line naming the dependency and
    the reason. Kafka: the security settings are what librdkafka runs
    with, a TLS handshake with a wrong CA or host name fails with a clear
    error (openssl s_server as the listener), and the SASL mechanism
    reaches the brokers (the mock cluster of librdkafka 2.0.2 knows no SASL
    handshake: what it proves is that the client starts one).  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mx_config.h"
#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_pg.h"
#include "mx_producer.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 20000

typedef struct {
    int log_pipe [2];                   //  msgxd's log lines, read by the test
    char *line;                         //  the last line read
    zchunk_t *pending;                  //  bytes after it
} fixture_t;

static fixture_t s_fx;

static int
s_setup (void **state)
{
    assert_int_equal (pipe (s_fx.log_pipe), 0);
    assert_int_equal (mx_log_start (s_fx.log_pipe [1], 4096), 0);
    s_fx.pending = zchunk_new (NULL, 0);
    *state = &s_fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_log_stop ();
    close (fx->log_pipe [0]);
    close (fx->log_pipe [1]);
    zchunk_destroy (&fx->pending);
    free (fx->line);
    return 0;
}

static char *
s_tls_file (const char *name)
{
    const char *dir = mx_testenv_get ("MX_TLS_DIR");
    if (!dir)
        fail_msg ("the test servers run without TLS: MX_TLS_DIR missing (mx-servers start --tls)");
    return zsys_sprintf ("%s/%s", dir, name);
}

static int64_t
s_now_ms (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void
s_set (mx_config_t *config, const char *key, const char *value)
{
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_set (config, key, value, errors))
        fail_msg ("%s: %s", key, (char *) zlist_first (errors));
    zlist_destroy (&errors);
}

static void
s_assert_one_line (const char *text)
{
    assert_non_null (text);
    assert_null (strchr (text, '\n'));
}

//  ---------------------------------------------------------------------
//  PostgreSQL

static char *
s_pg_conninfo (mx_testpg_t *pg, const char *host, const char *ca)
{
    return zsys_sprintf ("host=%s port=%s user=postgres dbname=%s sslmode=verify-full sslrootcert=%s",
                         host, mx_testenv_get ("MX_PG_PORT"), mx_testpg_dbname (pg), ca);
}

static void
test_pg_verify_full_connects_with_the_right_ca (void **state)
{
    (void) state;
    mx_testpg_t *pg = mx_testpg_new ();
    char *ca = s_tls_file ("ca.pem");
    char *conninfo = s_pg_conninfo (pg, "localhost", ca);
    char *error = NULL;
    PGconn *conn = mx_pg_connect (conninfo, "test-tls", 10000, &error);
    if (!conn)
        fail_msg ("verified TLS connection refused: %s", error);
    //  The session really is encrypted.
    char *ssl = mx_testpg_value (conn, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid ()");
    assert_string_equal (ssl, "t");
    free (ssl);
    mx_pg_disconnect (&conn);
    free (conninfo);
    free (ca);
    mx_testpg_destroy (&pg);
}

static void
test_pg_refuses_a_wrong_ca_or_host_name (void **state)
{
    (void) state;
    mx_testpg_t *pg = mx_testpg_new ();
    char *right = s_tls_file ("ca.pem");
    char *wrong = s_tls_file ("other-ca.pem");
    struct {
        const char *host;
        const char *ca;
        const char *reason;
    } cases [] = {
        { "localhost", wrong, "certificate verify failed" },
        //  The certificate names localhost only.
        { "127.0.0.1", right, "does not match host name \"127.0.0.1\"" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *conninfo = s_pg_conninfo (pg, cases [i].host, cases [i].ca);
        char *error = NULL;
        PGconn *conn = mx_pg_connect (conninfo, "test-tls", 10000, &error);
        assert_null (conn);
        s_assert_one_line (error);
        if (!strstr (error, "PostgreSQL") || !strstr (error, cases [i].reason))
            fail_msg ("unclear refusal: %s", error);
        free (error);
        free (conninfo);
    }
    free (right);
    free (wrong);
    mx_testpg_destroy (&pg);
}

//  ---------------------------------------------------------------------
//  The mailbox

static mx_config_t *
s_mailbox_config (mx_testmb_t *mb, const char *host, const char *mode, const char *ca)
{
    mx_config_t *config = mx_config_new_defaults ();
    char port [16];
    snprintf (port, sizeof port, "%d", mx_testmb_port (mb));
    s_set (config, "mailbox.shared-mysql.enabled", "true");
    s_set (config, "mailbox.shared-mysql.host", host);
    s_set (config, "mailbox.shared-mysql.port", port);
    s_set (config, "mailbox.shared-mysql.user", mx_testmb_user (mb));
    s_set (config, "mailbox.shared-mysql.password", mx_testmb_password (mb));
    s_set (config, "mailbox.shared-mysql.database", mx_testmb_database (mb));
    s_set (config, "mailbox.shared-mysql.ssl-mode", mode);
    if (ca)
        s_set (config, "mailbox.shared-mysql.ssl-ca", ca);
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_validate (config, errors))
        fail_msg ("config: %s", (char *) zlist_first (errors));
    zlist_destroy (&errors);
    return config;
}

//  The mailbox's bounds over config: 0, or -1 with *error.
static int
s_mailbox_try (const mx_config_t *config, char **error)
{
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    int64_t min_id, max_id;
    int rc = mx_mailbox_bounds (mailbox, &min_id, &max_id, error);
    mx_mailbox_destroy (&mailbox);
    return rc;
}

static void
test_mailbox_verify_full_connects_with_the_right_ca (void **state)
{
    (void) state;
    mx_testmb_t *mb = mx_testmb_new ();
    char *ca = s_tls_file ("ca.pem");
    const char *modes [] = { "verify-full", "required" };
    for (size_t i = 0; i < 2; i++) {
        mx_config_t *config = s_mailbox_config (mb, "localhost", modes [i], ca);
        char *error = NULL;
        if (s_mailbox_try (config, &error))
            fail_msg ("ssl-mode %s refused: %s", modes [i], error);
        mx_config_destroy (&config);
    }
    free (ca);
    mx_testmb_destroy (&mb);
}

static void
test_mailbox_refuses_a_wrong_ca_or_host_name (void **state)
{
    (void) state;
    mx_testmb_t *mb = mx_testmb_new ();
    char *right = s_tls_file ("ca.pem");
    char *wrong = s_tls_file ("other-ca.pem");
    struct {
        const char *host;
        const char *ca;
        const char *reason;
    } cases [] = {
        { "localhost", wrong, "self-signed certificate in certificate chain" },
        { "127.0.0.1", right, "Validation of SSL server certificate failed" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        mx_config_t *config = s_mailbox_config (mb, cases [i].host, "verify-full", cases [i].ca);
        char *error = NULL;
        assert_int_equal (s_mailbox_try (config, &error), -1);
        s_assert_one_line (error);
        if (!strstr (error, "mailbox") || !strstr (error, "ssl-mode verify-full")
        ||  !strstr (error, cases [i].reason))
            fail_msg ("unclear refusal: %s", error);
        free (error);
        mx_config_destroy (&config);
    }
    free (right);
    free (wrong);
    mx_testmb_destroy (&mb);
}

//  ---------------------------------------------------------------------
//  Kafka

static mx_config_t *
s_kafka_config (const char *protocol, const char *ca)
{
    mx_config_t *config = mx_config_new_defaults ();
    s_set (config, "msgx.kafka.bootstrap-servers", "localhost:9");
    s_set (config, "msgx.kafka.security.protocol", protocol);
    if (ca)
        s_set (config, "msgx.kafka.security.ssl.ca.location", ca);
    s_set (config, "msgx.kafka.delivery-timeout", "30s");
    return config;
}

static void
test_kafka_security_settings_reach_librdkafka (void **state)
{
    (void) state;
    char *ca = s_tls_file ("ca.pem");
    char *cert = s_tls_file ("client.pem");
    char *key = s_tls_file ("client.key");
    mx_config_t *config = s_kafka_config ("sasl_ssl", ca);
    s_set (config, "msgx.kafka.security.ssl.certificate.location", cert);
    s_set (config, "msgx.kafka.security.ssl.key.location", key);
    s_set (config, "msgx.kafka.security.sasl.mechanisms", "SCRAM-SHA-512");
    s_set (config, "msgx.kafka.security.sasl.username", "msgx-producer");
    s_set (config, "msgx.kafka.security.sasl.password", "kafka-Secret-7");
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_validate (config, errors))
        fail_msg ("config: %s", (char *) zlist_first (errors));
    zlist_destroy (&errors);

    char *error = NULL;
    mx_producer_t *producer = mx_producer_new (config, "localhost:9", "tls-test", &error);
    if (!producer)
        fail_msg ("producer refused: %s", error);
    const char *expected [][2] = {
        { "security.protocol", "sasl_ssl" },
        { "ssl.ca.location", ca },
        { "ssl.certificate.location", cert },
        { "ssl.key.location", key },
        { "ssl.endpoint.identification.algorithm", "https" },
        { "sasl.mechanisms", "SCRAM-SHA-512" },
        { "sasl.username", "msgx-producer" },
        { "sasl.password", "kafka-Secret-7" },
        //  Security settings leave the delivery safety as it was.
        { "enable.idempotence", "true" },
        { "acks", "-1" },
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected [0]; i++) {
        char value [512];
        if (mx_producer_setting (producer, expected [i][0], value, sizeof value))
            fail_msg ("librdkafka does not know %s", expected [i][0]);
        if (strcmp (value, expected [i][1]) != 0)
            fail_msg ("%s is %s, expected %s", expected [i][0], value, expected [i][1]);
    }
    mx_producer_destroy (&producer);

    //  A CA file librdkafka cannot load: refused when the client is made.
    s_set (config, "msgx.kafka.security.ssl.ca.location", "/nonexistent/ca.pem");
    assert_null (mx_producer_new (config, "localhost:9", "tls-test", &error));
    s_assert_one_line (error);
    assert_non_null (strstr (error, "ssl.ca.location"));
    assert_null (strstr (error, "kafka-Secret-7"));
    free (error);
    mx_config_destroy (&config);
    free (key);
    free (cert);
    free (ca);
}

//  The next log line, or NULL at the deadline.
static const char *
s_log_line (fixture_t *fx, int64_t deadline)
{
    while (true) {
        const char *data = (const char *) zchunk_data (fx->pending);
        size_t size = zchunk_size (fx->pending);
        const char *newline = size ? memchr (data, '\n', size) : NULL;
        if (newline) {
            free (fx->line);
            fx->line = strndup (data, (size_t) (newline - data));
            zchunk_t *rest = zchunk_new (newline + 1, size - (size_t) (newline + 1 - data));
            zchunk_destroy (&fx->pending);
            fx->pending = rest;
            return fx->line;
        }
        //  A deadline already passed still takes what is waiting.
        int64_t left = deadline - s_now_ms ();
        struct pollfd item = { fx->log_pipe [0], POLLIN, 0 };
        if (poll (&item, 1, left > 0 ? (int) left : 0) <= 0) {
            if (left <= 0)
                return NULL;
            continue;
        }
        char buffer [4096];
        ssize_t got = read (fx->log_pipe [0], buffer, sizeof buffer);
        if (got > 0)
            zchunk_extend (fx->pending, buffer, (size_t) got);
    }
}

static void
s_ignore_report (const mx_producer_report_t *report, void *arg)
{
    (void) report;
    (void) arg;
}

//  Forgets the log lines written so far.
static void
s_log_skip (fixture_t *fx)
{
    while (s_log_line (fx, 0))
        ;
}

//  Produces one message over config to bootstrap and serves the producer
//  until a log line holds needle (the line, owned by fx) or the deadline.
static const char *
s_produce_until (fixture_t *fx, const mx_config_t *config, const char *bootstrap, const char *needle)
{
    s_log_skip (fx);
    char *error = NULL;
    mx_producer_t *producer = mx_producer_new (config, bootstrap, "tls-test", &error);
    if (!producer)
        fail_msg ("producer refused: %s", error);
    char *value = strdup ("value");
    if (mx_producer_send (producer, "msgx.tls.test", "key", &value, NULL, 0, 1, &error))
        fail_msg ("cannot queue: %s", error);
    int64_t deadline = s_now_ms () + WAIT_MS;
    const char *found = NULL;
    while (!found && s_now_ms () < deadline) {
        struct pollfd items [2] = {
            { mx_producer_fd (producer), POLLIN, 0 },
            { fx->log_pipe [0], POLLIN, 0 }
        };
        poll (items, 2, 200);
        mx_producer_drain (producer, s_ignore_report, NULL);
        const char *line;
        while (!found && (line = s_log_line (fx, s_now_ms ()))) {
            if (strstr (line, needle))
                found = line;
        }
    }
    mx_producer_destroy (&producer);
    return found;
}

//  openssl s_server with the test servers' certificate (for localhost),
//  on a free loopback port; *bootstrap gets "HOST:port".
static mx_testproc_t *
s_tls_listener (const char *host, char **bootstrap)
{
    char *cert = s_tls_file ("server.pem");
    char *key = s_tls_file ("server.key");
    //  -www: answers from the connection alone (stdin is /dev/null).
    const char *argv [] = { "openssl", "s_server", "-www", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key, NULL };
    mx_testproc_t *server = mx_testproc_new (argv, NULL);
    assert_non_null (server);
    const char *line = mx_testproc_expect_stdout (server, "ACCEPT 127.0.0.1:", WAIT_MS);
    if (!line)
        fail_msg ("openssl s_server did not start: %s", mx_testproc_stderr (server));
    *bootstrap = zsys_sprintf ("%s:%s", host, strrchr (line, ':') + 1);
    free (cert);
    free (key);
    return server;
}

static void
test_kafka_tls_handshake_checks_ca_and_host_name (void **state)
{
    fixture_t *fx = *state;
    char *right = s_tls_file ("ca.pem");
    char *wrong = s_tls_file ("other-ca.pem");
    struct {
        const char *host;
        const char *ca;
    } refused [] = {
        { "localhost", wrong },
        { "127.0.0.1", right },         //  the certificate names localhost only
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused [0]; i++) {
        char *bootstrap = NULL;
        mx_testproc_t *server = s_tls_listener (refused [i].host, &bootstrap);
        mx_config_t *config = s_kafka_config ("ssl", refused [i].ca);
        const char *line = s_produce_until (fx, config, bootstrap, "SSL handshake failed");
        if (!line)
            fail_msg ("no handshake failure logged with %s to %s", refused [i].ca, bootstrap);
        assert_non_null (strstr (line, "certificate verify failed"));
        assert_non_null (strcasestr (line, "kafka"));
        mx_config_destroy (&config);
        mx_testproc_destroy (&server);
        free (bootstrap);
    }
    //  The right CA and name: the handshake completes and the client asks
    //  for the API versions, the first request inside TLS (s_server is no
    //  Kafka, so that request times out: what this proves is the TLS).
    char *bootstrap = NULL;
    mx_testproc_t *server = s_tls_listener ("localhost", &bootstrap);
    mx_config_t *config = s_kafka_config ("ssl", right);
    const char *line = s_produce_until (fx, config, bootstrap, "in state APIVERSION_QUERY");
    if (!line)
        fail_msg ("the client never got through the TLS handshake with the right CA and name");
    assert_null (strstr (line, "SSL"));
    mx_config_destroy (&config);
    mx_testproc_destroy (&server);
    free (bootstrap);
    free (right);
    free (wrong);
}

static void
test_kafka_sasl_mechanism_reaches_the_brokers (void **state)
{
    fixture_t *fx = *state;
    mx_testkafka_t *kafka = mx_testkafka_new (1);
    mx_config_t *config = mx_config_new_defaults ();
    s_set (config, "msgx.kafka.bootstrap-servers", mx_testkafka_bootstraps (kafka));
    s_set (config, "msgx.kafka.security.protocol", "sasl_plaintext");
    s_set (config, "msgx.kafka.security.sasl.mechanisms", "SCRAM-SHA-256");
    s_set (config, "msgx.kafka.security.sasl.username", "msgx-producer");
    s_set (config, "msgx.kafka.security.sasl.password", "kafka-Secret-7");
    const char *line = s_produce_until (fx, config, mx_testkafka_bootstraps (kafka),
                                        "required by mechanism SCRAM-SHA-256");
    if (!line)
        fail_msg ("the client never started a SASL SCRAM-SHA-256 authentication");
    assert_non_null (strstr (line, "SASL"));
    assert_null (strstr (line, "kafka-Secret-7"));
    mx_config_destroy (&config);
    mx_testkafka_destroy (&kafka);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_pg_verify_full_connects_with_the_right_ca),
        cmocka_unit_test (test_pg_refuses_a_wrong_ca_or_host_name),
        cmocka_unit_test (test_mailbox_verify_full_connects_with_the_right_ca),
        cmocka_unit_test (test_mailbox_refuses_a_wrong_ca_or_host_name),
        cmocka_unit_test (test_kafka_security_settings_reach_librdkafka),
        cmocka_unit_test (test_kafka_tls_handshake_checks_ca_and_host_name),
        cmocka_unit_test (test_kafka_sasl_mechanism_reaches_the_brokers),
    };
    return cmocka_run_group_tests (tests, s_setup, s_teardown);
}
