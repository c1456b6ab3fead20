/* tern_rr.h - the request/response load generator on tern stacks, shared by
 * tern-echo and tern-httpd (client role endpoints). Header-only because
 * apps/common's .c files also go into the kern-* twins, which must not link
 * the runtime.
 *
 * Per request: rr_recv (a few adds and a histogram increment) and one
 * tern_tcp_send of the next request(s) from inside the recv callback, so
 * the request carries the ACK. Time is the loop's clock (core->now).
 * A connection's state points to its core's, so the callbacks need not ask
 * the stack for its endpoint (tern_get_user) on every segment. */
#ifndef APPS_TERN_RR_H
#define APPS_TERN_RR_H

#include <stdio.h>
#include <stdlib.h>

#include "bytebuf.h"
#include "rr.h"
#include "rt.h"

struct trr_core;

typedef struct trr_conn {
    rr_conn rr;
    tern_conn *c;
    struct trr_core *sc;        /* the core this connection runs on */
    bytebuf pend;               /* requests the send buffer refused */
} trr_conn;

typedef struct trr_core {
    rr_thread rr;
    rt_core *core;              /* set by trr_start */
    trr_conn *conns;
    unsigned n;
    uint64_t deadline;
    bool failed;
    rt_ep *arp_watch;           /* a real link's client until it connects:
                                   checked for an unanswered ARP */
    rt_ep *dad_ep;              /* connects put off while our IPv6
                                   addresses pass DAD (rt_app_dad_wait) */
    uint64_t dad_since;
} trr_core;

typedef struct trr {
    trr_core *cores;
    unsigned ncores;
    uint8_t *train;             /* RR_MAX_DEPTH requests back to back */
    uint32_t req_len;
    double duration;
    tern_addr dst;
    uint16_t dst_port;
    const char *prog;
    bool tfo;                   /* TCP Fast Open: see trr_set_tfo */
} trr;

static trr g_trr;

/* Split conns and requests over the cores. False if no core gets any. */
static inline bool trr_setup(const char *prog, unsigned ncores,
                             const uint8_t *req, uint32_t req_len,
                             uint32_t resp_len, uint64_t conns, uint64_t depth,
                             uint64_t requests, double duration,
                             tern_addr dst, uint16_t port)
{
    trr *t = &g_trr;
    t->prog = prog;
    t->ncores = ncores;
    t->cores = calloc(ncores, sizeof *t->cores);
    t->train = rr_request_train(req, req_len, RR_MAX_DEPTH);
    t->req_len = req_len;
    t->duration = duration;
    t->dst = dst;
    t->dst_port = port;
    if (!t->cores || !t->train)
        return false;
    unsigned active = 0;
    for (unsigned i = 0; i < ncores; i++) {
        trr_core *sc = &t->cores[i];
        uint64_t quota = requests ? requests / ncores + (i < requests % ncores)
                                  : 0;
        sc->n = (unsigned)(conns / ncores + (i < conns % ncores));
        if (requests && !quota)
            sc->n = 0;
        sc->conns = calloc(sc->n ? sc->n : 1, sizeof *sc->conns);
        rr_thread_init(&sc->rr, req_len, resp_len, (uint32_t)depth, quota);
        active += sc->n > 0;
    }
    return active > 0;
}

/* Out of line: the rare paths stay out of the callbacks' register use.
 * Queue requests [from, n) of the train behind what the send buffer held. */
static __attribute__((noinline, cold, unused)) void trr_queue(trr_conn *cc,
                                                       size_t from, size_t n)
{
    bb_append(&cc->pend, g_trr.train + from, n - from, SIZE_MAX);
}

static inline void trr_send(tern_stack *st, trr_conn *cc, unsigned k)
{
    size_t n = (size_t)k * g_trr.req_len;
    if (cc->pend.len) {
        trr_queue(cc, 0, n);
        return;
    }
    long s = tern_tcp_send(st, cc->c, g_trr.train, n);
    if (s != (long)n)
        trr_queue(cc, s < 0 ? 0 : (size_t)s, n);
}

/* TCP Fast Open (tern_tcp_connect_data): each connection's first request
 * is handed to the connect. The first connection of a core opens alone
 * and asks for the server's cookie; the others open once it is connected
 * (the cookie is cached then) and carry their first request in the SYN. */
static inline void trr_set_tfo(bool on) { g_trr.tfo = on; }

/* Open connection k of the core (ep: its client endpoint); 0 or -tern_err. */
static inline int trr_open(tern_stack *st, trr_core *sc, unsigned k)
{
    int err = 0;
    trr_conn *cc = &sc->conns[k];
    cc->sc = sc;
    const tern_addr *dst = &g_trr.dst;
    cc->c = g_trr.tfo ? tern_tcp_connect_data(st, dst, g_trr.dst_port, 0, cc,
                                              g_trr.train, g_trr.req_len,
                                              &err)
                      : tern_tcp_connect(st, dst, g_trr.dst_port, 0, cc,
                                         &err);
    return cc->c ? 0 : -(err ? err : TERN_ENOMEM);
}

/* Open this core's share of connections; 0, or the first -tern_err (the
 * earlier ones stay open). */
static inline int trr_open_share(rt_ep *ep, trr_core *sc)
{
    unsigned n = g_trr.tfo && sc->n ? 1 : sc->n;
    for (unsigned k = 0; k < n; k++) {
        if (sc->conns[k].c)
            continue;
        int rc = trr_open(ep->st, sc, k);
        if (rc)
            return rc;
    }
    return 0;
}

/* Connect this core's share (client endpoint). */
static inline int trr_start(rt_ep *ep)
{
    trr_core *sc = &g_trr.cores[ep->core->idx];
    sc->core = ep->core;
    sc->arp_watch = ep->dev ? ep : NULL;
    int rc = trr_open_share(ep, sc);
    if (rc && rt_app_dad_wait(ep->st, &g_trr.dst, -rc, ep->core->now,
                              &sc->dad_since)) {
        sc->dad_ep = ep;                /* trr_iter tries again */
        return 0;
    }
    if (rc) {
        rt_app_connect_error(ep->core->errmsg, sizeof ep->core->errmsg, ep,
                             &g_trr.dst, g_trr.dst_port, -rc);
        return -1;
    }
    return 0;
}

/* Connects put off by DAD: again, until they go or the wait ends. */
static __attribute__((noinline, cold, unused)) void
trr_retry_open(trr_core *sc)
{
    rt_ep *ep = sc->dad_ep;
    int rc = trr_open_share(ep, sc);
    if (rc && rt_app_dad_wait(ep->st, &g_trr.dst, -rc, sc->core->now,
                              &sc->dad_since))
        return;
    sc->dad_ep = NULL;
    if (rc) {
        char msg[200];
        rt_app_connect_error(msg, sizeof msg, ep, &g_trr.dst,
                             g_trr.dst_port, -rc);
        fprintf(stderr, "%s: %s\n", g_trr.prog, msg);
        sc->failed = true;
    }
}

/* With TFO the first connection is up: open the others (cold path). */
static __attribute__((noinline, cold, unused)) void
trr_open_rest(tern_stack *st, trr_core *sc)
{
    for (unsigned k = 1; k < sc->n; k++) {
        int rc = trr_open(st, sc, k);
        if (rc) {
            fprintf(stderr, "%s: core %u: connect: %s\n", g_trr.prog,
                    sc->core->idx, tern_strerror(rc));
            sc->failed = true;
            return;
        }
    }
}

static inline void trr_connected(tern_stack *st, void *user)
{
    trr_conn *cc = user;
    trr_core *sc = cc->sc;
    unsigned k = rr_start(&sc->rr, &cc->rr, sc->core->now);
    if (g_trr.tfo) {
        /* the first request went with the connect */
        if (cc == &sc->conns[0])
            trr_open_rest(st, sc);
        k = k ? k - 1 : 0;
    }
    if (k)
        trr_send(st, cc, k);
}

/* What trr_recv needs after its send. */
typedef struct trr_live {
    trr_conn *cc;
    size_t len;
} trr_live;

/* The usual case's answer (rr_one_response held, nothing queued): complete
 * the oldest request, send one new request whole (or queue the rest). */
static inline size_t trr_answer_one(tern_stack *st, trr_conn *cc,
                                    trr_core *sc, size_t len, uint64_t now)
{
    /* Quota reached or stopping: nothing to send. No overrun check: the
     * response (len == resp_len > 0) answered a request in flight. */
    if (!rr_complete_one(&sc->rr, &cc->rr, now))
        return len;
    /* cc and len are kept in memory (volatile), not in callee-saved
     * registers: two stores and a load cost less than pushes, moves and
     * pops, and only a partial send reads cc back. */
    volatile trr_live r;
    r.cc = cc;
    r.len = len;
    long s = tern_tcp_send(st, cc->c, g_trr.train, g_trr.req_len);
    if (s != (long)g_trr.req_len)
        trr_queue(r.cc, s < 0 ? 0 : (size_t)s, g_trr.req_len);
    return r.len;
}

/* trr_recv but for its usual case. One whole response with a new latency
 * (the first of each loop iteration) starts the histogram's new run and
 * is answered as the usual case; otherwise the general rr_recv, then the
 * requests it allows, behind the queued ones, or a check for an overrun.
 * Out of line (a tail call), so the usual case keeps no register across
 * its one call. */
static __attribute__((noinline, unused)) size_t
trr_recv_any(tern_stack *st, trr_conn *cc, size_t len)
{
    trr_core *sc = cc->sc;
    uint64_t now = sc->core->now;
    if (rr_one_whole(&sc->rr, &cc->rr, len) && !cc->pend.len) {
        rr_new_latency(&sc->rr, &cc->rr, now);
        return trr_answer_one(st, cc, sc, len, now);
    }
    unsigned k = rr_recv(&sc->rr, &cc->rr, len, now);
    if (k)
        trr_send(st, cc, k);
    else if (rr_overrun(&cc->rr, &sc->rr))
        sc->failed = true;
    return len;
}

/* Usually one whole response that a new request answers at once, sent
 * whole by tern_tcp_send (the rest is queued). */
static inline size_t trr_recv(tern_stack *st, void *user, size_t len)
{
    trr_conn *cc = user;
    trr_core *sc = cc->sc;
    uint64_t now = sc->core->now;
    if (!rr_one_response(&sc->rr, &cc->rr, len, now) || cc->pend.len)
        return trr_recv_any(st, cc, len);
    return trr_answer_one(st, cc, sc, len, now);
}

static __attribute__((noinline, cold, unused)) void trr_flush(tern_stack *st,
                                                       trr_conn *cc)
{
    while (cc->pend.len) {
        long s = tern_tcp_send(st, cc->c, bb_data(&cc->pend), cc->pend.len);
        if (s <= 0)
            return;
        bb_consume(&cc->pend, (size_t)s);
    }
}

/* user is never NULL: a client stack's only connections are trr_start's,
 * each made with its trr_conn. */
static inline void trr_acked(tern_stack *st, void *user)
{
    trr_conn *cc = user;
    if (cc->pend.len)
        trr_flush(st, cc);
}

/* A client connection went away: a failure unless the run is ending. */
static inline void trr_closed(tern_stack *st, void *user, int reason,
                              const char *why)
{
    trr_conn *cc = user;
    if (!cc)
        return;
    trr_core *sc = cc->sc;
    cc->c = NULL;
    if (!sc->rr.stopping && !rr_quota_done(&sc->rr) && !sc->core->stop &&
        !rt_stopping()) {
        sc->failed = true;
        fprintf(stderr, "%s: core %u: a connection closed (%s)\n", g_trr.prog,
                sc->core->idx, why);
        rt_core_stop(sc->core);
    }
    (void)st;
    (void)reason;
}

/* Once per loop iteration: end on time, or once the quota is in. */
static inline void trr_iter(rt_core *core)
{
    if (!g_trr.cores)
        return;                     /* server only: no load to generate */
    trr_core *sc = &g_trr.cores[core->idx];
    if (!sc->n)
        return;
    if (sc->dad_ep)
        trr_retry_open(sc);
    rr_thread *t = &sc->rr;
    if (!sc->deadline && t->t_first && g_trr.duration > 0)
        sc->deadline = t->t_first + (uint64_t)(g_trr.duration * 1e9);
    if (sc->deadline && core->now >= sc->deadline)
        rr_stop(t);
    if (sc->arp_watch) {
        char why[200];
        if (rt_app_arp_failed(sc->arp_watch, &g_trr.dst, why, sizeof why)) {
            fprintf(stderr, "%s: %s\n", g_trr.prog, why);
            sc->failed = true;
            sc->arp_watch = NULL;
        } else if (tern_get_counters(sc->arp_watch->st)->tcp_conns_established) {
            sc->arp_watch = NULL;        /* it answered: stop looking */
        }
    }
    if (rr_quota_done(t) || sc->failed) {
        rt_core_stop(core);
        return;
    }
    if (t->stopping) {
        bool idle = true;
        for (unsigned k = 0; k < sc->n && idle; k++)
            idle = sc->conns[k].rr.inflight == 0;
        if (idle || core->now > sc->deadline + 5000000000ull)
            rt_core_stop(core);
    }
}

/* Close this core's client connections (the runtime drains the FINs). */
static inline void trr_finish(rt_ep *ep)
{
    trr_core *sc = &g_trr.cores[ep->core->idx];
    for (unsigned k = 0; k < sc->n; k++)
        if (sc->conns[k].c)
            tern_tcp_close(ep->st, sc->conns[k].c);
}

/* The finish hook of every request/response client: end each client
 * endpoint of the core. */
static inline void trr_finish_clients(rt_core *core)
{
    for (unsigned e = 0; e < core->nep; e++)
        if (core->ep[e].role == RT_CLIENT)
            trr_finish(&core->ep[e]);
}

/* The work hook (rt_hooks.work): requests answered on this core; a core
 * without clients (a server) counts frames received. */
static inline uint64_t trr_work(rt_core *core)
{
    if (g_trr.cores && core->idx < g_trr.ncores && g_trr.cores[core->idx].n)
        return rr_completed(&g_trr.cores[core->idx].rr);
    return core->rx_frames;
}

static inline void trr_total(rr_total *tot, uint64_t *completed, bool *failed)
{
    rr_total_init(tot);
    *completed = 0;
    *failed = false;
    for (unsigned i = 0; i < g_trr.ncores; i++) {
        rr_total_add(tot, &g_trr.cores[i].rr);
        *completed += rr_completed(&g_trr.cores[i].rr);
        *failed |= g_trr.cores[i].failed;
    }
}

#endif
