/*  mx_diff - the comparison of msgx-diff, without I/O: msgxd's flights of
    the window are added first (held in memory, at most max_flights of
    them), then the legacy rows are fed one by one as they stream in; each
    is matched by its key, its fields compared after normalising. What is
    left over was only in msgxd. The report is a JSON document
    (docs/schemas/diff-report.schema.json), also rendered as text and as
    a self-contained HTML page.

    Match rate: matching values / expected values, where every flight on
    both sides expects one value per mapped field and a flight on one side
    only expects all of them and matches none. 100 when nothing is
    expected (both sides empty).
*/
#ifndef MX_DIFF_H_INCLUDED
#define MX_DIFF_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "mx_diff_map.h"

typedef struct _mx_diff_t mx_diff_t;

//  max_examples: per field and per kind of missing flight.
mx_diff_t *mx_diff_new (const mx_diff_map_t *map, size_t max_examples, size_t max_flights);
void mx_diff_destroy (mx_diff_t **self_p);

//  One flight of msgxd: keys [i] the raw value of map->keys [i], values [i]
//  of map->fields [i] (NULL for none, or a set field filled later). Times
//  are canonical already (mx_diff_format_time). Returns 0, or -1 with
//  *error when there are more than max_flights or two flights share a key.
int mx_diff_add_msgx (mx_diff_t *self, int64_t flid, const char *const *keys,
                      const char *const *values, char **error);

//  A set field's value of a flight added before: replaces it (one record)
//  or, join, is appended to it after a ",". Unknown flids are ignored.
void mx_diff_set_msgx (mx_diff_t *self, int64_t flid, size_t field, const char *value, bool join);

//  One legacy row: its raw key and field values, in the mapping's order.
void mx_diff_add_legacy (mx_diff_t *self, const char *const *keys, const char *const *values);

//  The report; window is taken (a JSON object saying what was compared).
//  threshold in percent.
json_t *mx_diff_report (mx_diff_t *self, json_t *window, double threshold);

//  Renderings of a report.
void mx_diff_write_text (const json_t *report, FILE *out);
int mx_diff_write_html (const json_t *report, FILE *out);

#endif
