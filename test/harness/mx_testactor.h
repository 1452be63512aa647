/*  mx_testactor - starting an actor of msgxd in a test, and the parts of
    a fixture most actor tests share: a fresh PostgreSQL database with the
    migrations applied, the test's own connection to it, a configuration
    that points there; released together at the end. */
#ifndef MX_TESTACTOR_H_INCLUDED
#define MX_TESTACTOR_H_INCLUDED

#include <libpq-fe.h>

#include "mx_actor.h"
#include "mx_clock.h"
#include "mx_config.h"
#include "mx_testenv.h"

//  mx_actor_start with START answered within 10 s, or the test fails
//  saying what did not start and why. *detail (if not NULL) gets the
//  START_OK text (malloc'd).
zactor_t *
    mx_testactor_start (zactor_fn *fn, void *args, const char *what, char **detail);

//  A fresh database with msgxd's migrations applied; *conn gets the
//  test's own connection to it. The test fails if either goes wrong.
mx_testpg_t *
    mx_testactor_pg (PGconn **conn);

//  The defaults, with msgx.pg.conninfo naming pg's database.
mx_config_t *
    mx_testactor_config (mx_testpg_t *pg);

//  mx_config_set, or the test fails naming the setting.
void
    mx_testactor_set (mx_config_t *config, const char *key, const char *value);

//  The end of such a fixture, in this order: the connection, the
//  configuration, the clock, the database. Each may be NULL.
void
    mx_testactor_release (PGconn **conn, mx_config_t **config, mx_clock_t **clock, mx_testpg_t **pg);

#endif
