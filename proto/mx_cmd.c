/*  mx_cmd - see mx_cmd.h.  */
#include "mx_cmd.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>

typedef struct {
    const char *name, *picture, *route, *doc;
} s_cmd_info_t;

//  The picture and the field names, from the field list.
#define MX_NONE
#define MX_S(field) "s"
#define MX_I(field) "i"
#define MX_U64(field) "8"
static const s_cmd_info_t s_cmds [] = {
#define MX_CMD(name, fields, route, doc) { #name, "" fields, route, doc },
#include "mx_cmd.def"
#undef MX_CMD
};
#undef MX_S
#undef MX_I
#undef MX_U64
#define MX_S(field) " " #field
#define MX_I(field) " " #field
#define MX_U64(field) " " #field
static const char *s_cmd_fields [] = {
#define MX_CMD(name, fields, route, doc) "" fields,
#include "mx_cmd.def"
#undef MX_CMD
};
#undef MX_S
#undef MX_I
#undef MX_U64
#undef MX_NONE

typedef struct {
    const char *verb, *owner;
    bool standby;
    const char *args, *reply;
} s_admin_info_t;

static const s_admin_info_t s_admins [] = {
#define MX_ADMIN(name, verb, owner, standby, args, reply) { verb, owner, standby, args, reply },
#include "mx_admin.def"
#undef MX_ADMIN
};

_Static_assert (sizeof s_cmds / sizeof s_cmds [0] == MX_CMD_COUNT, "command table incomplete");
_Static_assert (sizeof s_admins / sizeof s_admins [0] == MX_ADMIN_COUNT, "admin table incomplete");

const char *
mx_cmd_name (mx_cmd_t cmd)
{
    assert (cmd >= 0 && cmd < MX_CMD_COUNT);
    //  czmq stops actors with this literal; keep the wire name identical.
    return cmd == MX_CMD_TERM ? "$TERM" : s_cmds [cmd].name;
}

const char *mx_cmd_picture (mx_cmd_t cmd) { assert (cmd >= 0 && cmd < MX_CMD_COUNT); return s_cmds [cmd].picture; }
const char *mx_cmd_route (mx_cmd_t cmd)   { assert (cmd >= 0 && cmd < MX_CMD_COUNT); return s_cmds [cmd].route; }
const char *mx_cmd_doc (mx_cmd_t cmd)     { assert (cmd >= 0 && cmd < MX_CMD_COUNT); return s_cmds [cmd].doc; }

mx_cmd_t
mx_cmd_lookup (const char *name)
{
    if (!name)
        return MX_CMD_UNKNOWN;
    for (int i = 0; i < MX_CMD_COUNT; i++)
        if (strcmp (name, mx_cmd_name ((mx_cmd_t) i)) == 0)
            return (mx_cmd_t) i;
    return MX_CMD_UNKNOWN;
}

const char *mx_admin_verb (mx_admin_t v)  { assert (v >= 0 && v < MX_ADMIN_COUNT); return s_admins [v].verb; }
const char *mx_admin_owner (mx_admin_t v) { assert (v >= 0 && v < MX_ADMIN_COUNT); return s_admins [v].owner; }
bool mx_admin_on_standby (mx_admin_t v)   { assert (v >= 0 && v < MX_ADMIN_COUNT); return s_admins [v].standby; }
const char *mx_admin_args (mx_admin_t v)  { assert (v >= 0 && v < MX_ADMIN_COUNT); return s_admins [v].args; }
const char *mx_admin_reply (mx_admin_t v) { assert (v >= 0 && v < MX_ADMIN_COUNT); return s_admins [v].reply; }

mx_admin_t
mx_admin_lookup (const char *verb)
{
    if (!verb)
        return MX_ADMIN_UNKNOWN;
    for (int i = 0; i < MX_ADMIN_COUNT; i++)
        if (strcmp (verb, s_admins [i].verb) == 0)
            return (mx_admin_t) i;
    return MX_ADMIN_UNKNOWN;
}

//  The frames of cmd after the name, from the variadic arguments.
static void
s_add_fields (zmsg_t *msg, mx_cmd_t cmd, va_list args)
{
    zmsg_addstr (msg, mx_cmd_name (cmd));
    for (const char *p = mx_cmd_picture (cmd); *p; p++) {
        switch (*p) {
            case 's': {
                const char *s = va_arg (args, const char *);
                zmsg_addstr (msg, s ? s : "");
                break;
            }
            case 'i':
                zmsg_addstrf (msg, "%d", va_arg (args, int));
                break;
            case '8':
                zmsg_addstrf (msg, "%" PRIu64, va_arg (args, uint64_t));
                break;
            default:
                assert (!"unsupported picture character");
        }
    }
}

//  A send that fails (a timeout set by the caller, a peer gone) leaves the
//  message with us.
static int
s_send (zmsg_t **msg, zsock_t *dest)
{
    int rc = zmsg_send (msg, dest);
    zmsg_destroy (msg);
    return rc;
}

int
mx_cmd_send (zsock_t *dest, mx_cmd_t cmd, ...)
{
    assert (dest);
    zmsg_t *msg = zmsg_new ();
    va_list args;
    va_start (args, cmd);
    s_add_fields (msg, cmd, args);
    va_end (args);
    return s_send (&msg, dest);
}

int
mx_cmd_send_routed (zsock_t *dest, zframe_t **identity, mx_cmd_t cmd, ...)
{
    assert (dest && identity && *identity);
    zmsg_t *msg = zmsg_new ();
    zmsg_append (msg, identity);
    va_list args;
    va_start (args, cmd);
    s_add_fields (msg, cmd, args);
    va_end (args);
    return s_send (&msg, dest);
}

mx_cmd_t
mx_cmd_pop_name (zmsg_t *msg)
{
    char *name = zmsg_popstr (msg);
    mx_cmd_t cmd = mx_cmd_lookup (name);
    free (name);
    return cmd;
}

mx_cmd_t
mx_cmd_recv (zsock_t *src, zmsg_t **rest)
{
    return mx_cmd_recv_timeout (src, -1, rest);
}

mx_cmd_t
mx_cmd_recv_timeout (zsock_t *src, int timeout_ms, zmsg_t **rest)
{
    assert (src && rest);
    *rest = NULL;
    if (timeout_ms >= 0) {
        zmq_pollitem_t item = { zsock_resolve (src), 0, ZMQ_POLLIN, 0 };
        if (zmq_poll (&item, 1, timeout_ms) <= 0)
            return MX_CMD_UNKNOWN;
    }
    zmsg_t *msg = zmsg_recv (src);
    if (!msg)
        return MX_CMD_UNKNOWN;
    mx_cmd_t cmd = mx_cmd_pop_name (msg);
    *rest = msg;
    return cmd;
}

char *
mx_cmd_pop_str (zmsg_t *rest)
{
    assert (rest && zmsg_size (rest) > 0);
    return zmsg_popstr (rest);
}

int
mx_cmd_pop_int (zmsg_t *rest)
{
    char *text = mx_cmd_pop_str (rest);
    int value = atoi (text);
    free (text);
    return value;
}

uint64_t
mx_cmd_pop_u64 (zmsg_t *rest)
{
    char *text = mx_cmd_pop_str (rest);
    uint64_t value = strtoull (text, NULL, 10);
    free (text);
    return value;
}

void
mx_cmd_done (zmsg_t **rest_p)
{
    assert (rest_p);
    if (*rest_p)
        assert (zmsg_size (*rest_p) == 0);
    zmsg_destroy (rest_p);
}

void
mx_cmd_print_reference (FILE *out)
{
    fprintf (out, "# Commands\n\n"
             "Generated from `proto/mx_cmd.def` and `proto/mx_admin.def` by the build "
             "(`msgx-protodoc`); do not edit by hand.\n\n"
             "## Between actors (inproc)\n\n"
             "Frame 0 is the command name; the picture uses czmq's `zsock_send` letters "
             "(`s` string, `i` int, `8` uint64).\n\n"
             "| command | frames | fields | route | meaning |\n|---|---|---|---|---|\n");
    for (int i = 0; i < MX_CMD_COUNT; i++)
        fprintf (out, "| `%s` | `%s` | %s | %s | %s |\n", mx_cmd_name ((mx_cmd_t) i),
                 *s_cmds [i].picture ? s_cmds [i].picture : "-",
                 *s_cmd_fields [i] ? s_cmd_fields [i] + 1 : "-", s_cmds [i].route, s_cmds [i].doc);
    fprintf (out, "\n## Admin (msgxctl REQ <-> control ROUTER)\n\n"
             "Request: verb frame + JSON arguments frame. Reply: `OK` + JSON, or `ERR` + reason.\n\n"
             "| verb | answered by | on a standby | arguments | reply |\n|---|---|---|---|---|\n");
    for (int i = 0; i < MX_ADMIN_COUNT; i++)
        fprintf (out, "| `%s` | %s | %s | `%s` | %s |\n", s_admins [i].verb, s_admins [i].owner,
                 s_admins [i].standby ? "yes" : "no", s_admins [i].args, s_admins [i].reply);
}
