/* util.h - byte order, memory and small helpers the freestanding core uses
 * instead of libc. Big-endian loads and stores are one unaligned-safe
 * access plus a byte swap with gcc and clang on little-endian hosts (their
 * builtins; a byte-composed store is not reliably merged when the value is
 * computed around it), and composed from bytes everywhere else. */
#ifndef TERN_UTIL_H
#define TERN_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    __builtin_memcpy(&v, p, 2);
    return __builtin_bswap16(v);
}

static inline uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return __builtin_bswap32(v);
}

static inline void wr16(uint8_t *p, uint16_t v)
{
    v = __builtin_bswap16(v);
    __builtin_memcpy(p, &v, 2);
}

static inline void wr32(uint8_t *p, uint32_t v)
{
    v = __builtin_bswap32(v);
    __builtin_memcpy(p, &v, 4);
}
#else
static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

static inline void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
#endif

/* Little-endian loads composed from bytes: one mov on x86, correct
 * everywhere (the checksum's words, SipHash's). */
static inline uint32_t ld32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline uint64_t ld64le(const uint8_t *p)
{
    return (uint64_t)ld32le(p) | (uint64_t)ld32le(p + 4) << 32;
}

/* The core's own memory helpers (no libc). Built with TERN_USE_BUILTIN_MEM
 * they become the compiler's builtins, which inline small copies and call
 * the platform's memcpy for large ones (what the Linux build does). */
#ifdef TERN_USE_BUILTIN_MEM
#define tern_memcpy(d, s, n) __builtin_memcpy((d), (s), (n))
#define tern_memset(d, c, n) __builtin_memset((d), (c), (n))
#define tern_memcmp(a, b, n) __builtin_memcmp((a), (b), (n))
#else
void tern_memcpy(void *dst, const void *src, size_t n);
void tern_memset(void *dst, int c, size_t n);
int tern_memcmp(const void *a, const void *b, size_t n);
#endif

/* A 32-bit ones'-complement sum folded to 16 bits, not inverted (nonzero
 * stays nonzero). x86-64 adds the halves as 16-bit words with end-around
 * carry: four instructions rather than six. */
static inline uint32_t csum_fold32(uint32_t x)
{
#if defined(__GNUC__) && defined(__x86_64__) && !defined(TERN_CSUM_PORTABLE)
    uint32_t hi = x >> 16;
    __asm__("addw %w[x], %w[hi]\n\t"
            "adcw $0, %w[hi]"
            : [hi] "+r"(hi)
            : [x] "r"(x)
            : "cc");
    return hi;
#else
    x = (x & 0xffffu) + (x >> 16);
    return (x & 0xffffu) + (x >> 16);
#endif
}

/* Fold a ones'-complement sum kept in 64 bits (e.g. of up to 2^32 16- or
 * 32-bit big-endian words) to 16 bits, not inverted: the halves added with
 * end-around carry (add + adc), then csum_fold32. */
static inline uint32_t csum_fold64(uint64_t s)
{
    uint32_t lo = (uint32_t)s, hi = (uint32_t)(s >> 32);
    lo += hi;
    lo += lo < hi;
    return csum_fold32(lo);
}


/* The portable C versions of tern_csum_partial and tern_csum_copy, the
 * ones every target but x86-64 runs; built everywhere so that the tests
 * can hold the x86-64 code to them. */
uint32_t tern_csum_partial_c(const void *data, size_t len, uint32_t sum);
uint32_t tern_csum_copy_c(void *dst, const void *src, size_t len, uint32_t sum);

/* x86-64 (gcc, clang): sums of 512 bytes or more run AVX2 code when the
 * CPU and the OS support it (asked once, with cpuid and xgetbv, on first
 * use). tern_csum_avx2(false) keeps them on the baseline SSE2 + adc code
 * (tests, benchmarks); tern_csum_avx2(true) asks again. Returns whether
 * AVX2 is used from now on: always false on other targets. */
bool tern_csum_avx2(bool allow);

/* Sequence-number comparisons modulo 2^32 (RFC 9293 section 3.4). */
static inline int seq_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static inline int seq_le(uint32_t a, uint32_t b) { return (int32_t)(a - b) <= 0; }
static inline int seq_gt(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }
static inline int seq_ge(uint32_t a, uint32_t b) { return (int32_t)(a - b) >= 0; }

static inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* Keyed 64-bit hash (SipHash-2-4 construction, written for tern) used for
 * ISNs, SYN cookies, port randomisation and table hashing. */
uint64_t tern_siphash(const uint8_t key[16], const uint8_t *data, size_t len);

#endif
