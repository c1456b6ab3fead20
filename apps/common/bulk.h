/* bulk.h - the receiving and sending ends of a bulk stream, independent of
 * the transport (tern callbacks or kernel sockets): verification by
 * pattern or SHA-256, per-stream accounting, and the shared report. */
#ifndef APPS_BULK_H
#define APPS_BULK_H

#include <stdbool.h>
#include <stdint.h>

#include "app_opts.h"
#include "pattern.h"
#include "report.h"
#include "sha256.h"

typedef struct bulk_rx {
    int verify;               /* VERIFY_* */
    uint64_t bytes;
    uint64_t t_first, t_last; /* first byte, end of stream */
    bool bad;                 /* a byte did not match the pattern */
    uint64_t bad_at;          /* stream offset of the first mismatch */
    bool ended;
    sha256 hash;
} bulk_rx;

void bulk_rx_init(bulk_rx *r, int verify);
/* n bytes of the stream arrived at time now. */
void bulk_rx_data(bulk_rx *r, const uint8_t *d, size_t n, uint64_t now);
/* Check n bytes at the stream's offset against the pattern; the first
 * mismatch is kept. */
static inline void bulk_rx_check(bulk_rx *r, const uint8_t *d, size_t n)
{
    size_t ok = pattern_check(d, r->bytes, n);
    if (ok != n) {
        r->bad = true;
        r->bad_at = r->bytes + ok;
    }
}
/* bulk_rx_data for a receiver that calls it per segment: the usual case
 * (pattern, all good so far, not the first bytes) without a call. */
static inline void bulk_rx_data_inline(bulk_rx *r, const uint8_t *d,
                                       size_t n, uint64_t now)
{
    if (r->verify != VERIFY_PATTERN || r->bad || !r->t_first) {
        bulk_rx_data(r, d, n, now);
        return;
    }
    bulk_rx_check(r, d, n);
    r->bytes += n;
    r->t_last = now;
}
void bulk_rx_end(bulk_rx *r, uint64_t now);

/* Sums over every stream of a run. */
typedef struct bulk_total {
    uint64_t bytes, streams, ended;
    uint64_t t_first, t_last;
    bool all_ok;              /* every stream matched (pattern mode) */
    uint64_t bad_streams;
    char hashes[8][65];       /* hex SHA-256 of the first 8 streams */
    unsigned nhash;
    /* --verify hash with both ends in one process: the received and the
     * sent streams' digests, summed word by word (order-independent) */
    uint64_t rx_digests[4], tx_digests[4];
    uint64_t rx_hashed, tx_hashed;
} bulk_total;

void bulk_total_init(bulk_total *t);
void bulk_total_add(bulk_total *t, bulk_rx *r);
/* A stream this process sent (finalizes h), so that bulk_report can say
 * whether what arrived hashes the same (--verify hash, both ends here). */
void bulk_total_sent(bulk_total *t, sha256 *h);

/* Stream j of `conns` carries this many of `bytes`. */
uint64_t bulk_share(uint64_t bytes, uint64_t conns, uint64_t j);

/* gbps, bytes, streams, duration_s, verify, verified, sha256, and the
 * line-rate limit when link_bps > 0. verified: pattern mode, every stream
 * matched; hash mode, the received streams' digests are the sent ones
 * (known only when bulk_total_sent was given them). Returns verified. */
bool bulk_report(report *r, const bulk_total *t, int verify, double link_bps,
                 unsigned mtu, bool timestamps);

/* The sender's cost of writing the payload: gen_s (seconds spent in the
 * generator, over all threads) and gen_pct (its share of the threads' time
 * over the run t timed). */
void bulk_report_gen(report *r, const bulk_total *t, uint64_t gen_ns,
                     unsigned threads);

/* The fill, timed: pattern_fill of len bytes at off, its nanoseconds added
 * to *ns. Called per buffer or batch, never per byte. */
void bulk_fill_timed(uint8_t *dst, uint64_t off, size_t len, uint64_t *ns);

#endif
