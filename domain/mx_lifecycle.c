/*  mx_lifecycle - see mx_lifecycle.h.  */
#include "mx_lifecycle.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

static const char *s_states [] = { "PENDING", "FAILED", "SUCCEEDED", "SKIPPED", "DEAD" };
static const char *s_classes [] = {
    NULL, "MALFORMED", "PROTOCOL", "CODEC_ERROR", "UNSUPPORTED", "INFRA", "EXHAUSTED"
};

const char *
mx_state_name (mx_state_t state)
{
    assert (state >= MX_STATE_PENDING && state <= MX_STATE_DEAD);
    return s_states [state];
}

int
mx_state_lookup (const char *name)
{
    for (int i = 0; name && i <= MX_STATE_DEAD; i++)
        if (strcmp (name, s_states [i]) == 0)
            return i;
    return -1;
}

const char *
mx_error_class_name (mx_error_class_t error_class)
{
    assert (error_class >= MX_ERR_NONE && error_class <= MX_ERR_EXHAUSTED);
    return s_classes [error_class];
}

mx_error_class_t
mx_error_class_lookup (const char *name)
{
    for (int i = MX_ERR_MALFORMED; name && i <= MX_ERR_EXHAUSTED; i++)
        if (strcmp (name, s_classes [i]) == 0)
            return (mx_error_class_t) i;
    return MX_ERR_NONE;
}
