/*  mx_log - see mx_log.h.

    Producers only ever take a short mutex to push a pointer; formatting
    happens before, writing after, outside the lock. The writer thread is
    the only one that touches the sink once started.
*/
#include "mx_log.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *s_level_names [] = { "debug", "info", "warn", "error" };

static struct {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    pthread_t writer;
    bool started;
    bool stopping;
    int fd;
    char **ring;
    size_t capacity, head, count;
} s_log = { .lock = PTHREAD_MUTEX_INITIALIZER, .ready = PTHREAD_COND_INITIALIZER, .fd = 2 };

static _Atomic int s_level = MX_LOG_INFO;
static _Atomic uint64_t s_dropped = 0;

static void
s_write_all (int fd, const char *data, size_t size)
{
    while (size > 0) {
        ssize_t rc = write (fd, data, size);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return;             //  a broken sink loses lines, never blocks
        data += rc;
        size -= (size_t) rc;
    }
}

static void *
s_writer (void *arg)
{
    (void) arg;
    char *batch [256];
    pthread_mutex_lock (&s_log.lock);
    while (true) {
        while (s_log.count == 0 && !s_log.stopping)
            pthread_cond_wait (&s_log.ready, &s_log.lock);
        if (s_log.count == 0 && s_log.stopping)
            break;
        size_t taken = 0;
        while (s_log.count > 0 && taken < 256) {
            batch [taken++] = s_log.ring [s_log.head];
            s_log.head = (s_log.head + 1) % s_log.capacity;
            s_log.count--;
        }
        int fd = s_log.fd;
        pthread_mutex_unlock (&s_log.lock);
        for (size_t i = 0; i < taken; i++) {
            s_write_all (fd, batch [i], strlen (batch [i]));
            free (batch [i]);
        }
        pthread_mutex_lock (&s_log.lock);
    }
    pthread_mutex_unlock (&s_log.lock);
    return NULL;
}

int
mx_log_start (int fd, size_t queue_lines)
{
    assert (queue_lines > 0);
    pthread_mutex_lock (&s_log.lock);
    if (s_log.started) {
        pthread_mutex_unlock (&s_log.lock);
        return 0;
    }
    s_log.ring = (char **) calloc (queue_lines, sizeof (char *));
    if (!s_log.ring) {
        pthread_mutex_unlock (&s_log.lock);
        return -1;
    }
    s_log.fd = fd;
    s_log.capacity = queue_lines;
    s_log.head = s_log.count = 0;
    s_log.stopping = false;
    if (pthread_create (&s_log.writer, NULL, s_writer, NULL) != 0) {
        free (s_log.ring);
        s_log.ring = NULL;
        pthread_mutex_unlock (&s_log.lock);
        return -1;
    }
    s_log.started = true;
    pthread_mutex_unlock (&s_log.lock);
    return 0;
}

void
mx_log_stop (void)
{
    pthread_mutex_lock (&s_log.lock);
    if (!s_log.started) {
        pthread_mutex_unlock (&s_log.lock);
        return;
    }
    s_log.stopping = true;
    pthread_cond_signal (&s_log.ready);
    pthread_mutex_unlock (&s_log.lock);
    pthread_join (s_log.writer, NULL);
    pthread_mutex_lock (&s_log.lock);
    free (s_log.ring);
    s_log.ring = NULL;
    s_log.started = false;
    //  Back to stderr: the caller may close the fd it gave us.
    s_log.fd = 2;
    pthread_mutex_unlock (&s_log.lock);
}

void
mx_log_set_level (mx_log_level_t level)
{
    atomic_store (&s_level, (int) level);
}

int
mx_log_level_parse (const char *text, mx_log_level_t *level)
{
    for (int i = 0; text && i < 4; i++)
        if (strcmp (text, s_level_names [i]) == 0) {
            *level = (mx_log_level_t) i;
            return 0;
        }
    return -1;
}

uint64_t
mx_log_dropped (void)
{
    return atomic_load (&s_dropped);
}

static void
s_push (char *line)
{
    pthread_mutex_lock (&s_log.lock);
    if (!s_log.started) {
        int fd = s_log.fd;
        s_write_all (fd, line, strlen (line));
        pthread_mutex_unlock (&s_log.lock);
        free (line);
        return;
    }
    if (s_log.count == s_log.capacity) {
        pthread_mutex_unlock (&s_log.lock);
        atomic_fetch_add (&s_dropped, 1);
        free (line);
        return;
    }
    s_log.ring [(s_log.head + s_log.count) % s_log.capacity] = line;
    s_log.count++;
    pthread_cond_signal (&s_log.ready);
    pthread_mutex_unlock (&s_log.lock);
}

void
mx_log_vemit (mx_log_level_t level, const char *actor, json_t *fields,
              const char *fmt, va_list args)
{
    if ((int) level < atomic_load (&s_level)) {
        json_decref (fields);
        return;
    }
    char message [2048];
    vsnprintf (message, sizeof message, fmt, args);

    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r (&ts.tv_sec, &tm);
    char stamp [40];
    size_t n = strftime (stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf (stamp + n, sizeof stamp - n, ".%03ldZ", ts.tv_nsec / 1000000);

    json_t *line = json_object ();
    json_object_set_new (line, "ts", json_string (stamp));
    json_object_set_new (line, "level", json_string (s_level_names [level]));
    json_object_set_new (line, "actor", json_string (actor ? actor : "main"));
    //  Invalid UTF-8 in a message must not lose the line.
    json_t *text = json_string (message);
    json_object_set_new (line, "msg", text ? text : json_string ("(message not valid UTF-8)"));
    if (fields) {
        json_object_update_missing (line, fields);
        json_decref (fields);
    }
    char *dumped = json_dumps (line, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (line);
    if (!dumped)
        return;
    size_t size = strlen (dumped);
    char *out = (char *) realloc (dumped, size + 2);
    if (!out) {
        free (dumped);
        return;
    }
    out [size] = '\n';
    out [size + 1] = 0;
    s_push (out);
}

void
mx_log_emit (mx_log_level_t level, const char *actor, json_t *fields, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    mx_log_vemit (level, actor, fields, fmt, args);
    va_end (args);
}
