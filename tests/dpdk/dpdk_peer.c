/* dpdk_peer.c - one tern stack on the dpdk driver, for the two-process
 * (net_memif) and kernel (net_tap) tests in this directory.
 *
 *   dpdk_peer --iface SPEC --ip A.B.C.D [--peer A.B.C.D] [options]
 *
 * Roles (any combination):
 *   --serve               answer pings (always), echo UDP on --udp-port and
 *                         TCP on --tcp-port back to the sender
 *   --ping N              send N echo requests to --peer, expect N replies
 *   --udp N               send N datagrams (1..1400 bytes, numbered, with a
 *                         pattern) to --peer:--udp-port, expect every one
 *                         echoed back intact
 *   --udp-sink N          expect N datagrams on --udp-port (pattern checked),
 *                         do not answer
 *   --tcp N               connect to --peer:--tcp-port, N request/response
 *                         rounds of --size bytes, verify every byte, close
 * Other options:
 *   --eal "ARGS"          EAL arguments (default: the driver's)
 *   --extra "k=v,..."     driver options before eal=
 *   --seconds S           give up (and fail) after S seconds (default 20);
 *                         with only --serve: run S seconds, then succeed
 *   --ready FILE          touch FILE once the port is open (for scripts)
 *   --go FILE             start the client roles only once FILE exists
 *   --done FILE           touch FILE when the client roles are complete
 *                         (with --serve the process then goes on serving
 *                         until SIGTERM; its exit status is the clients')
 *   --hold                after the client roles, stop polling the port and
 *                         wait for SIGTERM before closing it. DPDK 22.11's
 *                         memif PMD unmaps the rings from its interrupt
 *                         thread when the peer leaves, under a poller that
 *                         may be inside rx_burst: the side that stays must
 *                         not be polling then (see docs/dpdk.md).
 *   --quiet
 * Prints one line "result: ..." with the figures, and driver/stack
 * counters. Exit 0 on success, 1 on failure, 77 when DPDK cannot be
 * initialised here (not root, no DPDK), so ctest reports SKIP.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "tern.h"
#ifdef TERN_HAVE_DPDK
#include "dpdk.h"
#endif

#define SKIP 77
#define MAX_UDP 100000
#define MAX_SIZE 65536

static struct {
    const char *iface, *eal, *extra, *ready, *go, *done;
    uint32_t ip, peer;
    bool serve, quiet, hold;
    unsigned ping, udp, udp_sink, tcp, size, seconds, queues;
    uint16_t udp_port, tcp_port;
} o = {.size = 64, .seconds = 20, .udp_port = 7777, .tcp_port = 7778,
       .queues = 1};

static tern_dev *dev;
static tern_stack *st;
static volatile sig_atomic_t stop;

/* UDP state */
static uint8_t *udp_seen;
static unsigned udp_ok, udp_bad, udp_sent;
/* TCP client state */
static tern_conn *tc;
static bool tc_up, tc_closed;
static unsigned tc_retries;
static uint64_t tc_retry_at;
static unsigned tc_round;
static size_t tc_got;
static uint8_t *tc_req;
static unsigned tc_bad;
static uint64_t tc_t0, tc_rtt_sum;
static unsigned tcp_served;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_sig(int s) { (void)s; stop = 1; }

static uint8_t pat(unsigned seq, size_t i)
{
    return (uint8_t)(seq * 31u + i * 7u + (i >> 8));
}

/* Datagram seq: 4-byte seq then pattern bytes; len in 5..1400. */
static size_t udp_len(unsigned seq) { return 5 + (seq * 97u) % 1396u; }

static void tx(void *ctx, tern_buf **frames, unsigned n)
{
    (void)ctx;
    dev->drv->tx_burst(dev, 0, frames, n);
}

static void udp_recv(tern_stack *s, tern_udp *sock, void *user,
                     const tern_udp_meta *m, tern_buf *buf,
                     const uint8_t *data, size_t len)
{
    (void)sock;
    (void)user;
    (void)buf;
    if (o.serve && !o.udp_sink) {
        tern_udp_send(s, m->dst_port, &m->src, m->src_port, data, len);
        return;
    }
    if (len < 5) {
        udp_bad++;
        return;
    }
    unsigned seq = (unsigned)data[0] << 24 | (unsigned)data[1] << 16 |
                   (unsigned)data[2] << 8 | data[3];
    bool ok = seq < MAX_UDP && len == udp_len(seq);
    for (size_t i = 4; ok && i < len; i++)
        ok = data[i] == pat(seq, i);
    if (!ok) {
        udp_bad++;
        return;
    }
    if (!udp_seen[seq]) {
        udp_seen[seq] = 1;
        udp_ok++;
    }
}

static void udp_send_one(unsigned seq)
{
    uint8_t b[1400];
    size_t len = udp_len(seq);
    b[0] = (uint8_t)(seq >> 24);
    b[1] = (uint8_t)(seq >> 16);
    b[2] = (uint8_t)(seq >> 8);
    b[3] = (uint8_t)seq;
    for (size_t i = 4; i < len; i++)
        b[i] = pat(seq, i);
    tern_addr peer = tern_addr_v4(o.peer);
    if (tern_udp_send(st, o.udp_port, &peer, o.udp_port, b, len) == 0)
        udp_sent++;
}

/* ---- TCP ---- */

static void *tcp_accepted(tern_stack *s, tern_conn *c, void *lu)
{
    (void)s;
    (void)c;
    (void)lu;
    tcp_served++;
    return NULL;
}

static void tcp_send_req(void)
{
    for (unsigned i = 0; i < o.size; i++)
        tc_req[i] = pat(tc_round, i);
    tc_got = 0;
    tc_t0 = now_ns();
    long n = tern_tcp_send(st, tc, tc_req, o.size);
    if (n != (long)o.size)
        tc_bad++;
}

static size_t tcp_recv(tern_stack *s, tern_conn *c, void *user, tern_buf *buf,
                       const uint8_t *data, size_t len)
{
    (void)buf;
    (void)user;
    if (c != tc) { /* server side: echo */
        long n = tern_tcp_send(s, c, data, len);
        return n > 0 ? (size_t)n : 0;
    }
    for (size_t i = 0; i < len; i++) {
        if (tc_got + i >= o.size || data[i] != pat(tc_round, tc_got + i))
            tc_bad++;
    }
    tc_got += len;
    if (tc_got >= o.size) {
        tc_rtt_sum += now_ns() - tc_t0;
        tc_round++;
        if (tc_round < o.tcp)
            tcp_send_req();
        else
            tern_tcp_close(s, c);
    }
    return len;
}

static void tcp_connected(tern_stack *s, tern_conn *c, void *u)
{
    (void)s;
    (void)u;
    if (c == tc) {
        tc_up = true;
        tcp_send_req();
    }
}

static void tcp_peer_closed(tern_stack *s, tern_conn *c, void *u)
{
    (void)u;
    if (c != tc)
        tern_tcp_close(s, c);
}

static void tcp_closed(tern_stack *s, tern_conn *c, void *u, int reason)
{
    (void)s;
    (void)u;
    if (c != tc)
        return;
    tc = NULL; /* the handle may be reused by the next connection */
    if (reason == TERN_CLOSE_REFUSED && tc_round == 0 && tc_retries < 50) {
        tc_retries++; /* the peer is not listening yet: try again */
        return;
    }
    tc_closed = true;
    if (reason != TERN_CLOSE_NORMAL && tc_round < o.tcp)
        tc_bad++;
}

static void usage(void)
{
    fprintf(stderr, "usage: dpdk_peer --iface SPEC --ip IP [--peer IP] "
                    "[--serve] [--ping N] [--udp N] [--udp-sink N] [--tcp N] "
                    "[--size B] [--eal ARGS] [--extra OPTS] [--seconds S] "
                    "[--ready FILE] [--go FILE] [--done FILE] [--hold] "
                    "[--queues N] [--udp-port P] [--tcp-port P] [--quiet]\n");
    exit(2);
}

static void parse(int argc, char **argv)
{
    static const struct option lo[] = {
        {"iface", 1, 0, 'i'}, {"ip", 1, 0, 'a'},     {"peer", 1, 0, 'p'},
        {"serve", 0, 0, 's'}, {"ping", 1, 0, 'P'},   {"udp", 1, 0, 'u'},
        {"udp-sink", 1, 0, 'k'}, {"tcp", 1, 0, 't'}, {"size", 1, 0, 'z'},
        {"eal", 1, 0, 'e'},   {"extra", 1, 0, 'x'},  {"seconds", 1, 0, 'S'},
        {"ready", 1, 0, 'r'}, {"quiet", 0, 0, 'q'},  {"queues", 1, 0, 'Q'},
        {"udp-port", 1, 0, 'U'}, {"tcp-port", 1, 0, 'T'}, {"go", 1, 0, 'g'}, {"done", 1, 0, 'd'},
        {"hold", 0, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'i': o.iface = optarg; break;
        case 'a': if (!tern_ip4_parse(optarg, &o.ip)) usage(); break;
        case 'p': if (!tern_ip4_parse(optarg, &o.peer)) usage(); break;
        case 's': o.serve = true; break;
        case 'P': o.ping = (unsigned)atoi(optarg); break;
        case 'u': o.udp = (unsigned)atoi(optarg); break;
        case 'k': o.udp_sink = (unsigned)atoi(optarg); break;
        case 't': o.tcp = (unsigned)atoi(optarg); break;
        case 'z': o.size = (unsigned)atoi(optarg); break;
        case 'e': o.eal = optarg; break;
        case 'x': o.extra = optarg; break;
        case 'S': o.seconds = (unsigned)atoi(optarg); break;
        case 'r': o.ready = optarg; break;
        case 'q': o.quiet = true; break;
        case 'g': o.go = optarg; break;
        case 'd': o.done = optarg; break;
        case 'h': o.hold = true; break;
        case 'Q': o.queues = (unsigned)atoi(optarg); break;
        case 'U': o.udp_port = (uint16_t)atoi(optarg); break;
        case 'T': o.tcp_port = (uint16_t)atoi(optarg); break;
        default: usage();
        }
    }
    if (!o.ip || ((o.ping || o.udp || o.tcp) && !o.peer) || o.udp > MAX_UDP ||
        o.udp_sink > MAX_UDP || o.size == 0 || o.size > MAX_SIZE ||
        o.queues == 0)
        usage();
}

int main(int argc, char **argv)
{
    parse(argc, argv);
#ifndef TERN_HAVE_DPDK
    printf("SKIP: tern was built without DPDK\n");
    return SKIP;
#else
    signal(SIGINT, on_sig);
    signal(SIGTERM, on_sig);
    char extra[2048];
    snprintf(extra, sizeof extra, "%s%s%s%s", o.extra ? o.extra : "",
             o.extra && o.eal ? "," : "", o.eal ? "eal=" : "",
             o.eal ? o.eal : "");
    tern_dev_args a = {.iface = o.iface, .queues = o.queues,
                       .extra = extra[0] ? extra : NULL};
    char err[512] = "";
    dev = tern_driver_dpdk.open(&a, err, sizeof err);
    if (!dev) {
        fprintf(stderr, "dpdk_peer: %s\n", err);
        if (strstr(err, "EAL init failed") && geteuid() != 0) {
            printf("SKIP: DPDK cannot be initialised here (not root)\n");
            return SKIP;
        }
        if (strstr(err, "EAL init failed")) {
            printf("SKIP: DPDK EAL cannot be initialised here: %s\n", err);
            return SKIP;
        }
        return 1;
    }
    if (!o.quiet) {
        char ip[16];
        printf("dpdk_peer: port %u mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u "
               "caps 0x%x ip %s\n", tern_dpdk_port(dev), dev->mac[0],
               dev->mac[1], dev->mac[2], dev->mac[3], dev->mac[4],
               dev->mac[5], dev->mtu, dev->caps, tern_ip4_format(o.ip, ip));
    }
    tern_config cfg;
    tern_config_defaults(&cfg);
    memcpy(cfg.mac, dev->mac, 6);
    cfg.ip = o.ip;
    cfg.prefix_len = 24;
    cfg.mtu = dev->mtu;
    cfg.caps = dev->caps;
    cfg.buf_ops = tern_dev_buf_ops(dev, 0);
    cfg.tx = tx;
    for (unsigned i = 0; i < 16; i++)
        cfg.secret[i] = (uint8_t)(rand() ^ getpid() ^ (int)i);
    cfg.cb.udp_recv = udp_recv;
    cfg.cb.accepted = tcp_accepted;
    cfg.cb.connected = tcp_connected;
    cfg.cb.recv = tcp_recv;
    cfg.cb.peer_closed = tcp_peer_closed;
    cfg.cb.closed = tcp_closed;
    size_t sz = tern_stack_size(&cfg);
    sz = (sz + TERN_STACK_ALIGN - 1) / TERN_STACK_ALIGN * TERN_STACK_ALIGN;
    void *mem = aligned_alloc(TERN_STACK_ALIGN, sz);
    memset(mem, 0, sz);
    int e = 0;
    st = tern_stack_init(mem, sz, &cfg, &e);
    if (!st) {
        fprintf(stderr, "dpdk_peer: tern_stack_init: error %d\n", e);
        return 1;
    }
    udp_seen = calloc(MAX_UDP, 1);
    tc_req = malloc(o.size);
    if ((o.serve || o.udp || o.udp_sink) &&
        !tern_udp_bind(st, o.udp_port, NULL, &e)) {
        fprintf(stderr, "dpdk_peer: udp bind: %d\n", e);
        return 1;
    }
    if (o.serve && tern_tcp_listen(st, o.tcp_port, NULL) != 0)
        fprintf(stderr, "dpdk_peer: tcp listen failed (TCP not built?)\n");
    if (o.ready) {
        FILE *f = fopen(o.ready, "w");
        if (f)
            fclose(f);
    }

    const bool client = o.ping || o.udp || o.tcp || o.udp_sink;
    const uint64_t t_start = now_ns();
    const uint64_t t_end = t_start + (uint64_t)o.seconds * TERN_NS_PER_SEC;
    uint64_t next_ping = t_start, t_done = 0;
    unsigned pings_sent = 0;
    uint64_t ping_t0 = 0, ping_first_reply = 0;
    const tern_counters *ctr = tern_get_counters(st);
    bool link_seen = false, tcp_started = false;
    tern_buf *frames[32];
    int rc = 1;
    while (!stop) {
        uint64_t now = now_ns();
        unsigned n = dev->drv->rx_burst(dev, 0, frames, 32);
        if (n)
            tern_input(st, frames, n, now);
        if (!link_seen && tern_dpdk_link_up(dev) &&
            (!o.go || access(o.go, F_OK) == 0))
            link_seen = true;
        if (link_seen && o.ping && pings_sent < o.ping && now >= next_ping) {
            if (!ping_t0)
                ping_t0 = now;
            tern_addr peer = tern_addr_v4(o.peer);
            if (tern_icmp_echo(st, &peer, 0x7e57, (uint16_t)pings_sent,
                               "tern-dpdk", 9) == 0)
                pings_sent++;
            next_ping = now + 10 * TERN_NS_PER_MS;
        }
        if (o.ping && !ping_first_reply && ctr->icmp_echo_reply_in)
            ping_first_reply = now;
        /* UDP: at most 32 datagrams unanswered (the first ones wait in
         * the stack's ARP queue). */
        if (link_seen && o.udp && udp_sent < o.udp && udp_sent - udp_ok < 32)
            udp_send_one(udp_sent);
        if (tcp_started && !tc && !tc_closed && now >= tc_retry_at) {
            tcp_started = false; /* refused: reconnect */
        }
        if (link_seen && o.tcp && !tcp_started &&
            (!o.ping || ctr->icmp_echo_reply_in) && now >= tc_retry_at) {
            tc_retry_at = now + 100 * TERN_NS_PER_MS;
            tern_addr peer = tern_addr_v4(o.peer);
            tc = tern_tcp_connect(st, &peer, o.tcp_port, 0, NULL, &e);
            if (!tc) {
                fprintf(stderr, "dpdk_peer: tcp connect: %d\n", e);
                break;
            }
            tcp_started = true;
        }
        tern_poll(st, now);
        bool done = client &&
                    (!o.ping || ctr->icmp_echo_reply_in >= o.ping) &&
                    (!o.udp || udp_ok >= o.udp) &&
                    (!o.udp_sink || udp_ok >= o.udp_sink) &&
                    (!o.tcp || (tc_round >= o.tcp && tc_closed));
        if (done && !t_done) {
            t_done = now;
            rc = (udp_bad || tc_bad) ? 1 : 0;
            tern_flush(st); /* all sent before anyone is told */
            if (o.done) {
                FILE *f = fopen(o.done, "w");
                if (f)
                    fclose(f);
            }
            if (o.hold) {
                /* the port stays open, unpolled, until a signal */
                const struct timespec tick = {0, 10 * 1000 * 1000};
                while (!stop)
                    nanosleep(&tick, NULL);
                break;
            }
            /* linger so the peer's last replies / FIN-ACKs get answered */
            if (!o.serve)
                break;
        }
        if (now >= t_end) {
            if (!client)
                rc = 0;
            break;
        }
    }
    if (!client && stop)
        rc = 0; /* a server stopped by a signal did its job */
    if (client && !t_done)
        fprintf(stderr, "dpdk_peer: client roles not complete\n");
    tern_flush(st);
    uint64_t el = (t_done ? t_done : now_ns()) - t_start;
    printf("result: ok=%d elapsed_ms=%.1f link=%d pings=%u/%u replies=%llu "
           "udp_sent=%u udp_ok=%u udp_bad=%u tcp_rounds=%u/%u tcp_bad=%u "
           "tcp_served=%u", rc == 0, el / 1e6, link_seen, pings_sent, o.ping,
           (unsigned long long)ctr->icmp_echo_reply_in, udp_sent, udp_ok,
           udp_bad, tc_round, o.tcp, tc_bad, tcp_served);
    if (o.tcp && tc_round)
        printf(" tcp_rtt_us=%.1f tcp_rps=%.0f",
               tc_rtt_sum / 1e3 / tc_round,
               tc_round / ((tc_rtt_sum ? tc_rtt_sum : 1) / 1e9));
    printf("\n");
    if (!o.quiet) {
        tern_dpdk_stats ds;
        tern_dpdk_get_stats(dev, &ds);
        printf("driver: rx=%llu tx=%llu rx_drops=%llu tx_drops=%llu "
               "tx_direct=%llu tx_cloned=%llu tx_copied=%llu rx_copied=%llu "
               "imissed=%llu\n",
               (unsigned long long)dev->rx_frames,
               (unsigned long long)dev->tx_frames,
               (unsigned long long)dev->rx_drops,
               (unsigned long long)dev->tx_drops,
               (unsigned long long)ds.tx_direct,
               (unsigned long long)ds.tx_cloned,
               (unsigned long long)ds.tx_copied,
               (unsigned long long)ds.rx_copied,
               (unsigned long long)ds.imissed);
        printf("stack:");
#define P(n) if (ctr->n) printf(" %s=%llu", #n, (unsigned long long)ctr->n);
        TERN_COUNTERS(P)
#undef P
        printf("\n");
    }
    tern_stack_fini(st);
    if (!o.quiet)
        printf("pool: %u of %u buffers in the stock after fini\n",
               tern_pool_available(dev->pools[0]),
               tern_pool_count(dev->pools[0]));
    dev->drv->close(dev);
    free(mem);
    return rc;
#endif
}
