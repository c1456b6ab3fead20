/* frames.h - hand-built Ethernet/IPv4/UDP/TCP frames and an independent,
 * deliberately naive checksum for the io tests. */
#ifndef TERN_TEST_FRAMES_H
#define TERN_TEST_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

#define F_ETH 14
#define F_IP 20
#define F_UDP 8
#define F_TCP 20

static inline uint16_t f_rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t f_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void f_wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void f_wr32(uint8_t *p, uint32_t v)
{
    f_wr16(p, v >> 16);
    f_wr16(p + 2, v);
}

/* RFC 1071 the textbook way: big-endian 16-bit words, 32-bit sum. */
static inline uint32_t ref_sum(const uint8_t *p, size_t n, uint32_t sum)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (n & 1)
        sum += (uint32_t)p[n - 1] << 8;
    return sum;
}
static inline uint16_t ref_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}
static inline uint32_t ref_pseudo(const uint8_t *ip, uint8_t proto, uint32_t l4len)
{
    uint32_t s = ref_sum(ip + 12, 8, 0);
    return s + proto + l4len;
}

/* Whether the IPv4 header / the TCP or UDP checksum of a frame verify. */
static inline bool ip_ok(const uint8_t *f)
{
    return ref_fold(ref_sum(f + F_ETH, (size_t)(f[F_ETH] & 15) * 4, 0)) == 0xffff;
}
static inline bool l4_ok(const uint8_t *f)
{
    const uint8_t *ip = f + F_ETH;
    uint32_t l3 = (uint32_t)(ip[0] & 15) * 4, l4 = f_rd16(ip + 2) - l3;
    return ref_fold(ref_sum(ip + l3, l4, ref_pseudo(ip, ip[9], l4))) == 0xffff;
}

/* Ethernet + IPv4 header (198.18.0.1 -> 198.18.0.2) for l4len bytes. */
static inline size_t f_eth_ip(uint8_t *f, uint8_t proto, uint32_t l4len, uint16_t id)
{
    static const uint8_t eth[F_ETH] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0};
    memcpy(f, eth, F_ETH);
    uint8_t *ip = f + F_ETH;
    memset(ip, 0, F_IP);
    ip[0] = 0x45;
    f_wr16(ip + 2, F_IP + l4len);
    f_wr16(ip + 4, id);
    ip[6] = 0x40;  /* DF */
    ip[8] = 64;
    ip[9] = proto;
    f_wr32(ip + 12, 0xc6120001);
    f_wr32(ip + 16, 0xc6120002);
    return F_ETH + F_IP;
}

/* Payload bytes: a pattern from seed, so every frame's bytes are known. */
static inline void f_fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* UDP frame, checksums complete unless `partial`: then the IP checksum is
 * 0 and the UDP field holds the folded pseudo-header sum (TX offload). */
static inline size_t f_udp(uint8_t *f, size_t plen, uint32_t seed, bool partial)
{
    size_t o = f_eth_ip(f, 17, (uint32_t)(F_UDP + plen), (uint16_t)seed);
    uint8_t *ip = f + F_ETH, *u = f + o;
    f_wr16(u, 5000);
    f_wr16(u + 2, 7);
    f_wr16(u + 4, (uint32_t)(F_UDP + plen));
    f_wr16(u + 6, 0);
    f_fill(u + F_UDP, plen, seed);
    uint32_t l4 = (uint32_t)(F_UDP + plen);
    if (partial) {
        f_wr16(u + 6, ref_fold(ref_pseudo(ip, 17, l4)));
    } else {
        f_wr16(ip + 10, (uint16_t)~ref_fold(ref_sum(ip, F_IP, 0)));
        uint16_t c = (uint16_t)~ref_fold(ref_sum(u, l4, ref_pseudo(ip, 17, l4)));
        f_wr16(u + 6, c ? c : 0xffff);
    }
    return o + l4;
}

/* TCP frame with `opt` bytes of options (NOPs), same `partial` meaning. */
static inline size_t f_tcp(uint8_t *f, size_t plen, uint32_t seq, uint8_t flags,
                           size_t opt, uint32_t seed, bool partial)
{
    uint32_t l4 = (uint32_t)(F_TCP + opt + plen);
    size_t o = f_eth_ip(f, 6, l4, 0x1234);
    uint8_t *ip = f + F_ETH, *t = f + o;
    memset(t, 0, F_TCP + opt);
    f_wr16(t, 40000);
    f_wr16(t + 2, 80);
    f_wr32(t + 4, seq);
    f_wr32(t + 8, 0xabcdef01);
    t[12] = (uint8_t)(((F_TCP + opt) / 4) << 4);
    t[13] = flags;
    f_wr16(t + 14, 65535);
    memset(t + F_TCP, 1, opt);
    f_fill(t + F_TCP + opt, plen, seed);
    if (partial) {
        f_wr16(t + 16, ref_fold(ref_pseudo(ip, 6, l4)));
    } else {
        f_wr16(ip + 10, (uint16_t)~ref_fold(ref_sum(ip, F_IP, 0)));
        f_wr16(t + 16, (uint16_t)~ref_fold(ref_sum(t, l4, ref_pseudo(ip, 6, l4))));
    }
    return o + l4;
}

/* A buffer of `pool` holding bytes [0, n) of src. */
static inline tern_buf *f_buf(tern_pool *pool, const void *src, size_t n)
{
    tern_buf *b = tern_pool_alloc(pool);
    if (b) {
        /* more would run over the next buffer's descriptor */
        if (n > b->size - (size_t)(b->data - b->head))
            abort();
        memcpy(b->data, src, n);
        b->len = (uint32_t)n;
    }
    return b;
}

/* n bytes as a frame of pool buffers, chained when one is too small. */
static inline tern_buf *f_chain(tern_pool *pool, const void *src, size_t n)
{
    tern_buf *first = NULL, **link = &first;
    const uint8_t *p = src;
    do {
        tern_buf *b = tern_pool_alloc(pool);
        if (!b)
            abort();
        size_t room = b->size - (size_t)(b->data - b->head);
        size_t k = n < room ? n : room;
        memcpy(b->data, p, k);
        b->len = (uint32_t)k;
        *link = b;
        link = &b->frag;
        p += k;
        n -= k;
    } while (n);
    return first;
}

/* Flatten a frame (chain) into out; returns its length. */
static inline size_t f_flat(const tern_buf *b, uint8_t *out)
{
    size_t n = 0;
    for (; b; b = b->frag) {
        memcpy(out + n, b->data, b->len);
        n += b->len;
    }
    return n;
}

#endif
