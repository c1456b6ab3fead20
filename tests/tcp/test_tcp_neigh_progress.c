/* test_tcp_neigh_progress.c - TCP's forward progress confirms the next
 * hop's neighbor entry (RFC 4861 7.3.1: an ACK that takes snd_una on, or
 * new in-order data, says the peer is reachable). Two stacks on the mem
 * link, simulated clock, IPv4 (ARP) and IPv6 (neighbor discovery):
 *  - a connection that moves data every half second for 200 s, over three
 *    ARP reachable times (60 s) and six of IPv6's (30 s), sends no ARP
 *    request or neighbor solicitation beyond the first resolution;
 *  - a connection whose peer falls silent still has its entry go stale:
 *    a unicast probe, then the entry is forgotten, while TCP is still
 *    retrying (no progress, no confirmation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#define SEC TERN_NS_PER_SEC
#define PORT 5001
#define CHUNK 100

static const uint8_t A6[2][16] = {
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2},
};

typedef struct trickle {
    tern_conn *cli, *srv;
    uint64_t sent, rcvd;
    int cli_closed;
} trickle;

static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)lu;
    trickle *x = tern_get_user(st);
    x->srv = c;
    return x;
}
static void on_connected(tern_stack *st, tern_conn *c, void *u)
{
    (void)st;
    ((trickle *)u)->cli = c;
}
static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t len)
{
    (void)st; (void)c; (void)b; (void)d;
    ((trickle *)u)->rcvd += len;
    return len;
}
static void on_closed(tern_stack *st, tern_conn *c, void *u, int reason)
{
    (void)st; (void)reason;
    trickle *x = u;
    if (c == x->cli) {
        x->cli = NULL;
        x->cli_closed++;
    } else {
        x->srv = NULL;
    }
}
static const tern_callbacks CB = {
    .accepted = on_accepted, .connected = on_connected, .recv = on_recv,
    .closed = on_closed,
};

static void tweak6(tern_config *c, int end)
{
    memcpy(c->ip6[0], A6[end], 16);
    c->ip6_prefix_len[0] = 64;
    c->n_ip6 = 1;
    c->ip6_no_dad = true;
}

/* Resolution requests end sent: ARP requests (IPv4) or neighbor
 * solicitations (IPv6). */
static uint64_t asked(const pair *p, int end, bool v6)
{
    const tern_counters *c = tern_get_counters(p->st[end]);
    return v6 ? c->nd_ns_out : c->arp_request_out;
}
static uint64_t confirms(const pair *p, int end, bool v6)
{
    const tern_counters *c = tern_get_counters(p->st[end]);
    return v6 ? c->nd_tcp_confirms : c->arp_tcp_confirms;
}

static void run_until(pair *p, uint64_t t)
{
    while (p->now < t)
        if (!pair_step(p))
            p->now = t;
}

/* A pair with a connection from end 0 to end 1 (IPv6 with v6). */
static pair *connected(trickle *x, bool v6)
{
    memset(x, 0, sizeof *x);
    pair *p = pair_new(NULL, 7, v6 ? tweak6 : NULL, &CB, x, x);
    assert_int_equal(tern_tcp_listen(p->st[1], PORT, x), 0);
    tern_addr dst = v6 ? tern_addr_v6(A6[1]) : tern_addr_v4(PAIR_IP1);
    assert_non_null(tern_tcp_connect(p->st[0], &dst, PORT, 0, x, NULL));
    run_until(p, p->now + SEC);
    assert_non_null(x->cli);
    assert_non_null(x->srv);
    return p;
}

/* CHUNK bytes every half second for `secs` seconds. */
static void trickle_for(pair *p, trickle *x, unsigned secs)
{
    static const uint8_t data[CHUNK];
    for (unsigned i = 0; i < 2 * secs; i++) {
        tern_poll(p->st[0], p->now);    /* the send's time, as a loop has */
        if (x->cli) {
            long r = tern_tcp_send(p->st[0], x->cli, data, sizeof data);
            if (r > 0)
                x->sent += (uint64_t)r;
        }
        run_until(p, p->now + SEC / 2);
    }
}

static void progress_keeps_entry(bool v6)
{
    trickle x;
    pair *p = connected(&x, v6);
    /* settled: over IPv6 each end also probes the other's link-local
     * address once (learned from the first solicitation, answered) */
    trickle_for(p, &x, 20);
    uint64_t a0 = asked(p, 0, v6), a1 = asked(p, 1, v6);
    if (!v6) {
        assert_int_equal(a0, 1);        /* the client resolved the server */
        assert_int_equal(a1, 0);        /* which learned it from that */
    }
    uint64_t t0 = p->now;
    trickle_for(p, &x, 200);
    assert_true(p->now - t0 >= 200 * SEC);
    assert_int_equal(x.rcvd, x.sent);
    assert_int_equal(x.sent, 440 * CHUNK);
    /* no probe on either end: progress kept both entries reachable */
    assert_int_equal(asked(p, 0, v6), a0);
    assert_int_equal(asked(p, 1, v6), a1);
    assert_true(confirms(p, 0, v6) >= 3);
    assert_true(confirms(p, 1, v6) >= 3);
    for (int e = 0; e < 2; e++)
        assert_int_equal(tern_get_counters(p->st[e])->tcp_retransmits, 0);
    pair_free(p);
}

/* The peer's reachable time, and the longest TCP may wait before it sends
 * again (and so uses the entry): the defaults' RTO ceiling. */
#define REACHABLE_NS(v6) ((v6) ? 30 * SEC : 60 * SEC)
#define RTO_MAX_NS (60 * SEC)

static void silent_peer_goes_stale(bool v6)
{
    trickle x;
    pair *p = connected(&x, v6);
    trickle_for(p, &x, 20);
    assert_int_equal(x.rcvd, x.sent);
    uint64_t a0 = asked(p, 0, v6);
    /* the peer falls silent: nothing reaches it, nothing comes back */
    tern_memlink_faults all = {.loss = 1.0};
    tern_memlink_set_faults(p->link, 0, &all);
    tern_memlink_set_faults(p->link, 1, &all);
    uint64_t silent = p->now;
    trickle_for(p, &x, 10);             /* data queued, never acked */
    uint64_t limit = p->now + 600 * SEC;
    while (asked(p, 0, v6) == a0 && p->now < limit && pair_step(p))
        ;
    /* probed while TCP still retries: the last progress, before the
     * silence, kept the entry for at most a reachable time (plus the
     * hint's half and ND's delay), then the next send probed */
    assert_true(asked(p, 0, v6) > a0);
    assert_non_null(x.cli);
    assert_true(p->now - silent <=
                REACHABLE_NS(v6) * 3 / 2 + 5 * SEC + RTO_MAX_NS);
    /* unanswered: the entry is forgotten */
    run_until(p, p->now + 10 * SEC);
    const tern_counters *c = tern_get_counters(p->st[0]);
    if (v6)
        assert_int_equal(c->nd_resolve_failed, 1);
    else
        assert_int_equal(c->arp_entries_expired, 1);
    pair_free(p);
}

static void progress_keeps_arp(void **s) { (void)s; progress_keeps_entry(false); }
static void progress_keeps_nd(void **s) { (void)s; progress_keeps_entry(true); }
static void silent_arp_stale(void **s) { (void)s; silent_peer_goes_stale(false); }
static void silent_nd_stale(void **s) { (void)s; silent_peer_goes_stale(true); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(progress_keeps_arp),
        cmocka_unit_test(progress_keeps_nd),
        cmocka_unit_test(silent_arp_stale),
        cmocka_unit_test(silent_nd_stale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
