/* The retransmission timer across request/response flights: an ACK of the
 * whole flight stops it, the next send starts it afresh (RFC 6298 5.1,
 * 5.2), whatever deadline an earlier flight left filed in the wheel.
 * One stack, a scripted peer, simulated time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"

static tern_conn *conn;
static int cfg_keepalive;

static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)lu;
    conn = c;
    return NULL;
}
static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t n)
{
    (void)st; (void)c; (void)u; (void)b; (void)d;
    return n;
}
static void tweak(tern_config *c)
{
    c->cb.accepted = on_accepted;
    c->cb.recv = on_recv;
    if (cfg_keepalive)
        c->keepalive_ms = 5000;
}

static th *T;
static peer P;

static int setup(void **s)
{
    (void)s;
    conn = NULL;
    T = th_new(tweak);
    memset(&P, 0, sizeof P);
    P.t = T;
    P.seq = 1000;
    P.ts = true;
    P.tsval = 500;
    peer_connect(&P, 80, 40100);
    assert_non_null(conn);
    return 0;
}
static int teardown(void **s)
{
    (void)s;
    assert_int_equal(th_free(T), 0);
    cfg_keepalive = 0;
    return 0;
}
static const tern_counters *ctr(void) { return tern_get_counters(T->st); }
static uint64_t ms(uint64_t n) { return n * TERN_NS_PER_MS; }
/* Run every deadline up to `end` (simulated ns). */
static void run_until(uint64_t end)
{
    while (T->now < end) {
        uint64_t d = th_poll(T);
        T->now = d < end && d > T->now ? d : end;
    }
    th_poll(T);
}
static uint32_t rto_ms(void)
{
    tern_tcp_info i;
    tern_tcp_get_info(T->st, conn, &i);
    return i.rto_ms;
}
/* The stack sends `data`; returns the segment it put on the wire. */
static tpkt send_one(const char *data)
{
    th_clear(T);
    size_t n = strlen(data);
    assert_int_equal(tern_tcp_send(T->st, conn, data, n), (int)n);
    tern_flush(T->st);
    assert_int_equal(tp_count(T), 1);
    tpkt p;
    assert_true(tp_get(T, 0, &p));
    assert_int_equal(p.len, n);
    return p;
}
/* The peer acknowledges everything up to and including p. */
static void ack_it(const tpkt *p)
{
    P.ack = p->seq + p->len;
    P.tsecr = p->tsval;
    peer_send(&P, F_ACK, NULL, 0);
}
static uint64_t timer_events(void)
{
    return ctr()->tcp_rto_expiries + ctr()->tcp_retransmits +
           ctr()->tcp_tail_loss_probes + ctr()->tcp_keepalive_probes;
}

/* (a) and (b): the first flight is acked early, the second leaves half an
 * RTO later and is lost. Nothing may happen at the first flight's
 * deadline; the second is resent one RTO after it left, not earlier. */
static void new_flight_restarts_timer(void **s)
{
    (void)s;
    T->now += ms(10);
    th_poll(T);
    uint64_t t0 = T->now;
    uint32_t rto0 = rto_ms();
    tpkt a = send_one("first");
    T->now += ms(5);
    ack_it(&a);
    assert_int_equal(ctr()->tcp_rto_expiries, 0);

    run_until(t0 + ms(rto0) / 2);
    uint64_t t1 = T->now;
    uint32_t rto1 = rto_ms();
    tpkt b = send_one("second");
    th_clear(T);
    uint64_t before = timer_events();

    /* the first flight's deadline passes: nothing fires */
    run_until(t0 + ms(rto0) + ms(3));
    assert_int_equal(tp_count(T), 0);
    assert_int_equal(timer_events(), before);

    /* just before the second flight's own RTO: still nothing */
    run_until(t1 + ms(rto1) - ms(2));
    assert_int_equal(tp_count(T), 0);
    assert_int_equal(timer_events(), before);

    /* at it (a tick late at most): the lost segment is resent once */
    run_until(t1 + ms(rto1) + ms(2));
    assert_int_equal(tp_count(T), 1);
    tpkt r;
    assert_true(tp_get(T, 0, &r));
    assert_int_equal(r.seq, b.seq);
    assert_int_equal(r.len, b.len);
    assert_int_equal(ctr()->tcp_rto_expiries, 1);
    assert_int_equal(ctr()->tcp_retransmits, 1);
    assert_int_equal(ctr()->tcp_tail_loss_probes, 0);

    /* and backs off: the next one comes two RTOs later */
    th_clear(T);
    uint64_t t2 = T->now;
    run_until(t2 + 2 * ms(rto1) - ms(3));
    assert_int_equal(tp_count(T), 0);
    run_until(t2 + 2 * ms(rto1) + ms(2));
    assert_int_equal(tp_count(T), 1);
    assert_int_equal(ctr()->tcp_rto_expiries, 2);
}

/* (c) request/response flights, then silence: the deadlines the flights
 * left behind pass without an expiry, a probe or a segment. */
static void idle_after_flights_is_quiet(void **s)
{
    (void)s;
    for (int i = 0; i < 4; i++) {
        T->now += ms(30);
        tpkt p = send_one("req");
        T->now += ms(1);
        ack_it(&p);
    }
    th_clear(T);
    run_until(T->now + ms(60000));
    assert_int_equal(tp_count(T), 0);
    assert_int_equal(ctr()->tcp_rto_expiries, 0);
    assert_int_equal(ctr()->tcp_retransmits, 0);
    assert_int_equal(ctr()->tcp_tail_loss_probes, 0);
    assert_int_equal(ctr()->tcp_timeouts, 0);
}

/* With keep-alive on, the idle timer runs between flights; a flight that
 * starts then must still be retransmitted one RTO after it left, not at
 * the keep-alive deadline. */
static void send_after_keepalive_armed(void **s)
{
    (void)s;
    T->now += ms(10);
    tpkt a = send_one("ping");
    T->now += ms(1);
    ack_it(&a);
    run_until(T->now + ms(100));
    uint64_t t1 = T->now;
    uint32_t rto1 = rto_ms();
    tpkt b = send_one("lost");
    th_clear(T);
    run_until(t1 + ms(rto1) + ms(2));
    assert_int_equal(tp_count(T), 1);
    tpkt r;
    assert_true(tp_get(T, 0, &r));
    assert_int_equal(r.seq, b.seq);
    assert_int_equal(ctr()->tcp_rto_expiries, 1);
    assert_int_equal(ctr()->tcp_keepalive_probes, 0);
}
static int setup_keepalive(void **s)
{
    cfg_keepalive = 1;
    return setup(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(new_flight_restarts_timer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(idle_after_flights_is_quiet, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(send_after_keepalive_armed,
                                        setup_keepalive, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
