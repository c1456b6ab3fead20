/* pattern_fill_sum: the same bytes as pattern_fill and the Internet
 * checksum of them (a byte-wise reference and tern_csum_partial), for
 * every length 0..3000 at stream offsets of every residue modulo 8 (near 0
 * and far out), every length 0..300 around period boundaries, at odd and
 * even destination addresses; bytes past the end stay untouched. The
 * stream is the definition in pattern.h, recomputed here. pattern_check
 * finds any changed byte, and shifted, lost or duplicated stretches at
 * their first wrong byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "tern.h"

#define GUARD 0xa5
#define PERIOD ((uint64_t)PATTERN_PERIOD_WORDS * 8)

/* pattern.h's definition, from its parts: word w is b(w / 8192) + (w %
 * 8192) * STEP, b(k) = mix63(k + 1). */
static uint64_t ref_word(uint64_t w)
{
    uint64_t base = pattern_mix63(w / PATTERN_PERIOD_WORDS + 1);
    return base + (w % PATTERN_PERIOD_WORDS) * 0x278DDE6E5FD29ull;
}

static uint8_t ref_byte(uint64_t i)
{
    return (uint8_t)(ref_word(i / 8) >> (i % 8 * 8));
}

/* RFC 1071 the slow way: byte i is the high byte of a 16-bit word when i
 * is even; the sum folded with end-around carries (0 only for no bits). */
static uint32_t ref_sum(const uint8_t *p, size_t len)
{
    uint64_t s = 0;
    for (size_t i = 0; i < len; i++)
        s += (i & 1) ? p[i] : (uint32_t)p[i] << 8;
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint32_t)s;
}

/* Fill at dst + align with both functions and compare everything. */
static void check_one(uint8_t *a, uint8_t *b, size_t align, uint64_t off,
                      size_t len)
{
    memset(a, GUARD, len + 64);
    memset(b, GUARD, len + 64);
    pattern_fill(a + align, off, len);
    uint32_t sum = pattern_fill_sum(b + align, off, len);
    assert_memory_equal(a, b, len + 64);
    for (size_t i = 0; i < len && i < 300; i++)    /* the definition */
        assert_int_equal(b[align + i], ref_byte(off + i));
    assert_int_equal(sum, ref_sum(b + align, len));
    assert_int_equal(sum, tern_csum_partial(b + align, len, 0));
    assert_int_equal(pattern_check(b + align, off, len), len);
}

static void every_length(void **state)
{
    (void)state;
    uint8_t *a = malloc(3000 + 64), *b = malloc(3000 + 64);
    static const uint64_t base[] = {0, 1ull << 40};
    for (size_t k = 0; k < 2; k++)
        for (uint64_t r = 0; r < 9; r++)
            for (size_t len = 0; len <= 3000; len++)
                check_one(a, b, (size_t)(r & 1), base[k] + r, len);
    free(a);
    free(b);
}

/* Every length 0..300 from offsets around the ends of periods (near 0, in
 * after a period whose base is above 2^62, and far out): runs that
 * start, end or cross there, whole words and loose bytes. */
static void around_periods(void **state)
{
    (void)state;
    uint8_t *a = malloc(300 + 64), *b = malloc(300 + 64);
    static const uint64_t ends[] = {PERIOD, 2 * PERIOD, 77 * PERIOD,
                                    (1ull << 40) + 5 * PERIOD};
    for (size_t k = 0; k < sizeof ends / sizeof ends[0]; k++)
        for (uint64_t back = 0; back <= 24; back++)
            for (size_t len = 0; len <= 300; len++) {
                check_one(a, b, (size_t)(back & 1), ends[k] - back, len);
                check_one(a, b, 0, ends[k] + back, len);
            }
    free(a);
    free(b);
}

/* The exact guarantees of pattern.h: the words of one period differ from
 * each other, and a word differs from the same place in other periods. */
static void words_differ_exactly(void **state)
{
    (void)state;
    for (uint64_t j = 0; j < PATTERN_PERIOD_WORDS; j++) {
        for (uint64_t i = 0; i < j; i++)
            assert_true(pattern_word(i) != pattern_word(j));
        for (uint64_t m = 1; m < 64; m++)
            assert_true(pattern_word(j) !=
                        pattern_word(j + m * PATTERN_PERIOD_WORDS));
        assert_true(pattern_word(j) != pattern_word(j + (1ull << 37)));
    }
}

/* The stream from offset off with bytes [at, at + n) taken from offset
 * off + at + shift instead (a shifted stretch; shift = -n repeats the
 * bytes before it, shift = n loses n bytes): pattern_check stops at the
 * first wrong byte, which must be within the stretch's first 8. */
static void check_stretch(uint64_t off, size_t at, size_t n, int64_t shift)
{
    enum { LEN = 3 * 4096 };
    static uint8_t buf[LEN];
    pattern_fill(buf, off, LEN);
    pattern_fill(buf + at, off + at + (uint64_t)shift, n);
    size_t first = at;
    while (first < LEN && buf[first] == ref_byte(off + first))
        first++;
    assert_true(first < at + 8);
    assert_int_equal(pattern_check(buf, off, LEN), first);
    if (first > 0)
        assert_int_equal(pattern_check(buf, off, first), first);
    /* a piece starting inside the stretch (an LRO piece) too */
    assert_int_equal(pattern_check(buf + at, off + at, LEN - at),
                     first - at);
}

static void check_finds_stretches(void **state)
{
    (void)state;
    static const int64_t shifts[] = {
        1, 3, 8, 1448, 4096, -4096, 4096 * 3 + 8, -1448, 5, 1ll << 39,
        (1ll << 39) + 4096, -(1ll << 20), 12345};
    static const size_t ats[] = {0, 1, 8, 100, 1448, 4090, 4096, 6000};
    for (size_t s = 0; s < sizeof shifts / sizeof shifts[0]; s++)
        for (size_t a = 0; a < sizeof ats / sizeof ats[0]; a++) {
            check_stretch(1ull << 40, ats[a], 1448, shifts[s]);
            check_stretch((1ull << 40) + 3, ats[a], 9, shifts[s]);
        }
    /* a duplicated or lost stretch: what follows is shifted */
    check_stretch(1ull << 21, 2000, 8192, -1448);
    check_stretch(1ull << 21, 2001, 8192, 1448);
}

/* Many vector blocks in one call, starting odd and ending odd. */
static void long_buffer(void **state)
{
    (void)state;
    size_t len = (1u << 20) + 13;
    uint8_t *a = malloc(len + 64), *b = malloc(len + 64);
    check_one(a, b, 1, 12345, len);
    check_one(a, b, 0, 8, len - 13);
    free(a);
    free(b);
}

/* The sum is of what was written: a changed byte changes the reference. */
static void sum_follows_bytes(void **state)
{
    (void)state;
    uint8_t buf[1448];
    uint32_t sum = pattern_fill_sum(buf, 1448 * 7, sizeof buf);
    buf[700] ^= 1;
    assert_int_not_equal(sum, ref_sum(buf, sizeof buf));
}

/* pattern_check finds a flipped byte wherever it is: in the head or tail
 * bytes around whole words, in a half block or in a full block. */
static void check_finds_each_byte(void **state)
{
    (void)state;
    uint8_t buf[200];
    static const size_t lens[] = {0, 1, 5, 7, 8, 13, 40, 71, 104, 200};
    for (uint64_t off = 0; off < 16; off++)
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            size_t len = lens[k];
            pattern_fill(buf, off, len);
            assert_int_equal(pattern_check(buf, off, len), len);
            for (size_t j = 0; j < len; j++) {
                buf[j] ^= 0x10;
                assert_int_equal(pattern_check(buf, off, len), j);
                buf[j] ^= 0x10;
            }
        }
}

/* Segments far into the stream: the whole-word case (offset and length
 * multiples of 8, as every segment of a stream with a 1448-byte MSS) and
 * pieces at any offset and length (LRO chain pieces): a flipped byte
 * anywhere is found at its offset. */
static void check_piece(uint64_t at, size_t len)
{
    uint8_t buf[2048];
    uint32_t sum = pattern_fill_sum(buf, at, len);
    assert_int_equal(sum, ref_sum(buf, len));
    assert_int_equal(pattern_check(buf, at, len), len);
    for (size_t j = 0; j < len; j++) {
        buf[j] ^= 0x80;
        assert_int_equal(pattern_check(buf, at, len), j);
        buf[j] ^= 0x80;
    }
}

static void check_finds_byte_in_segment(void **state)
{
    (void)state;
    static const size_t lens[] = {1448, 1811, 8, 9, 15, 16, 17};
    for (uint64_t off = 0; off < 1448 * 3; off += 1448)
        for (uint64_t far = 0; far < 2; far++)
            for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
                for (uint64_t skew = 0; skew < 8; skew += 3)
                    check_piece(off + skew + far * (1448ull << 30), lens[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_length),
        cmocka_unit_test(around_periods),
        cmocka_unit_test(words_differ_exactly),
        cmocka_unit_test(check_finds_stretches),
        cmocka_unit_test(long_buffer),
        cmocka_unit_test(sum_follows_bytes),
        cmocka_unit_test(check_finds_each_byte),
        cmocka_unit_test(check_finds_byte_in_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
