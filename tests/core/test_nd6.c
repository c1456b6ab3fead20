/* Neighbor Discovery (RFC 4861), DAD (RFC 4862), router advertisements
 * and MLD reports: the neighbor cache's states and bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th6.h"

#define C(t) tern_get_counters((t)->st)
#define SEC (TERN_NS_PER_SEC / 1000)    /* th_advance_us units per second */

static const uint8_t PEER_MAC2[6] = {2, 0, 0, 0, 0, 0x11};
static const uint8_t ALL_NODES[16] = {0xff, 2, [15] = 1};

/* The solicited-node group of the peer's global address. */
static const uint8_t PEER_SN[16] = {0xff, 2, [11] = 1, [12] = 0xff, [15] = 1};

static void check_ns(const uint8_t *o, size_t len, const uint8_t *dst,
                     const uint8_t *target, int dad)
{
    assert_int_equal(th_rd16(o + 12), 0x86dd);
    assert_int_equal(o[21], 255);
    assert_memory_equal(o + 38, dst, 16);
    assert_int_equal(o[54], 135);
    assert_memory_equal(o + 62, target, 16);
    if (dad) {
        static const uint8_t zero[16];
        assert_memory_equal(o + 22, zero, 16);
        assert_int_equal(len, 78);               /* no address option */
    } else {
        assert_int_equal(len, 86);
        assert_int_equal(o[78], 1);
        assert_memory_equal(o + 80, TH_MAC, 6);
    }
    assert_true(th6_csum_ok(o, len));
}

static void test_resolve_and_queue(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    uint8_t f[256];
    /* 70 requests from an unknown peer: the replies wait, bounded (3/4
     * of the 64 pending slots for one address) */
    for (int i = 0; i < 70; i++)
        th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, (uint16_t)i, 4));
    assert_int_equal(t->nout, 1);
    const uint8_t mac[6] = {0x33, 0x33, 0xff, 0, 0, 1};
    assert_memory_equal(t->out[0], mac, 6);
    check_ns(t->out[0], t->out_len[0], PEER_SN, TH6_PEER, 0);
    assert_int_equal(C(t)->nd_pending_full, 70 - 48);
    th_clear(t);
    th_input(t, f, th6_na(f, TH6_PEER, TH6_IP, TH6_PEER, 0x60, TH_PEER_MAC));
    assert_int_equal(t->nout, 48);
    for (unsigned i = 0; i < t->nout; i++) {
        assert_memory_equal(t->out[i], TH_PEER_MAC, 6);
        assert_int_equal(t->out[i][54], 129);
    }
    assert_int_equal(th_free(t), 0);
}

static void test_resolve_fails(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    uint8_t f[256];
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 1, 4));
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 2, 4));
    for (int i = 0; i < 5; i++)
        th_advance_us(t, SEC);
    /* three solicitations a second apart, then the frames go */
    assert_int_equal(C(t)->nd_ns_out, 3);
    assert_int_equal(C(t)->nd_resolve_failed, 1);
    assert_int_equal(C(t)->nd_pending_expired, 2);
    for (unsigned i = 0; i < t->nout; i++)
        assert_int_equal(t->out[i][54], 135);
    assert_int_equal(th_free(t), 0);
}

static void test_stale_delay_probe(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    uint8_t f[256];
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 1, 4));
    th_input(t, f, th6_na(f, TH6_PEER, TH6_IP, TH6_PEER, 0x60, TH_PEER_MAC));
    th_clear(t);
    th_advance_us(t, 31 * SEC);          /* REACHABLE -> STALE */
    assert_int_equal(t->nout, 0);
    /* used while STALE: sent at once, DELAY, then a unicast probe */
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 2, 4));
    assert_int_equal(t->nout, 1);
    assert_int_equal(t->out[0][54], 129);
    th_clear(t);
    th_advance_us(t, 4 * SEC);
    assert_int_equal(t->nout, 0);
    th_advance_us(t, SEC + SEC / 2);
    assert_int_equal(t->nout, 1);
    assert_memory_equal(t->out[0], TH_PEER_MAC, 6);
    check_ns(t->out[0], t->out_len[0], TH6_PEER, TH6_PEER, 0);
    th_clear(t);
    /* answered: REACHABLE again, no more probes */
    th_input(t, f, th6_na(f, TH6_PEER, TH6_IP, TH6_PEER, 0x40, NULL));
    th_advance_us(t, 10 * SEC);
    assert_int_equal(t->nout, 0);
    /* stale again, used, probed three times unanswered: forgotten */
    th_advance_us(t, 25 * SEC);
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 3, 4));
    for (int i = 0; i < 10; i++)
        th_advance_us(t, SEC);
    assert_int_equal(C(t)->nd_resolve_failed, 1);
    th_clear(t);
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 4, 4));
    assert_int_equal(t->nout, 1);
    assert_int_equal(t->out[0][54], 135);     /* asks anew */
    assert_int_equal(th_free(t), 0);
}

static void test_ns_answered(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    uint8_t f[256];
    th_input(t, f, th6_ns(f, TH6_PEER, TH6_IP, TH6_IP, TH_PEER_MAC));
    assert_int_equal(t->nout, 1);
    const uint8_t *o = t->out[0];
    assert_memory_equal(o, TH_PEER_MAC, 6);
    assert_int_equal(o[54], 136);
    assert_int_equal(o[58], 0x60);                /* solicited, override */
    assert_memory_equal(o + 22, TH6_IP, 16);
    assert_memory_equal(o + 38, TH6_PEER, 16);
    assert_memory_equal(o + 62, TH6_IP, 16);
    assert_int_equal(o[78], 2);
    assert_memory_equal(o + 80, TH_MAC, 6);
    assert_true(th6_csum_ok(o, t->out_len[0]));
    th_clear(t);
    /* to the solicited-node group (its MAC accepted) */
    static const uint8_t sn[16] = {0xff, 2, [11] = 1, [12] = 0xff, [15] = 2};
    th_input(t, f, th6_ns(f, TH6_PEER, sn, TH6_IP, TH_PEER_MAC));
    assert_int_equal(t->nout, 1);
    th_clear(t);
    /* not from the link (hop limit), not our target */
    size_t n = th6_ns(f, TH6_PEER, TH6_IP, TH6_IP, TH_PEER_MAC);
    f[21] = 64;
    th_input(t, f, n);
    assert_int_equal(C(t)->nd_drop_bad, 1);
    th_input(t, f, th6_ns(f, TH6_PEER, TH6_IP, TH6_PEER, TH_PEER_MAC));
    assert_int_equal(C(t)->ip6_drop_not_ours, 1);
    assert_int_equal(t->nout, 0);
    /* the peer moves to another MAC: an override NA, then the replies
     * follow it */
    th_input(t, f, th6_na(f, TH6_PEER, ALL_NODES, TH6_PEER, 0x20, PEER_MAC2));
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 1, 4));
    assert_int_equal(t->nout, 1);
    assert_memory_equal(t->out[0], PEER_MAC2, 6);
    /* a non-override NA with another MAC does not move it */
    th_clear(t);
    th_input(t, f, th6_na(f, TH6_PEER, ALL_NODES, TH6_PEER, 0, TH_PEER_MAC));
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 2, 4));
    assert_memory_equal(t->out[0], PEER_MAC2, 6);
    /* a solicited NA to a group is invalid */
    th_input(t, f, th6_na(f, TH6_PEER, ALL_NODES, TH6_PEER, 0x40, TH_PEER_MAC));
    assert_int_equal(C(t)->nd_drop_bad, 2);
    assert_int_equal(th_free(t), 0);
}

static void dad_on(tern_config *c) { c->ip6_no_dad = 0; }

static void test_dad_ok(void **state)
{
    (void)state;
    th *t = th6_new(dad_on);
    uint8_t f[256];
    th_poll(t);
    /* an MLDv2 report of both solicited-node groups (the same one here:
     * both addresses end in ::2), then DAD for both addresses */
    assert_int_equal(t->nout, 3);
    assert_int_equal(t->out[0][14 + 6], 0);            /* hop-by-hop */
    assert_int_equal(t->out[0][21], 1);
    assert_int_equal(t->out[0][62], 143);
    assert_int_equal(th_rd16(t->out[0] + 68), 1);       /* one record */
    static const uint8_t sn[16] = {0xff, 2, [11] = 1, [12] = 0xff, [15] = 2};
    check_ns(t->out[1], t->out_len[1], sn, TH6_LL, 1);
    check_ns(t->out[2], t->out_len[2], sn, TH6_IP, 1);
    th_clear(t);
    /* tentative: takes no traffic */
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 1, 4));
    assert_int_equal(C(t)->ip6_drop_tentative, 1);
    th_advance_us(t, 2 * SEC);
    assert_int_equal(C(t)->nd_dad_ok, 2);
    th_clear(t);
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 2, 4));
    assert_int_equal(C(t)->icmp6_echo_in, 1);
    assert_int_equal(t->out[0][54], 135);     /* resolving the peer */
    assert_int_equal(th_free(t), 0);
}

static void test_dad_conflict(void **state)
{
    (void)state;
    th *t = th6_new(dad_on);
    uint8_t f[256];
    static const uint8_t zero[16];
    static const uint8_t sn[16] = {0xff, 2, [11] = 1, [12] = 0xff, [15] = 2};
    th_poll(t);
    /* someone else holds the global address; another node tests the
     * link-local one at the same time */
    th_input(t, f, th6_na(f, TH6_IP, ALL_NODES, TH6_IP, 0x20, PEER_MAC2));
    th_input(t, f, th6_ns(f, zero, sn, TH6_LL, NULL));
    assert_int_equal(C(t)->nd_dad_conflict, 2);
    th_advance_us(t, 2 * SEC);
    assert_int_equal(C(t)->nd_dad_ok, 0);
    th_clear(t);
    th_input(t, f, th6_ping(f, TH6_PEER, TH6_IP, 9, 1, 4));
    assert_int_equal(C(t)->ip6_drop_not_ours, 1);
    assert_int_equal(t->nout, 0);
    assert_int_equal(th_free(t), 0);
}

static void test_dad_answered(void **state)
{
    (void)state;
    /* our address in use: a DAD probe from another node gets an NA to
     * all-nodes */
    th *t = th6_new(NULL);
    uint8_t f[256];
    static const uint8_t zero[16];
    static const uint8_t sn[16] = {0xff, 2, [11] = 1, [12] = 0xff, [15] = 2};
    th_input(t, f, th6_ns(f, zero, sn, TH6_IP, NULL));
    assert_int_equal(t->nout, 1);
    assert_int_equal(t->out[0][54], 136);
    assert_int_equal(t->out[0][58], 0x20);
    assert_memory_equal(t->out[0] + 38, ALL_NODES, 16);
    assert_int_equal(th_free(t), 0);
}

static void accept_ra(tern_config *c) { c->ip6_accept_ra = 1; }

static size_t ra(uint8_t *f, uint16_t life)
{
    uint8_t m[16 + 8 + 32] = {134, 0, 0, 64, 0, 0, 0, 0};
    m[6] = (uint8_t)(life >> 8);
    m[7] = (uint8_t)life;
    uint8_t *o = m + 16;
    o[0] = 1;
    o[1] = 1;
    memcpy(o + 2, PEER_MAC2, 6);
    o += 8;
    o[0] = 3;
    o[1] = 4;
    o[2] = 64;
    o[3] = 0xc0;                         /* on-link, autonomous */
    o[4] = o[5] = o[6] = o[7] = 0xff;    /* valid forever */
    const uint8_t pre[16] = {0x20, 1, 0xd, 0xb8, 0, 2};
    memcpy(o + 16, pre, 16);
    static const uint8_t router[16] = {0xfe, 0x80, [15] = 0x11};
    return th6_icmp(f, router, ALL_NODES, 255, m, sizeof m);
}

static void test_router_advert(void **state)
{
    (void)state;
    th *t = th6_new(accept_ra);
    uint8_t f[256];
    static const uint8_t auto_a[16] = {0x20, 1, 0xd, 0xb8, 0, 2, 0, 0,
                                       0, 0, 0, 0xff, 0xfe, 0, 0, 2};
    static const uint8_t far[16] = {0x20, 1, 0xd, 0xb8, 0, 0x99, [15] = 1};
    th_input(t, f, ra(f, 1800));
    assert_int_equal(C(t)->nd_ra_in, 1);
    th_clear(t);
    /* the autoconf address answers; an off-link peer is reached through
     * the router's MAC from the RA */
    th_input(t, f, th6_ping(f, far, auto_a, 9, 1, 4));
    assert_int_equal(t->nout, 1);
    assert_memory_equal(t->out[0], PEER_MAC2, 6);
    assert_memory_equal(t->out[0] + 22, auto_a, 16);
    assert_memory_equal(t->out[0] + 38, far, 16);
    /* lifetime 0: no default router any more */
    th_clear(t);
    th_input(t, f, ra(f, 0));
    th_input(t, f, th6_ping(f, far, auto_a, 9, 2, 4));
    assert_int_equal(t->nout, 0);
    assert_int_equal(C(t)->ip6_drop_no_route, 1);
    assert_int_equal(th_free(t), 0);
    /* off by default: ignored */
    t = th6_new(NULL);
    th_input(t, f, ra(f, 1800));
    th_input(t, f, th6_ping(f, far, auto_a, 9, 1, 4));
    assert_int_equal(C(t)->ip6_drop_not_ours, 1);
    assert_int_equal(th_free(t), 0);
}

static void test_mld_query(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    uint8_t f[256];
    uint8_t q[28] = {130, 0, 0, 0, 0x03, 0xe8};
    uint8_t pl[8 + 28] = {58, 0, 5, 2, 0, 0, 1, 0};
    memcpy(pl + 8, q, sizeof q);
    /* the ICMPv6 sum over the query behind the hop-by-hop header */
    uint8_t tmp[128];
    th6_icmp(tmp, TH6_PEER_LL, ALL_NODES, 1, q, sizeof q);
    memcpy(pl + 8, tmp + 54, sizeof q);
    th_input(t, f, th6_pkt(f, TH6_PEER_LL, ALL_NODES, 0, 1, pl, sizeof pl));
    assert_int_equal(C(t)->mld_query_in, 1);
    assert_int_equal(t->nout, 1);
    const uint8_t *o = t->out[0];
    static const uint8_t mld2[16] = {0xff, 2, [15] = 0x16};
    assert_memory_equal(o + 38, mld2, 16);
    assert_int_equal(o[62], 143);
    assert_int_equal(th_rd16(o + 68), 1);                /* one record */
    static const uint8_t sn[16] = {0xff, 2, [11] = 1, [12] = 0xff, [15] = 2};
    assert_memory_equal(o + 74, sn, 16);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_and_queue),
        cmocka_unit_test(test_resolve_fails),
        cmocka_unit_test(test_stale_delay_probe),
        cmocka_unit_test(test_ns_answered),
        cmocka_unit_test(test_dad_ok),
        cmocka_unit_test(test_dad_conflict),
        cmocka_unit_test(test_dad_answered),
        cmocka_unit_test(test_router_advert),
        cmocka_unit_test(test_mld_query),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
