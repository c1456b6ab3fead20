/* afpacket.c - the AF_PACKET driver: one packet socket per queue with a
 * TPACKET_V3 memory-mapped receive ring (blocks of frames handed over by the
 * kernel in one go) and a memory-mapped transmit ring on the same socket
 * (fixed-size TPACKET_V3 slots, kernel >= 4.11), flushed with one sendto()
 * per burst.  Several queues on one interface join a PACKET_FANOUT group
 * (hash mode) so the kernel spreads flows over them.
 *
 * Buffers: frames are copied between the rings and the queue's tern_pool
 * (the stack allocates from and frees to the pool, so ring memory is never
 * lent out; a ring block goes back to the kernel as soon as it is read).
 *
 * Capabilities: none. The kernel does not verify checksums for us on a
 * veth and tells us nothing a NIC would; frames whose checksum the sender
 * left partial (TP_STATUS_CSUMNOTREADY, e.g. a local peer with tx checksum
 * offload on) are completed in software before the stack sees them.
 *
 * Options (tern_dev_args.extra, "k=v,..."):
 *   qdisc_bypass[=1]  PACKET_QDISC_BYPASS: transmit straight to the driver,
 *                     skipping the qdisc (and any tc/nft egress hooks)
 *   promisc[=1]       put the interface in promiscuous mode while open
 *   blk_tov=MS        receive block retire timeout in ms (default 1)
 *   fanout=hash|lb|cpu|qm  fanout mode when queues > 1 (default hash)
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "io.h"
#include "netif.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define AFP_RX_BLOCK_SIZE (256u * 1024u)
#define AFP_DEFAULT_RING 4096u
#define AFP_DEFAULT_POOL 4096u

typedef struct afp_queue {
    int fd;
    uint8_t *map;
    size_t map_len;
    /* Receive ring (TPACKET_V3 blocks). */
    uint8_t *rx_ring;
    unsigned rx_block_size, rx_block_nr;
    unsigned rx_block;               /* block being read */
    struct tpacket3_hdr *rx_pkt;     /* next frame in that block */
    unsigned rx_left;                /* frames left in that block */
    /* Transmit ring (TPACKET_V3 fixed slots). */
    uint8_t *tx_ring;
    unsigned tx_frame_size, tx_frame_nr;
    unsigned tx_head;
    unsigned tx_data_off;            /* where frame data starts in a slot */
} afp_queue;

typedef struct afp_dev {
    struct tern_dev base;
    char ifname[IFNAMSIZ];
    int ifindex;
    bool promisc;
    afp_queue *q;
    uint64_t csum_completed;         /* partial checksums finished */
} afp_dev;

const tern_driver tern_driver_afpacket;

static unsigned round_pow2(unsigned x)
{
    unsigned p = 1;
    while (p < x)
        p <<= 1;
    return p;
}

static void afp_queue_close(afp_queue *q)
{
    if (q->map && q->map != MAP_FAILED)
        munmap(q->map, q->map_len);
    q->map = NULL;
    if (q->fd >= 0)
        close(q->fd);
    q->fd = -1;
}

static void afp_close(tern_dev *dev)
{
    afp_dev *d = (afp_dev *)dev;
    if (!d)
        return;
    if (d->q) {
        for (unsigned i = 0; i < d->base.queues; i++) {
            if (i == 0 && d->promisc && d->q[0].fd >= 0) {
                struct packet_mreq mr = {.mr_ifindex = d->ifindex,
                                         .mr_type = PACKET_MR_PROMISC};
                setsockopt(d->q[0].fd, SOL_PACKET, PACKET_DROP_MEMBERSHIP,
                           &mr, sizeof(mr));
            }
            afp_queue_close(&d->q[i]);
        }
        free(d->q);
    }
    tern_netif_dev_fini(&d->base);
    free(d);
}

static int fanout_mode(const char *extra)
{
    char v[16];
    if (!tern_netif_opt(extra, "fanout", v, sizeof(v)) || !strcmp(v, "hash"))
        return PACKET_FANOUT_HASH;
    if (!strcmp(v, "lb"))
        return PACKET_FANOUT_LB;
    if (!strcmp(v, "cpu"))
        return PACKET_FANOUT_CPU;
    if (!strcmp(v, "qm"))
        return PACKET_FANOUT_QM;
    return -1;
}

static int afp_queue_open(afp_dev *d, afp_queue *q, const tern_dev_args *a,
                          int fanout_id, int fmode, char *err, size_t errlen)
{
    const char *ifn = d->ifname;
    /* Protocol 0 until bind: nothing is queued before the rings exist. */
    q->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (q->fd < 0) {
        int e = errno;
        if (e == EPERM || e == EACCES)
            tern_netif_err(err, errlen,
                           "afpacket: %s: permission denied (AF_PACKET needs "
                           "root or CAP_NET_RAW)", ifn);
        else
            tern_netif_err(err, errlen, "afpacket: %s: socket: %s", ifn,
                           strerror(e));
        return -1;
    }
    int v = TPACKET_V3;
    if (setsockopt(q->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0) {
        tern_netif_err(err, errlen, "afpacket: %s: TPACKET_V3: %s", ifn,
                       strerror(errno));
        return -1;
    }
    /* Skip malformed tx slots (marked TP_STATUS_WRONG_FORMAT) instead of
     * stalling the ring. */
    v = 1;
    setsockopt(q->fd, SOL_PACKET, PACKET_LOSS, &v, sizeof(v));
    /* Frames we (or a sibling queue) send are not received back. */
    v = 1;
    setsockopt(q->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &v, sizeof(v));
    if (tern_netif_opt_bool(a->extra, "qdisc_bypass", false)) {
        v = 1;
        if (setsockopt(q->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &v,
                       sizeof(v)) < 0) {
            tern_netif_err(err, errlen, "afpacket: %s: PACKET_QDISC_BYPASS: %s",
                           ifn, strerror(errno));
            return -1;
        }
    }

    unsigned ring = a->ring_size ? a->ring_size : AFP_DEFAULT_RING;
    unsigned max_frame = (unsigned)d->base.mtu + 14 + 4 /* VLAN */;

    /* Receive ring: blocks of AFP_RX_BLOCK_SIZE (or more for jumbo frames),
     * enough to hold `ring` frames of 2 KiB. */
    unsigned bsz = AFP_RX_BLOCK_SIZE;
    while (bsz < 4 * (max_frame + TPACKET3_HDRLEN + 64))
        bsz <<= 1;
    unsigned long long rx_bytes = (unsigned long long)ring * 2048u;
    unsigned bnr = (unsigned)((rx_bytes + bsz - 1) / bsz);
    if (bnr < 4)
        bnr = 4;
    struct tpacket_req3 rq;
    memset(&rq, 0, sizeof(rq));
    rq.tp_block_size = bsz;
    rq.tp_block_nr = bnr;
    rq.tp_frame_size = 2048;
    rq.tp_frame_nr = (bsz / 2048) * bnr;
    rq.tp_retire_blk_tov =
        (unsigned)tern_netif_opt_ulong(a->extra, "blk_tov", 1);
    if (setsockopt(q->fd, SOL_PACKET, PACKET_RX_RING, &rq, sizeof(rq)) < 0) {
        tern_netif_err(err, errlen, "afpacket: %s: PACKET_RX_RING (%u x %u): %s",
                       ifn, bnr, bsz, strerror(errno));
        return -1;
    }
    q->rx_block_size = bsz;
    q->rx_block_nr = bnr;

    /* Transmit ring: fixed slots big enough for one MTU frame. */
    q->tx_data_off = TPACKET3_HDRLEN - sizeof(struct sockaddr_ll);
    unsigned fsz = round_pow2(q->tx_data_off + max_frame);
    if (fsz < 2048)
        fsz = 2048;
    unsigned tbsz = fsz < 65536 ? 65536 : fsz;
    unsigned per_block = tbsz / fsz;
    unsigned tx_frames = ring;
    unsigned tbnr = (tx_frames + per_block - 1) / per_block;
    if (tbnr < 1)
        tbnr = 1;
    struct tpacket_req3 tq;
    memset(&tq, 0, sizeof(tq));
    tq.tp_block_size = tbsz;
    tq.tp_block_nr = tbnr;
    tq.tp_frame_size = fsz;
    tq.tp_frame_nr = per_block * tbnr;
    if (setsockopt(q->fd, SOL_PACKET, PACKET_TX_RING, &tq, sizeof(tq)) < 0) {
        tern_netif_err(err, errlen,
                       "afpacket: %s: PACKET_TX_RING (TPACKET_V3 tx needs "
                       "kernel >= 4.11): %s", ifn, strerror(errno));
        return -1;
    }
    q->tx_frame_size = fsz;
    q->tx_frame_nr = tq.tp_frame_nr;

    size_t rx_len = (size_t)bsz * bnr, tx_len = (size_t)tbsz * tbnr;
    q->map_len = rx_len + tx_len;
    q->map = mmap(NULL, q->map_len, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_LOCKED | MAP_POPULATE, q->fd, 0);
    if (q->map == MAP_FAILED) {
        /* MAP_LOCKED may exceed RLIMIT_MEMLOCK: the rings are pinned by
         * the kernel anyway, so try without it. */
        q->map = mmap(NULL, q->map_len, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE, q->fd, 0);
    }
    if (q->map == MAP_FAILED) {
        q->map = NULL;
        tern_netif_err(err, errlen, "afpacket: %s: mmap of %zu bytes: %s", ifn,
                       q->map_len, strerror(errno));
        return -1;
    }
    q->rx_ring = q->map;
    q->tx_ring = q->map + rx_len;

    struct sockaddr_ll sll;
    memset(&sll, 0, sizeof(sll));
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = d->ifindex;
    if (bind(q->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
        tern_netif_err(err, errlen, "afpacket: %s: bind: %s", ifn,
                       strerror(errno));
        return -1;
    }
    if (fanout_id >= 0) {
        int arg = (fanout_id & 0xffff) | (fmode << 16);
        if (setsockopt(q->fd, SOL_PACKET, PACKET_FANOUT, &arg,
                       sizeof(arg)) < 0) {
            tern_netif_err(err, errlen, "afpacket: %s: PACKET_FANOUT: %s", ifn,
                           strerror(errno));
            return -1;
        }
    }
    return 0;
}

static tern_dev *afp_open(const tern_dev_args *a, char *err, size_t errlen)
{
    if (!a || !tern_netif_name_ok(a->iface, err, errlen))
        return NULL;
    afp_dev *d = calloc(1, sizeof(*d));
    if (!d) {
        tern_netif_err(err, errlen, "afpacket: out of memory");
        return NULL;
    }
    snprintf(d->ifname, sizeof(d->ifname), "%s", a->iface);
    char qerr[200];
    if (tern_netif_query(d->ifname, d->base.mac, &d->base.mtu, &d->ifindex,
                         qerr, sizeof(qerr)) < 0) {
        tern_netif_err(err, errlen, "afpacket: %s", qerr);
        free(d);
        return NULL;
    }
    unsigned nq = a->queues ? a->queues : 1;
    int fmode = fanout_mode(a->extra);
    if (fmode < 0) {
        tern_netif_err(err, errlen,
                       "afpacket: fanout= takes hash, lb, cpu or qm");
        free(d);
        return NULL;
    }
    unsigned max_frame = (unsigned)d->base.mtu + 14 + 4;
    unsigned buf_size = TERN_HEADROOM + (max_frame < 2048 ? 2048 : max_frame);
    if (tern_netif_dev_init(&d->base, &tern_driver_afpacket, nq,
                            a->pool_size ? a->pool_size : AFP_DEFAULT_POOL,
                            buf_size, err, errlen) < 0) {
        afp_close(&d->base);
        return NULL;
    }
    d->base.caps = 0; /* see the top of this file */
    d->q = calloc(nq, sizeof(*d->q));
    if (!d->q) {
        tern_netif_err(err, errlen, "afpacket: out of memory");
        afp_close(&d->base);
        return NULL;
    }
    for (unsigned i = 0; i < nq; i++)
        d->q[i].fd = -1;
    /* One fanout group per open device: unique within this process. */
    static atomic_uint next_group;
    int fanout_id = -1;
    if (nq > 1)
        fanout_id = (int)(((unsigned)getpid() * 131u +
                           atomic_fetch_add(&next_group, 1)) & 0xffffu);
    for (unsigned i = 0; i < nq; i++) {
        if (afp_queue_open(d, &d->q[i], a, fanout_id, fmode, err, errlen) < 0) {
            afp_close(&d->base);
            return NULL;
        }
    }
    if (tern_netif_opt_bool(a->extra, "promisc", false)) {
        struct packet_mreq mr = {.mr_ifindex = d->ifindex,
                                 .mr_type = PACKET_MR_PROMISC};
        if (setsockopt(d->q[0].fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr,
                       sizeof(mr)) < 0) {
            tern_netif_err(err, errlen, "afpacket: %s: promiscuous mode: %s",
                           d->ifname, strerror(errno));
            afp_close(&d->base);
            return NULL;
        }
        d->promisc = true;
    }
    return &d->base;
}

static inline struct tpacket_block_desc *rx_block(afp_queue *q, unsigned i)
{
    return (struct tpacket_block_desc *)(q->rx_ring +
                                         (size_t)i * q->rx_block_size);
}

static unsigned afp_rx_burst(tern_dev *dev, unsigned qi, tern_buf **frames,
                             unsigned max)
{
    afp_dev *d = (afp_dev *)dev;
    afp_queue *q = &d->q[qi];
    tern_pool *pool = d->base.pools[qi];
    unsigned n = 0;
    while (n < max) {
        struct tpacket_block_desc *bd = rx_block(q, q->rx_block);
        if (!q->rx_left) {
            uint32_t st = __atomic_load_n(&bd->hdr.bh1.block_status,
                                          __ATOMIC_ACQUIRE);
            if (!(st & TP_STATUS_USER))
                break;
            q->rx_left = bd->hdr.bh1.num_pkts;
            q->rx_pkt = (struct tpacket3_hdr *)((uint8_t *)bd +
                                                bd->hdr.bh1.offset_to_first_pkt);
            if (!q->rx_left)
                goto block_done;
        }
        tern_buf *b = tern_pool_alloc(pool);
        if (!b) /* pool dry: leave the rest in the ring for the next call */
            break;
        struct tpacket3_hdr *h = q->rx_pkt;
        uint32_t caplen = h->tp_snaplen;
        size_t room = b->size - (size_t)(b->data - b->head);
        if (caplen != h->tp_len || caplen > room) {
            /* Truncated by the ring or larger than a buffer: drop. */
            d->base.rx_drops++;
            tern_pool_release(pool, b);
        } else {
            memcpy(b->data, (uint8_t *)h + h->tp_mac, caplen);
            b->len = caplen;
            if ((h->tp_status & TP_STATUS_CSUMNOTREADY) &&
                tern_netif_complete_csum(b->data, b->len))
                d->csum_completed++;
            frames[n++] = b;
            d->base.rx_frames++;
        }
        q->rx_left--;
        if (q->rx_left) {
            q->rx_pkt = (struct tpacket3_hdr *)((uint8_t *)h +
                                                h->tp_next_offset);
            continue;
        }
    block_done:
        /* Whole block read (its frames were copied): back to the kernel. */
        __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL,
                         __ATOMIC_RELEASE);
        q->rx_block = (q->rx_block + 1) % q->rx_block_nr;
    }
    return n;
}

static void afp_tx_burst(tern_dev *dev, unsigned qi, tern_buf **frames,
                         unsigned n)
{
    afp_dev *d = (afp_dev *)dev;
    afp_queue *q = &d->q[qi];
    unsigned queued = 0;
    size_t cap = q->tx_frame_size - q->tx_data_off;
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        uint8_t *slot = q->tx_ring + (size_t)q->tx_head * q->tx_frame_size;
        struct tpacket3_hdr *h = (struct tpacket3_hdr *)slot;
        uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
        if (st == TP_STATUS_WRONG_FORMAT) {
            /* The kernel refused this slot's last frame: count and reuse. */
            d->base.tx_drops++;
            st = TP_STATUS_AVAILABLE;
        }
        if (st != TP_STATUS_AVAILABLE) {
            /* Ring full: drop, as a NIC would. */
            d->base.tx_drops++;
            tern_netif_release(&d->base, qi, f);
            continue;
        }
        size_t len = tern_netif_linearize(f, slot + q->tx_data_off, cap);
        tern_netif_release(&d->base, qi, f);
        if (len > cap || len < 14) {
            d->base.tx_drops++;
            continue;
        }
        h->tp_len = (uint32_t)len;
        h->tp_snaplen = (uint32_t)len;
        h->tp_next_offset = 0;
        __atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST,
                         __ATOMIC_RELEASE);
        q->tx_head = (q->tx_head + 1) % q->tx_frame_nr;
        queued++;
    }
    if (!queued)
        return;
    /* One system call sends every slot marked SEND_REQUEST. Errors such as
     * EAGAIN/ENOBUFS (qdisc full) or ENETDOWN leave the slots marked: they
     * go out with the next flush or, while the ring stays full, new frames
     * are dropped and counted above. */
    (void)sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
    d->base.tx_frames += queued;
}

static int afp_wait_fd(tern_dev *dev, unsigned qi)
{
    afp_dev *d = (afp_dev *)dev;
    return qi < d->base.queues ? d->q[qi].fd : -1;
}

const tern_driver tern_driver_afpacket = {
    .name = "afpacket",
    .open = afp_open,
    .close = afp_close,
    .rx_burst = afp_rx_burst,
    .tx_burst = afp_tx_burst,
    .wait_fd = afp_wait_fd,
};
