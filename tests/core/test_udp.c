/* UDP: delivery to bound ports, every drop reason, checksums generated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th.h"

#define C(t) tern_get_counters((t)->st)

static char got[2048];
static size_t got_len;
static tern_udp_meta got_meta;
static void *got_user;

static void on_udp(tern_stack *st, tern_udp *s, void *user,
                   const tern_udp_meta *meta, tern_buf *buf,
                   const uint8_t *data, size_t len)
{
    (void)st; (void)s; (void)buf;
    memcpy(got, data, len);
    got_len = len;
    got_meta = *meta;
    got_user = user;
}

static void with_cb(tern_config *c) { c->cb.udp_recv = on_udp; }

static void test_receive(void **state)
{
    (void)state;
    th *t = th_new(with_cb);
    int err = -1, tag;
    assert_non_null(tern_udp_bind(t->st, 7, &tag, &err));
    assert_int_equal(err, 0);
    assert_null(tern_udp_bind(t->st, 7, NULL, &err));
    assert_int_equal(err, TERN_EADDRINUSE);
    assert_null(tern_udp_bind(t->st, 0, NULL, &err));
    assert_int_equal(err, TERN_EINVAL);
    uint8_t f[256];
    got_len = 0;
    th_input(t, f, th_udp_frame(f, TH_PEER_IP, TH_IP, 4444, 7, "hello", 5));
    assert_int_equal(got_len, 5);
    assert_memory_equal(got, "hello", 5);
    assert_int_equal(got_meta.src.family, TERN_AF_INET);
    assert_int_equal(got_meta.src.u.v4, TH_PEER_IP);
    assert_true(tern_addr_eq(&got_meta.dst, A4(TH_IP)));
    assert_int_equal(got_meta.src_port, 4444);
    assert_int_equal(got_meta.dst_port, 7);
    assert_ptr_equal(got_user, &tag);
    /* checksum 0 = none (allowed in IPv4) */
    size_t n = th_udp_frame(f, TH_PEER_IP, TH_IP, 4444, 7, "zero", 4);
    f[40] = 0; f[41] = 0;
    got_len = 0;
    th_input(t, f, n);
    assert_int_equal(got_len, 4);
    assert_int_equal(C(t)->udp_in, 2);
    assert_int_equal(th_free(t), 0);
}

static void test_drops(void **state)
{
    (void)state;
    th *t = th_new(with_cb);
    tern_udp_bind(t->st, 7, NULL, NULL);
    uint8_t f[256];
    size_t n = th_udp_frame(f, TH_PEER_IP, TH_IP, 1, 7, "abcdef", 6);
    f[17] = 20 + 7;                                   /* IP payload 7 bytes */
    th_fix_ip_csum(f);
    th_input(t, f, n);
    assert_int_equal(C(t)->udp_drop_short, 1);
    n = th_udp_frame(f, TH_PEER_IP, TH_IP, 1, 7, "abcdef", 6);
    f[39] = 7;                                        /* udp len < 8 */
    th_input(t, f, n);
    n = th_udp_frame(f, TH_PEER_IP, TH_IP, 1, 7, "abcdef", 6);
    f[39] = 30;                                       /* past the datagram */
    th_input(t, f, n);
    assert_int_equal(C(t)->udp_drop_len, 2);
    n = th_udp_frame(f, TH_PEER_IP, TH_IP, 1, 7, "abcdef", 6);
    f[n - 1] ^= 0x55;
    th_input(t, f, n);
    assert_int_equal(C(t)->udp_drop_csum, 1);
    th_input(t, f, th_udp_frame(f, TH_PEER_IP, TH_IP, 1, 0, "abcdef", 6));
    assert_int_equal(C(t)->udp_drop_port0, 1);
    assert_int_equal(got_len == 0 || 1, 1);
    /* a NIC that flagged the checksum bad wins over a correct one */
    tern_buf *b = t->cfg.buf_ops.alloc(t->cfg.buf_ops.ctx);
    n = th_udp_frame(b->data, TH_PEER_IP, TH_IP, 1, 7, "abcdef", 6);
    b->len = (uint32_t)n;
    b->flags = TERN_BUF_RX_L4_CSUM_BAD;
    tern_input(t->st, &b, 1, t->now);
    assert_int_equal(C(t)->udp_drop_csum, 2);
    assert_int_equal(th_free(t), 0);
}

static void test_send(void **state)
{
    (void)state;
    th *t = th_new(with_cb);
    uint8_t f[64];
    static const uint8_t zero[6];
    th_input(t, f, th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, zero, TH_IP));
    th_clear(t);
    /* odd length payload exercises the checksum tail */
    assert_int_equal(tern_udp_send(t->st, 1234, A4(TH_PEER_IP), 53, "odd", 3), 0);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    const uint8_t *o = t->out[0];
    assert_int_equal(th_rd16(o + 34), 1234);
    assert_int_equal(th_rd16(o + 36), 53);
    assert_int_equal(th_rd16(o + 38), 11);
    assert_memory_equal(o + 42, "odd", 3);
    assert_true(th_frame_csums_ok(o, t->out_len[0]));
    /* over the MTU: fragmented (test_frag); over one buffer: refused */
    static uint8_t big[4000];
    assert_int_equal(tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, big, sizeof big),
                     -TERN_EMSGSIZE);
    assert_int_equal(tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, big, 1472), 0);
    assert_int_equal(tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, big, 1473), 0);
    assert_int_equal(C(t)->ip_frag_out, 1);
    assert_int_equal(th_free(t), 0);
}

static void one_buf(tern_config *c) { c->cb.udp_recv = on_udp; }

static void test_pool_empty(void **state)
{
    (void)state;
    th *t = th_new(one_buf);
    t->pool_limit = 1;
    tern_buf *hold = tern_buf_alloc(t->st);
    assert_int_equal(tern_udp_send(t->st, 1, A4(TH_PEER_IP), 2, "x", 1), -TERN_ENOBUFS);
    assert_int_equal(C(t)->tx_drop_nobuf, 1);
    tern_buf_release(t->st, hold);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_receive),
        cmocka_unit_test(test_drops),
        cmocka_unit_test(test_send),
        cmocka_unit_test(test_pool_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
