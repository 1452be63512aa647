/*  mx_inbox - see mx_inbox.h.  */
#include "mx_inbox.h"

#include <assert.h>
#include <czmq.h>
#include <inttypes.h>

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
    //  Released holes whose late-arrival pass stopped at the round's
    //  bound: hole id -> the next ID to read (int64_t). Lost on a restart,
    //  when those passes start again from the beginning.
    zhashx_t *passes;
};

static void
s_pass_free (void **item)
{
    free (*item);
    *item = NULL;
}

static void *
s_pass_dup (const void *item)
{
    int64_t *copy = (int64_t *) malloc (sizeof (int64_t));
    assert (copy);
    *copy = *(const int64_t *) item;
    return copy;
}

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
    self->passes = zhashx_new ();
    assert (self->mailbox && self->rows && self->ids && self->received && self->passes);
    zhashx_set_destructor (self->passes, s_pass_free);
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
        zhashx_destroy (&self->passes);
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
    mx_metrics_add (mx_inbox_failures (mx_mailbox_failure_name (failure)), 1);
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

//  IDs one mailbox query of the late-arrival check reads at most.
#define S_LATE_PAGE 256
//  IDs of a hole named in the WARN line at most.
#define S_LATE_NAMED 20

static void
s_hole_key (const mx_released_hole_t *hole, char *key, size_t size)
{
    snprintf (key, size, "%" PRId64, hole->id);
}

//  Where the hole's pass goes on: where it stopped, or its first ID.
static int64_t
s_late_resume (mx_inbox_t *self, const mx_released_hole_t *hole)
{
    char key [24];
    s_hole_key (hole, key, sizeof key);
    const int64_t *next = (const int64_t *) zhashx_lookup (self->passes, key);
    return next ? *next : hole->from;
}

//  next: where the pass goes on, -1 when it is complete.
static void
s_late_keep (mx_inbox_t *self, const mx_released_hole_t *hole, int64_t next)
{
    char key [24];
    s_hole_key (hole, key, sizeof key);
    if (next < 0) {
        zhashx_delete (self->passes, key);
        return;
    }
    zhashx_update (self->passes, key, s_pass_dup (&next));
}

//  Keeps only the passes of the holes listed.
static void
s_late_prune (mx_inbox_t *self, const mx_released_hole_t *holes, size_t count)
{
    zhashx_t *kept = zhashx_new ();
    zhashx_set_destructor (kept, s_pass_free);
    zhashx_set_duplicator (kept, s_pass_dup);
    for (size_t h = 0; h < count; h++) {
        char key [24];
        s_hole_key (&holes [h], key, sizeof key);
        const int64_t *next = (const int64_t *) zhashx_lookup (self->passes, key);
        if (next)
            zhashx_insert (kept, key, (void *) next);
    }
    zhashx_set_duplicator (kept, NULL);
    zhashx_destroy (&self->passes);
    self->passes = kept;
}

//  One hole's visit: pages from where its pass stopped, within *budget
//  IDs. found gets what exists (ascending); returns where the pass goes on
//  next time, or -1 when it reached the end of the hole.
static int64_t
s_late_visit (mx_inbox_t *self, const mx_released_hole_t *hole, int64_t from, int64_t *budget,
              int64_t *found, size_t *count, char **error)
{
    *count = 0;
    while (*budget > 0) {
        int max = (int) (*budget < S_LATE_PAGE ? *budget : S_LATE_PAGE);
        int page = 0;
        if (mx_mailbox_existing (self->mailbox, from, hole->to, found + *count, max, &page, error))
            return -2;
        *count += (size_t) page;
        *budget -= page > 0 ? page : 1;     //  an empty page is a read too
        if (page < max)
            return -1;
        from = found [*count - 1] + 1;
        if (from > hole->to)
            return -1;
    }
    return from;
}

//  "N in released hole A..B (ids)" appended to *message.
static void
s_late_line (char **message, const mx_released_hole_t *hole, const int64_t *added, size_t count)
{
    char ids [S_LATE_NAMED * 24 + 48];
    size_t used = 0;
    for (size_t i = 0; i < count && i < S_LATE_NAMED; i++)
        used += (size_t) snprintf (ids + used, sizeof ids - used, "%s%" PRId64, i ? "," : "", added [i]);
    if (count > S_LATE_NAMED)
        snprintf (ids + used, sizeof ids - used, " and %zu more", count - S_LATE_NAMED);
    char *line = zsys_sprintf ("%s%s%zu in released hole %" PRId64 "..%" PRId64 " (%s)",
                               *message ? *message : "", *message ? "; " : "",
                               count, hole->from, hole->to, ids);
    free (*message);
    *message = line;
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
    int64_t limit = self->config->pipeline_late_detect_batch;
    if (mx_released_holes_due (self->pg, now, self->config->pipeline_overdue_backfill,
                               limit, &holes, &hole_count, error))
        return s_failed (error, "cannot list released holes");
    //  Every hole due was listed: a pass kept for any other is stale.
    if ((int64_t) hole_count < limit)
        s_late_prune (self, holes, hole_count);
    int64_t budget = self->config->pipeline_late_detect_ids;
    int64_t *found = (int64_t *) calloc ((size_t) budget + 1, sizeof (int64_t));
    assert (found);
    int rc = 0;
    for (size_t h = 0; h < hole_count && rc == 0 && budget > 0; h++) {
        const mx_released_hole_t *hole = &holes [h];
        size_t count = 0;
        int64_t next = s_late_visit (self, hole, s_late_resume (self, hole), &budget, found, &count, error);
        if (next == -2) {
            rc = s_mailbox_failed (self, error, "mailbox unreadable during the late-arrival check");
            break;
        }
        int64_t *added = NULL;
        size_t added_count = 0;
        if (mx_released_hole_checked (self->pg, hole->id, now, found, count, &added, &added_count, error)) {
            rc = s_failed (error, "cannot record a late arrival");
            break;
        }
        s_late_keep (self, hole, next);
        if (added_count > 0) {
            *detected += (int) added_count;
            s_late_line (message, hole, added, added_count);
        }
        free (added);
    }
    free (found);
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
                  bool dry_run, int64_t *w, char **message)
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
    rc = mx_cursor_seed (self->pg, *w, now, dry_run, &error);
    if (rc == 1)
        *message = dry_run ? zsys_sprintf ("W would be seeded to %" PRId64 " (cutover '%s'); nothing changed", *w, value)
                           : zsys_sprintf ("W seeded to %" PRId64 " (cutover '%s')", *w, value);
    else
        *message = error;
    if (os_user && rc >= 0) {
        json_t *target = json_pack ("{s:s,s:I}", "watermark", value, "w", (json_int_t) *w);
        char *target_text = json_dumps (target, JSON_COMPACT);
        json_decref (target);
        char *audit_error = NULL;
        if (mx_audit_write (self->pg, "msgxctl", os_user, "cutover", target_text,
                            dry_run ? "dry-run" : rc == 1 ? "ok" : "refused", *message, now, &audit_error))
            free (audit_error);         //  the seed stands; the log line says it
        free (target_text);
    }
    return rc;
}

mx_metrics_counter_t *
mx_inbox_failures (const char *failure_class)
{
    return mx_metrics_counter_by ("msgx_ingress_failures_total",
                                  "Ingress reads of the mailbox that failed, by class (connect, lost, query)",
                                  "class", failure_class);
}
