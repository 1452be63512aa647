/*  mx_clock - see mx_clock.h.  */
#include "mx_clock.h"

#include <assert.h>
#include <czmq.h>
#include <stdatomic.h>
#include <time.h>

struct _mx_clock_t {
    bool fake;
    _Atomic int64_t now_ms;     //  fake clock only
    zsock_t *tick;              //  fake clock only: PUB announcing moves
    char endpoint [64];
};

mx_clock_t *
mx_clock_new_system (void)
{
    mx_clock_t *self = (mx_clock_t *) zmalloc (sizeof (mx_clock_t));
    assert (self);
    return self;
}

mx_clock_t *
mx_clock_new_fake (int64_t start_ms)
{
    static _Atomic unsigned counter = 0;
    mx_clock_t *self = (mx_clock_t *) zmalloc (sizeof (mx_clock_t));
    assert (self);
    self->fake = true;
    atomic_store (&self->now_ms, start_ms);
    snprintf (self->endpoint, sizeof self->endpoint, "inproc://mx-clock-%d-%u",
              (int) getpid (), atomic_fetch_add (&counter, 1));
    self->tick = zsock_new_pub (self->endpoint);
    assert (self->tick);
    return self;
}

void
mx_clock_destroy (mx_clock_t **self_p)
{
    assert (self_p);
    if (*self_p) {
        mx_clock_t *self = *self_p;
        zsock_destroy (&self->tick);
        free (self);
        *self_p = NULL;
    }
}

int64_t
mx_clock_now (mx_clock_t *self)
{
    assert (self);
    if (self->fake)
        return atomic_load (&self->now_ms);
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool
mx_clock_is_fake (mx_clock_t *self)
{
    assert (self);
    return self->fake;
}

void
mx_clock_set (mx_clock_t *self, int64_t now_ms)
{
    assert (self && self->fake);
    atomic_store (&self->now_ms, now_ms);
    zstr_send (self->tick, "TICK");
}

void
mx_clock_advance (mx_clock_t *self, int64_t delta_ms)
{
    assert (self && self->fake);
    atomic_fetch_add (&self->now_ms, delta_ms);
    zstr_send (self->tick, "TICK");
}

const char *
mx_clock_endpoint (mx_clock_t *self)
{
    assert (self);
    return self->fake ? self->endpoint : NULL;
}

int
mx_clock_timeout (mx_clock_t *self, int64_t deadline_ms)
{
    assert (self);
    int64_t now = mx_clock_now (self);
    if (deadline_ms <= now)
        return 0;
    if (self->fake || deadline_ms == INT64_MAX)
        return -1;
    int64_t left = deadline_ms - now;
    return left > INT32_MAX ? INT32_MAX : (int) left;
}
