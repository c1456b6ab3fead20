/* fuzz_env.c - see fuzz_env.h.
 *
 * Building the start state (tern_stack_init, bind, listen, a three-frame
 * handshake) costs far more than most inputs, so it is built once and
 * snapshotted: the instance memory, the buffer descriptors and the free
 * list. fz_reset() copies them back. The instance lives at one fixed
 * address and, in the start state, holds no buffer and no pointer to
 * anything outside itself except the callbacks below (static functions
 * with no state), so the copy is the same instance the handshake built.
 * check_snapshot() proves that once per process: a second instance built
 * from scratch must equal the snapshot byte for byte, and the restored
 * connection must take an in-window segment. */
#include "fuzz_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *instance;
static size_t instance_size;
static tern_stack *cur;
static uint8_t last_synack[128];
static size_t last_synack_len;
static uint32_t our_iss;
static size_t received;         /* payload bytes handed to on_recv */
static unsigned sent;           /* frames given to fz_tx */

/* the start state */
static void *snap_instance;

static void fz_tx(void *ctx, tern_buf **frames, unsigned n)
{
    (void)ctx;
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        /* remember a SYN-ACK so the handshake can answer it */
        if (f->len >= 54 && f->len <= sizeof last_synack &&
            f->data[23] == 6 && (f->data[47] & 0x12) == 0x12) {
            memcpy(last_synack, f->data, f->len);
            last_synack_len = f->len;
        }
        sent++;
        tern_buf_release(cur, f);
    }
}

/* Up to three app buffers of the received bytes (data[1] & 3 of them, at
 * most 64 bytes each), queued with one tern_tcp_send_bufs: with their
 * sums when data[1] is odd; every fourth buffer emptied, to be refused.
 * The ones not queued go back. */
static void send_batch(tern_stack *st, tern_conn *c, const uint8_t *data,
                       size_t len)
{
    tern_buf *bufs[3];
    uint32_t sums[3];
    unsigned want = len > 1 ? data[1] & 3u : 1u;
    if (want == 0)
        want = 3;
    unsigned n = tern_buf_alloc_n(st, bufs, want);
    size_t piece = len > 64 ? 64 : len;
    for (unsigned i = 0; i < n; i++) {
        memcpy(bufs[i]->data, data, piece);
        bufs[i]->len = (len + i) % 4 == 3 ? 0 : (uint32_t)piece;
        sums[i] = tern_csum_partial(bufs[i]->data, bufs[i]->len, 0);
    }
    long q = n ? tern_tcp_send_bufs(st, c, bufs, len > 1 && (data[1] & 1) ?
                                                 sums : NULL, n) : 0;
    for (unsigned i = q > 0 ? (unsigned)q : 0; i < n; i++)
        tern_buf_release(st, bufs[i]);
}

static size_t on_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                      const uint8_t *data, size_t len)
{
    (void)user; (void)b;
    received += len;
    if (len && data[0] == 'E')      /* exercise sending from a callback */
        tern_tcp_send(st, c, data, len > 64 ? 64 : len);
    if (len && data[0] == 'B')      /* ...and a batch of app buffers */
        send_batch(st, c, data, len);
    return len;
}

static void *on_accept(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)c;
    return lu;
}

static void w16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void w32(uint8_t *p, uint32_t v) { w16(p, (uint16_t)(v >> 16)); w16(p + 2, (uint16_t)v); }
static uint32_t r32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const uint8_t us_mac[6] = {2, 0, 0, 0, 0, 2}, peer_mac[6] = {2, 0, 0, 0, 0, 1};

/* An ARP request from the peer for our address: the stack learns the
 * peer's MAC from it, so the SYN-ACK is sent at once. */
static size_t peer_arp(uint8_t *f)
{
    memset(f, 0, 42);
    memset(f, 0xff, 6);
    memcpy(f + 6, peer_mac, 6);
    w16(f + 12, 0x0806);
    uint8_t *a = f + 14;
    w16(a, 1);
    w16(a + 2, 0x0800);
    a[4] = 6;
    a[5] = 4;
    w16(a + 6, 1);
    memcpy(a + 8, peer_mac, 6);
    w32(a + 14, FZ_PEER);
    w32(a + 24, FZ_IP);
    return 42;
}

/* Ethernet + IPv4 + TCP from the peer with plen bytes of payload
 * (checksums not needed: the stack is configured not to verify them). */
static size_t peer_tcp(uint8_t *f, uint32_t seq, uint32_t ack, uint8_t flags,
                       const char *payload, size_t plen)
{
    memset(f, 0, 54);
    memcpy(f, us_mac, 6);
    memcpy(f + 6, peer_mac, 6);
    w16(f + 12, 0x0800);
    uint8_t *ip = f + 14;
    ip[0] = 0x45;
    w16(ip + 2, (uint16_t)(40 + plen));
    w16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = 6;
    w32(ip + 12, FZ_PEER);
    w32(ip + 16, FZ_IP);
    uint8_t *t = ip + 20;
    w16(t, 40000);
    w16(t + 2, 80);
    w32(t + 4, seq);
    w32(t + 8, ack);
    t[12] = 5 << 4;
    t[13] = flags;
    w16(t + 14, 65535);
    memcpy(f + 54, payload, plen);
    return 54 + plen;
}

/* The start state, built the slow way into the instance memory. */
static void build(void)
{
    tern_config c;
    tern_config_defaults(&c);
    c.ip = FZ_IP;
    c.prefix_len = 24;
    memcpy(c.mac, us_mac, 6);
    fz_pool_use(&c, FZ_POOL_MAX);
    c.tx = fz_tx;
    c.cb.recv = on_recv;
    c.cb.accepted = on_accept;
    c.max_conns = 16;
    c.max_half_open = 4;
    c.max_udp = 2;
    c.arp_entries = 8;
    c.arp_pending = 8;
    c.ooo_max_segs = 8;
    c.tfo_server = true;        /* cookie requests and checks reachable */
    c.tfo_max_pending = 2;
    c.fuzz_skip_csum = true;
    if (!instance) {
        instance_size = tern_stack_size(&c);
        instance = aligned_alloc(TERN_STACK_ALIGN, (instance_size + 63) & ~(size_t)63);
        snap_instance = malloc(instance_size);
    }
    cur = tern_stack_init(instance, instance_size, &c, NULL);
    if (!cur)
        abort();
    tern_udp_bind(cur, 53, NULL, NULL);
    tern_tcp_listen(cur, 80, NULL);
    /* the peer's MAC, then the handshake: SYN, read the SYN-ACK, ACK it */
    uint8_t f[64];
    fz_frame(cur, f, peer_arp(f), 1);
    last_synack_len = 0;
    fz_frame(cur, f, peer_tcp(f, 1000, 0, 0x02, "", 0), 1);
    if (!last_synack_len)
        abort();
    our_iss = r32(last_synack + 14 + 20 + 4);
    if (our_iss != FZ_ISS)
        fprintf(stderr, "fuzz_env: ISS is %#x, not FZ_ISS: the seeds of "
                "make_corpus.py miss the connection\n", (unsigned)our_iss);
    fz_frame(cur, f, peer_tcp(f, 1001, our_iss + 1, 0x10, "", 0), 2);
}

static void fail(const char *why)
{
    fprintf(stderr, "fuzz_env: snapshot check failed: %s\n", why);
    abort();
}

/* Once per process: the snapshot is what a fresh build gives, and the
 * established connection in it works. */
static void check_snapshot(void)
{
    tern_stack_fini(cur);
    if (fz_outstanding())
        fail("buffers held after fini");
    build();
    if (memcmp(instance, snap_instance, instance_size))
        fail("a second build differs from the first");
    tern_stack_fini(cur);
    fz_reset();
    if (tern_tcp_conn_count(cur) != 1)
        fail("no connection");
    uint8_t f[64];
    received = 0;
    sent = 0;
    fz_frame(cur, f, peer_tcp(f, 1001, our_iss + 1, 0x18, "ping", 4), 3);
    tern_poll(cur, 4);
    tern_flush(cur);
    if (received != 4)
        fail("in-window segment not delivered");
    tern_poll(cur, 100 * TERN_NS_PER_MS);
    if (sent == 0)
        fail("segment not acknowledged");
    tern_stack_fini(cur);
    if (fz_outstanding())
        fail("buffers held after the check");
}

tern_stack *fz_reset(void)
{
    if (!instance) {
        build();
        if (fz_outstanding() || tern_tcp_conn_count(cur) != 1)
            fail("start state holds buffers or lacks the connection");
        memcpy(snap_instance, instance, instance_size);
        fz_pool_save();
        check_snapshot();
    }
    memcpy(instance, snap_instance, instance_size);
    fz_pool_restore();
    cur = instance;
    return cur;
}

/* A frame of len bytes in a fresh buffer (len cut to fit); NULL when
 * the pool is dry. */
static tern_buf *frame_buf(const uint8_t *data, size_t *len)
{
    if (*len > FZ_BUF_SIZE - TERN_HEADROOM)
        *len = FZ_BUF_SIZE - TERN_HEADROOM;
    tern_buf *b = fz_alloc(NULL);
    if (b) {
        memcpy(b->data, data, *len);
        b->len = (uint32_t)*len;
    }
    return b;
}

void fz_frame(tern_stack *st, const uint8_t *data, size_t len, uint64_t now)
{
    tern_buf *b = frame_buf(data, &len);
    if (b)
        tern_input(st, &b, 1, now);
}

void fz_frame_sum(tern_stack *st, const uint8_t *data, size_t len,
                  uint64_t now, uint16_t wrong)
{
    tern_buf *b = frame_buf(data, &len);
    if (!b)
        return;
    b->flags = TERN_BUF_RX_SUM;
    b->rx_sum =
        tern_csum_fold(tern_csum_partial(b->data + 14, len - 14, wrong));
    /* step by step, as a driver that lands frames one at a time: the
     * same path as tern_input, through the exported steps */
    tern_input_begin(st, 1, now);
    tern_input_one(st, b);
    tern_input_end(st);
}
