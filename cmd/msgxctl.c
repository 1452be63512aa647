/*  msgxctl - admin CLI for msgxd, over a ZeroMQ REQ socket.

    Exit codes: 0 ok, 1 refused by the daemon, 2 usage, 3 daemon unreachable.
*/
#include <czmq.h>
#include <getopt.h>
#include <jansson.h>
#include <pwd.h>
#include <sys/stat.h>

#include "mx_cmd.h"

#define EXIT_REFUSED 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define DEFAULT_ENDPOINT "ipc://msgx-admin.sock"
#define DEFAULT_TIMEOUT_MS 5000

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: msgxctl [--endpoint E] [--timeout MS] COMMAND [ARGS] [--json]\n"
        "commands:\n"
        "  status                     role, watermark and hole, FIFO head, counts by state, dependencies\n"
        "  pause                      stop ingress and pump from claiming work\n"
        "  resume                     let ingress and pump claim work again\n"
        "  replay --class C | --id N [N...]  [--dry-run] [--yes]\n"
        "                             move FAILED/DEAD rows of class CODEC_ERROR, UNSUPPORTED, INFRA\n"
        "                             or EXHAUSTED back to PENDING (--dry-run lists them with their\n"
        "                             flights; --yes acts)\n"
        "  cutover min|zero|max|ID    seed the watermark W on a fresh instance\n"
        "  dead list [--events] [--limit N]   DEAD messages, or DEAD outbox events\n"
        "  backfill recover --all | --id N [N...]   re-arm abandoned processed marks\n"
        "  request schedule --from T --to T | request reference LIST\n"
        "                             ask the upstream for a schedule window or a reference list\n"
        "options:\n"
        "  --endpoint E   daemon admin endpoint (default: $MSGX_ADMIN_ENDPOINT or " DEFAULT_ENDPOINT ")\n"
        "  --timeout MS   how long to wait for the reply (default %d)\n"
        "  --json         print the daemon's JSON reply as is\n"
        "exit codes: 0 ok, 1 refused, 2 usage, 3 daemon unreachable\n", DEFAULT_TIMEOUT_MS);
}

//  Returns the exit code; *reply_p gets the payload on 0 or 1.
static int
s_call (const char *endpoint, int timeout_ms, const char *verb, const char *args, char **reply_p)
{
    *reply_p = NULL;
    //  An ipc endpoint without its socket file has no daemon behind it;
    //  say so at once instead of waiting for the timeout.
    if (strncmp (endpoint, "ipc://", 6) == 0) {
        struct stat st;
        if (stat (endpoint + 6, &st) != 0) {
            fprintf (stderr, "msgxctl: daemon unreachable: no socket at %s (is msgxd running in that directory?)\n", endpoint);
            return EXIT_UNREACHABLE;
        }
    }
    else
    if (strncmp (endpoint, "tcp://", 6) != 0) {
        fprintf (stderr, "msgxctl: endpoint must start with ipc:// or tcp://: %s\n", endpoint);
        return EXIT_USAGE;
    }
    zsock_t *req = zsock_new (ZMQ_REQ);
    if (!req) {
        fprintf (stderr, "msgxctl: cannot create a socket\n");
        return EXIT_UNREACHABLE;
    }
    zsock_set_linger (req, 0);
    if (zsock_connect (req, "%s", endpoint) < 0) {
        fprintf (stderr, "msgxctl: cannot connect to %s: %s\n", endpoint, zmq_strerror (zmq_errno ()));
        zsock_destroy (&req);
        return EXIT_UNREACHABLE;
    }
    zstr_sendm (req, verb);
    zstr_send (req, args);
    zmq_pollitem_t item = { zsock_resolve (req), 0, ZMQ_POLLIN, 0 };
    int rc = zmq_poll (&item, 1, timeout_ms);
    if (rc <= 0) {
        fprintf (stderr, "msgxctl: daemon unreachable: no reply from %s within %d ms\n", endpoint, timeout_ms);
        zsock_destroy (&req);
        return EXIT_UNREACHABLE;
    }
    char *verdict = NULL, *payload = NULL;
    zstr_recvx (req, &verdict, &payload, NULL);
    zsock_destroy (&req);
    int code;
    if (verdict && payload && strcmp (verdict, "OK") == 0)
        code = 0;
    else
    if (verdict && payload && strcmp (verdict, "ERR") == 0)
        code = EXIT_REFUSED;
    else {
        fprintf (stderr, "msgxctl: malformed reply from %s\n", endpoint);
        code = EXIT_UNREACHABLE;
    }
    zstr_free (&verdict);
    if (code == EXIT_UNREACHABLE)
        zstr_free (&payload);
    *reply_p = payload;
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
    printf ("%zu %s\n", json_array_size (rows), events ? "dead event(s)" : "dead message(s)");
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

//  Verb arguments into the JSON object sent to the daemon.
static int
s_parse_args (mx_admin_t admin, int argc, char **argv, json_t *args, bool *json_out)
{
    json_t *ids = NULL;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv [i];
        if (strcmp (arg, "--json") == 0)
            *json_out = true;
        else
        if (admin == MX_ADMIN_REPLAY && strcmp (arg, "--class") == 0 && i + 1 < argc)
            json_object_set_new (args, "class", json_string (argv [++i]));
        else
        if ((admin == MX_ADMIN_REPLAY || admin == MX_ADMIN_BACKFILL_RECOVER) && strcmp (arg, "--id") == 0) {
            if (!ids)
                ids = json_array ();
            while (i + 1 < argc && argv [i + 1][0] != '-') {
                char *end = NULL;
                long long id = strtoll (argv [++i], &end, 10);
                if (!*argv [i] || *end || id <= 0) {
                    fprintf (stderr, "msgxctl: replay: '%s' is not a message ID\n", argv [i]);
                    json_decref (ids);
                    return -1;
                }
                json_array_append_new (ids, json_integer (id));
            }
        }
        else
        if (admin == MX_ADMIN_REPLAY && strcmp (arg, "--dry-run") == 0)
            json_object_set_new (args, "dry_run", json_true ());
        else
        if (admin == MX_ADMIN_REPLAY && strcmp (arg, "--yes") == 0)
            json_object_set_new (args, "yes", json_true ());
        else
        if (admin == MX_ADMIN_CUTOVER && arg [0] != '-' && !json_object_get (args, "watermark"))
            json_object_set_new (args, "watermark", json_string (arg));
        else
        if (admin == MX_ADMIN_DEAD && strcmp (arg, "--events") == 0)
            json_object_set_new (args, "events", json_true ());
        else
        if (admin == MX_ADMIN_DEAD && strcmp (arg, "--limit") == 0 && i + 1 < argc && atoi (argv [i + 1]) > 0)
            json_object_set_new (args, "limit", json_integer (atoi (argv [++i])));
        else
        if (admin == MX_ADMIN_BACKFILL_RECOVER && strcmp (arg, "--all") == 0)
            json_object_set_new (args, "all", json_true ());
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
        else {
            fprintf (stderr, "msgxctl: %s: unexpected argument '%s'\n", mx_admin_verb (admin), arg);
            json_decref (ids);
            return -1;
        }
    }
    if (ids) {
        if (json_array_size (ids) == 0) {
            fprintf (stderr, "msgxctl: replay: --id needs at least one message ID\n");
            json_decref (ids);
            return -1;
        }
        json_object_set_new (args, "ids", ids);
    }
    if (admin == MX_ADMIN_REPLAY && !!json_object_get (args, "class") == !!json_object_get (args, "ids")) {
        fprintf (stderr, "msgxctl: replay needs exactly one of --class C or --id N...\n");
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
    if (admin == MX_ADMIN_CUTOVER && !json_object_get (args, "watermark")) {
        fprintf (stderr, "msgxctl: cutover needs a watermark: min, zero, max or an ID\n");
        return -1;
    }
    return 0;
}

int
main (int argc, char **argv)
{
    const char *endpoint = getenv ("MSGX_ADMIN_ENDPOINT");
    if (!endpoint || !*endpoint)
        endpoint = DEFAULT_ENDPOINT;
    int timeout_ms = DEFAULT_TIMEOUT_MS;
    bool json_out = false;
    static const struct option options [] = {
        { "endpoint", required_argument, NULL, 'e' },
        { "timeout", required_argument, NULL, 't' },
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int opt;
    while ((opt = getopt_long (argc, argv, "+e:t:jh", options, NULL)) != -1) {
        switch (opt) {
            case 'e': endpoint = optarg; break;
            case 't': {
                char *end = NULL;
                long value = strtol (optarg, &end, 10);
                if (!*optarg || *end || value <= 0 || value > 3600000) {
                    fprintf (stderr, "msgxctl: --timeout wants milliseconds between 1 and 3600000, not '%s'\n", optarg);
                    return EXIT_USAGE;
                }
                timeout_ms = (int) value;
                break;
            }
            case 'j': json_out = true; break;
            case 'h': s_usage (stdout); return 0;
            default:  s_usage (stderr); return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf (stderr, "msgxctl: missing command\n");
        s_usage (stderr);
        return EXIT_USAGE;
    }
    const char *verb = argv [optind++];
    //  Two-word commands: "dead list", "backfill recover", "request schedule|reference".
    if (strcmp (verb, "dead") == 0 || strcmp (verb, "backfill") == 0) {
        const char *sub = optind < argc ? argv [optind] : "";
        const char *want = strcmp (verb, "dead") == 0 ? "list" : "recover";
        if (strcmp (sub, want) != 0) {
            fprintf (stderr, "msgxctl: '%s' needs '%s' (msgxctl %s %s ...)\n", verb, want, verb, want);
            return EXIT_USAGE;
        }
        optind++;
        if (strcmp (verb, "backfill") == 0)
            verb = "backfill-recover";
    }
    mx_admin_t admin = mx_admin_lookup (verb);
    if (admin == MX_ADMIN_UNKNOWN) {
        fprintf (stderr, "msgxctl: unknown command '%s'\n", verb);
        s_usage (stderr);
        return EXIT_USAGE;
    }
    json_t *args = json_object ();
    if (s_parse_args (admin, argc - optind, argv + optind, args, &json_out)) {
        json_decref (args);
        return EXIT_USAGE;
    }
    //  Who asked, for the audit log (the admin socket is private to the
    //  daemon's user, so this is the peer's own account).
    struct passwd *account = getpwuid (getuid ());
    json_object_set_new (args, "os_user", json_string (account ? account->pw_name : "unknown"));
    char *args_text = json_dumps (args, JSON_COMPACT);
    json_decref (args);
    zsys_handler_set (NULL);
    char *reply = NULL;
    int code = s_call (endpoint, timeout_ms, verb, args_text, &reply);
    free (args_text);
    if (code == 0) {
        json_error_t error;
        json_t *payload = json_loads (reply, 0, &error);
        if (!payload) {
            fprintf (stderr, "msgxctl: daemon sent invalid JSON: %s\n", error.text);
            code = EXIT_UNREACHABLE;
        }
        else
        if (admin == MX_ADMIN_REPLAY && !json_out)
            s_print_replay (payload);
        else
        if (admin == MX_ADMIN_DEAD && !json_out)
            s_print_dead (payload);
        else
        if (json_out || admin != MX_ADMIN_STATUS) {
            char *text = json_dumps (payload, JSON_INDENT (2) | JSON_PRESERVE_ORDER);
            printf ("%s\n", text);
            free (text);
        }
        else
            s_print_status (payload);
        json_decref (payload);
    }
    else
    if (code == EXIT_REFUSED)
        fprintf (stderr, "msgxctl: %s refused: %s\n", verb, reply);
    zstr_free (&reply);
    zsys_shutdown ();
    return code;
}
