/* ARP and the neighbor cache: replies, learning rules, malformed packets,
 * resolution with bounded queues, retries, STALE probing and expiry,
 * eviction order and rate limits under a flood, static entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th.h"
#include "stack.h"

#define C(t) tern_get_counters((t)->st)
static const uint8_t ZERO[6];
static const uint8_t BCAST[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
static const uint8_t *eth_bcast_mac(void) { return BCAST; }

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
    assert_int_equal(tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1), 0);
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
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
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

/* Send the one-byte datagram c to ip (port 2). */
static void send_byte(th *t, uint32_t ip, char c)
{
    assert_int_equal(tern_udp_send(t->st, 1, A4(ip), 2, &c, 1), 0);
}

/* The frames sent since th_clear carry these payload bytes, in this order,
 * to mac. */
static void assert_sent(th *t, const uint8_t *mac, const char *bytes)
{
    size_t n = strlen(bytes);
    assert_int_equal(t->nout, n);
    for (size_t i = 0; i < n; i++) {
        assert_memory_equal(t->out[i], mac, 6);
        assert_int_equal(t->out[i][14 + 20 + 8], (uint8_t)bytes[i]);
    }
}

/* Frames waiting for two addresses at once leave, when each is answered,
 * in the order they were sent, also after thousands of other addresses
 * took and gave back the queue's slots. */
static void test_pending_order(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[64];
    const uint32_t b_ip = TERN_IP4(198, 18, 0, 60);
    const uint8_t b_mac[6] = {2, 6, 0, 0, 0, 1};
    for (int round = 0; round < 2; round++) {
        send_byte(t, TH_PEER_IP, 'a');
        send_byte(t, b_ip, 'x');
        send_byte(t, TH_PEER_IP, 'b');
        send_byte(t, b_ip, 'y');
        send_byte(t, TH_PEER_IP, 'c');
        tern_flush(t->st);
        th_clear(t);
        th_input(t, f, th_arp(f, 2, b_mac, b_ip, TH_MAC, TH_IP));
        assert_sent(t, b_mac, "xy");
        th_clear(t);
        th_input(t, f, th_arp(f, 2, TH_PEER_MAC, TH_PEER_IP, TH_MAC, TH_IP));
        assert_sent(t, TH_PEER_MAC, "abc");
        /* churn: 5,000 frames to 150 unresolvable addresses, each waiting
         * until its entry is evicted; then both peers are forgotten */
        for (uint32_t i = 0; i < 5000; i++)
            tern_udp_send(t->st, 1, A4(TERN_IP4(198, 18, 0, 100) + i % 150),
                          2, "z", 1);
        tern_flush(t->st);
        for (int i = 0; i < 5; i++) {           /* they give up */
            t->now += TERN_NS_PER_SEC;
            th_poll(t);
        }
        assert_int_equal(t->st->arp_nwait, 0);
        assert_int_equal(tern_neigh_del(t->st, TH_PEER_IP), 0);
        assert_int_equal(tern_neigh_del(t->st, b_ip), 0);
    }
    assert_true(C(t)->arp_pending_expired >= 1000);   /* slots reused */
    assert_int_equal(th_free(t), 0);
}

static void test_retry_and_give_up(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "a", 1);
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "b", 1);
    tern_flush(t->st);
    assert_int_equal(C(t)->arp_request_out, 1);   /* one request for both */
    for (int i = 0; i < 6; i++) {
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
    }
    assert_int_equal(C(t)->arp_request_out, 3);   /* 3 tries, 1 s apart */
    assert_int_equal(C(t)->arp_pending_expired, 2);
    assert_int_equal(C(t)->arp_resolve_failed, 1);
    assert_int_equal(th_free(t), 0);
}

static void small_pending(tern_config *c) { c->arp_pending = 4; c->arp_entries = 8; }

static void test_bounds(void **state)
{
    (void)state;
    th *t = th_new(small_pending);
    /* at most 3/4 of cfg.arp_pending (4) wait on one address */
    for (int i = 0; i < 10; i++)
        tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
    assert_int_equal(C(t)->arp_pending_full, 7);
    /* and cfg.arp_pending in all */
    for (uint32_t i = 0; i < 3; i++)
        tern_udp_send(t->st, 1, A4(TERN_IP4(198, 18, 0, 9) + i), 2, "x", 1);
    assert_int_equal(C(t)->arp_pending_full, 9);
    /* a flood of requests from 1000 different senders: cache stays bounded
     * (evictions counted) and every request is still answered */
    uint8_t f[64];
    th_clear(t);
    for (uint32_t i = 0; i < 1000; i++) {
        uint8_t mac[6] = {2, 1, 0, 0, (uint8_t)(i >> 8), (uint8_t)i};
        th_input(t, f, th_arp(f, 1, mac, TERN_IP4(198, 18, 1, 0) + i, ZERO, TH_IP));
    }
    assert_int_equal(C(t)->arp_reply_out, 1000);
    assert_true(C(t)->arp_evicted >= 990);
    th_clear(t);
    for (int i = 0; i < 6; i++) {
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
    }
    assert_int_equal(th_free(t), 0);
}

/* Past its reachable time an entry is STALE: still used, and probed
 * (unicast) when used; forgotten when 3 probes go unanswered. */
static void test_stale_probe_unanswered(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[64];
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP));
    th_clear(t);
    t->now += 61 * TERN_NS_PER_SEC;
    th_poll(t);                    /* calls outside input use poll's time */
    assert_int_equal(t->nout, 0);  /* unused: no probe */
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);   /* still sent... */
    tern_flush(t->st);
    assert_int_equal(t->nout, 2);                      /* ...plus a probe */
    assert_int_equal(C(t)->arp_request_out, 1);
    assert_int_equal(th_rd16(t->out[0] + 12), 0x0806);
    assert_memory_equal(t->out[0], TH_PEER_MAC, 6);    /* unicast */
    assert_int_equal(th_rd16(t->out[1] + 12), 0x0800);
    for (int i = 0; i < 4; i++) {
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
    }
    assert_int_equal(C(t)->arp_request_out, 3);
    assert_int_equal(C(t)->arp_entries_expired, 1);
    th_clear(t);
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);   /* must ask again */
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_int_equal(th_rd16(t->out[0] + 12), 0x0806);
    assert_memory_equal(t->out[0], "\xff\xff\xff\xff\xff\xff", 6);
    th_input(t, f, th_arp(f, 2, TH_PEER_MAC, TH_PEER_IP, TH_MAC, TH_IP));
    assert_int_equal(th_free(t), 0);
}

/* A probe answered makes the entry REACHABLE again: no more probes. */
static void test_stale_probe_answered(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    uint8_t f[64];
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP));
    t->now += 61 * TERN_NS_PER_SEC;
    th_poll(t);
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
    tern_flush(t->st);
    assert_int_equal(C(t)->arp_request_out, 1);
    th_input(t, f, th_arp(f, 2, TH_PEER_MAC, TH_PEER_IP, TH_MAC, TH_IP));
    for (int i = 0; i < 30; i++) {
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
        tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
        tern_flush(t->st);
    }
    assert_int_equal(C(t)->arp_request_out, 1);
    assert_int_equal(C(t)->arp_entries_expired, 0);
    assert_int_equal(C(t)->udp_out, 31);
    /* an entry nobody uses is forgotten a while after going STALE */
    t->now += 200 * TERN_NS_PER_SEC;
    th_poll(t);
    assert_int_equal(C(t)->arp_entries_expired, 1);
    assert_int_equal(th_free(t), 0);
}

/* The subnet 198.18.0.0/15 on-link, a small cache. */
static void flood_cfg(tern_config *c)
{
    c->prefix_len = 15;
    c->arp_entries = 16;
}

static uint32_t flood_ip(uint32_t i)
{
    return TERN_IP4(198, 19, 0, 0) + 1 + i % 65000;
}

/* A live peer learned from its request and in use */
static void peer_in_use(th *t)
{
    uint8_t f[64];
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP));
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
    tern_flush(t->st);
}

/* Sends to a peer leave at once to its MAC, with no ARP. */
static void assert_peer_direct(th *t)
{
    th_clear(t);
    uint64_t req = C(t)->arp_request_out;
    assert_int_equal(tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "y", 1), 0);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_int_equal(th_rd16(t->out[0] + 12), 0x0800);
    assert_memory_equal(t->out[0], TH_PEER_MAC, 6);
    assert_int_equal(C(t)->arp_request_out, req);
}

/* Traffic to thousands of unresolvable addresses (what a spoofed SYN
 * flood makes: a SYN-ACK to each source) never evicts a REACHABLE entry
 * in use, keeps the INCOMPLETE entries and the queued frames bounded, and
 * sends at most ~100 broadcast requests a second overall. */
static void test_flood_keeps_live_peer(void **state)
{
    (void)state;
    th *t = th_new(flood_cfg);
    peer_in_use(t);
    uint32_t n = 0;
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 2000; i++, n++)
            tern_udp_send(t->st, 1, A4(flood_ip(n)), 9, "s", 1);
        tern_flush(t->st);
        assert_peer_direct(t);
        assert_true(t->bufs_out <= 64);            /* cfg.arp_pending */
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
    }
    const tern_counters *c = C(t);
    /* 100 at once, then 100 a second (11 s of token time), with margin */
    assert_true(c->arp_request_out >= 100);
    assert_true(c->arp_request_out <= 1300);
    assert_true(c->arp_request_limited > 0);
    assert_true(c->arp_evicted + c->arp_cache_full >= 19000);
    assert_int_equal(c->arp_evicted_resolved, 0);   /* unresolved ones only */
    assert_true(c->arp_pending_expired > 0);
    /* the flood's entries fail and go; the peer stays */
    for (int i = 0; i < 5; i++) {
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
    }
    assert_true(C(t)->arp_resolve_failed > 0);
    assert_peer_direct(t);
    assert_int_equal(th_free(t), 0);
}

/* At most half the table is INCOMPLETE: a new address that finds only
 * resolved entries in its probe window is refused, not resolved. */
static void test_incomplete_bound(void **state)
{
    (void)state;
    th *t = th_new(flood_cfg);
    uint8_t f[64];
    /* 8 learned peers (not yet used) */
    for (uint32_t i = 0; i < 8; i++) {
        uint8_t mac[6] = {2, 9, 0, 0, 0, (uint8_t)i};
        th_input(t, f, th_arp(f, 1, mac, TERN_IP4(198, 18, 5, 1) + i, ZERO, TH_IP));
        tern_udp_send(t->st, 1, A4(TERN_IP4(198, 18, 5, 1) + i), 2, "u", 1);
    }
    for (uint32_t i = 0; i < 200; i++)
        tern_udp_send(t->st, 1, A4(flood_ip(i)), 9, "s", 1);
    tern_flush(t->st);
    /* 16 slots: 8 in use stay, the flood shares the other 8 */
    assert_true(C(t)->arp_evicted + C(t)->arp_cache_full >= 192);
    th_clear(t);
    for (uint32_t i = 0; i < 8; i++)
        tern_udp_send(t->st, 1, A4(TERN_IP4(198, 18, 5, 1) + i), 2, "u", 1);
    tern_flush(t->st);
    assert_int_equal(t->nout, 8);
    for (unsigned i = 0; i < t->nout; i++)
        assert_int_equal(th_rd16(t->out[i] + 12), 0x0800);
    /* the INCOMPLETE ones left fail: at most 8 of them */
    th_advance_us(t, 5000000);
    assert_true(C(t)->arp_resolve_failed >= 1);
    assert_true(C(t)->arp_resolve_failed <= 8);
    assert_int_equal(th_free(t), 0);
}

static void eight_entries(tern_config *c) { c->arp_entries = 8; }

/* One probe window covers this whole table: eviction takes an INCOMPLETE
 * entry first, then a learned one never used, then a STALE one. */
static void test_eviction_order(void **state)
{
    (void)state;
    th *t = th_new(eight_entries);
    uint8_t f[64];
    /* the peer: learned, used, then STALE */
    peer_in_use(t);
    t->now += 61 * TERN_NS_PER_SEC;
    th_poll(t);
    /* 7 learned entries, never used, fill the table */
    for (uint32_t i = 0; i < 7; i++) {
        uint8_t mac[6] = {2, 8, 0, 0, 0, (uint8_t)i};
        th_input(t, f, th_arp(f, 1, mac, TERN_IP4(198, 18, 0, 50) + i, ZERO, TH_IP));
    }
    assert_int_equal(C(t)->arp_evicted, 0);
    uint32_t gen = t->st->arp_gen;
    /* one unresolvable address: takes a never-used slot, not the peer's */
    tern_udp_send(t->st, 1, A4(TERN_IP4(198, 18, 0, 99)), 9, "s", 1);
    assert_int_equal(C(t)->arp_evicted, 1);
    assert_int_equal(C(t)->arp_evicted_resolved, 1);
    /* a new learned sender: takes the INCOMPLETE slot (dropping its frame) */
    uint8_t mac[6] = {2, 8, 0, 0, 1, 0};
    th_input(t, f, th_arp(f, 1, mac, TERN_IP4(198, 18, 0, 70), ZERO, TH_IP));
    assert_int_equal(C(t)->arp_evicted, 2);
    assert_int_equal(C(t)->arp_evicted_resolved, 1);   /* INCOMPLETE */
    assert_int_equal(C(t)->arp_pending_expired, 1);
    /* 6 more: the never-used ones go, the STALE peer in use stays */
    for (uint32_t i = 0; i < 6; i++) {
        uint8_t m[6] = {2, 8, 0, 0, 2, (uint8_t)i};
        th_input(t, f, th_arp(f, 1, m, TERN_IP4(198, 18, 0, 80) + i, ZERO, TH_IP));
    }
    assert_int_equal(C(t)->arp_evicted, 8);
    assert_int_equal(C(t)->arp_evicted_resolved, 7);
    /* nothing went to what was evicted: no conn re-reads its MAC */
    assert_int_equal(t->st->arp_gen, gen);
    th_clear(t);
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
    tern_flush(t->st);
    assert_int_equal(th_rd16(t->out[t->nout - 1] + 12), 0x0800);
    assert_memory_equal(t->out[t->nout - 1], TH_PEER_MAC, 6);
    assert_int_equal(th_free(t), 0);
}

static void test_static(void **state)
{
    (void)state;
    th *t = th_new(flood_cfg);
    static const uint8_t smac[6] = {2, 0x55, 0, 0, 0, 1};
    uint8_t f[64];
    assert_int_equal(tern_neigh_add_static(t->st, 0, smac), -TERN_EINVAL);
    assert_int_equal(tern_neigh_add_static(t->st, TERN_IP4(224, 0, 0, 1), smac),
                     -TERN_EINVAL);
    assert_int_equal(tern_neigh_add_static(t->st, TH_IP, smac), -TERN_EINVAL);
    assert_int_equal(tern_neigh_add_static(t->st, TH_PEER_IP, eth_bcast_mac()),
                     -TERN_EINVAL);
    /* a frame waiting for resolution leaves when the static entry comes */
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "w", 1);
    assert_int_equal(tern_neigh_add_static(t->st, TH_PEER_IP, smac), 0);
    tern_flush(t->st);
    th_clear(t);
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_memory_equal(t->out[0], smac, 6);
    assert_int_equal(C(t)->udp_out, 2);
    /* the wire cannot change it; time does not expire it */
    th_input(t, f, th_arp(f, 2, TH_PEER_MAC, TH_PEER_IP, TH_MAC, TH_IP));
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP));
    for (int i = 0; i < 300; i++) {
        t->now += TERN_NS_PER_SEC;
        th_poll(t);
    }
    th_clear(t);
    uint64_t req = C(t)->arp_request_out;
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_memory_equal(t->out[0], smac, 6);
    assert_int_equal(C(t)->arp_request_out, req);
    /* nor a flood */
    for (uint32_t i = 0; i < 5000; i++)
        tern_udp_send(t->st, 1, A4(flood_ip(i)), 9, "s", 1);
    th_clear(t);
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
    tern_flush(t->st);
    assert_memory_equal(t->out[t->nout - 1], smac, 6);
    /* deleted: resolved by ARP again */
    assert_int_equal(tern_neigh_del(t->st, TH_PEER_IP), 0);
    assert_int_equal(tern_neigh_del(t->st, TH_PEER_IP), -TERN_EINVAL);
    th_advance_us(t, 5000000);
    th_clear(t);
    tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_int_equal(th_rd16(t->out[0] + 12), 0x0806);
    th_input(t, f, th_arp(f, 2, TH_PEER_MAC, TH_PEER_IP, TH_MAC, TH_IP));
    /* a table of statics: the 17th has nowhere to go */
    int refused = 0;
    for (uint32_t i = 0; i < 17; i++)
        refused += tern_neigh_add_static(t->st, TERN_IP4(198, 18, 7, 1) + i,
                                         smac) == -TERN_ENOMEM;
    assert_true(refused >= 1);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reply_to_request),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_foreign_traffic_not_learned),
        cmocka_unit_test(test_pending_order),
        cmocka_unit_test(test_retry_and_give_up),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_stale_probe_unanswered),
        cmocka_unit_test(test_stale_probe_answered),
        cmocka_unit_test(test_flood_keeps_live_peer),
        cmocka_unit_test(test_incomplete_bound),
        cmocka_unit_test(test_eviction_order),
        cmocka_unit_test(test_static),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
