/*  mx_testdaemon - a real msgxd for end-to-end tests: the environment the
    tests give every one (its PostgreSQL, an admin socket in the test's
    folder, the pipeline started and polled every 50 ms, /metrics on a free
    port, the test's MariaDB mailbox in UTC), started until it reports its
    role, stopped by SIGTERM with a clean exit. A test adds its own
    settings to the environment before the start.
*/
#ifndef MX_TESTDAEMON_H_INCLUDED
#define MX_TESTDAEMON_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#include "mx_testenv.h"
#include "mx_testproc.h"

#define MX_TESTDAEMON_WAIT_MS 60000
#define MX_TESTDAEMON_VARS_MAX 47

typedef struct {
    char *vars [MX_TESTDAEMON_VARS_MAX + 1];    //  "KEY=VALUE", malloc'd, NULL-terminated
    size_t count;
    int http_port;                              //  of MSGX_HTTP_BIND
} mx_testdaemon_env_t;

//  The common environment: the admin socket ipc://DIR/ADMIN_FILE, /metrics
//  on 127.0.0.1:http_port (0: a free port).
void
    mx_testdaemon_env_init (mx_testdaemon_env_t *env, mx_testpg_t *pg, mx_testmb_t *mb, const char *dir,
                            const char *admin_file, int http_port);

//  One more "KEY=VALUE" (printf format); a test that needs more than
//  MX_TESTDAEMON_VARS_MAX fails.
void
    mx_testdaemon_env_add (mx_testdaemon_env_t *env, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

void
    mx_testdaemon_env_free (mx_testdaemon_env_t *env);

//  Starts program (a path below $MX_BUILD_DIR: "cmd/msgxd") with env and
//  waits until it logs "role ROLE" (active, standby), or fails the test
//  with its stderr.
mx_testproc_t *
    mx_testdaemon_start (const char *program, const mx_testdaemon_env_t *env, const char *role);

//  Waits until msgxd has settled every message of the mailbox in
//  PostgreSQL (conn): as many SUCCEEDED, SKIPPED or DEAD, none PENDING or
//  FAILED; with outbox, no event PENDING in the outbox either. Returns the
//  number of messages in the mailbox.
long long
    mx_testdaemon_wait_processed (PGconn *conn, mx_testmb_t *mb, bool outbox);

//  Run BUILD/tools/msgx-gen --mysql with args (NULL-ended: seed, flights,
//  day...) into the mailbox mb, waiting up to timeout_ms; fails the test
//  when it fails. Returns its standard output (malloc'd).
char *
    mx_testdaemon_gen (const char *build, mx_testmb_t *mb, const char *const *args, int timeout_ms);

//  SIGTERM, then the exit, which must be 0; with MX_TEST_DUMP set, its
//  stderr is printed first.
void
    mx_testdaemon_stop (mx_testproc_t **daemon_p);

#endif
