/*  msgxctl - admin CLI for msgxd, over a ZeroMQ REQ socket.

    Exit codes (one place: s_exit_codes below, printed by help):
    0 ok, 1 refused by the daemon, 2 usage, 3 cannot connect,
    4 permission denied, 5 timed out after sending (may have applied),
    6 unreadable reply.
*/
#include <czmq.h>
#include <stdarg.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mx_cmd.h"
#include "mx_text.h"
#include "mx_version.h"

#define EXIT_REFUSED 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define EXIT_DENIED 4
#define EXIT_TIMEOUT 5
#define EXIT_BAD_REPLY 6
#define DEFAULT_ENDPOINT "ipc://msgx-admin.sock"
//  The packaged daemon's socket (the unit's RuntimeDirectory): the default
//  whenever it exists, so operators of an installed msgxd need no option.
#define PACKAGED_SOCKET "/run/msgxd/admin.sock"
#define DEFAULT_TIMEOUT_MS 5000
#define DEFAULT_WATCH_MS 1000
//  The daemon's bound on dead list rows (actors/mx_control.c).
#define DEAD_LIMIT_MAX 10000
//  Samples kept for the rate: a sliding window of this many seconds.
#define WATCH_WINDOW_S 10.0
#define WATCH_SAMPLES 256
#define SCREEN_COLUMNS 80

static const char s_exit_codes [] =
    "exit codes: 0 ok, 1 refused by the daemon (the reason is printed), 2 usage,\n"
    "            3 cannot connect (no daemon at the endpoint), 4 permission denied\n"
    "            (the socket's group), 5 timed out after sending (the daemon may have\n"
    "            applied it: check before repeating), 6 unreadable reply\n";

//  Every verb: how it is written, what it does, its options. The admin
//  protocol's verb table (proto/mx_admin.def) is what the daemon answers;
//  this is how an operator types it.
typedef struct {
    mx_admin_t admin;
    const char *name;           //  as "msgxctl help NAME" takes it
    const char *synopsis;
    const char *summary;
    const char *details;
    bool changes;               //  may change state: a timeout may have applied
} s_verb_t;

static const s_verb_t s_verbs [] = {
    { MX_ADMIN_STATUS, "status", "status [--watch [--interval D]] [--json]",
      "role, watermark and hole, FIFO head, counts by state, backlog, dependencies",
      "  --watch        redraw every D until Ctrl-C, with a progress bar, rate and ETA\n"
      "  --interval D   redraw period: 250ms, 1s, 2m (default 1s; 10ms .. 1h)\n"
      "  --json         the daemon's reply as JSON (not with --watch)\n"
      "Answered by a standby too.\n", false },
    { MX_ADMIN_SHOW, "show", "show MSG_ID [--json]",
      "a message's state row, raw XML, decoded summary and events",
      "  MSG_ID         the mailbox ID (a positive integer)\n"
      "  --json         the daemon's reply as JSON\n"
      "On a terminal, control characters in the message and its fields are shown escaped (ESC as\n"
      "\\x1b, a backslash doubled), never obeyed; piped or redirected, text is written as stored.\n"
      "Refused (exit 1) when the ID is in neither proc_state, its archive nor the mailbox.\n", false },
    { MX_ADMIN_FLIGHT, "flight", "flight FLID [--history] [--json]",
      "a flight's current state, and with --history the messages that changed it and its events",
      "  FLID           the flight ID (a positive integer)\n"
      "  --history      also every message that changed it (msg id, TYPE/STYP, received, version,\n"
      "                 changed fields) and every event sent for it, oldest first\n"
      "  --json         the daemon's reply as JSON\n"
      "The state is the document of the state topic, read from PostgreSQL. Answered by a standby too.\n"
      "Refused (exit 1) when there is no such flight.\n", false },
    { MX_ADMIN_PAUSE, "pause", "pause [--json]",
      "stop ingress and pump from claiming work",
      "Messages under way finish; nothing new is claimed until resume. The instance\n"
      "keeps its active role. Refused on a standby.\n", true },
    { MX_ADMIN_RESUME, "resume", "resume [--json]",
      "let ingress and pump claim work again",
      "Refused on a standby.\n", true },
    { MX_ADMIN_REPLAY, "replay", "replay --class C | --id N [N...] [--dry-run] [--yes] [--json]",
      "move FAILED/DEAD messages back to PENDING",
      "  --class C      every FAILED/DEAD row of class CODEC_ERROR, UNSUPPORTED, INFRA\n"
      "                 or EXHAUSTED\n"
      "  --id N [N...]  these message IDs\n"
      "  --dry-run      list the rows and their flights; move nothing\n"
      "  --yes          act (without it the daemon refuses and says so)\n"
      "  --json         the daemon's reply as JSON\n"
      "See also: replay --events (help replay-events).\n", true },
    { MX_ADMIN_REPLAY_EVENTS, "replay-events", "replay --events --ids N[,N...] | --all [--dry-run] [--yes] [--json]",
      "send DEAD outbox events again",
      "  --ids N[,N...] these event IDs\n"
      "  --all          every DEAD event\n"
      "  --dry-run      list what would move; move nothing\n"
      "  --yes          act (without it the daemon refuses and says so)\n"
      "  --json         the daemon's reply as JSON\n"
      "KAFKA:schd and KAFKA:ref send the newest state of each flight or entry,\n"
      "carrying its older dead states.\n", true },
    { MX_ADMIN_CUTOVER, "cutover", "cutover min|zero|max|ID [--dry-run] [--yes] [--json]",
      "seed the watermark W on a fresh instance",
      "  min            below the lowest mailbox ID: process everything in the mailbox\n"
      "  zero           W = 0\n"
      "  max            the highest mailbox ID: process only what arrives from now on\n"
      "  ID             W = ID (a positive integer)\n"
      "  --dry-run      say which W it would seed, or why it would be refused; seed nothing\n"
      "  --yes          act (without it the daemon refuses and says so)\n"
      "  --json         the daemon's reply as JSON\n"
      "Refused unless the instance is fresh (W = 0 and proc_state empty).\n", true },
    { MX_ADMIN_DEAD, "dead", "dead list [--events] [--limit N] [--after ID] [--json]",
      "DEAD messages, or DEAD outbox events",
      "  --events       the outbox's dead events instead of dead messages\n"
      "  --limit N      at most N rows, oldest first (1 .. 10000, default 100)\n"
      "  --after ID     the rows above ID: the next page after a list that ended at ID\n"
      "  --json         the daemon's reply as JSON (total counts every DEAD row)\n"
      "The last line says how many of how many, and the command for the next page.\n", false },
    { MX_ADMIN_BACKFILL_RECOVER, "backfill", "backfill recover --all | --id N [N...] [--dry-run] [--yes] [--json]",
      "re-arm abandoned processed marks for the sweep",
      "  --all          every abandoned mark\n"
      "  --id N [N...]  these message IDs\n"
      "  --dry-run      list the marks it would re-arm (MISSING or EXHAUSTED, last error);\n"
      "                 re-arm nothing\n"
      "  --yes          act (without it the daemon refuses and says so)\n"
      "  --json         the daemon's reply as JSON\n", true },
    { MX_ADMIN_REQUEST, "request", "request schedule --from T --to T | request reference LIST [--dry-run] [--yes] [--json]",
      "ask the upstream for a schedule window or a reference list",
      "  schedule       a schedule window; T as YYYY-MM-DDTHH:MM\n"
      "  reference      a reference list by name, e.g. SLST\n"
      "  --dry-run      say what would be sent and which open request it would replace;\n"
      "                 send nothing\n"
      "  --yes          act (without it the daemon refuses and says so)\n"
      "  --json         the daemon's reply as JSON\n"
      "Registered in REQ_TRACK and sent once through COUTMSGS.\n", true },
    { MX_ADMIN_REPUBLISH, "republish",
      "republish --flid N [N...] | --day YYYY-MM-DD | --all [--reference] [--dry-run] [--yes] [--json]"
      " | republish --reference [--dry-run] [--yes] | republish --cancel",
      "send current flight states (and reference data) to Kafka again",
      "  --flid N [N...] these flights\n"
      "  --day D        every flight of the operation day D\n"
      "  --all          every flight msgxd holds\n"
      "  --reference    every reference entry too, to the reference topic; alone:\n"
      "                 the reference entries only\n"
      "  --dry-run      say how many flights and entries it would send; send nothing\n"
      "  --yes          act (without it the daemon refuses and says so)\n"
      "  --cancel       stop the running job (what it sent stays sent)\n"
      "  --json         the daemon's reply as JSON\n"
      "The current state documents go to the state topic through the outbox, in\n"
      "FLID order, at msgx.republish.rate events a second; one job at a time. A\n"
      "restart of msgxd continues the job after the last flight done. Progress:\n"
      "msgxctl status.\n", true },
    { MX_ADMIN_LOG_LEVEL, "log-level", "log-level LEVEL [ACTOR] [--json]",
      "change the log level at once, without a restart",
      "  LEVEL          debug, info, warn or error: the lowest level written\n"
      "  ACTOR          only this actor (e.g. processor, ingress; msgxctl status lists\n"
      "                 them, plus main and config); without it every actor, and\n"
      "                 the levels set for single actors are dropped\n"
      "  --json         the daemon's reply as JSON\n"
      "The instance keeps its role (no restart). Lasts until the next restart or\n"
      "reload (SIGHUP: systemctl reload msgxd), which set msgx.log.level again.\n"
      "Answered by a standby too.\n", true },
};
#define VERB_COUNT (sizeof s_verbs / sizeof s_verbs [0])

static const s_verb_t *
s_verb_of (mx_admin_t admin)
{
    for (size_t i = 0; i < VERB_COUNT; i++)
        if (s_verbs [i].admin == admin)
            return &s_verbs [i];
    return NULL;
}

static const s_verb_t *
s_verb_named (const char *name)
{
    for (size_t i = 0; i < VERB_COUNT; i++)
        if (strcmp (s_verbs [i].name, name) == 0)
            return &s_verbs [i];
    //  The words as typed: "dead list", "backfill recover", "replay --events".
    if (strcmp (name, "backfill-recover") == 0)
        return s_verb_of (MX_ADMIN_BACKFILL_RECOVER);
    return NULL;
}

//  Why the last call failed, for a caller that shows it itself (watch).
static char s_problem [512];
static bool s_quiet;

static void
s_complain (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

static void
s_complain (const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    vsnprintf (s_problem, sizeof s_problem, fmt, args);
    va_end (args);
    if (!s_quiet)
        fprintf (stderr, "msgxctl: %s\n", s_problem);
}

static void
s_usage (FILE *out)
{
    fprintf (out, "usage: msgxctl [--endpoint E] [--timeout MS] COMMAND [ARGS] [--json]\n"
                  "       msgxctl help COMMAND | COMMAND --help\n"
                  "commands:\n");
    for (size_t i = 0; i < VERB_COUNT; i++)
        fprintf (out, "  %s\n      %s\n", s_verbs [i].synopsis, s_verbs [i].summary);
    fprintf (out,
        "options:\n"
        "  --endpoint E   daemon admin endpoint (default: $MSGX_ADMIN_ENDPOINT, else\n"
        "                 ipc://" PACKAGED_SOCKET " when it exists, else " DEFAULT_ENDPOINT ")\n"
        "  --timeout MS   how long to wait for the reply (default %d)\n"
        "  --curve-server FILE  the daemon's public CURVE certificate (tcp:// with CURVE;\n"
        "                 default $MSGXCTL_CURVE_SERVER)\n"
        "  --curve-cert FILE    this client's CURVE certificate, its secret half in\n"
        "                 FILE_secret (default $MSGXCTL_CURVE_CERT)\n"
        "  --json         the daemon's reply as JSON, for any command\n"
        "  --version      print the version and exit\n"
        "%s", DEFAULT_TIMEOUT_MS, s_exit_codes);
}

static void
s_verb_help (FILE *out, const s_verb_t *verb)
{
    fprintf (out, "usage: msgxctl [--endpoint E] [--timeout MS] %s\n%s.\n%s%s", verb->synopsis,
             verb->summary, verb->details, s_exit_codes);
}

//  A positive decimal integer up to max, digits only: no sign, blanks,
//  suffix or overflow. Returns -1 for anything else.
static int
s_parse_count (const char *text, long long max, long long *value)
{
    if (!text || !*text || strspn (text, "0123456789") != strlen (text))
        return -1;
    errno = 0;
    char *end = NULL;
    long long parsed = strtoll (text, &end, 10);
    if (errno || *end || parsed <= 0 || parsed > max)
        return -1;
    *value = parsed;
    return 0;
}

//  The daemon's ipc socket, tried the way ZeroMQ will connect to it, so
//  that "nobody there" and "not allowed" are told apart at once. Returns
//  0 when it accepts a connection, else the exit code with a message.
static int
s_probe_ipc (const char *endpoint)
{
    const char *path = endpoint + strlen ("ipc://");
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    if (*path == '@')
        return 0;                       //  abstract: no file to ask about
    if (strlen (path) >= sizeof address.sun_path) {
        s_complain ("cannot connect: socket path too long: %s", path);
        return EXIT_UNREACHABLE;
    }
    strcpy (address.sun_path, path);
    int probe = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) {
        s_complain ("cannot connect: %s", strerror (errno));
        return EXIT_UNREACHABLE;
    }
    int rc = connect (probe, (struct sockaddr *) &address, sizeof address);
    int error = errno;
    close (probe);
    if (rc == 0)
        return 0;
    if (error == EACCES || error == EPERM) {
        s_complain ("permission denied on %s: run as root or as a member of the socket's group "
                    "(msgx-admin in the package; ls -l shows it)", path);
        return EXIT_DENIED;
    }
    if (error == ENOENT)
        s_complain ("daemon unreachable: no socket at %s (is msgxd running? --endpoint or "
                    "$MSGX_ADMIN_ENDPOINT names another)", endpoint);
    else
    if (error == ECONNREFUSED)
        s_complain ("daemon unreachable: nothing listens on %s (a socket left by a stopped msgxd?)", endpoint);
    else
        s_complain ("daemon unreachable: cannot connect to %s: %s", endpoint, strerror (error));
    return EXIT_UNREACHABLE;
}

//  True once the monitored socket completed a ZMTP handshake: from then on
//  the request was on its way to the daemon.
static bool
s_handshake_seen (zsock_t *monitor)
{
    bool seen = false;
    while (zsock_events (monitor) & ZMQ_POLLIN) {
        zmsg_t *event = zmsg_recv (monitor);
        zframe_t *first = event ? zmsg_first (event) : NULL;
        if (first && zframe_size (first) >= 2) {
            uint16_t id;
            memcpy (&id, zframe_data (first), sizeof id);
            if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
                seen = true;
        }
        zmsg_destroy (&event);
    }
    return seen;
}

//  CURVE for a tcp:// endpoint: the daemon's public certificate and ours.
static const char *s_curve_server;
static const char *s_curve_cert;

//  CURVE client settings on req from s_curve_*; 0, or an exit code.
static int
s_curve_apply (zsock_t *req)
{
    if (!s_curve_server && !s_curve_cert)
        return 0;
    if (!s_curve_server || !s_curve_cert) {
        fprintf (stderr, "msgxctl: CURVE needs both --curve-server and --curve-cert\n");
        return EXIT_USAGE;
    }
    zcert_t *server = zcert_load (s_curve_server);
    zcert_t *client = zcert_load (s_curve_cert);
    int code = 0;
    if (!server || !client) {
        fprintf (stderr, "msgxctl: cannot load the CURVE certificate %s\n", !server ? s_curve_server : s_curve_cert);
        code = EXIT_USAGE;
    }
    else {
        zcert_apply (client, req);
        zsock_set_curve_serverkey (req, zcert_public_txt (server));
    }
    zcert_destroy (&server);
    zcert_destroy (&client);
    return code;
}

//  Returns the exit code; *reply_p gets the payload on 0 or 1.
static int
s_call (const char *endpoint, int timeout_ms, const s_verb_t *verb, const char *wire_verb,
        const char *args, char **reply_p)
{
    *reply_p = NULL;
    if (strncmp (endpoint, "ipc://", 6) == 0) {
        int code = s_probe_ipc (endpoint);
        if (code)
            return code;
    }
    else
    if (strncmp (endpoint, "tcp://", 6) != 0) {
        fprintf (stderr, "msgxctl: endpoint must start with ipc:// or tcp://: %s\n", endpoint);
        return EXIT_USAGE;
    }
    zsock_t *req = zsock_new (ZMQ_REQ);
    zsock_t *monitor = zsock_new (ZMQ_PAIR);
    //  A fresh name per call: status --watch calls again while the last
    //  monitor may still be closing.
    static unsigned calls = 0;
    char monitor_endpoint [64];
    snprintf (monitor_endpoint, sizeof monitor_endpoint, "inproc://msgxctl-monitor-%u", ++calls);
    if (!req || !monitor
    ||  zmq_socket_monitor (zsock_resolve (req), monitor_endpoint, ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0
    ||  zsock_connect (monitor, "%s", monitor_endpoint) != 0) {
        s_complain ("cannot create a socket: %s", zmq_strerror (zmq_errno ()));
        zsock_destroy (&monitor);
        zsock_destroy (&req);
        return EXIT_UNREACHABLE;
    }
    zsock_set_linger (req, 0);
    int code = s_curve_apply (req);
    if (code) {
        zsock_destroy (&monitor);
        zsock_destroy (&req);
        return code;
    }
    if (zsock_connect (req, "%s", endpoint) < 0) {
        s_complain ("cannot connect to %s: %s", endpoint, zmq_strerror (zmq_errno ()));
        code = EXIT_UNREACHABLE;
    }
    else {
        zstr_sendm (req, wire_verb);
        zstr_send (req, args);
        zmq_pollitem_t item = { zsock_resolve (req), 0, ZMQ_POLLIN, 0 };
        if (zmq_poll (&item, 1, timeout_ms) <= 0) {
            if (!s_handshake_seen (monitor)) {
                s_complain ("cannot connect: no reply from %s within %d ms and no connection made "
                            "(is msgxd running there?)", endpoint, timeout_ms);
                code = EXIT_UNREACHABLE;
            }
            else {
                if (verb->changes)
                    s_complain ("timed out: no reply from %s within %d ms after the request was sent; "
                                "the daemon may have applied it: check (msgxctl status, the audit log) "
                                "before repeating", endpoint, timeout_ms);
                else
                    s_complain ("timed out: no reply from %s within %d ms after the request was sent "
                                "(a busy or stuck daemon; --timeout waits longer)", endpoint, timeout_ms);
                code = EXIT_TIMEOUT;
            }
        }
        else {
            char *verdict = NULL, *payload = NULL;
            zstr_recvx (req, &verdict, &payload, NULL);
            if (verdict && payload && strcmp (verdict, "OK") == 0)
                code = 0;
            else
            if (verdict && payload && strcmp (verdict, "ERR") == 0)
                code = EXIT_REFUSED;
            else {
                s_complain ("unreadable reply from %s (not OK/ERR and a payload)", endpoint);
                code = EXIT_BAD_REPLY;
                zstr_free (&payload);
            }
            zstr_free (&verdict);
            *reply_p = payload;
        }
    }
    zmq_socket_monitor (zsock_resolve (req), NULL, 0);
    zsock_destroy (&monitor);
    zsock_destroy (&req);
    return code;
}

static const char *
s_text (json_t *value, const char *fallback)
{
    return json_is_string (value) ? json_string_value (value) : fallback;
}

static void
s_print_duration (int64_t seconds, char *buf, size_t size)
{
    if (seconds >= 86400)
        snprintf (buf, size, "%" PRId64 "d%02" PRId64 "h", seconds / 86400, seconds % 86400 / 3600);
    else
    if (seconds >= 3600)
        snprintf (buf, size, "%" PRId64 "h%02" PRId64 "m", seconds / 3600, seconds % 3600 / 60);
    else
    if (seconds >= 60)
        snprintf (buf, size, "%" PRId64 "m%02" PRId64 "s", seconds / 60, seconds % 60);
    else
        snprintf (buf, size, "%" PRId64 "s", seconds);
}

static void
s_print_status (json_t *status)
{
    char uptime [32];
    s_print_duration (json_integer_value (json_object_get (status, "uptime_s")), uptime, sizeof uptime);
    printf ("role        %s (pid %" JSON_INTEGER_FORMAT " on %s, up %s)\n",
            s_text (json_object_get (status, "role"), "?"),
            json_integer_value (json_object_get (status, "pid")),
            s_text (json_object_get (status, "instance"), "?"), uptime);
    if (json_is_true (json_object_get (status, "shadow"))) {
        json_t *topics = json_object_get (status, "topics");
        if (json_is_object (topics))
            printf ("shadow      SHADOW instance: nothing written to the shared mailbox; events to %s and %s\n",
                    s_text (json_object_get (topics, "msg"), "?"), s_text (json_object_get (topics, "schd"), "?"));
        else
            printf ("shadow      SHADOW instance: nothing written to the shared mailbox; no event published\n");
    }

    json_t *pipeline = json_object_get (status, "pipeline");
    printf ("pipeline    %s; actors:", json_is_true (json_object_get (pipeline, "paused")) ? "paused" : "running");
    size_t index;
    json_t *actor;
    json_array_foreach (json_object_get (pipeline, "actors"), index, actor)
        printf (" %s", s_text (actor, "?"));
    printf ("\n");

    json_t *cursor = json_object_get (status, "cursor");
    if (json_is_object (cursor)) {
        printf ("watermark   W=%" JSON_INTEGER_FORMAT, json_integer_value (json_object_get (cursor, "w")));
        json_t *since = json_object_get (cursor, "hole_since");
        if (json_is_string (since)) {
            char age [32];
            s_print_duration (json_integer_value (json_object_get (cursor, "hole_age_s")), age, sizeof age);
            printf ("  hole at %" JSON_INTEGER_FORMAT " since %s (age %s)",
                    json_integer_value (json_object_get (cursor, "w")) + 1, json_string_value (since), age);
        }
        else
            printf ("  no hole");
        if (json_is_string (json_object_get (cursor, "seeded_at")))
            printf ("  seeded %s", json_string_value (json_object_get (cursor, "seeded_at")));
        printf ("\n");
    }
    else
        printf ("watermark   unknown (database unreadable)\n");

    json_t *head = json_object_get (status, "head");
    if (json_is_object (head))
        printf ("head        %" JSON_INTEGER_FORMAT " %s, %" JSON_INTEGER_FORMAT " attempt%s; %s\n",
                json_integer_value (json_object_get (head, "msg_id")),
                s_text (json_object_get (head, "state"), "?"),
                json_integer_value (json_object_get (head, "attempts")),
                json_integer_value (json_object_get (head, "attempts")) == 1 ? "" : "s",
                s_text (json_object_get (head, "waiting"), ""));
    else
    if (json_is_object (json_object_get (status, "counts")))
        printf ("head        none: no unfinished message recorded\n");
    else
        printf ("head        unknown (database unreadable)\n");

    json_t *counts = json_object_get (status, "counts");
    if (json_is_object (counts)) {
        const char *states [] = { "PENDING", "FAILED", "SUCCEEDED", "SKIPPED", "DEAD" };
        printf ("messages   ");
        for (size_t i = 0; i < 5; i++)
            printf (" %s %" JSON_INTEGER_FORMAT, states [i], json_integer_value (json_object_get (counts, states [i])));
        printf ("\n");
    }
    json_t *backlog = json_object_get (status, "backlog");
    if (json_is_object (backlog)) {
        printf ("backlog     ");
        if (json_is_integer (json_object_get (backlog, "total")))
            printf ("%" JSON_INTEGER_FORMAT, json_integer_value (json_object_get (backlog, "total")));
        else
            printf ("unknown");
        printf (" (unfinished %" JSON_INTEGER_FORMAT, json_integer_value (json_object_get (backlog, "unfinished")));
        if (json_is_integer (json_object_get (backlog, "unregistered")))
            printf (", in the mailbox above them %" JSON_INTEGER_FORMAT,
                    json_integer_value (json_object_get (backlog, "unregistered")));
        printf ("); marks owed %" JSON_INTEGER_FORMAT "\n", json_integer_value (json_object_get (backlog, "unmarked")));
    }
    json_t *job = json_object_get (status, "republish");
    if (json_is_object (job)) {
        json_int_t sent = json_integer_value (json_object_get (job, "flights_sent"))
                        + json_integer_value (json_object_get (job, "entries_sent"));
        json_int_t total = json_integer_value (json_object_get (job, "flights_total"))
                         + json_integer_value (json_object_get (job, "entries_total"));
        printf ("republish   job %" JSON_INTEGER_FORMAT " %s (%s%s%s): %" JSON_INTEGER_FORMAT " of %"
                JSON_INTEGER_FORMAT " events sent, %" JSON_INTEGER_FORMAT " remaining\n",
                json_integer_value (json_object_get (job, "job_id")), s_text (json_object_get (job, "state"), "?"),
                s_text (json_object_get (job, "scope"), "?"),
                json_is_string (json_object_get (job, "day")) ? " " : "",
                json_is_string (json_object_get (job, "day")) ? json_string_value (json_object_get (job, "day")) : "",
                sent, total, json_integer_value (json_object_get (job, "remaining")));
    }
    json_t *deps = json_object_get (status, "dependencies");
    const char *key;
    json_t *value;
    json_object_foreach (deps, key, value)
        printf ("%-11s %s\n", key, s_text (value, "?"));
}

static void
s_print_dead (json_t *reply)
{
    bool events = strcmp (s_text (json_object_get (reply, "kind"), ""), "events") == 0;
    json_t *rows = json_object_get (reply, "rows");
    if (events)
        printf ("%-10s %-11s %-10s %-8s %s\n", "event_id", "target", "flid", "attempts", "last error");
    else
        printf ("%-10s %-10s %-12s %-9s %s\n", "msg_id", "type/styp", "class", "mark", "last error");
    size_t index;
    json_t *row;
    json_array_foreach (rows, index, row) {
        if (events)
            printf ("%-10" JSON_INTEGER_FORMAT " %-11s %-10" JSON_INTEGER_FORMAT " %-8" JSON_INTEGER_FORMAT " %s\n",
                    json_integer_value (json_object_get (row, "event_id")), s_text (json_object_get (row, "target"), "?"),
                    json_integer_value (json_object_get (row, "flid")), json_integer_value (json_object_get (row, "attempts")),
                    s_text (json_object_get (row, "last_error"), "-"));
        else {
            char kind [24];
            snprintf (kind, sizeof kind, "%s/%s", s_text (json_object_get (row, "type"), "?"),
                      s_text (json_object_get (row, "styp"), "?"));
            const char *mark = json_is_true (json_object_get (row, "marked")) ? "marked"
                             : s_text (json_object_get (row, "mark_abandoned"), "owed");
            printf ("%-10" JSON_INTEGER_FORMAT " %-10s %-12s %-9s %.60s\n", json_integer_value (json_object_get (row, "msg_id")),
                    kind, s_text (json_object_get (row, "error_class"), "-"), mark,
                    s_text (json_object_get (row, "last_error"), "-"));
        }
    }
    json_int_t total = json_integer_value (json_object_get (reply, "total"));
    size_t shown = json_array_size (rows);
    const char *what = events ? "dead event(s)" : "dead message(s)";
    if ((json_int_t) shown == total)
        printf ("%zu %s\n", shown, what);
    else
        printf ("%zu of %" JSON_INTEGER_FORMAT " %s\n", shown, total, what);
    if (shown > 0 && json_is_true (json_object_get (reply, "more"))) {
        json_t *last = json_array_get (rows, shown - 1);
        printf ("more: msgxctl dead list%s --after %" JSON_INTEGER_FORMAT "\n", events ? " --events" : "",
                json_integer_value (json_object_get (last, events ? "event_id" : "msg_id")));
    }
}

//  Every string in value with its control characters made visible
//  (mx_text_escape_controls), for a terminal.
static void
s_escape_controls (json_t *value)
{
    if (json_is_object (value)) {
        const char *key;
        json_t *member;
        json_object_foreach (value, key, member) {
            if (json_is_string (member)) {
                char *safe = mx_text_escape_controls (json_string_value (member));
                json_object_set_new (value, key, json_string (safe));
                free (safe);
            }
            else
                s_escape_controls (member);
        }
    }
    else
    if (json_is_array (value)) {
        size_t index;
        json_t *member;
        json_array_foreach (value, index, member) {
            if (json_is_string (member)) {
                char *safe = mx_text_escape_controls (json_string_value (member));
                json_array_set_new (value, index, json_string (safe));
                free (safe);
            }
            else
                s_escape_controls (member);
        }
    }
}

//  A value of the state document on one line: text as it is, the rest as JSON.
static void
s_print_value (json_t *value)
{
    if (json_is_string (value))
        printf ("%s", json_string_value (value));
    else {
        char *text = json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY);
        printf ("%s", text ? text : "?");
        free (text);
    }
}

static void
s_print_flight (json_t *reply)
{
    json_t *state = json_object_get (reply, "state");
    printf ("flight      %" JSON_INTEGER_FORMAT " %s%s %s SODT %s  day %s  version %" JSON_INTEGER_FORMAT "  %s\n",
            json_integer_value (json_object_get (reply, "flid")), s_text (json_object_get (state, "ALCD"), "?"),
            s_text (json_object_get (state, "FLNO"), "?"), s_text (json_object_get (state, "MVIN"), "?"),
            s_text (json_object_get (state, "SODT"), "-"), s_text (json_object_get (state, "operation_day"), "?"),
            json_integer_value (json_object_get (state, "state_version")),
            s_text (json_object_get (state, "lifecycle"), "?"));
    const char *key;
    json_t *value;
    json_object_foreach (state, key, value) {
        if (json_is_null (value) || (json_is_object (value) && json_object_size (value) == 0)
        ||  (json_is_array (value) && json_array_size (value) == 0))
            continue;
        printf ("  %-12s ", key);
        s_print_value (value);
        printf ("\n");
    }
    json_t *messages = json_object_get (reply, "messages");
    if (json_is_array (messages)) {
        printf ("messages    %zu that changed it\n", json_array_size (messages));
        size_t index;
        json_t *message;
        json_array_foreach (messages, index, message) {
            printf ("  %-10" JSON_INTEGER_FORMAT " %s/%s  %s  v%" JSON_INTEGER_FORMAT "  %s  changed:",
                    json_integer_value (json_object_get (message, "msg_id")),
                    s_text (json_object_get (message, "type"), "-"), s_text (json_object_get (message, "styp"), "-"),
                    s_text (json_object_get (message, "received_at"), "-"),
                    json_integer_value (json_object_get (message, "state_version")),
                    s_text (json_object_get (message, "event_type"), "?"));
            size_t i;
            json_t *code;
            json_array_foreach (json_object_get (message, "changed"), i, code)
                printf (" %s", s_text (code, "?"));
            if (json_array_size (json_object_get (message, "changed")) == 0)
                printf (" -");
            printf ("\n");
        }
    }
    json_t *events = json_object_get (reply, "events");
    if (json_is_array (events)) {
        printf ("events      %zu\n", json_array_size (events));
        size_t index;
        json_t *event;
        json_array_foreach (events, index, event) {
            char msg [32] = "-";
            if (json_is_integer (json_object_get (event, "msg_id")))
                snprintf (msg, sizeof msg, "%" JSON_INTEGER_FORMAT, json_integer_value (json_object_get (event, "msg_id")));
            printf ("  %-10" JSON_INTEGER_FORMAT " %-10s %-9s v%-4" JSON_INTEGER_FORMAT " msg %-8s %-7s sent %s\n",
                    json_integer_value (json_object_get (event, "event_id")),
                    s_text (json_object_get (event, "target"), "?"), s_text (json_object_get (event, "event_type"), "?"),
                    json_integer_value (json_object_get (event, "state_version")), msg,
                    s_text (json_object_get (event, "state"), "?"), s_text (json_object_get (event, "sent_at"), "-"));
        }
    }
}

static void
s_print_show (json_t *reply)
{
    json_t *row = json_object_get (reply, "state");
    json_int_t id = json_integer_value (json_object_get (reply, "msg_id"));
    if (json_is_object (row)) {
        json_int_t attempts = json_integer_value (json_object_get (row, "attempts"));
        printf ("message     %" JSON_INTEGER_FORMAT " %s (source %s), %" JSON_INTEGER_FORMAT " attempt%s%s\n", id,
                s_text (json_object_get (row, "state"), "?"), s_text (json_object_get (row, "source"), "?"),
                attempts, attempts == 1 ? "" : "s",
                json_is_string (json_object_get (row, "archived_at")) ? " [archived]" : "");
        printf ("type/styp   %s/%s  identity %s\n", s_text (json_object_get (row, "type"), "-"),
                s_text (json_object_get (row, "styp"), "-"), s_text (json_object_get (row, "identity_key"), "-"));
        printf ("class       %s  last error: %s\n", s_text (json_object_get (row, "error_class"), "-"),
                s_text (json_object_get (row, "last_error"), "-"));
        if (json_is_string (json_object_get (row, "outcome")))
            printf ("outcome     %s\n", json_string_value (json_object_get (row, "outcome")));
        printf ("received    %s  started %s  finished %s\n", s_text (json_object_get (row, "received_at"), "-"),
                s_text (json_object_get (row, "processing_started_at"), "-"),
                s_text (json_object_get (row, "finished_at"), "-"));
        if (json_is_string (json_object_get (row, "next_attempt_at")))
            printf ("next try    %s\n", json_string_value (json_object_get (row, "next_attempt_at")));
        if (json_is_string (json_object_get (row, "marked_at")))
            printf ("mark        written %s\n", json_string_value (json_object_get (row, "marked_at")));
        else
        if (json_is_string (json_object_get (row, "backfill_abandoned_reason")))
            printf ("mark        abandoned (%s) %s: %s\n", json_string_value (json_object_get (row, "backfill_abandoned_reason")),
                    s_text (json_object_get (row, "backfill_abandoned_at"), "-"),
                    s_text (json_object_get (row, "backfill_error"), "-"));
        else
        if (json_is_string (json_object_get (row, "backfill_next_at")))
            printf ("mark        owed, next try %s (%" JSON_INTEGER_FORMAT " attempts)\n",
                    json_string_value (json_object_get (row, "backfill_next_at")),
                    json_integer_value (json_object_get (row, "backfill_attempts")));
        else
            printf ("mark        none owed\n");
    }
    else
        printf ("message     %" JSON_INTEGER_FORMAT ": no proc_state row (not registered yet)\n", id);

    json_t *decoded = json_object_get (reply, "decoded");
    if (json_is_object (decoded) && strcmp (s_text (json_object_get (decoded, "status"), ""), "OK") == 0) {
        printf ("decoded     %s %s/%s SNDR %s SEQN %" JSON_INTEGER_FORMAT " DTTM %s\n",
                s_text (json_object_get (decoded, "kind"), "?"), s_text (json_object_get (decoded, "type"), "?"),
                s_text (json_object_get (decoded, "styp"), "?"), s_text (json_object_get (decoded, "sndr"), "?"),
                json_integer_value (json_object_get (decoded, "seqn")), s_text (json_object_get (decoded, "dttm"), "?"));
        printf ("flights    ");
        size_t index;
        json_t *flid;
        json_array_foreach (json_object_get (decoded, "flights"), index, flid)
            printf (" %" JSON_INTEGER_FORMAT, json_integer_value (flid));
        if (json_array_size (json_object_get (decoded, "flights")) == 0)
            printf (" -");
        printf ("\n");
        json_t *body_error = json_object_get (decoded, "body_error");
        if (json_is_object (body_error))
            printf ("body        %s: %s\n", s_text (json_object_get (body_error, "class"), "?"),
                    s_text (json_object_get (body_error, "detail"), "?"));
    }
    else
    if (json_is_object (decoded))
        printf ("decoded     %s: %s\n", s_text (json_object_get (decoded, "status"), "not decoded"),
                s_text (json_object_get (decoded, "error"), "?"));

    json_t *events = json_object_get (reply, "events");
    printf ("events      %zu\n", json_array_size (events));
    if (json_array_size (events) > 0)
        printf ("  %-10s %-11s %-10s %-8s %-6s %-8s %s\n", "event_id", "target", "flid", "version", "state",
                "attempts", "last error");
    size_t index;
    json_t *event;
    json_array_foreach (events, index, event)
        printf ("  %-10" JSON_INTEGER_FORMAT " %-11s %-10" JSON_INTEGER_FORMAT " %-8" JSON_INTEGER_FORMAT
                " %-6s %-8" JSON_INTEGER_FORMAT " %s\n",
                json_integer_value (json_object_get (event, "event_id")), s_text (json_object_get (event, "target"), "?"),
                json_integer_value (json_object_get (event, "flid")),
                json_integer_value (json_object_get (event, "state_version")),
                s_text (json_object_get (event, "state"), "?"), json_integer_value (json_object_get (event, "attempts")),
                s_text (json_object_get (event, "last_error"), "-"));

    json_t *raw = json_object_get (reply, "raw");
    if (json_is_string (json_object_get (raw, "xml")))
        printf ("raw XML (%" JSON_INTEGER_FORMAT " bytes, as received; from the %s):\n%s\n",
                json_integer_value (json_object_get (raw, "bytes")),
                strcmp (s_text (json_object_get (raw, "source"), "mailbox"), "retention") == 0
                ? "retained copy" : "mailbox",
                json_string_value (json_object_get (raw, "xml")));
    else
        printf ("raw XML     unavailable: %s\n", s_text (json_object_get (raw, "error"), "?"));
}

static void
s_print_replay (json_t *reply)
{
    bool dry_run = json_is_true (json_object_get (reply, "dry_run"));
    json_t *rows = json_object_get (reply, "rows");
    printf ("%-10s %-6s %-12s %-10s %s\n", "msg_id", "state", "class", "type/styp", "flights / reason");
    size_t index;
    json_t *row;
    json_array_foreach (rows, index, row) {
        const char *refused = s_text (json_object_get (row, "refused"), NULL);
        char kind [24];
        snprintf (kind, sizeof kind, "%s/%s", s_text (json_object_get (row, "type"), "?"),
                  s_text (json_object_get (row, "styp"), "?"));
        printf ("%-10" JSON_INTEGER_FORMAT " %-6s %-12s %-10s ", json_integer_value (json_object_get (row, "msg_id")),
                s_text (json_object_get (row, "state"), "-"), s_text (json_object_get (row, "error_class"), "-"),
                kind);
        if (refused)
            printf ("refused: %s", refused);
        else {
            size_t i;
            json_t *flight;
            json_array_foreach (json_object_get (row, "flights"), i, flight)
                printf ("%s%" JSON_INTEGER_FORMAT "%s", i ? " " : "", json_integer_value (json_object_get (flight, "flid")),
                        json_is_true (json_object_get (flight, "changed_since")) ? "(changed since)" : "");
            if (json_array_size (json_object_get (row, "flights")) == 0)
                printf ("-");
        }
        printf ("\n");
    }
    if (dry_run)
        printf ("dry run: nothing moved; add --yes to replay\n");
    else
        printf ("%" JSON_INTEGER_FORMAT " message(s) back to PENDING\n", json_integer_value (json_object_get (reply, "moved")));
}

static void
s_print_replay_events (json_t *reply)
{
    bool dry_run = json_is_true (json_object_get (reply, "dry_run"));
    json_t *rows = json_object_get (reply, "rows");
    printf ("%-10s %-11s %-10s %-8s %-8s %s\n", "event_id", "target", "flid", "version", "attempts",
            "last error / reason");
    size_t index;
    json_t *row;
    json_array_foreach (rows, index, row) {
        const char *refused = s_text (json_object_get (row, "refused"), NULL);
        printf ("%-10" JSON_INTEGER_FORMAT " %-11s %-10" JSON_INTEGER_FORMAT " %-8" JSON_INTEGER_FORMAT
                " %-8" JSON_INTEGER_FORMAT " ",
                json_integer_value (json_object_get (row, "event_id")), s_text (json_object_get (row, "target"), "-"),
                json_integer_value (json_object_get (row, "flid")),
                json_integer_value (json_object_get (row, "state_version")),
                json_integer_value (json_object_get (row, "attempts")));
        json_int_t carries = json_integer_value (json_object_get (row, "carries"));
        if (refused)
            printf ("stays: %s\n", refused);
        else
        if (carries > 0)
            printf ("%.50s (+%" JSON_INTEGER_FORMAT " older state%s of the flight)\n",
                    s_text (json_object_get (row, "last_error"), "-"), carries, carries == 1 ? "" : "s");
        else
            printf ("%.70s\n", s_text (json_object_get (row, "last_error"), "-"));
    }
    if (dry_run)
        printf ("dry run: nothing moved; add --yes to replay\n");
    else
        printf ("%" JSON_INTEGER_FORMAT " event(s) back to PENDING\n", json_integer_value (json_object_get (reply, "moved")));
}

//  ---------------------------------------------------------------------
//  status --watch

typedef struct {
    double at;                  //  monotonic seconds
    int64_t done;               //  finished messages (SUCCEEDED, SKIPPED, DEAD)
} s_sample_t;

typedef struct {
    bool tty;
    bool started;               //  the first good status has been seen
    int64_t done_at_start;
    int64_t backlog_at_start;
    s_sample_t samples [WATCH_SAMPLES];
    size_t sample_count;        //  samples [0 .. count) oldest first
    double unreachable_since;   //  0 when the daemon answers
} s_watch_t;

static double
s_monotonic (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

//  "1s", "250ms", "2m", or plain milliseconds; -1 if malformed.
static long
s_parse_duration (const char *text)
{
    char *end = NULL;
    double value = strtod (text, &end);
    if (end == text || value <= 0)
        return -1;
    double scale = strcmp (end, "ms") == 0 || !*end ? 1
                 : strcmp (end, "s") == 0 ? 1000
                 : strcmp (end, "m") == 0 ? 60000 : -1;
    if (scale < 0 || value * scale < 10 || value * scale > 3600000)
        return -1;
    return (long) (value * scale);
}

static int64_t
s_count (json_t *counts, const char *state)
{
    return json_integer_value (json_object_get (counts, state));
}

//  Finished messages per second over the sliding window; NAN until two
//  samples span some time.
static double
s_rate (s_watch_t *self)
{
    if (self->sample_count < 2)
        return NAN;
    s_sample_t *first = &self->samples [0];
    s_sample_t *last = &self->samples [self->sample_count - 1];
    double span = last->at - first->at;
    if (span <= 0)
        return NAN;
    return (double) (last->done - first->done) / span;
}

static void
s_remember (s_watch_t *self, double now, int64_t done)
{
    //  Drop samples older than the window (keep one at its edge) and when full.
    size_t drop = 0;
    while (drop + 1 < self->sample_count && now - self->samples [drop + 1].at >= WATCH_WINDOW_S)
        drop++;
    if (self->sample_count - drop == WATCH_SAMPLES)
        drop++;
    if (drop) {
        memmove (self->samples, self->samples + drop, (self->sample_count - drop) * sizeof (s_sample_t));
        self->sample_count -= drop;
    }
    self->samples [self->sample_count++] = (s_sample_t) { now, done };
}

//  One screen (or one plain line) from a status reply. Every line fits in
//  SCREEN_COLUMNS.
static void
s_watch_draw (s_watch_t *self, json_t *status, const char *endpoint)
{
    double now = s_monotonic ();
    json_t *counts = json_object_get (status, "counts");
    json_t *backlog_json = json_object_get (status, "backlog");
    json_t *total = json_object_get (backlog_json, "total");
    bool known = json_is_object (counts) && json_is_integer (total);
    int64_t done = known ? s_count (counts, "SUCCEEDED") + s_count (counts, "SKIPPED") + s_count (counts, "DEAD") : 0;
    int64_t backlog = known ? json_integer_value (total) : 0;
    if (known && !self->started) {
        self->started = true;
        self->done_at_start = done;
        self->backlog_at_start = backlog;
    }
    if (known)
        s_remember (self, now, done);
    //  Progress of the drain since the watch started: what finished since,
    //  out of that plus what is still left.
    int64_t finished = self->started ? done - self->done_at_start : 0;
    if (finished < 0)
        finished = 0;                   //  rows archived meanwhile
    double progress = finished + backlog > 0 ? (double) finished / (double) (finished + backlog) : 1.0;
    double rate = s_rate (self);
    char rate_text [32] = "-", eta_text [32] = "-";
    if (!isnan (rate))
        snprintf (rate_text, sizeof rate_text, "%.1f msg/s", rate);
    if (known && backlog == 0)
        snprintf (eta_text, sizeof eta_text, "done");
    else
    if (!isnan (rate) && rate > 0) {
        double eta = (double) backlog / rate;
        s_print_duration ((int64_t) eta + 1, eta_text, sizeof eta_text);      //  rounded up, without libm
    }
    json_t *cursor = json_object_get (status, "cursor");
    json_t *head = json_object_get (status, "head");
    char w_text [32] = "?", hole_text [64] = "none", head_text [48] = "none";
    if (json_is_object (cursor)) {
        snprintf (w_text, sizeof w_text, "%" JSON_INTEGER_FORMAT, json_integer_value (json_object_get (cursor, "w")));
        if (json_is_string (json_object_get (cursor, "hole_since"))) {
            char age [32];
            s_print_duration (json_integer_value (json_object_get (cursor, "hole_age_s")), age, sizeof age);
            snprintf (hole_text, sizeof hole_text, "at %" JSON_INTEGER_FORMAT " for %s",
                      json_integer_value (json_object_get (cursor, "w")) + 1, age);
        }
    }
    else
        snprintf (hole_text, sizeof hole_text, "?");
    if (json_is_object (head))
        snprintf (head_text, sizeof head_text, "%" JSON_INTEGER_FORMAT " %s",
                  json_integer_value (json_object_get (head, "msg_id")), s_text (json_object_get (head, "state"), "?"));
    else
    if (!known)
        snprintf (head_text, sizeof head_text, "?");
    char backlog_text [32] = "unknown", dead_text [32] = "?", unmarked_text [32] = "?";
    if (known)
        snprintf (backlog_text, sizeof backlog_text, "%" PRId64, backlog);
    if (json_is_object (counts))
        snprintf (dead_text, sizeof dead_text, "%" PRId64, s_count (counts, "DEAD"));
    if (json_is_integer (json_object_get (backlog_json, "unmarked")))
        snprintf (unmarked_text, sizeof unmarked_text, "%" JSON_INTEGER_FORMAT,
                  json_integer_value (json_object_get (backlog_json, "unmarked")));
    const char *role = s_text (json_object_get (status, "role"), "?");
    char shadow_role [64];
    if (json_is_true (json_object_get (status, "shadow"))) {
        snprintf (shadow_role, sizeof shadow_role, "%s-SHADOW", role);
        role = shadow_role;
    }
    bool paused = json_is_true (json_object_get (json_object_get (status, "pipeline"), "paused"));
    int percent = (int) (progress * 100.0);

    if (!self->tty) {
        //  Plain lines for logs and pipes: one per sample.
        printf ("role=%s%s W=%s hole=%s head=%s backlog=%s dead=%s unmarked=%s progress=%d%% rate=%s eta=%s\n",
                role, paused ? "(paused)" : "", w_text, strcmp (hole_text, "none") == 0 ? "none" : hole_text,
                head_text, backlog_text, dead_text, unmarked_text, percent, rate_text, eta_text);
        fflush (stdout);
        return;
    }
    char line [1024];           //  printed cut at 79 columns
    //  Clear the screen and go home; every line is cut at 79 columns.
    printf ("\033[H\033[2J");
    snprintf (line, sizeof line, "msgxctl status --watch  %s", endpoint);
    printf ("%.79s\n\n", line);
    snprintf (line, sizeof line, "role      %s%s", role, paused ? " (pipeline paused)" : "");
    printf ("%.79s\n", line);
    snprintf (line, sizeof line, "W         %-14s hole   %s", w_text, hole_text);
    printf ("%.79s\n", line);
    snprintf (line, sizeof line, "head      %s", head_text);
    printf ("%.79s\n", line);
    snprintf (line, sizeof line, "backlog   %-14s dead   %-10s unmarked %s", backlog_text, dead_text, unmarked_text);
    printf ("%.79s\n\n", line);
    //  [#####.....] 100%: 60 cells of bar in 79 columns.
    char bar [61];
    int filled = (int) (progress * 60.0);
    for (int i = 0; i < 60; i++)
        bar [i] = i < filled ? '#' : '.';
    bar [60] = 0;
    printf ("[%s] %3d%%\n", bar, percent);
    snprintf (line, sizeof line, "drained   %" PRId64 " since start   rate %s   ETA %s", finished, rate_text, eta_text);
    printf ("%.79s\n", line);
    if (self->unreachable_since > 0) {
        snprintf (line, sizeof line, "daemon unreachable for %.0f s: %s", now - self->unreachable_since, s_problem);
        printf ("\n%.79s\n", line);
    }
    printf ("\nCtrl-C to quit\n");
    fflush (stdout);
}

static void
s_watch_draw_unreachable (s_watch_t *self)
{
    double now = s_monotonic ();
    if (!self->tty) {
        printf ("daemon unreachable for %.0f s: %s\n", now - self->unreachable_since, s_problem);
        fflush (stdout);
        return;
    }
    char line [1024];           //  printed cut at 79 columns
    //  Keep the last screen and say, at the bottom, that it is stale.
    printf ("\033[20;1H\033[J");
    snprintf (line, sizeof line, "daemon unreachable for %.0f s (last figures above): %s",
              now - self->unreachable_since, s_problem);
    printf ("%.79s\n", line);
    fflush (stdout);
}

//  Redraws until SIGINT or SIGTERM (exit 0); the call's exit code if the
//  daemon does not answer the first time.
static int
s_watch (const char *endpoint, int timeout_ms, long interval_ms, const char *args_text)
{
    sigset_t signals;
    sigemptyset (&signals);
    sigaddset (&signals, SIGINT);
    sigaddset (&signals, SIGTERM);
    sigprocmask (SIG_BLOCK, &signals, NULL);
    int signal_fd = signalfd (-1, &signals, SFD_CLOEXEC);
    if (signal_fd < 0) {
        fprintf (stderr, "msgxctl: cannot watch signals: %s\n", strerror (errno));
        return EXIT_UNREACHABLE;
    }
    s_watch_t self = { .tty = isatty (STDOUT_FILENO) == 1 };
    bool first = true;
    int code = 0;
    while (true) {
        char *reply = NULL;
        s_quiet = !first;
        int rc = s_call (endpoint, timeout_ms, s_verb_of (MX_ADMIN_STATUS), "status", args_text, &reply);
        json_t *status = rc == 0 ? json_loads (reply, 0, NULL) : NULL;
        zstr_free (&reply);
        if (!status) {
            if (first) {
                if (rc == 0)
                    fprintf (stderr, "msgxctl: unreadable reply: the daemon sent invalid JSON\n");
                code = rc == 0 ? EXIT_BAD_REPLY : rc;
                break;
            }
            if (self.unreachable_since == 0)
                self.unreachable_since = s_monotonic ();
            if (rc == 0)
                snprintf (s_problem, sizeof s_problem, "daemon sent invalid JSON");
            s_watch_draw_unreachable (&self);
        }
        else {
            self.unreachable_since = 0;
            s_watch_draw (&self, status, endpoint);
            json_decref (status);
        }
        first = false;
        struct pollfd item = { signal_fd, POLLIN, 0 };
        if (poll (&item, 1, (int) interval_ms) > 0)
            break;                      //  Ctrl-C or SIGTERM: a normal end
    }
    if (self.tty && code == 0)
        printf ("\n");
    close (signal_fd);
    return code;
}

//  "7,9,12" appended to *ids (made when NULL); -1 with a message if any
//  item is not a positive integer.
static int
s_parse_event_ids (const char *list, json_t **ids)
{
    if (!*ids)
        *ids = json_array ();
    char *copy = strdup (list);
    int rc = 0;
    char *saved = NULL;
    size_t before = json_array_size (*ids);
    for (char *item = strtok_r (copy, ",", &saved); item; item = strtok_r (NULL, ",", &saved)) {
        long long id = 0;
        if (s_parse_count (item, INT64_MAX, &id)) {
            fprintf (stderr, "msgxctl: replay --events: '%s' is not an event ID (a positive integer)\n", item);
            rc = -1;
            break;
        }
        json_array_append_new (*ids, json_integer (id));
    }
    if (rc == 0 && json_array_size (*ids) == before) {
        fprintf (stderr, "msgxctl: replay --events: --ids needs event IDs, e.g. --ids 7,9\n");
        rc = -1;
    }
    free (copy);
    if (rc) {
        json_decref (*ids);
        *ids = NULL;
    }
    return rc;
}

//  The verbs that act only with --yes and preview with --dry-run.
static bool
s_previews (mx_admin_t admin)
{
    return admin == MX_ADMIN_REPLAY || admin == MX_ADMIN_REPLAY_EVENTS || admin == MX_ADMIN_CUTOVER
        || admin == MX_ADMIN_BACKFILL_RECOVER || admin == MX_ADMIN_REQUEST || admin == MX_ADMIN_REPUBLISH;
}

//  Verb arguments into the JSON object sent to the daemon.
static int
s_parse_args (mx_admin_t admin, int argc, char **argv, json_t *args, bool *json_out,
              long *watch_ms)
{
    json_t *ids = NULL;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv [i];
        if (strcmp (arg, "--json") == 0)
            *json_out = true;
        else
        if (admin == MX_ADMIN_STATUS && strcmp (arg, "--watch") == 0) {
            if (*watch_ms <= 0)
                *watch_ms = DEFAULT_WATCH_MS;
        }
        else
        if (admin == MX_ADMIN_STATUS && strcmp (arg, "--interval") == 0 && i + 1 < argc) {
            *watch_ms = s_parse_duration (argv [++i]);
            if (*watch_ms < 0) {
                fprintf (stderr, "msgxctl: --interval wants a duration between 10ms and 1h (e.g. 1s, 250ms), not '%s'\n",
                         argv [i]);
                return -1;
            }
        }
        else
        if (admin == MX_ADMIN_SHOW && arg [0] != '-' && !json_object_get (args, "msg_id")) {
            long long id = 0;
            if (s_parse_count (arg, INT64_MAX, &id)) {
                fprintf (stderr, "msgxctl: show: '%s' is not a message ID (a positive integer)\n", arg);
                return -1;
            }
            json_object_set_new (args, "msg_id", json_integer (id));
        }
        else
        if (admin == MX_ADMIN_FLIGHT && arg [0] != '-' && !json_object_get (args, "flid")) {
            long long id = 0;
            if (s_parse_count (arg, INT64_MAX, &id)) {
                fprintf (stderr, "msgxctl: flight: '%s' is not a FLID (a positive integer)\n", arg);
                return -1;
            }
            json_object_set_new (args, "flid", json_integer (id));
        }
        else
        if (admin == MX_ADMIN_FLIGHT && strcmp (arg, "--history") == 0)
            json_object_set_new (args, "history", json_true ());
        else
        if (admin == MX_ADMIN_REPLAY && strcmp (arg, "--class") == 0 && i + 1 < argc)
            json_object_set_new (args, "class", json_string (argv [++i]));
        else
        if (((admin == MX_ADMIN_REPLAY || admin == MX_ADMIN_BACKFILL_RECOVER) && strcmp (arg, "--id") == 0)
        ||  (admin == MX_ADMIN_REPUBLISH && strcmp (arg, "--flid") == 0)) {
            if (!ids)
                ids = json_array ();
            while (i + 1 < argc && argv [i + 1][0] != '-') {
                long long id = 0;
                if (s_parse_count (argv [++i], INT64_MAX, &id)) {
                    fprintf (stderr, "msgxctl: %s: '%s' is not a%s ID (a positive integer)\n",
                             s_verb_of (admin)->name, argv [i], admin == MX_ADMIN_REPUBLISH ? " FLID" : " message");
                    json_decref (ids);
                    return -1;
                }
                json_array_append_new (ids, json_integer (id));
            }
        }
        else
        if (admin == MX_ADMIN_REPLAY_EVENTS && strcmp (arg, "--events") == 0)
            ;                           //  what chose the verb
        else
        if (admin == MX_ADMIN_REPLAY_EVENTS && strcmp (arg, "--ids") == 0 && i + 1 < argc) {
            if (s_parse_event_ids (argv [++i], &ids))
                return -1;
        }
        else
        if (admin == MX_ADMIN_REPLAY_EVENTS && strcmp (arg, "--all") == 0)
            json_object_set_new (args, "all", json_true ());
        else
        if (s_previews (admin) && strcmp (arg, "--dry-run") == 0)
            json_object_set_new (args, "dry_run", json_true ());
        else
        if (s_previews (admin) && strcmp (arg, "--yes") == 0)
            json_object_set_new (args, "yes", json_true ());
        else
        if (admin == MX_ADMIN_CUTOVER && arg [0] != '-' && !json_object_get (args, "watermark")) {
            long long id = 0;
            if (strcmp (arg, "min") && strcmp (arg, "zero") && strcmp (arg, "max")
            &&  s_parse_count (arg, INT64_MAX, &id)) {
                fprintf (stderr, "msgxctl: cutover: '%s' is neither min, zero, max nor a mailbox ID\n", arg);
                return -1;
            }
            json_object_set_new (args, "watermark", json_string (arg));
        }
        else
        if (admin == MX_ADMIN_DEAD && strcmp (arg, "--events") == 0)
            json_object_set_new (args, "events", json_true ());
        else
        if (admin == MX_ADMIN_DEAD && strcmp (arg, "--limit") == 0 && i + 1 < argc) {
            long long limit = 0;
            if (s_parse_count (argv [++i], DEAD_LIMIT_MAX, &limit)) {
                fprintf (stderr, "msgxctl: dead list: --limit wants a number of rows from 1 to %d, not '%s'\n",
                         DEAD_LIMIT_MAX, argv [i]);
                return -1;
            }
            json_object_set_new (args, "limit", json_integer (limit));
        }
        else
        if (admin == MX_ADMIN_DEAD && strcmp (arg, "--after") == 0 && i + 1 < argc) {
            long long after = 0;
            if (s_parse_count (argv [++i], INT64_MAX, &after)) {
                fprintf (stderr, "msgxctl: dead list: --after wants the last ID of the previous page, not '%s'\n",
                         argv [i]);
                return -1;
            }
            json_object_set_new (args, "after", json_integer (after));
        }
        else
        if ((admin == MX_ADMIN_BACKFILL_RECOVER || admin == MX_ADMIN_REPUBLISH) && strcmp (arg, "--all") == 0)
            json_object_set_new (args, "all", json_true ());
        else
        if (admin == MX_ADMIN_REPUBLISH && strcmp (arg, "--day") == 0 && i + 1 < argc)
            json_object_set_new (args, "day", json_string (argv [++i]));
        else
        if (admin == MX_ADMIN_REPUBLISH && strcmp (arg, "--reference") == 0)
            json_object_set_new (args, "reference", json_true ());
        else
        if (admin == MX_ADMIN_REPUBLISH && strcmp (arg, "--cancel") == 0)
            json_object_set_new (args, "cancel", json_true ());
        else
        if (admin == MX_ADMIN_REQUEST && !json_object_get (args, "kind")
        &&  (strcmp (arg, "schedule") == 0 || strcmp (arg, "reference") == 0))
            json_object_set_new (args, "kind", json_string (arg));
        else
        if (admin == MX_ADMIN_REQUEST && (strcmp (arg, "--from") == 0 || strcmp (arg, "--to") == 0) && i + 1 < argc)
            json_object_set_new (args, arg + 2, json_string (argv [++i]));
        else
        if (admin == MX_ADMIN_REQUEST && arg [0] != '-' && json_object_get (args, "kind")
        &&  !json_object_get (args, "list"))
            json_object_set_new (args, "list", json_string (arg));
        else
        if (admin == MX_ADMIN_LOG_LEVEL && arg [0] != '-' && !json_object_get (args, "level")) {
            if (strcmp (arg, "debug") && strcmp (arg, "info") && strcmp (arg, "warn") && strcmp (arg, "error")) {
                fprintf (stderr, "msgxctl: log-level: '%s' is not a level (debug, info, warn or error)\n", arg);
                return -1;
            }
            json_object_set_new (args, "level", json_string (arg));
        }
        else
        if (admin == MX_ADMIN_LOG_LEVEL && arg [0] != '-' && !json_object_get (args, "actor"))
            json_object_set_new (args, "actor", json_string (arg));
        else {
            fprintf (stderr, "msgxctl: %s: unexpected argument '%s' (msgxctl help %s)\n",
                     mx_admin_verb (admin), arg, s_verb_of (admin)->name);
            json_decref (ids);
            return -1;
        }
    }
    if (ids) {
        if (json_array_size (ids) == 0) {
            fprintf (stderr, "msgxctl: %s: %s needs at least one %s ID\n", s_verb_of (admin)->name,
                     admin == MX_ADMIN_REPUBLISH ? "--flid" : "--id", admin == MX_ADMIN_REPUBLISH ? "flight" : "message");
            json_decref (ids);
            return -1;
        }
        json_object_set_new (args, admin == MX_ADMIN_REPUBLISH ? "flids" : "ids", ids);
    }
    if (admin == MX_ADMIN_REPUBLISH) {
        int scopes = !!json_object_get (args, "flids") + !!json_object_get (args, "day")
                   + !!json_object_get (args, "all") + !!json_object_get (args, "cancel");
        bool reference = !!json_object_get (args, "reference");
        if (scopes > 1 || (scopes == 0 && !reference) || (json_object_get (args, "cancel") && reference)) {
            fprintf (stderr, "msgxctl: republish needs exactly one of --flid N..., --day YYYY-MM-DD, --all,"
                             " --reference (alone: the reference entries only) or --cancel\n");
            return -1;
        }
    }
    if (admin == MX_ADMIN_REPLAY && !!json_object_get (args, "class") == !!json_object_get (args, "ids")) {
        fprintf (stderr, "msgxctl: replay needs exactly one of --class C or --id N...\n");
        return -1;
    }
    if (admin == MX_ADMIN_REPLAY_EVENTS && !!json_object_get (args, "all") == !!json_object_get (args, "ids")) {
        fprintf (stderr, "msgxctl: replay --events needs exactly one of --ids N[,N...] or --all\n");
        return -1;
    }
    if (admin == MX_ADMIN_BACKFILL_RECOVER && !!json_object_get (args, "all") == !!json_object_get (args, "ids")) {
        fprintf (stderr, "msgxctl: backfill recover needs exactly one of --all or --id N...\n");
        return -1;
    }
    if (admin == MX_ADMIN_REQUEST) {
        const char *kind = json_string_value (json_object_get (args, "kind"));
        if (!kind
        ||  (strcmp (kind, "schedule") == 0 && (!json_object_get (args, "from") || !json_object_get (args, "to")))
        ||  (strcmp (kind, "reference") == 0 && !json_object_get (args, "list"))) {
            fprintf (stderr, "msgxctl: request schedule --from YYYY-MM-DDTHH:MM --to YYYY-MM-DDTHH:MM"
                             " | request reference LIST\n");
            return -1;
        }
    }
    if (admin == MX_ADMIN_FLIGHT && !json_object_get (args, "flid")) {
        fprintf (stderr, "msgxctl: flight needs a FLID\n");
        return -1;
    }
    if (admin == MX_ADMIN_SHOW && !json_object_get (args, "msg_id")) {
        fprintf (stderr, "msgxctl: show needs a message ID\n");
        return -1;
    }
    if (admin == MX_ADMIN_LOG_LEVEL && !json_object_get (args, "level")) {
        fprintf (stderr, "msgxctl: log-level needs a level: debug, info, warn or error\n");
        return -1;
    }
    if (admin == MX_ADMIN_CUTOVER && !json_object_get (args, "watermark")) {
        fprintf (stderr, "msgxctl: cutover needs a watermark: min, zero, max or an ID\n");
        return -1;
    }
    if (json_object_get (args, "dry_run") && json_object_get (args, "yes")) {
        fprintf (stderr, "msgxctl: %s: --dry-run or --yes, not both\n", s_verb_of (admin)->name);
        return -1;
    }
    return 0;
}

static void
s_print_json (json_t *reply)
{
    char *text = json_dumps (reply, JSON_INDENT (2) | JSON_PRESERVE_ORDER);
    printf ("%s\n", text);
    free (text);
}

//  Human output of the verbs whose reply is a few fields.
static void
s_print_simple (mx_admin_t admin, json_t *reply)
{
    switch (admin) {
        case MX_ADMIN_PAUSE:
            printf ("pipeline paused: ingress and pump claim no new work (msgxctl resume continues)\n");
            break;
        case MX_ADMIN_RESUME:
            printf ("pipeline running: ingress and pump claim work\n");
            break;
        case MX_ADMIN_CUTOVER:
            if (json_is_true (json_object_get (reply, "dry_run")))
                printf ("dry run: %s\nadd --yes to seed it\n", s_text (json_object_get (reply, "message"), "?"));
            else
                printf ("watermark seeded: W=%" JSON_INTEGER_FORMAT " (cutover '%s')\n",
                        json_integer_value (json_object_get (reply, "w")),
                        s_text (json_object_get (reply, "watermark"), "?"));
            break;
        case MX_ADMIN_BACKFILL_RECOVER: {
            bool dry_run = json_is_true (json_object_get (reply, "dry_run"));
            json_t *rows = json_object_get (reply, "rows");
            if (json_array_size (rows) > 0)
                printf ("%-10s %-10s %s\n", "msg_id", "abandoned", "last error");
            size_t index;
            json_t *row;
            json_array_foreach (rows, index, row)
                printf ("%-10" JSON_INTEGER_FORMAT " %-10s %.60s\n", json_integer_value (json_object_get (row, "msg_id")),
                        s_text (json_object_get (row, "reason"), "-"), s_text (json_object_get (row, "error"), "-"));
            if (dry_run)
                printf ("dry run: %zu abandoned mark(s) would be re-armed; nothing changed; add --yes to re-arm\n",
                        json_array_size (rows));
            else
                printf ("%" JSON_INTEGER_FORMAT " abandoned mark(s) re-armed for the sweep\n",
                        json_integer_value (json_object_get (reply, "rearmed")));
            break;
        }
        case MX_ADMIN_REQUEST:
            if (json_is_true (json_object_get (reply, "dry_run"))) {
                const char *kind = s_text (json_object_get (reply, "kind"), "?");
                if (json_is_string (json_object_get (reply, "list")))
                    printf ("dry run: would send %s for the reference list %s", kind,
                            json_string_value (json_object_get (reply, "list")));
                else
                    printf ("dry run: would send %s for the schedule %s .. %s (%s)", kind,
                            s_text (json_object_get (reply, "from"), "?"), s_text (json_object_get (reply, "to"), "?"),
                            s_text (json_object_get (reply, "zone"), "?"));
                printf (" through COUTMSGS as %s\n", s_text (json_object_get (reply, "routing"), "?"));
                if (json_is_integer (json_object_get (reply, "supersedes")))
                    printf ("it replaces the open %s request %" JSON_INTEGER_FORMAT " (expired as superseded)\n", kind,
                            json_integer_value (json_object_get (reply, "supersedes")));
                printf ("nothing sent; add --yes to send it\n");
            }
            else
                printf ("request %" JSON_INTEGER_FORMAT " registered: SEQN %" JSON_INTEGER_FORMAT ", %s\n",
                        json_integer_value (json_object_get (reply, "id")),
                        json_integer_value (json_object_get (reply, "seqn")),
                        s_text (json_object_get (reply, "state"), "?"));
            break;
        case MX_ADMIN_REPUBLISH:
            if (json_is_true (json_object_get (reply, "cancelled")))
                printf ("republish job %" JSON_INTEGER_FORMAT " cancelled; %" JSON_INTEGER_FORMAT
                        " event(s) it had still to send are not sent\n",
                        json_integer_value (json_object_get (reply, "job_id")),
                        json_integer_value (json_object_get (reply, "left")));
            else
            if (json_is_true (json_object_get (reply, "dry_run")))
                printf ("dry run: %" JSON_INTEGER_FORMAT " flight(s) and %" JSON_INTEGER_FORMAT
                        " reference entr%s would be sent; nothing sent; add --yes to send them\n",
                        json_integer_value (json_object_get (reply, "flights")),
                        json_integer_value (json_object_get (reply, "entries")),
                        json_integer_value (json_object_get (reply, "entries")) == 1 ? "y" : "ies");
            else
                printf ("republish job %" JSON_INTEGER_FORMAT " started: %" JSON_INTEGER_FORMAT
                        " flight(s), %" JSON_INTEGER_FORMAT " reference entries; progress in msgxctl status\n",
                        json_integer_value (json_object_get (reply, "job_id")),
                        json_integer_value (json_object_get (reply, "flights")),
                        json_integer_value (json_object_get (reply, "entries")));
            break;
        case MX_ADMIN_LOG_LEVEL: {
            //  "log level info; processor debug": the global one, then
            //  each actor that has its own.
            printf ("log level %s", s_text (json_object_get (reply, "level"), "?"));
            const char *name;
            json_t *level;
            json_object_foreach (json_object_get (reply, "actors"), name, level)
                printf ("; %s %s", name, s_text (level, "?"));
            printf ("\n");
            break;
        }
        default:
            s_print_json (reply);
    }
}

static void
s_print_reply (mx_admin_t admin, json_t *payload, bool json_out)
{
    if (json_out)
        s_print_json (payload);
    else
    if (admin == MX_ADMIN_STATUS)
        s_print_status (payload);
    else
    if (admin == MX_ADMIN_REPLAY)
        s_print_replay (payload);
    else
    if (admin == MX_ADMIN_REPLAY_EVENTS)
        s_print_replay_events (payload);
    else
    if (admin == MX_ADMIN_DEAD)
        s_print_dead (payload);
    else
    if (admin == MX_ADMIN_FLIGHT) {
        //  Stored texts may carry escape sequences: shown, never obeyed.
        if (isatty (STDOUT_FILENO))
            s_escape_controls (payload);
        s_print_flight (payload);
    }
    else
    if (admin == MX_ADMIN_SHOW) {
        //  A stored message may carry escape sequences: shown, never obeyed.
        if (isatty (STDOUT_FILENO))
            s_escape_controls (payload);
        s_print_show (payload);
    }
    else
        s_print_simple (admin, payload);
}

//  "msgxctl help [VERB]"; exit code.
static int
s_help (const char *name)
{
    if (!name) {
        s_usage (stdout);
        return 0;
    }
    const s_verb_t *verb = s_verb_named (name);
    if (!verb) {
        fprintf (stderr, "msgxctl: help: unknown command '%s'\n", name);
        s_usage (stderr);
        return EXIT_USAGE;
    }
    s_verb_help (stdout, verb);
    return 0;
}

int
main (int argc, char **argv)
{
    const char *endpoint = getenv ("MSGX_ADMIN_ENDPOINT");
    if (!endpoint || !*endpoint)
        endpoint = access (PACKAGED_SOCKET, F_OK) == 0 ? "ipc://" PACKAGED_SOCKET : DEFAULT_ENDPOINT;
    int timeout_ms = DEFAULT_TIMEOUT_MS;
    bool json_out = false;
    static const struct option options [] = {
        { "endpoint", required_argument, NULL, 'e' },
        { "timeout", required_argument, NULL, 't' },
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "curve-server", required_argument, NULL, 'S' },
        { "curve-cert", required_argument, NULL, 'C' },
        { NULL, 0, NULL, 0 }
    };
    s_curve_server = getenv ("MSGXCTL_CURVE_SERVER");
    s_curve_cert = getenv ("MSGXCTL_CURVE_CERT");
    if (s_curve_server && !*s_curve_server)
        s_curve_server = NULL;
    if (s_curve_cert && !*s_curve_cert)
        s_curve_cert = NULL;
    int opt;
    while ((opt = getopt_long (argc, argv, "+e:t:jh", options, NULL)) != -1) {
        switch (opt) {
            case 'e': endpoint = optarg; break;
            case 't': {
                long long value = 0;
                if (s_parse_count (optarg, 3600000, &value)) {
                    fprintf (stderr, "msgxctl: --timeout wants milliseconds between 1 and 3600000, not '%s'\n", optarg);
                    return EXIT_USAGE;
                }
                timeout_ms = (int) value;
                break;
            }
            case 'j': json_out = true; break;
            case 'S': s_curve_server = optarg; break;
            case 'C': s_curve_cert = optarg; break;
            case 'h': s_usage (stdout); return 0;
            case 'V': printf ("msgxctl %s (commit %s)\n", MX_VERSION, MX_COMMIT); return 0;
            default:  s_usage (stderr); return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf (stderr, "msgxctl: missing command\n");
        s_usage (stderr);
        return EXIT_USAGE;
    }
    const char *verb = argv [optind++];
    if (strcmp (verb, "help") == 0) {
        if (optind + 1 < argc) {
            fprintf (stderr, "msgxctl: help takes one command, e.g. msgxctl help replay\n");
            return EXIT_USAGE;
        }
        return s_help (optind < argc ? argv [optind] : NULL);
    }
    bool help = false;
    for (int i = optind; i < argc; i++)
        if (strcmp (argv [i], "--help") == 0 || strcmp (argv [i], "-h") == 0)
            help = true;
    //  Two-word commands: "dead list", "backfill recover", "request schedule|reference".
    if (strcmp (verb, "dead") == 0 || strcmp (verb, "backfill") == 0) {
        const char *sub = optind < argc ? argv [optind] : "";
        const char *want = strcmp (verb, "dead") == 0 ? "list" : "recover";
        if (help)
            return s_help (verb);
        if (strcmp (sub, want) != 0) {
            fprintf (stderr, "msgxctl: '%s' needs '%s' (msgxctl %s %s ...; msgxctl help %s)\n",
                     verb, want, verb, want, verb);
            return EXIT_USAGE;
        }
        optind++;
        if (strcmp (verb, "backfill") == 0)
            verb = "backfill-recover";
    }
    //  "replay --events" is the outbox's replay, a verb of its own.
    if (strcmp (verb, "replay") == 0)
        for (int i = optind; i < argc; i++)
            if (strcmp (argv [i], "--events") == 0)
                verb = "replay-events";
    mx_admin_t admin = mx_admin_lookup (verb);
    if (admin == MX_ADMIN_UNKNOWN || !s_verb_of (admin)) {
        fprintf (stderr, "msgxctl: unknown command '%s'\n", verb);
        s_usage (stderr);
        return EXIT_USAGE;
    }
    const s_verb_t *about = s_verb_of (admin);
    if (help) {
        s_verb_help (stdout, about);
        return 0;
    }
    json_t *args = json_object ();
    long watch_ms = 0;                  //  > 0: status --watch
    bool interval_only = false;
    if (s_parse_args (admin, argc - optind, argv + optind, args, &json_out, &watch_ms)) {
        json_decref (args);
        fprintf (stderr, "usage: msgxctl %s\n", about->synopsis);
        return EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++)
        if (strcmp (argv [i], "--interval") == 0)
            interval_only = true;
    for (int i = optind; i < argc; i++)
        if (strcmp (argv [i], "--watch") == 0)
            interval_only = false;
    if (interval_only || (watch_ms > 0 && json_out)) {
        fprintf (stderr, interval_only ? "msgxctl: --interval goes with status --watch\n"
                                       : "msgxctl: status --watch draws a screen: no --json\n");
        json_decref (args);
        return EXIT_USAGE;
    }
    //  Who asked, for the audit log (the admin socket is private to the
    //  daemon's user and group, so this is the peer's own account).
    struct passwd *account = getpwuid (getuid ());
    json_object_set_new (args, "os_user", json_string (account ? account->pw_name : "unknown"));
    char *args_text = json_dumps (args, JSON_COMPACT);
    json_decref (args);
    zsys_handler_set (NULL);
    if (watch_ms > 0) {
        int watch_code = s_watch (endpoint, timeout_ms, watch_ms, args_text);
        free (args_text);
        zsys_shutdown ();
        return watch_code;
    }
    char *reply = NULL;
    int code = s_call (endpoint, timeout_ms, about, verb, args_text, &reply);
    free (args_text);
    if (code == 0) {
        json_error_t error;
        json_t *payload = json_loads (reply, 0, &error);
        if (!payload) {
            fprintf (stderr, "msgxctl: unreadable reply: the daemon sent invalid JSON (%s)\n", error.text);
            code = EXIT_BAD_REPLY;
        }
        else
            s_print_reply (admin, payload, json_out);
        json_decref (payload);
    }
    else
    if (code == EXIT_REFUSED)
        fprintf (stderr, "msgxctl: %s refused: %s\n", verb, reply);
    zstr_free (&reply);
    zsys_shutdown ();
    return code;
}
