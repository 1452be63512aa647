/*  mx_producer - see mx_producer.h.  */
#include "mx_producer.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mx_kafka_security.h"
#include "mx_log.h"

struct _mx_producer_t {
    char *name;                         //  the owning actor, for logs
    rd_kafka_t *handle;
    rd_kafka_queue_t *queue;            //  main queue: reports and errors
    int fds [2];                        //  librdkafka writes [1], the owner polls [0]
    size_t outstanding;
    char *fatal;                        //  reason of a fatal error, NULL while usable
    int last_error;                     //  error code logged once until an acknowledgement
    //  The hurrier: a thread that holds rd_kafka_flush for the owner
    //  (mx_producer_hurry), started at the first hurry.
    pthread_t hurrier;
    bool hurrier_started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool hurry_owed;                    //  under lock
    bool stopping;                      //  under lock
};

static void
s_log_cb (const rd_kafka_t *rk, int level, const char *facility, const char *text)
{
    const mx_producer_t *self = (const mx_producer_t *) rd_kafka_opaque (rk);
    //  Errors also come as error events, logged once per kind in the
    //  owner's thread: here they are only for debugging.
    mx_log_level_t ours = level <= 2 ? MX_LOG_ERROR : level == 4 ? MX_LOG_WARN : MX_LOG_DEBUG;
    //  The gapless guarantee is set on purpose (exactly-once); its
    //  "experimental" notice would come with every new producer.
    if (strcmp (facility, "CONFWARN") == 0 && strstr (text, "enable.gapless.guarantee"))
        ours = MX_LOG_DEBUG;
    mx_log_emit (ours, self ? self->name : "kafka", json_pack ("{s:s}", "facility", facility), "kafka: %s", text);
}

static int
s_set (rd_kafka_conf_t *conf, const char *name, const char *value, char **error)
{
    char errstr [512];
    if (rd_kafka_conf_set (conf, name, value, errstr, sizeof errstr) == RD_KAFKA_CONF_OK)
        return 0;
    *error = zsys_sprintf ("Kafka producer setting %s=%s refused: %s", name, value, errstr);
    return -1;
}

static int
s_set_all (rd_kafka_conf_t *conf, const char *settings [][2], size_t count, char **error)
{
    for (size_t i = 0; i < count; i++)
        if (s_set (conf, settings [i][0], settings [i][1], error))
            return -1;
    return 0;
}

//  The settings that keep one key's messages in order and acknowledged by
//  every in-sync replica are not negotiable.
static int
s_check_safety (const mx_config_t *config, char **error)
{
    if (strcmp (config->kafka_acks, "all") != 0 && strcmp (config->kafka_acks, "-1") != 0)
        *error = zsys_sprintf ("msgx.kafka.acks=%s weakens delivery: only all (-1) is allowed", config->kafka_acks);
    else
    if (!config->kafka_enable_idempotence)
        *error = strdup ("msgx.kafka.enable-idempotence=false weakens delivery: it must be true");
    else
    if (config->kafka_max_in_flight < 1 || config->kafka_max_in_flight > 5)
        *error = zsys_sprintf ("msgx.kafka.max-in-flight=%" PRId64 " would break ordering: it must be 1..5",
                               config->kafka_max_in_flight);
    else
        return 0;
    return -1;
}

//  Read back what librdkafka made of the settings, in case a default or an
//  alias changed them.
static int
s_verify (rd_kafka_t *handle, char **error)
{
    const rd_kafka_conf_t *conf = rd_kafka_conf (handle);
    const char *names [] = { "enable.idempotence", "acks", "max.in.flight.requests.per.connection" };
    char values [3][64];
    for (int i = 0; i < 3; i++) {
        size_t size = sizeof values [i];
        if (rd_kafka_conf_get (conf, names [i], values [i], &size) != RD_KAFKA_CONF_OK) {
            *error = zsys_sprintf ("cannot read back the Kafka producer setting %s", names [i]);
            return -1;
        }
    }
    long in_flight = strtol (values [2], NULL, 10);
    if (strcmp (values [0], "true") != 0 || (strcmp (values [1], "-1") != 0 && strcmp (values [1], "all") != 0)
    ||  in_flight < 1 || in_flight > 5) {
        *error = zsys_sprintf ("the Kafka producer runs with enable.idempotence=%s acks=%s max.in.flight=%s:"
                               " weaker than required", values [0], values [1], values [2]);
        return -1;
    }
    return 0;
}

mx_producer_t *
mx_producer_new (const mx_config_t *config, const char *bootstrap, const char *client_id, char **error)
{
    assert (config && client_id && error);
    *error = NULL;
    if (!bootstrap || !*bootstrap) {
        *error = strdup ("no Kafka bootstrap servers");
        return NULL;
    }
    if (s_check_safety (config, error))
        return NULL;
    mx_producer_t *self = (mx_producer_t *) zmalloc (sizeof (mx_producer_t));
    self->name = strdup (client_id);
    self->fds [0] = self->fds [1] = -1;
    pthread_mutex_init (&self->lock, NULL);
    pthread_cond_init (&self->wake, NULL);
    char client [256], in_flight [24], linger [24], timeout [24];
    snprintf (client, sizeof client, "msgxd-%s", client_id);
    snprintf (in_flight, sizeof in_flight, "%" PRId64, config->kafka_max_in_flight);
    snprintf (linger, sizeof linger, "%" PRId64, config->kafka_linger_ms);
    snprintf (timeout, sizeof timeout, "%" PRId64, config->kafka_delivery_timeout);
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    const char *settings [][2] = {
        { "bootstrap.servers", bootstrap },
        { "client.id", client },
        { "enable.idempotence", "true" },
        { "acks", "all" },
        { "max.in.flight.requests.per.connection", in_flight },
        { "linger.ms", linger },
        //  Nagle with delayed acknowledgements adds ~40 ms to each small
        //  produce round trip; batching is linger's job.
        { "socket.nagle.disable", "true" },
        //  The bound on every wait for a report.
        { "message.timeout.ms", timeout },
    };
    //  Exactly-once: a partition must hold a prefix of what was sent to
    //  it. The gapless guarantee makes a record that fails for good end
    //  the producer, not just itself; librdkafka does not cover records
    //  that time out (it moves on to a new producer epoch, leaving a gap),
    //  so none times out in librdkafka: mx_delivery bounds the wait itself
    //  and replaces the producer.
    const char *exactly_once [][2] = {
        { "enable.gapless.guarantee", "true" },
        { "message.timeout.ms", "0" },
    };
    if (s_set_all (conf, settings, sizeof settings / sizeof settings [0], error)
    ||  (mx_config_exactly_once (config)
         && s_set_all (conf, exactly_once, sizeof exactly_once / sizeof exactly_once [0], error))
    ||  mx_kafka_security_apply (conf, config, error)) {
        rd_kafka_conf_destroy (conf);
        mx_producer_destroy (&self);
        return NULL;
    }
    rd_kafka_conf_set_log_cb (conf, s_log_cb);
    rd_kafka_conf_set_opaque (conf, self);
    rd_kafka_conf_set_events (conf, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR);
    char errstr [512];
    self->handle = rd_kafka_new (RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!self->handle) {
        rd_kafka_conf_destroy (conf);
        *error = zsys_sprintf ("cannot create the Kafka producer: %s", errstr);
        mx_producer_destroy (&self);
        return NULL;
    }
    if (s_verify (self->handle, error)) {
        mx_producer_destroy (&self);
        return NULL;
    }
    if (pipe2 (self->fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        *error = zsys_sprintf ("cannot create the Kafka report pipe: %s", strerror (errno));
        mx_producer_destroy (&self);
        return NULL;
    }
    self->queue = rd_kafka_queue_get_main (self->handle);
    rd_kafka_queue_io_event_enable (self->queue, self->fds [1], "1", 1);
    return self;
}

void
mx_producer_destroy (mx_producer_t **self_p)
{
    assert (self_p);
    mx_producer_t *self = *self_p;
    if (!self)
        return;
    //  The hurrier ends before the handle it flushes.
    if (self->hurrier_started) {
        pthread_mutex_lock (&self->lock);
        self->stopping = true;
        pthread_cond_signal (&self->wake);
        pthread_mutex_unlock (&self->lock);
        pthread_join (self->hurrier, NULL);
    }
    pthread_cond_destroy (&self->wake);
    pthread_mutex_destroy (&self->lock);
    if (self->queue) {
        rd_kafka_queue_io_event_enable (self->queue, -1, NULL, 0);
        rd_kafka_queue_destroy (self->queue);
    }
    if (self->handle) {
        //  Whatever was not acknowledged stays owed by the caller (PENDING
        //  in the outbox): drop it instead of waiting for it.
        rd_kafka_purge (self->handle, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_destroy (self->handle);
    }
    for (int i = 0; i < 2; i++)
        if (self->fds [i] >= 0)
            close (self->fds [i]);
    free (self->name);
    free (self->fatal);
    free (self);
    *self_p = NULL;
}

int
mx_producer_fd (mx_producer_t *self)
{
    assert (self);
    return self->fds [0];
}

int
mx_producer_send (mx_producer_t *self, const char *topic, const char *key, char **value,
                  const mx_producer_header_t *headers, size_t header_count, uint64_t tag, char **error)
{
    assert (self && topic && key && value && error);
    if (self->fatal) {
        *error = zsys_sprintf ("the producer failed earlier: %s", self->fatal);
        return -1;
    }
    rd_kafka_headers_t *list = rd_kafka_headers_new (header_count);
    for (size_t i = 0; i < header_count; i++)
        rd_kafka_header_add (list, headers [i].name, -1, headers [i].value, -1);
    rd_kafka_resp_err_t err = rd_kafka_producev (
        self->handle,
        RD_KAFKA_V_TOPIC (topic),
        RD_KAFKA_V_KEY (key, strlen (key)),
        RD_KAFKA_V_VALUE (*value, *value ? strlen (*value) : 0),
        RD_KAFKA_V_MSGFLAGS (RD_KAFKA_MSG_F_FREE),
        RD_KAFKA_V_HEADERS (list),
        RD_KAFKA_V_OPAQUE ((void *) (uintptr_t) tag),
        RD_KAFKA_V_END);
    if (err) {
        rd_kafka_headers_destroy (list);        //  not taken on failure
        *error = zsys_sprintf ("cannot queue for Kafka: %s", rd_kafka_err2str (err));
        return -1;
    }
    *value = NULL;                              //  librdkafka's now
    self->outstanding++;
    return 0;
}

static void
s_error_event (mx_producer_t *self, rd_kafka_event_t *event)
{
    const char *text = rd_kafka_event_error_string (event);
    if (rd_kafka_event_error_is_fatal (event)) {
        char reason [512];
        rd_kafka_fatal_error (self->handle, reason, sizeof reason);
        free (self->fatal);
        self->fatal = strdup (reason);
        mx_log_emit (MX_LOG_ERROR, self->name, json_pack ("{s:s}", "error_class", "INFRA"),
                     "Kafka producer failed: %s; a new one takes over", reason);
        return;
    }
    //  Brokers down keep failing with new texts: one line per kind of
    //  error until Kafka acknowledges again.
    int code = (int) rd_kafka_event_error (event);
    if (self->last_error == code)
        return;
    mx_log_emit (MX_LOG_WARN, self->name, json_pack ("{s:s}", "error_class", "INFRA"), "Kafka: %s", text);
    self->last_error = code;
}

size_t
mx_producer_drain (mx_producer_t *self, mx_producer_report_fn *fn, void *arg)
{
    assert (self && fn);
    //  Empty the pipe first: librdkafka writes again only when its queue
    //  turns non-empty, so anything queued after this wakes us again.
    char buffer [256];
    while (read (self->fds [0], buffer, sizeof buffer) > 0)
        ;
    size_t reports = 0;
    rd_kafka_event_t *event;
    while ((event = rd_kafka_queue_poll (self->queue, 0))) {
        if (rd_kafka_event_type (event) == RD_KAFKA_EVENT_ERROR)
            s_error_event (self, event);
        else
        if (rd_kafka_event_type (event) == RD_KAFKA_EVENT_DR) {
            const rd_kafka_message_t *message;
            while ((message = rd_kafka_event_message_next (event))) {
                char reason [256];
                snprintf (reason, sizeof reason, "%s: %s", rd_kafka_err2name (message->err),
                          rd_kafka_err2str (message->err));
                mx_producer_report_t report = {
                    .tag = (uint64_t) (uintptr_t) message->_private,
                    .acked = message->err == RD_KAFKA_RESP_ERR_NO_ERROR,
                    .reason = message->err ? reason : NULL,
                    .possibly_persisted = rd_kafka_message_status (message) == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED,
                    .partition = message->partition,
                    .offset = message->offset
                };
                if (report.acked && self->last_error) {
                    mx_info (self->name, "Kafka acknowledges again");
                    self->last_error = 0;
                }
                assert (self->outstanding > 0);
                self->outstanding--;
                reports++;
                fn (&report, arg);
            }
        }
        rd_kafka_event_destroy (event);
    }
    return reports;
}

int
mx_producer_setting (mx_producer_t *self, const char *name, char *value, size_t size)
{
    assert (self && name && value);
    return rd_kafka_conf_get (rd_kafka_conf (self->handle), name, value, &size) == RD_KAFKA_CONF_OK ? 0 : -1;
}

size_t
mx_producer_outstanding (mx_producer_t *self)
{
    assert (self);
    return self->outstanding;
}

//  How long a hurry's flush lasts: long enough for the broker threads to
//  wake and take the queue, short beside any linger.
#define S_HURRY_MS 1

//  librdkafka (1.8 and later) ignores linger.ms while a flush runs and
//  wakes its broker threads for it. The reports come as events, which the
//  owner drains, so the flush cannot finish: it only lasts its timeout,
//  and its "timed out" is the expected outcome. It runs here, not in the
//  owner's thread, so that the owner is back at its poll when the
//  acknowledgement comes, which on a near broker is well within that
//  millisecond.
static void *
s_hurrier (void *arg)
{
    mx_producer_t *self = (mx_producer_t *) arg;
    pthread_mutex_lock (&self->lock);
    while (true) {
        while (!self->hurry_owed && !self->stopping)
            pthread_cond_wait (&self->wake, &self->lock);
        if (self->stopping)
            break;
        self->hurry_owed = false;
        pthread_mutex_unlock (&self->lock);
        (void) rd_kafka_flush (self->handle, S_HURRY_MS);
        pthread_mutex_lock (&self->lock);
    }
    pthread_mutex_unlock (&self->lock);
    return NULL;
}

void
mx_producer_hurry (mx_producer_t *self)
{
    assert (self);
    if (!self->hurrier_started) {
        int rc = pthread_create (&self->hurrier, NULL, s_hurrier, self);
        if (rc != 0) {
            //  Without the thread the owner holds the flush itself.
            mx_log_emit (MX_LOG_WARN, self->name, NULL,
                         "cannot start the Kafka hurry thread (%s): the sending thread flushes itself",
                         strerror (rc));
            (void) rd_kafka_flush (self->handle, S_HURRY_MS);
            return;
        }
        self->hurrier_started = true;
    }
    pthread_mutex_lock (&self->lock);
    self->hurry_owed = true;
    pthread_cond_signal (&self->wake);
    pthread_mutex_unlock (&self->lock);
}

void
mx_producer_purge (mx_producer_t *self)
{
    assert (self);
    rd_kafka_purge (self->handle, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT | RD_KAFKA_PURGE_F_NON_BLOCKING);
}

bool
mx_producer_failed (mx_producer_t *self, const char **reason)
{
    assert (self);
    if (reason)
        *reason = self->fatal;
    return self->fatal != NULL;
}
