/*  mx_api_reader - see mx_api_reader.h.  */
#include "mx_api_reader.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mx_flight.h"
#include "mx_flight_repo.h"
#include "mx_flightread.h"
#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_pg.h"
#include "mx_tz.h"

#define S_PATH_FLIGHTS "/flights"
#define S_PATH_ALL "/all/flights"
#define S_PATH_REFERENCE "/reference/"

//  How long a read of a flight a write is committing waits for the write's
//  end before it reads PostgreSQL: a commit under a drain takes a few ms
//  (docs/performance.md); a longer wait only means a slow commit, and
//  PostgreSQL answers the state before it without waiting.
#define S_WRITE_WAIT_MS 25
#define S_TEXT(x) #x
#define S_NUMBER_TEXT(x) S_TEXT (x)

static const char *s_outcomes [] = {
    "ok", "not_modified", "bad_request", "not_found", "over_limit", "unavailable",
    "unauthorized", "forbidden"
};

static mx_metrics_counter_t *
s_counter (const char *outcome)
{
    char labels [64];
    snprintf (labels, sizeof labels, "outcome=%s", outcome);
    return mx_metrics_counter ("msgx_api_requests_total",
        "Requests to the read API by outcome: ok, not_modified (304), bad_request (400), not_found"
        " (404), over_limit (400: a page size over msgx.api.page-size), unavailable (503: PostgreSQL"
        " not reached or the statement timeout hit, also a GET /all/flights stream cut short), unauthorized (401),"
        " forbidden (403); a stream counts when it ends", labels);
}

static mx_metrics_counter_t *
s_cache_hits (void)
{
    return mx_metrics_counter ("msgx_api_cache_hits_total",
        "GET /flights/{flid} answered from the state-document cache (msgx.api.cache-flights), 200 or 304,"
        " without PostgreSQL", NULL);
}

static mx_metrics_counter_t *
s_cache_misses (void)
{
    return mx_metrics_counter ("msgx_api_cache_misses_total",
        "GET /flights/{flid} the state-document cache did not hold while on (active instance): read from"
        " PostgreSQL, or waited for a write under way (msgx_api_cache_waited_total)", NULL);
}

static mx_metrics_counter_t *
s_cache_waited (void)
{
    return mx_metrics_counter ("msgx_api_cache_waited_total",
        "GET /flights/{flid} the http thread missed (counted in msgx_api_cache_misses_total) and a reader"
        " answered from the cache: the flight's write was committing, and the reader waited for its end"
        " (at most " S_NUMBER_TEXT (S_WRITE_WAIT_MS) " ms) and its committed document", NULL);
}

static mx_metrics_gauge_t *
s_cache_entries (void)
{
    return mx_metrics_gauge ("msgx_api_cache_entries",
        "State documents in the read API's cache (0 on a standby: the cache is off there)", NULL);
}

static mx_metrics_gauge_t *
s_cache_bytes (void)
{
    return mx_metrics_gauge ("msgx_api_cache_bytes",
        "Bytes of the state documents in the read API's cache (at most msgx.api.cache-bytes)", NULL);
}

void
mx_api_reader_register_metrics (void)
{
    for (size_t i = 0; i < sizeof s_outcomes / sizeof s_outcomes [0]; i++)
        s_counter (s_outcomes [i]);
    s_cache_hits ();
    s_cache_misses ();
    s_cache_waited ();
    mx_metrics_gauge_set (s_cache_entries (), 0);
    mx_metrics_gauge_set (s_cache_bytes (), 0);
}

void
mx_api_reader_cache_gauges (mx_doc_cache_t *cache)
{
    mx_doc_cache_stats_t stats;
    mx_doc_cache_stats (cache, &stats);
    mx_metrics_gauge_set (s_cache_entries (), (double) stats.entries);
    mx_metrics_gauge_set (s_cache_bytes (), (double) stats.bytes);
}

int
mx_api_reader_nice (const mx_config_t *config, const char *name, const char *thread)
{
    int nice = (int) config->api_nice;
    if (nice == 0)
        return 0;
    //  On Linux a thread's id names it alone to setpriority.
    id_t tid = (id_t) syscall (SYS_gettid);
    if (setpriority (PRIO_PROCESS, tid, nice) == 0)
        return 0;
    int error = errno;
    mx_log_emit (MX_LOG_WARN, name, NULL, "read API: cannot set the nice value of the %s thread to %d"
                 " (msgx.api.nice): %s%s; it runs at the process's", thread, nice, strerror (error),
                 error == EACCES || error == EPERM
                 ? " (a negative value needs CAP_SYS_NICE or a RLIMIT_NICE allowing it, e.g. LimitNICE=)" : "");
    return -1;
}

static mx_api_reader_page_fn *s_page_hook;

void
mx_api_reader_set_page_hook (mx_api_reader_page_fn *hook)
{
    s_page_hook = hook;
}

void
mx_api_reader_count (const char *outcome)
{
    mx_metrics_add (s_counter (outcome), 1);
}

typedef struct {
    zsock_t *pipe;
    const mx_api_reader_args_t *args;
    const mx_config_t *config;
    PGconn *pg;                         //  lazily (re)connected
    mx_tz_t *zone;                      //  airport zone of the state documents; loaded lazily
    zlistx_t *streams;                  //  s_stream_t *: GET /all/flights answers under way
    mx_text_t doc;                      //  a state document being rendered
} s_reader_t;

//  Most requests for one flight read together (s_command).
#define S_BATCH_MAX 32

//  Streams open at once: each may hold two pages in http (the one being
//  written and the next), so this bounds their memory.
#define S_STREAMS_MAX 4

//  One GET /all/flights being streamed: what the next page reads. Pages
//  are keyset pages by FLID, each its own statement, read only when http
//  asks for the next piece (API_MORE): memory is bounded by a page.
typedef struct {
    uint64_t tag;
    char from [MX_FLIGHTREAD_DAY_BUFSIZE];
    char to [MX_FLIGHTREAD_DAY_BUFSIZE];
    int64_t after;                      //  the last FLID sent
    size_t sent;                        //  flights sent so far
} s_stream_t;

//  One answer in the making.
typedef struct {
    int status;
    char etag [MX_PG_INT64_BUFSIZE + 2];
    char *body;                         //  malloc'd JSON
} s_answer_t;

static void
s_error (s_answer_t *answer, int status, const char *code, const char *fmt, ...)
    __attribute__ ((format (printf, 4, 5)));

static void
s_error (s_answer_t *answer, int status, const char *code, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *message = zsys_vprintf (fmt, args);
    va_end (args);
    json_t *body = json_pack ("{s:{s:s,s:s}}", "error", "code", code, "message", message);
    free (message);
    answer->status = status;
    free (answer->body);
    answer->body = json_dumps (body, JSON_COMPACT);
    json_decref (body);
}

//  The session and the zone for a read; false with the answer set (503).
static bool
s_ready (s_reader_t *self, s_answer_t *answer)
{
    char *error = NULL;
    if (!self->zone) {
        self->zone = mx_tz_load (self->config->operation_day_zone, &error);
        if (!self->zone) {
            mx_log_emit (MX_LOG_ERROR, self->args->name, NULL, "read API: %s", error ? error : "no zone");
            free (error);
            s_error (answer, 503, "unavailable", "the airport time zone is not loaded");
            return false;
        }
    }
    if (!self->pg)
        self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-api",
                                  self->config->api_statement_timeout, &error);
    if (!self->pg) {
        mx_log_emit (MX_LOG_WARN, self->args->name, NULL, "read API: %s", error ? error : "no session");
        free (error);
        s_error (answer, 503, "unavailable", "PostgreSQL is not reached: retry later");
        return false;
    }
    return true;
}

//  A failed read: 503, logged with the driver's text (never sent out); a
//  broken session is opened afresh next time.
static void
s_failed (s_reader_t *self, s_answer_t *answer, char *error)
{
    bool timeout = error && strstr (error, "statement timeout");
    mx_log_emit (MX_LOG_WARN, self->args->name, NULL, "read API: %s", error ? error : "unknown error");
    free (error);
    if (self->pg && PQstatus (self->pg) != CONNECTION_OK)
        mx_pg_disconnect (&self->pg);
    s_error (answer, 503, "unavailable", timeout
             ? "the read took longer than msgx.api.statement-timeout: narrow it or retry later"
             : "the database read failed: retry later");
}

//  ---------------------------------------------------------------------
//  Parameters

//  A whole decimal number 1..INT64_MAX (a FLID, a cursor, a limit).
static bool
s_positive (const char *text, int64_t *value)
{
    if (!text || !*text || strlen (text) > 18)
        return false;
    int64_t result = 0;
    for (const char *scan = text; *scan; scan++) {
        if (!isdigit ((unsigned char) *scan))
            return false;
        result = result * 10 + (*scan - '0');
    }
    *value = result;
    return result > 0;
}

//  YYYY-MM-DD, a real calendar day.
static bool
s_day (const char *text)
{
    int year, month, day, end = 0;
    if (!text || strlen (text) != 10
    ||  sscanf (text, "%4d-%2d-%2d%n", &year, &month, &day, &end) != 3 || end != 10
    ||  !isdigit ((unsigned char) text [0]) || text [4] != '-' || text [7] != '-')
        return false;
    return year >= 1970 && day >= 1 && day <= mx_tz_days_in_month (year, month);
}

//  YYYY-MM-DDTHH:MM:SSZ (UTC) as epoch ms.
static bool
s_instant (const char *text, int64_t *ms)
{
    int year, month, day, hour, minute, second, end = 0;
    if (!text || strlen (text) != 20 || text [10] != 'T' || text [19] != 'Z')
        return false;
    char day_text [11];
    memcpy (day_text, text, 10);
    day_text [10] = '\0';
    if (!s_day (day_text)
    ||  sscanf (text, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &year, &month, &day, &hour, &minute, &second, &end) != 6
    ||  end != 20 || hour > 23 || minute > 59 || second > 59)
        return false;
    *ms = ((mx_tz_days_from_civil (year, month, day) * 24 + hour) * 60 + minute) * 60000
        + (int64_t) second * 1000;
    return true;
}

static const char *
s_arg (json_t *args, const char *name)
{
    return json_string_value (json_object_get (args, name));
}

//  Only the parameters a path knows: a typo is refused, never ignored.
static bool
s_known_args (json_t *args, const char *const *known, s_answer_t *answer)
{
    const char *name;
    json_t *value;
    json_object_foreach (args, name, value) {
        bool found = false;
        for (const char *const *scan = known; *scan && !found; scan++)
            found = streq (*scan, name);
        if (!found) {
            s_error (answer, 400, "bad_parameter", "unknown query parameter '%.64s'", name);
            return false;
        }
    }
    return true;
}

//  ---------------------------------------------------------------------
//  Flights

//  A JSON text in the making. json_dumpf into an open_memstream went
//  through stdio for every token (a fifth of the time of GET /all/flights);
//  this appends to one growing buffer.
typedef struct {
    char *data;
    size_t size;
    size_t capacity;
    bool failed;                        //  out of memory: the text is incomplete
} s_text_t;

static int
s_text_add (const char *bytes, size_t size, void *text_)
{
    s_text_t *text = (s_text_t *) text_;
    if (text->size + size + 1 > text->capacity) {
        size_t want = text->capacity ? text->capacity * 2 : 64 * 1024;
        while (want < text->size + size + 1)
            want *= 2;
        char *data = (char *) realloc (text->data, want);
        if (!data) {
            text->failed = true;
            return -1;
        }
        text->data = data;
        text->capacity = want;
    }
    memcpy (text->data + text->size, bytes, size);
    text->size += size;
    text->data [text->size] = '\0';
    return 0;
}

static void
s_text_puts (s_text_t *text, const char *string)
{
    s_text_add (string, strlen (string), text);
}

//  One page of documents being written (s_render_docs): the cached
//  documents of the page, the loaded ones in between, in flid order.
typedef struct {
    s_reader_t *self;
    s_text_t *out;
    size_t *sent;
    const int64_t *flids;
    char **cached;                      //  per flid: the cache's document, or NULL (loaded)
    size_t count;
    size_t next;                        //  first flid not written yet
    mx_doc_cache_t *cache;              //  where loaded documents go (NULL: nowhere)
    uint64_t ticket;
} s_render_t;

static void
s_render_add (s_render_t *render, const char *doc, size_t size)
{
    if ((*render->sent)++)
        s_text_add (",", 1, render->out);
    s_text_add (doc, size, render->out);
}

//  The cached documents before flid (up to the end when flid is 0).
static void
s_render_cached (s_render_t *render, int64_t flid)
{
    while (render->next < render->count && (flid == 0 || render->flids [render->next] < flid)) {
        char *doc = render->cached [render->next++];
        if (doc)
            s_render_add (render, doc, strlen (doc));
    }
}

static void
s_render_one (mx_flight_t *flight, void *arg)
{
    s_render_t *render = (s_render_t *) arg;
    s_reader_t *self = render->self;
    s_render_cached (render, flight->flid);
    if (render->next < render->count && render->flids [render->next] == flight->flid)
        render->next++;
    mx_flight_state_text_into (flight, self->zone, &self->doc);
    s_render_add (render, self->doc.data, self->doc.size);
    mx_doc_cache_put (render->cache, render->ticket, flight->flid, flight->state_version,
                      self->doc.data, self->doc.size);
    mx_flight_destroy (&flight);
}

//  Renders the state documents of flids (ascending; a flight gone
//  meanwhile is left out) to out as members of a JSON array, *sent
//  counting those written before (a comma goes before all but the first).
//  With versions (those the listing read), a flight the cache holds at
//  that version is written from the cache; the others are read from
//  PostgreSQL in one pipelined load, each rendered as its row arrives
//  while PostgreSQL reads the next, and offered to the cache. Returns 0,
//  or -1 with the answer set.
static int
s_render_docs (s_reader_t *self, const int64_t *flids, const int64_t *versions, size_t count,
               size_t *sent, s_text_t *out, s_answer_t *answer)
{
    mx_doc_cache_t *cache = self->args->doc_cache;
    //  Before the read: a flight changed after it is refused by the cache.
    uint64_t ticket = mx_doc_cache_ticket (cache);
    bool caching = mx_doc_cache_enabled (cache);
    char **cached = (char **) calloc (count + 1, sizeof *cached);
    int64_t *load = (int64_t *) malloc ((count + 1) * sizeof *load);
    if (!cached || !load) {
        free (cached);
        free (load);
        s_error (answer, 503, "unavailable", "out of memory: retry later");
        return -1;
    }
    size_t loads = 0;
    for (size_t i = 0; i < count; i++) {
        int64_t version = 0;
        char *doc = NULL;
        if (caching && versions && mx_doc_cache_get (cache, flids [i], &version, &doc, NULL)
        &&  version == versions [i])
            cached [i] = doc;
        else {
            free (doc);
            load [loads++] = flids [i];
        }
    }
    s_render_t render = { .self = self, .out = out, .sent = sent, .flids = flids, .cached = cached,
                          .count = count, .cache = caching ? cache : NULL, .ticket = ticket };
    char *error = NULL;
    int rc = loads ? mx_flight_repo_load_each (self->pg, load, loads, s_render_one, &render, &error) : 0;
    if (rc)
        s_failed (self, answer, error);
    else
        s_render_cached (&render, 0);
    for (size_t i = 0; i < count; i++)
        free (cached [i]);
    free (cached);
    free (load);
    return rc;
}

//  The ETag of a state version: a strong validator.
static void
s_etag (int64_t version, char *buf, size_t size)
{
    snprintf (buf, size, "\"%" PRId64 "\"", version);
}

//  If-None-Match: "*" or a comma-separated list of (possibly weak) tags.
static bool
s_matches (const char *if_none_match, const char *etag)
{
    const char *scan = if_none_match;
    size_t length = strlen (etag);
    while (*scan) {
        while (*scan == ' ' || *scan == ',' || *scan == '\t')
            scan++;
        if (*scan == '*')
            return true;
        if (strncmp (scan, "W/", 2) == 0)
            scan += 2;
        if (strncmp (scan, etag, length) == 0 && strchr (" ,\t", scan [length]))
            return true;
        scan += strcspn (scan, ",");
    }
    return false;
}

//  The answer of a cached document (doc, malloc'd, taken): 304 when
//  if_none_match names its version, else 200 with it.
static void
s_answer_doc (s_answer_t *answer, const char *if_none_match, int64_t version, char *doc)
{
    s_etag (version, answer->etag, sizeof answer->etag);
    if (*if_none_match && s_matches (if_none_match, answer->etag)) {
        free (doc);
        answer->status = 304;
    }
    else {
        answer->body = doc;
        answer->status = 200;
    }
}

bool
mx_api_reader_cached (mx_doc_cache_t *cache, const char *path, bool has_args,
                      const char *if_none_match, int *status, char **etag, char **body)
{
    size_t prefix = strlen (S_PATH_FLIGHTS "/");
    int64_t flid = 0;
    if (!cache || has_args || strncmp (path, S_PATH_FLIGHTS "/", prefix) != 0
    ||  !s_positive (path + prefix, &flid) || !mx_doc_cache_enabled (cache))
        return false;
    int64_t version = 0;
    char *doc = NULL;
    if (!mx_doc_cache_get (cache, flid, &version, &doc, NULL)) {
        mx_metrics_add (s_cache_misses (), 1);
        return false;
    }
    char tag [MX_PG_INT64_BUFSIZE + 2];
    s_etag (version, tag, sizeof tag);
    bool not_modified = if_none_match && *if_none_match && s_matches (if_none_match, tag);
    *etag = strdup (tag);
    *body = not_modified ? strdup ("") : doc;
    if (not_modified)
        free (doc);
    if (!*etag || !*body) {
        free (*etag);
        free (*body);
        *etag = *body = NULL;
        return false;
    }
    *status = not_modified ? 304 : 200;
    mx_metrics_add (s_cache_hits (), 1);
    mx_api_reader_count (not_modified ? "not_modified" : "ok");
    return true;
}

//  The same answer for another request (a failure shared by a batch).
static void
s_answer_copy (s_answer_t *to, const s_answer_t *from)
{
    to->status = from->status;
    to->body = from->body ? strdup (from->body) : NULL;
}

//  GET /flights/{flid} for each of gets, answered in answers: requests
//  that queued up together are read with one statement (see s_command).
static void
s_flight_batch (s_reader_t *self, mx_cmd_API_GET_t *const *gets, size_t count, s_answer_t *answers)
{
    assert (count <= S_BATCH_MAX);
    int64_t flids [S_BATCH_MAX];
    size_t asked [S_BATCH_MAX];         //  index in gets of each flid
    size_t valid = 0;
    size_t prefix = strlen (S_PATH_FLIGHTS "/");
    for (size_t i = 0; i < count; i++) {
        const char *flid_text = gets [i]->path + prefix;
        if (s_positive (flid_text, &flids [valid]))
            asked [valid++] = i;
        else
            s_error (&answers [i], 400, "bad_flid", "FLID '%.32s' is not a positive whole number", flid_text);
    }
    //  A flight missed by http may be one a write is committing: its
    //  document comes with the write's end, sooner than PostgreSQL's
    //  answer behind a draining backlog.
    mx_doc_cache_t *cache = self->args->doc_cache;
    size_t unread = 0;
    for (size_t v = 0; v < valid; v++) {
        int64_t version = 0;
        char *doc = NULL;
        if (!mx_doc_cache_await (cache, flids [v], S_WRITE_WAIT_MS, &version, &doc, NULL, NULL)) {
            flids [unread] = flids [v];
            asked [unread++] = asked [v];
            continue;
        }
        mx_metrics_add (s_cache_waited (), 1);
        s_answer_doc (&answers [asked [v]], gets [asked [v]]->etag, version, doc);
    }
    valid = unread;
    if (valid == 0)
        return;
    s_answer_t *first = &answers [asked [0]];
    mx_flight_t *flights [S_BATCH_MAX] = { NULL };
    char *error = NULL;
    //  Before the read: a flight changed after it is refused by the cache.
    uint64_t ticket = mx_doc_cache_ticket (cache);
    bool caching = mx_doc_cache_enabled (cache);
    if (!s_ready (self, first))
        ;
    else
    if (mx_flight_repo_load (self->pg, flids, valid, false, flights, &error))
        s_failed (self, first, error);
    if (first->status) {
        for (size_t v = 1; v < valid; v++)
            s_answer_copy (&answers [asked [v]], first);
        return;
    }
    for (size_t v = 0; v < valid; v++) {
        s_answer_t *answer = &answers [asked [v]];
        mx_flight_t *flight = flights [v];
        if (!flight) {
            s_error (answer, 404, "no_such_flight", "no flight %" PRId64, flids [v]);
            continue;
        }
        const char *if_none_match = gets [asked [v]]->etag;
        s_etag (flight->state_version, answer->etag, sizeof answer->etag);
        bool not_modified = *if_none_match && s_matches (if_none_match, answer->etag);
        if (!not_modified || caching)
            mx_flight_state_text_into (flight, self->zone, &self->doc);
        if (caching)
            mx_doc_cache_put (cache, ticket, flids [v], flight->state_version, self->doc.data, self->doc.size);
        if (not_modified)
            answer->status = 304;
        else {
            answer->body = strdup (self->doc.data);
            answer->status = answer->body ? 200 : 0;
            if (!answer->body)
                s_error (answer, 503, "unavailable", "out of memory: retry later");
        }
        mx_flight_destroy (&flights [v]);
    }
}

static void
s_flights (s_reader_t *self, json_t *args, s_answer_t *answer)
{
    static const char *const known [] = { "day", "airline", "direction", "changed-since", "limit", "cursor", NULL };
    if (!s_known_args (args, known, answer))
        return;
    mx_flightread_filter_t filter = { .changed_since = -1 };
    const char *day = s_arg (args, "day");
    if (!day) {
        s_error (answer, 400, "bad_parameter", "day is required: /flights?day=YYYY-MM-DD");
        return;
    }
    if (!s_day (day)) {
        s_error (answer, 400, "bad_parameter", "day '%.32s' is not a date YYYY-MM-DD", day);
        return;
    }
    filter.day_from = filter.day_to = day;
    filter.airline = s_arg (args, "airline");
    if (filter.airline && (strlen (filter.airline) < 2 || strlen (filter.airline) > 3)) {
        s_error (answer, 400, "bad_parameter", "airline '%.32s' is not an airline code (2 or 3 characters)",
                 filter.airline);
        return;
    }
    const char *direction = s_arg (args, "direction");
    if (direction) {
        filter.mvin = streq (direction, "arrival") ? "A" : streq (direction, "departure") ? "D" : NULL;
        if (!filter.mvin) {
            s_error (answer, 400, "bad_parameter", "direction '%.32s' is neither arrival nor departure",
                     direction);
            return;
        }
    }
    const char *since = s_arg (args, "changed-since");
    if (since && !s_instant (since, &filter.changed_since)) {
        s_error (answer, 400, "bad_parameter",
                 "changed-since '%.32s' is not a UTC time YYYY-MM-DDTHH:MM:SSZ", since);
        return;
    }
    int64_t limit = self->config->api_page_size;
    const char *limit_text = s_arg (args, "limit");
    if (limit_text) {
        if (!s_positive (limit_text, &limit)) {
            s_error (answer, 400, "bad_parameter", "limit '%.32s' is not a positive whole number", limit_text);
            return;
        }
        if (limit > self->config->api_page_size) {
            s_error (answer, 400, "over_limit", "limit %" PRId64 " is over the page size limit of %" PRId64
                     " (msgx.api.page-size)", limit, self->config->api_page_size);
            return;
        }
    }
    int64_t after = 0;
    const char *cursor = s_arg (args, "cursor");
    if (cursor && !s_positive (cursor, &after)) {
        s_error (answer, 400, "bad_parameter", "cursor '%.32s' is not one this API gave", cursor);
        return;
    }
    if (!s_ready (self, answer))
        return;
    //  One more than the page tells whether another follows.
    size_t max = (size_t) limit + 1;
    int64_t *flids = (int64_t *) calloc (max, sizeof *flids);
    int64_t *versions = (int64_t *) calloc (max, sizeof *versions);
    size_t count = 0;
    char *error = NULL;
    if (!flids || !versions
    ||  mx_flightread_list (self->pg, &filter, after, max, flids, versions, &count, &error)) {
        free (flids);
        free (versions);
        s_failed (self, answer, error ? error : strdup ("out of memory"));
        return;
    }
    bool more = count > (size_t) limit;
    if (more)
        count = (size_t) limit;
    s_text_t out = { 0 };
    size_t sent = 0;
    char head [64];
    snprintf (head, sizeof head, "{\"day\":\"%s\",\"flights\":[", day);     //  checked: YYYY-MM-DD
    s_text_puts (&out, head);
    int rc = s_render_docs (self, flids, versions, count, &sent, &out, answer);
    char tail [64];
    if (more)
        snprintf (tail, sizeof tail, "],\"next_cursor\":\"%" PRId64 "\"}", flids [count - 1]);
    else
        snprintf (tail, sizeof tail, "],\"next_cursor\":null}");
    s_text_puts (&out, tail);
    if (rc == 0 && out.failed)
        s_error (answer, 503, "unavailable", "out of memory: retry later");
    else
    if (rc == 0) {
        answer->body = out.data;
        out.data = NULL;
        answer->status = 200;
    }
    free (out.data);
    free (flids);
    free (versions);
}

//  The stream's next piece: head, then the next page's documents, then
//  "]}" when the page is short (the last). Returns 1 more follows, 0 the
//  last piece, -1 failed (the answer set, *text as far as it got).
static int
s_stream_piece (s_reader_t *self, s_stream_t *stream, const char *head, char **text, s_answer_t *answer)
{
    s_text_t out = { 0 };
    s_text_puts (&out, head);
    size_t max = (size_t) self->config->api_page_size;
    size_t count = 0;
    int64_t *flids = (int64_t *) calloc (max, sizeof *flids);
    int64_t *versions = (int64_t *) calloc (max, sizeof *versions);
    mx_flightread_filter_t filter = { .day_from = stream->from, .day_to = stream->to, .changed_since = -1 };
    char *error = NULL;
    if (!flids || !versions
    ||  mx_flightread_list (self->pg, &filter, stream->after, max, flids, versions, &count, &error))
        s_failed (self, answer, error ? error : strdup ("out of memory"));
    else
    if (s_render_docs (self, flids, versions, count, &stream->sent, &out, answer) == 0 && count)
        stream->after = flids [count - 1];
    free (flids);
    free (versions);
    if (!answer->status && count < max)
        s_text_puts (&out, "]}");
    if (!answer->status && out.failed)
        s_error (answer, 503, "unavailable", "out of memory: retry later");
    *text = out.data;
    return answer->status ? -1 : count == max ? 1 : 0;
}

//  Sends the stream's next piece. A failure ends the document with the
//  error object as its last member, and the response is cut short (see
//  docs/api/openapi.json). True while the stream goes on.
static bool
s_stream_send (s_reader_t *self, s_stream_t *stream)
{
    s_answer_t answer = { 0 };
    char *text = NULL;
    if (s_page_hook)
        s_page_hook ();
    int state = s_stream_piece (self, stream, "", &text, &answer);
    if (state == -1) {
        //  What was rendered of a failed page is dropped: the client gets
        //  whole documents only.
        free (text);
        text = zsys_sprintf ("],%s", answer.body + 1);
    }
    mx_cmd_send (self->pipe, MX_CMD_API_CHUNK, stream->tag, state, text ? text : "");
    free (text);
    free (answer.body);
    if (state != 1)
        mx_api_reader_count (state == 0 ? "ok" : "unavailable");
    return state == 1;
}

//  The current operating window, streamed page by page (no statement holds
//  more than msgx.api.page-size flights, nor does memory). The first page
//  is read before anything is answered, so a database that fails at once
//  gets a plain 503. True when the stream has begun: its first API_CHUNK
//  went in place of API_ANSWER (and the outcome is counted at its end).
static bool
s_all_flights (s_reader_t *self, uint64_t tag, json_t *args, int64_t now_ms, s_answer_t *answer)
{
    static const char *const known [] = { NULL };
    if (!s_known_args (args, known, answer) || !s_ready (self, answer))
        return false;
    if (zlistx_size (self->streams) >= S_STREAMS_MAX) {
        s_error (answer, 503, "unavailable", "busy: %d windows are being sent already, retry later",
                 S_STREAMS_MAX);
        return false;
    }
    s_stream_t *stream = (s_stream_t *) calloc (1, sizeof *stream);
    if (!stream) {
        s_error (answer, 503, "unavailable", "out of memory: retry later");
        return false;
    }
    stream->tag = tag;
    int days = (int) self->config->api_window_days;
    char *error = NULL;
    if (mx_flightread_day (self->pg, now_ms, self->config->operation_day_zone, -days, stream->from, &error)
    ||  mx_flightread_day (self->pg, now_ms, self->config->operation_day_zone, days, stream->to, &error)) {
        s_failed (self, answer, error);
        free (stream);
        return false;
    }
    char *head = zsys_sprintf ("{\"from\":\"%s\",\"to\":\"%s\",\"flights\":[", stream->from, stream->to);
    char *text = NULL;
    int state = s_stream_piece (self, stream, head, &text, answer);
    free (head);
    if (state == -1) {
        free (text);
        free (stream);
        return false;
    }
    mx_cmd_send (self->pipe, MX_CMD_API_CHUNK, tag, state, text ? text : "");
    free (text);
    if (state == 1)
        zlistx_add_end (self->streams, stream);
    else {
        mx_api_reader_count ("ok");
        free (stream);
    }
    return true;
}

static void
s_stream_destroy (void **item)
{
    free (*item);
    *item = NULL;
}

//  API_MORE: the next piece of a stream, or the stream dropped.
static void
s_more (s_reader_t *self, uint64_t tag, bool more)
{
    s_stream_t *stream = (s_stream_t *) zlistx_first (self->streams);
    while (stream && stream->tag != tag)
        stream = (s_stream_t *) zlistx_next (self->streams);
    if (!stream)
        return;                         //  ended meanwhile
    if (!more) {
        //  The client left before the end (or asked HEAD): nothing failed here.
        mx_api_reader_count ("ok");
        zlistx_delete (self->streams, zlistx_cursor (self->streams));
        return;
    }
    if (!s_stream_send (self, stream))
        zlistx_delete (self->streams, zlistx_cursor (self->streams));
}

static void
s_reference (s_reader_t *self, const char *list, json_t *args, s_answer_t *answer)
{
    static const char *const known [] = { NULL };
    if (!s_known_args (args, known, answer))
        return;
    size_t length = strlen (list);
    bool valid = length > 0 && length <= 32;
    for (const char *scan = list; *scan && valid; scan++)
        valid = isalnum ((unsigned char) *scan) || *scan == '_';
    if (!valid) {
        s_error (answer, 400, "bad_list", "reference list '%.40s' is not a list name (letters, digits, _)", list);
        return;
    }
    if (!s_ready (self, answer))
        return;
    char *entries = NULL;
    int64_t count = 0;
    char *error = NULL;
    if (mx_flightread_reference (self->pg, list, &entries, &count, &error)) {
        s_failed (self, answer, error);
        return;
    }
    if (count == 0) {
        free (entries);
        s_error (answer, 404, "no_such_list", "no reference list '%s' (or it holds no entry)", list);
        return;
    }
    json_t *parsed = json_loads (entries, 0, NULL);
    free (entries);
    json_t *body = json_pack ("{s:s,s:o?}", "list", list, "entries", parsed);
    answer->body = json_dumps (body, JSON_COMPACT);
    json_decref (body);
    answer->status = 200;
}

//  ---------------------------------------------------------------------
//  Dispatch

static const char *
s_outcome_of (const s_answer_t *answer)
{
    switch (answer->status) {
        case 200: return "ok";
        case 304: return "not_modified";
        case 404: return "not_found";
        case 503: return "unavailable";
        default:
            return answer->body && strstr (answer->body, "\"over_limit\"") ? "over_limit" : "bad_request";
    }
}

//  Counts, logs a refusal, sends the answer and frees its body.
static void
s_reply (s_reader_t *self, const mx_cmd_API_GET_t *get, s_answer_t *answer)
{
    mx_api_reader_count (s_outcome_of (answer));
    if (answer->status != 200 && answer->status != 304) {
        json_t *fields = json_pack ("{s:i,s:s}", "status", answer->status, "path", get->path);
        mx_log_emit (MX_LOG_INFO, self->args->name, fields, "read API refused %s with %d", get->path,
                     answer->status);
    }
    mx_cmd_send (self->pipe, MX_CMD_API_ANSWER, get->tag, answer->status, answer->etag,
                 answer->body ? answer->body : "");
    free (answer->body);
    answer->body = NULL;
}

static void
s_get (s_reader_t *self, mx_cmd_API_GET_t *get)
{
    s_answer_t answer = { 0 };
    json_t *args = json_loads (get->args, 0, NULL);
    if (!json_is_object (args)) {
        json_decref (args);
        args = json_object ();
    }
    const char *path = get->path;
    size_t prefix = strlen (S_PATH_FLIGHTS "/");
    if (streq (path, S_PATH_FLIGHTS))
        s_flights (self, args, &answer);
    else
    if (strncmp (path, S_PATH_FLIGHTS "/", prefix) == 0) {
        static const char *const known [] = { NULL };
        if (s_known_args (args, known, &answer))
            s_flight_batch (self, &get, 1, &answer);
    }
    else
    if (streq (path, S_PATH_ALL)) {
        if (s_all_flights (self, get->tag, args, (int64_t) get->now, &answer)) {
            json_decref (args);
            return;                     //  streamed: counted at its end
        }
    }
    else
    if (strncmp (path, S_PATH_REFERENCE, strlen (S_PATH_REFERENCE)) == 0)
        s_reference (self, path + strlen (S_PATH_REFERENCE), args, &answer);
    else
        s_error (&answer, 404, "no_such_path", "no such path '%.128s': the read API serves GET "
                 S_PATH_FLIGHTS "/{flid}, " S_PATH_FLIGHTS "?day=YYYY-MM-DD, " S_PATH_ALL
                 " and " S_PATH_REFERENCE "{list}", path);
    json_decref (args);
    s_reply (self, get, &answer);
}

static bool
    s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest);

//  One GET /flights/{flid} without parameters: what a batch is made of.
static bool
s_one_flight (const mx_cmd_API_GET_t *get)
{
    return strncmp (get->path, S_PATH_FLIGHTS "/", strlen (S_PATH_FLIGHTS "/")) == 0
        && streq (get->args, "{}");
}

//  A request for one flight, and those that queued up behind it on the
//  pipe meanwhile (up to S_BATCH_MAX): one statement reads them all, so a
//  burst costs one round trip to PostgreSQL instead of one each. Answered
//  in the order they came, as http expects. The first command that is not
//  such a request ends the batch and is handled right after it. False
//  when the actor must stop.
static bool
s_get_batch (s_reader_t *self, mx_cmd_API_GET_t *get)
{
    mx_cmd_API_GET_t taken [S_BATCH_MAX];
    mx_cmd_API_GET_t *batch [S_BATCH_MAX] = { get };
    size_t count = 1;
    mx_cmd_t pending_cmd = MX_CMD_UNKNOWN;
    zmsg_t *pending = NULL;             //  the command that ended the batch
    bool other_get = false, interrupted = false;
    while (count < S_BATCH_MAX && (zsock_events (self->pipe) & ZMQ_POLLIN)) {
        zmsg_t *rest = NULL;
        mx_cmd_t next = mx_cmd_recv (self->pipe, &rest);
        if (!rest) {
            interrupted = true;
            break;
        }
        if (next != MX_CMD_API_GET) {
            pending_cmd = next;
            pending = rest;
            break;
        }
        mx_cmd_API_GET_take (&rest, &taken [count]);
        if (!s_one_flight (&taken [count])) {
            other_get = true;
            break;
        }
        batch [count] = &taken [count];
        count++;
    }
    s_answer_t answers [S_BATCH_MAX];
    memset (answers, 0, sizeof answers);
    s_flight_batch (self, batch, count, answers);
    for (size_t i = 0; i < count; i++) {
        s_reply (self, batch [i], &answers [i]);
        if (i > 0)
            mx_cmd_API_GET_free (batch [i]);
    }
    if (other_get) {
        s_get (self, &taken [count]);
        mx_cmd_API_GET_free (&taken [count]);
    }
    if (interrupted)
        return false;
    if (!pending)
        return true;
    if (pending_cmd == MX_CMD_TERM) {
        mx_cmd_done (&pending);
        return false;
    }
    return s_command (self, pending_cmd, pending);
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_reader_t *self = (s_reader_t *) self_;
    if (cmd == MX_CMD_API_MORE) {
        mx_cmd_API_MORE_t more;
        mx_cmd_API_MORE_take (&rest, &more);
        s_more (self, more.tag, more.more != 0);
        mx_cmd_API_MORE_free (&more);
        return true;
    }
    assert (cmd == MX_CMD_API_GET);
    mx_cmd_API_GET_t get;
    mx_cmd_API_GET_take (&rest, &get);
    bool running = true;
    if (s_one_flight (&get))
        running = s_get_batch (self, &get);
    else
        s_get (self, &get);
    mx_cmd_API_GET_free (&get);
    return running;
}

void
mx_api_reader_actor (zsock_t *pipe, void *args)
{
    s_reader_t self_s = { 0 };
    s_reader_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_api_reader_args_t *) args;
    self->config = self->args->config;
    self->streams = zlistx_new ();
    zlistx_set_destructor (self->streams, s_stream_destroy);
    mx_api_reader_nice (self->config, self->args->name, "reader");
    mx_actor_ops_t ops = { .command = s_command };
    mx_actor_run (pipe, NULL, &ops, self);
    zlistx_destroy (&self->streams);
    free (self->doc.data);
    mx_pg_disconnect (&self->pg);
    mx_tz_destroy (&self->zone);
}
