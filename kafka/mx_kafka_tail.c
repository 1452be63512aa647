/*  mx_kafka_tail - see mx_kafka_tail.h.  */
#include "mx_kafka_tail.h"

#include <assert.h>
#include <czmq.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_kafka_security.h"
#include "mx_log.h"

struct mx_kafka_tail_t {
    char *name;                 //  the owning actor, for logs
    char *topic;
    rd_kafka_t *handle;
    int64_t deadline;
    mx_kafka_tail_part_t *parts;
    size_t count;
};

static void
s_log_cb (const rd_kafka_t *rk, int level, const char *facility, const char *text)
{
    const mx_kafka_tail_t *self = (const mx_kafka_tail_t *) rd_kafka_opaque (rk);
    (void) level;
    //  A failed look is reported by its caller, once.
    mx_log_emit (MX_LOG_DEBUG, self ? self->name : "kafka", json_pack ("{s:s}", "facility", facility),
                 "kafka: %s", text);
}

static int
s_left (mx_kafka_tail_t *self)
{
    int64_t left = self->deadline - zclock_mono ();
    return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int) left;
}

static rd_kafka_t *
s_consumer (mx_kafka_tail_t *self, const mx_config_t *config, const char *bootstrap, char **error)
{
    char client [256];
    snprintf (client, sizeof client, "msgxd-%s-inspect", self->name);
    const char *settings [][2] = {
        { "bootstrap.servers", bootstrap },
        { "client.id", client },
        //  Needed by the consumer; never joined (partitions are assigned)
        //  and nothing is committed.
        { "group.id", client },
        { "enable.auto.commit", "false" },
        { "enable.auto.offset.store", "false" },
        { "enable.partition.eof", "true" },
        //  Whatever the partition holds, committed or not.
        { "isolation.level", "read_uncommitted" },
        { "fetch.wait.max.ms", "10" },
    };
    char errstr [512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    for (size_t i = 0; i < sizeof settings / sizeof settings [0]; i++)
        if (rd_kafka_conf_set (conf, settings [i][0], settings [i][1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
            *error = zsys_sprintf ("Kafka consumer setting %s refused: %s", settings [i][0], errstr);
            rd_kafka_conf_destroy (conf);
            return NULL;
        }
    if (mx_kafka_security_apply (conf, config, error)) {
        rd_kafka_conf_destroy (conf);
        return NULL;
    }
    rd_kafka_conf_set_log_cb (conf, s_log_cb);
    rd_kafka_conf_set_opaque (conf, self);
    rd_kafka_t *handle = rd_kafka_new (RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!handle) {
        rd_kafka_conf_destroy (conf);
        *error = zsys_sprintf ("cannot create the Kafka consumer: %s", errstr);
    }
    return handle;
}

//  The topic's partitions, with their watermarks.
static int
s_partitions (mx_kafka_tail_t *self, char **error)
{
    rd_kafka_topic_t *topic = rd_kafka_topic_new (self->handle, self->topic, NULL);
    if (!topic) {
        *error = zsys_sprintf ("cannot look up topic %s: %s", self->topic, rd_kafka_err2str (rd_kafka_last_error ()));
        return -1;
    }
    const struct rd_kafka_metadata *metadata = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata (self->handle, 0, topic, &metadata, s_left (self));
    rd_kafka_topic_destroy (topic);
    if (err) {
        *error = zsys_sprintf ("no metadata of topic %s: %s", self->topic, rd_kafka_err2str (err));
        return -1;
    }
    int rc = 0;
    const struct rd_kafka_metadata_topic *found = metadata->topic_cnt == 1 ? &metadata->topics [0] : NULL;
    if (!found || found->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
        ;                       //  no such topic: nothing on it
    else
    if (found->err) {
        *error = zsys_sprintf ("no metadata of topic %s: %s", self->topic, rd_kafka_err2str (found->err));
        rc = -1;
    }
    else {
        self->parts = (mx_kafka_tail_part_t *) calloc ((size_t) found->partition_cnt + 1, sizeof (mx_kafka_tail_part_t));
        assert (self->parts);
        for (int i = 0; i < found->partition_cnt && rc == 0; i++) {
            mx_kafka_tail_part_t *part = &self->parts [self->count++];
            part->partition = found->partitions [i].id;
            err = rd_kafka_query_watermark_offsets (self->handle, self->topic, part->partition, &part->low,
                                                    &part->high, s_left (self));
            if (err) {
                *error = zsys_sprintf ("no offsets of %s [%" PRId32 "]: %s", self->topic, part->partition,
                                       rd_kafka_err2str (err));
                rc = -1;
            }
            part->from = part->high;
        }
    }
    rd_kafka_metadata_destroy (metadata);
    return rc;
}

mx_kafka_tail_t *
mx_kafka_tail_open (const mx_config_t *config, const char *bootstrap, const char *client_id, const char *topic,
                    int64_t deadline_ms, char **error)
{
    assert (config && bootstrap && client_id && topic && error);
    *error = NULL;
    mx_kafka_tail_t *self = (mx_kafka_tail_t *) zmalloc (sizeof (mx_kafka_tail_t));
    self->name = strdup (client_id);
    self->topic = strdup (topic);
    self->deadline = deadline_ms;
    self->handle = s_consumer (self, config, bootstrap, error);
    if (!self->handle || s_partitions (self, error))
        mx_kafka_tail_destroy (&self);
    return self;
}

void
mx_kafka_tail_destroy (mx_kafka_tail_t **self_p)
{
    assert (self_p);
    mx_kafka_tail_t *self = *self_p;
    if (!self)
        return;
    if (self->handle) {
        rd_kafka_consumer_close (self->handle);
        rd_kafka_destroy (self->handle);
    }
    for (size_t i = 0; i < self->count; i++)
        free (self->parts [i].ids);
    free (self->parts);
    free (self->topic);
    free (self->name);
    free (self);
    *self_p = NULL;
}

size_t
mx_kafka_tail_count (mx_kafka_tail_t *self)
{
    assert (self);
    return self->count;
}

const mx_kafka_tail_part_t *
mx_kafka_tail_part (mx_kafka_tail_t *self, size_t index)
{
    assert (self && index < self->count);
    return &self->parts [index];
}

//  The msgx-event-id header as a number; false when absent or not one.
static bool
s_event_id (const rd_kafka_message_t *message, int64_t *id)
{
    rd_kafka_headers_t *headers = NULL;
    const void *value = NULL;
    size_t size = 0;
    char text [24];
    if (rd_kafka_message_headers (message, &headers) || !headers
    ||  rd_kafka_header_get_last (headers, "msgx-event-id", &value, &size) || !value
    ||  size == 0 || size >= sizeof text)
        return false;
    memcpy (text, value, size);
    text [size] = 0;
    char *end = NULL;
    long long number = strtoll (text, &end, 10);
    if (*end || number <= 0)
        return false;
    *id = number;
    return true;
}

typedef struct {
    int64_t start, end;         //  reading [start, end)
    bool done;
    int64_t *ids;
    size_t count;
} s_step_t;

static size_t
s_index (mx_kafka_tail_t *self, int32_t partition)
{
    for (size_t i = 0; i < self->count; i++)
        if (self->parts [i].partition == partition)
            return i;
    return self->count;
}

//  Consumes until every step is done; 0, or -1 with *error.
static int
s_consume (mx_kafka_tail_t *self, s_step_t *steps, size_t waiting, char **error)
{
    while (waiting > 0) {
        int left = s_left (self);
        if (left == 0) {
            *error = zsys_sprintf ("%zu partitions of %s not read within the deadline", waiting, self->topic);
            return -1;
        }
        rd_kafka_message_t *message = rd_kafka_consumer_poll (self->handle, left < 100 ? left : 100);
        if (!message)
            continue;
        size_t index = s_index (self, message->partition);
        s_step_t *step = index < self->count ? &steps [index] : NULL;
        if (message->err && message->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            *error = zsys_sprintf ("reading %s [%" PRId32 "]: %s", self->topic, message->partition,
                                   rd_kafka_message_errstr (message));
            rd_kafka_message_destroy (message);
            return -1;
        }
        if (step && !step->done) {
            //  The end, or past it (the offset before it held no record).
            bool last = message->err || message->offset >= step->end - 1;
            if (!message->err && message->offset < step->end) {
                self->parts [index].records++;
                int64_t id;
                if (s_event_id (message, &id)) {
                    step->ids = (int64_t *) realloc (step->ids, (step->count + 1) * sizeof (int64_t));
                    assert (step->ids);
                    step->ids [step->count++] = id;
                }
            }
            if (last) {
                step->done = true;
                waiting--;
            }
        }
        rd_kafka_message_destroy (message);
    }
    return 0;
}

int
mx_kafka_tail_extend (mx_kafka_tail_t *self, const int64_t *more, char **error)
{
    assert (self && more && error);
    s_step_t *steps = (s_step_t *) calloc (self->count + 1, sizeof (s_step_t));
    assert (steps);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new ((int) self->count + 1);
    size_t waiting = 0;
    for (size_t i = 0; i < self->count; i++) {
        mx_kafka_tail_part_t *part = &self->parts [i];
        if (more [i] <= 0 || part->from <= part->low)
            continue;
        steps [i].end = part->from;
        steps [i].start = part->from - more [i] > part->low ? part->from - more [i] : part->low;
        rd_kafka_topic_partition_list_add (list, self->topic, part->partition)->offset = steps [i].start;
        waiting++;
    }
    int rc = 0;
    if (waiting > 0) {
        rd_kafka_resp_err_t err = rd_kafka_assign (self->handle, list);
        if (err) {
            *error = zsys_sprintf ("cannot read %s: %s", self->topic, rd_kafka_err2str (err));
            rc = -1;
        }
        else {
            rc = s_consume (self, steps, waiting, error);
            rd_kafka_assign (self->handle, NULL);
        }
    }
    for (size_t i = 0; i < self->count; i++) {
        mx_kafka_tail_part_t *part = &self->parts [i];
        if (rc == 0 && steps [i].end > 0) {
            //  The new records go in front of those read before.
            int64_t *ids = (int64_t *) calloc (steps [i].count + part->count + 1, sizeof (int64_t));
            assert (ids);
            if (steps [i].count)
                memcpy (ids, steps [i].ids, steps [i].count * sizeof (int64_t));
            if (part->count)
                memcpy (ids + steps [i].count, part->ids, part->count * sizeof (int64_t));
            free (part->ids);
            part->ids = ids;
            part->count += steps [i].count;
            part->from = steps [i].start;
        }
        free (steps [i].ids);
    }
    free (steps);
    rd_kafka_topic_partition_list_destroy (list);
    return rc;
}
