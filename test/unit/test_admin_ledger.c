/*  Unit tests of mx_admin_ledger: which admin connections closed before a
    whole request arrived, for every order in which control can read the
    monitor's events and the requests, on an fd that one connection after
    another reuses.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#include "mx_admin_ledger.h"

//  The routing id a ROUTER generates: 0 and a big-endian counter.
static void
s_request (mx_admin_ledger_t *ledger, int fd, uint32_t counter)
{
    uint8_t id [5] = { 0, (uint8_t) (counter >> 24), (uint8_t) (counter >> 16), (uint8_t) (counter >> 8),
                       (uint8_t) counter };
    mx_admin_ledger_request (ledger, fd, id, sizeof id);
}

static int
s_setup (void **state)
{
    *state = mx_admin_ledger_new ();
    return *state ? 0 : -1;
}

static int
s_teardown (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    mx_admin_ledger_destroy (&ledger);
    return 0;
}

//  In the order they happened: a connection that spoke is no drop, one
//  that did not is, by its number.
static void
test_in_order (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 1);
    s_request (ledger, 7, 100);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 2);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 2);
}

//  The flake: both connections on fd 7 spoke, and control read the second
//  one's request before the first one's DISCONNECTED (and even before the
//  first one's ACCEPTED). Neither is a drop.
static void
test_next_connection_read_before_the_close (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    s_request (ledger, 7, 100);
    s_request (ledger, 7, 101);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 1);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 2);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
}

//  The ROUTER serves its connections fairly, not in the order they came:
//  the second one's request may be read before the first one's.
static void
test_requests_read_out_of_order (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 1);
    s_request (ledger, 7, 101);
    s_request (ledger, 7, 100);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 2);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
    //  Nothing left over for a third.
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 3);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 3);
}

//  The first connection was dropped and the next one on its fd already
//  spoke when the close is handled: the close cannot tell, counts nothing,
//  and the next close, with no request left, counts the drop. Never too
//  many; exact once both are closed.
static void
test_a_drop_hidden_by_the_next_connection_is_counted_at_its_close (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 1);
    s_request (ledger, 7, 101);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 2);
    //  A second request of the same connection is no second one.
    s_request (ledger, 7, 101);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 2);
}

//  Many requests over one connection leave one mark.
static void
test_one_connection_many_requests (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 1);
    for (int i = 0; i < 5; i++)
        s_request (ledger, 7, 100);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 2);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 2);
}

//  A failed handshake (a probe, a refused key) is no drop and takes no
//  request from the connection that follows it on the fd.
static void
test_failed_handshake (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 1);
    s_request (ledger, 7, 100);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, true), 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 2);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
}

//  A close of a connection accepted before the monitor started is not
//  judged.
static void
test_close_never_accepted (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    assert_int_equal (mx_admin_ledger_closed (ledger, 9, false), 0);
    assert_int_equal (mx_admin_ledger_closed (ledger, 9, false), 0);
}

//  Each fd keeps its own connections.
static void
test_fds_apart (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 1);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 8), 2);
    s_request (ledger, 8, 100);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 1);
    assert_int_equal (mx_admin_ledger_closed (ledger, 8, false), 0);
}

//  The ROUTER's counter starts anywhere and wraps: 0 comes after
//  0xFFFFFFFF. The first connection was dropped; the two after it on the
//  fd spoke before its close was handled. Each close takes the oldest id,
//  so a connection's later requests are known for its own. A request
//  without a routing id or fd is charged to nobody.
static void
test_counter_wraps (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    mx_admin_ledger_request (ledger, -1, "\0\0\0\0\1", 5);
    mx_admin_ledger_request (ledger, 7, "", 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 1);
    s_request (ledger, 7, 0xFFFFFFFFu);
    s_request (ledger, 7, 0);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 2);
    s_request (ledger, 7, 0xFFFFFFFFu);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 3);
    s_request (ledger, 7, 0);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 3);
}

//  A routing id the client chose carries no order: it is taken first.
static void
test_chosen_routing_id (void **state)
{
    mx_admin_ledger_t *ledger = *state;
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 1);
    mx_admin_ledger_request (ledger, 7, "alice", 5);
    mx_admin_ledger_request (ledger, 7, "alice", 5);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 0);
    assert_int_equal (mx_admin_ledger_accepted (ledger, 7), 2);
    assert_int_equal (mx_admin_ledger_closed (ledger, 7, false), 2);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_in_order, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_next_connection_read_before_the_close, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_requests_read_out_of_order, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_a_drop_hidden_by_the_next_connection_is_counted_at_its_close,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_one_connection_many_requests, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_failed_handshake, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_close_never_accepted, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_fds_apart, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_counter_wraps, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_chosen_routing_id, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
