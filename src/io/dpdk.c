/* dpdk.c - the DPDK driver: a DPDK ethdev port (a NIC, or a virtual device
 * such as net_memif or net_tap) with one rx/tx queue pair per tern queue.
 * Built only when CMake found libdpdk (TERN_HAVE_DPDK, cmake/dpdk.cmake).
 *
 * Buffers, without copies: every mbuf of a queue's mempool carries a
 * tern_buf in its private area (rte_mbuf_to_priv), so a received mbuf IS the
 * tern buffer the stack gets and a buffer the stack allocates IS the mbuf
 * that is transmitted. The mempool's memory is one chunk that we reserve and
 * populate ourselves, so the mbufs sit at a fixed stride; the queue's
 * tern_pool (what the runtime and tern_dev_buf_ops use) is a view of that
 * memory whose LIFO free list holds mbufs taken out of the mempool: a stock
 * the stack allocates from and frees to without touching DPDK. rx_burst and
 * tx_burst keep the stock between a low and a high mark by bulk moves
 * to/from the mempool, which the PMD refills its rx ring from.
 *
 * Where a buffer is, told by its tern refs:
 *     0        in the mempool, an rx ring, or handed to the PMD for tx
 *     0xFFFF   in the queue's tern free list (TERN_POOL_FREE_REFS)
 *     >= 1     owned by tern (stack, application, driver)
 * The mbuf refcnt stays 1 throughout; tern's refs are the real count.
 *
 * Transmit takes one tern reference per segment (io.h). A segment whose
 * refs is 1 is handed to the PMD as its own mbuf (refs -> 0); the PMD frees
 * it to the mempool when sent. A segment the stack still holds (refs > 1,
 * e.g. TCP data kept for retransmission) is sent through a header-only
 * "clone" mbuf attached to the same memory as an external buffer
 * (rte_pktmbuf_attach_extbuf) with a shared-info block in the private area:
 * the first clone in flight keeps the reference tx took, later ones drop
 * theirs, and the extbuf free callback (run by the PMD when the last clone
 * is freed, on the queue's own thread) drops the kept one. So the memory is
 * never reused while the NIC may still read it. Only buffers of another
 * queue's pool with refs > 1 and buffers of no pool are copied.
 *
 * Received frames carry the PMD's headroom (RTE_PKTMBUF_HEADROOM, 128 in
 * Debian's build); buffers the stack allocates get TERN_HEADROOM (192).
 *
 * Offloads: dev_info's rx/tx offload capabilities become TERN_CAP_* (both
 * TCP and UDP are needed for the L4 bits; TSO needs IPv4 and L4 checksums
 * and multi-segment tx; SG = multi-segment tx), and TERN_BUF_TX_* become
 * mbuf ol_flags and l2/l3/l4_len/tso_segsz (the TSO pseudo-header sum is
 * rewritten without the length, as DPDK wants).
 *
 * RSS: with several queues on a port that has RSS, the port gets our key
 * (the Microsoft default) and a round-robin redirection table, both read
 * back from the port for tern_dpdk_rss() so the stack can pick local ports
 * that hash to its queue.
 *
 * EAL: initialised once per process from the option eal=... (which takes
 * the rest of the option string, spaces separate arguments); later opens
 * hot-plug the --vdev devices they name. A virtual device is removed when
 * its tern device is closed. See docs/dpdk.md.
 *
 * Options (tern_dev_args.extra, "k=v,..."; eal= must come last):
 *   offloads=0   declare no offload at all (software checksums)
 *   rss=0        do not configure RSS
 *   lro=1        enable LRO if the port has it (needs SG)
 *   idle_yield=N sched_yield() after N empty rx polls of a queue in a row
 *                (0 = never, the default): for busy-polling threads that
 *                share CPUs, e.g. both processes of a memif pair
 *   mac=MAC      tern's MAC (added to the port's filter, or promiscuous).
 *                Default: the port's; on net_tap, whose kernel interface
 *                has the port's MAC, a locally administered one derived
 *                from it (first byte | 0x02, last byte ^ 0x01) as the tap
 *                driver does, so the two ends of the wire differ.
 *   eal=ARGS     EAL arguments; without it the environment variable
 *                TERN_DPDK_EAL, else
 *                "--no-huge -m 512 --no-pci --no-shconf --no-telemetry"
 * Without tern_dev_args.extra, the options come from the environment
 * variable TERN_DPDK_OPTS (same syntax), for programs that have no flag
 * for driver options.
 * iface: a port name ("net_memif0"), a port number, or a vdev spec with
 * arguments ("net_tap0,iface=tern0"), which is added as --vdev. Empty: the
 * first port.
 */
#ifdef TERN_HAVE_DPDK

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_memzone.h>
#include <rte_mempool.h>
#include <rte_tcp.h>

#include "dpdk.h"
#include "io.h"
#include "netif.h"

#define DPDK_DEFAULT_POOL 8192u  /* mbufs per queue */
#define DPDK_DEFAULT_RING 512u   /* rx and tx descriptors per queue */
#define DPDK_CLONES 2048u        /* header-only mbufs per queue */
#define DPDK_BURST 32u
#define DPDK_DATA_ROOM (TERN_HEADROOM + 2048u)
#define DPDK_TX_RETRIES 4
#define DPDK_MAX_ARGS 64

#define DEFAULT_EAL "--no-huge -m 512 --no-pci --no-shconf --no-telemetry"

/* Microsoft's default RSS key (also Intel's): 40 bytes. */
static const uint8_t default_rss_key[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
    0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
    0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
    0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

struct dq;

/* What lives in each mbuf's private area. The tern_buf comes first: its
 * address is the mbuf's + sizeof(struct rte_mbuf). */
typedef struct dpriv {
    tern_buf buf;
    struct rte_mbuf_ext_shared_info shinfo; /* clones in flight */
    struct dq *q;                           /* owning queue */
} dpriv;

#define PRIV_SIZE RTE_ALIGN_CEIL(sizeof(dpriv), RTE_CACHE_LINE_SIZE)

typedef struct dq {
    struct dpdk_dev *d;
    uint16_t idx;
    bool prepare;                  /* PMD has tx_prepare work to do */
    struct rte_mempool *mp;        /* packet mbufs, tern_buf in priv */
    struct rte_mempool *clones;    /* header-only mbufs */
    const struct rte_memzone *mz;  /* memory behind mp */
    tern_pool tp;                  /* tern's view: stock of free mbufs */
    unsigned stock_lo, stock_target, stock_hi;
    unsigned idle, idle_yield;     /* empty polls in a row; yield after */
    tern_dpdk_stats st;
} __rte_cache_aligned dq;

typedef struct dpdk_dev {
    struct tern_dev base;
    uint16_t port;
    bool configured, started;
    struct rte_device *rdev;       /* removed at close when we added it */
    bool remove_on_close;
    uint64_t rx_ol, tx_ol;
    dq *qs;
    tern_pool **pool_ptrs;
    bool rss_ok;
    bool tso_counts_l2;            /* net_tap: TSO segment + L2 must fit MTU */
    uint8_t rss_key[40];
    uint16_t reta_size;
    uint16_t reta[512];
} dpdk_dev;

const tern_driver tern_driver_dpdk;

/* ------------------------------------------------------------------ */
/* EAL                                                                 */
/* ------------------------------------------------------------------ */

static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static int eal_state;          /* 0 not yet, 1 up */
static unsigned dev_serial;    /* unique mempool/memzone names */
static char *eal_argv_keep[DPDK_MAX_ARGS + 8]; /* EAL may keep pointers */

/* Split `s` at spaces into argv (strings strdup'ed and kept). */
static int split_args(const char *s, char **argv, int max)
{
    int n = 0;
    while (s && *s) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        const char *e = s;
        while (*e && *e != ' ' && *e != '\t')
            e++;
        if (n == max)
            return -1;
        argv[n] = strndup(s, (size_t)(e - s));
        if (!argv[n])
            return -1;
        n++;
        s = e;
    }
    return n;
}

static bool has_arg(char **argv, int argc, const char *a)
{
    size_t l = strlen(a);
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], a, l) && (argv[i][l] == 0 || argv[i][l] == '='))
            return true;
    return false;
}

/* The device name of a vdev spec: "net_tap0,iface=x" -> "net_tap0". */
static void vdev_name(const char *spec, char *out, size_t outlen)
{
    size_t n = strcspn(spec, ",");
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, spec, n);
    out[n] = 0;
}

/* Probe a vdev after EAL init (hot-plug), unless its port exists. */
static int probe_vdev(const char *spec, char *err, size_t errlen)
{
    char name[RTE_ETH_NAME_MAX_LEN];
    uint16_t port;
    vdev_name(spec, name, sizeof name);
    if (rte_eth_dev_get_port_by_name(name, &port) == 0)
        return 0;
    int rc = rte_dev_probe(spec);
    if (rc < 0) {
        tern_netif_err(err, errlen, "dpdk: cannot add device %s: %s", spec,
                       rte_strerror(-rc));
        return -1;
    }
    return 0;
}

/* Bring the EAL up (once per process) with `eal` (may be NULL: defaults)
 * plus `vdev` (may be NULL). Later calls hot-plug the --vdev arguments. */
static int eal_up(const char *eal, const char *vdev, char *err, size_t errlen)
{
    char *argv[DPDK_MAX_ARGS + 8];
    int argc = 0;
    argv[argc++] = strdup("tern-dpdk");
    int n = split_args(eal ? eal : DEFAULT_EAL, argv + argc, DPDK_MAX_ARGS);
    if (n < 0 || !argv[0]) {
        tern_netif_err(err, errlen, "dpdk: too many EAL arguments (max %d)",
                       DPDK_MAX_ARGS);
        return -1;
    }
    argc += n;
    pthread_mutex_lock(&eal_lock);
    if (eal_state == 1) {
        /* EAL already up: add the devices this open names. */
        int rc = 0;
        for (int i = 1; i < argc && rc == 0; i++) {
            if (!strncmp(argv[i], "--vdev=", 7))
                rc = probe_vdev(argv[i] + 7, err, errlen);
            else if (!strcmp(argv[i], "--vdev") && i + 1 < argc)
                rc = probe_vdev(argv[++i], err, errlen);
        }
        if (rc == 0 && vdev)
            rc = probe_vdev(vdev, err, errlen);
        pthread_mutex_unlock(&eal_lock);
        for (int i = 0; i < argc; i++)
            free(argv[i]);
        return rc;
    }
    if (vdev) {
        char *a = malloc(strlen(vdev) + 8);
        if (a) {
            sprintf(a, "--vdev=%s", vdev);
            argv[argc++] = a;
        }
    }
    /* One main lcore on a CPU we may run on, unless the caller chose. */
    cpu_set_t saved;
    bool have_aff = sched_getaffinity(0, sizeof saved, &saved) == 0;
    if (!has_arg(argv, argc, "-l") && !has_arg(argv, argc, "-c") &&
        !has_arg(argv, argc, "--lcores")) {
        int cpu = 0;
        if (have_aff)
            while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved))
                cpu++;
        char *a = malloc(16);
        if (a) {
            snprintf(a, 16, "-l%d", cpu < CPU_SETSIZE ? cpu : 0);
            argv[argc++] = a;
        }
    }
    if (!has_arg(argv, argc, "--log-level"))
        argv[argc++] = strdup("--log-level=4");  /* warnings and worse */
    memcpy(eal_argv_keep, argv, sizeof(char *) * (size_t)argc);
    int rc = rte_eal_init(argc, argv);
    int e = rte_errno;
    /* EAL pins the calling thread to the main lcore: undo that, the
     * runtime pins its own threads. */
    if (have_aff)
        pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    if (rc < 0 && e != EALREADY) {
        pthread_mutex_unlock(&eal_lock);
        tern_netif_err(err, errlen,
                       "dpdk: EAL init failed: %s (%s) - arguments \"%s\"; "
                       "root is needed, and without hugepages pass --no-huge",
                       rte_strerror(e), e == EACCES ? "permission denied" :
                       "see messages above", eal ? eal : DEFAULT_EAL);
        return -1;
    }
    eal_state = 1;
    pthread_mutex_unlock(&eal_lock);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Buffers                                                             */
/* ------------------------------------------------------------------ */

static inline tern_buf *mbuf_tb(struct rte_mbuf *m)
{
    return (tern_buf *)rte_mbuf_to_priv(m);
}

static inline struct rte_mbuf *tb_mbuf(tern_buf *b)
{
    return (struct rte_mbuf *)((uint8_t *)b - sizeof(struct rte_mbuf));
}

/* The extbuf free callback: the last clone of a buffer left the PMD. Runs
 * on the queue's thread (PMDs free sent mbufs inside tx_burst). */
static void ext_free(void *addr, void *opaque)
{
    (void)addr;
    tern_buf *b = opaque;
    dpriv *p = (dpriv *)b;
    if (--b->refs == 0)
        tern_pool_put(&p->q->tp, b);
}

typedef struct layout_ctx {
    dq *q;
    uint8_t *first;
    size_t stride;
    bool ok;
} layout_ctx;

/* Per mbuf once: our private area, and a check of the fixed stride. */
static void priv_init(struct rte_mempool *mp, void *arg, void *obj,
                      unsigned idx)
{
    (void)mp;
    layout_ctx *lc = arg;
    struct rte_mbuf *m = obj;
    dpriv *p = rte_mbuf_to_priv(m);
    memset(p, 0, sizeof *p);
    p->buf.head = m->buf_addr;
    p->buf.size = m->buf_len;
    p->buf.data = p->buf.head + TERN_HEADROOM;
    p->buf.refs = 0;
    p->buf.user = m;
    p->shinfo.free_cb = ext_free;
    p->shinfo.fcb_opaque = &p->buf;
    rte_mbuf_ext_refcnt_set(&p->shinfo, 0);
    p->q = lc->q;
    if (idx == 0)
        lc->first = (uint8_t *)p;
    else if ((uint8_t *)p != lc->first + (size_t)idx * lc->stride)
        lc->ok = false;
}

/* The queue's mempool over one memory chunk we reserve, so the mbufs (and
 * the tern_bufs in them) are `stride` apart and the tern_pool view's range
 * checks hold. */
static int make_pools(dpdk_dev *d, dq *q, unsigned n, int socket, char *err,
                      size_t errlen)
{
    char name[RTE_MEMPOOL_NAMESIZE];
    unsigned serial = __atomic_fetch_add(&dev_serial, 1, __ATOMIC_RELAXED);
    snprintf(name, sizeof name, "tern%u_%u", serial, q->idx);
    unsigned elt = (unsigned)(sizeof(struct rte_mbuf) + PRIV_SIZE +
                              DPDK_DATA_ROOM);
    q->mp = rte_mempool_create_empty(name, n, elt, 0,
                                     sizeof(struct rte_pktmbuf_pool_private),
                                     socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
    if (!q->mp)
        goto fail;
    if (rte_mempool_set_ops_byname(q->mp, rte_mbuf_best_mempool_ops(),
                                   NULL) < 0)
        goto fail;
    struct rte_pktmbuf_pool_private pp = {
        .mbuf_data_room_size = DPDK_DATA_ROOM,
        .mbuf_priv_size = PRIV_SIZE,
    };
    rte_pktmbuf_pool_init(q->mp, &pp);
    size_t stride = (size_t)q->mp->header_size + q->mp->elt_size +
                    q->mp->trailer_size;
    size_t len = stride * n + RTE_CACHE_LINE_SIZE;
    /* In IOVA-as-PA mode the chunk must be physically contiguous too. */
    unsigned mzflags = rte_eal_iova_mode() == RTE_IOVA_PA
                           ? RTE_MEMZONE_IOVA_CONTIG : 0;
    q->mz = rte_memzone_reserve_aligned(name, len, socket, mzflags,
                                        RTE_CACHE_LINE_SIZE);
    if (!q->mz && mzflags)
        q->mz = rte_memzone_reserve_aligned(name, len, socket, 0,
                                            RTE_CACHE_LINE_SIZE);
    if (!q->mz) {
        tern_netif_err(err, errlen,
                       "dpdk: cannot reserve %zu bytes for %u mbufs: %s "
                       "(raise EAL -m, or lower pool_size)", len, n,
                       rte_strerror(rte_errno));
        return -1;
    }
    int got = rte_mempool_populate_iova(q->mp, q->mz->addr, q->mz->iova, len,
                                        NULL, NULL);
    if (got != (int)n) {
        tern_netif_err(err, errlen, "dpdk: mempool holds %d of %u mbufs",
                       got, n);
        return -1;
    }
    rte_mempool_obj_iter(q->mp, rte_pktmbuf_init, NULL);
    layout_ctx lc = {.q = q, .stride = stride, .ok = true};
    rte_mempool_obj_iter(q->mp, priv_init, &lc);
    if (!lc.ok || !lc.first) {
        tern_netif_err(err, errlen, "dpdk: mempool objects are not at a "
                                    "fixed stride");
        return -1;
    }
    /* The tern_pool view: slots = the first tern_buf, free list empty. */
    tern_buf **free_stack = calloc(n, sizeof(tern_buf *));
    if (!free_stack) {
        tern_netif_err(err, errlen, "dpdk: out of memory");
        return -1;
    }
    tern_pool_view(&q->tp, lc.first, n, (unsigned)stride, DPDK_DATA_ROOM,
                   free_stack);
    q->stock_target = n / 8 < 32 ? 32 : n / 8 > 1024 ? 1024 : n / 8;
    q->stock_lo = q->stock_target / 2;
    q->stock_hi = q->stock_target * 2;

    snprintf(name, sizeof name, "tern%u_%uc", serial, q->idx);
    q->clones = rte_pktmbuf_pool_create(name, DPDK_CLONES, 0, 0, 0, socket);
    if (!q->clones)
        goto fail;
    (void)d;
    return 0;
fail:
    tern_netif_err(err, errlen, "dpdk: cannot create mempool %s: %s", name,
                   rte_strerror(rte_errno));
    return -1;
}

static void free_pools(dq *q)
{
    if (q->clones)
        rte_mempool_free(q->clones);
    if (q->mp)
        rte_mempool_free(q->mp);
    if (q->mz)
        rte_memzone_free(q->mz);
    free(q->tp.stack.free);
    q->clones = q->mp = NULL;
    q->mz = NULL;
    q->tp.stack.free = NULL;
}

/* Keep the tern free list between stock_lo and stock_hi. */
static void stock_balance(dq *q)
{
    void *objs[64];
    if (q->tp.stack.top < q->stock_lo) {
        unsigned want = q->stock_target - q->tp.stack.top;
        while (want) {
            unsigned k = want < 64 ? want : 64;
            if (rte_mempool_get_bulk(q->mp, objs, k) < 0) {
                if (k <= 8 || rte_mempool_get_bulk(q->mp, objs, k = 8) < 0)
                    break;
            }
            for (unsigned i = 0; i < k; i++) {
                tern_buf *b = mbuf_tb(objs[i]);
                b->refs = TERN_POOL_FREE_REFS;
                q->tp.stack.free[q->tp.stack.top++] = b;
            }
            want -= k;
            q->st.stock_refills++;
        }
    } else if (q->tp.stack.top > q->stock_hi) {
        while (q->tp.stack.top > q->stock_target) {
            unsigned k = q->tp.stack.top - q->stock_target;
            if (k > 64)
                k = 64;
            for (unsigned i = 0; i < k; i++) {
                tern_buf *b = q->tp.stack.free[--q->tp.stack.top];
                struct rte_mbuf *m = tb_mbuf(b);
                b->refs = 0;
                m->next = NULL;
                m->nb_segs = 1;
                objs[i] = m;
            }
            rte_mempool_put_bulk(q->mp, objs, k);
            q->st.stock_drains++;
        }
    }
}

/* A buffer from the queue's stock (refilled if dry), or NULL. */
static tern_buf *stock_get(dq *q)
{
    if (q->tp.stack.top == 0)
        stock_balance(q);
    return tern_pool_alloc(&q->tp);
}

/* The queue of ours whose pool a buffer belongs to, or NULL. */
static dq *owner_of(dpdk_dev *d, dq *q, const tern_buf *b)
{
    if (tern_pool_owns(&q->tp, b))
        return q;
    for (unsigned i = 0; i < d->base.queues; i++)
        if (&d->qs[i] != q && tern_pool_owns(&d->qs[i].tp, b))
            return &d->qs[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

static uint16_t rx_flags(const dpdk_dev *d, uint64_t ol)
{
    uint16_t f = 0;
    if ((d->base.caps & TERN_CAP_RX_IP_CSUM) &&
        (ol & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
        f |= TERN_BUF_RX_IP_CSUM_OK;
    if (d->base.caps & TERN_CAP_RX_L4_CSUM) {
        uint64_t l4 = ol & RTE_MBUF_F_RX_L4_CKSUM_MASK;
        if (l4 == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
            f |= TERN_BUF_RX_L4_CSUM_OK;
        else if (l4 == RTE_MBUF_F_RX_L4_CKSUM_BAD)
            f |= TERN_BUF_RX_L4_CSUM_BAD;
    }
    if ((d->base.caps & TERN_CAP_LRO) && (ol & RTE_MBUF_F_RX_LRO))
        f |= TERN_BUF_RX_LRO;
    return f;
}

/* Copy a received packet into one buffer of our stock (foreign mbufs, or a
 * chain the stack did not ask for). */
static tern_buf *rx_copy(dq *q, struct rte_mbuf *m)
{
    tern_buf *b = NULL;
    uint32_t room = 0;
    if (m->pkt_len <= DPDK_DATA_ROOM - TERN_HEADROOM)
        b = stock_get(q);
    if (b) {
        room = b->size - (uint32_t)(b->data - b->head);
        const void *p = rte_pktmbuf_read(m, 0, m->pkt_len, b->data);
        if (p && p != b->data)
            memcpy(b->data, p, m->pkt_len);
        b->len = m->pkt_len <= room ? m->pkt_len : room;
        q->st.rx_copied++;
    } else {
        __atomic_fetch_add(&q->d->base.rx_drops, 1, __ATOMIC_RELAXED);
    }
    rte_pktmbuf_free(m);
    return b;
}

static tern_buf *rx_frame(dq *q, struct rte_mbuf *m)
{
    dpdk_dev *d = q->d;
    bool ours = true;
    for (struct rte_mbuf *s = m; s; s = s->next)
        if (s->pool != q->mp || RTE_MBUF_HAS_EXTBUF(s) || RTE_MBUF_CLONED(s))
            ours = false;
    if (!ours || (m->nb_segs > 1 && !(d->base.caps & TERN_CAP_SG))) {
        tern_buf *b = rx_copy(q, m);
        if (b)
            b->flags = rx_flags(d, m->ol_flags);
        return b;
    }
    uint16_t flags = rx_flags(d, m->ol_flags);
    tern_buf *head = NULL, **link = &head;
    for (struct rte_mbuf *s = m; s; s = s->next) {
        tern_buf *b = tern_buf_fresh(mbuf_tb(s));
        b->data = rte_pktmbuf_mtod(s, uint8_t *);   /* where the NIC wrote */
        b->len = s->data_len;
        *link = b;
        link = &b->frag;
    }
    head->flags = flags;
    return head;
}

static unsigned dpdk_rx_burst(tern_dev *dev, unsigned qi, tern_buf **frames,
                              unsigned max)
{
    dpdk_dev *d = (dpdk_dev *)dev;
    dq *q = &d->qs[qi];
    struct rte_mbuf *ms[DPDK_BURST];
    unsigned n = 0;
    stock_balance(q);
    while (n < max) {
        uint16_t want = (uint16_t)(max - n < DPDK_BURST ? max - n : DPDK_BURST);
        uint16_t got = rte_eth_rx_burst(d->port, q->idx, ms, want);
        for (uint16_t i = 0; i < got; i++) {
            tern_buf *b = rx_frame(q, ms[i]);
            if (b)
                frames[n++] = b;
        }
        if (got < want)
            break;
    }
    if (n) {
        __atomic_fetch_add(&d->base.rx_frames, n, __ATOMIC_RELAXED);
        q->idle = 0;
    } else if (q->idle_yield && ++q->idle >= q->idle_yield) {
        /* Nothing for a while: let a thread sharing this CPU run (another
         * busy-polling queue, the peer process of a memif pair). Returns
         * at once when nothing else is runnable here. */
        q->idle = 0;
        sched_yield();
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                            */
/* ------------------------------------------------------------------ */

/* Drop one tern reference of a segment we could not send or copied. */
static void seg_unref(dpdk_dev *d, dq *q, tern_buf *b)
{
    dq *o = owner_of(d, q, b);
    if (b->refs == 0 || b->refs == TERN_POOL_FREE_REFS)
        return; /* not a live buffer: nothing we may touch */
    if (--b->refs == 0 && o == q)
        tern_pool_put(&q->tp, b);
    /* refs 0 on another queue's or a foreign buffer: only that owner may
     * free it; it is lost (does not happen with the stack's own frames). */
}

/* A direct mbuf of ours holding a copy of `len` bytes of the frame starting
 * at segment b, or NULL. */
static struct rte_mbuf *tx_copy(dq *q, const tern_buf *f)
{
    tern_buf *c = stock_get(q);
    if (!c)
        return NULL;
    size_t room = c->size - (size_t)(c->data - c->head);
    size_t total = tern_netif_linearize(f, c->data, room);
    if (total > room) {
        tern_pool_release(&q->tp, c);
        return NULL;
    }
    struct rte_mbuf *m = tb_mbuf(c);
    c->refs = 0;
    m->data_off = (uint16_t)(c->data - c->head);
    m->data_len = (uint16_t)total;
    m->pkt_len = (uint32_t)total;
    m->next = NULL;
    m->nb_segs = 1;
    m->ol_flags = 0;
    m->tx_offload = 0;
    q->st.tx_copied++;
    return m;
}

/* The mbuf that sends segment b, consuming the tern reference tx took. */
static struct rte_mbuf *seg_mbuf(dpdk_dev *d, dq *q, tern_buf *b)
{
    dq *o = owner_of(d, q, b);
    struct rte_mbuf *m;
    if (o && b->refs == 1) {
        /* Nobody else holds it: hand the mbuf itself to the PMD. */
        m = tb_mbuf(b);
        b->refs = 0;
        q->st.tx_direct++;
    } else if (o == q && b->refs > 1 && b->refs != TERN_POOL_FREE_REFS) {
        /* Still held by the stack: a clone on the same memory. */
        m = rte_pktmbuf_alloc(q->clones);
        if (!m)
            return NULL;
        dpriv *p = (dpriv *)b;
        struct rte_mbuf *own = tb_mbuf(b);
        if (rte_mbuf_ext_refcnt_read(&p->shinfo) == 0) {
            rte_mbuf_ext_refcnt_set(&p->shinfo, 1); /* keeps tx's ref */
        } else {
            rte_mbuf_ext_refcnt_update(&p->shinfo, 1);
            b->refs--;                              /* one kept already */
        }
        rte_pktmbuf_attach_extbuf(m, b->head, rte_mbuf_iova_get(own),
                                  (uint16_t)b->size, &p->shinfo);
        q->st.tx_cloned++;
    } else {
        /* Another queue's buffer still held there, or not one of ours. */
        tern_buf one = *b;
        one.frag = NULL;
        m = tx_copy(q, &one);
        if (!m)
            return NULL;
        seg_unref(d, q, b);
        return m;
    }
    m->data_off = (uint16_t)(b->data - b->head);
    m->data_len = (uint16_t)b->len;
    m->pkt_len = b->len;
    m->next = NULL;
    m->nb_segs = 1;
    m->ol_flags &= RTE_MBUF_F_EXTERNAL;
    m->tx_offload = 0;
    return m;
}

/* TERN_BUF_TX_* of frame f -> ol_flags and header lengths on its first
 * mbuf m, whose first segment holds the headers. Returns false when the
 * headers are not where the flags say. */
static bool tx_offloads(const dpdk_dev *d, const tern_buf *f,
                        struct rte_mbuf *m)
{
    uint16_t fl = f->flags;
    if (!(fl & (TERN_BUF_TX_IP_CSUM | TERN_BUF_TX_L4_CSUM | TERN_BUF_TX_TSO)))
        return true;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    uint32_t len = m->data_len;
    uint32_t l2 = f->l2_len ? f->l2_len : 14;
    if (len < l2 + 20)
        return false;
    uint8_t *ipb = p + l2;
    /* IPv6 (no checksum of its own; tern offloads only frames whose
     * transport header follows the fixed header) or IPv4. */
    bool v6 = (ipb[0] >> 4) == 6;
    uint32_t l3 = f->l3_len ? f->l3_len
                  : v6 ? 40 : (uint32_t)(ipb[0] & 15) * 4;
    if (l3 < 20 || len < l2 + l3)
        return false;
    struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)ipb;
    uint8_t proto = v6 ? ipb[6] : ip->next_proto_id;
    uint64_t ol = v6 ? RTE_MBUF_F_TX_IPV6 : RTE_MBUF_F_TX_IPV4;
    m->l2_len = l2;
    m->l3_len = l3;
    if (!v6 && (fl & (TERN_BUF_TX_IP_CSUM | TERN_BUF_TX_TSO))) {
        ol |= RTE_MBUF_F_TX_IP_CKSUM;
        ip->hdr_checksum = 0;
    }
    if (fl & TERN_BUF_TX_TSO) {
        if (v6 || proto != IPPROTO_TCP || len < l2 + l3 + 20)
            return false;
        struct rte_tcp_hdr *tcp = (struct rte_tcp_hdr *)(ipb + l3);
        uint32_t l4 = f->l4_len ? f->l4_len
                                : (uint32_t)(tcp->data_off >> 4) * 4;
        ol |= RTE_MBUF_F_TX_TCP_SEG;
        m->l4_len = l4;
        /* DPDK 22.11's net_tap checks each segment with its Ethernet
         * header against the IP MTU, so full-MSS segments would be
         * dropped there: shrink them by the L2 header on that driver. */
        uint32_t seg = f->tso_mss;
        if (d->tso_counts_l2 && seg > l2)
            seg -= l2;
        m->tso_segsz = (uint16_t)seg;
        /* DPDK wants the pseudo-header sum without the length for TSO. */
        tcp->cksum = rte_ipv4_phdr_cksum(ip, ol);
    } else if (fl & TERN_BUF_TX_L4_CSUM) {
        /* tern left the pseudo-header sum (with the length) in the field:
         * exactly DPDK's convention for TCP/UDP checksum offload. */
        if (proto == IPPROTO_TCP) {
            ol |= RTE_MBUF_F_TX_TCP_CKSUM;
            if (len >= l2 + l3 + 20) {
                const struct rte_tcp_hdr *tcp =
                    (const struct rte_tcp_hdr *)(ipb + l3);
                m->l4_len = (uint32_t)(tcp->data_off >> 4) * 4;
            }
        } else if (proto == IPPROTO_UDP) {
            ol |= RTE_MBUF_F_TX_UDP_CKSUM;
            m->l4_len = 8;
        } else {
            return false;
        }
    }
    m->ol_flags |= ol;
    return true;
}

/* The mbuf chain for one tern frame (all its segments' references
 * consumed), or NULL (dropped; references released). */
static struct rte_mbuf *tx_frame(dpdk_dev *d, dq *q, tern_buf *f)
{
    bool chain = f->frag != NULL;
    if (chain && !(d->tx_ol & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)) {
        /* The port cannot send chains: copy into one buffer. */
        struct rte_mbuf *m = tx_copy(q, f);
        tern_buf *next;
        if (m && !tx_offloads(d, f, m)) {
            rte_pktmbuf_free(m);
            m = NULL;
        }
        for (tern_buf *b = f; b; b = next) {
            next = b->frag;
            seg_unref(d, q, b);
        }
        return m;
    }
    struct rte_mbuf *head = NULL, *prev = NULL;
    tern_buf meta = *f; /* offload fields of the frame (f may be reused) */
    tern_buf *b = f, *next;
    for (; b; b = next) {
        next = b->frag;
        struct rte_mbuf *m = seg_mbuf(d, q, b);
        if (!m)
            break;
        if (!head) {
            head = m;
        } else {
            prev->next = m;
            head->nb_segs++;
            head->pkt_len += m->data_len;
        }
        prev = m;
    }
    if (b) {
        /* Out of clones or stock: drop the frame. */
        for (; b; b = next) {
            next = b->frag;
            seg_unref(d, q, b);
        }
        if (head)
            rte_pktmbuf_free(head);
        return NULL;
    }
    if (!tx_offloads(d, &meta, head)) {
        rte_pktmbuf_free(head);
        return NULL;
    }
    return head;
}

/* Send prepared mbufs; frees (and counts) what the port would not take. */
static void tx_send(dpdk_dev *d, dq *q, struct rte_mbuf **ms, uint16_t n,
                    bool offl)
{
    uint16_t off = 0, drops = 0, sent = 0;
    while (off < n) {
        uint16_t ok = (uint16_t)(n - off);
        if (offl && q->prepare) {
            ok = rte_eth_tx_prepare(d->port, q->idx, ms + off, ok);
        }
        uint16_t done = 0;
        for (int t = 0; done < ok && t < DPDK_TX_RETRIES; t++)
            done += rte_eth_tx_burst(d->port, q->idx, ms + off + done,
                                     (uint16_t)(ok - done));
        sent += done;
        for (uint16_t i = done; i < ok; i++) {
            rte_pktmbuf_free(ms[off + i]);
            drops++;
        }
        off += ok;
        if (off < n) { /* rejected by tx_prepare */
            rte_pktmbuf_free(ms[off++]);
            q->st.tx_prepare_drops++;
            drops++;
        }
    }
    if (sent)
        __atomic_fetch_add(&d->base.tx_frames, sent, __ATOMIC_RELAXED);
    if (drops)
        __atomic_fetch_add(&d->base.tx_drops, drops, __ATOMIC_RELAXED);
}

static void dpdk_tx_burst(tern_dev *dev, unsigned qi, tern_buf **frames,
                          unsigned n)
{
    dpdk_dev *d = (dpdk_dev *)dev;
    dq *q = &d->qs[qi];
    struct rte_mbuf *ms[DPDK_BURST];
    uint16_t k = 0;
    bool offl = false;
    unsigned lost = 0;
    for (unsigned i = 0; i < n; i++) {
        struct rte_mbuf *m = tx_frame(d, q, frames[i]);
        if (!m) {
            lost++;
            continue;
        }
        offl |= (m->ol_flags & ~RTE_MBUF_F_EXTERNAL) != 0;
        ms[k++] = m;
        if (k == DPDK_BURST) {
            tx_send(d, q, ms, k, offl);
            k = 0;
            offl = false;
        }
    }
    if (k)
        tx_send(d, q, ms, k, offl);
    if (lost)
        __atomic_fetch_add(&d->base.tx_drops, lost, __ATOMIC_RELAXED);
    stock_balance(q);
}

static int dpdk_wait_fd(tern_dev *dev, unsigned q)
{
    (void)dev;
    (void)q;
    return -1; /* poll mode only: the runtime busy-polls */
}

/* ------------------------------------------------------------------ */
/* Open / close                                                        */
/* ------------------------------------------------------------------ */

static void dpdk_close(tern_dev *dev)
{
    dpdk_dev *d = (dpdk_dev *)dev;
    if (!d)
        return;
    if (d->started)
        rte_eth_dev_stop(d->port);
    if (d->configured)
        rte_eth_dev_close(d->port);
    if (d->remove_on_close && d->rdev)
        rte_dev_remove(d->rdev);
    if (d->qs) {
        for (unsigned i = 0; i < d->base.queues; i++)
            free_pools(&d->qs[i]);
        rte_free(d->qs);
    }
    free(d->pool_ptrs);
    free(d);
}

/* The port for args->iface (see the top of the file). */
static int find_port(const char *iface, uint16_t *port, char *err,
                     size_t errlen)
{
    if (!iface || !*iface) {
        uint16_t p;
        RTE_ETH_FOREACH_DEV(p) {
            *port = p;
            return 0;
        }
        tern_netif_err(err, errlen, "dpdk: no port (give a --vdev in eal=, "
                                    "or bind a NIC)");
        return -1;
    }
    char *end;
    unsigned long v = strtoul(iface, &end, 10);
    if (*end == 0 && end != iface) {
        if (v >= RTE_MAX_ETHPORTS || !rte_eth_dev_is_valid_port((uint16_t)v)) {
            tern_netif_err(err, errlen, "dpdk: no port %lu", v);
            return -1;
        }
        *port = (uint16_t)v;
        return 0;
    }
    char name[RTE_ETH_NAME_MAX_LEN];
    vdev_name(iface, name, sizeof name);
    if (rte_eth_dev_get_port_by_name(name, port) == 0)
        return 0;
    tern_netif_err(err, errlen, "dpdk: no port named %s", name);
    return -1;
}

static void caps_from_info(dpdk_dev *d, const struct rte_eth_dev_info *in,
                           bool offloads, bool lro)
{
    uint64_t rx = in->rx_offload_capa, tx = in->tx_offload_capa;
    uint32_t caps = 0;
    const uint64_t rx_l4 = RTE_ETH_RX_OFFLOAD_TCP_CKSUM |
                           RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
    const uint64_t tx_l4 = RTE_ETH_TX_OFFLOAD_TCP_CKSUM |
                           RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    d->rx_ol = d->tx_ol = 0;
    if (tx & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) {
        /* Not an "offload" to the stack's checksums: always use it. */
        d->tx_ol |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
        caps |= TERN_CAP_SG;
    }
    if (offloads) {
        if (rx & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) {
            caps |= TERN_CAP_RX_IP_CSUM;
            d->rx_ol |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
        }
        if ((rx & rx_l4) == rx_l4) {
            caps |= TERN_CAP_RX_L4_CSUM;
            d->rx_ol |= rx_l4;
        }
        if (tx & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
            caps |= TERN_CAP_TX_IP_CSUM;
            d->tx_ol |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
        }
        if ((tx & tx_l4) == tx_l4) {
            caps |= TERN_CAP_TX_L4_CSUM;
            d->tx_ol |= tx_l4;
        }
        if ((tx & RTE_ETH_TX_OFFLOAD_TCP_TSO) && (caps & TERN_CAP_SG) &&
            (caps & TERN_CAP_TX_IP_CSUM) && (caps & TERN_CAP_TX_L4_CSUM)) {
            caps |= TERN_CAP_TSO;
            d->tx_ol |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
        }
        if (lro && (rx & RTE_ETH_RX_OFFLOAD_TCP_LRO) && (caps & TERN_CAP_SG) &&
            (rx & RTE_ETH_RX_OFFLOAD_SCATTER)) {
            caps |= TERN_CAP_LRO;
            d->rx_ol |= RTE_ETH_RX_OFFLOAD_TCP_LRO |
                        RTE_ETH_RX_OFFLOAD_SCATTER;
        }
    }
    d->base.caps = caps;
}

/* Program RSS key and a round-robin table, then read both back. */
static void setup_rss(dpdk_dev *d, const struct rte_eth_dev_info *in)
{
    d->rss_ok = false;
    d->reta_size = 0;
    unsigned rs = in->reta_size;
    if (d->base.queues > 1 && rs > 0 && rs <= 512) {
        struct rte_eth_rss_reta_entry64 rc[512 / RTE_ETH_RETA_GROUP_SIZE];
        memset(rc, 0, sizeof rc);
        for (unsigned i = 0; i < rs; i++) {
            rc[i / RTE_ETH_RETA_GROUP_SIZE].mask |=
                1ull << (i % RTE_ETH_RETA_GROUP_SIZE);
            rc[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE] =
                (uint16_t)(i % d->base.queues);
        }
        /* Some PMDs keep their own table: then the read-back says so. */
        rte_eth_dev_rss_reta_update(d->port, rc, (uint16_t)rs);
        memset(rc, 0, sizeof rc);
        for (unsigned i = 0; i < rs; i++)
            rc[i / RTE_ETH_RETA_GROUP_SIZE].mask |=
                1ull << (i % RTE_ETH_RETA_GROUP_SIZE);
        if (rte_eth_dev_rss_reta_query(d->port, rc, (uint16_t)rs) != 0)
            return;
        uint8_t key[64];
        struct rte_eth_rss_conf conf = {.rss_key = key,
                                        .rss_key_len = sizeof key};
        if (rte_eth_dev_rss_hash_conf_get(d->port, &conf) != 0 ||
            conf.rss_hf == 0 || conf.rss_key_len < 16)
            return;
        memset(d->rss_key, 0, sizeof d->rss_key);
        memcpy(d->rss_key, key, conf.rss_key_len < 40 ? conf.rss_key_len : 40);
        for (unsigned i = 0; i < rs; i++)
            d->reta[i] =
                rc[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE];
        d->reta_size = (uint16_t)rs;
        d->rss_ok = true;
    }
}

/* "eal=" takes the rest of the option string. */
static const char *eal_opt(const char *extra)
{
    if (!extra)
        return NULL;
    const char *p = extra;
    for (;;) {
        if (!strncmp(p, "eal=", 4))
            return p + 4;
        p = strchr(p, ',');
        if (!p)
            return NULL;
        p++;
    }
}

static tern_dev *dpdk_open(const tern_dev_args *a, char *err, size_t errlen)
{
    if (!a) {
        tern_netif_err(err, errlen, "dpdk: no arguments");
        return NULL;
    }
    /* Options before eal= (which may contain commas of its own); without
     * any, those of TERN_DPDK_OPTS (programs with no flag for them). */
    const char *extra = a->extra && *a->extra ? a->extra
                                              : getenv("TERN_DPDK_OPTS");
    const char *eal = eal_opt(extra);
    char opts[256] = "";
    if (extra) {
        size_t l = eal ? (size_t)(eal - 4 - extra) : strlen(extra);
        if (l >= sizeof opts)
            l = sizeof opts - 1;
        memcpy(opts, extra, l);
        opts[l] = 0;
    }
    bool offloads = tern_netif_opt_bool(opts, "offloads", true);
    bool rss = tern_netif_opt_bool(opts, "rss", true);
    bool lro = tern_netif_opt_bool(opts, "lro", false);
    unsigned idle_yield =
        (unsigned)tern_netif_opt_ulong(opts, "idle_yield", 0);
    if (!eal)
        eal = getenv("TERN_DPDK_EAL");
    if (eal && !*eal)
        eal = NULL;
    const char *vdev = a->iface && strchr(a->iface, ',') ? a->iface : NULL;
    if (eal_up(eal, vdev, err, errlen) < 0)
        return NULL;

    dpdk_dev *d = calloc(1, sizeof *d);
    if (!d) {
        tern_netif_err(err, errlen, "dpdk: out of memory");
        return NULL;
    }
    if (find_port(a->iface, &d->port, err, errlen) < 0)
        goto fail;
    struct rte_eth_dev_info info;
    int rc = rte_eth_dev_info_get(d->port, &info);
    if (rc != 0) {
        tern_netif_err(err, errlen, "dpdk: port %u: no device info: %s",
                       d->port, rte_strerror(-rc));
        goto fail;
    }
    d->rdev = info.device;
    /* A virtual device lives while it is open: close removes it, so the
     * same name can be opened (hot-plugged) again in this process. */
    d->remove_on_close = d->rdev && rte_dev_bus(d->rdev) &&
                         !strcmp(rte_bus_name(rte_dev_bus(d->rdev)), "vdev");
    unsigned nq = a->queues ? a->queues : 1;
    if (nq > info.max_rx_queues || nq > info.max_tx_queues) {
        tern_netif_err(err, errlen,
                       "dpdk: port %u (%s) has %u rx / %u tx queues, %u asked",
                       d->port, info.driver_name, info.max_rx_queues,
                       info.max_tx_queues, nq);
        goto fail;
    }
    d->base.drv = &tern_driver_dpdk;
    d->base.queues = nq;
    caps_from_info(d, &info, offloads, lro);

    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    conf.rxmode.offloads = d->rx_ol;
    conf.txmode.offloads = d->tx_ol;
    uint8_t key[64];
    if (rss && nq > 1 && info.flow_type_rss_offloads) {
        uint64_t hf = (RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP |
                       RTE_ETH_RSS_NONFRAG_IPV4_UDP) &
                      info.flow_type_rss_offloads;
        if (hf) {
            uint8_t klen = info.hash_key_size ? info.hash_key_size : 40;
            if (klen > sizeof key)
                klen = sizeof key;
            memset(key, 0, sizeof key);
            memcpy(key, default_rss_key, klen < 40 ? klen : 40);
            conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_key = key;
            conf.rx_adv_conf.rss_conf.rss_key_len = klen;
            conf.rx_adv_conf.rss_conf.rss_hf = hf;
        }
    }
    rc = rte_eth_dev_configure(d->port, (uint16_t)nq, (uint16_t)nq, &conf);
    if (rc != 0) {
        tern_netif_err(err, errlen, "dpdk: port %u (%s): configure: %s",
                       d->port, info.driver_name, rte_strerror(-rc));
        goto fail;
    }
    d->configured = true;
    uint16_t nrx = (uint16_t)(a->ring_size ? a->ring_size : DPDK_DEFAULT_RING);
    uint16_t ntx = nrx;
    rte_eth_dev_adjust_nb_rx_tx_desc(d->port, &nrx, &ntx);
    unsigned pool = a->pool_size ? a->pool_size : DPDK_DEFAULT_POOL;
    if (pool < (unsigned)nrx + ntx + 256)
        pool = (unsigned)nrx + ntx + 256;
    int socket = rte_eth_dev_socket_id(d->port);
    if (socket < 0)
        socket = SOCKET_ID_ANY;

    d->qs = rte_zmalloc("tern_dpdk_q", sizeof(dq) * nq, RTE_CACHE_LINE_SIZE);
    d->pool_ptrs = calloc(nq, sizeof(tern_pool *));
    if (!d->qs || !d->pool_ptrs) {
        tern_netif_err(err, errlen, "dpdk: out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < nq; i++) {
        dq *q = &d->qs[i];
        q->d = d;
        q->idx = (uint16_t)i;
        q->prepare = true;
        q->idle_yield = idle_yield;
        if (make_pools(d, q, pool, socket, err, errlen) < 0)
            goto fail;
        d->pool_ptrs[i] = &q->tp;
        struct rte_eth_rxconf rxc = info.default_rxconf;
        rxc.offloads = d->rx_ol;
        rc = rte_eth_rx_queue_setup(d->port, (uint16_t)i, nrx, (unsigned)socket,
                                    &rxc, q->mp);
        if (rc != 0) {
            tern_netif_err(err, errlen, "dpdk: port %u rx queue %u: %s",
                           d->port, i, rte_strerror(-rc));
            goto fail;
        }
        struct rte_eth_txconf txc = info.default_txconf;
        txc.offloads = d->tx_ol;
        rc = rte_eth_tx_queue_setup(d->port, (uint16_t)i, ntx, (unsigned)socket,
                                    &txc);
        if (rc != 0) {
            tern_netif_err(err, errlen, "dpdk: port %u tx queue %u: %s",
                           d->port, i, rte_strerror(-rc));
            goto fail;
        }
    }
    d->base.pools = d->pool_ptrs;
    rc = rte_eth_dev_start(d->port);
    if (rc != 0) {
        tern_netif_err(err, errlen, "dpdk: port %u (%s): start: %s", d->port,
                       info.driver_name, rte_strerror(-rc));
        goto fail;
    }
    d->started = true;
    if (rss)
        setup_rss(d, &info);
    struct rte_ether_addr mac;
    if (rte_eth_macaddr_get(d->port, &mac) == 0)
        memcpy(d->base.mac, mac.addr_bytes, 6);
    char mv[32];
    bool is_tap = !strcmp(info.driver_name, "net_tap");
    d->tso_counts_l2 = is_tap;
    if (tern_netif_opt(opts, "mac", mv, sizeof mv)) {
        unsigned v[6];
        char tail;
        if (sscanf(mv, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &tail) != 6 || (v[0] & 1)) {
            tern_netif_err(err, errlen, "dpdk: mac=%s is not a unicast MAC",
                           mv);
            goto fail;
        }
        for (int i = 0; i < 6; i++)
            d->base.mac[i] = (uint8_t)v[i];
    } else if (is_tap) {
        d->base.mac[0] = (uint8_t)((d->base.mac[0] | 0x02) & ~0x01);
        d->base.mac[5] ^= 0x01;
    }
    if (memcmp(d->base.mac, mac.addr_bytes, 6) && !is_tap) {
        /* The port must accept frames to our MAC. */
        struct rte_ether_addr ours;
        memcpy(ours.addr_bytes, d->base.mac, 6);
        if (rte_eth_dev_mac_addr_add(d->port, &ours, 0) != 0)
            rte_eth_promiscuous_enable(d->port);
    }
    uint16_t mtu = 1500;
    if (rte_eth_dev_get_mtu(d->port, &mtu) != 0 || mtu == 0)
        mtu = 1500;
    if (mtu > DPDK_DATA_ROOM - TERN_HEADROOM - 18)
        mtu = DPDK_DATA_ROOM - TERN_HEADROOM - 18;
    d->base.mtu = mtu;
    for (unsigned i = 0; i < nq; i++)
        stock_balance(&d->qs[i]);
    return &d->base;
fail:
    dpdk_close(&d->base);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Extras (dpdk.h)                                                     */
/* ------------------------------------------------------------------ */

int tern_dpdk_rss(tern_dev *dev, uint8_t key[40], uint16_t *reta,
                  uint16_t *reta_size)
{
    dpdk_dev *d = (dpdk_dev *)dev;
    if (!d || d->base.drv != &tern_driver_dpdk || !d->rss_ok) {
        if (reta_size)
            *reta_size = 0;
        return -1;
    }
    if (key)
        memcpy(key, d->rss_key, 40);
    if (reta)
        memcpy(reta, d->reta, sizeof(uint16_t) * d->reta_size);
    if (reta_size)
        *reta_size = d->reta_size;
    return 0;
}

uint16_t tern_dpdk_port(tern_dev *dev) { return ((dpdk_dev *)dev)->port; }

bool tern_dpdk_link_up(tern_dev *dev)
{
    struct rte_eth_link l;
    memset(&l, 0, sizeof l);
    if (rte_eth_link_get_nowait(((dpdk_dev *)dev)->port, &l) != 0)
        return false;
    return l.link_status == RTE_ETH_LINK_UP;
}

void tern_dpdk_get_stats(tern_dev *dev, tern_dpdk_stats *out)
{
    dpdk_dev *d = (dpdk_dev *)dev;
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < d->base.queues; i++) {
        const tern_dpdk_stats *s = &d->qs[i].st;
        out->rx_copied += s->rx_copied;
        out->tx_direct += s->tx_direct;
        out->tx_cloned += s->tx_cloned;
        out->tx_copied += s->tx_copied;
        out->tx_prepare_drops += s->tx_prepare_drops;
        out->stock_refills += s->stock_refills;
        out->stock_drains += s->stock_drains;
    }
    struct rte_eth_stats es;
    if (rte_eth_stats_get(d->port, &es) == 0)
        out->imissed = es.imissed + es.rx_nombuf;
}

void tern_dpdk_buffers(tern_dev *dev, unsigned q, unsigned *in_mempool,
                       unsigned *in_stock, unsigned *clones_free)
{
    dq *x = &((dpdk_dev *)dev)->qs[q];
    if (in_mempool)
        *in_mempool = rte_mempool_avail_count(x->mp);
    if (in_stock)
        *in_stock = x->tp.stack.top;
    if (clones_free)
        *clones_free = rte_mempool_avail_count(x->clones);
}

const tern_driver tern_driver_dpdk = {
    .name = "dpdk",
    .open = dpdk_open,
    .close = dpdk_close,
    .rx_burst = dpdk_rx_burst,
    .tx_burst = dpdk_tx_burst,
    .wait_fd = dpdk_wait_fd,
};

#else
/* Built without libdpdk: nothing here (ISO C wants a declaration). */
typedef int tern_dpdk_not_built_;
#endif
