/* Path MTU from ICMP "fragmentation needed" (RFC 1191, RFC 5927): the
 * quoted sequence number must be in flight, and no MTU takes a connection
 * below the floor of 552 bytes. And the IPv4 IDs of TCP segments: a
 * counter per connection, not one the whole stack shares (RFC 7739). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"

#define C(t) tern_get_counters((t)->st)

static uint8_t payload[8000];

/* An ICMP frag-needed from a router at 198.18.0.254 quoting the first 28
 * bytes of the IP datagram `ipd` (one we sent), with seq replaced. */
static size_t frag_needed(uint8_t *f, const uint8_t *ipd, uint32_t seq,
                          uint16_t mtu)
{
    static const uint8_t rmac[6] = {2, 0, 0, 0, 0, 0xfe};
    size_t n = th_eth(f, TH_MAC, rmac, 0x0800);
    n += th_ip4(f + n, TERN_IP4(198, 18, 0, 254), TH_IP, 1, 8 + 28);
    uint8_t *m = f + n;
    memset(m, 0, 8);
    m[0] = 3;
    m[1] = 4;
    m[6] = (uint8_t)(mtu >> 8);
    m[7] = (uint8_t)mtu;
    memcpy(m + 8, ipd, 28);
    th_put32(m + 8 + 24, seq);
    uint16_t s = th_csum_ref(m, 36, 0);
    m[2] = (uint8_t)(s >> 8);
    m[3] = (uint8_t)s;
    return n + 36;
}

/* The largest IP datagram among the TCP frames captured. */
static uint32_t max_ip_len(th *t)
{
    uint32_t m = 0;
    for (unsigned i = 0; i < t->nout; i++) {
        if (th_rd16(t->out[i] + 12) != 0x0800 || t->out[i][14 + 9] != 6)
            continue;
        uint32_t l = th_rd16(t->out[i] + 16);
        if (l > m)
            m = l;
    }
    return m;
}

static void test_pmtu_floor_and_quote(void **state)
{
    (void)state;
    th *t;
    peer p;
    struct tern_conn *c = peer_connected(&t, &p, true);
    tern_tcp_info info;
    tern_tcp_get_info(t->st, c, &info);
    uint32_t mss0 = info.mss;
    assert_true(mss0 > 1000);
    /* data in flight */
    assert_int_equal(tern_tcp_send(t->st, c, payload, 6000), 6000);
    th_poll(t);
    assert_true(t->nout >= 2);
    uint8_t seg[64];
    memcpy(seg, t->out[0] + 14, 28);
    uint32_t una = th_rd32(seg + 24);
    uint8_t f[128];

    /* a quote whose sequence number is not in flight: ignored, counted */
    th_input(t, f, frag_needed(f, seg, una - 5000, 1000));
    th_input(t, f, frag_needed(f, seg, una + 100000, 1000));
    assert_int_equal(C(t)->icmp_drop_quote_seq, 2);
    tern_tcp_get_info(t->st, c, &info);
    assert_int_equal(info.mss, mss0);

    /* a good one lowers the MSS and resends at the new size */
    th_clear(t);
    th_input(t, f, frag_needed(f, seg, una, 1000));
    tern_tcp_get_info(t->st, c, &info);
    assert_int_equal(info.mss, 1000 - 40 - 12);
    assert_true(t->nout >= 1);
    assert_true(max_ip_len(t) <= 1000);

    /* MTU 100 (and 0): raised to the floor, 552 */
    th_clear(t);
    th_input(t, f, frag_needed(f, seg, una, 100));
    assert_int_equal(C(t)->icmp_pmtu_floored, 1);
    tern_tcp_get_info(t->st, c, &info);
    assert_int_equal(info.mss, 552 - 40 - 12);
    assert_int_equal(max_ip_len(t), 552);
    th_input(t, f, frag_needed(f, seg, una, 0));
    assert_int_equal(C(t)->icmp_pmtu_floored, 2);
    tern_tcp_get_info(t->st, c, &info);
    assert_int_equal(info.mss, 552 - 40 - 12);

    /* a quote too short to hold the ports and sequence number */
    size_t n = frag_needed(f, seg, una, 600);
    f[14 + 3] = (uint8_t)(20 + 8 + 20 + 4);         /* IP total length */
    f[14 + 10] = f[14 + 11] = 0;
    th_fix_ip_csum(f);
    uint8_t *m = f + 34;
    m[2] = m[3] = 0;
    uint16_t s = th_csum_ref(m, 8 + 24, 0);
    m[2] = (uint8_t)(s >> 8);
    m[3] = (uint8_t)s;
    th_input(t, f, n - 4);
    assert_int_equal(C(t)->icmp_drop_quote, 1);
    tern_tcp_abort(t->st, c);
    th_poll(t);
    assert_int_equal(th_free(t), 0);
}

/* The IP ID of the last TCP frame captured. */
static uint16_t last_id(th *t)
{
    assert_true(t->nout > 0);
    const uint8_t *o = t->out[t->nout - 1];
    assert_int_equal(o[14 + 9], 6);
    return th_rd16(o + 14 + 4);
}

/* The ACK the stack sends for a peer's data. */
static uint16_t ack_id(th *t, peer *p)
{
    th_clear(t);
    peer_send(p, F_ACK | F_PSH, payload, 100);
    th_advance_us(t, 100000);
    return last_id(t);
}

static void test_ip_id_per_conn(void **state)
{
    (void)state;
    th *t;
    peer a, b;
    peer_connected(&t, &a, true);
    peer_init(&b, t);
    peer_connect(&b, 80, 40001);
    uint16_t a1 = ack_id(t, &a), b1 = ack_id(t, &b);
    uint16_t a2 = ack_id(t, &a), b2 = ack_id(t, &b);
    uint16_t a3 = ack_id(t, &a);
    /* each conn counts on its own... */
    assert_int_equal((uint16_t)(a2 - a1), 1);
    assert_int_equal((uint16_t)(a3 - a2), 1);
    assert_int_equal((uint16_t)(b2 - b1), 1);
    /* ...from its own start: the other conn's IDs tell nothing */
    assert_true((uint16_t)(b1 - a1) != 1 && (uint16_t)(a2 - b1) != 1);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pmtu_floor_and_quote),
        cmocka_unit_test(test_ip_id_per_conn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
