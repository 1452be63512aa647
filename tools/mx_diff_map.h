/*  mx_diff_map - the mapping of msgx-diff: which legacy table and columns
    hold which of msgxd's wire codes, and how a legacy value is brought to
    msgxd's form before the two are compared (the normalisers).

    The mapping is a JSON file (docs/schemas/diff-mapping.schema.json):

        { "table": "flights", "day": "op_day",
          "key":    [ { "column": "flight_id", "code": "FLID" } ],
          "fields": [ { "column": "gate", "code": "GTDT.1.GATE", "normalise": ["trim"] },
                      { "column": "eta", "code": "ESTT",
                        "normalise": [ { "time": { "zone": "Asia/Shanghai" } } ] } ] }

    A code is a scalar of domain/mx_flight_fields.def (ALCD, ESTT ...), FLID,
    or a set field of domain/mx_flight_sets.def as ELEMENT.N.FIELD (the
    record with key N, e.g. GTDT.1.GATE) or ELEMENT.FIELD (every record's
    value in key order, joined by ","). Values are compared as text; SQL
    NULL and an empty text are the same value. Times are compared as
    instants, written "YYYY-MM-DDTHH:MM:SSZ".
*/
#ifndef MX_DIFF_MAP_H_INCLUDED
#define MX_DIFF_MAP_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_tz.h"

typedef enum {
    MX_DIFF_TEXT,                       //  S
    MX_DIFF_INT,                        //  I, and M (minutes)
    MX_DIFF_TIME                        //  T: UTC epoch ms on msgxd's side
} mx_diff_type_t;

typedef enum {
    MX_DIFF_TRIM,                       //  leading and trailing white space
    MX_DIFF_UPPER,                      //  ASCII case folded up
    MX_DIFF_LOWER,                      //  ... or down
    MX_DIFF_NUMBER,                     //  decimal number in its shortest form
    MX_DIFF_MAP,                        //  code table, legacy value -> msgxd value
    MX_DIFF_TIME_OF                     //  legacy wall time (format, zone) -> instant
} mx_diff_norm_kind_t;

typedef struct {
    mx_diff_norm_kind_t kind;
    char **from;                        //  MAP: legacy values ...
    char **to;                          //  ... and what each becomes
    size_t entries;
    char *format;                       //  TIME_OF: NULL = ISO-like (see mx_diff_parse_time)
    mx_tz_t *zone;                      //  TIME_OF: the legacy wall time's zone
} mx_diff_norm_t;

typedef struct {
    char *column;                       //  legacy column
    char *code;                         //  as the mapping writes it
    mx_diff_type_t type;
    const char *table;                  //  msgxd's table: flight_schd or a set's
    char *msgx_column;                  //  msgxd's column (lower case)
    char set_key [8];                   //  set: the record key column (psno, seq ...), else ""
    const char *set_kind;               //  ROUT/ERUT: flight_route_point.kind, else NULL
    int64_t record;                     //  set: the record key, 0 = every record joined
    mx_diff_norm_t *norms;
    size_t norm_count;
} mx_diff_field_t;

typedef struct {
    char *table;                        //  legacy table (schema.table allowed)
    char *day_column;                   //  legacy operation day column, NULL = none
    mx_diff_field_t *keys;              //  what matches a legacy row to a flight
    size_t key_count;
    mx_diff_field_t *fields;
    size_t field_count;
    bool flid_key;                      //  the key is FLID alone
} mx_diff_map_t;

//  Parse and validate a mapping. origin names it in errors. Returns NULL
//  with *error (malloc'd, one line per problem, each naming the entry)
//  when anything is wrong: unknown code, unknown normaliser, bad zone,
//  time normaliser on a code that is no time, a column name that is not a
//  plain identifier, ...
mx_diff_map_t *mx_diff_map_parse (const char *text, const char *origin, char **error);
mx_diff_map_t *mx_diff_map_load (const char *path, char **error);
void mx_diff_map_destroy (mx_diff_map_t **self_p);

//  A value brought to the form it is compared in (malloc'd), or NULL for
//  none (SQL NULL, or empty after normalising). legacy: every normaliser
//  in order (a time code without a time normaliser is read as ISO-like
//  UTC); msgxd's side (already canonical): only trim, case and number.
char *mx_diff_normalise (const mx_diff_field_t *field, const char *value, bool legacy);

//  msgxd's canonical text of a time: "YYYY-MM-DDTHH:MM:SSZ" (21 bytes).
#define MX_DIFF_TIME_BUFSIZE 32
const char *mx_diff_format_time (int64_t utc_ms, char *buf);

//  A wall time read with format (NULL: "YYYY-MM-DD[ T]HH:MM[:SS[.fff]]"
//  with an optional "Z" or +HH[:MM] offset) in zone (NULL = UTC; an offset
//  in the text wins). Format directives: %Y %y %m %d %H %M %S %b (month
//  abbreviation, any case) %s (Unix seconds) %%; anything else literal.
//  Returns 0 with *utc_ms, -1 when text does not fit.
int mx_diff_parse_time (const char *text, const char *format, const mx_tz_t *zone,
                        int64_t *utc_ms);

//  A plain SQL identifier, optionally qualified once (schema.table).
bool mx_diff_identifier_ok (const char *name, bool qualified);

#endif
