/* dpdk.h - the extras of the DPDK driver (src/io/dpdk.c) beyond the common
 * tern_driver interface. The driver itself is `tern_driver_dpdk`, built only
 * when CMake found libdpdk (TERN_HAVE_DPDK); this header needs no DPDK
 * header and may be included either way (the functions below exist only
 * with TERN_HAVE_DPDK).
 *
 * See docs/dpdk.md for the EAL arguments, the memif and tap recipes, the
 * buffer/reference scheme and the offload mapping. */
#ifndef TERN_DPDK_H
#define TERN_DPDK_H

#include <stdbool.h>
#include <stdint.h>

#include "io.h"

#ifdef TERN_HAVE_DPDK
extern const tern_driver tern_driver_dpdk;

/*
 * The RSS setup of a device opened with tern_driver_dpdk, for
 * tern_config.rss_key / rss_reta / rss_reta_size / rss_queues: the 40-byte
 * Toeplitz key and the redirection table (entry i = the queue that receives
 * flows whose hash & (size - 1) == i) as read back from the port.
 * reta must have room for 512 entries. Returns 0 when the port spreads
 * flows by that key and table, or -1 (reta_size set to 0) when it does not
 * (one queue, a port without RSS such as net_memif, or a PMD that did not
 * accept or cannot report the configuration): then the peer's transmit
 * queue (memif) or the PMD decides where a flow arrives, and the runtime may
 * steer in software (src/rt/steer.h) with the key and table it chooses.
 */
int tern_dpdk_rss(tern_dev *d, uint8_t key[40], uint16_t *reta,
                  uint16_t *reta_size);

/* The DPDK port id behind a device (for rte_eth_* calls of your own). */
uint16_t tern_dpdk_port(tern_dev *d);

/* Whether the port's link is up now (memif: the peer is connected). */
bool tern_dpdk_link_up(tern_dev *d);

/* Driver counters beyond tern_dev's. */
typedef struct tern_dpdk_stats {
    uint64_t rx_copied;     /* received mbufs not from the queue's pool */
    uint64_t tx_direct;     /* segments handed over as their own mbuf */
    uint64_t tx_cloned;     /* segments sent through an extbuf clone */
    uint64_t tx_copied;     /* segments copied (foreign buffer, no SG...) */
    uint64_t tx_prepare_drops; /* rejected by rte_eth_tx_prepare */
    uint64_t stock_refills; /* bulk moves mempool -> tern free list */
    uint64_t stock_drains;  /* bulk moves tern free list -> mempool */
    uint64_t imissed;       /* rte_eth_stats: dropped by the port (no mbuf,
                               ring full) */
} tern_dpdk_stats;
void tern_dpdk_get_stats(tern_dev *d, tern_dpdk_stats *out);

/* Where queue q's mbufs are now (for leak checks in tests): in the DPDK
 * mempool, in tern's stock (the queue's tern_pool free list), and how many
 * header-only clone mbufs are free. The others are in the PMD (rx ring,
 * tx in flight) or held by tern. */
void tern_dpdk_buffers(tern_dev *d, unsigned q, unsigned *in_mempool,
                       unsigned *in_stock, unsigned *clones_free);
#endif

#endif
