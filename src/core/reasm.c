/* reasm.c - the reassembly both IP versions share: see reasm.h. The
 * rules against the classic attacks that need no header are here: any
 * overlap but an exact duplicate drops the whole datagram (teardrop,
 * overlapping-header tricks, RFC 5722), a datagram holds at most
 * REASM_MAX_FRAGS buffers and nothing past its last fragment, and memory
 * is bounded whatever arrives (cfg.reasm_slots datagrams, the oldest
 * evicted, each with a time limit). */
#include "stack.h"

static uint32_t f_off(const tern_buf *b) { return (uint32_t)b->cb[0]; }
static uint32_t f_len(const tern_buf *b) { return (uint32_t)b->cb[1]; }

static void count(uint64_t *ctr)
{
    if (ctr)
        (*ctr)++;
}

void reasm_table_mem(struct reasm_table *t, const tern_config *cfg,
                     struct carve *c)
{
    struct reasm *r = carve_take(c, cfg->reasm_slots * sizeof *r, 8);
    if (t)
        t->slot = r;
}

static void free_frags(tern_stack *st, struct reasm *r)
{
    tern_buf *b = r->frags;
    while (b) {
        tern_buf *next = b->next;
        b->next = NULL;
        tern_buf_release(st, b);
        b = next;
    }
    r->frags = NULL;
}

static void reasm_free(tern_stack *st, struct reasm *r)
{
    free_frags(st, r);
    tern_memset(r, 0, sizeof *r);
}

static bool key_eq(const struct reasm_key *a, const struct reasm_key *b)
{
    return a->id == b->id && a->proto == b->proto &&
           tern_memcmp(a->src, b->src, 16) == 0 &&
           tern_memcmp(a->dst, b->dst, 16) == 0;
}

void reasm_key_make(struct reasm_key *k, const uint8_t *src,
                    const uint8_t *dst, uint32_t alen, uint32_t id,
                    uint8_t proto)
{
    tern_memset(k, 0, sizeof *k);
    tern_memcpy(k->src, src, alen);
    tern_memcpy(k->dst, dst, alen);
    k->id = id;
    k->proto = proto;
}

/* The slot of datagram k, with the time limit starting now when new. */
static struct reasm *reasm_slot(tern_stack *st, struct reasm_table *t,
                                const struct reasm_key *k)
{
    struct reasm *free_slot = NULL, *oldest = NULL;
    for (uint32_t i = 0; i < st->cfg.reasm_slots; i++) {
        struct reasm *r = &t->slot[i];
        if (!r->used) {
            if (!free_slot)
                free_slot = r;
            continue;
        }
        if (key_eq(&r->key, k))
            return r;
        if (!oldest || r->expires < oldest->expires)
            oldest = r;
    }
    struct reasm *r = free_slot;
    if (!r) {
        count(t->ctr.evicted);
        reasm_free(st, oldest);
        r = oldest;
    }
    r->used = true;
    tern_memcpy(&r->key, k, sizeof *k);
    r->expires = st->now + t->timeout;
    if (r->expires < t->next)
        t->next = r->expires;
    return r;
}

/* Put b in offset order: 1 when held, 0 for an exact duplicate (dropped
 * alone), -1 when it overlaps a fragment held (counted). */
static int frag_insert(tern_stack *st, struct reasm_table *t, struct reasm *r,
                       tern_buf *b)
{
    uint32_t off = f_off(b), end = off + f_len(b);
    tern_buf **link = &r->frags;
    while (*link && f_off(*link) + f_len(*link) <= off)
        link = &(*link)->next;
    tern_buf *next = *link;
    if (next && f_off(next) == off && f_len(next) == f_len(b)) {
        count(t->ctr.dup);
        tern_buf_release(st, b);
        return 0;
    }
    if (next && f_off(next) < end) {
        count(t->ctr.overlap);
        return -1;
    }
    b->next = next;
    *link = b;
    r->have += f_len(b);
    r->nfrags++;
    return 1;
}

/* Whether b breaks the rules of what r holds: one buffer too many, a
 * length that contradicts the known one, or a last fragment with data
 * held past its end. */
static bool frag_bad(const struct reasm *r, uint32_t off, uint32_t len,
                     bool more)
{
    uint32_t end = off + len;
    if (r->nfrags >= REASM_MAX_FRAGS || (r->total && end > r->total) ||
        (!more && r->total && r->total != end))
        return true;
    if (more || !r->frags)
        return false;
    const tern_buf *last = r->frags;
    while (last->next)
        last = last->next;
    return f_off(last) + f_len(last) > end;
}

/* Hold b in r: true once r is complete. */
static bool reasm_add(tern_stack *st, struct reasm_table *t, struct reasm *r,
                      tern_buf *b, uint32_t off, uint32_t len, uint32_t at,
                      bool more)
{
    if (r->dead) {
        count(t->ctr.overlap);
        tern_buf_release(st, b);
        return false;
    }
    b->cb[0] = off;
    b->cb[1] = len;
    b->cb[2] = at;
    b->next = NULL;
    bool bad = frag_bad(r, off, len, more);
    if (bad)
        count(t->ctr.bad);
    int ins = bad ? -1 : frag_insert(st, t, r, b);
    if (ins < 0) {
        tern_buf_release(st, b);
        if (bad || !t->overlap_refuses) {
            reasm_free(st, r);
        } else {
            free_frags(st, r);
            r->dead = true;
        }
        return false;
    }
    if (!more)
        r->total = off + len;
    return r->total && r->have == r->total;
}

tern_buf *reasm_take(tern_stack *st, struct reasm_table *t,
                     const struct reasm_key *k, tern_buf *b, uint32_t off,
                     uint32_t len, uint32_t at, bool more,
                     tern_buf *(*join)(tern_stack *st, struct reasm *r))
{
    struct reasm *r = reasm_slot(st, t, k);
    if (!reasm_add(st, t, r, b, off, len, at, more))
        return NULL;
    tern_buf *whole = join(st, r);
    reasm_free(st, r);
    return whole;
}

tern_buf *reasm_join(tern_stack *st, struct reasm_table *t, struct reasm *r,
                     uint32_t hlen, bool chain_ok)
{
    uint32_t left = hlen + r->total;
    tern_buf *out = NULL, **link = &out;
    while (left) {
        tern_buf *b = tern_buf_alloc(st);
        if (!b) {
            CTR(st, tx_drop_nobuf);
            tern_buf_release(st, out);
            return NULL;
        }
        *link = b;
        link = &b->frag;
        uint32_t room = b->size - (uint32_t)(b->data - b->head);
        if (room < hlen + 8 || (left > room && !chain_ok)) {
            count(t->ctr.too_big);
            tern_buf_release(st, out);
            return NULL;
        }
        b->len = left < room ? left : room;
        left -= b->len;
    }
    tern_memcpy(out->data, r->frags->data, hlen);
    for (tern_buf *b = r->frags; b; b = b->next)
        chain_copy(out, hlen + f_off(b), b->data + reasm_at(b), f_len(b),
                   true);
    count(t->ctr.ok);
    return out;
}

uint64_t reasm_expire(tern_stack *st, struct reasm_table *t, uint64_t now,
                      void (*expired)(tern_stack *st, struct reasm *r))
{
    uint64_t next = TERN_NEVER;
    for (uint32_t i = 0; i < st->cfg.reasm_slots; i++) {
        struct reasm *r = &t->slot[i];
        if (!r->used)
            continue;
        if (now >= r->expires) {
            count(t->ctr.timeout);
            if (expired)
                expired(st, r);
            reasm_free(st, r);
        } else if (r->expires < next) {
            next = r->expires;
        }
    }
    t->next = next;
    return next;
}

void reasm_table_fini(tern_stack *st, struct reasm_table *t)
{
    for (uint32_t i = 0; i < st->cfg.reasm_slots; i++)
        if (t->slot[i].used)
            reasm_free(st, &t->slot[i]);
}
