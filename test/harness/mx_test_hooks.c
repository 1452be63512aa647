/*  mx_test_hooks - see mx_test_hooks.h.  */
#include "mx_test_hooks.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mx_api_reader.h"
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

static const char *s_gate;

static void
s_wait_at_gate (void)
{
    int fd = open (s_gate, O_RDONLY | O_CLOEXEC);
    char byte;
    if (fd < 0 || read (fd, &byte, 1) != 1) {
        fprintf (stderr, "MSGX_TEST_GATE %s: cannot read a byte\n", s_gate);
        abort ();
    }
    close (fd);
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
    else
    if (strcmp (fault, "api-gate") == 0 && getenv ("MSGX_TEST_GATE")) {
        s_gate = getenv ("MSGX_TEST_GATE");
        mx_api_reader_set_page_hook (s_wait_at_gate);
    }
    else {
        fprintf (stderr, "MSGX_TEST_FAULT must be abort, hang or api-gate (with MSGX_TEST_GATE),"
                 " not '%s'\n", fault);
        exit (2);
    }
}
