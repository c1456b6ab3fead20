/* icmp6.c - ICMPv6 (RFC 4443): echo both ways, errors in (Packet Too Big
 * sets the path MTU, TCP's quotes go to TCP) and rate-limited errors out.
 * Neighbor Discovery and MLD messages go to nd6.c. */
#include "ip6.h"

#define ICMP6_HDR_LEN ICMP_MSG_HDR_LEN
/* An error carries as much of the offending datagram as fits in the
 * minimum MTU (RFC 4443 2.4 (c)). */
#define ICMP6_QUOTE_MAX (IP6_MIN_MTU - IP6_HDR_LEN - ICMP6_HDR_LEN)

static uint16_t icmp6_csum(const tern_buf *b, const uint8_t *src,
                           const uint8_t *dst, uint32_t len)
{
    uint32_t sum = ip6_pseudo_sum(src, dst, IP_PROTO_ICMP6, len);
    return tern_csum_fold(csum_chain(b, b->data, len, sum));
}

int icmp6_send(tern_stack *st, tern_buf *b, const uint8_t *src,
               const uint8_t dst[16], uint8_t hl)
{
    uint8_t s[16];
    if (!src) {
        if (ip6_src_for(st, dst, s)) {
            CTR(st, ip6_drop_no_route);
            tern_buf_release(st, b);
            return -TERN_EINVAL;
        }
        src = s;
    }
    uint8_t *m = b->data;
    wr16(m + 2, 0);
    wr16(m + 2, (uint16_t)~icmp6_csum(b, src, dst, buf_chain_len(b)));
    int r = ip6_output_hl(st, b, src, dst, IP_PROTO_ICMP6, 0, 0, hl);
    if (r == 0)
        CTR(st, icmp6_out);
    return r;
}

/* An error about one of our datagrams (the quote starts with its fixed
 * header): Packet Too Big lowers the path MTU to its destination, never
 * under IPv6's minimum; TCP's go to TCP. */
static void icmp6_error_input(tern_stack *st, const uint8_t *m, uint32_t len)
{
    CTR(st, icmp6_error_in);
    const uint8_t *q = m + ICMP6_HDR_LEN;
    uint32_t qlen = len - ICMP6_HDR_LEN;
    if (len < ICMP6_HDR_LEN + IP6_HDR_LEN || (q[0] >> 4) != 6 ||
        !ip6_addr_find(st, q + 8)) {
        CTR(st, icmp6_drop_quote);
        return;
    }
    uint32_t mtu = 0;
    if (m[0] == ICMP6_PACKET_TOO_BIG) {
        CTR(st, icmp6_ptb_in);
        mtu = rd32(m + 4);
        if (mtu < IP6_MIN_MTU) {
            CTR(st, icmp6_pmtu_floored);
            mtu = IP6_MIN_MTU;
        }
        ip6_pmtu_set(st, q + 24, mtu);
    }
    if (q[6] == IP_PROTO_TCP && qlen >= IP6_HDR_LEN + 8)
        tcp_icmp6_error(st, m[0], m[1], mtu, q, qlen);
}

void icmp6_input(tern_stack *st, tern_buf *b, const ip6_rx *ip)
{
    CTR(st, icmp6_in);
    uint8_t *m = b->data;
    uint32_t len = buf_chain_len(b);
    if (b->len < 4 || (m[0] < 128 && b->len < ICMP6_HDR_LEN)) {
        CTR(st, icmp6_drop_short);
        goto drop;
    }
    if (!st->cfg.fuzz_skip_csum &&
        icmp6_csum(b, ip->src, ip->dst, len) != 0xffff) {
        CTR(st, icmp6_drop_csum);
        goto drop;
    }
    switch (m[0]) {
    case ICMP6_ECHO: {
        CTR(st, icmp6_echo_in);
        /* no answer to a group (no amplification) or from :: */
        if (ip->multicast || ip6_is_unspec(ip->src) || b->len < ICMP6_HDR_LEN) {
            CTR(st, icmp6_drop_type);
            goto drop;
        }
        /* Answer in the same buffer (ip6_output copies the addresses
         * before its header covers the request's); a reply over the MTU
         * leaves in fragments. */
        uint8_t src[16], dst[16];
        tern_memcpy(src, ip->dst, 16);
        tern_memcpy(dst, ip->src, 16);
        m[0] = ICMP6_ECHO_REPLY;
        m[1] = 0;
        if (icmp6_send(st, b, src, dst, IP6_HOP_LIMIT) == 0)
            CTR(st, icmp6_echo_reply_out);
        else
            CTR(st, icmp6_echo_reply_drop);
        return;
    }
    case ICMP6_ECHO_REPLY:
        CTR(st, icmp6_echo_reply_in);
        goto drop;
    case ICMP6_MLD_QUERY:
    case ICMP6_RS:
    case ICMP6_RA:
    case ICMP6_NS:
    case ICMP6_NA:
        nd6_input(st, b, ip);
        return;
    default:
        if (m[0] < 128 && !b->frag)
            icmp6_error_input(st, m, b->len);
        else
            CTR(st, icmp6_drop_type);
        goto drop;
    }
drop:
    tern_buf_release(st, b);
}

void icmp6_send_error(tern_stack *st, const ip6_rx *ip, uint8_t type, uint8_t code,
                      uint32_t param, const uint8_t *l4, uint32_t l4_len)
{
    /* RFC 4443 2.4 (e), (f): not about an error, nor to a group (but a
     * too-big packet or an unrecognized option), nor to a source that is
     * no single host */
    bool mcast_ok = type == ICMP6_PACKET_TOO_BIG ||
                    (type == ICMP6_PARAM_PROBLEM && code == ICMP6_PARAM_OPTION);
    if ((ip->multicast && !mcast_ok) || !ip6_unicast_ok(ip->src))
        return;
    if (ip->proto == IP_PROTO_ICMP6 && ip->hdr_len &&
        (l4_len < 1 || l4[0] < 128 || l4[0] == ICMP6_REDIRECT))
        return;
    /* a bucket of its own, at the ICMP rate */
    if (!st->ip6 || !icmp_rate_ok(st, &st->ip6->icmp_tokens,
                                  &st->ip6->icmp_refill,
                                  &st->ctr.icmp6_rate_limited))
        return;
    tern_buf *b = icmp_error_msg(st, type, code, param, ip->ip_hdr,
                                 ip->hdr_len, l4, l4_len, ICMP6_QUOTE_MAX);
    if (!b)
        return;
    /* from the address it went to when that is ours, else a chosen one */
    const uint8_t *src = ip6_is_local(st, ip->dst) ? ip->dst : NULL;
    uint8_t dst[16];
    tern_memcpy(dst, ip->src, 16);
    if (icmp6_send(st, b, src, dst, IP6_HOP_LIMIT) == 0)
        CTR(st, icmp6_error_out);
}

int icmp6_echo(tern_stack *st, const uint8_t dst[16], uint16_t id, uint16_t seq,
               const void *data, size_t len)
{
    if (!st->ip6)
        return -TERN_EAFNOSUPPORT;
    if (len + ICMP6_HDR_LEN > 0xffff)
        return -TERN_EMSGSIZE;
    int e;
    tern_buf *b = icmp_echo_msg(st, ICMP6_ECHO, id, seq, data, len, &e);
    return b ? icmp6_send(st, b, NULL, dst, IP6_HOP_LIMIT) : e;
}
