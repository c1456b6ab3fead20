/* stack.h - the instance structure and the internal interfaces between the
 * core's layers. Not part of the public API. */
#ifndef TERN_STACK_H
#define TERN_STACK_H

#include "tern.h"
#include "util.h"
#include "reasm.h"

#define ETH_HDR_LEN 14
#define ETH_TYPE_IPV4 0x0800
#define ETH_TYPE_ARP 0x0806
#define IP_PROTO_ICMP 1
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17
#define IP4_HDR_LEN 20
#define IP_FLAG_DF 0x4000
#define IP_TTL 64
/* The smallest path MTU an ICMP "fragmentation needed" can set: Linux's
 * min_pmtu, 512 bytes of TCP payload behind 40 bytes of headers. */
#define IP4_MIN_PMTU 552

#define CTR(st, name) ((st)->ctr.name++)

/* Defaults for the config's zero fields (tern.h documents each field);
 * named here because the TCP layer falls back to the same values. */
#define DEF_MTU 1500
#define DEF_SOCK_BUF (256u * 1024)    /* rcv_buf and snd_buf */
#define DEF_OOO_SEGS 64
#define DEF_TIME_WAIT_MS 60000        /* 2 MSL */
#define DEF_RTO_MIN_MS 200            /* Linux's; RFC 6298 says 1 s */
#define DEF_RTO_MAX_MS 60000
#define DEF_RTO_INITIAL_MS 1000       /* RFC 6298 2.1 */
#define DEF_MAX_RETRIES 8
#define DEF_SYN_RETRIES 5
#define DEF_DELACK_MS 40
#define DEF_TFO_PENDING 16            /* Linux's usual TCP_FASTOPEN qlen */
#define DEF_TFO_CACHE 16
/* Knuth's multiplicative hash constant, 2^32 / golden ratio. */
#define HASH_MUL32 2654435761u
#define IP_ID_BUCKETS 64

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
struct arp_pending;
struct tcp_layer;
struct ip6_layer;

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
    uint32_t arp_gen;         /* bumped when a resolved MAC changes or goes
                                 (ARP or IPv6 neighbor discovery) */
    uint64_t arp_next_scan;
    uint32_t arp_incomplete;  /* INCOMPLETE entries */
    uint32_t arp_nwait;       /* frames in arp_wait */
    uint32_t arp_wait_free;   /* first free arp_wait slot (a list) */
    uint32_t arp_tokens;      /* broadcast requests allowed now */
    uint64_t arp_tok_at;      /* when the tokens were last counted */

    /* ICMP error rate limiter (token bucket, icmp.c). */
    uint32_t icmp_tokens;
    uint64_t icmp_refill;

    uint16_t ip_ids[IP_ID_BUCKETS]; /* IPv4 ID counters (ip4.c) */
    struct reasm_table reasm; /* IPv4 datagrams held (ip4_frag.c) */
    struct tern_udp *udp;     /* cfg.max_udp slots */
    struct tcp_layer *tcp;    /* tcp/ */
    struct ip6_layer *ip6;    /* ip6.h; NULL when IPv6 is off */
    /* free buffers below which the pool is under pressure for sends: twice
     * cfg.rx_reserve_bufs (tcp/api.c) */
    uint32_t send_floor;
    /* cfg.buf_ops.stack when the embedder gives none: empty, no room, no
     * span, so the inline pop and push always defer to the ops (and the
     * hot paths need no NULL test). */
    tern_buf_stack no_lifo;
};

/* Bytes of a frame that may be a frag chain (scatter-gather, LRO). */
static inline uint32_t buf_chain_len(const tern_buf *b)
{
    uint32_t n = 0;
    for (; b; b = b->frag)
        n += b->len;
    return n;
}
/* Cut a frame (or chain) to len bytes; buffers past the end keep len 0. */
static inline void buf_trim(tern_buf *b, uint32_t len)
{
    if (!b->frag) {
        b->len = len;
        return;
    }
    for (; b; b = b->frag) {
        if (b->len > len)
            b->len = len;
        len -= b->len;
    }
}
/* Hand back a buffer whose refs fell to 0: onto the pool's LIFO inline
 * when the embedder gave one and it takes b, else through ops.free. */
static inline void buf_free(tern_stack *st, tern_buf *b)
{
    if (!tern_buf_stack_push(st->cfg.buf_ops.stack, b))
        st->cfg.buf_ops.free(st->cfg.buf_ops.ctx, b);
}
/* A fresh buffer: off the pool's LIFO inline when it has a good one, else
 * from ops.alloc (which also judges a free buffer that was written to). */
static inline tern_buf *buf_alloc(tern_stack *st)
{
    tern_buf *b = tern_buf_stack_pop(st->cfg.buf_ops.stack);
    return b ? b : st->cfg.buf_ops.alloc(st->cfg.buf_ops.ctx);
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
        buf_free(st, b);
}
/* Partial Internet checksum of len bytes of a chain, starting at `from`
 * inside its first buffer (stack.c). */
uint32_t csum_chain(const tern_buf *b, const uint8_t *from, uint32_t len,
                    uint32_t sum);

/* A token bucket of `rate` per second with a burst of the same (ICMP
 * errors): takes a token when there is one. */
static inline bool token_take(uint32_t *tokens, uint64_t *refill,
                              uint32_t rate, uint64_t now)
{
    if (now >= *refill) {
        uint64_t add = (now - *refill) / (TERN_NS_PER_SEC / rate) + 1;
        *tokens = (uint32_t)(*tokens + add > rate ? rate : *tokens + add);
        *refill = now + TERN_NS_PER_SEC / rate;
    }
    if (!*tokens)
        return false;
    (*tokens)--;
    return true;
}

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
/* A received frame that tcp_input_frame did not take (tern_input has
 * counted eth_in): the layered path. */
void eth_input(tern_stack *st, tern_buf *b);
/* Prepend an Ethernet header and queue the frame. */
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
 * A reachable entry's copy lasts half its reachable time: `progress`, when
 * not 0, says the sender saw the peer move its connection forward since
 * its last call (RFC 4861 7.3.1's upper-layer hint), at that time; it
 * confirms a still reachable entry, which then never needs a probe while
 * the connection makes progress.
 */
const uint8_t *arp_cached(tern_stack *st, uint32_t nh, uint64_t *until,
                          uint64_t progress);

/* ---- IPv4 (ip4.c) ---- */
void ip4_input(tern_stack *st, tern_buf *b);
/* Addresses no datagram may come from (RFC 1122 3.2.1.3, RFC 1812). */
static inline bool ip4_src_ok(const tern_stack *st, uint32_t src)
{
    /* first octet 1-223 but 127: not 0/8, loopback, multicast, class E
     * or the limited broadcast */
    uint32_t top = src >> 24;
    return top - 1 < 223 && top != 127 && src != st->cfg.ip &&
           src != st->bcast;
}
/* Whether the 20-byte header at h sums to 0xffff. A ones'-complement sum
 * is byte-order independent (RFC 1071) and 0xffff is its own swap, so the
 * header is added as native words, no byte swaps: five 32-bit words into
 * 64 bits (each is its halves' sum mod 0xffff; no carry to fold back). */
static inline bool ip4_hdr_sum_ok(const uint8_t *h)
{
    uint32_t w[5];
    tern_memcpy(w, h, sizeof w);
    uint64_t a = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
    /* Folding keeps the value mod 0xffff (2^16 = 1 there) and only 0
     * folds to 0, so the fold would be 0xffff exactly when a is a nonzero
     * multiple of 0xffff: one multiply-and-compare instead of the fold. */
    return a != 0 && a % 0xffff == 0;
}
/* Whether the Ethernet header at e is to our MAC (the one-pass receive
 * of either family). */
static inline bool eth_dst_is_ours(const tern_stack *st, const uint8_t *e)
{
    /* the destination MAC as a 4-byte and a 2-byte word (native order:
     * only equality matters) */
    const uint8_t *m = st->cfg.mac;
    uint32_t e4, m4;
    uint16_t e2, m2;
    tern_memcpy(&e4, e, 4);
    tern_memcpy(&m4, m, 4);
    tern_memcpy(&e2, e + 4, 2);
    tern_memcpy(&m2, m + 4, 2);
    return ((e4 ^ m4) | (uint32_t)(e2 ^ m2)) == 0;
}
/*
 * The IPv4 half of the one-pass receive (tcp_input_frame): whether frame b
 * (Ethernet header at b->data) is one buffer of at least min_len bytes to
 * our MAC, IPv4 with a 20-byte header, TCP, not a fragment, to our unicast
 * address, with a total length inside the frame and at least min_total.
 * Then nothing in eth_input or ip4_input drops it but the sum test below
 * (ip4_common_sum) and the source test. Word loads with masks, no byte
 * loops.
 */
static inline bool ip4_common_fields(const tern_stack *st, const tern_buf *b,
                                     uint32_t min_len, uint32_t min_total)
{
    const uint8_t *e = b->data, *h = e + ETH_HDR_LEN;
    /* EtherType 0x0800, then version 4 with IHL 5 (the TOS byte is
     * free): tested alone, so an IPv6 frame leaves at once for its own
     * pass */
    if (b->frag || b->len < min_len ||
        (rd32(e + 12) & 0xffffff00u) != 0x08004500u)
        return false;
    uint32_t total = rd16(h + 2), dst = rd32(h + 16);
    bool mac = eth_dst_is_ours(st, e);
    /* flags/fragment offset, TTL, protocol: no MF, offset 0, TCP */
    bool tcp = (rd32(h + 6) & 0x3fff00ffu) == IP_PROTO_TCP;
    return mac & tcp && total >= min_total &&
           total <= b->len - ETH_HDR_LEN && dst == st->cfg.ip &&
           dst != st->bcast;
}
/* The rest of them: a good header sum (or the NIC's flag). The source
 * test (ip4_src_ok) is the TCP layer's (tcp_input_raw). */
static inline bool ip4_common_sum(const tern_stack *st, const tern_buf *b,
                                  const uint8_t *h)
{
    return (b->flags & TERN_BUF_RX_IP_CSUM_OK) || st->cfg.fuzz_skip_csum ||
           ip4_hdr_sum_ok(h);
}
/*
 * Send an IP datagram whose transport header starts at b->data (headroom
 * kept). Fills the IPv4 header (with checksum, or the TX_IP_CSUM flag when
 * the NIC does it), routes via the gateway when dst is off-link, resolves
 * ARP and queues the frame. A datagram larger than the MTU is cut into
 * fragments (ip4_frag_out), except TCP's: those carry DF and must fit.
 * The ID is a keyed hash of (dst, proto) plus a counter (ip4_id).
 * Consumes the reference. Returns 0 or -tern_err (e.g. -TERN_EMSGSIZE,
 * no route, -TERN_ENOBUFS when the fragments found no buffers).
 */
int ip4_output(tern_stack *st, tern_buf *b, uint32_t src, uint32_t dst,
               uint8_t proto, uint8_t tos);
/* The same with the IPv4 ID given (a TCP conn's own, tcp_ip_id). */
int ip4_output_id(tern_stack *st, tern_buf *b, uint32_t src, uint32_t dst,
                  uint8_t proto, uint8_t tos, uint16_t id);
/* A finished IPv4 header at b->data (checksum field 0): sum it (or flag
 * the NIC), count, and send to next hop nh (ARP) or broadcast. */
void ip4_send(tern_stack *st, tern_buf *b, uint32_t nh, bool bcast);
/* Reassembly (ip4_frag.c). ip4_reasm takes one fragment (IP header at
 * b->data, len trimmed to the IP total length) and returns the whole
 * datagram in a new buffer once complete, else NULL; it always consumes b. */
void reasm4_mem(tern_stack *st, const tern_config *cfg, carve *c);
tern_buf *ip4_reasm(tern_stack *st, tern_buf *b);
uint64_t reasm4_poll(tern_stack *st, uint64_t now);
void reasm4_fini(tern_stack *st);
/* Send the datagram in b (IPv4 header hdr, 20 bytes, already filled but
 * for length, flags and checksum; payload at b->data) as fragments of at
 * most the MTU to next hop nh, each in a fresh buffer; all or none are
 * sent. b may be a chain (an ICMP reply to a reassembled request over one
 * buffer). Consumes b. Returns 0 or -TERN_ENOBUFS. */
int ip4_frag_out(tern_stack *st, tern_buf *b, const uint8_t *hdr,
                 uint32_t nh, bool bcast);
/* Every buffer of a datagram's n fragments first (a datagram leaves whole
 * or not at all), each with room bytes after data and Ethernet headroom;
 * false (none kept) when the pool cannot give them all. */
bool frag_bufs(tern_stack *st, tern_buf **fr, uint32_t n, uint32_t room);
/* Copy len bytes between p and chain c at byte offset off, into the
 * chain when to_chain (ip4_frag.c). */
void chain_copy(tern_buf *c, uint32_t off, uint8_t *p, uint32_t len,
                bool to_chain);
/* Pseudo-header partial sum for TCP/UDP checksums (not folded). */
static inline uint32_t ip4_pseudo_sum(uint32_t src, uint32_t dst,
                                      uint8_t proto, uint32_t l4_len)
{
    return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) +
           proto + l4_len;
}
/* The same sum mod 0xffff with the addresses added whole: a 32-bit word
 * is its halves' sum mod 0xffff (2^16 = 1 there), and so is each carry
 * out of 32 bits, added back in. For a checksum's `sum` argument (all of
 * them fold mod 0xffff): two adds with carries instead of four halves. */
static inline uint32_t ip4_pseudo_sum32(uint32_t src, uint32_t dst,
                                        uint8_t proto, uint32_t l4_len)
{
    uint32_t s = src + dst;
    s += s < src;
    uint32_t t = s + (proto + l4_len);
    return t + (t < s);
}
bool ip4_is_local(const tern_stack *st, uint32_t ip);

/* ---- ICMP (icmp.c) and what ICMPv6 builds alike (icmp_msg.c) ---- */
#define ICMP_MSG_HDR_LEN 8    /* type, code, checksum, a 32-bit word */
/* An echo request (ICMP's type 8, ICMPv6's 128) of len data bytes in a
 * fresh buffer, checksum not yet set; NULL with *err -TERN_ENOBUFS
 * (counted) or -TERN_EMSGSIZE (over one buffer). */
tern_buf *icmp_echo_msg(tern_stack *st, uint8_t type, uint16_t id,
                        uint16_t seq, const void *data, size_t len, int *err);
/* An error message in a fresh buffer, checksum not yet set: type, code,
 * the 32-bit word after the checksum, then the quote: the offending
 * datagram's header (hdr_len bytes) and l4_len bytes of what followed it,
 * cut to quote_max bytes and to the buffer. NULL (counted) when no buffer. */
tern_buf *icmp_error_msg(tern_stack *st, uint8_t type, uint8_t code,
                         uint32_t word, const uint8_t *hdr, uint32_t hdr_len,
                         const uint8_t *l4, uint32_t l4_len,
                         uint32_t quote_max);
/* Take a token from an error bucket (cfg.icmp_rate_per_sec a second, a
 * burst of as many); false, counted in *limited, when it is empty. */
bool icmp_rate_ok(tern_stack *st, uint32_t *tokens, uint64_t *refill,
                  uint64_t *limited);
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
/*
 * The common case in one pass, from tern_input: one buffer to our MAC
 * with a 20-byte IPv4 header for our address and the usual TCP segment
 * (32-byte header with NOP NOP TS, neither SYN nor RST, good sums).
 * Counts and handles it as eth_input, ip4_input and tcp_input would
 * (eth_in is the caller's; a source ip4_src_ok refuses or a zero port is
 * dropped under its counter, as there) and returns true. A frame of that
 * shape with a bad TCP sum goes to eth_input from here (which drops and
 * counts it); true. For anything else returns false having changed
 * nothing, and eth_input takes the frame (and drops and counts what it
 * must). b->data: the Ethernet header.
 */
bool tcp_input_frame(tern_stack *st, tern_buf *b);
/* Release every buffer TCP holds (tern_stack_fini). */
void tcp_fini(tern_stack *st);
/* Called once at the start of every tern_input() burst of n frames. */
void tcp_input_begin(tern_stack *st, unsigned n);
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
