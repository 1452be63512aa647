/*  Unit tests: the read API's state-document cache (mx_doc_cache): its
    bounds, LRU order, and that a read racing a writer's commit never
    enters it.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_doc_cache.h"

static mx_doc_cache_t *
s_cache (size_t entries, size_t bytes, size_t records)
{
    mx_doc_cache_t *cache = mx_doc_cache_new (entries, bytes, records);
    assert_non_null (cache);
    mx_doc_cache_enable (cache);
    return cache;
}

//  Puts "doc-<flid>-<version>" with a fresh ticket.
static bool
s_put (mx_doc_cache_t *cache, int64_t flid, int64_t version)
{
    char doc [64];
    snprintf (doc, sizeof doc, "doc-%lld-%lld", (long long) flid, (long long) version);
    return mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), flid, version, doc, strlen (doc));
}

static bool
s_has (mx_doc_cache_t *cache, int64_t flid)
{
    int64_t version = 0;
    return mx_doc_cache_get (cache, flid, &version, NULL, NULL);
}

static void
test_off_is_null_and_harmless (void **state)
{
    (void) state;
    assert_null (mx_doc_cache_new (0, 1024, 0));
    assert_null (mx_doc_cache_new (16, 0, 0));
    mx_doc_cache_t *none = NULL;
    int64_t flid = 1, version = 0;
    mx_doc_cache_invalidate (none, &flid, 1);
    assert_false (mx_doc_cache_put (none, 0, 1, 1, "x", 1));
    assert_false (mx_doc_cache_get (none, 1, &version, NULL, NULL));
    assert_false (mx_doc_cache_enabled (none));
    mx_doc_cache_destroy (&none);
}

static void
test_hit_returns_the_document (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 0);
    assert_false (s_has (cache, 7));
    assert_true (mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), 7, 3, "{\"a\":1}", 7));
    int64_t version = 0;
    char *doc = NULL;
    size_t size = 0;
    assert_true (mx_doc_cache_get (cache, 7, &version, &doc, &size));
    assert_int_equal (version, 3);
    assert_int_equal (size, 7);
    assert_string_equal (doc, "{\"a\":1}");
    free (doc);
    mx_doc_cache_stats_t stats;
    mx_doc_cache_stats (cache, &stats);
    assert_int_equal (stats.hits, 1);
    assert_int_equal (stats.misses, 1);
    assert_int_equal (stats.entries, 1);
    assert_int_equal (stats.bytes, 7);
    mx_doc_cache_destroy (&cache);
    assert_null (cache);
}

static void
test_bounded_by_entries_least_recent_out (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (3, 4096, 0);
    assert_true (s_put (cache, 1, 1));
    assert_true (s_put (cache, 2, 1));
    assert_true (s_put (cache, 3, 1));
    assert_true (s_has (cache, 1));             //  1 is now the most recent
    assert_true (s_put (cache, 4, 1));          //  2 goes
    assert_false (s_has (cache, 2));
    assert_true (s_has (cache, 1));
    assert_true (s_has (cache, 3));
    assert_true (s_has (cache, 4));
    mx_doc_cache_stats_t stats;
    mx_doc_cache_stats (cache, &stats);
    assert_int_equal (stats.entries, 3);
    mx_doc_cache_destroy (&cache);
}

static void
test_bounded_by_bytes (void **state)
{
    (void) state;
    //  Documents of 10 bytes: 25 bytes hold two.
    mx_doc_cache_t *cache = s_cache (100, 25, 0);
    char doc [11] = "0123456789";
    for (int64_t flid = 1; flid <= 3; flid++)
        assert_true (mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), flid, 1, doc, 10));
    mx_doc_cache_stats_t stats;
    mx_doc_cache_stats (cache, &stats);
    assert_int_equal (stats.entries, 2);
    assert_int_equal (stats.bytes, 20);
    assert_false (s_has (cache, 1));
    //  Larger than the whole bound: never stored, nothing evicted for it.
    char big [32];
    memset (big, 'x', sizeof big);
    assert_false (mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), 9, 1, big, sizeof big));
    assert_true (s_has (cache, 2));
    assert_true (s_has (cache, 3));
    mx_doc_cache_destroy (&cache);
}

static void
test_invalidate_drops_the_entry (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 0);
    assert_true (s_put (cache, 5, 1));
    assert_true (s_put (cache, 6, 1));
    int64_t flids [] = { 5, 99 };
    mx_doc_cache_invalidate (cache, flids, 2);
    assert_false (s_has (cache, 5));
    assert_true (s_has (cache, 6));
    //  A read begun after the invalidation enters.
    assert_true (s_put (cache, 5, 2));
    int64_t version = 0;
    assert_true (mx_doc_cache_get (cache, 5, &version, NULL, NULL));
    assert_int_equal (version, 2);
    mx_doc_cache_destroy (&cache);
}

//  The race of the design: a reader takes its ticket and reads version 1;
//  the writer commits version 2 and invalidates; the reader then offers
//  version 1: refused, and the next read (version 2) enters.
static void
test_read_racing_a_commit_is_refused (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 0);
    uint64_t ticket = mx_doc_cache_ticket (cache);          //  before the PostgreSQL read
    int64_t flid = 42;
    mx_doc_cache_invalidate (cache, &flid, 1);              //  after the writer's commit
    assert_false (mx_doc_cache_put (cache, ticket, flid, 1, "old", 3));
    assert_false (s_has (cache, flid));
    //  Another flight's invalidation does not refuse this one's read.
    uint64_t other = mx_doc_cache_ticket (cache);
    int64_t elsewhere = 43;
    mx_doc_cache_invalidate (cache, &elsewhere, 1);
    assert_true (mx_doc_cache_put (cache, other, flid, 2, "new", 3));
    int64_t version = 0;
    assert_true (mx_doc_cache_get (cache, flid, &version, NULL, NULL));
    assert_int_equal (version, 2);
    //  An older version never replaces a newer one.
    assert_false (mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), flid, 1, "old", 3));
    mx_doc_cache_destroy (&cache);
}

//  A write under way (begun before the writer's COMMIT): the flight is a
//  miss and nothing enters for it, whatever the ticket, until the write
//  ends; then only reads begun after the end enter. Its record outlives
//  the bound meanwhile.
static void
test_write_under_way_holds_the_flight_off (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 2);
    assert_true (s_put (cache, 8, 1));
    int64_t flid = 8;
    bool had = false;
    mx_doc_cache_write_begin (cache, &flid, 1, &had);
    assert_true (had);
    assert_false (s_has (cache, 8));
    uint64_t during = mx_doc_cache_ticket (cache);
    assert_false (mx_doc_cache_put (cache, during, 8, 1, "old", 3));
    //  Other flights' invalidations push records out, not this one.
    for (int64_t other = 20; other < 25; other++)
        mx_doc_cache_invalidate (cache, &other, 1);
    assert_false (mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), 8, 1, "old", 3));
    assert_true (s_put (cache, 30, 1));
    mx_doc_cache_invalidate (cache, &flid, 1);              //  the commit's outcome known
    assert_false (mx_doc_cache_put (cache, during, 8, 2, "new", 3));
    assert_true (s_put (cache, 8, 2));
    assert_true (s_has (cache, 8));
    mx_doc_cache_destroy (&cache);
}

//  Kept during writes (msgx.api.read-during-commit previous): a flight
//  being written answers the state before the write, without waiting,
//  until the write's end, which replaces it with the committed document;
//  nothing enters meanwhile; a write that failed leaves a miss; a flight
//  with no entry still waits for the write.
static void
test_kept_during_writes_answers_the_state_before (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 0);
    mx_doc_cache_keep_during_writes (cache, true);
    assert_true (s_put (cache, 5, 1));
    int64_t flids [] = { 5, 6 };
    bool had [2] = { false, true };
    uint64_t token = mx_doc_cache_write_begin (cache, flids, 2, had);
    assert_true (had [0]);
    assert_false (had [1]);
    int64_t version = 0;
    char *doc = NULL;
    bool waited = true;
    assert_true (mx_doc_cache_await (cache, 5, 60000, &version, &doc, NULL, &waited));
    assert_false (waited);
    assert_int_equal (version, 1);
    free (doc);
    assert_false (mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), 5, 2, "read", 4));
    assert_false (mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), 6, 1, "read", 4));
    version = 0;
    assert_false (mx_doc_cache_await (cache, 6, 1, &version, NULL, NULL, &waited));
    assert_true (waited);
    mx_doc_cache_doc_t docs [] = { { 5, 2, "five-2", 6 }, { 6, 1, "six-1", 5 } };
    mx_doc_cache_write_end (cache, token, flids, 2, docs, 2);
    doc = NULL;
    assert_true (mx_doc_cache_get (cache, 5, &version, &doc, NULL));
    assert_int_equal (version, 2);
    assert_string_equal (doc, "five-2");
    free (doc);
    assert_true (mx_doc_cache_get (cache, 6, &version, NULL, NULL));
    assert_int_equal (version, 1);
    //  A failed write (its outcome unknown): the state before goes at its end.
    token = mx_doc_cache_write_begin (cache, flids, 1, NULL);
    assert_true (s_has (cache, 5));
    mx_doc_cache_write_end (cache, token, flids, 1, NULL, 0);
    assert_false (s_has (cache, 5));
    //  Back to the default: the entry goes at the write's begin.
    assert_true (s_put (cache, 5, 3));
    mx_doc_cache_keep_during_writes (cache, false);
    token = mx_doc_cache_write_begin (cache, flids, 1, NULL);
    assert_false (s_has (cache, 5));
    mx_doc_cache_write_end (cache, token, flids, 1, NULL, 0);
    mx_doc_cache_destroy (&cache);
}

//  A write's end stores the documents it committed, in the same step as
//  it ends the hold: no moment in between when the flight is a miss.
static void
test_write_end_stores_what_it_committed (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 0);
    assert_true (s_put (cache, 5, 1));
    int64_t flids [] = { 5, 6 };
    uint64_t token = mx_doc_cache_write_begin (cache, flids, 2, NULL);
    assert_true (token > 0);
    assert_false (s_has (cache, 5));
    mx_doc_cache_doc_t docs [] = { { 5, 2, "five-2", 6 }, { 6, 1, "six-1", 5 } };
    mx_doc_cache_write_end (cache, token, flids, 2, docs, 2);
    int64_t version = 0;
    char *doc = NULL;
    size_t size = 0;
    assert_true (mx_doc_cache_get (cache, 5, &version, &doc, &size));
    assert_int_equal (version, 2);
    assert_string_equal (doc, "five-2");
    assert_int_equal (size, 6);
    free (doc);
    assert_true (mx_doc_cache_get (cache, 6, &version, NULL, NULL));
    assert_int_equal (version, 1);
    //  A write that failed ends with no documents: the flights are misses.
    token = mx_doc_cache_write_begin (cache, flids, 2, NULL);
    mx_doc_cache_write_end (cache, token, flids, 2, NULL, 0);
    assert_false (s_has (cache, 5));
    assert_false (s_has (cache, 6));
    mx_doc_cache_destroy (&cache);
}

//  Another writer took the flight after this write committed (its own
//  write begun and even ended before this one's end): this write's
//  document is older and never enters.
static void
test_write_end_never_stores_over_a_later_write (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 0);
    int64_t flid = 9;
    uint64_t first = mx_doc_cache_write_begin (cache, &flid, 1, NULL);
    uint64_t second = mx_doc_cache_write_begin (cache, &flid, 1, NULL);
    assert_true (second > first);
    mx_doc_cache_invalidate (cache, &flid, 1);              //  the later write ends first
    mx_doc_cache_doc_t doc = { 9, 1, "old", 3 };
    mx_doc_cache_write_end (cache, first, &flid, 1, &doc, 1);
    assert_false (s_has (cache, 9));
    //  Off: no token, nothing stored.
    mx_doc_cache_disable (cache);
    assert_int_equal (mx_doc_cache_write_begin (cache, &flid, 1, NULL), 0);
    mx_doc_cache_enable (cache);
    mx_doc_cache_write_end (cache, 0, &flid, 1, &doc, 1);
    assert_false (s_has (cache, 9));
    mx_doc_cache_destroy (&cache);
}

typedef struct {
    mx_doc_cache_t *cache;
    int64_t flid;
    bool hit;
    bool waited;
    int64_t version;
    char *doc;
} s_waiter_t;

static void *
s_await (void *arg)
{
    s_waiter_t *waiter = (s_waiter_t *) arg;
    waiter->hit = mx_doc_cache_await (waiter->cache, waiter->flid, 60000, &waiter->version,
                                      &waiter->doc, NULL, &waiter->waited);
    return NULL;
}

//  Blocks until n threads wait in the cache (they get there in
//  microseconds; the bound only ends a broken test).
static void
s_until_waiting (mx_doc_cache_t *cache, size_t n)
{
    mx_doc_cache_stats_t stats;
    for (long spins = 0; spins < 100000000L; spins++) {
        mx_doc_cache_stats (cache, &stats);
        if (stats.waiting == n)
            return;
        sched_yield ();
    }
    fail_msg ("no thread came to wait in the cache");
}

//  A read that misses while a write of its flight is under way waits for
//  the write's end and gets the document it stored; without a write under
//  way it does not wait at all.
static void
test_await_gets_the_document_of_the_write_under_way (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 0);
    int64_t version = 0;
    bool waited = true;
    assert_false (mx_doc_cache_await (cache, 3, 60000, &version, NULL, NULL, &waited));
    assert_false (waited);
    int64_t flid = 3;
    uint64_t token = mx_doc_cache_write_begin (cache, &flid, 1, NULL);
    s_waiter_t waiter = { .cache = cache, .flid = 3 };
    pthread_t thread;
    assert_int_equal (pthread_create (&thread, NULL, s_await, &waiter), 0);
    s_until_waiting (cache, 1);
    mx_doc_cache_doc_t doc = { 3, 4, "three-4", 7 };
    mx_doc_cache_write_end (cache, token, &flid, 1, &doc, 1);
    pthread_join (thread, NULL);
    assert_true (waiter.hit);
    assert_true (waiter.waited);
    assert_int_equal (waiter.version, 4);
    assert_string_equal (waiter.doc, "three-4");
    free (waiter.doc);
    mx_doc_cache_stats_t stats;
    mx_doc_cache_stats (cache, &stats);
    assert_int_equal (stats.waits, 1);
    assert_int_equal (stats.waiting, 0);
    mx_doc_cache_destroy (&cache);
}

//  A waiting read ends, a miss, when the write ends without a document or
//  the cache is turned off; and a wait is bounded.
static void
test_await_ends_without_a_document (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 0);
    int64_t flid = 4;
    mx_doc_cache_write_begin (cache, &flid, 1, NULL);
    s_waiter_t waiter = { .cache = cache, .flid = 4 };
    pthread_t thread;
    assert_int_equal (pthread_create (&thread, NULL, s_await, &waiter), 0);
    s_until_waiting (cache, 1);
    mx_doc_cache_invalidate (cache, &flid, 1);
    pthread_join (thread, NULL);
    assert_false (waiter.hit);
    assert_true (waiter.waited);

    mx_doc_cache_write_begin (cache, &flid, 1, NULL);
    waiter = (s_waiter_t) { .cache = cache, .flid = 4 };
    assert_int_equal (pthread_create (&thread, NULL, s_await, &waiter), 0);
    s_until_waiting (cache, 1);
    mx_doc_cache_disable (cache);
    pthread_join (thread, NULL);
    assert_false (waiter.hit);
    assert_true (waiter.waited);

    //  Nobody ends the write: the read gives up after its bound.
    mx_doc_cache_enable (cache);
    mx_doc_cache_write_begin (cache, &flid, 1, NULL);
    int64_t version = 0;
    bool waited = false;
    assert_false (mx_doc_cache_await (cache, 4, 1, &version, NULL, NULL, &waited));
    assert_true (waited);
    mx_doc_cache_destroy (&cache);
}

//  Records are bounded: when the record of a flight goes, the floor rises
//  to its sequence and every ticket older than it is refused, for any
//  flight.
static void
test_floor_rises_when_a_record_goes (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 2);
    uint64_t early = mx_doc_cache_ticket (cache);
    int64_t flids [] = { 1, 2, 3 };
    mx_doc_cache_invalidate (cache, &flids [0], 1);
    uint64_t middle = mx_doc_cache_ticket (cache);
    mx_doc_cache_invalidate (cache, &flids [1], 1);
    mx_doc_cache_invalidate (cache, &flids [2], 1);         //  1's record goes
    mx_doc_cache_stats_t stats;
    mx_doc_cache_stats (cache, &stats);
    assert_int_equal (stats.records, 2);
    //  Flight 1 was invalidated after early: refused without its record.
    assert_false (mx_doc_cache_put (cache, early, 1, 1, "x", 1));
    assert_false (mx_doc_cache_put (cache, early, 7, 1, "x", 1));
    //  middle came after 1's invalidation: 1 is fine, 2 is not (its record).
    assert_true (mx_doc_cache_put (cache, middle, 1, 1, "x", 1));
    assert_false (mx_doc_cache_put (cache, middle, 2, 1, "x", 1));
    assert_true (mx_doc_cache_put (cache, mx_doc_cache_ticket (cache), 2, 2, "y", 1));
    mx_doc_cache_destroy (&cache);
}

//  Off while not the writer: empty, every lookup a miss, every put
//  refused; a read begun before enabling never enters after it.
static void
test_disable_and_enable (void **state)
{
    (void) state;
    mx_doc_cache_t *cache = s_cache (16, 4096, 0);
    assert_true (s_put (cache, 1, 1));
    mx_doc_cache_disable (cache);
    assert_false (mx_doc_cache_enabled (cache));
    assert_false (s_has (cache, 1));
    uint64_t before = mx_doc_cache_ticket (cache);
    assert_false (mx_doc_cache_put (cache, before, 1, 1, "x", 1));
    mx_doc_cache_stats_t stats;
    mx_doc_cache_stats (cache, &stats);
    assert_int_equal (stats.entries, 0);
    assert_int_equal (stats.misses, 0);             //  off: not counted
    mx_doc_cache_enable (cache);
    assert_false (mx_doc_cache_put (cache, before, 1, 1, "x", 1));
    assert_true (s_put (cache, 1, 2));
    assert_true (s_has (cache, 1));
    mx_doc_cache_destroy (&cache);
}

//  Readers and a writer on several threads (run under TSan too): the
//  writer begins, commits (a version in the "database"), ends the write
//  (with the committed document or without); readers look up (or wait for
//  a write under way), and on a miss take a ticket, read and put. A hit is
//  never older than what was committed before the lookup.
#define S_FLIGHTS 64
#define S_ROUNDS 20000

typedef struct {
    mx_doc_cache_t *cache;
    pthread_mutex_t lock;               //  the "database": committed versions
    int64_t versions [S_FLIGHTS];
    int stale;                          //  hits older than committed at lookup
    unsigned seed;
} s_shared_t;

static void *
s_writer (void *arg)
{
    s_shared_t *shared = (s_shared_t *) arg;
    unsigned seed = 1;
    for (int round = 0; round < S_ROUNDS; round++) {
        int64_t flid = (int64_t) (rand_r (&seed) % S_FLIGHTS);
        uint64_t token = mx_doc_cache_write_begin (shared->cache, &flid, 1, NULL);
        pthread_mutex_lock (&shared->lock);
        int64_t version = ++shared->versions [flid];        //  commit
        pthread_mutex_unlock (&shared->lock);
        //  Then the end: with the committed document every other round.
        mx_doc_cache_doc_t doc = { flid, version, "doc", 3 };
        if (round % 2)
            mx_doc_cache_write_end (shared->cache, token, &flid, 1, &doc, 1);
        else
            mx_doc_cache_invalidate (shared->cache, &flid, 1);
    }
    return NULL;
}

static void *
s_reader (void *arg)
{
    s_shared_t *shared = (s_shared_t *) arg;
    unsigned seed = __atomic_add_fetch (&shared->seed, 7, __ATOMIC_SEQ_CST);
    for (int round = 0; round < S_ROUNDS; round++) {
        int64_t flid = (int64_t) (rand_r (&seed) % S_FLIGHTS);
        int64_t cached = 0;
        //  Committed and invalidated before the lookup: a hit is at least it.
        pthread_mutex_lock (&shared->lock);
        int64_t floor = shared->versions [flid];
        pthread_mutex_unlock (&shared->lock);
        bool hit = round % 2 ? mx_doc_cache_get (shared->cache, flid, &cached, NULL, NULL)
                             : mx_doc_cache_await (shared->cache, flid, 5, &cached, NULL, NULL, NULL);
        if (hit) {
            if (cached < floor)
                __atomic_add_fetch (&shared->stale, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        uint64_t ticket = mx_doc_cache_ticket (shared->cache);
        pthread_mutex_lock (&shared->lock);
        int64_t version = shared->versions [flid];          //  the read
        pthread_mutex_unlock (&shared->lock);
        mx_doc_cache_put (shared->cache, ticket, flid, version, "doc", 3);
    }
    return NULL;
}

static void
test_concurrent_readers_and_writer (void **state)
{
    (void) state;
    s_shared_t shared = { .cache = s_cache (S_FLIGHTS / 2, 4096, 16) };
    pthread_mutex_init (&shared.lock, NULL);
    pthread_t threads [4];
    assert_int_equal (pthread_create (&threads [0], NULL, s_writer, &shared), 0);
    for (int i = 1; i < 4; i++)
        assert_int_equal (pthread_create (&threads [i], NULL, s_reader, &shared), 0);
    for (int i = 0; i < 4; i++)
        pthread_join (threads [i], NULL);
    assert_int_equal (shared.stale, 0);
    //  Quiet now: whatever is cached is the committed version.
    for (int64_t flid = 0; flid < S_FLIGHTS; flid++) {
        int64_t cached = 0;
        if (mx_doc_cache_get (shared.cache, flid, &cached, NULL, NULL))
            assert_int_equal (cached, shared.versions [flid]);
    }
    pthread_mutex_destroy (&shared.lock);
    mx_doc_cache_destroy (&shared.cache);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_off_is_null_and_harmless),
        cmocka_unit_test (test_hit_returns_the_document),
        cmocka_unit_test (test_bounded_by_entries_least_recent_out),
        cmocka_unit_test (test_bounded_by_bytes),
        cmocka_unit_test (test_invalidate_drops_the_entry),
        cmocka_unit_test (test_read_racing_a_commit_is_refused),
        cmocka_unit_test (test_write_under_way_holds_the_flight_off),
        cmocka_unit_test (test_kept_during_writes_answers_the_state_before),
        cmocka_unit_test (test_write_end_stores_what_it_committed),
        cmocka_unit_test (test_write_end_never_stores_over_a_later_write),
        cmocka_unit_test (test_await_gets_the_document_of_the_write_under_way),
        cmocka_unit_test (test_await_ends_without_a_document),
        cmocka_unit_test (test_floor_rises_when_a_record_goes),
        cmocka_unit_test (test_disable_and_enable),
        cmocka_unit_test (test_concurrent_readers_and_writer),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
