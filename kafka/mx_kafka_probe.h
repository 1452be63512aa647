/*  mx_kafka_probe - is Kafka there? A metadata request to the brokers,
    bounded in time, on a client kept from one probe to the next.
*/
#ifndef MX_KAFKA_PROBE_H_INCLUDED
#define MX_KAFKA_PROBE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#include "mx_config.h"

typedef struct mx_kafka_probe_t mx_kafka_probe_t;

//  Asks bootstrap's brokers for metadata within timeout_ms; the client is
//  created at the first call (*self_p), with the security settings of
//  config (msgx.kafka.security.*). true when they answered. detail gets
//  one line: how many brokers answered, or what failed.
bool mx_kafka_probe (mx_kafka_probe_t **self_p, const mx_config_t *config, const char *bootstrap,
                     int timeout_ms, char *detail, size_t size);

void mx_kafka_probe_destroy (mx_kafka_probe_t **self_p);

#endif
