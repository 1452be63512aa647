/*  mx_kafka_tail - what the partitions of a topic end with: the event ids
    (msgx-event-id header) of their last records, read backwards from the
    high watermark in growing steps by a consumer of its own
    (isolation.level=read_uncommitted, no group membership, nothing
    committed). Records without the header (another writer's) are left out;
    offsets without a record (compacted away, control markers) simply give
    none.

    Every call is bounded by the deadline given at open; a partition without
    a leader or a broker that does not answer fails the call, never waits
    for ever. One reader belongs to one thread.
*/
#ifndef MX_KAFKA_TAIL_H_INCLUDED
#define MX_KAFKA_TAIL_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_config.h"

typedef struct {
    int32_t partition;
    int64_t low, high;          //  watermarks when opened
    int64_t from;               //  first offset read so far (high: none read)
    int64_t *ids;               //  event ids of the records in [from, high), in offset order
    size_t count;
    int64_t records;            //  records read, with or without the header
} mx_kafka_tail_part_t;

typedef struct mx_kafka_tail_t mx_kafka_tail_t;

//  Looks up topic's partitions and their watermarks; later calls end by
//  deadline_ms (monotonic, zclock_mono). A topic that does not exist has
//  no partitions. NULL and *error (malloc'd line) when Kafka does not
//  answer in time or refuses.
mx_kafka_tail_t *mx_kafka_tail_open (const mx_config_t *config, const char *bootstrap, const char *client_id,
                                     const char *topic, int64_t deadline_ms, char **error);
void mx_kafka_tail_destroy (mx_kafka_tail_t **self_p);

size_t mx_kafka_tail_count (mx_kafka_tail_t *self);
const mx_kafka_tail_part_t *mx_kafka_tail_part (mx_kafka_tail_t *self, size_t index);

//  Reads further back: for each partition index i with more [i] > 0, the
//  up to more [i] offsets before its `from` (never below low), in one
//  fetch for all of them. 0, or -1 with *error.
int mx_kafka_tail_extend (mx_kafka_tail_t *self, const int64_t *more, char **error);

#endif
