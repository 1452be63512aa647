/*  mx_poll_pace - when ingress polls the mailbox next (a pure rule).

    Fast while rows keep arriving, idle otherwise: a poll that admitted
    rows (W moved) sets the period to the fast one; each poll that
    admitted nothing doubles it, up to the idle period
    (msgx.pipeline.poll-interval). A full batch is read again at once.
    A quiet start polls at the idle period: a restart on an idle mailbox
    costs no burst of queries.
*/
#ifndef MX_POLL_PACE_H_INCLUDED
#define MX_POLL_PACE_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t fast;               //  ms, the period while rows arrive
    int64_t idle;               //  ms, the longest period
    int64_t period;             //  ms, the period now
} mx_poll_pace_t;

//  fast above idle is taken as idle (no faster than the idle period).
mx_poll_pace_t mx_poll_pace (int64_t fast_ms, int64_t idle_ms);

//  After a poll at now: admitted tells whether it admitted rows (W
//  moved), again whether the batch was full. Returns the time of the
//  next poll.
int64_t mx_poll_pace_next (mx_poll_pace_t *self, int64_t now, bool admitted, bool again);

//  After a poll that failed (the mailbox or PostgreSQL unreachable): the
//  idle period, no retry storm. Returns the time of the next poll.
int64_t mx_poll_pace_failed (mx_poll_pace_t *self, int64_t now);

#endif
