/*  mx_backfill_actor - the backfill actor: processed marks into the mailbox
    (SPEC §6.1).

    MARKS_OWED (from control, after each processing commit) tries the owed
    marks of that msg_id range once, at once, off the FIFO path; a sweep
    every msgx.pipeline.backfill-period picks up the rest: terminal, intent
    set, not confirmed, not abandoned, due by backoff or overdue since
    receipt, ordered by backfill_attempts, msg_id, backfill-batch rows at a
    time. Each batch goes through the row-lock gate of db/mx_backfill.h, so
    a replay never interleaves with a mark. A batch stops at the first
    failed write: the rest of it is tried on the next sweep, and no attempt
    is counted for a row that was not tried.

    ADMIN "backfill-recover" {ids: [..]} or {all: true}, plus os_user:
    re-arms abandoned marks, writes audit_log, answers OK {rearmed, msg_ids}
    and sweeps at once.

    msgx.shadow=true: nothing is written to the mailbox and nothing is
    attempted; said once at start.
*/
#ifndef MX_BACKFILL_ACTOR_H_INCLUDED
#define MX_BACKFILL_ACTOR_H_INCLUDED

#include "mx_actor.h"

//  zactor function; args is an mx_actor_args_t.
void mx_backfill_actor (zsock_t *pipe, void *args);

#endif
