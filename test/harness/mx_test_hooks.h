/*  mx_test_hooks - the faults msgxd-hooked (msgxd built for the tests) can
    be told to commit. Never part of msgxd.

    MSGX_TEST_FAULT=abort|hang: the processor aborts, or hangs for ever,
    just before it decodes a raw text that contains MX_TEST_FAULT_MARKER.
*/
#ifndef MX_TEST_HOOKS_H_INCLUDED
#define MX_TEST_HOOKS_H_INCLUDED

#define MX_TEST_FAULT_MARKER "MSGX-TEST-FAULT"

//  Reads MSGX_TEST_FAULT and installs the processor's fault hook.
void mx_test_hooks_install (void);

#endif
