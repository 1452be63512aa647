/*  mx_diff_map - see mx_diff_map.h.  */
#include "mx_diff_map.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mx_text.h"

//  The wire codes msgxd stores, from the same tables the codec uses.
typedef struct {
    const char *code;
    char type;                          //  'S', 'I', 'T', 'M'
} s_scalar_t;

static const s_scalar_t s_scalars [] = {
#define MX_SCALAR(NAME, CODE, TYPE, STYP) { CODE, #TYPE [0] },
#include "mx_flight_fields.def"
#undef MX_SCALAR
};

typedef struct {
    const char *element;
    const char *table;
    const char *key;                    //  "" = DELY: its position (seq)
} s_set_t;

static const s_set_t s_sets [] = {
#define MX_SET(NAME, ELEMENT, TABLE, KEY) { ELEMENT, TABLE, KEY },
#define MX_SET_FIELD(SET, CODE, TYPE, SOURCE)
#include "mx_flight_sets.def"
#undef MX_SET
#undef MX_SET_FIELD
};

typedef struct {
    const char *element;
    const char *code;
    char type;
} s_set_field_t;

static const s_set_field_t s_set_fields [] = {
#define MX_SET(NAME, ELEMENT, TABLE, KEY)
#define MX_SET_FIELD(SET, CODE, TYPE, SOURCE) { #SET, CODE, #TYPE [0] },
#include "mx_flight_sets.def"
#undef MX_SET
#undef MX_SET_FIELD
};

//  MX_SET_FIELD names its set by NAME; the element is what codes use.
static const struct { const char *name; const char *element; } s_set_names [] = {
#define MX_SET(NAME, ELEMENT, TABLE, KEY) { #NAME, ELEMENT },
#define MX_SET_FIELD(SET, CODE, TYPE, SOURCE)
#include "mx_flight_sets.def"
#undef MX_SET
#undef MX_SET_FIELD
};

#define S_COUNT(array) (sizeof (array) / sizeof ((array) [0]))

//  Problems are collected, one line each, so a mapping is fixed in one go.
typedef struct {
    const char *origin;
    mx_text_t text;
    int count;
} s_problems_t;

static void
s_problem (s_problems_t *self, const char *format, ...)
{
    char line [512];
    va_list args;
    va_start (args, format);
    vsnprintf (line, sizeof line, format, args);
    va_end (args);
    if (self->count++)
        mx_text_puts (&self->text, "\n");
    mx_text_puts (&self->text, self->origin);
    mx_text_puts (&self->text, ": ");
    mx_text_puts (&self->text, line);
}

bool
mx_diff_identifier_ok (const char *name, bool qualified)
{
    if (!name || !*name || strlen (name) > 128)
        return false;
    bool start = true;
    int dots = 0;
    for (const char *c = name; *c; c++) {
        if (*c == '.' && !start && qualified && dots++ == 0) {
            start = true;
            continue;
        }
        bool letter = isalpha ((unsigned char) *c) || *c == '_';
        if (!letter && (start || !isdigit ((unsigned char) *c)))
            return false;
        start = false;
    }
    return !start;
}

static char *
s_lower (const char *text)
{
    char *copy = strdup (text);
    if (copy)
        for (char *c = copy; *c; c++)
            *c = (char) tolower ((unsigned char) *c);
    return copy;
}

static mx_diff_type_t
s_type_of (char type)
{
    return type == 'T' ? MX_DIFF_TIME : type == 'S' ? MX_DIFF_TEXT : MX_DIFF_INT;
}

//  Resolve field->code into msgxd's table and column. Returns 0, or -1
//  with the reason in why.
static int
s_resolve_code (mx_diff_field_t *field, char *why, size_t size)
{
    const char *code = field->code;
    if (strcmp (code, "FLID") == 0) {
        field->table = "flight_schd";
        field->msgx_column = strdup ("flid");
        field->type = MX_DIFF_INT;
        return 0;
    }
    for (size_t i = 0; i < S_COUNT (s_scalars); i++)
        if (strcmp (code, s_scalars [i].code) == 0) {
            field->table = "flight_schd";
            field->msgx_column = s_lower (code);
            field->type = s_type_of (s_scalars [i].type);
            return 0;
        }
    //  ELEMENT.N.FIELD or ELEMENT.FIELD
    char element [16], record [24], name [16];
    const char *dot = strchr (code, '.');
    const char *last = strrchr (code, '.');
    if (!dot || (size_t) (dot - code) >= sizeof element || strlen (last + 1) >= sizeof name) {
        snprintf (why, size, "unknown wire code '%s' (a code of the flight: ALCD, ESTT ..., FLID, "
                  "or a set field as ELEMENT.N.FIELD or ELEMENT.FIELD, e.g. GTDT.1.GATE)", code);
        return -1;
    }
    snprintf (element, sizeof element, "%.*s", (int) (dot - code), code);
    snprintf (name, sizeof name, "%s", last + 1);
    record [0] = '\0';
    if (last != dot) {
        size_t length = (size_t) (last - dot - 1);
        if (length == 0 || length >= sizeof record) {
            snprintf (why, size, "bad record key in '%s'", code);
            return -1;
        }
        snprintf (record, sizeof record, "%.*s", (int) length, dot + 1);
    }
    const s_set_t *set = NULL;
    for (size_t i = 0; i < S_COUNT (s_sets); i++)
        if (strcmp (element, s_sets [i].element) == 0)
            set = &s_sets [i];
    if (!set) {
        snprintf (why, size, "unknown wire code '%s': no set element '%s'", code, element);
        return -1;
    }
    const char *set_name = NULL;
    for (size_t i = 0; i < S_COUNT (s_set_names); i++)
        if (strcmp (s_set_names [i].element, element) == 0)
            set_name = s_set_names [i].name;
    const s_set_field_t *found = NULL;
    for (size_t i = 0; i < S_COUNT (s_set_fields); i++)
        if (strcmp (s_set_fields [i].element, set_name) == 0 && strcmp (s_set_fields [i].code, name) == 0)
            found = &s_set_fields [i];
    if (!found) {
        snprintf (why, size, "unknown wire code '%s': %s has no field %s", code, element, name);
        return -1;
    }
    if (*record) {
        char *end = NULL;
        errno = 0;
        long long value = strtoll (record, &end, 10);
        if (errno || *end || value < 1 || value > INT32_MAX) {
            snprintf (why, size, "bad record key '%s' in '%s' (a whole number from 1)", record, code);
            return -1;
        }
        field->record = value;
    }
    field->table = set->table;
    field->msgx_column = s_lower (name);
    //  The record key column: the key attribute in lower case, seq for DELY.
    snprintf (field->set_key, sizeof field->set_key, "%s", *set->key ? set->key : "seq");
    for (char *c = field->set_key; *c; c++)
        *c = (char) tolower ((unsigned char) *c);
    if (strcmp (set->table, "flight_route_point") == 0)
        field->set_kind = set->element;
    field->type = s_type_of (found->type);
    return 0;
}

static int
s_parse_norm (json_t *entry, mx_diff_field_t *field, mx_diff_norm_t *norm, char *why, size_t size)
{
    static const struct { const char *name; mx_diff_norm_kind_t kind; } simple [] = {
        { "trim", MX_DIFF_TRIM }, { "upper", MX_DIFF_UPPER }, { "lower", MX_DIFF_LOWER },
        { "number", MX_DIFF_NUMBER }
    };
    if (json_is_string (entry)) {
        const char *name = json_string_value (entry);
        for (size_t i = 0; i < S_COUNT (simple); i++)
            if (strcmp (name, simple [i].name) == 0) {
                norm->kind = simple [i].kind;
                return 0;
            }
        if (strcmp (name, "time") == 0) {
            entry = NULL;               //  {"time": {}}: ISO-like, UTC
            norm->kind = MX_DIFF_TIME_OF;
        }
        else {
            snprintf (why, size, "unknown normaliser '%s' (trim, upper, lower, number, map, time)", name);
            return -1;
        }
    }
    else if (json_is_object (entry) && json_object_size (entry) == 1) {
        const char *name = json_object_iter_key (json_object_iter (entry));
        json_t *value = json_object_get (entry, name);
        if (strcmp (name, "map") == 0) {
            if (!json_is_object (value) || json_object_size (value) == 0) {
                snprintf (why, size, "map wants an object of legacy value to msgxd value");
                return -1;
            }
            norm->kind = MX_DIFF_MAP;
            norm->from = calloc (json_object_size (value), sizeof (char *));
            norm->to = calloc (json_object_size (value), sizeof (char *));
            const char *from;
            json_t *to;
            json_object_foreach (value, from, to) {
                if (!json_is_string (to)) {
                    snprintf (why, size, "map: the value of '%s' is not a text", from);
                    return -1;
                }
                norm->from [norm->entries] = strdup (from);
                norm->to [norm->entries++] = strdup (json_string_value (to));
            }
            return 0;
        }
        if (strcmp (name, "time") != 0) {
            snprintf (why, size, "unknown normaliser '%s' (trim, upper, lower, number, map, time)", name);
            return -1;
        }
        norm->kind = MX_DIFF_TIME_OF;
        entry = value;
        if (!json_is_object (entry)) {
            snprintf (why, size, "time wants an object {\"format\", \"zone\"}");
            return -1;
        }
        const char *key;
        json_t *item;
        json_object_foreach (entry, key, item)
            if ((strcmp (key, "format") && strcmp (key, "zone")) || !json_is_string (item)) {
                snprintf (why, size, "time: unknown or non-text option '%s' (format, zone)", key);
                return -1;
            }
    }
    else {
        snprintf (why, size, "a normaliser is a name or an object with one member");
        return -1;
    }
    //  A time normaliser.
    if (field->type != MX_DIFF_TIME) {
        snprintf (why, size, "time normaliser on %s, which is not a time", field->code);
        return -1;
    }
    const char *format = entry ? json_string_value (json_object_get (entry, "format")) : NULL;
    const char *zone = entry ? json_string_value (json_object_get (entry, "zone")) : NULL;
    if (format) {
        //  Only the directives mx_diff_parse_time reads.
        for (const char *c = format; *c; c++)
            if (*c == '%' && !strchr ("YymdHMSbs%", *++c)) {
                snprintf (why, size, "time: unknown directive in format '%s' (%%Y %%y %%m %%d %%H %%M %%S %%b %%s %%%%)",
                          format);
                return -1;
            }
        norm->format = strdup (format);
    }
    if (zone) {
        char *reason = NULL;
        norm->zone = mx_tz_load (zone, &reason);
        if (!norm->zone) {
            snprintf (why, size, "time: bad zone '%s': %s", zone, reason ? reason : "cannot load it");
            free (reason);
            return -1;
        }
    }
    return 0;
}

//  One key or field entry.
static void
s_parse_field (json_t *entry, const char *where, mx_diff_field_t *field, s_problems_t *problems)
{
    char why [400];
    json_t *column = json_object_get (entry, "column");
    json_t *code = json_object_get (entry, "code");
    json_t *norms = json_object_get (entry, "normalise");
    if (!json_is_object (entry) || !json_is_string (column) || !json_is_string (code)) {
        s_problem (problems, "%s: wants {\"column\": TEXT, \"code\": TEXT[, \"normalise\": [...]]}", where);
        return;
    }
    const char *key;
    json_t *item;
    json_object_foreach (entry, key, item)
        if (strcmp (key, "column") && strcmp (key, "code") && strcmp (key, "normalise"))
            s_problem (problems, "%s: unknown member '%s'", where, key);
    field->column = strdup (json_string_value (column));
    field->code = strdup (json_string_value (code));
    if (!mx_diff_identifier_ok (field->column, false))
        s_problem (problems, "%s: column '%s' is not a plain identifier (letters, digits, _)", where,
                   field->column);
    if (s_resolve_code (field, why, sizeof why)) {
        s_problem (problems, "%s (column %s): %s", where, field->column, why);
        return;
    }
    if (!norms)
        return;
    if (!json_is_array (norms)) {
        s_problem (problems, "%s (column %s): normalise wants an array", where, field->column);
        return;
    }
    field->norms = calloc (json_array_size (norms) + 1, sizeof *field->norms);
    size_t index;
    json_array_foreach (norms, index, item) {
        mx_diff_norm_t *norm = &field->norms [field->norm_count++];
        if (s_parse_norm (item, field, norm, why, sizeof why))
            s_problem (problems, "%s (column %s): normalise[%zu]: %s", where, field->column, index, why);
    }
}

static mx_diff_field_t *
s_parse_fields (json_t *array, const char *name, size_t *count, s_problems_t *problems)
{
    if (!json_is_array (array) || json_array_size (array) == 0) {
        s_problem (problems, "'%s' wants a non-empty array", name);
        return NULL;
    }
    mx_diff_field_t *fields = calloc (json_array_size (array), sizeof *fields);
    size_t index;
    json_t *entry;
    json_array_foreach (array, index, entry) {
        char where [64];
        snprintf (where, sizeof where, "%s[%zu]", name, index);
        s_parse_field (entry, where, &fields [index], problems);
    }
    *count = json_array_size (array);
    return fields;
}

mx_diff_map_t *
mx_diff_map_parse (const char *text, const char *origin, char **error)
{
    s_problems_t problems = { origin, { 0 }, 0 };
    json_error_t parse_error;
    json_t *root = json_loads (text, JSON_REJECT_DUPLICATES, &parse_error);
    if (!root || !json_is_object (root)) {
        if (root)
            s_problem (&problems, "the mapping is not a JSON object");
        else
            s_problem (&problems, "line %d: %s", parse_error.line, parse_error.text);
        json_decref (root);
        *error = problems.text.data;
        return NULL;
    }
    mx_diff_map_t *self = calloc (1, sizeof *self);
    const char *key;
    json_t *item;
    json_object_foreach (root, key, item)
        if (strcmp (key, "table") && strcmp (key, "day") && strcmp (key, "key") && strcmp (key, "fields"))
            s_problem (&problems, "unknown member '%s' (table, day, key, fields)", key);
    json_t *table = json_object_get (root, "table");
    if (!json_is_string (table) || !mx_diff_identifier_ok (json_string_value (table), true))
        s_problem (&problems, "'table' wants the legacy table's name (a plain identifier, schema.table allowed)");
    else
        self->table = strdup (json_string_value (table));
    json_t *day = json_object_get (root, "day");
    if (day && (!json_is_string (day) || !mx_diff_identifier_ok (json_string_value (day), false)))
        s_problem (&problems, "'day' wants the legacy column of the operation day (a plain identifier)");
    else if (day)
        self->day_column = strdup (json_string_value (day));
    self->keys = s_parse_fields (json_object_get (root, "key"), "key", &self->key_count, &problems);
    self->fields = s_parse_fields (json_object_get (root, "fields"), "fields", &self->field_count, &problems);
    for (size_t i = 0; i < self->key_count; i++)
        if (self->keys [i].table && strcmp (self->keys [i].table, "flight_schd"))
            s_problem (&problems, "key[%zu]: %s is a set field; a key is FLID or flight codes", i,
                       self->keys [i].code);
    self->flid_key = self->key_count == 1 && self->keys [0].code && strcmp (self->keys [0].code, "FLID") == 0;
    json_decref (root);
    if (problems.count) {
        mx_diff_map_destroy (&self);
        *error = problems.text.data;
        return NULL;
    }
    return self;
}

mx_diff_map_t *
mx_diff_map_load (const char *path, char **error)
{
    FILE *file = fopen (path, "r");
    if (!file) {
        if (asprintf (error, "%s: cannot read the mapping: %s", path, strerror (errno)) < 0)
            *error = NULL;
        return NULL;
    }
    mx_text_t text = { 0 };
    char buffer [4096];
    size_t got;
    while ((got = fread (buffer, 1, sizeof buffer, file)) > 0 && text.size < (1u << 20))
        mx_text_append (&text, buffer, got);
    fclose (file);
    mx_diff_map_t *self = NULL;
    if (text.size >= (1u << 20)) {
        if (asprintf (error, "%s: the mapping is larger than 1 MiB", path) < 0)
            *error = NULL;
    }
    else
        self = mx_diff_map_parse (text.data ? text.data : "", path, error);
    free (text.data);
    return self;
}

static void
s_fields_free (mx_diff_field_t *fields, size_t count)
{
    for (size_t i = 0; fields && i < count; i++) {
        mx_diff_field_t *field = &fields [i];
        for (size_t n = 0; n < field->norm_count; n++) {
            mx_diff_norm_t *norm = &field->norms [n];
            for (size_t e = 0; e < norm->entries; e++) {
                free (norm->from [e]);
                free (norm->to [e]);
            }
            free (norm->from);
            free (norm->to);
            free (norm->format);
            mx_tz_destroy (&norm->zone);
        }
        free (field->norms);
        free (field->column);
        free (field->code);
        free (field->msgx_column);
    }
    free (fields);
}

void
mx_diff_map_destroy (mx_diff_map_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    mx_diff_map_t *self = *self_p;
    s_fields_free (self->keys, self->key_count);
    s_fields_free (self->fields, self->field_count);
    free (self->table);
    free (self->day_column);
    free (self);
    *self_p = NULL;
}

//  ---------------------------------------------------------------------
//  Normalisers

const char *
mx_diff_format_time (int64_t utc_ms, char *buf)
{
    int64_t seconds = utc_ms >= 0 ? utc_ms / 1000 : -((-utc_ms + 999) / 1000);
    int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
    int64_t rest = seconds - days * 86400;
    int year, month, day;
    mx_tz_civil_from_days (days, &year, &month, &day);
    snprintf (buf, MX_DIFF_TIME_BUFSIZE, "%04d-%02d-%02dT%02d:%02d:%02dZ", year, month, day,
              (int) (rest / 3600), (int) (rest / 60 % 60), (int) (rest % 60));
    return buf;
}

//  Exactly width digits (width 0: one or more, up to 18).
static int
s_digits (const char **text, int width, int64_t *value)
{
    int64_t result = 0;
    int count = 0;
    while (isdigit ((unsigned char) **text) && (width ? count < width : count < 18)) {
        result = result * 10 + (**text - '0');
        (*text)++;
        count++;
    }
    if (count == 0 || (width && count != width))
        return -1;
    *value = result;
    return 0;
}

typedef struct {
    int64_t year, month, day, hour, minute, second;
    bool has_offset;
    int64_t offset_s;                   //  east of UTC
    bool epoch;
    int64_t epoch_s;
} s_wall_t;

//  "Z", "+HH", "+HHMM", "+HH:MM" (or "-")
static int
s_offset (const char **text, s_wall_t *wall)
{
    if (**text == 'Z') {
        (*text)++;
        wall->has_offset = true;
        return 0;
    }
    if (**text != '+' && **text != '-')
        return 0;
    int sign = **text == '-' ? -1 : 1;
    (*text)++;
    int64_t hours, minutes = 0;
    if (s_digits (text, 2, &hours))
        return -1;
    if (**text == ':')
        (*text)++;
    if (isdigit ((unsigned char) **text) && s_digits (text, 2, &minutes))
        return -1;
    if (hours > 23 || minutes > 59)
        return -1;
    wall->has_offset = true;
    wall->offset_s = sign * (hours * 3600 + minutes * 60);
    return 0;
}

static int
s_parse_iso (const char *text, s_wall_t *wall)
{
    if (s_digits (&text, 4, &wall->year) || *text++ != '-' || s_digits (&text, 2, &wall->month)
    ||  *text++ != '-' || s_digits (&text, 2, &wall->day) || (*text != ' ' && *text != 'T'))
        return -1;
    text++;
    if (s_digits (&text, 2, &wall->hour) || *text++ != ':' || s_digits (&text, 2, &wall->minute))
        return -1;
    if (*text == ':') {
        text++;
        if (s_digits (&text, 2, &wall->second))
            return -1;
        if (*text == '.') {             //  fractions are below what msgxd keeps
            text++;
            int64_t ignored;
            if (s_digits (&text, 0, &ignored))
                return -1;
        }
    }
    if (s_offset (&text, wall))
        return -1;
    return *text ? -1 : 0;
}

static int
s_parse_format (const char *text, const char *format, s_wall_t *wall)
{
    static const char *months [] = { "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                     "oct", "nov", "dec" };
    for (const char *f = format; *f; f++) {
        if (*f != '%' || f [1] == '%') {
            if (*f == '%')
                f++;
            if (*text++ != *f)
                return -1;
            continue;
        }
        int64_t value = 0;
        switch (*++f) {
            case 'Y': if (s_digits (&text, 4, &wall->year)) return -1; break;
            case 'y': if (s_digits (&text, 2, &value)) return -1; wall->year = 2000 + value; break;
            case 'm': if (s_digits (&text, 2, &wall->month)) return -1; break;
            case 'd': if (s_digits (&text, 2, &wall->day)) return -1; break;
            case 'H': if (s_digits (&text, 2, &wall->hour)) return -1; break;
            case 'M': if (s_digits (&text, 2, &wall->minute)) return -1; break;
            case 'S': if (s_digits (&text, 2, &wall->second)) return -1; break;
            case 's':
                if (s_digits (&text, 0, &wall->epoch_s)) return -1;
                wall->epoch = true;
                break;
            case 'b': {
                wall->month = 0;
                for (int m = 0; m < 12 && !wall->month; m++)
                    if (strncasecmp (text, months [m], 3) == 0)
                        wall->month = m + 1;
                if (!wall->month) return -1;
                text += 3;
                break;
            }
            default: return -1;
        }
    }
    return *text ? -1 : 0;
}

int
mx_diff_parse_time (const char *text, const char *format, const mx_tz_t *zone, int64_t *utc_ms)
{
    s_wall_t wall = { .year = 1970, .month = 1, .day = 1 };
    if (format ? s_parse_format (text, format, &wall) : s_parse_iso (text, &wall))
        return -1;
    if (wall.epoch) {
        *utc_ms = wall.epoch_s * 1000;
        return 0;
    }
    if (wall.year < 1 || wall.year > 9999 || wall.month < 1 || wall.month > 12 || wall.day < 1
    ||  wall.day > mx_tz_days_in_month ((int) wall.year, (int) wall.month)
    ||  wall.hour > 23 || wall.minute > 59 || wall.second > 59)
        return -1;
    if (wall.has_offset || !zone) {
        int64_t days = mx_tz_days_from_civil ((int) wall.year, (int) wall.month, (int) wall.day);
        int64_t seconds = days * 86400 + wall.hour * 3600 + wall.minute * 60 + wall.second;
        *utc_ms = (seconds - wall.offset_s) * 1000;
        return 0;
    }
    *utc_ms = mx_tz_local_to_utc (zone, (int) wall.year, (int) wall.month, (int) wall.day,
                                  (int) wall.hour, (int) wall.minute, (int) wall.second);
    return 0;
}

//  A decimal number in its shortest form: no sign for zero, no leading
//  zeros, no trailing fraction zeros. Text that is no number is kept.
static char *
s_number (char *value)
{
    const char *c = value;
    bool negative = *c == '-';
    if (*c == '-' || *c == '+')
        c++;
    const char *int_start = c;
    while (isdigit ((unsigned char) *c))
        c++;
    const char *int_end = c, *frac_start = c, *frac_end = c;
    if (*c == '.') {
        frac_start = ++c;
        while (isdigit ((unsigned char) *c))
            c++;
        frac_end = c;
    }
    if (*c || (int_end == int_start && frac_end == frac_start))
        return value;
    while (int_start < int_end - 1 && *int_start == '0')
        int_start++;
    while (frac_end > frac_start && frac_end [-1] == '0')
        frac_end--;
    bool zero = true;
    for (const char *d = int_start; d < int_end; d++)
        zero = zero && *d == '0';
    for (const char *d = frac_start; d < frac_end; d++)
        zero = zero && *d == '0';
    char *result = NULL;
    if (asprintf (&result, "%s%.*s%s%.*s", negative && !zero ? "-" : "",
                  int_end > int_start ? (int) (int_end - int_start) : 1,
                  int_end > int_start ? int_start : "0",
                  frac_end > frac_start ? "." : "", (int) (frac_end - frac_start), frac_start) < 0)
        return value;
    free (value);
    return result;
}

static char *
s_apply (const mx_diff_norm_t *norm, char *value)
{
    switch (norm->kind) {
        case MX_DIFF_TRIM: {
            char *start = value;
            while (isspace ((unsigned char) *start))
                start++;
            size_t length = strlen (start);
            while (length && isspace ((unsigned char) start [length - 1]))
                length--;
            memmove (value, start, length);
            value [length] = '\0';
            return value;
        }
        case MX_DIFF_UPPER:
        case MX_DIFF_LOWER:
            for (char *c = value; *c; c++)
                *c = (char) (norm->kind == MX_DIFF_UPPER ? toupper ((unsigned char) *c)
                                                         : tolower ((unsigned char) *c));
            return value;
        case MX_DIFF_NUMBER:
            return s_number (value);
        case MX_DIFF_MAP:
            for (size_t e = 0; e < norm->entries; e++)
                if (strcmp (value, norm->from [e]) == 0) {
                    free (value);
                    return strdup (norm->to [e]);
                }
            return value;
        case MX_DIFF_TIME_OF: {
            int64_t utc_ms;
            if (!*value || mx_diff_parse_time (value, norm->format, norm->zone, &utc_ms))
                return value;           //  not a time: compared as it is, so it differs
            char buf [MX_DIFF_TIME_BUFSIZE];
            free (value);
            return strdup (mx_diff_format_time (utc_ms, buf));
        }
    }
    return value;
}

char *
mx_diff_normalise (const mx_diff_field_t *field, const char *value, bool legacy)
{
    if (!value)
        return NULL;
    char *result = strdup (value);
    bool timed = false;
    for (size_t n = 0; result && n < field->norm_count; n++) {
        const mx_diff_norm_t *norm = &field->norms [n];
        timed = timed || norm->kind == MX_DIFF_TIME_OF;
        if (legacy || norm->kind == MX_DIFF_TRIM || norm->kind == MX_DIFF_UPPER
        ||  norm->kind == MX_DIFF_LOWER || norm->kind == MX_DIFF_NUMBER)
            result = s_apply (norm, result);
    }
    if (result && legacy && field->type == MX_DIFF_TIME && !timed) {
        mx_diff_norm_t iso = { .kind = MX_DIFF_TIME_OF };
        result = s_apply (&iso, result);
    }
    if (result && !*result) {
        free (result);
        result = NULL;
    }
    return result;
}
