/* mem.h - an in-memory Ethernet link between two stack instances in one
 * process (end 0 and end 1), with a seeded fault injector.
 *
 * Each end has its own buffer pool: its stack allocates from it and frames
 * delivered to that end are copied into it, so the two stacks never share a
 * buffer (as with two NICs on a wire). tern_memlink_tx() copies every frame
 * into the other end's pool and releases the sender's frame back to the
 * sending end's pool, so frames given to it must come from
 * tern_memlink_buf_ops(link, end). The one exception is by_ref (below):
 * TSO frames reach an LRO receiver as views of the sender's buffers, as
 * veth hands a GSO packet over without copying it.
 *
 * Single thread: both ends are driven from one thread (the tx of one end
 * allocates from the other end's pool).
 *
 * Time: frames sent are stamped with the link's clock, which is the largest
 * `now` seen by tern_memlink_rx() or tern_memlink_set_time(). Without delay,
 * rate or reordering, time plays no part and frames are deliverable at once.
 *
 * Loop of a two-stack test:
 *     n = tern_memlink_rx(l, 0, frames, 32, now); tern_input(a, frames, n, now);
 *     n = tern_memlink_rx(l, 1, frames, 32, now); tern_input(b, frames, n, now);
 *     next = min(tern_poll(a, now), tern_poll(b, now),
 *                tern_memlink_next_event(l, 0), tern_memlink_next_event(l, 1));
 *
 * See docs/mem-driver.md for fault semantics. */
#ifndef TERN_MEM_H
#define TERN_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io.h"
#include "pcap.h"

typedef struct tern_memlink tern_memlink;

/* Impairments of one direction. Probabilities are per frame on the wire
 * (after TSO segmentation), 0..1; 0 turns a fault off. */
typedef struct tern_memlink_faults {
    double loss;        /* frame dropped */
    double dup;         /* frame delivered twice */
    double reorder;     /* frame held back behind the next frame */
    double corrupt;     /* one bit flipped in one byte past the Ethernet header */
    uint64_t delay_ns;  /* fixed one-way latency */
    uint64_t rate_bps;  /* serialisation rate, 0 = unlimited; each frame
                           costs (len + 24) bytes: FCS, preamble, gap */
    uint64_t reorder_hold_ns; /* longest a held frame waits for a successor,
                                 0 = 1 ms */
} tern_memlink_faults;

typedef struct tern_memlink_config {
    unsigned pool_size;  /* buffers per end, default 4096 */
    unsigned buf_size;   /* bytes per buffer incl. TERN_HEADROOM, default
                            2048; at least TERN_HEADROOM + 256 */
    unsigned queue_len;  /* frames in flight per direction, default 1024;
                            more are dropped (counted) */
    uint32_t caps[2];    /* per end: enum tern_cap the end's "NIC" emulates;
                            give the same value to that end's tern_config */
    tern_memlink_faults faults;  /* both directions (change per direction
                                    with tern_memlink_set_faults) */
    uint64_t seed;       /* fault injector seed; same seed, same faults */
    bool verify_csum;    /* with RX checksum caps, verify every frame in
                            software rather than trust the sender (tests) */
    bool partial_csum;   /* as Linux veth: a TX_L4_CSUM frame reaches an
                            RX_L4_CSUM receiver with its checksum left
                            partial (not summed) and flagged good, unless a
                            capture, corruption or verify_csum reads it */
    bool by_ref;         /* as Linux veth: a TSO frame that reaches an LRO+SG
                            receiver unfaulted and uncaptured is passed by
                            reference, its payload not copied. The receiver
                            gets a header buffer of its own and descriptors
                            that view the sender's buffers (which stay held
                            until it frees them), so its frames must be freed
                            through tern_memlink_buf_ops, never with
                            tern_pool_release. Ignored unless one end has
                            TSO and the other LRO and SG. */
    bool rx_sum;         /* as a NIC with CHECKSUM_COMPLETE: a frame the
                            link copies when the receiver takes it (one
                            longer than 256 bytes, unfaulted) is summed in
                            the same pass and flagged TERN_BUF_RX_SUM, so
                            the receiving stack checks its TCP checksum
                            without reading the payload. Off, the link
                            neither computes nor checks checksums: the
                            stacks do (an offload, so the apps name it). */
} tern_memlink_config;

/* Counters of one direction (frames sent by one end). */
typedef struct tern_memlink_stats {
    uint64_t sent;           /* frames given to tx (a TSO frame counts once) */
    uint64_t sent_bytes;
    uint64_t wire;           /* frames put on the wire (after TSO) */
    uint64_t delivered;      /* frames returned by rx at the other end */
    uint64_t delivered_bytes;
    uint64_t lost, duplicated, reordered, corrupted;
    uint64_t queue_drops;    /* queue_len frames already in flight */
    uint64_t pool_drops;     /* receiving end's pool empty */
    uint64_t oversize_drops; /* frame larger than a buffer, receiver no SG */
    uint64_t tso_frames, tso_segments, lro_frames;
    uint64_t by_ref_frames;  /* LRO frames whose payload was not copied */
    uint64_t csum_filled;    /* TX IP/L4 checksums completed */
    uint64_t offload_errors; /* offload flag without the cap, or bad headers */
} tern_memlink_stats;

void tern_memlink_config_defaults(tern_memlink_config *cfg);
/* NULL on bad config or ENOMEM, with one line in err. */
tern_memlink *tern_memlink_create(const tern_memlink_config *cfg, char *err,
                                  size_t errlen);
/* Frees frames in flight, the pools and pcap files the link opened. Frames
 * still held by the application must not be used afterwards. */
void tern_memlink_destroy(tern_memlink *l);

/* Per end: its pool, buffer ops and caps for tern_config. */
tern_pool *tern_memlink_pool(tern_memlink *l, int end);
tern_buf_ops tern_memlink_buf_ops(tern_memlink *l, int end);
uint32_t tern_memlink_caps(const tern_memlink *l, int end);

/* Transmit for tern_config.tx / tx_ctx of an end. Takes one reference of
 * each frame (releases it to the sending end's pool before returning). */
void tern_memlink_tx(void *ctx, tern_buf **frames, unsigned n);
void *tern_memlink_tx_ctx(tern_memlink *l, int end);

/* Up to max frames sent towards `end` whose delivery time is <= now_ns.
 * The caller owns them (release to tern_memlink_pool(l, end)). */
unsigned tern_memlink_rx(tern_memlink *l, int end, tern_buf **frames,
                         unsigned max, uint64_t now_ns);
/* tern_memlink_rx in two steps, so that each frame can be copied into the
 * receiver's buffer just before the stack reads it (tern_input_one). When
 * it sets *unlanded, some of the frames are still the sender's buffers and
 * every one must go through tern_memlink_land, which returns the
 * receiver's frame (NULL: no buffer, a counted drop); otherwise they are
 * the receiver's, as from tern_memlink_rx (small frames are copied when
 * sent, large ones when landed). */
unsigned tern_memlink_rx_unlanded(tern_memlink *l, int end,
                                  tern_buf **frames, unsigned max,
                                  uint64_t now_ns, bool *unlanded);
tern_buf *tern_memlink_land(tern_memlink *l, int end, tern_buf *f);
/* Time at which the next frame towards `end` becomes due (0 if one is due
 * already), or UINT64_MAX when none is in flight. */
uint64_t tern_memlink_next_event(const tern_memlink *l, int end);
/* Frames in flight towards `end` (due or not). */
unsigned tern_memlink_pending(const tern_memlink *l, int end);
/* Advance the link clock (never backwards). */
void tern_memlink_set_time(tern_memlink *l, uint64_t now_ns);

/* Change the faults of frames sent by `from_end`; the PRNG stream goes on. */
void tern_memlink_set_faults(tern_memlink *l, int from_end,
                             const tern_memlink_faults *f);
const tern_memlink_stats *tern_memlink_get_stats(const tern_memlink *l,
                                             int from_end);

/* Capture frames sent by `end`, as delivered (after faults, offloads done,
 * stamped with their delivery time) into a new pcap file owned by the link.
 * path NULL stops. Returns 0 or -1 with err. */
int tern_memlink_set_pcap(tern_memlink *l, int end, const char *path,
                          char *err, size_t errlen);
/* Same with a writer the caller owns (may serve both ends: one file with
 * both directions). NULL stops. */
void tern_memlink_attach_pcap(tern_memlink *l, int end, tern_pcap *pc);

/* The "mem" tern_driver: a device with two queues, queue q being end q of a
 * link, timed by CLOCK_MONOTONIC. args->extra takes key=value pairs:
 * loss, dup, reorder, corrupt (probabilities), delay_ns, rate_bps, seed,
 * buf_size, caps (number), pcap0, pcap1 (paths). */
extern const tern_driver tern_driver_mem;
/* The link behind a device opened with tern_driver_mem. */
tern_memlink *tern_memdev_link(tern_dev *d);

#endif
