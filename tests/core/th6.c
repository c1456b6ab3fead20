/* th6.c - see th6.h. */
#include "th6.h"

#include <string.h>

const uint8_t TH6_IP[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 2};
const uint8_t TH6_PEER[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 1};
const uint8_t TH6_LL[16] = {0xfe, 0x80, [11] = 0xff, [12] = 0xfe, [15] = 2};
const uint8_t TH6_PEER_LL[16] = {0xfe, 0x80, [11] = 0xff, [12] = 0xfe, [15] = 1};

static void (*user_tweak)(tern_config *cfg);

static void tweak6(tern_config *c)
{
    memcpy(c->ip6[0], TH6_IP, 16);
    c->ip6_prefix_len[0] = 64;
    c->n_ip6 = 1;
    c->ip6_no_dad = 1;
    if (user_tweak)
        user_tweak(c);
}

th *th6_new(void (*tweak)(tern_config *cfg))
{
    user_tweak = tweak;
    return th_new(tweak6);
}

size_t th6_pkt(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint8_t nh,
               uint8_t hl, const void *payload, size_t len)
{
    uint8_t mac[6];
    memcpy(mac, TH_MAC, 6);
    if (dst[0] == 0xff) {
        mac[0] = 0x33;
        mac[1] = 0x33;
        memcpy(mac + 2, dst + 12, 4);
    }
    size_t n = th_eth(out, mac, TH_PEER_MAC, 0x86dd);
    uint8_t *h = out + n;
    memset(h, 0, 40);
    h[0] = 0x60;
    h[4] = (uint8_t)(len >> 8);
    h[5] = (uint8_t)len;
    h[6] = nh;
    h[7] = hl;
    memcpy(h + 8, src, 16);
    memcpy(h + 24, dst, 16);
    memcpy(h + 40, payload, len);
    return n + 40 + len;
}

size_t th6_frag(uint8_t *out, const uint8_t *pl, uint32_t off, uint32_t len,
                int more, uint32_t id, uint8_t nh)
{
    uint8_t p[TH_BUF_SIZE] = {nh};
    if (8 + len > sizeof p)
        len = sizeof p - 8;
    p[2] = (uint8_t)(off >> 8);
    p[3] = (uint8_t)((off & 0xf8) | (more ? 1 : 0));
    th_put32(p + 4, id);
    memcpy(p + 8, pl + off, len);
    return th6_pkt(out, TH6_PEER, TH6_IP, 44, 64, p, 8 + len);
}

static uint32_t pseudo(const uint8_t *src, const uint8_t *dst, uint8_t proto,
                       size_t len)
{
    uint32_t s = 0;
    for (int i = 0; i < 16; i += 2)
        s += th_rd16(src + i) + th_rd16(dst + i);
    return s + proto + (uint32_t)len;
}

size_t th6_icmp(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint8_t hl,
                const uint8_t *msg, size_t len)
{
    uint8_t m[2048];
    memcpy(m, msg, len);
    m[2] = m[3] = 0;
    uint16_t c = th_csum_ref(m, len, pseudo(src, dst, 58, len));
    m[2] = (uint8_t)(c >> 8);
    m[3] = (uint8_t)c;
    return th6_pkt(out, src, dst, 58, hl, m, len);
}

size_t th6_ping(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint16_t id,
                uint16_t seq, size_t len)
{
    uint8_t m[2048] = {128, 0};
    m[4] = (uint8_t)(id >> 8);
    m[5] = (uint8_t)id;
    m[6] = (uint8_t)(seq >> 8);
    m[7] = (uint8_t)seq;
    for (size_t i = 0; i < len; i++)
        m[8 + i] = (uint8_t)(i * 7);
    return th6_icmp(out, src, dst, 64, m, 8 + len);
}

size_t th6_ns(uint8_t *out, const uint8_t *src, const uint8_t *dst,
              const uint8_t *target, const uint8_t *sll)
{
    uint8_t m[32] = {135, 0};
    memcpy(m + 8, target, 16);
    size_t n = 24;
    if (sll) {
        m[24] = 1;
        m[25] = 1;
        memcpy(m + 26, sll, 6);
        n = 32;
    }
    return th6_icmp(out, src, dst, 255, m, n);
}

size_t th6_na(uint8_t *out, const uint8_t *src, const uint8_t *dst,
              const uint8_t *target, uint8_t flags, const uint8_t *tll)
{
    uint8_t m[32] = {136, 0};
    m[4] = flags;
    memcpy(m + 8, target, 16);
    size_t n = 24;
    if (tll) {
        m[24] = 2;
        m[25] = 1;
        memcpy(m + 26, tll, 6);
        n = 32;
    }
    return th6_icmp(out, src, dst, 255, m, n);
}

void th6_resolved(th *t)
{
    uint8_t f[128];
    th_input(t, f, th6_ns(f, TH6_PEER, TH6_IP, TH6_IP, TH_PEER_MAC));
    th_input(t, f, th6_ns(f, TH6_PEER_LL, TH6_LL, TH6_LL, TH_PEER_MAC));
    th_clear(t);
}

size_t th6_icmp_at(const uint8_t *f)
{
    const uint8_t *h = f + 14;
    uint8_t nh = h[6];
    size_t off = 40;
    while (nh == 0 || nh == 43 || nh == 60 || nh == 44) {
        uint8_t next = h[off];
        off += nh == 44 ? 8 : (size_t)(h[off + 1] + 1) * 8;
        nh = next;
    }
    return 14 + off;
}

int th6_find_icmp(const th *t, uint8_t type)
{
    for (unsigned i = 0; i < t->nout; i++) {
        const uint8_t *f = t->out[i];
        if (th_rd16(f + 12) == 0x86dd && f[th6_icmp_at(f)] == type)
            return (int)i;
    }
    return -1;
}

int th6_csum_ok(const uint8_t *f, size_t len)
{
    const uint8_t *h = f + 14;
    size_t l4 = th_rd16(h + 4);
    if (len < 54 + l4 - 0 || (h[6] != 6 && h[6] != 17 && h[6] != 58))
        return 0;
    return th_csum_ref(h + 40, l4, pseudo(h + 8, h + 24, h[6], l4)) == 0;
}
