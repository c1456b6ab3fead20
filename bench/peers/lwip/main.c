/* lwip-peer - lwIP as an in-memory benchmark peer for tools/tern bench:
 * client and server in one thread, joined by an in-memory link (link.c),
 * lwIP's raw API driven by this loop alone (no tcpip thread). Prints the
 * same figures as tern-echo / tern-bulk --driver mem. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "link.h"
#include "lwip/tcp.h"
#include "peer.h"

static const char usage[] =
    "usage: lwip-peer echo [--conns N] [--size B] [--duration S | --requests N] [--json]\n"
    "       lwip-peer bulk [--conns N] [--bytes N] [--json]\n"
    "\n"
    "lwIP (the system's liblwip, raw API) with both ends in one thread over an\n"
    "in-memory link: every frame copied, checksums computed and checked by lwIP.\n"
    "echo: --conns connections (default 16) each sending --size bytes (default\n"
    "64) and waiting for the echo; latency per round trip. bulk: --bytes\n"
    "(default 1G, K/M/G suffixes) over --conns streams (default 1): the sender\n"
    "writes every byte (a pattern generator, timed as gen_s), lwIP copies it,\n"
    "the receiver checks every byte.\n";

uint64_t peer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t peer_clock;

bool peer_loop(bool (*done)(void), double limit_s)
{
    uint64_t last = peer_now();
    while (!done()) {
        uint64_t now = peer_clock = peer_now();
        lwip_link_timers(now);
        if (lwip_link_deliver(32))
            last = now;
        else if ((double)(now - last) / 1e9 > limit_s)
            return false;
    }
    return true;
}

unsigned peer_connected;
bool peer_failed;
static unsigned conns_wanted;

void peer_fail(const char *what)
{
    if (!peer_failed)
        fprintf(stderr, "lwip-peer: %s\n", what);
    peer_failed = true;
}

void peer_on_err(void *arg, err_t err)
{
    (void)arg;
    (void)err;
    peer_fail("a connection failed");
}

bool peer_all_connected(void)
{
    return peer_connected == conns_wanted || peer_failed;
}

static err_t on_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
    (void)arg;
    (void)pcb;
    if (err == ERR_OK)
        peer_connected++;
    return ERR_OK;
}

bool peer_listen(uint16_t port, tcp_accept_fn accept)
{
    struct tcp_pcb *l = tcp_new();
    tcp_bind_netif(l, lwip_link_netif(LINK_SERVER));
    if (tcp_bind(l, lwip_link_addr(LINK_SERVER), port) != ERR_OK)
        return false;
    tcp_accept(tcp_listen(l), accept);
    return true;
}

struct tcp_pcb *peer_connect(void *arg, uint16_t port)
{
    struct tcp_pcb *pcb = tcp_new();
    conns_wanted++;
    tcp_bind_netif(pcb, lwip_link_netif(LINK_CLIENT));
    tcp_bind(pcb, lwip_link_addr(LINK_CLIENT), 0);
    tcp_arg(pcb, arg);
    tcp_err(pcb, peer_on_err);
    tcp_connect(pcb, lwip_link_addr(LINK_SERVER), port, on_connected);
    return pcb;
}

static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = 1ull << 10;
    else if (*end == 'M' || *end == 'm')
        mult = 1ull << 20;
    else if (*end == 'G' || *end == 'g')
        mult = 1ull << 30;
    if (end == s || (mult > 1 && end[1]) || (mult == 1 && *end) || !v)
        return false;
    *out = v * mult;
    return true;
}

static int bad(const char *flag, const char *why)
{
    fprintf(stderr, "lwip-peer: %s: %s (see --help)\n", flag, why);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *work = argv[1];
    bool echo = !strcmp(work, "echo");
    if (!echo && strcmp(work, "bulk"))
        return bad(work, "unknown workload (echo, bulk)");
    peer_opts o = {.conns = echo ? 16 : 1, .size = 64, .bytes = 1ull << 30};
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
        if (!strcmp(f, "--json")) {
            o.json = true;
            continue;
        }
        if (!strcmp(f, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!v)
            return bad(f, "needs a value");
        i++;
        if (!strcmp(f, "--conns")) {
            if (!parse_size(v, &n) || n > 1024)
                return bad(f, "1..1024 connections");
            o.conns = (unsigned)n;
        } else if (!strcmp(f, "--size")) {
            if (!parse_size(v, &n) || n > 65536)
                return bad(f, "1..65536 bytes");
            o.size = (unsigned)n;
        } else if (!strcmp(f, "--requests")) {
            if (!parse_size(v, &n))
                return bad(f, "a positive count");
            o.requests = n;
        } else if (!strcmp(f, "--duration")) {
            o.duration = atof(v);
            if (!(o.duration > 0 && o.duration <= 3600))
                return bad(f, "0..3600 seconds");
        } else if (!strcmp(f, "--bytes")) {
            if (!parse_size(v, &o.bytes))
                return bad(f, "a size such as 64M or 1G");
        } else {
            return bad(f, "unknown flag");
        }
    }
    if (echo && !o.requests && !o.duration)
        o.duration = 2;
    lwip_link_init();
    return echo ? run_echo(&o) : run_bulk(&o);
}
