/*  mx_poll_pace - see mx_poll_pace.h.  */
#include "mx_poll_pace.h"

mx_poll_pace_t
mx_poll_pace (int64_t fast_ms, int64_t idle_ms)
{
    int64_t fast = fast_ms < idle_ms ? fast_ms : idle_ms;
    return (mx_poll_pace_t) { fast > 0 ? fast : 1, idle_ms > 0 ? idle_ms : 1, idle_ms > 0 ? idle_ms : 1 };
}

int64_t
mx_poll_pace_next (mx_poll_pace_t *self, int64_t now, bool admitted, bool again)
{
    if (admitted)
        self->period = self->fast;
    else
        self->period = self->period > self->idle / 2 ? self->idle : self->period * 2;
    return again ? now : now + self->period;
}

int64_t
mx_poll_pace_failed (mx_poll_pace_t *self, int64_t now)
{
    self->period = self->idle;
    return now + self->period;
}
