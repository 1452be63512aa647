/*  mx_kafka_security - the transport security of every Kafka client.

    The msgx.kafka.security.* keys (TLS and SASL) in librdkafka's own
    names, applied the same way to the producers and the health probe, so
    no client of msgxd reaches the brokers with less than the others.
*/
#ifndef MX_KAFKA_SECURITY_H_INCLUDED
#define MX_KAFKA_SECURITY_H_INCLUDED

#include <librdkafka/rdkafka.h>

#include "mx_config.h"

//  Sets the security settings of config on conf. 0, or -1 with *error (a
//  malloc'd line naming the setting and librdkafka's reason; a secret's
//  value is never in it).
int mx_kafka_security_apply (rd_kafka_conf_t *conf, const mx_config_t *config, char **error);

#endif
