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

//  The same with one label, key=value (value NULL: empty).
mx_metrics_counter_t *
    mx_metrics_counter_by (const char *name, const char *help, const char *key, const char *value);

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

//  Each metric is declared (name, help, type, labels) by the module that
//  counts it, next to the counting: core keeps only the registry.

#endif
