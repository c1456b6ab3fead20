/* th.h - test harness for driving one stack instance with hand-built
 * frames and capturing what it sends. Buffers come from a counting pool so
 * every test can assert that nothing leaked. */
#ifndef TERN_TH_H
#define TERN_TH_H

#include <stddef.h>
#include <stdint.h>

#include "tern.h"

#define TH_MAX_FRAMES 4096
#define TH_BUF_SIZE 2048

typedef struct th {
    tern_stack *st;
    tern_config cfg;
    void *mem;
    /* frames the stack transmitted, in order (copied, then released) */
    uint8_t *out[TH_MAX_FRAMES];
    uint32_t out_len[TH_MAX_FRAMES];
    unsigned nout;
    /* pool accounting */
    int bufs_out;         /* buffers currently lent to the stack */
    int pool_limit;       /* refuse allocations beyond this many (0 = none) */
    uint64_t now;
} th;

/* Our side: 198.18.0.2, MAC 02:00:00:00:00:02 on 198.18.0.0/24. The peer:
 * 198.18.0.1, MAC 02:00:00:00:00:01. */
extern const uint8_t TH_MAC[6], TH_PEER_MAC[6];
#define TH_IP TERN_IP4(198, 18, 0, 2)
#define TH_PEER_IP TERN_IP4(198, 18, 0, 1)
/* A pointer to a tern_addr holding the host-order IPv4 address `ip`, for
 * the calls that take one (valid to the end of the enclosing block). */
#define A4(ip) (&(tern_addr){.family = TERN_AF_INET, .u = {.v4 = (ip)}})

/* Create an instance; `tweak` (may be NULL) edits the config first. */
th *th_new(void (*tweak)(tern_config *cfg));
/* Free it; returns the number of leaked buffers (0 when all came back). */
int th_free(th *t);

/* Feed one frame (copied into a pool buffer) at t->now. */
void th_input(th *t, const uint8_t *frame, size_t len);
uint64_t th_poll(th *t);
void th_clear(th *t);   /* forget captured frames */
/* Move t->now forward by `us`, running every deadline on the way. */
void th_advance_us(th *t, uint64_t us);
/* Store v big-endian at p. */
void th_put32(uint8_t *p, uint32_t v);

/* Frame builders: write into out, return the length. */
size_t th_eth(uint8_t *out, const uint8_t *dst, const uint8_t *src,
              uint16_t type);
size_t th_arp(uint8_t *out, uint16_t op, const uint8_t *sha, uint32_t spa,
              const uint8_t *tha, uint32_t tpa);
/* IPv4 header with a correct checksum; payload follows at out + 20. */
size_t th_ip4(uint8_t *out, uint32_t src, uint32_t dst, uint8_t proto,
              uint16_t payload_len);
/* Whole Ethernet+IPv4+UDP frame with correct checksums. */
size_t th_udp_frame(uint8_t *out, uint32_t src, uint32_t dst, uint16_t sport,
                    uint16_t dport, const void *data, size_t len);
/* Whole Ethernet+IPv4+ICMP echo request. */
size_t th_ping_frame(uint8_t *out, uint32_t src, uint32_t dst, uint16_t id,
                     uint16_t seq, const void *data, size_t len);
/* An IPv4 fragment from the peer: bytes [off, off+len) of the IP payload
 * pl, with MF set when mf, identification id. */
size_t th_frag(uint8_t *f, const uint8_t *pl, uint32_t off, uint32_t len,
               int mf, uint16_t id, uint8_t proto);
/* Recompute the IPv4 header checksum of the frame's IP header. */
void th_fix_ip_csum(uint8_t *frame);

uint16_t th_rd16(const uint8_t *p);
uint32_t th_rd32(const uint8_t *p);
/* Independent reference checksum (byte-wise RFC 1071). */
uint16_t th_csum_ref(const uint8_t *p, size_t len, uint32_t sum);
/* True when a captured frame's IPv4 and L4 checksums are right. */
int th_frame_csums_ok(const uint8_t *frame, size_t len);

#endif
