/*  mx_metrics - the process-wide metrics registry and its Prometheus text
    exposition (format 0.0.4, docs/reference/spec.md §8).

    Counters, gauges and histograms, each a family (name, help, type) of
    series told apart by labels. Getting a series takes the registry mutex
    (get-or-create, rare: look a handle up once and keep it); updating one
    is a lock-free atomic, so any actor thread may count without blocking.
    Handles stay valid for the life of the process (until mx_metrics_reset).

    Labels are written "key=value,key=value" (NULL or "" for none); a value
    may hold anything but ',' and is escaped when rendered. Series render in
    the order they were created, families likewise.

    A gauge starts unknown (NaN) and renders "NaN" until it is set: an
    unknown value is never shown as 0.
*/
#ifndef MX_METRICS_H_INCLUDED
#define MX_METRICS_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef struct _mx_metrics_counter_t mx_metrics_counter_t;
typedef struct _mx_metrics_gauge_t mx_metrics_gauge_t;
typedef struct _mx_metrics_histogram_t mx_metrics_histogram_t;

//  Get-or-create. name and labels must be well formed ([a-zA-Z_:][a-zA-Z0-9_:]*,
//  "k=v,..."): they are our own constants, so a bad one asserts. A name
//  already registered with another type asserts too.
mx_metrics_counter_t *
    mx_metrics_counter (const char *name, const char *help, const char *labels);

mx_metrics_gauge_t *
    mx_metrics_gauge (const char *name, const char *help, const char *labels);

//  bounds: the buckets' upper bounds, ascending, count >= 1 (+Inf is
//  implied). The first registration of a name fixes its bounds.
mx_metrics_histogram_t *
    mx_metrics_histogram (const char *name, const char *help, const char *labels,
                          const double *bounds, size_t count);

void
    mx_metrics_add (mx_metrics_counter_t *self, uint64_t n);

//  Mirror a monotonic count kept elsewhere (e.g. mx_log_dropped ()).
void
    mx_metrics_counter_set (mx_metrics_counter_t *self, uint64_t value);

uint64_t
    mx_metrics_counter_value (mx_metrics_counter_t *self);

//  NAN makes the gauge unknown again.
void
    mx_metrics_gauge_set (mx_metrics_gauge_t *self, double value);

double
    mx_metrics_gauge_value (mx_metrics_gauge_t *self);

void
    mx_metrics_histogram_observe (mx_metrics_histogram_t *self, double value);

//  The whole registry as Prometheus text, malloc'd; the caller frees it.
char *
    mx_metrics_render (void);

//  Forget every metric (tests). Every handle obtained before is invalid.
void
    mx_metrics_reset (void);

//  ---------------------------------------------------------------------
//  The metrics of SPEC §8 that other actors update. Each call is a
//  get-or-create (takes the mutex): keep the handle.

mx_metrics_counter_t *mx_metrics_hole_aged_out (void);          //  msgx_pipeline_hole_aged_out_total
mx_metrics_counter_t *mx_metrics_late_arrival (void);           //  msgx_pipeline_late_arrival_detected_total
//  msgx_ingress_failures_total{class}: ingress accesses to the mailbox that
//  failed, by class (connect, lost, query: mx_mailbox_failure_name).
mx_metrics_counter_t *mx_metrics_ingress_failures (const char *failure_class);
//  msgx_messages_total{type,state}: state a terminal proc_state state.
mx_metrics_counter_t *mx_metrics_messages (const char *type, const char *state);
//  msgx_messages_failed_total{class}: class an error class (INFRA, CODEC_ERROR, ...).
mx_metrics_counter_t *mx_metrics_messages_failed (const char *error_class);
//  msgx_messages_dead_total{class}: messages that ended DEAD, by the class
//  they ended with (MALFORMED, PROTOCOL, EXHAUSTED, ...).
mx_metrics_counter_t *mx_metrics_messages_dead (const char *error_class);
mx_metrics_counter_t *mx_metrics_events_sent (const char *target);    //  msgx_events_sent_total{target}
mx_metrics_counter_t *mx_metrics_events_failed (const char *target);  //  msgx_events_failed_total{target}
mx_metrics_histogram_t *mx_metrics_batch_size (void);           //  msgx_batch_size (messages per batch)
mx_metrics_histogram_t *mx_metrics_processing_seconds (void);   //  msgx_processing_seconds (PROCESS -> commit)
mx_metrics_counter_t *mx_metrics_log_dropped (void);            //  msgx_log_dropped_total

//  Registers all of the above (label-less ones, and the event counters for
//  both Kafka targets) so a scrape shows them from the start, and sets the
//  gauge msgx_build_info{version,commit} to 1.
void
    mx_metrics_register_standard (void);

#endif
