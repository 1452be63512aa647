/*  mx_admin_ledger - see mx_admin_ledger.h.  */
#include "mx_admin_ledger.h"

#include <assert.h>
#include <czmq.h>

//  A ZeroMQ routing id: 1 to 255 bytes.
typedef struct {
    uint8_t size;
    uint8_t data [255];
} s_id_t;

//  One fd: the connection open on it and the ids read from it that no
//  close has taken yet.
typedef struct {
    uint64_t open;              //  number of the connection open on it, 0: none
    s_id_t *ids;                //  ids not taken, in the order read
    size_t count, room;
    s_id_t taken;               //  the id the last close took (size 0: none)
} s_fd_t;

struct _mx_admin_ledger_t {
    zhashx_t *fds;              //  "fd" -> s_fd_t
    uint64_t accepted;
};

static void
s_fd_destroy (s_fd_t **self_p)
{
    if (*self_p) {
        free ((*self_p)->ids);
        free (*self_p);
        *self_p = NULL;
    }
}

mx_admin_ledger_t *
mx_admin_ledger_new (void)
{
    mx_admin_ledger_t *self = (mx_admin_ledger_t *) zmalloc (sizeof (mx_admin_ledger_t));
    self->fds = zhashx_new ();
    zhashx_set_destructor (self->fds, (zhashx_destructor_fn *) s_fd_destroy);
    return self;
}

void
mx_admin_ledger_destroy (mx_admin_ledger_t **self_p)
{
    if (*self_p) {
        zhashx_destroy (&(*self_p)->fds);
        free (*self_p);
        *self_p = NULL;
    }
}

//  Records live as long as the ledger: at most one per fd number.
static s_fd_t *
s_fd (mx_admin_ledger_t *self, int fd)
{
    char key [16];
    snprintf (key, sizeof key, "%d", fd);
    s_fd_t *entry = (s_fd_t *) zhashx_lookup (self->fds, key);
    if (!entry) {
        entry = (s_fd_t *) zmalloc (sizeof (s_fd_t));
        zhashx_insert (self->fds, key, entry);
    }
    return entry;
}

static bool
s_id_equal (const s_id_t *a, const s_id_t *b)
{
    return a->size == b->size && memcmp (a->data, b->data, a->size) == 0;
}

//  An id the ROUTER generated: 0 and a big-endian counter.
static bool
s_id_generated (const s_id_t *id, uint32_t *counter)
{
    if (id->size != 5 || id->data [0] != 0)
        return false;
    *counter = (uint32_t) id->data [1] << 24 | (uint32_t) id->data [2] << 16 | (uint32_t) id->data [3] << 8
             | (uint32_t) id->data [4];
    return true;
}

//  Whether a was given before b. The counter starts at a random value and
//  wraps: compared as serial numbers. An id a client chose carries no
//  order: those go first, in the order read.
static bool
s_id_before (const s_id_t *a, const s_id_t *b)
{
    uint32_t ca, cb;
    bool ga = s_id_generated (a, &ca), gb = s_id_generated (b, &cb);
    if (ga && gb)
        return (int32_t) (ca - cb) < 0;
    return !ga && gb;
}

uint64_t
mx_admin_ledger_accepted (mx_admin_ledger_t *self, int fd)
{
    assert (self);
    s_fd (self, fd)->open = ++self->accepted;
    return self->accepted;
}

void
mx_admin_ledger_request (mx_admin_ledger_t *self, int fd, const void *routing_id, size_t size)
{
    assert (self);
    if (fd < 0 || size == 0 || size > 255)
        return;                 //  no connection to charge it to
    s_id_t id = { .size = (uint8_t) size };
    memcpy (id.data, routing_id, size);
    s_fd_t *entry = s_fd (self, fd);
    //  A connection sends request after request under one id.
    if (s_id_equal (&entry->taken, &id))
        return;
    for (size_t i = 0; i < entry->count; i++)
        if (s_id_equal (&entry->ids [i], &id))
            return;
    if (entry->count == entry->room) {
        entry->room = entry->room ? 2 * entry->room : 2;
        entry->ids = (s_id_t *) realloc (entry->ids, entry->room * sizeof (s_id_t));
        assert (entry->ids);
    }
    entry->ids [entry->count++] = id;
}

uint64_t
mx_admin_ledger_closed (mx_admin_ledger_t *self, int fd, bool handshake_failed)
{
    assert (self);
    s_fd_t *entry = s_fd (self, fd);
    uint64_t closing = entry->open;
    entry->open = 0;
    //  Not seen accepted (before the monitor started), or never able to
    //  send: nothing to decide.
    if (!closing || handshake_failed)
        return 0;
    if (entry->count == 0)
        return closing;
    size_t oldest = 0;
    for (size_t i = 1; i < entry->count; i++)
        if (s_id_before (&entry->ids [i], &entry->ids [oldest]))
            oldest = i;
    entry->taken = entry->ids [oldest];
    memmove (&entry->ids [oldest], &entry->ids [oldest + 1], (entry->count - oldest - 1) * sizeof (s_id_t));
    entry->count--;
    return 0;
}
