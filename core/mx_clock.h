/*  mx_clock - the one source of time.

    Every actor reads time through a clock so tests can drive it. The system
    clock reads CLOCK_REALTIME. A fake clock only moves when a test calls
    mx_clock_advance / mx_clock_set; each move is announced as "TICK" on an
    inproc PUB socket so actors waiting for a deadline wake up and re-check.
*/
#ifndef MX_CLOCK_H_INCLUDED
#define MX_CLOCK_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

typedef struct _mx_clock_t mx_clock_t;

mx_clock_t *mx_clock_new_system (void);
//  Fake clock starting at start_ms (milliseconds since the Unix epoch, UTC).
//  Its PUB socket belongs to the creating thread: advance/set from there.
mx_clock_t *mx_clock_new_fake (int64_t start_ms);
void mx_clock_destroy (mx_clock_t **self_p);

//  Milliseconds since the Unix epoch, UTC. Thread-safe.
int64_t mx_clock_now (mx_clock_t *self);
bool mx_clock_is_fake (mx_clock_t *self);

//  Fake clock only; asserts otherwise.
void mx_clock_advance (mx_clock_t *self, int64_t delta_ms);
void mx_clock_set (mx_clock_t *self, int64_t now_ms);

//  Fake clock: inproc endpoint announcing "TICK" after every move; NULL for
//  the system clock. Actors subscribe to it (zsock_new_sub (ep, "")).
const char *mx_clock_endpoint (mx_clock_t *self);

//  Poll timeout in ms for waiting until deadline_ms (INT64_MAX = no
//  deadline). System clock: the remaining time (>= 0, capped at INT32_MAX);
//  fake clock: 0 if due, otherwise -1 (wait for a TICK, never real time).
int mx_clock_timeout (mx_clock_t *self, int64_t deadline_ms);

#endif
