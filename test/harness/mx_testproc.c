/*  mx_testproc - a real child process for end-to-end tests (see mx_testproc.h).

    Both pipes are always drained together, whichever one a caller waits on:
    a child blocked on a full stdout pipe would otherwise never write the
    stderr line the test expects, nor exit.
*/
#include "mx_testproc.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct {
    int fd;                     //  read end, -1 after end of file
    char *data;                 //  everything read, NUL-terminated
    size_t size;
    size_t capacity;
    size_t next;                //  where the next expect starts
} s_stream_t;

struct _mx_testproc_t {
    pid_t pid;
    int pidfd;                  //  -1 if the kernel has no pidfd_open
    bool reaped;
    int status;
    s_stream_t out;
    s_stream_t err;
    char *line;                 //  last line returned by an expect
};

//  Children not reaped yet. A failed assertion leaves its test function
//  by longjmp, past the test's own stop of the daemons it started: they
//  are killed when the test program exits, never left running.
#define S_LIVE_MAX 256
static pid_t s_live [S_LIVE_MAX];
static size_t s_live_count;
static pthread_mutex_t s_live_lock = PTHREAD_MUTEX_INITIALIZER;

static void
s_live_kill_all (void)
{
    pthread_mutex_lock (&s_live_lock);
    for (size_t index = 0; index < s_live_count; index++) {
        kill (s_live [index], SIGKILL);
        while (waitpid (s_live [index], NULL, 0) < 0 && errno == EINTR)
            ;
    }
    s_live_count = 0;
    pthread_mutex_unlock (&s_live_lock);
}

static void
s_live_add (pid_t pid)
{
    static bool registered;
    pthread_mutex_lock (&s_live_lock);
    if (!registered)
        registered = atexit (s_live_kill_all) == 0;
    if (s_live_count < S_LIVE_MAX)
        s_live [s_live_count++] = pid;
    pthread_mutex_unlock (&s_live_lock);
}

static void
s_live_remove (pid_t pid)
{
    pthread_mutex_lock (&s_live_lock);
    for (size_t index = 0; index < s_live_count; index++)
        if (s_live [index] == pid) {
            s_live [index] = s_live [--s_live_count];
            break;
        }
    pthread_mutex_unlock (&s_live_lock);
}

static int64_t
s_now_ms (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static int
s_remaining (int64_t deadline)
{
    int64_t left = deadline - s_now_ms ();
    return left < 0? 0: left > 0x7fffffff? 0x7fffffff: (int) left;
}

static int
s_stream_init (s_stream_t *stream, int fd)
{
    stream->fd = fd;
    stream->capacity = 4096;
    stream->size = 0;
    stream->next = 0;
    stream->data = malloc (stream->capacity + 1);
    if (!stream->data)
        return -1;
    stream->data [0] = 0;
    return 0;
}

static void
s_stream_close (s_stream_t *stream)
{
    if (stream->fd >= 0)
        close (stream->fd);
    stream->fd = -1;
}

//  Reads whatever the pipe holds now, without blocking.
static void
s_stream_read (s_stream_t *stream)
{
    while (stream->fd >= 0) {
        if (stream->capacity - stream->size < 4096) {
            size_t capacity = stream->capacity * 2;
            char *data = realloc (stream->data, capacity + 1);
            if (!data) {
                fprintf (stderr, "mx_testproc: out of memory, output dropped\n");
                s_stream_close (stream);
                return;
            }
            stream->data = data;
            stream->capacity = capacity;
        }
        ssize_t bytes = read (stream->fd, stream->data + stream->size,
                              stream->capacity - stream->size);
        if (bytes > 0) {
            stream->size += (size_t) bytes;
            stream->data [stream->size] = 0;
        }
        else
        if (bytes == 0)
            s_stream_close (stream);
        else
        if (errno == EINTR)
            continue;
        else {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                s_stream_close (stream);
            return;
        }
    }
}

static void
s_try_reap (mx_testproc_t *self)
{
    if (self->reaped)
        return;
    int status;
    pid_t pid = waitpid (self->pid, &status, WNOHANG);
    if (pid == self->pid) {
        s_live_remove (self->pid);
        self->reaped = true;
        self->status = status;
        if (self->pidfd >= 0)
            close (self->pidfd);
        self->pidfd = -1;
    }
}

//  One poll round over both pipes and the pidfd, up to timeout_ms; reads
//  what arrived and reaps the child if it exited. Returns false if there
//  was nothing left to wait on.
static bool
s_poll (mx_testproc_t *self, int timeout_ms)
{
    struct pollfd items [3];
    s_stream_t *streams [3];    //  NULL for the pidfd
    nfds_t count = 0;
    if (self->out.fd >= 0) {
        streams [count] = &self->out;
        items [count++] = (struct pollfd) { .fd = self->out.fd, .events = POLLIN };
    }
    if (self->err.fd >= 0) {
        streams [count] = &self->err;
        items [count++] = (struct pollfd) { .fd = self->err.fd, .events = POLLIN };
    }
    if (!self->reaped && self->pidfd >= 0) {
        streams [count] = NULL;
        items [count++] = (struct pollfd) { .fd = self->pidfd, .events = POLLIN };
    }
    if (count == 0)
        return false;
    if (poll (items, count, timeout_ms) <= 0)
        return true;            //  timeout or EINTR: the caller checks its deadline
    for (nfds_t index = 0; index < count; index++) {
        if (!items [index].revents)
            continue;
        if (streams [index])
            s_stream_read (streams [index]);
        else
            s_try_reap (self);
    }
    return true;
}

//  NULL-terminated environment: ours, minus keys that extra_env overrides,
//  plus extra_env. The strings are borrowed.
static char **
s_new_env (const char *const *extra_env)
{
    size_t extra = 0;
    while (extra_env && extra_env [extra])
        extra++;
    size_t inherited = 0;
    while (environ [inherited])
        inherited++;
    char **env = calloc (inherited + extra + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t count = 0;
    for (size_t index = 0; index < inherited; index++) {
        const char *entry = environ [index];
        size_t key_len = strcspn (entry, "=");
        bool overridden = false;
        for (size_t scan = 0; scan < extra && !overridden; scan++)
            overridden = strncmp (extra_env [scan], entry, key_len) == 0
                      && extra_env [scan][key_len] == '=';
        if (!overridden)
            env [count++] = (char *) entry;
    }
    for (size_t index = 0; index < extra; index++)
        env [count++] = (char *) extra_env [index];
    return env;
}

static int
s_spawn (mx_testproc_t *self, const char *const *argv, char **env, int out_w, int err_w)
{
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init (&actions);
    posix_spawnattr_init (&attr);
    posix_spawn_file_actions_addopen (&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2 (&actions, out_w, 1);
    posix_spawn_file_actions_adddup2 (&actions, err_w, 2);
    //  A test may block or ignore signals (czmq, sanitizers): the child must
    //  see the defaults a real start would give it.
    sigset_t all, none;
    sigfillset (&all);
    sigemptyset (&none);
    posix_spawnattr_setsigdefault (&attr, &all);
    posix_spawnattr_setsigmask (&attr, &none);
    posix_spawnattr_setflags (&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

    int rc = strchr (argv [0], '/')
        ? posix_spawn (&self->pid, argv [0], &actions, &attr, (char *const *) argv, env)
        : posix_spawnp (&self->pid, argv [0], &actions, &attr, (char *const *) argv, env);
    posix_spawn_file_actions_destroy (&actions);
    posix_spawnattr_destroy (&attr);
    if (rc != 0) {
        fprintf (stderr, "mx_testproc: cannot start %s: %s\n", argv [0], strerror (rc));
        return -1;
    }
    return 0;
}

mx_testproc_t *
mx_testproc_new (const char *const *argv, const char *const *extra_env)
{
    assert (argv && argv [0]);
    mx_testproc_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->pidfd = -1;
    self->out.fd = self->err.fd = -1;

    int out_pipe [2] = { -1, -1 };
    int err_pipe [2] = { -1, -1 };
    char **env = NULL;
    //  CLOEXEC: a child spawned later must not hold these pipes open.
    if (pipe2 (out_pipe, O_CLOEXEC) || pipe2 (err_pipe, O_CLOEXEC)
    ||  s_stream_init (&self->out, out_pipe [0]) || s_stream_init (&self->err, err_pipe [0])
    ||  !(env = s_new_env (extra_env))) {
        fprintf (stderr, "mx_testproc: cannot set up %s: %s\n", argv [0], strerror (errno));
        goto failed;
    }
    //  Only our ends are non-blocking; the child's stay blocking.
    fcntl (out_pipe [0], F_SETFL, O_NONBLOCK);
    fcntl (err_pipe [0], F_SETFL, O_NONBLOCK);

    int rc = s_spawn (self, argv, env, out_pipe [1], err_pipe [1]);
    free (env);
    env = NULL;
    close (out_pipe [1]);
    close (err_pipe [1]);
    out_pipe [1] = err_pipe [1] = -1;
    if (rc)
        goto failed;
    s_live_add (self->pid);
#ifdef SYS_pidfd_open
    self->pidfd = (int) syscall (SYS_pidfd_open, self->pid, 0);
    if (self->pidfd < 0)
        self->pidfd = -1;       //  old kernel: waits fall back to short polls
#endif
    return self;

failed:
    free (env);
    for (int index = 0; index < 2; index++) {
        if (out_pipe [index] >= 0 && out_pipe [index] != self->out.fd)
            close (out_pipe [index]);
        if (err_pipe [index] >= 0 && err_pipe [index] != self->err.fd)
            close (err_pipe [index]);
    }
    s_stream_close (&self->out);
    s_stream_close (&self->err);
    free (self->out.data);
    free (self->err.data);
    free (self);
    return NULL;
}

static const char *
s_keep_line (mx_testproc_t *self, s_stream_t *stream, size_t start, size_t end)
{
    free (self->line);
    self->line = strndup (stream->data + start, end - start);
    return self->line;
}

static const char *
s_expect (mx_testproc_t *self, s_stream_t *stream, const char *needle, int timeout_ms)
{
    assert (self);
    assert (needle);
    int64_t deadline = s_now_ms () + (timeout_ms > 0? timeout_ms: 0);
    size_t needle_len = strlen (needle);
    size_t scan = stream->next;
    while (true) {
        //  Complete lines first.
        char *newline;
        while ((newline = memchr (stream->data + scan, '\n', stream->size - scan))) {
            size_t end = (size_t) (newline - stream->data);
            if (memmem (stream->data + scan, end - scan, needle, needle_len)) {
                stream->next = end + 1;
                return s_keep_line (self, stream, scan, end);
            }
            scan = end + 1;
        }
        //  At end of output, an unterminated last line counts too.
        if (stream->fd < 0) {
            if (scan < stream->size
            &&  memmem (stream->data + scan, stream->size - scan, needle, needle_len)) {
                stream->next = stream->size;
                return s_keep_line (self, stream, scan, stream->size);
            }
            return NULL;
        }
        int left = s_remaining (deadline);
        if (left == 0)
            return NULL;
        s_poll (self, left);
    }
}

//  A miss says what the process wrote since the last match (its tail), so
//  a failed expectation shows why.
static const char *
s_expect_or_show (mx_testproc_t *self, s_stream_t *stream, const char *name, const char *needle,
                  int timeout_ms)
{
    const char *line = s_expect (self, stream, needle, timeout_ms);
    if (!line) {
        size_t from = stream->next;
        if (stream->size - from > 4000)
            from = stream->size - 4000;
        fprintf (stderr, "mx_testproc: \"%s\" not on %s within %d ms (%s); it wrote since:\n%.*s\n",
                 needle, name, timeout_ms, stream->fd < 0 ? "output ended" : "still running",
                 (int) (stream->size - from), stream->data ? stream->data + from : "");
    }
    return line;
}

const char *
mx_testproc_expect_stderr (mx_testproc_t *self, const char *needle, int timeout_ms)
{
    return s_expect_or_show (self, &self->err, "stderr", needle, timeout_ms);
}

const char *
mx_testproc_expect_stdout (mx_testproc_t *self, const char *needle, int timeout_ms)
{
    return s_expect_or_show (self, &self->out, "stdout", needle, timeout_ms);
}

int
mx_testproc_signal (mx_testproc_t *self, int signo)
{
    assert (self);
    //  Once reaped, the pid may belong to someone else.
    if (self->reaped) {
        errno = ESRCH;
        return -1;
    }
    return kill (self->pid, signo);
}

int
mx_testproc_wait (mx_testproc_t *self, int timeout_ms, int *status)
{
    assert (self);
    int64_t deadline = s_now_ms () + (timeout_ms > 0? timeout_ms: 0);
    while (true) {
        s_try_reap (self);
        if (self->reaped) {
            //  All it wrote is in the pipes now.
            s_stream_read (&self->out);
            s_stream_read (&self->err);
            if (status)
                *status = self->status;
            return 0;
        }
        int left = s_remaining (deadline);
        if (left == 0)
            return -1;
        if (self->pidfd < 0) {
            //  No pidfd: nothing signals the exit itself, so look again
            //  every 10 ms, still reading the pipes meanwhile.
            if (left > 10)
                left = 10;
            if (!s_poll (self, left))
                poll (NULL, 0, left);
        }
        else
            s_poll (self, left);
    }
}

pid_t
mx_testproc_pid (mx_testproc_t *self)
{
    assert (self);
    return self->pid;
}

const char *
mx_testproc_stdout (mx_testproc_t *self)
{
    assert (self);
    s_stream_read (&self->out);
    return self->out.data;
}

const char *
mx_testproc_stderr (mx_testproc_t *self)
{
    assert (self);
    s_stream_read (&self->err);
    return self->err.data;
}

void
mx_testproc_destroy (mx_testproc_t **self_p)
{
    assert (self_p);
    mx_testproc_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    if (!self->reaped) {
        kill (self->pid, SIGKILL);
        while (waitpid (self->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        s_live_remove (self->pid);
    }
    if (self->pidfd >= 0)
        close (self->pidfd);
    s_stream_close (&self->out);
    s_stream_close (&self->err);
    free (self->out.data);
    free (self->err.data);
    free (self->line);
    free (self);
}

int
mx_testproc_run (const char *const *argv, const char *const *extra_env, int timeout_ms,
                 char **out, char **err)
{
    if (out)
        *out = NULL;
    if (err)
        *err = NULL;
    mx_testproc_t *self = mx_testproc_new (argv, extra_env);
    int rc = -1;
    if (self) {
        int status = 0;
        if (mx_testproc_wait (self, timeout_ms, &status) == 0)
            rc = WIFEXITED (status)? WEXITSTATUS (status): 128 + WTERMSIG (status);
        else
            fprintf (stderr, "mx_testproc: %s did not finish within %d ms; killed\n",
                     argv [0], timeout_ms);
    }
    if (out)
        *out = strdup (self? mx_testproc_stdout (self): "");
    if (err)
        *err = strdup (self? mx_testproc_stderr (self): "");
    mx_testproc_destroy (&self);
    return rc;
}
