/*  mx_inbox - see mx_inbox.h.  */
#include "mx_inbox.h"

#include <assert.h>
#include <czmq.h>
#include <inttypes.h>

#include "mx_bulk.h"
#include "mx_mailbox.h"
#include "mx_metrics.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_watermark.h"

struct _mx_inbox_t {
    const mx_config_t *config;
    PGconn *pg;
    mx_mailbox_t *mailbox;
    mx_mailbox_row_t *rows;
    int64_t *ids;
    int64_t *received;
};

mx_inbox_t *
mx_inbox_new (const mx_config_t *config)
{
    mx_inbox_t *self = (mx_inbox_t *) zmalloc (sizeof (mx_inbox_t));
    self->config = config;
    self->mailbox = mx_mailbox_new (config);
    size_t batch = (size_t) config->pipeline_claim_batch;
    self->rows = (mx_mailbox_row_t *) calloc (batch, sizeof (mx_mailbox_row_t));
    self->ids = (int64_t *) calloc (batch, sizeof (int64_t));
    self->received = (int64_t *) calloc (batch, sizeof (int64_t));
    assert (self->mailbox && self->rows && self->ids && self->received);
    return self;
}

void
mx_inbox_destroy (mx_inbox_t **self_p)
{
    assert (self_p);
    if (*self_p) {
        mx_inbox_t *self = *self_p;
        mx_pg_disconnect (&self->pg);
        mx_mailbox_destroy (&self->mailbox);
        free (self->rows);
        free (self->ids);
        free (self->received);
        free (self);
        *self_p = NULL;
    }
}

static int
s_pg (mx_inbox_t *self, char **error)
{
    if (self->pg && PQstatus (self->pg) == CONNECTION_OK)
        return 0;
    mx_pg_disconnect (&self->pg);
    char *why = NULL;
    self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-ingress", self->config->pg_statement_timeout, &why);
    if (self->pg)
        return 0;
    *error = zsys_sprintf ("PostgreSQL unreachable: %s", why);
    free (why);
    return -1;
}

//  Prefix an error line with what we were doing.
static int
s_failed (char **error, const char *what)
{
    char *line = zsys_sprintf ("%s: %s", what, *error ? *error : "unknown error");
    free (*error);
    *error = line;
    return -1;
}

//  A mailbox failure: counted by class, then as s_failed.
static int
s_mailbox_failed (mx_inbox_t *self, char **error, const char *what)
{
    mx_mailbox_failure_t failure = mx_mailbox_failure (self->mailbox);
    mx_metrics_add (mx_metrics_ingress_failures (mx_mailbox_failure_name (failure)), 1);
    return s_failed (error, what);
}

int
mx_inbox_round (mx_inbox_t *self, int64_t now, mx_inbox_round_t *round, char **error)
{
    memset (round, 0, sizeof *round);
    if (s_pg (self, error))
        return -1;
    mx_cursor_t cursor;
    if (mx_cursor_get (self->pg, &cursor, error))
        return s_failed (error, "cannot read the inbox cursor");
    round->w_before = round->w = cursor.w;
    round->hole_since = cursor.hole_since;
    int limit = (int) self->config->pipeline_claim_batch;
    int count = 0;
    if (mx_mailbox_scan (self->mailbox, cursor.w, limit, self->rows, &count, error))
        return s_mailbox_failed (self, error, "mailbox unreadable");
    for (int i = 0; i < count; i++) {
        self->ids [i] = self->rows [i].id;
        self->received [i] = self->rows [i].received_ms;
    }
    mx_watermark_t next = mx_watermark_advance (cursor.w, cursor.hole_since, self->ids, (size_t) count,
                                                now, self->config->pipeline_max_commit_delay);
    if (next.w == cursor.w && next.hole_since == cursor.hole_since && !next.released)
        return 0;               //  nothing to record
    if (mx_procstate_enqueue (self->pg, self->ids, self->received, next.admitted, next.w, next.hole_since,
                              next.released ? next.released_from : 0, next.released_to,
                              now, &round->enqueued, error))
        return s_failed (error, "cannot record the new messages");
    round->w = next.w;
    round->hole_since = next.hole_since;
    round->released = next.released;
    round->released_from = next.released_from;
    round->released_to = next.released_to;
    round->again = count == limit && !next.stopped_at_hole;
    return 0;
}

int
mx_inbox_late_check (mx_inbox_t *self, int64_t now, int *detected, char **message, char **error)
{
    *detected = 0;
    *message = NULL;
    if (s_pg (self, error))
        return -1;
    mx_released_hole_t *holes = NULL;
    size_t hole_count = 0;
    if (mx_released_holes_due (self->pg, now, self->config->pipeline_overdue_backfill,
                               self->config->pipeline_late_detect_batch, &holes, &hole_count, error))
        return s_failed (error, "cannot list released holes");
    int rc = 0;
    for (size_t h = 0; h < hole_count && rc == 0; h++) {
        int64_t from = holes [h].from, to = holes [h].to;
        int known = holes [h].late;
        int64_t found [256];
        int count = 0;
        if (mx_mailbox_existing (self->mailbox, from, to, found, 256, &count, error)) {
            rc = s_mailbox_failed (self, error, "mailbox unreadable during the late-arrival check");
            break;
        }
        if (mx_released_hole_checked (self->pg, holes [h].id, now, found, (size_t) count, error))
            rc = s_failed (error, "cannot record a late arrival");
        else
        if (count > known) {
            *detected += count - known;
            char *closed = mx_bulk_int_array (found, (size_t) count);
            char *line = zsys_sprintf ("%s%s%d in released hole %" PRId64 "..%" PRId64 " (%s)",
                                       *message ? *message : "", *message ? "; " : "",
                                       count - known, from, to, closed);
            free (closed);
            free (*message);
            *message = line;
        }
    }
    free (holes);
    return rc;
}

int
mx_inbox_seeded (mx_inbox_t *self, char **error)
{
    if (s_pg (self, error))
        return -1;
    mx_cursor_t cursor;
    if (mx_cursor_get (self->pg, &cursor, error))
        return s_failed (error, "cannot read the inbox cursor");
    return cursor.seeded_at >= 0;
}

int
mx_inbox_cutover (mx_inbox_t *self, const char *value, const char *os_user, int64_t now,
                  int64_t *w, char **message)
{
    *message = NULL;
    *w = 0;
    char *error = NULL;
    int rc;
    if (strcmp (value, "min") == 0 || strcmp (value, "max") == 0) {
        int64_t min_id = 0, max_id = 0;
        if (mx_mailbox_bounds (self->mailbox, &min_id, &max_id, &error)) {
            s_mailbox_failed (self, &error, "mailbox unreadable");
            *message = error;
            return -1;
        }
        *w = strcmp (value, "min") == 0 ? (min_id > 0 ? min_id - 1 : 0) : max_id;
    }
    else
    if (strcmp (value, "zero") != 0) {
        char *end = NULL;
        long long parsed = strtoll (value, &end, 10);
        if (!*value || *end || parsed <= 0) {
            *message = zsys_sprintf ("invalid cutover watermark '%s': expected min, zero, max or a positive ID", value);
            return 0;
        }
        *w = parsed;
    }
    if (s_pg (self, message))
        return -1;
    rc = mx_cursor_seed (self->pg, *w, now, &error);
    if (rc == 1)
        *message = zsys_sprintf ("W seeded to %" PRId64 " (cutover '%s')", *w, value);
    else
        *message = error;
    if (os_user && rc >= 0) {
        json_t *target = json_pack ("{s:s,s:I}", "watermark", value, "w", (json_int_t) *w);
        char *target_text = json_dumps (target, JSON_COMPACT);
        json_decref (target);
        char *audit_error = NULL;
        if (mx_audit_write (self->pg, "msgxctl", os_user, "cutover", target_text, rc == 1 ? "ok" : "refused",
                            *message, now, &audit_error))
            free (audit_error);         //  the seed stands; the log line says it
        free (target_text);
    }
    return rc;
}
