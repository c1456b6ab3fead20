/* pattern.h - the bulk stream's verifiable payload.
 *
 * Byte i of a connection's stream is byte (i % 8), little-endian, of word
 * W(i / 8), with, for word w in period k = w / 8192 at j = w % 8192,
 *     W(w) = b(k) + j * STEP,  b(k) = mix63(k + 1)
 * where mix63 is a bijection of the 63-bit numbers (below) and STEP is an
 * odd number below 2^50. So within a 64 KiB period the words are an
 * arithmetic progression from a well-mixed base; b(k) >= 1 and j * STEP
 * < 2^63, so no word wraps. Filling and checking step a vector of four
 * words with one add (no table to load), and the Internet checksum of any
 * stretch follows in O(1) from the progression's sum (pattern_fill_sum).
 * A 64 KiB period spares most segments a second run: one of 45 MSS-sized
 * segments crosses a period's end (one of 3 with 4 KiB).
 *
 * What a check (every byte compared in place, any offset and length) finds:
 * - exactly: any byte whose value differs from the stream's at its offset
 *   (a corrupted byte), reported at that offset;
 * - exactly: a whole word delivered at a wrong offset that is a multiple of
 *   the 64 KiB period (b is injective over all 2^63 periods, so the same
 *   j gives another word), or that is a multiple of 8 with both words in
 *   one period (the progression's words are distinct);
 * - probabilistically: any other shift (lost or duplicated stretches,
 *   reordering, data at an offset that is not a multiple of 8). A stretch
 *   moved by a multiple of 8 across periods matches only if the two bases
 *   differ by a multiple of STEP below 8192 * STEP: about 2^-49 for mixed
 *   bases (an estimate: they are mixed, not random; tests place such
 *   stretches). A stretch moved by 1 to 7 bytes matches only where a
 *   word's bytes equal its neighbours' shifted ones, which a mixed base
 *   makes a chance of about 2^-63 per word.
 * So no shift reproduces the stream: a multiple of the period changes every
 * word, any other shift each word but by chance. */
#ifndef APPS_PATTERN_H
#define APPS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_PERIOD_WORDS 8192
#define PATTERN_MASK63 0x7FFFFFFFFFFFFFFFull
#define PATTERN_STEP 0x278DDE6E5FD29ull     /* odd, below 2^50 */
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

/* The first word of period k: its base, never 0 (mix63(0) is 0, and
 * k + 1 is not 0 for the 2^63 - 1 periods a stream can have). */
static inline uint64_t pattern_period_base(uint64_t k)
{
    return pattern_mix63(k + 1);
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
