/* hist.c - percentiles over the log-linear histogram (see hist.h). */
#include "hist.h"

#include <string.h>

void hist_init(hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

void hist_new_run(hist *h, uint64_t v)
{
    hist_add_n(h, h->run_v, h->run_n);
    h->run_v = v;
    h->run_n = 0;
}

void hist_add_run_(hist *h, uint64_t v)
{
    hist_new_run(h, v);
    h->run_n = 1;
}

void hist_flush(hist *h)
{
    hist_add_n(h, h->run_v, h->run_n);
    h->run_n = 0;
}

uint64_t hist_count(const hist *h) { return h->count + h->run_n; }

void hist_merge(hist *dst, const hist *src)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    hist_add_n(dst, src->run_v, src->run_n);
}

/* Lowest value and width of bucket i. */
static void bucket_range(unsigned i, uint64_t *lo, uint64_t *width)
{
    if (i < HIST_SUB) {
        *lo = i;
        *width = 1;
        return;
    }
    unsigned shift = i / HIST_SUB - 1;
    *lo = (uint64_t)(HIST_SUB + i % HIST_SUB) << shift;
    *width = (uint64_t)1 << shift;
}

uint64_t hist_percentile(const hist *h, double p)
{
    if (h->run_n) {
        hist settled = *h;
        hist_flush(&settled);
        return hist_percentile(&settled, p);
    }
    if (!h->count)
        return 0;
    /* Rank of the wanted sample, 1-based, rounded up (nearest-rank). */
    double r = p / 100.0 * (double)h->count;
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r)
        rank++;
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t lo, w;
            bucket_range(i, &lo, &w);
            uint64_t v = lo + w / 2;
            if (v < h->min)
                v = h->min;
            if (v > h->max)
                v = h->max;
            return v;
        }
    }
    return h->max;
}

double hist_mean(const hist *h)
{
    uint64_t n = hist_count(h);
    return n ? (double)(h->sum + h->run_v * h->run_n) / (double)n : 0.0;
}
