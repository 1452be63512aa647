/*  mx_delivery - what the dispatcher and the schd-aggregator share: the
    Kafka producer's life (created at START, replaced when it failed
    fatally or when reports never come), one batch of outbox events out at
    a time in slots, its delivery reports, and giving it up when they are
    overdue (purge first, then a new producer); with exactly-once, the
    look at what the topic holds before a new producer sends.

    The owner takes the batch from the outbox, hands it over with
    mx_delivery_send and is called back once every slot is settled: what
    it acknowledges and when it looks again are its own.
*/
#ifndef MX_DELIVERY_H_INCLUDED
#define MX_DELIVERY_H_INCLUDED

#include "mx_actor.h"
#include "mx_metrics.h"
#include "mx_outbox.h"

typedef enum { MX_SLOT_WAITING, MX_SLOT_ACKED, MX_SLOT_FAILED } mx_slot_state_t;

//  One event of the batch out.
typedef struct {
    mx_slot_state_t state;
    char *reason;               //  why not, when FAILED
    bool possibly_persisted;    //  a failure after which the brokers may hold it
} mx_delivery_slot_t;

//  Every slot of the batch is settled (acknowledged or failed; the events
//  behind a send that failed stay WAITING: never queued). The batch is
//  freed when this returns.
typedef void (mx_delivery_settle_fn) (void *owner, const mx_outbox_batch_t *batch,
                                      const mx_delivery_slot_t *slots);

typedef struct mx_delivery_t mx_delivery_t;

//  actor: the owner's name (logs, Kafka client id); target: the outbox
//  target it delivers (KAFKA:msg, ...); what: "batch" or "flush" in its
//  log lines; mark: how the target marks events SENT, also those found
//  already on the topic (exactly-once).
mx_delivery_t *mx_delivery_new (const mx_config_t *config, mx_clock_t *clock, const char *actor,
                                const char *target, const char *topic, const char *what,
                                mx_delivery_settle_fn *settle, mx_outbox_mark_fn *mark, void *owner);
void mx_delivery_destroy (mx_delivery_t **self_p);

//  At START: the producer for bootstrap (kept for its replacements).
//  Returns 0, or -1 with *error (malloc'd).
int mx_delivery_start (mx_delivery_t *self, const char *bootstrap, char **error);

//  Before a round: a producer that failed fatally cannot keep the order
//  any more and is replaced. With msgx.delivery.semantics = exactly-once a
//  new producer (and a batch not wholly acknowledged, which ends its
//  producer) first has the topic looked at: every partition read back
//  from its end while its records carry PENDING events of the target, and
//  those events marked SENT (on pg) instead of being sent again. Returns
//  0, or -1 after reporting to problem (nothing may be sent then).
int mx_delivery_ready (mx_delivery_t *self, PGconn *pg, mx_problem_t *problem);

//  Exactly-once: events acknowledged by Kafka could not be marked SENT;
//  the next round looks at the topic again before it sends.
void mx_delivery_reinspect (mx_delivery_t *self);

//  True while a batch is out.
bool mx_delivery_busy (const mx_delivery_t *self);

//  Sends the batch's events in order (taken); a send that fails stops it,
//  the events behind are not sent either. Settles at once when none went.
void mx_delivery_send (mx_delivery_t *self, mx_outbox_batch_t *batch);

//  The batch size that means a backlog (default msgx.pipeline.delivery-
//  batch): a smaller batch is all there is, and is sent at once rather
//  than after msgx.kafka.linger-ms; a full one lingers, so records that
//  come together share requests.
void mx_delivery_set_full (mx_delivery_t *self, size_t full);

//  The producer's report descriptor, -1 when there is none.
int mx_delivery_fd (mx_delivery_t *self);

//  Takes the reports in; settles the batch when all are.
void mx_delivery_reports (mx_delivery_t *self);

//  The owner's loop watches the producer's reports through this source
//  (none while there is no producer). Returns how many it added.
size_t mx_delivery_sources (mx_delivery_t *self, mx_actor_source_t *sources, size_t max);

//  When the batch out is overdue (INT64_MAX: none out).
int64_t mx_delivery_deadline (const mx_delivery_t *self);

//  When woken: an overdue batch is given up (purged the first time,
//  reports follow; then the producer is replaced and the silent events
//  settled as failed). Returns true while a batch is still out.
bool mx_delivery_check (mx_delivery_t *self);

//  Registers every metric of a target, at 0 (msgx_events_sent_total,
//  msgx_events_failed_total, msgx_delivery_inspected_total,
//  msgx_delivery_inspections_total, msgx_delivery_inspection_seconds,
//  msgx_delivery_latency_seconds: ingress record -> acknowledgement).
void mx_delivery_register_metrics (const char *target);

//  Its metrics, per target (KAFKA:msg, KAFKA:schd).
mx_metrics_counter_t *mx_delivery_events_sent (const char *target);    //  msgx_events_sent_total{target}
mx_metrics_counter_t *mx_delivery_events_failed (const char *target);  //  msgx_events_failed_total{target}

#endif
