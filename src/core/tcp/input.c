/* input.c - the TCP entry points: segment validation and demux
 * (tcp_input), the end-of-burst pass that sends at most one ACK per
 * connection (tcp_input_done), timers (tcp_poll) and ICMP errors. */
#include "cc.h"

/* Validate the header and fill s; returns the counter of the drop reason
 * or NULL. len: the segment's bytes (more than b->len for a chain, whose
 * first buffer must hold the whole header); ps: its pseudo header's sum;
 * bcast: sent to a broadcast or multicast address; src: s->src. */
static uint64_t *parse(tern_stack *st, tern_buf *b, uint32_t len, uint32_t ps,
                       bool bcast, uint32_t src, tcp_seg *s)
{
    const uint8_t *h = b->data;
    if (b->len < TCP_HDR_LEN)
        return &st->ctr.tcp_drop_short;
    uint32_t doff = (uint32_t)(h[12] >> 4) * 4;
    if (doff < TCP_HDR_LEN || doff > b->len)
        return &st->ctr.tcp_drop_hdr_len;
    if (b->flags & TERN_BUF_RX_L4_CSUM_BAD)
        return &st->ctr.tcp_drop_csum;
    if (!csum_ok(st, b, h, len, ps))
        return &st->ctr.tcp_drop_csum;
    if (bcast)
        return &st->ctr.tcp_drop_no_conn;
    seg_fields(s, b, len, doff, src);
    if (!s->sport || !s->dport)
        return &st->ctr.tcp_drop_port0;
    if ((s->flags & TCP_SYN) && (s->flags & (TCP_FIN | TCP_RST)))
        return &st->ctr.tcp_drop_flags;
    const uint8_t *opt = h + TCP_HDR_LEN;
    if (doff == TCP_HDR_LEN + TCP_TS_LEN && rd32(opt) == TS_LAYOUT_WORD) {
        seg_ts_opts(s, opt);
    } else if (!tcp_opts_parse(opt, doff - TCP_HDR_LEN,
                               (s->flags & TCP_SYN) != 0, &s->o)) {
        return &st->ctr.tcp_drop_options;
    }
    return NULL;
}

/* A parsed segment to its connection c (or, NULL, to a listener or a
 * reset) without the prediction; the buffer reference in s->buf is
 * released unless a path kept it. */
static void segment_slow(tern_stack *st, struct tern_conn *c, tcp_seg *s)
{
    if (!c) {
        struct tcp_listener *l = listener_find(st, s->dport);
        uint32_t tw = twr_lookup_seg(st, s);
        if (tw != TCP_NIL) {
            twr_input(st, tw, s, l);
        } else if (l) {
            tcp_input_listen(st, s, l);
        } else {
            CTR(st, tcp_drop_no_conn);
            if (!(s->flags & TCP_RST))
                tcp_send_rst_reply(st, s);
        }
    } else if (c->state == TERN_TCP_SYN_SENT) {
        tcp_input_syn_sent(st, c, s);
    } else {
        tcp_input_sync(st, c, s);
    }
    if (s->buf)
        buf_release(st, s->buf);
}

/* One parsed segment to its connection: predicted, or segment_slow. The
 * fast path keeps no buffer reference (the app takes its own). Inlined
 * into each caller: once per segment, no registers saved for it. */
static HOT_INLINE void segment(tern_stack *st, tcp_seg *s)
{
    struct tern_conn *c = conn_lookup_seg(st, s);
    if (c && !TL(st)->no_predict && tcp_input_fast(st, c, s))
        buf_release(st, s->buf);
    else
        segment_slow(st, c, s);
}

/*
 * A segment whose payload spans a chain of buffers (LRO/GRO merges, or a
 * scatter-gather NIC). Each buffer goes on as a segment of its own: the
 * same header, consecutive sequence numbers, FIN and PSH only on the last
 * piece. So every byte reaches the application in place, in its own
 * buffer, through the ordinary paths (in order, out of order, trimming),
 * and each buffer is released on its own. A SYN or RST is never merged by
 * LRO: of such a chain only the first buffer is used (the rest is not
 * acknowledged, so the peer sends it again).
 */
static void segment_chain(tern_stack *st, tcp_seg *s)
{
    tern_buf *b = s->buf;
    uint32_t left = s->len, seq = s->seq;
    uint8_t *p = s->payload;
    bool only_first = (s->flags & (TCP_SYN | TCP_RST)) != 0;
    while (b) {
        tern_buf *next = b->frag;
        b->frag = NULL;
        uint32_t n = (uint32_t)(b->data + b->len - p);
        if (n > left)
            n = left;
        left = only_first ? 0 : left - n;
        tcp_seg piece = *s;
        piece.buf = b;
        piece.payload = p;
        piece.len = n;
        piece.seq = seq;
        if (left)
            piece.flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
        TL(st)->in_chain = left != 0;
        if (n || !left)
            segment(st, &piece);
        else
            tern_buf_release(st, b);
        seq += n;
        b = next;
        if (!left) {
            tern_buf_release(st, b);        /* empty trailing buffers */
            return;
        }
        p = b ? b->data : NULL;
    }
    TL(st)->in_chain = false;               /* a chain shorter than len */
}

/* A parsed segment (or a drop counted) of either family. */
static HOT_INLINE void input_seg(tern_stack *st, tern_buf *b, tcp_seg *s,
                                 uint64_t *drop)
{
    if (drop) {
        (*drop)++;
        tern_buf_release(st, b);
        return;
    }
    if (s->flags & TCP_RST)
        CTR(st, tcp_rst_in);
    if (b->frag)
        segment_chain(st, s);
    else
        segment(st, s);
}

void tcp_input(tern_stack *st, tern_buf *b, const ip4_rx *ip)
{
    tcp_seg s;
    CTR(st, tcp_in);
    TL(st)->in_input = true;
    uint32_t len = b->frag ? buf_chain_len(b) : b->len;
    input_seg(st, b, &s,
              parse(st, b, len,
                    ip4_pseudo_sum32(ip->src, ip->dst, IP_PROTO_TCP, len),
                    ip->broadcast, ip->src, &s));
}

/* From ip6_input (which refused sources that are not unicast and
 * destinations that are not ours). The segment takes the paths of an
 * IPv4 one, with s.ip6 naming its addresses. */
void tcp_input6(tern_stack *st, tern_buf *b, const ip6_rx *ip)
{
    struct tcp_layer *tl = TL(st);
    if (!tl) {
        tern_buf_release(st, b);
        return;
    }
    tcp_seg s;
    CTR(st, tcp_in);
    tl->in_input = true;
    uint32_t len = b->frag ? buf_chain_len(b) : b->len;
    uint64_t *drop = parse(st, b, len,
                           ip6_pseudo_sum(ip->src, ip->dst, IP_PROTO_TCP, len),
                           ip->multicast, conn_fold6(tl, ip->src), &s);
    s.ip6 = ip;
    input_seg(st, b, &s, drop);
}

bool tcp_input_frame(tern_stack *st, tern_buf *b)
{
    enum { HDRS = ETH_HDR_LEN + IP4_HDR_LEN };
    struct tcp_layer *tl = TL(st);
    const uint8_t *h = b->data + ETH_HDR_LEN, *t = b->data + HDRS;
    /* cheap field tests of all headers before either sum, so a segment the
     * layered path takes anyway (SYN, no timestamps) is not summed twice */
    if (!tl ||
        !ip4_common_fields(st, b, HDRS + TCP_TS_HDR_LEN,
                           IP4_HDR_LEN + TCP_TS_HDR_LEN) ||
        !tcp_common_shape(b, t))
        return tcp_input_frame6(st, b);     /* a tail call, false at once
                                               for anything but IPv6 */
    uint32_t src = rd32(h + 12), len = rd16(h + 2) - IP4_HDR_LEN;
    if (!ip4_common_sum(st, b, h))
        return false;
    /* a tail call: nothing of this frame stays live, and this function
     * calls nothing, so saves no registers; the TCP sum is summed there,
     * where the registers kept across its call are saved anyway */
    return tcp_input_raw(st, b, src, len,
                         ip4_pseudo_sum32(src, rd32(h + 16), IP_PROTO_TCP, len));
}

bool tcp_input_parsed(tern_stack *st, struct tern_conn *c, tern_buf *b,
                      uint32_t src)
{
    /* the tests ip4_input and parse would have made before */
    if (!ip4_src_ok(st, src)) {
        CTR(st, ip_drop_bad_src);
        buf_release(st, b);
        return true;
    }
    CTR(st, tcp_in);
    TL(st)->in_input = true;
    tcp_seg s;
    seg_fields(&s, b, b->len, TCP_TS_HDR_LEN, src);
    if (!s.sport || !s.dport) {
        CTR(st, tcp_drop_port0);
        buf_release(st, b);
        return true;
    }
    seg_ts_opts(&s, b->data + TCP_HDR_LEN);
    segment_slow(st, c, &s);
    return true;
}

static void run_pending(tern_stack *st)
{
    struct tcp_layer *tl = TL(st);
    struct tern_conn *c;
    /* a pointer list: no index to scale per conn; pend_next is only read
     * while TF_PENDING is set, and conn_pend writes it with the flag */
    while ((c = tl->pend_head) != NULL) {
        tl->pend_head = c->pend_next;
        /* PENDING and (unless closed) OUTPUT cleared in one store */
        uint32_t f = c->flags & ~(uint32_t)TF_PENDING;
        if (c->state == TERN_TCP_CLOSED) {
            c->flags = f;
            continue;
        }
        c->flags = f & ~(uint32_t)TF_OUTPUT;
        if (f & TF_OUTPUT)
            tcp_output(st, c);
        if (c->flags & (TF_ACK_NOW | TF_WND_UPDATE)) {
            tcp_send_ack(st, c);
        } else if ((c->flags & TF_ACK_DELAYED) && c->t_ack == TERN_NEVER) {
            c->t_ack = st->now + tl->delack_ns;
            conn_timer_update(st, c);
        }
    }
}

void tcp_input_begin(tern_stack *st, unsigned n)
{
    struct tcp_layer *tl = TL(st);
    if (tl)                         /* see ack_policy (input_estab.c) */
        tl->burst_stretch = n >= st->cfg.rx_burst ? tl->ack_stretch
                                                   : tl->short_stretch;
}

void tcp_input_done(tern_stack *st)
{
    struct tcp_layer *tl = TL(st);
    if (!tl)
        return;
    tl->in_input = false;
    run_pending(st);
    tcp_send_wake_check(st);
}

uint64_t tcp_poll(tern_stack *st, uint64_t now)
{
    struct tcp_layer *tl = TL(st);
    if (!tl)
        return TERN_NEVER;
    run_pending(st);
    uint64_t next = tw_run(st, now, tcp_timer_fire);
    run_pending(st);
    uint64_t t = twr_poll(st, now);
    tcp_send_wake_check(st);
    return t < next ? t : next;
}

/* What an ICMP error of either family does to conn c: the quoted
 * sequence number seq must be data in flight (RFC 5927); mss: the largest
 * segment (without options) the path takes, 0 when the error is no
 * Packet Too Big; hard: an unreachable that ends an active open. */
static void icmp_error_conn(tern_stack *st, struct tern_conn *c, uint32_t seq,
                            uint32_t mss, bool hard)
{
    /* RFC 5927: only errors quoting data we have in flight */
    if (c->state != TERN_TCP_SYN_SENT &&
        (seq_lt(seq, c->snd_una) || seq_ge(seq, c->snd_max))) {
        CTR(st, icmp_drop_quote_seq);
        return;
    }
    if (mss) {
        if (c->flags & TF_TS)
            mss -= TCP_TS_LEN;
        if (mss < TCP_MSS_FLOOR)
            mss = TCP_MSS_FLOOR;
        if (mss < c->mss) {
            c->mss = (uint16_t)mss;
            if (c->snd_max != c->snd_una)
                tcp_retransmit(st, c, c->snd_una, c->mss);
        }
        return;
    }
    if (hard && c->state == TERN_TCP_SYN_SENT) {
        CTR(st, tcp_attempt_fails);
        conn_close(st, c, TERN_CLOSE_REFUSED);
    }
}

void tcp_icmp_error(tern_stack *st, uint8_t type, uint8_t code, uint32_t mtu,
                    const uint8_t *q, uint32_t qlen)
{
    if (!TL(st) || qlen < IP4_HDR_LEN)
        return;
    uint32_t ihl = (uint32_t)(q[0] & 0xf) * 4;
    if (ihl < IP4_HDR_LEN || qlen < ihl + 8 || q[9] != IP_PROTO_TCP)
        return;
    const uint8_t *t = q + ihl;
    struct tern_conn *c = conn_lookup(st, rd32(q + 16), rd16(t + 2), rd16(t));
    if (!c || (c->flags & TF_V6))
        return;
    bool frag_needed = type == 3 && code == 4 && mtu >= 68;
    icmp_error_conn(st, c, rd32(t + 4),
                    frag_needed ? mtu - IP4_HDR_LEN - TCP_HDR_LEN : 0,
                    type == 3 && (code == 2 || code == 3));
}

/* An ICMPv6 error quoting an IPv6 segment of ours: Packet Too Big lowers
 * the MSS (never below what 1280 bytes carry); port or administratively
 * unreachable ends an active open (RFC 5461). The quote starts with our
 * fixed header (we send no extension headers); TCP follows it. */
void tcp_icmp6_error(tern_stack *st, uint8_t type, uint8_t code, uint32_t mtu,
                     const uint8_t *q, uint32_t qlen)
{
    if (!TL(st) || qlen < IP6_HDR_LEN + 8 || q[6] != IP_PROTO_TCP)
        return;
    const uint8_t *t = q + IP6_HDR_LEN;
    struct tern_conn *c = conn_lookup6(st, q + 24, q + 8,
                                       (uint32_t)rd16(t + 2) << 16 | rd16(t));
    if (!c)
        return;
    uint32_t path = mtu > IP6_MIN_MTU ? mtu : IP6_MIN_MTU;
    icmp_error_conn(st, c, rd32(t + 4),
                    type == ICMP6_PACKET_TOO_BIG ? path - TCP6_HDRS : 0,
                    type == ICMP6_UNREACH && (code == 1 || code == 4));
}
