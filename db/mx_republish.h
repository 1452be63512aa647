/*  mx_republish - re-publish jobs (msgxctl republish) in PostgreSQL.

    A job re-sends the current state of the flights of its scope (the
    FLIDs asked for, an operation day, or every flight) to KAFKA:schd and,
    with reference, every ref_master entry to KAFKA:ref, as outbox events
    like any other: the delivering actors send them in event_id order. Each
    step is one small transaction that locks the flights (or entries) it
    sends, writes their events and moves the job's cursor with them, so a
    re-published state never overtakes a newer one (a change committed
    before the step is read by it, one committed after it has a later
    event) and a restart goes on after the last FLID (then LIST:KEY) done.
    One job runs at a time (republish_job_one_running_idx).

    Functions return 0 / -1 with *error (a malloc'd line) unless said.
*/
#ifndef MX_REPUBLISH_H_INCLUDED
#define MX_REPUBLISH_H_INCLUDED

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_tz.h"

//  What a job covers: at most one of flids (count > 0), day (YYYY-MM-DD)
//  or all; reference adds the reference entries (alone: only them).
typedef struct {
    const int64_t *flids;
    size_t count;
    const char *day;
    bool all;
    bool reference;
} mx_republish_scope_t;

//  What the scope holds now: *flights (flights of flight_schd in it) and
//  *entries (ref_master rows, 0 without reference). For a FLID list,
//  *unknown (malloc'd, may be NULL when not wanted) gets the FLIDs asked
//  for that are no flight, as "7, 9" (NULL when every one is).
int mx_republish_count (PGconn *conn, const mx_republish_scope_t *scope, int64_t *flights,
                        int64_t *entries, char **unknown, char **error);

//  Creates the job (RUNNING, totals counted in the same statement).
//  Returns 1 with *job_id, 0 when a job runs already (*running: a line
//  saying which, malloc'd), -1 with *error.
int mx_republish_create (PGconn *conn, const mx_republish_scope_t *scope, const char *os_user,
                         int64_t now_ms, int64_t *job_id, char **running, char **error);

//  The RUNNING job: returns 1 with *job_id, 0 when none, -1 with *error.
int mx_republish_running (PGconn *conn, int64_t *job_id, char **error);

//  Cancels the RUNNING job: returns 1 with *job_id and *left (events it
//  had still to send), 0 when none runs, -1 with *error.
int mx_republish_cancel (PGconn *conn, int64_t now_ms, int64_t *job_id, int64_t *left, char **error);

typedef struct {
    bool running;               //  false: the job is over (DONE, or cancelled meanwhile)
    int64_t flights;            //  events of this step: KAFKA:schd
    int64_t entries;            //  KAFKA:ref
    int64_t remaining;          //  events still to send after it (the totals counted at the start)
} mx_republish_step_t;

//  One step of the job: up to limit events in one transaction (flights
//  first, in FLID order, then the entries in LIST, KEY order); the job is
//  DONE in the step that finds nothing more. A deleted flight goes as a
//  tombstone. zone renders the state documents.
int mx_republish_step (PGconn *conn, int64_t job_id, size_t limit, const mx_tz_t *zone, int64_t now_ms,
                       mx_republish_step_t *step, char **error);

//  The latest job for msgxctl status: *job (a new object) or json null
//  when there was none (or no republish_job table yet).
int mx_republish_status (PGconn *conn, json_t **job, char **error);

#endif
