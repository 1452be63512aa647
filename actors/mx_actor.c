/*  mx_actor - see mx_actor.h.  */
#include "mx_actor.h"

#include <assert.h>
#include <pthread.h>

#include "mx_log.h"
#include "mx_pg.h"

//  An actor's end and its destroyer meet here. zactor_destroy returns
//  after the actor's last signal, through libzmq, which ThreadSanitizer
//  cannot see; whoever then frees what the actor read (its config) must be
//  seen to come after the actor's last access. The actor's thread passes
//  the lock as its last act, mx_actor_destroy right after the destroy.
static pthread_mutex_t s_ended = PTHREAD_MUTEX_INITIALIZER;

static void
s_pass_ended (void)
{
    pthread_mutex_lock (&s_ended);
    pthread_mutex_unlock (&s_ended);
}

typedef struct {
    zactor_fn *fn;
    void *args;
} s_shim_t;

static void
s_shim (zsock_t *pipe, void *shim_)
{
    s_shim_t shim = *(s_shim_t *) shim_;
    free (shim_);
    shim.fn (pipe, shim.args);
    s_pass_ended ();
}

void
mx_actor_destroy (zactor_t **actor_p)
{
    if (!actor_p || !*actor_p)
        return;
    zactor_destroy (actor_p);
    s_pass_ended ();
}

static zactor_t *
s_start (zactor_fn *fn, void *args, const char *role, bool paused, int timeout_ms,
         char **detail, char **error)
{
    assert (fn && error);
    *error = NULL;
    if (detail)
        *detail = NULL;
    s_shim_t *shim = (s_shim_t *) malloc (sizeof *shim);
    if (!shim) {
        *error = strdup ("no memory for the actor thread");
        return NULL;
    }
    *shim = (s_shim_t) { fn, args };
    zactor_t *actor = zactor_new (s_shim, shim);
    if (!actor) {
        free (shim);
        *error = strdup ("could not create the actor thread");
        return NULL;
    }
    if (role)
        mx_cmd_send (zactor_sock (actor), MX_CMD_ROLE, role, paused ? 1 : 0);
    else
    if (paused)
        mx_cmd_send (zactor_sock (actor), MX_CMD_PAUSE);
    mx_cmd_send (zactor_sock (actor), MX_CMD_START);
    zmsg_t *rest = NULL;
    mx_cmd_t reply = mx_cmd_recv_timeout (zactor_sock (actor), timeout_ms, &rest);
    if (reply == MX_CMD_START_OK) {
        mx_cmd_START_OK_t started;
        mx_cmd_START_OK_take (&rest, &started);
        if (detail) {
            *detail = started.detail;
            started.detail = NULL;
        }
        mx_cmd_START_OK_free (&started);
        return actor;
    }
    if (reply == MX_CMD_START_FAILED) {
        mx_cmd_START_FAILED_t failed;
        mx_cmd_START_FAILED_take (&rest, &failed);
        *error = failed.reason;
    }
    else
    if (!rest)
        *error = strdup ("no reply to START in time");
    else
        *error = strdup ("unexpected reply to START");
    zmsg_destroy (&rest);
    mx_actor_destroy (&actor);
    return NULL;
}

zactor_t *
mx_actor_start (zactor_fn *fn, void *args, int timeout_ms, char **detail, char **error)
{
    return s_start (fn, args, NULL, false, timeout_ms, detail, error);
}

zactor_t *
mx_actor_start_pipeline (zactor_fn *fn, void *args, bool paused, int timeout_ms, char **detail, char **error)
{
    return s_start (fn, args, NULL, paused, timeout_ms, detail, error);
}

zactor_t *
mx_actor_start_service (zactor_fn *fn, void *args, const char *role, bool paused,
                        int timeout_ms, char **detail, char **error)
{
    assert (role);
    return s_start (fn, args, role, paused, timeout_ms, detail, error);
}

void
mx_actor_reply_started (zsock_t *pipe, const char *detail)
{
    mx_cmd_send (pipe, MX_CMD_START_OK, detail);
}

void
mx_actor_reply_failed (zsock_t *pipe, const char *reason)
{
    mx_cmd_send (pipe, MX_CMD_START_FAILED, reason);
}

void
mx_actor_wait_term (zsock_t *pipe)
{
    while (true) {
        zmsg_t *rest = NULL;
        mx_cmd_t cmd = mx_cmd_recv (pipe, &rest);
        bool interrupted = rest == NULL;
        zmsg_destroy (&rest);
        if (cmd == MX_CMD_TERM || interrupted)
            return;
    }
}

const char *
mx_actor_endpoint (const mx_actor_args_t *args, const char *actor, char *buf, size_t size)
{
    snprintf (buf, size, "inproc://%s/%s", args->scope ? args->scope : "msgx", actor);
    return buf;
}

void
mx_problem_report (mx_problem_t *self, const char *what, char *error)
{
    char *line = what ? zsys_sprintf ("%s: %s", what, error ? error : "unknown error")
                      : strdup (error ? error : "unknown error");
    if (!self->last || strcmp (self->last, line) != 0)
        mx_log_emit (MX_LOG_WARN, self->actor, json_pack ("{s:s}", "error_class", "INFRA"), "%s; retrying", line);
    free (self->last);
    self->last = line;
    free (error);
}

void
mx_problem_recovered (mx_problem_t *self)
{
    if (self->last) {
        mx_info (self->actor, "recovered after: %s", self->last);
        free (self->last);
        self->last = NULL;
    }
}

void
mx_problem_clear (mx_problem_t *self)
{
    free (self->last);
    self->last = NULL;
}

int
mx_actor_pg (PGconn **conn, const mx_config_t *config, const char *actor, mx_problem_t *problem)
{
    if (*conn && PQstatus (*conn) == CONNECTION_OK)
        return 0;
    mx_pg_disconnect (conn);
    char *error = NULL;
    char name [64];
    snprintf (name, sizeof name, "msgxd-%s", actor);
    *conn = mx_pg_connect (config->pg_conninfo, name, config->pg_statement_timeout, &error);
    if (*conn)
        return 0;
    mx_problem_report (problem, "PostgreSQL unreachable", error);
    return -1;
}

//  One command from the parent. false: the actor stops.
static bool
s_command (zsock_t *pipe, const mx_actor_ops_t *ops, void *self)
{
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (pipe, &rest);
    if (!rest)
        return false;                   //  interrupted
    if (cmd == MX_CMD_TERM) {
        mx_cmd_done (&rest);
        return false;
    }
    return ops->command (self, cmd, rest);
}

static zmq_pollitem_t
s_item (zsock_t *sock, int fd)
{
    return (zmq_pollitem_t) { sock ? zsock_resolve (sock) : NULL, sock ? 0 : fd, ZMQ_POLLIN, 0 };
}

void
mx_actor_run (zsock_t *pipe, mx_clock_t *clock, const mx_actor_ops_t *ops, void *self)
{
    assert (pipe && ops && ops->command);
    zsock_t *ticks = NULL;
    if (ops->deadline && clock && mx_clock_endpoint (clock))
        ticks = zsock_new_sub (mx_clock_endpoint (clock), "");
    zsock_signal (pipe, 0);
    bool running = true;
    while (running) {
        zmq_pollitem_t items [MX_ACTOR_SOURCES_MAX + 2];
        mx_actor_source_t sources [MX_ACTOR_SOURCES_MAX];
        int count = 0, tick_index = -1;
        items [count++] = s_item (pipe, -1);
        if (ticks) {
            tick_index = count;
            items [count++] = s_item (ticks, -1);
        }
        size_t extra = ops->sources ? ops->sources (self, sources, MX_ACTOR_SOURCES_MAX) : 0;
        int first = count;
        for (size_t i = 0; i < extra; i++)
            items [count++] = s_item (sources [i].sock, sources [i].fd);
        long timeout = ops->timeout ? ops->timeout (self)
                     : ops->deadline ? mx_clock_timeout (clock, ops->deadline (self)) : -1;
        if (zmq_poll (items, count, timeout) < 0) {
            if (zmq_errno () == EINTR)
                continue;
            break;
        }
        if (items [0].revents & ZMQ_POLLIN) {
            running = s_command (pipe, ops, self);
            continue;
        }
        if (tick_index >= 0 && (items [tick_index].revents & ZMQ_POLLIN)) {
            char *tick = zstr_recv (ticks);
            zstr_free (&tick);
        }
        bool again = false;
        for (size_t i = 0; i < extra && !again; i++)
            if (items [first + i].revents & (ZMQ_POLLIN | ZMQ_POLLERR))
                again = sources [i].ready (self, sources [i].arg);
        if (!again && ops->wake)
            ops->wake (self);
    }
    zsock_destroy (&ticks);
}
