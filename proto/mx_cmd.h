/*  mx_cmd - the actor command list (mx_cmd.def) and admin verbs
    (mx_admin.def) as C: enums, name tables, send/receive helpers.  */
#ifndef MX_CMD_H_INCLUDED
#define MX_CMD_H_INCLUDED

#include <czmq.h>

typedef enum {
#define MX_CMD(name, picture, route, doc) MX_CMD_##name,
#include "mx_cmd.def"
#undef MX_CMD
    MX_CMD_COUNT,
    MX_CMD_UNKNOWN = -1
} mx_cmd_t;

typedef enum {
#define MX_ADMIN(name, verb, args, reply) MX_ADMIN_##name,
#include "mx_admin.def"
#undef MX_ADMIN
    MX_ADMIN_COUNT,
    MX_ADMIN_UNKNOWN = -1
} mx_admin_t;

//  Wire name of a command ("$TERM" for TERM), its picture, route and doc.
const char *mx_cmd_name (mx_cmd_t cmd);
const char *mx_cmd_picture (mx_cmd_t cmd);
const char *mx_cmd_route (mx_cmd_t cmd);
const char *mx_cmd_doc (mx_cmd_t cmd);
mx_cmd_t mx_cmd_lookup (const char *name);

const char *mx_admin_verb (mx_admin_t verb);
const char *mx_admin_args (mx_admin_t verb);
const char *mx_admin_reply (mx_admin_t verb);
mx_admin_t mx_admin_lookup (const char *verb);

//  Send cmd with its argument frames; the variadic arguments follow the
//  command's picture exactly (asserted). Returns 0 or -1.
int mx_cmd_send (zsock_t *dest, mx_cmd_t cmd, ...);

//  Receive one command. Returns the command (MX_CMD_UNKNOWN for a name not
//  in the list) and, in *rest, the remaining frames (caller destroys).
//  Returns MX_CMD_UNKNOWN with *rest NULL when interrupted.
mx_cmd_t mx_cmd_recv (zsock_t *src, zmsg_t **rest);

//  Receive one command within timeout_ms (-1 = forever); MX_CMD_UNKNOWN and
//  *rest NULL on timeout.
mx_cmd_t mx_cmd_recv_timeout (zsock_t *src, int timeout_ms, zmsg_t **rest);

//  Pop a string frame / an int frame from rest; asserts the frame exists
//  (the sender broke the contract otherwise). Caller frees the string.
char *mx_cmd_pop_str (zmsg_t *rest);
int mx_cmd_pop_int (zmsg_t *rest);
//  Assert nothing is left over, then destroy.
void mx_cmd_done (zmsg_t **rest_p);

//  Markdown for docs/commands.md.
void mx_cmd_print_reference (FILE *out);

#endif
