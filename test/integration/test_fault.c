/*  The fault suite in short (test/fault/msgx_fault.c): a few thousand
    messages, a few kills and one of each other fault, and the same audit
    as the full run. MX_FAULT_MESSAGES / MX_FAULT_KILLS / MX_FAULT_SEED
    resize it.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_testproc.h"

static const char *
s_env (const char *name, const char *fallback)
{
    const char *value = getenv (name);
    return value && *value ? value : fallback;
}

static void
test_short_fault_run_audits_clean (void **state)
{
    (void) state;
    const char *build = getenv ("MX_BUILD_DIR");
    const char *source = getenv ("MX_SOURCE_DIR");
    assert_non_null (build);
    assert_non_null (source);
    char program [1024];
    snprintf (program, sizeof program, "%s/test/integration/msgx-fault", build);
    const char *argv [] = {
        program, "--quick", "--messages", s_env ("MX_FAULT_MESSAGES", "3000"),
        "--kills", s_env ("MX_FAULT_KILLS", "4"), "--seed", s_env ("MX_FAULT_SEED", "7"),
        "--build", build, "--source", source, NULL
    };
    char *out = NULL, *err = NULL;
    int rc = mx_testproc_run (argv, NULL, 330000, &out, &err);
    printf ("%s", out ? out : "");
    if (rc != 0)
        fprintf (stderr, "%s", err ? err : "");
    assert_int_equal (rc, 0);
    assert_non_null (strstr (out, "audit clean"));
    assert_non_null (strstr (out, "standby takeovers"));
    free (out);
    free (err);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_short_fault_run_audits_clean),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
