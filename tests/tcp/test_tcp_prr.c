/* PRR (RFC 6937, PRR-SSRB) against a scripted peer, simulated time. The
 * stack has 20 segments out when a loss starts a SACK recovery; ACKs then
 * SACK the rest of the flight one segment at a time:
 *  - one segment lost: the flight shrinks to ssthresh with about one
 *    segment sent per segment delivered (ssthresh/RecoverFS of them):
 *    sending starts with the first ACKs (no RFC 6675 silence while pipe
 *    is above ssthresh), never two segments for one, and the recovery
 *    sends about ssthresh segments for the 19 delivered;
 *  - half the flight lost (pipe far below ssthresh): no burst up to
 *    ssthresh, at most the delivered segment plus one per ACK, until the
 *    flight is back at ssthresh;
 *  - in both, cwnd is ssthresh once the recovery ends, and no RTO. */
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
static uint8_t data[80 * SEG];
static uint32_t una;           /* the stack's first data byte */

static struct tern_conn *C(void) { return (struct tern_conn *)conn; }
static const tern_counters *ctr(void) { return tern_get_counters(T->st); }

static int setup(void **s)
{
    (void)s;
    conn = NULL;
    T = th_new(tweak);
    peer_init(&P, T);
    peer_connect(&P, 80, 40200);
    assert_non_null(conn);
    memset(data, 0x5a, sizeof data);
    return 0;
}
static int teardown(void **s)
{
    (void)s;
    assert_int_equal(th_free(T), 0);
    return 0;
}


/* ACK `ack` (segments, relative to una) SACKing [a, b); returns the data
 * segments the stack sent in answer. */
static unsigned ack_sack(uint32_t ack, uint32_t a, uint32_t b)
{
    uint8_t o[12] = {1, 1, 5, 10};
    th_put32(o + 4, una + a * SEG);
    th_put32(o + 8, una + b * SEG);
    P.ack = una + ack * SEG;
    th_clear(T);
    peer_send_opts(&P, F_ACK, o, b > a ? 12 : 0, NULL, 0);
    unsigned n = 0;
    for (unsigned i = 0; i < tp_count(T); i++) {
        tpkt p;
        if (tp_get(T, (int)i, &p) && p.len)
            n++;
    }
    return n;
}

/* FLIGHT segments out (cwnd opened by hand), more queued behind them. */
static void start(void)
{
    C()->cwnd = FLIGHT * SEG;
    assert_int_equal(tern_tcp_send(T->st, conn, data, sizeof data),
                     (long)sizeof data);
    tern_flush(T->st);
    assert_int_equal(tp_count(T), FLIGHT);
    tpkt p;
    tp_get(T, 0, &p);
    una = p.seq;
    th_advance_us(T, 1000);                        /* RTT ~1 ms */
}

/* The loss repaired: everything sent is acknowledged. */
static void finish(void)
{
    assert_true(C()->flags & TF_RECOVERY);
    uint32_t ss = C()->ssthresh;
    P.ack = C()->snd_max;
    th_clear(T);
    peer_send(&P, F_ACK, NULL, 0);
    assert_false(C()->flags & TF_RECOVERY);
    assert_int_equal(C()->cwnd, ss);
    assert_int_equal(C()->ssthresh, ss);
    assert_int_equal(ctr()->tcp_rto_expiries, 0);
    assert_int_equal(ctr()->tcp_sack_recoveries, 1);
}

static void one_loss_proportional(void **s)
{
    (void)s;
    start();
    /* segment 0 lost: SACKs of 1, 1-2, 1-3 start the recovery */
    unsigned total = 0, early = 0, zeros = 0, max_zeros = 0;
    for (uint32_t k = 2; k <= FLIGHT; k++) {
        unsigned n = ack_sack(0, 1, k);
        assert_true(n <= 1);                 /* one delivered, at most one */
        total += n;
        if (k <= 4) {                        /* third duplicate ACK */
            assert_int_equal(n, k == 4);     /* the fast retransmission */
            continue;
        }
        if (k <= 9)
            early += n;
        zeros = n ? 0 : zeros + 1;
        if (zeros > max_zeros)
            max_zeros = zeros;
    }
    uint32_t ss = C()->ssthresh / SEG;       /* CUBIC: 0.7 of 20 = 14 */
    assert_true(ss >= 10 && ss < FLIGHT);
    /* RFC 6675 would stay silent until pipe fell below ssthresh (three
     * ACKs after the entry, then one segment per ACK: 2 in the first 5);
     * PRR sends ss of every FLIGHT delivered from the start (whole
     * segments: 1, 1, 0, ...), and at most one ACK in a row sends nothing
     * but where the proportional share hands over to ssthresh - pipe */
    assert_true(early >= 3);
    assert_true(max_zeros <= 2);
    assert_true(total + 1 >= ss && total <= ss + 1);
    /* what is out now is about ssthresh: the retransmission and new data */
    uint32_t pipe = sb_pipe(C(), C()->mss);
    assert_true(pipe + SEG >= ss * SEG && pipe <= ss * SEG + SEG);
    finish();
}

static void heavy_loss_no_burst(void **s)
{
    (void)s;
    start();
    /* segments 0-9 lost: SACKs of 10, 10-11, 10-12 start the recovery
     * with pipe far below ssthresh */
    assert_int_equal(ack_sack(0, 10, 11), 0);
    assert_int_equal(ack_sack(0, 10, 12), 0);
    unsigned n = ack_sack(0, 10, 13);
    assert_true(C()->flags & TF_RECOVERY);
    uint32_t ss = C()->ssthresh;
    /* RFC 6675 would send ssthresh - pipe (~7 segments) at once; PRR-SSRB
     * the fast retransmission and at most the delivered one plus one */
    assert_true(n >= 2 && n <= 3);
    for (uint32_t k = 14; k <= FLIGHT; k++) {
        uint32_t pipe = sb_pipe(C(), C()->mss);
        n = ack_sack(0, 10, k);
        assert_true(n <= 2);
        /* below ssthresh, and sending while there: no stall */
        if (pipe + 2 * SEG <= ss)
            assert_true(n >= 1);
        assert_true(sb_pipe(C(), C()->mss) <= ss);
    }
    /* the flight is back at ssthresh (within a segment) */
    assert_true(sb_pipe(C(), C()->mss) + SEG >= ss);
    /* holes 0-9 were all resent, none twice */
    assert_true(ctr()->tcp_retransmits >= 10);
    finish();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(one_loss_proportional, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(heavy_loss_no_burst, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
