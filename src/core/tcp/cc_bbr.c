/* cc_bbr.c - a model-based congestion controller after BBR (version 1 of
 * draft-cardwell-iccrg-bbr-congestion-control): the bottleneck bandwidth
 * (the windowed maximum of the delivery rate, cc_rate.c) times the
 * minimum round trip is the path's BDP, and cwnd is a gain times that.
 * Random loss does not move the model, so it does not shrink the window
 * as a loss-based controller does.
 *
 * States: Startup (gain 2/ln 2 until the bandwidth stops growing by 25%
 * for three rounds), Drain (until the flight is down to one BDP),
 * ProbeBW (eight phases of one min RTT each, gains 1.25, 0.75, then 1),
 * ProbeRTT (every 10 s without a lower round trip: cwnd 4 segments for
 * 200 ms and a round).
 *
 * tern has no pacing: the gains act on cwnd (cwnd-only BBR). In ProbeBW
 * cwnd = (2 + pacing_gain - 1) BDP, so the 0.75 phase drains the queue
 * the 1.25 phase built. pacing_bps (gain times bandwidth) is kept for an
 * embedder's pacer.
 *
 * ACK aggregation (as Linux's BBR estimates it): ACKs that arrive in
 * bursts, because the peer, a scheduler or an interrupt batches them,
 * deliver more than bw times the elapsed time; the largest excess of the
 * last 5-10 rounds (at most 100 ms of bw) is added to cwnd once the pipe
 * is full, so the sender keeps data in flight through the gaps between
 * the bursts instead of stalling on a window of 2 BDP.
 *
 * One addition for heavy loss: a round that loses more than 20% of what
 * it delivers (retransmissions counted) no longer trusts the windowed
 * maximum: the filter restarts from that round's own samples, so a
 * policer or a shallow buffer is followed down instead of being flooded
 * at the old rate for ten rounds. Loss below that leaves the model as it
 * is. */
#include "cc.h"

#define GAIN_UNIT 256
#define HIGH_GAIN 739           /* 2/ln(2) = 2.885 */
#define DRAIN_GAIN 89           /* 1/2.885 */
#define CWND_GAIN 512           /* 2.0 in ProbeBW */
#define MIN_RTT_WIN_NS (10ull * TERN_NS_PER_SEC)
#define PROBE_RTT_NS (200ull * TERN_NS_PER_MS)
#define MIN_CWND_SEGS 4u
#define FULL_BW_GROWTH 320      /* 1.25 */
#define FULL_BW_ROUNDS 3
#define HEAVY_LOSS_DIV 5        /* lost > delivered / 5: 20% */

static const uint16_t cycle_gain[8] = {320, 192, 256, 256, 256, 256, 256, 256};

static void bbr_init(struct tern_conn *c)
{
    cc_initial_window(c);
}

static void bbr_attach(tern_stack *st, struct tern_conn *c)
{
    tcp_bbr *b = bbr_of(st, c);
    tern_memset(b, 0, sizeof *b);
    rate_init(&b->rate);
    b->min_rtt_us = UINT32_MAX;
    b->min_rtt_ns_at = st->now;
    b->mode = BBR_STARTUP;
}

static void bbr_on_sent(tern_stack *st, struct tern_conn *c)
{
    rate_on_sent(&bbr_of(st, c)->rate, c, st->now);
}

/* BDP in bytes at gain g (GAIN_UNIT = 1); 0 without a model yet. */
static uint64_t bdp(const tcp_bbr *b, uint32_t g)
{
    if (!b->max_bw || b->min_rtt_us == UINT32_MAX)
        return 0;
    return b->max_bw * b->min_rtt_us / 1000000u * g / GAIN_UNIT;
}

static uint32_t pacing_gain(const tcp_bbr *b)
{
    switch (b->mode) {
    case BBR_STARTUP: return HIGH_GAIN;
    case BBR_DRAIN: return DRAIN_GAIN;
    case BBR_PROBE_BW: return cycle_gain[b->cycle_idx];
    default: return GAIN_UNIT;
    }
}

static uint32_t cwnd_gain(const tcp_bbr *b)
{
    switch (b->mode) {
    case BBR_STARTUP:
    case BBR_DRAIN: return HIGH_GAIN;
    case BBR_PROBE_BW: return CWND_GAIN + cycle_gain[b->cycle_idx] - GAIN_UNIT;
    default: return GAIN_UNIT;
    }
}

/* A new round begins: its slot of the max filter starts empty, and the
 * round just ended is judged for heavy loss. */
static void round_begin(tcp_bbr *b, struct tern_conn *c)
{
    uint32_t delivered = b->rate.delivered - b->round_delivered;
    uint64_t lost = (uint64_t)(c->retransmits - b->round_rtx) * c->mss;
    uint64_t last = b->bw_win[b->round % BBR_BW_ROUNDS];
    bool heavy = delivered && last && lost * HEAVY_LOSS_DIV > delivered;
    b->round++;
    b->round_delivered = b->rate.delivered;
    b->round_rtx = c->retransmits;
    uint64_t m = 0;
    for (uint32_t i = 0; i < BBR_BW_ROUNDS; i++) {
        /* heavy loss: only the round just ended stays */
        if (heavy || i == b->round % BBR_BW_ROUNDS)
            b->bw_win[i] = 0;
        if (b->bw_win[i] > m)
            m = b->bw_win[i];
    }
    if (heavy) {
        b->bw_win[(b->round - 1) % BBR_BW_ROUNDS] = last;
        m = last;
    }
    /* rounds without a sample (idle, or only app-limited ones below the
     * estimate) keep it, as a running max filter does: only a measured
     * lower rate replaces it */
    if (m)
        b->max_bw = m;
}

static void update_bw(tcp_bbr *b, struct tern_conn *c, const rate_sample *rs)
{
    b->round_start = 0;
    if (!rs->interval_ns)
        return;
    if (seq_ge(rs->prior_delivered, b->next_round_delivered)) {
        b->next_round_delivered = b->rate.delivered;
        round_begin(b, c);
        b->round_start = 1;
    }
    /* draft: an interval shorter than the min RTT is ACK compression */
    if (b->min_rtt_us != UINT32_MAX &&
        rs->interval_ns < (uint64_t)b->min_rtt_us * 1000)
        return;
    uint64_t bw = (uint64_t)rs->delivered * TERN_NS_PER_SEC / rs->interval_ns;
    /* an app-limited sample only counts when it shows more than the model
     * has: it can raise the estimate, never lower it */
    if (rs->app_limited && bw < b->max_bw)
        return;
    uint64_t *slot = &b->bw_win[b->round % BBR_BW_ROUNDS];
    if (bw > *slot)
        *slot = bw;
    if (bw > b->max_bw)
        b->max_bw = bw;
}

/* The excess of delivered data over what the bandwidth estimate explains
 * since the aggregation epoch began. */
static void update_ack_aggregation(tcp_bbr *b, const struct tern_conn *c,
                                   uint64_t now, const rate_sample *rs)
{
    if (!rs->acked || !b->max_bw)
        return;
    if (b->round_start && ++b->agg_rounds >= BBR_AGG_ROUNDS) {
        b->agg_rounds = 0;
        b->agg_idx ^= 1;
        b->extra_acked[b->agg_idx] = 0;
    }
    uint64_t expected = b->max_bw * (now - b->ack_epoch_ns) / TERN_NS_PER_SEC;
    /* a new epoch once the ACKs fall behind the rate (or after 1 MiB) */
    if (b->ack_epoch_acked <= expected ||
        b->ack_epoch_acked + rs->acked >= (1u << 20)) {
        b->ack_epoch_acked = 0;
        b->ack_epoch_ns = now;
        expected = 0;
    }
    b->ack_epoch_acked += rs->acked;
    uint64_t extra = b->ack_epoch_acked - expected;
    if (extra > c->cwnd)
        extra = c->cwnd;
    if (extra > b->extra_acked[b->agg_idx])
        b->extra_acked[b->agg_idx] = (uint32_t)extra;
}

/* The aggregation allowance of cwnd: the larger window's excess, at most
 * 100 ms of bandwidth; only once the pipe is full. */
static uint64_t aggregation_cwnd(const tcp_bbr *b)
{
    if (!b->filled_pipe)
        return 0;
    uint64_t e = b->extra_acked[0] > b->extra_acked[1] ? b->extra_acked[0]
                                                       : b->extra_acked[1];
    uint64_t cap = b->max_bw / 10;
    return e < cap ? e : cap;
}

static void check_full_pipe(tcp_bbr *b, const rate_sample *rs)
{
    if (b->filled_pipe || !b->round_start || rs->app_limited)
        return;
    if (b->max_bw * GAIN_UNIT >= b->full_bw * FULL_BW_GROWTH) {
        b->full_bw = b->max_bw;
        b->full_bw_cnt = 0;
        return;
    }
    if (++b->full_bw_cnt >= FULL_BW_ROUNDS)
        b->filled_pipe = 1;
}

static void enter_probe_bw(tcp_bbr *b, uint64_t now)
{
    b->mode = BBR_PROBE_BW;
    /* start in a phase of gain 1, past the probe and the drain (the
     * draft starts at a random one of the six) */
    b->cycle_idx = 2;
    b->cycle_ns = now;
}

static void check_drain(tcp_bbr *b, struct tern_conn *c, uint64_t now)
{
    if (b->mode == BBR_STARTUP && b->filled_pipe)
        b->mode = BBR_DRAIN;
    if (b->mode == BBR_DRAIN &&
        c->snd_max - c->snd_una <= bdp(b, GAIN_UNIT))
        enter_probe_bw(b, now);
}

static void advance_cycle(tcp_bbr *b, struct tern_conn *c, uint64_t now,
                          const rate_sample *rs)
{
    if (b->mode != BBR_PROBE_BW)
        return;
    uint32_t g = cycle_gain[b->cycle_idx];
    uint64_t inflight = c->snd_max - c->snd_una;
    bool due = now - b->cycle_ns > (uint64_t)b->min_rtt_us * 1000;
    /* the probe lasts until the flight reached its gain (or a loss), the
     * drain until the flight is down to one BDP */
    if (g > GAIN_UNIT)
        due = due && (inflight >= bdp(b, g) || rs->acked == 0);
    else if (g < GAIN_UNIT)
        due = due || inflight <= bdp(b, GAIN_UNIT);
    if (due) {
        b->cycle_idx = (uint8_t)((b->cycle_idx + 1) & 7);
        b->cycle_ns = now;
    }
}

static void update_min_rtt(tcp_bbr *b, struct tern_conn *c, uint64_t now,
                           const rate_sample *rs)
{
    /* the 10 s window starts at the first sample, not at attach: a conn
     * opened before the stack's next poll saw a stale clock there */
    bool expired = b->min_rtt_us != UINT32_MAX &&
                   now - b->min_rtt_ns_at > MIN_RTT_WIN_NS;
    if (rs->interval_ns) {
        uint64_t us = rs->rtt_ns / 1000;
        uint32_t r = us ? (us < UINT32_MAX ? (uint32_t)us : UINT32_MAX - 1)
                        : 1;
        if (r < b->min_rtt_us || expired) {
            b->min_rtt_us = r;
            b->min_rtt_ns_at = now;
        }
    }
    uint32_t floor = MIN_CWND_SEGS * c->mss;
    if (expired && b->mode != BBR_PROBE_RTT) {
        b->mode = BBR_PROBE_RTT;
        b->prior_cwnd = c->cwnd;
        b->probe_rtt_done_ns = 0;
    }
    if (b->mode != BBR_PROBE_RTT)
        return;
    if (!b->probe_rtt_done_ns && c->snd_max - c->snd_una <= floor) {
        b->probe_rtt_done_ns = now + PROBE_RTT_NS;
        b->probe_rtt_round_done = 0;
        b->next_round_delivered = b->rate.delivered;
    } else if (b->probe_rtt_done_ns) {
        if (b->round_start)
            b->probe_rtt_round_done = 1;
        if (b->probe_rtt_round_done && now > b->probe_rtt_done_ns) {
            b->min_rtt_ns_at = now;
            if (c->cwnd < b->prior_cwnd)
                c->cwnd = b->prior_cwnd;
            if (b->filled_pipe)
                enter_probe_bw(b, now);
            else
                b->mode = BBR_STARTUP;
        }
    }
}

static void set_cwnd(tcp_bbr *b, struct tern_conn *c, const rate_sample *rs)
{
    uint64_t target = bdp(b, cwnd_gain(b));
    uint32_t floor = MIN_CWND_SEGS * c->mss;
    uint64_t cw = c->cwnd;
    if (target) {
        /* the draft's send quanta, and the ACK aggregation allowance */
        target += 3u * c->mss + aggregation_cwnd(b);
        if (b->filled_pipe) {
            cw += rs->acked;
            if (cw > target)
                cw = target;
        } else if (cw < target || b->rate.delivered < 10u * c->mss) {
            cw += rs->acked;
        }
    } else {
        cw += rs->acked;            /* no model yet: slow start */
    }
    if (cw < floor)
        cw = floor;
    if (b->mode == BBR_PROBE_RTT && cw > floor)
        cw = floor;
    c->cwnd = (uint32_t)(cw > CC_CWND_MAX ? CC_CWND_MAX : cw);
}

static void bbr_on_delivery(tern_stack *st, struct tern_conn *c)
{
    tcp_bbr *b = bbr_of(st, c);
    rate_sample rs;
    rate_on_ack(&b->rate, c, st->now, &rs);
    if (!rs.acked && !rs.interval_ns)
        return;
    update_bw(b, c, &rs);
    update_ack_aggregation(b, c, st->now, &rs);
    check_full_pipe(b, &rs);
    check_drain(b, c, st->now);
    advance_cycle(b, c, st->now, &rs);
    update_min_rtt(b, c, st->now, &rs);
    b->pacing_bps = b->max_bw * pacing_gain(b) / GAIN_UNIT;
    set_cwnd(b, c, &rs);
}

/* Recovery does not reduce: ssthresh only tells the shared recovery code
 * (NewReno inflation) where the window stands. */
static void bbr_on_loss(struct tern_conn *c, uint64_t now)
{
    (void)now;
    c->ssthresh = c->cwnd;
}

/* As BBR v1: an RTO restarts the window from one segment; on_delivery
 * grows it back to the model's target by what each ACK delivers. */
static void bbr_on_rto(struct tern_conn *c, uint64_t now)
{
    (void)now;
    c->ssthresh = c->cwnd;
    c->cwnd = c->mss;
}

/* The model-free window calls (on_ack) do nothing: on_delivery sees every
 * ACK, in recovery too. */
static void bbr_on_ack(struct tern_conn *c, uint32_t acked, uint32_t rtt_us,
                       uint64_t now)
{
    (void)c; (void)acked; (void)rtt_us; (void)now;
}

const tcp_cc_ops tcp_cc_bbr = {
    .name = "bbr", .init = bbr_init, .on_ack = bbr_on_ack,
    .on_loss = bbr_on_loss, .on_rto = bbr_on_rto, .attach = bbr_attach,
    .on_sent = bbr_on_sent, .on_delivery = bbr_on_delivery,
};
