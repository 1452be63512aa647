/*  mx_reader - see mx_reader.h.  */
#include "mx_reader.h"

#include <assert.h>
#include <unistd.h>

#include "mx_flight.h"
#include "mx_flight_repo.h"
#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_pg.h"
#include "mx_rawstore.h"
#include "mx_readmodel.h"
#include "mx_republish.h"
#include "mx_sis.h"
#include "mx_sis_body.h"

#define ACTOR "reader"

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    PGconn *pg;                 //  reads; reconnects lazily
    mx_mailbox_t *mailbox;      //  raw text and highest ID; connects lazily
    mx_tz_t *zone;              //  airport zone for show's decoding; loaded lazily
    json_t *instance;           //  control's own part (INSTANCE), NULL until told
} s_reader_t;

//  The session for a read; NULL with *error when it cannot be had.
static PGconn *
s_pg (s_reader_t *self, char **error)
{
    if (!self->pg)
        self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-reader",
                                  self->config->pg_statement_timeout, error);
    return self->pg;
}

//  After a failed read: a broken session is opened afresh next time.
static void
s_pg_check (s_reader_t *self)
{
    if (self->pg && PQstatus (self->pg) != CONNECTION_OK)
        mx_pg_disconnect (&self->pg);
}

static const char *
s_instance_string (s_reader_t *self, const char *key)
{
    return json_string_value (json_object_get (self->instance, key));
}

static bool
s_instance_runs (s_reader_t *self, const char *actor)
{
    json_t *actors = json_object_get (self->instance, "actors");
    size_t i;
    json_t *name;
    json_array_foreach (actors, i, name)
        if (json_is_string (name) && strcmp (json_string_value (name), actor) == 0)
            return true;
    return false;
}

//  ---------------------------------------------------------------------
//  Status

//  Why the head waits, as msgxctl status shows it.
static void
s_head_waiting (s_reader_t *self, json_t *head, bool backing_off, int64_t w, char *waiting, size_t size)
{
    int64_t msg_id = json_integer_value (json_object_get (head, "msg_id"));
    const char *role = s_instance_string (self, "role");
    if (!role || strcmp (role, "active") != 0)
        snprintf (waiting, size, "this instance is not active");
    else
    if (!s_instance_runs (self, "pump"))
        snprintf (waiting, size, "the pump is not running (mailbox disabled)");
    else
    if (msg_id > w)
        snprintf (waiting, size, "above the watermark W=%" PRId64 ": waits until ingress moves W past it", w);
    else
    if (json_is_true (json_object_get (self->instance, "paused")))
        snprintf (waiting, size, "pipeline paused (msgxctl resume)");
    else
    if (backing_off)
        snprintf (waiting, size, "backing off after attempt %" JSON_INTEGER_FORMAT " of %" PRId64 " until %s",
                  json_integer_value (json_object_get (head, "attempts")), self->config->pipeline_max_attempts,
                  json_string_value (json_object_get (head, "next_attempt_at")));
    else
        snprintf (waiting, size, "being processed");
}

//  The backlog as msgxctl status --watch draws it: registered and
//  unfinished, plus what the mailbox holds above the highest registered
//  ID (null when the mailbox cannot be read).
static json_t *
s_status_backlog (s_reader_t *self, int64_t unfinished, int64_t unmarked, int64_t registered, int64_t w)
{
    json_t *backlog = json_pack ("{s:I,s:I}", "unfinished", (json_int_t) unfinished,
                                 "unmarked", (json_int_t) unmarked);
    int64_t min_id = 0, max_id = -1;
    char *mailbox_error = NULL;
    if (self->config->mailbox_shared_mysql_enabled) {
        if (!self->mailbox)
            self->mailbox = mx_mailbox_new (self->config);
        if (mx_mailbox_bounds (self->mailbox, &min_id, &max_id, &mailbox_error))
            max_id = -1;
        free (mailbox_error);
    }
    if (max_id >= 0) {
        int64_t unregistered = max_id > registered && max_id > w ? max_id - (registered > w ? registered : w) : 0;
        json_object_set_new (backlog, "mailbox_max_id", json_integer (max_id));
        json_object_set_new (backlog, "unregistered", json_integer (unregistered));
        json_object_set_new (backlog, "total", json_integer (unfinished + unregistered));
    }
    else {
        json_object_set_new (backlog, "mailbox_max_id", json_null ());
        json_object_set_new (backlog, "unregistered", json_null ());
        json_object_set_new (backlog, "total", self->config->mailbox_shared_mysql_enabled
                                               ? json_null () : json_integer (unfinished));
    }
    return backlog;
}

//  Reads the queue figures (db/mx_readmodel); returns -1 with *error on
//  failure.
static int
s_status_queue (s_reader_t *self, json_t *status, char **error)
{
    PGconn *conn = s_pg (self, error);
    if (!conn)
        return -1;
    int64_t now = mx_clock_now (self->clock);
    int64_t w = 0, unfinished = 0, unmarked = 0, registered = 0;
    json_t *cursor = NULL, *head = NULL, *counts = NULL, *republish = NULL;
    bool backing_off = false;
    if (mx_readmodel_cursor (conn, now, &cursor, &w, error)
    ||  mx_readmodel_head (conn, now, &head, &backing_off, error)
    ||  mx_readmodel_counts (conn, &counts, error)
    ||  mx_readmodel_queue (conn, &unfinished, &unmarked, &registered, error)
    ||  mx_republish_status (conn, &republish, error)) {
        json_decref (cursor);
        json_decref (head);
        json_decref (counts);
        json_decref (republish);
        s_pg_check (self);
        return -1;
    }
    if (cursor)
        json_object_set_new (status, "cursor", cursor);
    if (head) {
        char waiting [160];
        s_head_waiting (self, head, backing_off, w, waiting, sizeof waiting);
        json_object_set_new (head, "waiting", json_string (waiting));
    }
    json_object_set_new (status, "head", head ? head : json_null ());
    json_object_set_new (status, "counts", counts);
    json_object_set_new (status, "backlog", s_status_backlog (self, unfinished, unmarked, registered, w));
    //  The latest re-publish job, its progress while it runs.
    json_object_set_new (status, "republish", republish);
    return 0;
}

static json_t *
s_status (s_reader_t *self)
{
    int64_t now = mx_clock_now (self->clock);
    int64_t started_at = json_integer_value (json_object_get (self->instance, "started_at"));
    json_t *actors = json_object_get (self->instance, "actors");
    const char *role = s_instance_string (self, "role");
    char host [256] = "";
    gethostname (host, sizeof host - 1);
    json_t *status = json_pack ("{s:s,s:s,s:I,s:{s:b,s:o}}",
        "role", role ? role : "connecting",
        "instance", host,
        "uptime_s", (json_int_t) ((now - started_at) / 1000),
        "pipeline", "paused", json_is_true (json_object_get (self->instance, "paused")),
        "actors", actors ? json_incref (actors) : json_array ());
    json_object_set_new (status, "pid", json_integer (getpid ()));
    //  Where events go, so a shadow instance is never taken for the live one.
    char topic_msg [MX_CONFIG_TOPIC_BUFSIZE], topic_schd [MX_CONFIG_TOPIC_BUFSIZE];
    char topic_ref [MX_CONFIG_TOPIC_BUFSIZE];
    json_object_set_new (status, "shadow", json_boolean (self->config->shadow));
    json_object_set_new (status, "topics", mx_config_publishes (self->config)
        ? json_pack ("{s:s,s:s,s:s}", "msg", mx_config_topic (self->config, false, topic_msg),
                     "schd", mx_config_topic (self->config, true, topic_schd),
                     "ref", mx_config_ref_topic (self->config, topic_ref))
        : json_null ());

    char *error = NULL;
    const char *pg_state = "ok";
    bool unknown = true;
    if (!role || strcmp (role, "connecting") == 0) {
        const char *why = s_instance_string (self, "postgresql");
        pg_state = why ? why : "connecting";
    }
    else
    if (s_status_queue (self, status, &error))
        pg_state = error;
    else
        unknown = false;
    if (unknown) {
        //  Unknown is null, never a made-up zero.
        json_object_set_new (status, "cursor", json_null ());
        json_object_set_new (status, "head", json_null ());
        json_object_set_new (status, "counts", json_null ());
        json_object_set_new (status, "backlog", json_null ());
    }
    const char *kafka = s_instance_string (self, "kafka");
    json_object_set_new (status, "dependencies", json_pack ("{s:s,s:s,s:s}",
        "postgresql", pg_state,
        "mailbox", self->config->mailbox_shared_mysql_enabled
                   ? "enabled: ingress, processor and the compat entry read and write it"
                   : "disabled (mailbox.shared-mysql.enabled=false): ingress, pump, processor and the compat entry are off",
        "kafka", kafka ? kafka : "not configured"));
    free (error);
    return status;
}

//  ---------------------------------------------------------------------
//  Dead and show

//  DEAD rows for the operator: messages, or with events the outbox's
//  dead letters. *payload: the reply (JSON) or the reason (malloc'd).
static bool
s_dead (s_reader_t *self, json_t *args, char **payload)
{
    bool events = json_is_true (json_object_get (args, "events"));
    json_int_t limit = json_integer_value (json_object_get (args, "limit"));
    json_int_t after = json_integer_value (json_object_get (args, "after"));
    char *error = NULL;
    PGconn *conn = s_pg (self, &error);
    char *text = NULL;
    int64_t total = 0;
    bool more = false;
    if (!conn
    ||  mx_readmodel_dead (conn, events, limit > 0 && limit <= 10000 ? limit : 100,
                           after > 0 ? after : 0, &text, &total, &more, &error)) {
        *payload = zsys_sprintf ("cannot read the dead rows: %s", error ? error : "no connection");
        free (error);
        s_pg_check (self);
        return false;
    }
    json_t *rows = json_loads (text, 0, NULL);
    free (text);
    json_t *reply = json_pack ("{s:s,s:o,s:I,s:b}", "kind", events ? "events" : "messages",
                               "rows", rows ? rows : json_array (), "total", (json_int_t) total, "more", more);
    *payload = json_dumps (reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (reply);
    return true;
}

//  The decoded summary of a raw message: envelope, kind, identity and
//  the flights its body names.
static json_t *
s_show_decode (s_reader_t *self, const char *xml, size_t size)
{
    char *error = NULL;
    if (!self->zone) {
        self->zone = mx_tz_load (self->config->operation_day_zone, &error);
        if (!self->zone) {
            json_t *result = json_pack ("{s:s}", "error", error ? error : "airport time zone not loaded");
            free (error);
            return result;
        }
    }
    mx_sis_options_t options = {
        .zone = self->zone, .max_bytes = (size_t) self->config->codec_max_message_bytes,
        .ignore_types = self->config->pipeline_ignore_types.items,
        .ignore_count = self->config->pipeline_ignore_types.count,
        .limits = mx_sis_limits (self->config)
    };
    mx_sis_status_t status;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, &options, &status, &error);
    if (!msg) {
        json_t *result = json_pack ("{s:s,s:s}", "status", mx_sis_status_name (status),
                                    "error", error ? error : "not decoded");
        free (error);
        return result;
    }
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    char identity [MX_SIS_IDENTITY_BUFSIZE];
    json_t *flights = json_array ();
    const char *body_error = NULL;
    mx_body_status_t body = MX_BODY_OK;
    mx_sis_kind_t kind = mx_sis_kind (msg);
    if (kind == MX_SIS_KIND_FLOP || kind == MX_SIS_KIND_FDEL) {
        mx_flop_t *flop = NULL;
        body = mx_sis_flop (msg, self->zone, &flop, &error);
        if (flop)
            json_array_append_new (flights, json_integer (flop->flid));
        mx_flop_destroy (&flop);
    }
    else
    if (kind == MX_SIS_KIND_SCHD_DNLD || kind == MX_SIS_KIND_SCHD_RESP || kind == MX_SIS_KIND_SCHD_ADFT) {
        mx_schedule_t *schedule = NULL;
        body = mx_sis_schedule (msg, self->zone, &schedule, &error);
        for (size_t i = 0; schedule && i < schedule->count; i++)
            json_array_append_new (flights, json_integer (schedule->records [i].flight->flid));
        mx_schedule_destroy (&schedule);
    }
    else
    if (kind == MX_SIS_KIND_SCHD_DEL) {
        int64_t *flids = NULL;
        size_t count = 0;
        body = mx_sis_schedule_del (msg, &flids, &count, &error);
        for (size_t i = 0; i < count; i++)
            json_array_append_new (flights, json_integer (flids [i]));
        free (flids);
    }
    if (body != MX_BODY_OK)
        body_error = error ? error : mx_body_status_name (body);
    json_t *result = json_pack ("{s:s,s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:o}",
        "status", "OK", "kind", mx_sis_kind_name (kind),
        "sndr", meta->sndr, "seqn", (json_int_t) meta->seqn, "dttm", meta->dttm,
        "type", meta->type, "styp", meta->styp,
        "identity", mx_sis_identity (meta, false, identity, sizeof identity),
        "flights", flights);
    if (body_error)
        json_object_set_new (result, "body_error", json_pack ("{s:s,s:s}", "class",
                             mx_body_status_name (body), "detail", body_error));
    free (error);
    mx_sis_destroy (&msg);
    return result;
}

//  The raw text of a message, from its retained copy or else the mailbox,
//  and its decoded summary in *decoded; *found says whether either has it.
static json_t *
s_show_raw (s_reader_t *self, PGconn *conn, int64_t msg_id, json_t **decoded, bool *found)
{
    *decoded = json_null ();
    *found = false;
    if (self->config->mailbox_shared_mysql_enabled && !self->mailbox)
        self->mailbox = mx_mailbox_new (self->config);
    char *xml = NULL, *error = NULL;
    size_t size = 0;
    size_t max_bytes = (size_t) self->config->codec_max_message_bytes;
    json_t *raw = NULL;
    mx_raw_source_t source;
    int rc = mx_rawstore_load (conn, self->config->mailbox_shared_mysql_enabled ? self->mailbox : NULL, msg_id,
                               max_bytes, &xml, &size, &source, &error);
    if (rc < 0)
        raw = json_pack ("{s:n,s:s}", "xml", "error", error ? error : "mailbox unreachable");
    else
    if (rc == 0)
        raw = json_pack ("{s:n,s:s}", "xml", "error",
                         self->config->mailbox_shared_mysql_enabled
                         ? "not retained and no such row in CMINMSGS"
                         : "not retained (and mailbox disabled: mailbox.shared-mysql.enabled = false)");
    else
    if (!xml) {
        char *why = zsys_sprintf ("%zu bytes: larger than msgx.codec.max-message-bytes (%zu)", size, max_bytes);
        raw = json_pack ("{s:n,s:I,s:s,s:s}", "xml", "bytes", (json_int_t) size,
                         "source", mx_rawstore_source_name (source), "error", why);
        free (why);
        *found = true;
    }
    else {
        *found = true;
        //  json_stringn refuses text that is not UTF-8: say so rather
        //  than guess at the bytes.
        json_t *text = json_stringn (xml, size);
        raw = json_pack ("{s:o,s:I,s:s}", "xml", text ? text : json_null (), "bytes", (json_int_t) size,
                         "source", mx_rawstore_source_name (source));
        if (!text)
            json_object_set_new (raw, "error", json_string ("not valid UTF-8: shown in the decoded summary only"));
        json_decref (*decoded);
        *decoded = s_show_decode (self, xml, size);
    }
    free (error);
    free (xml);
    return raw;
}

//  Everything known about one message: its proc_state row (or archived
//  copy), the raw text from the mailbox decoded, and its outbox events.
//  *payload: the reply (JSON) or the reason (malloc'd).
static bool
s_show (s_reader_t *self, json_t *args, char **payload)
{
    json_t *id_value = json_object_get (args, "msg_id");
    if (!json_is_integer (id_value) || json_integer_value (id_value) <= 0) {
        *payload = strdup ("show needs msg_id, a positive message ID");
        return false;
    }
    int64_t msg_id = json_integer_value (id_value);
    char *error = NULL;
    PGconn *conn = s_pg (self, &error);
    char *row_text = NULL, *events_text = NULL;
    if (!conn
    ||  mx_readmodel_message (conn, msg_id, &row_text, &events_text, &error)) {
        *payload = zsys_sprintf ("cannot read message %" PRId64 ": %s", msg_id, error ? error : "no connection");
        free (error);
        s_pg_check (self);
        return false;
    }
    json_t *row = row_text ? json_loads (row_text, 0, NULL) : NULL;
    json_t *events = json_loads (events_text, 0, NULL);
    free (row_text);
    free (events_text);
    json_t *decoded = NULL;
    bool found = false;
    json_t *raw = s_show_raw (self, conn, msg_id, &decoded, &found);
    if (!row && !found) {
        *payload = zsys_sprintf ("no message %" PRId64 ": not in proc_state, its archive, the retained texts"
                                 " or the mailbox", msg_id);
        json_decref (events);
        json_decref (raw);
        json_decref (decoded);
        return false;
    }
    json_t *reply = json_pack ("{s:I,s:o,s:o,s:o,s:o}",
        "msg_id", (json_int_t) msg_id, "state", row ? row : json_null (), "raw", raw,
        "decoded", decoded, "events", events ? events : json_array ());
    *payload = json_dumps (reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (reply);
    return true;
}

//  One flight: its state document as the state topic carries it, and with
//  history the messages that changed it and the events sent for it.
static bool
s_flight (s_reader_t *self, json_t *args, char **payload)
{
    json_t *id_value = json_object_get (args, "flid");
    if (!json_is_integer (id_value) || json_integer_value (id_value) <= 0) {
        *payload = strdup ("flight needs flid, a positive FLID");
        return false;
    }
    int64_t flid = json_integer_value (id_value);
    char *error = NULL;
    if (!self->zone) {
        self->zone = mx_tz_load (self->config->operation_day_zone, &error);
        if (!self->zone) {
            *payload = zsys_sprintf ("airport time zone not loaded: %s", error ? error : "unknown error");
            free (error);
            return false;
        }
    }
    PGconn *conn = s_pg (self, &error);
    mx_flight_t *flight = NULL;
    if (!conn || mx_flight_repo_load (conn, &flid, 1, false, &flight, &error)) {
        *payload = zsys_sprintf ("cannot read flight %" PRId64 ": %s", flid, error ? error : "no connection");
        free (error);
        s_pg_check (self);
        return false;
    }
    if (!flight) {
        *payload = zsys_sprintf ("no flight %" PRId64, flid);
        return false;
    }
    json_t *reply = json_pack ("{s:I,s:o}", "flid", (json_int_t) flid,
                               "state", mx_flight_state_doc (flight, self->zone));
    mx_flight_destroy (&flight);
    if (json_is_true (json_object_get (args, "history"))) {
        char *messages = NULL, *events = NULL;
        if (mx_readmodel_flight_history (conn, flid, &messages, &events, &error)) {
            *payload = zsys_sprintf ("cannot read the history of flight %" PRId64 ": %s", flid,
                                     error ? error : "unknown error");
            free (error);
            json_decref (reply);
            s_pg_check (self);
            return false;
        }
        json_object_set_new (reply, "messages", json_loads (messages, 0, NULL));
        json_object_set_new (reply, "events", json_loads (events, 0, NULL));
        free (messages);
        free (events);
    }
    *payload = json_dumps (reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (reply);
    return true;
}

//  ---------------------------------------------------------------------
//  Actor
//  ---------------------------------------------------------------------
//  Actor

static void
s_handle_admin (s_reader_t *self, zmsg_t **rest)
{
    mx_cmd_ADMIN_t admin;
    mx_cmd_ADMIN_take (rest, &admin);
    json_t *args = json_loads (admin.args, 0, NULL);
    mx_admin_t verb = mx_admin_lookup (admin.verb);
    char *payload = NULL;
    bool ok = false;
    if (verb == MX_ADMIN_STATUS) {
        json_t *status = s_status (self);
        payload = json_dumps (status, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref (status);
        ok = true;
    }
    else
    if (verb == MX_ADMIN_SHOW)
        ok = s_show (self, args, &payload);
    else
    if (verb == MX_ADMIN_DEAD)
        ok = s_dead (self, args, &payload);
    else
    if (verb == MX_ADMIN_FLIGHT)
        ok = s_flight (self, args, &payload);
    else
        payload = zsys_sprintf ("the reader does not handle '%s'", admin.verb);
    mx_cmd_send (self->pipe, MX_CMD_ADMIN_REPLY, admin.request, ok ? "OK" : "ERR", payload ? payload : "{}");
    free (payload);
    json_decref (args);
    mx_cmd_ADMIN_free (&admin);
}

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_reader_t *self = (s_reader_t *) self_;
    switch (cmd) {
        case MX_CMD_START:
            //  Connections open at the first read: a database that is not
            //  there yet is a status to report, not a reason to stop.
            mx_actor_reply_started (self->pipe, "admin reads: status, show, dead, flight");
            break;
        case MX_CMD_INSTANCE: {
            mx_cmd_INSTANCE_t instance;
            mx_cmd_INSTANCE_take (&rest, &instance);
            json_t *own = json_loads (instance.json, 0, NULL);
            assert (own);           //  control's own text
            json_decref (self->instance);
            self->instance = own;
            mx_cmd_INSTANCE_free (&instance);
            break;
        }
        case MX_CMD_ADMIN:
            s_handle_admin (self, &rest);
            break;
        default:
            assert (!"reader: unexpected command");
    }
    mx_cmd_done (&rest);
    return true;
}

void
mx_reader_actor (zsock_t *pipe, void *args)
{
    s_reader_t self_s = { 0 };
    s_reader_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->clock = self->args->clock;

    mx_actor_ops_t ops = { .command = s_command };
    mx_actor_run (pipe, self->clock, &ops, self);
    mx_pg_disconnect (&self->pg);
    mx_mailbox_destroy (&self->mailbox);
    mx_tz_destroy (&self->zone);
    json_decref (self->instance);
}
