/* afpacket.c - the AF_PACKET driver: one packet socket per queue with a
 * TPACKET_V2 memory-mapped receive ring (one frame per slot, each slot with
 * its own status word, so a frame is ours as soon as the kernel has written
 * it) and a TPACKET_V2 memory-mapped transmit ring on the same socket (the
 * packet version is per socket), flushed with one sendto() per burst.
 * Several queues on one interface join a PACKET_FANOUT group (hash mode by
 * default) so the kernel spreads flows over them.
 *
 * Why not TPACKET_V3: V3 hands over whole blocks, when one is full or when
 * its retire timer (at least 1 ms) fires, so a lone request waited up to a
 * millisecond before user space could see it, and every round trip paid
 * for it. With V2 the kernel marks each slot TP_STATUS_USER and wakes
 * poll() per frame.
 *
 * Buffers: frames are copied between the rings and the queue's tern_pool
 * (the stack allocates from and frees to the pool, so ring memory is never
 * lent out; a receive slot goes back to the kernel as soon as it is read).
 *
 * Receive: no capability. The kernel does not verify checksums for us on
 * a veth and tells us nothing a NIC would; frames whose checksum the sender
 * left partial (TP_STATUS_CSUMNOTREADY, e.g. a local peer with tx checksum
 * offload on) are completed in software before the stack sees them.
 *
 * Transmit: TCP segmentation offload through the kernel (TERN_CAP_TSO, with
 * TERN_CAP_SG and TERN_CAP_TX_L4_CSUM, which TSO needs). Each queue has a
 * second packet socket with PACKET_VNET_HDR, for sending only (protocol 0:
 * it receives nothing). A TSO frame (up to 64 KiB of payload, a chain of
 * buffers) goes out with one sendmsg() whose iovec is a virtio_net_hdr
 * (GSO_TCPV4, gso_size = MSS, NEEDS_CSUM at the TCP checksum) followed by
 * the chain's buffers; the kernel cuts it into MSS segments in software at
 * the device (validate_xmit_skb, as it does a Linux socket's GSO frames)
 * and computes every segment's TCP checksum over the real bytes, and the
 * peer's receive path then takes the segments in one batch instead of one
 * wake-up per frame. The tx ring is flushed first, so frames leave in the
 * stack's order. Every other frame still goes through the ring; one that
 * the stack left with a partial TCP/UDP checksum (TX_L4_CSUM) is summed in
 * software right after its copy into the slot. Why a second socket rather
 * than PACKET_VNET_HDR on the ring socket: that would put a vnet header on
 * every received frame too, and tx slots would have to hold 64 KiB frames
 * (4096 slots of 128 KiB). With tso=0, or when the kernel refuses
 * PACKET_VNET_HDR, the device has no capability and every frame goes
 * through the ring, as the stack built it. Counters: tx_tso_frames; a TSO
 * frame the kernel refuses is counted in tx_drops.
 *
 * Options (tern_dev_args.extra, "k=v,..."):
 *   qdisc_bypass[=1]  PACKET_QDISC_BYPASS: transmit straight to the driver,
 *                     skipping the qdisc (and any tc/nft egress hooks)
 *   promisc[=1]       put the interface in promiscuous mode while open
 *   allmulti=0        do not ask for every multicast frame (by default the
 *                     interface passes them while open, so that IPv6
 *                     neighbor discovery works with the kernel's IPv6 off)
 *   fanout=hash|lb|cpu|qm  fanout mode when queues > 1 (default hash)
 *   tso=0             no segmentation offload (see Transmit above); tso=1
 *                     makes a kernel that refuses PACKET_VNET_HDR an error
 *                     (by default the device then opens without it)
 */
#include <errno.h>
#include <endian.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "io.h"
#include "netif.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

/* Ring memory comes in blocks of this size (or of one slot, if bigger). */
#define AFP_RING_BLOCK (64u * 1024u)
#define AFP_DEFAULT_RING 4096u
#define AFP_DEFAULT_POOL 4096u
/* Received frames longer than this are copied with their sum (RX_SUM);
 * shorter ones (ACKs, small requests) are cheaper to sum in the stack. */
#define AFP_SUM_MIN 256u
/* iovec entries of one TSO sendmsg (vnet header + frame buffers); a frame
 * of more buffers (many tiny writes) is copied into the queue's scratch. */
#define AFP_TSO_IOV 64u
#define AFP_TSO_MAX (64u * 1024u + 256u)

/* A TPACKET_V2 ring: frame_nr slots of frame_size bytes, back to back (a
 * slot size that is a power of two divides the block size exactly). */
typedef struct afp_ring {
    uint8_t *base;
    unsigned frame_size, frame_nr;
    unsigned head;                   /* next slot to read (rx) / fill (tx) */
} afp_ring;

typedef struct afp_queue {
    int fd;
    uint8_t *map;
    size_t map_len;
    afp_ring rx, tx;
    unsigned tx_data_off;            /* where frame data starts in a tx slot */
    unsigned tx_unflushed;           /* slots marked since the last sendto */
    int tso_fd;                      /* PACKET_VNET_HDR socket, or -1 */
    uint8_t *tso_copy;               /* AFP_TSO_MAX bytes, for long chains */
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

/* Geometry of a ring of at least `want` slots that each hold `need` bytes:
 * slots of a power of two >= 2 KiB, packed into AFP_RING_BLOCK blocks. */
static void ring_geometry(struct tpacket_req *r, unsigned need, unsigned want)
{
    unsigned fsz = round_pow2(need);
    if (fsz < 2048)
        fsz = 2048;
    unsigned bsz = fsz < AFP_RING_BLOCK ? AFP_RING_BLOCK : fsz;
    unsigned per_block = bsz / fsz;
    unsigned bnr = (want + per_block - 1) / per_block;
    if (bnr < 1)
        bnr = 1;
    memset(r, 0, sizeof(*r));
    r->tp_block_size = bsz;
    r->tp_block_nr = bnr;
    r->tp_frame_size = fsz;
    r->tp_frame_nr = per_block * bnr;
}

static void afp_queue_close(afp_queue *q)
{
    if (q->map && q->map != MAP_FAILED)
        munmap(q->map, q->map_len);
    q->map = NULL;
    if (q->fd >= 0)
        close(q->fd);
    q->fd = -1;
    if (q->tso_fd >= 0)
        close(q->tso_fd);
    q->tso_fd = -1;
    free(q->tso_copy);
    q->tso_copy = NULL;
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
    int v = TPACKET_V2;
    if (setsockopt(q->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0) {
        tern_netif_err(err, errlen, "afpacket: %s: TPACKET_V2: %s", ifn,
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

    /* Receive ring: `ring` slots. The kernel puts the frame at an aligned
     * offset past the header and at least 16 bytes of room for the link
     * header, so a slot needs that much more than the largest frame. */
    struct tpacket_req rq;
    ring_geometry(&rq, TPACKET_ALIGN(TPACKET2_HDRLEN + 16) + max_frame, ring);
    if (setsockopt(q->fd, SOL_PACKET, PACKET_RX_RING, &rq, sizeof(rq)) < 0) {
        tern_netif_err(err, errlen,
                       "afpacket: %s: PACKET_RX_RING (%u slots of %u): %s", ifn,
                       rq.tp_frame_nr, rq.tp_frame_size, strerror(errno));
        return -1;
    }
    /* Transmit ring: `ring` slots; the kernel reads the frame right after
     * the tpacket2_hdr (it has no sockaddr_ll on transmit). */
    q->tx_data_off = TPACKET2_HDRLEN - sizeof(struct sockaddr_ll);
    struct tpacket_req tq;
    ring_geometry(&tq, q->tx_data_off + max_frame, ring);
    if (setsockopt(q->fd, SOL_PACKET, PACKET_TX_RING, &tq, sizeof(tq)) < 0) {
        tern_netif_err(err, errlen,
                       "afpacket: %s: PACKET_TX_RING (%u slots of %u): %s", ifn,
                       tq.tp_frame_nr, tq.tp_frame_size, strerror(errno));
        return -1;
    }

    /* One mapping: the receive ring, then the transmit ring. */
    size_t rx_len = (size_t)rq.tp_block_size * rq.tp_block_nr;
    size_t tx_len = (size_t)tq.tp_block_size * tq.tp_block_nr;
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
    q->rx = (afp_ring){.base = q->map, .frame_size = rq.tp_frame_size,
                       .frame_nr = rq.tp_frame_nr};
    q->tx = (afp_ring){.base = q->map + rx_len,
                       .frame_size = tq.tp_frame_size,
                       .frame_nr = tq.tp_frame_nr};

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

/* The queue's socket for TSO frames: PACKET_VNET_HDR, protocol 0 (it
 * receives nothing), the ring socket's qdisc bypass. Returns 0 or the
 * errno of the call that failed (the caller then goes without TSO). */
static int afp_tso_open(afp_queue *q, bool bypass)
{
    q->tso_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (q->tso_fd < 0)
        return errno;
    int v = 1;
    if (setsockopt(q->tso_fd, SOL_PACKET, PACKET_VNET_HDR, &v, sizeof(v)) < 0)
        return errno;
    if (bypass && setsockopt(q->tso_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &v,
                             sizeof(v)) < 0)
        return errno;
    /* Room for a few 64 KiB frames queued in the qdisc (best effort:
     * wmem_max caps it). */
    v = 1 << 20;
    setsockopt(q->tso_fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
    q->tso_copy = malloc(AFP_TSO_MAX);
    return q->tso_copy ? 0 : ENOMEM;
}

/* TSO on every queue, or (tso=0, or the kernel refuses it and tso=1 was
 * not asked) on none. Returns -1 only for an error to report. */
static int afp_tso_setup(afp_dev *d, const tern_dev_args *a, char *err,
                         size_t errlen)
{
    char v[8];
    bool asked = tern_netif_opt(a->extra, "tso", v, sizeof(v));
    if (!tern_netif_opt_bool(a->extra, "tso", true))
        return 0;
    bool bypass = tern_netif_opt_bool(a->extra, "qdisc_bypass", false);
    int e = 0;
    for (unsigned i = 0; i < d->base.queues && !e; i++)
        e = afp_tso_open(&d->q[i], bypass);
    if (e) {
        for (unsigned i = 0; i < d->base.queues; i++) {
            if (d->q[i].tso_fd >= 0)
                close(d->q[i].tso_fd);
            d->q[i].tso_fd = -1;
        }
        if (asked) {
            tern_netif_err(err, errlen, "afpacket: %s: tso: PACKET_VNET_HDR: "
                           "%s (tso=0 sends without segmentation offload)",
                           d->ifname, strerror(e));
            return -1;
        }
        return 0;
    }
    d->base.caps = TERN_CAP_TSO | TERN_CAP_SG | TERN_CAP_TX_L4_CSUM;
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
    d->base.caps = 0; /* afp_tso_setup sets the transmit offloads */
    d->q = calloc(nq, sizeof(*d->q));
    if (!d->q) {
        tern_netif_err(err, errlen, "afpacket: out of memory");
        afp_close(&d->base);
        return NULL;
    }
    for (unsigned i = 0; i < nq; i++)
        d->q[i].fd = d->q[i].tso_fd = -1;
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
    if (afp_tso_setup(d, a, err, errlen) < 0) {
        afp_close(&d->base);
        return NULL;
    }
    if (tern_netif_allmulti(&d->base, d->ifindex, a->extra, err, errlen) < 0) {
        afp_close(&d->base);
        return NULL;
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

static inline struct tpacket2_hdr *ring_slot(const afp_ring *r, unsigned i)
{
    return (struct tpacket2_hdr *)(r->base + (size_t)i * r->frame_size);
}

static inline void ring_advance(afp_ring *r)
{
    if (++r->head == r->frame_nr)
        r->head = 0;
}

/* The kernel flags a slot TP_STATUS_LOSING when it dropped frames for want
 * of a free slot since the last PACKET_STATISTICS read; reading them resets
 * the kernel's count. */
static void afp_count_ring_drops(afp_dev *d, afp_queue *q)
{
    struct tpacket_stats st;
    socklen_t len = sizeof(st);
    if (getsockopt(q->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
        d->base.rx_drops += st.tp_drops;
}

static unsigned afp_rx_burst(tern_dev *dev, unsigned qi, tern_buf **frames,
                             unsigned max)
{
    afp_dev *d = (afp_dev *)dev;
    afp_queue *q = &d->q[qi];
    tern_pool *pool = d->base.pools[qi];
    unsigned n = 0;
    while (n < max) {
        struct tpacket2_hdr *h = ring_slot(&q->rx, q->rx.head);
        uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
        if (!(st & TP_STATUS_USER))
            break;
        if (st & TP_STATUS_LOSING)
            afp_count_ring_drops(d, q);
        tern_buf *b = tern_pool_alloc(pool);
        if (!b) {
            /* Pool dry: drop this frame and keep reading. Leaving it in
             * the ring would stop input altogether, and with it the ACKs
             * whose arrival frees the buffers held in send queues. */
            d->base.rx_drop_nobuf++;
            d->base.rx_drops++;
            __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL,
                             __ATOMIC_RELEASE);
            ring_advance(&q->rx);
            continue;
        }
        uint32_t caplen = h->tp_snaplen;
        size_t room = b->size - (size_t)(b->data - b->head);
        if (caplen != h->tp_len || caplen > room ||
            h->tp_mac + caplen > q->rx.frame_size) {
            /* Truncated by the ring or larger than a buffer: drop. */
            d->base.rx_drops++;
            tern_pool_release(pool, b);
        } else if ((st & TP_STATUS_VLAN_VALID) && (h->tp_vlan_tci & 0xfff)) {
            /* The kernel took a VLAN tag off into the slot's metadata:
             * the frame is for a VLAN, and tern is on none. Dropped as
             * Linux drops it (other host); a priority tag (VLAN 0) is
             * no VLAN and passes. */
            d->base.rx_drop_vlan++;
            d->base.rx_drops++;
            tern_pool_release(pool, b);
        } else {
            const uint8_t *frame = (uint8_t *)h + h->tp_mac;
            if (caplen > AFP_SUM_MIN && !(st & TP_STATUS_CSUMNOTREADY)) {
                /* bulk data: the stack's checksum test gets the sum of
                 * this copy (RX_SUM) and reads the payload no more */
                tern_frame_copy_sum(b, frame, caplen);
            } else {
                memcpy(b->data, frame, caplen);
                b->len = caplen;
                if ((st & TP_STATUS_CSUMNOTREADY) &&
                    tern_netif_complete_csum(b->data, b->len))
                    d->csum_completed++;
            }
            frames[n++] = b;
            d->base.rx_frames++;
        }
        /* Copied out: the slot goes back to the kernel at once. */
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        ring_advance(&q->rx);
    }
    return n;
}

/* One sendto() sends every slot marked SEND_REQUEST. Errors such as
 * EAGAIN/ENOBUFS (qdisc full) or ENETDOWN leave the slots marked: they go
 * out with the next flush or, while the ring stays full, new frames are
 * dropped and counted in afp_tx_burst. */
static void afp_tx_flush(afp_dev *d, afp_queue *q)
{
    if (!q->tx_unflushed)
        return;
    (void)sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
    d->base.tx_frames += q->tx_unflushed;
    q->tx_unflushed = 0;
}

/* TSO frame f (IPv4 TCP, its headers in its first buffer, the payload in
 * the rest of the chain) through the queue's vnet-header socket: the
 * kernel cuts it into f->tso_mss segments and sums each. Consumes f. */
static void afp_tx_tso(afp_dev *d, afp_queue *q, unsigned qi, tern_buf *f)
{
    uint32_t l2 = f->l2_len ? f->l2_len : 14, l3 = f->l3_len, l4 = f->l4_len;
    struct virtio_net_hdr vh;
    struct iovec iov[AFP_TSO_IOV];
    unsigned n = 1;
    size_t total = 0;
    bool ok = l3 >= 20 && l4 >= 20 && f->tso_mss && f->len >= l2 + l3 + l4 &&
              f->data[l2 - 2] == 0x08 && f->data[l2 - 1] == 0x00;
    if (ok) {
        const uint8_t *tcp = f->data + l2 + l3;
        memset(&vh, 0, sizeof(vh));
        vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
        vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4 |
                      ((tcp[13] & 0x80) ? VIRTIO_NET_HDR_GSO_ECN : 0); /* CWR */
        vh.hdr_len = htole16((uint16_t)(l2 + l3 + l4));
        vh.gso_size = htole16(f->tso_mss);
        vh.csum_start = htole16((uint16_t)(l2 + l3));
        vh.csum_offset = htole16(16); /* the TCP checksum field */
        iov[0] = (struct iovec){.iov_base = &vh, .iov_len = sizeof(vh)};
        for (tern_buf *b = f; b; b = b->frag) {
            total += b->len;
            if (n < AFP_TSO_IOV && b->len)
                iov[n++] = (struct iovec){.iov_base = b->data,
                                          .iov_len = b->len};
            else if (b->len)
                n = AFP_TSO_IOV + 1; /* too many buffers: copy below */
        }
        if (total > AFP_TSO_MAX) {
            ok = false;
        } else if (n > AFP_TSO_IOV) {
            tern_netif_linearize(f, q->tso_copy, AFP_TSO_MAX);
            iov[1] = (struct iovec){.iov_base = q->tso_copy,
                                    .iov_len = total};
            n = 2;
        }
    }
    ssize_t sent = -1;
    if (ok) {
        struct sockaddr_ll to = {.sll_family = AF_PACKET,
                                 .sll_protocol = htons(ETH_P_IP),
                                 .sll_ifindex = d->ifindex};
        struct msghdr m = {.msg_name = &to, .msg_namelen = sizeof(to),
                           .msg_iov = iov, .msg_iovlen = n};
        sent = sendmsg(q->tso_fd, &m, MSG_DONTWAIT);
    }
    tern_netif_release(&d->base, qi, f);
    if (sent == (ssize_t)(sizeof(vh) + total)) {
        d->base.tx_frames++;
        d->base.tx_tso_frames++;
    } else {
        /* Refused (a header the kernel rejects, EAGAIN, interface down):
         * TCP resends the data. */
        d->base.tx_drops++;
        d->base.tx_tso_drops++;
    }
}

static void afp_tx_burst(tern_dev *dev, unsigned qi, tern_buf **frames,
                         unsigned n)
{
    afp_dev *d = (afp_dev *)dev;
    afp_queue *q = &d->q[qi];
    size_t cap = q->tx.frame_size - q->tx_data_off;
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        uint16_t flags = f->flags;
        if (flags & TERN_BUF_TX_TSO) {
            /* Only with TERN_CAP_TSO. The ring's frames go first. */
            afp_tx_flush(d, q);
            afp_tx_tso(d, q, qi, f);
            continue;
        }
        struct tpacket2_hdr *h = ring_slot(&q->tx, q->tx.head);
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
        uint8_t *slot = (uint8_t *)h + q->tx_data_off;
        size_t len = tern_netif_linearize(f, slot, cap);
        tern_netif_release(&d->base, qi, f);
        /* TX_L4_CSUM (only with TERN_CAP_TX_L4_CSUM): the field holds the
         * pseudo-header sum; finish it over the copy, still in cache. */
        if (len > cap || len < 14 ||
            ((flags & TERN_BUF_TX_L4_CSUM) &&
             !tern_netif_complete_csum(slot, len))) {
            d->base.tx_drops++;
            continue;
        }
        h->tp_len = (uint32_t)len;
        h->tp_snaplen = (uint32_t)len;
        __atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST,
                         __ATOMIC_RELEASE);
        ring_advance(&q->tx);
        q->tx_unflushed++;
    }
    afp_tx_flush(d, q);
}

/* poll() on a packet socket with a V2 receive ring reports POLLIN while
 * the slot the kernel filled last is still the user's, and the kernel wakes
 * pollers for every frame it writes: block mode sleeps until one frame. */
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
