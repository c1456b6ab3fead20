/* nd6_dad.c - Duplicate Address Detection (RFC 4862 5.4), router and
 * prefix discovery from Router Advertisements (RFC 4861 6.3.4, RFC 4862
 * 5.5; only with cfg.ip6_accept_ra) and the MLDv2 reports (RFC 3810)
 * that make switches forward our solicited-node groups to us. */
#include "nd6.h"

#define DAD_RETRANS_NS TERN_NS_PER_SEC
#define MLD_INTERVAL_NS TERN_NS_PER_SEC
#define MLD_REPORTS 2            /* unsolicited reports at start */
#define MLD_REC_LEN 20
#define MLD_IS_EXCLUDE 2         /* record types: answer to a query */
#define MLD_TO_EXCLUDE 4         /* joining */
#define NEVER_EXPIRES 0xffffffffu

/* A deadline nd6_dad_poll must look at: its scan is skipped before
 * l->dad_next, the earliest one it knows. */
static void dad_wake(struct ip6_layer *l, uint64_t at)
{
    if (at < l->dad_next)
        l->dad_next = at;
}

/* cb.addr_state: the end of an address's DAD. */
static void dad_notify(tern_stack *st, const struct ip6_addr *a, int state)
{
    if (st->cfg.cb.addr_state) {
        tern_addr t = tern_addr_v6(a->a);
        st->cfg.cb.addr_state(st, &t, state);
    }
}

static void dad_step(tern_stack *st, struct ip6_addr *a)
{
    a->dad_left--;
    a->dad_at = st->now + DAD_RETRANS_NS;
    dad_wake(st->ip6, a->dad_at);
    nd6_send_ns(st, a->a, NULL, true);
}

/* ---- the public view of our addresses ---- */
static int public_state(uint8_t state)
{
    return state == IP6A_OK          ? TERN_ADDR_USABLE
           : state == IP6A_TENTATIVE ? TERN_ADDR_TENTATIVE
           : state == IP6A_DUPLICATE ? TERN_ADDR_DUPLICATE
                                     : TERN_ADDR_NOT_OURS;
}

int tern_addr_state(const tern_stack *st, const tern_addr *a)
{
    if (a && a->family == TERN_AF_INET)
        return st->cfg.ip && a->u.v4 == st->cfg.ip ? TERN_ADDR_USABLE
                                                   : TERN_ADDR_NOT_OURS;
    if (!a || a->family != TERN_AF_INET6)
        return TERN_ADDR_NOT_OURS;
    const struct ip6_addr *e = ip6_addr_find((tern_stack *)st, a->u.v6);
    return e ? public_state(e->state) : TERN_ADDR_NOT_OURS;
}

unsigned tern_addr_list(const tern_stack *st, tern_addr *out, int *state,
                        unsigned max)
{
    unsigned n = 0;
    if (st->cfg.ip) {
        if (n < max) {
            out[n] = tern_addr_v4(st->cfg.ip);
            if (state)
                state[n] = TERN_ADDR_USABLE;
        }
        n++;
    }
    for (unsigned i = 0; st->ip6 && i < IP6_MAX_ADDRS; i++) {
        const struct ip6_addr *e = &st->ip6->addr[i];
        if (e->state == IP6A_FREE)
            continue;
        if (n < max) {
            out[n] = tern_addr_v6(e->a);
            if (state)
                state[n] = public_state(e->state);
        }
        n++;
    }
    return n;
}

void nd6_dad_start(tern_stack *st, struct ip6_addr *a)
{
    a->dad_left = st->cfg.dad_transmits;
    if (st->ip6->started)
        dad_step(st, a);
}

static void send_rs(tern_stack *st)
{
    tern_buf *b = tern_buf_alloc(st);
    if (!b) {
        CTR(st, tx_drop_nobuf);
        return;
    }
    uint8_t *m = b->data, src[16];
    tern_memset(m, 0, 8);
    m[0] = ICMP6_RS;
    b->len = 8;
    if (ip6_src_for(st, ip6_all_routers, src)) {
        tern_memset(src, 0, 16);         /* from ::, with no address option */
    } else {
        m[8] = ND_OPT_SLLA;
        m[9] = 1;
        tern_memcpy(m + 10, st->cfg.mac, 6);
        b->len = 16;
    }
    if (icmp6_send(st, b, src, ip6_all_routers, 255) == 0)
        CTR(st, nd_rs_out);
}

void nd6_dad_begin(tern_stack *st)
{
    struct ip6_layer *l = st->ip6;
    l->started = true;
    l->dad_next = 0;                    /* the first poll scans */
    if (st->cfg.ip6_no_dad)
        return;
    /* RFC 4862 5.4.2: join the solicited-node groups before asking */
    l->mld_left = MLD_REPORTS - 1;
    l->mld_at = st->now + MLD_INTERVAL_NS;
    mld_send_report(st, false);
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++)
        if (l->addr[i].state == IP6A_TENTATIVE)
            nd6_dad_start(st, &l->addr[i]);
}

uint64_t nd6_dad_poll(tern_stack *st, uint64_t now)
{
    struct ip6_layer *l = st->ip6;
    uint64_t next = TERN_NEVER;
    if (!l->started)
        return next;
    if (now < l->dad_next)              /* nothing due: no scan */
        return l->dad_next;
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++) {
        struct ip6_addr *a = &l->addr[i];
        if (a->state != IP6A_FREE && a->valid_until && now >= a->valid_until) {
            tern_memset(a, 0, sizeof *a);      /* an RA prefix expired */
            continue;
        }
        if (a->state != IP6A_FREE && a->valid_until && a->valid_until < next)
            next = a->valid_until;
        if (a->state != IP6A_TENTATIVE)
            continue;
        if (now >= a->dad_at) {
            if (a->dad_left) {
                dad_step(st, a);
            } else {
                a->state = IP6A_OK;
                CTR(st, nd_dad_ok);
                stack_log(st, 2, "IPv6 address ready (DAD done)");
                dad_notify(st, a, TERN_ADDR_USABLE);
                if (ip6_is_linklocal(a->a) && st->cfg.ip6_accept_ra)
                    send_rs(st);
                continue;
            }
        }
        if (a->dad_at < next)
            next = a->dad_at;
    }
    if (l->mld_left && now >= l->mld_at) {
        l->mld_left--;
        l->mld_at = now + MLD_INTERVAL_NS;
        mld_send_report(st, false);
    }
    if (l->mld_left && l->mld_at < next)
        next = l->mld_at;
    l->dad_next = next;
    return next;
}

void nd6_dad_conflict(tern_stack *st, struct ip6_addr *a)
{
    CTR(st, nd_dad_conflict);
    if (a->state == IP6A_TENTATIVE) {
        a->state = IP6A_DUPLICATE;
        stack_log(st, 1, "IPv6 duplicate address: another node uses it; "
                         "the address stays unused");
        dad_notify(st, a, TERN_ADDR_DUPLICATE);
    } else {
        stack_log(st, 1, "IPv6 address conflict: another node claims one "
                         "of our addresses");
    }
}

/* ---- router advertisements ---- */

static uint64_t expiry(const tern_stack *st, uint32_t secs)
{
    return secs == NEVER_EXPIRES ? TERN_NEVER
                                 : st->now + (uint64_t)secs * TERN_NS_PER_SEC;
}

static void ra_prefix(tern_stack *st, const uint8_t *p)
{
    struct ip6_layer *l = st->ip6;
    uint8_t plen = p[2], flags = p[3];
    uint32_t valid = rd32(p + 4);
    const uint8_t *pre = p + 16;
    if (plen > 128 || ip6_is_linklocal(pre) || ip6_is_mcast(pre))
        return;
    if (flags & 0x80) {            /* on-link */
        struct ip6_prefix *slot = NULL;
        for (unsigned i = 0; i < IP6_RA_PREFIXES; i++) {
            struct ip6_prefix *q = &l->onlink[i];
            if (q->plen == plen && ip6_prefix_eq(q->p, pre, plen)) {
                slot = q;
                break;
            }
            if (!slot && (!q->plen || st->now >= q->until))
                slot = q;
        }
        if (slot) {
            tern_memcpy(slot->p, pre, 16);
            slot->plen = plen;
            slot->until = expiry(st, valid);
        }
    }
    if ((flags & 0x40) && plen == 64 && valid) {   /* autonomous */
        uint8_t a[16];
        tern_memcpy(a, pre, 8);
        tern_memcpy(a + 8, l->ll_mac_iid, 8);
        struct ip6_addr *e = ip6_addr_find(st, a);
        bool fresh = false;
        for (unsigned i = 0; !e && i < IP6_MAX_ADDRS; i++) {
            if (l->addr[i].state == IP6A_FREE) {
                e = &l->addr[i];
                fresh = true;
                tern_memcpy(e->a, a, 16);
                e->plen = 64;
                e->state = st->cfg.ip6_no_dad ? IP6A_OK : IP6A_TENTATIVE;
                e->valid_until = expiry(st, valid);
                dad_wake(l, e->valid_until);
                l->ra_addrs = true;     /* see ip6_conn_addr_ok */
                if (e->state == IP6A_TENTATIVE) {
                    mld_send_report(st, false);
                    nd6_dad_start(st, e);
                }
            }
        }
        /* a configured address (valid_until 0) keeps no lifetime; an
         * autoconf one is extended, but an RA cannot cut it below two
         * hours (RFC 4862 5.5.3 (e): no quick denial of service) */
        if (e && !fresh && e->valid_until) {
            uint64_t until = expiry(st, valid);
            uint64_t floor = st->now + 7200ull * TERN_NS_PER_SEC;
            if (until > floor || until > e->valid_until)
                e->valid_until = until;
            else if (e->valid_until > floor)
                e->valid_until = floor;
            dad_wake(l, e->valid_until);
        }
    }
}

void nd6_ra_input(tern_stack *st, const uint8_t *m, uint32_t len, const ip6_rx *ip)
{
    CTR(st, nd_ra_in);
    if (!st->cfg.ip6_accept_ra)
        return;
    if (!ip6_is_linklocal(ip->src)) {
        CTR(st, nd_drop_bad);
        return;
    }
    struct ip6_layer *l = st->ip6;
    uint16_t life = rd16(m + 6);
    if (life) {
        tern_memcpy(l->router, ip->src, 16);
        l->router_until = st->now + (uint64_t)life * TERN_NS_PER_SEC;
    } else if (ip6_eq(l->router, ip->src)) {
        l->router_until = 0;
    }
    for (uint32_t off = 16; off + 8 <= len; off += m[off + 1] * 8u) {
        const uint8_t *p = m + off;
        if (p[0] == ND_OPT_SLLA && p[1] == 1)
            nd6_learn_lla(st, ip->src, p + 2);
        else if (p[0] == ND_OPT_PREFIX && p[1] == 4 && off + 32 <= len)
            ra_prefix(st, p);
    }
}

/* ---- MLDv2 reports ---- */

void mld_send_report(tern_stack *st, bool answer)
{
    struct ip6_layer *l = st->ip6;
    tern_buf *b = tern_buf_alloc(st);
    if (!b) {
        CTR(st, tx_drop_nobuf);
        return;
    }
    uint8_t *m = b->data;
    tern_memset(m, 0, 8);
    m[0] = ICMP6_MLD2_REPORT;
    uint32_t n = 0;
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++) {
        const struct ip6_addr *a = &l->addr[i];
        if (a->state == IP6A_FREE || a->state == IP6A_DUPLICATE)
            continue;
        uint8_t *r = m + 8 + n * MLD_REC_LEN, g[16];
        ip6_solicited_node(a->a, g);
        bool dup = false;
        for (uint32_t k = 0; k < n; k++)
            dup |= ip6_eq(m + 8 + k * MLD_REC_LEN + 4, g);
        if (dup)
            continue;
        r[0] = answer ? MLD_IS_EXCLUDE : MLD_TO_EXCLUDE;
        r[1] = 0;
        wr16(r + 2, 0);
        tern_memcpy(r + 4, g, 16);
        n++;
    }
    wr16(m + 6, (uint16_t)n);
    b->len = 8 + n * MLD_REC_LEN;
    uint8_t src[16] = {0};
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++)
        if (l->addr[i].state == IP6A_OK && ip6_is_linklocal(l->addr[i].a))
            tern_memcpy(src, l->addr[i].a, 16);
    /* the ICMPv6 sum, then the hop-by-hop header with Router Alert in
     * front of it (RFC 3810 5) */
    uint32_t sum = ip6_pseudo_sum(src, ip6_mld2_routers, IP_PROTO_ICMP6, b->len);
    wr16(m + 2, (uint16_t)~tern_csum_fold(tern_csum_partial(m, b->len, sum)));
    static const uint8_t hbh[8] = {IP_PROTO_ICMP6, 0, 5, 2, 0, 0, 1, 0};
    b->data -= 8;
    b->len += 8;
    tern_memcpy(b->data, hbh, 8);
    if (ip6_output_hl(st, b, src, ip6_mld2_routers, IP6_EXT_HOP, 0, 0, 1) == 0)
        CTR(st, mld_report_out);
}

void mld_query_input(tern_stack *st, const uint8_t *m, uint32_t len, const ip6_rx *ip)
{
    CTR(st, mld_query_in);
    /* RFC 3810 5.1.14: link-local source, hop limit 1 */
    if (len < 24 || ip->hop_limit != 1 || !ip6_is_linklocal(ip->src)) {
        CTR(st, nd_drop_bad);
        return;
    }
    const uint8_t *g = m + 8;
    if (ip6_is_unspec(g) || ip6_mcast_joined(st, g))
        mld_send_report(st, true);
}
