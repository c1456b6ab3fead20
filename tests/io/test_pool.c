/* test_pool.c - the LIFO buffer pool: order, exhaustion, references, frag
 * chains, ops, and misuse caught by an abort. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "io.h"

static void create_rejects_bad_sizes(void **state)
{
    (void)state;
    assert_null(tern_pool_create(0, 2048));
    assert_null(tern_pool_create(8, TERN_HEADROOM));
    tern_pool_destroy(NULL);
}

static void fresh_buffer_fields(void **state)
{
    (void)state;
    tern_pool *p = tern_pool_create(4, 2048);
    assert_non_null(p);
    assert_int_equal(tern_pool_count(p), 4);
    assert_int_equal(tern_pool_available(p), 4);
    assert_int_equal(tern_pool_buf_size(p), 2048);
    tern_buf *b = tern_pool_alloc(p);
    assert_non_null(b);
    assert_int_equal(b->refs, 1);
    assert_int_equal(b->len, 0);
    assert_int_equal(b->size, 2048);
    assert_int_equal(b->flags, 0);
    assert_null(b->frag);
    assert_null(b->next);
    assert_ptr_equal(b->data, b->head + TERN_HEADROOM);
    assert_int_equal((uintptr_t)b->head % 64, 0);
    assert_true(tern_pool_owns(p, b));
    memset(b->head, 0xab, b->size);  /* all of it is ours (ASan checks) */
    /* Stale metadata from an earlier user is cleared on alloc. */
    b->len = 99;
    b->flags = TERN_BUF_TX_TSO;
    b->tso_mss = 1000;
    b->data += 5;
    tern_pool_release(p, b);
    tern_buf *c = tern_pool_alloc(p);
    assert_ptr_equal(c, b);
    assert_int_equal(c->len, 0);
    assert_int_equal(c->flags, 0);
    assert_int_equal(c->tso_mss, 0);
    assert_ptr_equal(c->data, c->head + TERN_HEADROOM);
    tern_pool_release(p, c);
    tern_pool_destroy(p);
}

static void lifo_order(void **state)
{
    (void)state;
    tern_pool *p = tern_pool_create(8, 512);
    tern_buf *a = tern_pool_alloc(p), *b = tern_pool_alloc(p),
             *c = tern_pool_alloc(p);
    assert_true(a != b && b != c && a != c);
    tern_pool_release(p, a);
    tern_pool_release(p, c);
    tern_pool_release(p, b);
    /* Most recently freed first. */
    assert_ptr_equal(tern_pool_alloc(p), b);
    assert_ptr_equal(tern_pool_alloc(p), c);
    assert_ptr_equal(tern_pool_alloc(p), a);
    tern_pool_release(p, a);
    tern_pool_release(p, b);
    tern_pool_release(p, c);
    assert_int_equal(tern_pool_available(p), 8);
    tern_pool_destroy(p);
}

static void exhaustion(void **state)
{
    (void)state;
    enum { N = 64 };
    tern_pool *p = tern_pool_create(N, 256 + TERN_HEADROOM);
    tern_buf *bufs[N];
    for (int i = 0; i < N; i++) {
        bufs[i] = tern_pool_alloc(p);
        assert_non_null(bufs[i]);
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(bufs[i], bufs[j]);
    }
    assert_int_equal(tern_pool_available(p), 0);
    assert_null(tern_pool_alloc(p));
    assert_null(tern_pool_alloc(p));
    tern_pool_release(p, bufs[17]);
    assert_ptr_equal(tern_pool_alloc(p), bufs[17]);
    for (int i = 0; i < N; i++)
        tern_pool_release(p, bufs[i]);
    assert_int_equal(tern_pool_available(p), N);
    tern_pool_destroy(p);
}

static void refcounts(void **state)
{
    (void)state;
    tern_pool *p = tern_pool_create(2, 2048);
    tern_buf *b = tern_pool_alloc(p);
    tern_buf_ref(b);
    tern_buf_ref(b);
    assert_int_equal(b->refs, 3);
    tern_pool_release(p, b);
    tern_pool_release(p, b);
    assert_int_equal(tern_pool_available(p), 1);
    tern_pool_release(p, b);
    assert_int_equal(tern_pool_available(p), 2);
    tern_pool_destroy(p);
}

static void frag_chain_release(void **state)
{
    (void)state;
    tern_pool *p = tern_pool_create(4, 2048);
    tern_buf *a = tern_pool_alloc(p), *b = tern_pool_alloc(p),
             *c = tern_pool_alloc(p);
    a->frag = b;
    b->frag = c;
    tern_buf_ref(b);  /* someone else keeps the middle segment */
    tern_pool_release(p, a);
    assert_int_equal(tern_pool_available(p), 3);
    assert_int_equal(b->refs, 1);
    b->frag = NULL;
    tern_pool_release(p, b);
    assert_int_equal(tern_pool_available(p), 4);
    tern_pool_destroy(p);
}

static void ops_table(void **state)
{
    (void)state;
    tern_pool *p = tern_pool_create(2, 2048);
    tern_buf_ops ops = tern_pool_ops(p);
    tern_buf *b = ops.alloc(ops.ctx);
    assert_non_null(b);
    assert_int_equal(b->refs, 1);
    assert_non_null(ops.alloc(ops.ctx));
    assert_null(ops.alloc(ops.ctx));
    b->refs = 0;  /* as the stack's release does before calling free */
    ops.free(ops.ctx, b);
    assert_int_equal(tern_pool_available(p), 1);
    assert_ptr_equal(ops.alloc(ops.ctx), b);
    tern_pool_destroy(p);
}

/* Index of b in p (its slot number), for comparing two pools' states. */
static unsigned slot_of(const tern_pool *p, const tern_buf *b)
{
    return (unsigned)(((const uint8_t *)b - p->slots) / p->slot_size);
}

/* Same free stack: same depth and the same slots in the same order. */
static void assert_same_free_stack(const tern_pool *p, const tern_pool *q)
{
    assert_int_equal(p->stack.top, q->stack.top);
    for (unsigned i = 0; i < p->stack.top; i++) {
        assert_int_equal(slot_of(p, p->stack.free[i]),
                         slot_of(q, q->stack.free[i]));
        assert_int_equal(p->stack.free[i]->refs, TERN_POOL_FREE_REFS);
        assert_int_equal(q->stack.free[i]->refs, TERN_POOL_FREE_REFS);
    }
}

/* tern_pool_ops gives the pool's LIFO; popping and pushing it inline (as
 * the core does) leaves the pool as alloc/free through the ops do. */
static void stack_inline_matches_ops(void **state)
{
    (void)state;
    tern_pool *p = tern_pool_create(4, 2048);
    tern_pool *q = tern_pool_create(4, 2048);
    tern_buf_ops ops = tern_pool_ops(q);
    tern_buf_stack *s = tern_pool_ops(p).stack;
    assert_ptr_equal(s, &p->stack);
    assert_int_equal(s->cap, 4);
    tern_buf *a[4], *b[4];
    for (int i = 0; i < 4; i++) {
        a[i] = tern_buf_stack_pop(s);
        b[i] = ops.alloc(ops.ctx);
        assert_non_null(a[i]);
        assert_int_equal(slot_of(p, a[i]), slot_of(q, b[i]));
        assert_int_equal(a[i]->refs, 1);
        assert_int_equal(a[i]->len, 0);
        assert_null(a[i]->frag);
        assert_null(a[i]->next);
        assert_ptr_equal(a[i]->data, a[i]->head + TERN_HEADROOM);
        a[i]->flags = b[i]->flags = TERN_BUF_TX_TSO;  /* stale, cleared */
        a[i]->len = b[i]->len = 5;
    }
    assert_null(tern_buf_stack_pop(s));     /* empty: the core asks alloc */
    assert_null(ops.alloc(ops.ctx));
    const int order[4] = {2, 0, 3, 1};
    for (int k = 0; k < 4; k++) {
        int i = order[k];
        a[i]->refs = b[i]->refs = 0;        /* as the core's release */
        assert_true(tern_buf_stack_push(s, a[i]));
        ops.free(ops.ctx, b[i]);
        assert_int_equal(a[i]->flags, 0);
        assert_same_free_stack(p, q);
    }
    tern_buf *c = tern_buf_stack_pop(s);
    assert_ptr_equal(c, a[1]);              /* LIFO */
    assert_int_equal(c->flags, 0);
    assert_int_equal(c->len, 0);
    assert_int_equal(slot_of(q, ops.alloc(ops.ctx)), slot_of(p, c));
    assert_same_free_stack(p, q);
    tern_pool_destroy(p);
    tern_pool_destroy(q);
}

/* The inline push takes only the pool's own buffers (a LIFO over no
 * buffers takes none); the inline pop leaves a free buffer that was written
 * to (refs changed: use after free) for alloc to judge. */
static void stack_inline_refusals(void **state)
{
    (void)state;
    tern_pool *p = tern_pool_create(2, 2048);
    tern_pool *q = tern_pool_create(1, 2048);
    tern_buf_stack *s = &p->stack;
    tern_buf *foreign = tern_pool_alloc(q);
    foreign->refs = 0;
    assert_false(tern_buf_stack_push(s, foreign));
    assert_int_equal(s->top, 2);
    assert_int_equal(foreign->refs, 0);     /* untouched */
    /* The core's LIFO when the embedder gives none: span 0. */
    tern_buf *spare[1];
    tern_buf_stack none = {.free = spare, .cap = 0, .base = p->slots};
    tern_buf *b = tern_buf_stack_pop(s);
    b->refs = 0;
    assert_false(tern_buf_stack_push(&none, b));
    assert_int_equal(none.top, 0);
    assert_int_equal(b->refs, 0);
    assert_null(tern_buf_stack_pop(&none));
    assert_true(tern_buf_stack_push(s, b));
    assert_int_equal(s->top, 2);
    /* Top buffer written to while free: not popped. */
    b->refs = 1;
    assert_null(tern_buf_stack_pop(s));
    assert_int_equal(s->top, 2);
    b->refs = TERN_POOL_FREE_REFS;
    assert_ptr_equal(tern_buf_stack_pop(s), b);
    tern_pool_destroy(p);
    tern_pool_destroy(q);
}

/* The push has no room test (tern.h): a pool's LIFO has an entry for each
 * of its buffers, so every buffer taken, then all of them given back in any
 * order, fit, up to cap == count; the same for a view over the caller's
 * memory (DPDK). */
static void stack_holds_every_buffer(void **state)
{
    (void)state;
    enum { N = 5 };
    tern_pool *p = tern_pool_create(N, 2048);
    tern_buf_stack *s = &p->stack;
    assert_int_equal(s->cap, N);
    assert_int_equal(s->span, (size_t)N * p->slot_size);
    tern_buf *b[N];
    for (int i = 0; i < N; i++)
        assert_non_null(b[i] = tern_buf_stack_pop(s));
    assert_int_equal(s->top, 0);
    const int order[N] = {3, 0, 4, 1, 2};
    for (int k = 0; k < N; k++) {
        b[order[k]]->refs = 0;
        assert_true(tern_buf_stack_push(s, b[order[k]]));
        assert_int_equal(s->top, k + 1);
    }
    assert_int_equal(s->top, s->cap);
    for (int k = N - 1; k >= 0; k--)
        assert_ptr_equal(tern_buf_stack_pop(s), b[order[k]]);

    tern_pool v;
    tern_buf *vfree[N];
    tern_pool_view(&v, p->slots, N, p->slot_size, 2048, vfree);
    assert_int_equal(v.stack.cap, N);
    assert_int_equal(v.stack.top, 0);
    assert_int_equal(v.stack.span, s->span);
    for (int k = 0; k < N; k++) {
        b[k]->refs = 0;
        assert_true(tern_buf_stack_push(&v.stack, b[k]));
    }
    assert_int_equal(v.stack.top, v.stack.cap);
    for (int k = 0; k < N; k++)
        assert_ptr_equal(vfree[k], b[k]);
    tern_pool_destroy(p);
}

static void no_tx(void *ctx, tern_buf **frames, unsigned n)
{
    (void)ctx;
    (void)frames;
    (void)n;
}

/* An instance over p, with the pool's LIFO given to it or not. */
static tern_stack *stack_over(tern_pool *p, bool with_lifo, void **mem)
{
    tern_config cfg;
    tern_config_defaults(&cfg);
    cfg.ip = 0x0a000001;
    cfg.prefix_len = 24;
    cfg.tx = no_tx;
    cfg.buf_ops = tern_pool_ops(p);
    if (!with_lifo)
        cfg.buf_ops.stack = NULL;   /* an embedder's ops without a LIFO */
    size_t size = tern_stack_size(&cfg);
    *mem = aligned_alloc(TERN_STACK_ALIGN,
                         (size + TERN_STACK_ALIGN - 1) / TERN_STACK_ALIGN *
                             TERN_STACK_ALIGN);
    return tern_stack_init(*mem, size, &cfg, NULL);
}

/* tern_buf_alloc/tern_buf_release through an instance: with the LIFO
 * (inline) and without (ops calls) the pool ends in the same state. */
static void core_alloc_release_with_and_without_lifo(void **state)
{
    (void)state;
    tern_pool *p = tern_pool_create(3, 2048);
    tern_pool *q = tern_pool_create(3, 2048);
    void *mp, *mq;
    tern_stack *sp = stack_over(p, true, &mp);
    tern_stack *sq = stack_over(q, false, &mq);
    assert_non_null(sp);
    assert_non_null(sq);
    tern_buf *a[3], *b[3];
    for (int i = 0; i < 3; i++) {
        a[i] = tern_buf_alloc(sp);
        b[i] = tern_buf_alloc(sq);
        assert_non_null(a[i]);
        assert_non_null(b[i]);
        assert_int_equal(slot_of(p, a[i]), slot_of(q, b[i]));
        assert_int_equal(a[i]->refs, 1);
    }
    assert_null(tern_buf_alloc(sp));
    assert_null(tern_buf_alloc(sq));
    a[0]->frag = a[2];                      /* a chain */
    b[0]->frag = b[2];
    tern_buf_ref(a[1]);
    tern_buf_ref(b[1]);
    tern_buf_release(sp, a[1]);             /* one owner left */
    tern_buf_release(sq, b[1]);
    assert_same_free_stack(p, q);
    assert_int_equal(tern_pool_available(p), 0);
    tern_buf_release(sp, a[0]);
    tern_buf_release(sq, b[0]);
    tern_buf_release(sp, a[1]);
    tern_buf_release(sq, b[1]);
    assert_int_equal(tern_pool_available(p), 3);
    assert_same_free_stack(p, q);
    free(mp);
    free(mq);
    tern_pool_destroy(p);
    tern_pool_destroy(q);
}

/* Run fn in a child; true if it died of SIGABRT. */
/* The inline variants: tern_pool_ready on a buffer taken off the free
 * stack by hand (as the mem link does for a burst), release_one of a buffer
 * without a chain. */
static void ready_and_release_one(void **state)
{
    (void)state;
    tern_pool *p = tern_pool_create(2, 2048);
    tern_buf *a = tern_pool_alloc(p);
    a->len = 7;
    a->flags = TERN_BUF_TX_L4_CSUM;
    a->data += 9;
    a->refs = 2;
    tern_pool_release_one(p, a);            /* one owner left */
    assert_int_equal(a->refs, 1);
    assert_int_equal(tern_pool_available(p), 1);
    tern_pool_release_one(p, a);
    assert_int_equal(tern_pool_available(p), 2);
    tern_buf *b = tern_pool_ready(p, p->stack.free[--p->stack.top]);  /* LIFO: a */
    assert_ptr_equal(b, a);
    assert_int_equal(b->refs, 1);
    assert_int_equal(b->len, 0);
    assert_int_equal(b->flags, 0);
    assert_null(b->frag);
    assert_ptr_equal(b->data, b->head + TERN_HEADROOM);
    tern_buf *c = tern_pool_alloc(p);
    assert_ptr_not_equal(c, b);
    assert_null(tern_pool_alloc(p));
    tern_pool_release_one(p, b);
    tern_pool_release_one(p, c);
    assert_int_equal(tern_pool_available(p), 2);
    tern_pool_destroy(p);
}

/* Whether fn aborts, with `why` in the message it prints. */
static bool aborts(void (*fn)(tern_pool *), const char *why)
{
    char path[] = "/tmp/test_pool_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return false;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 2);
        tern_pool *p = tern_pool_create(4, 2048);
        fn(p);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    char msg[256] = "";
    ssize_t n = pread(fd, msg, sizeof msg - 1, 0);
    msg[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(msg, why);
}

static void do_double_release(tern_pool *p)
{
    tern_buf *b = tern_pool_alloc(p);
    tern_pool_release(p, b);
    tern_pool_release(p, b);
}

static void do_double_free(tern_pool *p)
{
    tern_buf *b = tern_pool_alloc(p);
    b->refs = 0;
    tern_pool_put(p, b);
    tern_pool_put(p, b);  /* tern_buf_ops.free twice */
}

static void do_free_referenced(tern_pool *p)
{
    tern_pool_put(p, tern_pool_alloc(p));  /* refs still 1 */
}

static void do_foreign(tern_pool *p)
{
    tern_pool *q = tern_pool_create(1, 2048);
    tern_pool_release(p, tern_pool_alloc(q));
}

static void do_use_after_free(tern_pool *p)
{
    tern_buf *b = tern_pool_alloc(p);
    tern_pool_release(p, b);
    b->refs++;  /* a stale tern_buf_ref() on a freed buffer */
    tern_pool_alloc(p);
}

/* Through an instance with the LIFO: a double release leaves refs at
 * FREE - 1 and the next alloc falls back to the pool, which aborts; a
 * foreign buffer goes to the pool's free, which aborts. */
static void do_core_double_release(tern_pool *p)
{
    void *mem;
    tern_stack *st = stack_over(p, true, &mem);
    tern_buf *b = tern_buf_alloc(st);
    tern_buf_release(st, b);
    tern_buf_release(st, b);
    tern_buf_alloc(st);
}

static void do_core_foreign(tern_pool *p)
{
    void *mem;
    tern_stack *st = stack_over(p, true, &mem);
    tern_pool *q = tern_pool_create(1, 2048);
    tern_buf_release(st, tern_pool_alloc(q));
}

static void misuse_aborts(void **state)
{
    (void)state;
    if (!TERN_POOL_CHECKS)
        skip();
    assert_true(aborts(do_double_release, "double release"));
    assert_true(aborts(do_double_free, "double free"));
    assert_true(aborts(do_free_referenced, "free of a referenced buffer"));
    assert_true(aborts(do_foreign, "not from this pool"));
    assert_true(aborts(do_use_after_free, "use after free"));
    assert_true(aborts(do_core_double_release, "use after free"));
    assert_true(aborts(do_core_foreign, "not from this pool"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(create_rejects_bad_sizes),
        cmocka_unit_test(fresh_buffer_fields),
        cmocka_unit_test(lifo_order),
        cmocka_unit_test(exhaustion),
        cmocka_unit_test(refcounts),
        cmocka_unit_test(frag_chain_release),
        cmocka_unit_test(ops_table),
        cmocka_unit_test(misuse_aborts),
        cmocka_unit_test(ready_and_release_one),
        cmocka_unit_test(stack_inline_matches_ops),
        cmocka_unit_test(stack_inline_refusals),
        cmocka_unit_test(stack_holds_every_buffer),
        cmocka_unit_test(core_alloc_release_with_and_without_lifo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
