/* steer.h - software receive steering (the idea of Linux RPS) for ports
 * without RSS, or with fewer queues than cores: each core's runtime loop
 * passes its received burst through steer_rx(), which keeps the frames
 * whose flow belongs to this core and hands the others, by pointer (no
 * copy), to their owners through lock-free single-producer/single-consumer
 * rings. A flow's owner is the same Toeplitz hash and redirection table the
 * NIC would use (and the stacks use to pick local ports: tern_config
 * rss_key/rss_reta/rss_queues = ncores/rss_queue = core), so a connection
 * opened by core k gets its packets on core k.
 *
 * Buffers stay owned by the pool they came from: a core that is done with
 * a foreign buffer (its stack frees it through steer_buf_ops) pushes it on
 * a return ring to the owner, which takes it back into its pool at its next
 * steer_rx(). Pools are never touched by two threads.
 *
 * Which core gets what (steer_core_of):
 *   IPv4 TCP/UDP, not fragmented   Toeplitz(src ip, dst ip, src port,
 *                                  dst port) -> reta -> core
 *   IPv6 TCP/UDP, no extension     Toeplitz(src ip 16 B, dst ip 16 B, src
 *   header                         port, dst port) -> reta -> core
 *   IPv4 fragments, other IPv4,    Toeplitz(src ip, dst ip) (as NICs do)
 *   IPv6 fragments, other IPv6
 *   (extension headers, ICMPv6
 *   echo request, ...)
 *   ICMP and ICMPv6 errors (unreachable, packet too big, time exceeded,
 *   parameter problem, ...)        the flow of the TCP/UDP header they
 *                                  quote, so they reach the connection's core
 *   ICMP and ICMPv6 echo reply     core (identifier % ncores): a core that
 *                                  pings picks such an identifier
 *   ARP reply, neighbor            every core (copies): each core's stack
 *   advertisement                  has its own neighbor cache, and the one
 *                                  that asked may be any
 *   ARP request, neighbor          core 0 (one answer per request; every
 *   solicitation, other neighbor   core's stack has the same addresses)
 *   discovery and MLD (RS, RA,
 *   redirect, MLD query),
 *   anything else
 *
 * Ordering: frames of one flow go through one ring in arrival order, so a
 * flow is never reordered.
 */
#ifndef TERN_STEER_H
#define TERN_STEER_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io.h"
#include "tern.h"

/* ---------------- SPSC ring of tern_buf pointers ---------------- */

/* One producer thread, one consumer thread. head and tail are free-running
 * 32-bit counters (count = head - tail), each on its own cache line with
 * the other side's cached copy, so the two threads share a line only when
 * one of them finds its cache stale. */
typedef struct steer_ring {
    /* producer's line */
    alignas(64) _Atomic uint32_t head;
    uint32_t tail_cache;
    /* consumer's line */
    alignas(64) _Atomic uint32_t tail;
    uint32_t head_cache;
    /* read-only after create */
    alignas(64) uint32_t size;
    uint32_t mask;
    tern_buf **slots;
} steer_ring;

/* size: a power of two >= 2. NULL on a bad size or ENOMEM. */
steer_ring *steer_ring_create(unsigned size);
void steer_ring_destroy(steer_ring *r);

/* Producer: put up to n pointers in order; returns how many went in (fewer
 * when the ring fills). */
static inline unsigned steer_ring_enqueue(steer_ring *r, tern_buf *const *b,
                                          unsigned n)
{
    uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t room = r->size - (h - r->tail_cache);
    if (room < n) {
        r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
        room = r->size - (h - r->tail_cache);
        if (n > room)
            n = room;
    }
    for (unsigned i = 0; i < n; i++)
        r->slots[(h + i) & r->mask] = b[i];
    atomic_store_explicit(&r->head, h + n, memory_order_release);
    return n;
}

/* Consumer: take up to max pointers in order; returns how many. */
static inline unsigned steer_ring_dequeue(steer_ring *r, tern_buf **b,
                                          unsigned max)
{
    uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t avail = r->head_cache - t;
    if (avail < max) {
        r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
        avail = r->head_cache - t;
        if (max > avail)
            max = avail;
    }
    for (unsigned i = 0; i < max; i++)
        b[i] = r->slots[(t + i) & r->mask];
    atomic_store_explicit(&r->tail, t + max, memory_order_release);
    return max;
}

/* Items in the ring now (exact only when both sides are quiet). */
static inline unsigned steer_ring_count(steer_ring *r)
{
    return atomic_load_explicit(&r->head, memory_order_acquire) -
           atomic_load_explicit(&r->tail, memory_order_acquire);
}

/* ---------------- steering ---------------- */

#define STEER_MAX_CORES 64
#define STEER_TO_ALL 0xFFFFu  /* steer_core_of: copy to every core */

typedef struct steer_config {
    unsigned ncores;          /* 1..STEER_MAX_CORES */
    uint8_t key[40];          /* Toeplitz key (same as the stacks') */
    uint16_t reta_size;       /* 0: core = hash % ncores */
    uint16_t reta[512];       /* entries < ncores */
    unsigned ring_size;       /* per ring, power of two, default 1024 */
} steer_config;

/* Defaults: Microsoft's key, a round-robin table of 128 entries. */
void steer_config_defaults(steer_config *cfg, unsigned ncores);

typedef struct steer steer;

/* pools[c] is core c's pool (where its received frames come from and
 * where its stack allocates); all must exist. NULL with err on failure. */
steer *steer_create(const steer_config *cfg, tern_pool *const *pools,
                    char *err, size_t errlen);
/* Frees the rings; frames still in them go back to their pools. Call when
 * no core runs any more. */
void steer_destroy(steer *s);
/* Only the second part: every frame and buffer in a ring (or waiting for
 * room in one) back to its pool; the rings stay usable. Same condition. */
void steer_settle(steer *s);

/* The Toeplitz hash steering uses for a frame, and whether it found a
 * flow (false: not IPv4 or IPv6, or a frame that goes to a fixed core or
 * to all; *hash undefined). */
bool steer_hash(const steer *s, const tern_buf *frame, uint32_t *hash);
/* The core a frame goes to, or STEER_TO_ALL. */
unsigned steer_core_of(const steer *s, const tern_buf *frame);

/*
 * On core `me`: take back returned buffers into my pool, keep the frames
 * of `in` (n, as received from my queue, may be 0) that are mine, send
 * the others to their cores, and append what other cores sent me. The
 * result is in out (at most max; max >= n). A full ring drops the frame
 * (counted). Returns the number of frames in out, which belong to me.
 */
unsigned steer_rx(steer *s, unsigned me, tern_buf **in, unsigned n,
                  tern_buf **out, unsigned max);

/* The parts of steer_rx a core may also need alone (its own thread):
 * take back the buffers other cores returned (before a driver rx burst
 * allocates from my pool); whether frames wait for me in a ring (so a
 * core about to sleep does not); the set of cores (bit c) I handed frames
 * to since the last call (to wake those that sleep). */
void steer_reclaim(steer *s, unsigned me);
bool steer_pending(steer *s, unsigned me);
uint64_t steer_take_dirty(steer *s, unsigned me);

/* Buffer ops for core me's stack (tern_config.buf_ops): allocate from my
 * pool; a freed buffer of another core's pool goes back to it. */
tern_buf_ops steer_buf_ops(steer *s, unsigned me);

typedef struct steer_stats {
    uint64_t kept;        /* frames of mine from my queue */
    uint64_t sent;        /* frames handed to other cores */
    uint64_t received;    /* frames other cores handed me */
    uint64_t broadcast;   /* frames copied to every core */
    uint64_t ring_drops;  /* a destination ring was full */
    uint64_t copy_drops;  /* no buffer for a broadcast copy */
    uint64_t returned;    /* foreign buffers sent home */
    uint64_t return_stalls; /* return ring full: kept back, retried */
} steer_stats;
/* The key and table in use (for the stacks' tern_config). */
const steer_config *steer_get_config(const steer *s);
/* Core me's counters (read on its thread, or after the run). */
const steer_stats *steer_get_stats(const steer *s, unsigned me);

#endif
