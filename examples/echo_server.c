/* echo_server.c - a TCP echo server on a real NIC with libtern-linux's
 * runtime: AF_PACKET or AF_XDP, one pinned thread per CPU, each with its
 * own stack, device queue and buffers. Needs root (raw access to the NIC).
 *
 *     cc -std=c11 echo_server.c $(pkg-config --cflags --libs tern-linux) -o echo_server
 *     sudo ./echo_server afpacket eth1 198.18.0.1/24 [2001:db8::1/64] [CPU...]
 *
 * Then from another host on that link: `nc 198.18.0.1 7` (or, with the
 * IPv6 address, `nc 2001:db8::1 7`). Ctrl-C stops.
 * The address must be one of the link's subnet that the kernel does not
 * use itself: tern answers ARP for it on the interface (and Neighbor
 * Solicitations for the IPv6 one: turn the kernel's IPv6 off on that
 * interface, net.ipv6.conf.eth1.disable_ipv6=1, or it answers for the
 * same link-local address). Without CPUs, it
 * runs one thread on the first CPU it may use (taskset works); with
 * several, give the NIC that many queues (ethtool -L eth1 combined N).
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tern_linux.h>

#define PORT 7
#define RCV_BUF 65536   /* receive window: also what a connection may keep */

/* A connection's bytes received but not yet sent back: tern_tcp_send takes
 * fewer bytes than offered when the send buffer is full (a slow reader).
 * Only what was sent is consumed, so the window holds the peer back. */
typedef struct echo {
    uint8_t pend[RCV_BUF];
    size_t len;
} echo;

static void *on_accepted(tern_stack *st, tern_conn *c, void *listener_user)
{
    (void)st, (void)c, (void)listener_user;
    return calloc(1, sizeof(echo));   /* NULL: the connection gets no state */
}

static size_t on_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *buf,
                      const uint8_t *data, size_t len)
{
    echo *e = user;
    (void)buf;
    if (!e)
        return len;                   /* no memory for it: discard */
    long sent = e->len ? 0 : tern_tcp_send(st, c, data, len);
    if (sent < 0)
        sent = 0;
    memcpy(e->pend + e->len, data + sent, len - (size_t)sent);
    e->len += len - (size_t)sent;
    return (size_t)sent;
}

static void on_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    echo *e = user;
    (void)bytes;
    long sent = e && e->len ? tern_tcp_send(st, c, e->pend, e->len) : 0;
    if (sent <= 0)
        return;
    memmove(e->pend, e->pend + sent, e->len - (size_t)sent);
    e->len -= (size_t)sent;
    tern_tcp_consumed(st, c, (size_t)sent);
}

static void on_peer_closed(tern_stack *st, tern_conn *c, void *user)
{
    (void)user;
    tern_tcp_close(st, c);            /* FIN after what is queued */
}

static void on_closed(tern_stack *st, tern_conn *c, void *user, int reason)
{
    (void)st, (void)c, (void)reason;
    free(user);
}

/* The optional IPv6 address from the command line. */
typedef struct addr6 {
    uint8_t ip6[16];
    uint8_t prefix_len;
    bool set;
} addr6;

/* Runtime callbacks: the stack of each thread. */
static void configure(void *app, unsigned core, tern_config *cfg)
{
    const addr6 *a6 = app;
    (void)core;
    if (a6->set) {
        memcpy(cfg->ip6[0], a6->ip6, 16);
        cfg->ip6_prefix_len[0] = a6->prefix_len;
        cfg->n_ip6 = 1;
    }
    cfg->rcv_buf = RCV_BUF;
    cfg->cb.accepted = on_accepted;
    cfg->cb.recv = on_recv;
    cfg->cb.acked = on_acked;
    cfg->cb.peer_closed = on_peer_closed;
    cfg->cb.closed = on_closed;
}

static int start(void *app, unsigned core, tern_stack *st)
{
    (void)app;
    int err = tern_tcp_listen(st, PORT, NULL);
    if (err)
        fprintf(stderr, "echo_server: core %u: listen: %s\n", core,
                tern_strerror(err));
    return err;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s DRIVER IFACE ADDR/PREFIX [ADDR6/PREFIX] "
                "[CPU...]\n"
                "drivers built: %s\n", argv[0], tern_driver_list());
        return 2;
    }
    tern_rt_config rc;
    tern_rt_config_defaults(&rc);
    rc.driver = argv[1];
    rc.iface = argv[2];
    char addr[32];
    snprintf(addr, sizeof addr, "%s", argv[3]);
    char *slash = strchr(addr, '/');
    rc.prefix_len = slash ? (uint8_t)atoi(slash + 1) : 24;
    if (slash)
        *slash = '\0';
    if (!tern_ip4_parse(addr, &rc.ip)) {
        fprintf(stderr, "echo_server: bad address '%s'\n", argv[3]);
        return 2;
    }
    /* An IPv6 address (it has a ':') may follow. */
    static addr6 a6;
    int first_cpu = 4;
    if (argc > 4 && strchr(argv[4], ':')) {
        char text[64];
        snprintf(text, sizeof text, "%s", argv[4]);
        char *s6 = strchr(text, '/');
        a6.prefix_len = s6 ? (uint8_t)atoi(s6 + 1) : 64;
        if (s6)
            *s6 = '\0';
        tern_addr t;
        if (!tern_addr_parse(text, &t) || t.family != TERN_AF_INET6 ||
            a6.prefix_len < 1 || a6.prefix_len > 128) {
            fprintf(stderr, "echo_server: bad IPv6 address '%s'\n", argv[4]);
            return 2;
        }
        memcpy(a6.ip6, t.u.v6, 16);
        a6.set = true;
        first_cpu = 5;
    }
    rc.app = &a6;
    unsigned cpus[64];
    for (int i = first_cpu; i < argc && rc.ncpus < 64; i++)
        cpus[rc.ncpus++] = (unsigned)atoi(argv[i]);
    rc.cpus = rc.ncpus ? cpus : NULL;
    rc.configure = configure;
    rc.start = start;
    printf("echo_server: serving %s:%d%s%s on %s %s (%u thread%s); Ctrl-C "
           "stops\n", addr, PORT, a6.set ? " and " : "",
           a6.set ? argv[4] : "", rc.driver, rc.iface,
           rc.ncpus ? rc.ncpus : 1, rc.ncpus > 1 ? "s" : "");
    fflush(stdout);
    char err[256];
    if (tern_rt_run(&rc, err, sizeof err)) {
        fprintf(stderr, "echo_server: %s\n", err);
        return 1;
    }
    return 0;
}
