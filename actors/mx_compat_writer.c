/*  mx_compat_writer - see mx_compat_writer.h.  */
#include "mx_compat_writer.h"

#include <assert.h>
#include <inttypes.h>

#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_pg.h"
#include "mx_procstate.h"

typedef struct {
    zsock_t *pipe;
    const mx_compat_writer_args_t *args;
    mx_mailbox_t *mailbox;
    PGconn *pg;                         //  lazily (re)connected
    uint64_t stored;
    uint64_t refused;
    uint64_t procstate_failed;          //  stored in the mailbox, proc_state row missing
} s_writer_t;

//  Registers the PENDING proc_state row. A failure is only logged: the
//  mailbox row exists, and ingress registers it when it polls.
static void
s_register (s_writer_t *self, int64_t id, int64_t received_ms, int64_t now_ms)
{
    const mx_config_t *config = self->args->config;
    char *error = NULL;
    if (!self->pg)
        self->pg = mx_pg_connect (config->pg_conninfo, "msgxd-http",
                                  config->pg_statement_timeout, &error);
    if (self->pg && mx_procstate_insert_compat (self->pg, id, received_ms, now_ms, &error) == 0)
        return;
    self->procstate_failed++;
    json_t *fields = json_pack ("{s:I}", "msg_id", (json_int_t) id);
    mx_log_emit (MX_LOG_WARN, self->args->name, fields,
                 "mailbox row %" PRId64 " stored but its proc_state row was not: %s;"
                 " ingress registers it when it polls", id, error ? error : "unknown error");
    free (error);
    if (self->pg && mx_pg_is_connection_error (self->pg))
        mx_pg_disconnect (&self->pg);
}

static void
s_write (s_writer_t *self, mx_cmd_COMPAT_WRITE_t *write)
{
    int64_t id = 0;
    char *error = NULL;
    size_t size = strlen (write->body);
    if (mx_mailbox_insert (self->mailbox, write->body, size, (int64_t) write->received, &id, &error)) {
        self->refused++;
        //  The shadow refusal is a sentence of its own; the rest say what failed.
        char *reason = error && strncmp (error, "shadow mode:", 12) == 0
                     ? strdup (error)
                     : zsys_sprintf ("mailbox unavailable: %s", error ? error : "unknown error");
        free (error);
        mx_cmd_send (self->pipe, MX_CMD_COMPAT_WRITTEN, write->tag, (uint64_t) 0, 503, reason);
        free (reason);
        return;
    }
    s_register (self, id, (int64_t) write->received, (int64_t) write->now);
    self->stored++;
    json_t *fields = json_pack ("{s:I,s:I}", "msg_id", (json_int_t) id, "bytes", (json_int_t) size);
    mx_log_emit (MX_LOG_INFO, self->args->name, fields, "compat entry stored message %" PRId64, id);
    mx_cmd_send (self->pipe, MX_CMD_COMPAT_WRITTEN, write->tag, (uint64_t) id, 0, "");
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_writer_t *self = (s_writer_t *) self_;
    assert (cmd == MX_CMD_COMPAT_WRITE);
    mx_cmd_COMPAT_WRITE_t write;
    mx_cmd_COMPAT_WRITE_take (&rest, &write);
    s_write (self, &write);
    mx_cmd_COMPAT_WRITE_free (&write);
    return true;
}

void
mx_compat_writer_actor (zsock_t *pipe, void *args)
{
    s_writer_t self_s = { 0 };
    s_writer_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_compat_writer_args_t *) args;
    self->mailbox = mx_mailbox_new (self->args->config);
    mx_actor_ops_t ops = { .command = s_command };
    mx_actor_run (pipe, NULL, &ops, self);
    if (self->stored || self->refused || self->procstate_failed)
        mx_log_emit (MX_LOG_INFO, self->args->name, NULL,
                     "compat writer stopped: stored %" PRIu64 ", refused %" PRIu64
                     ", proc_state failures %" PRIu64, self->stored, self->refused,
                     self->procstate_failed);
    mx_pg_disconnect (&self->pg);
    mx_mailbox_destroy (&self->mailbox);
}
