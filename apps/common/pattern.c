/* pattern.c - fill and verify the bulk stream pattern (see pattern.h).
 *
 * word(w) = mix(x(w)) with x(w) = (w + 1) * K, so x(w + 1) = x(w) + K: the
 * bulk loops keep eight consecutive x values in two four-word vectors and
 * step each by 8 * K, with no multiply (a shift, two xors and an add per 32
 * bytes). The check or-s all differences together and tests once per call;
 * only a mismatch pays for the exact byte-wise scan. Words are stored
 * little-endian on any host, so sender and receiver agree. */
#include "pattern.h"

#include <stdbool.h>
#include <string.h>

/* GCC/clang vector types rather than intrinsics, so this stays portable:
 * four words per vector, one AVX2 register or two SSE2 ones. */
typedef uint64_t v4u64 __attribute__((vector_size(32)));
#define BLOCK_BYTES 64

/* On x86-64 the word loops are built twice, for AVX2 and for the baseline,
 * and the loader picks one (an ifunc) on the CPU at hand. */
#if defined(__x86_64__) && defined(__gnu_linux__) && \
    (defined(__clang__) || __GNUC__ >= 6)
#define TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TARGET_CLONES
#endif

static inline uint8_t pattern_byte(uint64_t i)
{
    return (uint8_t)(pattern_word(i >> 3) >> ((i & 7) * 8));
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

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Vector lanes are host-order words: little-endian is the stream order.
 * Vectors are only passed by pointer: by value, a 32-byte vector has a
 * different ABI with and without AVX. */

/* x of words w .. w + 3. */
static inline void lanes_at(v4u64 *x, uint64_t w)
{
    for (int l = 0; l < 4; l++)
        (*x)[l] = (w + 1 + (uint64_t)l) * PATTERN_K;
}

/* Whole words from word w (n a multiple of 8): 64-byte blocks of two
 * vectors of x, each stepped by eight words, then single words. */
TARGET_CLONES
static void fill_words(uint8_t *dst, uint64_t w, size_t n)
{
    v4u64 x0, x1, y0, y1;
    lanes_at(&x0, w);
    lanes_at(&x1, w + 4);
    const uint64_t step = 8 * PATTERN_K;
    size_t i = 0;
    for (; i + BLOCK_BYTES <= n; i += BLOCK_BYTES) {
        y0 = x0 ^ (x0 >> 29);
        y1 = x1 ^ (x1 >> 29);
        memcpy(dst + i, &y0, 32);
        memcpy(dst + i + 32, &y1, 32);
        x0 += step;
        x1 += step;
    }
    for (uint64_t x = x0[0]; i < n; i += 8, x += PATTERN_K)
        store_le(dst + i, pattern_mix(x));
}

/* Nonzero when any of the whole words from word w differs: the
 * differences are or-ed together and looked at once, so the loops have no
 * branch. */
TARGET_CLONES
static uint64_t words_differ(const uint8_t *src, uint64_t w, size_t n)
{
    v4u64 x0, x1, y0, y1, d = {0, 0, 0, 0};
    lanes_at(&x0, w);
    lanes_at(&x1, w + 4);
    const uint64_t step = 8 * PATTERN_K;
    size_t i = 0;
    for (; i + BLOCK_BYTES <= n; i += BLOCK_BYTES) {
        memcpy(&y0, src + i, 32);
        memcpy(&y1, src + i + 32, 32);
        d |= (y0 ^ x0 ^ (x0 >> 29)) | (y1 ^ x1 ^ (x1 >> 29));
        x0 += step;
        x1 += step;
    }
    uint64_t diff = d[0] | d[1] | d[2] | d[3];
    for (uint64_t x = x0[0]; i < n; i += 8, x += PATTERN_K)
        diff |= load_le(src + i) ^ pattern_mix(x);
    return diff;
}
#else
static void fill_words(uint8_t *dst, uint64_t w, size_t n)
{
    for (size_t i = 0; i < n; i += 8)
        store_le(dst + i, pattern_word(w++));
}

static uint64_t words_differ(const uint8_t *src, uint64_t w, size_t n)
{
    uint64_t diff = 0;
    for (size_t i = 0; i < n; i += 8)
        diff |= load_le(src + i) ^ pattern_word(w++);
    return diff;
}
#endif

/* The n bytes from stream offset off, all in one word (a head or tail
 * shorter than a word): the word is computed once. */
static void fill_bytes(uint8_t *dst, uint64_t off, size_t n)
{
    uint64_t word = pattern_word(off >> 3) >> ((off & 7) * 8);
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint8_t)(word >> (8 * i));
}

static bool bytes_differ(const uint8_t *src, uint64_t off, size_t n)
{
    uint64_t word = pattern_word(off >> 3) >> ((off & 7) * 8);
    unsigned diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= src[i] ^ (uint8_t)(word >> (8 * i));
    return diff != 0;
}

/* Bytes before the first word boundary of [off, off + len). */
static size_t head_len(uint64_t off, size_t len)
{
    size_t head = (size_t)(-off & 7);
    return head < len ? head : len;
}

void pattern_fill(uint8_t *dst, uint64_t off, size_t len)
{
    size_t head = head_len(off, len);
    size_t words = (len - head) & ~(size_t)7, tail = head + words;
    fill_bytes(dst, off, head);
    fill_words(dst + head, (off + head) >> 3, words);
    fill_bytes(dst + tail, off + tail, len - tail);
}

/* The slow, exact scan: bytes that match before the first mismatch. */
static size_t first_mismatch(const uint8_t *src, uint64_t off, size_t len)
{
    size_t i = 0;
    for (; i < len && ((off + i) & 7); i++)
        if (src[i] != pattern_byte(off + i))
            return i;
    for (; i + 8 <= len; i += 8)
        if (load_le(src + i) != pattern_word((off + i) >> 3))
            break;
    for (; i < len; i++)
        if (src[i] != pattern_byte(off + i))
            return i;
    return len;
}

size_t pattern_check(const uint8_t *src, uint64_t off, size_t len)
{
    size_t head = head_len(off, len);
    size_t words = (len - head) & ~(size_t)7, tail = head + words;
    bool bad = bytes_differ(src, off, head) ||
               words_differ(src + head, (off + head) >> 3, words) ||
               bytes_differ(src + tail, off + tail, len - tail);
    return bad ? first_mismatch(src, off, len) : len;
}
