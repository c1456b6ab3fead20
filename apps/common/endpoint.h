/* endpoint.h - addresses and endpoints as every program (tern-* and kern-*)
 * takes them on its command line, parsed in this one place:
 *
 *   address   198.18.0.2 | 2001:db8::2 | [2001:db8::2] | localhost
 *   endpoint  198.18.0.2:7007 | [2001:db8::2]:7007 | localhost:7007
 *   prefix    198.18.0.2/24 | 2001:db8::2/64
 *
 * An IPv6 endpoint needs its brackets (2001:db8::2:7007 is itself a valid
 * address). Host names other than localhost (127.0.0.1) are not looked up,
 * nor are zone indexes (%eth0) taken. Every parser returns false on any
 * malformed input with the reason in words in err, and never accepts
 * trailing garbage. */
#ifndef APPS_ENDPOINT_H
#define APPS_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The same numbers as tern.h's TERN_AF_INET / TERN_AF_INET6, so a
 * conversion to the stack's address type is a copy. */
enum { EP_AF_INET = 4, EP_AF_INET6 = 6 };

typedef struct ep_addr {
    uint8_t family;     /* EP_AF_INET or EP_AF_INET6 */
    uint32_t v4;        /* host order */
    uint8_t v6[16];     /* network order */
} ep_addr;

typedef struct endpoint {
    ep_addr addr;
    uint16_t port;      /* 1..65535 */
} endpoint;

/* Longest text of an endpoint: "[" 45 "]:" 5 and the terminator. */
#define EP_STRLEN 56

bool ep_addr_parse(const char *s, ep_addr *out, char *err, size_t errlen);
/* IPv6 only, "ADDR/P" (P 1..128, 64 when absent); brackets not taken. */
bool ep_prefix6_parse(const char *s, uint8_t ip6[16], unsigned *prefix,
                      char *err, size_t errlen);
bool ep_parse(const char *s, endpoint *out, char *err, size_t errlen);

/* Text forms: "198.18.0.2", "2001:db8::2" (RFC 5952), and endpoints as
 * "198.18.0.2:7007" / "[2001:db8::2]:7007". out holds EP_STRLEN. */
char *ep_addr_format(const ep_addr *a, char *out);
char *ep_format(const endpoint *e, char *out);

ep_addr ep_addr_v4(uint32_t host_order);
bool ep_addr_is_v6(const ep_addr *a);

#endif
