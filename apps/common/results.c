/* results.c - shared result printing (see results.h). */
#include "results.h"

void report_rr(report *r, const rr_total *t)
{
    double secs = t->t_last > t->t_first
                      ? (double)(t->t_last - t->t_first) / 1e9 : 0.0;
    rep_u64(r, "requests", t->completed);
    rep_f(r, "duration_s", secs, 3);
    rep_f(r, "rps", secs > 0 ? (double)t->completed / secs : 0.0, 0);
    rep_f(r, "p50_us", (double)hist_percentile(&t->h, 50) / 1e3, 2);
    rep_f(r, "p99_us", (double)hist_percentile(&t->h, 99) / 1e3, 2);
    rep_f(r, "p999_us", (double)hist_percentile(&t->h, 99.9) / 1e3, 2);
    rep_f(r, "mean_us", hist_mean(&t->h) / 1e3, 2);
    rep_f(r, "max_us", t->h.count ? (double)t->h.max / 1e3 : 0.0, 2);
}

void report_counters(report *r, const char *key, const tern_counters *c)
{
    rep_obj_begin(r, key);
#define REP_NONZERO_(n) if (c->n) rep_u64(r, #n, c->n);
    TERN_COUNTERS(REP_NONZERO_)
#undef REP_NONZERO_
    rep_obj_end(r);
}

double line_rate_payload(double link_bps, unsigned mtu, bool timestamps)
{
    double mss = (double)mtu - 40 - (timestamps ? 12 : 0);
    return link_bps * mss / ((double)mtu + 38);
}
