/*  mx_kafka_embedded - see mx_kafka_embedded.h.  */
#include "mx_kafka_embedded.h"

#include <assert.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_log.h"

struct _mx_kafka_embedded_t {
    rd_kafka_t *handle;                 //  owns the mock cluster
    rd_kafka_mock_cluster_t *cluster;
    char *bootstraps;
};

static void
s_log_cb (const rd_kafka_t *rk, int level, const char *facility, const char *text)
{
    (void) rk;
    //  The owning handle has no brokers of its own; its warning about that
    //  is expected and says nothing useful.
    if (strcmp (facility, "CONFWARN") == 0)
        return;
    mx_log_emit (level <= 3 ? MX_LOG_ERROR : level <= 5 ? MX_LOG_WARN : MX_LOG_DEBUG,
                 "kafka-mock", json_pack ("{s:s}", "facility", facility), "%s", text);
}

mx_kafka_embedded_t *
mx_kafka_embedded_new (int brokers, const char *const *topics, int partitions, char **error)
{
    assert (error);
    char errstr [512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    rd_kafka_conf_set_log_cb (conf, s_log_cb);
    if (rd_kafka_conf_set (conf, "client.id", "msgxd-embedded-kafka", errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy (conf);
        *error = strdup (errstr);
        return NULL;
    }
    rd_kafka_t *handle = rd_kafka_new (RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!handle) {
        rd_kafka_conf_destroy (conf);
        if (asprintf (error, "cannot create the Kafka handle for the mock cluster: %s", errstr) < 0)
            *error = NULL;
        return NULL;
    }
    rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new (handle, brokers);
    if (!cluster) {
        rd_kafka_destroy (handle);
        *error = strdup ("cannot start the embedded Kafka mock cluster");
        return NULL;
    }
    for (size_t i = 0; topics && topics [i]; i++) {
        rd_kafka_resp_err_t err = rd_kafka_mock_topic_create (cluster, topics [i], partitions, 1);
        if (err) {
            if (asprintf (error, "cannot create topic %s on the mock cluster: %s",
                          topics [i], rd_kafka_err2str (err)) < 0)
                *error = NULL;
            rd_kafka_mock_cluster_destroy (cluster);
            rd_kafka_destroy (handle);
            return NULL;
        }
    }
    mx_kafka_embedded_t *self = (mx_kafka_embedded_t *) calloc (1, sizeof *self);
    assert (self);
    self->handle = handle;
    self->cluster = cluster;
    self->bootstraps = strdup (rd_kafka_mock_cluster_bootstraps (cluster));
    return self;
}

rd_kafka_mock_cluster_t *
mx_kafka_embedded_cluster (mx_kafka_embedded_t *self)
{
    assert (self);
    return self->cluster;
}

const char *
mx_kafka_embedded_bootstraps (mx_kafka_embedded_t *self)
{
    assert (self);
    return self->bootstraps;
}

void
mx_kafka_embedded_destroy (mx_kafka_embedded_t **self_p)
{
    assert (self_p);
    if (*self_p) {
        mx_kafka_embedded_t *self = *self_p;
        rd_kafka_mock_cluster_destroy (self->cluster);
        rd_kafka_destroy (self->handle);
        free (self->bootstraps);
        free (self);
        *self_p = NULL;
    }
}
