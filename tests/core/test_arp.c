/* ARP: replies, learning rules, malformed packets, resolution with a
 * pending queue, retries, expiry and the cache bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th.h"

#define C(t) tern_get_counters((t)->st)
static const uint8_t ZERO[6];

static void test_reply_to_request(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[64];
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP));
    assert_int_equal(t->nout, 1);
    const uint8_t *o = t->out[0];
    assert_memory_equal(o, TH_PEER_MAC, 6);          /* unicast to asker */
    assert_memory_equal(o + 6, TH_MAC, 6);
    assert_int_equal(th_rd16(o + 12), 0x0806);
    assert_int_equal(th_rd16(o + 14 + 6), 2);        /* reply */
    assert_memory_equal(o + 14 + 8, TH_MAC, 6);      /* sha = us */
    assert_int_equal(th_rd32(o + 14 + 14), TH_IP);
    assert_memory_equal(o + 14 + 18, TH_PEER_MAC, 6);
    assert_int_equal(th_rd32(o + 14 + 24), TH_PEER_IP);
    assert_int_equal(C(t)->arp_reply_out, 1);
    /* the asker was learned: a datagram to it leaves at once */
    th_clear(t);
    assert_int_equal(tern_udp_send(t->st, 1, TH_PEER_IP, 2, "x", 1), 0);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_int_equal(th_rd16(t->out[0] + 12), 0x0800);
    assert_memory_equal(t->out[0], TH_PEER_MAC, 6);
    assert_int_equal(th_free(t), 0);
}

static void test_malformed(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[64];
    size_t n = th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP);
    th_input(t, f, 14 + 27);                         /* truncated */
    assert_int_equal(C(t)->arp_drop_short, 1);
    const size_t offs[] = {14 + 1, 14 + 3, 14 + 4, 14 + 5, 14 + 7};
    for (size_t i = 0; i < 5; i++) {                 /* htype ptype hlen plen op */
        n = th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP);
        f[offs[i]] ^= 0x10;
        th_input(t, f, n);
    }
    assert_int_equal(C(t)->arp_drop_format, 5);
    /* broadcast/multicast sender hardware address */
    uint8_t bmac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    th_input(t, f, th_arp(f, 1, bmac, TH_PEER_IP, ZERO, TH_IP));
    /* sender IP that is no host: broadcast, loopback, multicast */
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, 0xffffffffu, ZERO, TH_IP));
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TERN_IP4(127, 0, 0, 1), ZERO, TH_IP));
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TERN_IP4(224, 1, 1, 1), ZERO, TH_IP));
    assert_int_equal(C(t)->arp_drop_bad_sender, 4);
    /* someone claims our address */
    th_input(t, f, th_arp(f, 2, TH_PEER_MAC, TH_IP, TH_MAC, TH_IP));
    assert_int_equal(C(t)->arp_drop_addr_conflict, 1);
    assert_int_equal(t->nout, 0);                    /* nothing answered */
    /* still healthy */
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP));
    assert_int_equal(t->nout, 1);
    assert_int_equal(th_free(t), 0);
}

/* Requests for other hosts are neither answered nor learned. */
static void test_foreign_traffic_not_learned(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[64];
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TERN_IP4(198, 18, 0, 77)));
    assert_int_equal(C(t)->arp_drop_not_ours, 1);
    assert_int_equal(t->nout, 0);
    /* the sender was not cached: sending to it needs a request */
    tern_udp_send(t->st, 1, TH_PEER_IP, 2, "x", 1);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_int_equal(th_rd16(t->out[0] + 12), 0x0806);
    assert_int_equal(C(t)->arp_request_out, 1);
    /* the reply releases the waiting datagram to the right MAC */
    th_clear(t);
    th_input(t, f, th_arp(f, 2, TH_PEER_MAC, TH_PEER_IP, TH_MAC, TH_IP));
    assert_int_equal(t->nout, 1);
    assert_int_equal(th_rd16(t->out[0] + 12), 0x0800);
    assert_memory_equal(t->out[0], TH_PEER_MAC, 6);
    assert_true(th_frame_csums_ok(t->out[0], t->out_len[0]));
    assert_int_equal(th_free(t), 0);
}

static void test_retry_and_give_up(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    tern_udp_send(t->st, 1, TH_PEER_IP, 2, "a", 1);
    tern_udp_send(t->st, 1, TH_PEER_IP, 2, "b", 1);
    tern_flush(t->st);
    assert_int_equal(C(t)->arp_request_out, 1);   /* one request for both */
    for (int i = 0; i < 6; i++) {
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
    }
    assert_int_equal(C(t)->arp_request_out, 3);   /* 3 tries */
    assert_int_equal(C(t)->arp_pending_expired, 2);
    assert_int_equal(C(t)->arp_entries_expired, 1);
    assert_int_equal(th_free(t), 0);
}

static void small_pending(tern_config *c) { c->arp_pending = 4; c->arp_entries = 8; }

static void test_bounds(void **state)
{
    (void)state;
    th *t = th_new(small_pending);
    for (int i = 0; i < 10; i++)
        tern_udp_send(t->st, 1, TH_PEER_IP, 2, "x", 1);
    assert_int_equal(C(t)->arp_pending_full, 6);
    /* a flood of requests from 1000 different senders: cache stays bounded
     * (evictions counted) and every request is still answered */
    uint8_t f[64];
    th_clear(t);
    for (uint32_t i = 0; i < 1000; i++) {
        uint8_t mac[6] = {2, 1, 0, 0, (uint8_t)(i >> 8), (uint8_t)i};
        th_input(t, f, th_arp(f, 1, mac, TERN_IP4(198, 18, 1, 0) + i, ZERO, TH_IP));
    }
    assert_int_equal(C(t)->arp_reply_out, 1000);
    assert_true(C(t)->arp_cache_full >= 990);
    th_clear(t);
    for (int i = 0; i < 6; i++) {
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
    }
    assert_int_equal(th_free(t), 0);
}

/* A learned entry is refreshed after its reachable time and forgotten when
 * nobody answers the refresh. */
static void test_expiry(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[64];
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP));
    th_clear(t);
    t->now += 61 * TERN_NS_PER_SEC;
    th_poll(t);                    /* calls outside input use poll's time */
    tern_udp_send(t->st, 1, TH_PEER_IP, 2, "x", 1);   /* still sent... */
    tern_flush(t->st);
    assert_int_equal(t->nout, 2);                      /* ...plus a refresh */
    assert_int_equal(C(t)->arp_request_out, 1);
    t->now += 11 * TERN_NS_PER_SEC;
    th_poll(t);
    assert_int_equal(C(t)->arp_entries_expired, 1);
    assert_int_equal(t->nout, 2);      /* the refresh was not repeated */
    th_clear(t);
    tern_udp_send(t->st, 1, TH_PEER_IP, 2, "x", 1);   /* must ask again */
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_int_equal(th_rd16(t->out[0] + 12), 0x0806);
    th_input(t, f, th_arp(f, 2, TH_PEER_MAC, TH_PEER_IP, TH_MAC, TH_IP));
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reply_to_request),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_foreign_traffic_not_learned),
        cmocka_unit_test(test_retry_and_give_up),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_expiry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
