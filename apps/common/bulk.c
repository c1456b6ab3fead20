/* bulk.c - transport-independent bulk stream accounting (see bulk.h). */
#include "bulk.h"

#include <string.h>

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
    if (r->verify == VERIFY_HASH && t->nhash < 8) {
        uint8_t d[32];
        sha256_final(&r->hash, d);
        sha256_hex(d, t->hashes[t->nhash++]);
    }
}

uint64_t bulk_share(uint64_t bytes, uint64_t conns, uint64_t j)
{
    return bytes / conns + (j < bytes % conns);
}

void bulk_report(report *r, const bulk_total *t, int verify, double link_bps,
                 unsigned mtu, bool timestamps)
{
    static const char *names[] = {"none", "pattern", "hash"};
    double secs = t->t_last > t->t_first
                      ? (double)(t->t_last - t->t_first) / 1e9 : 0.0;
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
    rep_bool(r, "verified", verify == VERIFY_PATTERN && t->all_ok &&
                                t->streams > 0);
    if (verify == VERIFY_HASH && t->nhash) {
        char all[8 * 66] = "";
        for (unsigned i = 0; i < t->nhash; i++) {
            if (i)
                strcat(all, ",");
            strcat(all, t->hashes[i]);
        }
        rep_str(r, "sha256", all);
    }
}
