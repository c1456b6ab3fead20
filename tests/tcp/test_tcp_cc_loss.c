/* How much a loss reduces the window, against a scripted peer, simulated
 * time:
 *  - CUBIC starts a recovery at 0.7 of cwnd even when the ACKs of the same
 *    burst acknowledged half the flight before the loss showed (the stack
 *    sends only after the burst, so the flight was not yet refilled);
 *  - an RTO during a recovery keeps the ssthresh set when the recovery
 *    began (no second reduction for the same window), cwnd is one
 *    segment;
 *  - an RTO outside a recovery does reduce ssthresh;
 *  - in CUBIC's Reno-friendly region cwnd is the estimate W_est, which
 *    grows by 0.53 segment per window of ACKs until it is back at the
 *    cwnd of the last reduction, then by one (RFC 9438 4.3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"

#define SEG 1448u
#define FLIGHT 20u

static tern_conn *conn;
static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)lu;
    conn = c;
    return NULL;
}
static void tweak(tern_config *c)
{
    c->cb.accepted = on_accepted;
    c->time_wait_ms = 1000;
}

static th *T;
static peer P;
static uint8_t data[2 * FLIGHT * SEG];
static uint32_t una;           /* the stack's first data byte */

static struct tern_conn *C(void) { return (struct tern_conn *)conn; }
static const tern_counters *ctr(void) { return tern_get_counters(T->st); }

static int setup(void **s)
{
    (void)s;
    conn = NULL;
    T = th_new(tweak);
    peer_init(&P, T);
    peer_connect(&P, 80, 40300);
    assert_non_null(conn);
    memset(data, 0x3c, sizeof data);
    return 0;
}
static int teardown(void **s)
{
    (void)s;
    assert_int_equal(th_free(T), 0);
    return 0;
}

/* FLIGHT segments out (cwnd opened by hand), `queued` more behind. */
static void start(uint32_t queued)
{
    C()->cwnd = FLIGHT * SEG;
    long n = (long)((FLIGHT + queued) * SEG);
    assert_int_equal(tern_tcp_send(T->st, conn, data, (size_t)n), n);
    tern_flush(T->st);
    assert_int_equal(tp_count(T), FLIGHT);
    tpkt p;
    tp_get(T, 0, &p);
    una = p.seq;
    th_advance_us(T, 1000);                        /* RTT ~1 ms */
}

/* The peer's ACK of `ack` SACKing segments [a, b) (none if b <= a),
 * built into f; returns its length. */
static size_t sack_frame(uint8_t *f, uint32_t ack, uint32_t a, uint32_t b)
{
    uint8_t o[12] = {1, 1, 5, 10};
    th_put32(o + 4, una + a * SEG);
    th_put32(o + 8, una + b * SEG);
    return tp_frame(f, TH_PEER_IP, TH_IP, P.port, P.lport, P.seq,
                    una + ack * SEG, F_ACK, P.wnd, o, b > a ? 12 : 0, NULL,
                    0);
}

/* Several ACKs handed to the stack in one tern_input call, as a driver
 * delivers a burst: output runs only after the last one. */
static void ack_burst(const uint32_t (*acks)[3], unsigned n)
{
    tern_buf *b[8];
    assert_true(n <= 8);
    for (unsigned i = 0; i < n; i++) {
        b[i] = T->cfg.buf_ops.alloc(T->cfg.buf_ops.ctx);
        assert_non_null(b[i]);
        b[i]->len = (uint32_t)sack_frame(b[i]->data, acks[i][0], acks[i][1],
                                         acks[i][2]);
    }
    tern_input(T->st, b, n, T->now);
}

static void ack_sack(uint32_t ack, uint32_t a, uint32_t b)
{
    uint32_t one[1][3] = {{ack, a, b}};
    ack_burst(one, 1);
}

static void cubic_reduces_cwnd_not_acked_flight(void **s)
{
    (void)s;
    start(FLIGHT);
    /* one burst: segments 0-9 acknowledged, 10 lost, 11-13 SACKed: when
     * the loss shows, only 10 segments are out */
    static const uint32_t burst[4][3] = {
        {10, 0, 0}, {10, 11, 12}, {10, 11, 13}, {10, 11, 14},
    };
    uint32_t cwnd0 = C()->cwnd;
    ack_burst(burst, 4);
    assert_true(C()->flags & TF_RECOVERY);
    assert_int_equal(ctr()->tcp_sack_recoveries, 1);
    /* the first ACK grew cwnd (slow start counts its 10 segments whole):
     * beta = 0.7 of that, not of the 10 segments left in flight (7) */
    uint32_t lo = (uint32_t)((uint64_t)cwnd0 * 717 >> 10);
    uint32_t hi = (uint32_t)((uint64_t)(cwnd0 + 10 * SEG) * 717 >> 10);
    assert_true(C()->ssthresh >= lo);
    assert_true(C()->ssthresh <= hi);
}

static void rto_in_recovery_keeps_ssthresh(void **s)
{
    (void)s;
    start(0);
    /* segment 0 lost: SACKs of 1, 1-2, 1-3 start the recovery */
    for (uint32_t k = 2; k <= 4; k++)
        ack_sack(0, 1, k);
    assert_true(C()->flags & TF_RECOVERY);
    uint32_t ss = C()->ssthresh;
    assert_true(ss >= FLIGHT * SEG * 7 / 10 - SEG);
    /* the fast retransmission is lost too and nothing else comes back:
     * the RTO fires inside the recovery */
    th_advance_us(T, 2000000);
    assert_true(ctr()->tcp_rto_expiries >= 1);
    assert_false(C()->flags & TF_RECOVERY);
    assert_int_equal(C()->ssthresh, ss);
    assert_int_equal(C()->cwnd, C()->mss);  /* no ACK since: one segment */
}

static void rto_outside_recovery_reduces(void **s)
{
    (void)s;
    start(0);
    uint32_t cwnd0 = C()->cwnd;
    /* nothing comes back: a tail probe, then the RTO */
    th_advance_us(T, 2000000);
    assert_true(ctr()->tcp_rto_expiries >= 1);
    assert_int_equal(ctr()->tcp_sack_recoveries, 0);
    assert_int_equal(C()->ssthresh, (uint32_t)((uint64_t)cwnd0 * 717 >> 10));
}

/* Bytes cwnd grows while one cwnd of 1000-byte ACKs comes in, with the
 * clock moving 1 us per ACK (the cubic curve stays far below: the
 * Reno-friendly estimate sets the pace). */
static uint32_t round_growth(struct tern_conn *c, uint64_t *now)
{
    uint32_t w0 = c->cwnd;
    for (uint32_t b = 0; b < w0; b += 1000) {
        *now += 1000;
        tcp_cc_cubic.on_ack(c, 1000, 200, *now);
    }
    return c->cwnd - w0;
}

static void cubic_reno_friendly_region(void **s)
{
    (void)s;
    struct tern_conn c;
    memset(&c, 0, sizeof c);
    c.mss = 1000;
    c.srtt_us = 200;
    tcp_cc_cubic.init(&c);
    c.cwnd = 40000;
    c.snd_max = c.snd_una + 40000;
    tcp_cc_cubic.on_loss(&c, 0);
    c.cwnd = c.ssthresh;                     /* 28,007: recovery over */
    uint64_t now = 1000 * TERN_NS_PER_SEC;
    unsigned below = 0, above = 0;
    for (int r = 0; r < 60; r++) {
        uint32_t w = c.cwnd;
        uint32_t g = round_growth(&c, &now);
        /* Reno-friendly region: cwnd is W_est itself, no lag */
        assert_int_equal(c.cwnd, (uint32_t)(c.cc.w_est >> 10));
        if (w + 1000 < 40000) {              /* estimate below cwnd_prior */
            assert_in_range(g, 500, 560);    /* alpha 0.53 */
            below++;
        } else if (w > 40000) {
            assert_in_range(g, 950, 1050);   /* alpha 1 */
            above++;
        }
    }
    assert_true(below >= 10);
    assert_true(above >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(cubic_reduces_cwnd_not_acked_flight,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(rto_in_recovery_keeps_ssthresh, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(rto_outside_recovery_reduces, setup,
                                        teardown),
        cmocka_unit_test(cubic_reno_friendly_region),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
