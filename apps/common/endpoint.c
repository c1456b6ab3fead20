/* endpoint.c - command-line addresses and endpoints (see endpoint.h). */
#include "endpoint.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), false)

ep_addr ep_addr_v4(uint32_t host_order)
{
    ep_addr a;
    memset(&a, 0, sizeof a);
    a.family = EP_AF_INET;
    a.v4 = host_order;
    return a;
}

bool ep_addr_is_v6(const ep_addr *a) { return a->family == EP_AF_INET6; }

/* An unbracketed address of len bytes at s. */
static bool addr_text(const char *s, size_t len, ep_addr *out, char *err,
                      size_t errlen)
{
    char buf[64];
    if (len == 0)
        return ERR("empty address");
    if (len >= sizeof buf)
        return ERR("'%.*s...' is too long for an address", 20, s);
    memcpy(buf, s, len);
    buf[len] = 0;
    memset(out, 0, sizeof *out);
    if (strchr(buf, ':')) {
        if (strchr(buf, '%'))
            return ERR("'%s': zone indexes (%%NAME) are not taken", buf);
        if (inet_pton(AF_INET6, buf, out->v6) != 1)
            return ERR("'%s' is not an IPv6 address (RFC 4291 text, like "
                       "2001:db8::2)", buf);
        out->family = EP_AF_INET6;
        return true;
    }
    out->family = EP_AF_INET;
    if (strcmp(buf, "localhost") == 0) {
        out->v4 = 0x7f000001u;
        return true;
    }
    if (strspn(buf, "0123456789.") == len) {
        if (!parse_ip4(buf, &out->v4))
            return ERR("'%s' is not an IPv4 address (A.B.C.D, each 0..255)",
                       buf);
        return true;
    }
    return ERR("'%s' is neither an IPv4 nor an IPv6 address (host names "
               "other than localhost are not looked up)", buf);
}

/* "[...]" at s: the address inside, *end set past the ']'. */
static bool bracketed(const char *s, ep_addr *out, const char **end,
                      char *err, size_t errlen)
{
    const char *close = strchr(s, ']');
    if (!close)
        return ERR("missing ']' after the IPv6 address");
    if (!addr_text(s + 1, (size_t)(close - s - 1), out, err, errlen))
        return false;
    if (out->family != EP_AF_INET6)
        return ERR("brackets are for IPv6 addresses only");
    *end = close + 1;
    return true;
}

bool ep_addr_parse(const char *s, ep_addr *out, char *err, size_t errlen)
{
    if (!s || !*s)
        return ERR("empty address");
    if (*s == '[') {
        const char *end;
        if (!bracketed(s, out, &end, err, errlen))
            return false;
        if (*end)
            return ERR("unexpected '%s' after ']' (an address, not an "
                       "endpoint)", end);
        return true;
    }
    return addr_text(s, strlen(s), out, err, errlen);
}

static bool port_text(const char *s, uint16_t *port, char *err,
                      size_t errlen)
{
    uint64_t p;
    if (!*s)
        return ERR("missing port number after ':'");
    if (!parse_u64(s, &p) || p == 0 || p > 65535)
        return ERR("port '%s' is not a number 1..65535", s);
    *port = (uint16_t)p;
    return true;
}

bool ep_parse(const char *s, endpoint *out, char *err, size_t errlen)
{
    if (!s || !*s)
        return ERR("empty endpoint (HOST:PORT or [IPV6]:PORT)");
    if (*s == '[') {
        const char *end;
        if (!bracketed(s, &out->addr, &end, err, errlen))
            return false;
        if (!*end)
            return ERR("missing ':PORT' after ']'");
        if (*end != ':')
            return ERR("expected ':PORT' after ']', not '%s'", end);
        return port_text(end + 1, &out->port, err, errlen);
    }
    const char *colon = strchr(s, ':');
    if (!colon)
        return ERR("missing ':PORT' (HOST:PORT or [IPV6]:PORT)");
    if (strchr(colon + 1, ':'))
        return ERR("an IPv6 endpoint needs brackets: [ADDR]:PORT");
    if (!addr_text(s, (size_t)(colon - s), &out->addr, err, errlen))
        return false;
    return port_text(colon + 1, &out->port, err, errlen);
}

bool ep_prefix6_parse(const char *s, uint8_t ip6[16], unsigned *prefix,
                      char *err, size_t errlen)
{
    ep_addr a;
    if (!s || !*s)
        return ERR("empty address");
    const char *slash = strchr(s, '/');
    size_t len = slash ? (size_t)(slash - s) : strlen(s);
    if (!addr_text(s, len, &a, err, errlen))
        return false;
    if (a.family != EP_AF_INET6)
        return ERR("not an IPv6 address (expected ADDR/PREFIX like "
                   "2001:db8::2/64)");
    *prefix = 64;
    if (slash) {
        uint64_t p;
        if (!parse_u64(slash + 1, &p) || p < 1 || p > 128)
            return ERR("prefix length '%s' is not a number 1..128", slash + 1);
        *prefix = (unsigned)p;
    }
    memcpy(ip6, a.v6, 16);
    return true;
}

char *ep_addr_format(const ep_addr *a, char *out)
{
    if (a->family == EP_AF_INET6)
        inet_ntop(AF_INET6, a->v6, out, EP_STRLEN);
    else
        fmt_ip4(a->v4, out);
    return out;
}

char *ep_format(const endpoint *e, char *out)
{
    char a[EP_STRLEN];
    ep_addr_format(&e->addr, a);
    snprintf(out, EP_STRLEN, ep_addr_is_v6(&e->addr) ? "[%s]:%u" : "%s:%u",
             a, (unsigned)e->port);
    return out;
}
