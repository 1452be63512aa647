/*  The fault suite in short (test/fault/msgx_fault.c): a few thousand
    messages, a few kills and one of each other fault, and the same audit
    as the full run, exactly-once; then a smaller one at-least-once.
    MX_FAULT_MESSAGES / MX_FAULT_KILLS / MX_FAULT_SEED resize it.  */
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

//  Runs msgx-fault; returns its output (malloc'd) after checking that
//  the audit is clean.
static char *
s_fault_run (const char *semantics, const char *messages, const char *kills)
{
    const char *build = getenv ("MX_BUILD_DIR");
    const char *source = getenv ("MX_SOURCE_DIR");
    assert_non_null (build);
    assert_non_null (source);
    char program [1024];
    snprintf (program, sizeof program, "%s/test/integration/msgx-fault", build);
    const char *argv [] = {
        program, "--quick", "--messages", messages, "--kills", kills, "--seed", s_env ("MX_FAULT_SEED", "7"),
        "--semantics", semantics, "--build", build, "--source", source, NULL
    };
    char *out = NULL, *err = NULL;
    int rc = mx_testproc_run (argv, NULL, 330000, &out, &err);
    printf ("%s", out ? out : "");
    if (rc != 0)
        fprintf (stderr, "%s", err ? err : "");
    assert_int_equal (rc, 0);
    assert_non_null (strstr (out, "audit clean"));
    assert_non_null (strstr (out, "standby takeovers"));
    free (err);
    return out;
}

//  Exactly-once (the default): kills, outages, produce errors and a
//  takeover, and still no event read twice.
static void
test_short_fault_run_audits_clean (void **state)
{
    (void) state;
    char *out = s_fault_run ("exactly-once", s_env ("MX_FAULT_MESSAGES", "3000"), s_env ("MX_FAULT_KILLS", "4"));
    assert_non_null (strstr (out, "0 redelivered"));
    free (out);
}

//  At-least-once under the same faults: nothing lost either, and the
//  events read more than once are counted (what exactly-once avoids).
static void
test_short_fault_run_at_least_once_counts_redeliveries (void **state)
{
    (void) state;
    char *out = s_fault_run ("at-least-once", s_env ("MX_FAULT_MESSAGES_ALO", "1500"), "2");
    const char *line = strstr (out, "\n  redelivered ");
    assert_non_null (line);
    printf ("# at-least-once: %s\n", strtok ((char *) line + 1, "\n"));
    free (out);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_short_fault_run_audits_clean),
        cmocka_unit_test (test_short_fault_run_at_least_once_counts_redeliveries),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
