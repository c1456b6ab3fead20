/* tern-httpd - HTTP/1.1 keep-alive server with a fixed response on the tern
 * stack (a small-response workload, for wrk and curl). Requests are parsed
 * in place inside the recv callback (only a head split across segments is
 * copied) and the responses of all requests in one segment leave in one
 * send, with the ACK. With --driver mem (no --server), a built-in
 * keep-alive GET load generator runs on a second stack in the same thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_opts.h"
#include "http.h"
#include "parse.h"
#include "results.h"
#include "rt_app.h"
#include "tern_rr.h"

typedef struct hconn {
    pend_conn pend;             /* first: pend_* work on it */
    http_conn http;
    bool closing;
} hconn;

static common_opts co;
static httpd_opts ho;
static http_srv srv;
static __thread bytebuf scratch;   /* responses of one recv callback */

/* ---- server ---- */

static void *srv_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)lu;
    hconn *h = calloc(1, sizeof *h);
    if (!h)
        tern_tcp_abort(st, c);
    return h;
}

static size_t srv_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                       const uint8_t *d, size_t len)
{
    (void)b;
    hconn *h = user;
    if (!h || h->closing)
        return len;
    scratch.len = scratch.off = 0;
    int r = http_conn_input(&h->http, &srv, (const char *)d, len, &scratch);
    size_t consumed = len;
    if (h->pend.out.len) {
        /* Behind a backlog: queue in order, keep the window shut. */
        bb_append(&h->pend.out, bb_data(&scratch), scratch.len, SIZE_MAX);
        h->pend.held += len;
        consumed = 0;
    } else if (scratch.len) {
        long s = tern_tcp_send(st, c, bb_data(&scratch), scratch.len);
        if (s < 0)
            s = 0;
        if ((size_t)s < scratch.len) {
            bb_append(&h->pend.out, bb_data(&scratch) + s,
                      scratch.len - (size_t)s, SIZE_MAX);
            h->pend.held += len;
            consumed = 0;
        }
    }
    if (r == HTTP_CLOSE) {
        h->closing = true;
        if (!h->pend.out.len)
            tern_tcp_close(st, c);    /* FIN after the queued responses */
    }
    return consumed;
}

static void srv_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    (void)bytes;
    hconn *h = user;
    if (!h)
        return;
    pend_flush(st, c, &h->pend);
    if (h->closing && !h->pend.out.len)
        tern_tcp_close(st, c);
}

static void srv_peer_closed(tern_stack *st, tern_conn *c, void *user)
{
    hconn *h = user;
    if (h)
        h->closing = true;
    if (!h || !h->pend.out.len)
        tern_tcp_close(st, c);
}

static void srv_closed(tern_stack *st, tern_conn *c, void *user, int reason)
{
    (void)st;
    (void)c;
    (void)reason;
    hconn *h = user;
    if (h) {
        http_conn_free(&h->http);
        bb_free(&h->pend.out);
        free(h);
    }
}

/* ---- client (the built-in load generator) ---- */

static void cli_connected(tern_stack *st, tern_conn *c, void *user)
{
    (void)c;
    trr_connected(st, user);
}

static size_t cli_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                       const uint8_t *d, size_t len)
{
    (void)c;
    (void)b;
    (void)d;
    return trr_recv(st, user, len);
}

static void cli_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    (void)c;
    (void)bytes;
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
    /* Each endpoint gets its role's callbacks, so none asks which
     * endpoint it runs for. */
    if (ep->role == RT_SERVER) {
        cfg->cb.accepted = srv_accepted;
        cfg->cb.recv = srv_recv;
        cfg->cb.acked = srv_acked;
        cfg->cb.peer_closed = srv_peer_closed;
        cfg->cb.closed = srv_closed;
    } else {
        cfg->cb.connected = cli_connected;
        cfg->cb.recv = cli_recv;
        cfg->cb.acked = cli_acked;
        cfg->cb.closed = cli_closed;
    }
    if (cfg->max_conns < 4096)
        cfg->max_conns = 4096;        /* wrk and curl open many */
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
        int rc = tern_tcp_listen(ep->st, (uint16_t)ho.port, NULL);
        if (rc) {
            snprintf(core->errmsg, sizeof core->errmsg,
                     "listen on port %u: %s", (unsigned)ho.port,
                     tern_strerror(rc));
            return -1;
        }
    }
    return 0;
}

static void iter(rt_core *core)
{
    if (ho.mode != MODE_SERVER)
        trr_iter(core);
}

static bool report_out(rt *r)
{
    report rp;
    tern_counters all, srvc;
    rt_counters(r, -1, &all);
    rt_counters(r, RT_SERVER, &srvc);
    rep_begin(&rp, stdout, co.json, co.prog);
    rep_str(&rp, "driver", co.driver);
    rep_str(&rp, "mode", ho.mode == MODE_SERVER ? "server"
                         : ho.mode == MODE_CLIENT ? "client" : "both");
    rep_u64(&rp, "cores", co.ncores);
    rep_u64(&rp, "body_size", ho.body_size);
    bool ok = true;
    if (ho.mode != MODE_SERVER) {
        rr_total tot;
        uint64_t done;
        bool failed;
        rep_u64(&rp, "conns", ho.conns);
        rep_u64(&rp, "depth", ho.depth);
        trr_total(&tot, &done, &failed);
        report_rr(&rp, &tot);
        ok = !failed && (!ho.requests || done == ho.requests);
    } else {
        rep_u64(&rp, "accepted", srvc.tcp_passive_opens);
        rep_u64(&rp, "bytes_in", srvc.tcp_bytes_in);
        rep_u64(&rp, "bytes_out", srvc.tcp_bytes_out);
    }
    rt_report_end(&rp, r, &all);
    return ok;
}

int main(int argc, char **argv)
{
    common_defaults(&co, "tern-httpd", FAMILY_TERN);
    httpd_opts_parse(&co, &ho, argc, argv);
    if (http_srv_init(&srv, ho.body_size))
        return 1;
    if (ho.mode != MODE_SERVER &&
        !trr_setup(co.prog, co.ncores, (const uint8_t *)http_get_req,
                   (uint32_t)http_get_req_len, (uint32_t)srv.ok_keep_len,
                   ho.conns, ho.depth, ho.requests, ho.duration,
                   ho.mode == MODE_CLIENT ? ho.peer_ip : RT_MEM_SERVER_IP,
                   ho.mode == MODE_CLIENT ? ho.peer_port : (uint16_t)ho.port))
        opts_fail(&co, "no client connections (--conns too small for --cores?)");
    rt_params p;
    rt_params_from_opts(&p, &co, ho.mode == MODE_SERVER ? RT_SERVER
                                                         : RT_CLIENT);
    rt_hooks h = {.configure = configure, .start = start, .iter = iter,
                  .finish = trr_finish_clients, .work = trr_work};
    char banner[128] = "";
    if (ho.mode == MODE_SERVER && !co.json)
        rt_app_banner(banner, sizeof banner, &co, "serving", (unsigned)ho.port);
    return rt_app_run(&co, &p, &h, banner, report_out);
}
