/* test_speed.c - the host speed windows (src/rt/speed.h).
 *
 *   probe_runs          the probe gives a rate above 0 and below 100 GHz;
 *                       a window is due after both 10 ms and 4,096 turns
 *   windows_by_slower   a window is binned by the slower of its probes;
 *                       its time and work land in that bin
 *   full_and_slow       windows at full speed, at half and straddling:
 *                       the rates at full speed and over all, the share,
 *                       the best speed and the cycles per unit of work
 *   no_work_backwards   a window whose work count went back (a reset) or
 *                       whose clock did not advance is not counted
 *   two_cores           rates add up over cores; the share and the full
 *                       time are the least core's
 *   fastest_bin         probes above the last bin land in it
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "speed.h"

#define MS 1000000ull

/* A core's stats opened at t = 0 with work 0 and an opening probe of
 * mhz (speed_start would run a real probe). */
static void open_at(speed_stats *s, uint64_t mhz)
{
    memset(s, 0, sizeof *s);
    s->start_mhz = s->best_mhz = mhz;
    s->next_ns = SPEED_WINDOW_NS;
}

static void probe_runs(void **state)
{
    (void)state;
    uint64_t mhz = speed_probe_mhz();
    assert_true(mhz > 0);
    assert_true(mhz < 100000);
    speed_stats s;
    speed_start(&s, 5 * MS, 7, 100);
    assert_int_equal(s.start_ns, 5 * MS);
    assert_int_equal(s.start_work, 7);
    assert_int_equal(s.next_ns, 15 * MS);
    assert_true(s.best_mhz > 0);
    assert_false(speed_due(&s, 14 * MS, 100 + SPEED_MIN_TURNS));
    /* due once both the time and the loop turns are there */
    assert_false(speed_due(&s, 15 * MS, 100 + SPEED_MIN_TURNS - 1));
    assert_true(speed_due(&s, 15 * MS, 100 + SPEED_MIN_TURNS));
    speed_tick(&s, 16 * MS, 9, 100 + SPEED_MIN_TURNS);
    assert_int_equal(s.windows, 1);
    assert_int_equal(s.start_turns, 100 + SPEED_MIN_TURNS);
    assert_int_equal(s.next_ns, 26 * MS);
    assert_false(speed_due(&s, 30 * MS, 100 + 2 * SPEED_MIN_TURNS - 1));
}

static void windows_by_slower(void **state)
{
    (void)state;
    speed_stats s;
    open_at(&s, 2500);
    speed_window(&s, 10 * MS, 1000, 1200);      /* slower: 1200 */
    assert_int_equal(s.windows, 1);
    assert_int_equal(s.ns[1200 / SPEED_BIN_MHZ], 10 * MS);
    assert_int_equal(s.work[1200 / SPEED_BIN_MHZ], 1000);
    assert_int_equal(s.best_mhz, 2500);
    speed_window(&s, 25 * MS, 4000, 2400);      /* slower: 1200 again */
    assert_int_equal(s.ns[1200 / SPEED_BIN_MHZ], 25 * MS);
    assert_int_equal(s.work[1200 / SPEED_BIN_MHZ], 4000);
    speed_window(&s, 30 * MS, 5000, 2450);      /* both fast: 2400 */
    assert_int_equal(s.ns[2400 / SPEED_BIN_MHZ], 5 * MS);
    assert_int_equal(s.work[2400 / SPEED_BIN_MHZ], 1000);
    assert_int_equal(s.next_ns, 40 * MS);
    assert_int_equal(s.windows, 3);
}

static void full_and_slow(void **state)
{
    (void)state;
    speed_stats s;
    open_at(&s, 2500);
    uint64_t t = 0, w = 0;
    /* 6 windows of 10 ms at full speed: 4000 work each (400,000/s) */
    for (int i = 0; i < 6; i++)
        speed_window(&s, t += 10 * MS, w += 4000, 2500);
    /* a straddling window (opened fast, closed slow) and 3 slow ones:
     * 2000 work each (200,000/s) */
    for (int i = 0; i < 4; i++)
        speed_window(&s, t += 10 * MS, w += 2000, 1250);
    const speed_stats *one[1] = {&s};
    speed_summary sum;
    speed_summarize(one, 1, &sum);
    assert_true(sum.best_ghz > 2.49 && sum.best_ghz < 2.51);
    assert_true(sum.full_s > 0.0599 && sum.full_s < 0.0601);
    assert_true(sum.all_s > 0.0999 && sum.all_s < 0.1001);
    assert_true(sum.full_share > 0.599 && sum.full_share < 0.601);
    assert_true(sum.rate_full > 399999 && sum.rate_full < 400001);
    assert_true(sum.rate_all > 319999 && sum.rate_all < 320001);
    /* 60 ms at the 2,500 MHz bin's middle clock over 24,000 units */
    assert_true(sum.cycles_per_work > 0.06e9 * 2.5125 / 24000 - 0.01);
    assert_true(sum.cycles_per_work < 0.06e9 * 2.5125 / 24000 + 0.01);
    /* the median window ran at full speed (6 of 10 in time) */
    assert_true(sum.median_ghz > 2.49 && sum.median_ghz < 2.53);
    /* 90% of the best is the bound: a window at 89% is not full */
    speed_window(&s, t += 10 * MS, w += 3000, 2225);
    speed_window(&s, t += 10 * MS, w += 3000, 2225);
    speed_summarize(one, 1, &sum);
    assert_true(sum.full_s > 0.0599 && sum.full_s < 0.0601);
    speed_window(&s, t += 10 * MS, w += 3000, 2250);   /* one at 2225 */
    speed_window(&s, t += 10 * MS, w += 3600, 2250);   /* 90%: full */
    speed_summarize(one, 1, &sum);
    assert_true(sum.full_s > 0.0699 && sum.full_s < 0.0701);
    assert_true(sum.rate_full > (24000.0 + 3600) / 0.07 - 1);
    assert_true(sum.rate_full < (24000.0 + 3600) / 0.07 + 1);
}

static void no_work_backwards(void **state)
{
    (void)state;
    speed_stats s;
    open_at(&s, 2000);
    speed_window(&s, 10 * MS, 100, 2000);
    speed_window(&s, 20 * MS, 50, 2000);        /* work went back */
    speed_window(&s, 20 * MS, 80, 2000);        /* no time passed */
    assert_int_equal(s.windows, 1);
    speed_window(&s, 30 * MS, 180, 2000);       /* from 80 on */
    assert_int_equal(s.windows, 2);
    assert_int_equal(s.work[2000 / SPEED_BIN_MHZ], 200);
    assert_int_equal(s.ns[2000 / SPEED_BIN_MHZ], 20 * MS);
}

static void two_cores(void **state)
{
    (void)state;
    speed_stats a, b;
    open_at(&a, 2500);
    open_at(&b, 2500);
    for (uint64_t i = 1; i <= 10; i++) {
        speed_window(&a, i * 10 * MS, i * 1000, 2500);          /* all full */
        speed_window(&b, i * 10 * MS, i * 500, i <= 5 ? 2500 : 1000);
    }
    const speed_stats *both[2] = {&a, &b};
    speed_summary sum;
    speed_summarize(both, 2, &sum);
    /* a: 100,000/s; b at full speed: 50,000/s */
    assert_true(sum.rate_full > 149999 && sum.rate_full < 150001);
    assert_true(sum.rate_all > 149999 && sum.rate_all < 150001);
    /* b's first 5 windows are full (the fifth closes with a full probe) */
    assert_true(sum.full_share > 0.499 && sum.full_share < 0.501);
    assert_true(sum.full_s > 0.0499 && sum.full_s < 0.0501);
    assert_true(sum.all_s > 0.0999 && sum.all_s < 0.1001);
    /* the slowest core's median: b, half slow; its bins split at 50% */
    assert_true(sum.median_ghz < 2.6);
}

static void fastest_bin(void **state)
{
    (void)state;
    speed_stats s;
    open_at(&s, 90000);
    speed_window(&s, 10 * MS, 10, 90000);
    assert_int_equal(s.ns[SPEED_BINS - 1], 10 * MS);
    assert_int_equal(s.best_mhz, 90000);
    const speed_stats *one[1] = {&s};
    speed_summary sum;
    speed_summarize(one, 1, &sum);
    assert_true(sum.full_s > 0.0099 && sum.full_s < 0.0101);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(probe_runs),
        cmocka_unit_test(windows_by_slower),
        cmocka_unit_test(full_and_slow),
        cmocka_unit_test(no_work_backwards),
        cmocka_unit_test(two_cores),
        cmocka_unit_test(fastest_bin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
