/* tern_tcp_send_buf_sum between two stacks over the mem link (software
 * checksums on both ends): the sender fills pool buffers with the bulk
 * pattern and hands over the sum it took while filling. Whole-MSS
 * buffers leave in place with that sum; odd sizes put payloads at odd
 * stream offsets; buffers larger than a segment leave in copied pieces;
 * small tern_tcp_send copies coalesce into an unsent app buffer. Every
 * byte arrives in order and no checksum drop happens. A wrong sum goes out
 * as a bad segment and the receiver counts tcp_drop_csum and delivers
 * nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pattern.h"

typedef struct xfer {
    pair *p;
    tern_conn *cli, *srv;
    uint64_t total, sent, rcvd, good;
    uint32_t chunk;              /* payload per app buffer */
    bool copy_too;               /* every third piece a small copied send */
    bool wrong_sum;              /* hand over sum + 1 */
    bool by_hand;                /* the test sends; pump does nothing */
    unsigned pieces;
    bool closed[2];
} xfer;

/* One app buffer of n pattern bytes at the stream offset; false when the
 * stack did not take it. */
static bool send_piece(tern_stack *st, xfer *x, uint32_t n)
{
    tern_buf *b = tern_buf_alloc(st);
    if (!b)
        return false;
    if (b->size - (uint32_t)(b->data - b->head) < n) {
        tern_buf_release(st, b);
        fail_msg("pool buffer smaller than %u bytes", n);
    }
    uint32_t sum = pattern_fill_sum(b->data, x->sent, n);
    if (x->wrong_sum)
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
static bool send_copy(tern_stack *st, xfer *x, uint32_t n)
{
    uint8_t tmp[16];
    pattern_fill(tmp, x->sent, n);
    long r = tern_tcp_send(st, x->cli, tmp, n);
    if (r <= 0)
        return false;
    x->sent += (uint64_t)r;
    return true;
}

static void pump(tern_stack *st, xfer *x)
{
    if (x->by_hand)
        return;
    while (x->cli && x->sent < x->total) {
        uint64_t left = x->total - x->sent;
        bool copy = x->copy_too && x->pieces % 3 == 2;
        uint32_t n = copy ? 7 : x->chunk;
        if (n > left)
            n = (uint32_t)left;
        if (tern_tcp_send_space(st, x->cli) < n)
            break;
        if (!(copy ? send_copy(st, x, n) : send_piece(st, x, n)))
            break;
        x->pieces++;
    }
    if (x->cli && x->sent == x->total)
        tern_tcp_shutdown(st, x->cli);
}

static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)lu;
    xfer *x = tern_get_user(st);
    x->srv = c;
    return x;
}
static void on_connected(tern_stack *st, tern_conn *c, void *u)
{
    xfer *x = u;
    x->cli = c;
    pump(st, x);
}
static void on_acked(tern_stack *st, tern_conn *c, void *u, size_t n)
{
    (void)c; (void)n;
    pump(st, u);
}
static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t len)
{
    (void)st; (void)c; (void)b;
    xfer *x = u;
    if (x->good == x->rcvd)
        x->good += pattern_check(d, x->rcvd, len);
    x->rcvd += len;
    return len;
}
static void on_peer_closed(tern_stack *st, tern_conn *c, void *u)
{
    (void)u;
    tern_tcp_close(st, c);
}
static void on_closed(tern_stack *st, tern_conn *c, void *u, int reason)
{
    (void)st; (void)reason;
    xfer *x = u;
    if (c == x->cli) {
        x->closed[0] = true;
        x->cli = NULL;
    } else {
        x->closed[1] = true;
        x->srv = NULL;
    }
}

static const tern_callbacks CB = {
    .accepted = on_accepted, .connected = on_connected, .recv = on_recv,
    .acked = on_acked, .peer_closed = on_peer_closed, .closed = on_closed,
};

static bool both_closed(void *arg)
{
    xfer *x = arg;
    return x->closed[0] && x->closed[1];
}


static void tw(tern_config *c, int end)
{
    (void)end;
    c->time_wait_ms = 100;
}

/* Connect end 0 to end 1 with x as both ends' user. */
static pair *open_pair(xfer *x)
{
    pair *p = pair_new(NULL, 7, tw, &CB, x, x);
    x->p = p;
    assert_int_equal(tern_tcp_listen(p->st[1], 5001, x), 0);
    int err;
    assert_non_null(tern_tcp_connect(p->st[0], PAIR_IP1, 5001, 0, x, &err));
    tern_flush(p->st[0]);
    return p;
}

static void run_clean(uint32_t chunk, bool copy_too, uint64_t total)
{
    xfer x;
    memset(&x, 0, sizeof x);
    x.total = total;
    x.chunk = chunk;
    x.copy_too = copy_too;
    pair *p = open_pair(&x);
    assert_true(pair_run(p, both_closed, &x, p->now + 600 * TERN_NS_PER_SEC));
    const tern_counters *c0 = tern_get_counters(p->st[0]);
    const tern_counters *c1 = tern_get_counters(p->st[1]);
    assert_int_equal(x.rcvd, total);
    assert_int_equal(x.good, total);
    assert_true(x.pieces > 10);
    assert_int_equal(c1->tcp_drop_csum, 0);
    assert_int_equal(c0->tcp_drop_csum, 0);
    assert_int_equal(c1->ip_drop_csum, 0);
    assert_int_equal(c0->tcp_retransmits, 0);
    pair_free(p);
}

static void mss_buffers(void **s) { (void)s; run_clean(1448, false, 4u << 20); }
static void odd_buffers(void **s) { (void)s; run_clean(1001, false, 1u << 20); }
static void with_copies(void **s) { (void)s; run_clean(1001, true, 1u << 20); }
static void over_mss(void **s) { (void)s; run_clean(1800, false, 1u << 20); }

#ifdef TERN_CHECK_APP_CSUM
static bool cli_connected(void *arg)
{
    return ((xfer *)arg)->cli != NULL;
}

/* The checking core (the sanitized twin links it) refuses a wrong sum
 * before anything is queued, and takes the right one. */
static void wrong_sum_dropped(void **s)
{
    (void)s;
    xfer x;
    memset(&x, 0, sizeof x);
    x.by_hand = true;
    pair *p = open_pair(&x);
    assert_true(pair_run(p, cli_connected, &x, p->now + 10 * TERN_NS_PER_SEC));
    tern_buf *b = tern_buf_alloc(p->st[0]);
    assert_non_null(b);
    uint32_t sum = pattern_fill_sum(b->data, 0, 1448);
    b->len = 1448;
    assert_int_equal(tern_tcp_send_buf_sum(p->st[0], x.cli, b,
                                           sum % 0xffff + 1),
                     -TERN_EINVAL);
    assert_int_equal(tern_tcp_send_buf_sum(p->st[0], x.cli, b, sum), 0);
    tern_tcp_abort(p->st[0], x.cli);
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
    xfer x;
    memset(&x, 0, sizeof x);
    x.total = 1448;
    x.chunk = 1448;
    x.wrong_sum = true;
    pair *p = open_pair(&x);
    assert_true(pair_run(p, two_csum_drops, &x,
                         p->now + 60 * TERN_NS_PER_SEC));
    assert_int_equal(x.sent, 1448);
    assert_int_equal(x.rcvd, 0);
    assert_int_equal(tern_get_counters(p->st[0])->tcp_drop_csum, 0);
    assert_true(tern_get_counters(p->st[0])->tcp_retransmits >= 1);
    tern_tcp_abort(p->st[0], x.cli);
    pair_free(p);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mss_buffers),
        cmocka_unit_test(odd_buffers),
        cmocka_unit_test(with_copies),
        cmocka_unit_test(over_mss),
        cmocka_unit_test(wrong_sum_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
