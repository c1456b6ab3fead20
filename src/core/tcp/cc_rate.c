/* cc_rate.c - delivery rate estimation for model-based congestion control
 * (draft-cheng-iccrg-delivery-rate-estimation), one checkpoint per output
 * pass (see cc.h). The delivered count is derived, not accumulated:
 * snd_una - base + SACKed bytes, which rises by exactly what each ACK
 * delivers (a SACKed range later covered by the cumulative ACK moves from
 * one term to the other), so ACKs that reach no hook (the inline
 * whole-flight ACK of a request/response flow) lose nothing. */
#include "cc.h"

static uint32_t delivered_now(const tcp_rate *r, const struct tern_conn *c)
{
    return c->snd_una - r->base + c->sacked;
}

void rate_init(tcp_rate *r)
{
    tern_memset(r, 0, sizeof *r);
}

void rate_on_sent(tcp_rate *r, const struct tern_conn *c, uint64_t now)
{
    if (!r->on) {               /* the first data: the count starts */
        r->on = 1;
        r->base = c->snd_una;
        r->last_end = c->snd_una;
    }
    if (!seq_gt(c->snd_max, r->last_end))
        return;
    /* draft 3.2: sending into an empty pipe starts a fresh interval; the
     * pipe was empty when all that was sent before this pass (up to the
     * last checkpoint: lone segments leave none) had been delivered */
    if (!r->n && seq_le(r->last_end, c->snd_una)) {
        r->first_sent_ns = now;
        r->delivered_ns = now;
    }
    uint32_t flight = c->snd_max - c->snd_una;
    /* draft 3.4: application-limited when everything queued has left and
     * the window had room for more */
    if (c->sq_end == c->snd_nxt && flight < c->cwnd) {
        uint32_t mark = delivered_now(r, c) + flight;
        r->app_limited = mark ? mark : 1;
    }
    if (r->n == RATE_CPS)           /* full: the newest checkpoint grows */
        r->n--;
    rate_cp *p = &r->cp[(r->head + r->n) & (RATE_CPS - 1)];
    r->n++;
    p->end = c->snd_max;
    p->delivered = r->delivered;
    p->delivered_ns = r->delivered_ns;
    p->first_sent_ns = r->first_sent_ns;
    p->sent_ns = now;
    p->app_limited = r->app_limited;
    r->last_end = c->snd_max;
}

/* Has the byte before `end` been delivered: cumulatively or SACKed. */
static bool cp_delivered(const struct tern_conn *c, uint32_t end)
{
    if (seq_le(end, c->snd_una))
        return true;
    return c->nsb && sb_skip(c, end - 1) != end - 1;
}

void rate_on_ack(tcp_rate *r, const struct tern_conn *c, uint64_t now,
                 rate_sample *rs)
{
    uint32_t d = delivered_now(r, c);
    rs->interval_ns = 0;
    rs->acked = d - r->delivered;
    if (!r->on || (int32_t)rs->acked <= 0) {
        rs->acked = 0;
        return;
    }
    r->delivered = d;
    r->delivered_ns = now;
    if (r->app_limited && seq_gt(d, r->app_limited))
        r->app_limited = 0;
    /* the newest delivered checkpoint; it and all before it are done */
    int hit = -1;
    for (uint32_t i = 0; i < r->n; i++)
        if (cp_delivered(c, r->cp[(r->head + i) & (RATE_CPS - 1)].end))
            hit = (int)i;
    if (hit < 0)
        return;
    const rate_cp *p = &r->cp[(r->head + (uint32_t)hit) & (RATE_CPS - 1)];
    r->head = (uint8_t)((r->head + (uint32_t)hit + 1) & (RATE_CPS - 1));
    r->n = (uint8_t)(r->n - (uint32_t)hit - 1);
    r->first_sent_ns = p->sent_ns;
    uint64_t snd = p->sent_ns - p->first_sent_ns;
    uint64_t ack = now - p->delivered_ns;
    rs->interval_ns = snd > ack ? snd : ack;
    rs->delivered = d - p->delivered;
    rs->prior_delivered = p->delivered;
    rs->rtt_ns = now - p->sent_ns;
    rs->app_limited = p->app_limited != 0;
}
