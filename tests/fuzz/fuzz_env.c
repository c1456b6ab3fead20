/* fuzz_env.c - see fuzz_env.h. */
#include "fuzz_env.h"

#include <stdlib.h>
#include <string.h>

#define FZ_BUFS 512
#define FZ_BUF_SIZE 2048

static tern_buf bufs[FZ_BUFS];
static uint8_t *mem_of[FZ_BUFS];
static tern_buf *free_list[FZ_BUFS];
static unsigned nfree;
static long outstanding;
static void *instance;
static size_t instance_size;
static tern_stack *cur;
static uint8_t last_synack[128];
static size_t last_synack_len;

static tern_buf *fz_alloc(void *ctx)
{
    (void)ctx;
    if (!nfree)
        return NULL;
    tern_buf *b = free_list[--nfree];
    b->data = b->head + TERN_HEADROOM;
    b->len = 0;
    b->refs = 1;
    b->flags = 0;
    b->frag = b->next = NULL;
    outstanding++;
    return b;
}

static void fz_free(void *ctx, tern_buf *b)
{
    (void)ctx;
    free_list[nfree++] = b;
    outstanding--;
}

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
        tern_buf_release(cur, f);
    }
}

static size_t on_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                      const uint8_t *data, size_t len)
{
    (void)user; (void)b;
    if (len && data[0] == 'E')      /* exercise sending from a callback */
        tern_tcp_send(st, c, data, len > 64 ? 64 : len);
    return len;
}

static void *on_accept(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)c;
    return lu;
}

static void init_once(void)
{
    if (instance)
        return;
    for (unsigned i = 0; i < FZ_BUFS; i++) {
        mem_of[i] = malloc(FZ_BUF_SIZE);
        bufs[i].head = mem_of[i];
        bufs[i].size = FZ_BUF_SIZE;
        free_list[nfree++] = &bufs[i];
    }
}

static void w16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void w32(uint8_t *p, uint32_t v) { w16(p, (uint16_t)(v >> 16)); w16(p + 2, (uint16_t)v); }
static uint32_t r32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Ethernet + IPv4 + TCP from the peer (checksums not needed: the stack is
 * configured not to verify them). */
static size_t peer_tcp(uint8_t *f, uint32_t seq, uint32_t ack, uint8_t flags)
{
    static const uint8_t us[6] = {2, 0, 0, 0, 0, 2}, peer[6] = {2, 0, 0, 0, 0, 1};
    memset(f, 0, 54);
    memcpy(f, us, 6);
    memcpy(f + 6, peer, 6);
    w16(f + 12, 0x0800);
    uint8_t *ip = f + 14;
    ip[0] = 0x45;
    w16(ip + 2, 40);
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
    return 54;
}

tern_stack *fz_reset(void)
{
    init_once();
    if (cur)
        tern_stack_fini(cur);
    tern_config c;
    tern_config_defaults(&c);
    c.ip = FZ_IP;
    c.prefix_len = 24;
    const uint8_t mac[6] = {2, 0, 0, 0, 0, 2};
    memcpy(c.mac, mac, 6);
    c.buf_ops.alloc = fz_alloc;
    c.buf_ops.free = fz_free;
    c.tx = fz_tx;
    c.cb.recv = on_recv;
    c.cb.accepted = on_accept;
    c.max_conns = 16;
    c.max_half_open = 4;
    c.max_udp = 2;
    c.arp_entries = 8;
    c.arp_pending = 8;
    c.ooo_max_segs = 8;
    c.fuzz_skip_csum = true;
    if (!instance) {
        instance_size = tern_stack_size(&c);
        instance = aligned_alloc(TERN_STACK_ALIGN, (instance_size + 63) & ~(size_t)63);
    }
    cur = tern_stack_init(instance, instance_size, &c, NULL);
    if (!cur)
        abort();
    tern_udp_bind(cur, 53, NULL, NULL);
    tern_tcp_listen(cur, 80, NULL);
    /* handshake: SYN, read the SYN-ACK, ACK it */
    uint8_t f[64];
    last_synack_len = 0;
    fz_frame(cur, f, peer_tcp(f, 1000, 0, 0x02), 1);
    if (last_synack_len) {
        uint32_t iss = r32(last_synack + 14 + 20 + 4);
        fz_frame(cur, f, peer_tcp(f, 1001, iss + 1, 0x10), 2);
    }
    return cur;
}

void fz_frame(tern_stack *st, const uint8_t *data, size_t len, uint64_t now)
{
    if (len > FZ_BUF_SIZE - TERN_HEADROOM)
        len = FZ_BUF_SIZE - TERN_HEADROOM;
    tern_buf *b = fz_alloc(NULL);
    if (!b)
        return;
    memcpy(b->data, data, len);
    b->len = (uint32_t)len;
    tern_input(st, &b, 1, now);
}

long fz_outstanding(void)
{
    return outstanding;
}
