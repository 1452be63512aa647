/*  Integration tests: hostile input against the real msgxd (PostgreSQL,
    MariaDB mailbox, embedded Kafka mock cluster), end to end.

    - XML attacks in the mailbox (external entities, external DTD,
      parameter entities, billion laughs, quadratic blow-up, oversized):
      each ends DEAD(MALFORMED) with a clear reason, nothing is fetched, and
      the next message is processed; the refusals are counted in /metrics.
    - Hostile shapes of 1 MiB (tools/mx_shape: deep nesting, 80,000-odd
      attributes on one element, split text, a huge name, namespaces,
      distinct names): each ends DEAD(MALFORMED) naming its msgx.codec.*
      bound, counted by bound, and the next message is processed.
    - Encodings (WIRE.md §2): GB18030 declared is decoded, GBK declared is
      a retried CODEC_ERROR, invalid UTF-8 never gets into the mailbox.
    - HTTP attacks on the compat entry (oversized headers and bodies, slow
      client, malformed request line, wrong method and media type) are
      answered 4xx or cut off while the pipeline keeps processing.
    - Start-up: prod with stubs, the mock cluster or weakened producer
      settings exits 78 with one line per problem; the defaults bind
      loopback and a 0600 ipc socket.

    Waiting is on a pipe, a socket or a PostgreSQL NOTIFY: no sleeps.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "mx_shape.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 30000
//  msgx.codec.max-message-bytes and msgx.http.max-body-bytes of the daemon.
#define MAX_MESSAGE 65536
#define MAX_BODY 8192

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    char *dir;
    char msgxd [1024];
    char msgxctl [1024];
    int http_port;
    int compat_port;
    mx_testproc_t *daemon;
    PGconn *conn;                   //  LISTENs to proc_state changes
    char *env [24];
} fixture_t;

//  ---------------------------------------------------------------------
//  Fixture: one daemon with the test mailbox, HTTP on a free port

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    assert_non_null (fx);
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    snprintf (fx->msgxd, sizeof fx->msgxd, "%s/cmd/msgxd", build);
    snprintf (fx->msgxctl, sizeof fx->msgxctl, "%s/cmd/msgxctl", build);
    fx->pg = mx_testpg_new ();
    fx->mb = mx_testmb_new ();
    fx->dir = mx_testenv_tmpdir ();
    fx->http_port = mx_testenv_free_port ();
    int n = 0;
    fx->env [n++] = zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (fx->pg));
    fx->env [n++] = zsys_sprintf ("MSGX_ADMIN_ENDPOINT=ipc://%s/admin.sock", fx->dir);
    fx->env [n++] = strdup ("MSGX_PIPELINE_AUTOSTART=true");
    fx->env [n++] = strdup ("MSGX_PROFILE=dev");
    fx->env [n++] = zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", fx->http_port);
    do
        fx->compat_port = mx_testenv_free_port ();
    while (fx->compat_port == fx->http_port);
    fx->env [n++] = strdup ("MSGX_HTTP_COMPAT_ENABLED=true");
    fx->env [n++] = zsys_sprintf ("MSGX_HTTP_COMPAT_BIND=127.0.0.1:%d", fx->compat_port);
    fx->env [n++] = strdup ("MSGX_HTTP_COMPAT_ALLOW=127.0.0.0/8");
    fx->env [n++] = zsys_sprintf ("MSGX_HTTP_MAX_BODY_BYTES=%d", MAX_BODY);
    fx->env [n++] = zsys_sprintf ("MSGX_CODEC_MAX_MESSAGE_BYTES=%d", MAX_MESSAGE);
    //  The slow client is cut off after a second (msgx.http.idle-timeout).
    fx->env [n++] = strdup ("MSGX_HTTP_IDLE_TIMEOUT=1s");
    //  A CODEC_ERROR gets one attempt, then DEAD(EXHAUSTED): the FIFO moves on.
    fx->env [n++] = strdup ("MSGX_PIPELINE_MAX_ATTEMPTS=1");
    fx->env [n++] = strdup ("MAILBOX_SHARED_MYSQL_ENABLED=true");
    fx->env [n++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_HOST=%s", mx_testmb_host (fx->mb));
    fx->env [n++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_PORT=%d", mx_testmb_port (fx->mb));
    fx->env [n++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_USER=%s", mx_testmb_user (fx->mb));
    fx->env [n++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_PASSWORD=%s", mx_testmb_password (fx->mb));
    fx->env [n++] = zsys_sprintf ("MAILBOX_SHARED_MYSQL_DATABASE=%s", mx_testmb_database (fx->mb));
    fx->env [n++] = strdup ("MAILBOX_SHARED_MYSQL_TIME_ZONE=+00:00");
    fx->env [n] = NULL;
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    if (fx->daemon) {
        //  MX_TEST_DUMP=1: the daemon's log, to see why a message got stuck.
        if (getenv ("MX_TEST_DUMP"))
            fprintf (stderr, "%s", mx_testproc_stderr (fx->daemon));
        mx_testproc_signal (fx->daemon, SIGTERM);
        int wstatus = 0;
        if (mx_testproc_wait (fx->daemon, WAIT_MS, &wstatus) == 0)
            assert_int_equal (WEXITSTATUS (wstatus), 0);
        mx_testproc_destroy (&fx->daemon);
    }
    if (fx->conn)
        PQfinish (fx->conn);
    for (int i = 0; fx->env [i]; i++)
        free (fx->env [i]);
    mx_testmb_destroy (&fx->mb);
    mx_testpg_destroy (&fx->pg);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

//  Starts msgxd and a PostgreSQL connection woken by every proc_state change.
static void
s_start_daemon (fixture_t *fx)
{
    const char *argv [] = { fx->msgxd, NULL };
    fx->daemon = mx_testproc_new (argv, (const char *const *) fx->env);
    assert_non_null (fx->daemon);
    if (!mx_testproc_expect_stderr (fx->daemon, "role active", WAIT_MS))
        fail_msg ("msgxd did not become active: %s", mx_testproc_stderr (fx->daemon));
    fx->conn = PQconnectdb (mx_testpg_conninfo (fx->pg));
    assert_int_equal (PQstatus (fx->conn), CONNECTION_OK);
    mx_testpg_exec (fx->conn,
        "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN PERFORM pg_notify ('mx_test', ''); RETURN NEW; END $$;"
        "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON proc_state FOR EACH ROW"
        " EXECUTE FUNCTION mx_test_watch (); LISTEN mx_test;");
}

//  Waits until message id is in a terminal state; returns
//  "STATE|ERROR_CLASS|last_error" (malloc'd).
static char *
s_wait_terminal (fixture_t *fx, int64_t id)
{
    char text [32];
    snprintf (text, sizeof text, "%" PRId64, id);
    const char *params [] = { text };
    mx_testpg_wait_params (fx->conn,
        "SELECT coalesce ((SELECT state IN ('SUCCEEDED', 'SKIPPED', 'DEAD') FROM proc_state"
        " WHERE msg_id = $1), false)", 1, params);
    return mx_testpg_value_params (fx->conn,
        "SELECT state || '|' || coalesce (error_class, '') || '|' || coalesce (last_error, outcome, '')"
        " FROM proc_state WHERE msg_id = $1", 1, params);
}

static void
s_expect_terminal (fixture_t *fx, int64_t id, const char *prefix, const char *words)
{
    char *row = s_wait_terminal (fx, id);
    if (strncmp (row, prefix, strlen (prefix)) != 0 || !strstr (row, words))
        fail_msg ("message %" PRId64 ": '%s', expected '%s' ... '%s'", id, row, prefix, words);
    print_message ("message %" PRId64 ": %.160s\n", id, row);
    free (row);
}

//  ---------------------------------------------------------------------
//  Messages

static const char s_head [] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

static char *
s_meta (int seqn, const char *type, const char *styp)
{
    return zsys_sprintf ("<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260101080000</DTTM>"
                         "<TYPE>%s</TYPE><STYP>%s</STYP></META>", seqn, type, styp);
}

//  A reference list message (ABNR ADD, one record keyed key): SUCCEEDED
//  when the pipeline works.
static char *
s_good (int seqn, const char *key, const char *text)
{
    char *meta = s_meta (seqn, "ABNR", "ADD");
    char *xml = zsys_sprintf ("%s%s<RECS>1</RECS><ABNR><ANRC>%s</ANRC><ARDC>%s</ARDC></ABNR></MSG>",
                              s_head, meta, key, text);
    free (meta);
    return xml;
}

static char *
s_with_doctype (int seqn, const char *doctype, const char *remc)
{
    char *meta = s_meta (seqn, "FLOP", "REMC");
    char *xml = zsys_sprintf ("<?xml version=\"1.0\"?>\n%s\n%s<FLOP><FLID>1</FLID><REMC>%s</REMC></FLOP></MSG>",
                              doctype, meta, remc);
    free (meta);
    return xml;
}

//  A listening socket that must never see a connection.
static int
s_trap (int *port)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true (fd >= 0);
    struct sockaddr_in address = { .sin_family = AF_INET };
    address.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    assert_int_equal (bind (fd, (struct sockaddr *) &address, sizeof address), 0);
    assert_int_equal (listen (fd, 8), 0);
    socklen_t length = sizeof address;
    assert_int_equal (getsockname (fd, (struct sockaddr *) &address, &length), 0);
    *port = ntohs (address.sin_port);
    return fd;
}

//  ---------------------------------------------------------------------
//  HTTP, over plain sockets

static int
s_dial (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    assert_true (fd >= 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if (connect (fd, (struct sockaddr *) &addr, sizeof addr))
        fail_msg ("connect to 127.0.0.1:%d: %s", port, strerror (errno));
    return fd;
}

static bool
s_write (int fd, const void *data, size_t size)
{
    const char *at = data;
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

//  Everything the server sends until it closes, waiting at most
//  timeout_ms; *closed says whether it did close. Returns the status of
//  the first response line (0 for none) and the text in *text (malloc'd).
static int
s_read_all (int fd, int timeout_ms, bool *closed, char **text)
{
    size_t size = 0, capacity = 4096;
    char *data = malloc (capacity);
    assert_non_null (data);
    *closed = false;
    int64_t deadline = zclock_mono () + timeout_ms;
    while (true) {
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            break;
        struct pollfd item = { fd, POLLIN, 0 };
        int rc = poll (&item, 1, (int) left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            break;
        if (size + 1 >= capacity) {
            capacity *= 2;
            data = realloc (data, capacity);
            assert_non_null (data);
        }
        ssize_t got = recv (fd, data + size, capacity - size - 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            *closed = true;         //  end of stream, or reset
            break;
        }
        size += (size_t) got;
    }
    data [size] = '\0';
    int status = 0;
    if (sscanf (data, "HTTP/1.%*d %d", &status) != 1)
        status = 0;
    *text = data;
    return status;
}

//  One raw request, answer read until the server closes.
static int
s_exchange (fixture_t *fx, const void *request, size_t size, char **text)
{
    //  GET (health, metrics) to the service bind, the rest to the compat entry's.
    int fd = s_dial (strncmp ((const char *) request, "GET ", 4) == 0 ? fx->http_port : fx->compat_port);
    s_write (fd, request, size);
    bool closed;
    int status = s_read_all (fd, WAIT_MS, &closed, text);
    close (fd);
    if (!closed)
        fail_msg ("the server kept the connection open: %s", *text);
    return status;
}

static int
s_post (fixture_t *fx, const char *content_type, const char *body, size_t size, char **text)
{
    char *head = zsys_sprintf ("POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                               "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n", content_type, size);
    size_t head_length = strlen (head);
    char *request = malloc (head_length + size);
    memcpy (request, head, head_length);
    memcpy (request + head_length, body, size);
    int status = s_exchange (fx, request, head_length + size, text);
    free (request);
    free (head);
    return status;
}

static int64_t
s_mailbox_count (fixture_t *fx)
{
    MYSQL *mysql = mx_testmb_connect (fx->mb);
    assert_int_equal (mysql_query (mysql, "SELECT COUNT(*) FROM CMINMSGS"), 0);
    MYSQL_RES *rows = mysql_store_result (mysql);
    int64_t count = strtoll (mysql_fetch_row (rows) [0], NULL, 10);
    mysql_free_result (rows);
    mysql_close (mysql);
    return count;
}

//  Sum of the /metrics samples whose line starts with prefix and contains
//  words (NULL: any), -1 if there is none.
static double
s_metric (fixture_t *fx, const char *prefix, const char *words)
{
    char *text = NULL;
    const char *request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal (s_exchange (fx, request, strlen (request), &text), 200);
    double sum = -1;
    for (char *line = strtok (text, "\n"); line; line = strtok (NULL, "\n"))
        if (strncmp (line, prefix, strlen (prefix)) == 0 && (!words || strstr (line, words))) {
            print_message ("%s\n", line);
            sum = (sum < 0 ? 0 : sum) + strtod (strrchr (line, ' ') + 1, NULL);
        }
    free (text);
    return sum;
}

//  ---------------------------------------------------------------------

//  XML attacks through the mailbox, in FIFO order, each followed by a
//  good message that must succeed.
static void
test_xml_attacks_end_dead_and_the_fifo_goes_on (void **state)
{
    fixture_t *fx = *state;
    int trap_port;
    int trap = s_trap (&trap_port);
    char *doctype [6];
    doctype [0] = strdup ("<!DOCTYPE MSG [ <!ENTITY xxe SYSTEM \"file:///etc/passwd\"> ]>");
    doctype [1] = zsys_sprintf ("<!DOCTYPE MSG [ <!ENTITY xxe SYSTEM \"http://127.0.0.1:%d/x\"> ]>", trap_port);
    doctype [2] = zsys_sprintf ("<!DOCTYPE MSG SYSTEM \"http://127.0.0.1:%d/evil.dtd\">", trap_port);
    doctype [3] = zsys_sprintf ("<!DOCTYPE MSG [ <!ENTITY %% p SYSTEM \"http://127.0.0.1:%d/p.dtd\"> %%p; ]>",
                                trap_port);
    //  Billion laughs: 10^9 "lol" if it were ever expanded.
    char laughs [2048] = "<!DOCTYPE MSG [ <!ENTITY l0 \"lol\">";
    for (int level = 1; level <= 9; level++) {
        size_t used = strlen (laughs);
        used += (size_t) snprintf (laughs + used, sizeof laughs - used, " <!ENTITY l%d \"", level);
        for (int i = 0; i < 10; i++)
            used += (size_t) snprintf (laughs + used, sizeof laughs - used, "&l%d;", level - 1);
        snprintf (laughs + used, sizeof laughs - used, "\">");
    }
    strcat (laughs, " ]>");
    doctype [4] = strdup (laughs);
    //  Quadratic blow-up: one 20 KB entity referenced 1000 times (20 MB).
    char *big = malloc (20001);
    memset (big, 'a', 20000);
    big [20000] = '\0';
    doctype [5] = zsys_sprintf ("<!DOCTYPE MSG [ <!ENTITY a \"%s\"> ]>", big);
    free (big);
    char *refs = malloc (3 * 1000 + 1);
    for (int i = 0; i < 1000; i++)
        memcpy (refs + 3 * i, "&a;", 3);
    refs [3000] = '\0';
    const char *remc [6] = { "&xxe;", "&xxe;", "x", "x", "&l9;", refs };
    const char *names [6] = { "external entity (file)", "external entity (http)", "external DTD (http)",
                              "parameter entity (http)", "billion laughs", "quadratic blow-up" };

    s_start_daemon (fx);
    int64_t id = 0;
    int seqn = 100;
    for (int i = 0; i < 6; i++) {
        char *xml = s_with_doctype (++seqn, doctype [i], remc [i]);
        assert_true (strlen (xml) < MAX_MESSAGE);
        int64_t bad = mx_testmb_insert (fx->mb, ++id, xml, 1767254400000LL);
        free (xml);
        char key [16];
        snprintf (key, sizeof key, "K%d", i);
        xml = s_good (++seqn, key, names [i]);
        int64_t good = mx_testmb_insert (fx->mb, ++id, xml, 1767254400000LL);
        free (xml);
        s_expect_terminal (fx, bad, "DEAD|MALFORMED|", "DOCTYPE not allowed");
        s_expect_terminal (fx, good, "SUCCEEDED||", "");
        free (doctype [i]);
    }
    free (refs);
    //  Nothing of /etc/passwd anywhere, nothing fetched.
    char *leaked = mx_testpg_value (fx->conn, "SELECT count(*) FROM proc_state"
                                              " WHERE last_error LIKE '%root:%'");
    assert_string_equal (leaked, "0");
    free (leaked);
    assert_int_equal (accept (trap, NULL, NULL), -1);
    assert_true (errno == EAGAIN || errno == EWOULDBLOCK);
    close (trap);

    //  Oversized: refused on its length, before any parsing.
    char *huge = malloc (MAX_MESSAGE + 2);
    char *meta = s_meta (++seqn, "FLOP", "REMC");
    int head = snprintf (huge, MAX_MESSAGE + 2, "%s<FLOP><FLID>1</FLID><REMC>", meta);
    free (meta);
    memset (huge + head, 'x', (size_t) (MAX_MESSAGE + 1 - head));
    huge [MAX_MESSAGE + 1] = '\0';
    memcpy (huge + MAX_MESSAGE + 1 - 20, "</REMC></FLOP></MSG>", 20);
    int64_t oversized = mx_testmb_insert (fx->mb, ++id, huge, 1767254400000LL);
    free (huge);
    char *xml = s_good (++seqn, "K6", "after oversized");
    int64_t good = mx_testmb_insert (fx->mb, ++id, xml, 1767254400000LL);
    free (xml);
    s_expect_terminal (fx, oversized, "DEAD|MALFORMED|",
                       "is larger than msgx.codec.max-message-bytes (65536)");
    s_expect_terminal (fx, good, "SUCCEEDED||", "");

    //  Counted: every attack is a dead message, by type and by class.
    double dead = s_metric (fx, "msgx_messages_total{", "state=\"DEAD\"");
    if (dead != 7)
        fail_msg ("msgx_messages_total{state=\"DEAD\"} sums to %g, expected 7", dead);
    double malformed = s_metric (fx, "msgx_messages_dead_total{", "class=\"MALFORMED\"");
    if (malformed != 7)
        fail_msg ("msgx_messages_dead_total{class=\"MALFORMED\"} is %g, expected 7", malformed);
}

//  Hostile shapes through the whole daemon, in FIFO order, each followed
//  by a good message that must succeed: the shape check refuses each on
//  its bound before libxml2 sees it, so none holds the FIFO.
static void
test_hostile_shapes_end_dead_and_the_fifo_goes_on (void **state)
{
    fixture_t *fx = *state;
    //  Room for shapes of 1 MiB.
    size_t big = (size_t) 2 << 20;
    for (int i = 0; fx->env [i]; i++)
        if (strncmp (fx->env [i], "MSGX_CODEC_MAX_MESSAGE_BYTES=", 29) == 0) {
            free (fx->env [i]);
            fx->env [i] = zsys_sprintf ("MSGX_CODEC_MAX_MESSAGE_BYTES=%zu", big);
        }
    struct {
        mx_shape_kind_t kind;
        size_t bytes;
        const char *bound;
    } shapes [] = {
        //  848 KiB: about 80,000 attributes, the message that held the FIFO 11 s.
        { MX_SHAPE_WIDE,       848 << 10, "max-attributes" },
        { MX_SHAPE_DEEP,       1 << 20,   "max-depth" },
        { MX_SHAPE_PIECES,     1 << 20,   "max-text-pieces" },
        { MX_SHAPE_NAME,       1 << 20,   "max-name-length" },
        { MX_SHAPE_NAMESPACES, 1 << 20,   "max-namespaces" },
        { MX_SHAPE_DISTINCT,   1 << 20,   "max-distinct-names" },
    };
    size_t count = sizeof shapes / sizeof shapes [0];
    s_start_daemon (fx);
    int64_t id = 0;
    int seqn = 300;
    for (size_t i = 0; i < count; i++) {
        size_t size;
        char *xml = mx_shape_make (shapes [i].kind, shapes [i].bytes, &size);
        assert_non_null (xml);
        int64_t bad = mx_testmb_insert (fx->mb, ++id, xml, 1767254400000LL);
        free (xml);
        char key [16];
        snprintf (key, sizeof key, "S%zu", i);
        xml = s_good (++seqn, key, mx_shape_name (shapes [i].kind));
        int64_t good = mx_testmb_insert (fx->mb, ++id, xml, 1767254400000LL);
        free (xml);
        char words [64];
        snprintf (words, sizeof words, "msgx.codec.%s", shapes [i].bound);
        s_expect_terminal (fx, bad, "DEAD|MALFORMED|", words);
        s_expect_terminal (fx, good, "SUCCEEDED||", "");
    }
    //  Counted by bound, and as dead MALFORMED messages.
    for (size_t i = 0; i < count; i++) {
        char label [64];
        snprintf (label, sizeof label, "bound=\"%s\"", shapes [i].bound);
        double refused = s_metric (fx, "msgx_codec_refused_total{", label);
        if (refused < 1)
            fail_msg ("msgx_codec_refused_total{%s} is %g, expected at least 1", label, refused);
    }
    //  msgxctl show decodes under the same bounds: the wide message (ID 1)
    //  is refused with the bound's name, at once.
    char *endpoint = zsys_sprintf ("ipc://%s/admin.sock", fx->dir);
    const char *argv [] = { fx->msgxctl, "--endpoint", endpoint, "show", "1", "--json", NULL };
    char *out = NULL, *err = NULL;
    assert_int_equal (mx_testproc_run (argv, NULL, WAIT_MS, &out, &err), 0);
    json_t *shown = json_loads (out, 0, NULL);
    assert_non_null (shown);
    const char *why = json_string_value (json_object_get (json_object_get (shown, "decoded"), "error"));
    if (!why || !strstr (why, "msgx.codec.max-attributes"))
        fail_msg ("show decoded the wide message without its bound: %s", out);
    json_decref (shown);
    free (out);
    free (err);
    free (endpoint);
    double malformed = s_metric (fx, "msgx_messages_dead_total{", "class=\"MALFORMED\"");
    if (malformed != (double) count)
        fail_msg ("msgx_messages_dead_total{class=\"MALFORMED\"} is %g, expected %zu",
                  malformed, count);
}

//  WIRE.md §2 on encodings, through the daemon.
static void
test_encodings_per_wire_format (void **state)
{
    fixture_t *fx = *state;
    s_start_daemon (fx);
    const char *chinese = "\xe4\xba\xba\xe5\x91\x98\xe5\xae\x89\xe6\x8e\x92";     //  人员安排

    //  GBK declared: CODEC_ERROR, retried (one attempt here), then
    //  DEAD(EXHAUSTED) and replayable; the next message goes on.
    char *meta = s_meta (201, "ABNR", "ADD");
    char *xml = zsys_sprintf ("<?xml version=\"1.0\" encoding=\"GBK\"?>%s<RECS>1</RECS><ABNR>"
                              "<ANRC>G1</ANRC><ARDC>x</ARDC></ABNR></MSG>", meta);
    free (meta);
    int64_t gbk = mx_testmb_insert (fx->mb, 1, xml, 1767254400000LL);
    free (xml);
    xml = s_good (202, "G2", chinese);
    int64_t good = mx_testmb_insert (fx->mb, 2, xml, 1767254400000LL);
    free (xml);
    s_expect_terminal (fx, gbk, "DEAD|EXHAUSTED|", "");
    s_expect_terminal (fx, good, "SUCCEEDED||", "");
    char *value = mx_testpg_value (fx->conn, "SELECT value->>'ARDC' FROM ref_master"
                                             " WHERE rtype = 'ABNR' AND rkey = 'G2'");
    assert_string_equal (value, chinese);
    free (value);

    //  The compat entry refuses GB18030 bytes (not UTF-8) and a GB18030
    //  charset: invalid UTF-8 never reaches the mailbox.
    char *gb_body = zsys_sprintf ("<?xml version=\"1.0\" encoding=\"GB18030\"?>%s",
                                  "<MSG><META><SNDR>AODB</SNDR><SEQN>203</SEQN><DTTM>20260101080000</DTTM>"
                                  "<TYPE>ABNR</TYPE><STYP>ADD</STYP></META><RECS>1</RECS><ABNR>"
                                  "<ANRC>G3</ANRC><ARDC>\xe4\xba\xba\xe5\x91\x98</ARDC></ABNR></MSG>");
    size_t gb_size;
    char *gb = mx_testenv_to_gb18030 (gb_body, &gb_size);
    char *text = NULL;
    assert_int_equal (s_post (fx, "application/xml", gb, gb_size, &text), 400);
    assert_non_null (strstr (text, "body is not valid UTF-8"));
    free (text);
    assert_int_equal (s_post (fx, "text/xml; charset=gb18030", gb_body, strlen (gb_body), &text), 415);
    assert_non_null (strstr (text, "unsupported charset 'gb18030'"));
    free (text);
    free (gb);
    assert_int_equal (s_mailbox_count (fx), 2);

    //  GB18030 declared over a utf8mb4 mailbox: the text arrives as UTF-8
    //  and must decode to the same characters.
    int64_t declared = mx_testmb_insert (fx->mb, 3, gb_body, 1767254400000LL);
    free (gb_body);
    s_expect_terminal (fx, declared, "SUCCEEDED||", "");
    value = mx_testpg_value (fx->conn, "SELECT value->>'ARDC' FROM ref_master"
                                       " WHERE rtype = 'ABNR' AND rkey = 'G3'");
    char stored [256];
    snprintf (stored, sizeof stored, "%s", value);
    free (value);
    if (strcmp (stored, "\xe4\xba\xba\xe5\x91\x98") != 0)
        fail_msg ("GB18030-declared text stored as '%s', expected '\xe4\xba\xba\xe5\x91\x98'", stored);
}

//  Error lines quote the input; they must still be storable (UTF-8) or the
//  message's terminal write fails and the FIFO stops behind it.
static void
test_refusals_quoting_multibyte_input_do_not_stop_the_fifo (void **state)
{
    fixture_t *fx = *state;
    s_start_daemon (fx);
    //  An encoding name of 16 three-byte characters: cut at 47 bytes.
    char name [64] = "";
    for (int i = 0; i < 16; i++)
        strcat (name, "\xe4\xba\xba");
    char *meta = s_meta (301, "ABNR", "ADD");
    char *xml = zsys_sprintf ("<?xml version=\"1.0\" encoding=\"%s\"?>%s<RECS>0</RECS></MSG>", name, meta);
    free (meta);
    mx_testmb_insert (fx->mb, 1, xml, 1767254400000LL);
    free (xml);
    //  An unterminated comment full of Chinese text: libxml2 quotes it.
    char comment [1024] = "";
    for (int i = 0; i < 100; i++)
        strcat (comment, i % 2 ? "\xe4\xba\xba" : "\xe5\x91\x98" "a");
    meta = s_meta (302, "ABNR", "ADD");
    xml = zsys_sprintf ("%s%s<!--%s", s_head, meta, comment);
    free (meta);
    mx_testmb_insert (fx->mb, 2, xml, 1767254400000LL);
    free (xml);
    xml = s_good (303, "U1", "after");
    mx_testmb_insert (fx->mb, 3, xml, 1767254400000LL);
    free (xml);
    s_expect_terminal (fx, 1, "DEAD|EXHAUSTED|", "");
    s_expect_terminal (fx, 2, "DEAD|MALFORMED|", "not well-formed XML");
    s_expect_terminal (fx, 3, "SUCCEEDED||", "");
}

//  The compat entry under attack while the pipeline works.
static void
test_http_attacks_are_refused_while_the_pipeline_works (void **state)
{
    fixture_t *fx = *state;
    s_start_daemon (fx);

    //  A slow client: half a request line, then nothing.
    int slow = s_dial (fx->compat_port);
    const char *half = "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nContent-Ty";
    assert_true (s_write (slow, half, strlen (half)));

    char *text = NULL;
    //  Oversized headers: MHD's per-connection memory is 32 KiB.
    size_t pad = 64 * 1024;
    char *request = malloc (pad + 256);
    int length = snprintf (request, 256, "GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: ");
    memset (request + length, 'p', pad);
    memcpy (request + length + pad, "\r\n\r\n", 4);
    int status = s_exchange (fx, request, (size_t) length + pad + 4, &text);
    print_message ("oversized headers: answer %d\n", status);
    if (status != 431 && status != 413 && status != 400)
        fail_msg ("oversized headers: %d %s", status, text);
    free (text);
    //  Oversized request line.
    length = snprintf (request, 256, "GET /");
    memset (request + length, 'u', pad);
    memcpy (request + length + pad, " HTTP/1.1\r\nHost: x\r\n\r\n", 22);
    status = s_exchange (fx, request, (size_t) length + pad + 22, &text);
    print_message ("oversized request line: answer %d\n", status);
    if (status != 414 && status != 431 && status != 413 && status != 400)
        fail_msg ("oversized request line: %d %s", status, text);
    free (text);
    free (request);
    //  Malformed request lines.
    const char *garbage [] = { "GARBAGE\r\n\r\n", "POST\r\n\r\n", "\x01\x02\x03 / HTTP/1.1\r\n\r\n",
                               "POST /cminmsgs/send HTTP/9.9\r\nHost: x\r\n\r\n" };
    //  libmicrohttpd answers 4xx, or (for a line that is not HTTP at all)
    //  closes the connection without an answer; either way nothing is kept.
    for (size_t i = 0; i < sizeof garbage / sizeof garbage [0]; i++) {
        status = s_exchange (fx, garbage [i], strlen (garbage [i]), &text);
        print_message ("malformed request %zu: answer %d, closed\n", i, status);
        if (status != 0 && (status < 400 || status > 505))
            fail_msg ("malformed request %zu answered %d: %s", i, status, text);
        free (text);
    }
    //  Wrong method, wrong media type, body too large (refused on its
    //  Content-Length: the body is never sent), invalid UTF-8.
    const char *put = "PUT /cminmsgs/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal (s_exchange (fx, put, strlen (put), &text), 405);
    free (text);
    assert_int_equal (s_post (fx, "application/json", "{}", 2, &text), 415);
    free (text);
    const char *large = "POST /cminmsgs/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                        "Content-Type: application/xml\r\nContent-Length: 8193\r\n\r\n";
    assert_int_equal (s_exchange (fx, large, strlen (large), &text), 413);
    assert_non_null (strstr (text, "msgx.http.max-body-bytes"));
    free (text);
    assert_int_equal (s_post (fx, "application/xml", "<MSG>\xff</MSG>", 12, &text), 400);
    free (text);
    assert_int_equal (s_mailbox_count (fx), 0);

    //  Meanwhile a message through the mailbox and one through the compat
    //  entry both succeed.
    char *xml = s_good (401, "H1", "during the attack");
    int64_t polled = mx_testmb_insert (fx->mb, 0, xml, 1767254400000LL);
    free (xml);
    s_expect_terminal (fx, polled, "SUCCEEDED||", "");
    xml = s_good (402, "H2", "through the compat entry");
    assert_int_equal (s_post (fx, "application/xml", xml, strlen (xml), &text), 200);
    int64_t posted = strtoll (strstr (text, "\r\n\r\n") + 4, NULL, 10);
    free (text);
    free (xml);
    assert_true (posted > polled);
    s_expect_terminal (fx, posted, "SUCCEEDED||", "");

    //  The slow client is cut off by the server after msgx.http.idle-timeout.
    bool closed;
    status = s_read_all (slow, WAIT_MS, &closed, &text);
    assert_true (closed);
    print_message ("slow client: closed by the server (answer %d)\n", status);
    free (text);
    close (slow);
}

//  prod refuses stubs, the mock cluster and weakened producer settings:
//  one line per problem, exit 78.
static void
test_prod_refuses_unsafe_settings (void **state)
{
    fixture_t *fx = *state;
    const char *argv [] = { fx->msgxd, NULL };
    const char *env [] = { "MSGX_PROFILE=prod", "MSGX_STUBS=true", "MSGX_KAFKA_ACKS=1",
                           "MSGX_KAFKA_ENABLE_IDEMPOTENCE=false", "MSGX_KAFKA_MAX_IN_FLIGHT=6",
                           "MSGX_KAFKA_SECURITY_ALLOW_PLAINTEXT=true",
                           "MSGX_PG_CONNINFO=host=127.0.0.1 port=1 dbname=none sslmode=verify-full", NULL };
    char *out = NULL, *err = NULL;
    assert_int_equal (mx_testproc_run (argv, env, WAIT_MS, &out, &err), 78);
    const char *keys [] = { "msgx.stubs", "msgx.kafka.bootstrap-servers", "msgx.kafka.acks",
                            "msgx.kafka.enable-idempotence", "msgx.kafka.max-in-flight" };
    for (size_t i = 0; i < sizeof keys / sizeof keys [0]; i++) {
        //  Each problem on a line of its own naming the key.
        int lines = 0;
        for (char *line = err; line && *line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL) {
            char *end = strchr (line, '\n');
            size_t size = end ? (size_t) (end - line) : strlen (line);
            char *copy = strndup (line, size);
            if (strstr (copy, keys [i]))
                lines++;
            free (copy);
        }
        if (lines != 1)
            fail_msg ("%s named on %d lines:\n%s", keys [i], lines, err);
    }
    assert_non_null (strstr (err, "5 configuration problems"));
    free (out);
    free (err);
}

//  Defaults: HTTP on loopback, admin on an ipc socket.
static void
test_defaults_bind_loopback (void **state)
{
    fixture_t *fx = *state;
    const char *argv [] = { fx->msgxd, "--check-config", NULL };
    char *out = NULL, *err = NULL;
    assert_int_equal (mx_testproc_run (argv, NULL, WAIT_MS, &out, &err), 0);
    //  The JSON, then "msgxd: configuration OK".
    json_t *config = json_loadb (out, strlen (out), JSON_DISABLE_EOF_CHECK, NULL);
    if (!config)
        fail_msg ("--check-config did not print JSON: %s", out);
    json_t *bind = json_object_get (config, "msgx.http.bind");
    json_t *admin = json_object_get (config, "msgx.admin.endpoint");
    assert_non_null (bind);
    assert_non_null (admin);
    assert_true (strncmp (json_string_value (bind), "127.0.0.1:", 10) == 0);
    assert_true (strncmp (json_string_value (admin), "ipc://", 6) == 0);
    //  The write entry: off, and on loopback of its own when turned on.
    assert_true (json_is_false (json_object_get (config, "msgx.http.compat.enabled")));
    assert_string_equal (json_string_value (json_object_get (config, "msgx.http.compat.bind")),
                         "127.0.0.1:8081");
    json_decref (config);
    free (out);
    free (err);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_xml_attacks_end_dead_and_the_fifo_goes_on, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_hostile_shapes_end_dead_and_the_fifo_goes_on,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_encodings_per_wire_format, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_refusals_quoting_multibyte_input_do_not_stop_the_fifo,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_http_attacks_are_refused_while_the_pipeline_works,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_prod_refuses_unsafe_settings, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_defaults_bind_loopback, s_setup, s_teardown),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
