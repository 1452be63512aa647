/*  mx_rawstore - the retained copy of each processed message's raw text
    (table raw_message, msgx.pipeline.raw-retention), read before the
    mailbox by everything that needs a message's text again (replay, show,
    the processor), so a row the mailbox owner purged is still there until
    the retention ends.

    Functions return 0 / -1 with *error (a malloc'd line) unless said
    otherwise. Times are UTC epoch milliseconds.
*/
#ifndef MX_RAWSTORE_H_INCLUDED
#define MX_RAWSTORE_H_INCLUDED

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_mailbox.h"

//  Where a raw text came from.
typedef enum {
    MX_RAW_NONE,                //  neither has it
    MX_RAW_RETAINED,            //  raw_message
    MX_RAW_MAILBOX              //  CMINMSGS
} mx_raw_source_t;

//  "none", "retention", "mailbox".
const char *mx_rawstore_source_name (mx_raw_source_t source);

//  The retained text of msg_id: 1 found (*xml malloc'd, NUL-terminated,
//  *size bytes; a text over max_bytes: *xml NULL and *size its length),
//  0 not retained, -1 failure.
int mx_rawstore_read (PGconn *conn, int64_t msg_id, size_t max_bytes, char **xml, size_t *size,
                      char **error);

//  Retained texts of from <= msg_id <= to, ascending, the mailbox's row
//  type (free each xml, then the array; xml NULL when over max_bytes).
int mx_rawstore_read_range (PGconn *conn, int64_t from, int64_t to, size_t max_bytes,
                            mx_mailbox_text_t **rows, size_t *count, char **error);

//  The one rule of where a text is read: the retained copy first, the
//  mailbox (may be NULL: not configured) only when there is none. Returns
//  what mx_mailbox_read does (1 found, 0 neither has it, -1 failure); a
//  mailbox failure after no retained copy is a failure. *source says
//  which one answered.
int mx_rawstore_load (PGconn *conn, mx_mailbox_t *mailbox, int64_t msg_id, size_t max_bytes,
                      char **xml, size_t *size, mx_raw_source_t *source, char **error);

//  Keeps one text (a no-op when msg_id is kept already), in the caller's
//  transaction.
int mx_rawstore_keep (PGconn *conn, int64_t msg_id, const char *xml, size_t size, int64_t now_ms,
                      char **error);

//  Keeps many texts in one COPY, in the caller's transaction; none of
//  ids may be kept already (the caller read the range first). Entries
//  with xml NULL are left out.
int mx_rawstore_keep_many (PGconn *conn, const mx_mailbox_text_t *rows, size_t count, int64_t now_ms,
                           char **error);

//  Deletes up to limit copies kept before before_ms, in ONE short
//  transaction of its own; *deleted gets how many. Call again while it
//  comes back full.
int mx_rawstore_sweep (PGconn *conn, int64_t before_ms, int limit, int *deleted, char **error);

#endif
