/*  msgx-gen - generate a day of SIS traffic (see mx_gen.h) and write it to
    files, to stdout, or into the CMINMSGS mailbox the way the upstream does.

    Exit codes: 0 done, 1 could not write (database, files), 2 usage.
*/
#include "mx_gen.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <mysql.h>

#define S_BATCH_DEFAULT 500

typedef enum { S_OUT_NONE, S_OUT_DIR, S_OUT_STDOUT, S_OUT_MYSQL } s_out_t;

typedef struct {
    const char *host;
    unsigned int port;
    const char *user;
    const char *password;
    const char *database;
    const char *socket;
    size_t batch;               //  rows per transaction
} s_mysql_t;

typedef struct {
    uint64_t first_id;
    uint64_t last_id;
    size_t rows;
} s_result_t;

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: msgx-gen [options] (--out-dir DIR | --stdout | --mysql)\n"
        "\n"
        "Generates one operation day of SIS messages: the schedule (SCHD/DNLD),\n"
        "then --updates further messages (FLOP updates, and the given shares of\n"
        "duplicates, malformed, ignored and unsupported messages). The same\n"
        "options always give the same bytes.\n"
        "\n"
        "  --seed N            PRNG seed (1)\n"
        "  --flights N         flights of the day (200)\n"
        "  --updates N         messages after the schedule (1000)\n"
        "  --per-message N     FLTR records per SCHD message, 0 = one message (500)\n"
        "  --day YYYY-MM-DD    operation day (2021-01-23)\n"
        "  --first-flid N      first FLID, 0 = derived from the day (0)\n"
        "  --first-seqn N      first META SEQN, 1..999999 (1)\n"
        "  --sender NAME       META SNDR (AODB)\n"
        "  --airport CODE      home airport (CTU)\n"
        "  --mix LIST          FLOP subtype weights, e.g. STND:5,TOBT:3,FDEL:1\n"
        "  --duplicates PCT    share of exact re-sends of recent updates (0)\n"
        "  --malformed PCT     share of malformed messages (0)\n"
        "  --ignored PCT       share of ignored types: LDM, RSTA, EROR (0)\n"
        "  --unsupported PCT   share of unsupported SCHS messages (0)\n"
        "  --clears PCT        share of FLOPs that clear their element (3)\n"
        "\n"
        "  --out-dir DIR       one file per message: NNNNNN_TYPE_STYP.xml\n"
        "  --stdout            all messages, one after another (summary on stderr)\n"
        "  --mysql             insert into CMINMSGS, STATUS 'VALID'\n"
        "  --host H --port P --user U --password W --database D --socket S\n"
        "                      mailbox connection; defaults from the environment\n"
        "                      MAILBOX_SHARED_MYSQL_HOST/PORT/USER/PASSWORD/DATABASE/\n"
        "                      SOCKET, else 127.0.0.1:3306, database aodbinterface\n"
        "  --batch N           rows per transaction (%d)\n",
        S_BATCH_DEFAULT);
}

//  Whole decimal number in [0, max]
static int
s_parse_u64 (const char *text, uint64_t max, uint64_t *value)
{
    if (!text || !*text)
        return -1;
    uint64_t result = 0;
    for (const char *c = text; *c; c++) {
        if (*c < '0' || *c > '9')
            return -1;
        unsigned digit = (unsigned) (*c - '0');
        if (result > (max - digit) / 10)
            return -1;
        result = result * 10 + digit;
    }
    *value = result;
    return 0;
}

static int
s_parse_size (const char *text, uint64_t max, size_t *value)
{
    uint64_t result;
    if (s_parse_u64 (text, max, &result))
        return -1;
    *value = (size_t) result;
    return 0;
}

//  Percentage "12", "0.5", "99.9999" → parts per million, exactly
static int
s_parse_pct (const char *text, uint32_t *ppm)
{
    if (!text || !*text)
        return -1;
    uint64_t whole = 0, fraction = 0;
    int fraction_digits = 0;
    const char *c = text;
    for (; *c >= '0' && *c <= '9'; c++) {
        whole = whole * 10 + (uint64_t) (*c - '0');
        if (whole > 100)
            return -1;
    }
    if (c == text && *c != '.')
        return -1;
    if (*c == '.') {
        c++;
        for (; *c >= '0' && *c <= '9'; c++) {
            if (++fraction_digits > 4)
                return -1;
            fraction = fraction * 10 + (uint64_t) (*c - '0');
        }
        if (fraction_digits == 0)
            return -1;
    }
    if (*c)
        return -1;
    for (int i = fraction_digits; i < 4; i++)
        fraction *= 10;
    uint64_t result = whole * 10000 + fraction;
    if (result > 1000000)
        return -1;
    *ppm = (uint32_t) result;
    return 0;
}

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

//  ---------------------------------------------------------------------
//  Outputs

static int
s_write_dir (mx_gen_t *gen, const char *dir, s_result_t *result)
{
    if (mkdir (dir, 0755) && errno != EEXIST) {
        fprintf (stderr, "msgx-gen: cannot create %s: %s\n", dir, strerror (errno));
        return -1;
    }
    char *text;
    while ((text = mx_gen_next (gen, NULL))) {
        const mx_gen_meta_t *meta = mx_gen_meta (gen);
        char path [4096];
        snprintf (path, sizeof (path), "%s/%06zu_%s_%s.xml",
                  dir, result->rows + 1, meta->type, meta->styp);
        FILE *file = fopen (path, "w");
        size_t size = strlen (text);
        bool ok = file && fwrite (text, 1, size, file) == size;
        if (file && fclose (file))
            ok = false;
        free (text);
        if (!ok) {
            fprintf (stderr, "msgx-gen: cannot write %s: %s\n", path, strerror (errno));
            return -1;
        }
        result->rows++;
    }
    return 0;
}

static int
s_write_stdout (mx_gen_t *gen, s_result_t *result)
{
    char *text;
    while ((text = mx_gen_next (gen, NULL))) {
        size_t size = strlen (text);
        size_t written = fwrite (text, 1, size, stdout);
        free (text);
        if (written != size)
            break;
        result->rows++;
    }
    if (fflush (stdout) || ferror (stdout)) {
        fprintf (stderr, "msgx-gen: cannot write to stdout: %s\n", strerror (errno));
        return -1;
    }
    return 0;
}

//  META DTTM yyyyMMddHHmmss → MYSQL_TIME
static void
s_mysql_time (const char *dttm, MYSQL_TIME *time)
{
    memset (time, 0, sizeof (*time));
    unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    sscanf (dttm, "%4u%2u%2u%2u%2u%2u", &year, &month, &day, &hour, &minute, &second);
    time->year = year;
    time->month = month;
    time->day = day;
    time->hour = hour;
    time->minute = minute;
    time->second = second;
    time->time_type = MYSQL_TIMESTAMP_DATETIME;
}

static int
s_write_mysql (mx_gen_t *gen, const s_mysql_t *cfg, s_result_t *result)
{
    MYSQL *db = mysql_init (NULL);
    if (!db) {
        fprintf (stderr, "msgx-gen: mysql_init failed\n");
        return -1;
    }
    //  Bounded waits: a hung server is an error, not a hang
    unsigned int connect_timeout = 10, io_timeout = 120;
    mysql_options (db, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
    mysql_options (db, MYSQL_OPT_READ_TIMEOUT, &io_timeout);
    mysql_options (db, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout);
    mysql_options (db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (!mysql_real_connect (db, cfg->host, cfg->user, cfg->password, cfg->database,
                             cfg->port, cfg->socket, 0)) {
        fprintf (stderr, "msgx-gen: cannot connect to the mailbox at %s%s%u (database %s, user %s): %s\n",
                 cfg->socket? cfg->socket: cfg->host, cfg->socket? " / port ": ":",
                 cfg->port, cfg->database, cfg->user? cfg->user: "(default)",
                 mysql_error (db));
        mysql_close (db);
        return -1;
    }
    static const char *sql =
        "INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED,"
        " CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,"
        " CMINMSGS_SUBSYSTEM_DATE_SENT, CMINMSGS_SUBSYSTEM_SUBTYPE,"
        " CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS)"
        " VALUES (?, NOW(), ?, ?, ?, ?, ?, ?)";
    MYSQL_STMT *stmt = mysql_stmt_init (db);
    if (!stmt
    ||  mysql_autocommit (db, 0)
    ||  mysql_stmt_prepare (stmt, sql, (unsigned long) strlen (sql))) {
        fprintf (stderr, "msgx-gen: cannot prepare the CMINMSGS insert: %s\n",
                 stmt? mysql_stmt_error (stmt): mysql_error (db));
        if (stmt)
            mysql_stmt_close (stmt);
        mysql_close (db);
        return -1;
    }
    static const char status [] = "VALID";
    size_t in_transaction = 0;
    int rc = 0;
    char *text;
    while ((text = mx_gen_next (gen, NULL))) {
        const mx_gen_meta_t *meta = mx_gen_meta (gen);
        unsigned long lengths [7] = {
            (unsigned long) strlen (text), (unsigned long) strlen (meta->sndr), 0, 0,
            (unsigned long) strlen (meta->styp), (unsigned long) strlen (meta->type),
            (unsigned long) strlen (status)
        };
        int seqn = (int) meta->seqn;
        MYSQL_TIME sent;
        s_mysql_time (meta->dttm, &sent);
        MYSQL_BIND bind [7];
        memset (bind, 0, sizeof (bind));
        bind [0].buffer_type = MYSQL_TYPE_STRING;
        bind [0].buffer = text;
        bind [1].buffer_type = MYSQL_TYPE_STRING;
        bind [1].buffer = (char *) meta->sndr;
        bind [2].buffer_type = MYSQL_TYPE_LONG;
        bind [2].buffer = &seqn;
        bind [3].buffer_type = MYSQL_TYPE_DATETIME;
        bind [3].buffer = &sent;
        bind [4].buffer_type = MYSQL_TYPE_STRING;
        bind [4].buffer = (char *) meta->styp;
        bind [5].buffer_type = MYSQL_TYPE_STRING;
        bind [5].buffer = (char *) meta->type;
        bind [6].buffer_type = MYSQL_TYPE_STRING;
        bind [6].buffer = (char *) status;
        for (int i = 0; i < 7; i++) {
            bind [i].buffer_length = lengths [i];
            bind [i].length = &lengths [i];
        }
        bool failed = mysql_stmt_bind_param (stmt, bind) || mysql_stmt_execute (stmt);
        free (text);
        if (failed) {
            fprintf (stderr, "msgx-gen: insert of message %zu failed: %s\n",
                     result->rows + in_transaction + 1, mysql_stmt_error (stmt));
            mysql_rollback (db);
            rc = -1;
            break;
        }
        uint64_t id = (uint64_t) mysql_stmt_insert_id (stmt);
        if (result->rows + in_transaction == 0)
            result->first_id = id;
        result->last_id = id;
        if (++in_transaction >= cfg->batch) {
            if (mysql_commit (db)) {
                fprintf (stderr, "msgx-gen: commit failed: %s\n", mysql_error (db));
                rc = -1;
                break;
            }
            result->rows += in_transaction;
            in_transaction = 0;
        }
    }
    if (rc == 0 && in_transaction > 0) {
        if (mysql_commit (db)) {
            fprintf (stderr, "msgx-gen: commit failed: %s\n", mysql_error (db));
            rc = -1;
        }
        else
            result->rows += in_transaction;
    }
    if (rc)
        fprintf (stderr, "msgx-gen: %zu rows were committed before the failure\n", result->rows);
    mysql_stmt_close (stmt);
    mysql_close (db);
    return rc;
}

//  ---------------------------------------------------------------------

static const char *
s_env (const char *name, const char *fallback)
{
    const char *value = getenv (name);
    return value && *value? value: fallback;
}

int
main (int argc, char *argv [])
{
    mx_gen_options_t opts;
    mx_gen_options_init (&opts);
    s_out_t out = S_OUT_NONE;
    const char *dir = NULL;
    s_mysql_t cfg = {
        .host = s_env ("MAILBOX_SHARED_MYSQL_HOST", "127.0.0.1"),
        .port = 3306,
        .user = s_env ("MAILBOX_SHARED_MYSQL_USER", NULL),
        .password = s_env ("MAILBOX_SHARED_MYSQL_PASSWORD", NULL),
        .database = s_env ("MAILBOX_SHARED_MYSQL_DATABASE", "aodbinterface"),
        .socket = s_env ("MAILBOX_SHARED_MYSQL_SOCKET", NULL),
        .batch = S_BATCH_DEFAULT
    };
    const char *port_text = s_env ("MAILBOX_SHARED_MYSQL_PORT", NULL);
    const char *port_origin = "MAILBOX_SHARED_MYSQL_PORT";

    enum {
        O_SEED = 256, O_FLIGHTS, O_UPDATES, O_PER_MESSAGE, O_DAY, O_FIRST_FLID,
        O_FIRST_SEQN, O_SENDER, O_AIRPORT, O_MIX, O_DUPLICATES, O_MALFORMED,
        O_IGNORED, O_UNSUPPORTED, O_CLEARS, O_OUT_DIR, O_STDOUT, O_MYSQL,
        O_HOST, O_PORT, O_USER, O_PASSWORD, O_DATABASE, O_SOCKET, O_BATCH, O_HELP
    };
    static const struct option options [] = {
        { "seed",        required_argument, NULL, O_SEED },
        { "flights",     required_argument, NULL, O_FLIGHTS },
        { "updates",     required_argument, NULL, O_UPDATES },
        { "per-message", required_argument, NULL, O_PER_MESSAGE },
        { "day",         required_argument, NULL, O_DAY },
        { "first-flid",  required_argument, NULL, O_FIRST_FLID },
        { "first-seqn",  required_argument, NULL, O_FIRST_SEQN },
        { "sender",      required_argument, NULL, O_SENDER },
        { "airport",     required_argument, NULL, O_AIRPORT },
        { "mix",         required_argument, NULL, O_MIX },
        { "duplicates",  required_argument, NULL, O_DUPLICATES },
        { "malformed",   required_argument, NULL, O_MALFORMED },
        { "ignored",     required_argument, NULL, O_IGNORED },
        { "unsupported", required_argument, NULL, O_UNSUPPORTED },
        { "clears",      required_argument, NULL, O_CLEARS },
        { "out-dir",     required_argument, NULL, O_OUT_DIR },
        { "stdout",      no_argument,       NULL, O_STDOUT },
        { "mysql",       no_argument,       NULL, O_MYSQL },
        { "host",        required_argument, NULL, O_HOST },
        { "port",        required_argument, NULL, O_PORT },
        { "user",        required_argument, NULL, O_USER },
        { "password",    required_argument, NULL, O_PASSWORD },
        { "database",    required_argument, NULL, O_DATABASE },
        { "socket",      required_argument, NULL, O_SOCKET },
        { "batch",       required_argument, NULL, O_BATCH },
        { "help",        no_argument,       NULL, O_HELP },
        { NULL, 0, NULL, 0 }
    };
    int outputs = 0;
    int opt;
    opterr = 0;
    while ((opt = getopt_long (argc, argv, "", options, NULL)) != -1) {
        uint64_t number = 0;
        int bad = 0;
        switch (opt) {
            case O_SEED:
                bad = s_parse_u64 (optarg, UINT64_MAX, &opts.seed);
                break;
            case O_FLIGHTS:
                bad = s_parse_size (optarg, 1000000, &opts.flights);
                break;
            case O_UPDATES:
                bad = s_parse_size (optarg, 1000000000, &opts.updates);
                break;
            case O_PER_MESSAGE:
                bad = s_parse_size (optarg, 1000000, &opts.per_message);
                break;
            case O_DAY:
                opts.day = optarg;
                break;
            case O_FIRST_FLID:
                bad = s_parse_u64 (optarg, INT64_MAX / 2, &number);
                opts.first_flid = (int64_t) number;
                break;
            case O_FIRST_SEQN:
                bad = s_parse_u64 (optarg, 999999, &number) || number == 0;
                opts.first_seqn = (uint32_t) number;
                break;
            case O_SENDER:
                opts.sender = optarg;
                break;
            case O_AIRPORT:
                opts.airport = optarg;
                break;
            case O_MIX:
                opts.mix = optarg;
                break;
            case O_DUPLICATES:
                bad = s_parse_pct (optarg, &opts.duplicate_ppm);
                break;
            case O_MALFORMED:
                bad = s_parse_pct (optarg, &opts.malformed_ppm);
                break;
            case O_IGNORED:
                bad = s_parse_pct (optarg, &opts.ignored_ppm);
                break;
            case O_UNSUPPORTED:
                bad = s_parse_pct (optarg, &opts.unsupported_ppm);
                break;
            case O_CLEARS:
                bad = s_parse_pct (optarg, &opts.clear_ppm);
                break;
            case O_OUT_DIR:
                out = S_OUT_DIR;
                dir = optarg;
                outputs++;
                break;
            case O_STDOUT:
                out = S_OUT_STDOUT;
                outputs++;
                break;
            case O_MYSQL:
                out = S_OUT_MYSQL;
                outputs++;
                break;
            case O_HOST:
                cfg.host = optarg;
                break;
            case O_PORT:
                port_text = optarg;
                port_origin = "--port";
                break;
            case O_USER:
                cfg.user = optarg;
                break;
            case O_PASSWORD:
                cfg.password = optarg;
                break;
            case O_DATABASE:
                cfg.database = optarg;
                break;
            case O_SOCKET:
                cfg.socket = optarg;
                break;
            case O_BATCH:
                bad = s_parse_size (optarg, 1000000, &cfg.batch) || cfg.batch == 0;
                break;
            case O_HELP:
                s_usage (stdout);
                return 0;
            default:
                if (optopt) {
                    const char *name = "?";
                    for (const struct option *o = options; o->name; o++)
                        if (o->val == optopt)
                            name = o->name;
                    fprintf (stderr, "msgx-gen: option --%s needs a value\n", name);
                }
                else
                    fprintf (stderr, "msgx-gen: unknown option %s\n", argv [optind - 1]);
                s_usage (stderr);
                return 2;
        }
        if (bad) {
            fprintf (stderr, "msgx-gen: bad value '%s' for %s\n", optarg, argv [optind - 1]);
            s_usage (stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf (stderr, "msgx-gen: unexpected argument '%s'\n", argv [optind]);
        s_usage (stderr);
        return 2;
    }
    if (outputs != 1) {
        fprintf (stderr, "msgx-gen: give exactly one of --out-dir, --stdout, --mysql\n");
        s_usage (stderr);
        return 2;
    }
    if (port_text) {
        uint64_t port;
        if (s_parse_u64 (port_text, 65535, &port) || port == 0) {
            fprintf (stderr, "msgx-gen: bad port '%s' (%s)\n", port_text, port_origin);
            s_usage (stderr);
            return 2;
        }
        cfg.port = (unsigned int) port;
    }
    char reason [200];
    if (mx_gen_options_check (&opts, reason, sizeof (reason))) {
        fprintf (stderr, "msgx-gen: %s\n", reason);
        s_usage (stderr);
        return 2;
    }
    mx_gen_t *gen = mx_gen_new (&opts);
    if (!gen) {
        fprintf (stderr, "msgx-gen: cannot create the generator\n");
        return 1;
    }
    s_result_t result = { 0 };
    double start = s_now ();
    int rc = out == S_OUT_DIR? s_write_dir (gen, dir, &result)
           : out == S_OUT_STDOUT? s_write_stdout (gen, &result)
           : s_write_mysql (gen, &cfg, &result);
    double elapsed = s_now () - start;

    if (rc) {
        mx_gen_destroy (&gen);
        return 1;
    }
    FILE *summary = out == S_OUT_STDOUT? stderr: stdout;
    fprintf (summary, "msgx-gen: %zu messages (", result.rows);
    for (int k = 0; k < MX_GEN_KINDS; k++)
        fprintf (summary, "%s%s %zu", k? ", ": "",
                 mx_gen_kind_name ((mx_gen_kind_t) k), mx_gen_count (gen, (mx_gen_kind_t) k));
    fprintf (summary, ")");
    if (out == S_OUT_MYSQL && result.rows > 0)
        fprintf (summary, " ids %" PRIu64 "..%" PRIu64, result.first_id, result.last_id);
    fprintf (summary, " in %.3f s, %.0f rows/s\n", elapsed,
             elapsed > 0? (double) result.rows / elapsed: 0.0);
    mx_gen_destroy (&gen);
    return 0;
}
