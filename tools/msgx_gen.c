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
//  CMINMSGS_CLOB_MSG is a MEDIUMTEXT: 2^24 - 1 bytes at most
#define S_MEDIUMTEXT_MAX 16777215u

typedef enum { S_OUT_NONE, S_OUT_DIR, S_OUT_STDOUT, S_OUT_MYSQL } s_out_t;

typedef struct {
    const char *host;
    unsigned int port;
    const char *user;
    const char *password;
    const char *database;
    const char *socket;
    const char *time_zone;      //  session time zone, NULL = the server's
    size_t batch;               //  rows per transaction
    uint64_t rate;              //  rows per second, 0 = as fast as possible
    bool explicit_ids;          //  holes asked for: IDs come from the slots
    const char *commit_log;     //  "ID SECONDS" per row once committed, NULL = none
} s_mysql_t;

typedef struct {
    uint64_t first_id;
    uint64_t last_id;
    size_t rows;
} s_result_t;

//  A message kept back to be written after all others
typedef struct {
    char *text;
    mx_gen_meta_t meta;
} s_late_t;

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: msgx-gen [options] (--out-dir DIR | --stdout | --mysql)\n"
        "\n"
        "Generates one operation day of SIS messages: the schedule (SCHD/DNLD),\n"
        "then --updates further messages (FLOP updates, and the given shares of\n"
        "duplicates, malformed, ignored, unsupported, reference-list, ad-hoc,\n"
        "schedule-delete and hostile messages). The same options always give\n"
        "the same bytes; --holes and --late-holes change only the mailbox IDs.\n"
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
        "  --reference PCT     share of reference-list messages (23 lists,\n"
        "                      DNLD/ADD/UPD/DEL) (0)\n"
        "  --lists LIST        reference lists to use, e.g. GLST,SLST (all)\n"
        "  --adhoc PCT         share of SCHD/ADFT ad-hoc flight messages (0)\n"
        "  --schd-delete PCT   share of SCHD/DEL messages (0)\n"
        "  --hostile PCT       share of hostile messages: entity expansion,\n"
        "                      external entities, DOCTYPE, oversized text (0)\n"
        "  --oversize BYTES    size of the oversized hostile messages (1048577); meant\n"
        "                      to exceed msgx.codec.max-message-bytes, which must then\n"
        "                      be lower: CMINMSGS holds at most 16777215 bytes\n"
        "  --fdel-type PCT     share of flight deletions written as TYPE=FDEL (0)\n"
        "  --holes PCT         share of messages preceded by 1..3 unused mailbox IDs (0)\n"
        "  --late-holes PCT    share of messages written after all others, their\n"
        "                      IDs meanwhile a hole (0)\n"
        "\n"
        "  --out-dir DIR       one file per message: NNNNNN_TYPE_STYP.xml, NNNNNN\n"
        "                      counting mailbox IDs from 1 (holes leave numbers out)\n"
        "  --stdout            all messages, one after another (summary on stderr)\n"
        "  --mysql             insert into CMINMSGS, STATUS 'VALID'; with --holes or\n"
        "                      --late-holes the IDs are explicit, from MAX(ID) + 1\n"
        "  --host H --port P --user U --password W --database D --socket S\n"
        "                      mailbox connection; defaults from the environment\n"
        "                      MAILBOX_SHARED_MYSQL_HOST/PORT/USER/PASSWORD/DATABASE/\n"
        "                      SOCKET, else 127.0.0.1:3306, database aodbinterface\n"
        "  --time-zone TZ      session time zone in which CMINMSGS_DATE_RECEIVED = NOW()\n"
        "                      is written, e.g. +08:00 (MAILBOX_SHARED_MYSQL_TIME_ZONE,\n"
        "                      else the server's)\n"
        "  --batch N           rows per transaction (%d)\n"
        "  --rate N            at most N rows per second, committing before each\n"
        "                      pause (0 = as fast as possible)\n"
        "  --commit-log FILE   write \"ID SECONDS\" for every row once its transaction\n"
        "                      committed (Unix time, microseconds): commit -> delivery\n"
        "                      latency without the whole seconds of DATE_RECEIVED\n",
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
        snprintf (path, sizeof (path), "%s/%06" PRIu64 "_%s_%s.xml",
                  dir, meta->slot + 1, meta->type, meta->styp);
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

//  One mailbox session: the insert statement, the open transaction, pacing
typedef struct {
    const s_mysql_t *cfg;
    MYSQL *db;
    MYSQL_STMT *stmt;
    uint64_t base;              //  explicit IDs: the ID of slot 0
    size_t in_transaction;
    size_t executed;            //  rows inserted, committed or not
    double start;               //  pacing starts here
    s_result_t *result;
    FILE *commit_log;           //  --commit-log, NULL = none
    unsigned long long *open_ids;   //  the IDs of the open transaction (--commit-log)
    size_t open_cap;
} s_writer_t;

static int
s_commit (s_writer_t *w)
{
    if (w->in_transaction == 0)
        return 0;
    if (mysql_commit (w->db)) {
        fprintf (stderr, "msgx-gen: commit failed: %s\n", mysql_error (w->db));
        return -1;
    }
    //  The time the commit returned: when the rows became visible to a
    //  reader, to the microsecond (CMINMSGS_DATE_RECEIVED is whole seconds).
    if (w->commit_log) {
        struct timespec at;
        clock_gettime (CLOCK_REALTIME, &at);
        for (size_t i = 0; i < w->in_transaction; i++)
            fprintf (w->commit_log, "%llu %lld.%06ld\n", w->open_ids [i], (long long) at.tv_sec,
                     at.tv_nsec / 1000);
        if (ferror (w->commit_log)) {
            fprintf (stderr, "msgx-gen: cannot write the commit log: %s\n", strerror (errno));
            return -1;
        }
    }
    w->result->rows += w->in_transaction;
    w->in_transaction = 0;
    return 0;
}

//  --rate: wait until the rows so far are due, committing first so that
//  what was inserted is visible during the pause
static int
s_pace (s_writer_t *w)
{
    if (w->cfg->rate == 0)
        return 0;
    double due = w->start + (double) w->executed / (double) w->cfg->rate;
    double now = s_now ();
    if (now >= due)
        return 0;
    if (s_commit (w))
        return -1;
    double wait = due - now;
    struct timespec pause = {
        .tv_sec = (time_t) wait,
        .tv_nsec = (long) ((wait - (double) (time_t) wait) * 1e9)
    };
    while (nanosleep (&pause, &pause) && errno == EINTR)
        ;
    return 0;
}

static int
s_insert (s_writer_t *w, const char *text, const mx_gen_meta_t *meta)
{
    size_t size = strlen (text);
    size_t number = w->result->rows + w->in_transaction + 1;
    if (size > S_MEDIUMTEXT_MAX) {
        fprintf (stderr, "msgx-gen: message %zu (%s/%s) has %zu bytes, more than"
                 " CMINMSGS_CLOB_MSG (MEDIUMTEXT, %u bytes) holds; lower --oversize\n",
                 number, meta->type, meta->styp, size, S_MEDIUMTEXT_MAX);
        return -1;
    }
    static const char status [] = "VALID";
    unsigned long long id = w->base + meta->slot;
    unsigned long lengths [7] = {
        (unsigned long) size, (unsigned long) strlen (meta->sndr), 0, 0,
        (unsigned long) strlen (meta->styp), (unsigned long) strlen (meta->type),
        (unsigned long) strlen (status)
    };
    int seqn = (int) meta->seqn;
    MYSQL_TIME sent;
    s_mysql_time (meta->dttm, &sent);
    MYSQL_BIND all [8];
    memset (all, 0, sizeof (all));
    //  Without explicit IDs the statement has no ID parameter
    MYSQL_BIND *bind = all;
    if (w->cfg->explicit_ids) {
        all [0].buffer_type = MYSQL_TYPE_LONGLONG;
        all [0].buffer = &id;
        all [0].is_unsigned = 1;
        bind = all + 1;
    }
    bind [0].buffer_type = MYSQL_TYPE_STRING;
    bind [0].buffer = (char *) text;
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
    if (mysql_stmt_bind_param (w->stmt, all) || mysql_stmt_execute (w->stmt)) {
        fprintf (stderr, "msgx-gen: insert of message %zu failed: %s\n",
                 number, mysql_stmt_error (w->stmt));
        mysql_rollback (w->db);
        w->in_transaction = 0;
        return -1;
    }
    if (!w->cfg->explicit_ids)
        id = (unsigned long long) mysql_stmt_insert_id (w->stmt);
    if (w->result->rows + w->in_transaction == 0 || id < w->result->first_id)
        w->result->first_id = id;
    if (id > w->result->last_id)
        w->result->last_id = id;
    w->executed++;
    if (w->commit_log) {
        if (w->in_transaction == w->open_cap) {
            size_t cap = w->open_cap ? 2 * w->open_cap : 64;
            unsigned long long *more = realloc (w->open_ids, cap * sizeof (unsigned long long));
            if (!more) {
                fprintf (stderr, "msgx-gen: out of memory\n");
                return -1;
            }
            w->open_ids = more;
            w->open_cap = cap;
        }
        w->open_ids [w->in_transaction] = id;
    }
    if (++w->in_transaction >= w->cfg->batch && s_commit (w))
        return -1;
    return s_pace (w);
}

//  Session time zone of NOW(): a bound value, like every value we send
static int
s_set_time_zone (MYSQL *db, const char *zone)
{
    static const char sql [] = "SET time_zone = ?";
    MYSQL_STMT *stmt = mysql_stmt_init (db);
    unsigned long length = (unsigned long) strlen (zone);
    MYSQL_BIND bind;
    memset (&bind, 0, sizeof (bind));
    bind.buffer_type = MYSQL_TYPE_STRING;
    bind.buffer = (char *) zone;
    bind.buffer_length = length;
    bind.length = &length;
    int rc = 0;
    if (!stmt
    ||  mysql_stmt_prepare (stmt, sql, (unsigned long) strlen (sql))
    ||  mysql_stmt_bind_param (stmt, &bind)
    ||  mysql_stmt_execute (stmt)) {
        fprintf (stderr, "msgx-gen: cannot set the session time zone '%s': %s\n",
                 zone, stmt? mysql_stmt_error (stmt): mysql_error (db));
        rc = -1;
    }
    if (stmt)
        mysql_stmt_close (stmt);
    return rc;
}

//  First free ID for explicit inserts: above everything in the table
static int
s_next_id (MYSQL *db, uint64_t *id)
{
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    if (mysql_query (db, "SELECT COALESCE(MAX(CMINMSGS_ID), 0) FROM CMINMSGS")
    ||  !(res = mysql_store_result (db))
    ||  !(row = mysql_fetch_row (res))
    ||  !row [0]) {
        fprintf (stderr, "msgx-gen: cannot read MAX(CMINMSGS_ID): %s\n", mysql_error (db));
        if (res)
            mysql_free_result (res);
        return -1;
    }
    *id = strtoull (row [0], NULL, 10) + 1;
    mysql_free_result (res);
    return 0;
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
    s_writer_t w = { .cfg = cfg, .db = db, .result = result };
    if ((cfg->time_zone && s_set_time_zone (db, cfg->time_zone))
    ||  (cfg->explicit_ids && s_next_id (db, &w.base))) {
        mysql_close (db);
        return -1;
    }
    static const char *sql =
        "INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED,"
        " CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,"
        " CMINMSGS_SUBSYSTEM_DATE_SENT, CMINMSGS_SUBSYSTEM_SUBTYPE,"
        " CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS)"
        " VALUES (?, NOW(), ?, ?, ?, ?, ?, ?)";
    static const char *sql_with_id =
        "INSERT INTO CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED,"
        " CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,"
        " CMINMSGS_SUBSYSTEM_DATE_SENT, CMINMSGS_SUBSYSTEM_SUBTYPE,"
        " CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS)"
        " VALUES (?, ?, NOW(), ?, ?, ?, ?, ?, ?)";
    const char *insert = cfg->explicit_ids? sql_with_id: sql;
    w.stmt = mysql_stmt_init (db);
    if (!w.stmt
    ||  mysql_autocommit (db, 0)
    ||  mysql_stmt_prepare (w.stmt, insert, (unsigned long) strlen (insert))) {
        fprintf (stderr, "msgx-gen: cannot prepare the CMINMSGS insert: %s\n",
                 w.stmt? mysql_stmt_error (w.stmt): mysql_error (db));
        if (w.stmt)
            mysql_stmt_close (w.stmt);
        mysql_close (db);
        return -1;
    }
    if (cfg->commit_log && !(w.commit_log = fopen (cfg->commit_log, "w"))) {
        fprintf (stderr, "msgx-gen: cannot create the commit log %s: %s\n", cfg->commit_log, strerror (errno));
        mysql_stmt_close (w.stmt);
        mysql_close (db);
        return -1;
    }
    s_late_t *late = NULL;
    size_t nlate = 0, late_cap = 0;
    int rc = 0;
    w.start = s_now ();
    char *text;
    while (rc == 0 && (text = mx_gen_next (gen, NULL))) {
        const mx_gen_meta_t *meta = mx_gen_meta (gen);
        if (meta->late) {
            //  Its ID stays a hole until everything else is written
            if (nlate == late_cap) {
                late_cap = late_cap? 2 * late_cap: 64;
                s_late_t *more = realloc (late, late_cap * sizeof (s_late_t));
                if (!more) {
                    fprintf (stderr, "msgx-gen: out of memory\n");
                    free (text);
                    rc = -1;
                    break;
                }
                late = more;
            }
            late [nlate].text = text;
            late [nlate++].meta = *meta;
            continue;
        }
        rc = s_insert (&w, text, meta);
        free (text);
    }
    for (size_t i = 0; i < nlate; i++) {
        if (rc == 0)
            rc = s_insert (&w, late [i].text, &late [i].meta);
        free (late [i].text);
    }
    free (late);
    if (rc == 0)
        rc = s_commit (&w);
    if (rc)
        fprintf (stderr, "msgx-gen: %zu rows were committed before the failure\n", result->rows);
    if (w.commit_log && fclose (w.commit_log) && rc == 0) {
        fprintf (stderr, "msgx-gen: cannot write the commit log %s: %s\n", cfg->commit_log, strerror (errno));
        rc = -1;
    }
    free (w.open_ids);
    mysql_stmt_close (w.stmt);
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
        .time_zone = s_env ("MAILBOX_SHARED_MYSQL_TIME_ZONE", NULL),
        .batch = S_BATCH_DEFAULT
    };
    const char *port_text = s_env ("MAILBOX_SHARED_MYSQL_PORT", NULL);
    const char *port_origin = "MAILBOX_SHARED_MYSQL_PORT";

    enum {
        O_SEED = 256, O_FLIGHTS, O_UPDATES, O_PER_MESSAGE, O_DAY, O_FIRST_FLID,
        O_FIRST_SEQN, O_SENDER, O_AIRPORT, O_MIX, O_DUPLICATES, O_MALFORMED,
        O_IGNORED, O_UNSUPPORTED, O_CLEARS, O_OUT_DIR, O_STDOUT, O_MYSQL,
        O_HOST, O_PORT, O_USER, O_PASSWORD, O_DATABASE, O_SOCKET, O_BATCH, O_HELP,
        O_REFERENCE, O_LISTS, O_ADHOC, O_SCHD_DELETE, O_HOSTILE, O_OVERSIZE,
        O_FDEL_TYPE, O_HOLES, O_LATE_HOLES, O_TIME_ZONE, O_RATE, O_COMMIT_LOG
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
        { "reference",   required_argument, NULL, O_REFERENCE },
        { "lists",       required_argument, NULL, O_LISTS },
        { "adhoc",       required_argument, NULL, O_ADHOC },
        { "schd-delete", required_argument, NULL, O_SCHD_DELETE },
        { "hostile",     required_argument, NULL, O_HOSTILE },
        { "oversize",    required_argument, NULL, O_OVERSIZE },
        { "fdel-type",   required_argument, NULL, O_FDEL_TYPE },
        { "holes",       required_argument, NULL, O_HOLES },
        { "late-holes",  required_argument, NULL, O_LATE_HOLES },
        { "time-zone",   required_argument, NULL, O_TIME_ZONE },
        { "rate",        required_argument, NULL, O_RATE },
        { "commit-log",  required_argument, NULL, O_COMMIT_LOG },
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
            case O_REFERENCE:
                bad = s_parse_pct (optarg, &opts.reference_ppm);
                break;
            case O_LISTS:
                opts.lists = optarg;
                break;
            case O_ADHOC:
                bad = s_parse_pct (optarg, &opts.adhoc_ppm);
                break;
            case O_SCHD_DELETE:
                bad = s_parse_pct (optarg, &opts.schd_delete_ppm);
                break;
            case O_HOSTILE:
                bad = s_parse_pct (optarg, &opts.hostile_ppm);
                break;
            case O_OVERSIZE:
                bad = s_parse_size (optarg, 256 * 1024 * 1024, &opts.oversize_bytes);
                break;
            case O_FDEL_TYPE:
                bad = s_parse_pct (optarg, &opts.fdel_type_ppm);
                break;
            case O_HOLES:
                bad = s_parse_pct (optarg, &opts.hole_ppm);
                break;
            case O_LATE_HOLES:
                bad = s_parse_pct (optarg, &opts.late_ppm);
                break;
            case O_TIME_ZONE:
                cfg.time_zone = optarg;
                break;
            case O_RATE:
                bad = s_parse_u64 (optarg, 10000000, &cfg.rate);
                break;
            case O_COMMIT_LOG:
                cfg.commit_log = optarg;
                break;
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
    cfg.explicit_ids = opts.hole_ppm > 0 || opts.late_ppm > 0;
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
    if (cfg.explicit_ids)
        fprintf (summary, " (%" PRIu64 " IDs unused, %zu written late)",
                 mx_gen_holes (gen), mx_gen_late (gen));
    fprintf (summary, " in %.3f s, %.0f rows/s\n", elapsed,
             elapsed > 0? (double) result.rows / elapsed: 0.0);
    mx_gen_destroy (&gen);
    return 0;
}
