/*  mx_control - see mx_control.h.  */
#include "mx_control.h"

#include <assert.h>
#include <errno.h>
#include <grp.h>
#include <libpq-fe.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "mx_instance_lock.h"
#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_migrate.h"
#include "mx_pg.h"
#include "mx_readmodel.h"
#include "mx_sis.h"
#include "mx_sis_body.h"

#define ACTOR "control"
#define CHILD_START_TIMEOUT_MS 30000

typedef enum {
    ROLE_CONNECTING,        //  no PostgreSQL connection yet
    ROLE_STANDBY,           //  waiting for the instance lock
    ROLE_ACTIVE,            //  holds the lock, pipeline started
    ROLE_FENCED             //  lost the lock; stopped, waiting for $TERM
} s_role_t;

static const char *s_role_names [] = { "connecting", "standby", "active", "fenced" };

typedef struct {
    zactor_t *actor;
    mx_actor_args_t args;
    bool service;               //  started at START, told ROLE
} s_child_t;

typedef struct {
    zsock_t *pipe;
    const mx_control_args_t *args;
    const mx_config_t *config;
    mx_clock_t *clock;
    s_role_t role;
    zsock_t *admin;             //  ROUTER for msgxctl
    bool admin_ipc;             //  we created the ipc socket file
    PGconn *lock_conn;          //  holds the session advisory lock
    bool lock_waiting;          //  async pg_advisory_lock in flight
    PGconn *status_conn;        //  reads for status; reconnects lazily
    int64_t retry_at;           //  next connect attempt, INT64_MAX = none
    int64_t started_at;
    int64_t active_since;
    bool paused;
    s_child_t *children;
    size_t children_started;
    char *pg_error;             //  last PostgreSQL problem, for status
    char scope [64];            //  names our children's inproc sockets
    zhashx_t *admin_waiting;    //  request id -> REQ identity frame
    uint64_t admin_sequence;
    mx_mailbox_t *mailbox;      //  raw text for show; connects lazily
    mx_tz_t *zone;              //  airport zone for show's decoding; loaded lazily
} s_control_t;

static void s_set_role (s_control_t *self, s_role_t role, const char *why);

//  ---------------------------------------------------------------------
//  Admin endpoint

//  An ipc socket file that accepts connections belongs to a live daemon;
//  binding over it would silently steal its admin socket.
static int
s_ipc_check (const char *path, char **error)
{
    struct stat st;
    if (stat (path, &st) != 0)
        return 0;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen (path) >= sizeof addr.sun_path) {
        *error = zsys_sprintf ("admin ipc path too long (max %zu bytes): %s",
                               sizeof addr.sun_path - 1, path);
        return -1;
    }
    strcpy (addr.sun_path, path);
    int fd = socket (AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    int rc = connect (fd, (struct sockaddr *) &addr, sizeof addr);
    close (fd);
    if (rc == 0) {
        *error = zsys_sprintf ("admin endpoint ipc://%s is in use by another running msgxd", path);
        return -1;
    }
    unlink (path);              //  stale file from a crashed process
    return 0;
}

//  The socket file is the only access control of the admin protocol: the
//  owner alone (0600), or also the members of group (0660) when one is set.
static int
s_admin_permit (const char *path, const char *group, char **error)
{
    mode_t mode = 0600;
    if (*group) {
        char buffer [4096];
        struct group entry, *found = NULL;
        int rc = getgrnam_r (group, &entry, buffer, sizeof buffer, &found);
        if (!found) {
            *error = zsys_sprintf ("admin group %s (msgx.admin.group): %s", group,
                                   rc ? strerror (rc) : "no such group");
            return -1;
        }
        //  Only a member of the group (or root) may hand the file to it.
        if (chown (path, (uid_t) -1, found->gr_gid) != 0) {
            *error = zsys_sprintf ("cannot give admin socket %s to group %s: %s (is the daemon's user a member?)",
                                   path, group, strerror (errno));
            return -1;
        }
        mode = 0660;
    }
    if (chmod (path, mode) != 0) {
        *error = zsys_sprintf ("cannot set admin socket %s to mode %04o: %s", path, (unsigned) mode, strerror (errno));
        return -1;
    }
    return 0;
}

static int
s_admin_bind (s_control_t *self, char **error)
{
    const char *endpoint = self->config->admin_endpoint;
    bool ipc = strncmp (endpoint, "ipc://", 6) == 0;
    if (ipc && s_ipc_check (endpoint + 6, error))
        return -1;
    self->admin = zsock_new (ZMQ_ROUTER);
    assert (self->admin);
    zsock_set_linger (self->admin, 0);
    if (zsock_bind (self->admin, "%s", endpoint) < 0) {
        *error = zsys_sprintf ("cannot bind admin endpoint %s: %s", endpoint, zmq_strerror (zmq_errno ()));
        zsock_destroy (&self->admin);
        return -1;
    }
    self->admin_ipc = ipc;
    if (ipc && s_admin_permit (endpoint + 6, self->config->admin_group, error)) {
        zsock_destroy (&self->admin);
        return -1;
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  Children

static void
s_children_stop (s_control_t *self)
{
    while (self->children_started > 0) {
        s_child_t *child = &self->children [--self->children_started];
        mx_info (ACTOR, "stopping actor %s", child->args.name);
        zactor_destroy (&child->actor);
        mx_info (ACTOR, "stopped actor %s", child->args.name);
    }
}

//  Service actors (mx_actor_is_service) run on every instance and learn
//  the role and pause state from ROLE.
static void
s_tell_services (s_control_t *self)
{
    for (size_t i = 0; i < self->children_started; i++)
        if (self->children [i].service)
            mx_cmd_send (zactor_sock (self->children [i].actor), MX_CMD_ROLE,
                         s_role_names [self->role], self->paused ? 1 : 0);
}

//  Starts the service actors (services true, at START) or the pipeline
//  actors (services false, once active), in table order.
static int
s_children_start (s_control_t *self, bool services, char **error)
{
    for (size_t i = 0; i < self->args->child_count; i++) {
        if (mx_actor_is_service (&self->args->children [i]) != services)
            continue;
        if (self->args->children [i].needs_mailbox && !self->config->mailbox_shared_mysql_enabled) {
            mx_info (ACTOR, "actor %s not started: mailbox.shared-mysql.enabled=false", self->args->children [i].name);
            continue;
        }
        s_child_t *child = &self->children [self->children_started];
        child->args.name = self->args->children [i].name;
        child->args.config = self->config;
        child->args.clock = self->clock;
        child->args.scope = self->scope;
        child->args.kafka_bootstrap = self->args->kafka_bootstrap;
        child->service = services;
        char *detail = NULL;
        char *why = NULL;
        child->actor = services
            ? mx_actor_start_service (self->args->children [i].fn, &child->args,
                                      s_role_names [self->role], self->paused,
                                      CHILD_START_TIMEOUT_MS, &detail, &why)
            : mx_actor_start_pipeline (self->args->children [i].fn, &child->args, self->paused,
                                       CHILD_START_TIMEOUT_MS, &detail, &why);
        if (!child->actor) {
            *error = zsys_sprintf ("actor %s did not start: %s", child->args.name, why);
            free (why);
            s_children_stop (self);
            return -1;
        }
        self->children_started++;
        mx_info (ACTOR, "started actor %s: %s", child->args.name, detail);
        free (detail);
    }
    return 0;
}

static s_child_t *
s_child (s_control_t *self, const char *name)
{
    for (size_t i = 0; i < self->children_started; i++)
        if (strcmp (self->children [i].args.name, name) == 0)
            return &self->children [i];
    return NULL;
}

//  ---------------------------------------------------------------------
//  Instance lock

static void
s_fatal (s_control_t *self, int code, const char *reason)
{
    mx_error (ACTOR, "%s", reason);
    s_children_stop (self);
    mx_cmd_send (self->pipe, MX_CMD_FATAL, code, reason);
}

static void
s_lock_disconnect (s_control_t *self)
{
    if (self->lock_conn)
        PQfinish (self->lock_conn);
    self->lock_conn = NULL;
    self->lock_waiting = false;
}

static void
s_note_pg_error (s_control_t *self, const char *error)
{
    free (self->pg_error);
    self->pg_error = error ? strdup (error) : NULL;
}

static void
s_become_active (s_control_t *self)
{
    int applied = 0;
    char *error = NULL;
    if (mx_migrate_apply (self->lock_conn, &applied, &error)) {
        char *reason = zsys_sprintf ("schema migration failed: %s", error);
        free (error);
        s_fatal (self, 1, reason);
        free (reason);
        s_set_role (self, ROLE_FENCED, "migration failed");
        return;
    }
    mx_info (ACTOR, "schema at version %d (%d migration%s applied now)",
             mx_migrate_latest_version (), applied, applied == 1 ? "" : "s");
    self->active_since = mx_clock_now (self->clock);
    s_set_role (self, ROLE_ACTIVE, "holds the instance lock");
    if (s_children_start (self, false, &error)) {
        s_fatal (self, 1, error);
        free (error);
        s_set_role (self, ROLE_FENCED, "pipeline did not start");
    }
}

static void
s_connect (s_control_t *self)
{
    char *error = NULL;
    //  No statement timeout here: pg_advisory_lock waits for as long as
    //  the active instance lives.
    self->lock_conn = mx_pg_connect (self->config->pg_conninfo, "msgxd-lock", 0, &error);
    if (!self->lock_conn) {
        int64_t retry = self->config->instance_standby_retry;
        if (!self->pg_error || strcmp (self->pg_error, error) != 0)
            mx_warn (ACTOR, "PostgreSQL unreachable, retrying every %" PRId64 " ms: %s", retry, error);
        s_note_pg_error (self, error);
        free (error);
        self->retry_at = mx_clock_now (self->clock) + retry;
        return;
    }
    s_note_pg_error (self, NULL);
    self->retry_at = INT64_MAX;
    int got = mx_instance_lock_try (self->lock_conn, self->config->instance_lock_key, &error);
    if (got < 0) {
        mx_warn (ACTOR, "instance lock query failed: %s", error);
        s_note_pg_error (self, error);
        free (error);
        s_lock_disconnect (self);
        self->retry_at = mx_clock_now (self->clock) + self->config->instance_standby_retry;
        return;
    }
    if (got) {
        s_become_active (self);
        return;
    }
    if (mx_instance_lock_wait (self->lock_conn, self->config->instance_lock_key, &error)) {
        mx_warn (ACTOR, "cannot wait for the instance lock: %s", error);
        free (error);
        s_lock_disconnect (self);
        self->retry_at = mx_clock_now (self->clock) + self->config->instance_standby_retry;
        return;
    }
    self->lock_waiting = true;
    s_set_role (self, ROLE_STANDBY, "another instance holds the instance lock; waiting to take over");
}

//  The lock connection's socket became readable: the lock was granted, or
//  the connection broke.
static void
s_lock_readable (s_control_t *self)
{
    char *why = NULL;
    int rc = mx_instance_lock_readable (self->lock_conn, &self->lock_waiting, &why);
    if (rc < 0) {
        char *line = zsys_sprintf ("lost the PostgreSQL connection holding the instance lock: %s", why);
        free (why);
        why = line;
        s_lock_disconnect (self);
        if (self->role == ROLE_ACTIVE) {
            //  Fencing: another instance may own the lock by now.
            s_fatal (self, MX_EXIT_FENCED, why);
            s_set_role (self, ROLE_FENCED, "lock lost; all writes stopped");
        }
        else {
            mx_warn (ACTOR, "%s; reconnecting", why);
            s_note_pg_error (self, why);
            s_set_role (self, ROLE_CONNECTING, "lock connection lost");
            self->retry_at = mx_clock_now (self->clock) + self->config->instance_standby_retry;
        }
        free (why);
    }
    else
    if (rc == 1)
        s_become_active (self);
}

static void
s_set_role (s_control_t *self, s_role_t role, const char *why)
{
    if (self->role == role)
        return;
    self->role = role;
    //  Told before the line is logged: whoever reads the log and then
    //  asks /health gets the new role.
    s_tell_services (self);
    json_t *fields = json_pack ("{s:s}", "role", s_role_names [role]);
    mx_log_emit (role == ROLE_FENCED ? MX_LOG_ERROR : MX_LOG_INFO, ACTOR, fields,
                 "role %s: %s", s_role_names [role], why);
}

//  ---------------------------------------------------------------------
//  Status


//  Why the head waits, as msgxctl status shows it.
static void
s_head_waiting (s_control_t *self, json_t *head, bool backing_off, int64_t w, char *waiting, size_t size)
{
    int64_t msg_id = json_integer_value (json_object_get (head, "msg_id"));
    if (self->role != ROLE_ACTIVE)
        snprintf (waiting, size, "this instance is not active");
    else
    if (!s_child (self, "pump"))
        snprintf (waiting, size, "the pump is not running (mailbox disabled)");
    else
    if (msg_id > w)
        snprintf (waiting, size, "above the watermark W=%" PRId64 ": waits until ingress moves W past it", w);
    else
    if (self->paused)
        snprintf (waiting, size, "pipeline paused (msgxctl resume)");
    else
    if (backing_off)
        snprintf (waiting, size, "backing off after attempt %" JSON_INTEGER_FORMAT " of %" PRId64 " until %s",
                  json_integer_value (json_object_get (head, "attempts")), self->config->pipeline_max_attempts,
                  json_string_value (json_object_get (head, "next_attempt_at")));
    else
        snprintf (waiting, size, "being processed");
}

//  Reads the queue figures (db/mx_readmodel); returns -1 with *error on
//  failure.
static int
s_status_queue (s_control_t *self, json_t *status, char **error)
{
    if (!self->status_conn) {
        self->status_conn = mx_pg_connect (self->config->pg_conninfo, "msgxd-status",
                                           self->config->pg_statement_timeout, error);
        if (!self->status_conn)
            return -1;
    }
    PGconn *conn = self->status_conn;
    int64_t now = mx_clock_now (self->clock);
    int64_t w = 0, unfinished = 0, unmarked = 0, registered = 0;
    json_t *cursor = NULL, *head = NULL, *counts = NULL;
    bool backing_off = false;
    if (mx_readmodel_cursor (conn, now, &cursor, &w, error)
    ||  mx_readmodel_head (conn, now, &head, &backing_off, error)
    ||  mx_readmodel_counts (conn, &counts, error)
    ||  mx_readmodel_queue (conn, &unfinished, &unmarked, &registered, error)) {
        json_decref (cursor);
        json_decref (head);
        json_decref (counts);
        if (PQstatus (conn) != CONNECTION_OK)
            mx_pg_disconnect (&self->status_conn);
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

    //  The backlog as msgxctl status --watch draws it: registered and
    //  unfinished, plus what the mailbox holds above the highest registered
    //  ID (null when the mailbox cannot be read).
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
    json_object_set_new (status, "backlog", backlog);
    return 0;
}

static json_t *
s_status (s_control_t *self)
{
    int64_t now = mx_clock_now (self->clock);
    json_t *actors = json_array ();
    json_array_append_new (actors, json_string (ACTOR));
    for (size_t i = 0; i < self->children_started; i++)
        json_array_append_new (actors, json_string (self->children [i].args.name));

    char host [256] = "";
    gethostname (host, sizeof host - 1);
    json_t *status = json_pack ("{s:s,s:s,s:I,s:{s:b,s:o}}",
        "role", s_role_names [self->role],
        "instance", host,
        "uptime_s", (json_int_t) ((now - self->started_at) / 1000),
        "pipeline", "paused", self->paused, "actors", actors);
    json_object_set_new (status, "pid", json_integer (getpid ()));

    char *error = NULL;
    const char *pg_state = "ok";
    bool unknown = true;
    if (self->role == ROLE_CONNECTING)
        pg_state = self->pg_error ? self->pg_error : "connecting";
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
    const mx_config_t *config = self->config;
    json_object_set_new (status, "dependencies", json_pack ("{s:s,s:s,s:s}",
        "postgresql", pg_state,
        "mailbox", config->mailbox_shared_mysql_enabled
                   ? "enabled: ingress, processor and the compat entry read and write it"
                   : "disabled (mailbox.shared-mysql.enabled=false): ingress, pump, processor and the compat entry are off",
        "kafka", self->args->kafka_description ? self->args->kafka_description : "not configured"));
    free (error);
    return status;
}

//  ---------------------------------------------------------------------
//  Admin requests

static void
s_admin_reply (s_control_t *self, zframe_t **identity, const char *verdict, const char *payload)
{
    zmsg_t *reply = zmsg_new ();
    zmsg_append (reply, identity);
    zmsg_addmem (reply, "", 0);
    zmsg_addstr (reply, verdict);
    zmsg_addstr (reply, payload);
    zmsg_send (&reply, self->admin);
}

static void
s_admin_reply_json (s_control_t *self, zframe_t **identity, json_t *payload)
{
    char *text = json_dumps (payload, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (payload);
    s_admin_reply (self, identity, "OK", text ? text : "{}");
    free (text);
}

//  PAUSE and RESUME go to the pipeline; the services learn it from ROLE.
static void
s_broadcast (s_control_t *self, mx_cmd_t cmd)
{
    for (size_t i = 0; i < self->children_started; i++)
        if (!self->children [i].service)
            mx_cmd_send (zactor_sock (self->children [i].actor), cmd);
    s_tell_services (self);
}

//  DEAD rows for the operator: messages, or with events the outbox's
//  dead letters. Read-only, on the status connection.
static void
s_admin_dead (s_control_t *self, zframe_t **identity, json_t *args)
{
    bool events = json_is_true (json_object_get (args, "events"));
    json_int_t limit = json_integer_value (json_object_get (args, "limit"));
    json_int_t after = json_integer_value (json_object_get (args, "after"));
    char *error = NULL;
    if (!self->status_conn)
        self->status_conn = mx_pg_connect (self->config->pg_conninfo, "msgxd-status",
                                           self->config->pg_statement_timeout, &error);
    char *text = NULL;
    int64_t total = 0;
    bool more = false;
    if (!self->status_conn
    ||  mx_readmodel_dead (self->status_conn, events, limit > 0 && limit <= 10000 ? limit : 100,
                           after > 0 ? after : 0, &text, &total, &more, &error)) {
        char *why = zsys_sprintf ("cannot read the dead rows: %s", error ? error : "no connection");
        s_admin_reply (self, identity, "ERR", why);
        free (why);
        free (error);
        if (self->status_conn && PQstatus (self->status_conn) != CONNECTION_OK)
            mx_pg_disconnect (&self->status_conn);
        return;
    }
    json_t *rows = json_loads (text, 0, NULL);
    free (text);
    s_admin_reply_json (self, identity, json_pack ("{s:s,s:o,s:I,s:b}", "kind", events ? "events" : "messages",
                                                   "rows", rows ? rows : json_array (),
                                                   "total", (json_int_t) total, "more", more));
}

//  The decoded summary of a raw message: envelope, kind, identity and
//  the flights its body names.
static json_t *
s_show_decode (s_control_t *self, const char *xml, size_t size)
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

//  Everything known about one message: its proc_state row (or archived
//  copy), the raw text from the mailbox decoded, and its outbox events.
//  Read-only, on the status connection and a mailbox connection of its own.
static void
s_admin_show (s_control_t *self, zframe_t **identity, json_t *args)
{
    json_t *id_value = json_object_get (args, "msg_id");
    if (!json_is_integer (id_value) || json_integer_value (id_value) <= 0) {
        s_admin_reply (self, identity, "ERR", "show needs msg_id, a positive message ID");
        return;
    }
    int64_t msg_id = json_integer_value (id_value);
    char *error = NULL;
    if (!self->status_conn)
        self->status_conn = mx_pg_connect (self->config->pg_conninfo, "msgxd-status",
                                           self->config->pg_statement_timeout, &error);
    char *row_text = NULL, *events_text = NULL;
    if (!self->status_conn
    ||  mx_readmodel_message (self->status_conn, msg_id, &row_text, &events_text, &error)) {
        char *why = zsys_sprintf ("cannot read message %" PRId64 ": %s", msg_id, error ? error : "no connection");
        s_admin_reply (self, identity, "ERR", why);
        free (why);
        free (error);
        if (self->status_conn && PQstatus (self->status_conn) != CONNECTION_OK)
            mx_pg_disconnect (&self->status_conn);
        return;
    }
    json_t *row = row_text ? json_loads (row_text, 0, NULL) : NULL;
    json_t *events = json_loads (events_text, 0, NULL);
    free (row_text);
    free (events_text);

    json_t *raw = NULL;
    json_t *decoded = json_null ();
    bool in_mailbox = false;
    if (!self->config->mailbox_shared_mysql_enabled)
        raw = json_pack ("{s:n,s:s}", "xml", "error", "mailbox disabled (mailbox.shared-mysql.enabled = false)");
    else {
        if (!self->mailbox)
            self->mailbox = mx_mailbox_new (self->config);
        char *xml = NULL;
        size_t size = 0;
        size_t max_bytes = (size_t) self->config->codec_max_message_bytes;
        int found = mx_mailbox_read (self->mailbox, msg_id, max_bytes, &xml, &size, &error);
        if (found < 0)
            raw = json_pack ("{s:n,s:s}", "xml", "error", error ? error : "mailbox unreachable");
        else
        if (found == 0)
            raw = json_pack ("{s:n,s:s}", "xml", "error", "no such row in CMINMSGS");
        else
        if (!xml) {
            char *why = zsys_sprintf ("%zu bytes: larger than msgx.codec.max-message-bytes (%zu)", size, max_bytes);
            raw = json_pack ("{s:n,s:I,s:s}", "xml", "bytes", (json_int_t) size, "error", why);
            free (why);
            in_mailbox = true;
        }
        else {
            in_mailbox = true;
            //  json_stringn refuses text that is not UTF-8: say so rather
            //  than guess at the bytes.
            json_t *text = json_stringn (xml, size);
            raw = json_pack ("{s:o,s:I}", "xml", text ? text : json_null (), "bytes", (json_int_t) size);
            if (!text)
                json_object_set_new (raw, "error", json_string ("not valid UTF-8: shown in the decoded summary only"));
            json_decref (decoded);
            decoded = s_show_decode (self, xml, size);
        }
        free (error);
        error = NULL;
        free (xml);
    }
    if (!row && !in_mailbox) {
        char *why = zsys_sprintf ("no message %" PRId64 ": not in proc_state, its archive or the mailbox", msg_id);
        s_admin_reply (self, identity, "ERR", why);
        free (why);
        json_decref (events);
        json_decref (raw);
        json_decref (decoded);
        return;
    }
    s_admin_reply_json (self, identity, json_pack ("{s:I,s:o,s:o,s:o,s:o}",
        "msg_id", (json_int_t) msg_id, "state", row ? row : json_null (), "raw", raw,
        "decoded", decoded, "events", events ? events : json_array ()));
}

//  An admin verb another actor owns (mx_admin.def): answered when the
//  owner replies; the owner decides when it is safe to act (the pump:
//  between messages).
static void
s_admin_route (s_control_t *self, zframe_t **identity, mx_admin_t admin, const char *args_text)
{
    const char *owner = mx_admin_owner (admin);
    s_child_t *child = s_child (self, owner);
    if (!child) {
        bool mailbox_off = false;
        for (size_t i = 0; i < mx_pipeline_actor_count; i++)
            if (strcmp (mx_pipeline_actors [i].name, owner) == 0)
                mailbox_off = mx_pipeline_actors [i].needs_mailbox && !self->config->mailbox_shared_mysql_enabled;
        char *why = zsys_sprintf ("%s needs the %s actor, which is not running%s", mx_admin_verb (admin), owner,
                                  mailbox_off ? " (mailbox disabled)" : "");
        s_admin_reply (self, identity, "ERR", why);
        free (why);
        return;
    }
    char request_id [24];
    snprintf (request_id, sizeof request_id, "%" PRIu64, ++self->admin_sequence);
    zhashx_insert (self->admin_waiting, request_id, *identity);
    *identity = NULL;
    mx_cmd_send (zactor_sock (child->actor), MX_CMD_ADMIN, self->admin_sequence, mx_admin_verb (admin), args_text);
}

static void
s_handle_admin (s_control_t *self)
{
    zmsg_t *request = zmsg_recv (self->admin);
    if (!request)
        return;
    zframe_t *identity = zmsg_pop (request);
    zframe_t *delimiter = zmsg_pop (request);
    bool framed = identity && delimiter && zframe_size (delimiter) == 0;
    zframe_destroy (&delimiter);
    if (!framed) {
        //  Not a REQ peer: nothing sensible to answer.
        mx_warn (ACTOR, "dropped an admin request without a REQ envelope");
        zframe_destroy (&identity);
        zmsg_destroy (&request);
        return;
    }
    char *verb = zmsg_popstr (request);
    char *args_text = zmsg_popstr (request);
    json_error_t json_error;
    json_t *args = args_text ? json_loads (args_text, 0, &json_error) : NULL;
    mx_admin_t admin = mx_admin_lookup (verb);

    if (!verb || !args || !json_is_object (args) || zmsg_size (request) != 0) {
        s_admin_reply (self, &identity, "ERR", "malformed request: expected verb + one JSON object of arguments");
        mx_warn (ACTOR, "malformed admin request");
    }
    else
    if (admin == MX_ADMIN_UNKNOWN) {
        char *why = zsys_sprintf ("unknown command '%.64s'", verb);
        s_admin_reply (self, &identity, "ERR", why);
        free (why);
    }
    else
    if (self->role != ROLE_ACTIVE && !mx_admin_on_standby (admin))
        s_admin_reply (self, &identity, "ERR", "this instance is not active (standby): send the command to the active instance");
    else
    if (strcmp (mx_admin_owner (admin), "control") != 0)
        s_admin_route (self, &identity, admin, args_text);
    else
    if (admin == MX_ADMIN_STATUS)
        s_admin_reply_json (self, &identity, s_status (self));
    else
    if (admin == MX_ADMIN_SHOW)
        s_admin_show (self, &identity, args);          //  read-only: a standby answers too
    else
    if (admin == MX_ADMIN_DEAD)
        s_admin_dead (self, &identity, args);
    else {
        assert (admin == MX_ADMIN_PAUSE || admin == MX_ADMIN_RESUME);
        bool pause = admin == MX_ADMIN_PAUSE;
        if (self->paused != pause) {
            self->paused = pause;
            s_broadcast (self, pause ? MX_CMD_PAUSE : MX_CMD_RESUME);
            mx_info (ACTOR, "pipeline %s by msgxctl", pause ? "paused" : "resumed");
        }
        s_admin_reply_json (self, &identity, json_pack ("{s:b}", "paused", self->paused));
    }
    zframe_destroy (&identity);
    json_decref (args);
    free (verb);
    free (args_text);
    zmsg_destroy (&request);
}

//  ---------------------------------------------------------------------
//  Pipe and main loop

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_control_t *self = (s_control_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            char *error = NULL;
            //  The services answer /health from the start, whatever the
            //  role turns out to be.
            if (s_admin_bind (self, &error) || s_children_start (self, true, &error)) {
                mx_actor_reply_failed (self->pipe, error);
                free (error);
                break;
            }
            char *detail = zsys_sprintf ("admin on %s; acquiring the instance lock", self->config->admin_endpoint);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            s_connect (self);
            break;
        }
        default:
            assert (!"control: unexpected command on its pipe");
    }
    mx_cmd_done (&rest);
    return true;
}

//  Children report fatal failures, W moves, committed events, owed marks
//  and admin replies; control passes each to whoever acts on it.
static void
s_handle_child (s_control_t *self, s_child_t *child)
{
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (zactor_sock (child->actor), &rest);
    if (cmd == MX_CMD_W_MOVED) {
        mx_cmd_W_MOVED_t moved;
        mx_cmd_W_MOVED_take (&rest, &moved);
        s_child_t *pump = s_child (self, "pump");
        if (pump)
            mx_cmd_send (zactor_sock (pump->actor), MX_CMD_WAKE);
        return;
    }
    if (cmd == MX_CMD_EVENTS_COMMITTED) {
        mx_cmd_done (&rest);
        const char *targets [] = { "dispatcher", "schd-aggregator" };
        for (size_t i = 0; i < 2; i++) {
            s_child_t *target = s_child (self, targets [i]);
            if (target)
                mx_cmd_send (zactor_sock (target->actor), MX_CMD_EVENTS_COMMITTED);
        }
        return;
    }
    if (cmd == MX_CMD_MARKS_OWED) {
        mx_cmd_MARKS_OWED_t owed;
        mx_cmd_MARKS_OWED_take (&rest, &owed);
        s_child_t *backfill = s_child (self, "backfill");
        if (backfill)
            mx_cmd_send (zactor_sock (backfill->actor), MX_CMD_MARKS_OWED, owed.from, owed.to);
        return;
    }
    if (cmd == MX_CMD_ADMIN_REPLY) {
        mx_cmd_ADMIN_REPLY_t reply;
        mx_cmd_ADMIN_REPLY_take (&rest, &reply);
        char request [24];
        snprintf (request, sizeof request, "%" PRIu64, reply.request);
        zframe_t *identity = (zframe_t *) zhashx_lookup (self->admin_waiting, request);
        if (identity) {
            zhashx_delete (self->admin_waiting, request);
            s_admin_reply (self, &identity, reply.verdict, reply.payload);
        }
        mx_cmd_ADMIN_REPLY_free (&reply);
        //  A replay may have changed the head.
        s_child_t *pump = s_child (self, "pump");
        if (pump && strcmp (child->args.name, "pump") != 0)
            mx_cmd_send (zactor_sock (pump->actor), MX_CMD_WAKE);
        //  Dead events replayed are new work, as committed events are: the
        //  schd-aggregator takes its share at its next flush (the
        //  dispatcher has started a round itself).
        s_child_t *aggregator = s_child (self, "schd-aggregator");
        if (aggregator && strcmp (child->args.name, "dispatcher") == 0)
            mx_cmd_send (zactor_sock (aggregator->actor), MX_CMD_EVENTS_COMMITTED);
        return;
    }
    if (cmd == MX_CMD_FATAL) {
        mx_cmd_FATAL_t fatal;
        mx_cmd_FATAL_take (&rest, &fatal);
        char *why = zsys_sprintf ("actor %s failed: %s", child->args.name, fatal.reason);
        s_fatal (self, fatal.code, why);
        s_set_role (self, ROLE_FENCED, "a pipeline actor failed");
        free (why);
        mx_cmd_FATAL_free (&fatal);
        return;
    }
    assert (!"control: unexpected command from a child");
}

static bool
s_lock_ready (void *self_, void *arg)
{
    (void) arg;
    s_lock_readable ((s_control_t *) self_);
    return false;
}

static bool
s_admin_ready (void *self_, void *arg)
{
    (void) arg;
    s_handle_admin ((s_control_t *) self_);
    return false;
}

//  One child message per turn: handling it may stop every child.
static bool
s_child_ready (void *self_, void *arg)
{
    s_handle_child ((s_control_t *) self_, (s_child_t *) arg);
    return true;
}

static size_t
s_sources (void *self_, mx_actor_source_t *sources, size_t max)
{
    s_control_t *self = (s_control_t *) self_;
    size_t count = 0;
    if (self->lock_conn && count < max)
        sources [count++] = (mx_actor_source_t) { .fd = PQsocket (self->lock_conn), .ready = s_lock_ready };
    if (self->admin && count < max)
        sources [count++] = (mx_actor_source_t) { .sock = self->admin, .ready = s_admin_ready };
    for (size_t i = 0; i < self->children_started && count < max; i++)
        sources [count++] = (mx_actor_source_t) {
            .sock = zactor_sock (self->children [i].actor), .ready = s_child_ready, .arg = &self->children [i]
        };
    return count;
}

static int64_t
s_deadline (void *self_)
{
    s_control_t *self = (s_control_t *) self_;
    return self->role == ROLE_CONNECTING ? self->retry_at : INT64_MAX;
}

static void
s_wake (void *self_)
{
    s_control_t *self = (s_control_t *) self_;
    if (self->role == ROLE_CONNECTING && !self->lock_conn && mx_clock_now (self->clock) >= self->retry_at)
        s_connect (self);
}

void
mx_control_actor (zsock_t *pipe, void *args)
{
    s_control_t self_s = { 0 };
    s_control_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_control_args_t *) args;
    self->config = self->args->config;
    self->clock = self->args->clock;
    self->retry_at = INT64_MAX;
    self->started_at = mx_clock_now (self->clock);
    self->paused = !self->config->pipeline_autostart;
    self->role = ROLE_CONNECTING;
    self->children = (s_child_t *) zmalloc ((self->args->child_count + 1) * sizeof (s_child_t));
    snprintf (self->scope, sizeof self->scope, "msgx-%d-%p", (int) getpid (), (void *) self);
    self->admin_waiting = zhashx_new ();

    mx_actor_ops_t ops = { .command = s_command, .sources = s_sources, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    //  Ordered shutdown: pipeline first (reverse start order), then our
    //  own connections, releasing the instance lock last.
    s_children_stop (self);
    //  Requests still waiting get no answer: their msgxctl times out.
    for (zframe_t *identity = (zframe_t *) zhashx_first (self->admin_waiting); identity;
         identity = (zframe_t *) zhashx_next (self->admin_waiting))
        zframe_destroy (&identity);
    zhashx_destroy (&self->admin_waiting);
    if (self->status_conn)
        PQfinish (self->status_conn);
    mx_mailbox_destroy (&self->mailbox);
    mx_tz_destroy (&self->zone);
    s_lock_disconnect (self);
    zsock_destroy (&self->admin);
    if (self->admin_ipc)
        unlink (self->config->admin_endpoint + 6);
    free (self->children);
    free (self->pg_error);
    mx_info (ACTOR, "stopped");
}
