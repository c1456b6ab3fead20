/* rack.c - RACK loss detection (RFC 8985 section 6) on top of the SACK
 * scoreboard.
 *
 * Every send-queue buffer carries the stamp of its last transmission
 * (tern_buf.cb32, written by output.c). On an ACK that reports SACK blocks
 * (or while a scoreboard or a recovery exists: never on the loss-free
 * path) we note the latest-sent data it delivers (RACK.xmit_ts) and that
 * data's round trip (RACK.rtt). Data still unSACKed that was sent before
 * it, and longer ago than RACK.rtt plus a reordering window of min_RTT/4,
 * is lost. That condition is one threshold on the stamps
 * (rack_lost_before), which sack.c's NextSeg and pipe test per buffer, so
 * nothing is marked and nothing needs unmarking: a retransmission restamps
 * its buffer and stops being lost, and if it is lost again, data sent
 * after it gets delivered first and the threshold passes it again -- the
 * lost retransmission that RFC 6675 alone can only repair by an RTO.
 * Data sent before RACK.xmit_ts but not yet old enough is looked at again
 * by the reordering timer (t_rtx with TF_RACK), at the latest when all of
 * it has waited RACK.rtt plus the window.
 */
#include "cc.h"

/* Reordering window (RFC 8985 6.2 step 4). Until the peer has shown
 * reordering, none in recovery or once DupThresh segments are SACKed (the
 * RFC 6675 rule then decides alike); otherwise a quarter of the minimum
 * RTT, at least one stamp unit. (The RFC also caps it at SRTT; ours comes
 * from 1 ms timestamp ticks and can read near zero on a fast link.) */
static uint32_t reo_wnd(const struct tern_conn *c)
{
    if (!(c->flags & TF_REORDER) &&
        ((c->flags & TF_RECOVERY) ||
         c->sacked > (TCP_DUPTHRESH - 1) * (uint32_t)c->mss))
        return 0;
    uint32_t base = c->rack_min_rtt ? c->rack_min_rtt : c->rack_rtt;
    uint32_t w = base >> 2;
    return w ? w : 1;
}

/* Does any part of [qs, qe) lie in a SACK block of this ACK? */
static bool in_blocks(const tcp_opts *o, uint32_t qs, uint32_t qe)
{
    for (uint32_t k = 0; k < o->nsack; k++)
        if (seq_lt(o->sack[k][0], qe) && seq_gt(o->sack[k][1], qs))
            return true;
    return false;
}

/* The latest-sent delivered data an ACK's walk has found so far. */
struct rack_walk {
    const tcp_seg *s;
    uint32_t now, bx, be, brtt;
    bool found, known;
};

/* q was walked: if this ACK delivers it (cumulatively or in a block) and
 * it was not SACKed before, a candidate for RACK.xmit_ts. */
static void rack_visit(tern_stack *st, struct tern_conn *c,
                       struct rack_walk *w, const tern_buf *q)
{
    uint32_t qs = bq_seq(q), qe = bq_end(q);
    /* marked: SACKed by an earlier ACK, not delivered by this one */
    if (!seq_gt(qe, c->snd_una) || bq_sacked(q))
        return;
    if (!seq_le(qe, w->s->ack) && !in_blocks(&w->s->o, qs, qe))
        return;                         /* not delivered by this ACK */
    uint32_t x = q->cb32 & ~1u;
    bool rtx = q->cb32 & 1u;
    /* reordering: never resent, sent below data SACKed before, and
     * delivered only now */
    if (!rtx && c->nsb && seq_le(qe, c->fack) && sb_skip(c, qs) == qs &&
        !(c->flags & TF_REORDER)) {
        c->flags |= TF_REORDER;
        CTR(st, tcp_reordering_seen);
    }
    /* RACK_sent_after: later stamp, or the same stamp and higher end */
    if ((w->found || w->known) &&
        !(stamp_lt(w->bx, x) || (x == w->bx && seq_gt(qe, w->be))))
        return;
    uint32_t rtt = w->now - x;
    /* step 2: a retransmission delivered sooner than the minimum RTT is
     * the original's delivery (ambiguous): no sample */
    if (rtx && rtt < c->rack_min_rtt)
        return;
    w->bx = x;
    w->be = qe;
    w->brtt = rtt;
    w->found = true;
    if (!rtx && (!c->rack_min_rtt || (rtt && rtt < c->rack_min_rtt)))
        c->rack_min_rtt = rtt ? rtt : 1;
}

void rack_on_ack(tern_stack *st, struct tern_conn *c, const tcp_seg *s)
{
    /* the highest byte this ACK can deliver */
    uint32_t hi = seq_gt(s->ack, c->snd_una) ? s->ack : c->snd_una;
    for (uint32_t k = 0; k < s->o.nsack; k++)
        if (seq_gt(s->o.sack[k][1], hi) && seq_le(s->o.sack[k][1], c->snd_max))
            hi = s->o.sack[k][1];
    if (hi == c->snd_una)
        return;
    struct rack_walk w = {
        .s = s, .now = tx_stamp(st->now, false), .bx = c->rack_xmit,
        .be = c->rack_end, .known = c->rack_rtt != 0,
    };
    /* what the ACK delivers: the buffers it acknowledges cumulatively,
     * then those of its blocks outside the ranges SACKed before (the
     * others were delivered by earlier ACKs), each block's parts from
     * where a walk last stopped (sb_seek): never the whole queue */
    uint64_t steps = 0;
    const tern_buf *q;
    for (q = c->sq_head; q && seq_lt(bq_seq(q), s->ack); q = bq_next(q)) {
        steps++;
        rack_visit(st, c, &w, q);
    }
    for (uint32_t k = 0; k < s->o.nsack; k++) {
        uint32_t bs = s->o.sack[k][0], be = s->o.sack[k][1];
        if (!seq_lt(bs, be) || seq_le(be, c->snd_una) || seq_gt(be, c->snd_max))
            continue;
        if (seq_lt(bs, c->snd_una))
            bs = c->snd_una;
        uint32_t part[SB_PARTS_MAX][2];
        uint32_t np = sb_new_parts(c, bs, be, part);
        for (uint32_t i = 0; i < np; i++)
            for (q = sb_seek(c, part[i][0], &steps);
                 q && seq_lt(bq_seq(q), part[i][1]); q = bq_next(q)) {
                steps++;
                rack_visit(st, c, &w, q);
            }
    }
    TL(st)->sack_walked += steps;
    if (!w.found)
        return;
    c->rack_xmit = w.bx;
    c->rack_end = w.be;
    c->rack_rtt = w.brtt ? w.brtt : 1;
}

/* Arm the reordering timer at `at` (ns) when it comes before t_rtx. */
static void rack_arm(tern_stack *st, struct tern_conn *c, uint64_t at)
{
    if (at >= c->t_rtx)
        return;
    c->t_rtx = at;
    c->flags = (c->flags & ~(uint32_t)TF_TLP) | TF_RACK;
    conn_timer_update(st, c);
}

void rack_detect(tern_stack *st, struct tern_conn *c)
{
    if (!c->rack_rtt || c->snd_una == c->snd_max)
        return;
    uint32_t now = tx_stamp(st->now, false);
    uint32_t wait = c->rack_rtt + reo_wnd(c);
    /* lost: sent before RACK.xmit_ts (rack_lost in tcp.h breaks ties)
     * and at least `wait` ago: stamp <= t */
    uint32_t t = now - wait;
    uint32_t before = c->rack_lost_before & ~1u;
    /* stamps are even: stamp <= t is stamp < (t + 2) & ~1 */
    c->rack_lost_before = stamp_lt(t, c->rack_xmit) ? (t + 2) & ~1u
                                                    : c->rack_xmit | 1u;
    bool holes = c->nsb || (c->flags & TF_RECOVERY);
    if (!holes)
        return;
    uint32_t fresh;
    uint32_t lost = sb_rack_lost(c, before, &fresh);
    st->ctr.tcp_rack_lost += fresh;
    if (lost && !(c->flags & TF_RECOVERY) && seq_ge(c->snd_una, c->recover)) {
        /* RFC 6675 4.2 alike: the first lost segment leaves at once,
         * whatever pipe says; the rest as NextSeg and pipe allow */
        tcp_enter_recovery(st, c, false);
        uint32_t seq, len;
        if (sb_next_hole(c, c->rxt_next, c->mss, &seq, &len)) {
            uint32_t n = tcp_retransmit(st, c, seq, len);
            if (n && seq_gt(seq + n, c->rxt_next))
                c->rxt_next = seq + n;
        }
    }
    if (lost && (c->flags & TF_RECOVERY))
        conn_pend(st, c, TF_OUTPUT);
    /* data sent before RACK.xmit_ts that is not yet old enough becomes
     * lost by RACK.xmit_ts + wait at the latest: look again then */
    if (stamp_lt(t, c->rack_xmit) && c->snd_una != c->snd_max)
        rack_arm(st, c, st->now + ((uint64_t)(c->rack_xmit - t) << 10));
}

void rack_timeout(tern_stack *st, struct tern_conn *c)
{
    CTR(st, tcp_rack_timeouts);
    c->flags &= ~(uint32_t)TF_RACK;
    c->t_rtx = TERN_NEVER;      /* detection first: a recovery it starts */
    rack_detect(st, c);         /* must not find a tail probe armed */
    if (c->flags & TF_RECOVERY)
        tcp_output(st, c);
    if (c->t_rtx == TERN_NEVER)
        tcp_arm_rto(st, c);
}
