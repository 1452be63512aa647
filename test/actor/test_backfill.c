/*  Integration tests of the processed marks (SPEC §6.1): the
    backfill actor driven through its pipe with the injected clock, against
    real PostgreSQL and MariaDB.

    Waiting is on database events (a trigger NOTIFYs on every proc_state
    change and the test LISTENs), on the actor's replies, or on the pipe of
    a small TCP forwarder that stands between the actor and MariaDB so the
    mailbox can go away and come back.  */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <czmq.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include "mx_actor.h"
#include "mx_config.h"
#include "mx_log.h"
#include "mx_pg.h"
#include "mx_procstate.h"
#include "mx_testactor.h"
#include "mx_testenv.h"

#include "mx_backfill_actor.h"
#include "mx_backfill.h"

#define WAIT_MS 20000
#define T0 1767225600000LL      //  2026-01-01T00:00:00Z
#define T0_S "1767225600"
#define DAY_MS (24LL * 3600 * 1000)

typedef struct {
    mx_testpg_t *pg;
    mx_testmb_t *mb;
    mx_clock_t *clock;
    mx_config_t *config;
    PGconn *conn;               //  the test's own connection, LISTENing
    MYSQL *admin;               //  the test's own mailbox connection
    mx_actor_args_t args;
    zactor_t *actor;
    uint64_t request;
} fixture_t;

static const char *s_watch_sql =
    "CREATE FUNCTION mx_test_watch () RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify ('mx_test', TG_TABLE_NAME); RETURN NULL; END $$;"
    "CREATE TRIGGER mx_test_watch AFTER INSERT OR UPDATE ON proc_state"
    " FOR EACH STATEMENT EXECUTE FUNCTION mx_test_watch ();"
    "LISTEN mx_test;";

//  Updates of the ids listed in mx_test_fail fail: a transient write error.
static const char *s_fail_sql [] = {
    "CREATE TABLE mx_test_fail (id BIGINT PRIMARY KEY)",
    "CREATE TRIGGER mx_test_fail BEFORE UPDATE ON CMINMSGS FOR EACH ROW"
    " BEGIN"
    "  IF EXISTS (SELECT 1 FROM mx_test_fail WHERE id = NEW.CMINMSGS_ID) THEN"
    "   SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected write failure';"
    "  END IF;"
    " END",
};

static void
s_set (mx_config_t *config, const char *key, const char *value)
{
    if (mx_config_set (config, key, value, NULL))
        fail_msg ("config %s=%s refused", key, value);
}

static void
s_mysql (fixture_t *fx, const char *sql)
{
    if (mysql_query (fx->admin, sql))
        fail_msg ("%s: %s", sql, mysql_error (fx->admin));
}

static int
s_setup (void **state)
{
    fixture_t *fx = calloc (1, sizeof *fx);
    fx->pg = mx_testpg_new ();
    fx->mb = mx_testmb_new ();
    fx->clock = mx_clock_new_fake (T0);
    fx->conn = mx_testpg_connect_schema (fx->pg, s_watch_sql);
    fx->admin = mx_testmb_connect (fx->mb);
    for (size_t i = 0; i < sizeof s_fail_sql / sizeof s_fail_sql [0]; i++)
        s_mysql (fx, s_fail_sql [i]);

    mx_config_t *config = mx_config_new_defaults ();
    char port [16];
    snprintf (port, sizeof port, "%d", mx_testmb_port (fx->mb));
    s_set (config, "msgx.pg.conninfo", mx_testpg_conninfo (fx->pg));
    mx_testmb_configure (fx->mb, config, "+00:00");
    s_set (config, "mailbox.shared-mysql.connect-timeout", "1s");
    s_set (config, "msgx.pipeline.backfill-period", "1s");
    s_set (config, "msgx.pipeline.backfill-batch", "10");
    s_set (config, "msgx.pipeline.backfill-max-attempts", "4");
    fx->config = config;
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    mx_actor_destroy (&fx->actor);
    PQfinish (fx->conn);
    mysql_close (fx->admin);
    mx_config_destroy (&fx->config);
    mx_clock_destroy (&fx->clock);
    mx_testmb_destroy (&fx->mb);
    mx_testpg_destroy (&fx->pg);
    free (fx);
    return 0;
}

//  ---------------------------------------------------------------------
//  Helpers

//  What a wait that times out shows of proc_state.
static const char *s_backfill_rows =
    "SELECT string_agg (concat_ws (' ', msg_id, state, backfill_next_at, backfill_at, backfill_attempts,"
    " backfill_abandoned_reason, backfill_error), '; ' ORDER BY msg_id) FROM proc_state";

//  A proc_state row in state (terminal ones through mx_procstate_finish,
//  which writes the intent with backfill_next_at = T0). received: epoch
//  seconds SQL text, or NULL.
static void
s_row (fixture_t *fx, int64_t id, const char *state, const char *received)
{
    char sql [256];
    snprintf (sql, sizeof sql, "INSERT INTO proc_state (msg_id, received_at) VALUES (%" PRId64 ", %s%s%s)",
              id, received ? "to_timestamp (" : "NULL", received ? received : "", received ? ")" : "");
    mx_testpg_exec (fx->conn, sql);
    char *error = NULL;
    if (strcmp (state, "PENDING") == 0)
        return;
    if (strcmp (state, "FAILED") == 0) {
        bool dead = true;
        int64_t backoff [] = { 1000 };
        assert_int_equal (mx_procstate_fail (fx->conn, id, MX_ERR_INFRA, "down", T0, 5, backoff, 1, 1000,
                                             &dead, &error), 1);
        assert_false (dead);
        return;
    }
    mx_state_t terminal = strcmp (state, "SUCCEEDED") == 0 ? MX_STATE_SUCCEEDED
                        : strcmp (state, "SKIPPED") == 0 ? MX_STATE_SKIPPED : MX_STATE_DEAD;
    if (mx_procstate_finish (fx->conn, id, terminal, terminal == MX_STATE_DEAD ? MX_ERR_MALFORMED : MX_ERR_NONE,
                             NULL, NULL, T0, &error) != 1)
        fail_msg ("finish %" PRId64 ": %s", id, error ? error : "not written");
}

static void
s_mail (fixture_t *fx, int64_t id)
{
    assert_int_equal (mx_testmb_insert (fx->mb, id, "<MSG/>", T0), id);
}

//  The mailbox row's mark: "STATUS@epoch", "-" when unmarked, "none"
//  when there is no row.
static char *
s_mark (fixture_t *fx, int64_t id)
{
    char sql [200];
    snprintf (sql, sizeof sql, "SELECT CONCAT(COALESCE(CMINMSGS_STATUS, '?'), '@',"
              " COALESCE(UNIX_TIMESTAMP(CMINMSGS_DATE_PROCESSED), '-')) FROM CMINMSGS WHERE CMINMSGS_ID = %" PRId64,
              id);
    s_mysql (fx, sql);
    MYSQL_RES *res = mysql_store_result (fx->admin);
    assert_non_null (res);
    MYSQL_ROW row = mysql_fetch_row (res);
    char *mark = strdup (!row ? "none" : strstr (row [0], "@-") ? "-" : row [0]);
    mysql_free_result (res);
    return mark;
}

static void
s_assert_mark (fixture_t *fx, int64_t id, const char *expected)
{
    char *mark = s_mark (fx, id);
    if (strcmp (mark, expected) != 0)
        fail_msg ("mailbox row %" PRId64 ": mark '%s', expected '%s'", id, mark, expected);
    free (mark);
}

//  Starts the backfill actor; *detail (if not NULL) gets its START_OK text.
static void
s_start (fixture_t *fx, char **detail)
{
    fx->args = (mx_actor_args_t) { "backfill", fx->config, fx->clock, "test", NULL, NULL };
    fx->actor = mx_testactor_start (mx_backfill_actor, &fx->args, "backfill", detail);
}

static void
s_owed (fixture_t *fx, uint64_t from, uint64_t to)
{
    mx_cmd_send (zactor_sock (fx->actor), MX_CMD_MARKS_OWED, from, to);
}

//  One ADMIN round trip; returns the verdict, *payload the payload.
//  Commands on the pipe are handled in order, so a reply also says that
//  everything sent before it was handled.
static char *
s_admin (fixture_t *fx, const char *verb, const char *args, char **payload)
{
    uint64_t request = ++fx->request;
    mx_cmd_send (zactor_sock (fx->actor), MX_CMD_ADMIN, request, verb, args);
    zmsg_t *rest = NULL;
    mx_cmd_t cmd = mx_cmd_recv_timeout (zactor_sock (fx->actor), WAIT_MS, &rest);
    assert_int_equal (cmd, MX_CMD_ADMIN_REPLY);
    char *id = mx_cmd_pop_str (rest);
    char *verdict = mx_cmd_pop_str (rest);
    *payload = mx_cmd_pop_str (rest);
    mx_cmd_done (&rest);
    assert_int_equal (strtoull (id, NULL, 10), request);
    free (id);
    return verdict;
}

static void
s_barrier (fixture_t *fx)
{
    char *payload = NULL;
    char *verdict = s_admin (fx, "backfill-recover", "{\"ids\":[999999],\"yes\":true}", &payload);
    assert_string_equal (verdict, "OK");
    free (verdict);
    free (payload);
}

//  ---------------------------------------------------------------------
//  A TCP forwarder to the mailbox that the test can take down (the port
//  closes, every connection through it is cut) and bring back.

typedef struct {
    int target_port;
    int port;
    int listen_fd;              //  -1 while down; the forwarder thread's
    int control [2];            //  test -> forwarder: 'd' down, 'u' up, 'q' quit
    int done [2];               //  forwarder -> test: one byte per command
    pthread_t thread;
} s_proxy_t;

static int
s_proxy_listen (s_proxy_t *self)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int on = 1;
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) self->port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    socklen_t size = sizeof addr;
    if (bind (fd, (struct sockaddr *) &addr, sizeof addr) || listen (fd, 16)
    ||  getsockname (fd, (struct sockaddr *) &addr, &size)) {
        close (fd);
        return -1;
    }
    self->port = ntohs (addr.sin_port);
    self->listen_fd = fd;
    return 0;
}

static int
s_proxy_dial (s_proxy_t *self)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) self->target_port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if (connect (fd, (struct sockaddr *) &addr, sizeof addr)) {
        close (fd);
        return -1;
    }
    return fd;
}

static bool
s_write_all (int fd, const char *data, ssize_t size)
{
    while (size > 0) {
        ssize_t written = write (fd, data, (size_t) size);
        if (written <= 0)
            return false;
        data += written;
        size -= written;
    }
    return true;
}

static void *
s_proxy_run (void *arg)
{
    s_proxy_t *self = (s_proxy_t *) arg;
    int links [16][2];
    int link_count = 0;
    bool quit = false;
    while (!quit) {
        struct pollfd items [2 + 32];
        int count = 0;
        items [count++] = (struct pollfd) { self->control [0], POLLIN, 0 };
        int listen_item = -1;
        if (self->listen_fd >= 0) {
            listen_item = count;
            items [count++] = (struct pollfd) { self->listen_fd, POLLIN, 0 };
        }
        int first_link = count;
        for (int i = 0; i < link_count; i++) {
            items [count++] = (struct pollfd) { links [i][0], POLLIN, 0 };
            items [count++] = (struct pollfd) { links [i][1], POLLIN, 0 };
        }
        if (poll (items, (nfds_t) count, -1) < 0)
            continue;
        if (items [0].revents & POLLIN) {
            char command = 0;
            if (read (self->control [0], &command, 1) != 1)
                break;
            if (command == 'd' || command == 'q') {
                if (self->listen_fd >= 0)
                    close (self->listen_fd);
                self->listen_fd = -1;
                for (int i = 0; i < link_count; i++) {
                    close (links [i][0]);
                    close (links [i][1]);
                }
                link_count = 0;
                quit = command == 'q';
            }
            else
            if (command == 'u' && self->listen_fd < 0)
                s_proxy_listen (self);
            if (write (self->done [1], &command, 1) != 1)
                break;
            continue;
        }
        if (listen_item >= 0 && (items [listen_item].revents & POLLIN)) {
            int client = accept4 (self->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            int server = client >= 0 ? s_proxy_dial (self) : -1;
            if (server >= 0 && link_count < 16) {
                links [link_count][0] = client;
                links [link_count][1] = server;
                link_count++;
            }
            else {
                if (client >= 0)
                    close (client);
                if (server >= 0)
                    close (server);
            }
        }
        for (int i = link_count - 1; i >= 0; i--) {
            bool broken = false;
            for (int side = 0; side < 2 && !broken; side++) {
                if (!(items [first_link + 2 * i + side].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                char buffer [16384];
                ssize_t size = read (links [i][side], buffer, sizeof buffer);
                broken = size <= 0 || !s_write_all (links [i][1 - side], buffer, size);
            }
            if (broken) {
                close (links [i][0]);
                close (links [i][1]);
                links [i][0] = links [link_count - 1][0];
                links [i][1] = links [link_count - 1][1];
                link_count--;
            }
        }
    }
    return NULL;
}

static s_proxy_t *
s_proxy_new (int target_port)
{
    s_proxy_t *self = calloc (1, sizeof *self);
    self->target_port = target_port;
    self->listen_fd = -1;
    assert_int_equal (pipe (self->control), 0);
    assert_int_equal (pipe (self->done), 0);
    assert_int_equal (s_proxy_listen (self), 0);
    assert_int_equal (pthread_create (&self->thread, NULL, s_proxy_run, self), 0);
    return self;
}

//  Sends a command and waits until the forwarder has carried it out.
static void
s_proxy_command (s_proxy_t *self, char command)
{
    assert_int_equal (write (self->control [1], &command, 1), 1);
    char done = 0;
    assert_int_equal (read (self->done [0], &done, 1), 1);
    assert_int_equal (done, command);
}

static void
s_proxy_destroy (s_proxy_t **self_p)
{
    s_proxy_t *self = *self_p;
    if (!self)
        return;
    s_proxy_command (self, 'q');
    pthread_join (self->thread, NULL);
    close (self->control [0]);
    close (self->control [1]);
    close (self->done [0]);
    close (self->done [1]);
    free (self);
    *self_p = NULL;
}

//  ---------------------------------------------------------------------
//  Outcomes

static void
test_four_outcomes_and_the_backoff (void **state)
{
    fixture_t *fx = *state;
    //  The alerts are log lines: capture them.
    FILE *log = tmpfile ();
    assert_non_null (log);
    //  A descriptor of its own: after mx_log_stop, lines go straight to
    //  the last descriptor, which then must be stderr again.
    int log_fd = dup (fileno (log));
    assert_true (log_fd >= 0);
    assert_int_equal (mx_log_start (log_fd, 256), 0);

    for (int id = 1; id <= 4; id++)
        s_row (fx, id, id == 3 ? "DEAD" : "SUCCEEDED", T0_S);
    s_mail (fx, 1);
    s_mail (fx, 2);
    s_mail (fx, 4);
    //  2 was marked by someone else before; 3 has no mailbox row; writes
    //  of 4 fail.
    s_mysql (fx, "UPDATE CMINMSGS SET CMINMSGS_STATUS = 'OTHER',"
                 " CMINMSGS_DATE_PROCESSED = FROM_UNIXTIME(1767000000) WHERE CMINMSGS_ID = 2");
    s_mysql (fx, "INSERT INTO mx_test_fail VALUES (4)");

    s_start (fx, NULL);
    mx_testpg_wait_showing (fx->conn, "SELECT count(*) = 4 FROM proc_state WHERE backfill_at IS NOT NULL"
                " OR backfill_abandoned_at IS NOT NULL OR backfill_attempts > 0", s_backfill_rows);
    mx_testpg_expect (fx->conn,
        "SELECT string_agg (msg_id || ':' || (backfill_at IS NOT NULL) || ':' || (backfill_next_at IS NULL)"
        " || ':' || coalesce (backfill_abandoned_reason, '-') || ':' || backfill_attempts, ' ' ORDER BY msg_id)"
        " FROM proc_state",
        "1:true:true:-:0 2:true:true:-:0 3:false:false:MISSING:1 4:false:false:-:1");
    //  Written now, with the configured value; already marked: untouched.
    s_assert_mark (fx, 1, "PROCESSED@" T0_S);
    s_assert_mark (fx, 2, "OTHER@1767000000");
    s_assert_mark (fx, 4, "-");
    mx_testpg_expect (fx->conn, "SELECT backfill_at = to_timestamp (" T0_S ") FROM proc_state WHERE msg_id = 1", "t");
    mx_testpg_expect (fx->conn, "SELECT backfill_error FROM proc_state WHERE msg_id = 3", "mailbox row missing");
    //  Transient: 30 s, then doubling.
    mx_testpg_expect (fx->conn, "SELECT (backfill_next_at = to_timestamp (" T0_S " + 30))"
                        " || ' ' || (backfill_error LIKE '%injected write failure%') FROM proc_state WHERE msg_id = 4",
                    "true true");

    //  Not before its time: a sweep at T0 + 29 s takes a new row and
    //  leaves 4 alone; the next sweep, a period later, retries it.
    s_row (fx, 5, "SKIPPED", T0_S);
    s_mail (fx, 5);
    mx_clock_advance (fx->clock, 29000);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_at IS NOT NULL FROM proc_state WHERE msg_id = 5", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT backfill_attempts FROM proc_state WHERE msg_id = 4", "1");
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_attempts = 2 FROM proc_state WHERE msg_id = 4", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT backfill_next_at = to_timestamp (" T0_S " + 30 + 60) FROM proc_state WHERE msg_id = 4",
                    "t");
    mx_clock_advance (fx->clock, 60000);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_attempts = 3 FROM proc_state WHERE msg_id = 4", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT backfill_next_at = to_timestamp (" T0_S " + 90 + 120) FROM proc_state WHERE msg_id = 4",
                    "t");
    //  The fourth attempt is the last (backfill-max-attempts = 4).
    mx_clock_advance (fx->clock, 120000);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_abandoned_reason = 'EXHAUSTED' FROM proc_state WHERE msg_id = 4", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT backfill_attempts || ' ' || (backfill_at IS NULL) FROM proc_state WHERE msg_id = 4",
                    "4 true");
    s_assert_mark (fx, 4, "-");
    //  Abandoned rows leave the scan: no fifth attempt, however late.
    mx_clock_advance (fx->clock, 40 * DAY_MS);
    s_row (fx, 6, "SUCCEEDED", T0_S);
    s_mail (fx, 6);
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_at IS NOT NULL FROM proc_state WHERE msg_id = 6", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT backfill_attempts FROM proc_state WHERE msg_id = 4", "4");

    //  One alert for the missing row, one for the exhausted one, counted.
    mx_actor_destroy (&fx->actor);
    mx_log_stop ();
    assert_int_equal (dup2 (STDERR_FILENO, log_fd), log_fd);
    rewind (log);
    char line [4096];
    int missing = 0, exhausted = 0, already = 0;
    while (fgets (line, sizeof line, log)) {
        if (strstr (line, "\"alert\":\"backfill-missing\"")) {
            missing++;
            assert_non_null (strstr (line, "\"level\":\"error\""));
            assert_non_null (strstr (line, "\"missing_total\":1"));
            assert_non_null (strstr (line, "\"msg_id\":3"));
        }
        if (strstr (line, "\"alert\":\"backfill-exhausted\""))
            exhausted++;
        if (strstr (line, "was already marked in the mailbox"))
            already++;
    }
    fclose (log);
    assert_int_equal (missing, 1);
    assert_int_equal (exhausted, 1);
    assert_int_equal (already, 1);
}

static void
test_fairness_permanent_failures_do_not_hide_later_rows (void **state)
{
    fixture_t *fx = *state;
    s_set (fx->config, "msgx.pipeline.backfill-batch", "2");
    //  The oldest batch (1, 2) fails for good: no mailbox rows.
    for (int id = 1; id <= 4; id++)
        s_row (fx, id, "SUCCEEDED", T0_S);
    s_mail (fx, 3);
    s_mail (fx, 4);
    s_start (fx, NULL);
    mx_testpg_wait_showing (fx->conn, "SELECT count(*) = 2 FROM proc_state WHERE backfill_at IS NOT NULL", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || coalesce (backfill_abandoned_reason, 'confirmed'), ' '"
                        " ORDER BY msg_id) FROM proc_state", "1:MISSING 2:MISSING 3:confirmed 4:confirmed");
    s_assert_mark (fx, 3, "PROCESSED@" T0_S);
    s_assert_mark (fx, 4, "PROCESSED@" T0_S);

    //  A transiently failing row goes behind those never tried: the batch
    //  stops at its failed write, the next sweep takes 6 first. Mailbox
    //  rows and the failure go in before the rows a sweep may see at once.
    s_mysql (fx, "INSERT INTO mx_test_fail VALUES (5)");
    s_mail (fx, 5);
    s_mail (fx, 6);
    s_row (fx, 5, "SUCCEEDED", T0_S);
    s_row (fx, 6, "SUCCEEDED", T0_S);
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_attempts = 1 FROM proc_state WHERE msg_id = 5", s_backfill_rows);
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_at IS NOT NULL FROM proc_state WHERE msg_id = 6", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT string_agg (backfill_attempts::text, ',' ORDER BY msg_id) FROM proc_state"
                        " WHERE msg_id IN (5, 6)", "1,0");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE backfill_abandoned_at IS NOT NULL", "2");
}

static void
test_received_at_null_never_overdue (void **state)
{
    fixture_t *fx = *state;
    //  Three rows backing off until T0 + 1 h: 1 received 31 days ago
    //  (overdue, R = 30 d), 2 with no receipt time, 3 received a day ago.
    s_row (fx, 1, "SUCCEEDED", T0_S " - 31 * 86400");
    s_row (fx, 2, "SUCCEEDED", NULL);
    s_row (fx, 3, "SUCCEEDED", T0_S " - 86400");
    mx_testpg_exec (fx->conn, "UPDATE proc_state SET backfill_attempts = 2, backfill_next_at = to_timestamp (" T0_S " + 3600)");
    for (int id = 1; id <= 3; id++)
        s_mail (fx, id);
    s_start (fx, NULL);
    //  One sweep considers all three: only the overdue one is due.
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_at IS NOT NULL FROM proc_state WHERE msg_id = 1", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE backfill_at IS NULL AND backfill_attempts = 2", "2");
    s_assert_mark (fx, 2, "-");
    s_assert_mark (fx, 3, "-");
    //  A mark owed right now for 2 does not make it early either.
    s_owed (fx, 2, 2);
    s_barrier (fx);
    s_assert_mark (fx, 2, "-");
    //  Their own time comes.
    mx_clock_advance (fx->clock, 3600 * 1000);
    mx_testpg_wait_showing (fx->conn, "SELECT count(*) = 3 FROM proc_state WHERE backfill_at IS NOT NULL", s_backfill_rows);
    s_assert_mark (fx, 2, "PROCESSED@1767229200");
}

static void
test_only_committed_terminal_rows_are_marked (void **state)
{
    fixture_t *fx = *state;
    s_row (fx, 1, "PENDING", T0_S);
    s_row (fx, 2, "FAILED", T0_S);
    s_row (fx, 3, "SUCCEEDED", T0_S);
    s_row (fx, 4, "PENDING", T0_S);
    for (int id = 1; id <= 5; id++)
        s_mail (fx, id);
    //  4 reaches a terminal state in a transaction that has not committed
    //  (and will roll back, as a failed PG commit would).
    char *error = NULL;
    PGconn *processor = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test-processor", 30000, &error);
    assert_non_null (processor);
    assert_int_equal (mx_pg_begin (processor, &error), 0);
    assert_int_equal (mx_procstate_finish (processor, 4, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, NULL, T0, &error), 1);

    s_start (fx, NULL);
    s_owed (fx, 1, 4);
    s_barrier (fx);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_at IS NOT NULL FROM proc_state WHERE msg_id = 3", s_backfill_rows);
    s_assert_mark (fx, 3, "PROCESSED@" T0_S);
    s_assert_mark (fx, 1, "-");
    s_assert_mark (fx, 2, "-");
    s_assert_mark (fx, 4, "-");

    //  The commit fails: the terminal and its intent are gone with it. A
    //  later sweep (which marks 5) still leaves 4 alone.
    assert_int_equal (mx_pg_rollback (processor, &error), 0);
    mx_pg_disconnect (&processor);
    s_row (fx, 5, "DEAD", T0_S);
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_at IS NOT NULL FROM proc_state WHERE msg_id = 5", s_backfill_rows);
    s_assert_mark (fx, 4, "-");
    mx_testpg_expect (fx->conn, "SELECT string_agg (state || ':' || (backfill_next_at IS NULL), ' ' ORDER BY msg_id)"
                        " FROM proc_state WHERE msg_id IN (1, 2, 4)", "PENDING:true FAILED:true PENDING:true");
}

//  ---------------------------------------------------------------------
//  The gate against replay, on two connections

static void
test_batched_gate_excludes_replay (void **state)
{
    fixture_t *fx = *state;
    char *error = NULL;
    PGconn *backfill = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test-backfill", 30000, &error);
    PGconn *replay = mx_pg_connect (mx_testpg_conninfo (fx->pg), "test-replay", 30000, &error);
    assert_non_null (backfill);
    assert_non_null (replay);
    mx_testpg_exec (fx->conn, "INSERT INTO proc_state (msg_id) VALUES (7), (8)");
    for (int64_t id = 7; id <= 8; id++)
        assert_int_equal (mx_procstate_finish (fx->conn, id, MX_STATE_DEAD, MX_ERR_EXHAUSTED, "x", NULL, T0, &error), 1);

    //  The batch holds both rows while it writes marks: a replay of one of
    //  them waits and, bounded, gives up having moved nothing.
    mx_backfill_row_t rows [10];
    assert_int_equal (mx_backfill_lock (backfill, 1, INT64_MAX, T0, T0 - 30 * DAY_MS, 10, rows, &error), 2);
    int64_t ids [] = { 8 };
    int moved = -1;
    assert_int_equal (mx_procstate_replay (replay, MX_ERR_NONE, ids, 1, "ops", 200, T0, &moved, &error), -1);
    assert_non_null (strstr (error, "55P03"));
    free (error);
    error = NULL;
    mx_backfill_result_t results [] = {
        { .msg_id = 7, .outcome = MX_BACKFILL_CONFIRMED },
        { .msg_id = 8, .outcome = MX_BACKFILL_CONFIRMED },
    };
    assert_int_equal (mx_backfill_record (backfill, results, 2, T0 + 1, &error), 0);
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE backfill_at IS NOT NULL AND state = 'DEAD'", "2");

    //  The other order: a replay holds the row (not committed yet): the
    //  gate skips it without waiting, and after the commit it owes nothing.
    mx_testpg_exec (fx->conn, "INSERT INTO proc_state (msg_id) VALUES (9)");
    assert_int_equal (mx_procstate_finish (fx->conn, 9, MX_STATE_DEAD, MX_ERR_EXHAUSTED, "y", NULL, T0, &error), 1);
    assert_int_equal (mx_pg_begin (replay, &error), 0);
    PGresult *res = PQexec (replay, "UPDATE proc_state SET state = 'PENDING', backfill_next_at = NULL"
                                    " WHERE msg_id = 9");
    assert_int_equal (PQresultStatus (res), PGRES_COMMAND_OK);
    PQclear (res);
    assert_int_equal (mx_backfill_lock (backfill, 1, INT64_MAX, T0, T0 - 30 * DAY_MS, 10, rows, &error), 0);
    assert_int_equal (mx_pg_commit (replay, &error), 0);
    assert_int_equal (mx_backfill_lock (backfill, 1, INT64_MAX, T0, T0 - 30 * DAY_MS, 10, rows, &error), 0);
    mx_testpg_expect (fx->conn, "SELECT state || ' ' || (backfill_at IS NULL) FROM proc_state WHERE msg_id = 9", "PENDING true");
    mx_pg_disconnect (&backfill);
    mx_pg_disconnect (&replay);
}

//  ---------------------------------------------------------------------
//  Every outcome in one record, each row written as its outcome says

static void
test_record_writes_each_outcome (void **state)
{
    fixture_t *fx = *state;
    char *error = NULL;
    mx_testpg_exec (fx->conn, "INSERT INTO proc_state (msg_id) VALUES (11), (12), (13), (14), (15)");
    for (int64_t id = 11; id <= 15; id++)
        assert_int_equal (mx_procstate_finish (fx->conn, id, MX_STATE_SUCCEEDED, MX_ERR_NONE, NULL, NULL, T0,
                                               &error), 1);
    mx_backfill_row_t rows [10];
    assert_int_equal (mx_backfill_lock (fx->conn, 1, INT64_MAX, T0, T0 - 30 * DAY_MS, 10, rows, &error), 5);
    //  Error texts with the characters an array literal quotes or escapes
    //  come back as they were; a confirmed row's error is not kept, nor
    //  one that is not UTF-8 (the server would refuse the whole record).
    mx_backfill_result_t results [] = {
        { .msg_id = 11, .outcome = MX_BACKFILL_CONFIRMED, .attempts = 0, .next_at = -1, .error = "ignored" },
        { .msg_id = 12, .outcome = MX_BACKFILL_MISSING, .attempts = 1, .next_at = -1,
          .error = "row \"12\" {gone}, NULL" },
        { .msg_id = 13, .outcome = MX_BACKFILL_RETRY, .attempts = 2, .next_at = T0 + 5000,
          .error = "write failed: C:\\mailbox" },
        { .msg_id = 14, .outcome = MX_BACKFILL_EXHAUSTED, .attempts = 3, .next_at = -1, .error = NULL },
        { .msg_id = 15, .outcome = MX_BACKFILL_RETRY, .attempts = 1, .next_at = T0 + 5000, .error = "bad \xff byte" },
    };
    assert_int_equal (mx_backfill_record (fx->conn, results, 5, T0 + 1000, &error), 0);
    mx_testpg_expect (fx->conn,
        "SELECT string_agg (concat_ws ('|', msg_id, backfill_at = to_timestamp (" T0_S " + 1),"
        " backfill_next_at = to_timestamp (" T0_S "), backfill_next_at = to_timestamp (" T0_S " + 5),"
        " backfill_attempts, coalesce (backfill_error, '-'), backfill_abandoned_at = to_timestamp (" T0_S " + 1),"
        " coalesce (backfill_abandoned_reason, '-'), updated_at = to_timestamp (" T0_S " + 1)), '; ' ORDER BY msg_id)"
        " FROM proc_state",
        "11|t|0|-|-|t; "
        "12|t|f|1|row \"12\" {gone}, NULL|t|MISSING|t; "
        "13|f|t|2|write failed: C:\\mailbox|-|t; "
        "14|t|f|3|-|t|EXHAUSTED|t; "
        "15|f|t|1|-|-|t");
}

//  ---------------------------------------------------------------------
//  The mailbox goes away and comes back

static void
test_mailbox_down_then_marks_catch_up (void **state)
{
    fixture_t *fx = *state;
    s_proxy_t *proxy = s_proxy_new (mx_testmb_port (fx->mb));
    char port [16];
    snprintf (port, sizeof port, "%d", proxy->port);
    s_set (fx->config, "mailbox.shared-mysql.port", port);
    for (int id = 1; id <= 3; id++) {
        s_row (fx, id, "SUCCEEDED", T0_S);
        s_mail (fx, id);
    }
    //  Port closed: the first write fails and ends the batch.
    s_proxy_command (proxy, 'd');
    s_start (fx, NULL);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_attempts = 1 FROM proc_state WHERE msg_id = 1", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT backfill_error LIKE '%cannot connect to the mailbox%' FROM proc_state WHERE msg_id = 1",
                    "t");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE backfill_attempts = 0 AND backfill_at IS NULL", "2");
    mx_clock_advance (fx->clock, 1000);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_attempts = 1 FROM proc_state WHERE msg_id = 2", s_backfill_rows);

    //  Back: every mark catches up once its time comes.
    s_proxy_command (proxy, 'u');
    mx_clock_advance (fx->clock, 30000);
    mx_testpg_wait_showing (fx->conn, "SELECT count(*) = 3 FROM proc_state WHERE backfill_at IS NOT NULL", s_backfill_rows);
    for (int id = 1; id <= 3; id++)
        s_assert_mark (fx, id, "PROCESSED@1767225631");

    //  Connections cut while the port stays open: the next mark goes
    //  through on a fresh connection.
    s_row (fx, 4, "SKIPPED", T0_S);
    s_mail (fx, 4);
    s_proxy_command (proxy, 'd');
    s_proxy_command (proxy, 'u');
    s_owed (fx, 4, 4);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_at IS NOT NULL FROM proc_state WHERE msg_id = 4", s_backfill_rows);
    mx_testpg_expect (fx->conn, "SELECT backfill_attempts FROM proc_state WHERE msg_id = 4", "0");
    mx_actor_destroy (&fx->actor);
    s_proxy_destroy (&proxy);
}

//  ---------------------------------------------------------------------
//  Recover, shadow mode

static void
test_missing_upstream_then_recover_with_audit (void **state)
{
    fixture_t *fx = *state;
    s_row (fx, 1, "SUCCEEDED", T0_S);
    s_row (fx, 2, "SKIPPED", T0_S);
    s_mail (fx, 1);
    s_mail (fx, 2);
    //  Deleted upstream before its mark.
    char *text = mx_testmb_take (fx->mb, 2);
    assert_non_null (text);
    free (text);
    s_start (fx, NULL);
    s_owed (fx, 1, 2);
    s_barrier (fx);
    mx_testpg_expect (fx->conn, "SELECT string_agg (msg_id || ':' || coalesce (backfill_abandoned_reason, 'confirmed'), ' '"
                        " ORDER BY msg_id) FROM proc_state", "1:confirmed 2:MISSING");

    char *payload = NULL;
    char *verdict = s_admin (fx, "backfill-recover", "{}", &payload);
    assert_string_equal (verdict, "ERR");
    assert_non_null (strstr (payload, "--all"));
    free (verdict);
    free (payload);
    verdict = s_admin (fx, "backfill-recover", "{\"ids\":[0]}", &payload);
    assert_string_equal (verdict, "ERR");
    free (verdict);
    free (payload);
    verdict = s_admin (fx, "backfill-forget", "{}", &payload);
    assert_string_equal (verdict, "ERR");
    free (verdict);
    free (payload);

    //  The row is back upstream; the operator looks first (nothing moves,
    //  the dry run is audited), then re-arms it; without --yes nothing moves.
    s_mail (fx, 2);
    verdict = s_admin (fx, "backfill-recover", "{\"ids\":[2,1],\"os_user\":\"ops\"}", &payload);
    assert_string_equal (verdict, "ERR");
    assert_non_null (strstr (payload, "add --yes to act, or --dry-run to look first"));
    free (verdict);
    free (payload);
    verdict = s_admin (fx, "backfill-recover", "{\"ids\":[2,1],\"os_user\":\"ops\",\"dry_run\":true}", &payload);
    assert_string_equal (verdict, "OK");
    json_t *preview = json_loads (payload, 0, NULL);
    assert_non_null (preview);
    assert_true (json_is_true (json_object_get (preview, "dry_run")));
    assert_int_equal (json_integer_value (json_object_get (preview, "rearmed")), 0);
    json_t *first = json_array_get (json_object_get (preview, "rows"), 0);
    assert_int_equal (json_array_size (json_object_get (preview, "rows")), 1);
    assert_int_equal (json_integer_value (json_object_get (first, "msg_id")), 2);
    assert_string_equal (json_string_value (json_object_get (first, "reason")), "MISSING");
    json_decref (preview);
    free (verdict);
    free (payload);
    mx_testpg_expect (fx->conn, "SELECT backfill_abandoned_reason FROM proc_state WHERE msg_id = 2", "MISSING");
    verdict = s_admin (fx, "backfill-recover", "{\"ids\":[2,1],\"os_user\":\"ops\",\"yes\":true}", &payload);
    assert_string_equal (verdict, "OK");
    assert_non_null (strstr (payload, "\"rearmed\":1,\"msg_ids\":[2]"));
    free (verdict);
    free (payload);
    mx_testpg_wait_showing (fx->conn, "SELECT backfill_at IS NOT NULL FROM proc_state WHERE msg_id = 2", s_backfill_rows);
    s_assert_mark (fx, 2, "PROCESSED@1767225600");
    mx_testpg_expect (fx->conn, "SELECT backfill_attempts || ' ' || (backfill_abandoned_at IS NULL) FROM proc_state"
                        " WHERE msg_id = 2", "0 true");
    mx_testpg_expect (fx->conn, "SELECT string_agg (actor || ':' || os_user || ':' || result || ':' || (target->'msg_ids')::text,"
                        " ',' ORDER BY id) FROM audit_log WHERE action = 'backfill-recover' AND os_user IS NOT NULL",
                    "msgxctl:ops:dry-run:[2],msgxctl:ops:ok:[2]");

    //  --all re-arms every abandoned row and nothing else.
    s_row (fx, 3, "DEAD", T0_S);
    s_row (fx, 4, "DEAD", T0_S);
    mx_testpg_exec (fx->conn, "UPDATE proc_state SET backfill_abandoned_at = now (), backfill_abandoned_reason = 'EXHAUSTED',"
               " backfill_attempts = 4 WHERE msg_id IN (3, 4)");
    verdict = s_admin (fx, "backfill-recover", "{\"all\":true,\"os_user\":\"ops\",\"yes\":true}", &payload);
    assert_string_equal (verdict, "OK");
    assert_non_null (strstr (payload, "\"rearmed\":2,\"msg_ids\":[3,4]"));
    free (verdict);
    free (payload);
    //  No mailbox rows for them: abandoned again, MISSING this time.
    mx_testpg_wait_showing (fx->conn, "SELECT count(*) = 2 FROM proc_state WHERE backfill_abandoned_reason = 'MISSING'", s_backfill_rows);
}

static void
test_shadow_mode_writes_nothing (void **state)
{
    fixture_t *fx = *state;
    s_set (fx->config, "msgx.shadow", "true");
    for (int id = 1; id <= 2; id++) {
        s_row (fx, id, "SUCCEEDED", T0_S);
        s_mail (fx, id);
    }
    char *detail = NULL;
    s_start (fx, &detail);
    assert_non_null (strstr (detail, "shadow"));
    free (detail);
    s_owed (fx, 1, 2);
    mx_clock_advance (fx->clock, 31 * DAY_MS);
    s_barrier (fx);
    s_assert_mark (fx, 1, "-");
    s_assert_mark (fx, 2, "-");
    mx_testpg_expect (fx->conn, "SELECT count(*) FROM proc_state WHERE backfill_at IS NULL AND backfill_attempts = 0"
                        " AND backfill_abandoned_at IS NULL AND backfill_next_at IS NOT NULL", "2");
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_four_outcomes_and_the_backoff, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_fairness_permanent_failures_do_not_hide_later_rows, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_received_at_null_never_overdue, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_only_committed_terminal_rows_are_marked, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_batched_gate_excludes_replay, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_record_writes_each_outcome, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_mailbox_down_then_marks_catch_up, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_missing_upstream_then_recover_with_audit, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_shadow_mode_writes_nothing, s_setup, s_teardown),
    };
    int failed = cmocka_run_group_tests (tests, NULL, NULL);
    zsys_shutdown ();
    return failed;
}
