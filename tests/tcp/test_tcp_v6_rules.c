/* Rules of TCP over IPv6 beside the data path: the flow label of a
 * connection's segments and cfg.no_flow_label; a new SYN for a tuple in
 * TIME_WAIT (RFC 6191) over IPv6; ephemeral ports that the Toeplitz hash
 * of the IPv6 tuple brings back to our RSS queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "th6.h"

/* ---- flow label ---- */
static bool g_no_label;
static void label_cfg(tern_config *c) { c->no_flow_label = g_no_label; }

/* The 20-bit flow label of a captured IPv6 frame. */
static uint32_t flow_of(const uint8_t *f)
{
    return (uint32_t)(f[15] & 0x0f) << 16 | (uint32_t)f[16] << 8 | f[17];
}

/* The flow labels of an active open's first SYN and its retransmission
 * (into l[0], l[1]), and of a second connection's SYN (l[2]). */
static void syn_labels(bool no_label, uint32_t l[3])
{
    g_no_label = no_label;
    th *t = th6_new(label_cfg);
    th6_resolved(t);
    tern_addr peer = tern_addr_v6(TH6_PEER);
    int err = -1;
    assert_non_null(tern_tcp_connect(t->st, &peer, 80, 40000, NULL, &err));
    th_poll(t);
    assert_int_equal(t->nout, 1);
    th_advance_us(t, 1500 * 1000);      /* past the initial RTO */
    assert_int_equal(t->nout, 2);
    assert_non_null(tern_tcp_connect(t->st, &peer, 80, 40001, NULL, &err));
    th_poll(t);
    assert_int_equal(t->nout, 3);
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(th_rd16(t->out[i] + 12), 0x86dd);
        assert_int_equal(t->out[i][20], 6);
        assert_int_equal(t->out[i][54 + 13], 0x02);   /* SYN */
        l[i] = flow_of(t->out[i]);
    }
    assert_int_equal(th_free(t), 0);
}

static void flow_label_per_conn(void **state)
{
    (void)state;
    uint32_t l[3];
    syn_labels(false, l);
    assert_int_not_equal(l[0], 0);
    assert_int_equal(l[0], l[1]);       /* the same for every segment */
    assert_int_not_equal(l[2], 0);
    assert_int_not_equal(l[0], l[2]);   /* another tuple, another label */
    syn_labels(true, l);
    assert_int_equal(l[0], 0);
    assert_int_equal(l[1], 0);
    assert_int_equal(l[2], 0);
}

/* ---- TIME_WAIT reuse over IPv6 ---- */
static const uint8_t A6[2][16] = {
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2},
};

static void tw6(tern_config *c, int end)
{
    c->ip = 0;
    memcpy(c->ip6[0], A6[end], 16);
    c->ip6_prefix_len[0] = 64;
    c->n_ip6 = 1;
    c->ip6_no_dad = true;
}

static struct tw_log {
    tern_conn *srv, *cli;
    int accepted, connected, closed;
} L;

static void *tw_accepted(tern_stack *st, tern_conn *c, void *u)
{
    (void)st; (void)u;
    L.accepted++;
    L.srv = c;
    return &L;
}
static void tw_connected(tern_stack *st, tern_conn *c, void *u)
{
    (void)st; (void)c; (void)u;
    L.connected++;
}
static void tw_peer_closed(tern_stack *st, tern_conn *c, void *u)
{
    (void)u;
    tern_tcp_close(st, c);
}
static void tw_closed(tern_stack *st, tern_conn *c, void *u, int reason)
{
    (void)st; (void)c; (void)u; (void)reason;
    L.closed++;
}
static bool connected_n(void *a)
{
    return L.connected >= *(int *)a && L.accepted >= *(int *)a;
}
static bool closed_2(void *a) { (void)a; return L.closed >= 2; }

/* The server closes first and keeps the IPv6 tuple in TIME_WAIT; the
 * client connects again from the same port: the newer SYN takes the
 * tuple (tcp_time_wait_reuse) and a second connection opens. */
static void time_wait_reuse_ipv6(void **state)
{
    (void)state;
    memset(&L, 0, sizeof L);
    tern_callbacks cb = {.accepted = tw_accepted, .connected = tw_connected,
                         .peer_closed = tw_peer_closed, .closed = tw_closed};
    pair *p = pair_new(NULL, 1, tw6, &cb, &L, &L);
    assert_int_equal(tern_tcp_listen(p->st[0], 80, &L), 0);
    tern_addr srv = tern_addr_v6(A6[0]);
    int err = -1, n = 1;
    assert_non_null(tern_tcp_connect(p->st[1], &srv, 80, 40000, &L, &err));
    assert_true(pair_run(p, connected_n, &n, p->now + 10 * TERN_NS_PER_SEC));
    assert_int_equal(tern_tcp_close(p->st[0], L.srv), 0);
    assert_true(pair_run(p, closed_2, NULL, p->now + 10 * TERN_NS_PER_SEC));
    assert_int_equal(tern_tcp_time_wait_count(p->st[0]), 1);
    assert_int_equal(tern_tcp_time_wait_count(p->st[1]), 0);
    assert_int_equal(tern_get_counters(p->st[0])->tcp_time_wait_reuse, 0);
    n = 2;
    assert_non_null(tern_tcp_connect(p->st[1], &srv, 80, 40000, &L, &err));
    assert_true(pair_run(p, connected_n, &n, p->now + 10 * TERN_NS_PER_SEC));
    assert_int_equal(tern_get_counters(p->st[0])->tcp_time_wait_reuse, 1);
    assert_int_equal(tern_tcp_time_wait_count(p->st[0]), 0);
    tern_tcp_info i;
    tern_tcp_get_info(p->st[0], L.srv, &i);
    assert_int_equal(i.state, TERN_TCP_ESTABLISHED);
    assert_int_equal(i.remote.family, TERN_AF_INET6);
    assert_memory_equal(i.remote.u.v6, A6[1], 16);
    assert_int_equal(i.remote_port, 40000);
    pair_free(p);
}

/* ---- RSS-aware ephemeral ports over IPv6 ---- */
static const uint8_t MS_KEY[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
    0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
    0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
    0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
#define RETA 128

static void rss_cfg(tern_config *c)
{
    c->rss_queues = 4;
    c->rss_queue = 2;
    memcpy(c->rss_key, MS_KEY, 40);
    c->rss_reta_size = RETA;
    for (unsigned i = 0; i < RETA; i++)
        c->rss_reta[i] = (uint16_t)(i % 4);
}

/* The queue a NIC puts the peer's segments to us on: Toeplitz over the
 * source address, destination address, source and destination ports
 * (36 bytes, as NICs hash TCP over IPv6), then the indirection table. */
static unsigned nic_queue(uint16_t our_port)
{
    uint8_t in[36];
    memcpy(in, TH6_PEER, 16);
    memcpy(in + 16, TH6_IP, 16);
    in[32] = 0;
    in[33] = 80;
    in[34] = (uint8_t)(our_port >> 8);
    in[35] = (uint8_t)our_port;
    return (unsigned)(tern_toeplitz(MS_KEY, in, sizeof in) % RETA) % 4;
}

static void rss_ports_ipv6(void **state)
{
    (void)state;
    th *t = th6_new(rss_cfg);
    th6_resolved(t);
    tern_addr peer = tern_addr_v6(TH6_PEER);
    uint16_t ports[32];
    unsigned elsewhere = 0;
    for (unsigned k = 0; k < 32; k++) {
        int err = -1;
        tern_conn *c = tern_tcp_connect(t->st, &peer, 80, 0, NULL, &err);
        assert_non_null(c);
        tern_tcp_info i;
        tern_tcp_get_info(t->st, c, &i);
        ports[k] = i.local_port;
        assert_true(ports[k] >= 49152);
        assert_int_equal(nic_queue(ports[k]), 2);
        for (unsigned j = 0; j < k; j++)
            assert_int_not_equal(ports[j], ports[k]);
        /* the neighbours of a chosen port mostly land elsewhere: the
         * choice is not luck */
        elsewhere += nic_queue((uint16_t)(ports[k] + 1)) != 2;
    }
    assert_true(elsewhere >= 8);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flow_label_per_conn),
        cmocka_unit_test(time_wait_reuse_ipv6),
        cmocka_unit_test(rss_ports_ipv6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
