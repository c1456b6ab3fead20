/* ICMP: echo replies, drops, rate-limited unreachables, no errors about
 * errors or broadcasts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th.h"

#define C(t) tern_get_counters((t)->st)
static const uint8_t ZERO[6];

static th *resolved(void)
{
    th *t = th_new(NULL);
    uint8_t f[64];
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP));
    th_clear(t);
    return t;
}

static void test_echo_reply(void **state)
{
    (void)state;
    th *t = resolved();
    uint8_t f[256], data[57];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 3);
    th_input(t, f, th_ping_frame(f, TH_PEER_IP, TH_IP, 0x77, 5, data, sizeof data));
    assert_int_equal(t->nout, 1);
    const uint8_t *o = t->out[0];
    assert_memory_equal(o, TH_PEER_MAC, 6);
    assert_int_equal(th_rd32(o + 26), TH_IP);
    assert_int_equal(th_rd32(o + 30), TH_PEER_IP);
    assert_int_equal(o[34], 0);                   /* echo reply */
    assert_int_equal(th_rd16(o + 38), 0x77);
    assert_int_equal(th_rd16(o + 40), 5);
    assert_memory_equal(o + 42, data, sizeof data);
    assert_int_equal(t->out_len[0], 42 + sizeof data);
    assert_true(th_frame_csums_ok(o, t->out_len[0]));
    assert_int_equal(C(t)->icmp_echo_in, 1);
    assert_int_equal(C(t)->icmp_echo_reply_out, 1);
    assert_int_equal(th_free(t), 0);
}

static void test_drops(void **state)
{
    (void)state;
    th *t = resolved();
    uint8_t f[256];
    size_t n = th_ping_frame(f, TH_PEER_IP, TH_IP, 1, 1, "abc", 3);
    f[16] = 0; f[17] = 20 + 7;                    /* ICMP of 7 bytes */
    th_fix_ip_csum(f);
    th_input(t, f, n);
    assert_int_equal(C(t)->icmp_drop_short, 1);
    n = th_ping_frame(f, TH_PEER_IP, TH_IP, 1, 1, "abc", 3);
    f[n - 1] ^= 1;
    th_input(t, f, n);
    assert_int_equal(C(t)->icmp_drop_csum, 1);
    /* echo to the broadcast address is not answered */
    n = th_ping_frame(f, TH_PEER_IP, 0xffffffffu, 1, 1, "abc", 3);
    memset(f, 0xff, 6);
    th_input(t, f, n);
    /* unknown type */
    n = th_ping_frame(f, TH_PEER_IP, TH_IP, 1, 1, "abc", 3);
    f[34] = 42;
    f[36] = 0; f[37] = 0;
    uint16_t c = th_csum_ref(f + 34, n - 34, 0);
    f[36] = (uint8_t)(c >> 8); f[37] = (uint8_t)c;
    th_input(t, f, n);
    assert_int_equal(C(t)->icmp_drop_type, 2);
    assert_int_equal(t->nout, 0);
    /* an echo reply is counted, not answered */
    n = th_ping_frame(f, TH_PEER_IP, TH_IP, 1, 1, "abc", 3);
    f[34] = 0;
    f[36] = 0; f[37] = 0;
    c = th_csum_ref(f + 34, n - 34, 0);
    f[36] = (uint8_t)(c >> 8); f[37] = (uint8_t)c;
    th_input(t, f, n);
    assert_int_equal(C(t)->icmp_echo_reply_in, 1);
    assert_int_equal(t->nout, 0);
    assert_int_equal(th_free(t), 0);
}

static void test_unreach_rate_limited(void **state)
{
    (void)state;
    th *t = resolved();
    uint8_t f[256];
    for (int i = 0; i < 150; i++)
        th_input(t, f, th_udp_frame(f, TH_PEER_IP, TH_IP, 1000, 9, "x", 1));
    assert_int_equal(C(t)->udp_drop_no_port, 150);
    assert_int_equal(C(t)->icmp_unreach_out, 100);   /* default burst */
    assert_int_equal(C(t)->icmp_rate_limited, 50);
    assert_int_equal(t->nout, 100);
    const uint8_t *o = t->out[0];
    assert_int_equal(o[34], 3);
    assert_int_equal(o[35], 3);                      /* port */
    assert_int_equal(th_rd32(o + 42 + 12), TH_PEER_IP); /* quoted header */
    assert_int_equal(t->out_len[0], 42 + 20 + 9);    /* and all of UDP's */
    assert_true(th_frame_csums_ok(o, t->out_len[0]));
    /* one second later the bucket has refilled */
    t->now += TERN_NS_PER_SEC;
    th_input(t, f, th_udp_frame(f, TH_PEER_IP, TH_IP, 1000, 9, "x", 1));
    assert_int_equal(C(t)->icmp_unreach_out, 101);
    /* of a long datagram, the header and 64 bytes after it */
    static const uint8_t big[400];
    uint8_t fb[512];
    th_clear(t);
    t->now += TERN_NS_PER_SEC;
    th_input(t, fb, th_udp_frame(fb, TH_PEER_IP, TH_IP, 1000, 9, big, sizeof big));
    assert_int_equal(t->nout, 1);
    assert_int_equal(t->out_len[0], 42 + 20 + 64);
    assert_true(th_frame_csums_ok(t->out[0], t->out_len[0]));
    assert_int_equal(th_free(t), 0);
}

/* No ICMP error about an ICMP error, nor about a broadcast datagram. */
static void test_no_error_about_error(void **state)
{
    (void)state;
    th *t = resolved();
    uint8_t f[256];
    /* an unreachable about something we never sent: counted, no answer */
    size_t n = th_eth(f, TH_MAC, TH_PEER_MAC, 0x0800);
    n += th_ip4(f + n, TH_PEER_IP, TH_IP, 1, 8 + 28);
    uint8_t *m = f + n;
    memset(m, 0, 36);
    m[0] = 3;
    m[1] = 1;
    th_ip4(m + 8, TH_IP, TERN_IP4(198, 18, 0, 9), 6, 8);
    uint16_t c = th_csum_ref(m, 36, 0);
    m[2] = (uint8_t)(c >> 8); m[3] = (uint8_t)c;
    th_input(t, f, n + 36);
    assert_int_equal(C(t)->icmp_error_in, 1);
    assert_int_equal(t->nout, 0);
    /* UDP to a closed port, sent to the broadcast address: no unreachable */
    n = th_udp_frame(f, TH_PEER_IP, TERN_IP4(198, 18, 0, 255), 1, 9, "x", 1);
    memset(f, 0xff, 6);
    th_input(t, f, n);
    assert_int_equal(C(t)->udp_drop_no_port, 1);
    assert_int_equal(t->nout, 0);
    assert_int_equal(th_free(t), 0);
}

static void test_send_echo(void **state)
{
    (void)state;
    th *t = resolved();
    assert_int_equal(tern_icmp_echo(t->st, A4(TH_PEER_IP), 9, 1, "ping", 4), 0);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_int_equal(t->out[0][34], 8);
    assert_int_equal(th_rd16(t->out[0] + 38), 9);     /* identifier */
    assert_int_equal(th_rd16(t->out[0] + 40), 1);     /* sequence */
    assert_int_equal(t->out_len[0], 42 + 4);
    assert_memory_equal(t->out[0] + 42, "ping", 4);
    assert_true(th_frame_csums_ok(t->out[0], t->out_len[0]));
    static uint8_t big[4000];
    assert_int_equal(tern_icmp_echo(t->st, A4(TH_PEER_IP), 9, 1, big, sizeof big),
                     -TERN_EMSGSIZE);                /* over one buffer */
    th_clear(t);
    assert_int_equal(tern_icmp_echo(t->st, A4(TH_PEER_IP), 9, 1, big, 1500), 0);
    tern_flush(t->st);
    assert_int_equal(t->nout, 2);                    /* in fragments */
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_echo_reply),
        cmocka_unit_test(test_drops),
        cmocka_unit_test(test_unreach_rate_limited),
        cmocka_unit_test(test_no_error_about_error),
        cmocka_unit_test(test_send_echo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
