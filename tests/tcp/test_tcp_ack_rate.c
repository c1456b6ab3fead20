/* How often the receiver ACKs data that comes in bursts (ack_policy): one
 * ACK at the end of an input burst; inside it one every 4 full segments,
 * or in a full burst (the flight spans bursts) every quarter window (at
 * most 64 KiB, at least two full segments); and the sender's slow start
 * counting such a stretch ACK whole, up to 64 KiB. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"
#include "tcp/cc.h"
#include "tcp/tcp.h"

#define SEG 1448u
#define MAX_BURST 64

#define RX_BURST 32u                /* tern_config.rx_burst's default */

static uint32_t g_rcv_buf, g_rx_burst;
static bool g_steps;                /* bursts through tern_input_begin/one/end */
static void tweak(tern_config *c)
{
    c->rcv_buf = g_rcv_buf;
    c->rx_burst = g_rx_burst;
}

static void data_burst(peer *p, unsigned n);

/* A stack with receive buffer rcv_buf and rx_burst (0: the default) and
 * a conn from a scripted peer (40000 to 80), captured frames cleared. Two
 * segments first: their ACK opens the scaled window (a SYN's is at most
 * 64 KiB - 1). */
static th *connected(peer *p, uint32_t rcv_buf, uint32_t rx_burst)
{
    g_rcv_buf = rcv_buf;
    g_rx_burst = rx_burst;
    th *t = th_new(tweak);
    peer_init(p, t);
    peer_connect(p, 80, 40000);
    data_burst(p, 2);
    assert_int_equal(tp_count(t), 1);
    th_clear(t);
    return t;
}

/* n full data segments from the peer in one tern_input call, as a driver
 * hands over a burst (with g_steps, the same burst step by step). */
static void data_burst(peer *p, unsigned n)
{
    static uint8_t payload[SEG];
    tern_buf *b[MAX_BURST];
    uint8_t opt[12] = {1, 1, 8, 10};
    assert_true(n <= MAX_BURST);
    for (unsigned i = 0; i < n; i++) {
        b[i] = p->t->cfg.buf_ops.alloc(p->t->cfg.buf_ops.ctx);
        assert_non_null(b[i]);
        th_put32(opt + 4, p->tsval);
        th_put32(opt + 8, p->tsecr);
        b[i]->len = (uint32_t)tp_frame(b[i]->data, TH_PEER_IP, TH_IP, p->port,
                                       p->lport, p->seq, p->ack, F_ACK, p->wnd,
                                       opt, sizeof opt, payload, SEG);
        p->seq += SEG;
    }
    if (!g_steps) {
        tern_input(p->t->st, b, n, p->t->now);
        return;
    }
    tern_input_begin(p->t->st, n, p->t->now);
    for (unsigned i = 0; i < n; i++)
        tern_input_one(p->t->st, b[i]);
    tern_input_end(p->t->st);
}

/* The captured pure ACKs' acknowledgment numbers, in order; how many. */
static unsigned acks_sent(th *t, uint32_t *acks, unsigned max)
{
    unsigned n = 0;
    for (unsigned i = 0; i < tp_count(t); i++) {
        tpkt k;
        assert_true(tp_get(t, (int)i, &k));
        assert_int_equal(k.len, 0);
        assert_true(k.flags & F_ACK);
        assert_true(n < max);
        acks[n++] = k.ack;
    }
    return n;
}

/* n full segments in one burst into a fresh connection (connected()):
 * the pure ACKs it drew, each as bytes acknowledged since the burst's
 * start, in acks (at most 8); how many. No buffer may be left over. */
static unsigned burst_acks(uint32_t rcv_buf, uint32_t rx_burst, unsigned n,
                           uint32_t *acks)
{
    peer p;
    th *t = connected(&p, rcv_buf, rx_burst);
    uint32_t start = p.seq;
    data_burst(&p, n);
    unsigned k = acks_sent(t, acks, 8);
    for (unsigned i = 0; i < k; i++)
        acks[i] -= start;
    assert_int_equal(th_free(t), 0);
    return k;
}

/* A short burst (the sender's whole flight may be in it): an ACK every 4
 * full segments, the rest at the end (2 or more segments: at once). */
static void short_burst_acks_every_4(void **s)
{
    (void)s;
    uint32_t acks[8];
    assert_int_equal(burst_acks(256u * 1024, 0, 10, acks), 3);
    assert_int_equal(acks[0], 4 * SEG);
    assert_int_equal(acks[1], 8 * SEG);
    assert_int_equal(acks[2], 10 * SEG);
}

/* A full burst (rx_burst frames: the driver had more queued, so the
 * flight spans bursts): 32 segments, 46 KiB of a 256 KiB window, get one
 * ACK, at the end. */
static void big_burst_one_ack(void **s)
{
    (void)s;
    uint32_t acks[8];
    assert_int_equal(burst_acks(256u * 1024, 0, RX_BURST, acks), 1);
    assert_int_equal(acks[0], RX_BURST * SEG);
}

/* rx_burst set to the driver's 16: a burst of 16 is full, one ACK; with
 * the default 32 the same burst draws one every 4 segments. */
static void rx_burst_configured(void **s)
{
    (void)s;
    uint32_t acks[8];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(burst_acks(256u * 1024, k ? 16 : 0, 16, acks),
                         k ? 1 : 4);
        assert_int_equal(acks[0], (k ? 16 : 4) * SEG);
    }
}

/* 60 segments in one burst (87 KiB): an ACK once 64 KiB came in (the
 * 46th segment), the rest at the end. */
static void stretch_ack_inside_long_burst(void **s)
{
    (void)s;
    uint32_t acks[8];
    assert_int_equal(burst_acks(256u * 1024, 0, 60, acks), 2);
    assert_int_equal(acks[0], 46 * SEG);    /* 45 * 1448 < 65536 */
    assert_int_equal(acks[1], 60 * SEG);
}

/* A full burst into a 64 KiB window: an ACK every quarter window (16 KiB:
 * 12 segments), so a lost one leaves the sender others. */
static void big_burst_quarter_window(void **s)
{
    (void)s;
    uint32_t acks[8];
    assert_int_equal(burst_acks(64u * 1024, 0, RX_BURST, acks), 3);
    assert_int_equal(acks[0], 12 * SEG);    /* 11 * 1448 < 16384 */
    assert_int_equal(acks[1], 24 * SEG);
    assert_int_equal(acks[2], 32 * SEG);    /* the end: 8 left */
}

/* A burst handed over step by step (tern_input_begin, one frame at a
 * time, end: a driver that lands each frame just before it is read) draws
 * the same ACKs as the same burst in one tern_input call. */
static void step_by_step_same_acks(void **s)
{
    (void)s;
    static const unsigned sizes[] = {10, 16, RX_BURST, 60};
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t whole[8], steps[8];
        g_steps = false;
        unsigned k = burst_acks(256u * 1024, 0, sizes[i], whole);
        g_steps = true;
        assert_int_equal(burst_acks(256u * 1024, 0, sizes[i], steps), k);
        g_steps = false;
        assert_memory_equal(whole, steps, k * sizeof whole[0]);
    }
    /* a full burst step by step is still one ACK (not one per frame) */
    uint32_t acks[8];
    g_steps = true;
    assert_int_equal(burst_acks(256u * 1024, 0, RX_BURST, acks), 1);
    g_steps = false;
}

/* Slow start takes a stretch ACK whole up to 64 KiB (RFC 3465's 2 SMSS
 * would make it linear behind a receiver that ACKs once per burst), for
 * both congestion controls; above the limit it counts 64 KiB. */
static void slow_start_counts_stretch_ack(void **s)
{
    (void)s;
    const tcp_cc_ops *ops[2] = {&tcp_cc_newreno, &tcp_cc_cubic};
    for (int k = 0; k < 2; k++) {
        struct tern_conn c;
        memset(&c, 0, sizeof c);
        c.mss = SEG;
        ops[k]->init(&c);
        uint32_t w0 = c.cwnd;
        assert_int_equal(w0, 10 * SEG);
        ops[k]->on_ack(&c, 32 * SEG, 1000, TERN_NS_PER_SEC);
        assert_int_equal(c.cwnd, w0 + 32 * SEG);
        uint32_t w1 = c.cwnd;
        ops[k]->on_ack(&c, 100 * SEG, 1000, 2 * TERN_NS_PER_SEC);
        assert_int_equal(c.cwnd, w1 + TCP_ACK_STRETCH_MAX);
        /* past ssthresh, only up to it */
        c.ssthresh = c.cwnd + SEG;
        ops[k]->on_ack(&c, 10 * SEG, 1000, 3 * TERN_NS_PER_SEC);
        assert_true(c.cwnd >= c.ssthresh);
        assert_true(c.cwnd < c.ssthresh + 10 * SEG);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(short_burst_acks_every_4),
        cmocka_unit_test(big_burst_one_ack),
        cmocka_unit_test(rx_burst_configured),
        cmocka_unit_test(stretch_ack_inside_long_burst),
        cmocka_unit_test(big_burst_quarter_window),
        cmocka_unit_test(step_by_step_same_acks),
        cmocka_unit_test(slow_start_counts_stretch_ack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
