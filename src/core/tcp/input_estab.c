/* input_estab.c - segments for a synchronized connection (RFC 9293
 * 3.10.7.4): PAWS, the sequence acceptability test, RST and SYN per
 * RFC 5961, SYN_RECEIVED completion, ACK processing (input_ack.c), then
 * in-order data handed to the app in place, out-of-order data queued as
 * the received buffers, FIN and the ACK decision (deferred to the end of
 * the burst so replies sent from the recv callback carry it). */
#include "cc.h"

static bool acceptable(const struct tern_conn *c, const tcp_seg *s)
{
    uint32_t wnd = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
    uint32_t slen = s->len + ((s->flags & TCP_SYN) ? 1 : 0) +
                    ((s->flags & TCP_FIN) ? 1 : 0);
    uint32_t off = s->seq - c->rcv_nxt;     /* < wnd: inside */
    if (wnd == 0)                           /* RFC 9293: ACK/RST still */
        return s->seq == c->rcv_nxt;
    if (slen == 0)
        return off < wnd;
    return off < wnd || (s->seq + slen - 1 - c->rcv_nxt) < wnd;
}

static void reset_conn(tern_stack *st, struct tern_conn *c)
{
    switch (c->state) {
    case TERN_TCP_SYN_RECEIVED:
        if (!(c->flags & TF_APP)) {
            conn_free(st, c);               /* back to LISTEN */
            return;
        }
        CTR(st, tcp_attempt_fails);
        conn_close(st, c, TERN_CLOSE_REFUSED);
        return;
    case TERN_TCP_ESTABLISHED:
    case TERN_TCP_CLOSE_WAIT:
        CTR(st, tcp_estab_resets);
        conn_close(st, c, TERN_CLOSE_RESET);
        return;
    case TERN_TCP_TIME_WAIT:
        conn_free(st, c);
        return;
    default:
        conn_close(st, c, TERN_CLOSE_RESET);
        return;
    }
}

/* The handshake's end, the same for both sides: the ACK s of our SYN
 * acknowledges up to una and offers wnd bytes (already scaled as the
 * state calls for); timed: rtt_at holds when our SYN left. Samples the
 * RTT of the handshake, stops the SYN timer and moves to ESTABLISHED, or
 * on to FIN_WAIT_1 if the app shut the connection down meanwhile. */
void tcp_establish(tern_stack *st, struct tern_conn *c, const tcp_seg *s,
                   uint32_t una, uint32_t wnd, bool timed)
{
    c->snd_una = una;
    c->snd_wnd = wnd;
    c->max_sndwnd = wnd;
    c->snd_wl1 = s->seq;
    c->snd_wl2 = s->ack;
    if ((c->flags & TF_TS) && (s->o.has & OPT_TS) && s->o.tsecr)
        rtt_sample(st, c,
                   (ts_now(st->now) + c->ts_off - s->o.tsecr) * TS_TICK_US);
    else if (c->syn_tries == 0 && timed)
        rtt_sample(st, c, (uint32_t)((st->now - c->rtt_at) / 1000));
    c->backoff = 0;
    c->t_rtx = TERN_NEVER;
    conn_set_state(st, c, TERN_TCP_ESTABLISHED);
    c->flags |= TF_WAS_EST;
    if (c->flags & TF_FIN_QUEUED)
        conn_set_state(st, c, TERN_TCP_FIN_WAIT_1);
    CTR(st, tcp_conns_established);
}

/* SYN_RECEIVED + acceptable ACK. false: the conn is gone. */
static bool establish_passive(tern_stack *st, struct tern_conn *c,
                              const tcp_seg *s)
{
    /* a SYN-ACK sent from a cookie was never timed */
    tcp_establish(st, c, s, c->iss + 1, (uint32_t)s->wnd << c->snd_ws,
                  c->rtt_at != 0);
    if ((c->flags & TF_PASSIVE) && (c->tfo & TFO_DATA)) {
        conn_pend(st, c, TF_OUTPUT);        /* Fast Open: told at the SYN */
        return true;
    }
    if (c->flags & TF_APP) {                /* simultaneous open */
        uint32_t gen = c->gen;
        if (st->cfg.cb.connected)
            st->cfg.cb.connected(st, c, c->user);
        return c->gen == gen;
    }
    c->flags |= TF_APP;
    uint32_t gen = c->gen;
    void *lu = c->user;
    if (st->cfg.cb.accepted) {
        void *u = st->cfg.cb.accepted(st, c, lu);
        if (c->gen != gen)
            return false;
        c->user = u;
    }
    conn_pend(st, c, TF_OUTPUT);
    return true;
}

static bool rcv_fin(tern_stack *st, struct tern_conn *c)
{
    c->rcv_nxt++;
    c->flags |= TF_FIN_RCVD;
    conn_pend(st, c, TF_ACK_NOW);
    switch (c->state) {
    case TERN_TCP_ESTABLISHED:
        conn_set_state(st, c, TERN_TCP_CLOSE_WAIT);
        break;
    case TERN_TCP_FIN_WAIT_1:
        conn_set_state(st, c, TERN_TCP_CLOSING);
        break;
    case TERN_TCP_FIN_WAIT_2:
        tcp_enter_time_wait(st, c);         /* the slot is freed */
        return false;
    default:
        break;
    }
    if ((c->flags & (TF_APP | TF_APP_CLOSED | TF_CLOSED_CB)) == TF_APP &&
        st->cfg.cb.peer_closed) {
        uint32_t gen = c->gen;
        st->cfg.cb.peer_closed(st, c, c->user);
        if (c->gen != gen)
            return false;
    }
    tcp_rearm(st, c);
    return true;
}

/* After a loss the sender's window is small and it may send one segment
 * at a time; a delayed ACK would then stall it for the whole delack time
 * per segment. So for a while after out-of-order data every segment is
 * ACKed at once (as Linux's quick-ACK mode does). */
#define QUICKACK_SEGS 32

static inline void ack_policy(tern_stack *st, struct tern_conn *c, bool now)
{
    struct tcp_layer *tl = TL(st);
    if (c->quickacks) {
        c->quickacks--;
        now = true;
    }
    /* One ACK at the end of the input burst (run_pending), and inside a
     * long burst one every few segments at once: a lost ACK must not
     * leave the sender nothing to go on when its whole flight came in one
     * burst. So every TCP_ACK_STRETCH_SEGS full segments; but in a burst
     * of cfg.rx_burst frames or more (a driver that fills its bursts
     * has more queued: the flight spans bursts, each of which draws its
     * own ACK) one per ack_stretch bytes, a quarter window, at most
     * 64 KiB: one per burst in bulk, an eighth of the pure ACKs, where
     * ACKs every 4 segments cost bulk over the mem link 15%. The pieces
     * of one LRO frame are one segment on the wire, as a GRO packet is to
     * Linux: they get one ACK, after the last piece. */
    if (c->rcv_unacked >= tl->burst_stretch && !tl->in_chain) {
        tcp_send_ack(st, c);
        return;
    }
    if (now || !tl->delack || c->rcv_unacked >= 2u * c->rcv_mss)
        conn_pend(st, c, TF_ACK_NOW);
    else
        conn_pend(st, c, TF_ACK_DELAYED);
}

static void rcv_data(tern_stack *st, struct tern_conn *c, tcp_seg *s)
{
    uint32_t seq = s->seq, len = s->len;
    uint8_t *p = s->payload;
    bool fin = (s->flags & TCP_FIN) != 0;
    if (c->state != TERN_TCP_ESTABLISHED && c->state != TERN_TCP_FIN_WAIT_1 &&
        c->state != TERN_TCP_FIN_WAIT_2) {
        conn_pend(st, c, TF_ACK_NOW);
        return;
    }
    bool dup = false;
    if (seq_lt(seq, c->rcv_nxt)) {            /* old bytes in front */
        uint32_t d = c->rcv_nxt - seq;
        if (d > len) {                        /* FIN is old too */
            if (len) {
                CTR(st, tcp_dup_data_in);
                sack_note_dup(st, c, seq, seq + len);
            }
            conn_pend(st, c, TF_ACK_NOW);
            return;
        }
        if (d) {
            CTR(st, tcp_dup_data_in);
            sack_note_dup(st, c, seq, c->rcv_nxt);
            dup = true;                       /* its D-SACK at once */
        }
        p += d;
        len -= d;
        seq += d;
    }
    uint32_t edge = c->rcv_adv;
    if (seq_gt(seq + len, edge)) {            /* beyond our window */
        len = seq_gt(edge, seq) ? edge - seq : 0;
        fin = false;
        conn_pend(st, c, TF_ACK_NOW);
    }
    if (len == 0 && !fin) {
        conn_pend(st, c, TF_ACK_NOW);
        return;
    }
    if (seq != c->rcv_nxt) {                  /* a hole before it */
        c->quickacks = QUICKACK_SEGS;
        /* Out-of-order data is ACKed every second segment inside the
         * burst, and a segment that starts a new block first sends the
         * ACK owed for the arrivals before it: one ACK per burst would
         * tell the sender of several holes at once, or of none if it is
         * lost, and its loss detection then resends data we hold. */
        if ((c->flags & TF_ACK_NOW) && seq != c->rsack[0][1])
            tcp_send_ack(st, c);
        ooo_insert(st, c, s->buf, p, seq, len, fin);
        s->buf = NULL;
        c->rcv_unacked += len;
        if (c->rcv_unacked >= 2u * c->rcv_mss)
            tcp_send_ack(st, c);
        else
            conn_pend(st, c, TF_ACK_NOW);
        return;
    }
    bool filled = c->ooo_head != NULL;
    if (len && !tcp_deliver(st, c, s->buf, p, len))
        return;
    tern_buf *b;
    uint32_t l2;
    bool f2 = false;
    while (!fin && (b = ooo_pop(st, c, &p, &l2, &f2))) {
        bool ok = !l2 || tcp_deliver(st, c, b, p, l2);
        tern_buf_release(st, b);
        if (!ok)
            return;
        fin = f2;
    }
    if (fin && !rcv_fin(st, c))
        return;
    ack_policy(st, c, filled || fin || dup);
}

void tcp_input_sync(tern_stack *st, struct tern_conn *c, tcp_seg *s)
{
    struct tcp_layer *tl = TL(st);
    uint8_t fl = s->flags;
    if (c->state == TERN_TCP_SYN_RECEIVED && (fl & TCP_SYN) &&
        !(fl & TCP_RST) && s->seq == c->irs) {
        /* the peer's SYN again: our SYN-ACK was lost, or (with an
         * acceptable ACK) the SYN-ACK of a simultaneous open */
        if ((fl & TCP_ACK) && seq_gt(s->ack, c->snd_una) &&
            seq_le(s->ack, c->snd_max)) {
            if (establish_passive(st, c, s))
                conn_pend(st, c, TF_ACK_NOW | TF_OUTPUT);
        } else {
            tcp_send_syn(st, c);
        }
        return;
    }
    if ((c->flags & TF_TS) && (s->o.has & OPT_TS) && !(fl & TCP_RST) &&
        seq_lt(s->o.tsval, c->ts_recent)) {
        /* RFC 7323 5.3. A pure ACK below snd_una is an old ACK that a
         * newer one overtook (a Linux peer's ACKs sent from two CPUs
         * take two per-CPU queues on a veth): it carries nothing new, so
         * it is dropped without the ACK, as Linux does. */
        if (!s->len && !(fl & (TCP_SYN | TCP_FIN)) && (fl & TCP_ACK) &&
            seq_lt(s->ack, c->snd_una)) {
            CTR(st, tcp_drop_paws_old_ack);
            return;
        }
        CTR(st, tcp_drop_paws);
        conn_pend(st, c, TF_ACK_NOW);
        return;
    }
    if (!acceptable(c, s)) {
        if (fl & TCP_RST) {
            CTR(st, tcp_drop_out_of_window);
            return;
        }
        if (s->len && seq_le(s->seq + s->len, c->rcv_nxt)) {
            CTR(st, tcp_dup_data_in);
            sack_note_dup(st, c, s->seq, s->seq + s->len);
        } else {
            CTR(st, tcp_drop_out_of_window);
        }
        conn_pend(st, c, TF_ACK_NOW);
        return;
    }
    c->last_rcv = st->now;
    /* RFC 6093: urgent data stays inline and the pointer is not used; an
     * application learns of it only from this count (docs/tcp.md) */
    if (fl & TCP_URG)
        CTR(st, tcp_urg_in);
    if (fl & TCP_RST) {                       /* RFC 5961 3.2 */
        if (s->seq == c->rcv_nxt)
            reset_conn(st, c);
        else
            tcp_challenge_ack(st, c);
        return;
    }
    if (fl & TCP_SYN) {                       /* RFC 5961 4.2 */
        tcp_challenge_ack(st, c);
        return;
    }
    if (!(fl & TCP_ACK)) {
        CTR(st, tcp_drop_flags);
        return;
    }
    /* RFC 7323 4.3, from segments that get past the RST, SYN and ACK
     * checks only (as Linux): an exact-sequence SYN, RST or flagless
     * segment with a far-ahead TSval would otherwise make PAWS drop the
     * peer's every later segment */
    if ((c->flags & TF_TS) && (s->o.has & OPT_TS) &&
        seq_le(s->seq, c->last_ack_sent))
        c->ts_recent = s->o.tsval;
    uint32_t gen = c->gen;
    if (c->state == TERN_TCP_SYN_RECEIVED) {
        if (!seq_gt(s->ack, c->snd_una) || seq_gt(s->ack, c->snd_max)) {
            CTR(st, tcp_drop_bad_ack);
            tcp_send_rst_reply(st, s);
            return;
        }
        if (!establish_passive(st, c, s))
            return;
    }
    if (!tcp_ack(st, c, s) || c->gen != gen)
        return;
    if (s->len || (fl & TCP_FIN))
        rcv_data(st, c, s);
    (void)tl;
}

/*
 * What the fast path reads of a segment: a parsed tcp_seg, or the usual
 * segment's header in place (tcp_input_raw: a TCP_TS_HDR_LEN header with
 * the timestamp layout, neither SYN nor RST, already checked). The one
 * body below is inlined into both entries with `raw` a constant, so the
 * raw one loads each field where it is used instead of copying the header
 * into a tcp_seg first.
 */
typedef struct seg_ref {
    const tcp_seg *s;         /* !raw */
    const uint8_t *h;         /* raw: the TCP header (b->data) */
    tern_buf *b;              /* the segment's buffer */
    uint32_t len;             /* payload bytes */
    bool raw;
} seg_ref;

static inline uint8_t ref_flags(seg_ref r)
{
    return r.raw ? r.h[13] : r.s->flags;
}
static inline uint32_t ref_seq(seg_ref r)
{
    return r.raw ? rd32(r.h + 4) : r.s->seq;
}
static inline uint32_t ref_ack(seg_ref r)
{
    return r.raw ? rd32(r.h + 8) : r.s->ack;
}
static inline uint32_t ref_wnd(seg_ref r)
{
    return r.raw ? rd16(r.h + 14) : r.s->wnd;
}
static inline uint8_t *ref_payload(seg_ref r)
{
    return r.raw ? r.b->data + TCP_TS_HDR_LEN : r.s->payload;
}
static inline uint8_t ref_opts(seg_ref r)
{
    return r.raw ? OPT_TS : r.s->o.has;
}
static inline uint32_t ref_tsval(seg_ref r)
{
    return r.raw ? rd32(r.h + TCP_HDR_LEN + 4) : r.s->o.tsval;
}
static inline uint32_t ref_tsecr(seg_ref r)
{
    return r.raw ? rd32(r.h + TCP_HDR_LEN + 8) : r.s->o.tsecr;
}

/*
 * Header prediction (Van Jacobson's, as RFC 9293 3.10.7.4's processing
 * reduces to for the common case). The segment an established connection
 * expects next: in sequence, flags ACK (with or without PSH), the usual
 * timestamp option and no other, an ACK that is either new or (with data)
 * the same, nothing unusual on our side (no recovery, no SACK scoreboard,
 * no out-of-order data), and the data inside our window. For such a
 * segment most checks of the general path are decided in advance: PAWS
 * passes, it is acceptable, no RST/SYN, no SACK, no duplicate ACK, no
 * trimming, no reassembly, no FIN. Unlike the classic prediction the
 * peer's window may change: receivers that avoid silly windows (RFC 9293
 * 3.8.6.2.2, tern included) announce a slightly different window in
 * nearly every segment of a request/response exchange, and a segment that
 * is new data or a new ACK cannot be a duplicate ACK, so the update is
 * just the SND.WL1/WL2 rule. not: flags that rule prediction out (the raw
 * IPv4 path adds TF_V6: a source in 0/8, which it has not tested yet,
 * could match an IPv6 conn's key).
 */
static inline bool tcp_predicted(const struct tern_conn *c, seg_ref r,
                                 uint32_t not)
{
    uint32_t seq = ref_seq(r), ack = ref_ack(r);
    if (c->state != TERN_TCP_ESTABLISHED ||
        (ref_flags(r) & (TCP_SYN | TCP_FIN | TCP_RST | TCP_URG | TCP_ACK)) !=
            TCP_ACK ||
        seq != c->rcv_nxt || (c->flags & not) || c->nsb)
        return false;
    if (c->flags & TF_TS) {
        if (ref_opts(r) != OPT_TS || seq_lt(ref_tsval(r), c->ts_recent))
            return false;
    } else if (ref_opts(r) & (OPT_TS | OPT_SACK)) {
        return false;
    }
    /* the ACK: new (at most snd_max), or unchanged on a data segment */
    if (ack == c->snd_una ? r.len == 0
                          : !seq_gt(ack, c->snd_una) || seq_gt(ack, c->snd_max))
        return false;
    /* the data inside the window we advertised */
    return !r.len || (seq_lt(seq, c->rcv_adv) &&
                      seq_le(seq + r.len, c->rcv_adv));
}

#if defined(__GNUC__)
#define COLD_PATH __attribute__((noinline, cold))
#else
#define COLD_PATH
#endif
/* tcp_new_ack_general for a raw segment (b: its buffer), which needs a
 * tcp_seg. Out of line: the raw path then keeps none on its stack. */
static COLD_PATH bool raw_new_ack_general(tern_stack *st, struct tern_conn *c,
                                          tern_buf *b)
{
    tcp_seg s;
    seg_fields(&s, b, b->len, TCP_TS_HDR_LEN, c->raddr);
    seg_ts_opts(&s, b->data + TCP_HDR_LEN);
    return tcp_new_ack_general(st, c, &s);
}

/* A new ACK on the fast path (tsecr: the segment's echo). A raw segment
 * has no tcp_seg for the general ACK path: one is made for it there.
 * false: the conn is gone. */
static HOT_INLINE bool fast_new_ack(tern_stack *st, struct tern_conn *c,
                                    seg_ref r, uint32_t ack, uint32_t tsecr)
{
    /* prediction took a segment with timestamps only for a TF_TS conn */
    if (acks_whole_flight(c, ack))
        return ack_whole_flight(st, c, ack, (ref_opts(r) & OPT_TS) != 0,
                                tsecr);
    if (!r.raw)
        return tcp_new_ack_general(st, c, r.s);
    return raw_new_ack_general(st, c, r.b);
}

/* What tcp_input_sync, tcp_ack and rcv_data do for a predicted segment,
 * in the same order, without the decisions prediction already made. For
 * a raw one, also what tcp_input counts first. */
static HOT_INLINE void fast_body(tern_stack *st, struct tern_conn *c,
                                 seg_ref r)
{
    /* the fields before any store: a store through c may alias the
     * header as far as the compiler knows, so the values prediction
     * loaded are reused only if nothing was stored in between */
    uint32_t seq = c->rcv_nxt;          /* the segment's, as predicted */
    uint32_t ack = ref_ack(r), wnd = ref_wnd(r), tsval = ref_tsval(r);
    uint32_t tsecr = ref_tsecr(r);
    struct tcp_layer *tl = TL(st);
    if (r.raw) {
        CTR(st, tcp_in);
        tl->in_input = true;
    }
    tl->predicted++;
    c->last_rcv = st->now;
    if ((c->flags & TF_TS) && seq_le(seq, c->last_ack_sent))
        c->ts_recent = tsval;
    snd_wnd_update(st, c, seq, ack, wnd);
    /* In ESTABLISHED no FIN of ours is acked here, so a new ACK is
     * refused exactly when an app callback closed the conn: no gen check. */
    if (ack != c->snd_una && !fast_new_ack(st, c, r, ack, tsecr))
        return;
    if (r.len && tcp_deliver(st, c, r.b, ref_payload(r), r.len))
        ack_policy(st, c, false);
}

bool tcp_input_fast(tern_stack *st, struct tern_conn *c, tcp_seg *s)
{
    seg_ref r = {s, NULL, s->buf, s->len, false};
    if (!tcp_predicted(c, r, TF_RECOVERY | TF_OOO))
        return false;
    fast_body(st, c, r);
    return true;
}

bool tcp_input_raw(tern_stack *st, tern_buf *b, uint32_t src, uint32_t len,
                   uint32_t ps)
{
    enum { HDRS = ETH_HDR_LEN + IP4_HDR_LEN };
    /* one buffer (tcp_input_frame): no chain to sum. A bad sum: the
     * layered path drops and counts it, as tern_input would have had it
     * (then this function returns true on every path: no register keeps
     * the result) */
    if (!raw_sum_ok(st, b, len, ps)) {
        eth_input(st, b);
        return true;
    }
    CTR(st, ip_in);
    b->data += HDRS;
    b->len = len;                       /* Ethernet padding dropped */
    const uint8_t *h = b->data;
    struct tern_conn *c = conn_lookup_ports(st, src, rd32(h));
    seg_ref r = {NULL, h, b, b->len - TCP_TS_HDR_LEN, true};
    if (!c || TL(st)->no_predict ||
        !tcp_predicted(c, r, TF_RECOVERY | TF_OOO | TF_V6))
        return tcp_input_parsed(st, c, b, src);
    /* An established conn's peer passed ip4_src_ok (its SYN or SYN-ACK
     * came through ip4_input, a cookie's ACK through tcp_input_parsed),
     * and no conn has a zero port: the tests tcp_input_parsed makes. */
    fast_body(st, c, r);
    buf_release(st, b);
    return true;
}

bool tcp_input_frame6(tern_stack *st, tern_buf *b)
{
    enum { HDRS = ETH_HDR_LEN + IP6_HDR_LEN };
    struct tcp_layer *tl = TL(st);
    if (!tl || !ip6_common_fields(st, b, HDRS + TCP_TS_HDR_LEN, TCP_TS_HDR_LEN))
        return false;
    const uint8_t *h = b->data + ETH_HDR_LEN, *t = h + IP6_HDR_LEN;
    if (!tcp_common_shape(b, t))
        return false;
    uint32_t len = rd16(h + 4);
    /* prediction before the sum: a segment the layered path takes
     * anyway is summed there only */
    struct tern_conn *c = conn_lookup6(st, h + 8, h + 24, rd32(t));
    seg_ref r = {NULL, t, b, len - TCP_TS_HDR_LEN, true};
    if (!c || tl->no_predict || !tcp_predicted(c, r, TF_RECOVERY | TF_OOO) ||
        !ip6_conn_addr_ok(st->ip6, h + 24))
        return false;
    /* one buffer: no chain. The addresses lie right before the segment,
     * so one sum takes them and the segment, from the pseudo header's
     * other two words. A bad sum goes the layered way, which drops and
     * counts it. (The driver's RX_SUM also covers the rest of the IPv6
     * header, which, unlike IPv4's, does not sum to -0: not used.) */
    if (!csum_checked(st, b) &&
        tern_csum_partial(h + 8, 32 + len, IP_PROTO_TCP + len) != 0xffff)
        return false;
    CTR(st, ip6_in);
    b->data += HDRS;
    b->len = len;                       /* Ethernet padding dropped */
    fast_body(st, c, r);
    buf_release(st, b);
    return true;
}
