/*  mx_migrate - versioned schema migrations of msgexchange's own database.

    The files db/migrations/V<version>__<name>.sql are compiled into the
    binary (db/embed_sql.cmake), so msgxd runs from any directory. Applied
    versions are recorded in schema_migrations with the SHA-256 of their
    text. Each pending migration runs in its own transaction together with
    its schema_migrations row, under a transaction-level advisory lock, so
    concurrent appliers never interleave and a crash leaves either the whole
    migration or none of it.
*/
#ifndef MX_MIGRATE_H_INCLUDED
#define MX_MIGRATE_H_INCLUDED

#include <stddef.h>
#include <libpq-fe.h>

//  pg_advisory_xact_lock key held by every migration transaction: the bytes
//  "mxmigr" as a bigint, passed as a query parameter.
//  Distinct from any session-level lock the daemon holds.
#define MX_MIGRATE_LOCK_KEY "120363999127410"

typedef struct {
    int version;            //  from the file name, > 0
    const char *name;       //  "baseline"
    const char *file;       //  "V001__baseline.sql"
    const char *sql;        //  the text, NUL-terminated
    size_t sql_len;         //  bytes, without the NUL
    const char *checksum;   //  SHA-256 of the text, lower-case hex
} mx_migrate_entry_t;

//  Apply every pending migration, in version order. conn must not be in a
//  transaction. *applied (if not NULL) gets the number applied by this call.
//  Refuses (-1, nothing applied) when an applied migration's checksum
//  differs from the embedded one, when the database holds a version this
//  binary does not know (e.g. newer), or when a pending migration is older
//  than one already applied. Migrations applied before a failure stay.
int
    mx_migrate_apply (PGconn *conn, int *applied, char **error);

//  Highest embedded version.
int
    mx_migrate_latest_version (void);

//  Number of embedded migrations.
int
    mx_migrate_count (void);

//  Embedded migration index (0 .. mx_migrate_count () - 1), in version order.
const mx_migrate_entry_t *
    mx_migrate_entry (int index);

#endif
