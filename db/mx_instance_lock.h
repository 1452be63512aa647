/*  mx_instance_lock - the instance lock: a PostgreSQL session-level
    advisory lock on a dedicated connection. The instance that holds it is
    active; the others wait for it asynchronously, so the wait and the
    fencing both show as the connection's socket becoming readable.
*/
#ifndef MX_INSTANCE_LOCK_H_INCLUDED
#define MX_INSTANCE_LOCK_H_INCLUDED

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

//  pg_try_advisory_lock. Returns 1 granted, 0 held by another instance,
//  -1 with *error (malloc'd).
int mx_instance_lock_try (PGconn *conn, int64_t key, char **error);

//  Sends pg_advisory_lock without waiting for it: the grant arrives later
//  on the socket. Returns 0, or -1 with *error (malloc'd).
int mx_instance_lock_wait (PGconn *conn, int64_t key, char **error);

//  The socket became readable. *waiting: a wait is out (cleared once it
//  ended). Returns 1 granted, 0 nothing for us (notices), -1 the
//  connection broke (*error, malloc'd: why).
int mx_instance_lock_readable (PGconn *conn, bool *waiting, char **error);

#endif
