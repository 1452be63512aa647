/*  mx_http - see mx_http.h.  */
#include "mx_http.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <microhttpd.h>

#include "mx_api_reader.h"
#include "mx_cidr.h"
#include "mx_compat_body.h"
#include "mx_compat_writer.h"
#include "mx_log.h"
#include "mx_metrics.h"
#include "mx_metrics_actor.h"
#include "mx_pg.h"

#define S_PATH_SEND "/cminmsgs/send"
#define S_PATH_HEALTH "/health"
#define S_PATH_LIVE "/health/live"
#define S_PATH_READY "/health/ready"
#define S_PATH_METRICS "/metrics"

//  How long /health and /metrics wait for the metrics actor. Longer than
//  its Kafka check (MX_METRICS_KAFKA_TIMEOUT_MS) plus a database round trip.
#define S_METRICS_WAIT_MS 2000

//  MHD's per-connection memory pool (request line and headers must fit).
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
//  Longest token file read.
#define S_TOKEN_MAX 4096
//  Bytes libmicrohttpd asks of a streamed answer at a time (advisory).
#define S_STREAM_BLOCK ((size_t) 16 * 1024)

//  What became of each request to the compat entry (the metric's label).
typedef enum {
    S_ACCEPTED, S_DISABLED, S_UNAUTHORIZED, S_FORBIDDEN, S_INVALID, S_UNAVAILABLE,
    S_OUTCOME_COUNT,
    S_NOT_COMPAT = -1               //  a refusal that is not the compat entry's
} s_outcome_t;

static const char *s_outcome_names [S_OUTCOME_COUNT] = {
    "accepted", "disabled", "unauthorized", "forbidden", "invalid", "unavailable"
};

static mx_metrics_counter_t *
s_compat_requests (s_outcome_t outcome)
{
    assert (outcome >= 0 && outcome < S_OUTCOME_COUNT);
    return mx_metrics_counter_by ("msgx_compat_requests_total",
        "Requests to the compat entry POST /cminmsgs/send by outcome: accepted, disabled (404, the"
        " entry is off or not on this bind), unauthorized (401), forbidden (403), invalid (400, 404,"
        " 405, 413, 415), unavailable (503)", "outcome", s_outcome_names [outcome]);
}

void
mx_http_register_metrics (void)
{
    for (int outcome = 0; outcome < S_OUTCOME_COUNT; outcome++)
        s_compat_requests ((s_outcome_t) outcome);
    mx_api_reader_register_metrics ();
}

typedef struct _s_http_t s_http_t;

//  Most readers of the read API (msgx.api.readers, checked in mx_config.c).
#define S_API_READERS_MAX 16

//  One reader of the read API: its own thread and PostgreSQL session.
typedef struct {
    zactor_t *actor;
    size_t index;                   //  in api_readers
} s_api_reader_t;

//  One MHD daemon on one bind: the service bind (/health, /metrics), the
//  compat bind (POST /cminmsgs/send only) or the read API's bind.
typedef struct {
    s_http_t *http;
    bool compat;
    bool api;
    const char *bind;
    struct MHD_Daemon *daemon;
    int epoll_fd;
} s_server_t;

typedef enum { S_KIND_SEND, S_KIND_HEALTH, S_KIND_READY, S_KIND_METRICS, S_KIND_API } s_kind_t;

//  One request being received (MHD's per-request pointer). A request that
//  waits (for the metrics actor or the writer) is suspended, listed in
//  waiting, and resumed with its answer in hand.
typedef struct {
    s_kind_t kind;
    struct MHD_Connection *connection;
    char *body;
    size_t size;
    size_t capacity;
    size_t expected;                //  Content-Length, 0 if unknown
    unsigned int status;            //  refusal decided while the body arrived; 0 = none
    char *reason;
    size_t dropped;                 //  body bytes read and dropped after the refusal
    bool suspended;
    bool answered;                  //  resumed with its result
    uint64_t tag;                   //  of its COMPAT_WRITE or API_GET
    size_t reader;                  //  the read API's reader it went to (index in api_readers)
    int64_t id;                     //  stored as this CMINMSGS_ID
    json_t *snapshot;               //  the metrics actor's answer (NULL: silent)
    int api_status;                 //  the read API's answer (0: none came)
    char *api_etag;
    char *api_body;
    //  A streamed answer (API_CHUNK): the piece being written and the one
    //  after it, at most; the next is asked for (API_MORE) only when that
    //  slot is free, so a slow client holds back the reads, not memory.
    s_http_t *http;
    bool streamed;
    char *piece;
    size_t piece_size;
    size_t piece_at;                //  bytes of piece written
    char *next_piece;
    size_t next_size;
    int stream_state;               //  of the last piece come: 1 more, 0 ended, -1 failed
    bool asked;                     //  an API_MORE without its API_CHUNK yet
} s_request_t;

struct _s_http_t {
    zsock_t *pipe;
    const mx_actor_args_t *args;
    const mx_config_t *config;
    const char *name;
    s_server_t service;
    s_server_t compat;              //  daemon NULL unless msgx.http.compat.enabled
    s_server_t api;                 //  daemon NULL unless msgx.api.enabled
    size_t max_body;                //  bytes of one body
    size_t budget;                  //  bytes of all bodies held at once
    size_t buffered;                //  bytes allocated to bodies now
    char *token;                    //  the compat entry's bearer token, or NULL
    size_t token_length;
    mx_cidr_list_t *allow;          //  its client address list, or NULL (any)
    uint64_t counts [S_OUTCOME_COUNT];
    uint64_t cut_off;               //  closed while a refused body kept coming
    //  The compat writer (mx_compat_writer.h) and the writes it has in hand.
    zactor_t *writer;
    mx_compat_writer_args_t writer_args;
    uint64_t write_tag;
    zlistx_t *writing;              //  s_request_t *, in the order sent
    //  The read API's readers (mx_api_reader.h, msgx.api.readers) and the
    //  reads they have in hand. Each answers its own requests in order;
    //  the answers of different readers interleave, so they are matched
    //  by tag.
    s_api_reader_t api_readers [S_API_READERS_MAX];
    size_t api_reader_count;
    mx_api_reader_args_t api_reader_args;
    uint64_t api_tag;
    zlistx_t *reading;              //  s_request_t *, in the order sent
    zlistx_t *streaming;            //  s_request_t *, their answers under way (API_CHUNK)
    char *api_token;                //  the read API's bearer token, or NULL
    size_t api_token_length;
    //  The metrics actor and the requests waiting for its snapshot. One
    //  SNAPSHOT at a time; every request that arrives meanwhile shares it.
    zsock_t *metrics;               //  DEALER
    uint64_t metrics_tag;           //  of the SNAPSHOT in flight (late replies are dropped)
    int64_t metrics_deadline;       //  zclock_mono; 0 = none in flight
    zlistx_t *asking;               //  s_request_t *
    //  The instance's role and pause as control last told (ROLE). An actor
    //  nobody tells (started on its own) serves as an active instance.
    char role [16];
    bool paused;
};

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
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header (response, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    enum MHD_Result rc = MHD_queue_response (connection, status, response);
    MHD_destroy_response (response);
    return rc;
}

static enum MHD_Result
s_respond (struct MHD_Connection *connection, unsigned int status, const char *text)
{
    return s_respond_as (connection, status, "text/plain; charset=utf-8", MHD_HTTP_METHOD_POST, text);
}

//  Answers status with reason as one text/plain line; counted under outcome
//  (when it is the compat entry's) and logged.
static enum MHD_Result
s_reject (s_http_t *self, struct MHD_Connection *connection, unsigned int status,
          s_outcome_t outcome, const char *reason)
{
    if (outcome != S_NOT_COMPAT) {
        self->counts [outcome]++;
        mx_metrics_add (s_compat_requests (outcome), 1);
    }
    char peer [NI_MAXHOST + NI_MAXSERV + 2];
    s_peer (connection, peer, sizeof peer);
    json_t *fields = json_pack ("{s:i,s:s}", "status", (int) status, "peer", peer);
    mx_log_emit (MX_LOG_WARN, self->name, fields, "%s refused with %u: %s",
                 outcome == S_NOT_COMPAT ? "request" : "compat entry", status, reason);
    char *line = zsys_sprintf ("%s\n", reason);
    enum MHD_Result rc = s_respond (connection, status, line);
    free (line);
    return rc;
}

static enum MHD_Result
s_rejectf (s_http_t *self, struct MHD_Connection *connection, unsigned int status,
           s_outcome_t outcome, const char *fmt, ...) __attribute__ ((format (printf, 5, 6)));

static enum MHD_Result
s_rejectf (s_http_t *self, struct MHD_Connection *connection, unsigned int status,
           s_outcome_t outcome, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *reason = zsys_vprintf (fmt, args);
    va_end (args);
    enum MHD_Result rc = s_reject (self, connection, status, outcome, reason);
    free (reason);
    return rc;
}

//  The outcome a refusal of the compat entry with this status counts as.
static s_outcome_t
s_outcome_of (unsigned int status)
{
    return status == MHD_HTTP_SERVICE_UNAVAILABLE ? S_UNAVAILABLE : S_INVALID;
}

//  ---------------------------------------------------------------------
//  Waiting without blocking: a request is suspended while its answer is
//  prepared elsewhere, and resumed when it is in hand (or overdue).

static void
s_suspend (s_request_t *request, zlistx_t *list)
{
    assert (!request->suspended);
    MHD_suspend_connection (request->connection);
    request->suspended = true;
    zlistx_add_end (list, request);
}

static void
s_resume (s_request_t *request)
{
    assert (request->suspended);
    request->suspended = false;
    request->answered = true;
    MHD_resume_connection (request->connection);
}

//  ---------------------------------------------------------------------
//  The compat entry

//  Hands a checked body to the writer; the connection waits suspended.
static enum MHD_Result
s_send (s_http_t *self, s_request_t *request)
{
    int64_t now = mx_clock_now (self->args->clock);
    //  DATE_RECEIVED holds whole seconds; proc_state copies what the
    //  mailbox says, as it does for polled rows.
    int64_t received = now - now % 1000;
    request->body [request->size] = '\0';           //  s_append keeps a byte for it
    request->tag = ++self->write_tag;
    if (mx_cmd_send (zactor_sock (self->writer), MX_CMD_COMPAT_WRITE, request->tag,
                     (uint64_t) received, (uint64_t) now, request->body))
        return s_reject (self, request->connection, MHD_HTTP_SERVICE_UNAVAILABLE, S_UNAVAILABLE,
                         "busy: the compat writer did not take the message, retry later");
    s_suspend (request, self->writing);
    return MHD_YES;
}

//  The writer's answer: the waiting connection gets its result.
static bool
s_writer_ready (void *self_, void *arg)
{
    s_http_t *self = (s_http_t *) self_;
    (void) arg;
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (zactor_sock (self->writer), &rest);
    if (!rest)
        return false;
    assert (cmd == MX_CMD_COMPAT_WRITTEN);
    mx_cmd_COMPAT_WRITTEN_t written;
    mx_cmd_COMPAT_WRITTEN_take (&rest, &written);
    //  One write at a time, in order: the answer is the oldest's.
    s_request_t *request = (s_request_t *) zlistx_first (self->writing);
    assert (request && request->tag == written.tag);
    zlistx_delete (self->writing, zlistx_cursor (self->writing));
    if (written.status) {
        request->status = (unsigned int) written.status;
        free (request->reason);
        request->reason = strdup (written.error);
    }
    else
        request->id = (int64_t) written.id;
    mx_cmd_COMPAT_WRITTEN_free (&written);
    s_resume (request);
    return false;
}

static enum MHD_Result
s_answer_send (s_http_t *self, s_request_t *request)
{
    self->counts [S_ACCEPTED]++;
    mx_metrics_add (s_compat_requests (S_ACCEPTED), 1);
    char text [MX_PG_INT64_BUFSIZE];
    return s_respond (request->connection, MHD_HTTP_OK, mx_pg_int64_text (request->id, text));
}

//  Who may write: the address list first (403), then the token (401). Both
//  come before anything about the body, so a stranger learns nothing more.
static enum MHD_Result
s_authorize (s_http_t *self, struct MHD_Connection *connection, bool *refused)
{
    *refused = true;
    if (self->allow) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info (connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (!info || !mx_cidr_list_match (self->allow, info->client_addr)) {
            char peer [NI_MAXHOST + NI_MAXSERV + 2];
            s_peer (connection, peer, sizeof peer);
            return s_rejectf (self, connection, MHD_HTTP_FORBIDDEN, S_FORBIDDEN,
                              "client %s is not in msgx.http.compat.allow", peer);
        }
    }
    if (self->token) {
        const char *value = MHD_lookup_connection_value (connection, MHD_HEADER_KIND,
                                                         MHD_HTTP_HEADER_AUTHORIZATION);
        if (!value)
            return s_reject (self, connection, MHD_HTTP_UNAUTHORIZED, S_UNAUTHORIZED,
                             "authentication required: send Authorization: Bearer <token>");
        if (!mx_compat_body_bearer_ok (value, self->token, self->token_length))
            return s_reject (self, connection, MHD_HTTP_UNAUTHORIZED, S_UNAUTHORIZED,
                             "the bearer token is not the one configured (msgx.http.compat.token-file)");
    }
    *refused = false;
    return MHD_YES;
}

//  The headers of POST /cminmsgs/send on the compat bind: a request to
//  receive the body into, or a refusal (request NULL).
static enum MHD_Result
s_begin_send (s_http_t *self, struct MHD_Connection *connection, const char *method,
              s_request_t **request_p)
{
    if (strcmp (method, MHD_HTTP_METHOD_POST) != 0)
        return s_rejectf (self, connection, MHD_HTTP_METHOD_NOT_ALLOWED, S_INVALID,
                          "method %.16s not allowed on " S_PATH_SEND ": use POST", method);
    bool refused;
    enum MHD_Result rc = s_authorize (self, connection, &refused);
    if (refused)
        return rc;
    char *why = NULL;
    const char *type = MHD_lookup_connection_value (connection, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *length_text = MHD_lookup_connection_value (connection, MHD_HEADER_KIND,
                                                           MHD_HTTP_HEADER_CONTENT_LENGTH);
    size_t expected = 0;
    unsigned int status = mx_compat_body_check_media_type (type, &why);
    if (!status)
        status = mx_compat_body_check_length (length_text, self->max_body, &expected, &why);
    if (status) {
        rc = s_reject (self, connection, status, S_INVALID, why);
        free (why);
        return rc;
    }
    //  Only the lock holder writes proc_state.
    if (!streq (self->role, "active"))
        return s_rejectf (self, connection, MHD_HTTP_SERVICE_UNAVAILABLE, S_UNAVAILABLE,
                          "this instance is %s, not active: send to the active instance", self->role);
    if (!self->config->mailbox_shared_mysql_enabled)
        return s_reject (self, connection, MHD_HTTP_SERVICE_UNAVAILABLE, S_UNAVAILABLE,
                         "mailbox disabled (mailbox.shared-mysql.enabled = false)");
    if (self->config->shadow)
        return s_reject (self, connection, MHD_HTTP_SERVICE_UNAVAILABLE, S_UNAVAILABLE,
                         "shadow mode: msgx.shadow = true forbids writing to the shared mailbox");
    s_request_t *request = (s_request_t *) calloc (1, sizeof *request);
    if (!request)
        return MHD_NO;
    request->kind = S_KIND_SEND;
    request->connection = connection;
    request->expected = expected;
    *request_p = request;
    return MHD_YES;
}

//  ---------------------------------------------------------------------
//  /health and /metrics

static bool
s_active (s_http_t *self)
{
    return streq (self->role, "active");
}

//  Asks the metrics actor for its snapshot unless a SNAPSHOT is in flight;
//  the request waits suspended for the answer or S_METRICS_WAIT_MS.
static void
s_ask_metrics (s_http_t *self, s_request_t *request)
{
    if (!self->metrics_deadline) {
        self->metrics_tag++;
        self->metrics_deadline = zclock_mono () + S_METRICS_WAIT_MS;
        //  A metrics actor that is not there is no different from a silent one.
        mx_cmd_send (self->metrics, MX_CMD_SNAPSHOT, self->metrics_tag);
    }
    s_suspend (request, self->asking);
}

//  Every request waiting for the snapshot gets it (NULL: none came).
static void
s_metrics_answered (s_http_t *self, json_t *snapshot)
{
    self->metrics_deadline = 0;
    if (!snapshot) {
        mx_log_emit (MX_LOG_WARN, self->name, NULL,
                     "the metrics actor did not answer within %d ms: /health is 503 and the"
                     " backlog figures of /metrics are unknown", S_METRICS_WAIT_MS);
        mx_metrics_actor_publish (NULL);
    }
    s_request_t *request;
    while ((request = (s_request_t *) zlistx_first (self->asking))) {
        zlistx_delete (self->asking, zlistx_cursor (self->asking));
        request->snapshot = snapshot ? json_incref (snapshot) : NULL;
        s_resume (request);
    }
    json_decref (snapshot);
}

static bool
s_metrics_ready (void *self_, void *arg)
{
    s_http_t *self = (s_http_t *) self_;
    (void) arg;
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (self->metrics, &rest);
    if (!rest)
        return false;
    assert (cmd == MX_CMD_SNAPSHOT_REPLY);
    mx_cmd_SNAPSHOT_REPLY_t reply;
    mx_cmd_SNAPSHOT_REPLY_take (&rest, &reply);
    //  A reply to an earlier SNAPSHOT that came too late is dropped.
    if (self->metrics_deadline && reply.tag == self->metrics_tag)
        s_metrics_answered (self, json_loads (reply.json, 0, NULL));
    mx_cmd_SNAPSHOT_REPLY_free (&reply);
    return false;
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

static enum MHD_Result
s_respond_json (struct MHD_Connection *connection, unsigned int status, json_t *body)
{
    char *text = json_dumps (body, JSON_COMPACT);
    json_decref (body);
    if (!text)
        return MHD_NO;
    enum MHD_Result rc = s_respond_as (connection, status, "application/json",
                                       MHD_HTTP_METHOD_GET, text);
    free (text);
    return rc;
}

//  Liveness: this thread runs MHD, so an answer means the process is up and
//  its actors' loops are not wedged behind it; nothing here waits on a
//  database or another actor. A standby is live.
static enum MHD_Result
s_live (s_http_t *self, struct MHD_Connection *connection)
{
    return s_respond_json (connection, MHD_HTTP_OK,
                           json_pack ("{s:s,s:s,s:b,s:{s:b}}", "status", "live", "role", self->role,
                                      "shadow", self->config->shadow, "pipeline", "paused", self->paused));
}

//  Each dependency as ok/required, and the names of the required ones
//  that are down. Only the metrics actor's fixed phrases go out: never a
//  host, a user or a driver's error text.
static json_t *
s_dependencies (json_t *dependencies, json_t *down)
{
    json_t *out = json_object ();
    const char *name;
    json_t *dependency;
    json_object_foreach (dependencies, name, dependency) {
        bool ok = json_is_true (json_object_get (dependency, "ok"));
        bool required = json_is_true (json_object_get (dependency, "required"));
        json_t *detail = json_object_get (dependency, "detail");
        json_object_set_new (out, name, json_pack ("{s:b,s:b,s:O?}", "ok", ok, "required", required,
                                                   "detail", json_is_string (detail) ? detail : NULL));
        if (required && !ok)
            json_array_append_new (down, json_string (name));
    }
    return out;
}

//  Readiness (/health/ready, and /health as before): 200 only on the active
//  instance with every required dependency ok, so a load balancer or
//  supervisor reaches the one instance that takes work. A pause is the
//  operator's decision, not a fault: still 200, "pipeline":{"paused":true}.
static enum MHD_Result
s_health (s_http_t *self, s_request_t *request)
{
    json_t *snapshot = request->snapshot;
    json_t *body;
    unsigned int status;
    if (snapshot) {
        json_t *down = json_array ();
        json_t *dependencies = s_dependencies (json_object_get (snapshot, "dependencies"), down);
        bool ok = json_array_size (down) == 0;
        const char *summary = !ok ? "degraded" : s_active (self) ? "ok" : "standby";
        status = ok && s_active (self) ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        body = json_pack ("{s:s,s:s,s:{s:b},s:o,s:o,s:O}", "status", summary, "role", self->role,
                          "pipeline", "paused", self->paused, "down", down,
                          "dependencies", dependencies,
                          "backlog", json_object_get (snapshot, "backlog"));
    }
    else {
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        char *error = zsys_sprintf ("metrics actor did not answer within %d ms", S_METRICS_WAIT_MS);
        body = json_pack ("{s:s,s:s,s:{s:b},s:[s],s:s}", "status", "degraded", "role", self->role,
                          "pipeline", "paused", self->paused, "down", "metrics", "error", error);
        free (error);
    }
    //  A shadow instance's answer says so: no probe takes it for the live one.
    json_object_set_new (body, "shadow", json_boolean (self->config->shadow));
    return s_respond_json (request->connection, status, body);
}

static enum MHD_Result
s_metrics (s_http_t *self, s_request_t *request)
{
    //  The metrics actor has set the snapshot gauges already (NaN if silent).
    s_publish_role (self);
    mx_metrics_counter_set (mx_log_dropped_metric (), mx_log_dropped ());
    mx_api_reader_cache_gauges (self->args->doc_cache);
    char *text = mx_metrics_render ();
    enum MHD_Result rc = s_respond_as (request->connection, MHD_HTTP_OK,
                                       "text/plain; version=0.0.4; charset=utf-8",
                                       MHD_HTTP_METHOD_GET, text);
    free (text);
    return rc;
}

//  ---------------------------------------------------------------------
//  The read API: checked, read and rendered by the api reader; here only
//  authentication, the hand-off and the answer.

static enum MHD_Result
s_api_refuse (s_http_t *self, struct MHD_Connection *connection, unsigned int status,
              const char *code, const char *message)
{
    char peer [NI_MAXHOST + NI_MAXSERV + 2];
    s_peer (connection, peer, sizeof peer);
    json_t *fields = json_pack ("{s:i,s:s}", "status", (int) status, "peer", peer);
    mx_log_emit (MX_LOG_WARN, self->name, fields, "read API refused with %u: %s", status, message);
    return s_respond_json (connection, status,
                           json_pack ("{s:{s:s,s:s}}", "error", "code", code, "message", message));
}

static enum MHD_Result
s_api_arg (void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void) kind;
    json_object_set_new ((json_t *) cls, key, json_string (value ? value : ""));
    return MHD_YES;
}

//  The headers of a request on the read API's bind: a request to hand to
//  the reader when complete, or a refusal (request NULL).
static enum MHD_Result
s_begin_api (s_http_t *self, struct MHD_Connection *connection, const char *method,
             s_request_t **request_p)
{
    if (strcmp (method, MHD_HTTP_METHOD_GET) != 0 && strcmp (method, MHD_HTTP_METHOD_HEAD) != 0) {
        mx_api_reader_count ("bad_request");
        return s_api_refuse (self, connection, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed",
                             "the read API is read-only: use GET");
    }
    if (self->api_token) {
        const char *value = MHD_lookup_connection_value (connection, MHD_HEADER_KIND,
                                                         MHD_HTTP_HEADER_AUTHORIZATION);
        if (!value || !mx_compat_body_bearer_ok (value, self->api_token, self->api_token_length)) {
            mx_api_reader_count ("unauthorized");
            return s_api_refuse (self, connection, MHD_HTTP_UNAUTHORIZED, "unauthorized", !value
                                 ? "authentication required: send Authorization: Bearer <token>"
                                 : "the bearer token is not the one configured (msgx.api.token-file)");
        }
    }
    s_request_t *request = (s_request_t *) calloc (1, sizeof *request);
    if (!request)
        return MHD_NO;
    request->kind = S_KIND_API;
    request->connection = connection;
    *request_p = request;
    return MHD_YES;
}

//  The reader with the least in hand: the requests it has not answered
//  yet and the streams it still reads pages for. A reader held up by a
//  slow statement (a page of GET /all/flights, a read behind a lock)
//  gathers load, so the requests that follow go to the others. Ties go to
//  the lowest index: under light load one reader takes all, and requests
//  that queue up on it are read together (mx_api_reader.c batches them).
static size_t
s_least_loaded (s_http_t *self)
{
    size_t load [S_API_READERS_MAX] = { 0 };
    zlistx_t *lists [] = { self->reading, self->streaming };
    for (size_t l = 0; l < 2; l++)
        for (s_request_t *request = (s_request_t *) zlistx_first (lists [l]); request;
             request = (s_request_t *) zlistx_next (lists [l]))
            if (l == 0 || request->stream_state == 1)
                load [request->reader]++;
    size_t best = 0;
    for (size_t i = 1; i < self->api_reader_count; i++)
        if (load [i] < load [best])
            best = i;
    return best;
}

static enum MHD_Result
    s_answer_api (s_http_t *self, s_request_t *request);

//  A hit of the state-document cache is answered here, at once: no hop
//  to a reader (whose queue may be behind a slow read) and no PostgreSQL.
//  Anything else goes to a reader; the connection waits suspended.
static enum MHD_Result
s_ask_api (s_http_t *self, s_request_t *request, const char *url)
{
    const char *if_none_match = MHD_lookup_connection_value (request->connection, MHD_HEADER_KIND,
                                                             MHD_HTTP_HEADER_IF_NONE_MATCH);
    bool has_args = MHD_get_connection_values (request->connection, MHD_GET_ARGUMENT_KIND, NULL, NULL) > 0;
    int status = 0;
    if (mx_api_reader_cached (self->args->doc_cache, url, has_args, if_none_match, &status,
                              &request->api_etag, &request->api_body)) {
        request->api_status = status;
        request->answered = true;
        return s_answer_api (self, request);
    }
    json_t *args = json_object ();
    MHD_get_connection_values (request->connection, MHD_GET_ARGUMENT_KIND, s_api_arg, args);
    char *args_text = json_dumps (args, JSON_COMPACT);
    json_decref (args);
    const char *etag = MHD_lookup_connection_value (request->connection, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_IF_NONE_MATCH);
    request->tag = ++self->api_tag;
    request->reader = s_least_loaded (self);
    zactor_t *reader = self->api_readers [request->reader].actor;
    int rc = args_text ? mx_cmd_send (zactor_sock (reader), MX_CMD_API_GET, request->tag,
                                      (uint64_t) mx_clock_now (self->args->clock), url, args_text,
                                      etag ? etag : "")
                       : -1;
    free (args_text);
    if (rc) {
        mx_api_reader_count ("unavailable");
        return s_api_refuse (self, request->connection, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                             "busy: the reader did not take the request, retry later");
    }
    s_suspend (request, self->reading);
    return MHD_YES;
}

//  Asks the reader for the stream's next piece when there is room for it.
static void
s_stream_ask (s_http_t *self, s_request_t *request)
{
    if (request->asked || request->stream_state != 1 || request->next_piece)
        return;
    zactor_t *reader = self->api_readers [request->reader].actor;
    if (reader && mx_cmd_send (zactor_sock (reader), MX_CMD_API_MORE, request->tag, 1) == 0)
        request->asked = true;
    else {
        //  The reader is gone (stopping): the response ends cut short.
        request->stream_state = -1;
    }
}

//  The request of tag in list, with the list's cursor on it; NULL if none.
static s_request_t *
s_find_tag (zlistx_t *list, uint64_t tag)
{
    s_request_t *request = (s_request_t *) zlistx_first (list);
    while (request && request->tag != tag)
        request = (s_request_t *) zlistx_next (list);
    return request;
}

//  A piece of a streamed answer: the first one starts the response (it
//  comes in place of API_ANSWER), the others go to their stream.
static void
s_stream_piece (s_http_t *self, mx_cmd_API_CHUNK_t *chunk)
{
    s_request_t *request = s_find_tag (self->streaming, chunk->tag);
    bool first = !request;
    if (first) {
        request = s_find_tag (self->reading, chunk->tag);
        if (!request)
            return;                     //  its client left meanwhile (the reader was told)
        zlistx_delete (self->reading, zlistx_cursor (self->reading));
        request->http = self;
        request->streamed = true;
        request->api_status = MHD_HTTP_OK;
        zlistx_add_end (self->streaming, request);
    }
    request->asked = false;
    request->stream_state = chunk->state;
    size_t size = strlen (chunk->body);
    char *piece = size ? strdup (chunk->body) : NULL;
    if (!request->piece) {
        request->piece = piece;
        request->piece_size = size;
        request->piece_at = 0;
    }
    else {
        request->next_piece = piece;
        request->next_size = size;
    }
    s_stream_ask (self, request);
    //  Started, or waiting in the content reader for this piece.
    if (request->suspended)
        s_resume (request);
}

//  A reader's answer: the waiting connection gets it.
static bool
s_api_reader_ready (void *self_, void *arg)
{
    s_http_t *self = (s_http_t *) self_;
    s_api_reader_t *reader = (s_api_reader_t *) arg;
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv (zactor_sock (reader->actor), &rest);
    if (!rest)
        return false;
    if (cmd == MX_CMD_API_CHUNK) {
        mx_cmd_API_CHUNK_t chunk;
        mx_cmd_API_CHUNK_take (&rest, &chunk);
        s_stream_piece (self, &chunk);
        mx_cmd_API_CHUNK_free (&chunk);
        return false;
    }
    assert (cmd == MX_CMD_API_ANSWER);
    mx_cmd_API_ANSWER_t answer;
    mx_cmd_API_ANSWER_take (&rest, &answer);
    //  A waiting request cannot leave (it is suspended): it is there.
    s_request_t *request = s_find_tag (self->reading, answer.tag);
    assert (request && request->reader == reader->index);
    zlistx_delete (self->reading, zlistx_cursor (self->reading));
    request->api_status = answer.status;
    request->api_etag = strdup (answer.etag);
    request->api_body = strdup (answer.body);
    mx_cmd_API_ANSWER_free (&answer);
    s_resume (request);
    return false;
}

//  libmicrohttpd asks for the next bytes of a streamed answer. Nothing
//  here waits: with no piece in hand the connection is suspended until
//  the reader's next one (s_stream_piece resumes it). A failed stream ends
//  with an error, so the client sees the chunked encoding cut short.
static ssize_t
s_stream_read (void *cls, uint64_t pos, char *buf, size_t max)
{
    (void) pos;
    s_request_t *request = (s_request_t *) cls;
    while (request->piece && request->piece_at == request->piece_size) {
        free (request->piece);
        request->piece = request->next_piece;
        request->piece_size = request->next_size;
        request->piece_at = 0;
        request->next_piece = NULL;
        s_stream_ask (request->http, request);
    }
    if (!request->piece && request->next_piece == NULL) {
        if (request->stream_state == 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (request->stream_state == -1)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        MHD_suspend_connection (request->connection);
        request->suspended = true;
        return 0;
    }
    size_t size = request->piece_size - request->piece_at;
    if (size > max)
        size = max;
    memcpy (buf, request->piece + request->piece_at, size);
    request->piece_at += size;
    return (ssize_t) size;
}

static enum MHD_Result
s_answer_api (s_http_t *self, s_request_t *request)
{
    if (!request->streamed && (!request->api_status || !request->api_etag || !request->api_body))
        return s_api_refuse (self, request->connection, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                             "stopping: retry on another instance or later");
    struct MHD_Response *response = request->streamed
        ? MHD_create_response_from_callback (MHD_SIZE_UNKNOWN, S_STREAM_BLOCK, s_stream_read, request, NULL)
        : MHD_create_response_from_buffer (strlen (request->api_body), request->api_body,
                                           MHD_RESPMEM_MUST_COPY);
    if (!response)
        return MHD_NO;
    if (request->streamed || *request->api_body)
        MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (request->api_etag && *request->api_etag)
        MHD_add_response_header (response, MHD_HTTP_HEADER_ETAG, request->api_etag);
    enum MHD_Result rc = MHD_queue_response (request->connection, (unsigned int) request->api_status,
                                            response);
    MHD_destroy_response (response);
    return rc;
}

//  ---------------------------------------------------------------------
//  Receiving

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

//  Keeps one byte beyond the body for the NUL that s_send puts there.
static void
s_append (s_http_t *self, s_request_t *request, const char *data, size_t size)
{
    if (size > self->max_body - request->size) {
        s_refuse_body (self, request, MHD_HTTP_CONTENT_TOO_LARGE,
                       zsys_sprintf ("body larger than the limit of %zu bytes (msgx.http.max-body-bytes)",
                                     self->max_body));
        return;
    }
    if (request->size + size + 1 > request->capacity) {
        size_t want = request->capacity ? request->capacity * 2
                    : request->expected ? request->expected + 1 : S_FIRST_BUFFER;
        if (want < request->size + size + 1)
            want = request->size + size + 1;
        if (want > self->max_body + 1)
            want = self->max_body + 1;
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

//  The headers of a request on the service bind: /health, /metrics, and a
//  clear 404 for the compat entry, which is never served here.
static enum MHD_Result
s_begin_service (s_http_t *self, struct MHD_Connection *connection, const char *url,
                 const char *method, s_request_t **request_p)
{
    if (strcmp (url, S_PATH_SEND) == 0)
        return s_reject (self, connection, MHD_HTTP_NOT_FOUND,
                         self->compat.daemon ? S_INVALID : S_DISABLED,
                         self->compat.daemon
                         ? "the compat entry " S_PATH_SEND " is served on msgx.http.compat.bind, not here"
                         : "the compat entry " S_PATH_SEND " is off (msgx.http.compat.enabled = false)");
    bool live = strcmp (url, S_PATH_LIVE) == 0;
    s_kind_t kind = strcmp (url, S_PATH_METRICS) == 0 ? S_KIND_METRICS
                  : strcmp (url, S_PATH_READY) == 0 ? S_KIND_READY : S_KIND_HEALTH;
    if (!live && kind == S_KIND_HEALTH && strcmp (url, S_PATH_HEALTH) != 0)
        return s_rejectf (self, connection, MHD_HTTP_NOT_FOUND, S_NOT_COMPAT,
                          "no such path '%.128s': this bind serves GET " S_PATH_HEALTH ", "
                          S_PATH_LIVE ", " S_PATH_READY " and " S_PATH_METRICS, url);
    if (strcmp (method, MHD_HTTP_METHOD_GET) != 0) {
        mx_log_emit (MX_LOG_INFO, self->name, NULL, "%.16s %.128s refused with 405", method, url);
        return s_respond_as (connection, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
                             MHD_HTTP_METHOD_GET, "method not allowed: use GET\n");
    }
    if (live)
        return s_live (self, connection);
    s_request_t *request = (s_request_t *) calloc (1, sizeof *request);
    if (!request)
        return MHD_NO;
    request->kind = kind;
    request->connection = connection;
    *request_p = request;
    return MHD_YES;
}

//  MHD calls this once when the headers are in, once per piece of body,
//  once when the request is complete, and once more after a resume.
static enum MHD_Result
s_access (void *cls, struct MHD_Connection *connection, const char *url,
          const char *method, const char *version, const char *upload_data,
          size_t *upload_data_size, void **request_p)
{
    (void) version;
    s_server_t *server = (s_server_t *) cls;
    s_http_t *self = server->http;
    s_request_t *request = (s_request_t *) *request_p;

    if (!request) {
        //  Headers only. Refusing now means MHD never reads the body.
        if (server->api)
            return s_begin_api (self, connection, method, (s_request_t **) request_p);
        if (!server->compat)
            return s_begin_service (self, connection, url, method, (s_request_t **) request_p);
        if (strcmp (url, S_PATH_SEND) != 0)
            return s_rejectf (self, connection, MHD_HTTP_NOT_FOUND, S_INVALID,
                              "no such path '%.128s': the compat entry is POST " S_PATH_SEND, url);
        return s_begin_send (self, connection, method, (s_request_t **) request_p);
    }

    if (*upload_data_size > 0) {
        //  MHD cannot answer while the body is still arriving: a refused
        //  body is read and dropped, up to S_DRAIN_LIMIT, then cut off.
        size_t size = *upload_data_size;
        *upload_data_size = 0;
        if (request->kind != S_KIND_SEND)
            return MHD_YES;             //  a GET with a body: ignored
        if (!request->status)
            s_append (self, request, upload_data, size);
        else {
            request->dropped += size;
            if (request->dropped > S_DRAIN_LIMIT) {
                self->cut_off++;
                mx_log_emit (MX_LOG_WARN, self->name, NULL,
                             "compat entry: connection closed, its refused body kept coming (%s)",
                             request->reason);
                return MHD_NO;
            }
        }
        return MHD_YES;
    }

    //  Complete: answer what is in hand, or wait for it without blocking.
    if (request->suspended)
        return MHD_YES;
    if (request->kind == S_KIND_API)
        return request->answered ? s_answer_api (self, request) : s_ask_api (self, request, url);
    if (request->kind != S_KIND_SEND) {
        if (!request->answered) {
            s_ask_metrics (self, request);
            return MHD_YES;
        }
        return request->kind == S_KIND_METRICS ? s_metrics (self, request) : s_health (self, request);
    }
    if (request->status)
        return s_reject (self, connection, request->status, s_outcome_of (request->status),
                         request->reason);
    if (request->answered)
        return request->id ? s_answer_send (self, request)
             : s_reject (self, connection, MHD_HTTP_SERVICE_UNAVAILABLE, S_UNAVAILABLE,
                         "stopping: the message was not stored, send it again");
    char *why = NULL;
    unsigned int refused = mx_compat_body_check (request->body, request->size, self->max_body, &why);
    if (refused) {
        enum MHD_Result rc = s_reject (self, connection, refused, S_INVALID, why);
        free (why);
        return rc;
    }
    return s_send (self, request);
}

static void
s_completed (void *cls, struct MHD_Connection *connection, void **request_p,
             enum MHD_RequestTerminationCode code)
{
    (void) connection;
    (void) code;
    s_http_t *self = ((s_server_t *) cls)->http;
    s_request_t *request = (s_request_t *) *request_p;
    if (!request)
        return;
    assert (!request->suspended);
    if (request->streamed) {
        //  Ended, or the client left: the reader drops a stream still open.
        s_request_t *scan = (s_request_t *) zlistx_first (self->streaming);
        while (scan && scan != request)
            scan = (s_request_t *) zlistx_next (self->streaming);
        if (scan)
            zlistx_delete (self->streaming, zlistx_cursor (self->streaming));
        zactor_t *reader = self->api_readers [request->reader].actor;
        if (request->stream_state == 1 && reader)
            mx_cmd_send (zactor_sock (reader), MX_CMD_API_MORE, request->tag, 0);
        free (request->piece);
        free (request->next_piece);
    }
    self->buffered -= request->capacity;
    free (request->body);
    free (request->reason);
    json_decref (request->snapshot);
    free (request->api_etag);
    free (request->api_body);
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

//  libmicrohttpd 0.9.75 runs inside MHD_run, in this thread only (no
//  internal threads): its epoll fd sits in the actor's poll loop. Nothing
//  in a handler waits: what needs a database is asked of another thread
//  and the connection is suspended (MHD_ALLOW_SUSPEND_RESUME) until the
//  answer is back. The alternative, a thread per connection, would hand
//  every slow client a thread and share the actor's state between them.
static int
s_server_start (s_http_t *self, s_server_t *server, bool compat, const char *bind_text, char **error)
{
    server->http = self;
    server->compat = compat;
    server->bind = bind_text;
    int fd = s_listen_socket (bind_text, error);
    if (fd < 0)
        return -1;
    //  The logger comes first so MHD never writes plain text to stderr.
    server->daemon = MHD_start_daemon (MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME, 0,
        NULL, NULL, s_access, server,
        MHD_OPTION_EXTERNAL_LOGGER, (MHD_LogCallback) s_mhd_log, self,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket) fd,
        //  The request deadline: a connection that sends or takes nothing
        //  for this long (a slow or stalled client) is closed.
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) ((self->config->http_idle_timeout + 999) / 1000),
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int) self->config->http_max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int) self->config->http_per_ip_connections,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, S_CONNECTION_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, (MHD_RequestCompletedCallback) s_completed, server,
        MHD_OPTION_END);
    if (!server->daemon) {
        //  The socket is not closed here: MHD may have closed it already.
        *error = zsys_sprintf ("cannot start the HTTP server on %s (libmicrohttpd refused its options)",
                               bind_text);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info (server->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    assert (info);
    server->epoll_fd = info->epoll_fd;
    return 0;
}

//  The bearer token: the file's first line, blanks around it dropped. In
//  prod the file must not be open to others (it is a credential).
static int
s_read_token (s_http_t *self, const char *key, const char *path, char **token_p,
              size_t *length_p, char **error)
{
    int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat info;
    if (fd < 0 || fstat (fd, &info)) {
        *error = zsys_sprintf ("%s %s: %s", key, path, strerror (errno));
        if (fd >= 0)
            close (fd);
        return -1;
    }
    if (!S_ISREG (info.st_mode)) {
        close (fd);
        *error = zsys_sprintf ("%s %s: not a regular file", key, path);
        return -1;
    }
    if (streq (self->config->profile, "prod") && (info.st_mode & (S_IROTH | S_IWOTH))) {
        close (fd);
        *error = zsys_sprintf ("%s %s is open to others (mode %04o);"
                               " prod refuses it: chmod o-rw", key, path, (unsigned int) (info.st_mode & 07777));
        return -1;
    }
    char buf [S_TOKEN_MAX + 1];
    ssize_t got = read (fd, buf, S_TOKEN_MAX);
    close (fd);
    if (got < 0) {
        *error = zsys_sprintf ("%s %s: %s", key, path, strerror (errno));
        return -1;
    }
    buf [got] = '\0';
    char *start = buf;
    while (*start == ' ' || *start == '\t')
        start++;
    size_t length = strcspn (start, "\r\n");
    while (length > 0 && (start [length - 1] == ' ' || start [length - 1] == '\t'))
        length--;
    bool printable = length > 0;
    for (size_t i = 0; i < length && printable; i++)
        printable = start [i] > ' ' && start [i] < 0x7f;
    if (!printable) {
        *error = zsys_sprintf ("%s %s: expected one token of printable"
                               " characters without blanks on its first line", key, path);
        explicit_bzero (buf, sizeof buf);
        return -1;
    }
    *token_p = strndup (start, length);
    *length_p = length;
    explicit_bzero (buf, sizeof buf);
    return 0;
}

static int
s_start (s_http_t *self, char **error)
{
    if (s_server_start (self, &self->service, false, self->config->http_bind, error))
        return -1;
    if (self->config->http_compat_enabled) {
        if (*self->config->http_compat_token_file
        &&  s_read_token (self, "msgx.http.compat.token-file", self->config->http_compat_token_file,
                          &self->token, &self->token_length, error))
            return -1;
        if (*self->config->http_compat_allow) {
            self->allow = mx_cidr_list_parse (self->config->http_compat_allow, error);
            if (!self->allow)
                return -1;              //  mx_config_validate checked it
        }
        self->writer_args = (mx_compat_writer_args_t) { .name = self->name, .config = self->config };
        self->writer = zactor_new (mx_compat_writer_actor, &self->writer_args);
        if (!self->writer) {
            *error = strdup ("cannot start the compat writer thread");
            return -1;
        }
        if (s_server_start (self, &self->compat, true, self->config->http_compat_bind, error))
            return -1;
    }
    if (self->config->api_enabled) {
        if (*self->config->api_token_file
        &&  s_read_token (self, "msgx.api.token-file", self->config->api_token_file,
                          &self->api_token, &self->api_token_length, error))
            return -1;
        self->api_reader_args = (mx_api_reader_args_t) { .name = self->name, .config = self->config,
                                                         .doc_cache = self->args->doc_cache };
        self->api_reader_count = (size_t) self->config->api_readers;
        assert (self->api_reader_count >= 1 && self->api_reader_count <= S_API_READERS_MAX);
        for (size_t i = 0; i < self->api_reader_count; i++) {
            self->api_readers [i].index = i;
            self->api_readers [i].actor = zactor_new (mx_api_reader_actor, &self->api_reader_args);
            if (!self->api_readers [i].actor) {
                *error = zsys_sprintf ("cannot start reader thread %zu of the read API (msgx.api.readers %zu)",
                                       i + 1, self->api_reader_count);
                return -1;
            }
        }
        //  http parses and answers every read: it goes with the readers.
        mx_api_reader_nice (self->config, self->name, "http");
        self->api.api = true;
        if (s_server_start (self, &self->api, false, self->config->api_bind, error))
            return -1;
    }
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
    //  The write in hand finishes first; what still waits is answered 503
    //  (the resumed requests see answered without an ID) as MHD closes.
    mx_actor_destroy (&self->writer);
    s_request_t *request;
    while ((request = (s_request_t *) zlistx_first (self->writing))) {
        zlistx_delete (self->writing, zlistx_cursor (self->writing));
        s_resume (request);
    }
    while ((request = (s_request_t *) zlistx_first (self->asking))) {
        zlistx_delete (self->asking, zlistx_cursor (self->asking));
        s_resume (request);
    }
    for (size_t i = 0; i < self->api_reader_count; i++)
        mx_actor_destroy (&self->api_readers [i].actor);
    while ((request = (s_request_t *) zlistx_first (self->reading))) {
        zlistx_delete (self->reading, zlistx_cursor (self->reading));
        s_resume (request);
    }
    //  A stream under way ends cut short: its reader is gone.
    while ((request = (s_request_t *) zlistx_first (self->streaming))) {
        zlistx_delete (self->streaming, zlistx_cursor (self->streaming));
        if (request->stream_state == 1)
            request->stream_state = -1;
        if (request->suspended)
            s_resume (request);
    }
    s_server_t *servers [] = { &self->api, &self->compat, &self->service };
    for (size_t i = 0; i < 3; i++)
        if (servers [i]->daemon) {
            MHD_run (servers [i]->daemon);
            MHD_stop_daemon (servers [i]->daemon);
            servers [i]->daemon = NULL;
        }
    if (self->service.epoll_fd >= 0 || self->compat.epoll_fd >= 0) {
        uint64_t *counts = self->counts;
        mx_log_emit (MX_LOG_INFO, self->name, NULL,
                     "stopped; compat entry accepted %" PRIu64 ", disabled %" PRIu64
                     ", unauthorized %" PRIu64 ", forbidden %" PRIu64 ", invalid %" PRIu64
                     ", unavailable %" PRIu64 ", cut off %" PRIu64,
                     counts [S_ACCEPTED], counts [S_DISABLED], counts [S_UNAUTHORIZED],
                     counts [S_FORBIDDEN], counts [S_INVALID], counts [S_UNAVAILABLE], self->cut_off);
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
            char *detail = self->compat.daemon
                ? zsys_sprintf ("listening on %s (health, metrics) and %s (POST " S_PATH_SEND ")",
                                self->config->http_bind, self->config->http_compat_bind)
                : zsys_sprintf ("listening on %s (health, metrics; compat entry off)",
                                self->config->http_bind);
            if (self->api.daemon) {
                char *with_api = zsys_sprintf ("%s; read API on %s", detail, self->config->api_bind);
                free (detail);
                detail = with_api;
            }
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
    return false;               //  s_wake runs the daemons
}

//  The daemons' epoll descriptors, the writer and the metrics actor.
static size_t
s_sources (void *self_, mx_actor_source_t *sources, size_t max)
{
    s_http_t *self = (s_http_t *) self_;
    size_t count = 0;
    s_server_t *servers [] = { &self->service, &self->compat, &self->api };
    for (size_t i = 0; i < 3; i++)
        if (servers [i]->daemon && count < max)
            sources [count++] = (mx_actor_source_t) { .fd = servers [i]->epoll_fd, .ready = s_mhd_ready };
    for (size_t i = 0; i < self->api_reader_count && count < max; i++)
        if (self->api_readers [i].actor)
            sources [count++] = (mx_actor_source_t) { .sock = zactor_sock (self->api_readers [i].actor),
                                                      .ready = s_api_reader_ready,
                                                      .arg = &self->api_readers [i] };
    if (self->writer && count < max)
        sources [count++] = (mx_actor_source_t) { .sock = zactor_sock (self->writer), .ready = s_writer_ready };
    if (self->metrics && count < max)
        sources [count++] = (mx_actor_source_t) { .sock = self->metrics, .ready = s_metrics_ready };
    return count;
}

//  libmicrohttpd keeps its own timers (idle connections); the SNAPSHOT in
//  flight has its deadline.
static long
s_timeout (void *self_)
{
    s_http_t *self = (s_http_t *) self_;
    long timeout = -1;
    s_server_t *servers [] = { &self->service, &self->compat, &self->api };
    for (size_t i = 0; i < 3; i++) {
        MHD_UNSIGNED_LONG_LONG mhd_timeout = 0;
        if (servers [i]->daemon && MHD_get_timeout (servers [i]->daemon, &mhd_timeout) == MHD_YES) {
            long value = mhd_timeout > INT_MAX ? INT_MAX : (long) mhd_timeout;
            if (timeout < 0 || value < timeout)
                timeout = value;
        }
    }
    if (self->metrics_deadline) {
        int64_t left = self->metrics_deadline - zclock_mono ();
        long value = left < 0 ? 0 : (long) left;
        if (timeout < 0 || value < timeout)
            timeout = value;
    }
    return timeout;
}

//  Also on a timeout: MHD then expires idle connections, and an overdue
//  snapshot is given up.
static void
s_wake (void *self_)
{
    s_http_t *self = (s_http_t *) self_;
    if (self->metrics_deadline && zclock_mono () >= self->metrics_deadline)
        s_metrics_answered (self, NULL);
    if (self->service.daemon)
        MHD_run (self->service.daemon);
    if (self->compat.daemon)
        MHD_run (self->compat.daemon);
    if (self->api.daemon)
        MHD_run (self->api.daemon);
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
    self->service.epoll_fd = self->compat.epoll_fd = self->api.epoll_fd = -1;
    snprintf (self->role, sizeof self->role, "active");
    self->max_body = (size_t) self->config->http_max_body_bytes;
    if (self->max_body > S_MEDIUMTEXT_MAX)
        self->max_body = S_MEDIUMTEXT_MAX;
    self->budget = S_BUDGET_BODIES * (self->max_body + 1);
    self->writing = zlistx_new ();
    self->asking = zlistx_new ();
    self->reading = zlistx_new ();
    self->streaming = zlistx_new ();

    mx_actor_ops_t ops = { .command = s_command, .sources = s_sources, .timeout = s_timeout, .wake = s_wake };
    mx_actor_run (pipe, NULL, &ops, self);
    s_stop (self);
    zsock_destroy (&self->metrics);
    zlistx_destroy (&self->writing);
    zlistx_destroy (&self->asking);
    zlistx_destroy (&self->reading);
    zlistx_destroy (&self->streaming);
    if (self->api_token) {
        explicit_bzero (self->api_token, self->api_token_length);
        free (self->api_token);
    }
    mx_cidr_list_destroy (&self->allow);
    if (self->token) {
        explicit_bzero (self->token, self->token_length);
        free (self->token);
    }
}
