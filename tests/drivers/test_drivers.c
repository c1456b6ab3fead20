/* test_drivers.c - behaviour tests of one Linux driver (argv[1]: afpacket,
 * tap or afxdp) against the Linux kernel on the test hosts of
 * tools/netns.sh: run as
 *     tools/netns.sh run [--tap] --queues 2 -- \
 *         sh -c 'exec ip netns exec "$NS_T" test_drivers afpacket'
 * (tests/drivers/run_netns_test.sh does that). Every frame is built and
 * checked by hand here: no stack is involved.
 *
 *   open_info      MAC/MTU from the interface, honest capabilities
 *                  (afpacket: transmit offloads, unless tso=0)
 *   open_errors    a clear one-line error for a missing interface
 *   rx_arp         the kernel side pings us: its ARP request arrives
 *   tx_arp_reply   our hand-built ARP reply lands in the kernel's neighbours
 *   icmp_echo      our echo request to the kernel side is answered
 *   partial_csum   afpacket completes a checksum the kernel left partial
 *   rx_sum_on_copy afpacket copies a long frame with its sum (RX_SUM)
 *   rx_per_frame   afpacket hands each frame over as soon as the kernel has
 *                  written it (no block held back for a retire timer), poll
 *                  says so, and a sleeping poll() wakes for one frame
 *   vlan_dropped   a frame tagged VLAN 5 is dropped, counted in
 *                  rx_drop_vlan; a priority-tagged one arrives untagged
 *   dry_pool       with every pool buffer held, the driver still reads
 *                  each frame (dropping it, counted); AF_XDP keeps its
 *                  fill ring from running dry and passes short frames;
 *                  input resumes when the pool is back
 *   two_queues     two queues (fanout / multi-queue tap / two XSKs) work;
 *                  needs hosts made with --queues 2 (skipped otherwise)
 *
 * AF_XDP binds queue i of the device to rx queue i of the interface, so its
 * one-queue tests run on one-queue hosts (on a two-queue veth the kernel's
 * frames may arrive on rx queue 1, which a one-queue device never sees).
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "drvtest.h"

static const char *drv_name;
static const tern_driver *drv;
static dt_hosts hosts;
static unsigned env_queues = 1;

typedef struct fixture {
    tern_dev *d;
    pid_t ping;
} fixture;

static tern_dev *open_dev(unsigned queues, char *err, size_t errlen)
{
    tern_dev_args a = {
        .iface = hosts.if_t,
        .queues = queues,
        .ring_size = 512,
        .pool_size = 2048,
        .extra = getenv("TERN_DRV_EXTRA"),
    };
    return drv->open(&a, err, errlen);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    char err[256] = "";
    fx->d = open_dev(1, err, sizeof(err));
    if (!fx->d) {
        fprintf(stderr, "open %s on %s: %s\n", drv_name, hosts.if_t, err);
        free(fx);
        return -1;
    }
    /* No neighbour entry for us left from an earlier test. */
    dt_sh("ip -n %s neigh del %s dev %s >/dev/null 2>&1", hosts.ns_k,
          getenv("IP_T"), hosts.if_k);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    if (!fx)
        return 0;
    dt_kill(fx->ping);
    if (fx->d)
        fx->d->drv->close(fx->d);
    dt_sh("ip -n %s neigh del %s dev %s >/dev/null 2>&1", hosts.ns_k,
          getenv("IP_T"), hosts.if_k);
    free(fx);
    return 0;
}

static void start_ping(fixture *fx)
{
    fx->ping = dt_spawn("exec ip netns exec %s ping -n -q -c 40 -i 0.2 -W 1 "
                        "%s >/dev/null 2>&1", hosts.ns_k, getenv("IP_T"));
    assert_true(fx->ping > 0);
}

static bool is_arp_request_for_us(const tern_buf *b)
{
    const uint8_t *f = b->data;
    if (b->len < 42 || get16(f + 12) != 0x0806)
        return false;
    const uint8_t *a = f + 14;
    return get16(a) == 1 && get16(a + 2) == 0x0800 && a[4] == 6 && a[5] == 4 &&
           get16(a + 6) == 1 && memcmp(a + 8, hosts.mac_k, 6) == 0 &&
           get32(a + 14) == hosts.ip_k && get32(a + 24) == hosts.ip_t;
}

/* Receive on every queue until an ARP request for IP_T arrives or the
 * deadline passes. Returns the queue it came on, or -1. */
static int wait_arp_request(tern_dev *d, unsigned timeout_ms)
{
    uint64_t end = dt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    tern_buf *frames[32];
    while (dt_now_ns() < end) {
        for (unsigned q = 0; q < d->queues; q++) {
            unsigned n = d->drv->rx_burst(d, q, frames, 32);
            int found = -1;
            for (unsigned i = 0; i < n; i++) {
                if (found < 0 && is_arp_request_for_us(frames[i]))
                    found = (int)q;
                tern_pool_release(d->pools[q], frames[i]);
            }
            if (found >= 0)
                return found;
        }
        dt_wait(d, 0, d->queues > 1 ? 20 : 100);
    }
    return -1;
}

static void send_arp_reply(tern_dev *d, unsigned q)
{
    uint8_t f[64];
    size_t len = dt_arp(f, 2, hosts.mac_k, d->mac, hosts.ip_t, hosts.mac_k,
                        hosts.ip_k);
    assert_true(dt_send(d, q, f, len));
}

/* Poll the kernel's neighbour table until IP_T maps to mac (bounded). */
static bool kernel_knows_mac(const uint8_t mac[6], unsigned timeout_ms)
{
    char want[18], out[512];
    dt_fmt_mac(mac, want);
    uint64_t end = dt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    do {
        dt_sh_out(out, sizeof(out), "ip -n %s neigh show %s dev %s",
                  hosts.ns_k, getenv("IP_T"), hosts.if_k);
        if (strstr(out, want) && !strstr(out, "FAILED") &&
            !strstr(out, "INCOMPLETE"))
            return true;
        usleep(50 * 1000);
    } while (dt_now_ns() < end);
    fprintf(stderr, "kernel neighbour entry: '%s' (want lladdr %s)\n", out,
            want);
    return false;
}

/* ---- tests ---- */

static void open_info(void **state)
{
    fixture *fx = *state;
    tern_dev *d = fx->d;
    assert_ptr_equal(d->drv, drv);
    assert_int_equal(d->queues, 1);
    assert_non_null(d->pools);
    assert_non_null(d->pools[0]);
    const char *mtu = getenv("MTU");
    assert_int_equal(d->mtu, mtu ? atoi(mtu) : 1500);
    /* None of these drivers verifies checksums; afpacket has the kernel
     * segment TSO frames and sum them (test_afpacket_tso.c), unless
     * tso=0. */
    const char *extra = getenv("TERN_DRV_EXTRA");
    if (!strcmp(drv_name, "afpacket") && !(extra && strstr(extra, "tso=0")))
        assert_int_equal(d->caps, TERN_CAP_TSO | TERN_CAP_SG |
                                      TERN_CAP_TX_L4_CSUM);
    else
        assert_int_equal(d->caps, 0);
    static const uint8_t zero[6];
    assert_memory_not_equal(d->mac, zero, 6);
    assert_false(d->mac[0] & 1);
    uint8_t mac_t[6];
    if (!strcmp(hosts.mode, "tap")) {
        /* The tap's own MAC is the kernel's; tern has another. */
        assert_memory_not_equal(d->mac, hosts.mac_k, 6);
    } else {
        assert_true(dt_parse_mac(getenv("MAC_T"), mac_t));
        assert_memory_equal(d->mac, mac_t, 6);
    }
    assert_true(d->drv->wait_fd(d, 0) >= 0);
}

static void open_errors(void **state)
{
    (void)state;
    char err[256] = "";
    tern_dev_args a = {.iface = "tern-nx0", .queues = 1};
    tern_dev *d;
    if (strcmp(drv_name, "tap") != 0) {
        d = drv->open(&a, err, sizeof(err));
        assert_null(d);
        assert_non_null(strstr(err, "no such interface"));
        assert_null(strchr(err, '\n'));
    }
    a.iface = "a-name-far-too-long-for-linux";
    err[0] = '\0';
    d = drv->open(&a, err, sizeof(err));
    assert_null(d);
    assert_true(strlen(err) > 0);
    a.iface = NULL;
    err[0] = '\0';
    assert_null(drv->open(&a, err, sizeof(err)));
    assert_true(strlen(err) > 0);
}

static void rx_arp(void **state)
{
    fixture *fx = *state;
    start_ping(fx);
    assert_int_equal(wait_arp_request(fx->d, 5000), 0);
    assert_true(fx->d->rx_frames > 0);
}

static void tx_arp_reply(void **state)
{
    fixture *fx = *state;
    start_ping(fx);
    assert_int_equal(wait_arp_request(fx->d, 5000), 0);
    send_arp_reply(fx->d, 0);
    assert_true(kernel_knows_mac(fx->d->mac, 3000));
    assert_true(fx->d->tx_frames >= 1);
}

static bool is_echo_reply(const tern_dev *d, const tern_buf *b, uint16_t id,
                          uint16_t seq, const uint8_t *data, size_t dlen)
{
    const uint8_t *f = b->data;
    if (b->len < 14 + 20 + 8 + dlen || get16(f + 12) != 0x0800)
        return false;
    if (memcmp(f, d->mac, 6) != 0)
        return false;
    const uint8_t *ip = f + 14;
    size_t ihl = (size_t)(ip[0] & 15) * 4;
    if ((ip[0] >> 4) != 4 || ip[9] != 1 || get32(ip + 12) != hosts.ip_k ||
        get32(ip + 16) != hosts.ip_t)
        return false;
    size_t tot = get16(ip + 2);
    const uint8_t *ic = ip + ihl;
    if (ic[0] != 0 || get16(ic + 4) != id || get16(ic + 6) != seq)
        return false;
    /* A complete frame with valid checksums, as a user-space stack needs. */
    assert_int_equal(dt_csum(ip, ihl), 0);
    assert_int_equal(dt_csum(ic, tot - ihl), 0);
    assert_int_equal(tot - ihl - 8, dlen);
    assert_memory_equal(ic + 8, data, dlen);
    return true;
}

static void icmp_echo(void **state)
{
    fixture *fx = *state;
    tern_dev *d = fx->d;
    char mac[18];
    dt_fmt_mac(d->mac, mac);
    /* The kernel must know where 198.18.0.2 is to answer. */
    assert_int_equal(dt_sh("ip -n %s neigh replace %s lladdr %s dev %s "
                           "nud permanent",
                           hosts.ns_k, getenv("IP_T"), mac, hosts.if_k),
                     0);
    uint8_t payload[56], f[128];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    const uint16_t id = 0x7e57;
    uint16_t seq = 0;
    bool got = false;
    uint64_t end = dt_now_ns() + 5000ull * 1000000ull, next_send = 0;
    tern_buf *frames[32];
    while (!got && dt_now_ns() < end) {
        if (dt_now_ns() >= next_send) {
            seq++;
            size_t len = dt_icmp_echo(f, 8, hosts.mac_k, d->mac, hosts.ip_t,
                                      hosts.ip_k, id, seq, payload,
                                      sizeof(payload));
            assert_true(dt_send(d, 0, f, len));
            next_send = dt_now_ns() + 500ull * 1000000ull;
        }
        dt_wait(d, 0, 50);
        unsigned n = d->drv->rx_burst(d, 0, frames, 32);
        for (unsigned i = 0; i < n; i++) {
            /* Any reply of ours counts (an earlier seq may come late). */
            for (uint16_t s = 1; s <= seq && !got; s++)
                got = is_echo_reply(d, frames[i], id, s, payload,
                                    sizeof(payload));
            tern_pool_release(d->pools[0], frames[i]);
        }
    }
    assert_true(got);
}

/* The afpacket-only tests need the kernel at the other end of a veth. */
static bool afpacket_on_veth(void)
{
    return !strcmp(drv_name, "afpacket") && !strcmp(hosts.mode, "veth");
}

/* The kernel side sends to IP_T at our MAC without asking ARP. */
static void kernel_neigh_to_us(const tern_dev *d)
{
    char mac[18];
    dt_fmt_mac(d->mac, mac);
    assert_int_equal(dt_sh("ip -n %s neigh replace %s lladdr %s dev %s "
                           "nud permanent", hosts.ns_k, getenv("IP_T"), mac,
                           hosts.if_k), 0);
}

/* The UDP datagram to port in frame b (IPv4, no options), or NULL. */
static const uint8_t *udp_to(const tern_buf *b, uint16_t port)
{
    const uint8_t *f = b->data, *ip = f + 14;
    if (b->len < 14 + 20 + 8 || get16(f + 12) != 0x0800 || ip[0] != 0x45 ||
        ip[9] != 17 || get16(ip + 20 + 2) != port)
        return NULL;
    return ip + 20;
}

/* Have the kernel side send `bytes` bytes of spaces to IP_T:port by UDP
 * every 500 ms, for 3 s at most, until a frame carrying one arrives: that
 * frame is checked by check; the others get check_other (may be NULL). */
static bool kernel_udp_until(tern_dev *d, uint16_t port, unsigned bytes,
                             void (*check)(const tern_buf *),
                             void (*check_other)(const tern_buf *))
{
    bool got = false;
    tern_buf *frames[32];
    uint64_t end = dt_now_ns() + 3000ull * 1000000ull, next_send = 0;
    while (!got && dt_now_ns() < end) {
        if (dt_now_ns() >= next_send) {
            dt_sh("ip netns exec %s bash -c 'printf %%%us x > "
                  "/dev/udp/%s/%u' >/dev/null 2>&1", hosts.ns_k, bytes,
                  getenv("IP_T"), (unsigned)port);
            next_send = dt_now_ns() + 500ull * 1000000ull;
        }
        dt_wait(d, 0, 50);
        unsigned n = d->drv->rx_burst(d, 0, frames, 32);
        for (unsigned i = 0; i < n; i++) {
            if (!got && udp_to(frames[i], port)) {
                check(frames[i]);
                got = true;
            } else if (check_other) {
                check_other(frames[i]);
            }
            tern_pool_release(d->pools[0], frames[i]);
        }
    }
    return got;
}

/* The UDP checksum of a datagram to port 9999 verifies. */
static void udp_sum_good(const tern_buf *b)
{
    const uint8_t *u = udp_to(b, 9999), *ip = b->data + 14;
    size_t ul = get16(u + 4);
    uint8_t ph[12 + 1500];
    assert_true(ul <= 1500 && 14 + 20 + ul <= b->len);
    memcpy(ph, ip + 12, 8);
    ph[8] = 0;
    ph[9] = 17;
    put16(ph + 10, (uint16_t)ul);
    memcpy(ph + 12, u, ul);
    assert_int_equal(dt_csum(ph, 12 + ul), 0);
}

/* afpacket: with tx checksum offload on at the kernel side, a UDP datagram
 * the kernel sends leaves with a partial checksum; the driver completes it. */
static void partial_csum(void **state)
{
    fixture *fx = *state;
    tern_dev *d = fx->d;
    if (!afpacket_on_veth()) {
        skip();
        return;
    }
    kernel_neigh_to_us(d);
    if (dt_sh("ip netns exec %s ethtool -K %s tx on >/dev/null 2>&1",
              hosts.ns_k, hosts.if_k) != 0) {
        skip();
        return;
    }
    bool got = kernel_udp_until(d, 9999, 17, udp_sum_good, NULL);
    dt_sh("ip netns exec %s ethtool -K %s tx off >/dev/null 2>&1", hosts.ns_k,
          hosts.if_k);
    assert_true(got);
}

/* A frame carries the driver's sum of its bytes after the Ethernet header. */
static void has_rx_sum(const tern_buf *b)
{
    assert_true(b->len >= 14 + 20 + 8 + 1000);
    assert_int_equal(b->flags & TERN_BUF_RX_SUM, TERN_BUF_RX_SUM);
    assert_int_equal(b->rx_sum, tern_csum_fold(tern_csum_partial(
                                    b->data + 14, b->len - 14, 0)));
}

/* A short frame does not (the stack sums it). */
static void short_has_no_rx_sum(const tern_buf *b)
{
    if (b->len <= 256)
        assert_int_equal(b->flags & TERN_BUF_RX_SUM, 0);
}

/* afpacket: a long frame is copied with its sum (RX_SUM: the bytes after
 * the Ethernet header), which the stack's checksum test then uses. */
static void rx_sum_on_copy(void **state)
{
    fixture *fx = *state;
    tern_dev *d = fx->d;
    if (!afpacket_on_veth()) {
        skip();
        return;
    }
    kernel_neigh_to_us(d);
    assert_true(kernel_udp_until(d, 9998, 1000, has_rx_sum,
                                 short_has_no_rx_sum));
}

/* ---- afpacket: per-frame hand-over ---- */

#define RX_TEST_TYPE 0x88b5 /* IEEE 802 local experimental EtherType */
static const char rx_mark[] = "tern-rx-per-frame";

/* A packet socket on IF_K in the kernel side's namespace, for sending only
 * (protocol 0). */
static int peer_socket(void)
{
    return dt_peer_socket(&hosts, 0);
}

/* A plain packet socket on IF_T for RX_TEST_TYPE only. The kernel delivers
 * a received frame to every ETH_P_ALL socket (the driver's) before the
 * sockets of its protocol, so once this one holds a frame, the driver's
 * ring has been offered it too. */
static int ref_socket(void)
{
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(RX_TEST_TYPE));
    struct sockaddr_ll sll = {.sll_family = AF_PACKET,
                              .sll_protocol = htons(RX_TEST_TYPE),
                              .sll_ifindex = (int)if_nametoindex(hosts.if_t)};
    if (fd >= 0 && (sll.sll_ifindex == 0 ||
                    bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A marked frame of len bytes (60..1514). */
static bool send_marked_len(int peer, const tern_dev *d, uint32_t seq,
                            size_t len)
{
    uint8_t f[1514] = {0};
    uint8_t *p = dt_eth(f, d->mac, hosts.mac_k, RX_TEST_TYPE);
    memcpy(p, rx_mark, sizeof(rx_mark));
    put32(p + sizeof(rx_mark), seq);
    return send(peer, f, len, 0) == (ssize_t)len;
}

static bool send_marked(int peer, const tern_dev *d, uint32_t seq)
{
    return send_marked_len(peer, d, seq, 60);
}

static bool is_marked(const uint8_t *f, size_t len, uint32_t seq)
{
    return len >= 14 + sizeof(rx_mark) + 4 && get16(f + 12) == RX_TEST_TYPE &&
           memcmp(f + 14, rx_mark, sizeof(rx_mark)) == 0 &&
           get32(f + 14 + sizeof(rx_mark)) == seq;
}

/* Wait (bounded) until the reference socket has received frame seq. */
static bool ref_got(int ref, uint32_t seq, int timeout_ms)
{
    uint64_t end = dt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    uint8_t buf[2048];
    for (;;) {
        ssize_t r;
        while ((r = recv(ref, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
            if (is_marked(buf, (size_t)r, seq))
                return true;
        uint64_t now = dt_now_ns();
        if (now >= end)
            return false;
        struct pollfd p = {.fd = ref, .events = POLLIN};
        poll(&p, 1, (int)((end - now) / 1000000ull) + 1);
    }
}

/* One rx_burst on queue 0: how many frames, and whether seq was one. */
static unsigned burst_has(tern_dev *d, uint32_t seq, bool *got)
{
    tern_buf *frames[32];
    unsigned n = d->drv->rx_burst(d, 0, frames, 32);
    for (unsigned i = 0; i < n; i++) {
        if (is_marked(frames[i]->data, frames[i]->len, seq))
            *got = true;
        tern_pool_release(d->pools[0], frames[i]);
    }
    return n;
}

/* The latency bug this guards against, without a clock: TPACKET_V3 kept a
 * lone frame in an open block until the block's retire timer (>= 1 ms)
 * fired, so the frame was in the kernel's hands (and a socket served after
 * the driver's already had it) while the ring showed nothing. */
static void rx_per_frame(void **state)
{
    fixture *fx = *state;
    tern_dev *d = fx->d;
    if (!afpacket_on_veth()) {
        skip();
        return;
    }
    int peer = peer_socket(), ref = ref_socket();
    assert_true(peer >= 0);
    assert_true(ref >= 0);
    int fd = d->drv->wait_fd(d, 0);
    assert_true(fd >= 0);
    bool unused = false;
    while (burst_has(d, 0, &unused))
        ; /* whatever arrived before */

    for (uint32_t seq = 1; seq <= 20; seq++) {
        assert_true(send_marked(peer, d, seq));
        assert_true(ref_got(ref, seq, 2000));
        /* The ring has it now: poll says so and the first burst returns
         * it. */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, 0);
        bool got = false;
        unsigned n = burst_has(d, seq, &got);
        if (r != 1 || !(p.revents & POLLIN) || !got)
            fail_msg("frame %u: delivered to a later socket, but the ring "
                     "was %sreadable and the first rx_burst returned %u "
                     "frames %s it", seq, r == 1 ? "" : "not ", n,
                     got ? "with" : "without");
        /* Readable means rx_burst returns something (block mode would
         * spin otherwise). */
        p.revents = 0;
        if (poll(&p, 1, 0) == 1)
            assert_true(burst_has(d, seq, &unused) > 0);
    }

    /* Block mode: a poll() asleep on the fd wakes for one frame, and the
     * first burst after it has the frame. */
    const uint32_t late = 1000;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        usleep(100 * 1000);
        _exit(send_marked(peer, d, late) ? 0 : 1);
    }
    bool got = false;
    unsigned wakes = 0;
    uint64_t end = dt_now_ns() + 5000ull * 1000000ull;
    while (!got && dt_now_ns() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)((end - dt_now_ns()) / 1000000ull) + 1;
        if (poll(&p, 1, left) != 1)
            continue;
        wakes++;
        assert_true(burst_has(d, late, &got) > 0);
    }
    assert_int_equal(dt_reap(child, true), 0);
    close(peer);
    close(ref);
    if (!got)
        fail_msg("a sleeping poll() never returned the frame (%u wake-ups)",
                 wakes);
}

/* ---- VLAN tags ---- */

/* A marked frame with an 802.1Q tag of VLAN vid in front of its type. */
static bool send_marked_vlan(int peer, const tern_dev *d, uint32_t seq,
                             uint16_t vid)
{
    uint8_t f[64] = {0};
    uint8_t *p = dt_eth(f, d->mac, hosts.mac_k, 0x8100);
    put16(p, vid);
    put16(p + 2, RX_TEST_TYPE);
    memcpy(p + 4, rx_mark, sizeof(rx_mark));
    put32(p + 4 + sizeof(rx_mark), seq);
    return send(peer, f, 64, 0) == 64;
}

/* tern is on no VLAN: a frame tagged VLAN 5 is dropped and counted in
 * rx_drop_vlan on every driver (AF_PACKET reads the tag from the ring's
 * metadata, tap and AF_XDP from the frame); a priority tag (VLAN 0) is no
 * VLAN: the frame arrives without it. */
static void vlan_dropped(void **state)
{
    fixture *fx = *state;
    tern_dev *d = fx->d;
    int peer = peer_socket();
    assert_true(peer >= 0);
    bool unused = false;
    while (burst_has(d, 0, &unused))
        ;
    uint64_t vlan0 = d->rx_drop_vlan, drops0 = d->rx_drops;
    assert_true(send_marked_vlan(peer, d, 1, 5));
    assert_true(send_marked_vlan(peer, d, 2, 0));
    assert_true(send_marked(peer, d, 3));
    bool got[4] = {false};
    uint64_t end = dt_now_ns() + 5000ull * 1000000ull;
    while (!got[3] && dt_now_ns() < end) {
        tern_buf *frames[32];
        unsigned n = d->drv->rx_burst(d, 0, frames, 32);
        for (unsigned i = 0; i < n; i++) {
            for (uint32_t k = 1; k <= 3; k++)
                if (is_marked(frames[i]->data, frames[i]->len, k))
                    got[k] = true;
            tern_pool_release(d->pools[0], frames[i]);
        }
        if (!n)
            dt_wait(d, 0, 10);
    }
    close(peer);
    assert_true(got[3]);
    assert_false(got[1]);
    assert_true(got[2]);
    assert_int_equal(d->rx_drop_vlan - vlan0, 1);
    assert_true(d->rx_drops - drops0 >= 1);
    tern_dev_stats st;
    tern_dev_get_stats(d, &st);
    assert_int_equal(st.rx_drop_vlan, d->rx_drop_vlan);
}

/* ---- a dry pool: input goes on ---- */

#define DRY_ROUNDS 40
#define DRY_LONG 16        /* long frames per round, then one short one */
#define DRY_LONG_LEN 1000
#define DRY_SHORT_BASE 100000u

typedef struct held_bufs {
    tern_buf **b;
    unsigned n, cap;
} held_bufs;

static void hold(held_bufs *h, tern_buf *b)
{
    assert_true(h->n < h->cap);
    h->b[h->n++] = b;
}

/* Burst queue 0 until the driver has accounted for `want` frames since
 * `base` (received or dropped and counted), holding what it hands over, or
 * until a generous bound passes (a stall). Returns the short frames got. */
static unsigned dry_drain(tern_dev *d, held_bufs *h, uint64_t base,
                          uint64_t want)
{
    uint64_t end = dt_now_ns() + 5000ull * 1000000ull;
    unsigned shorts = 0;
    while (d->rx_frames + d->rx_drops - base < want && dt_now_ns() < end) {
        tern_buf *frames[32];
        unsigned n = d->drv->rx_burst(d, 0, frames, 32);
        for (unsigned i = 0; i < n; i++) {
            if (frames[i]->len < 100)
                shorts++;
            hold(h, frames[i]);
        }
        if (!n)
            dt_wait(d, 0, 10);
    }
    return shorts;
}

/* The stack holds every buffer of the pool (send queues waiting for ACKs,
 * out-of-order data) and keeps every frame the driver hands over. The
 * driver must go on reading: each frame is received or dropped and counted
 * (rx_drop_nobuf), never left in the kernel (where the ACKs that would free
 * the pool wait behind stale frames, or, on AF_XDP, an empty fill ring
 * makes the kernel drop everything). AF_XDP still passes short frames (the
 * ACKs) from its fill-ring floor. Once the pool is back, a new frame
 * arrives and no stale one does. */
static void dry_pool(void **state)
{
    fixture *fx = *state;
    tern_dev *d = fx->d;
    tern_pool *pool = d->pools[0];
    int peer = peer_socket();
    assert_true(peer >= 0);
    bool unused = false;
    while (burst_has(d, 0, &unused))
        ; /* whatever arrived before */

    held_bufs h = {.cap = tern_pool_count(pool) + DRY_ROUNDS * (DRY_LONG + 1)};
    h.b = calloc(h.cap, sizeof(*h.b));
    assert_non_null(h.b);
    tern_buf *b;
    while ((b = tern_pool_alloc(pool)))
        hold(&h, b);
    uint64_t base = d->rx_frames + d->rx_drops, drops0 = d->rx_drop_nobuf;
    uint32_t seq = 1;
    unsigned shorts_sent = 0, shorts_got = 0;
    for (unsigned r = 0; r < DRY_ROUNDS; r++) {
        for (unsigned i = 0; i < DRY_LONG; i++)
            assert_true(send_marked_len(peer, d, seq++, DRY_LONG_LEN));
        assert_true(send_marked(peer, d, DRY_SHORT_BASE + shorts_sent++));
        shorts_got += dry_drain(d, &h, base, (uint64_t)r * (DRY_LONG + 1) +
                                                 DRY_LONG + 1);
    }
    uint64_t sent = (uint64_t)DRY_ROUNDS * (DRY_LONG + 1);
    uint64_t seen = d->rx_frames + d->rx_drops - base;
    uint64_t nobuf = d->rx_drop_nobuf - drops0;
    print_message("dry pool: %" PRIu64 " frames sent, %" PRIu64
                  " read (%" PRIu64 " dropped for want of a buffer), %u of "
                  "%u short ones handed over\n",
                  sent, seen, nobuf, shorts_got, shorts_sent);
    if (seen < sent)
        fail_msg("the driver stopped reading with its pool dry: %" PRIu64
                 " of %" PRIu64 " frames read", seen, sent);
    assert_true(nobuf > 0);
    if (!strcmp(drv_name, "afxdp"))
        assert_int_equal(shorts_got, shorts_sent);

    /* The pool comes back: a new frame arrives, and no stale one. */
    for (unsigned i = 0; i < h.n; i++)
        tern_pool_release(pool, h.b[i]);
    free(h.b);
    const uint32_t fresh = 999999;
    assert_true(send_marked(peer, d, fresh));
    bool got = false;
    unsigned stale = 0;
    uint64_t end = dt_now_ns() + 5000ull * 1000000ull;
    while (!got && dt_now_ns() < end) {
        tern_buf *frames[32];
        unsigned n = d->drv->rx_burst(d, 0, frames, 32);
        for (unsigned i = 0; i < n; i++) {
            if (is_marked(frames[i]->data, frames[i]->len, fresh))
                got = true;
            else if (frames[i]->len >= DRY_LONG_LEN)
                stale++;
            tern_pool_release(pool, frames[i]);
        }
        if (!n)
            dt_wait(d, 0, 10);
    }
    close(peer);
    assert_true(got);
    assert_int_equal(stale, 0);
}

static void two_queues(void **state)
{
    fixture *fx = *state;
    if (env_queues < 2) {
        skip();
        return;
    }
    /* Replace the one-queue device by a two-queue one. */
    fx->d->drv->close(fx->d);
    char err[256] = "";
    fx->d = open_dev(2, err, sizeof(err));
    if (!fx->d)
        fail_msg("open with 2 queues: %s", err);
    assert_int_equal(fx->d->queues, 2);
    assert_true(fx->d->drv->wait_fd(fx->d, 1) >= 0);
    start_ping(fx);
    int q = wait_arp_request(fx->d, 5000);
    assert_true(q >= 0);
    /* Answer on the other queue: both transmit. */
    send_arp_reply(fx->d, (unsigned)(1 - q));
    assert_true(kernel_knows_mac(fx->d->mac, 3000));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s afpacket|tap|afxdp\n", argv[0]);
        return 2;
    }
    drv_name = argv[1];
    drv = dt_driver(drv_name);
    if (!drv) {
        printf("SKIP: driver %s not built here\n", drv_name);
        return DT_SKIP;
    }
    if (geteuid() != 0) {
        printf("SKIP: driver tests need root\n");
        return DT_SKIP;
    }
    if (!dt_hosts_load(&hosts))
        return 2;
    const char *q = getenv("QUEUES");
    env_queues = q ? (unsigned)atoi(q) : 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(open_info, setup, teardown),
        cmocka_unit_test(open_errors),
        cmocka_unit_test_setup_teardown(rx_arp, setup, teardown),
        cmocka_unit_test_setup_teardown(tx_arp_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(icmp_echo, setup, teardown),
        cmocka_unit_test_setup_teardown(partial_csum, setup, teardown),
        cmocka_unit_test_setup_teardown(rx_sum_on_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(rx_per_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(vlan_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(dry_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(two_queues, setup, teardown),
    };
    /* TERN_TEST_FILTER: run only the tests whose name matches (cmocka
     * wildcards). TERN_DRV_EXTRA: driver options, e.g. mode=skb. */
    if (getenv("TERN_TEST_FILTER"))
        cmocka_set_test_filter(getenv("TERN_TEST_FILTER"));
    char group[64];
    snprintf(group, sizeof(group), "%s%s%s", drv_name,
             getenv("TERN_DRV_EXTRA") ? " " : "",
             getenv("TERN_DRV_EXTRA") ? getenv("TERN_DRV_EXTRA") : "");
    return cmocka_run_group_tests_name(group, tests, NULL, NULL);
}
