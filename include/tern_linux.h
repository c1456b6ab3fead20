/*
 * tern_linux.h - tern on Linux: devices, buffer pools and a per-core
 * runtime for programs that embed the tern core (tern.h). Link with
 * `pkg-config --cflags --libs tern-linux` (libtern-linux and libtern).
 *
 * Three levels; use the one that fits your program:
 *
 *   1. The runtime (tern_rt_run): name a driver, an interface and an
 *      address, give two callbacks, and it runs one pinned thread per CPU,
 *      each with its own stack instance, device queue and buffer pool. Your
 *      callbacks set up the stack (listen, connect); everything else runs
 *      in tern.h's callbacks. examples/echo_server.c is a whole server.
 *
 *   2. Devices (tern_dev_*): open a driver's device and run your own loop:
 *      tern_dev_setup() fills a tern_config with the queue's MAC, offloads,
 *      buffers and transmit function; tern_dev_rx() gives received bursts
 *      for tern_input(). examples/mem_pair.c runs two stacks this way over
 *      the in-memory link, without root.
 *
 *   3. Buffer pools (tern_pool_*): a LIFO pool of tern_bufs for a driver of
 *      your own.
 *
 * Drivers (tern_driver_list() says which were built):
 *   afpacket  AF_PACKET TPACKET_V3 ring on a Linux interface (root)
 *   afxdp     AF_XDP socket per queue, libxdp/libbpf (root)
 *   tap       a tap device tern creates or attaches to (root)
 *   dpdk      a DPDK ethdev port (EAL options in `extra`)
 *   mem       an in-memory Ethernet link between two queues of one
 *             process: queue 0 and queue 1 are the two ends of one wire,
 *             with optional faults (extra "loss=0.01,delay_ns=...")
 * docs/drivers.md and docs/mem-driver.md describe each and its options.
 *
 * Threads: a device queue, a pool and a stack instance each belong to one
 * thread at a time. Nothing here is shared between queues, so one thread
 * per queue needs no lock.
 */
#ifndef TERN_LINUX_H
#define TERN_LINUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tern.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Time                                                                      */
/* ------------------------------------------------------------------------ */

/* CLOCK_MONOTONIC in nanoseconds: the `now` of tern_input and tern_poll,
 * and the clock the mem link delays frames by. */
uint64_t tern_now_ns(void);

/* ------------------------------------------------------------------------ */
/* Buffer pools                                                              */
/* ------------------------------------------------------------------------ */

/* A fixed set of equal buffers in one mapping, handed out last freed first
 * (the cache-hot one). One pool per thread: not thread-safe. */
typedef struct tern_pool tern_pool;

/* count buffers of buf_size bytes each, TERN_HEADROOM included. NULL when
 * out of memory or when buf_size leaves no room after the headroom. */
tern_pool *tern_pool_create(unsigned count, unsigned buf_size);
/* Free the pool; its buffers must all be back (tern_stack_fini first). */
void tern_pool_destroy(tern_pool *p);
/* For tern_config.buf_ops: the stack allocates from and frees to the pool
 * (inline, through its LIFO, without a call per buffer). */
tern_buf_ops tern_pool_ops(tern_pool *p);
/* Buffers free now, buffers in all, bytes per buffer. */
unsigned tern_pool_available(const tern_pool *p);
unsigned tern_pool_count(const tern_pool *p);
unsigned tern_pool_buf_size(const tern_pool *p);

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct tern_dev tern_dev;

/* What to open. Zero fields take the driver's defaults. */
typedef struct tern_dev_args {
    const char *iface;     /* interface name (afpacket, tap, afxdp, dpdk) */
    unsigned queues;       /* queues to open, default 1 (mem: always 2) */
    unsigned ring_size;    /* descriptors per ring, 0 = driver default */
    unsigned pool_size;    /* buffers per queue, 0 = driver default */
    bool zerocopy;         /* afxdp: ask for zero-copy (fails if unsupported) */
    const char *extra;     /* driver options "key=value,...", or NULL */
} tern_dev_args;

/* The drivers built into this library, comma separated ("mem,afpacket,
 * tap,afxdp,dpdk" when all were). */
const char *tern_driver_list(void);

/* Open a device of the named driver. Returns NULL and writes one line
 * into err (e.g. "afpacket on eth9: no such interface") on failure. */
tern_dev *tern_dev_open(const char *driver, const tern_dev_args *args,
                        char *err, size_t errlen);
/* Close the device and free its pools. Stop and tern_stack_fini every
 * stack using it first: their buffers come from its pools. */
void tern_dev_close(tern_dev *d);

/* Queues opened (each for one stack on one thread), the device's MAC and
 * MTU (0: unknown), and the offloads it performs (enum tern_cap). */
unsigned tern_dev_queues(const tern_dev *d);
void tern_dev_mac(const tern_dev *d, uint8_t mac[6]);
uint16_t tern_dev_mtu(const tern_dev *d);
uint32_t tern_dev_caps(const tern_dev *d);

/* Fill the link fields of a tern_config for queue q: mac, mtu, caps,
 * buf_ops (the queue's pool) and tx/tx_ctx (the queue's transmit). The
 * rest - address, callbacks, secret, sizing, rx_burst - is yours. On
 * the mem device the two queues get two MACs (last byte 1 and 2). Aborts
 * only if a few bytes cannot be allocated. */
void tern_dev_setup(tern_dev *d, unsigned q, tern_config *cfg);

/* Up to max received frames of queue q into frames; they are yours until
 * you pass them to tern_input (which takes them). Never blocks. Set
 * tern_config.rx_burst to the max you use: tern's ACK pacing reads a full
 * burst as "more was queued". */
unsigned tern_dev_rx(tern_dev *d, unsigned q, tern_buf **frames,
                     unsigned max);
/* A file descriptor that becomes readable (poll, epoll) when queue q has
 * frames, or -1 when the driver cannot sleep (then poll it). */
int tern_dev_wait_fd(tern_dev *d, unsigned q);

/* The driver's frame counters, summed over the queues. Two causes of
 * rx_drops have counters of their own (each also counted in rx_drops):
 *   rx_drop_nobuf  the queue's pool was empty when a frame arrived: the
 *                  driver read it and dropped it so that input goes on (the
 *                  ACKs that free buffers held in send queues arrive there);
 *                  AF_XDP drops only long frames this way, and only when its
 *                  fill ring runs low
 *   rx_drop_vlan   the frame carried a VLAN tag other than 0 (tern is on no
 *                  VLAN; a priority tag, VLAN 0, is removed and the frame
 *                  passes), on afpacket, tap and afxdp alike */
typedef struct tern_dev_stats {
    uint64_t rx_frames, tx_frames;
    uint64_t rx_drops, tx_drops;   /* ring full, no buffer, bad frame */
    uint64_t rx_drop_nobuf, rx_drop_vlan;
    /* Transmit segmentation offload (afpacket): frames of up to 64 KiB the
     * kernel cut into MSS segments (each counted once in tx_frames), and
     * those it refused (also in tx_drops). */
    uint64_t tx_tso_frames, tx_tso_drops;
} tern_dev_stats;
void tern_dev_get_stats(const tern_dev *d, tern_dev_stats *out);

/* ------------------------------------------------------------------------ */
/* Runtime: one pinned thread per CPU                                        */
/* ------------------------------------------------------------------------ */

/*
 * What tern_rt_run runs. The device is opened with one queue per CPU and
 * each thread runs its own stack instance on its queue (the NIC's RSS
 * spreads flows; give as many CPUs as the device has queues, or one).
 * When the device has fewer queues than you want CPUs (a veth, a NIC
 * without RSS), set `steer`: the runtime then reads `steer_queues` queues
 * and hands every received frame to the CPU that owns its flow, by the
 * Toeplitz hash of its addresses and ports (as Linux's RPS does), and the
 * stacks pick their local ports with the same hash, so each connection
 * lives on one CPU both ways. docs/drivers.md says what it costs.
 * The runtime fills each instance's identity, buffers, transmit, secret
 * (getrandom) and rx_burst; `configure` adds callbacks and sizing.
 * The callbacks are plain function pointers: in C++, static member
 * functions or captureless lambdas, with your object in `app`.
 */
typedef struct tern_rt_config {
    const char *driver;    /* "afpacket", "afxdp", "tap", "dpdk" (not mem:
                              use tern_dev_open for it) */
    const char *iface;     /* interface name */
    const char *extra;     /* driver options "key=value,...", or NULL */
    uint32_t ip;           /* our address (TERN_IP4) */
    uint8_t prefix_len;    /* on-link prefix, e.g. 24 */
    uint32_t gateway;      /* default route, 0 = on-link only */
    /* CPUs to run on, one thread each. NULL: one thread on the first CPU
     * this process may run on (sched_getaffinity: taskset, cgroups). */
    const unsigned *cpus;
    unsigned ncpus;
    bool busy_poll;        /* spin on the queue; false: sleep until a frame
                              or the stack's next deadline */
    /* Without busy_poll: after a turn that received frames, keep polling
     * the queue up to spin_us microseconds before sleeping, as Linux's
     * SO_BUSY_POLL does for a socket. The window adapts: it grows while
     * the next frame comes within spin_us of the last (a spin that long
     * saves the sleep and the wake-up) and shrinks to none when frames
     * come further apart, so an idle thread sleeps at once. The spun time
     * is CPU time: it buys latency with CPU. 0 = sleep at once. */
    unsigned spin_us;
    /* Software steering over the CPUs (see above); steer_queues: device
     * queues to read, 1 .. ncpus (0 = 1). Ignored with one CPU. */
    bool steer;
    unsigned steer_queues;
    unsigned pool_size;    /* buffers per CPU's pool, 0 = driver default;
                              a small pool makes tern_tcp_send refuse with
                              -TERN_ENOBUFS sooner (see cb.writable) */
    void *app;             /* yours: tern_rt_app() gives it back */
    /* Per thread, before its stack is built: set cfg->cb, sizing, TCP
     * options (leave the link fields the runtime set). May be NULL. */
    void (*configure)(void *app, unsigned core, tern_config *cfg);
    /* Per thread, on it, once its stack exists: listen, connect. Return 0,
     * or nonzero to stop the run (tern_rt_run then fails). */
    int (*start)(void *app, unsigned core, tern_stack *st);
    /* Per thread, every turn of its loop (after the received frames were
     * handed to the stack, before its timers run): your timers, expiry,
     * work queued by other threads. now_ns is the turn's clock
     * (tern_now_ns). Keep it short: the loop waits for it. Without
     * busy_poll the loop sleeps between turns until a frame arrives or the
     * stack's next deadline, so a hook that needs a turn at least every
     * so often must keep a timer or a connection of its own busy. May be
     * NULL. */
    void (*loop)(void *app, unsigned core, tern_stack *st, uint64_t now_ns);
    /* Per thread, the work done so far (requests answered, bytes
     * served...), for tern_rt_get_core_stats's rate at full speed. NULL:
     * frames received. Called on the thread every 10 ms. */
    uint64_t (*work)(void *app, unsigned core);
    /* Per thread when the run ends, before the stack is freed: close
     * connections, read counters. May be NULL. */
    void (*finish)(void *app, unsigned core, tern_stack *st);
} tern_rt_config;

/* Zero everything, busy_poll off. */
void tern_rt_config_defaults(tern_rt_config *cfg);

/* Open the device, start the threads and wait until SIGINT, SIGTERM or
 * tern_rt_stop(). Returns 0, or -1 with one line in err (device, CPU or
 * start failure). Once per process at a time: it installs handlers for
 * SIGINT and SIGTERM (the first stops the run, a second one kills) and
 * for crash signals (they print a backtrace), and ignores SIGPIPE. */
int tern_rt_run(const tern_rt_config *cfg, char *err, size_t errlen);
/* Make tern_rt_run return: from any thread or a signal handler. */
void tern_rt_stop(void);
/* After tern_rt_run returned: the signal that stopped it (SIGINT,
 * SIGTERM), with the sending process's id in *pid (0 when the kernel or
 * a terminal sent it; pid may be NULL); 0 when no signal did (tern_rt_stop
 * or a failure). A server that exits can say who ended it. */
int tern_rt_stop_signal(int *pid);

/* Inside callbacks on a runtime thread: your `app` pointer, and the
 * thread's index (0 .. ncpus-1) for per-core state without locks. The
 * runtime keeps each stack's tern_set_user pointer for itself: use
 * per-connection user pointers (tern_tcp_set_user) and these instead. */
void *tern_rt_app(const tern_stack *st);
unsigned tern_rt_core(const tern_stack *st);

/* What one thread (core) of the runtime did. */
typedef struct tern_rt_core_stats {
    unsigned cpu;              /* the CPU it was pinned to */
    uint64_t loops;            /* turns of its loop */
    uint64_t rx_frames;        /* frames handed to its stack */
    uint64_t sleeps;           /* times it slept (not busy_poll) */
    uint64_t spin_hits;        /* turns whose frames came while it spun
                                  (spin_us) instead of sleeping */
    /* Software steering (zero without): frames of its queue kept, handed
     * to other cores, taken from them, sent to every core (ARP), lost to
     * a full ring or to no buffer for a copy; transmit bursts handed to
     * the core owning a queue, and those lost to a full ring. */
    uint64_t steer_kept, steer_out, steer_in, steer_broadcast;
    uint64_t steer_ring_drops, steer_copy_drops;
    uint64_t steer_tx_forwarded, steer_tx_drops;
    /* The host's speed for this thread (its loop times a fixed chain of
     * adds every 10 ms, so a shared or clocked-down vCPU shows): the
     * fastest probe and the time-weighted median, in GHz; the share of the
     * time in full-speed windows (>= 90% of the fastest); the config's
     * `work` per second in those windows and over the whole run. */
    double best_ghz, median_ghz, full_share;
    double rate_full, rate_all;
    uint32_t conns;            /* connections its stack holds (TIME_WAIT
                                  included; after a run: once drained) */
    tern_counters counters;    /* its stack's counters (tern.h) */
} tern_rt_core_stats;

/* The device's frame counters, all queues. */
typedef struct tern_rt_link_stats {
    uint64_t rx_frames, tx_frames, drops;
} tern_rt_link_stats;

/* Statistics of thread `core` (0 .. ncpus-1), and of the device. Two
 * moments: on a runtime thread during a run, its own core's figures so far
 * (from its callbacks or loop hook; the link figures are those of the
 * whole device); after tern_rt_run returned, the run's final figures, kept
 * until the next tern_rt_run. Returns 0, or -TERN_EINVAL for a core out of
 * range, another thread's core during a run, or no run yet. */
int tern_rt_get_core_stats(unsigned core, tern_rt_core_stats *out);
int tern_rt_get_link_stats(tern_rt_link_stats *out);
/* Threads of the current or last run (0: none yet). */
unsigned tern_rt_ncores(void);

#ifdef __cplusplus
}
#endif

#endif /* TERN_LINUX_H */
