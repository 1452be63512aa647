/*  mx_watermark - the ingress rule for W (SPEC §3.1), as a pure function.

    Given the persisted cursor (W, hole_since) and the ascending IDs read
    from the mailbox above W, decide the new W, the hole timer, and at most
    one released hole. No I/O: the ingress actor applies the result.
*/
#ifndef MX_WATERMARK_H_INCLUDED
#define MX_WATERMARK_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t w;                  //  new watermark
    int64_t hole_since;         //  ms, -1 = no hole timer
    size_t admitted;            //  ids [0 .. admitted) are <= w: enqueue them
    bool released;              //  a hole aged out and was jumped over
    int64_t released_from;      //  its first and last missing ID
    int64_t released_to;
    bool stopped_at_hole;       //  a gap above w remains in this batch
} mx_watermark_t;

//  ids: ascending, all > w. hole_since: -1 when no timer runs.
//  max_commit_delay_ms: age after which a hole is released.
mx_watermark_t mx_watermark_advance (int64_t w, int64_t hole_since,
                                     const int64_t *ids, size_t count,
                                     int64_t now_ms, int64_t max_commit_delay_ms);

#endif
