/*  Integration tests of the http actor: the compat entry POST
    /cminmsgs/send on its own bind (off by default, bearer token, address
    list), /health/live, and that a locked mailbox never stops the actor
    answering. The actor runs in-process against the test PostgreSQL
    (migrated) and a test MariaDB mailbox; requests go over plain sockets.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <czmq.h>
#include <libpq-fe.h>

#include "mx_actor.h"
#include "mx_clock.h"
#include "mx_config.h"
#include "mx_http.h"
#include "mx_metrics.h"
#include "mx_migrate.h"
#include "mx_pg.h"
#include "mx_testactor.h"
#include "mx_testenv.h"

//  2024-03-01T12:00:00Z; the fake clock stands 250 ms later.
#define T0_MS 1709294400000LL
#define NOW_MS (T0_MS + 250)
#define MAX_BODY 1000
#define IO_TIMEOUT_S 20
#define TOKEN "Zm9vYmFy-compat-token"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    PGconn *conn;
    MYSQL *admin;
    mx_clock_t *clock;
    mx_config_t *config;
    mx_actor_args_t args;
    zactor_t *actor;
    int port;                   //  /health, /metrics
    int compat_port;            //  POST /cminmsgs/send
    char *token_file;
    const char *authorization;  //  the Authorization header s_request sends, or NULL
} fixture_t;

typedef struct {
    int status;                 //  0 = no response at all
    char *head;                 //  status line and headers
    char *body;
} reply_t;

//  ---------------------------------------------------------------------
//  Helpers

static void
s_set (mx_config_t *config, const char *key, const char *value)
{
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_set (config, key, value, errors))
        fail_msg ("config %s = %s: %s", key, value, (char *) zlist_first (errors));
    zlist_destroy (&errors);
}

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    assert_non_null (fx);
    fx->pg = mx_testpg_new ();
    char *error = NULL;
    fx->conn = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test_http", 0, &error);
    if (!fx->conn || mx_migrate_apply (fx->conn, NULL, &error))
        fail_msg ("PostgreSQL set-up: %s", error);
    fx->mb = mx_testmb_new ();
    fx->admin = mx_testmb_connect (fx->mb);
    fx->clock = mx_clock_new_fake (NOW_MS);
    fx->port = mx_testenv_free_port ();
    do
        fx->compat_port = mx_testenv_free_port ();
    while (fx->compat_port == fx->port);
    fx->token_file = zsys_sprintf ("test_http-token-%d", (int) getpid ());
    FILE *file = fopen (fx->token_file, "w");
    assert_non_null (file);
    fprintf (file, "%s\n", TOKEN);
    fclose (file);
    chmod (fx->token_file, 0600);
    fx->authorization = "Bearer " TOKEN;

    mx_config_t *config = mx_config_new_defaults ();
    char text [64];
    s_set (config, "msgx.pg.conninfo", mx_testpg_conninfo (fx->pg));
    snprintf (text, sizeof text, "127.0.0.1:%d", fx->port);
    s_set (config, "msgx.http.bind", text);
    snprintf (text, sizeof text, "127.0.0.1:%d", fx->compat_port);
    s_set (config, "msgx.http.compat.bind", text);
    s_set (config, "msgx.http.compat.enabled", "true");
    s_set (config, "msgx.http.compat.token-file", fx->token_file);
    snprintf (text, sizeof text, "%d", MAX_BODY);
    s_set (config, "msgx.http.max-body-bytes", text);
    mx_testmb_configure (fx->mb, config, "+08:00");
    s_set (config, "mailbox.shared-mysql.connect-timeout", "2s");
    fx->config = config;
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_actor_destroy (&fx->actor);
    mx_config_destroy (&fx->config);
    mx_clock_destroy (&fx->clock);
    mysql_close (fx->admin);
    mx_testmb_destroy (&fx->mb);
    mx_pg_disconnect (&fx->conn);
    mx_testpg_destroy (&fx->pg);
    remove (fx->token_file);
    free (fx->token_file);
    free (fx);
    return 0;
}

static void
s_start (fixture_t *fx)
{
    zlist_t *errors = zlist_new ();
    zlist_autofree (errors);
    if (mx_config_validate (fx->config, errors))
        fail_msg ("config invalid: %s", (char *) zlist_first (errors));
    zlist_destroy (&errors);
    fx->args = (mx_actor_args_t) { .name = "http", .config = fx->config, .clock = fx->clock };
    char *detail = NULL;
    fx->actor = mx_testactor_start (mx_http_actor, &fx->args, "http actor", &detail);
    char expected [64];
    snprintf (expected, sizeof expected, "listening on 127.0.0.1:%d", fx->port);
    assert_non_null (strstr (detail, expected));
    free (detail);
}

static int
s_dial (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    assert_true (fd >= 0);
    struct timeval timeout = { .tv_sec = IO_TIMEOUT_S };
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if (connect (fd, (struct sockaddr *) &addr, sizeof addr))
        fail_msg ("connect to 127.0.0.1:%d: %s", port, strerror (errno));
    return fd;
}

//  Sends everything; false if the peer closed on us.
static bool
s_write (int fd, const void *data, size_t size)
{
    const char *at = (const char *) data;
    while (size > 0) {
        ssize_t sent = send (fd, at, size, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent <= 0)
            return false;
        at += sent;
        size -= (size_t) sent;
    }
    return true;
}

//  Reads until the server closes (requests say Connection: close).
static void
s_read_reply (int fd, reply_t *reply)
{
    memset (reply, 0, sizeof *reply);
    size_t size = 0, capacity = 4096;
    char *data = malloc (capacity);
    assert_non_null (data);
    while (true) {
        if (size + 1 >= capacity) {
            capacity *= 2;
            data = realloc (data, capacity);
            assert_non_null (data);
        }
        ssize_t got = recv (fd, data + size, capacity - size - 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            fail_msg ("no reply within %d s", IO_TIMEOUT_S);
        if (got <= 0)
            break;              //  closed (or reset)
        size += (size_t) got;
    }
    data [size] = '\0';
    char *end = strstr (data, "\r\n\r\n");
    if (size == 0 || !end || sscanf (data, "HTTP/1.%*d %d", &reply->status) != 1) {
        reply->status = 0;
        reply->head = data;
        reply->body = strdup ("");
        return;
    }
    *end = '\0';
    reply->head = data;
    reply->body = strdup (end + 4);
}

static void
s_reply_free (reply_t *reply)
{
    free (reply->head);
    free (reply->body);
    memset (reply, 0, sizeof *reply);
}

//  Value of header name in reply (case-insensitive name), or NULL.
static char *
s_header (reply_t *reply, const char *name, char *buf, size_t size)
{
    size_t length = strlen (name);
    for (char *line = strstr (reply->head, "\r\n"); line; line = strstr (line + 2, "\r\n")) {
        char *start = line + 2;
        if (strncasecmp (start, name, length) == 0 && start [length] == ':') {
            start += length + 1;
            while (*start == ' ')
                start++;
            char *stop = strstr (start, "\r\n");
            size_t value_length = stop ? (size_t) (stop - start) : strlen (start);
            snprintf (buf, size, "%.*s", (int) value_length, start);
            return buf;
        }
    }
    return NULL;
}

//  One request with a Content-Length body (body may be NULL: no body and
//  no Content-Length); content_type NULL: no such header.
static void
s_request (fixture_t *fx, const char *method, const char *path, const char *content_type,
           const char *body, size_t size, reply_t *reply)
{
    int fd = s_dial (fx->compat_port);
    char *head = zsys_sprintf ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n",
                               method, path);
    if (fx->authorization) {
        char *more = zsys_sprintf ("%sAuthorization: %s\r\n", head, fx->authorization);
        free (head);
        head = more;
    }
    if (content_type) {
        char *more = zsys_sprintf ("%sContent-Type: %s\r\n", head, content_type);
        free (head);
        head = more;
    }
    if (body) {
        char *more = zsys_sprintf ("%sContent-Length: %zu\r\n", head, size);
        free (head);
        head = more;
    }
    //  Headers and body in one write, as ordinary clients send small bodies.
    size_t head_length = strlen (head);
    char *request = malloc (head_length + 2 + size);
    memcpy (request, head, head_length);
    memcpy (request + head_length, "\r\n", 2);
    if (body && size)
        memcpy (request + head_length + 2, body, size);
    assert_true (s_write (fd, request, head_length + 2 + (body ? size : 0)));
    free (request);
    free (head);
    s_read_reply (fd, reply);
    close (fd);
}

static void
s_post (fixture_t *fx, const char *content_type, const char *body, reply_t *reply)
{
    s_request (fx, "POST", "/cminmsgs/send", content_type, body, strlen (body), reply);
}

static int64_t
s_pg_count (fixture_t *fx, const char *sql)
{
    PGresult *res = NULL;
    char *error = NULL;
    if (mx_pg_exec (fx->conn, sql, 0, NULL, &res, &error))
        fail_msg ("%s", error);
    int64_t count = mx_pg_get_int64 (res, 0, 0);
    PQclear (res);
    return count;
}

static int64_t
s_mailbox_count (fixture_t *fx)
{
    const char *sql = "SELECT COUNT(*) FROM CMINMSGS";
    if (mysql_real_query (fx->admin, sql, strlen (sql)))
        fail_msg ("%s: %s", sql, mysql_error (fx->admin));
    MYSQL_RES *res = mysql_store_result (fx->admin);
    assert_non_null (res);
    int64_t count = strtoll (mysql_fetch_row (res) [0], NULL, 10);
    mysql_free_result (res);
    return count;
}

//  Status, received time as text, and message of row id, "|"-separated.
static void
s_mailbox_row (fixture_t *fx, int64_t id, char *out, size_t size)
{
    const char *sql = "SELECT CONCAT_WS('|', CMINMSGS_STATUS, CMINMSGS_DATE_RECEIVED,"
                      " COALESCE(CMINMSGS_DATE_PROCESSED, 'NULL'), CMINMSGS_CLOB_MSG)"
                      " FROM CMINMSGS WHERE CMINMSGS_ID = ?";
    MYSQL_STMT *stmt = mysql_stmt_init (fx->admin);
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
    if (mysql_stmt_prepare (stmt, sql, strlen (sql)) || mysql_stmt_bind_param (stmt, &param)
    ||  mysql_stmt_execute (stmt) || mysql_stmt_bind_result (stmt, &result))
        fail_msg ("%s: %s", sql, mysql_stmt_error (stmt));
    if (mysql_stmt_fetch (stmt) != 0)
        fail_msg ("no mailbox row %" PRId64, id);
    out [length] = '\0';
    mysql_stmt_free_result (stmt);
    mysql_stmt_close (stmt);
}

static void
s_expect_refusal (reply_t *reply, int status, const char *words)
{
    if (reply->status != status)
        fail_msg ("expected %d, got %d: %s %s", status, reply->status, reply->head, reply->body);
    char type [128];
    assert_non_null (s_header (reply, "Content-Type", type, sizeof type));
    assert_true (strncmp (type, "text/plain", 10) == 0);
    //  One line saying what and why.
    size_t length = strlen (reply->body);
    assert_true (length > 1);
    assert_int_equal (reply->body [length - 1], '\n');
    assert_ptr_equal (strchr (reply->body, '\n'), reply->body + length - 1);
    if (!strstr (reply->body, words))
        fail_msg ("'%s' not in the answer: %s", words, reply->body);
}

//  The value of a sample in this process's registry (what /metrics shows).
static double
s_sample (const char *series)
{
    char *text = mx_metrics_render ();
    char *needle = zsys_sprintf ("\n%s ", series);
    char *at = strstr (text, needle);
    if (!at)
        fail_msg ("no sample %s in:\n%s", series, text);
    double value = strtod (at + strlen (needle), NULL);
    free (needle);
    free (text);
    return value;
}

static double
s_outcome (const char *outcome)
{
    char series [96];
    snprintf (series, sizeof series, "msgx_compat_requests_total{outcome=\"%s\"}", outcome);
    return s_sample (series);
}

//  GET path on the service bind.
static void
s_get (fixture_t *fx, const char *path, reply_t *reply)
{
    int fd = s_dial (fx->port);
    char *request = zsys_sprintf ("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    assert_true (s_write (fd, request, strlen (request)));
    free (request);
    s_read_reply (fd, reply);
    close (fd);
}

//  ---------------------------------------------------------------------

static void
test_post_stores_and_registers (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    //  Control pauses the pipeline now and then; the entry does not care.
    mx_cmd_send (zactor_sock (fx->actor), MX_CMD_PAUSE);

    const char *xml = "<MSG><META><TYPE>FLOP</TYPE></META>\xe8\x88\xaa\xe7\x8f\xad</MSG>";
    reply_t reply;
    s_post (fx, "text/xml; charset=utf-8", xml, &reply);
    assert_int_equal (reply.status, 200);
    char type [128];
    assert_non_null (s_header (&reply, "Content-Type", type, sizeof type));
    assert_true (strncmp (type, "text/plain", 10) == 0);
    char *end = NULL;
    int64_t id = strtoll (reply.body, &end, 10);
    assert_true (id > 0);
    assert_int_equal (*end, '\0');          //  the ID and nothing else
    s_reply_free (&reply);

    //  The mailbox row: VALID, received now (in the mailbox's +08:00).
    char row [512];
    s_mailbox_row (fx, id, row, sizeof row);
    char *expected = zsys_sprintf ("VALID|2024-03-01 20:00:00|NULL|%s", xml);
    assert_string_equal (row, expected);
    free (expected);

    //  The proc_state row: PENDING, compat, received_at as the mailbox says.
    PGresult *res = NULL;
    char *error = NULL;
    char id_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (id, id_text) };
    if (mx_pg_exec (fx->conn,
            "SELECT state, source, (extract (epoch FROM received_at) * 1000)::bigint,"
            " (extract (epoch FROM created_at) * 1000)::bigint FROM proc_state WHERE msg_id = $1",
            1, params, &res, &error))
        fail_msg ("%s", error);
    assert_int_equal (PQntuples (res), 1);
    assert_string_equal (mx_pg_get_text (res, 0, 0), "PENDING");
    assert_string_equal (mx_pg_get_text (res, 0, 1), "compat");
    assert_int_equal (mx_pg_get_int64 (res, 0, 2), T0_MS);
    assert_int_equal (mx_pg_get_int64 (res, 0, 3), NOW_MS);
    PQclear (res);

    //  Other accepted media types; IDs increase.
    const char *types [] = { "application/xml", "text/plain", "TEXT/XML; Charset=\"UTF-8\"",
                             "application/xml;charset=utf-8" };
    int64_t last = id;
    for (size_t i = 0; i < sizeof types / sizeof types [0]; i++) {
        s_post (fx, types [i], "<MSG/>", &reply);
        if (reply.status != 200)
            fail_msg ("%s: %d %s", types [i], reply.status, reply.body);
        int64_t next = strtoll (reply.body, NULL, 10);
        assert_true (next > last);
        last = next;
        s_reply_free (&reply);
    }
    assert_int_equal (s_mailbox_count (fx), 5);
    assert_int_equal (s_pg_count (fx, "SELECT count(*) FROM proc_state"
                                      " WHERE state = 'PENDING' AND source = 'compat'"), 5);

    //  A body of exactly the limit is accepted.
    char *full = malloc (MAX_BODY + 1);
    memset (full, 'x', MAX_BODY);
    memcpy (full, "<a>", 3);
    memcpy (full + MAX_BODY - 4, "</a>", 4);
    full [MAX_BODY] = '\0';
    s_post (fx, "application/xml", full, &reply);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
    free (full);
}

static void
test_too_large_by_content_length (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    //  Refused on the headers alone: the body is never sent.
    int fd = s_dial (fx->compat_port);
    const char *head = "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" AUTH
                       "Content-Type: application/xml\r\nContent-Length: 1001\r\n\r\n";
    assert_true (s_write (fd, head, strlen (head)));
    reply_t reply;
    s_read_reply (fd, &reply);
    close (fd);
    s_expect_refusal (&reply, 413, "limit of 1000 bytes");
    s_reply_free (&reply);

    //  Also with Expect: 100-continue (no 100 is sent first).
    fd = s_dial (fx->compat_port);
    head = "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" AUTH
           "Content-Type: text/xml\r\nExpect: 100-continue\r\nContent-Length: 99999999999\r\n\r\n";
    assert_true (s_write (fd, head, strlen (head)));
    s_read_reply (fd, &reply);
    close (fd);
    s_expect_refusal (&reply, 413, "msgx.http.max-body-bytes");
    s_reply_free (&reply);
    assert_int_equal (s_mailbox_count (fx), 0);
}

//  Sends a chunked body of total bytes in pieces of chunk bytes.
static bool
s_send_chunked (int fd, size_t total, size_t chunk)
{
    const char *head = "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" AUTH
                       "Content-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n";
    if (!s_write (fd, head, strlen (head)))
        return false;
    char *data = malloc (chunk);
    memset (data, 'y', chunk);
    data [0] = '<';
    bool ok = true;
    for (size_t sent = 0; sent < total && ok; sent += chunk) {
        size_t size = total - sent < chunk ? total - sent : chunk;
        char line [32];
        snprintf (line, sizeof line, "%zx\r\n", size);
        ok = s_write (fd, line, strlen (line)) && s_write (fd, data, size) && s_write (fd, "\r\n", 2);
    }
    free (data);
    return ok && s_write (fd, "0\r\n\r\n", 5);
}

static void
test_too_large_chunked (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    int fd = s_dial (fx->compat_port);
    assert_true (s_send_chunked (fd, 3 * 500, 500));
    reply_t reply;
    s_read_reply (fd, &reply);
    close (fd);
    s_expect_refusal (&reply, 413, "limit of 1000 bytes");
    s_reply_free (&reply);
    assert_int_equal (s_mailbox_count (fx), 0);

    //  Within the limit, chunked is fine.
    fd = s_dial (fx->compat_port);
    assert_true (s_send_chunked (fd, 900, 300));
    s_read_reply (fd, &reply);
    close (fd);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
    assert_int_equal (s_mailbox_count (fx), 1);

    //  A refused body that keeps coming is cut off, without an answer, and
    //  the server carries on.
    fd = s_dial (fx->compat_port);
    s_send_chunked (fd, 4 * 1024 * 1024, 64 * 1024);
    s_read_reply (fd, &reply);
    close (fd);
    assert_int_equal (reply.status, 0);
    s_reply_free (&reply);
    s_post (fx, "application/xml", "<after/>", &reply);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
    assert_int_equal (s_mailbox_count (fx), 2);
}

static void
test_bad_requests (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    reply_t reply;

    s_post (fx, "application/xml", "", &reply);
    s_expect_refusal (&reply, 400, "empty body");
    s_reply_free (&reply);

    s_post (fx, "application/json", "{\"a\":1}", &reply);
    s_expect_refusal (&reply, 415, "application/json");
    s_reply_free (&reply);
    s_post (fx, "text/xml; charset=iso-8859-1", "<a/>", &reply);
    s_expect_refusal (&reply, 415, "charset 'iso-8859-1'");
    s_reply_free (&reply);
    s_post (fx, NULL, "<a/>", &reply);
    s_expect_refusal (&reply, 415, "missing Content-Type");
    s_reply_free (&reply);
    s_post (fx, "textual/xml", "<a/>", &reply);
    s_expect_refusal (&reply, 415, "unsupported media type");
    s_reply_free (&reply);

    const char *methods [] = { "GET", "PUT", "DELETE" };
    for (size_t i = 0; i < 3; i++) {
        s_request (fx, methods [i], "/cminmsgs/send", NULL, NULL, 0, &reply);
        s_expect_refusal (&reply, 405, methods [i]);
        char allow [64];
        assert_non_null (s_header (&reply, "Allow", allow, sizeof allow));
        assert_string_equal (allow, "POST");
        s_reply_free (&reply);
    }
    s_request (fx, "POST", "/cminmsgs/other", "application/xml", "<a/>", 4, &reply);
    s_expect_refusal (&reply, 404, "/cminmsgs/other");
    s_reply_free (&reply);
    s_request (fx, "GET", "/", NULL, NULL, 0, &reply);
    s_expect_refusal (&reply, 404, "POST /cminmsgs/send");
    s_reply_free (&reply);

    //  Not UTF-8: a broken sequence, an overlong '/', a surrogate, a
    //  truncated sequence at the end.
    const char *bad [] = { "<a>\xc3\x28</a>", "<a>\xc0\xaf</a>", "<a>\xed\xa0\x80</a>", "<a/>\xe8\x88" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        s_post (fx, "text/xml; charset=utf-8", bad [i], &reply);
        s_expect_refusal (&reply, 400, "not valid UTF-8");
        s_reply_free (&reply);
    }
    assert_int_equal (s_mailbox_count (fx), 0);
    assert_int_equal (s_pg_count (fx, "SELECT count(*) FROM proc_state"), 0);
}

static void
test_mailbox_unreachable_writes_nothing (void **state)
{
    fixture_t *fx = *state;
    //  A port that refuses connections: bound, not listening.
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    socklen_t length = sizeof addr;
    assert_int_equal (bind (fd, (struct sockaddr *) &addr, sizeof addr), 0);
    assert_int_equal (getsockname (fd, (struct sockaddr *) &addr, &length), 0);
    char port [16];
    snprintf (port, sizeof port, "%d", ntohs (addr.sin_port));
    s_set (fx->config, "mailbox.shared-mysql.port", port);
    s_start (fx);

    reply_t reply;
    s_post (fx, "application/xml", "<MSG/>", &reply);
    s_expect_refusal (&reply, 503, "mailbox unavailable: cannot connect to the mailbox");
    s_reply_free (&reply);
    assert_int_equal (s_pg_count (fx, "SELECT count(*) FROM proc_state"), 0);
    assert_int_equal (s_mailbox_count (fx), 0);
    close (fd);
}

static void
test_shadow_and_disabled_write_nothing (void **state)
{
    fixture_t *fx = *state;
    s_set (fx->config, "msgx.shadow", "true");
    s_start (fx);
    reply_t reply;
    s_post (fx, "application/xml", "<MSG/>", &reply);
    s_expect_refusal (&reply, 503, "shadow mode: ");
    assert_true (strncmp (reply.body, "shadow mode: ", 13) == 0);
    s_reply_free (&reply);
    assert_int_equal (s_mailbox_count (fx), 0);
    assert_int_equal (s_pg_count (fx, "SELECT count(*) FROM proc_state"), 0);
    mx_actor_destroy (&fx->actor);

    s_set (fx->config, "msgx.shadow", "false");
    s_set (fx->config, "mailbox.shared-mysql.enabled", "false");
    s_start (fx);
    s_post (fx, "application/xml", "<MSG/>", &reply);
    s_expect_refusal (&reply, 503, "mailbox disabled");
    s_reply_free (&reply);
    assert_int_equal (s_mailbox_count (fx), 0);
    assert_int_equal (s_pg_count (fx, "SELECT count(*) FROM proc_state"), 0);
}

static void
test_proc_state_failure_still_answers_200 (void **state)
{
    fixture_t *fx = *state;
    int dead = mx_testenv_free_port ();
    char conninfo [128];
    snprintf (conninfo, sizeof conninfo, "host=127.0.0.1 port=%d dbname=nothing connect_timeout=2", dead);
    s_set (fx->config, "msgx.pg.conninfo", conninfo);
    s_start (fx);
    reply_t reply;
    s_post (fx, "application/xml", "<MSG/>", &reply);
    assert_int_equal (reply.status, 200);
    int64_t id = strtoll (reply.body, NULL, 10);
    s_reply_free (&reply);
    //  The mailbox row exists for polling to find; no proc_state row.
    char row [256];
    s_mailbox_row (fx, id, row, sizeof row);
    assert_string_equal (row, "VALID|2024-03-01 20:00:00|NULL|<MSG/>");
    assert_int_equal (s_pg_count (fx, "SELECT count(*) FROM proc_state"), 0);
}

static void
test_slow_client_does_not_block_others (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    int slow = s_dial (fx->compat_port);
    const char *half = "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\n" AUTH "Content-Type: appl";
    assert_true (s_write (slow, half, strlen (half)));
    int slow_body = s_dial (fx->compat_port);
    const char *head = "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" AUTH
                       "Content-Type: application/xml\r\nContent-Length: 100\r\n\r\n<MSG>";
    assert_true (s_write (slow_body, head, strlen (head)));

    reply_t reply;
    s_post (fx, "application/xml", "<fast/>", &reply);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
    assert_int_equal (s_mailbox_count (fx), 1);

    //  The slow one still completes when it finally sends the rest.
    const char *rest = "ication/xml\r\nConnection: close\r\nContent-Length: 7\r\n\r\n<slow/>";
    assert_true (s_write (slow, rest, strlen (rest)));
    s_read_reply (slow, &reply);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
    close (slow);
    close (slow_body);
    assert_int_equal (s_mailbox_count (fx), 2);
}

static void
test_start_failed_when_port_taken (void **state)
{
    fixture_t *fx = *state;
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    int on = 1;
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) fx->port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    assert_int_equal (bind (fd, (struct sockaddr *) &addr, sizeof addr), 0);
    assert_int_equal (listen (fd, 4), 0);

    fx->args = (mx_actor_args_t) { .name = "http", .config = fx->config, .clock = fx->clock };
    char *detail = NULL, *error = NULL;
    zactor_t *actor = mx_actor_start (mx_http_actor, &fx->args, 10000, &detail, &error);
    assert_null (actor);
    assert_null (detail);
    char expected [96];
    snprintf (expected, sizeof expected, "cannot listen on 127.0.0.1:%d: Address already in use", fx->port);
    assert_string_equal (error, expected);
    free (error);
    close (fd);

    //  Once free, the port can be taken, and given back on $TERM.
    s_start (fx);
    mx_actor_destroy (&fx->actor);
    s_start (fx);
    reply_t reply;
    s_post (fx, "application/xml", "<MSG/>", &reply);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
}

//  Off unless enabled: the service bind answers 404 for the entry, and
//  nothing listens on the compat bind.
static void
test_compat_off_by_default (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *defaults = mx_config_new_defaults ();
    assert_false (defaults->http_compat_enabled);
    assert_string_equal (defaults->http_compat_bind, "127.0.0.1:8081");
    mx_config_destroy (&defaults);
    s_set (fx->config, "msgx.http.compat.enabled", "false");
    s_start (fx);
    double disabled = s_outcome ("disabled");
    int fd = s_dial (fx->port);
    const char *post = "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" AUTH
                       "Content-Type: application/xml\r\nContent-Length: 6\r\n\r\n<MSG/>";
    assert_true (s_write (fd, post, strlen (post)));
    reply_t reply;
    s_read_reply (fd, &reply);
    close (fd);
    s_expect_refusal (&reply, 404, "msgx.http.compat.enabled = false");
    s_reply_free (&reply);
    assert_true (s_outcome ("disabled") == disabled + 1);

    fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) fx->compat_port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    assert_int_not_equal (connect (fd, (struct sockaddr *) &addr, sizeof addr), 0);
    close (fd);
    assert_int_equal (s_mailbox_count (fx), 0);
}

//  Enabled with a token: none or a wrong one is 401, the right one stores.
static void
test_compat_token (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    double unauthorized = s_outcome ("unauthorized"), accepted = s_outcome ("accepted");
    reply_t reply;
    fx->authorization = NULL;
    s_post (fx, "application/xml", "<MSG/>", &reply);
    s_expect_refusal (&reply, 401, "Authorization: Bearer");
    char value [64];
    assert_non_null (s_header (&reply, "WWW-Authenticate", value, sizeof value));
    assert_string_equal (value, "Bearer");
    s_reply_free (&reply);
    const char *wrong [] = { "Bearer " TOKEN "x", "Bearer Zm9vYmFy", "Basic " TOKEN, TOKEN, "Bearer " };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong [0]; i++) {
        fx->authorization = wrong [i];
        s_post (fx, "application/xml", "<MSG/>", &reply);
        s_expect_refusal (&reply, 401, "bearer token");
        //  The answer never repeats what the client sent.
        assert_null (strstr (reply.body, "Zm9v"));
        s_reply_free (&reply);
    }
    assert_true (s_outcome ("unauthorized") == unauthorized + 6);
    assert_int_equal (s_mailbox_count (fx), 0);

    fx->authorization = "bearer  " TOKEN;
    s_post (fx, "application/xml", "<MSG>token</MSG>", &reply);
    assert_int_equal (reply.status, 200);
    int64_t id = strtoll (reply.body, NULL, 10);
    s_reply_free (&reply);
    char row [256];
    s_mailbox_row (fx, id, row, sizeof row);
    assert_string_equal (row, "VALID|2024-03-01 20:00:00|NULL|<MSG>token</MSG>");
    assert_true (s_outcome ("accepted") == accepted + 1);
}

//  An address list without 127.0.0.1: 403 even with the token; with it, stored.
static void
test_compat_allow_list (void **state)
{
    fixture_t *fx = *state;
    s_set (fx->config, "msgx.http.compat.allow", "10.0.0.0/8, 192.0.2.7, ::1/128");
    s_start (fx);
    double forbidden = s_outcome ("forbidden"), invalid = s_outcome ("invalid");
    reply_t reply;
    s_post (fx, "application/xml", "<MSG/>", &reply);
    s_expect_refusal (&reply, 403, "is not in msgx.http.compat.allow");
    s_reply_free (&reply);
    //  Refused before anything else is looked at.
    s_post (fx, "application/json", "{}", &reply);
    s_expect_refusal (&reply, 403, "127.0.0.1");
    s_reply_free (&reply);
    assert_true (s_outcome ("forbidden") == forbidden + 2);
    assert_true (s_outcome ("invalid") == invalid);
    mx_actor_destroy (&fx->actor);

    //  The list alone (no token) is enough when it holds the client.
    s_set (fx->config, "msgx.http.compat.allow", "127.0.0.0/8");
    s_set (fx->config, "msgx.http.compat.token-file", "");
    fx->authorization = NULL;
    s_start (fx);
    s_post (fx, "application/xml", "<MSG/>", &reply);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
    assert_int_equal (s_mailbox_count (fx), 1);
    s_post (fx, "application/json", "{}", &reply);
    s_expect_refusal (&reply, 415, "application/json");
    s_reply_free (&reply);
    assert_true (s_outcome ("invalid") == invalid + 1);
}

//  A token file open to others is refused in prod at start.
static void
test_compat_token_file_checked (void **state)
{
    fixture_t *fx = *state;
    chmod (fx->token_file, 0644);
    s_set (fx->config, "msgx.profile", "prod");
    s_set (fx->config, "msgx.kafka.bootstrap-servers", "127.0.0.1:9");
    s_set (fx->config, "mailbox.shared-mysql.user", "root");
    fx->args = (mx_actor_args_t) { .name = "http", .config = fx->config, .clock = fx->clock };
    char *detail = NULL, *error = NULL;
    zactor_t *actor = mx_actor_start (mx_http_actor, &fx->args, 10000, &detail, &error);
    assert_null (actor);
    if (!strstr (error, "is open to others (mode 0644)"))
        fail_msg ("unexpected: %s", error);
    free (error);
    //  An empty token file is refused whatever the profile.
    s_set (fx->config, "msgx.profile", "dev");
    FILE *file = fopen (fx->token_file, "w");
    fclose (file);
    actor = mx_actor_start (mx_http_actor, &fx->args, 10000, &detail, &error);
    assert_null (actor);
    assert_non_null (strstr (error, "expected one token"));
    free (error);
}

//  While the mailbox is locked, the write waits in the writer: the actor
//  still answers /health/live and /metrics, and the write completes once
//  the lock goes.
static void
test_locked_mailbox_blocks_nothing_else (void **state)
{
    fixture_t *fx = *state;
    s_start (fx);
    MYSQL *locker = mx_testmb_connect (fx->mb);
    const char *lock = "LOCK TABLES CMINMSGS WRITE";
    if (mysql_real_query (locker, lock, strlen (lock)))
        fail_msg ("%s: %s", lock, mysql_error (locker));

    int fd = s_dial (fx->compat_port);
    const char *post = "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" AUTH
                       "Content-Type: application/xml\r\nContent-Length: 9\r\n\r\n<locked/>";
    assert_true (s_write (fd, post, strlen (post)));
    //  Bounded poll until the writer's INSERT waits on the lock.
    const char *waiting = "SELECT COUNT(*) FROM information_schema.PROCESSLIST"
                          " WHERE INFO LIKE 'INSERT INTO CMINMSGS%' AND STATE LIKE 'Waiting%'";
    mx_testmb_wait (fx->admin, waiting);

    //  A figure, not an assertion: how long the answers took meanwhile.
    reply_t reply;
    int64_t asked = zclock_usecs ();
    s_get (fx, "/health/live", &reply);
    print_message ("while the mailbox is locked: /health/live answered in %.1f ms\n",
                   (double) (zclock_usecs () - asked) / 1000.0);
    assert_int_equal (reply.status, 200);
    json_t *live = json_loads (reply.body, 0, NULL);
    assert_string_equal (json_string_value (json_object_get (live, "status")), "live");
    json_decref (live);
    s_reply_free (&reply);
    //  No metrics actor here: /metrics answers once its wait is over.
    asked = zclock_usecs ();
    s_get (fx, "/metrics", &reply);
    print_message ("while the mailbox is locked: /metrics answered in %.1f ms (no metrics actor here:"
                   " its wait runs out)\n", (double) (zclock_usecs () - asked) / 1000.0);
    assert_int_equal (reply.status, 200);
    assert_non_null (strstr (reply.body, "msgx_compat_requests_total{outcome=\"accepted\"}"));
    s_reply_free (&reply);
    //  Another client of the entry is refused or served, never stuck behind:
    //  its request waits in line for the writer like the first.
    const char *unlock = "UNLOCK TABLES";
    if (mysql_real_query (locker, unlock, strlen (unlock)))
        fail_msg ("%s: %s", unlock, mysql_error (locker));
    s_read_reply (fd, &reply);
    close (fd);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
    assert_int_equal (s_mailbox_count (fx), 1);
    mysql_close (locker);
}

static void
test_live_on_a_standby (void **state)
{
    fixture_t *fx = *state;
    fx->args = (mx_actor_args_t) { .name = "http", .config = fx->config, .clock = fx->clock };
    char *detail = NULL, *error = NULL;
    fx->actor = mx_actor_start_service (mx_http_actor, &fx->args, "standby", false, 10000, &detail, &error);
    if (!fx->actor)
        fail_msg ("http actor did not start: %s", error);
    free (detail);
    reply_t reply;
    s_get (fx, "/health/live", &reply);
    assert_int_equal (reply.status, 200);
    assert_non_null (strstr (reply.body, "\"role\":\"standby\""));
    s_reply_free (&reply);
    //  Not ready: a standby takes no work (and no metrics actor answers here).
    s_get (fx, "/health/ready", &reply);
    assert_int_equal (reply.status, 503);
    s_reply_free (&reply);
    s_get (fx, "/health/other", &reply);
    assert_int_equal (reply.status, 404);
    s_reply_free (&reply);
    //  The compat entry refuses on a standby.
    double unavailable = s_outcome ("unavailable");
    s_post (fx, "application/xml", "<MSG/>", &reply);
    s_expect_refusal (&reply, 503, "this instance is standby, not active");
    s_reply_free (&reply);
    assert_true (s_outcome ("unavailable") == unavailable + 1);
}

//  msgx.http.per-ip-connections: a client holding its share of idle
//  connections gets no more, on either bind; others are unaffected, and a
//  freed slot serves again.
static void
test_per_ip_connection_limit (void **state)
{
    fixture_t *fx = *state;
    s_set (fx->config, "msgx.http.per-ip-connections", "2");
    s_start (fx);
    int idle [2];
    for (int i = 0; i < 2; i++) {
        idle [i] = s_dial (fx->compat_port);
        assert_true (s_write (idle [i], "POST", 4));
    }
    //  The third from 127.0.0.1 is closed without an answer.
    reply_t reply;
    int fd = s_dial (fx->compat_port);
    const char *get = "GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    s_write (fd, get, strlen (get));
    s_read_reply (fd, &reply);
    close (fd);
    assert_int_equal (reply.status, 0);
    s_reply_free (&reply);
    //  The other bind counts its own connections.
    s_get (fx, "/health/live", &reply);
    assert_int_equal (reply.status, 200);
    s_reply_free (&reply);
    close (idle [0]);
    //  MHD notices the close on its next turn; a bounded poll until the slot is free.
    int64_t deadline = zclock_mono () + IO_TIMEOUT_S * 1000;
    while (true) {
        s_post (fx, "application/xml", "<MSG/>", &reply);
        int status = reply.status;
        s_reply_free (&reply);
        if (status == 200)
            break;
        assert_int_equal (status, 0);
        if (zclock_mono () > deadline)
            fail_msg ("the freed connection slot never served again");
    }
    close (idle [1]);
    assert_int_equal (s_mailbox_count (fx), 1);
}

int
main (void)
{
    zsys_init ();
    zsys_handler_set (NULL);
    mx_http_register_metrics ();
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_post_stores_and_registers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_too_large_by_content_length, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_too_large_chunked, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_bad_requests, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_mailbox_unreachable_writes_nothing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_shadow_and_disabled_write_nothing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_proc_state_failure_still_answers_200, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_slow_client_does_not_block_others, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_start_failed_when_port_taken, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_compat_off_by_default, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_compat_token, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_compat_allow_list, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_compat_token_file_checked, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_locked_mailbox_blocks_nothing_else, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_live_on_a_standby, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_per_ip_connection_limit, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
