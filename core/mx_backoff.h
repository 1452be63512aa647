/*  mx_backoff - retry delays from a configured list with a cap.  */
#ifndef MX_BACKOFF_H_INCLUDED
#define MX_BACKOFF_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

//  Delay before retry number `attempt` (1 = first retry): steps[attempt-1],
//  the last step for attempts past the list, never above cap_ms.
int64_t mx_backoff_list_ms (const int64_t *steps, size_t count, int64_t cap_ms,
                            int attempt);

//  Doubling delay: base_ms * 2^(attempt-1), never above cap_ms.
int64_t mx_backoff_doubling_ms (int64_t base_ms, int64_t cap_ms, int attempt);

#endif
