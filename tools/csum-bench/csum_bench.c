/* csum-bench: the Internet checksum functions of the core, old (HEAD
 * 2b82560, kept here only for comparison) against new (the library's
 * tern_csum_partial / tern_csum_copy; "sse2" the same with the AVX2 long
 * sums turned off; and the portable C versions other targets run), at the
 * sizes the stack sees: 64 and 96 bytes (an echo segment's payload, and its
 * TCP header + payload), 256 and 512 (where the long-sum code starts), 1448
 * (a full segment), 9000 (jumbo) and 65536 (a TSO/LRO frame).
 *
 *   csum-bench            ns per byte and per call (best of several runs:
 *                         the machine is shared, the minimum is the figure)
 *   csum-bench --ir       instructions per call and per byte, counted by
 *                         running itself under callgrind with N and 2N calls
 *                         (load-independent: the figure to compare)
 *   csum-bench --only IMPL FN SIZE --calls N   what --ir runs
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tern.h"
#include "util.h"

/* ---- the old code, as it was (only the names changed) ---- */

/* Little-endian loads (ld32le, ld64le) come from util.h, as in the core. */

/* Ones'-complement addition of 64-bit words (end-around carry). gcc and
 * clang compile `a += w; c += a < w` to add + adc, so the bulk loop costs
 * two instructions per 8 bytes. */
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

/* Finish a little-endian 64-bit sum: to network order, plus the caller's
 * running sum, folded to 16 bits. Rotating a ones'-complement sum by 8 bits
 * swaps the bytes of its 16-bit fold (it multiplies by 2^8, and
 * 2^8 * 2^8 = 1 modulo 0xffff), so the swap is one rotate. Nonzero sums
 * stay nonzero (0xffff, never 0), as RFC 1071 arithmetic wants. */
static inline uint32_t csum_finish(uint64_t acc, uint32_t sum)
{
    acc = add64((acc << 8) | (acc >> 56), sum);
    uint32_t lo = (uint32_t)acc, hi = (uint32_t)(acc >> 32);
    lo += hi;
    lo += lo < hi;
    lo = (lo & 0xffffu) + (lo >> 16);
    return (lo & 0xffffu) + (lo >> 16);
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

__attribute__((noinline)) static uint32_t old_csum_partial(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    uint64_t a[2] = {0, 0}, c[2] = {0, 0};
    /* 128 bytes a turn: gcc sets up each turn's carry counts with a few
     * extra instructions, so fewer turns cost less (~0.3 per byte). */
    for (; len >= 128; p += 128, len -= 128) {
        sum_block64(a, c, p);
        sum_block64(a, c, p + 64);
    }
    if (len >= 64) {
        sum_block64(a, c, p);
        p += 64;
        len -= 64;
    }
    for (; len >= 8; p += 8, len -= 8)
        chain_add(&a[0], &c[0], ld64le(p));
    a[1] = add64(a[1], tail_le(p, len));
    /* the carry counts are far below 2^63: their sum cannot wrap */
    return csum_finish(add64(add64(a[0], a[1]), c[0] + c[1]), sum);
}

/* Copy len bytes and return their partial sum (as old_csum_partial):
 * the sum rides on the loads of the copy. */
__attribute__((noinline)) static uint32_t old_csum_copy(void *dst, const void *src, size_t len, uint32_t sum)
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


/* ---- the benchmark ---- */

static const size_t sizes[] = {64, 96, 256, 512, 1448, 9000, 65536};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

typedef struct impl {
    const char *name;
    uint32_t (*sum)(const void *, size_t, uint32_t);
    uint32_t (*copy)(void *, const void *, size_t, uint32_t);
    bool avx2;          /* the library's long sums may take AVX2 */
} impl;

/* Nothing at all: what the benchmark loop costs by itself. */
__attribute__((noinline)) static uint32_t null_sum(const void *data, size_t len,
                                                   uint32_t sum)
{
    (void)data;
    return sum + (uint32_t)len;
}

__attribute__((noinline)) static uint32_t null_copy(void *dst, const void *src,
                                                    size_t len, uint32_t sum)
{
    (void)dst;
    (void)src;
    return sum + (uint32_t)len;
}

static const impl null_impl = {"null", null_sum, null_copy, false};

/* "new" takes AVX2 for long sums where the CPU has it, "sse2" is the same
 * library code with AVX2 turned off (what other x86-64 CPUs run). */
static const impl impls[] = {
    {"old", old_csum_partial, old_csum_copy, false},
    {"new", tern_csum_partial, tern_csum_copy, true},
    {"sse2", tern_csum_partial, tern_csum_copy, false},
    {"portable", tern_csum_partial_c, tern_csum_copy_c, false},
};
#define N_IMPLS (sizeof impls / sizeof impls[0])

static uint8_t src_buf[65536 + 64], dst_buf[65536 + 64];
static volatile uint32_t sink;

/* n calls of one function on one size; the data stays in cache, as in the
 * stack, where the sum follows the copy that brought the bytes in. */
static void run_calls(const impl *im, int copy, size_t size, long n)
{
    uint32_t acc = 0;
    tern_csum_avx2(im->avx2);
    for (long i = 0; i < n; i++)
        acc += copy ? im->copy(dst_buf, src_buf, size, acc)
                    : im->sum(src_buf, size, acc);
    sink = acc;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Best of 9 runs of ~2 ms each, in ns per call. */
static double best_ns_per_call(const impl *im, int copy, size_t size)
{
    long n = (long)(2000000 / (size + 32)) + 1;
    double best = 1e30;
    run_calls(im, copy, size, n);
    for (int r = 0; r < 9; r++) {
        double t0 = now_ns();
        run_calls(im, copy, size, n);
        double t = (now_ns() - t0) / (double)n;
        if (t < best)
            best = t;
    }
    return best;
}

static const impl *impl_named(const char *name)
{
    if (!strcmp(name, null_impl.name))
        return &null_impl;
    for (size_t i = 0; i < N_IMPLS; i++)
        if (!strcmp(impls[i].name, name))
            return &impls[i];
    return NULL;
}

/* Instructions of `calls` calls: the "Collected" total of a callgrind run
 * of this program doing just that. */
static long long collected(const char *self, const char *im, const char *fn,
                           size_t size, long calls)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "valgrind --tool=callgrind --callgrind-out-file=/dev/null "
             "'%s' --only %s %s %zu --calls %ld 2>&1",
             self, im, fn, size, calls);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[512];
    long long ir = -1;
    while (fgets(line, sizeof line, p)) {
        char *c = strstr(line, "Collected : ");
        if (c)
            ir = atoll(c + 12);
    }
    pclose(p);
    return ir;
}

/* Instructions per call: the difference of runs with n and 2n calls
 * (start-up and exit cancel out). */
static double ir_per_call(const char *self, const char *im, const char *fn,
                          size_t size)
{
    long n = size > 4096 ? 1000 : 10000;
    long long a = collected(self, im, fn, size, n);
    long long b = collected(self, im, fn, size, 2 * n);
    if (a < 0 || b < 0)
        return -1e9;
    return (double)(b - a) / (double)n;
}

static int check_agree(void)
{
    for (size_t s = 0; s < N_SIZES; s++) {
        uint32_t want = old_csum_partial(src_buf + 1, sizes[s], 0x1234);
        for (size_t i = 1; i < N_IMPLS; i++) {
            tern_csum_avx2(impls[i].avx2);
            if (impls[i].sum(src_buf + 1, sizes[s], 0x1234) != want ||
                impls[i].copy(dst_buf, src_buf + 1, sizes[s], 0x1234) != want) {
                fprintf(stderr, "csum-bench: %s disagrees at %zu bytes\n",
                        impls[i].name, sizes[s]);
                return 0;
            }
        }
    }
    return 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: csum-bench [--ir] | --only old|new|sse2|portable "
                    "sum|copy SIZE --calls N\n");
    return 2;
}

int main(int argc, char **argv)
{
    srand(1);
    for (size_t i = 0; i < sizeof src_buf; i++)
        src_buf[i] = (uint8_t)rand();
    if (argc == 7 && !strcmp(argv[1], "--only") && !strcmp(argv[5], "--calls")) {
        const impl *im = impl_named(argv[2]);
        if (!im)
            return usage();
        run_calls(im, !strcmp(argv[3], "copy"), (size_t)atol(argv[4]),
                  atol(argv[6]));
        return 0;
    }
    int ir = argc == 2 && !strcmp(argv[1], "--ir");
    if (argc > 1 && !ir)
        return usage();
    if (!check_agree())
        return 1;
    for (int copy = 0; copy < 2; copy++) {
        printf("%s\n%8s", copy ? "tern_csum_copy (copy + sum)"
                                : "tern_csum_partial (sum)", "bytes");
        for (size_t i = 0; i < N_IMPLS; i++)
            printf(ir ? " %10s/call %6s/B" : " %9s ns/call %6s ns/B",
                   impls[i].name, "");
        printf("\n");
        for (size_t s = 0; s < N_SIZES; s++) {
            printf("%8zu", sizes[s]);
            for (size_t i = 0; i < N_IMPLS; i++) {
                double per_call;
                if (ir) {
                    const char *fn = copy ? "copy" : "sum";
                    per_call = ir_per_call(argv[0], impls[i].name, fn, sizes[s]) -
                               ir_per_call(argv[0], "null", fn, sizes[s]);
                    if (per_call < 0) {
                        fprintf(stderr, "csum-bench: valgrind failed\n");
                        return 1;
                    }
                } else {
                    per_call = best_ns_per_call(&impls[i], copy, sizes[s]);
                }
                printf(ir ? " %15.1f %8.3f" : " %17.2f %9.4f", per_call,
                       per_call / (double)sizes[s]);
            }
            printf("\n");
        }
    }
    if (ir)
        printf("(Ir per call without the benchmark loop's own: a call of an "
               "empty function subtracted)\n");
    return 0;
}
