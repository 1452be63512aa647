/*  mx_kafka_embedded - librdkafka's in-process mock cluster, the dev
    profile's Kafka when no brokers are configured. It listens on loopback
    TCP, so real clients (kcat, the dispatcher) reach it like a broker.  */
#ifndef MX_KAFKA_EMBEDDED_H_INCLUDED
#define MX_KAFKA_EMBEDDED_H_INCLUDED

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

typedef struct _mx_kafka_embedded_t mx_kafka_embedded_t;

//  Start a cluster of `brokers` brokers and create the given topics
//  (NULL-terminated, may be NULL) with `partitions` partitions. NULL + *error on failure.
mx_kafka_embedded_t *mx_kafka_embedded_new (int brokers, const char *const *topics,
                                            int partitions, char **error);
//  The cluster, for fault injection (rd_kafka_mock_broker_set_down, ...).
rd_kafka_mock_cluster_t *mx_kafka_embedded_cluster (mx_kafka_embedded_t *self);
//  "127.0.0.1:port,..." for bootstrap.servers.
const char *mx_kafka_embedded_bootstraps (mx_kafka_embedded_t *self);
void mx_kafka_embedded_destroy (mx_kafka_embedded_t **self_p);

#endif
