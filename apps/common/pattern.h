/* pattern.h - the bulk stream's verifiable payload.
 *
 * Byte i of a connection's stream is byte (i % 8), little-endian, of word
 * W(i / 8), with, for word w in period k = w / 512 at j = w % 512,
 *     W(w) = table[j] + c(k),  table[j] = mix63(2^62 + j),
 *     c(k) = (k + 1) * K modulo 2^63
 * where mix63 is a bijection of the 63-bit numbers (below) and K is odd,
 * so c too is a bijection of them. Both terms are below 2^63, so the sum
 * never wraps: filling is a 4 KiB table copied with one add per word, and
 * the Internet checksum of any stretch follows from the table's prefix
 * sums in O(1) (pattern_fill_sum).
 *
 * What a check (every byte compared in place, any offset and length) finds:
 * - exactly: any byte whose value differs from the stream's at its offset
 *   (a corrupted byte), reported at that offset;
 * - exactly: a whole word delivered at a wrong offset that is a multiple of
 *   the 4 KiB period (c is injective over all 2^63 periods, so the same
 *   table word plus another period's constant differs), or that is a
 *   multiple of 8 with both words in one period (table words are distinct);
 * - probabilistically: any other shift (lost or duplicated stretches,
 *   reordering, data at an offset that is not a multiple of 8): the bytes
 *   compared come from well-mixed 63-bit words, so a wrong 8-byte stretch
 *   matches by chance with a probability of about 2^-63 (an estimate: the
 *   words are mixed, not random; tests place such stretches).
 * So no shift reproduces the stream: a multiple of the period changes every
 * word, any other shift each word but with a chance of about 2^-63. */
#ifndef APPS_PATTERN_H
#define APPS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_PERIOD_WORDS 512
#define PATTERN_MASK63 0x7FFFFFFFFFFFFFFFull
#define PATTERN_K 0x9E3779B97F4A7C15ull
#define PATTERN_K2 0xBF58476D1CE4E5B9ull

/* Two odd multiplies and two xor-shifts, all modulo 2^63: each step is a
 * bijection of the 63-bit numbers, so distinct inputs give distinct words. */
static inline uint64_t pattern_mix63(uint64_t x)
{
    x = (x * PATTERN_K) & PATTERN_MASK63;
    x ^= x >> 32;
    x = (x * PATTERN_K2) & PATTERN_MASK63;
    return x ^ (x >> 29);
}

/* The constant added to every word of period k: one multiply. */
static inline uint64_t pattern_period_constant(uint64_t k)
{
    return ((k + 1) * PATTERN_K) & PATTERN_MASK63;
}

/* Word w of the stream (bytes 8w .. 8w + 7). */
uint64_t pattern_word(uint64_t w);

/* Write len bytes of the stream starting at offset off. */
void pattern_fill(uint8_t *dst, uint64_t off, size_t len);
/* pattern_fill, and the Internet checksum (RFC 1071) of the len bytes
 * written, folded to 16 bits and not inverted: what
 * tern_csum_partial(dst, len, 0) would return, for tern_tcp_send_buf_sum.
 * The whole words' share comes from prefix sums, not from the bytes. */
uint32_t pattern_fill_sum(uint8_t *dst, uint64_t off, size_t len);
/* Compare; returns the number of bytes that match before the first
 * mismatch (len if all match). */
size_t pattern_check(const uint8_t *src, uint64_t off, size_t len);

#endif
