/* ip6.h - the IPv6 layer's internal interfaces: what TCP and UDP over IPv6
 * call (ip6_output, source selection, path MTU, ICMPv6 errors), what they
 * implement (tcp_input6, udp_input6, tcp_icmp6_error), and the state the
 * IPv6 files (ip6*.c, icmp6.c, nd6*.c) share. Not part of the public API. */
#ifndef TERN_IP6_H
#define TERN_IP6_H

#include "stack.h"

#define ETH_TYPE_IPV6 0x86DD
#define IP6_HDR_LEN 40
#define IP6_MIN_MTU 1280
#define IP_PROTO_ICMP6 58
#define IP6_HOP_LIMIT 64
#define IP6_FRAG_HDR_LEN 8

/* Extension header numbers (RFC 8200 4). */
#define IP6_EXT_HOP 0
#define IP6_EXT_ROUTING 43
#define IP6_EXT_FRAGMENT 44
#define IP6_EXT_NONE 59
#define IP6_EXT_DSTOPTS 60

/* ICMPv6 types (RFC 4443, RFC 4861, RFC 3810). */
#define ICMP6_UNREACH 1
#define ICMP6_PACKET_TOO_BIG 2
#define ICMP6_TIME_EXCEEDED 3
#define ICMP6_PARAM_PROBLEM 4
#define ICMP6_ECHO 128
#define ICMP6_ECHO_REPLY 129
#define ICMP6_MLD_QUERY 130
#define ICMP6_MLD_REPORT 131
#define ICMP6_MLD_DONE 132
#define ICMP6_RS 133
#define ICMP6_RA 134
#define ICMP6_NS 135
#define ICMP6_NA 136
#define ICMP6_REDIRECT 137
#define ICMP6_MLD2_REPORT 143
/* codes */
#define ICMP6_UNREACH_PORT 4
#define ICMP6_PARAM_HEADER 0      /* erroneous header field */
#define ICMP6_PARAM_NEXT 1        /* unrecognized Next Header */
#define ICMP6_PARAM_OPTION 2      /* unrecognized IPv6 option */
#define ICMP6_PARAM_CHAIN 3       /* first fragment lacks the header chain */
#define ICMP6_TIME_REASM 1        /* reassembly time exceeded */

/* What the IPv6 layer tells an upper protocol about a received datagram. */
typedef struct ip6_rx {
    const uint8_t *src, *dst;   /* 16 bytes each, inside the received fixed header */
    const uint8_t *ip_hdr;      /* the fixed header, for ICMPv6 errors */
    uint32_t flow;              /* flow label (20 bits), host order */
    uint16_t hdr_len;           /* fixed + extension headers before the L4 header */
    uint8_t proto;              /* upper-layer protocol after the extension headers */
    uint8_t hop_limit;
    bool multicast;             /* dst was a multicast address */
} ip6_rx;

/* From eth_input on EtherType 0x86DD (b->data: the IPv6 header). Validates,
 * walks the extension headers, reassembles, and dispatches with the L4
 * header at b->data and b->len the L4 bytes. Consumes b. */
void ip6_input(tern_stack *st, tern_buf *b);
/* b->data = L4 header (headroom kept); prepends the IPv6 header and
 * Ethernet, resolves the next hop by NDP (queues while INCOMPLETE),
 * consumes b. A datagram over the path MTU is sent in fragments unless it
 * is TCP (-TERN_EMSGSIZE then). src may be NULL: ip6_src_for picks one.
 * 0 or -tern_err. */
int ip6_output(tern_stack *st, tern_buf *b, const uint8_t src[16],
               const uint8_t dst[16], uint8_t proto, uint8_t tclass,
               uint32_t flow);
/* Source address selection (RFC 6724 as far as link-local vs global):
 * 0 or -TERN_EINVAL when no usable address fits dst. */
int ip6_src_for(const tern_stack *st, const uint8_t dst[16], uint8_t src[16]);
/* One of our unicast addresses, DAD done. */
bool ip6_is_local(const tern_stack *st, const uint8_t a[16]);
/* Not ::, ::1, multicast or IPv4-mapped. */
bool ip6_unicast_ok(const uint8_t a[16]);
/* The path MTU towards dst: the link MTU unless a Packet Too Big lowered
 * it (never below IP6_MIN_MTU). */
uint32_t ip6_path_mtu(tern_stack *st, const uint8_t dst[16]);

/* Pseudo-header partial sum (RFC 8200 8.1) for TCP/UDP/ICMPv6 checksums,
 * folded to 16 bits, not inverted: the 32-bit words of both addresses
 * (mod 0xffff a 32-bit word is its halves' sum), the length, the protocol. */
static inline uint32_t ip6_pseudo_sum(const uint8_t src[16], const uint8_t dst[16],
                                      uint8_t proto, uint32_t l4_len)
{
    uint64_t s = (uint64_t)proto + l4_len;
    for (int i = 0; i < 16; i += 4)
        s += (uint64_t)rd32(src + i) + rd32(dst + i);
    return csum_fold64(s);
}

/* ICMPv6 error quoting a datagram we received (port unreachable etc.):
 * the fixed and extension headers (ip->ip_hdr, ip->hdr_len bytes) then
 * l4. Rate-limited; never about ICMPv6 errors, from an unspecified or
 * multicast source, nor to a multicast destination but for Packet Too Big
 * and unrecognized-option parameter problems (RFC 4443 2.4 (e)). */
void icmp6_send_error(tern_stack *st, const ip6_rx *ip, uint8_t type, uint8_t code,
                      uint32_t param, const uint8_t *l4, uint32_t l4_len);

/* Upper layers (tcp/, udp.c). ip6_l4_stub.c stands in until they exist. */
void tcp_input6(tern_stack *st, tern_buf *b, const ip6_rx *ip);
void udp_input6(tern_stack *st, tern_buf *b, const ip6_rx *ip);
void tcp_icmp6_error(tern_stack *st, uint8_t type, uint8_t code, uint32_t mtu,
                     const uint8_t *quoted_ip6, uint32_t quoted_len);

/* ------------------------------------------------------------------------ */
/* Shared by the IPv6 files                                                  */
/* ------------------------------------------------------------------------ */

static inline bool ip6_is_mcast(const uint8_t a[16]) { return a[0] == 0xff; }
static inline bool ip6_is_linklocal(const uint8_t a[16])
{
    return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}
static inline bool ip6_is_unspec(const uint8_t a[16])
{
    static const uint8_t z[16];
    return tern_memcmp(a, z, 16) == 0;
}
static inline bool ip6_eq(const uint8_t *a, const uint8_t *b)
{
    return tern_memcmp(a, b, 16) == 0;
}
/* Whether a and b share the first plen bits. */
bool ip6_prefix_eq(const uint8_t *a, const uint8_t *b, unsigned plen);
/* The solicited-node group ff02::1:ffXX:XXXX of a (RFC 4291 2.7.1). */
void ip6_solicited_node(const uint8_t a[16], uint8_t out[16]);
/* The Ethernet multicast address of group g: 33:33 and its last 4 bytes. */
void ip6_mcast_mac(const uint8_t g[16], uint8_t mac[6]);
extern const uint8_t ip6_all_nodes[16];     /* ff02::1 */
extern const uint8_t ip6_all_routers[16];   /* ff02::2 */
extern const uint8_t ip6_mld2_routers[16];  /* ff02::16 */

/* Our addresses: the config's, the link-local one, one from an RA. */
#define IP6_MAX_ADDRS (TERN_MAX_IP6 + 2)
enum { IP6A_FREE = 0, IP6A_TENTATIVE, IP6A_OK, IP6A_DUPLICATE };
struct ip6_addr {
    uint8_t a[16];
    uint8_t plen;
    uint8_t state;
    uint8_t dad_left;          /* DAD solicitations still to send */
    uint64_t dad_at;           /* next DAD step */
    uint64_t valid_until;      /* RA autoconf: expiry, 0 = forever */
};

#define IP6_PMTU_ENTRIES 16
struct ip6_pmtu {
    uint8_t dst[16];
    uint32_t mtu;              /* 0 = free */
    uint64_t expires;
};

#define IP6_RA_PREFIXES 4
struct ip6_prefix {
    uint8_t p[16];
    uint8_t plen;              /* 0 = free */
    uint64_t until;
};

struct nd_entry;
struct nd_pending;

struct ip6_layer {
    struct ip6_addr addr[IP6_MAX_ADDRS];
    struct ip6_pmtu pmtu[IP6_PMTU_ENTRIES];
    struct ip6_prefix onlink[IP6_RA_PREFIXES];   /* from RAs */
    uint8_t router[16];        /* RA default router; valid while router_until */
    uint64_t router_until;
    uint8_t ll_mac_iid[8];     /* EUI-64 interface identifier */
    bool started;              /* DAD and MLD reports begun */
    bool ra_addrs;             /* an address from an RA was added: one that
                                  may expire (ip6_conn_addr_ok) */
    uint64_t dad_next;         /* nd6_dad_poll's next deadline (0: scan) */
    uint8_t mld_left;          /* unsolicited reports still to send */
    uint64_t mld_at;
    uint8_t rs_left;
    uint64_t rs_at;
    uint32_t icmp_tokens;      /* ICMPv6 error bucket */
    uint64_t icmp_refill;
    uint32_t frag_id;          /* fragment identification counter */
    uint64_t next_poll;        /* earliest deadline held */
    /* neighbor cache (nd6.c) */
    struct nd_entry *nd;
    struct nd_pending *nd_wait;
    uint32_t nd_cap;
    uint32_t nd_incomplete;
    uint32_t nd_nwait;
    uint32_t nd_tokens;
    uint64_t nd_tok_at;
    uint64_t nd_next_scan;
    /* reassembly (ip6_frag.c): cfg.reasm_slots datagrams */
    struct reasm_table reasm;
};

/* ip6.c */
void ip6_mem(tern_stack *st, const tern_config *cfg, carve *c);
uint64_t ip6_poll(tern_stack *st, uint64_t now);
void ip6_clock_start(tern_stack *st, uint64_t shift);
void ip6_fini(tern_stack *st);
/* Our address entry for a (any state), or NULL. */
struct ip6_addr *ip6_addr_find(tern_stack *st, const uint8_t a[16]);
/* Whether a multicast group is one we listen to (all-nodes, solicited-node
 * of one of our addresses). */
bool ip6_mcast_joined(const tern_stack *st, const uint8_t g[16]);
/* Whether dst is on-link (link-local, one of our prefixes, an RA's). */
bool ip6_on_link(const tern_stack *st, const uint8_t dst[16]);
/* The next hop towards unicast dst: dst itself on-link, else the
 * configured gateway or the RA's router; NULL when there is no route. */
const uint8_t *ip6_next_hop(const tern_stack *st, const uint8_t dst[16]);
/* Send the datagram at b->data (fixed header filled) to the next hop for
 * its destination: multicast MAC, on-link neighbor or router. Consumes b. */
int ip6_send(tern_stack *st, tern_buf *b);
/*
 * The IPv6 half of the one-pass receive (tcp_input_frame6): whether frame
 * b (Ethernet header at b->data) is one buffer of at least min_len bytes
 * to our MAC, IPv6 with TCP right after the fixed header (no extension
 * headers), whose payload length fits in the frame and is at least
 * min_plen. The addresses are the caller's to test (tcp_input_frame6
 * matches them against an established conn, then ip6_conn_addr_ok). Word
 * loads with masks, as ip4_common_fields.
 */
static inline bool ip6_common_fields(const tern_stack *st, const tern_buf *b,
                                     uint32_t min_len, uint32_t min_plen)
{
    const uint8_t *e = b->data, *h = e + ETH_HDR_LEN;
    if (!st->ip6 || b->frag || b->len < min_len)
        return false;
    bool mac = eth_dst_is_ours(st, e);
    /* EtherType 0x86DD, then version 6; traffic class and flow are free */
    bool ip = (rd32(e + 12) & 0xfffff000u) == 0x86dd6000u;
    uint32_t plen = rd16(h + 4);
    return mac & ip && h[6] == IP_PROTO_TCP && plen >= min_plen &&
           plen <= b->len - ETH_HDR_LEN - IP6_HDR_LEN;
}
/* Whether a, the local address of an established conn, is still ours
 * with DAD done, as ip6_input tests every destination. It was when the
 * conn was made (ip6_input refuses tentative and duplicate destinations,
 * source selection picks only usable addresses), and a usable address
 * stays so until it expires, which only an RA's can: without those, no
 * test; with them, a is looked up (inline, by 64-bit words). */
static inline bool ip6_conn_addr_ok(const struct ip6_layer *l,
                                    const uint8_t a[16])
{
    if (!l->ra_addrs)
        return true;
    uint64_t a0, a1;
    tern_memcpy(&a0, a, 8);
    tern_memcpy(&a1, a + 8, 8);
    for (unsigned i = 0; i < IP6_MAX_ADDRS; i++) {
        const struct ip6_addr *e = &l->addr[i];
        uint64_t e0, e1;
        tern_memcpy(&e0, e->a, 8);
        tern_memcpy(&e1, e->a + 8, 8);
        if (((e0 ^ a0) | (e1 ^ a1)) == 0)
            return e->state == IP6A_OK;
    }
    return false;
}
/* ip6_output with the hop limit given (255 for Neighbor Discovery). */
int ip6_output_hl(tern_stack *st, tern_buf *b, const uint8_t src[16],
                  const uint8_t dst[16], uint8_t proto, uint8_t tclass,
                  uint32_t flow, uint8_t hl);
void ip6_pmtu_set(tern_stack *st, const uint8_t dst[16], uint32_t mtu);

/* ip6_ext.c: walk the extension headers of a datagram (fixed header at
 * b->data, b->len trimmed to it). Fills ip->proto and ip->hdr_len, or
 * returns false having counted, answered (ICMPv6) and released b. A
 * fragment comes back in *frag_off as the offset of its fragment header
 * (0 when none). */
bool ip6_ext_walk(tern_stack *st, tern_buf *b, ip6_rx *ip, uint32_t *frag_off);

/* ip6_frag.c */
void reasm6_mem(tern_stack *st, const tern_config *cfg, carve *c);
/* Take a fragment (fragment header at b->data + foff); returns the whole
 * datagram (fixed header at ->data, the fragment header gone) once
 * complete, else NULL. Always consumes b. */
tern_buf *ip6_reasm(tern_stack *st, tern_buf *b, uint32_t foff);
uint64_t reasm6_poll(tern_stack *st, uint64_t now);
void reasm6_fini(tern_stack *st);
/* Send the datagram in b (fixed header at b->data, no extension headers;
 * may be a chain) as fragments of at most mtu bytes, each in a fresh
 * buffer; all or none are sent. Consumes b. 0 or -TERN_ENOBUFS. */
int ip6_frag_out(tern_stack *st, tern_buf *b, uint32_t mtu);

/* icmp6.c */
void icmp6_input(tern_stack *st, tern_buf *b, const ip6_rx *ip);
/* tern_icmp_echo to an IPv6 destination: -TERN_EAFNOSUPPORT when the
 * stack has no IPv6, else as there. */
int icmp6_echo(tern_stack *st, const uint8_t dst[16], uint16_t id, uint16_t seq,
               const void *data, size_t len);
/* Checksum the ICMPv6 message at b->data and send it from src (NULL:
 * picked) to dst with hop limit hl (255 for ND). 0 or -tern_err. */
int icmp6_send(tern_stack *st, tern_buf *b, const uint8_t *src,
               const uint8_t dst[16], uint8_t hl);

/* nd6.c: Neighbor Discovery (RFC 4861), DAD (RFC 4862), MLDv2 reports. */
void nd6_mem(tern_stack *st, const tern_config *cfg, carve *c);
void nd6_input(tern_stack *st, tern_buf *b, const ip6_rx *ip);
/* Send an IPv6 frame (fixed header at b->data) to on-link next hop nh:
 * resolves the MAC or queues the frame while a solicitation is out. */
void nd6_resolve_and_send(tern_stack *st, tern_buf *b, const uint8_t nh[16]);
/* The resolved MAC of nh, or NULL (see arp_cached for the contract and
 * `progress`, which confirms a REACHABLE or DELAY entry). */
const uint8_t *nd6_cached(tern_stack *st, const uint8_t nh[16], uint64_t *until,
                          uint64_t progress);
uint64_t nd6_poll(tern_stack *st, uint64_t now);
void nd6_clock_start(tern_stack *st, uint64_t shift);
void nd6_fini(tern_stack *st);
/* DAD of a tentative address (sent now when the clock runs, else when
 * it starts). */
void nd6_dad_start(tern_stack *st, struct ip6_addr *a);
/* A Neighbor Solicitation for target: to its solicited-node group, or to
 * dst_unicast (a probe); from :: without our MAC for DAD. */
void nd6_send_ns(tern_stack *st, const uint8_t target[16], const uint8_t *dst_unicast,
                 bool dad);
/* An MLDv2 report of our solicited-node groups (joining, or answering a
 * query). */
void mld_send_report(tern_stack *st, bool answer);

#endif
