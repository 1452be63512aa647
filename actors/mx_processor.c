/*  mx_processor - see mx_processor.h.

    A PROCESS for the FIFO head opens one PostgreSQL transaction. The head
    and then each following ready message (PENDING, <= W, in msg_id order,
    up to msgx.pipeline.process-batch) is applied inside its own SAVEPOINT,
    its identity bound just before it. A message whose business part fails
    rolls back to its savepoint, records FAILED and ends the batch; a
    failure of the transaction itself rolls everything back, leaving every
    message as it was. So any crash point leaves exactly what processing
    one at a time would (SPEC §3.3).

    Outcomes are written where the message is held, once: a business
    success as flight changes + outbox events + SUCCEEDED + backfill
    intent; a non-business terminal as one UPDATE (state + intent); a
    failed attempt with its backoff.
*/
#include "mx_processor.h"

#include <assert.h>
#include <malloc.h>

#include "mx_apply.h"
#include "mx_bulk.h"
#include "mx_flight.h"
#include "mx_flight_repo.h"
#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_mailbox.h"
#include "mx_rawstore.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_requests.h"
#include "mx_requests_actor.h"
#include "mx_sis.h"
#include "mx_sis_body.h"
#include "mx_tz.h"

#define ACTOR "processor"

typedef struct s_ahead_t s_ahead_t;

typedef struct {
    zsock_t *pipe;
    zsock_t *data;              //  PAIR from the pump
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    PGconn *pg;
    mx_mailbox_t *mailbox;
    mx_tz_t *zone;
    uint64_t processed;
    uint64_t transactions;
    char current_type [16];     //  TYPE of the message in hand, "-" before decoding
    zhashx_t *flights;          //  flid -> mx_flight_t as committed by a batch of ours
    zlistx_t *flights_owed;     //  flight states of the open batch, for `flights` at commit
    s_ahead_t *ahead;           //  the next messages, decoded
    size_t untrimmed;           //  bytes of text decoded since freed memory was last given back
    bool large;                 //  a message of 1 MiB or more was decoded: a new mailbox connection next
    size_t batch_hint;          //  after a batch cut by batch-bytes: ask for about this many, 0 = all
    int64_t replied_at;         //  zclock_usecs of the last PROCESSED, for the debug log
    mx_text_t doc_msg;          //  a change's documents, the buffers kept from one to the next
    mx_text_t doc_state;
    zhashx_t *doc_stash;        //  flid -> s_stashed_t: the open batch's last state text per flight
} s_processor_t;

static mx_processor_fault_fn *s_fault_hook;

void
mx_processor_set_fault_hook (mx_processor_fault_fn *hook)
{
    s_fault_hook = hook;
}

//  Decoding leaves freed memory behind in the allocator (the texts, the
//  parsed trees: some 30 times their size, and what the batch built from
//  them), in pages that are partly used again and never go back to the
//  system on their own: a long drain's RSS crept up by some 10 MiB over
//  the live heap. After a batch that decoded this much text (one large
//  message, or about one full batch of small ones) it is given back.
#define S_TRIM_AFTER_BYTES ((size_t) 1 << 20)

static void
s_decode (s_processor_t *self, const mx_apply_rules_t *rules, mx_apply_msg_t *m, bool present, const char *xml,
          size_t size)
{
    if (s_fault_hook && xml)
        s_fault_hook (xml, size);
    if (xml)
        self->untrimmed += size;
    if (xml && size >= S_TRIM_AFTER_BYTES)
        self->large = true;
    mx_apply_decode (rules, m, present, xml, size);
}

//  Flights kept between batches; past this the whole cache starts again.
#define S_FLIGHTS_KEPT 8192

//  What happened to one message, as far as the transaction goes.
typedef enum {
    S_DONE,                     //  terminal (SUCCEEDED / SKIPPED / DEAD) recorded
    S_RETRY,                    //  FAILED (or DEAD at the limit) recorded: the batch ends
    S_BROKEN                    //  the transaction is unusable: roll the batch back
} s_step_t;

typedef struct {
    s_step_t step;
    mx_state_t state;
} s_result_t;

//  What the lifecycle rules (domain/mx_apply) read of the configuration.
static mx_apply_rules_t
s_rules (const s_processor_t *self)
{
    const mx_config_t *config = self->config;
    return (mx_apply_rules_t) {
        .zone = self->zone, .cutoff_hour = (int) config->operation_day_cutoff_hour,
        .max_attempts = (int) config->pipeline_max_attempts,
        .max_bytes = (size_t) config->codec_max_message_bytes,
        .ignore_types = config->pipeline_ignore_types.items,
        .ignore_count = config->pipeline_ignore_types.count,
        .limits = mx_sis_limits (config),
        .identity_include_day = config->identity_include_day_boundary
    };
}

//  ---------------------------------------------------------------------
//  Recording outcomes, message by message

static s_result_t
s_broken (int64_t msg_id, const char *what, char *error)
{
    mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:I,s:s}", "msg_id", (json_int_t) msg_id, "error_class", "INFRA"),
                 "%s for %" PRId64 ": %s; the batch rolls back", what, msg_id, error ? error : "?");
    free (error);
    return (s_result_t) { S_BROKEN, MX_STATE_PENDING };
}

//  A terminal: one UPDATE, state + intent.
static s_result_t
s_finish (s_processor_t *self, int64_t msg_id, const mx_outcome_t *outcome)
{
    char *error = NULL;
    mx_state_t state = outcome->state;
    mx_error_class_t error_class = outcome->error_class;
    const char *text = outcome->text, *detail = outcome->detail;
    if (mx_procstate_finish (self->pg, msg_id, state, error_class, text, detail,
                             mx_clock_now (self->clock), &error) < 0)
        return s_broken (msg_id, "cannot record the outcome", error);
    mx_metrics_add (mx_processor_messages (self->current_type, mx_state_name (state)), 1);
    if (state == MX_STATE_DEAD)
        mx_metrics_add (mx_processor_messages_dead (mx_error_class_name (error_class)), 1);
    json_t *fields = json_pack ("{s:I,s:s}", "msg_id", (json_int_t) msg_id, "state", mx_state_name (state));
    if (error_class != MX_ERR_NONE)
        json_object_set_new (fields, "error_class", json_string (mx_error_class_name (error_class)));
    mx_log_emit (error_class != MX_ERR_NONE ? MX_LOG_WARN : MX_LOG_DEBUG, ACTOR, fields, "%" PRId64 " %s%s%s",
                 msg_id, mx_state_name (state), detail || text ? ": " : "", detail ? detail : text ? text : "");
    return (s_result_t) { S_DONE, state };
}

//  A failed attempt: backoff, or DEAD(EXHAUSTED) at the limit.
static s_result_t
s_fail (s_processor_t *self, int64_t msg_id, mx_error_class_t error_class, const char *text)
{
    char *error = NULL;
    bool dead = false;
    const mx_config_t *config = self->config;
    if (mx_procstate_fail (self->pg, msg_id, error_class, text, mx_clock_now (self->clock),
                           (int) config->pipeline_max_attempts, config->pipeline_backoff_ms.items,
                           config->pipeline_backoff_ms.count, config->pipeline_backoff_cap_ms,
                           &dead, &error) < 0)
        return s_broken (msg_id, "cannot record a failed attempt", error);
    mx_metrics_add (mx_processor_messages_failed (mx_error_class_name (error_class)), 1);
    if (dead) {
        mx_metrics_add (mx_processor_messages (self->current_type, "DEAD"), 1);
        mx_metrics_add (mx_processor_messages_dead ("EXHAUSTED"), 1);
    }
    json_t *fields = json_pack ("{s:I,s:s,s:s}", "msg_id", (json_int_t) msg_id,
                                "error_class", dead ? "EXHAUSTED" : mx_error_class_name (error_class),
                                "state", dead ? "DEAD" : "FAILED");
    mx_log_emit (MX_LOG_WARN, ACTOR, fields, "%" PRId64 " %s: %s: %s", msg_id,
                 dead ? "DEAD (attempts exhausted)" : "FAILED", mx_error_class_name (error_class), text);
    return (s_result_t) { S_RETRY, dead ? MX_STATE_DEAD : MX_STATE_FAILED };
}

static s_result_t
s_record (s_processor_t *self, const mx_apply_msg_t *m)
{
    if (m->outcome.state == MX_STATE_FAILED)
        return s_fail (self, m->msg_id, m->outcome.error_class, m->outcome.text);
    return s_finish (self, m->msg_id, &m->outcome);
}

static int
s_sql (s_processor_t *self, const char *sql, char **error)
{
    return mx_pg_exec (self->pg, sql, 0, NULL, NULL, error);
}

//  ---------------------------------------------------------------------
//  Load and write: the same steps for a batch and for one message

//  The messages after a full batch, read and decoded while its states are
//  written and committed and while the pump hands over the next head:
//  under a backlog the next batch is exactly those, and their decoding
//  then costs the chain nothing.
typedef struct {
    mx_apply_msg_t m;
    const char *xml;            //  from the range read (owned by the rows array)
    size_t size;
    bool present;
    bool stop;                  //  needs the message-by-message path
} s_item_t;

struct s_ahead_t {
    int64_t after;              //  the rows read come after this id
    int64_t until;              //  ... and before this one (the byte budget may stop early)
    int64_t read_at;            //  zclock_mono
    mx_mailbox_text_t *raw;
    size_t raw_count;
    s_item_t *items;            //  one per raw row
    size_t decoded;             //  items [0, decoded) are
};

//  Past this age a read-ahead is not used (an operator may have changed
//  the mailbox meanwhile).
#define S_AHEAD_FRESH_MS 1000

static void
s_flight_free (void **item)
{
    mx_flight_destroy ((mx_flight_t **) item);
}

//  The batch committed: its flight states are what is stored now.
static void
s_flights_committed (s_processor_t *self)
{
    if (zhashx_size (self->flights) + zlistx_size (self->flights_owed) > S_FLIGHTS_KEPT)
        zhashx_purge (self->flights);
    mx_flight_t *flight;
    while ((flight = (mx_flight_t *) zlistx_detach (self->flights_owed, NULL))) {
        char key [24];
        snprintf (key, sizeof key, "%" PRId64, flight->flid);
        zhashx_update (self->flights, key, flight);
    }
}

//  The read API's cache around the batch's commit (mx_doc_cache.h): its
//  flights are held off before the COMMIT and invalidated once its
//  outcome is known (a failed commit's too: it may have happened), before
//  anything downstream hears of the batch.
typedef struct {
    int64_t *flids;
    size_t count;
    uint64_t token;             //  of the write (mx_doc_cache_write_begin)
    bool blind;                 //  no memory to name them: the cache is off meanwhile
} s_doc_write_t;

//  The state text of a flight's last change in the open batch, as written
//  for KAFKA:schd: put in the cache after the commit instead of rendered
//  again, when the committed state is that change's (the same version).
typedef struct {
    int64_t version;
    mx_text_t text;
} s_stashed_t;

static void
s_stashed_free (void **item)
{
    s_stashed_t *stashed = (s_stashed_t *) *item;
    if (stashed)
        free (stashed->text.data);
    free (stashed);
    *item = NULL;
}

//  A change's state text (self->doc_state) for the cache, while it is on.
static void
s_doc_stash (s_processor_t *self, int64_t flid, int64_t version)
{
    if (!mx_doc_cache_enabled (self->args->doc_cache))
        return;
    char key [24];
    snprintf (key, sizeof key, "%" PRId64, flid);
    s_stashed_t *stashed = (s_stashed_t *) zhashx_lookup (self->doc_stash, key);
    if (!stashed) {
        stashed = (s_stashed_t *) calloc (1, sizeof *stashed);
        if (!stashed)
            return;                     //  rendered again at the end
        zhashx_insert (self->doc_stash, key, stashed);
    }
    stashed->version = version;
    mx_text_reset (&stashed->text);
    mx_text_append (&stashed->text, self->doc_state.data, self->doc_state.size);
}

static void
s_doc_write_begin (s_processor_t *self, s_doc_write_t *write)
{
    *write = (s_doc_write_t) { 0 };
    mx_doc_cache_t *cache = self->args->doc_cache;
    size_t count = zlistx_size (self->flights_owed);
    if (!cache || count == 0)
        return;
    write->flids = (int64_t *) malloc (count * sizeof *write->flids);
    if (!write->flids) {
        *write = (s_doc_write_t) { .blind = true };
        mx_doc_cache_disable (cache);
        return;
    }
    for (mx_flight_t *flight = (mx_flight_t *) zlistx_first (self->flights_owed); flight;
         flight = (mx_flight_t *) zlistx_next (self->flights_owed))
        write->flids [write->count++] = flight->flid;
    write->token = mx_doc_cache_write_begin (cache, write->flids, write->count, NULL);
}

//  Ends the write. When it committed, every flight of the batch gets its
//  new document in the cache (the committed states, in self->flights by
//  now), stored by the write's end itself: the flights that change are
//  those of the operating window, the ones readers ask for, and a read of
//  them under a drain is then a hit instead of a wait for PostgreSQL
//  behind the drain; a read that came while the write was under way waits
//  for its end and finds the document (mx_doc_cache_await). The cache's
//  bounds and its LRU order keep what is written or read most recently.
//  The document is the KAFKA:schd text of the flight's last change when
//  that change is the committed state (a change undone by a savepoint
//  leaves a version the flight does not have), else rendered into the
//  stash: the same bytes the reader renders (test_flight checks the text
//  against json_dumps of the document).
static void
s_doc_write_end (s_processor_t *self, s_doc_write_t *write, bool committed)
{
    mx_doc_cache_t *cache = self->args->doc_cache;
    if (write->blind) {
        mx_doc_cache_enable (cache);
        zhashx_purge (self->doc_stash);
        *write = (s_doc_write_t) { 0 };
        return;
    }
    mx_doc_cache_doc_t *docs = committed && self->zone && write->count
                             ? (mx_doc_cache_doc_t *) calloc (write->count, sizeof *docs) : NULL;
    size_t doc_count = 0;
    for (size_t i = 0; docs && i < write->count; i++) {
        char key [24];
        snprintf (key, sizeof key, "%" PRId64, write->flids [i]);
        const mx_flight_t *flight = (const mx_flight_t *) zhashx_lookup (self->flights, key);
        if (!flight)
            continue;
        s_stashed_t *stashed = (s_stashed_t *) zhashx_lookup (self->doc_stash, key);
        if (!stashed || stashed->version != flight->state_version) {
            if (!stashed && (stashed = (s_stashed_t *) calloc (1, sizeof *stashed)))
                zhashx_insert (self->doc_stash, key, stashed);
            if (!stashed)
                continue;               //  out of memory: a miss, read again
            stashed->version = flight->state_version;
            mx_flight_state_text_into (flight, self->zone, &stashed->text);
        }
        docs [doc_count++] = (mx_doc_cache_doc_t) { flight->flid, flight->state_version,
                                                    stashed->text.data, stashed->text.size };
    }
    mx_doc_cache_write_end (cache, write->token, write->flids, write->count, docs, doc_count);
    free (docs);
    zhashx_purge (self->doc_stash);
    free (write->flids);
    *write = (s_doc_write_t) { 0 };
}

//  Locks every flight of the set and loads them in one query each: whole
//  only those whose stored state is not the one a batch of ours committed
//  last (state_version and last_msg_id tell: every stored change bumps
//  the version).
static int
s_load_flights (s_processor_t *self, mx_flightset_t *flights, char **error)
{
    size_t unique = mx_flightset_size (flights);
    if (unique == 0)
        return 0;
    mx_flight_slot_t **slots = (mx_flight_slot_t **) calloc (unique + 1, sizeof (mx_flight_slot_t *));
    int64_t *flids = (int64_t *) calloc (unique + 1, sizeof (int64_t));
    int64_t *versions = (int64_t *) calloc (unique + 1, sizeof (int64_t));
    int64_t *last_msg_ids = (int64_t *) calloc (unique + 1, sizeof (int64_t));
    int64_t *missed = (int64_t *) calloc (unique + 1, sizeof (int64_t));
    size_t f = 0, misses = 0;
    for (mx_flight_slot_t *slot = mx_flightset_first (flights); slot; slot = mx_flightset_next (flights)) {
        slots [f] = slot;
        flids [f++] = slot->flid;
    }
    int rc = mx_flight_repo_lock (self->pg, flids, unique, versions, last_msg_ids, error);
    for (f = 0; f < unique && rc == 0; f++) {
        if (versions [f] < 0)
            continue;               //  no such flight
        char key [24];
        snprintf (key, sizeof key, "%" PRId64, flids [f]);
        const mx_flight_t *kept = (const mx_flight_t *) zhashx_lookup (self->flights, key);
        //  Lent: the kept states change only once the batch committed,
        //  after its flight set is gone.
        if (kept && kept->state_version == versions [f] && kept->last_msg_id == last_msg_ids [f])
            mx_flightset_load_kept (slots [f], kept);
        else
            missed [misses++] = flids [f];
    }
    mx_flight_t **read = (mx_flight_t **) calloc (misses + 1, sizeof (mx_flight_t *));
    if (rc == 0 && misses)
        rc = mx_flight_repo_load (self->pg, missed, misses, true, read, error);
    for (size_t m = 0; m < misses; m++) {
        if (rc == 0)
            mx_flightset_load (mx_flightset_get (flights, missed [m]), read [m]);
        else
            mx_flight_destroy (&read [m]);
    }
    free (read);
    free (missed);
    free (versions);
    free (last_msg_ids);
    free (flids);
    free (slots);
    return rc;
}

//  Adds the flights a message reads to the set.
static void
s_want_flights (mx_flightset_t *flights, const mx_apply_msg_t *m)
{
    size_t count = mx_apply_flight_count (m);
    for (size_t i = 0; i < count; i++)
        mx_flightset_add (flights, mx_apply_flight_id (m, i));
}

//  A flight's newest state in the open COPY, for its one KAFKA:schd event.
//  The compacted topic carries the latest state of a flight, not every
//  step (docs/consumers.md), and the events of one transaction become
//  visible together, so the dispatcher would merge a flight's earlier
//  states of the batch away unsent: they are not written at all.
typedef struct {
    int64_t flid;
    int64_t version;
    int64_t msg_id;
    bool tombstone;
    mx_text_t state;
} s_schd_t;

static void
s_schd_free (void **item)
{
    s_schd_t *schd = (s_schd_t *) *item;
    if (schd)
        free (schd->state.data);
    free (schd);
    *item = NULL;
}

//  The events of the messages applied together: each change's KAFKA:msg
//  event streamed into the outbox COPY in order, and each changed flight's
//  KAFKA:schd event at its newest state at the end.
typedef struct {
    s_processor_t *self;
    mx_bulk_copy_t *copy;
    zhashx_t *schd;             //  flid -> s_schd_t, owned
    zlistx_t *schd_order;       //  s_schd_t *, in the order the flights first changed
} s_events_t;

static void
s_change_events (void *arg, const mx_change_t *change)
{
    s_events_t *events = (s_events_t *) arg;
    s_processor_t *self = events->self;
    const mx_sis_meta_t *meta = change->meta;
    const mx_flight_t *after = change->after;
    mx_event_meta_t event = {
        .msg_id = change->msg_id, .type = meta->type, .styp = meta->styp, .seqn = meta->seqn, .dttm = meta->dttm
    };
    mx_flight_event_texts_into (after, &event, change->changed, self->zone, &self->doc_msg, &self->doc_state);
    s_doc_stash (self, after->flid, after->state_version);
    mx_event_type_t type = change->tombstone ? MX_EVENT_TOMBSTONE : MX_EVENT_UPSERT;
    mx_bulk_event_t msg_event = { MX_TARGET_MSG, type, after->flid, after->state_version, change->msg_id,
                                  self->doc_msg.data };
    mx_bulk_events_put (events->copy, &msg_event);
    char key [24];
    snprintf (key, sizeof key, "%" PRId64, after->flid);
    s_schd_t *schd = (s_schd_t *) zhashx_lookup (events->schd, key);
    if (!schd) {
        schd = (s_schd_t *) calloc (1, sizeof *schd);
        assert (schd);
        schd->flid = after->flid;
        zhashx_insert (events->schd, key, schd);
        zlistx_add_end (events->schd_order, schd);
    }
    schd->version = after->state_version;
    schd->msg_id = change->msg_id;
    schd->tombstone = change->tombstone;
    mx_text_reset (&schd->state);
    if (!change->tombstone)
        mx_text_append (&schd->state, self->doc_state.data, self->doc_state.size);
}

//  Each changed flight's KAFKA:schd event, at its newest state.
static void
s_schd_events (s_events_t *events)
{
    for (const s_schd_t *schd = (const s_schd_t *) zlistx_first (events->schd_order); schd;
         schd = (const s_schd_t *) zlistx_next (events->schd_order)) {
        mx_bulk_event_t event = { MX_TARGET_SCHD, schd->tombstone ? MX_EVENT_TOMBSTONE : MX_EVENT_UPSERT,
                                  schd->flid, schd->version, schd->msg_id,
                                  schd->tombstone ? NULL : schd->state.data };
        mx_bulk_events_put (events->copy, &event);
    }
}

//  Applies messages [0, count) in order onto the loaded flights, streaming
//  their events into one COPY as they come, so that PostgreSQL stores the
//  first while the next are computed.
static int
s_apply (s_processor_t *self, mx_apply_msg_t **messages, size_t count, mx_flightset_t *flights,
         int64_t now, char **error)
{
    size_t most = 0;
    for (size_t i = 0; i < count; i++)
        most += mx_apply_most_events (messages [i]);
    s_events_t events = { self, NULL, zhashx_new (), zlistx_new () };
    assert (events.schd && events.schd_order);
    zhashx_set_destructor (events.schd, s_schd_free);
    int rc = 0;
    if (most && mx_bulk_events_open (self->pg, most, now, &events.copy, error))
        rc = -1;
    else {
        mx_apply_rules_t rules = s_rules (self);
        for (size_t i = 0; i < count; i++)
            mx_apply_message (&rules, messages [i], flights, now, s_change_events, &events);
        if (events.copy) {
            s_schd_events (&events);
            rc = mx_bulk_events_close (&events.copy, error);
        }
    }
    zlistx_destroy (&events.schd_order);
    zhashx_destroy (&events.schd);
    return rc;
}

//  Each changed flight once, at its final state.
static int
s_write_flights (s_processor_t *self, mx_flightset_t *flights, int64_t now, char **error)
{
    size_t slot_count = mx_flightset_size (flights), changed = 0;
    const mx_flight_t **before = (const mx_flight_t **) calloc (slot_count + 1, sizeof (mx_flight_t *));
    const mx_flight_t **after = (const mx_flight_t **) calloc (slot_count + 1, sizeof (mx_flight_t *));
    for (mx_flight_slot_t *slot = mx_flightset_first (flights); slot; slot = mx_flightset_next (flights))
        if (slot->now && (!slot->before || slot->before->state_version != slot->now->state_version)) {
            before [changed] = slot->before;
            after [changed++] = slot->now;
        }
    int rc = changed ? mx_flight_repo_save_many (self->pg, before, after, changed, now, error) : 0;
    free (before);
    free (after);
    return rc;
}

static int
s_write_snapshot (s_processor_t *self, const mx_apply_msg_t *m, int64_t now, char **error)
{
    const mx_snapshot_t *snap = &m->snapshot;
    if (!snap->present || m->outcome.state != MX_STATE_SUCCEEDED)
        return 0;
    return mx_snap_log_insert (self->pg, m->msg_id, mx_sis_meta (m->msg)->styp, snap->scope_begin,
                               snap->scope_end, now, snap->inserted, snap->updated, snap->unchanged, error);
}

//  The final states go to the cache once the transaction commits.
static void
s_flights_owed (s_processor_t *self, mx_flightset_t *flights)
{
    for (mx_flight_slot_t *slot = mx_flightset_first (flights); slot; slot = mx_flightset_next (flights))
        if (slot->now) {
            zlistx_add_end (self->flights_owed, slot->now);
            slot->now = NULL;
        }
}

//  ---------------------------------------------------------------------
//  One message, inside the batch transaction: the fallback after a
//  database error and the path of what the batch cannot settle in memory.
//  The same rules and the same load and write steps, one message at a time.

//  Reference data: applied by the repository; a response closes the open
//  request of its list when it matches, the data is applied either way.
static int
s_reference (s_processor_t *self, mx_apply_msg_t *m, char **error)
{
    int changed = 0;
    int64_t now = mx_clock_now (self->clock);
    const mx_reference_t *reference = m->reference;
    if (mx_reference_apply (self->pg, reference, m->msg_id, now, &changed, error))
        return -1;
    const char *closed = "";
    if (strcmp (reference->styp, "RESP") == 0) {
        int64_t request_id = 0;
        const char *why = NULL;
        int matched = mx_requests_match_reference_resp (self->pg, reference->rtype, mx_sis_meta (m->msg)->dttm_ms,
                                                        m->msg_id, now, &request_id, &why, error);
        if (matched < 0)
            return -1;
        if (matched)
            mx_metrics_add (mx_requests_outcome (MX_REQUEST_RQRD, "answered"), 1);
        closed = matched ? "; request closed" : "; no open request matched";
    }
    char detail [96];
    snprintf (detail, sizeof detail, "%s rows changed %d%s", reference->rtype, changed, closed);
    mx_outcome_set (&m->outcome, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, detail);
    return 0;
}

//  The business part: load, apply, write, inside the savepoint.
static int
s_business (s_processor_t *self, mx_apply_msg_t *m, mx_flightset_t *flights, char **error)
{
    int64_t now = mx_clock_now (self->clock);
    if (m->kind == MX_SIS_KIND_SCHD_RESP) {
        //  Applied only when it answers an open RQFD (degraded rule,
        //  audited); the match and the snapshot commit or roll back together.
        int64_t request_id = 0;
        const char *why = NULL;
        int matched = mx_requests_match_schedule_resp (self->pg, mx_sis_meta (m->msg)->dttm_ms, m->msg_id, now,
                                                       &request_id, &why, error);
        if (matched < 0)
            return -1;
        if (matched)
            mx_metrics_add (mx_requests_outcome (MX_REQUEST_RQFD, "answered"), 1);
        mx_apply_rules_t rules = s_rules (self);
        mx_apply_response (&rules, m, matched > 0, why);
    }
    if (m->reference && !m->outcome.decided)
        return s_reference (self, m, error);
    s_want_flights (flights, m);
    if (s_load_flights (self, flights, error) || s_apply (self, &m, 1, flights, now, error))
        return -1;
    if (m->outcome.state != MX_STATE_SUCCEEDED)
        return 0;
    return s_write_flights (self, flights, now, error) || s_write_snapshot (self, m, now, error) ? -1 : 0;
}

static s_result_t
s_dispatch (s_processor_t *self, mx_apply_msg_t *m)
{
    char *error = NULL;
    if (s_sql (self, "SAVEPOINT message", &error))
        return s_broken (m->msg_id, "cannot open a savepoint", error);
    mx_flightset_t *flights = mx_flightset_new ();
    s_result_t result;
    if (s_business (self, m, flights, &error))
        result = s_broken (m->msg_id, "cannot apply the message", error);
    else
    if (m->outcome.state == MX_STATE_SUCCEEDED) {
        result = s_finish (self, m->msg_id, &m->outcome);
        if (result.step == S_DONE)
            s_flights_owed (self, flights);
    }
    else
    if (s_sql (self, "ROLLBACK TO SAVEPOINT message", &error))
        result = s_broken (m->msg_id, "cannot roll back to the savepoint", error);
    else
        result = s_record (self, m);
    mx_flightset_destroy (&flights);
    if (result.step != S_BROKEN && s_sql (self, "RELEASE SAVEPOINT message", &error))
        return s_broken (m->msg_id, "cannot release the savepoint", error);
    return result;
}

//  Up to the identity: the row, the raw text, the envelope. Returns true
//  when the message goes on to its business part.
static bool
s_prepare_one (s_processor_t *self, mx_apply_msg_t *m, s_result_t *result)
{
    char *error = NULL;
    int64_t msg_id = m->msg_id;
    mx_apply_rules_t rules = s_rules (self);
    mx_head_t row;
    int found = mx_procstate_get (self->pg, msg_id, &row, &error);
    if (found <= 0) {
        *result = s_broken (msg_id, "cannot read its proc_state row", found < 0 ? error : strdup ("no such row"));
        return false;
    }
    if (row.state != MX_STATE_PENDING && row.state != MX_STATE_FAILED) {
        *result = (s_result_t) { S_DONE, row.state };           //  finished meanwhile
        return false;
    }
    if (mx_apply_entry (&rules, m, row.state, row.attempts)) {
        *result = s_record (self, m);
        return false;
    }
    int64_t now = mx_clock_now (self->clock);
    if (row.processing_started_at < 0 && mx_procstate_mark_started (self->pg, msg_id, now, &error)) {
        *result = s_broken (msg_id, "cannot mark it started", error);
        return false;
    }
    char *xml = NULL;
    size_t size = 0;
    mx_raw_source_t source;
    int raw = mx_rawstore_load (self->pg, self->mailbox, msg_id, rules.max_bytes, &xml, &size, &source, &error);
    if (raw < 0) {
        char *text = zsys_sprintf ("raw text read failed: %s", error);
        free (error);
        *result = s_fail (self, msg_id, MX_ERR_INFRA, text);
        free (text);
        return false;
    }
    if (source == MX_RAW_MAILBOX && xml && self->config->pipeline_raw_retention > 0
    &&  mx_rawstore_keep (self->pg, msg_id, xml, size, now, &error)) {
        free (xml);
        *result = s_broken (msg_id, "cannot keep the raw text", error);
        return false;
    }
    s_decode (self, &rules, m, raw > 0, xml, size);
    free (xml);
    if (!m->msg) {
        *result = s_record (self, m);
        return false;
    }
    const mx_sis_meta_t *meta = mx_sis_meta (m->msg);
    snprintf (self->current_type, sizeof self->current_type, "%s", meta->type);
    if (mx_procstate_set_kind (self->pg, msg_id, meta->type, meta->styp, now, &error)) {
        *result = s_broken (msg_id, "cannot record the message kind", error);
        return false;
    }
    //  The identity is bound before the business savepoint: a rollback of
    //  the business part keeps it, so a retry is never its own duplicate.
    int64_t holder = mx_procstate_bind_identity (self->pg, msg_id, m->key, now, &error);
    if (holder < 0) {
        *result = s_broken (msg_id, "cannot bind the identity", error);
        return false;
    }
    mx_apply_identity (m, holder);
    return true;
}

static s_result_t
s_process_one (s_processor_t *self, int64_t msg_id)
{
    snprintf (self->current_type, sizeof self->current_type, "-");
    mx_apply_msg_t m = { .msg_id = msg_id };
    s_result_t result;
    if (s_prepare_one (self, &m, &result))
        result = m.outcome.decided && m.outcome.state != MX_STATE_FAILED ? s_record (self, &m)
                                                                         : s_dispatch (self, &m);
    mx_apply_msg_reset (&m);
    return result;
}

//  ---------------------------------------------------------------------
//  The bulk path: a run of ordinary messages (non-business terminals,
//  FLOP/FDEL, SCHD DNLD/ADFT) decoded and applied in memory, written in a
//  handful of statements. Everything it cannot settle in memory (a CODEC
//  or UNSUPPORTED failure, reference data, SCHD DEL and RESP, unknown
//  kinds) ends the run; those go through the message-by-message path
//  after it. A database error rolls the whole batch back and it is redone
//  message by message, so the outcome is always what one-at-a-time
//  processing gives.

//  True when the batch can settle the decoded message in memory.
static bool
s_bulk_settles (const mx_apply_msg_t *m)
{
    if (m->outcome.decided)
        return m->outcome.state != MX_STATE_FAILED;
    return m->plan == MX_PLAN_FLOP || (m->plan == MX_PLAN_SCHEDULE && m->kind != MX_SIS_KIND_SCHD_RESP);
}

static void
s_item_decode (s_processor_t *self, s_item_t *item)
{
    mx_apply_rules_t rules = s_rules (self);
    s_decode (self, &rules, &item->m, item->present, item->xml, item->size);
    item->stop = !s_bulk_settles (&item->m);
}

static void
s_ahead_destroy (s_ahead_t **self_p)
{
    s_ahead_t *self = *self_p;
    if (!self)
        return;
    for (size_t r = 0; r < self->raw_count; r++) {
        if (self->items)
            mx_apply_msg_reset (&self->items [r].m);
        if (self->raw)
            free (self->raw [r].xml);
    }
    free (self->raw);
    free (self->items);
    free (self);
    *self_p = NULL;
}

//  Reads the mailbox rows after `last`, up to a batch of them.
static void
s_ahead_read (s_processor_t *self, int64_t last)
{
    s_ahead_destroy (&self->ahead);
    s_ahead_t *ahead = (s_ahead_t *) calloc (1, sizeof (s_ahead_t));
    assert (ahead);
    ahead->after = last;
    ahead->read_at = zclock_mono ();
    char *error = NULL;
    if (mx_mailbox_read_range (self->mailbox, last + 1, last + self->config->pipeline_process_batch,
                               (size_t) self->config->codec_max_message_bytes,
                               (size_t) self->config->pipeline_batch_bytes,
                               &ahead->raw, &ahead->raw_count, &ahead->until, &error)) {
        mx_debug (ACTOR, "no read-ahead after %" PRId64 ": %s", last, error);
        free (error);
        s_ahead_destroy (&ahead);
        return;
    }
    ahead->items = (s_item_t *) calloc (ahead->raw_count + 1, sizeof (s_item_t));
    assert (ahead->items);
    for (size_t r = 0; r < ahead->raw_count; r++) {
        s_item_t *item = &ahead->items [r];
        item->m.msg_id = ahead->raw [r].id;
        item->present = true;
        item->xml = ahead->raw [r].xml;
        item->size = ahead->raw [r].size;
    }
    self->ahead = ahead;
}

//  Decodes what the read-ahead holds. With `until`, stops early once that
//  connection has its result in (the states, the commit: the batch then
//  goes on at once, and the rest is decoded while the pump picks the next
//  head).
static void
s_ahead_decode (s_processor_t *self, PGconn *until)
{
    s_ahead_t *ahead = self->ahead;
    while (ahead && ahead->decoded < ahead->raw_count) {
        s_item_decode (self, &ahead->items [ahead->decoded++]);
        if (until && ahead->decoded % 16 == 0 && (!PQconsumeInput (until) || !PQisBusy (until)))
            break;
    }
}

//  How many of ids (a batch's, ascending) the read-ahead answers: those
//  before where it stopped, each of which it must hold; 0 when it does not
//  serve this batch.
static size_t
s_ahead_covers (const s_ahead_t *ahead, const int64_t *ids, size_t count)
{
    if (!ahead || zclock_mono () - ahead->read_at > S_AHEAD_FRESH_MS || ids [0] <= ahead->after)
        return 0;
    size_t r = 0, i;
    for (i = 0; i < count && ids [i] < ahead->until; i++) {
        while (r < ahead->raw_count && ahead->raw [r].id < ids [i])
            r++;
        if (r == ahead->raw_count || ahead->raw [r].id != ids [i])
            return 0;
    }
    return i;
}

//  How many of ids come before `until`.
static size_t
s_ids_before (const int64_t *ids, size_t count, int64_t until)
{
    size_t i = 0;
    while (i < count && ids [i] < until)
        i++;
    return i;
}

//  A batch in the bulk path: what it holds from read to write.
typedef struct {
    const int64_t *ids;
    size_t count;
    size_t prefix;              //  items [0, prefix) are settled in memory
    s_item_t *items;
    mx_apply_msg_t **messages;  //  &items [i].m
    int *states, *attempts;
    mx_mailbox_text_t *raw;
    size_t raw_count;
    int64_t *retained;          //  ids of the batch's range kept already, ascending
    size_t retained_count;
    s_ahead_t *ahead;           //  the read-ahead, when it holds the batch
    mx_flightset_t *flights;
    int64_t now;
    int64_t phase [9];          //  where its time goes, for the debug log (us)
} s_bulk_t;

static void
s_bulk_destroy (s_bulk_t *bulk)
{
    for (size_t i = 0; i < bulk->count; i++)
        mx_apply_msg_reset (&bulk->items [i].m);
    s_ahead_destroy (&bulk->ahead);
    for (size_t r = 0; r < bulk->raw_count; r++)
        free (bulk->raw [r].xml);
    free (bulk->raw);
    free (bulk->retained);
    free (bulk->items);
    free (bulk->messages);
    free (bulk->states);
    free (bulk->attempts);
    mx_flightset_destroy (&bulk->flights);
}

static int
s_by_id (const void *a, const void *b)
{
    int64_t x = ((const mx_mailbox_text_t *) a)->id, y = ((const mx_mailbox_text_t *) b)->id;
    return (x > y) - (x < y);
}

//  The retained copies of the batch's range: a message read again (a
//  replay) takes its text from there when the mailbox has lost the row,
//  and is not kept twice. Usually none: one probe of the primary key.
static int
s_bulk_retained (s_processor_t *self, s_bulk_t *bulk, char **error)
{
    mx_mailbox_text_t *kept = NULL;
    size_t kept_count = 0;
    if (mx_rawstore_read_range (self->pg, bulk->ids [0], bulk->ids [bulk->count - 1],
                                (size_t) self->config->codec_max_message_bytes, &kept, &kept_count, error))
        return -1;
    bulk->retained = (int64_t *) calloc (kept_count + 1, sizeof (int64_t));
    assert (bulk->retained);
    size_t added = 0, r = 0;
    for (size_t k = 0; k < kept_count; k++) {
        bulk->retained [bulk->retained_count++] = kept [k].id;
        while (r < bulk->raw_count && bulk->raw [r].id < kept [k].id)
            r++;
        if (r < bulk->raw_count && bulk->raw [r].id == kept [k].id)
            free (kept [k].xml);                //  the mailbox row says the same
        else
            kept [added++] = kept [k];
    }
    if (added) {
        bulk->raw = (mx_mailbox_text_t *) realloc (bulk->raw, (bulk->raw_count + added) * sizeof (mx_mailbox_text_t));
        assert (bulk->raw);
        memcpy (bulk->raw + bulk->raw_count, kept, added * sizeof (mx_mailbox_text_t));
        bulk->raw_count += added;
        qsort (bulk->raw, bulk->raw_count, sizeof (mx_mailbox_text_t), s_by_id);
    }
    free (kept);
    return 0;
}

//  Keeps the raw texts of the messages the batch settles that have no
//  copy yet, in one COPY (before the events' COPY on the same connection).
static int
s_bulk_keep (s_processor_t *self, s_bulk_t *bulk, char **error)
{
    if (self->config->pipeline_raw_retention <= 0 || bulk->prefix == 0)
        return 0;
    mx_mailbox_text_t *rows = (mx_mailbox_text_t *) calloc (bulk->prefix + 1, sizeof (mx_mailbox_text_t));
    assert (rows);
    size_t count = 0, k = 0;
    for (size_t i = 0; i < bulk->prefix; i++) {
        const s_item_t *item = &bulk->items [i];
        if (!item->present || !item->xml)
            continue;
        while (k < bulk->retained_count && bulk->retained [k] < item->m.msg_id)
            k++;
        if (k < bulk->retained_count && bulk->retained [k] == item->m.msg_id)
            continue;
        rows [count++] = (mx_mailbox_text_t) { item->m.msg_id, (char *) item->xml, item->size };
    }
    int rc = mx_rawstore_keep_many (self->pg, rows, count, bulk->now, error);
    free (rows);
    return rc;
}

//  The raw texts, decoded already if the read-ahead holds the batch, then
//  the retained copies of the range, and the rows' states. The byte budget
//  may shorten the batch (bulk->count): the rest comes with the next
//  PROCESS. Only a batch full by count is read ahead of: one cut by the
//  budget holds large messages, and memory comes first.
static int
s_bulk_read (s_processor_t *self, s_bulk_t *bulk, char **error)
{
    size_t covered = s_ahead_covers (self->ahead, bulk->ids, bulk->count);
    if (covered)
        s_ahead_decode (self, NULL);
    bulk->ahead = self->ahead;
    self->ahead = NULL;
    if (!covered)
        s_ahead_destroy (&bulk->ahead);
    else {
        bulk->count = covered;
        bulk->raw = bulk->ahead->raw;
        bulk->raw_count = bulk->ahead->raw_count;
        bulk->ahead->raw = NULL;
    }
    if (!bulk->ahead) {
        //  The rows' states are read while the mailbox is: for every id
        //  asked, the byte budget may cut the batch after.
        if (mx_bulk_start_send (self->pg, bulk->ids, bulk->count, error))
            return -1;
        int64_t until = 0;
        char *read_error = NULL;
        int read_rc = mx_mailbox_read_range (self->mailbox, bulk->ids [0], bulk->ids [bulk->count - 1],
                                             (size_t) self->config->codec_max_message_bytes,
                                             (size_t) self->config->pipeline_batch_bytes,
                                             &bulk->raw, &bulk->raw_count, &until, &read_error);
        //  Taken whatever the read gave: the connection is busy until then.
        if (mx_bulk_start_result (self->pg, bulk->ids, bulk->count, bulk->states, bulk->attempts, error)) {
            free (read_error);
            return -1;
        }
        if (read_rc) {
            *error = read_error;
            return -1;
        }
        bulk->count = s_ids_before (bulk->ids, bulk->count, until);
    }
    else
    if (mx_bulk_start (self->pg, bulk->ids, bulk->count, bulk->states, bulk->attempts, error))
        return -1;
    return s_bulk_retained (self, bulk, error);
}

//  Decode in order, up to the first message the bulk path cannot settle
//  in memory; bulk->prefix gets how many it can.
static void
s_bulk_decode (s_processor_t *self, s_bulk_t *bulk)
{
    mx_apply_rules_t rules = s_rules (self);
    size_t next_raw = 0, prefix;
    for (prefix = 0; prefix < bulk->count; prefix++) {
        s_item_t *item = &bulk->items [prefix];
        item->m.msg_id = bulk->ids [prefix];
        bulk->messages [prefix] = &item->m;
        int state = bulk->states [prefix];
        if (state != MX_STATE_PENDING && state != MX_STATE_FAILED)
            break;
        while (next_raw < bulk->raw_count && bulk->raw [next_raw].id < item->m.msg_id)
            next_raw++;
        if (next_raw < bulk->raw_count && bulk->raw [next_raw].id == item->m.msg_id) {
            item->present = true;
            item->xml = bulk->raw [next_raw].xml;
            item->size = bulk->raw [next_raw].size;
        }
        if (mx_apply_entry (&rules, &item->m, (mx_state_t) state, bulk->attempts [prefix]))
            continue;
        if (bulk->ahead && item->present) {
            *item = bulk->ahead->items [next_raw];
            memset (&bulk->ahead->items [next_raw], 0, sizeof (s_item_t));
        }
        else
            s_item_decode (self, item);
        if (item->stop)
            break;
    }
    bulk->prefix = prefix;
}

//  Identities, all at once, in msg_id order: a duplicate is SKIPPED
//  whatever its body says.
static int
s_bulk_identities (s_processor_t *self, s_bulk_t *bulk, char **error)
{
    size_t prefix = bulk->prefix, binds = 0;
    int64_t *bind_ids = (int64_t *) calloc (prefix + 1, sizeof (int64_t));
    const char **keys = (const char **) calloc (prefix + 1, sizeof (char *));
    mx_apply_msg_t **owners = (mx_apply_msg_t **) calloc (prefix + 1, sizeof (mx_apply_msg_t *));
    int64_t *holders = (int64_t *) calloc (prefix + 1, sizeof (int64_t));
    for (size_t i = 0; i < prefix; i++)
        if (bulk->messages [i]->msg) {
            bind_ids [binds] = bulk->messages [i]->msg_id;
            keys [binds] = bulk->messages [i]->key;
            owners [binds++] = bulk->messages [i];
        }
    int rc = binds ? mx_bulk_bind_identities (self->pg, bind_ids, keys, binds, bulk->now, holders, error) : 0;
    for (size_t b = 0; rc == 0 && b < binds; b++)
        mx_apply_identity (owners [b], holders [b]);
    free (bind_ids);
    free (keys);
    free (owners);
    free (holders);
    return rc;
}

//  Every terminal state with its intent, in one statement. A full batch
//  says a backlog: the next messages are read and decoded while the server
//  writes these states (and then commits).
static int
s_bulk_states (s_processor_t *self, s_bulk_t *bulk, char **error)
{
    size_t prefix = bulk->prefix;
    mx_bulk_terminal_t *rows = (mx_bulk_terminal_t *) calloc (prefix + 1, sizeof (mx_bulk_terminal_t));
    for (size_t i = 0; i < prefix; i++) {
        const mx_apply_msg_t *m = bulk->messages [i];
        const mx_sis_meta_t *meta = m->msg ? mx_sis_meta (m->msg) : NULL;
        rows [i] = (mx_bulk_terminal_t) {
            .msg_id = m->msg_id, .state = m->outcome.state, .error_class = m->outcome.error_class,
            .last_error = m->outcome.text, .outcome = m->outcome.detail,
            .type = meta ? meta->type : NULL, .styp = meta ? meta->styp : NULL,
            .identity_key = m->holds_key ? m->key : NULL
        };
    }
    int rc = mx_bulk_finish_send (self->pg, rows, prefix, bulk->now, error);
    if (rc == 0) {
        if (prefix == (size_t) self->config->pipeline_process_batch) {
            s_ahead_read (self, bulk->ids [prefix - 1]);
            s_ahead_decode (self, self->pg);
        }
        rc = mx_bulk_finish_result (self->pg, prefix, error);
    }
    free (rows);
    return rc;
}

//  Metrics and the WARN lines of a written batch.
static void
s_bulk_report (const s_bulk_t *bulk)
{
    for (size_t i = 0; i < bulk->prefix; i++) {
        const mx_apply_msg_t *m = bulk->messages [i];
        const char *type = m->msg ? mx_sis_meta (m->msg)->type : "-";
        mx_metrics_add (mx_processor_messages (type, mx_state_name (m->outcome.state)), 1);
    }
    for (size_t i = 0; i < bulk->prefix; i++) {
        const mx_apply_msg_t *m = bulk->messages [i];
        if (m->outcome.state != MX_STATE_DEAD)
            continue;
        const char *error_class = mx_error_class_name (m->outcome.error_class);
        mx_metrics_add (mx_processor_messages_dead (error_class), 1);
        mx_log_emit (MX_LOG_WARN, ACTOR, json_pack ("{s:I,s:s,s:s}", "msg_id", (json_int_t) m->msg_id,
                                                    "state", "DEAD", "error_class", error_class),
                     "%" PRId64 " DEAD: %s: %s", m->msg_id, error_class, m->outcome.text ? m->outcome.text : "");
    }
    const int64_t *phase = bulk->phase;
    mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:I,s:i,s:b}", "msg_id", (json_int_t) bulk->ids [0],
                                                "batch", (int) bulk->prefix, "read_ahead", bulk->ahead != NULL),
                 "bulk phases (us): read %" PRId64 " decode %" PRId64 " identities %" PRId64 " flights %" PRId64
                 " apply %" PRId64 " events after it %" PRId64 " write flights %" PRId64 " states %" PRId64,
                 phase [1] - phase [0], phase [2] - phase [1], phase [3] - phase [2], phase [4] - phase [3],
                 phase [5] - phase [4], phase [6] - phase [5], phase [7] - phase [6], phase [8] - phase [7]);
}

//  Decoded and kept (s_bulk_keep): the texts are not needed any more, and
//  the batch's memory is the decoded bodies from here on.
static void
s_bulk_release_texts (s_bulk_t *bulk)
{
    for (size_t i = 0; i < bulk->prefix; i++)
        bulk->items [i].xml = NULL;
    for (size_t r = 0; r < bulk->raw_count; r++) {
        free (bulk->raw [r].xml);
        bulk->raw [r].xml = NULL;
    }
}

//  Load, apply, write: the batch's steps after its messages are decoded.
static int
s_bulk_steps (s_processor_t *self, s_bulk_t *bulk, char **error)
{
    int64_t *phase = bulk->phase;
    if (s_bulk_identities (self, bulk, error) || s_bulk_keep (self, bulk, error))
        return -1;
    s_bulk_release_texts (bulk);
    phase [3] = zclock_usecs ();
    for (size_t i = 0; i < bulk->prefix; i++)
        s_want_flights (bulk->flights, bulk->messages [i]);
    if (s_load_flights (self, bulk->flights, error))
        return -1;
    phase [4] = zclock_usecs ();
    int rc = s_apply (self, bulk->messages, bulk->prefix, bulk->flights, bulk->now, error);
    phase [5] = phase [6] = zclock_usecs ();
    if (rc || s_write_flights (self, bulk->flights, bulk->now, error))
        return -1;
    phase [7] = zclock_usecs ();
    for (size_t i = 0; i < bulk->prefix; i++)
        if (s_write_snapshot (self, bulk->messages [i], bulk->now, error))
            return -1;
    //  Applied and written: the decoded bodies go before the next batch is
    //  read and decoded ahead (s_bulk_states).
    for (size_t i = 0; i < bulk->prefix; i++)
        mx_apply_msg_release_body (bulk->messages [i]);
    if (s_bulk_states (self, bulk, error))
        return -1;
    phase [8] = zclock_usecs ();
    return 0;
}

//  Applies ids [0..count) as far as it can; *applied gets how many
//  (a prefix). Returns -1 when the database failed (roll back).
static int
s_bulk (s_processor_t *self, const int64_t *ids, size_t count, size_t *applied)
{
    *applied = 0;
    char *error = NULL;
    s_bulk_t bulk = {
        .ids = ids, .count = count, .now = mx_clock_now (self->clock),
        .items = (s_item_t *) calloc (count + 1, sizeof (s_item_t)),
        .messages = (mx_apply_msg_t **) calloc (count + 1, sizeof (mx_apply_msg_t *)),
        .states = (int *) calloc (count + 1, sizeof (int)),
        .attempts = (int *) calloc (count + 1, sizeof (int)),
        .flights = mx_flightset_new (),
        .phase = { zclock_usecs () }
    };
    int rc = 0;
    if (s_bulk_read (self, &bulk, &error)) {
        mx_warn (ACTOR, "batch of %zu from %" PRId64 ": %s; redoing it message by message", count, ids [0], error);
        rc = -1;
    }
    else {
        //  Cut by the byte budget: the next batches ask for about as many
        //  (doubling back to process-batch), so a run of large messages is
        //  not read again and again with each batch.
        if (bulk.count < count)
            self->batch_hint = bulk.count;
        else
        if (self->batch_hint)
            self->batch_hint = 2 * self->batch_hint >= (size_t) self->config->pipeline_process_batch
                             ? 0 : 2 * self->batch_hint;
        bulk.phase [1] = zclock_usecs ();
        s_bulk_decode (self, &bulk);
        bulk.phase [2] = zclock_usecs ();
        if (bulk.prefix > 0 && s_bulk_steps (self, &bulk, &error)) {
            mx_warn (ACTOR, "writing a batch of %zu failed: %s; redoing it message by message", bulk.prefix, error);
            rc = -1;
        }
        else
        if (bulk.prefix > 0) {
            s_bulk_report (&bulk);
            s_flights_owed (self, bulk.flights);
            *applied = bulk.prefix;
        }
    }
    free (error);
    s_bulk_destroy (&bulk);
    return rc;
}

//  ---------------------------------------------------------------------
//  A batch

static int
s_pg (s_processor_t *self, char **error)
{
    if (self->pg && PQstatus (self->pg) == CONNECTION_OK && PQtransactionStatus (self->pg) == PQTRANS_IDLE)
        return 0;
    mx_pg_disconnect (&self->pg);
    self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-processor",
                              self->config->pg_statement_timeout, error);
    if (!self->pg)
        return -1;
    //  Event payloads are JSON of a few KB, compressed as they are stored:
    //  lz4 costs a fraction of the default pglz (a third of a batch's
    //  outbox insert went there). A server built without lz4 keeps pglz.
    char *refused = NULL;
    if (mx_pg_exec (self->pg, "SET default_toast_compression = 'lz4'", 0, NULL, NULL, &refused)) {
        mx_info (ACTOR, "event payloads stay compressed with pglz: %s", refused);
        free (refused);
    }
    return 0;
}

//  A batch given up while the process runs on (rolled back, or never
//  begun): its start was no crash, so its proc_start row goes.
static void
s_batch_abandoned (s_processor_t *self, int64_t journal)
{
    char *error = NULL;
    if (journal == 0)
        return;
    if (s_pg (self, &error) == 0 && mx_procstate_batch_end (self->pg, journal, &error) == 0)
        return;
    mx_warn (ACTOR, "cannot delete the start record %" PRId64 " of a batch given up: %s; its messages will count"
             " one unfinished start", journal, error);
    free (error);
}

//  Returns the head's state name for the reply, or "UNKNOWN".
static const char *
s_process_batch (s_processor_t *self, int64_t head)
{
    int64_t started = zclock_mono ();
    //  Where the time around the batch goes, for the debug log (us).
    int64_t at_start = zclock_usecs (), at_ready = 0, at_commit = 0;
    char *error = NULL;
    size_t limit = (size_t) self->config->pipeline_process_batch;
    int64_t *ids = (int64_t *) calloc (limit + 1, sizeof (int64_t));
    assert (ids);
    size_t count = 0, done = 0;
    int64_t journal = 0;
    //  The start is recorded and committed before the work: a crash or a
    //  hang during this batch leaves it behind. The batch's transaction is
    //  then open.
    if (s_pg (self, &error)
    ||  mx_procstate_batch_start (self->pg, head, ids, self->batch_hint && self->batch_hint < limit
                                                     ? self->batch_hint : limit,
                                  &count, mx_clock_now (self->clock), &journal, &error)) {
        mx_warn (ACTOR, "PostgreSQL unusable: %s", error);
        free (error);
        s_batch_abandoned (self, journal);
        free (ids);
        return "UNKNOWN";
    }
    if (count == 0) {
        ids [0] = head;         //  finished meanwhile: the one-message path says so
        count = 1;
    }
    at_ready = zclock_usecs ();
    mx_state_t head_state = MX_STATE_PENDING;
    bool broken = false;
    if (limit > 1) {
        if (s_bulk (self, ids, count, &done)) {
            //  Roll back and redo the whole batch message by message.
            zlistx_purge (self->flights_owed);
            zhashx_purge (self->doc_stash);
            char *ignored = NULL;
            mx_pg_rollback (self->pg, &ignored);
            free (ignored);
            done = 0;
            count = 1;
            if (s_pg (self, &error) || mx_pg_begin (self->pg, &error)) {
                mx_warn (ACTOR, "PostgreSQL unusable: %s", error);
                free (error);
                s_batch_abandoned (self, journal);
                free (ids);
                return "UNKNOWN";
            }
        }
        else
        if (done > 0) {
            head_state = MX_STATE_SUCCEEDED;        //  terminal, whichever
            count = done;                           //  the rest comes with the next PROCESS
        }
        else
            count = 1;          //  the head needs the message-by-message path; then back to bulk
    }
    while (done < count && !broken) {
        s_result_t outcome = s_process_one (self, ids [done]);
        if (outcome.step == S_BROKEN) {
            broken = true;
            break;
        }
        if (done == 0)
            head_state = outcome.state;
        done++;
        if (outcome.step == S_RETRY)
            break;                      //  a failed message ends the batch
    }
    int64_t last = done ? ids [done - 1] : head;
    if (broken) {
        zlistx_purge (self->flights_owed);
        zhashx_purge (self->doc_stash);
        char *ignored = NULL;
        mx_pg_rollback (self->pg, &ignored);
        free (ignored);
        s_batch_abandoned (self, journal);
        free (ids);
        return "UNKNOWN";
    }
    //  A full batch says a backlog: the next messages are read and decoded
    //  while the server commits this one.
    at_commit = zclock_usecs ();
    s_doc_write_t doc_write;
    s_doc_write_begin (self, &doc_write);
    //  The start record goes with the outcomes, in the commit's round trip.
    mx_procstate_commit_t commit;
    int commit_rc = mx_procstate_batch_commit_send (self->pg, journal, &commit, &error);
    if (commit_rc == 0) {
        if (limit > 1 && done == limit && !(self->ahead && self->ahead->after == last))
            s_ahead_read (self, last);
        s_ahead_decode (self, self->pg);
        commit_rc = mx_procstate_batch_commit_result (self->pg, &commit, &error);
    }
    if (commit_rc)
        zlistx_purge (self->flights_owed);
    else
        s_flights_committed (self);
    //  Before anything downstream hears of the batch (EVENTS_COMMITTED,
    //  the reply).
    s_doc_write_end (self, &doc_write, commit_rc == 0);
    if (commit_rc) {
        mx_warn (ACTOR, "commit of a batch of %zu failed, nothing of it stays: %s", done, error);
        free (error);
        s_batch_abandoned (self, journal);
        free (ids);
        return "UNKNOWN";
    }
    free (ids);
    //  The mailbox client's receive buffer grew to the large message (a
    //  DNLD: 1.7 MB, held for the rest of the process): a new connection
    //  for the next read lets it go.
    if (self->large) {
        self->large = false;
        mx_mailbox_release (self->mailbox);
    }
    if (self->untrimmed >= S_TRIM_AFTER_BYTES) {
        self->untrimmed = 0;
        malloc_trim (0);
    }
    self->transactions++;
    self->processed += done;
    mx_metrics_histogram_observe (mx_processor_batch_size (), (double) done);
    mx_metrics_histogram_observe (mx_processor_seconds (), (double) (zclock_mono () - started) / 1000.0);
    //  Wake delivery and backfill: the events and marks of this batch are
    //  committed now.
    mx_cmd_send (self->pipe, MX_CMD_EVENTS_COMMITTED);
    if (done > 0)
        mx_cmd_send (self->pipe, MX_CMD_MARKS_OWED, (uint64_t) head, (uint64_t) last);
    if (done > 1)
        mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:I,s:i}", "msg_id", (json_int_t) head, "batch", (int) done),
                     "applied %zu messages in one transaction (us: waited for it %" PRId64 ", begin and ready list %"
                     PRId64 ", commit and read-ahead %" PRId64 ")", done,
                     self->replied_at ? at_start - self->replied_at : 0, at_ready ? at_ready - at_start : 0,
                     zclock_usecs () - at_commit);
    return mx_state_name (head_state);
}

//  ---------------------------------------------------------------------

static void
s_handle_data (s_processor_t *self)
{
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (self->data, &rest);
    if (!rest)
        return;
    assert (cmd == MX_CMD_PROCESS);
    mx_cmd_PROCESS_t process;
    mx_cmd_PROCESS_take (&rest, &process);
    const char *state = s_process_batch (self, (int64_t) process.msg_id);
    mx_cmd_send (self->data, MX_CMD_PROCESSED, process.msg_id, process.epoch, state);
    self->replied_at = zclock_usecs ();
    s_ahead_decode (self, NULL);
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_processor_t *self = (s_processor_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            char *error = NULL;
            self->zone = mx_tz_load (self->config->operation_day_zone, &error);
            if (!self->zone) {
                char *reason = zsys_sprintf ("airport time zone: %s", error);
                mx_actor_reply_failed (self->pipe, reason);
                free (reason);
                free (error);
                break;
            }
            char endpoint [256];
            mx_actor_endpoint (self->args, "processor", endpoint, sizeof endpoint);
            self->data = zsock_new (ZMQ_PAIR);
            //  The pump stops before the processor: a PROCESSED it can no
            //  longer take must not hold the processor from seeing $TERM.
            zsock_set_sndtimeo (self->data, 0);
            zsock_set_linger (self->data, 0);
            if (zsock_bind (self->data, "%s", endpoint) < 0) {
                mx_actor_reply_failed (self->pipe, "cannot bind the processor's data socket");
                break;
            }
            char *detail = zsys_sprintf ("up to %" PRId64 " messages a transaction; libxml2 without entities or network",
                                         self->config->pipeline_process_batch);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            break;
        }
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;              //  the pump decides what runs
        default:
            assert (!"processor: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

static bool
s_data_ready (void *self_, void *arg)
{
    (void) arg;
    s_handle_data ((s_processor_t *) self_);
    return false;
}

//  The pump's PAIR, once started.
static size_t
s_sources (void *self_, mx_actor_source_t *sources, size_t max)
{
    s_processor_t *self = (s_processor_t *) self_;
    if (!self->data || max < 1)
        return 0;
    sources [0] = (mx_actor_source_t) { .sock = self->data, .ready = s_data_ready };
    return 1;
}

void
mx_processor_actor (zsock_t *pipe, void *args)
{
    s_processor_t self_s = { 0 };
    s_processor_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->clock = self->args->clock;
    self->mailbox = mx_mailbox_new (self->config);
    self->flights = zhashx_new ();
    zhashx_set_destructor (self->flights, s_flight_free);
    self->flights_owed = zlistx_new ();
    zlistx_set_destructor (self->flights_owed, s_flight_free);
    self->doc_stash = zhashx_new ();
    zhashx_set_destructor (self->doc_stash, s_stashed_free);
    //  EVENTS_COMMITTED and MARKS_OWED are wake-up hints (delivery and
    //  backfill sweep anyway): never block on them, e.g. while control is
    //  busy stopping the actors and not reading this pipe.
    zsock_set_sndtimeo (pipe, 0);
    //  The processor runs only on the instance holding the lock: while it
    //  does, this instance alone writes flight state (with jobs), and
    //  both invalidate what they change, so the read API may serve from
    //  the cache. Control disables it too the moment the role is lost.
    mx_doc_cache_enable (self->args->doc_cache);
    mx_actor_ops_t ops = { .command = s_command, .sources = s_sources };
    mx_actor_run (pipe, self->clock, &ops, self);
    mx_doc_cache_disable (self->args->doc_cache);
    if (self->processed)
        mx_info (ACTOR, "stopped after %" PRIu64 " messages in %" PRIu64 " transactions",
                 self->processed, self->transactions);
    zsock_destroy (&self->data);
    mx_pg_disconnect (&self->pg);
    mx_mailbox_destroy (&self->mailbox);
    mx_tz_destroy (&self->zone);
    zhashx_destroy (&self->flights);
    zlistx_destroy (&self->flights_owed);
    zhashx_destroy (&self->doc_stash);
    s_ahead_destroy (&self->ahead);
    free (self->doc_msg.data);
    free (self->doc_state.data);
}

//  ---------------------------------------------------------------------
//  Metrics

//  Messages per processor batch: up to msgx.pipeline.process-batch's own
//  bound (10,000), so a quantile is never pinned at the last bucket.
static const double s_batch_bounds [] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000 };
//  PROCESS -> commit, seconds.
static const double s_processing_bounds [] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
};

mx_metrics_counter_t *
mx_processor_messages (const char *type, const char *state)
{
    char labels [128];
    snprintf (labels, sizeof labels, "type=%s,state=%s", type ? type : "", state ? state : "");
    return mx_metrics_counter ("msgx_messages_total",
                               "Messages that reached a state, by message type", labels);
}

mx_metrics_counter_t *
mx_processor_messages_failed (const char *error_class)
{
    return mx_metrics_counter_by ("msgx_messages_failed_total", "Failed processing attempts, by error class",
                                  "class", error_class);
}

mx_metrics_counter_t *
mx_processor_messages_dead (const char *error_class)
{
    return mx_metrics_counter_by ("msgx_messages_dead_total",
                                  "Messages that ended DEAD, by the error class they ended with",
                                  "class", error_class);
}

//  The labelled series alerts and dashboards select, at 0 before anything
//  is counted: increase() misses the first count of a series that appears
//  with it. A message's TYPE is open-ended, so only "-" (ended before its
//  TYPE was read) is known in advance; the alerts use the class families.
void
mx_processor_register_metrics (void)
{
    const mx_state_t terminal [] = { MX_STATE_SUCCEEDED, MX_STATE_SKIPPED, MX_STATE_DEAD };
    for (size_t i = 0; i < sizeof terminal / sizeof terminal [0]; i++)
        mx_processor_messages ("-", mx_state_name (terminal [i]));
    for (int error_class = MX_ERR_NONE + 1; error_class <= MX_ERR_EXHAUSTED; error_class++) {
        mx_processor_messages_failed (mx_error_class_name ((mx_error_class_t) error_class));
        mx_processor_messages_dead (mx_error_class_name ((mx_error_class_t) error_class));
    }
    mx_processor_batch_size ();
    mx_processor_seconds ();
}

mx_metrics_histogram_t *
mx_processor_batch_size (void)
{
    return mx_metrics_histogram ("msgx_batch_size", "Messages per processing batch", NULL,
                                 s_batch_bounds, sizeof s_batch_bounds / sizeof s_batch_bounds [0]);
}

mx_metrics_histogram_t *
mx_processor_seconds (void)
{
    return mx_metrics_histogram ("msgx_processing_seconds",
                                 "Seconds from PROCESS to the batch's commit", NULL,
                                 s_processing_bounds,
                                 sizeof s_processing_bounds / sizeof s_processing_bounds [0]);
}
