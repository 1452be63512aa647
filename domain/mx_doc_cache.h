/*  mx_doc_cache - the read API's cache of state documents: flid ->
    (state version, the document exactly as GET /flights/{flid} answers it).

    Bounded by entries and bytes, least recently used out first. One mutex
    guards it: the http thread answers hits itself, so a read never waits
    on an actor's queue behind a draining backlog, and the writers
    (processor, jobs) invalidate from their own threads.

    Coherence (docs/architecture.md): the cache is used only while this
    instance is the writer (mx_doc_cache_enable; disabled and emptied the
    moment it stops being one). Every writer of flight state, holding the
    rows locked, calls mx_doc_cache_write_begin with the flights it
    changes before its COMMIT (from then on nothing enters for them, and
    they are misses, or, kept by mx_doc_cache_keep_during_writes, hits of
    the state before the write) and mx_doc_cache_write_end (or
    _invalidate) after the commit's outcome is known, before anything
    downstream can learn of the change; the write's end may store the
    documents it committed. A reader that misses while a write of its
    flight is under way may wait for its end (mx_doc_cache_await) instead
    of reading PostgreSQL. A
    reader takes a ticket (mx_doc_cache_ticket) before it reads
    PostgreSQL and offers what it read with that ticket
    (mx_doc_cache_put): refused while a write of the flight is under way or
    if the flight was invalidated after the ticket was taken, so a read
    that raced a commit never enters and no hit ever answers a state older
    than PostgreSQL's. Invalidation records are kept per flight, at most a
    bound of them; when the oldest goes, the floor rises to its sequence
    and every older ticket is refused.

    All functions are thread-safe. A NULL cache is accepted everywhere and
    is a cache that is off.
*/
#ifndef MX_DOC_CACHE_H_INCLUDED
#define MX_DOC_CACHE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mx_doc_cache_t mx_doc_cache_t;

//  max_entries and max_bytes (document bytes) bound it; records bounds the
//  invalidation records kept (0: 4 x max_entries, at least 1024). NULL
//  when max_entries or max_bytes is 0 (off) or out of memory.
mx_doc_cache_t *
    mx_doc_cache_new (size_t max_entries, size_t max_bytes, size_t records);

void
    mx_doc_cache_destroy (mx_doc_cache_t **self_p);

//  This instance became the only writer: hits may be served from now on.
//  Tickets taken before are refused (what they read may predate writes
//  this instance never saw).
void
    mx_doc_cache_enable (mx_doc_cache_t *self);

//  This instance is no longer (or may no longer be) the writer: emptied,
//  every lookup a miss, every put refused until enabled again.
void
    mx_doc_cache_disable (mx_doc_cache_t *self);

bool
    mx_doc_cache_enabled (mx_doc_cache_t *self);

//  keep: a flight being written keeps its entry until the write's end, so
//  reads answer the state before the write, committed until the COMMIT
//  returns, without waiting (msgx.api.read-during-commit previous); between
//  the COMMIT taking effect and the write's end, PostgreSQL already shows
//  the new state. Not kept (the default): the entry goes at the write's
//  begin, so no hit is ever older than PostgreSQL, and a read that meets the
//  write waits for it (mx_doc_cache_await) or reads PostgreSQL.
void
    mx_doc_cache_keep_during_writes (mx_doc_cache_t *self, bool keep);

//  A write of the flights is about to commit: until it ends
//  (mx_doc_cache_write_end, or mx_doc_cache_invalidate) no put enters for
//  them, and their entries go (they are misses) unless the cache keeps
//  them during writes (then hits of the state before). Writers never hold
//  one flight at once (the row locks keep them apart). had (count of
//  them, or NULL) tells which had an entry. Returns the write's token for
//  mx_doc_cache_write_end (0 when the cache is off).
uint64_t
    mx_doc_cache_write_begin (mx_doc_cache_t *self, const int64_t *flids, size_t count, bool *had);

//  A flight's document as a write committed it.
typedef struct {
    int64_t flid;
    int64_t version;
    const char *doc;
    size_t size;
} mx_doc_cache_doc_t;

//  Ends the write begun with token as mx_doc_cache_invalidate does and,
//  in the same step, stores docs: the committed documents of its flights
//  (none when the commit failed or its outcome is unknown). A reader
//  waiting for the write (mx_doc_cache_await) wakes to them. A document is
//  stored only if no other write of its flight began after this one (a
//  later writer's state is newer) and it fits the byte bound.
void
    mx_doc_cache_write_end (mx_doc_cache_t *self, uint64_t token, const int64_t *flids, size_t count,
                            const mx_doc_cache_doc_t *docs, size_t doc_count);

//  The flights changed (or may have: a commit whose outcome is unknown);
//  ends a write begun (also alone). Their entries go, and a put with a
//  ticket taken before is refused.
void
    mx_doc_cache_invalidate (mx_doc_cache_t *self, const int64_t *flids, size_t count);

//  Taken before reading PostgreSQL, for mx_doc_cache_put.
uint64_t
    mx_doc_cache_ticket (mx_doc_cache_t *self);

//  Offers the document of flid at version, read after ticket was taken.
//  True when stored; false when off, invalidated since the ticket, or
//  larger than the byte bound.
bool
    mx_doc_cache_put (mx_doc_cache_t *self, uint64_t ticket, int64_t flid, int64_t version,
                      const char *doc, size_t size);

//  The entry of flid: true with *version, and with *doc a malloc'd copy
//  (NUL-terminated, *size bytes) when doc is not NULL. False on a miss
//  (off, absent, or out of memory for the copy). Counts a hit or a miss
//  while enabled.
bool
    mx_doc_cache_get (mx_doc_cache_t *self, int64_t flid, int64_t *version, char **doc, size_t *size);

//  As mx_doc_cache_get; and on a miss while a write of the flight is under
//  way, waits for the write to end, at most wait_ms, and looks again: the
//  documents the write stored are hits. *waited (or NULL) tells whether it
//  waited. Never waits when wait_ms <= 0 or the cache is off.
bool
    mx_doc_cache_await (mx_doc_cache_t *self, int64_t flid, int wait_ms, int64_t *version,
                        char **doc, size_t *size, bool *waited);

typedef struct {
    size_t entries;
    size_t bytes;
    size_t records;             //  invalidation records held
    uint64_t hits;
    uint64_t misses;
    uint64_t waits;             //  lookups that waited for a write to end
    size_t waiting;             //  threads waiting now
    bool enabled;
} mx_doc_cache_stats_t;

void
    mx_doc_cache_stats (mx_doc_cache_t *self, mx_doc_cache_stats_t *stats);

#endif
