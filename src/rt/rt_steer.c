/* rt_steer.c - software steering in the runtime (rt_params.steer): the
 * idea of Linux RPS, for devices that do not spread flows over queues by
 * the hash the stacks use (tap, AF_PACKET without fanout, one-queue ports).
 *
 * The device is opened with nq queues (1 by default) for ncores cores.
 * Core i < nq reads queue i; every core passes what it read through
 * steer_rx(), which keeps its own flows and hands the others to their
 * owners through SPSC rings (steer.c). The stacks choose local ports with
 * the same Toeplitz key and table (rss_queues = ncores, rss_queue = core),
 * so an active open's replies come back to the core that opened it.
 *
 * Cores without a queue (i >= nq) have no transmit queue either: their
 * stack's bursts go through one more SPSC ring to core i % nq, which sends
 * them on its queue. A frame only crosses threads when nobody else holds
 * it (every buffer's refs is 1): the refs field is not atomic, so a buffer
 * the sending stack keeps (TCP data waiting for its ACK) is copied first.
 *
 * Buffers always go back to the pool they came from, on its owner's thread
 * (steer_buf_ops and the return rings). A driver's tx_burst releases to
 * its own queue's pool, so a frame holding another pool's buffer is
 * adapted before it reaches the driver (enum rt_tx_kind in rt_int.h).
 *
 * Sleeping (block mode): a core about to sleep announces it (sleeping = 1,
 * then a full fence, then a last look at its rings); a core that put
 * frames in its rings fences and writes its eventfd if it sleeps. Either
 * the sleeper sees the frames or the producer sees the flag. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rt_int.h"
#ifdef TERN_HAVE_DPDK
#include "dpdk.h"
#endif

#define RT_TXR_SIZE 1024u     /* forwarded transmit frames per core */
#define RT_LENT_MAX 64u       /* foreign buffers lent to one tx burst */

/* The core we must wake after the stack transmitted (tx forwarding);
 * ~0u: none. Per thread, as every core is one thread. */
static _Thread_local unsigned tx_kick = ~0u;

static int fail(char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "--steer: %s", msg);
    return -1;
}

int rt_steer_create(rt *r, char *err, size_t errlen)
{
    unsigned n = r->p.ncores;
    if (!r->p.steer)
        return 0;
    if (!r->dev)
        return fail(err, errlen, "needs a real driver (the mem driver "
                                 "gives every core its own link)");
    if (n > STEER_MAX_CORES)
        return fail(err, errlen, "at most 64 cores");
    const char *d = r->p.driver;
    r->tx_kind = !strcmp(d, "tap") || !strcmp(d, "afpacket") ? RT_TX_SYNC
                 : !strcmp(d, "dpdk")                         ? RT_TX_PASS
                                                              : RT_TX_COPY;
    tern_pool *pools[STEER_MAX_CORES];
    tern_pool *p0 = r->dev->pools[0];
    for (unsigned i = 0; i < n; i++) {
        if (i < r->nq) {
            pools[i] = r->dev->pools[i];
            continue;
        }
        r->xpool[i] = tern_pool_create(tern_pool_count(p0),
                                       tern_pool_buf_size(p0));
        r->txr[i] = steer_ring_create(RT_TXR_SIZE);
        if (!r->xpool[i] || !r->txr[i])
            return fail(err, errlen, "out of memory");
        pools[i] = r->xpool[i];
    }
    steer_config sc;
    steer_config_defaults(&sc, n);
#ifdef TERN_HAVE_DPDK
    /* A port that spreads flows by RSS over one queue per core: steer by
     * its own key and table, so that nearly nothing needs handing over. */
    if (r->drv == &tern_driver_dpdk && r->nq == n) {
        uint8_t key[40];
        uint16_t reta[512], size = 0;
        if (tern_dpdk_rss(r->dev, key, reta, &size) == 0 && size &&
            size <= 512) {
            memcpy(sc.key, key, sizeof key);
            memcpy(sc.reta, reta, size * sizeof reta[0]);
            sc.reta_size = size;
        }
    }
#endif
    char e[160];
    r->steer = steer_create(&sc, pools, e, sizeof e);
    if (!r->steer) {
        snprintf(err, errlen, "%s", e);
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        r->core[i].wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (r->core[i].wake_fd < 0) {
            snprintf(err, errlen, "--steer: eventfd: %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* After the threads: one reference of every buffer of a frame, to the
 * pool that owns it. */
static void release_anywhere(rt *r, tern_buf *f)
{
    while (f) {
        tern_buf *nx = f->frag;
        if (--f->refs == 0) {
            for (unsigned i = 0; i < r->p.ncores; i++) {
                tern_pool *p = i < r->nq ? r->dev->pools[i] : r->xpool[i];
                if (p && tern_pool_owns(p, f)) {
                    tern_pool_put(p, f);
                    break;
                }
            }
        }
        f = nx;
    }
}

void rt_steer_settle(rt *r)
{
    tern_buf *b[64];
    unsigned k;
    if (!r->steer)
        return;
    for (unsigned i = 0; i < r->p.ncores; i++)
        while (r->txr[i] && (k = steer_ring_dequeue(r->txr[i], b, 64)))
            for (unsigned j = 0; j < k; j++)
                release_anywhere(r, b[j]);
    steer_settle(r->steer);
    for (unsigned i = 0; i < r->p.ncores; i++) {
        const tern_pool *p = r->core[i].ep[0].pool;
        /* dpdk: a queue's free buffers also sit in the mempool and the rx
         * ring, which the pool's count of free ones does not see */
        bool known = p && (r->tx_kind != RT_TX_PASS || i >= r->nq);
        r->core[i].buffers_held =
            known ? tern_pool_count(p) - tern_pool_available(p) : UINT64_MAX;
    }
}

void rt_steer_destroy(rt *r)
{
    rt_steer_settle(r);
    for (unsigned i = 0; i < RT_MAX_CORES; i++) {
        steer_ring_destroy(r->txr[i]);
        r->txr[i] = NULL;
    }
    steer_destroy(r->steer);
    r->steer = NULL;
    for (unsigned i = 0; i < RT_MAX_CORES; i++) {
        tern_pool_destroy(r->xpool[i]);
        r->xpool[i] = NULL;
    }
}

/* ---------------- buffers on a core's own thread ---------------- */

static tern_buf_ops core_ops(rt_core *c)
{
    return steer_buf_ops(c->rt->steer, c->idx);
}

/* Drop one reference of every buffer of a frame: a buffer whose count
 * falls to 0 goes home through the steering ops. */
static void frame_unref(rt_core *c, tern_buf *f)
{
    tern_buf_ops ops = core_ops(c);
    while (f) {
        tern_buf *nx = f->frag;
        if (--f->refs == 0)
            ops.free(ops.ctx, f);
        f = nx;
    }
}

/* The frame (all segments) in one fresh buffer of my pool; the original
 * keeps its references. NULL when the pool is dry or it does not fit. */
static tern_buf *frame_copy(rt_core *c, const tern_buf *f)
{
    tern_buf_ops ops = core_ops(c);
    tern_buf *b = ops.alloc(ops.ctx);
    if (!b)
        return NULL;
    size_t room = b->size - (size_t)(b->data - b->head), len = 0;
    for (const tern_buf *x = f; x; x = x->frag) {
        if (len + x->len > room) {
            frame_unref(c, b);
            return NULL;
        }
        memcpy(b->data + len, x->data, x->len);
        len += x->len;
    }
    b->len = (uint32_t)len;
    b->flags = f->flags;
    b->tso_mss = f->tso_mss;
    b->l2_len = f->l2_len;
    b->l3_len = f->l3_len;
    b->l4_len = f->l4_len;
    return b;
}

/* Replace frames[i] by a copy in my pool (the original loses the
 * reference the burst carried). False when no copy could be made (then
 * the frame is dropped, counted by the caller). */
static bool swap_for_copy(rt_core *c, tern_buf **slot)
{
    tern_buf *cp = frame_copy(c, *slot);
    frame_unref(c, *slot);
    *slot = cp;
    return cp != NULL;
}

static bool owned_by_device(const rt *r, const tern_buf *f)
{
    for (; f; f = f->frag) {
        bool ok = false;
        for (unsigned q = 0; q < r->nq && !ok; q++)
            ok = tern_pool_owns(r->dev->pools[q], f);
        if (!ok)
            return false;
    }
    return true;
}

/* Send a burst on my queue, whatever pools its buffers come from. */
static void queue_tx(rt_core *c, tern_buf **frames, unsigned n)
{
    rt *r = c->rt;
    rt_ep *ep = &c->ep[0];
    tern_buf *lent[RT_LENT_MAX];
    unsigned nl = 0, k = 0;
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        bool copy = false;
        if (r->tx_kind == RT_TX_PASS) {
            copy = !owned_by_device(r, f);
        } else if (r->tx_kind == RT_TX_COPY) {
            copy = f->frag || !tern_pool_owns(ep->pool, f);
        } else {
            unsigned foreign = 0;
            for (tern_buf *x = f; x; x = x->frag)
                foreign += !tern_pool_owns(ep->pool, x);
            if (nl + foreign > RT_LENT_MAX) {
                copy = true;
            } else {
                /* the driver's release then stops at 1; ours below
                 * sends the buffer home */
                for (tern_buf *x = f; x; x = x->frag)
                    if (!tern_pool_owns(ep->pool, x)) {
                        x->refs++;
                        lent[nl++] = x;
                    }
            }
        }
        if (copy && !swap_for_copy(c, &f)) {
            r->dev->tx_drops++;
            continue;
        }
        frames[k++] = f;
    }
    if (k)
        r->dev->drv->tx_burst(r->dev, ep->q, frames, k);
    tern_buf_ops ops = core_ops(c);
    for (unsigned i = 0; i < nl; i++)
        if (--lent[i]->refs == 0)
            ops.free(ops.ctx, lent[i]);
}

static void wake(rt *r, unsigned i)
{
    rt_core *d = &r->core[i];
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&d->sleeping, memory_order_relaxed)) {
        uint64_t one = 1;
        ssize_t rc = write(d->wake_fd, &one, sizeof one);
        (void)rc;
    }
}

/* The stack's transmit (tern_config.tx) with steering. */
static void steer_tx(void *ctx, tern_buf **frames, unsigned n)
{
    rt_ep *ep = ctx;
    rt_core *c = ep->core;
    rt *r = c->rt;
    tern_pcap *pc = r->pcap[c->idx];
    if (pc) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull +
                     (uint64_t)ts.tv_nsec;
        for (unsigned i = 0; i < n; i++)
            tern_pcap_write(pc, frames[i], t);
    }
    if (c->idx < r->nq) {
        queue_tx(c, frames, n);
        return;
    }
    /* No queue of my own: hand the burst to the queue's core, each frame
     * as one buffer nobody else holds. */
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        if ((f->frag || f->refs != 1) && !swap_for_copy(c, &f)) {
            c->tx_ring_drops++;
            continue;
        }
        frames[k++] = f;
    }
    unsigned put = steer_ring_enqueue(r->txr[c->idx], frames, k);
    c->tx_forwarded += put;
    for (unsigned i = put; i < k; i++) {
        frame_unref(c, frames[i]);
        c->tx_ring_drops++;
    }
    if (put)
        tx_kick = c->idx % r->nq;
}

void rt_steer_configure(rt_ep *ep, tern_config *cfg)
{
    rt_core *c = ep->core;
    rt *r = c->rt;
    const steer_config *sc = steer_get_config(r->steer);
    cfg->buf_ops = steer_buf_ops(r->steer, c->idx);
    cfg->tx = steer_tx;
    cfg->tx_ctx = ep;
    /* Active opens pick ports whose flow steers back to this core. */
    cfg->rss_queues = (uint16_t)r->p.ncores;
    cfg->rss_queue = (uint16_t)c->idx;
    memcpy(cfg->rss_key, sc->key, sizeof cfg->rss_key);
    cfg->rss_reta_size = sc->reta_size;
    memcpy(cfg->rss_reta, sc->reta, sc->reta_size * sizeof sc->reta[0]);
}

unsigned rt_steer_rx(rt_core *c, tern_buf **out)
{
    rt *r = c->rt;
    unsigned me = c->idx, n = 0;
    tern_buf *in[RT_BURST], *b[RT_BURST];
    steer_reclaim(r->steer, me);
    /* what the cores without a queue want sent on mine */
    for (unsigned j = me + r->nq; me < r->nq && j < r->p.ncores; j += r->nq) {
        unsigned k;
        while ((k = steer_ring_dequeue(r->txr[j], b, RT_BURST)))
            queue_tx(c, b, k);
    }
    if (me < r->nq)
        n = rt_ep_rx(&c->ep[0], in, RT_BURST);
    return steer_rx(r->steer, me, in, n, out, 2 * RT_BURST);
}

void rt_steer_kick(rt_core *c)
{
    rt *r = c->rt;
    uint64_t d = steer_take_dirty(r->steer, c->idx);
    for (unsigned i = 0; d; i++, d >>= 1)
        if (d & 1)
            wake(r, i);
    if (tx_kick != ~0u) {
        wake(r, tx_kick);
        tx_kick = ~0u;
    }
}

bool rt_steer_sleep_begin(rt_core *c)
{
    rt *r = c->rt;
    atomic_store(&c->sleeping, 1);
    atomic_thread_fence(memory_order_seq_cst);
    bool pending = steer_pending(r->steer, c->idx);
    for (unsigned j = c->idx + r->nq;
         !pending && c->idx < r->nq && j < r->p.ncores; j += r->nq)
        pending = steer_ring_count(r->txr[j]) != 0;
    if (pending)
        atomic_store(&c->sleeping, 0);
    return pending;
}

void rt_steer_sleep_end(rt_core *c)
{
    uint64_t v;
    atomic_store(&c->sleeping, 0);
    ssize_t rc = read(c->wake_fd, &v, sizeof v);
    (void)rc;
}

void rt_steer_drained(rt *r, unsigned n)
{
    unsigned done = atomic_fetch_add(&r->drained, n) + n;
    if (!r->steer || done < r->p.ncores)
        return;
    for (unsigned i = 0; i < r->p.ncores; i++) {
        uint64_t one = 1;
        if (r->core[i].wake_fd >= 0) {
            ssize_t rc = write(r->core[i].wake_fd, &one, sizeof one);
            (void)rc;
        }
    }
}

const steer_stats *rt_steer_stats(const rt *r, unsigned i)
{
    return r->steer && i < r->p.ncores ? steer_get_stats(r->steer, i) : NULL;
}
