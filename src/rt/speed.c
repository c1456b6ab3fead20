/* speed.c - the host speed probe and its windows (speed.h). */
#include "speed.h"

#include <string.h>
#include <time.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* n dependent adds: the empty asm keeps x in a register and the loop a
 * loop (no vectorising, no closed form), so each turn waits for the
 * last add: one cycle. */
static __attribute__((noinline)) uint64_t add_chain(uint64_t n)
{
    uint64_t x = 0;
    for (uint64_t i = 0; i < n; i++) {
        x += i;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

uint64_t speed_probe_mhz(void)
{
    uint64_t t0 = mono_ns();
    volatile uint64_t sink = add_chain(SPEED_PROBE_ADDS);
    (void)sink;
    uint64_t ns = mono_ns() - t0;
    return ns ? (uint64_t)SPEED_PROBE_ADDS * 1000u / ns : 0;
}

void speed_start(speed_stats *s, uint64_t now, uint64_t work, uint64_t turns)
{
    memset(s, 0, sizeof *s);
    s->start_turns = turns;
    s->start_ns = now;
    s->start_work = work;
    s->start_mhz = speed_probe_mhz();
    s->best_mhz = s->start_mhz;
    s->next_ns = now + SPEED_WINDOW_NS;
}

void speed_window(speed_stats *s, uint64_t now, uint64_t work, uint64_t mhz)
{
    if (now > s->start_ns && work >= s->start_work) {
        uint64_t slower = mhz < s->start_mhz ? mhz : s->start_mhz;
        uint64_t bin = slower / SPEED_BIN_MHZ;
        if (bin >= SPEED_BINS)
            bin = SPEED_BINS - 1;
        s->ns[bin] += now - s->start_ns;
        s->work[bin] += work - s->start_work;
        s->windows++;
    }
    if (mhz > s->best_mhz)
        s->best_mhz = mhz;
    s->start_ns = now;
    s->start_work = work;
    s->start_mhz = mhz;
    s->next_ns = now + SPEED_WINDOW_NS;
}

void speed_tick(speed_stats *s, uint64_t now, uint64_t work, uint64_t turns)
{
    speed_window(s, now, work, speed_probe_mhz());
    s->start_turns = turns;
}

/* Seconds, work and time-weighted median speed of one core's windows; the
 * full ones are those in bins from `from` on. */
static void core_sums(const speed_stats *s, uint64_t from, double *full_s,
                      double *full_work, double *all_s, double *all_work,
                      double *median_mhz, double *full_cycles)
{
    uint64_t fns = 0, fw = 0, ans = 0, aw = 0;
    double cyc = 0;
    for (uint64_t b = 0; b < SPEED_BINS; b++) {
        ans += s->ns[b];
        aw += s->work[b];
        if (b >= from) {
            fns += s->ns[b];
            fw += s->work[b];
            /* ns x MHz / 1000: the bin's middle clock */
            cyc += (double)s->ns[b] * (((double)b + 0.5) * SPEED_BIN_MHZ) / 1000;
        }
    }
    *full_cycles = cyc;
    uint64_t half = ans / 2, seen = 0, b = 0;
    for (; b < SPEED_BINS && ans; b++) {
        seen += s->ns[b];
        if (seen > half)
            break;
    }
    *median_mhz = ans ? ((double)b + 0.5) * SPEED_BIN_MHZ : 0;
    *full_s = (double)fns / 1e9;
    *full_work = (double)fw;
    *all_s = (double)ans / 1e9;
    *all_work = (double)aw;
}

void speed_summarize(const speed_stats *const *s, unsigned n,
                     speed_summary *out)
{
    memset(out, 0, sizeof *out);
    uint64_t best = 0;
    for (unsigned i = 0; i < n; i++)
        if (s[i]->best_mhz > best)
            best = s[i]->best_mhz;
    out->best_ghz = (double)best / 1000;
    /* A window is full when its slower probe's bin starts at or above
     * SPEED_FULL_PCT of the best: bins are coarse, so round the bound up
     * to a bin's start rather than take a slower bin in. */
    uint64_t bound = best * SPEED_FULL_PCT / 100;
    uint64_t from = (bound + SPEED_BIN_MHZ - 1) / SPEED_BIN_MHZ;
    if (from >= SPEED_BINS)       /* beyond the bins: the last one is full */
        from = SPEED_BINS - 1;
    out->full_share = n ? 1.0 : 0.0;
    double cycles = 0, work = 0;
    for (unsigned i = 0; i < n; i++) {
        double fs, fw, as, aw, med, cyc;
        core_sums(s[i], from, &fs, &fw, &as, &aw, &med, &cyc);
        cycles += cyc;
        work += fw;
        if (fs > 0)
            out->rate_full += fw / fs;
        if (as > 0)
            out->rate_all += aw / as;
        double share = as > 0 ? fs / as : 0;
        if (share < out->full_share)
            out->full_share = share;
        if (i == 0 || fs < out->full_s)
            out->full_s = fs;
        if (as > out->all_s)
            out->all_s = as;
        if (i == 0 || med / 1000 < out->median_ghz)
            out->median_ghz = med / 1000;
    }
    out->cycles_per_work = work > 0 ? cycles / work : 0;
}
