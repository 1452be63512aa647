/*  Integration tests of db/mx_mailbox against the test MariaDB: every
    statement, the time zone conversion, shadow mode, unreachable servers and
    reconnection after a lost connection.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mx_config.h"
#include "mx_mailbox.h"
#include "mx_testenv.h"

//  2024-03-01T12:00:00Z, and the same instant plus 750 ms.
#define T0_MS 1709294400000LL
#define T0_FRACTION_MS (T0_MS + 750)

typedef struct {
    mx_testmb_t *mb;
    MYSQL *admin;               //  plain connection to the same database
} fixture_t;

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    assert_non_null (fx);
    fx->mb = mx_testmb_new ();
    fx->admin = mx_testmb_connect (fx->mb);
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mysql_close (fx->admin);
    mx_testmb_destroy (&fx->mb);
    free (fx);
    return 0;
}

static void
s_set (mx_config_t *config, const char *key, const char *value)
{
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_set (config, key, value, errors))
        fail_msg ("config %s = %s: %s", key, value, (char *) zlist_first (errors));
    zlist_destroy (&errors);
}

//  A valid configuration pointing at the test mailbox, in time zone zone.
static mx_config_t *
s_config (fixture_t *fx, const char *zone)
{
    mx_config_t *config = mx_config_new_defaults ();
    assert_non_null (config);
    char port [16];
    snprintf (port, sizeof port, "%d", mx_testmb_port (fx->mb));
    mx_testmb_configure (fx->mb, config, zone);
    s_set (config, "mailbox.processed-value", "DONE");
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_validate (config, errors))
        fail_msg ("config invalid: %s", (char *) zlist_first (errors));
    zlist_destroy (&errors);
    return config;
}

//  One text column of row id (SQL NULL -> "NULL"), read by the admin
//  connection, whose session time zone is the server's (+00:00): DATETIME
//  text is what the mailbox stored, whoever reads it.
static void
s_raw (fixture_t *fx, const char *column, int64_t id, char *out, size_t size)
{
    char sql [256];
    snprintf (sql, sizeof sql, "SELECT COALESCE(CAST(%s AS CHAR), 'NULL') FROM CMINMSGS"
              " WHERE CMINMSGS_ID = ?", column);
    MYSQL_STMT *stmt = mysql_stmt_init (fx->admin);
    assert_non_null (stmt);
    if (mysql_stmt_prepare (stmt, sql, strlen (sql)))
        fail_msg ("prepare %s: %s", sql, mysql_stmt_error (stmt));
    long long id_value = id;
    MYSQL_BIND param;
    memset (&param, 0, sizeof param);
    param.buffer_type = MYSQL_TYPE_LONGLONG;
    param.buffer = &id_value;
    unsigned long length = 0;
    MYSQL_BIND result;
    memset (&result, 0, sizeof result);
    result.buffer_type = MYSQL_TYPE_STRING;
    result.buffer = out;
    result.buffer_length = (unsigned long) size - 1;
    result.length = &length;
    if (mysql_stmt_bind_param (stmt, &param) || mysql_stmt_execute (stmt)
    ||  mysql_stmt_bind_result (stmt, &result))
        fail_msg ("%s: %s", sql, mysql_stmt_error (stmt));
    int fetched = mysql_stmt_fetch (stmt);
    if (fetched == MYSQL_NO_DATA)
        snprintf (out, size, "(no row)");
    else {
        assert_int_equal (fetched, 0);
        out [length] = '\0';
    }
    mysql_stmt_free_result (stmt);
    mysql_stmt_close (stmt);
}

static int64_t
s_row_count (fixture_t *fx)
{
    const char *sql = "SELECT COUNT(*) FROM CMINMSGS";
    if (mysql_real_query (fx->admin, sql, strlen (sql)))
        fail_msg ("%s: %s", sql, mysql_error (fx->admin));
    MYSQL_RES *res = mysql_store_result (fx->admin);
    assert_non_null (res);
    MYSQL_ROW row = mysql_fetch_row (res);
    int64_t count = strtoll (row [0], NULL, 10);
    mysql_free_result (res);
    return count;
}

//  Kills every other connection of the test database (the mailbox's) from
//  the admin connection; returns how many.
static int
s_kill_others (fixture_t *fx)
{
    const char *sql = "SELECT ID FROM information_schema.PROCESSLIST"
                      " WHERE DB = ? AND ID <> CONNECTION_ID() AND COMMAND <> 'Killed'";
    MYSQL_STMT *stmt = mysql_stmt_init (fx->admin);
    assert_non_null (stmt);
    const char *db = mx_testmb_database (fx->mb);
    unsigned long db_length = (unsigned long) strlen (db);
    MYSQL_BIND param;
    memset (&param, 0, sizeof param);
    param.buffer_type = MYSQL_TYPE_STRING;
    param.buffer = (void *) db;
    param.buffer_length = db_length;
    param.length = &db_length;
    unsigned long long id = 0, ids [8];
    MYSQL_BIND result;
    memset (&result, 0, sizeof result);
    result.buffer_type = MYSQL_TYPE_LONGLONG;
    result.buffer = &id;
    result.is_unsigned = 1;
    if (mysql_stmt_prepare (stmt, sql, strlen (sql)) || mysql_stmt_bind_param (stmt, &param)
    ||  mysql_stmt_execute (stmt) || mysql_stmt_bind_result (stmt, &result)
    ||  mysql_stmt_store_result (stmt))
        fail_msg ("%s: %s", sql, mysql_stmt_error (stmt));
    int count = 0;
    while (count < 8 && mysql_stmt_fetch (stmt) == 0)
        ids [count++] = id;
    mysql_stmt_close (stmt);

    for (int i = 0; i < count; i++) {
        MYSQL_STMT *kill = mysql_stmt_init (fx->admin);
        MYSQL_BIND kill_param;
        memset (&kill_param, 0, sizeof kill_param);
        kill_param.buffer_type = MYSQL_TYPE_LONGLONG;
        kill_param.buffer = &ids [i];
        kill_param.is_unsigned = 1;
        if (mysql_stmt_prepare (kill, "KILL ?", 6) || mysql_stmt_bind_param (kill, &kill_param)
        ||  mysql_stmt_execute (kill))
            fail_msg ("KILL %llu: %s", ids [i], mysql_stmt_error (kill));
        mysql_stmt_close (kill);
    }
    return count;
}

//  ---------------------------------------------------------------------

static void
test_scan_order_limit_after (void **state)
{
    fixture_t *fx = *state;
    mx_testmb_insert (fx->mb, 3, "<c/>", T0_MS + 3000);
    mx_testmb_insert (fx->mb, 1, "<a/>", T0_MS + 1000);
    mx_testmb_insert (fx->mb, 10, "<d/>", T0_MS + 10000);
    mx_testmb_insert (fx->mb, 2, "<b/>", -1);
    mx_config_t *config = s_config (fx, "+00:00");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    assert_false (mx_mailbox_connected (mailbox));

    mx_mailbox_row_t rows [10];
    int count = -1;
    char *error = NULL;
    assert_int_equal (mx_mailbox_scan (mailbox, 0, 2, rows, &count, &error), 0);
    assert_true (mx_mailbox_connected (mailbox));
    assert_int_equal (count, 2);
    assert_int_equal (rows [0].id, 1);
    assert_int_equal (rows [0].received_ms, T0_MS + 1000);
    assert_int_equal (rows [1].id, 2);
    assert_int_equal (rows [1].received_ms, -1);        //  NULL in the mailbox

    assert_int_equal (mx_mailbox_scan (mailbox, 2, 10, rows, &count, &error), 0);
    assert_int_equal (count, 2);
    assert_int_equal (rows [0].id, 3);
    assert_int_equal (rows [0].received_ms, T0_MS + 3000);
    assert_int_equal (rows [1].id, 10);
    assert_int_equal (rows [1].received_ms, T0_MS + 10000);

    //  Between IDs and past the end.
    assert_int_equal (mx_mailbox_scan (mailbox, 4, 10, rows, &count, &error), 0);
    assert_int_equal (count, 1);
    assert_int_equal (rows [0].id, 10);
    assert_int_equal (mx_mailbox_scan (mailbox, 10, 10, rows, &count, &error), 0);
    assert_int_equal (count, 0);
    assert_null (error);

    mx_mailbox_destroy (&mailbox);
    mx_mailbox_destroy (&mailbox);
    assert_null (mailbox);
    mx_config_destroy (&config);
}

static void
test_time_zone_both_ways (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *east = s_config (fx, "+08:00");
    mx_config_t *utc = s_config (fx, "+00:00");
    mx_config_t *west = s_config (fx, "-05:30");
    mx_mailbox_t *mailbox = mx_mailbox_new (east);
    mx_mailbox_t *utc_mailbox = mx_mailbox_new (utc);
    mx_mailbox_t *west_mailbox = mx_mailbox_new (west);
    char *error = NULL;

    //  Writing: the epoch becomes wall-clock time at +08:00 (whole seconds).
    int64_t id = 0;
    assert_int_equal (mx_mailbox_insert (mailbox, "<x/>", 4, T0_FRACTION_MS, &id, &error), 0);
    char raw [64];
    s_raw (fx, "CMINMSGS_DATE_RECEIVED", id, raw, sizeof raw);
    assert_string_equal (raw, "2024-03-01 20:00:00");

    //  Reading it back in the same zone gives the epoch; in another zone
    //  the same wall-clock text is another instant.
    mx_mailbox_row_t rows [4];
    int count = 0;
    assert_int_equal (mx_mailbox_scan (mailbox, 0, 4, rows, &count, &error), 0);
    assert_int_equal (count, 1);
    assert_int_equal (rows [0].received_ms, T0_MS);
    assert_int_equal (mx_mailbox_scan (utc_mailbox, 0, 4, rows, &count, &error), 0);
    assert_int_equal (rows [0].received_ms, T0_MS + 8 * 3600 * 1000LL);

    //  A row written as UTC wall-clock text (the test helper), read at
    //  +08:00, +00:00 and -05:30.
    int64_t utc_id = mx_testmb_insert (fx->mb, 0, "<y/>", T0_MS);
    s_raw (fx, "CMINMSGS_DATE_RECEIVED", utc_id, raw, sizeof raw);
    assert_string_equal (raw, "2024-03-01 12:00:00");
    assert_int_equal (mx_mailbox_scan (mailbox, id, 4, rows, &count, &error), 0);
    assert_int_equal (rows [0].received_ms, T0_MS - 8 * 3600 * 1000LL);
    assert_int_equal (mx_mailbox_scan (utc_mailbox, id, 4, rows, &count, &error), 0);
    assert_int_equal (rows [0].received_ms, T0_MS);
    assert_int_equal (mx_mailbox_scan (west_mailbox, id, 4, rows, &count, &error), 0);
    assert_int_equal (rows [0].received_ms, T0_MS + (5 * 3600 + 1800) * 1000LL);

    //  The processed mark is written in the session zone too.
    assert_int_equal (mx_mailbox_mark (west_mailbox, utc_id, T0_MS, &error), MX_MARK_WRITTEN);
    s_raw (fx, "CMINMSGS_DATE_PROCESSED", utc_id, raw, sizeof raw);
    assert_string_equal (raw, "2024-03-01 06:30:00");
    assert_null (error);

    mx_mailbox_destroy (&west_mailbox);
    mx_mailbox_destroy (&utc_mailbox);
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&west);
    mx_config_destroy (&utc);
    mx_config_destroy (&east);
}

static void
test_time_zone_config (void **state)
{
    fixture_t *fx = *state;
    //  The format is checked at start-up, naming the key.
    const char *bad [] = { "8:00", "+8:00", "+08", "+08:00:00", "Asia/Shanghai", "+15:00",
                           "+08:60", "", "+08:0x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        mx_config_t *config = mx_config_new_defaults ();
        s_set (config, "mailbox.shared-mysql.time-zone", bad [i]);
        zlist_t *errors = zlist_new ();
        zlist_autofree (errors);
        assert_int_equal (mx_config_validate (config, errors), -1);
        assert_int_equal (zlist_size (errors), 1);
        assert_non_null (strstr (zlist_first (errors), "mailbox.shared-mysql.time-zone"));
        zlist_destroy (&errors);
        mx_config_destroy (&config);
    }
    mx_config_t *defaults = mx_config_new_defaults ();
    assert_string_equal (defaults->mailbox_shared_mysql_time_zone, "+08:00");
    mx_config_destroy (&defaults);

    //  A well-formed offset the server refuses fails the connection with a
    //  line naming the key; nothing is left connected.
    mx_config_t *config = s_config (fx, "+13:30");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    int64_t min_id = -1, max_id = -1;
    char *error = NULL;
    assert_int_equal (mx_mailbox_bounds (mailbox, &min_id, &max_id, &error), -1);
    assert_non_null (error);
    assert_non_null (strstr (error, "mailbox.shared-mysql.time-zone"));
    assert_non_null (strstr (error, "+13:30"));
    assert_null (strchr (error, '\n'));
    assert_false (mx_mailbox_connected (mailbox));
    free (error);
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

static void
test_read_found_missing_oversized (void **state)
{
    fixture_t *fx = *state;
    const char *text = "<MSG>\xe8\x88\xaa\xe7\x8f\xad CA1234 \xf0\x9f\x9b\xab</MSG>";
    int64_t id = mx_testmb_insert (fx->mb, 0, text, T0_MS);
    int64_t empty_id = mx_testmb_insert (fx->mb, 0, "", T0_MS);
    size_t length = strlen (text);
    mx_config_t *config = s_config (fx, "+08:00");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    char *xml = NULL;
    size_t size = 0;
    char *error = NULL;

    //  Found: the exact bytes, NUL-terminated; a limit equal to the length
    //  still reads it.
    assert_int_equal (mx_mailbox_read (mailbox, id, length, &xml, &size, &error), 1);
    assert_non_null (xml);
    assert_int_equal (size, length);
    assert_memory_equal (xml, text, length);
    assert_int_equal (xml [size], '\0');
    free (xml);

    //  Oversized: not transferred, but its real length is reported.
    assert_int_equal (mx_mailbox_read (mailbox, id, length - 1, &xml, &size, &error), 1);
    assert_null (xml);
    assert_int_equal (size, length);

    assert_int_equal (mx_mailbox_read (mailbox, empty_id, 100, &xml, &size, &error), 1);
    assert_non_null (xml);
    assert_int_equal (size, 0);
    assert_string_equal (xml, "");
    free (xml);

    //  Missing.
    xml = (char *) "untouched";
    assert_int_equal (mx_mailbox_read (mailbox, id + 100, 1000, &xml, &size, &error), 0);
    assert_null (xml);
    assert_int_equal (size, 0);
    assert_null (error);

    //  Released (its receive buffer given back): the next read connects again.
    mx_mailbox_release (mailbox);
    assert_false (mx_mailbox_connected (mailbox));
    mx_mailbox_release (mailbox);
    assert_int_equal (mx_mailbox_read (mailbox, id, length, &xml, &size, &error), 1);
    assert_true (mx_mailbox_connected (mailbox));
    assert_int_equal (size, length);
    free (xml);

    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

//  A range read gives the rows that exist, ascending, however wide the gap
//  of IDs between them; an oversized row comes with its length only.
static void
test_read_range_across_a_wide_gap (void **state)
{
    fixture_t *fx = *state;
    mx_testmb_insert (fx->mb, 3, "<c/>", T0_MS);
    mx_testmb_insert (fx->mb, 1, "<a/>", T0_MS);
    mx_testmb_insert (fx->mb, 2000000000, "<far/>", T0_MS);
    mx_testmb_insert (fx->mb, 5, "<too-long/>", T0_MS);
    for (int64_t id = 1000; id < 1300; id++)                //  more than one growth of the array
        mx_testmb_insert (fx->mb, id, "<m/>", T0_MS);
    mx_config_t *config = s_config (fx, "+08:00");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    mx_mailbox_text_t *rows = NULL;
    size_t count = 0;
    char *error = NULL;
    assert_int_equal (mx_mailbox_read_range (mailbox, 1, 2000000000, 8, SIZE_MAX, &rows, &count, NULL, &error), 0);
    assert_null (error);
    assert_int_equal (count, 304);
    assert_int_equal (rows [0].id, 1);
    assert_string_equal (rows [0].xml, "<a/>");
    assert_int_equal (rows [1].id, 3);
    assert_int_equal (rows [2].id, 5);
    assert_null (rows [2].xml);
    assert_int_equal (rows [2].size, strlen ("<too-long/>"));
    for (size_t i = 3; i < 303; i++) {
        assert_int_equal (rows [i].id, (int64_t) (1000 + i - 3));
        assert_string_equal (rows [i].xml, "<m/>");
    }
    assert_int_equal (rows [303].id, 2000000000);
    assert_string_equal (rows [303].xml, "<far/>");
    for (size_t i = 0; i < count; i++)
        free (rows [i].xml);
    free (rows);

    //  Nothing in the range: no rows, no error.
    int64_t until = 0;
    assert_int_equal (mx_mailbox_read_range (mailbox, 6, 999, 100, SIZE_MAX, &rows, &count, &until, &error), 0);
    assert_int_equal (count, 0);
    assert_int_equal (until, 1000);
    assert_null (error);
    free (rows);

    //  A byte budget: 4 + 4 bytes, the next row (11 bytes, too long to be
    //  read) would pass 10; the first row is read whatever its size.
    assert_int_equal (mx_mailbox_read_range (mailbox, 1, 2000000000, 8, 10, &rows, &count, &until, &error), 0);
    assert_int_equal (count, 2);
    assert_int_equal (rows [1].id, 3);
    assert_int_equal (until, 4);
    for (size_t i = 0; i < count; i++)
        free (rows [i].xml);
    free (rows);
    assert_int_equal (mx_mailbox_read_range (mailbox, 1000, 2000000000, 8, 1, &rows, &count, &until, &error), 0);
    assert_int_equal (count, 1);
    assert_int_equal (until, 1001);
    free (rows [0].xml);
    free (rows);
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

static void
test_insert_returns_increasing_ids (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "+08:00");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    char *error = NULL;
    int64_t ids [3] = { 0 };
    const char *bodies [] = { "<one/>", "<two>\xe4\xb8\xad</two>", "<three/>" };
    for (int i = 0; i < 3; i++) {
        assert_int_equal (mx_mailbox_insert (mailbox, bodies [i], strlen (bodies [i]),
                                             T0_MS + i * 1000, &ids [i], &error), 0);
        assert_true (ids [i] > 0);
        if (i > 0)
            assert_true (ids [i] > ids [i - 1]);
    }
    char raw [64];
    for (int i = 0; i < 3; i++) {
        s_raw (fx, "CMINMSGS_STATUS", ids [i], raw, sizeof raw);
        assert_string_equal (raw, "VALID");
        s_raw (fx, "CMINMSGS_DATE_PROCESSED", ids [i], raw, sizeof raw);
        assert_string_equal (raw, "NULL");
        char *xml = NULL;
        size_t size = 0;
        assert_int_equal (mx_mailbox_read (mailbox, ids [i], 1000, &xml, &size, &error), 1);
        assert_string_equal (xml, bodies [i]);
        free (xml);
    }
    //  Only the given size is written, not up to a NUL.
    int64_t id = 0;
    assert_int_equal (mx_mailbox_insert (mailbox, "<ab/>tail", 5, T0_MS, &id, &error), 0);
    s_raw (fx, "CMINMSGS_CLOB_MSG", id, raw, sizeof raw);
    assert_string_equal (raw, "<ab/>");
    assert_null (error);
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

static void
test_mark_written_already_missing (void **state)
{
    fixture_t *fx = *state;
    int64_t id = mx_testmb_insert (fx->mb, 0, "<m/>", T0_MS);
    mx_config_t *config = s_config (fx, "+08:00");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    char *error = NULL;
    char raw [64];

    assert_int_equal (mx_mailbox_mark (mailbox, id, T0_MS + 60000, &error), MX_MARK_WRITTEN);
    s_raw (fx, "CMINMSGS_STATUS", id, raw, sizeof raw);
    assert_string_equal (raw, "DONE");
    s_raw (fx, "CMINMSGS_DATE_PROCESSED", id, raw, sizeof raw);
    assert_string_equal (raw, "2024-03-01 20:01:00");

    //  Marked already: never overwritten, whatever the value and time.
    mx_config_t *other = s_config (fx, "+00:00");
    s_set (other, "mailbox.processed-value", "OTHER");
    mx_mailbox_t *second = mx_mailbox_new (other);
    assert_int_equal (mx_mailbox_mark (second, id, T0_MS + 3600000, &error), MX_MARK_ALREADY);
    assert_int_equal (mx_mailbox_mark (mailbox, id, T0_MS + 3600000, &error), MX_MARK_ALREADY);
    s_raw (fx, "CMINMSGS_STATUS", id, raw, sizeof raw);
    assert_string_equal (raw, "DONE");
    s_raw (fx, "CMINMSGS_DATE_PROCESSED", id, raw, sizeof raw);
    assert_string_equal (raw, "2024-03-01 20:01:00");

    //  "Already" means DATE_PROCESSED is set, whatever the status says.
    const char *sql = "UPDATE CMINMSGS SET CMINMSGS_DATE_PROCESSED = NULL";
    assert_int_equal (mysql_real_query (fx->admin, sql, strlen (sql)), 0);
    assert_int_equal (mx_mailbox_mark (second, id, T0_MS, &error), MX_MARK_WRITTEN);
    s_raw (fx, "CMINMSGS_STATUS", id, raw, sizeof raw);
    assert_string_equal (raw, "OTHER");

    assert_int_equal (mx_mailbox_mark (mailbox, id + 1, T0_MS, &error), MX_MARK_MISSING);
    assert_int_equal (s_row_count (fx), 1);
    assert_null (error);

    mx_mailbox_destroy (&second);
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&other);
    mx_config_destroy (&config);
}

//  Many marks at once, in chunks of 64: each row gets its own outcome.
static void
test_mark_many (void **state)
{
    fixture_t *fx = *state;
    enum { ROWS = 150 };
    int64_t ids [ROWS + 2];
    for (int i = 0; i < ROWS; i++)
        ids [i] = mx_testmb_insert (fx->mb, 0, "<m/>", T0_MS);
    mx_config_t *config = s_config (fx, "+08:00");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    char *error = NULL;
    //  Two marked before, one repeated, two that do not exist.
    assert_int_equal (mx_mailbox_mark (mailbox, ids [3], T0_MS, &error), MX_MARK_WRITTEN);
    assert_int_equal (mx_mailbox_mark (mailbox, ids [100], T0_MS, &error), MX_MARK_WRITTEN);
    ids [ROWS] = ids [7];
    ids [ROWS + 1] = ids [ROWS - 1] + 1000;
    ids [70] = ids [ROWS - 1] + 1001;
    mx_mark_t marks [ROWS + 2];
    assert_int_equal (mx_mailbox_mark_many (mailbox, ids, ROWS + 2, T0_MS + 60000, marks, &error), ROWS + 2);
    assert_null (error);
    for (int i = 0; i < ROWS + 2; i++) {
        mx_mark_t expected = i == 3 || i == 100 || i == ROWS ? MX_MARK_ALREADY
                           : i == 70 || i == ROWS + 1 ? MX_MARK_MISSING : MX_MARK_WRITTEN;
        if (marks [i] != expected)
            fail_msg ("id %" PRId64 " (%d): outcome %d, expected %d", ids [i], i, marks [i], expected);
    }
    char raw [64];
    s_raw (fx, "CMINMSGS_DATE_PROCESSED", ids [3], raw, sizeof raw);
    assert_string_equal (raw, "2024-03-01 20:00:00");
    s_raw (fx, "CMINMSGS_DATE_PROCESSED", ids [149], raw, sizeof raw);
    assert_string_equal (raw, "2024-03-01 20:01:00");
    //  All of them again: marked already, nothing written.
    assert_int_equal (mx_mailbox_mark_many (mailbox, ids, ROWS, T0_MS + 120000, marks, &error), ROWS);
    for (int i = 0; i < ROWS; i++)
        assert_int_equal (marks [i], i == 70 ? MX_MARK_MISSING : MX_MARK_ALREADY);
    assert_int_equal (mx_mailbox_mark_many (mailbox, ids, 0, T0_MS, marks, &error), 0);

    //  A row that reads unmarked but that the UPDATE does not change (as
    //  if someone marked it in between; a trigger keeps it as it was):
    //  the chunk is undone and redone row by row, each outcome exact.
    int64_t fresh [3];
    for (int i = 0; i < 3; i++)
        fresh [i] = mx_testmb_insert (fx->mb, 0, "<r/>", T0_MS);
    char sql [512];
    snprintf (sql, sizeof sql,
              "CREATE TRIGGER mx_test_keep BEFORE UPDATE ON CMINMSGS FOR EACH ROW"
              " IF OLD.CMINMSGS_ID = %" PRId64 " THEN"
              " SET NEW.CMINMSGS_STATUS = OLD.CMINMSGS_STATUS,"
              " NEW.CMINMSGS_DATE_PROCESSED = OLD.CMINMSGS_DATE_PROCESSED; END IF", fresh [1]);
    assert_int_equal (mysql_real_query (fx->admin, sql, strlen (sql)), 0);
    assert_int_equal (mx_mailbox_mark_many (mailbox, fresh, 3, T0_MS + 180000, marks, &error), 3);
    assert_null (error);
    assert_int_equal (marks [0], MX_MARK_WRITTEN);
    assert_int_equal (marks [1], MX_MARK_ALREADY);
    assert_int_equal (marks [2], MX_MARK_WRITTEN);
    s_raw (fx, "CMINMSGS_DATE_PROCESSED", fresh [0], raw, sizeof raw);
    assert_string_equal (raw, "2024-03-01 20:03:00");
    s_raw (fx, "CMINMSGS_DATE_PROCESSED", fresh [2], raw, sizeof raw);
    assert_string_equal (raw, "2024-03-01 20:03:00");
    const char *drop = "DROP TRIGGER mx_test_keep";
    assert_int_equal (mysql_real_query (fx->admin, drop, strlen (drop)), 0);
    mx_mailbox_destroy (&mailbox);

    //  Shadow mode: every mark refused, before any I/O.
    s_set (config, "msgx.shadow", "true");
    mailbox = mx_mailbox_new (config);
    assert_int_equal (mx_mailbox_mark_many (mailbox, ids, 3, T0_MS, marks, &error), 3);
    assert_non_null (error);
    assert_true (strncmp (error, "shadow mode: ", 13) == 0);
    assert_int_equal (marks [2], MX_MARK_ERROR);
    free (error);
    assert_false (mx_mailbox_connected (mailbox));
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

static void
test_shadow_mode_writes_nothing (void **state)
{
    fixture_t *fx = *state;
    int64_t id = mx_testmb_insert (fx->mb, 0, "<s/>", T0_MS);
    mx_config_t *config = s_config (fx, "+08:00");
    s_set (config, "msgx.shadow", "true");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    char *error = NULL;

    int64_t new_id = -1;
    assert_int_equal (mx_mailbox_insert (mailbox, "<n/>", 4, T0_MS, &new_id, &error), -1);
    assert_non_null (error);
    assert_true (strncmp (error, "shadow mode: ", 13) == 0);
    assert_int_equal (new_id, 0);
    free (error);
    error = NULL;

    assert_int_equal (mx_mailbox_mark (mailbox, id, T0_MS, &error), MX_MARK_ERROR);
    assert_non_null (error);
    assert_true (strncmp (error, "shadow mode: ", 13) == 0);
    free (error);
    error = NULL;
    //  Refused before any I/O.
    assert_false (mx_mailbox_connected (mailbox));

    assert_int_equal (s_row_count (fx), 1);
    char raw [64];
    s_raw (fx, "CMINMSGS_STATUS", id, raw, sizeof raw);
    assert_string_equal (raw, "VALID");
    s_raw (fx, "CMINMSGS_DATE_PROCESSED", id, raw, sizeof raw);
    assert_string_equal (raw, "NULL");

    //  Reading is allowed.
    mx_mailbox_row_t rows [2];
    int count = 0;
    assert_int_equal (mx_mailbox_scan (mailbox, 0, 2, rows, &count, &error), 0);
    assert_int_equal (count, 1);
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

static void
test_bounds_and_existing (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "+08:00");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    char *error = NULL;
    int64_t min_id = -1, max_id = -1;
    assert_int_equal (mx_mailbox_bounds (mailbox, &min_id, &max_id, &error), 0);
    assert_int_equal (min_id, 0);
    assert_int_equal (max_id, 0);

    int64_t ids [10];
    int count = -1;
    assert_int_equal (mx_mailbox_existing (mailbox, 1, 100, ids, 10, &count, &error), 0);
    assert_int_equal (count, 0);

    mx_testmb_insert (fx->mb, 9, "<9/>", T0_MS);
    mx_testmb_insert (fx->mb, 5, "<5/>", T0_MS);
    mx_testmb_insert (fx->mb, 12, "<12/>", -1);
    mx_testmb_insert (fx->mb, 7, "<7/>", T0_MS);
    assert_int_equal (mx_mailbox_bounds (mailbox, &min_id, &max_id, &error), 0);
    assert_int_equal (min_id, 5);
    assert_int_equal (max_id, 12);

    assert_int_equal (mx_mailbox_existing (mailbox, 6, 12, ids, 10, &count, &error), 0);
    assert_int_equal (count, 3);
    assert_int_equal (ids [0], 7);
    assert_int_equal (ids [1], 9);
    assert_int_equal (ids [2], 12);
    //  At most max, lowest first.
    assert_int_equal (mx_mailbox_existing (mailbox, 1, 100, ids, 2, &count, &error), 0);
    assert_int_equal (count, 2);
    assert_int_equal (ids [0], 5);
    assert_int_equal (ids [1], 7);
    //  Inclusive bounds, and a range without rows.
    assert_int_equal (mx_mailbox_existing (mailbox, 5, 5, ids, 10, &count, &error), 0);
    assert_int_equal (count, 1);
    assert_int_equal (mx_mailbox_existing (mailbox, 10, 11, ids, 10, &count, &error), 0);
    assert_int_equal (count, 0);
    assert_null (error);
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

static void
test_unreachable_server_is_an_error_not_empty (void **state)
{
    fixture_t *fx = *state;
    //  A bound socket that does not listen: connections are refused.
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    assert_true (fd >= 0);
    struct sockaddr_in addr = { .sin_family = AF_INET };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    socklen_t addr_length = sizeof addr;
    assert_int_equal (bind (fd, (struct sockaddr *) &addr, sizeof addr), 0);
    assert_int_equal (getsockname (fd, (struct sockaddr *) &addr, &addr_length), 0);
    char port [16];
    snprintf (port, sizeof port, "%d", ntohs (addr.sin_port));

    mx_config_t *config = s_config (fx, "+08:00");
    s_set (config, "mailbox.shared-mysql.port", port);
    s_set (config, "mailbox.shared-mysql.connect-timeout", "1s");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    char where [64];
    snprintf (where, sizeof where, "cannot connect to the mailbox at 127.0.0.1:%s", port);

    mx_mailbox_row_t rows [4];
    int count = 99;
    char *error = NULL;
    assert_int_equal (mx_mailbox_scan (mailbox, 0, 4, rows, &count, &error), -1);
    assert_int_equal (count, 0);
    assert_non_null (error);
    assert_non_null (strstr (error, where));
    assert_null (strchr (error, '\n'));
    free (error);
    error = NULL;
    assert_false (mx_mailbox_connected (mailbox));

    char *xml = NULL;
    size_t size = 0;
    assert_int_equal (mx_mailbox_read (mailbox, 1, 100, &xml, &size, &error), -1);
    assert_non_null (strstr (error, where));
    free (error);
    error = NULL;
    int64_t id = 0;
    assert_int_equal (mx_mailbox_insert (mailbox, "<x/>", 4, T0_MS, &id, &error), -1);
    assert_non_null (strstr (error, where));
    free (error);
    error = NULL;
    assert_int_equal (mx_mailbox_mark (mailbox, 1, T0_MS, &error), MX_MARK_ERROR);
    assert_non_null (strstr (error, where));
    free (error);
    error = NULL;
    int64_t min_id = 0, max_id = 0;
    assert_int_equal (mx_mailbox_bounds (mailbox, &min_id, &max_id, &error), -1);
    free (error);
    error = NULL;
    int64_t ids [4];
    assert_int_equal (mx_mailbox_existing (mailbox, 1, 10, ids, 4, &count, &error), -1);
    assert_int_equal (count, 0);
    free (error);
    //  A NULL error is allowed.
    assert_int_equal (mx_mailbox_scan (mailbox, 0, 4, rows, &count, NULL), -1);

    close (fd);
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

static void
test_reconnects_after_connection_loss (void **state)
{
    fixture_t *fx = *state;
    int64_t first = mx_testmb_insert (fx->mb, 0, "<r/>", T0_MS);
    mx_config_t *config = s_config (fx, "+00:00");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    char *error = NULL;
    mx_mailbox_row_t rows [4];
    int count = 0;
    assert_int_equal (mx_mailbox_scan (mailbox, 0, 4, rows, &count, &error), 0);
    assert_int_equal (count, 1);

    //  Every operation works on the call right after its connection was
    //  killed; the harness's helper connection goes too, so rows come from
    //  the mailbox itself from here on.
    assert_true (s_kill_others (fx) >= 1);
    assert_int_equal (mx_mailbox_scan (mailbox, 0, 4, rows, &count, &error), 0);
    assert_null (error);
    assert_int_equal (count, 1);
    assert_int_equal (rows [0].id, first);
    assert_int_equal (rows [0].received_ms, T0_MS);

    assert_int_equal (s_kill_others (fx), 1);
    int64_t id = 0;
    assert_int_equal (mx_mailbox_insert (mailbox, "<k/>", 4, T0_MS, &id, &error), 0);
    assert_true (id > first);
    assert_int_equal (s_row_count (fx), 2);         //  exactly once

    assert_int_equal (s_kill_others (fx), 1);
    assert_int_equal (mx_mailbox_mark (mailbox, id, T0_MS, &error), MX_MARK_WRITTEN);

    assert_int_equal (s_kill_others (fx), 1);
    char *xml = NULL;
    size_t size = 0;
    assert_int_equal (mx_mailbox_read (mailbox, id, 100, &xml, &size, &error), 1);
    assert_string_equal (xml, "<k/>");
    free (xml);

    assert_int_equal (s_kill_others (fx), 1);
    int64_t min_id = 0, max_id = 0;
    assert_int_equal (mx_mailbox_bounds (mailbox, &min_id, &max_id, &error), 0);
    assert_int_equal (max_id, id);

    assert_int_equal (s_kill_others (fx), 1);
    int64_t ids [4];
    assert_int_equal (mx_mailbox_existing (mailbox, 1, id, ids, 4, &count, &error), 0);
    assert_int_equal (count, 2);
    assert_null (error);
    assert_true (mx_mailbox_connected (mailbox));

    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

static void
test_statement_error_is_reported_and_recovers (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "+08:00");
    mx_mailbox_t *mailbox = mx_mailbox_new (config);
    char *error = NULL;
    int64_t min_id = 0, max_id = 0;
    assert_int_equal (mx_mailbox_bounds (mailbox, &min_id, &max_id, &error), 0);

    //  The table is gone: a clear error, not zero rows and not a retry loop.
    const char *sql = "RENAME TABLE CMINMSGS TO CMINMSGS_AWAY";
    assert_int_equal (mysql_real_query (fx->admin, sql, strlen (sql)), 0);
    mx_mailbox_row_t rows [2];
    int count = 7;
    assert_int_equal (mx_mailbox_scan (mailbox, 0, 2, rows, &count, &error), -1);
    assert_int_equal (count, 0);
    assert_non_null (error);
    assert_non_null (strstr (error, "mailbox scan failed"));
    assert_non_null (strstr (error, "CMINMSGS"));
    free (error);
    error = NULL;
    assert_false (mx_mailbox_connected (mailbox));

    sql = "RENAME TABLE CMINMSGS_AWAY TO CMINMSGS";
    assert_int_equal (mysql_real_query (fx->admin, sql, strlen (sql)), 0);
    mx_testmb_insert (fx->mb, 4, "<4/>", T0_MS);
    assert_int_equal (mx_mailbox_scan (mailbox, 0, 2, rows, &count, &error), 0);
    assert_int_equal (count, 1);
    assert_int_equal (rows [0].id, 4);
    mx_mailbox_destroy (&mailbox);
    mx_config_destroy (&config);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_scan_order_limit_after, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_time_zone_both_ways, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_time_zone_config, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_read_found_missing_oversized, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_read_range_across_a_wide_gap, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_insert_returns_increasing_ids, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_mark_written_already_missing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_mark_many, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_shadow_mode_writes_nothing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_bounds_and_existing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_unreachable_server_is_an_error_not_empty, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_reconnects_after_connection_loss, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_statement_error_is_reported_and_recovers, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
