/* results.h - the figures every program prints, in one place so tern-* and
 * kern-* twins emit the same keys: request/response results, nonzero stack
 * counters, and the bulk line-rate limit. */
#ifndef APPS_RESULTS_H
#define APPS_RESULTS_H

#include "report.h"
#include "rr.h"
#include "tern.h"

/* requests, duration_s, rps, p50_us, p99_us, p999_us, mean_us, max_us. */
void report_rr(report *r, const rr_total *t);
/* "counters": {name: value} for every nonzero counter. */
void report_counters(report *r, const char *key, const tern_counters *c);
/* Payload bit/s a link of link_bps carries at this MTU: link x MSS /
 * (MTU + 38), MSS = MTU - 40 (- 12 with TCP timestamps). */
double line_rate_payload(double link_bps, unsigned mtu, bool timestamps);

#endif
