/* drvtest.h - shared helpers of the driver tests: the test hosts made by
 * tools/netns.sh (read from the environment), driver lookup, commands run on
 * the kernel side, and hand-built frames. Everything is static: each test
 * program includes it once. */
#ifndef TERN_DRVTEST_H
#define TERN_DRVTEST_H

#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io.h"

/* Each test program uses some of these helpers. */
#pragma GCC diagnostic ignored "-Wunused-function"

extern char **environ;

#define DT_SKIP 77

extern const tern_driver tern_driver_afpacket;
extern const tern_driver tern_driver_tap;
#ifdef TERN_HAVE_AFXDP
extern const tern_driver tern_driver_afxdp;
#endif

static const tern_driver *dt_driver(const char *name)
{
    if (!strcmp(name, "afpacket"))
        return &tern_driver_afpacket;
    if (!strcmp(name, "tap"))
        return &tern_driver_tap;
#ifdef TERN_HAVE_AFXDP
    if (!strcmp(name, "afxdp"))
        return &tern_driver_afxdp;
#endif
    return NULL;
}

/* The test hosts (tools/netns.sh variables). */
typedef struct dt_hosts {
    const char *ns_k, *if_k, *if_t, *mode;
    uint8_t mac_k[6];
    uint32_t ip_k, ip_t;      /* host order */
} dt_hosts;

static bool dt_parse_mac(const char *s, uint8_t mac[6])
{
    unsigned v[6];
    if (!s || sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3],
                     &v[4], &v[5]) != 6)
        return false;
    for (int i = 0; i < 6; i++)
        mac[i] = (uint8_t)v[i];
    return true;
}

static inline bool dt_parse_ip(const char *s, uint32_t *ip)
{
    unsigned a, b, c, d;
    if (!s || sscanf(s, "%u.%u.%u.%u", &a, &b, &c, &d) != 4)
        return false;
    *ip = TERN_IP4(a, b, c, d);
    return true;
}

/* Read the hosts from the environment; false (with a message) if the test
 * was not started by tools/netns.sh. */
static bool dt_hosts_load(dt_hosts *h)
{
    memset(h, 0, sizeof(*h));
    h->ns_k = getenv("NS_K");
    h->if_k = getenv("IF_K");
    h->if_t = getenv("IF_T");
    h->mode = getenv("MODE");
    if (!h->ns_k || !h->if_k || !h->if_t || !h->mode ||
        !dt_parse_mac(getenv("MAC_K"), h->mac_k) ||
        !dt_parse_ip(getenv("IP_K"), &h->ip_k) ||
        !dt_parse_ip(getenv("IP_T"), &h->ip_t)) {
        fprintf(stderr, "no test hosts: run me through tools/netns.sh run "
                        "(NS_K, IF_K, IF_T, MAC_K, IP_K, IP_T, MODE)\n");
        return false;
    }
    return true;
}

static uint64_t dt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char *dt_fmt(const char *fmt, va_list ap)
{
    static char cmd[1024];
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    return cmd;
}

/* Run a shell command; returns its exit status (or -1). */
static int dt_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int dt_sh(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd = dt_fmt(fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return (st >= 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
}

/* Run a shell command and capture (the start of) its output. */
static int dt_sh_out(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int dt_sh_out(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd = dt_fmt(fmt, ap);
    va_end(ap);
    out[0] = '\0';
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return (st >= 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
}

/* Start a command in the background (argv style, via /bin/sh -c). */
static pid_t dt_spawn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static pid_t dt_spawn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd = dt_fmt(fmt, ap);
    va_end(ap);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0)
        return -1;
    return pid;
}

/* Exit status of a background command, -2 while it runs. */
static int dt_reap(pid_t pid, bool block)
{
    int st;
    pid_t r = waitpid(pid, &st, block ? 0 : WNOHANG);
    if (r == 0)
        return -2;
    if (r < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void dt_kill(pid_t pid)
{
    if (pid <= 0)
        return;
    if (dt_reap(pid, false) == -2) {
        kill(pid, SIGTERM);
        dt_reap(pid, true);
    }
}

/* A packet socket on the kernel side's IF_K for protocol proto (network
 * order; 0: sending only), or -1. It is made in NS_K through setns(); a
 * socket keeps the namespace it was made in, so we step straight back. */
static int dt_peer_socket(const dt_hosts *h, uint16_t proto)
{
    char path[300];
    snprintf(path, sizeof(path), "/run/netns/%s", h->ns_k);
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int peer = open(path, O_RDONLY | O_CLOEXEC);
    int fd = -1;
    if (self >= 0 && peer >= 0 && setns(peer, CLONE_NEWNET) == 0) {
        fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, proto);
        struct sockaddr_ll sll = {.sll_family = AF_PACKET,
                                  .sll_protocol = proto,
                                  .sll_ifindex =
                                      (int)if_nametoindex(h->if_k)};
        if (fd >= 0 && (sll.sll_ifindex == 0 ||
                        bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)) {
            close(fd);
            fd = -1;
        }
        if (setns(self, CLONE_NEWNET) != 0) {
            fprintf(stderr, "setns back to our namespace: %s\n",
                    strerror(errno));
            abort();
        }
    }
    if (self >= 0)
        close(self);
    if (peer >= 0)
        close(peer);
    return fd;
}

/* ---- frames ---- */

static inline void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}
static inline uint16_t get16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t get32(const uint8_t *p)
{
    return ((uint32_t)get16(p) << 16) | get16(p + 2);
}

/* Internet checksum of len bytes (result ready to store big-endian). */
static uint16_t dt_csum(const uint8_t *p, size_t len)
{
    uint32_t s = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        s += (uint32_t)p[len - 1] << 8;
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

static uint8_t *dt_eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6],
                       uint16_t type)
{
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    put16(f + 12, type);
    return f + 14;
}

/* ARP (Ethernet/IPv4) of `op` (1 request, 2 reply). Returns frame length. */
static size_t dt_arp(uint8_t *f, uint16_t op, const uint8_t eth_dst[6],
                     const uint8_t sha[6], uint32_t spa, const uint8_t tha[6],
                     uint32_t tpa)
{
    uint8_t *a = dt_eth(f, eth_dst, sha, 0x0806);
    put16(a, 1);
    put16(a + 2, 0x0800);
    a[4] = 6;
    a[5] = 4;
    put16(a + 6, op);
    memcpy(a + 8, sha, 6);
    put32(a + 14, spa);
    memcpy(a + 18, tha, 6);
    put32(a + 24, tpa);
    memset(a + 28, 0, 18); /* pad to the 60-byte minimum */
    return 14 + 28 + 18;
}

/* ICMP echo (type 8 request / 0 reply) in IPv4 in Ethernet. */
static size_t dt_icmp_echo(uint8_t *f, uint8_t type, const uint8_t dst[6],
                           const uint8_t src[6], uint32_t sip, uint32_t dip,
                           uint16_t id, uint16_t seq, const uint8_t *data,
                           size_t dlen)
{
    uint8_t *ip = dt_eth(f, dst, src, 0x0800);
    size_t tot = 20 + 8 + dlen;
    ip[0] = 0x45;
    ip[1] = 0;
    put16(ip + 2, (uint16_t)tot);
    put16(ip + 4, 0x1234);
    put16(ip + 6, 0x4000); /* DF */
    ip[8] = 64;
    ip[9] = 1;
    put16(ip + 10, 0);
    put32(ip + 12, sip);
    put32(ip + 16, dip);
    put16(ip + 10, dt_csum(ip, 20));
    uint8_t *ic = ip + 20;
    ic[0] = type;
    ic[1] = 0;
    put16(ic + 2, 0);
    put16(ic + 4, id);
    put16(ic + 6, seq);
    memcpy(ic + 8, data, dlen);
    put16(ic + 2, dt_csum(ic, 8 + dlen));
    return 14 + tot;
}

static void dt_fmt_mac(const uint8_t m[6], char out[18])
{
    snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
             m[4], m[5]);
}

static inline void dt_fmt_ip(uint32_t ip, char out[16])
{
    snprintf(out, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255,
             (ip >> 8) & 255, ip & 255);
}

/* Send one frame of len bytes on queue q through the device's pool. */
static bool dt_send(tern_dev *d, unsigned q, const uint8_t *frame, size_t len)
{
    tern_buf *b = tern_pool_alloc(d->pools[q]);
    if (!b)
        return false;
    memcpy(b->data, frame, len);
    b->len = (uint32_t)len;
    d->drv->tx_burst(d, q, &b, 1);
    return true;
}

/* Wait up to ms for the device's queue q to become readable. */
static void dt_wait(tern_dev *d, unsigned q, int ms)
{
    int fd = d->drv->wait_fd(d, q);
    if (fd < 0) {
        usleep((useconds_t)ms * 1000);
        return;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    poll(&p, 1, ms);
}

#endif
