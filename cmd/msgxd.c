/*  msgxd - the message-exchange daemon.

    Thin main: load the configuration, start the control actor, wait for a
    signal or a fatal report, stop everything in reverse order.
*/
#include <czmq.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include "mx_actor.h"
#include "mx_clock.h"
#include "mx_config.h"
#include "mx_control.h"
#include "mx_kafka_embedded.h"
#include "mx_log.h"
#include "mx_version.h"

#ifdef MX_TEST_HOOKS
#include "mx_test_hooks.h"
#endif

#define ACTOR "main"
#define CONFIG_ACTOR "config"
#define SHUTDOWN_LIMIT_S 5

extern char **environ;

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: msgxd [--config FILE] [--check-config] [--config-reference]\n"
        "             [--config-man] [--config-sample dev|prod] [--version]\n"
        "  --config FILE       ZPL configuration file (optional: defaults + environment)\n"
        "  --check-config      validate the configuration, print it as JSON and exit\n"
        "  --config-reference  print every configuration key as a Markdown table\n"
        "  --config-man        print the manual page msgxd.conf(5) (roff)\n"
        "  --config-sample P   print a commented ZPL file with every key for profile P\n"
        "Environment overrides: the key upper-cased, dots and dashes as '_'\n"
        "(msgx.pipeline.claim-batch -> MSGX_PIPELINE_CLAIM_BATCH).\n");
}

//  --------------------------------------------------------------------------
//  --config-sample: deploy/config/msgxd-{dev,prod}.zpl are this output, so
//  the samples always hold exactly the keys of core/mx_config.def. The
//  build regenerates them and a test fails when a committed copy is stale.

typedef struct {
    const char *key;
    const char *type;
    const char *def;
    const char *doc;
} s_key_t;

static const s_key_t s_keys [] = {
#define MX_CONFIG_KEY(field, key, type, def, doc) { key, #type, def, doc },
#include "mx_config.def"
#undef MX_CONFIG_KEY
};

//  When to change each key. The key table has no such field yet; a key
//  without advice prints S_NO_ADVICE, which the samples test refuses.
#define S_NO_ADVICE "(no operating advice recorded for this key)"
#define S_ADVICE(field) [MX_CONFIG_IDX_##field]

static const char *s_advice [MX_CONFIG_KEY_COUNT] = {
    S_ADVICE (profile) =
        "prod on every production and staging host; dev only on a workstation.",
    S_ADVICE (stubs) =
        "Leave false. Only for development without servers.",
    S_ADVICE (log_level) =
        "info in service; debug for a short while to follow one problem (several lines per message). "
        "Change it without a restart: edit it here and systemctl reload msgxd, or for one actor "
        "msgxctl log-level debug processor (until the next reload or restart).",
    S_ADVICE (pg_conninfo) =
        "msgexchange's own database, never the mailbox. Keep the password out of this file: put it "
        "in a pgpass file (the systemd unit sets PGPASSFILE=/etc/msgxd/pgpass), or give the whole "
        "value from a file (conninfo-file, MSGX_PG_CONNINFO_FILE) or in MSGX_PG_CONNINFO. prod needs "
        "sslmode=verify-full (or verify-ca) with sslrootcert. msgxd adds connect_timeout=5 and TCP "
        "keepalives unless set here.",
    S_ADVICE (pg_allow_unverified) =
        "Leave false: prod then refuses a conninfo below sslmode=verify-ca (PGSSLMODE counts when the "
        "conninfo sets none). true only where PostgreSQL is reached over a network you trust; every "
        "start logs a warning.",
    S_ADVICE (pg_statement_timeout) =
        "Raise only if a legitimate statement (history sweep, archive) is cancelled with "
        "'statement timeout' in the log; a hung database must still end as a counted failure.",
    S_ADVICE (instance_lock_key) =
        "Same value on the active and the standby of one database. Change it only if another "
        "application uses this advisory lock key, and then on every instance at once.",
    S_ADVICE (instance_standby_retry) =
        "How often an instance that cannot reach PostgreSQL or the lock tries again; failover "
        "takes about this long once the active instance's session is gone.",
    S_ADVICE (pipeline_autostart) =
        "false keeps ingress and pump paused after every start until msgxctl resume: use it for the "
        "first start and for a cutover. true in normal service, so a restart or a standby takeover "
        "resumes by itself.",
    S_ADVICE (pipeline_poll_interval) =
        "The idle pace: while rows keep arriving ingress polls every poll-fast, so this bounds only the "
        "wait of a row after a quiet spell and the idle load on both databases (one read of each per poll). "
        "A full batch polls again at once, so it does not limit catch-up speed.",
    S_ADVICE (pipeline_poll_fast) =
        "Bounds how long a row waits to be seen while traffic flows (5 ms on average at 10ms). Raise "
        "(e.g. 50ms) to spare the mailbox server under steady light traffic; it never polls faster than "
        "poll-interval.",
    S_ADVICE (pipeline_claim_batch) =
        "Raise (200 to 1000) to catch up a large backlog faster.",
    S_ADVICE (pipeline_max_attempts) =
        "With backoff-ms it bounds how long one failing message holds the FIFO (every message "
        "behind it waits). Raise it when dependency outages are longer than the backoff covers; "
        "DEAD(EXHAUSTED) messages can be replayed.",
    S_ADVICE (pipeline_backoff_ms) =
        "Defaults give about 31 s from the first failure to DEAD(EXHAUSTED).",
    S_ADVICE (pipeline_backoff_cap_ms) =
        "Only matters when backoff-ms holds longer delays; rarely changed.",
    S_ADVICE (pipeline_head_deadline) =
        "Longest time one message may hold the FIFO head, whatever attempts remain. Lower it when a "
        "blocked FIFO costs more than a replay; raise it for long planned outages.",
    S_ADVICE (pipeline_crash_loop_starts) =
        "Each count is one death of msgxd (a crash, a kill, the watchdog) with the message in hand. "
        "Keep it below the supervisor's start limit (systemd StartLimitBurst, 5 in the shipped unit), "
        "or the unit gives up before the message is quarantined.",
    S_ADVICE (pipeline_message_deadline) =
        "Well above the slowest healthy batch (a full process-batch takes about a second); a hang "
        "past it makes msgxd exit for its supervisor. Raise it with process-batch or statement-timeout.",
    S_ADVICE (pipeline_max_commit_delay) =
        "Must exceed the mailbox's longest delay between allocating an ID and committing its row: "
        "agree it with the mailbox owner. A row committed after its hole was released is only "
        "detected (late-detect-period), never processed. Never lower it for speed.",
    S_ADVICE (pipeline_overdue_backfill) =
        "Keep it below the mailbox owner's retention of processed rows. Never lower it for speed.",
    S_ADVICE (pipeline_backfill_period) =
        "Marks are first tried at once; the sweep only catches up after mailbox failures.",
    S_ADVICE (pipeline_backfill_batch) =
        "As large as msgx.pipeline.process-batch, a processing batch's marks take one round "
        "(64 marks to a mailbox transaction). Raise to catch up faster after a long mailbox outage.",
    S_ADVICE (pipeline_backfill_max_attempts) =
        "With the default backoff 20 attempts cover about 4 hours of mailbox trouble; abandoned "
        "marks show in msgx_pipeline_backfill_abandoned and need msgxctl backfill recover.",
    S_ADVICE (pipeline_backfill_backoff) =
        "Rarely changed.",
    S_ADVICE (pipeline_backfill_backoff_cap) =
        "Rarely changed; must not be below backfill-backoff.",
    S_ADVICE (pipeline_delivery_batch) =
        "As large as msgx.pipeline.process-batch, delivery keeps pace with a draining backlog (at 100 "
        "it fell behind and cost a third more database time per message). Raise when the brokers are far away; "
        "lower it with process-batch.",
    S_ADVICE (pipeline_delivery_drain_rounds) =
        "Raise together with delivery-batch to drain a large outbox faster.",
    S_ADVICE (pipeline_process_batch) =
        "Only a backlog fills a batch (a batch of 2000 takes about a third of a second); lower it "
        "(e.g. 50) if long transactions hurt other users of the database, 1 to rule batching out "
        "while diagnosing. At most 10000.",
    S_ADVICE (pipeline_batch_bytes) =
        "Bounds the processor's memory: a batch and its read-ahead hold at most this much raw text "
        "(their decoded state is a few times less). Raise only with memory to spare and large messages.",
    S_ADVICE (pipeline_cutover_watermark) =
        "Set it only for the first start of a fresh instance, then empty it again: min = every row "
        "now in the mailbox, zero = from ID 1 with the hole rules, max = only rows arriving from now "
        "on, an ID = rows above it. Refused once the instance has processed anything; msgxctl "
        "cutover does the same at run time.",
    S_ADVICE (pipeline_late_detect_period) =
        "5m in production: a hit means the mailbox committed a row after its hole was released "
        "(raise max-commit-delay and talk to the mailbox owner).",
    S_ADVICE (pipeline_late_detect_batch) =
        "Rarely changed.",
    S_ADVICE (pipeline_late_detect_ids) =
        "Bounds one round's mailbox reads (pages of 256 IDs); every ID of every released hole is "
        "still covered, a wide one over several rounds. Rarely changed.",
    S_ADVICE (pipeline_raw_retention) =
        "Long enough to repeat any replay, shadow run or comparison you may need (7d covers a week "
        "of cutover work); each message costs about its compressed size (docs/performance.md).",
    S_ADVICE (pipeline_ignore_types) =
        "Change only with the integration team: a listed type never reaches Kafka.",
    S_ADVICE (operation_day_zone) =
        "The airport's zone. Set it before the first message; changing it later moves flights "
        "between operation days.",
    S_ADVICE (operation_day_cutoff_hour) =
        "The AODB's own operation-day convention; set it before the first message.",
    S_ADVICE (identity_include_day_boundary) =
        "Part of the deduplication identity: decide before the first message. Changing it in "
        "service lets duplicates through or skips messages.",
    S_ADVICE (codec_max_message_bytes) =
        "Raise only if legitimate schedule snapshots are larger.",
    S_ADVICE (codec_max_attributes) =
        "Real SIS elements carry at most 3; libxml2 compares attributes pairwise, so keep it low.",
    S_ADVICE (codec_max_nodes) =
        "A 2,000-flight DNLD has about 224,000 nodes (0.13 per byte); raise with max-message-bytes only.",
    S_ADVICE (codec_max_depth) =
        "SIS messages nest 5 deep.",
    S_ADVICE (codec_max_text_pieces) =
        "Real values are one piece of text, two with a comment.",
    S_ADVICE (codec_max_name_length) =
        "SIS names are 4 characters; the longest seen (an xsi: attribute) is 29.",
    S_ADVICE (codec_max_namespaces) =
        "Real messages declare at most one namespace.",
    S_ADVICE (codec_max_distinct_names) =
        "Real messages use about 50 names; unknown elements are kept, so leave room.",
    S_ADVICE (schd_flush_period) =
        "Lower for fresher state on the latest-state topic at the cost of more Kafka traffic.",
    S_ADVICE (schd_flush_limit) =
        "Raise if the latest-state topic falls behind after a large schedule download.",
    S_ADVICE (health_backlog_cache_ttl_ms) =
        "The backlog is one aggregate query over proc_state; the cache keeps frequent scrapes off "
        "the database. 0 only while diagnosing.",
    S_ADVICE (history_history_store_enabled) =
        "true in production so old flights move to the history tables; false keeps every flight live.",
    S_ADVICE (history_run_at) =
        "A quiet hour at the airport.",
    S_ADVICE (history_retention_days) =
        "Raise if readers of msgexchange's database need older flights live.",
    S_ADVICE (history_quiet_days) =
        "Rarely changed.",
    S_ADVICE (history_snap_log_retention_days) =
        "Lower only to save space.",
    S_ADVICE (archive_after_days) =
        "A message can only be replayed while its row is live: raise it if operators replay older messages.",
    S_ADVICE (outbox_retention) =
        "Delivered events are kept this long for msgxctl show and for forensics; DEAD and PENDING "
        "events are never deleted, whatever their age. The outbox holds about retention x events a "
        "day (two a flight change) at some 2 KB each (docs/operations.md).",
    S_ADVICE (outbox_purge_period) =
        "Rarely changed: each pass deletes in transactions of 500 rows.",
    S_ADVICE (shadow) =
        "true on a shadow instance that reads the production mailbox beside the live system: it "
        "writes no mark, no compat row and no request.",
    S_ADVICE (shadow_topic_suffix) =
        "Keep the default unless the shadow topics need another name; never empty on a shadow "
        "instance (it would publish to the production topics, which msgxd refuses).",
    S_ADVICE (shadow_publish) =
        "false when the shadow run is compared from the database alone and no topic should be written.",
    S_ADVICE (requests_timeout) =
        "Match the upstream's usual answer time for schedule and reference requests.",
    S_ADVICE (requests_daily_schedule_at) =
        "A daily schedule request (RQFD) that resynchronises the schedule; set it once agreed with "
        "the AODB team.",
    S_ADVICE (kafka_bootstrap_servers) =
        "Two or three brokers of the cluster. Empty is refused in prod; in dev it starts the "
        "in-process mock cluster.",
    S_ADVICE (kafka_topic_msg) =
        "Change only together with the consumers; create the topic first when auto-creation is off.",
    S_ADVICE (kafka_topic_schd) =
        "Create it with cleanup.policy=compact; change only together with the consumers.",
    S_ADVICE (kafka_topic_reference) =
        "Create it with cleanup.policy=compact; change only together with the consumers.",
    S_ADVICE (kafka_acks) =
        "Not tunable: anything but all is refused.",
    S_ADVICE (kafka_enable_idempotence) =
        "Not tunable: false is refused.",
    S_ADVICE (kafka_max_in_flight) =
        "5 is fastest; idempotence keeps the order. Above 5 is refused.",
    S_ADVICE (kafka_linger_ms) =
        "Raise (10 to 50) for throughput over a slow link; 0 for the lowest latency.",
    S_ADVICE (kafka_delivery_timeout) =
        "Raise if broker fail-overs (leader elections) take longer.",
    S_ADVICE (republish_rate) =
        "A job writes at most this many events a second, in steps of a tenth of it (up to 500), each "
        "its own transaction, so the outbox and the brokers are not flooded while traffic flows.",
    S_ADVICE (delivery_max_attempts) =
        "With delivery.backoff it decides how long a Kafka outage may last before events become "
        "DEAD (defaults: about 7 minutes); raise both where outages last longer.",
    S_ADVICE (delivery_backoff) =
        "Lengthen the last delay to ride out long outages without many attempts.",
    S_ADVICE (delivery_semantics) =
        "Keep exactly-once: consumers then read every event once without deduplicating. "
        "at-least-once only saves the look at the topic a new producer makes (milliseconds); "
        "switching either way is safe at any restart.",
    S_ADVICE (delivery_inspect_timeout) =
        "Long enough to read the last records of every partition of the larger topic; a look that "
        "fails is retried at the next round, and nothing is sent meanwhile.",
    S_ADVICE (http_bind) =
        "An address Prometheus and the load balancer's probes reach; it serves only reads "
        "(/health, /health/live, /health/ready, /metrics), without authentication: bind to an "
        "internal interface and firewall the port.",
    S_ADVICE (http_max_body_bytes) =
        "Keep it at or above codec.max-message-bytes.",
    S_ADVICE (http_idle_timeout) =
        "Raise it only for clients on slow links that pause mid-request; each idle connection holds "
        "one of http.max-connections slots.",
    S_ADVICE (http_max_connections) =
        "Enough for the scrapers, the probes and the AODB's writers together; a connection beyond it "
        "is closed at once.",
    S_ADVICE (http_per_ip_connections) =
        "One client (or a NAT in front of many) cannot take every slot; raise it only for a proxy "
        "that carries many clients.",
    S_ADVICE (http_compat_enabled) =
        "Only when the AODB writes through HTTP instead of the mailbox: the entry writes "
        "authoritative flight messages, so it needs token-file and/or allow.",
    S_ADVICE (http_compat_bind) =
        "An internal address the AODB reaches, never 0.0.0.0 on a shared network; firewall it to the "
        "AODB's hosts.",
    S_ADVICE (http_compat_token_file) =
        "/etc/msgxd/compat-token, owner msgx, mode 0600 (prod refuses a file open to others); the "
        "AODB sends Authorization: Bearer <token>. Change it by replacing the file and restarting.",
    S_ADVICE (http_compat_allow) =
        "The AODB's addresses, e.g. 10.20.0.15/32; others get 403 before the token is looked at.",
    S_ADVICE (kafka_security_protocol) =
        "sasl_ssl or ssl in production (prod refuses the unencrypted ones unless allow-plaintext). "
        "With sasl_ssl set sasl.mechanisms, sasl.username and the password (from a file: "
        "sasl.password-file).",
    S_ADVICE (kafka_security_allow_plaintext) =
        "Leave false. true accepts plaintext or sasl_plaintext in prod, for brokers on a network "
        "you trust; every start logs a warning.",
    S_ADVICE (kafka_security_ssl_ca_location) =
        "The CA of the brokers' certificates, readable by the msgx user; empty uses the system's CAs.",
    S_ADVICE (kafka_security_ssl_certificate_location) =
        "Only when the brokers authenticate clients by certificate (mutual TLS); set the key too.",
    S_ADVICE (kafka_security_ssl_key_location) =
        "The key of ssl.certificate.location, mode 0600 or 0640 group msgx.",
    S_ADVICE (kafka_security_ssl_key_password) =
        "Only for an encrypted key. Keep it out of this file: ssl.key.password-file names a file "
        "holding it, or set MSGX_KAFKA_SECURITY_SSL_KEY_PASSWORD_FILE.",
    S_ADVICE (kafka_security_ssl_endpoint_identification_algorithm) =
        "Leave https: the broker's certificate must name the host in bootstrap-servers. none is "
        "refused in prod.",
    S_ADVICE (kafka_security_sasl_mechanisms) =
        "What the brokers offer: SCRAM-SHA-512 or SCRAM-SHA-256 (the password never crosses the "
        "network), PLAIN only inside TLS.",
    S_ADVICE (kafka_security_sasl_username) =
        "The producer account the Kafka team made for msgxd.",
    S_ADVICE (kafka_security_sasl_password) =
        "Keep it out of this file: sasl.password-file names a file holding it (mode 0600 or 0640 "
        "group msgx), or set MSGX_KAFKA_SECURITY_SASL_PASSWORD_FILE in msgxd.env.",
    S_ADVICE (api_enabled) =
        "Off by default: turn it on where consumers or operators read flight state over HTTP. It reads "
        "PostgreSQL only, so a standby serves it as well as the active: point heavy readers at the standby.",
    S_ADVICE (api_bind) =
        "Loopback unless readers on other hosts need it; then an internal address, firewalled, with "
        "token-file set.",
    S_ADVICE (api_token_file) =
        "Set it whenever the bind is not loopback: /etc/msgxd/api-token, owner msgx, mode 0600 (prod "
        "refuses a file open to others); readers send Authorization: Bearer <token>.",
    S_ADVICE (api_page_size) =
        "Bounds the work of one request; readers page with next_cursor. Raise only if a reader needs "
        "bigger pages and the database keeps up.",
    S_ADVICE (api_statement_timeout) =
        "A read that takes longer is refused with 503 rather than holding a session; keep it well "
        "under the readers' own timeouts.",
    S_ADVICE (api_window_days) =
        "1 covers yesterday, today and tomorrow in the airport zone for GET /all/flights.",
    S_ADVICE (api_readers) =
        "Each reader holds a PostgreSQL session and a thread. 1 leaves the most CPU to processing on an "
        "instance that drains; 2 or more keeps single-flight reads answered while another reader streams "
        "GET /all/flights or waits on a busy database: on a standby serving reads, or with cores to spare.",
    S_ADVICE (api_nice) =
        "Leave 0 unless reads must stay fast while a backlog drains on the same cores; then e.g. -5 "
        "with LimitNICE=-5 (or CAP_SYS_NICE) in the unit. It orders msgxd's own threads only: "
        "PostgreSQL's backends keep theirs.",
    S_ADVICE (api_cache_flights) =
        "Used only while this instance is active (it alone writes flight state, so it keeps the cache "
        "coherent); a standby reads PostgreSQL. About 2 KB a flight: 4096 with 8 MiB covers a busy day. "
        "0 when memory is tight.",
    S_ADVICE (api_cache_bytes) =
        "Bounds the cache's memory with msgx.api.cache-flights, whichever is reached first; counts "
        "into the peak RSS (docs/performance.md).",
    S_ADVICE (api_read_during_commit) =
        "previous keeps single-flight reads fast while a backlog drains; every change a Kafka record "
        "or msgxctl announces is already answered. wait when a client compares GET /flights/{flid} "
        "with PostgreSQL or with the lists, which read it (docs/architecture.md).",
    S_ADVICE (admin_endpoint) =
        "An ipc:// path is mode 0600 (only the msgx user and root connect; see admin.group); under "
        "systemd ipc:///run/msgxd/admin.sock, which msgxctl uses by default. tcp:// has no "
        "authentication of its own: it is refused unless on a loopback address (127.0.0.1, [::1]) "
        "or with CURVE (admin.curve); the audit log then records the peer's address (and its "
        "CURVE key) instead of its uid.",
    S_ADVICE (admin_group) =
        "msgx-admin (created by the package) lets its members run msgxctl without root: add "
        "operators with adduser NAME msgx-admin. The msgx user must be a member too, to hand the "
        "socket to the group.",
    S_ADVICE (admin_curve_server_cert) =
        "Only for a tcp:// admin endpoint reached from other hosts. Make the pair once with "
        "zcert (czmq): FILE holds the public key, FILE_secret the secret one (mode 0640, group "
        "msgx); hand FILE to the operators for msgxctl --curve-server.",
    S_ADVICE (admin_curve_clients) =
        "One public certificate file per operator (msgxctl --curve-cert FILE; FILE goes here, "
        "FILE_secret stays with the operator). Removing a file revokes that client.",
    S_ADVICE (admin_max_request_bytes) =
        "Rarely changed: the largest request (replay --id with thousands of ids) is a few tens of "
        "kilobytes.",
    S_ADVICE (mailbox_shared_mysql_enabled) =
        "true in production; false turns ingress, backfill, the compat entry and requests off.",
    S_ADVICE (mailbox_shared_mysql_host) =
        "The AODB's MySQL or MariaDB server.",
    S_ADVICE (mailbox_shared_mysql_port) =
        "The server's port.",
    S_ADVICE (mailbox_shared_mysql_user) =
        "An account allowed to read CMINMSGS, update its processed mark and insert into COUTMSGS.",
    S_ADVICE (mailbox_shared_mysql_password) =
        "Keep it out of this file: password-file names a file holding it (mode 0600 or 0640 group "
        "msgx), or set MAILBOX_SHARED_MYSQL_PASSWORD_FILE (or the password itself) in the service's "
        "environment file (mode 0600).",
    S_ADVICE (mailbox_shared_mysql_database) =
        "The schema that holds CMINMSGS and COUTMSGS.",
    S_ADVICE (mailbox_shared_mysql_socket) =
        "Only when the mailbox server runs on this host.",
    S_ADVICE (mailbox_shared_mysql_connect_timeout) =
        "Rarely changed.",
    S_ADVICE (mailbox_shared_mysql_read_timeout) =
        "Raise only if large mailbox reads time out on a slow link.",
    S_ADVICE (mailbox_shared_mysql_write_timeout) =
        "Rarely changed.",
    S_ADVICE (mailbox_shared_mysql_time_zone) =
        "The offset in which the AODB writes its DATETIME columns.",
    S_ADVICE (mailbox_shared_mysql_ssl_mode) =
        "verify-full in production: encrypted, the certificate checked against ssl-ca and the host "
        "name. required encrypts without checking who answers; prod refuses it (and disabled) over "
        "TCP unless allow-unverified.",
    S_ADVICE (mailbox_shared_mysql_ssl_ca) =
        "The CA of the mailbox server's certificate, from the AODB team.",
    S_ADVICE (mailbox_shared_mysql_ssl_cert) =
        "Only when the mailbox server requires client certificates (REQUIRE X509); set the key too.",
    S_ADVICE (mailbox_shared_mysql_ssl_key) =
        "The key of ssl-cert, mode 0600 or 0640 group msgx.",
    S_ADVICE (mailbox_shared_mysql_allow_unverified) =
        "Leave false. true accepts ssl-mode required or disabled in prod, for a mailbox on a network "
        "you trust; every start logs a warning.",
    S_ADVICE (mailbox_processed_value) =
        "Agree it with the mailbox owner.",
    S_ADVICE (mailbox_outbound_routing_rqfd) =
        "Agree it with the AODB team.",
    S_ADVICE (mailbox_outbound_routing_rqrd) =
        "Agree it with the AODB team.",
};

//  Where a sample departs from the default, and why.
typedef struct {
    int idx;
    const char *value;
    const char *why;
} s_sample_value_t;

static const s_sample_value_t s_dev_values [] = {
    { MX_CONFIG_IDX_pipeline_autostart, "true", "start processing at once" },
};

static const s_sample_value_t s_prod_values [] = {
    { MX_CONFIG_IDX_profile, "prod", "refuses stubs and the mock cluster" },
    { MX_CONFIG_IDX_pg_conninfo,
      "host=pg.example.internal port=5432 dbname=msgx user=msgx sslmode=verify-full sslrootcert=/etc/msgxd/tls/pg-ca.pem",
      "placeholder host and CA; the password in /etc/msgxd/pgpass" },
    { MX_CONFIG_IDX_pipeline_autostart, "true", "a restart or takeover resumes by itself" },
    { MX_CONFIG_IDX_pipeline_late_detect_period, "5m", "watch released holes" },
    { MX_CONFIG_IDX_history_history_store_enabled, "true", "daily move of old flights" },
    { MX_CONFIG_IDX_kafka_bootstrap_servers,
      "kafka-1.example.internal:9092,kafka-2.example.internal:9092,kafka-3.example.internal:9092",
      "placeholder brokers" },
    { MX_CONFIG_IDX_kafka_security_protocol, "ssl", "encrypted; sasl_ssl when the brokers want SASL" },
    { MX_CONFIG_IDX_kafka_security_ssl_ca_location, "/etc/msgxd/tls/kafka-ca.pem", "placeholder CA" },
    { MX_CONFIG_IDX_http_bind, "0.0.0.0:8080", "reachable by Prometheus and the probes; firewall it" },
    { MX_CONFIG_IDX_http_compat_token_file, "/etc/msgxd/compat-token",
      "read only when compat.enabled = true; owner msgx, mode 0600" },
    { MX_CONFIG_IDX_admin_endpoint, "ipc:///run/msgxd/admin.sock", "the unit's RuntimeDirectory" },
    { MX_CONFIG_IDX_admin_group, "msgx-admin", "members of msgx-admin may run msgxctl" },
    { MX_CONFIG_IDX_mailbox_shared_mysql_enabled, "true", "the real mailbox" },
    { MX_CONFIG_IDX_mailbox_shared_mysql_host, "aodb-mysql.example.internal", "placeholder host" },
    { MX_CONFIG_IDX_mailbox_shared_mysql_user, "msgx", "placeholder account" },
    { MX_CONFIG_IDX_mailbox_shared_mysql_ssl_mode, "verify-full", "encrypted and verified" },
    { MX_CONFIG_IDX_mailbox_shared_mysql_ssl_ca, "/etc/msgxd/tls/mailbox-ca.pem", "placeholder CA" },
};

#define S_WIDTH 80

//  "#   " comment lines of text, wrapped at S_WIDTH, at depth's indent.
static void
s_comment (FILE *out, int depth, const char *text)
{
    int indent = 4 * depth + 4;
    while (*text) {
        int room = S_WIDTH - indent;
        int length = (int) strlen (text);
        int cut = length;
        if (length > room) {
            cut = room;
            while (cut > 0 && text [cut] != ' ')
                cut--;
            if (cut == 0) {
                cut = room;
                while (text [cut] && text [cut] != ' ')
                    cut++;
            }
        }
        fprintf (out, "%*s#   %.*s\n", 4 * depth, "", cut, text);
        text += cut;
        while (*text == ' ')
            text++;
    }
}

static const char *
s_unit (const s_key_t *key)
{
    size_t length = strlen (key->key);
    const char *suffix = length > 6 ? key->key + length - 6 : key->key;
    if (streq (key->type, "BOOL"))
        return "true or false";
    if (streq (key->type, "DURATION"))
        return streq (suffix + 3, "-ms") ? "duration (500ms, 30s, 10m, 2h, 30d; a bare number is ms)"
                                         : "duration (500ms, 30s, 10m, 2h, 30d)";
    if (streq (key->type, "MS_LIST"))
        return "comma-separated durations";
    if (streq (key->type, "STRING_LIST"))
        return "comma-separated words";
    if (streq (key->type, "TIME_OF_DAY"))
        return "local time HH:MM in the airport zone, or empty";
    if (streq (key->type, "INT"))
        return streq (suffix, "-bytes") ? "integer, bytes"
             : streq (suffix + 1, "-days") ? "integer, days"
             : streq (suffix + 1, "-hour") ? "integer, hour of the day"
             : "integer";
    return "text";
}

//  ZPL value: bare when it is a plain word, else double-quoted.
static void
s_print_value (FILE *out, const char *value)
{
    bool bare = *value != '\0';
    for (const char *scan = value; *scan && bare; scan++)
        bare = isalnum ((unsigned char) *scan) || strchr ("._:,/+-@", *scan);
    //  Our own constants: a double quote inside would need another quoting.
    assert (!strchr (value, '"'));
    fprintf (out, bare ? "%s" : "\"%s\"", value);
}

static void
s_print_key (FILE *out, int idx, const char *name, int depth, const s_sample_value_t *values,
             size_t count, bool *complete)
{
    const s_key_t *key = &s_keys [idx];
    char env [128];
    const char *value = key->def;
    const char *why = NULL;
    for (size_t i = 0; i < count; i++)
        if (values [i].idx == idx) {
            value = values [i].value;
            why = values [i].why;
        }
    char *line = zsys_sprintf ("%s.", key->doc);
    s_comment (out, depth, line);
    free (line);
    line = zsys_sprintf ("%s; default %s; environment %s.", s_unit (key),
                         *key->def ? key->def : "empty",
                         mx_config_env_name (key->key, env, sizeof env));
    line [0] = (char) toupper ((unsigned char) line [0]);
    s_comment (out, depth, line);
    free (line);
    if (!s_advice [idx])
        *complete = false;
    s_comment (out, depth, s_advice [idx] ? s_advice [idx] : S_NO_ADVICE);
    if (why) {
        line = zsys_sprintf ("This sample: %s.", why);
        s_comment (out, depth, line);
        free (line);
    }
    fprintf (out, "%*s%s = ", 4 * depth, "", name);
    s_print_value (out, value);
    fprintf (out, "\n");
}

//  Keys below prefix ("" = top), sections and keys in table order; a
//  blank line between blocks, none right after a section's name.
static void
s_print_section (FILE *out, const char *prefix, int depth, const s_sample_value_t *values,
                 size_t count, bool *complete)
{
    size_t skip = strlen (prefix);
    bool first = depth > 0;
    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++) {
        const char *key = s_keys [idx].key;
        if (strncmp (key, prefix, skip) != 0)
            continue;
        const char *rest = key + skip;
        const char *dot = strchr (rest, '.');
        if (!dot) {
            if (!first)
                fprintf (out, "\n");
            first = false;
            s_print_key (out, idx, rest, depth, values, count, complete);
            continue;
        }
        //  A section: printed where its first key comes.
        size_t name_length = (size_t) (dot - rest);
        bool seen = false;
        for (int before = 0; before < idx && !seen; before++)
            seen = strncmp (s_keys [before].key, key, skip + name_length + 1) == 0;
        if (seen)
            continue;
        if (!first)
            fprintf (out, "\n");
        first = false;
        char *child = zsys_sprintf ("%.*s", (int) (skip + name_length + 1), key);
        fprintf (out, "%*s%.*s\n", 4 * depth, "", (int) name_length, rest);
        s_print_section (out, child, depth + 1, values, count, complete);
        free (child);
    }
}

//  A key without advice is reported on stderr and marked in the output
//  (the samples test refuses the mark); the build goes on.
static int
s_print_sample (FILE *out, bool prod)
{
    fprintf (out,
        "#   msgxd configuration: %s sample\n"
        "#\n"
        "#   Generated from core/mx_config.def by `msgxd --config-sample %s`\n"
        "#   (the copy in the source tree is refreshed by the build, never edited).\n"
        "#   The package installs the prod sample as /etc/msgxd/msgxd.zpl (a\n"
        "#   conffile: your changes survive upgrades); change what your site needs.\n"
        "#\n"
        "#   Format: ZPL (czmq zconfig), sections nested by 4 spaces. A key may also\n"
        "#   be written flat (msgx.pipeline.claim-batch = 50). Quote values holding\n"
        "#   blanks or '#'; write an empty value as \"\". Unknown keys are refused.\n"
        "#   Precedence: defaults < this file < environment (the key upper-cased,\n"
        "#   dots and dashes as '_': MSGX_PIPELINE_CLAIM_BATCH=100).\n"
        "#   Check before starting: msgxd --config FILE --check-config (exit 78 and\n"
        "#   one line per problem when something is wrong).\n",
        prod ? "production" : "development", prod ? "prod" : "dev");
    if (prod)
        fprintf (out,
            "#\n"
            "#   Replace every example.internal placeholder. Secrets never go in this\n"
            "#   file: MAILBOX_SHARED_MYSQL_PASSWORD belongs in /etc/msgxd/msgxd.env\n"
            "#   (mode 0600, read by the systemd unit), the PostgreSQL password in\n"
            "#   /etc/msgxd/pgpass (PGPASSFILE). prod refuses stubs, an empty Kafka\n"
            "#   broker list and any weakened producer safety.\n");
    else
        fprintf (out,
            "#\n"
            "#   Development: Kafka is librdkafka's in-process mock cluster (its address\n"
            "#   is logged) and the shared mailbox is off until enabled below.\n");
    bool complete = true;
    if (prod)
        s_print_section (out, "", 0, s_prod_values, sizeof s_prod_values / sizeof s_prod_values [0],
                         &complete);
    else
        s_print_section (out, "", 0, s_dev_values, sizeof s_dev_values / sizeof s_dev_values [0],
                         &complete);
    if (!complete)
        fprintf (stderr, "msgxd: some keys have no operating advice in cmd/msgxd.c (s_advice)\n");
    return 0;
}

//  A bad command line: one log line like any other (JSON, or the journal),
//  naming what is wrong; the options themselves are on --help.
static int
s_usage_error (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

static int
s_usage_error (const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *what = zsys_vprintf (fmt, args);
    va_end (args);
    mx_log_emit (MX_LOG_ERROR, ACTOR, json_pack ("{s:s}", "hint", "msgxd --help lists the options"),
                 "bad command line: %s", what ? what : "?");
    free (what);
    return 2;
}

//  SIGHUP: the configuration read again as at start (file < environment).
//  What may change at runtime is applied: msgx.log.level, for every actor
//  (levels set for single actors by msgxctl are dropped). Other changed keys
//  are named: they wait for a restart. A configuration that does not load
//  is refused line by line and the running settings stay. Nothing is
//  stopped, so the instance keeps its role and the instance lock.
static void
s_reload (const char *config_path, const mx_config_t *running)
{
    zlist_t *errors = NULL, *warnings = NULL;
    mx_config_t *fresh = mx_config_load (config_path, environ, &errors, &warnings);
    for (char *line = warnings ? (char *) zlist_first (warnings) : NULL; line; line = (char *) zlist_next (warnings))
        mx_warn (CONFIG_ACTOR, "config warning: %s", line);
    zlist_destroy (&warnings);
    if (!fresh) {
        for (char *line = errors ? (char *) zlist_first (errors) : NULL; line; line = (char *) zlist_next (errors))
            mx_error (CONFIG_ACTOR, "config error: %s", line);
        mx_error (CONFIG_ACTOR, "reload refused: %zu configuration problem%s; the running settings stay",
                  errors ? zlist_size (errors) : 0, errors && zlist_size (errors) == 1 ? "" : "s");
        zlist_destroy (&errors);
        return;
    }
    zlist_destroy (&errors);
    json_t *was = mx_config_to_json (running), *now = mx_config_to_json (fresh);
    zchunk_t *waiting = zchunk_new (NULL, 256);
    const char *key;
    json_t *value;
    json_object_foreach (now, key, value)
        if (strcmp (key, "msgx.log.level") != 0 && !json_equal (value, json_object_get (was, key))) {
            zchunk_extend (waiting, zchunk_size (waiting) ? ", " : "", zchunk_size (waiting) ? 2 : 0);
            zchunk_extend (waiting, key, strlen (key));
        }
    mx_log_level_t level = MX_LOG_INFO;
    mx_log_level_parse (fresh->log_level, &level);
    const char *before = mx_log_level_name (mx_log_level ());
    mx_log_set_level (level);
    mx_log_clear_actor_levels ();
    mx_log_notice (CONFIG_ACTOR, json_pack ("{s:s}", "level", fresh->log_level),
                   "configuration reloaded (SIGHUP): msgx.log.level %s for every actor (was %s)",
                   fresh->log_level, before);
    if (zchunk_size (waiting))
        mx_warn (CONFIG_ACTOR, "changed in the configuration but applied only at the next restart: %.*s",
                 (int) zchunk_size (waiting), (char *) zchunk_data (waiting));
    zchunk_destroy (&waiting);
    json_decref (was);
    json_decref (now);
    mx_config_destroy (&fresh);
}

//  Shutdown must finish within SHUTDOWN_LIMIT_S; a stuck thread must not
//  keep a dying instance alive (PostgreSQL rolls back what it held).
static void
s_shutdown_watchdog (int signo)
{
    (void) signo;
    static const char line [] =
        "{\"level\":\"error\",\"actor\":\"main\",\"msg\":\"shutdown exceeded its time limit; exiting now\"}\n";
    if (write (2, line, sizeof line - 1) < 0) {
        //  Nothing more to do on the way out.
    }
    _exit (1);
}

int
main (int argc, char **argv)
{
    const char *config_path = NULL;
    bool check_only = false;
    static const struct option options [] = {
        { "config", required_argument, NULL, 'c' },
        { "check-config", no_argument, NULL, 'k' },
        { "config-reference", no_argument, NULL, 'r' },
        { "config-man", no_argument, NULL, 'm' },
        { "config-sample", required_argument, NULL, 's' },
        { "version", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    //  Every line goes through mx_log, usage errors included: JSON lines, or
    //  the journal when systemd connected stderr to it.
    mx_log_set_journal (mx_log_fd_is_journal (STDERR_FILENO));
    opterr = 0;
    int opt;
    while ((opt = getopt_long (argc, argv, ":c:h", options, NULL)) != -1) {
        switch (opt) {
            case 'c': config_path = optarg; break;
            case 'k': check_only = true; break;
            case 'r': mx_config_print_reference (stdout); return 0;
            case 'm': mx_config_print_man (stdout); return 0;
            case 's':
                if (streq (optarg, "dev") || streq (optarg, "prod"))
                    return s_print_sample (stdout, streq (optarg, "prod"));
                return s_usage_error ("--config-sample takes dev or prod, not '%s'", optarg);
            case 'v': printf ("msgxd %s (commit %s)\n", MX_VERSION, MX_COMMIT); return 0;
            case 'h': s_usage (stdout); return 0;
            case ':': return s_usage_error ("%s needs a value", argv [optind - 1]);
            default:  return s_usage_error ("unknown option '%s'", argv [optind - 1]);
        }
    }
    if (optind < argc)
        return s_usage_error ("unexpected argument '%s'", argv [optind]);

    //  Configuration problems are lines like any other, so `journalctl -p
    //  err` and jq find them.
    zlist_t *errors = NULL, *warnings = NULL;
    mx_config_t *config = mx_config_load (config_path, environ, &errors, &warnings);
    for (char *line = warnings ? (char *) zlist_first (warnings) : NULL; line; line = (char *) zlist_next (warnings))
        mx_warn (CONFIG_ACTOR, "config warning: %s", line);
    zlist_destroy (&warnings);
    if (!config) {
        for (char *line = errors ? (char *) zlist_first (errors) : NULL; line; line = (char *) zlist_next (errors))
            mx_error (CONFIG_ACTOR, "config error: %s", line);
        mx_error (CONFIG_ACTOR, "refusing to start: %zu configuration problem%s",
                  errors ? zlist_size (errors) : 0, errors && zlist_size (errors) == 1 ? "" : "s");
        zlist_destroy (&errors);
        return MX_EXIT_CONFIG;
    }
    zlist_destroy (&errors);
    if (check_only) {
        json_t *dump = mx_config_to_json (config);
        char *text = json_dumps (dump, JSON_INDENT (2) | JSON_PRESERVE_ORDER);
        printf ("%s\nmsgxd: configuration OK\n", text);
        free (text);
        json_decref (dump);
        mx_config_destroy (&config);
        return 0;
    }

    //  Everything msgxd creates (the admin ipc socket first) is private.
    umask (077);
    mx_log_level_t level = MX_LOG_INFO;
    mx_log_level_parse (config->log_level, &level);
    mx_log_set_level (level);

    //  Two malloc arenas, not one per thread up to 8 per core: memory one
    //  actor frees is reused by the next instead of sitting in an arena of
    //  its own (peak RSS of a drain about 85 -> 65 MiB, docs/performance.md).
    mallopt (M_ARENA_MAX, 2);

    //  Signals go to a signalfd read here; every thread inherits the mask,
    //  so no actor is interrupted by them.
    sigset_t signals;
    sigemptyset (&signals);
    sigaddset (&signals, SIGINT);
    sigaddset (&signals, SIGTERM);
    sigaddset (&signals, SIGHUP);
    pthread_sigmask (SIG_BLOCK, &signals, NULL);
    signal (SIGPIPE, SIG_IGN);
    //  An alarm bounds any stop in order: the shutdown's, or the pump's
    //  after its processing watchdog fired on a hung processor.
    struct sigaction watchdog = { .sa_handler = s_shutdown_watchdog };
    sigaction (SIGALRM, &watchdog, NULL);
#ifdef MX_TEST_HOOKS
    mx_test_hooks_install ();
#endif
    int signal_fd = signalfd (-1, &signals, SFD_CLOEXEC);
    if (signal_fd < 0) {
        mx_error (ACTOR, "signalfd: %s", strerror (errno));
        mx_config_destroy (&config);
        return 1;
    }
    zsys_handler_set (NULL);
    zsys_init ();
    mx_log_set_shadow (config->shadow);
    mx_log_start (2, 65536);
    mx_info (ACTOR, "msgxd %s (commit %s) starting: profile %s, pid %d", MX_VERSION, MX_COMMIT,
             config->profile, (int) getpid ());
    char topic_msg [MX_CONFIG_TOPIC_BUFSIZE], topic_schd [MX_CONFIG_TOPIC_BUFSIZE];
    char topic_ref [MX_CONFIG_TOPIC_BUFSIZE];
    mx_config_topic (config, false, topic_msg);
    mx_config_topic (config, true, topic_schd);
    mx_config_ref_topic (config, topic_ref);
    if (config->shadow)
        mx_warn (ACTOR, "SHADOW instance: nothing is written to the shared mailbox; %s%s%s%s%s%s",
                 mx_config_publishes (config) ? "events go to the shadow topics " : "no event is published",
                 mx_config_publishes (config) ? topic_msg : "", mx_config_publishes (config) ? ", " : "",
                 mx_config_publishes (config) ? topic_schd : "", mx_config_publishes (config) ? " and " : "",
                 mx_config_publishes (config) ? topic_ref : "");

    int exit_code = 0;
    mx_kafka_embedded_t *kafka = NULL;
    char *kafka_description = NULL;
    if (*config->kafka_bootstrap_servers)
        kafka_description = zsys_sprintf ("brokers %s", config->kafka_bootstrap_servers);
    else {
        //  Validation already refused prod without brokers.
        //  The mock cluster has no compaction: the compacted topics are
        //  plain ones here (docs/consumers.md says how to create them).
        const char *topics [] = { topic_msg, topic_schd, topic_ref, NULL };
        char *error = NULL;
        kafka = mx_kafka_embedded_new (1, topics, 3, &error);
        if (!kafka) {
            mx_error (ACTOR, "embedded Kafka mock cluster did not start: %s", error);
            free (error);
            exit_code = 1;
            goto done;
        }
        kafka_description = zsys_sprintf ("embedded mock cluster at %s (dev profile)",
                                          mx_kafka_embedded_bootstraps (kafka));
        mx_log_emit (MX_LOG_INFO, ACTOR, json_pack ("{s:s}", "bootstrap", mx_kafka_embedded_bootstraps (kafka)),
                     "Kafka: %s", kafka_description);
    }

    mx_clock_t *clock = mx_clock_new_system ();
    mx_control_args_t control_args = {
        .config = config,
        .clock = clock,
        .children = mx_pipeline_actors,
        .child_count = mx_pipeline_actor_count,
        .kafka_description = kafka_description,
        .kafka_bootstrap = kafka ? mx_kafka_embedded_bootstraps (kafka) : config->kafka_bootstrap_servers
    };
    char *detail = NULL, *error = NULL;
    zactor_t *control = mx_actor_start (mx_control_actor, &control_args, 10000, &detail, &error);
    if (!control) {
        mx_error (ACTOR, "refusing to start: %s", error);
        free (error);
        exit_code = 1;
    }
    else {
        mx_info (ACTOR, "control started: %s", detail);
        free (detail);
        zmq_pollitem_t items [] = {
            { NULL, signal_fd, ZMQ_POLLIN, 0 },
            { zsock_resolve (zactor_sock (control)), 0, ZMQ_POLLIN, 0 }
        };
        while (true) {
            if (zmq_poll (items, 2, -1) < 0) {
                if (errno == EINTR)
                    continue;
                mx_error (ACTOR, "poll failed: %s", zmq_strerror (zmq_errno ()));
                exit_code = 1;
                break;
            }
            if (items [0].revents & ZMQ_POLLIN) {
                struct signalfd_siginfo info;
                if (read (signal_fd, &info, sizeof info) != (ssize_t) sizeof info)
                    continue;
                if (info.ssi_signo == SIGHUP) {
                    s_reload (config_path, config);
                    continue;
                }
                mx_info (ACTOR, "received %s: shutting down", strsignal ((int) info.ssi_signo));
                break;
            }
            if (items [1].revents & ZMQ_POLLIN) {
                zmsg_t *rest = NULL;
                mx_cmd_t cmd = mx_cmd_recv (zactor_sock (control), &rest);
                if (cmd == MX_CMD_FATAL) {
                    exit_code = mx_cmd_pop_int (rest);
                    char *reason = mx_cmd_pop_str (rest);
                    mx_error (ACTOR, "stopping after a fatal failure: %s", reason);
                    free (reason);
                    mx_cmd_done (&rest);
                    break;
                }
                zmsg_destroy (&rest);
            }
        }
        alarm (SHUTDOWN_LIMIT_S);
        mx_actor_destroy (&control);
        alarm (0);
    }
    mx_clock_destroy (&clock);

done:
    mx_kafka_embedded_destroy (&kafka);
    free (kafka_description);
    mx_info (ACTOR, "msgxd stopped (exit code %d)", exit_code);
    mx_log_stop ();
    mx_config_destroy (&config);
    close (signal_fd);
    zsys_shutdown ();
    return exit_code;
}
