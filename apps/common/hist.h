/* hist.h - log-linear latency histogram (HdrHistogram-like, ~3% precision).
 *
 * Values below 32 have a bucket each; above, every power of two is split
 * into 32 linear sub-buckets.
 *
 * Recording is run-length: hist_add keeps the last value and how many times
 * in a row it came (`run_v`, `run_n`), and only a different value puts that
 * run into the buckets (a clz, a shift, a few adds). The load generators
 * stamp and complete requests with the loop's clock, so every request
 * completed in one loop iteration and issued in the same earlier one has the
 * same latency: most hist_add calls are one compare and one increment. The
 * figures are exactly those of adding each value on its own; the readers
 * below count the pending run. */
#ifndef APPS_HIST_H
#define APPS_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

typedef struct hist {
    uint64_t count;          /* values in b[] (the run not included) */
    uint64_t sum;
    uint64_t min, max;
    uint64_t run_v, run_n;   /* last value added, repeats not yet in b[] */
    uint64_t b[HIST_BUCKETS];
} hist;

static inline unsigned hist_index(uint64_t v)
{
    if (v < HIST_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);   /* >= HIST_SUB_BITS */
    unsigned shift = e - HIST_SUB_BITS;
    return (shift + 1) * HIST_SUB + (unsigned)((v >> shift) - HIST_SUB);
}

/* Record n values v in the buckets and totals (n may be 0). */
static inline void hist_add_n(hist *h, uint64_t v, uint64_t n)
{
    if (!n)
        return;
    h->b[hist_index(v)] += n;
    h->count += n;
    h->sum += v * n;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

/* Out of line: the common case (the same value again) stays small inline
 * and keeps the caller's registers. */
void hist_add_run_(hist *h, uint64_t v);
/* Put the pending run into the buckets and start an empty run of v: the
 * next value v is then one increment of run_n. */
void hist_new_run(hist *h, uint64_t v);

static inline void hist_add(hist *h, uint64_t v)
{
    if (v == h->run_v)
        h->run_n++;
    else
        hist_add_run_(h, v);
}

void hist_init(hist *h);
/* Put the pending run into the buckets (readers do it on a copy). */
void hist_flush(hist *h);
/* dst += src, src's pending run included. */
void hist_merge(hist *dst, const hist *src);
/* Value at percentile p (0..100): the midpoint of the bucket holding it,
 * clamped to [min, max]. 0 when empty. */
uint64_t hist_percentile(const hist *h, double p);
double hist_mean(const hist *h);
/* Values recorded, the pending run included. */
uint64_t hist_count(const hist *h);

#endif
