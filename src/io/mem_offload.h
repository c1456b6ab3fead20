/* mem_offload.h - what the mem link's emulated NIC does to frame bytes:
 * Internet checksums over frag chains, TX checksum completion, TSO/LRO
 * header rewriting and RX checksum flags. Internal to mem.c. */
#ifndef TERN_MEM_OFFLOAD_H
#define TERN_MEM_OFFLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "tern.h"

/* Bytes in a frame (all segments). */
static inline uint32_t ml_frame_len(const tern_buf *b)
{
    uint32_t n = 0;
    for (; b; b = b->frag)
        n += b->len;
    return n;
}

/* Copy len bytes at offset soff of chain src to offset doff of chain dst
 * (segment lengths of dst already set). */
void ml_chain_copy(tern_buf *dst, uint32_t doff, const tern_buf *src,
                   uint32_t soff, uint32_t len);

/* Ones' complement sum of chain bytes [off, off + len), not inverted, folded
 * to 16 bits, in memory byte order (store the result with memcpy). */
uint16_t ml_csum_chain(const tern_buf *b, uint32_t off, uint32_t len);

/* Fill the IPv4 and/or TCP/UDP checksums asked by `flags`
 * (TERN_BUF_TX_IP_CSUM, TERN_BUF_TX_L4_CSUM) in `copy`, whose headers are in
 * its first segment; l2/l3 lengths come from the sender's `meta` (0 = parse).
 * The L4 field holds the pseudo-header sum. false on malformed headers. */
bool ml_tx_csum(tern_buf *copy, const tern_buf *meta, uint16_t flags);

/* Header layout of a TSO frame. */
typedef struct ml_tso {
    uint32_t l2, l3, l4, hdr;  /* hdr = l2 + l3 + l4 */
    uint32_t payload;          /* bytes after the headers */
    uint32_t seq;              /* TCP sequence number of the first byte */
    uint16_t ip_id;
    uint8_t h[256];            /* the headers as sent */
} ml_tso;

/* Parse the headers of TSO frame f. false when it is not IPv4/TCP or the
 * headers do not fit. */
bool ml_tso_parse(const tern_buf *f, ml_tso *t);

/* Write the headers of segment `idx` carrying payload bytes [off, off+len)
 * into seg (whose payload is already in place after t->hdr bytes), with IP
 * length, ID, checksum, TCP sequence and flags fixed. The TCP checksum is
 * computed when l4_sum, else left as the pseudo-header sum (partial). */
void ml_tso_headers(tern_buf *seg, const ml_tso *t, uint32_t idx,
                    uint32_t off, uint32_t len, bool l4_sum);

/* RX checksum flags an emulated NIC with `caps` puts on frame b. Unless
 * `check`, a frame is trusted (marked good without reading the payload). */
uint16_t ml_rx_flags(const tern_buf *b, uint32_t caps, bool check);

#endif
