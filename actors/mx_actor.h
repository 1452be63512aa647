/*  mx_actor - what every actor of msgxd shares.

    An actor is a czmq zactor (a thread with a PAIR pipe to its parent).
    Start-up has two phases because zactor_new discards the start status:
    the thread signals at once, then its parent sends START and waits for
    START_OK or START_FAILED (see proto/mx_cmd.def). Actors stop on "$TERM".
*/
#ifndef MX_ACTOR_H_INCLUDED
#define MX_ACTOR_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "mx_clock.h"
#include "mx_cmd.h"
#include "mx_config.h"
#include "mx_doc_cache.h"

//  What control hands to each child. Read-only for the child; owned by
//  control and valid until the child is destroyed.
typedef struct {
    const char *name;
    const mx_config_t *config;
    mx_clock_t *clock;
    //  Unique per control instance: names the inproc data sockets
    //  ("inproc://<scope>/processor"), so two instances in one process
    //  (tests) never meet.
    const char *scope;
    //  Effective Kafka bootstrap servers: the configured brokers, or the
    //  embedded mock cluster's address in the dev profile.
    const char *kafka_bootstrap;
    //  The read API's state-document cache (NULL: off), control's: http
    //  serves from it, the processor enables it while it runs and, with
    //  jobs, invalidates what they change (mx_doc_cache.h).
    mx_doc_cache_t *doc_cache;
} mx_actor_args_t;

//  The inproc endpoint of an actor's data socket.
const char *mx_actor_endpoint (const mx_actor_args_t *args, const char *actor, char *buf, size_t size);

typedef struct {
    const char *name;
    zactor_fn *fn;
    bool needs_mailbox;         //  not started when mailbox.shared-mysql.enabled=false
} mx_actor_def_t;

//  The actors of msgxd, in start order, stopped in reverse. Control starts
//  the service actors (mx_actor_is_service) at once, on a standby too, and
//  the pipeline actors once the instance holds the lock.
extern const mx_actor_def_t mx_pipeline_actors [];
extern const size_t mx_pipeline_actor_count;

//  True for the actors that report on the instance whatever its role
//  (metrics, http): control starts them before it competes for the lock
//  and tells them the role and pause state (ROLE).
bool mx_actor_is_service (const mx_actor_def_t *def);

//  Registers the metrics the actors count (their label-less ones, and the
//  event counters of both Kafka targets), each declared by its owner, so
//  a scrape shows them from the start, on every instance; and sets the
//  gauge msgx_build_info{version,commit} to 1.
void mx_actors_register_metrics (void);

//  zactor_destroy, then a hand-over ThreadSanitizer can see: what the
//  actor read (its args, its config) may be freed after this returns.
//  Use it for every actor started by the functions below.
void mx_actor_destroy (zactor_t **actor_p);

//  Start a child: zactor_new, then START, waiting up to timeout_ms for the
//  reply. Returns the actor, or NULL with *error set (malloc'd line).
//  *detail receives the START_OK text (malloc'd) when not NULL.
zactor_t *mx_actor_start (zactor_fn *fn, void *args, int timeout_ms,
                          char **detail, char **error);

//  The same for a pipeline actor; paused sends PAUSE before START, so that
//  it never claims work in the moment between its start and the pause.
zactor_t *mx_actor_start_pipeline (zactor_fn *fn, void *args, bool paused, int timeout_ms,
                                   char **detail, char **error);

//  The same for a service actor: ROLE (role, paused) goes before START, so
//  the actor knows the instance's role before it serves anything.
zactor_t *mx_actor_start_service (zactor_fn *fn, void *args, const char *role, bool paused,
                                  int timeout_ms, char **detail, char **error);


//  Answer START: START_OK with detail or START_FAILED with reason.
void mx_actor_reply_started (zsock_t *pipe, const char *detail);
void mx_actor_reply_failed (zsock_t *pipe, const char *reason);

//  A failure logged once per distinct text (an outage is one WARN line,
//  error_class INFRA), and the recovery once when it ends.
typedef struct {
    const char *actor;
    char *last;                 //  the line last logged, NULL when all is well
} mx_problem_t;

//  what: what failed; error: a malloc'd line, taken (may be NULL).
void mx_problem_report (mx_problem_t *self, const char *what, char *error);
void mx_problem_recovered (mx_problem_t *self);
void mx_problem_clear (mx_problem_t *self);

//  The actor's own PostgreSQL session, (re)connected when needed. Returns 0,
//  or -1 after reporting the failure to problem.
int mx_actor_pg (PGconn **conn, const mx_config_t *config, const char *actor, mx_problem_t *problem);

//  ---------------------------------------------------------------------
//  The loop every actor runs: its parent's pipe ("$TERM" ends it), the
//  fake clock's ticks, the actor's own sockets and descriptors, and its
//  timers. An actor file holds only its state and these handlers.

//  One more thing an actor watches: a socket, or a descriptor (sock NULL).
typedef struct {
    zsock_t *sock;
    int fd;
    //  Readable (or in error). true: poll again before any other source
    //  and before wake (the handler may have changed what is watched).
    bool (*ready) (void *self, void *arg);
    void *arg;
} mx_actor_source_t;

#define MX_ACTOR_SOURCES_MAX 62

typedef struct {
    //  A command from the parent other than "$TERM"; the handler takes the
    //  frames (mx_cmd_done). false: stop the actor (after START_FAILED and
    //  mx_actor_wait_term).
    bool (*command) (void *self, mx_cmd_t cmd, zmsg_t *rest);
    //  The sources to watch this turn, at most max; returns how many.
    size_t (*sources) (void *self, mx_actor_source_t *sources, size_t max);
    //  The clock time by which wake must run: INT64_MAX none, a past time
    //  at once. Fake clock: re-checked on every tick.
    int64_t (*deadline) (void *self);
    //  Instead of a deadline: a poll timeout in real milliseconds (-1 none),
    //  for a library that keeps its own timers.
    long (*timeout) (void *self);
    //  After each turn that brought no command: run what is due.
    void (*wake) (void *self);
} mx_actor_ops_t;

//  Signals the parent that the thread runs, then loops until "$TERM", an
//  interrupted pipe or a command handler's false.
void mx_actor_run (zsock_t *pipe, mx_clock_t *clock, const mx_actor_ops_t *ops, void *self);

//  After START_FAILED an actor waits here for "$TERM" and returns.
void mx_actor_wait_term (zsock_t *pipe);

#endif
