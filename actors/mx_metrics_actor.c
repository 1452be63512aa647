/*  mx_metrics_actor - see mx_metrics_actor.h.  */
#include "mx_metrics_actor.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>


#include "mx_kafka_probe.h"
#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_metrics.h"
#include "mx_pg.h"
#include "mx_readmodel.h"


typedef struct {
    zsock_t *pipe;
    zsock_t *data;                  //  ROUTER
    const mx_actor_args_t *args;
    const mx_config_t *config;
    const char *name;
    PGconn *pg;
    mx_problem_t pg_problem;
    //  The other checks' failures: logged here, never in /health's answer.
    mx_problem_t mailbox_problem;
    mx_problem_t kafka_problem;
    mx_mailbox_t *mailbox;
    mx_kafka_probe_t *kafka;
    json_t *cached;                 //  the last good backlog, or NULL
    int64_t cached_at;
} s_metrics_t;

//  ---------------------------------------------------------------------
//  Gauges

typedef struct {
    const char *key;                //  in the backlog JSON
    const char *name;
    const char *help;
} s_gauge_def_t;

static const s_gauge_def_t s_gauges [] = {
    { "unfinished", "msgx_pipeline_backlog_unfinished",
      "Messages PENDING or FAILED in proc_state" },
    { "oldest_unprocessed_seconds", "msgx_pipeline_backlog_oldest_unprocessed_seconds",
      "Age of the oldest PENDING or FAILED message (0 when there is none)" },
    { "backfill_unmarked_terminal", "msgx_pipeline_backfill_unmarked_terminal",
      "Finished messages whose processed mark is still owed to the mailbox" },
    { "backfill_abandoned", "msgx_pipeline_backfill_abandoned",
      "Processed marks given up (MISSING or EXHAUSTED), awaiting backfill recover" },
    { "backfill_oldest_unmarked_seconds", "msgx_pipeline_backfill_oldest_unmarked_seconds",
      "Age of the oldest owed processed mark (0 when there is none)" },
    { "watermark_lag", "msgx_pipeline_watermark_lag",
      "Highest mailbox ID minus the watermark W" },
};
#define S_GAUGE_COUNT (sizeof s_gauges / sizeof s_gauges [0])

static mx_metrics_gauge_t *
s_outbox_gauge (const char *which, const char *target)
{
    char name [64], labels [64];
    snprintf (name, sizeof name, "msgx_outbox_%s", which);
    snprintf (labels, sizeof labels, "target=%s", target);
    return mx_metrics_gauge (name, strcmp (which, "pending") == 0
                                   ? "Outbox events waiting for delivery"
                                   : "Outbox events given up (DEAD)", labels);
}

static mx_metrics_gauge_t *
s_lag_gauge (const char *target)
{
    char labels [64];
    snprintf (labels, sizeof labels, "target=%s", target);
    return mx_metrics_gauge ("msgx_events_delivery_lag_seconds",
                             "Age of the oldest undelivered (PENDING) outbox event (0 when there is none)",
                             labels);
}

static double
s_figure (const json_t *object, const char *key)
{
    const json_t *value = object ? json_object_get (object, key) : NULL;
    return json_is_number (value) ? json_number_value (value) : NAN;
}

void
mx_metrics_actor_publish (const json_t *backlog)
{
    for (size_t i = 0; i < S_GAUGE_COUNT; i++)
        mx_metrics_gauge_set (mx_metrics_gauge (s_gauges [i].name, s_gauges [i].help, NULL),
                              s_figure (backlog, s_gauges [i].key));
    const json_t *outbox = backlog ? json_object_get (backlog, "outbox") : NULL;
    for (size_t i = 0; i < MX_READMODEL_TARGETS; i++) {
        const json_t *target = outbox ? json_object_get (outbox, mx_readmodel_targets [i]) : NULL;
        mx_metrics_gauge_set (s_outbox_gauge ("pending", mx_readmodel_targets [i]), s_figure (target, "pending"));
        mx_metrics_gauge_set (s_outbox_gauge ("dead", mx_readmodel_targets [i]), s_figure (target, "dead"));
        mx_metrics_gauge_set (s_lag_gauge (mx_readmodel_targets [i]), s_figure (target, "delivery_lag_seconds"));
    }
}

//  ---------------------------------------------------------------------
//  Dependencies

static json_t *
s_dependency (bool ok, bool required, const char *detail)
{
    return json_pack ("{s:b,s:b,s:s}", "ok", ok, "required", required, "detail", detail);
}

static json_t *
s_check_pg (s_metrics_t *self)
{
    if (mx_actor_pg (&self->pg, self->config, self->name, &self->pg_problem))
        return s_dependency (false, true, "postgresql unreachable (the log says why)");
    char *error = NULL;
    const char *detail = NULL;
    if (mx_readmodel_ping (self->pg, &detail, &error)) {
        json_t *result = s_dependency (false, true, "postgresql check failed (the log says why)");
        mx_problem_report (&self->pg_problem, "PostgreSQL check", error);
        if (mx_pg_is_connection_error (self->pg))
            mx_pg_disconnect (&self->pg);
        return result;
    }
    mx_problem_recovered (&self->pg_problem);
    return s_dependency (true, true, detail);
}

//  Also the mailbox's MAX(ID) for the watermark lag (-1 when unknown).
static json_t *
s_check_mailbox (s_metrics_t *self, int64_t *max_id)
{
    *max_id = -1;
    if (!self->config->mailbox_shared_mysql_enabled)
        return s_dependency (true, false, "disabled (mailbox.shared-mysql.enabled = false)");
    int64_t min_id = 0;
    char *error = NULL;
    if (mx_mailbox_bounds (self->mailbox, &min_id, max_id, &error)) {
        *max_id = -1;
        mx_problem_report (&self->mailbox_problem, "mailbox check", error);
        return s_dependency (false, true, "mailbox unreachable (the log says why)");
    }
    mx_problem_recovered (&self->mailbox_problem);
    char detail [96];
    snprintf (detail, sizeof detail, "CMINMSGS IDs %" PRId64 "..%" PRId64, min_id, *max_id);
    return s_dependency (true, true, detail);
}

static json_t *
s_check_kafka (s_metrics_t *self)
{
    const char *bootstrap = self->args->kafka_bootstrap;
    if (!bootstrap || !*bootstrap)
        return s_dependency (false, false, "no bootstrap servers configured");
    char detail [256];
    bool ok = mx_kafka_probe (&self->kafka, self->config, bootstrap, MX_METRICS_KAFKA_TIMEOUT_MS, detail, sizeof detail);
    if (ok) {
        mx_problem_recovered (&self->kafka_problem);
        return s_dependency (true, true, detail);
    }
    //  The probe's text names the brokers: the log's, not /health's.
    mx_problem_report (&self->kafka_problem, "Kafka check", strdup (detail));
    return s_dependency (false, true, "kafka: no broker answered (the log says why)");
}

//  ---------------------------------------------------------------------
//  Backlog

static json_t *
s_age_seconds (int64_t count, int64_t oldest_ms, int64_t now)
{
    if (count == 0 || oldest_ms < 0)
        return json_integer (0);
    return json_real (oldest_ms < now ? (double) (now - oldest_ms) / 1000.0 : 0.0);
}

//  A fresh backlog, or NULL with *error set.
static json_t *
s_query_backlog (s_metrics_t *self, int64_t now, int64_t max_id, char **error)
{
    if (mx_actor_pg (&self->pg, self->config, self->name, &self->pg_problem)) {
        *error = strdup (self->pg_problem.last ? self->pg_problem.last : "PostgreSQL unreachable");
        return NULL;
    }
    mx_backlog_t figures;
    if (mx_readmodel_backlog (self->pg, &figures, error)) {
        mx_problem_report (&self->pg_problem, "backlog snapshot", *error ? strdup (*error) : NULL);
        if (mx_pg_is_connection_error (self->pg))
            mx_pg_disconnect (&self->pg);
        return NULL;
    }
    int64_t watermark = figures.watermark;
    json_t *outbox = json_object ();
    for (size_t i = 0; i < MX_READMODEL_TARGETS; i++)
        json_object_set_new (outbox, mx_readmodel_targets [i],
            json_pack ("{s:I,s:I,s:o}", "pending", (json_int_t) figures.pending [i],
                       "dead", (json_int_t) figures.dead [i],
                       "delivery_lag_seconds", s_age_seconds (figures.pending [i], figures.oldest_pending [i], now)));
    json_t *backlog = json_pack ("{s:I,s:o,s:I,s:I,s:o,s:I,s:I,s:I,s:o,s:I}",
        "unfinished", (json_int_t) figures.unfinished,
        "oldest_unprocessed_seconds", s_age_seconds (figures.unfinished, figures.oldest_unfinished, now),
        "backfill_unmarked_terminal", (json_int_t) figures.unmarked,
        "backfill_abandoned", (json_int_t) figures.abandoned,
        "backfill_oldest_unmarked_seconds", s_age_seconds (figures.unmarked, figures.oldest_unmarked, now),
        "watermark", (json_int_t) watermark,
        "released_holes", (json_int_t) figures.released_holes,
        "late_arrival_holes", (json_int_t) figures.late_holes,
        "outbox", outbox,
        "taken_ms", (json_int_t) now);
    assert (backlog);
    //  An empty mailbox (MAX 0) below W lags by nothing.
    if (max_id >= 0) {
        json_object_set_new (backlog, "mailbox_max_id", json_integer (max_id));
        json_object_set_new (backlog, "watermark_lag",
                             json_integer (max_id > watermark ? max_id - watermark : 0));
    }
    else {
        json_object_set_new (backlog, "mailbox_max_id", json_null ());
        json_object_set_new (backlog, "watermark_lag", json_null ());
    }
    return backlog;
}

//  The backlog as served now: cached while younger than the TTL.
static json_t *
s_backlog (s_metrics_t *self, int64_t max_id)
{
    int64_t now = mx_clock_now (self->args->clock);
    int64_t ttl = self->config->health_backlog_cache_ttl_ms;
    if (!self->cached || ttl <= 0 || now - self->cached_at >= ttl || now < self->cached_at) {
        char *error = NULL;
        json_t *fresh = s_query_backlog (self, now, max_id, &error);
        if (!fresh) {
            json_decref (self->cached);
            self->cached = NULL;
            json_t *unknown = json_pack ("{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:{},s:s}",
                "unfinished", "oldest_unprocessed_seconds", "backfill_unmarked_terminal",
                "backfill_abandoned", "backfill_oldest_unmarked_seconds", "watermark",
                "mailbox_max_id", "watermark_lag", "released_holes", "late_arrival_holes",
                "outbox", "error", "backlog query failed (the log says why)");
            free (error);               //  logged by s_query_backlog
            return unknown;
        }
        json_decref (self->cached);
        self->cached = fresh;
        self->cached_at = now;
    }
    json_t *backlog = json_deep_copy (self->cached);
    json_object_set_new (backlog, "age_ms", json_integer (now - self->cached_at));
    return backlog;
}

static json_t *
s_snapshot (s_metrics_t *self)
{
    json_t *pg = s_check_pg (self);
    int64_t max_id = -1;
    json_t *mailbox = s_check_mailbox (self, &max_id);
    json_t *kafka = s_check_kafka (self);
    json_t *backlog = s_backlog (self, max_id);
    bool ok = true;
    json_t *checks [] = { pg, mailbox, kafka };
    for (size_t i = 0; i < 3; i++)
        if (json_is_true (json_object_get (checks [i], "required"))
        && !json_is_true (json_object_get (checks [i], "ok")))
            ok = false;
    mx_metrics_actor_publish (backlog);
    return json_pack ("{s:s,s:{s:o,s:o,s:o},s:o}", "status", ok ? "ok" : "degraded",
                      "dependencies", "postgresql", pg, "mailbox", mailbox, "kafka", kafka,
                      "backlog", backlog);
}

//  ---------------------------------------------------------------------
//  Actor

static void
s_handle_data (s_metrics_t *self)
{
    zmsg_t *request = zmsg_recv (self->data);
    if (!request)
        return;
    zframe_t *identity = zmsg_pop (request);
    mx_cmd_t cmd = mx_cmd_pop_name (request);
    //  Our own http actor is the only client: a malformed request is a bug.
    assert (identity && cmd == MX_CMD_SNAPSHOT);
    mx_cmd_SNAPSHOT_t ask;
    mx_cmd_SNAPSHOT_take (&request, &ask);
    json_t *snapshot = s_snapshot (self);
    char *text = json_dumps (snapshot, JSON_COMPACT);
    json_decref (snapshot);
    mx_cmd_send_routed (self->data, &identity, MX_CMD_SNAPSHOT_REPLY, ask.tag, text);
    free (text);
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_metrics_t *self = (s_metrics_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            mx_cmd_done (&rest);
            char endpoint [256];
            mx_actor_endpoint (self->args, "metrics", endpoint, sizeof endpoint);
            self->data = zsock_new (ZMQ_ROUTER);
            if (!self->data || zsock_bind (self->data, "%s", endpoint)) {
                char *error = zsys_sprintf ("cannot bind %s: %s", endpoint, zmq_strerror (zmq_errno ()));
                mx_log_emit (MX_LOG_ERROR, self->name, NULL, "%s", error);
                mx_actor_reply_failed (self->pipe, error);
                free (error);
                mx_actor_wait_term (self->pipe);
                return false;
            }
            //  Registered now so a scrape shows them, unknown, from the start.
            mx_actors_register_metrics ();
            //  A dashboard or alert tells a shadow instance's figures apart.
            mx_metrics_gauge_set (mx_metrics_gauge ("msgx_shadow", "1 on a shadow instance (msgx.shadow): nothing "
                                                    "shared is written, events go to the suffixed topics or nowhere",
                                                    NULL),
                                  self->config->shadow ? 1 : 0);
            mx_metrics_actor_publish (NULL);
            char *detail = zsys_sprintf ("serving snapshots on %s (cache %" PRId64 " ms)", endpoint,
                                         (int64_t) self->config->health_backlog_cache_ttl_ms);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            return true;
        }
        case MX_CMD_ROLE:
            //  The figures are the shared database's, the same from any
            //  instance; http reports the role.
        {
            mx_cmd_ROLE_t role;
            mx_cmd_ROLE_take (&rest, &role);
            mx_cmd_ROLE_free (&role);
            break;
        }
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;
        default:
            assert (!"metrics: unexpected command on its pipe");
    }
    mx_cmd_done (&rest);
    return true;
}

static bool
s_data_ready (void *self_, void *arg)
{
    (void) arg;
    s_handle_data ((s_metrics_t *) self_);
    return false;
}

//  The snapshot requests (ROUTER), once started.
static size_t
s_sources (void *self_, mx_actor_source_t *sources, size_t max)
{
    s_metrics_t *self = (s_metrics_t *) self_;
    if (!self->data || max < 1)
        return 0;
    sources [0] = (mx_actor_source_t) { .sock = self->data, .ready = s_data_ready };
    return 1;
}

void
mx_metrics_actor (zsock_t *pipe, void *args)
{
    s_metrics_t self_s = { 0 };
    s_metrics_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->name = self->args->name ? self->args->name : "metrics";
    self->pg_problem.actor = self->name;
    self->mailbox_problem.actor = self->name;
    self->kafka_problem.actor = self->name;
    self->mailbox = mx_mailbox_new (self->config);

    mx_actor_ops_t ops = { .command = s_command, .sources = s_sources };
    mx_actor_run (pipe, NULL, &ops, self);
    json_decref (self->cached);
    mx_kafka_probe_destroy (&self->kafka);
    mx_pg_disconnect (&self->pg);
    mx_problem_clear (&self->pg_problem);
    mx_problem_clear (&self->mailbox_problem);
    mx_problem_clear (&self->kafka_problem);
    mx_mailbox_destroy (&self->mailbox);
    zsock_destroy (&self->data);
}
