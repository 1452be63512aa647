/*  make_corpus - seed corpora for the fuzz targets.

    usage: make_corpus SIS_DIR COMPAT_DIR [SAMPLES_DIR [ADMIN_DIR]]

    SIS_DIR gets every sample message and generated messages of every kind
    of mx_gen (schedules, FLOP updates of every subtype, FDEL in both forms,
    duplicates, malformed, ignored, unsupported, reference lists, ad-hoc,
    schedule deletions, hostile). COMPAT_DIR gets requests in the input
    format of fuzz_compat_body ("type\nlength\nbody") built from the same
    messages with the media types clients send. Files are named by content
    hash, so running it twice adds nothing. ADMIN_DIR gets admin requests
    in the input format of fuzz_admin_request (frames separated by NUL):
    every verb of mx_admin.def with the argument shapes msgxctl sends.
*/
#include <errno.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mx_cmd.h"
#include "mx_gen.h"

//  Inputs longer than the fuzzers' -max_len are only cut by libFuzzer.
#define S_MAX_INPUT ((size_t) 16384)
//  Messages of each generated kind kept.
#define S_PER_KIND 24

static uint64_t
s_fnv1a (const void *data, size_t size)
{
    const unsigned char *bytes = data;
    uint64_t hash = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++) {
        hash ^= bytes [i];
        hash *= 1099511628211ULL;
    }
    return hash;
}

static int
s_write (const char *dir, const char *prefix, const void *data, size_t size)
{
    char path [4096];
    snprintf (path, sizeof path, "%s/%s-%016llx", dir, prefix,
              (unsigned long long) s_fnv1a (data, size));
    FILE *file = fopen (path, "wb");
    if (!file || fwrite (data, 1, size, file) != size) {
        fprintf (stderr, "make_corpus: cannot write %s: %s\n", path, strerror (errno));
        if (file)
            fclose (file);
        return -1;
    }
    return fclose (file) ? -1 : 0;
}

static const char *s_types [] = {
    "application/xml", "text/xml; charset=utf-8", "TEXT/XML; Charset=\"UTF-8\"", "text/plain",
    "application/xml;charset=utf-8", "text/xml; charset=gb18030", "application/json", ""
};
#define S_TYPE_COUNT (sizeof s_types / sizeof s_types [0])

//  One SIS input, and one compat request made of it.
static int
s_add (const char *sis_dir, const char *compat_dir, const char *prefix, const char *xml,
       size_t size, size_t *count)
{
    if (size > S_MAX_INPUT)
        return 0;
    if (s_write (sis_dir, prefix, xml, size))
        return -1;
    const char *type = s_types [*count % S_TYPE_COUNT];
    char head [128];
    int length = snprintf (head, sizeof head, "%s\n%zu\n", type, size);
    char *request = malloc ((size_t) length + size);
    if (!request)
        return -1;
    memcpy (request, head, (size_t) length);
    memcpy (request + length, xml, size);
    int rc = s_write (compat_dir, prefix, request, (size_t) length + size);
    free (request);
    (*count)++;
    return rc;
}

static int
s_samples (const char *samples, const char *sis_dir, const char *compat_dir, size_t *count)
{
    DIR *dir = opendir (samples);
    if (!dir) {
        fprintf (stderr, "make_corpus: cannot list %s: %s\n", samples, strerror (errno));
        return -1;
    }
    int rc = 0;
    struct dirent *entry;
    while (rc == 0 && (entry = readdir (dir))) {
        size_t name_length = strlen (entry->d_name);
        if (name_length < 5 || strcmp (entry->d_name + name_length - 4, ".xml") != 0)
            continue;
        char path [4096];
        snprintf (path, sizeof path, "%s/%s", samples, entry->d_name);
        FILE *file = fopen (path, "rb");
        if (!file) {
            rc = -1;
            break;
        }
        char *data = malloc (S_MAX_INPUT + 1);
        size_t size = data ? fread (data, 1, S_MAX_INPUT + 1, file) : 0;
        fclose (file);
        if (data)
            rc = s_add (sis_dir, compat_dir, "sample", data, size, count);
        free (data);
    }
    closedir (dir);
    return rc;
}

static int
s_generated (const char *sis_dir, const char *compat_dir, size_t *count)
{
    mx_gen_options_t opts;
    mx_gen_options_init (&opts);
    opts.seed = 20240301;
    opts.flights = 24;
    opts.updates = 2000;
    opts.per_message = 4;
    opts.duplicate_ppm = 40000;
    opts.malformed_ppm = 80000;
    opts.ignored_ppm = 60000;
    opts.unsupported_ppm = 40000;
    opts.reference_ppm = 150000;
    opts.adhoc_ppm = 60000;
    opts.schd_delete_ppm = 40000;
    opts.hostile_ppm = 60000;
    opts.clear_ppm = 100000;
    opts.fdel_type_ppm = 500000;
    opts.oversize_bytes = 4096;
    char reason [256];
    if (mx_gen_options_check (&opts, reason, sizeof reason)) {
        fprintf (stderr, "make_corpus: generator options: %s\n", reason);
        return -1;
    }
    mx_gen_t *gen = mx_gen_new (&opts);
    size_t kept [MX_GEN_KINDS] = { 0 };
    //  Every FLOP subtype at least once, beside the per-kind quota.
    size_t subtypes = mx_gen_subtype_count ();
    char *seen = calloc (subtypes, 1);
    int rc = 0;
    mx_gen_kind_t kind;
    char *xml;
    while (rc == 0 && seen && (xml = mx_gen_next (gen, &kind))) {
        bool keep = kept [kind] < S_PER_KIND;
        const mx_gen_meta_t *meta = mx_gen_meta (gen);
        if (kind == MX_GEN_UPDATE)
            for (size_t i = 0; i < subtypes; i++)
                if (!seen [i] && (strcmp (meta->styp, mx_gen_subtype_name (i)) == 0
                              ||  strcmp (meta->type, mx_gen_subtype_name (i)) == 0)) {
                    seen [i] = 1;
                    keep = true;
                }
        if (keep) {
            kept [kind]++;
            rc = s_add (sis_dir, compat_dir, mx_gen_kind_name (kind), xml, strlen (xml), count);
        }
        free (xml);
    }
    free (seen);
    mx_gen_destroy (&gen);
    return rc;
}

//  mkdir -p
static void
s_mkdirs (const char *path)
{
    char *copy = strdup (path);
    for (char *slash = copy ? strchr (copy + 1, '/') : NULL; slash; slash = strchr (slash + 1, '/')) {
        *slash = '\0';
        mkdir (copy, 0755);
        *slash = '/';
    }
    if (copy)
        mkdir (copy, 0755);
    free (copy);
}

//  Argument objects of the shapes msgxctl sends, tried with every verb.
static const char *s_admin_args [] = {
    "{}", "{\"ids\":[1839190,1839191],\"dry_run\":true,\"os_user\":\"ops\"}",
    "{\"class\":\"EXHAUSTED\",\"yes\":true,\"os_user\":\"ops\"}", "{\"all\":true,\"dry_run\":false}",
    "{\"events\":true,\"limit\":100,\"after\":6}", "{\"msg_id\":120}", "{\"watermark\":\"max\"}",
    "{\"kind\":\"schedule\",\"from\":\"2021-01-23T00:00\",\"to\":\"2021-01-23T23:59\"}",
    "{\"kind\":\"reference\",\"list\":\"GLST\"}"
};

static int
s_admin (const char *dir, size_t *count)
{
    s_mkdirs (dir);
    for (int verb = 0; verb < MX_ADMIN_COUNT; verb++)
        for (size_t a = 0; a < sizeof s_admin_args / sizeof s_admin_args [0]; a++) {
            const char *name = mx_admin_verb ((mx_admin_t) verb);
            size_t size = strlen (name) + 1 + strlen (s_admin_args [a]);
            char *input = malloc (size + 1);
            if (!input)
                return -1;
            memcpy (input, name, strlen (name) + 1);
            memcpy (input + strlen (name) + 1, s_admin_args [a], strlen (s_admin_args [a]));
            int rc = s_write (dir, "admin", input, size);
            free (input);
            if (rc)
                return -1;
            (*count)++;
        }
    return 0;
}

int
main (int argc, char *argv [])
{
    if (argc < 3 || argc > 5) {
        fprintf (stderr, "usage: make_corpus SIS_DIR COMPAT_DIR [SAMPLES_DIR [ADMIN_DIR]]\n");
        return 2;
    }
    s_mkdirs (argv [1]);
    s_mkdirs (argv [2]);
    size_t count = 0;
    if (argc == 4 && s_samples (argv [3], argv [1], argv [2], &count))
        return 1;
    if (s_generated (argv [1], argv [2], &count))
        return 1;
    if (argc == 5 && s_admin (argv [4], &count))
        return 1;
    printf ("make_corpus: %zu seed input(s) in %s and %s\n", count, argv [1], argv [2]);
    return 0;
}
