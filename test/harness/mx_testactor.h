/*  mx_testactor - starting an actor of msgxd in a test. */
#ifndef MX_TESTACTOR_H_INCLUDED
#define MX_TESTACTOR_H_INCLUDED

#include "mx_actor.h"

//  mx_actor_start with START answered within 10 s, or the test fails
//  saying what did not start and why. *detail (if not NULL) gets the
//  START_OK text (malloc'd).
zactor_t *
    mx_testactor_start (zactor_fn *fn, void *args, const char *what, char **detail);

#endif
