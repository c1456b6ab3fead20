/* ip6.c - IPv6 receive validation and dispatch (RFC 8200), transmit with
 * next-hop choice, our addresses, source selection and the path MTU cache.
 * Extension headers are walked in ip6_ext.c, fragments in ip6_frag.c. */
#include "ip6.h"

#define PMTU_EXPIRE_NS (600 * TERN_NS_PER_SEC)   /* RFC 8201 5.3: 10 min */

const uint8_t ip6_all_nodes[16] = {0xff, 2, [15] = 1};
const uint8_t ip6_all_routers[16] = {0xff, 2, [15] = 2};
const uint8_t ip6_mld2_routers[16] = {0xff, 2, [15] = 0x16};

static bool ip6_wanted(const tern_config *cfg)
{
    return cfg->n_ip6 > 0 || cfg->ip6_enable;
}

static void addr_add(struct ip6_layer *l, const tern_config *cfg,
                     const uint8_t a[16], uint8_t plen)
{
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++) {
        struct ip6_addr *e = &l->addr[i];
        if (e->state == IP6A_FREE) {
            tern_memcpy(e->a, a, 16);
            e->plen = plen ? plen : 64;
            e->state = cfg->ip6_no_dad ? IP6A_OK : IP6A_TENTATIVE;
            return;
        }
    }
}

void ip6_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    if (!ip6_wanted(cfg))
        return;
    struct ip6_layer *l = carve_take(c, sizeof *l, 8);
    if (st) {
        st->ip6 = l;
        /* EUI-64 (RFC 4291 2.5.1): the MAC with ff:fe in the middle and
         * the universal/local bit flipped */
        const uint8_t *m = cfg->mac;
        uint8_t iid[8] = {(uint8_t)(m[0] ^ 2), m[1], m[2], 0xff, 0xfe,
                          m[3], m[4], m[5]};
        tern_memcpy(l->ll_mac_iid, iid, 8);
        if (!cfg->ip6_no_link_local) {
            uint8_t ll[16] = {0xfe, 0x80};
            tern_memcpy(ll + 8, iid, 8);
            addr_add(l, cfg, ll, 64);
        }
        for (unsigned i = 0; i < cfg->n_ip6; i++)
            addr_add(l, cfg, cfg->ip6[i], cfg->ip6_prefix_len[i]);
        l->icmp_tokens = cfg->icmp_rate_per_sec;
    }
    nd6_mem(st, cfg, c);
    reasm6_mem(st, cfg, c);
}

bool ip6_prefix_eq(const uint8_t *a, const uint8_t *b, unsigned plen)
{
    unsigned n = plen / 8;
    if (tern_memcmp(a, b, n) != 0)
        return false;
    if (plen % 8 == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff00u >> (plen % 8));
    return ((a[n] ^ b[n]) & mask) == 0;
}

void ip6_solicited_node(const uint8_t a[16], uint8_t out[16])
{
    static const uint8_t pre[13] = {0xff, 2, [11] = 1, [12] = 0xff};
    tern_memcpy(out, pre, 13);
    tern_memcpy(out + 13, a + 13, 3);
}

void ip6_mcast_mac(const uint8_t g[16], uint8_t mac[6])
{
    mac[0] = 0x33;
    mac[1] = 0x33;
    tern_memcpy(mac + 2, g + 12, 4);
}

bool ip6_unicast_ok(const uint8_t a[16])
{
    static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};
    static const uint8_t loop[16] = {[15] = 1};
    return !ip6_is_mcast(a) && !ip6_is_unspec(a) && !ip6_eq(a, loop) &&
           tern_memcmp(a, v4mapped, 12) != 0;
}

struct ip6_addr *ip6_addr_find(tern_stack *st, const uint8_t a[16])
{
    if (!st->ip6)
        return NULL;
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++) {
        struct ip6_addr *e = &st->ip6->addr[i];
        if (e->state != IP6A_FREE && ip6_eq(e->a, a))
            return e;
    }
    return NULL;
}

bool ip6_is_local(const tern_stack *st, const uint8_t a[16])
{
    struct ip6_addr *e = ip6_addr_find((tern_stack *)st, a);
    return e && e->state == IP6A_OK;
}

bool ip6_mcast_joined(const tern_stack *st, const uint8_t g[16])
{
    if (!st->ip6)
        return false;
    if (ip6_eq(g, ip6_all_nodes))
        return true;
    uint8_t sn[16];
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++) {
        const struct ip6_addr *e = &st->ip6->addr[i];
        if (e->state == IP6A_FREE || e->state == IP6A_DUPLICATE)
            continue;
        ip6_solicited_node(e->a, sn);
        if (ip6_eq(sn, g))
            return true;
    }
    return false;
}

bool ip6_on_link(const tern_stack *st, const uint8_t dst[16])
{
    if (ip6_is_linklocal(dst))
        return true;
    const struct ip6_layer *l = st->ip6;
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++) {
        const struct ip6_addr *e = &l->addr[i];
        if (e->state != IP6A_FREE && !ip6_is_linklocal(e->a) &&
            ip6_prefix_eq(e->a, dst, e->plen))
            return true;
    }
    for (unsigned i = 0; i < IP6_RA_PREFIXES; i++) {
        const struct ip6_prefix *p = &l->onlink[i];
        if (p->plen && st->now < p->until && ip6_prefix_eq(p->p, dst, p->plen))
            return true;
    }
    return false;
}

/* Bits a and b share from the start (RFC 6724 rule 8's longest match). */
static unsigned common_bits(const uint8_t *a, const uint8_t *b)
{
    unsigned n = 0;
    for (unsigned i = 0; i < 16; i++, n += 8) {
        uint8_t x = a[i] ^ b[i];
        if (x) {
            while (!(x & 0x80)) {
                x = (uint8_t)(x << 1);
                n++;
            }
            return n;
        }
    }
    return n;
}

int ip6_src_for(const tern_stack *st, const uint8_t dst[16], uint8_t src[16])
{
    if (!st->ip6)
        return -TERN_EINVAL;
    /* link-local scope (fe80::/10, ff02::/16) wants the link-local
     * address; others a global one sharing the longest prefix, else the
     * link-local one (rule 2 falls back when nothing else fits) */
    bool ll = ip6_is_linklocal(dst) || (ip6_is_mcast(dst) && (dst[1] & 0xf) <= 2);
    const struct ip6_addr *best = NULL, *any = NULL;
    unsigned best_bits = 0;
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++) {
        const struct ip6_addr *e = &st->ip6->addr[i];
        if (e->state != IP6A_OK)
            continue;
        if (!any)
            any = e;
        if (ip6_is_linklocal(e->a) != ll)
            continue;
        unsigned bits = common_bits(e->a, dst);
        if (!best || bits > best_bits) {
            best = e;
            best_bits = bits;
        }
    }
    if (!best)
        best = any;
    if (!best)
        return -TERN_EINVAL;
    tern_memcpy(src, best->a, 16);
    return 0;
}

/* ---- path MTU (RFC 8201) ---- */

static struct ip6_pmtu *pmtu_find(tern_stack *st, const uint8_t dst[16])
{
    for (unsigned i = 0; i < IP6_PMTU_ENTRIES; i++) {
        struct ip6_pmtu *p = &st->ip6->pmtu[i];
        if (p->mtu && ip6_eq(p->dst, dst))
            return p;
    }
    return NULL;
}

uint32_t ip6_path_mtu(tern_stack *st, const uint8_t dst[16])
{
    uint32_t mtu = st->cfg.mtu < IP6_MIN_MTU ? IP6_MIN_MTU : st->cfg.mtu;
    if (!st->ip6)
        return mtu;
    struct ip6_pmtu *p = pmtu_find(st, dst);
    if (p && st->now >= p->expires) {
        p->mtu = 0;     /* aged out: try the link MTU again */
        p = NULL;
    }
    return p && p->mtu < mtu ? p->mtu : mtu;
}

void ip6_pmtu_set(tern_stack *st, const uint8_t dst[16], uint32_t mtu)
{
    if (mtu < IP6_MIN_MTU)
        mtu = IP6_MIN_MTU;
    struct ip6_pmtu *p = pmtu_find(st, dst);
    if (!p) {
        /* a free entry, else the one expiring first */
        p = &st->ip6->pmtu[0];
        for (unsigned i = 0; i < IP6_PMTU_ENTRIES; i++) {
            struct ip6_pmtu *q = &st->ip6->pmtu[i];
            if (!q->mtu) {
                p = q;
                break;
            }
            if (q->expires < p->expires)
                p = q;
        }
        tern_memcpy(p->dst, dst, 16);
        p->mtu = 0;
    }
    if (!p->mtu || mtu < p->mtu)
        p->mtu = mtu;
    p->expires = st->now + PMTU_EXPIRE_NS;
}

/* ---- receive ---- */

static void drop(tern_stack *st, tern_buf *b, uint64_t *ctr)
{
    (*ctr)++;
    tern_buf_release(st, b);
}

/* Fill ip from the fixed header at h. */
static void rx_fill(ip6_rx *ip, const uint8_t *h)
{
    ip->ip_hdr = h;
    ip->src = h + 8;
    ip->dst = h + 24;
    ip->flow = rd32(h) & 0xfffff;
    ip->hop_limit = h[7];
    ip->multicast = ip6_is_mcast(h + 24);
    ip->hdr_len = IP6_HDR_LEN;
    ip->proto = h[6];
}

#define DROP(ctr) do { drop(st, b, ctr); return; } while (0)

void ip6_input(tern_stack *st, tern_buf *b)
{
    CTR(st, ip6_in);
    const uint8_t *h = b->data;
    if (b->len < IP6_HDR_LEN)
        DROP(&st->ctr.ip6_drop_short);
    if ((h[0] >> 4) != 6)
        DROP(&st->ctr.ip6_drop_version);
    uint32_t total = IP6_HDR_LEN + rd16(h + 4);
    if (total > (b->frag ? buf_chain_len(b) : b->len))
        DROP(&st->ctr.ip6_drop_len);
    buf_trim(b, total);        /* drops Ethernet padding */
    ip6_rx ip;
    rx_fill(&ip, h);
    /* no datagram comes from a multicast address or from us (but one
     * from an address we are testing: a node defending it, RFC 4862) */
    if (ip6_is_mcast(ip.src) || ip6_is_local(st, ip.src))
        DROP(&st->ctr.ip6_drop_bad_src);
    if (ip.multicast) {
        if (!ip6_mcast_joined(st, ip.dst))
            DROP(&st->ctr.ip6_drop_not_ours);
    } else {
        struct ip6_addr *a = ip6_addr_find(st, ip.dst);
        if (!a || a->state == IP6A_DUPLICATE)
            DROP(&st->ctr.ip6_drop_not_ours);
        /* RFC 4862 5.4: a tentative address takes no traffic (DAD's
         * solicitations go to the solicited-node group) */
        if (a->state == IP6A_TENTATIVE)
            DROP(&st->ctr.ip6_drop_tentative);
    }
    uint32_t foff;
    if (!ip6_ext_walk(st, b, &ip, &foff))
        return;
    if (foff) {
        if (st->cfg.no_reassembly || b->frag)
            DROP(&st->ctr.ip6_drop_frag_bad);
        b = ip6_reasm(st, b, foff);
        if (!b)
            return;
        rx_fill(&ip, b->data);
        if (!ip6_ext_walk(st, b, &ip, &foff))
            return;
        if (foff)   /* a fragment inside a fragmented datagram */
            DROP(&st->ctr.ip6_drop_frag_bad);
    }
    /* the unspecified source is for ND and MLD only */
    if (ip6_is_unspec(ip.src) && ip.proto != IP_PROTO_ICMP6)
        DROP(&st->ctr.ip6_drop_bad_src);
    b->data += ip.hdr_len;
    b->len -= ip.hdr_len;
    switch (ip.proto) {
    case IP_PROTO_TCP:
        tcp_input6(st, b, &ip);
        break;
    case IP_PROTO_UDP:
        udp_input6(st, b, &ip);
        break;
    default:    /* ip6_ext_walk lets only these three through */
        icmp6_input(st, b, &ip);
        break;
    }
}

/* ---- transmit ---- */

const uint8_t *ip6_next_hop(const tern_stack *st, const uint8_t dst[16])
{
    if (ip6_on_link(st, dst))
        return dst;
    if (!ip6_is_unspec(st->cfg.ip6_gateway))
        return st->cfg.ip6_gateway;
    if (st->now < st->ip6->router_until)
        return st->ip6->router;
    return NULL;
}

int ip6_send(tern_stack *st, tern_buf *b)
{
    const uint8_t *dst = b->data + 24;
    b->l3_len = IP6_HDR_LEN;
    if (ip6_is_mcast(dst)) {
        uint8_t mac[6];
        ip6_mcast_mac(dst, mac);
        CTR(st, ip6_out);
        eth_output(st, b, mac, ETH_TYPE_IPV6);
        return 0;
    }
    const uint8_t *nh = ip6_next_hop(st, dst);
    if (!nh) {
        CTR(st, ip6_drop_no_route);
        tern_buf_release(st, b);
        return -TERN_EINVAL;
    }
    CTR(st, ip6_out);
    nd6_resolve_and_send(st, b, nh);
    return 0;
}

int ip6_output_hl(tern_stack *st, tern_buf *b, const uint8_t src[16],
                  const uint8_t dst[16], uint8_t proto, uint8_t tclass,
                  uint32_t flow, uint8_t hl)
{
    uint8_t s[16];
    if (!st->ip6 || (!src && ip6_src_for(st, dst, s))) {
        CTR(st, ip6_drop_no_route);
        tern_buf_release(st, b);
        return -TERN_EINVAL;
    }
    if (!src)
        src = s;
    /* a chain other than TCP's: a reply to a request reassembled over one
     * buffer, copied out in fragments */
    bool chain = b->frag && proto != IP_PROTO_TCP;
    uint32_t plen = chain ? buf_chain_len(b) : b->len;
    uint32_t mtu = ip6_path_mtu(st, dst);
    bool frag = (plen + IP6_HDR_LEN > mtu && !(b->flags & TERN_BUF_TX_TSO)) ||
                chain;
    if ((frag && proto == IP_PROTO_TCP) || plen > 0xffff) {
        CTR(st, ip6_drop_too_big);
        tern_buf_release(st, b);
        return -TERN_EMSGSIZE;
    }
    if (b->data - b->head < IP6_HDR_LEN + ETH_HDR_LEN) {
        CTR(st, tx_frames_dropped);
        tern_buf_release(st, b);
        return -TERN_EINVAL;
    }
    uint8_t *h = b->data - IP6_HDR_LEN;
    /* src and dst may lie in the headroom (a reply built in the request's
     * buffer): move them before the header covers them */
    uint8_t sd[32];
    tern_memcpy(sd, src, 16);
    tern_memcpy(sd + 16, dst, 16);
    tern_memcpy(h + 8, sd, 32);
    wr32(h, 0x60000000u | (uint32_t)tclass << 20 | (flow & 0xfffff));
    wr16(h + 4, (uint16_t)plen);
    h[6] = proto;
    h[7] = hl;
    b->data = h;
    b->len += IP6_HDR_LEN;
    if (frag)
        return ip6_frag_out(st, b, mtu);
    return ip6_send(st, b);
}

int ip6_output(tern_stack *st, tern_buf *b, const uint8_t src[16],
               const uint8_t dst[16], uint8_t proto, uint8_t tclass,
               uint32_t flow)
{
    return ip6_output_hl(st, b, src, dst, proto, tclass, flow, IP6_HOP_LIMIT);
}

/* ---- timers ---- */

uint64_t ip6_poll(tern_stack *st, uint64_t now)
{
    if (!st->ip6)
        return TERN_NEVER;
    uint64_t next = nd6_poll(st, now);
    uint64_t t = reasm6_poll(st, now);
    return t < next ? t : next;
}

void ip6_clock_start(tern_stack *st, uint64_t shift)
{
    if (st->ip6)
        nd6_clock_start(st, shift);
}

void ip6_fini(tern_stack *st)
{
    if (!st->ip6)
        return;
    nd6_fini(st);
    reasm6_fini(st);
}
