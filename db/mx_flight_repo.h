/*  mx_flight_repo - flight state, outbox events, snapshot log and
    reference data in PostgreSQL: the one write path of SPEC §4.

    Every call runs on the caller's connection inside the caller's
    transaction (the processor owns BEGIN/SAVEPOINT/COMMIT); none commits.
    Times are UTC epoch ms. Returns 0 / -1 with *error (malloc'd line).
*/
#ifndef MX_FLIGHT_REPO_H_INCLUDED
#define MX_FLIGHT_REPO_H_INCLUDED

#include <libpq-fe.h>

#include "mx_flight.h"
#include "mx_sis_body.h"

//  Lock (SELECT ... FOR UPDATE) and read the full state (scalars, sets,
//  rare sets, extra, bookkeeping) of the given flights in ONE round trip.
//  out [i] = the flight, or NULL when flids [i] does not exist. Values in
//  the canonical text of mx_flight.h, so they compare with decoded ones.
int mx_flight_repo_load (PGconn *conn, const int64_t *flids, size_t count, bool lock,
                         mx_flight_t **out, char **error);

//  Read the full state of the given flights (no lock), as mx_flight_repo_load
//  does, and hand each to each (which takes it) as its row arrives, in flid
//  order: the caller works on the rows of one chunk of flights while the
//  server still reads the next (the chunks go in one pipeline). A flid that does not exist is skipped. Returns 0, or
//  -1 with *error (each may have had some flights by then).
typedef void (mx_flight_repo_each_fn) (mx_flight_t *flight, void *arg);
int mx_flight_repo_load_each (PGconn *conn, const int64_t *flids, size_t count,
                              mx_flight_repo_each_fn *each, void *arg, char **error);

//  Lock the given flights (FOR UPDATE, in flid order) and read what tells
//  their stored state apart: versions [i] and last_msg_ids [i] (0 = none)
//  for flids [i], versions [i] = -1 when there is no such row. One round
//  trip; lets a caller that kept a flight skip reading it whole.
int mx_flight_repo_lock (PGconn *conn, const int64_t *flids, size_t count, int64_t *versions,
                         int64_t *last_msg_ids, char **error);

//  The stored version of one flight: *version and *last_msg_id, and
//  *changed_since = a message after since_msg_id changed it last.
//  Returns 1 found, 0 no such flight, -1 with *error.
int mx_flight_repo_version (PGconn *conn, int64_t flid, int64_t since_msg_id, int64_t *version,
                            int64_t *last_msg_id, bool *changed_since, char **error);

//  Write `after` (its state_version and last_msg_id already set by the
//  caller): INSERT when before is NULL, else only what differs (changed
//  scalars in one UPDATE, each changed set replaced). Batched statements
//  (pipeline mode or one statement per table) rather than one per value.
int mx_flight_repo_save (PGconn *conn, const mx_flight_t *before, const mx_flight_t *after,
                         int64_t now_ms, char **error);

//  The same for many flights (before [i] NULL = new), sent as pipelines of
//  a few hundred statements: one round trip per pipeline.
int mx_flight_repo_save_many (PGconn *conn, const mx_flight_t *const *before,
                              const mx_flight_t *const *after, size_t count,
                              int64_t now_ms, char **error);

typedef enum { MX_TARGET_MSG, MX_TARGET_SCHD } mx_target_t;
typedef enum { MX_EVENT_UPSERT, MX_EVENT_TOMBSTONE } mx_event_type_t;

//  Insert one outbox row (state PENDING). payload: the JSON document text
//  with its "event_id" member set to the new event id by the insert itself
//  (one statement); NULL payload = null value (KAFKA:schd tombstone).
//  *event_id gets the id.
int mx_event_insert (PGconn *conn, mx_target_t target, mx_event_type_t type, int64_t flid,
                     int64_t state_version, int64_t msg_id, const char *payload,
                     int64_t now_ms, int64_t *event_id, char **error);

//  One row per applied schedule message (SPEC §2 schd_snap_log).
int mx_snap_log_insert (PGconn *conn, int64_t msg_id, const char *styp, int64_t scope_begin_ms,
                        int64_t scope_end_ms, int64_t now_ms, int inserted, int updated,
                        int unchanged, char **error);

//  Reference data (WIRE §7): DNLD/RESP replace the whole RTYPE set, ADD/UPD
//  upsert, DEL removes the listed keys. *changed gets the rows affected.
//  Each row changed gets its KAFKA:ref event in the same statement (key
//  LIST:KEY; an UPSERT with the entry's document, a tombstone for a row
//  deleted), so the outbox holds them exactly when the change is committed.
int mx_reference_apply (PGconn *conn, const mx_reference_t *ref, int64_t msg_id, int64_t now_ms,
                        int *changed, char **error);

#endif
