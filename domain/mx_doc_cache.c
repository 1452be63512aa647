/*  mx_doc_cache - see mx_doc_cache.h.  */
#include "mx_doc_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  What entries and records share: a chain in their hash table and a
//  place in their age list (oldest first).
typedef struct s_node_t s_node_t;
struct s_node_t {
    int64_t flid;
    s_node_t *chain;
    s_node_t *older;
    s_node_t *newer;
};

typedef struct {
    s_node_t node;
    int64_t version;
    size_t size;
    char *doc;
} s_entry_t;

typedef struct {
    s_node_t node;
    uint64_t seq;                   //  of the flight's last invalidation
    uint64_t began;                 //  token of the last write begun
    int pending;                    //  writes begun and not ended: no hit, no put
} s_record_t;

//  A fixed table of chains, and an age list: oldest at the head.
typedef struct {
    s_node_t **buckets;
    size_t mask;
    size_t count;
    s_node_t *oldest;
    s_node_t *newest;
} s_table_t;

struct mx_doc_cache_t {
    pthread_mutex_t lock;
    pthread_cond_t ended;           //  a write ended (or the cache was turned off)
    s_table_t entries;              //  s_entry_t, age = last use (LRU)
    s_table_t records;              //  s_record_t, age = last invalidation
    size_t max_entries;
    size_t max_bytes;
    size_t max_records;
    size_t bytes;
    uint64_t seq;                   //  of the last invalidation (or enable/disable)
    uint64_t floor;                 //  tickets below it are refused
    uint64_t writes;                //  token of the last write begun
    bool enabled;
    bool keep_during_write;
    uint64_t hits;
    uint64_t misses;
    uint64_t waits;
    size_t waiting;
};

//  ---------------------------------------------------------------------
//  Tables

static int
s_table_init (s_table_t *table, size_t bound)
{
    size_t size = 16;
    while (size < bound * 2)
        size *= 2;
    table->buckets = (s_node_t **) calloc (size, sizeof *table->buckets);
    table->mask = size - 1;
    return table->buckets ? 0 : -1;
}

static size_t
s_bucket (const s_table_t *table, int64_t flid)
{
    uint64_t hash = (uint64_t) flid * 0x9E3779B97F4A7C15ULL;
    return (size_t) (hash >> 32) & table->mask;
}

static s_node_t *
s_table_find (const s_table_t *table, int64_t flid)
{
    s_node_t *node = table->buckets [s_bucket (table, flid)];
    while (node && node->flid != flid)
        node = node->chain;
    return node;
}

static void
s_age_unlink (s_table_t *table, s_node_t *node)
{
    if (node->older)
        node->older->newer = node->newer;
    else
        table->oldest = node->newer;
    if (node->newer)
        node->newer->older = node->older;
    else
        table->newest = node->older;
    node->older = node->newer = NULL;
}

static void
s_age_append (s_table_t *table, s_node_t *node)
{
    node->older = table->newest;
    node->newer = NULL;
    if (table->newest)
        table->newest->newer = node;
    else
        table->oldest = node;
    table->newest = node;
}

static void
s_table_add (s_table_t *table, s_node_t *node)
{
    s_node_t **head = &table->buckets [s_bucket (table, node->flid)];
    node->chain = *head;
    *head = node;
    s_age_append (table, node);
    table->count++;
}

static void
s_table_remove (s_table_t *table, s_node_t *node)
{
    s_node_t **scan = &table->buckets [s_bucket (table, node->flid)];
    while (*scan != node)
        scan = &(*scan)->chain;
    *scan = node->chain;
    s_age_unlink (table, node);
    table->count--;
}

//  ---------------------------------------------------------------------

static void
s_entry_drop (mx_doc_cache_t *self, s_entry_t *entry)
{
    s_table_remove (&self->entries, &entry->node);
    self->bytes -= entry->size;
    free (entry->doc);
    free (entry);
}

static void
s_clear (mx_doc_cache_t *self)
{
    while (self->entries.oldest)
        s_entry_drop (self, (s_entry_t *) self->entries.oldest);
    while (self->records.oldest) {
        s_node_t *node = self->records.oldest;
        s_table_remove (&self->records, node);
        free (node);
    }
}

mx_doc_cache_t *
mx_doc_cache_new (size_t max_entries, size_t max_bytes, size_t records)
{
    if (max_entries == 0 || max_bytes == 0)
        return NULL;
    if (records == 0)
        records = max_entries * 4 < 1024 ? 1024 : max_entries * 4;
    mx_doc_cache_t *self = (mx_doc_cache_t *) calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->max_entries = max_entries;
    self->max_bytes = max_bytes;
    self->max_records = records;
    if (pthread_mutex_init (&self->lock, NULL) != 0) {
        free (self);
        return NULL;
    }
    //  Waits are bounded in monotonic time: a clock step never stretches one.
    pthread_condattr_t attributes;
    bool made = pthread_condattr_init (&attributes) == 0;
    made = made && pthread_condattr_setclock (&attributes, CLOCK_MONOTONIC) == 0
                && pthread_cond_init (&self->ended, &attributes) == 0;
    pthread_condattr_destroy (&attributes);
    if (!made) {
        pthread_mutex_destroy (&self->lock);
        free (self);
        return NULL;
    }
    if (s_table_init (&self->entries, max_entries) || s_table_init (&self->records, records)) {
        mx_doc_cache_destroy (&self);
        return NULL;
    }
    return self;
}

void
mx_doc_cache_destroy (mx_doc_cache_t **self_p)
{
    mx_doc_cache_t *self = *self_p;
    if (!self)
        return;
    if (self->entries.buckets && self->records.buckets)
        s_clear (self);
    free (self->entries.buckets);
    free (self->records.buckets);
    pthread_cond_destroy (&self->ended);
    pthread_mutex_destroy (&self->lock);
    free (self);
    *self_p = NULL;
}

void
mx_doc_cache_keep_during_writes (mx_doc_cache_t *self, bool keep)
{
    if (!self)
        return;
    pthread_mutex_lock (&self->lock);
    self->keep_during_write = keep;
    pthread_mutex_unlock (&self->lock);
}

void
mx_doc_cache_enable (mx_doc_cache_t *self)
{
    if (!self)
        return;
    pthread_mutex_lock (&self->lock);
    //  A read begun before may have seen a state some other writer
    //  replaced since; only tickets from now on count.
    self->floor = ++self->seq;
    self->enabled = true;
    pthread_mutex_unlock (&self->lock);
}

void
mx_doc_cache_disable (mx_doc_cache_t *self)
{
    if (!self)
        return;
    pthread_mutex_lock (&self->lock);
    self->enabled = false;
    s_clear (self);
    self->floor = ++self->seq;
    pthread_cond_broadcast (&self->ended);
    pthread_mutex_unlock (&self->lock);
}

bool
mx_doc_cache_enabled (mx_doc_cache_t *self)
{
    if (!self)
        return false;
    pthread_mutex_lock (&self->lock);
    bool enabled = self->enabled;
    pthread_mutex_unlock (&self->lock);
    return enabled;
}

//  The record of flid, made newest (a new one at seq); the oldest record
//  past the bound that no write holds goes, and the floor rises to its
//  sequence. NULL when out of memory: the floor is raised to seq then.
static s_record_t *
s_record (mx_doc_cache_t *self, int64_t flid, uint64_t seq)
{
    s_record_t *record = (s_record_t *) s_table_find (&self->records, flid);
    if (record) {
        s_age_unlink (&self->records, &record->node);
        s_age_append (&self->records, &record->node);
        return record;
    }
    if (self->records.count >= self->max_records) {
        s_record_t *oldest = (s_record_t *) self->records.oldest;
        while (oldest && oldest->pending)
            oldest = (s_record_t *) oldest->node.newer;
        if (oldest) {
            if (oldest->seq > self->floor)
                self->floor = oldest->seq;
            s_table_remove (&self->records, &oldest->node);
            free (oldest);
        }
    }
    record = (s_record_t *) calloc (1, sizeof *record);
    if (!record) {
        //  Without a record, only the floor can refuse older reads.
        self->floor = seq;
        return NULL;
    }
    record->node.flid = flid;
    record->seq = seq;
    s_table_add (&self->records, &record->node);
    return record;
}

uint64_t
mx_doc_cache_write_begin (mx_doc_cache_t *self, const int64_t *flids, size_t count, bool *had)
{
    if (had)
        memset (had, 0, count * sizeof *had);
    if (!self || count == 0)
        return 0;
    pthread_mutex_lock (&self->lock);
    uint64_t token = 0;
    if (self->enabled) {
        token = ++self->writes;
        for (size_t i = 0; i < count; i++) {
            //  The entry stays, answering the state before the write until
            //  its end (msgx.api.read-during-commit previous), or goes.
            s_entry_t *entry = (s_entry_t *) s_table_find (&self->entries, flids [i]);
            if (entry && !self->keep_during_write)
                s_entry_drop (self, entry);
            if (had)
                had [i] = entry != NULL;
            s_record_t *record = s_record (self, flids [i], self->seq);
            if (record) {
                record->pending++;
                record->began = token;
            }
            else {
                //  Cannot hold this flight off: nothing is served until enabled again.
                s_clear (self);
                self->enabled = false;
                pthread_cond_broadcast (&self->ended);
                break;
            }
        }
    }
    pthread_mutex_unlock (&self->lock);
    return token;
}

//  The end of a write of flids, under the lock: entries dropped, records
//  at a new sequence, waiters woken.
static void
s_write_ended (mx_doc_cache_t *self, const int64_t *flids, size_t count)
{
    uint64_t seq = ++self->seq;
    //  Disabled: empty, and enabling raises the floor past this anyway.
    if (self->enabled)
        for (size_t i = 0; i < count; i++) {
            s_entry_t *entry = (s_entry_t *) s_table_find (&self->entries, flids [i]);
            if (entry)
                s_entry_drop (self, entry);
            s_record_t *record = s_record (self, flids [i], seq);
            if (record) {
                record->seq = seq;
                if (record->pending > 0)
                    record->pending--;
            }
        }
    if (self->waiting)
        pthread_cond_broadcast (&self->ended);
}

void
mx_doc_cache_write_end (mx_doc_cache_t *self, uint64_t token, const int64_t *flids, size_t count,
                        const mx_doc_cache_doc_t *docs, size_t doc_count)
{
    if (!self)
        return;
    //  The copies are made outside the lock; NULL where not stored.
    s_entry_t **fresh = doc_count ? (s_entry_t **) calloc (doc_count, sizeof *fresh) : NULL;
    for (size_t d = 0; fresh && d < doc_count; d++) {
        if (docs [d].size > self->max_bytes)
            continue;
        fresh [d] = (s_entry_t *) calloc (1, sizeof **fresh);
        char *copy = fresh [d] ? (char *) malloc (docs [d].size + 1) : NULL;
        if (!copy) {
            free (fresh [d]);
            fresh [d] = NULL;
            continue;
        }
        memcpy (copy, docs [d].doc, docs [d].size);
        copy [docs [d].size] = '\0';
        *fresh [d] = (s_entry_t) { .node.flid = docs [d].flid, .version = docs [d].version,
                                   .size = docs [d].size, .doc = copy };
    }
    pthread_mutex_lock (&self->lock);
    s_write_ended (self, flids, count);
    for (size_t d = 0; fresh && self->enabled && token && d < doc_count; d++) {
        if (!fresh [d])
            continue;
        //  Held by this write alone, to its end: no write began after it.
        const s_record_t *record = (const s_record_t *) s_table_find (&self->records, docs [d].flid);
        if (!record || record->began != token || record->pending
        ||  s_table_find (&self->entries, docs [d].flid))
            continue;
        s_table_add (&self->entries, &fresh [d]->node);
        self->bytes += fresh [d]->size;
        fresh [d] = NULL;
    }
    while (self->entries.count > self->max_entries || self->bytes > self->max_bytes)
        s_entry_drop (self, (s_entry_t *) self->entries.oldest);
    pthread_mutex_unlock (&self->lock);
    for (size_t d = 0; fresh && d < doc_count; d++)
        if (fresh [d]) {
            free (fresh [d]->doc);
            free (fresh [d]);
        }
    free (fresh);
}

void
mx_doc_cache_invalidate (mx_doc_cache_t *self, const int64_t *flids, size_t count)
{
    if (!self || count == 0)
        return;
    pthread_mutex_lock (&self->lock);
    s_write_ended (self, flids, count);
    pthread_mutex_unlock (&self->lock);
}

uint64_t
mx_doc_cache_ticket (mx_doc_cache_t *self)
{
    if (!self)
        return 0;
    pthread_mutex_lock (&self->lock);
    uint64_t ticket = self->seq;
    pthread_mutex_unlock (&self->lock);
    return ticket;
}

bool
mx_doc_cache_put (mx_doc_cache_t *self, uint64_t ticket, int64_t flid, int64_t version,
                  const char *doc, size_t size)
{
    if (!self || size > self->max_bytes)
        return false;
    //  The copy is made outside the lock.
    char *copy = (char *) malloc (size + 1);
    s_entry_t *fresh = (s_entry_t *) calloc (1, sizeof *fresh);
    if (!copy || !fresh) {
        free (copy);
        free (fresh);
        return false;
    }
    memcpy (copy, doc, size);
    copy [size] = '\0';
    pthread_mutex_lock (&self->lock);
    bool stored = false;
    s_record_t *record = self->enabled && ticket >= self->floor
                       ? (s_record_t *) s_table_find (&self->records, flid) : NULL;
    if (self->enabled && ticket >= self->floor && !(record && (record->seq > ticket || record->pending))) {
        s_entry_t *entry = (s_entry_t *) s_table_find (&self->entries, flid);
        //  Two reads of the same flight both current at their tickets: the
        //  later version stays.
        if (entry && entry->version > version)
            stored = false;
        else {
            if (entry)
                s_entry_drop (self, entry);
            fresh->node.flid = flid;
            fresh->version = version;
            fresh->doc = copy;
            fresh->size = size;
            s_table_add (&self->entries, &fresh->node);
            self->bytes += size;
            copy = NULL;
            fresh = NULL;
            while (self->entries.count > self->max_entries || self->bytes > self->max_bytes)
                s_entry_drop (self, (s_entry_t *) self->entries.oldest);
            stored = true;
        }
    }
    pthread_mutex_unlock (&self->lock);
    free (copy);
    free (fresh);
    return stored;
}

//  The lookup of mx_doc_cache_get, under the lock, the hit or miss counted.
static bool
s_lookup (mx_doc_cache_t *self, int64_t flid, int64_t *version, char **doc, size_t *size)
{
    s_entry_t *entry = (s_entry_t *) s_table_find (&self->entries, flid);
    bool hit = entry != NULL;
    if (entry && doc) {
        *doc = (char *) malloc (entry->size + 1);
        if (*doc) {
            memcpy (*doc, entry->doc, entry->size + 1);
            if (size)
                *size = entry->size;
        }
        else
            hit = false;
    }
    if (hit) {
        *version = entry->version;
        s_age_unlink (&self->entries, &entry->node);
        s_age_append (&self->entries, &entry->node);
        self->hits++;
    }
    else
        self->misses++;
    return hit;
}

bool
mx_doc_cache_get (mx_doc_cache_t *self, int64_t flid, int64_t *version, char **doc, size_t *size)
{
    if (!self)
        return false;
    pthread_mutex_lock (&self->lock);
    bool hit = self->enabled && s_lookup (self, flid, version, doc, size);
    pthread_mutex_unlock (&self->lock);
    return hit;
}

//  True while a write of flid is under way and its entry is absent.
static bool
s_held_off (mx_doc_cache_t *self, int64_t flid)
{
    const s_record_t *record = (const s_record_t *) s_table_find (&self->records, flid);
    return self->enabled && record && record->pending && !s_table_find (&self->entries, flid);
}

bool
mx_doc_cache_await (mx_doc_cache_t *self, int64_t flid, int wait_ms, int64_t *version,
                    char **doc, size_t *size, bool *waited)
{
    if (waited)
        *waited = false;
    if (!self)
        return false;
    pthread_mutex_lock (&self->lock);
    if (wait_ms > 0 && s_held_off (self, flid)) {
        struct timespec deadline;
        clock_gettime (CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += wait_ms / 1000;
        deadline.tv_nsec += (long) (wait_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        self->waits++;
        self->waiting++;
        if (waited)
            *waited = true;
        int rc = 0;
        while (rc != ETIMEDOUT && s_held_off (self, flid))
            rc = pthread_cond_timedwait (&self->ended, &self->lock, &deadline);
        self->waiting--;
    }
    bool hit = self->enabled && s_lookup (self, flid, version, doc, size);
    pthread_mutex_unlock (&self->lock);
    return hit;
}

void
mx_doc_cache_stats (mx_doc_cache_t *self, mx_doc_cache_stats_t *stats)
{
    memset (stats, 0, sizeof *stats);
    if (!self)
        return;
    pthread_mutex_lock (&self->lock);
    stats->entries = self->entries.count;
    stats->bytes = self->bytes;
    stats->records = self->records.count;
    stats->hits = self->hits;
    stats->misses = self->misses;
    stats->waits = self->waits;
    stats->waiting = self->waiting;
    stats->enabled = self->enabled;
    pthread_mutex_unlock (&self->lock);
}
