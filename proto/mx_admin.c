/*  mx_admin - see mx_admin.h.  */
#include "mx_admin.h"

#include <assert.h>
#include <stdbool.h>
#include <string.h>

#define S_MALFORMED "malformed request: expected verb + one JSON object of arguments"
//  Verb names are lower-case words with dashes; longer ones are not ours.
#define S_VERB_MAX 32

//  True when the frame could be a verb name, and so may be quoted back.
static bool
s_verb_like (const zframe_t *frame)
{
    size_t size = zframe_size ((zframe_t *) frame);
    const unsigned char *data = zframe_data ((zframe_t *) frame);
    if (size == 0 || size > S_VERB_MAX)
        return false;
    for (size_t i = 0; i < size; i++)
        if (!((data [i] >= 'a' && data [i] <= 'z') || data [i] == '-'))
            return false;
    return true;
}

static mx_admin_t
s_verb (const zframe_t *frame)
{
    if (!s_verb_like (frame))
        return MX_ADMIN_UNKNOWN;
    char name [S_VERB_MAX + 1];
    size_t size = zframe_size ((zframe_t *) frame);
    memcpy (name, zframe_data ((zframe_t *) frame), size);
    name [size] = 0;
    return mx_admin_lookup (name);
}

char *
mx_admin_request_decode (zmsg_t *frames, mx_admin_request_t *request)
{
    assert (frames && request);
    *request = (mx_admin_request_t) { .verb = MX_ADMIN_UNKNOWN };
    zframe_t *verb = zmsg_first (frames);
    zframe_t *args = zmsg_next (frames);
    if (!verb || !args || zmsg_size (frames) != 2)
        return strdup (S_MALFORMED);
    size_t args_size = zframe_size (args);
    if (args_size > MX_ADMIN_ARGS_MAX)
        return zsys_sprintf ("request arguments of %zu bytes: more than the %zu allowed", args_size,
                             MX_ADMIN_ARGS_MAX);
    //  The whole frame: a NUL byte in it is refused, never cut off.
    json_error_t error;
    json_t *parsed = json_loadb ((const char *) zframe_data (args), args_size, JSON_REJECT_DUPLICATES, &error);
    if (!parsed || !json_is_object (parsed)) {
        json_decref (parsed);
        return strdup (S_MALFORMED);
    }
    mx_admin_t admin = s_verb (verb);
    if (admin == MX_ADMIN_UNKNOWN) {
        json_decref (parsed);
        if (!s_verb_like (verb))
            return zsys_sprintf ("unknown command (%zu bytes that are no verb name)", zframe_size (verb));
        return zsys_sprintf ("unknown command '%.*s'", (int) zframe_size (verb), (const char *) zframe_data (verb));
    }
    request->verb = admin;
    request->args = parsed;
    request->args_text = zframe_strdup (args);
    return NULL;
}

void
mx_admin_request_reset (mx_admin_request_t *request)
{
    json_decref (request->args);
    free (request->args_text);
    *request = (mx_admin_request_t) { .verb = MX_ADMIN_UNKNOWN };
}

char *
mx_admin_ids (json_t *list, const char *command, const char *what, int64_t **ids, size_t *count)
{
    assert (command && what && ids && count);
    *count = json_array_size (list);
    *ids = NULL;
    if (list && (!json_is_array (list) || *count == 0))
        return zsys_sprintf ("%s needs at least one %s ID", command, what);
    *ids = (int64_t *) calloc (*count + 1, sizeof (int64_t));
    assert (*ids);
    for (size_t i = 0; i < *count; i++) {
        json_t *item = json_array_get (list, i);
        if (!json_is_integer (item) || json_integer_value (item) <= 0) {
            free (*ids);
            *ids = NULL;
            return zsys_sprintf ("%s IDs must be positive integers", what);
        }
        (*ids) [i] = json_integer_value (item);
    }
    return NULL;
}
