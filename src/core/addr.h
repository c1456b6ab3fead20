/* addr.h - internal helpers for the tern_addr the API takes. */
#ifndef TERN_CORE_ADDR_H
#define TERN_CORE_ADDR_H

#include "tern.h"

/* The IPv4 address of an API destination into *ip: 0, -TERN_EINVAL for
 * NULL or an unknown family, -TERN_EAFNOSUPPORT for IPv6 (the caller takes
 * its IPv6 path before asking, where it has one) and for IPv4 on a stack
 * without an IPv4 address (our_ip 0). */
static inline int addr_dst_v4(const tern_addr *a, uint32_t our_ip,
                              uint32_t *ip)
{
    if (!a)
        return -TERN_EINVAL;
    if (a->family == TERN_AF_INET6 || (a->family == TERN_AF_INET && !our_ip))
        return -TERN_EAFNOSUPPORT;
    if (a->family != TERN_AF_INET)
        return -TERN_EINVAL;
    *ip = a->u.v4;
    return 0;
}

#endif
