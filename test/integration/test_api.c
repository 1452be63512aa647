/*  test_api - the read API against real servers: a day generated into the
    MariaDB mailbox by msgx-gen, processed by the real msgxd into
    PostgreSQL, then read over HTTP from the active and from a standby.

    - answers equal the database: every flight of the day page by page,
      the filters, one flight, a reference list, the operating window
      streamed (chunked) over several pages
    - ETag = state version, If-None-Match -> 304
    - a standby answers as the active does
    - bad paths and parameters -> 400/404 JSON with a reason; a page over
      msgx.api.page-size is refused and counted in msgx_api_requests_total
    - a read held up past msgx.api.statement-timeout (the test's own
      transaction locks the table) -> 503 with the reason, counted
    - a stream failing after its first page (msgxd-hooked holds it between
      pages while the test locks the table) ends without its terminating
      chunk, the flights sent whole and an error member after them
    - two readers: single flights answered by one while the other is held
      between the pages of a stream, which then ends whole; msgx.api.nice
      set on the readers and the http thread only
    - the state-document cache of the active: a second read is a hit
      (counted), even with flight_schd locked (no PostgreSQL); a message
      that changes the flight is read back at once, ETags old and new
      behave, the processor's refreshed document is a hit byte for byte
      what the standby reads; a standby never serves from it (locked: 503,
      after a change on the active: the new state)
    - every answer valid against docs/api/openapi.json (mx-validate-api)
    - msgxctl flight FLID --history on both: the same state, the messages
      and events of the outbox
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "mx_testdaemon.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 60000
#define DAY "2021-01-23"
#define PAGE_SIZE 50
//  Flights generated for today: the window streams several pages of them.
#define WINDOW_FLIGHTS 130
#define S_TOKEN "read-api-test-token"

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    char *dir;
    char build [1024];
    PGconn *conn;
    FILE *answers;                  //  for mx-validate-api
    int token_port;                 //  the read API that wants a bearer token (0: none)
    char *answers_path;
} fixture_t;

//  The environment of one daemon: name tells the admin socket apart.
static void
s_env (fixture_t *fx, const char *name, int http_port, int api_port, mx_testdaemon_env_t *env)
{
    char *admin = zsys_sprintf ("admin-%s.sock", name);
    mx_testdaemon_env_init (env, fx->pg, fx->mb, fx->dir, admin, http_port);
    free (admin);
    mx_testdaemon_env_add (env, "MSGX_PIPELINE_CLAIM_BATCH=200");
    mx_testdaemon_env_add (env, "MSGX_PIPELINE_MAX_ATTEMPTS=1");
    mx_testdaemon_env_add (env, "MSGX_LOG_LEVEL=info");
    mx_testdaemon_env_add (env, "MSGX_API_ENABLED=true");
    mx_testdaemon_env_add (env, "MSGX_API_BIND=127.0.0.1:%d", api_port);
    mx_testdaemon_env_add (env, "MSGX_API_PAGE_SIZE=%d", PAGE_SIZE);
}

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    assert_non_null (fx);
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    snprintf (fx->build, sizeof fx->build, "%s", build);
    fx->pg = mx_testpg_new ();
    fx->mb = mx_testmb_new ();
    fx->dir = mx_testenv_tmpdir ();
    fx->answers_path = zsys_sprintf ("%s/answers.txt", fx->dir);
    fx->answers = fopen (fx->answers_path, "w");
    assert_non_null (fx->answers);
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    if (fx->answers)
        fclose (fx->answers);
    if (fx->conn)
        PQfinish (fx->conn);
    mx_testmb_destroy (&fx->mb);
    mx_testpg_destroy (&fx->pg);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx->answers_path);
    free (fx);
    return 0;
}

//  GET path from the read API: the status, *body parsed (NULL for none),
//  the ETag into etag (empty when none). The answer is kept for
//  mx-validate-api under template.
static int
s_get (fixture_t *fx, int port, const char *path, const char *if_none_match, const char *template,
       json_t **body, char *etag, size_t etag_size)
{
    char *request = zsys_sprintf ("GET %s HTTP/1.1\r\nHost: localhost\r\n%s%s%s%s"
                                  "Connection: close\r\n\r\n", path,
                                  if_none_match ? "If-None-Match: " : "", if_none_match ? if_none_match : "",
                                  if_none_match ? "\r\n" : "",
                                  port == fx->token_port ? "Authorization: Bearer " S_TOKEN "\r\n" : "");
    char *head = NULL, *text = NULL;
    int status = mx_testhttp_exchange (port, request, 30, &head, &text);
    free (request);
    if (strcasestr (head, "\r\nTransfer-Encoding: chunked")) {
        //  A streamed answer (GET /all/flights) must end whole.
        char *payload = NULL;
        if (!mx_testhttp_dechunk (text, &payload))
            fail_msg ("GET %s: the chunked answer was cut short: %.300s", path, text);
        free (text);
        text = payload;
    }
    if (etag) {
        *etag = '\0';
        const char *found = strcasestr (head, "\r\nETag: ");
        if (found)
            snprintf (etag, etag_size, "%.*s", (int) strcspn (found + 8, "\r\n"), found + 8);
    }
    *body = NULL;
    if (status != 304) {
        json_error_t error;
        *body = json_loads (text, 0, &error);
        if (!*body)
            fail_msg ("GET %s: %d, body is not JSON (%s): %.300s", path, status, error.text, text);
        assert_non_null (strcasestr (head, "Content-Type: application/json"));
        if (template)
            fprintf (fx->answers, "%d %s %s\n", status, template, text);
    }
    free (head);
    free (text);
    return status;
}

//  A refusal: status, a JSON error with this code and a reason.
static void
s_refused (fixture_t *fx, int port, const char *path, const char *template, int status, const char *code)
{
    json_t *body = NULL;
    int got = s_get (fx, port, path, NULL, template, &body, NULL, 0);
    json_t *error = json_object_get (body, "error");
    const char *message = json_string_value (json_object_get (error, "message"));
    print_message ("GET %s -> %d %s\n", path, got, message ? message : "(no message)");
    assert_int_equal (got, status);
    assert_string_equal (json_string_value (json_object_get (error, "code")), code);
    assert_true (message && strlen (message) > 10);
    json_decref (body);
}

//  "flid:state_version,..." of a list of state documents, appended to out.
static void
s_summarize (json_t *flights, zchunk_t *out)
{
    size_t i;
    json_t *doc;
    json_array_foreach (flights, i, doc) {
        char item [64];
        snprintf (item, sizeof item, "%s%" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT,
                  zchunk_size (out) ? "," : "",
                  json_integer_value (json_object_get (doc, "flid")),
                  json_integer_value (json_object_get (doc, "state_version")));
        zchunk_extend (out, item, strlen (item));
    }
}

static void
s_expect_sql_params (fixture_t *fx, const char *sql, int nparams, const char *const *values, const char *got,
                     const char *what)
{
    char *expected = mx_testpg_value_params (fx->conn, sql, nparams, values);
    if (strcmp (expected ? expected : "", got) != 0)
        fail_msg ("%s: the API says\n  %.400s\nthe database\n  %.400s", what, got, expected);
    free (expected);
}

static void
s_expect_sql (fixture_t *fx, const char *sql, const char *got, const char *what)
{
    s_expect_sql_params (fx, sql, 0, NULL, got, what);
}

//  msgxctl flight FLID --history against the daemon named name: its state
//  equals expected, its messages and events equal the outbox's rows.
static void
s_ctl_flight (fixture_t *fx, const char *name, const char *flid, json_t *expected)
{
    char msgxctl [1200];
    snprintf (msgxctl, sizeof msgxctl, "%s/cmd/msgxctl", fx->build);
    char *endpoint = zsys_sprintf ("ipc://%s/admin-%s.sock", fx->dir, name);
    const char *argv [] = { msgxctl, "--endpoint", endpoint, "flight", flid, "--history", "--json", NULL };
    char *out = NULL, *err = NULL;
    if (mx_testproc_run (argv, NULL, WAIT_MS, &out, &err) != 0)
        fail_msg ("msgxctl flight %s: %s%s", flid, out, err);
    json_t *reply = json_loads (out, 0, NULL);
    assert_non_null (reply);
    assert_true (json_equal (json_object_get (reply, "state"), expected));
    zchunk_t *ids = zchunk_new (NULL, 0);
    size_t i;
    json_t *message;
    json_array_foreach (json_object_get (reply, "messages"), i, message) {
        char item [64];
        snprintf (item, sizeof item, "%s%" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT, i ? "," : "",
                  json_integer_value (json_object_get (message, "msg_id")),
                  json_integer_value (json_object_get (message, "state_version")));
        zchunk_extend (ids, item, strlen (item));
        assert_true (json_is_string (json_object_get (message, "type")));
        assert_true (json_is_array (json_object_get (message, "changed")));
    }
    zchunk_extend (ids, "", 1);
    const char *flid_param [] = { flid };
    s_expect_sql_params (fx, "SELECT string_agg (msg_id || ':' || state_version, ',' ORDER BY event_id)"
                             "  FROM msg_event WHERE flid = $1::bigint AND target = 'KAFKA:msg'",
                         1, flid_param, (char *) zchunk_data (ids), "messages of msgxctl flight");
    char count [32];
    snprintf (count, sizeof count, "%zu", json_array_size (json_object_get (reply, "events")));
    s_expect_sql_params (fx, "SELECT count(*) FROM msg_event WHERE flid = $1::bigint", 1, flid_param, count,
                         "events of msgxctl flight");
    print_message ("msgxctl flight %s on %s: %zu messages, %s events\n", flid, name,
                   json_array_size (json_object_get (reply, "messages")), count);
    zchunk_destroy (&ids);
    json_decref (reply);
    free (out);
    free (err);
    //  The human form names the flight and lists what changed it.
    const char *human [] = { msgxctl, "--endpoint", endpoint, "flight", flid, "--history", NULL };
    assert_int_equal (mx_testproc_run (human, NULL, WAIT_MS, &out, &err), 0);
    if (!strstr (out, "flight      ") || !strstr (out, "that changed it") || !strstr (out, "events      "))
        fail_msg ("msgxctl flight %s:\n%s", flid, out);
    free (out);
    free (err);
    free (endpoint);
}

//  Every page of path (a /flights query), as "flid:version,..." (malloc'd).
static char *
s_all_pages (fixture_t *fx, int port, const char *path, int *pages)
{
    zchunk_t *out = zchunk_new (NULL, 0);
    char *cursor = NULL;
    *pages = 0;
    do {
        char *url = cursor ? zsys_sprintf ("%s&cursor=%s", path, cursor) : strdup (path);
        json_t *body = NULL;
        assert_int_equal (s_get (fx, port, url, NULL, "/flights", &body, NULL, 0), 200);
        free (url);
        free (cursor);
        json_t *flights = json_object_get (body, "flights");
        assert_true (json_array_size (flights) <= PAGE_SIZE);
        s_summarize (flights, out);
        json_t *next = json_object_get (body, "next_cursor");
        cursor = json_is_string (next) ? strdup (json_string_value (next)) : NULL;
        (*pages)++;
        json_decref (body);
    } while (cursor);
    zchunk_extend (out, "", 1);
    char *text = strdup ((char *) zchunk_data (out));
    zchunk_destroy (&out);
    return text;
}

//  WINDOW_FLIGHTS flights for today into the mailbox, by msgx-gen.
static void
s_gen_today (fixture_t *fx)
{
    char today [16], flights [16];
    time_t now = time (NULL);
    struct tm utc;
    gmtime_r (&now, &utc);
    strftime (today, sizeof today, "%Y-%m-%d", &utc);
    snprintf (flights, sizeof flights, "%d", WINDOW_FLIGHTS);
    const char *args [] = {
        "--seed", "8", "--flights", flights, "--per-message", "40", "--updates", "60",
        "--first-seqn", "500000", "--day", today, NULL
    };
    char *out = mx_testdaemon_gen (fx->build, fx->mb, args, WAIT_MS);
    printf ("# %s", out);
    free (out);
}

//  Until every message of the mailbox is terminal.
static void
s_wait_processed (fixture_t *fx)
{
    MYSQL *m = mx_testmb_connect (fx->mb);
    assert_int_equal (mysql_query (m, "SELECT COUNT(*) FROM CMINMSGS"), 0);
    MYSQL_RES *res = mysql_store_result (m);
    char total [32];
    snprintf (total, sizeof total, "%s", mysql_fetch_row (res) [0]);
    mysql_free_result (res);
    mysql_close (m);
    const char *params [] = { total };
    mx_testpg_wait_params (fx->conn,
        "SELECT count(*) FILTER (WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')) >= $1::bigint"
        "   AND count(*) FILTER (WHERE state IN ('PENDING', 'FAILED')) = 0 FROM proc_state", 1, params);
    printf ("# %s messages processed\n", total);
}

static void
    s_validate (fixture_t *fx);

//  GET /all/flights: chunked, whole, more flights than a page, and every
//  flight of its window as the database has it.
static void
s_window (fixture_t *fx, int port)
{
    char *head = NULL, *text = NULL;
    assert_int_equal (mx_testhttp_get (port, "/all/flights", 30, &head, &text), 200);
    assert_non_null (strcasestr (head, "\r\nTransfer-Encoding: chunked"));
    free (head);
    free (text);
    json_t *window = NULL;
    assert_int_equal (s_get (fx, port, "/all/flights", NULL, "/all/flights", &window, NULL, 0), 200);
    json_t *flights = json_object_get (window, "flights");
    assert_true (json_array_size (flights) >= WINDOW_FLIGHTS);
    assert_true (json_array_size (flights) > PAGE_SIZE);
    zchunk_t *got = zchunk_new (NULL, 0);
    s_summarize (flights, got);
    zchunk_extend (got, "", 1);
    const char *days [] = { json_string_value (json_object_get (window, "from")),
                            json_string_value (json_object_get (window, "to")) };
    s_expect_sql_params (fx, "SELECT string_agg (flid || ':' || state_version, ',' ORDER BY flid) FROM flight_schd"
                             " WHERE operation_day BETWEEN $1::date AND $2::date", 2, days,
                         (char *) zchunk_data (got), "the window");
    printf ("# /all/flights %s..%s: %zu flights, pages of %d\n", days [0], days [1],
            json_array_size (flights), PAGE_SIZE);
    zchunk_destroy (&got);
    json_decref (window);
}

//  The test's own transaction holds flight_schd locked: the reader's
//  statement waits on the server until the statement timeout cancels it.
static void
s_locked_out (fixture_t *fx, int port, int http_port, const char *flid)
{
    char *head = NULL, *metrics = NULL, before [64], after [64];
    assert_int_equal (mx_testhttp_get (http_port, "/metrics", 30, &head, &metrics), 200);
    mx_testhttp_sample (metrics, "msgx_api_requests_total{outcome=\"unavailable\"}", before, sizeof before);
    free (head);
    free (metrics);
    PGresult *res = PQexec (fx->conn, "BEGIN; LOCK TABLE flight_schd IN ACCESS EXCLUSIVE MODE");
    assert_int_equal (PQresultStatus (res), PGRES_COMMAND_OK);
    PQclear (res);
    char *path = zsys_sprintf ("/flights/%s", flid);
    const char *paths [] = { path, "/all/flights" };
    const char *templates [] = { "/flights/{flid}", "/all/flights" };
    for (size_t i = 0; i < 2; i++) {
        json_t *body = NULL;
        assert_int_equal (s_get (fx, port, paths [i], NULL, templates [i], &body, NULL, 0), 503);
        json_t *error = json_object_get (body, "error");
        assert_string_equal (json_string_value (json_object_get (error, "code")), "unavailable");
        const char *message = json_string_value (json_object_get (error, "message"));
        print_message ("GET %s with flight_schd locked -> 503 %s\n", paths [i], message);
        assert_non_null (strstr (message, "msgx.api.statement-timeout"));
        json_decref (body);
    }
    free (path);
    res = PQexec (fx->conn, "ROLLBACK");
    assert_int_equal (PQresultStatus (res), PGRES_COMMAND_OK);
    PQclear (res);
    assert_int_equal (mx_testhttp_get (http_port, "/metrics", 30, &head, &metrics), 200);
    mx_testhttp_sample (metrics, "msgx_api_requests_total{outcome=\"unavailable\"}", after, sizeof after);
    assert_int_equal (strtoll (after, NULL, 10), strtoll (before, NULL, 10) + 2);
    free (head);
    free (metrics);
}

static void
test_read_api (void **state)
{
    fixture_t *fx = *state;
    //  A day of 120 flights with updates and reference lists, by msgx-gen.
    const char *gen_args [] = {
        "--seed", "7", "--flights", "120", "--per-message", "40", "--updates", "300",
        "--reference", "10", "--day", DAY, NULL
    };
    char *out = mx_testdaemon_gen (fx->build, fx->mb, gen_args, WAIT_MS);
    printf ("# %s", out);
    free (out);
    //  And today's flights, so that GET /all/flights (the window around
    //  today) streams several pages.
    s_gen_today (fx);

    int http_a = mx_testenv_free_port (), api_a = mx_testenv_free_port ();
    int http_b = mx_testenv_free_port (), api_b = mx_testenv_free_port ();
    mx_testdaemon_env_t env_a;
    s_env (fx, "a", http_a, api_a, &env_a);
    mx_testproc_t *active = mx_testdaemon_start ("cmd/msgxd", &env_a, "active");
    fx->conn = mx_testpg_connect_schema (fx->pg, MX_TESTPG_WATCH_PROC_STATE);

    s_wait_processed (fx);

    //  Every flight of the day, page by page, equals the database.
    int pages = 0;
    char *got = s_all_pages (fx, api_a, "/flights?day=" DAY, &pages);
    s_expect_sql (fx, "SELECT string_agg (flid || ':' || state_version, ',' ORDER BY flid) FROM flight_schd"
                      " WHERE operation_day = '" DAY "'", got, "the day");
    printf ("# %d pages of at most %d flights\n", pages, PAGE_SIZE);
    assert_true (pages >= 2);
    free (got);
    //  The filters operations use.
    char *airline = mx_testpg_value (fx->conn, "SELECT min (alcd) FROM flight_schd");
    char *path = zsys_sprintf ("/flights?day=" DAY "&limit=7&direction=arrival&airline=%s", airline);
    got = s_all_pages (fx, api_a, path, &pages);
    char *sql = zsys_sprintf ("SELECT coalesce (string_agg (flid || ':' || state_version, ',' ORDER BY flid), '')"
                              "  FROM flight_schd WHERE operation_day = '" DAY "' AND mvin = 'A' AND alcd = '%s'",
                              airline);
    s_expect_sql (fx, sql, got, "arrivals of one airline");
    free (sql);
    free (path);
    free (got);
    free (airline);
    got = s_all_pages (fx, api_a, "/flights?day=" DAY "&changed-since=2100-01-01T00:00:00Z", &pages);
    assert_string_equal (got, "");
    free (got);
    got = s_all_pages (fx, api_a, "/flights?day=2021-01-22", &pages);
    assert_string_equal (got, "");
    free (got);

    //  One flight: the state document, ETag = state version, then 304.
    char *flid = mx_testpg_value (fx->conn,
        "SELECT flid FROM flight_schd WHERE operation_day = '" DAY "' ORDER BY state_version DESC, flid LIMIT 1");
    char *version = mx_testpg_value_params (fx->conn,
        "SELECT state_version FROM flight_schd WHERE flid = $1::bigint", 1, (const char *[]) { flid });
    path = zsys_sprintf ("/flights/%s", flid);
    json_t *body = NULL;
    char etag [64], expected_etag [64];
    assert_int_equal (s_get (fx, api_a, path, NULL, "/flights/{flid}", &body, etag, sizeof etag), 200);
    snprintf (expected_etag, sizeof expected_etag, "\"%s\"", version);
    assert_string_equal (etag, expected_etag);
    assert_int_equal (json_integer_value (json_object_get (body, "flid")), strtoll (flid, NULL, 10));
    assert_int_equal (json_integer_value (json_object_get (body, "state_version")), strtoll (version, NULL, 10));
    char *alcd = mx_testpg_value_params (fx->conn, "SELECT alcd || '/' || flno || '/' || mvin FROM flight_schd"
                                         " WHERE flid = $1::bigint", 1, (const char *[]) { flid });
    char *api_alcd = zsys_sprintf ("%s/%s/%s", json_string_value (json_object_get (body, "ALCD")),
                                   json_string_value (json_object_get (body, "FLNO")),
                                   json_string_value (json_object_get (body, "MVIN")));
    assert_string_equal (api_alcd, alcd);
    free (api_alcd);
    free (alcd);
    printf ("# flight %s: version %s, ETag %s\n", flid, version, etag);
    json_t *again = NULL;
    assert_int_equal (s_get (fx, api_a, path, etag, NULL, &again, NULL, 0), 304);
    assert_null (again);
    assert_int_equal (s_get (fx, api_a, path, "\"0\"", NULL, &again, NULL, 0), 200);
    json_decref (again);
    s_ctl_flight (fx, "a", flid, body);

    //  A reference list equals ref_master.
    char *list = mx_testpg_value (fx->conn, "SELECT min (rtype) FROM ref_master");
    assert_non_null (list);
    char *list_path = zsys_sprintf ("/reference/%s", list);
    json_t *entries = NULL;
    assert_int_equal (s_get (fx, api_a, list_path, NULL, "/reference/{list}", &entries, NULL, 0), 200);
    char *count = mx_testpg_value_params (fx->conn, "SELECT count(*) FROM ref_master WHERE rtype = $1",
                                          1, (const char *[]) { list });
    assert_int_equal ((long long) json_array_size (json_object_get (entries, "entries")), strtoll (count, NULL, 10));
    printf ("# reference list %s: %s entries\n", list, count);
    json_decref (entries);
    free (count);
    free (list_path);
    free (list);

    //  The operating window around today, streamed page by page, equals
    //  the database.
    s_window (fx, api_a);

    //  Refusals: JSON, a code and a reason.
    s_refused (fx, api_a, "/flights/abc", "/flights/{flid}", 400, "bad_flid");
    s_refused (fx, api_a, "/flights/999999999", "/flights/{flid}", 404, "no_such_flight");
    s_refused (fx, api_a, "/flights/1?x=1", "/flights/{flid}", 400, "bad_parameter");
    s_refused (fx, api_a, "/nothing", NULL, 404, "no_such_path");
    s_refused (fx, api_a, "/flights", "/flights", 400, "bad_parameter");
    s_refused (fx, api_a, "/flights?day=2021-02-30", "/flights", 400, "bad_parameter");
    s_refused (fx, api_a, "/flights?day=" DAY "&direction=up", "/flights", 400, "bad_parameter");
    s_refused (fx, api_a, "/flights?day=" DAY "&changed-since=yesterday", "/flights", 400, "bad_parameter");
    s_refused (fx, api_a, "/flights?day=" DAY "&cursor=-1", "/flights", 400, "bad_parameter");
    s_refused (fx, api_a, "/flights?day=" DAY "&dya=1", "/flights", 400, "bad_parameter");
    s_refused (fx, api_a, "/reference/no-such", "/reference/{list}", 400, "bad_list");
    s_refused (fx, api_a, "/reference/NOSUCHLIST", "/reference/{list}", 404, "no_such_list");
    //  Over the limit: refused and counted.
    s_refused (fx, api_a, "/flights?day=" DAY "&limit=51", "/flights", 400, "over_limit");
    s_refused (fx, api_a, "/flights?day=" DAY "&limit=100000", "/flights", 400, "over_limit");
    char *head = NULL, *metrics = NULL;
    assert_int_equal (mx_testhttp_get (http_a, "/metrics", 30, &head, &metrics), 200);
    char value [64];
    mx_testhttp_sample (metrics, "msgx_api_requests_total{outcome=\"over_limit\"}", value, sizeof value);
    assert_string_equal (value, "2");
    mx_testhttp_sample (metrics, "msgx_api_requests_total{outcome=\"not_modified\"}", value, sizeof value);
    assert_string_equal (value, "1");
    free (head);
    free (metrics);
    //  Not a read: 405, JSON.
    char *post_head = NULL, *post_body = NULL;
    assert_int_equal (mx_testhttp_exchange (api_a, "DELETE /flights/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                                            30, &post_head, &post_body), 405);
    assert_non_null (strstr (post_body, "method_not_allowed"));
    free (post_head);
    free (post_body);

    //  A standby answers as the active does; this one wants a bearer token.
    mx_testdaemon_env_t env_b;
    s_env (fx, "b", http_b, api_b, &env_b);
    char *token_path = zsys_sprintf ("%s/api-token", fx->dir);
    FILE *token = fopen (token_path, "w");
    assert_non_null (token);
    fprintf (token, S_TOKEN "\n");
    fclose (token);
    mx_testdaemon_env_add (&env_b, "MSGX_API_TOKEN_FILE=%s", token_path);
    free (token_path);
    mx_testproc_t *standby = mx_testdaemon_start ("cmd/msgxd", &env_b, "standby");
    char *no_head = NULL, *no_body = NULL;
    assert_int_equal (mx_testhttp_get (api_b, "/flights/1", 30, &no_head, &no_body), 401);
    assert_non_null (strstr (no_body, "\"unauthorized\""));
    free (no_head);
    free (no_body);
    fx->token_port = api_b;
    json_t *from_standby = NULL;
    char standby_etag [64];
    assert_int_equal (s_get (fx, api_b, path, NULL, "/flights/{flid}", &from_standby, standby_etag,
                             sizeof standby_etag), 200);
    assert_true (json_equal (from_standby, body));
    assert_string_equal (standby_etag, etag);
    assert_int_equal (s_get (fx, api_b, path, etag, NULL, &again, NULL, 0), 304);
    s_ctl_flight (fx, "b", flid, body);
    got = s_all_pages (fx, api_b, "/flights?day=" DAY, &pages);
    s_expect_sql (fx, "SELECT string_agg (flid || ':' || state_version, ',' ORDER BY flid) FROM flight_schd"
                      " WHERE operation_day = '" DAY "'", got, "the day from the standby");
    free (got);
    //  A read held up past msgx.api.statement-timeout (the table locked by
    //  the test's own transaction): 503 with the reason, counted; the
    //  stream of the window too, before anything of it was sent. On the
    //  standby, whose reads all go to PostgreSQL (the active has every
    //  flight it wrote in its state-document cache).
    s_locked_out (fx, api_b, http_b, flid);
    json_decref (from_standby);
    json_decref (body);
    free (path);
    free (flid);
    free (version);
    mx_testdaemon_stop (&standby);
    mx_testdaemon_stop (&active);
    mx_testdaemon_env_free (&env_a);
    mx_testdaemon_env_free (&env_b);

    s_validate (fx);
}

//  msgxd-hooked on today's flights, its stream held at a gate (a FIFO in
//  the test's folder, *gate) before each page of GET /all/flights but the
//  first; extra settings in env_add's format, one each. Returns once the
//  mailbox is processed.
static mx_testproc_t *
s_start_gated (fixture_t *fx, const char *name, int http, int api, mx_testdaemon_env_t *env, char **gate,
               const char *const *extra)
{
    s_gen_today (fx);
    *gate = zsys_sprintf ("%s/gate", fx->dir);
    assert_int_equal (mkfifo (*gate, 0600), 0);
    s_env (fx, name, http, api, env);
    mx_testdaemon_env_add (env, "MSGX_TEST_FAULT=api-gate");
    mx_testdaemon_env_add (env, "MSGX_TEST_GATE=%s", *gate);
    for (; extra && *extra; extra++)
        mx_testdaemon_env_add (env, "%s", *extra);
    mx_testproc_t *daemon = mx_testdaemon_start ("test/integration/msgxd-hooked", env, "active");
    fx->conn = mx_testpg_connect_schema (fx->pg, MX_TESTPG_WATCH_PROC_STATE);
    s_wait_processed (fx);
    return daemon;
}

//  A raw connection that has asked GET /all/flights, for a test that reads
//  the stream itself.
static int
s_open_all_flights (int api)
{
    int sock = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) api) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    assert_int_equal (connect (sock, (struct sockaddr *) &addr, sizeof addr), 0);
    const char *request = "GET /all/flights HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    assert_int_equal (send (sock, request, strlen (request), 0), (ssize_t) strlen (request));
    return sock;
}

//  Everything sock receives up to the server's close, NUL-ended; *last is
//  recv's last answer (0: closed, -1: the 30 s receive timeout or an error).
static zchunk_t *
s_read_to_close (int sock, ssize_t *last)
{
    struct timeval timeout = { .tv_sec = 30 };
    setsockopt (sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    zchunk_t *got = zchunk_new (NULL, 0);
    char buf [65536];
    ssize_t size;
    while ((size = recv (sock, buf, sizeof buf, 0)) > 0)
        zchunk_extend (got, buf, (size_t) size);
    zchunk_extend (got, "", 1);
    *last = size;
    return got;
}

//  A stream cut short: the first page sent, then the table locked by the
//  test's own transaction before the second is read (msgxd-hooked holds
//  the stream at a gate between its pages), so the second page runs into
//  msgx.api.statement-timeout. The client sees the chunked body end
//  without its terminating chunk, and a document whose flights are the
//  first page, whole, followed by the error member.
static void
test_stream_cut_short (void **state)
{
    fixture_t *fx = *state;
    int http = mx_testenv_free_port (), api = mx_testenv_free_port ();
    mx_testdaemon_env_t env;
    char *gate = NULL;
    const char *const extra [] = { "MSGX_API_STATEMENT_TIMEOUT=1s", NULL };
    mx_testproc_t *daemon = s_start_gated (fx, "gate", http, api, &env, &gate, extra);
    int sock = s_open_all_flights (api);
    //  Open for writing returns once the reader waits at the gate: the
    //  first page is read and handed over.
    int gate_fd = open (gate, O_WRONLY);
    assert_true (gate_fd >= 0);
    PGresult *res = PQexec (fx->conn, "BEGIN; LOCK TABLE flight_schd IN ACCESS EXCLUSIVE MODE");
    assert_int_equal (PQresultStatus (res), PGRES_COMMAND_OK);
    PQclear (res);
    assert_int_equal (write (gate_fd, "g", 1), 1);
    close (gate_fd);
    //  The answer, up to the server's close (bounded by the receive timeout).
    ssize_t size;
    zchunk_t *got = s_read_to_close (sock, &size);
    assert_int_equal (size, 0);
    close (sock);
    res = PQexec (fx->conn, "ROLLBACK");
    PQclear (res);
    char *text = (char *) zchunk_data (got);
    assert_true (strncmp (text, "HTTP/1.1 200", 12) == 0);
    assert_non_null (strcasestr (text, "\r\nTransfer-Encoding: chunked"));
    char *payload = NULL;
    assert_false (mx_testhttp_dechunk (strstr (text, "\r\n\r\n") + 4, &payload));
    json_error_t error;
    json_t *window = json_loads (payload, 0, &error);
    if (!window)
        fail_msg ("the cut stream is not a JSON document (%s): ...%s", error.text,
                  payload + (strlen (payload) > 300 ? strlen (payload) - 300 : 0));
    assert_int_equal (json_array_size (json_object_get (window, "flights")), PAGE_SIZE);
    json_t *cut = json_object_get (window, "error");
    assert_string_equal (json_string_value (json_object_get (cut, "code")), "unavailable");
    const char *message = json_string_value (json_object_get (cut, "message"));
    assert_non_null (strstr (message, "msgx.api.statement-timeout"));
    printf ("# stream cut short after %d flights: %s\n", PAGE_SIZE, message);
    fprintf (fx->answers, "200 /all/flights %s\n", payload);
    json_decref (window);
    free (payload);
    zchunk_destroy (&got);
    //  Counted once, as unavailable.
    char *head = NULL, *metrics = NULL, value [64];
    assert_int_equal (mx_testhttp_get (http, "/metrics", 30, &head, &metrics), 200);
    mx_testhttp_sample (metrics, "msgx_api_requests_total{outcome=\"unavailable\"}", value, sizeof value);
    assert_string_equal (value, "1");
    mx_testhttp_sample (metrics, "msgx_api_requests_total{outcome=\"ok\"}", value, sizeof value);
    assert_string_equal (value, "0");
    free (head);
    free (metrics);
    mx_testdaemon_stop (&daemon);
    mx_testdaemon_env_free (&env);
    free (gate);
    s_validate (fx);
}

//  How many threads of process pid run at nice value nice (from
//  /proc/PID/task/TID/stat: the 19th field, the 17th after the name).
static int
s_threads_at_nice (int pid, int nice)
{
    char path [64];
    snprintf (path, sizeof path, "/proc/%d/task", pid);
    int count = 0;
    DIR *tids = opendir (path);
    assert_non_null (tids);
    struct dirent *entry;
    while ((entry = readdir (tids))) {
        if (entry->d_name [0] == '.')
            continue;
        char stat_path [400], line [1024];
        snprintf (stat_path, sizeof stat_path, "%s/%s/stat", path, entry->d_name);
        FILE *file = fopen (stat_path, "r");
        if (!file)
            continue;                   //  the thread ended meanwhile
        char *got = fgets (line, sizeof line, file);
        fclose (file);
        char *scan = got ? strrchr (line, ')') : NULL;
        assert_non_null (scan);
        for (int field = 0; field < 17 && scan; field++)
            scan = strchr (scan + 1, ' ');
        assert_non_null (scan);
        if (atoi (scan + 1) == nice)
            count++;
    }
    closedir (tids);
    return count;
}

//  A pool of readers (msgx.api.readers 2): while one reader is held
//  between the pages of GET /all/flights (msgxd-hooked waits at the gate
//  before each page but the first), reads of single flights are answered
//  by the other, equal to the database; once the gate lets the stream go
//  on, it ends whole. With one reader those reads would wait behind the
//  stream (and this test would fail on the client's receive timeout).
//  msgx.api.nice 5 is set on the readers and the http thread alone.
static void
test_readers_pool (void **state)
{
    fixture_t *fx = *state;
    int http = mx_testenv_free_port (), api = mx_testenv_free_port ();
    mx_testdaemon_env_t env;
    char *gate = NULL;
    const char *const extra [] = { "MSGX_API_READERS=2", "MSGX_API_NICE=5", NULL };
    mx_testproc_t *daemon = s_start_gated (fx, "pool", http, api, &env, &gate, extra);
    //  Every flight is in the window (generated for today): the stream
    //  stops at the gate before each page after a full one.
    PGresult *res = PQexec (fx->conn, "SELECT flid, state_version FROM flight_schd ORDER BY flid");
    assert_int_equal (PQresultStatus (res), PGRES_TUPLES_OK);
    int flights = PQntuples (res);
    assert_true (flights > PAGE_SIZE);
    int gates = flights / PAGE_SIZE;
    printf ("# %d flights, the stream held %d times\n", flights, gates);

    int sock = s_open_all_flights (api);
    //  Open for writing returns once the stream's reader waits at the gate.
    int gate_fd = open (gate, O_WRONLY);
    assert_true (gate_fd >= 0);
    int answered = 0;
    for (int row = 0; row < flights; row += flights / 8, answered++) {
        char path [64], etag [64], expected [64];
        snprintf (path, sizeof path, "/flights/%s", PQgetvalue (res, row, 0));
        snprintf (expected, sizeof expected, "\"%s\"", PQgetvalue (res, row, 1));
        json_t *body = NULL;
        assert_int_equal (s_get (fx, api, path, NULL, "/flights/{flid}", &body, etag, sizeof etag), 200);
        assert_string_equal (etag, expected);
        assert_int_equal (json_integer_value (json_object_get (body, "flid")), atoll (PQgetvalue (res, row, 0)));
        json_decref (body);
    }
    printf ("# %d flights read while a stream was held at its second page\n", answered);
    PQclear (res);
    //  msgx.api.nice: the two readers and the http thread, no other.
    assert_int_equal (s_threads_at_nice (mx_testproc_pid (daemon), 5), 3);
    //  Let the stream go on: a byte for each page it stops at. The gate
    //  stays open for writing until the stream ended, so bytes not read yet
    //  stay in the pipe while the reader closes and opens it between pages.
    char bytes [64];
    assert_true (gates <= (int) sizeof bytes);
    memset (bytes, 'g', sizeof bytes);
    assert_int_equal (write (gate_fd, bytes, (size_t) gates), gates);
    ssize_t size;
    zchunk_t *got = s_read_to_close (sock, &size);
    char *text = (char *) zchunk_data (got);
    if (size != 0)
        fail_msg ("the held stream did not end (%s) after %zu bytes: ...%s\n%s", strerror (errno),
                  strlen (text), text + (strlen (text) > 200 ? strlen (text) - 200 : 0),
                  mx_testproc_stderr (daemon));
    close (sock);
    close (gate_fd);
    assert_true (strncmp (text, "HTTP/1.1 200", 12) == 0);
    char *payload = NULL;
    if (!mx_testhttp_dechunk (strstr (text, "\r\n\r\n") + 4, &payload))
        fail_msg ("the held stream did not end whole: %.300s", text);
    json_t *window = json_loads (payload, 0, NULL);
    assert_non_null (window);
    assert_int_equal (json_array_size (json_object_get (window, "flights")), flights);
    fprintf (fx->answers, "200 /all/flights %s\n", payload);
    json_decref (window);
    free (payload);
    zchunk_destroy (&got);
    mx_testdaemon_stop (&daemon);
    mx_testdaemon_env_free (&env);
    free (gate);
    s_validate (fx);
}

//  A metric's value from the /metrics of the instance on http_port.
static long long
s_metric (int http_port, const char *series)
{
    char *head = NULL, *metrics = NULL, value [64];
    assert_int_equal (mx_testhttp_get (http_port, "/metrics", 30, &head, &metrics), 200);
    mx_testhttp_sample (metrics, series, value, sizeof value);
    free (head);
    free (metrics);
    return strtoll (value, NULL, 10);
}

//  GET /flights/{flid}: 200, the body's text (malloc'd) and its ETag.
static char *
s_flight_text (fixture_t *fx, int port, const char *path, char *etag, size_t etag_size)
{
    json_t *body = NULL;
    assert_int_equal (s_get (fx, port, path, NULL, "/flights/{flid}", &body, etag, etag_size), 200);
    char *text = json_dumps (body, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref (body);
    return text;
}

//  A FLOP STND for flid into the mailbox (the next ID), until processed.
static void
s_change_stand (fixture_t *fx, const char *flid, int seqn, const char *stand)
{
    char *xml = zsys_sprintf ("<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20210123120000</DTTM>"
                              "<TYPE>FLOP</TYPE><STYP>STND</STYP></META><FLOP><FLID>%s</FLID>"
                              "<STND>%s</STND></FLOP></MSG>", seqn, flid, stand);
    int64_t id = mx_testmb_insert (fx->mb, 0, xml, (int64_t) time (NULL) * 1000);
    assert_true (id > 0);
    free (xml);
    char id_text [32];
    snprintf (id_text, sizeof id_text, "%" PRId64, id);
    const char *params [] = { id_text };
    mx_testpg_wait_params (fx->conn, "SELECT count(*) = 1 FROM proc_state WHERE msg_id = $1::bigint"
                                     " AND state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')", 1, params);
    char *state = mx_testpg_value_params (fx->conn, "SELECT state || ' ' || coalesce (outcome, last_error, '')"
                                          " FROM proc_state WHERE msg_id = $1::bigint", 1, params);
    printf ("# message %s (STND %s for flight %s): %s\n", id_text, stand, flid, state);
    assert_non_null (strstr (state, "SUCCEEDED"));
    free (state);
}

//  The active's state-document cache (msgx.api.cache-flights, here one
//  flight, so that a miss can be had): the processor puts every flight
//  it writes; a flight not held is one miss, then hits; a hit needs no
//  PostgreSQL (answered with flight_schd locked); a message changing the
//  flight is read back as soon as the processor has committed it, a hit,
//  the old ETag then 200, the new one 304; a standby reads PostgreSQL
//  every time (locked: 503; after the change: the new state), and its
//  page of the day is byte for byte the active's, which takes what its
//  cache holds at the listed version and reads the rest.
static void
test_doc_cache (void **state)
{
    fixture_t *fx = *state;
    const char *gen_args [] = {
        "--seed", "9", "--flights", "30", "--per-message", "10", "--updates", "40",
        "--day", DAY, NULL
    };
    free (mx_testdaemon_gen (fx->build, fx->mb, gen_args, WAIT_MS));
    int http_a = mx_testenv_free_port (), api_a = mx_testenv_free_port ();
    int http_b = mx_testenv_free_port (), api_b = mx_testenv_free_port ();
    mx_testdaemon_env_t env_a, env_b;
    s_env (fx, "a", http_a, api_a, &env_a);
    s_env (fx, "b", http_b, api_b, &env_b);
    mx_testdaemon_env_add (&env_a, "MSGX_API_CACHE_FLIGHTS=1");
    //  Hits never older than PostgreSQL: what "read back as soon as
    //  committed" below needs (the default answers the state before the
    //  change until the processor's write ends, test_doc_cache).
    mx_testdaemon_env_add (&env_a, "MSGX_API_READ_DURING_COMMIT=wait");
    mx_testdaemon_env_add (&env_b, "MSGX_API_STATEMENT_TIMEOUT=1s");
    mx_testproc_t *active = mx_testdaemon_start ("cmd/msgxd", &env_a, "active");
    mx_testproc_t *standby = mx_testdaemon_start ("cmd/msgxd", &env_b, "standby");
    fx->conn = mx_testpg_connect_schema (fx->pg, MX_TESTPG_WATCH_PROC_STATE);
    s_wait_processed (fx);

    //  The processor put what it wrote: the one entry is the flight put last.
    const char *hits = "msgx_api_cache_hits_total", *misses = "msgx_api_cache_misses_total";
    assert_int_equal (s_metric (http_a, "msgx_api_cache_entries"), 1);
    assert_int_equal (s_metric (http_a, hits), 0);
    assert_int_equal (s_metric (http_a, misses), 0);
    //  The day, from the standby (PostgreSQL alone) and from the active
    //  (the cached flight from memory, the others read): the same bytes.
    char *head_all = NULL, *all_a = NULL, *all_b = NULL;
    assert_int_equal (mx_testhttp_get (api_a, "/flights?day=" DAY, 30, &head_all, &all_a), 200);
    free (head_all);
    assert_int_equal (mx_testhttp_get (api_b, "/flights?day=" DAY, 30, &head_all, &all_b), 200);
    free (head_all);
    assert_string_equal (all_a, all_b);
    free (all_a);
    free (all_b);
    //  One flight read makes another the cache's one entry (a miss or a hit:
    //  it may be the one put last).
    char *other = mx_testpg_value (fx->conn, "SELECT max (flid) FROM flight_schd WHERE operation_day = '" DAY "'");
    char *other_path = zsys_sprintf ("/flights/%s", other);
    char etag [64], etag_again [64], etag_b [64];
    free (s_flight_text (fx, api_a, other_path, etag, sizeof etag));
    free (other_path);
    free (other);
    long long misses_at = s_metric (http_a, misses), hits_at = s_metric (http_a, hits);
    assert_int_equal (misses_at + hits_at, 1);

    char *flid = mx_testpg_value (fx->conn, "SELECT min (flid) FROM flight_schd WHERE operation_day = '" DAY "'");
    char *path = zsys_sprintf ("/flights/%s", flid);
    char *first = s_flight_text (fx, api_a, path, etag, sizeof etag);
    assert_int_equal (s_metric (http_a, misses), misses_at + 1);
    assert_int_equal (s_metric (http_a, hits), hits_at);
    char *second = s_flight_text (fx, api_a, path, etag_again, sizeof etag_again);
    assert_string_equal (second, first);
    assert_string_equal (etag_again, etag);
    assert_int_equal (s_metric (http_a, hits), hits_at + 1);
    assert_int_equal (s_metric (http_a, misses), misses_at + 1);
    assert_int_equal (s_metric (http_a, "msgx_api_cache_entries"), 1);
    assert_true (s_metric (http_a, "msgx_api_cache_bytes") >= (long long) strlen (first) - 2);
    json_t *none = NULL;
    assert_int_equal (s_get (fx, api_a, path, etag, NULL, &none, NULL, 0), 304);
    assert_int_equal (s_metric (http_a, hits), hits_at + 2);
    //  The standby answers the same, from PostgreSQL.
    char *from_b = s_flight_text (fx, api_b, path, etag_b, sizeof etag_b);
    assert_string_equal (from_b, first);
    assert_string_equal (etag_b, etag);
    free (from_b);

    //  flight_schd locked: the active answers from memory, the standby
    //  (which never caches) waits for PostgreSQL until its timeout.
    mx_testpg_exec (fx->conn, "BEGIN; LOCK TABLE flight_schd IN ACCESS EXCLUSIVE MODE");
    char *locked = s_flight_text (fx, api_a, path, etag_again, sizeof etag_again);
    assert_string_equal (locked, first);
    free (locked);
    json_t *refused = NULL;
    assert_int_equal (s_get (fx, api_b, path, NULL, NULL, &refused, NULL, 0), 503);
    json_decref (refused);
    mx_testpg_exec (fx->conn, "ROLLBACK");
    assert_int_equal (s_metric (http_a, hits), hits_at + 3);
    assert_int_equal (s_metric (http_b, hits), 0);
    assert_int_equal (s_metric (http_b, misses), 0);
    assert_int_equal (s_metric (http_b, "msgx_api_cache_entries"), 0);

    //  A change, read back as soon as it is committed, on both.
    char *before = mx_testpg_value_params (fx->conn, "SELECT state_version FROM flight_schd WHERE flid = $1::bigint",
                                           1, (const char *[]) { flid });
    s_change_stand (fx, flid, 990001, "Z91");
    char *after = mx_testpg_value_params (fx->conn, "SELECT state_version FROM flight_schd WHERE flid = $1::bigint",
                                          1, (const char *[]) { flid });
    assert_true (strtoll (after, NULL, 10) > strtoll (before, NULL, 10));
    char new_etag [64], expected [64];
    snprintf (expected, sizeof expected, "\"%s\"", after);
    json_t *changed = NULL;
    assert_int_equal (s_get (fx, api_a, path, etag, "/flights/{flid}", &changed, new_etag, sizeof new_etag), 200);
    assert_string_equal (new_etag, expected);
    assert_int_equal (json_integer_value (json_object_get (changed, "state_version")), strtoll (after, NULL, 10));
    json_decref (changed);
    assert_int_equal (s_get (fx, api_a, path, new_etag, NULL, &none, NULL, 0), 304);
    char *changed_a = s_flight_text (fx, api_a, path, etag_again, sizeof etag_again);
    char *changed_b = s_flight_text (fx, api_b, path, etag_b, sizeof etag_b);
    assert_string_equal (changed_b, changed_a);
    assert_string_equal (etag_b, expected);
    assert_string_equal (etag_again, expected);
    printf ("# flight %s: version %s then %s; active cache hits %lld, misses %lld\n", flid, before, after,
            s_metric (http_a, hits), s_metric (http_a, misses));
    //  Again, with the flight in the cache: the processor puts the new
    //  document itself at the end of its commit, so the next read is
    //  answered from the cache, byte for byte what the standby renders
    //  from PostgreSQL: a hit, or, when it came between the COMMIT and the
    //  write's end (the test hears of the commit first), a miss of the http
    //  thread that a reader answered from the cache once the end came.
    const char *waited = "msgx_api_cache_waited_total";
    long long misses_before = s_metric (http_a, misses), hits_before = s_metric (http_a, hits);
    long long waited_before = s_metric (http_a, waited);
    s_change_stand (fx, flid, 990002, "Z92");
    free (after);
    after = mx_testpg_value_params (fx->conn, "SELECT state_version FROM flight_schd WHERE flid = $1::bigint",
                                    1, (const char *[]) { flid });
    snprintf (expected, sizeof expected, "\"%s\"", after);
    free (changed_a);
    changed_a = s_flight_text (fx, api_a, path, etag_again, sizeof etag_again);
    assert_string_equal (etag_again, expected);
    assert_non_null (strstr (changed_a, "Z92"));
    free (changed_b);
    changed_b = s_flight_text (fx, api_b, path, etag_b, sizeof etag_b);
    assert_string_equal (changed_b, changed_a);
    long long waits = s_metric (http_a, waited) - waited_before;
    assert_int_equal (s_metric (http_a, misses) - waits, misses_before);     //  no PostgreSQL read
    assert_int_equal (s_metric (http_a, hits) + waits, hits_before + 1);
    char *head_a = NULL, *raw_a = NULL, *head_b = NULL, *raw_b = NULL;
    assert_int_equal (mx_testhttp_get (api_a, path, 30, &head_a, &raw_a), 200);
    assert_int_equal (mx_testhttp_get (api_b, path, 30, &head_b, &raw_b), 200);
    assert_string_equal (raw_a, raw_b);
    free (head_a);
    free (raw_a);
    free (head_b);
    free (raw_b);
    assert_int_equal (s_metric (http_b, hits), 0);

    free (changed_a);
    free (changed_b);
    free (before);
    free (after);
    free (first);
    free (second);
    free (path);
    free (flid);
    mx_testdaemon_stop (&standby);
    mx_testdaemon_stop (&active);
    mx_testdaemon_env_free (&env_a);
    mx_testdaemon_env_free (&env_b);
    s_validate (fx);
}

//  Every answer kept matches the OpenAPI description.
static void
s_validate (fixture_t *fx)
{
    fclose (fx->answers);
    fx->answers = NULL;
    const char *source = getenv ("MX_SOURCE_DIR");
    assert_non_null (source);
    char *script = zsys_sprintf ("%s/test/harness/mx-validate-api", source);
    const char *validate [] = { script, fx->answers_path, NULL };
    char *report = NULL, *problems = NULL;
    int rc = mx_testproc_run (validate, NULL, WAIT_MS, &report, &problems);
    printf ("# %s", report ? report : "");
    if (rc != 0)
        fail_msg ("answers do not match docs/api/openapi.json:\n%s%s", report ? report : "",
                  problems ? problems : "");
    free (report);
    free (problems);
    free (script);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_read_api, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_stream_cut_short, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_readers_pool, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_doc_cache, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
