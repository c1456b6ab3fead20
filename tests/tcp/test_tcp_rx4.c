/* The receive path's lookup key and the one-pass entry's checksum test
 * (rx4): the tuple key compares exactly the three fields, and a frame
 * whose TCP sum is bad gets the layered path's verdict and counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"

/* conn_ports_key (the received header's port word) and conn_tuple_key
 * (three fields) are the same key; it changes with each field alone, and
 * swapping the ports changes it. */
static void tuple_keys_agree(void **s)
{
    (void)s;
    static const uint32_t addrs[] = {0, 1, 0x80000000u, 0xc6120001u,
                                     0xffffffffu};
    static const uint16_t ports[] = {1, 80, 0x8000, 40000, 0xffff};
    for (size_t a = 0; a < 5; a++)
        for (size_t r = 0; r < 5; r++)
            for (size_t l = 0; l < 5; l++) {
                uint32_t ip = addrs[a];
                uint16_t rp = ports[r], lp = ports[l];
                uint64_t k = conn_tuple_key(ip, rp, lp);
                assert_true(conn_ports_key(ip, (uint32_t)rp << 16 | lp) == k);
                assert_true(conn_tuple_key(ip ^ 1, rp, lp) != k);
                assert_true(conn_tuple_key(ip ^ 0x80000000u, rp, lp) != k);
                assert_true(conn_tuple_key(ip, rp ^ 1, lp) != k);
                assert_true(conn_tuple_key(ip, rp, (uint16_t)(lp ^ 0x8000)) != k);
                if (rp != lp)
                    assert_true(conn_tuple_key(ip, lp, rp) != k);
            }
}

/* A fresh test stack with a conn from a scripted peer (40000 to 80). */
static struct tern_conn *connected(th **tp, peer *p)
{
    return peer_connected(tp, p, true);
}

/* The lookup finds the conn of its tuple and nothing for a tuple that
 * differs in one field or has the ports swapped. */
static void lookup_exact_tuple(void **s)
{
    (void)s;
    th *t;
    peer p;
    struct tern_conn *c = connected(&t, &p);
    assert_true(conn_key_of(c) == conn_tuple_key(TH_PEER_IP, 40000, 80));
    assert_ptr_equal(conn_lookup_ports(t->st, TH_PEER_IP, 40000u << 16 | 80), c);
    assert_null(conn_lookup(t->st, TH_PEER_IP + 1, 40000, 80));
    assert_null(conn_lookup(t->st, TH_PEER_IP, 40001, 80));
    assert_null(conn_lookup(t->st, TH_PEER_IP, 40000, 81));
    assert_null(conn_lookup(t->st, TH_PEER_IP, 80, 40000));
    assert_int_equal(th_free(t), 0);
}

/* The usual segment from p as a frame in a buffer of the stack's. */
static tern_buf *usual_buf(th *t, const peer *p)
{
    uint8_t opt[12] = {1, 1, 8, 10};
    th_put32(opt + 4, p->tsval);
    th_put32(opt + 8, p->tsecr);
    tern_buf *b = tern_buf_alloc(t->st);
    assert_non_null(b);
    size_t n = tp_frame(b->data, TH_PEER_IP, TH_IP, p->port, p->lport, p->seq,
                        p->ack, 0x18, p->wnd, opt, sizeof opt, "abcd", 4);
    b->len = (uint32_t)n;
    return b;
}

/* A bad TCP sum (tested inside tcp_input_raw): the frame goes, unchanged,
 * to eth_input, whose counters it gets (the same as feeding it there);
 * the good one is taken and counted once. */
static void one_pass_bad_sum_layered(void **s)
{
    (void)s;
    th *t;
    peer p;
    (void)connected(&t, &p);
    const tern_counters *k = tern_get_counters(t->st);
    uint64_t predicted = t->st->tcp->predicted;
    tern_counters c0 = *k;
    tern_buf *b = usual_buf(t, &p);
    b->data[b->len - 1] ^= 0x40;            /* a payload byte */
    eth_input(t->st, b);                    /* the layered path alone */
    tcp_input_done(t->st);
    tern_counters c1 = *k;
    assert_int_equal(c1.tcp_drop_csum, c0.tcp_drop_csum + 1);
    b = usual_buf(t, &p);
    b->data[b->len - 1] ^= 0x40;
    assert_true(tcp_input_frame(t->st, b)); /* consumes b */
    tcp_input_done(t->st);
    tern_counters c2 = *k;
    /* the same deltas, counter by counter */
    const uint64_t *v0 = (const uint64_t *)&c0, *v1 = (const uint64_t *)&c1,
                   *v2 = (const uint64_t *)&c2;
    for (size_t i = 0; i < sizeof c0 / sizeof *v0; i++)
        assert_true(v2[i] - v1[i] == v1[i] - v0[i]);
    assert_int_equal(t->st->tcp->predicted, predicted);
    b = usual_buf(t, &p);
    assert_true(tcp_input_frame(t->st, b));
    tcp_input_done(t->st);
    assert_int_equal(k->ip_in, c2.ip_in + 1);
    assert_int_equal(k->tcp_in, c2.tcp_in + 1);
    assert_int_equal(k->tcp_bytes_in, c2.tcp_bytes_in + 4);
    assert_int_equal(t->st->tcp->predicted, predicted + 1);
    assert_int_equal(th_free(t), 0);
}

/* The driver's sum of the frame after its Ethernet header (RX_SUM), as a
 * copying driver gives it (tern_csum_copy). */
static void driver_sum(tern_buf *b)
{
    b->flags |= TERN_BUF_RX_SUM;
    b->rx_sum = tern_csum_fold(tern_csum_partial(b->data + 14, b->len - 14, 0));
}

/* One segment through tcp_input_frame; whether the conn took its 4 bytes. */
static bool taken(th *t, tern_buf *b)
{
    const tern_counters *k = tern_get_counters(t->st);
    uint64_t before = k->tcp_bytes_in;
    assert_true(tcp_input_frame(t->st, b));
    tcp_input_done(t->st);
    return k->tcp_bytes_in == before + 4;
}

/* With RX_SUM the one-pass entry tests the TCP sum from the driver's sum
 * and the pseudo header, not from the payload: a byte changed after the
 * driver summed is not seen (as with a NIC's verdict). A sum that does not
 * match is tried again from the bytes by the layered path, which decides:
 * a good segment under a wrong sum is taken, a bad one under its own
 * (wrong) sum dropped and counted. A frame with bytes after the segment
 * (Ethernet padding) is summed from its bytes whatever rx_sum says. */
static void driver_sum_used(void **s)
{
    (void)s;
    th *t;
    peer p;
    (void)connected(&t, &p);
    const tern_counters *k = tern_get_counters(t->st);
    uint64_t predicted = t->st->tcp->predicted;

    tern_buf *b = usual_buf(t, &p);
    driver_sum(b);
    b->data[b->len - 1] ^= 0x40;            /* after the driver's sum */
    assert_true(taken(t, b));
    assert_int_equal(t->st->tcp->predicted, predicted + 1);
    p.seq += 4;

    b = usual_buf(t, &p);
    driver_sum(b);
    b->rx_sum ^= 0x0100;                    /* a wrong sum, good bytes */
    assert_true(taken(t, b));
    p.seq += 4;

    uint64_t drops = k->tcp_drop_csum;
    b = usual_buf(t, &p);
    b->data[b->len - 1] ^= 0x40;            /* corrupted on the wire */
    driver_sum(b);
    assert_false(taken(t, b));
    assert_int_equal(k->tcp_drop_csum, drops + 1);

    b = usual_buf(t, &p);
    b->data[b->len] = 0;                    /* two bytes of padding */
    b->data[b->len + 1] = 0;
    b->len += 2;
    driver_sum(b);
    b->data[b->len - 3] ^= 0x40;            /* not trusted: seen */
    assert_false(taken(t, b));
    assert_int_equal(k->tcp_drop_csum, drops + 2);
    b = usual_buf(t, &p);
    b->data[b->len] = 0;
    b->data[b->len + 1] = 0;
    b->len += 2;
    driver_sum(b);
    b->rx_sum ^= 0x0100;
    assert_true(taken(t, b));
    assert_int_equal(th_free(t), 0);
}

/* rtt_of_ack's ts means "the conn and the segment use timestamps" (the
 * fast path knows the conn's part); rtt_of still tests both. */
static void rtt_of_tests_conn_ts(void **s)
{
    (void)s;
    th *t;
    peer p;
    struct tern_conn *c = connected(&t, &p);
    assert_true(c->flags & TF_TS);
    c->flags &= ~(uint32_t)TF_RTT_TIMING;
    t->st->now += 50ull << 20;              /* 50 TSval ticks on */
    uint32_t echo = ts_now(t->st->now) + c->ts_off - 3;
    tcp_seg seg;
    memset(&seg, 0, sizeof seg);
    seg.o.has = OPT_TS;
    seg.o.tsecr = echo;
    seg.ack = c->snd_una;
    assert_int_equal(rtt_of_ack(t->st, c, true, echo, seg.ack), 3 * 1049 + 1);
    assert_int_equal(rtt_of_ack(t->st, c, false, echo, seg.ack), 0);
    assert_int_equal(rtt_of(t->st, c, &seg), 3 * 1049 + 1);
    c->flags &= ~(uint32_t)TF_TS;           /* a conn without timestamps */
    assert_int_equal(rtt_of(t->st, c, &seg), 0);
    c->flags |= TF_TS;
    seg.o.has = 0;                          /* a segment without them */
    assert_int_equal(rtt_of(t->st, c, &seg), 0);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tuple_keys_agree),
        cmocka_unit_test(lookup_exact_tuple),
        cmocka_unit_test(one_pass_bad_sum_layered),
        cmocka_unit_test(driver_sum_used),
        cmocka_unit_test(rtt_of_tests_conn_ts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
