/*  mx_testactor - see mx_testactor.h.  */
#include "mx_testactor.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

zactor_t *
mx_testactor_start (zactor_fn *fn, void *args, const char *what, char **detail)
{
    char *text = NULL, *error = NULL;
    zactor_t *actor = mx_actor_start (fn, args, 10000, &text, &error);
    if (!actor)
        fail_msg ("%s did not start: %s", what, error);
    if (detail)
        *detail = text;
    else
        free (text);
    return actor;
}
