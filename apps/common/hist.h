/* hist.h - log-linear latency histogram (HdrHistogram-like, ~3% precision).
 *
 * Values below 32 have a bucket each; above, every power of two is split
 * into 32 linear sub-buckets. Recording is a clz, a shift and an increment:
 * cheap enough to run once per request in the hot path. */
#ifndef APPS_HIST_H
#define APPS_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

typedef struct hist {
    uint64_t count;
    uint64_t sum;
    uint64_t min, max;
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

static inline void hist_add(hist *h, uint64_t v)
{
    h->b[hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void hist_init(hist *h);
void hist_merge(hist *dst, const hist *src);
/* Value at percentile p (0..100): the midpoint of the bucket holding it,
 * clamped to [min, max]. 0 when empty. */
uint64_t hist_percentile(const hist *h, double p);
double hist_mean(const hist *h);

#endif
