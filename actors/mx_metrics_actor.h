/*  mx_metrics_actor - the metrics actor: the backlog snapshot and the
    dependency checks behind GET /health and GET /metrics
    (docs/reference/spec.md §8).

    The backlog snapshot is ONE aggregate statement over proc_state,
    inbox_cursor, released_hole and msg_event on the actor's own PostgreSQL
    session, plus MAX(CMINMSGS_ID) from the mailbox when it is enabled (for
    the watermark lag). It is cached for msgx.health.backlog-cache-ttl-ms
    (0 = computed on every request), measured on the injected clock, so
    frequent scrapes never turn into frequent full aggregates. A failed
    snapshot is not cached: its figures are unknown (JSON null, NaN).

    Every request checks the dependencies afresh: PostgreSQL (SELECT 1),
    the mailbox (MIN/MAX of CMINMSGS_ID; only when mailbox.shared-mysql.
    enabled) and Kafka (a metadata request on a small handle of its own
    against args->kafka_bootstrap, bounded by MX_METRICS_KAFKA_TIMEOUT_MS).

    After each request the snapshot gauges of the registry (core/mx_metrics)
    hold the snapshot's figures, NaN where unknown:
      msgx_pipeline_backlog_unfinished, msgx_pipeline_backlog_oldest_unprocessed_seconds,
      msgx_pipeline_backfill_unmarked_terminal, msgx_pipeline_backfill_abandoned,
      msgx_pipeline_backfill_oldest_unmarked_seconds, msgx_pipeline_watermark_lag,
      msgx_outbox_pending{target}, msgx_outbox_dead{target},
      msgx_events_delivery_lag_seconds{target}
      (age of the oldest PENDING event, 0 when none).

    Data socket: a ROUTER bound at mx_actor_endpoint (args, "metrics").
    Request frames: "SNAPSHOT", tag. Reply frames: tag, one JSON object:
      {"status":"ok"|"degraded",
       "dependencies":{"postgresql":{"ok":b,"required":true,"detail":s},
                       "mailbox":{...},"kafka":{...}},
       "backlog":{"unfinished":n, "oldest_unprocessed_seconds":x,
                  "backfill_unmarked_terminal":n, "backfill_abandoned":n,
                  "backfill_oldest_unmarked_seconds":x, "watermark":n,
                  "mailbox_max_id":n, "watermark_lag":n,
                  "released_holes":n, "late_arrival_holes":n,
                  "outbox":{"KAFKA:msg":{"pending":n,"dead":n,"delivery_lag_seconds":x},
                            "KAFKA:schd":{...}},
                  "taken_ms":n, "age_ms":n, "error":s}}
    Unknown figures are null; "error" is present only when the snapshot
    failed. status is "ok" when every required dependency is ok. A detail
    or error is a fixed phrase ("mailbox unreachable (the log says why)"):
    the driver's text, which may name hosts and users, goes to the log
    only (once per distinct failure).

    The figures are the shared database's: a standby reports them as the
    active does (msgx_instance_active, set by http, tells the two apart).

    Start-up follows mx_actor.h: START binds the data socket (PostgreSQL
    may still be down: that is what /health reports), "$TERM" stops, PAUSE,
    RESUME and ROLE are ignored.
*/
#ifndef MX_METRICS_ACTOR_H_INCLUDED
#define MX_METRICS_ACTOR_H_INCLUDED

#include <jansson.h>

#include "mx_actor.h"

#define MX_METRICS_KAFKA_TIMEOUT_MS 1000

void
    mx_metrics_actor (zsock_t *pipe, void *args);

//  Copies a snapshot's backlog figures into the registry's snapshot gauges;
//  backlog NULL (no answer) makes them all unknown (NaN).
void
    mx_metrics_actor_publish (const json_t *backlog);

#endif
