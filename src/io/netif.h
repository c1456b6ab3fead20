/* netif.h - helpers shared by the Linux interface drivers (afpacket, tap,
 * afxdp): interface facts through ioctl, driver option parsing, one-line
 * errors, and completing partial checksums. Private to src/io. */
#ifndef TERN_NETIF_H
#define TERN_NETIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include "io.h"

/* Write a one-line error into err (never overflows, always terminated). */
void tern_netif_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Check that `name` is a usable interface name (1..15 bytes). */
bool tern_netif_name_ok(const char *name, char *err, size_t errlen);

/* MAC address, MTU and ifindex of an interface of the current network
 * namespace, through SIOCGIFHWADDR / SIOCGIFMTU / SIOCGIFINDEX.  Any output
 * pointer may be NULL. Returns 0, or -errno with a message in err
 * ("no such interface", "permission denied", ...). */
int tern_netif_query(const char *name, uint8_t mac[6], uint16_t *mtu,
                     int *ifindex, char *err, size_t errlen);

/* Bring an interface up (SIOCSIFFLAGS |= IFF_UP). Returns 0 or -errno. */
int tern_netif_set_up(const char *name);

/* Value of `key` in a "k1=v1,k2,k3=v3" option string. Returns true when the
 * key is present; val gets its value ("" for a bare key). */
bool tern_netif_opt(const char *extra, const char *key, char *val,
                    size_t vallen);
/* A boolean option: absent -> def; bare key, 1, yes, on, true -> true. */
bool tern_netif_opt_bool(const char *extra, const char *key, bool def);
/* A numeric option: absent or malformed -> def. */
unsigned long tern_netif_opt_ulong(const char *extra, const char *key,
                                   unsigned long def);

/* A received Ethernet frame whose TCP or UDP checksum the sender left
 * partial (Linux CHECKSUM_PARTIAL: the field holds the pseudo-header sum):
 * compute the real checksum in place. Returns true if the frame was IPv4
 * or IPv6 TCP/UDP (not a fragment) and got completed. VLAN tags are not
 * looked through. */
bool tern_netif_complete_csum(uint8_t *frame, size_t len);

/* Complete a partial checksum whose position is known (virtio_net_hdr
 * style): sum bytes [start, len) and store ~fold at start + offset. */
bool tern_netif_complete_csum_at(uint8_t *frame, size_t len, size_t start,
                                 size_t offset);

/* The common part of every driver's open: fill the tern_dev base from the
 * interface (mac, mtu) and create one pool per queue of `bufs` buffers of
 * buf_size. Returns 0 or -1 with err written. */
int tern_netif_dev_init(struct tern_dev *d, const tern_driver *drv,
                        unsigned queues, unsigned bufs, unsigned buf_size,
                        char *err, size_t errlen);
/* Receive every multicast frame of interface ifindex (PACKET_MR_ALLMULTI
 * on a packet socket of its own, dropped when that socket closes at
 * tern_netif_dev_fini): IPv6 neighbor discovery needs the all-nodes and
 * solicited-node groups, which the NIC filters out while the kernel's
 * IPv6 is off on the interface. Skipped with extra option allmulti=0.
 * Returns 0 or -1 with err written. */
int tern_netif_allmulti(struct tern_dev *d, int ifindex, const char *extra,
                        char *err, size_t errlen);
/* Free the pools made by tern_netif_dev_init (NULL-safe). */
void tern_netif_dev_fini(struct tern_dev *d);

/* Release one reference of every frame in a tx burst after it was sent or
 * dropped (the pool of queue q takes them back). */
void tern_netif_release(struct tern_dev *d, unsigned q, tern_buf *frame);

/* Copy the bytes of a frame (its frag chain) to out, at most cap bytes.
 * Returns the frame's total length (which may exceed cap: then the frame
 * does not fit and nothing meaningful was copied past cap). */
size_t tern_netif_linearize(const tern_buf *frame, uint8_t *out, size_t cap);

/* A received frame that starts with an 802.1Q or 802.1ad tag (tap and
 * AF_XDP see tags in the frame; AF_PACKET gets them as metadata). tern is
 * on no VLAN: returns true when the frame must be dropped (a VLAN ID other
 * than 0, counted by the caller in rx_drop_vlan), as Linux drops it without
 * a VLAN device. A priority tag (VLAN 0) is no VLAN: it is taken off in
 * place (the addresses move 4 bytes up) and the frame passes. */
static inline bool tern_netif_vlan_rx(tern_buf *b)
{
    uint8_t *f = b->data;
    if (b->len < 18 || !((f[12] == 0x81 && f[13] == 0x00) ||
                         (f[12] == 0x88 && f[13] == 0xa8)))
        return false;
    if ((f[14] & 0x0f) | f[15])
        return true;
    memmove(f + 4, f, 12);
    b->data += 4;
    b->len -= 4;
    return false;
}

/* Raise RLIMIT_MEMLOCK to infinity (or as high as allowed). Returns 0 or
 * -errno. */
int tern_netif_memlock_unlimited(void);

#endif
