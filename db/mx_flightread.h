/*  mx_flightread - the read API's queries: which flights a day (or a
    window of days) holds under the filters operations use, and a
    reference list. Read-only; each function runs one statement on the
    caller's connection (the read API's own session, with its statement
    timeout). The flights themselves are read with mx_flight_repo_load.
*/
#ifndef MX_FLIGHTREAD_H_INCLUDED
#define MX_FLIGHTREAD_H_INCLUDED

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *day_from;               //  YYYY-MM-DD, inclusive
    const char *day_to;                 //  YYYY-MM-DD, inclusive
    const char *airline;                //  ALCD, or NULL for any
    const char *mvin;                   //  "A", "D", or NULL for both
    int64_t changed_since;              //  UTC epoch ms (updated_at >= it), -1 for any
} mx_flightread_filter_t;

//  The FLIDs above after that match filter, ascending, at most max of
//  them into flids (the caller's array), and their state versions into
//  versions (the same size; NULL: not wanted). Returns 0 with *count, or
//  -1 with *error (malloc'd).
int mx_flightread_list (PGconn *conn, const mx_flightread_filter_t *filter, int64_t after,
                        size_t max, int64_t *flids, int64_t *versions, size_t *count, char **error);

//  The operation day of now_ms in zone (an IANA name) shifted by days, as
//  YYYY-MM-DD into day (MX_FLIGHTREAD_DAY_BUFSIZE bytes).
#define MX_FLIGHTREAD_DAY_BUFSIZE 11
int mx_flightread_day (PGconn *conn, int64_t now_ms, const char *zone, int days, char *day,
                       char **error);

//  One reference list of ref_master as a JSON array text (malloc'd) of
//  {"key","value","updated_at","last_msg_id"} by key; *count its entries
//  (0: no such list, or an empty one).
int mx_flightread_reference (PGconn *conn, const char *list, char **json, int64_t *count,
                             char **error);

#endif
