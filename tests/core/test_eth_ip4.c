/* Ethernet and IPv4 receive validation: every drop reason bumps its own
 * counter, and a valid datagram still gets through afterwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th.h"
#include "stack.h"   /* ip4_output */

#define C(t) tern_get_counters((t)->st)

/* A valid UDP datagram to a closed port: answered by ICMP port
 * unreachable, which proves the frame passed every IPv4 check. */
static size_t good(uint8_t *f)
{
    return th_udp_frame(f, TH_PEER_IP, TH_IP, 5000, 9, "hello", 5);
}

static void assert_still_healthy(th *t)
{
    uint8_t f[256];
    uint64_t before = C(t)->udp_drop_no_port;
    th_input(t, f, good(f));
    assert_int_equal(C(t)->udp_drop_no_port, before + 1);
}

static void test_eth_drops(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[256];
    size_t n = good(f);
    th_input(t, f, 13);
    assert_int_equal(C(t)->eth_drop_short, 1);
    uint8_t other[6] = {2, 9, 9, 9, 9, 9};
    memcpy(f, other, 6);
    th_input(t, f, n);
    assert_int_equal(C(t)->eth_drop_not_ours, 1);
    uint8_t mcast[6] = {0x01, 0x00, 0x5e, 0, 0, 1};
    memcpy(f, mcast, 6);
    th_input(t, f, n);
    assert_int_equal(C(t)->eth_drop_not_ours, 2);
    n = good(f);
    f[12] = 0x86;   /* IPv6 */
    f[13] = 0xdd;
    th_input(t, f, n);
    f[12] = 0x81;   /* VLAN tag: not configured */
    f[13] = 0x00;
    th_input(t, f, n);
    assert_int_equal(C(t)->eth_drop_ethertype, 2);
    assert_int_equal(C(t)->ip_in, 0);
    assert_still_healthy(t);
    assert_int_equal(th_free(t), 0);
}

/* Corrupt a good frame with `edit`, feed it, return the counters. */
static void feed_edited(th *t, void (*edit)(uint8_t *f, size_t *n))
{
    uint8_t f[256];
    size_t n = good(f);
    edit(f, &n);
    th_input(t, f, n);
}

static void e_short(uint8_t *f, size_t *n) { (void)f; *n = 14 + 19; }
static void e_version(uint8_t *f, size_t *n) { (void)n; f[14] = 0x65; th_fix_ip_csum(f); }
static void e_ihl_small(uint8_t *f, size_t *n) { (void)n; f[14] = 0x44; }
static void e_ihl_big(uint8_t *f, size_t *n) { (void)n; f[14] = 0x4f; }
static void e_total_big(uint8_t *f, size_t *n) { (void)n; f[16] = 0x05; th_fix_ip_csum(f); }
static void e_total_small(uint8_t *f, size_t *n) { (void)n; f[16] = 0; f[17] = 10; th_fix_ip_csum(f); }
static void e_csum(uint8_t *f, size_t *n) { (void)n; f[24] ^= 0x40; }
static void e_frag_mf(uint8_t *f, size_t *n) { (void)n; f[20] = 0x20; th_fix_ip_csum(f); }
static void set_src(uint8_t *f, uint32_t ip)
{
    f[26] = (uint8_t)(ip >> 24); f[27] = (uint8_t)(ip >> 16);
    f[28] = (uint8_t)(ip >> 8); f[29] = (uint8_t)ip;
    th_fix_ip_csum(f);
}
static void e_src_self(uint8_t *f, size_t *n) { (void)n; set_src(f, TH_IP); }
static void e_src_loop(uint8_t *f, size_t *n) { (void)n; set_src(f, TERN_IP4(127, 0, 0, 1)); }
static void e_src_bcast(uint8_t *f, size_t *n) { (void)n; set_src(f, 0xffffffffu); }
static void e_src_subnet_bcast(uint8_t *f, size_t *n) { (void)n; set_src(f, TERN_IP4(198, 18, 0, 255)); }
static void e_src_mcast(uint8_t *f, size_t *n) { (void)n; set_src(f, TERN_IP4(224, 0, 0, 1)); }
static void e_src_zero(uint8_t *f, size_t *n) { (void)n; set_src(f, 0); }
static void e_dst_other(uint8_t *f, size_t *n)
{
    (void)n;
    f[33] = 77;
    th_fix_ip_csum(f);
}

static void test_ip4_drops(void **state)
{
    (void)state;
    struct {
        void (*edit)(uint8_t *, size_t *);
        size_t field;   /* offset of the counter in tern_counters */
    } cases[] = {
        {e_short, offsetof(tern_counters, ip_drop_short)},
        {e_version, offsetof(tern_counters, ip_drop_version)},
        {e_ihl_small, offsetof(tern_counters, ip_drop_hdr_len)},
        {e_ihl_big, offsetof(tern_counters, ip_drop_hdr_len)},
        {e_total_big, offsetof(tern_counters, ip_drop_total_len)},
        {e_total_small, offsetof(tern_counters, ip_drop_total_len)},
        {e_csum, offsetof(tern_counters, ip_drop_csum)},
        {e_frag_mf, offsetof(tern_counters, ip_drop_frag_bad)},
        {e_src_self, offsetof(tern_counters, ip_drop_bad_src)},
        {e_src_loop, offsetof(tern_counters, ip_drop_bad_src)},
        {e_src_bcast, offsetof(tern_counters, ip_drop_bad_src)},
        {e_src_subnet_bcast, offsetof(tern_counters, ip_drop_bad_src)},
        {e_src_mcast, offsetof(tern_counters, ip_drop_bad_src)},
        {e_src_zero, offsetof(tern_counters, ip_drop_bad_src)},
        {e_dst_other, offsetof(tern_counters, ip_drop_not_ours)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        th *t = th_new(NULL);
        feed_edited(t, cases[i].edit);
        const uint64_t *ctr = (const uint64_t *)((const uint8_t *)C(t) + cases[i].field);
        if (*ctr != 1)
            fail_msg("case %zu: counter at %zu is %llu", i, cases[i].field,
                     (unsigned long long)*ctr);
        assert_int_equal(C(t)->udp_in, 0);
        assert_int_equal(t->nout, 0);   /* nothing answered */
        assert_still_healthy(t);
        assert_int_equal(th_free(t), 0);
    }
}

/* Options: a valid no-op list passes; length 0/1, past the header and
 * source routes are dropped. */
static size_t with_options(uint8_t *f, const uint8_t *opt, size_t optlen)
{
    uint8_t payload[8 + 5];
    uint8_t tmp[256];
    size_t n = good(tmp);
    memcpy(payload, tmp + 34, sizeof payload);
    memcpy(f, tmp, 34);
    f[14] = (uint8_t)(0x40 | ((20 + optlen) / 4));
    f[16] = 0;
    f[17] = (uint8_t)(20 + optlen + sizeof payload);
    memcpy(f + 34, opt, optlen);
    memcpy(f + 34 + optlen, payload, sizeof payload);
    th_fix_ip_csum(f);
    (void)n;
    return 34 + optlen + sizeof payload;
}

static void test_ip4_options(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[256];
    const uint8_t nops[4] = {1, 1, 1, 0};
    th_input(t, f, with_options(f, nops, 4));
    assert_int_equal(C(t)->udp_drop_no_port, 1);   /* passed IP */
    const uint8_t len0[4] = {7, 0, 0, 0};
    const uint8_t len1[4] = {7, 1, 0, 0};
    const uint8_t past[4] = {7, 9, 0, 0};
    const uint8_t lsrr[8] = {131, 7, 4, 1, 2, 3, 4, 0};
    const uint8_t ssrr[8] = {137, 7, 4, 1, 2, 3, 4, 0};
    th_input(t, f, with_options(f, len0, 4));
    th_input(t, f, with_options(f, len1, 4));
    th_input(t, f, with_options(f, past, 4));
    th_input(t, f, with_options(f, lsrr, 8));
    th_input(t, f, with_options(f, ssrr, 8));
    assert_int_equal(C(t)->ip_drop_options, 5);
    assert_int_equal(C(t)->udp_drop_no_port, 1);
    assert_int_equal(th_free(t), 0);
}

/* Ethernet padding after the IP datagram is ignored (trimmed). */
static void test_ethernet_padding(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[256];
    size_t n = good(f);
    memset(f + n, 0xab, 60 - n > 0 ? 60 - n : 0);
    th_input(t, f, n < 60 ? 60 : n);
    assert_int_equal(C(t)->udp_drop_no_port, 1);
    assert_int_equal(C(t)->udp_drop_len, 0);
    assert_int_equal(C(t)->udp_drop_csum, 0);
    assert_int_equal(th_free(t), 0);
}

/* Unknown protocol: dropped, counted, ICMP protocol unreachable sent. */
static void test_unknown_protocol(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t arp[64];
    th_input(t, arp, th_arp(arp, 1, TH_PEER_MAC, TH_PEER_IP, TH_MAC, TH_IP));
    th_clear(t);
    uint8_t f[128];
    size_t n = th_eth(f, TH_MAC, TH_PEER_MAC, 0x0800);
    n += th_ip4(f + n, TH_PEER_IP, TH_IP, 99, 8);
    memset(f + n, 0, 8);
    th_input(t, f, n + 8);
    assert_int_equal(C(t)->ip_drop_proto, 1);
    assert_int_equal(t->nout, 1);
    const uint8_t *o = t->out[0];
    assert_int_equal(o[14 + 9], 1);        /* ICMP */
    assert_int_equal(o[34], 3);            /* unreachable */
    assert_int_equal(o[35], 2);            /* protocol */
    assert_true(th_frame_csums_ok(o, t->out_len[0]));
    assert_int_equal(th_free(t), 0);
}

/* No route: without a gateway, an off-link destination fails cleanly;
 * with one, frames go to the gateway's MAC. */
static void gw_cfg(tern_config *c) { c->gateway = TERN_IP4(198, 18, 0, 254); }

/* A TCP segment over the MTU is never fragmented (TCP sets DF): it is
 * refused, and the drop is counted, not silent. */
static void test_tcp_over_mtu_counted(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    tern_buf *b = tern_buf_alloc(t->st);
    assert_non_null(b);
    memset(b->data, 0, 1481);
    b->len = 1481;                      /* + 20 B of IP header = MTU + 1 */
    assert_int_equal(ip4_output(t->st, b, 0, TH_PEER_IP, IP_PROTO_TCP, 0),
                     -TERN_EMSGSIZE);
    assert_int_equal(C(t)->ip_drop_too_big, 1);
    assert_int_equal(C(t)->ip_out, 0);
    assert_int_equal(th_free(t), 0);
}

static void test_routing(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    assert_int_equal(tern_udp_send(t->st, 1, A4(TERN_IP4(203, 0, 113, 9)), 9, "x", 1),
                     -TERN_EINVAL);
    assert_int_equal(C(t)->ip_drop_no_route, 1);
    assert_int_equal(th_free(t), 0);

    t = th_new(gw_cfg);
    assert_int_equal(tern_udp_send(t->st, 1, A4(TERN_IP4(203, 0, 113, 9)), 9, "x", 1), 0);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);        /* ARP request for the gateway */
    assert_int_equal(th_rd16(t->out[0] + 12), 0x0806);
    assert_int_equal(th_rd32(t->out[0] + 14 + 24), TERN_IP4(198, 18, 0, 254));
    /* nobody answers: the datagram waiting for ARP is dropped in time */
    for (int i = 0; i < 6; i++) {
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
    }
    assert_int_equal(C(t)->arp_pending_expired, 1);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eth_drops),
        cmocka_unit_test(test_ip4_drops),
        cmocka_unit_test(test_ip4_options),
        cmocka_unit_test(test_ethernet_padding),
        cmocka_unit_test(test_unknown_protocol),
        cmocka_unit_test(test_routing),
        cmocka_unit_test(test_tcp_over_mtu_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
