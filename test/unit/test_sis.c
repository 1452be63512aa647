/*  Unit tests: the SIS envelope decoder, kinds and identity, on the real
    samples (test/data/sis/) and on hand-made and hostile input.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <libxml/parser.h>

#include "mx_sis.h"
#include "mx_testenv.h"
#include "mx_tz.h"

#define S_MAX_BYTES (16u * 1024 * 1024)

static mx_tz_t *s_zone;

static mx_sis_options_t
s_options (void)
{
    return (mx_sis_options_t) { .zone = s_zone, .max_bytes = S_MAX_BYTES };
}

static double
s_now_ms (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return (double) now.tv_sec * 1000.0 + (double) now.tv_nsec / 1e6;
}

//  An envelope with the given META values; NULL leaves the element out.
//  body follows META inside MSG.
static char *
s_message (const char *sndr, const char *seqn, const char *dttm, const char *type,
           const char *styp, const char *body)
{
    const char *names [5] = { "SNDR", "SEQN", "DTTM", "TYPE", "STYP" };
    const char *values [5] = { sndr, seqn, dttm, type, styp };
    char meta [1024] = "";
    for (int i = 0; i < 5; i++)
        if (values [i]) {
            size_t used = strlen (meta);
            snprintf (meta + used, sizeof meta - used, "\t\t<%s>%s</%s>\n",
                      names [i], values [i], names [i]);
        }
    char *xml = NULL;
    int rc = asprintf (&xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<MSG xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">\n"
        "\t<META>\n%s\t</META>\n%s\n</MSG>\n", meta, body ? body : "");
    assert_true (rc > 0);
    return xml;
}

static char *
s_flop (const char *styp, const char *body)
{
    return s_message ("AODB", "1243", "20210123053500", "FLOP", styp, body);
}

static mx_sis_msg_t *
s_decode_with (const char *xml, size_t size, const mx_sis_options_t *options)
{
    mx_sis_status_t status = MX_SIS_CODEC_ERROR;
    char *error = NULL;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, options, &status, &error);
    if (!msg)
        fail_msg ("decode failed (%s): %s", mx_sis_status_name (status), error);
    assert_int_equal (status, MX_SIS_OK);
    assert_null (error);
    return msg;
}

static mx_sis_msg_t *
s_decode (const char *xml)
{
    mx_sis_options_t options = s_options ();
    return s_decode_with (xml, strlen (xml), &options);
}

//  Decoding fails with status and an error line containing reason.
static void
s_refused_with (const char *xml, size_t size, const mx_sis_options_t *options,
                mx_sis_status_t expected, const char *reason)
{
    mx_sis_status_t status = MX_SIS_OK;
    char *error = NULL;
    mx_sis_msg_t *msg = mx_sis_decode (xml, size, options, &status, &error);
    if (msg)
        fail_msg ("decoded, expected %s '%s'", mx_sis_status_name (expected), reason);
    assert_non_null (error);
    if (status != expected || !strstr (error, reason))
        fail_msg ("got %s '%s', expected %s '%s'", mx_sis_status_name (status), error,
                  mx_sis_status_name (expected), reason);
    assert_null (strchr (error, '\n'));
    free (error);
    //  Without an error pointer: same status, nothing to free.
    status = MX_SIS_OK;
    assert_null (mx_sis_decode (xml, size, options, &status, NULL));
    assert_int_equal (status, expected);
}

static void
s_refused (const char *xml, mx_sis_status_t expected, const char *reason)
{
    mx_sis_options_t options = s_options ();
    s_refused_with (xml, strlen (xml), &options, expected, reason);
}

//  Takes ownership of xml.
static void
s_refused_free (char *xml, mx_sis_status_t expected, const char *reason)
{
    s_refused (xml, expected, reason);
    free (xml);
}

static char *
s_read_file (const char *path, size_t *size_p)
{
    FILE *file = fopen (path, "rb");
    if (!file)
        fail_msg ("cannot open %s: %s", path, strerror (errno));
    assert_int_equal (fseek (file, 0, SEEK_END), 0);
    long size = ftell (file);
    assert_true (size >= 0);
    rewind (file);
    char *data = malloc ((size_t) size + 1);
    assert_non_null (data);
    assert_int_equal (fread (data, 1, (size_t) size, file), (size_t) size);
    data [size] = '\0';
    fclose (file);
    *size_p = (size_t) size;
    return data;
}

static char *
s_samples_dir (void)
{
    const char *source = getenv ("MX_SOURCE_DIR");
    if (!source)
        fail_msg ("MX_SOURCE_DIR is not set (run through ctest)");
    char *dir = NULL;
    assert_true (asprintf (&dir, "%s/test/data/sis", source) > 0);
    return dir;
}

static char *
s_sample (const char *name, size_t *size_p)
{
    char *dir = s_samples_dir ();
    char *path = NULL;
    assert_true (asprintf (&path, "%s/%s", dir, name) > 0);
    char *data = s_read_file (path, size_p);
    free (path);
    free (dir);
    return data;
}

static int
s_xml_file (const struct dirent *entry)
{
    size_t length = strlen (entry->d_name);
    return length > 4 && strcmp (entry->d_name + length - 4, ".xml") == 0;
}

static const char *
s_body_name (const mx_sis_msg_t *msg)
{
    xmlNodePtr body = mx_sis_body (msg);
    return body ? (const char *) body->name : "(none)";
}

// ---------------------------------------------------------------------------

static void
test_every_sample (void **state)
{
    (void) state;
    char *dir = s_samples_dir ();
    struct dirent **entries = NULL;
    int count = scandir (dir, &entries, s_xml_file, alphasort);
    if (count < 0)
        fail_msg ("samples directory %s: %s", dir, strerror (errno));
    assert_true (count > 100);
    int ok = 0, malformed = 0;
    for (int i = 0; i < count; i++) {
        const char *name = entries [i]->d_name;
        char *path = NULL;
        assert_true (asprintf (&path, "%s/%s", dir, name) > 0);
        size_t size;
        char *xml = s_read_file (path, &size);
        free (path);
        mx_sis_options_t options = s_options ();
        if (strcmp (name, "ABNR_ADD_01.xml") == 0) {
            //  Extra content after the root element.
            s_refused_with (xml, size, &options, MX_SIS_MALFORMED, "not well-formed XML");
            s_refused_with (xml, size, &options, MX_SIS_MALFORMED, "line 17");
            malformed++;
        }
        else
        if (strcmp (name, "FLOP_TOBT_01.xml") == 0) {
            s_refused_with (xml, size, &options, MX_SIS_MALFORMED,
                            "payload missing: FLOP/TOBT: no <TOBT> in FLOP (line 10)");
            malformed++;
        }
        else {
            //  TYPE_STYP_NN.xml
            char type [16], styp [16];
            assert_int_equal (sscanf (name, "%15[^_]_%15[^_]_", type, styp), 2);
            mx_sis_msg_t *msg = s_decode_with (xml, size, &options);
            const mx_sis_meta_t *meta = mx_sis_meta (msg);
            assert_string_equal (meta->type, type);
            assert_string_equal (meta->styp, styp);
            assert_string_equal (meta->sndr, "AODB");
            assert_true (meta->seqn >= 1 && meta->seqn <= 999999);
            mx_sis_kind_t expected;
            const char *body;
            if (strcmp (type, "SCHD") == 0) {
                expected = MX_SIS_KIND_SCHD_DNLD;
                body = "SCHD";
            }
            else
            if (strcmp (type, "SCHS") == 0) {
                expected = MX_SIS_KIND_OTHER;
                body = "SCHS";
            }
            else
            if (strcmp (type, "FLOP") == 0) {
                expected = strcmp (styp, "FDEL") == 0 ? MX_SIS_KIND_FDEL : MX_SIS_KIND_FLOP;
                body = "FLOP";
            }
            else {
                assert_true (mx_sis_is_reference_type (type));
                expected = MX_SIS_KIND_REFERENCE;
                body = "MSG";
            }
            if (mx_sis_kind (msg) != expected)
                fail_msg ("%s: kind %s, expected %s", name, mx_sis_kind_name (mx_sis_kind (msg)),
                          mx_sis_kind_name (expected));
            assert_string_equal (s_body_name (msg), body);
            mx_sis_destroy (&msg);
            ok++;
        }
        free (xml);
        free (entries [i]);
    }
    free (entries);
    free (dir);
    print_message ("%d samples: %d decoded, %d malformed\n", count, ok, malformed);
    assert_int_equal (malformed, 2);
    assert_int_equal (ok, count - 2);
}

static void
test_sample_schedule_meta (void **state)
{
    (void) state;
    size_t size;
    char *xml = s_sample ("SCHD_DNLD_01.xml", &size);
    mx_sis_options_t options = s_options ();
    mx_sis_msg_t *msg = s_decode_with (xml, size, &options);
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    assert_string_equal (meta->sndr, "AODB");
    assert_int_equal (meta->seqn, 345935);
    assert_string_equal (meta->dttm, "20181105223126");
    //  22:31:26 in Shanghai is 14:31:26Z.
    assert_int_equal (meta->dttm_ms, 1541428286000LL);
    assert_int_equal (mx_sis_kind (msg), MX_SIS_KIND_SCHD_DNLD);
    char id [MX_SIS_IDENTITY_BUFSIZE];
    assert_string_equal (mx_sis_identity (meta, false, id, sizeof id), "AODB|SCHD|DNLD|345935");
    assert_string_equal (mx_sis_identity (meta, true, id, sizeof id),
                         "AODB|SCHD|DNLD|345935|20181105");
    //  The body decoder walks the kept document.
    xmlNodePtr body = mx_sis_body (msg);
    assert_string_equal ((const char *) body->name, "SCHD");
    mx_sis_destroy (&msg);
    mx_sis_destroy (&msg);
    assert_null (msg);
    free (xml);
}

static void
test_identity (void **state)
{
    (void) state;
    char *xml = s_message ("AODB", "001243", "20181105003000", "FLOP", "HNAG",
                           "<FLOP><FLID>15</FLID><PHAG>1</PHAG></FLOP>");
    mx_sis_msg_t *msg = s_decode (xml);
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    assert_int_equal (meta->seqn, 1243);
    char id [MX_SIS_IDENTITY_BUFSIZE];
    assert_string_equal (mx_sis_identity (meta, false, id, sizeof id), "AODB|FLOP|HNAG|1243");
    //  The local date of DTTM (00:30 local is still the 4th in UTC).
    assert_string_equal (mx_sis_identity (meta, true, id, sizeof id),
                         "AODB|FLOP|HNAG|1243|20181105");
    char date [MX_TZ_DATE_BUFSIZE];
    assert_string_equal (mx_tz_format_date (s_zone, meta->dttm_ms, date, sizeof date),
                         "2018-11-05");
    mx_sis_destroy (&msg);
    free (xml);

    //  Longest codes and SEQN fit the buffer.
    xml = s_message ("ABCDEFGH", "999999", "20181105003000", "TTTTTTTT", "SSSSSSSS", "");
    msg = s_decode (xml);
    assert_string_equal (mx_sis_identity (mx_sis_meta (msg), true, id, sizeof id),
                         "ABCDEFGH|TTTTTTTT|SSSSSSSS|999999|20181105");
    mx_sis_destroy (&msg);
    free (xml);
}

//  A listening socket that must never see a connection.
static int
s_trap_socket (int *port)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true (fd >= 0);
    struct sockaddr_in address = { .sin_family = AF_INET };
    address.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    assert_int_equal (bind (fd, (struct sockaddr *) &address, sizeof address), 0);
    assert_int_equal (listen (fd, 8), 0);
    socklen_t length = sizeof address;
    assert_int_equal (getsockname (fd, (struct sockaddr *) &address, &length), 0);
    *port = ntohs (address.sin_port);
    return fd;
}

static void
s_refused_hostile (const char *what, const char *xml)
{
    double start = s_now_ms ();
    s_refused (xml, MX_SIS_MALFORMED, "DOCTYPE not allowed");
    print_message ("%-28s refused in %.3f ms\n", what, (s_now_ms () - start) / 2);
}

static void
test_hostile_dtds (void **state)
{
    (void) state;
    const char *meta =
        "<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20210123053500</DTTM>"
        "<TYPE>FLOP</TYPE><STYP>REMC</STYP></META>";
    char *xml = NULL;
    assert_true (asprintf (&xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<!DOCTYPE MSG [\n"
        " <!ENTITY lol \"lol\">\n"
        " <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
        " <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n"
        " <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
        " <!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">\n"
        " <!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;\">\n"
        " <!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;\">\n"
        " <!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;\">\n"
        " <!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;\">\n"
        " <!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;\">\n"
        "]>\n%s<FLOP><FLID>1</FLID><REMC>&lol9;</REMC></FLOP></MSG>\n", meta) > 0);
    s_refused_hostile ("billion laughs", xml);
    free (xml);

    assert_true (asprintf (&xml,
        "<?xml version=\"1.0\"?>\n"
        "<!DOCTYPE MSG [ <!ENTITY xxe SYSTEM \"file:///etc/passwd\"> ]>\n"
        "%s<FLOP><FLID>1</FLID><REMC>&xxe;</REMC></FLOP></MSG>\n", meta) > 0);
    s_refused_hostile ("external entity (file)", xml);
    mx_sis_status_t status;
    char *error = NULL;
    mx_sis_options_t options = s_options ();
    assert_null (mx_sis_decode (xml, strlen (xml), &options, &status, &error));
    assert_null (strstr (error, "root:"));          //  nothing of the file leaks
    free (error);
    free (xml);

    //  Network: a DTD and an entity on a local port nobody may connect to.
    int port;
    int trap = s_trap_socket (&port);
    assert_true (asprintf (&xml,
        "<?xml version=\"1.0\"?>\n"
        "<!DOCTYPE MSG SYSTEM \"http://127.0.0.1:%d/evil.dtd\">\n"
        "%s<FLOP><FLID>1</FLID><REMC>x</REMC></FLOP></MSG>\n", port, meta) > 0);
    s_refused_hostile ("external DTD (http)", xml);
    free (xml);
    assert_true (asprintf (&xml,
        "<?xml version=\"1.0\"?>\n"
        "<!DOCTYPE MSG [ <!ENTITY %% remote SYSTEM \"http://127.0.0.1:%d/p.dtd\"> %%remote; ]>\n"
        "%s<FLOP><FLID>1</FLID><REMC>x</REMC></FLOP></MSG>\n", port, meta) > 0);
    s_refused_hostile ("parameter entity (http)", xml);
    free (xml);
    assert_true (asprintf (&xml,
        "<?xml version=\"1.0\"?>\n"
        "<!DOCTYPE MSG [\n"
        " <!ENTITY %% a \"<!ENTITY b 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'>\">\n"
        " %%a;\n"
        "]>\n%s<FLOP><FLID>1</FLID><REMC>&b;</REMC></FLOP></MSG>\n", meta) > 0);
    s_refused_hostile ("parameter entities", xml);
    free (xml);
    //  Nothing connected: the trap's queue is empty.
    assert_int_equal (accept (trap, NULL, NULL), -1);
    assert_true (errno == EAGAIN || errno == EWOULDBLOCK);
    close (trap);

    //  Hidden behind a comment, a processing instruction, a BOM, lower case,
    //  or an entity declaration without a DOCTYPE.
    assert_true (asprintf (&xml, "<?xml version=\"1.0\"?><!-- x --><?pi x?>\n"
                           "<!DOCTYPE MSG []>%s</MSG>", meta) > 0);
    s_refused_hostile ("after comment and PI", xml);
    free (xml);
    assert_true (asprintf (&xml, "\xEF\xBB\xBF<!doctype MSG []>%s</MSG>", meta) > 0);
    s_refused_hostile ("after BOM, lower case", xml);
    free (xml);
    assert_true (asprintf (&xml, "<!ENTITY x \"y\">%s</MSG>", meta) > 0);
    s_refused_hostile ("bare entity declaration", xml);
    free (xml);
    assert_true (asprintf (&xml, "<?xml version=\"1.0\" encoding=\"GB18030\"?>"
                           "<!DOCTYPE MSG []>%s</MSG>", meta) > 0);
    s_refused_hostile ("GB18030 with DOCTYPE", xml);
    free (xml);
    //  After the root a DOCTYPE is simply not well-formed.
    assert_true (asprintf (&xml, "%s<!DOCTYPE MSG []></MSG>", meta) > 0);
    s_refused (xml, MX_SIS_MALFORMED, "not well-formed XML");
    free (xml);
}

static void
test_markup_text_is_not_a_doctype (void **state)
{
    (void) state;
    char *xml = s_flop ("REMC", "<FLOP><FLID>1</FLID>"
                        "<REMC><![CDATA[<!DOCTYPE x> & <!ENTITY]]></REMC></FLOP>");
    //  A comment before the root may mention anything.
    char *commented = NULL;
    assert_true (asprintf (&commented, "<!-- <!DOCTYPE MSG> -->\n%s",
                           strstr (xml, "<MSG")) > 0);
    mx_sis_msg_t *msg = s_decode (commented);
    assert_int_equal (mx_sis_kind (msg), MX_SIS_KIND_FLOP);
    //  CDATA arrives as plain text (XML_PARSE_NOCDATA).
    xmlNodePtr remc = xmlLastElementChild (mx_sis_body (msg));
    assert_string_equal ((const char *) remc->name, "REMC");
    assert_int_equal (remc->children->type, XML_TEXT_NODE);
    xmlChar *text = xmlNodeGetContent (remc);
    assert_string_equal ((const char *) text, "<!DOCTYPE x> & <!ENTITY");
    xmlFree (text);
    mx_sis_destroy (&msg);
    free (commented);
    free (xml);
}

static void
test_size_limit (void **state)
{
    (void) state;
    //  17 MiB: refused before parsing, however it looks inside.
    size_t size = 17u * 1024 * 1024;
    char *big = malloc (size);
    assert_non_null (big);
    const char *head = "<?xml version=\"1.0\"?><MSG><META>";
    memcpy (big, head, strlen (head));
    memset (big + strlen (head), ' ', size - strlen (head));
    mx_sis_options_t options = s_options ();
    double start = s_now_ms ();
    s_refused_with (big, size, &options, MX_SIS_MALFORMED,
                    "message of 17825792 bytes is larger than the limit of 16777216 bytes");
    print_message ("17 MiB message refused in %.3f ms\n", (s_now_ms () - start) / 2);
    free (big);

    //  The limit itself is allowed.
    char *xml = s_flop ("ACFT", "<FLOP><FLID>1</FLID><ACFT>320</ACFT></FLOP>");
    options.max_bytes = strlen (xml);
    mx_sis_msg_t *msg = s_decode_with (xml, strlen (xml), &options);
    mx_sis_destroy (&msg);
    options.max_bytes = strlen (xml) - 1;
    s_refused_with (xml, strlen (xml), &options, MX_SIS_MALFORMED, "larger than the limit");
    free (xml);
}

static void
test_encodings (void **state)
{
    (void) state;
    const char *utf8_text = "Staff Arrangement 人员安排";
    char *body = NULL;
    assert_true (asprintf (&body, "<RECS>1</RECS><ABNR><ANRC>STAFF</ANRC><ARDC>%s</ARDC></ABNR>",
                           utf8_text) > 0);
    char *xml = s_message ("AODB", "1243", "20031010090311", "ABNR", "ADD", body);

    //  GB18030 declared: the same message converted by iconv decodes to the
    //  same UTF-8 text.
    char *utf8_gb = NULL;
    assert_true (asprintf (&utf8_gb, "<?xml version=\"1.0\" encoding=\"GB18030\"?>\n%s",
                           strstr (xml, "<MSG")) > 0);
    size_t gb_size;
    char *gb = mx_testenv_to_gb18030 (utf8_gb, &gb_size);
    free (utf8_gb);
    assert_non_null (memmem (gb, gb_size, "\xC8\xCB\xD4\xB1\xB0\xB2\xC5\xC5", 8));
    mx_sis_options_t options = s_options ();
    options.raw_bytes = true;
    mx_sis_msg_t *msg = s_decode_with (gb, gb_size, &options);
    assert_int_equal (mx_sis_kind (msg), MX_SIS_KIND_REFERENCE);
    xmlNodePtr record = xmlLastElementChild (mx_sis_body (msg));
    xmlChar *text = xmlNodeGetContent (xmlLastElementChild (record));
    assert_string_equal ((const char *) text, utf8_text);
    xmlFree (text);
    mx_sis_destroy (&msg);

    //  Bytes that are not GB18030.
    char *bad = memmem (gb, gb_size, "\xC8\xCB", 2);
    bad [1] = 0x7F;
    s_refused_with (gb, gb_size, &options, MX_SIS_MALFORMED,
                    "not well-formed XML: bytes invalid for the declared encoding");
    free (gb);

    //  The daemon's channel: GB18030 declared over text that is UTF-8 (the
    //  mailbox converted it) decodes to that text, not to mojibake.
    char *declared = NULL;
    assert_true (asprintf (&declared, "<?xml version=\"1.0\" encoding=\"GB18030\"?>\n%s",
                           strstr (xml, "<MSG")) > 0);
    msg = s_decode (declared);
    record = xmlLastElementChild (mx_sis_body (msg));
    text = xmlNodeGetContent (xmlLastElementChild (record));
    assert_string_equal ((const char *) text, utf8_text);
    xmlFree (text);
    mx_sis_destroy (&msg);
    free (declared);
    free (xml);

    //  UTF-8 declared, lower case, or no declaration at all (XML default).
    xml = s_message ("AODB", "1243", "20031010090311", "ABNR", "ADD", body);
    msg = s_decode (xml);
    mx_sis_destroy (&msg);
    memcpy (strstr (xml, "UTF-8"), "utf-8", 5);
    msg = s_decode (xml);
    mx_sis_destroy (&msg);
    msg = s_decode (strstr (xml, "<MSG"));
    mx_sis_destroy (&msg);

    //  Invalid UTF-8, declared or by default.
    char *broken = strstr (xml, "人");
    broken [1] = '(';
    s_refused (xml, MX_SIS_MALFORMED, "not well-formed XML");
    s_refused (strstr (xml, "<MSG"), MX_SIS_MALFORMED, "not well-formed XML");
    free (xml);

    //  Other declared encodings: a later codec may support them.
    xml = s_message ("AODB", "1243", "20031010090311", "ABNR", "ADD", "<RECS>0</RECS>");
    char *latin = NULL;
    assert_true (asprintf (&latin, "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>%s",
                           strstr (xml, "<MSG")) > 0);
    s_refused (latin, MX_SIS_CODEC_ERROR, "encoding ISO-8859-1 is not supported");
    free (latin);
    assert_true (asprintf (&latin, "<?xml version='1.0' encoding = 'GBK' ?>%s",
                           strstr (xml, "<MSG")) > 0);
    s_refused (latin, MX_SIS_CODEC_ERROR, "encoding GBK is not supported");
    free (latin);
    free (xml);
    //  UTF-16 (with a byte order mark).
    const char utf16 [] = "\xFF\xFE<\0?\0x\0m\0l\0 \0";
    mx_sis_options_t defaults = s_options ();
    s_refused_with (utf16, sizeof utf16 - 1, &defaults, MX_SIS_CODEC_ERROR,
                    "encoding UTF-16/UTF-32 is not supported");
    free (body);
}

static void
test_not_well_formed (void **state)
{
    (void) state;
    size_t size;
    char *xml = s_sample ("SCHD_DNLD_01.xml", &size);
    mx_sis_options_t options = s_options ();
    s_refused_with (xml, size / 2, &options, MX_SIS_MALFORMED, "not well-formed XML");
    s_refused_with (xml, 0, &options, MX_SIS_MALFORMED, "empty");
    free (xml);
    s_refused (" \n\t ", MX_SIS_MALFORMED, "not well-formed XML");
    s_refused ("just text", MX_SIS_MALFORMED, "not well-formed XML");
    s_refused ("<MSG><META></MSG>", MX_SIS_MALFORMED, "not well-formed XML");
    s_refused ("<MSG/><MSG/>", MX_SIS_MALFORMED, "not well-formed XML");
    s_refused ("<MSG>&undefined;</MSG>", MX_SIS_MALFORMED, "not well-formed XML");
    s_refused ("  <?xml version=\"1.0\"?><MSG/>", MX_SIS_MALFORMED, "not well-formed XML");
    //  Wrong root.
    s_refused ("<?xml version=\"1.0\"?>\n<MESSAGE><META/></MESSAGE>", MX_SIS_MALFORMED,
               "root element is <MESSAGE>, expected <MSG> (line 2)");
    s_refused ("<msg/>", MX_SIS_MALFORMED, "root element is <msg>");
}

static void
test_meta_missing_or_empty (void **state)
{
    (void) state;
    s_refused ("<MSG><SCHD/></MSG>", MX_SIS_MALFORMED, "META is missing");
    s_refused ("<MSG><META/><META/></MSG>", MX_SIS_MALFORMED, "META appears 2 times");
    const char *values [5] = { "AODB", "1243", "20210123053500", "FLOP", "ACFT" };
    const char *names [5] = { "SNDR", "SEQN", "DTTM", "TYPE", "STYP" };
    const char *body = "<FLOP><FLID>1</FLID><ACFT>320</ACFT></FLOP>";
    for (int field = 0; field < 5; field++) {
        const char *v [5];
        char reason [64];
        memcpy (v, values, sizeof v);
        v [field] = NULL;
        snprintf (reason, sizeof reason, "META/%s is missing", names [field]);
        s_refused_free (s_message (v [0], v [1], v [2], v [3], v [4], body),
                        MX_SIS_MALFORMED, reason);
        snprintf (reason, sizeof reason, "META/%s is empty", names [field]);
        v [field] = "";
        s_refused_free (s_message (v [0], v [1], v [2], v [3], v [4], body),
                        MX_SIS_MALFORMED, reason);
        v [field] = " \t\r\n ";
        s_refused_free (s_message (v [0], v [1], v [2], v [3], v [4], body),
                        MX_SIS_MALFORMED, reason);
        char twice [64];
        snprintf (twice, sizeof twice, "%s</%s><%s>%s", values [field], names [field],
                  names [field], values [field]);
        v [field] = twice;
        snprintf (reason, sizeof reason, "META/%s appears 2 times", names [field]);
        s_refused_free (s_message (v [0], v [1], v [2], v [3], v [4], body),
                        MX_SIS_MALFORMED, reason);
        v [field] = "<X>1</X>";
        snprintf (reason, sizeof reason, "META/%s holds elements", names [field]);
        s_refused_free (s_message (v [0], v [1], v [2], v [3], v [4], body),
                        MX_SIS_MALFORMED, reason);
    }
    //  Self-closed is empty too.
    s_refused ("<MSG><META><SNDR/><SEQN>1</SEQN><DTTM>20210123053500</DTTM>"
               "<TYPE>X</TYPE><STYP>Y</STYP></META></MSG>", MX_SIS_MALFORMED,
               "META/SNDR is empty (line 1)");
}

static void
test_meta_bad_values (void **state)
{
    (void) state;
    const char *dttm = "20210123053500";
    s_refused_free (s_message ("ABCDEFGHI", "1", dttm, "FLOP", "ACFT", ""),
                    MX_SIS_MALFORMED, "META/SNDR 'ABCDEFGHI' is longer than 8 characters");
    s_refused_free (s_message ("A|B", "1", dttm, "FLOP", "ACFT", ""),
                    MX_SIS_MALFORMED, "META/SNDR 'A|B' may only hold printable ASCII");
    s_refused_free (s_message ("A B", "1", dttm, "FLOP", "ACFT", ""),
                    MX_SIS_MALFORMED, "META/SNDR 'A B' may only hold");
    s_refused_free (s_message ("人员", "1", dttm, "FLOP", "ACFT", ""),
                    MX_SIS_MALFORMED, "META/SNDR '人员' may only hold");
    s_refused_free (s_message ("AODB", "1", dttm, "FLOPFLOPX", "ACFT", ""),
                    MX_SIS_MALFORMED, "META/TYPE 'FLOPFLOPX' is longer than 8");
    s_refused_free (s_message ("AODB", "1", dttm, "FLOP", "ACFTACFTA", ""),
                    MX_SIS_MALFORMED, "META/STYP 'ACFTACFTA' is longer than 8");

    const char *not_numbers [] = { "x12", "-5", "+5", "1 2", "12a", "0x10", "1.0", NULL };
    for (int i = 0; not_numbers [i]; i++) {
        char reason [64];
        snprintf (reason, sizeof reason, "META/SEQN '%s' is not a number (line 5)",
                  not_numbers [i]);
        s_refused_free (s_message ("AODB", not_numbers [i], dttm, "FLOP", "ACFT", ""),
                        MX_SIS_MALFORMED, reason);
    }
    const char *out_of_range [] = { "0", "000000", "1000000", "0001000000",
                                    "99999999999999999999999999", NULL };
    for (int i = 0; out_of_range [i]; i++) {
        char reason [80];
        snprintf (reason, sizeof reason, "META/SEQN '%s' is out of range 1..999999",
                  out_of_range [i]);
        s_refused_free (s_message ("AODB", out_of_range [i], dttm, "FLOP", "ACFT", ""),
                        MX_SIS_MALFORMED, reason);
    }
    //  Leading zeros are fine, however many.
    const struct { const char *text; int64_t value; } seqns [] = {
        { "1", 1 }, { "000001", 1 }, { "999999", 999999 }, { "0000000000000000000042", 42 },
    };
    for (size_t i = 0; i < sizeof seqns / sizeof seqns [0]; i++) {
        char *xml = s_message ("AODB", seqns [i].text, dttm, "LDM", "X", "");
        mx_sis_msg_t *msg = s_decode (xml);
        assert_int_equal (mx_sis_meta (msg)->seqn, seqns [i].value);
        mx_sis_destroy (&msg);
        free (xml);
    }

    const char *not_timestamps [] = { "2021012305350", "202101230535000", "2021-01-23 05:35",
                                      "2021012305350x", "20210123 53500", NULL };
    for (int i = 0; not_timestamps [i]; i++) {
        char reason [96];
        snprintf (reason, sizeof reason, "META/DTTM '%s' is not a timestamp yyyyMMddHHmmss",
                  not_timestamps [i]);
        s_refused_free (s_message ("AODB", "1", not_timestamps [i], "FLOP", "ACFT", ""),
                        MX_SIS_MALFORMED, reason);
    }
    const char *invalid_dates [] = { "20210230120000", "20210229120000", "19000229120000",
                                     "20211301000000", "20210001000000", "20210100000000",
                                     "20210431000000", "20210101240000", "20210101236000",
                                     "20210101235960", "00000101000000", NULL };
    for (int i = 0; invalid_dates [i]; i++) {
        char reason [96];
        snprintf (reason, sizeof reason, "META/DTTM '%s' is not a valid date and time (line 6)",
                  invalid_dates [i]);
        s_refused_free (s_message ("AODB", "1", invalid_dates [i], "FLOP", "ACFT", ""),
                        MX_SIS_MALFORMED, reason);
    }
    const char *valid_dates [] = { "20200229120000", "20000229000000", "20211231235959",
                                   "00010101000000", NULL };
    for (int i = 0; valid_dates [i]; i++) {
        char *xml = s_message ("AODB", "1", valid_dates [i], "LDM", "X", "");
        mx_sis_msg_t *msg = s_decode (xml);
        assert_string_equal (mx_sis_meta (msg)->dttm, valid_dates [i]);
        mx_sis_destroy (&msg);
        free (xml);
    }
    //  A bad value is quoted on one bounded line.
    char *xml = s_message ("AODB", "1\n2\t3xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                           dttm, "FLOP", "ACFT", "");
    s_refused (xml, MX_SIS_MALFORMED, "META/SEQN '1?2?3xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'");
    free (xml);
}

static void
test_whitespace_and_spacing (void **state)
{
    (void) state;
    const char *xml =
        "<?xml version = \"1.0\"   encoding = \"UTF-8\" ?>\r\n"
        "<MSG xmlns:xsi = \"http://www.w3.org/2001/XMLSchema-instance\" "
        "xsi:noNamespaceSchemaLocation = \"unisysaodbsis.xsd\" >\r\n"
        "\t<META >\n"
        "\t\t<SNDR>\t AODB \t</SNDR>\n"
        "\t\t<SEQN>\n\t\t\t001243\n\t\t</SEQN>\n"
        "\t  <DTTM> 20210123053500\t</DTTM>\n"
        "\t\t<TYPE>\tFLOP</TYPE>\n"
        "\t\t<!-- comments are fine -->\n"
        "\t\t<STYP>TAOP\r\n</STYP>\n"
        "\t</META>\n"
        "\t<FLOP   >\n\t\t<FLID>15</FLID>\n\t\t<TAID/>\n\t</FLOP>\n"
        "</MSG>\n";
    mx_sis_msg_t *msg = s_decode (xml);
    const mx_sis_meta_t *meta = mx_sis_meta (msg);
    assert_string_equal (meta->sndr, "AODB");
    assert_int_equal (meta->seqn, 1243);
    assert_string_equal (meta->dttm, "20210123053500");
    assert_int_equal (meta->dttm_ms, 1611351300000LL);
    assert_string_equal (meta->type, "FLOP");
    assert_string_equal (meta->styp, "TAOP");
    assert_int_equal (mx_sis_kind (msg), MX_SIS_KIND_FLOP);
    mx_sis_destroy (&msg);
}

typedef struct {
    const char *type;
    const char *styp;
    const char *body;
    mx_sis_kind_t kind;
    const char *body_name;          //  NULL: MALFORMED payload missing
} s_kind_case_t;

static void
test_kinds_and_payload (void **state)
{
    (void) state;
    const s_kind_case_t cases [] = {
        { "SCHD", "DNLD", "<SCHD><RECS>0</RECS></SCHD>", MX_SIS_KIND_SCHD_DNLD, "SCHD" },
        { "SCHD", "RESP", "<SCHD/>", MX_SIS_KIND_SCHD_RESP, "SCHD" },
        { "SCHD", "ADFT", "<SCHD/>", MX_SIS_KIND_SCHD_ADFT, "SCHD" },
        { "SCHD", "DEL", "<SCHD/>", MX_SIS_KIND_SCHD_DEL, "SCHD" },
        { "SCHD", "DNLD", "<FLOP/>", MX_SIS_KIND_SCHD_DNLD, NULL },
        { "SCHD", "RESP", "", MX_SIS_KIND_SCHD_RESP, NULL },
        { "SCHD", "XXXX", "", MX_SIS_KIND_OTHER, "(none)" },
        { "FLOP", "ACFT", "<FLOP><FLID>1</FLID><ACFT>320</ACFT></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "ACFT", "<FLOP><FLID>1</FLID><ACFT/></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "ACFT", "<FLOP><FLID>1</FLID><RENO>B1</RENO></FLOP>", MX_SIS_KIND_FLOP, NULL },
        { "FLOP", "ACFT", "<SCHD/>", MX_SIS_KIND_FLOP, NULL },
        { "FLOP", "HNAG", "<FLOP><PHAG>1</PHAG></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "HNAG", "<FLOP><MHAG/></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "HNAG", "<FLOP><HNAG>1</HNAG></FLOP>", MX_SIS_KIND_FLOP, NULL },
        { "FLOP", "TAOP", "<FLOP><TAID>16</TAID></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "TAOP", "<FLOP><TAFL>CA1</TAFL></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "EXSS", "<FLOP><EXSR>late</EXSR></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "EXSS", "<FLOP><EXSS>x</EXSS></FLOP>", MX_SIS_KIND_FLOP, NULL },
        { "FLOP", "VIPP", "<FLOP><VIPR>1</VIPR></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "ROUT", "<FLOP><ROUT RTNO=\"1\"/></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "PSDT", "<FLOP><PSDT/></FLOP>", MX_SIS_KIND_FLOP, "FLOP" },
        { "FLOP", "PORT", "<FLOP><FLID>1</FLID></FLOP>", MX_SIS_KIND_FLOP, NULL },
        { "FLOP", "XXXX", "<FLOP><FLID>1</FLID></FLOP>", MX_SIS_KIND_OTHER, "FLOP" },
        { "FLOP", "FDEL", "<FLOP><FLID>1</FLID><FDEL/></FLOP>", MX_SIS_KIND_FDEL, "FLOP" },
        { "FLOP", "FDEL", "<FLOP><FLID>1</FLID></FLOP>", MX_SIS_KIND_FDEL, NULL },
        { "FLOP", "FDEL", "<FDEL/>", MX_SIS_KIND_FDEL, NULL },
        { "FDEL", "FDEL", "<FDEL><FLID>1</FLID><FFID/></FDEL>", MX_SIS_KIND_FDEL, "FDEL" },
        { "FDEL", "NONE", "<FLOP><FLID>1</FLID></FLOP>", MX_SIS_KIND_FDEL, "FLOP" },
        { "FDEL", "FDEL", "<SCHD/>", MX_SIS_KIND_FDEL, NULL },
        { "GLST", "ADD", "<RECS>1</RECS><GLST><GCOD>G1</GCOD></GLST>", MX_SIS_KIND_REFERENCE, "MSG" },
        { "GLST", "DNLD", "<RECS>0</RECS>", MX_SIS_KIND_REFERENCE, "MSG" },
        { "VIPS", "DEL", "<VIPS><VSCD>1</VSCD></VIPS>", MX_SIS_KIND_REFERENCE, NULL },
        { "GLST", "XXX", "<GLST/>", MX_SIS_KIND_OTHER, "GLST" },
        { "SCHS", "DNLD", "<SCHS/>", MX_SIS_KIND_OTHER, "SCHS" },
        { "LDM", "ANY", "", MX_SIS_KIND_OTHER, "(none)" },
        { "flop", "ACFT", "", MX_SIS_KIND_OTHER, "(none)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        const s_kind_case_t *c = &cases [i];
        char *xml = s_message ("AODB", "7", "20210123053500", c->type, c->styp, c->body);
        if (c->body_name) {
            mx_sis_msg_t *msg = s_decode (xml);
            if (mx_sis_kind (msg) != c->kind || strcmp (s_body_name (msg), c->body_name) != 0)
                fail_msg ("%s/%s %s: kind %s body %s", c->type, c->styp, c->body,
                          mx_sis_kind_name (mx_sis_kind (msg)), s_body_name (msg));
            mx_sis_destroy (&msg);
        }
        else {
            char reason [64];
            snprintf (reason, sizeof reason, "payload missing: %s/%s: ", c->type, c->styp);
            s_refused (xml, MX_SIS_MALFORMED, reason);
        }
        free (xml);
    }
}

static void
test_payload_missing_says_what (void **state)
{
    (void) state;
    s_refused_free (s_flop ("HNAG", "<FLOP><FLID>1</FLID><HNAG>1</HNAG></FLOP>"),
                    MX_SIS_MALFORMED,
                    "payload missing: FLOP/HNAG: none of <FHAG>, <PHAG>, <MHAG> in FLOP (line 10)");
    s_refused_free (s_flop ("CNCL", "<FLOP><FLID>1</FLID></FLOP>"),
                    MX_SIS_MALFORMED, "payload missing: FLOP/CNCL: no <CNCL> in FLOP (line 10)");
    s_refused_free (s_flop ("FDEL", "<FLOP><FLID>1</FLID></FLOP>"),
                    MX_SIS_MALFORMED, "payload missing: FLOP/FDEL: no <FDEL> in FLOP (line 10)");
    s_refused_free (s_flop ("CNCL", "<SCHD/>"),
                    MX_SIS_MALFORMED, "payload missing: FLOP/CNCL: no <FLOP> in MSG");
    s_refused_free (s_message ("AODB", "1", "20210123053500", "SCHD", "RESP", ""),
                    MX_SIS_MALFORMED, "payload missing: SCHD/RESP: no <SCHD> in MSG");
    s_refused_free (s_message ("AODB", "1", "20210123053500", "FDEL", "X", ""),
                    MX_SIS_MALFORMED, "payload missing: FDEL/X: no <FDEL> or <FLOP> in MSG");
    //  An element nested deeper does not count: the body is a child of MSG.
    s_refused_free (s_message ("AODB", "1", "20210123053500", "GLST", "ADD",
                               "<GLST><RECS>1</RECS></GLST>"),
                    MX_SIS_MALFORMED, "payload missing: GLST/ADD: no <RECS> in MSG");
}

//  Namespace prefixes are not checked: an undeclared one is accepted.
static void
test_namespace_errors_are_tolerated (void **state)
{
    (void) state;
    mx_sis_msg_t *msg = s_decode (
        "<MSG xsi:noNamespaceSchemaLocation=\"unisysaodbsis.xsd\"><META><SNDR>AODB</SNDR>"
        "<SEQN>1</SEQN><DTTM>20210123053500</DTTM><TYPE>SCHD</TYPE><STYP>DNLD</STYP></META>"
        "<SCHD><RECS>0</RECS></SCHD></MSG>");
    assert_int_equal (mx_sis_kind (msg), MX_SIS_KIND_SCHD_DNLD);
    mx_sis_destroy (&msg);
}

static void
test_ignored_types_skip_the_body_check (void **state)
{
    (void) state;
    char *xml = s_message ("AODB", "7", "20210123053500", "REGN", "DNLD", "");
    s_refused (xml, MX_SIS_MALFORMED, "payload missing: REGN/DNLD: no <RECS> in MSG");
    //  As msgx.pipeline.ignore-types hands them over (mx_config_string_list_t).
    char ldm [] = "LDM", regn [] = "REGN", rsta [] = "RSTA", eror [] = "EROR";
    char *ignore [] = { ldm, regn, rsta, eror };
    mx_sis_options_t options = s_options ();
    options.ignore_types = ignore;
    options.ignore_count = 4;
    mx_sis_msg_t *msg = s_decode_with (xml, strlen (xml), &options);
    assert_int_equal (mx_sis_kind (msg), MX_SIS_KIND_REFERENCE);
    mx_sis_destroy (&msg);
    free (xml);
    //  The envelope is still checked.
    xml = s_message ("AODB", "x", "20210123053500", "REGN", "DNLD", "");
    s_refused_with (xml, strlen (xml), &options, MX_SIS_MALFORMED, "META/SEQN 'x'");
    free (xml);
}

static void
test_tables_and_names (void **state)
{
    (void) state;
    const char *references [] = {
        "GLST", "SLST", "CLST", "BLST", "CHLT", "PLST", "TLST", "ABDG", "AIRC", "AIRL", "ARPT",
        "CITY", "COUL", "REGL", "ABNR", "DLYL", "HLTR", "ORGN", "STTS", "FLTL", "VIPL", "VIPS",
        "REGN"
    };
    for (size_t i = 0; i < sizeof references / sizeof references [0]; i++)
        assert_true (mx_sis_is_reference_type (references [i]));
    assert_false (mx_sis_is_reference_type ("SCHD"));
    assert_false (mx_sis_is_reference_type ("FLOP"));
    assert_false (mx_sis_is_reference_type ("SCHS"));
    assert_false (mx_sis_is_reference_type ("glst"));
    assert_false (mx_sis_is_reference_type (""));

    const char *flops [] = {
        "FLTY", "FLIN", "ACFT", "RENO", "TRML", "MAXP", "RUNW", "STND", "TAOP", "HNAG",
        "EXSS", "FTSS", "REMC", "VIPP", "CNCL", "FDIV", "FRET", "FLAB", "APPT", "BOTM",
        "LACL", "FINT", "EGSR", "EGST", "COBT", "CTOT", "EOBT", "TOBT", "IEST", "PEDT",
        "NEAT", "PADT", "NAAT", "PORT", "PSDT", "GTDT", "CKDT", "CLDT", "CHDT", "ABTM",
        "CHOT", "DELY", "ROUT", "ERUT", "PSHT", "TIPT", "SRVT", "VIPF"
    };
    assert_int_equal (sizeof flops / sizeof flops [0], 48);
    for (size_t i = 0; i < 48; i++)
        assert_true (mx_sis_is_flop_subtype (flops [i]));
    assert_false (mx_sis_is_flop_subtype ("FDEL"));
    assert_false (mx_sis_is_flop_subtype ("FHAG"));
    assert_false (mx_sis_is_flop_subtype (""));

    assert_string_equal (mx_sis_kind_name (MX_SIS_KIND_SCHD_DNLD), "SCHD_DNLD");
    assert_string_equal (mx_sis_kind_name (MX_SIS_KIND_SCHD_DEL), "SCHD_DEL");
    assert_string_equal (mx_sis_kind_name (MX_SIS_KIND_FDEL), "FDEL");
    assert_string_equal (mx_sis_kind_name (MX_SIS_KIND_REFERENCE), "REFERENCE");
    assert_string_equal (mx_sis_kind_name (MX_SIS_KIND_OTHER), "OTHER");
    assert_string_equal (mx_sis_status_name (MX_SIS_OK), "OK");
    assert_string_equal (mx_sis_status_name (MX_SIS_MALFORMED), "MALFORMED");
    assert_string_equal (mx_sis_status_name (MX_SIS_CODEC_ERROR), "CODEC_ERROR");
}

//  Decoding on several threads at once: each call has its own parser and
//  error collection (an invalid GB18030 message reports through libxml2's
//  per-thread handler).
typedef struct {
    const char *good;
    const char *bad;
    size_t bad_size;
    int decoded;
    int refused;
} s_decoder_t;

static void *
s_decoder (void *arg)
{
    s_decoder_t *decoder = arg;
    mx_sis_options_t options = s_options ();
    options.raw_bytes = true;           //  through the GB18030 converter
    for (int i = 0; i < 200; i++) {
        mx_sis_status_t status;
        char *error = NULL;
        mx_sis_msg_t *msg = mx_sis_decode (decoder->good, strlen (decoder->good), &options,
                                           &status, &error);
        if (msg && mx_sis_meta (msg)->seqn == 1243)
            decoder->decoded++;
        mx_sis_destroy (&msg);
        free (error);
        error = NULL;
        msg = mx_sis_decode (decoder->bad, decoder->bad_size, &options, &status, &error);
        if (!msg && status == MX_SIS_MALFORMED && strstr (error, "declared encoding"))
            decoder->refused++;
        mx_sis_destroy (&msg);
        free (error);
    }
    return NULL;
}

static void
test_decode_on_threads (void **state)
{
    (void) state;
    char *good = s_flop ("ACFT", "<FLOP><FLID>1</FLID><ACFT>320</ACFT></FLOP>");
    const char bad [] = "<?xml version=\"1.0\" encoding=\"GB18030\"?>\n<MSG><META>"
                        "<SNDR>A</SNDR></META><X>\xC8\x7F</X></MSG>";
    s_decoder_t decoders [4];
    pthread_t threads [4];
    for (int i = 0; i < 4; i++) {
        decoders [i] = (s_decoder_t) { good, bad, sizeof bad - 1, 0, 0 };
        assert_int_equal (pthread_create (&threads [i], NULL, s_decoder, &decoders [i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal (pthread_join (threads [i], NULL), 0);
        assert_int_equal (decoders [i].decoded, 200);
        assert_int_equal (decoders [i].refused, 200);
    }
    free (good);
}

static int s_payloads_freed;

static void
s_free_payload (void *payload)
{
    free (payload);
    s_payloads_freed++;
}

static void
test_payload_attachment (void **state)
{
    (void) state;
    char *xml = s_flop ("ACFT", "<FLOP><FLID>1</FLID><ACFT>320</ACFT></FLOP>");
    mx_sis_msg_t *msg = s_decode (xml);
    assert_null (mx_sis_payload (msg));
    s_payloads_freed = 0;
    char *first = strdup ("first");
    mx_sis_set_payload (msg, first, s_free_payload);
    assert_ptr_equal (mx_sis_payload (msg), first);
    mx_sis_set_payload (msg, strdup ("second"), s_free_payload);
    assert_int_equal (s_payloads_freed, 1);
    assert_string_equal ((char *) mx_sis_payload (msg), "second");
    mx_sis_destroy (&msg);
    assert_int_equal (s_payloads_freed, 2);
    free (xml);
}

static int
s_setup (void **state)
{
    (void) state;
    char *error = NULL;
    s_zone = mx_tz_load ("Asia/Shanghai", &error);
    if (!s_zone) {
        fprintf (stderr, "cannot load Asia/Shanghai: %s\n", error);
        free (error);
        return -1;
    }
    return 0;
}

static int
s_teardown (void **state)
{
    (void) state;
    mx_tz_destroy (&s_zone);
    return 0;
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_every_sample),
        cmocka_unit_test (test_sample_schedule_meta),
        cmocka_unit_test (test_identity),
        cmocka_unit_test (test_hostile_dtds),
        cmocka_unit_test (test_markup_text_is_not_a_doctype),
        cmocka_unit_test (test_size_limit),
        cmocka_unit_test (test_encodings),
        cmocka_unit_test (test_not_well_formed),
        cmocka_unit_test (test_meta_missing_or_empty),
        cmocka_unit_test (test_meta_bad_values),
        cmocka_unit_test (test_whitespace_and_spacing),
        cmocka_unit_test (test_kinds_and_payload),
        cmocka_unit_test (test_payload_missing_says_what),
        cmocka_unit_test (test_namespace_errors_are_tolerated),
        cmocka_unit_test (test_ignored_types_skip_the_body_check),
        cmocka_unit_test (test_tables_and_names),
        cmocka_unit_test (test_payload_attachment),
        cmocka_unit_test (test_decode_on_threads),
    };
    int failed = cmocka_run_group_tests (tests, s_setup, s_teardown);
    //  Once, at process end: libxml2's global state goes away for the leak check.
    xmlCleanupParser ();
    return failed;
}
