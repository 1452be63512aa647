/*  Actor tests: the control actor driven through its pipe and its admin
    socket, with recording child actors, on a real PostgreSQL database.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <dirent.h>
#include <grp.h>
#include <libpq-fe.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mx_actor.h"
#include "mx_config.h"
#include "mx_control.h"
#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_testenv.h"

//  ---------------------------------------------------------------------
//  What the recording children saw, in order. Test-only shared state.

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    char events [64][48];
    int count;
    const char *fail_start;     //  name of the child that refuses START
    const char *fatal_on_pause; //  name of the child that reports FATAL on PAUSE
} s_rec = { .lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER };

static void
s_record (const char *name, const char *event)
{
    pthread_mutex_lock (&s_rec.lock);
    if (s_rec.count < 64)
        snprintf (s_rec.events [s_rec.count++], 48, "%s:%s", name, event);
    pthread_cond_broadcast (&s_rec.changed);
    pthread_mutex_unlock (&s_rec.lock);
}

static void
s_record_reset (void)
{
    pthread_mutex_lock (&s_rec.lock);
    s_rec.count = 0;
    s_rec.fail_start = NULL;
    s_rec.fatal_on_pause = NULL;
    pthread_mutex_unlock (&s_rec.lock);
}

//  Waits for an event (bounded: a missing event fails the test).
static bool
s_record_wait (const char *event, int timeout_ms)
{
    struct timespec until;
    clock_gettime (CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long) (timeout_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock (&s_rec.lock);
    bool found = false;
    while (!found) {
        for (int i = 0; i < s_rec.count && !found; i++)
            found = strcmp (s_rec.events [i], event) == 0;
        if (!found && pthread_cond_timedwait (&s_rec.changed, &s_rec.lock, &until) != 0)
            break;
    }
    pthread_mutex_unlock (&s_rec.lock);
    return found;
}

//  The events containing `filter` (all when NULL), space-separated.
static char *
s_record_select (const char *filter)
{
    pthread_mutex_lock (&s_rec.lock);
    char *text = strdup ("");
    for (int i = 0; i < s_rec.count; i++) {
        if (filter && !strstr (s_rec.events [i], filter))
            continue;
        char *next = zsys_sprintf ("%s%s%s", text, *text ? " " : "", s_rec.events [i]);
        free (text);
        text = next;
    }
    pthread_mutex_unlock (&s_rec.lock);
    return text;
}

static char *
s_record_join (void)
{
    return s_record_select (NULL);
}

static void
s_recording_actor (zsock_t *pipe, void *args)
{
    mx_actor_args_t *self = (mx_actor_args_t *) args;
    zsock_signal (pipe, 0);
    bool terminated = false;
    while (!terminated) {
        zmsg_t *rest = NULL;
        mx_cmd_t cmd = mx_cmd_recv (pipe, &rest);
        if (!rest)
            break;
        switch (cmd) {
            case MX_CMD_START:
                pthread_mutex_lock (&s_rec.lock);
                bool fail = s_rec.fail_start && strcmp (s_rec.fail_start, self->name) == 0;
                pthread_mutex_unlock (&s_rec.lock);
                if (fail) {
                    s_record (self->name, "START_FAILED");
                    mx_actor_reply_failed (pipe, "cannot reach its dependency");
                    mx_cmd_done (&rest);
                    mx_actor_wait_term (pipe);
                    s_record (self->name, "STOP");
                    return;
                }
                s_record (self->name, "START");
                mx_actor_reply_started (pipe, "recording");
                break;
            case MX_CMD_PAUSE: {
                s_record (self->name, "PAUSE");
                pthread_mutex_lock (&s_rec.lock);
                bool fatal = s_rec.fatal_on_pause && strcmp (s_rec.fatal_on_pause, self->name) == 0;
                pthread_mutex_unlock (&s_rec.lock);
                if (fatal)
                    mx_cmd_send (pipe, MX_CMD_FATAL, 1, "dependency gone");
                break;
            }
            case MX_CMD_RESUME: s_record (self->name, "RESUME"); break;
            case MX_CMD_TERM: terminated = true; break;
            default: fail_msg ("unexpected command %d", cmd);
        }
        mx_cmd_done (&rest);
    }
    s_record (self->name, "STOP");
}

static const mx_actor_def_t s_children [] = {
    { "alpha", s_recording_actor, false },
    { "beta", s_recording_actor, false },
    { "gamma", s_recording_actor, false },
};

//  ---------------------------------------------------------------------
//  Fixture: a fresh database, a temp folder, a fake clock.

typedef struct {
    mx_testpg_t *pg;
    char *dir;
    mx_clock_t *clock;
} fixture_t;

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    fx->pg = mx_testpg_new ();
    fx->dir = mx_testenv_tmpdir ();
    fx->clock = mx_clock_new_fake (1767225600000LL);      //  2026-01-01T00:00:00Z
    s_record_reset ();
    *state = fx;
    return fx->pg && fx->dir ? 0 : -1;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_clock_destroy (&fx->clock);
    mx_testpg_destroy (&fx->pg);
    mx_testenv_rmtree (fx->dir);
    free (fx->dir);
    free (fx);
    return 0;
}

static mx_config_t *
s_config (fixture_t *fx, const char *name, const char *conninfo)
{
    mx_config_t *config = mx_config_new_defaults ();
    char *endpoint = zsys_sprintf ("ipc://%s/%s.sock", fx->dir, name);
    assert_int_equal (mx_config_set (config, "msgx.admin.endpoint", endpoint, NULL), 0);
    assert_int_equal (mx_config_set (config, "msgx.pg.conninfo",
                                     conninfo ? conninfo : mx_testpg_conninfo (fx->pg), NULL), 0);
    assert_int_equal (mx_config_set (config, "msgx.pipeline.autostart", "true", NULL), 0);
    free (endpoint);
    return config;
}

//  One admin round trip; returns the verdict and the payload in *payload.
static char *
s_admin (const mx_config_t *config, const char *verb, const char *args, char **payload)
{
    zsock_t *req = zsock_new_req (config->admin_endpoint);
    assert_non_null (req);
    zstr_sendm (req, verb);
    zstr_send (req, args);
    zmq_pollitem_t item = { zsock_resolve (req), 0, ZMQ_POLLIN, 0 };
    assert_int_equal (zmq_poll (&item, 1, 10000), 1);
    char *verdict = NULL;
    zstr_recvx (req, &verdict, payload, NULL);
    zsock_destroy (&req);
    return verdict;
}

//  One admin round trip that must end with verdict and payload.
static void
s_admin_expect (const mx_config_t *config, const char *verb, const char *verdict, const char *payload)
{
    char *got = NULL;
    char *got_verdict = s_admin (config, verb, "{}", &got);
    assert_string_equal (got_verdict, verdict);
    assert_string_equal (got, payload);
    zstr_free (&got_verdict);
    zstr_free (&got);
}

static json_t *
s_status (const mx_config_t *config)
{
    char *payload = NULL;
    char *verdict = s_admin (config, "status", "{}", &payload);
    assert_string_equal (verdict, "OK");
    json_t *status = json_loads (payload, 0, NULL);
    assert_non_null (status);
    zstr_free (&verdict);
    zstr_free (&payload);
    return status;
}

static zactor_t *
s_control_start (mx_control_args_t *args)
{
    char *detail = NULL, *error = NULL;
    zactor_t *control = mx_actor_start (mx_control_actor, args, 10000, &detail, &error);
    if (!control)
        fail_msg ("control did not start: %s", error);
    free (detail);
    return control;
}

//  ---------------------------------------------------------------------

static void
test_active_starts_children_in_order_and_stops_in_reverse (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "a", NULL);
    mx_control_args_t args = { config, fx->clock, s_children, 3, "test kafka", NULL };
    zactor_t *control = s_control_start (&args);

    json_t *status = s_status (config);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    json_t *actors = json_object_get (json_object_get (status, "pipeline"), "actors");
    assert_int_equal (json_array_size (actors), 5);
    assert_string_equal (json_string_value (json_array_get (actors, 0)), "control");
    assert_string_equal (json_string_value (json_array_get (actors, 1)), "reader");
    assert_string_equal (json_string_value (json_array_get (actors, 4)), "gamma");
    assert_false (json_is_true (json_object_get (json_object_get (status, "pipeline"), "paused")));
    assert_int_equal (json_integer_value (json_object_get (json_object_get (status, "cursor"), "w")), 0);
    assert_true (json_is_null (json_object_get (status, "head")));
    assert_int_equal (json_integer_value (json_object_get (json_object_get (status, "counts"), "PENDING")), 0);
    assert_string_equal (json_string_value (json_object_get (json_object_get (status, "dependencies"), "postgresql")), "ok");
    json_decref (status);

    //  The admin socket is private to the daemon's user.
    struct stat st;
    assert_int_equal (stat (config->admin_endpoint + 6, &st), 0);
    assert_int_equal (st.st_mode & 0777, 0600);

    mx_actor_destroy (&control);
    char *events = s_record_join ();
    assert_string_equal (events, "alpha:START beta:START gamma:START gamma:STOP beta:STOP alpha:STOP");
    free (events);
    //  The ipc file goes with the daemon.
    assert_int_not_equal (stat (config->admin_endpoint + 6, &st), 0);
    mx_config_destroy (&config);
}

static void
test_migrations_applied_once_under_the_lock (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "m", NULL);
    mx_control_args_t args = { config, fx->clock, s_children, 0, NULL, NULL };
    PGconn *conn = PQconnectdb (mx_testpg_conninfo (fx->pg));
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    char key [32];
    snprintf (key, sizeof key, "%lld", (long long) config->instance_lock_key);
    for (int round = 0; round < 2; round++) {
        zactor_t *control = s_control_start (&args);
        json_t *status = s_status (config);
        assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
        json_decref (status);
        mx_actor_destroy (&control);
        //  The server ends the old session (and frees its lock) after the
        //  client has gone: taking the lock waits for that, so the next
        //  round finds it free as a restarted daemon would, a while later.
        free (mx_testpg_value_params (conn, "SELECT pg_advisory_lock ($1::bigint)", 1, (const char *[]) { key }));
        free (mx_testpg_value_params (conn, "SELECT pg_advisory_unlock ($1::bigint)", 1, (const char *[]) { key }));
    }
    PGresult *res = PQexec (conn, "SELECT count(*), count(DISTINCT version) FROM schema_migrations");
    assert_int_equal (PQresultStatus (res), PGRES_TUPLES_OK);
    assert_true (atoi (PQgetvalue (res, 0, 0)) >= 1);
    assert_string_equal (PQgetvalue (res, 0, 0), PQgetvalue (res, 0, 1));
    PQclear (res);
    PQfinish (conn);
    mx_config_destroy (&config);
}

static void
test_standby_takes_over_when_active_goes (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config_a = s_config (fx, "a", NULL);
    mx_config_t *config_b = s_config (fx, "b", NULL);
    const mx_actor_def_t only_alpha [] = { { "alpha", s_recording_actor, false } };
    const mx_actor_def_t only_beta [] = { { "beta", s_recording_actor, false } };
    mx_control_args_t args_a = { config_a, fx->clock, only_alpha, 1, NULL, NULL };
    mx_control_args_t args_b = { config_b, fx->clock, only_beta, 1, NULL, NULL };

    zactor_t *a = s_control_start (&args_a);
    //  START_OK comes before the lock attempt; a status reply comes after.
    json_t *status = s_status (config_a);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    json_decref (status);
    zactor_t *b = s_control_start (&args_b);
    status = s_status (config_b);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "standby");
    //  control and its reader: no child runs on a standby.
    assert_int_equal (json_array_size (json_object_get (json_object_get (status, "pipeline"), "actors")), 2);
    json_decref (status);

    //  A standby refuses commands that would change the pipeline.
    char *payload = NULL;
    char *verdict = s_admin (config_b, "pause", "{}", &payload);
    assert_string_equal (verdict, "ERR");
    assert_non_null (strstr (payload, "standby"));
    zstr_free (&verdict);
    zstr_free (&payload);

    //  The takeover is counted (the registry is the process's: compare).
    mx_metrics_counter_t *takeovers = mx_metrics_counter ("msgx_instance_takeovers_total", NULL, NULL);
    uint64_t takeovers_before = mx_metrics_counter_value (takeovers);
    mx_actor_destroy (&a);                    //  releases the lock
    assert_true (s_record_wait ("beta:START", 10000));
    assert_int_equal (mx_metrics_counter_value (takeovers), takeovers_before + 1);
    status = s_status (config_b);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    json_decref (status);
    mx_actor_destroy (&b);
    char *events = s_record_join ();
    assert_string_equal (events, "alpha:START alpha:STOP beta:START beta:STOP");
    free (events);
    mx_config_destroy (&config_a);
    mx_config_destroy (&config_b);
}

static void
test_child_start_failure_stops_the_started_in_reverse (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "f", NULL);
    mx_control_args_t args = { config, fx->clock, s_children, 3, NULL, NULL };
    pthread_mutex_lock (&s_rec.lock);
    s_rec.fail_start = "beta";
    pthread_mutex_unlock (&s_rec.lock);
    zactor_t *control = s_control_start (&args);
    zmsg_t *rest = NULL;
    assert_int_equal (mx_cmd_recv_timeout (zactor_sock (control), 10000, &rest), MX_CMD_FATAL);
    assert_int_equal (mx_cmd_pop_int (rest), 1);
    char *reason = mx_cmd_pop_str (rest);
    assert_non_null (strstr (reason, "beta"));
    assert_non_null (strstr (reason, "cannot reach its dependency"));
    free (reason);
    mx_cmd_done (&rest);
    json_t *status = s_status (config);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "fenced");
    json_decref (status);
    mx_actor_destroy (&control);
    char *events = s_record_join ();
    assert_string_equal (events, "alpha:START beta:START_FAILED beta:STOP alpha:STOP");
    free (events);
    mx_config_destroy (&config);
}

static void
test_pause_and_resume_reach_every_child (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "p", NULL);
    mx_control_args_t args = { config, fx->clock, s_children, 3, NULL, NULL };
    zactor_t *control = s_control_start (&args);
    s_admin_expect (config, "pause", "OK", "{\"paused\":true}");
    assert_true (s_record_wait ("gamma:PAUSE", 5000));
    json_t *status = s_status (config);
    assert_true (json_is_true (json_object_get (json_object_get (status, "pipeline"), "paused")));
    json_decref (status);
    s_admin_expect (config, "resume", "OK", "{\"paused\":false}");
    assert_true (s_record_wait ("alpha:RESUME", 5000));
    assert_true (s_record_wait ("beta:RESUME", 5000));
    assert_true (s_record_wait ("gamma:RESUME", 5000));
    mx_actor_destroy (&control);
    char *events = s_record_select (":STOP");
    assert_string_equal (events, "gamma:STOP beta:STOP alpha:STOP");
    free (events);
    mx_config_destroy (&config);
}

static void
test_autostart_false_starts_children_paused (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "q", NULL);
    assert_int_equal (mx_config_set (config, "msgx.pipeline.autostart", "false", NULL), 0);
    mx_control_args_t args = { config, fx->clock, s_children, 1, NULL, NULL };
    zactor_t *control = s_control_start (&args);
    assert_true (s_record_wait ("alpha:PAUSE", 5000));
    json_t *status = s_status (config);
    assert_true (json_is_true (json_object_get (json_object_get (status, "pipeline"), "paused")));
    json_decref (status);
    mx_actor_destroy (&control);
    mx_config_destroy (&config);
}

static void
test_child_fatal_stops_everything (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "x", NULL);
    mx_control_args_t args = { config, fx->clock, s_children, 3, NULL, NULL };
    pthread_mutex_lock (&s_rec.lock);
    s_rec.fatal_on_pause = "beta";
    pthread_mutex_unlock (&s_rec.lock);
    zactor_t *control = s_control_start (&args);
    char *payload = NULL;
    char *verdict = s_admin (config, "pause", "{}", &payload);
    zstr_free (&verdict);
    zstr_free (&payload);
    zmsg_t *rest = NULL;
    assert_int_equal (mx_cmd_recv_timeout (zactor_sock (control), 10000, &rest), MX_CMD_FATAL);
    assert_int_equal (mx_cmd_pop_int (rest), 1);
    char *reason = mx_cmd_pop_str (rest);
    assert_string_equal (reason, "actor beta failed: dependency gone");
    free (reason);
    mx_cmd_done (&rest);
    json_t *status = s_status (config);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "fenced");
    //  The reader still answers for the fenced instance.
    assert_int_equal (json_array_size (json_object_get (json_object_get (status, "pipeline"), "actors")), 2);
    json_decref (status);
    mx_actor_destroy (&control);
    char *events = s_record_select (":STOP");
    assert_string_equal (events, "gamma:STOP beta:STOP alpha:STOP");
    free (events);
    mx_config_destroy (&config);
}

//  One statement on the test's own session; it must succeed.
static void
s_exec (PGconn *conn, const char *sql)
{
    PGresult *result = PQexec (conn, sql);
    if (PQresultStatus (result) != PGRES_COMMAND_OK && PQresultStatus (result) != PGRES_TUPLES_OK)
        fail_msg ("%s: %s", sql, PQerrorMessage (conn));
    PQclear (result);
}

static bool
s_answered (zsock_t *req)
{
    zmq_pollitem_t item = { zsock_resolve (req), 0, ZMQ_POLLIN, 0 };
    return zmq_poll (&item, 1, 0) == 1;
}

//  A status read that waits on a lock holds up neither pause nor fencing:
//  both are answered while the read still waits, and the read completes
//  once the lock goes.
static void
test_pause_and_fencing_answer_while_a_read_waits (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "slow", NULL);
    mx_control_args_t args = { config, fx->clock, s_children, 1, NULL, NULL };
    zactor_t *control = s_control_start (&args);
    json_t *status = s_status (config);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    json_decref (status);

    PGconn *holder = PQconnectdb (mx_testpg_conninfo (fx->pg));
    assert_int_equal (PQstatus (holder), CONNECTION_OK);
    s_exec (holder, "BEGIN");
    s_exec (holder, "LOCK TABLE inbox_cursor IN ACCESS EXCLUSIVE MODE");
    zsock_t *slow = zsock_new_req (config->admin_endpoint);
    assert_non_null (slow);
    zstr_sendm (slow, "status");
    zstr_send (slow, "{}");
    //  Watched from a session of its own: inside the holder's transaction
    //  pg_stat_activity would stay the snapshot of its first read.
    PGconn *watcher = PQconnectdb (mx_testpg_conninfo (fx->pg));
    assert_int_equal (PQstatus (watcher), CONNECTION_OK);
    mx_testpg_wait (watcher, "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'msgxd-reader'"
                             " AND wait_event_type = 'Lock' AND datname = current_database()");
    PQfinish (watcher);

    s_admin_expect (config, "pause", "OK", "{\"paused\":true}");
    assert_true (s_record_wait ("alpha:PAUSE", 5000));
    assert_false (s_answered (slow));

    //  This test's database only: other tests share the server.
    mx_metrics_counter_t *fenced = mx_metrics_counter ("msgx_instance_fenced_total", NULL, NULL);
    uint64_t fenced_before = mx_metrics_counter_value (fenced);
    s_exec (holder, "SELECT pg_terminate_backend (pid) FROM pg_stat_activity"
                    " WHERE application_name = 'msgxd-lock' AND datname = current_database()");
    zmsg_t *rest = NULL;
    assert_int_equal (mx_cmd_recv_timeout (zactor_sock (control), 10000, &rest), MX_CMD_FATAL);
    assert_int_equal (mx_metrics_counter_value (fenced), fenced_before + 1);
    assert_int_equal (mx_cmd_pop_int (rest), MX_EXIT_FENCED);
    char *reason = mx_cmd_pop_str (rest);
    assert_non_null (strstr (reason, "lost the PostgreSQL connection holding the instance lock"));
    free (reason);
    mx_cmd_done (&rest);
    assert_true (s_record_wait ("alpha:STOP", 5000));
    assert_false (s_answered (slow));

    s_exec (holder, "ROLLBACK");
    PQfinish (holder);
    zmq_pollitem_t item = { zsock_resolve (slow), 0, ZMQ_POLLIN, 0 };
    assert_int_equal (zmq_poll (&item, 1, 10000), 1);
    char *verdict = NULL, *payload = NULL;
    zstr_recvx (slow, &verdict, &payload, NULL);
    assert_string_equal (verdict, "OK");
    zstr_free (&verdict);
    zstr_free (&payload);
    zsock_destroy (&slow);
    status = s_status (config);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "fenced");
    assert_true (json_is_true (json_object_get (json_object_get (status, "pipeline"), "paused")));
    json_decref (status);
    mx_actor_destroy (&control);
    mx_config_destroy (&config);
}

static void
test_bad_admin_requests_are_refused_with_a_reason (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "r", NULL);
    mx_control_args_t args = { config, fx->clock, s_children, 0, NULL, NULL };
    zactor_t *control = s_control_start (&args);
    char *payload = NULL;
    char *verdict = s_admin (config, "explode", "{}", &payload);
    assert_string_equal (verdict, "ERR");
    assert_string_equal (payload, "unknown command 'explode'");
    zstr_free (&verdict);
    zstr_free (&payload);
    verdict = s_admin (config, "status", "not json", &payload);
    assert_string_equal (verdict, "ERR");
    assert_non_null (strstr (payload, "malformed request"));
    zstr_free (&verdict);
    zstr_free (&payload);
    //  Still serving afterwards.
    json_t *status = s_status (config);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    json_decref (status);
    mx_actor_destroy (&control);
    mx_config_destroy (&config);
}

//  The log, captured through a pipe: control's warnings are lines of it.
typedef struct {
    int fds [2];
    char *text;
    size_t size;
} s_log_t;

static void
s_log_capture (s_log_t *log)
{
    memset (log, 0, sizeof *log);
    assert_int_equal (pipe (log->fds), 0);
    assert_int_equal (fcntl (log->fds [0], F_SETFL, O_NONBLOCK), 0);
    log->text = strdup ("");
    assert_int_equal (mx_log_start (log->fds [1], 4096), 0);
}

static int
s_log_occurrences (const s_log_t *log, const char *needle)
{
    int count = 0;
    for (const char *at = strstr (log->text, needle); at; at = strstr (at + 1, needle))
        count++;
    return count;
}

//  Reads the log until it holds needle (bounded: a missing line fails).
static void
s_log_wait (s_log_t *log, const char *needle, int timeout_ms)
{
    struct timespec now, until;
    clock_gettime (CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    while (!strstr (log->text, needle)) {
        clock_gettime (CLOCK_MONOTONIC, &now);
        long left = (long) (until.tv_sec - now.tv_sec) * 1000 + (until.tv_nsec - now.tv_nsec) / 1000000;
        struct pollfd item = { log->fds [0], POLLIN, 0 };
        if (left <= 0 || poll (&item, 1, (int) left) != 1)
            fail_msg ("no log line with '%s' within %d ms; the log:\n%s", needle, timeout_ms, log->text);
        char chunk [4096];
        ssize_t got = read (log->fds [0], chunk, sizeof chunk);
        if (got <= 0)
            continue;
        log->text = realloc (log->text, log->size + (size_t) got + 1);
        memcpy (log->text + log->size, chunk, (size_t) got);
        log->size += (size_t) got;
        log->text [log->size] = '\0';
    }
}

static void
s_log_release (s_log_t *log)
{
    mx_log_stop ();
    close (log->fds [0]);
    close (log->fds [1]);
    free (log->text);
}

//  A request over msgx.admin.max-request-bytes: ZeroMQ on control's side
//  closes the connection unread. Returns once the client saw it closed.
static void
s_admin_oversize (const mx_config_t *config)
{
    zsock_t *req = zsock_new (ZMQ_REQ);
    assert_non_null (req);
    zsock_set_reconnect_ivl (req, -1);
    //  A name of its own: the previous client's monitor may not have let
    //  go of its endpoint yet.
    static int clients = 0;
    char watch_endpoint [64];
    snprintf (watch_endpoint, sizeof watch_endpoint, "inproc://test-control-watch-%d", ++clients);
    assert_int_equal (zmq_socket_monitor (zsock_resolve (req), watch_endpoint, ZMQ_EVENT_DISCONNECTED), 0);
    zsock_t *watch = zsock_new (ZMQ_PAIR);
    assert_non_null (watch);
    assert_int_equal (zsock_connect (watch, "%s", watch_endpoint), 0);
    assert_int_equal (zsock_connect (req, "%s", config->admin_endpoint), 0);
    size_t size = (size_t) config->admin_max_request_bytes + 1;
    char *huge = malloc (size + 1);
    assert_non_null (huge);
    memset (huge, 'x', size);
    huge [size] = '\0';
    zstr_sendx (req, "status", huge, NULL);
    free (huge);
    zmq_pollitem_t item = { zsock_resolve (watch), 0, ZMQ_POLLIN, 0 };
    assert_int_equal (zmq_poll (&item, 1, 10000), 1);
    zmsg_t *event = zmsg_recv (watch);
    zmsg_destroy (&event);
    zmq_socket_monitor (zsock_resolve (req), NULL, 0);
    zsock_destroy (&watch);
    zsock_destroy (&req);
}

//  msgx_admin_requests_dropped_total counts the connections closed before
//  a whole request arrived, and only those, while each new connection
//  takes the fd the one before left: control reads a connection's
//  request and the monitor's events about the one before it in either
//  order.
static void
test_dropped_requests_are_counted_once_over_reused_fds (void **state)
{
    fixture_t *fx = *state;
    s_log_t log;
    s_log_capture (&log);
    mx_config_t *config = s_config (fx, "drop", NULL);
    mx_control_args_t args = { config, fx->clock, s_children, 0, NULL, NULL };
    mx_metrics_counter_t *dropped = mx_control_admin_dropped ();
    uint64_t before = mx_metrics_counter_value (dropped);
    zactor_t *control = s_control_start (&args);
    const int rounds = 20;
    for (int round = 0; round < rounds; round++) {
        s_admin_oversize (config);
        json_decref (s_status (config));
        json_decref (s_status (config));
    }
    //  The last connection is a drop nothing follows: control takes the
    //  monitor's events in order, so its line comes after those of the
    //  closes before it.
    s_admin_oversize (config);
    char *last = zsys_sprintf ("admin connection #%d (fd", 3 * rounds + 1);
    s_log_wait (&log, last, 10000);
    free (last);
    assert_int_equal (s_log_occurrences (&log, "closed before a whole request arrived"), rounds + 1);
    assert_int_equal (mx_metrics_counter_value (dropped) - before, rounds + 1);
    mx_actor_destroy (&control);
    mx_config_destroy (&config);
    s_log_release (&log);
}

//  control refuses to start, with needle in its reason.
static void
s_control_refused (mx_control_args_t *args, const char *needle)
{
    char *detail = NULL, *error = NULL;
    zactor_t *control = mx_actor_start (mx_control_actor, args, 10000, &detail, &error);
    assert_null (control);
    if (!strstr (error, needle))
        fail_msg ("start refused for another reason: %s", error);
    free (error);
}

static void
test_admin_endpoint_in_use_refuses_start (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "same", NULL);
    mx_control_args_t args = { config, fx->clock, s_children, 0, NULL, NULL };
    zactor_t *first = s_control_start (&args);
    s_control_refused (&args, "in use by another running msgxd");
    //  The first one still owns its socket.
    json_t *status = s_status (config);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    json_decref (status);
    mx_actor_destroy (&first);
    mx_config_destroy (&config);
}

//  msgx.admin.group opens the socket to one group: 0660, owned by it. The
//  test process's own group stands in for msgx-admin.
static void
test_admin_group_opens_the_socket_to_its_members (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "group", NULL);
    struct group *own = getgrgid (getegid ());
    assert_non_null (own);
    assert_int_equal (mx_config_set (config, "msgx.admin.group", own->gr_name, NULL), 0);
    mx_control_args_t args = { config, fx->clock, s_children, 0, NULL, NULL };
    zactor_t *control = s_control_start (&args);
    struct stat st;
    assert_int_equal (stat (config->admin_endpoint + 6, &st), 0);
    assert_int_equal (st.st_mode & 0777, 0660);
    assert_int_equal (st.st_gid, getegid ());
    json_t *status = s_status (config);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "active");
    json_decref (status);
    mx_actor_destroy (&control);
    mx_config_destroy (&config);
}

static void
test_unknown_admin_group_refuses_start (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "nogroup", NULL);
    assert_int_equal (mx_config_set (config, "msgx.admin.group", "msgx-no-such-group", NULL), 0);
    mx_control_args_t args = { config, fx->clock, s_children, 0, NULL, NULL };
    s_control_refused (&args, "admin group msgx-no-such-group (msgx.admin.group): no such group");
    mx_config_destroy (&config);
}

static void
test_unreachable_postgres_is_reported_not_hidden (void **state)
{
    fixture_t *fx = *state;
    mx_config_t *config = s_config (fx, "u", "host=127.0.0.1 port=1 dbname=nothing connect_timeout=2");
    mx_control_args_t args = { config, fx->clock, s_children, 1, NULL, NULL };
    zactor_t *control = s_control_start (&args);
    json_t *status = s_status (config);
    assert_string_equal (json_string_value (json_object_get (status, "role")), "connecting");
    const char *pg = json_string_value (json_object_get (json_object_get (status, "dependencies"), "postgresql"));
    assert_non_null (pg);
    assert_string_not_equal (pg, "ok");
    assert_true (json_is_null (json_object_get (status, "cursor")));
    assert_int_equal (json_array_size (json_object_get (json_object_get (status, "pipeline"), "actors")), 2);
    json_decref (status);
    mx_actor_destroy (&control);
    char *events = s_record_join ();
    assert_string_equal (events, "");       //  no child ran without the lock
    free (events);
    mx_config_destroy (&config);
}

//  ---------------------------------------------------------------------
//  Leaks: every thread and file descriptor opened by the tests is gone
//  after czmq shuts down.

static int s_threads_before, s_fds_before;

static int
s_count_dir (const char *path)
{
    DIR *dir = opendir (path);
    int count = 0;
    for (struct dirent *entry; dir && (entry = readdir (dir));)
        if (entry->d_name [0] != '.')
            count++;
    if (dir)
        closedir (dir);
    return count - (dir ? 1 : 0) * (strcmp (path, "/proc/self/fd") == 0);   //  the DIR's own fd
}

static void
test_no_thread_or_socket_left_behind (void **state)
{
    (void) state;
    zsys_shutdown ();
#if !defined (__SANITIZE_THREAD__)
    //  ThreadSanitizer runs a thread of its own and reports leaked threads
    //  itself (failing the run), so the count is checked without it.
    assert_int_equal (s_count_dir ("/proc/self/task"), s_threads_before);
#endif
    assert_int_equal (s_count_dir ("/proc/self/fd"), s_fds_before);
}

int
main (void)
{
    s_threads_before = s_count_dir ("/proc/self/task");
    s_fds_before = s_count_dir ("/proc/self/fd");
    zsys_handler_set (NULL);
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_active_starts_children_in_order_and_stops_in_reverse, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_migrations_applied_once_under_the_lock, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_standby_takes_over_when_active_goes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_child_start_failure_stops_the_started_in_reverse, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_pause_and_resume_reach_every_child, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_autostart_false_starts_children_paused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_child_fatal_stops_everything, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_pause_and_fencing_answer_while_a_read_waits, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_bad_admin_requests_are_refused_with_a_reason, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_dropped_requests_are_counted_once_over_reused_fds, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_admin_endpoint_in_use_refuses_start, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_admin_group_opens_the_socket_to_its_members, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_unknown_admin_group_refuses_start, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_unreachable_postgres_is_reported_not_hidden, s_setup, s_teardown),
        cmocka_unit_test (test_no_thread_or_socket_left_behind),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
