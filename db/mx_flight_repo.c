/*  mx_flight_repo - see mx_flight_repo.h.

    Column lists come from the field tables (mx_scalar_info, mx_set_info,
    mx_rare_code): the SQL text is generated from them once per process, so
    a field added to a .def file needs its migration and nothing here.

    Values travel as the canonical text of mx_flight.h and PostgreSQL
    converts them: T as epoch ms <-> timestamptz, I and M as decimal, rare
    sets and extra as JSON text. A whole set travels as one JSON parameter,
    an array of [key, value...] rows, so writing a set is one statement
    whatever its size, and reading every set of every flight is part of the
    one SELECT.

    save_many sends its statements in pipeline mode: each flight's
    flight_schd INSERT or UPDATE, then per set table one DELETE of the
    replaced flights' rows and one INSERT of every flight's new rows (a
    JSON parameter of [flid, key, value...] rows), whatever the number of
    flights. Results are a few bytes per statement, so on a blocking
    connection the server cannot stall on a full socket while the pipeline
    is still written.
*/
#include "mx_flight_repo.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <czmq.h>

#include "mx_outbox.h"
#include "mx_pg.h"

//  Columns of the load SELECT, in order.
enum {
    S_COL_FLID = 0,
    S_COL_SCALARS = 1,
    S_COL_RARE = S_COL_SCALARS + MX_F_COUNT,
    S_COL_EXTRA = S_COL_RARE + MX_RARE_COUNT,
    S_COL_OPERATION_DAY,
    S_COL_STATE_VERSION,
    S_COL_LAST_MSG_ID,
    S_COL_LIFECYCLE,
    S_COL_DELETED_AT,
    S_COL_SETS
};

//  Parameters ($n) of the flight_schd INSERT.
enum {
    S_INS_FLID = 1,
    S_INS_SCALARS = 2,
    S_INS_RARE = S_INS_SCALARS + MX_F_COUNT,
    S_INS_EXTRA = S_INS_RARE + MX_RARE_COUNT,
    S_INS_OPERATION_DAY,
    S_INS_STATE_VERSION,
    S_INS_LAST_MSG_ID,
    S_INS_LIFECYCLE,
    S_INS_DELETED_AT,
    S_INS_NOW,
    S_INS_COUNT = S_INS_NOW
};

//  Most statements one save sends: flight_schd, then DELETE + INSERT per set.
#define S_BATCH_MAX (1 + 2 * MX_SET_COUNT)
//  Most parameters of the UPDATE: flid, version guard, every column, now.
#define S_UPDATE_MAX_PARAMS (MX_F_COUNT + MX_RARE_COUNT + 12)

static const char *s_targets [] = { "KAFKA:msg", "KAFKA:schd" };
static const char *s_event_types [] = { "UPSERT", "TOMBSTONE" };

//  ---------------------------------------------------------------------
//  Errors

static void
s_error (char **error, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
s_error (char **error, const char *fmt, ...)
{
    if (!error)
        return;
    va_list args;
    va_start (args, fmt);
    char *text = NULL;
    if (vasprintf (&text, fmt, args) < 0)
        text = strdup ("out of memory formatting an error");
    va_end (args);
    *error = text;
}

//  ---------------------------------------------------------------------
//  SQL generated from the field tables, once per process

typedef struct {
    char *load;                             //  $1 flids, then kinds
    char *load_lock;                        //  the same, FOR UPDATE OF flight_schd
    char *load_page;                        //  the same columns, each set read once
    int load_params;
    int load_kind_param [MX_SET_COUNT];     //  $n of the set's kind, 0 = none
    char *insert;                           //  flight_schd, S_INS_* parameters
    char *set_delete [MX_SET_COUNT];        //  $1 flids [, $2 kind]
    char *set_insert [MX_SET_COUNT];        //  $1 rows [flid, key, value...] [, $2 kind]
} s_sql_t;

static s_sql_t s_sql;
static pthread_once_t s_sql_once = PTHREAD_ONCE_INIT;

//  A wire code as its column name. Codes are our own table's: anything but
//  letters, digits and '_' would be our bug, never input.
static void
s_put_column (FILE *out, const char *code)
{
    assert (code && *code);
    for (const char *c = code; *c; c++) {
        assert (isalnum ((unsigned char) *c) || *c == '_');
        fputc (tolower ((unsigned char) *c), out);
    }
}

//  A column as canonical text: T as epoch ms, I and M as decimal.
static void
s_put_read (FILE *out, const char *prefix, const char *code, mx_value_type_t type)
{
    if (type == MX_TYPE_T)
        fprintf (out, "((extract (epoch FROM %s", prefix);
    else
        fputs (prefix, out);
    s_put_column (out, code);
    if (type == MX_TYPE_T)
        fputs (") * 1000)::bigint)::text", out);
    else
    if (type != MX_TYPE_S)
        fputs ("::text", out);
}

//  The column value of a canonical-text expression (a parameter or e->>n).
static void
s_put_write (FILE *out, const char *expr, mx_value_type_t type)
{
    switch (type) {
        case MX_TYPE_T: fprintf (out, "to_timestamp ((%s)::bigint / 1000.0)", expr); break;
        case MX_TYPE_I: fprintf (out, "(%s)::bigint", expr); break;
        case MX_TYPE_M: fprintf (out, "(%s)::integer", expr); break;
        case MX_TYPE_S: fprintf (out, "(%s)::text", expr); break;
    }
}

static void
s_put_param (FILE *out, int param, mx_value_type_t type)
{
    char expr [16];
    snprintf (expr, sizeof expr, "$%d", param);
    s_put_write (out, expr, type);
}

static const char *
s_set_key (const mx_set_info_t *info)
{
    return *info->key ? info->key : "SEQ";
}

//  ROUT and ERUT share flight_route_point: a set whose table another set
//  also uses is told apart by kind = its element.
static bool
s_set_has_kind (mx_set_kind_t set)
{
    const char *table = mx_set_info (set)->table;
    for (int other = 0; other < MX_SET_COUNT; other++)
        if (other != (int) set && strcmp (mx_set_info ((mx_set_kind_t) other)->table, table) == 0)
            return true;
    return false;
}

static char *
s_stream_close (FILE *out, char **text)
{
    int rc = fclose (out);
    assert (rc == 0 && *text);
    return *text;
}

//  How the load reads the sets. S_LOAD_EACH and S_LOAD_LOCK: one subquery
//  per flight and set, an index probe each, right for the few flights a
//  processor batch loads. S_LOAD_PAGE: each set table read once for all
//  the flights asked, grouped by flight, for the pages of GET /all/flights
//  (see docs/performance.md). Both give the same columns in the same order.
typedef enum { S_LOAD_EACH, S_LOAD_LOCK, S_LOAD_PAGE } s_load_mode_t;

//  A set's rows of one flight as a JSON array of [key, value...], by key.
static void
s_put_set_agg (FILE *out, const mx_set_info_t *info)
{
    fputs ("json_agg (json_build_array (s.", out);
    s_put_column (out, s_set_key (info));
    for (size_t f = 0; f < info->field_count; f++) {
        fputs (", ", out);
        s_put_read (out, "s.", info->field_codes [f], info->field_types [f]);
    }
    fputs (") ORDER BY s.", out);
    s_put_column (out, s_set_key (info));
    fprintf (out, ") FROM %s AS s WHERE ", info->table);
}

static char *
s_build_load (s_load_mode_t mode)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    assert (out);
    if (mode == S_LOAD_PAGE)
        fputs ("WITH w AS MATERIALIZED (SELECT DISTINCT unnest ($1::bigint[]) AS wanted) ", out);
    fputs ("SELECT flight_schd.flid::text", out);
    for (int k = 0; k < MX_F_COUNT; k++) {
        const mx_scalar_info_t *info = mx_scalar_info ((mx_scalar_t) k);
        fputs (", ", out);
        s_put_read (out, "flight_schd.", info->code, info->type);
    }
    for (int r = 0; r < MX_RARE_COUNT; r++) {
        fputs (", flight_schd.", out);
        s_put_column (out, mx_rare_code ((mx_rare_t) r));
        fputs ("::text", out);
    }
    fputs (", flight_schd.extra::text, flight_schd.operation_day - DATE '1970-01-01',"
           " flight_schd.state_version, coalesce (flight_schd.last_msg_id, 0), flight_schd.lifecycle,"
           " coalesce (((extract (epoch FROM flight_schd.deleted_at) * 1000)::bigint), -1)", out);
    for (int k = 0; k < MX_SET_COUNT; k++) {
        if (mode == S_LOAD_PAGE) {
            fprintf (out, ", set%d.rows", k);
            continue;
        }
        fputs (", (SELECT ", out);
        s_put_set_agg (out, mx_set_info ((mx_set_kind_t) k));
        fputs ("s.flid = flight_schd.flid", out);
        if (s_sql.load_kind_param [k])
            fprintf (out, " AND s.kind = $%d", s_sql.load_kind_param [k]);
        fputs (")", out);
    }
    if (mode == S_LOAD_PAGE) {
        //  Each set table read once for the flights asked and aggregated
        //  by flight, instead of a subquery run per flight and set. A join
        //  with the list, not "= ANY ($1)": a generic plan may scan the
        //  table and compare every row with every element of the array.
        fputs (" FROM w JOIN flight_schd ON flight_schd.flid = w.wanted", out);
        for (int k = 0; k < MX_SET_COUNT; k++) {
            fputs (" LEFT JOIN (SELECT s.flid, ", out);
            s_put_set_agg (out, mx_set_info ((mx_set_kind_t) k));
            fputs ("s.flid IN (SELECT wanted FROM w)", out);
            if (s_sql.load_kind_param [k])
                fprintf (out, " AND s.kind = $%d", s_sql.load_kind_param [k]);
            fprintf (out, " GROUP BY s.flid) AS set%d (flid, rows) ON set%d.flid = flight_schd.flid", k, k);
        }
        fputs (" ORDER BY flight_schd.flid", out);
        return s_stream_close (out, &text);
    }
    //  One index probe per flight (a plan on ANY may scan the whole table),
    //  locked in flid order, so two lockers of overlapping sets cannot
    //  deadlock; the rows come out in that order.
    fprintf (out, " FROM (SELECT DISTINCT unnest ($1::bigint[]) AS wanted ORDER BY 1) AS w"
                  " CROSS JOIN LATERAL (SELECT * FROM flight_schd AS f WHERE f.flid = w.wanted LIMIT 1%s)"
                  " AS flight_schd ORDER BY w.wanted", mode == S_LOAD_LOCK ? " FOR UPDATE" : "");
    return s_stream_close (out, &text);
}

static char *
s_build_insert (void)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    assert (out);
    fputs ("INSERT INTO flight_schd (flid", out);
    for (int k = 0; k < MX_F_COUNT; k++) {
        fputs (", ", out);
        s_put_column (out, mx_scalar_info ((mx_scalar_t) k)->code);
    }
    for (int r = 0; r < MX_RARE_COUNT; r++) {
        fputs (", ", out);
        s_put_column (out, mx_rare_code ((mx_rare_t) r));
    }
    fputs (", extra, operation_day, state_version, last_msg_id, lifecycle, deleted_at,"
           " created_at, updated_at) VALUES ($1::bigint", out);
    for (int k = 0; k < MX_F_COUNT; k++) {
        fputs (", ", out);
        s_put_param (out, S_INS_SCALARS + k, mx_scalar_info ((mx_scalar_t) k)->type);
    }
    for (int r = 0; r < MX_RARE_COUNT; r++)
        fprintf (out, ", $%d::jsonb", S_INS_RARE + r);
    fprintf (out, ", $%d::jsonb, DATE '1970-01-01' + $%d::integer, $%d::bigint, $%d::bigint, $%d::text, ",
             S_INS_EXTRA, S_INS_OPERATION_DAY, S_INS_STATE_VERSION, S_INS_LAST_MSG_ID,
             S_INS_LIFECYCLE);
    s_put_param (out, S_INS_DELETED_AT, MX_TYPE_T);
    fputs (", ", out);
    s_put_param (out, S_INS_NOW, MX_TYPE_T);
    fputs (", ", out);
    s_put_param (out, S_INS_NOW, MX_TYPE_T);
    fputs (")", out);
    return s_stream_close (out, &text);
}

//  The statements are composed once, at first use, from the compile-time
//  tables of mx_flight_sets.def: only identifiers of our own schema go into
//  the text; every value travels as a parameter.
static char *
s_build_set_delete (mx_set_kind_t set)
{
    char *text = NULL;
    if (asprintf (&text, "DELETE FROM %s WHERE flid = ANY ($1::bigint[])%s", mx_set_info (set)->table,
                  s_set_has_kind (set) ? " AND kind = $2::text" : "") < 0)
        assert (!"out of memory");
    return text;
}

static char *
s_build_set_insert (mx_set_kind_t set)
{
    const mx_set_info_t *info = mx_set_info (set);
    bool kind = s_set_has_kind (set);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    assert (out);
    fprintf (out, "INSERT INTO %s (flid, %s", info->table, kind ? "kind, " : "");
    s_put_column (out, s_set_key (info));
    for (size_t f = 0; f < info->field_count; f++) {
        fputs (", ", out);
        s_put_column (out, info->field_codes [f]);
    }
    fprintf (out, ") SELECT (e->>0)::bigint, %s(e->>1)::integer", kind ? "$2::text, " : "");
    for (size_t f = 0; f < info->field_count; f++) {
        char expr [32];
        snprintf (expr, sizeof expr, "e->>%zu", f + 2);
        fputs (", ", out);
        s_put_write (out, expr, info->field_types [f]);
    }
    fputs (" FROM json_array_elements ($1::json) AS e", out);
    return s_stream_close (out, &text);
}

static void
s_sql_build (void)
{
    s_sql.load_params = 1;
    for (int k = 0; k < MX_SET_COUNT; k++) {
        assert (mx_set_info ((mx_set_kind_t) k)->field_count <= MX_SET_MAX_FIELDS);
        s_sql.load_kind_param [k] = s_set_has_kind ((mx_set_kind_t) k) ? ++s_sql.load_params : 0;
        s_sql.set_delete [k] = s_build_set_delete ((mx_set_kind_t) k);
        s_sql.set_insert [k] = s_build_set_insert ((mx_set_kind_t) k);
    }
    s_sql.load = s_build_load (S_LOAD_EACH);
    s_sql.load_lock = s_build_load (S_LOAD_LOCK);
    s_sql.load_page = s_build_load (S_LOAD_PAGE);
    s_sql.insert = s_build_insert ();
}

//  ---------------------------------------------------------------------
//  Load

//  "{1,2,3}" for a bigint[] parameter.
static char *
s_bigint_array (const int64_t *values, size_t count)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    assert (out);
    fputc ('{', out);
    for (size_t i = 0; i < count; i++)
        fprintf (out, "%s%" PRId64, i ? "," : "", values [i]);
    fputc ('}', out);
    return s_stream_close (out, &text);
}

static json_t *
s_json_parse (const char *text, const char *what, int64_t flid, char **error)
{
    json_error_t json_error;
    json_t *value = json_loads (text, JSON_DECODE_ANY, &json_error);
    if (!value)
        s_error (error, "flight %" PRId64 ": %s is not valid JSON: %s", flid, what, json_error.text);
    return value;
}

//  A set column ([[key, value...], ...] or NULL) into *set.
static int
s_set_parse (const char *text, mx_set_kind_t kind, int64_t flid, mx_set_t *set, char **error)
{
    const mx_set_info_t *info = mx_set_info (kind);
    set->count = 0;
    set->records = NULL;
    if (!text)
        return 0;
    json_t *rows = s_json_parse (text, info->table, flid, error);
    if (!rows)
        return -1;
    if (!json_is_array (rows) || json_array_size (rows) == 0)
        goto invalid;
    set->records = (mx_set_record_t *) calloc (json_array_size (rows), sizeof (mx_set_record_t));
    assert (set->records);
    size_t index;
    json_t *row;
    json_array_foreach (rows, index, row) {
        if (!json_is_array (row) || json_array_size (row) != info->field_count + 1
        ||  !json_is_integer (json_array_get (row, 0)))
            goto invalid;
        mx_set_record_t *record = &set->records [set->count++];
        record->key = (int) json_integer_value (json_array_get (row, 0));
        for (size_t f = 0; f < info->field_count; f++) {
            json_t *value = json_array_get (row, f + 1);
            if (json_is_string (value)) {
                record->values [f] = strdup (json_string_value (value));
                assert (record->values [f]);
            }
            else
            if (!json_is_null (value))
                goto invalid;
        }
    }
    json_decref (rows);
    return 0;

invalid:
    s_error (error, "flight %" PRId64 ": unexpected rows read from %s", flid, info->table);
    json_decref (rows);
    mx_set_reset (set);
    return -1;
}

static mx_flight_t *
s_flight_read (const PGresult *res, int row, int64_t flid, char **error)
{
    mx_flight_t *flight = mx_flight_new (flid);
    assert (flight);
    for (int k = 0; k < MX_F_COUNT; k++)
        mx_flight_set_scalar (flight, (mx_scalar_t) k, mx_pg_get_text (res, row, S_COL_SCALARS + k));
    for (int r = 0; r < MX_RARE_COUNT; r++) {
        const char *text = mx_pg_get_text (res, row, S_COL_RARE + r);
        json_decref (flight->rare [r]);
        flight->rare [r] = NULL;
        if (text && !(flight->rare [r] = s_json_parse (text, mx_rare_code ((mx_rare_t) r), flid, error)))
            goto failed;
    }
    json_t *extra = s_json_parse (mx_pg_get_text (res, row, S_COL_EXTRA), "extra", flid, error);
    if (!extra)
        goto failed;
    json_decref (flight->extra);
    flight->extra = extra;
    if (!json_is_object (extra)) {
        s_error (error, "flight %" PRId64 ": extra is not a JSON object", flid);
        goto failed;
    }
    flight->operation_day = (int32_t) mx_pg_get_int64 (res, row, S_COL_OPERATION_DAY);
    flight->state_version = mx_pg_get_int64 (res, row, S_COL_STATE_VERSION);
    flight->last_msg_id = mx_pg_get_int64 (res, row, S_COL_LAST_MSG_ID);
    flight->deleted = strcmp (PQgetvalue (res, row, S_COL_LIFECYCLE), "DELETED") == 0;
    flight->deleted_at = mx_pg_get_int64 (res, row, S_COL_DELETED_AT);
    for (int k = 0; k < MX_SET_COUNT; k++) {
        mx_set_reset (&flight->sets [k]);
        if (s_set_parse (mx_pg_get_text (res, row, S_COL_SETS + k), (mx_set_kind_t) k, flid,
                         &flight->sets [k], error))
            goto failed;
    }
    return flight;

failed:
    mx_flight_destroy (&flight);
    return NULL;
}

static int
    s_exec_named (PGconn *conn, const char *sql, int nparams, const char *const *values,
                  PGresult **res, char **error);

int
mx_flight_repo_load (PGconn *conn, const int64_t *flids, size_t count, bool lock,
                     mx_flight_t **out, char **error)
{
    assert (conn);
    assert (count == 0 || (flids && out));
    for (size_t i = 0; i < count; i++)
        out [i] = NULL;
    if (count == 0)
        return 0;
    pthread_once (&s_sql_once, s_sql_build);

    char *array = s_bigint_array (flids, count);
    const char *values [1 + MX_SET_COUNT] = { array };
    for (int k = 0; k < MX_SET_COUNT; k++)
        if (s_sql.load_kind_param [k])
            values [s_sql.load_kind_param [k] - 1] = mx_set_info ((mx_set_kind_t) k)->element;
    PGresult *res = NULL;
    int rc = s_exec_named (conn, lock ? s_sql.load_lock : s_sql.load, s_sql.load_params, values,
                           &res, error);
    free (array);
    if (rc)
        return -1;

    //  Rows come in flid order: find each requested flid by bisection.
    int rows = PQntuples (res);
    int64_t *row_flids = (int64_t *) malloc (((size_t) rows + 1) * sizeof (int64_t));
    assert (row_flids);
    for (int row = 0; row < rows; row++)
        row_flids [row] = mx_pg_get_int64 (res, row, S_COL_FLID);
    for (size_t i = 0; i < count && rc == 0; i++) {
        int low = 0, high = rows;
        while (low < high) {
            int middle = low + (high - low) / 2;
            if (row_flids [middle] < flids [i])
                low = middle + 1;
            else
                high = middle;
        }
        if (low < rows && row_flids [low] == flids [i]
        &&  !(out [i] = s_flight_read (res, low, flids [i], error)))
            rc = -1;
    }
    free (row_flids);
    PQclear (res);
    if (rc)
        for (size_t i = 0; i < count; i++)
            mx_flight_destroy (&out [i]);
    return rc;
}

int
mx_flight_repo_lock (PGconn *conn, const int64_t *flids, size_t count, int64_t *versions,
                     int64_t *last_msg_ids, char **error)
{
    assert (conn);
    assert (count == 0 || (flids && versions && last_msg_ids));
    for (size_t i = 0; i < count; i++) {
        versions [i] = -1;
        last_msg_ids [i] = 0;
    }
    if (count == 0)
        return 0;
    char *array = s_bigint_array (flids, count);
    const char *values [] = { array };
    PGresult *res = NULL;
    //  As the load: one index probe per flight, locked in flid order.
    int rc = mx_pg_exec (conn,
        "SELECT f.flid, f.state_version, coalesce (f.last_msg_id, 0)"
        " FROM (SELECT DISTINCT unnest ($1::bigint[]) AS wanted ORDER BY 1) AS w"
        " CROSS JOIN LATERAL (SELECT flid, state_version, last_msg_id FROM flight_schd"
        "                     WHERE flid = w.wanted LIMIT 1 FOR UPDATE) AS f"
        " ORDER BY w.wanted", 1, values, &res, error);
    free (array);
    if (rc)
        return -1;
    int rows = PQntuples (res);
    for (size_t i = 0; i < count; i++) {
        int low = 0, high = rows;
        while (low < high) {
            int middle = low + (high - low) / 2;
            if (mx_pg_get_int64 (res, middle, 0) < flids [i])
                low = middle + 1;
            else
                high = middle;
        }
        if (low < rows && mx_pg_get_int64 (res, low, 0) == flids [i]) {
            versions [i] = mx_pg_get_int64 (res, low, 1);
            last_msg_ids [i] = mx_pg_get_int64 (res, low, 2);
        }
    }
    PQclear (res);
    return 0;
}

//  ---------------------------------------------------------------------
//  Named statements, per connection
//
//  Parsing an UPDATE of flight_schd costs more than running it (its target
//  list spans some seventy columns: about 0.1 ms a statement, most of a
//  batch's flight writes). The texts repeat (one per combination of changed
//  columns, the set and insert statements always), so each is prepared
//  once per connection and run by name after that. Bounded: past the
//  limit, new texts go unnamed as before.

#define S_NAMED_MAX 1024

typedef struct {
    PGconn *conn;                           //  the connection the names live on
    int backend_pid;                        //  and its server process
    zhashx_t *names;                        //  SQL text -> "mxf<n>"
    size_t next;
} s_named_t;

//  Per thread (a connection is used by one thread), freed when it ends.
static pthread_key_t s_named_key;
static pthread_once_t s_named_once = PTHREAD_ONCE_INIT;

static void
s_named_free (void *data)
{
    s_named_t *named = (s_named_t *) data;
    zhashx_destroy (&named->names);
    free (named);
}

static void
s_named_key_create (void)
{
    int rc = pthread_key_create (&s_named_key, s_named_free);
    assert (rc == 0);
}

//  The names of this connection, forgotten when the connection is another.
static s_named_t *
s_named_for (PGconn *conn)
{
    pthread_once (&s_named_once, s_named_key_create);
    s_named_t *named = (s_named_t *) pthread_getspecific (s_named_key);
    if (!named) {
        named = (s_named_t *) calloc (1, sizeof (s_named_t));
        assert (named);
        int rc = pthread_setspecific (s_named_key, named);
        assert (rc == 0);
    }
    int pid = PQbackendPID (conn);
    if (!named->names || named->conn != conn || named->backend_pid != pid) {
        zhashx_destroy (&named->names);
        named->names = zhashx_new ();
        assert (named->names);
        zhashx_set_destructor (named->names, (zhashx_destructor_fn *) zstr_free);
        named->conn = conn;
        named->backend_pid = pid;
    }
    return named;
}

//  ---------------------------------------------------------------------
//  Save: a batch of statements sent as one pipeline

typedef struct {
    const char *sql;
    int nparams;
    const char **values;
    bool one_row;                           //  must change exactly one row
    char *prepared;                         //  name this pipeline prepares first, or NULL
} s_stmt_t;

typedef struct {
    size_t count;
    size_t capacity;
    s_stmt_t *stmts;
    //  Set rows of every flight of the save, one statement per table each.
    json_t *set_rows [MX_SET_COUNT];        //  [[flid, key, value...], ...] to insert
    json_t *set_flids [MX_SET_COUNT];       //  [flid, ...] whose rows go first
    size_t kept_count;
    size_t kept_size;
    char **kept;                            //  strings the batch frees
} s_batch_t;

static char *
s_batch_keep (s_batch_t *self, char *text)
{
    assert (text);
    if (self->kept_count == self->kept_size) {
        self->kept_size = self->kept_size ? 2 * self->kept_size : 32;
        self->kept = (char **) realloc (self->kept, self->kept_size * sizeof (char *));
        assert (self->kept);
    }
    self->kept [self->kept_count++] = text;
    return text;
}

static const char *
s_batch_int (s_batch_t *self, int64_t value)
{
    char buf [MX_PG_INT64_BUFSIZE];
    char *text = strdup (mx_pg_int64_text (value, buf));
    return s_batch_keep (self, text);
}

//  A parameter array of n entries, all NULL (SQL NULL) to start with.
static const char **
s_batch_add (s_batch_t *self, const char *sql, int nparams, bool one_row)
{
    if (self->count == self->capacity) {
        self->capacity = self->capacity ? 2 * self->capacity : S_BATCH_MAX;
        self->stmts = (s_stmt_t *) realloc (self->stmts, self->capacity * sizeof (s_stmt_t));
        assert (self->stmts);
    }
    const char **values = (const char **) calloc ((size_t) nparams, sizeof (char *));
    assert (values);
    s_stmt_t *stmt = &self->stmts [self->count++];
    stmt->sql = sql;
    stmt->nparams = nparams;
    stmt->values = values;
    stmt->one_row = one_row;
    stmt->prepared = NULL;
    return values;
}

//  Drops the statements sent; the queued set rows stay.
static void
s_batch_reset_statements (s_batch_t *self)
{
    for (size_t i = 0; i < self->count; i++)
        free (self->stmts [i].values);
    for (size_t i = 0; i < self->kept_count; i++)
        free (self->kept [i]);
    free (self->kept);
    free (self->stmts);
    self->count = self->capacity = self->kept_count = self->kept_size = 0;
    self->stmts = NULL;
    self->kept = NULL;
}

static void
s_batch_reset (s_batch_t *self)
{
    s_batch_reset_statements (self);
    for (int k = 0; k < MX_SET_COUNT; k++) {
        json_decref (self->set_rows [k]);
        json_decref (self->set_flids [k]);
    }
    memset (self, 0, sizeof *self);
}

//  One query's result in the pipeline, then the NULL that ends it. Returns
//  its status, or -1 when the connection lost it (read no further). The
//  first failure goes into *rc and *error; *changed gets the rows changed.
static int
s_take_result (PGconn *conn, const char *sql, int *rc, char **error, long *changed)
{
    PGresult *res = PQgetResult (conn);
    if (!res) {
        if (*rc == 0)
            s_error (error, "lost the result of a flight statement: %s", PQerrorMessage (conn));
        *rc = -1;
        return -1;
    }
    int status = (int) PQresultStatus (res);
    if (*rc == 0 && mx_pg_check (conn, res, sql, error))
        *rc = -1;
    *changed = strtol (PQcmdTuples (res), NULL, 10);
    PQclear (res);
    while ((res = PQgetResult (conn)) != NULL)
        PQclear (res);
    return status;
}

//  Leaves pipeline mode (mx_pg_pipeline_leave); a failure goes into *rc
//  and *error unless one did.
static void
s_pipeline_end (PGconn *conn, int *rc, char **error)
{
    char *left = NULL;
    if (mx_pg_pipeline_leave (conn, &left) && *rc == 0) {
        *error = left;
        *rc = -1;
    }
    else
        free (left);
}

//  One statement that returns rows, run by its name on this connection;
//  the first time it is prepared in the same pipeline, so it still costs
//  one round trip (past S_NAMED_MAX names it runs unnamed). The load's
//  text spans every column and set: parsing and planning it took about
//  1.5 ms, five times its execution, on each read of one flight.
static int
s_exec_named (PGconn *conn, const char *sql, int nparams, const char *const *values,
              PGresult **res, char **error)
{
    *res = NULL;
    s_named_t *named = s_named_for (conn);
    const char *name = (const char *) zhashx_lookup (named->names, sql);
    if (!name && zhashx_size (named->names) >= S_NAMED_MAX)
        return mx_pg_exec (conn, sql, nparams, values, res, error);
    if (name) {
        *res = PQexecPrepared (conn, name, nparams, values, NULL, NULL, 0);
        if (mx_pg_check (conn, *res, sql, error) == 0)
            return 0;
        PQclear (*res);
        *res = NULL;
        return -1;
    }
    if (PQenterPipelineMode (conn) != 1) {
        s_error (error, "cannot enter pipeline mode: %s", PQerrorMessage (conn));
        return -1;
    }
    char *fresh = zsys_sprintf ("mxf%zu", named->next++);
    int rc = 0;
    if (!PQsendPrepare (conn, fresh, sql, nparams, NULL)
    ||  !PQsendQueryPrepared (conn, fresh, nparams, values, NULL, NULL, 0)
    ||  PQpipelineSync (conn) != 1) {
        s_error (error, "cannot send a flight statement: %s", PQerrorMessage (conn));
        rc = -1;
    }
    long changed = 0;
    int prepared = rc == 0 ? s_take_result (conn, sql, &rc, error, &changed) : -1;
    if (prepared >= 0) {
        PGresult *result = PQgetResult (conn);
        if (!result && rc == 0) {
            s_error (error, "lost the result of a flight statement: %s", PQerrorMessage (conn));
            rc = -1;
        }
        if (result && rc == 0 && mx_pg_check (conn, result, sql, error))
            rc = -1;
        if (rc == 0)
            *res = result;
        else
            PQclear (result);
        PGresult *rest;
        while (result && (rest = PQgetResult (conn)) != NULL)
            PQclear (rest);
    }
    s_pipeline_end (conn, &rc, error);
    if (rc) {
        PQclear (*res);
        *res = NULL;
    }
    //  Known from now on only if the prepare happened.
    if (prepared == PGRES_COMMAND_OK)
        zhashx_insert (named->names, sql, fresh);
    else
        free (fresh);
    return rc;
}

//  Flights per statement of mx_flight_repo_load_each. The page statement
//  builds a chunk's sets before its first row, so a page goes as a
//  pipeline of chunks: the server reads the next chunk while the caller
//  works on the rows of this one (see docs/performance.md).
#define S_EACH_CHUNK 50

static int
s_int64_compare (const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

//  The rows of one chunk's result to each; -1 with *error on a bad row.
static int
s_each_rows (PGresult *res, mx_flight_repo_each_fn *each, void *arg, char **error)
{
    for (int row = 0; row < PQntuples (res); row++) {
        mx_flight_t *flight = s_flight_read (res, row, mx_pg_get_int64 (res, row, S_COL_FLID), error);
        if (!flight)
            return -1;
        each (flight, arg);
    }
    return 0;
}

int
mx_flight_repo_load_each (PGconn *conn, const int64_t *flids, size_t count,
                          mx_flight_repo_each_fn *each, void *arg, char **error)
{
    assert (conn && each);
    if (count == 0)
        return 0;
    pthread_once (&s_sql_once, s_sql_build);
    s_named_t *named = s_named_for (conn);
    const char *name = (const char *) zhashx_lookup (named->names, s_sql.load_page);
    if (!name && zhashx_size (named->names) < S_NAMED_MAX) {
        char *fresh = zsys_sprintf ("mxf%zu", named->next++);
        PGresult *prepared = PQprepare (conn, fresh, s_sql.load_page, s_sql.load_params, NULL);
        int rc = mx_pg_check (conn, prepared, s_sql.load_page, error);
        PQclear (prepared);
        if (rc) {
            free (fresh);
            return -1;
        }
        zhashx_insert (named->names, s_sql.load_page, fresh);
        name = fresh;
    }
    //  Chunks in flid order make the rows come out in flid order.
    int64_t *sorted = (int64_t *) malloc (count * sizeof *sorted);
    if (!sorted) {
        s_error (error, "out of memory");
        return -1;
    }
    memcpy (sorted, flids, count * sizeof *sorted);
    qsort (sorted, count, sizeof *sorted, s_int64_compare);
    if (PQenterPipelineMode (conn) != 1) {
        s_error (error, "cannot enter pipeline mode: %s", PQerrorMessage (conn));
        free (sorted);
        return -1;
    }
    const char *values [1 + MX_SET_COUNT] = { NULL };
    for (int k = 0; k < MX_SET_COUNT; k++)
        if (s_sql.load_kind_param [k])
            values [s_sql.load_kind_param [k] - 1] = mx_set_info ((mx_set_kind_t) k)->element;
    int rc = 0;
    size_t chunks = 0;
    for (size_t first = 0; first < count && rc == 0; first += S_EACH_CHUNK) {
        char *array = s_bigint_array (sorted + first, count - first < S_EACH_CHUNK ? count - first : S_EACH_CHUNK);
        values [0] = array;
        int sent = name ? PQsendQueryPrepared (conn, name, s_sql.load_params, values, NULL, NULL, 0)
                        : PQsendQueryParams (conn, s_sql.load_page, s_sql.load_params, NULL, values, NULL, NULL, 0);
        free (array);
        if (sent)
            chunks++;
        else {
            s_error (error, "cannot send the flight load: %s", PQerrorMessage (conn));
            rc = -1;
        }
    }
    free (sorted);
    if (PQpipelineSync (conn) != 1 && rc == 0) {
        s_error (error, "cannot send the flight load: %s", PQerrorMessage (conn));
        rc = -1;
    }
    //  Each chunk's result, then the NULL that ends it; after a failure the
    //  rest are read and dropped (PIPELINE_ABORTED) up to the Sync.
    for (size_t chunk = 0; chunk < chunks; chunk++) {
        PGresult *res = PQgetResult (conn);
        if (!res) {
            if (rc == 0)
                s_error (error, "lost the result of the flight load: %s", PQerrorMessage (conn));
            rc = -1;
            break;
        }
        if (rc == 0 && mx_pg_check (conn, res, s_sql.load_page, error) == 0)
            rc = s_each_rows (res, each, arg, error);
        else
            rc = -1;
        PQclear (res);
        while ((res = PQgetResult (conn)) != NULL)
            PQclear (res);
    }
    s_pipeline_end (conn, &rc, error);
    return rc;
}

//  Send every statement, one Sync, then read every result: one round trip.
//  After the first failure the server skips the rest (PIPELINE_ABORTED);
//  the caller's transaction is then failed and is rolled back by the caller.
static int
s_batch_run (PGconn *conn, s_batch_t *self, char **error)
{
    if (PQenterPipelineMode (conn) != 1) {
        s_error (error, "cannot enter pipeline mode: %s", PQerrorMessage (conn));
        return -1;
    }
    int rc = 0;
    size_t sent = 0;
    s_named_t *named = s_named_for (conn);
    zhashx_t *names = named->names;
    for (; sent < self->count; sent++) {
        s_stmt_t *stmt = &self->stmts [sent];
        const char *name = (const char *) zhashx_lookup (names, stmt->sql);
        if (!name && zhashx_size (names) < S_NAMED_MAX) {
            //  Known from here on; forgotten again if the prepare fails.
            stmt->prepared = zsys_sprintf ("mxf%zu", named->next++);
            zhashx_insert (names, stmt->sql, strdup (stmt->prepared));
            name = stmt->prepared;
            if (!PQsendPrepare (conn, name, stmt->sql, stmt->nparams, NULL)) {
                s_error (error, "cannot send a flight statement: %s", PQerrorMessage (conn));
                rc = -1;
                break;
            }
        }
        int queued = name ? PQsendQueryPrepared (conn, name, stmt->nparams, stmt->values, NULL, NULL, 0)
                          : PQsendQueryParams (conn, stmt->sql, stmt->nparams, NULL, stmt->values, NULL, NULL, 0);
        if (!queued) {
            s_error (error, "cannot send a flight statement: %s", PQerrorMessage (conn));
            rc = -1;
            break;
        }
    }
    if (PQpipelineSync (conn) != 1 && rc == 0) {
        s_error (error, "cannot send a flight pipeline: %s", PQerrorMessage (conn));
        rc = -1;
    }
    for (size_t i = 0; i < sent; i++) {
        s_stmt_t *stmt = &self->stmts [i];
        long changed = 0;
        if (stmt->prepared) {
            int status = s_take_result (conn, stmt->sql, &rc, error, &changed);
            if (status < 0)
                break;
            if (status == PGRES_COMMAND_OK)
                zstr_free (&stmt->prepared);        //  it exists: the name stays known
        }
        if (s_take_result (conn, stmt->sql, &rc, error, &changed) < 0)
            break;
        if (rc == 0 && stmt->one_row && changed != 1) {
            s_error (error, "flight row missing or changed since it was loaded"
                            " (UPDATE matched %ld rows)", changed);
            rc = -1;
        }
    }
    s_pipeline_end (conn, &rc, error);
    //  Names whose prepare did not happen are forgotten.
    for (size_t i = 0; i < self->count; i++)
        if (self->stmts [i].prepared) {
            zhashx_delete (names, self->stmts [i].sql);
            zstr_free (&self->stmts [i].prepared);
        }
    return rc;
}

static bool
s_text_equal (const char *a, const char *b)
{
    return a == b || (a && b && strcmp (a, b) == 0);
}

static bool
s_json_equal (const json_t *a, const json_t *b)
{
    return a == b || (a && b && json_equal (a, b));
}

//  JSON text of a value for a jsonb parameter; NULL stays NULL.
static const char *
s_batch_json (s_batch_t *self, const json_t *value)
{
    if (!value)
        return NULL;
    char *text = json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY);
    return s_batch_keep (self, text);
}

//  Queues the set's rows (and, when it replaces, the removal of the old
//  ones) for the statements s_batch_sets adds.
static int
s_batch_set (s_batch_t *self, const mx_flight_t *flight, mx_set_kind_t kind, bool replace,
             char **error)
{
    const mx_set_info_t *info = mx_set_info (kind);
    const mx_set_t *set = &flight->sets [kind];
    if (replace) {
        if (!self->set_flids [kind])
            self->set_flids [kind] = json_array ();
        json_array_append_new (self->set_flids [kind], json_integer ((json_int_t) flight->flid));
    }
    if (set->count == 0)
        return 0;
    if (!self->set_rows [kind])
        self->set_rows [kind] = json_array ();
    for (size_t i = 0; i < set->count; i++) {
        const mx_set_record_t *record = &set->records [i];
        json_t *row = json_array ();
        json_array_append_new (row, json_integer ((json_int_t) flight->flid));
        json_array_append_new (row, json_integer (record->key));
        for (size_t f = 0; f < info->field_count; f++) {
            json_t *value = record->values [f] ? json_string (record->values [f]) : json_null ();
            if (!value) {
                s_error (error, "flight %" PRId64 ": %s %s of record %d is not valid UTF-8",
                         flight->flid, info->element, info->field_codes [f], record->key);
                json_decref (row);
                return -1;
            }
            json_array_append_new (row, value);
        }
        json_array_append_new (self->set_rows [kind], row);
    }
    return 0;
}

//  Per set table, one DELETE of the replaced flights' rows, then one
//  INSERT of every flight's rows: after the flight_schd statements, which
//  the rows reference.
static void
s_batch_sets (s_batch_t *self)
{
    for (int k = 0; k < MX_SET_COUNT; k++) {
        const mx_set_info_t *info = mx_set_info ((mx_set_kind_t) k);
        bool has_kind = s_set_has_kind ((mx_set_kind_t) k);
        if (self->set_flids [k]) {
            size_t count = json_array_size (self->set_flids [k]);
            int64_t *flids = (int64_t *) calloc (count + 1, sizeof (int64_t));
            assert (flids);
            for (size_t i = 0; i < count; i++)
                flids [i] = json_integer_value (json_array_get (self->set_flids [k], i));
            const char **values = s_batch_add (self, s_sql.set_delete [k], has_kind ? 2 : 1, false);
            values [0] = s_batch_keep (self, s_bigint_array (flids, count));
            if (has_kind)
                values [1] = info->element;
            free (flids);
        }
        if (self->set_rows [k]) {
            const char **values = s_batch_add (self, s_sql.set_insert [k], has_kind ? 2 : 1, false);
            values [0] = s_batch_json (self, self->set_rows [k]);
            if (has_kind)
                values [1] = info->element;
        }
        json_decref (self->set_rows [k]);
        json_decref (self->set_flids [k]);
        self->set_rows [k] = NULL;
        self->set_flids [k] = NULL;
    }
}

static void
s_batch_insert (s_batch_t *self, const mx_flight_t *after, int64_t now_ms)
{
    const char **values = s_batch_add (self, s_sql.insert, S_INS_COUNT, false);
    values [S_INS_FLID - 1] = s_batch_int (self, after->flid);
    for (int k = 0; k < MX_F_COUNT; k++)
        values [S_INS_SCALARS + k - 1] = after->scalars [k];
    for (int r = 0; r < MX_RARE_COUNT; r++)
        values [S_INS_RARE + r - 1] = s_batch_json (self, after->rare [r]);
    values [S_INS_EXTRA - 1] = s_batch_json (self, after->extra);
    values [S_INS_OPERATION_DAY - 1] = s_batch_int (self, after->operation_day);
    values [S_INS_STATE_VERSION - 1] = s_batch_int (self, after->state_version);
    values [S_INS_LAST_MSG_ID - 1] = after->last_msg_id > 0
                                   ? s_batch_int (self, after->last_msg_id) : NULL;
    values [S_INS_LIFECYCLE - 1] = after->deleted ? "DELETED" : "ACTIVE";
    values [S_INS_DELETED_AT - 1] = after->deleted ? s_batch_int (self, after->deleted_at) : NULL;
    values [S_INS_NOW - 1] = s_batch_int (self, now_ms);
}

//  The UPDATE of what differs, guarded by the version that was loaded.
static void
s_batch_update (s_batch_t *self, const mx_flight_t *before, const mx_flight_t *after,
                int64_t now_ms)
{
    const char *values [S_UPDATE_MAX_PARAMS];
    int n = 0;
    char *sql = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&sql, &size);
    assert (out);
    fputs ("UPDATE flight_schd SET ", out);
    values [n++] = s_batch_int (self, after->flid);
    values [n++] = s_batch_int (self, before->state_version);
    for (int k = 0; k < MX_F_COUNT; k++) {
        if (s_text_equal (before->scalars [k], after->scalars [k]))
            continue;
        const mx_scalar_info_t *info = mx_scalar_info ((mx_scalar_t) k);
        values [n++] = after->scalars [k];
        s_put_column (out, info->code);
        fputs (" = ", out);
        s_put_param (out, n, info->type);
        fputs (", ", out);
    }
    for (int r = 0; r < MX_RARE_COUNT; r++) {
        if (s_json_equal (before->rare [r], after->rare [r]))
            continue;
        values [n++] = s_batch_json (self, after->rare [r]);
        s_put_column (out, mx_rare_code ((mx_rare_t) r));
        fprintf (out, " = $%d::jsonb, ", n);
    }
    if (!s_json_equal (before->extra, after->extra)) {
        values [n++] = s_batch_json (self, after->extra);
        fprintf (out, "extra = $%d::jsonb, ", n);
    }
    //  Written only when it differs, so the immutability trigger (BEFORE
    //  UPDATE OF operation_day) fires exactly then.
    if (before->operation_day != after->operation_day) {
        values [n++] = s_batch_int (self, after->operation_day);
        fprintf (out, "operation_day = DATE '1970-01-01' + $%d::integer, ", n);
    }
    if (before->deleted != after->deleted || (after->deleted && before->deleted_at != after->deleted_at)) {
        values [n++] = after->deleted ? "DELETED" : "ACTIVE";
        values [n++] = after->deleted ? s_batch_int (self, after->deleted_at) : NULL;
        fprintf (out, "lifecycle = $%d::text, deleted_at = ", n - 1);
        s_put_param (out, n, MX_TYPE_T);
        fputs (", ", out);
    }
    values [n++] = s_batch_int (self, after->state_version);
    values [n++] = after->last_msg_id > 0 ? s_batch_int (self, after->last_msg_id) : NULL;
    values [n++] = s_batch_int (self, now_ms);
    fprintf (out, "state_version = $%d::bigint, last_msg_id = $%d::bigint, updated_at = ", n - 2, n - 1);
    s_put_param (out, n, MX_TYPE_T);
    fputs (" WHERE flid = $1::bigint AND state_version = $2::bigint", out);
    assert (n <= S_UPDATE_MAX_PARAMS);

    s_batch_keep (self, s_stream_close (out, &sql));
    const char **params = s_batch_add (self, sql, n, true);
    memcpy (params, values, (size_t) n * sizeof (char *));
}

//  True when anything stored differs between the two states.
static bool
s_differs (const mx_flight_t *before, const mx_flight_t *after, bool *set_changed)
{
    bool differs = before->state_version != after->state_version
                || before->last_msg_id != after->last_msg_id
                || before->operation_day != after->operation_day
                || before->deleted != after->deleted
                || before->deleted_at != after->deleted_at
                || !s_json_equal (before->extra, after->extra);
    for (int k = 0; k < MX_F_COUNT; k++)
        differs |= !s_text_equal (before->scalars [k], after->scalars [k]);
    for (int r = 0; r < MX_RARE_COUNT; r++)
        differs |= !s_json_equal (before->rare [r], after->rare [r]);
    for (int k = 0; k < MX_SET_COUNT; k++) {
        set_changed [k] = !mx_set_equal (&before->sets [k], &after->sets [k]);
        differs |= set_changed [k];
    }
    return differs;
}

//  Adds the statements that take `before` to `after`; 0 when nothing
//  differs, -1 on a refusal.
static int
s_batch_flight (s_batch_t *batch, const mx_flight_t *before, const mx_flight_t *after, int64_t now_ms,
                char **error)
{
    assert (after);
    assert (after->extra);
    assert (!before || before->flid == after->flid);
    if (after->operation_day < 0) {
        s_error (error, "flight %" PRId64 ": operation day not derived", after->flid);
        return -1;
    }
    bool set_changed [MX_SET_COUNT];
    if (before && !s_differs (before, after, set_changed))
        return 0;
    if (before)
        s_batch_update (batch, before, after, now_ms);
    else
        s_batch_insert (batch, after, now_ms);
    for (int k = 0; k < MX_SET_COUNT; k++)
        if ((before ? set_changed [k] : after->sets [k].count > 0)
        &&  s_batch_set (batch, after, (mx_set_kind_t) k, before != NULL, error))
            return -1;
    return 0;
}

int
mx_flight_repo_save (PGconn *conn, const mx_flight_t *before, const mx_flight_t *after,
                     int64_t now_ms, char **error)
{
    return mx_flight_repo_save_many (conn, &before, &after, 1, now_ms, error);
}

int
mx_flight_repo_save_many (PGconn *conn, const mx_flight_t *const *before, const mx_flight_t *const *after,
                          size_t count, int64_t now_ms, char **error)
{
    assert (conn);
    pthread_once (&s_sql_once, s_sql_build);
    s_batch_t batch;
    memset (&batch, 0, sizeof batch);
    int rc = 0;
    //  One pipeline per few hundred statements: results are small, but a
    //  bounded pipeline never has both sides' buffers full at once. The
    //  set statements go with the last one.
    for (size_t i = 0; i < count && rc == 0; i++) {
        rc = s_batch_flight (&batch, before [i], after [i], now_ms, error);
        if (rc == 0 && i + 1 == count)
            s_batch_sets (&batch);
        if (rc == 0 && (batch.count >= 400 || i + 1 == count) && batch.count > 0) {
            rc = s_batch_run (conn, &batch, error);
            s_batch_reset_statements (&batch);
        }
    }
    s_batch_reset (&batch);
    return rc;
}

//  ---------------------------------------------------------------------
//  Outbox, snapshot log

//  The payload keeps its text and member order (it is what consumers
//  read); only an "event_id" member (the KAFKA:msg document has one) is
//  replaced, first, with the id nextval gave.
#define S_EVENT_INSERT \
    "INSERT INTO msg_event (event_id, target, partition_key, event_type, flid, state_version," \
    " msg_id, payload, created_at)" \
    " SELECT n.id, $1::text, $2::text, $3::text, $2::bigint, $4::bigint, $5::bigint," \
    " CASE WHEN $6::json IS NULL THEN NULL ELSE" \
    " (SELECT '{' || string_agg (to_json (m.k)::text || ':' || m.v, ',' ORDER BY m.o) || '}'" \
    "  FROM (SELECT 'event_id', n.id::text, 0::bigint WHERE ($6::json -> 'event_id') IS NOT NULL" \
    "        UNION ALL" \
    "        SELECT p.key, p.value::text, p.ord" \
    "        FROM json_each ($6::json) WITH ORDINALITY AS p (key, value, ord)" \
    "        WHERE p.key <> 'event_id') AS m (k, v, o)) END," \
    " to_timestamp ($7::bigint / 1000.0)" \
    " FROM (SELECT nextval (pg_get_serial_sequence ('msg_event', 'event_id')) AS id) AS n" \
    " RETURNING event_id"

int
mx_event_insert (PGconn *conn, mx_target_t target, mx_event_type_t type, int64_t flid,
                 int64_t state_version, int64_t msg_id, const char *payload,
                 int64_t now_ms, int64_t *event_id, char **error)
{
    assert (conn);
    assert (event_id);
    assert (target == MX_TARGET_MSG || target == MX_TARGET_SCHD);
    assert (type == MX_EVENT_UPSERT || type == MX_EVENT_TOMBSTONE);
    //  Only a KAFKA:schd tombstone is a null value (SPEC §5).
    assert (payload || (target == MX_TARGET_SCHD && type == MX_EVENT_TOMBSTONE));
    *event_id = 0;
    char flid_text [MX_PG_INT64_BUFSIZE], version [MX_PG_INT64_BUFSIZE];
    char msg [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *values [] = {
        s_targets [target], mx_pg_int64_text (flid, flid_text), s_event_types [type],
        mx_pg_int64_text (state_version, version),
        msg_id > 0 ? mx_pg_int64_text (msg_id, msg) : NULL,     //  job-made event
        payload, mx_pg_int64_text (now_ms, now)
    };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, S_EVENT_INSERT, 7, values, &res, error))
        return -1;
    *event_id = mx_pg_get_int64 (res, 0, 0);
    PQclear (res);
    return 0;
}

int
mx_snap_log_insert (PGconn *conn, int64_t msg_id, const char *styp, int64_t scope_begin_ms,
                    int64_t scope_end_ms, int64_t now_ms, int inserted, int updated,
                    int unchanged, char **error)
{
    assert (conn);
    assert (styp);
    char msg [MX_PG_INT64_BUFSIZE], begin [MX_PG_INT64_BUFSIZE], end [MX_PG_INT64_BUFSIZE];
    char now [MX_PG_INT64_BUFSIZE], ins [MX_PG_INT64_BUFSIZE], upd [MX_PG_INT64_BUFSIZE];
    char same [MX_PG_INT64_BUFSIZE];
    const char *values [] = {
        mx_pg_int64_text (msg_id, msg), styp,
        scope_begin_ms >= 0 ? mx_pg_int64_text (scope_begin_ms, begin) : NULL,  //  no flights
        scope_end_ms >= 0 ? mx_pg_int64_text (scope_end_ms, end) : NULL,
        mx_pg_int64_text (now_ms, now), mx_pg_int64_text (inserted, ins),
        mx_pg_int64_text (updated, upd), mx_pg_int64_text (unchanged, same)
    };
    return mx_pg_exec (conn,
        "INSERT INTO schd_snap_log (msg_id, styp, scope_begin, scope_end, recv_at,"
        " flights_inserted, flights_updated, flights_unchanged)"
        " VALUES ($1::bigint, $2::text, to_timestamp ($3::bigint / 1000.0),"
        " to_timestamp ($4::bigint / 1000.0), to_timestamp ($5::bigint / 1000.0),"
        " $6::integer, $7::integer, $8::integer)",
        8, values, NULL, error);
}

//  ---------------------------------------------------------------------
//  Reference data

//  $2 holds the records as [[key, value], ...]; a key listed twice keeps
//  its last value, as if the records were applied one by one.
#define S_REF_INPUT \
    "WITH rec AS (" \
    " SELECT DISTINCT ON (e.r->>0) e.r->>0 AS rkey, (e.r->1)::jsonb AS value" \
    " FROM json_array_elements ($2::json) WITH ORDINALITY AS e (r, ord)" \
    " ORDER BY e.r->>0, e.ord DESC)"

//  Upsert; a row whose value is the same is left alone and not counted.
#define S_REF_PUT \
    "put AS (" \
    " INSERT INTO ref_master AS m (rtype, rkey, value, updated_at, last_msg_id)" \
    " SELECT $1::text, rkey, value, to_timestamp ($4::bigint / 1000.0), $3::bigint FROM rec" \
    " ON CONFLICT (rtype, rkey) DO UPDATE" \
    " SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at, last_msg_id = EXCLUDED.last_msg_id" \
    " WHERE m.value IS DISTINCT FROM EXCLUDED.value" \
    " RETURNING m.rkey, m.value, m.updated_at, m.last_msg_id)"

//  The KAFKA:ref events of what changed, in the same statement: an UPSERT
//  with the entry's document, or a tombstone (null value) for a key gone.
#define S_REF_EVENTS(changes) \
    "ev AS (INSERT INTO msg_event (target, partition_key, event_type, flid, state_version, msg_id," \
    " payload, created_at)" \
    " SELECT '" MX_OUTBOX_TARGET_REF "', $1::text || ':' || c.rkey," \
    " CASE WHEN c.gone THEN 'TOMBSTONE' ELSE 'UPSERT' END, 0, coalesce ($3::bigint, 0), $3::bigint," \
    " CASE WHEN c.gone THEN NULL ELSE " MX_REF_DOC ("$1::text", "c") " END," \
    " to_timestamp ($4::bigint / 1000.0)" \
    " FROM (" changes ") AS c ORDER BY c.rkey" \
    " RETURNING 1)"

//  One statement, so the set is replaced atomically; the DELETE and the
//  upsert touch disjoint rows, so their order inside it does not matter.
#define S_REF_REPLACE \
    S_REF_INPUT "," \
    " gone AS (DELETE FROM ref_master AS m WHERE m.rtype = $1::text" \
    "          AND NOT EXISTS (SELECT 1 FROM rec WHERE rec.rkey = m.rkey) RETURNING m.rkey), " \
    S_REF_PUT ", " \
    S_REF_EVENTS ("SELECT rkey, value, updated_at, last_msg_id, false AS gone FROM put" \
                  " UNION ALL SELECT rkey, NULL, NULL, NULL, true FROM gone") \
    " SELECT (SELECT count (*) FROM gone) + (SELECT count (*) FROM put)"

#define S_REF_UPSERT \
    S_REF_INPUT ", " S_REF_PUT ", " \
    S_REF_EVENTS ("SELECT rkey, value, updated_at, last_msg_id, false AS gone FROM put") \
    " SELECT count (*) FROM put"

#define S_REF_DELETE \
    "WITH gone AS (DELETE FROM ref_master WHERE rtype = $1::text" \
    " AND rkey IN (SELECT e->>0 FROM json_array_elements ($2::json) AS e) RETURNING rkey), " \
    S_REF_EVENTS ("SELECT rkey, NULL::jsonb AS value, NULL::timestamptz AS updated_at," \
                  " NULL::bigint AS last_msg_id, true AS gone FROM gone") \
    " SELECT count (*) FROM gone"

int
mx_reference_apply (PGconn *conn, const mx_reference_t *ref, int64_t msg_id, int64_t now_ms,
                    int *changed, char **error)
{
    assert (conn);
    assert (ref);
    assert (changed);
    assert (ref->count == 0 || ref->records);
    *changed = 0;
    const char *sql = NULL;
    if (strcmp (ref->styp, "DNLD") == 0 || strcmp (ref->styp, "RESP") == 0)
        sql = S_REF_REPLACE;
    else
    if (strcmp (ref->styp, "ADD") == 0 || strcmp (ref->styp, "UPD") == 0)
        sql = S_REF_UPSERT;
    else
    if (strcmp (ref->styp, "DEL") == 0)
        sql = S_REF_DELETE;
    else {
        s_error (error, "reference %s: subtype \"%s\" is not one of DNLD, RESP, ADD, UPD, DEL",
                 ref->rtype, ref->styp);
        return -1;
    }

    json_t *rows = json_array ();
    for (size_t i = 0; i < ref->count; i++) {
        const mx_ref_record_t *record = &ref->records [i];
        json_t *key = record->key ? json_string (record->key) : NULL;
        if (!key) {
            s_error (error, "reference %s: record %zu has no valid UTF-8 key", ref->rtype, i + 1);
            json_decref (rows);
            return -1;
        }
        json_array_append_new (rows, json_pack ("[oO]", key,
                                                record->value ? record->value : json_null ()));
    }
    char *text = json_dumps (rows, JSON_COMPACT);
    json_decref (rows);
    assert (text);

    char msg [MX_PG_INT64_BUFSIZE], now [MX_PG_INT64_BUFSIZE];
    const char *values [] = {
        ref->rtype, text, msg_id > 0 ? mx_pg_int64_text (msg_id, msg) : NULL,
        mx_pg_int64_text (now_ms, now)
    };
    PGresult *res = NULL;
    int rc = mx_pg_exec (conn, sql, 4, values, &res, error);
    free (text);
    if (rc)
        return -1;
    *changed = (int) mx_pg_get_int64 (res, 0, 0);
    PQclear (res);
    return 0;
}

int
mx_flight_repo_version (PGconn *conn, int64_t flid, int64_t since_msg_id, int64_t *version,
                        int64_t *last_msg_id, bool *changed_since, char **error)
{
    char flid_text [MX_PG_INT64_BUFSIZE], id_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (flid, flid_text), mx_pg_int64_text (since_msg_id, id_text) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT state_version, last_msg_id, last_msg_id > $2::bigint FROM flight_schd"
                          " WHERE flid = $1::bigint", 2, params, &res, error))
        return -1;
    int found = PQntuples (res) == 1;
    if (found) {
        *version = mx_pg_get_int64 (res, 0, 0);
        *last_msg_id = mx_pg_get_int64 (res, 0, 1);
        *changed_since = strcmp (PQgetvalue (res, 0, 2), "t") == 0;
    }
    PQclear (res);
    return found;
}
