/*  mx_kafka_embedded - librdkafka's in-process mock cluster, the dev
    profile's Kafka when no brokers are configured. It listens on loopback
    TCP, so real clients (kcat, the dispatcher) reach it like a broker.  */
#ifndef MX_KAFKA_EMBEDDED_H_INCLUDED
#define MX_KAFKA_EMBEDDED_H_INCLUDED

typedef struct _mx_kafka_embedded_t mx_kafka_embedded_t;

//  Start a cluster of `brokers` brokers and create the given topics
//  (NULL-terminated) with `partitions` partitions. NULL + *error on failure.
mx_kafka_embedded_t *mx_kafka_embedded_new (int brokers, const char *const *topics,
                                            int partitions, char **error);
//  "127.0.0.1:port,..." for bootstrap.servers.
const char *mx_kafka_embedded_bootstraps (mx_kafka_embedded_t *self);
void mx_kafka_embedded_destroy (mx_kafka_embedded_t **self_p);

#endif
