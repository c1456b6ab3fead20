/* speed.h - how much of its core the host gives a thread, measured from
 * inside the thread.
 *
 * A virtual machine's vCPU may share a physical core with another
 * tenant's busy hyperthread, or be clocked down; the guest sees no steal
 * time for either, and a benchmark's figure then swings with the
 * neighbour (on our 2-vCPU KVM guest, by a factor of two). So each
 * runtime core times a short fixed chain of dependent adds (the probe:
 * one add per cycle on any out-of-order core, so its rate in adds per
 * ns is the core's effective clock in GHz) every window of SPEED_WINDOW_NS,
 * and notes the application's work done in that window. At the end, the
 * windows whose probes both ran at 90% or more of the fastest probe seen
 * give the rate the program reaches when the core is its own, beside the
 * rate over the whole run. Neither replaces the other: a report gives
 * both, and the share of time at full speed.
 *
 * The probe costs ~3 us per 10 ms window (0.03%). A window also lasts at
 * least SPEED_MIN_TURNS loop turns: under valgrind, where the loop runs
 * ~50x slower, 10 ms would put a probe (~33,000 instructions) every few
 * hundred round trips and count it in the stack's instructions; 4,096
 * turns make it ~1 instruction per round trip there, and natively the
 * 10 ms come first (echo) or soon after (bulk: ~1,000 turns per 10 ms).
 */
#ifndef TERN_RT_SPEED_H
#define TERN_RT_SPEED_H

#include <stdbool.h>
#include <stdint.h>

#define SPEED_WINDOW_NS 10000000ull   /* 10 ms */
#define SPEED_MIN_TURNS 4096u
#define SPEED_PROBE_ADDS 8192u
#define SPEED_BIN_MHZ 25u
#define SPEED_BINS 256u               /* 0 .. 6.4 GHz; faster lands in the last */
#define SPEED_FULL_PCT 90u            /* "full speed": >= 90% of the best */

/* Per core: the windows so far, binned by the slower of their two
 * probes. */
typedef struct speed_stats {
    uint64_t ns[SPEED_BINS];          /* window time per bin */
    uint64_t work[SPEED_BINS];        /* application work per bin */
    uint64_t best_mhz;                /* fastest probe */
    uint64_t windows;
    /* the open window */
    uint64_t next_ns;                 /* when it closes (0: not started) */
    uint64_t start_ns, start_work;
    uint64_t start_mhz;               /* its opening probe */
    uint64_t start_turns;             /* the loop's turns when it opened */
} speed_stats;

typedef struct speed_summary {
    double best_ghz;                  /* fastest probe */
    double median_ghz;                /* time-weighted median of windows */
    double full_share;                /* of the time, in full-speed windows */
    double full_s, all_s;             /* seconds in full windows, in all */
    double rate_full;                 /* work per second in full windows */
    double rate_all;                  /* work per second over all windows */
    /* Core cycles per unit of work in the full windows (each window's time
     * times its probe's clock): the host's clock taken out. 0 when there
     * is no full window or no work in one. */
    double cycles_per_work;
} speed_summary;

/* Time the probe once: its rate in MHz (adds per microsecond). */
uint64_t speed_probe_mhz(void);

/* Open the first window at now, with the work done so far and the loop's
 * turn count. */
void speed_start(speed_stats *s, uint64_t now, uint64_t work, uint64_t turns);
/* Whether the open window is due to close (cheap: for every loop turn). */
static inline bool speed_due(const speed_stats *s, uint64_t now,
                             uint64_t turns)
{
    return s->next_ns && now >= s->next_ns &&
           turns - s->start_turns >= SPEED_MIN_TURNS;
}
/* Close the open window at now with a fresh probe of mhz, and open the
 * next. Split from speed_tick so tests can feed chosen speeds. */
void speed_window(speed_stats *s, uint64_t now, uint64_t work, uint64_t mhz);
/* speed_window with a probe run now, at the loop's turn count. */
void speed_tick(speed_stats *s, uint64_t now, uint64_t work, uint64_t turns);

/* Summary of one or more cores' stats (rates summed over the cores, the
 * full share that of the core with the least). */
void speed_summarize(const speed_stats *const *s, unsigned n,
                     speed_summary *out);

#endif
