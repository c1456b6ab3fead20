/* parse.c - strict value parsers for flags (see parse.h). */
#include "parse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* Split "123K" into a number part and a one-letter suffix multiplier. */
static bool split_suffix(const char *s, char *num, size_t nlen, double *mul,
                         double base)
{
    size_t len = strlen(s);
    if (len == 0 || len >= nlen)
        return false;
    memcpy(num, s, len + 1);
    *mul = 1;
    char c = num[len - 1];
    const char *units = "kmgt";
    const char *u = strchr(units, c | 0x20);
    if (u && c != 'e' && c != 'E') {
        num[len - 1] = 0;
        for (int i = 0; i <= u - units; i++)
            *mul *= base;
        if (len == 1)
            return false;
    }
    return true;
}

bool parse_size(const char *s, uint64_t *out)
{
    char num[64];
    double mul;
    if (!s || !split_suffix(s, num, sizeof num, &mul, 1024))
        return false;
    uint64_t v;
    if (!parse_u64(num, &v))
        return false;
    if (mul > 1 && v > UINT64_MAX / (uint64_t)mul)
        return false;
    *out = v * (uint64_t)mul;
    return true;
}

bool parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool parse_rate(const char *s, double *out)
{
    char num[64];
    double mul, v;
    if (!s || !split_suffix(s, num, sizeof num, &mul, 1000))
        return false;
    if (!parse_double(num, &v) || v <= 0)
        return false;
    *out = v * mul;
    return true;
}

bool parse_ip4(const char *s, uint32_t *ip)
{
    unsigned part[4];
    int n = 0;
    const char *p = s;
    if (!s)
        return false;
    for (int i = 0; i < 4; i++) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned v = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (unsigned)(*p++ - '0');
            if (++digits > 3 || v > 255)
                return false;
        }
        part[n++] = v;
        if (i < 3 && *p++ != '.')
            return false;
    }
    if (*p)
        return false;
    *ip = part[0] << 24 | part[1] << 16 | part[2] << 8 | part[3];
    return true;
}

bool parse_ip4_prefix(const char *s, uint32_t *ip, unsigned *prefix)
{
    char buf[32];
    const char *slash = strchr(s, '/');
    size_t len = slash ? (size_t)(slash - s) : strlen(s);
    if (len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    if (!parse_ip4(buf, ip))
        return false;
    *prefix = 24;
    if (slash) {
        uint64_t p;
        if (!parse_u64(slash + 1, &p) || p < 1 || p > 32)
            return false;
        *prefix = (unsigned)p;
    }
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

bool parse_mac(const char *s, uint8_t mac[6])
{
    if (!s || strlen(s) != 17)
        return false;
    for (int i = 0; i < 6; i++) {
        int hi = hexval(s[i * 3]), lo = hexval(s[i * 3 + 1]);
        if (hi < 0 || lo < 0 || (i < 5 && s[i * 3 + 2] != ':'))
            return false;
        mac[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

bool parse_cores(const char *s, unsigned *cores, unsigned *n, unsigned max)
{
    static const unsigned limit = 4096;
    unsigned char seen[4096];
    memset(seen, 0, sizeof seen);
    if (!s || !*s)
        return false;
    const char *p = s;
    while (*p) {
        char *end;
        if (*p < '0' || *p > '9')
            return false;
        unsigned long a = strtoul(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                return false;
            b = strtoul(p, &end, 10);
            p = end;
        }
        if (a > b || b >= limit)
            return false;
        for (unsigned long i = a; i <= b; i++)
            seen[i] = 1;
        if (*p == ',') {
            p++;
            if (!*p)
                return false;
        } else if (*p) {
            return false;
        }
    }
    *n = 0;
    for (unsigned i = 0; i < limit; i++) {
        if (!seen[i])
            continue;
        if (*n >= max)
            return false;
        cores[(*n)++] = i;
    }
    return *n > 0;
}

char *fmt_ip4(uint32_t ip, char out[16])
{
    snprintf(out, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255,
             (ip >> 8) & 255, ip & 255);
    return out;
}
