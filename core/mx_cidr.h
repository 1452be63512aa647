/*  mx_cidr - a list of client address ranges (CIDR), for an allow-list:
    "10.0.0.0/8, 192.0.2.7, ::1/128". An address without a prefix is one
    host. IPv4 ranges also match IPv4-mapped IPv6 peers (::ffff:a.b.c.d),
    as a dual-stack listener reports them.
*/
#ifndef MX_CIDR_H_INCLUDED
#define MX_CIDR_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct _mx_cidr_list_t mx_cidr_list_t;

//  Parses text (comma-separated, blanks allowed). Returns the list, or NULL
//  with *error a malloc'd line naming the entry and what is wrong. Empty
//  text is an empty list (that matches nothing).
mx_cidr_list_t *
    mx_cidr_list_parse (const char *text, char **error);

void
    mx_cidr_list_destroy (mx_cidr_list_t **self_p);

size_t
    mx_cidr_list_size (const mx_cidr_list_t *self);

//  True when addr (AF_INET or AF_INET6) lies in one of the ranges.
bool
    mx_cidr_list_match (const mx_cidr_list_t *self, const struct sockaddr *addr);

#endif
