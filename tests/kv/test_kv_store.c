/* test_kv_store.c - the striped table (apps/common/kv_store.c): put, find,
 * replace, delete, growth past many doublings, expiry (lazy and by the
 * sweep), the memory bound and its accounting returning to the start,
 * multi-key writes all or nothing, and the bound held by large values
 * written from several threads at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <pthread.h>
#include <stdlib.h>

#include <cmocka.h>

#include "kv_store.h"

static kv_entry *put(kv_store *s, const char *k, const char *v, int64_t exp)
{
    uint64_t h = kv_hash(s, k, strlen(k));
    kv_stripe *st = kv_lock(s, h);
    kv_entry *e = kv_put(s, st, k, strlen(k), h, v, strlen(v), exp);
    kv_unlock(st);
    return e;
}

/* The value of k at now as a string ("" when absent: -1 returned). */
static int get(kv_store *s, const char *k, int64_t now, char *out)
{
    uint64_t h = kv_hash(s, k, strlen(k));
    kv_stripe *st = kv_lock(s, h);
    kv_entry *e = kv_find(s, st, k, strlen(k), h, now);
    int r = -1;
    out[0] = 0;
    if (e) {
        memcpy(out, kv_val(e), e->vlen);
        out[e->vlen] = 0;
        r = (int)e->vlen;
    }
    kv_unlock(st);
    return r;
}

static bool del(kv_store *s, const char *k, int64_t now)
{
    uint64_t h = kv_hash(s, k, strlen(k));
    kv_stripe *st = kv_lock(s, h);
    bool r = kv_del(s, st, k, strlen(k), h, now);
    kv_unlock(st);
    return r;
}

static void put_find_replace_delete(void **state)
{
    (void)state;
    kv_store *s = kv_store_new(0);
    uint64_t empty = kv_used(s);
    char v[64];
    assert_non_null(put(s, "a", "1", 0));
    assert_non_null(put(s, "b", "22", 0));
    assert_int_equal(get(s, "a", 0, v), 1);
    assert_string_equal(v, "1");
    assert_non_null(put(s, "a", "333", 0));
    assert_int_equal(get(s, "a", 0, v), 3);
    assert_string_equal(v, "333");
    assert_int_equal(kv_keys(s), 2);
    assert_true(del(s, "a", 0));
    assert_false(del(s, "a", 0));
    assert_int_equal(get(s, "a", 0, v), -1);
    assert_true(del(s, "b", 0));
    assert_int_equal(kv_keys(s), 0);
    assert_int_equal(kv_used(s), empty);
    kv_store_free(s);
}

/* 100,000 keys: every stripe doubles many times, every key still there. */
static void grows(void **state)
{
    (void)state;
    kv_store *s = kv_store_new(0);
    char k[32], v[32], got[64];
    for (int i = 0; i < 100000; i++) {
        snprintf(k, sizeof k, "key:%d", i);
        snprintf(v, sizeof v, "%d", i * 7);
        assert_non_null(put(s, k, v, 0));
    }
    assert_int_equal(kv_keys(s), 100000);
    for (int i = 0; i < 100000; i += 37) {
        snprintf(k, sizeof k, "key:%d", i);
        snprintf(v, sizeof v, "%d", i * 7);
        assert_true(get(s, k, 0, got) > 0);
        assert_string_equal(got, v);
    }
    kv_flush(s);
    assert_int_equal(kv_keys(s), 0);
    kv_store_free(s);
}

static void expiry_lazy_and_swept(void **state)
{
    (void)state;
    kv_store *s = kv_store_new(0);
    char v[64];
    uint64_t empty = kv_used(s);
    put(s, "t", "x", 1000);
    put(s, "u", "y", 1000);
    put(s, "p", "z", 0);
    assert_int_equal(atomic_load(&s->expires), 2);
    assert_int_equal(get(s, "t", 999, v), 1);
    assert_int_equal(get(s, "t", 1000, v), -1);     /* due: gone */
    assert_int_equal(kv_keys(s), 2);
    unsigned cursor = 0;
    assert_int_equal(kv_sweep(s, &cursor, KV_STRIPES, 5000), 1);  /* u */
    assert_int_equal(kv_keys(s), 1);
    assert_int_equal(atomic_load(&s->expired), 2);
    assert_int_equal(atomic_load(&s->expires), 0);
    assert_int_equal(get(s, "p", 1 << 30, v), 1);
    assert_false(del(s, "t", 0));
    assert_true(del(s, "p", 0));
    assert_int_equal(kv_used(s), empty);
    kv_store_free(s);
}

/* Writes stop at the bound; deleting makes room; an overwrite with a
 * smaller value is always allowed. */
static void memory_bound(void **state)
{
    (void)state;
    kv_store *s = kv_store_new(0);
    uint64_t base = kv_used(s);
    kv_store_free(s);
    s = kv_store_new(base + 64 * 1024);
    char k[32], v[1000];
    memset(v, 'v', sizeof v - 1);
    v[sizeof v - 1] = 0;
    int stored = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "k%d", i);
        if (!put(s, k, v, 0))
            break;
        stored++;
    }
    assert_true(stored > 10 && stored < 100);
    assert_true(kv_used(s) <= s->maxmemory);
    assert_true(atomic_load(&s->oom) >= 1);
    assert_non_null(put(s, "k0", "small", 0));
    snprintf(k, sizeof k, "k%d", stored);
    assert_non_null(put(s, k, v, 0));   /* k0 shrank: room again */
    kv_store_free(s);
}

/* Keys differing only past 8 bytes, and binary keys, are distinct. */
static void binary_keys(void **state)
{
    (void)state;
    kv_store *s = kv_store_new(0);
    const char a[] = "0123456789abcdefX", b[] = "0123456789abcdefY";
    char v[8];
    put(s, a, "A", 0);
    put(s, b, "B", 0);
    const char z[3] = {'k', 0, 'z'};
    uint64_t h = kv_hash(s, z, 3);
    kv_stripe *st = kv_lock(s, h);
    assert_non_null(kv_put(s, st, z, 3, h, "Z", 1, 0));
    kv_unlock(st);
    get(s, a, 0, v);
    assert_string_equal(v, "A");
    get(s, b, 0, v);
    assert_string_equal(v, "B");
    assert_int_equal(kv_keys(s), 3);
    kv_store_free(s);
}

static uint64_t empty_used(void)
{
    kv_store *s = kv_store_new(0);
    uint64_t base = kv_used(s);
    kv_store_free(s);
    return base;
}

static kv_pair pair(kv_store *s, const char *k, const char *v, size_t vl)
{
    return (kv_pair){.k = k, .kl = strlen(k), .v = v, .vl = vl,
                     .h = kv_hash(s, k, strlen(k))};
}

static bool put_all(kv_store *s, const kv_pair *p, size_t n)
{
    kv_lockset ls;
    memset(&ls, 0, sizeof ls);
    for (size_t i = 0; i < n; i++)
        kv_lockset_add(&ls, p[i].h);
    kv_lock_set(s, &ls);
    bool ok = kv_put_all(s, p, n, 0);
    kv_unlock_set(s, &ls);
    return ok;
}

/* A multi-key write over the bound changes nothing; one within it sets
 * every key, the last of two pairs with one key winning; the accounting
 * returns to the empty table's. */
static void put_all_all_or_nothing(void **state)
{
    (void)state;
    uint64_t base = empty_used();
    kv_store *s = kv_store_new(base + 40000);
    static char big[15000];
    memset(big, 'b', sizeof big);
    char v[64];
    kv_pair three[] = {pair(s, "x", big, sizeof big),
                       pair(s, "y", big, sizeof big),
                       pair(s, "z", big, sizeof big)};
    assert_non_null(put(s, "x", "old", 0));
    uint64_t before = kv_used(s);
    assert_false(put_all(s, three, 3));             /* 45 KB > 40 KB */
    assert_int_equal(kv_used(s), before);
    assert_int_equal(kv_keys(s), 1);
    assert_int_equal(get(s, "x", 0, v), 3);         /* untouched */
    assert_int_equal(get(s, "y", 0, v), -1);
    assert_int_equal(get(s, "z", 0, v), -1);
    kv_pair dup[] = {pair(s, "x", big, sizeof big), pair(s, "y", "1", 1),
                     pair(s, "x", "2", 1)};
    assert_true(put_all(s, dup, 3));
    assert_int_equal(get(s, "x", 0, v), 1);
    assert_string_equal(v, "2");
    assert_int_equal(get(s, "y", 0, v), 1);
    assert_int_equal(kv_keys(s), 2);
    assert_true(put_all(s, three, 2));              /* 30 KB fits */
    assert_true(kv_used(s) <= s->maxmemory);
    assert_true(del(s, "x", 0));
    assert_true(del(s, "y", 0));
    assert_int_equal(kv_used(s), base);
    kv_store_free(s);
}

/* Threads writing 1 MiB values at once never take the table past the
 * bound together (the reservation is one atomic step). */
enum { BIG = 1 << 20, WRITERS = 4, WRITES = 40 };
static kv_store *g_store;
static char *g_big;
static atomic_int g_over;               /* a writer saw the bound passed */

static void *writer(void *arg)
{
    long id = (long)(intptr_t)arg;
    char k[32];
    for (int i = 0; i < WRITES; i++) {
        snprintf(k, sizeof k, "w%ld:%d", id, i);
        uint64_t h = kv_hash(g_store, k, strlen(k));
        kv_stripe *st = kv_lock(g_store, h);
        kv_put(g_store, st, k, strlen(k), h, g_big, BIG, 0);
        kv_unlock(st);
        if (kv_used(g_store) > g_store->maxmemory)
            atomic_store(&g_over, 1);
    }
    return NULL;
}

static void large_values_bound(void **state)
{
    (void)state;
    uint64_t max = 4u << 20;
    g_store = kv_store_new(max);
    g_big = malloc(BIG);
    assert_non_null(g_big);
    memset(g_big, 'L', BIG);
    pthread_t t[WRITERS];
    for (long i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, writer,
                                         (void *)(intptr_t)i), 0);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(t[i], NULL);
    /* Each value costs its megabyte and more: at most 3 fit beside the
     * bucket arrays, and every refused one was counted. */
    assert_int_equal(atomic_load(&g_over), 0);
    assert_true(kv_keys(g_store) >= 1 && kv_keys(g_store) <= 3);
    assert_true(kv_used(g_store) <= max);
    assert_int_equal(atomic_load(&g_store->oom),
                     WRITERS * WRITES - kv_keys(g_store));
    kv_store_free(g_store);
    free(g_big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(put_find_replace_delete),
        cmocka_unit_test(grows),
        cmocka_unit_test(expiry_lazy_and_swept),
        cmocka_unit_test(memory_bound),
        cmocka_unit_test(binary_keys),
        cmocka_unit_test(put_all_all_or_nothing),
        cmocka_unit_test(large_values_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
