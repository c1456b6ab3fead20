/* test_afpacket_tso.c - the AF_PACKET driver's transmit offloads against
 * the Linux kernel on tools/netns.sh veth hosts (run_netns_test.sh starts
 * it in NS_T). Frames are built by hand, no stack is involved; what leaves
 * is read on the kernel's side of the veth by a packet socket made in NS_K,
 * and every segment's IPv4 and TCP/UDP checksums are verified here.
 *
 *   caps_default   TSO, SG and TX_L4_CSUM without options
 *   caps_tso_off   tso=0: no capability at all
 *   tso_segments   a 3,400-byte TSO frame in three buffers, MSS 1000,
 *                  arrives as 4 segments: sequence numbers, lengths, bytes,
 *                  PSH on the last only, valid checksums; counted once in
 *                  tx_tso_frames and tx_frames
 *   tso_many_bufs  a TSO frame of 150 small buffers (more than one sendmsg
 *                  iovec takes: copied first) arrives whole and valid
 *   tso_refused    a TSO frame whose headers are not IPv4 TCP is dropped
 *                  and counted (tx_tso_drops, tx_drops), nothing sent
 *   l4_csum_ring   TCP and UDP frames left with a partial checksum
 *                  (TX_L4_CSUM) go through the ring and arrive with it done
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "drvtest.h"

#define TSO_CAPS (TERN_CAP_TSO | TERN_CAP_SG | TERN_CAP_TX_L4_CSUM)
#define SPORT 40001
#define DPORT 9 /* closed on the kernel side: it answers RSTs, no matter */

static dt_hosts hosts;
static unsigned port_seq;  /* a source port per test: no stale capture */

static tern_dev *open_with(const char *extra)
{
    tern_dev_args a = {.iface = hosts.if_t, .queues = 1, .ring_size = 256,
                       .pool_size = 1024, .extra = extra};
    char err[256] = "";
    tern_dev *d = tern_driver_afpacket.open(&a, err, sizeof(err));
    if (!d)
        fail_msg("open afpacket on %s (%s): %s", hosts.if_t,
                 extra ? extra : "", err);
    return d;
}

static int setup(void **state)
{
    *state = open_with(NULL);
    port_seq++;
    return 0;
}

static int teardown(void **state)
{
    tern_dev *d = *state;
    if (d)
        d->drv->close(d);
    return 0;
}

/* A packet socket on IF_K in the kernel's namespace receiving every frame. */
static int capture_socket(void)
{
    int fd = dt_peer_socket(&hosts, htons(ETH_P_ALL));
    assert_true(fd >= 0);
    return fd;
}

static uint8_t pay(uint32_t i) { return (uint8_t)(i * 13 + 7); }

/* Ethernet + IPv4 + TCP (20 bytes, ACK|PSH) or UDP headers for l4_payload
 * bytes at f, the L4 checksum field holding the pseudo-header sum (the
 * stack's TX_L4_CSUM convention). Returns the header length. */
static size_t headers(uint8_t *f, const tern_dev *d, uint8_t proto,
                      uint16_t sport, uint32_t seq, size_t l4_payload)
{
    uint8_t *ip = dt_eth(f, hosts.mac_k, d->mac, 0x0800);
    size_t l4 = proto == 6 ? 20 : 8;
    memset(ip, 0, 20 + l4);
    ip[0] = 0x45;
    put16(ip + 2, (uint16_t)(20 + l4 + l4_payload));
    put16(ip + 4, 0x2222);
    put16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = proto;
    put32(ip + 12, hosts.ip_t);
    put32(ip + 16, hosts.ip_k);
    put16(ip + 10, dt_csum(ip, 20));
    uint8_t *t = ip + 20;
    put16(t, sport);
    put16(t + 2, DPORT);
    if (proto == 6) {
        put32(t + 4, seq);
        put32(t + 8, 0x01020304);
        t[12] = 5 << 4;
        t[13] = 0x18; /* ACK PSH */
        put16(t + 14, 65535);
    } else {
        put16(t + 4, (uint16_t)(8 + l4_payload));
    }
    uint8_t ph[12];
    memcpy(ph, ip + 12, 8);
    ph[8] = 0;
    ph[9] = proto;
    put16(ph + 10, (uint16_t)(l4 + l4_payload));
    put16(t + (proto == 6 ? 16 : 6), (uint16_t)~dt_csum(ph, 12));
    return 14 + 20 + l4;
}

/* What one captured frame of ours says. */
typedef struct seg {
    uint32_t seq, len;
    uint8_t flags;
} seg;

/* The frame's IPv4 TCP/UDP segment from sport, its checksums verified and
 * its payload checked against pay(off + i); false for other frames. */
static bool our_segment(const uint8_t *f, size_t n, uint8_t proto,
                        uint16_t sport, uint32_t seq0, seg *s)
{
    if (n < 14 + 20 + 8 || get16(f + 12) != 0x0800)
        return false;
    const uint8_t *ip = f + 14, *t = ip + 20;
    if (ip[0] != 0x45 || ip[9] != proto || get16(t) != sport)
        return false;
    size_t tot = get16(ip + 2), l4 = proto == 6 ? (size_t)(t[12] >> 4) * 4 : 8;
    assert_true(14 + tot <= n);
    assert_int_equal(dt_csum(ip, 20), 0);
    uint8_t buf[12 + 2048];
    assert_true(tot - 20 <= 2048);
    memcpy(buf, ip + 12, 8);
    buf[8] = 0;
    buf[9] = proto;
    put16(buf + 10, (uint16_t)(tot - 20));
    memcpy(buf + 12, t, tot - 20);
    assert_int_equal(dt_csum(buf, 12 + tot - 20), 0);
    s->len = (uint32_t)(tot - 20 - l4);
    s->seq = proto == 6 ? get32(t + 4) : seq0;
    s->flags = proto == 6 ? t[13] : 0;
    for (uint32_t i = 0; i < s->len; i++)
        if (t[l4 + i] != pay(s->seq - seq0 + i))
            fail_msg("payload byte %u of the segment at offset %u",
                     (unsigned)i, (unsigned)(s->seq - seq0));
    return true;
}

/* Read the capture socket until `want` segments of ours came (bounded:
 * 5 s). Returns how many did. */
static unsigned capture(int fd, uint8_t proto, uint16_t sport, uint32_t seq0,
                        seg *segs, unsigned want)
{
    unsigned got = 0;
    uint64_t end = dt_now_ns() + 5000ull * 1000000ull;
    uint8_t f[4096];
    while (got < want && dt_now_ns() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        struct sockaddr_ll from;
        socklen_t fl = sizeof(from);
        ssize_t r = recvfrom(fd, f, sizeof(f), MSG_DONTWAIT,
                             (struct sockaddr *)&from, &fl);
        if (r > 0 && from.sll_pkttype != PACKET_OUTGOING &&
            our_segment(f, (size_t)r, proto, sport, seq0, &segs[got]))
            got++;
    }
    return got;
}

/* A TSO frame: a header buffer and the payload pay(0..len) cut into
 * buffers of `piece` bytes. */
static tern_buf *tso_frame(tern_dev *d, uint16_t sport, uint32_t seq,
                           uint32_t len, uint32_t piece, uint16_t mss)
{
    tern_pool *pool = d->pools[0];
    tern_buf *h = tern_pool_alloc(pool);
    assert_non_null(h);
    h->len = (uint32_t)headers(h->data, d, 6, sport, seq, len);
    h->flags = TERN_BUF_TX_TSO | TERN_BUF_TX_L4_CSUM;
    h->tso_mss = mss;
    h->l2_len = 14;
    h->l3_len = 20;
    h->l4_len = 20;
    tern_buf **link = &h->frag;
    for (uint32_t off = 0; off < len; off += piece) {
        tern_buf *b = tern_pool_alloc(pool);
        assert_non_null(b);
        b->len = len - off < piece ? len - off : piece;
        for (uint32_t i = 0; i < b->len; i++)
            b->data[i] = pay(off + i);
        *link = b;
        link = &b->frag;
    }
    return h;
}

/* Send a TSO frame and check what arrives: every byte once, in MSS
 * segments, PSH on the last. */
static void tso_check(tern_dev *d, uint32_t len, uint32_t piece)
{
    const uint16_t mss = 1000, sport = (uint16_t)(SPORT + port_seq);
    const uint32_t seq0 = 0x10000000u;
    unsigned want = (len + mss - 1) / mss;
    int fd = capture_socket();
    uint64_t pool_free = tern_pool_available(d->pools[0]);
    tern_buf *f = tso_frame(d, sport, seq0, len, piece, mss);
    d->drv->tx_burst(d, 0, &f, 1);
    seg segs[80];
    assert_true(want <= 80);
    unsigned got = capture(fd, 6, sport, seq0, segs, want);
    close(fd);
    assert_int_equal(got, want);
    uint32_t next = seq0;
    for (unsigned i = 0; i < got; i++) {
        /* veth: one queue, no reordering */
        assert_int_equal(segs[i].seq, next);
        assert_int_equal(segs[i].len, i + 1 < got ? mss : len - i * mss);
        assert_int_equal(segs[i].flags & 0x08, i + 1 < got ? 0 : 0x08);
        next += segs[i].len;
    }
    assert_int_equal(next - seq0, len);
    assert_int_equal(d->tx_tso_frames, 1);
    assert_int_equal(d->tx_tso_drops, 0);
    assert_int_equal(d->tx_frames, 1);
    /* every buffer of the chain went back to the pool */
    assert_int_equal(tern_pool_available(d->pools[0]), pool_free);
}

static void caps_default(void **state)
{
    tern_dev *d = *state;
    assert_int_equal(d->caps, TSO_CAPS);
}

static void caps_tso_off(void **state)
{
    (void)state;
    tern_dev *d = open_with("tso=0");
    assert_int_equal(d->caps, 0);
    d->drv->close(d);
}

static void tso_segments(void **state)
{
    tso_check(*state, 3400, 1300);
}

static void tso_many_bufs(void **state)
{
    tso_check(*state, 150 * 20, 20);
}

static void tso_refused(void **state)
{
    tern_dev *d = *state;
    tern_buf *f = tso_frame(d, (uint16_t)(SPORT + port_seq), 1, 3000, 1500,
                            1000);
    f->data[12] = 0x86; /* an IPv6 EtherType on IPv4 headers */
    f->data[13] = 0xdd;
    uint64_t pool_free = tern_pool_available(d->pools[0]) + 3;
    d->drv->tx_burst(d, 0, &f, 1);
    assert_int_equal(d->tx_tso_frames, 0);
    assert_int_equal(d->tx_tso_drops, 1);
    assert_int_equal(d->tx_drops, 1);
    assert_int_equal(d->tx_frames, 0);
    assert_int_equal(tern_pool_available(d->pools[0]), pool_free);
}

static void l4_csum_ring(void **state)
{
    tern_dev *d = *state;
    uint16_t sport = (uint16_t)(SPORT + port_seq);
    int fd = capture_socket();
    tern_buf *f[2];
    for (int i = 0; i < 2; i++) {
        uint8_t proto = i == 0 ? 6 : 17;
        uint32_t plen = i == 0 ? 333 : 517;
        f[i] = tern_pool_alloc(d->pools[0]);
        assert_non_null(f[i]);
        size_t h = headers(f[i]->data, d, proto, sport, 5000, plen);
        for (uint32_t k = 0; k < plen; k++)
            f[i]->data[h + k] = pay(k);
        f[i]->len = (uint32_t)(h + plen);
        f[i]->flags = TERN_BUF_TX_L4_CSUM;
        f[i]->l2_len = 14;
        f[i]->l3_len = 20;
    }
    d->drv->tx_burst(d, 0, f, 2);
    seg s;
    assert_int_equal(capture(fd, 6, sport, 5000, &s, 1), 1);
    assert_int_equal(s.len, 333);
    assert_int_equal(capture(fd, 17, sport, 0, &s, 1), 1);
    assert_int_equal(s.len, 517);
    close(fd);
    assert_int_equal(d->tx_frames, 2);
    assert_int_equal(d->tx_tso_frames, 0);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("SKIP: driver tests need root\n");
        return DT_SKIP;
    }
    if (!dt_hosts_load(&hosts))
        return 2;
    if (strcmp(hosts.mode, "veth")) {
        printf("SKIP: needs veth hosts\n");
        return DT_SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(caps_default, setup, teardown),
        cmocka_unit_test_setup_teardown(caps_tso_off, setup, teardown),
        cmocka_unit_test_setup_teardown(tso_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(tso_many_bufs, setup, teardown),
        cmocka_unit_test_setup_teardown(tso_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(l4_csum_ring, setup, teardown),
    };
    return cmocka_run_group_tests_name("afpacket tso", tests, NULL, NULL);
}
