/* cc_newreno.c - RFC 5681 congestion control counted in bytes (RFC 3465
 * appropriate byte counting; in slow start an ACK counts up to 64 KiB,
 * see cc_slow_start). Recovery itself (RFC 6582 /
 * RFC 6675) lives in input_ack.c; this file only sizes the windows. */
#include "cc.h"

void cc_initial_window(struct tern_conn *c)
{
    /* RFC 6928: min(10 * MSS, max(2 * MSS, 14600)) */
    enum { IW_BYTES = 14600 };
    uint32_t mss = c->mss;
    uint32_t iw = IW_BYTES > 2 * mss ? IW_BYTES : 2 * mss;
    c->cwnd = iw < 10 * mss ? iw : 10 * mss;
    c->ssthresh = CC_SSTHRESH_INF;
    c->cc.acc = 0;
}

uint32_t cc_slow_start(struct tern_conn *c, uint32_t acked)
{
    uint32_t room = c->ssthresh - c->cwnd;    /* caller: cwnd < ssthresh */
    /* RFC 3465's limit of 2 SMSS per ACK would make slow start linear
     * behind a receiver that ACKs once per burst or aggregate (tern's
     * ack_stretch, Linux GRO): such an ACK counts whole, up to the 64 KiB
     * a stretch ACK may cover (as Linux counts stretch ACKs). */
    uint32_t lim = max_u32(2u * c->mss, TCP_ACK_STRETCH_MAX);
    uint32_t inc = acked < lim ? acked : lim;
    if (inc >= room) {
        c->cwnd = c->ssthresh;
        return acked - room;
    }
    if (c->cwnd + inc <= CC_CWND_MAX)
        c->cwnd += inc;
    return 0;
}

uint32_t cc_flight_base(const struct tern_conn *c)
{
    uint32_t flight = c->snd_max - c->snd_una;
    return flight && flight < c->cwnd ? flight : c->cwnd;
}

static void reno_init(struct tern_conn *c) { cc_initial_window(c); }

static void reno_on_ack(struct tern_conn *c, uint32_t acked, uint32_t rtt_us,
                        uint64_t now)
{
    (void)rtt_us;
    (void)now;
    if (c->cwnd < c->ssthresh) {
        acked = cc_slow_start(c, acked);
        if (!acked)
            return;
    }
    /* congestion avoidance: one SMSS per cwnd of bytes acked */
    c->cc.acc += acked;
    if (c->cc.acc >= c->cwnd) {
        c->cc.acc -= c->cwnd;
        if (c->cwnd + c->mss <= CC_CWND_MAX)
            c->cwnd += c->mss;
    }
}

static void reno_on_loss(struct tern_conn *c, uint64_t now)
{
    (void)now;
    uint32_t half = cc_flight_base(c) >> 1;
    c->ssthresh = half > 2u * c->mss ? half : 2u * c->mss;
    c->cc.acc = 0;
}

static void reno_on_rto(struct tern_conn *c, uint64_t now)
{
    reno_on_loss(c, now);
    c->cwnd = c->mss;
}

const tcp_cc_ops tcp_cc_newreno = {
    .name = "newreno", .init = reno_init, .on_ack = reno_on_ack,
    .on_loss = reno_on_loss, .on_rto = reno_on_rto,
};
