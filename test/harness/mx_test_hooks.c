/*  mx_test_hooks - see mx_test_hooks.h.  */
#include "mx_test_hooks.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mx_processor.h"

static void
s_abort_on_marker (const char *xml, size_t size)
{
    if (memmem (xml, size, MX_TEST_FAULT_MARKER, strlen (MX_TEST_FAULT_MARKER)))
        abort ();
}

static void
s_hang_on_marker (const char *xml, size_t size)
{
    if (!memmem (xml, size, MX_TEST_FAULT_MARKER, strlen (MX_TEST_FAULT_MARKER)))
        return;
    //  A hang that only the process's end ends (signals are blocked or
    //  handled elsewhere; pause returns only for a handled one).
    while (true)
        pause ();
}

void
mx_test_hooks_install (void)
{
    const char *fault = getenv ("MSGX_TEST_FAULT");
    if (!fault || !*fault)
        return;
    if (strcmp (fault, "abort") == 0)
        mx_processor_set_fault_hook (s_abort_on_marker);
    else
    if (strcmp (fault, "hang") == 0)
        mx_processor_set_fault_hook (s_hang_on_marker);
    else {
        fprintf (stderr, "MSGX_TEST_FAULT must be abort or hang, not '%s'\n", fault);
        exit (2);
    }
}
