/* io.h - the common interface of tern's Linux I/O drivers (mem, afpacket,
 * tap, afxdp, dpdk) and the LIFO buffer pool most of them share.
 *
 * A driver opens a device with one or more queues. Each queue is used by
 * exactly one thread (one stack instance): rx_burst and tx_burst on queue q
 * are never called concurrently from two threads.  Buffers are tern_bufs
 * from the queue's pool; buf_ops() gives the ops to put into tern_config so
 * the stack allocates from the same pool.
 *
 * The embedder's part of this (tern_pool_create..., tern_dev_args,
 * tern_driver_list) is declared in include/tern_linux.h; this header adds
 * what drivers and the runtime share inside the library. */
#ifndef TERN_IO_H
#define TERN_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tern.h"
#include "tern_linux.h"

/* ---------------- buffer pool (pool.c) ---------------- */

/* tern_pool_create, _destroy, _ops, _available, _count and _buf_size are
 * in tern_linux.h. */

/* Fill p as a pool over memory the caller owns (e.g. a DPDK mempool's
 * objects at a fixed stride): every layout field, the derived ones
 * included, an empty free stack of `count` entries, nothing mapped. */
void tern_pool_view(tern_pool *p, uint8_t *slots, unsigned count,
                    unsigned slot_size, unsigned buf_size, tern_buf **free);
/* A buffer with refs 1, len 0, data = head + TERN_HEADROOM; NULL if empty.
 * (static inline below) */
static inline tern_buf *tern_pool_alloc(tern_pool *p);
/* What tern_pool_alloc does to a buffer after taking it off the free stack,
 * for a caller that takes a burst's worth at once (the mem link keeps the
 * stack top in a register). (static inline below) */
static inline tern_buf *tern_pool_ready(tern_pool *p, tern_buf *b);
/* Drop one reference of each buffer in the frame's frag chain; buffers
 * whose count reaches zero go back to the pool. (static inline below) */
static inline void tern_pool_release(tern_pool *p, tern_buf *frame);
/* The same for a buffer known to have no frag chain. (static inline below) */
static inline void tern_pool_release_one(tern_pool *p, tern_buf *b);
/* Take back one buffer whose refs already fell to 0 (what
 * tern_buf_ops.free does). (static inline below) */
static inline void tern_pool_put(tern_pool *p, tern_buf *b);
/* Whether b is one of this pool's buffers. */
bool tern_pool_owns(const tern_pool *p, const tern_buf *b);

/* The layout is here only so the hot calls inline to a few instructions;
 * use the functions. Everything lives in one mapping made at create. */
struct tern_pool {
    /* The LIFO of free buffers, stack.free[stack.top - 1] the hottest;
     * tern_pool_ops gives it to the stack, which pops and pushes it inline
     * (cap = count, base = slots, span = count * slot_size). */
    tern_buf_stack stack;
    unsigned count;
    unsigned buf_size;
    unsigned slot_size;   /* descriptor + buffer memory, cache aligned */
    uint8_t *slots;       /* count slots */
    size_t map_len;
};

#if defined(__GNUC__)
#define TERN_IO_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define TERN_IO_LIKELY(x) (x)
#endif

/* refs of a buffer sitting in the pool: a release or free of it is caught. */
#define TERN_POOL_FREE_REFS TERN_BUF_FREE_REFS

/* Misuse checks (double free, foreign buffer, use after free), on unless
 * NDEBUG; they cost a compare or two. Failures abort with a message. */
#ifndef TERN_POOL_CHECKS
#ifdef NDEBUG
#define TERN_POOL_CHECKS 0
#else
#define TERN_POOL_CHECKS 1
#endif
#endif

_Noreturn void tern_pool_panic_(const tern_pool *p, const tern_buf *b,
                                const char *what);
/* The panic of a failed tern_pool_put check: says which one failed. */
_Noreturn void tern_pool_put_panic_(const tern_pool *p, const tern_buf *b);

static inline tern_buf *tern_pool_ready(tern_pool *p, tern_buf *b)
{
    if (TERN_POOL_CHECKS && b->refs != TERN_POOL_FREE_REFS)
        tern_pool_panic_(p, b, "free buffer was modified (use after free?)");
    return tern_buf_fresh(b);
}

static inline tern_buf *tern_pool_alloc(tern_pool *p)
{
    tern_buf_stack *s = &p->stack;
    return s->top ? tern_pool_ready(p, s->free[--s->top]) : NULL;
}

static inline void tern_pool_put(tern_pool *p, tern_buf *b)
{
    /* One branch for both checks (foreign buffer, refs not 0): this runs
     * for every buffer freed. */
    if (TERN_POOL_CHECKS &&
        (((uintptr_t)b - (uintptr_t)p->slots >= p->stack.span) |
         (b->refs != 0)))
        tern_pool_put_panic_(p, b);
    tern_buf_mark_free(b);
    p->stack.free[p->stack.top++] = b;
}

static inline void tern_pool_release_one(tern_pool *p, tern_buf *b)
{
    /* One test for the usual case, another owner left (refs 2 .. 0xFFFE);
     * the last owner (1) and the misuses (0, FREE_REFS) take the branch.
     * Marked likely: a data frame the link sends is still in the sender's
     * TCP send queue, and the decrement then falls through (no jump). */
    if (TERN_IO_LIKELY((uint16_t)(b->refs - 2u) < TERN_POOL_FREE_REFS - 2u)) {
        b->refs--;
        return;
    }
    if (TERN_POOL_CHECKS && b->refs != 1)
        tern_pool_panic_(p, b, "double release");
    if (--b->refs == 0)
        tern_pool_put(p, b);
}

static inline void tern_pool_release(tern_pool *p, tern_buf *frame)
{
    while (frame) {
        tern_buf *next = frame->frag;
        tern_pool_release_one(p, frame);
        frame = next;
    }
}

/* For a driver that copies received frames: copy the len-byte frame at
 * src (len >= 16) into b's data, summing it in the same pass, and flag b
 * TERN_BUF_RX_SUM with the sum of the bytes after the 14-byte Ethernet
 * header. The first 16 bytes are copied apart and the word at 14 (an even
 * offset: the words pair as in the frame) starts the sum, which counts
 * big-endian words. Sets len and flags. */
static inline void tern_frame_copy_sum(tern_buf *b, const uint8_t *src,
                                       uint32_t len)
{
    uint8_t *dst = b->data;
    uint32_t w14 = (uint32_t)src[14] << 8 | src[15];
    b->len = len;
    memcpy(dst, src, 16);
    b->rx_sum = tern_csum_fold(tern_csum_copy(dst + 16, src + 16, len - 16,
                                              w14));
    b->flags = TERN_BUF_RX_SUM;
}

/* ---------------- devices ---------------- */

/* tern_dev and tern_dev_args are declared in tern_linux.h. */

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
    /* Driver counters. rx_drop_nobuf (pool empty: the frame was read and
     * dropped so that reading goes on) and rx_drop_vlan (VLAN-tagged) are
     * also counted in rx_drops. */
    uint64_t rx_frames, tx_frames, rx_drops, tx_drops;
    uint64_t rx_drop_nobuf, rx_drop_vlan;
    /* TSO frames the kernel or NIC took to segment, and those it refused
     * (also in tx_drops); tx_frames counts a TSO frame once. */
    uint64_t tx_tso_frames, tx_tso_drops;
    /* tern_dev_setup's transmit contexts, one per queue (dev_api.c);
     * NULL until the first setup. */
    struct tern_dev_txq *api_txq;
    /* A packet socket holding the interface's all-multicast membership
     * (IPv6 groups reach the NIC's filter though the kernel's IPv6 is off
     * there), when allmulti. Closed by tern_netif_dev_fini. */
    bool allmulti;
    int allmulti_fd;
};

static inline tern_buf_ops tern_dev_buf_ops(tern_dev *d, unsigned q)
{
    return tern_pool_ops(d->pools[q]);
}

/* Driver registry: "mem", "afpacket", "tap", "afxdp", "dpdk". NULL if the
 * name is unknown or the driver was not built. */
const tern_driver *tern_driver_find(const char *name);
/* tern_driver_list (the built drivers, for --help) is in tern_linux.h. */

#endif
