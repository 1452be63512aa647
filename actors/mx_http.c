/*  mx_http - see mx_http.h.  */
#include "mx_http.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <microhttpd.h>

#include "mx_compat_body.h"
#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_metrics.h"
#include "mx_metrics_actor.h"
#include "mx_pg.h"
#include "mx_procstate.h"

#define S_PATH_SEND "/cminmsgs/send"
#define S_PATH_HEALTH "/health"
#define S_PATH_METRICS "/metrics"

//  How long /health and /metrics wait for the metrics actor. Longer than
//  its Kafka check (MX_METRICS_KAFKA_TIMEOUT_MS) plus a database round trip.
#define S_METRICS_WAIT_MS 2000

//  Per-connection bounds (the idle timeout is msgx.http.idle-timeout): open
//  connections, and MHD's per-connection memory pool (request line and
//  headers must fit in it).
#define S_CONNECTION_LIMIT     64u
#define S_CONNECTION_MEMORY    ((size_t) 32 * 1024)

//  CMINMSGS_CLOB_MSG is a MEDIUMTEXT: a larger body could never be stored.
#define S_MEDIUMTEXT_MAX ((size_t) 16777215)
//  Bodies of all requests together may hold this many maximal bodies.
#define S_BUDGET_BODIES 4
//  First buffer of a body of unknown length (chunked).
#define S_FIRST_BUFFER ((size_t) 64 * 1024)
//  Bytes of a refused body still read (and dropped) so the client gets its
//  answer; beyond this the connection is cut.
#define S_DRAIN_LIMIT ((size_t) 1024 * 1024)

//  Refusals are counted per status code (metrics come from these later).
static const unsigned int s_status_codes [] = { 400, 404, 405, 413, 415, 503 };
#define S_STATUS_COUNT (sizeof s_status_codes / sizeof s_status_codes [0])

typedef struct {
    uint64_t accepted;
    uint64_t rejected [S_STATUS_COUNT];     //  by s_status_codes
    uint64_t cut_off;                       //  closed while a refused body kept coming
    uint64_t procstate_failed;              //  stored in the mailbox, proc_state row missing
} s_counts_t;

typedef struct {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    const char *name;
    struct MHD_Daemon *daemon;
    int epoll_fd;
    size_t max_body;                //  bytes of one body
    size_t budget;                  //  bytes of all bodies held at once
    size_t buffered;                //  bytes allocated to bodies now
    mx_mailbox_t *mailbox;
    PGconn *pg;                     //  lazily (re)connected
    s_counts_t counts;
    zsock_t *metrics;               //  DEALER to the metrics actor
    uint64_t metrics_tag;           //  of the last request, to drop late replies
    //  The instance's role and pause as control last told (ROLE). An actor
    //  nobody tells (started on its own) serves as an active instance.
    char role [16];
    bool paused;
} s_http_t;

//  One request being received (MHD's per-request pointer).
typedef struct {
    char *body;
    size_t size;
    size_t capacity;
    size_t expected;                //  Content-Length, 0 if unknown
    unsigned int status;            //  refusal decided while the body arrived; 0 = none
    char *reason;
    size_t dropped;                 //  body bytes read and dropped after the refusal
} s_request_t;

//  ---------------------------------------------------------------------
//  Answers

static void
s_peer (struct MHD_Connection *connection, char *buf, size_t size)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info (connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf (buf, size, "unknown");
    if (!info || !info->client_addr)
        return;
    socklen_t length = info->client_addr->sa_family == AF_INET6
                     ? sizeof (struct sockaddr_in6) : sizeof (struct sockaddr_in);
    char host [NI_MAXHOST], port [NI_MAXSERV];
    if (getnameinfo (info->client_addr, length, host, sizeof host, port, sizeof port,
                     NI_NUMERICHOST | NI_NUMERICSERV) == 0)
        snprintf (buf, size, strchr (host, ':') ? "[%s]:%s" : "%s:%s", host, port);
}

static enum MHD_Result
s_respond_as (struct MHD_Connection *connection, unsigned int status, const char *type,
              const char *allow, const char *text)
{
    struct MHD_Response *response =
        MHD_create_response_from_buffer (strlen (text), (void *) text, MHD_RESPMEM_MUST_COPY);
    if (!response)
        return MHD_NO;
    MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header (response, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result rc = MHD_queue_response (connection, status, response);
    MHD_destroy_response (response);
    return rc;
}

static enum MHD_Result
s_respond (struct MHD_Connection *connection, unsigned int status, const char *text)
{
    return s_respond_as (connection, status, "text/plain; charset=utf-8", MHD_HTTP_METHOD_POST, text);
}

static void
s_count_rejection (s_http_t *self, unsigned int status)
{
    for (size_t i = 0; i < S_STATUS_COUNT; i++)
        if (s_status_codes [i] == status) {
            self->counts.rejected [i]++;
            return;
        }
    assert (!"http: rejection with a status that is not counted");
}

//  Answers status with reason as one text/plain line; counted and logged.
static enum MHD_Result
s_reject (s_http_t *self, struct MHD_Connection *connection, unsigned int status,
          const char *reason)
{
    s_count_rejection (self, status);
    char peer [NI_MAXHOST + NI_MAXSERV + 2];
    s_peer (connection, peer, sizeof peer);
    json_t *fields = json_pack ("{s:i,s:s}", "status", (int) status, "peer", peer);
    mx_log_emit (MX_LOG_WARN, self->name, fields, "compat entry refused with %u: %s",
                 status, reason);
    char *line = zsys_sprintf ("%s\n", reason);
    enum MHD_Result rc = s_respond (connection, status, line);
    free (line);
    return rc;
}

static enum MHD_Result
s_rejectf (s_http_t *self, struct MHD_Connection *connection, unsigned int status,
           const char *fmt, ...) __attribute__ ((format (printf, 4, 5)));

static enum MHD_Result
s_rejectf (s_http_t *self, struct MHD_Connection *connection, unsigned int status,
           const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *reason = zsys_vprintf (fmt, args);
    va_end (args);
    enum MHD_Result rc = s_reject (self, connection, status, reason);
    free (reason);
    return rc;
}

//  ---------------------------------------------------------------------
//  The compat entry

//  Registers the PENDING proc_state row. A failure is only logged: the
//  mailbox row exists, and ingress registers it when it polls.
static void
s_register (s_http_t *self, int64_t id, int64_t received_ms, int64_t now_ms)
{
    char *error = NULL;
    if (!self->pg)
        self->pg = mx_pg_connect (self->config->pg_conninfo, "msgxd-http",
                                  self->config->pg_statement_timeout, &error);
    if (self->pg && mx_procstate_insert_compat (self->pg, id, received_ms, now_ms, &error) == 0)
        return;
    self->counts.procstate_failed++;
    json_t *fields = json_pack ("{s:I}", "msg_id", (json_int_t) id);
    mx_log_emit (MX_LOG_WARN, self->name, fields,
                 "mailbox row %" PRId64 " stored but its proc_state row was not: %s;"
                 " ingress registers it when it polls", id, error ? error : "unknown error");
    free (error);
    if (self->pg && mx_pg_is_connection_error (self->pg))
        mx_pg_disconnect (&self->pg);
}

static enum MHD_Result
s_send (s_http_t *self, struct MHD_Connection *connection, s_request_t *request)
{
    char *why = NULL;
    unsigned int refused = mx_compat_body_check (request->body, request->size, self->max_body, &why);
    if (refused) {
        enum MHD_Result rc = s_reject (self, connection, refused, why);
        free (why);
        return rc;
    }

    int64_t now = mx_clock_now (self->args->clock);
    //  DATE_RECEIVED holds whole seconds; proc_state copies what the
    //  mailbox says, as it does for polled rows.
    int64_t received = now - now % 1000;
    int64_t id = 0;
    char *error = NULL;
    if (mx_mailbox_insert (self->mailbox, request->body, request->size, received, &id, &error)) {
        enum MHD_Result rc;
        if (error && strncmp (error, "shadow mode:", 12) == 0)
            rc = s_reject (self, connection, MHD_HTTP_SERVICE_UNAVAILABLE, error);
        else
            rc = s_rejectf (self, connection, MHD_HTTP_SERVICE_UNAVAILABLE,
                            "mailbox unavailable: %s", error ? error : "unknown error");
        free (error);
        return rc;
    }
    s_register (self, id, received, now);
    self->counts.accepted++;
    json_t *fields = json_pack ("{s:I,s:I}", "msg_id", (json_int_t) id,
                                "bytes", (json_int_t) request->size);
    mx_log_emit (MX_LOG_INFO, self->name, fields, "compat entry stored message %" PRId64, id);
    char text [MX_PG_INT64_BUFSIZE];
    return s_respond (connection, MHD_HTTP_OK, mx_pg_int64_text (id, text));
}

//  ---------------------------------------------------------------------
//  /health and /metrics

//  The metrics actor's snapshot (see mx_metrics_actor.h), or NULL when it
//  did not answer within S_METRICS_WAIT_MS. A reply to an earlier request
//  that came too late is dropped by its tag.
static json_t *
s_ask_metrics (s_http_t *self)
{
    if (!self->metrics)
        return NULL;
    uint64_t tag = ++self->metrics_tag;
    if (mx_cmd_send (self->metrics, MX_CMD_SNAPSHOT, tag))
        return NULL;
    int64_t deadline = zclock_mono () + S_METRICS_WAIT_MS;
    while (true) {
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            return NULL;
        zmsg_t *rest = NULL;
        mx_cmd_t cmd = mx_cmd_recv_timeout (self->metrics, (int) left, &rest);
        if (!rest)
            continue;
        assert (cmd == MX_CMD_SNAPSHOT_REPLY);
        mx_cmd_SNAPSHOT_REPLY_t reply;
        mx_cmd_SNAPSHOT_REPLY_take (&rest, &reply);
        json_t *snapshot = reply.tag == tag ? json_loads (reply.json, 0, NULL) : NULL;
        mx_cmd_SNAPSHOT_REPLY_free (&reply);
        if (snapshot)
            return snapshot;
    }
}

static bool
s_active (s_http_t *self)
{
    return streq (self->role, "active");
}

//  The instance gauges, from what control last told.
static void
s_publish_role (s_http_t *self)
{
    mx_metrics_gauge_set (mx_metrics_gauge ("msgx_instance_active",
                              "1 when this instance holds the instance lock (active), 0 otherwise", NULL),
                          s_active (self) ? 1 : 0);
    mx_metrics_gauge_set (mx_metrics_gauge ("msgx_pipeline_paused",
                              "1 when the pipeline is paused (autostart=false or msgxctl pause)", NULL),
                          self->paused ? 1 : 0);
}

//  200 only on the active instance with every required dependency ok: a
//  load balancer or supervisor then reaches the one instance that takes
//  work. A pause is the operator's decision, not a fault: still 200, and
//  "pipeline":{"paused":true} says it.
static enum MHD_Result
s_health (s_http_t *self, struct MHD_Connection *connection)
{
    json_t *snapshot = s_ask_metrics (self);
    json_t *body;
    unsigned int status;
    if (snapshot) {
        const char *verdict = json_string_value (json_object_get (snapshot, "status"));
        bool ok = verdict && streq (verdict, "ok");
        const char *summary = !ok ? "degraded" : s_active (self) ? "ok" : "standby";
        status = ok && s_active (self) ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        body = json_pack ("{s:s,s:s,s:{s:b},s:O,s:O}", "status", summary, "role", self->role,
                          "pipeline", "paused", self->paused,
                          "dependencies", json_object_get (snapshot, "dependencies"),
                          "backlog", json_object_get (snapshot, "backlog"));
        json_decref (snapshot);
    }
    else {
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        char *error = zsys_sprintf ("metrics actor did not answer within %d ms", S_METRICS_WAIT_MS);
        mx_log_emit (MX_LOG_WARN, self->name, NULL, "GET " S_PATH_HEALTH ": %s", error);
        body = json_pack ("{s:s,s:s,s:{s:b},s:s}", "status", "degraded", "role", self->role,
                          "pipeline", "paused", self->paused, "error", error);
        free (error);
    }
    char *text = json_dumps (body, JSON_COMPACT);
    json_decref (body);
    enum MHD_Result rc = s_respond_as (connection, status, "application/json", MHD_HTTP_METHOD_GET,
                                       text ? text : "{}");
    free (text);
    return rc;
}

static enum MHD_Result
s_metrics (s_http_t *self, struct MHD_Connection *connection)
{
    json_t *snapshot = s_ask_metrics (self);
    if (!snapshot) {
        mx_log_emit (MX_LOG_WARN, self->name, NULL,
                     "GET " S_PATH_METRICS ": metrics actor did not answer within %d ms;"
                     " backlog figures reported unknown", S_METRICS_WAIT_MS);
        mx_metrics_actor_publish (NULL);
    }
    json_decref (snapshot);             //  the actor has set the gauges already
    s_publish_role (self);
    mx_metrics_counter_set (mx_log_dropped_metric (), mx_log_dropped ());
    char *text = mx_metrics_render ();
    enum MHD_Result rc = s_respond_as (connection, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
                                       MHD_HTTP_METHOD_GET, text);
    free (text);
    return rc;
}

//  Gives up the body: from now on its bytes are dropped, and the request
//  ends with status.
static void
s_refuse_body (s_http_t *self, s_request_t *request, unsigned int status, char *reason)
{
    assert (!request->status);
    request->status = status;
    request->reason = reason;
    self->buffered -= request->capacity;
    free (request->body);
    request->body = NULL;
    request->size = request->capacity = 0;
}

static void
s_append (s_http_t *self, s_request_t *request, const char *data, size_t size)
{
    if (size > self->max_body - request->size) {
        s_refuse_body (self, request, MHD_HTTP_CONTENT_TOO_LARGE,
                       zsys_sprintf ("body larger than the limit of %zu bytes (msgx.http.max-body-bytes)",
                                     self->max_body));
        return;
    }
    if (request->size + size > request->capacity) {
        size_t want = request->capacity ? request->capacity * 2
                    : request->expected ? request->expected : S_FIRST_BUFFER;
        if (want < request->size + size)
            want = request->size + size;
        if (want > self->max_body)
            want = self->max_body;
        char *body = NULL;
        if (self->buffered - request->capacity + want <= self->budget)
            body = (char *) realloc (request->body, want);
        if (!body) {
            s_refuse_body (self, request, MHD_HTTP_SERVICE_UNAVAILABLE,
                           strdup ("busy: too many large bodies in flight, retry later"));
            return;
        }
        self->buffered += want - request->capacity;
        request->body = body;
        request->capacity = want;
    }
    memcpy (request->body + request->size, data, size);
    request->size += size;
}

//  MHD calls this once when the headers are in, once per piece of body,
//  and once when the request is complete.
static enum MHD_Result
s_access (void *cls, struct MHD_Connection *connection, const char *url,
          const char *method, const char *version, const char *upload_data,
          size_t *upload_data_size, void **request_p)
{
    s_http_t *self = (s_http_t *) cls;
    s_request_t *request = (s_request_t *) *request_p;

    if (!request) {
        //  Headers only. Refusing now means MHD never reads the body.
        bool health = strcmp (url, S_PATH_HEALTH) == 0;
        if (health || strcmp (url, S_PATH_METRICS) == 0) {
            if (strcmp (method, MHD_HTTP_METHOD_GET) != 0) {
                s_count_rejection (self, MHD_HTTP_METHOD_NOT_ALLOWED);
                return s_respond_as (connection, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
                                     MHD_HTTP_METHOD_GET, "method not allowed: use GET\n");
            }
            return health ? s_health (self, connection) : s_metrics (self, connection);
        }
        if (strcmp (url, S_PATH_SEND) != 0)
            return s_rejectf (self, connection, MHD_HTTP_NOT_FOUND,
                              "no such path '%.128s': the compat entry is POST " S_PATH_SEND, url);
        if (strcmp (method, MHD_HTTP_METHOD_POST) != 0)
            return s_rejectf (self, connection, MHD_HTTP_METHOD_NOT_ALLOWED,
                              "method %.16s not allowed on " S_PATH_SEND ": use POST", method);
        char *why = NULL;
        const char *type = MHD_lookup_connection_value (connection, MHD_HEADER_KIND,
                                                        MHD_HTTP_HEADER_CONTENT_TYPE);
        const char *length_text = MHD_lookup_connection_value (connection, MHD_HEADER_KIND,
                                                               MHD_HTTP_HEADER_CONTENT_LENGTH);
        size_t expected = 0;
        unsigned int refused = mx_compat_body_check_media_type (type, &why);
        if (!refused)
            refused = mx_compat_body_check_length (length_text, self->max_body, &expected, &why);
        if (refused) {
            enum MHD_Result rc = s_reject (self, connection, refused, why);
            free (why);
            return rc;
        }
        //  Only the lock holder writes proc_state.
        if (!s_active (self))
            return s_rejectf (self, connection, MHD_HTTP_SERVICE_UNAVAILABLE,
                              "this instance is %s, not active: send to the active instance", self->role);
        if (!self->config->mailbox_shared_mysql_enabled)
            return s_reject (self, connection, MHD_HTTP_SERVICE_UNAVAILABLE,
                             "mailbox disabled (mailbox.shared-mysql.enabled = false)");
        if (self->config->shadow)
            return s_reject (self, connection, MHD_HTTP_SERVICE_UNAVAILABLE,
                             "shadow mode: msgx.shadow = true forbids writing to the shared mailbox");
        request = (s_request_t *) calloc (1, sizeof *request);
        if (!request)
            return MHD_NO;
        request->expected = expected;
        *request_p = request;
        return MHD_YES;
    }

    if (*upload_data_size > 0) {
        //  MHD cannot answer while the body is still arriving: a refused
        //  body is read and dropped, up to S_DRAIN_LIMIT, then cut off.
        size_t size = *upload_data_size;
        *upload_data_size = 0;
        if (!request->status)
            s_append (self, request, upload_data, size);
        else {
            request->dropped += size;
            if (request->dropped > S_DRAIN_LIMIT) {
                self->counts.cut_off++;
                mx_log_emit (MX_LOG_WARN, self->name, NULL,
                             "compat entry: connection closed, its refused body kept coming (%s)",
                             request->reason);
                return MHD_NO;
            }
        }
        return MHD_YES;
    }

    //  Complete.
    if (request->status)
        return s_reject (self, connection, request->status, request->reason);
    return s_send (self, connection, request);
}

static void
s_completed (void *cls, struct MHD_Connection *connection, void **request_p,
             enum MHD_RequestTerminationCode code)
{
    s_http_t *self = (s_http_t *) cls;
    s_request_t *request = (s_request_t *) *request_p;
    if (!request)
        return;
    self->buffered -= request->capacity;
    free (request->body);
    free (request->reason);
    free (request);
    *request_p = NULL;
}

static void
s_mhd_log (void *cls, const char *fmt, va_list args) __attribute__ ((format (printf, 2, 0)));

static void
s_mhd_log (void *cls, const char *fmt, va_list args)
{
    s_http_t *self = (s_http_t *) cls;
    char line [512];
    vsnprintf (line, sizeof line, fmt, args);
    size_t length = strlen (line);
    while (length > 0 && (line [length - 1] == '\n' || line [length - 1] == ' '))
        line [--length] = '\0';
    //  Mostly clients going away mid-request: worth a line, not an alarm.
    mx_log_emit (MX_LOG_INFO, self->name, NULL, "libmicrohttpd: %s", line);
}

//  ---------------------------------------------------------------------
//  Listening

//  A listening socket on host:port (host may be [ipv6]), or -1 with *error.
static int
s_listen_socket (const char *bind_text, char **error)
{
    const char *colon = strrchr (bind_text, ':');
    assert (colon);                     //  mx_config_validate checked host:port
    const char *host = bind_text;
    size_t host_length = (size_t) (colon - bind_text);
    if (host_length >= 2 && host [0] == '[' && host [host_length - 1] == ']') {
        host++;
        host_length -= 2;
    }
    char *host_text = strndup (host, host_length);
    struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
    struct addrinfo *found = NULL;
    int rc = getaddrinfo (host_text, colon + 1, &hints, &found);
    free (host_text);
    if (rc) {
        *error = zsys_sprintf ("cannot listen on %s: %s", bind_text, gai_strerror (rc));
        return -1;
    }
    int fd = socket (found->ai_family, found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                     found->ai_protocol);
    int on = 1;
    if (fd < 0
    ||  setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on)
    ||  bind (fd, found->ai_addr, found->ai_addrlen)
    ||  listen (fd, SOMAXCONN)) {
        *error = zsys_sprintf ("cannot listen on %s: %s", bind_text, strerror (errno));
        if (fd >= 0)
            close (fd);
        fd = -1;
    }
    freeaddrinfo (found);
    return fd;
}

static int
s_start (s_http_t *self, char **error)
{
    const char *bind_text = self->config->http_bind;
    int fd = s_listen_socket (bind_text, error);
    if (fd < 0)
        return -1;
    //  No internal threads: MHD runs only inside MHD_run, in this thread.
    //  The logger comes first so MHD never writes plain text to stderr.
    self->daemon = MHD_start_daemon (MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, s_access, self,
        MHD_OPTION_EXTERNAL_LOGGER, (MHD_LogCallback) s_mhd_log, self,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket) fd,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) ((self->config->http_idle_timeout + 999) / 1000),
        MHD_OPTION_CONNECTION_LIMIT, S_CONNECTION_LIMIT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, S_CONNECTION_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, (MHD_RequestCompletedCallback) s_completed, self,
        MHD_OPTION_END);
    if (!self->daemon) {
        //  The socket is not closed here: MHD may have closed it already.
        *error = zsys_sprintf ("cannot start the HTTP server on %s (libmicrohttpd refused its options)",
                               bind_text);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info (self->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    assert (info);
    self->epoll_fd = info->epoll_fd;
    //  inproc connects before the bind are fine: the metrics actor may
    //  start later (or not at all: /health then says so).
    char endpoint [256];
    mx_actor_endpoint (self->args, "metrics", endpoint, sizeof endpoint);
    self->metrics = zsock_new (ZMQ_DEALER);
    if (!self->metrics || zsock_connect (self->metrics, "%s", endpoint)) {
        *error = zsys_sprintf ("cannot connect to the metrics actor at %s", endpoint);
        return -1;
    }
    zsock_set_linger (self->metrics, 0);
    //  Never queue requests behind an absent metrics actor.
    zsock_set_sndtimeo (self->metrics, 0);
    return 0;
}

static void
s_stop (s_http_t *self)
{
    if (self->daemon) {
        MHD_stop_daemon (self->daemon);
        self->daemon = NULL;
        s_counts_t *counts = &self->counts;
        mx_log_emit (MX_LOG_INFO, self->name, NULL,
                     "stopped; compat entry accepted %" PRIu64 ", refused 400:%" PRIu64
                     " 404:%" PRIu64 " 405:%" PRIu64 " 413:%" PRIu64 " 415:%" PRIu64
                     " 503:%" PRIu64 ", cut off %" PRIu64 ", proc_state failures %" PRIu64,
                     counts->accepted, counts->rejected [0], counts->rejected [1],
                     counts->rejected [2], counts->rejected [3], counts->rejected [4],
                     counts->rejected [5], counts->cut_off, counts->procstate_failed);
    }
    assert (self->buffered == 0);
}

//  ---------------------------------------------------------------------
//  Actor

static bool
s_command (void *self_, mx_cmd_t cmd, zmsg_t *rest)
{
    s_http_t *self = (s_http_t *) self_;
    switch (cmd) {
        case MX_CMD_START: {
            mx_cmd_done (&rest);
            char *error = NULL;
            if (s_start (self, &error)) {
                mx_log_emit (MX_LOG_ERROR, self->name, NULL, "%s", error);
                mx_actor_reply_failed (self->pipe, error);
                free (error);
                mx_actor_wait_term (self->pipe);
                return false;
            }
            char *detail = zsys_sprintf ("listening on %s (POST " S_PATH_SEND ")",
                                         self->config->http_bind);
            mx_actor_reply_started (self->pipe, detail);
            free (detail);
            return true;
        }
        case MX_CMD_ROLE: {
            mx_cmd_ROLE_t role;
            mx_cmd_ROLE_take (&rest, &role);
            self->paused = role.paused != 0;
            snprintf (self->role, sizeof self->role, "%s", role.role);
            mx_cmd_ROLE_free (&role);
            break;
        }
        case MX_CMD_PAUSE:
        case MX_CMD_RESUME:
            break;                      //  nothing to pause here
        default:
            assert (!"http: unexpected command on its pipe");
    }
    mx_cmd_done (&rest);
    return true;
}

static bool
s_mhd_ready (void *self_, void *arg)
{
    (void) self_;
    (void) arg;
    return false;               //  s_wake runs the daemon
}

//  The daemon's epoll descriptor, while it listens.
static size_t
s_sources (void *self_, mx_actor_source_t *sources, size_t max)
{
    s_http_t *self = (s_http_t *) self_;
    if (!self->daemon || max < 1)
        return 0;
    sources [0] = (mx_actor_source_t) { .fd = self->epoll_fd, .ready = s_mhd_ready };
    return 1;
}

//  libmicrohttpd keeps its own timers (idle connections).
static long
s_timeout (void *self_)
{
    s_http_t *self = (s_http_t *) self_;
    MHD_UNSIGNED_LONG_LONG mhd_timeout = 0;
    if (self->daemon && MHD_get_timeout (self->daemon, &mhd_timeout) == MHD_YES)
        return mhd_timeout > INT_MAX ? INT_MAX : (long) mhd_timeout;
    return -1;
}

//  Also on a timeout: MHD then expires idle connections.
static void
s_wake (void *self_)
{
    s_http_t *self = (s_http_t *) self_;
    if (self->daemon)
        MHD_run (self->daemon);
}

void
mx_http_actor (zsock_t *pipe, void *args)
{
    s_http_t self_s = { 0 };
    s_http_t *self = &self_s;
    self->pipe = pipe;
    self->args = (const mx_actor_args_t *) args;
    self->config = self->args->config;
    self->name = self->args->name ? self->args->name : "http";
    self->epoll_fd = -1;
    snprintf (self->role, sizeof self->role, "active");
    self->max_body = (size_t) self->config->http_max_body_bytes;
    if (self->max_body > S_MEDIUMTEXT_MAX)
        self->max_body = S_MEDIUMTEXT_MAX;
    self->budget = S_BUDGET_BODIES * self->max_body;
    self->mailbox = mx_mailbox_new (self->config);

    mx_actor_ops_t ops = { .command = s_command, .sources = s_sources, .timeout = s_timeout, .wake = s_wake };
    mx_actor_run (pipe, NULL, &ops, self);
    s_stop (self);
    zsock_destroy (&self->metrics);
    mx_pg_disconnect (&self->pg);
    mx_mailbox_destroy (&self->mailbox);
}
