/* tern_tcp_send_buf_sum between two stacks over the mem link (software
 * checksums on both ends): the sender fills pool buffers with the bulk
 * pattern and hands over the sum it took while filling. Whole-MSS
 * buffers leave in place with that sum; odd sizes put payloads at odd
 * stream offsets; buffers larger than a segment leave in copied pieces;
 * small tern_tcp_send copies coalesce into an unsent app buffer. Every
 * byte arrives in order and no checksum drop happens. A wrong sum goes out
 * as a bad segment and the receiver counts tcp_drop_csum and delivers
 * nothing. The batched calls (tern_buf_alloc_n, tern_tcp_send_bufs) move
 * the same stream, with and without sums, and stop at the first buffer
 * that does not fit or is not valid, the rest staying the caller's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pattern.h"
#include "xfer.h"

/* A pattern stream (xfer.h) that this test's sender queues in pool
 * buffers with their sums. */
typedef struct sum_xfer {
    xfer x;                      /* first: the callbacks' user */
    uint32_t chunk;              /* payload per app buffer */
    bool copy_too;               /* every third piece a small copied send */
    bool wrong_sum;              /* hand over sum + 1 */
    bool by_hand;                /* the test sends; pump does nothing */
    unsigned batch;              /* > 0: tern_tcp_send_bufs, this many */
    bool no_sums;                /* batch without sums (the stack sums) */
    unsigned pieces;
} sum_xfer;

/* One app buffer of n pattern bytes at the stream offset; false when the
 * stack did not take it. */
static bool send_piece(tern_stack *st, sum_xfer *s, uint32_t n)
{
    xfer *x = &s->x;
    tern_buf *b = tern_buf_alloc(st);
    if (!b)
        return false;
    if (b->size - (uint32_t)(b->data - b->head) < n) {
        tern_buf_release(st, b);
        fail_msg("pool buffer smaller than %u bytes", n);
    }
    uint32_t sum = pattern_fill_sum(b->data, x->sent, n);
    if (s->wrong_sum)
        sum = sum % 0xffff + 1;      /* a different value modulo 0xffff */
    b->len = n;
    if (tern_tcp_send_buf_sum(st, x->cli, b, sum) != 0) {
        tern_buf_release(st, b);
        return false;
    }
    x->sent += n;
    return true;
}

/* A few bytes copied by the stack (it may coalesce them into our last,
 * still unsent buffer, adding to the sum we gave). */
static bool send_copy(tern_stack *st, sum_xfer *s, uint32_t n)
{
    xfer *x = &s->x;
    uint8_t tmp[16];
    pattern_fill(tmp, x->sent, n);
    long r = tern_tcp_send(st, x->cli, tmp, n);
    if (r <= 0)
        return false;
    x->sent += (uint64_t)r;
    return true;
}

/* Up to s->batch whole chunks allocated, filled and queued with one call
 * each; false when the stack took none (or not all). */
static bool send_batch(tern_stack *st, sum_xfer *s)
{
    xfer *x = &s->x;
    tern_buf *bufs[64];
    uint32_t sums[64];
    uint64_t left = (x->total - x->sent) / s->chunk;
    size_t fit = tern_tcp_send_space(st, x->cli) / s->chunk;
    unsigned want = s->batch;
    if (fit < want)
        want = (unsigned)fit;
    if (left < want)
        want = (unsigned)left;
    unsigned got = tern_buf_alloc_n(st, bufs, want);
    if (!got)
        return false;
    for (unsigned i = 0; i < got; i++) {
        sums[i] = pattern_fill_sum(bufs[i]->data, x->sent + (uint64_t)i * s->chunk,
                                   s->chunk);
        bufs[i]->len = s->chunk;
    }
    long r = tern_tcp_send_bufs(st, x->cli, bufs, s->no_sums ? NULL : sums, got);
    assert_int_equal(r, got);       /* it all fit: the space was asked */
    x->sent += (uint64_t)got * s->chunk;
    s->pieces += got;
    return true;
}

/* xfer.h's send hook. */
static void pump(tern_stack *st, xfer *x)
{
    sum_xfer *s = (sum_xfer *)x;
    if (s->by_hand)
        return;
    while (s->batch && x->cli && x->total - x->sent >= s->chunk)
        if (!send_batch(st, s))
            return;
    while (x->cli && x->sent < x->total) {
        uint64_t left = x->total - x->sent;
        bool copy = s->copy_too && s->pieces % 3 == 2;
        uint32_t n = copy ? 7 : s->chunk;
        if (n > left)
            n = (uint32_t)left;
        if (tern_tcp_send_space(st, x->cli) < n)
            break;
        if (!(copy ? send_copy(st, s, n) : send_piece(st, s, n)))
            break;
        s->pieces++;
    }
}

static void tw(tern_config *c, int end)
{
    (void)end;
    c->time_wait_ms = 100;
}

/* Connect end 0 to end 1 with s as both ends' user: the receiver checks
 * the pattern; unless by hand, the sender closes at the end and each end
 * on the other's FIN. */
static pair *open_pair(sum_xfer *s)
{
    s->x.send = pump;
    s->x.pattern = true;
    s->x.close_at_end = !s->by_hand;
    pair *p = pair_new(NULL, 7, tw, &XFER_CB, &s->x, &s->x);
    assert_true(xfer_start(p, &s->x));
    return p;
}

/* The stream s describes, end to end: every byte once, in order, no
 * checksum drop, no retransmission. */
static void run_xfer(sum_xfer *s)
{
    xfer *x = &s->x;
    pair *p = open_pair(s);
    assert_true(pair_run(p, xfer_closed, x, p->now + 600 * TERN_NS_PER_SEC));
    const tern_counters *c0 = tern_get_counters(p->st[0]);
    const tern_counters *c1 = tern_get_counters(p->st[1]);
    assert_int_equal(x->rcvd, x->total);
    assert_int_equal(x->good, x->total);
    assert_true(s->pieces > 10);
    assert_int_equal(c1->tcp_drop_csum, 0);
    assert_int_equal(c0->tcp_drop_csum, 0);
    assert_int_equal(c1->ip_drop_csum, 0);
    assert_int_equal(c0->tcp_retransmits, 0);
    pair_free(p);
}

static void run_clean(uint32_t chunk, bool copy_too, uint64_t total)
{
    sum_xfer sx;
    memset(&sx, 0, sizeof sx);
    sx.x.total = total;
    sx.chunk = chunk;
    sx.copy_too = copy_too;
    run_xfer(&sx);
}

static void run_batched(uint32_t chunk, unsigned batch, bool no_sums,
                        uint64_t total)
{
    sum_xfer sx;
    memset(&sx, 0, sizeof sx);
    sx.x.total = total;
    sx.chunk = chunk;
    sx.batch = batch;
    sx.no_sums = no_sums;
    run_xfer(&sx);
    assert_true(sx.pieces >= total / chunk);
}

static void mss_buffers(void **s) { (void)s; run_clean(1448, false, 4u << 20); }
/* batches of 16 MSS buffers with sums; of 5 odd ones without (the stack
 * sums them); the stream's tail shorter than a chunk goes one by one */
static void batched_sums(void **s) { (void)s; run_batched(1448, 16, false, 4u << 20); }
static void batched_no_sums(void **s) { (void)s; run_batched(1001, 5, true, (1u << 20) + 77); }
static void odd_buffers(void **s) { (void)s; run_clean(1001, false, 1u << 20); }
static void with_copies(void **s) { (void)s; run_clean(1001, true, 1u << 20); }
static void over_mss(void **s) { (void)s; run_clean(1800, false, 1u << 20); }

static bool cli_connected(void *arg)
{
    return ((xfer *)arg)->cli != NULL;
}

/* n pool buffers of len pattern bytes from stream offset off, and their
 * sums. */
static void fill_bufs(tern_stack *st, tern_buf **b, uint32_t *sums, unsigned n,
                      uint64_t off, uint32_t len)
{
    assert_int_equal(tern_buf_alloc_n(st, b, n), n);
    for (unsigned i = 0; i < n; i++) {
        sums[i] = pattern_fill_sum(b[i]->data, off + (uint64_t)i * len, len);
        b[i]->len = len;
    }
}

/* tern_tcp_send_bufs' edges, by hand: bad arguments; a batch that stops
 * at an invalid buffer and one that stops at the send space (the caller
 * keeps the rest); no space at all; a shut-down conn. */
static void batched_edges(void **s)
{
    (void)s;
    sum_xfer sx;
    memset(&sx, 0, sizeof sx);
    sx.by_hand = true;
    pair *p = open_pair(&sx);
    tern_stack *st = p->st[0];
    assert_true(pair_run(p, cli_connected, &sx.x, p->now + 10 * TERN_NS_PER_SEC));
    tern_buf *b[64];
    uint32_t sums[64];
    assert_int_equal(tern_buf_alloc_n(st, b, 0), 0);
    assert_int_equal(tern_tcp_send_bufs(st, sx.x.cli, b, sums, 0), -TERN_EINVAL);
    assert_int_equal(tern_tcp_send_bufs(st, sx.x.cli, NULL, sums, 3), -TERN_EINVAL);
    assert_int_equal(tern_tcp_send_bufs(st, NULL, b, sums, 3), -TERN_ENOTCONN);
    /* the third of four is empty: two go, the caller keeps the others */
    fill_bufs(st, b, sums, 4, 0, 1000);
    b[2]->len = 0;
    assert_int_equal(tern_tcp_send_bufs(st, sx.x.cli, b, sums, 4), 2);
    assert_int_equal(tern_tcp_send_bufs(st, sx.x.cli, b + 2, sums + 2, 2), -TERN_EINVAL);
    tern_buf_release(st, b[2]);
    tern_buf_release(st, b[3]);
    /* fill the send space but for 1000 bytes, then a batch of three */
    size_t space = tern_tcp_send_space(st, sx.x.cli);
    uint64_t off = 2000;
    while (space > 1000 + 1448) {
        fill_bufs(st, b, sums, 1, off, 1448);
        assert_int_equal(tern_tcp_send_bufs(st, sx.x.cli, b, sums, 1), 1);
        off += 1448;
        space -= 1448;
    }
    uint32_t last = (uint32_t)space - 1000;         /* 1..1448 */
    fill_bufs(st, b, sums, 1, off, last);
    assert_int_equal(tern_tcp_send_bufs(st, sx.x.cli, b, sums, 1), 1);
    off += last;
    assert_int_equal(tern_tcp_send_space(st, sx.x.cli), 1000);
    fill_bufs(st, b, sums, 3, off, 600);
    assert_int_equal(tern_tcp_send_bufs(st, sx.x.cli, b, sums, 3), 1);
    assert_int_equal(tern_tcp_send_bufs(st, sx.x.cli, b + 1, sums + 1, 2), -TERN_EAGAIN);
    tern_buf_release(st, b[1]);
    tern_buf_release(st, b[2]);
    /* what was queued arrives whole and in order */
    uint64_t queued = off + 600;
    sx.x.total = queued;
    assert_true(pair_run(p, xfer_delivered, &sx.x, p->now + 10 * TERN_NS_PER_SEC));
    assert_int_equal(sx.x.rcvd, queued);
    assert_int_equal(sx.x.good, queued);
    /* after shutdown nothing more */
    assert_int_equal(tern_tcp_shutdown(st, sx.x.cli), 0);
    fill_bufs(st, b, sums, 1, queued, 100);
    assert_int_equal(tern_tcp_send_bufs(st, sx.x.cli, b, sums, 1), -TERN_ENOTCONN);
    tern_buf_release(st, b[0]);
    tern_tcp_abort(st, sx.x.cli);
    pair_free(p);
}

#ifdef TERN_CHECK_APP_CSUM

/* The checking core (the sanitized twin links it) refuses a wrong sum
 * before anything is queued, and takes the right one; a batch stops at
 * its wrong sum. */
static void wrong_sum_dropped(void **s)
{
    (void)s;
    sum_xfer sx;
    memset(&sx, 0, sizeof sx);
    sx.by_hand = true;
    pair *p = open_pair(&sx);
    assert_true(pair_run(p, cli_connected, &sx.x, p->now + 10 * TERN_NS_PER_SEC));
    tern_buf *b = tern_buf_alloc(p->st[0]);
    assert_non_null(b);
    uint32_t sum = pattern_fill_sum(b->data, 0, 1448);
    b->len = 1448;
    assert_int_equal(tern_tcp_send_buf_sum(p->st[0], sx.x.cli, b,
                                           sum % 0xffff + 1),
                     -TERN_EINVAL);
    assert_int_equal(tern_tcp_send_buf_sum(p->st[0], sx.x.cli, b, sum), 0);
    /* a batch stops at its wrong sum: the first goes, the rest stay ours */
    tern_buf *bs[3];
    uint32_t sums[3];
    fill_bufs(p->st[0], bs, sums, 3, 1448, 1448);
    sums[1] = sums[1] % 0xffff + 1;
    assert_int_equal(tern_tcp_send_bufs(p->st[0], sx.x.cli, bs, sums, 3), 1);
    tern_buf_release(p->st[0], bs[1]);
    tern_buf_release(p->st[0], bs[2]);
    tern_tcp_abort(p->st[0], sx.x.cli);
    pair_free(p);
}
#else
static bool two_csum_drops(void *arg)
{
    xfer *x = arg;
    return tern_get_counters(x->p->st[1])->tcp_drop_csum >= 2;
}

static void wrong_sum_dropped(void **s)
{
    (void)s;
    sum_xfer sx;
    memset(&sx, 0, sizeof sx);
    sx.x.total = 1448;
    sx.chunk = 1448;
    sx.wrong_sum = true;
    pair *p = open_pair(&sx);
    assert_true(pair_run(p, two_csum_drops, &sx.x,
                         p->now + 60 * TERN_NS_PER_SEC));
    assert_int_equal(sx.x.sent, 1448);
    assert_int_equal(sx.x.rcvd, 0);
    assert_int_equal(tern_get_counters(p->st[0])->tcp_drop_csum, 0);
    assert_true(tern_get_counters(p->st[0])->tcp_retransmits >= 1);
    tern_tcp_abort(p->st[0], sx.x.cli);
    pair_free(p);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mss_buffers),
        cmocka_unit_test(batched_sums),
        cmocka_unit_test(batched_no_sums),
        cmocka_unit_test(batched_edges),
        cmocka_unit_test(odd_buffers),
        cmocka_unit_test(with_copies),
        cmocka_unit_test(over_mss),
        cmocka_unit_test(wrong_sum_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
