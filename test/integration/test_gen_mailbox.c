/*  The msgx-gen binary against a real MariaDB mailbox: what it inserts is
    exactly what the mx_gen library generates for the same options, row by
    row, in ID order, as the upstream would leave it (STATUS VALID, not yet
    processed, META copied into the SUBSYSTEM_* columns). With holes the IDs
    follow the library's slots, and late messages are inserted last (an
    insert trigger records the order).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <mysql.h>

#include "mx_gen.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define S_TIMEOUT_MS 120000

static char s_binary [4096];

//  argv for msgx-gen: the binary, then the NULL-terminated args
static int
s_run (const char *const *args, const char *const *env, char **out, char **err)
{
    const char *argv [64];
    size_t n = 0;
    argv [n++] = s_binary;
    for (size_t i = 0; args [i]; i++) {
        assert_true (n < 63);
        argv [n++] = args [i];
    }
    argv [n] = NULL;
    return mx_testproc_run (argv, env, S_TIMEOUT_MS, out, err);
}

static mx_gen_options_t
s_options (uint64_t seed, size_t flights, size_t updates, size_t per_message)
{
    mx_gen_options_t opts;
    mx_gen_options_init (&opts);
    opts.seed = seed;
    opts.flights = flights;
    opts.updates = updates;
    opts.per_message = per_message;
    return opts;
}

//  Compares the CMINMSGS rows from first_id on with the library's stream:
//  row IDs are first_id + slot (contiguous unless holes were asked for)
static void
s_check_rows (mx_testmb_t *mb, const mx_gen_options_t *opts, long long first_id)
{
    MYSQL *conn = mx_testmb_connect (mb);
    assert_non_null (conn);
    static const char *sql =
        "SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS,"
        " CMINMSGS_DATE_PROCESSED IS NULL, CMINMSGS_DATE_RECEIVED IS NOT NULL,"
        " CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,"
        " DATE_FORMAT(CMINMSGS_SUBSYSTEM_DATE_SENT, '%Y%m%d%H%i%s'),"
        " CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_SUBSYSTEM_SUBTYPE"
        " FROM CMINMSGS ORDER BY CMINMSGS_ID";
    if (mysql_query (conn, sql))
        fail_msg ("%s: %s", sql, mysql_error (conn));
    MYSQL_RES *result = mysql_use_result (conn);
    assert_non_null (result);

    mx_gen_t *gen = mx_gen_new (opts);
    assert_non_null (gen);
    size_t rows = 0;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row (result))) {
        unsigned long *lengths = mysql_fetch_lengths (result);
        long long id = atoll (row [0]);
        if (id < first_id)
            continue;
        char *text = mx_gen_next (gen, NULL);
        if (!text)
            fail_msg ("row %lld beyond the generated stream", id);
        const mx_gen_meta_t *meta = mx_gen_meta (gen);
        //  In the order generated, at the slot's ID
        assert_int_equal (id, first_id + (long long) meta->slot);
        if (lengths [1] != strlen (text) || memcmp (row [1], text, lengths [1]) != 0)
            fail_msg ("row %lld differs from the generated message", id);
        assert_string_equal (row [2], "VALID");
        assert_string_equal (row [3], "1");
        assert_string_equal (row [4], "1");
        assert_string_equal (row [5], meta->sndr);
        assert_int_equal (atol (row [6]), meta->seqn);
        assert_string_equal (row [7], meta->dttm);
        assert_string_equal (row [8], meta->type);
        assert_string_equal (row [9], meta->styp);
        free (text);
        rows++;
    }
    assert_int_equal (mysql_errno (conn), 0);
    assert_int_equal (rows, mx_gen_total (gen));
    assert_null (mx_gen_next (gen, NULL));
    mysql_free_result (result);
    mysql_close (conn);
    mx_gen_destroy (&gen);
}

//  A small day with every kind of message, in several transactions
static void
test_load_day (void **state)
{
    mx_testmb_t *mb = mx_testmb_new ();
    char port [16];
    snprintf (port, sizeof (port), "%d", mx_testmb_port (mb));
    const char *args [] = {
        "--mysql", "--seed", "5", "--flights", "60", "--updates", "700",
        "--per-message", "25", "--duplicates", "2", "--malformed", "2",
        "--ignored", "1", "--unsupported", "1", "--batch", "100",
        "--host", mx_testmb_host (mb), "--port", port,
        "--user", mx_testmb_user (mb), "--password", mx_testmb_password (mb),
        "--database", mx_testmb_database (mb), NULL
    };
    char *out = NULL, *err = NULL;
    int rc = s_run (args, NULL, &out, &err);
    if (rc != 0)
        fail_msg ("msgx-gen exited %d: %s", rc, err);
    //  One summary line: counts by kind and the ID range
    assert_non_null (strstr (out, "msgx-gen: 703 messages (schedule 3, update "));
    assert_non_null (strstr (out, " ids 1..703 "));
    assert_non_null (strstr (out, "rows/s"));
    assert_null (strchr (strchr (out, '\n') + 1, '\n'));
    free (out);
    free (err);

    mx_gen_options_t opts = s_options (5, 60, 700, 25);
    opts.duplicate_ppm = 20000;
    opts.malformed_ppm = 20000;
    opts.ignored_ppm = 10000;
    opts.unsupported_ppm = 10000;
    s_check_rows (mb, &opts, 1);
    mx_testmb_destroy (&mb);
}

//  Connection from MAILBOX_SHARED_MYSQL_*; a second load appends after the first
static void
test_environment_defaults (void **state)
{
    mx_testmb_t *mb = mx_testmb_new ();
    char host [128], port [64], user [128], password [128], database [160];
    snprintf (host, sizeof (host), "MAILBOX_SHARED_MYSQL_HOST=%s", mx_testmb_host (mb));
    snprintf (port, sizeof (port), "MAILBOX_SHARED_MYSQL_PORT=%d", mx_testmb_port (mb));
    snprintf (user, sizeof (user), "MAILBOX_SHARED_MYSQL_USER=%s", mx_testmb_user (mb));
    snprintf (password, sizeof (password), "MAILBOX_SHARED_MYSQL_PASSWORD=%s",
              mx_testmb_password (mb));
    snprintf (database, sizeof (database), "MAILBOX_SHARED_MYSQL_DATABASE=%s",
              mx_testmb_database (mb));
    const char *env [] = { host, port, user, password, database, NULL };

    const char *first [] = { "--mysql", "--flights", "4", "--updates", "6", NULL };
    char *out = NULL;
    assert_int_equal (s_run (first, env, &out, NULL), 0);
    assert_non_null (strstr (out, " ids 1..7 "));
    free (out);

    const char *second [] = {
        "--mysql", "--seed", "8", "--day", "2021-01-24", "--flights", "4",
        "--updates", "6", "--first-seqn", "999999", NULL
    };
    out = NULL;
    assert_int_equal (s_run (second, env, &out, NULL), 0);
    assert_non_null (strstr (out, " ids 8..14 "));
    free (out);

    mx_gen_options_t opts = s_options (8, 4, 6, 500);
    opts.day = "2021-01-24";
    opts.first_seqn = 999999;
    s_check_rows (mb, &opts, 8);
    mx_testmb_destroy (&mb);
}

static void
test_connection_failure (void **state)
{
    mx_testmb_t *mb = mx_testmb_new ();
    char port [16];
    snprintf (port, sizeof (port), "%d", mx_testmb_port (mb));
    const char *args [] = {
        "--mysql", "--flights", "3", "--updates", "3",
        "--host", mx_testmb_host (mb), "--port", port,
        "--user", mx_testmb_user (mb), "--password", mx_testmb_password (mb),
        "--database", "mx_no_such_database", NULL
    };
    char *out = NULL, *err = NULL;
    assert_int_equal (s_run (args, NULL, &out, &err), 1);
    assert_non_null (strstr (err, "cannot connect to the mailbox"));
    assert_non_null (strstr (err, "mx_no_such_database"));
    assert_string_equal (out, "");
    free (out);
    free (err);

    //  Nothing reached the real mailbox
    MYSQL *conn = mx_testmb_connect (mb);
    assert_int_equal (mysql_query (conn, "SELECT COUNT(*) FROM CMINMSGS"), 0);
    MYSQL_RES *result = mysql_store_result (conn);
    assert_string_equal (mysql_fetch_row (result) [0], "0");
    mysql_free_result (result);
    mysql_close (conn);
    mx_testmb_destroy (&mb);
}

static void
test_bad_arguments (void **state)
{
    static const char *const cases [][7] = {
        { "--flights", "many", "--stdout", NULL },
        { "--flights", "3", NULL },                         //  no output
        { "--stdout", "--mysql", NULL },                    //  two outputs
        { "--stdout", "--day", "2021-13-01", NULL },
        { "--stdout", "--duplicates", "101", NULL },
        { "--stdout", "--mix", "NOPE:1", NULL },
        { "--stdout", "--no-such-option", NULL },
        { "--stdout", "--seed", NULL },
        { "--mysql", "--port", "70000", NULL },
        { "--stdout", "stray", NULL },
        { "--stdout", "--holes", "101", NULL },
        { "--stdout", "--lists", "NOPE", NULL },
        { "--stdout", "--rate", "fast", NULL },
        { "--stdout", "--oversize", "10", NULL },
        { "--stdout", "--hostile", "60", "--reference", "50", NULL },
    };
    for (size_t i = 0; i < sizeof (cases) / sizeof (cases [0]); i++) {
        char *out = NULL, *err = NULL;
        int rc = s_run (cases [i], NULL, &out, &err);
        if (rc != 2 || !strstr (err, "usage: msgx-gen"))
            fail_msg ("case %zu (%s %s): exit %d, stderr %s", i, cases [i][0],
                      cases [i][1]? cases [i][1]: "", rc, err);
        assert_string_equal (out, "");
        free (out);
        free (err);
    }
}

//  --stdout and --out-dir carry the library's bytes too
static void
test_files_and_stdout (void **state)
{
    mx_gen_options_t opts = s_options (3, 30, 40, 10);
    opts.malformed_ppm = 100000;
    mx_gen_t *gen = mx_gen_new (&opts);
    size_t total = mx_gen_total (gen);
    char **texts = calloc (total, sizeof (char *));
    char **names = calloc (total, sizeof (char *));
    size_t size = 0;
    for (size_t i = 0; i < total; i++) {
        texts [i] = mx_gen_next (gen, NULL);
        const mx_gen_meta_t *meta = mx_gen_meta (gen);
        assert_true (asprintf (&names [i], "%06zu_%s_%s.xml", i + 1, meta->type, meta->styp) > 0);
        size += strlen (texts [i]);
    }
    mx_gen_destroy (&gen);

    const char *args [] = {
        "--stdout", "--seed", "3", "--flights", "30", "--updates", "40",
        "--per-message", "10", "--malformed", "10", NULL
    };
    char *out = NULL, *err = NULL;
    assert_int_equal (s_run (args, NULL, &out, &err), 0);
    assert_int_equal (strlen (out), size);
    size_t offset = 0;
    for (size_t i = 0; i < total; i++) {
        assert_memory_equal (out + offset, texts [i], strlen (texts [i]));
        offset += strlen (texts [i]);
    }
    assert_non_null (strstr (err, "msgx-gen: 43 messages"));
    free (out);
    free (err);

    char *dir = mx_testenv_tmpdir ();
    char *target = NULL;
    assert_true (asprintf (&target, "%s/day", dir) > 0);
    const char *to_dir [] = {
        "--out-dir", target, "--seed", "3", "--flights", "30", "--updates", "40",
        "--per-message", "10", "--malformed", "10", NULL
    };
    out = NULL;
    assert_int_equal (s_run (to_dir, NULL, &out, NULL), 0);
    assert_non_null (strstr (out, "msgx-gen: 43 messages"));
    free (out);
    for (size_t i = 0; i < total; i++) {
        char *path = NULL;
        assert_true (asprintf (&path, "%s/%s", target, names [i]) > 0);
        FILE *file = fopen (path, "r");
        if (!file)
            fail_msg ("%s missing", path);
        size_t length = strlen (texts [i]);
        char *content = malloc (length + 2);
        assert_int_equal (fread (content, 1, length + 1, file), length);
        assert_memory_equal (content, texts [i], length);
        fclose (file);
        free (content);
        free (path);
        free (texts [i]);
        free (names [i]);
    }
    free (texts);
    free (names);
    free (target);
    mx_testenv_rmtree (dir);
    free (dir);
}

//  Connection arguments of the test mailbox, for args lists
typedef struct {
    char port [16];
    const char *args [10];
} s_conn_t;

static void
s_conn (mx_testmb_t *mb, s_conn_t *conn)
{
    snprintf (conn->port, sizeof (conn->port), "%d", mx_testmb_port (mb));
    const char *args [10] = {
        "--host", mx_testmb_host (mb), "--port", conn->port,
        "--user", mx_testmb_user (mb), "--password", mx_testmb_password (mb),
        "--database", mx_testmb_database (mb)
    };
    memcpy (conn->args, args, sizeof (args));
}

//  args then the connection, NULL-terminated, into out[64]
static void
s_with_conn (const char *const *args, const s_conn_t *conn, const char **out)
{
    size_t n = 0;
    for (; args [n]; n++)
        out [n] = args [n];
    for (size_t i = 0; i < 10; i++)
        out [n++] = conn->args [i];
    out [n] = NULL;
}

static void
s_exec (MYSQL *conn, const char *sql)
{
    if (mysql_query (conn, sql))
        fail_msg ("%s: %s", sql, mysql_error (conn));
}

static long long
s_scalar (MYSQL *conn, const char *sql)
{
    s_exec (conn, sql);
    MYSQL_RES *result = mysql_store_result (conn);
    assert_non_null (result);
    MYSQL_ROW row = mysql_fetch_row (result);
    assert_non_null (row);
    assert_non_null (row [0]);
    long long value = atoll (row [0]);
    mysql_free_result (result);
    return value;
}

//  Holes stay unused; late messages arrive after all others, at their IDs
static void
test_holes_and_late (void **state)
{
    mx_testmb_t *mb = mx_testmb_new ();
    MYSQL *conn = mx_testmb_connect (mb);
    assert_non_null (conn);
    s_exec (conn, "CREATE TABLE insert_log"
                  " (seq BIGINT AUTO_INCREMENT PRIMARY KEY, id BIGINT NOT NULL)");
    s_exec (conn, "CREATE TRIGGER cminmsgs_log AFTER INSERT ON CMINMSGS FOR EACH ROW"
                  " INSERT INTO insert_log (id) VALUES (NEW.CMINMSGS_ID)");
    //  Someone wrote ID 5 before: explicit IDs start above it
    assert_int_equal (mx_testmb_insert (mb, 5, "<MSG/>", (int64_t) time (NULL) * 1000), 5);

    s_conn_t c;
    s_conn (mb, &c);
    const char *opts_args [] = {
        "--mysql", "--seed", "12", "--flights", "40", "--updates", "400",
        "--per-message", "15", "--holes", "5", "--late-holes", "5", "--reference", "5",
        "--adhoc", "3", "--schd-delete", "2", "--hostile", "2", "--oversize", "3000",
        "--fdel-type", "50", "--batch", "50", NULL
    };
    const char *args [64];
    s_with_conn (opts_args, &c, args);
    char *out = NULL, *err = NULL;
    int rc = s_run (args, NULL, &out, &err);
    if (rc != 0)
        fail_msg ("msgx-gen exited %d: %s", rc, err);

    mx_gen_options_t opts = s_options (12, 40, 400, 15);
    opts.hole_ppm = 50000;
    opts.late_ppm = 50000;
    opts.reference_ppm = 50000;
    opts.adhoc_ppm = 30000;
    opts.schd_delete_ppm = 20000;
    opts.hostile_ppm = 20000;
    opts.oversize_bytes = 3000;
    opts.fdel_type_ppm = 500000;
    //  The order the rows must arrive in: on time by ID, then the late ones
    mx_gen_t *gen = mx_gen_new (&opts);
    size_t total = mx_gen_total (gen);
    long long *order = calloc (total, sizeof (long long));
    size_t on_time = 0, late = 0;
    uint64_t first_slot = 0, last_slot = 0;
    for (size_t i = 0; i < total; i++) {
        free (mx_gen_next (gen, NULL));
        const mx_gen_meta_t *meta = mx_gen_meta (gen);
        if (i == 0)
            first_slot = meta->slot;
        last_slot = meta->slot;
        if (!meta->late)
            order [on_time++] = 6 + (long long) meta->slot;
    }
    mx_gen_destroy (&gen);
    gen = mx_gen_new (&opts);
    for (size_t i = 0; i < total; i++) {
        free (mx_gen_next (gen, NULL));
        if (mx_gen_meta (gen)->late)
            order [on_time + late++] = 6 + (long long) mx_gen_meta (gen)->slot;
    }
    assert_true (late > 5);
    assert_true (mx_gen_holes (gen) > 10);
    char summary [160];
    snprintf (summary, sizeof (summary), " ids %llu..%llu (%llu IDs unused, %zu written late) in ",
              6 + (unsigned long long) first_slot, 6 + (unsigned long long) last_slot,
              (unsigned long long) mx_gen_holes (gen), late);
    if (!strstr (out, summary))
        fail_msg ("summary '%s' lacks '%s'", out, summary);
    mx_gen_destroy (&gen);
    free (out);
    free (err);

    s_check_rows (mb, &opts, 6);
    s_exec (conn, "SELECT id FROM insert_log WHERE id <> 5 ORDER BY seq");
    MYSQL_RES *result = mysql_store_result (conn);
    assert_int_equal (mysql_num_rows (result), total);
    MYSQL_ROW row;
    for (size_t i = 0; (row = mysql_fetch_row (result)); i++)
        if (atoll (row [0]) != order [i])
            fail_msg ("insert %zu was ID %s, expected %lld", i, row [0], order [i]);
    mysql_free_result (result);
    free (order);
    mysql_close (conn);
    mx_testmb_destroy (&mb);
}

//  CMINMSGS_DATE_RECEIVED = NOW() in the asked session time zone
static void
test_time_zone (void **state)
{
    mx_testmb_t *mb = mx_testmb_new ();
    MYSQL *conn = mx_testmb_connect (mb);
    s_conn_t c;
    s_conn (mb, &c);
    const char *east [] = { "--mysql", "--flights", "2", "--updates", "1",
                            "--time-zone", "+08:00", NULL };
    const char *args [64];
    s_with_conn (east, &c, args);
    char *err = NULL;
    if (s_run (args, NULL, NULL, &err) != 0)
        fail_msg ("msgx-gen failed: %s", err);
    free (err);
    static const char *offset =
        "SELECT MIN(TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), CMINMSGS_DATE_RECEIVED))"
        " FROM CMINMSGS";
    assert_in_range (s_scalar (conn, offset), 478, 480);

    //  From the daemon's own variable when no option says otherwise
    s_exec (conn, "DELETE FROM CMINMSGS");
    const char *plain [] = { "--mysql", "--flights", "2", "--updates", "1", NULL };
    s_with_conn (plain, &c, args);
    const char *env [] = { "MAILBOX_SHARED_MYSQL_TIME_ZONE=-05:00", NULL };
    assert_int_equal (s_run (args, env, NULL, NULL), 0);
    long long minutes = s_scalar (conn, offset);
    assert_true (minutes >= -301 && minutes <= -299);

    const char *bad [] = { "--mysql", "--flights", "2", "--updates", "1",
                           "--time-zone", "Mars/Olympus_Mons", NULL };
    s_with_conn (bad, &c, args);
    err = NULL;
    assert_int_equal (s_run (args, NULL, NULL, &err), 1);
    assert_non_null (strstr (err, "cannot set the session time zone 'Mars/Olympus_Mons'"));
    free (err);
    assert_int_equal (s_scalar (conn, "SELECT COUNT(*) FROM CMINMSGS"), 2);
    mysql_close (conn);
    mx_testmb_destroy (&mb);
}

static double
s_seconds (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

//  --rate spreads the rows: 20 rows at 50 per second take 0.4 s at least
static void
test_rate (void **state)
{
    mx_testmb_t *mb = mx_testmb_new ();
    s_conn_t c;
    s_conn (mb, &c);
    const char *paced [] = { "--mysql", "--flights", "3", "--updates", "19",
                             "--rate", "50", NULL };
    const char *args [64];
    s_with_conn (paced, &c, args);
    double start = s_seconds ();
    char *out = NULL;
    assert_int_equal (s_run (args, NULL, &out, NULL), 0);
    double elapsed = s_seconds () - start;
    assert_non_null (strstr (out, "msgx-gen: 20 messages"));
    free (out);
    if (elapsed < 0.39)
        fail_msg ("20 rows at 50/s took only %.3f s", elapsed);
    mx_gen_options_t opts = s_options (1, 3, 19, 500);
    s_check_rows (mb, &opts, 1);
    mx_testmb_destroy (&mb);
}

//  A message beyond MEDIUMTEXT is refused with a clear reason; what came
//  before it in committed batches stays
static void
test_too_big_for_the_mailbox (void **state)
{
    mx_gen_options_t opts = s_options (1, 2, 40, 500);
    opts.hostile_ppm = 1000000;
    opts.oversize_bytes = 16777300;
    mx_gen_t *gen = mx_gen_new (&opts);
    size_t before = 0;
    char *text;
    while ((text = mx_gen_next (gen, NULL)) && strlen (text) <= 16777215) {
        free (text);
        before++;
    }
    assert_non_null (text);
    free (text);
    mx_gen_destroy (&gen);

    mx_testmb_t *mb = mx_testmb_new ();
    s_conn_t c;
    s_conn (mb, &c);
    const char *big [] = { "--mysql", "--flights", "2", "--updates", "40", "--hostile", "100",
                           "--oversize", "16777300", "--batch", "1", NULL };
    const char *args [64];
    s_with_conn (big, &c, args);
    char *out = NULL, *err = NULL;
    assert_int_equal (s_run (args, NULL, &out, &err), 1);
    assert_non_null (strstr (err, "MEDIUMTEXT"));
    assert_string_equal (out, "");
    free (out);
    free (err);
    MYSQL *conn = mx_testmb_connect (mb);
    assert_int_equal (s_scalar (conn, "SELECT COUNT(*) FROM CMINMSGS"), (long long) before);
    mysql_close (conn);
    mx_testmb_destroy (&mb);
}

//  --out-dir numbers the files by mailbox ID: holes leave numbers out
static void
test_dir_with_holes (void **state)
{
    mx_gen_options_t opts = s_options (4, 10, 60, 500);
    opts.hole_ppm = 200000;
    mx_gen_t *gen = mx_gen_new (&opts);
    char *dir = mx_testenv_tmpdir ();
    char *target = NULL;
    assert_true (asprintf (&target, "%s/day", dir) > 0);
    const char *args [] = { "--out-dir", target, "--seed", "4", "--flights", "10",
                            "--updates", "60", "--holes", "20", NULL };
    char *out = NULL;
    assert_int_equal (s_run (args, NULL, &out, NULL), 0);
    assert_non_null (strstr (out, "IDs unused"));
    free (out);
    char *text;
    size_t files = 0;
    while ((text = mx_gen_next (gen, NULL))) {
        const mx_gen_meta_t *meta = mx_gen_meta (gen);
        char *path = NULL;
        assert_true (asprintf (&path, "%s/%06llu_%s_%s.xml", target,
                               (unsigned long long) meta->slot + 1, meta->type, meta->styp) > 0);
        FILE *file = fopen (path, "r");
        if (!file)
            fail_msg ("%s missing", path);
        fclose (file);
        free (path);
        free (text);
        files++;
    }
    assert_true (mx_gen_holes (gen) > 5);
    assert_int_equal (files, 61);
    mx_gen_destroy (&gen);
    free (target);
    mx_testenv_rmtree (dir);
    free (dir);
}

int
main (void)
{
    const char *build = getenv ("MX_BUILD_DIR");
    if (!build) {
        fprintf (stderr, "test_gen_mailbox: MX_BUILD_DIR is not set (run it through ctest)\n");
        return 1;
    }
    snprintf (s_binary, sizeof (s_binary), "%s/tools/msgx-gen", build);
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_load_day),
        cmocka_unit_test (test_environment_defaults),
        cmocka_unit_test (test_connection_failure),
        cmocka_unit_test (test_bad_arguments),
        cmocka_unit_test (test_files_and_stdout),
        cmocka_unit_test (test_holes_and_late),
        cmocka_unit_test (test_time_zone),
        cmocka_unit_test (test_rate),
        cmocka_unit_test (test_too_big_for_the_mailbox),
        cmocka_unit_test (test_dir_with_holes),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
