/* rtt.c - RFC 6298 round-trip estimator in integer microseconds (shifts
 * only). Samples come from timestamp echoes (RFC 7323) or from one timed
 * segment at a time when timestamps are off (Karn: never a retransmitted
 * one). The RTO is clamped to [rto_min, rto_max]; backoff doubles it per
 * expiry and is cleared by the next valid sample. */
#include "tcp.h"

void rtt_init(tern_stack *st, struct tern_conn *c)
{
    c->srtt_us = 0;
    c->rttvar_us = 0;
    c->rto_ms = TL(st)->rto_init_ms;
    c->backoff = 0;
}

void rtt_sample(tern_stack *st, struct tern_conn *c, uint32_t r)
{
    struct tcp_layer *tl = TL(st);
    if (r == 0)
        r = 1;
    if (c->srtt_us == 0) {
        c->srtt_us = r;
        c->rttvar_us = r >> 1;
    } else {
        uint32_t delta = c->srtt_us > r ? c->srtt_us - r : r - c->srtt_us;
        c->rttvar_us = c->rttvar_us - (c->rttvar_us >> 2) + (delta >> 2);
        c->srtt_us = c->srtt_us - (c->srtt_us >> 3) + (r >> 3);
    }
    /* G (clock granularity) is 1 ms: our TSval tick */
    uint32_t var4 = c->rttvar_us << 2;
    uint64_t rto_us = (uint64_t)c->srtt_us + (var4 > 1000 ? var4 : 1000);
    uint64_t ms = (rto_us + 999) / 1000;
    if (ms < tl->rto_min_ms)
        ms = tl->rto_min_ms;
    if (ms > tl->rto_max_ms)
        ms = tl->rto_max_ms;
    c->rto_ms = (uint32_t)ms;
    c->backoff = 0;
}
