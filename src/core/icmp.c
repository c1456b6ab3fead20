/* icmp.c - ICMP echo (both ways), errors in (handed to TCP) and
 * rate-limited destination-unreachable out (RFC 792, RFC 1122 3.2.2). */
#include "addr.h"
#include "ip6.h"

#define ICMP_ECHO_REPLY 0
#define ICMP_UNREACH 3
#define ICMP_SOURCE_QUENCH 4
#define ICMP_ECHO 8
#define ICMP_TIME_EXCEEDED 11
#define ICMP_PARAM_PROBLEM 12
#define ICMP_HDR_LEN ICMP_MSG_HDR_LEN
#define ICMP_QUOTE_MAX 64     /* bytes of the offending transport header */
#define ICMP_FRAG_NEEDED 4    /* destination unreachable code */

static bool is_error_type(uint8_t type)
{
    return type == ICMP_UNREACH || type == ICMP_SOURCE_QUENCH ||
           type == ICMP_TIME_EXCEEDED || type == ICMP_PARAM_PROBLEM;
}

/* Checksum and send; returns ip4_output's result (icmp_out counts only
 * what it took). */
static int icmp_finish(tern_stack *st, tern_buf *b, uint32_t dst)
{
    uint8_t *m = b->data;
    wr16(m + 2, 0);
    wr16(m + 2, (uint16_t)~tern_csum_fold(csum_chain(b, m, buf_chain_len(b), 0)));
    int r = ip4_output(st, b, 0, dst, IP_PROTO_ICMP, 0);
    if (r == 0)
        CTR(st, icmp_out);
    return r;
}

/* An error quoting one of our datagrams: pass TCP's to TCP (which takes
 * it only when the quoted sequence number is in flight, RFC 5927). */
static void icmp_error_input(tern_stack *st, const uint8_t *m, uint32_t len)
{
    CTR(st, icmp_error_in);
    const uint8_t *q = m + ICMP_HDR_LEN;
    uint32_t qlen = len - ICMP_HDR_LEN;
    uint32_t qhl = qlen >= IP4_HDR_LEN ? (uint32_t)(q[0] & 0xf) * 4 : 0;
    /* The quote must hold the IP header and 8 bytes of TCP (the ports and
     * sequence number), and be from us. */
    if (qlen < IP4_HDR_LEN || (q[0] >> 4) != 4 || qhl < IP4_HDR_LEN ||
        qlen < qhl + 8 || rd32(q + 12) != st->cfg.ip) {
        CTR(st, icmp_drop_quote);
        return;
    }
    uint32_t mtu = 0;
    if (m[0] == ICMP_UNREACH && m[1] == ICMP_FRAG_NEEDED) {
        /* A path MTU under the floor (a forged or broken error) would cut
         * a connection to tiny segments: never below IP4_MIN_PMTU. */
        mtu = rd16(m + 6);
        if (mtu < IP4_MIN_PMTU) {
            CTR(st, icmp_pmtu_floored);
            mtu = IP4_MIN_PMTU;
        }
    }
    if (q[9] == IP_PROTO_TCP)
        tcp_icmp_error(st, m[0], m[1], mtu, q, qlen);
}

void icmp_input(tern_stack *st, tern_buf *b, const ip4_rx *ip)
{
    CTR(st, icmp_in);
    uint8_t *m = b->data;
    if (b->len < ICMP_HDR_LEN) {
        CTR(st, icmp_drop_short);
        goto drop;
    }
    if (!st->cfg.fuzz_skip_csum &&
        tern_csum_fold(csum_chain(b, m, buf_chain_len(b), 0)) != 0xffff) {
        CTR(st, icmp_drop_csum);
        goto drop;
    }
    switch (m[0]) {
    case ICMP_ECHO:
        CTR(st, icmp_echo_in);
        if (ip->broadcast) {     /* no smurf amplification */
            CTR(st, icmp_drop_type);
            goto drop;
        }
        /* Answer in the same buffer: the request's headers are headroom.
         * A reply over the MTU (a reassembled request) leaves in
         * fragments; one that cannot leave is counted apart. */
        m[0] = ICMP_ECHO_REPLY;
        m[1] = 0;
        if (icmp_finish(st, b, ip->src) == 0)
            CTR(st, icmp_echo_reply_out);
        else
            CTR(st, icmp_echo_reply_drop);
        return;
    case ICMP_ECHO_REPLY:
        CTR(st, icmp_echo_reply_in);
        goto drop;
    default:
        if (is_error_type(m[0]))
            icmp_error_input(st, m, b->len);
        else
            CTR(st, icmp_drop_type);
        goto drop;
    }
drop:
    tern_buf_release(st, b);
}

void icmp_send_unreach(tern_stack *st, const ip4_rx *ip, uint8_t code,
                       const uint8_t *l4, uint32_t l4_len)
{
    /* RFC 1122 3.2.2: never about ICMP errors, broadcasts or non-unicast
     * sources. */
    if (ip->broadcast)
        return;
    if (ip->proto == IP_PROTO_ICMP && (l4_len < 1 || is_error_type(l4[0])))
        return;
    if (!icmp_rate_ok(st, &st->icmp_tokens, &st->icmp_refill,
                      &st->ctr.icmp_rate_limited))
        return;
    tern_buf *b = icmp_error_msg(st, ICMP_UNREACH, code, 0, ip->ip_hdr,
                                 ip->ip_hdr_len, l4, l4_len,
                                 ip->ip_hdr_len + ICMP_QUOTE_MAX);
    if (!b)
        return;
    CTR(st, icmp_unreach_out);
    icmp_finish(st, b, ip->src);
}

int tern_icmp_echo(tern_stack *st, const tern_addr *dst, uint16_t id,
                   uint16_t seq, const void *data, size_t len)
{
    if (dst && dst->family == TERN_AF_INET6)
        return icmp6_echo(st, dst->u.v6, id, seq, data, len);
    uint32_t dst_ip;
    int e = addr_dst_v4(dst, st->cfg.ip, &dst_ip);
    if (e)
        return e;
    if (len + ICMP_HDR_LEN + IP4_HDR_LEN > 0xffff)
        return -TERN_EMSGSIZE;
    tern_buf *b = icmp_echo_msg(st, ICMP_ECHO, id, seq, data, len, &e);
    return b ? icmp_finish(st, b, dst_ip) : e;
}
