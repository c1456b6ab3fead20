/* util.c - memory helpers, SipHash and address text, written for a
 * freestanding build (no libc). The Internet checksum is in csum.c. */
#include "util.h"

#include "tern.h"

#ifndef TERN_USE_BUILTIN_MEM
void tern_memcpy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    while (n--)
        *d++ = *s++;
}

void tern_memset(void *dst, int c, size_t n)
{
    uint8_t *d = dst;
    while (n--)
        *d++ = (uint8_t)c;
}

int tern_memcmp(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y)
            return *x < *y ? -1 : 1;
    return 0;
}
#endif

/* ---- SipHash-2-4 (Aumasson & Bernstein), from the published algorithm ---- */

static inline uint64_t rotl64(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIP_ROUND(v0, v1, v2, v3)                                         \
    do {                                                                   \
        v0 += v1; v1 = rotl64(v1, 13); v1 ^= v0; v0 = rotl64(v0, 32);     \
        v2 += v3; v3 = rotl64(v3, 16); v3 ^= v2;                           \
        v0 += v3; v3 = rotl64(v3, 21); v3 ^= v0;                           \
        v2 += v1; v1 = rotl64(v1, 17); v1 ^= v2; v2 = rotl64(v2, 32);     \
    } while (0)

uint64_t tern_siphash(const uint8_t key[16], const uint8_t *data, size_t len)
{
    uint64_t k0 = ld64le(key), k1 = ld64le(key + 8);
    uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
    size_t left = len;
    for (; left >= 8; left -= 8, data += 8) {
        uint64_t m = ld64le(data);
        v3 ^= m;
        SIP_ROUND(v0, v1, v2, v3);
        SIP_ROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < left; i++)
        b |= (uint64_t)data[i] << (8 * i);
    v3 ^= b;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= b;
    v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        SIP_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- dotted-quad text ---- */

char *tern_ip4_format(uint32_t ip, char *out)
{
    char *p = out;
    for (int shift = 24; shift >= 0; shift -= 8) {
        unsigned v = (ip >> shift) & 0xff;
        if (v >= 100)
            *p++ = (char)('0' + v / 100);
        if (v >= 10)
            *p++ = (char)('0' + (v / 10) % 10);
        *p++ = (char)('0' + v % 10);
        if (shift)
            *p++ = '.';
    }
    *p = '\0';
    return out;
}

bool tern_ip4_parse(const char *text, uint32_t *ip)
{
    uint32_t v = 0;
    for (int part = 0; part < 4; part++) {
        unsigned n = 0, digits = 0;
        while (*text >= '0' && *text <= '9') {
            n = n * 10 + (unsigned)(*text++ - '0');
            if (++digits > 3 || n > 255)
                return false;
        }
        if (!digits)
            return false;
        if (part < 3 && *text++ != '.')
            return false;
        v = v << 8 | n;
    }
    if (*text != '\0')
        return false;
    *ip = v;
    return true;
}
