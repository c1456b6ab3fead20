/* addr.c - tern_addr: building, comparing, and the text forms of both
 * families (RFC 4291 section 2.2 in, RFC 5952 out). */
#include "util.h"

#include "tern.h"

tern_addr tern_addr_v4(uint32_t host_order)
{
    tern_addr a;
    tern_memset(&a, 0, sizeof a);
    a.family = TERN_AF_INET;
    a.u.v4 = host_order;
    return a;
}

tern_addr tern_addr_v6(const uint8_t bytes[16])
{
    tern_addr a;
    tern_memset(&a, 0, sizeof a);
    a.family = TERN_AF_INET6;
    tern_memcpy(a.u.v6, bytes, 16);
    return a;
}

bool tern_addr_eq(const tern_addr *a, const tern_addr *b)
{
    if (a->family != b->family)
        return false;
    if (a->family == TERN_AF_INET)
        return a->u.v4 == b->u.v4;
    if (a->family == TERN_AF_INET6)
        return tern_memcmp(a->u.v6, b->u.v6, 16) == 0;
    return false;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The dotted tail of an IPv6 text (at most 15 characters up to the end). */
static bool v4_tail(const char *t, uint8_t out[4])
{
    uint32_t v;
    if (!tern_ip4_parse(t, &v))
        return false;
    out[0] = (uint8_t)(v >> 24);
    out[1] = (uint8_t)(v >> 16);
    out[2] = (uint8_t)(v >> 8);
    out[3] = (uint8_t)v;
    return true;
}

/* RFC 4291 2.2: eight groups of 1-4 hex digits, one "::" for a run of zero
 * groups, optionally the last 32 bits as dotted IPv4. */
static bool v6_parse(const char *t, uint8_t out[16])
{
    uint8_t b[16] = {0};
    int n = 0;          /* bytes written */
    int gap = -1;       /* byte index where "::" stands */
    if (t[0] == ':') {
        if (t[1] != ':')
            return false;
        gap = 0;
        t += 2;
        if (*t == '\0')
            goto done;
    }
    for (;;) {
        const char *start = t;
        unsigned v = 0;
        int d, digits = 0;
        while ((d = hex_digit(*t)) >= 0) {
            if (++digits > 4)
                return false;
            v = v << 4 | (unsigned)d;
            t++;
        }
        if (*t == '.') {   /* dotted IPv4 in the last 32 bits */
            if (n > 12 || !v4_tail(start, b + n))
                return false;
            n += 4;
            break;
        }
        if (!digits || n > 14)
            return false;
        b[n++] = (uint8_t)(v >> 8);
        b[n++] = (uint8_t)v;
        if (*t == '\0')
            break;
        if (*t++ != ':')
            return false;
        if (*t == ':') {
            if (gap >= 0)
                return false;      /* a second "::" */
            gap = n;
            t++;
            if (*t == '\0')
                break;
        } else if (*t == '\0') {
            return false;          /* a trailing single ':' */
        }
    }
done:
    if (gap < 0) {
        if (n != 16)
            return false;
    } else {
        if (n > 14)
            return false;          /* "::" must stand for one group or more */
        int tail = n - gap;
        for (int i = 0; i < tail; i++)
            b[15 - i] = b[n - 1 - i];
        for (int i = gap; i < 16 - tail; i++)
            b[i] = 0;
    }
    tern_memcpy(out, b, 16);
    return true;
}

bool tern_addr_parse(const char *text, tern_addr *out)
{
    if (!text || !out)
        return false;
    uint32_t v4;
    if (tern_ip4_parse(text, &v4)) {
        *out = tern_addr_v4(v4);
        return true;
    }
    uint8_t v6[16];
    if (!v6_parse(text, v6))
        return false;
    *out = tern_addr_v6(v6);
    return true;
}

static char *hex_group(char *p, unsigned v)
{
    static const char digits[] = "0123456789abcdef";
    bool any = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
        unsigned d = (v >> shift) & 0xf;
        if (d || any || shift == 0) {
            *p++ = digits[d];
            any = true;
        }
    }
    return p;
}

/* RFC 5952 section 4 (and 5 for IPv4-mapped addresses). */
static void v6_format(const uint8_t a[16], char *out)
{
    unsigned g[8];
    for (int i = 0; i < 8; i++)
        g[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
    int best = -1, best_len = 1;   /* a single zero group is not shortened */
    for (int i = 0; i < 8;) {
        if (g[i]) {
            i++;
            continue;
        }
        int j = i;
        while (j < 8 && !g[j])
            j++;
        if (j - i > best_len) {
            best = i;
            best_len = j - i;
        }
        i = j;
    }
    bool mapped = !g[0] && !g[1] && !g[2] && !g[3] && !g[4] && g[5] == 0xffff;
    int groups = mapped ? 6 : 8;
    if (mapped) {
        best = 0;
        best_len = 5;
    }
    char *p = out;
    for (int i = 0; i < groups; i++) {
        if (i == best) {
            *p++ = ':';
            *p++ = ':';
            i += best_len - 1;
            continue;
        }
        if (i && i != best + best_len)
            *p++ = ':';
        p = hex_group(p, g[i]);
    }
    if (mapped) {
        *p++ = ':';
        tern_ip4_format((uint32_t)a[12] << 24 | (uint32_t)a[13] << 16 |
                            (uint32_t)a[14] << 8 | a[15], p);
        return;
    }
    *p = '\0';
}

char *tern_addr_format(const tern_addr *a, char *out)
{
    if (a && a->family == TERN_AF_INET)
        return tern_ip4_format(a->u.v4, out);
    if (a && a->family == TERN_AF_INET6) {
        v6_format(a->u.v6, out);
        return out;
    }
    out[0] = '?';
    out[1] = '\0';
    return out;
}
