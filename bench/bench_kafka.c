/*  bench_kafka - the Kafka of a benchmark run, in a process of its own:
    librdkafka's mock cluster (as msgxd's dev profile embeds it) with the
    two topics, so the broker's memory does not count as msgxd's.

    usage: bench_kafka TOPIC_MSG TOPIC_SCHD PARTITIONS
    Prints "bootstrap HOST:PORT,..." on stdout, then runs until its stdin
    closes (the script holds it open) or SIGTERM.

    Its brokers answer without Nagle's delay, as Kafka's own do (they set
    TCP_NODELAY on every connection): the mock cluster does not, and a
    response written in more than one piece then waits for the client's
    delayed acknowledgement, some 40 ms a produce round trip that a real
    cluster does not have.
*/
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mx_kafka_embedded.h"

//  The mock brokers' accept (librdkafka calls it through the dynamic
//  linker, so this one is found first): the connection gets TCP_NODELAY.
int
accept (int fd, struct sockaddr *address, socklen_t *length)
{
    static int (*next) (int, struct sockaddr *, socklen_t *);
    if (!next)
        *(void **) &next = dlsym (RTLD_NEXT, "accept");
    if (!next)
        return -1;
    int connection = next (fd, address, length);
    int on = 1;
    if (connection >= 0)
        (void) setsockopt (connection, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    return connection;
}

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
