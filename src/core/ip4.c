/* ip4.c - IPv4 receive validation and dispatch, transmit with routing. */
#include "stack.h"

#define IP_FLAG_MF 0x2000
#define IP_OFFSET_MASK 0x1fff

bool ip4_is_local(const tern_stack *st, uint32_t ip)
{
    return ((ip ^ st->cfg.ip) & st->netmask) == 0;
}

/* Walk the option list: every length must fit; source routes refused. */
static bool options_ok(const uint8_t *opt, uint32_t len)
{
    uint32_t i = 0;
    while (i < len) {
        uint8_t type = opt[i];
        if (type == 0)              /* end of list */
            return true;
        if (type == 1) {            /* no-op */
            i++;
            continue;
        }
        if (i + 1 >= len || opt[i + 1] < 2 || i + opt[i + 1] > len)
            return false;
        if (type == 131 || type == 137)  /* LSRR, SSRR */
            return false;
        i += opt[i + 1];
    }
    return true;
}

/* Check a received header against the real frame. Returns the counter of
 * the reason to drop it, or NULL when it is acceptable. A chain (SG, LRO)
 * must hold the whole header in its first buffer and carry TCP. */
static uint64_t *ip4_check(tern_stack *st, const tern_buf *b)
{
    const uint8_t *h = b->data;
    if (b->len < IP4_HDR_LEN)
        return &st->ctr.ip_drop_short;
    if ((h[0] >> 4) != 4)
        return &st->ctr.ip_drop_version;
    uint32_t hlen = (uint32_t)(h[0] & 0xf) * 4;
    if (hlen < IP4_HDR_LEN || hlen > b->len)
        return &st->ctr.ip_drop_hdr_len;
    uint32_t total = rd16(h + 2);
    if (total < hlen || total > (b->frag ? buf_chain_len(b) : b->len) ||
        (b->frag && h[9] != IP_PROTO_TCP))
        return &st->ctr.ip_drop_total_len;
    if (!(b->flags & TERN_BUF_RX_IP_CSUM_OK) && !st->cfg.fuzz_skip_csum &&
        (hlen == IP4_HDR_LEN ? ip4_hdr_sum(h)
                             : tern_csum_partial(h, hlen, 0)) != 0xffff)
        return &st->ctr.ip_drop_csum;
    if (hlen > IP4_HDR_LEN && !options_ok(h + IP4_HDR_LEN, hlen - IP4_HDR_LEN))
        return &st->ctr.ip_drop_options;
    if (!ip4_src_ok(st, rd32(h + 12)))
        return &st->ctr.ip_drop_bad_src;
    return NULL;
}

void ip4_input(tern_stack *st, tern_buf *b)
{
    CTR(st, ip_in);
    uint64_t *reason = ip4_check(st, b);
    if (reason) {
        (*reason)++;
        tern_buf_release(st, b);
        return;
    }
    const uint8_t *h = b->data;
    ip4_rx ip;
    ip.src = rd32(h + 12);
    ip.dst = rd32(h + 16);
    ip.broadcast = ip.dst == 0xffffffffu || ip.dst == st->bcast;
    if (ip.dst != st->cfg.ip && !ip.broadcast) {
        CTR(st, ip_drop_not_ours);
        tern_buf_release(st, b);
        return;
    }
    buf_trim(b, rd16(h + 2));    /* drops Ethernet padding */
    if (rd16(h + 6) & (IP_FLAG_MF | IP_OFFSET_MASK)) {
        if (st->cfg.no_reassembly || b->frag) {
            CTR(st, ip_drop_fragment);
            tern_buf_release(st, b);
            return;
        }
        b = ip4_reasm(st, b);
        if (!b)
            return;
        h = b->data;
    }
    uint32_t hlen = (uint32_t)(h[0] & 0xf) * 4;
    ip.ip_hdr = h;
    ip.ip_hdr_len = (uint16_t)hlen;
    ip.proto = h[9];
    b->data += hlen;
    b->len -= hlen;

    switch (ip.proto) {
    case IP_PROTO_TCP:
        tcp_input(st, b, &ip);
        break;
    case IP_PROTO_UDP:
        udp_input(st, b, &ip);
        break;
    case IP_PROTO_ICMP:
        icmp_input(st, b, &ip);
        break;
    default:
        CTR(st, ip_drop_proto);
        icmp_send_unreach(st, &ip, ICMP_UNREACH_PROTO, b->data, b->len);
        tern_buf_release(st, b);
    }
}

/* RFC 7739 5.3 / RFC 6864: the ID of a datagram to dst is a keyed hash
 * of (dst, proto) plus one of IP_ID_BUCKETS counters that hash picks.
 * IDs to one destination never repeat before 65,536 datagrams share its
 * counter (fragments stay unique within the MSL at any sane rate), and an
 * outsider learns nothing of the traffic to others from its own. */
static uint16_t ip4_id(tern_stack *st, uint32_t dst, uint8_t proto)
{
    uint8_t in[8];
    wr32(in, dst);
    wr32(in + 4, 0x49440000u | proto);      /* "ID" and the protocol */
    uint64_t h = tern_siphash(st->cfg.secret, in, sizeof in);
    return (uint16_t)((h >> 32) + st->ip_ids[h & (IP_ID_BUCKETS - 1)]++);
}

int ip4_output(tern_stack *st, tern_buf *b, uint32_t src, uint32_t dst,
               uint8_t proto, uint8_t tos)
{
    return ip4_output_id(st, b, src, dst, proto, tos, ip4_id(st, dst, proto));
}

int ip4_output_id(tern_stack *st, tern_buf *b, uint32_t src, uint32_t dst,
                  uint8_t proto, uint8_t tos, uint16_t id)
{
    /* a chain other than TCP's: a reply to a request reassembled over
     * one buffer, copied out in fragments */
    bool chain = b->frag && proto != IP_PROTO_TCP;
    uint32_t total = (chain ? buf_chain_len(b) : b->len) + IP4_HDR_LEN;
    bool tso = b->flags & TERN_BUF_TX_TSO;
    bool frag = (total > st->cfg.mtu && !tso) || chain;
    if ((frag && proto == IP_PROTO_TCP) || total > 0xffff) {
        CTR(st, ip_drop_too_big);    /* TCP keeps DF: never fragmented */
        tern_buf_release(st, b);
        return -TERN_EMSGSIZE;
    }
    if (b->data - b->head < IP4_HDR_LEN + ETH_HDR_LEN) {
        CTR(st, tx_frames_dropped);
        tern_buf_release(st, b);
        return -TERN_EINVAL;
    }
    bool bcast = dst == 0xffffffffu || dst == st->bcast;
    uint32_t nh = dst;
    if (!bcast && !ip4_is_local(st, dst)) {
        if (!st->cfg.gateway) {
            CTR(st, ip_drop_no_route);
            tern_buf_release(st, b);
            return -TERN_EINVAL;
        }
        nh = st->cfg.gateway;
    }
    uint8_t *h = b->data - IP4_HDR_LEN;
    h[0] = 0x45;
    h[1] = tos;
    wr16(h + 2, (uint16_t)total);
    wr16(h + 4, id);
    wr16(h + 6, IP_FLAG_DF);
    h[8] = IP_TTL;
    h[9] = proto;
    wr16(h + 10, 0);
    wr32(h + 12, src ? src : st->cfg.ip);
    wr32(h + 16, dst);
    if (frag)
        return ip4_frag_out(st, b, h, nh, bcast);
    b->data = h;
    b->len += IP4_HDR_LEN;
    ip4_send(st, b, nh, bcast);
    return 0;
}

void ip4_send(tern_stack *st, tern_buf *b, uint32_t nh, bool bcast)
{
    b->l3_len = IP4_HDR_LEN;
    if (st->cfg.caps & TERN_CAP_TX_IP_CSUM)
        b->flags |= TERN_BUF_TX_IP_CSUM;
    else
        wr16(b->data + 10, (uint16_t)~ip4_hdr_sum(b->data));
    CTR(st, ip_out);
    if (bcast)
        eth_output(st, b, eth_broadcast, ETH_TYPE_IPV4);
    else
        arp_resolve_and_send(st, b, nh);
}
