/*  mx_metrics_actor - see mx_metrics_actor.h.  */
#include "mx_metrics_actor.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>

#include <librdkafka/rdkafka.h>

#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_metrics.h"
#include "mx_pg.h"

//  The backlog in one statement. Each part repeats the predicate of a
//  partial index (head, backfill sweep, outbox pending) so it stays cheap.
static const char *s_snapshot_sql =
    "SELECT c.committed_up_to,"
    "       u.n, (extract (epoch FROM u.oldest) * 1000)::bigint,"
    "       m.n, (extract (epoch FROM m.oldest) * 1000)::bigint,"
    "       a.n, h.n, h.late,"
    "       o.msg_pending, o.msg_dead, o.schd_pending, o.schd_dead,"
    "       (extract (epoch FROM e.msg_oldest) * 1000)::bigint,"
    "       (extract (epoch FROM e.schd_oldest) * 1000)::bigint"
    "  FROM inbox_cursor c"
    " CROSS JOIN (SELECT count(*) AS n, min (coalesce (received_at, created_at)) AS oldest"
    "               FROM proc_state WHERE state IN ('PENDING', 'FAILED')) u"
    " CROSS JOIN (SELECT count(*) AS n, min (coalesce (finished_at, updated_at)) AS oldest"
    "               FROM proc_state"
    "              WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')"
    "                AND backfill_next_at IS NOT NULL"
    "                AND backfill_at IS NULL"
    "                AND backfill_abandoned_at IS NULL) m"
    " CROSS JOIN (SELECT count(*) AS n FROM proc_state"
    "              WHERE backfill_abandoned_at IS NOT NULL AND backfill_at IS NULL) a"
    " CROSS JOIN (SELECT count(*) AS n, count (late_detected_at) AS late FROM released_hole) h"
    " CROSS JOIN (SELECT count(*) FILTER (WHERE target = 'KAFKA:msg' AND state = 'PENDING') AS msg_pending,"
    "                    count(*) FILTER (WHERE target = 'KAFKA:msg' AND state = 'DEAD') AS msg_dead,"
    "                    count(*) FILTER (WHERE target = 'KAFKA:schd' AND state = 'PENDING') AS schd_pending,"
    "                    count(*) FILTER (WHERE target = 'KAFKA:schd' AND state = 'DEAD') AS schd_dead"
    "               FROM msg_event WHERE state IN ('PENDING', 'DEAD')) o"
    //  The oldest undelivered event per target: the first in delivery
    //  order, one step down msg_event_pending_idx.
    " CROSS JOIN (SELECT (SELECT created_at FROM msg_event WHERE target = 'KAFKA:msg' AND state = 'PENDING'"
    "                      ORDER BY event_id LIMIT 1) AS msg_oldest,"
    "                    (SELECT created_at FROM msg_event WHERE target = 'KAFKA:schd' AND state = 'PENDING'"
    "                      ORDER BY event_id LIMIT 1) AS schd_oldest) e";

static const char *s_targets [] = { "KAFKA:msg", "KAFKA:schd" };
#define S_TARGET_COUNT 2

typedef struct {
    zsock_t *pipe;
    zsock_t *data;                  //  ROUTER
    const mx_actor_args_t *args;
    const mx_config_t *config;
    const char *name;
    bool terminated;
    PGconn *pg;
    mx_problem_t pg_problem;
    mx_mailbox_t *mailbox;
    rd_kafka_t *kafka;
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
    double pending = 0;
    for (size_t i = 0; i < S_TARGET_COUNT; i++) {
        const json_t *target = outbox ? json_object_get (outbox, s_targets [i]) : NULL;
        mx_metrics_gauge_set (s_outbox_gauge ("pending", s_targets [i]), s_figure (target, "pending"));
        mx_metrics_gauge_set (s_outbox_gauge ("dead", s_targets [i]), s_figure (target, "dead"));
        mx_metrics_gauge_set (s_lag_gauge (s_targets [i]), s_figure (target, "delivery_lag_seconds"));
        pending += s_figure (target, "pending");        //  NaN stays NaN
    }
    mx_metrics_gauge_set (mx_metrics_gauge ("msgx_events_pending",
                                            "Outbox events waiting for delivery, all targets", NULL),
                          pending);
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
        return s_dependency (false, true, self->pg_problem.last ? self->pg_problem.last
                                                                : "PostgreSQL unreachable");
    char *error = NULL;
    if (mx_pg_exec (self->pg, "SELECT 1", 0, NULL, NULL, &error)) {
        json_t *result = s_dependency (false, true, error ? error : "SELECT 1 failed");
        mx_problem_report (&self->pg_problem, "PostgreSQL check", error);
        if (mx_pg_is_connection_error (self->pg))
            mx_pg_disconnect (&self->pg);
        return result;
    }
    mx_problem_recovered (&self->pg_problem);
    return s_dependency (true, true, "SELECT 1 answered");
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
        char *detail = zsys_sprintf ("mailbox unreachable: %s", error ? error : "unknown error");
        json_t *result = s_dependency (false, true, detail);
        free (detail);
        free (error);
        return result;
    }
    char detail [96];
    snprintf (detail, sizeof detail, "CMINMSGS IDs %" PRId64 "..%" PRId64, min_id, *max_id);
    return s_dependency (true, true, detail);
}

static void
s_kafka_log (const rd_kafka_t *rk, int level, const char *facility, const char *text)
{
    (void) rk;
    (void) level;
    mx_log_emit (MX_LOG_DEBUG, "metrics", NULL, "librdkafka %s: %s", facility, text);
}

static json_t *
s_check_kafka (s_metrics_t *self)
{
    const char *bootstrap = self->args->kafka_bootstrap;
    if (!bootstrap || !*bootstrap)
        return s_dependency (false, false, "no bootstrap servers configured");
    char errstr [256];
    if (!self->kafka) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new ();
        rd_kafka_conf_set_log_cb (conf, s_kafka_log);
        if (rd_kafka_conf_set (conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr)
        ||  rd_kafka_conf_set (conf, "client.id", "msgxd-health", errstr, sizeof errstr)) {
            rd_kafka_conf_destroy (conf);
            return s_dependency (false, true, errstr);
        }
        self->kafka = rd_kafka_new (RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
        if (!self->kafka) {
            rd_kafka_conf_destroy (conf);
            return s_dependency (false, true, errstr);
        }
    }
    const struct rd_kafka_metadata *metadata = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata (self->kafka, 0, NULL, &metadata,
                                                 MX_METRICS_KAFKA_TIMEOUT_MS);
    if (err) {
        snprintf (errstr, sizeof errstr, "no metadata from %s within %d ms: %s", bootstrap,
                  MX_METRICS_KAFKA_TIMEOUT_MS, rd_kafka_err2str (err));
        return s_dependency (false, true, errstr);
    }
    snprintf (errstr, sizeof errstr, "%d broker(s) answered", metadata->broker_cnt);
    rd_kafka_metadata_destroy (metadata);
    return s_dependency (true, true, errstr);
}

//  ---------------------------------------------------------------------
//  Backlog

static json_t *
s_age_seconds (int64_t count, bool oldest_null, int64_t oldest_ms, int64_t now)
{
    if (count == 0 || oldest_null)
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
    PGresult *res = NULL;
    if (mx_pg_exec (self->pg, s_snapshot_sql, 0, NULL, &res, error)) {
        mx_problem_report (&self->pg_problem, "backlog snapshot", *error ? strdup (*error) : NULL);
        if (mx_pg_is_connection_error (self->pg))
            mx_pg_disconnect (&self->pg);
        return NULL;
    }
    if (PQntuples (res) != 1) {
        PQclear (res);
        *error = strdup ("backlog snapshot: inbox_cursor has no row");
        return NULL;
    }
    int64_t watermark = mx_pg_get_int64 (res, 0, 0);
    int64_t unfinished = mx_pg_get_int64 (res, 0, 1);
    int64_t unmarked = mx_pg_get_int64 (res, 0, 3);
    json_t *outbox = json_object ();
    for (size_t i = 0; i < S_TARGET_COUNT; i++) {
        int64_t pending = mx_pg_get_int64 (res, 0, 8 + 2 * (int) i);
        int oldest = 12 + (int) i;
        json_object_set_new (outbox, s_targets [i],
            json_pack ("{s:I,s:I,s:o}", "pending", (json_int_t) pending,
                       "dead", (json_int_t) mx_pg_get_int64 (res, 0, 9 + 2 * (int) i),
                       "delivery_lag_seconds",
                       s_age_seconds (pending, PQgetisnull (res, 0, oldest), mx_pg_get_int64 (res, 0, oldest), now)));
    }
    json_t *backlog = json_pack ("{s:I,s:o,s:I,s:I,s:o,s:I,s:I,s:I,s:o,s:I}",
        "unfinished", (json_int_t) unfinished,
        "oldest_unprocessed_seconds",
            s_age_seconds (unfinished, PQgetisnull (res, 0, 2), mx_pg_get_int64 (res, 0, 2), now),
        "backfill_unmarked_terminal", (json_int_t) unmarked,
        "backfill_abandoned", (json_int_t) mx_pg_get_int64 (res, 0, 5),
        "backfill_oldest_unmarked_seconds",
            s_age_seconds (unmarked, PQgetisnull (res, 0, 4), mx_pg_get_int64 (res, 0, 4), now),
        "watermark", (json_int_t) watermark,
        "released_holes", (json_int_t) mx_pg_get_int64 (res, 0, 6),
        "late_arrival_holes", (json_int_t) mx_pg_get_int64 (res, 0, 7),
        "outbox", outbox,
        "taken_ms", (json_int_t) now);
    PQclear (res);
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
                "outbox", "error", error ? error : "unknown error");
            free (error);
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
    char *verb = zmsg_popstr (request);
    zframe_t *tag = zmsg_pop (request);
    //  Our own http actor is the only client: a malformed request is a bug.
    assert (identity && verb && tag && zmsg_size (request) == 0);
    assert (streq (verb, "SNAPSHOT"));
    json_t *snapshot = s_snapshot (self);
    char *text = json_dumps (snapshot, JSON_COMPACT);
    json_decref (snapshot);
    zmsg_t *reply = zmsg_new ();
    zmsg_append (reply, &identity);
    zmsg_append (reply, &tag);
    zmsg_addstr (reply, text);
    zmsg_send (&reply, self->data);
    free (text);
    free (verb);
    zmsg_destroy (&request);
}

static void
s_handle_pipe (s_metrics_t *self)
{
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (self->pipe, &rest);
    if (!rest) {
        self->terminated = true;
        return;
    }
    switch (cmd) {
        case MX_CMD_TERM:
            self->terminated = true;
            break;
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
                self->terminated = true;
                return;
            }
            //  Registered now so a scrape shows them, unknown, from the start.
            mx_metrics_register_standard ();
            mx_metrics_actor_publish (NULL);
            char *detail = zsys_sprintf ("serving snapshots on %s (cache %" PRId64 " ms)", endpoint,
                                         (int64_t) self->config->health_backlog_cache_ttl_ms);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            return;
        }
        case MX_CMD_ROLE:
            //  The figures are the shared database's, the same from any
            //  instance; http reports the role.
            free (mx_cmd_pop_str (rest));
            mx_cmd_pop_int (rest);
            break;
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;
        default:
            assert (!"metrics: unexpected command on its pipe");
    }
    mx_cmd_done (&rest);
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
    self->mailbox = mx_mailbox_new (self->config);
    zsock_signal (pipe, 0);

    while (!self->terminated) {
        zmq_pollitem_t items [2] = {
            { zsock_resolve (self->pipe), 0, ZMQ_POLLIN, 0 },
            { self->data ? zsock_resolve (self->data) : NULL, 0, ZMQ_POLLIN, 0 }
        };
        if (zmq_poll (items, self->data ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (items [0].revents & ZMQ_POLLIN)
            s_handle_pipe (self);
        else
        if (items [1].revents & ZMQ_POLLIN)
            s_handle_data (self);
    }
    json_decref (self->cached);
    if (self->kafka)
        rd_kafka_destroy (self->kafka);
    mx_pg_disconnect (&self->pg);
    mx_problem_clear (&self->pg_problem);
    mx_mailbox_destroy (&self->mailbox);
    zsock_destroy (&self->data);
}
