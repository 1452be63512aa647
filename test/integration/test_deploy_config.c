/*  The configuration samples in deploy/config/: every key of
    core/mx_config.def is there with its comment and advice, the dev sample
    is valid as it is, and the prod sample is valid once its site values
    come from the environment (the way the systemd unit gives secrets).  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>

#include <sys/stat.h>

#include "mx_config.h"
#include "mx_testenv.h"
#include "mx_testproc.h"

#define WAIT_MS 20000

static const char *s_keys [] = {
#define MX_CONFIG_KEY(field, key, type, def, doc) key,
#include "mx_config.def"
#undef MX_CONFIG_KEY
};
#define S_KEY_COUNT (sizeof s_keys / sizeof s_keys [0])

static char *
s_path (const char *root_var, const char *relative)
{
    const char *root = getenv (root_var);
    assert_non_null (root);
    return zsys_sprintf ("%s/%s", root, relative);
}

static char *
s_read (const char *path)
{
    FILE *file = fopen (path, "rb");
    if (!file)
        fail_msg ("cannot read %s", path);
    fseek (file, 0, SEEK_END);
    long size = ftell (file);
    fseek (file, 0, SEEK_SET);
    char *text = malloc ((size_t) size + 1);
    assert_non_null (text);
    assert_int_equal (fread (text, 1, (size_t) size, file), (size_t) size);
    text [size] = '\0';
    fclose (file);
    return text;
}

static size_t
s_count_leaves (zconfig_t *node)
{
    size_t count = 0;
    for (; node; node = zconfig_next (node))
        count += zconfig_child (node) ? s_count_leaves (zconfig_child (node)) : 1;
    return count;
}

static void
s_check_sample (const char *name)
{
    char *relative = zsys_sprintf ("deploy/config/%s", name);
    char *path = s_path ("MX_SOURCE_DIR", relative);
    char *text = s_read (path);
    zconfig_t *root = zconfig_str_load (text);
    if (!root)
        fail_msg ("%s is not valid ZPL", path);
    for (size_t i = 0; i < S_KEY_COUNT; i++) {
        char *slashed = strdup (s_keys [i]);
        for (char *scan = slashed; *scan; scan++)
            if (*scan == '.')
                *scan = '/';
        if (!zconfig_locate (root, slashed))
            fail_msg ("%s lacks key %s", path, s_keys [i]);
        free (slashed);
    }
    assert_int_equal (s_count_leaves (zconfig_child (root)), S_KEY_COUNT);
    if (strstr (text, "no operating advice"))
        fail_msg ("%s has a key without operating advice (cmd/msgxd.c s_advice)", path);
    //  Every key is commented: at least three comment lines per key.
    size_t comments = 0;
    for (const char *line = text; *line; ) {
        line += strspn (line, " ");
        if (*line == '#')
            comments++;
        const char *eol = strchr (line, '\n');
        line = eol ? eol + 1 : line + strlen (line);
    }
    assert_true (comments >= 3 * S_KEY_COUNT);
    zconfig_destroy (&root);
    free (text);
    free (path);
    free (relative);
}

static void
test_samples_hold_every_key_with_advice (void **state)
{
    (void) state;
    s_check_sample ("msgxd-dev.zpl");
    s_check_sample ("msgxd-prod.zpl");
}

//  text into a fresh file of mode 0640 (as the package installs the
//  configuration: prod refuses a file others may read) in dir.
static char *
s_private_file (const char *dir, const char *name, const char *text)
{
    char *path = zsys_sprintf ("%s/%s", dir, name);
    FILE *file = fopen (path, "w");
    assert_non_null (file);
    fputs (text, file);
    fclose (file);
    assert_int_equal (chmod (path, 0640), 0);
    return path;
}

//  msgxd --config FILE --check-config with extra environment.
static int
s_check_file (const char *config, const char *const *env, char **out, char **err)
{
    char *msgxd = s_path ("MX_BUILD_DIR", "cmd/msgxd");
    const char *argv [] = { msgxd, "--config", config, "--check-config", NULL };
    int code = mx_testproc_run (argv, env, WAIT_MS, out, err);
    free (msgxd);
    return code;
}

//  The same with a private copy of deploy/config/SAMPLE.
static int
s_check_config (const char *sample, const char *const *env, char **out, char **err)
{
    char *relative = zsys_sprintf ("deploy/config/%s", sample);
    char *original = s_path ("MX_SOURCE_DIR", relative);
    char *text = s_read (original);
    char *dir = mx_testenv_tmpdir ();
    char *config = s_private_file (dir, sample, text);
    int code = s_check_file (config, env, out, err);
    mx_testenv_rmtree (dir);
    free (dir);
    free (config);
    free (text);
    free (original);
    free (relative);
    return code;
}

//  The JSON dump that --check-config prints before its last line.
static json_t *
s_dump (const char *out)
{
    json_error_t error;
    json_t *dump = json_loadb (out, strlen (out), JSON_DISABLE_EOF_CHECK, &error);
    if (!dump)
        fail_msg ("--check-config printed no JSON: %s\n%s", error.text, out);
    return dump;
}

static void
test_dev_sample_is_valid_as_it_is (void **state)
{
    (void) state;
    char *out = NULL, *err = NULL;
    int code = s_check_config ("msgxd-dev.zpl", NULL, &out, &err);
    if (code != 0)
        fail_msg ("dev sample refused (exit %d): %s", code, err);
    assert_non_null (strstr (out, "configuration OK"));
    json_t *dump = s_dump (out);
    assert_string_equal (json_string_value (json_object_get (dump, "msgx.profile")), "dev");
    assert_true (json_is_true (json_object_get (dump, "msgx.pipeline.autostart")));
    json_decref (dump);
    free (out);
    free (err);
}

static void
test_prod_sample_with_site_values_from_the_environment (void **state)
{
    (void) state;
    //  Every secret by every path: inline in the conninfo (password and
    //  sslpassword), from a file (_FILE) and as a variable.
    char *dir = mx_testenv_tmpdir ();
    char *mailbox = s_private_file (dir, "mailbox.pw", "mb-s3cret\n");
    char *mailbox_env = zsys_sprintf ("MAILBOX_SHARED_MYSQL_PASSWORD_FILE=%s", mailbox);
    const char *env [] = {
        "MSGX_PG_CONNINFO=host=db.site.test dbname=msgx user=msgx password=pg-s3cret sslpassword=key-s3cret "
        "sslmode=verify-full",
        "MSGX_KAFKA_BOOTSTRAP_SERVERS=broker-a.site.test:9092,broker-b.site.test:9092",
        "MSGX_KAFKA_SECURITY_PROTOCOL=sasl_ssl",
        "MSGX_KAFKA_SECURITY_SASL_MECHANISMS=SCRAM-SHA-512",
        "MSGX_KAFKA_SECURITY_SASL_USERNAME=msgx",
        "MSGX_KAFKA_SECURITY_SASL_PASSWORD=sasl-s3cret",
        "MAILBOX_SHARED_MYSQL_HOST=aodb.site.test",
        "MAILBOX_SHARED_MYSQL_USER=msgx_site",
        mailbox_env,
        NULL
    };
    char *out = NULL, *err = NULL;
    int code = s_check_config ("msgxd-prod.zpl", env, &out, &err);
    if (code != 0)
        fail_msg ("prod sample refused (exit %d): %s", code, err);
    json_t *dump = s_dump (out);
    assert_string_equal (json_string_value (json_object_get (dump, "msgx.profile")), "prod");
    assert_string_equal (json_string_value (json_object_get (dump, "msgx.kafka.bootstrap-servers")),
                         "broker-a.site.test:9092,broker-b.site.test:9092");
    assert_string_equal (json_string_value (json_object_get (dump, "mailbox.shared-mysql.host")),
                         "aodb.site.test");
    assert_string_equal (json_string_value (json_object_get (dump, "mailbox.shared-mysql.user")),
                         "msgx_site");
    assert_true (json_is_true (json_object_get (dump, "mailbox.shared-mysql.enabled")));
    assert_string_equal (json_string_value (json_object_get (dump, "mailbox.shared-mysql.password")),
                         "***");
    assert_string_equal (json_string_value (json_object_get (dump, "msgx.admin.endpoint")),
                         "ipc:///run/msgxd/admin.sock");
    assert_string_equal (json_string_value (json_object_get (dump, "msgx.kafka.security.sasl.password")),
                         "***");
    //  Secrets never show, not even inside the conninfo.
    assert_null (strstr (out, "s3cret"));
    assert_null (strstr (err, "s3cret"));
    json_decref (dump);
    free (out);
    free (err);

    //  Refusals name the keys, never the values.
    const char *weak [] = {
        "MSGX_PG_CONNINFO=host=db.site.test dbname=msgx password=pg-s3cret sslpassword=key-s3cret sslmode=require",
        "MSGX_KAFKA_SECURITY_PROTOCOL=sasl_plaintext",
        "MSGX_KAFKA_SECURITY_SASL_PASSWORD=sasl-s3cret",
        mailbox_env,
        NULL
    };
    assert_int_equal (s_check_config ("msgxd-prod.zpl", weak, &out, &err), MX_EXIT_CONFIG);
    assert_non_null (strstr (err, "sslmode require does not verify the server"));
    assert_non_null (strstr (err, "prod refuses unencrypted Kafka"));
    assert_null (strstr (out, "s3cret"));
    assert_null (strstr (err, "s3cret"));
    free (out);
    free (err);

    //  A password line cut short (a missing quote) is not echoed either.
    char *broken = s_private_file (dir, "broken.zpl",
                                   "mailbox.shared-mysql.password = \"mb-s3cret\n"
                                   "msgx.kafka.security.sasl.password = sasl-s3cret#\n");
    assert_int_equal (s_check_file (broken, NULL, &out, &err), MX_EXIT_CONFIG);
    assert_non_null (strstr (err, "missing closing quote"));
    assert_null (strstr (out, "s3cret"));
    assert_null (strstr (err, "s3cret"));
    free (out);
    free (err);

    //  The shipped sample as it comes from the source tree is readable by
    //  all: prod refuses it.
    char *relative = zsys_sprintf ("deploy/config/%s", "msgxd-prod.zpl");
    char *open_sample = s_path ("MX_SOURCE_DIR", relative);
    struct stat status;
    assert_int_equal (stat (open_sample, &status), 0);
    if (status.st_mode & 004) {
        assert_int_equal (s_check_file (open_sample, env, &out, &err), MX_EXIT_CONFIG);
        assert_non_null (strstr (err, "is readable by others"));
        free (out);
        free (err);
    }
    free (open_sample);
    free (relative);
    free (broken);
    free (mailbox_env);
    free (mailbox);
    mx_testenv_rmtree (dir);
    free (dir);
}

static void
test_prod_sample_refuses_without_brokers (void **state)
{
    (void) state;
    //  The environment wins over the file; prod then refuses the mock cluster.
    const char *env [] = { "MSGX_KAFKA_BOOTSTRAP_SERVERS=", NULL };
    char *out = NULL, *err = NULL;
    assert_int_equal (s_check_config ("msgxd-prod.zpl", env, &out, &err), MX_EXIT_CONFIG);
    assert_non_null (strstr (err, "msgx.kafka.bootstrap-servers"));
    free (out);
    free (err);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_samples_hold_every_key_with_advice),
        cmocka_unit_test (test_dev_sample_is_valid_as_it_is),
        cmocka_unit_test (test_prod_sample_with_site_values_from_the_environment),
        cmocka_unit_test (test_prod_sample_refuses_without_brokers),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
