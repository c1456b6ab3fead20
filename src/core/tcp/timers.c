/* timers.c - what happens when a connection's deadline passes: delayed
 * ACK, retransmission timeout (RFC 6298 5.4-5.7, RFC 5681 on loss), SYN
 * retries, zero-window probes, keep-alive, FIN_WAIT_2 and TIME_WAIT expiry.
 * One t_rtx deadline per conn serves all but the delayed ACK; its meaning
 * follows from the state (tcp_rearm). */
#include "cc.h"

static uint32_t rto_cur(const struct tcp_layer *tl, const struct tern_conn *c)
{
    uint64_t r = (uint64_t)c->rto_ms << (c->backoff > 20 ? 20 : c->backoff);
    return r > tl->rto_max_ms ? tl->rto_max_ms : (uint32_t)r;
}

/* Tail loss probe timeout (RFC 8985 section 7.2): two smoothed RTTs, plus
 * the worst delayed-ACK wait (200 ms) when only one segment is out, since
 * its ACK may be held back; plus four RTT variations, at least TLP_MIN_US
 * (tcp_arm_rto uses it only when it comes before the RTO). The addition
 * departs from the RFC's 2 SRTT: SRTT follows a growing queue with a gain
 * of 1/8 and comes from 1 ms timestamp ticks, and on a short path 2 SRTT
 * alone (or a 2 ms floor) fired probes whenever a flight's ACKs came late,
 * each answered by a D-SACK (several flows filling one link's queue did it
 * on every run; Linux likewise adds its minimum timeout). The timer is armed when the first segment of a flight leaves: with
 * more data queued behind it the flight is not a lone segment (the rest
 * follows in the same output pass, or as the window opens), and a lone-
 * segment PTO would come after the RTO and rule the probe out for the
 * whole flight. */
#define TLP_MIN_US 2000u
static uint64_t tlp_timeout_ns(const struct tern_conn *c)
{
    uint64_t var = 4ull * c->rttvar_us;     /* RFC 6298's K * RTTVAR */
    uint64_t pto = 2ull * c->srtt_us + (var > TLP_MIN_US ? var : TLP_MIN_US);
    if (c->snd_max - c->snd_una <= c->mss && !seq_gt(c->sq_end, c->snd_max))
        pto += TCP_TLP_DELACK_US;
    if (c->flags & TF_TLP_SENT)     /* the second probe waits twice as long */
        pto *= 2;
    return pto * 1000;
}

/* A probe is worth it only with an RTT estimate, outside backoff, at
 * most twice per tail (TF_TLP_SENT, TF_TLP_SENT2 until new data is
 * acknowledged). Unlike RFC 8985 7.2, also in a recovery and a second
 * time: a recovery whose last transmissions, or whose last ACKs, are all
 * lost has nothing left to draw an ACK (RACK needs one), and a probe
 * whose ACK is lost leaves only the RTO. At 5% loss each way these were
 * most of tern's RTOs, each 200 ms against a round trip of ~0.1 ms. */
static bool tlp_allowed(const struct tern_conn *c)
{
    return c->srtt_us && !c->backoff && !(c->flags & TF_TLP_SENT2) &&
           (c->state == TERN_TCP_ESTABLISHED || c->state == TERN_TCP_CLOSE_WAIT);
}

void tcp_arm_rto(tern_stack *st, struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    uint64_t rto = ms_ns(rto_cur(tl, c));
    uint32_t f = c->flags & ~(uint32_t)(TF_PERSIST | TF_TLP | TF_RACK);
    if (tlp_allowed(c)) {
        uint64_t pto = tlp_timeout_ns(c);
        if (pto < rto) {    /* a later probe would only delay the RTO */
            f |= TF_TLP;
            rto = pto;
        }
    }
    c->flags = f;
    tcp_set_rtx(st, c, st->now + rto);
}

/* The probe: resend the last segment (or the FIN), which makes the
 * receiver answer with an ACK carrying SACK for whatever it holds, so a
 * lost tail or a lost stretch ACK is repaired by fast recovery instead of
 * waiting for the RTO. When the receiver has already SACKed data above
 * snd_una, the segment at snd_una is the one missing: resend that, never
 * data the receiver holds. */
static void tlp_fire(tern_stack *st, struct tern_conn *c)
{
    c->flags &= ~(uint32_t)TF_TLP;
    c->flags |= c->flags & TF_TLP_SENT ? TF_TLP_SENT2 : TF_TLP_SENT;

    CTR(st, tcp_tail_loss_probes);
    uint32_t flight = c->snd_max - c->snd_una;
    uint32_t seq;
    if (c->nsb)             /* SACKed data above: the first hole is lost */
        seq = c->snd_una;
    else if (c->flags & TF_FIN_SENT)
        seq = c->sq_end;
    else
        seq = c->snd_max - (flight < c->mss ? flight : c->mss);
    tcp_retransmit(st, c, seq, c->mss);
    tcp_arm_rto(st, c);
}

static bool synced_open(uint8_t s)
{
    return s == TERN_TCP_ESTABLISHED || s == TERN_TCP_CLOSE_WAIT;
}

void tcp_rearm(tern_stack *st, struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    if (c->state == TERN_TCP_TIME_WAIT || c->state == TERN_TCP_SYN_SENT ||
        c->state == TERN_TCP_SYN_RECEIVED)
        return;
    if (c->snd_max != c->snd_una) {
        if (c->t_rtx == TERN_NEVER || (c->flags & TF_PERSIST))
            tcp_arm_rto(st, c);
        return;
    }
    c->backoff = c->flags & TF_PERSIST ? c->backoff : 0;
    if (c->sq_end != c->snd_nxt) {        /* unsent, window or pool */
        if (!(c->flags & TF_PERSIST) || c->t_rtx == TERN_NEVER) {
            c->flags |= TF_PERSIST;
            c->t_rtx = st->now + ms_ns(rto_cur(tl, c));
        }
    } else if (tl->keepalive_ns && synced_open(c->state)) {
        c->flags &= ~(uint32_t)TF_PERSIST;
        c->t_rtx = c->last_rcv + tl->keepalive_ns * (1u + c->probes);
    } else if (c->state == TERN_TCP_FIN_WAIT_2 &&
               (c->flags & TF_APP_CLOSED)) {
        c->flags &= ~(uint32_t)TF_PERSIST;
        c->t_rtx = c->last_rcv + tl->time_wait_ns;
    } else {
        c->flags &= ~(uint32_t)TF_PERSIST;
        c->t_rtx = TERN_NEVER;
    }
    conn_timer_update(st, c);
}

static void give_up(tern_stack *st, struct tern_conn *c)
{
    int reason = TERN_CLOSE_TIMEOUT;
    if (c->state == TERN_TCP_SYN_SENT && (c->flags & TF_V6)) {
        CTR(st, tcp_attempt_fails);      /* NDP failures are its counters' */
    } else if (c->state == TERN_TCP_SYN_SENT) {
        CTR(st, tcp_attempt_fails);
        uint32_t nh = ip4_is_local(st, c->raddr) ? c->raddr : st->cfg.gateway;
        if (!nh || !arp_lookup(st, nh))
            reason = TERN_CLOSE_NO_ROUTE;
    }
    CTR(st, tcp_timeouts);
    conn_close(st, c, reason);
}

static void syn_timeout(tern_stack *st, struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    if (c->syn_tries >= tl->syn_retries) {
        if (c->state == TERN_TCP_SYN_RECEIVED && !(c->flags & TF_APP)) {
            conn_free(st, c);             /* the app never saw it */
            return;
        }
        give_up(st, c);
        return;
    }
    c->syn_tries++;
    c->backoff++;
    CTR(st, tcp_retransmits);
    tcp_send_syn(st, c);
    tcp_arm_rto(st, c);
}

static void rto_expired(tern_stack *st, struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    if (c->backoff >= tl->max_retries) {
        give_up(st, c);
        return;
    }
    CTR(st, tcp_rto_expiries);
    c->flags &= ~(uint32_t)(TF_TLP | TF_TLP_SENT | TF_TLP_SENT2 | TF_RACK);
    /* ssthresh is held after the first timeout of a segment (RFC 5681
     * 3.1) and, as Linux does, in a recovery: the loss of this window was
     * answered when it began, and a second reduction would start from
     * PRR's shrunken cwnd, down to the 2-segment floor */
    if (c->backoff == 0 && !(c->flags & TF_RECOVERY))
        tl->cc->on_rto(c, st->now);
    else
        c->cwnd = c->mss;
    c->backoff++;
    c->flags &= ~(uint32_t)(TF_RECOVERY | TF_RTT_TIMING);
    c->recover = c->snd_max;
    c->dupacks = 0;
    /* go back: resend from snd_una (SACKed ranges are skipped later) */
    c->snd_nxt = c->snd_una;
    c->rxt_next = c->snd_una;
    c->snd_nxt = c->snd_una + tcp_retransmit(st, c, c->snd_una, c->mss);
    c->sq_cur = sq_find(c, c->snd_nxt);
    tcp_arm_rto(st, c);
}

static void persist_expired(tern_stack *st, struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    tcp_output(st, c);                  /* the window may have opened */
    if (c->snd_max != c->snd_una || c->sq_end == c->snd_nxt)
        return;
    if (c->probes >= tl->max_retries) {
        give_up(st, c);
        return;
    }
    c->probes++;
    if (c->backoff < 30)
        c->backoff++;
    CTR(st, tcp_zero_window_probes);
    tcp_send_probe(st, c);
    c->flags |= TF_PERSIST;
    c->t_rtx = st->now + ms_ns(rto_cur(tl, c));
}

static void idle_expired(tern_stack *st, struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    if (c->state == TERN_TCP_FIN_WAIT_2) {
        conn_close(st, c, TERN_CLOSE_NORMAL);
        return;
    }
    if (!tl->keepalive_ns || !synced_open(c->state))
        return;
    if (st->now - c->last_rcv < tl->keepalive_ns) {
        tcp_rearm(st, c);
        return;
    }
    if (c->probes >= tl->max_retries) {
        give_up(st, c);
        return;
    }
    c->probes++;
    CTR(st, tcp_keepalive_probes);
    tcp_send_probe(st, c);
    c->t_rtx = c->last_rcv + tl->keepalive_ns * (1u + c->probes);
}

static void rtx_fire(tern_stack *st, struct tern_conn *c)
{
    switch (c->state) {
    case TERN_TCP_TIME_WAIT:
        conn_free(st, c);
        return;
    case TERN_TCP_SYN_SENT:
    case TERN_TCP_SYN_RECEIVED:
        syn_timeout(st, c);
        return;
    default:
        break;
    }
    if (c->snd_max != c->snd_una && (c->flags & TF_RACK))
        rack_timeout(st, c);
    else if (c->snd_max != c->snd_una && (c->flags & TF_TLP))
        tlp_fire(st, c);
    else if (c->snd_max != c->snd_una)
        rto_expired(st, c);
    else if (c->flags & TF_PERSIST)
        persist_expired(st, c);
    else
        idle_expired(st, c);
}

void tcp_timer_fire(tern_stack *st, struct tern_conn *c, uint64_t now)
{
    uint32_t gen = c->gen;
    if (c->t_ack <= now) {
        c->t_ack = TERN_NEVER;
        if (c->flags & (TF_ACK_DELAYED | TF_ACK_NOW)) {
            CTR(st, tcp_delayed_acks);
            tcp_send_ack(st, c);
        }
    }
    if (c->t_rtx <= now) {
        c->t_rtx = TERN_NEVER;
        rtx_fire(st, c);
        if (c->gen != gen)
            return;
    }
    conn_timer_update(st, c);
}

uint32_t tern_tcp_closing_count(const tern_stack *st)
{
    const struct tcp_layer *tl = st->tcp;
    uint32_t n = 0;
    for (uint32_t i = 0; tl && i < tl->nconns; i++) {
        uint8_t s = tl->conns[i].state;
        n += s == TERN_TCP_FIN_WAIT_1 || s == TERN_TCP_FIN_WAIT_2 ||
             s == TERN_TCP_CLOSING || s == TERN_TCP_LAST_ACK;
    }
    return n;
}
