/* tern-echo - request/response benchmark on the tern stack (the headline
 * number). Server: echo every byte back from inside the recv callback, so
 * the reply carries the ACK. Client: --conns connections with --depth
 * requests of --size bytes in flight each, replies counted by bytes,
 * latency from the loop's clock (tern_rr.h). With --driver mem both stacks
 * run in one thread per core over an in-memory link. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_opts.h"
#include "results.h"
#include "rt_app.h"
#include "tern_rr.h"

static common_opts co;
static echo_opts eo;

/* ---- server: echo, keeping a backlog only when the send buffer is full.
 * The callbacks of each endpoint are set by its role (configure), so none
 * asks which endpoint it runs for. */

/* The send buffer took only s bytes of len (s < 0: none): keep the rest. */
static __attribute__((noinline, cold, unused)) size_t
srv_backlog(tern_stack *st, tern_conn *c, const uint8_t *d, size_t len, long s)
{
    if (s < 0)
        s = 0;
    pend_conn *pc = pend_of(c);
    if (!pc) {
        tern_tcp_abort(st, c);
        return len;
    }
    pend_hold(pc, d + s, len - (size_t)s);
    return (size_t)s;
}

/* What a partial send needs back after the call. */
typedef struct srv_request {
    tern_stack *st;
    tern_conn *c;
    const uint8_t *d;
    size_t len;
} srv_request;

/* The usual case: no backlog, the send takes the whole request. The
 * request is kept in memory (volatile), not in four callee-saved registers:
 * four stores cost less than four pushes, moves and pops, and only the
 * rare partial send reads it back. */
static size_t srv_echo(tern_stack *st, tern_conn *c, const uint8_t *d,
                       size_t len)
{
    volatile srv_request r;
    r.st = st;
    r.c = c;
    r.d = d;
    r.len = len;
    long s = tern_tcp_send(st, c, d, len);
    if (__builtin_expect(s == (long)r.len, 1))
        return (size_t)s;
    return srv_backlog(r.st, r.c, r.d, r.len, s);
}

/* Behind a backlog: hold the request too, to stay in order. */
static __attribute__((noinline, cold, unused)) size_t
srv_hold(pend_conn *pc, const uint8_t *d, size_t len)
{
    return pend_hold(pc, d, len);
}

static size_t srv_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                       const uint8_t *d, size_t len)
{
    (void)b;
    pend_conn *pc = user;
    if (pc && pc->out.len)
        return srv_hold(pc, d, len);
    return srv_echo(st, c, d, len);
}

static void *srv_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)c; (void)lu;
    return NULL;                        /* state only if a backlog forms */
}

static void srv_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    (void)bytes;
    pend_flush(st, c, user);
}

/* A send the budget or the pool refused (srv_backlog kept it): retry. */
static void srv_writable(tern_stack *st, tern_conn *c, void *user)
{
    pend_flush(st, c, user);
}

static void srv_peer_closed(tern_stack *st, tern_conn *c, void *user)
{
    (void)user;
    tern_tcp_close(st, c);
}

static void srv_closed(tern_stack *st, tern_conn *c, void *user, int reason)
{
    (void)st; (void)c; (void)reason;
    pend_free(user);
}

/* ---- client: the request/response generator (tern_rr.h) ---- */

static void cli_connected(tern_stack *st, tern_conn *c, void *user)
{
    (void)c;
    trr_connected(st, user);
}

static size_t cli_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                       const uint8_t *d, size_t len)
{
    (void)c; (void)b; (void)d;
    return trr_recv(st, user, len);
}

static void cli_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    (void)c; (void)bytes;
    trr_acked(st, user);
}

static void cli_writable(tern_stack *st, tern_conn *c, void *user)
{
    (void)c;
    trr_acked(st, user);
}

static void cli_closed(tern_stack *st, tern_conn *c, void *user, int reason)
{
    (void)c;
    trr_closed(st, user, reason, rt_close_reason(reason));
}

/* ---- runtime hooks ---- */

static void configure(rt_ep *ep, tern_config *cfg)
{
    rt_app_ip6(&co, ep, cfg);
    if (ep->role == RT_SERVER) {
        cfg->cb.accepted = srv_accepted;
        cfg->cb.recv = srv_recv;
        cfg->cb.acked = srv_acked;
        cfg->cb.writable = srv_writable;
        cfg->cb.peer_closed = srv_peer_closed;
        cfg->cb.closed = srv_closed;
        cfg->tfo_server = eo.tfo;
    } else {
        cfg->cb.connected = cli_connected;
        cfg->cb.recv = cli_recv;
        cfg->cb.acked = cli_acked;
        cfg->cb.writable = cli_writable;
        cfg->cb.closed = cli_closed;
    }
    rt_app_conn_defaults(ep, cfg, eo.conns * 2 + 64);
}

static int start(rt_core *core)
{
    for (unsigned e = 0; e < core->nep; e++) {
        rt_ep *ep = &core->ep[e];
        if (ep->role == RT_CLIENT) {
            if (trr_start(ep))
                return -1;
            continue;
        }
        int rc = tern_tcp_listen(ep->st, (uint16_t)eo.port, NULL);
        if (rc) {
            snprintf(core->errmsg, sizeof core->errmsg,
                     "listen on port %u: %s", (unsigned)eo.port,
                     tern_strerror(rc));
            return -1;
        }
    }
    return 0;
}

static void iter(rt_core *core) { trr_iter(core); }

static bool report_out(rt *r)
{
    report rp;
    tern_counters all, srv;
    rt_counters(r, -1, &all);
    rt_counters(r, RT_SERVER, &srv);
    rep_begin(&rp, stdout, co.json, co.prog);
    rep_str(&rp, "driver", co.driver);
    rep_str(&rp, "mode", eo.mode == MODE_BOTH ? "both"
                         : eo.mode == MODE_SERVER ? "server" : "client");
    rep_u64(&rp, "cores", co.ncores);
    rep_u64(&rp, "conns", eo.conns);
    rep_u64(&rp, "size", eo.size);
    rep_u64(&rp, "depth", eo.depth);
    bool ok = true;
    if (eo.mode != MODE_SERVER) {
        rr_total tot;
        uint64_t done;
        bool failed;
        trr_total(&tot, &done, &failed);
        report_rr(&rp, &tot);
        double full;
        if (rt_rate_full(r, &full))         /* see rt_report_speed */
            rep_f(&rp, "rps_full", full, 0);
        ok = !failed && (!eo.requests || done == eo.requests);
    } else {
        rep_u64(&rp, "requests", srv.tcp_bytes_in / eo.size);
        rep_u64(&rp, "bytes_echoed", srv.tcp_bytes_out);
        rep_u64(&rp, "accepted", srv.tcp_passive_opens);
    }
    rt_report_end(&rp, r, &all);
    return ok;
}

int main(int argc, char **argv)
{
    common_defaults(&co, "tern-echo", FAMILY_TERN);
    echo_opts_parse(&co, &eo, argc, argv);
    if (!eo.port)
        eo.port = 7007;
    uint8_t *req = malloc(eo.size);
    if (!req)
        return 1;
    for (uint64_t i = 0; i < eo.size; i++)
        req[i] = (uint8_t)('a' + i % 26);
    if (eo.mode != MODE_SERVER &&
        !trr_setup(co.prog, co.ncores, req, (uint32_t)eo.size,
                   (uint32_t)eo.size, eo.conns, eo.depth, eo.requests,
                   eo.duration,
                   eo.mode == MODE_CLIENT ? rt_app_addr(&eo.peer.addr)
                                          : rt_app_mem_server(&co),
                   eo.mode == MODE_CLIENT ? eo.peer.port : (uint16_t)eo.port))
        opts_fail(&co, "no client connections (--conns too small for --cores?)");
    trr_set_tfo(eo.tfo);

    rt_params p;
    rt_params_from_opts(&p, &co, eo.mode == MODE_SERVER ? RT_SERVER
                                                         : RT_CLIENT);
    rt_hooks h = {.configure = configure, .start = start, .iter = iter,
                  .finish = trr_finish_clients, .work = trr_work};
    char banner[128] = "";
    if (eo.mode == MODE_SERVER && !co.json)
        rt_app_banner(banner, sizeof banner, &co, "serving", (unsigned)eo.port);
    return rt_app_run(&co, &p, &h, banner[0] ? banner : NULL, report_out);
}
