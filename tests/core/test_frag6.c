/* IPv6 fragments: reassembly in any order, overlaps (RFC 5722), atomic
 * fragments (RFC 6946), the header chain in the first (RFC 7112), the
 * time limit and bounds; echo replies over the MTU leave in fragments;
 * Packet Too Big sets the path MTU, never under 1280. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th6.h"

#define C(t) tern_get_counters((t)->st)
#define SEC (TERN_NS_PER_SEC / 1000)

uint32_t ip6_path_mtu(tern_stack *st, const uint8_t dst[16]);

static uint8_t msg[4096];      /* the whole ICMPv6 echo request */
static size_t msg_len;

/* An echo request of len data bytes with its checksum. */
static void make_msg(size_t len)
{
    uint8_t f[4200];
    memset(msg, 0, sizeof msg);
    msg[0] = 128;
    msg[5] = 9;
    for (size_t i = 0; i < len; i++)
        msg[8 + i] = (uint8_t)(i * 7);
    msg_len = 8 + len;
    /* th6_icmp sums it; take the sum back from the frame */
    if (msg_len <= 2000) {
        th6_icmp(f, TH6_PEER, TH6_IP, 64, msg, msg_len);
        msg[2] = f[56];
        msg[3] = f[57];
    } else {
        uint32_t s = 58 + (uint32_t)msg_len;
        for (int i = 0; i < 16; i += 2)
            s += th_rd16(TH6_PEER + i) + th_rd16(TH6_IP + i);
        uint16_t c = th_csum_ref(msg, msg_len, s);
        msg[2] = (uint8_t)(c >> 8);
        msg[3] = (uint8_t)c;
    }
}

/* Fragment [off, off + len) of msg, M flag more, identification id. */
static size_t frag(uint8_t *f, uint32_t off, uint32_t len, int more, uint32_t id)
{
    return th6_frag(f, msg, off, len, more, id, 58);
}

/* The 3,008-byte msg in three fragments, in order. */
static void send_msg(th *t, uint32_t id)
{
    uint8_t f[2048];
    th_input(t, f, frag(f, 0, 1232, 1, id));
    th_input(t, f, frag(f, 1232, 1232, 1, id));
    th_input(t, f, frag(f, 2464, (uint32_t)msg_len - 2464, 0, id));
}

/* The captured frames are fragments of one echo reply of msg's data:
 * join them and check it. */
static void check_frag_reply(th *t, uint32_t mtu)
{
    static uint8_t whole[4096];
    size_t got = 0, total = 0;
    assert_true(t->nout >= 2);
    for (unsigned i = 0; i < t->nout; i++) {
        const uint8_t *o = t->out[i];
        assert_true(t->out_len[i] - 14 <= mtu);
        assert_int_equal(o[20], 44);
        uint32_t off = th_rd16(o + 56) & 0xfff8;
        uint32_t len = th_rd16(o + 18) - 8;
        if (!(o[57] & 1))
            total = off + len;
        memcpy(whole + off, o + 62, len);
        got += len;
    }
    assert_int_equal(got, msg_len);
    assert_int_equal(total, msg_len);
    assert_int_equal(whole[0], 129);
    assert_memory_equal(whole + 8, msg + 8, msg_len - 8);
}

static void test_in_order_and_reversed(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    th6_resolved(t);
    uint8_t f[2048];
    make_msg(3000);
    send_msg(t, 7);
    assert_int_equal(C(t)->ip6_reasm_ok, 1);
    assert_int_equal(C(t)->icmp6_echo_reply_out, 1);
    check_frag_reply(t, 1500);
    th_clear(t);
    th_input(t, f, frag(f, 2464, (uint32_t)msg_len - 2464, 0, 8));
    th_input(t, f, frag(f, 1232, 1232, 1, 8));
    th_input(t, f, frag(f, 0, 1232, 1, 8));
    assert_int_equal(C(t)->ip6_reasm_ok, 2);
    check_frag_reply(t, 1500);
    assert_int_equal(th_free(t), 0);
}

/* A last fragment that ends before one held, and a whole UDP datagram
 * over one buffer (only ICMPv6 ones become chains): dropped, counted,
 * nothing held. */
static void test_end_and_too_big(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    th6_resolved(t);
    uint8_t f[2048];
    make_msg(3000);
    th_input(t, f, frag(f, 1232, 1232, 1, 10));
    th_input(t, f, frag(f, 8, 16, 0, 10));
    assert_int_equal(C(t)->ip6_drop_frag_bad, 1);
    assert_int_equal(t->bufs_out, 0);
    th_input(t, f, th6_frag(f, msg, 0, 1232, 1, 11, 17));
    th_input(t, f, th6_frag(f, msg, 1232, 1000, 0, 11, 17));
    assert_int_equal(C(t)->ip6_drop_frag_too_big, 1);
    assert_int_equal(C(t)->ip6_reasm_ok, 0);
    assert_int_equal(t->bufs_out, 0);
    assert_int_equal(th_free(t), 0);
}

static void test_overlap_drops_all(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    th6_resolved(t);
    uint8_t f[2048];
    make_msg(3000);
    th_input(t, f, frag(f, 0, 1232, 1, 7));
    th_input(t, f, frag(f, 1224, 1240, 1, 7));      /* overlaps by 8 */
    assert_int_equal(C(t)->ip6_drop_frag_overlap, 1);
    /* the rest of that datagram is refused too, even all of it again
     * (IPv4 starts it afresh: test_frag.c) */
    th_input(t, f, frag(f, 1232, 1232, 1, 7));
    th_input(t, f, frag(f, 2464, (uint32_t)msg_len - 2464, 0, 7));
    assert_int_equal(C(t)->ip6_drop_frag_overlap, 3);
    send_msg(t, 7);
    assert_int_equal(C(t)->ip6_drop_frag_overlap, 6);
    assert_int_equal(C(t)->ip6_reasm_ok, 0);
    assert_int_equal(t->nout, 0);
    assert_int_equal(t->bufs_out, 0);            /* nothing held */
    /* an exact duplicate is only itself dropped, and counted nowhere */
    th_input(t, f, frag(f, 0, 1232, 1, 9));
    send_msg(t, 9);
    assert_int_equal(C(t)->ip6_reasm_ok, 1);
    assert_int_equal(C(t)->ip6_drop_frag_overlap, 6);
    assert_int_equal(C(t)->ip6_drop_frag_bad, 0);
    /* the refusing slot goes at its time limit, with no Time Exceeded
     * (it holds no first fragment) */
    th_advance_us(t, 61 * SEC);
    assert_int_equal(C(t)->ip6_frag_timeout, 1);
    assert_int_equal(C(t)->icmp6_error_out, 0);
    send_msg(t, 7);
    assert_int_equal(C(t)->ip6_reasm_ok, 2);
    assert_int_equal(th_free(t), 0);
}

static void test_atomic_and_bad(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    th6_resolved(t);
    uint8_t f[2048];
    make_msg(40);
    th_input(t, f, frag(f, 0, (uint32_t)msg_len, 0, 3));    /* atomic */
    assert_int_equal(C(t)->ip6_frag_atomic, 1);
    assert_int_equal(C(t)->ip6_frag_in, 0);
    assert_int_equal(C(t)->icmp6_echo_reply_out, 1);
    assert_int_equal(t->nout, 1);
    th_clear(t);
    /* a non-last fragment that is no multiple of 8 */
    make_msg(3000);
    th_input(t, f, frag(f, 0, 1230, 1, 4));
    assert_int_equal(C(t)->ip6_drop_frag_bad, 1);
    /* a first fragment without the whole header chain: a destination
     * options header claiming more than the fragment holds */
    uint8_t pl[64] = {60, 0, 0, 1, 0, 0, 0, 5, 58, 20};
    th_input(t, f, th6_pkt(f, TH6_PEER, TH6_IP, 44, 64, pl, 64));
    assert_int_equal(C(t)->ip6_drop_frag_chain, 1);
    int i = th6_find_icmp(t, 4);
    assert_true(i >= 0);
    assert_int_equal(t->out[i][55], 3);
    assert_int_equal(th_free(t), 0);
}

static void small_reasm(tern_config *c) { c->reasm_slots = 2; }

static void test_timeout_and_bounds(void **state)
{
    (void)state;
    th *t = th6_new(small_reasm);
    th6_resolved(t);
    uint8_t f[2048];
    make_msg(3000);
    th_input(t, f, frag(f, 0, 1232, 1, 1));
    th_input(t, f, frag(f, 1232, 1232, 1, 2));
    th_input(t, f, frag(f, 1232, 1232, 1, 3));       /* evicts id 1 */
    assert_int_equal(C(t)->ip6_frag_evicted, 1);
    th_input(t, f, frag(f, 0, 1232, 1, 2));
    th_advance_us(t, 59 * SEC);
    assert_int_equal(C(t)->ip6_frag_timeout, 0);
    th_advance_us(t, 2 * SEC);
    assert_int_equal(C(t)->ip6_frag_timeout, 2);
    /* id 2 had its first fragment: a Time Exceeded about it, once the
     * peer (probed and forgotten meanwhile) answers again */
    assert_int_equal(th6_find_icmp(t, 3), -1);
    th_input(t, f, th6_na(f, TH6_PEER, TH6_IP, TH6_PEER, 0x60, TH_PEER_MAC));
    int i = th6_find_icmp(t, 3);
    assert_true(i >= 0);
    assert_int_equal(t->out[i][55], 1);
    assert_int_equal(C(t)->icmp6_error_out, 1);
    /* at most 64 fragments per datagram */
    th_clear(t);
    for (uint32_t k = 0; k < 65; k++)
        th_input(t, f, frag(f, k * 8, 8, 1, 5));
    assert_int_equal(C(t)->ip6_drop_frag_bad, 1);
    assert_int_equal(th_free(t), 0);
}

static void test_ptb_floor(void **state)
{
    (void)state;
    th *t = th6_new(NULL);
    th6_resolved(t);
    uint8_t f[2048];
    /* a Packet Too Big about a datagram we sent to the peer */
    uint8_t m[8 + 48] = {2, 0, 0, 0, 0, 0, 0x03, 0xe8};   /* MTU 1000 */
    uint8_t *q = m + 8;
    q[0] = 0x60;
    q[5] = 8;
    q[6] = 58;
    q[7] = 64;
    memcpy(q + 8, TH6_IP, 16);
    memcpy(q + 24, TH6_PEER, 16);
    static const uint8_t router[16] = {0x20, 1, 0xd, 0xb8, 0, 1, [15] = 0x99};
    th_input(t, f, th6_icmp(f, router, TH6_IP, 64, m, sizeof m));
    assert_int_equal(C(t)->icmp6_ptb_in, 1);
    assert_int_equal(C(t)->icmp6_pmtu_floored, 1);
    assert_int_equal(ip6_path_mtu(t->st, TH6_PEER), 1280);
    assert_int_equal(ip6_path_mtu(t->st, TH6_LL), 1500);
    /* a 1400-byte echo is answered in fragments of at most 1280 */
    make_msg(1400);
    th_input(t, f, th6_icmp(f, TH6_PEER, TH6_IP, 64, msg, msg_len));
    check_frag_reply(t, 1280);
    /* a larger MTU does not raise it; expiry does (10 min) */
    m[6] = 0x05;
    m[7] = 0x28;                                         /* 1320 */
    th_input(t, f, th6_icmp(f, router, TH6_IP, 64, m, sizeof m));
    assert_int_equal(ip6_path_mtu(t->st, TH6_PEER), 1280);
    t->now += 601ull * TERN_NS_PER_SEC;
    assert_int_equal(ip6_path_mtu(t->st, TH6_PEER), 1280);   /* clock not read yet */
    th_poll(t);
    assert_int_equal(ip6_path_mtu(t->st, TH6_PEER), 1500);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_and_reversed),
        cmocka_unit_test(test_overlap_drops_all),
        cmocka_unit_test(test_end_and_too_big),
        cmocka_unit_test(test_atomic_and_bad),
        cmocka_unit_test(test_timeout_and_bounds),
        cmocka_unit_test(test_ptb_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
