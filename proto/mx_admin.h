/*  mx_admin - the admin request decoder: what control makes of the frames
    msgxctl sends (the verbs are in mx_admin.def, their names in mx_cmd.h),
    and the ID lists of the acting verbs.

    A refusal is one line of printable ASCII (malloc'd) that msgxctl prints
    as it is: it never echoes bytes of the request that could break it.
*/
#ifndef MX_ADMIN_H_INCLUDED
#define MX_ADMIN_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdint.h>

#include "mx_cmd.h"

//  Largest arguments frame: a replay of 10,000 IDs is about 200 KB.
#define MX_ADMIN_ARGS_MAX ((size_t) 1 << 20)

typedef struct {
    mx_admin_t verb;
    char *args_text;            //  the arguments frame as it came, for the owner
    json_t *args;               //  the same, parsed: always an object
} mx_admin_request_t;

//  Decodes the frames after the REQ envelope: the verb, then one JSON
//  object of arguments, nothing more. Returns NULL with *request filled
//  (release it with mx_admin_request_reset), or the refusal line; *request
//  is then empty.
char *mx_admin_request_decode (zmsg_t *frames, mx_admin_request_t *request);
void mx_admin_request_reset (mx_admin_request_t *request);

//  The IDs of an admin request's list (NULL list: none). Returns NULL with
//  *ids (calloc'd, count + 1 entries) and *count, or the line refusing it
//  (malloc'd): "<command> needs at least one <what> ID" for an empty or
//  non-array list, "<what> IDs must be positive integers".
char *mx_admin_ids (json_t *list, const char *command, const char *what, int64_t **ids, size_t *count);

#endif
