/* cc.h - helpers shared by the congestion control modules. The ops table
 * (tcp_cc_ops) is in tcp.h: init, on_ack (bytes acked outside recovery),
 * on_loss (sets ssthresh when recovery starts), on_rto. */
#ifndef TERN_TCP_CC_H
#define TERN_TCP_CC_H

#include "tcp.h"

#define CC_SSTHRESH_INF 0x7fffffffu
#define CC_CWND_MAX (1u << 30)

void cc_initial_window(struct tern_conn *c);
/* Slow start growth (ABC, L = 2 SMSS) capped at ssthresh; returns the acked
 * bytes left over for congestion avoidance. */
uint32_t cc_slow_start(struct tern_conn *c, uint32_t acked);
/* The window a reduction is computed from: FlightSize, at most cwnd. */
uint32_t cc_flight_base(const struct tern_conn *c);

/* ---- delivery rate estimation (cc_rate.c) ----
 * After draft-cheng-iccrg-delivery-rate-estimation, with one checkpoint
 * per output pass instead of per-segment state: every pass that sends new
 * data records, for its last byte, the connection's delivered count and
 * delivered time, the first-sent time of the current sample interval, its
 * own send time and whether the sender was application-limited. When an
 * ACK delivers that byte (cumulatively or by SACK), the checkpoint becomes
 * a rate sample. All sends of one pass leave at the same instant (tern
 * sends a burst's output at its end), so nothing finer is lost. */
#define RATE_CPS 8            /* checkpoints in flight (a power of two) */
typedef struct rate_cp {
    uint32_t end;             /* seq after the pass's last new byte */
    uint32_t delivered;       /* C.delivered when it was sent */
    uint64_t delivered_ns;    /* C.delivered_time then */
    uint64_t first_sent_ns;   /* C.first_sent_time then */
    uint64_t sent_ns;         /* when the pass ran */
    uint32_t app_limited;     /* nonzero: sent while app-limited */
    uint32_t pad_;
} rate_cp;

typedef struct tcp_rate {
    uint32_t base;            /* delivered = snd_una - base + sacked */
    uint32_t delivered;       /* bytes delivered so far (wraps) */
    uint64_t delivered_ns;    /* time of the last delivery */
    uint64_t first_sent_ns;   /* send time of the last sampled checkpoint */
    uint32_t app_limited;     /* delivered count ending the app-limited
                                 phase (draft's C.app_limited), 0 = none */
    uint32_t last_end;        /* end of the newest checkpoint */
    uint8_t head, n;          /* ring of RATE_CPS checkpoints */
    uint8_t on;               /* data has been sent: base is set */
    rate_cp cp[RATE_CPS];
} tcp_rate;

/* One ACK's rate sample (valid: interval_ns and delivered set). */
typedef struct rate_sample {
    uint64_t interval_ns;     /* max(send, ack) elapsed; 0 = no sample */
    uint64_t rtt_ns;          /* the checkpoint's round trip */
    uint32_t delivered;       /* bytes delivered in the interval */
    uint32_t prior_delivered; /* C.delivered when the checkpoint left */
    uint32_t acked;           /* bytes this ACK delivered */
    bool app_limited;
} rate_sample;

void rate_init(tcp_rate *r);
/* After an output pass: a checkpoint if it sent new data. */
void rate_on_sent(tcp_rate *r, const struct tern_conn *c, uint64_t now);
/* After an ACK: what it delivered, and the sample of the newest checkpoint
 * it delivered, if any. */
void rate_on_ack(tcp_rate *r, const struct tern_conn *c, uint64_t now,
                 rate_sample *rs);

/* ---- BBR (cc_bbr.c) ---- */
enum { BBR_STARTUP, BBR_DRAIN, BBR_PROBE_BW, BBR_PROBE_RTT };
#define BBR_BW_ROUNDS 10      /* the max filter's window, in rounds */
#define BBR_AGG_ROUNDS 5      /* each ACK aggregation slot's rounds */
typedef struct tcp_bbr {
    tcp_rate rate;
    uint64_t bw_win[BBR_BW_ROUNDS]; /* best delivery rate of each of the
                                 last rounds (round % BBR_BW_ROUNDS), B/s */
    uint64_t max_bw;          /* their maximum: the bottleneck estimate */
    uint32_t min_rtt_us;      /* UINT32_MAX: none yet */
    uint64_t min_rtt_ns_at;   /* when min_rtt was last set or confirmed */
    uint32_t round;           /* packet-timed round trips */
    uint32_t next_round_delivered;
    uint64_t full_bw;         /* startup plateau detection */
    uint64_t cycle_ns;        /* start of the ProbeBW phase */
    uint64_t probe_rtt_done_ns; /* 0: ProbeRTT not yet at its floor */
    uint64_t pacing_bps;      /* pacing_gain * bw, bytes per second */
    uint32_t prior_cwnd;      /* saved by ProbeRTT and RTO */
    uint64_t ack_epoch_ns;    /* start of the ACK aggregation epoch */
    uint32_t ack_epoch_acked; /* bytes delivered in it */
    uint32_t extra_acked[2];  /* max aggregation beyond bw, two windows of
                                 BBR_AGG_ROUNDS rounds each */
    uint32_t round_delivered; /* C.delivered at the round's start */
    uint32_t round_rtx;       /* conn retransmits at the round's start */
    uint8_t mode;             /* BBR_* */
    uint8_t cycle_idx;        /* ProbeBW gain phase */
    uint8_t full_bw_cnt;
    uint8_t filled_pipe;
    uint8_t round_start;
    uint8_t probe_rtt_round_done;
    uint8_t agg_idx;          /* extra_acked slot in use */
    uint8_t agg_rounds;       /* rounds in that slot */
} tcp_bbr;

/* The model's state, for tests and tern_tcp_info-like readers. */
static inline tcp_bbr *bbr_of(tern_stack *st, const struct tern_conn *c)
{
    return &TL(st)->bbr[c->idx];
}

#endif
