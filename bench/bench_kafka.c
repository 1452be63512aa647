/*  bench_kafka - the Kafka of a benchmark run, in a process of its own:
    librdkafka's mock cluster (as msgxd's dev profile embeds it) with the
    two topics, so the broker's memory does not count as msgxd's.

    usage: bench_kafka TOPIC_MSG TOPIC_SCHD PARTITIONS
    Prints "bootstrap HOST:PORT,..." on stdout, then runs until its stdin
    closes (the script holds it open) or SIGTERM.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mx_kafka_embedded.h"

int
main (int argc, char **argv)
{
    if (argc != 4 || atoi (argv [3]) < 1) {
        fprintf (stderr, "usage: bench_kafka TOPIC_MSG TOPIC_SCHD PARTITIONS\n");
        return 2;
    }
    const char *topics [] = { argv [1], argv [2], NULL };
    char *error = NULL;
    mx_kafka_embedded_t *kafka = mx_kafka_embedded_new (1, topics, atoi (argv [3]), &error);
    if (!kafka) {
        fprintf (stderr, "bench_kafka: %s\n", error ? error : "cannot start the mock cluster");
        free (error);
        return 1;
    }
    printf ("bootstrap %s\n", mx_kafka_embedded_bootstraps (kafka));
    fflush (stdout);
    //  Until stdin closes (or a signal ends the process).
    char buf [256];
    while (read (0, buf, sizeof buf) > 0)
        ;
    mx_kafka_embedded_destroy (&kafka);
    return 0;
}
