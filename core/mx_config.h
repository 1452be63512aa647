/*  mx_config - msgxd configuration: defaults < ZPL file < environment.

    Every key lives in mx_config.def (one X-macro line each); this header
    turns it into mx_config_t with one member per key. Field names: the key
    without "msgx.", dots and dashes as '_' (msgx.pipeline.claim-batch ->
    pipeline_claim_batch, mailbox.shared-mysql.host ->
    mailbox_shared_mysql_host).

    Value types (see mx_config.def): BOOL bool, INT int64_t, DURATION
    int64_t milliseconds, STRING char * (never NULL, "" when unset),
    MS_LIST / STRING_LIST the list structs below, TIME_OF_DAY int minutes
    after midnight (-1 = not set).

    Secrets (keys ending in "password", and msgx.pg.conninfo) may also come
    from a file: KEY-file = PATH in the config file, or the environment
    variable with _FILE appended (MAILBOX_SHARED_MYSQL_PASSWORD_FILE). The
    file's content, without a trailing newline, is the value. In prod the
    config file and every secret file must not be readable by others.

    File: czmq ZPL (zconfig). Keys may be written flat at top level
    (msgx.pipeline.claim-batch = 50), as nested sections (msgx / pipeline /
    claim-batch, 4 spaces per level), or as a slash path
    (msgx/pipeline/claim-batch = 50); all mean the same key. Quote values
    that contain '#'. Environment: the key upper-cased with dots and dashes
    turned into '_' (MSGX_PIPELINE_CLAIM_BATCH).
*/
#ifndef MX_CONFIG_H_INCLUDED
#define MX_CONFIG_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <czmq.h>
#include <jansson.h>

//  EX_CONFIG: msgxd exits with this on bad configuration.
#define MX_EXIT_CONFIG 78

//  Floor of msgx.pipeline.overdue-backfill: one day.
#define MX_CONFIG_OVERDUE_BACKFILL_FLOOR_MS (24LL * 3600 * 1000)

typedef struct {
    size_t count;
    int64_t *items;             //  milliseconds
} mx_config_ms_list_t;

typedef struct {
    size_t count;
    char **items;
} mx_config_string_list_t;

#define MX_CONFIG_CTYPE_BOOL        bool
#define MX_CONFIG_CTYPE_INT         int64_t
#define MX_CONFIG_CTYPE_DURATION    int64_t
#define MX_CONFIG_CTYPE_STRING      char *
#define MX_CONFIG_CTYPE_MS_LIST     mx_config_ms_list_t
#define MX_CONFIG_CTYPE_STRING_LIST mx_config_string_list_t
#define MX_CONFIG_CTYPE_TIME_OF_DAY int

//  Index of every key, in table order.
typedef enum {
#define MX_CONFIG_KEY(field, key, type, def, doc) MX_CONFIG_IDX_##field,
#include "mx_config.def"
#undef MX_CONFIG_KEY
    MX_CONFIG_KEY_COUNT
} mx_config_index_t;

typedef struct {
#define MX_CONFIG_KEY(field, key, type, def, doc) MX_CONFIG_CTYPE_##type field;
#include "mx_config.def"
#undef MX_CONFIG_KEY
    //  Private: where each value came from, for messages.
    uint8_t origin_ [MX_CONFIG_KEY_COUNT];
    char *path_;
    unsigned file_mode_;                    //  of the config file, 0 without one
    //  A secret read from a file (KEY-file, KEY_FILE): the file and its mode.
    char *secret_file_ [MX_CONFIG_KEY_COUNT];
    unsigned secret_mode_ [MX_CONFIG_KEY_COUNT];
} mx_config_t;

//  Defaults, then the file (path may be NULL), then envp (NULL-terminated
//  "NAME=value" array, may be NULL); then validates.
//  On any problem returns NULL and appends one line per problem to *errors
//  (a zlist_t of char*, autofree, created if NULL). Warnings (non-fatal) go
//  to *warnings the same way (warnings may be NULL to ignore them).
mx_config_t *mx_config_load (const char *path, char **envp,
                             zlist_t **errors, zlist_t **warnings);

//  Defaults only, unvalidated (tests).
mx_config_t *mx_config_new_defaults (void);

//  Set one key by its dotted name. A value that does not parse leaves the
//  old value, appends one line to errors (may be NULL) and returns -1.
int mx_config_set (mx_config_t *self, const char *key, const char *value,
                   zlist_t *errors);

//  Check ranges and cross-key rules; one line per problem. 0 if clean.
int mx_config_validate (const mx_config_t *self, zlist_t *errors);

void mx_config_destroy (mx_config_t **self_p);

//  Every key -> value (durations in ms, lists as arrays, time of day as
//  "HH:MM" or ""); passwords shown as "***" when non-empty, also inside
//  msgx.pg.conninfo. Caller owns the result.
json_t *mx_config_to_json (const mx_config_t *self);

//  Whether key idx holds a secret (masked everywhere, may come from a file).
bool mx_config_is_secret (int idx);

//  Markdown table: key, env name, type, default, doc.
void mx_config_print_reference (FILE *out);

//  The same keys as the manual page msgxd.conf(5), in roff (man macros).
void mx_config_print_man (FILE *out);

//  Environment name of key into buf; returns buf, or NULL if it does not
//  fit. Does not check that key exists.
const char *mx_config_env_name (const char *key, char *buf, size_t size);

//  The Kafka topic of KAFKA:msg (schd false) or KAFKA:schd (schd true) as
//  msgxd publishes to it: the configured name, with msgx.shadow-topic-suffix
//  appended on a shadow instance. The one place that decides it. Returns buf.
#define MX_CONFIG_TOPIC_BUFSIZE 512
const char *mx_config_topic (const mx_config_t *self, bool schd, char buf [MX_CONFIG_TOPIC_BUFSIZE]);

//  The same for KAFKA:ref (msgx.kafka.topic.reference). Returns buf.
const char *mx_config_ref_topic (const mx_config_t *self, char buf [MX_CONFIG_TOPIC_BUFSIZE]);

//  False only on a shadow instance with msgx.shadow-publish = false: its
//  events stay in its own outbox and no topic is written.
bool mx_config_publishes (const mx_config_t *self);

//  The sslmode libpq will use for conninfo: its own, else PGSSLMODE, else
//  libpq's default (prefer). malloc'd; NULL when the conninfo does not
//  parse (the connection reports that). What prod's TLS rule checks, and
//  msgx-diff with it.
char *mx_config_pg_sslmode (const char *conninfo);

//  msgx.delivery.semantics = exactly-once (the default).
bool mx_config_exactly_once (const mx_config_t *self);

//  Parse a duration as the config does. bare_ms: a bare number means
//  milliseconds (keys ending "-ms"); otherwise a unit is required (except
//  for 0). Returns 0 or -1.
int mx_config_duration_parse (const char *text, bool bare_ms, int64_t *ms);

#endif
