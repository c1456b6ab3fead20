/* udp.c - UDP (RFC 768) over IPv4 and IPv6: a small table of bound
 * ports, checksums always generated, verified unless the NIC did it (over
 * IPv6 a zero checksum is refused, RFC 8200 8.1). */
#include "addr.h"
#include "ip6.h"

#define UDP_HDR_LEN 8

void udp_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    struct tern_udp *u = carve_take(c, cfg->max_udp * sizeof *u, 8);
    if (st)
        st->udp = u;
}

static struct tern_udp *udp_find(tern_stack *st, uint16_t port)
{
    for (uint32_t i = 0; i < st->cfg.max_udp; i++)
        if (st->udp[i].port == port)
            return &st->udp[i];
    return NULL;
}

tern_udp *tern_udp_bind(tern_stack *st, uint16_t port, void *user, int *err)
{
    int e = TERN_OK;
    struct tern_udp *u = NULL;
    if (port == 0)
        e = TERN_EINVAL;
    else if (udp_find(st, port))
        e = TERN_EADDRINUSE;
    else if (!(u = udp_find(st, 0)))
        e = TERN_ENOMEM;
    if (err)
        *err = e;
    if (e)
        return NULL;
    u->port = port;
    u->user = user;
    return u;
}

void tern_udp_unbind(tern_stack *st, tern_udp *sock)
{
    (void)st;
    sock->port = 0;
    sock->user = NULL;
}

/* ps: the pseudo header's sum (with the UDP length). v6: no "no
 * checksum" (zero) allowed (RFC 8200 8.1). */
static bool udp_csum_ok(tern_stack *st, const tern_buf *b, uint32_t ps,
                        uint32_t ulen, bool v6)
{
    const uint8_t *u = b->data;
    if (b->flags & TERN_BUF_RX_L4_CSUM_BAD)
        return false;
    if (rd16(u + 6) == 0)
        return !v6;            /* 0 = sender sent no checksum (IPv4 only) */
    if ((b->flags & TERN_BUF_RX_L4_CSUM_OK) || st->cfg.fuzz_skip_csum)
        return true;
    if (b->frag)               /* over one buffer: reassembled in a chain */
        return tern_csum_fold(csum_chain(b, u, ulen, ps)) == 0xffff;
    return tern_csum_fold(tern_csum_partial(u, ulen, ps)) == 0xffff;
}

/* The header tests, the checksum and the delivery, for either family
 * (ip4 or ip6 set: where it came from, for the checksum and the port
 * unreachable error). */
static void udp_in(tern_stack *st, tern_buf *b, const ip4_rx *ip4,
                   const ip6_rx *ip6)
{
    CTR(st, udp_in);
    const uint8_t *u = b->data;
    if (b->len < UDP_HDR_LEN) {
        CTR(st, udp_drop_short);
        goto drop;
    }
    uint32_t ulen = rd16(u + 4);
    if (ulen < UDP_HDR_LEN || ulen > (b->frag ? buf_chain_len(b) : b->len)) {
        CTR(st, udp_drop_len);
        goto drop;
    }
    buf_trim(b, ulen);
    uint32_t ps = ip6 ? ip6_pseudo_sum(ip6->src, ip6->dst, IP_PROTO_UDP, ulen)
                      : ip4_pseudo_sum(ip4->src, ip4->dst, IP_PROTO_UDP, ulen);
    if (!udp_csum_ok(st, b, ps, ulen, ip6 != NULL)) {
        CTR(st, udp_drop_csum);
        goto drop;
    }
    tern_udp_meta meta;
    if (ip6) {
        meta.src = tern_addr_v6(ip6->src);
        meta.dst = tern_addr_v6(ip6->dst);
    } else {
        meta.src = tern_addr_v4(ip4->src);
        meta.dst = tern_addr_v4(ip4->dst);
    }
    meta.src_port = rd16(u);
    meta.dst_port = rd16(u + 2);
    if (meta.dst_port == 0) {
        CTR(st, udp_drop_port0);
        goto drop;
    }
    struct tern_udp *s = udp_find(st, meta.dst_port);
    if (!s) {
        CTR(st, udp_drop_no_port);
        if (ip6)
            icmp6_send_error(st, ip6, ICMP6_UNREACH, ICMP6_UNREACH_PORT, 0, u,
                             b->len);
        else
            icmp_send_unreach(st, ip4, ICMP_UNREACH_PORT, u, b->len);
        goto drop;
    }
    if (st->cfg.cb.udp_recv)
        st->cfg.cb.udp_recv(st, s, s->user, &meta, b, u + UDP_HDR_LEN,
                            b->len - UDP_HDR_LEN);
drop:
    tern_buf_release(st, b);
}

void udp_input(tern_stack *st, tern_buf *b, const ip4_rx *ip)
{
    udp_in(st, b, ip, NULL);
}

void udp_input6(tern_stack *st, tern_buf *b, const ip6_rx *ip)
{
    udp_in(st, b, NULL, ip);
}

/* Write the UDP header in front of b's payload (room tested) and its
 * checksum over the pseudo header sum ps (or leave that to the NIC when
 * it may: it cannot sum a datagram that leaves in fragments). */
static void udp_header(tern_stack *st, tern_buf *b, uint16_t src_port,
                       uint16_t dst_port, uint32_t ulen, uint32_t ps,
                       bool nic_may)
{
    b->data -= UDP_HDR_LEN;
    b->len = ulen;
    uint8_t *u = b->data;
    wr16(u, src_port);
    wr16(u + 2, dst_port);
    wr16(u + 4, (uint16_t)ulen);
    if ((st->cfg.caps & TERN_CAP_TX_L4_CSUM) && nic_may) {
        wr16(u + 6, tern_csum_fold(ps));
        b->flags |= TERN_BUF_TX_L4_CSUM;
    } else {
        wr16(u + 6, 0);
        uint16_t c = (uint16_t)~tern_csum_fold(tern_csum_partial(u, ulen, ps));
        wr16(u + 6, c ? c : 0xffff);   /* 0 means "no checksum" */
    }
    CTR(st, udp_out);
}

/* tern_udp_send_buf to an IPv6 destination: from the source address the
 * IPv6 layer picks for it; ip6_output fragments what passes the path MTU. */
static int udp_send6(tern_stack *st, uint16_t src_port, const uint8_t dst[16],
                     uint16_t dst_port, tern_buf *b)
{
    uint8_t src[16];
    uint32_t ulen = b->len + UDP_HDR_LEN;
    int e = 0;
    if (!st->ip6)
        e = -TERN_EAFNOSUPPORT;
    else if (ulen > 0xffff || b->frag)
        e = -TERN_EMSGSIZE;
    else if (b->data - b->head < UDP_HDR_LEN + IP6_HDR_LEN + ETH_HDR_LEN ||
             ip6_src_for(st, dst, src) != 0)
        e = -TERN_EINVAL;
    if (e) {
        tern_buf_release(st, b);
        return e;
    }
    udp_header(st, b, src_port, dst_port, ulen,
               ip6_pseudo_sum(src, dst, IP_PROTO_UDP, ulen),
               ulen + IP6_HDR_LEN <= st->cfg.mtu);
    return ip6_output(st, b, src, dst, IP_PROTO_UDP, 0, 0);
}

size_t tern_udp_len(const tern_buf *buf, size_t len)
{
    for (const tern_buf *b = buf->frag; b; b = b->frag)
        len += b->len;
    return len;
}

size_t tern_udp_copy(const tern_buf *buf, const uint8_t *data, size_t len,
                     void *out, size_t cap)
{
    uint8_t *o = out;
    size_t done = 0;
    for (const tern_buf *b = buf; b && done < cap; b = b->frag) {
        const uint8_t *p = b == buf ? data : b->data;
        size_t n = b == buf ? len : b->len;
        if (n > cap - done)
            n = cap - done;
        tern_memcpy(o + done, p, n);
        done += n;
    }
    return done;
}

int tern_udp_send_buf(tern_stack *st, uint16_t src_port, const tern_addr *dst,
                      uint16_t dst_port, tern_buf *b)
{
    if (dst && dst->family == TERN_AF_INET6)
        return udp_send6(st, src_port, dst->u.v6, dst_port, b);
    uint32_t dst_ip;
    int e = addr_dst_v4(dst, st->cfg.ip, &dst_ip);
    if (e) {
        tern_buf_release(st, b);
        return e;
    }
    uint32_t ulen = b->len + UDP_HDR_LEN;
    if (ulen + IP4_HDR_LEN > 0xffff || b->frag) {  /* over the MTU: fragmented */
        tern_buf_release(st, b);
        return -TERN_EMSGSIZE;
    }
    if (b->data - b->head < UDP_HDR_LEN + IP4_HDR_LEN + ETH_HDR_LEN) {
        tern_buf_release(st, b);
        return -TERN_EINVAL;
    }
    udp_header(st, b, src_port, dst_port, ulen,
               ip4_pseudo_sum(st->cfg.ip, dst_ip, IP_PROTO_UDP, ulen),
               ulen + IP4_HDR_LEN <= st->cfg.mtu);
    return ip4_output(st, b, 0, dst_ip, IP_PROTO_UDP, 0);
}

int tern_udp_send(tern_stack *st, uint16_t src_port, const tern_addr *dst,
                  uint16_t dst_port, const void *data, size_t len)
{
    uint32_t dst_ip, ip_hdr = IP4_HDR_LEN;
    int e = addr_dst_v4(dst, st->cfg.ip, &dst_ip);
    if (e == -TERN_EAFNOSUPPORT && dst->family == TERN_AF_INET6 &&
        st->ip6)
        ip_hdr = 0;             /* IPv6: the payload length excludes it */
    else if (e)
        return e;
    if (len + UDP_HDR_LEN + ip_hdr > 0xffff)
        return -TERN_EMSGSIZE;
    tern_buf *b = tern_buf_alloc(st);
    if (!b) {
        CTR(st, tx_drop_nobuf);
        return -TERN_ENOBUFS;
    }
    if (len > b->size - (uint32_t)(b->data - b->head)) {
        tern_buf_release(st, b);
        return -TERN_EMSGSIZE;
    }
    tern_memcpy(b->data, data, len);
    b->len = (uint32_t)len;
    return tern_udp_send_buf(st, src_port, dst, dst_port, b);
}
