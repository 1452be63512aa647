/*  mx_actor - see mx_actor.h.  */
#include "mx_actor.h"

#include <assert.h>

zactor_t *
mx_actor_start (zactor_fn *fn, void *args, int timeout_ms, char **detail, char **error)
{
    assert (fn && error);
    *error = NULL;
    if (detail)
        *detail = NULL;
    zactor_t *actor = zactor_new (fn, args);
    if (!actor) {
        *error = strdup ("could not create the actor thread");
        return NULL;
    }
    mx_cmd_send (zactor_sock (actor), MX_CMD_START);
    zmsg_t *rest = NULL;
    mx_cmd_t reply = mx_cmd_recv_timeout (zactor_sock (actor), timeout_ms, &rest);
    if (reply == MX_CMD_START_OK) {
        char *text = mx_cmd_pop_str (rest);
        if (detail)
            *detail = text;
        else
            free (text);
        mx_cmd_done (&rest);
        return actor;
    }
    if (reply == MX_CMD_START_FAILED)
        *error = mx_cmd_pop_str (rest);
    else
    if (!rest)
        *error = strdup ("no reply to START in time");
    else
        *error = strdup ("unexpected reply to START");
    zmsg_destroy (&rest);
    zactor_destroy (&actor);
    return NULL;
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
