/*  mx_metrics - see mx_metrics.h.  */
#include "mx_metrics.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_text.h"

typedef enum { S_COUNTER, S_GAUGE, S_HISTOGRAM } s_type_t;

static const char *s_type_names [] = { "counter", "gauge", "histogram" };

typedef struct {
    char *key;
    char *value;
} s_label_t;

//  One series. Counters and gauges use value (a gauge holds a double's
//  bits); histograms use buckets, count and value (the sum's bits).
typedef struct _s_series_t {
    struct _s_series_t *next;
    s_type_t type;
    char *labels_text;              //  as registered: the lookup key
    s_label_t *labels;
    size_t label_count;
    _Atomic uint64_t value;
    _Atomic uint64_t count;
    _Atomic uint64_t *buckets;      //  per bound, not cumulative
    const double *bounds;           //  the family's, fixed at registration
    size_t bound_count;
} s_series_t;

struct _mx_metrics_counter_t { s_series_t series; };
struct _mx_metrics_gauge_t { s_series_t series; };
struct _mx_metrics_histogram_t { s_series_t series; };

typedef struct _s_family_t {
    struct _s_family_t *next;
    char *name;
    char *help;
    s_type_t type;
    double *bounds;
    size_t bound_count;
    s_series_t *series;
    s_series_t *series_tail;
} s_family_t;

static pthread_mutex_t s_mutex = PTHREAD_MUTEX_INITIALIZER;
static s_family_t *s_families;
static s_family_t *s_families_tail;

static uint64_t
s_bits (double value)
{
    uint64_t bits;
    memcpy (&bits, &value, sizeof bits);
    return bits;
}

static double
s_double (uint64_t bits)
{
    double value;
    memcpy (&value, &bits, sizeof value);
    return value;
}

static bool
s_valid_name (const char *name, bool colon)
{
    if (!name || !*name || (*name >= '0' && *name <= '9'))
        return false;
    for (const char *at = name; *at; at++) {
        char c = *at;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
              || c == '_' || (colon && c == ':')))
            return false;
    }
    return true;
}

//  "k=v,k=v" into labels; asserts on a malformed text (our own constant).
static void
s_parse_labels (s_series_t *series, const char *text)
{
    size_t count = 0;
    if (*text) {
        count = 1;
        for (const char *at = text; *at; at++)
            count += *at == ',';
    }
    series->labels = count ? (s_label_t *) calloc (count, sizeof (s_label_t)) : NULL;
    assert (!count || series->labels);
    const char *at = text;
    for (size_t i = 0; i < count; i++) {
        const char *end = strchr (at, ',');
        if (!end)
            end = at + strlen (at);
        const char *equals = memchr (at, '=', (size_t) (end - at));
        assert (equals);
        series->labels [i].key = strndup (at, (size_t) (equals - at));
        series->labels [i].value = strndup (equals + 1, (size_t) (end - equals - 1));
        assert (series->labels [i].key && series->labels [i].value);
        assert (s_valid_name (series->labels [i].key, false));
        assert (strcmp (series->labels [i].key, "le") != 0 || series->type != S_HISTOGRAM);
        at = end + 1;
    }
    series->label_count = count;
}

static void
s_series_free (s_series_t *series)
{
    for (size_t i = 0; i < series->label_count; i++) {
        free (series->labels [i].key);
        free (series->labels [i].value);
    }
    free (series->labels);
    free (series->labels_text);
    free (series->buckets);
    free (series);
}

//  Caller holds s_mutex.
static s_series_t *
s_lookup (const char *name, const char *help, const char *labels, s_type_t type,
          const double *bounds, size_t bound_count)
{
    assert (s_valid_name (name, true));
    if (!labels)
        labels = "";
    s_family_t *family = s_families;
    while (family && strcmp (family->name, name) != 0)
        family = family->next;
    if (!family) {
        family = (s_family_t *) calloc (1, sizeof *family);
        assert (family);
        family->name = strdup (name);
        family->help = strdup (help ? help : "");
        family->type = type;
        if (type == S_HISTOGRAM) {
            assert (bounds && bound_count >= 1);
            family->bounds = (double *) malloc (bound_count * sizeof (double));
            assert (family->bounds);
            for (size_t i = 0; i < bound_count; i++) {
                assert (i == 0 || bounds [i] > bounds [i - 1]);
                family->bounds [i] = bounds [i];
            }
            family->bound_count = bound_count;
        }
        if (s_families_tail)
            s_families_tail->next = family;
        else
            s_families = family;
        s_families_tail = family;
    }
    assert (family->type == type);
    for (s_series_t *series = family->series; series; series = series->next)
        if (strcmp (series->labels_text, labels) == 0)
            return series;

    //  The handle types wrap s_series_t as their only member.
    s_series_t *series = (s_series_t *) calloc (1, sizeof (mx_metrics_histogram_t));
    assert (series);
    series->type = type;
    series->labels_text = strdup (labels);
    s_parse_labels (series, labels);
    if (type == S_GAUGE)
        atomic_init (&series->value, s_bits (NAN));
    if (type == S_HISTOGRAM) {
        series->buckets = (_Atomic uint64_t *) calloc (family->bound_count, sizeof (_Atomic uint64_t));
        assert (series->buckets);
        series->bounds = family->bounds;
        series->bound_count = family->bound_count;
        atomic_init (&series->value, s_bits (0.0));
    }
    if (family->series_tail)
        family->series_tail->next = series;
    else
        family->series = series;
    family->series_tail = series;
    return series;
}

mx_metrics_counter_t *
mx_metrics_counter (const char *name, const char *help, const char *labels)
{
    pthread_mutex_lock (&s_mutex);
    s_series_t *series = s_lookup (name, help, labels, S_COUNTER, NULL, 0);
    pthread_mutex_unlock (&s_mutex);
    return (mx_metrics_counter_t *) series;
}

mx_metrics_counter_t *
mx_metrics_counter_by (const char *name, const char *help, const char *key, const char *value)
{
    char labels [128];
    snprintf (labels, sizeof labels, "%s=%s", key, value ? value : "");
    return mx_metrics_counter (name, help, labels);
}

mx_metrics_gauge_t *
mx_metrics_gauge (const char *name, const char *help, const char *labels)
{
    pthread_mutex_lock (&s_mutex);
    s_series_t *series = s_lookup (name, help, labels, S_GAUGE, NULL, 0);
    pthread_mutex_unlock (&s_mutex);
    return (mx_metrics_gauge_t *) series;
}

mx_metrics_histogram_t *
mx_metrics_histogram (const char *name, const char *help, const char *labels,
                      const double *bounds, size_t count)
{
    pthread_mutex_lock (&s_mutex);
    s_series_t *series = s_lookup (name, help, labels, S_HISTOGRAM, bounds, count);
    pthread_mutex_unlock (&s_mutex);
    return (mx_metrics_histogram_t *) series;
}

void
mx_metrics_add (mx_metrics_counter_t *self, uint64_t n)
{
    assert (self);
    atomic_fetch_add_explicit (&self->series.value, n, memory_order_relaxed);
}

void
mx_metrics_counter_set (mx_metrics_counter_t *self, uint64_t value)
{
    assert (self);
    atomic_store_explicit (&self->series.value, value, memory_order_relaxed);
}

uint64_t
mx_metrics_counter_value (mx_metrics_counter_t *self)
{
    assert (self);
    return atomic_load_explicit (&self->series.value, memory_order_relaxed);
}

void
mx_metrics_gauge_set (mx_metrics_gauge_t *self, double value)
{
    assert (self);
    atomic_store_explicit (&self->series.value, s_bits (value), memory_order_relaxed);
}

double
mx_metrics_gauge_value (mx_metrics_gauge_t *self)
{
    assert (self);
    return s_double (atomic_load_explicit (&self->series.value, memory_order_relaxed));
}

void
mx_metrics_histogram_observe (mx_metrics_histogram_t *self, double value)
{
    assert (self);
    s_series_t *series = &self->series;
    size_t bucket = 0;
    while (bucket < series->bound_count && !(value <= series->bounds [bucket]))
        bucket++;
    if (bucket < series->bound_count)
        atomic_fetch_add_explicit (&series->buckets [bucket], 1, memory_order_relaxed);
    //  The sum: a double has no atomic add, so compare-and-swap its bits.
    uint64_t old = atomic_load_explicit (&series->value, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit (&series->value, &old,
                                                   s_bits (s_double (old) + value),
                                                   memory_order_relaxed, memory_order_relaxed))
        ;
    atomic_fetch_add_explicit (&series->count, 1, memory_order_relaxed);
}

//  ---------------------------------------------------------------------
//  Rendering

//  Escapes backslash and newline, and the double quote when quoted (label
//  values); HELP text keeps its quotes (format 0.0.4).
static void
s_escaped (mx_text_t *text, const char *data, bool quoted)
{
    for (const char *at = data; *at; at++) {
        if (*at == '\\')
            mx_text_puts (text, "\\\\");
        else
        if (*at == '\n')
            mx_text_puts (text, "\\n");
        else
        if (*at == '"' && quoted)
            mx_text_puts (text, "\\\"");
        else
            mx_text_append (text, at, 1);
    }
}

//  Shortest text that reads back as the same double; NaN and the
//  infinities as Prometheus spells them.
static void
s_number (mx_text_t *text, double value)
{
    char buf [40];
    if (isnan (value))
        snprintf (buf, sizeof buf, "NaN");
    else
    if (isinf (value))
        snprintf (buf, sizeof buf, value > 0 ? "+Inf" : "-Inf");
    else {
        snprintf (buf, sizeof buf, "%.15g", value);
        if (strtod (buf, NULL) != value)
            snprintf (buf, sizeof buf, "%.17g", value);
    }
    mx_text_puts (text, buf);
}

static void
s_unsigned (mx_text_t *text, uint64_t value)
{
    char buf [24];
    snprintf (buf, sizeof buf, "%" PRIu64, value);
    mx_text_puts (text, buf);
}

//  name{labels[,le="bound"]} - le only when le_text is not NULL.
static void
s_series_name (mx_text_t *text, const char *name, const char *suffix,
               const s_series_t *series, const char *le_text)
{
    mx_text_puts (text, name);
    mx_text_puts (text, suffix);
    if (series->label_count == 0 && !le_text)
        return;
    mx_text_puts (text, "{");
    for (size_t i = 0; i < series->label_count; i++) {
        if (i)
            mx_text_puts (text, ",");
        mx_text_puts (text, series->labels [i].key);
        mx_text_puts (text, "=\"");
        s_escaped (text, series->labels [i].value, true);
        mx_text_puts (text, "\"");
    }
    if (le_text) {
        if (series->label_count)
            mx_text_puts (text, ",");
        mx_text_puts (text, "le=\"");
        mx_text_puts (text, le_text);
        mx_text_puts (text, "\"");
    }
    mx_text_puts (text, "}");
}

static void
s_render_histogram (mx_text_t *text, const s_family_t *family, s_series_t *series)
{
    uint64_t cumulative = 0;
    for (size_t i = 0; i < family->bound_count; i++) {
        cumulative += atomic_load_explicit (&series->buckets [i], memory_order_relaxed);
        mx_text_t le = { 0 };
        s_number (&le, family->bounds [i]);
        s_series_name (text, family->name, "_bucket", series, le.data);
        free (le.data);
        mx_text_puts (text, " ");
        s_unsigned (text, cumulative);
        mx_text_puts (text, "\n");
    }
    //  Observations above the last bound only show in count; reading count
    //  after the buckets keeps +Inf >= every bucket under concurrent updates.
    uint64_t count = atomic_load_explicit (&series->count, memory_order_relaxed);
    if (count < cumulative)
        count = cumulative;
    s_series_name (text, family->name, "_bucket", series, "+Inf");
    mx_text_puts (text, " ");
    s_unsigned (text, count);
    mx_text_puts (text, "\n");
    s_series_name (text, family->name, "_sum", series, NULL);
    mx_text_puts (text, " ");
    s_number (text, s_double (atomic_load_explicit (&series->value, memory_order_relaxed)));
    mx_text_puts (text, "\n");
    s_series_name (text, family->name, "_count", series, NULL);
    mx_text_puts (text, " ");
    s_unsigned (text, count);
    mx_text_puts (text, "\n");
}

char *
mx_metrics_render (void)
{
    mx_text_t text = { 0 };
    mx_text_puts (&text, "");
    pthread_mutex_lock (&s_mutex);
    for (s_family_t *family = s_families; family; family = family->next) {
        mx_text_puts (&text, "# HELP ");
        mx_text_puts (&text, family->name);
        mx_text_puts (&text, " ");
        s_escaped (&text, family->help, false);
        mx_text_puts (&text, "\n# TYPE ");
        mx_text_puts (&text, family->name);
        mx_text_puts (&text, " ");
        mx_text_puts (&text, s_type_names [family->type]);
        mx_text_puts (&text, "\n");
        for (s_series_t *series = family->series; series; series = series->next) {
            if (family->type == S_HISTOGRAM) {
                s_render_histogram (&text, family, series);
                continue;
            }
            s_series_name (&text, family->name, "", series, NULL);
            mx_text_puts (&text, " ");
            uint64_t value = atomic_load_explicit (&series->value, memory_order_relaxed);
            if (family->type == S_COUNTER)
                s_unsigned (&text, value);
            else
                s_number (&text, s_double (value));
            mx_text_puts (&text, "\n");
        }
    }
    pthread_mutex_unlock (&s_mutex);
    return text.data;
}

void
mx_metrics_reset (void)
{
    pthread_mutex_lock (&s_mutex);
    while (s_families) {
        s_family_t *family = s_families;
        s_families = family->next;
        while (family->series) {
            s_series_t *series = family->series;
            family->series = series->next;
            s_series_free (series);
        }
        free (family->name);
        free (family->help);
        free (family->bounds);
        free (family);
    }
    s_families_tail = NULL;
    pthread_mutex_unlock (&s_mutex);
}
