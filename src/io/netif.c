/* netif.c - helpers shared by the Linux interface drivers; see netif.h. */
#include "netif.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

void tern_netif_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* One line: cut at the first newline. */
    char *nl = strchr(err, '\n');
    if (nl)
        *nl = '\0';
}

bool tern_netif_name_ok(const char *name, char *err, size_t errlen)
{
    if (!name || !*name) {
        tern_netif_err(err, errlen, "no interface given (iface=...)");
        return false;
    }
    if (strlen(name) >= IFNAMSIZ) {
        tern_netif_err(err, errlen, "interface name '%s' longer than %d bytes",
                       name, IFNAMSIZ - 1);
        return false;
    }
    return true;
}

static const char *errno_text(int e)
{
    switch (e) {
    case ENODEV:
    case ENXIO:
        return "no such interface";
    case EPERM:
    case EACCES:
        return "permission denied (needs root or CAP_NET_ADMIN/CAP_NET_RAW)";
    default:
        return strerror(e);
    }
}

int tern_netif_query(const char *name, uint8_t mac[6], uint16_t *mtu,
                     int *ifindex, char *err, size_t errlen)
{
    if (!tern_netif_name_ok(name, err, errlen))
        return -EINVAL;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        tern_netif_err(err, errlen, "%s: socket: %s", name, strerror(e));
        return -e;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, name, strlen(name));
    int rc = 0;
    if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0) {
        rc = -errno;
        tern_netif_err(err, errlen, "%s: %s", name, errno_text(-rc));
        goto out;
    }
    if (ifindex)
        *ifindex = ifr.ifr_ifindex;
    if (mac) {
        if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
            rc = -errno;
            tern_netif_err(err, errlen, "%s: SIOCGIFHWADDR: %s", name,
                           errno_text(-rc));
            goto out;
        }
        memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
    }
    if (mtu) {
        if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
            rc = -errno;
            tern_netif_err(err, errlen, "%s: SIOCGIFMTU: %s", name,
                           errno_text(-rc));
            goto out;
        }
        *mtu = ifr.ifr_mtu > 65535 ? 65535 : (uint16_t)ifr.ifr_mtu;
    }
out:
    close(fd);
    return rc;
}

int tern_netif_set_up(const char *name)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    int rc = 0;
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
        rc = -errno;
    } else if (!(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
            rc = -errno;
    }
    close(fd);
    return rc;
}

bool tern_netif_opt(const char *extra, const char *key, char *val,
                    size_t vallen)
{
    if (!extra || !key)
        return false;
    size_t klen = strlen(key);
    const char *p = extra;
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        const char *kend = eq ? eq : end;
        if ((size_t)(kend - p) == klen && memcmp(p, key, klen) == 0) {
            if (val && vallen) {
                size_t n = eq ? (size_t)(end - eq - 1) : 0;
                if (n >= vallen)
                    n = vallen - 1;
                if (n)
                    memcpy(val, eq + 1, n);
                val[n] = '\0';
            }
            return true;
        }
        p = *end ? end + 1 : end;
    }
    return false;
}

bool tern_netif_opt_bool(const char *extra, const char *key, bool def)
{
    char v[16];
    if (!tern_netif_opt(extra, key, v, sizeof(v)))
        return def;
    if (!v[0] || !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on") ||
        !strcmp(v, "true"))
        return true;
    return false;
}

unsigned long tern_netif_opt_ulong(const char *extra, const char *key,
                                   unsigned long def)
{
    char v[32], *end;
    if (!tern_netif_opt(extra, key, v, sizeof(v)) || !v[0])
        return def;
    errno = 0;
    unsigned long x = strtoul(v, &end, 0);
    if (errno || *end)
        return def;
    return x;
}

bool tern_netif_complete_csum_at(uint8_t *frame, size_t len, size_t start,
                                 size_t offset)
{
    if (start >= len || start + offset + 2 > len)
        return false;
    uint32_t sum = tern_csum_partial(frame + start, len - start, 0);
    uint16_t c = (uint16_t)~tern_csum_fold(sum);
    /* tern_csum_partial returns the sum of big-endian 16-bit words as a
     * number: store it big end first. */
    frame[start + offset] = (uint8_t)(c >> 8);
    frame[start + offset + 1] = (uint8_t)c;
    return true;
}

/* A UDP checksum that came out 0 is sent as 0xffff (0 means "none"). */
static bool udp_nonzero(uint8_t *frame, size_t l4, uint8_t proto)
{
    if (proto == 17 && !frame[l4 + 6] && !frame[l4 + 7])
        frame[l4 + 6] = frame[l4 + 7] = 0xff;
    return true;
}

/* The IPv6 case: the upper-layer header after hop-by-hop, routing and
 * destination options headers (a fragment has none to fix). */
static bool complete_csum6(uint8_t *frame, size_t len)
{
    const uint8_t *ip = frame + 14;
    if (len < 14 + 40 || (ip[0] >> 4) != 6)
        return false;
    size_t end = 14 + 40 + (((size_t)ip[4] << 8) | ip[5]), off = 14 + 40;
    if (end > len)
        return false;
    uint8_t nh = ip[6];
    for (int n = 0; n < 8 && (nh == 0 || nh == 43 || nh == 60); n++) {
        if (off + 8 > end)
            return false;
        nh = frame[off];
        off += ((size_t)frame[off + 1] + 1) * 8;
    }
    if (nh != 6 && nh != 17)
        return false;
    return tern_netif_complete_csum_at(frame, end, off, nh == 6 ? 16 : 6) &&
           udp_nonzero(frame, off, nh);
}

bool tern_netif_complete_csum(uint8_t *frame, size_t len)
{
    if (len < 14 + 20)
        return false;
    if (frame[12] == 0x86 && frame[13] == 0xdd)
        return complete_csum6(frame, len);
    if (frame[12] != 0x08 || frame[13] != 0x00)
        return false;
    const uint8_t *ip = frame + 14;
    if ((ip[0] >> 4) != 4)
        return false;
    size_t ihl = (size_t)(ip[0] & 15) * 4;
    size_t tot = ((size_t)ip[2] << 8) | ip[3];
    if (ihl < 20 || tot < ihl || 14 + tot > len)
        return false;
    if ((ip[6] & 0x3f) || ip[7]) /* a fragment: no L4 header to fix */
        return false;
    size_t off;
    if (ip[9] == 6)
        off = 16;
    else if (ip[9] == 17)
        off = 6;
    else
        return false;
    return tern_netif_complete_csum_at(frame, 14 + tot, 14 + ihl, off) &&
           udp_nonzero(frame, 14 + ihl, ip[9]);
}

int tern_netif_allmulti(struct tern_dev *d, int ifindex, const char *extra,
                        char *err, size_t errlen)
{
    if (!tern_netif_opt_bool(extra, "allmulti", true))
        return 0;
    /* protocol 0: the socket receives nothing, it only holds the
     * membership */
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    struct packet_mreq mr = {.mr_ifindex = ifindex, .mr_type = PACKET_MR_ALLMULTI};
    if (fd < 0 || setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr,
                             sizeof(mr)) < 0) {
        tern_netif_err(err, errlen, "%s: all-multicast reception (for IPv6 "
                       "neighbor discovery; allmulti=0 skips it): %s",
                       d->drv->name, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    d->allmulti_fd = fd;
    d->allmulti = true;
    return 0;
}

int tern_netif_dev_init(struct tern_dev *d, const tern_driver *drv,
                        unsigned queues, unsigned bufs, unsigned buf_size,
                        char *err, size_t errlen)
{
    d->drv = drv;
    d->queues = queues;
    d->pools = calloc(queues, sizeof(*d->pools));
    if (!d->pools) {
        tern_netif_err(err, errlen, "%s: out of memory", drv->name);
        return -1;
    }
    for (unsigned q = 0; q < queues; q++) {
        d->pools[q] = tern_pool_create(bufs, buf_size);
        if (!d->pools[q]) {
            tern_netif_err(err, errlen,
                           "%s: cannot create a pool of %u buffers of %u bytes",
                           drv->name, bufs, buf_size);
            return -1;
        }
    }
    return 0;
}

void tern_netif_dev_fini(struct tern_dev *d)
{
    if (d->allmulti) {
        close(d->allmulti_fd);
        d->allmulti = false;
    }
    if (!d->pools)
        return;
    for (unsigned q = 0; q < d->queues; q++)
        if (d->pools[q])
            tern_pool_destroy(d->pools[q]);
    free(d->pools);
    d->pools = NULL;
}

void tern_netif_release(struct tern_dev *d, unsigned q, tern_buf *frame)
{
    tern_pool_release(d->pools[q], frame);
}

size_t tern_netif_linearize(const tern_buf *frame, uint8_t *out, size_t cap)
{
    size_t total = 0;
    for (const tern_buf *b = frame; b; b = b->frag) {
        if (total + b->len <= cap)
            memcpy(out + total, b->data, b->len);
        total += b->len;
    }
    return total;
}

int tern_netif_memlock_unlimited(void)
{
    struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
    if (setrlimit(RLIMIT_MEMLOCK, &r) == 0)
        return 0;
    int e = errno;
    /* Not allowed to raise the hard limit: take what we may. */
    if (getrlimit(RLIMIT_MEMLOCK, &r) == 0) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_MEMLOCK, &r);
    }
    return -e;
}
