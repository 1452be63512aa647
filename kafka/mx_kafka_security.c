/*  mx_kafka_security - see mx_kafka_security.h.  */
#include "mx_kafka_security.h"

#include <assert.h>
#include <stdbool.h>
#include <string.h>

typedef struct {
    const char *name;                   //  librdkafka's
    const char *value;
    bool secret;
} s_setting_t;

int
mx_kafka_security_apply (rd_kafka_conf_t *conf, const mx_config_t *config, char **error)
{
    assert (conf && config && error);
    const s_setting_t settings [] = {
        { "security.protocol", config->kafka_security_protocol, false },
        { "ssl.endpoint.identification.algorithm", config->kafka_security_ssl_endpoint_identification_algorithm, false },
        { "ssl.ca.location", config->kafka_security_ssl_ca_location, false },
        { "ssl.certificate.location", config->kafka_security_ssl_certificate_location, false },
        { "ssl.key.location", config->kafka_security_ssl_key_location, false },
        { "ssl.key.password", config->kafka_security_ssl_key_password, true },
        { "sasl.mechanisms", config->kafka_security_sasl_mechanisms, false },
        { "sasl.username", config->kafka_security_sasl_username, false },
        { "sasl.password", config->kafka_security_sasl_password, true },
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings [0]; i++) {
        //  Unset keys keep librdkafka's defaults (validation ties each key
        //  to the protocol that uses it).
        if (!*settings [i].value)
            continue;
        char reason [512];
        if (rd_kafka_conf_set (conf, settings [i].name, settings [i].value, reason, sizeof reason)
            != RD_KAFKA_CONF_OK) {
            *error = zsys_sprintf ("Kafka setting %s=%s refused: %s", settings [i].name,
                                   settings [i].secret ? "***" : settings [i].value, reason);
            return -1;
        }
    }
    return 0;
}
