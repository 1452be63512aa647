/*  Unit tests: clock, backoff, log, command tables.  */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <fcntl.h>
#include <jansson.h>

#include "mx_backoff.h"
#include "mx_cidr.h"
#include "mx_clock.h"
#include "mx_admin.h"
#include "mx_cmd.h"
#include "mx_log.h"
#include "mx_text.h"

static void
test_fake_clock_moves_only_when_told (void **state)
{
    (void) state;
    mx_clock_t *clock = mx_clock_new_fake (1000);
    assert_true (mx_clock_is_fake (clock));
    assert_int_equal (mx_clock_now (clock), 1000);
    zsock_t *ticks = zsock_new_sub (mx_clock_endpoint (clock), "");
    assert_non_null (ticks);
    //  A deadline in the future never turns into a real-time wait.
    assert_int_equal (mx_clock_timeout (clock, 5000), -1);
    assert_int_equal (mx_clock_timeout (clock, 1000), 0);
    //  PUB/SUB join is asynchronous: advance until the first TICK arrives.
    char *tick = NULL;
    for (int i = 0; i < 1000 && !tick; i++) {
        mx_clock_advance (clock, 1);
        zmq_pollitem_t item = { zsock_resolve (ticks), 0, ZMQ_POLLIN, 0 };
        if (zmq_poll (&item, 1, 10) == 1)
            tick = zstr_recv (ticks);
    }
    assert_non_null (tick);
    assert_string_equal (tick, "TICK");
    zstr_free (&tick);
    mx_clock_set (clock, 5000);
    assert_int_equal (mx_clock_now (clock), 5000);
    assert_int_equal (mx_clock_timeout (clock, 5000), 0);
    zsock_destroy (&ticks);
    mx_clock_destroy (&clock);
    mx_clock_destroy (&clock);      //  safe twice
    assert_null (clock);
}

static void
test_system_clock_is_wall_time (void **state)
{
    (void) state;
    mx_clock_t *clock = mx_clock_new_system ();
    assert_false (mx_clock_is_fake (clock));
    assert_null (mx_clock_endpoint (clock));
    int64_t now = mx_clock_now (clock);
    assert_true (now > 1700000000000LL);
    assert_int_equal (mx_clock_timeout (clock, now - 1), 0);
    assert_int_equal (mx_clock_timeout (clock, INT64_MAX), -1);
    int timeout = mx_clock_timeout (clock, now + 60000);
    assert_true (timeout > 50000 && timeout <= 60000);
    mx_clock_destroy (&clock);
}

static void
test_backoff_list_and_cap (void **state)
{
    (void) state;
    int64_t steps [] = { 1000, 2000, 4000, 8000, 16000 };
    assert_int_equal (mx_backoff_list_ms (steps, 5, 60000, 1), 1000);
    assert_int_equal (mx_backoff_list_ms (steps, 5, 60000, 4), 8000);
    assert_int_equal (mx_backoff_list_ms (steps, 5, 60000, 5), 16000);
    assert_int_equal (mx_backoff_list_ms (steps, 5, 60000, 9), 16000);
    assert_int_equal (mx_backoff_list_ms (steps, 5, 3000, 4), 3000);
    assert_int_equal (mx_backoff_list_ms (steps, 5, 60000, 0), 1000);
    //  Backfill: 30 s doubling to 15 min.
    assert_int_equal (mx_backoff_doubling_ms (30000, 900000, 1), 30000);
    assert_int_equal (mx_backoff_doubling_ms (30000, 900000, 2), 60000);
    assert_int_equal (mx_backoff_doubling_ms (30000, 900000, 5), 480000);
    assert_int_equal (mx_backoff_doubling_ms (30000, 900000, 6), 900000);
    assert_int_equal (mx_backoff_doubling_ms (30000, 900000, 60), 900000);
}

static char *
s_read_all (int fd)
{
    size_t size = 0, cap = 65536;
    char *data = malloc (cap);
    while (true) {
        if (size + 4096 > cap)
            data = realloc (data, cap *= 2);
        ssize_t got = read (fd, data + size, cap - size - 1);
        if (got <= 0)
            break;
        size += (size_t) got;
    }
    data [size] = 0;
    return data;
}

static void
test_log_lines_are_json (void **state)
{
    (void) state;
    int fds [2];
    assert_int_equal (pipe (fds), 0);
    assert_int_equal (mx_log_start (fds [1], 64), 0);
    mx_log_set_level (MX_LOG_INFO);
    mx_debug ("test", "hidden below the level");
    mx_log_emit (MX_LOG_WARN, "ingress", json_pack ("{s:I,s:s}", "msg_id", (json_int_t) 42, "error_class", "INFRA"),
                 "mailbox unreadable: %s", "timeout \"quoted\"");
    mx_log_stop ();
    close (fds [1]);
    char *text = s_read_all (fds [0]);
    close (fds [0]);
    char *newline = strchr (text, '\n');
    assert_non_null (newline);
    assert_null (strchr (newline + 1, '\n'));       //  exactly one line
    json_error_t error;
    json_t *line = json_loads (text, JSON_DISABLE_EOF_CHECK, &error);
    assert_non_null (line);
    assert_string_equal (json_string_value (json_object_get (line, "level")), "warn");
    assert_string_equal (json_string_value (json_object_get (line, "actor")), "ingress");
    assert_string_equal (json_string_value (json_object_get (line, "msg")), "mailbox unreadable: timeout \"quoted\"");
    assert_int_equal (json_integer_value (json_object_get (line, "msg_id")), 42);
    assert_string_equal (json_string_value (json_object_get (line, "error_class")), "INFRA");
    assert_non_null (json_object_get (line, "ts"));
    json_decref (line);
    free (text);
}

//  A shadow instance's lines all say so.
static void
test_log_lines_of_a_shadow_say_so (void **state)
{
    (void) state;
    int fds [2];
    assert_int_equal (pipe (fds), 0);
    mx_log_set_shadow (true);
    assert_int_equal (mx_log_start (fds [1], 64), 0);
    mx_info ("processor", "one");
    mx_log_stop ();
    mx_log_set_shadow (false);
    close (fds [1]);
    char *text = s_read_all (fds [0]);
    close (fds [0]);
    json_t *line = json_loads (text, JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null (line);
    assert_true (json_is_true (json_object_get (line, "shadow")));
    json_decref (line);
    free (text);
}

//  A sink nobody reads: the writer thread blocks in write(), producers must
//  not. Every call returns; what does not fit is dropped and counted.
static void
test_log_never_blocks_on_a_stuck_sink (void **state)
{
    (void) state;
    int fds [2];
    assert_int_equal (pipe (fds), 0);
    assert_int_equal (fcntl (fds [1], F_SETPIPE_SZ, 4096) >= 0, true);
    uint64_t dropped_before = mx_log_dropped ();
    assert_int_equal (mx_log_start (fds [1], 8), 0);
    for (int i = 0; i < 5000; i++)
        mx_info ("test", "line %d with some padding to fill the pipe quickly ......................", i);
    assert_true (mx_log_dropped () > dropped_before);
    //  Unblock the writer so it can drain and stop.
    int flags = fcntl (fds [0], F_GETFL);
    fcntl (fds [0], F_SETFL, flags | O_NONBLOCK);
    char buffer [4096];
    zmq_pollitem_t item = { NULL, fds [0], ZMQ_POLLIN, 0 };
    while (zmq_poll (&item, 1, 200) == 1 && read (fds [0], buffer, sizeof buffer) > 0)
        ;
    close (fds [0]);                //  EPIPE for the rest: lost, not blocking
    mx_log_stop ();
    close (fds [1]);
}

//  An actor's own level beside the global one; a notice is written
//  whatever the level; a level for every actor drops the single ones.
static void
test_log_level_per_actor (void **state)
{
    (void) state;
    int fds [2];
    assert_int_equal (pipe (fds), 0);
    assert_int_equal (mx_log_start (fds [1], 64), 0);
    mx_log_set_level (MX_LOG_WARN);
    assert_int_equal (mx_log_set_actor_level ("pump", MX_LOG_DEBUG), 0);
    mx_debug ("pump", "pump debug shown");
    mx_info ("ingress", "ingress info hidden");
    mx_log_notice ("control", NULL, "notice shown");
    json_t *levels = mx_log_levels ();
    assert_string_equal (json_string_value (json_object_get (levels, "level")), "warn");
    assert_string_equal (json_string_value (json_object_get (json_object_get (levels, "actors"), "pump")), "debug");
    json_decref (levels);
    assert_int_equal (mx_log_set_actor_level ("pump", -1), 0);
    mx_debug ("pump", "pump debug hidden again");
    assert_int_equal (mx_log_set_actor_level ("ingress", MX_LOG_ERROR), 0);
    mx_log_clear_actor_levels ();
    mx_warn ("ingress", "ingress warn shown");
    levels = mx_log_levels ();
    assert_int_equal (json_object_size (json_object_get (levels, "actors")), 0);
    json_decref (levels);
    //  Refused: no name, a name too long, a level out of range.
    assert_int_equal (mx_log_set_actor_level ("", MX_LOG_INFO), -1);
    assert_int_equal (mx_log_set_actor_level ("an-actor-name-longer-than-thirty-one", MX_LOG_INFO), -1);
    assert_int_equal (mx_log_set_actor_level ("pump", 7), -1);
    mx_log_stop ();
    mx_log_set_level (MX_LOG_INFO);
    close (fds [1]);
    char *text = s_read_all (fds [0]);
    close (fds [0]);
    assert_non_null (strstr (text, "pump debug shown"));
    assert_non_null (strstr (text, "notice shown"));
    assert_non_null (strstr (text, "ingress warn shown"));
    assert_null (strstr (text, "hidden"));
    free (text);
}

static void
test_log_level_parse (void **state)
{
    (void) state;
    mx_log_level_t level;
    assert_int_equal (mx_log_level_parse ("debug", &level), 0);
    assert_int_equal (level, MX_LOG_DEBUG);
    assert_int_equal (mx_log_level_parse ("error", &level), 0);
    assert_int_equal (level, MX_LOG_ERROR);
    assert_int_equal (mx_log_level_parse ("verbose", &level), -1);
    assert_int_equal (mx_log_level_parse (NULL, &level), -1);
}

static void
test_command_tables_are_complete (void **state)
{
    (void) state;
    for (int i = 0; i < MX_CMD_COUNT; i++) {
        const char *name = mx_cmd_name ((mx_cmd_t) i);
        assert_non_null (name);
        assert_int_equal (mx_cmd_lookup (name), i);
        assert_non_null (mx_cmd_route ((mx_cmd_t) i));
        assert_true (strlen (mx_cmd_doc ((mx_cmd_t) i)) > 10);
    }
    assert_string_equal (mx_cmd_name (MX_CMD_TERM), "$TERM");
    assert_int_equal (mx_cmd_lookup ("NO_SUCH"), MX_CMD_UNKNOWN);
    assert_int_equal (mx_cmd_lookup (NULL), MX_CMD_UNKNOWN);
    for (int i = 0; i < MX_ADMIN_COUNT; i++)
        assert_int_equal (mx_admin_lookup (mx_admin_verb ((mx_admin_t) i)), i);
    assert_int_equal (mx_admin_lookup ("status"), MX_ADMIN_STATUS);
    assert_int_equal (mx_admin_lookup ("rm -rf"), MX_ADMIN_UNKNOWN);
}

//  Decodes frames given as one string with '|' between them.
static char *
s_admin_decode (const char *frames_text, mx_admin_request_t *request)
{
    zmsg_t *frames = zmsg_new ();
    char *copy = strdup (frames_text);
    char *save = NULL;
    for (char *frame = strtok_r (copy, "|", &save); frame; frame = strtok_r (NULL, "|", &save))
        zmsg_addstr (frames, frame);
    char *refused = mx_admin_request_decode (frames, request);
    zmsg_destroy (&frames);
    free (copy);
    return refused;
}

static void
test_admin_requests_decoded_or_refused_in_one_safe_line (void **state)
{
    (void) state;
    mx_admin_request_t request;
    assert_null (s_admin_decode ("replay|{\"ids\":[3,4],\"dry_run\":true}", &request));
    assert_int_equal (request.verb, MX_ADMIN_REPLAY);
    assert_string_equal (request.args_text, "{\"ids\":[3,4],\"dry_run\":true}");
    int64_t *ids = NULL;
    size_t count = 0;
    assert_null (mx_admin_ids (json_object_get (request.args, "ids"), "replay --id", "message", &ids, &count));
    assert_int_equal (count, 2);
    assert_int_equal (ids [1], 4);
    free (ids);
    mx_admin_request_reset (&request);
    const struct { const char *frames, *refusal; } refused [] = {
        { "status", "malformed request: expected verb + one JSON object of arguments" },
        { "status|[]", "malformed request: expected verb + one JSON object of arguments" },
        { "status|{}|more", "malformed request: expected verb + one JSON object of arguments" },
        { "replay|{\"ids\":[1],\"ids\":[2]}", "malformed request: expected verb + one JSON object of arguments" },
        { "reboot|{}", "unknown command 'reboot'" },
        //  Bytes that could break the reply line are never echoed.
        { "status\nrm -rf /|{}", "unknown command (15 bytes that are no verb name)" },
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused [0]; i++) {
        char *line = s_admin_decode (refused [i].frames, &request);
        assert_non_null (line);
        assert_string_equal (line, refused [i].refusal);
        assert_null (request.args);
        free (line);
    }
    json_t *zero = json_pack ("[i]", 0);
    char *line = mx_admin_ids (zero, "replay --id", "message", &ids, &count);
    assert_string_equal (line, "message IDs must be positive integers");
    free (line);
    json_decref (zero);
}

static void
test_command_round_trip (void **state)
{
    (void) state;
    zsock_t *a = zsock_new_pair ("@inproc://test-cmd");
    zsock_t *b = zsock_new_pair (">inproc://test-cmd");
    assert_int_equal (mx_cmd_send (a, MX_CMD_FATAL, 75, "lock lost"), 0);
    zmsg_t *rest = NULL;
    assert_int_equal (mx_cmd_recv (b, &rest), MX_CMD_FATAL);
    assert_int_equal (mx_cmd_pop_int (rest), 75);
    char *reason = mx_cmd_pop_str (rest);
    assert_string_equal (reason, "lock lost");
    free (reason);
    mx_cmd_done (&rest);
    assert_null (rest);
    //  Nothing pending: the timeout path returns without a message.
    assert_int_equal (mx_cmd_recv_timeout (b, 0, &rest), MX_CMD_UNKNOWN);
    assert_null (rest);
    zstr_send (a, "BOGUS");
    assert_int_equal (mx_cmd_recv (b, &rest), MX_CMD_UNKNOWN);
    assert_non_null (rest);
    zmsg_destroy (&rest);
    zsock_destroy (&a);
    zsock_destroy (&b);
}

//  What msgxctl show writes to a terminal: control characters visible, not obeyed.
static void
test_text_escape_controls (void **state)
{
    (void) state;
    const char *cases [][2] = {
        { "", "" },
        { "plain <MSG>\n\ttext</MSG>", "plain <MSG>\n\ttext</MSG>" },
        { "\x1b[2J\x1b]0;owned\x07", "\\x1b[2J\\x1b]0;owned\\x07" },
        { "a\rb\x7f\x01", "a\\x0db\\x7f\\x01" },
        { "csi \xc2\x9b" "31m, nbsp \xc2\xa0 kept, \xe8\x88\xaa", "csi \\u009b31m, nbsp \xc2\xa0 kept, \xe8\x88\xaa" },
        { "back\\x1b slash", "back\\\\x1b slash" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *escaped = mx_text_escape_controls (cases [i][0]);
        assert_string_equal (escaped, cases [i][1]);
        free (escaped);
    }
}

static struct sockaddr_storage
s_address (const char *text)
{
    struct sockaddr_storage storage;
    memset (&storage, 0, sizeof storage);
    struct sockaddr_in *v4 = (struct sockaddr_in *) &storage;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *) &storage;
    if (inet_pton (AF_INET, text, &v4->sin_addr) == 1)
        v4->sin_family = AF_INET;
    else {
        assert_int_equal (inet_pton (AF_INET6, text, &v6->sin6_addr), 1);
        v6->sin6_family = AF_INET6;
    }
    return storage;
}

//  The compat entry's address list.
static void
test_cidr_list (void **state)
{
    (void) state;
    char *error = NULL;
    mx_cidr_list_t *list = mx_cidr_list_parse (" 10.0.0.0/8, 192.0.2.7 ,2001:db8::/32, 172.16.0.0/12", &error);
    assert_non_null (list);
    assert_int_equal (mx_cidr_list_size (list), 4);
    const char *inside [] = { "10.0.0.1", "10.255.255.255", "192.0.2.7", "2001:db8::1", "172.31.0.1",
                              "::ffff:10.1.2.3" };
    const char *outside [] = { "11.0.0.1", "192.0.2.8", "127.0.0.1", "2001:db9::1", "172.32.0.1", "::1",
                               "::ffff:127.0.0.1" };
    for (size_t i = 0; i < sizeof inside / sizeof inside [0]; i++) {
        struct sockaddr_storage address = s_address (inside [i]);
        if (!mx_cidr_list_match (list, (struct sockaddr *) &address))
            fail_msg ("%s not matched", inside [i]);
    }
    for (size_t i = 0; i < sizeof outside / sizeof outside [0]; i++) {
        struct sockaddr_storage address = s_address (outside [i]);
        if (mx_cidr_list_match (list, (struct sockaddr *) &address))
            fail_msg ("%s matched", outside [i]);
    }
    mx_cidr_list_destroy (&list);
    assert_null (list);

    //  Empty: a list that holds nothing.
    list = mx_cidr_list_parse ("", &error);
    assert_int_equal (mx_cidr_list_size (list), 0);
    struct sockaddr_storage loopback = s_address ("127.0.0.1");
    assert_false (mx_cidr_list_match (list, (struct sockaddr *) &loopback));
    mx_cidr_list_destroy (&list);
    list = mx_cidr_list_parse ("0.0.0.0/0", &error);
    assert_true (mx_cidr_list_match (list, (struct sockaddr *) &loopback));
    mx_cidr_list_destroy (&list);

    const char *refused [][2] = {
        { "10.0.0.0/33", "at most 32" }, { "::/129", "at most 128" }, { "10.0.0.1/8", "beyond the prefix" },
        { "10.0.0.0/", "must be a number" }, { "10.0.0.0/8x", "must be a number" },
        { "host.example", "not an IPv4" }, { "10.0.0.1,", "empty entry" }, { ",10.0.0.1", "empty entry" },
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused [0]; i++) {
        list = mx_cidr_list_parse (refused [i][0], &error);
        assert_null (list);
        if (!strstr (error, refused [i][1]))
            fail_msg ("'%s': '%s' not in '%s'", refused [i][0], refused [i][1], error);
        free (error);
        error = NULL;
    }
}

int
main (void)
{
    zsys_handler_set (NULL);
    signal (SIGPIPE, SIG_IGN);      //  the stuck-sink test closes the reader
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_fake_clock_moves_only_when_told),
        cmocka_unit_test (test_system_clock_is_wall_time),
        cmocka_unit_test (test_backoff_list_and_cap),
        cmocka_unit_test (test_log_lines_are_json),
        cmocka_unit_test (test_log_lines_of_a_shadow_say_so),
        cmocka_unit_test (test_log_never_blocks_on_a_stuck_sink),
        cmocka_unit_test (test_log_level_parse),
        cmocka_unit_test (test_log_level_per_actor),
        cmocka_unit_test (test_command_tables_are_complete),
        cmocka_unit_test (test_command_round_trip),
        cmocka_unit_test (test_text_escape_controls),
        cmocka_unit_test (test_cidr_list),
        cmocka_unit_test (test_admin_requests_decoded_or_refused_in_one_safe_line),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
