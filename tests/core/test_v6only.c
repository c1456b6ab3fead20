/* An IPv6-only stack (cfg.ip 0): the config checks, IPv4 and ARP dropped
 * as an unknown EtherType, IPv4 destinations refused with
 * TERN_EAFNOSUPPORT, IPv6 working; the state of our addresses through
 * Duplicate Address Detection (tern_addr_state, tern_addr_list). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "th6.h"

#define C(t) tern_get_counters((t)->st)

static void no_ip4(tern_config *c) { c->ip = 0; }

static tern_config base_config(void)
{
    th *t = th_new(NULL);        /* a valid config with every hook set */
    tern_config c = t->cfg;
    assert_int_equal(th_free(t), 0);
    return c;
}

static void test_config_check(void **state)
{
    (void)state;
    tern_config c = base_config();
    assert_null(tern_config_check(&c));
    /* neither family: refused, and the reason names both fields */
    c.ip = 0;
    const char *why = tern_config_check(&c);
    assert_non_null(why);
    assert_non_null(strstr(why, "no address"));
    assert_non_null(strstr(why, "ip6"));
    size_t size = tern_stack_size(&c);
    void *mem = aligned_alloc(TERN_STACK_ALIGN, size);
    int err = 0;
    assert_null(tern_stack_init(mem, size, &c, &err));
    assert_int_equal(err, TERN_EINVAL);
    /* an IPv6 global address alone is enough */
    memcpy(c.ip6[0], TH6_IP, 16);
    c.n_ip6 = 1;
    assert_null(tern_config_check(&c));
    /* so is ip6_enable with the link-local address, not without it */
    c.n_ip6 = 0;
    c.ip6_enable = true;
    assert_null(tern_config_check(&c));
    c.ip6_no_link_local = true;
    assert_non_null(tern_config_check(&c));
    c.ip6_accept_ra = true;       /* a prefix may come from the router */
    assert_null(tern_config_check(&c));
    /* the other checks still speak */
    c = base_config();
    c.mtu = 100;
    assert_non_null(strstr(tern_config_check(&c), "mtu"));
    c = base_config();
    c.tx = NULL;
    assert_non_null(strstr(tern_config_check(&c), "tx"));
    assert_non_null(tern_config_check(NULL));
    free(mem);
}

static void test_ip4_dropped(void **state)
{
    (void)state;
    th *t = th6_new(no_ip4);
    uint8_t f[256];
    /* an ARP request for 0.0.0.0 and one for the old address, a ping to
     * 0.0.0.0 and a TCP-shaped one: none answered, all counted */
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, TH_MAC, 0));
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, TH_MAC, TH_IP));
    th_input(t, f, th_ping_frame(f, TH_PEER_IP, 0, 1, 1, "abc", 3));
    th_input(t, f, th_udp_frame(f, TH_PEER_IP, 0, 9, 7, "abc", 3));
    assert_int_equal(C(t)->eth_drop_ethertype, 4);
    assert_int_equal(C(t)->arp_in, 0);
    assert_int_equal(C(t)->ip_in, 0);
    assert_int_equal(t->nout, 0);
    assert_int_equal(th_free(t), 0);
}

/* A TCP segment to 0.0.0.0 of the shape the receive fast path takes. */
static void test_ip4_tcp_dropped(void **state)
{
    (void)state;
    th *t = th6_new(no_ip4);
    assert_int_equal(tern_tcp_listen(t->st, 80, NULL), 0);
    uint8_t f[128];
    size_t n = th_eth(f, TH_MAC, TH_PEER_MAC, 0x0800);
    uint8_t tcp[32] = {0};
    tcp[0] = 0x30;                 /* source port 12345 */
    tcp[1] = 0x39;
    tcp[3] = 80;
    tcp[12] = 0x80;                /* 32-byte header: NOP NOP TS */
    tcp[13] = 0x10;                /* ACK */
    tcp[20] = 1;
    tcp[21] = 1;
    tcp[22] = 8;
    tcp[23] = 10;
    n += th_ip4(f + n, TH_PEER_IP, 0, 6, sizeof tcp);
    memcpy(f + n, tcp, sizeof tcp);
    th_input(t, f, n + sizeof tcp);
    assert_int_equal(C(t)->eth_drop_ethertype, 1);
    assert_int_equal(C(t)->tcp_in, 0);
    assert_int_equal(t->nout, 0);
    assert_int_equal(th_free(t), 0);
}

static void test_ip4_sends_refused(void **state)
{
    (void)state;
    th *t = th6_new(no_ip4);
    int err = 0;
    assert_null(tern_tcp_connect(t->st, A4(TH_PEER_IP), 80, 0, NULL, &err));
    assert_int_equal(err, TERN_EAFNOSUPPORT);
    assert_int_equal(tern_udp_send(t->st, 9, A4(TH_PEER_IP), 7, "x", 1),
                     -TERN_EAFNOSUPPORT);
    tern_buf *b = tern_buf_alloc(t->st);
    assert_non_null(b);
    b->data += 128;
    b->len = 1;
    assert_int_equal(tern_udp_send_buf(t->st, 9, A4(TH_PEER_IP), 7, b),
                     -TERN_EAFNOSUPPORT);
    assert_int_equal(tern_icmp_echo(t->st, A4(TH_PEER_IP), 1, 1, "x", 1),
                     -TERN_EAFNOSUPPORT);
    assert_int_equal(t->nout, 0);
    assert_int_equal(th_free(t), 0);
}

static void test_ip6_works(void **state)
{
    (void)state;
    th *t = th6_new(no_ip4);
    th6_resolved(t);
    uint8_t f[256];
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 3, 1, 8));
    assert_int_equal(th6_find_icmp(t, 129), 0);
    th_clear(t);
    tern_addr peer = tern_addr_v6(TH6_PEER);
    assert_int_equal(tern_udp_send(t->st, 9, &peer, 7, "x", 1), 0);
    int err = -1;
    assert_non_null(tern_tcp_connect(t->st, &peer, 80, 0, NULL, &err));
    assert_int_equal(err, 0);
    th_poll(t);                   /* flushes what the calls queued */
    assert_int_equal(t->nout, 2);
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(th_rd16(t->out[i] + 12), 0x86dd);
        assert_true(th6_csum_ok(t->out[i], t->out_len[i]));
    }
    assert_int_equal(t->out[0][20], 17);
    assert_int_equal(t->out[1][20], 6);
    assert_int_equal(th_free(t), 0);
}

/* tern_addr_state and tern_addr_list through DAD: tentative (an IPv6
 * connect refused), then usable (the connect goes), or duplicate when
 * another node answers for the address. */
/* cb.addr_state calls, in order */
static struct { tern_addr a[4]; int state[4]; unsigned n; } EV;
static void on_addr_state(tern_stack *st, const tern_addr *a, int state)
{
    (void)st;
    if (EV.n < 4) {
        EV.a[EV.n] = *a;
        EV.state[EV.n] = state;
    }
    EV.n++;
}
static void dad_on(tern_config *c)
{
    c->ip6_no_dad = 0;
    c->cb.addr_state = on_addr_state;
}
static void dad_on_no_ip4(tern_config *c)
{
    dad_on(c);
    c->ip = 0;
}

static void test_addr_states(void **state)
{
    (void)state;
    memset(&EV, 0, sizeof EV);
    th *t = th6_new(dad_on);
    tern_addr ip6 = tern_addr_v6(TH6_IP), ll = tern_addr_v6(TH6_LL);
    tern_addr peer = tern_addr_v6(TH6_PEER), list[4];
    int st[4];
    assert_int_equal(tern_addr_state(t->st, A4(TH_IP)), TERN_ADDR_USABLE);
    assert_int_equal(tern_addr_state(t->st, A4(TH_PEER_IP)),
                     TERN_ADDR_NOT_OURS);
    assert_int_equal(tern_addr_state(t->st, &peer), TERN_ADDR_NOT_OURS);
    assert_int_equal(tern_addr_state(t->st, NULL), TERN_ADDR_NOT_OURS);
    th_poll(t);
    assert_int_equal(tern_addr_state(t->st, &ip6), TERN_ADDR_TENTATIVE);
    assert_int_equal(tern_addr_state(t->st, &ll), TERN_ADDR_TENTATIVE);
    assert_int_equal(tern_addr_list(t->st, list, st, 4), 3);
    assert_int_equal(list[0].family, TERN_AF_INET);
    assert_int_equal(list[0].u.v4, TH_IP);
    assert_int_equal(st[0], TERN_ADDR_USABLE);
    bool seen_ip6 = false, seen_ll = false;
    for (unsigned i = 1; i < 3; i++) {
        assert_int_equal(list[i].family, TERN_AF_INET6);
        assert_int_equal(st[i], TERN_ADDR_TENTATIVE);
        seen_ip6 |= tern_addr_eq(&list[i], &ip6);
        seen_ll |= tern_addr_eq(&list[i], &ll);
    }
    assert_true(seen_ip6 && seen_ll);
    assert_int_equal(tern_addr_list(t->st, list, NULL, 1), 3);   /* cut */
    int err = 0;
    assert_null(tern_tcp_connect(t->st, &peer, 80, 0, NULL, &err));
    assert_int_equal(err, TERN_EINVAL);
    assert_int_equal(EV.n, 0);
    th_advance_us(t, 3000000);
    assert_int_equal(tern_addr_state(t->st, &ip6), TERN_ADDR_USABLE);
    assert_int_equal(tern_addr_state(t->st, &ll), TERN_ADDR_USABLE);
    assert_int_equal(EV.n, 2);             /* each address once */
    assert_int_equal(EV.state[0], TERN_ADDR_USABLE);
    assert_int_equal(EV.state[1], TERN_ADDR_USABLE);
    assert_false(tern_addr_eq(&EV.a[0], &EV.a[1]));
    assert_non_null(tern_tcp_connect(t->st, &peer, 80, 0, NULL, &err));
    assert_int_equal(th_free(t), 0);

    /* another node answers for the global address while it is tested */
    memset(&EV, 0, sizeof EV);
    t = th6_new(dad_on_no_ip4);
    th_poll(t);
    uint8_t f[256];
    static const uint8_t all_nodes[16] = {0xff, 2, [15] = 1};
    th_input(t, f, th6_na(f, TH6_PEER, all_nodes, TH6_IP, 0x20,
                          TH_PEER_MAC));
    th_advance_us(t, 3000000);
    assert_int_equal(tern_addr_state(t->st, &ip6), TERN_ADDR_DUPLICATE);
    assert_int_equal(EV.n, 2);
    assert_true(tern_addr_eq(&EV.a[0], &ip6));   /* at once */
    assert_int_equal(EV.state[0], TERN_ADDR_DUPLICATE);
    assert_true(tern_addr_eq(&EV.a[1], &ll));
    assert_int_equal(EV.state[1], TERN_ADDR_USABLE);
    assert_int_equal(tern_addr_state(t->st, &ll), TERN_ADDR_USABLE);
    assert_int_equal(tern_addr_list(t->st, list, st, 4), 2);   /* no IPv4 */
    assert_int_equal(st[0] + st[1], TERN_ADDR_DUPLICATE + TERN_ADDR_USABLE);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_check),
        cmocka_unit_test(test_ip4_dropped),
        cmocka_unit_test(test_ip4_tcp_dropped),
        cmocka_unit_test(test_ip4_sends_refused),
        cmocka_unit_test(test_ip6_works),
        cmocka_unit_test(test_addr_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
