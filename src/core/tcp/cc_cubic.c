/* cc_cubic.c - CUBIC (RFC 9438) in integer arithmetic, counted in bytes.
 * beta = 0.7, C = 0.4; time in 2^-10 s units; fast convergence; the
 * Reno-friendly region (cwnd = W_est, which grows by alpha = 3 (1 - beta)
 * / (1 + beta), 1 once back at cwnd_prior); the target is
 * clamped to [cwnd, 1.5 cwnd] per RTT. */
#include "cc.h"

#define BETA_NUM 717            /* 0.7 * 1024 */
#define FC_NUM 870              /* (1 + beta) / 2 * 1024 */
#define ALPHA_NUM 542           /* 0.5294 * 1024 */
#define C_NUM 410               /* 0.4 * 1024 */
#define T_UNIT_NS 976562u       /* 2^-10 s */

static uint64_t icbrt(uint64_t x)
{
    uint64_t r = 0;
    for (int s = 63; s >= 0; s -= 3) {
        r <<= 1;
        uint64_t b = 3 * r * (r + 1) + 1;
        if ((x >> s) >= b) {
            x -= b << s;
            r++;
        }
    }
    return r;
}

static void cubic_init(struct tern_conn *c)
{
    cc_initial_window(c);
    c->cc.w_max = 0;
    c->cc.k = 0;
    c->cc.epoch = 0;
    c->cc.w_est = 0;
    c->cc.cwnd_prior = 0;
}

/* Start an avoidance epoch: K from the distance to w_max. */
static void epoch_start(struct tern_conn *c, uint64_t now)
{
    c->cc.epoch = now ? now : 1;
    c->cc.acc = 0;
    c->cc.w_est = (uint64_t)c->cwnd << 10;
    if (c->cwnd >= c->cc.w_max) {
        c->cc.k = 0;
        c->cc.w_max = c->cwnd;
        return;
    }
    /* K = cbrt((w_max - cwnd) / (C * mss)) s; in 2^-10 s:
     * cbrt(segs / 0.4 * 2^30) */
    uint64_t segs_q10 = ((uint64_t)(c->cc.w_max - c->cwnd) << 10) / c->mss;
    if (segs_q10 > (1ull << 33))
        segs_q10 = 1ull << 33;
    c->cc.k = (uint32_t)icbrt((segs_q10 << 30) / C_NUM);
}

/* W_cubic(t) in bytes, t in 2^-10 s since the epoch. */
static uint64_t w_cubic(const struct tern_conn *c, uint64_t t)
{
    int64_t d = (int64_t)t - (int64_t)c->cc.k;
    uint64_t m = (uint64_t)(d < 0 ? -d : d);
    if (m > (1u << 15))
        m = 1u << 15;
    /* 0.4 * m^3 / 2^30 segments, in 2^-20 segments to keep precision */
    uint64_t segs_q20 = (C_NUM * m * m * m) >> 20;
    uint64_t bytes = (segs_q20 * c->mss) >> 20;
    if (d < 0)
        return bytes >= c->cc.w_max ? 0 : c->cc.w_max - bytes;
    return c->cc.w_max + bytes;
}

static void cubic_on_ack(struct tern_conn *c, uint32_t acked, uint32_t rtt_us,
                         uint64_t now)
{
    if (c->cwnd < c->ssthresh) {
        acked = cc_slow_start(c, acked);
        if (!acked)
            return;
    }
    if (!c->cc.epoch)
        epoch_start(c, now);
    uint64_t t = (now - c->cc.epoch) / T_UNIT_NS +
                 ((uint64_t)(rtt_us ? rtt_us : c->srtt_us) * 1024) / 1000000;
    uint64_t target = w_cubic(c, t);
    uint64_t cw = c->cwnd;
    if (target < cw)
        target = cw;
    else if (target > cw + (cw >> 1))
        target = cw + (cw >> 1);
    /* Reno-friendly estimate (RFC 9438 4.3): alpha = 3 (1 - beta) /
     * (1 + beta) while W_est is below cwnd_prior, then 1, Reno's rate */
    uint64_t alpha = (c->cc.w_est >> 10) >= c->cc.cwnd_prior ? 1024
                                                             : ALPHA_NUM;
    c->cc.w_est += ((uint64_t)acked * c->mss * alpha) / cw;
    uint64_t est = c->cc.w_est >> 10;
    if (est > target) {
        /* Reno-friendly region: cwnd is W_est (RFC 9438 4.3), not a
         * step towards it a round behind */
        c->cwnd = (uint32_t)(est > CC_CWND_MAX ? CC_CWND_MAX : est);
        c->cc.acc = 0;
        return;
    }
    uint64_t grow = ((target - cw) * acked << 10) / cw;
    grow += c->cc.acc;
    c->cc.acc = (uint32_t)(grow & 1023);
    uint64_t ncw = cw + (grow >> 10);
    c->cwnd = (uint32_t)(ncw > CC_CWND_MAX ? CC_CWND_MAX : ncw);
}

/* From cwnd, as Linux does and RFC 9438 4.6 allows when cwnd cannot grow
 * beyond what is used (cwnd_limited gates growth): FlightSize at the moment
 * a loss shows can be half of it, since the ACKs of the same burst are
 * processed before the flight is refilled, and ssthresh would then sink
 * to its 2-segment floor one loss after another. */
static void cubic_reduce(struct tern_conn *c)
{
    uint32_t w = c->cwnd;
    c->cc.cwnd_prior = w;
    /* fast convergence (RFC 9438 4.7) */
    if (w < c->cc.w_max)
        c->cc.w_max = (uint32_t)(((uint64_t)w * FC_NUM) >> 10);
    else
        c->cc.w_max = w;
    uint32_t ss = (uint32_t)(((uint64_t)w * BETA_NUM) >> 10);
    c->ssthresh = ss > 2u * c->mss ? ss : 2u * c->mss;
    c->cc.epoch = 0;
}

static void cubic_on_loss(struct tern_conn *c, uint64_t now)
{
    (void)now;
    cubic_reduce(c);
}

static void cubic_on_rto(struct tern_conn *c, uint64_t now)
{
    (void)now;
    cubic_reduce(c);
    c->cwnd = c->mss;
}

const tcp_cc_ops tcp_cc_cubic = {
    .name = "cubic", .init = cubic_init, .on_ack = cubic_on_ack,
    .on_loss = cubic_on_loss, .on_rto = cubic_on_rto,
};
