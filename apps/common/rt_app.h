/* rt_app.h - glue between the common flags and the tern runtime, for tern-*
 * programs only. Header-only on purpose: the apps/common sources are linked into the
 * kern-* twins too, and they must not pull in the runtime and drivers.
 *
 * Also the per-connection output backlog every tern server needs when the
 * send buffer is full: bytes that could not be sent are kept, and the input
 * that produced them is reported unconsumed (tern_tcp_consumed later), so
 * the receive window closes and the peer slows down instead of the backlog
 * growing. */
#ifndef APPS_RT_APP_H
#define APPS_RT_APP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytebuf.h"
#include "core_report.h"
#include "endpoint.h"
#include "ip6_config.h"
#include "opts.h"
#include "report.h"
#include "rt.h"
#include "steer.h"

static inline void rt_params_from_opts(rt_params *p, const common_opts *co,
                                       int role)
{
    memset(p, 0, sizeof *p);
    p->driver = co->driver;
    p->iface = co->iface;
    p->extra = co->driver_opts;
    p->ip = co->ip;
    p->prefix = (uint8_t)co->prefix;
    p->gw = co->gw;
    memcpy(p->mac, co->mac, 6);
    p->mac_set = co->mac_set;
    p->cores = co->cores;
    p->ncores = co->ncores;
    p->busy = co->poll == POLL_BUSY;
    p->spin_us = (uint32_t)co->busy_poll_us;
    p->poll_timeout_ms = co->poll_timeout_ms;
    p->pcap = co->pcap;
    p->role = role;
    p->faults.loss = co->loss;
    p->faults.dup = co->dup;
    p->faults.reorder = co->reorder;
    p->faults.corrupt = co->corrupt;
    p->faults.delay_ns = co->delay_us * 1000;
    p->seed = co->seed;
    p->time_wait_ms = (uint32_t)co->time_wait_ms;
    p->cc = (uint8_t)co->cc;
    p->max_conns = (uint32_t)co->max_conns;
    p->steer = co->steer;
    p->steer_queues = (unsigned)co->steer_queues;
    if (co->offload) {
        /* The emulated NIC of --offload csum,tso,lro (see mem.h). */
        if (strstr(co->offload, "csum"))
            p->mem_caps |= TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM |
                           TERN_CAP_TX_IP_CSUM | TERN_CAP_TX_L4_CSUM;
        if (strstr(co->offload, "tso"))
            p->mem_caps |= TERN_CAP_TSO | TERN_CAP_SG | TERN_CAP_TX_IP_CSUM |
                           TERN_CAP_TX_L4_CSUM;
        if (strstr(co->offload, "lro"))
            p->mem_caps |= TERN_CAP_LRO | TERN_CAP_SG;
        p->mem_copy = strstr(co->offload, "copy") != NULL;
        p->mem_rx_sum = strstr(co->offload, "rxsum") != NULL;
    }
}

static inline const char *rt_close_reason(int reason)
{
    return tern_close_reason_name(reason);
}

/* A command-line address as the stack's (EP_AF_* are the TERN_AF_*
 * numbers). */
static inline tern_addr rt_app_addr(const ep_addr *a)
{
    return a->family == EP_AF_INET6 ? tern_addr_v6(a->v6)
                                    : tern_addr_v4(a->v4);
}

/* "2001:db8::1" as "[2001:db8::1]:port", IPv4 as "a.b.c.d:port". */
static inline char *rt_app_hostport(const tern_addr *a, unsigned port,
                                    char *out, size_t n)
{
    char t[TERN_ADDR_STRLEN];
    tern_addr_format(a, t);
    snprintf(out, n, a->family == TERN_AF_INET6 ? "[%s]:%u" : "%s:%u", t,
             port);
    return out;
}

/* The address of a mem link's end with --ip6 ADDR: the server end takes
 * ADDR, the client end ADDR + 1. */
static inline void rt_app_mem_ip6(const common_opts *co, int role,
                                  uint8_t out[16])
{
    memcpy(out, co->ip6, 16);
    if (role == RT_CLIENT)
        for (int i = 15; i >= 0 && ++out[i] == 0; i--)
            ;
}

/* --ip6 and --gw6 into a stack's config. On a real driver as given; on
 * the mem link each end gets its own address (rt_app_mem_ip6) without
 * Duplicate Address Detection: the link has only the two ends. */
static inline void rt_app_ip6(const common_opts *co, const rt_ep *ep,
                              tern_config *cfg)
{
    if (ep->dev) {
        app_ip6_config(co, cfg);
    } else if (co->ip6_set) {
        rt_app_mem_ip6(co, ep->role, cfg->ip6[0]);
        cfg->ip6_prefix_len[0] = (uint8_t)co->prefix6;
        cfg->n_ip6 = 1;
        cfg->ip6_no_dad = true;
    }
}

/* Where a client on the mem link connects: the server end, over IPv6
 * with --ip6. */
static inline tern_addr rt_app_mem_server(const common_opts *co)
{
    if (!co->ip6_set)
        return tern_addr_v4(RT_MEM_SERVER_IP);
    uint8_t a[16];
    rt_app_mem_ip6(co, RT_SERVER, a);
    return tern_addr_v6(a);
}

/* Whether any of the stack's addresses is still in Duplicate Address
 * Detection. */
static inline bool rt_app_tentative(const tern_stack *st)
{
    int state[8];
    tern_addr a[8];
    unsigned n = tern_addr_list(st, a, state, 8);
    for (unsigned i = 0; i < n && i < 8; i++)
        if (state[i] == TERN_ADDR_TENTATIVE)
            return true;
    return false;
}

/* A client's connects to an IPv6 peer fail with TERN_EINVAL while its own
 * addresses are still in Duplicate Address Detection (about a second
 * after the start, with --ip6): it tries again on later loop turns while
 * an address of st is tentative, for at most RT_APP_DAD_WAIT_NS. True
 * when err is that case and the wait goes on (*since: when it began, 0
 * before). */
#define RT_APP_DAD_WAIT_NS 5000000000ull
static inline bool rt_app_dad_wait(const tern_stack *st, const tern_addr *dst,
                                   int err, uint64_t now, uint64_t *since)
{
    if (dst->family != TERN_AF_INET6 || err != TERN_EINVAL ||
        !rt_app_tentative(st))
        return false;
    if (*since <= 1) {              /* 1: begun before the loop's clock ran */
        *since = now ? now : 1;
        return true;
    }
    return now - *since < RT_APP_DAD_WAIT_NS;
}

/* What a tern server prints when it starts: the addresses it serves on. */
static inline void rt_app_banner(char *out, size_t n, const common_opts *co,
                                 const char *what, unsigned port)
{
    char a[APP_ENDPOINTS_LEN];
    snprintf(out, n, "%s %s on %s %s (Ctrl-C prints the figures)", what,
             app_endpoints(co, port, a), co->driver,
             co->iface ? co->iface : "");
}

/* Why an IPv6 connect may find no source address: " (our IPv6 address X
 * is a duplicate: ...)" or " (... still in Duplicate Address Detection)",
 * else nothing. */
static inline void rt_app_ip6_note(char *out, size_t n, const tern_stack *st)
{
    tern_addr a[8];
    int state[8];
    unsigned k = tern_addr_list(st, a, state, 8);
    bool tentative = false;
    out[0] = 0;
    for (unsigned i = 0; i < k && i < 8; i++) {
        char t[TERN_ADDR_STRLEN];
        if (state[i] == TERN_ADDR_DUPLICATE) {
            snprintf(out, n, " (our IPv6 address %s is a duplicate: another "
                     "node on the link uses it)", tern_addr_format(&a[i], t));
            return;
        }
        tentative |= state[i] == TERN_ADDR_TENTATIVE;
    }
    if (tentative)
        snprintf(out, n, " (our IPv6 addresses are still in Duplicate "
                 "Address Detection)");
}

/* "connect to A.B.C.D:P: <why>", with what to check for the usual IPv4
 * refusal (the destination is off the subnet and there is no gateway). */
static inline void rt_app_connect_error(char *msg, size_t n, const rt_ep *ep,
                                        const tern_addr *to, uint16_t port,
                                        int err)
{
    char at[TERN_ADDR_STRLEN + 8], me[16];
    const rt_params *p = rt_params_of(ep->core->rt);
    uint32_t mask = p->prefix ? ~0u << (32 - p->prefix) : 0;
    uint32_t dst = to->family == TERN_AF_INET ? to->u.v4 : ep->ip;
    bool off_link = ((dst ^ ep->ip) & mask) != 0 && !p->gw && ep->dev &&
                    to->family == TERN_AF_INET;
    int k = snprintf(msg, n, "connect to %s: %s",
                     rt_app_hostport(to, port, at, sizeof at),
                     tern_strerror(err));
    if (err == TERN_EAFNOSUPPORT && k > 0 && (size_t)k < n)
        snprintf(msg + k, n - (size_t)k, " (%s)",
                 to->family == TERN_AF_INET
                     ? "this stack has no IPv4 address: give --ip"
                     : "this stack has no IPv6 address: give --ip6");
    else if (to->family == TERN_AF_INET6 && err == TERN_EINVAL && k > 0 &&
             (size_t)k < n)
        rt_app_ip6_note(msg + k, n - (size_t)k, ep->st);
    else if (off_link && k > 0 && (size_t)k < n)
        snprintf(msg + k, n - (size_t)k, " (outside %s/%u and no --gateway)",
                 tern_ip4_format(ep->ip & mask, me), (unsigned)p->prefix);
}

/* A client whose next hop never answered ARP: the stack gave up resolving
 * it (arp_resolve_failed, after 3 requests a second apart) before any
 * connection was made. Without this check a client would only learn it
 * when its SYNs run out, about a minute later. Writes the message naming
 * the address and returns true. */
static inline bool rt_app_arp_failed(const rt_ep *ep, const tern_addr *to,
                                     char *msg, size_t n)
{
    if (!ep->dev || to->family != TERN_AF_INET)
        return false;
    uint32_t dst = to->u.v4;
    const tern_counters *c = tern_get_counters(ep->st);
    if (c->arp_resolve_failed == 0 || c->tcp_conns_established)
        return false;
    const rt_params *p = rt_params_of(ep->core->rt);
    uint32_t mask = p->prefix ? ~0u << (32 - p->prefix) : 0;
    bool via_gw = ((dst ^ ep->ip) & mask) != 0 && p->gw;
    char a[16];
    snprintf(msg, n, "%s%s does not answer ARP (3 requests, no reply): is it "
             "up and on the link of --iface %s?", via_gw ? "the gateway " : "",
             tern_ip4_format(via_gw ? p->gw : dst, a),
             p->iface ? p->iface : "?");
    return true;
}

/* Connection table sizes of the tern programs: a server endpoint holds
 * RT_APP_SERVER_CONNS connections (and as many TIME_WAIT records), about
 * 560 bytes each in the stack (docs/architecture.md), so tens of
 * thousands of idle clients are served; a client endpoint what its own
 * connections need (client_need). --max-conns overrides both. */
#define RT_APP_SERVER_CONNS 65536u
static inline void rt_app_conn_defaults(const rt_ep *ep, tern_config *cfg,
                                        uint64_t client_need)
{
    if (rt_params_of(ep->core->rt)->max_conns)
        return;                         /* --max-conns: taken as given */
    uint64_t need = ep->role == RT_SERVER ? RT_APP_SERVER_CONNS : client_need;
    if (need > UINT32_MAX)
        need = UINT32_MAX;
    if (need > cfg->max_conns)
        cfg->max_conns = (uint32_t)need;
}

/* Link figures: frames each way and, on mem, what the fault injector did. */
static inline void rt_report_link(report *rp, rt *r)
{
    uint64_t rx, tx, drops;
    rt_link_stats(r, &rx, &tx, &drops);
    rep_obj_begin(rp, "link");
    rep_u64(rp, "frames_tx", tx);
    rep_u64(rp, "frames_rx", rx);
    rep_u64(rp, "drops", drops);
    uint64_t nobuf, vlan;
    if (rt_link_rx_drop_causes(r, &nobuf, &vlan)) {
        rep_u64(rp, "rx_drop_nobuf", nobuf);
        rep_u64(rp, "rx_drop_vlan", vlan);
    }
    uint64_t tso, tso_drops;
    if (rt_link_tso(r, &tso, &tso_drops)) {
        rep_u64(rp, "tso_frames", tso);     /* segmented by the kernel */
        rep_u64(rp, "tso_drops", tso_drops);
    }
    if (!strcmp(rt_params_of(r)->driver, "mem")) {
        uint64_t lost = 0, dup = 0, reord = 0, corr = 0;
        uint64_t tso = 0, lro = 0, by_ref = 0;
        for (unsigned i = 0; i < rt_ncores(r); i++) {
            tern_memlink *ml = rt_core_at(r, i)->ml;
            for (int end = 0; ml && end < 2; end++) {
                const tern_memlink_stats *s = tern_memlink_get_stats(ml, end);
                lost += s->lost;
                dup += s->duplicated;
                reord += s->reordered;
                corr += s->corrupted;
                tso += s->tso_frames;
                lro += s->lro_frames;
                by_ref += s->by_ref_frames;
            }
        }
        rep_u64(rp, "lost", lost);
        rep_u64(rp, "duplicated", dup);
        rep_u64(rp, "reordered", reord);
        rep_u64(rp, "corrupted", corr);
        rep_u64(rp, "tso_frames", tso);
        rep_u64(rp, "lro_frames", lro);
        rep_u64(rp, "lro_by_ref", by_ref);  /* payload not copied */
    }
    rep_obj_end(rp);
}

/* With several cores: which core did what ("cores": {"0": {...}}), so a
 * test can prove each connection was handled by one core, and steering's
 * hand-overs. */
static inline void rt_report_cores(report *rp, rt *r)
{
    if (rt_ncores(r) < 2)
        return;
    rep_obj_begin(rp, "per_core");
    for (unsigned i = 0; i < rt_ncores(r); i++) {
        tern_counters k;
        rt_core_counters(r, i, &k);
        rt_core *c = rt_core_at(r, i);
        rep_core_begin(rp, i);
        rep_u64(rp, "rx_frames", c->rx_frames);
        rep_core_tcp(rp, &k);
        const steer_stats *s = rt_steer_stats(r, i);
        if (s) {
            const uint64_t v[CORE_STEER_FIGURES] = {
                s->kept, s->sent, s->received, s->broadcast, s->ring_drops,
                s->copy_drops, c->tx_forwarded, c->tx_ring_drops};
            rep_core_steer(rp, v);
            rep_u64(rp, "steer_returned", s->returned);
            if (c->buffers_held != UINT64_MAX)
                rep_u64(rp, "buffers_held", c->buffers_held);
        }
        rep_obj_end(rp);
    }
    rep_obj_end(rp);
}

/* Full-speed windows shorter than this in all give no *_full figure: too
 * few to stand for the run. */
#define RT_SPEED_MIN_FULL_S 0.2

/* "host_speed": how much of its core the host gave the loops (speed.h):
 * the fastest probe and the time-weighted median one (GHz), the share of
 * the time in full-speed windows, the app's work per second (what its
 * work hook counts) in those windows and over the run, and the core
 * cycles per unit of that work at full speed (the clock taken out). */
static inline void rt_report_speed(report *rp, const rt *r)
{
    speed_summary s;
    rt_speed_summary(r, &s);
    rep_obj_begin(rp, "host_speed");
    rep_f(rp, "best_ghz", s.best_ghz, 2);
    rep_f(rp, "median_ghz", s.median_ghz, 2);
    rep_f(rp, "full_share", s.full_share, 3);
    rep_f(rp, "full_s", s.full_s, 3);
    rep_f(rp, "rate_full", s.rate_full, 0);
    rep_f(rp, "rate_all", s.rate_all, 0);
    rep_f(rp, "cycles_per_unit", s.cycles_per_work, 3);
    rep_obj_end(rp);
}

/* The work rate in full-speed windows, if they last RT_SPEED_MIN_FULL_S
 * on every core. */
static inline bool rt_rate_full(const rt *r, double *rate)
{
    speed_summary s;
    rt_speed_summary(r, &s);
    *rate = s.rate_full;
    return s.full_s >= RT_SPEED_MIN_FULL_S;
}

/* The end every tern app's report shares: retransmits, connections still
 * held at exit (TIME_WAIT included), the slots held and TIME_WAIT records
 * when the stop came (before the app closed anything), the link figures, per-core figures
 * (several cores), the host speed, all counters. */
static inline void rt_report_end(report *rp, rt *r, const tern_counters *all)
{
    rep_u64(rp, "retransmits", all->tcp_retransmits);
    rep_u64(rp, "tcp_conns", rt_conn_count(r, -1));
    uint64_t open, tw;
    rt_stop_conns(r, &open, &tw);
    rep_u64(rp, "conns_open_at_stop", open);
    rep_u64(rp, "time_wait_at_stop", tw);
    rt_report_link(rp, r);
    rt_report_cores(rp, r);
    rt_report_speed(rp, r);
    report_counters(rp, "counters", all);
    rep_end(rp);
}

/* Create the runtime, print `banner` (if not empty) once it exists, run it
 * and report. Returns the exit code: 0 when report_out says all went well,
 * 1 on a failure (with one line on stderr). */
static inline int rt_app_run(const common_opts *co, const rt_params *p,
                             const rt_hooks *h, const char *banner,
                             bool (*report_out)(rt *))
{
    char err[256];
    rt *r = rt_create(p, h, err, sizeof err);
    if (!r) {
        fprintf(stderr, "%s: %s\n", co->prog, err);
        return 1;
    }
    if (banner && *banner)
        fprintf(stderr, "%s: %s\n", co->prog, banner);
    if (rt_run(r, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", co->prog, err);
        rt_destroy(r);
        return 1;
    }
    bool ok = report_out(r);
    rt_destroy(r);
    return ok ? 0 : 1;
}

/* ---- output backlog of one connection ---- */

typedef struct pend_conn {
    bytebuf out;      /* bytes the send buffer refused */
    size_t held;      /* input bytes not yet reported consumed */
    void *app;        /* the application's own per-connection state */
} pend_conn;

/* The connection's backlog, created on first need (user pointer). */
static inline pend_conn *pend_of(tern_conn *c)
{
    pend_conn *pc = tern_tcp_get_user(c);
    if (!pc) {
        pc = calloc(1, sizeof *pc);
        if (pc)
            tern_tcp_set_user(c, pc);
    }
    return pc;
}

/* Keep n input-derived bytes for later; returns 0 (bytes consumed now). */
static inline size_t pend_hold(pend_conn *pc, const uint8_t *d, size_t n)
{
    bb_append(&pc->out, d, n, SIZE_MAX);
    pc->held += n;
    return 0;
}

static __attribute__((noinline, cold, unused)) void pend_drain(tern_stack *st,
                                                        tern_conn *c,
                                                        pend_conn *pc)
{
    while (pc->out.len) {
        long s = tern_tcp_send(st, c, bb_data(&pc->out), pc->out.len);
        if (s <= 0)
            return;
        bb_consume(&pc->out, (size_t)s);
    }
    if (pc->held) {
        tern_tcp_consumed(st, c, pc->held);
        pc->held = 0;
    }
}

/* Send what the backlog holds; once empty, reopen the window. Inline only
 * the test: most connections never have a backlog. */
static inline void pend_flush(tern_stack *st, tern_conn *c, pend_conn *pc)
{
    if (pc && (pc->out.len || pc->held))
        pend_drain(st, c, pc);
}

static inline void pend_free(pend_conn *pc)
{
    if (pc) {
        bb_free(&pc->out);
        free(pc);
    }
}

#endif
