/*  mx_backoff - see mx_backoff.h.  */
#include "mx_backoff.h"

#include <assert.h>

int64_t
mx_backoff_list_ms (const int64_t *steps, size_t count, int64_t cap_ms, int attempt)
{
    assert (steps && count > 0);
    if (attempt < 1)
        attempt = 1;
    size_t index = (size_t) attempt - 1;
    if (index >= count)
        index = count - 1;
    int64_t delay = steps [index];
    return delay > cap_ms ? cap_ms : delay;
}

int64_t
mx_backoff_doubling_ms (int64_t base_ms, int64_t cap_ms, int attempt)
{
    assert (base_ms > 0);
    int64_t delay = base_ms;
    for (int i = 1; i < attempt && delay < cap_ms; i++)
        delay *= 2;
    return delay > cap_ms ? cap_ms : delay;
}
