/*  mx_producer - a librdkafka producer that cannot be weakened.

    acks=all, enable.idempotence=true and max.in.flight <= 5 are always set
    (SPEC §5, seed D3): with them one key's messages reach their partition
    in the order they were produced, also across librdkafka's own retries.
    A configuration asking for less is refused when the producer is made.
    Every message gets a delivery report within msgx.kafka.delivery-timeout
    (librdkafka's message.timeout.ms): acknowledged, or failed with a reason.
    With msgx.delivery.semantics = exactly-once the producer also runs with
    enable.gapless.guarantee (a record failing for good is fatal to the
    producer) and without librdkafka's message timeout: the owner bounds
    the wait and replaces the producer, so each partition only ever holds
    a prefix of what one producer sent to it.

    Reports are not polled on a timer: librdkafka writes to a pipe when its
    queue turns non-empty (rd_kafka_queue_io_event_enable). The owner puts
    mx_producer_fd in its zmq_poll and calls mx_producer_drain when it is
    readable. One producer belongs to one thread.
*/
#ifndef MX_PRODUCER_H_INCLUDED
#define MX_PRODUCER_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_config.h"

typedef struct _mx_producer_t mx_producer_t;

typedef struct {
    const char *name;
    const char *value;                  //  text, sent without its NUL
} mx_producer_header_t;

//  One delivery report. Strings are valid during the callback only.
typedef struct {
    uint64_t tag;                       //  as given to mx_producer_send
    bool acked;                         //  the brokers acknowledged it (acks=all)
    const char *reason;                 //  why not, when not acked
    //  Not acked, but it may have been written (e.g. the acknowledgement
    //  timed out): a resend may duplicate it.
    bool possibly_persisted;
    int32_t partition;                  //  -1 when unknown
    int64_t offset;                     //  -1 when unknown
} mx_producer_report_t;

typedef void (mx_producer_report_fn) (const mx_producer_report_t *report, void *arg);

//  A producer for bootstrap ("host:port,..."), named client_id, with the
//  safety and timing settings of config (msgx.kafka.*). NULL and *error
//  (malloc'd line) when the settings are weaker than required or
//  librdkafka refuses them. Connects in the background.
mx_producer_t *mx_producer_new (const mx_config_t *config, const char *bootstrap, const char *client_id,
                                char **error);

//  Fails whatever is still outstanding (no report follows), then closes.
//  Safe on NULL and twice.
void mx_producer_destroy (mx_producer_t **self_p);

//  Readable when reports (or errors) are waiting: poll it, then drain.
int mx_producer_fd (mx_producer_t *self);

//  Queue one message: key and value are text; *value NULL is a null value
//  (a tombstone). The value is taken (librdkafka frees it once reported,
//  *value set to NULL) instead of copied: a batch out does not hold every
//  payload twice. Headers are copied. tag comes back in the report.
//  0, or -1 with *error when it could not even be queued (no report then;
//  *value stays the caller's).
int mx_producer_send (mx_producer_t *self, const char *topic, const char *key, char **value,
                      const mx_producer_header_t *headers, size_t header_count, uint64_t tag, char **error);

//  Serve what librdkafka queued: fn for every delivery report; errors of
//  the client are logged (once per text) and a fatal one marks the producer
//  as failed. Returns the number of reports.
size_t mx_producer_drain (mx_producer_t *self, mx_producer_report_fn *fn, void *arg);

//  librdkafka's value of setting name as the client runs with it, into
//  value (size bytes). 0, or -1 if unknown or it does not fit.
int mx_producer_setting (mx_producer_t *self, const char *name, char *value, size_t size);

//  Messages sent whose report has not been drained yet.
size_t mx_producer_outstanding (mx_producer_t *self);

//  Send what is queued now instead of after linger.ms (no backlog: a
//  lone record must not wait for companions that are not coming). Returns
//  at once: a thread of the producer's own holds the flush for about a
//  millisecond, while the caller waits for the reports.
void mx_producer_hurry (mx_producer_t *self);

//  Give up on everything outstanding now: each gets a failed report soon
//  (drain as usual). For a bounded wait that librdkafka did not bound.
void mx_producer_purge (mx_producer_t *self);

//  The producer hit a fatal error (idempotence can no longer be
//  guaranteed): make a new one. *reason, if not NULL, is set to the cause.
bool mx_producer_failed (mx_producer_t *self, const char **reason);

#endif
