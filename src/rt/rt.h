/* rt.h - tern's per-core runtime for Linux: one pinned thread per core, each
 * with its own stack instance(s), driver queue and LIFO buffer pool.
 *
 * The loop of every core thread:
 *     now = clock; rx burst -> tern_input (callbacks run) -> app iter hook
 *     -> tern_poll(now) (timers; tx flushes inside tern_*) -> maybe sleep
 * Busy mode spins; block mode sleeps in ppoll() on the driver's wait_fd
 * until traffic, the stack's next deadline, or a fixed --poll-timeout.
 *
 * With the mem driver each core runs TWO endpoints over its own in-memory
 * link (end 0 = server stack, end 1 = client stack), both in the one thread,
 * so a benchmark needs no NIC and no root. With a real driver each core
 * runs one endpoint on queue <core index> of the device.
 *
 * Software steering (rt_params.steer, src/rt/steer.h, docs/drivers.md):
 * for a device without RSS, the runtime opens steer_queues queues (1 by
 * default) for ncores cores; every frame a core reads is classified by the
 * Toeplitz hash of its 4-tuple and handed to the owning core through an
 * SPSC ring, and the stacks pick their local ports with the same key and
 * table, so a connection stays on one core both ways. Cores without a
 * queue of their own hand their transmit bursts to core (idx % queues).
 *
 * An application plugs in through rt_hooks; every endpoint's tern_stack has
 * its rt_ep as user pointer (tern_get_user), and rt_ep.app is the app's. */
#ifndef TERN_RT_H
#define TERN_RT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "io.h"
#include "mem.h"
#include "tern.h"
#include "speed.h"

#define RT_MAX_CORES 256
#define RT_MAX_EPS 2
#define RT_BURST 32

enum rt_role { RT_SERVER = 0, RT_CLIENT = 1 };

/* Addresses of the two ends of a mem link (like tools/netns.sh's hosts). */
#define RT_MEM_SERVER_IP TERN_IP4(198, 18, 0, 1)
#define RT_MEM_CLIENT_IP TERN_IP4(198, 18, 0, 2)

typedef struct rt rt;
typedef struct rt_core rt_core;

/* One stack instance on one link end / driver queue. */
typedef struct rt_ep {
    tern_stack *st;
    rt_core *core;
    int role;              /* enum rt_role */
    uint32_t ip;           /* our address */
    void *app;             /* the application's per-endpoint state */
    /* link: exactly one of ml / dev */
    tern_memlink *ml;
    int end;
    tern_dev *dev;
    unsigned q;
    tern_pool *pool;       /* where received frames go back */
    void *mem;             /* stack memory */
    tern_counters final;   /* counters copied when the core stopped */
    uint32_t final_conns;  /* tern_tcp_conn_count() then (TIME_WAIT incl.) */
    uint32_t stop_open;    /* connections other than TIME_WAIT when the stop
                            * came, before the app's finish closed any */
    uint32_t stop_time_wait; /* TIME_WAIT records then */
} rt_ep;

struct rt_core {
    rt *rt;
    unsigned idx;          /* 0 .. ncores-1 */
    unsigned cpu;          /* pinned CPU */
    uint64_t now;          /* clock of the current loop iteration (ns) */
    rt_ep ep[RT_MAX_EPS];
    unsigned nep;
    void *app;             /* the application's per-core state */
    volatile bool stop;    /* this core only */
    /* loop statistics */
    uint64_t iterations, rx_frames, sleeps;
    /* adaptive spin before sleeping (rt_params.spin_us, rt_loop.c): the
     * current window, the clock of the last turn with frames, and the
     * turns that found frames while spinning */
    uint64_t spin_win, last_rx, spin_hits;
    speed_stats speed;     /* host speed windows of the loop (speed.h) */
    /* software steering (rt_params.steer): transmit frames handed to the
     * queue owner, and those a full ring dropped */
    uint64_t tx_forwarded, tx_ring_drops;
    /* ...and, once every core stopped and the rings were emptied, the
     * buffers of this core's pool still out (held by a stack);
     * UINT64_MAX where that cannot be known (a dpdk queue's pool) */
    uint64_t buffers_held;
    /* private */
    int wake_fd;           /* steering: eventfd other cores wake us with */
    atomic_int sleeping;   /* steering: in ppoll, wake_fd must be written */
    tern_memlink *ml;
    int err;
    char errmsg[160];
};

typedef struct rt_hooks {
    /* Per endpoint, before tern_stack_init: add callbacks and sizing to cfg
     * (identity, caps, buffers and tx are set already). */
    void (*configure)(rt_ep *ep, tern_config *cfg);
    /* Per core, on its thread, once its endpoints exist: listen, connect.
     * Return 0, or nonzero (after writing core->errmsg) to fail the run. */
    int (*start)(rt_core *c);
    /* Per loop iteration, after input and before poll (load generators);
     * may be NULL. */
    void (*iter)(rt_core *c);
    /* Per core when the loop ends (signal, rt_stop, rt_core_stop): close
     * connections, take figures. The loop then drains for a moment so FINs
     * leave, and the stacks are freed only by rt_destroy. May be NULL. */
    void (*finish)(rt_core *c);
    /* Per core, every speed window (10 ms) on its thread: the app's work
     * so far (requests answered, bytes received), whose rate the speed
     * summary gives; NULL: frames received. */
    uint64_t (*work)(rt_core *c);
} rt_hooks;

typedef struct rt_params {
    const char *driver;    /* "mem", "afxdp", "afpacket", "tap", ... */
    const char *iface;
    const char *extra;     /* driver options "k=v,..." (may be NULL) */
    uint32_t ip;           /* real drivers: our address */
    uint8_t prefix;
    uint32_t gw;
    uint8_t mac[6];
    bool mac_set;
    const unsigned *cores; /* CPUs, one thread each */
    unsigned ncores;
    bool busy;             /* spin rather than sleep */
    /* Block mode: after a turn with frames, keep polling up to spin_us
     * microseconds before sleeping; the window adapts to how soon the
     * next frame came (rt_loop.c). 0 = sleep at once. */
    uint32_t spin_us;
    long poll_timeout_ms;  /* block mode: fixed timeout, -1 = deadline */
    const char *pcap;      /* capture file or NULL */
    int role;              /* real drivers: the role of each core's endpoint */
    /* mem link */
    tern_memlink_faults faults;
    uint64_t seed;
    uint32_t mem_caps;     /* enum tern_cap emulated on both ends */
    unsigned pool_size;    /* buffers per pool, 0 = default */
    unsigned buf_size;     /* mem: bytes per buffer incl. headroom, 0 = default */
    bool mem_copy;         /* mem: copy TSO frames into LRO receivers too
                              (by default they pass by reference, as veth
                              does: tern_memlink_config.by_ref) */
    bool mem_rx_sum;       /* mem: the link sums the frames it copies
                              (tern_memlink_config.rx_sum) */
    uint32_t max_conns;    /* stack's tern_config.max_conns hint, 0 = default */
    uint32_t time_wait_ms; /* stack's tern_config.time_wait_ms, 0 = default */
    uint8_t cc;            /* stack's tern_config.cc (enum tern_cc) */
    void *app;             /* rt_app(rt) */
    /* Software steering (real drivers): spread received frames over the
     * cores by their flow's Toeplitz hash, as RPS does. steer_queues:
     * device queues to open and read (1..ncores, 0 = 1). */
    bool steer;
    unsigned steer_queues;
} rt_params;

/* Open the device (or make the mem links) and prepare the cores; no thread
 * runs yet. NULL with one line in err. */
rt *rt_create(const rt_params *p, const rt_hooks *h, char *err, size_t errlen);
/* Start one thread per core and return when all have stopped (SIGINT,
 * SIGTERM, rt_stop). Returns 0, or -1 with err when a core failed to
 * start. */
int rt_run(rt *r, char *err, size_t errlen);
/* Free stacks, links, the device and pcap. */
void rt_destroy(rt *r);

/* Stop every core (any thread, async-signal-safe). */
void rt_stop(void);
bool rt_stopping(void);
/* The signal that stopped the run (0: none, rt_stop or a failure), and
 * in *pid the sender's pid (0 when the kernel or a terminal sent it). */
int rt_stop_signal(int *pid);
/* Stop one core's loop (its own thread). */
static inline void rt_core_stop(rt_core *c) { c->stop = true; }

unsigned rt_ncores(const rt *r);
rt_core *rt_core_at(rt *r, unsigned i);
void *rt_app(const rt *r);
const rt_params *rt_params_of(const rt *r);
/* Sum of the stack counters of every endpoint with `role` (-1 = all),
 * as copied when the cores stopped. */
void rt_counters(const rt *r, int role, tern_counters *out);
/* Connections the stacks of every endpoint with `role` (-1 = all) still
 * held when the cores stopped, after the drain (all states, TIME_WAIT
 * included; listeners are not connections). */
uint64_t rt_conn_count(const rt *r, int role);
/* Over all endpoints, at the stop (before the apps' finish): connections
 * other than TIME_WAIT (slots held), and TIME_WAIT records. */
void rt_stop_conns(const rt *r, uint64_t *open, uint64_t *time_wait);
/* Driver/link counters summed: frames and drops, for reports. */
void rt_link_stats(const rt *r, uint64_t *rx, uint64_t *tx, uint64_t *drops);
/* The device's receive drops by cause (tern_dev_stats): no buffer, VLAN.
 * false on the mem link, which has its own figures. */
bool rt_link_rx_drop_causes(const rt *r, uint64_t *nobuf, uint64_t *vlan);
/* A real device's TSO frames sent and refused (false on mem). */
bool rt_link_tso(const rt *r, uint64_t *frames, uint64_t *drops);

/* Steering counters of core i (steer.h), NULL without rt_params.steer. */
struct steer_stats;
const struct steer_stats *rt_steer_stats(const rt *r, unsigned i);
/* Core i's endpoint counters summed, as copied when it stopped. */
void rt_core_counters(const rt *r, unsigned i, tern_counters *out);

/* The host speed over the cores' loops (speed.h): the work rate at full
 * speed and over the run, the time at full speed. After rt_run. */
void rt_speed_summary(const rt *r, speed_summary *out);

/* The CPU a program runs on when told none: the first one the process may
 * use (sched_getaffinity, so taskset and cgroups are honoured), 0 if that
 * cannot be read. */
unsigned rt_default_cpu(void);

/* Monotonic nanoseconds. */
uint64_t rt_now_ns(void);

/* The endpoint a callback runs for. */
static inline rt_ep *rt_ep_of(tern_stack *st) { return tern_get_user(st); }

#endif
