/*  mx_log - JSON-lines logging that never blocks an actor.

    Each call formats one JSON object ({"ts","level","actor","msg",...fields})
    and hands it to a bounded in-memory queue; a writer thread drains the
    queue to the sink (stderr by default). When the queue is full the line is
    dropped and counted instead of waiting for a slow or broken sink.
    Before mx_log_start (unit tests, early start-up) lines go straight to the
    sink synchronously.
*/
#ifndef MX_LOG_H_INCLUDED
#define MX_LOG_H_INCLUDED

#include <stdarg.h>
#include <stdint.h>
#include <jansson.h>

typedef enum {
    MX_LOG_DEBUG = 0,
    MX_LOG_INFO,
    MX_LOG_WARN,
    MX_LOG_ERROR
} mx_log_level_t;

//  Start the writer thread on fd with room for queue_lines lines.
int mx_log_start (int fd, size_t queue_lines);
//  Drain what is queued, stop the writer thread. Safe to call twice.
void mx_log_stop (void);

void mx_log_set_level (mx_log_level_t level);
//  "debug" | "info" | "warn" | "error"; returns -1 for anything else.
int mx_log_level_parse (const char *text, mx_log_level_t *level);

//  Lines dropped because the queue was full.
uint64_t mx_log_dropped (void);

//  Log msg (printf-style) for actor. fields, if not NULL, is a JSON object
//  whose members are added to the line; the call takes ownership of it.
void mx_log_emit (mx_log_level_t level, const char *actor, json_t *fields,
                  const char *fmt, ...) __attribute__ ((format (printf, 4, 5)));
void mx_log_vemit (mx_log_level_t level, const char *actor, json_t *fields,
                   const char *fmt, va_list args);

#define mx_debug(actor, ...) mx_log_emit (MX_LOG_DEBUG, (actor), NULL, __VA_ARGS__)
#define mx_info(actor, ...)  mx_log_emit (MX_LOG_INFO,  (actor), NULL, __VA_ARGS__)
#define mx_warn(actor, ...)  mx_log_emit (MX_LOG_WARN,  (actor), NULL, __VA_ARGS__)
#define mx_error(actor, ...) mx_log_emit (MX_LOG_ERROR, (actor), NULL, __VA_ARGS__)

#endif
