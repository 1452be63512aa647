/*  mx_diff_source - where msgx-diff reads: msgxd's flights from its
    PostgreSQL, and the legacy table from MariaDB/MySQL or PostgreSQL.

    Over the network (a host that is neither loopback nor a socket) each
    side must verify its server, as prod msgxd does: sslmode verify-ca or
    verify-full for PostgreSQL, ssl-mode verify-full for MariaDB; unless
    allow_unverified. Both sides are read only (a READ ONLY transaction, one snapshot) and
    under a statement timeout. msgxd's window goes into mx_diff (bounded by
    its max_flights); the legacy rows stream, one row in memory at a time
    (libpq single-row mode, an unbuffered prepared statement on MariaDB).
    Values are bound as parameters; table and column names are the
    mapping's, checked as plain identifiers.
*/
#ifndef MX_DIFF_SOURCE_H_INCLUDED
#define MX_DIFF_SOURCE_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

#include "mx_diff.h"

typedef struct {
    const char *day;                    //  YYYY-MM-DD, or NULL for the FLID range
    int64_t flid_from;
    int64_t flid_to;
} mx_diff_window_t;

typedef struct {
    const char *uri;                    //  mysql://, mariadb://, postgresql:// or postgres://
    const char *password_file;          //  MariaDB: the password's file (NULL: none)
    const char *ssl_mode;               //  MariaDB: disabled, required, verify-full (NULL: by host)
    const char *ssl_ca;
    const char *ssl_cert;
    const char *ssl_key;
    int timeout_s;                      //  connect and statement timeout
    bool allow_unverified;              //  accept a server not verified over the network
} mx_diff_legacy_t;

//  msgxd's flights of the window (not DELETED) into diff. conninfo as
//  msgx.pg.conninfo. Returns 0, or -1 with *error (malloc'd).
int mx_diff_source_msgx (const char *conninfo, int timeout_s, bool allow_unverified,
                         const mx_diff_map_t *map, const mx_diff_window_t *window, mx_diff_t *diff,
                         char **error);

//  The legacy rows of the window, each fed to mx_diff_add_legacy.
int mx_diff_source_legacy (const mx_diff_legacy_t *legacy, const mx_diff_map_t *map,
                           const mx_diff_window_t *window, mx_diff_t *diff, char **error);

#endif
