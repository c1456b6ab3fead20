/* th6.h - IPv6 frame builders and checks for the core tests, on top of
 * th.h. Our side: 2001:db8:1::2/64 and fe80::ff:fe00:2 (from TH_MAC); the
 * peer: 2001:db8:1::1 and fe80::ff:fe00:1 (TH_PEER_MAC). */
#ifndef TERN_TH6_H
#define TERN_TH6_H

#include "th.h"

extern const uint8_t TH6_IP[16], TH6_PEER[16], TH6_LL[16], TH6_PEER_LL[16];

/* A stack with TH6_IP configured and DAD off (addresses usable at once),
 * unless tweak says otherwise. */
th *th6_new(void (*tweak)(tern_config *cfg));
/* Ethernet + fixed header (hop limit hl, next header nh) + payload; the
 * Ethernet destination is TH_MAC, or the group's MAC for a multicast dst. */
size_t th6_pkt(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint8_t nh,
               uint8_t hl, const void *payload, size_t len);
/* An IPv6 fragment from the peer (as th_frag for IPv4): bytes
 * [off, off + len) of the fragmentable part pl, whose first header is nh,
 * with the M flag when more, identification id. */
size_t th6_frag(uint8_t *out, const uint8_t *pl, uint32_t off, uint32_t len,
                int more, uint32_t id, uint8_t nh);
/* The ICMPv6 message msg (its checksum filled in here) in a packet. */
size_t th6_icmp(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint8_t hl,
                const uint8_t *msg, size_t len);
/* An echo request with len data bytes (byte i = i * 7). */
size_t th6_ping(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint16_t id,
                uint16_t seq, size_t len);
/* A Neighbor Solicitation for target (with our-MAC SLLA when sll) and a
 * Neighbor Advertisement (flags byte: 0x40 solicited, 0x20 override). */
size_t th6_ns(uint8_t *out, const uint8_t *src, const uint8_t *dst,
              const uint8_t *target, const uint8_t *sll);
size_t th6_na(uint8_t *out, const uint8_t *src, const uint8_t *dst,
              const uint8_t *target, uint8_t flags, const uint8_t *tll);
/* Make the peer's global and link-local addresses known (an NS from each
 * with its MAC; our answers are cleared). */
void th6_resolved(th *t);
/* The ICMPv6/UDP/TCP checksum of a captured frame with no extension
 * headers is right. */
int th6_csum_ok(const uint8_t *frame, size_t len);
/* Index of the first captured frame that is ICMPv6 of type type (after
 * any extension headers), or -1. */
int th6_find_icmp(const th *t, uint8_t type);
/* Offset of the ICMPv6 header in a captured frame, walking extension
 * headers. */
size_t th6_icmp_at(const uint8_t *frame);

#endif
