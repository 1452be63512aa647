/*  Integration tests of msgxctl as an operator meets it: help for every
    verb, every verb's bad arguments refused before anything is sent, one
    exit code for each way a call can fail, and human or JSON output from a
    running msgxd.

    The failures a healthy daemon never shows (no reply after the request
    went out, an unreadable reply, a socket the caller may not use) come
    from a peer of the test's own on a real ZeroMQ socket; the rest run
    against the real msgxd and the test PostgreSQL.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 20000
#define MAX_WORDS 16

typedef struct {
    char *dir;
    char msgxd [1024];
    char msgxctl [1024];
} fixture_t;

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    const char *build = getenv ("MX_BUILD_DIR");
    assert_non_null (build);
    snprintf (fx->msgxd, sizeof fx->msgxd, "%s/cmd/msgxd", build);
    snprintf (fx->msgxctl, sizeof fx->msgxctl, "%s/cmd/msgxctl", build);
    fx->dir = mx_testenv_tmpdir ();
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

//  argv: prefix words (may be NULL), msgxctl, then words up to NULL.
static void
s_argv (fixture_t *fx, const char *const *prefix, const char *const *words, const char **argv)
{
    int n = 0;
    for (int i = 0; prefix && prefix [i]; i++)
        argv [n++] = prefix [i];
    argv [n++] = fx->msgxctl;
    for (int i = 0; words [i]; i++) {
        assert_true (n < MAX_WORDS * 2 - 1);
        argv [n++] = words [i];
    }
    argv [n] = NULL;
}

static int
s_ctl (fixture_t *fx, const char *const *words, char **out, char **err)
{
    const char *argv [MAX_WORDS * 2];
    s_argv (fx, NULL, words, argv);
    return mx_testproc_run (argv, NULL, WAIT_MS, out, err);
}

static char *
s_words_text (const char *const *words)
{
    char *text = strdup ("msgxctl");
    for (int i = 0; words [i]; i++) {
        char *longer = zsys_sprintf ("%s %s", text, words [i]);
        free (text);
        text = longer;
    }
    return text;
}

//  ---------------------------------------------------------------------
//  Help

static void
test_every_verb_explains_itself (void **state)
{
    fixture_t *fx = *state;
    //  "help NAME", then the verb as typed with --help: its synopsis.
    const char *verbs [][4] = {
        { "status", "status", "--help", NULL },
        { "show", "show", "--help", NULL },
        { "flight", "flight", "--help", NULL },
        { "pause", "pause", "--help", NULL },
        { "resume", "resume", "--help", NULL },
        { "replay", "replay", "--help", NULL },
        { "replay-events", "replay", "--events", "--help" },
        { "cutover", "cutover", "--help", NULL },
        { "dead", "dead", "list", "--help" },
        { "backfill", "backfill", "recover", "--help" },
        { "request", "request", "--help", NULL },
        { "log-level", "log-level", "--help", NULL },
    };
    const char *synopses [] = {
        "status [--watch", "show MSG_ID", "flight FLID [--history]", "pause [--json]", "resume [--json]", "replay --class C",
        "replay --events --ids", "cutover min|zero|max|ID", "dead list [--events]",
        "backfill recover --all", "request schedule --from T", "log-level LEVEL [ACTOR]",
    };
    for (size_t i = 0; i < sizeof verbs / sizeof verbs [0]; i++) {
        char *out = NULL, *err = NULL;
        const char *help [] = { "help", verbs [i][0], NULL };
        assert_int_equal (s_ctl (fx, help, &out, &err), 0);
        if (!strstr (out, synopses [i]) || !strstr (out, "exit codes:") || !strstr (out, "usage: msgxctl"))
            fail_msg ("msgxctl help %s:\n%s", verbs [i][0], out);
        free (out);
        free (err);
        assert_int_equal (s_ctl (fx, verbs [i] + 1, &out, &err), 0);
        if (!strstr (out, synopses [i]) || *err)
            fail_msg ("msgxctl %s --help:\n%s%s", verbs [i][1], out, err);
        free (out);
        free (err);
    }
    //  "-h" too, before or after other arguments, and for a bare two-word verb.
    const char *cases [][4] = {
        { "show", "12", "-h", NULL }, { "dead", "--help", NULL }, { "backfill", "-h", NULL },
        { "request", "schedule", "--help", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *out = NULL, *err = NULL;
        assert_int_equal (s_ctl (fx, cases [i], &out, &err), 0);
        assert_non_null (strstr (out, "usage: msgxctl"));
        free (out);
        free (err);
    }

    //  The overview names every verb and every exit code.
    char *out = NULL, *err = NULL;
    const char *overview [] = { "help", NULL };
    assert_int_equal (s_ctl (fx, overview, &out, &err), 0);
    for (size_t i = 0; i < sizeof synopses / sizeof synopses [0]; i++)
        assert_non_null (strstr (out, synopses [i]));
    const char *codes [] = { "0 ok", "1 refused", "2 usage", "3 cannot connect", "4 permission denied",
                             "5 timed out after sending", "6 unreadable reply" };
    for (size_t i = 0; i < sizeof codes / sizeof codes [0]; i++)
        assert_non_null (strstr (out, codes [i]));
    free (out);
    free (err);

    const char *unknown [] = { "help", "frobnicate", NULL };
    assert_int_equal (s_ctl (fx, unknown, &out, &err), 2);
    assert_non_null (strstr (err, "unknown command 'frobnicate'"));
    free (out);
    free (err);
}

//  ---------------------------------------------------------------------
//  Bad arguments: exit 2 with the reason, before any contact (the
//  endpoint has no daemon, so a call would exit 3).

static void
test_every_verb_refuses_bad_arguments (void **state)
{
    fixture_t *fx = *state;
    char *endpoint = zsys_sprintf ("ipc://%s/nobody.sock", fx->dir);
    struct {
        const char *words [8];
        const char *reason;
    } cases [] = {
        { { "status", "--bogus" }, "unexpected argument '--bogus'" },
        { { "status", "--watch", "--interval", "5x" }, "--interval wants a duration" },
        { { "status", "--interval", "1s" }, "--interval goes with status --watch" },
        { { "show" }, "show needs a message ID" },
        { { "show", "12x" }, "'12x' is not a message ID" },
        { { "show", "+12" }, "'+12' is not a message ID" },
        { { "show", "0" }, "'0' is not a message ID" },
        { { "show", "99999999999999999999" }, "is not a message ID" },
        { { "flight" }, "flight needs a FLID" },
        { { "flight", "12x" }, "'12x' is not a FLID" },
        { { "flight", "0" }, "'0' is not a FLID" },
        { { "flight", "--history" }, "flight needs a FLID" },
        { { "flight", "7", "--all" }, "unexpected argument '--all'" },
        { { "pause", "now" }, "unexpected argument 'now'" },
        { { "resume", "--all" }, "unexpected argument '--all'" },
        { { "replay" }, "exactly one of --class C or --id N" },
        { { "replay", "--class", "INFRA", "--id", "3" }, "exactly one of --class C or --id N" },
        { { "replay", "--id", "3x" }, "'3x' is not a message ID" },
        { { "replay", "--id" }, "--id needs at least one message ID" },
        { { "replay", "--events" }, "exactly one of --ids N[,N...] or --all" },
        { { "replay", "--events", "--ids", "4,x" }, "'x' is not an event ID" },
        { { "replay", "--events", "--ids", "4, 5" }, "' 5' is not an event ID" },
        { { "cutover" }, "cutover needs a watermark" },
        { { "cutover", "12abc" }, "neither min, zero, max nor a mailbox ID" },
        { { "dead" }, "'dead' needs 'list'" },
        { { "dead", "list", "--limit", "5x" }, "--limit wants a number of rows from 1 to 10000, not '5x'" },
        { { "dead", "list", "--limit", "0" }, "--limit wants a number of rows" },
        { { "dead", "list", "--limit", "10001" }, "--limit wants a number of rows" },
        { { "dead", "list", "--limit", "-1" }, "--limit wants a number of rows" },
        { { "dead", "list", "--limit" }, "unexpected argument '--limit'" },
        { { "dead", "list", "--after", "x" }, "--after wants the last ID of the previous page" },
        { { "backfill" }, "'backfill' needs 'recover'" },
        { { "backfill", "recover" }, "exactly one of --all or --id N" },
        { { "backfill", "recover", "--id", "0x10" }, "'0x10' is not a message ID" },
        { { "request" }, "request schedule --from" },
        { { "request", "schedule", "--from", "2026-01-01T00:00" }, "request schedule --from" },
        { { "request", "reference" }, "request reference LIST" },
        { { "request", "weather" }, "unexpected argument 'weather'" },
        { { "cutover", "max", "--dry-run", "--yes" }, "cutover: --dry-run or --yes, not both" },
        { { "backfill", "recover", "--all", "--yes", "--dry-run" }, "backfill: --dry-run or --yes, not both" },
        { { "request", "reference", "SLST", "--dry-run", "--yes" }, "request: --dry-run or --yes, not both" },
        { { "request", "reference", "SLST", "--dry" }, "unexpected argument '--dry'" },
        { { "log-level" }, "log-level needs a level" },
        { { "log-level", "loud" }, "'loud' is not a level (debug, info, warn or error)" },
        { { "log-level", "DEBUG" }, "'DEBUG' is not a level" },
        { { "log-level", "debug", "processor", "pump" }, "unexpected argument 'pump'" },
        { { "log-level", "debug", "--all" }, "unexpected argument '--all'" },
        { { "frobnicate" }, "unknown command 'frobnicate'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        const char *words [MAX_WORDS] = { "--endpoint", endpoint };
        for (int j = 0; cases [i].words [j]; j++)
            words [2 + j] = cases [i].words [j];
        char *out = NULL, *err = NULL;
        int code = s_ctl (fx, words, &out, &err);
        if (code != 2 || !strstr (err, cases [i].reason)) {
            char *text = s_words_text (words);
            fail_msg ("%s: exit %d, expected 2 and '%s':\n%s", text, code, cases [i].reason, err);
        }
        free (out);
        free (err);
    }
    //  Global options are as strict.
    const char *timeouts [][4] = { { "--timeout", "5s", "status", NULL }, { "--timeout", "0", "status", NULL },
                                   { "--timeout", "", "status", NULL } };
    for (size_t i = 0; i < sizeof timeouts / sizeof timeouts [0]; i++) {
        char *out = NULL, *err = NULL;
        assert_int_equal (s_ctl (fx, timeouts [i], &out, &err), 2);
        assert_non_null (strstr (err, "--timeout wants milliseconds"));
        free (out);
        free (err);
    }
    free (endpoint);
}

//  ---------------------------------------------------------------------
//  Exit codes, each with its own message

//  msgxctl started; the peer answers with frames (NULL: never), then the
//  exit code. *out and *err are the caller's.
static int
s_against_peer (fixture_t *fx, zsock_t *peer, const char *const *prefix, const char *const *words,
                const char *const *reply, char **request_verb, char **out, char **err)
{
    const char *argv [MAX_WORDS * 2];
    s_argv (fx, prefix, words, argv);
    mx_testproc_t *proc = mx_testproc_new (argv, NULL);
    assert_non_null (proc);
    if (reply) {
        zsock_set_rcvtimeo (peer, WAIT_MS);
        zmsg_t *request = zmsg_recv (peer);
        assert_non_null (request);
        zframe_t *identity = zmsg_pop (request);
        zframe_t *empty = zmsg_pop (request);
        char *verb = zmsg_popstr (request);
        char *args = zmsg_popstr (request);
        assert_non_null (args);
        json_t *parsed = json_loads (args, 0, NULL);
        assert_non_null (parsed);
        assert_non_null (json_string_value (json_object_get (parsed, "os_user")));
        json_decref (parsed);
        free (args);
        if (request_verb)
            *request_verb = verb;
        else
            free (verb);
        zmsg_t *answer = zmsg_new ();
        zmsg_append (answer, &identity);
        zmsg_append (answer, &empty);
        for (int i = 0; reply [i]; i++)
            zmsg_addstr (answer, reply [i]);
        assert_int_equal (zmsg_send (&answer, peer), 0);
        zmsg_destroy (&request);
    }
    int status = 0;
    assert_int_equal (mx_testproc_wait (proc, WAIT_MS, &status), 0);
    *out = strdup (mx_testproc_stdout (proc));
    *err = strdup (mx_testproc_stderr (proc));
    mx_testproc_destroy (&proc);
    assert_true (WIFEXITED (status));
    return WEXITSTATUS (status);
}

static void
test_exit_code_says_why_a_call_failed (void **state)
{
    fixture_t *fx = *state;
    char *out = NULL, *err = NULL;

    //  3: no socket file; a socket file nobody listens on; a tcp port nobody
    //  listens on (no connection, so nothing was sent).
    char *missing = zsys_sprintf ("ipc://%s/missing.sock", fx->dir);
    const char *no_socket [] = { "--endpoint", missing, "pause", NULL };
    assert_int_equal (s_ctl (fx, no_socket, &out, &err), 3);
    assert_non_null (strstr (err, "no socket at"));
    free (out);
    free (err);
    char *stale_path = zsys_sprintf ("%s/stale.sock", fx->dir);
    int stale = socket (AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    snprintf (address.sun_path, sizeof address.sun_path, "%s", stale_path);
    assert_int_equal (bind (stale, (struct sockaddr *) &address, sizeof address), 0);
    char *stale_endpoint = zsys_sprintf ("ipc://%s", stale_path);
    const char *refused [] = { "--endpoint", stale_endpoint, "status", NULL };
    assert_int_equal (s_ctl (fx, refused, &out, &err), 3);
    assert_non_null (strstr (err, "nothing listens on"));
    free (out);
    free (err);
    close (stale);
    char *nobody_tcp = zsys_sprintf ("tcp://127.0.0.1:%d", mx_testenv_free_port ());
    const char *no_tcp [] = { "--endpoint", nobody_tcp, "--timeout", "300", "cutover", "max", NULL };
    assert_int_equal (s_ctl (fx, no_tcp, &out, &err), 3);
    assert_non_null (strstr (err, "no connection made"));
    free (out);
    free (err);

    //  A peer on ipc and one on tcp that take requests.
    char *ipc = zsys_sprintf ("ipc://%s/peer.sock", fx->dir);
    zsock_t *peer = zsock_new_router (ipc);
    assert_non_null (peer);
    int port = mx_testenv_free_port ();
    char *tcp = zsys_sprintf ("tcp://127.0.0.1:%d", port);
    zsock_t *tcp_peer = zsock_new_router (tcp);
    assert_non_null (tcp_peer);

    //  4: the socket belongs to someone else and the caller may not
    //  override file permissions (root without CAP_DAC_OVERRIDE).
    char *peer_path = zsys_sprintf ("%s/peer.sock", fx->dir);
    assert_int_equal (chown (peer_path, 65534, 65534), 0);
    assert_int_equal (chmod (peer_path, 0600), 0);
    const char *unprivileged [] = { "setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", NULL };
    const char *status_ipc [] = { "--endpoint", ipc, "status", NULL };
    assert_int_equal (s_against_peer (fx, peer, unprivileged, status_ipc, NULL, NULL, &out, &err), 4);
    assert_non_null (strstr (err, "permission denied"));
    assert_non_null (strstr (err, "group"));
    free (out);
    free (err);

    //  5: connected, sent, no reply. A verb that changes state may have
    //  applied; a read-only one just took too long.
    const char *pause_ipc [] = { "--endpoint", ipc, "--timeout", "300", "pause", NULL };
    assert_int_equal (s_against_peer (fx, peer, NULL, pause_ipc, NULL, NULL, &out, &err), 5);
    assert_non_null (strstr (err, "after the request was sent"));
    assert_non_null (strstr (err, "may have applied"));
    free (out);
    free (err);
    const char *status_tcp [] = { "--endpoint", tcp, "--timeout", "300", "status", NULL };
    assert_int_equal (s_against_peer (fx, tcp_peer, NULL, status_tcp, NULL, NULL, &out, &err), 5);
    assert_non_null (strstr (err, "after the request was sent"));
    assert_null (strstr (err, "may have applied"));
    free (out);
    free (err);
    //  The unanswered requests wait in the peers; drop them.
    zsock_destroy (&peer);
    zsock_destroy (&tcp_peer);
    peer = zsock_new_router (ipc);
    assert_non_null (peer);

    //  6: a reply that is not the protocol, or OK with a payload that is
    //  not JSON.
    const char *resume [] = { "--endpoint", ipc, "resume", NULL };
    const char *garbage [] = { "WHAT", NULL };
    assert_int_equal (s_against_peer (fx, peer, NULL, resume, garbage, NULL, &out, &err), 6);
    assert_non_null (strstr (err, "unreadable reply"));
    free (out);
    free (err);
    const char *not_json [] = { "OK", "{paused:", NULL };
    assert_int_equal (s_against_peer (fx, peer, NULL, resume, not_json, NULL, &out, &err), 6);
    assert_non_null (strstr (err, "invalid JSON"));
    free (out);
    free (err);

    //  1: refused, with the daemon's reason; the verb on the wire is the
    //  protocol's.
    const char *recover [] = { "--endpoint", ipc, "backfill", "recover", "--all", NULL };
    const char *no [] = { "ERR", "not active: this instance is a standby", NULL };
    char *verb = NULL;
    assert_int_equal (s_against_peer (fx, peer, NULL, recover, no, &verb, &out, &err), 1);
    assert_string_equal (verb, "backfill-recover");
    assert_non_null (strstr (err, "refused: not active: this instance is a standby"));
    free (verb);
    free (out);
    free (err);

    //  Human output by default, the reply as it is with --json.
    const char *request [] = { "--endpoint", ipc, "request", "reference", "SLST", NULL };
    const char *registered [] = { "OK", "{\"id\": 4, \"seqn\": 17, \"state\": \"SENT\"}", NULL };
    assert_int_equal (s_against_peer (fx, peer, NULL, request, registered, NULL, &out, &err), 0);
    assert_string_equal (out, "request 4 registered: SEQN 17, SENT\n");
    free (out);
    free (err);
    const char *request_json [] = { "--endpoint", ipc, "request", "reference", "SLST", "--json", NULL };
    assert_int_equal (s_against_peer (fx, peer, NULL, request_json, registered, NULL, &out, &err), 0);
    json_t *reply = json_loads (out, 0, NULL);
    assert_non_null (reply);
    assert_int_equal (json_integer_value (json_object_get (reply, "seqn")), 17);
    json_decref (reply);
    free (out);
    free (err);
    const char *cutover [] = { "--endpoint", ipc, "cutover", "max", "--yes", NULL };
    const char *seeded [] = { "OK", "{\"dry_run\": false, \"watermark\": \"max\", \"w\": 1200,"
                                    " \"message\": \"W seeded to 1200 (cutover 'max')\"}", NULL };
    assert_int_equal (s_against_peer (fx, peer, NULL, cutover, seeded, NULL, &out, &err), 0);
    assert_string_equal (out, "watermark seeded: W=1200 (cutover 'max')\n");
    free (out);
    free (err);

    //  The previews, as a person reads them.
    struct {
        const char *words [8];
        const char *reply;
        const char *human;
    } previews [] = {
        { { "cutover", "max", "--dry-run" },
          "{\"dry_run\": true, \"watermark\": \"max\", \"w\": 1200, \"message\":"
          " \"W would be seeded to 1200 (cutover 'max'); nothing changed\"}",
          "dry run: W would be seeded to 1200 (cutover 'max'); nothing changed\nadd --yes to seed it\n" },
        { { "backfill", "recover", "--all", "--dry-run" },
          "{\"dry_run\": true, \"rearmed\": 0, \"msg_ids\": [7], \"rows\":"
          " [{\"msg_id\": 7, \"reason\": \"EXHAUSTED\", \"error\": \"mailbox down\"}]}",
          "msg_id     abandoned  last error\n7          EXHAUSTED  mailbox down\n"
          "dry run: 1 abandoned mark(s) would be re-armed; nothing changed; add --yes to re-arm\n" },
        { { "request", "reference", "SLST", "--dry-run" },
          "{\"dry_run\": true, \"kind\": \"RQRD\", \"routing\": \"MSGXRQRD\", \"zone\": \"UTC\","
          " \"list\": \"SLST\", \"supersedes\": 3}",
          "dry run: would send RQRD for the reference list SLST through COUTMSGS as MSGXRQRD\n"
          "it replaces the open RQRD request 3 (expired as superseded)\nnothing sent; add --yes to send it\n" },
    };
    for (size_t i = 0; i < sizeof previews / sizeof previews [0]; i++) {
        const char *words [MAX_WORDS] = { "--endpoint", ipc };
        for (int j = 0; previews [i].words [j]; j++)
            words [2 + j] = previews [i].words [j];
        const char *answer [] = { "OK", previews [i].reply, NULL };
        assert_int_equal (s_against_peer (fx, peer, NULL, words, answer, NULL, &out, &err), 0);
        if (strcmp (out, previews [i].human) != 0)
            fail_msg ("%s %s: expected\n%s\ngot\n%s", previews [i].words [0], previews [i].words [1],
                      previews [i].human, out);
        free (out);
        free (err);
    }

    zsock_destroy (&peer);
    free (peer_path);
    free (tcp);
    free (ipc);
    free (nobody_tcp);
    free (stale_endpoint);
    free (stale_path);
    free (missing);
}

//  ---------------------------------------------------------------------
//  A running daemon

static void
test_human_and_json_output_from_a_running_daemon (void **state)
{
    fixture_t *fx = *state;
    mx_testpg_t *pg = mx_testpg_new ();
    char *vars [6] = { 0 };
    vars [0] = zsys_sprintf ("MSGX_PG_CONNINFO=%s", mx_testpg_conninfo (pg));
    vars [1] = zsys_sprintf ("MSGX_ADMIN_ENDPOINT=ipc://%s/admin.sock", fx->dir);
    vars [2] = strdup ("MSGX_PIPELINE_AUTOSTART=true");
    vars [3] = strdup ("MSGX_PROFILE=dev");
    vars [4] = zsys_sprintf ("MSGX_HTTP_BIND=127.0.0.1:%d", mx_testenv_free_port ());
    const char *argv [] = { fx->msgxd, NULL };
    mx_testproc_t *daemon = mx_testproc_new (argv, (const char *const *) vars);
    assert_non_null (daemon);
    assert_non_null (mx_testproc_expect_stderr (daemon, "role active", WAIT_MS));
    char *endpoint = zsys_sprintf ("ipc://%s/admin.sock", fx->dir);

    struct {
        const char *words [6];
        const char *human;
        const char *json_key;
    } verbs [] = {
        { { "pause" }, "pipeline paused: ingress and pump claim no new work", "paused" },
        { { "resume" }, "pipeline running", "paused" },
        { { "status" }, "role        active", "role" },
        { { "dead", "list" }, "0 dead message(s)", "rows" },
        { { "dead", "list", "--events", "--limit", "5" }, "0 dead event(s)", "rows" },
    };
    for (size_t i = 0; i < sizeof verbs / sizeof verbs [0]; i++) {
        for (int json = 0; json < 2; json++) {
            const char *words [MAX_WORDS] = { "--endpoint", endpoint };
            int n = 2;
            for (int j = 0; verbs [i].words [j]; j++)
                words [n++] = verbs [i].words [j];
            if (json)
                words [n++] = "--json";
            char *out = NULL, *err = NULL;
            int code = s_ctl (fx, words, &out, &err);
            char *text = s_words_text (words);
            if (code != 0)
                fail_msg ("%s: exit %d: %s", text, code, err);
            if (json) {
                json_t *reply = json_loads (out, 0, NULL);
                if (!reply || !json_object_get (reply, verbs [i].json_key))
                    fail_msg ("%s: no JSON with %s:\n%s", text, verbs [i].json_key, out);
                json_decref (reply);
            }
            else
            if (!strstr (out, verbs [i].human) || out [0] == '{')
                fail_msg ("%s: expected '%s':\n%s", text, verbs [i].human, out);
            free (text);
            free (out);
            free (err);
        }
    }
    //  dead list pages: how many of how many, and the command for the next
    //  page while rows follow.
    PGconn *conn = PQconnectdb (mx_testpg_conninfo (pg));
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    mx_testpg_exec (conn, "INSERT INTO proc_state (msg_id, state, msg_type, msg_styp, error_class, last_error)"
                          " SELECT id, 'DEAD', 'SCHS', 'DNLD', 'UNSUPPORTED', 'not handled'"
                          " FROM generate_series (5, 7) id");
    char *out = NULL, *err = NULL;
    const char *first [] = { "--endpoint", endpoint, "dead", "list", "--limit", "2", NULL };
    assert_int_equal (s_ctl (fx, first, &out, &err), 0);
    assert_non_null (strstr (out, "\n5 "));
    assert_non_null (strstr (out, "\n6 "));
    assert_non_null (strstr (out, "2 of 3 dead message(s)\nmore: msgxctl dead list --after 6\n"));
    free (out);
    free (err);
    const char *next [] = { "--endpoint", endpoint, "dead", "list", "--limit", "2", "--after", "6", NULL };
    assert_int_equal (s_ctl (fx, next, &out, &err), 0);
    assert_null (strstr (out, "\n6 "));
    assert_non_null (strstr (out, "\n7 "));
    assert_non_null (strstr (out, "1 of 3 dead message(s)\n"));
    assert_null (strstr (out, "more:"));
    free (out);
    free (err);
    const char *all_json [] = { "--endpoint", endpoint, "--json", "dead", "list", NULL };
    assert_int_equal (s_ctl (fx, all_json, &out, &err), 0);
    json_t *page = json_loads (out, 0, NULL);
    assert_non_null (page);
    assert_int_equal (json_array_size (json_object_get (page, "rows")), 3);
    assert_int_equal (json_integer_value (json_object_get (page, "total")), 3);
    assert_true (json_is_false (json_object_get (page, "more")));
    json_decref (page);
    free (out);
    free (err);
    PQfinish (conn);

    //  Refused by the daemon itself: 1 with its reason.
    const char *show [] = { "--endpoint", endpoint, "show", "424242", NULL };
    assert_int_equal (s_ctl (fx, show, &out, &err), 1);
    assert_non_null (strstr (err, "show refused:"));
    free (out);
    free (err);
    const char *flight [] = { "--endpoint", endpoint, "flight", "424242", "--history", NULL };
    assert_int_equal (s_ctl (fx, flight, &out, &err), 1);
    assert_non_null (strstr (err, "flight refused: no flight 424242"));
    free (out);
    free (err);

    mx_testproc_signal (daemon, SIGTERM);
    int status = 0;
    assert_int_equal (mx_testproc_wait (daemon, WAIT_MS, &status), 0);
    assert_int_equal (WEXITSTATUS (status), 0);
    mx_testproc_destroy (&daemon);
    free (endpoint);
    for (int i = 0; vars [i]; i++)
        free (vars [i]);
    mx_testpg_destroy (&pg);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_every_verb_explains_itself, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_every_verb_refuses_bad_arguments, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_exit_code_says_why_a_call_failed, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_human_and_json_output_from_a_running_daemon, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
