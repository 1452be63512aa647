/*  msgxd - the message-exchange daemon.

    Thin main: load the configuration, start the control actor, wait for a
    signal or a fatal report, stop everything in reverse order.
*/
#include <czmq.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include "mx_actor.h"
#include "mx_clock.h"
#include "mx_config.h"
#include "mx_control.h"
#include "mx_kafka_embedded.h"
#include "mx_log.h"

#define ACTOR "main"
#define SHUTDOWN_LIMIT_S 5

extern char **environ;

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: msgxd [--config FILE] [--check-config] [--config-reference] [--version]\n"
        "  --config FILE       ZPL configuration file (optional: defaults + environment)\n"
        "  --check-config      validate the configuration, print it as JSON and exit\n"
        "  --config-reference  print every configuration key as a Markdown table\n"
        "Environment overrides: the key upper-cased, dots and dashes as '_'\n"
        "(msgx.pipeline.claim-batch -> MSGX_PIPELINE_CLAIM_BATCH).\n");
}

//  Shutdown must finish within SHUTDOWN_LIMIT_S; a stuck thread must not
//  keep a dying instance alive (PostgreSQL rolls back what it held).
static void
s_shutdown_watchdog (int signo)
{
    (void) signo;
    static const char line [] =
        "{\"level\":\"error\",\"actor\":\"main\",\"msg\":\"shutdown exceeded its time limit; exiting now\"}\n";
    if (write (2, line, sizeof line - 1) < 0) {
        //  Nothing more to do on the way out.
    }
    _exit (1);
}

int
main (int argc, char **argv)
{
    const char *config_path = NULL;
    bool check_only = false;
    static const struct option options [] = {
        { "config", required_argument, NULL, 'c' },
        { "check-config", no_argument, NULL, 'k' },
        { "config-reference", no_argument, NULL, 'r' },
        { "version", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int opt;
    while ((opt = getopt_long (argc, argv, "c:h", options, NULL)) != -1) {
        switch (opt) {
            case 'c': config_path = optarg; break;
            case 'k': check_only = true; break;
            case 'r': mx_config_print_reference (stdout); return 0;
            case 'v': printf ("msgxd 0.1.0\n"); return 0;
            case 'h': s_usage (stdout); return 0;
            default:  s_usage (stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf (stderr, "msgxd: unexpected argument '%s'\n", argv [optind]);
        s_usage (stderr);
        return 2;
    }

    zlist_t *errors = NULL, *warnings = NULL;
    mx_config_t *config = mx_config_load (config_path, environ, &errors, &warnings);
    for (char *line = warnings ? (char *) zlist_first (warnings) : NULL; line; line = (char *) zlist_next (warnings))
        fprintf (stderr, "msgxd: config warning: %s\n", line);
    zlist_destroy (&warnings);
    if (!config) {
        for (char *line = errors ? (char *) zlist_first (errors) : NULL; line; line = (char *) zlist_next (errors))
            fprintf (stderr, "msgxd: config error: %s\n", line);
        fprintf (stderr, "msgxd: refusing to start: %zu configuration problem%s\n",
                 errors ? zlist_size (errors) : 0, errors && zlist_size (errors) == 1 ? "" : "s");
        zlist_destroy (&errors);
        return MX_EXIT_CONFIG;
    }
    zlist_destroy (&errors);
    if (check_only) {
        json_t *dump = mx_config_to_json (config);
        char *text = json_dumps (dump, JSON_INDENT (2) | JSON_PRESERVE_ORDER);
        printf ("%s\nmsgxd: configuration OK\n", text);
        free (text);
        json_decref (dump);
        mx_config_destroy (&config);
        return 0;
    }

    //  Everything msgxd creates (the admin ipc socket first) is private.
    umask (077);
    mx_log_level_t level = MX_LOG_INFO;
    mx_log_level_parse (config->log_level, &level);
    mx_log_set_level (level);

    //  Signals go to a signalfd read here; every thread inherits the mask,
    //  so no actor is interrupted by them.
    sigset_t signals;
    sigemptyset (&signals);
    sigaddset (&signals, SIGINT);
    sigaddset (&signals, SIGTERM);
    pthread_sigmask (SIG_BLOCK, &signals, NULL);
    signal (SIGPIPE, SIG_IGN);
    int signal_fd = signalfd (-1, &signals, SFD_CLOEXEC);
    if (signal_fd < 0) {
        fprintf (stderr, "msgxd: signalfd: %s\n", strerror (errno));
        mx_config_destroy (&config);
        return 1;
    }
    zsys_handler_set (NULL);
    zsys_init ();
    mx_log_start (2, 65536);
    mx_info (ACTOR, "msgxd 0.1.0 starting: profile %s, pid %d", config->profile, (int) getpid ());

    int exit_code = 0;
    mx_kafka_embedded_t *kafka = NULL;
    char *kafka_description = NULL;
    if (*config->kafka_bootstrap_servers)
        kafka_description = zsys_sprintf ("brokers %s", config->kafka_bootstrap_servers);
    else {
        //  Validation already refused prod without brokers.
        const char *topics [] = { config->kafka_topic_msg, config->kafka_topic_schd, NULL };
        char *error = NULL;
        kafka = mx_kafka_embedded_new (1, topics, 3, &error);
        if (!kafka) {
            mx_error (ACTOR, "embedded Kafka mock cluster did not start: %s", error);
            free (error);
            exit_code = 1;
            goto done;
        }
        kafka_description = zsys_sprintf ("embedded mock cluster at %s (dev profile)",
                                          mx_kafka_embedded_bootstraps (kafka));
        mx_log_emit (MX_LOG_INFO, ACTOR, json_pack ("{s:s}", "bootstrap", mx_kafka_embedded_bootstraps (kafka)),
                     "Kafka: %s", kafka_description);
    }

    mx_clock_t *clock = mx_clock_new_system ();
    mx_control_args_t control_args = {
        .config = config,
        .clock = clock,
        .children = mx_pipeline_actors,
        .child_count = mx_pipeline_actor_count,
        .kafka_description = kafka_description,
        .kafka_bootstrap = kafka ? mx_kafka_embedded_bootstraps (kafka) : config->kafka_bootstrap_servers
    };
    char *detail = NULL, *error = NULL;
    zactor_t *control = mx_actor_start (mx_control_actor, &control_args, 10000, &detail, &error);
    if (!control) {
        mx_error (ACTOR, "refusing to start: %s", error);
        free (error);
        exit_code = 1;
    }
    else {
        mx_info (ACTOR, "control started: %s", detail);
        free (detail);
        zmq_pollitem_t items [] = {
            { NULL, signal_fd, ZMQ_POLLIN, 0 },
            { zsock_resolve (zactor_sock (control)), 0, ZMQ_POLLIN, 0 }
        };
        while (true) {
            if (zmq_poll (items, 2, -1) < 0) {
                if (errno == EINTR)
                    continue;
                mx_error (ACTOR, "poll failed: %s", zmq_strerror (zmq_errno ()));
                exit_code = 1;
                break;
            }
            if (items [0].revents & ZMQ_POLLIN) {
                struct signalfd_siginfo info;
                if (read (signal_fd, &info, sizeof info) == (ssize_t) sizeof info)
                    mx_info (ACTOR, "received %s: shutting down", strsignal ((int) info.ssi_signo));
                break;
            }
            if (items [1].revents & ZMQ_POLLIN) {
                zmsg_t *rest = NULL;
                mx_cmd_t cmd = mx_cmd_recv (zactor_sock (control), &rest);
                if (cmd == MX_CMD_FATAL) {
                    exit_code = mx_cmd_pop_int (rest);
                    char *reason = mx_cmd_pop_str (rest);
                    mx_error (ACTOR, "stopping after a fatal failure: %s", reason);
                    free (reason);
                    mx_cmd_done (&rest);
                    break;
                }
                zmsg_destroy (&rest);
            }
        }
        struct sigaction watchdog = { .sa_handler = s_shutdown_watchdog };
        sigaction (SIGALRM, &watchdog, NULL);
        alarm (SHUTDOWN_LIMIT_S);
        zactor_destroy (&control);
        alarm (0);
    }
    mx_clock_destroy (&clock);

done:
    mx_kafka_embedded_destroy (&kafka);
    free (kafka_description);
    mx_info (ACTOR, "msgxd stopped (exit code %d)", exit_code);
    mx_log_stop ();
    mx_config_destroy (&config);
    close (signal_fd);
    zsys_shutdown ();
    return exit_code;
}
