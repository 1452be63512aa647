/*  test_config - mx_config: types, sources and their precedence, validation,
    and the shipped deploy samples.  */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "mx_config.h"

//  Temp folder for config files, created per test.
static char s_dir [256];

static int
s_setup (void **state)
{
    const char *tmp = getenv ("TMPDIR");
    snprintf (s_dir, sizeof s_dir, "%s/mx-config-XXXXXX", tmp && *tmp? tmp: "/tmp");
    return mkdtemp (s_dir)? 0: -1;
}

static int
s_teardown (void **state)
{
    return rmdir (s_dir);
}

//  Writes text into the temp folder; returns the path (caller frees).
static char *
s_write (const char *name, const char *text)
{
    char *path = zsys_sprintf ("%s/%s", s_dir, name);
    FILE *file = fopen (path, "w");
    assert_non_null (file);
    fputs (text, file);
    fclose (file);
    return path;
}

//  Whole file (caller frees).
static char *
s_read_all (const char *path)
{
    FILE *file = fopen (path, "rb");
    assert_non_null (file);
    zchunk_t *chunk = zchunk_read (file, 1024 * 1024);
    fclose (file);
    char *text = zsys_sprintf ("%.*s", (int) zchunk_size (chunk), (char *) zchunk_data (chunk));
    zchunk_destroy (&chunk);
    return text;
}

static void
s_remove (char **path_p)
{
    assert_int_equal (unlink (*path_p), 0);
    zstr_free (path_p);
}

//  True if one line of list contains every needle (NULL-terminated).
static bool
s_has (zlist_t *list, ...)
{
    if (!list)
        return false;
    for (char *line = (char *) zlist_first (list); line; line = (char *) zlist_next (list)) {
        va_list args;
        va_start (args, list);
        bool all = true;
        const char *needle;
        while ((needle = va_arg (args, const char *)))
            if (!strstr (line, needle))
                all = false;
        va_end (args);
        if (all)
            return true;
    }
    return false;
}

static void
s_dump (zlist_t *list)
{
    if (!list)
        return;
    for (char *line = (char *) zlist_first (list); line; line = (char *) zlist_next (list))
        print_message ("  | %s\n", line);
}

static char *s_no_env [] = { NULL };

//  mx_config_load takes char ** like main's envp and never writes to it.
static char **
s_envp (const char **entries)
{
    return (char **) entries;
}

static const char *s_key_names [] = {
#define MX_CONFIG_KEY(field, key, type, def, doc) key,
#include "mx_config.def"
#undef MX_CONFIG_KEY
};


//  --------------------------------------------------------------------------

static void
test_defaults (void **state)
{
    mx_config_t *config = mx_config_new_defaults ();
    assert_non_null (config);
    //  STRING
    assert_string_equal (config->profile, "dev");
    assert_string_equal (config->pg_conninfo, "host=127.0.0.1 dbname=msgx");
    assert_string_equal (config->kafka_bootstrap_servers, "");
    assert_string_equal (config->admin_endpoint, "ipc://msgx-admin.sock");
    assert_string_equal (config->mailbox_shared_mysql_database, "aodbinterface");
    assert_string_equal (config->mailbox_outbound_routing_rqfd, "MSGXRQFD");
    //  BOOL
    assert_false (config->stubs);
    assert_false (config->pipeline_autostart);
    assert_true (config->kafka_enable_idempotence);
    //  INT
    assert_int_equal (config->pipeline_claim_batch, 50);
    assert_int_equal (config->pipeline_max_attempts, 5);
    assert_int_equal (config->mailbox_shared_mysql_port, 3306);
    assert_true (config->instance_lock_key == INT64_C (0x6d7367786c6f636b));
    assert_int_equal (config->codec_max_message_bytes, 16777216);
    //  DURATION (ms)
    assert_int_equal (config->pipeline_poll_interval, 1000);
    assert_int_equal (config->pipeline_poll_fast, 10);
    assert_int_equal (config->pipeline_head_deadline, 10 * 60 * 1000);
    assert_true (config->pipeline_overdue_backfill == INT64_C (30) * 24 * 3600 * 1000);
    assert_int_equal (config->pipeline_backoff_cap_ms, 60000);
    assert_int_equal (config->pipeline_late_detect_period, 0);
    assert_int_equal (config->kafka_linger_ms, 5);
    assert_int_equal (config->health_backlog_cache_ttl_ms, 30000);
    //  MS_LIST
    assert_int_equal (config->pipeline_backoff_ms.count, 5);
    int64_t steps [] = { 1000, 2000, 4000, 8000, 16000 };
    for (size_t i = 0; i < 5; i++)
        assert_int_equal (config->pipeline_backoff_ms.items [i], steps [i]);
    //  STRING_LIST
    assert_int_equal (config->pipeline_ignore_types.count, 4);
    assert_string_equal (config->pipeline_ignore_types.items [0], "LDM");
    assert_string_equal (config->pipeline_ignore_types.items [3], "EROR");
    //  TIME_OF_DAY
    assert_int_equal (config->history_run_at, 3 * 60 + 30);
    assert_int_equal (config->requests_daily_schedule_at, -1);

    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    assert_int_equal (mx_config_validate (config, errors), 0);
    assert_int_equal (zlist_size (errors), 0);
    zlist_destroy (&errors);
    mx_config_destroy (&config);
    mx_config_destroy (&config);
    assert_null (config);
}

//  Others code against the field names: check the naming rule on every key.
static void
test_field_names_and_env_names (void **state)
{
    const char **keys = s_key_names;
    const char *fields [] = {
#define MX_CONFIG_KEY(field, key, type, def, doc) #field,
#include "mx_config.def"
#undef MX_CONFIG_KEY
    };
    assert_int_equal (sizeof s_key_names / sizeof s_key_names [0], MX_CONFIG_KEY_COUNT);
    zhash_t *envs = zhash_new ();
    for (size_t i = 0; i < MX_CONFIG_KEY_COUNT; i++) {
        const char *key = keys [i];
        if (strncmp (key, "msgx.", 5) == 0)
            key += 5;
        char expected [128];
        size_t j;
        for (j = 0; key [j]; j++)
            expected [j] = (key [j] == '.' || key [j] == '-')? '_': key [j];
        expected [j] = '\0';
        assert_string_equal (fields [i], expected);

        char env [128];
        assert_non_null (mx_config_env_name (keys [i], env, sizeof env));
        assert_int_equal (zhash_insert (envs, env, (void *) keys [i]), 0);   //  unique
    }
    zhash_destroy (&envs);

    char env [64];
    assert_string_equal (mx_config_env_name ("msgx.pipeline.claim-batch", env, sizeof env),
                         "MSGX_PIPELINE_CLAIM_BATCH");
    assert_string_equal (mx_config_env_name ("mailbox.shared-mysql.host", env, sizeof env),
                         "MAILBOX_SHARED_MYSQL_HOST");
    assert_null (mx_config_env_name ("mailbox.shared-mysql.host", env, 10));
}

static void
test_precedence (void **state)
{
    char *path = s_write ("precedence.zpl",
        "msgx.pipeline.claim-batch = 70\n"
        "msgx.pipeline.poll-interval = 2s\n"
        "mailbox.shared-mysql.host = db.file\n");
    const char *envp [] = {
        "MSGX_PIPELINE_CLAIM_BATCH=80",
        "MAILBOX_SHARED_MYSQL_HOST=db.env",
        "PATH=/usr/bin",
        NULL
    };
    zlist_t *errors = NULL;
    zlist_t *warnings = NULL;
    mx_config_t *config = mx_config_load (path, s_envp (envp), &errors, &warnings);
    s_dump (errors);
    assert_non_null (config);
    assert_int_equal (zlist_size (errors), 0);
    assert_int_equal (zlist_size (warnings), 0);
    assert_int_equal (config->pipeline_claim_batch, 80);               //  env over file
    assert_string_equal (config->mailbox_shared_mysql_host, "db.env");
    assert_int_equal (config->pipeline_poll_interval, 2000);           //  file over default
    assert_int_equal (config->pipeline_max_attempts, 5);               //  default
    mx_config_destroy (&config);

    //  No file at all: defaults + environment.
    config = mx_config_load (NULL, s_envp (envp), &errors, NULL);
    assert_non_null (config);
    assert_int_equal (config->pipeline_claim_batch, 80);
    assert_int_equal (config->pipeline_poll_interval, 1000);
    mx_config_destroy (&config);

    zlist_destroy (&errors);
    zlist_destroy (&warnings);
    s_remove (&path);
}

static void
test_file_forms (void **state)
{
    char *path = s_write ("forms.zpl",
        "#   comment line\n"
        "msgx.pipeline.claim-batch = 11            # flat dotted key\n"
        "msgx/pipeline/max-attempts = 4\n"
        "msgx\n"
        "    profile = dev\n"
        "    pipeline\n"
        "        poll-interval = \"250ms\"\n"
        "        ignore-types = LDM,REGN\n"
        "    kafka\n"
        "        topic\n"
        "            msg = 'a.b'\n"
        "    operation-day.cutoff-hour = 4\n"
        "mailbox\n"
        "    shared-mysql\n"
        "        password = \"p#ss word\"\n"
        "        port = 3307\n"
        "    processed-value = DONE\n");
    zlist_t *errors = NULL;
    mx_config_t *config = mx_config_load (path, s_no_env, &errors, NULL);
    s_dump (errors);
    assert_non_null (config);
    assert_int_equal (config->pipeline_claim_batch, 11);
    assert_int_equal (config->pipeline_max_attempts, 4);
    assert_int_equal (config->pipeline_poll_interval, 250);
    assert_int_equal (config->pipeline_ignore_types.count, 2);
    assert_string_equal (config->kafka_topic_msg, "a.b");
    assert_int_equal (config->operation_day_cutoff_hour, 4);
    assert_string_equal (config->mailbox_shared_mysql_password, "p#ss word");
    assert_int_equal (config->mailbox_shared_mysql_port, 3307);
    assert_string_equal (config->mailbox_processed_value, "DONE");
    mx_config_destroy (&config);
    zlist_destroy (&errors);
    s_remove (&path);
}

static void
test_durations (void **state)
{
    int64_t ms = -1;
    assert_int_equal (mx_config_duration_parse ("500ms", false, &ms), 0);
    assert_int_equal (ms, 500);
    assert_int_equal (mx_config_duration_parse ("30s", false, &ms), 0);
    assert_int_equal (ms, 30000);
    assert_int_equal (mx_config_duration_parse ("10m", false, &ms), 0);
    assert_int_equal (ms, 600000);
    assert_int_equal (mx_config_duration_parse ("2h", false, &ms), 0);
    assert_int_equal (ms, 7200000);
    assert_int_equal (mx_config_duration_parse ("30d", false, &ms), 0);
    assert_true (ms == INT64_C (2592000000));
    assert_int_equal (mx_config_duration_parse ("0", false, &ms), 0);
    assert_int_equal (ms, 0);
    assert_int_equal (mx_config_duration_parse ("1500", true, &ms), 0);
    assert_int_equal (ms, 1500);
    ms = 7;
    assert_int_equal (mx_config_duration_parse ("1500", false, &ms), -1);
    assert_int_equal (mx_config_duration_parse ("10x", true, &ms), -1);
    assert_int_equal (mx_config_duration_parse ("-5s", true, &ms), -1);
    assert_int_equal (mx_config_duration_parse ("1.5s", true, &ms), -1);
    assert_int_equal (mx_config_duration_parse ("", true, &ms), -1);
    assert_int_equal (mx_config_duration_parse (" 5s", true, &ms), -1);
    assert_int_equal (mx_config_duration_parse ("99999999999999999d", true, &ms), -1);
    assert_int_equal (ms, 7);

    mx_config_t *config = mx_config_new_defaults ();
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    //  A bare number in a -ms key is milliseconds; units work there too.
    assert_int_equal (mx_config_set (config, "msgx.pipeline.backoff-cap-ms", "2500", errors), 0);
    assert_int_equal (config->pipeline_backoff_cap_ms, 2500);
    assert_int_equal (mx_config_set (config, "msgx.health.backlog-cache-ttl-ms", "1m", errors), 0);
    assert_int_equal (config->health_backlog_cache_ttl_ms, 60000);
    //  Elsewhere a unit is required, except for 0.
    assert_int_equal (mx_config_set (config, "msgx.pipeline.late-detect-period", "0", errors), 0);
    assert_int_equal (mx_config_set (config, "msgx.pipeline.poll-interval", "500", errors), -1);
    assert_true (s_has (errors, "msgx.pipeline.poll-interval", "'500'", "unit", NULL));
    assert_int_equal (config->pipeline_poll_interval, 1000);          //  unchanged
    assert_int_equal (mx_config_set (config, "msgx.pipeline.head-deadline", "10y", errors), -1);
    assert_true (s_has (errors, "msgx.pipeline.head-deadline", "'10y'", "expected a duration", NULL));
    assert_int_equal (config->pipeline_head_deadline, 600000);
    mx_config_destroy (&config);
    zlist_destroy (&errors);
}

static void
test_scalars_and_lists (void **state)
{
    mx_config_t *config = mx_config_new_defaults ();
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);

    //  MS_LIST: blanks around items are fine, units allowed.
    assert_int_equal (mx_config_set (config, "msgx.pipeline.backoff-ms", " 1s, 2000 ,3s", errors), 0);
    assert_int_equal (config->pipeline_backoff_ms.count, 3);
    assert_int_equal (config->pipeline_backoff_ms.items [0], 1000);
    assert_int_equal (config->pipeline_backoff_ms.items [1], 2000);
    assert_int_equal (config->pipeline_backoff_ms.items [2], 3000);
    assert_int_equal (mx_config_set (config, "msgx.pipeline.backoff-ms", "1000,,2000", errors), -1);
    assert_int_equal (mx_config_set (config, "msgx.pipeline.backoff-ms", "1000,two", errors), -1);
    assert_true (s_has (errors, "msgx.pipeline.backoff-ms", "'1000,two'", "comma-separated", NULL));
    assert_int_equal (config->pipeline_backoff_ms.count, 3);          //  unchanged

    //  STRING_LIST
    assert_int_equal (mx_config_set (config, "msgx.pipeline.ignore-types", "LDM, RSTA", errors), 0);
    assert_int_equal (config->pipeline_ignore_types.count, 2);
    assert_string_equal (config->pipeline_ignore_types.items [1], "RSTA");
    assert_int_equal (mx_config_set (config, "msgx.pipeline.ignore-types", "", errors), 0);
    assert_int_equal (config->pipeline_ignore_types.count, 0);
    assert_int_equal (mx_config_set (config, "msgx.pipeline.ignore-types", "LDM,", errors), -1);

    //  TIME_OF_DAY
    assert_int_equal (mx_config_set (config, "msgx.requests.daily-schedule-at", "7:05", errors), 0);
    assert_int_equal (config->requests_daily_schedule_at, 7 * 60 + 5);
    assert_int_equal (mx_config_set (config, "msgx.requests.daily-schedule-at", "23:59", errors), 0);
    assert_int_equal (config->requests_daily_schedule_at, 23 * 60 + 59);
    assert_int_equal (mx_config_set (config, "msgx.requests.daily-schedule-at", "", errors), 0);
    assert_int_equal (config->requests_daily_schedule_at, -1);
    assert_int_equal (mx_config_set (config, "msgx.history.run-at", "24:00", errors), -1);
    assert_int_equal (mx_config_set (config, "msgx.history.run-at", "12:60", errors), -1);
    assert_int_equal (mx_config_set (config, "msgx.history.run-at", "0330", errors), -1);
    assert_true (s_has (errors, "msgx.history.run-at", "'0330'", "HH:MM", NULL));

    //  BOOL and INT
    assert_int_equal (mx_config_set (config, "msgx.shadow", "yes", errors), 0);
    assert_true (config->shadow);
    assert_int_equal (mx_config_set (config, "msgx.shadow", "OFF", errors), 0);
    assert_false (config->shadow);
    assert_int_equal (mx_config_set (config, "msgx.shadow", "maybe", errors), -1);
    assert_true (s_has (errors, "msgx.shadow", "'maybe'", "true or false", NULL));
    assert_int_equal (mx_config_set (config, "msgx.instance.lock-key", "0x1F", errors), 0);
    assert_int_equal (config->instance_lock_key, 31);
    assert_int_equal (mx_config_set (config, "msgx.instance.lock-key", "-42", errors), 0);
    assert_int_equal (config->instance_lock_key, -42);
    assert_int_equal (mx_config_set (config, "msgx.pipeline.claim-batch", "12abc", errors), -1);
    assert_int_equal (mx_config_set (config, "msgx.pipeline.claim-batch", " 5", errors), -1);
    assert_int_equal (mx_config_set (config, "msgx.pipeline.claim-batch", "010", errors), 0);
    assert_int_equal (config->pipeline_claim_batch, 10);              //  decimal, not octal
    assert_true (s_has (errors, "msgx.pipeline.claim-batch", "'12abc'", "integer", NULL));

    //  Unknown key through the API
    assert_int_equal (mx_config_set (config, "msgx.nope", "1", errors), -1);
    assert_true (s_has (errors, "unknown configuration key", "msgx.nope", NULL));
    //  NULL errors is allowed
    assert_int_equal (mx_config_set (config, "msgx.shadow", "maybe", NULL), -1);

    mx_config_destroy (&config);
    zlist_destroy (&errors);
}

//  Each rule: set one key to a bad value on a valid config, expect a line
//  naming the key and saying what is wrong.
typedef struct {
    const char *key;
    const char *value;
    const char *needle;
} s_rule_t;

static void
test_validation_rules (void **state)
{
    const s_rule_t rules [] = {
        { "msgx.profile",                       "staging",  "dev or prod" },
        { "msgx.log.level",                     "verbose",  "debug, info, warn or error" },
        { "msgx.pipeline.claim-batch",          "0",        "at least 1" },
        { "msgx.pipeline.max-attempts",         "0",        "at least 1" },
        { "msgx.pipeline.backoff-ms",           "",         "at least one delay" },
        { "msgx.pipeline.backoff-ms",           "1000,0",   "more than 0" },
        { "msgx.pipeline.backoff-cap-ms",       "0",        "more than 0" },
        { "msgx.pipeline.poll-interval",        "0",        "more than 0" },
        { "msgx.pipeline.poll-fast",            "0",        "more than 0" },
        { "msgx.pipeline.backfill-batch",       "0",        "at least 1" },
        { "msgx.pipeline.backfill-max-attempts", "-1",      "at least 1" },
        { "msgx.pipeline.backfill-backoff-cap", "10s",      "backfill-backoff" },
        { "msgx.pipeline.delivery-batch",       "0",        "at least 1" },
        { "msgx.pipeline.delivery-drain-rounds", "0",       "at least 1" },
        { "msgx.pipeline.late-detect-batch",    "0",        "at least 1" },
        { "msgx.pipeline.late-detect-ids",      "0",        "between 1 and" },
        { "msgx.pipeline.cutover-watermark",    "latest",   "min, zero, max" },
        { "msgx.pipeline.cutover-watermark",    "0",        "positive mailbox ID" },
        { "msgx.pipeline.cutover-watermark",    "-5",       "positive mailbox ID" },
        { "msgx.pipeline.overdue-backfill",     "12h",      "floor of 1 day" },
        { "msgx.operation-day.cutoff-hour",     "24",       "between 0 and 23" },
        { "msgx.operation-day.cutoff-hour",     "-1",       "between 0 and 23" },
        { "msgx.operation-day.zone",            "Mars/Olympus", "unknown time zone" },
        { "msgx.operation-day.zone",            "../../etc/passwd", "not a time zone name" },
        { "msgx.operation-day.zone",            "/etc/passwd", "not a time zone name" },
        { "msgx.operation-day.zone",            "Asia",     "unknown time zone" },
        { "msgx.schd.flush-limit",              "0",        "at least 1" },
        { "msgx.history.run-at",                "",         "HH:MM" },
        { "msgx.history.retention-days",        "0",        "at least 1" },
        { "msgx.archive.after-days",            "0",        "at least 1" },
        { "msgx.requests.timeout",              "0",        "more than 0" },
        { "msgx.kafka.acks",                    "1",        "weakens producer safety" },
        { "msgx.kafka.acks",                    "0",        "weakens producer safety" },
        { "msgx.kafka.enable-idempotence",      "false",    "weakens producer safety" },
        { "msgx.kafka.max-in-flight",           "6",        "weakens producer safety" },
        { "msgx.kafka.max-in-flight",           "0",        "weakens producer safety" },
        { "msgx.kafka.topic.schd",              "msgx.flight.events", "must differ" },
        { "msgx.kafka.topic.reference",         "msgx.flight.state", "must differ" },
        { "msgx.kafka.topic.reference",         "a/b",      "Kafka topic name" },
        { "msgx.republish.rate",                "0",        "between 1 and 100000" },
        { "msgx.kafka.topic.msg",               "bad topic", "Kafka topic name" },
        { "msgx.kafka.bootstrap-servers",       "a:9092,,b:9092", "without empty items" },
        { "msgx.kafka.delivery-timeout",        "5ms",      "more than msgx.kafka.linger-ms" },
        { "msgx.delivery.semantics",            "at-most-once", "exactly-once or at-least-once" },
        { "msgx.delivery.semantics",            "",         "exactly-once or at-least-once" },
        { "msgx.http.bind",                     "8080",     "host:port" },
        { "msgx.http.bind",                     "localhost:0", "1..65535" },
        { "msgx.http.bind",                     "localhost:http", "1..65535" },
        { "msgx.http.bind",                     "[::1:8080", "[ipv6]:port" },
        { "msgx.http.max-body-bytes",           "0",        "at least 1" },
        { "msgx.http.max-connections",          "0",        "between 1 and 1024" },
        { "msgx.http.per-ip-connections",       "65",       "between 1 and 64" },
        { "msgx.api.readers",                   "0",        "between 1 and 16" },
        { "msgx.api.read-during-commit",        "newest",   "must be previous or wait" },
        { "msgx.api.readers",                   "17",       "between 1 and 16" },
        { "msgx.api.nice",                      "-21",      "between -20 and 19" },
        { "msgx.api.nice",                      "20",       "between -20 and 19" },
        { "msgx.api.cache-flights",             "-1",       "between 0 and 1000000" },
        { "msgx.api.cache-bytes",               "1073741825", "between 0 and 1073741824" },
        { "msgx.http.compat.allow",             "10.0.0.0/33", "at most 32" },
        { "msgx.http.compat.allow",             "10.1.2.3/8", "beyond the prefix" },
        { "msgx.http.compat.allow",             "aodb.example", "not an IPv4 or IPv6" },
        { "msgx.http.compat.allow",             "::1/129",  "at most 128" },
        { "msgx.http.compat.allow",             "10.0.0.1,,10.0.0.2", "empty entry" },
        { "msgx.admin.endpoint",                "inproc://x", "ipc:// or tcp://" },
        { "msgx.admin.endpoint",                "ipc://",   "ipc:// or tcp://" },
        { "msgx.admin.endpoint",                "tcp://0.0.0.0:5555", "must be on a loopback address" },
        { "msgx.admin.endpoint",                "tcp://*:5555", "must be on a loopback address" },
        { "msgx.admin.endpoint",                "tcp://eth0:5555", "must be on a loopback address" },
        { "msgx.admin.endpoint",                "tcp://127.0.0.1.example.com:5555", "must be on a loopback address" },
        { "msgx.admin.endpoint",                "tcp://10.0.0.1:5555", "must be on a loopback address" },
        { "msgx.admin.max-request-bytes",       "100", "between 1024" },
        { "msgx.admin.curve.server-cert",       "/etc/msgxd/admin.cert", "tcp:// msgx.admin.endpoint only" },
        { "mailbox.shared-mysql.port",          "0",        "between 1 and 65535" },
        { "mailbox.shared-mysql.port",          "65536",    "between 1 and 65535" },
        { "mailbox.shared-mysql.read-timeout",  "1500ms",   "whole seconds" },
        { "mailbox.shared-mysql.connect-timeout", "0",      "whole seconds" },
        { "mailbox.processed-value",            "",         "must not be empty" },
        { "mailbox.outbound.routing-rqfd",      "ROUTING-ID-LONGER-THAN-23", "1..23" },
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules [0]; i++) {
        mx_config_t *config = mx_config_new_defaults ();
        zlist_t *errors = zlist_new ();
        zlist_autofree (errors);
        assert_int_equal (mx_config_set (config, rules [i].key, rules [i].value, errors), 0);
        int rc = mx_config_validate (config, errors);
        if (rc != -1 || !s_has (errors, rules [i].key, rules [i].needle, NULL)) {
            print_error ("rule %zu: %s = '%s' expected '%s'\n",
                         i, rules [i].key, rules [i].value, rules [i].needle);
            s_dump (errors);
            fail ();
        }
        zlist_destroy (&errors);
        mx_config_destroy (&config);
    }

    //  Values right at the edges pass.
    const char *good [][2] = {
        { "msgx.pipeline.cutover-watermark", "min" },
        { "msgx.pipeline.cutover-watermark", "zero" },
        { "msgx.pipeline.cutover-watermark", "max" },
        { "msgx.pipeline.cutover-watermark", "1234" },
        { "msgx.pipeline.overdue-backfill",  "1d" },
        { "msgx.pipeline.overdue-backfill",  "24h" },
        { "msgx.kafka.acks",                 "-1" },
        { "msgx.kafka.max-in-flight",        "1" },
        { "msgx.delivery.semantics",         "at-least-once" },
        { "msgx.api.read-during-commit",     "wait" },
        { "msgx.operation-day.cutoff-hour",  "23" },
        { "msgx.operation-day.zone",         "UTC" },
        { "msgx.http.bind",                  "[::1]:8080" },
        { "msgx.http.compat.allow",          " 10.0.0.0/8 , 192.0.2.7, ::1/128,fe80::/10 " },
        { "msgx.admin.endpoint",             "tcp://127.0.0.1:5555" },
        { "msgx.admin.endpoint",             "tcp://127.1.2.3:5555" },
        { "msgx.admin.endpoint",             "tcp://[::1]:5555" },
        { "msgx.admin.endpoint",             "tcp://localhost:5555" },
        { "msgx.admin.group",                "msgx-no-such-group" },
        { "mailbox.shared-mysql.port",       "65535" },
        { "msgx.health.backlog-cache-ttl-ms", "0" },
        { "msgx.api.readers",                "1" },
        { "msgx.api.readers",                "16" },
        { "msgx.api.nice",                   "-20" },
        { "msgx.api.nice",                   "19" },
        { "msgx.api.cache-flights",          "0" },
        { "msgx.api.cache-bytes",            "0" },
    };
    for (size_t i = 0; i < sizeof good / sizeof good [0]; i++) {
        mx_config_t *config = mx_config_new_defaults ();
        zlist_t *errors = zlist_new ();
        zlist_autofree (errors);
        assert_int_equal (mx_config_set (config, good [i][0], good [i][1], errors), 0);
        if (mx_config_validate (config, errors) != 0) {
            print_error ("%s = '%s' should pass\n", good [i][0], good [i][1]);
            s_dump (errors);
            fail ();
        }
        zlist_destroy (&errors);
        mx_config_destroy (&config);
    }

    //  A group has no meaning for a tcp:// endpoint.
    mx_config_t *config = mx_config_new_defaults ();
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    assert_int_equal (mx_config_set (config, "msgx.admin.endpoint", "tcp://127.0.0.1:5555", errors), 0);
    assert_int_equal (mx_config_set (config, "msgx.admin.group", "msgx-admin", errors), 0);
    assert_int_equal (mx_config_validate (config, errors), -1);
    assert_true (s_has (errors, "msgx.admin.group", "ipc:// msgx.admin.endpoint only", NULL));
    zlist_destroy (&errors);
    mx_config_destroy (&config);
}

//  The compat entry, enabled, must authenticate and have a bind of its own.
static void
test_compat_entry_rules (void **state)
{
    (void) state;
    const char *cases [][4] = {
        //  token-file, allow, bind, the problem expected (NULL: none)
        { "", "", "127.0.0.1:8081", "set msgx.http.compat.token-file, msgx.http.compat.allow or both" },
        { "", "", "127.0.0.1:8080", "must differ from msgx.http.bind" },
        { "", "", "8081", "host:port" },
        { "/etc/msgxd/compat-token", "", "127.0.0.1:8081", NULL },
        { "", "10.20.0.15/32", "10.20.0.5:8081", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        mx_config_t *config = mx_config_new_defaults ();
        zlist_t *errors = zlist_new ();
        zlist_autofree (errors);
        assert_int_equal (mx_config_set (config, "msgx.http.compat.enabled", "true", errors), 0);
        assert_int_equal (mx_config_set (config, "msgx.http.compat.token-file", cases [i][0], errors), 0);
        assert_int_equal (mx_config_set (config, "msgx.http.compat.allow", cases [i][1], errors), 0);
        assert_int_equal (mx_config_set (config, "msgx.http.compat.bind", cases [i][2], errors), 0);
        int rc = mx_config_validate (config, errors);
        if (cases [i][3] ? rc != -1 || !s_has (errors, "msgx.http.compat", cases [i][3], NULL) : rc != 0) {
            print_error ("case %zu: expected %s\n", i, cases [i][3] ? cases [i][3] : "no problem");
            s_dump (errors);
            fail ();
        }
        zlist_destroy (&errors);
        mx_config_destroy (&config);
    }
}

static void
test_prod_rules (void **state)
{
    zlist_t *errors = NULL;
    const char *stubs [] = { "MSGX_PROFILE=prod", "MSGX_STUBS=true", NULL };
    mx_config_t *config = mx_config_load (NULL, s_envp (stubs), &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, "msgx.stubs", "MSGX_STUBS", "refused in prod", NULL));
    assert_true (s_has (errors, "msgx.kafka.bootstrap-servers",
                        "prod needs msgx.kafka.bootstrap-servers; the embedded mock cluster is dev only",
                        NULL));
    zlist_destroy (&errors);

    const char *good [] = { "MSGX_PROFILE=prod", "MSGX_KAFKA_BOOTSTRAP_SERVERS=k1:9092,k2:9092",
                            "MSGX_KAFKA_SECURITY_PROTOCOL=ssl",
                            "MSGX_PG_CONNINFO=host=db dbname=msgx sslmode=verify-full", NULL };
    config = mx_config_load (NULL, s_envp (good), &errors, NULL);
    s_dump (errors);
    assert_non_null (config);
    assert_string_equal (config->profile, "prod");
    mx_config_destroy (&config);

    //  An enabled mailbox in prod names its user; dev may lean on defaults.
    const char *nouser [] = { "MSGX_PROFILE=prod", "MSGX_KAFKA_BOOTSTRAP_SERVERS=k1:9092",
                              "MSGX_KAFKA_SECURITY_PROTOCOL=ssl",
                              "MSGX_PG_CONNINFO=host=db dbname=msgx sslmode=verify-ca",
                              "MAILBOX_SHARED_MYSQL_SSL_MODE=verify-full",
                              "MAILBOX_SHARED_MYSQL_ENABLED=true", NULL };
    config = mx_config_load (NULL, s_envp (nouser), &errors, NULL);
    assert_null (config);
    assert_int_equal (zlist_size (errors), 1);
    assert_true (s_has (errors, "mailbox.shared-mysql.user", "must be set in prod", NULL));
    zlist_destroy (&errors);

    //  dev may run without brokers (embedded mock cluster).
    const char *dev [] = { "MSGX_STUBS=true", NULL };
    config = mx_config_load (NULL, s_envp (dev), &errors, NULL);
    assert_non_null (config);
    mx_config_destroy (&config);
    zlist_destroy (&errors);
}

static void
test_all_problems_together (void **state)
{
    char *path = s_write ("many.zpl",
        "msgx\n"
        "    pipeline\n"
        "        claim-batch = 0\n"
        "        max-attempts = lots\n"
        "        clam-batch = 3\n"
        "    operation-day\n"
        "        cutoff-hour = 30\n");
    const char *envp [] = { "MSGX_KAFKA_ACKS=1", "MSGX_PIPELINE_POLL_INTERVAL=1", NULL };
    zlist_t *errors = NULL;
    mx_config_t *config = mx_config_load (path, s_envp (envp), &errors, NULL);
    assert_null (config);
    s_dump (errors);
    assert_int_equal (zlist_size (errors), 6);
    assert_true (s_has (errors, "msgx.pipeline.claim-batch = '0'", path, "at least 1", NULL));
    assert_true (s_has (errors, "msgx.pipeline.max-attempts = 'lots'", path, "integer", NULL));
    assert_true (s_has (errors, path, "unknown key 'msgx.pipeline.clam-batch'", NULL));
    assert_true (s_has (errors, "msgx.operation-day.cutoff-hour = '30'", "between 0 and 23", NULL));
    assert_true (s_has (errors, "msgx.kafka.acks = '1'", "from environment MSGX_KAFKA_ACKS",
                        "weakens producer safety", NULL));
    assert_true (s_has (errors, "msgx.pipeline.poll-interval = '1'",
                        "from environment MSGX_PIPELINE_POLL_INTERVAL", "unit", NULL));
    zlist_destroy (&errors);
    s_remove (&path);
}

static void
test_unknown_and_duplicate_keys (void **state)
{
    char *path = s_write ("unknown.zpl",
        "msgx.pipeline.claim-bach = 5\n"
        "msgx.pipeline.max-attempts = 3\n"
        "msgx\n"
        "    pipeline\n"
        "        max-attempts = 4\n"
        "        claim-batch\n"
        "            size = 9\n");
    zlist_t *errors = NULL;
    mx_config_t *config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    s_dump (errors);
    assert_true (s_has (errors, path, "unknown key 'msgx.pipeline.claim-bach'", NULL));
    assert_true (s_has (errors, path, "'msgx.pipeline.max-attempts' is set more than once", NULL));
    assert_true (s_has (errors, path, "unknown key 'msgx.pipeline.claim-batch.size'", NULL));
    zlist_destroy (&errors);
    s_remove (&path);

    //  zconfig turns "key =   # note" into the value "# note": refused.
    path = s_write ("comment.zpl", "msgx.kafka.bootstrap-servers =     # none\n");
    config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, path, "line 1", "msgx.kafka.bootstrap-servers", "starts with '#'", NULL));
    zlist_destroy (&errors);
    s_remove (&path);

    //  A near miss in the wrong section gets a hint.
    path = s_write ("hint.zpl", "msgx.kafka.claim-batch = 5\n");
    config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, "did you mean 'msgx.pipeline.claim-batch'", NULL));
    zlist_destroy (&errors);
    s_remove (&path);
}

static void
test_unparsable_file (void **state)
{
    zlist_t *errors = NULL;
    char *path = s_write ("bad-indent.zpl",
        "msgx\n"
        "    pipeline\n"
        "      claim-batch = 5\n");
    mx_config_t *config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    s_dump (errors);
    assert_int_equal (zlist_size (errors), 1);
    assert_true (s_has (errors, path, "line 3", "steps of 4 spaces", NULL));
    zlist_destroy (&errors);
    s_remove (&path);

    path = s_write ("bad-quote.zpl",
        "msgx.profile = dev\n"
        "mailbox.shared-mysql.password = \"open\n");
    config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, path, "line 2", "missing closing quote", NULL));
    zlist_destroy (&errors);
    s_remove (&path);

    path = s_write ("bad-syntax.zpl", "msgx.profile = dev\n\nmsgx.shadow true\n");
    config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, path, "line 3", "not valid ZPL", NULL));
    zlist_destroy (&errors);
    s_remove (&path);

    //  zconfig would silently cut a line this long.
    char *long_line = zsys_sprintf ("msgx.pg.conninfo = \"host=db options=%01100d\"\n", 0);
    path = s_write ("long-line.zpl", long_line);
    zstr_free (&long_line);
    config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, path, "line 1 is longer than 1024 characters", "environment", NULL));
    assert_false (s_has (errors, "options=0", NULL));
    zlist_destroy (&errors);
    s_remove (&path);
}

//  The traps an operator falls into: each refused with its line, the key at
//  most and a hint; the value (maybe a secret) never appears.
static void
test_zpl_traps_name_the_line_never_the_value (void **state)
{
    (void) state;
    struct {
        const char *text;
        const char *line;
        const char *hint;
    } traps [] = {
        //  Two-space indentation, as in YAML.
        { "mailbox\n  shared-mysql\n    password = s3cret\n", "line 2", "steps of 4 spaces" },
        { "mailbox\n    shared-mysql\n\tpassword = s3cret\n", "line 3", "spaces, not tabs" },
        { "mailbox\n        shared-mysql.password = s3cret\n", "line 2", "one level" },
        { "# a comment\n   # misplaced\nmsgx.profile = dev\n", "line 2", "steps of 4 spaces" },
        //  '#' cuts an unquoted value: "s3c" would be read.
        { "mailbox.shared-mysql.password = s3c#ret\n", "line 1", "quote the whole value" },
        { "mailbox.shared-mysql.password = #s3cret\n", "line 1", "starts with '#'" },
        //  A line cut short inside its quotes.
        { "msgx.profile = dev\nmailbox.shared-mysql.password = \"s3cret\n", "line 2", "missing closing quote" },
        { "mailbox.shared-mysql.password = \"s3\" cret\n", "line 1", "may follow a quoted value" },
        { "mailbox.shared-mysql.password: s3cret\n", "line 1", "expected 'name = value'" },
        { "msgx.profile = dev\r\nmailbox.shared-mysql.password s3cret\r\n", "line 2", "expected 'name = value'" },
    };
    for (size_t i = 0; i < sizeof traps / sizeof traps [0]; i++) {
        char *path = s_write ("trap.zpl", traps [i].text);
        zlist_t *errors = NULL;
        mx_config_t *config = mx_config_load (path, s_no_env, &errors, NULL);
        assert_null (config);
        if (!s_has (errors, path, traps [i].line, traps [i].hint, NULL)) {
            s_dump (errors);
            fail_msg ("trap %zu: no '%s' with '%s'", i, traps [i].line, traps [i].hint);
        }
        if (s_has (errors, "s3c", NULL) || s_has (errors, "cret", NULL)) {
            s_dump (errors);
            fail_msg ("trap %zu: the value appears in a message", i);
        }
        zlist_destroy (&errors);
        s_remove (&path);
    }

    //  What the hints say to write is read as meant.
    char *path = s_write ("quoted.zpl",
        "mailbox\n"
        "    shared-mysql\n"
        "        password = \"#s3c#ret\"   # a comment\n"
        "msgx.kafka.bootstrap-servers = \"\"   # none\n"
        "msgx.profile = dev # a comment after a space\n");
    zlist_t *errors = NULL;
    mx_config_t *config = mx_config_load (path, s_no_env, &errors, NULL);
    s_dump (errors);
    assert_non_null (config);
    assert_string_equal (config->mailbox_shared_mysql_password, "#s3c#ret");
    assert_string_equal (config->kafka_bootstrap_servers, "");
    assert_string_equal (config->profile, "dev");
    mx_config_destroy (&config);
    zlist_destroy (&errors);
    s_remove (&path);

    //  More settings than any config: refused before the ZPL parser, whose
    //  cost grows with the square of the settings at one level.
    char *many = zmalloc (4097 * 6 + 1);
    for (int i = 0; i < 4097; i++)
        memcpy (many + 6 * i, "a = 1\n", 6);
    path = s_write ("many-settings.zpl", many);
    free (many);
    config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    s_dump (errors);
    assert_true (s_has (errors, path, "more than 4096 settings (line 4097)", NULL));
    zlist_destroy (&errors);
    s_remove (&path);

    //  Found by fuzz_config: a value that is not UTF-8 loaded, then
    //  --check-config asserted turning it into JSON.
    path = s_write ("not-utf8.zpl", "mailbox.shared-mysql.password = \"x\xff\xfe\"\n");
    config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, "mailbox.shared-mysql.password", "not valid UTF-8", NULL));
    zlist_destroy (&errors);
    s_remove (&path);

    //  A file that is not ZPL at all: a few lines named, then one line.
    char *noise = zmalloc (100 * 6 + 1);
    for (int i = 0; i < 100; i++)
        memcpy (noise + 6 * i, "  x y\n", 6);
    path = s_write ("noise.zpl", noise);
    free (noise);
    config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    assert_int_equal (zlist_size (errors), 21);
    assert_true (s_has (errors, path, "more problems from line 21 on, not listed", NULL));
    zlist_destroy (&errors);
    s_remove (&path);

    //  A bad line after many good ones is found and named.
    char *late = zmalloc (4000 * 6 + 32);
    for (int i = 0; i < 4000; i++)
        memcpy (late + 6 * i, "a = 1\n", 6);
    strcpy (late + 4000 * 6, "  bad indent = 1\n");
    path = s_write ("late-bad-line.zpl", late);
    free (late);
    config = mx_config_load (path, s_no_env, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, path, "line 4001", "not valid ZPL", "steps of 4 spaces", NULL));
    zlist_destroy (&errors);
    s_remove (&path);

    char *missing = zsys_sprintf ("%s/missing.zpl", s_dir);
    config = mx_config_load (missing, s_no_env, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, "cannot read config file", missing, NULL));
    zlist_destroy (&errors);
    zstr_free (&missing);
}

static void
test_environment (void **state)
{
    const char *envp [] = {
        "MSGX_PIPELINE_CLAIM_BACH=5",
        "MAILBOX_SHARED_MYSQL_PASSWD=x",
        "MSGX_TEST_ENV=/somewhere",
        "MSGX_ADMIN_ENDPOINT=ipc://other.sock",
        "MSGX_KAFKA_LINGER_MS=20",
        "HOME=/root",
        "NOEQUALS",
        NULL
    };
    zlist_t *errors = NULL;
    zlist_t *warnings = NULL;
    mx_config_t *config = mx_config_load (NULL, s_envp (envp), &errors, &warnings);
    s_dump (errors);
    assert_non_null (config);
    assert_string_equal (config->admin_endpoint, "ipc://other.sock");
    assert_int_equal (config->kafka_linger_ms, 20);
    s_dump (warnings);
    assert_int_equal (zlist_size (warnings), 2);
    assert_true (s_has (warnings, "MSGX_PIPELINE_CLAIM_BACH", "matches no configuration key", NULL));
    assert_true (s_has (warnings, "MAILBOX_SHARED_MYSQL_PASSWD", NULL));
    mx_config_destroy (&config);

    //  Warnings may be ignored; a bad env value names the variable.
    const char *bad [] = { "MSGX_PIPELINE_CLAIM_BACH=5", "MSGX_SHADOW=perhaps", NULL };
    config = mx_config_load (NULL, s_envp (bad), &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, "msgx.shadow = 'perhaps'", "from environment MSGX_SHADOW", NULL));
    zlist_destroy (&errors);
    zlist_destroy (&warnings);
}

static void
test_to_json (void **state)
{
    mx_config_t *config = mx_config_new_defaults ();
    json_t *json = mx_config_to_json (config);
    assert_int_equal (json_object_size (json), MX_CONFIG_KEY_COUNT);
    assert_string_equal (json_string_value (json_object_get (json, "mailbox.shared-mysql.password")), "");
    assert_int_equal (json_integer_value (json_object_get (json, "msgx.pipeline.poll-interval")), 1000);
    assert_true (json_is_false (json_object_get (json, "msgx.stubs")));
    assert_int_equal (json_array_size (json_object_get (json, "msgx.pipeline.backoff-ms")), 5);
    assert_string_equal (json_string_value (json_array_get (
        json_object_get (json, "msgx.pipeline.ignore-types"), 2)), "RSTA");
    assert_string_equal (json_string_value (json_object_get (json, "msgx.history.run-at")), "03:30");
    assert_string_equal (json_string_value (json_object_get (json, "msgx.requests.daily-schedule-at")), "");
    json_decref (json);

    assert_int_equal (mx_config_set (config, "mailbox.shared-mysql.password", "s3cret", NULL), 0);
    assert_int_equal (mx_config_set (config, "msgx.pg.conninfo",
                                     "host=db password='it\\'s x' user=msgx password=plain", NULL), 0);
    json = mx_config_to_json (config);
    assert_string_equal (json_string_value (json_object_get (json, "mailbox.shared-mysql.password")), "***");
    const char *conninfo = json_string_value (json_object_get (json, "msgx.pg.conninfo"));
    assert_null (strstr (conninfo, "plain"));
    assert_null (strstr (conninfo, "x'"));
    assert_non_null (strstr (conninfo, "host=db"));
    assert_non_null (strstr (conninfo, "user=msgx"));
    char *dump = json_dumps (json, 0);
    assert_null (strstr (dump, "s3cret"));
    free (dump);
    json_decref (json);

    assert_int_equal (mx_config_set (config, "msgx.pg.conninfo", "host=db oops password=leak", NULL), 0);
    json = mx_config_to_json (config);
    conninfo = json_string_value (json_object_get (json, "msgx.pg.conninfo"));
    assert_null (strstr (conninfo, "leak"));
    json_decref (json);

    assert_int_equal (mx_config_set (config, "msgx.pg.conninfo",
                                     "postgresql://msgx:hidden@db:5432/msgx?password=also&sslmode=require", NULL), 0);
    json = mx_config_to_json (config);
    conninfo = json_string_value (json_object_get (json, "msgx.pg.conninfo"));
    assert_string_equal (conninfo, "postgresql://msgx:***@db:5432/msgx?password=***&sslmode=require");
    json_decref (json);
    mx_config_destroy (&config);
}

static void
test_print_reference (void **state)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    assert_non_null (out);
    mx_config_print_reference (out);
    fclose (out);
    assert_non_null (strstr (text, "| key | environment | type | default | meaning |"));
    assert_non_null (strstr (text, "| `msgx.pipeline.claim-batch` | `MSGX_PIPELINE_CLAIM_BATCH` | INT | `50` |"));
    assert_non_null (strstr (text, "| `msgx.kafka.bootstrap-servers` | `MSGX_KAFKA_BOOTSTRAP_SERVERS` | STRING | (empty) |"));
    //  One table row per key, after the header and separator rows.
    size_t rows = 0;
    for (char *scan = strstr (text, "| key |"); scan && *scan; scan++)
        rows += *scan == '\n';
    assert_int_equal (rows, MX_CONFIG_KEY_COUNT + 2);
    free (text);
}

//  Both shipped samples load as written, and each sets every key. The
//  copy is private, as the package installs it (prod refuses a file
//  others can read).
static void
s_check_sample (const char *name, const char *profile)
{
    const char *source = getenv ("MX_SOURCE_DIR");
    assert_non_null (source);
    char *original = zsys_sprintf ("%s/deploy/config/%s", source, name);
    char *text = s_read_all (original);
    char *path = s_write (name, text);
    assert_int_equal (chmod (path, 0640), 0);
    free (text);
    free (original);
    zlist_t *errors = NULL;
    zlist_t *warnings = NULL;
    mx_config_t *config = mx_config_load (path, s_no_env, &errors, &warnings);
    s_dump (errors);
    assert_non_null (config);
    assert_int_equal (zlist_size (errors), 0);
    assert_int_equal (zlist_size (warnings), 0);
    assert_string_equal (config->profile, profile);

    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++)
        if (config->origin_ [idx] != 1) {       //  1 = from the file
            print_error ("%s does not set %s\n", name, s_key_names [idx]);
            fail ();
        }
    if (streq (profile, "prod")) {
        assert_true (config->mailbox_shared_mysql_enabled);
        assert_false (config->stubs);
        assert_true (*config->kafka_bootstrap_servers);
    }
    mx_config_destroy (&config);
    zlist_destroy (&errors);
    zlist_destroy (&warnings);
    s_remove (&path);
}

static void
test_deploy_samples (void **state)
{
    s_check_sample ("msgxd-dev.zpl", "dev");
    s_check_sample ("msgxd-prod.zpl", "prod");
}

//  Loads envp (no file); asserts it is refused with a line holding every
//  needle, or (needles NULL) accepted.
static void
s_expect (const char *const *envp, ...)
{
    zlist_t *errors = NULL;
    zlist_t *warnings = NULL;
    mx_config_t *config = mx_config_load (NULL, (char **) envp, &errors, &warnings);
    va_list args;
    va_start (args, envp);
    const char *first = va_arg (args, const char *);
    if (!first) {
        s_dump (errors);
        assert_non_null (config);
    }
    else {
        assert_null (config);
        s_dump (errors);
        bool found = false;
        for (char *line = (char *) zlist_first (errors); line && !found; line = (char *) zlist_next (errors)) {
            found = strstr (line, first) != NULL;
            va_list more;
            va_copy (more, args);
            const char *needle;
            while (found && (needle = va_arg (more, const char *)))
                found = strstr (line, needle) != NULL;
            va_end (more);
        }
        if (!found)
            fail_msg ("no error line holds %s", first);
    }
    va_end (args);
    mx_config_destroy (&config);
    zlist_destroy (&errors);
    zlist_destroy (&warnings);
}

#define S_PROD "MSGX_PROFILE=prod", "MSGX_KAFKA_BOOTSTRAP_SERVERS=k1:9093"
#define S_PG_OK "MSGX_PG_CONNINFO=host=db dbname=msgx sslmode=verify-full sslrootcert=/ca.pem"

static void
test_prod_security_rules (void **state)
{
    //  Kafka: prod refuses plaintext, unless allowed (then a warning).
    const char *plain [] = { S_PROD, S_PG_OK, NULL };
    s_expect (plain, "msgx.kafka.security.protocol = 'plaintext'", "prod refuses unencrypted Kafka", NULL);
    const char *sasl_plain [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_PROTOCOL=sasl_plaintext",
                                  "MSGX_KAFKA_SECURITY_SASL_MECHANISMS=PLAIN", "MSGX_KAFKA_SECURITY_SASL_USERNAME=u",
                                  "MSGX_KAFKA_SECURITY_SASL_PASSWORD=p", NULL };
    s_expect (sasl_plain, "prod refuses unencrypted Kafka", NULL);
    const char *allowed [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_ALLOW_PLAINTEXT=true", NULL };
    zlist_t *errors = NULL, *warnings = NULL;
    mx_config_t *config = mx_config_load (NULL, (char **) allowed, &errors, &warnings);
    s_dump (errors);
    assert_non_null (config);
    assert_true (s_has (warnings, "allow-plaintext = true", "not encrypted", NULL));
    mx_config_destroy (&config);
    zlist_destroy (&errors);
    zlist_destroy (&warnings);

    //  SASL needs its three settings; each setting only with its protocol.
    const char *no_password [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_PROTOCOL=sasl_ssl",
                                   "MSGX_KAFKA_SECURITY_SASL_MECHANISMS=SCRAM-SHA-512",
                                   "MSGX_KAFKA_SECURITY_SASL_USERNAME=u", NULL };
    s_expect (no_password, "msgx.kafka.security.sasl.password", "must be set with msgx.kafka.security.protocol sasl_ssl", NULL);
    const char *oauth [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_PROTOCOL=sasl_ssl",
                             "MSGX_KAFKA_SECURITY_SASL_MECHANISMS=OAUTHBEARER", "MSGX_KAFKA_SECURITY_SASL_USERNAME=u",
                             "MSGX_KAFKA_SECURITY_SASL_PASSWORD=p", NULL };
    s_expect (oauth, "msgx.kafka.security.sasl.mechanisms = 'OAUTHBEARER'", "OAUTHBEARER needs a token provider", NULL);
    const char *stray [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_PROTOCOL=ssl",
                             "MSGX_KAFKA_SECURITY_SASL_USERNAME=u", NULL };
    s_expect (stray, "msgx.kafka.security.sasl.username", "applies only with", NULL);
    const char *no_name_check [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_PROTOCOL=ssl",
                                     "MSGX_KAFKA_SECURITY_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM=none", NULL };
    s_expect (no_name_check, "ssl.endpoint.identification.algorithm = 'none'", "only in dev", NULL);
    const char *mock_tls [] = { "MSGX_KAFKA_SECURITY_PROTOCOL=ssl", NULL };
    s_expect (mock_tls, "embedded mock cluster", "plaintext only", NULL);
    //  The safety settings stay refused whatever the security.
    const char *weak [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_PROTOCOL=ssl", "MSGX_KAFKA_ACKS=1", NULL };
    s_expect (weak, "msgx.kafka.acks", "weakens producer safety", NULL);
    const char *secured [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_PROTOCOL=sasl_ssl",
                               "MSGX_KAFKA_SECURITY_SASL_MECHANISMS=SCRAM-SHA-256", "MSGX_KAFKA_SECURITY_SASL_USERNAME=u",
                               "MSGX_KAFKA_SECURITY_SASL_PASSWORD=p", NULL };
    s_expect (secured, NULL);

    //  PostgreSQL: prod refuses a conninfo that does not verify the server.
    const char *require [] = { S_PROD, "MSGX_KAFKA_SECURITY_PROTOCOL=ssl",
                               "MSGX_PG_CONNINFO=host=db dbname=msgx password=pg-Secret-1 sslmode=require", NULL };
    s_expect (require, "msgx.pg.conninfo", "sslmode require does not verify the server", NULL);
    const char *unset [] = { S_PROD, "MSGX_KAFKA_SECURITY_PROTOCOL=ssl",
                             "MSGX_PG_CONNINFO=postgresql://msgx@db/msgx", NULL };
    s_expect (unset, "sslmode prefer does not verify the server", NULL);
    const char *uri [] = { S_PROD, "MSGX_KAFKA_SECURITY_PROTOCOL=ssl",
                           "MSGX_PG_CONNINFO=postgresql://msgx@db/msgx?sslmode=verify-ca", NULL };
    s_expect (uri, NULL);
    const char *trusted [] = { S_PROD, "MSGX_KAFKA_SECURITY_PROTOCOL=ssl", "MSGX_PG_ALLOW_UNVERIFIED=true",
                               "MSGX_PG_CONNINFO=host=db dbname=msgx sslmode=require", NULL };
    s_expect (trusted, NULL);

    //  The mailbox: prod verifies over TCP, not over a local socket.
    const char *mailbox [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_PROTOCOL=ssl",
                               "MAILBOX_SHARED_MYSQL_ENABLED=true", "MAILBOX_SHARED_MYSQL_USER=u",
                               "MAILBOX_SHARED_MYSQL_SSL_MODE=required", NULL };
    s_expect (mailbox, "mailbox.shared-mysql.ssl-mode = 'required'", "prod verifies the mailbox server", NULL);
    const char *local [] = { S_PROD, S_PG_OK, "MSGX_KAFKA_SECURITY_PROTOCOL=ssl",
                             "MAILBOX_SHARED_MYSQL_ENABLED=true", "MAILBOX_SHARED_MYSQL_USER=u",
                             "MAILBOX_SHARED_MYSQL_SOCKET=/run/mysqld/mysqld.sock", NULL };
    s_expect (local, NULL);
    const char *half [] = { "MAILBOX_SHARED_MYSQL_SSL_MODE=verify-full", "MAILBOX_SHARED_MYSQL_SSL_CERT=/c.pem", NULL };
    s_expect (half, "mailbox.shared-mysql.ssl-key", "needs its key", NULL);
    const char *mode [] = { "MAILBOX_SHARED_MYSQL_SSL_MODE=preferred", NULL };
    s_expect (mode, "must be disabled, required or verify-full", NULL);
}

//  A secret file of mode mode holding text; the path (caller frees).
static char *
s_secret_file (const char *name, const char *text, mode_t mode)
{
    char *path = s_write (name, text);
    assert_int_equal (chmod (path, mode), 0);
    return path;
}

static void
test_secrets_from_files (void **state)
{
    char *mailbox = s_secret_file ("mailbox.pw", "mb-Secret-2\n", 0600);
    char *sasl = s_secret_file ("sasl.pw", "sasl-Secret-3", 0640);
    char *conninfo = s_secret_file ("conninfo", "host=db dbname=msgx password=pg-Secret-1 sslmode=verify-full\n", 0600);
    char *text = zsys_sprintf (
        "msgx\n"
        "    profile = prod\n"
        "    kafka\n"
        "        bootstrap-servers = k1:9093\n"
        "        security\n"
        "            protocol = sasl_ssl\n"
        "            sasl.mechanisms = SCRAM-SHA-512\n"
        "            sasl.username = msgx\n"
        "            sasl.password-file = \"%s\"\n"
        "mailbox.shared-mysql.password-file = \"%s\"\n", sasl, mailbox);
    char *path = s_secret_file ("secrets.zpl", text, 0640);
    free (text);
    char *env_conninfo = zsys_sprintf ("MSGX_PG_CONNINFO_FILE=%s", conninfo);
    const char *envp [] = { env_conninfo, NULL };
    zlist_t *errors = NULL;
    mx_config_t *config = mx_config_load (path, (char **) envp, &errors, NULL);
    s_dump (errors);
    assert_non_null (config);
    //  The content without its trailing newline.
    assert_string_equal (config->mailbox_shared_mysql_password, "mb-Secret-2");
    assert_string_equal (config->kafka_security_sasl_password, "sasl-Secret-3");
    assert_string_equal (config->pg_conninfo, "host=db dbname=msgx password=pg-Secret-1 sslmode=verify-full");
    //  Masked in the dump, also inside the conninfo.
    json_t *dump = mx_config_to_json (config);
    char *json = json_dumps (dump, 0);
    assert_null (strstr (json, "Secret"));
    assert_non_null (strstr (json, "password=***"));
    free (json);
    json_decref (dump);
    mx_config_destroy (&config);
    zlist_destroy (&errors);

    //  The value and its file at once: refused, naming both, never the value.
    char *env_both = zsys_sprintf ("MAILBOX_SHARED_MYSQL_PASSWORD_FILE=%s", mailbox);
    const char *both [] = { "MAILBOX_SHARED_MYSQL_PASSWORD=mb-Secret-2", env_both, NULL };
    config = mx_config_load (NULL, (char **) both, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, "MAILBOX_SHARED_MYSQL_PASSWORD and MAILBOX_SHARED_MYSQL_PASSWORD_FILE", NULL));
    zlist_destroy (&errors);
    //  Only secrets come from files.
    const char *not_secret [] = { "MSGX_LOG_LEVEL_FILE=/etc/hostname", NULL };
    zlist_t *warnings = NULL;
    config = mx_config_load (NULL, (char **) not_secret, &errors, &warnings);
    assert_non_null (config);
    assert_true (s_has (warnings, "MSGX_LOG_LEVEL_FILE matches no configuration key", NULL));
    mx_config_destroy (&config);
    zlist_destroy (&errors);
    zlist_destroy (&warnings);
    const char *missing [] = { "MAILBOX_SHARED_MYSQL_PASSWORD_FILE=/nonexistent/pw", NULL };
    s_expect (missing, "mailbox.shared-mysql.password", "cannot read the secret file /nonexistent/pw", NULL);

    free (env_both);
    free (env_conninfo);
    s_remove (&path);
    s_remove (&conninfo);
    s_remove (&sasl);
    s_remove (&mailbox);
}

static void
test_prod_refuses_files_others_read (void **state)
{
    char *secret = s_secret_file ("sasl.pw", "sasl-Secret-3", 0644);
    char *text = zsys_sprintf (
        "msgx.profile = prod\n"
        "msgx.pg.conninfo = \"host=db sslmode=verify-full\"\n"
        "msgx.kafka.bootstrap-servers = k1:9093\n"
        "msgx.kafka.security.protocol = sasl_ssl\n"
        "msgx.kafka.security.sasl.mechanisms = PLAIN\n"
        "msgx.kafka.security.sasl.username = msgx\n"
        "msgx.kafka.security.sasl.password-file = \"%s\"\n", secret);
    char *path = s_secret_file ("open.zpl", text, 0644);
    zlist_t *errors = NULL;
    mx_config_t *config = mx_config_load (path, NULL, &errors, NULL);
    assert_null (config);
    s_dump (errors);
    assert_true (s_has (errors, "config file", path, "readable by others (mode 0644)", NULL));
    assert_true (s_has (errors, "msgx.kafka.security.sasl.password", secret, "readable by others (mode 0644)", NULL));
    zlist_destroy (&errors);
    //  Private files pass; dev does not care.
    assert_int_equal (chmod (path, 0640), 0);
    assert_int_equal (chmod (secret, 0600), 0);
    config = mx_config_load (path, NULL, &errors, NULL);
    s_dump (errors);
    assert_non_null (config);
    mx_config_destroy (&config);
    zlist_destroy (&errors);
    free (text);
    s_remove (&path);
    s_remove (&secret);
}

static void
test_secret_never_in_a_message (void **state)
{
    //  A password line cut short, a bad file line, a conninfo with every
    //  kind of password, values that do not parse: no message repeats one.
    char *path = s_write ("cut.zpl",
        "mailbox.shared-mysql.password = \"pw-Secret-4\n"
        "msgx.kafka.security.sasl.password = pw-Secret-5#x\n");
    zlist_t *errors = NULL;
    mx_config_t *config = mx_config_load (path, NULL, &errors, NULL);
    assert_null (config);
    assert_int_equal (zlist_size (errors), 2);
    for (char *line = (char *) zlist_first (errors); line; line = (char *) zlist_next (errors))
        if (strstr (line, "Secret"))
            fail_msg ("a secret in: %s", line);
    zlist_destroy (&errors);
    s_remove (&path);

    const char *envp [] = { "MSGX_PROFILE=prod",
        "MSGX_PG_CONNINFO=host=db password=pw-Secret-6 sslpassword=pw-Secret-7 sslmode=require", NULL };
    config = mx_config_load (NULL, (char **) envp, &errors, NULL);
    assert_null (config);
    assert_true (s_has (errors, "password=*** sslpassword=***", NULL));
    for (char *line = (char *) zlist_first (errors); line; line = (char *) zlist_next (errors))
        if (strstr (line, "Secret"))
            fail_msg ("a secret in: %s", line);
    zlist_destroy (&errors);

    mx_config_t *uri = mx_config_new_defaults ();
    assert_int_equal (mx_config_set (uri, "msgx.pg.conninfo",
        "postgresql://msgx:pw-Secret-8@db/msgx?sslpassword=pw-Secret-9&sslmode=verify-full", NULL), 0);
    json_t *dump = mx_config_to_json (uri);
    const char *masked = json_string_value (json_object_get (dump, "msgx.pg.conninfo"));
    assert_string_equal (masked, "postgresql://msgx:***@db/msgx?sslpassword=***&sslmode=verify-full");
    json_decref (dump);
    mx_config_destroy (&uri);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_defaults),
        cmocka_unit_test (test_field_names_and_env_names),
        cmocka_unit_test_setup_teardown (test_precedence, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_file_forms, s_setup, s_teardown),
        cmocka_unit_test (test_durations),
        cmocka_unit_test (test_scalars_and_lists),
        cmocka_unit_test (test_validation_rules),
        cmocka_unit_test (test_prod_rules),
        cmocka_unit_test (test_compat_entry_rules),
        cmocka_unit_test_setup_teardown (test_all_problems_together, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_unknown_and_duplicate_keys, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_unparsable_file, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_zpl_traps_name_the_line_never_the_value, s_setup, s_teardown),
        cmocka_unit_test (test_environment),
        cmocka_unit_test (test_to_json),
        cmocka_unit_test (test_print_reference),
        cmocka_unit_test_setup_teardown (test_deploy_samples, s_setup, s_teardown),
        cmocka_unit_test (test_prod_security_rules),
        cmocka_unit_test_setup_teardown (test_secrets_from_files, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_prod_refuses_files_others_read, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_secret_never_in_a_message, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
