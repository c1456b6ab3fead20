/* th.c - see th.h. */
#include "th.h"

#include <stdlib.h>
#include <string.h>

const uint8_t TH_MAC[6] = {2, 0, 0, 0, 0, 2};
const uint8_t TH_PEER_MAC[6] = {2, 0, 0, 0, 0, 1};

static tern_buf *th_alloc(void *ctx)
{
    th *t = ctx;
    if (t->pool_limit && t->bufs_out >= t->pool_limit)
        return NULL;
    tern_buf *b = calloc(1, sizeof *b);
    b->head = malloc(TH_BUF_SIZE);
    b->size = TH_BUF_SIZE;
    b->data = b->head + TERN_HEADROOM;
    b->refs = 1;
    t->bufs_out++;
    return b;
}

static void th_release_buf(void *ctx, tern_buf *b)
{
    th *t = ctx;
    t->bufs_out--;
    free(b->head);
    free(b);
}

static void th_tx(void *ctx, tern_buf **frames, unsigned n)
{
    th *t = ctx;
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        if (t->nout < TH_MAX_FRAMES) {
            t->out[t->nout] = malloc(f->len);
            memcpy(t->out[t->nout], f->data, f->len);
            t->out_len[t->nout++] = f->len;
        }
        tern_buf_release(t->st, f);
    }
}

th *th_new(void (*tweak)(tern_config *cfg))
{
    th *t = calloc(1, sizeof *t);
    tern_config_defaults(&t->cfg);
    memcpy(t->cfg.mac, TH_MAC, 6);
    t->cfg.ip = TH_IP;
    t->cfg.prefix_len = 24;
    t->cfg.buf_ops.alloc = th_alloc;
    t->cfg.buf_ops.free = th_release_buf;
    t->cfg.buf_ops.ctx = t;
    t->cfg.tx = th_tx;
    t->cfg.tx_ctx = t;
    for (int i = 0; i < 16; i++)
        t->cfg.secret[i] = (uint8_t)(i * 7 + 1);
    if (tweak)
        tweak(&t->cfg);
    size_t size = tern_stack_size(&t->cfg);
    t->mem = aligned_alloc(TERN_STACK_ALIGN, (size + 63) & ~(size_t)63);
    int err = -1;
    t->st = tern_stack_init(t->mem, size, &t->cfg, &err);
    if (!t->st)
        abort();
    t->now = 1000 * TERN_NS_PER_SEC;
    return t;
}

void th_clear(th *t)
{
    for (unsigned i = 0; i < t->nout; i++)
        free(t->out[i]);
    t->nout = 0;
}

int th_free(th *t)
{
    tern_stack_fini(t->st);
    th_clear(t);
    int leaked = t->bufs_out;
    free(t->mem);
    free(t);
    return leaked;
}

void th_input(th *t, const uint8_t *frame, size_t len)
{
    tern_buf *b = th_alloc(t);
    memcpy(b->data, frame, len);
    b->len = (uint32_t)len;
    tern_input(t->st, &b, 1, t->now);
}

uint64_t th_poll(th *t)
{
    return tern_poll(t->st, t->now);
}

uint16_t th_rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
uint32_t th_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void w16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void w32(uint8_t *p, uint32_t v) { w16(p, (uint16_t)(v >> 16)); w16(p + 2, (uint16_t)v); }

uint16_t th_csum_ref(const uint8_t *p, size_t len, uint32_t sum)
{
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        sum += (uint32_t)p[len - 1] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

size_t th_eth(uint8_t *out, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
    memcpy(out, dst, 6);
    memcpy(out + 6, src, 6);
    w16(out + 12, type);
    return 14;
}

size_t th_arp(uint8_t *out, uint16_t op, const uint8_t *sha, uint32_t spa,
              const uint8_t *tha, uint32_t tpa)
{
    static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    size_t n = th_eth(out, op == 1 ? bcast : tha, sha, 0x0806);
    uint8_t *a = out + n;
    w16(a, 1);
    w16(a + 2, 0x0800);
    a[4] = 6;
    a[5] = 4;
    w16(a + 6, op);
    memcpy(a + 8, sha, 6);
    w32(a + 14, spa);
    memcpy(a + 18, tha, 6);
    w32(a + 24, tpa);
    return n + 28;
}

size_t th_ip4(uint8_t *out, uint32_t src, uint32_t dst, uint8_t proto,
              uint16_t payload_len)
{
    memset(out, 0, 20);
    out[0] = 0x45;
    w16(out + 2, (uint16_t)(20 + payload_len));
    w16(out + 4, 0x1234);
    w16(out + 6, 0x4000);
    out[8] = 64;
    out[9] = proto;
    w32(out + 12, src);
    w32(out + 16, dst);
    w16(out + 10, th_csum_ref(out, 20, 0));
    return 20;
}

void th_fix_ip_csum(uint8_t *frame)
{
    uint8_t *ip = frame + 14;
    size_t hl = (size_t)(ip[0] & 0xf) * 4;
    w16(ip + 10, 0);
    w16(ip + 10, th_csum_ref(ip, hl, 0));
}

size_t th_frag(uint8_t *f, const uint8_t *pl, uint32_t off, uint32_t len,
               int mf, uint16_t id, uint8_t proto)
{
    size_t n = th_eth(f, TH_MAC, TH_PEER_MAC, 0x0800);
    th_ip4(f + n, TH_PEER_IP, TH_IP, proto, (uint16_t)len);
    uint8_t *ip = f + n;
    ip[4] = (uint8_t)(id >> 8);
    ip[5] = (uint8_t)id;
    uint16_t fl = (uint16_t)((mf ? 0x2000 : 0) | (off / 8));
    ip[6] = (uint8_t)(fl >> 8);
    ip[7] = (uint8_t)fl;
    memcpy(ip + 20, pl + off, len);
    th_fix_ip_csum(f);
    return n + 20 + len;
}

static uint32_t pseudo(uint32_t src, uint32_t dst, uint8_t proto, uint32_t len)
{
    return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto + len;
}

size_t th_udp_frame(uint8_t *out, uint32_t src, uint32_t dst, uint16_t sport,
                    uint16_t dport, const void *data, size_t len)
{
    size_t n = th_eth(out, TH_MAC, TH_PEER_MAC, 0x0800);
    n += th_ip4(out + n, src, dst, 17, (uint16_t)(8 + len));
    uint8_t *u = out + n;
    w16(u, sport);
    w16(u + 2, dport);
    w16(u + 4, (uint16_t)(8 + len));
    w16(u + 6, 0);
    memcpy(u + 8, data, len);
    uint16_t c = th_csum_ref(u, 8 + len, pseudo(src, dst, 17, (uint32_t)(8 + len)));
    w16(u + 6, c ? c : 0xffff);
    return n + 8 + len;
}

size_t th_ping_frame(uint8_t *out, uint32_t src, uint32_t dst, uint16_t id,
                     uint16_t seq, const void *data, size_t len)
{
    size_t n = th_eth(out, TH_MAC, TH_PEER_MAC, 0x0800);
    n += th_ip4(out + n, src, dst, 1, (uint16_t)(8 + len));
    uint8_t *m = out + n;
    m[0] = 8;
    m[1] = 0;
    w16(m + 2, 0);
    w16(m + 4, id);
    w16(m + 6, seq);
    memcpy(m + 8, data, len);
    w16(m + 2, th_csum_ref(m, 8 + len, 0));
    return n + 8 + len;
}

int th_frame_csums_ok(const uint8_t *f, size_t len)
{
    if (len < 34 || th_rd16(f + 12) != 0x0800)
        return 1;                      /* not IPv4: nothing to check */
    const uint8_t *ip = f + 14;
    size_t hl = (size_t)(ip[0] & 0xf) * 4, total = th_rd16(ip + 2);
    if (th_csum_ref(ip, hl, 0) != 0 || 14 + total > len)
        return 0;
    const uint8_t *l4 = ip + hl;
    uint32_t l4len = (uint32_t)(total - hl);
    uint32_t src = th_rd32(ip + 12), dst = th_rd32(ip + 16);
    switch (ip[9]) {
    case 1:
        return th_csum_ref(l4, l4len, 0) == 0;
    case 6:
    case 17:
        return th_csum_ref(l4, l4len, pseudo(src, dst, ip[9], l4len)) == 0;
    }
    return 1;
}

void th_advance_us(th *t, uint64_t us)
{
    uint64_t end = t->now + us * 1000;
    while (t->now < end) {
        uint64_t d = th_poll(t);
        t->now = d < end && d > t->now ? d : end;
    }
    th_poll(t);
}

void th_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
