/*  mx_test_hooks - the faults msgxd-hooked (msgxd built for the tests) can
    be told to commit. Never part of msgxd.

    MSGX_TEST_FAULT=abort|hang: the processor aborts, or hangs for ever,
    just before it decodes a raw text that contains MX_TEST_FAULT_MARKER.

    MSGX_TEST_FAULT=api-gate: before each page of a GET /all/flights
    stream but the first, the api reader opens the FIFO named by
    MSGX_TEST_GATE and reads one byte from it: the test's open for writing
    returns once the stream waits there, and its byte lets the page go.
*/
#ifndef MX_TEST_HOOKS_H_INCLUDED
#define MX_TEST_HOOKS_H_INCLUDED

#define MX_TEST_FAULT_MARKER "MSGX-TEST-FAULT"

//  Reads MSGX_TEST_FAULT and installs the processor's fault hook.
void mx_test_hooks_install (void);

#endif
