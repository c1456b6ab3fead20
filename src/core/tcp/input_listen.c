/* input_listen.c - opening handshakes: SYN on a listener (a half-open conn,
 * or a SYN cookie when the half-open table or the connection table is
 * full), the cookie-carrying ACK, and SYN_SENT processing (RFC 9293
 * 3.10.7.2-3) including simultaneous open. */
#include "cc.h"

void tcp_apply_syn_opts(tern_stack *st, struct tern_conn *c, const tcp_opts *o)
{
    struct tcp_layer *tl = TL(st);
    uint32_t ours = conn_our_mss(tl, c);
    if (c->flags & TF_V6) {         /* a Packet Too Big seen before */
        uint32_t path = ip6_path_mtu(st, c->raddr6) - TCP6_HDRS;
        if (path < ours)
            ours = path;
    }
    uint32_t mss = (o->has & OPT_MSS) ? o->mss : TCP_MSS_DEFAULT;
    if (mss < TCP_MSS_FLOOR)
        mss = TCP_MSS_FLOOR;
    if (mss > ours)
        mss = ours;
    c->flags &= ~(uint32_t)(TF_SACK | TF_TS | TF_WS);
    if ((o->has & OPT_SACK_PERM) && tl->sack)
        c->flags |= TF_SACK;
    if ((o->has & OPT_TS) && tl->ts) {
        c->flags |= TF_TS;
        c->ts_recent = o->tsval;
    }
    if ((o->has & OPT_WS) && tl->ws) {
        c->flags |= TF_WS;
        c->snd_ws = o->ws;
        c->rcv_ws = tl->rcv_ws;
    } else {
        c->snd_ws = 0;
        c->rcv_ws = 0;
    }
    uint32_t optl = (c->flags & TF_TS) ? TCP_TS_LEN : 0;
    c->mss = (uint16_t)(mss - optl);
    c->rcv_mss = (uint16_t)(conn_our_mss(tl, c) - optl);
    tl->cc->init(c);
}

void tcp_challenge_ack(tern_stack *st, struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    if (st->now - tl->chack_refill >= TERN_NS_PER_SEC) {
        tl->chack_tokens = 1000;            /* global: 1000 per second */
        tl->chack_refill = st->now;
    }
    /* per connection: one per 100 ms */
    if ((c->chack_at && st->now + 1 - c->chack_at < 100 * TERN_NS_PER_MS) ||
        tl->chack_tokens == 0) {
        CTR(st, tcp_challenge_acks_limited);
        return;
    }
    tl->chack_tokens--;
    c->chack_at = st->now + 1;          /* 0 = never */
    CTR(st, tcp_challenge_acks);
    tcp_send_ack(st, c);
}

/* Common set-up of a passive conn; state set by the caller. */
static struct tern_conn *passive_conn(tern_stack *st, const tcp_seg *s,
                                      struct tcp_listener *l, uint32_t irs,
                                      uint32_t iss)
{
    struct tern_conn *c = s->ip6 ? conn_alloc6(st, s->ip6->src, s->ip6->dst,
                                               s->sport, s->dport)
                                 : conn_alloc(st, s->src, s->sport, s->dport);
    if (!c) {
        CTR(st, tcp_drop_conn_table_full);
        return NULL;
    }
    c->flags |= TF_PASSIVE;
    c->user = l->user;
    c->irs = irs;
    c->rcv_nxt = irs + 1;
    c->rcv_adv = c->rcv_nxt;
    c->last_ack_sent = c->rcv_nxt;
    c->iss = iss;
    c->snd_una = c->snd_nxt = c->snd_max = c->sq_end = iss + 1;
    c->recover = iss;
    c->ts_off = iss;
    return c;
}

/* A Fast Open SYN's data was taken (tfo_passive): the app gets the conn
 * and the data now, before the handshake completes (RFC 7413 4.2.2), and
 * the SYN-ACK acknowledges it. A retransmitted SYN finds the conn and
 * draws the SYN-ACK again (tcp_input_sync): the data is delivered once.
 * false: the app closed the conn in a callback. */
static bool tfo_accept(tern_stack *st, struct tern_conn *c, tcp_seg *s)
{
    c->flags |= TF_APP;
    uint32_t gen = c->gen;
    if (st->cfg.cb.accepted) {
        void *u = st->cfg.cb.accepted(st, c, c->user);
        if (c->gen != gen)
            return false;
        c->user = u;
    }
    return tcp_deliver(st, c, s->buf, s->payload, s->len);
}

static void syn_on_listener(tern_stack *st, tcp_seg *s, struct tcp_listener *l)
{
    struct tcp_layer *tl = TL(st);
    if (tl->half_open >= st->cfg.max_half_open || tl->free_head == TCP_NIL) {
        /* stateless answer: the cookie is our ISN; options that fit are
         * folded into the low bits of our TSval (when the peer sent TS) */
        if (tl->free_head == TCP_NIL)
            CTR(st, tcp_drop_conn_table_full);
        else
            CTR(st, tcp_drop_listen_overflow);
        uint16_t pm = (s->o.has & OPT_MSS) ? s->o.mss : TCP_MSS_DEFAULT;
        uint16_t ours = s->ip6 ? tl->our_mss6 : tl->our_mss;
        uint32_t idx = tcp_cookie_mss_idx(pm < ours ? pm : ours);
        uint32_t iss = tcp_cookie_make(st, s, idx, st->now);
        bool ts = (s->o.has & OPT_TS) && tl->ts;
        bool sack = ts && (s->o.has & OPT_SACK_PERM) && tl->sack;
        int ws = ts && (s->o.has & OPT_WS) && tl->ws ? s->o.ws : -1;
        uint32_t tsval = ((ts_now(st->now) - 32) & ~31u) |
                         (sack ? 16u : 0) | (ws >= 0 ? (uint32_t)ws : 15u);
        CTR(st, tcp_syn_cookies_sent);
        tcp_send_synack_cookie(st, s, iss, 0, ws, sack, ts, tsval);
        return;
    }
    uint32_t iss = tcp_isn_seg(st, s);
    struct tern_conn *c = passive_conn(st, s, l, s->seq, iss);
    if (!c)
        return;
    conn_set_state(st, c, TERN_TCP_SYN_RECEIVED);
    c->flags |= TF_HALF_OPEN;
    tl->half_open++;
    tcp_apply_syn_opts(st, c, &s->o);
    c->snd_wnd = s->wnd;                 /* never scaled in a SYN */
    c->max_sndwnd = c->snd_wnd;
    c->snd_wl1 = s->seq;
    c->snd_wl2 = iss;
    c->snd_una = c->snd_nxt = c->snd_max = iss;
    CTR(st, tcp_passive_opens);
    c->rtt_at = st->now;
    if (tl->tfo_server && (s->o.has & OPT_TFO) && tfo_passive(st, c, s) &&
        !tfo_accept(st, c, s))
        return;
    tcp_send_syn(st, c);
    tcp_arm_rto(st, c);
}

/* The ACK completing a cookie handshake. */
static void cookie_ack(tern_stack *st, tcp_seg *s, struct tcp_listener *l)
{
    uint16_t mss = tcp_cookie_check(st, s, s->ack - 1, st->now);
    if (!mss) {
        CTR(st, tcp_syn_cookies_bad);
        tcp_send_rst_reply(st, s);
        return;
    }
    struct tern_conn *c = passive_conn(st, s, l, s->seq - 1, s->ack - 1);
    if (!c) {
        /* a valid handshake with no slot for it: refuse it in words the
         * peer understands, never with silence (passive_conn counted) */
        tcp_send_rst_reply(st, s);
        return;
    }
    CTR(st, tcp_syn_cookies_ok);
    CTR(st, tcp_passive_opens);
    tcp_opts o;
    tern_memset(&o, 0, sizeof o);
    o.has = OPT_MSS;
    o.mss = mss;
    if (s->o.has & OPT_TS) {
        uint32_t bits = s->o.tsecr & 31u;
        o.has |= OPT_TS;
        o.tsval = s->o.tsval;
        if (bits & 16u)
            o.has |= OPT_SACK_PERM;
        if ((bits & 15u) != 15u) {
            o.has |= OPT_WS;
            o.ws = (uint8_t)(bits & 15u);
        }
    }
    tcp_apply_syn_opts(st, c, &o);
    c->ts_off = 0;
    /* what our SYN-ACK announced (unscaled) */
    c->rcv_adv = c->rcv_nxt + (TL(st)->rcv_buf < 65535 ? TL(st)->rcv_buf : 65535);
    conn_set_state(st, c, TERN_TCP_SYN_RECEIVED);
    /* the usual SYN_RECEIVED -> ESTABLISHED path does the rest */
    c->snd_una = c->iss;
    c->snd_wl1 = s->seq - 1;
    tcp_input_sync(st, c, s);
}

void tcp_input_listen(tern_stack *st, tcp_seg *s, struct tcp_listener *l)
{
    if (s->flags & TCP_RST)
        return;                           /* RFC 9293: ignore */
    if (s->flags & TCP_ACK) {
        if (s->flags & TCP_SYN) {
            tcp_send_rst_reply(st, s);
            return;
        }
        cookie_ack(st, s, l);
        return;
    }
    if (s->flags & TCP_SYN) {
        syn_on_listener(st, s, l);
        return;
    }
    CTR(st, tcp_drop_flags);
}

/* The SYN-ACK s of a SYN that carried data (Fast Open): the data it
 * acknowledges is released as any ACK releases it; the rest, all of it
 * when the server took none (no or a bad cookie, or over its bound, as
 * Linux does then), is sent again at once. false: the conn is gone. */
static bool tfo_synack_data(tern_stack *st, struct tern_conn *c,
                            const tcp_seg *s)
{
    if (seq_gt(s->ack, c->snd_una)) {
        CTR(st, tcp_tfo_syn_data_acked);
        return tcp_new_ack_general(st, c, s);
    }
    CTR(st, tcp_tfo_syn_data_unacked);
    c->snd_nxt = c->snd_una;
    c->sq_cur = c->sq_head;
    return true;
}

static void established_active(tern_stack *st, struct tern_conn *c,
                               tcp_seg *s)
{
    /* data in our SYN: established on the SYN alone, the data after */
    bool data = seq_gt(c->snd_max, c->iss + 1);
    tcp_establish(st, c, s, data ? c->iss + 1 : s->ack,
                  s->wnd, true);            /* never scaled in a SYN */
    conn_pend(st, c, TF_ACK_NOW | TF_OUTPUT);
    uint32_t gen = c->gen;
    if (st->cfg.cb.connected)
        st->cfg.cb.connected(st, c, c->user);
    if (c->gen == gen && (!data || tfo_synack_data(st, c, s)))
        tcp_rearm(st, c);
}

void tcp_input_syn_sent(tern_stack *st, struct tern_conn *c, tcp_seg *s)
{
    bool ack = (s->flags & TCP_ACK) != 0;
    if (ack && (seq_le(s->ack, c->iss) || seq_gt(s->ack, c->snd_max))) {
        CTR(st, tcp_drop_bad_ack);
        if (!(s->flags & TCP_RST))
            tcp_send_rst_reply(st, s);
        return;
    }
    if (s->flags & TCP_RST) {
        if (ack) {
            CTR(st, tcp_attempt_fails);
            conn_close(st, c, TERN_CLOSE_REFUSED);
        }
        return;
    }
    if (!(s->flags & TCP_SYN)) {
        CTR(st, tcp_drop_flags);
        return;
    }
    c->irs = s->seq;
    c->rcv_nxt = s->seq + 1;
    c->rcv_adv = c->rcv_nxt;
    c->last_ack_sent = c->rcv_nxt;
    c->last_rcv = st->now;
    tcp_apply_syn_opts(st, c, &s->o);
    if (ack) {
        if (c->tfo & TFO_OPT)
            tfo_synack_cookie(st, c, s);
        established_active(st, c, s);
        return;
    }
    /* simultaneous open: SYN_RECEIVED, answer with SYN-ACK (same ISS) */
    conn_set_state(st, c, TERN_TCP_SYN_RECEIVED);
    c->snd_wnd = s->wnd;
    c->max_sndwnd = c->snd_wnd;
    c->snd_wl1 = s->seq;
    c->snd_una = c->iss;
    tcp_send_syn(st, c);
    tcp_arm_rto(st, c);
}
