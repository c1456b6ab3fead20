/* test_tcp_flows.c - several bulk flows in one thread over a lossless
 * mem link (two stacks, simulated clock): every flow completes and no
 * segment is sent twice (no tail loss probe, RACK or RTO fires on a
 * path that loses nothing), with each congestion control. Bounded by
 * progress (bytes delivered), not by time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#define FLOWS 8
#define PER_FLOW (4u << 20)

typedef struct flows {
    tern_conn *cli[FLOWS];
    uint64_t sent[FLOWS];
    uint64_t rcvd;
    unsigned up;
} flows;

static void pump(tern_stack *st, flows *x, unsigned i)
{
    static uint8_t buf[65536];
    while (x->cli[i] && x->sent[i] < PER_FLOW) {
        size_t n = PER_FLOW - x->sent[i];
        size_t space = tern_tcp_send_space(st, x->cli[i]);
        if (n > sizeof buf)
            n = sizeof buf;
        if (n > space)
            n = space;
        if (!n)
            break;
        long r = tern_tcp_send(st, x->cli[i], buf, n);
        if (r <= 0)
            break;
        x->sent[i] += (uint64_t)r;
    }
}

static unsigned flow_of(void *u) { return (unsigned)(uintptr_t)u - 1; }

static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)c; (void)lu;
    return tern_get_user(st);
}
static void on_connected(tern_stack *st, tern_conn *c, void *u)
{
    flows *x = tern_get_user(st);
    x->cli[flow_of(u)] = c;
    x->up++;
    pump(st, x, flow_of(u));
}
static void on_acked(tern_stack *st, tern_conn *c, void *u, size_t n)
{
    (void)c; (void)n;
    pump(st, tern_get_user(st), flow_of(u));
}
static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t len)
{
    (void)st; (void)c; (void)b; (void)d;
    ((flows *)u)->rcvd += len;
    return len;
}

static const tern_callbacks CB = {
    .accepted = on_accepted, .connected = on_connected, .recv = on_recv,
    .acked = on_acked,
};

static uint8_t cc_choice;
/* 8 flows of 96 KiB windows: ~550 frames in flight, inside the link's
 * queue of 1024, so the link itself never drops */
static void tw(tern_config *c, int end)
{
    (void)end;
    c->cc = cc_choice;
    c->snd_buf = 96u << 10;
    c->rcv_buf = 96u << 10;
}

static bool all_in(void *arg)
{
    return ((flows *)arg)->rcvd >= (uint64_t)FLOWS * PER_FLOW;
}

static void run(uint8_t cc, uint64_t mbps)
{
    tern_memlink_faults f = {0};
    f.delay_ns = 50000;
    f.rate_bps = mbps * 1000000;
    cc_choice = cc;
    flows x;
    memset(&x, 0, sizeof x);
    pair *p = pair_new(&f, 11, tw, &CB, &x, &x);
    tern_tcp_listen(p->st[1], 5001, &x);
    for (uintptr_t i = 0; i < FLOWS; i++)
        assert_non_null(tern_tcp_connect(p->st[0], A4(PAIR_IP1), 5001, 0,
                                         (void *)(i + 1), NULL));
    tern_flush(p->st[0]);
    assert_true(pair_run(p, all_in, &x, p->now + 1000 * TERN_NS_PER_SEC));
    assert_int_equal(x.up, FLOWS);
    const tern_memlink_stats *ls = tern_memlink_get_stats(p->link, 0);
    /* the link dropped nothing, so nothing may be sent twice */
    assert_int_equal(ls->queue_drops + ls->pool_drops + ls->lost, 0);
    const tern_counters *c0 = tern_get_counters(p->st[0]);
    assert_int_equal(c0->tcp_retransmits, 0);
    assert_int_equal(c0->tcp_tail_loss_probes, 0);
    assert_int_equal(c0->tcp_rto_expiries, 0);
    assert_int_equal(tern_get_counters(p->st[1])->tcp_dup_data_in, 0);
    pair_free(p);
}

static void cubic_no_link(void **s) { (void)s; run(TERN_CC_CUBIC, 0); }
static void cubic_1g(void **s) { (void)s; run(TERN_CC_CUBIC, 1000); }
static void bbr_no_link(void **s) { (void)s; run(TERN_CC_BBR, 0); }
static void bbr_1g(void **s) { (void)s; run(TERN_CC_BBR, 1000); }
static void cubic_5g(void **s) { (void)s; run(TERN_CC_CUBIC, 5000); }
static void newreno_1g(void **s) { (void)s; run(TERN_CC_NEWRENO, 1000); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cubic_no_link),
        cmocka_unit_test(cubic_1g),
        cmocka_unit_test(bbr_no_link),
        cmocka_unit_test(bbr_1g),
        cmocka_unit_test(cubic_5g),
        cmocka_unit_test(newreno_1g),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
