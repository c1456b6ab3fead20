/* kv_store.h - the key-value table of tern-kv and kern-kv: one table shared
 * by every core, split into lock stripes.
 *
 * Why shared and striped: a Redis client connects once and then names any
 * key, and the NIC (or the software steering) places its connection on a
 * core by its addresses, not by the keys it will use. Keys owned by cores
 * would need every request forwarded to the owner and the reply sent back
 * (a cross-core hand-over per request, both ways). A shared table costs one
 * uncontended lock per command instead, and two cores collide only when
 * they touch the same stripe at the same moment (1 in KV_STRIPES for
 * random keys).
 *
 * Each stripe is a chained hash table that doubles as it fills. Expiry is
 * lazy (an expired key found by a lookup is removed) plus kv_sweep, which a
 * server loop calls now and then to free keys nobody asks for.
 *
 * Commands on several keys (MSET, MGET) take the stripes of all their keys
 * first, in ascending stripe order (so two of them cannot wait on each
 * other), then act, then release them: another core sees all of an MSET
 * or none of it, and an MGET reads one moment of the table.
 *
 * The memory bound counts every entry (its header of kv_entry, the key, the
 * value, rounded as malloc rounds, and its bucket pointer) and every bucket
 * array. A write first reserves what it adds, in one atomic step, so cores
 * writing at once cannot pass the bound together; a write that would pass
 * it fails and changes nothing (the server replies -OOM: the "noeviction"
 * policy, Redis's default). */
#ifndef APPS_KV_STORE_H
#define APPS_KV_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KV_STRIPES 256                  /* a power of two */

typedef struct kv_entry {
    struct kv_entry *next;
    uint64_t hash;
    int64_t expire_ms;                  /* 0: never */
    uint32_t klen, vlen;
    char data[];                        /* the key, then the value */
} kv_entry;

static inline const char *kv_key(const kv_entry *e) { return e->data; }
static inline const char *kv_val(const kv_entry *e)
{
    return e->data + e->klen;
}

typedef struct kv_stripe {
    atomic_int lock;
    uint32_t mask;                      /* buckets - 1 */
    uint32_t count;
    kv_entry **slot;
} __attribute__((aligned(64))) kv_stripe;

typedef struct kv_store {
    kv_stripe stripe[KV_STRIPES];
    uint64_t seed;                      /* random: no chosen collisions */
    uint64_t maxmemory;                 /* 0: no bound */
    _Atomic uint64_t used;              /* bytes counted against it */
    _Atomic uint64_t keys;
    _Atomic uint64_t expires;           /* keys with a time to live */
    _Atomic uint64_t expired;           /* keys removed by expiry */
    _Atomic uint64_t oom;               /* writes refused by the bound */
} kv_store;

/* Allocate an empty store; NULL when out of memory. */
kv_store *kv_store_new(uint64_t maxmemory);
void kv_store_free(kv_store *s);

uint64_t kv_hash(const kv_store *s, const char *k, size_t n);

/* Every operation below runs between kv_lock and kv_unlock of the key's
 * stripe; entries found stay valid until kv_unlock. */
kv_stripe *kv_lock(kv_store *s, uint64_t h);
void kv_unlock(kv_stripe *st);

/* The live entry of key k (an expired one is removed), or NULL. */
kv_entry *kv_find(kv_store *s, kv_stripe *st, const char *k, size_t kl,
                  uint64_t h, int64_t now_ms);
/* Set k to v (replacing any entry) with expiry expire_ms (0: none).
 * Returns the new entry, or NULL when the memory bound or malloc refused
 * (the old value is then kept). */
kv_entry *kv_put(kv_store *s, kv_stripe *st, const char *k, size_t kl,
                 uint64_t h, const char *v, size_t vl, int64_t expire_ms);
/* One key and value of a multi-key write. */
typedef struct kv_pair {
    const char *k, *v;
    size_t kl, vl;
    uint64_t h;                         /* kv_hash of k */
} kv_pair;
/* Set every pair, all or none (a later pair with the same key wins), with
 * expiry expire_ms; the caller holds every key's stripe (kv_lock_set).
 * false, and nothing changed, when the memory bound or malloc refused. */
bool kv_put_all(kv_store *s, const kv_pair *p, size_t n, int64_t expire_ms);

/* A set of stripes, locked together in ascending order. */
typedef struct kv_lockset {
    uint64_t bits[KV_STRIPES / 64];
} kv_lockset;
static inline void kv_lockset_add(kv_lockset *ls, uint64_t h)
{
    unsigned i = (unsigned)(h & (KV_STRIPES - 1));
    ls->bits[i / 64] |= 1ull << (i % 64);
}
void kv_lock_set(kv_store *s, const kv_lockset *ls);
void kv_unlock_set(kv_store *s, const kv_lockset *ls);

/* Remove k; true if it was there (and alive). */
bool kv_del(kv_store *s, kv_stripe *st, const char *k, size_t kl, uint64_t h,
            int64_t now_ms);
/* Change e's expiry (0: none). */
void kv_set_expire(kv_store *s, kv_entry *e, int64_t expire_ms);

/* Remove every key (takes each stripe's lock in turn). */
void kv_flush(kv_store *s);
/* Remove expired keys from `stripes` stripes starting at *cursor (which
 * moves on); returns how many were removed. Takes the locks itself. */
unsigned kv_sweep(kv_store *s, unsigned *cursor, unsigned stripes,
                  int64_t now_ms);

static inline uint64_t kv_keys(kv_store *s)
{
    return atomic_load_explicit(&s->keys, memory_order_relaxed);
}
static inline uint64_t kv_used(kv_store *s)
{
    return atomic_load_explicit(&s->used, memory_order_relaxed);
}

#endif
