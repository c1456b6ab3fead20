/* test_tcp_sack_rx.c - the receiver's SACK information (RFC 2018 4,
 * RFC 2883) with a scripted peer: blocks in the order their data last
 * arrived, so blocks beyond the first are repeated in later ACKs; a
 * D-SACK block, once, for data that came twice (below rcv_nxt or already
 * queued out of order); the timestamp echo of out-of-order and
 * hole-filling segments (RFC 7323 4.3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"

static size_t nrx;
static tern_conn *conn;
static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)lu;
    conn = c;
    return NULL;
}
static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t len)
{
    (void)st; (void)c; (void)u; (void)b; (void)d;
    nrx += len;
    return len;
}
static void tweak(tern_config *c)
{
    c->cb.accepted = on_accepted;
    c->cb.recv = on_recv;
}

static th *T;
static peer P;
static uint32_t base;
static uint8_t data[4000];

static int setup(void **s)
{
    (void)s;
    nrx = 0;
    T = th_new(tweak);
    peer_init(&P, T);
    peer_connect(&P, 80, 40100);
    base = P.seq;
    return 0;
}
static int teardown(void **s)
{
    (void)s;
    assert_int_equal(th_free(T), 0);
    return 0;
}
static const tern_counters *ctr(void) { return tern_get_counters(T->st); }

/* The peer sends [base + a, base + b). */
static void seg(uint32_t a, uint32_t b)
{
    P.seq = base + a;
    peer_send(&P, F_ACK, data + a, b - a);
}
/* The stack's latest ACK. */
static tpkt last(void)
{
    tpkt p;
    assert_true(tp_get(T, -1, &p));
    return p;
}
static void block_is(const tpkt *p, uint32_t i, uint32_t a, uint32_t b)
{
    assert_true(i < p->nsack);
    assert_int_equal(p->sack[i][0], base + a);
    assert_int_equal(p->sack[i][1], base + b);
}

/* Four blocks, one ACK with room for three (timestamps): the block just
 * extended first, then the ones whose data came last, not the lowest. */
static void blocks_most_recent_first(void **s)
{
    (void)s;
    seg(100, 200);
    seg(300, 400);
    seg(500, 600);
    seg(700, 800);
    tpkt p = last();
    assert_int_equal(p.ack, base);
    assert_int_equal(p.nsack, 3);
    block_is(&p, 0, 700, 800);
    block_is(&p, 1, 500, 600);
    block_is(&p, 2, 300, 400);
    seg(400, 450);                      /* extends the second block */
    p = last();
    assert_int_equal(p.nsack, 3);
    block_is(&p, 0, 300, 450);
    block_is(&p, 1, 700, 800);
    block_is(&p, 2, 500, 600);
    seg(200, 300);                      /* joins the two lowest */
    p = last();
    block_is(&p, 0, 100, 450);
    block_is(&p, 1, 700, 800);
    block_is(&p, 2, 500, 600);
    seg(0, 100);                        /* the hole at rcv_nxt */
    p = last();
    assert_int_equal(p.ack, base + 450);
    assert_int_equal(p.nsack, 2);
    block_is(&p, 0, 700, 800);          /* the rest, as they came */
    block_is(&p, 1, 500, 600);
    assert_int_equal(nrx, 450);
    assert_int_equal(ctr()->tcp_dsacks_out, 0);
}

/* Data below rcv_nxt again: the next ACK's first block is that data
 * (below the ACK), and only that ACK reports it. */
static void dsack_for_old_data(void **s)
{
    (void)s;
    seg(0, 100);
    seg(100, 200);
    th_clear(T);
    seg(0, 100);
    tpkt p = last();
    assert_int_equal(p.ack, base + 200);
    assert_int_equal(p.nsack, 1);
    block_is(&p, 0, 0, 100);
    assert_int_equal(ctr()->tcp_dsacks_out, 1);
    assert_int_equal(ctr()->tcp_dup_data_in, 1);
    /* partly old: the old part is reported, the rest delivered */
    seg(150, 300);
    p = last();
    assert_int_equal(p.ack, base + 300);
    assert_int_equal(p.nsack, 1);
    block_is(&p, 0, 150, 200);
    seg(300, 400);
    th_advance_us(T, 500000);           /* the delayed ACK */
    th_poll(T);
    p = last();
    assert_int_equal(p.ack, base + 400);
    assert_int_equal(p.nsack, 0);
    assert_int_equal(nrx, 400);
    assert_int_equal(ctr()->tcp_dsacks_out, 2);
}

/* A queued out-of-order segment again: D-SACK block, then the block
 * holding it (RFC 2883 4.1.2), then the others. */
static void dsack_for_queued_data(void **s)
{
    (void)s;
    seg(100, 200);
    seg(200, 300);
    seg(500, 600);
    seg(100, 200);
    tpkt p = last();
    assert_int_equal(p.ack, base);
    assert_int_equal(p.nsack, 3);
    block_is(&p, 0, 100, 200);          /* D-SACK */
    block_is(&p, 1, 100, 300);
    block_is(&p, 2, 500, 600);
    seg(600, 700);
    p = last();
    assert_int_equal(p.nsack, 2);
    block_is(&p, 0, 500, 700);
    block_is(&p, 1, 100, 300);
}

/* RFC 7323 4.3: an out-of-order segment does not move ts_recent (the
 * echo stays the last in-order segment's TSval); the segment that fills
 * the hole does. */
static void ts_echo_out_of_order(void **s)
{
    (void)s;
    P.tsval = 600;
    seg(0, 100);
    th_advance_us(T, 500000);           /* the delayed ACK */
    th_poll(T);
    assert_int_equal(last().tsecr, 600);
    P.tsval = 700;
    seg(200, 300);
    assert_int_equal(last().tsecr, 600);
    P.tsval = 800;
    seg(100, 200);
    tpkt p = last();
    assert_int_equal(p.ack, base + 300);
    assert_int_equal(p.tsecr, 800);
}

/* Data we send while holding out-of-order data: the blocks go only in
 * the room the payload leaves, so no segment passes the MTU (a full one
 * with three blocks would be 28 bytes over, and dropped). */
static void data_with_blocks_fits(void **s)
{
    (void)s;
    seg(100, 200);
    seg(300, 400);
    th_clear(T);
    static uint8_t out[4000];
    assert_int_equal(tern_tcp_send(T->st, conn, out, sizeof out),
                     (long)sizeof out);
    tern_flush(T->st);
    uint32_t bytes = 0, with_blocks = 0;
    for (unsigned i = 0; i < tp_count(T); i++) {
        tpkt p;
        assert_true(tp_get(T, (int)i, &p));
        uint32_t opts = 12 + (p.nsack ? 4 + 8 * p.nsack : 0);
        assert_true(20 + 20 + opts + p.len <= 1500);
        bytes += p.len;
        with_blocks += p.nsack != 0;
    }
    assert_int_equal(bytes, sizeof out);
    assert_true(with_blocks >= 1);          /* the short last one */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(blocks_most_recent_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(dsack_for_old_data, setup, teardown),
        cmocka_unit_test_setup_teardown(dsack_for_queued_data, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(ts_echo_out_of_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(data_with_blocks_fits, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
