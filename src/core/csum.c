/* csum.c - the Internet checksum (RFC 1071): tern_csum_partial, the
 * copy-and-sum tern_csum_copy and tern_csum_fold, portable C with x86-64
 * SSE2/AVX2 bodies chosen at run time, freestanding (no libc).
 * docs/architecture.md, "Checksums", says how they work. The order of the
 * functions below is kept on purpose: placement moved the echo rate. */
#include "util.h"

#include "tern.h"

/* The words are loaded little-endian (ld32le, ld64le: util.h). Summing
 * little-endian words gives the byte-swapped ones'-complement sum, which
 * we swap back once at the end (RFC 1071: the sum is byte-order
 * independent up to that swap). */

/* Ones'-complement addition of 64-bit words (end-around carry). gcc and
 * clang compile `a += w; c += a < w` to add + adc. */
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

/* The k (1..7) bytes from p on, as tail_le gives them, where at least
 * 8 - k readable bytes come before p: one load of the 8 bytes that end
 * with them, shifted, rather than three. */
static inline uint64_t tail_in_word(const uint8_t *p, size_t k)
{
    return ld64le(p + k - 8) >> (64 - 8 * k);
}

/* The last len & 7 (not 0) bytes of a len-byte run whose 8-byte words
 * end at p, as tail_le gives them. A run of 8 bytes or more has 8 bytes
 * before its end. */
static inline uint64_t csum_tail(const uint8_t *p, size_t len)
{
    size_t k = len & 7;
    if (len < 8)
        return tail_le(p, k);
    return tail_in_word(p, k);
}

/* Finish a little-endian 64-bit sum: folded to 32 bits, to network order,
 * plus the caller's running sum, folded to 16 bits. Rotating a ones'-
 * complement sum by 8 bits swaps the bytes of its 16-bit fold (it
 * multiplies by 2^8, and 2^8 * 2^8 = 1 modulo 0xffff), so the swap is one
 * rotate. Nonzero sums stay nonzero (0xffff, never 0), as RFC 1071
 * arithmetic wants. */
static inline uint32_t csum_finish(uint64_t acc, uint32_t sum)
{
    uint32_t lo = (uint32_t)acc, hi = (uint32_t)(acc >> 32);
    lo += hi;
    lo += lo < hi;
    lo = lo << 8 | lo >> 24;
    lo += sum;
    lo += lo < sum;
    return csum_fold32(lo);
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

uint32_t tern_csum_partial_c(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    size_t left = len;
    uint64_t a[2], c[2];
    a[0] = a[1] = c[0] = c[1] = 0;      /* clang -O0 calls memset for {0, 0} */
    /* 128 bytes a turn: gcc sets up each turn's carry counts with a few
     * extra instructions, so fewer turns cost less (~0.3 per byte). */
    for (; left >= 128; p += 128, left -= 128) {
        sum_block64(a, c, p);
        sum_block64(a, c, p + 64);
    }
    if (left >= 64) {
        sum_block64(a, c, p);
        p += 64;
        left -= 64;
    }
    for (; left >= 8; p += 8, left -= 8)
        chain_add(&a[0], &c[0], ld64le(p));
    if (left)
        a[1] = add64(a[1], csum_tail(p, len));
    /* the carry counts are far below 2^63: their sum cannot wrap */
    return csum_finish(add64(add64(a[0], a[1]), c[0] + c[1]), sum);
}

uint32_t tern_csum_copy_c(void *dst, const void *src, size_t len, uint32_t sum)
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

#if defined(__GNUC__) && defined(__x86_64__) && defined(__SSE2__) && \
    !defined(TERN_CSUM_PORTABLE)
/* x86-64: one add-with-carry chain with memory operands, one instruction
 * per 8 bytes (C cannot keep the carry in the flag, so the portable code
 * needs two or three). Each piece starts with add (or clc) and ends with
 * adc $0: a chain that starts with the carry clear can never hold an
 * all-ones word with the carry set, so the last adc never drops a carry.
 * SSE2 is part of x86-64, so the copy moves 16 bytes at a time. */
#define ADC_Q(off) "adcq " #off "(%[p]), %[a]\n\t"
#define ADC_4Q(o0, o1, o2, o3) ADC_Q(o0) ADC_Q(o1) ADC_Q(o2) ADC_Q(o3)

/* n (> 0) turns of 128 bytes from *p (advanced); lea and dec leave the
 * carry flag alone, so it rides from one turn to the next. */
static inline uint64_t x86_sum_128s(const uint8_t **p, size_t n, uint64_t a)
{
    __asm__("clc\n"
            "1:\n\t"
            ADC_4Q(0, 8, 16, 24) ADC_4Q(32, 40, 48, 56)
            ADC_4Q(64, 72, 80, 88) ADC_4Q(96, 104, 112, 120)
            "leaq 128(%[p]), %[p]\n\t"
            "decq %[n]\n\t"
            "jnz 1b\n\t"
            "adcq $0, %[a]"
            : [a] "+r"(a), [p] "+r"(*p), [n] "+r"(n)
            :
            : "cc", "memory");
    return a;
}

/* Long runs: the adc chain is one dependency (one adc a cycle), so half
 * of each 128-byte turn goes to SSE2 instead, which leaves the flags
 * alone: the words biased to signed (xor 0x8000) and added in pairs by
 * pmaddwd (times 1) into 32-bit lanes, each pair 65536 short of its true
 * sum. The lanes start at what their pairs will fall short (two pairs a
 * turn each), so they end at their true sums: below 2^30 in SSE_MAX_TURNS
 * turns, and two of them added below 2^31. */
typedef int32_t v4si __attribute__((vector_size(16)));
typedef int16_t v8hi __attribute__((vector_size(16)));
#define SSE_MAX_TURNS 4096
#define SSE_MIN_LEN 512

/* n (1..SSE_MAX_TURNS) turns from *p (advanced): bytes 0-63 of each into
 * the adc chain, 64-127 into the lanes s[0] and s[1]. */
static inline uint64_t x86_sum_128s_sse(const uint8_t **p, size_t n,
                                        uint64_t a, v4si s[2])
{
    const v8hi bias = {-32768, -32768, -32768, -32768,
                       -32768, -32768, -32768, -32768};
    const v8hi ones = {1, 1, 1, 1, 1, 1, 1, 1};
    v4si t0, t1, t2, t3;
    __asm__("clc\n"
            "1:\n\t"
            "movdqu 64(%[p]), %[t0]\n\t"
            "movdqu 80(%[p]), %[t1]\n\t"
            "movdqu 96(%[p]), %[t2]\n\t"
            "movdqu 112(%[p]), %[t3]\n\t"
            ADC_4Q(0, 8, 16, 24)
            "pxor %[bias], %[t0]\n\t"
            "pxor %[bias], %[t1]\n\t"
            "pxor %[bias], %[t2]\n\t"
            "pxor %[bias], %[t3]\n\t"
            "pmaddwd %[ones], %[t0]\n\t"
            "pmaddwd %[ones], %[t1]\n\t"
            "pmaddwd %[ones], %[t2]\n\t"
            "pmaddwd %[ones], %[t3]\n\t"
            ADC_4Q(32, 40, 48, 56)
            "paddd %[t0], %[s0]\n\t"
            "paddd %[t1], %[s1]\n\t"
            "paddd %[t2], %[s0]\n\t"
            "paddd %[t3], %[s1]\n\t"
            "leaq 128(%[p]), %[p]\n\t"
            "decq %[n]\n\t"
            "jnz 1b\n\t"
            "adcq $0, %[a]"
            : [a] "+r"(a), [p] "+r"(*p), [n] "+r"(n), [s0] "+x"(s[0]),
              [s1] "+x"(s[1]), [t0] "=&x"(t0), [t1] "=&x"(t1),
              [t2] "=&x"(t2), [t3] "=&x"(t3)
            : [bias] "x"(bias), [ones] "x"(ones)
            : "cc", "memory");
    return a;
}

/* The sum of the (true, unsigned) lanes. */
static inline uint64_t sse_lanes_sum(const v4si s[2])
{
    v4si t = s[0] + s[1];
    return (uint64_t)(uint32_t)t[0] + (uint32_t)t[1] + (uint32_t)t[2] +
           (uint32_t)t[3];
}

/* The sum of all 128-byte turns of a run of at least SSE_MIN_LEN bytes
 * from *p (advanced). */
static inline uint64_t x86_sum_long(const uint8_t **p, size_t turns)
{
    uint64_t a = 0;
    while (turns) {
        size_t n = turns < SSE_MAX_TURNS ? turns : SSE_MAX_TURNS;
        int32_t short_by = (int32_t)n * 2 * 65536;
        v4si s[2] = {{short_by, short_by, short_by, short_by},
                     {short_by, short_by, short_by, short_by}};
        a = x86_sum_128s_sse(p, n, a, s);
        a = add64(a, sse_lanes_sum(s));
        turns -= n;
    }
    return a;
}

/* A fixed-size piece: add the first word, adc the rest (`more`), adc the
 * last carry back in. */
#define X86_SUM_PIECE(name, more)                                          \
    static inline uint64_t name(const uint8_t *p, uint64_t a)              \
    {                                                                      \
        __asm__("addq (%[p]), %[a]\n\t" more "adcq $0, %[a]"                \
                : [a] "+r"(a)                                              \
                : [p] "r"(p)                                               \
                : "cc", "memory");                                         \
        return a;                                                          \
    }
X86_SUM_PIECE(x86_sum64, ADC_Q(8) ADC_Q(16) ADC_Q(24) ADC_4Q(32, 40, 48, 56))
X86_SUM_PIECE(x86_sum32, ADC_Q(8) ADC_Q(16) ADC_Q(24))
X86_SUM_PIECE(x86_sum16, ADC_Q(8))
X86_SUM_PIECE(x86_sum8, "")

/* The 64, 32 and 16-byte pieces of len (their bits of len), from p on:
 * a length below 128 costs a test and one straight chain per set bit. */
static inline uint64_t x86_sum_pieces(const uint8_t *p, size_t len, uint64_t a)
{
    if (len & 64) {
        a = x86_sum64(p, a);
        p += 64;
    }
    if (len & 32) {
        a = x86_sum32(p, a);
        p += 32;
    }
    if (len & 16)
        a = x86_sum16(p, a);
    return a;
}

/* The last len & 15 (not 0) bytes, from p on: a word if there are 8 of
 * them, then the 1-7 left (one test skips both when there are none). */
static inline uint64_t x86_sum_rest(const uint8_t *p, size_t len, uint64_t a)
{
    if (len & 8) {
        a = x86_sum8(p, a);
        p += 8;
    }
    if (len & 7)
        a = add64(a, csum_tail(p, len));
    return a;
}

/* The last len & 127 bytes, from p on, into a; finished with sum. */
static inline uint32_t x86_sum_last(const uint8_t *p, size_t len, uint64_t a,
                                    uint32_t sum)
{
    a = x86_sum_pieces(p, len, a);
    if (len & 15)
        a = x86_sum_rest(p + (len & 112), len, a);
    return csum_finish(a, sum);
}

/* ---- AVX2, chosen at run time ----
 * The core has no loader to ask (no ifunc, no libgcc CPU model), so it
 * asks the CPU: cpuid for AVX and AVX2, xgetbv for the OS saving the YMM
 * state. The answer is kept in csum_avx2 (0 not asked yet, CSUM_AVX2_OFF,
 * CSUM_AVX2_ON); threads that ask at once store the same value. The code
 * is inline asm (the assembler takes AVX2 whatever the compiler targets)
 * in an out-of-line function that ends with vzeroupper, so the rest of the
 * core stays baseline x86-64. */
enum { CSUM_AVX2_OFF = 1, CSUM_AVX2_ON = 2 };
static int csum_avx2;

static inline void x86_cpuid(uint32_t leaf, uint32_t r[4])
{
    __asm__("cpuid"
            : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
            : "a"(leaf), "c"(0));
}

static bool x86_has_avx2(void)
{
    uint32_t r[4];
    x86_cpuid(0, r);
    if (r[0] < 7)
        return false;
    x86_cpuid(1, r);
    const uint32_t osxsave = 1u << 27, avx = 1u << 28;
    if ((r[2] & (osxsave | avx)) != (osxsave | avx))
        return false;
    uint32_t xcr0, hi;
    __asm__("xgetbv" : "=a"(xcr0), "=d"(hi) : "c"(0));
    if ((xcr0 & 6) != 6)                /* XMM and YMM state enabled */
        return false;
    x86_cpuid(7, r);
    return r[1] & (1u << 5);
}

static int csum_avx2_ask(void)
{
    int v = x86_has_avx2() ? CSUM_AVX2_ON : CSUM_AVX2_OFF;
    __atomic_store_n(&csum_avx2, v, __ATOMIC_RELAXED);
    return v;
}

bool tern_csum_avx2(bool allow)
{
    if (!allow) {
        __atomic_store_n(&csum_avx2, CSUM_AVX2_OFF, __ATOMIC_RELAXED);
        return false;
    }
    return csum_avx2_ask() == CSUM_AVX2_ON;
}

#define AVX2_MAX_BLOCKS 16384

/* One 32-byte block at off(base) into the lanes of ymm<acc>: the words
 * biased to signed (xor 0x8000, ymm4) and added in pairs by vpmaddwd
 * (times 1, ymm5), each pair 65536 short of its true sum. */
#define AVX2_BLOCK(off, base, acc)                                         \
    "vpxor " #off "(" base "), %%ymm4, %%ymm2\n\t"                           \
    "vpmaddwd %%ymm5, %%ymm2, %%ymm2\n\t"                                   \
    "vpaddd %%ymm2, %%ymm" #acc ", %%ymm" #acc "\n\t"
#define AVX2_2BLOCKS(off0, off1, base)                                     \
    AVX2_BLOCK(off0, base, 0) AVX2_BLOCK(off1, base, 1)
#define AVX2_8BLOCKS(o, base)                                              \
    AVX2_2BLOCKS(o, o + 32, base) AVX2_2BLOCKS(o + 64, o + 96, base)       \
    AVX2_2BLOCKS(o + 128, o + 160, base) AVX2_2BLOCKS(o + 192, o + 224, base)
#define AVX2_P "%[p]"

/* The lanes' set-up: ymm4 the words' bias (0x8000 each), ymm5 the
 * multiplier (1 each), accumulators ymm0 and ymm1 cleared. */
#define AVX2_SETUP                                                          \
    "vpcmpeqw %%ymm4, %%ymm4, %%ymm4\n\t"                                    \
    "vpsrlw $15, %%ymm4, %%ymm5\n\t"                                         \
    "vpsllw $15, %%ymm4, %%ymm4\n\t"                                         \
    "vpxor %%xmm0, %%xmm0, %%xmm0\n\t"                                       \
    "vpxor %%xmm1, %%xmm1, %%xmm1\n\t"
/* The accumulators added, their eight int32 lanes sign-extended and added
 * into %[s]; then vzeroupper. */
#define AVX2_REDUCE                                                         \
    "vpaddd %%ymm1, %%ymm0, %%ymm0\n\t"                                      \
    "vextracti128 $1, %%ymm0, %%xmm1\n\t"                                    \
    "vpaddd %%xmm1, %%xmm0, %%xmm0\n\t"                                      \
    "vpmovsxdq %%xmm0, %%ymm0\n\t"                                           \
    "vextracti128 $1, %%ymm0, %%xmm1\n\t"                                    \
    "vpaddq %%xmm1, %%xmm0, %%xmm0\n\t"                                      \
    "vpshufd $0x4e, %%xmm0, %%xmm1\n\t"                                      \
    "vpaddq %%xmm1, %%xmm0, %%xmm0\n\t"                                      \
    "vmovq %%xmm0, %[s]\n\t"                                                 \
    "vzeroupper"

/* The sum of the 16-bit little-endian words of n (1..AVX2_MAX_BLOCKS)
 * 32-byte blocks from *p (advanced), in 64 bits. Zen 1 splits each 256-bit
 * operation in two, so the vector side does ~16 bytes a cycle, the adc
 * chain 8 beside it: turns of 384 bytes give 256 to the vector lanes and
 * 128 to the chain (lea and dec leave the carry alone). The 0-11 blocks
 * left go to the lanes by the bits of their count. Each of the 4 lanes left after adding the accumulators and their
 * halves holds at most 2n pair sums, each 65536 short of one in
 * 0..131070: in int32 range for n <= 16384. Sign-extended and added, they
 * fall 8 * 65536 short per vector block, which the end adds back. */
static inline uint64_t avx2_sum_blocks(const uint8_t **p, size_t n)
{
    size_t turns = n / 12, vec_blocks = n - turns * 4;
    size_t left = n - turns * 12;
    uint64_t a = 0;
    int64_t s;
    __asm__(AVX2_SETUP
            "testq %[t], %[t]\n\t"
            "jz 2f\n\t"
            "clc\n"
            "1:\n\t"
            AVX2_2BLOCKS(0, 32, AVX2_P)
            ADC_4Q(256, 264, 272, 280)
            AVX2_2BLOCKS(64, 96, AVX2_P)
            ADC_4Q(288, 296, 304, 312)
            AVX2_2BLOCKS(128, 160, AVX2_P)
            ADC_4Q(320, 328, 336, 344)
            AVX2_2BLOCKS(192, 224, AVX2_P)
            ADC_4Q(352, 360, 368, 376)
            "leaq 384(%[p]), %[p]\n\t"
            "decq %[t]\n\t"
            "jnz 1b\n\t"
            "adcq $0, %[a]\n"
            "2:\n\t"
            "testl $8, %k[n]\n\t"
            "jz 3f\n\t"
            AVX2_8BLOCKS(0, AVX2_P)
            "addq $256, %[p]\n"
            "3:\n\t"
            "testl $4, %k[n]\n\t"
            "jz 4f\n\t"
            AVX2_2BLOCKS(0, 32, AVX2_P) AVX2_2BLOCKS(64, 96, AVX2_P)
            "addq $128, %[p]\n"
            "4:\n\t"
            "testl $2, %k[n]\n\t"
            "jz 5f\n\t"
            AVX2_2BLOCKS(0, 32, AVX2_P)
            "addq $64, %[p]\n"
            "5:\n\t"
            "testl $1, %k[n]\n\t"
            "jz 6f\n\t"
            AVX2_BLOCK(0, AVX2_P, 0)
            "addq $32, %[p]\n"
            "6:\n\t"
            AVX2_REDUCE
            : [s] "=r"(s), [a] "+r"(a), [p] "+r"(*p), [t] "+r"(turns)
            : [n] "r"(left)
            : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm4", "xmm5");
    return add64(a, (uint64_t)(s + ((int64_t)vec_blocks << 19)));
}

/* tern_csum_partial of SSE_MIN_LEN bytes or more with AVX2: the 32-byte
 * blocks, then the last 16 and 1-15 bytes into the adc chain. */
static uint32_t x86_csum_avx2(const uint8_t *p, size_t len, uint32_t sum)
{
    size_t n = len >> 5;
    uint64_t a = 0;
    do {
        size_t k = n < AVX2_MAX_BLOCKS ? n : AVX2_MAX_BLOCKS;
        a = add64(a, avx2_sum_blocks(&p, k));
        n -= k;
    } while (n);
    if (len & 16) {
        a = x86_sum16(p, a);
        p += 16;
    }
    if (len & 15)
        a = x86_sum_rest(p, len, a);
    return csum_finish(a, sum);
}

/* tern_csum_partial of SSE_MIN_LEN bytes or more: AVX2 where the CPU has
 * it, else SSE2 beside the adc chain. Out of line (a tail call): its vector
 * registers and constants stay off the short sums' path. Below 512 bytes
 * AVX2 costs more than the adc chain (its set-up and reduction: ~50
 * instructions, ~20 cycles of latency). */
__attribute__((noinline)) static uint32_t x86_csum_long(const uint8_t *p,
                                                        size_t len, uint32_t sum)
{
    int avx2 = __atomic_load_n(&csum_avx2, __ATOMIC_RELAXED);
    if (!avx2)
        avx2 = csum_avx2_ask();
    if (avx2 == CSUM_AVX2_ON)
        return x86_csum_avx2(p, len, sum);
    uint64_t a = x86_sum_long(&p, len >> 7);
    return x86_sum_last(p, len, a, sum);
}

uint32_t tern_csum_partial(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    uint64_t a = 0;
    if (len >= 128) {
        if (len >= SSE_MIN_LEN)
            return x86_csum_long(p, len, sum);
        a = x86_sum_128s(&p, len >> 7, a);
    }
    return x86_sum_last(p, len, a, sum);
}

/* n (> 0) turns of 64 bytes: four 16-byte loads and stores copy, the
 * chain sums the source (just loaded, from L1). Advances *d and *p. */
static inline uint64_t x86_copy_sum_64s(uint8_t **d, const uint8_t **p,
                                        size_t n, uint64_t a)
{
    __asm__("clc\n"
            "1:\n\t"
            "movdqu (%[p]), %%xmm0\n\t"
            "movdqu 16(%[p]), %%xmm1\n\t"
            "movdqu 32(%[p]), %%xmm2\n\t"
            "movdqu 48(%[p]), %%xmm3\n\t"
            "movdqu %%xmm0, (%[d])\n\t"
            "movdqu %%xmm1, 16(%[d])\n\t"
            "movdqu %%xmm2, 32(%[d])\n\t"
            "movdqu %%xmm3, 48(%[d])\n\t"
            ADC_4Q(0, 8, 16, 24) ADC_4Q(32, 40, 48, 56)
            "leaq 64(%[p]), %[p]\n\t"
            "leaq 64(%[d]), %[d]\n\t"
            "decq %[n]\n\t"
            "jnz 1b\n\t"
            "adcq $0, %[a]"
            : [a] "+r"(a), [p] "+r"(*p), [d] "+r"(*d), [n] "+r"(n)
            :
            : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3");
    return a;
}

static inline uint64_t x86_copy_sum32(uint8_t *d, const uint8_t *p, uint64_t a)
{
    __asm__("movdqu (%[p]), %%xmm0\n\t"
            "movdqu 16(%[p]), %%xmm1\n\t"
            "movdqu %%xmm0, (%[d])\n\t"
            "movdqu %%xmm1, 16(%[d])\n\t"
            "addq (%[p]), %[a]\n\t"
            ADC_Q(8) ADC_Q(16) ADC_Q(24)
            "adcq $0, %[a]"
            : [a] "+r"(a)
            : [p] "r"(p), [d] "r"(d)
            : "cc", "memory", "xmm0", "xmm1");
    return a;
}

static inline void x86_copy16(uint8_t *d, const uint8_t *p)
{
    __asm__("movdqu (%[p]), %%xmm0\n\t"
            "movdqu %%xmm0, (%[d])"
            :
            : [p] "r"(p), [d] "r"(d)
            : "memory", "xmm0");
}

static inline void st64le(uint8_t *d, uint64_t v) { __builtin_memcpy(d, &v, 8); }
static inline void st32le(uint8_t *d, uint32_t v) { __builtin_memcpy(d, &v, 4); }

/* Fewer than 16 bytes: from 8 on, two words that may overlap (the second
 * shifted so that no byte is summed twice); below 8, by 4, 2 and 1. */
static inline uint64_t copy_sum_short(uint8_t *d, const uint8_t *s, size_t len)
{
    if (len >= 8) {
        uint64_t w0 = ld64le(s), w1 = ld64le(s + len - 8);
        st64le(d, w0);
        st64le(d + len - 8, w1);
        return len > 8 ? add64(w0, w1 >> (128 - 8 * len)) : w0;
    }
    uint64_t t = tail_le(s, len);
    if (len & 4) {
        st32le(d, (uint32_t)t);
        d += 4;
    }
    uint32_t rest = (uint32_t)(t >> ((len & 4) * 8));
    if (len & 2) {
        d[0] = (uint8_t)rest;
        d[1] = (uint8_t)(rest >> 8);
        d += 2;
        rest >>= 16;
    }
    if (len & 1)
        d[0] = (uint8_t)rest;
    return t;
}

/* The copy's last len & 31 bytes, from s to d, into a (len >= 16): the
 * first 16 if there are 16, then the last 16, which end where the copy
 * must end and reach back into bytes already copied. */
static inline uint64_t x86_copy_sum_tail(uint8_t *d, const uint8_t *s,
                                         size_t len, uint64_t a)
{
    size_t r = len & 31;
    if (!r)
        return a;
    if (r & 16)
        x86_copy16(d, s);
    x86_copy16(d + r - 16, s + r - 16);
    a = x86_sum_pieces(s, r, a);
    if (len & 15)
        a = x86_sum_rest(s + (len & 16), len, a);
    return a;
}

/* tern_csum_copy of SSE_MIN_LEN bytes or more, defined below. Not static:
 * gcc places a static callee before its caller, which moved the short
 * sums' code and cost the echo path ~3% (front-end layout; see
 * docs/perf-notes.md, "Compiler and layout"). Hidden: not exported. */
__attribute__((visibility("hidden"))) uint32_t
tern_x86_copy_sum_long(uint8_t *d, const uint8_t *s, size_t len, uint32_t sum);

uint32_t tern_csum_copy(void *dst, const void *src, size_t len, uint32_t sum)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (len < 16)
        return csum_finish(copy_sum_short(d, s, len), sum);
    uint64_t a = 0;
    if (len >= 64) {
        if (len >= SSE_MIN_LEN &&
            __atomic_load_n(&csum_avx2, __ATOMIC_RELAXED) != CSUM_AVX2_OFF)
            return tern_x86_copy_sum_long(d, s, len, sum);
        a = x86_copy_sum_64s(&d, &s, len >> 6, a);
        if (!(len & 63))
            return csum_finish(a, sum);
    }
    if (len & 32) {
        a = x86_copy_sum32(d, s, a);
        s += 32;
        d += 32;
    }
    return csum_finish(x86_copy_sum_tail(d, s, len, a), sum);
}

/* The sum of n (1..AVX2_MAX_BLOCKS) 32-byte blocks from *p, copied to *d
 * (both advanced), with AVX2: each block loaded once, stored, and summed
 * in the lanes as avx2_sum_blocks does (two accumulators, two blocks a
 * turn). On Zen 1 the stores bound it (16 bytes a cycle), as for memcpy;
 * the sum's three operations per block fit beside them. */
static inline uint64_t avx2_copy_sum_blocks(uint8_t **d, const uint8_t **p,
                                            size_t n)
{
    size_t pairs = n / 2;
    int64_t s;
    __asm__(AVX2_SETUP
            "testq %[t], %[t]\n\t"
            "jz 2f\n"
            "1:\n\t"
            "vmovdqu (%[p]), %%ymm2\n\t"
            "vmovdqu 32(%[p]), %%ymm3\n\t"
            "vmovdqu %%ymm2, (%[d])\n\t"
            "vmovdqu %%ymm3, 32(%[d])\n\t"
            "vpxor %%ymm4, %%ymm2, %%ymm2\n\t"
            "vpxor %%ymm4, %%ymm3, %%ymm3\n\t"
            "vpmaddwd %%ymm5, %%ymm2, %%ymm2\n\t"
            "vpmaddwd %%ymm5, %%ymm3, %%ymm3\n\t"
            "vpaddd %%ymm2, %%ymm0, %%ymm0\n\t"
            "vpaddd %%ymm3, %%ymm1, %%ymm1\n\t"
            "addq $64, %[p]\n\t"
            "addq $64, %[d]\n\t"
            "decq %[t]\n\t"
            "jnz 1b\n"
            "2:\n\t"
            "testl $1, %k[n]\n\t"
            "jz 3f\n\t"
            "vmovdqu (%[p]), %%ymm2\n\t"
            "vmovdqu %%ymm2, (%[d])\n\t"
            "vpxor %%ymm4, %%ymm2, %%ymm2\n\t"
            "vpmaddwd %%ymm5, %%ymm2, %%ymm2\n\t"
            "vpaddd %%ymm2, %%ymm0, %%ymm0\n\t"
            "addq $32, %[p]\n\t"
            "addq $32, %[d]\n"
            "3:\n\t"
            AVX2_REDUCE
            : [s] "=r"(s), [p] "+r"(*p), [d] "+r"(*d), [t] "+r"(pairs)
            : [n] "r"(n)
            : "cc", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5");
    return (uint64_t)(s + ((int64_t)n << 19));
}

/* tern_csum_copy of SSE_MIN_LEN bytes or more with AVX2. Out of line, as
 * x86_csum_long. On the first call the CPU is asked; without AVX2 the
 * answer (CSUM_AVX2_OFF) sends this and every later copy to
 * tern_csum_copy's SSE2 + adc loop. */
__attribute__((noinline, visibility("hidden"))) uint32_t
tern_x86_copy_sum_long(uint8_t *d, const uint8_t *s, size_t len, uint32_t sum)
{
    if (__atomic_load_n(&csum_avx2, __ATOMIC_RELAXED) != CSUM_AVX2_ON &&
        csum_avx2_ask() != CSUM_AVX2_ON)
        return tern_csum_copy(d, s, len, sum);
    size_t n = len >> 5;
    uint64_t a = 0;
    do {
        size_t k = n < AVX2_MAX_BLOCKS ? n : AVX2_MAX_BLOCKS;
        a = add64(a, avx2_copy_sum_blocks(&d, &s, k));
        n -= k;
    } while (n);
    return csum_finish(x86_copy_sum_tail(d, s, len, a), sum);
}
#else
bool tern_csum_avx2(bool allow)
{
    (void)allow;
    return false;
}

uint32_t tern_csum_partial(const void *data, size_t len, uint32_t sum)
{
    return tern_csum_partial_c(data, len, sum);
}

uint32_t tern_csum_copy(void *dst, const void *src, size_t len, uint32_t sum)
{
    return tern_csum_copy_c(dst, src, len, sum);
}
#endif

uint16_t tern_csum_fold(uint32_t sum)
{
    sum = (sum & 0xffffu) + (sum >> 16);
    sum = (sum & 0xffffu) + (sum >> 16);
    return (uint16_t)sum;
}
