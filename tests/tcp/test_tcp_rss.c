/* Toeplitz hash against the published Microsoft RSS verification vectors,
 * and RSS-aware ephemeral ports: for every queue count 1..16 and every
 * queue, the ports an instance picks bring the reply direction back to
 * its own queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"

static const uint8_t KEY[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d,
    0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
    0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b,
    0xbe, 0xac, 0x01, 0xfa,
};

static void put(uint8_t *in, uint32_t src, uint32_t dst, uint16_t sp,
                uint16_t dp)
{
    in[0] = (uint8_t)(src >> 24); in[1] = (uint8_t)(src >> 16);
    in[2] = (uint8_t)(src >> 8); in[3] = (uint8_t)src;
    in[4] = (uint8_t)(dst >> 24); in[5] = (uint8_t)(dst >> 16);
    in[6] = (uint8_t)(dst >> 8); in[7] = (uint8_t)dst;
    in[8] = (uint8_t)(sp >> 8); in[9] = (uint8_t)sp;
    in[10] = (uint8_t)(dp >> 8); in[11] = (uint8_t)dp;
}

static void ms_vectors(void **s)
{
    (void)s;
    static const struct {
        uint32_t dst, src;
        uint16_t dport, sport;
        uint32_t ip_only, ip_tcp;
    } v[] = {
        {TERN_IP4(161, 142, 100, 80), TERN_IP4(66, 9, 149, 187), 1766, 2794,
         0x323e8fc2, 0x51ccc178},
        {TERN_IP4(65, 69, 140, 83), TERN_IP4(199, 92, 111, 2), 4739, 14230,
         0xd718262a, 0xc626b0ea},
        {TERN_IP4(12, 22, 207, 184), TERN_IP4(24, 19, 198, 95), 38024, 12898,
         0xd2d0a5de, 0x5c2b394a},
        {TERN_IP4(209, 142, 163, 6), TERN_IP4(38, 27, 205, 30), 2217, 48228,
         0x82989176, 0xafc7327f},
        {TERN_IP4(202, 188, 127, 2), TERN_IP4(153, 39, 163, 191), 1303, 44251,
         0x5d1809c5, 0x10e828a2},
    };
    for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t in[12];
        put(in, v[i].src, v[i].dst, v[i].sport, v[i].dport);
        assert_int_equal(tern_toeplitz(KEY, in, 8), v[i].ip_only);
        assert_int_equal(tern_toeplitz(KEY, in, 12), v[i].ip_tcp);
    }
}

static uint16_t g_queues, g_queue;
static void tweak(tern_config *c)
{
    c->rss_queues = g_queues;
    c->rss_queue = g_queue;
    memcpy(c->rss_key, KEY, 40);
    c->rss_reta_size = 128;
    for (int i = 0; i < 128; i++)
        c->rss_reta[i] = (uint16_t)(i % g_queues);
    c->max_conns = 64;
}

static void ports_land_on_queue(void **s)
{
    (void)s;
    for (uint16_t n = 1; n <= 16; n++) {
        for (uint16_t q = 0; q < n; q++) {
            g_queues = n;
            g_queue = q;
            th *t = th_new(tweak);
            tp_arp(t);
            for (int k = 0; k < 8; k++) {
                uint16_t dport = (uint16_t)(80 + k);
                tern_conn *c = tern_tcp_connect(t->st, A4(TH_PEER_IP), dport, 0,
                                                NULL, NULL);
                assert_non_null(c);
                tern_tcp_info i;
                tern_tcp_get_info(t->st, c, &i);
                assert_true(i.local_port >= 49152);
                uint8_t in[12];
                put(in, TH_PEER_IP, TH_IP, dport, i.local_port);
                uint32_t h = tern_toeplitz(KEY, in, 12);
                if (n > 1)
                    assert_int_equal((h & 127) % n, q);
                tern_tcp_abort(t->st, c);
            }
            th_clear(t);
            assert_int_equal(th_free(t), 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ms_vectors),
        cmocka_unit_test(ports_land_on_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
