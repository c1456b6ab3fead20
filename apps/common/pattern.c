/* pattern.c - fill and verify the bulk stream pattern (see pattern.h).
 *
 * Within a 64 KiB period the words are an arithmetic progression from the
 * period's base: the loops keep four words in a vector and step it with
 * one add, so a fill is an add and a store per vector and a check a load,
 * a compare and an add (no table to load beside the data), and the fill's
 * checksum is the progression's sum in closed form. The check or-s all
 * differences together and tests once per call; only a mismatch pays for
 * the exact byte-wise scan. Words are stored little-endian on any host,
 * so sender and receiver agree. */
#include "pattern.h"

#include <stdbool.h>
#include <string.h>

/* GCC/clang vector types rather than intrinsics, so this stays portable:
 * four words per vector, one AVX2 register or two SSE2 ones. */
typedef uint64_t v4u64 __attribute__((vector_size(32)));
#define VEC_BYTES 32
#define VEC_WORDS 4

/* On x86-64 the word loops are built twice, for AVX2 and for the baseline,
 * and the loader picks one (an ifunc) on the CPU at hand. PATTERN_NO_CLONES
 * builds the baseline alone (a test checks it on an AVX2 machine). */
#if defined(__x86_64__) && defined(__gnu_linux__) && \
    (defined(__clang__) || __GNUC__ >= 6) && !defined(PATTERN_NO_CLONES)
#define TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TARGET_CLONES
#endif

/* Rare paths out of line: the usual call saves no registers for them. */
#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

static inline uint64_t word_at(uint64_t w)
{
    return pattern_period_base(w / PATTERN_PERIOD_WORDS) +
           (w % PATTERN_PERIOD_WORDS) * PATTERN_STEP;
}

uint64_t pattern_word(uint64_t w)
{
    return word_at(w);
}

static inline uint8_t pattern_byte(uint64_t i)
{
    return (uint8_t)(word_at(i >> 3) >> ((i & 7) * 8));
}

static inline uint64_t load_le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void store_le(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

static NOINLINE size_t first_mismatch(const uint8_t *src, uint64_t off,
                                      size_t len);

/* The vector of the four words from word value y on. By pointer, never by
 * value: a 32-byte vector has a different ABI with and without AVX. */
static inline __attribute__((always_inline)) void lanes_from(v4u64 *x,
                                                            uint64_t y)
{
    *x = (v4u64){y, y + PATTERN_STEP, y + 2 * PATTERN_STEP,
                 y + 3 * PATTERN_STEP};
}

/* One vector at byte at whose expected words are *x: written to dst when
 * fill, else compared with src, the difference or-ed into *d. */
static inline __attribute__((always_inline)) void
run_vector(bool fill, uint8_t *dst, const uint8_t *src, v4u64 *d,
           const v4u64 *x, size_t at)
{
    if (fill) {
        memcpy(dst + at, x, VEC_BYTES);
    } else {
        v4u64 y;
        memcpy(&y, src + at, VEC_BYTES);
        *d |= y ^ *x;
    }
}

/* Four vectors from byte at, *x their first, stepped past them. */
#define QUAD_BYTES (4 * VEC_BYTES)
static inline __attribute__((always_inline)) void
run_quad(bool fill, uint8_t *dst, const uint8_t *src, v4u64 *d, v4u64 *x,
         const v4u64 *step, size_t at)
{
    run_vector(fill, dst, src, d, x, at);    /* not a loop: GCC 12 -O2 */
    *x += *step;                             /* keeps loops */
    run_vector(fill, dst, src, d, x, at + VEC_BYTES);
    *x += *step;
    run_vector(fill, dst, src, d, x, at + 2 * VEC_BYTES);
    *x += *step;
    run_vector(fill, dst, src, d, x, at + 3 * VEC_BYTES);
    *x += *step;
}

/* The words of a run: n bytes (a multiple of 8) in one period, the first
 * word's value y; written to dst when fill, else compared with src:
 * nonzero if any differs (or-ed into *d, or for short runs returned).
 * Vector lanes are host-order words: on a little-endian host that is the
 * stream order, elsewhere the words go one by one. Four vectors per loop
 * turn keep the loop's counting and branch small; the rest of a run is
 * four vectors that overlap the last turn (the same words again, rather
 * than a loop of vectors and up to three words), or in a run below 128
 * bytes single vectors, the last overlapping. */
static inline __attribute__((always_inline)) uint64_t
run_words(bool fill, uint8_t *dst, const uint8_t *src, v4u64 *d, uint64_t y,
          size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n >= VEC_BYTES) {
        const uint64_t s = VEC_WORDS * PATTERN_STEP;
        v4u64 x, step = {s, s, s, s};
        lanes_from(&x, y);
        size_t i = 0;
        for (; i + QUAD_BYTES <= n; i += QUAD_BYTES)
            run_quad(fill, dst, src, d, &x, &step, i);
        if (i < n && n >= QUAD_BYTES) {
            size_t at = n - QUAD_BYTES;
            lanes_from(&x, y + at / 8 * PATTERN_STEP);
            run_quad(fill, dst, src, d, &x, &step, at);
            return 0;
        }
        for (; i + VEC_BYTES <= n; i += VEC_BYTES) {
            run_vector(fill, dst, src, d, &x, i);
            x += step;
        }
        if (i < n) {
            size_t at = n - VEC_BYTES;
            lanes_from(&x, y + at / 8 * PATTERN_STEP);
            run_vector(fill, dst, src, d, &x, at);
        }
        return 0;
    }
#endif
    (void)d;
    uint64_t diff = 0;
    for (size_t i = 0; i < n; i += 8, y += PATTERN_STEP) {
        if (fill)
            store_le(dst + i, y);
        else
            diff |= load_le(src + i) ^ y;
    }
    return diff;
}

/* Bytes of the run from word w on, at most n: up to its period's end. */
static inline size_t run_bytes(uint64_t w, size_t n)
{
    size_t j = (size_t)(w % PATTERN_PERIOD_WORDS);
    size_t left = (PATTERN_PERIOD_WORDS - j) * 8;
    return left < n ? left : n;
}

/* The sum of the n >= 1 words of a run from word w, as little-endian
 * 16-bit words modulo 0xffff, in 1..0xffff: a word is congruent to the sum
 * of its 16-bit words (2^16 = 1 modulo 0xffff), the words never wrap, so
 * the run's sum is that of the progression, n * base + STEP * (n * j +
 * n * (n - 1) / 2), reduced; it is never 0 (every word is at least the
 * base, at least 1), so a multiple of 0xffff stands as 0xffff. */
static inline uint64_t run_sum(uint64_t w, uint64_t n)
{
    const uint64_t m = 0xffff;
    uint64_t j = w % PATTERN_PERIOD_WORDS;
    uint64_t base = pattern_period_base(w / PATTERN_PERIOD_WORDS) % m;
    uint64_t steps = (n * j + n * (n - 1) / 2) % m;
    uint64_t r = (base * n + (PATTERN_STEP % m) * steps) % m;
    return r ? r : m;
}

/* Whole words from word w (n bytes, a multiple of 8), run by run. With
 * want_sum, also returns their sum as little-endian 16-bit words modulo
 * 0xffff (not folded; exact for n < 2^34), from run_sum. Zero only when n
 * is. */
static inline __attribute__((always_inline)) uint64_t
words_body(uint8_t *dst, uint64_t w, size_t n, bool want_sum)
{
    uint64_t sum = 0;
    while (n) {
        size_t run = run_bytes(w, n);
        run_words(true, dst, NULL, NULL, word_at(w), run);
        if (want_sum)
            sum += run_sum(w, run / 8);
        dst += run;
        w += run / 8;
        n -= run;
    }
    return sum;
}

TARGET_CLONES
static void fill_words(uint8_t *dst, uint64_t w, size_t n)
{
    words_body(dst, w, n, false);
}

TARGET_CLONES
static uint64_t fill_words_sum(uint8_t *dst, uint64_t w, size_t n)
{
    return words_body(dst, w, n, true);
}

/* Nonzero when any of the whole words from word w differs: the
 * differences are or-ed together and looked at once, so the loops have no
 * branch. */
static inline __attribute__((always_inline)) uint64_t
differ_body(const uint8_t *src, uint64_t w, size_t n)
{
    v4u64 d = {0, 0, 0, 0};
    uint64_t diff = 0;
    while (n) {
        size_t run = run_bytes(w, n);
        diff |= run_words(false, NULL, src, &d, word_at(w), run);
        src += run;
        w += run / 8;
        n -= run;
    }
    return diff | d[0] | d[1] | d[2] | d[3];
}

TARGET_CLONES
static uint64_t words_differ(const uint8_t *src, uint64_t w, size_t n)
{
    return differ_body(src, w, n);
}

/* pattern_check of whole words from offset off, a multiple of 8: the test
 * inside the clone, where off and len stay in registers the vector loop
 * does not use. */
TARGET_CLONES
static size_t check_words(const uint8_t *src, uint64_t off, size_t len)
{
    return differ_body(src, off >> 3, len) ? first_mismatch(src, off, len)
                                           : len;
}

/* pattern_check of len >= 8 bytes at any offset (LRO chain pieces): the
 * vectors check the whole words; the loose bytes at both ends are the
 * low bytes of an 8-byte load at the start (the rest of the first word)
 * and the high bytes of one at the end (the start of the last word),
 * masked, so either end costs one word and no branch. */
static inline uint64_t loose_ends_differ(const uint8_t *src, uint64_t off,
                                         size_t len)
{
    unsigned skip = (unsigned)(off & 7) * 8;            /* bits */
    unsigned head = (unsigned)(-off & 7) * 8;
    unsigned tail = (unsigned)((off + len) & 7) * 8;
    uint64_t first = word_at(off >> 3) >> skip;
    uint64_t last = word_at((off + len) >> 3) << (63 - tail) << 1;
    uint64_t d = (load_le(src) ^ first) & ((1ull << head) - 1);
    return d | ((load_le(src + len - 8) ^ last) & ~(~0ull >> tail));
}

TARGET_CLONES
static size_t check_loose(const uint8_t *src, uint64_t off, size_t len)
{
    size_t head = (size_t)(-off & 7);
    size_t words = (len - head) & ~(size_t)7;
    uint64_t d = loose_ends_differ(src, off, len) |
                 differ_body(src + head, (off + head) >> 3, words);
    return d ? first_mismatch(src, off, len) : len;
}

/* n < 8 bytes as a little-endian number, and back: a 1-, 2- and 4-byte
 * access by the bits of n rather than a loop (compilers merge the byte
 * shifts into single loads and stores). */
static inline uint64_t load_part(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    unsigned sh = 0;
    if (n & 1) {
        v = p[0];
        p += 1;
        sh = 8;
    }
    if (n & 2) {
        v |= (uint64_t)(p[0] | (uint32_t)p[1] << 8) << sh;
        p += 2;
        sh += 16;
    }
    if (n & 4)
        v |= (uint64_t)(p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                        (uint32_t)p[3] << 24) << sh;
    return v;
}

static inline void store_part(uint8_t *p, uint64_t v, size_t n)
{
    if (n & 1) {
        p[0] = (uint8_t)v;
        p += 1;
        v >>= 8;
    }
    if (n & 2) {
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
        p += 2;
        v >>= 16;
    }
    if (n & 4) {
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
        p[2] = (uint8_t)(v >> 16);
        p[3] = (uint8_t)(v >> 24);
    }
}

/* The n < 8 bytes from stream offset off, all in one word (a head or
 * tail): the word is computed once. As a little-endian number. */
static inline uint64_t part_word(uint64_t off, size_t n)
{
    uint64_t word = word_at(off >> 3) >> ((off & 7) * 8);
    return word & (~0ull >> (64 - 8 * n));
}

/* Write them; returns them (for the sum). */
static inline uint64_t fill_bytes(uint8_t *dst, uint64_t off, size_t n)
{
    if (!n)
        return 0;               /* word-aligned ends: no multiply */
    uint64_t v = part_word(off, n);
    store_part(dst, v, n);
    return v;
}

static inline bool bytes_differ(const uint8_t *src, uint64_t off, size_t n)
{
    return n && load_part(src, n) != part_word(off, n);
}

/* Bytes before the first word boundary of [off, off + len). */
static size_t head_len(uint64_t off, size_t len)
{
    size_t head = (size_t)(-off & 7);
    return head < len ? head : len;
}

/* Any start and length, out of line (as fill_sum_any). */
static NOINLINE void fill_any(uint8_t *dst, uint64_t off, size_t len)
{
    size_t head = head_len(off, len);
    size_t words = (len - head) & ~(size_t)7, tail = head + words;
    fill_bytes(dst, off, head);
    fill_words(dst + head, (off + head) >> 3, words);
    fill_bytes(dst + tail, off + tail, len - tail);
}

void pattern_fill(uint8_t *dst, uint64_t off, size_t len)
{
    if ((off | len) & 7)
        fill_any(dst, off, len);
    else
        fill_words(dst, off >> 3, len);     /* whole words */
}

/* Ones'-complement fold to 16 bits: 0 stays 0, any other multiple of
 * 0xffff becomes 0xffff (as tern_csum_partial). */
static uint32_t fold16(uint64_t s)
{
    s = (s & 0xffffffffu) + (s >> 32);
    s = (s & 0xffffu) + (s >> 16);
    s = (s & 0xffffu) + (s >> 16);
    return (uint32_t)((s & 0xffffu) + (s >> 16));
}

/* a + b with the carry out added back: 2^64 = 1 modulo 0xffff. */
static inline uint64_t add_around(uint64_t a, uint64_t b)
{
    a += b;
    return a + (a < b);
}

/* Times 2^8 modulo 0xffff: the 16-bit fold's bytes swap. */
static inline uint64_t rotl8(uint64_t x)
{
    return (x << 8) | (x >> 56);
}

/* Whole words per fill_words_sum call: well inside its exact range. */
#define SUM_PIECE ((size_t)1 << 30)

/* Any start and length: heads, tails and pieces. Out of line, so the
 * whole-word case saves no registers for it. */
static NOINLINE uint32_t fill_sum_any(uint8_t *dst, uint64_t off, size_t len)
{
    size_t head = head_len(off, len);
    size_t words = (len - head) & ~(size_t)7, tail = head + words;
    uint64_t first = fill_bytes(dst, off, head);
    uint64_t rest = fill_bytes(dst + tail, off + tail, len - tail);
    for (size_t i = 0; i < words; i += SUM_PIECE) {
        size_t n = words - i < SUM_PIECE ? words - i : SUM_PIECE;
        rest = add_around(rest, fill_words_sum(dst + head + i,
                                               (off + head + i) >> 3, n));
    }
    /* Sums of little-endian words; network order is one swap more. The
     * bytes from dst + head on sit one position late when head is odd,
     * which is a swap of their part alone. */
    uint64_t s = (head & 1) ? add_around(rotl8(first), rest)
                            : rotl8(add_around(first, rest));
    return fold16(s);
}

uint32_t pattern_fill_sum(uint8_t *dst, uint64_t off, size_t len)
{
    /* Whole words (every segment of an MSS-sized stream when the MSS is a
     * multiple of 8): no head, tail or pieces; first is 0 */
    if (!((off | len) & 7) && len <= SUM_PIECE)
        return fold16(rotl8(fill_words_sum(dst, off >> 3, len)));
    return fill_sum_any(dst, off, len);
}

/* The slow, exact scan: bytes that match before the first mismatch. */
static NOINLINE size_t first_mismatch(const uint8_t *src, uint64_t off,
                                      size_t len)
{
    size_t i = 0;
    for (; i < len && ((off + i) & 7); i++)
        if (src[i] != pattern_byte(off + i))
            return i;
    for (; i + 8 <= len; i += 8)
        if (load_le(src + i) != word_at((off + i) >> 3))
            break;
    for (; i < len; i++)
        if (src[i] != pattern_byte(off + i))
            return i;
    return len;
}

static NOINLINE size_t check_any(const uint8_t *src, uint64_t off, size_t len)
{
    size_t head = head_len(off, len);
    size_t words = (len - head) & ~(size_t)7, tail = head + words;
    bool bad = bytes_differ(src, off, head) ||
               words_differ(src + head, (off + head) >> 3, words) ||
               bytes_differ(src + tail, off + tail, len - tail);
    return bad ? first_mismatch(src, off, len) : len;
}

size_t pattern_check(const uint8_t *src, uint64_t off, size_t len)
{
    if (!((off | len) & 7))
        return check_words(src, off, len);  /* whole words: no head or tail */
    if (len >= 8)
        return check_loose(src, off, len);
    return check_any(src, off, len);
}
