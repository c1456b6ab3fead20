/* output.c - building and sending segments.
 *
 * A data segment never spans two send-queue buffers. It leaves either
 *  - in place: the queue buffer itself, with the TCP header written into its
 *    headroom and an extra reference for the driver, when the segment is the
 *    whole buffer and no earlier transmission of it is still held by the
 *    driver (refs == 1). tern_tcp_send copies user data once into MSS-sized
 *    buffers, so this buffer is both the retransmission copy and the frame;
 *  - or copied into a fresh buffer (partial segments, buffers still in
 *    flight).
 * The payload checksum of an in-place buffer is computed once and cached in
 * cb[1], so retransmissions only sum the header.
 */
#include "cc.h"


static inline uint32_t fold(uint32_t s)
{
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return s;
}

uint32_t tcp_copy_csum(uint8_t *dst, const uint8_t *src, uint32_t len)
{
    return tern_csum_copy(dst, src, len, 0);
}

/* Every segment that carries an ACK pays the owed ACK, and the right
 * edge we advertise may move up to edge. */
static inline void ack_sent(struct tern_conn *c, uint32_t edge)
{
    c->last_ack_sent = c->rcv_nxt;
    c->rcv_unacked = 0;
    /* a segment left: TF_LONE's promise ends (tcp_lone_ready) */
    c->flags &= ~(uint32_t)(TF_ACK_NOW | TF_ACK_DELAYED | TF_WND_UPDATE |
                            TF_LONE);
    c->t_ack = TERN_NEVER;
    if (seq_gt(edge, c->rcv_adv))
        c->rcv_adv = edge;
}

/* The window field of an established segment with ACK (no SYN), and
 * ack_sent. */
static inline uint32_t ack_fields_est(const struct tcp_layer *tl,
                                      struct tern_conn *c)
{
    uint32_t edge, wnd = tcp_wnd_field(tl, c, &edge);
    ack_sent(c, edge);
    return wnd;
}

/* The window field for any flags (a SYN's is not scaled), and ack_sent
 * when the segment carries an ACK. */
static uint32_t ack_fields(struct tcp_layer *tl, struct tern_conn *c,
                           uint8_t flags)
{
    if ((flags & (TCP_SYN | TCP_ACK)) == TCP_ACK)
        return ack_fields_est(tl, c);
    uint32_t wnd = tcp_rcv_window(tl, c);
    if (flags & TCP_SYN)
        wnd = wnd > 65535 ? 65535 : wnd;
    else
        wnd = (wnd >> c->rcv_ws) > 65535 ? 65535 : wnd >> c->rcv_ws;
    if (flags & TCP_ACK)            /* SYN-ACK */
        ack_sent(c, c->rcv_nxt + wnd);
    return wnd;
}

/* The general path: any flags and options (SYN, SACK blocks), and
 * connection views without a table slot (raw_send). Fills TCP header +
 * options in front of b->data (len bytes of payload there), checksums and
 * hands the segment to IP. psum: the payload's partial sum. */
static void xmit_slow(tern_stack *st, struct tern_conn *c, tern_buf *b,
                      uint32_t seq, uint8_t flags, uint32_t len, uint32_t psum)
{
    struct tcp_layer *tl = TL(st);
    uint8_t opt[40];
    uint32_t olen;
    uint32_t tsval = ts_now(st->now) + c->ts_off;
    if (flags & TCP_SYN) {
        bool active = c->state == TERN_TCP_SYN_SENT;
        bool ws = active ? tl->ws : (c->flags & TF_WS) != 0;
        bool sack = active ? tl->sack : (c->flags & TF_SACK) != 0;
        bool ts = active ? tl->ts : (c->flags & TF_TS) != 0;
        olen = tcp_opts_syn(opt, conn_our_mss(tl, c), ws ? c->rcv_ws : -1,
                            sack, ts, tsval, c->ts_recent);
        if (c->tfo)                 /* at most 20 bytes, as those above */
            olen += tfo_syn_option(st, c, opt + olen);
    } else {
        uint32_t blocks[4][2], nb = 0;
        /* the blocks ride in the room the payload leaves: a full segment
         * plus blocks would pass the MTU (c->mss counts only the TS
         * option) and be dropped */
        uint32_t room = len < c->mss ? c->mss - len : 0;
        uint32_t fit = room >= 12 ? (room - 4) / 8 : 0;
        if (fit > ((c->flags & TF_TS) ? 3u : 4u))
            fit = (c->flags & TF_TS) ? 3u : 4u;
        if (sack_out(c) && fit) {
            nb = sack_blocks(c, blocks, fit);
            if (c->flags & TF_DSACK) {      /* reported once */
                c->flags &= ~(uint32_t)TF_DSACK;
                CTR(st, tcp_dsacks_out);
            }
        }
        olen = tcp_opts_est(opt, (c->flags & TF_TS) != 0, tsval, c->ts_recent,
                            (const uint32_t(*)[2])blocks, nb);
    }
    uint32_t hlen = TCP_HDR_LEN + olen;
    b->data -= hlen;
    b->len = hlen + len;
    uint8_t *h = b->data;
    wr16(h, c->lport);
    wr16(h + 2, c->rport);
    wr32(h + 4, seq);
    uint32_t wnd = ack_fields(tl, c, flags);
    wr32(h + 8, (flags & TCP_ACK) ? c->rcv_nxt : 0);
    h[12] = (uint8_t)(hlen << 2);
    h[13] = flags;
    wr16(h + 14, (uint16_t)wnd);
    wr16(h + 16, 0);
    wr16(h + 18, 0);
    tern_memcpy(h + TCP_HDR_LEN, opt, olen);
    bool v6 = (c->flags & TF_V6) != 0;
    uint32_t ps = v6 ? ip6_pseudo_sum(c->laddr6, c->raddr6, IP_PROTO_TCP,
                                      hlen + len)
                     : ip4_pseudo_sum(st->cfg.ip, c->raddr, IP_PROTO_TCP,
                                      hlen + len);
    b->flags &= (uint16_t)~(TERN_BUF_TX_L4_CSUM | TERN_BUF_TX_TSO |
                            TERN_BUF_TX_IP_CSUM);
    if (st->cfg.caps & TERN_CAP_TX_L4_CSUM) {
        b->flags |= TERN_BUF_TX_L4_CSUM;
        b->l4_len = (uint8_t)hlen;
        wr16(h + 16, (uint16_t)fold(ps));
    } else {
        uint32_t s = tern_csum_partial(h, hlen, fold(ps) + psum);
        wr16(h + 16, (uint16_t)~fold(s));
    }
    CTR(st, tcp_out);
    if (v6)
        ip6_output(st, b, c->laddr6, c->raddr6, IP_PROTO_TCP, 0, c->flow6);
    else
        ip4_output_id(st, b, st->cfg.ip, c->raddr, IP_PROTO_TCP, 0,
                      tcp_ip_id(c));
}

/* The sum every segment's TCP checksum starts from: the pseudo header
 * without its length (ps), the ports, and the TS option's kind/length
 * when TF_TS. */
static uint32_t tmpl_tcp_sum(const struct tern_conn *c, uint32_t ps)
{
    return csum_fold64((uint64_t)ps + c->lport + c->rport +
                       ((c->flags & TF_TS) ? 0x0101u + 0x080au : 0));
}

/* The template's Ethernet header, to mac. */
static void tmpl_eth(tern_stack *st, struct tern_conn *c, const uint8_t *mac,
                     uint16_t type)
{
    tern_memcpy(c->tx_hdr, mac, 6);
    tern_memcpy(c->tx_hdr + 6, st->cfg.mac, 6);
    wr16(c->tx_hdr + 12, type);
}

/* When the conn moved forward since its template was last built (an ACK
 * took snd_una on, or in-order data rcv_nxt), the time of its last
 * segment: the next hop's neighbor entry is confirmed then (RFC 4861
 * 7.3.1). Asked only when the template expires, which a reachable entry
 * makes happen at half its reachable time: nothing per segment. 0 when
 * there was no progress, or no template before. */
static uint64_t tmpl_progress(struct tern_conn *c)
{
    uint32_t mark = c->snd_una + c->rcv_nxt;
    bool moved = c->tx_arp_until && mark != c->tx_progress;
    c->tx_progress = mark;
    return moved ? c->last_rcv : 0;
}

/* tmpl_build for an IPv6 conn: Ethernet, the fixed header with the flow
 * label and both addresses (no extension headers), the ports; the next
 * hop's MAC from neighbor discovery. */
static bool tmpl_build6(tern_stack *st, struct tern_conn *c)
{
    const uint8_t *nh = ip6_next_hop(st, c->raddr6);
    uint64_t until = 0;
    const uint8_t *mac = nh ? nd6_cached(st, nh, &until, tmpl_progress(c)) : NULL;
    if (!mac)
        return false;
    uint8_t *ip = c->tx_hdr + ETH_HDR_LEN;
    tmpl_eth(st, c, mac, ETH_TYPE_IPV6);
    wr32(ip, 0x60000000u | (c->flow6 & 0xfffff));  /* version, class, flow */
    wr32(ip + 4, IP_PROTO_TCP << 8 | IP6_HOP_LIMIT);  /* length 0 */
    /* ip + 8: laddr6 and raddr6, in place */
    wr16(ip + IP6_HDR_LEN, c->lport);
    wr16(ip + IP6_HDR_LEN + 2, c->rport);
    c->tx_tcp_sum = tmpl_tcp_sum(
        c, ip6_pseudo_sum(c->laddr6, c->raddr6, IP_PROTO_TCP, 0));
    c->tx_arp_gen = st->arp_gen;
    c->tx_arp_until = until;
    return true;
}

/* Build the conn's transmit template; false while the next hop's MAC is
 * unknown (the slow path then queues the segment and asks ARP or ND). */
static bool tmpl_build(tern_stack *st, struct tern_conn *c)
{
    if (c->flags & TF_V6)
        return tmpl_build6(st, c);
    uint32_t nh = ip4_is_local(st, c->raddr) ? c->raddr : st->cfg.gateway;
    uint64_t until = 0;
    const uint8_t *mac = nh ? arp_cached(st, nh, &until, tmpl_progress(c)) : NULL;
    if (!mac)
        return false;
    uint8_t *ip = c->tx_hdr + ETH_HDR_LEN;
    tmpl_eth(st, c, mac, ETH_TYPE_IPV4);
    wr32(ip, 0x45000000u);                  /* version, IHL, TOS, length */
    wr32(ip + 4, IP_FLAG_DF);               /* id, DF */
    ip[8] = IP_TTL;
    ip[9] = IP_PROTO_TCP;
    wr16(ip + 10, 0);
    wr32(ip + 12, st->cfg.ip);
    wr32(ip + 16, c->raddr);
    c->tx_ip_sum = ip4_hdr_sum(ip);
    wr16(ip + IP4_HDR_LEN, c->lport);
    wr16(ip + IP4_HDR_LEN + 2, c->rport);
    c->tx_tcp_sum =
        tmpl_tcp_sum(c, ip4_pseudo_sum(st->cfg.ip, c->raddr, IP_PROTO_TCP, 0));
    c->tx_arp_gen = st->arp_gen;
    c->tx_arp_until = until;
    return true;
}

static bool tmpl_ready(tern_stack *st, struct tern_conn *c)
{
    return (c->tx_arp_gen == st->arp_gen && st->now < c->tx_arp_until) ||
           tmpl_build(st, c);
}

/* xmit_fast's flags and payload partial sum (folded, <= 0xffff) in one
 * argument, flags in bits 16-23 where they sit in the header's word at
 * offset 12: six arguments travel in registers. */
static inline uint32_t flags_sum(uint8_t flags, uint64_t psum)
{
    return (uint32_t)flags << 16 | (uint32_t)psum;
}

/* Built once for each header layout (with and without timestamps), so
 * that each copy has its header length as a constant. */
#if defined(__GNUC__)
#define LAYOUT_INLINE inline __attribute__((always_inline))
#else
#define LAYOUT_INLINE inline
#endif

/*
 * The fast path of every established segment without SACK blocks: the
 * headers are the template plus a handful of 32-bit stores (the usual
 * NOP NOP TS layout), the TCP checksum is summed from the values being
 * stored (plus the cached payload sum) rather than read back, the IPv4
 * checksum is the template's sum plus length and id, and the frame goes
 * straight to the transmit burst. IPv6 (v6: c->flags has TF_V6): the
 * fixed header's payload length is the only store, no header sum, no ID.
 * ts: c->flags has TF_TS. fs: flags_sum;
 * the flags have ACK and not SYN (xmit sends anything else the slow way).
 * may_tso false: the caller has just set b->tso_mss to 0 (the byte stores
 * of the header would otherwise make gcc read it back).
 */
static LAYOUT_INLINE void xmit_layout_wnd(tern_stack *st,
                                          struct tern_conn *c, tern_buf *b,
                                          uint32_t seq, uint32_t len,
                                          uint32_t fs, bool ts, bool v6,
                                          uint32_t wnd, bool may_tso)
{
    uint32_t hlen = TCP_HDR_LEN + (ts ? TCP_TS_LEN : 0);
    uint32_t l3 = v6 ? IP6_HDR_LEN : IP4_HDR_LEN;
    uint32_t l4 = hlen + len;
    uint32_t own = b->frag ? 0 : len;       /* payload in b itself */
    uint32_t ack = c->rcv_nxt;
    uint32_t offw = hlen << 26 | (fs & 0xff0000u) | wnd;
    uint16_t id = v6 ? 0 : tcp_ip_id(c);
    b->data -= ETH_HDR_LEN + l3 + hlen;
    b->len = ETH_HDR_LEN + l3 + hlen + own;
    uint8_t *h = b->data, *ip = h + ETH_HDR_LEN, *t = ip + l3;
    tern_memcpy(h, c->tx_hdr, v6 ? TCP_TMPL6_LEN : TCP_TMPL_LEN);
    if (v6) {
        wr16(ip + 4, (uint16_t)l4);
    } else {
        wr16(ip + 2, (uint16_t)(IP4_HDR_LEN + l4));
        wr16(ip + 4, id);
    }
    wr32(t + 4, seq);
    wr32(t + 8, ack);
    wr32(t + 12, offw);
    /* offw + payload sum, as the fields do not overlap */
    uint64_t sum = (uint64_t)c->tx_tcp_sum + l4 + seq + ack +
                   (hlen << 26 | wnd) + fs;
    if (ts) {
        uint32_t tsval = ts_now(st->now) + c->ts_off, tsecr = c->ts_recent;
        sum += (uint64_t)tsval + tsecr;
        wr32(t + 20, 0x0101080au);          /* NOP NOP TS(10) */
        wr32(t + 24, tsval);
        wr32(t + 28, tsecr);
    }
    uint32_t caps = st->cfg.caps;
    uint16_t bf = b->flags & (uint16_t)~(TERN_BUF_TX_L4_CSUM | TERN_BUF_TX_TSO |
                                         TERN_BUF_TX_IP_CSUM);
    if (may_tso && b->tso_mss)
        bf |= TERN_BUF_TX_TSO;              /* send_tso's frame */
    if (v6)
        ;                                   /* no header sum */
    else if (caps & TERN_CAP_TX_IP_CSUM)
        bf |= TERN_BUF_TX_IP_CSUM;          /* template checksum field is 0 */
    else
        wr16(ip + 10, (uint16_t)~tx_fold32(c->tx_ip_sum + IP4_HDR_LEN +
                                           l4 + id));
    if (caps & TERN_CAP_TX_L4_CSUM) {
        bf |= TERN_BUF_TX_L4_CSUM;
        uint32_t ps = v6 ? ip6_pseudo_sum(c->laddr6, c->raddr6, IP_PROTO_TCP, l4)
                         : fold(ip4_pseudo_sum(st->cfg.ip, c->raddr,
                                               IP_PROTO_TCP, l4));
        wr32(t + 16, ps << 16);
    } else {
        wr32(t + 16, (~tx_fold64(sum) & 0xffffu) << 16);
    }
    b->flags = bf;
    b->l2_len = ETH_HDR_LEN;
    b->l3_len = (uint8_t)l3;
    b->l4_len = (uint8_t)hlen;
    CTR(st, tcp_out);
    if (v6)
        CTR(st, ip6_out);
    else
        CTR(st, ip_out);
    CTR(st, eth_out);
    stack_tx(st, b);
}

/* xmit_layout_wnd with the window field (and ack_sent) of this moment. */
static LAYOUT_INLINE void xmit_layout(tern_stack *st, struct tern_conn *c,
                                      tern_buf *b, uint32_t seq, uint32_t len,
                                      uint32_t fs, bool ts, bool v6,
                                      bool may_tso)
{
    xmit_layout_wnd(st, c, b, seq, len, fs, ts, v6,
                    ack_fields_est(TL(st), c), may_tso);
}

/* The header layouts: TF_TS and TF_V6 of c->flags (one test for IPv4
 * with timestamps, as before there was IPv6). */
#define LAYOUT_TS_V4 TF_TS
#define LAYOUT_OF(c) ((c)->flags & (TF_TS | TF_V6))

static void xmit_fast(tern_stack *st, struct tern_conn *c, tern_buf *b,
                      uint32_t seq, uint32_t len, uint32_t fs)
{
    uint32_t l = LAYOUT_OF(c);
    if (l == LAYOUT_TS_V4)
        xmit_layout(st, c, b, seq, len, fs, true, false, true);
    else if (l == 0)
        xmit_layout(st, c, b, seq, len, fs, false, false, true);
    else if (l & TF_TS)
        xmit_layout(st, c, b, seq, len, fs, true, true, true);
    else
        xmit_layout(st, c, b, seq, len, fs, false, true, true);
}

/* Inline: one test in front of two calls, per data segment of the
 * general loop (send_data). */
static LAYOUT_INLINE void xmit(tern_stack *st, struct tern_conn *c,
                               tern_buf *b, uint32_t seq, uint8_t flags,
                               uint32_t len, uint32_t psum)
{
    if ((flags & (TCP_SYN | TCP_ACK)) == TCP_ACK &&
        !sack_out(c) && tmpl_ready(st, c))
        xmit_fast(st, c, b, seq, len, flags_sum(flags, psum));
    else
        xmit_slow(st, c, b, seq, flags, len, psum);
}

/* A fresh buffer with room for headers; counts and returns NULL when the
 * pool is dry. */
static tern_buf *hdr_buf(tern_stack *st)
{
    tern_buf *b = tern_buf_alloc(st);
    if (!b) {
        CTR(st, tcp_nobuf);
        return NULL;
    }
    if (b->data - b->head < TCP_MAX_HDRS) {
        tern_buf_release(st, b);
        CTR(st, tcp_nobuf);
        return NULL;
    }
    b->len = 0;
    b->tso_mss = 0;
    return b;
}

/* Make whole queue buffer q (payload p, len bytes) its own frame: an
 * extra reference for the driver, data at the payload. Returns the
 * payload's partial sum, computed once and cached in cb[1] (0 when the
 * NIC sums). */
static inline uint32_t in_place_sum(tern_stack *st, tern_buf *q, uint8_t *p,
                                    uint32_t len)
{
    if (!(st->cfg.caps & TERN_CAP_TX_L4_CSUM) && !(q->cb[1] & BQ_CSUM_OK)) {
        uint32_t s = tern_csum_partial(p, len, 0);
        q->cb[1] = (q->cb[1] & 0xffffffffu) | BQ_CSUM_OK | (uint64_t)s << 32;
    }
    tern_buf_ref(q);
    q->data = p;
    q->tso_mss = 0;
    return (uint32_t)(q->cb[1] >> 32) & 0xffff;
}

/* Send [seq, seq + len) from queue buffer q (which holds seq). */
static bool send_data(tern_stack *st, struct tern_conn *c, tern_buf *q,
                      uint32_t seq, uint32_t len, uint8_t flags)
{
    uint32_t off = seq - bq_seq(q);
    uint8_t *p = bq_data(q) + off;
    bool hw_csum = (st->cfg.caps & TERN_CAP_TX_L4_CSUM) != 0;
    q->cb32 = tx_stamp(st->now, seq_lt(seq, c->snd_max));    /* RACK */
    if (q->refs == 1)
        q->frag = NULL;             /* stale link of a finished TSO frame */
    if (off == 0 && len == bq_len(q) && q->refs == 1 && !q->frag &&
        p - q->head >= TCP_MAX_HDRS) {
        xmit(st, c, q, seq, flags, len, in_place_sum(st, q, p, len));
        return true;
    }
    tern_buf *b = hdr_buf(st);
    if (!b)
        return false;
    if (b->size - (uint32_t)(b->data - b->head) < len) {
        tern_buf_release(st, b);
        CTR(st, tcp_nobuf);
        return false;
    }
    uint32_t s = 0;
    if (hw_csum)
        tern_memcpy(b->data, p, len);
    else
        s = tcp_copy_csum(b->data, p, len);
    xmit(st, c, b, seq, flags, len, s);
    return true;
}

tern_buf *sq_find(struct tern_conn *c, uint32_t seq)
{
    tern_buf *q = c->sq_head;
    while (q && seq_le(bq_end(q), seq))
        q = bq_next(q);
    return q;
}

/* A segment reaching past snd_max, to `end`: time it when timestamps do
 * not. */
static inline void note_new_end(tern_stack *st, struct tern_conn *c,
                                uint32_t end)
{
    if (!(c->flags & (TF_RTT_TIMING | TF_TS))) {
        c->flags |= TF_RTT_TIMING;
        c->rtt_seq = end;
        c->rtt_at = st->now;
    }
    c->snd_max = end;
}

static inline void count_data_out(tern_stack *st, struct tern_conn *c,
                                  uint32_t len)
{
    CTR(st, tcp_data_segs_out);
    st->ctr.tcp_bytes_out += len;
    c->bytes_sent += len;
}

/* The bookkeeping of a segment that left: retransmission count and Karn,
 * the RTT timing, snd_max, the counters. */
static inline void note_sent_only(tern_stack *st, struct tern_conn *c,
                                  uint32_t seq, uint32_t len, bool fin)
{
    uint32_t end = seq + len + (fin ? 1 : 0);
    if (seq_lt(seq, c->snd_max)) {
        CTR(st, tcp_retransmits);
        c->retransmits++;
        if ((c->flags & TF_RTT_TIMING) && seq_lt(seq, c->rtt_seq))
            c->flags &= ~(uint32_t)TF_RTT_TIMING;    /* Karn */
    }
    if (seq_gt(end, c->snd_max))
        note_new_end(st, c, end);
    if (len)
        count_data_out(st, c, len);
    if (fin)
        c->flags |= TF_FIN_SENT;
}

/* RFC 6298 5.1: a send starts the retransmission timer unless it runs.
 * With nothing in flight before the send, t_rtx is not an RTO even when
 * set: it is the persist, keep-alive or FIN_WAIT_2 timer. */
static inline bool rto_off(const struct tern_conn *c, bool was_idle)
{
    return was_idle || c->t_rtx == TERN_NEVER || (c->flags & TF_PERSIST);
}

static inline void note_sent(tern_stack *st, struct tern_conn *c,
                             uint32_t seq, uint32_t len, bool fin)
{
    bool was_idle = c->snd_una == c->snd_max;
    note_sent_only(st, c, seq, len, fin);
    if (rto_off(c, was_idle))
        tcp_arm_rto(st, c);
}

uint32_t tcp_retransmit(tern_stack *st, struct tern_conn *c, uint32_t seq,
                        uint32_t len)
{
    if ((c->flags & TF_FIN_QUEUED) && seq == c->sq_end) {
        tern_buf *b = hdr_buf(st);
        if (!b)
            return 0;
        xmit(st, c, b, seq, TCP_ACK | TCP_FIN, 0, 0);
        note_sent(st, c, seq, 0, true);
        return 1;
    }
    tern_buf *q = sq_find(c, seq);
    if (!q)
        return 0;
    uint32_t room = bq_end(q) - seq;
    if (len > room)
        len = room;
    if (len > c->mss)
        len = c->mss;
    bool fin = (c->flags & TF_FIN_QUEUED) && seq + len == c->sq_end &&
               seq_gt(c->snd_max, c->sq_end);
    uint8_t fl = TCP_ACK | (fin ? TCP_FIN : 0);
    if (!send_data(st, c, q, seq, len, fl))
        return 0;
    note_sent(st, c, seq, len, fin);
    if (seq == c->snd_una)
        c->rxt_mark = c->snd_max;
    return len + (fin ? 1 : 0);
}

/*
 * TSO: one frame of up to 64 KiB of payload that the NIC cuts into MSS
 * segments. The payload is the queue buffers themselves, chained through
 * `frag` behind a header buffer (so the NIC needs scatter-gather too), and
 * the NIC fills the checksums of every segment. Used for whole queue
 * buffers no earlier frame still holds (refs == 1), so the `frag` links
 * are ours to set; sq_put explains how they are cleaned up.
 */
#define TSO_MAX_PAYLOAD (0xffffu - IP4_HDR_LEN - TCP_HDR_LEN - TCP_TS_LEN)

static bool tso_usable(tern_stack *st, const struct tcp_layer *tl)
{
    uint32_t need = TERN_CAP_TSO | TERN_CAP_SG | TERN_CAP_TX_L4_CSUM;
    return (st->cfg.caps & need) == need && !tl->nagle;
}

/* Payload bytes of whole queue buffers from q (which starts at seq) that
 * fit in room; 0 unless that is more than one buffer or more than one
 * segment of mss (one large buffer). *end: the buffer after them. */
static uint32_t tso_span(tern_buf *q, uint32_t room, uint32_t mss,
                         tern_buf **end)
{
    uint32_t n = 0, bufs = 0;
    for (; q && q->refs == 1 && n + bq_len(q) <= room; q = bq_next(q)) {
        n += bq_len(q);
        bufs++;
    }
    *end = q;
    return bufs > 1 || n > mss ? n : 0;
}

static bool send_tso(tern_stack *st, struct tern_conn *c, tern_buf *q,
                     uint32_t seq, uint32_t len, uint8_t flags)
{
    tern_buf *h = hdr_buf(st);
    if (!h)
        return false;
    tern_buf **link = &h->frag;
    uint32_t stamp = tx_stamp(st->now, seq_lt(seq, c->snd_max));  /* RACK */
    for (uint32_t n = 0; n < len; q = bq_next(q)) {
        q->cb32 = stamp;
        q->data = bq_data(q);
        q->len = bq_len(q);
        q->frag = NULL;
        tern_buf_ref(q);
        *link = q;
        link = &q->frag;
        n += q->len;
    }
    h->tso_mss = c->mss;
    xmit_fast(st, c, h, seq, len, flags_sum(flags, 0));
    return true;
}

/* Bytes the windows allow from seq on (congestion and the peer's). */
static uint32_t send_room(const struct tern_conn *c, uint32_t seq,
                          uint32_t inflight)
{
    uint32_t cw = c->cwnd > inflight ? c->cwnd - inflight : 0;
    uint32_t edge = c->snd_una + c->snd_wnd;
    uint32_t wr = seq_gt(edge, seq) ? edge - seq : 0;
    return cw < wr ? cw : wr;
}

/* Send a TSO frame from q at seq when at least two whole buffers may go;
 * returns the payload sent (0: send one segment the ordinary way). */
static uint32_t try_tso(tern_stack *st, struct tern_conn *c, tern_buf *q,
                        uint32_t seq, uint32_t inflight, tern_buf **next)
{
    /* In a recovery, or with SACK blocks held, only new data goes in TSO
     * frames: nothing past snd_max is SACKed, lost or resent. */
    bool fresh = seq_ge(seq, c->snd_max);
    if (!tso_usable(st, TL(st)) || seq != bq_seq(q) ||
        (!fresh && (c->nsb || (c->flags & TF_RECOVERY))) ||
        (c->flags & TF_V6) || !tmpl_ready(st, c))
        return 0;
    uint32_t room = send_room(c, seq, inflight);
    uint32_t len = tso_span(q, room < TSO_MAX_PAYLOAD ? room : TSO_MAX_PAYLOAD,
                            c->mss, next);
    if (!len)
        return 0;
    bool last = seq + len == c->sq_end;
    bool fin = last && (c->flags & TF_FIN_QUEUED);
    uint8_t fl = TCP_ACK | (last ? TCP_PSH : 0) | (fin ? TCP_FIN : 0);
    if (!send_tso(st, c, q, seq, len, fl))
        return 0;
    note_sent(st, c, seq, len, fin);
    c->snd_nxt = seq + len + (fin ? 1 : 0);
    return len;
}

/* RFC 6675 NextSeg rule 1 while (cwnd - pipe) >= 1 SMSS. */
static bool sack_rexmit(tern_stack *st, struct tern_conn *c)
{
    uint32_t s, l;
    if (!sb_next_hole(c, c->rxt_next, c->mss, &s, &l))
        return false;
    uint32_t n = tcp_retransmit(st, c, s, l);
    if (!n)
        return false;
    if (seq_gt(s + n, c->rxt_next))     /* a RACK-lost hole may be lower */
        c->rxt_next = s + n;
    return true;
}

/* Can [seq, seq+len) go now? May shrink len to the peer's window. */
static bool window_allows(const struct tcp_layer *tl, struct tern_conn *c,
                          uint32_t seq, uint32_t *len, uint32_t inflight)
{
    uint32_t cw = c->cwnd > inflight ? c->cwnd - inflight : 0;
    uint32_t edge = c->snd_una + c->snd_wnd;
    uint32_t wr = seq_gt(edge, seq) ? edge - seq : 0;
    if (cw < *len && cw < c->mss)
        return false;
    if (cw < *len)
        *len = cw;
    if (wr < *len) {
        /* sender SWS avoidance: a partial segment only when the peer's
         * window is small (RFC 9293 3.8.6.2.1) */
        if (wr == 0 || wr < (c->max_sndwnd >> 1))
            return false;
        *len = wr;
    }
    /* Nagle: a small last segment waits while data is unacknowledged */
    if (tl->nagle && *len < c->mss && seq + *len == c->sq_end &&
        c->snd_nxt != c->snd_una && !(c->flags & TF_FIN_QUEUED))
        return false;
    return true;
}

static bool tfo_early(const struct tern_conn *c)
{
    return c->state == TERN_TCP_SYN_RECEIVED && (c->tfo & TFO_DATA) &&
           (c->flags & TF_PASSIVE);
}

/* Data may leave in these states, and in SYN_RECEIVED on a conn that
 * took data in the SYN (Fast Open, RFC 7413 4.2.2): its app answers at
 * once, and the answer follows the SYN-ACK. */
static bool can_send_data(const struct tern_conn *c)
{
    uint8_t state = c->state;
    return state == TERN_TCP_ESTABLISHED || state == TERN_TCP_CLOSE_WAIT ||
           state == TERN_TCP_FIN_WAIT_1 || state == TERN_TCP_CLOSING ||
           state == TERN_TCP_LAST_ACK || tfo_early(c);
}

/*
 * The request/response case, decided without the general loop: all unsent
 * data is the last queue buffer, it fits one segment, nothing unusual is
 * going on (recovery, SACK ranges, a FIN to send) and both windows take it
 * whole, so the loop would send exactly this one segment. It leaves in
 * place when no earlier frame still holds the buffer. The loop's closing
 * tcp_rearm is not needed: with data in flight in ESTABLISHED it only arms
 * a timer that is off (or persisting), which has just been done.
 * false: not this case, nothing done.
 */
static bool output_one(tern_stack *st, const struct tcp_layer *tl,
                       struct tern_conn *c)
{
    tern_buf *q = c->sq_cur;
    uint32_t seq = c->snd_nxt;
    if (!q || q != c->sq_tail || bq_seq(q) != seq || q->refs != 1 ||
        c->state != TERN_TCP_ESTABLISHED || c->nsb ||
        (c->flags & (TF_RECOVERY | TF_FIN_QUEUED)))
        return false;
    uint32_t len = bq_len(q), inflight = seq - c->snd_una;
    if (len > c->mss || inflight + len > c->cwnd ||
        seq_gt(seq + len, c->snd_una + c->snd_wnd) ||
        (tl->nagle && len < c->mss && inflight))
        return false;
    uint8_t *p = bq_data(q);
    q->frag = NULL;                 /* stale link of a finished TSO frame */
    bool sum_known = (q->cb[1] & BQ_CSUM_OK) ||
                     (st->cfg.caps & TERN_CAP_TX_L4_CSUM);
    if (p - q->head >= TCP_MAX_HDRS && sum_known &&
        !sack_out(c) && tmpl_ready(st, c)) {
        /* what send_data and xmit decide for this buffer */
        q->cb32 = tx_stamp(st->now, seq_lt(seq, c->snd_max));    /* RACK */
        tern_buf_ref(q);
        q->data = p;
        q->tso_mss = 0;
        xmit_fast(st, c, q, seq, len,
                  flags_sum(TCP_ACK | TCP_PSH, (q->cb[1] >> 32) & 0xffff));
    } else if (!send_data(st, c, q, seq, len, TCP_ACK | TCP_PSH)) {
        return false;
    }
    /* a request or response leaving alone: its timer, cheaply */
    if (!inflight && seq == c->snd_max && len) {
        note_new_end(st, c, seq + len);     /* all new data */
        count_data_out(st, c, len);
        tcp_arm_rto_lone(st, c);
    } else {
        note_sent_only(st, c, seq, len, false);
        if (rto_off(c, false))
            tcp_arm_rto(st, c);
    }
    c->snd_nxt = seq + len;
    c->sq_cur = NULL;
    return true;
}

/*
 * Bulk data: whole queue buffers of at most one segment each, sent in
 * place one after the other. The last one goes too (with PSH, as the loop
 * sends it) unless a FIN follows it or Nagle could hold it back (shorter
 * than an MSS): the general loop decides those. Per buffer this does
 * exactly what the general loop would (its window test passes whole,
 * send_data goes in place, xmit the fast way), with what cannot change
 * between the segments decided once: the windows' room, no SACK/recovery
 * state, the template and its header layout (xmit_layout inline, one copy
 * per layout), the window field (nothing we receive moves rcv_nxt or
 * rcv_unread meanwhile, and once ack_sent has taken the first segment's
 * edge, ack_fields_est returns the same field again and ack_sent changes
 * nothing: test_tcp_units ack_fields_repeat), no TSO (try_tso would take
 * each buffer first). Stops at the first buffer that does not fit; the
 * general loop takes it from there. Returns the buffers sent.
 */
static LAYOUT_INLINE uint32_t send_run_layout(tern_stack *st,
                                              struct tern_conn *c,
                                              tern_buf *q, uint32_t seq,
                                              bool ts, bool v6)
{
    uint32_t room = send_room(c, seq, seq - c->snd_una), n = 0, wnd = 0;
    /* A run that starts at snd_max is all new data; after its first
     * segment the RTO runs (note_sent armed it if it was off), so the
     * rest need only the new end and the counts. */
    bool fresh = seq == c->snd_max;
    for (; q; q = c->sq_cur = bq_next(q)) {
        uint32_t len = bq_len(q);
        uint8_t *p = bq_data(q);
        bool last = bq_end(q) == c->sq_end;
        if (len > c->mss || len > room || q->refs != 1 ||
            p - q->head < TCP_MAX_HDRS ||
            (last && ((c->flags & TF_FIN_QUEUED) ||
                      (TL(st)->nagle && len < c->mss))))
            break;
        q->cb32 = tx_stamp(st->now, seq_lt(seq, c->snd_max));    /* RACK */
        q->frag = NULL;             /* stale link of a finished TSO frame */
        if (!n)
            wnd = ack_fields_est(TL(st), c);
        uint8_t fl = TCP_ACK | (last ? TCP_PSH : 0);
        /* in_place_sum cleared tso_mss: not a TSO frame */
        xmit_layout_wnd(st, c, q, seq, len,
                        flags_sum(fl, in_place_sum(st, q, p, len)), ts, v6,
                        wnd, false);
        if (fresh && n) {
            note_new_end(st, c, seq + len);
            count_data_out(st, c, len);
        } else {
            note_sent(st, c, seq, len, false);
        }
        seq += len;
        room -= len;
        n++;
        c->snd_nxt = seq;
    }
    return n;
}

static uint32_t send_run(tern_stack *st, struct tern_conn *c, tern_buf *q,
                         uint32_t seq)
{
    if (tso_usable(st, TL(st)) || c->nsb || (c->flags & TF_RECOVERY) ||
        seq != bq_seq(q) ||
        sack_out(c) || !tmpl_ready(st, c))
        return 0;
    uint32_t l = LAYOUT_OF(c);
    if (l == LAYOUT_TS_V4)
        return send_run_layout(st, c, q, seq, true, false);
    if (l == 0)
        return send_run_layout(st, c, q, seq, false, false);
    return send_run_layout(st, c, q, seq, (l & TF_TS) != 0, true);
}

/* The general loop, kept out of line so that output_one's case pays no
 * register saves for it. */
#if defined(__GNUC__)
#define GENERAL_PATH __attribute__((noinline))
#else
#define GENERAL_PATH
#endif
static GENERAL_PATH void output_general(tern_stack *st, struct tcp_layer *tl,
                                        struct tern_conn *c)
{
    if (!can_send_data(c))
        return;
    bool sack_rec = (c->flags & (TF_RECOVERY | TF_SACK)) ==
                    (TF_RECOVERY | TF_SACK);
    /* In a SACK recovery pipe is one walk of the holes' buffers: it is
     * taken once and then grows by what each send puts in flight (a part
     * resent stops being lost, new data was not counted). Once no hole is
     * left to resend, sending new data makes none: no further walks. */
    uint32_t pipe = sack_rec ? sb_pipe(c, c->mss) : 0;
    uint64_t sent0 = c->bytes_sent;
    bool holes = sack_rec;
    for (;;) {
        uint32_t inflight = sack_rec ? pipe + (uint32_t)(c->bytes_sent - sent0)
                                     : c->snd_nxt - c->snd_una;
        if (sack_rec) {
            if (inflight + c->mss > c->cwnd)
                break;
            if (holes && sack_rexmit(st, c))
                continue;
            holes = false;
        }
        uint32_t seq = c->snd_nxt;
        if (c->nsb && seq_lt(seq, c->snd_max)) {
            uint32_t s2 = sb_skip(c, seq);
            if (s2 != seq) {
                c->snd_nxt = seq = s2;
                if (seq_gt(seq, c->sq_end))
                    c->snd_nxt = seq = c->sq_end;
                c->sq_cur = sq_find(c, seq);
            }
            /* a buffer SACKed where the ranges forgot it (sack.c marks) */
            tern_buf *m = c->sq_cur;
            if (!m || seq_lt(seq, bq_seq(m)) || seq_ge(seq, bq_end(m)))
                m = c->sq_cur = sq_find(c, seq);
            if (m && bq_sacked(m) && seq_lt(seq, c->snd_max)) {
                c->snd_nxt = bq_end(m);
                c->sq_cur = bq_next(m);
                continue;
            }
        }
        if (seq == c->sq_end) {
            /* a FIN waits for the handshake: ESTABLISHED then takes
             * the conn on to FIN_WAIT_1 (tcp_establish) */
            if ((c->flags & TF_FIN_QUEUED) && c->snd_nxt == c->sq_end &&
                !tfo_early(c)) {
                tern_buf *b = hdr_buf(st);
                if (!b)
                    break;
                xmit(st, c, b, seq, TCP_ACK | TCP_FIN, 0, 0);
                note_sent(st, c, seq, 0, true);
                c->snd_nxt = seq + 1;
            }
            break;
        }
        tern_buf *q = c->sq_cur;
        if (!q || seq_lt(seq, bq_seq(q)) || seq_ge(seq, bq_end(q)))
            q = c->sq_cur = sq_find(c, seq);
        if (!q)
            break;
        if (!sack_rec && send_run(st, c, q, seq))
            continue;
        tern_buf *after;
        if (try_tso(st, c, q, seq, inflight, &after)) {
            c->sq_cur = after;
            continue;
        }
        uint32_t len = bq_end(q) - seq;
        if (len > c->mss)
            len = c->mss;
        if (c->nsb && seq_lt(seq, c->fack)) {
            /* stop at the next SACKed range */
            for (uint32_t i = 0; i < c->nsb; i++)
                if (seq_gt(c->sb[i][0], seq)) {
                    if (c->sb[i][0] - seq < len)
                        len = c->sb[i][0] - seq;
                    break;
                }
        }
        if (!window_allows(tl, c, seq, &len, inflight))
            break;
        bool last = seq + len == c->sq_end;
        bool fin = last && (c->flags & TF_FIN_QUEUED);
        uint8_t fl = TCP_ACK | (last ? TCP_PSH : 0) | (fin ? TCP_FIN : 0);
        if (!send_data(st, c, q, seq, len, fl))
            break;
        note_sent(st, c, seq, len, fin);
        c->snd_nxt = seq + len + (fin ? 1 : 0);
        if (seq_ge(c->snd_nxt, bq_end(q)))
            c->sq_cur = bq_next(q);
    }
    tcp_rearm(st, c);
}

/*
 * The lone segment (tcp_lone_ready, tcp.h): output_one would take its
 * in-place case and its lone-segment bookkeeping; send_lone does the same
 * work inline in tcp_output, one copy per header layout, and everything
 * else goes to output_rest, out of line.
 */
static LAYOUT_INLINE void send_lone_layout(tern_stack *st, struct tern_conn *c,
                                           bool ts, bool v6)
{
    tern_buf *q = c->sq_cur;
    uint32_t seq = c->snd_nxt, len = bq_len(q);
    uint32_t fs = flags_sum(TCP_ACK | TCP_PSH, (q->cb[1] >> 32) & 0xffff);
    q->frag = NULL;                 /* stale link of a finished TSO frame */
    q->cb32 = tx_stamp(st->now, false);                     /* RACK */
    q->refs = 2;                    /* the driver's reference (refs was 1) */
    q->data = bq_data(q);
    q->tso_mss = 0;
    xmit_layout(st, c, q, seq, len, fs, ts, v6, false);  /* tso_mss is 0 */
    if (ts)
        c->snd_max = seq + len;     /* note_new_end: timestamps time it */
    else
        note_new_end(st, c, seq + len);
    count_data_out(st, c, len);
    tcp_arm_rto_lone(st, c);
    c->snd_nxt = seq + len;
    c->sq_cur = NULL;
}

/* IPv4's layouts, inline in tcp_output. */
static LAYOUT_INLINE void send_lone(tern_stack *st, struct tern_conn *c)
{
    if (c->flags & TF_TS)
        send_lone_layout(st, c, true, false);
    else
        send_lone_layout(st, c, false, false);
}

/* IPv6's, in output_rest: tcp_output's IPv4 code stays as it was. */
static LAYOUT_INLINE void send_lone6(tern_stack *st, struct tern_conn *c)
{
    if (c->flags & TF_TS)
        send_lone_layout(st, c, true, true);
    else
        send_lone_layout(st, c, false, true);
}

static GENERAL_PATH void output_rest(tern_stack *st, struct tcp_layer *tl,
                                     struct tern_conn *c)
{
    if ((c->flags & TF_V6) && tcp_lone_ready(st, c)) {
        send_lone6(st, c);
        return;
    }
    c->flags &= ~(uint32_t)TF_LONE;     /* it may send nothing */
    if (!output_one(st, tl, c))
        output_general(st, tl, c);
    if (tl->cc_model)
        tl->cc->on_sent(st, c);
}

void tcp_output(tern_stack *st, struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    if (tcp_lone_ready_not(st, c, TF_V6))
        send_lone(st, c);
    else
        output_rest(st, tl, c);
}

static void ctl_send(tern_stack *st, struct tern_conn *c, uint32_t seq,
                     uint8_t flags)
{
    tern_buf *b = hdr_buf(st);
    if (!b) {
        if (flags == TCP_ACK) {       /* retry from the timer */
            c->flags |= TF_ACK_DELAYED;
            c->t_ack = st->now + TERN_NS_PER_MS;
            conn_timer_update(st, c);
        }
        return;
    }
    xmit(st, c, b, seq, flags, 0, 0);
}

void tcp_send_ack(tern_stack *st, struct tern_conn *c)
{
    CTR(st, tcp_pure_acks_out);
    ctl_send(st, c, c->snd_nxt, TCP_ACK);
}

void tcp_send_probe(tern_stack *st, struct tern_conn *c)
{
    ctl_send(st, c, c->snd_una - 1, TCP_ACK);
}

/* The first SYN of a Fast Open connect (TFO_DATA): the cookie and as much
 * of the queued data as one SYN takes (RFC 7413 4.2.1). false: no data
 * went (no buffer, or none fits); the caller sends a plain SYN. */
static bool send_syn_data(tern_stack *st, struct tern_conn *c)
{
    uint8_t ck[TFO_COOKIE_MAX];
    uint16_t mss = 0;
    tern_buf *q = c->sq_head;
    uint32_t n = q ? bq_len(q) : 0, max = 0;
    if (tfo_cache_get(st, c, ck, &mss))
        max = tfo_syn_room(TL(st), c, mss);
    if (n > max)
        n = max;
    tern_buf *b = n ? hdr_buf(st) : NULL;
    if (!b)
        return false;
    uint32_t sum = tcp_copy_csum(b->data, bq_data(q), n);
    q->cb32 = tx_stamp(st->now, false);     /* RACK */
    xmit_slow(st, c, b, c->iss, TCP_SYN, n, sum);
    CTR(st, tcp_tfo_syn_data_out);
    c->snd_nxt = c->snd_max = c->iss + 1 + n;
    c->sq_cur = n == bq_len(q) ? bq_next(q) : q;
    return true;
}

void tcp_send_syn(tern_stack *st, struct tern_conn *c)
{
    uint8_t fl = c->state == TERN_TCP_SYN_SENT ? TCP_SYN : TCP_SYN | TCP_ACK;
    if (fl == TCP_SYN && (c->tfo & TFO_DATA)) {
        /* only the first SYN carries data and the cookie: a SYN sent
         * again goes bare, as Linux's, in case a middlebox dropped it
         * for either; the data follows the handshake */
        bool first = c->snd_max == c->iss;
        c->tfo &= (uint8_t)~(TFO_DATA | TFO_OPT);
        if (first) {
            c->tfo |= TFO_DATA | TFO_OPT;
            if (send_syn_data(st, c))
                return;
            c->tfo &= (uint8_t)~TFO_DATA;   /* a cookie request then */
        }
    }
    if (fl == TCP_SYN && (c->tfo & TFO_OPT) && c->snd_max == c->iss)
        CTR(st, tcp_tfo_cookie_req_out);
    ctl_send(st, c, c->iss, fl);
    if (c->snd_max == c->iss)
        c->snd_max = c->iss + 1;
    c->snd_nxt = c->iss + 1;
    c->sq_cur = NULL;               /* found again from snd_nxt */
}

void tcp_send_rst_conn(tern_stack *st, struct tern_conn *c)
{
    CTR(st, tcp_rst_out);
    ctl_send(st, c, c->snd_nxt, TCP_RST | TCP_ACK);
}

/* Segments without a connection: a throw-away conn view on the stack. */
static void raw_send(tern_stack *st, const tcp_seg *s, uint32_t seq,
                     uint32_t ack, uint8_t flags, struct tern_conn *tmpl)
{
    tern_buf *b = hdr_buf(st);
    if (!b)
        return;
    tmpl->raddr = s->src;
    tmpl->rport = s->sport;
    tmpl->lport = s->dport;
    if (s->ip6) {
        tmpl->flags |= TF_V6;
        tern_memcpy(tmpl->raddr6, s->ip6->src, 16);
        tern_memcpy(tmpl->laddr6, s->ip6->dst, 16);
        tmpl->flow6 = tcp_flow_label(st, tmpl->laddr6, tmpl->lport,
                                     tmpl->raddr6, tmpl->rport);
    }
    tmpl->rcv_nxt = ack;
    tmpl->rcv_adv = ack;
    xmit_slow(st, tmpl, b, seq, flags, 0, 0);
}

void tcp_send_view(tern_stack *st, struct tern_conn *view, uint32_t seq,
                   uint8_t flags)
{
    tern_buf *b = hdr_buf(st);
    if (b)
        xmit_slow(st, view, b, seq, flags, 0, 0);
}

void tcp_send_rst_reply(tern_stack *st, const tcp_seg *s)
{
    struct tern_conn t;
    tern_memset(&t, 0, sizeof t);
    t.rcv_unread = ~0u;            /* window 0 */
    CTR(st, tcp_rst_out);
    if (s->flags & TCP_ACK) {
        raw_send(st, s, s->ack, 0, TCP_RST, &t);
    } else {
        uint32_t ack = s->seq + s->len + ((s->flags & TCP_SYN) ? 1 : 0) +
                       ((s->flags & TCP_FIN) ? 1 : 0);
        raw_send(st, s, 0, ack, TCP_RST | TCP_ACK, &t);
    }
}

void tcp_send_synack_cookie(tern_stack *st, const tcp_seg *s, uint32_t iss,
                            uint16_t mss, int ws, bool sack, bool ts,
                            uint32_t tsval)
{
    (void)mss;
    struct tern_conn t;
    tern_memset(&t, 0, sizeof t);
    t.state = TERN_TCP_SYN_RECEIVED;
    t.flags = (ws >= 0 ? TF_WS : 0) | (sack ? TF_SACK : 0) | (ts ? TF_TS : 0);
    t.rcv_ws = ws >= 0 ? TL(st)->rcv_ws : 0;
    t.ts_recent = s->o.tsval;
    /* xmit adds ts_now + ts_off: make it come out as tsval */
    t.ts_off = tsval - ts_now(st->now);
    raw_send(st, s, iss, s->seq + 1, TCP_SYN | TCP_ACK, &t);
}
