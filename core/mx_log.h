/*  mx_log - logging that never blocks an actor.

    Each call formats one line and hands it to a bounded in-memory queue; a
    writer thread drains the queue to the sink. When the queue is full the
    line is dropped and counted instead of waiting for a slow or broken sink.
    Before mx_log_start (unit tests, early start-up, configuration errors)
    lines go straight to the sink synchronously.

    Two sinks:
    - JSON lines ({"ts","level","actor","msg",...fields}) on a descriptor
      (stderr by default): every line is one valid JSON object.
    - the systemd journal's native protocol, chosen when the descriptor is
      the stream systemd connected to the journal ($JOURNAL_STREAM): the
      text as MESSAGE, the level as PRIORITY (error 3, warn 4, info 6,
      debug 7), the actor as ACTOR and every field upper-cased (msg_id as
      MSG_ID, flid as FLID, error_class as ERROR_CLASS, ...).

    The text of a line is kept whole up to MX_LOG_MESSAGE_MAX bytes; a
    longer one is cut on a UTF-8 character boundary and ends with
    MX_LOG_CUT_MARKER and its full size. Bytes that are not UTF-8 are
    written as \xNN, so the rest of the line survives.
*/
#ifndef MX_LOG_H_INCLUDED
#define MX_LOG_H_INCLUDED

#include "mx_metrics.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#define MX_LOG_MESSAGE_MAX 16384
#define MX_LOG_CUT_MARKER " [cut: "

typedef enum {
    MX_LOG_DEBUG = 0,
    MX_LOG_INFO,
    MX_LOG_WARN,
    MX_LOG_ERROR
} mx_log_level_t;

//  True when fd is the stream systemd connected to the journal for this
//  process: $JOURNAL_STREAM names its device and inode.
bool mx_log_fd_is_journal (int fd);
//  Native journal entries (true) or JSON lines (false, the default). Set it
//  before the first line.
void mx_log_set_journal (bool journal);

//  Start the writer thread on fd with room for queue_lines lines.
int mx_log_start (int fd, size_t queue_lines);
//  Drain what is queued, stop the writer thread. Safe to call twice.
void mx_log_stop (void);

//  The level every actor writes from, unless it has one of its own.
void mx_log_set_level (mx_log_level_t level);
mx_log_level_t mx_log_level (void);
//  "debug" .. "error".
const char *mx_log_level_name (mx_log_level_t level);

//  At runtime, from any thread: actor's own lowest level (level -1: back to
//  the global one). -1 for a name longer than MX_LOG_ACTOR_NAME_MAX, a bad
//  level, or more than a few dozen actors with levels of their own.
#define MX_LOG_ACTOR_NAME_MAX 31
int mx_log_set_actor_level (const char *actor, int level);
//  Every actor back to the global level.
void mx_log_clear_actor_levels (void);
//  {"level": global, "actors": {name: level, ...}} (new reference).
json_t *mx_log_levels (void);
//  A shadow instance: every line carries "shadow":true (SHADOW=true in the
//  journal), so no line of a shadow run passes for the live system's.
void mx_log_set_shadow (bool shadow);
//  "debug" | "info" | "warn" | "error"; returns -1 for anything else.
int mx_log_level_parse (const char *text, mx_log_level_t *level);

//  Lines dropped because the queue was full or the journal refused them.
uint64_t mx_log_dropped (void);

//  msgx_log_dropped_total, mirroring mx_log_dropped () when a scrape asks.
mx_metrics_counter_t *mx_log_dropped_metric (void);

//  Log msg (printf-style) for actor. fields, if not NULL, is a JSON object
//  whose members are added to the line; the call takes ownership of it.
void mx_log_emit (mx_log_level_t level, const char *actor, json_t *fields,
                  const char *fmt, ...) __attribute__ ((format (printf, 4, 5)));
void mx_log_vemit (mx_log_level_t level, const char *actor, json_t *fields,
                   const char *fmt, va_list args);

//  An info line written whatever the level: what an operator changed
//  (the log level itself) must reach the log even when set to error.
void mx_log_notice (const char *actor, json_t *fields, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

#define mx_debug(actor, ...) mx_log_emit (MX_LOG_DEBUG, (actor), NULL, __VA_ARGS__)
#define mx_info(actor, ...)  mx_log_emit (MX_LOG_INFO,  (actor), NULL, __VA_ARGS__)
#define mx_warn(actor, ...)  mx_log_emit (MX_LOG_WARN,  (actor), NULL, __VA_ARGS__)
#define mx_error(actor, ...) mx_log_emit (MX_LOG_ERROR, (actor), NULL, __VA_ARGS__)

#endif
