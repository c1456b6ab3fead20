/* Checksums (odd lengths, every alignment), SipHash vectors, address text. */
/* stack.h's inline helpers copy with tern_memcpy, which the library keeps
 * to itself: the compiler's builtins stand in for it here. */
#define TERN_USE_BUILTIN_MEM 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "util.h"
#include "stack.h"

static void test_rfc1071_example(void **state)
{
    (void)state;
    /* RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2. */
    const uint8_t d[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
    assert_int_equal(tern_csum_fold(tern_csum_partial(d, 8, 0)), 0xddf2);
}

static void test_csum_matches_reference(void **state)
{
    (void)state;
    uint8_t buf[2100];
    srand(7);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rand();
    /* every length 0..1600 at offsets 0..7, plus a carried-in sum */
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len <= 1600; len++) {
            uint16_t want = (uint16_t)~th_csum_ref(buf + off, len, 0x1234);
            uint16_t got = tern_csum_fold(tern_csum_partial(buf + off, len, 0x1234));
            if (want != got)
                fail_msg("len %zu off %zu: want %04x got %04x", len, off, want, got);
        }
}

/* The fused copy + sum: same sum as the reference, same bytes copied, and
 * nothing written past the end, for every length and both alignments. */
static void test_csum_copy_matches_reference(void **state)
{
    (void)state;
    uint8_t src[1700], dst[1720];
    srand(11);
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)rand();
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len <= 1600; len++) {
            memset(dst, 0xa5, sizeof dst);
            uint16_t want = (uint16_t)~th_csum_ref(src + off, len, 0x4321);
            uint16_t got = tern_csum_fold(
                tern_csum_copy(dst + 3, src + off, len, 0x4321));
            if (want != got)
                fail_msg("len %zu off %zu: want %04x got %04x", len, off, want,
                         got);
            assert_memory_equal(dst + 3, src + off, len);
            assert_int_equal(dst[3 + len], 0xa5);
            assert_int_equal(dst[2], 0xa5);
        }
}

static void test_csum_all_ones(void **state)
{
    (void)state;
    uint8_t ff[1500];
    memset(ff, 0xff, sizeof ff);
    assert_int_equal(tern_csum_fold(tern_csum_partial(ff, sizeof ff, 0)), 0xffff);
    assert_int_equal(tern_csum_fold(tern_csum_partial(ff, 0, 0)), 0);
    assert_int_equal(tern_csum_fold(tern_csum_partial(ff, 1, 0)), 0xff00);
}

static void test_siphash_vector(void **state)
{
    (void)state;
    /* Reference vector of the SipHash paper: key 00..0f, message 00..0e. */
    uint8_t key[16], msg[15];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 15; i++)
        msg[i] = (uint8_t)i;
    assert_true(tern_siphash(key, msg, 15) == 0xa129ca6149be45e5ull);
    /* empty message: first entry of the reference table */
    assert_true(tern_siphash(key, msg, 0) == 0x726fdb47dd0e0e31ull);
}

static void test_ip4_text(void **state)
{
    (void)state;
    char out[16];
    uint32_t ip = 0;
    assert_string_equal(tern_ip4_format(TERN_IP4(198, 18, 0, 1), out), "198.18.0.1");
    assert_string_equal(tern_ip4_format(0, out), "0.0.0.0");
    assert_string_equal(tern_ip4_format(0xffffffffu, out), "255.255.255.255");
    assert_true(tern_ip4_parse("10.200.3.4", &ip));
    assert_int_equal(ip, TERN_IP4(10, 200, 3, 4));
    const char *bad[] = {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1..2.3",
                         "a.b.c.d", "1.2.3.4 ", "1234.1.1.1", "1.2.3.-4"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(tern_ip4_parse(bad[i], &ip));
}

static void test_seq_compare(void **state)
{
    (void)state;
    assert_true(seq_lt(0xfffffff0u, 0x10));
    assert_true(seq_gt(0x10, 0xfffffff0u));
    assert_true(seq_le(5, 5) && seq_ge(5, 5));
}

static void bad_cfg(tern_config *c) { c->ip = 0; }

static void test_init_rejects_bad_config(void **state)
{
    (void)state;
    tern_config cfg;
    tern_config_defaults(&cfg);
    bad_cfg(&cfg);
    static _Alignas(64) uint8_t mem[1 << 16];
    int err = 0;
    assert_null(tern_stack_init(mem, sizeof mem, &cfg, &err));
    assert_int_equal(err, TERN_EINVAL);
    /* a valid config in too little memory */
    th *t = th_new(NULL);
    err = 0;
    assert_null(tern_stack_init(mem, 64, &t->cfg, &err));
    assert_int_equal(err, TERN_ENOMEM);
    assert_int_equal(th_free(t), 0);
}

/* ip4_hdr_sum_ok (native words, divisibility test) says what the byte-
 * order fold ip4_hdr_sum says: valid headers, one bit flipped, both
 * encodings of a zero sum, all zeros and all ones. */
static bool sum_says_ok(const uint8_t *h) { return ip4_hdr_sum(h) == 0xffff; }

static void test_ip4_hdr_sum_ok_matches_fold(void **state)
{
    (void)state;
    uint8_t h[20];
    uint32_t x = 12345;
    int valid = 0;
    for (int n = 0; n < 20000; n++) {
        for (int i = 0; i < 20; i++) {
            x = x * 1103515245u + 12345u;
            h[i] = (uint8_t)(x >> 16);
        }
        h[10] = h[11] = 0;
        uint16_t c = (uint16_t)~ip4_hdr_sum(h);
        h[10] = (uint8_t)(c >> 8);
        h[11] = (uint8_t)c;
        assert_true(sum_says_ok(h));
        assert_true(ip4_hdr_sum_ok(h));
        valid++;
        if (c == 0) {               /* -0 and +0 are both a good sum */
            h[10] = h[11] = 0xff;
            assert_int_equal(ip4_hdr_sum_ok(h), sum_says_ok(h));
        }
        h[n % 20] ^= (uint8_t)(1u << (n % 8));
        assert_int_equal(ip4_hdr_sum_ok(h), sum_says_ok(h));
        assert_false(ip4_hdr_sum_ok(h));
    }
    assert_int_equal(valid, 20000);
    memset(h, 0, sizeof h);
    assert_int_equal(ip4_hdr_sum_ok(h), sum_says_ok(h));
    assert_false(ip4_hdr_sum_ok(h));
    memset(h, 0xff, sizeof h);
    assert_int_equal(ip4_hdr_sum_ok(h), sum_says_ok(h));
    assert_true(ip4_hdr_sum_ok(h));
}

/* ip4_pseudo_sum32 (whole 32-bit addresses, end-around carries) is the
 * pseudo header's sum mod 0xffff as ip4_pseudo_sum's 16-bit halves are,
 * and as tern_csum_partial's sum argument it gives the same verdict:
 * random and extreme addresses and lengths, good and bad data. */
static void test_pseudo_sum32_matches_halves(void **state)
{
    (void)state;
    static const uint32_t edge[] = {0, 1, 0xffff, 0x10000, 0xfffeffff,
                                    0xffffffff, 0x80000000};
    uint8_t seg[64];
    uint32_t x = 777;
    for (int n = 0; n < 50000; n++) {
        x = x * 1103515245u + 12345u;
        uint32_t src = n < 49 ? edge[n % 7] : x;
        x = x * 1103515245u + 12345u;
        uint32_t dst = n < 49 ? edge[n / 7] : x;
        uint32_t len = (x >> 8) % (sizeof seg + 1);
        uint32_t a = ip4_pseudo_sum(src, dst, 6, len);
        uint32_t b = ip4_pseudo_sum32(src, dst, 6, len);
        assert_int_equal(a % 0xffff, b % 0xffff);
        for (uint32_t i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            seg[i] = (uint8_t)(x >> 16);
        }
        if (len >= 18) {            /* a TCP checksum field: make it good */
            seg[16] = seg[17] = 0;
            uint16_t c = (uint16_t)~tern_csum_partial(seg, len, a);
            seg[16] = (uint8_t)(c >> 8);
            seg[17] = (uint8_t)c;
        }
        assert_int_equal(tern_csum_partial(seg, len, a) == 0xffff,
                         tern_csum_partial(seg, len, b) == 0xffff);
        if (len >= 18)
            assert_true(tern_csum_partial(seg, len, b) == 0xffff);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc1071_example),
        cmocka_unit_test(test_csum_matches_reference),
        cmocka_unit_test(test_csum_copy_matches_reference),
        cmocka_unit_test(test_csum_all_ones),
        cmocka_unit_test(test_ip4_hdr_sum_ok_matches_fold),
        cmocka_unit_test(test_pseudo_sum32_matches_halves),
        cmocka_unit_test(test_siphash_vector),
        cmocka_unit_test(test_ip4_text),
        cmocka_unit_test(test_seq_compare),
        cmocka_unit_test(test_init_rejects_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
