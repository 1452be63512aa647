/*  msgx-shape - hostile SIS messages, and the shape of messages.

    msgx-shape KIND BYTES        one message of KIND, exactly BYTES long, to stdout
    msgx-shape --list            the kinds
    msgx-shape --measure FILE... the shape of each file (what the codec's
                                 msgx.codec.max-* bounds count), and the
                                 largest of each over all files

    Exit 0, 1 when a file cannot be read, 2 on usage errors.
*/
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_shape.h"
#include "mx_xml_shape.h"

static int
s_usage (void)
{
    fprintf (stderr, "usage: msgx-shape KIND BYTES | --list | --measure FILE...\n");
    return 2;
}

static void
s_print (const char *what, const mx_xml_shape_t *shape)
{
    printf ("%s", what);
#define S_FIELD(member, key, doc) printf (" %s=%zu", key + 4, shape->member);
    MX_XML_BOUNDS (S_FIELD)
#undef S_FIELD
    printf ("\n");
}

static int
s_measure (int count, char **paths)
{
    mx_xml_shape_t none = { 0 }, largest = { 0 };
    int rc = 0;
    for (int i = 0; i < count; i++) {
        size_t size;
        char *data = mx_shape_read_file (paths [i], &size);
        if (!data) {
            fprintf (stderr, "msgx-shape: cannot read %s\n", paths [i]);
            rc = 1;
            continue;
        }
        mx_xml_shape_t seen;
        mx_xml_shape_check (data, size, false, &none, &seen, NULL);
        free (data);
        s_print (paths [i], &seen);
#define S_MAX(member, key, doc) \
        if (seen.member > largest.member) largest.member = seen.member;
        MX_XML_BOUNDS (S_MAX)
#undef S_MAX
    }
    s_print ("largest", &largest);
    return rc;
}

int
main (int argc, char *argv [])
{
    if (argc >= 2 && strcmp (argv [1], "--list") == 0) {
        for (int i = 0; i < MX_SHAPE_COUNT; i++)
            printf ("%-10s %s\n", mx_shape_name (i), mx_shape_doc (i));
        return 0;
    }
    if (argc >= 3 && strcmp (argv [1], "--measure") == 0)
        return s_measure (argc - 2, argv + 2);
    if (argc != 3)
        return s_usage ();
    int kind = mx_shape_find (argv [1]);
    char *end = NULL;
    unsigned long long bytes = strtoull (argv [2], &end, 10);
    if (kind < 0 || !end || *end || bytes == 0)
        return s_usage ();
    size_t size;
    char *text = mx_shape_make ((mx_shape_kind_t) kind, (size_t) bytes, &size);
    if (!text) {
        fprintf (stderr, "msgx-shape: out of memory\n");
        return 1;
    }
    fwrite (text, 1, size, stdout);
    free (text);
    return 0;
}
