/*  bench_api_load - an open-loop HTTP load generator for the read API
    (bench/run-api-bench, docs/performance.md).

    bench_api_load --port P --rate R --flids FIRST:COUNT [--seconds S] [--connections N]
        GET /flights/{flid} at R requests a second on a fixed schedule, the
        flid drawn from FIRST..FIRST+COUNT-1, until S seconds passed (0: until
        SIGTERM or SIGINT). Request i is due at start + i/R whatever became
        of the others; a request that finds no idle connection waits in a
        queue (another keep-alive connection is opened, up to N, 8 by
        default: msgx.http.per-ip-connections), and its
        latency counts from when it was due, not from when it went out: a
        slow answer cannot hide the requests it held back (no coordinated
        omission).

    bench_api_load --port P --path PATH [--repeat K]
        GET PATH K times in a row on one connection (a chunked answer read
        to its terminating chunk): each time, the bytes and the status.

    Prints the figures on stdout, one summary line each; exits 1 on an
    error of its own (no connection), 0 otherwise (HTTP errors are counted,
    not fatal). Plain sockets and epoll: nothing outside libc.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define S_MAX_CONNECTIONS 256

static volatile sig_atomic_t s_stop;

static void
s_on_signal (int signal)
{
    (void) signal;
    s_stop = 1;
}

static int64_t
s_clock_ns (clockid_t clock)
{
    struct timespec now;
    clock_gettime (clock, &now);
    return (int64_t) now.tv_sec * 1000000000 + now.tv_nsec;
}

static int64_t
s_now_ns (void)
{
    return s_clock_ns (CLOCK_MONOTONIC);
}

//  One keep-alive connection with at most one request in flight.
typedef struct {
    int fd;
    bool busy;
    int64_t due_ns;                 //  when its request was due
    int64_t sent_ns;                //  when it went out
    int64_t arrived_ns;             //  the kernel's receive time of the last bytes read (CLOCK_REALTIME)
    char *in;
    size_t in_size, in_capacity;
    char out [128];
    size_t out_size, out_sent;
} s_conn_t;

static int
s_connect (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if (fd < 0 || connect (fd, (struct sockaddr *) &addr, sizeof addr)) {
        fprintf (stderr, "bench_api_load: cannot connect to 127.0.0.1:%d: %s\n", port, strerror (errno));
        if (fd >= 0)
            close (fd);
        return -1;
    }
    int on = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    //  Receive times from the kernel: they tell the server's part of a
    //  latency from this process's own lateness in reading it.
    setsockopt (fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    return fd;
}

//  The size of the whole response at the start of buf (head, then a body
//  of Content-Length or chunked), 0 while incomplete, -1 when it is not
//  HTTP. *status gets the status; *close whether the server closes after.
static ssize_t
s_response_size (const char *buf, size_t size, int *status, bool *close_after)
{
    const char *end = memmem (buf, size, "\r\n\r\n", 4);
    if (!end)
        return 0;
    if (sscanf (buf, "HTTP/1.%*d %d", status) != 1)
        return -1;
    size_t head = (size_t) (end - buf) + 4;
    const char *scan = buf;
    long long length = -1;
    bool chunked = false;
    *close_after = false;
    while (scan < end) {
        const char *line = (const char *) memmem (scan, (size_t) (end - scan) + 2, "\r\n", 2) + 2;
        if (line > end)
            break;
        size_t line_size = (size_t) ((const char *) memmem (line, (size_t) (end - line) + 2, "\r\n", 2) - line);
        if (strncasecmp (line, "Content-Length:", 15) == 0)
            length = strtoll (line + 15, NULL, 10);
        else
        if (strncasecmp (line, "Transfer-Encoding:", 18) == 0 && memmem (line, line_size, "chunked", 7))
            chunked = true;
        else
        if (strncasecmp (line, "Connection:", 11) == 0 && strncasecmp (line + 12, "close", 5) == 0)
            *close_after = true;
        scan = line;
    }
    if (*status == 304 || *status == 204)
        return (ssize_t) head;
    if (!chunked)
        return length < 0 ? -1 : size - head >= (size_t) length ? (ssize_t) (head + (size_t) length) : 0;
    size_t at = head;
    while (true) {
        const char *line_end = memmem (buf + at, size - at, "\r\n", 2);
        if (!line_end)
            return 0;
        size_t chunk = strtoul (buf + at, NULL, 16);
        at = (size_t) (line_end - buf) + 2;
        if (size - at < chunk + 2)
            return 0;
        at += chunk + 2;
        if (chunk == 0)
            return (ssize_t) at;
    }
}

static int
s_compare (const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return x < y ? -1 : x > y;
}

static double
s_percentile_ms (const int64_t *sorted, size_t count, double p)
{
    if (count == 0)
        return 0;
    size_t index = (size_t) (p * (double) (count - 1) + 0.5);
    return (double) sorted [index] / 1e6;
}

//  Reads what the connection has; true when its response is complete
//  (*status set), with the bytes of the next kept. Fails on a broken one.
static int
s_read (s_conn_t *conn, int *status, bool *close_after)
{
    while (true) {
        if (conn->in_capacity - conn->in_size < 65536) {
            conn->in_capacity = conn->in_capacity ? conn->in_capacity * 2 : 131072;
            conn->in = (char *) realloc (conn->in, conn->in_capacity);
            if (!conn->in)
                return -1;
        }
        struct iovec data = { .iov_base = conn->in + conn->in_size,
                              .iov_len = conn->in_capacity - conn->in_size };
        char control [CMSG_SPACE (sizeof (struct timespec))];
        struct msghdr message = { .msg_iov = &data, .msg_iovlen = 1,
                                  .msg_control = control, .msg_controllen = sizeof control };
        ssize_t got = recvmsg (conn->fd, &message, MSG_DONTWAIT);
        if (got > 0) {
            conn->in_size += (size_t) got;
            for (struct cmsghdr *c = CMSG_FIRSTHDR (&message); c; c = CMSG_NXTHDR (&message, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                    struct timespec at;
                    memcpy (&at, CMSG_DATA (c), sizeof at);
                    conn->arrived_ns = (int64_t) at.tv_sec * 1000000000 + at.tv_nsec;
                }
            continue;
        }
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (got < 0 && errno == EINTR)
            continue;
        return -1;                      //  closed or failed
    }
    ssize_t whole = s_response_size (conn->in, conn->in_size, status, close_after);
    if (whole < 0)
        return -1;
    if (whole == 0)
        return 0;
    memmove (conn->in, conn->in + whole, conn->in_size - (size_t) whole);
    conn->in_size -= (size_t) whole;
    return 1;
}

static void
s_send_request (s_conn_t *conn, const char *path)
{
    conn->out_size = (size_t) snprintf (conn->out, sizeof conn->out,
                                        "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    conn->out_sent = 0;
    ssize_t sent = send (conn->fd, conn->out, conn->out_size, MSG_NOSIGNAL | MSG_DONTWAIT);
    //  A request line fits in any socket buffer: a short send is an error.
    conn->out_sent = sent > 0 ? (size_t) sent : 0;
    conn->busy = true;
}

static int
s_rate_run (int port, double rate, int64_t first, int64_t count, double seconds, int max_connections)
{
    int epoll_fd = epoll_create1 (EPOLL_CLOEXEC);
    s_conn_t *conns = (s_conn_t *) calloc ((size_t) max_connections, sizeof *conns);
    size_t capacity = (size_t) (rate * (seconds > 0 ? seconds + 1 : 3600)) + 1024;
    int64_t *latencies = (int64_t *) malloc (capacity * sizeof *latencies);
    int64_t *queue = (int64_t *) malloc (capacity * sizeof *queue);       //  due times waiting
    //  The latency split in three: due -> sent (queued for a connection, or
    //  this process late), sent -> the answer's arrival in the socket (the
    //  server's part, with the loopback), arrival -> read (this process late).
    int64_t *lateness = (int64_t *) malloc (capacity * sizeof *lateness);
    int64_t *server = (int64_t *) malloc (capacity * sizeof *server);
    int64_t *reading = (int64_t *) malloc (capacity * sizeof *reading);
    if (epoll_fd < 0 || !conns || !latencies || !queue || !lateness || !server || !reading)
        return 1;
    size_t split = 0;
    //  Receive times are CLOCK_REALTIME: their offset to CLOCK_MONOTONIC,
    //  taken once (a run lasts seconds).
    int64_t realtime_offset = s_clock_ns (CLOCK_REALTIME) - s_now_ns ();
    size_t queued_head = 0, queued_tail = 0, max_queued = 0;
    int open = 0;
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    size_t answered = 0, issued = 0, errors = 0, by_status [6] = { 0 };
    int64_t start = s_now_ns ();
    int64_t interval = (int64_t) (1e9 / rate);
    int64_t end = seconds > 0 ? start + (int64_t) (seconds * 1e9) : INT64_MAX;
    while (!s_stop) {
        int64_t now = s_now_ns ();
        if (now >= end)
            break;
        //  Every request due by now joins the queue.
        while (start + (int64_t) issued * interval <= now && queued_tail < capacity) {
            queue [queued_tail++] = start + (int64_t) issued * interval;
            issued++;
        }
        //  Queued requests go out on idle connections, oldest first.
        while (queued_head < queued_tail) {
            int pick = -1;
            for (int i = 0; i < open && pick < 0; i++)
                if (!conns [i].busy)
                    pick = i;
            if (pick < 0 && open < max_connections) {
                int fd = s_connect (port);
                if (fd < 0)
                    return 1;
                conns [open].fd = fd;
                struct epoll_event event = { .events = EPOLLIN, .data.u32 = (uint32_t) open };
                epoll_ctl (epoll_fd, EPOLL_CTL_ADD, fd, &event);
                pick = open++;
            }
            if (pick < 0)
                break;
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            char path [64];
            snprintf (path, sizeof path, "/flights/%" PRId64, first + (int64_t) (rng % (uint64_t) count));
            conns [pick].due_ns = queue [queued_head++];
            conns [pick].sent_ns = s_now_ns ();
            conns [pick].arrived_ns = 0;
            s_send_request (&conns [pick], path);
            if (conns [pick].out_sent != conns [pick].out_size) {
                errors++;
                conns [pick].busy = false;
            }
        }
        if (queued_tail - queued_head > max_queued)
            max_queued = queued_tail - queued_head;
        //  Wait for answers until the next request is due.
        int64_t next = start + (int64_t) issued * interval;
        int64_t wait = next - s_now_ns ();
        struct timespec timeout = { .tv_sec = wait > 0 ? wait / 1000000000 : 0,
                                    .tv_nsec = wait > 0 ? wait % 1000000000 : 0 };
        struct epoll_event events [64];
        int ready = epoll_pwait2 (epoll_fd, events, 64, &timeout, NULL);
        if (ready < 0 && errno != EINTR) {
            fprintf (stderr, "bench_api_load: epoll: %s\n", strerror (errno));
            return 1;
        }
        int64_t answered_at = s_now_ns ();
        for (int e = 0; e < ready; e++) {
            s_conn_t *conn = &conns [events [e].data.u32];
            int status = 0;
            bool close_after = false;
            int rc = s_read (conn, &status, &close_after);
            if (rc == 0)
                continue;
            if (rc == 1 && conn->busy) {
                latencies [answered++] = answered_at - conn->due_ns;
                if (conn->arrived_ns) {
                    int64_t arrived = conn->arrived_ns - realtime_offset;
                    lateness [split] = conn->sent_ns - conn->due_ns;
                    server [split] = arrived > conn->sent_ns ? arrived - conn->sent_ns : 0;
                    reading [split++] = answered_at > arrived ? answered_at - arrived : 0;
                }
                by_status [status == 200 ? 0 : status == 304 ? 1 : status == 404 ? 2 : status == 503 ? 3
                         : status >= 400 && status < 500 ? 4 : 5]++;
                conn->busy = false;
                if (!close_after)
                    continue;
            }
            else
                errors++;
            //  Broken or closing: a fresh connection in its place.
            epoll_ctl (epoll_fd, EPOLL_CTL_DEL, conn->fd, NULL);
            close (conn->fd);
            conn->in_size = 0;
            conn->busy = false;
            conn->fd = s_connect (port);
            if (conn->fd < 0)
                return 1;
            struct epoll_event event = { .events = EPOLLIN, .data.u32 = events [e].data.u32 };
            epoll_ctl (epoll_fd, EPOLL_CTL_ADD, conn->fd, &event);
        }
    }
    double span = (double) (s_now_ns () - start) / 1e9;
    size_t in_flight = queued_tail - queued_head;
    for (int i = 0; i < open; i++) {
        in_flight += conns [i].busy;
        close (conns [i].fd);
        free (conns [i].in);
    }
    qsort (latencies, answered, sizeof *latencies, s_compare);
    printf ("load      GET /flights/{flid} at %.0f/s for %.1f s: %zu due, %zu answered (200: %zu, 404: %zu,"
            " 503: %zu, other 4xx: %zu, other: %zu), %zu errors, %zu unanswered at the end;"
            " %d connections, most queued %zu\n",
            rate, span, issued, answered, by_status [0], by_status [2], by_status [3], by_status [4],
            by_status [5] + by_status [1], errors, in_flight, open, max_queued);
    printf ("latency   from the time due: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
            s_percentile_ms (latencies, answered, 0.50), s_percentile_ms (latencies, answered, 0.90),
            s_percentile_ms (latencies, answered, 0.99), answered ? (double) latencies [answered - 1] / 1e6 : 0);
    qsort (lateness, split, sizeof *lateness, s_compare);
    qsort (server, split, sizeof *server, s_compare);
    qsort (reading, split, sizeof *reading, s_compare);
    printf ("split     of %zu answers with a receive time: due -> sent p50 %.2f ms, p99 %.2f ms;"
            " sent -> answer in the socket p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms;"
            " in the socket -> read p50 %.2f ms, p99 %.2f ms\n",
            split, s_percentile_ms (lateness, split, 0.50), s_percentile_ms (lateness, split, 0.99),
            s_percentile_ms (server, split, 0.50), s_percentile_ms (server, split, 0.90),
            s_percentile_ms (server, split, 0.99), split ? (double) server [split - 1] / 1e6 : 0,
            s_percentile_ms (reading, split, 0.50), s_percentile_ms (reading, split, 0.99));
    free (lateness);
    free (server);
    free (reading);
    free (latencies);
    free (queue);
    free (conns);
    close (epoll_fd);
    return 0;
}

static int
s_repeat_run (int port, const char *path, int repeat)
{
    s_conn_t conn = { .fd = s_connect (port) };
    if (conn.fd < 0)
        return 1;
    int64_t *times = (int64_t *) calloc ((size_t) repeat, sizeof *times);
    for (int i = 0; i < repeat; i++) {
        int64_t start = s_now_ns ();
        s_send_request (&conn, path);
        int status = 0, rc = 0;
        bool close_after = false;
        while (rc == 0) {
            struct pollfd wait = { .fd = conn.fd, .events = POLLIN };
            if (poll (&wait, 1, 30000) <= 0) {
                fprintf (stderr, "bench_api_load: no answer to GET %s within 30 s\n", path);
                return 1;
            }
            rc = s_read (&conn, &status, &close_after);
        }
        times [i] = s_now_ns () - start;
        if (rc < 0) {
            fprintf (stderr, "bench_api_load: GET %s: the answer was cut short or not HTTP\n", path);
            return 1;
        }
        printf ("get       GET %s: %d in %.1f ms\n", path, status, (double) times [i] / 1e6);
        if (close_after) {
            close (conn.fd);
            conn.fd = s_connect (port);
            if (conn.fd < 0)
                return 1;
        }
    }
    qsort (times, (size_t) repeat, sizeof *times, s_compare);
    printf ("time      GET %s, %d times: p50 %.1f ms, max %.1f ms\n", path, repeat,
            s_percentile_ms (times, (size_t) repeat, 0.5), (double) times [repeat - 1] / 1e6);
    free (times);
    free (conn.in);
    close (conn.fd);
    return 0;
}

static void
s_usage (void)
{
    fprintf (stderr,
        "usage: bench_api_load --port P --rate R --flids FIRST:COUNT [--seconds S] [--connections N]\n"
        "       bench_api_load --port P --path PATH [--repeat K]\n");
    exit (2);
}

int
main (int argc, char **argv)
{
    static const struct option options [] = {
        { "port", required_argument, NULL, 'p' },
        { "rate", required_argument, NULL, 'r' },
        { "flids", required_argument, NULL, 'f' },
        { "seconds", required_argument, NULL, 's' },
        { "connections", required_argument, NULL, 'c' },
        { "path", required_argument, NULL, 'P' },
        { "repeat", required_argument, NULL, 'k' },
        { NULL, 0, NULL, 0 }
    };
    int port = 0, connections = 8, repeat = 1, option;
    double rate = 0, seconds = 0;
    int64_t first = 0, count = 0;
    const char *path = NULL;
    while ((option = getopt_long (argc, argv, "", options, NULL)) != -1)
        switch (option) {
            case 'p': port = atoi (optarg); break;
            case 'r': rate = atof (optarg); break;
            case 'f':
                if (sscanf (optarg, "%" SCNd64 ":%" SCNd64, &first, &count) != 2)
                    s_usage ();
                break;
            case 's': seconds = atof (optarg); break;
            case 'c': connections = atoi (optarg); break;
            case 'P': path = optarg; break;
            case 'k': repeat = atoi (optarg); break;
            default: s_usage ();
        }
    if (port <= 0 || port > 65535 || optind != argc)
        s_usage ();
    if (path)
        return repeat > 0 ? s_repeat_run (port, path, repeat) : (s_usage (), 2);
    if (rate <= 0 || count <= 0 || first <= 0 || connections < 1 || connections > S_MAX_CONNECTIONS)
        s_usage ();
    //  SA_RESTART: a connect or send in progress finishes; epoll_pwait2 is
    //  interrupted all the same, and the loop ends.
    struct sigaction action = { .sa_handler = s_on_signal, .sa_flags = SA_RESTART };
    sigaction (SIGTERM, &action, NULL);
    sigaction (SIGINT, &action, NULL);
    return s_rate_run (port, rate, first, count, seconds, connections);
}
