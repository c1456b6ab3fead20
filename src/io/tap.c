/* tap.c - the TAP driver: tern plays the far end of a Linux tap device.
 *
 * One /dev/net/tun file descriptor per queue, attached with
 * IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE to the interface args->iface, which
 * is created when it does not exist (it then lives while tern keeps it open;
 * a persistent one made with `ip tuntap add mode tap multi_queue` also
 * works). The kernel spreads the frames it sends over the queues by flow.
 * Reads and writes are non-blocking, one frame per system call (the tun
 * interface has no batch call); a frag chain is written with writev.
 *
 * Addresses: the tap interface IS the kernel's end of the wire, so its MAC
 * (SIOCGIFHWADDR) belongs to the kernel. tern gets its own locally
 * administered MAC, derived from the interface's (first byte |= 0x02, last
 * byte ^= 0x01) unless the option mac=xx:xx:xx:xx:xx:xx gives one. The MTU is
 * the interface's (SIOCGIFMTU).
 *
 * Capabilities: none. Without IFF_VNET_HDR the kernel completes checksums
 * and segments GSO packets before it hands them to a tap reader, and takes
 * only complete frames from it.
 *
 * When the pool is empty, frames are still read (into a scratch buffer)
 * and dropped, counted in rx_drop_nobuf: input never stops. VLAN-tagged
 * frames are dropped (rx_drop_vlan); a priority tag is taken off.
 *
 * Options (tern_dev_args.extra): mac=..., up=0|1 (bring the interface up;
 * default: only when this open created it).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io.h"
#include "netif.h"

#define TAP_DEFAULT_POOL 4096u
#define TAP_MAX_IOV 16

typedef struct tap_dev {
    struct tern_dev base;
    char ifname[IFNAMSIZ];
    int *fds;
    uint8_t *scratch;      /* frames read and dropped when the pool is dry */
    size_t scratch_len;
} tap_dev;

const tern_driver tern_driver_tap;

static void tap_close(tern_dev *dev)
{
    tap_dev *d = (tap_dev *)dev;
    if (!d)
        return;
    if (d->fds) {
        for (unsigned i = 0; i < d->base.queues; i++)
            if (d->fds[i] >= 0)
                close(d->fds[i]);
        free(d->fds);
    }
    free(d->scratch);
    tern_netif_dev_fini(&d->base);
    free(d);
}

static bool parse_mac(const char *s, uint8_t mac[6])
{
    unsigned v[6];
    char tail;
    if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4],
               &v[5], &tail) != 6)
        return false;
    for (int i = 0; i < 6; i++) {
        if (v[i] > 255)
            return false;
        mac[i] = (uint8_t)v[i];
    }
    return !(mac[0] & 1);
}

static int tap_attach(const char *ifn, char *err, size_t errlen)
{
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENODEV || e == ENXIO)
            tern_netif_err(err, errlen,
                           "tap: /dev/net/tun is missing (modprobe tun?)");
        else if (e == EPERM || e == EACCES)
            tern_netif_err(err, errlen,
                           "tap: /dev/net/tun: permission denied (needs root "
                           "or CAP_NET_ADMIN)");
        else
            tern_netif_err(err, errlen, "tap: /dev/net/tun: %s", strerror(e));
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE;
    memcpy(ifr.ifr_name, ifn, strlen(ifn));
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        int e = errno;
        if (e == EPERM || e == EACCES)
            tern_netif_err(err, errlen,
                           "tap: %s: permission denied (needs root or "
                           "CAP_NET_ADMIN, or a tap owned by this user)", ifn);
        else if (e == EINVAL)
            tern_netif_err(err, errlen,
                           "tap: %s exists but is not a multi-queue tap "
                           "(make it with 'ip tuntap add dev %s mode tap "
                           "multi_queue')", ifn, ifn);
        else if (e == EBUSY)
            tern_netif_err(err, errlen,
                           "tap: %s is busy (all its queues are attached, or "
                           "it is not a tap)", ifn);
        else
            tern_netif_err(err, errlen, "tap: %s: TUNSETIFF: %s", ifn,
                           strerror(e));
        close(fd);
        return -1;
    }
    return fd;
}

static tern_dev *tap_open(const tern_dev_args *a, char *err, size_t errlen)
{
    if (!a || !tern_netif_name_ok(a->iface, err, errlen))
        return NULL;
    tap_dev *d = calloc(1, sizeof(*d));
    if (!d) {
        tern_netif_err(err, errlen, "tap: out of memory");
        return NULL;
    }
    snprintf(d->ifname, sizeof(d->ifname), "%s", a->iface);
    unsigned nq = a->queues ? a->queues : 1;

    /* Does it exist already? (then it is someone else's to bring up) */
    int ifindex = 0;
    bool existed = tern_netif_query(d->ifname, NULL, NULL, &ifindex, NULL,
                                    0) == 0;

    d->fds = malloc(nq * sizeof(*d->fds));
    if (!d->fds) {
        tern_netif_err(err, errlen, "tap: out of memory");
        free(d);
        return NULL;
    }
    d->base.queues = nq;
    for (unsigned i = 0; i < nq; i++)
        d->fds[i] = -1;
    for (unsigned i = 0; i < nq; i++) {
        d->fds[i] = tap_attach(d->ifname, err, errlen);
        if (d->fds[i] < 0) {
            tap_close(&d->base);
            return NULL;
        }
    }
    uint8_t kmac[6];
    char qerr[200];
    if (tern_netif_query(d->ifname, kmac, &d->base.mtu, &ifindex, qerr,
                         sizeof(qerr)) < 0) {
        tern_netif_err(err, errlen, "tap: %s", qerr);
        tap_close(&d->base);
        return NULL;
    }
    char v[32];
    if (tern_netif_opt(a->extra, "mac", v, sizeof(v))) {
        if (!parse_mac(v, d->base.mac)) {
            tern_netif_err(err, errlen, "tap: mac=%s is not a unicast MAC", v);
            tap_close(&d->base);
            return NULL;
        }
    } else {
        memcpy(d->base.mac, kmac, 6);
        d->base.mac[0] = (uint8_t)((d->base.mac[0] | 0x02) & ~0x01);
        d->base.mac[5] ^= 0x01;
    }
    if (tern_netif_opt_bool(a->extra, "up", !existed)) {
        int rc = tern_netif_set_up(d->ifname);
        if (rc < 0) {
            tern_netif_err(err, errlen, "tap: %s: cannot bring it up: %s",
                           d->ifname, strerror(-rc));
            tap_close(&d->base);
            return NULL;
        }
    }
    unsigned max_frame = (unsigned)d->base.mtu + 14 + 4;
    unsigned buf_size = TERN_HEADROOM + (max_frame < 2048 ? 2048 : max_frame);
    if (tern_netif_dev_init(&d->base, &tern_driver_tap, nq,
                            a->pool_size ? a->pool_size : TAP_DEFAULT_POOL,
                            buf_size, err, errlen) < 0) {
        tap_close(&d->base);
        return NULL;
    }
    d->scratch_len = max_frame;
    d->scratch = malloc(d->scratch_len);
    if (!d->scratch) {
        tern_netif_err(err, errlen, "tap: out of memory");
        tap_close(&d->base);
        return NULL;
    }
    d->base.caps = 0;
    return &d->base;
}

/* Read one frame into the scratch buffer and drop it: the pool is empty.
 * Leaving frames in the tap's queue would stop input altogether, and with
 * it the ACKs whose arrival frees the buffers held in send queues. Returns
 * false when there is nothing (more) to read. */
static bool tap_drop_one(tap_dev *d, int fd)
{
    if (!d->scratch)
        return false;
    ssize_t r;
    do {
        r = read(fd, d->scratch, d->scratch_len);
    } while (r < 0 && errno == EINTR);
    if (r <= 0)
        return false;
    d->base.rx_drop_nobuf++;
    d->base.rx_drops++;
    return true;
}

static unsigned tap_rx_burst(tern_dev *dev, unsigned q, tern_buf **frames,
                             unsigned max)
{
    tap_dev *d = (tap_dev *)dev;
    tern_pool *pool = d->base.pools[q];
    int fd = d->fds[q];
    unsigned n = 0;
    /* reads: at most max per call, whatever becomes of them */
    for (unsigned reads = 0; n < max && reads < max; reads++) {
        tern_buf *b = tern_pool_alloc(pool);
        if (!b) {
            if (!tap_drop_one(d, fd))
                break;
            continue;
        }
        size_t room = b->size - (size_t)(b->data - b->head);
        ssize_t r = read(fd, b->data, room);
        if (r <= 0) {
            tern_pool_release(pool, b);
            if (r < 0 && errno == EINTR)
                continue;
            break; /* EAGAIN: nothing more; EIO etc.: try next time */
        }
        b->len = (uint32_t)r;
        if (r < 14 || tern_netif_vlan_rx(b)) {
            if (r >= 14)
                d->base.rx_drop_vlan++;
            d->base.rx_drops++;
            tern_pool_release(pool, b);
            continue;
        }
        frames[n++] = b;
        d->base.rx_frames++;
    }
    return n;
}

static void tap_tx_burst(tern_dev *dev, unsigned q, tern_buf **frames,
                         unsigned n)
{
    tap_dev *d = (tap_dev *)dev;
    int fd = d->fds[q];
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        struct iovec iov[TAP_MAX_IOV];
        int cnt = 0;
        size_t total = 0;
        tern_buf *b = f;
        for (; b && cnt < TAP_MAX_IOV; b = b->frag) {
            iov[cnt].iov_base = b->data;
            iov[cnt].iov_len = b->len;
            total += b->len;
            cnt++;
        }
        if (b) { /* longer chain than we write at once */
            d->base.tx_drops++;
            tern_netif_release(&d->base, q, f);
            continue;
        }
        ssize_t w;
        do {
            w = writev(fd, iov, cnt);
        } while (w < 0 && errno == EINTR);
        if (w == (ssize_t)total)
            d->base.tx_frames++;
        else
            d->base.tx_drops++; /* EAGAIN, interface down (EIO), too long */
        tern_netif_release(&d->base, q, f);
    }
}

static int tap_wait_fd(tern_dev *dev, unsigned q)
{
    tap_dev *d = (tap_dev *)dev;
    return q < d->base.queues ? d->fds[q] : -1;
}

const tern_driver tern_driver_tap = {
    .name = "tap",
    .open = tap_open,
    .close = tap_close,
    .rx_burst = tap_rx_burst,
    .tx_burst = tap_tx_burst,
    .wait_fd = tap_wait_fd,
};
