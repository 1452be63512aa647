/*  fuzz_driver - a plain main for a fuzz target: feeds every file named on
    the command line (folders: every regular file in them, sorted) to
    LLVMFuzzerTestOneInput once. Used by the fuzz smoke tests of the normal
    build, so the ordinary ASan/UBSan run covers the harnesses too, and to
    replay a crash file without libFuzzer.

    Exit 0 after at least one input, 2 when there was nothing to run or a
    file could not be read.
*/
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static int
s_run_file (const char *path)
{
    FILE *file = fopen (path, "rb");
    if (!file) {
        fprintf (stderr, "fuzz_driver: cannot open %s\n", path);
        return -1;
    }
    size_t capacity = 4096, size = 0;
    uint8_t *data = malloc (capacity);
    while (data) {
        size += fread (data + size, 1, capacity - size, file);
        if (size < capacity)
            break;
        capacity *= 2;
        uint8_t *bigger = realloc (data, capacity);
        if (!bigger) {
            free (data);
            data = NULL;
        }
        else
            data = bigger;
    }
    int failed = ferror (file) || !data;
    fclose (file);
    if (failed) {
        free (data);
        fprintf (stderr, "fuzz_driver: cannot read %s\n", path);
        return -1;
    }
    //  A copy of exactly size bytes, so ASan sees any read past the end.
    uint8_t *exact = malloc (size ? size : 1);
    if (!exact) {
        free (data);
        return -1;
    }
    memcpy (exact, data, size);
    free (data);
    LLVMFuzzerTestOneInput (exact, size);
    free (exact);
    return 0;
}

static int
s_compare (const void *a, const void *b)
{
    return strcmp (*(char *const *) a, *(char *const *) b);
}

//  Runs path (a file, or each regular file of a folder); adds to *count.
static int
s_run (const char *path, size_t *count)
{
    struct stat st;
    if (stat (path, &st)) {
        fprintf (stderr, "fuzz_driver: no such file or folder: %s\n", path);
        return -1;
    }
    if (!S_ISDIR (st.st_mode)) {
        if (s_run_file (path))
            return -1;
        (*count)++;
        return 0;
    }
    DIR *dir = opendir (path);
    if (!dir) {
        fprintf (stderr, "fuzz_driver: cannot list %s\n", path);
        return -1;
    }
    size_t used = 0, capacity = 64;
    char **names = malloc (capacity * sizeof (char *));
    struct dirent *entry;
    while (names && (entry = readdir (dir))) {
        if (entry->d_name [0] == '.')
            continue;
        if (used == capacity) {
            capacity *= 2;
            char **bigger = realloc (names, capacity * sizeof (char *));
            if (!bigger)
                break;
            names = bigger;
        }
        if (asprintf (&names [used], "%s/%s", path, entry->d_name) < 0)
            break;
        used++;
    }
    closedir (dir);
    if (!names)
        return -1;
    qsort (names, used, sizeof (char *), s_compare);
    int rc = 0;
    for (size_t i = 0; i < used; i++) {
        if (rc == 0 && stat (names [i], &st) == 0 && S_ISREG (st.st_mode)) {
            if (s_run_file (names [i]))
                rc = -1;
            else
                (*count)++;
        }
        free (names [i]);
    }
    free (names);
    return rc;
}

int
main (int argc, char *argv [])
{
    size_t count = 0;
    for (int i = 1; i < argc; i++)
        if (s_run (argv [i], &count))
            return 2;
    printf ("fuzz_driver: %zu input(s) run\n", count);
    return count > 0 ? 0 : 2;
}
