/* kv_store.c - the striped hash table with expiry and a memory bound (see
 * kv_store.h). */
#include "kv_store.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define KV_FIRST_BUCKETS 16

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* What an entry costs against --maxmemory: its allocation rounded as
 * malloc rounds it, and the chain pointer's share of a bucket array. */
static uint64_t entry_cost(size_t kl, size_t vl)
{
    return ((sizeof(kv_entry) + kl + vl + 15) & ~(size_t)15) + 8;
}

static void used_add(kv_store *s, int64_t d)
{
    atomic_fetch_add_explicit(&s->used, (uint64_t)d, memory_order_relaxed);
}

static void ctr_add(_Atomic uint64_t *c, int64_t d)
{
    atomic_fetch_add_explicit(c, (uint64_t)d, memory_order_relaxed);
}

/* Count `bytes` more against the bound, or refuse: one atomic step, so
 * cores writing at once cannot pass the bound together. */
static bool reserve(kv_store *s, uint64_t bytes)
{
    if (!s->maxmemory) {
        used_add(s, (int64_t)bytes);
        return true;
    }
    uint64_t cur = atomic_load_explicit(&s->used, memory_order_relaxed);
    do {
        if (cur + bytes > s->maxmemory || cur + bytes < cur)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(
        &s->used, &cur, cur + bytes, memory_order_relaxed,
        memory_order_relaxed));
    return true;
}

kv_store *kv_store_new(uint64_t maxmemory)
{
    kv_store *s = aligned_alloc(64, sizeof *s);
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    s->maxmemory = maxmemory;
    if (getrandom(&s->seed, sizeof s->seed, 0) != sizeof s->seed)
        s->seed = (uint64_t)(uintptr_t)s ^ 0x6a09e667f3bcc909ull;
    for (unsigned i = 0; i < KV_STRIPES; i++) {
        kv_stripe *st = &s->stripe[i];
        st->slot = calloc(KV_FIRST_BUCKETS, sizeof *st->slot);
        if (!st->slot) {
            kv_store_free(s);
            return NULL;
        }
        st->mask = KV_FIRST_BUCKETS - 1;
        used_add(s, KV_FIRST_BUCKETS * sizeof *st->slot);
    }
    return s;
}

static void free_chain(kv_entry *e)
{
    while (e) {
        kv_entry *n = e->next;
        free(e);
        e = n;
    }
}

void kv_store_free(kv_store *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < KV_STRIPES; i++) {
        kv_stripe *st = &s->stripe[i];
        for (uint32_t b = 0; st->slot && b <= st->mask; b++)
            free_chain(st->slot[b]);
        free(st->slot);
    }
    free(s);
}

static inline uint64_t mix(uint64_t h)
{
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return h;
}

uint64_t kv_hash(const kv_store *s, const char *k, size_t n)
{
    uint64_t h = s->seed ^ (n * 0x9e3779b97f4a7c15ull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, k, 8);
        h = mix(h ^ w) * 0xbf58476d1ce4e5b9ull;
        k += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, k, n);
    return mix(mix(h ^ w) * 0xbf58476d1ce4e5b9ull);
}

/* The stripe takes the low bits, the bucket the high ones. */
static inline uint32_t bucket_of(const kv_stripe *st, uint64_t h)
{
    return (uint32_t)(h >> 32) & st->mask;
}

kv_stripe *kv_lock(kv_store *s, uint64_t h)
{
    kv_stripe *st = &s->stripe[h & (KV_STRIPES - 1)];
    for (unsigned spins = 0;; spins++) {
        int free_ = 0;
        if (atomic_compare_exchange_weak_explicit(&st->lock, &free_, 1,
                                                  memory_order_acquire,
                                                  memory_order_relaxed))
            return st;
        /* The holder may have been preempted: let it run. */
        if (spins > 100)
            sched_yield();
        else
            cpu_relax();
    }
}

void kv_unlock(kv_stripe *st)
{
    atomic_store_explicit(&st->lock, 0, memory_order_release);
}

static inline bool same_key(const kv_entry *e, const char *k, size_t kl,
                            uint64_t h)
{
    return e->hash == h && e->klen == kl && !memcmp(e->data, k, kl);
}

/* Unlink and free *pp. */
static void drop(kv_store *s, kv_stripe *st, kv_entry **pp)
{
    kv_entry *e = *pp;
    *pp = e->next;
    st->count--;
    ctr_add(&s->keys, -1);
    if (e->expire_ms)
        ctr_add(&s->expires, -1);
    used_add(s, -(int64_t)entry_cost(e->klen, e->vlen));
    free(e);
}

/* The link pointing at k's entry (live or not), or at the chain's end. */
static kv_entry **link_of(kv_stripe *st, const char *k, size_t kl, uint64_t h)
{
    kv_entry **pp = &st->slot[bucket_of(st, h)];
    while (*pp && !same_key(*pp, k, kl, h))
        pp = &(*pp)->next;
    return pp;
}

static inline bool expired(const kv_entry *e, int64_t now_ms)
{
    return e->expire_ms && e->expire_ms <= now_ms;
}

kv_entry *kv_find(kv_store *s, kv_stripe *st, const char *k, size_t kl,
                  uint64_t h, int64_t now_ms)
{
    kv_entry **pp = link_of(st, k, kl, h);
    kv_entry *e = *pp;
    if (e && expired(e, now_ms)) {
        drop(s, st, pp);
        ctr_add(&s->expired, 1);
        return NULL;
    }
    return e;
}

/* Double the buckets once the stripe holds more keys than buckets; on a
 * refused allocation keep the longer chains. */
static void grow(kv_store *s, kv_stripe *st)
{
    uint32_t n = (st->mask + 1) * 2;
    if (!n || !reserve(s, (uint64_t)(n / 2) * 8))
        return;
    kv_entry **slot = calloc(n, sizeof *slot);
    if (!slot) {
        used_add(s, -(int64_t)(n / 2) * 8);
        return;
    }
    for (uint32_t b = 0; b <= st->mask; b++) {
        kv_entry *e = st->slot[b];
        while (e) {
            kv_entry *next = e->next;
            uint32_t nb = (uint32_t)(e->hash >> 32) & (n - 1);
            e->next = slot[nb];
            slot[nb] = e;
            e = next;
        }
    }
    free(st->slot);
    st->slot = slot;
    st->mask = n - 1;
}

static kv_entry *entry_new(const char *k, size_t kl, uint64_t h,
                           const char *v, size_t vl, int64_t expire_ms)
{
    kv_entry *e = malloc(sizeof *e + kl + vl);
    if (!e)
        return NULL;
    e->hash = h;
    e->klen = (uint32_t)kl;
    e->vlen = (uint32_t)vl;
    e->expire_ms = expire_ms;
    memcpy(e->data, k, kl);
    memcpy(e->data + kl, v, vl);
    return e;
}

/* Put e where *pp points (replacing the entry there, if any). The memory
 * it costs was counted by the caller. */
static void link_in(kv_store *s, kv_stripe *st, kv_entry **pp, kv_entry *e)
{
    kv_entry *old = *pp;
    if (e->expire_ms)
        ctr_add(&s->expires, 1);
    if (old) {
        e->next = old->next;
        *pp = e;
        if (old->expire_ms)
            ctr_add(&s->expires, -1);
        free(old);
        return;
    }
    e->next = NULL;
    *pp = e;
    st->count++;
    ctr_add(&s->keys, 1);
    if (st->count > st->mask + 1)
        grow(s, st);
}

/* Count `net` bytes (negative: fewer) against the bound; false (nothing
 * counted) when it refuses. */
static bool charge(kv_store *s, int64_t net)
{
    if (net > 0)
        return reserve(s, (uint64_t)net);
    used_add(s, net);
    return true;
}

kv_entry *kv_put(kv_store *s, kv_stripe *st, const char *k, size_t kl,
                 uint64_t h, const char *v, size_t vl, int64_t expire_ms)
{
    kv_entry **pp = link_of(st, k, kl, h);
    kv_entry *old = *pp;
    int64_t net = (int64_t)entry_cost(kl, vl) -
                  (old ? (int64_t)entry_cost(old->klen, old->vlen) : 0);
    kv_entry *e = NULL;
    if (charge(s, net)) {
        e = entry_new(k, kl, h, v, vl, expire_ms);
        if (!e)
            used_add(s, -net);
    }
    if (!e) {
        ctr_add(&s->oom, 1);
        return NULL;
    }
    link_in(s, st, pp, e);
    return e;
}

/* Whether a pair after i names the same key (it wins over i). */
static bool set_later(const kv_pair *p, size_t n, size_t i)
{
    for (size_t j = i + 1; j < n; j++)
        if (p[j].h == p[i].h && p[j].kl == p[i].kl &&
            !memcmp(p[j].k, p[i].k, p[i].kl))
            return true;
    return false;
}

static kv_stripe *stripe_of(kv_store *s, uint64_t h)
{
    return &s->stripe[h & (KV_STRIPES - 1)];
}

bool kv_put_all(kv_store *s, const kv_pair *p, size_t n, int64_t expire_ms)
{
    kv_entry **e = calloc(n ? n : 1, sizeof *e);
    if (!e) {
        ctr_add(&s->oom, 1);
        return false;
    }
    /* The bytes the command adds: each key's last value, less what the
     * entry it replaces cost. */
    int64_t net = 0;
    for (size_t i = 0; i < n; i++) {
        if (set_later(p, n, i))
            continue;
        kv_entry *old = *link_of(stripe_of(s, p[i].h), p[i].k, p[i].kl,
                                 p[i].h);
        net += (int64_t)entry_cost(p[i].kl, p[i].vl) -
               (old ? (int64_t)entry_cost(old->klen, old->vlen) : 0);
    }
    bool charged = charge(s, net), ok = charged;
    /* Every entry before any is linked: a refused allocation leaves the
     * table as it was. */
    for (size_t i = 0; ok && i < n; i++) {
        if (set_later(p, n, i))
            continue;
        e[i] = entry_new(p[i].k, p[i].kl, p[i].h, p[i].v, p[i].vl,
                         expire_ms);
        ok = e[i] != NULL;
    }
    if (!ok) {
        for (size_t i = 0; i < n; i++)
            free(e[i]);
        if (charged)
            used_add(s, -net);
        ctr_add(&s->oom, 1);
    }
    for (size_t i = 0; ok && i < n; i++) {
        if (!e[i])
            continue;
        kv_stripe *st = stripe_of(s, p[i].h);
        link_in(s, st, link_of(st, p[i].k, p[i].kl, p[i].h), e[i]);
    }
    free(e);
    return ok;
}

void kv_lock_set(kv_store *s, const kv_lockset *ls)
{
    for (unsigned i = 0; i < KV_STRIPES; i++)
        if (ls->bits[i / 64] >> (i % 64) & 1)
            kv_lock(s, i);
}

void kv_unlock_set(kv_store *s, const kv_lockset *ls)
{
    for (unsigned i = 0; i < KV_STRIPES; i++)
        if (ls->bits[i / 64] >> (i % 64) & 1)
            kv_unlock(&s->stripe[i]);
}

bool kv_del(kv_store *s, kv_stripe *st, const char *k, size_t kl, uint64_t h,
            int64_t now_ms)
{
    kv_entry **pp = link_of(st, k, kl, h);
    if (!*pp)
        return false;
    bool alive = !expired(*pp, now_ms);
    if (!alive)
        ctr_add(&s->expired, 1);
    drop(s, st, pp);
    return alive;
}

void kv_set_expire(kv_store *s, kv_entry *e, int64_t expire_ms)
{
    if (!e->expire_ms != !expire_ms)
        ctr_add(&s->expires, expire_ms ? 1 : -1);
    e->expire_ms = expire_ms;
}

void kv_flush(kv_store *s)
{
    for (unsigned i = 0; i < KV_STRIPES; i++) {
        kv_stripe *st = &s->stripe[i];
        kv_lock(s, i);
        for (uint32_t b = 0; b <= st->mask; b++)
            while (st->slot[b])
                drop(s, st, &st->slot[b]);
        kv_unlock(st);
    }
}

unsigned kv_sweep(kv_store *s, unsigned *cursor, unsigned stripes,
                  int64_t now_ms)
{
    unsigned removed = 0;
    for (unsigned n = 0; n < stripes && n < KV_STRIPES; n++) {
        unsigned i = (*cursor)++ & (KV_STRIPES - 1);
        kv_stripe *st = kv_lock(s, i);
        for (uint32_t b = 0; b <= st->mask; b++) {
            kv_entry **pp = &st->slot[b];
            while (*pp) {
                if (expired(*pp, now_ms)) {
                    drop(s, st, pp);
                    removed++;
                } else {
                    pp = &(*pp)->next;
                }
            }
        }
        kv_unlock(st);
    }
    ctr_add(&s->expired, removed);
    return removed;
}
