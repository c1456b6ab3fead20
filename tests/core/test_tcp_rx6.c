/* The IPv6 one-pass receive (tcp_input_frame6, entered through
 * tcp_input_frame) and the IPv6 transmit template, against a scripted
 * peer: the usual segment of an established conn is taken in one pass
 * with the layered path's counters; anything else (an extension header, a
 * bad sum, a destination not ours, a segment out of order, a frame to
 * another MAC, a length past the frame, an address of ours that
 * expired) is refused having changed nothing, and the layered path then
 * decides. Segments leave with the
 * template's headers (flow label, hop limit, sums) and follow a neighbor's
 * new MAC. */
#define TERN_USE_BUILTIN_MEM 1 /* the core's inline helpers, as it is built */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "th6.h"
#include "tcp/tcp.h"

#define PORT 80
#define PEER_PORT 40000

static uint64_t got_bytes;

static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t len)
{
    (void)st; (void)c; (void)u; (void)b; (void)d;
    got_bytes += len;
    return len;
}

static void tweak(tern_config *c) { c->cb.recv = on_recv; }

/* The scripted peer's side of the conn. */
typedef struct peer6 {
    th *t;
    struct tern_conn *c;       /* the stack's conn */
    uint32_t seq, ack;         /* next to send, last acked */
    uint32_t tsval, tsecr;
} peer6;

static void put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static uint32_t pseudo6(const uint8_t *src, const uint8_t *dst, size_t len)
{
    uint32_t s = 6 + (uint32_t)len;
    for (int i = 0; i < 16; i += 2)
        s += th_rd16(src + i) + th_rd16(dst + i);
    return s;
}

/* A TCP segment from the peer (options: NOP NOP TS, with MSS before them
 * on a SYN) to dst, after ext (an extension header of ext_len bytes whose
 * next header is TCP; none when ext_len is 0), as a frame. */
static size_t seg6(uint8_t *f, const peer6 *p, const uint8_t *dst,
                   uint8_t flags, const void *data, size_t len,
                   const uint8_t *ext, size_t ext_len)
{
    uint8_t s[1600];
    size_t opt = (flags & 0x02) ? 16 : 12, hl = 20 + opt;
    memset(s, 0, hl);
    put16(s, PEER_PORT);
    put16(s + 2, PORT);
    th_put32(s + 4, p->seq);
    th_put32(s + 8, (flags & 0x10) ? p->ack : 0);
    s[12] = (uint8_t)(hl / 4) << 4;
    s[13] = flags;
    put16(s + 14, 65535);
    uint8_t *o = s + 20;
    if (flags & 0x02) {
        o[0] = 2;
        o[1] = 4;
        put16(o + 2, 1440);
        o += 4;
    }
    o[0] = 1;
    o[1] = 1;
    o[2] = 8;
    o[3] = 10;
    th_put32(o + 4, p->tsval);
    th_put32(o + 8, p->tsecr);
    if (len)
        memcpy(s + hl, data, len);
    put16(s + 16, th_csum_ref(s, hl + len, pseudo6(TH6_PEER, dst, hl + len)));
    uint8_t pl[1700];
    if (ext_len)
        memcpy(pl, ext, ext_len);
    memcpy(pl + ext_len, s, hl + len);
    return th6_pkt(f, TH6_PEER, dst, ext_len ? 0 : 6, 64, pl, ext_len + hl + len);
}

/* A listener on the stack of p->t, the peer's handshake to our address
 * me, and the established conn. */
static void handshake6(peer6 *p, const uint8_t *me)
{
    th6_resolved(p->t);
    assert_int_equal(tern_tcp_listen(p->t->st, PORT, NULL), 0);
    p->seq = 1000;
    p->tsval = 5000;
    uint8_t f[256];
    th_input(p->t, f, seg6(f, p, me, 0x02, NULL, 0, NULL, 0));
    assert_int_equal(p->t->nout, 1);
    const uint8_t *sa = p->t->out[0] + 14 + 40;
    assert_int_equal(sa[13], 0x12);                 /* SYN-ACK */
    p->seq++;
    p->ack = th_rd32(sa + 4) + 1;
    /* the SYN-ACK's TSval, echoed from now on */
    const uint8_t *o = sa + 20, *end = sa + (sa[12] >> 4) * 4;
    while (o < end) {
        if (o[0] == 1) {
            o++;
            continue;
        }
        if (o[0] == 8)
            p->tsecr = th_rd32(o + 2);
        o += o[1];
    }
    th_clear(p->t);
    th_input(p->t, f, seg6(f, p, me, 0x10, NULL, 0, NULL, 0));
    p->c = conn_lookup6(p->t->st, TH6_PEER, me,
                        (uint32_t)PEER_PORT << 16 | PORT);
    assert_non_null(p->c);
    assert_int_equal(p->c->state, TERN_TCP_ESTABLISHED);
    th_clear(p->t);
}

/* The same on a fresh stack with TH6_IP. */
static void connect6(peer6 *p)
{
    memset(p, 0, sizeof *p);
    got_bytes = 0;
    p->t = th6_new(tweak);
    handshake6(p, TH6_IP);
}

/* The frame f in a buffer of the stack's pool. */
static tern_buf *frame_buf(th *t, const uint8_t *f, size_t n)
{
    tern_buf *b = tern_buf_alloc(t->st);
    assert_non_null(b);
    memcpy(b->data, f, n);
    b->len = (uint32_t)n;
    return b;
}

/* Through tcp_input_frame as tern_input has it; whether it took it. */
static bool one_pass(peer6 *p, const uint8_t *f, size_t n)
{
    tern_buf *b = frame_buf(p->t, f, n);
    bool took = tcp_input_frame(p->t->st, b);
    if (!took)
        eth_input(p->t->st, b);         /* as tern_input would */
    tcp_input_done(p->t->st);
    return took;
}

/* The usual segment is taken in one pass: predicted, its bytes
 * delivered, counted as ip6_in and tcp_in once. */
static void usual_segment_in_one_pass(void **s)
{
    (void)s;
    peer6 p;
    connect6(&p);
    const tern_counters *k = tern_get_counters(p.t->st);
    tern_counters c0 = *k;
    uint64_t pred = p.t->st->tcp->predicted;
    uint8_t f[256];
    assert_true(one_pass(&p, f, seg6(f, &p, TH6_IP, 0x18, "abcd", 4, NULL, 0)));
    assert_int_equal(got_bytes, 4);
    assert_int_equal(p.t->st->tcp->predicted, pred + 1);
    assert_int_equal(k->ip6_in, c0.ip6_in + 1);
    assert_int_equal(k->tcp_in, c0.tcp_in + 1);
    assert_int_equal(k->tcp_bytes_in, c0.tcp_bytes_in + 4);
    /* Ethernet padding after the segment is dropped, not delivered */
    p.seq += 4;
    size_t n = seg6(f, &p, TH6_IP, 0x18, "efgh", 4, NULL, 0);
    memset(f + n, 0, 6);
    assert_true(one_pass(&p, f, n + 6));
    assert_int_equal(got_bytes, 8);
    assert_int_equal(th_free(p.t), 0);
}

/* One segment into two identical conns, one through eth_input (the
 * layered path), one through tcp_input_frame: every counter moves the
 * same. */
static void same_counters_as_layered(void **s)
{
    (void)s;
    tern_counters d[2];
    for (int way = 0; way < 2; way++) {
        peer6 p;
        connect6(&p);
        tern_counters c0 = *tern_get_counters(p.t->st);
        uint8_t f[256];
        size_t n = seg6(f, &p, TH6_IP, 0x18, "abcd", 4, NULL, 0);
        if (way == 0) {
            eth_input(p.t->st, frame_buf(p.t, f, n));
            tcp_input_done(p.t->st);
        } else {
            assert_true(one_pass(&p, f, n));
        }
        th_advance_us(p.t, 300000);     /* the delayed ACK leaves */
        tern_counters c1 = *tern_get_counters(p.t->st);
        const uint64_t *v0 = (const uint64_t *)&c0, *v1 = (const uint64_t *)&c1;
        uint64_t *dv = (uint64_t *)&d[way];
        for (size_t i = 0; i < sizeof c0 / sizeof *v0; i++)
            dv[i] = v1[i] - v0[i];
        assert_int_equal(got_bytes, 4);
        assert_int_equal(th_free(p.t), 0);
    }
    assert_int_equal(d[0].tcp_pure_acks_out, 1);
    assert_memory_equal(&d[0], &d[1], sizeof d[0]);
}

/* Frame f (n bytes) through tcp_input_frame: refused, no counter moved;
 * then the layered path takes it. Returns the counters from before. */
static tern_counters refused(th *t, const uint8_t *f, size_t n)
{
    const tern_counters *k = tern_get_counters(t->st);
    tern_buf *b = frame_buf(t, f, n);
    tern_counters c0 = *k;
    assert_false(tcp_input_frame(t->st, b));
    assert_memory_equal(&c0, k, sizeof c0);
    eth_input(t->st, b);
    tcp_input_done(t->st);
    return c0;
}

/* What the one-pass receive refuses: it returns false with no counter,
 * conn or byte changed, and the layered path gives its usual verdict. */
static void unusual_frames_go_layered(void **s)
{
    (void)s;
    peer6 p;
    connect6(&p);
    th *t = p.t;
    const tern_counters *k = tern_get_counters(t->st);
    uint8_t f[256];
    static const uint8_t hbh[8] = {6, 0, 1, 4, 0, 0, 0, 0};  /* PadN */
    static const uint8_t other[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 9};
    uint64_t pred = t->st->tcp->predicted;

    /* a hop-by-hop header: the layered path walks it and delivers */
    refused(t, f, seg6(f, &p, TH6_IP, 0x18, "abcd", 4, hbh, 8));
    assert_int_equal(got_bytes, 4);
    p.seq += 4;

    /* a bad TCP sum: dropped and counted there */
    size_t n = seg6(f, &p, TH6_IP, 0x18, "abcd", 4, NULL, 0);
    f[n - 1] ^= 0x40;
    tern_counters c0 = refused(t, f, n);
    assert_int_equal(k->tcp_drop_csum, c0.tcp_drop_csum + 1);

    /* to an address that is not ours */
    c0 = refused(t, f, seg6(f, &p, other, 0x18, "abcd", 4, NULL, 0));
    assert_int_equal(k->ip6_drop_not_ours, c0.ip6_drop_not_ours + 1);

    /* a payload length past the frame */
    n = seg6(f, &p, TH6_IP, 0x18, "abcd", 4, NULL, 0);
    c0 = refused(t, f, n - 2);
    assert_int_equal(k->ip6_drop_len, c0.ip6_drop_len + 1);

    /* to another MAC */
    n = seg6(f, &p, TH6_IP, 0x18, "abcd", 4, NULL, 0);
    f[5] ^= 1;
    c0 = refused(t, f, n);
    assert_int_equal(k->eth_drop_not_ours, c0.eth_drop_not_ours + 1);

    /* out of order: the conn queues it (not predicted) */
    p.seq += 100;
    refused(t, f, seg6(f, &p, TH6_IP, 0x18, "wxyz", 4, NULL, 0));
    assert_int_equal(p.c->ooo_n, 1);
    assert_int_equal(got_bytes, 4);
    /* only the segment after the hop-by-hop header was predicted, by
     * the layered path */
    assert_int_equal(t->st->tcp->predicted, pred + 1);
    assert_int_equal(th_free(t), 0);
}

/* Data leaves with the template's headers: IPv6, the conn's flow label,
 * hop limit 64, the right lengths and sum; the template is kept. */
static void template_headers(void **s)
{
    (void)s;
    peer6 p;
    connect6(&p);
    th *t = p.t;
    for (int i = 0; i < 3; i++) {
        th_clear(t);
        assert_int_equal(tern_tcp_send(t->st, p.c, "hello", 5), 5);
        tern_flush(t->st);
        assert_int_equal(t->nout, 1);
        const uint8_t *f = t->out[0], *h = f + 14, *tcp = h + 40;
        assert_int_equal(t->out_len[0], 14 + 40 + 32 + 5);
        assert_memory_equal(f, TH_PEER_MAC, 6);
        assert_int_equal(th_rd16(f + 12), 0x86dd);
        assert_int_equal(th_rd32(h) >> 20, 0x600);
        assert_int_equal(th_rd32(h) & 0xfffff, p.c->flow6);
        assert_true(p.c->flow6 != 0);
        assert_int_equal(th_rd16(h + 4), 32 + 5);
        assert_int_equal(h[6], 6);
        assert_int_equal(h[7], 64);
        assert_memory_equal(h + 8, TH6_IP, 16);
        assert_memory_equal(h + 24, TH6_PEER, 16);
        assert_int_equal(th_rd16(tcp), PORT);
        assert_int_equal(th_rd16(tcp + 2), PEER_PORT);
        assert_int_equal(th_rd32(tcp + 8), p.seq);
        assert_true(th6_csum_ok(f, t->out_len[0]));
        assert_memory_equal(tcp + 32, "hello", 5);
        /* the template is valid: built from the neighbor cache */
        assert_int_equal(p.c->tx_arp_gen, t->st->arp_gen);
        assert_true(p.c->tx_arp_until > t->now);
        /* the peer acks it */
        p.ack += 5;
        uint8_t a[256];
        th_input(t, a, seg6(a, &p, TH6_IP, 0x10, NULL, 0, NULL, 0));
    }
    assert_int_equal(th_free(t), 0);
}

/* A neighbor's new MAC (an overriding advertisement) reaches the
 * template: the next segment goes to it. */
static void template_follows_new_mac(void **s)
{
    (void)s;
    peer6 p;
    connect6(&p);
    th *t = p.t;
    assert_int_equal(tern_tcp_send(t->st, p.c, "a", 1), 1);
    tern_flush(t->st);
    p.ack += 1;
    uint8_t f[256];
    th_input(t, f, seg6(f, &p, TH6_IP, 0x10, NULL, 0, NULL, 0));
    uint32_t gen = t->st->arp_gen;
    static const uint8_t mac2[6] = {0x02, 0, 0, 0, 0, 0x77};
    th_input(t, f, th6_na(f, TH6_PEER, TH6_IP, TH6_PEER, 0x20, mac2));
    assert_true(t->st->arp_gen != gen);
    th_clear(t);
    assert_int_equal(tern_tcp_send(t->st, p.c, "b", 1), 1);
    tern_flush(t->st);
    assert_int_equal(t->nout, 1);
    assert_memory_equal(t->out[0], mac2, 6);
    assert_true(th6_csum_ok(t->out[0], t->out_len[0]));
    assert_int_equal(th_free(t), 0);
}

static void tweak_ra(tern_config *c)
{
    c->cb.recv = on_recv;
    c->ip6_accept_ra = 1;
}

/* A Router Advertisement of 2001:db8:2::/64, on-link and autonomous,
 * valid for secs seconds. */
static size_t ra6(uint8_t *f, uint32_t secs)
{
    uint8_t m[16 + 32] = {134, 0, 0, 64};
    uint8_t *o = m + 16;
    o[0] = 3;
    o[1] = 4;
    o[2] = 64;
    o[3] = 0xc0;
    th_put32(o + 4, secs);
    th_put32(o + 8, secs);
    static const uint8_t pre[16] = {0x20, 1, 0xd, 0xb8, 0, 2};
    memcpy(o + 16, pre, 16);
    static const uint8_t router[16] = {0xfe, 0x80, [15] = 0x11};
    static const uint8_t all[16] = {0xff, 2, [15] = 1};
    return th6_icmp(f, router, all, 255, m, sizeof m);
}

/* A conn on an address an RA gave: taken in one pass while the address
 * lives; once it expired, refused there and dropped by the layered path
 * as not ours. */
static void expired_address_refused(void **s)
{
    (void)s;
    static const uint8_t auto_a[16] = {0x20, 1, 0xd, 0xb8, 0, 2, 0, 0,
                                       0, 0, 0, 0xff, 0xfe, 0, 0, 2};
    peer6 p;
    memset(&p, 0, sizeof p);
    got_bytes = 0;
    p.t = th6_new(tweak_ra);
    uint8_t f[256];
    th_poll(p.t);
    th_input(p.t, f, ra6(f, 10));
    /* the IPv6 layer's next deadline is the address's expiry (a
     * sleeping loop wakes for it) */
    assert_int_equal(ip6_poll(p.t->st, p.t->now),
                     p.t->now + 10 * TERN_NS_PER_SEC);
    handshake6(&p, auto_a);
    const tern_counters *k = tern_get_counters(p.t->st);
    assert_true(one_pass(&p, f, seg6(f, &p, auto_a, 0x18, "abcd", 4, NULL, 0)));
    assert_int_equal(got_bytes, 4);
    p.seq += 4;
    th_advance_us(p.t, 11 * 1000000ull);
    uint64_t drops = k->ip6_drop_not_ours;
    assert_false(one_pass(&p, f, seg6(f, &p, auto_a, 0x18, "efgh", 4, NULL, 0)));
    assert_int_equal(k->ip6_drop_not_ours, drops + 1);
    assert_int_equal(got_bytes, 4);
    assert_int_equal(th_free(p.t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(usual_segment_in_one_pass),
        cmocka_unit_test(same_counters_as_layered),
        cmocka_unit_test(unusual_frames_go_layered),
        cmocka_unit_test(template_headers),
        cmocka_unit_test(template_follows_new_mac),
        cmocka_unit_test(expired_address_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
