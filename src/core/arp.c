/* arp.c - ARP (RFC 826): answers requests for our address, resolves next
 * hops with a bounded cache and a bounded queue of frames waiting for an
 * answer. Lookups probe at most ARP_PROBE slots, so every operation is
 * O(1) whatever the cache size. */
#include "stack.h"

#define ARP_LEN 28
#define ARP_OP_REQUEST 1
#define ARP_OP_REPLY 2
#define ARP_PROBE 8
#define ARP_REACHABLE_NS (60 * TERN_NS_PER_SEC) /* then refresh */
#define ARP_STALE_NS (10 * TERN_NS_PER_SEC)     /* refresh grace */
#define ARP_RETRY_NS TERN_NS_PER_SEC
#define ARP_TRIES 3
#define ARP_SCAN_NS TERN_NS_PER_SEC

enum { ARP_FREE = 0, ARP_INCOMPLETE, ARP_RESOLVED };

struct arp_entry {
    uint32_t ip;
    uint8_t mac[6];
    uint8_t state;
    uint8_t tries;      /* requests sent since the last answer */
    uint64_t confirmed; /* time of the last answer */
    uint64_t retry_at;  /* next request while incomplete or refreshing */
};

struct arp_pending {
    tern_buf *frame;    /* IPv4 datagram waiting; NULL = free slot */
    uint32_t nh;
};

/* Table capacity: the configured entries rounded up to a power of two. */
static uint32_t arp_cap(const tern_config *cfg)
{
    uint32_t n = 1;
    while (n < cfg->arp_entries)
        n <<= 1;
    return n;
}

void arp_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    struct arp_entry *e = carve_take(c, arp_cap(cfg) * sizeof *e, 8);
    struct arp_pending *p = carve_take(c, cfg->arp_pending * sizeof *p, 8);
    if (st) {
        st->arp = e;
        st->arp_wait = p;
    }
}

static uint32_t arp_slot(uint32_t ip)
{
    return (ip * 2654435761u) >> 16;   /* multiplicative hash; masked later */
}

static void arp_drop_pending(tern_stack *st, uint32_t ip);

/* The entry for ip, or NULL. */
static struct arp_entry *arp_find(tern_stack *st, uint32_t ip)
{
    uint32_t mask = arp_cap(&st->cfg) - 1, h = arp_slot(ip);
    for (uint32_t i = 0; i < ARP_PROBE && i <= mask; i++) {
        struct arp_entry *e = &st->arp[(h + i) & mask];
        if (e->state != ARP_FREE && e->ip == ip)
            return e;
    }
    return NULL;
}

/* A slot for a new entry: a free one, else the least recently confirmed of
 * the probe window (counted: the cache is full there). */
static struct arp_entry *arp_new(tern_stack *st, uint32_t ip)
{
    uint32_t mask = arp_cap(&st->cfg) - 1, h = arp_slot(ip);
    struct arp_entry *victim = NULL;
    for (uint32_t i = 0; i < ARP_PROBE && i <= mask; i++) {
        struct arp_entry *e = &st->arp[(h + i) & mask];
        if (e->state == ARP_FREE) {
            victim = e;
            break;
        }
        if (!victim || e->confirmed < victim->confirmed)
            victim = e;
    }
    if (victim->state != ARP_FREE) {
        CTR(st, arp_cache_full);
        if (victim->state == ARP_INCOMPLETE)
            arp_drop_pending(st, victim->ip);
    }
    if (victim->state == ARP_RESOLVED)
        st->arp_gen++;              /* a cached MAC may be gone */
    tern_memset(victim, 0, sizeof *victim);
    victim->ip = ip;
    return victim;
}

const uint8_t *arp_lookup(tern_stack *st, uint32_t ip)
{
    struct arp_entry *e = arp_find(st, ip);
    return e && e->state == ARP_RESOLVED ? e->mac : NULL;
}

static void arp_send(tern_stack *st, uint16_t op, const uint8_t *tha,
                     uint32_t tpa, const uint8_t *eth_dst)
{
    tern_buf *b = tern_buf_alloc(st);
    if (!b) {
        CTR(st, tx_drop_nobuf);
        return;
    }
    uint8_t *a = b->data;
    wr16(a, 1);                  /* Ethernet */
    wr16(a + 2, ETH_TYPE_IPV4);
    a[4] = 6;
    a[5] = 4;
    wr16(a + 6, op);
    tern_memcpy(a + 8, st->cfg.mac, 6);
    wr32(a + 14, st->cfg.ip);
    tern_memcpy(a + 18, tha, 6);
    wr32(a + 24, tpa);
    b->len = ARP_LEN;
    CTR(st, arp_out);
    if (op == ARP_OP_REQUEST)
        CTR(st, arp_request_out);
    else
        CTR(st, arp_reply_out);
    eth_output(st, b, eth_dst, ETH_TYPE_ARP);
}

static void arp_request(tern_stack *st, struct arp_entry *e)
{
    static const uint8_t zero[6] = {0};
    e->tries++;
    e->retry_at = st->now + ARP_RETRY_NS;
    arp_send(st, ARP_OP_REQUEST, zero, e->ip, eth_broadcast);
}

/* Send every frame waiting for ip. */
static void arp_release_pending(tern_stack *st, const struct arp_entry *e)
{
    for (uint32_t i = 0; i < st->cfg.arp_pending; i++) {
        struct arp_pending *p = &st->arp_wait[i];
        if (p->frame && p->nh == e->ip) {
            tern_buf *f = p->frame;
            p->frame = NULL;
            eth_output(st, f, e->mac, ETH_TYPE_IPV4);
        }
    }
}

/* Drop every frame waiting for ip (resolution failed). */
static void arp_drop_pending(tern_stack *st, uint32_t ip)
{
    for (uint32_t i = 0; i < st->cfg.arp_pending; i++) {
        struct arp_pending *p = &st->arp_wait[i];
        if (p->frame && p->nh == ip) {
            CTR(st, arp_pending_expired);
            tern_buf_release(st, p->frame);
            p->frame = NULL;
        }
    }
}

static bool sender_ip_ok(const tern_stack *st, uint32_t ip)
{
    uint8_t top = (uint8_t)(ip >> 24);
    return ip != 0 && ip != 0xffffffffu && ip != st->bcast && top != 127 &&
           top < 224;
}

void arp_input(tern_stack *st, tern_buf *b)
{
    CTR(st, arp_in);
    const uint8_t *a = b->data;
    if (b->len < ARP_LEN) {
        CTR(st, arp_drop_short);
        goto out;
    }
    uint16_t op = rd16(a + 6);
    if (rd16(a) != 1 || rd16(a + 2) != ETH_TYPE_IPV4 || a[4] != 6 ||
        a[5] != 4 || (op != ARP_OP_REQUEST && op != ARP_OP_REPLY)) {
        CTR(st, arp_drop_format);
        goto out;
    }
    const uint8_t *sha = a + 8;
    uint32_t spa = rd32(a + 14), tpa = rd32(a + 24);
    if (op == ARP_OP_REQUEST)
        CTR(st, arp_request_in);
    else
        CTR(st, arp_reply_in);

    /* Someone else claims our address: never learn or answer it. */
    if (spa == st->cfg.ip) {
        CTR(st, arp_drop_addr_conflict);
        goto out;
    }
    /* ARP probes (sender 0.0.0.0, RFC 5227) are answered, not learned. */
    bool probe = op == ARP_OP_REQUEST && spa == 0;
    if ((sha[0] & 1) || (!probe && !sender_ip_ok(st, spa))) {
        CTR(st, arp_drop_bad_sender);
        goto out;
    }

    /* RFC 826 merge: update a known sender; learn a new one only when the
     * packet is for us, so foreign ARP traffic cannot fill the cache. */
    struct arp_entry *e = probe ? NULL : arp_find(st, spa);
    if (!e && tpa == st->cfg.ip && !probe)
        e = arp_new(st, spa);
    if (e) {
        bool was_incomplete = e->state != ARP_RESOLVED;
        if (was_incomplete || tern_memcmp(e->mac, sha, 6) != 0)
            st->arp_gen++;          /* connections re-read their MAC */
        tern_memcpy(e->mac, sha, 6);
        e->state = ARP_RESOLVED;
        e->tries = 0;
        e->confirmed = st->now;
        if (was_incomplete)
            arp_release_pending(st, e);
    }
    if (tpa != st->cfg.ip) {
        CTR(st, arp_drop_not_ours);
        goto out;
    }
    if (op == ARP_OP_REQUEST)
        arp_send(st, ARP_OP_REPLY, sha, spa, sha);
out:
    tern_buf_release(st, b);
}

/* A resolved entry in use. Past its reachable time: keep using it,
 * refresh in the background (arp_poll gives up on it if nobody answers).
 * Returns when the entry next needs this check. */
static uint64_t arp_use(tern_stack *st, struct arp_entry *e)
{
    if (st->now - e->confirmed <= ARP_REACHABLE_NS)
        return e->confirmed + ARP_REACHABLE_NS + 1;
    if (st->now >= e->retry_at)
        arp_request(st, e);
    return e->retry_at;
}

const uint8_t *arp_cached(tern_stack *st, uint32_t nh, uint64_t *until)
{
    struct arp_entry *e = arp_find(st, nh);
    if (!e || e->state != ARP_RESOLVED)
        return NULL;
    *until = arp_use(st, e);
    return e->mac;
}

void arp_resolve_and_send(tern_stack *st, tern_buf *b, uint32_t nh)
{
    struct arp_entry *e = arp_find(st, nh);
    if (e && e->state == ARP_RESOLVED) {
        arp_use(st, e);
        eth_output(st, b, e->mac, ETH_TYPE_IPV4);
        return;
    }
    uint32_t i;
    for (i = 0; i < st->cfg.arp_pending; i++)
        if (!st->arp_wait[i].frame)
            break;
    if (i == st->cfg.arp_pending) {
        CTR(st, arp_pending_full);
        tern_buf_release(st, b);
    } else {
        st->arp_wait[i].frame = b;
        st->arp_wait[i].nh = nh;
    }
    if (!e) {
        e = arp_new(st, nh);
        e->state = ARP_INCOMPLETE;
        e->confirmed = st->now;
        arp_request(st, e);
    }
}

/* Retry incomplete entries, expire dead ones; the table is small and the
 * scan runs once a second. */
uint64_t arp_poll(tern_stack *st, uint64_t now)
{
    if (now < st->arp_next_scan)
        return st->arp_next_scan;
    st->arp_next_scan = now + ARP_SCAN_NS;
    uint32_t cap = arp_cap(&st->cfg);
    for (uint32_t i = 0; i < cap; i++) {
        struct arp_entry *e = &st->arp[i];
        if (e->state == ARP_FREE || now < e->retry_at)
            continue;
        bool refreshing = e->state == ARP_RESOLVED;
        if (refreshing && now - e->confirmed <= ARP_REACHABLE_NS)
            continue;
        bool dead = refreshing ? now - e->confirmed > ARP_REACHABLE_NS + ARP_STALE_NS
                               : e->tries >= ARP_TRIES;
        if (dead) {
            CTR(st, arp_entries_expired);
            arp_drop_pending(st, e->ip);
            if (e->state == ARP_RESOLVED)
                st->arp_gen++;
            e->state = ARP_FREE;
        } else if (!refreshing) {
            arp_request(st, e);
        }
    }
    return st->arp_next_scan;
}

void arp_clock_start(tern_stack *st, uint64_t shift)
{
    uint32_t cap = arp_cap(&st->cfg);
    for (uint32_t i = 0; i < cap; i++) {
        struct arp_entry *e = &st->arp[i];
        if (e->state != ARP_FREE) {
            e->confirmed += shift;
            e->retry_at += shift;
        }
    }
}

void arp_fini(tern_stack *st)
{
    for (uint32_t i = 0; i < st->cfg.arp_pending; i++) {
        if (st->arp_wait[i].frame)
            tern_buf_release(st, st->arp_wait[i].frame);
        st->arp_wait[i].frame = NULL;
    }
}
