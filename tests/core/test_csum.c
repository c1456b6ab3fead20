/* Internet checksum, exhaustively: every length 0..2048 at every start
 * alignment 0..15, random and all-0xff data, carried-in sums at their
 * extremes, each against a plain reference; the fused copy + sum also for
 * the bytes it copies and the bytes around dst it must not write; buffers
 * that end or start at an unmapped page catch reads outside the data (the
 * x86-64 code is assembly, which the sanitizers do not see). The dispatched
 * functions and the portable C ones (what other targets run) are both
 * checked, the dispatched ones with the AVX2 code for long sums on (where
 * the CPU has it) and off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tern.h"
#include "util.h"

#define MAX_LEN 2048
#define MAX_ALIGN 16
#define GUARD 32

typedef uint32_t (*sum_fn)(const void *, size_t, uint32_t);
typedef uint32_t (*copy_fn)(void *, const void *, size_t, uint32_t);

/* RFC 1071 by the book: big-endian 16-bit words (an odd last byte is the
 * high byte of a word), end-around carry, folded to 16 bits, not inverted.
 * Zero only when everything added was zero. */
static uint32_t ref_sum(const uint8_t *p, size_t len, uint32_t sum)
{
    uint64_t s = sum;
    for (size_t i = 0; i + 1 < len; i += 2)
        s += (uint32_t)p[i] << 8 | p[i + 1];
    if (len & 1)
        s += (uint32_t)p[len - 1] << 8;
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint32_t)s;
}

/* The carried-in sums: the extremes and a few that carry into bit 16. */
static const uint32_t init_sums[] = {0, 1, 0xffff, 0x10000, 0x1fffe,
                                     0x80000000u, 0xfffffffeu, 0xffffffffu};
#define N_INIT (sizeof init_sums / sizeof init_sums[0])

enum fill { FILL_RANDOM, FILL_ONES, FILL_ZERO };

static void fill(uint8_t *p, size_t n, enum fill how, unsigned seed)
{
    srand(seed);
    for (size_t i = 0; i < n; i++)
        p[i] = how == FILL_ONES ? 0xff
             : how == FILL_ZERO ? 0
                                : (uint8_t)rand();
}

static void check_sum_fn(sum_fn f, const char *name, enum fill how)
{
    static uint8_t buf[MAX_LEN + MAX_ALIGN];
    fill(buf, sizeof buf, how, 7);
    for (size_t off = 0; off < MAX_ALIGN; off++)
        for (size_t len = 0; len <= MAX_LEN; len++)
            for (size_t i = 0; i < N_INIT; i++) {
                uint32_t want = ref_sum(buf + off, len, init_sums[i]);
                uint32_t got = f(buf + off, len, init_sums[i]);
                if (want != got)
                    fail_msg("%s fill %d len %zu off %zu sum %08x: want %04x "
                             "got %04x", name, (int)how, len, off,
                             init_sums[i], want, got);
            }
}

static void test_partial_random(void **state)
{
    (void)state;
    check_sum_fn(tern_csum_partial, "partial", FILL_RANDOM);
    check_sum_fn(tern_csum_partial_c, "partial_c", FILL_RANDOM);
}

static void test_partial_all_ones(void **state)
{
    (void)state;
    check_sum_fn(tern_csum_partial, "partial", FILL_ONES);
    check_sum_fn(tern_csum_partial_c, "partial_c", FILL_ONES);
}

/* All-zero data: the sum stays 0 (not 0xffff) unless something nonzero
 * was carried in, which the checks of received segments rely on. */
static void test_partial_zeros(void **state)
{
    (void)state;
    check_sum_fn(tern_csum_partial, "partial", FILL_ZERO);
    check_sum_fn(tern_csum_partial_c, "partial_c", FILL_ZERO);
    uint8_t z[100] = {0};
    assert_int_equal(tern_csum_partial(z, sizeof z, 0), 0);
    assert_int_equal(tern_csum_partial(z, sizeof z, 0xffff), 0xffff);
}

/* One copy of len bytes from src + soff to dst + doff: the sum, the bytes
 * copied, and the guard bytes on both sides of dst untouched. */
static void check_one_copy(copy_fn f, const char *name, const uint8_t *src,
                           size_t soff, size_t doff, size_t len, uint32_t init)
{
    static uint8_t dst[GUARD + MAX_ALIGN + MAX_LEN + GUARD];
    uint8_t *d = dst + GUARD + doff;
    memset(d - GUARD, 0xa5, len + 2 * GUARD);
    uint32_t want = ref_sum(src + soff, len, init);
    uint32_t got = f(d, src + soff, len, init);
    if (want != got)
        fail_msg("%s len %zu soff %zu doff %zu sum %08x: want %04x got %04x",
                 name, len, soff, doff, init, want, got);
    if (memcmp(d, src + soff, len))
        fail_msg("%s len %zu soff %zu doff %zu: bad copy", name, len, soff,
                 doff);
    for (int i = 1; i <= GUARD; i++)
        if (d[-i] != 0xa5 || d[len + (size_t)i - 1] != 0xa5)
            fail_msg("%s len %zu soff %zu doff %zu: wrote outside dst (%d)",
                     name, len, soff, doff, i);
}

static void check_copy_fn(copy_fn f, const char *name, enum fill how)
{
    static uint8_t src[MAX_LEN + MAX_ALIGN];
    fill(src, sizeof src, how, 11);
    /* every length at every source alignment, the destination at another */
    for (size_t soff = 0; soff < MAX_ALIGN; soff++)
        for (size_t len = 0; len <= MAX_LEN; len++)
            check_one_copy(f, name, src, soff, (soff * 7 + 3) % MAX_ALIGN, len,
                           init_sums[len % N_INIT]);
    /* every pair of alignments for the short lengths */
    for (size_t soff = 0; soff < MAX_ALIGN; soff++)
        for (size_t doff = 0; doff < MAX_ALIGN; doff++)
            for (size_t len = 0; len <= 300; len++)
                for (size_t i = 0; i < N_INIT; i += 3)
                    check_one_copy(f, name, src, soff, doff, len, init_sums[i]);
}

static void test_copy_random(void **state)
{
    (void)state;
    check_copy_fn(tern_csum_copy, "copy", FILL_RANDOM);
    check_copy_fn(tern_csum_copy_c, "copy_c", FILL_RANDOM);
}

static void test_copy_all_ones(void **state)
{
    (void)state;
    check_copy_fn(tern_csum_copy, "copy", FILL_ONES);
    check_copy_fn(tern_csum_copy_c, "copy_c", FILL_ONES);
}

/* Three pages, the first and last inaccessible: data placed to end right
 * before the last one or to start right after the first one faults if a
 * function reads (or writes) a byte outside it. */
static uint8_t *guarded_pages(size_t *page)
{
    *page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, 3 * *page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    assert_int_equal(mprotect(m, *page, PROT_NONE), 0);
    assert_int_equal(mprotect(m + 2 * *page, *page, PROT_NONE), 0);
    return m + *page;
}

static void test_no_access_outside(void **state)
{
    (void)state;
    size_t page;
    uint8_t *mid = guarded_pages(&page);
    uint8_t other[600];
    fill(mid, page, FILL_RANDOM, 3);
    fill(other, sizeof other, FILL_RANDOM, 5);
    for (size_t len = 0; len <= 520; len++) {
        const uint8_t *at_end = mid + page - len, *at_start = mid;
        assert_int_equal(tern_csum_partial(at_end, len, 0),
                         ref_sum(at_end, len, 0));
        assert_int_equal(tern_csum_partial(at_start, len, 0),
                         ref_sum(at_start, len, 0));
        assert_int_equal(tern_csum_partial_c(at_end, len, 0),
                         ref_sum(at_end, len, 0));
        /* source at either edge, then destination at either edge */
        uint8_t out[600];
        assert_int_equal(tern_csum_copy(out, at_end, len, 0),
                         ref_sum(at_end, len, 0));
        assert_int_equal(tern_csum_copy(out, at_start, len, 0),
                         ref_sum(at_start, len, 0));
        assert_int_equal(tern_csum_copy(mid + page - len, other, len, 0),
                         ref_sum(other, len, 0));
        assert_memory_equal(mid + page - len, other, len);
        assert_int_equal(tern_csum_copy(mid, other, len, 0),
                         ref_sum(other, len, 0));
        assert_memory_equal(mid, other, len);
        assert_int_equal(tern_csum_copy_c(mid + page - len, other, len, 0),
                         ref_sum(other, len, 0));
    }
    assert_int_equal(munmap(mid - page, 3 * page), 0);
}

/* The dispatched code and the portable code agree bit for bit on data the
 * exhaustive loops do not produce: long runs of sums that carry often. */
static void test_dispatch_matches_portable(void **state)
{
    (void)state;
    static uint8_t big[65536 + 16], out[65536 + 16];
    for (unsigned round = 0; round < 4; round++) {
        fill(big, sizeof big, round & 1 ? FILL_ONES : FILL_RANDOM, round);
        for (size_t len = 65536 - 40; len <= 65536 + 3; len++) {
            uint32_t init = init_sums[(len + round) % N_INIT];
            assert_int_equal(tern_csum_partial(big + (len & 15), len, init),
                             tern_csum_partial_c(big + (len & 15), len, init));
            assert_int_equal(tern_csum_copy(out, big + round, len, init),
                             tern_csum_copy_c(out, big + round, len, init));
        }
    }
    assert_int_equal(tern_csum_partial(big, 65536, 0),
                     ref_sum(big, 65536, 0));
}

/* Runs longer than the x86-64 code sums in one go (its 32-bit SSE2 and
 * AVX2 lanes are emptied every 512 KiB; 2 MiB would overflow them):
 * all-0xff and all-zero words push the lanes to their two extremes. The
 * copy and sum the same. */
static void test_long_runs(void **state)
{
    (void)state;
    size_t n = 5 * 1024 * 1024 + 200;
    uint8_t *big = malloc(n + 1), *out = malloc(n + 1);
    assert_non_null(big);
    assert_non_null(out);
    for (enum fill how = FILL_RANDOM; how <= FILL_ZERO; how++) {
        fill(big, n + 1, how, 17);
        big[n / 2] ^= 0x5a;                     /* not all one value */
        for (size_t len = n - 130; len <= n; len += 43)
            for (size_t i = 0; i < N_INIT; i += 7) {
                assert_int_equal(tern_csum_partial(big + 1, len, init_sums[i]),
                                 ref_sum(big + 1, len, init_sums[i]));
                assert_int_equal(tern_csum_partial_c(big, len, init_sums[i]),
                                 ref_sum(big, len, init_sums[i]));
            }
        for (size_t len = n - 130; len <= n; len += 87) {
            assert_int_equal(tern_csum_copy(out, big + 1, len, init_sums[3]),
                             ref_sum(big + 1, len, init_sums[3]));
            assert_int_equal(memcmp(out, big + 1, len), 0);
        }
    }
    free(big);
    free(out);
}

/* The folds the stack applies to its own running sums: the one residue
 * modulo 0xffff in 1..0xffff for a nonzero sum, 0 for 0. */
static uint32_t ref_fold(uint64_t s)
{
    if (!s)
        return 0;
    uint32_t r = (uint32_t)(s % 0xffff);
    return r ? r : 0xffff;
}

static void test_folds(void **state)
{
    (void)state;
    static const uint64_t edge[] = {0, 1, 0xfffe, 0xffff, 0x10000, 0x1fffe,
                                    0xfffeffff, 0xffff0000u, 0xffffffffu,
                                    0x100000000ull, 0xffffffff00000000ull,
                                    0xfffffffffffffffeull,
                                    0xffffffffffffffffull};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        assert_int_equal(csum_fold64(edge[i]), ref_fold(edge[i]));
        assert_int_equal(csum_fold32((uint32_t)edge[i]),
                         ref_fold((uint32_t)edge[i]));
    }
    srand(13);
    for (int i = 0; i < 1000000; i++) {
        uint64_t v = (uint64_t)rand() << 62 ^ (uint64_t)rand() << 31 ^
                     (uint64_t)rand();
        v >>= rand() % 64;
        assert_int_equal(csum_fold64(v), ref_fold(v));
        assert_int_equal(csum_fold32((uint32_t)v), ref_fold((uint32_t)v));
    }
    /* multiples of 0xffff (and the two values after each) up to past 2^32 */
    for (uint64_t v = 0; v < 0x100020000ull; v += 0xffff * 4099ull)
        for (uint64_t d = 0; d < 3; d++) {
            assert_int_equal(csum_fold64(v + d), ref_fold(v + d));
            assert_int_equal(csum_fold32((uint32_t)(v + d)),
                             ref_fold((uint32_t)(v + d)));
        }
}

/* The AVX2 code is used exactly when this CPU has AVX2 (libgcc asks the
 * same cpuid and xgetbv questions), can be turned off and on again, and
 * gives the same sums as the baseline code on the same long runs. */
static void test_avx2_choice(void **state)
{
    (void)state;
#if defined(__x86_64__) && !defined(TERN_CSUM_PORTABLE)
    bool have = __builtin_cpu_supports("avx2");
#else
    bool have = false;
#endif
    static uint8_t big[9000];
    fill(big, sizeof big, FILL_RANDOM, 23);
    assert_false(tern_csum_avx2(false));
    uint32_t base = tern_csum_partial(big + 3, sizeof big - 3, 0x1234);
    assert_int_equal(tern_csum_avx2(true), have);
    assert_int_equal(tern_csum_partial(big + 3, sizeof big - 3, 0x1234), base);
    assert_int_equal(base, ref_sum(big + 3, sizeof big - 3, 0x1234));
}

/* Every check runs twice: with the long sums on AVX2 (where the CPU has
 * it) and on the baseline code. */
static int use_avx2(void **state)
{
    (void)state;
    tern_csum_avx2(true);
    return 0;
}

static int use_baseline(void **state)
{
    (void)state;
    tern_csum_avx2(false);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_random),
        cmocka_unit_test(test_partial_all_ones),
        cmocka_unit_test(test_partial_zeros),
        cmocka_unit_test(test_copy_random),
        cmocka_unit_test(test_copy_all_ones),
        cmocka_unit_test(test_no_access_outside),
        cmocka_unit_test(test_dispatch_matches_portable),
        cmocka_unit_test(test_long_runs),
        cmocka_unit_test(test_folds),
        cmocka_unit_test(test_avx2_choice),
    };
    int failed = cmocka_run_group_tests_name("avx2", tests, use_avx2, NULL);
    return failed + cmocka_run_group_tests_name("baseline", tests,
                                                use_baseline, NULL);
}
