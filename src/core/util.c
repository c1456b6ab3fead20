/* util.c - memory helpers, the Internet checksum, SipHash and address text,
 * written for a freestanding build (no libc). */
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

/* Little-endian loads composed from bytes: one mov on x86, correct
 * everywhere. Summing little-endian words gives the byte-swapped
 * ones'-complement sum, which we swap back once at the end (RFC 1071:
 * the sum is byte-order independent up to that swap). */
static inline uint32_t ld32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline uint64_t ld64le(const uint8_t *p)
{
    return (uint64_t)ld32le(p) | (uint64_t)ld32le(p + 4) << 32;
}

/* Ones'-complement addition of 64-bit words (end-around carry). gcc and
 * clang compile `a += w; c += a < w` to add + adc, so the bulk loop costs
 * two instructions per 8 bytes. */
static inline uint64_t add64(uint64_t a, uint64_t b)
{
    a += b;
    return a + (a < b);
}

/* The last len (< 8) bytes as the low bytes of a little-endian word, read
 * by 4, 2 and 1 bytes rather than one at a time. */
static inline uint64_t tail_le(const uint8_t *p, size_t len)
{
    uint64_t t = 0;
    unsigned sh = 0;
    if (len & 4) {
        t = ld32le(p);
        p += 4;
        sh = 32;
    }
    if (len & 2) {
        t |= (uint64_t)((uint32_t)p[0] | (uint32_t)p[1] << 8) << sh;
        p += 2;
        sh += 16;
    }
    if (len & 1)
        t |= (uint64_t)p[0] << sh;
    return t;
}

/* Finish a little-endian 64-bit sum: to network order, plus the caller's
 * running sum, folded to 16 bits. Rotating a ones'-complement sum by 8 bits
 * swaps the bytes of its 16-bit fold (it multiplies by 2^8, and
 * 2^8 * 2^8 = 1 modulo 0xffff), so the swap is one rotate. Nonzero sums
 * stay nonzero (0xffff, never 0), as RFC 1071 arithmetic wants. */
static inline uint32_t csum_finish(uint64_t acc, uint32_t sum)
{
    acc = add64((acc << 8) | (acc >> 56), sum);
    uint32_t lo = (uint32_t)acc, hi = (uint32_t)(acc >> 32);
    lo += hi;
    lo += lo < hi;
    lo = (lo & 0xffffu) + (lo >> 16);
    return (lo & 0xffffu) + (lo >> 16);
}

/* One 64-bit word into a carry chain: gcc and clang turn this into
 * add + adc (the carries are counted in c and added back at the end). */
static inline void chain_add(uint64_t *a, uint64_t *c, uint64_t w)
{
    *a += w;
    *c += *a < w;
}

/* Eight words into two carry chains, so the adds can overlap. */
static inline void sum_block64(uint64_t a[2], uint64_t c[2], const uint8_t *p)
{
    chain_add(&a[0], &c[0], ld64le(p));
    chain_add(&a[1], &c[1], ld64le(p + 8));
    chain_add(&a[0], &c[0], ld64le(p + 16));
    chain_add(&a[1], &c[1], ld64le(p + 24));
    chain_add(&a[0], &c[0], ld64le(p + 32));
    chain_add(&a[1], &c[1], ld64le(p + 40));
    chain_add(&a[0], &c[0], ld64le(p + 48));
    chain_add(&a[1], &c[1], ld64le(p + 56));
}

uint32_t tern_csum_partial(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    uint64_t a[2] = {0, 0}, c[2] = {0, 0};
    /* 128 bytes a turn: gcc sets up each turn's carry counts with a few
     * extra instructions, so fewer turns cost less (~0.3 per byte). */
    for (; len >= 128; p += 128, len -= 128) {
        sum_block64(a, c, p);
        sum_block64(a, c, p + 64);
    }
    if (len >= 64) {
        sum_block64(a, c, p);
        p += 64;
        len -= 64;
    }
    for (; len >= 8; p += 8, len -= 8)
        chain_add(&a[0], &c[0], ld64le(p));
    a[1] = add64(a[1], tail_le(p, len));
    /* the carry counts are far below 2^63: their sum cannot wrap */
    return csum_finish(add64(add64(a[0], a[1]), c[0] + c[1]), sum);
}

/* Copy len bytes and return their partial sum (as tern_csum_partial):
 * the sum rides on the loads of the copy. */
uint32_t tern_csum_copy(void *dst, const void *src, size_t len, uint32_t sum)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    uint64_t a0 = 0, a1 = 0, c0 = 0, c1 = 0;
    /* constant-size copies become a load and a store of 16 bytes; the
     * sum reads the same bytes again from L1 */
    for (; len >= 16; s += 16, d += 16, len -= 16) {
        tern_memcpy(d, s, 16);
        chain_add(&a0, &c0, ld64le(s));
        chain_add(&a1, &c1, ld64le(s + 8));
    }
    if (len >= 8) {
        tern_memcpy(d, s, 8);
        a0 = add64(a0, ld64le(s));
        s += 8;
        d += 8;
        len -= 8;
    }
    uint64_t t = tail_le(s, len);
    for (size_t i = 0; i < len; i++)
        d[i] = (uint8_t)(t >> (8 * i));
    a1 = add64(a1, t);
    return csum_finish(add64(add64(a0, a1), c0 + c1), sum);
}

uint16_t tern_csum_fold(uint32_t sum)
{
    sum = (sum & 0xffffu) + (sum >> 16);
    sum = (sum & 0xffffu) + (sum >> 16);
    return (uint16_t)sum;
}

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
