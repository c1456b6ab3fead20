/* afxdp.c - the AF_XDP driver (libxdp), built when TERN_HAVE_AFXDP is set.
 *
 * One XDP socket per queue, bound to the interface's rx queue of the same
 * number; libxdp loads its default XDP program, which redirects every frame
 * of a queue that has a socket in its XSK map to that socket (the rest go
 * on to the kernel stack).
 *
 * Zero copy inside tern: the UMEM of a queue IS the queue's tern_pool. The
 * pool is one page-aligned mapping (descriptors and buffers in fixed
 * slots), registered whole as the UMEM in unaligned-chunk mode; the tern_buf
 * descriptors stay where the pool keeps them, beside their buffers, and the
 * kernel only writes where a fill-ring address points (buffer memory).
 *   - rx: pool buffers are posted to the fill ring (address = the buffer's
 *     head); a received descriptor maps back to its buffer by slot, and the
 *     frame is handed to the stack in place (data = head + 256, the kernel's
 *     XDP_PACKET_HEADROOM, which is more than TERN_HEADROOM). The stack frees
 *     it to the pool as any other buffer. The fill ring never runs dry:
 *     with the pool empty, long frames are dropped below a floor and their
 *     buffers reposted (xdp_rx_burst), so ACKs keep arriving.
 *   - tx: a frame the stack built in a pool buffer goes on the tx ring as is
 *     (address = its data); its reference is dropped when the completion ring
 *     gives the address back. Frames that are chains or from elsewhere are
 *     copied into one buffer first.
 * Whether the kernel copies between the UMEM and the NIC (XDP_COPY, the
 * only mode veth has) or the NIC does DMA into the UMEM (XDP_ZEROCOPY, with
 * args->zerocopy on a driver that supports it) does not change the above.
 *
 * Capabilities: none (AF_XDP passes no checksum or segmentation metadata;
 * the XDP program gets the frame before any offload information would be
 * usable).
 *
 * Options (tern_dev_args.extra):
 *   mode=native|skb   where the XDP program runs: native (driver) mode, or
 *                     generic (SKB) mode; default native, falling back to skb
 *   wakeup=0          do not use XDP_USE_NEED_WAKEUP (kick every tx burst)
 *   allmulti=0        do not ask for every multicast frame (by default the
 *                     interface passes them while open: IPv6 neighbor
 *                     discovery's groups, with the kernel's IPv6 off there)
 *
 * Requirements: root (CAP_NET_ADMIN + CAP_BPF/CAP_SYS_ADMIN for the program,
 * CAP_NET_RAW for the socket); RLIMIT_MEMLOCK is raised to infinity at open
 * (older kernels charge UMEM pages to it). Interface MTU must fit a 4 KiB
 * chunk (no multi-buffer frames).
 */
#ifdef TERN_HAVE_AFXDP

#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "io.h"
#include "netif.h"

#define XDP_DEFAULT_RING 2048u
#define XDP_KERNEL_HEADROOM 256u  /* XDP_PACKET_HEADROOM */
#define XDP_TX_KICK_ROUNDS 8
#define XDP_BUSY_WAITS 100        /* x 10 ms: waiting for a queue to free */
#define XDP_BUSY_WAIT_US 10000
/* The fill ring's floor, as a fraction of its target: below it, with the
 * pool empty, long frames are dropped and their buffers go straight back on
 * the fill ring (see xdp_rx_burst). */
#define XDP_FILL_LOW_DIV 8
/* Frames up to this long (ACKs with SACK blocks, ARP, SYNs) still go up
 * while the fill ring is between its floor and half of it. */
#define XDP_SHORT_FRAME 128u

typedef struct xdp_queue {
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    struct xsk_ring_prod fill;
    struct xsk_ring_cons comp;
    struct xsk_ring_cons rx;
    struct xsk_ring_prod tx;
    uint8_t *base;          /* UMEM start = the pool's mapping */
    tern_pool *pool;
    unsigned fill_target;   /* buffers we keep posted on the fill ring */
    unsigned fill_posted;   /* posted and not yet received */
    unsigned fill_low;      /* floor kept with an empty pool */
    unsigned tx_size;
    unsigned tx_inflight;   /* on the tx ring or awaiting completion */
    int fd;
} xdp_queue;

typedef struct xdp_dev {
    struct tern_dev base;
    char ifname[IFNAMSIZ];
    int ifindex;
    xdp_queue *q;
    bool zerocopy;
    bool native;             /* XDP program in driver (native) mode */
    uint64_t tx_copied;      /* frames copied because not a pool buffer */
} xdp_dev;

const tern_driver tern_driver_afxdp;

/* ---- libxdp/libbpf messages: keep the last warning for our error line --- */

static __thread char xdp_lastmsg[160];

static int xdp_print(enum libxdp_print_level level, const char *fmt,
                     va_list ap)
{
    if (level == LIBXDP_WARN) {
        vsnprintf(xdp_lastmsg, sizeof(xdp_lastmsg), fmt, ap);
        char *nl = strchr(xdp_lastmsg, '\n');
        if (nl)
            *nl = '\0';
    }
    if (getenv("TERN_XDP_DEBUG")) {
        vfprintf(stderr, fmt, ap);
    }
    return 0;
}

/* libbpf's own chatter (e.g. about sections of libxdp's objects it skips)
 * only with TERN_XDP_DEBUG. */
static int xdp_libbpf_print(enum libbpf_print_level level, const char *fmt,
                            va_list ap)
{
    (void)level;
    if (getenv("TERN_XDP_DEBUG"))
        vfprintf(stderr, fmt, ap);
    return 0;
}

/* ---- buffers <-> UMEM addresses ---- */

static inline uint64_t buf_addr(const xdp_queue *q, const uint8_t *p)
{
    return (uint64_t)(p - q->base);
}

/* The buffer whose slot holds UMEM address addr (any byte of the slot). */
static inline tern_buf *addr_buf(const xdp_queue *q, uint64_t addr)
{
    const tern_pool *p = q->pool;
    uint64_t off = (uint64_t)(q->base + addr - p->slots);
    return (tern_buf *)(p->slots + off / p->slot_size * p->slot_size);
}

/* Check that the pool has the layout we rely on: one mapping starting at
 * the pool, a tern_buf at the start of every slot with its memory inside
 * the slot. */
static bool pool_layout_ok(const tern_pool *p, unsigned chunk)
{
    if (((uintptr_t)p & 4095u) != 0)
        return false;
    if (p->buf_size < chunk)
        return false;
    for (unsigned i = 0; i < p->count; i++) {
        const tern_buf *b =
            (const tern_buf *)(p->slots + (size_t)i * p->slot_size);
        if (!tern_pool_owns(p, b) || b->head < (const uint8_t *)(b + 1) ||
            b->head + b->size > p->slots + (size_t)(i + 1) * p->slot_size ||
            b->head + chunk > (const uint8_t *)p + p->map_len)
            return false;
    }
    return true;
}

/* ---- ring work ---- */

static void reap_completions(xdp_dev *d, xdp_queue *q)
{
    uint32_t idx;
    unsigned n = xsk_ring_cons__peek(&q->comp, q->tx_size, &idx);
    for (unsigned i = 0; i < n; i++) {
        uint64_t a = *xsk_ring_cons__comp_addr(&q->comp, idx + i);
        tern_pool_release(q->pool, addr_buf(q, a));
    }
    if (n) {
        xsk_ring_cons__release(&q->comp, n);
        q->tx_inflight -= n;
    }
    (void)d;
}

static void refill(xdp_queue *q)
{
    if (q->fill_posted >= q->fill_target)
        return;
    unsigned want = q->fill_target - q->fill_posted;
    unsigned avail = tern_pool_available(q->pool);
    if (want > avail)
        want = avail;
    want = xsk_prod_nb_free(&q->fill, want) < want
               ? xsk_prod_nb_free(&q->fill, want)
               : want;
    if (!want)
        return;
    uint32_t idx;
    if (xsk_ring_prod__reserve(&q->fill, want, &idx) != want)
        return;
    for (unsigned i = 0; i < want; i++) {
        tern_buf *b = tern_pool_alloc(q->pool);
        *xsk_ring_prod__fill_addr(&q->fill, idx + i) = buf_addr(q, b->head);
    }
    xsk_ring_prod__submit(&q->fill, want);
    q->fill_posted += want;
}

static void kick_tx(xdp_dev *d, xdp_queue *q)
{
    for (int round = 0; round < XDP_TX_KICK_ROUNDS; round++) {
        if (!xsk_ring_prod__needs_wakeup(&q->tx))
            return;
        if (sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
            return;
        if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS &&
            errno != EINTR)
            return; /* e.g. ENETDOWN: the frames wait on the ring */
        /* The kernel sends a budget per call, or the completion ring is
         * full: make room and go on. */
        reap_completions(d, q);
        if (q->tx_inflight == 0)
            return;
    }
}

/* ---- open / close ---- */

static void xdp_close(tern_dev *dev)
{
    xdp_dev *d = (xdp_dev *)dev;
    if (!d)
        return;
    if (d->q) {
        for (unsigned i = 0; i < d->base.queues; i++) {
            xdp_queue *q = &d->q[i];
            /* Sockets first (the last one detaches libxdp's program), then
             * the UMEM, then the pool it lived in. */
            if (q->xsk)
                xsk_socket__delete(q->xsk);
            if (q->umem)
                xsk_umem__delete(q->umem);
        }
        free(d->q);
    }
    tern_netif_dev_fini(&d->base);
    free(d);
}

static const char *xdp_errtext(int e)
{
    switch (e) {
    case EPERM:
    case EACCES:
        return "permission denied (AF_XDP needs root: CAP_NET_ADMIN, "
               "CAP_NET_RAW, CAP_BPF)";
    case EAFNOSUPPORT:
        return "AF_XDP not supported by this kernel (CONFIG_XDP_SOCKETS)";
    case ENOMEM:
        return "out of memory (RLIMIT_MEMLOCK?)";
    default:
        return strerror(e);
    }
}

static int open_queue(xdp_dev *d, unsigned qi, const tern_dev_args *a,
                      unsigned ring, unsigned chunk, bool *try_native,
                      char *err, size_t errlen)
{
    xdp_queue *q = &d->q[qi];
    q->pool = d->base.pools[qi];
    q->base = (uint8_t *)q->pool;
    if (!pool_layout_ok(q->pool, chunk)) {
        tern_netif_err(err, errlen,
                       "afxdp: the buffer pool's layout cannot serve as a "
                       "UMEM (pool.c changed?)");
        return -1;
    }
    struct xsk_umem_config ucfg = {
        .fill_size = ring,
        .comp_size = ring,
        .frame_size = chunk,
        .frame_headroom = 0,
        .flags = XDP_UMEM_UNALIGNED_CHUNK_FLAG,
    };
    xdp_lastmsg[0] = '\0';
    int rc = xsk_umem__create(&q->umem, q->base, q->pool->map_len, &q->fill,
                              &q->comp, &ucfg);
    if (rc) {
        q->umem = NULL;
        tern_netif_err(err, errlen, "afxdp: %s: UMEM of %zu bytes: %s",
                       d->ifname, q->pool->map_len, xdp_errtext(-rc));
        return -1;
    }

    bool wakeup = tern_netif_opt_bool(a->extra, "wakeup", true);
    struct xsk_socket_config scfg = {
        .rx_size = ring,
        .tx_size = ring,
        .bind_flags = (uint16_t)((d->zerocopy ? XDP_ZEROCOPY : XDP_COPY) |
                                 (wakeup ? XDP_USE_NEED_WAKEUP : 0)),
    };
    unsigned busy_waits = 0;
    for (;;) {
        scfg.xdp_flags = *try_native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
        xdp_lastmsg[0] = '\0';
        rc = xsk_socket__create(&q->xsk, d->ifname, qi, q->umem, &q->rx,
                                &q->tx, &scfg);
        if (!rc)
            break;
        q->xsk = NULL;
        if (rc == -EBUSY && busy_waits++ < XDP_BUSY_WAITS) {
            /* The kernel frees a closed socket's hold on the queue in
             * deferred work: a queue closed a moment ago reads as busy for
             * a few milliseconds. */
            usleep(XDP_BUSY_WAIT_US);
            continue;
        }
        bool fixed_mode = tern_netif_opt(a->extra, "mode", NULL, 0);
        if (*try_native && !fixed_mode && !d->zerocopy && qi == 0 &&
            rc != -EPERM && rc != -EAFNOSUPPORT) {
            /* Native XDP refused: generic (SKB) mode works on any device. */
            *try_native = false;
            continue;
        }
        const char *why = xdp_errtext(-rc);
        if (d->zerocopy && (rc == -EOPNOTSUPP || rc == -EINVAL))
            why = "zero-copy is not supported by this device's driver "
                  "(veth and most virtual devices have copy mode only)";
        else if (rc == -EBUSY)
            why = "queue busy (another AF_XDP socket, or another XDP "
                  "program is attached)";
        else if (rc == -EINVAL && qi > 0)
            why = "no such queue (the interface has fewer rx queues)";
        tern_netif_err(err, errlen, "afxdp: %s queue %u (%s mode, %s): %s%s%s",
                       d->ifname, qi, *try_native ? "native" : "skb",
                       d->zerocopy ? "zero-copy" : "copy", why,
                       xdp_lastmsg[0] ? " - libxdp: " : "", xdp_lastmsg);
        return -1;
    }
    q->fd = xsk_socket__fd(q->xsk);
    q->tx_size = ring;
    /* Keep at most half the pool on the fill ring: the rest is for the
     * stack's own allocations and frames it holds. */
    unsigned half = tern_pool_count(q->pool) / 2;
    q->fill_target = ring < half ? ring : half;
    q->fill_low = q->fill_target / XDP_FILL_LOW_DIV;
    if (q->fill_low < 2)
        q->fill_low = 2;
    refill(q);
    return 0;
}

static tern_dev *xdp_open(const tern_dev_args *a, char *err, size_t errlen)
{
    if (!a || !tern_netif_name_ok(a->iface, err, errlen))
        return NULL;
    static bool print_set;
    if (!print_set) {
        libxdp_set_print(xdp_print);
        libbpf_set_print(xdp_libbpf_print);
        print_set = true;
    }
    xdp_dev *d = calloc(1, sizeof(*d));
    if (!d) {
        tern_netif_err(err, errlen, "afxdp: out of memory");
        return NULL;
    }
    snprintf(d->ifname, sizeof(d->ifname), "%s", a->iface);
    char qerr[200];
    if (tern_netif_query(d->ifname, d->base.mac, &d->base.mtu, &d->ifindex,
                         qerr, sizeof(qerr)) < 0) {
        tern_netif_err(err, errlen, "afxdp: %s", qerr);
        free(d);
        return NULL;
    }
    /* Probe for AF_XDP itself, so its absence reads as such. */
    int probe = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (probe < 0) {
        int e = errno;
        tern_netif_err(err, errlen, "afxdp: %s: %s", d->ifname,
                       xdp_errtext(e));
        free(d);
        return NULL;
    }
    close(probe);
    tern_netif_memlock_unlimited();

    unsigned max_frame = (unsigned)d->base.mtu + 14 + 4;
    unsigned chunk = 2048;
    if (max_frame > chunk - XDP_KERNEL_HEADROOM)
        chunk = 4096;
    if (max_frame > chunk - XDP_KERNEL_HEADROOM) {
        tern_netif_err(err, errlen,
                       "afxdp: %s: MTU %u is too large for one 4 KiB UMEM "
                       "chunk (multi-buffer frames are not supported)",
                       d->ifname, d->base.mtu);
        free(d);
        return NULL;
    }
    unsigned ring = a->ring_size ? a->ring_size : XDP_DEFAULT_RING;
    if (ring & (ring - 1)) {
        tern_netif_err(err, errlen,
                       "afxdp: ring_size %u is not a power of two", ring);
        free(d);
        return NULL;
    }
    unsigned nq = a->queues ? a->queues : 1;
    /* Pool: the fill ring's share, the tx ring's, and as much again for the
     * stack. Buffers are exactly one chunk. */
    unsigned bufs = a->pool_size ? a->pool_size : 4 * ring;
    if (tern_netif_dev_init(&d->base, &tern_driver_afxdp, nq, bufs, chunk, err,
                            errlen) < 0) {
        xdp_close(&d->base);
        return NULL;
    }
    d->base.caps = 0;
    if (tern_netif_allmulti(&d->base, d->ifindex, a->extra, err, errlen) < 0) {
        xdp_close(&d->base);
        return NULL;
    }
    d->zerocopy = a->zerocopy;
    char m[16] = "";
    tern_netif_opt(a->extra, "mode", m, sizeof(m));
    if (m[0] && strcmp(m, "native") && strcmp(m, "skb")) {
        tern_netif_err(err, errlen, "afxdp: mode= takes native or skb");
        xdp_close(&d->base);
        return NULL;
    }
    bool native = strcmp(m, "skb") != 0;
    if (d->zerocopy && !native) {
        tern_netif_err(err, errlen,
                       "afxdp: zero-copy needs native mode, not mode=skb");
        xdp_close(&d->base);
        return NULL;
    }
    d->q = calloc(nq, sizeof(*d->q));
    if (!d->q) {
        tern_netif_err(err, errlen, "afxdp: out of memory");
        xdp_close(&d->base);
        return NULL;
    }
    for (unsigned i = 0; i < nq; i++) {
        if (open_queue(d, i, a, ring, chunk, &native, err, errlen) < 0) {
            xdp_close(&d->base);
            return NULL;
        }
    }
    d->native = native;
    return &d->base;
}

/* ---- data path ---- */

/* Put buffer b straight back on the fill ring (its frame dropped). */
static bool repost(xdp_queue *q, tern_buf *b)
{
    uint32_t idx;
    if (xsk_ring_prod__reserve(&q->fill, 1, &idx) != 1)
        return false;
    *xsk_ring_prod__fill_addr(&q->fill, idx) = buf_addr(q, b->head);
    xsk_ring_prod__submit(&q->fill, 1);
    return true;
}

/* With the pool empty (the stack holds it: send queues, out-of-order
 * data), every received frame would take one more buffer off the fill ring
 * and the ring would run dry: the kernel then drops everything, the ACKs
 * that would free the send queues included, and input stops. So below
 * fill_low a long frame is dropped (rx_drop_nobuf) and its buffer reposted
 * at once; short frames (ACKs, ARP) still go up down to half the floor,
 * below which every frame is dropped. The ring never empties, and input
 * resumes in full as soon as the stack frees buffers. */
static bool keep_for_fill(const xdp_queue *q, unsigned posted, uint32_t len)
{
    if (posted >= q->fill_low || tern_pool_available(q->pool))
        return false;
    return len > XDP_SHORT_FRAME || posted < q->fill_low / 2;
}

static unsigned xdp_rx_burst(tern_dev *dev, unsigned qi, tern_buf **frames,
                             unsigned max)
{
    xdp_dev *d = (xdp_dev *)dev;
    xdp_queue *q = &d->q[qi];
    uint32_t idx;
    unsigned n = xsk_ring_cons__peek(&q->rx, max, &idx), out = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct xdp_desc *desc = xsk_ring_cons__rx_desc(&q->rx, idx + i);
        uint64_t a = xsk_umem__add_offset_to_addr(desc->addr);
        tern_buf *b = addr_buf(q, a);
        if (keep_for_fill(q, q->fill_posted - 1, desc->len) && repost(q, b)) {
            d->base.rx_drop_nobuf++;
            d->base.rx_drops++;
            continue;
        }
        q->fill_posted--;
        b->data = q->base + a;
        b->len = desc->len;
        if (tern_netif_vlan_rx(b)) {
            d->base.rx_drop_vlan++;
            d->base.rx_drops++;
            tern_pool_release(q->pool, b);
            continue;
        }
        frames[out++] = b;
    }
    if (n) {
        xsk_ring_cons__release(&q->rx, n);
        d->base.rx_frames += out;
    }
    refill(q);
    if (xsk_ring_prod__needs_wakeup(&q->fill))
        recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
    if (q->tx_inflight) {
        reap_completions(d, q);
        /* Frames left on the tx ring by an earlier kick's budget. */
        if (q->tx_inflight)
            kick_tx(d, q);
    }
    return out;
}

static void xdp_tx_burst(tern_dev *dev, unsigned qi, tern_buf **frames,
                         unsigned n)
{
    xdp_dev *d = (xdp_dev *)dev;
    xdp_queue *q = &d->q[qi];
    if (q->tx_inflight)
        reap_completions(d, q);
    unsigned room = xsk_prod_nb_free(&q->tx, n);
    unsigned k = n < room ? n : room;
    uint32_t idx = 0;
    if (k && xsk_ring_prod__reserve(&q->tx, k, &idx) != k)
        k = 0;
    unsigned put = 0;
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        if (i >= k) {
            d->base.tx_drops++; /* tx ring full, as a NIC would */
            tern_netif_release(&d->base, qi, f);
            continue;
        }
        if (f->frag || !tern_pool_owns(q->pool, f)) {
            /* Not one buffer of this UMEM: copy into one. */
            tern_buf *c = tern_pool_alloc(q->pool);
            size_t cap = c ? c->size - TERN_HEADROOM : 0;
            size_t len = c ? tern_netif_linearize(f, c->data, cap) : 0;
            if (tern_pool_owns(q->pool, f))
                tern_netif_release(&d->base, qi, f);
            /* else: a frame from another pool breaks the driver contract;
             * it cannot be given back safely here and is left alone. */
            if (!c || len > cap) {
                if (c)
                    tern_pool_release(q->pool, c);
                d->base.tx_drops++;
                continue;
            }
            c->len = (uint32_t)len;
            f = c;
            d->tx_copied++;
        }
        if (f->len > (uint32_t)(f->head + f->size - f->data)) {
            d->base.tx_drops++;
            tern_netif_release(&d->base, qi, f);
            continue;
        }
        struct xdp_desc *desc = xsk_ring_prod__tx_desc(&q->tx, idx + put);
        desc->addr = buf_addr(q, f->data);
        desc->len = f->len;
        desc->options = 0;
        put++;
    }
    if (k && put < k) {
        /* Some reserved slots were not used (frames dropped above). libxdp
         * has no cancel for producers: rewind the cached producer so only
         * what was written is submitted. */
        q->tx.cached_prod -= k - put;
    }
    if (put) {
        xsk_ring_prod__submit(&q->tx, put);
        q->tx_inflight += put;
        d->base.tx_frames += put;
        kick_tx(d, q);
    }
}

static int xdp_wait_fd(tern_dev *dev, unsigned qi)
{
    xdp_dev *d = (xdp_dev *)dev;
    return qi < d->base.queues ? d->q[qi].fd : -1;
}

const tern_driver tern_driver_afxdp = {
    .name = "afxdp",
    .open = xdp_open,
    .close = xdp_close,
    .rx_burst = xdp_rx_burst,
    .tx_burst = xdp_tx_burst,
    .wait_fd = xdp_wait_fd,
};

#else
/* ISO C forbids an empty translation unit. */
typedef int tern_afxdp_not_built;
#endif /* TERN_HAVE_AFXDP */
