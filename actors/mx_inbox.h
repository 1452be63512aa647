/*  mx_inbox - the ingress work itself (SPEC §3.1), without the actor's
    timers: one polling round, the late-arrival check, cutover seeding.
    Owns its PostgreSQL connection and its mailbox access, reconnecting
    lazily. The ingress actor drives it; tests call it round by round with
    the time they choose.
*/
#ifndef MX_INBOX_H_INCLUDED
#define MX_INBOX_H_INCLUDED

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "mx_config.h"
#include "mx_metrics.h"

typedef struct _mx_inbox_t mx_inbox_t;

typedef struct {
    int64_t w_before;
    int64_t w;                  //  W after the round
    int64_t hole_since;         //  -1 = no hole timer
    int enqueued;               //  new PENDING rows
    bool released;              //  a hole aged out this round
    int64_t released_from, released_to;
    bool again;                 //  the batch was full and contiguous: poll again now
} mx_inbox_round_t;

mx_inbox_t *mx_inbox_new (const mx_config_t *config);
void mx_inbox_destroy (mx_inbox_t **self_p);

//  One round at time now. -1 with *error when PostgreSQL or the mailbox
//  failed: nothing was recorded and W stays.
int mx_inbox_round (mx_inbox_t *self, int64_t now, mx_inbox_round_t *round, char **error);

//  Re-check released holes younger than overdue-backfill for IDs that now
//  exist; records them on released_hole. *detected gets the number of IDs
//  found for the first time, *message (malloc'd, may be NULL) a line to log.
int mx_inbox_late_check (mx_inbox_t *self, int64_t now, int *detected, char **message, char **error);

//  Seed W ("min", "zero", "max" or an ID) on a fresh instance, audited when
//  os_user is not NULL. Returns 1 seeded (*w set), 0 refused, -1 failure;
//  *message says which and why. dry_run: the same steps (the mailbox's
//  bounds read, the freshness checked) with nothing seeded: 1 says it
//  would seed *w now (audited as dry-run).
int mx_inbox_cutover (mx_inbox_t *self, const char *value, const char *os_user, int64_t now,
                      bool dry_run, int64_t *w, char **message);

//  Whether the instance was seeded before (-1 on failure).
int mx_inbox_seeded (mx_inbox_t *self, char **error);

//  msgx_ingress_failures_total{class}: mailbox reads that failed, by the
//  class the mailbox gives its last failure (connect, lost, query).
mx_metrics_counter_t *
    mx_inbox_failures (const char *failure_class);

#endif
