/*  fuzz_config - the configuration loader (mx_config_load) on arbitrary
    files and environments.

    Input: the config file's text up to the first NUL byte; after it,
    environment entries "NAME=value", one a line (at most 32). The file is
    handed over as a memory file (memfd) under its /proc/self/fd path, so
    the loader reads it exactly as it reads a file on disk.

    Checked besides memory safety: a load either gives a configuration
    that validates, or at least one problem, each one line; a loaded
    configuration dumps to JSON with the mailbox password masked.
*/
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mx_config.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define S_MAX_ENV 32

static void
s_check_lines (zlist_t *lines)
{
    for (char *line = (char *) zlist_first (lines); line; line = (char *) zlist_next (lines))
        if (!*line || strchr (line, '\n'))
            abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr (data, 0, size);
    size_t file_size = nul ? (size_t) (nul - data) : size;
    int fd = memfd_create ("fuzz_config", 0);
    if (fd == -1)
        abort ();
    if (file_size && write (fd, data, file_size) != (ssize_t) file_size)
        abort ();
    char path [64];
    snprintf (path, sizeof path, "/proc/self/fd/%d", fd);

    //  The environment: lines after the NUL.
    char *env_text = NULL;
    char *envp [S_MAX_ENV + 1] = { NULL };
    if (nul) {
        env_text = strndup ((const char *) nul + 1, size - file_size - 1);
        if (!env_text)
            abort ();
        size_t count = 0;
        for (char *line = strtok (env_text, "\n"); line && count < S_MAX_ENV;
             line = strtok (NULL, "\n"))
            envp [count++] = line;
    }
    zlist_t *errors = NULL, *warnings = NULL;
    mx_config_t *config = mx_config_load (path, envp, &errors, &warnings);
    if (!errors || !warnings)
        abort ();
    s_check_lines (errors);
    s_check_lines (warnings);
    if (config) {
        if (zlist_size (errors) != 0 || mx_config_validate (config, NULL) != 0)
            abort ();
        json_t *dump = mx_config_to_json (config);
        if (!dump)
            abort ();
        json_t *password = json_object_get (dump, "mailbox.shared-mysql.password");
        if (*config->mailbox_shared_mysql_password
        &&  (!password || strcmp (json_string_value (password), "***") != 0))
            abort ();
        char *text = json_dumps (dump, JSON_COMPACT);
        if (!text)
            abort ();
        free (text);
        json_decref (dump);
        mx_config_destroy (&config);
    }
    else
    if (zlist_size (errors) == 0)
        abort ();
    zlist_destroy (&errors);
    zlist_destroy (&warnings);
    free (env_text);
    close (fd);
    return 0;
}
