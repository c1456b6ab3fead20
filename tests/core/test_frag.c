/* IPv4 reassembly: whole datagrams in any order, and every classic
 * fragment attack dropped and counted with memory bounded. Fragmentation
 * on output: a reply or datagram over the MTU leaves in fragments another
 * stack reassembles; IDs unique per datagram, all buffers or none. */
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

static uint8_t got_whole[8192];
static size_t got_whole_len, got_segs;

static void on_udp(tern_stack *st, tern_udp *s, void *user,
                   const tern_udp_meta *meta, tern_buf *buf,
                   const uint8_t *data, size_t len)
{
    (void)st; (void)s; (void)user; (void)meta;
    memcpy(got, data, len < sizeof got ? len : sizeof got);
    got_len = len;
    got_count++;
    got_whole_len = tern_udp_copy(buf, data, len, got_whole, sizeof got_whole);
    got_segs = 0;
    for (const tern_buf *b = buf; b; b = b->frag)
        got_segs++;
    assert_int_equal(tern_udp_len(buf, len), got_whole_len);
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

/* setup, with the peer's MAC learned (from its ARP request) */
static th *setup_resolved(void)
{
    th *t = setup();
    uint8_t arp[64];
    static const uint8_t zero[6];
    th_input(t, arp, th_arp(arp, 1, TH_PEER_MAC, TH_PEER_IP, zero, TH_IP));
    th_clear(t);
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

/* After an overlap the datagram is gone and its slot free: fragments
 * that come later start it afresh (IPv6 refuses them: test_frag6.c). More
 * than 64 fragments, or a last one ending before one held, and the
 * datagram is dropped whole. */
static void test_overlap_then_limits(void **state)
{
    (void)state;
    uint8_t data[1000], pl[1100], f[1600];
    make_data(data, sizeof data);
    size_t pn = udp_payload(pl, data, sizeof data);
    th *t = setup();
    th_input(t, f, th_frag(f, pl, 0, 400, 1, 20, 17));
    th_input(t, f, th_frag(f, pl, 200, 400, 1, 20, 17));
    assert_int_equal(C(t)->ip_drop_frag_overlap, 1);
    assert_int_equal(t->bufs_out, 0);
    th_input(t, f, th_frag(f, pl, 0, 400, 1, 20, 17));
    th_input(t, f, th_frag(f, pl, 400, 400, 1, 20, 17));
    th_input(t, f, th_frag(f, pl, 800, (uint32_t)pn - 800, 0, 20, 17));
    assert_int_equal(got_count, 1);
    assert_memory_equal(got, data, sizeof data);
    assert_int_equal(C(t)->ip_drop_frag_overlap, 1);
    /* the 65th fragment of one datagram */
    for (uint32_t k = 0; k < 65; k++)
        th_input(t, f, th_frag(f, pl, k * 8, 8, 1, 21, 17));
    assert_int_equal(C(t)->ip_drop_frag_bad, 1);
    assert_int_equal(t->bufs_out, 0);
    /* a last fragment that ends before one held */
    th_input(t, f, th_frag(f, pl, 400, 400, 1, 22, 17));
    th_input(t, f, th_frag(f, pl, 200, 8, 0, 22, 17));
    assert_int_equal(C(t)->ip_drop_frag_bad, 2);
    assert_int_equal(t->bufs_out, 0);
    assert_int_equal(C(t)->ip_reasm_ok, 1);
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
    /* a complete TCP datagram larger than one buffer is refused, counted
     * (TCP never fragments; UDP and ICMP ones become chains) */
    th_input(t, f, th_frag(f, pl, 0, 1400, 1, 500, 6));
    th_input(t, f, th_frag(f, pl, 1400, 600, 0, 500, 6));
    assert_int_equal(C(t)->ip_drop_frag_too_big, 1);
    assert_int_equal(t->bufs_out, 0);
    assert_int_equal(th_free(t), 0);
}

/* A 4,000-byte UDP datagram in three fragments, out of order: more than
 * one buffer holds, so cb.udp_recv gets a chain (data/len its first part,
 * buf->frag the rest), whole and in order; a bad checksum over the chain
 * is caught; a UDP length below the chain's trims it; every buffer comes
 * back. */
static void test_udp_over_one_buffer(void **state)
{
    (void)state;
    static uint8_t data[4000], whole[8192], pl[8192], f[1600];
    make_data(data, sizeof data);
    size_t n = th_udp_frame(whole, TH_PEER_IP, TH_IP, 4000, 7, data,
                            sizeof data);
    size_t pn = n - 34;                         /* 4008: UDP header + data */
    memcpy(pl, whole + 34, pn);
    th *t = setup();
    th_input(t, f, th_frag(f, pl, 2960, (uint32_t)pn - 2960, 0, 9, 17));
    th_input(t, f, th_frag(f, pl, 0, 1480, 1, 9, 17));
    assert_int_equal(got_count, 0);
    th_input(t, f, th_frag(f, pl, 1480, 1480, 1, 9, 17));
    assert_int_equal(got_count, 1);
    assert_int_equal(C(t)->ip_reasm_ok, 1);
    assert_int_equal(C(t)->udp_drop_csum, 0);
    assert_true(got_segs >= 2);
    assert_true(got_len < sizeof data);         /* the first part only */
    assert_int_equal(got_whole_len, sizeof data);
    assert_memory_equal(got_whole, data, sizeof data);
    assert_int_equal(t->bufs_out, 0);

    /* one byte changed: the sum over the chain catches it */
    pl[3000] ^= 1;
    th_input(t, f, th_frag(f, pl, 0, 1480, 1, 10, 17));
    th_input(t, f, th_frag(f, pl, 1480, 1480, 1, 10, 17));
    th_input(t, f, th_frag(f, pl, 2960, (uint32_t)pn - 2960, 0, 10, 17));
    assert_int_equal(got_count, 1);
    assert_int_equal(C(t)->udp_drop_csum, 1);
    pl[3000] ^= 1;

    /* UDP length 3,508 in a 4,008-byte IP payload: the chain is cut to it
     * (checksum 0: none sent, so the cut is what is checked) */
    pl[4] = (uint8_t)(3508 >> 8);
    pl[5] = (uint8_t)(3508 & 0xff);
    pl[6] = pl[7] = 0;
    th_input(t, f, th_frag(f, pl, 0, 1480, 1, 11, 17));
    th_input(t, f, th_frag(f, pl, 1480, 1480, 1, 11, 17));
    th_input(t, f, th_frag(f, pl, 2960, (uint32_t)pn - 2960, 0, 11, 17));
    assert_int_equal(got_count, 2);
    assert_int_equal(got_whole_len, 3500);
    assert_memory_equal(got_whole, data, 3500);
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
    th *t = setup_resolved();
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

static void cfg_peer(tern_config *c)
{
    memcpy(c->mac, TH_PEER_MAC, 6);
    c->ip = TH_PEER_IP;
}

/* The IPv4 datagram a captured frame carries, its header's fields. */
static uint16_t f_id(const uint8_t *o) { return th_rd16(o + 18); }
static uint16_t f_flags(const uint8_t *o) { return th_rd16(o + 20); }

/* A ping of `size` bytes over the MTU arrives in 1480-byte fragments
 * and its reply leaves in fragments, which a second stack reassembles.
 * Over one buffer (1856 bytes of room here) the request is held in a
 * chain. */
static void fragmented_reply(uint32_t size)
{
    th *t = setup_resolved();
    static uint8_t data[3000], whole[4096], f[2048], joined[4096];
    make_data(data, size);
    size_t n = th_ping_frame(whole, TH_PEER_IP, TH_IP, 5, 6, data, size);
    const uint8_t *icmp = whole + 34;
    uint32_t ilen = (uint32_t)n - 34, k = (ilen + 1479) / 1480;
    for (uint32_t off = 0; off < ilen; off += 1480)
        th_input(t, f, th_frag(f, icmp, off, ilen - off < 1480 ? ilen - off : 1480,
                               off + 1480 < ilen, 78, 1));
    assert_int_equal(C(t)->ip_reasm_ok, 1);
    assert_int_equal(C(t)->icmp_echo_reply_out, 1);
    assert_int_equal(C(t)->ip_frag_out, 1);
    assert_int_equal(C(t)->ip_frag_created, k);
    assert_int_equal(t->nout, k);
    for (uint32_t i = 0; i < k; i++) {
        const uint8_t *o = t->out[i];
        uint32_t off = i * 1480, part = ilen - off < 1480 ? ilen - off : 1480;
        assert_int_equal(t->out_len[i], 14 + 20 + part);
        assert_int_equal(f_id(o), f_id(t->out[0]));
        /* MF but on the last, the offset, never DF */
        assert_int_equal(f_flags(o), (i + 1 < k ? 0x2000 : 0) | off / 8);
        assert_int_equal(th_csum_ref(o + 14, 20, 0), 0);
        memcpy(joined + off, o + 34, part);
    }
    /* the pieces joined are the echo reply of the same data */
    assert_int_equal(joined[0], 0);
    assert_int_equal(th_csum_ref(joined, ilen, 0), 0);
    assert_memory_equal(joined + 8, data, size);
    /* round trip: the peer's stack reassembles the reply */
    th *p = th_new(cfg_peer);
    for (uint32_t i = k; i-- > 0;)
        th_input(p, t->out[i], t->out_len[i]);
    assert_int_equal(tern_get_counters(p->st)->ip_reasm_ok, 1);
    assert_int_equal(tern_get_counters(p->st)->icmp_echo_reply_in, 1);
    assert_int_equal(th_free(p), 0);
    assert_int_equal(th_free(t), 0);
}

static void test_fragmented_reply(void **state)
{
    (void)state;
    fragmented_reply(1700);      /* one buffer holds the request */
    fragmented_reply(3000);      /* ping -s 3000: a chain of two */
}

/* UDP over the MTU: fragments with one ID per datagram, never reused
 * among 1,000 datagrams; too few buffers: nothing leaves, counted. */
static void test_udp_fragments_and_ids(void **state)
{
    (void)state;
    th *t = setup_resolved();
    static uint8_t data[1600];
    make_data(data, sizeof data);
    static uint8_t seen[65536];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 1000; i++) {
        th_clear(t);
        assert_int_equal(tern_udp_send(t->st, 9, A4(TH_PEER_IP), 7, data, sizeof data), 0);
        tern_flush(t->st);
        assert_int_equal(t->nout, 2);
        uint16_t id = f_id(t->out[0]);
        assert_int_equal(f_id(t->out[1]), id);
        assert_int_equal(seen[id], 0);
        seen[id] = 1;
    }
    /* the peer's stack gets the datagram whole */
    th *p = th_new(cfg_peer);
    got_len = 0;
    tern_udp_bind(p->st, 7, NULL, NULL);
    p->cfg.cb.udp_recv = on_udp;
    th_input(p, t->out[0], t->out_len[0]);
    th_input(p, t->out[1], t->out_len[1]);
    assert_int_equal(tern_get_counters(p->st)->ip_reasm_ok, 1);
    assert_int_equal(tern_get_counters(p->st)->udp_in, 1);
    assert_int_equal(tern_get_counters(p->st)->udp_drop_csum, 0);
    assert_int_equal(th_free(p), 0);
    /* one buffer short of the fragments: all or nothing */
    th_clear(t);
    t->pool_limit = t->bufs_out + 2;
    assert_int_equal(tern_udp_send(t->st, 9, A4(TH_PEER_IP), 7, data, sizeof data),
                     -TERN_ENOBUFS);
    tern_flush(t->st);
    assert_int_equal(t->nout, 0);
    assert_int_equal(C(t)->ip_drop_frag_out, 1);
    t->pool_limit = 0;
    /* more than one buffer holds: refused at once */
    static uint8_t huge[4000];
    assert_int_equal(tern_udp_send(t->st, 9, A4(TH_PEER_IP), 7, huge, sizeof huge),
                     -TERN_EMSGSIZE);
    assert_int_equal(th_free(t), 0);
}

/* Datagrams to different hosts take IDs from keyed starts, not one
 * counter: an outsider cannot count the traffic to others. */
static void test_ids_per_destination(void **state)
{
    (void)state;
    th *t = setup();
    uint8_t arp[64];
    static const uint8_t zero[6];
    uint16_t id[8];
    for (uint32_t i = 0; i < 8; i++) {
        uint8_t mac[6] = {2, 7, 0, 0, 0, (uint8_t)i};
        uint32_t ip = TERN_IP4(198, 18, 0, 100) + i;
        th_input(t, arp, th_arp(arp, 1, mac, ip, zero, TH_IP));
        th_clear(t);
        tern_udp_send(t->st, 9, A4(ip), 7, "x", 1);
        tern_flush(t->st);
        assert_int_equal(t->nout, 1);
        id[i] = f_id(t->out[0]);
    }
    int consecutive = 0;
    for (int i = 1; i < 8; i++)
        consecutive += (uint16_t)(id[i] - id[i - 1]) == 1;
    assert_true(consecutive <= 1);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_and_out_of_order),
        cmocka_unit_test(test_attacks),
        cmocka_unit_test(test_overlap_then_limits),
        cmocka_unit_test(test_bounds_and_timeout),
        cmocka_unit_test(test_udp_over_one_buffer),
        cmocka_unit_test(test_disabled),
        cmocka_unit_test(test_fragmented_ping),
        cmocka_unit_test(test_fragmented_reply),
        cmocka_unit_test(test_udp_fragments_and_ids),
        cmocka_unit_test(test_ids_per_destination),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
