/*  mx_instance_lock - see mx_instance_lock.h.  */
#include "mx_instance_lock.h"

#include <czmq.h>
#include <string.h>

#include "mx_pg.h"

int
mx_instance_lock_try (PGconn *conn, int64_t key, char **error)
{
    char key_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (key, key_text) };
    PGresult *res = NULL;
    if (mx_pg_exec (conn, "SELECT pg_try_advisory_lock($1::bigint)", 1, params, &res, error))
        return -1;
    bool got = strcmp (PQgetvalue (res, 0, 0), "t") == 0;
    PQclear (res);
    return got ? 1 : 0;
}

int
mx_instance_lock_wait (PGconn *conn, int64_t key, char **error)
{
    char key_text [MX_PG_INT64_BUFSIZE];
    const char *params [] = { mx_pg_int64_text (key, key_text) };
    if (PQsendQueryParams (conn, "SELECT pg_advisory_lock($1::bigint)", 1, NULL, params, NULL, NULL, 0))
        return 0;
    *error = strdup (PQerrorMessage (conn));
    return -1;
}

int
mx_instance_lock_readable (PGconn *conn, bool *waiting, char **error)
{
    bool broken = !PQconsumeInput (conn) || PQstatus (conn) != CONNECTION_OK;
    bool granted = false;
    if (!broken && *waiting && !PQisBusy (conn)) {
        PGresult *res;
        while ((res = PQgetResult (conn))) {
            if (PQresultStatus (res) == PGRES_TUPLES_OK)
                granted = true;
            else
                broken = true;
            PQclear (res);
        }
        *waiting = false;
    }
    else
    if (!broken && !*waiting) {
        //  Nothing is expected on an idle lock connection but notices.
        PGnotify *notify;
        while ((notify = PQnotifies (conn)))
            PQfreemem (notify);
    }
    if (!broken)
        return granted ? 1 : 0;
    char *why = strdup (PQerrorMessage (conn));
    char *end = why + strlen (why);
    while (end > why && (end [-1] == '\n' || end [-1] == ' '))
        *--end = 0;
    *error = why;
    return -1;
}
