/* test_tcp_loss_counts.c - loss recovery judged by counts on the
 * simulated clock: two stacks over the mem link (seeded random loss each
 * way, 100 us one-way delay) move 4 MiB of a position-dependent pattern.
 * Each run must deliver every byte intact and close normally, with
 *  - data retransmissions at most twice the frames the link dropped
 *    (each lost data frame is resent about once; a lost ACK may cost a
 *    probe);
 *  - data the receiver already held (its duplicates) at most the frames
 *    dropped towards the sender plus the probes: the receiver's SACK
 *    blocks must not send the sender after data it has;
 *  - RTOs few: a hole is repaired by fast recovery, RACK or a probe
 *    within round trips, not by the 200 ms timer (3 per run at most,
 *    where without probes in recovery seed 3 at 5% took 7);
 *  - no stall: the receiver's in-order point never waits longer than one
 *    backed-off RTO (600 ms of simulated time) to move. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"

#define TOTAL (4u << 20)

typedef struct run {
    pair *p;
    tern_conn *cli, *srv;
    uint64_t sent, rcvd, bad;
    int closed, reasons;
} run;

static uint8_t pat(uint64_t i) { return (uint8_t)(i * 131u + (i >> 9)); }

static void pump(tern_stack *st, run *x)
{
    uint8_t chunk[16384];
    while (x->cli && x->sent < TOTAL) {
        size_t n = TOTAL - x->sent, space = tern_tcp_send_space(st, x->cli);
        if (n > sizeof chunk)
            n = sizeof chunk;
        if (n > space)
            n = space;
        if (!n)
            break;
        for (size_t i = 0; i < n; i++)
            chunk[i] = pat(x->sent + i);
        long r = tern_tcp_send(st, x->cli, chunk, n);
        if (r <= 0)
            break;
        x->sent += (uint64_t)r;
    }
    if (x->cli && x->sent == TOTAL)
        tern_tcp_shutdown(st, x->cli);
}

static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)lu;
    run *x = tern_get_user(st);
    x->srv = c;
    return x;
}
static void on_connected(tern_stack *st, tern_conn *c, void *u)
{
    ((run *)u)->cli = c;
    pump(st, u);
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
    run *x = u;
    for (size_t i = 0; i < len; i++)
        x->bad += d[i] != pat(x->rcvd + i);
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
    (void)st;
    run *x = u;
    if (c == x->cli)
        x->cli = NULL;
    else
        x->srv = NULL;
    x->closed++;
    x->reasons += reason != TERN_CLOSE_NORMAL;
}
static const tern_callbacks CB = {
    .accepted = on_accepted, .connected = on_connected, .recv = on_recv,
    .acked = on_acked, .peer_closed = on_peer_closed, .closed = on_closed,
};
static void tw(tern_config *c, int end)
{
    (void)end;
    c->time_wait_ms = 1000;     /* longer than the RTO (test_tcp_link) */
}

static void one(double loss, uint64_t seed)
{
    tern_memlink_faults f = {0};
    f.loss = loss;
    f.delay_ns = 100000;
    run x;
    memset(&x, 0, sizeof x);
    pair *p = pair_new(&f, seed, tw, &CB, &x, &x);
    x.p = p;
    assert_int_equal(tern_tcp_listen(p->st[1], 5001, &x), 0);
    assert_non_null(tern_tcp_connect(p->st[0], A4(PAIR_IP1), 5001, 0, &x, NULL));
    tern_flush(p->st[0]);
    uint64_t limit = p->now + 600 * TERN_NS_PER_SEC, moved = p->now;
    uint64_t last = 0, stall = 0;
    while (x.closed < 2 && p->now < limit) {
        if (!pair_step(p))
            break;
        if (x.rcvd != last) {
            last = x.rcvd;
            moved = p->now;
        } else if (x.cli && p->now - moved > stall) {
            stall = p->now - moved;
        }
    }
    const tern_counters *s = tern_get_counters(p->st[0]);
    const tern_counters *r = tern_get_counters(p->st[1]);
    uint64_t lost_data = tern_memlink_get_stats(p->link, 0)->lost;
    uint64_t lost_acks = tern_memlink_get_stats(p->link, 1)->lost;
    printf("  loss %.2f seed %llu: lost %llu data / %llu acks, rtx %llu, "
           "rto %llu, tlp %llu, dup at receiver %llu, longest stall %llu ms\n",
           loss, (unsigned long long)seed, (unsigned long long)lost_data,
           (unsigned long long)lost_acks,
           (unsigned long long)s->tcp_retransmits,
           (unsigned long long)s->tcp_rto_expiries,
           (unsigned long long)s->tcp_tail_loss_probes,
           (unsigned long long)r->tcp_dup_data_in,
           (unsigned long long)(stall / 1000000));
    assert_int_equal(x.closed, 2);
    assert_int_equal(x.reasons, 0);
    assert_int_equal(x.rcvd, TOTAL);
    assert_int_equal(x.bad, 0);
    assert_true(lost_data > 0);
    assert_true(s->tcp_retransmits <= 2 * (lost_data + lost_acks) + 10);
    assert_true(r->tcp_dup_data_in <=
                lost_acks + s->tcp_tail_loss_probes + 10);
    assert_true(s->tcp_rto_expiries <= 3);
    assert_true(stall <= 600 * TERN_NS_PER_MS);
    pair_free(p);
}

static void loss_1(void **s)
{
    (void)s;
    one(0.01, 1);
    one(0.01, 2);
}
static void loss_2(void **s)
{
    (void)s;
    one(0.02, 1);
    one(0.02, 2);
}
static void loss_5(void **s)
{
    (void)s;
    one(0.05, 1);
    one(0.05, 2);
    one(0.05, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loss_1),
        cmocka_unit_test(loss_2),
        cmocka_unit_test(loss_5),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
