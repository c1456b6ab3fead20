/* bulk.c - transport-independent bulk stream accounting (see bulk.h). */
#include "bulk.h"

#include <string.h>

#include "clock.h"
#include "pattern.h"
#include "results.h"

void bulk_rx_init(bulk_rx *r, int verify)
{
    memset(r, 0, sizeof *r);
    r->verify = verify;
    if (verify == VERIFY_HASH)
        sha256_init(&r->hash);
}

void bulk_rx_data(bulk_rx *r, const uint8_t *d, size_t n, uint64_t now)
{
    if (!r->t_first)
        r->t_first = now;
    if (r->verify == VERIFY_PATTERN && !r->bad)
        bulk_rx_check(r, d, n);
    else if (r->verify == VERIFY_HASH)
        sha256_update(&r->hash, d, n);
    r->bytes += n;
    r->t_last = now;
}

void bulk_rx_end(bulk_rx *r, uint64_t now)
{
    if (!r->t_first)
        r->t_first = now;
    r->t_last = now;
    r->ended = true;
}

void bulk_total_init(bulk_total *t)
{
    memset(t, 0, sizeof *t);
    t->all_ok = true;
}

static void digest_add(uint64_t acc[4], const uint8_t d[32])
{
    for (int w = 0; w < 4; w++) {
        uint64_t v;
        memcpy(&v, d + 8 * w, 8);
        acc[w] += v;
    }
}

void bulk_total_add(bulk_total *t, bulk_rx *r)
{
    t->bytes += r->bytes;
    t->streams++;
    t->ended += r->ended;
    if (r->t_first && (!t->t_first || r->t_first < t->t_first))
        t->t_first = r->t_first;
    if (r->t_last > t->t_last)
        t->t_last = r->t_last;
    if (r->bad || !r->ended) {
        t->all_ok = false;
        t->bad_streams += r->bad;
    }
    if (r->verify == VERIFY_HASH) {
        uint8_t d[32];
        sha256_final(&r->hash, d);
        if (t->nhash < 8)
            sha256_hex(d, t->hashes[t->nhash++]);
        digest_add(t->rx_digests, d);
        t->rx_hashed++;
    }
}

void bulk_total_sent(bulk_total *t, sha256 *h)
{
    uint8_t d[32];
    sha256_final(h, d);
    digest_add(t->tx_digests, d);
    t->tx_hashed++;
}

/* Every sent stream arrived whole with its digest (as a multiset). */
static bool hashes_match(const bulk_total *t)
{
    return t->tx_hashed && t->rx_hashed == t->tx_hashed && t->all_ok &&
           !memcmp(t->rx_digests, t->tx_digests, sizeof t->rx_digests);
}

uint64_t bulk_share(uint64_t bytes, uint64_t conns, uint64_t j)
{
    return bytes / conns + (j < bytes % conns);
}

static double total_secs(const bulk_total *t)
{
    return t->t_last > t->t_first ? (double)(t->t_last - t->t_first) / 1e9
                                  : 0.0;
}

bool bulk_report(report *r, const bulk_total *t, int verify, double link_bps,
                 unsigned mtu, bool timestamps)
{
    static const char *names[] = {"none", "pattern", "hash"};
    double secs = total_secs(t);
    double gbps = secs > 0 ? (double)t->bytes * 8 / secs / 1e9 : 0.0;
    rep_u64(r, "bytes", t->bytes);
    rep_u64(r, "streams", t->streams);
    rep_f(r, "duration_s", secs, 3);
    rep_f(r, "gbps", gbps, 3);
    if (link_bps > 0) {
        double lim = line_rate_payload(link_bps, mtu, timestamps) / 1e9;
        rep_f(r, "line_rate_gbps", lim, 3);
        rep_f(r, "line_rate_pct", lim > 0 ? 100 * gbps / lim : 0, 1);
    }
    rep_str(r, "verify", names[verify]);
    bool verified =
        (verify == VERIFY_PATTERN && t->all_ok && t->streams > 0) ||
        (verify == VERIFY_HASH && hashes_match(t));
    rep_bool(r, "verified", verified);
    if (verify == VERIFY_HASH && t->nhash) {
        char all[8 * 66] = "";
        for (unsigned i = 0; i < t->nhash; i++) {
            if (i)
                strcat(all, ",");
            strcat(all, t->hashes[i]);
        }
        rep_str(r, "sha256", all);
    }
    return verified;
}

void bulk_report_gen(report *r, const bulk_total *t, uint64_t gen_ns,
                     unsigned threads)
{
    double gen = (double)gen_ns / 1e9, secs = total_secs(t);
    rep_f(r, "gen_s", gen, 4);
    rep_f(r, "gen_pct", secs > 0 && threads ? 100 * gen / (secs * threads) : 0,
          1);
}

void bulk_fill_timed(uint8_t *dst, uint64_t off, size_t len, uint64_t *ns)
{
    uint64_t t0 = now_ns();
    pattern_fill(dst, off, len);
    *ns += now_ns() - t0;
}
