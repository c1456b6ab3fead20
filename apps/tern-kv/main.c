/* tern-kv - a key-value server speaking the Redis protocol on the tern
 * stack, for redis-cli, redis-benchmark and client libraries. Requests are
 * parsed in place inside the recv callback and the replies to everything a
 * segment carried leave in one send, with the ACK (kv_conn.h). Replies the
 * send buffer refuses wait in the connection's backlog, and input that
 * arrives meanwhile is kept unconsumed, so the receive window closes and a
 * client that does not read its replies slows itself down. Every core
 * serves its own connections from one shared table (kv_store.h says why). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kv_conn.h"
#include "kv_opts.h"
#include "kv_report.h"
#include "parse.h"
#include "results.h"
#include "rt_app.h"

typedef struct kvc {
    kv_conn kv;
    bytebuf out;            /* replies the send buffer refused */
    size_t held;            /* input bytes not yet reported consumed */
    bool paused;            /* kv.in may hold requests to serve */
    bool fin;               /* the peer sent FIN */
    bool shut;              /* we sent ours (after QUIT or an error) */
    kv_ctx *cx;
    rt_core *core;
} kvc;

static common_opts co;
static kv_opts ko;
static kv_server *srv;
static __thread bytebuf scratch;   /* the replies of one callback */

/* Send replies, behind any backlog; keep what the send buffer refuses.
 * false when memory ran out and the connection was aborted (k is gone). */
static bool transmit(tern_stack *st, tern_conn *c, kvc *k, const bytebuf *b)
{
    if (!b->len)
        return true;
    kv_count(&k->cx->bytes_out, b->len);
    size_t s = 0;
    if (!k->out.len) {
        long r = tern_tcp_send(st, c, bb_data(b), b->len);
        s = r > 0 ? (size_t)r : 0;
    }
    if (s < b->len && !bb_append(&k->out, bb_data(b) + s, b->len - s,
                                 SIZE_MAX)) {
        tern_tcp_abort(st, c);
        return false;
    }
    return true;
}

/* Once the replies are out and no kept request waits: after QUIT or a
 * protocol error send FIN but keep reading (and dropping) until the
 * client's, so its unread input cannot turn our close into a reset that
 * destroys the error reply; after the client's FIN, close. */
static void maybe_close(tern_stack *st, tern_conn *c, kvc *k)
{
    if (k->out.len || k->paused)
        return;
    if (k->fin) {
        tern_tcp_close(st, c);
    } else if (k->kv.closing && !k->shut) {
        k->shut = true;
        tern_tcp_shutdown(st, c);
    }
}

static void *srv_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)lu;
    rt_ep *ep = tern_get_user(st);
    kvc *k = calloc(1, sizeof *k);
    if (!k) {
        tern_tcp_abort(st, c);
        return NULL;
    }
    k->core = ep->core;
    k->cx = ep->core->app;
    kv_count(&k->cx->conns_opened, 1);
    return k;
}

static size_t srv_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                       const uint8_t *d, size_t len)
{
    (void)b;
    kvc *k = user;
    if (!k || k->kv.closing)
        return len;
    kv_ctx *cx = k->cx;
    kv_count(&cx->bytes_in, len);
    if (k->out.len || k->paused) {
        /* Behind unsent replies: keep the input, keep the window shut. */
        if (!kv_conn_keep(&k->kv, cx, (const char *)d, len)) {
            tern_tcp_abort(st, c);
            return len;
        }
        k->held += len;
        k->paused = true;
        return 0;
    }
    cx->now_ms = (int64_t)(k->core->now / 1000000);
    scratch.len = scratch.off = 0;
    int r = kv_conn_input(&k->kv, cx, (const char *)d, len, &scratch);
    if (!transmit(st, c, k, &scratch))
        return len;
    size_t hold = 0;
    if (r == KV_PAUSED) {
        k->paused = true;
        hold = k->kv.in.len < len ? k->kv.in.len : len;
        k->held += hold;
    }
    maybe_close(st, c, k);
    return len - hold;
}

/* The backlog drained: serve the kept requests, then reopen the window
 * for the input no longer kept (an incomplete request is consumed).
 * false when the connection was aborted (k is gone). */
static bool resume(tern_stack *st, tern_conn *c, kvc *k)
{
    kv_ctx *cx = k->cx;
    cx->now_ms = (int64_t)(k->core->now / 1000000);
    while (k->paused && !k->out.len) {
        scratch.len = scratch.off = 0;
        int r = kv_conn_input(&k->kv, cx, NULL, 0, &scratch);
        k->paused = r == KV_PAUSED;
        if (!transmit(st, c, k, &scratch))
            return false;
    }
    size_t keep = k->paused ? (k->kv.in.len < k->held ? k->kv.in.len
                                                      : k->held)
                            : 0;
    if (k->held > keep) {
        tern_tcp_consumed(st, c, k->held - keep);
        k->held = keep;
    }
    return true;
}

static void srv_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    (void)bytes;
    kvc *k = user;
    if (!k)
        return;
    while (k->out.len) {
        long s = tern_tcp_send(st, c, bb_data(&k->out), k->out.len);
        if (s <= 0)
            return;
        bb_consume(&k->out, (size_t)s);
    }
    if (k->paused && !resume(st, c, k))
        return;
    maybe_close(st, c, k);
}

static void srv_peer_closed(tern_stack *st, tern_conn *c, void *user)
{
    kvc *k = user;
    if (!k) {
        tern_tcp_close(st, c);
        return;
    }
    k->fin = true;
    maybe_close(st, c, k);
}

static void srv_closed(tern_stack *st, tern_conn *c, void *user, int reason)
{
    (void)st;
    (void)c;
    (void)reason;
    kvc *k = user;
    if (!k)
        return;
    kv_count(&k->cx->conns_closed, 1);
    kv_conn_free(&k->kv);
    bb_free(&k->out);
    free(k);
}

/* ---- runtime hooks ---- */

static void configure(rt_ep *ep, tern_config *cfg)
{
    (void)ep;
    cfg->cb.accepted = srv_accepted;
    cfg->cb.recv = srv_recv;
    cfg->cb.acked = srv_acked;
    cfg->cb.peer_closed = srv_peer_closed;
    cfg->cb.closed = srv_closed;
    if (cfg->max_conns < 4096)
        cfg->max_conns = 4096;        /* redis-benchmark opens many */
}

static int start(rt_core *core)
{
    kv_ctx *cx = kv_ctx_new(srv);
    if (!cx) {
        snprintf(core->errmsg, sizeof core->errmsg, "out of memory");
        return -1;
    }
    core->app = cx;
    cx->now_ms = (int64_t)(core->now / 1000000);
    for (unsigned e = 0; e < core->nep; e++) {
        int rc = tern_tcp_listen(core->ep[e].st, (uint16_t)ko.port, NULL);
        if (rc) {
            snprintf(core->errmsg, sizeof core->errmsg,
                     "listen on port %u: %s", (unsigned)ko.port,
                     tern_strerror(rc));
            return -1;
        }
    }
    return 0;
}

static void iter(rt_core *core)
{
    kv_tick(core->app, (int64_t)(core->now / 1000000));
}

/* Commands served on this core (rt_hooks.work). */
static uint64_t work(rt_core *core)
{
    kv_ctx *cx = core->app;
    return cx ? atomic_load_explicit(&cx->commands, memory_order_relaxed) : 0;
}

static bool report_out(rt *r)
{
    report rp;
    tern_counters all;
    rt_counters(r, -1, &all);
    rep_begin(&rp, stdout, co.json, co.prog);
    rep_str(&rp, "driver", co.driver);
    rep_u64(&rp, "cores", co.ncores);
    kv_report(&rp, srv, &ko);
    rt_report_end(&rp, r, &all);
    return true;
}

int main(int argc, char **argv)
{
    common_defaults(&co, "tern-kv", FAMILY_TERN);
    kv_opts_parse(&co, &ko, argc, argv);
    srv = kv_server_new(co.prog, ko.maxmemory, (int64_t)(now_ns() / 1000000));
    if (!srv) {
        fprintf(stderr, "%s: out of memory\n", co.prog);
        return 1;
    }
    rt_params p;
    rt_params_from_opts(&p, &co, RT_SERVER);
    rt_hooks h = {.configure = configure, .start = start, .iter = iter,
                  .work = work};
    char banner[128] = "";
    if (!co.json) {
        char ip[16];
        snprintf(banner, sizeof banner,
                 "serving %s:%u on %s %s (Ctrl-C prints the figures)",
                 fmt_ip4(co.ip, ip), (unsigned)ko.port, co.driver,
                 co.iface ? co.iface : "");
    }
    int rc = rt_app_run(&co, &p, &h, banner, report_out);
    kv_server_free(srv);
    return rc;
}
