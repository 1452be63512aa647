/*  mx_cmd - the actor command list (mx_cmd.def) and admin verbs
    (mx_admin.def) as C: enums, name tables, send/receive helpers.  */
#ifndef MX_CMD_H_INCLUDED
#define MX_CMD_H_INCLUDED

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
#define MX_CMD(name, fields, route, doc) MX_CMD_##name,
#include "mx_cmd.def"
#undef MX_CMD
    MX_CMD_COUNT,
    MX_CMD_UNKNOWN = -1
} mx_cmd_t;

typedef enum {
#define MX_ADMIN(name, verb, owner, standby, args, reply) MX_ADMIN_##name,
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
//  The actor that answers the verb ("control": control itself).
const char *mx_admin_owner (mx_admin_t verb);
//  True when a standby instance answers the verb too.
bool mx_admin_on_standby (mx_admin_t verb);
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

//  The same on a ROUTER socket: the peer's identity frame goes first
//  (taken).
int mx_cmd_send_routed (zsock_t *dest, zframe_t **identity, mx_cmd_t cmd, ...);

//  A command read off a message already received (a ROUTER's, after its
//  identity frame): pops the name frame. MX_CMD_UNKNOWN for a name not in
//  the list.
mx_cmd_t mx_cmd_pop_name (zmsg_t *msg);

//  Pop a string frame / an int frame from rest; asserts the frame exists
//  (the sender broke the contract otherwise). Caller frees the string.
char *mx_cmd_pop_str (zmsg_t *rest);
int mx_cmd_pop_int (zmsg_t *rest);
uint64_t mx_cmd_pop_u64 (zmsg_t *rest);
//  Assert nothing is left over, then destroy.
void mx_cmd_done (zmsg_t **rest_p);

//  Typed receive: a struct per command, mx_cmd_NAME_t, with its fields in
//  the list's order (strings malloc'd: mx_cmd_NAME_free), filled from the
//  frames after the name by mx_cmd_NAME_take, which checks that none is
//  left over and destroys them.
#define MX_NONE
#define MX_S(field) char *field;
#define MX_I(field) int field;
#define MX_U64(field) uint64_t field;
#define MX_CMD(name, fields, route, doc) typedef struct { mx_cmd_t cmd; fields } mx_cmd_##name##_t;
#include "mx_cmd.def"
#undef MX_CMD
#undef MX_S
#undef MX_I
#undef MX_U64

#define MX_S(field) out->field = mx_cmd_pop_str (*rest);
#define MX_I(field) out->field = mx_cmd_pop_int (*rest);
#define MX_U64(field) out->field = mx_cmd_pop_u64 (*rest);
#define MX_CMD(name, fields, route, doc) \
    static inline void mx_cmd_##name##_take (zmsg_t **rest, mx_cmd_##name##_t *out) \
    { out->cmd = MX_CMD_##name; fields mx_cmd_done (rest); }
#include "mx_cmd.def"
#undef MX_CMD
#undef MX_S
#undef MX_I
#undef MX_U64

#define MX_S(field) free (out->field); out->field = NULL;
#define MX_I(field)
#define MX_U64(field)
#define MX_CMD(name, fields, route, doc) \
    static inline void mx_cmd_##name##_free (mx_cmd_##name##_t *out) { (void) out; fields }
#include "mx_cmd.def"
#undef MX_CMD
#undef MX_S
#undef MX_I
#undef MX_U64
#undef MX_NONE

//  Markdown for docs/commands.md.
void mx_cmd_print_reference (FILE *out);

#endif
