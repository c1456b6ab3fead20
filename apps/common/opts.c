/* opts.c - table-driven flag parsing for every program (see opts.h). */
#include "opts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "io.h"
#include "parse.h"
#include "rt.h"

static const char *g_prog = "tern";

void opts_fail(const common_opts *co, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", co ? co->prog : g_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

void common_defaults(common_opts *co, const char *prog, int family)
{
    memset(co, 0, sizeof *co);
    co->prog = prog;
    co->family = family;
    co->driver = "mem";
    co->ip = 0xc6120002u; /* 198.18.0.2 */
    co->prefix = 24;
    co->cores[0] = rt_default_cpu();   /* honours taskset and cgroups */
    co->ncores = 1;
    co->poll = POLL_BLOCK;
    co->poll_timeout_ms = -1;
    co->seed = 1;
    g_prog = prog;
}

/* ---- custom parsers for the common flags ---- */

static bool p_ip_prefix(const char *v, void *dst, char *err, size_t n)
{
    common_opts *co = dst;
    if (!parse_ip4_prefix(v, &co->ip, &co->prefix)) {
        snprintf(err, n, "expected A.B.C.D/PREFIX");
        return false;
    }
    co->ip_set = true;
    return true;
}

static bool p_ip(const char *v, void *dst, char *err, size_t n)
{
    if (!parse_ip4(v, dst)) {
        snprintf(err, n, "expected A.B.C.D");
        return false;
    }
    return true;
}

static bool p_ip6_prefix(const char *v, void *dst, char *err, size_t n)
{
    common_opts *co = dst;
    if (!ep_prefix6_parse(v, co->ip6, &co->prefix6, err, n))
        return false;
    co->ip6_set = true;
    return true;
}

static bool p_gw6(const char *v, void *dst, char *err, size_t n)
{
    common_opts *co = dst;
    ep_addr a;
    if (!ep_addr_parse(v, &a, err, n))
        return false;
    if (a.family != EP_AF_INET6) {
        snprintf(err, n, "expected an IPv6 address (the router's link-local "
                         "one, like fe80::1)");
        return false;
    }
    memcpy(co->gw6, a.v6, 16);
    co->gw6_set = true;
    return true;
}

static bool p_mac(const char *v, void *dst, char *err, size_t n)
{
    common_opts *co = dst;
    if (!parse_mac(v, co->mac)) {
        snprintf(err, n, "expected XX:XX:XX:XX:XX:XX");
        return false;
    }
    co->mac_set = true;
    return true;
}

static bool p_cores(const char *v, void *dst, char *err, size_t n)
{
    common_opts *co = dst;
    if (!parse_cores(v, co->cores, &co->ncores, OPTS_MAX_CORES)) {
        snprintf(err, n, "expected a CPU list like 0,1 or 0-3");
        return false;
    }
    return true;
}

static bool p_driver(const char *v, void *dst, char *err, size_t n)
{
    static const char *known[] = {"mem", "afxdp", "afpacket", "tap", "dpdk"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(v, known[i]) == 0) {
            *(const char **)dst = known[i];
            return true;
        }
    }
    snprintf(err, n, "unknown driver (built: %s)", tern_driver_list());
    return false;
}

static bool p_offload(const char *v, void *dst, char *err, size_t n)
{
    char buf[128];
    if (strlen(v) >= sizeof buf)
        goto bad;
    strcpy(buf, v);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "csum") && strcmp(t, "tso") && strcmp(t, "lro") &&
            strcmp(t, "copy") && strcmp(t, "rxsum") && strcmp(t, "none"))
            goto bad;
    }
    *(const char **)dst = v;
    return true;
bad:
    snprintf(err, n, "expected a list of csum, tso, lro, rxsum, copy (or none)");
    return false;
}

static long g_timeout;
static bool g_seen_timeout;

static const opt_def *common_table(common_opts *co)
{
    static opt_def t[36];
    static int poll_idx;
    static char driver_help[128];   /* the drivers this build has */
    snprintf(driver_help, sizeof driver_help, "link driver: %s (default mem)",
             tern_driver_list());
    opt_def tab[] = {
        OPT("driver", OT_CUSTOM, &co->driver, "NAME", driver_help,
         .parse = p_driver, .seen = &co->seen_driver),
        OPT("iface", OT_STR, &co->iface, "NAME", "network interface to open",
         .seen = &co->seen_iface),
        OPT("driver-opts", OT_STR, &co->driver_opts, "K=V,...",
         "driver options, e.g. tso=0 (afpacket: no segmentation offload), "
         "qdisc_bypass, fanout=lb (docs/drivers.md)",
         .seen = &co->seen_driver_opts),
        OPT("ip", OT_CUSTOM, co, "ADDR/PREFIX",
         "our IPv4 address (default 198.18.0.2/24; none when --ip6 is "
         "given without it: IPv6 only)", .parse = p_ip_prefix,
         .seen = &co->seen_ip),
        OPT("gw", OT_CUSTOM, &co->gw, "ADDR", "default gateway", .parse = p_ip,
         .seen = &co->seen_gw),
        OPT("ip6", OT_CUSTOM, co, "ADDR/PREFIX",
         "an IPv6 address of ours, e.g. 2001:db8::2/64 (the link-local "
         "one comes from the MAC); alone, without --ip, the stack has no "
         "IPv4; mem: the server end takes ADDR, the client end the next "
         "address, and the client connects over IPv6",
         .parse = p_ip6_prefix, .seen = &co->seen_ip6),
        OPT("gw6", OT_CUSTOM, co, "ADDR",
         "IPv6 default router (its link-local address)", .parse = p_gw6,
         .seen = &co->seen_gw6),
        OPT("mac", OT_CUSTOM, co, "XX:..:XX",
         "our MAC (default: the interface's)", .parse = p_mac,
         .seen = &co->seen_mac),
        OPT("cores", OT_CUSTOM, co, "LIST",
         "CPUs to run on, one pinned thread each (default: the first CPU "
         "this process may use, e.g. under taskset)", .parse = p_cores),
        OPT("poll", OT_CHOICE, &poll_idx, "busy|block",
         "spin on the queues, or sleep until traffic/deadline (default block)",
         "busy|block"),
        OPT("poll-timeout", OT_MS, &g_timeout, "MS",
         "block at most MS ms per wait (0 = busy; like an epoll_wait timeout)",
         .seen = &g_seen_timeout),
        OPT("epoll-timeout", OT_MS, &g_timeout, "MS",
         "same as --poll-timeout", .seen = &g_seen_timeout),
        OPT("busy-poll", OT_UINT, &co->busy_poll_us, "US",
         "kern: SO_BUSY_POLL microseconds on every socket; tern: spin up "
         "to US after the last frame before sleeping (adaptive)",
         .max = 1000000,
         .seen = &co->seen_busy_poll),
        OPT("pcap", OT_STR, &co->pcap, "FILE", "capture every frame to FILE",
         .seen = &co->seen_pcap),
        OPT("json", OT_FLAG, &co->json, NULL, "print one JSON object on stdout"),
        OPT("loss", OT_PROB, &co->loss, "P", "mem: drop probability 0..1",
         .seen = &co->seen_fault),
        OPT("dup", OT_PROB, &co->dup, "P", "mem: duplication probability",
         .seen = &co->seen_fault),
        OPT("reorder", OT_PROB, &co->reorder, "P", "mem: reordering probability",
         .seen = &co->seen_fault),
        OPT("corrupt", OT_PROB, &co->corrupt, "P", "mem: corruption probability",
         .seen = &co->seen_fault),
        OPT("delay-us", OT_UINT, &co->delay_us, "N", "mem: one-way delay in us",
         .max = 10000000, .seen = &co->seen_fault),
        OPT("seed", OT_UINT, &co->seed, "N", "mem: fault injector seed (default 1)"),
        OPT("offload", OT_CUSTOM, &co->offload, "LIST",
         "mem: NIC offloads csum,tso,lro,rxsum (rxsum: the link sums the "
         "frames it copies); with copy, TSO frames are copied "
         "into LRO receivers rather than passed by reference", .parse = p_offload,
         .seen = &co->seen_offload),
        OPT("link", OT_RATE, &co->link_bps, "RATE",
         "line rate for the payload limit, e.g. 10G, 100G"),
        OPT("time-wait", OT_UINT, &co->time_wait_ms, "MS",
         "tern: TIME_WAIT duration (default 60000)", .min = 1,
         .max = 3600000, .seen = &co->seen_time_wait),
        OPT("max-conns", OT_UINT, &co->max_conns, "N",
         "tern: connection slots per core (default: 65536 for a server, "
         "what its connections need for a client). A slot and its TIME_WAIT "
         "record cost about 650 B, allocated at start (65536: 40.5 MiB per "
         "core, only the slots in use touched; an idle connection holds no "
         "buffer); for more connections raise N (N x 650 B) or add --cores. "
         "Past 256 half-open, SYNs get SYN cookies; a cookie's ACK that "
         "finds no free slot gets a RST", .min = 1,
         .max = 16777216, .seen = &co->seen_max_conns),
        OPT("steer", OT_FLAG, &co->steer, NULL,
         "tern: spread a device's flows over --cores by their Toeplitz hash "
         "in software (for devices without RSS: one queue, tap, afpacket)",
         .seen = &co->seen_steer),
        OPT("steer-queues", OT_UINT, &co->steer_queues, "N",
         "tern --steer: device queues to open and read (default 1)",
         .min = 1, .max = OPTS_MAX_CORES, .seen = &co->seen_steer_queues),
        OPT("cc", OT_CHOICE, &co->cc, "cubic|newreno|bbr",
         "tern: congestion control (default cubic); bbr is model-based "
         "and keeps its window under random loss", "cubic|newreno|bbr",
         .seen = &co->seen_cc),
        OPT_END,
    };
    _Static_assert(sizeof tab <= sizeof t, "common_table: t is too small");
    memcpy(t, tab, sizeof tab);
    poll_idx = co->poll == POLL_BUSY ? 0 : 1;
    return t;
}

/* ---- generic machinery ---- */

static const opt_def *find(const opt_def *tab, const char *name, size_t len)
{
    for (; tab && tab->name; tab++)
        if (strlen(tab->name) == len && strncmp(tab->name, name, len) == 0)
            return tab;
    return NULL;
}

static void set_value(const common_opts *co, const opt_def *d, const char *v)
{
    char err[128] = "bad value";
    uint64_t u;
    double f;
    switch (d->type) {
    case OT_FLAG:
        *(bool *)d->dst = true;
        return;
    case OT_STR:
        if (!*v)
            opts_fail(co, "--%s: empty value", d->name);
        *(const char **)d->dst = v;
        return;
    case OT_UINT:
    case OT_SIZE:
        if (!(d->type == OT_UINT ? parse_u64(v, &u) : parse_size(v, &u)))
            opts_fail(co, "--%s: expected %s, got '%s'", d->name,
                      d->type == OT_UINT ? "a non-negative integer"
                                         : "a size like 4096, 64K, 256M, 1G",
                      v);
        if (u < d->min || (d->max && u > d->max))
            opts_fail(co, "--%s: %s out of range %llu..%llu", d->name, v,
                      (unsigned long long)d->min,
                      (unsigned long long)(d->max ? d->max : UINT64_MAX));
        *(uint64_t *)d->dst = u;
        return;
    case OT_RATE:
        if (!parse_rate(v, &f))
            opts_fail(co, "--%s: expected a rate like 10G or 2.5G, got '%s'",
                      d->name, v);
        *(double *)d->dst = f;
        return;
    case OT_DOUBLE:
    case OT_PROB:
        if (!parse_double(v, &f) || f < 0 || (d->type == OT_PROB && f > 1))
            opts_fail(co, "--%s: expected %s, got '%s'", d->name,
                      d->type == OT_PROB ? "a probability 0..1"
                                         : "a non-negative number",
                      v);
        *(double *)d->dst = f;
        return;
    case OT_MS:
        if (strcmp(v, "-1") == 0) {
            *(long *)d->dst = -1;
            return;
        }
        if (!parse_u64(v, &u) || u > 3600000)
            opts_fail(co, "--%s: expected milliseconds 0..3600000 or -1, got '%s'",
                      d->name, v);
        *(long *)d->dst = (long)u;
        return;
    case OT_CHOICE: {
        const char *c = d->choices;
        for (int i = 0; c && *c; i++) {
            size_t l = strcspn(c, "|");
            if (strlen(v) == l && strncmp(c, v, l) == 0) {
                *(int *)d->dst = i;
                return;
            }
            c += l + (c[l] == '|');
        }
        opts_fail(co, "--%s: expected one of %s, got '%s'", d->name,
                  d->choices, v);
    }
    case OT_CUSTOM:
        if (!d->parse(v, d->dst, err, sizeof err))
            opts_fail(co, "--%s: %s, got '%s'", d->name, err, v);
        return;
    }
}

static void print_table(const opt_def *t)
{
    for (; t->name; t++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", t->name, t->meta ? " " : "",
                 t->meta ? t->meta : "");
        printf("  %-26s %s\n", left, t->help);
    }
}

static void usage_exit(const common_opts *co, const opt_def *app,
                       const opt_def *common, const char *usage)
{
    printf("usage: %s [flags]\n\n%s\n\nflags:\n", co->prog, usage);
    print_table(app);
    printf("\ncommon flags%s:\n",
           co->family == FAMILY_KERN
               ? " (driver, address and mem-link flags are tern-only: a kern "
                 "program ignores the first and rejects the fault flags)"
               : "");
    print_table(common);
    printf("  %-26s %s\n", "--help", "this text");
    exit(0);
}

static void check_family(common_opts *co)
{
    char ignored[160] = "";
    if (co->family == FAMILY_KERN) {
        if (co->seen_fault || co->seen_offload)
            opts_fail(co, "the mem-link fault/offload flags need a tern program "
                          "with --driver mem (kernel peers: tools/netns.sh loss)");
        const struct { bool seen; const char *name; } ig[] = {
            {co->seen_driver, "--driver"}, {co->seen_iface, "--iface"},
            {co->seen_driver_opts, "--driver-opts"},
            {co->seen_ip, "--ip"}, {co->seen_gw, "--gw"},
            {co->seen_ip6, "--ip6"}, {co->seen_gw6, "--gw6"},
            {co->seen_mac, "--mac"}, {co->seen_pcap, "--pcap"},
            {co->seen_time_wait, "--time-wait"}, {co->seen_steer, "--steer"},
            {co->seen_max_conns, "--max-conns"}, {co->seen_cc, "--cc"},
            {co->seen_steer_queues, "--steer-queues"},
        };
        for (size_t i = 0; i < sizeof ig / sizeof ig[0]; i++) {
            if (ig[i].seen) {
                strcat(ignored, " ");
                strcat(ignored, ig[i].name);
            }
        }
        if (*ignored)
            fprintf(stderr, "%s: note: kernel sockets, ignoring%s\n", co->prog,
                    ignored);
    } else {
        if ((co->seen_fault || co->seen_offload) && strcmp(co->driver, "mem"))
            opts_fail(co, "--loss/--dup/--reorder/--corrupt/--delay-us/--offload "
                          "need --driver mem");
        if (co->seen_busy_poll && (co->poll == POLL_BUSY ||
                                   !strcmp(co->driver, "mem")))
            fprintf(stderr, "%s: note: --busy-poll (spin before sleeping) "
                            "does nothing when the loop never sleeps "
                            "(--poll busy, --driver mem)\n", co->prog);
        if (co->steer && !strcmp(co->driver, "mem"))
            opts_fail(co, "--steer needs a real driver (mem gives every core "
                          "its own link)");
        if (co->seen_steer_queues && !co->steer)
            opts_fail(co, "--steer-queues needs --steer");
        if (co->seen_driver_opts && !strcmp(co->driver, "mem"))
            opts_fail(co, "--driver-opts needs a real driver (the mem link's "
                          "flags are --loss, --offload, ...)");
        if (strcmp(co->driver, "mem") && !co->iface)
            opts_fail(co, "--driver %s needs --iface NAME", co->driver);
        if (co->seen_gw6 && !strcmp(co->driver, "mem"))
            opts_fail(co, "--gw6 needs a real driver (the mem link's two "
                          "ends share one subnet, no router)");
        if (co->seen_ip6 && co->seen_offload && !strcmp(co->driver, "mem"))
            opts_fail(co, "--offload with --ip6: the mem link emulates its "
                          "offloads for IPv4 only");
        /* --ip6 without --ip: an IPv6-only stack (no IPv4 address) */
        if (co->seen_ip6 && !co->seen_ip && strcmp(co->driver, "mem"))
            co->ip = 0;
        if (co->seen_gw && !co->ip)
            opts_fail(co, "--gw needs an IPv4 address of ours (--ip); with "
                          "--ip6 alone the stack is IPv6 only (use --gw6)");
    }
}

void opts_parse(common_opts *co, const opt_def *app, const char *usage,
                int argc, char **argv)
{
    const opt_def *common = common_table(co);
    g_timeout = co->poll_timeout_ms;
    g_seen_timeout = false;
    int poll_idx_before = co->poll == POLL_BUSY ? 0 : 1;
    int *poll_idx = (int *)find(common, "poll", 4)->dst;
    *poll_idx = poll_idx_before;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            usage_exit(co, app, common, usage);
        if (strncmp(a, "--", 2) != 0 || !a[2])
            opts_fail(co, "unexpected argument '%s' (flags start with --; see "
                          "--help)", a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const opt_def *d = find(app, name, len);
        if (!d)
            d = find(common, name, len);
        if (!d)
            opts_fail(co, "unknown flag '--%.*s' (see --help)", (int)len, name);
        const char *val = NULL;
        if (d->type == OT_FLAG) {
            if (eq)
                opts_fail(co, "--%s takes no value", d->name);
        } else if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc)
                opts_fail(co, "--%s needs a value (%s)", d->name,
                          d->meta ? d->meta : "VALUE");
            val = argv[++i];
        }
        set_value(co, d, val);
        if (d->seen)
            *d->seen = true;
    }
    co->poll = *poll_idx == 0 ? POLL_BUSY : POLL_BLOCK;
    if (g_seen_timeout) {
        co->poll_timeout_ms = g_timeout;
        co->poll = g_timeout == 0 ? POLL_BUSY : POLL_BLOCK;
    }
    check_family(co);
}
