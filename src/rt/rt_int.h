/* rt_int.h - the runtime's private structures, shared by its files:
 * rt.c (create/run/destroy), rt_ep.c (endpoints), rt_loop.c (the loop),
 * rt_signal.c (stop). */
#ifndef TERN_RT_INT_H
#define TERN_RT_INT_H

#include <pthread.h>

#include "pcap.h"
#include "rt.h"
#include "steer.h"

struct rt {
    rt_params p;
    rt_hooks h;
    unsigned cores[RT_MAX_CORES];
    char *pcap_path;
    char *iface;
    rt_core *core;                /* ncores, each on its own cache lines */
    pthread_t *threads;
    const tern_driver *drv;       /* real drivers */
    tern_dev *dev;
    tern_pcap *pcap[RT_MAX_CORES];/* one writer per core (not thread-safe) */
    /* software steering (rt_steer.c) */
    unsigned nq;                  /* device queues opened (= ncores without
                                     steering) */
    steer *steer;
    int tx_kind;                  /* enum rt_tx_kind of the driver */
    tern_pool *xpool[RT_MAX_CORES];  /* pools of cores without a queue */
    steer_ring *txr[RT_MAX_CORES];   /* core i (no queue) -> core i % nq */
    atomic_uint drained;          /* cores done draining (they wait for all) */
};

/* How a driver's tx_burst treats a buffer of another pool. */
enum rt_tx_kind {
    RT_TX_SYNC,   /* tap, afpacket: done with every frame on return, and
                     releases to its own queue's pool: lend them an extra
                     reference and drop it ourselves afterwards */
    RT_TX_PASS,   /* dpdk: takes a buffer of any of its queues' pools (the
                     others, from pools of cores without a queue, are
                     copied) */
    RT_TX_COPY,   /* others (afxdp): give it only buffers of its own pool */
};

/* rt_ep.c: build the endpoints of a core on its own thread (first touch),
 * and tear them down. */
int rt_core_init(rt_core *c);
void rt_core_fini(rt_core *c);
/* Receive one burst of a device endpoint (capturing it when asked); a mem
 * endpoint's bursts go through rt_ep_input. */
unsigned rt_ep_rx(rt_ep *ep, tern_buf **frames, unsigned max);
/* A burst of up to RT_BURST frames into ep's stack; frames is scratch room
 * for them. Returns the frames taken. */
unsigned rt_ep_input(rt_ep *ep, tern_buf **frames, uint64_t now);
/* Wait fd of an endpoint, -1 if it cannot sleep. */
int rt_ep_wait_fd(rt_ep *ep);

/* rt_steer.c: software steering (rt_params.steer). */
int rt_steer_create(rt *r, char *err, size_t errlen);
void rt_steer_destroy(rt *r);
/* After the threads: every frame in a ring back to its pool, and each
 * core's buffers_held taken. */
void rt_steer_settle(rt *r);
/* Stack setup of core c's endpoint: buffer ops, RSS key/table, tx. */
void rt_steer_configure(rt_ep *ep, tern_config *cfg);
/* One receive step of core c: returned buffers home, send what dependent
 * cores handed us to transmit, read our queue (if any), steer; frames for
 * our stack in out (room for RT_BURST * 2). */
unsigned rt_steer_rx(rt_core *c, tern_buf **out);
/* Wake the cores we handed frames to (after the stack's transmit). */
void rt_steer_kick(rt_core *c);
/* Before sleeping: true if frames already wait (then do not sleep). */
bool rt_steer_sleep_begin(rt_core *c);
void rt_steer_sleep_end(rt_core *c);
/* A core is done draining; wakes every core when it was the last. */
void rt_steer_drained(rt *r, unsigned n);

/* rt_loop.c */
void rt_core_loop(rt_core *c);
void rt_core_drain(rt_core *c);

/* rt_signal.c */
int rt_signal_setup(char *err, size_t errlen);
int rt_stop_fd(void);

#endif
