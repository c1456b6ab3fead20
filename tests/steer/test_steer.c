/* test_steer.c - the SPSC ring and software steering (src/rt/steer.h).
 *
 *   ring_sizes          powers of two only
 *   ring_order_full     FIFO order, partial enqueue when full, empty
 *   ring_wraps          the 32-bit counters wrap around safely
 *   ring_two_threads    a producer and a consumer thread with random
 *                       bursts: every item arrives exactly once, in order
 *   toeplitz_vector     the hash of a known flow (Microsoft's RSS
 *                       verification example) through a whole frame
 *   same_flow_same_core a 4-tuple always lands on the same core, and on
 *                       the core the stack's RSS port choice expects
 *   spread_16_cores     random tuples spread evenly over 16 cores
 *   special_frames      ARP reply to all, ARP request to core 0, echo reply
 *                       by identifier, ICMP error to the quoted flow's core,
 *                       fragments by addresses
 *   toeplitz6_vector    the same over IPv6 (Microsoft's IPv6 example)
 *   same_flow6_core     an IPv6 4-tuple lands on the core of the Toeplitz
 *                       hash of its 36-byte tuple (the stack's
 *                       rss_queue_of6 input), computed here bit by bit
 *   special_frames6     neighbor advertisement to all (and copied by
 *                       steer_rx), solicitation to core 0, echo reply by
 *                       identifier, ICMPv6 error to the quoted flow's
 *                       core, fragments and extension headers by addresses
 *   rx_and_return       frames handed across cores and their buffers back
 *                       home through the buffer ops; nothing leaks
 *   pending_dirty_settle which cores a step handed frames to, frames
 *                       waiting for a core, reclaim alone, and settle
 *                       empties every ring into its pools
 *   steer_two_threads   two cores on two threads exchanging frames; every
 *                       frame arrives once, in order per flow
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "steer.h"

/* ---------------- ring ---------------- */

static tern_buf *P(uintptr_t v) { return (tern_buf *)v; }

static void ring_sizes(void **state)
{
    (void)state;
    assert_null(steer_ring_create(0));
    assert_null(steer_ring_create(1));
    assert_null(steer_ring_create(3));
    assert_null(steer_ring_create(1000));
    steer_ring *r = steer_ring_create(2);
    assert_non_null(r);
    steer_ring_destroy(r);
    r = steer_ring_create(4096);
    assert_non_null(r);
    steer_ring_destroy(r);
}

static void ring_order_full(void **state)
{
    (void)state;
    steer_ring *r = steer_ring_create(8);
    tern_buf *in[16], *out[16];
    for (uintptr_t i = 0; i < 16; i++)
        in[i] = P(i + 1);
    assert_int_equal(steer_ring_dequeue(r, out, 4), 0); /* empty */
    assert_int_equal(steer_ring_enqueue(r, in, 5), 5);
    assert_int_equal(steer_ring_count(r), 5);
    assert_int_equal(steer_ring_dequeue(r, out, 3), 3);
    assert_ptr_equal(out[0], P(1));
    assert_ptr_equal(out[2], P(3));
    /* 2 left, room for 6: only 6 of 10 go in */
    assert_int_equal(steer_ring_enqueue(r, in + 5, 10), 6);
    assert_int_equal(steer_ring_enqueue(r, in, 1), 0); /* full */
    assert_int_equal(steer_ring_dequeue(r, out, 16), 8);
    for (uintptr_t i = 0; i < 8; i++)
        assert_ptr_equal(out[i], P(i + 4));
    assert_int_equal(steer_ring_dequeue(r, out, 16), 0);
    assert_int_equal(steer_ring_count(r), 0);
    steer_ring_destroy(r);
}

static void ring_wraps(void **state)
{
    (void)state;
    steer_ring *r = steer_ring_create(4);
    /* counters just below 2^32 */
    atomic_store(&r->head, 0xFFFFFFFEu);
    atomic_store(&r->tail, 0xFFFFFFFEu);
    r->head_cache = r->tail_cache = 0xFFFFFFFEu;
    tern_buf *in[4] = {P(1), P(2), P(3), P(4)}, *out[4];
    uintptr_t next = 1, expect = 1;
    for (int round = 0; round < 20; round++) {
        tern_buf *b[3];
        for (int i = 0; i < 3; i++)
            b[i] = P(next++);
        assert_int_equal(steer_ring_enqueue(r, b, 3), 3);
        assert_int_equal(steer_ring_enqueue(r, in, 4), 1); /* one slot */
        next++;  /* P(1) went in as the 4th */
        unsigned k = steer_ring_dequeue(r, out, 4);
        assert_int_equal(k, 4);
        for (int i = 0; i < 3; i++)
            assert_ptr_equal(out[i], P(expect++));
        assert_ptr_equal(out[3], P(1));
        expect++;
    }
    assert_true(atomic_load(&r->head) < 100); /* it did wrap */
    steer_ring_destroy(r);
}

#define STRESS_ITEMS 1000000u

typedef struct stress {
    steer_ring *r;
    uint64_t seed;
    unsigned bad;
} stress;

static unsigned rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (unsigned)(*s >> 11);
}

static void *producer(void *arg)
{
    stress *x = arg;
    uint64_t s = x->seed;
    uintptr_t next = 1;
    tern_buf *b[64];
    while (next <= STRESS_ITEMS) {
        unsigned n = 1 + rnd(&s) % 64;
        if (next + n - 1 > STRESS_ITEMS)
            n = (unsigned)(STRESS_ITEMS - next + 1);
        for (unsigned i = 0; i < n; i++)
            b[i] = P(next + i);
        unsigned put = steer_ring_enqueue(x->r, b, n);
        next += put;   /* the rest is offered again */
    }
    return NULL;
}

static void ring_two_threads(void **state)
{
    (void)state;
    stress x = {.r = steer_ring_create(256), .seed = 0x9e3779b97f4a7c15ull};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, producer, &x), 0);
    uint64_t s = 12345;
    uintptr_t expect = 1;
    tern_buf *b[64];
    while (expect <= STRESS_ITEMS) {
        unsigned k = steer_ring_dequeue(x.r, b, 1 + rnd(&s) % 64);
        for (unsigned i = 0; i < k; i++) {
            if (b[i] != P(expect))
                x.bad++;
            expect++;
        }
    }
    pthread_join(t, NULL);
    assert_int_equal(x.bad, 0);
    assert_int_equal(expect, STRESS_ITEMS + 1);
    assert_int_equal(steer_ring_count(x.r), 0); /* nothing extra */
    steer_ring_destroy(x.r);
}

/* ---------------- frames ---------------- */

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

/* Ethernet + IPv4 (+ 8 bytes of L4) into b. */
static void ip_frame(tern_buf *b, uint8_t proto, uint32_t src, uint32_t dst,
                     uint16_t sport, uint16_t dport, uint16_t frag)
{
    uint8_t *p = b->data;
    memset(p, 0, 64);
    put16(p + 12, 0x0800);
    uint8_t *ip = p + 14;
    ip[0] = 0x45;
    put16(ip + 2, 28);
    put16(ip + 6, frag);
    ip[8] = 64;
    ip[9] = proto;
    put32(ip + 12, src);
    put32(ip + 16, dst);
    put16(ip + 20, sport);
    put16(ip + 22, dport);
    b->len = 14 + 28;
}

static tern_pool *pools[16];
static steer_config cfg;

/* Ethernet + IPv6 (next header nh) + 8 bytes of L4 into b. */
static void ip6_frame(tern_buf *b, uint8_t nh, const uint8_t src[16],
                      const uint8_t dst[16], uint16_t sport, uint16_t dport)
{
    uint8_t *p = b->data;
    memset(p, 0, 128);
    put16(p + 12, 0x86dd);
    uint8_t *ip = p + 14;
    ip[0] = 0x60;
    put16(ip + 4, 8);
    ip[6] = nh;
    ip[7] = 64;
    memcpy(ip + 8, src, 16);
    memcpy(ip + 24, dst, 16);
    put16(ip + 40, sport);
    put16(ip + 42, dport);
    b->len = 14 + 48;
}

/* 2001:db8::x:y */
static void doc6(uint8_t a[16], uint16_t x, uint16_t y)
{
    memset(a, 0, 16);
    put16(a, 0x2001);
    put16(a + 2, 0xdb8);
    put16(a + 12, x);
    put16(a + 14, y);
}

/* The core of (src, dst, sport, dport) as the stack's rss_queue_of6 sees
 * it: Toeplitz over the 36 bytes, then the table of the defaults. */
static unsigned core6_of(const uint8_t src[16], const uint8_t dst[16],
                         uint16_t sp, uint16_t dp)
{
    uint8_t in[36];
    memcpy(in, src, 16);
    memcpy(in + 16, dst, 16);
    put16(in + 32, sp);
    put16(in + 34, dp);
    return cfg.reta[tern_toeplitz(cfg.key, in, 36) & 127];
}

static int setup_pools(void **state)
{
    (void)state;
    for (int i = 0; i < 16; i++)
        pools[i] = tern_pool_create(512, 2048);
    return 0;
}

static int teardown_pools(void **state)
{
    (void)state;
    for (int i = 0; i < 16; i++)
        tern_pool_destroy(pools[i]);
    return 0;
}

static void toeplitz_vector(void **state)
{
    (void)state;
    steer_config_defaults(&cfg, 4);
    steer *s = steer_create(&cfg, pools, NULL, 0);
    assert_non_null(s);
    tern_buf *b = tern_pool_alloc(pools[0]);
    /* 66.9.149.187:2794 -> 161.142.100.80:1766, IPv4/TCP: 0x51ccc178 */
    ip_frame(b, 6, TERN_IP4(66, 9, 149, 187), TERN_IP4(161, 142, 100, 80),
             2794, 1766, 0);
    uint32_t h = 0;
    assert_true(steer_hash(s, b, &h));
    assert_int_equal(h, 0x51ccc178);
    /* 2-tuple (IPv4 only): 0x323e8fc2 */
    ip_frame(b, 1, TERN_IP4(66, 9, 149, 187), TERN_IP4(161, 142, 100, 80),
             8 << 8, 0, 0);
    assert_true(steer_hash(s, b, &h));
    assert_int_equal(h, 0x323e8fc2);
    tern_pool_release(pools[0], b);
    steer_destroy(s);
}

static void same_flow_same_core(void **state)
{
    (void)state;
    steer_config_defaults(&cfg, 8);
    steer *s = steer_create(&cfg, pools, NULL, 0);
    tern_buf *b = tern_pool_alloc(pools[0]);
    uint64_t r = 77;
    for (int i = 0; i < 2000; i++) {
        uint32_t src = rnd(&r), dst = rnd(&r);
        uint16_t sp = (uint16_t)rnd(&r), dp = (uint16_t)rnd(&r);
        ip_frame(b, (i & 1) ? 6 : 17, src, dst, sp, dp, 0);
        unsigned c = steer_core_of(s, b);
        assert_true(c < 8);
        for (int k = 0; k < 3; k++)
            assert_int_equal(steer_core_of(s, b), c);
        /* what the stack's RSS-aware port choice computes (rss.c): the
         * Toeplitz hash of (src, dst, sport, dport) -> reta[h & 127] */
        uint8_t in[12];
        put32(in, src);
        put32(in + 4, dst);
        put16(in + 8, sp);
        put16(in + 10, dp);
        uint32_t h = tern_toeplitz(cfg.key, in, 12);
        assert_int_equal(c, cfg.reta[h & 127]);
    }
    tern_pool_release(pools[0], b);
    steer_destroy(s);
}

static void spread_16_cores(void **state)
{
    (void)state;
    steer_config_defaults(&cfg, 16);
    steer *s = steer_create(&cfg, pools, NULL, 0);
    tern_buf *b = tern_pool_alloc(pools[0]);
    unsigned hist[16] = {0};
    uint64_t r = 4242;
    const unsigned N = 32000;
    for (unsigned i = 0; i < N; i++) {
        ip_frame(b, 6, rnd(&r), TERN_IP4(198, 18, 0, 1), (uint16_t)rnd(&r),
                 80, 0);
        hist[steer_core_of(s, b)]++;
    }
    for (int c = 0; c < 16; c++) {
        /* 2000 expected each; +-15 % is > 6 standard deviations */
        assert_in_range(hist[c], 1700, 2300);
    }
    tern_pool_release(pools[0], b);
    steer_destroy(s);
}

static void special_frames(void **state)
{
    (void)state;
    steer_config_defaults(&cfg, 4);
    steer *s = steer_create(&cfg, pools, NULL, 0);
    tern_buf *b = tern_pool_alloc(pools[0]);
    /* ARP */
    memset(b->data, 0, 64);
    put16(b->data + 12, 0x0806);
    put16(b->data + 20, 1);
    b->len = 42;
    assert_int_equal(steer_core_of(s, b), 0);
    put16(b->data + 20, 2);
    assert_int_equal(steer_core_of(s, b), STEER_TO_ALL);
    /* echo reply with identifier 7 -> core 3 */
    ip_frame(b, 1, TERN_IP4(198, 18, 0, 9), TERN_IP4(198, 18, 0, 1), 0, 0, 0);
    uint8_t *icmp = b->data + 34;
    icmp[0] = 0;
    put16(icmp + 4, 7);
    assert_int_equal(steer_core_of(s, b), 3);
    /* port unreachable quoting our UDP datagram 198.18.0.1:5000 ->
     * 198.18.0.9:53 goes where 198.18.0.9:53 -> 198.18.0.1:5000 goes */
    tern_buf *e = tern_pool_alloc(pools[0]);
    ip_frame(e, 1, TERN_IP4(198, 18, 0, 9), TERN_IP4(198, 18, 0, 1), 0, 0, 0);
    uint8_t *eh = e->data + 34;
    eh[0] = 3;
    eh[1] = 3;
    uint8_t *inner = eh + 8;
    memset(inner, 0, 28);
    inner[0] = 0x45;
    inner[9] = 17;
    put32(inner + 12, TERN_IP4(198, 18, 0, 1));
    put32(inner + 16, TERN_IP4(198, 18, 0, 9));
    put16(inner + 20, 5000);
    put16(inner + 22, 53);
    e->len = 34 + 8 + 28;
    ip_frame(b, 17, TERN_IP4(198, 18, 0, 9), TERN_IP4(198, 18, 0, 1), 53,
             5000, 0);
    unsigned want = steer_core_of(s, b);
    assert_int_equal(steer_core_of(s, e), want);
    /* fragments hash the addresses only: all pieces on one core */
    ip_frame(b, 17, TERN_IP4(198, 18, 0, 9), TERN_IP4(198, 18, 0, 1), 1, 2,
             0x2000);
    unsigned c1 = steer_core_of(s, b);
    ip_frame(b, 17, TERN_IP4(198, 18, 0, 9), TERN_IP4(198, 18, 0, 1), 9, 9,
             185);
    assert_int_equal(steer_core_of(s, b), c1);
    /* not IP: core 0 */
    put16(b->data + 12, 0x88cc);
    assert_int_equal(steer_core_of(s, b), 0);
    tern_pool_release(pools[0], b);
    tern_pool_release(pools[0], e);
    steer_destroy(s);
}

static void toeplitz6_vector(void **state)
{
    (void)state;
    steer_config_defaults(&cfg, 4);
    steer *s = steer_create(&cfg, pools, NULL, 0);
    assert_non_null(s);
    tern_buf *b = tern_pool_alloc(pools[0]);
    /* [3ffe:2501:200:1fff::7]:2794 -> [3ffe:2501:200:3::1]:1766,
     * IPv6/TCP: 0x40207d3d; addresses only: 0x2cc18cd5 */
    uint8_t src[16] = {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x1f, 0xff,
                       0, 0, 0, 0, 0, 0, 0, 7};
    uint8_t dst[16] = {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x00, 0x03,
                       0, 0, 0, 0, 0, 0, 0, 1};
    ip6_frame(b, 6, src, dst, 2794, 1766);
    uint32_t h = 0;
    assert_true(steer_hash(s, b, &h));
    assert_int_equal(h, 0x40207d3d);
    ip6_frame(b, 44, src, dst, 2794, 1766); /* a fragment header */
    assert_true(steer_hash(s, b, &h));
    assert_int_equal(h, 0x2cc18cd5);
    tern_pool_release(pools[0], b);
    steer_destroy(s);
}

static void same_flow6_core(void **state)
{
    (void)state;
    steer_config_defaults(&cfg, 8);
    steer *s = steer_create(&cfg, pools, NULL, 0);
    tern_buf *b = tern_pool_alloc(pools[0]);
    uint64_t r = 99;
    unsigned hist[8] = {0};
    for (int i = 0; i < 2000; i++) {
        uint8_t src[16], dst[16];
        for (int k = 0; k < 16; k += 4) {
            put32(src + k, rnd(&r));
            put32(dst + k, rnd(&r));
        }
        uint16_t sp = (uint16_t)rnd(&r), dp = (uint16_t)rnd(&r);
        ip6_frame(b, (i & 1) ? 6 : 17, src, dst, sp, dp);
        unsigned c = steer_core_of(s, b);
        assert_int_equal(c, core6_of(src, dst, sp, dp));
        hist[c]++;
    }
    for (int c = 0; c < 8; c++) /* 250 expected each: spread, not one core */
        assert_in_range(hist[c], 150, 350);
    tern_pool_release(pools[0], b);
    steer_destroy(s);
}

static void special_frames6(void **state)
{
    (void)state;
    steer_config_defaults(&cfg, 4);
    steer *s = steer_create(&cfg, pools, NULL, 0);
    tern_buf *b = tern_pool_alloc(pools[0]);
    uint8_t peer[16], us[16];
    doc6(peer, 0, 9);
    doc6(us, 0, 1);
    uint8_t *icmp = b->data + 14 + 40;
    /* neighbor advertisement: every core; solicitation: core 0 */
    ip6_frame(b, 58, peer, us, 0, 0);
    icmp[0] = 136;
    assert_int_equal(steer_core_of(s, b), STEER_TO_ALL);
    icmp[0] = 135;
    assert_int_equal(steer_core_of(s, b), 0);
    icmp[0] = 134; /* router advertisement */
    assert_int_equal(steer_core_of(s, b), 0);
    /* echo reply with identifier 7 -> core 3, 9 -> core 1 */
    ip6_frame(b, 58, peer, us, 0, 0);
    icmp[0] = 129;
    put16(icmp + 4, 7);
    assert_int_equal(steer_core_of(s, b), 3);
    put16(icmp + 4, 9);
    assert_int_equal(steer_core_of(s, b), 1);
    /* port unreachable / packet too big quoting our UDP/TCP packet
     * us:5000 -> peer:53 go where peer:53 -> us:5000 goes */
    for (uint8_t proto = 6; proto <= 17; proto += 11)
        for (uint8_t type = 1; type <= 4; type++) {
            tern_buf *e = tern_pool_alloc(pools[0]);
            ip6_frame(e, 58, peer, us, 0, 0);
            uint8_t *eh = e->data + 14 + 40;
            eh[0] = type;
            uint8_t *inner = eh + 8;
            memset(inner, 0, 48);
            inner[0] = 0x60;
            inner[6] = proto;
            memcpy(inner + 8, us, 16);
            memcpy(inner + 24, peer, 16);
            put16(inner + 40, 5000);
            put16(inner + 42, 53);
            e->len = 14 + 40 + 8 + 48;
            unsigned want = core6_of(peer, us, 53, 5000);
            ip6_frame(b, proto, peer, us, 53, 5000);
            assert_int_equal(steer_core_of(s, b), want);
            assert_int_equal(steer_core_of(s, e), want);
            tern_pool_release(pools[0], e);
        }
    /* fragments and extension headers hash the addresses only: every
     * piece, whatever follows, on the core of the 32-byte input */
    uint8_t in[32];
    memcpy(in, peer, 16);
    memcpy(in + 16, us, 16);
    unsigned c2 = cfg.reta[tern_toeplitz(cfg.key, in, 32) & 127];
    unsigned seen_other = 0;
    for (uint16_t port = 1; port < 40; port++) {
        ip6_frame(b, 44, peer, us, port, (uint16_t)(port * 7));
        assert_int_equal(steer_core_of(s, b), c2);
        ip6_frame(b, 0, peer, us, port, (uint16_t)(port * 7)); /* hop-by-hop */
        assert_int_equal(steer_core_of(s, b), c2);
        ip6_frame(b, 17, peer, us, port, (uint16_t)(port * 7));
        seen_other += steer_core_of(s, b) != c2;
    }
    assert_true(seen_other > 0); /* the ports do matter without them */
    /* truncated or not version 6: core 0 */
    ip6_frame(b, 6, peer, us, 1, 2);
    b->len = 14 + 39;
    assert_int_equal(steer_core_of(s, b), 0);
    ip6_frame(b, 6, peer, us, 1, 2);
    b->data[14] = 0x45;
    assert_int_equal(steer_core_of(s, b), 0);
    tern_pool_release(pools[0], b);
    steer_destroy(s);
}

/* steer_rx copies a neighbor advertisement to the other core. */
static steer *two_cores(tern_buf_ops *ops1);

static void na_copied6(void **state)
{
    (void)state;
    tern_buf_ops ops1;
    steer *s = two_cores(&ops1);
    tern_buf *na = tern_pool_alloc(pools[0]);
    uint8_t peer[16], us[16];
    doc6(peer, 0, 9);
    doc6(us, 0, 1);
    ip6_frame(na, 58, peer, us, 0, 0);
    na->data[14 + 40] = 136;
    tern_buf *in[1] = {na}, *out[8];
    assert_int_equal(steer_rx(s, 0, in, 1, out, 8), 1);
    assert_ptr_equal(out[0], na);
    assert_int_equal(steer_rx(s, 1, NULL, 0, out, 8), 1);
    assert_ptr_not_equal(out[0], na);
    assert_int_equal(out[0]->len, na->len);
    assert_memory_equal(out[0]->data, na->data, na->len);
    out[0]->refs = 0;
    ops1.free(ops1.ctx, out[0]); /* core 1 is done: the copy goes home */
    tern_pool_release(pools[0], na);
    assert_int_equal(steer_get_stats(s, 0)->broadcast, 1);
    steer_rx(s, 0, NULL, 0, out, 8);
    steer_destroy(s);
    assert_int_equal(tern_pool_available(pools[0]), 512);
}

/* A frame of flow `flow` (its core known) from `pool`, tagged with seq. */
static tern_buf *flow_frame(tern_pool *pool, unsigned flow, uint32_t seq)
{
    tern_buf *b = tern_pool_alloc(pool);
    if (!b)
        return NULL;
    ip_frame(b, 17, TERN_IP4(198, 18, 1, flow & 255), TERN_IP4(198, 18, 0, 1),
             (uint16_t)(1000 + flow), 7777, 0);
    put32(b->data + 42, seq);
    put32(b->data + 46, flow);
    b->len = 50;
    return b;
}

/* Steering over two cores, and core 1's buffer ops. */
static steer *two_cores(tern_buf_ops *ops1)
{
    steer_config_defaults(&cfg, 2);
    steer *s = steer_create(&cfg, pools, NULL, 0);
    *ops1 = steer_buf_ops(s, 1);
    return s;
}

static void rx_and_return(void **state)
{
    (void)state;
    tern_buf_ops ops1;
    steer *s = two_cores(&ops1);
    tern_buf *in[32], *out[64];
    unsigned to1 = 0, got1 = 0, kept0 = 0;
    for (int round = 0; round < 50; round++) {
        unsigned n = 0;
        for (unsigned f = 0; f < 32; f++) {
            in[n] = flow_frame(pools[0], f, (uint32_t)round);
            if (steer_core_of(s, in[n]) == 1)
                to1++;
            n++;
        }
        unsigned k = steer_rx(s, 0, in, n, out, 64);
        for (unsigned i = 0; i < k; i++) {
            assert_int_equal(steer_core_of(s, out[i]), 0);
            tern_pool_release(pools[0], out[i]);
        }
        kept0 += k;
        k = steer_rx(s, 1, NULL, 0, out, 64);
        for (unsigned i = 0; i < k; i++) {
            assert_int_equal(steer_core_of(s, out[i]), 1);
            assert_false(tern_pool_owns(pools[1], out[i]));
            /* core 1's stack frees it through its ops */
            out[i]->refs = 0;
            ops1.free(ops1.ctx, out[i]);
        }
        got1 += k;
    }
    assert_int_equal(got1, to1);
    assert_int_equal(kept0 + got1, 50 * 32);
    assert_true(to1 > 0 && kept0 > 0);
    /* core 0 takes its buffers back at its next step */
    steer_rx(s, 0, NULL, 0, out, 64);
    assert_int_equal(tern_pool_available(pools[0]), 512);
    assert_int_equal(tern_pool_available(pools[1]), 512);
    const steer_stats *st1 = steer_get_stats(s, 1);
    assert_int_equal(st1->received, to1);
    assert_int_equal(st1->returned, to1);
    /* ARP reply: core 1 gets a copy, core 0 keeps the frame */
    tern_buf *a = tern_pool_alloc(pools[0]);
    memset(a->data, 0, 64);
    put16(a->data + 12, 0x0806);
    put16(a->data + 20, 2);
    a->len = 42;
    assert_int_equal(steer_rx(s, 0, &a, 1, out, 64), 1);
    assert_ptr_equal(out[0], a);
    tern_pool_release(pools[0], a);
    assert_int_equal(steer_rx(s, 1, NULL, 0, out, 64), 1);
    assert_int_equal(out[0]->len, 42);
    assert_ptr_not_equal(out[0], a);
    out[0]->refs = 0;
    ops1.free(ops1.ctx, out[0]);
    steer_rx(s, 0, NULL, 0, out, 64);
    assert_int_equal(tern_pool_available(pools[0]), 512);
    steer_destroy(s);
}

/* What the runtime's sleep/wake protocol and its end rely on: the cores a
 * step handed frames to, whether frames wait for a core, taking returned
 * buffers back alone, and emptying every ring after the run. */
static void pending_dirty_settle(void **state)
{
    (void)state;
    tern_buf_ops ops1;
    steer *s = two_cores(&ops1);
    tern_buf *in[32], *out[64];
    unsigned n = 0, for1 = 0;
    for (unsigned f = 0; f < 32; f++) {
        in[n] = flow_frame(pools[0], f, 0);
        for1 += steer_core_of(s, in[n]) == 1;
        n++;
    }
    assert_true(for1 > 0 && for1 < 32);
    assert_false(steer_pending(s, 1));
    assert_int_equal(steer_take_dirty(s, 0), 0);
    unsigned k = steer_rx(s, 0, in, n, out, 64);
    assert_int_equal(k, 32 - for1);
    for (unsigned i = 0; i < k; i++)
        tern_pool_release(pools[0], out[i]);
    assert_int_equal(steer_take_dirty(s, 0), 1u << 1);
    assert_int_equal(steer_take_dirty(s, 0), 0);   /* taken */
    assert_true(steer_pending(s, 1));
    assert_false(steer_pending(s, 0));
    /* core 1 takes one frame and frees it: it goes home on core 0's
     * reclaim, without a steer_rx */
    assert_int_equal(steer_rx(s, 1, NULL, 0, out, 1), 1);
    assert_true(steer_pending(s, 1));
    out[0]->refs = 0;
    ops1.free(ops1.ctx, out[0]);
    unsigned before = tern_pool_available(pools[0]);
    steer_reclaim(s, 0);
    assert_int_equal(tern_pool_available(pools[0]), before + 1);
    /* the rest stays in the ring until the run ends: settle */
    assert_int_equal(tern_pool_available(pools[0]), 512 - (for1 - 1));
    steer_settle(s);
    assert_false(steer_pending(s, 1));
    assert_int_equal(tern_pool_available(pools[0]), 512);
    assert_int_equal(tern_pool_available(pools[1]), 512);
    steer_destroy(s);
}

/* Two cores, each on its own thread, each receiving frames of all flows
 * from its own "queue" and processing its own flows in order. */
#define X_ROUNDS 3000u
#define X_FLOWS 16u

typedef struct xcore {
    steer *s;
    unsigned me;
    uint32_t next_seq[2][X_FLOWS];   /* per source core, per flow */
    unsigned got, bad;
    _Atomic unsigned *done;
} xcore;

static void *xcore_run(void *arg)
{
    xcore *x = arg;
    tern_buf_ops ops = steer_buf_ops(x->s, x->me);
    tern_buf *in[X_FLOWS], *out[64];
    unsigned round = 0;
    const unsigned expect = 2 * X_ROUNDS * X_FLOWS; /* frames system-wide */
    for (;;) {
        unsigned n = 0;
        /* at most ~8 rounds in flight system-wide: rings never fill, so
         * every frame must arrive */
        if (round < X_ROUNDS &&
            round * 2 * X_FLOWS < atomic_load(x->done) + 8 * 2 * X_FLOWS) {
            for (unsigned f = 0; f < X_FLOWS; f++) {
                /* flows are told apart by source core too (dst port) */
                tern_buf *b = flow_frame(pools[x->me], f, round);
                if (!b)
                    break;
                put32(b->data + 50, x->me);
                b->len = 54;
                in[n++] = b;
            }
            if (n == X_FLOWS)
                round++;
            else
                for (unsigned i = 0; i < n; i++)
                    tern_pool_release(pools[x->me], in[i]);
            if (n != X_FLOWS)
                n = 0;
        }
        unsigned k = steer_rx(x->s, x->me, in, n, out, 64);
        for (unsigned i = 0; i < k; i++) {
            const uint8_t *p = out[i]->data;
            uint32_t seq = (uint32_t)p[42] << 24 | (uint32_t)p[43] << 16 |
                           (uint32_t)p[44] << 8 | p[45];
            uint32_t flow = p[49], src = p[53];
            if (steer_core_of(x->s, out[i]) != x->me || src > 1 ||
                flow >= X_FLOWS || seq != x->next_seq[src][flow])
                x->bad++;
            else
                x->next_seq[src][flow]++;
            x->got++;
            out[i]->refs = 0;
            ops.free(ops.ctx, out[i]);
        }
        atomic_fetch_add(x->done, k);
        if (atomic_load(x->done) >= expect && round >= X_ROUNDS)
            break;
    }
    /* take the last returns home */
    steer_rx(x->s, x->me, NULL, 0, out, 64);
    return NULL;
}

static void steer_two_threads(void **state)
{
    (void)state;
    steer_config_defaults(&cfg, 2);
    cfg.ring_size = 1024;
    steer *s = steer_create(&cfg, pools, NULL, 0);
    _Atomic unsigned done = 0;
    xcore x[2];
    memset(x, 0, sizeof x);
    pthread_t t[2];
    for (unsigned i = 0; i < 2; i++) {
        x[i].s = s;
        x[i].me = i;
        x[i].done = &done;
        assert_int_equal(pthread_create(&t[i], NULL, xcore_run, &x[i]), 0);
    }
    for (unsigned i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (unsigned i = 0; i < 2; i++)
        assert_int_equal(steer_get_stats(s, i)->ring_drops, 0);
    assert_int_equal(x[0].bad + x[1].bad, 0);
    assert_int_equal(x[0].got + x[1].got, 2 * X_ROUNDS * X_FLOWS);
    for (unsigned i = 0; i < 2; i++)
        for (unsigned src = 0; src < 2; src++)
            for (unsigned f = 0; f < X_FLOWS; f++)
                if (x[i].next_seq[src][f])
                    assert_int_equal(x[i].next_seq[src][f], X_ROUNDS);
    steer_rx(s, 0, NULL, 0, (tern_buf *[64]){0}, 64);
    steer_rx(s, 1, NULL, 0, (tern_buf *[64]){0}, 64);
    assert_int_equal(tern_pool_available(pools[0]), 512);
    assert_int_equal(tern_pool_available(pools[1]), 512);
    steer_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_sizes),
        cmocka_unit_test(ring_order_full),
        cmocka_unit_test(ring_wraps),
        cmocka_unit_test(ring_two_threads),
        cmocka_unit_test(toeplitz_vector),
        cmocka_unit_test(same_flow_same_core),
        cmocka_unit_test(spread_16_cores),
        cmocka_unit_test(special_frames),
        cmocka_unit_test(toeplitz6_vector),
        cmocka_unit_test(same_flow6_core),
        cmocka_unit_test(special_frames6),
        cmocka_unit_test(na_copied6),
        cmocka_unit_test(rx_and_return),
        cmocka_unit_test(pending_dirty_settle),
        cmocka_unit_test(steer_two_threads),
    };
    return cmocka_run_group_tests(tests, setup_pools, teardown_pools);
}
