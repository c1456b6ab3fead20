/* IPv6 receive: header validation, extension header chains and option
 * actions, ICMPv6 echo and errors (RFC 8200, RFC 4443). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th6.h"

#define C(t) tern_get_counters((t)->st)

static th *ready(void)
{
    th *t = th6_new(NULL);
    th6_resolved(t);
    return t;
}

/* An echo request of 16 bytes behind the extension headers ext (len
 * bytes; ext[0] must name ICMPv6 at the end of the chain), first next
 * header nh. */
static size_t ping_behind(uint8_t *f, const uint8_t *dst, uint8_t nh,
                          const uint8_t *ext, size_t len)
{
    uint8_t tmp[256];
    size_t n = th6_ping(tmp, TH6_PEER, dst, 9, 1, 16);
    uint8_t pl[512];
    memcpy(pl, ext, len);
    memcpy(pl + len, tmp + 54, n - 54);
    return th6_pkt(f, TH6_PEER, dst, nh, 64, pl, len + n - 54);
}

static void test_off_by_default(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[256];
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 1, 1, 8));
    assert_int_equal(C(t)->eth_drop_ethertype, 1);
    assert_int_equal(C(t)->ip6_in, 0);
    assert_int_equal(t->nout, 0);
    assert_int_equal(th_free(t), 0);
}

static void check_reply(th *t, const uint8_t *src, const uint8_t *dst, size_t len)
{
    assert_int_equal(t->nout, 1);
    const uint8_t *o = t->out[0];
    assert_memory_equal(o, TH_PEER_MAC, 6);
    assert_int_equal(th_rd16(o + 12), 0x86dd);
    assert_int_equal(o[14] >> 4, 6);
    assert_int_equal(o[20], 58);
    assert_int_equal(o[21], 64);
    assert_memory_equal(o + 22, src, 16);
    assert_memory_equal(o + 38, dst, 16);
    assert_int_equal(o[54], 129);
    assert_int_equal(th_rd16(o + 58), 9);
    assert_int_equal(t->out_len[0], 54 + 8 + len);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(o[62 + i], (uint8_t)(i * 7));
    assert_true(th6_csum_ok(o, t->out_len[0]));
}

static void test_echo(void **state)
{
    (void)state;
    th *t = ready();
    uint8_t f[512];
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 1, 100));
    check_reply(t, TH6_IP, TH6_PEER, 100);
    th_clear(t);
    th_input(t, f, th6_ping(f, TH6_PEER_LL, TH6_LL, 9, 2, 3));
    check_reply(t, TH6_LL, TH6_PEER_LL, 3);
    assert_int_equal(C(t)->icmp6_echo_in, 2);
    assert_int_equal(C(t)->icmp6_echo_reply_out, 2);
    /* Ethernet padding is cut off by the payload length */
    th_clear(t);
    size_t n = th6_ping(f, TH6_PEER, TH6_IP, 9, 3, 2);
    memset(f + n, 0xee, 10);
    th_input(t, f, n + 10);
    check_reply(t, TH6_IP, TH6_PEER, 2);
    assert_int_equal(th_free(t), 0);
}

static void test_header_drops(void **state)
{
    (void)state;
    th *t = ready();
    uint8_t f[512];
    size_t n = th6_ping(f, TH6_PEER, TH6_IP, 9, 1, 8);
    th_input(t, f, 14 + 39);
    assert_int_equal(C(t)->ip6_drop_short, 1);
    f[14] = 0x40;
    th_input(t, f, n);
    assert_int_equal(C(t)->ip6_drop_version, 1);
    n = th6_ping(f, TH6_PEER, TH6_IP, 9, 1, 8);
    th_input(t, f, n - 1);                      /* payload past the frame */
    assert_int_equal(C(t)->ip6_drop_len, 1);
    static const uint8_t mc[16] = {0xff, 2, [15] = 1};
    static const uint8_t other[16] = {0x20, 1, 0xd, 0xb8, 0, 1, [15] = 9};
    static const uint8_t zero[16];
    th_input(t, f, th6_ping(f, mc, TH6_IP, 9, 1, 8));
    th_input(t, f, th6_ping(f, TH6_IP, TH6_IP, 9, 1, 8));   /* from us */
    assert_int_equal(C(t)->ip6_drop_bad_src, 2);
    th_input(t, f, th6_ping(f, TH6_PEER, other, 9, 1, 8));
    assert_int_equal(C(t)->ip6_drop_not_ours, 1);
    uint8_t u[8] = {0, 1, 0, 2, 0, 8, 0, 0};    /* UDP from :: */
    th_input(t, f, th6_pkt(f, zero, TH6_IP, 17, 64, u, 8));
    assert_int_equal(C(t)->ip6_drop_bad_src, 3);
    n = th6_ping(f, TH6_PEER, TH6_IP, 9, 1, 8);
    f[n - 1] ^= 1;
    th_input(t, f, n);
    assert_int_equal(C(t)->icmp6_drop_csum, 1);
    /* an echo to all-nodes is not answered (no amplification) */
    th_input(t, f, th6_ping(f, TH6_PEER, mc, 9, 1, 8));
    assert_int_equal(C(t)->icmp6_echo_in, 1);
    /* a group we did not join, at the Ethernet layer */
    static const uint8_t grp[16] = {0xff, 2, [11] = 1, [12] = 0xff, 0x12, 0x34, 0x56};
    th_input(t, f, th6_ping(f, TH6_PEER, grp, 9, 1, 8));
    assert_int_equal(C(t)->ip6_drop_mcast_mac, 1);
    assert_int_equal(t->nout, 0);
    assert_int_equal(th_free(t), 0);
}

static void test_ext_chain_good(void **state)
{
    (void)state;
    th *t = ready();
    uint8_t f[512];
    /* hop-by-hop (PadN), destination options (Pad1s, an unknown option
     * to skip), routing type 4 with no segments left */
    uint8_t ext[] = {60, 0, 1, 4, 0, 0, 0, 0,
                     43, 0, 0, 0x1e, 2, 0, 0, 0,
                     58, 0, 4, 0, 0, 0, 0, 0};
    th_input(t, f, ping_behind(f, TH6_IP, 0, ext, sizeof ext));
    assert_int_equal(C(t)->icmp6_echo_reply_out, 1);
    assert_int_equal(t->nout, 1);
    assert_true(th6_csum_ok(t->out[0], t->out_len[0]));
    assert_int_equal(th_free(t), 0);
}

/* One parameter problem went out with code and pointer. */
static void expect_param(th *t, uint8_t code, uint32_t ptr)
{
    int i = th6_find_icmp(t, 4);
    assert_true(i >= 0);
    const uint8_t *o = t->out[i];
    assert_int_equal(o[55], code);
    assert_int_equal(th_rd32(o + 58), ptr);
    assert_memory_equal(o + 62 + 8, TH6_PEER, 16);   /* the quote */
    assert_true(th6_csum_ok(o, t->out_len[i]));
}

static void test_ext_errors(void **state)
{
    (void)state;
    th *t = ready();
    uint8_t f[512];
    /* hop-by-hop after a destination options header */
    uint8_t e1[] = {0, 0, 1, 4, 0, 0, 0, 0, 58, 0, 1, 4, 0, 0, 0, 0};
    th_input(t, f, ping_behind(f, TH6_IP, 60, e1, sizeof e1));
    expect_param(t, 1, 40);
    th_clear(t);
    /* routing type 0 with no segment left is ignored (RFC 5095) */
    uint8_t e0[24] = {58, 2, 0, 0};
    th_input(t, f, ping_behind(f, TH6_IP, 43, e0, 24));
    assert_int_equal(C(t)->icmp6_echo_reply_out, 1);
    th_clear(t);
    /* routing type 0, and type 2 with a segment left */
    uint8_t e2[] = {58, 2, 0, 1, 0, 0, 0, 0, [24] = 0};
    th_input(t, f, ping_behind(f, TH6_IP, 43, e2, 24));
    expect_param(t, 0, 42);
    th_clear(t);
    e2[2] = 2;
    th_input(t, f, ping_behind(f, TH6_IP, 43, e2, 24));
    expect_param(t, 0, 42);
    assert_int_equal(C(t)->ip6_drop_routing, 2);
    th_clear(t);
    /* an unknown next header; no next header is dropped silently */
    uint8_t pl[8] = {0};
    th_input(t, f, th6_pkt(f, TH6_PEER, TH6_IP, 200, 64, pl, 8));
    expect_param(t, 1, 6);
    th_clear(t);
    th_input(t, f, th6_pkt(f, TH6_PEER, TH6_IP, 59, 64, pl, 8));
    assert_int_equal(t->nout, 0);
    assert_int_equal(C(t)->ip6_drop_proto, 3);
    /* nine extension headers: over the bound, dropped without answer */
    uint8_t e3[72];
    for (int i = 0; i < 9; i++) {
        uint8_t h[8] = {i == 8 ? 58 : 60, 0, 1, 4, 0, 0, 0, 0};
        memcpy(e3 + 8 * i, h, 8);
    }
    th_input(t, f, ping_behind(f, TH6_IP, 60, e3, sizeof e3));
    assert_int_equal(C(t)->ip6_drop_ext_chain, 1);
    /* a header running past the datagram */
    uint8_t e4[] = {58, 9, 1, 4, 0, 0, 0, 0};
    th_input(t, f, ping_behind(f, TH6_IP, 60, e4, sizeof e4));
    assert_int_equal(C(t)->ip6_drop_ext_hdr, 1);
    assert_int_equal(t->nout, 0);
    assert_int_equal(C(t)->icmp6_echo_in, 1);
    assert_int_equal(th_free(t), 0);
}

static void test_option_actions(void **state)
{
    (void)state;
    th *t = ready();
    uint8_t f[512];
    static const uint8_t mc[16] = {0xff, 2, [15] = 1};
    uint8_t e[] = {58, 0, 0x1e, 2, 0, 0, 1, 0};
    /* 00: skipped */
    th_input(t, f, ping_behind(f, TH6_IP, 60, e, 8));
    assert_int_equal(C(t)->icmp6_echo_reply_out, 1);
    th_clear(t);
    /* 01: dropped quietly */
    e[2] = 0x5e;
    th_input(t, f, ping_behind(f, TH6_IP, 60, e, 8));
    assert_int_equal(t->nout, 0);
    /* 10: dropped with a parameter problem, even to a group */
    e[2] = 0x9e;
    th_input(t, f, ping_behind(f, TH6_IP, 60, e, 8));
    expect_param(t, 2, 42);
    th_clear(t);
    th_input(t, f, ping_behind(f, mc, 60, e, 8));
    assert_int_equal(t->nout, 1);
    th_clear(t);
    /* 11: answered only when not sent to a group */
    e[2] = 0xde;
    th_input(t, f, ping_behind(f, TH6_IP, 60, e, 8));
    expect_param(t, 2, 42);
    th_clear(t);
    th_input(t, f, ping_behind(f, mc, 60, e, 8));
    assert_int_equal(t->nout, 0);
    assert_int_equal(C(t)->ip6_drop_option, 5);
    assert_int_equal(th_free(t), 0);
}

static void test_errors_rate_limited(void **state)
{
    (void)state;
    th *t = ready();
    uint8_t f[256], pl[8] = {0};
    for (int i = 0; i < 150; i++)
        th_input(t, f, th6_pkt(f, TH6_PEER, TH6_IP, 200, 64, pl, 8));
    /* a Parameter Problem quoting the whole packet */
    const uint8_t *o = t->out[0];
    assert_int_equal(o[54], 4);
    assert_int_equal(t->out_len[0], 14 + 40 + 8 + 48);
    assert_memory_equal(o + 62 + 8, TH6_PEER, 16);
    assert_true(th6_csum_ok(o, t->out_len[0]));
    assert_int_equal(C(t)->icmp6_error_out, 100);
    assert_int_equal(C(t)->icmp6_rate_limited, 50);
    t->now += TERN_NS_PER_SEC;
    th_input(t, f, th6_pkt(f, TH6_PEER, TH6_IP, 200, 64, pl, 8));
    assert_int_equal(C(t)->icmp6_error_out, 101);
    /* of a long packet, what fits in the minimum MTU */
    static uint8_t big[1400], fb[1500];
    th_clear(t);
    t->now += TERN_NS_PER_SEC;
    th_input(t, fb, th6_pkt(fb, TH6_PEER, TH6_IP, 200, 64, big, sizeof big));
    assert_int_equal(t->nout, 1);
    assert_int_equal(t->out_len[0], 14 + 1280);
    assert_true(th6_csum_ok(t->out[0], t->out_len[0]));
    assert_int_equal(th_free(t), 0);
}

/* tern_icmp_echo to an IPv6 address: resolved, sent, the reply counted;
 * without IPv6 configured: address family not supported. */
static void test_echo_out(void **state)
{
    (void)state;
    th *t = ready();
    tern_addr a = tern_addr_v6(TH6_PEER);
    assert_int_equal(tern_icmp_echo(t->st, &a, 5, 6, "hello", 5), 0);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    const uint8_t *o = t->out[0];
    assert_memory_equal(o, TH_PEER_MAC, 6);
    assert_memory_equal(o + 22, TH6_IP, 16);
    assert_memory_equal(o + 38, TH6_PEER, 16);
    assert_int_equal(o[54], 128);
    assert_int_equal(th_rd16(o + 58), 5);
    assert_int_equal(th_rd16(o + 60), 6);
    assert_memory_equal(o + 62, "hello", 5);
    assert_int_equal(t->out_len[0], 62 + 5);
    assert_true(th6_csum_ok(o, t->out_len[0]));
    static uint8_t big[4000];
    assert_int_equal(tern_icmp_echo(t->st, &a, 5, 6, big, sizeof big),
                     -TERN_EMSGSIZE);                /* over one buffer */
    uint8_t f[256], m[13] = {129, 0, 0, 0, 0, 5, 0, 6, 'h', 'e', 'l', 'l', 'o'};
    th_input(t, f, th6_icmp(f, TH6_PEER, TH6_IP, 64, m, sizeof m));
    assert_int_equal(C(t)->icmp6_echo_reply_in, 1);
    assert_int_equal(th_free(t), 0);
    t = th_new(NULL);
    assert_int_equal(tern_icmp_echo(t->st, &a, 5, 6, "x", 1), -TERN_EAFNOSUPPORT);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_by_default),
        cmocka_unit_test(test_echo),
        cmocka_unit_test(test_header_drops),
        cmocka_unit_test(test_ext_chain_good),
        cmocka_unit_test(test_ext_errors),
        cmocka_unit_test(test_option_actions),
        cmocka_unit_test(test_errors_rate_limited),
        cmocka_unit_test(test_echo_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
