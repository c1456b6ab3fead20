/* IPv4 reassembly: whole datagrams in any order, and every classic
 * fragment attack dropped and counted with memory bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th.h"

#define C(t) tern_get_counters((t)->st)

static uint8_t got[2048];
static size_t got_len;
static unsigned got_count;

static void on_udp(tern_stack *st, tern_udp *s, void *user,
                   const tern_udp_meta *meta, tern_buf *buf,
                   const uint8_t *data, size_t len)
{
    (void)st; (void)s; (void)user; (void)meta; (void)buf;
    memcpy(got, data, len);
    got_len = len;
    got_count++;
}

static void cfg_udp(tern_config *c) { c->cb.udp_recv = on_udp; c->reasm_slots = 4; }

static th *setup(void)
{
    th *t = th_new(cfg_udp);
    tern_udp_bind(t->st, 7, NULL, NULL);
    got_len = 0;
    got_count = 0;
    return t;
}

/* A UDP datagram (8-byte header + payload) as IP payload bytes. */
static size_t udp_payload(uint8_t *out, const uint8_t *data, size_t len)
{
    uint8_t f[2048];
    size_t n = th_udp_frame(f, TH_PEER_IP, TH_IP, 4000, 7, data, len);
    memcpy(out, f + 34, n - 34);
    return n - 34;
}


static void make_data(uint8_t *d, size_t len)
{
    for (size_t i = 0; i < len; i++)
        d[i] = (uint8_t)(i * 7 + 3);
}

static void test_in_and_out_of_order(void **state)
{
    (void)state;
    uint8_t data[1000], pl[1100], f[1600];
    make_data(data, sizeof data);
    size_t pn = udp_payload(pl, data, sizeof data);      /* 1008 bytes */
    /* in order: 3 fragments */
    th *t = setup();
    th_input(t, f, th_frag(f, pl, 0, 400, 1, 1, 17));
    th_input(t, f, th_frag(f, pl, 400, 400, 1, 1, 17));
    assert_int_equal(got_count, 0);
    th_input(t, f, th_frag(f, pl, 800, (uint32_t)pn - 800, 0, 1, 17));
    assert_int_equal(got_count, 1);
    assert_int_equal(got_len, sizeof data);
    assert_memory_equal(got, data, sizeof data);
    assert_int_equal(C(t)->ip_reasm_ok, 1);
    /* reversed, with an exact duplicate in the middle */
    th_input(t, f, th_frag(f, pl, 800, (uint32_t)pn - 800, 0, 2, 17));
    th_input(t, f, th_frag(f, pl, 400, 400, 1, 2, 17));
    th_input(t, f, th_frag(f, pl, 400, 400, 1, 2, 17));
    th_input(t, f, th_frag(f, pl, 0, 400, 1, 2, 17));
    assert_int_equal(got_count, 2);
    assert_memory_equal(got, data, sizeof data);
    assert_int_equal(C(t)->ip_drop_frag_dup, 1);
    assert_int_equal(th_free(t), 0);
}

static void test_attacks(void **state)
{
    (void)state;
    uint8_t pl[70000], f[1600];
    memset(pl, 0x41, sizeof pl);
    th *t = setup();
    /* teardrop: second fragment overlaps the first */
    th_input(t, f, th_frag(f, pl, 0, 400, 1, 10, 17));
    th_input(t, f, th_frag(f, pl, 200, 400, 0, 10, 17));
    assert_int_equal(C(t)->ip_drop_frag_overlap, 1);
    /* ping of death: ends past 65535 */
    th_input(t, f, th_frag(f, pl, 65528, 100, 0, 11, 1));
    /* non-multiple-of-8 middle fragment */
    th_input(t, f, th_frag(f, pl, 0, 13, 1, 12, 17));
    /* tiny TCP first fragment and a TCP fragment at offset 8 (RFC 1858) */
    th_input(t, f, th_frag(f, pl, 0, 8, 1, 13, 6));
    th_input(t, f, th_frag(f, pl, 8, 16, 0, 14, 6));
    /* empty fragment */
    th_input(t, f, th_frag(f, pl, 16, 0, 0, 15, 17));
    assert_int_equal(C(t)->ip_drop_frag_bad, 5);
    /* a last fragment that contradicts the length already known */
    th_input(t, f, th_frag(f, pl, 0, 64, 1, 16, 17));
    th_input(t, f, th_frag(f, pl, 128, 8, 0, 16, 17));
    th_input(t, f, th_frag(f, pl, 200, 8, 0, 16, 17));
    assert_int_equal(C(t)->ip_drop_frag_bad, 6);
    assert_int_equal(got_count, 0);
    assert_int_equal(t->bufs_out, 0);            /* nothing held */
    assert_int_equal(th_free(t), 0);
}

static void test_bounds_and_timeout(void **state)
{
    (void)state;
    uint8_t pl[2048], f[1600];
    memset(pl, 0x42, sizeof pl);
    th *t = setup();
    /* 100 incomplete datagrams: only reasm_slots (4) are ever held */
    for (uint16_t id = 0; id < 100; id++)
        th_input(t, f, th_frag(f, pl, 0, 64, 1, id, 17));
    assert_int_equal(C(t)->ip_frag_evicted, 96);
    assert_int_equal(t->bufs_out, 4);
    /* incomplete datagrams are freed by the timeout */
    t->now += 31 * TERN_NS_PER_SEC;
    th_poll(t);
    assert_int_equal(C(t)->ip_frag_timeout, 4);
    assert_int_equal(t->bufs_out, 0);
    /* a complete datagram larger than one buffer is refused, counted */
    th_input(t, f, th_frag(f, pl, 0, 1400, 1, 500, 17));
    th_input(t, f, th_frag(f, pl, 1400, 600, 0, 500, 17));
    assert_int_equal(C(t)->ip_drop_frag_too_big, 1);
    assert_int_equal(t->bufs_out, 0);
    assert_int_equal(th_free(t), 0);
}

static void no_reasm(tern_config *c) { c->no_reassembly = true; }

static void test_disabled(void **state)
{
    (void)state;
    uint8_t pl[64] = {0}, f[256];
    th *t = th_new(no_reasm);
    th_input(t, f, th_frag(f, pl, 0, 16, 1, 1, 17));
    assert_int_equal(C(t)->ip_drop_fragment, 1);
    assert_int_equal(C(t)->ip_frag_in, 0);
    assert_int_equal(th_free(t), 0);
}

/* A fragmented ping is reassembled and answered. */
static void test_fragmented_ping(void **state)
{
    (void)state;
    th *t = setup();
    uint8_t arp[64];
    static const uint8_t zero[6];
    th_input(t, arp, th_arp(arp, 1, TH_PEER_MAC, TH_PEER_IP, zero, TH_IP));
    th_clear(t);
    uint8_t data[600], whole[1600], f[1600];
    make_data(data, sizeof data);
    size_t n = th_ping_frame(whole, TH_PEER_IP, TH_IP, 5, 6, data, sizeof data);
    const uint8_t *icmp = whole + 34;
    size_t ilen = n - 34;
    th_input(t, f, th_frag(f, icmp, 304, (uint32_t)ilen - 304, 0, 77, 1));
    th_input(t, f, th_frag(f, icmp, 0, 304, 1, 77, 1));
    assert_int_equal(C(t)->icmp_echo_reply_out, 1);
    assert_int_equal(t->nout, 1);
    assert_int_equal(t->out_len[0], n);
    assert_memory_equal(t->out[0] + 42, data, sizeof data);
    assert_true(th_frame_csums_ok(t->out[0], t->out_len[0]));
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_and_out_of_order),
        cmocka_unit_test(test_attacks),
        cmocka_unit_test(test_bounds_and_timeout),
        cmocka_unit_test(test_disabled),
        cmocka_unit_test(test_fragmented_ping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
