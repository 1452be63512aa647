/*  mx_control - see mx_control.h.  */
#include "mx_control.h"

#include <assert.h>
#include <errno.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "mx_admin.h"
#include "mx_admin_ledger.h"
#include "mx_instance_lock.h"
#include "mx_log.h"
#include "mx_migrate.h"
#include "mx_pg.h"
#include "mx_reader.h"

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
    zactor_t *admin_auth;       //  zauth: the CURVE clients allowed on tcp
    zsock_t *admin_monitor;     //  the admin socket's connection events
    mx_admin_ledger_t *admin_ledger;    //  which admin connections spoke
    bool admin_failed;          //  the last monitor event: a failed handshake
    PGconn *lock_conn;          //  holds the session advisory lock
    bool lock_waiting;          //  async pg_advisory_lock in flight
    int64_t retry_at;           //  next connect attempt, INT64_MAX = none
    int64_t started_at;
    int64_t active_since;
    bool paused;
    s_child_t reader;           //  answers the admin reads; runs from START to the end
    s_child_t *children;
    size_t children_started;
    char *pg_error;             //  last PostgreSQL problem, for status
    char scope [64];            //  names our children's inproc sockets
    zhashx_t *admin_waiting;    //  request id -> REQ identity frame
    uint64_t admin_sequence;
    mx_doc_cache_t *doc_cache;  //  the read API's, handed to every child; NULL = off
} s_control_t;

static void s_set_role (s_control_t *self, s_role_t role, const char *why);

static mx_metrics_counter_t *
s_fenced_metric (void)
{
    return mx_metrics_counter ("msgx_instance_fenced_total",
                               "Times the connection holding the instance lock broke while active (exit 75)", NULL);
}

static mx_metrics_counter_t *
s_takeovers_metric (void)
{
    return mx_metrics_counter ("msgx_instance_takeovers_total",
                               "Times this instance took the lock over after waiting as standby (a failover)", NULL);
}

void
mx_control_register_metrics (void)
{
    s_fenced_metric ();
    s_takeovers_metric ();
}
static void s_tell_reader (s_control_t *self);

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

//  A request ZeroMQ drops for its size never reaches us: its connection
//  is closed instead. The monitor tells which connections were accepted
//  and closed, the requests which of them spoke (mx_admin_ledger). A
//  handshake that fails (a socket probe, a wrong CURVE key) is reported
//  just before its disconnection, by the same I/O thread: that one is no
//  dropped request.
mx_metrics_counter_t *
mx_control_admin_dropped (void)
{
    return mx_metrics_counter ("msgx_admin_requests_dropped_total",
                               "Admin connections closed before a whole request arrived: larger than "
                               "msgx.admin.max-request-bytes, or cut off", NULL);
}

static bool s_handle_admin (s_control_t *self);

static void
s_admin_monitor_event (s_control_t *self)
{
    zmsg_t *event = zmsg_recv (self->admin_monitor);
    zframe_t *head = event ? zmsg_first (event) : NULL;
    if (!head || zframe_size (head) != 6) {
        zmsg_destroy (&event);
        return;
    }
    uint16_t kind;
    uint32_t fd;
    memcpy (&kind, zframe_data (head), sizeof kind);
    memcpy (&fd, zframe_data (head) + 2, sizeof fd);
    zmsg_destroy (&event);
    bool failed = self->admin_failed;
    self->admin_failed = kind == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL || kind == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                      || kind == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    if (kind == ZMQ_EVENT_ACCEPTED)
        mx_admin_ledger_accepted (self->admin_ledger, (int) fd);
    else
    if (kind == ZMQ_EVENT_DISCONNECTED) {
        //  The connection's requests were queued before this event was
        //  sent, but may still wait on the admin socket: the ledger needs
        //  all of them first.
        while (!failed && s_handle_admin (self))
            ;
        uint64_t dropped = mx_admin_ledger_closed (self->admin_ledger, (int) fd, failed);
        if (dropped) {
            mx_metrics_add (mx_control_admin_dropped (), 1);
            mx_warn (ACTOR, "admin connection #%" PRIu64 " (fd %u) closed before a whole request arrived "
                     "(larger than msgx.admin.max-request-bytes, or cut off)", dropped, (unsigned) fd);
        }
    }
}

static int
s_admin_monitor_start (s_control_t *self, char **error)
{
    char endpoint [64];
    snprintf (endpoint, sizeof endpoint, "inproc://msgx-admin-monitor-%p", (void *) self);
    self->admin_ledger = mx_admin_ledger_new ();
    self->admin_monitor = zsock_new (ZMQ_PAIR);
    if (!self->admin_monitor
    ||  zmq_socket_monitor (zsock_resolve (self->admin), endpoint,
                            ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
                            | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0
    ||  zsock_connect (self->admin_monitor, "%s", endpoint) != 0) {
        *error = zsys_sprintf ("cannot watch the admin socket: %s", zmq_strerror (zmq_errno ()));
        return -1;
    }
    return 0;
}

//  CURVE on the admin socket: its key pair from server-cert, and a zauth
//  that lets in only the clients whose public certificates are in the
//  clients folder. Before the bind, as libzmq requires.
static int
s_admin_curve (s_control_t *self, char **error)
{
    const char *path = self->config->admin_curve_server_cert;
    const char *clients = self->config->admin_curve_clients;
    struct stat st;
    errno = 0;
    if (stat (clients, &st) != 0 || !S_ISDIR (st.st_mode)) {
        *error = zsys_sprintf ("admin CURVE clients folder %s (msgx.admin.curve.clients): %s", clients,
                               errno ? strerror (errno) : "not a folder");
        return -1;
    }
    zcert_t *cert = zcert_load (path);
    //  A certificate without its secret half loads with a secret of zeros.
    if (!cert || strspn (zcert_secret_txt (cert), "0") == strlen (zcert_secret_txt (cert))) {
        *error = zsys_sprintf ("cannot load the admin CURVE key pair %s and %s_secret (msgx.admin.curve.server-cert)",
                               path, path);
        zcert_destroy (&cert);
        return -1;
    }
    self->admin_auth = zactor_new (zauth, NULL);
    assert (self->admin_auth);
    zstr_sendx (self->admin_auth, "CURVE", clients, NULL);
    zsock_wait (self->admin_auth);
    zcert_apply (cert, self->admin);
    zcert_destroy (&cert);
    zsock_set_curve_server (self->admin, 1);
    zsock_set_zap_domain (self->admin, "msgx-admin");
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
    //  A request is a verb and a small JSON object: anything larger is
    //  dropped by ZeroMQ, with its connection, before it takes memory here.
    zsock_set_maxmsgsize (self->admin, (int) self->config->admin_max_request_bytes);
    if (*self->config->admin_curve_server_cert && s_admin_curve (self, error)) {
        zsock_destroy (&self->admin);
        mx_actor_destroy (&self->admin_auth);
        return -1;
    }
    if (zsock_bind (self->admin, "%s", endpoint) < 0) {
        *error = zsys_sprintf ("cannot bind admin endpoint %s: %s", endpoint, zmq_strerror (zmq_errno ()));
        zsock_destroy (&self->admin);
        return -1;
    }
    self->admin_ipc = ipc;
    if (s_admin_monitor_start (self, error)) {
        zsock_destroy (&self->admin_monitor);
        mx_admin_ledger_destroy (&self->admin_ledger);
        zsock_destroy (&self->admin);
        return -1;
    }
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
        mx_actor_destroy (&child->actor);
        mx_info (ACTOR, "stopped actor %s", child->args.name);
    }
    s_tell_reader (self);
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

//  Control's own part of status goes to the reader whenever it changes,
//  so a status read never needs control's loop (INSTANCE).
static void
s_tell_reader (s_control_t *self)
{
    if (!self->reader.actor)
        return;
    json_t *actors = json_array ();
    json_array_append_new (actors, json_string (ACTOR));
    json_array_append_new (actors, json_string (self->reader.args.name));
    for (size_t i = 0; i < self->children_started; i++)
        json_array_append_new (actors, json_string (self->children [i].args.name));
    json_t *own = json_pack ("{s:s,s:b,s:I,s:o,s:s?,s:s}",
        "role", s_role_names [self->role], "paused", self->paused,
        "started_at", (json_int_t) self->started_at, "actors", actors,
        "postgresql", self->role == ROLE_CONNECTING ? self->pg_error : NULL,
        "kafka", self->args->kafka_description ? self->args->kafka_description : "not configured");
    char *text = json_dumps (own, JSON_COMPACT);
    json_decref (own);
    mx_cmd_send (zactor_sock (self->reader.actor), MX_CMD_INSTANCE, text);
    free (text);
}

//  Every change of what status reports about control: the services and
//  the reader hear of it.
static void
s_tell (s_control_t *self)
{
    s_tell_services (self);
    s_tell_reader (self);
}

static int
s_reader_start (s_control_t *self, char **error)
{
    self->reader.args = (mx_actor_args_t) {
        .name = "reader", .config = self->config, .clock = self->clock, .scope = self->scope,
        .kafka_bootstrap = self->args->kafka_bootstrap
    };
    char *detail = NULL, *why = NULL;
    self->reader.actor = mx_actor_start (mx_reader_actor, &self->reader.args, CHILD_START_TIMEOUT_MS, &detail, &why);
    if (!self->reader.actor) {
        *error = zsys_sprintf ("actor reader did not start: %s", why);
        free (why);
        return -1;
    }
    mx_info (ACTOR, "started actor reader: %s", detail);
    free (detail);
    s_tell_reader (self);
    return 0;
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
        child->args.doc_cache = self->doc_cache;
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
    s_tell_reader (self);
    return 0;
}

static s_child_t *
s_child (s_control_t *self, const char *name)
{
    if (self->reader.actor && strcmp (self->reader.args.name, name) == 0)
        return &self->reader;
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
    s_tell_reader (self);
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
            mx_metrics_add (s_fenced_metric (), 1);
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
    if (rc == 1) {
        mx_metrics_add (s_takeovers_metric (), 1);
        s_become_active (self);
    }
}

static void
s_set_role (s_control_t *self, s_role_t role, const char *why)
{
    if (self->role == role)
        return;
    //  Not the writer any more (or not sure to be): the cache is coherent
    //  only while this instance alone writes flight state. Emptied before
    //  anyone hears of the new role; the processor enables it again when a
    //  pipeline starts.
    if (role != ROLE_ACTIVE)
        mx_doc_cache_disable (self->doc_cache);
    self->role = role;
    //  Told before the line is logged: whoever reads the log and then
    //  asks /health gets the new role.
    s_tell (self);
    json_t *fields = json_pack ("{s:s}", "role", s_role_names [role]);
    mx_log_emit (role == ROLE_FENCED ? MX_LOG_ERROR : MX_LOG_INFO, ACTOR, fields,
                 "role %s: %s", s_role_names [role], why);
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
    s_tell (self);
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

//  log-level: the level of every actor or of one (a name that logs: main,
//  config, control, reader, or a child in the table), logged whatever the
//  level with who asked. No restart, so the role and the lock stay.
static void
s_log_level (s_control_t *self, zframe_t **identity, json_t *args)
{
    const char *text = json_string_value (json_object_get (args, "level"));
    const char *actor = json_string_value (json_object_get (args, "actor"));
    const char *os_user = json_string_value (json_object_get (args, "os_user"));
    mx_log_level_t level;
    if (mx_log_level_parse (text, &level)) {
        s_admin_reply (self, identity, "ERR", "log-level: the level must be debug, info, warn or error");
        return;
    }
    bool known = !actor || streq (actor, "main") || streq (actor, "config") || streq (actor, ACTOR)
              || streq (actor, "reader");
    for (size_t i = 0; actor && !known && i < mx_pipeline_actor_count; i++)
        known = streq (actor, mx_pipeline_actors [i].name);
    if (!known) {
        char *why = zsys_sprintf ("log-level: no actor '%.32s' (main, config, control, reader, or one of"
                                  " msgxctl status's actors)", actor);
        s_admin_reply (self, identity, "ERR", why);
        free (why);
        return;
    }
    json_t *before = mx_log_levels ();
    if (actor)
        mx_log_set_actor_level (actor, (int) level);
    else {
        mx_log_set_level (level);
        mx_log_clear_actor_levels ();
    }
    json_t *after = mx_log_levels ();
    char *was = json_dumps (before, JSON_COMPACT | JSON_SORT_KEYS);
    mx_log_notice (ACTOR, json_pack ("{s:s,s:s?,s:s}", "level", text, "target_actor", actor,
                                     "os_user", os_user ? os_user : "unknown"),
                   "log level %s for %s%s, set by msgxctl (was %s)", text, actor ? "actor " : "every actor",
                   actor ? actor : "", was);
    free (was);
    json_decref (before);
    s_admin_reply_json (self, identity, after);
}

//  Who sent a request, as the kernel knows it: on ipc the uid and pid of
//  the peer process (SO_PEERCRED of the connection it came over), on tcp
//  the peer's address (loopback: mx_config_validate). The ledger learns
//  that the connection spoke.
static char *
s_admin_peer (s_control_t *self, zmq_msg_t *part, zframe_t *routing_id)
{
    int fd = zmq_msg_get (part, ZMQ_SRCFD);
    if (routing_id)
        mx_admin_ledger_request (self->admin_ledger, fd, zframe_data (routing_id), zframe_size (routing_id));
    if (!self->admin_ipc) {
        //  With CURVE, zauth accepted the client by its public key.
        const char *address = zmq_msg_gets (part, "Peer-Address");
        const char *key = zmq_msg_gets (part, "User-Id");
        if (self->admin_auth && key && *key)
            return zsys_sprintf ("curve key %s, address %s", key, address ? address : "unknown");
        return zsys_sprintf ("%saddress %s", self->admin_auth ? "curve, " : "", address ? address : "unknown");
    }
    struct ucred cred;
    socklen_t size = sizeof cred;
    if (fd < 0 || getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0)
        return strdup ("uid unknown");
    char buffer [1024];
    struct passwd entry, *account = NULL;
    getpwuid_r (cred.uid, &entry, buffer, sizeof buffer, &account);
    return zsys_sprintf ("uid %u (%s) pid %d", (unsigned) cred.uid, account ? account->pw_name : "no name",
                         (int) cred.pid);
}

//  One whole request and its peer (s_admin_peer), or NULL.
static zmsg_t *
s_admin_recv (s_control_t *self, char **peer)
{
    void *handle = zsock_resolve (self->admin);
    zmsg_t *request = zmsg_new ();
    *peer = NULL;
    bool more = true;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init (&part);
        //  The parts of one message arrive together.
        if (zmq_msg_recv (&part, handle, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&part);
            zmsg_destroy (&request);
            zstr_free (peer);
            return NULL;
        }
        more = zmq_msg_more (&part);
        //  The last part came off the wire (the first is the routing id
        //  the ROUTER made): it knows the connection.
        if (!more)
            *peer = s_admin_peer (self, &part, zmsg_first (request));
        zmsg_addmem (request, zmq_msg_data (&part), zmq_msg_size (&part));
        zmq_msg_close (&part);
    }
    return request;
}

//  One request, if one waits. false: none did.
static bool
s_handle_admin (s_control_t *self)
{
    char *peer = NULL;
    zmsg_t *request = s_admin_recv (self, &peer);
    if (!request)
        return false;
    zframe_t *identity = zmsg_pop (request);
    zframe_t *delimiter = zmsg_pop (request);
    bool framed = identity && delimiter && zframe_size (delimiter) == 0;
    zframe_destroy (&delimiter);
    if (!framed) {
        //  Not a REQ peer: nothing sensible to answer.
        mx_warn (ACTOR, "dropped an admin request without a REQ envelope");
        zframe_destroy (&identity);
        zmsg_destroy (&request);
        free (peer);
        return true;
    }
    mx_admin_request_t decoded;
    char *refused = mx_admin_request_decode (request, &decoded);
    mx_admin_t admin = decoded.verb;
    if (!refused) {
        mx_log_emit (MX_LOG_DEBUG, ACTOR, json_pack ("{s:s}", "verb", mx_admin_verb (admin)),
                     "admin request %s", mx_admin_verb (admin));
        //  The audit records the user the client claims next to the peer
        //  the kernel vouches for.
        const char *claimed = json_string_value (json_object_get (decoded.args, "os_user"));
        char *who = zsys_sprintf ("%s [%s]", claimed ? claimed : "(none)", peer);
        json_object_set_new (decoded.args, "os_user", json_string (who));
        free (who);
        free (decoded.args_text);
        decoded.args_text = json_dumps (decoded.args, JSON_COMPACT);
    }
    if (refused) {
        s_admin_reply (self, &identity, "ERR", refused);
        mx_warn (ACTOR, "admin request refused: %s", refused);
        free (refused);
    }
    else
    if (self->role != ROLE_ACTIVE && !mx_admin_on_standby (admin))
        s_admin_reply (self, &identity, "ERR", "this instance is not active (standby): send the command to the active instance");
    else
    if (strcmp (mx_admin_owner (admin), "control") != 0)
        s_admin_route (self, &identity, admin, decoded.args_text);
    else
    if (admin == MX_ADMIN_LOG_LEVEL)
        s_log_level (self, &identity, decoded.args);
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
    mx_admin_request_reset (&decoded);
    free (peer);
    zmsg_destroy (&request);
    return true;
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
            if (s_admin_bind (self, &error) || s_reader_start (self, &error)
            ||  s_children_start (self, true, &error)) {
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
        const char *targets [] = { "dispatcher", "schd-aggregator", "ref-dispatcher" };
        for (size_t i = 0; i < 3; i++) {
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
        //  A replay may have changed the head (a read changes nothing).
        s_child_t *pump = s_child (self, "pump");
        if (pump && child != pump && child != &self->reader)
            mx_cmd_send (zactor_sock (pump->actor), MX_CMD_WAKE);
        //  Dead events replayed are new work, as committed events are: the
        //  schd-aggregator takes its share at its next flush (the
        //  dispatcher has started a round itself).
        const char *others [] = { "schd-aggregator", "ref-dispatcher" };
        for (size_t i = 0; i < 2 && strcmp (child->args.name, "dispatcher") == 0; i++) {
            s_child_t *other = s_child (self, others [i]);
            if (other)
                mx_cmd_send (zactor_sock (other->actor), MX_CMD_EVENTS_COMMITTED);
        }
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

//  Each handler ends the turn (true): the lock connection found broken
//  fences the instance and an admin verb may stop or start actors, so the
//  children this turn's poll saw ready may be gone; the next turn polls
//  the sources as they are then.
static bool
s_lock_ready (void *self_, void *arg)
{
    (void) arg;
    s_lock_readable ((s_control_t *) self_);
    return true;
}

static bool
s_admin_monitor_ready (void *self_, void *arg)
{
    (void) arg;
    s_admin_monitor_event ((s_control_t *) self_);
    return true;
}

static bool
s_admin_ready (void *self_, void *arg)
{
    (void) arg;
    s_handle_admin ((s_control_t *) self_);
    return true;
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
    if (self->admin_monitor && count < max)
        sources [count++] = (mx_actor_source_t) { .sock = self->admin_monitor, .ready = s_admin_monitor_ready };
    if (self->reader.actor && count < max)
        sources [count++] = (mx_actor_source_t) {
            .sock = zactor_sock (self->reader.actor), .ready = s_child_ready, .arg = &self->reader
        };
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
    if (self->config->api_enabled && self->config->api_cache_flights > 0 && self->config->api_cache_bytes > 0) {
        self->doc_cache = mx_doc_cache_new ((size_t) self->config->api_cache_flights,
                                            (size_t) self->config->api_cache_bytes, 0);
        mx_doc_cache_keep_during_writes (self->doc_cache, streq (self->config->api_read_during_commit, "previous"));
        if (!self->doc_cache)
            mx_warn (ACTOR, "read API: no memory for the state-document cache (msgx.api.cache-flights %"
                     PRId64 "): every GET /flights/{flid} reads PostgreSQL", self->config->api_cache_flights);
    }

    mx_actor_ops_t ops = { .command = s_command, .sources = s_sources, .deadline = s_deadline, .wake = s_wake };
    mx_actor_run (pipe, self->clock, &ops, self);
    //  Ordered shutdown: pipeline first (reverse start order), then our
    //  own connections, releasing the instance lock last.
    s_children_stop (self);
    mx_doc_cache_destroy (&self->doc_cache);
    //  Requests still waiting get no answer: their msgxctl times out.
    for (zframe_t *identity = (zframe_t *) zhashx_first (self->admin_waiting); identity;
         identity = (zframe_t *) zhashx_next (self->admin_waiting))
        zframe_destroy (&identity);
    zhashx_destroy (&self->admin_waiting);
    mx_actor_destroy (&self->reader.actor);
    s_lock_disconnect (self);
    if (self->admin)
        zmq_socket_monitor (zsock_resolve (self->admin), NULL, 0);
    zsock_destroy (&self->admin_monitor);
    mx_admin_ledger_destroy (&self->admin_ledger);
    zsock_destroy (&self->admin);
    mx_actor_destroy (&self->admin_auth);
    if (self->admin_ipc)
        unlink (self->config->admin_endpoint + 6);
    free (self->children);
    free (self->pg_error);
    mx_info (ACTOR, "stopped");
}
