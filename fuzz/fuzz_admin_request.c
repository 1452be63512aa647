/*  fuzz_admin_request - the admin request decoder (mx_admin_request_decode)
    and the ID lists of the acting verbs (mx_admin_ids) on arbitrary frames.

    Input: the frames after the REQ envelope, separated by NUL bytes (the
    verb, the arguments, anything more), as control receives them.

    Checked besides memory safety: a refusal is one non-empty line of
    printable ASCII, so msgxctl prints it safely whatever was sent; an
    accepted request names a known verb, its arguments are one JSON object
    within MX_ADMIN_ARGS_MAX, and their text parses to an object again (the
    owner parses it once more); an "ids" list gives positive IDs, as many as
    it holds, or a refusal line.
*/
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mx_admin.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
s_check_line (const char *line)
{
    if (!line || !*line)
        abort ();
    for (const char *c = line; *c; c++)
        if (*c < 0x20 || *c > 0x7e)
            abort ();
}

static void
s_check_ids (json_t *args)
{
    json_t *list = json_object_get (args, "ids");
    int64_t *ids = NULL;
    size_t count = 0;
    char *refused = mx_admin_ids (list, "replay --id", "message", &ids, &count);
    if (refused) {
        s_check_line (refused);
        if (ids)
            abort ();
        free (refused);
        return;
    }
    if (!ids || count != json_array_size (list))
        abort ();
    for (size_t i = 0; i < count; i++)
        if (ids [i] <= 0)
            abort ();
    free (ids);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    zmsg_t *frames = zmsg_new ();
    if (!frames)
        abort ();
    size_t start = 0;
    for (size_t i = 0; i <= size; i++)
        if (i == size || data [i] == 0) {
            zmsg_addmem (frames, data + start, i - start);
            start = i + 1;
        }
    mx_admin_request_t request;
    char *refused = mx_admin_request_decode (frames, &request);
    if (refused) {
        s_check_line (refused);
        if (request.args || request.args_text || request.verb != MX_ADMIN_UNKNOWN)
            abort ();
        free (refused);
    }
    else {
        if (request.verb == MX_ADMIN_UNKNOWN || !mx_admin_verb (request.verb))
            abort ();
        if (!json_is_object (request.args) || !request.args_text || strlen (request.args_text) > MX_ADMIN_ARGS_MAX)
            abort ();
        json_t *again = json_loads (request.args_text, 0, NULL);
        if (!json_is_object (again))
            abort ();
        json_decref (again);
        s_check_ids (request.args);
        mx_admin_request_reset (&request);
    }
    zmsg_destroy (&frames);
    return 0;
}
