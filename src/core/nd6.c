/* nd6.c - IPv6 Neighbor Discovery (RFC 4861): solicitations and
 * advertisements, and the neighbor cache.
 *
 * An entry is
 *   INCOMPLETE  being resolved: a multicast solicitation a second, 3 in
 *               all, then it fails and its queued frames are dropped; at
 *               most 3/4 of cfg.nd_pending frames wait on it;
 *   REACHABLE   confirmed within ND_REACHABLE_NS (a solicited
 *               advertisement, or a TCP connection's forward progress:
 *               nd6_cached's hint);
 *   STALE       older, or learned from a packet: used as it is;
 *   DELAY       sent to while STALE: ND_DELAY_NS for an upper-layer
 *               confirmation (the same hint), then
 *   PROBE       unicast solicitations a second, 3 in all, then forgotten.
 * The table has cfg.nd_entries slots (rounded up to a power of two) with
 * a probe window of ND_PROBE; a new entry evicts an INCOMPLETE one, then
 * the least recently used STALE one, never a REACHABLE one; at most half
 * of the table is INCOMPLETE and multicast solicitations for new
 * addresses are rate limited overall. DAD, router advertisements and MLD
 * are in nd6_dad.c. */
#include "nd6.h"

#define ND_PROBE 8
#define ND_REACHABLE_NS (30 * TERN_NS_PER_SEC)
#define ND_RETRANS_NS TERN_NS_PER_SEC
#define ND_DELAY_NS (5 * TERN_NS_PER_SEC)
#define ND_GC_NS (60 * TERN_NS_PER_SEC)
#define ND_TRIES 3
#define ND_REQ_PER_SEC 100

enum { ND_FREE = 0, ND_INCOMPLETE, ND_REACHABLE, ND_STALE, ND_DELAY, ND_PROBE_ST };

struct nd_entry {
    uint8_t ip[16];
    uint8_t mac[6];
    uint8_t state;
    uint8_t tries;
    uint32_t nq;        /* frames waiting in nd_wait */
    uint64_t confirmed; /* last confirmation (creation while INCOMPLETE) */
    uint64_t used;      /* last frame sent through it */
    uint64_t timer;     /* next step of its state */
};

struct nd_pending {
    tern_buf *frame;    /* NULL = free slot */
    uint8_t nh[16];
};

void nd6_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    uint32_t cap = 1;
    while (cap < cfg->nd_entries)
        cap <<= 1;
    struct nd_entry *e = carve_take(c, cap * sizeof *e, 8);
    struct nd_pending *p = carve_take(c, cfg->nd_pending * sizeof *p, 8);
    if (st) {
        st->ip6->nd = e;
        st->ip6->nd_wait = p;
        st->ip6->nd_cap = cap;
        st->ip6->nd_tokens = ND_REQ_PER_SEC;
    }
}

static uint32_t nd_slot(const uint8_t ip[16])
{
    return (rd32(ip + 12) * HASH_MUL32) >> 16;
}

static void set_timer(tern_stack *st, struct nd_entry *e, uint64_t at)
{
    e->timer = at;
    if (at < st->ip6->nd_next_scan)
        st->ip6->nd_next_scan = at;
}

static struct nd_entry *nd_find(tern_stack *st, const uint8_t ip[16])
{
    struct ip6_layer *l = st->ip6;
    uint32_t mask = l->nd_cap - 1, h = nd_slot(ip);
    for (uint32_t i = 0; i < ND_PROBE && i <= mask; i++) {
        struct nd_entry *e = &l->nd[(h + i) & mask];
        if (e->state != ND_FREE && ip6_eq(e->ip, ip))
            return e;
    }
    return NULL;
}

static void nd_forget(tern_stack *st, struct nd_entry *e)
{
    struct ip6_layer *l = st->ip6;
    for (uint32_t i = 0; e->nq && i < st->cfg.nd_pending; i++) {
        struct nd_pending *p = &l->nd_wait[i];
        if (p->frame && ip6_eq(p->nh, e->ip)) {
            CTR(st, nd_pending_expired);
            tern_buf_release(st, p->frame);
            p->frame = NULL;
            e->nq--;
            l->nd_nwait--;
        }
    }
    if (e->state == ND_INCOMPLETE)
        l->nd_incomplete--;
    else if (e->used)
        st->arp_gen++;          /* templates re-read their MAC */
    tern_memset(e, 0, sizeof *e);
}

/* A slot for a new entry (see the file comment for who is evicted). */
static struct nd_entry *nd_new(tern_stack *st, const uint8_t ip[16], uint8_t state)
{
    struct ip6_layer *l = st->ip6;
    uint32_t mask = l->nd_cap - 1, h = nd_slot(ip);
    bool bounded = state == ND_INCOMPLETE &&
                   l->nd_incomplete >= (l->nd_cap > 1 ? l->nd_cap / 2 : 1);
    struct nd_entry *victim = NULL;
    int vrank = 0;
    for (uint32_t i = 0; i < ND_PROBE && i <= mask; i++) {
        struct nd_entry *e = &l->nd[(h + i) & mask];
        int r = e->state == ND_FREE ? -2
              : e->state == ND_INCOMPLETE ? 0
              : e->state == ND_REACHABLE && e->used ? -1 : 1;
        if (r == -1 || (bounded && r != 0))
            continue;
        if (!victim || r < vrank ||
            (r == vrank && (e->used > e->confirmed ? e->used : e->confirmed) <
                               (victim->used > victim->confirmed ? victim->used
                                                                 : victim->confirmed))) {
            victim = e;
            vrank = r;
        }
    }
    if (!victim) {
        CTR(st, nd_cache_full);
        return NULL;
    }
    if (victim->state != ND_FREE) {
        CTR(st, nd_evicted);
        nd_forget(st, victim);
    }
    tern_memcpy(victim->ip, ip, 16);
    victim->state = state;
    victim->confirmed = st->now;
    if (state == ND_INCOMPLETE)
        l->nd_incomplete++;
    return victim;
}

/* ---- messages out ---- */

/* A link-layer address option (RFC 4861 4.6.1) at p: 8 bytes. */
static void lla_opt(const tern_stack *st, uint8_t *p, uint8_t type)
{
    p[0] = type;
    p[1] = 1;
    tern_memcpy(p + 2, st->cfg.mac, 6);
}

/* A solicitation or advertisement about target, without options. */
static tern_buf *nd_msg(tern_stack *st, uint8_t type, const uint8_t target[16])
{
    tern_buf *b = tern_buf_alloc(st);
    if (!b) {
        CTR(st, tx_drop_nobuf);
        return NULL;
    }
    uint8_t *m = b->data;
    tern_memset(m, 0, 24);
    m[0] = type;
    tern_memcpy(m + 8, target, 16);
    b->len = 24;
    return b;
}

void nd6_send_ns(tern_stack *st, const uint8_t target[16], const uint8_t *dst_unicast,
                 bool dad)
{
    tern_buf *b = nd_msg(st, ICMP6_NS, target);
    if (!b)
        return;
    uint8_t *m = b->data;
    uint8_t dst[16], src[16] = {0};
    if (dst_unicast)
        tern_memcpy(dst, dst_unicast, 16);
    else
        ip6_solicited_node(target, dst);
    /* DAD asks from :: with no address option (RFC 4862 5.4.2) */
    if (!dad) {
        if (ip6_src_for(st, dst, src)) {
            CTR(st, ip6_drop_no_route);
            tern_buf_release(st, b);
            return;
        }
        lla_opt(st, m + 24, ND_OPT_SLLA);
        b->len += 8;
    }
    if (icmp6_send(st, b, src, dst, 255) == 0)
        CTR(st, nd_ns_out);
}

static void nd6_send_na(tern_stack *st, const uint8_t target[16],
                        const uint8_t dst[16], bool solicited)
{
    tern_buf *b = nd_msg(st, ICMP6_NA, target);
    if (!b)
        return;
    uint8_t *m = b->data;
    m[4] = (uint8_t)((solicited ? ND_NA_S : 0) | ND_NA_O);
    lla_opt(st, m + 24, ND_OPT_TLLA);
    b->len = 32;
    if (icmp6_send(st, b, target, dst, 255) == 0)
        CTR(st, nd_na_out);
}

/* A multicast solicitation for a new address, within the overall rate. */
static bool nd_request_ok(tern_stack *st)
{
    struct ip6_layer *l = st->ip6;
    if (st->now >= l->nd_tok_at + TERN_NS_PER_SEC) {
        l->nd_tokens = ND_REQ_PER_SEC;
        l->nd_tok_at = st->now;
    }
    if (!l->nd_tokens) {
        CTR(st, nd_request_limited);
        return false;
    }
    l->nd_tokens--;
    return true;
}

/* ---- the cache ---- */

static void nd_send_now(tern_stack *st, struct nd_entry *e, tern_buf *b)
{
    if (e->state == ND_STALE) {     /* RFC 4861 7.3.3 */
        e->state = ND_DELAY;
        set_timer(st, e, st->now + ND_DELAY_NS);
    }
    e->used = st->now;
    eth_output(st, b, e->mac, ETH_TYPE_IPV6);
}

void nd6_resolve_and_send(tern_stack *st, tern_buf *b, const uint8_t nh[16])
{
    struct ip6_layer *l = st->ip6;
    struct nd_entry *e = nd_find(st, nh);
    if (e && e->state != ND_INCOMPLETE) {
        nd_send_now(st, e, b);
        return;
    }
    if (!e) {
        if (!nd_request_ok(st) || !(e = nd_new(st, nh, ND_INCOMPLETE))) {
            tern_buf_release(st, b);
            return;
        }
        e->tries = 1;
        set_timer(st, e, st->now + ND_RETRANS_NS);
        nd6_send_ns(st, nh, NULL, false);
    }
    uint32_t cap = st->cfg.nd_pending;
    if (l->nd_nwait >= cap || e->nq >= (cap * 3 + 3) / 4) {
        CTR(st, nd_pending_full);
        tern_buf_release(st, b);
        return;
    }
    for (uint32_t i = 0; i < cap; i++) {
        struct nd_pending *p = &l->nd_wait[i];
        if (!p->frame) {
            p->frame = b;
            tern_memcpy(p->nh, nh, 16);
            e->nq++;
            l->nd_nwait++;
            return;
        }
    }
}

const uint8_t *nd6_cached(tern_stack *st, const uint8_t nh[16], uint64_t *until,
                          uint64_t progress)
{
    struct nd_entry *e = nd_find(st, nh);
    if (!e || e->state == ND_INCOMPLETE)
        return NULL;
    /* the sender saw progress (RFC 4861 7.3.1) at `progress`: a REACHABLE
     * entry past half its reachable time is confirmed again, a DELAY one
     * confirmed when it came during the delay; a STALE or PROBE one
     * waits for an advertisement */
    if (progress && progress <= st->now &&
        ((e->state == ND_REACHABLE && progress > e->confirmed &&
          st->now - e->confirmed >= ND_REACHABLE_NS / 2) ||
         (e->state == ND_DELAY && progress + ND_DELAY_NS >= e->timer))) {
        CTR(st, nd_tcp_confirms);
        e->state = ND_REACHABLE;
        e->tries = 0;
        e->confirmed = progress;
        set_timer(st, e, progress + ND_REACHABLE_NS);
    }
    if (e->state == ND_STALE) {
        e->state = ND_DELAY;
        set_timer(st, e, st->now + ND_DELAY_NS);
    }
    e->used = st->now;
    /* valid until the entry's next step (REACHABLE: it goes STALE;
     * DELAY and PROBE: the next probe), so a sender's copy calls again
     * then and keeps the entry in use; a new MAC or a forgotten entry
     * bumps st->arp_gen before. REACHABLE and DELAY ones come back
     * halfway, so that a sender that saw progress confirms them in time. */
    uint64_t half = e->state == ND_REACHABLE ? e->confirmed + ND_REACHABLE_NS / 2
                  : e->state == ND_DELAY ? e->timer - ND_DELAY_NS / 2
                  : TERN_NEVER;
    *until = st->now < half ? half : e->timer;
    return e->mac;
}

/* A MAC for ip: set it, confirmed (REACHABLE) or not (STALE), and send
 * what waited. */
static void nd_learn(tern_stack *st, struct nd_entry *e, const uint8_t *mac,
                     bool confirmed)
{
    struct ip6_layer *l = st->ip6;
    if (e->state == ND_INCOMPLETE)
        l->nd_incomplete--;
    else if (mac && tern_memcmp(e->mac, mac, 6) != 0 && e->used)
        st->arp_gen++;          /* templates re-read their MAC */
    if (mac)
        tern_memcpy(e->mac, mac, 6);
    e->tries = 0;
    if (confirmed) {
        e->state = ND_REACHABLE;
        e->confirmed = st->now;
        set_timer(st, e, st->now + ND_REACHABLE_NS);
    } else {
        e->state = ND_STALE;
        set_timer(st, e, st->now + ND_GC_NS);
    }
    for (uint32_t i = 0; e->nq && i < st->cfg.nd_pending; i++) {
        struct nd_pending *p = &l->nd_wait[i];
        if (p->frame && ip6_eq(p->nh, e->ip)) {
            tern_buf *f = p->frame;
            p->frame = NULL;
            e->nq--;
            l->nd_nwait--;
            nd_send_now(st, e, f);
        }
    }
}

void nd6_learn_lla(tern_stack *st, const uint8_t ip[16], const uint8_t mac[6])
{
    struct nd_entry *e = nd_find(st, ip);
    if (!e) {
        if ((e = nd_new(st, ip, ND_STALE)))
            nd_learn(st, e, mac, false);
    } else if (e->state == ND_INCOMPLETE || tern_memcmp(e->mac, mac, 6) != 0) {
        nd_learn(st, e, mac, false);   /* RFC 4861 7.2.3 */
    }
}

uint64_t nd6_poll(tern_stack *st, uint64_t now)
{
    struct ip6_layer *l = st->ip6;
    uint64_t next = nd6_dad_poll(st, now);
    if (now >= l->nd_next_scan) {
        l->nd_next_scan = TERN_NEVER;
        for (uint32_t i = 0; i < l->nd_cap; i++) {
            struct nd_entry *e = &l->nd[i];
            if (e->state == ND_FREE)
                continue;
            if (now >= e->timer) {
                switch (e->state) {
                case ND_INCOMPLETE:
                case ND_PROBE_ST:
                    if (e->tries >= ND_TRIES) {
                        CTR(st, nd_resolve_failed);
                        nd_forget(st, e);
                        continue;
                    }
                    e->tries++;
                    e->timer = now + ND_RETRANS_NS;
                    nd6_send_ns(st, e->ip, e->state == ND_PROBE_ST ? e->ip : NULL,
                                false);
                    break;
                case ND_REACHABLE:
                    e->state = ND_STALE;
                    e->timer = now + ND_GC_NS;
                    break;
                case ND_DELAY:
                    e->state = ND_PROBE_ST;
                    e->tries = 1;
                    e->timer = now + ND_RETRANS_NS;
                    nd6_send_ns(st, e->ip, e->ip, false);
                    break;
                default:    /* STALE: unused for ND_GC_NS */
                    if (now - e->used >= ND_GC_NS && now - e->confirmed >= ND_GC_NS) {
                        nd_forget(st, e);
                        continue;
                    }
                    e->timer = now + ND_GC_NS;
                }
            }
            if (e->timer < l->nd_next_scan)
                l->nd_next_scan = e->timer;
        }
    }
    return l->nd_next_scan < next ? l->nd_next_scan : next;
}

void nd6_clock_start(tern_stack *st, uint64_t shift)
{
    struct ip6_layer *l = st->ip6;
    for (uint32_t i = 0; i < l->nd_cap; i++) {
        struct nd_entry *e = &l->nd[i];
        if (e->state != ND_FREE) {
            e->timer += shift;
            e->confirmed += shift;
        }
    }
    l->nd_next_scan = 0;
    nd6_dad_begin(st);
}

void nd6_fini(tern_stack *st)
{
    struct ip6_layer *l = st->ip6;
    for (uint32_t i = 0; i < st->cfg.nd_pending; i++) {
        if (l->nd_wait[i].frame) {
            tern_buf_release(st, l->nd_wait[i].frame);
            l->nd_wait[i].frame = NULL;
        }
    }
}

/* ---- messages in ---- */

/* Find option type in the options [p, p + len), checked well formed by
 * the caller; its 6-byte address when it is a link-layer one, else NULL. */
static const uint8_t *find_lla(const uint8_t *p, uint32_t len, uint8_t type)
{
    for (uint32_t off = 0; off + 8 <= len; off += p[off + 1] * 8u)
        if (p[off] == type && p[off + 1] == 1)
            return p + off + 2;
    return NULL;
}

bool nd6_opts_ok(const uint8_t *p, uint32_t len)
{
    uint32_t off = 0;
    while (off < len) {
        if (off + 2 > len || p[off + 1] == 0 || off + p[off + 1] * 8u > len)
            return false;
        off += p[off + 1] * 8u;
    }
    return true;
}

static void ns_input(tern_stack *st, const uint8_t *m, uint32_t len, const ip6_rx *ip)
{
    CTR(st, nd_ns_in);
    const uint8_t *target = m + 8;
    const uint8_t *slla = find_lla(m + 24, len - 24, ND_OPT_SLLA);
    bool dad = ip6_is_unspec(ip->src);
    uint8_t sn[16];
    ip6_solicited_node(target, sn);
    if (ip6_is_mcast(target) || (dad && (slla || !ip6_eq(ip->dst, sn)))) {
        CTR(st, nd_drop_bad);
        return;
    }
    struct ip6_addr *a = ip6_addr_find(st, target);
    if (!a || a->state == IP6A_DUPLICATE) {
        CTR(st, ip6_drop_not_ours);
        return;
    }
    if (a->state == IP6A_TENTATIVE) {
        /* RFC 4862 5.4.3: another node doing DAD for it: ours is a
         * duplicate; an ordinary solicitation is ignored */
        if (dad)
            nd6_dad_conflict(st, a);
        return;
    }
    if (dad) {
        nd6_send_na(st, target, ip6_all_nodes, false);
        return;
    }
    if (slla)
        nd6_learn_lla(st, ip->src, slla);
    nd6_send_na(st, target, ip->src, true);
}

static void na_input(tern_stack *st, const uint8_t *m, uint32_t len, const ip6_rx *ip)
{
    CTR(st, nd_na_in);
    const uint8_t *target = m + 8;
    bool s = m[4] & ND_NA_S, o = m[4] & ND_NA_O;
    if (ip6_is_mcast(target) || (ip->multicast && s)) {
        CTR(st, nd_drop_bad);
        return;
    }
    struct ip6_addr *a = ip6_addr_find(st, target);
    if (a) {
        nd6_dad_conflict(st, a);
        return;
    }
    struct nd_entry *e = nd_find(st, target);
    if (!e)
        return;     /* nobody asked: an unsolicited NA creates nothing */
    const uint8_t *tlla = find_lla(m + 24, len - 24, ND_OPT_TLLA);
    if (e->state == ND_INCOMPLETE) {
        if (tlla)
            nd_learn(st, e, tlla, s);
        return;
    }
    bool differs = tlla && tern_memcmp(tlla, e->mac, 6) != 0;
    if (!o && differs) {
        /* RFC 4861 7.2.5: not an override: only doubt the cached one */
        if (e->state == ND_REACHABLE) {
            e->state = ND_STALE;
            set_timer(st, e, st->now + ND_GC_NS);
        }
        return;
    }
    if (s)
        nd_learn(st, e, differs ? tlla : NULL, true);
    else if (differs)
        nd_learn(st, e, tlla, false);
}

void nd6_input(tern_stack *st, tern_buf *b, const ip6_rx *ip)
{
    CTR(st, nd_in);
    const uint8_t *m = b->data;
    uint32_t len = b->len;
    uint8_t type = m[0];
    if (type == ICMP6_MLD_QUERY) {
        mld_query_input(st, m, len, ip);
        goto done;
    }
    /* RFC 4861 7.1: from the link itself (hop limit 255), code 0, long
     * enough, well-formed options */
    uint32_t fixed = type == ICMP6_RS ? 8 : type == ICMP6_RA ? 16 : 24;
    if (b->frag || ip->hop_limit != 255 || m[1] != 0 || len < fixed ||
        !nd6_opts_ok(m + fixed, len - fixed)) {
        CTR(st, nd_drop_bad);
        goto done;
    }
    if (type == ICMP6_NS)
        ns_input(st, m, len, ip);
    else if (type == ICMP6_NA)
        na_input(st, m, len, ip);
    else if (type == ICMP6_RA)
        nd6_ra_input(st, m, len, ip);
    else
        CTR(st, icmp6_drop_type);   /* RS: we are no router */
done:
    tern_buf_release(st, b);
}
