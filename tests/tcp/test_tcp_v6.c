/* TCP and UDP over IPv6 between two stacks on the mem link: handshake,
 * data both ways and close; an IPv4 and an IPv6 connection on one
 * listener at once; TIME_WAIT of an IPv6 tuple; UDP datagrams and their
 * mandatory checksum; and the pieces: ISNs and flow labels per tuple, a
 * SYN cookie over the IPv6 tuple, folds of two peers that collide. */
#define TERN_USE_BUILTIN_MEM 1 /* the core's inline helpers, as it is built */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"

static const uint8_t A6[2][16] = {
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2},
};

static void tw6(tern_config *c, int end)
{
    memcpy(c->ip6[0], A6[end], 16);
    c->ip6_prefix_len[0] = 64;
    c->n_ip6 = 1;
    c->ip6_no_dad = true;
    c->time_wait_ms = 1000;
}

typedef struct echo {
    tern_conn *cli, *srv[4];
    unsigned nsrv;
    uint64_t cli_rcvd, srv_rcvd;
    int cli_closed, srv_closed;
    int cli_reason;
    bool connected;
    tern_udp_meta meta;
    unsigned udp_got;
    uint8_t last[64];
} echo;

static void *on_accepted(tern_stack *st, tern_conn *c, void *u)
{
    (void)st;
    echo *e = u;
    if (e->nsrv < 4)
        e->srv[e->nsrv++] = c;
    return e;
}

static void on_connected(tern_stack *st, tern_conn *c, void *u)
{
    (void)st; (void)c;
    ((echo *)u)->connected = true;
}

/* the server echoes; the client counts */
static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t len)
{
    (void)b;
    echo *e = u;
    if (c == e->cli) {
        e->cli_rcvd += len;
        memcpy(e->last, d, len < 64 ? len : 64);
        return len;
    }
    e->srv_rcvd += len;
    long n = tern_tcp_send(st, c, d, len);
    return n < 0 ? 0 : (size_t)n;
}

static void on_peer_closed(tern_stack *st, tern_conn *c, void *u)
{
    (void)u;
    tern_tcp_close(st, c);
}

static void on_closed(tern_stack *st, tern_conn *c, void *u, int reason)
{
    (void)st;
    echo *e = u;
    if (c == e->cli) {
        e->cli_closed++;
        e->cli_reason = reason;
        e->cli = NULL;
    } else {
        e->srv_closed++;
    }
}

static void on_udp(tern_stack *st, tern_udp *s, void *u,
                   const tern_udp_meta *m, tern_buf *b, const uint8_t *d,
                   size_t len)
{
    (void)st; (void)s; (void)b;
    echo *e = u;
    e->meta = *m;
    e->udp_got++;
    memcpy(e->last, d, len < 64 ? len : 64);
}

static const tern_callbacks CB = {
    .accepted = on_accepted, .connected = on_connected, .recv = on_recv,
    .peer_closed = on_peer_closed, .closed = on_closed, .udp_recv = on_udp,
};

static bool is_connected(void *a) { return ((echo *)a)->connected; }
static bool got_bytes(void *a) { return ((echo *)a)->cli_rcvd >= 3000; }
static bool all_closed(void *a)
{
    echo *e = a;
    return e->cli_closed && e->srv_closed == (int)e->nsrv;
}
static bool got_udp(void *a) { return ((echo *)a)->udp_got > 0; }

static pair *pair6(echo *e)
{
    memset(e, 0, sizeof *e);
    pair *p = pair_new(NULL, 1, tw6, &CB, e, e);
    assert_non_null(p);
    return p;
}

/* Connect over IPv6, 3000 bytes echoed, both sides close; the conns carry
 * the IPv6 addresses and the MSS an IPv6 header leaves. */
static void handshake_data_close(void **state)
{
    (void)state;
    echo e;
    pair *p = pair6(&e);
    assert_int_equal(tern_tcp_listen(p->st[1], 7, &e), 0);
    tern_addr dst = tern_addr_v6(A6[1]);
    int err = 0;
    e.cli = tern_tcp_connect(p->st[0], &dst, 7, 0, &e, &err);
    assert_non_null(e.cli);
    tern_flush(p->st[0]);
    assert_true(pair_run(p, is_connected, &e, p->now + 30 * TERN_NS_PER_SEC));
    tern_tcp_info i;
    tern_tcp_get_info(p->st[0], e.cli, &i);
    assert_true(tern_addr_eq(&i.remote, &dst));
    tern_addr me = tern_addr_v6(A6[0]);
    assert_true(tern_addr_eq(&i.local, &me));
    /* 1500 - 40 - 20 - 12 (timestamps) */
    assert_int_equal(i.mss, 1428);
    uint8_t msg[1000];
    for (unsigned k = 0; k < sizeof msg; k++)
        msg[k] = (uint8_t)k;
    for (int r = 0; r < 3; r++)
        assert_int_equal(tern_tcp_send(p->st[0], e.cli, msg, sizeof msg),
                         sizeof msg);
    tern_flush(p->st[0]);
    assert_true(pair_run(p, got_bytes, &e, p->now + 30 * TERN_NS_PER_SEC));
    assert_int_equal(e.srv_rcvd, 3000);
    assert_int_equal(e.nsrv, 1);
    tern_tcp_get_info(p->st[1], e.srv[0], &i);
    assert_true(tern_addr_eq(&i.remote, &me));
    tern_tcp_close(p->st[0], e.cli);
    tern_flush(p->st[0]);
    assert_true(pair_run(p, all_closed, &e, p->now + 30 * TERN_NS_PER_SEC));
    assert_int_equal(e.cli_reason, TERN_CLOSE_NORMAL);
    /* the side that closed first keeps the IPv6 tuple in TIME_WAIT */
    assert_int_equal(tern_tcp_time_wait_count(p->st[0]), 1);
    assert_int_equal(tern_get_counters(p->st[0])->tcp_drop_csum, 0);
    assert_int_equal(tern_get_counters(p->st[1])->tcp_drop_csum, 0);
    pair_free(p);
}

/* One listen call serves both families: an IPv4 and an IPv6 client on
 * the same port at once. */
static void one_listener_both_families(void **state)
{
    (void)state;
    echo e;
    pair *p = pair6(&e);
    assert_int_equal(tern_tcp_listen(p->st[1], 80, &e), 0);
    tern_addr d6 = tern_addr_v6(A6[1]), d4 = tern_addr_v4(PAIR_IP1);
    tern_conn *c6 = tern_tcp_connect(p->st[0], &d6, 80, 40000, &e, NULL);
    tern_conn *c4 = tern_tcp_connect(p->st[0], &d4, 80, 40000, &e, NULL);
    assert_non_null(c6);
    assert_non_null(c4);
    assert_ptr_not_equal(c6, c4);
    tern_flush(p->st[0]);
    for (int k = 0; k < 2000 && e.nsrv < 2; k++)
        pair_step(p);
    assert_int_equal(e.nsrv, 2);
    tern_tcp_info a, b;
    tern_tcp_get_info(p->st[1], e.srv[0], &a);
    tern_tcp_get_info(p->st[1], e.srv[1], &b);
    assert_int_not_equal(a.remote.family, b.remote.family);
    assert_int_equal(a.state, TERN_TCP_ESTABLISHED);
    assert_int_equal(b.state, TERN_TCP_ESTABLISHED);
    assert_int_equal(a.remote_port, 40000);
    assert_int_equal(b.remote_port, 40000);
    pair_free(p);
}

/* UDP both ways over IPv6: the receiver sees the IPv6 source; a datagram
 * whose checksum is zero is dropped and counted (RFC 8200 8.1). */
static void udp_over_ipv6(void **state)
{
    (void)state;
    echo e;
    pair *p = pair6(&e);
    assert_non_null(tern_udp_bind(p->st[1], 5353, &e, NULL));
    tern_addr dst = tern_addr_v6(A6[1]);
    assert_int_equal(tern_udp_send(p->st[0], 999, &dst, 5353, "hello6", 6), 0);
    tern_flush(p->st[0]);
    assert_true(pair_run(p, got_udp, &e, p->now + 30 * TERN_NS_PER_SEC));
    tern_addr src = tern_addr_v6(A6[0]);
    assert_true(tern_addr_eq(&e.meta.src, &src));
    assert_true(tern_addr_eq(&e.meta.dst, &dst));
    assert_int_equal(e.meta.src_port, 999);
    assert_memory_equal(e.last, "hello6", 6);
    pair_free(p);
}

/* A hand-made IPv6 UDP datagram into a th: a good checksum passes, zero
 * and a wrong one are dropped under udp_drop_csum. */
static void tw6_th(tern_config *c)
{
    tw6(c, 1);
}

static size_t udp6_frame(uint8_t *f, uint16_t csum_or_0, bool good)
{
    static const uint8_t peer_mac[6] = {2, 0, 0, 0, 0, 1};
    memcpy(f, TH_MAC, 6);
    memcpy(f + 6, peer_mac, 6);
    f[12] = 0x86;
    f[13] = 0xdd;
    uint8_t *ip = f + 14, *u = ip + 40;
    memset(ip, 0, 40);
    ip[0] = 0x60;
    ip[5] = 12;                  /* payload length */
    ip[6] = 17;
    ip[7] = 64;
    memcpy(ip + 8, A6[0], 16);
    memcpy(ip + 24, A6[1], 16);
    u[0] = 0x12; u[1] = 0x34; u[2] = 0x02; u[3] = 0x00;   /* 4660 -> 512 */
    u[4] = 0; u[5] = 12; u[6] = 0; u[7] = 0;
    memcpy(u + 8, "ping", 4);
    uint32_t s = tern_csum_partial(ip + 8, 32, 0);
    s = tern_csum_partial(u, 12, s + 17 + 12);
    uint16_t c = (uint16_t)~tern_csum_fold(s);
    if (!good)
        c = csum_or_0;
    u[6] = (uint8_t)(c >> 8);
    u[7] = (uint8_t)c;
    return 14 + 40 + 12;
}

static void udp6_checksum_rules(void **state)
{
    (void)state;
    th *t = th_new(tw6_th);
    echo e;
    memset(&e, 0, sizeof e);
    assert_non_null(tern_udp_bind(t->st, 512, &e, NULL));
    uint8_t f[128];
    size_t n = udp6_frame(f, 0, true);
    th_input(t, f, n);
    uint64_t in = tern_get_counters(t->st)->udp_in;
    assert_true(in >= 1);
    uint64_t bad0 = tern_get_counters(t->st)->udp_drop_csum;
    n = udp6_frame(f, 0, false);              /* "no checksum": not in IPv6 */
    th_input(t, f, n);
    n = udp6_frame(f, 0x1234, false);         /* wrong */
    th_input(t, f, n);
    assert_int_equal(tern_get_counters(t->st)->udp_drop_csum, bad0 + 2);
    assert_int_equal(th_free(t), 0);
}

/* ISNs and flow labels differ per tuple; folds of addresses are in 0/8. */
static void isn_flow_fold(void **state)
{
    (void)state;
    th *t = th_new(tw6_th);
    uint8_t b[16];
    memcpy(b, A6[0], 16);
    uint32_t i0 = tcp_isn6(t->st, A6[1], 80, A6[0], 40000, 0);
    uint32_t i1 = tcp_isn6(t->st, A6[1], 80, A6[0], 40001, 0);
    b[15] = 9;
    uint32_t i2 = tcp_isn6(t->st, A6[1], 80, b, 40000, 0);
    assert_int_not_equal(i0, i1);
    assert_int_not_equal(i0, i2);
    assert_int_equal(i0, tcp_isn6(t->st, A6[1], 80, A6[0], 40000, 0));
    uint32_t f0 = tcp_flow_label(t->st, A6[1], 80, A6[0], 40000);
    uint32_t f1 = tcp_flow_label(t->st, A6[1], 80, A6[0], 40001);
    assert_int_not_equal(f0, f1);
    assert_true(f0 && f0 < (1u << 20));
    for (int k = 0; k < 256; k++) {
        b[15] = (uint8_t)k;
        uint32_t f = conn_fold6(t->st->tcp, b);
        assert_true(f != 0 && f < (1u << 24));
    }
    assert_int_equal(th_free(t), 0);
}

/* Two peers whose folds collide (found among scattered 2001:db8::/64
 * hosts: 24 bits, so some of a few thousand share one) share the key and
 * the chain; the
 * lookup tells them apart by the full address. */
static void host_of(uint32_t n, uint8_t a[16])
{
    uint64_t x = (uint64_t)n * 0x9e3779b97f4a7c15ull;
    memcpy(a, A6[0], 8);
    for (int i = 0; i < 8; i++)
        a[8 + i] = (uint8_t)(x >> (8 * i));
}

static void colliding_folds(void **state)
{
    (void)state;
    th *t = th_new(tw6_th);
    uint8_t *seen = calloc(1u << 21, 1);         /* a bit per fold */
    uint32_t *who = calloc(1u << 24, sizeof *who);
    assert_non_null(seen);
    assert_non_null(who);
    uint8_t a[16], b[16];
    memcpy(a, A6[0], 16);
    memcpy(b, A6[0], 16);
    bool found = false;
    for (uint32_t n = 1; n < 60000 && !found; n++) {
        host_of(n, a);
        uint32_t f = conn_fold6(t->st->tcp, a);
        if (seen[f >> 3] & (1u << (f & 7))) {
            host_of(who[f], b);
            found = true;
        }
        seen[f >> 3] |= (uint8_t)(1u << (f & 7));
        who[f] = n;
    }
    free(seen);
    free(who);
    assert_true(found);
    assert_int_equal(conn_fold6(t->st->tcp, a), conn_fold6(t->st->tcp, b));
    assert_memory_not_equal(a, b, 16);
    struct tern_conn *x = conn_alloc6(t->st, a, A6[1], 1000, 80);
    struct tern_conn *y = conn_alloc6(t->st, b, A6[1], 1000, 80);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(x->raddr, y->raddr);
    uint32_t ports = 1000u << 16 | 80;
    assert_ptr_equal(conn_lookup6(t->st, a, A6[1], ports), x);
    assert_ptr_equal(conn_lookup6(t->st, b, A6[1], ports), y);
    assert_null(conn_lookup6(t->st, a, A6[0], ports));   /* other local */
    /* an IPv4 lookup of the fold as an address finds neither: the raw
     * path's prediction refuses TF_V6, ip4_src_ok the 0/8 source */
    assert_true(x->raddr < (1u << 24));
    conn_free(t->st, x);
    conn_free(t->st, y);
    assert_int_equal(th_free(t), 0);
}

/* A SYN cookie made for an IPv6 tuple checks out for it and not for the
 * same ports from another address. */
static void cookie_over_ipv6(void **state)
{
    (void)state;
    th *t = th_new(tw6_th);
    ip6_rx ip;
    memset(&ip, 0, sizeof ip);
    ip.src = A6[0];
    ip.dst = A6[1];
    tcp_seg s;
    memset(&s, 0, sizeof s);
    s.ip6 = &ip;
    s.sport = 40000;
    s.dport = 80;
    s.seq = 12345;
    uint32_t ck = tcp_cookie_make(t->st, &s, 5, t->now);
    s.seq += 1;                       /* the ACK's seq: ISN + 1 */
    assert_int_equal(tcp_cookie_check(t->st, &s, ck, t->now), 1460);
    uint8_t other[16];
    memcpy(other, A6[0], 16);
    other[15] = 3;
    ip.src = other;
    assert_int_equal(tcp_cookie_check(t->st, &s, ck, t->now), 0);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handshake_data_close),
        cmocka_unit_test(one_listener_both_families),
        cmocka_unit_test(udp_over_ipv6),
        cmocka_unit_test(udp6_checksum_rules),
        cmocka_unit_test(isn_flow_fold),
        cmocka_unit_test(colliding_folds),
        cmocka_unit_test(cookie_over_ipv6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
