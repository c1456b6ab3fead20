/* isn.c - initial sequence numbers (RFC 6528), SYN cookies and ephemeral
 * ports (RFC 6056 algorithm 3, RSS-aware). Everything keyed with
 * cfg.secret through tern_siphash. */
#include "tcp.h"

static uint64_t keyed(tern_stack *st, const uint8_t *in, size_t len)
{
    return tern_siphash(st->cfg.secret, in, len);
}

uint32_t tcp_isn(tern_stack *st, uint32_t laddr, uint16_t lport,
                 uint32_t raddr, uint16_t rport, uint64_t now)
{
    uint8_t in[12];
    wr32(in, laddr);
    wr32(in + 4, raddr);
    wr16(in + 8, lport);
    wr16(in + 10, rport);
    /* M: a clock ticking every 4.096 us (RFC 6528 asks for ~4 us). */
    return (uint32_t)(now >> 12) + (uint32_t)keyed(st, in, sizeof in);
}

uint32_t tcp_isn6(tern_stack *st, const uint8_t laddr[16], uint16_t lport,
                  const uint8_t raddr[16], uint16_t rport, uint64_t now)
{
    uint8_t in[36];
    tern_memcpy(in, laddr, 16);
    tern_memcpy(in + 16, raddr, 16);
    wr16(in + 32, lport);
    wr16(in + 34, rport);
    return (uint32_t)(now >> 12) + (uint32_t)keyed(st, in, sizeof in);
}

uint32_t tcp_isn_seg(tern_stack *st, const tcp_seg *s)
{
    if (s->ip6)
        return tcp_isn6(st, s->ip6->dst, s->dport, s->ip6->src, s->sport,
                        st->now);
    return tcp_isn(st, st->cfg.ip, s->dport, s->src, s->sport, st->now);
}

uint32_t tcp_flow_label(tern_stack *st, const uint8_t laddr[16],
                        uint16_t lport, const uint8_t raddr[16],
                        uint16_t rport)
{
    if (st->cfg.no_flow_label)
        return 0;
    uint8_t in[37];
    tern_memcpy(in, laddr, 16);
    tern_memcpy(in + 16, raddr, 16);
    wr16(in + 32, lport);
    wr16(in + 34, rport);
    in[36] = 'f';           /* not the ISN's input */
    uint32_t f = (uint32_t)keyed(st, in, sizeof in) & 0xfffffu;
    return f ? f : 1;
}

/* ---- SYN cookies ----
 * 31..27: time counter (2^36 ns = 68.7 s periods, mod 32)
 * 26..24: MSS index
 * 23..0 : keyed hash of the 4-tuple, the peer's ISN, the counter and index
 * A cookie is good for the counter it was made in and the one before. */
static const uint16_t cookie_mss[8] = {64, 536, 1200, 1360, 1440, 1460,
                                       4312, 8960};

uint32_t tcp_cookie_mss_idx(uint16_t mss)
{
    uint32_t i = 7;
    while (i > 0 && cookie_mss[i] > mss)
        i--;
    return i;
}

static uint32_t cookie_hash(tern_stack *st, const tcp_seg *s, uint32_t peer_isn,
                            uint32_t t, uint32_t idx)
{
    /* IPv4: both addresses in the first 8 bytes; IPv6: in the first 32 */
    uint8_t in[44];
    uint32_t n = 8;
    if (s->ip6) {
        tern_memcpy(in, s->ip6->src, 16);
        tern_memcpy(in + 16, s->ip6->dst, 16);
        n = 32;
    } else {
        wr32(in, s->src);
        wr32(in + 4, st->cfg.ip);
    }
    wr16(in + n, s->sport);
    wr16(in + n + 2, s->dport);
    wr32(in + n + 4, peer_isn);
    wr32(in + n + 8, t << 8 | idx);
    return (uint32_t)keyed(st, in, n + 12) & 0xffffffu;
}

uint32_t tcp_cookie_make(tern_stack *st, const tcp_seg *s, uint32_t mss_idx,
                         uint64_t now)
{
    uint32_t t = (uint32_t)(now >> 36) & 31u;
    return t << 27 | mss_idx << 24 | cookie_hash(st, s, s->seq, t, mss_idx);
}

uint16_t tcp_cookie_check(tern_stack *st, const tcp_seg *s, uint32_t cookie,
                          uint64_t now)
{
    uint32_t t = cookie >> 27, idx = (cookie >> 24) & 7u;
    uint32_t cur = (uint32_t)(now >> 36) & 31u;
    if (t != cur && t != ((cur - 1) & 31u))
        return 0;
    if (cookie_hash(st, s, s->seq - 1, t, idx) != (cookie & 0xffffffu))
        return 0;
    return cookie_mss[idx];
}

/* ---- ephemeral ports ---- */
#define EPH_MIN 49152u
#define EPH_NUM 16384u     /* 49152..65535, a power of two */

static bool port_ok(tern_stack *st, uint32_t raddr, uint16_t rport,
                    uint16_t port, const uint8_t *raddr6,
                    const uint8_t *laddr6)
{
    if (listener_find(st, port))
        return false;
    if (raddr6) {
        if (conn_lookup6(st, raddr6, laddr6, (uint32_t)rport << 16 | port) ||
            twr_lookup6(st, raddr6, laddr6, rport, port) != TCP_NIL)
            return false;
        return st->cfg.rss_queues <= 1 ||
               rss_queue_of6(&st->cfg, raddr6, laddr6, rport, port) ==
                   st->cfg.rss_queue;
    }
    if (conn_lookup(st, raddr, rport, port) ||
        twr_lookup(st, raddr, rport, port) != TCP_NIL)
        return false;
    return rss_queue_of(&st->cfg, raddr, st->cfg.ip, rport, port) ==
           st->cfg.rss_queue || st->cfg.rss_queues <= 1;
}

/* RFC 6056 algorithm 5 on top of algorithm 3: after each choice the
 * counter moves by a keyed random step of 1..500, so one observed port
 * does not reveal the next one to the same destination. */
static uint32_t port_step(tern_stack *st, uint32_t counter)
{
    uint8_t in[12];
    wr32(in, counter);
    wr32(in + 4, (uint32_t)st->now);
    wr32(in + 8, (uint32_t)(st->now >> 32));
    return 1 + (uint32_t)(keyed(st, in, sizeof in) % 500);
}

uint16_t tcp_pick_port(tern_stack *st, uint32_t raddr, uint16_t rport,
                       const uint8_t *raddr6, const uint8_t *laddr6)
{
    struct tcp_layer *tl = TL(st);
    /* F(local address, remote address, remote port) of RFC 6056 */
    uint8_t in[34];
    uint32_t n = 8;
    if (raddr6) {
        tern_memcpy(in, laddr6, 16);
        tern_memcpy(in + 16, raddr6, 16);
        n = 32;
    } else {
        wr32(in, st->cfg.ip);
        wr32(in + 4, raddr);
    }
    wr16(in + n, rport);
    uint32_t offset = (uint32_t)keyed(st, in, n + 2);
    for (uint32_t k = 0; k < EPH_NUM; k++) {
        uint16_t port = (uint16_t)(EPH_MIN + ((offset + tl->port_next++) &
                                              (EPH_NUM - 1)));
        if (port_ok(st, raddr, rport, port, raddr6, laddr6)) {
            tl->port_next += port_step(st, tl->port_next);
            return port;
        }
    }
    return 0;
}
