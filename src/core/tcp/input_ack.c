/* input_ack.c - ACK processing in synchronized states: the RFC 5961 ACK
 * range check, SACK scoreboard update, releasing acknowledged buffers,
 * RTT samples, congestion control, duplicate ACKs and loss recovery
 * (RFC 6582 NewReno without SACK, RFC 6675 with it), the send window
 * update (RFC 9293 SND.WL1/WL2 rule) and the FIN-acked transitions. */
#include "cc.h"

/* Release buffers wholly below snd_una; returns data bytes freed. */
static void sq_release(tern_stack *st, struct tern_conn *c)
{
    tern_buf *q = c->sq_head;
    bool marks = c->sb_marked != 0;     /* SACKed buffers (sack.c) */
    while (q && seq_le(bq_end(q), c->snd_una)) {
        tern_buf *n = bq_next(q);
        if (c->sq_cur == q)
            c->sq_cur = n;
        if (marks && bq_sacked(q))
            c->sb_marked -= bq_len(q);
        sq_put(st, q);
        q = n;
    }
    c->sq_head = q;
    if (!q)
        c->sq_tail = NULL;
}

/*
 * PRR, Proportional Rate Reduction (RFC 6937, PRR-SSRB), for a SACK
 * recovery: on every ACK in it, cwnd = pipe + sndcnt, so the send loop's
 * own check (pipe + SMSS <= cwnd) lets out sndcnt bytes. While pipe is
 * above ssthresh, sndcnt keeps the bytes sent in recovery (prr_out) at
 * ssthresh/RecoverFS of the bytes delivered (prr_delivered): the flight
 * shrinks smoothly to ssthresh with an ACK clock, instead of RFC 6675's
 * silence until pipe falls below ssthresh. Below ssthresh (more was lost
 * than the reduction), slow-start reduction bound: catch up to ssthresh
 * at most one SMSS beyond what this ACK delivered, never a burst.
 * prr_out is read from bytes_sent (every data transmission counts it), so
 * the send path carries no PRR code.
 */
static void prr_update(struct tern_conn *c, uint32_t delivered)
{
    c->prr_delivered += delivered;
    uint32_t pipe = sb_pipe(c, c->mss);
    uint32_t out = (uint32_t)c->bytes_sent - c->prr_base;
    uint32_t snd;
    if (pipe > c->ssthresh) {
        /* sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out */
        uint32_t fs = c->recover_fs ? c->recover_fs : 1;
        uint64_t want = ((uint64_t)c->prr_delivered * c->ssthresh + fs - 1) /
                        fs;
        snd = want > out ? (uint32_t)(want - out) : 0;
        /* whole segments, as Linux counts it: a fraction would never
         * pass the send loop's check; the excess is paid back from the
         * next ACKs' share */
        if (snd % c->mss)
            snd += c->mss - snd % c->mss;
    } else {
        /* MIN(ssthresh - pipe, MAX(prr_delivered - prr_out,
         *     DeliveredData) + SMSS) */
        uint32_t lim = c->prr_delivered > out ? c->prr_delivered - out : 0;
        if (lim < delivered)
            lim = delivered;
        lim += c->mss;
        uint32_t room = c->ssthresh - pipe;
        snd = lim < room ? lim : room;
    }
    c->cwnd = pipe + snd;
}

void tcp_enter_recovery(tern_stack *st, struct tern_conn *c, bool resend_una)
{
    struct tcp_layer *tl = TL(st);
    CTR(st, tcp_fast_retransmits);
    c->recover = c->snd_max;
    tl->cc->on_loss(c, st->now);
    c->flags |= TF_RECOVERY;
    c->flags &= ~(uint32_t)TF_RTT_TIMING;
    c->prr_delivered = 0;           /* RFC 6937 */
    c->prr_base = (uint32_t)c->bytes_sent;
    c->recover_fs = c->snd_max - c->snd_una;
    /* not when its last send was a retransmission still in flight (an
     * earlier recovery's): RACK tells when that one is lost */
    const tern_buf *q = resend_una ? sq_find(c, c->snd_una) : NULL;
    bool resend = resend_una && !(q && rack_resent(c, q));
    uint32_t n = resend ? tcp_retransmit(st, c, c->snd_una, c->mss) : 0;
    if (c->flags & TF_SACK) {
        CTR(st, tcp_sack_recoveries);
        if (!resend_una)
            CTR(st, tcp_rack_recoveries);
        c->rxt_next = c->snd_una + n;
        if (!tl->cc_model)              /* a model keeps its own window */
            prr_update(c, 0);
    } else {
        c->cwnd = c->ssthresh + TCP_DUPTHRESH * c->mss;
    }
    conn_pend(st, c, TF_OUTPUT);
}

/* RFC 5827: with fewer than four segments out and nothing new to send,
 * three duplicate ACKs can never come; lower the threshold to the number
 * of segments out minus one. */
static bool early_retransmit(const struct tern_conn *c)
{
    uint32_t out = (c->snd_max - c->snd_una + c->mss - 1) / c->mss;
    bool nothing_new = c->sq_end == c->snd_nxt ||
                       c->snd_nxt - c->snd_una + c->mss > c->cwnd;
    return out >= 2 && out < 4 && nothing_new && c->dupacks >= out - 1;
}

static void on_dupack(tern_stack *st, struct tern_conn *c)
{
    CTR(st, tcp_dup_acks_in);
    if (c->dupacks < 255)
        c->dupacks++;
    if (c->flags & TF_RECOVERY) {
        if (!(c->flags & TF_SACK))
            c->cwnd += c->mss;             /* RFC 5681 inflation */
        conn_pend(st, c, TF_OUTPUT);
        return;
    }
    bool lost = c->dupacks >= TCP_DUPTHRESH ||
                ((c->flags & TF_SACK) && sb_is_lost(c, c->snd_una, c->mss)) ||
                early_retransmit(c);
    /* RFC 6582: not again for losses of the window already recovered
     * (with SACK the scoreboard tells real losses from duplicates) */
    if (lost && (seq_ge(c->snd_una, c->recover) || (c->flags & TF_SACK)))
        tcp_enter_recovery(st, c, true);
    conn_pend(st, c, TF_OUTPUT);
}

static void partial_ack(tern_stack *st, struct tern_conn *c, uint32_t acked)
{
    if (c->flags & TF_SACK) {
        if (seq_lt(c->rxt_next, c->snd_una))
            c->rxt_next = c->snd_una;
        return;
    }
    /* RFC 6582: retransmit the next hole, deflate by what was acked */
    tcp_retransmit(st, c, c->snd_una, c->mss);
    c->cwnd = c->cwnd > acked ? c->cwnd - acked : c->mss;
    if (acked >= c->mss)
        c->cwnd += c->mss;
    tcp_arm_rto(st, c);
}

/* tcp_new_ack for any other ACK than ack_whole_flight's (tcp.h). Kept
 * out of line so the common case pays no register saves for it. */
#if defined(__GNUC__)
#define GENERAL_PATH __attribute__((noinline))
#else
#define GENERAL_PATH
#endif
GENERAL_PATH bool tcp_new_ack_general(tern_stack *st, struct tern_conn *c,
                                     const tcp_seg *s)
{
    struct tcp_layer *tl = TL(st);
    uint32_t flight = c->snd_max - c->snd_una;
    uint32_t acked = s->ack - c->snd_una;
    bool fin_acked = (c->flags & TF_FIN_SENT) && seq_gt(s->ack, c->sq_end);
    uint32_t data = fin_acked ? acked - 1 : acked;
    c->snd_una = s->ack;
    sq_release(st, c);
    if (seq_lt(c->snd_nxt, c->snd_una)) {
        c->snd_nxt = c->snd_una;
        c->sq_cur = sq_find(c, c->snd_nxt);
    }
    uint32_t rtt = rtt_of(st, c, s);
    if (rtt)
        rtt_sample(st, c, rtt);
    ack_clear_probes(c);
    if (c->nsb)
        sb_ack(c);
    else
        c->fack = c->snd_una;
    if (c->flags & TF_RECOVERY) {
        if (seq_ge(c->snd_una, c->recover)) {
            /* RFC 6675: cwnd stays ssthresh. RFC 6582 deflates to
             * min(ssthresh, max(FlightSize, SMSS) + SMSS): never below
             * two segments, or the one segment out waits for a delayed
             * ACK and, if lost, for the RTO (no probe for one segment) */
            uint32_t fl = c->snd_max - c->snd_una;
            fl = (fl > c->mss ? fl : c->mss) + c->mss;
            if (c->flags & TF_SACK)
                fl = c->ssthresh;
            c->cwnd = fl < c->ssthresh ? fl : c->ssthresh;
            c->flags &= ~(uint32_t)TF_RECOVERY;
            c->dupacks = 0;
        } else {
            partial_ack(st, c, acked);
        }
    } else {
        c->dupacks = 0;
        if (data && cwnd_limited(c, flight))
            tl->cc->on_ack(c, data, rtt, st->now);
    }
    if (tl->cc_model)
        tl->cc->on_delivery(st, c);
    c->t_rtx = TERN_NEVER;
    if (c->snd_una != c->snd_max)
        tcp_arm_rto(st, c);
    conn_pend(st, c, TF_OUTPUT);
    if (data && !ack_report(st, c, data))
        return false;
    if (!fin_acked)
        return true;
    switch (c->state) {
    case TERN_TCP_FIN_WAIT_1:
        conn_set_state(st, c, TERN_TCP_FIN_WAIT_2);
        tcp_rearm(st, c);
        return true;
    case TERN_TCP_CLOSING:
        tcp_enter_time_wait(st, c);         /* the slot is freed */
        return false;
    case TERN_TCP_LAST_ACK:
        conn_close(st, c, TERN_CLOSE_NORMAL);
        return false;
    default:
        return true;
    }
}

/* After an ACK, during a SACK recovery (possibly begun by this ACK); a
 * model-based controller (on_delivery) sets cwnd itself instead. */
static void prr_ack(tern_stack *st, struct tern_conn *c, uint32_t una0,
                    uint32_t sacked0)
{
    struct tcp_layer *tl = TL(st);
    if (tl->cc_model) {
        tl->cc->on_delivery(st, c);
        return;
    }
    if ((c->flags & (TF_RECOVERY | TF_SACK)) != (TF_RECOVERY | TF_SACK))
        return;
    uint32_t got = (c->snd_una - una0) + c->sacked;
    prr_update(c, got > sacked0 ? got - sacked0 : 0);
}

/* RFC 2883: the first block reports data that arrived twice when it
 * lies below the cumulative ACK or inside the second block. */
static bool first_is_dsack(const tcp_seg *s)
{
    const uint32_t(*b)[2] = s->o.sack;
    return seq_le(b[0][1], s->ack) ||
           (s->o.nsack > 1 && seq_ge(b[0][0], b[1][0]) &&
            seq_le(b[0][1], b[1][1]));
}

bool tcp_ack(tern_stack *st, struct tern_conn *c, const tcp_seg *s)
{
    /* A D-SACK tells of a needless resend, not of a loss: without it the
     * ACK is a duplicate only by RFC 5681's rule, and RACK and the
     * scoreboard see the other blocks alone (a spurious probe's D-SACK
     * counted as new SACK information started recoveries, whose resends
     * drew D-SACKs again) */
    tcp_seg nod;
    bool dsack = (c->flags & TF_SACK) && s->o.nsack && first_is_dsack(s);
    if (dsack) {
        CTR(st, tcp_dsacks_in);
        nod = *s;
        nod.o.nsack--;
        for (uint32_t k = 0; k < nod.o.nsack; k++) {
            nod.o.sack[k][0] = s->o.sack[k + 1][0];
            nod.o.sack[k][1] = s->o.sack[k + 1][1];
        }
        s = &nod;
    }
    /* RFC 5961 5.2: SND.UNA - MAX.SND.WND <= SEG.ACK <= SND.NXT */
    if (seq_gt(s->ack, c->snd_max) ||
        seq_lt(s->ack, c->snd_una - c->max_sndwnd)) {
        CTR(st, tcp_drop_bad_ack);
        conn_pend(st, c, TF_ACK_NOW);
        return false;
    }
    /* RACK (rack.c) only where losses are: SACK blocks, a scoreboard or
     * a recovery; the loss-free path never walks the send queue */
    bool rack = (c->flags & TF_SACK) &&
                (s->o.nsack || c->nsb || (c->flags & TF_RECOVERY));
    /* PRR's DeliveredData: the change in snd_una plus in SACKed bytes */
    uint32_t una0 = c->snd_una, sacked0 = c->sacked;
    if (rack)
        rack_on_ack(st, c, s);
    if ((c->flags & TF_SACK) && s->o.nsack)
        sb_update(TL(st), c, &s->o);
    bool wnd_same = (s->wnd << c->snd_ws) == c->snd_wnd;
    bool advanced = seq_gt(s->ack, c->snd_una);
    /* RFC 9293 3.8.6.1: a receiver that answers our zero-window probes is
     * alive, however long its window stays shut. */
    if (c->flags & TF_PERSIST)
        c->probes = 0;
    tcp_snd_wnd_update(st, c, s);
    if (advanced) {
        if (!tcp_new_ack(st, c, s))
            return false;
        if (rack) {
            rack_detect(st, c);
            prr_ack(st, c, una0, sacked0);
        }
        return true;
    }
    /* RFC 5681's duplicate ACK keeps the window unchanged; with SACK an
     * ACK reporting SACK blocks is a duplicate whatever the window says,
     * since a receiver that queues out-of-order data shrinks its window
     * in exactly the ACKs that signal a loss (RFC 6675 section 2). */
    bool sack_dup = (c->flags & TF_SACK) && s->o.nsack;
    if (s->ack == c->snd_una && s->len == 0 && !dsack &&
        !(s->flags & (TCP_SYN | TCP_FIN)) && (wnd_same || sack_dup) &&
        c->snd_max != c->snd_una)
        on_dupack(st, c);
    if (rack) {
        rack_detect(st, c);
        prr_ack(st, c, una0, sacked0);
    }
    /* a tail probe waits for the ACKs to stop, SACKs included (a
     * recovery's ACKs are mostly SACKs) */
    if ((c->flags & TF_TLP) && c->sacked != sacked0)
        tcp_arm_rto(st, c);
    return true;
}
