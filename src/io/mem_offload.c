/* mem_offload.c - checksum and segmentation offloads of the mem link's
 * emulated NIC (see mem_offload.h). Checksums use the core's exported
 * tern_csum_partial (network order), the same fast loop the stack uses. */
#include "mem_offload.h"

#include <string.h>

#define ETH_LEN 14
#define ETHERTYPE_IPV4 0x0800
#define PROTO_TCP 6
#define PROTO_UDP 17
#define TCP_FIN 0x01
#define TCP_PSH 0x08
#define TCP_CWR 0x80

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static uint16_t swap16(uint16_t v) { return (uint16_t)(v << 8 | v >> 8); }

uint16_t ml_csum_chain(const tern_buf *b, uint32_t off, uint32_t len)
{
    uint32_t acc = 0;
    uint32_t pos = 0;  /* bytes summed so far: odd means bytes are swapped */
    for (; b && len; b = b->frag) {
        if (off >= b->len) {
            off -= b->len;
            continue;
        }
        uint32_t n = b->len - off < len ? b->len - off : len;
        uint16_t s = tern_csum_fold(tern_csum_partial(b->data + off, n, 0));
        acc += (pos & 1) ? swap16(s) : s;
        pos += n;
        len -= n;
        off = 0;
    }
    return tern_csum_fold(acc);
}

void ml_chain_copy(tern_buf *dst, uint32_t doff, const tern_buf *src,
                   uint32_t soff, uint32_t len)
{
    while (dst && doff >= dst->len) {
        doff -= dst->len;
        dst = dst->frag;
    }
    while (src && soff >= src->len) {
        soff -= src->len;
        src = src->frag;
    }
    while (len && dst && src) {
        uint32_t n = dst->len - doff;
        if (src->len - soff < n)
            n = src->len - soff;
        if (len < n)
            n = len;
        memcpy(dst->data + doff, src->data + soff, n);
        len -= n;
        if ((doff += n) == dst->len) {
            dst = dst->frag;
            doff = 0;
        }
        if ((soff += n) == src->len) {
            src = src->frag;
            soff = 0;
        }
    }
}

/* Pseudo-header sum (RFC 793/768) of the IPv4 header at ip. */
static uint32_t pseudo_sum(const uint8_t *ip, uint8_t proto, uint32_t l4len)
{
    uint8_t ph[12];
    memcpy(ph, ip + 12, 8);
    ph[8] = 0;
    ph[9] = proto;
    wr16(ph + 10, l4len);
    return tern_csum_partial(ph, sizeof(ph), 0);
}

static void store_csum(uint8_t *field, uint16_t c)
{
    wr16(field, c);
}

static void ip_csum_fill(uint8_t *ip, uint32_t l3)
{
    ip[10] = ip[11] = 0;
    store_csum(ip + 10, (uint16_t)~tern_csum_fold(tern_csum_partial(ip, l3, 0)));
}

/* The IPv4 header of b after l2 bytes, or NULL. *l3 gets its length. */
static uint8_t *ipv4_at(const tern_buf *b, uint32_t l2, uint32_t *l3)
{
    if (l2 < ETH_LEN || b->len < l2 + 20 ||
        rd16(b->data + l2 - 2) != ETHERTYPE_IPV4)
        return NULL;
    uint8_t *ip = b->data + l2;
    uint32_t ihl = (uint32_t)(ip[0] & 15) * 4;
    if (ip[0] >> 4 != 4 || ihl < 20 || b->len < l2 + ihl)
        return NULL;
    if (*l3 == 0)
        *l3 = ihl;
    return ip;
}

bool ml_tx_csum(tern_buf *copy, const tern_buf *meta, uint16_t flags)
{
    uint32_t l2 = meta->l2_len ? meta->l2_len : ETH_LEN, l3 = meta->l3_len;
    uint8_t *ip = ipv4_at(copy, l2, &l3);
    if (!ip || l3 < 20 || copy->len < l2 + l3)
        return false;
    if (flags & TERN_BUF_TX_IP_CSUM)
        ip_csum_fill(ip, l3);
    if (!(flags & TERN_BUF_TX_L4_CSUM))
        return true;
    uint32_t field = ip[9] == PROTO_TCP ? 16 : ip[9] == PROTO_UDP ? 6 : 0;
    uint32_t tot = rd16(ip + 2);
    if (!field || tot < l3 + field + 2 || l2 + tot > ml_frame_len(copy) ||
        copy->len < l2 + l3 + field + 2)
        return false;
    /* The field already holds the pseudo-header sum: sum it with the rest. */
    uint16_t c = (uint16_t)~ml_csum_chain(copy, l2 + l3, tot - l3);
    if (c == 0 && ip[9] == PROTO_UDP)
        c = 0xffff;  /* 0 means "no checksum" in UDP */
    store_csum(ip + l3 + field, c);
    return true;
}

bool ml_tso_parse(const tern_buf *f, ml_tso *t)
{
    uint32_t flen = ml_frame_len(f);
    tern_buf hb = {.data = t->h, .len = flen < sizeof(t->h) ? flen : sizeof(t->h)};
    ml_chain_copy(&hb, 0, f, 0, hb.len);
    t->l2 = f->l2_len ? f->l2_len : ETH_LEN;
    t->l3 = f->l3_len;
    const uint8_t *ip = ipv4_at(&hb, t->l2, &t->l3);
    if (!ip || ip[9] != PROTO_TCP || hb.len < t->l2 + t->l3 + 20)
        return false;
    const uint8_t *tcp = ip + t->l3;
    t->l4 = f->l4_len ? f->l4_len : (uint32_t)(tcp[12] >> 4) * 4;
    t->hdr = t->l2 + t->l3 + t->l4;
    if (t->l4 < 20 || t->hdr > hb.len)
        return false;
    t->payload = flen - t->hdr;
    t->seq = rd32(tcp + 4);
    t->ip_id = rd16(ip + 4);
    return true;
}

void ml_tso_headers(tern_buf *seg, const ml_tso *t, uint32_t idx,
                    uint32_t off, uint32_t len, bool l4_sum)
{
    memcpy(seg->data, t->h, t->hdr);
    uint8_t *ip = seg->data + t->l2, *tcp = ip + t->l3;
    wr16(ip + 2, t->l3 + t->l4 + len);
    wr16(ip + 4, (uint32_t)(t->ip_id + idx));
    ip_csum_fill(ip, t->l3);
    wr32(tcp + 4, t->seq + off);
    if (off + len < t->payload)
        tcp[13] &= (uint8_t)~(TCP_FIN | TCP_PSH);  /* only the last has them */
    if (off > 0)
        tcp[13] &= (uint8_t)~TCP_CWR;               /* only the first */
    uint32_t ps = pseudo_sum(ip, PROTO_TCP, t->l4 + len);
    if (!l4_sum) {  /* left partial, as the sender's own frames are */
        store_csum(tcp + 16, tern_csum_fold(ps));
        return;
    }
    tcp[16] = tcp[17] = 0;
    uint32_t s = ps + ml_csum_chain(seg, t->l2 + t->l3, t->l4 + len);
    store_csum(tcp + 16, (uint16_t)~tern_csum_fold(s));
}

/* Whether the TCP/UDP checksum of the datagram at ip verifies. */
static bool l4_csum_ok(const tern_buf *b, const uint8_t *ip, uint32_t l2,
                       uint32_t l3)
{
    uint32_t tot = rd16(ip + 2);
    uint32_t min = ip[9] == PROTO_TCP ? 20 : 8;
    if (tot < l3 + min || l2 + tot > ml_frame_len(b))
        return false;
    if (ip[9] == PROTO_UDP && b->len >= l2 + l3 + 8 &&
        rd16(ip + l3 + 6) == 0)
        return true;  /* sender sent no checksum */
    uint32_t s = pseudo_sum(ip, ip[9], tot - l3) +
                 ml_csum_chain(b, l2 + l3, tot - l3);
    return tern_csum_fold(s) == 0xffff;
}

uint16_t ml_rx_flags(const tern_buf *b, uint32_t caps, bool check)
{
    uint32_t l3 = 0;
    const uint8_t *ip = ipv4_at(b, ETH_LEN, &l3);
    if (!ip)
        return 0;
    uint16_t flags = 0;
    if ((caps & TERN_CAP_RX_IP_CSUM) &&
        (!check || tern_csum_fold(tern_csum_partial(ip, l3, 0)) == 0xffff))
        flags |= TERN_BUF_RX_IP_CSUM_OK;
    /* Fragments cannot be verified alone: no L4 verdict, like a NIC. */
    if (!(caps & TERN_CAP_RX_L4_CSUM) ||
        (ip[9] != PROTO_TCP && ip[9] != PROTO_UDP) || (rd16(ip + 6) & 0x3fff))
        return flags;
    if (!check || l4_csum_ok(b, ip, ETH_LEN, l3))
        return flags | TERN_BUF_RX_L4_CSUM_OK;
    return flags | TERN_BUF_RX_L4_CSUM_BAD;
}
