/* synflood - send spoofed TCP SYNs as fast as a raw socket takes them, for
 * the conformance case syn_flood_fast: sources are random hosts of the
 * target's own /24 (on-link, so every answer needs ARP), ports and
 * sequence numbers random. Test hosts only (198.18.0.0/15 namespaces). */
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
#include <time.h>

static const char usage[] =
    "usage: synflood IFACE SRC_MAC DST_MAC DST_IP DST_PORT COUNT SKIP1,SKIP2 [SEED]\n"
    "Send COUNT SYNs to DST_IP:DST_PORT from random hosts of DST_IP's /24\n"
    "(never host numbers SKIP1 or SKIP2: the real hosts), prints\n"
    "\"COUNT SECONDS\". Needs root (a raw AF_PACKET socket).\n";

static uint32_t sum16(const uint8_t *p, int n, uint32_t s)
{
    for (int i = 0; i + 1 < n; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return s;
}

static int parse_mac(const char *s, uint8_t m[6])
{
    return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2],
                  &m[3], &m[4], &m[5]) == 6;
}

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v); }

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
        !inet_aton(argv[4], &dip) || sscanf(argv[7], "%d,%d", &skip1, &skip2) != 2) {
        fputs(usage, stderr);
        return 2;
    }
    uint32_t dst = ntohl(dip.s_addr), port = (uint32_t)atoi(argv[5]);
    long n = atol(argv[6]);
    srand(argc > 8 ? (unsigned)atoi(argv[8]) : 7u);
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    struct sockaddr_ll a = {0};
    a.sll_family = AF_PACKET;
    a.sll_ifindex = (int)if_nametoindex(argv[1]);
    a.sll_halen = 6;
    memcpy(a.sll_addr, dm, 6);
    if (fd < 0 || !a.sll_ifindex) {
        fprintf(stderr, "synflood: cannot open a raw socket on %s: %s\n",
                argv[1], strerror(errno));
        return 1;
    }
    uint8_t f[54] = {0}, *ip = f + 14, *t = ip + 20;
    memcpy(f, dm, 6);
    memcpy(f + 6, sm, 6);
    put16(f + 12, 0x0800);
    ip[0] = 0x45;
    put16(ip + 2, 40);
    ip[8] = 64;
    ip[9] = 6;
    put32(ip + 16, dst);
    put16(t + 2, port);
    t[12] = 5 << 4;
    t[13] = 0x02;                                   /* SYN */
    put16(t + 14, 65535);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        int h;
        do
            h = 1 + rand() % 254;
        while (h == skip1 || h == skip2);
        uint32_t src = (dst & 0xffffff00u) | (uint32_t)h;
        put16(ip + 4, (uint32_t)rand());
        put32(ip + 12, src);
        put16(ip + 10, 0);
        put16(ip + 10, ~sum16(ip, 20, 0));
        put16(t, 1024 + (uint32_t)(rand() % 60000));
        put32(t + 4, (uint32_t)rand());
        put16(t + 16, 0);
        uint32_t ps = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 6 + 20;
        put16(t + 16, ~sum16(t, 20, ps));
        while (sendto(fd, f, sizeof f, 0, (struct sockaddr *)&a, sizeof a) < 0)
            if (errno != ENOBUFS && errno != EAGAIN) {
                fprintf(stderr, "synflood: send: %s\n", strerror(errno));
                return 1;
            }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%ld %.3f\n", n, (double)(t1.tv_sec - t0.tv_sec) +
                                (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
