/*  mx_diff - see mx_diff.h.  */
#include "mx_diff.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <czmq.h>

#include "mx_text.h"

//  The key parts joined by the unit separator, which no code holds.
#define S_KEY_SEPARATOR "\x1f"

typedef struct {
    int64_t flid;
    char *key;                          //  normalised key, the hash's key
    char *label;                        //  the key as people read it
    char **values;                      //  raw (canonical) value per field
    bool seen;                          //  a legacy row matched it
} s_flight_t;

typedef struct {
    int64_t compared;
    int64_t matched;
    json_t *examples;
} s_stat_t;

struct _mx_diff_t {
    const mx_diff_map_t *map;
    size_t max_examples;
    size_t max_flights;
    zhashx_t *by_key;                   //  key -> s_flight_t (not owning)
    zhashx_t *by_flid;                  //  decimal flid -> s_flight_t (not owning)
    s_flight_t **flights;               //  in the order added (owning)
    size_t count;
    s_stat_t *stats;                    //  per field
    int64_t legacy_rows;
    int64_t only_legacy;
    int64_t legacy_duplicates;
    json_t *only_legacy_examples;
    json_t *duplicate_examples;
};

mx_diff_t *
mx_diff_new (const mx_diff_map_t *map, size_t max_examples, size_t max_flights)
{
    mx_diff_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->map = map;
    self->max_examples = max_examples;
    self->max_flights = max_flights;
    self->by_key = zhashx_new ();
    self->by_flid = zhashx_new ();
    self->stats = calloc (map->field_count, sizeof *self->stats);
    for (size_t i = 0; i < map->field_count; i++)
        self->stats [i].examples = json_array ();
    self->only_legacy_examples = json_array ();
    self->duplicate_examples = json_array ();
    return self;
}

static void
s_flight_free (s_flight_t *flight, size_t fields)
{
    for (size_t i = 0; i < fields; i++)
        free (flight->values [i]);
    free (flight->values);
    free (flight->key);
    free (flight->label);
    free (flight);
}

void
mx_diff_destroy (mx_diff_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    mx_diff_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++)
        s_flight_free (self->flights [i], self->map->field_count);
    free (self->flights);
    zhashx_destroy (&self->by_key);
    zhashx_destroy (&self->by_flid);
    for (size_t i = 0; i < self->map->field_count; i++)
        json_decref (self->stats [i].examples);
    free (self->stats);
    json_decref (self->only_legacy_examples);
    json_decref (self->duplicate_examples);
    free (self);
    *self_p = NULL;
}

//  A text buffer's data, its spare capacity given back.
static char *
s_shrink (mx_text_t *text)
{
    char *data = realloc (text->data, text->size + 1);
    return data ? data : text->data;
}

//  The normalised key (NULL when a part is empty: such a row matches
//  nothing) and the label "column=value, ..." of raw values.
static char *
s_key (const mx_diff_map_t *map, const char *const *keys, bool legacy, char **label)
{
    mx_text_t key = { 0 }, text = { 0 };
    bool empty = false;
    for (size_t i = 0; i < map->key_count; i++) {
        char *part = mx_diff_normalise (&map->keys [i], keys [i], legacy);
        empty = empty || !part;
        if (i) {
            mx_text_puts (&key, S_KEY_SEPARATOR);
            mx_text_puts (&text, ", ");
        }
        mx_text_puts (&key, part ? part : "");
        mx_text_puts (&text, legacy ? map->keys [i].column : map->keys [i].code);
        mx_text_puts (&text, "=");
        mx_text_puts (&text, keys [i] ? keys [i] : "NULL");
        free (part);
    }
    //  Kept for every flight of the window: no room beyond the text.
    *label = s_shrink (&text);
    if (empty) {
        free (key.data);
        return NULL;
    }
    return s_shrink (&key);
}

int
mx_diff_add_msgx (mx_diff_t *self, int64_t flid, const char *const *keys,
                  const char *const *values, char **error)
{
    if (self->count >= self->max_flights) {
        if (asprintf (error, "msgxd holds more than %zu flights in the window (--max-flights)",
                      self->max_flights) < 0)
            *error = NULL;
        return -1;
    }
    s_flight_t *flight = calloc (1, sizeof *flight);
    flight->flid = flid;
    flight->values = calloc (self->map->field_count + 1, sizeof (char *));
    for (size_t i = 0; i < self->map->field_count; i++)
        flight->values [i] = values [i] ? strdup (values [i]) : NULL;
    flight->key = s_key (self->map, keys, false, &flight->label);
    if (!flight->key) {
        //  A flight without its key can match no legacy row.
        char flid_text [24];
        snprintf (flid_text, sizeof flid_text, "%" PRId64, flid);
        flight->key = strdup (flid_text);
        zsys_debug ("flight %s has an empty key", flid_text);
    }
    else if (zhashx_lookup (self->by_key, flight->key)) {
        if (asprintf (error, "two flights of msgxd share the key %s (FLID %" PRId64 "): the mapping's"
                      " key does not tell flights apart", flight->label, flid) < 0)
            *error = NULL;
        s_flight_free (flight, self->map->field_count);
        return -1;
    }
    else
        zhashx_insert (self->by_key, flight->key, flight);
    char flid_text [24];
    snprintf (flid_text, sizeof flid_text, "%" PRId64, flid);
    zhashx_insert (self->by_flid, flid_text, flight);
    if (self->count % 1024 == 0)
        self->flights = realloc (self->flights, (self->count + 1024) * sizeof *self->flights);
    self->flights [self->count++] = flight;
    return 0;
}

void
mx_diff_set_msgx (mx_diff_t *self, int64_t flid, size_t field, const char *value, bool join)
{
    char flid_text [24];
    snprintf (flid_text, sizeof flid_text, "%" PRId64, flid);
    s_flight_t *flight = zhashx_lookup (self->by_flid, flid_text);
    if (!flight || field >= self->map->field_count)
        return;
    char *old = flight->values [field];
    if (join && old) {
        char *joined = NULL;
        if (asprintf (&joined, "%s,%s", old, value ? value : "") < 0)
            return;
        flight->values [field] = joined;
    }
    else
        flight->values [field] = value ? strdup (value) : (join ? strdup ("") : NULL);
    free (old);
}

static json_t *
s_side (const char *raw, const char *normalised)
{
    return json_pack ("{s:s?, s:s?}", "raw", raw, "normalised", normalised);
}

static void
s_compare (mx_diff_t *self, s_flight_t *flight, const char *const *values)
{
    for (size_t i = 0; i < self->map->field_count; i++) {
        const mx_diff_field_t *field = &self->map->fields [i];
        char *ours = mx_diff_normalise (field, flight->values [i], false);
        char *theirs = mx_diff_normalise (field, values [i], true);
        s_stat_t *stat = &self->stats [i];
        stat->compared++;
        bool same = (!ours && !theirs) || (ours && theirs && strcmp (ours, theirs) == 0);
        if (same)
            stat->matched++;
        else if (json_array_size (stat->examples) < self->max_examples)
            json_array_append_new (stat->examples, json_pack ("{s:I, s:s, s:o, s:o}",
                "flid", (json_int_t) flight->flid, "key", flight->label,
                "msgxd", s_side (flight->values [i], ours), "legacy", s_side (values [i], theirs)));
        free (ours);
        free (theirs);
    }
}

void
mx_diff_add_legacy (mx_diff_t *self, const char *const *keys, const char *const *values)
{
    self->legacy_rows++;
    char *label = NULL;
    char *key = s_key (self->map, keys, true, &label);
    s_flight_t *flight = key ? zhashx_lookup (self->by_key, key) : NULL;
    if (!flight) {
        self->only_legacy++;
        if (json_array_size (self->only_legacy_examples) < self->max_examples)
            json_array_append_new (self->only_legacy_examples, json_pack ("{s:s}", "key", label));
    }
    else if (flight->seen) {
        //  A second row for one flight: counted, not compared again.
        self->legacy_duplicates++;
        if (json_array_size (self->duplicate_examples) < self->max_examples)
            json_array_append_new (self->duplicate_examples,
                                   json_pack ("{s:I, s:s}", "flid", (json_int_t) flight->flid, "key", label));
    }
    else {
        flight->seen = true;
        s_compare (self, flight, values);
    }
    free (key);
    free (label);
}

static double
s_rate (int64_t matched, int64_t expected)
{
    return expected ? (double) matched * 100.0 / (double) expected : 100.0;
}

json_t *
mx_diff_report (mx_diff_t *self, json_t *window, double threshold)
{
    const mx_diff_map_t *map = self->map;
    int64_t both = 0, only_msgx = 0;
    json_t *only_msgx_examples = json_array ();
    for (size_t i = 0; i < self->count; i++) {
        s_flight_t *flight = self->flights [i];
        if (flight->seen) {
            both++;
            continue;
        }
        only_msgx++;
        if (json_array_size (only_msgx_examples) < self->max_examples)
            json_array_append_new (only_msgx_examples, json_pack ("{s:I, s:s}",
                "flid", (json_int_t) flight->flid, "key", flight->label));
    }
    int64_t missing = only_msgx + self->only_legacy;
    int64_t expected = 0, matched = 0;
    json_t *fields = json_array ();
    for (size_t i = 0; i < map->field_count; i++) {
        s_stat_t *stat = &self->stats [i];
        int64_t field_expected = stat->compared + missing;
        expected += field_expected;
        matched += stat->matched;
        json_array_append_new (fields, json_pack ("{s:s, s:s, s:I, s:I, s:I, s:f, s:O}",
            "code", map->fields [i].code, "column", map->fields [i].column,
            "compared", (json_int_t) stat->compared, "matched", (json_int_t) stat->matched,
            "mismatched", (json_int_t) (stat->compared - stat->matched),
            "match_rate", s_rate (stat->matched, stat->compared), "examples", stat->examples));
    }
    double rate = s_rate (matched, expected);
    return json_pack ("{s:o, s:s, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:o, s:O, s:O, s:o,"
                      " s:{s:I, s:I}, s:f, s:f, s:b}",
        "window", window, "table", map->table,
        "flights", "msgxd", (json_int_t) self->count, "legacy", (json_int_t) self->legacy_rows,
            "both", (json_int_t) both, "only_msgxd", (json_int_t) only_msgx,
            "only_legacy", (json_int_t) self->only_legacy,
            "legacy_duplicates", (json_int_t) self->legacy_duplicates,
        "only_msgxd", only_msgx_examples, "only_legacy", self->only_legacy_examples,
        "legacy_duplicates", self->duplicate_examples, "fields", fields,
        "values", "expected", (json_int_t) expected, "matched", (json_int_t) matched,
        "match_rate", rate, "threshold", threshold, "passed", rate >= threshold);
}

//  ---------------------------------------------------------------------
//  Text

static const char *
s_str (const json_t *object, const char *key)
{
    const char *text = json_string_value (json_object_get (object, key));
    return text ? text : "";
}

static json_int_t
s_int (const json_t *object, const char *path1, const char *path2)
{
    const json_t *value = json_object_get (object, path1);
    if (path2)
        value = json_object_get (value, path2);
    return json_integer_value (value);
}

//  A value quoted, control characters made visible; NULL as NULL.
static void
s_print_value (FILE *out, const json_t *value)
{
    const char *text = json_string_value (value);
    if (!text) {
        fputs ("NULL", out);
        return;
    }
    char *safe = mx_text_escape_controls (text);
    fprintf (out, "\"%s\"", safe ? safe : "");
    free (safe);
}

static void
s_print_side (FILE *out, const char *name, const json_t *side)
{
    const json_t *raw = json_object_get (side, "raw");
    const json_t *normalised = json_object_get (side, "normalised");
    fprintf (out, " %s ", name);
    s_print_value (out, raw);
    if (!json_equal ((json_t *) raw, (json_t *) normalised)) {
        fputs (" (normalised ", out);
        s_print_value (out, normalised);
        fputs (")", out);
    }
}

//  The flight counts in one line (numbers only: nothing to escape).
static void
s_flight_counts (FILE *out, const json_t *report, const char *before, const char *after)
{
    fprintf (out, "%s: msgxd %" JSON_INTEGER_FORMAT ", legacy %" JSON_INTEGER_FORMAT
             ", on both %" JSON_INTEGER_FORMAT ", only in msgxd %" JSON_INTEGER_FORMAT
             ", only in legacy %" JSON_INTEGER_FORMAT "%s", before,
             s_int (report, "flights", "msgxd"), s_int (report, "flights", "legacy"),
             s_int (report, "flights", "both"), s_int (report, "flights", "only_msgxd"),
             s_int (report, "flights", "only_legacy"), after);
}

void
mx_diff_write_text (const json_t *report, FILE *out)
{
    const json_t *window = json_object_get (report, "window");
    if (json_object_get (window, "day"))
        fprintf (out, "msgx-diff: operation day %s, legacy table %s\n", s_str (window, "day"),
                 s_str (report, "table"));
    else
        fprintf (out, "msgx-diff: FLID %" JSON_INTEGER_FORMAT "-%" JSON_INTEGER_FORMAT ", legacy table %s\n",
                 s_int (window, "flid_from", NULL), s_int (window, "flid_to", NULL), s_str (report, "table"));
    s_flight_counts (out, report, "flights", "\n");
    size_t index;
    json_t *entry;
    json_array_foreach (json_object_get (report, "only_msgxd"), index, entry) {
        //  A business key is worth showing beside the FLID; the FLID key is not.
        const char *key = s_str (entry, "key");
        fprintf (out, "  only in msgxd: FLID %" JSON_INTEGER_FORMAT "%s%s%s\n", s_int (entry, "flid", NULL),
                 strncmp (key, "FLID=", 5) ? " (" : "", strncmp (key, "FLID=", 5) ? key : "",
                 strncmp (key, "FLID=", 5) ? ")" : "");
    }
    json_array_foreach (json_object_get (report, "only_legacy"), index, entry)
        fprintf (out, "  only in legacy: %s\n", s_str (entry, "key"));
    if (s_int (report, "flights", "legacy_duplicates"))
        fprintf (out, "  legacy rows repeating a flight (not compared): %" JSON_INTEGER_FORMAT "\n",
                 s_int (report, "flights", "legacy_duplicates"));
    fprintf (out, "fields (matched/compared on both sides):\n");
    json_array_foreach (json_object_get (report, "fields"), index, entry) {
        fprintf (out, "  %-16s %-20s %7" JSON_INTEGER_FORMAT "/%-7" JSON_INTEGER_FORMAT " %8.3f %%",
                 s_str (entry, "code"), s_str (entry, "column"), s_int (entry, "matched", NULL),
                 s_int (entry, "compared", NULL), json_real_value (json_object_get (entry, "match_rate")));
        json_int_t mismatched = s_int (entry, "mismatched", NULL);
        if (mismatched)
            fprintf (out, "  %" JSON_INTEGER_FORMAT " mismatch%s", mismatched, mismatched > 1 ? "es" : "");
        fputs ("\n", out);
        size_t n;
        json_t *example;
        json_array_foreach (json_object_get (entry, "examples"), n, example) {
            fprintf (out, "      FLID %" JSON_INTEGER_FORMAT ":", s_int (example, "flid", NULL));
            s_print_side (out, "msgxd", json_object_get (example, "msgxd"));
            s_print_side (out, "legacy", json_object_get (example, "legacy"));
            fputs ("\n", out);
        }
    }
    double rate = json_real_value (json_object_get (report, "match_rate"));
    double threshold = json_real_value (json_object_get (report, "threshold"));
    fprintf (out, "match rate %.3f %% (%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
             " values), threshold %.3f %%: %s\n", rate, s_int (report, "values", "matched"),
             s_int (report, "values", "expected"), threshold,
             json_is_true (json_object_get (report, "passed")) ? "passed" : "BELOW THRESHOLD");
}

//  ---------------------------------------------------------------------
//  HTML: one page, no script, no outside resource; every value escaped.

static void
s_html_text (FILE *out, const char *text)
{
    for (const char *c = text; *c; c++)
        switch (*c) {
            case '&':  fputs ("&amp;", out); break;
            case '<':  fputs ("&lt;", out); break;
            case '>':  fputs ("&gt;", out); break;
            case '"':  fputs ("&quot;", out); break;
            case '\'': fputs ("&#39;", out); break;
            default:
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                    fprintf (out, "&#x%02x;", (unsigned char) *c);
                else
                    fputc (*c, out);
        }
}

static void
s_html_value (FILE *out, const json_t *side, const char *member)
{
    const char *text = json_string_value (json_object_get (side, member));
    if (text) {
        fputs ("<code>", out);
        s_html_text (out, text);
        fputs ("</code>", out);
    }
    else
        fputs ("<i>NULL</i>", out);
}

static void
s_html_examples (FILE *out, const json_t *examples)
{
    if (json_array_size (examples) == 0)
        return;
    fputs ("<tr><td></td><td colspan=\"4\"><table class=\"ex\"><tr><th>FLID</th><th>msgxd</th>"
           "<th>msgxd normalised</th><th>legacy</th><th>legacy normalised</th></tr>\n", out);
    size_t n;
    json_t *example;
    json_array_foreach (examples, n, example) {
        const json_t *ours = json_object_get (example, "msgxd");
        const json_t *theirs = json_object_get (example, "legacy");
        fprintf (out, "<tr><td>%" JSON_INTEGER_FORMAT "</td><td>", s_int (example, "flid", NULL));
        s_html_value (out, ours, "raw");
        fputs ("</td><td>", out);
        s_html_value (out, ours, "normalised");
        fputs ("</td><td>", out);
        s_html_value (out, theirs, "raw");
        fputs ("</td><td>", out);
        s_html_value (out, theirs, "normalised");
        fputs ("</td></tr>\n", out);
    }
    fputs ("</table></td></tr>\n", out);
}

int
mx_diff_write_html (const json_t *report, FILE *out)
{
    double rate = json_real_value (json_object_get (report, "match_rate"));
    bool passed = json_is_true (json_object_get (report, "passed"));
    fputs ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<title>msgx-diff</title>\n<style>\n"
           "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
           "td,th{padding:2px 8px;text-align:left;vertical-align:top}"
           ".bar{width:300px;background:#e33;height:14px}.ok{background:#3a3;height:14px}"
           ".ex{font-size:90%;background:#f6f6f6}.passed{color:#3a3}.below{color:#e33}"
           "</style></head><body>\n<h1>msgx-diff: ", out);
    const json_t *window = json_object_get (report, "window");
    if (json_object_get (window, "day")) {
        fputs ("operation day ", out);
        s_html_text (out, s_str (window, "day"));
    }
    else
        fprintf (out, "FLID %" JSON_INTEGER_FORMAT "-%" JSON_INTEGER_FORMAT, s_int (window, "flid_from", NULL),
                 s_int (window, "flid_to", NULL));
    fputs ("</h1>\n<p>Legacy table <code>", out);
    s_html_text (out, s_str (report, "table"));
    fprintf (out, "</code>. Match rate <b class=\"%s\">%.3f %%</b> (threshold %.3f %%: %s).</p>\n",
             passed ? "passed" : "below", rate, json_real_value (json_object_get (report, "threshold")),
             passed ? "passed" : "below the threshold");
    s_flight_counts (out, report, "<p>Flights", ".</p>\n<ul>\n");
    size_t index;
    json_t *entry;
    json_array_foreach (json_object_get (report, "only_msgxd"), index, entry) {
        fprintf (out, "<li>only in msgxd: FLID %" JSON_INTEGER_FORMAT " (", s_int (entry, "flid", NULL));
        s_html_text (out, s_str (entry, "key"));
        fputs (")</li>\n", out);
    }
    json_array_foreach (json_object_get (report, "only_legacy"), index, entry) {
        fputs ("<li>only in legacy: ", out);
        s_html_text (out, s_str (entry, "key"));
        fputs ("</li>\n", out);
    }
    fputs ("</ul>\n<table>\n<tr><th>code</th><th>legacy column</th><th>matched / compared</th>"
           "<th>match rate</th><th></th></tr>\n", out);
    json_array_foreach (json_object_get (report, "fields"), index, entry) {
        double field_rate = json_real_value (json_object_get (entry, "match_rate"));
        fputs ("<tr><td>", out);
        s_html_text (out, s_str (entry, "code"));
        fputs ("</td><td>", out);
        s_html_text (out, s_str (entry, "column"));
        fprintf (out, "</td><td>%" JSON_INTEGER_FORMAT " / %" JSON_INTEGER_FORMAT "</td><td>%.3f %%</td>"
                 "<td><div class=\"bar\"><div class=\"ok\" style=\"width:%.1f%%\"></div></div></td></tr>\n",
                 s_int (entry, "matched", NULL), s_int (entry, "compared", NULL), field_rate, field_rate);
        s_html_examples (out, json_object_get (entry, "examples"));
    }
    fputs ("</table>\n</body></html>\n", out);
    return ferror (out) ? -1 : 0;
}
