/*  mx_kafka_probe - see mx_kafka_probe.h.  */
#include "mx_kafka_probe.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>

#include "mx_kafka_security.h"
#include "mx_log.h"

struct mx_kafka_probe_t {
    rd_kafka_t *kafka;
};

static void
s_kafka_log (const rd_kafka_t *rk, int level, const char *facility, const char *text)
{
    (void) rk;
    (void) level;
    mx_log_emit (MX_LOG_DEBUG, "metrics", NULL, "librdkafka %s: %s", facility, text);
}

static rd_kafka_t *
s_client (const mx_config_t *config, const char *bootstrap, char *detail, size_t size)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    rd_kafka_conf_set_log_cb (conf, s_kafka_log);
    if (rd_kafka_conf_set (conf, "bootstrap.servers", bootstrap, detail, size)
    ||  rd_kafka_conf_set (conf, "client.id", "msgxd-health", detail, size)) {
        rd_kafka_conf_destroy (conf);
        return NULL;
    }
    char *error = NULL;
    if (mx_kafka_security_apply (conf, config, &error)) {
        snprintf (detail, size, "%s", error);
        free (error);
        rd_kafka_conf_destroy (conf);
        return NULL;
    }
    rd_kafka_t *kafka = rd_kafka_new (RD_KAFKA_PRODUCER, conf, detail, size);
    if (!kafka)
        rd_kafka_conf_destroy (conf);
    return kafka;
}

bool
mx_kafka_probe (mx_kafka_probe_t **self_p, const mx_config_t *config, const char *bootstrap,
                int timeout_ms, char *detail, size_t size)
{
    if (!*self_p) {
        rd_kafka_t *kafka = s_client (config, bootstrap, detail, size);
        if (!kafka)
            return false;
        *self_p = (mx_kafka_probe_t *) calloc (1, sizeof (mx_kafka_probe_t));
        (*self_p)->kafka = kafka;
    }
    const struct rd_kafka_metadata *metadata = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata ((*self_p)->kafka, 0, NULL, &metadata, timeout_ms);
    if (err) {
        snprintf (detail, size, "no metadata from %s within %d ms: %s", bootstrap, timeout_ms, rd_kafka_err2str (err));
        return false;
    }
    snprintf (detail, size, "%d broker(s) answered", metadata->broker_cnt);
    rd_kafka_metadata_destroy (metadata);
    return true;
}

void
mx_kafka_probe_destroy (mx_kafka_probe_t **self_p)
{
    mx_kafka_probe_t *self = *self_p;
    if (!self)
        return;
    rd_kafka_destroy (self->kafka);
    free (self);
    *self_p = NULL;
}
