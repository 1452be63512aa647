/*  mx_cidr - see mx_cidr.h.  */
#include "mx_cidr.h"

#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <czmq.h>

//  Every range is held as IPv6: an IPv4 one as ::ffff:a.b.c.d with its
//  prefix moved by 96 bits, so one comparison serves both families.
typedef struct {
    uint8_t address [16];
    unsigned int prefix;        //  0..128
} s_range_t;

struct _mx_cidr_list_t {
    s_range_t *ranges;
    size_t count;
};

static const uint8_t s_mapped_prefix [12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static void
s_mapped (const void *ipv4, uint8_t *out)
{
    memcpy (out, s_mapped_prefix, 12);
    memcpy (out + 12, ipv4, 4);
}

//  One entry, blanks trimmed; 0 or -1 with *error.
static int
s_parse_entry (const char *entry, s_range_t *range, char **error)
{
    char text [INET6_ADDRSTRLEN + 8];
    if (strlen (entry) >= sizeof text) {
        *error = zsys_sprintf ("'%.64s...' is not an address or CIDR range", entry);
        return -1;
    }
    snprintf (text, sizeof text, "%s", entry);
    char *slash = strchr (text, '/');
    long prefix = -1;
    if (slash) {
        *slash = '\0';
        char *end = NULL;
        if (!isdigit ((unsigned char) slash [1])
        ||  (prefix = strtol (slash + 1, &end, 10), *end != '\0')) {
            *error = zsys_sprintf ("'%s': the prefix after '/' must be a number", entry);
            return -1;
        }
    }
    uint8_t ipv4 [4];
    if (inet_pton (AF_INET, text, ipv4) == 1) {
        if (prefix > 32) {
            *error = zsys_sprintf ("'%s': an IPv4 prefix is at most 32", entry);
            return -1;
        }
        s_mapped (ipv4, range->address);
        range->prefix = 96 + (unsigned int) (prefix < 0 ? 32 : prefix);
    }
    else
    if (inet_pton (AF_INET6, text, range->address) == 1) {
        if (prefix > 128) {
            *error = zsys_sprintf ("'%s': an IPv6 prefix is at most 128", entry);
            return -1;
        }
        range->prefix = (unsigned int) (prefix < 0 ? 128 : prefix);
    }
    else {
        *error = zsys_sprintf ("'%s' is not an IPv4 or IPv6 address or CIDR range", entry);
        return -1;
    }
    //  Host bits set (10.1.2.3/8) most likely mean another range than the
    //  one written: refused rather than guessed.
    for (unsigned int bit = range->prefix; bit < 128; bit++)
        if (range->address [bit / 8] & (0x80u >> (bit % 8))) {
            *error = zsys_sprintf ("'%s': address bits beyond the prefix are set", entry);
            return -1;
        }
    return 0;
}

mx_cidr_list_t *
mx_cidr_list_parse (const char *text, char **error)
{
    assert (text);
    mx_cidr_list_t *self = (mx_cidr_list_t *) calloc (1, sizeof *self);
    assert (self);
    //  Every piece between commas is an entry; blank text alone is the
    //  empty list, a blank piece anywhere else a mistake.
    bool listed = strchr (text, ',') != NULL;
    const char *at = text;
    while (true) {
        const char *comma = strchr (at, ',');
        size_t length = comma ? (size_t) (comma - at) : strlen (at);
        const char *start = at;
        while (length > 0 && isspace ((unsigned char) *start)) {
            start++;
            length--;
        }
        while (length > 0 && isspace ((unsigned char) start [length - 1]))
            length--;
        if (length == 0 && listed) {
            *error = strdup ("an empty entry in the list (two commas, or a comma at an end)");
            mx_cidr_list_destroy (&self);
            return NULL;
        }
        if (length > 0) {
            char *entry = strndup (start, length);
            s_range_t range;
            int rc = s_parse_entry (entry, &range, error);
            free (entry);
            if (rc) {
                mx_cidr_list_destroy (&self);
                return NULL;
            }
            s_range_t *ranges = (s_range_t *) realloc (self->ranges, (self->count + 1) * sizeof *ranges);
            assert (ranges);
            ranges [self->count++] = range;
            self->ranges = ranges;
        }
        if (!comma)
            break;
        at = comma + 1;
    }
    return self;
}

void
mx_cidr_list_destroy (mx_cidr_list_t **self_p)
{
    assert (self_p);
    if (*self_p) {
        free ((*self_p)->ranges);
        free (*self_p);
        *self_p = NULL;
    }
}

size_t
mx_cidr_list_size (const mx_cidr_list_t *self)
{
    return self ? self->count : 0;
}

bool
mx_cidr_list_match (const mx_cidr_list_t *self, const struct sockaddr *addr)
{
    if (!self || !addr)
        return false;
    uint8_t address [16];
    if (addr->sa_family == AF_INET)
        s_mapped (&((const struct sockaddr_in *) addr)->sin_addr, address);
    else
    if (addr->sa_family == AF_INET6)
        memcpy (address, &((const struct sockaddr_in6 *) addr)->sin6_addr, 16);
    else
        return false;
    for (size_t i = 0; i < self->count; i++) {
        const s_range_t *range = &self->ranges [i];
        unsigned int whole = range->prefix / 8, rest = range->prefix % 8;
        if (memcmp (address, range->address, whole) != 0)
            continue;
        if (rest && ((address [whole] ^ range->address [whole]) & (uint8_t) (0xff00u >> rest)))
            continue;
        return true;
    }
    return false;
}
