/* rt_ep.c - endpoints: one stack instance bound to a mem link end or to a
 * device queue. Built on the core's own thread so the stack's memory and
 * the link's pools are first touched (and placed) where they are used. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "rt_int.h"
#ifdef TERN_HAVE_DPDK
#include "dpdk.h"
#endif

/* Transmit through a real driver's queue. */
static void ep_tx(void *ctx, tern_buf **frames, unsigned n)
{
    rt_ep *ep = ctx;
    ep->dev->drv->tx_burst(ep->dev, ep->q, frames, n);
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Same, writing every frame to the core's capture first. */
static void ep_tx_capture(void *ctx, tern_buf **frames, unsigned n)
{
    rt_ep *ep = ctx;
    tern_pcap *pc = ep->core->rt->pcap[ep->core->idx];
    uint64_t t = realtime_ns();
    for (unsigned i = 0; i < n; i++)
        tern_pcap_write(pc, frames[i], t);
    ep_tx(ctx, frames, n);
}

unsigned rt_ep_rx(rt_ep *ep, tern_buf **frames, unsigned max)
{
    unsigned n = ep->dev->drv->rx_burst(ep->dev, ep->q, frames, max);
    tern_pcap *pc = ep->core->rt->pcap[ep->core->idx];
    if (n && pc) {
        uint64_t t = realtime_ns();
        for (unsigned i = 0; i < n; i++)
            tern_pcap_write(pc, frames[i], t);
    }
    return n;
}

/* A mem link burst in which large frames are still the sender's: each is
 * copied into a receiver buffer just before the stack reads it, so the
 * buffer the previous frame freed is reused while in L1 and the copy's
 * bytes are still there when the application reads them (landing the
 * whole burst first wrote 32 frames, more than L1, before any was read).
 * Out of line: small-frame bursts never come here. */
static __attribute__((noinline)) void input_landing(rt_ep *ep,
                                                    tern_buf **frames,
                                                    unsigned n, uint64_t now)
{
    tern_input_begin(ep->st, n, now);
    for (unsigned k = 0; k < n; k++) {
        tern_buf *b = tern_memlink_land(ep->ml, ep->end, frames[k]);
        if (b)
            tern_input_one(ep->st, b);
    }
    tern_input_end(ep->st);
}

unsigned rt_ep_input(rt_ep *ep, tern_buf **frames, uint64_t now)
{
    unsigned n;
    if (ep->ml) {
        bool unlanded;
        n = tern_memlink_rx_unlanded(ep->ml, ep->end, frames, RT_BURST, now,
                                     &unlanded);
        if (n && unlanded) {
            input_landing(ep, frames, n, now);
            return n;
        }
    } else {
        n = rt_ep_rx(ep, frames, RT_BURST);
    }
    if (n)
        tern_input(ep->st, frames, n, now);
    return n;
}

int rt_ep_wait_fd(rt_ep *ep)
{
    if (ep->ml || !ep->dev->drv->wait_fd)
        return -1;
    return ep->dev->drv->wait_fd(ep->dev, ep->q);
}

/* Common stack setup for both kinds of endpoints. */
static int ep_stack_init(rt_ep *ep, tern_config *cfg)
{
    rt_core *c = ep->core;
    rt *r = c->rt;
    if (getrandom(cfg->secret, sizeof cfg->secret, 0) != sizeof cfg->secret) {
        for (unsigned i = 0; i < sizeof cfg->secret; i++)
            cfg->secret[i] = (uint8_t)(rand() ^ (int)i);
    }
    if (r->p.max_conns)
        cfg->max_conns = r->p.max_conns;
    if (r->p.time_wait_ms)
        cfg->time_wait_ms = r->p.time_wait_ms;
    if (r->p.cc)
        cfg->cc = r->p.cc;
    if (r->h.configure)
        r->h.configure(ep, cfg);
    size_t size = tern_stack_size(cfg);   /* whole cache lines */
    ep->mem = aligned_alloc(TERN_STACK_ALIGN, size);
    if (!ep->mem) {
        snprintf(c->errmsg, sizeof c->errmsg,
                 "core %u: no memory for a stack (%zu bytes)", c->idx, size);
        return -1;
    }
    memset(ep->mem, 0, size);
    int err = 0;
    ep->st = tern_stack_init(ep->mem, size, cfg, &err);
    if (!ep->st) {
        const char *why = tern_config_check(cfg);
        snprintf(c->errmsg, sizeof c->errmsg,
                 "core %u: cannot build the stack: %s", c->idx,
                 why ? why : tern_strerror(err));
        return -1;
    }
    tern_set_user(ep->st, ep);
    return 0;
}

/* The stack's receive reserve (tern_config.rx_reserve_bufs) on a
 * tern_pool, whose LIFO holds every free buffer: an eighth of the pool.
 * A DPDK queue's LIFO is a cache in front of its mempool: none there. */
static uint32_t rx_reserve(const tern_pool *pool)
{
    return pool ? tern_pool_count(pool) / 8 : 0;
}

static int mem_endpoints(rt_core *c)
{
    rt *r = c->rt;
    tern_memlink_config mc;
    tern_memlink_config_defaults(&mc);
    if (r->p.pool_size)
        mc.pool_size = r->p.pool_size;
    if (r->p.buf_size)
        mc.buf_size = r->p.buf_size;
    mc.caps[0] = mc.caps[1] = r->p.mem_caps;
    mc.partial_csum = true;    /* checksum offload as veth does it */
    mc.by_ref = !r->p.mem_copy; /* and TSO frames to LRO, by reference */
    mc.rx_sum = r->p.mem_rx_sum;
    mc.faults = r->p.faults;
    mc.seed = r->p.seed + c->idx;
    char err[128];
    c->ml = tern_memlink_create(&mc, err, sizeof err);
    if (!c->ml) {
        snprintf(c->errmsg, sizeof c->errmsg, "core %u: mem link: %s", c->idx,
                 err);
        return -1;
    }
    if (r->pcap[c->idx]) {
        tern_memlink_attach_pcap(c->ml, 0, r->pcap[c->idx]);
        tern_memlink_attach_pcap(c->ml, 1, r->pcap[c->idx]);
    }
    c->nep = 2;
    for (int end = 0; end < 2; end++) {
        rt_ep *ep = &c->ep[end];
        ep->core = c;
        ep->role = end == 0 ? RT_SERVER : RT_CLIENT;
        ep->ip = end == 0 ? RT_MEM_SERVER_IP : RT_MEM_CLIENT_IP;
        ep->ml = c->ml;
        ep->end = end;
        ep->pool = tern_memlink_pool(c->ml, end);
        tern_config cfg;
        tern_config_defaults(&cfg);
        /* Locally administered MACs: 02:74:65:<core>:00:<end+1>. */
        const uint8_t mac[6] = {0x02, 0x74, 0x65, (uint8_t)c->idx, 0,
                                (uint8_t)(end + 1)};
        memcpy(cfg.mac, mac, 6);
        cfg.ip = ep->ip;
        cfg.prefix_len = 24;
        cfg.caps = tern_memlink_caps(c->ml, end);
        cfg.buf_ops = tern_memlink_buf_ops(c->ml, end);
        cfg.tx = tern_memlink_tx;
        cfg.rx_burst = RT_BURST;    /* what rt_loop asks the link for */
        cfg.tx_ctx = tern_memlink_tx_ctx(c->ml, end);
        cfg.rx_reserve_bufs = rx_reserve(ep->pool);
        if (ep_stack_init(ep, &cfg))
            return -1;
    }
    return 0;
}


/* A DPDK port that spreads flows by RSS: give the stack the port's key
 * and table, so active opens pick ports that come back to this queue. */
static void dpdk_rss(rt_ep *ep, tern_config *cfg)
{
#ifdef TERN_HAVE_DPDK
    rt *r = ep->core->rt;
    uint16_t n = 0;
    if (r->drv != &tern_driver_dpdk || r->nq < 2 ||
        tern_dpdk_rss(r->dev, cfg->rss_key, cfg->rss_reta, &n) != 0 || !n)
        return;
    cfg->rss_reta_size = n;
    cfg->rss_queues = (uint16_t)r->nq;
    cfg->rss_queue = (uint16_t)ep->q;
#else
    (void)ep;
    (void)cfg;
#endif
}

static int dev_endpoint(rt_core *c)
{
    rt *r = c->rt;
    rt_ep *ep = &c->ep[0];
    c->nep = 1;
    ep->core = c;
    ep->role = r->p.role;
    ep->ip = r->p.ip;
    ep->dev = r->dev;
    ep->q = c->idx;   /* with steering, only cores < r->nq have a queue */
    ep->pool = c->idx < r->nq ? r->dev->pools[c->idx] : r->xpool[c->idx];
    tern_config cfg;
    tern_config_defaults(&cfg);
    memcpy(cfg.mac, r->p.mac_set ? r->p.mac : r->dev->mac, 6);
    cfg.ip = r->p.ip;
    cfg.prefix_len = r->p.prefix;
    cfg.gateway = r->p.gw;
    if (r->dev->mtu)
        cfg.mtu = r->dev->mtu;
    cfg.caps = r->dev->caps;
    if (c->idx < r->nq)    /* steering: rt_steer_configure sets them */
        cfg.buf_ops = tern_dev_buf_ops(r->dev, c->idx);
    cfg.tx = r->pcap[c->idx] ? ep_tx_capture : ep_tx;
    cfg.tx_ctx = ep;
    cfg.rx_burst = RT_BURST;        /* what rt_loop asks the driver for */
    if (r->steer)
        rt_steer_configure(ep, &cfg);
    else
        dpdk_rss(ep, &cfg);
    /* only where the stack sees the pool's own LIFO */
#ifdef TERN_HAVE_DPDK
    if (r->drv != &tern_driver_dpdk)
#endif
        if (cfg.buf_ops.stack)
            cfg.rx_reserve_bufs = rx_reserve(ep->pool);
    return ep_stack_init(ep, &cfg);
}

int rt_core_init(rt_core *c)
{
    return c->rt->dev ? dev_endpoint(c) : mem_endpoints(c);
}

void rt_core_fini(rt_core *c)
{
    for (unsigned i = 0; i < c->nep; i++) {
        free(c->ep[i].mem);
        c->ep[i].mem = NULL;
        c->ep[i].st = NULL;
    }
    if (c->ml) {
        tern_memlink_destroy(c->ml);
        c->ml = NULL;
    }
}
