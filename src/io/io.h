/* io.h - the common interface of tern's Linux I/O drivers (mem, afpacket,
 * tap, afxdp, dpdk) and the LIFO buffer pool most of them share.
 *
 * A driver opens a device with one or more queues. Each queue is used by
 * exactly one thread (one stack instance): rx_burst and tx_burst on queue q
 * are never called concurrently from two threads.  Buffers are tern_bufs
 * from the queue's pool; buf_ops() gives the ops to put into tern_config so
 * the stack allocates from the same pool. */
#ifndef TERN_IO_H
#define TERN_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tern.h"

/* ---------------- buffer pool (pool.c) ---------------- */

/* A fixed set of equal buffers, LIFO so the most recently freed (cache-hot)
 * buffer is reused first. Not thread-safe: one pool per queue. */
typedef struct tern_pool tern_pool;

/* count buffers of buf_size bytes each (headroom included). NULL on ENOMEM. */
tern_pool *tern_pool_create(unsigned count, unsigned buf_size);
void tern_pool_destroy(tern_pool *p);
/* A buffer with refs 1, len 0, data = head + TERN_HEADROOM; NULL if empty. */
tern_buf *tern_pool_alloc(tern_pool *p);
/* Drop one reference of each buffer in the frame's frag chain; buffers
 * whose count reaches zero go back to the pool. */
void tern_pool_release(tern_pool *p, tern_buf *frame);
/* Ops for tern_config.buf_ops that allocate from / free to this pool. */
tern_buf_ops tern_pool_ops(tern_pool *p);
unsigned tern_pool_available(const tern_pool *p);
unsigned tern_pool_count(const tern_pool *p);
unsigned tern_pool_buf_size(const tern_pool *p);

/* ---------------- devices ---------------- */

typedef struct tern_dev tern_dev;

typedef struct tern_dev_args {
    const char *iface;     /* interface name (afpacket, tap, afxdp, dpdk) */
    unsigned queues;       /* queues to open, default 1 */
    unsigned ring_size;    /* descriptors per ring, 0 = driver default */
    unsigned pool_size;    /* buffers per queue, 0 = driver default */
    bool zerocopy;         /* afxdp: ask for zero-copy (fails if unsupported) */
    const char *extra;     /* driver specific "key=value,..." options */
} tern_dev_args;

typedef struct tern_driver {
    const char *name;
    /* Open a device; on failure return NULL and write one line into err. */
    tern_dev *(*open)(const tern_dev_args *args, char *err, size_t errlen);
    void (*close)(tern_dev *d);
    /* Receive up to max frames from queue q; the caller owns them. */
    unsigned (*rx_burst)(tern_dev *d, unsigned q, tern_buf **frames,
                         unsigned max);
    /* Send n frames on queue q. The driver takes one reference of each and
     * releases it when done (or when it drops a frame, counted). */
    void (*tx_burst)(tern_dev *d, unsigned q, tern_buf **frames, unsigned n);
    /* File descriptor to wait on (poll/epoll) for queue q, or -1. */
    int (*wait_fd)(tern_dev *d, unsigned q);
} tern_driver;

/* State every device has; drivers put it first in their own struct. */
struct tern_dev {
    const tern_driver *drv;
    uint32_t caps;         /* enum tern_cap: what the driver really does */
    uint8_t mac[6];
    uint16_t mtu;
    unsigned queues;
    tern_pool **pools;     /* one per queue */
    /* Driver counters. */
    uint64_t rx_frames, tx_frames, rx_drops, tx_drops;
};

static inline tern_buf_ops tern_dev_buf_ops(tern_dev *d, unsigned q)
{
    return tern_pool_ops(d->pools[q]);
}

/* Driver registry: "mem", "afpacket", "tap", "afxdp", "dpdk". NULL if the
 * name is unknown or the driver was not built. */
const tern_driver *tern_driver_find(const char *name);
/* Comma separated list of built drivers, for --help. */
const char *tern_driver_list(void);

#endif
