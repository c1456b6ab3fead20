/* ip6_ext.c - the extension header chain of a received datagram
 * (RFC 8200 4): hop-by-hop options (first only), routing, fragment and
 * destination options headers, at most IP6_MAX_EXT of them, all inside
 * the first buffer. Options follow the action bits of their type; any
 * routing header with segments left (type 0 included, RFC 5095; we are no
 * router) is refused with a parameter problem, one with none left is
 * ignored. */
#include "ip6.h"

#define IP6_MAX_EXT 8
#define OPT_PAD1 0
#define OPT_PADN 1
#define OPT_ROUTER_ALERT 5

/* Refuse the datagram: count, answer with a parameter problem (code,
 * pointer ptr from the fixed header) when send, release. */
static bool refuse(tern_stack *st, tern_buf *b, const ip6_rx *ip,
                   uint64_t *ctr, bool send, uint8_t code, uint32_t ptr)
{
    (*ctr)++;
    if (send) {
        ip6_rx q = *ip;
        q.hdr_len = 0;      /* quote from the fixed header on */
        icmp6_send_error(st, &q, ICMP6_PARAM_PROBLEM, code, ptr, b->data,
                         b->len);
    }
    tern_buf_release(st, b);
    return false;
}

/* The options of a hop-by-hop or destination header in [off, end). */
static bool options_ok(tern_stack *st, tern_buf *b, const ip6_rx *ip,
                       uint32_t off, uint32_t end)
{
    const uint8_t *h = b->data;
    while (off < end) {
        uint8_t type = h[off];
        if (type == OPT_PAD1) {
            off++;
            continue;
        }
        if (off + 2 > end || off + 2 + h[off + 1] > end)
            return refuse(st, b, ip, &st->ctr.ip6_drop_option, true,
                          ICMP6_PARAM_HEADER, off + 1);
        if (type != OPT_PADN && type != OPT_ROUTER_ALERT) {
            /* RFC 8200 4.2: the top two bits say what to do with an
             * option we do not know: skip, drop, drop and answer, drop
             * and answer unless it went to a multicast group */
            switch (type >> 6) {
            case 0:
                break;
            case 1:
                return refuse(st, b, ip, &st->ctr.ip6_drop_option, false, 0, 0);
            case 2:
                return refuse(st, b, ip, &st->ctr.ip6_drop_option, true,
                              ICMP6_PARAM_OPTION, off);
            default:
                return refuse(st, b, ip, &st->ctr.ip6_drop_option,
                              !ip->multicast, ICMP6_PARAM_OPTION, off);
            }
        }
        off += 2u + h[off + 1];
    }
    return true;
}

/* The minimum bytes of an upper-layer header a first fragment must hold
 * (RFC 7112: the whole chain through the upper-layer header). */
static uint32_t l4_min(uint8_t proto)
{
    return proto == IP_PROTO_TCP ? 20 : proto == IP6_EXT_NONE ? 0 : 8;
}

/* RFC 7112: the headers after the fragment header of a first fragment,
 * through the upper-layer header, lie inside it. Lengths only; the
 * options are judged after reassembly. */
static bool first_frag_whole(const uint8_t *h, uint32_t off, uint32_t len,
                             uint8_t nh)
{
    for (unsigned n = 0; n < IP6_MAX_EXT; n++) {
        if (nh != IP6_EXT_DSTOPTS && nh != IP6_EXT_ROUTING)
            return off + l4_min(nh) <= len;
        if (off + 8 > len)
            return false;
        nh = h[off];
        off += (h[off + 1] + 1u) * 8;
    }
    return false;
}

bool ip6_ext_walk(tern_stack *st, tern_buf *b, ip6_rx *ip, uint32_t *frag_off)
{
    const uint8_t *h = b->data;
    uint32_t len = b->len, off = IP6_HDR_LEN, nh_at = 6;
    uint8_t nh = h[6];
    *frag_off = 0;
    for (unsigned n = 0;; n++) {
        if (nh == IP_PROTO_TCP || nh == IP_PROTO_UDP || nh == IP_PROTO_ICMP6) {
            ip->proto = nh;
            ip->hdr_len = (uint16_t)off;
            return true;
        }
        if (nh == IP6_EXT_NONE)
            return refuse(st, b, ip, &st->ctr.ip6_drop_proto, false, 0, 0);
        bool ext = nh == IP6_EXT_HOP || nh == IP6_EXT_DSTOPTS ||
                   nh == IP6_EXT_ROUTING || nh == IP6_EXT_FRAGMENT;
        /* an unknown header, or hop-by-hop anywhere but first */
        if (!ext || (nh == IP6_EXT_HOP && off != IP6_HDR_LEN))
            return refuse(st, b, ip, &st->ctr.ip6_drop_proto, true,
                          ICMP6_PARAM_NEXT, nh_at);
        if (n >= IP6_MAX_EXT)
            return refuse(st, b, ip, &st->ctr.ip6_drop_ext_chain, false, 0, 0);
        if (off + 8 > len)
            return refuse(st, b, ip, &st->ctr.ip6_drop_ext_hdr, false, 0, 0);
        uint32_t hl = nh == IP6_EXT_FRAGMENT ? 8 : (h[off + 1] + 1u) * 8;
        if (off + hl > len)
            return refuse(st, b, ip, &st->ctr.ip6_drop_ext_hdr, false, 0, 0);
        if (nh == IP6_EXT_HOP || nh == IP6_EXT_DSTOPTS) {
            if (!options_ok(st, b, ip, off + 2, off + hl))
                return false;
        } else if (nh == IP6_EXT_ROUTING) {
            /* a routing header with segments left would need us to
             * forward: a parameter problem at the type field (RFC 8200
             * 4.4); with none left it is ignored, type 0 too (RFC 5095
             * 3: processed as an unrecognized type) */
            if (h[off + 3] != 0)
                return refuse(st, b, ip, &st->ctr.ip6_drop_routing, true,
                              ICMP6_PARAM_HEADER, off + 2);
        } else {
            uint16_t fo = rd16(h + off + 2);
            if ((fo & 0xfff9) == 0) {
                /* offset 0, no more fragments: an atomic fragment, read
                 * at once outside reassembly (RFC 6946) */
                CTR(st, ip6_frag_atomic);
            } else {
                if ((fo & 0xfff8) == 0 &&
                    !first_frag_whole(h, off + 8, len, h[off]))
                    return refuse(st, b, ip, &st->ctr.ip6_drop_frag_chain,
                                  true, ICMP6_PARAM_CHAIN, 0);
                *frag_off = off;
                return true;
            }
        }
        nh_at = off;
        nh = h[off];
        off += hl;
    }
}
