/* pattern.h - the bulk stream's verifiable payload: byte i of a connection's
 * stream is byte (i % 8) of word(i / 8), word(w) a cheap mix of w. Any lost,
 * duplicated, reordered or corrupted byte shows up as a mismatch at its
 * stream offset; filling and checking run at memory speed. */
#ifndef APPS_PATTERN_H
#define APPS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_K 0x9E3779B97F4A7C15ull

/* word(w) = mix((w + 1) * K): a multiply spreads w over all bits, the
 * xor-shift mixes high bits back into the low bytes. */
static inline uint64_t pattern_mix(uint64_t x)
{
    return x ^ (x >> 29);
}

static inline uint64_t pattern_word(uint64_t w)
{
    return pattern_mix((w + 1) * PATTERN_K);
}

/* Write len bytes of the stream starting at offset off. */
void pattern_fill(uint8_t *dst, uint64_t off, size_t len);
/* pattern_fill, and in the same pass the Internet checksum (RFC 1071) of
 * the len bytes written, folded to 16 bits and not inverted: what
 * tern_csum_partial(dst, len, 0) would return, for tern_tcp_send_buf_sum. */
uint32_t pattern_fill_sum(uint8_t *dst, uint64_t off, size_t len);
/* Compare; returns the number of bytes that match before the first
 * mismatch (len if all match). */
size_t pattern_check(const uint8_t *src, uint64_t off, size_t len);

#endif
