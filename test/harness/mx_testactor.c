/*  mx_testactor - see mx_testactor.h.  */
#include "mx_testactor.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "mx_migrate.h"

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

mx_testpg_t *
mx_testactor_pg (PGconn **conn)
{
    mx_testpg_t *pg = mx_testpg_new ();
    *conn = PQconnectdb (mx_testpg_conninfo (pg));
    if (PQstatus (*conn) != CONNECTION_OK)
        fail_msg ("cannot connect to the test database: %s", PQerrorMessage (*conn));
    char *error = NULL;
    int applied = 0;
    if (mx_migrate_apply (*conn, &applied, &error))
        fail_msg ("migrations: %s", error);
    return pg;
}

mx_config_t *
mx_testactor_config (mx_testpg_t *pg)
{
    mx_config_t *config = mx_config_new_defaults ();
    mx_testactor_set (config, "msgx.pg.conninfo", mx_testpg_conninfo (pg));
    return config;
}

void
mx_testactor_set (mx_config_t *config, const char *key, const char *value)
{
    if (mx_config_set (config, key, value, NULL))
        fail_msg ("config %s=%s refused", key, value);
}

void
mx_testactor_release (PGconn **conn, mx_config_t **config, mx_clock_t **clock, mx_testpg_t **pg)
{
    if (conn && *conn) {
        PQfinish (*conn);
        *conn = NULL;
    }
    if (config)
        mx_config_destroy (config);
    if (clock)
        mx_clock_destroy (clock);
    if (pg)
        mx_testpg_destroy (pg);
}
