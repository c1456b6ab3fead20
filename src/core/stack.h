/* stack.h - the instance structure and the internal interfaces between the
 * core's layers. Not part of the public API. */
#ifndef TERN_STACK_H
#define TERN_STACK_H

#include "tern.h"
#include "util.h"

#define ETH_HDR_LEN 14
#define ETH_TYPE_IPV4 0x0800
#define ETH_TYPE_ARP 0x0806
#define IP_PROTO_ICMP 1
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17
#define IP4_HDR_LEN 20
#define IP_FLAG_DF 0x4000
#define IP_TTL 64

#define CTR(st, name) ((st)->ctr.name++)

/* Ones'-complement sum of a 20-byte IPv4 header as five 32-bit words,
 * folded: the common header without the general checksum loop. */
static inline uint32_t ip4_hdr_sum(const uint8_t *h)
{
    return csum_fold64((uint64_t)rd32(h) + rd32(h + 4) + rd32(h + 8) +
                       rd32(h + 12) + rd32(h + 16));
}

/* What the IPv4 layer tells an upper protocol about a received datagram.
 * The upper layer's header starts at buf->data; buf->len is trimmed to the
 * IP payload (Ethernet padding removed). */
typedef struct ip4_rx {
    uint32_t src, dst;        /* host order */
    const uint8_t *ip_hdr;    /* the IPv4 header, for ICMP errors */
    uint16_t ip_hdr_len;
    uint8_t proto;
    bool broadcast;           /* dst was a broadcast address */
} ip4_rx;

struct arp_entry;
struct reasm;
struct arp_pending;
struct tcp_layer;

struct tern_udp {
    uint16_t port;            /* 0 = free slot */
    void *user;
};

struct tern_stack {
    tern_config cfg;
    tern_counters ctr;
    void *user;
    uint64_t now;             /* time of the current input/poll call */
    bool clock_ok;            /* now came from an input/poll call */
    uint32_t netmask;         /* from prefix_len, host order */
    uint32_t bcast;           /* directed broadcast of our subnet */

    /* Frames waiting to be handed to cfg.tx, flushed in bursts. */
    tern_buf **txq;
    uint32_t txn;

    /* ARP cache and frames waiting for resolution (arp.c). */
    struct arp_entry *arp;
    struct arp_pending *arp_wait;
    uint32_t arp_gen;         /* bumped when a resolved MAC changes or goes */
    uint64_t arp_next_scan;

    /* ICMP error rate limiter (token bucket, icmp.c). */
    uint32_t icmp_tokens;
    uint64_t icmp_refill;

    uint16_t ip_id;
    struct reasm *reasm;      /* cfg.reasm_slots (ip4_frag.c) */
    uint64_t reasm_next;      /* earliest expiry held; no scan before it */
    struct tern_udp *udp;     /* cfg.max_udp slots */
    struct tcp_layer *tcp;    /* tcp/ */
};

/* Bytes of a frame that may be a frag chain (scatter-gather, LRO). */
static inline uint32_t buf_chain_len(const tern_buf *b)
{
    uint32_t n = 0;
    for (; b; b = b->frag)
        n += b->len;
    return n;
}
/* tern_buf_release inline for the usual single buffer (every received
 * segment and every acknowledged send buffer ends here). */
static inline void buf_release(tern_stack *st, tern_buf *b)
{
    if (b->frag) {
        tern_buf_release(st, b);
        return;
    }
    if (--b->refs == 0)
        st->cfg.buf_ops.free(st->cfg.buf_ops.ctx, b);
}
/* Partial Internet checksum of len bytes of a chain, starting at `from`
 * inside its first buffer (stack.c). */
uint32_t csum_chain(const tern_buf *b, const uint8_t *from, uint32_t len,
                    uint32_t sum);

/* ---- memory layout: a bump allocator over the instance memory ---- */
typedef struct carve {
    uint8_t *base;            /* NULL while only measuring */
    size_t off;
} carve;
void *carve_take(carve *c, size_t size, size_t align);

/* ---- transmit path (stack.c) ---- */
/* Queue a finished frame for the next tx burst (the stack's reference goes
 * to the driver). Flushes when the burst is full. */
void stack_flush(tern_stack *st);
static inline void stack_tx(tern_stack *st, tern_buf *frame)
{
    st->txq[st->txn++] = frame;
    if (st->txn == st->cfg.tx_burst)
        stack_flush(st);
}
void stack_log(tern_stack *st, int level, const char *msg);

/* ---- Ethernet (eth.c) ---- */
/* Prepend an Ethernet header and queue the frame. */
void eth_input(tern_stack *st, tern_buf *b);
void eth_output(tern_stack *st, tern_buf *b, const uint8_t dst_mac[6],
                uint16_t ethertype);
extern const uint8_t eth_broadcast[6];

/* ---- ARP (arp.c) ---- */
void arp_mem(tern_stack *st, const tern_config *cfg, carve *c);
void arp_input(tern_stack *st, tern_buf *b);
/* Send an IPv4 frame (IP header already at b->data) to next hop `nh`:
 * resolves the MAC or queues the frame while an ARP request is out. */
void arp_resolve_and_send(tern_stack *st, tern_buf *b, uint32_t nh);
uint64_t arp_poll(tern_stack *st, uint64_t now);
/* The clock started (see stack_clock): move deadlines stamped before it by
 * `shift` ns. */
void arp_clock_start(tern_stack *st, uint64_t shift);
void arp_fini(tern_stack *st);   /* release waiting frames */
/* The cached MAC for ip, or NULL. */
const uint8_t *arp_lookup(tern_stack *st, uint32_t ip);
/*
 * For senders that keep a copy of the next hop's MAC (TCP connections):
 * the resolved MAC of nh, or NULL (then send through arp_resolve_and_send,
 * which queues and asks). The copy stays valid while st->arp_gen is
 * unchanged and st->now < *until; after that, call again (it also sends
 * the background refresh an entry in use gets past its reachable time).
 */
const uint8_t *arp_cached(tern_stack *st, uint32_t nh, uint64_t *until);

/* ---- IPv4 (ip4.c) ---- */
void ip4_input(tern_stack *st, tern_buf *b);
/*
 * The common case in one pass, from eth_input: an unfragmented frame to
 * our MAC carrying a 20-byte IPv4 header for our address with the usual
 * TCP segment of a connection (tcp_common_shape). Counts and handles it as
 * the layered path would and returns true; for anything else returns
 * false having changed nothing, and the layered path takes the frame
 * (and drops and counts what it must). b->data: the Ethernet header.
 */
bool ip4_input_common(tern_stack *st, tern_buf *b);
/*
 * Send an IP datagram whose transport header starts at b->data (headroom
 * kept). Fills the IPv4 header (with checksum, or the TX_IP_CSUM flag when
 * the NIC does it), routes via the gateway when dst is off-link, resolves
 * ARP and queues the frame. Consumes the reference. Returns 0 or -tern_err
 * (e.g. -TERN_EMSGSIZE, no route).
 */
int ip4_output(tern_stack *st, tern_buf *b, uint32_t src, uint32_t dst,
               uint8_t proto, uint8_t tos);
/* Reassembly (ip4_frag.c). ip4_reasm takes one fragment (IP header at
 * b->data, len trimmed to the IP total length) and returns the whole
 * datagram in a new buffer once complete, else NULL; it always consumes b. */
void reasm_mem(tern_stack *st, const tern_config *cfg, carve *c);
tern_buf *ip4_reasm(tern_stack *st, tern_buf *b);
uint64_t reasm_poll(tern_stack *st, uint64_t now);
void reasm_fini(tern_stack *st);
/* Pseudo-header partial sum for TCP/UDP checksums (not folded). */
static inline uint32_t ip4_pseudo_sum(uint32_t src, uint32_t dst,
                                      uint8_t proto, uint32_t l4_len)
{
    return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) +
           proto + l4_len;
}
bool ip4_is_local(const tern_stack *st, uint32_t ip);

/* ---- ICMP (icmp.c) ---- */
void icmp_input(tern_stack *st, tern_buf *b, const ip4_rx *ip);
/* Send destination unreachable (code) quoting the offending datagram,
 * rate-limited; never in answer to ICMP errors or broadcasts. */
void icmp_send_unreach(tern_stack *st, const ip4_rx *ip, uint8_t code,
                       const uint8_t *l4, uint32_t l4_len);
#define ICMP_UNREACH_PROTO 2
#define ICMP_UNREACH_PORT 3

/* ---- UDP (udp.c) ---- */
void udp_mem(tern_stack *st, const tern_config *cfg, carve *c);
void udp_input(tern_stack *st, tern_buf *b, const ip4_rx *ip);

/* ---- TCP (tcp/) ---- */
/* Reserve the TCP layer's memory (connection table, hash, timer wheel...)
 * and, when c->base is set, initialise it into st->tcp. While only
 * measuring (c->base == NULL) st is NULL. */
void tcp_mem(tern_stack *st, const tern_config *cfg, carve *c);
void tcp_input(tern_stack *st, tern_buf *b, const ip4_rx *ip);
/* The fast receive path (ip4_input_common), cheap checks first: whether the
 * TCP header h of a len-byte segment is the usual one (32 bytes with NOP NOP
 * TS, no SYN or RST, nonzero ports, not flagged bad by the NIC); then
 * whether its checksum after the checked 20-byte IPv4 header iph is good.
 * Together they mean parsing it cannot drop it. They change nothing. */
bool tcp_common_shape(tern_stack *st, const tern_buf *b, const uint8_t *h,
                      uint32_t len);
bool tcp_common_sum_ok(tern_stack *st, const tern_buf *b, const uint8_t *iph,
                       uint32_t len);
/* Take such a segment (b->data at its TCP header, b->len its length) from
 * src, as tcp_input would after parsing it. */
void tcp_input_common(tern_stack *st, tern_buf *b, uint32_t src);
/* Release every buffer TCP holds (tern_stack_fini). */
void tcp_fini(tern_stack *st);
/* Called once at the end of every tern_input() burst, before the transmit
 * flush: the place to send the one pending ACK per connection. */
void tcp_input_done(tern_stack *st);
/* The clock started: move what was stamped before it by `shift` ns. */
void tcp_clock_start(tern_stack *st, uint64_t shift);
/* Run due TCP timers; returns the next TCP deadline or TERN_NEVER. */
uint64_t tcp_poll(tern_stack *st, uint64_t now);
/* An ICMP error quoting a TCP segment we sent (frag needed, unreachable). */
void tcp_icmp_error(tern_stack *st, uint8_t type, uint8_t code, uint32_t mtu,
                    const uint8_t *quoted_ip, uint32_t quoted_len);

#endif
