/* RACK (RFC 8985 section 6) against a scripted peer, simulated time:
 *  - a fast retransmission that is lost again is found and resent once
 *    data sent after it is SACKed, with no RTO;
 *  - a segment that arrives reordered within the reordering window is not
 *    resent, and the reordering is remembered;
 *  - a segment still missing when the window has passed is resent by the
 *    reordering timer, again with no RTO;
 *  - one ACK that opens several holes gets each resent once, lowest
 *    first and before new data, in the pass that ACK triggers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"
#include "server_conn.h"

#define SEG 1448u

static uint8_t data[30 * SEG];
static uint32_t una;           /* the stack's first data byte */

static int setup(void **s)
{
    (void)s;
    server_conn_open(40100, data, sizeof data);
    return 0;
}

/* An ACK of `ack` (relative to una) SACKing segments [a, b) (b > a). */
static void ack_sack(uint32_t ack, uint32_t a, uint32_t b)
{
    uint8_t o[12] = {1, 1, 5, 10};
    th_put32(o + 4, una + a * SEG);
    th_put32(o + 8, una + b * SEG);
    P.ack = una + ack * SEG;
    peer_send_opts(&P, F_ACK, o, b > a ? 12 : 0, NULL, 0);
}

/* How many captured data segments start at segment k. */
static unsigned sent_of(uint32_t k)
{
    unsigned n = 0;
    for (unsigned i = 0; i < tp_count(T); i++) {
        tpkt p;
        if (tp_get(T, (int)i, &p) && p.len && p.seq == una + k * SEG)
            n++;
    }
    return n;
}

/* Queue n segments; the first ten (IW10) leave at once. */
static void start(uint32_t n)
{
    assert_int_equal(tern_tcp_send(T->st, conn, data, n * SEG), (long)(n * SEG));
    tern_flush(T->st);
    assert_int_equal(tp_count(T), 10);
    tpkt p;
    tp_get(T, 0, &p);
    una = p.seq;
}

/* One round trip later the peer acknowledges all that was sent: the
 * application hears of every byte, and no RTO ran. */
static void ack_everything(void)
{
    th_advance_us(T, 1000);
    uint32_t max = ((struct tern_conn *)conn)->snd_max - una;
    P.ack = una + max;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(acked, max);
    assert_int_equal(ctr()->tcp_rto_expiries, 0);
}

static void lost_retransmission(void **s)
{
    (void)s;
    start(30);
    th_advance_us(T, 1000);                        /* RTT ~1 ms */
    /* segment 0 lost: SACKs for 1, 1-2, 1-3 start fast recovery */
    th_clear(T);
    for (uint32_t k = 2; k <= 4; k++)
        ack_sack(0, 1, k);
    assert_int_equal(ctr()->tcp_sack_recoveries, 1);
    assert_int_equal(sent_of(0), 1);         /* the fast retransmission */
    /* that retransmission is lost too. Later ACKs SACK the rest of the
     * first flight; the stack sends new data (segments 10 and up) after
     * its retransmission */
    th_advance_us(T, 1000);
    th_clear(T);
    for (uint32_t k = 5; k <= 10; k++)
        ack_sack(0, 1, k);
    assert_true(sent_of(10) == 1);
    assert_int_equal(sent_of(0), 0);
    /* one RTT later the peer SACKs segment 10, sent after the lost
     * retransmission: RACK finds it lost again and resends it at once */
    th_advance_us(T, 1000);
    th_clear(T);
    ack_sack(0, 1, 11);
    assert_int_equal(sent_of(0), 1);
    assert_true(ctr()->tcp_rack_lost >= 1);
    assert_int_equal(ctr()->tcp_rto_expiries, 0);
    /* it arrives: everything sent so far is acknowledged */
    ack_everything();
    assert_int_equal(ctr()->tcp_sack_recoveries, 1);   /* one episode */
}

static void reordering_within_window(void **s)
{
    (void)s;
    start(10);
    th_advance_us(T, 1000);
    th_clear(T);
    /* segment 1 overtakes segment 0 (one SACK: below DupThresh) */
    ack_sack(0, 1, 2);
    assert_int_equal(tp_count(T), 0);
    /* segment 0 comes 100 us later, inside min_RTT / 4 */
    th_advance_us(T, 100);
    ack_sack(2, 0, 0);
    assert_true(((struct tern_conn *)conn)->flags & TF_REORDER);
    th_advance_us(T, 5000);                        /* any timer may fire now */
    assert_int_equal(sent_of(0), 0);         /* (a tail probe may resend 9) */
    assert_int_equal(ctr()->tcp_rack_lost, 0);
    assert_int_equal(ctr()->tcp_fast_retransmits, 0);
    P.ack = una + 10 * SEG;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(acked, 10 * SEG);
    assert_int_equal(ctr()->tcp_retransmits, ctr()->tcp_tail_loss_probes);
    assert_int_equal(ctr()->tcp_rto_expiries, 0);
}

static void reordering_window_passes(void **s)
{
    (void)s;
    start(10);
    th_advance_us(T, 1000);
    th_clear(T);
    ack_sack(0, 1, 2);                       /* only segment 1 arrived */
    assert_int_equal(tp_count(T), 0);
    /* segment 0 never comes: once the window has passed, the reordering
     * timer resends it (long before the RTO or a tail probe, which would
     * come two round trips after that retransmission) */
    th_advance_us(T, 2000);
    assert_int_equal(sent_of(0), 1);
    assert_true(ctr()->tcp_rack_timeouts >= 1);
    assert_int_equal(ctr()->tcp_rack_recoveries, 1);
    assert_int_equal(ctr()->tcp_rto_expiries, 0);
    assert_int_equal(ctr()->tcp_tail_loss_probes, 0);
    P.ack = una + 10 * SEG;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(acked, 10 * SEG);
}

/* A recovery whose retransmission and every ACK after it are lost: a
 * tail probe resends the hole two round trips later, a second one twice
 * as late, and only then the RTO (at least 200 ms) runs. Outside RFC
 * 8985, which arms no probe in recovery and one per tail. */
static void probes_in_recovery(void **s)
{
    (void)s;
    start(10);
    th_advance_us(T, 1000);
    th_clear(T);
    ack_sack(0, 1, 5);                  /* 4 SACKed: segment 0 is lost */
    assert_int_equal(sent_of(0), 1);
    assert_int_equal(ctr()->tcp_sack_recoveries, 1);
    th_advance_us(T, 30000);            /* silence */
    assert_int_equal(ctr()->tcp_tail_loss_probes, 2);
    assert_int_equal(sent_of(0), 3);
    assert_int_equal(ctr()->tcp_rto_expiries, 0);
    th_advance_us(T, 400000);
    assert_int_equal(ctr()->tcp_tail_loss_probes, 2);
    assert_int_equal(ctr()->tcp_rto_expiries, 1);
    P.ack = una + 10 * SEG;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(acked, 10 * SEG);
}

/* Index in the capture of the first data segment starting at segment k,
 * or -1. */
static int first_of(uint32_t k)
{
    for (unsigned i = 0; i < tp_count(T); i++) {
        tpkt p;
        if (tp_get(T, (int)i, &p) && p.len && p.seq == una + k * SEG)
            return (int)i;
    }
    return -1;
}

/* One ACK reports three holes (segments 1, 3 and 5 of a 10-segment
 * flight; 2, 4 and 6-9 SACKed): every hole is lost by RFC 6675 at once.
 * The output pass after that ACK resends each hole once, in order, then
 * new data as far as the window allows; SACKed data is never resent. */
static void holes_resent_in_one_pass(void **s)
{
    (void)s;
    start(30);
    th_advance_us(T, 1000);
    th_clear(T);
    uint8_t o[28] = {1, 1, 5, 26};
    const uint32_t blk[3][2] = {{6, 10}, {4, 5}, {2, 3}};
    for (int i = 0; i < 3; i++) {
        th_put32(o + 4 + 8 * i, una + blk[i][0] * SEG);
        th_put32(o + 8 + 8 * i, una + blk[i][1] * SEG);
    }
    P.ack = una + SEG;
    peer_send_opts(&P, F_ACK, o, sizeof o, NULL, 0);
    assert_int_equal(ctr()->tcp_sack_recoveries, 1);
    int h1 = first_of(1), h3 = first_of(3), h5 = first_of(5);
    assert_int_equal(sent_of(1), 1);
    assert_int_equal(sent_of(3), 1);
    assert_int_equal(sent_of(5), 1);
    assert_true(h1 >= 0 && h1 < h3 && h3 < h5);
    for (uint32_t k = 2; k < 10; k++)
        if (k != 3 && k != 5)
            assert_int_equal(sent_of(k), 0);
    int n10 = first_of(10);
    assert_true(n10 > h5);                  /* new data after the holes */
    /* PRR: pipe is 0 (9 out, 6 SACKed, 3 lost) and 7 segments were
     * delivered, so 7 may leave: the three holes and four new */
    unsigned segs = 0;
    for (unsigned i = 0; i < tp_count(T); i++) {
        tpkt p;
        if (tp_get(T, (int)i, &p) && p.len)
            segs++;
    }
    assert_int_equal(segs, 7);
    /* the holes arrive */
    ack_everything();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(lost_retransmission, setup, teardown),
        cmocka_unit_test_setup_teardown(reordering_within_window, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(reordering_window_passes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(probes_in_recovery, setup, teardown),
        cmocka_unit_test_setup_teardown(holes_resent_in_one_pass, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
