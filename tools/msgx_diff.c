/*  msgx-diff - compare msgxd's flight state with a legacy store, field by
    field, over an operation day or a FLID range (mx_diff, mx_diff_map,
    mx_diff_source).

    Exit codes: 0 match rate at or above the threshold, 1 below it,
    2 usage, mapping, connection or query errors.
*/
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mx_diff.h"
#include "mx_diff_source.h"
#include "mx_tz.h"
#include "mx_version.h"

#define S_THRESHOLD_DEFAULT 99.9
#define S_EXAMPLES_DEFAULT 5
#define S_TIMEOUT_DEFAULT 60
#define S_MAX_FLIGHTS_DEFAULT 100000

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: msgx-diff --mapping FILE --legacy URI (--day YYYY-MM-DD | --flid A-B) [options]\n"
        "\n"
        "Compares msgxd's flight state (its PostgreSQL) with a legacy store, field\n"
        "by field, as the mapping says (msgx-diff(1)). Reads both sides only.\n"
        "\n"
        "  --mapping FILE         legacy table, key, columns -> wire codes, normalisers (JSON)\n"
        "  --legacy URI           mysql://[USER@]HOST[:PORT]/DB[?socket=PATH] (also mariadb://),\n"
        "                         or a libpq URI postgresql://... (TLS and password file in it)\n"
        "  --day YYYY-MM-DD       one operation day (the mapping's \"day\" column)\n"
        "  --flid A-B             a FLID range (a mapping keyed by FLID)\n"
        "  --msgx CONNINFO        msgxd's PostgreSQL (else MSGX_PG_CONNINFO, or the file\n"
        "                         named by MSGX_PG_CONNINFO_FILE)\n"
        "  --legacy-password-file FILE   MariaDB/MySQL password (first line)\n"
        "  --legacy-ssl-mode M    disabled, required or verify-full (default verify-full,\n"
        "                         disabled for a loopback host or a socket)\n"
        "  --legacy-ssl-ca FILE --legacy-ssl-cert FILE --legacy-ssl-key FILE\n"
        "  --allow-unverified     accept a server over the network that is not verified\n"
        "                         (below ssl-mode verify-full, sslmode verify-ca)\n"
        "  --threshold PCT        lowest match rate that passes (%.1f)\n"
        "  --examples N           mismatch examples per field and missing flights listed (%d)\n"
        "  --timeout SECONDS      connect and statement timeout on both sides (%d)\n"
        "  --max-flights N        most flights of msgxd held for the window (%d)\n"
        "  --json                 the report as JSON on stdout instead of text\n"
        "  --html FILE            also an HTML report with per-field bars\n"
        "  --version, --help\n"
        "\n"
        "Exit codes: 0 match rate >= threshold, 1 below, 2 usage or connection errors.\n",
        S_THRESHOLD_DEFAULT, S_EXAMPLES_DEFAULT, S_TIMEOUT_DEFAULT, S_MAX_FLIGHTS_DEFAULT);
}

typedef struct {
    const char *mapping;
    const char *msgx;
    const char *day;
    bool flids;
    int64_t flid_from, flid_to;
    double threshold;
    long examples;
    long timeout_s;
    long max_flights;
    bool json;
    const char *html;
    mx_diff_legacy_t legacy;
} s_args_t;

static int s_fail (const char *format, ...) __attribute__ ((format (printf, 1, 2)));

//  One line on stderr; the usage exit code.
static int
s_fail (const char *format, ...)
{
    va_list args;
    va_start (args, format);
    fprintf (stderr, "msgx-diff: ");
    vfprintf (stderr, format, args);
    fprintf (stderr, "\n");
    va_end (args);
    return 2;
}

static int
s_long (const char *text, long min, long max, long *value)
{
    char *end = NULL;
    errno = 0;
    long result = strtol (text, &end, 10);
    if (errno || end == text || *end || result < min || result > max)
        return -1;
    *value = result;
    return 0;
}

static int
s_day_ok (const char *day)
{
    int year, month, date;
    char tail;
    if (strlen (day) != 10 || sscanf (day, "%4d-%2d-%2d%c", &year, &month, &date, &tail) != 3)
        return 0;
    return month >= 1 && month <= 12 && date >= 1 && date <= mx_tz_days_in_month (year, month);
}

static int
s_flid_range (const char *text, int64_t *from, int64_t *to)
{
    char *end = NULL;
    errno = 0;
    long long a = strtoll (text, &end, 10);
    if (errno || end == text || *end != '-')
        return -1;
    const char *second = end + 1;
    long long b = strtoll (second, &end, 10);
    if (errno || end == second || *end || a < 1 || b < a)
        return -1;
    *from = a;
    *to = b;
    return 0;
}

//  Returns -1 to go on, else the exit code.
static int
s_parse (int argc, char **argv, s_args_t *args)
{
    enum { O_MSGX = 256, O_PASSWORD, O_SSL_MODE, O_SSL_CA, O_SSL_CERT, O_SSL_KEY, O_THRESHOLD,
           O_EXAMPLES, O_TIMEOUT, O_MAX, O_JSON, O_HTML, O_VERSION, O_HELP, O_FLID, O_UNVERIFIED };
    static const struct option options [] = {
        { "mapping", required_argument, NULL, 'm' }, { "legacy", required_argument, NULL, 'l' },
        { "day", required_argument, NULL, 'd' }, { "flid", required_argument, NULL, O_FLID },
        { "msgx", required_argument, NULL, O_MSGX },
        { "legacy-password-file", required_argument, NULL, O_PASSWORD },
        { "legacy-ssl-mode", required_argument, NULL, O_SSL_MODE },
        { "legacy-ssl-ca", required_argument, NULL, O_SSL_CA },
        { "legacy-ssl-cert", required_argument, NULL, O_SSL_CERT },
        { "legacy-ssl-key", required_argument, NULL, O_SSL_KEY },
        { "allow-unverified", no_argument, NULL, O_UNVERIFIED },
        { "threshold", required_argument, NULL, O_THRESHOLD },
        { "examples", required_argument, NULL, O_EXAMPLES },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "max-flights", required_argument, NULL, O_MAX },
        { "json", no_argument, NULL, O_JSON }, { "html", required_argument, NULL, O_HTML },
        { "version", no_argument, NULL, O_VERSION }, { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 }
    };
    int option;
    opterr = 0;
    while ((option = getopt_long (argc, argv, "", options, NULL)) != -1) {
        char *end = NULL;
        switch (option) {
            case 'm': args->mapping = optarg; break;
            case 'l': args->legacy.uri = optarg; break;
            case 'd':
                if (!s_day_ok (optarg))
                    return s_fail ("--day wants a date YYYY-MM-DD, not '%s'", optarg);
                args->day = optarg;
                break;
            case O_FLID:
                if (s_flid_range (optarg, &args->flid_from, &args->flid_to))
                    return s_fail ("--flid wants A-B, two FLIDs with A <= B, not '%s'", optarg);
                args->flids = true;
                break;
            case O_MSGX: args->msgx = optarg; break;
            case O_PASSWORD: args->legacy.password_file = optarg; break;
            case O_SSL_MODE:
                if (strcmp (optarg, "disabled") && strcmp (optarg, "required") && strcmp (optarg, "verify-full"))
                    return s_fail ("--legacy-ssl-mode is disabled, required or verify-full, not '%s'", optarg);
                args->legacy.ssl_mode = optarg;
                break;
            case O_SSL_CA: args->legacy.ssl_ca = optarg; break;
            case O_SSL_CERT: args->legacy.ssl_cert = optarg; break;
            case O_SSL_KEY: args->legacy.ssl_key = optarg; break;
            case O_UNVERIFIED: args->legacy.allow_unverified = true; break;
            case O_THRESHOLD:
                errno = 0;
                args->threshold = strtod (optarg, &end);
                if (errno || end == optarg || *end || !(args->threshold >= 0 && args->threshold <= 100))
                    return s_fail ("--threshold wants a percentage from 0 to 100, not '%s'", optarg);
                break;
            case O_EXAMPLES:
                if (s_long (optarg, 0, 10000, &args->examples))
                    return s_fail ("--examples wants a number from 0 to 10000, not '%s'", optarg);
                break;
            case O_TIMEOUT:
                if (s_long (optarg, 1, 86400, &args->timeout_s))
                    return s_fail ("--timeout wants whole seconds from 1 to 86400, not '%s'", optarg);
                break;
            case O_MAX:
                if (s_long (optarg, 1, 100000000, &args->max_flights))
                    return s_fail ("--max-flights wants a number from 1, not '%s'", optarg);
                break;
            case O_JSON: args->json = true; break;
            case O_HTML: args->html = optarg; break;
            case O_VERSION: printf ("msgx-diff %s\n", MX_VERSION); return 0;
            case O_HELP: s_usage (stdout); return 0;
            default:
                fprintf (stderr, "msgx-diff: unknown option or missing value: %s\n", argv [optind - 1]);
                s_usage (stderr);
                return 2;
        }
    }
    if (optind < argc)
        return s_fail ("unexpected argument '%s'", argv [optind]);
    if (!args->mapping)
        return s_fail ("%s", "--mapping FILE is needed");
    if (!args->legacy.uri)
        return s_fail ("%s", "--legacy URI is needed");
    if ((args->day != NULL) == args->flids)
        return s_fail ("%s", "give either --day YYYY-MM-DD or --flid A-B");
    return -1;
}

//  msgxd's conninfo: --msgx, MSGX_PG_CONNINFO or the file it names with
//  _FILE (as msgxd reads it: the content without its trailing newline).
static char *
s_msgx_conninfo (const s_args_t *args, char **error)
{
    if (args->msgx)
        return strdup (args->msgx);
    const char *value = getenv ("MSGX_PG_CONNINFO");
    const char *file = getenv ("MSGX_PG_CONNINFO_FILE");
    if (value && file) {
        *error = strdup ("MSGX_PG_CONNINFO and MSGX_PG_CONNINFO_FILE are both set");
        return NULL;
    }
    if (value)
        return strdup (value);
    if (!file) {
        *error = strdup ("msgxd's PostgreSQL is not given: --msgx CONNINFO or MSGX_PG_CONNINFO");
        return NULL;
    }
    FILE *in = fopen (file, "r");
    char line [4096];
    if (!in || !fgets (line, sizeof line, in)) {
        if (asprintf (error, "cannot read MSGX_PG_CONNINFO_FILE %s: %s", file,
                      in ? "empty" : strerror (errno)) < 0)
            *error = NULL;
        if (in)
            fclose (in);
        return NULL;
    }
    fclose (in);
    line [strcspn (line, "\r\n")] = '\0';
    return strdup (line);
}

static int
s_output (const s_args_t *args, const json_t *report)
{
    if (args->json) {
        if (json_dumpf (report, stdout, JSON_INDENT (2) | JSON_PRESERVE_ORDER) || fputs ("\n", stdout) < 0)
            return s_fail ("%s", "cannot write the report");
    }
    else
        mx_diff_write_text (report, stdout);
    if (args->html) {
        FILE *out = fopen (args->html, "w");
        if (!out)
            return s_fail ("cannot write the HTML report: %s", strerror (errno));
        int rc = mx_diff_write_html (report, out);
        if (fclose (out) || rc)
            return s_fail ("cannot write the HTML report %s", args->html);
    }
    return fflush (stdout) ? s_fail ("%s", "cannot write the report") : 0;
}

int
main (int argc, char **argv)
{
    s_args_t args = {
        .threshold = S_THRESHOLD_DEFAULT, .examples = S_EXAMPLES_DEFAULT,
        .timeout_s = S_TIMEOUT_DEFAULT, .max_flights = S_MAX_FLIGHTS_DEFAULT
    };
    int code = s_parse (argc, argv, &args);
    if (code >= 0)
        return code;
    args.legacy.timeout_s = (int) args.timeout_s;
    char *error = NULL;
    mx_diff_map_t *map = mx_diff_map_load (args.mapping, &error);
    if (!map) {
        fprintf (stderr, "%s\n", error ? error : "cannot read the mapping");
        free (error);
        return 2;
    }
    char *conninfo = s_msgx_conninfo (&args, &error);
    mx_diff_window_t window = { args.day, args.flid_from, args.flid_to };
    mx_diff_t *diff = mx_diff_new (map, (size_t) args.examples, (size_t) args.max_flights);
    code = 2;
    if (conninfo
    &&  mx_diff_source_msgx (conninfo, (int) args.timeout_s, args.legacy.allow_unverified, map, &window,
                             diff, &error) == 0
    &&  mx_diff_source_legacy (&args.legacy, map, &window, diff, &error) == 0) {
        json_t *described = args.day ? json_pack ("{s:s}", "day", args.day)
                          : json_pack ("{s:I, s:I}", "flid_from", (json_int_t) args.flid_from,
                                       "flid_to", (json_int_t) args.flid_to);
        json_t *report = mx_diff_report (diff, described, args.threshold);
        code = s_output (&args, report);
        if (code == 0)
            code = json_is_true (json_object_get (report, "passed")) ? 0 : 1;
        json_decref (report);
    }
    else
        fprintf (stderr, "msgx-diff: %s\n", error ? error : "failed");
    free (error);
    free (conninfo);
    mx_diff_destroy (&diff);
    mx_diff_map_destroy (&map);
    return code;
}
