/* arp.c - ARP (RFC 826) and the neighbor cache (RFC 1122 2.3.2, states
 * after the Linux model).
 *
 * An entry is
 *   INCOMPLETE  being resolved: a broadcast request at most once a second,
 *               3 in all, then it fails and its queued frames are dropped;
 *               at most 3/4 of cfg.arp_pending frames wait on it (a
 *               burst to one new peer fits, one address cannot take
 *               every slot);
 *   REACHABLE   answered within ARP_REACHABLE_NS, or confirmed by a TCP
 *               connection's forward progress (arp_cached's hint: a
 *               long transfer costs no probe);
 *   STALE       older: still used, and re-probed (unicast, 3 tries) when
 *               used; forgotten when nobody answers, or when nobody used
 *               it for ARP_GC_NS more;
 *   STATIC      set by the embedder, never changed by the wire.
 * A full probe window makes room by evicting, least recently used first,
 * an INCOMPLETE entry, then a learned entry nothing was ever sent to, then
 * a STALE one; never a REACHABLE entry in use nor a static one, so a flood
 * of new addresses (spoofed SYNs) cannot push out the peers of live
 * connections. INCOMPLETE entries are at most half the table, and
 * broadcast requests for new addresses are rate limited overall.
 * Lookups probe at most ARP_PROBE slots: every operation is O(1) whatever
 * the cache size; the once-a-second scan is O(cache). */
#include "stack.h"

#define ARP_LEN 28
#define ARP_OP_REQUEST 1
#define ARP_OP_REPLY 2
#define ARP_PROBE 8
#define ARP_REACHABLE_NS (60 * TERN_NS_PER_SEC)
#define ARP_GC_NS (60 * TERN_NS_PER_SEC)   /* then unused STALE ones go */
#define ARP_RETRY_NS TERN_NS_PER_SEC
#define ARP_TRIES 3
#define ARP_SCAN_NS TERN_NS_PER_SEC
#define ARP_REQ_PER_SEC 100      /* broadcast requests, overall */
#define ARP_NIL UINT32_MAX       /* end of an arp_wait list */

enum { ARP_FREE = 0, ARP_INCOMPLETE, ARP_REACHABLE, ARP_STALE, ARP_STATIC };

struct arp_entry {
    uint32_t ip;
    uint8_t mac[6];
    uint8_t state;
    uint8_t tries;      /* requests sent since the last answer */
    uint32_t nq;        /* frames waiting in arp_wait */
    uint32_t head, tail; /* their slots, oldest first (when nq > 0) */
    uint64_t confirmed; /* last answer (creation while INCOMPLETE) */
    uint64_t used;      /* last frame sent to it; 0 = never */
    uint64_t retry_at;  /* next request while resolving or probing */
};

/* A frame waiting for resolution. The slots of one entry form a list in
 * arrival order, the free slots another, so queueing, sending and dropping
 * an entry's frames cost O(its frames), not O(cfg.arp_pending): under a
 * flood every new address evicts one with a frame queued. */
struct arp_pending {
    tern_buf *frame;    /* IPv4 datagram waiting; NULL = free slot */
    uint32_t next;      /* the entry's next frame, or the next free slot */
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
        st->arp_tokens = ARP_REQ_PER_SEC;
        for (uint32_t i = 0; i < cfg->arp_pending; i++)
            p[i].next = i + 1 < cfg->arp_pending ? i + 1 : ARP_NIL;
        st->arp_wait_free = cfg->arp_pending ? 0 : ARP_NIL;
    }
}

static uint32_t arp_slot(uint32_t ip)
{
    return (ip * HASH_MUL32) >> 16;   /* multiplicative hash; masked later */
}

static bool resolved(const struct arp_entry *e)
{
    return e->state >= ARP_REACHABLE;
}

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

/* Take e's oldest waiting frame off its list (e->nq > 0); its slot goes
 * back to the free list. */
static tern_buf *arp_dequeue(tern_stack *st, struct arp_entry *e)
{
    uint32_t i = e->head;
    struct arp_pending *p = &st->arp_wait[i];
    tern_buf *f = p->frame;
    e->head = p->next;
    e->nq--;
    st->arp_nwait--;
    p->frame = NULL;
    p->next = st->arp_wait_free;
    st->arp_wait_free = i;
    return f;
}

/* Drop every frame waiting for e (resolution failed or e is evicted). */
static void arp_drop_pending(tern_stack *st, struct arp_entry *e)
{
    while (e->nq) {
        CTR(st, arp_pending_expired);
        tern_buf_release(st, arp_dequeue(st, e));
    }
}

/* Forget e: its frames are dropped, connections caching its MAC re-read
 * (none can have read one nothing was sent to: an ARP flood of learned
 * senders does not make every connection rebuild its template). */
static void arp_forget(tern_stack *st, struct arp_entry *e)
{
    arp_drop_pending(st, e);
    if (e->state == ARP_INCOMPLETE)
        st->arp_incomplete--;
    else if (e->used)
        st->arp_gen++;
    tern_memset(e, 0, sizeof *e);
}

/* Eviction rank (lower goes first), or -1 when e must stay: INCOMPLETE,
 * then learned but never used, then STALE; REACHABLE entries in use and
 * static ones stay (a static entry may push out anything but another). */
static int evict_rank(const tern_stack *st, const struct arp_entry *e,
                      bool for_static)
{
    if (e->state == ARP_STATIC)
        return -1;
    if (e->state == ARP_INCOMPLETE)
        return 0;
    if (!e->used)
        return 1;
    if (e->state == ARP_STALE || st->now - e->confirmed > ARP_REACHABLE_NS)
        return 2;
    return for_static ? 3 : -1;
}

/* A slot for a new entry for ip: a free one in the probe window, else the
 * lowest-ranked, least recently used evictable one (counted). NULL when
 * every slot there must stay, or when a new INCOMPLETE entry would pass
 * the bound and no INCOMPLETE one can make room (arp_cache_full). */
static struct arp_entry *arp_new(tern_stack *st, uint32_t ip, uint8_t state)
{
    uint32_t cap = arp_cap(&st->cfg), mask = cap - 1, h = arp_slot(ip);
    /* past the INCOMPLETE bound, only an INCOMPLETE slot will do */
    bool bounded = state == ARP_INCOMPLETE &&
                   st->arp_incomplete >= (cap > 1 ? cap / 2 : 1);
    struct arp_entry *victim = NULL;
    int vrank = 0;
    uint64_t vage = 0;
    for (uint32_t i = 0; i < ARP_PROBE && i <= mask; i++) {
        struct arp_entry *e = &st->arp[(h + i) & mask];
        int r = e->state == ARP_FREE ? -2 : evict_rank(st, e, state == ARP_STATIC);
        if (r == -1 || (bounded && r != 0))
            continue;
        uint64_t age = e->used > e->confirmed ? e->used : e->confirmed;
        if (!victim || r < vrank || (r == vrank && age < vage)) {
            victim = e;
            vrank = r;
            vage = age;
        }
    }
    if (!victim) {
        CTR(st, arp_cache_full);
        return NULL;
    }
    if (victim->state != ARP_FREE) {
        CTR(st, arp_evicted);
        if (resolved(victim))
            CTR(st, arp_evicted_resolved);
        arp_forget(st, victim);
    }
    victim->ip = ip;
    victim->state = state;
    victim->confirmed = st->now;
    if (state == ARP_INCOMPLETE)
        st->arp_incomplete++;
    return victim;
}

const uint8_t *arp_lookup(tern_stack *st, uint32_t ip)
{
    struct arp_entry *e = arp_find(st, ip);
    return e && resolved(e) ? e->mac : NULL;
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

/* One broadcast request for a new address, within the overall rate (a
 * token bucket of ARP_REQ_PER_SEC, burst the same). */
static bool arp_req_token(tern_stack *st)
{
    uint64_t step = TERN_NS_PER_SEC / ARP_REQ_PER_SEC;
    if (st->now >= st->arp_tok_at + step) {
        uint64_t add = (st->now - st->arp_tok_at) / step;
        if (add >= ARP_REQ_PER_SEC) {
            st->arp_tokens = ARP_REQ_PER_SEC;
            st->arp_tok_at = st->now;
        } else {
            st->arp_tokens += (uint32_t)add;
            if (st->arp_tokens > ARP_REQ_PER_SEC)
                st->arp_tokens = ARP_REQ_PER_SEC;
            st->arp_tok_at += add * step;
        }
    }
    if (!st->arp_tokens) {
        CTR(st, arp_request_limited);
        return false;
    }
    st->arp_tokens--;
    return true;
}

/* The next request for e: broadcast while INCOMPLETE (rate limited; a
 * request refused waits for the next scan), unicast to the known MAC
 * while probing a STALE entry (RFC 1122 2.3.2.1). */
static void arp_request(tern_stack *st, struct arp_entry *e)
{
    static const uint8_t zero[6] = {0};
    if (e->state == ARP_INCOMPLETE) {
        if (!arp_req_token(st)) {
            e->retry_at = st->now;
            return;
        }
        arp_send(st, ARP_OP_REQUEST, zero, e->ip, eth_broadcast);
    } else {
        arp_send(st, ARP_OP_REQUEST, zero, e->ip, e->mac);
    }
    e->tries++;
    e->retry_at = st->now + ARP_RETRY_NS;
}

/* Send every frame waiting for e, oldest first. */
static void arp_release_pending(tern_stack *st, struct arp_entry *e)
{
    while (e->nq)
        eth_output(st, arp_dequeue(st, e), e->mac, ETH_TYPE_IPV4);
}

static bool sender_ip_ok(const tern_stack *st, uint32_t ip)
{
    uint8_t top = (uint8_t)(ip >> 24);
    return ip != 0 && ip != 0xffffffffu && ip != st->bcast && top != 127 &&
           top < 224;
}

/* An answer from ip at mac (a reply, or a request that reached us). */
static void arp_confirm(tern_stack *st, struct arp_entry *e, const uint8_t *mac)
{
    if (e->state == ARP_STATIC)
        return;                     /* the embedder's word stands */
    bool was_incomplete = e->state == ARP_INCOMPLETE;
    if (!was_incomplete && e->used && tern_memcmp(e->mac, mac, 6) != 0)
        st->arp_gen++;              /* connections re-read their MAC */
    if (was_incomplete)
        st->arp_incomplete--;
    tern_memcpy(e->mac, mac, 6);
    e->state = ARP_REACHABLE;
    e->tries = 0;
    e->confirmed = st->now;
    if (was_incomplete)
        arp_release_pending(st, e);
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
     * packet is for us, so foreign ARP traffic cannot fill the cache. A
     * new one starts unused, so it never displaces an entry in use. */
    struct arp_entry *e = probe ? NULL : arp_find(st, spa);
    if (!e && tpa == st->cfg.ip && !probe)
        e = arp_new(st, spa, ARP_REACHABLE);
    if (e)
        arp_confirm(st, e, sha);
    if (tpa != st->cfg.ip) {
        CTR(st, arp_drop_not_ours);
        goto out;
    }
    if (op == ARP_OP_REQUEST)
        arp_send(st, ARP_OP_REPLY, sha, spa, sha);
out:
    tern_buf_release(st, b);
}

/* Apply e's timers at st->now: resolve or probe again, fail, go STALE,
 * expire. Returns false when e was freed. */
static bool arp_age(tern_stack *st, struct arp_entry *e)
{
    uint64_t now = st->now;
    switch (e->state) {
    case ARP_INCOMPLETE:
        if (now < e->retry_at)
            return true;
        if (e->tries >= ARP_TRIES) {
            CTR(st, arp_resolve_failed);
            arp_forget(st, e);
            return false;
        }
        arp_request(st, e);
        return true;
    case ARP_REACHABLE:
        if (now - e->confirmed <= ARP_REACHABLE_NS)
            return true;
        e->state = ARP_STALE;
        e->tries = 0;
        /* fall through */
    case ARP_STALE:
        if (e->tries == 0) {        /* not probing: forget when unused */
            uint64_t last = e->used > e->confirmed ? e->used : e->confirmed;
            if (now - last <= ARP_REACHABLE_NS + ARP_GC_NS)
                return true;
        } else if (now < e->retry_at) {
            return true;
        } else if (e->tries < ARP_TRIES) {
            arp_request(st, e);
            return true;
        }
        CTR(st, arp_entries_expired);
        arp_forget(st, e);
        return false;
    default:
        return true;
    }
}

/* A resolved entry that arp_usable aged gets a frame: a STALE one starts
 * a probe. Returns when the entry next needs this check (arp_cached): a
 * REACHABLE one at half its reachable time, when a sender that saw
 * progress can confirm it, then when it goes STALE. */
static uint64_t arp_use(tern_stack *st, struct arp_entry *e)
{
    e->used = st->now;
    if (e->state == ARP_STATIC)
        return TERN_NEVER;
    if (e->state == ARP_REACHABLE && st->now - e->confirmed <= ARP_REACHABLE_NS) {
        uint64_t half = e->confirmed + ARP_REACHABLE_NS / 2 + 1;
        return st->now < half ? half : e->confirmed + ARP_REACHABLE_NS + 1;
    }
    if (e->tries == 0)
        arp_request(st, e);         /* start the probe */
    return e->retry_at;
}

/* The entry for nh if it can carry a frame now (a dead one is freed). */
static struct arp_entry *arp_usable(tern_stack *st, uint32_t nh)
{
    struct arp_entry *e = arp_find(st, nh);
    if (!e || !resolved(e))
        return e;
    e->used = st->now;              /* in use: not forgotten as unused */
    return arp_age(st, e) ? e : NULL;
}

/* A sender's hint: its peer made progress at `at` (RFC 4861 7.3.1). It
 * confirms a REACHABLE entry past half its reachable time (younger ones
 * need nothing yet); a STALE one is being probed or was unused for long,
 * and its answer decides. */
static void arp_progress(tern_stack *st, uint32_t nh, uint64_t at)
{
    struct arp_entry *e = arp_find(st, nh);
    uint64_t age = e ? st->now - e->confirmed : 0;
    if (e && e->state == ARP_REACHABLE && at > e->confirmed &&
        at <= st->now && age >= ARP_REACHABLE_NS / 2 &&
        age <= ARP_REACHABLE_NS) {
        e->confirmed = at;
        CTR(st, arp_tcp_confirms);
    }
}

const uint8_t *arp_cached(tern_stack *st, uint32_t nh, uint64_t *until,
                          uint64_t progress)
{
    if (progress)
        arp_progress(st, nh, progress);
    struct arp_entry *e = arp_usable(st, nh);
    if (!e || !resolved(e))
        return NULL;
    *until = arp_use(st, e);
    return e->mac;
}

/* Queue b on e (at most 3/4 of cfg.arp_pending per address, all of it
 * in all; beyond that the new frame is dropped and counted). */
static void arp_queue(tern_stack *st, struct arp_entry *e, tern_buf *b)
{
    uint32_t n = st->cfg.arp_pending, per = n - n / 4;
    if (e->nq >= per || st->arp_nwait >= n) {
        CTR(st, arp_pending_full);
        tern_buf_release(st, b);
        return;
    }
    uint32_t i = st->arp_wait_free;     /* arp_nwait < n: one is free */
    struct arp_pending *p = &st->arp_wait[i];
    st->arp_wait_free = p->next;
    p->frame = b;
    p->next = ARP_NIL;
    if (e->nq)
        st->arp_wait[e->tail].next = i;
    else
        e->head = i;
    e->tail = i;
    st->arp_nwait++;
    e->nq++;
}

void arp_resolve_and_send(tern_stack *st, tern_buf *b, uint32_t nh)
{
    struct arp_entry *e = arp_usable(st, nh);
    if (e && resolved(e)) {
        arp_use(st, e);
        eth_output(st, b, e->mac, ETH_TYPE_IPV4);
        return;
    }
    if (!e) {
        e = arp_new(st, nh, ARP_INCOMPLETE);
        if (!e) {
            tern_buf_release(st, b);
            return;
        }
        arp_queue(st, e, b);
        arp_request(st, e);
        return;
    }
    arp_queue(st, e, b);
}

/* Once a second: every entry's timers (arp_age). */
uint64_t arp_poll(tern_stack *st, uint64_t now)
{
    if (now < st->arp_next_scan)
        return st->arp_next_scan;
    st->arp_next_scan = now + ARP_SCAN_NS;
    uint32_t cap = arp_cap(&st->cfg);
    for (uint32_t i = 0; i < cap; i++)
        if (st->arp[i].state != ARP_FREE)
            arp_age(st, &st->arp[i]);
    return st->arp_next_scan;
}

int tern_neigh_add_static(tern_stack *st, uint32_t ip, const uint8_t mac[6])
{
    if (!sender_ip_ok(st, ip) || ip == st->cfg.ip || (mac[0] & 1))
        return -TERN_EINVAL;
    struct arp_entry *e = arp_find(st, ip);
    if (e && e->state != ARP_STATIC) {
        arp_confirm(st, e, mac);    /* releases frames waiting for it */
        st->arp_gen++;
    } else if (!e) {
        e = arp_new(st, ip, ARP_STATIC);
        if (!e)
            return -TERN_ENOMEM;
    } else if (tern_memcmp(e->mac, mac, 6) != 0) {
        st->arp_gen++;
    }
    tern_memcpy(e->mac, mac, 6);
    e->state = ARP_STATIC;
    e->tries = 0;
    return 0;
}

int tern_neigh_del(tern_stack *st, uint32_t ip)
{
    struct arp_entry *e = arp_find(st, ip);
    if (!e)
        return -TERN_EINVAL;
    arp_forget(st, e);
    return 0;
}

void arp_clock_start(tern_stack *st, uint64_t shift)
{
    uint32_t cap = arp_cap(&st->cfg);
    for (uint32_t i = 0; i < cap; i++) {
        struct arp_entry *e = &st->arp[i];
        if (e->state != ARP_FREE) {
            e->confirmed += shift;
            e->retry_at += shift;
            if (e->used)
                e->used += shift;
        }
    }
    st->arp_tok_at += shift;
}

void arp_fini(tern_stack *st)
{
    for (uint32_t i = 0; i < st->cfg.arp_pending; i++) {
        if (st->arp_wait[i].frame)
            tern_buf_release(st, st->arp_wait[i].frame);
        st->arp_wait[i].frame = NULL;
    }
}
