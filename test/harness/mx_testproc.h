/*  mx_testproc - a real child process for end-to-end tests (msgxd, msgxctl).

    stdout and stderr are captured through pipes, stdin is /dev/null. All
    waiting is poll() on the pipes and on a pidfd with a deadline: no sleeps.
    The child starts with default signal dispositions and an empty signal
    mask, whatever the test process has set.
*/
#ifndef MX_TESTPROC_H_INCLUDED
#define MX_TESTPROC_H_INCLUDED

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _mx_testproc_t mx_testproc_t;

//  Spawns argv[0] (searched in PATH if it has no '/') with argv and the
//  current environment plus the "KEY=VALUE" strings of extra_env
//  (NULL-terminated, may be NULL; they override inherited keys). Returns
//  NULL, with the reason on stderr, if the program cannot be started.
mx_testproc_t *
    mx_testproc_new (const char *const *argv, const char *const *extra_env);

//  Waits until a line of stderr contains `needle`, up to timeout_ms. Returns
//  that line without its newline (owned by the object, valid until the next
//  call), or NULL on timeout or end of output. Each match moves the start of
//  the next search to the line after it; a miss moves nothing.
const char *
    mx_testproc_expect_stderr (mx_testproc_t *self, const char *needle, int timeout_ms);

//  The same on stdout.
const char *
    mx_testproc_expect_stdout (mx_testproc_t *self, const char *needle, int timeout_ms);

//  Sends signo to the child. Returns -1 if it has already been reaped.
int
    mx_testproc_signal (mx_testproc_t *self, int signo);

//  Waits for the child to exit, up to timeout_ms, reading its output
//  meanwhile. Returns 0 and fills *status (waitpid status; may be NULL), or
//  -1 on timeout.
int
    mx_testproc_wait (mx_testproc_t *self, int timeout_ms, int *status);

pid_t
    mx_testproc_pid (mx_testproc_t *self);

//  Everything captured so far (never NULL).
const char *
    mx_testproc_stdout (mx_testproc_t *self);

const char *
    mx_testproc_stderr (mx_testproc_t *self);

//  Kills the child (SIGKILL) if it still runs, reaps it, frees. Safe twice.
void
    mx_testproc_destroy (mx_testproc_t **self_p);

//  Runs to completion, capturing output into *out / *err (each may be NULL;
//  the caller frees). Returns the exit code (128 + signal number if killed
//  by a signal), or -1 if it could not start or did not finish within
//  timeout_ms (it is then killed; the output so far is still returned).
int
    mx_testproc_run (const char *const *argv, const char *const *extra_env, int timeout_ms,
                     char **out, char **err);

#ifdef __cplusplus
}
#endif

#endif
