/*  mx_mailbox - every access to the shared MariaDB/MySQL mailbox (CMINMSGS
    and COUTMSGS, docs/reference/wire.md §1).

    One mx_mailbox_t per actor (not thread-safe). The connection is opened
    lazily by the first call and dropped after any failure, so the next call
    reconnects: an infrastructure failure is an error, never "no rows".
    Connect, read and write timeouts come from mailbox.shared-mysql.*.
    Reads and the processed mark are retried once on a fresh connection when
    a reused connection turns out to be lost (server restart, idle timeout,
    KILL); the insert is never retried after it was sent, because the row
    may exist already.

    Every statement is prepared and its values bound. The session time zone
    is mailbox.shared-mysql.time-zone; DATETIME columns are converted by
    the server (UNIX_TIMESTAMP / FROM_UNIXTIME), so callers only see UTC
    epoch milliseconds.

    Functions return 0 on success and -1 on failure. On failure, if error is
    not NULL, *error is set (overwritten, not freed) to a malloc'd one-line
    reason; the caller frees it.
*/
#ifndef MX_MAILBOX_H_INCLUDED
#define MX_MAILBOX_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mx_config.h"
#include "mx_request.h"

typedef struct _mx_mailbox_t mx_mailbox_t;

typedef struct {
    int64_t id;
    int64_t received_ms;        //  -1 = CMINMSGS_DATE_RECEIVED is NULL
} mx_mailbox_row_t;

typedef enum {
    MX_MARK_WRITTEN,            //  this call wrote the mark
    MX_MARK_ALREADY,            //  the row was marked before; left untouched
    MX_MARK_MISSING,            //  no such row
    MX_MARK_ERROR               //  failed (or refused in shadow mode); *error set
} mx_mark_t;

//  No I/O yet. config must outlive the mailbox.
mx_mailbox_t *
    mx_mailbox_new (const mx_config_t *config);

//  Closes the connection; safe on NULL and twice.
void
    mx_mailbox_destroy (mx_mailbox_t **self_p);

//  SELECT CMINMSGS_ID, CMINMSGS_DATE_RECEIVED FROM CMINMSGS
//  WHERE CMINMSGS_ID > after_id ORDER BY CMINMSGS_ID LIMIT limit.
//  rows holds limit entries (limit >= 1); *count gets the number read
//  (0 on failure).
int
    mx_mailbox_scan (mx_mailbox_t *self, int64_t after_id, int limit,
                     mx_mailbox_row_t *rows, int *count, char **error);

//  Raw XML of row id: 1 found (*xml malloc'd and NUL-terminated, *size
//  bytes without the NUL), 0 no such row, -1 failure. A row longer than
//  max_bytes is not transferred: 1 with *xml NULL and *size its length.
int
    mx_mailbox_read (mx_mailbox_t *self, int64_t id, size_t max_bytes,
                     char **xml, size_t *size, char **error);

//  Compat entry: a new row with CMINMSGS_STATUS 'VALID' and
//  CMINMSGS_DATE_RECEIVED = received_ms (>= 0, stored in whole seconds).
//  *id gets the new CMINMSGS_ID. Refused (-1, "shadow mode: ...") when
//  msgx.shadow is true.
int
    mx_mailbox_insert (mx_mailbox_t *self, const char *xml, size_t size,
                       int64_t received_ms, int64_t *id, char **error);

//  The processed mark: CMINMSGS_STATUS = mailbox.processed-value,
//  CMINMSGS_DATE_PROCESSED = now_ms, only where CMINMSGS_DATE_PROCESSED IS
//  NULL (never overwritten). Refused (MX_MARK_ERROR) in shadow mode.
mx_mark_t
    mx_mailbox_mark (mx_mailbox_t *self, int64_t id, int64_t now_ms, char **error);

//  The processed mark of many rows, the same rule, a transaction per 64
//  rows: read (present? marked?), then the unmarked marked. Each row's
//  outcome is exact: a chunk in which someone else marked a row between
//  the two is undone and tried again row by row, as is a chunk that
//  fails, so one row that cannot be marked holds back no other. marks [i] gets the outcome
//  of ids [i]. Returns how many ids have their outcome: all of them, or up
//  to and including the first row that failed (MX_MARK_ERROR, *error set);
//  the ones after it were not tried.
size_t
    mx_mailbox_mark_many (mx_mailbox_t *self, const int64_t *ids, size_t count, int64_t now_ms,
                          mx_mark_t *marks, char **error);

//  MIN and MAX of CMINMSGS_ID; both 0 when the table is empty.
int
    mx_mailbox_bounds (mx_mailbox_t *self, int64_t *min_id, int64_t *max_id,
                       char **error);

//  IDs that exist in [from, to], ascending, at most max (max >= 1) into ids;
//  *count gets the number (0 on failure).
int
    mx_mailbox_existing (mx_mailbox_t *self, int64_t from, int64_t to,
                         int64_t *ids, int max, int *count, char **error);

//  Closes the connection, if any; the next call opens a new one. The
//  client's receive buffer grows to the largest row read and never
//  shrinks: after a large message this gives its memory back.
void
    mx_mailbox_release (mx_mailbox_t *self);

//  True while a connection is open (it may still turn out to be lost).
bool
    mx_mailbox_connected (mx_mailbox_t *self);

//  Why the last read or write of the mailbox failed (NONE after a success),
//  for counting failures by class.
typedef enum {
    MX_MAILBOX_FAILURE_NONE,
    MX_MAILBOX_FAILURE_CONNECT,     //  no connection, or its session set-up failed
    MX_MAILBOX_FAILURE_LOST,        //  the connection broke or timed out during the statement
    MX_MAILBOX_FAILURE_QUERY,       //  the server refused or failed the statement
    MX_MAILBOX_FAILURE_COUNT
} mx_mailbox_failure_t;

mx_mailbox_failure_t
    mx_mailbox_failure (const mx_mailbox_t *self);

//  "none", "connect", "lost", "query".
const char *
    mx_mailbox_failure_name (mx_mailbox_failure_t failure);

//  Raw text of every row with from <= CMINMSGS_ID <= to, ascending, in one
//  query (the processor's batches), up to `budget` bytes in all (real
//  sizes): the first row always, then rows while the sum stays within it
//  (the server stops; nothing past the budget is sent). *until (may be
//  NULL) gets the first id the answer does not cover: the last row's id +
//  1 (to + 1 when the range holds no row). *rows is malloc'd (free each
//  xml, then the array); a row larger than max_bytes has xml NULL and its
//  real size.
typedef struct {
    int64_t id;
    char *xml;
    size_t size;
} mx_mailbox_text_t;

int mx_mailbox_read_range (mx_mailbox_t *self, int64_t from, int64_t to, size_t max_bytes, size_t budget,
                           mx_mailbox_text_t **rows, size_t *count, int64_t *until, char **error);

//  ---------------------------------------------------------------------
//  Outbound requests (COUTMSGS, WIRE.md §1 and §9)

typedef struct {
    int64_t id;                 //  COUTMSGS_ID
    int64_t inserted_ms;        //  COUTMSGS_DATE_INSERTED (whole seconds)
    int64_t sent_ms;            //  COUTMSGS_DATE_SENT, -1 while the upstream has not sent it
} mx_outbound_row_t;

//  A new COUTMSGS row: the request text, COUTMSGS_DATE_INSERTED = now_ms
//  (whole seconds), ROUTINGID mailbox.outbound.routing-rqfd or -rqrd by
//  kind, every flag column 0. *id gets the new COUTMSGS_ID. Refused (-1,
//  "shadow mode: ...") when msgx.shadow is true. Never retried once sent:
//  after a failure the row may exist, so look for it with
//  mx_mailbox_outbound_find before inserting again.
int
    mx_mailbox_outbound_insert (mx_mailbox_t *self, mx_request_kind_t kind, const char *xml, size_t size,
                                int64_t now_ms, int64_t *id, char **error);

//  The first (lowest ID) COUTMSGS row of kind's ROUTINGID, inserted at or
//  after since_ms (whole seconds), whose text holds <SEQN>nnnnnn</SEQN> of
//  seqn. The time bound keeps out a row of the same SEQN from an earlier
//  turn of the counter. 1 found (*row set), 0 none, -1 failure. A read:
//  allowed in shadow mode.
int
    mx_mailbox_outbound_find (mx_mailbox_t *self, mx_request_kind_t kind, int seqn, int64_t since_ms,
                              mx_outbound_row_t *row, char **error);

#endif
