/* rt_int.h - the runtime's private structures, shared by its files:
 * rt.c (create/run/destroy), rt_ep.c (endpoints), rt_loop.c (the loop),
 * rt_signal.c (stop). */
#ifndef TERN_RT_INT_H
#define TERN_RT_INT_H

#include <pthread.h>

#include "pcap.h"
#include "rt.h"

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
};

/* rt_ep.c: build the endpoints of a core on its own thread (first touch),
 * and tear them down. */
int rt_core_init(rt_core *c);
void rt_core_fini(rt_core *c);
/* Receive one burst of an endpoint (capturing it when asked). */
unsigned rt_ep_rx(rt_ep *ep, tern_buf **frames, unsigned max, uint64_t now);
/* Wait fd of an endpoint, -1 if it cannot sleep. */
int rt_ep_wait_fd(rt_ep *ep);

/* rt_loop.c */
void rt_core_loop(rt_core *c);
void rt_core_drain(rt_core *c);

/* rt_signal.c */
int rt_signal_setup(char *err, size_t errlen);
int rt_stop_fd(void);

#endif
