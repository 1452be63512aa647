/*  mx_config - msgxd configuration: defaults < ZPL file < environment.

    Everything is driven by the key table in mx_config.def; this file only
    knows how to parse each TYPE, where keys come from, and the rules that
    tie keys together (validation).
*/
#include "mx_config.h"
#include "mx_cidr.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libpq-fe.h>

#define S_ZONEINFO_DIR "/usr/share/zoneinfo"

//  Config files beyond this are not configuration.
#define S_MAX_FILE_BYTES (1024 * 1024)
//  zconfig reads at most this much of a line.
#define S_MAX_LINE_BYTES 1024
//  Lines that are neither blank nor comments. czmq's ZPL parser appends
//  each setting by walking its siblings (quadratic: 50,000 settings took
//  6 s of CPU); every key of msgxd fits thirty times over.
#define S_MAX_SETTINGS 4096
//  ZPL problems listed one by one; past this, one line says there are more.
#define S_MAX_ZPL_PROBLEMS 20
//  A secret file beyond this is not a secret.
#define S_MAX_SECRET_BYTES (64 * 1024)
//  Suffix of the key, and of the environment variable, naming a secret file.
#define S_FILE_KEY_SUFFIX "-file"
#define S_FILE_ENV_SUFFIX "_FILE"

typedef enum {
    S_TYPE_BOOL,
    S_TYPE_INT,
    S_TYPE_DURATION,
    S_TYPE_STRING,
    S_TYPE_MS_LIST,
    S_TYPE_STRING_LIST,
    S_TYPE_TIME_OF_DAY
} s_type_t;

typedef struct {
    const char *key;
    s_type_t type;
    const char *type_name;
    const char *def;
    const char *doc;
    size_t offset;
} s_key_t;

static const s_key_t s_keys [] = {
#define MX_CONFIG_KEY(field, key, type, def, doc) \
    { key, S_TYPE_##type, #type, def, doc, offsetof (mx_config_t, field) },
#include "mx_config.def"
#undef MX_CONFIG_KEY
};

typedef enum {
    S_ORIGIN_DEFAULT = 0,
    S_ORIGIN_FILE,
    S_ORIGIN_ENV,
    S_ORIGIN_SET
} s_origin_t;

#define S_MS_SECOND 1000LL
#define S_MS_MINUTE (60 * S_MS_SECOND)
#define S_MS_HOUR   (60 * S_MS_MINUTE)
#define S_MS_DAY    (24 * S_MS_HOUR)


//  --------------------------------------------------------------------------
//  Small helpers

static void
s_add (zlist_t *list, const char *format, ...) __attribute__ ((format (printf, 2, 3)));

static void
s_add (zlist_t *list, const char *format, ...)
{
    if (!list)
        return;
    va_list args;
    va_start (args, format);
    char *line = zsys_vprintf (format, args);
    va_end (args);
    if (line) {
        zlist_append (list, line);      //  autofree list: it keeps a copy
        free (line);
    }
}

static zlist_t *
s_list_ensure (zlist_t **list_p)
{
    if (!list_p)
        return NULL;
    if (!*list_p) {
        *list_p = zlist_new ();
        assert (*list_p);
        zlist_autofree (*list_p);
    }
    return *list_p;
}

static int
s_find (const char *key)
{
    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++)
        if (streq (s_keys [idx].key, key))
            return idx;
    return -1;
}

static int
s_find_env (const char *name)
{
    char buf [128];
    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++) {
        const char *env = mx_config_env_name (s_keys [idx].key, buf, sizeof buf);
        assert (env);
        if (streq (env, name))
            return idx;
    }
    return -1;
}

static bool
s_ends_with (const char *text, const char *suffix)
{
    size_t text_len = strlen (text);
    size_t suffix_len = strlen (suffix);
    return text_len >= suffix_len
        && streq (text + text_len - suffix_len, suffix);
}

static bool
s_starts_with (const char *text, const char *prefix)
{
    return strncmp (text, prefix, strlen (prefix)) == 0;
}

//  Read-only callers pass const configs; only s_set writes through this.
static void *
s_member (const mx_config_t *self, int idx)
{
    return (char *) self + s_keys [idx].offset;
}

static bool
s_is_secret (int idx)
{
    return s_ends_with (s_keys [idx].key, "password");
}

bool
mx_config_is_secret (int idx)
{
    assert (idx >= 0 && idx < MX_CONFIG_KEY_COUNT);
    //  The conninfo may carry a password (and sslpassword) inline.
    return s_is_secret (idx) || idx == MX_CONFIG_IDX_pg_conninfo;
}

//  Copy of text without leading and trailing blanks.
static char *
s_trimmed (const char *text, size_t length)
{
    while (length && isspace ((unsigned char) *text)) {
        text++;
        length--;
    }
    while (length && isspace ((unsigned char) text [length - 1]))
        length--;
    char *copy = strndup (text, length);
    assert (copy);
    return copy;
}


//  --------------------------------------------------------------------------
//  Value parsers; each returns 0 or -1 and never touches *out on failure

static int
s_parse_bool (const char *text, bool *out)
{
    static const char *yes [] = { "true", "yes", "on", "1" };
    static const char *no [] = { "false", "no", "off", "0" };
    for (size_t i = 0; i < sizeof yes / sizeof yes [0]; i++) {
        if (strcasecmp (text, yes [i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp (text, no [i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

static int
s_parse_int (const char *text, int64_t *out)
{
    //  strtoll alone would accept blanks, '+' and octal; we do not.
    const char *digits = text [0] == '-'? text + 1: text;
    if (!isdigit ((unsigned char) digits [0]))
        return -1;
    bool hex = digits [0] == '0' && (digits [1] == 'x' || digits [1] == 'X');
    if (hex && !isxdigit ((unsigned char) digits [2]))
        return -1;
    char *end = NULL;
    errno = 0;
    long long value;
    if (hex) {
        unsigned long long magnitude = strtoull (digits + 2, &end, 16);
        if (errno || magnitude > (unsigned long long) INT64_MAX)
            return -1;
        value = (long long) magnitude;
        if (text [0] == '-')
            value = -value;
    }
    else {
        value = strtoll (text, &end, 10);
        if (errno)
            return -1;
    }
    if (*end)
        return -1;
    *out = (int64_t) value;
    return 0;
}

int
mx_config_duration_parse (const char *text, bool bare_ms, int64_t *ms)
{
    assert (text);
    assert (ms);
    if (!isdigit ((unsigned char) text [0]))
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull (text, &end, 10);
    if (errno || value > (unsigned long long) INT64_MAX)
        return -1;

    int64_t factor;
    if (streq (end, "ms"))
        factor = 1;
    else
    if (streq (end, "s"))
        factor = S_MS_SECOND;
    else
    if (streq (end, "m"))
        factor = S_MS_MINUTE;
    else
    if (streq (end, "h"))
        factor = S_MS_HOUR;
    else
    if (streq (end, "d"))
        factor = S_MS_DAY;
    else
    if (*end == '\0' && (bare_ms || value == 0))
        factor = 1;
    else
        return -1;

    if ((int64_t) value > INT64_MAX / factor)
        return -1;
    *ms = (int64_t) value * factor;
    return 0;
}

static int
s_parse_time_of_day (const char *text, int *out)
{
    if (*text == '\0') {
        *out = -1;
        return 0;
    }
    //  H:MM or HH:MM
    size_t length = strlen (text);
    if (length != 4 && length != 5)
        return -1;
    const char *colon = text + length - 3;
    if (*colon != ':')
        return -1;
    for (const char *scan = text; *scan; scan++)
        if (scan != colon && !isdigit ((unsigned char) *scan))
            return -1;
    int hours = atoi (text);
    int minutes = atoi (colon + 1);
    if (hours > 23 || minutes > 59)
        return -1;
    *out = hours * 60 + minutes;
    return 0;
}

//  Splits text at commas into trimmed items; "" or blanks is the empty list.
//  Empty items are an error. Caller destroys the list.
static zlist_t *
s_split (const char *text)
{
    zlist_t *items = zlist_new ();
    assert (items);
    zlist_autofree (items);
    char *whole = s_trimmed (text, strlen (text));
    if (*whole == '\0') {
        free (whole);
        return items;
    }
    const char *start = whole;
    while (true) {
        const char *comma = strchr (start, ',');
        size_t length = comma? (size_t) (comma - start): strlen (start);
        char *item = s_trimmed (start, length);
        if (*item == '\0') {
            free (item);
            zlist_destroy (&items);
            break;
        }
        zlist_append (items, item);
        free (item);
        if (!comma)
            break;
        start = comma + 1;
    }
    free (whole);
    return items;
}

static void
s_ms_list_free (mx_config_ms_list_t *list)
{
    free (list->items);
    list->items = NULL;
    list->count = 0;
}

static void
s_string_list_free (mx_config_string_list_t *list)
{
    for (size_t i = 0; i < list->count; i++)
        free (list->items [i]);
    free (list->items);
    list->items = NULL;
    list->count = 0;
}

static const char *
s_expected (int idx)
{
    bool bare_ms = s_ends_with (s_keys [idx].key, "-ms");
    switch (s_keys [idx].type) {
        case S_TYPE_BOOL:
            return "expected true or false";
        case S_TYPE_INT:
            return "expected an integer (decimal, or hex with 0x)";
        case S_TYPE_DURATION:
            return bare_ms
                ? "expected a duration: milliseconds, or a number with unit ms, s, m, h or d (500ms, 30s, 10m, 2h, 30d)"
                : "expected a duration with a unit ms, s, m, h or d (500ms, 30s, 10m, 2h, 30d); only 0 may go without";
        case S_TYPE_MS_LIST:
            return "expected comma-separated durations in milliseconds or with a unit (1000,2000,4000 or 1s,2s,4s)";
        case S_TYPE_STRING_LIST:
            return "expected comma-separated words without empty items (LDM,REGN)";
        case S_TYPE_TIME_OF_DAY:
            return "expected a time of day HH:MM (00:00..23:59), or empty";
        case S_TYPE_STRING:
            break;
    }
    return "";
}

//  Parse value for key idx and store it; where says where it came from.
static int
s_set (mx_config_t *self, int idx, const char *value, zlist_t *errors,
       s_origin_t origin, const char *where)
{
    //  Values go into JSON (--check-config, logs), which is UTF-8 only.
    json_t *probe = json_string (value);
    json_decref (probe);
    if (!probe) {
        s_add (errors, "%s%s: the value is not valid UTF-8", s_keys [idx].key, where);
        return -1;
    }
    void *member = s_member (self, idx);
    bool bare_ms = s_ends_with (s_keys [idx].key, "-ms");
    int rc = 0;

    switch (s_keys [idx].type) {
        case S_TYPE_BOOL:
            rc = s_parse_bool (value, (bool *) member);
            break;
        case S_TYPE_INT:
            rc = s_parse_int (value, (int64_t *) member);
            break;
        case S_TYPE_DURATION:
            rc = mx_config_duration_parse (value, bare_ms, (int64_t *) member);
            break;
        case S_TYPE_STRING: {
            char **string = (char **) member;
            free (*string);
            *string = strdup (value);
            assert (*string);
            break;
        }
        case S_TYPE_TIME_OF_DAY:
            rc = s_parse_time_of_day (value, (int *) member);
            break;
        case S_TYPE_MS_LIST: {
            zlist_t *items = s_split (value);
            if (!items) {
                rc = -1;
                break;
            }
            int64_t *steps = calloc (zlist_size (items) + 1, sizeof (int64_t));
            assert (steps);
            size_t count = 0;
            for (char *item = (char *) zlist_first (items); item;
                 item = (char *) zlist_next (items)) {
                if (mx_config_duration_parse (item, bare_ms, &steps [count]) == -1) {
                    rc = -1;
                    break;
                }
                count++;
            }
            zlist_destroy (&items);
            if (rc == -1) {
                free (steps);
                break;
            }
            mx_config_ms_list_t *list = (mx_config_ms_list_t *) member;
            s_ms_list_free (list);
            list->items = steps;
            list->count = count;
            break;
        }
        case S_TYPE_STRING_LIST: {
            zlist_t *items = s_split (value);
            if (!items) {
                rc = -1;
                break;
            }
            mx_config_string_list_t *list = (mx_config_string_list_t *) member;
            s_string_list_free (list);
            list->items = calloc (zlist_size (items) + 1, sizeof (char *));
            assert (list->items);
            for (char *item = (char *) zlist_first (items); item;
                 item = (char *) zlist_next (items)) {
                list->items [list->count] = strdup (item);
                assert (list->items [list->count]);
                list->count++;
            }
            zlist_destroy (&items);
            break;
        }
    }
    if (rc == -1)
        s_add (errors, "%s = '%s'%s: %s", s_keys [idx].key, value, where,
               s_expected (idx));
    else
        self->origin_ [idx] = (uint8_t) origin;
    return rc;
}


//  --------------------------------------------------------------------------
//  Construction

mx_config_t *
mx_config_new_defaults (void)
{
    mx_config_t *self = (mx_config_t *) zmalloc (sizeof (mx_config_t));
    assert (self);
    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++) {
        int rc = s_set (self, idx, s_keys [idx].def, NULL, S_ORIGIN_DEFAULT, "");
        assert (rc == 0);               //  a bad default is our bug
        (void) rc;
    }
    return self;
}

void
mx_config_destroy (mx_config_t **self_p)
{
    assert (self_p);
    if (*self_p) {
        mx_config_t *self = *self_p;
        for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++) {
            void *member = s_member (self, idx);
            if (s_keys [idx].type == S_TYPE_STRING)
                free (*(char **) member);
            else
            if (s_keys [idx].type == S_TYPE_MS_LIST)
                s_ms_list_free ((mx_config_ms_list_t *) member);
            else
            if (s_keys [idx].type == S_TYPE_STRING_LIST)
                s_string_list_free ((mx_config_string_list_t *) member);
        }
        for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++)
            free (self->secret_file_ [idx]);
        free (self->path_);
        free (self);
        *self_p = NULL;
    }
}

const char *
mx_config_env_name (const char *key, char *buf, size_t size)
{
    assert (key);
    assert (buf);
    size_t length = strlen (key);
    if (length + 1 > size)
        return NULL;
    for (size_t i = 0; i < length; i++) {
        char c = key [i];
        buf [i] = (c == '.' || c == '-')? '_': (char) toupper ((unsigned char) c);
    }
    buf [length] = '\0';
    return buf;
}

int
mx_config_set (mx_config_t *self, const char *key, const char *value,
               zlist_t *errors)
{
    assert (self);
    assert (key);
    assert (value);
    int idx = s_find (key);
    if (idx == -1) {
        s_add (errors, "unknown configuration key '%s'", key);
        return -1;
    }
    return s_set (self, idx, value, errors, S_ORIGIN_SET, "");
}


//  --------------------------------------------------------------------------
//  Secrets from files (KEY-file, KEY_FILE)

//  The secret key that name ends in suffix for, or -1.
static int
s_find_secret_by_suffix (const char *name, const char *suffix, int (*find) (const char *))
{
    if (!s_ends_with (name, suffix) || strlen (name) == strlen (suffix))
        return -1;
    char *base = strndup (name, strlen (name) - strlen (suffix));
    assert (base);
    int idx = find (base);
    free (base);
    return idx >= 0 && mx_config_is_secret (idx)? idx: -1;
}

//  Sets secret idx to the content of the file at path, without one
//  trailing newline. Messages name the file, never what it holds.
static int
s_set_from_file (mx_config_t *self, int idx, const char *path, zlist_t *errors,
                 s_origin_t origin, const char *where)
{
    const char *key = s_keys [idx].key;
    int fd = open (path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        s_add (errors, "%s%s: cannot read the secret file %s: %s", key, where, path, strerror (errno));
        return -1;
    }
    struct stat status;
    char *text = NULL;
    ssize_t size = -1;
    if (fstat (fd, &status) == -1 || !S_ISREG (status.st_mode))
        s_add (errors, "%s%s: the secret file %s is not a regular file", key, where, path);
    else
    if (status.st_size > S_MAX_SECRET_BYTES)
        s_add (errors, "%s%s: the secret file %s is larger than %d bytes", key, where, path,
               S_MAX_SECRET_BYTES);
    else {
        text = (char *) zmalloc ((size_t) status.st_size + 1);
        assert (text);
        size = read (fd, text, (size_t) status.st_size);
        if (size < 0)
            s_add (errors, "%s%s: cannot read the secret file %s: %s", key, where, path, strerror (errno));
    }
    close (fd);
    int rc = -1;
    if (size >= 0) {
        text [size] = '\0';
        if (strlen (text) != (size_t) size)
            s_add (errors, "%s%s: the secret file %s contains a NUL byte", key, where, path);
        else {
            if (size && text [size - 1] == '\n')
                text [--size] = '\0';
            if (size && text [size - 1] == '\r')
                text [--size] = '\0';
            rc = s_set (self, idx, text, errors, origin, where);
        }
    }
    if (text) {
        explicit_bzero (text, (size_t) status.st_size);
        free (text);
    }
    if (rc == 0) {
        free (self->secret_file_ [idx]);
        self->secret_file_ [idx] = strdup (path);
        assert (self->secret_file_ [idx]);
        self->secret_mode_ [idx] = (unsigned) (status.st_mode & 07777);
    }
    return rc;
}


//  --------------------------------------------------------------------------
//  The file

//  Hint for an unknown key: the one key with the same last segment, if any.
static const char *
s_suggest (const char *key)
{
    const char *tail = strrchr (key, '.');
    tail = tail? tail + 1: key;
    const char *match = NULL;
    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++) {
        const char *other = strrchr (s_keys [idx].key, '.');
        if (other && streq (other + 1, tail)) {
            if (match)
                return NULL;        //  ambiguous: no hint
            match = s_keys [idx].key;
        }
    }
    return match;
}

typedef struct {
    mx_config_t *config;
    const char *path;
    const char *where;
    bool seen [MX_CONFIG_KEY_COUNT];
    zlist_t *errors;
} s_walk_t;

//  Maps the tree to dotted keys: nesting and '/' in names both become '.'.
static void
s_walk (s_walk_t *walk, zconfig_t *node, const char *prefix)
{
    for (; node; node = zconfig_next (node)) {
        char *key = *prefix
                  ? zsys_sprintf ("%s.%s", prefix, zconfig_name (node))
                  : strdup (zconfig_name (node));
        assert (key);
        for (char *scan = key; *scan; scan++)
            if (*scan == '/')
                *scan = '.';

        const char *value = zconfig_value (node)? zconfig_value (node): "";
        if (zconfig_child (node)) {
            if (*value)
                s_add (walk->errors, "%s: section '%s' has both a value and keys below it",
                       walk->path, key);
            s_walk (walk, zconfig_child (node), key);
        }
        else {
            int idx = s_find (key);
            int secret = idx == -1? s_find_secret_by_suffix (key, S_FILE_KEY_SUFFIX, s_find): -1;
            if (secret >= 0) {
                if (walk->seen [secret])
                    s_add (walk->errors, "%s: key '%s' is set more than once (also as %s%s)", walk->path,
                           s_keys [secret].key, s_keys [secret].key, S_FILE_KEY_SUFFIX);
                else {
                    walk->seen [secret] = true;
                    s_set_from_file (walk->config, secret, value, walk->errors, S_ORIGIN_FILE, walk->where);
                }
            }
            else
            if (idx == -1) {
                const char *hint = s_suggest (key);
                s_add (walk->errors, "%s: unknown key '%s'%s%s%s", walk->path, key,
                       hint? " (did you mean '": "", hint? hint: "", hint? "'?)": "");
            }
            else
            if (walk->seen [idx])
                s_add (walk->errors, "%s: key '%s' is set more than once%s", walk->path, key,
                       mx_config_is_secret (idx)? " (or also as a -file)": "");
            else {
                walk->seen [idx] = true;
                s_set (walk->config, idx, value, walk->errors, S_ORIGIN_FILE, walk->where);
            }
        }
        free (key);
    }
}

//  ZPL traps, checked line by line before zconfig reads the text: zconfig
//  refuses some of them without saying where, reads others silently in a
//  way the operator did not mean (a value cut at '#', a long line cut at
//  S_MAX_LINE_BYTES). Each problem names the line and, at most, the key:
//  never a value, which may be a secret.

static bool
s_zpl_name_char (char c)
{
    //  zconfig's name characters.
    return isalnum ((unsigned char) c) || (c && strchr ("$-_@.&+/", c));
}

typedef struct {
    const char *path;
    int lineno;
    char name [128];            //  the key of the line, for the message
    zlist_t *errors;
} s_zpl_line_t;

static void
s_zpl_refuse (s_zpl_line_t *line, const char *hint)
{
    if (*line->name)
        s_add (line->errors, "config file %s line %d (key '%s') is not valid ZPL: %s",
               line->path, line->lineno, line->name, hint);
    else
        s_add (line->errors, "config file %s line %d is not valid ZPL: %s", line->path, line->lineno, hint);
}

//  The value part of "name = value" (text after '='); false with a message
//  if ZPL would read it otherwise than it looks.
static bool
s_zpl_check_value (s_zpl_line_t *line, const char *value, size_t length)
{
    while (length && (*value == ' ' || *value == '\t')) {
        value++;
        length--;
    }
    if (length && (*value == '"' || *value == '\'')) {
        const char *close = memchr (value + 1, *value, length - 1);
        if (!close) {
            s_zpl_refuse (line, "missing closing quote (is the line cut short?)");
            return false;
        }
        const char *rest = close + 1, *end = value + length;
        while (rest < end && (*rest == ' ' || *rest == '\t'))
            rest++;
        if (rest < end && *rest != '#') {
            s_zpl_refuse (line, "nothing but a comment may follow a quoted value");
            return false;
        }
        return true;
    }
    if (length && *value == '#') {
        s_zpl_refuse (line, "the value starts with '#', which ZPL reads ambiguously: quote a value "
                            "that starts with '#' (key = \"#...\"), and write an empty value before "
                            "a comment as key = \"\"");
        return false;
    }
    for (size_t i = 1; i < length; i++)
        if (value [i] == '#' && value [i - 1] != ' ' && value [i - 1] != '\t') {
            s_zpl_refuse (line, "'#' inside an unquoted value starts a comment, so ZPL cuts the value "
                                "there: quote the whole value (key = \"...\")");
            return false;
        }
    return true;
}

//  Every problem of the text, one error each; returns how many.
static size_t
s_zpl_check (const char *path, const char *text, zlist_t *errors)
{
    size_t before = zlist_size (errors);
    s_zpl_line_t line = { .path = path, .errors = errors };
    int level = 0;                      //  of the last name line
    for (const char *at = text; *at; ) {
        if (zlist_size (errors) - before == S_MAX_ZPL_PROBLEMS) {
            //  A file that is not ZPL at all need not fill the log.
            s_add (errors, "config file %s: more problems from line %d on, not listed", path, line.lineno + 1);
            break;
        }
        line.lineno++;
        line.name [0] = 0;
        size_t length = strcspn (at, "\n");
        const char *next = at + length + (at [length] == '\n');
        if (length && at [length - 1] == '\r')
            length--;
        if (length > S_MAX_LINE_BYTES) {
            s_add (errors, "config file %s line %d is longer than %d characters: ZPL would cut it "
                   "there; set a longer value through the environment (msgxd --config-reference "
                   "names each key's variable)", path, line.lineno, S_MAX_LINE_BYTES);
            at = next;
            continue;
        }
        size_t spaces = strspn (at, " ");
        const char *body = at + spaces;
        size_t rest = length - spaces;
        size_t blank = strspn (body, " \t");
        if (blank >= rest || body [blank] == '#') {
            //  Blank or comment; zconfig holds a comment to the indentation
            //  rule too, but only when it is indented by spaces.
            if (blank < rest && spaces % 4 && body [0] != '\t')
                s_zpl_refuse (&line, "indent in steps of 4 spaces (this comment line is not)");
            at = next;
            continue;
        }
        size_t name_length = 0;
        while (name_length < rest && s_zpl_name_char (body [name_length]))
            name_length++;
        if (name_length > 0 && name_length < sizeof line.name)
            snprintf (line.name, sizeof line.name, "%.*s", (int) name_length, body);
        if (*body == '\t')
            s_zpl_refuse (&line, "indent with spaces, not tabs (4 spaces per level)");
        else
        if (spaces % 4)
            s_zpl_refuse (&line, "indent in steps of 4 spaces per level, not 2 or 3");
        else
        if ((int) spaces / 4 > level + 1)
            s_zpl_refuse (&line, "indented more than one level (4 spaces) deeper than the section above");
        else
        if (name_length == 0)
            s_zpl_refuse (&line, "expected 'name = value' or a section name");
        else {
            const char *after = body + name_length, *end = body + rest;
            while (after < end && (*after == ' ' || *after == '\t'))
                after++;
            if (after == end || *after == '#')
                level = (int) spaces / 4;           //  a section
            else
            if (*after != '=')
                s_zpl_refuse (&line, "expected 'name = value' or a section name (names are letters, "
                                     "digits and $-_@.&+/)");
            else
            if (s_zpl_check_value (&line, after + 1, (size_t) (end - after - 1)))
                level = (int) spaces / 4;
        }
        at = next;
    }
    return zlist_size (errors) - before;
}

//  Whole file as a string, or NULL with one error line.
static char *
s_read_file (const char *path, unsigned *mode, zlist_t *errors)
{
    struct stat status;
    if (stat (path, &status) == -1) {
        s_add (errors, "cannot read config file %s: %s", path, strerror (errno));
        return NULL;
    }
    if (!S_ISREG (status.st_mode)) {
        s_add (errors, "config file %s is not a regular file", path);
        return NULL;
    }
    if (status.st_size > S_MAX_FILE_BYTES) {
        s_add (errors, "config file %s is larger than %d bytes", path, S_MAX_FILE_BYTES);
        return NULL;
    }
    *mode = (unsigned) (status.st_mode & 07777);
    FILE *file = fopen (path, "rb");
    if (!file) {
        s_add (errors, "cannot read config file %s: %s", path, strerror (errno));
        return NULL;
    }
    char *text = (char *) zmalloc ((size_t) status.st_size + 1);
    assert (text);
    size_t size = fread (text, 1, (size_t) status.st_size, file);
    bool failed = ferror (file);
    fclose (file);
    if (failed) {
        s_add (errors, "cannot read config file %s: read error", path);
        free (text);
        return NULL;
    }
    text [size] = '\0';
    if (strlen (text) != size) {
        s_add (errors, "config file %s contains a NUL byte; is it text?", path);
        free (text);
        return NULL;
    }
    //  zconfig's parser is quadratic in the settings at one level: a
    //  file with thousands of them is not configuration.
    int lineno = 1;
    int settings = 0;
    for (const char *line = text; *line; lineno++) {
        size_t length = strcspn (line, "\n");
        size_t blanks = strspn (line, " \t\r");
        if (blanks < length && line [blanks] != '#' && ++settings > S_MAX_SETTINGS) {
            s_add (errors, "config file %s has more than %d settings (line %d); is it a config file?",
                   path, S_MAX_SETTINGS, lineno);
            free (text);
            return NULL;
        }
        line += length + (line [length] == '\n');
    }
    return text;
}

static int
s_load_file (mx_config_t *self, const char *path, zlist_t *errors)
{
    unsigned mode = 0;
    char *text = s_read_file (path, &mode, errors);
    if (!text)
        return -1;
    self->file_mode_ = mode;
    if (s_zpl_check (path, text, errors) > 0) {
        free (text);
        return -1;
    }
    //  zconfig's own parser; not zconfig_load, which leaks its file handle
    //  when the text does not parse (czmq 4.2.1).
    zconfig_t *root = zconfig_str_load (text);
    if (!root) {
        //  The checks above know every rule zconfig applies; this is a
        //  rule they miss, so say what little is known.
        s_add (errors, "config file %s is not valid ZPL", path);
        free (text);
        return -1;
    }
    free (text);
    free (self->path_);
    self->path_ = strdup (path);
    assert (self->path_);

    s_walk_t walk = { .config = self, .path = path, .errors = errors };
    char *where = zsys_sprintf (" (in %s)", path);
    assert (where);
    walk.where = where;
    size_t before = zlist_size (errors);
    s_walk (&walk, zconfig_child (root), "");
    free (where);
    zconfig_destroy (&root);
    return zlist_size (errors) == before? 0: -1;
}


//  --------------------------------------------------------------------------
//  The environment

static int
s_load_env (mx_config_t *self, char **envp, zlist_t *errors, zlist_t *warnings)
{
    int rc = 0;
    bool seen [MX_CONFIG_KEY_COUNT] = { false };
    for (char **entry = envp; entry && *entry; entry++) {
        const char *equals = strchr (*entry, '=');
        if (!equals)
            continue;
        char *name = strndup (*entry, (size_t) (equals - *entry));
        assert (name);
        int idx = s_find_env (name);
        int secret = idx == -1? s_find_secret_by_suffix (name, S_FILE_ENV_SUFFIX, s_find_env): -1;
        int target = idx >= 0? idx: secret;
        if (target >= 0 && seen [target]) {
            char env [128];
            s_add (errors, "environment %s and %s%s are both set: set one of them",
                   mx_config_env_name (s_keys [target].key, env, sizeof env),
                   env, S_FILE_ENV_SUFFIX);
            rc = -1;
        }
        else
        if (target >= 0) {
            seen [target] = true;
            char *where = zsys_sprintf (" (from environment %s)", name);
            assert (where);
            int set = idx >= 0
                    ? s_set (self, idx, equals + 1, errors, S_ORIGIN_ENV, where)
                    : s_set_from_file (self, secret, equals + 1, errors, S_ORIGIN_ENV, where);
            if (set == -1)
                rc = -1;
            free (where);
        }
        else
        if ((s_starts_with (name, "MSGX_") || s_starts_with (name, "MAILBOX_"))
        &&  !s_starts_with (name, "MSGX_TEST_"))
            s_add (warnings, "environment variable %s matches no configuration key; ignored",
                   name);
        free (name);
    }
    return rc;
}


//  --------------------------------------------------------------------------
//  Formatting values (messages, JSON)

static char *
s_format_duration (int64_t ms)
{
    if (ms != 0 && ms % S_MS_DAY == 0)
        return zsys_sprintf ("%" PRId64 "d", ms / S_MS_DAY);
    if (ms != 0 && ms % S_MS_HOUR == 0)
        return zsys_sprintf ("%" PRId64 "h", ms / S_MS_HOUR);
    if (ms != 0 && ms % S_MS_MINUTE == 0)
        return zsys_sprintf ("%" PRId64 "m", ms / S_MS_MINUTE);
    if (ms != 0 && ms % S_MS_SECOND == 0)
        return zsys_sprintf ("%" PRId64 "s", ms / S_MS_SECOND);
    return zsys_sprintf ("%" PRId64 "ms", ms);
}

static char *
s_format_time_of_day (int minutes)
{
    if (minutes < 0)
        return strdup ("");
    return zsys_sprintf ("%02d:%02d", minutes / 60, minutes % 60);
}

//  Masks passwords in a libpq conninfo: keyword form (password=...,
//  sslpassword=...) and URI form (postgresql://user:secret@host,
//  ?password=..., &sslpassword=...).
static char *
s_mask_conninfo (const char *conninfo)
{
    zchunk_t *out = zchunk_new (NULL, strlen (conninfo) + 16);
    assert (out);
    const char *scan = conninfo;
    bool uri = s_starts_with (conninfo, "postgresql://")
            || s_starts_with (conninfo, "postgres://");
    if (uri) {
        const char *authority = strstr (conninfo, "://") + 3;
        const char *at = strchr (authority, '@');
        const char *slash = strchr (authority, '/');
        const char *colon = strchr (authority, ':');
        if (at && (!slash || at < slash) && colon && colon < at) {
            zchunk_extend (out, conninfo, (size_t) (colon + 1 - conninfo));
            zchunk_extend (out, "***", 3);
            scan = at;
        }
        while (*scan) {
            const char *param = strstr (scan, "password=");
            //  password= or sslpassword=, each a parameter of its own.
            const char *name = param && param - 3 >= conninfo && strncmp (param - 3, "ssl", 3) == 0
                             ? param - 3: param;
            bool at_start = name && name > conninfo && (name [-1] == '?' || name [-1] == '&');
            if (!param) {
                zchunk_extend (out, scan, strlen (scan));
                break;
            }
            const char *value = param + strlen ("password=");
            zchunk_extend (out, scan, (size_t) (value - scan));
            scan = value;
            if (at_start) {
                zchunk_extend (out, "***", 3);
                scan += strcspn (scan, "&#");
            }
        }
    }
    else {
        while (*scan) {
            //  keyword = value, value either 'quoted' (with \ escapes) or bare
            const char *start = scan;
            scan += strspn (scan, " \t\n");
            const char *keyword = scan;
            scan += strcspn (scan, " \t\n=");
            size_t keyword_len = (size_t) (scan - keyword);
            scan += strspn (scan, " \t\n");
            if (*scan != '=') {
                //  Not keyword=value (libpq will refuse it): hide the rest
                //  if it might hold a password.
                if (strstr (start, "password"))
                    zchunk_extend (out, " ***", 4);
                else
                    zchunk_extend (out, start, strlen (start));
                break;
            }
            scan++;
            scan += strspn (scan, " \t\n");
            zchunk_extend (out, start, (size_t) (scan - start));
            const char *value = scan;
            if (*scan == '\'') {
                scan++;
                while (*scan && *scan != '\'')
                    scan += (*scan == '\\' && scan [1])? 2: 1;
                if (*scan)
                    scan++;
            }
            else
                scan += strcspn (scan, " \t\n");
            if ((keyword_len == strlen ("password")
            &&   strncmp (keyword, "password", keyword_len) == 0)
            ||  (keyword_len == strlen ("sslpassword")
            &&   strncmp (keyword, "sslpassword", keyword_len) == 0))
                zchunk_extend (out, "***", 3);
            else
                zchunk_extend (out, value, (size_t) (scan - value));
        }
    }
    char *masked = zsys_sprintf ("%.*s", (int) zchunk_size (out), (char *) zchunk_data (out));
    zchunk_destroy (&out);
    return masked;
}

//  Value of key idx as text, as a user would write it (passwords masked).
static char *
s_format_value (const mx_config_t *self, int idx)
{
    void *member = s_member (self, idx);
    switch (s_keys [idx].type) {
        case S_TYPE_BOOL:
            return strdup (*(bool *) member? "true": "false");
        case S_TYPE_INT:
            return zsys_sprintf ("%" PRId64, *(int64_t *) member);
        case S_TYPE_DURATION:
            return s_format_duration (*(int64_t *) member);
        case S_TYPE_STRING: {
            const char *string = *(char **) member;
            if (s_is_secret (idx) && *string)
                return strdup ("***");
            if (idx == MX_CONFIG_IDX_pg_conninfo)
                return s_mask_conninfo (string);
            return strdup (string);
        }
        case S_TYPE_TIME_OF_DAY:
            return s_format_time_of_day (*(int *) member);
        case S_TYPE_MS_LIST: {
            mx_config_ms_list_t *list = (mx_config_ms_list_t *) member;
            char *text = strdup ("");
            for (size_t i = 0; i < list->count; i++) {
                char *step = zsys_sprintf ("%s%s%" PRId64, text, i? ",": "", list->items [i]);
                free (text);
                text = step;
            }
            return text;
        }
        case S_TYPE_STRING_LIST: {
            mx_config_string_list_t *list = (mx_config_string_list_t *) member;
            char *text = strdup ("");
            for (size_t i = 0; i < list->count; i++) {
                char *step = zsys_sprintf ("%s%s%s", text, i? ",": "", list->items [i]);
                free (text);
                text = step;
            }
            return text;
        }
    }
    return strdup ("");
}

json_t *
mx_config_to_json (const mx_config_t *self)
{
    assert (self);
    json_t *root = json_object ();
    assert (root);
    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++) {
        void *member = s_member (self, idx);
        json_t *value = NULL;
        switch (s_keys [idx].type) {
            case S_TYPE_BOOL:
                value = json_boolean (*(bool *) member);
                break;
            case S_TYPE_INT:
            case S_TYPE_DURATION:
                value = json_integer ((json_int_t) *(int64_t *) member);
                break;
            case S_TYPE_MS_LIST: {
                mx_config_ms_list_t *list = (mx_config_ms_list_t *) member;
                value = json_array ();
                for (size_t i = 0; i < list->count; i++)
                    json_array_append_new (value, json_integer ((json_int_t) list->items [i]));
                break;
            }
            case S_TYPE_STRING_LIST: {
                mx_config_string_list_t *list = (mx_config_string_list_t *) member;
                value = json_array ();
                for (size_t i = 0; i < list->count; i++)
                    json_array_append_new (value, json_string (list->items [i]));
                break;
            }
            case S_TYPE_STRING:
            case S_TYPE_TIME_OF_DAY: {
                char *text = s_format_value (self, idx);
                value = json_string (text);
                free (text);
                break;
            }
        }
        assert (value);
        json_object_set_new (root, s_keys [idx].key, value);
    }
    return root;
}

void
mx_config_print_reference (FILE *out)
{
    assert (out);
    char env [128];
    fprintf (out, "# Configuration reference\n\n"
             "Generated from `core/mx_config.def` by the build (`msgxd --config-reference`); "
             "do not edit by hand.\n\n"
             "Precedence: defaults < config file (`msgxd --config FILE`, czmq ZPL) < environment. "
             "Durations take `ms`, `s`, `m`, `h`, `d` (a bare number only in `-ms` keys); lists are "
             "comma-separated; times of day are `HH:MM` in the airport zone.\n\n"
             "Reloadable: `msgx.log.level` alone. SIGHUP (`systemctl reload msgxd`) reads the file and "
             "the environment again and applies it at once, without a restart (the instance keeps its "
             "role); a configuration that does not load is refused and the running one kept. Every other "
             "key takes effect at the next start (a reload names the changed ones).\n\n");
    fprintf (out, "| key | environment | type | default | meaning |\n");
    fprintf (out, "|---|---|---|---|---|\n");
    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++) {
        const s_key_t *key = &s_keys [idx];
        const char *def = *key->def? key->def: NULL;
        fprintf (out, "| `%s` | `%s` | %s | %s%s%s | %s |\n",
                 key->key, mx_config_env_name (key->key, env, sizeof env),
                 key->type_name,
                 def? "`": "", def? def: "(empty)", def? "`": "",
                 key->doc);
    }
}

//  text as roff running text: backslashes escaped, and a line may not
//  start with a control character.
static void
s_roff_text (FILE *out, const char *text)
{
    if (*text == '.' || *text == '\'')
        fputs ("\\&", out);
    for (; *text; text++)
        if (*text == '\\')
            fputs ("\\e", out);
        else
        if (*text == '-')
            fputs ("\\-", out);
        else
            fputc (*text, out);
}

void
mx_config_print_man (FILE *out)
{
    assert (out);
    char env [128];
    fputs (".\\\" Generated from core/mx_config.def by the build (msgxd --config-man); do not edit.\n"
           ".TH MSGXD.CONF 5 \"\" \"msgexchange\" \"File Formats\"\n"
           ".nh\n"
           ".ad l\n"
           ".SH NAME\n"
           "msgxd.conf \\- configuration of the msgexchange daemon msgxd\n"
           ".SH SYNOPSIS\n"
           ".I /etc/msgxd/msgxd.zpl\n"
           ".SH DESCRIPTION\n"
           ".BR msgxd (8)\n"
           "reads its configuration from the file named by\n"
           ".BR \\-\\-config ;\n"
           "the package's systemd unit names\n"
           ".IR /etc/msgxd/msgxd.zpl ,\n"
           "installed as the commented production sample.\n"
           "The format is ZPL (czmq zconfig): sections nested by 4 spaces, or a key\n"
           "written flat\n"
           ".RB ( \"msgx.pipeline.claim\\-batch = 50\" ).\n"
           "Quote values holding blanks or '#'; write an empty value as \"\".\n"
           "Unknown keys are refused.\n"
           ".PP\n"
           "Precedence: defaults < file < environment. Each key has an environment\n"
           "variable: the key upper\\-cased, dots and dashes as '_'.\n"
           "Durations take ms, s, m, h, d (a bare number only in keys ending \"\\-ms\");\n"
           "lists are comma\\-separated; times of day are HH:MM in the airport zone.\n"
           ".PP\n"
           "Bad configuration is refused with one line per problem and exit code 78;\n"
           ".B msgxd \\-\\-config FILE \\-\\-check\\-config\n"
           "checks a file without starting.\n"
           ".PP\n"
           "Reloadable: msgx.log.level alone. SIGHUP\n"
           ".RB ( \"systemctl reload msgxd\" )\n"
           "reads the file and the environment again and applies it at once, without a\n"
           "restart; a configuration that does not load is refused and the running one\n"
           "kept. Every other key takes effect at the next start.\n"
           ".SH KEYS\n", out);
    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++) {
        const s_key_t *key = &s_keys [idx];
        fputs (".TP\n.B ", out);
        s_roff_text (out, key->key);
        fputs ("\n", out);
        s_roff_text (out, key->doc);
        fputs (".\n.br\nType ", out);
        s_roff_text (out, key->type_name);
        fputs ("; default ", out);
        if (*key->def) {
            fputs ("\\fB", out);
            s_roff_text (out, key->def);
            fputs ("\\fR", out);
        }
        else
            fputs ("empty", out);
        fputs ("; environment \\fB", out);
        s_roff_text (out, mx_config_env_name (key->key, env, sizeof env));
        fputs ("\\fR.\n", out);
    }
    fputs (".SH FILES\n"
           ".TP\n.I /etc/msgxd/msgxd.zpl\n"
           "the configuration (a conffile of the package)\n"
           ".TP\n.I /etc/msgxd/msgxd.env\n"
           "optional environment overrides and secrets, read by the systemd unit (mode 0600)\n"
           ".TP\n.I /etc/msgxd/pgpass\n"
           "the PostgreSQL password file the unit names in PGPASSFILE (mode 0600)\n"
           ".SH SEE ALSO\n"
           ".BR msgxd (8),\n"
           ".BR msgxctl (1),\n"
           ".I /usr/share/doc/msgxd/operations.md\n", out);
}


//  --------------------------------------------------------------------------
//  Validation

//  " (in FILE)", " (from environment NAME)", " (default)" or "".
static char *
s_origin (const mx_config_t *self, int idx)
{
    char env [128];
    switch (self->origin_ [idx]) {
        case S_ORIGIN_FILE:
            return zsys_sprintf (" (in %s)", self->path_? self->path_: "config file");
        case S_ORIGIN_ENV:
            return zsys_sprintf (" (from environment %s)",
                                 mx_config_env_name (s_keys [idx].key, env, sizeof env));
        case S_ORIGIN_DEFAULT:
            return strdup (" (default)");
        default:
            return strdup ("");
    }
}

//  One problem with key idx: "key = value (origin): problem".
static void
s_problem (const mx_config_t *self, zlist_t *errors, int idx, const char *format, ...)
    __attribute__ ((format (printf, 4, 5)));

static void
s_problem (const mx_config_t *self, zlist_t *errors, int idx, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    char *problem = zsys_vprintf (format, args);
    va_end (args);
    char *value = s_format_value (self, idx);
    char *origin = s_origin (self, idx);
    s_add (errors, "%s = '%s'%s: %s", s_keys [idx].key, value, origin, problem);
    free (origin);
    free (value);
    free (problem);
}

#define S_IDX(field) MX_CONFIG_IDX_##field

static int
s_int_range (const mx_config_t *self, zlist_t *errors, int idx, int64_t min, int64_t max)
{
    int64_t value = *(int64_t *) s_member (self, idx);
    if (value >= min && value <= max)
        return 0;
    if (value < min && max >= INT32_MAX)
        s_problem (self, errors, idx, "must be at least %" PRId64, min);
    else
        s_problem (self, errors, idx, "must be between %" PRId64 " and %" PRId64, min, max);
    return -1;
}

static int
s_duration_range (const mx_config_t *self, zlist_t *errors, int idx, int64_t min, int64_t max)
{
    int64_t value = *(int64_t *) s_member (self, idx);
    if (value >= min && value <= max)
        return 0;
    char *low = s_format_duration (min);
    char *high = s_format_duration (max);
    if (max == INT64_MAX && min == 1)
        s_problem (self, errors, idx, "must be more than 0");
    else
    if (max == INT64_MAX)
        s_problem (self, errors, idx, "must be at least %s", low);
    else
        s_problem (self, errors, idx, "must be between %s and %s", low, high);
    free (low);
    free (high);
    return -1;
}

static void
s_check_zone (const mx_config_t *self, zlist_t *errors)
{
    const char *zone = self->operation_day_zone;
    int idx = S_IDX (operation_day_zone);
    if (*zone == '\0') {
        s_problem (self, errors, idx, "must name a time zone such as Asia/Shanghai");
        return;
    }
    //  A name, never a path: no "..", no leading '/', plain characters only.
    bool plain = zone [0] != '/' && !strstr (zone, "..");
    for (const char *scan = zone; *scan && plain; scan++)
        plain = isalnum ((unsigned char) *scan) || strchr ("/_+-", *scan);
    if (!plain) {
        s_problem (self, errors, idx, "is not a time zone name (expected e.g. Asia/Shanghai)");
        return;
    }
    char *path = zsys_sprintf ("%s/%s", S_ZONEINFO_DIR, zone);
    struct stat status;
    if (stat (path, &status) == -1 || !S_ISREG (status.st_mode))
        s_problem (self, errors, idx, "unknown time zone (no file %s)", path);
    free (path);
}

static void
s_check_port (const mx_config_t *self, zlist_t *errors, int idx, const char *text,
              const char *what)
{
    int64_t port;
    if (*text == '\0' || s_parse_int (text, &port) == -1 || text [0] == '-'
    ||  port < 1 || port > 65535)
        s_problem (self, errors, idx, "%s port must be a number 1..65535", what);
}

static void
s_check_bind (const mx_config_t *self, zlist_t *errors, int idx)
{
    const char *bind = *(char **) s_member (self, idx);
    const char *colon = strrchr (bind, ':');
    if (!colon || colon == bind) {
        s_problem (self, errors, idx, "expected host:port, e.g. 127.0.0.1:8080");
        return;
    }
    if (bind [0] == '[' && colon [-1] != ']') {
        s_problem (self, errors, idx, "expected [ipv6]:port, e.g. [::1]:8080");
        return;
    }
    for (const char *scan = bind; scan < colon; scan++)
        if (isspace ((unsigned char) *scan)) {
            s_problem (self, errors, idx, "host must not contain blanks");
            return;
        }
    s_check_port (self, errors, idx, colon + 1, "http");
}

//  The HTTP binds, their connection bounds and the compat entry's
//  authentication: enabled, it must ask for a token, an address list or both.
static void
s_check_http (const mx_config_t *self, zlist_t *errors)
{
    s_check_bind (self, errors, S_IDX (http_bind));
    s_int_range (self, errors, S_IDX (http_max_connections), 1, 1024);
    s_int_range (self, errors, S_IDX (http_per_ip_connections), 1, self->http_max_connections);
    char *error = NULL;
    mx_cidr_list_t *allow = mx_cidr_list_parse (self->http_compat_allow, &error);
    if (!allow) {
        s_problem (self, errors, S_IDX (http_compat_allow), "%s", error);
        free (error);
    }
    mx_cidr_list_destroy (&allow);
    if (self->api_enabled) {
        s_check_bind (self, errors, S_IDX (api_bind));
        if (streq (self->api_bind, self->http_bind)
        ||  (self->http_compat_enabled && streq (self->api_bind, self->http_compat_bind)))
            s_problem (self, errors, S_IDX (api_bind),
                       "must differ from msgx.http.bind and msgx.http.compat.bind: the read API has a bind of its own");
    }
    s_int_range (self, errors, S_IDX (api_page_size), 1, 5000);
    s_int_range (self, errors, S_IDX (api_window_days), 0, 7);
    s_int_range (self, errors, S_IDX (api_readers), 1, 16);
    s_int_range (self, errors, S_IDX (api_nice), -20, 19);
    s_int_range (self, errors, S_IDX (api_cache_flights), 0, 1000000);
    s_int_range (self, errors, S_IDX (api_cache_bytes), 0, 1073741824);
    if (!self->http_compat_enabled)
        return;
    s_check_bind (self, errors, S_IDX (http_compat_bind));
    if (streq (self->http_compat_bind, self->http_bind))
        s_problem (self, errors, S_IDX (http_compat_bind),
                   "must differ from msgx.http.bind: the write entry has a bind of its own");
    if (*self->http_compat_token_file == '\0' && *self->http_compat_allow == '\0')
        s_problem (self, errors, S_IDX (http_compat_enabled),
                   "the compat entry writes to the mailbox: set msgx.http.compat.token-file,"
                   " msgx.http.compat.allow or both");
}

static void
s_check_topic (const mx_config_t *self, zlist_t *errors, int idx)
{
    const char *topic = *(char **) s_member (self, idx);
    size_t length = strlen (topic);
    bool valid = length > 0 && length <= 249 && !streq (topic, ".") && !streq (topic, "..");
    for (const char *scan = topic; *scan && valid; scan++)
        valid = isalnum ((unsigned char) *scan) || strchr ("._-", *scan);
    if (!valid)
        s_problem (self, errors, idx,
                   "not a Kafka topic name (1..249 of letters, digits, '.', '_', '-')");
}

const char *
mx_config_topic (const mx_config_t *self, bool schd, char buf [MX_CONFIG_TOPIC_BUFSIZE])
{
    snprintf (buf, MX_CONFIG_TOPIC_BUFSIZE, "%s%s", schd ? self->kafka_topic_schd : self->kafka_topic_msg,
              self->shadow ? self->shadow_topic_suffix : "");
    return buf;
}

const char *
mx_config_ref_topic (const mx_config_t *self, char buf [MX_CONFIG_TOPIC_BUFSIZE])
{
    snprintf (buf, MX_CONFIG_TOPIC_BUFSIZE, "%s%s", self->kafka_topic_reference,
              self->shadow ? self->shadow_topic_suffix : "");
    return buf;
}

bool
mx_config_publishes (const mx_config_t *self)
{
    return !self->shadow || self->shadow_publish;
}

bool
mx_config_exactly_once (const mx_config_t *self)
{
    return !streq (self->delivery_semantics, "at-least-once");
}

//  A shadow instance never publishes to the production topics: its topics
//  carry the suffix, which must keep them valid names.
static void
s_check_shadow (const mx_config_t *self, zlist_t *errors)
{
    if (!self->shadow || !self->shadow_publish)
        return;
    if (*self->shadow_topic_suffix == '\0') {
        s_problem (self, errors, S_IDX (shadow_topic_suffix),
                   "msgx.shadow = true would publish to the production topics: set a suffix"
                   " (e.g. .shadow) or msgx.shadow-publish = false");
        return;
    }
    char topic [MX_CONFIG_TOPIC_BUFSIZE];
    for (int which = 0; which < 3; which++) {
        if (which < 2)
            mx_config_topic (self, which == 1, topic);
        else
            mx_config_ref_topic (self, topic);
        size_t length = strlen (topic);
        bool valid = length <= 249;
        for (const char *scan = self->shadow_topic_suffix; *scan && valid; scan++)
            valid = isalnum ((unsigned char) *scan) || strchr ("._-", *scan);
        if (!valid) {
            s_problem (self, errors, S_IDX (shadow_topic_suffix),
                       "makes no Kafka topic name of the production ones (letters, digits, '.', '_', '-';"
                       " 249 in all)");
            return;
        }
    }
}

static void
s_check_cutover (const mx_config_t *self, zlist_t *errors)
{
    const char *text = self->pipeline_cutover_watermark;
    if (*text == '\0' || streq (text, "min") || streq (text, "zero") || streq (text, "max"))
        return;
    bool digits = isdigit ((unsigned char) text [0]);
    for (const char *scan = text; *scan && digits; scan++)
        digits = isdigit ((unsigned char) *scan);
    int64_t id;
    if (!digits || s_parse_int (text, &id) == -1 || id < 1)
        s_problem (self, errors, S_IDX (pipeline_cutover_watermark),
                   "expected empty (no seeding), min, zero, max or a positive mailbox ID");
}

static void
s_check_mysql_timeout (const mx_config_t *self, zlist_t *errors, int idx)
{
    //  MariaDB takes whole seconds; 0 would mean "wait forever".
    int64_t ms = *(int64_t *) s_member (self, idx);
    if (ms < S_MS_SECOND || ms % S_MS_SECOND)
        s_problem (self, errors, idx, "must be whole seconds, at least 1s");
}

//  An offset, never a zone name: named zones need the server's time zone
//  tables and have DST gaps where DATETIME values are ambiguous. The text
//  is bound as a value, so the strict form only guards against typos.
static void
s_check_mysql_time_zone (const mx_config_t *self, zlist_t *errors)
{
    const char *zone = self->mailbox_shared_mysql_time_zone;
    bool valid = strlen (zone) == 6 && (zone [0] == '+' || zone [0] == '-')
              && isdigit ((unsigned char) zone [1]) && isdigit ((unsigned char) zone [2])
              && zone [3] == ':'
              && isdigit ((unsigned char) zone [4]) && isdigit ((unsigned char) zone [5]);
    if (!valid)
        s_problem (self, errors, S_IDX (mailbox_shared_mysql_time_zone),
                   "expected an offset from UTC as +HH:MM or -HH:MM, e.g. +08:00");
    else
    if ((zone [1] - '0') * 10 + (zone [2] - '0') > 14 || zone [4] > '5')
        s_problem (self, errors, S_IDX (mailbox_shared_mysql_time_zone),
                   "offset out of range (hours 00..14, minutes 00..59)");
}

//  The pipeline keys (msgx.pipeline.*).
static void
s_check_pipeline (const mx_config_t *self, zlist_t *problems)
{
    s_duration_range (self, problems, S_IDX (pipeline_poll_interval), 1, INT64_MAX);
    s_duration_range (self, problems, S_IDX (pipeline_poll_fast), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (pipeline_claim_batch), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (pipeline_max_attempts), 1, INT32_MAX);
    if (self->pipeline_backoff_ms.count == 0)
        s_problem (self, problems, S_IDX (pipeline_backoff_ms),
                   "needs at least one delay, e.g. 1000,2000,4000");
    for (size_t i = 0; i < self->pipeline_backoff_ms.count; i++)
        if (self->pipeline_backoff_ms.items [i] <= 0) {
            s_problem (self, problems, S_IDX (pipeline_backoff_ms),
                       "every delay must be more than 0");
            break;
        }
    s_duration_range (self, problems, S_IDX (pipeline_backoff_cap_ms), 1, INT64_MAX);
    s_duration_range (self, problems, S_IDX (pipeline_head_deadline), 1, INT64_MAX);
    s_duration_range (self, problems, S_IDX (pipeline_max_commit_delay), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (pipeline_crash_loop_starts), 1, INT32_MAX);
    s_duration_range (self, problems, S_IDX (pipeline_message_deadline), 1000, INT64_MAX);
    if (self->pipeline_overdue_backfill < MX_CONFIG_OVERDUE_BACKFILL_FLOOR_MS)
        s_problem (self, problems, S_IDX (pipeline_overdue_backfill),
                   "below its floor of 1 day (1d); it must outlast backfill retries, never lower it for speed");
    s_duration_range (self, problems, S_IDX (pipeline_backfill_period), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (pipeline_backfill_batch), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (pipeline_backfill_max_attempts), 1, INT32_MAX);
    if (s_duration_range (self, problems, S_IDX (pipeline_backfill_backoff), 1, INT64_MAX) == 0
    &&  self->pipeline_backfill_backoff_cap < self->pipeline_backfill_backoff)
        s_problem (self, problems, S_IDX (pipeline_backfill_backoff_cap),
                   "must not be below msgx.pipeline.backfill-backoff");
    s_int_range (self, problems, S_IDX (pipeline_delivery_batch), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (pipeline_process_batch), 1, 10000);
    s_int_range (self, problems, S_IDX (pipeline_batch_bytes), 65536, INT64_MAX);
    s_int_range (self, problems, S_IDX (pipeline_delivery_drain_rounds), 1, INT64_MAX);
    s_check_cutover (self, problems);
    s_int_range (self, problems, S_IDX (pipeline_late_detect_batch), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (pipeline_late_detect_ids), 1, 10000000);
}

static bool
s_one_of (const char *value, const char *const *allowed)
{
    for (; *allowed; allowed++)
        if (streq (value, *allowed))
            return true;
    return false;
}

static bool
s_kafka_encrypted (const mx_config_t *self)
{
    return streq (self->kafka_security_protocol, "ssl") || streq (self->kafka_security_protocol, "sasl_ssl");
}

static bool
s_kafka_sasl (const mx_config_t *self)
{
    return s_starts_with (self->kafka_security_protocol, "sasl_");
}

//  msgx.kafka.security.*: each setting only where its protocol uses it,
//  so a half-done TLS or SASL setup is refused rather than ignored.
static void
s_check_kafka_security (const mx_config_t *self, zlist_t *problems, bool prod)
{
    static const char *protocols [] = { "plaintext", "ssl", "sasl_plaintext", "sasl_ssl", NULL };
    static const char *mechanisms [] = { "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", NULL };
    static const char *algorithms [] = { "https", "none", NULL };
    if (!s_one_of (self->kafka_security_protocol, protocols)) {
        s_problem (self, problems, S_IDX (kafka_security_protocol),
                   "must be plaintext, ssl, sasl_plaintext or sasl_ssl");
        return;
    }
    if (!*self->kafka_bootstrap_servers && !streq (self->kafka_security_protocol, "plaintext"))
        s_problem (self, problems, S_IDX (kafka_security_protocol),
                   "the embedded mock cluster (no msgx.kafka.bootstrap-servers) speaks plaintext only");
    if (prod && !s_kafka_encrypted (self) && !self->kafka_security_allow_plaintext)
        s_problem (self, problems, S_IDX (kafka_security_protocol),
                   "prod refuses unencrypted Kafka: use ssl or sasl_ssl, or set "
                   "msgx.kafka.security.allow-plaintext = true for a network you trust");
    int ssl_keys [] = { S_IDX (kafka_security_ssl_ca_location), S_IDX (kafka_security_ssl_certificate_location),
                        S_IDX (kafka_security_ssl_key_location), S_IDX (kafka_security_ssl_key_password) };
    for (size_t i = 0; i < sizeof ssl_keys / sizeof ssl_keys [0]; i++)
        if (!s_kafka_encrypted (self) && **(char **) s_member (self, ssl_keys [i]))
            s_problem (self, problems, ssl_keys [i],
                       "applies only with msgx.kafka.security.protocol ssl or sasl_ssl");
    if (!*self->kafka_security_ssl_certificate_location != !*self->kafka_security_ssl_key_location)
        s_problem (self, problems, S_IDX (kafka_security_ssl_key_location),
                   "a client certificate needs its key and a key its certificate "
                   "(msgx.kafka.security.ssl.certificate.location)");
    if (!s_one_of (self->kafka_security_ssl_endpoint_identification_algorithm, algorithms))
        s_problem (self, problems, S_IDX (kafka_security_ssl_endpoint_identification_algorithm),
                   "must be https or none");
    else
    if (prod && streq (self->kafka_security_ssl_endpoint_identification_algorithm, "none"))
        s_problem (self, problems, S_IDX (kafka_security_ssl_endpoint_identification_algorithm),
                   "prod checks the brokers' host names: a certificate for any name is accepted only in dev");
    int sasl_keys [] = { S_IDX (kafka_security_sasl_mechanisms), S_IDX (kafka_security_sasl_username),
                         S_IDX (kafka_security_sasl_password) };
    for (size_t i = 0; i < sizeof sasl_keys / sizeof sasl_keys [0]; i++) {
        bool set = **(char **) s_member (self, sasl_keys [i]);
        if (!s_kafka_sasl (self) && set)
            s_problem (self, problems, sasl_keys [i],
                       "applies only with msgx.kafka.security.protocol sasl_plaintext or sasl_ssl");
        else
        if (s_kafka_sasl (self) && !set)
            s_problem (self, problems, sasl_keys [i],
                       "must be set with msgx.kafka.security.protocol %s", self->kafka_security_protocol);
    }
    if (*self->kafka_security_sasl_mechanisms && !s_one_of (self->kafka_security_sasl_mechanisms, mechanisms))
        s_problem (self, problems, S_IDX (kafka_security_sasl_mechanisms),
                   "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (OAUTHBEARER needs a token "
                   "provider msgxd does not configure)");
}

//  mailbox.shared-mysql.ssl-*: prod verifies the server unless it is on
//  this host (a Unix socket) or the operator says otherwise.
static void
s_check_mailbox_tls (const mx_config_t *self, zlist_t *problems, bool prod)
{
    static const char *modes [] = { "disabled", "required", "verify-full", NULL };
    if (!s_one_of (self->mailbox_shared_mysql_ssl_mode, modes)) {
        s_problem (self, problems, S_IDX (mailbox_shared_mysql_ssl_mode),
                   "must be disabled, required or verify-full");
        return;
    }
    bool tls = !streq (self->mailbox_shared_mysql_ssl_mode, "disabled");
    int files [] = { S_IDX (mailbox_shared_mysql_ssl_ca), S_IDX (mailbox_shared_mysql_ssl_cert),
                     S_IDX (mailbox_shared_mysql_ssl_key) };
    for (size_t i = 0; i < sizeof files / sizeof files [0]; i++)
        if (!tls && **(char **) s_member (self, files [i]))
            s_problem (self, problems, files [i],
                       "applies only with mailbox.shared-mysql.ssl-mode required or verify-full");
    if (!*self->mailbox_shared_mysql_ssl_cert != !*self->mailbox_shared_mysql_ssl_key)
        s_problem (self, problems, S_IDX (mailbox_shared_mysql_ssl_key),
                   "a client certificate needs its key and a key its certificate (mailbox.shared-mysql.ssl-cert)");
    if (prod && self->mailbox_shared_mysql_enabled && !*self->mailbox_shared_mysql_socket
    &&  !streq (self->mailbox_shared_mysql_ssl_mode, "verify-full") && !self->mailbox_shared_mysql_allow_unverified)
        s_problem (self, problems, S_IDX (mailbox_shared_mysql_ssl_mode),
                   "prod verifies the mailbox server: set verify-full (with mailbox.shared-mysql.ssl-ca), or "
                   "mailbox.shared-mysql.allow-unverified = true for a network you trust");
}

char *
mx_config_pg_sslmode (const char *conninfo)
{
    char *parse_error = NULL;
    PQconninfoOption *options = PQconninfoParse (conninfo, &parse_error);
    PQfreemem (parse_error);
    if (!options)
        return NULL;
    const char *mode = NULL;
    for (PQconninfoOption *option = options; option->keyword; option++)
        if (option->val && *option->val) {
            if (streq (option->keyword, "sslmode"))
                mode = option->val;
            else
            if (streq (option->keyword, "requiressl") && !mode && streq (option->val, "1"))
                mode = "require";
        }
    if (!mode)
        mode = getenv ("PGSSLMODE");
    char *copy = strdup (mode && *mode? mode: "prefer");
    assert (copy);
    PQconninfoFree (options);
    return copy;
}

static void
s_check_pg_tls (const mx_config_t *self, zlist_t *problems, bool prod)
{
    if (!prod || self->pg_allow_unverified)
        return;
    char *mode = mx_config_pg_sslmode (self->pg_conninfo);
    if (mode && !streq (mode, "verify-ca") && !streq (mode, "verify-full"))
        s_problem (self, problems, S_IDX (pg_conninfo),
                   "sslmode %s does not verify the server: prod needs sslmode=verify-full (or verify-ca) "
                   "with sslrootcert, or msgx.pg.allow-unverified = true for a network you trust", mode);
    free (mode);
}

//  Files others can read leak what is in them; prod refuses them.
static void
s_check_permissions (const mx_config_t *self, zlist_t *problems, bool prod)
{
    if (!prod)
        return;
    if (self->path_ && (self->file_mode_ & 007))
        s_add (problems, "config file %s is readable by others (mode %04o): chmod o-rwx it (0640, group msgx)",
               self->path_, self->file_mode_);
    for (int idx = 0; idx < MX_CONFIG_KEY_COUNT; idx++)
        if (self->secret_file_ [idx] && (self->secret_mode_ [idx] & 007))
            s_add (problems, "%s: the secret file %s is readable by others (mode %04o): chmod o-rwx it",
                   s_keys [idx].key, self->secret_file_ [idx], self->secret_mode_ [idx]);
}

//  host:port of a tcp:// endpoint names a loopback address: 127.0.0.0/8,
//  [::1] or localhost; never a wildcard or an interface name.
static bool
s_loopback_endpoint (const char *address)
{
    const char *colon = strrchr (address, ':');
    if (!colon)
        return false;
    char *host = strndup (address, (size_t) (colon - address));
    assert (host);
    bool loopback = streq (host, "localhost") || streq (host, "[::1]");
    if (!loopback && s_starts_with (host, "127.")) {
        //  Four decimal parts: 127.x.y.z.
        int parts = 0;
        loopback = true;
        for (const char *scan = host; *scan && loopback; parts++) {
            size_t digits = strspn (scan, "0123456789");
            loopback = digits >= 1 && digits <= 3 && atoi (scan) <= 255;
            scan += digits;
            if (*scan == '.')
                scan++;
            else
            if (*scan)
                loopback = false;
        }
        loopback = loopback && parts == 4;
    }
    free (host);
    return loopback;
}

//  msgx.admin.*: the endpoint and what protects it.
static void
s_check_admin (const mx_config_t *self, zlist_t *problems)
{
    const char *admin = self->admin_endpoint;
    if (!((s_starts_with (admin, "ipc://") || s_starts_with (admin, "tcp://"))
    &&   strlen (admin) > strlen ("ipc://")))
        s_problem (self, problems, S_IDX (admin_endpoint),
                   "must start with ipc:// or tcp:// followed by an address");
    bool curve = *self->admin_curve_server_cert || *self->admin_curve_clients;
    if (s_starts_with (admin, "tcp://") && !curve && !s_loopback_endpoint (admin + strlen ("tcp://")))
        s_problem (self, problems, S_IDX (admin_endpoint),
                   "a tcp:// admin endpoint without CURVE has no authentication, so it must be on a loopback "
                   "address (tcp://127.0.0.1:PORT or tcp://[::1]:PORT); set msgx.admin.curve.server-cert "
                   "and msgx.admin.curve.clients, or use ipc://");
    if (curve && !s_starts_with (admin, "tcp://"))
        s_problem (self, problems, S_IDX (admin_curve_server_cert),
                   "CURVE applies to a tcp:// msgx.admin.endpoint only");
    else
    if (curve && (!*self->admin_curve_server_cert || !*self->admin_curve_clients))
        s_problem (self, problems, S_IDX (admin_curve_clients),
                   "CURVE needs both msgx.admin.curve.server-cert and msgx.admin.curve.clients");
    s_int_range (self, problems, S_IDX (admin_max_request_bytes), 1024, 16 * 1024 * 1024);
    //  Whether the group exists is checked where the socket is made: the
    //  configuration may be checked on a host without it.
    if (*self->admin_group && !s_starts_with (admin, "ipc://"))
        s_problem (self, problems, S_IDX (admin_group),
                   "applies to an ipc:// msgx.admin.endpoint only (tcp:// has no permissions)");
}

int
mx_config_validate (const mx_config_t *self, zlist_t *errors)
{
    assert (self);
    //  Count problems in our own list so a NULL errors still gives the answer.
    zlist_t *problems = zlist_new ();
    assert (problems);
    zlist_autofree (problems);

    //  General
    bool prod = streq (self->profile, "prod");
    if (!prod && !streq (self->profile, "dev"))
        s_problem (self, problems, S_IDX (profile), "must be dev or prod");
    if (!streq (self->log_level, "debug") && !streq (self->log_level, "info")
    &&  !streq (self->log_level, "warn") && !streq (self->log_level, "error"))
        s_problem (self, problems, S_IDX (log_level), "must be debug, info, warn or error");
    if (prod && self->stubs)
        s_problem (self, problems, S_IDX (stubs), "stubs are refused in prod (msgx.profile = prod)");

    s_check_permissions (self, problems, prod);

    //  PostgreSQL, instance
    s_check_pg_tls (self, problems, prod);
    s_duration_range (self, problems, S_IDX (pg_statement_timeout), 1, INT32_MAX);
    s_duration_range (self, problems, S_IDX (instance_standby_retry), 1, INT64_MAX);

    s_check_pipeline (self, problems);

    //  Domain
    s_check_zone (self, problems);
    s_int_range (self, problems, S_IDX (operation_day_cutoff_hour), 0, 23);
    s_int_range (self, problems, S_IDX (codec_max_message_bytes), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (codec_max_attributes), 1, INT32_MAX);
    s_int_range (self, problems, S_IDX (codec_max_nodes), 1, INT64_MAX);
    //  libxml2's own ceilings without XML_PARSE_HUGE.
    s_int_range (self, problems, S_IDX (codec_max_depth), 1, 256);
    s_int_range (self, problems, S_IDX (codec_max_text_pieces), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (codec_max_name_length), 1, 50000);
    s_int_range (self, problems, S_IDX (codec_max_namespaces), 1, INT32_MAX);
    s_int_range (self, problems, S_IDX (codec_max_distinct_names), 1, INT32_MAX);
    s_duration_range (self, problems, S_IDX (schd_flush_period), 1, INT64_MAX);
    s_int_range (self, problems, S_IDX (schd_flush_limit), 1, INT64_MAX);

    //  Jobs
    if (self->history_run_at < 0)
        s_problem (self, problems, S_IDX (history_run_at), "must be a time of day HH:MM");
    s_int_range (self, problems, S_IDX (history_retention_days), 1, INT32_MAX);
    s_int_range (self, problems, S_IDX (history_quiet_days), 0, INT32_MAX);
    s_int_range (self, problems, S_IDX (history_snap_log_retention_days), 1, INT32_MAX);
    s_int_range (self, problems, S_IDX (archive_after_days), 1, INT32_MAX);
    s_duration_range (self, problems, S_IDX (outbox_retention), 0, INT64_MAX);
    s_duration_range (self, problems, S_IDX (outbox_purge_period), 1000, INT64_MAX);
    s_duration_range (self, problems, S_IDX (requests_timeout), 1, INT64_MAX);
    s_duration_range (self, problems, S_IDX (http_idle_timeout), 1000, 3600 * 1000);
    s_duration_range (self, problems, S_IDX (api_statement_timeout), 100, 60 * 1000);

    //  Kafka: producer safety is not tunable (SPEC 5, seed D3).
    if (*self->kafka_bootstrap_servers) {
        zlist_t *brokers = s_split (self->kafka_bootstrap_servers);
        if (!brokers)
            s_problem (self, problems, S_IDX (kafka_bootstrap_servers),
                       "expected host:port,host:port without empty items");
        zlist_destroy (&brokers);
    }
    else
    if (prod)
        s_problem (self, problems, S_IDX (kafka_bootstrap_servers),
                   "prod needs msgx.kafka.bootstrap-servers; the embedded mock cluster is dev only");
    s_check_topic (self, problems, S_IDX (kafka_topic_msg));
    s_check_topic (self, problems, S_IDX (kafka_topic_schd));
    s_check_topic (self, problems, S_IDX (kafka_topic_reference));
    if (streq (self->kafka_topic_msg, self->kafka_topic_schd))
        s_problem (self, problems, S_IDX (kafka_topic_schd),
                   "must differ from msgx.kafka.topic.msg (it is log-compacted)");
    if (streq (self->kafka_topic_reference, self->kafka_topic_msg)
    ||  streq (self->kafka_topic_reference, self->kafka_topic_schd))
        s_problem (self, problems, S_IDX (kafka_topic_reference),
                   "must differ from the flight topics (its keys are LIST:KEY, and it is log-compacted)");
    s_check_shadow (self, problems);
    if (!streq (self->kafka_acks, "all") && !streq (self->kafka_acks, "-1"))
        s_problem (self, problems, S_IDX (kafka_acks),
                   "weakens producer safety; must be all (or -1)");
    if (!self->kafka_enable_idempotence)
        s_problem (self, problems, S_IDX (kafka_enable_idempotence),
                   "weakens producer safety; must be true");
    if (self->kafka_max_in_flight < 1 || self->kafka_max_in_flight > 5)
        s_problem (self, problems, S_IDX (kafka_max_in_flight),
                   "weakens producer safety; must be between 1 and 5");
    s_duration_range (self, problems, S_IDX (kafka_linger_ms), 0, 900000);
    if (s_duration_range (self, problems, S_IDX (kafka_delivery_timeout), 1, INT32_MAX) == 0
    &&  self->kafka_delivery_timeout <= self->kafka_linger_ms)
        s_problem (self, problems, S_IDX (kafka_delivery_timeout),
                   "must be more than msgx.kafka.linger-ms");
    s_check_kafka_security (self, problems, prod);
    s_int_range (self, problems, S_IDX (delivery_max_attempts), 1, INT32_MAX);
    s_int_range (self, problems, S_IDX (republish_rate), 1, 100000);
    if (self->delivery_backoff.count == 0)
        s_problem (self, problems, S_IDX (delivery_backoff), "needs at least one delay, e.g. 1s,5s,30s,1m");
    for (size_t i = 0; i < self->delivery_backoff.count; i++)
        if (self->delivery_backoff.items [i] <= 0) {
            s_problem (self, problems, S_IDX (delivery_backoff), "every delay must be more than 0");
            break;
        }
    if (!streq (self->api_read_during_commit, "previous") && !streq (self->api_read_during_commit, "wait"))
        s_problem (self, problems, S_IDX (api_read_during_commit), "must be previous or wait");
    if (!streq (self->delivery_semantics, "exactly-once") && !streq (self->delivery_semantics, "at-least-once"))
        s_problem (self, problems, S_IDX (delivery_semantics), "must be exactly-once or at-least-once");
    s_duration_range (self, problems, S_IDX (delivery_inspect_timeout), 100, 600000);

    //  Endpoints
    s_check_http (self, problems);
    s_int_range (self, problems, S_IDX (http_max_body_bytes), 1, INT64_MAX);
    s_check_admin (self, problems);

    //  Shared mailbox
    s_int_range (self, problems, S_IDX (mailbox_shared_mysql_port), 1, 65535);
    s_check_mysql_timeout (self, problems, S_IDX (mailbox_shared_mysql_connect_timeout));
    s_check_mysql_timeout (self, problems, S_IDX (mailbox_shared_mysql_read_timeout));
    s_check_mysql_timeout (self, problems, S_IDX (mailbox_shared_mysql_write_timeout));
    s_check_mysql_time_zone (self, problems);
    s_check_mailbox_tls (self, problems, prod);
    if (self->mailbox_shared_mysql_enabled) {
        if (*self->mailbox_shared_mysql_database == '\0')
            s_problem (self, problems, S_IDX (mailbox_shared_mysql_database),
                       "must be set when mailbox.shared-mysql.enabled = true");
        if (*self->mailbox_shared_mysql_host == '\0' && *self->mailbox_shared_mysql_socket == '\0')
            s_problem (self, problems, S_IDX (mailbox_shared_mysql_host),
                       "host or mailbox.shared-mysql.socket must be set when the mailbox is enabled");
        //  MariaDB would fall back to the OS user's name: never what prod means.
        if (prod && *self->mailbox_shared_mysql_user == '\0')
            s_problem (self, problems, S_IDX (mailbox_shared_mysql_user),
                       "must be set in prod when mailbox.shared-mysql.enabled = true");
    }
    if (*self->mailbox_processed_value == '\0')
        s_problem (self, problems, S_IDX (mailbox_processed_value), "must not be empty");
    int routing [] = { S_IDX (mailbox_outbound_routing_rqfd), S_IDX (mailbox_outbound_routing_rqrd) };
    for (size_t i = 0; i < sizeof routing / sizeof routing [0]; i++) {
        size_t length = strlen (*(char **) s_member (self, routing [i]));
        if (length < 1 || length > 23)
            s_problem (self, problems, routing [i], "must be 1..23 characters (COUTMSGS.ROUTINGID)");
    }

    int rc = zlist_size (problems)? -1: 0;
    for (char *line = (char *) zlist_first (problems); line; line = (char *) zlist_next (problems))
        s_add (errors, "%s", line);
    zlist_destroy (&problems);
    return rc;
}


//  --------------------------------------------------------------------------
//  Loading

//  What a valid configuration allows but an operator must keep seeing:
//  warnings, logged at every start.
static void
s_notices (const mx_config_t *self, zlist_t *warnings)
{
    bool prod = streq (self->profile, "prod");
    if (prod && !s_kafka_encrypted (self))
        s_add (warnings, "msgx.kafka.security.allow-plaintext = true: traffic to the Kafka brokers "
               "(protocol %s) is not encrypted%s", self->kafka_security_protocol,
               s_kafka_sasl (self)? ", and the SASL password crosses the network in the clear": "");
    if (prod && self->pg_allow_unverified)
        s_add (warnings, "msgx.pg.allow-unverified = true: the PostgreSQL server's certificate is not verified");
    if (prod && self->mailbox_shared_mysql_enabled && self->mailbox_shared_mysql_allow_unverified
    &&  !streq (self->mailbox_shared_mysql_ssl_mode, "verify-full"))
        s_add (warnings, "mailbox.shared-mysql.allow-unverified = true: the mailbox server is not verified "
               "(ssl-mode %s)", self->mailbox_shared_mysql_ssl_mode);
}

mx_config_t *
mx_config_load (const char *path, char **envp, zlist_t **errors, zlist_t **warnings)
{
    assert (errors);
    zlist_t *error_list = s_list_ensure (errors);
    zlist_t *warning_list = s_list_ensure (warnings);
    size_t before = zlist_size (error_list);

    mx_config_t *self = mx_config_new_defaults ();
    if (path)
        s_load_file (self, path, error_list);
    s_load_env (self, envp, error_list, warning_list);
    //  Validate even after parse errors: the operator gets every problem in
    //  one go (keys that failed to parse keep their previous value).
    mx_config_validate (self, error_list);

    if (zlist_size (error_list) != before)
        mx_config_destroy (&self);
    else
        s_notices (self, warning_list);
    return self;
}
