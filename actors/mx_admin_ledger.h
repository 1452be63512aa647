/*  mx_admin_ledger - which admin connections closed before a whole request
    arrived, from the admin socket's monitor events and the requests read.

    The two come over different sockets, so their order is not the order
    in which they happened, and a closed connection's fd is soon another
    connection's. What libzmq (4.3) does guarantee, and the ledger relies
    on:
    - on one fd, connections follow each other: a connection's ACCEPTED
      comes after the previous one's DISCONNECTED in the monitor stream;
    - a connection's requests are queued on the ROUTER before its
      DISCONNECTED is sent, so the caller reads every request still
      queued before it reports a close (mx_admin_ledger_closed);
    - the ROUTER numbers the connections it gives a routing id (5 bytes: 0
      and a 32-bit counter), so on one fd a later connection has a later
      id; a client may choose its own id instead.
    A request tells its fd and routing id: a connection that spoke leaves
    one id on its fd. At a close the oldest id left on that fd is taken as
    the closing connection's. When that connection did not speak, the id
    may be of the next connection on the fd, already read: the close then
    counts nothing, and the next one counts the drop when it closes with no
    id left. So the count is never too high, and exact once the fd's next
    connection has closed too.  */
#ifndef MX_ADMIN_LEDGER_H_INCLUDED
#define MX_ADMIN_LEDGER_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct _mx_admin_ledger_t mx_admin_ledger_t;

mx_admin_ledger_t *
    mx_admin_ledger_new (void);

void
    mx_admin_ledger_destroy (mx_admin_ledger_t **self_p);

//  ZMQ_EVENT_ACCEPTED on fd. Returns the connection's number (1, 2, ...
//  in the order accepted).
uint64_t
    mx_admin_ledger_accepted (mx_admin_ledger_t *self, int fd);

//  A whole request read from fd (ZMQ_SRCFD) with the routing id the
//  ROUTER put before it.
void
    mx_admin_ledger_request (mx_admin_ledger_t *self, int fd, const void *routing_id, size_t size);

//  ZMQ_EVENT_DISCONNECTED on fd, after every request still queued was
//  passed to mx_admin_ledger_request. handshake_failed: the connection
//  never got to send (a probe, a refused CURVE key). Returns the number of
//  the connection counted as dropped, or 0.
uint64_t
    mx_admin_ledger_closed (mx_admin_ledger_t *self, int fd, bool handshake_failed);

#endif
