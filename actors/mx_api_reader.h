/*  mx_api_reader - the read API's database work, off the http actor's
    thread: a child zactor of http with its own PostgreSQL session (the
    statement timeout msgx.api.statement-timeout bounds every read). http
    hands it each request (API_GET) with the connection suspended and
    answers when API_ANSWER comes back, so a slow database never stops
    libmicrohttpd from serving other clients.

    GET /all/flights is streamed: the first page is read before anything
    is answered (a failure then is a plain 503), then sent as API_CHUNK in
    place of API_ANSWER; each further page (msgx.api.page-size flights,
    keyset by FLID, one statement each) is read only when http asks for it
    (API_MORE), so neither statement nor memory grows with the window, and
    other requests are answered between the pages. A failure mid-stream
    ends the document with an "error" member and the piece marked failed:
    http then cuts the chunked response short. At most S_STREAMS_MAX (4)
    streams at once per reader; one more is 503.

    http runs msgx.api.readers of them, each with its own thread and
    session, and hands each request to the one with the least in hand (its
    unanswered requests and open streams): a reader busy with a page of
    GET /all/flights or a read slowed by a busy database holds up only the
    requests it already took. A reader answers its own requests in order;
    http matches answers to requests by tag.

    It reads only PostgreSQL, never the control loop's state, so a standby
    answers as the active does. On the active instance each state document
    it renders for GET /flights/{flid} is put into the state-document cache
    with the ticket taken before its read (mx_doc_cache.h); http answers
    the next request for it itself (mx_api_reader_cached). Paths, parameters and limits are checked
    here, one place: every refusal is a JSON error {"error":{"code",
    "message"}} counted in msgx_api_requests_total by outcome.

    args is an mx_api_reader_args_t * that outlives the actor. It runs
    mx_actor_run: "$TERM" stops it (after the request in hand).
*/
#ifndef MX_API_READER_H_INCLUDED
#define MX_API_READER_H_INCLUDED

#include "mx_actor.h"

typedef struct {
    const char *name;                   //  for its log lines
    const mx_config_t *config;
    //  The state documents it read go in (with the ticket taken before
    //  the read); NULL = off. See mx_doc_cache.h.
    mx_doc_cache_t *doc_cache;
} mx_api_reader_args_t;

//  Registers the read API's metric series (so they show before the first request).
void
    mx_api_reader_register_metrics (void);

//  Counts a refusal decided by http itself (authentication): outcome is
//  "unauthorized" or "forbidden".
void
    mx_api_reader_count (const char *outcome);

void
    mx_api_reader_actor (zsock_t *pipe, void *args);

//  GET /flights/{flid} answered from the cache in the caller's thread (the
//  http thread: no hop to a reader, no PostgreSQL): true on a hit, with
//  *status 200 (*body the document) or 304 (If-None-Match matched, *body
//  ""), and *etag, all malloc'd, the outcome and the hit counted. False
//  when it is not such a request (path, parameters), or the cache is off
//  (counted nowhere) or misses (counted as a miss): the reader answers.
bool
    mx_api_reader_cached (mx_doc_cache_t *cache, const char *path, bool has_args,
                          const char *if_none_match, int *status, char **etag, char **body);

//  Sets msgx_api_cache_entries and msgx_api_cache_bytes (before a scrape).
void
    mx_api_reader_cache_gauges (mx_doc_cache_t *cache);

//  Gives the calling thread (thread: "reader" or "http", for the log) the
//  nice value msgx.api.nice, when not 0: the read API's threads then go
//  before (negative) or after (positive) the other threads of msgxd when
//  the cores are busy. A refusal (a negative value without CAP_SYS_NICE)
//  is logged as a warning and the thread runs on at the process's value.
//  Returns 0, or -1 if refused.
int
    mx_api_reader_nice (const mx_config_t *config, const char *name, const char *thread);

//  Called before each page of a GET /all/flights stream but the first,
//  when set. Only the test tree's msgxd-hooked sets one (before the actors
//  start), to hold a stream between its pages.
typedef void (mx_api_reader_page_fn) (void);
void
    mx_api_reader_set_page_hook (mx_api_reader_page_fn *hook);

#endif
