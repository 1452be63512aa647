/*  mx_watermark - see mx_watermark.h.  */
#include "mx_watermark.h"

#include <assert.h>

mx_watermark_t
mx_watermark_advance (int64_t w, int64_t hole_since, const int64_t *ids, size_t count,
                      int64_t now_ms, int64_t max_commit_delay_ms)
{
    mx_watermark_t result = { .w = w, .hole_since = hole_since };
    bool moved = false;
    size_t index = 0;
    while (index < count) {
        assert (ids [index] > result.w);
        if (ids [index] == result.w + 1) {
            result.w = ids [index++];
            moved = true;
            continue;
        }
        //  A gap at w+1. It is new if no timer runs or W moved this round
        //  (the old hole filled): start a full window.
        if (result.hole_since < 0 || moved) {
            result.hole_since = now_ms;
            result.stopped_at_hole = true;
            break;
        }
        if (now_ms - result.hole_since < max_commit_delay_ms) {
            result.stopped_at_hole = true;
            break;
        }
        //  Aged out: release this hole only, then count on. Any later gap
        //  in this batch is a new hole with a fresh timer.
        result.released = true;
        result.released_from = result.w + 1;
        result.released_to = ids [index] - 1;
        result.w = ids [index++];
        result.hole_since = -1;
        moved = true;
    }
    //  No gap left in what we saw: a filled (or released) hole clears the
    //  timer.
    if (!result.stopped_at_hole && moved)
        result.hole_since = -1;
    result.admitted = index;
    return result;
}
