/* stack_ping.c - a real tern stack on a Linux driver answers the kernel's
 * ping.
 *
 *     stack_ping DRIVER [COUNT [PING_OPTIONS]]
 *     stack_ping DRIVER udp SIZE
 *
 * Run inside the tern-side namespace of tools/netns.sh hosts (see
 * run_netns_test.sh). Opens DRIVER on IF_T, runs one stack instance as
 * IP_T/24 with the device's MAC, and has the kernel side run
 * `ping -c COUNT IP_T` (default 3, one every 0.2 s unless PING_OPTIONS says
 * otherwise, e.g. "-f -s 1400" floods): ARP and ICMP are answered by tern. Exits
 * 0 when ping succeeded and the stack counted the echoes, 77 when the driver
 * is not built or we are not root, 1 otherwise. Bounded: 20 s at most.
 *
 * With TERN_PING6=1 in the environment the stack also gets IP6_T/64 (and
 * its link-local address from the MAC), and the kernel side pings over
 * IPv6 instead: COUNT pings of tern's global address, 2 of 3,000 bytes
 * (fragmented both ways), 2 of its link-local address; then the kernel's
 * neighbor table must hold tern's MAC for both addresses, and tern must
 * have answered neighbor solicitations and finished DAD.
 *
 * With `udp SIZE`, a Python socket on the kernel side sends one UDP
 * datagram of SIZE bytes to IP_T port 7 instead (fragmented by the kernel
 * when over the MTU); tern reassembles it, gets it in cb.udp_recv (a chain
 * when over one buffer), and answers "LENGTH FNV1A32" of the bytes it got;
 * the peer checks both against what it sent. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>

#include "drvtest.h"
#include "tern.h"

static void dev_tx(void *ctx, tern_buf **frames, unsigned n)
{
    tern_dev *d = ctx;
    d->drv->tx_burst(d, 0, frames, n);
}

/* The UDP probe's peer: sends the datagram (byte i = (7 i + 3) mod 256)
 * until an answer comes, and checks it. */
static const char udp_peer_py[] =
    "import socket,sys\n"
    "ip,n=sys.argv[1],int(sys.argv[2])\n"
    "d=bytes((7*i+3)&255 for i in range(n))\n"
    "h=2166136261\n"
    "for b in d: h=((h^b)*16777619)&0xffffffff\n"
    "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
    "s.setsockopt(socket.IPPROTO_IP,10,0)\n"   /* IP_MTU_DISCOVER: DONT */
    "s.settimeout(1)\n"
    "for _ in range(10):\n"
    "    s.sendto(d,(ip,7))\n"
    "    try: r=s.recv(100).decode()\n"
    "    except socket.timeout: continue\n"
    "    want='%d %08x'%(n,h)\n"
    "    print('sent',want,'got',r)\n"
    "    sys.exit(0 if r==want else 1)\n"
    "print('no answer'); sys.exit(1)\n";

static uint8_t udp_got[65536];

static void on_udp(tern_stack *st, tern_udp *s, void *user,
                   const tern_udp_meta *meta, tern_buf *buf,
                   const uint8_t *data, size_t len)
{
    (void)s; (void)user;
    size_t n = tern_udp_copy(buf, data, len, udp_got, sizeof(udp_got));
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ udp_got[i]) * 16777619u;
    char msg[40];
    int m = snprintf(msg, sizeof(msg), "%zu %08x", n, h);
    tern_udp_send(st, 7, &meta->src, meta->src_port, msg, (size_t)m);
}

static void on_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "tern[%d]: %s\n", level, msg);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s afpacket|tap|afxdp [COUNT]\n", argv[0]);
        return 2;
    }
    const tern_driver *drv = dt_driver(argv[1]);
    if (!drv) {
        printf("SKIP: driver %s not built here\n", argv[1]);
        return DT_SKIP;
    }
    if (geteuid() != 0) {
        printf("SKIP: needs root\n");
        return DT_SKIP;
    }
    bool udp = argc > 3 && !strcmp(argv[2], "udp");
    int count = argc > 2 && !udp ? atoi(argv[2]) : 3;
    if (count < 1 || count > 100000)
        count = 3;
    int udp_size = udp ? atoi(argv[3]) : 0;
    if (udp && (udp_size < 1 || udp_size > 65507)) {
        fprintf(stderr, "stack_ping: udp SIZE is 1..65507\n");
        return 2;
    }
    const char *popts = argc > 3 ? argv[3] : "-i 0.2";
    dt_hosts h;
    if (!dt_hosts_load(&h))
        return 2;

    char err[256] = "";
    tern_dev_args a = {.iface = h.if_t, .queues = 1,
                       .extra = getenv("TERN_DRV_EXTRA")};
    tern_dev *d = drv->open(&a, err, sizeof(err));
    if (!d) {
        fprintf(stderr, "stack_ping: open %s: %s\n", argv[1], err);
        return 1;
    }

    tern_config cfg;
    tern_config_defaults(&cfg);
    memcpy(cfg.mac, d->mac, 6);
    cfg.ip = h.ip_t;
    cfg.prefix_len = 24;
    cfg.mtu = d->mtu;
    cfg.caps = d->caps;
    cfg.buf_ops = tern_dev_buf_ops(d, 0);
    cfg.tx = dev_tx;
    cfg.tx_ctx = d;
    cfg.log = on_log;
    cfg.cb.udp_recv = on_udp;
    cfg.log_level = 1;
    bool v6 = getenv("TERN_PING6") != NULL;
    const char *ip6_t = getenv("IP6_T");
    if (v6) {
        if (!ip6_t || inet_pton(AF_INET6, ip6_t, cfg.ip6[0]) != 1) {
            fprintf(stderr, "stack_ping: TERN_PING6 needs IP6_T (netns.sh)\n");
            d->drv->close(d);
            return 2;
        }
        cfg.ip6_prefix_len[0] = 64;
        cfg.n_ip6 = 1;
    }
    int rfd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (rfd >= 0) {
        if (read(rfd, cfg.secret, sizeof(cfg.secret)) < 0)
            cfg.secret[0] = 1;
        close(rfd);
    }
    size_t size = tern_stack_size(&cfg);
    void *mem = aligned_alloc(TERN_STACK_ALIGN,
                              (size + TERN_STACK_ALIGN - 1) /
                                  TERN_STACK_ALIGN * TERN_STACK_ALIGN);
    int serr = 0;
    tern_stack *st = mem ? tern_stack_init(mem, size, &cfg, &serr) : NULL;
    if (!st) {
        fprintf(stderr, "stack_ping: tern_stack_init failed (%d)\n", serr);
        d->drv->close(d);
        return 1;
    }

    if (udp && !tern_udp_bind(st, 7, NULL, NULL)) {
        fprintf(stderr, "stack_ping: cannot bind UDP port 7\n");
        d->drv->close(d);
        return 1;
    }
    char ip_t[16];
    dt_fmt_ip(h.ip_t, ip_t);
    /* tern's link-local address: fe80:: and the MAC as EUI-64 */
    char ll[64];
    snprintf(ll, sizeof ll, "fe80::%02x%02x:%02xff:fe%02x:%02x%02x%%%s",
             d->mac[0] ^ 2, d->mac[1], d->mac[2], d->mac[3], d->mac[4],
             d->mac[5], h.if_k);
    char py[64];
    snprintf(py, sizeof(py), "/tmp/stack_ping_udp_%d.py", (int)getpid());
    if (udp) {
        FILE *pf = fopen(py, "w");
        if (!pf || fputs(udp_peer_py, pf) < 0 || fclose(pf) != 0) {
            fprintf(stderr, "stack_ping: cannot write %s\n", py);
            d->drv->close(d);
            return 1;
        }
    }
    pid_t ping = udp ? dt_spawn("exec ip netns exec %s python3 %s %s %d",
                                h.ns_k, py, ip_t, udp_size)
               : v6 ? dt_spawn("ip netns exec %s ping -6 -n -q -c %d %s -W 2 "
                               "-w 15 %s && ip netns exec %s ping -6 -n -q "
                               "-c 2 -s 3000 -W 2 -w 15 %s && ip netns exec "
                               "%s ping -6 -n -q -c 2 -W 2 -w 15 %s",
                               h.ns_k, count, popts, ip6_t, h.ns_k, ip6_t,
                               h.ns_k, ll)
                    : dt_spawn("exec ip netns exec %s ping -n -q -c %d %s -W 2 "
                               "-w 15 %s",
                               h.ns_k, count, popts, ip_t);
    if (ping <= 0) {
        fprintf(stderr, "stack_ping: cannot start ping\n");
        d->drv->close(d);
        return 1;
    }
    int fd = d->drv->wait_fd(d, 0);
    uint64_t end = dt_now_ns() + 20ull * TERN_NS_PER_SEC;
    int ping_rc = -2;
    tern_buf *frames[32];
    while (ping_rc == -2 && dt_now_ns() < end) {
        uint64_t now = dt_now_ns();
        unsigned n = d->drv->rx_burst(d, 0, frames, 32);
        if (n)
            tern_input(st, frames, n, now);
        uint64_t next = tern_poll(st, now);
        if (!n) {
            int ms = 10;
            if (next != TERN_NEVER && next > now && (next - now) / 1000000 < 10)
                ms = (int)((next - now) / 1000000);
            struct pollfd p = {.fd = fd, .events = POLLIN};
            poll(&p, fd >= 0 ? 1 : 0, ms);
        }
        ping_rc = dt_reap(ping, false);
    }
    if (ping_rc == -2) {
        fprintf(stderr, "stack_ping: ping did not finish in time\n");
        dt_kill(ping);
    }
    if (udp)
        unlink(py);
    const tern_counters *c = tern_get_counters(st);
    printf("stack_ping %s: ping exit %d; arp_request_in %" PRIu64
           " arp_reply_out %" PRIu64 " icmp_echo_in %" PRIu64
           " icmp_echo_reply_out %" PRIu64 "; driver rx %" PRIu64
           " tx %" PRIu64 " tx_drops %" PRIu64 "\n",
           argv[1], ping_rc, c->arp_request_in, c->arp_reply_out,
           c->icmp_echo_in, c->icmp_echo_reply_out, d->rx_frames,
           d->tx_frames, d->tx_drops);
    if (udp)
        printf("stack_ping %s: udp %d bytes: ip_reasm_ok %" PRIu64
               " udp_in %" PRIu64 " udp_drop_csum %" PRIu64
               " ip_drop_frag_too_big %" PRIu64 "\n", argv[1], udp_size,
               c->ip_reasm_ok, c->udp_in, c->udp_drop_csum,
               c->ip_drop_frag_too_big);
    bool ok = ping_rc == 0 && c->arp_reply_out >= 1 &&
              (udp ? c->udp_in >= 1
                   : c->icmp_echo_reply_out >= (uint64_t)count);
    if (v6) {
        /* the kernel learned tern's MAC for both addresses */
        char neigh[4096] = "", mac[18];
        dt_fmt_mac(d->mac, mac);
        dt_sh_out(neigh, sizeof neigh, "ip netns exec %s ip -6 neigh show dev %s",
                  h.ns_k, h.if_k);
        unsigned entries = 0;
        for (const char *p = neigh; (p = strstr(p, mac)); p++)
            entries++;
        printf("stack_ping %s IPv6: echo_in %" PRIu64 " echo_reply_out %" PRIu64
               " reasm_ok %" PRIu64 " frag_out %" PRIu64 " ns_in %" PRIu64
               " na_out %" PRIu64 " dad_ok %" PRIu64 "; kernel neighbors with "
               "tern's MAC: %u\n%s",
               argv[1], c->icmp6_echo_in, c->icmp6_echo_reply_out,
               c->ip6_reasm_ok, c->ip6_frag_out, c->nd_ns_in, c->nd_na_out,
               c->nd_dad_ok, entries, neigh);
        ok = ping_rc == 0 && c->icmp6_echo_reply_out >= (uint64_t)count + 4 &&
             c->ip6_reasm_ok >= 2 && c->ip6_frag_out >= 2 && c->nd_na_out >= 2 &&
             c->nd_dad_ok == 2 && entries >= 2;
    }
    d->drv->close(d);
    free(mem);
    return ok ? 0 : 1;
}
