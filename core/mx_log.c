/*  mx_log - see mx_log.h.

    Producers only ever take a short mutex to push a pointer; formatting
    happens before, writing after, outside the lock. The writer thread is
    the only one that touches the sink once started.
*/
#include "mx_log.h"

#include <assert.h>
#include <errno.h>
#include <iconv.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

static const char *s_level_names [] = { "debug", "info", "warn", "error" };
//  syslog priorities, as journalctl -p reads them.
static const int s_priorities [] = { 7, 6, 4, 3 };
//  Fields of one journal entry: ours plus what the caller adds.
#define JOURNAL_FIELDS_MAX 64

//  One queued line: JSON text with its newline, or the journal fields as
//  "NAME=value" strings one after the other, each ending in NUL.
typedef struct {
    bool journal;
    size_t size;
    char data [];
} s_entry_t;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    pthread_t writer;
    bool started;
    bool stopping;
    int fd;
    s_entry_t **ring;
    size_t capacity, head, count;
} s_log = { .lock = PTHREAD_MUTEX_INITIALIZER, .ready = PTHREAD_COND_INITIALIZER, .fd = 2 };

static _Atomic int s_level = MX_LOG_INFO;

//  Levels of single actors, changed at runtime (msgxctl log-level). A slot's
//  name is written once, under the mutex, before the count publishes it;
//  readers take no lock. A level of -1 means the actor follows s_level.
#define ACTOR_LEVELS_MAX 32
static struct {
    char name [MX_LOG_ACTOR_NAME_MAX + 1];
    _Atomic int level;
} s_actor_levels [ACTOR_LEVELS_MAX];
static _Atomic size_t s_actor_level_count = 0;
static pthread_mutex_t s_actor_levels_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool s_journal = false;
static _Atomic bool s_shadow = false;
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

static void
s_journal_send (const s_entry_t *entry)
{
    struct iovec fields [JOURNAL_FIELDS_MAX];
    int count = 0;
    for (size_t at = 0; at < entry->size && count < JOURNAL_FIELDS_MAX; count++) {
        size_t length = strlen (entry->data + at);
        fields [count] = (struct iovec) { (void *) (entry->data + at), length };
        at += length + 1;
    }
    if (sd_journal_sendv (fields, count) < 0)
        atomic_fetch_add (&s_dropped, 1);
}

static void
s_sink (int fd, s_entry_t *entry)
{
    if (entry->journal)
        s_journal_send (entry);
    else
        s_write_all (fd, entry->data, entry->size);
    free (entry);
}

static void *
s_writer (void *arg)
{
    (void) arg;
    s_entry_t *batch [256];
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
        for (size_t i = 0; i < taken; i++)
            s_sink (fd, batch [i]);
        pthread_mutex_lock (&s_log.lock);
    }
    pthread_mutex_unlock (&s_log.lock);
    return NULL;
}

bool
mx_log_fd_is_journal (int fd)
{
    //  systemd sets JOURNAL_STREAM to "device:inode" of the stream it gave
    //  the service; a descriptor redirected elsewhere does not match.
    const char *stream = getenv ("JOURNAL_STREAM");
    unsigned long long device = 0, inode = 0;
    char extra;
    if (!stream || sscanf (stream, "%llu:%llu%c", &device, &inode, &extra) != 2)
        return false;
    struct stat st;
    return fstat (fd, &st) == 0 && (unsigned long long) st.st_dev == device
        && (unsigned long long) st.st_ino == inode;
}

void
mx_log_set_journal (bool journal)
{
    atomic_store (&s_journal, journal);
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
    s_log.ring = (s_entry_t **) calloc (queue_lines, sizeof (s_entry_t *));
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

mx_log_level_t
mx_log_level (void)
{
    return (mx_log_level_t) atomic_load (&s_level);
}

const char *
mx_log_level_name (mx_log_level_t level)
{
    assert ((int) level >= MX_LOG_DEBUG && (int) level <= MX_LOG_ERROR);
    return s_level_names [level];
}

int
mx_log_set_actor_level (const char *actor, int level)
{
    if (!actor || !*actor || strlen (actor) > MX_LOG_ACTOR_NAME_MAX
    ||  level < -1 || level > (int) MX_LOG_ERROR)
        return -1;
    pthread_mutex_lock (&s_actor_levels_lock);
    size_t count = atomic_load (&s_actor_level_count);
    size_t slot = 0;
    while (slot < count && strcmp (s_actor_levels [slot].name, actor) != 0)
        slot++;
    int rc = 0;
    if (slot < count)
        atomic_store (&s_actor_levels [slot].level, level);
    else
    if (level >= 0 && count < ACTOR_LEVELS_MAX) {
        strcpy (s_actor_levels [slot].name, actor);
        atomic_store (&s_actor_levels [slot].level, level);
        atomic_store (&s_actor_level_count, count + 1);
    }
    else
    if (level >= 0)
        rc = -1;
    pthread_mutex_unlock (&s_actor_levels_lock);
    return rc;
}

void
mx_log_clear_actor_levels (void)
{
    pthread_mutex_lock (&s_actor_levels_lock);
    size_t count = atomic_load (&s_actor_level_count);
    for (size_t slot = 0; slot < count; slot++)
        atomic_store (&s_actor_levels [slot].level, -1);
    pthread_mutex_unlock (&s_actor_levels_lock);
}

json_t *
mx_log_levels (void)
{
    json_t *actors = json_object ();
    size_t count = atomic_load (&s_actor_level_count);
    for (size_t slot = 0; slot < count; slot++) {
        int level = atomic_load (&s_actor_levels [slot].level);
        if (level >= 0)
            json_object_set_new (actors, s_actor_levels [slot].name, json_string (s_level_names [level]));
    }
    return json_pack ("{s:s,s:o}", "level", s_level_names [atomic_load (&s_level)], "actors", actors);
}

//  The lowest level written for actor: its own when set, else the global.
static int
s_level_of (const char *actor)
{
    size_t count = atomic_load (&s_actor_level_count);
    for (size_t slot = 0; slot < count && actor; slot++)
        if (strcmp (s_actor_levels [slot].name, actor) == 0) {
            int level = atomic_load (&s_actor_levels [slot].level);
            if (level >= 0)
                return level;
            break;
        }
    return atomic_load (&s_level);
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
s_push (s_entry_t *entry)
{
    pthread_mutex_lock (&s_log.lock);
    if (!s_log.started) {
        s_sink (s_log.fd, entry);
        pthread_mutex_unlock (&s_log.lock);
        return;
    }
    if (s_log.count == s_log.capacity) {
        pthread_mutex_unlock (&s_log.lock);
        atomic_fetch_add (&s_dropped, 1);
        free (entry);
        return;
    }
    s_log.ring [(s_log.head + s_log.count) % s_log.capacity] = entry;
    s_log.count++;
    pthread_cond_signal (&s_log.ready);
    pthread_mutex_unlock (&s_log.lock);
}

//  text [0 .. size) as valid UTF-8: a byte that is not part of a character
//  becomes \xNN. Returns a fresh string, NULL when out of memory.
static char *
s_utf8_clean (const char *text, size_t size)
{
    size_t room = size * 4 + 1;
    char *clean = (char *) malloc (room);
    if (!clean)
        return NULL;
    char *in = (char *) text, *out = clean;
    size_t in_left = size, out_left = room - 1;
    //  glibc's UTF-8 decoder refuses overlong forms and surrogates.
    iconv_t cd = iconv_open ("UTF-8", "UTF-8");
    while (in_left > 0) {
        if (cd != (iconv_t) -1 && iconv (cd, &in, &in_left, &out, &out_left) != (size_t) -1)
            break;
        if (cd != (iconv_t) -1 && errno != EILSEQ && errno != EINVAL)
            break;
        unsigned char byte = (unsigned char) *in;
        if (cd == (iconv_t) -1 && byte < 0x80)
            *out = (char) byte;
        else
            snprintf (out, 5, "\\x%02X", byte);
        size_t written = strlen (out);
        out += written;
        out_left -= written;
        in++;
        in_left--;
    }
    if (cd != (iconv_t) -1)
        iconv_close (cd);
    *out = 0;
    return clean;
}

//  The formatted message as a JSON string, cut at MX_LOG_MESSAGE_MAX on a
//  character boundary with the marker.
static json_t *
s_message (const char *fmt, va_list args)
{
    static char fallback [] = "(message could not be formatted)";
    char *text = NULL;
    int total = vasprintf (&text, fmt, args);
    if (total < 0)
        return json_string (fallback);
    size_t kept = (size_t) total;
    if (kept > MX_LOG_MESSAGE_MAX) {
        kept = MX_LOG_MESSAGE_MAX;
        //  Back off continuation bytes (10xxxxxx) to the start of a character.
        while (kept > 0 && ((unsigned char) text [kept] & 0xC0) == 0x80)
            kept--;
    }
    json_t *message = json_stringn (text, kept);
    if (!message) {
        char *clean = s_utf8_clean (text, kept);
        message = clean ? json_string (clean) : NULL;
        free (clean);
    }
    if (message && kept < (size_t) total) {
        char *marked = NULL;
        if (asprintf (&marked, "%s" MX_LOG_CUT_MARKER "%d bytes in all]", json_string_value (message), total) >= 0) {
            json_string_set (message, marked);
            free (marked);
        }
    }
    free (text);
    return message ? message : json_string (fallback);
}

//  A journal field name from a JSON key: upper case, [A-Z0-9_] only,
//  starting with a letter (names starting with _ are the journal's own).
static void
s_field_name (const char *key, char *name, size_t size)
{
    size_t n = 0;
    for (const char *c = key; *c && n + 1 < size; c++) {
        char upper = (*c >= 'a' && *c <= 'z') ? (char) (*c - 'a' + 'A') : *c;
        bool letter = upper >= 'A' && upper <= 'Z';
        if (n == 0 && !letter)
            continue;
        name [n++] = letter || (upper >= '0' && upper <= '9') ? upper : '_';
    }
    name [n] = 0;
}

static s_entry_t *
s_entry (bool journal, const char *data, size_t size)
{
    s_entry_t *entry = (s_entry_t *) malloc (sizeof (s_entry_t) + size + 1);
    if (!entry)
        return NULL;
    entry->journal = journal;
    entry->size = size;
    memcpy (entry->data, data, size);
    entry->data [size] = 0;
    return entry;
}

static s_entry_t *
s_journal_entry (mx_log_level_t level, const char *actor, json_t *message, json_t *fields)
{
    char *data = NULL;
    size_t size = 0;
    FILE *stream = open_memstream (&data, &size);
    if (!stream)
        return NULL;
    //  "%s%c" with 0 keeps each field's end in the buffer.
    fprintf (stream, "MESSAGE=%s%c", json_string_value (message), 0);
    fprintf (stream, "PRIORITY=%d%c", s_priorities [level], 0);
    fprintf (stream, "SYSLOG_IDENTIFIER=%s%c", program_invocation_short_name, 0);
    fprintf (stream, "ACTOR=%s%c", actor, 0);
    int count = 4;
    if (atomic_load (&s_shadow)) {
        fprintf (stream, "SHADOW=true%c", 0);
        count++;
    }
    const char *key;
    json_t *value;
    json_object_foreach (fields, key, value) {
        char name [64];
        s_field_name (key, name, sizeof name);
        if (!*name || ++count > JOURNAL_FIELDS_MAX)
            continue;
        if (json_is_string (value))
            fprintf (stream, "%s=%s%c", name, json_string_value (value), 0);
        else {
            char *text = json_dumps (value, JSON_ENCODE_ANY | JSON_COMPACT);
            fprintf (stream, "%s=%s%c", name, text ? text : "", 0);
            free (text);
        }
    }
    if (fclose (stream) != 0) {
        free (data);
        return NULL;
    }
    s_entry_t *entry = s_entry (true, data, size);
    free (data);
    return entry;
}

static s_entry_t *
s_json_entry (mx_log_level_t level, const char *actor, json_t *message, json_t *fields)
{
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
    json_object_set_new (line, "actor", json_string (actor));
    json_object_set (line, "msg", message);
    if (atomic_load (&s_shadow))
        json_object_set_new (line, "shadow", json_true ());
    if (fields)
        json_object_update_missing (line, fields);
    char *dumped = json_dumps (line, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (line);
    if (!dumped)
        return NULL;
    size_t size = strlen (dumped);
    dumped [size] = '\n';           //  replaces the NUL; s_entry adds one
    s_entry_t *entry = s_entry (false, dumped, size + 1);
    free (dumped);
    return entry;
}

void
mx_log_set_shadow (bool shadow)
{
    atomic_store (&s_shadow, shadow);
}

static void
s_emit (mx_log_level_t level, bool always, const char *actor, json_t *fields, const char *fmt, va_list args)
{
    if (!actor)
        actor = "main";
    if (!always && (int) level < s_level_of (actor)) {
        json_decref (fields);
        return;
    }
    json_t *message = s_message (fmt, args);
    s_entry_t *entry = !message ? NULL
                     : atomic_load (&s_journal) ? s_journal_entry (level, actor, message, fields)
                     : s_json_entry (level, actor, message, fields);
    json_decref (message);
    json_decref (fields);
    if (entry)
        s_push (entry);
    else
        atomic_fetch_add (&s_dropped, 1);
}

void
mx_log_vemit (mx_log_level_t level, const char *actor, json_t *fields,
              const char *fmt, va_list args)
{
    s_emit (level, false, actor, fields, fmt, args);
}

void
mx_log_notice (const char *actor, json_t *fields, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    s_emit (MX_LOG_INFO, true, actor, fields, fmt, args);
    va_end (args);
}

void
mx_log_emit (mx_log_level_t level, const char *actor, json_t *fields, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    mx_log_vemit (level, actor, fields, fmt, args);
    va_end (args);
}

mx_metrics_counter_t *
mx_log_dropped_metric (void)
{
    return mx_metrics_counter ("msgx_log_dropped_total",
                               "Log lines dropped because the log queue was full", NULL);
}
