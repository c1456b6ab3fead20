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
    bytebuf in;                 /* requests not yet parsed: held while the
                                   responses before them wait to be sent */
    bool closing;               /* a request asked for close: FIN after
                                   its response, later requests ignored */
    bool peer_fin;              /* the client closed: FIN once answered */
} hconn;

static common_opts co;
static httpd_opts ho;
static http_srv srv;
static __thread bytebuf scratch;   /* responses of one slice of input */

/* Requests are parsed this many bytes at a time, and no further while
 * responses wait for send space: the memory a connection holds is then
 * the unparsed requests (at most its receive window, which stays shut
 * until they are answered) plus the responses of one slice, however many
 * requests a client pipelines without reading. */
#define HTTPD_SLICE 1024u

/* ---- server ---- */

static void *srv_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)lu;
    hconn *h = calloc(1, sizeof *h);
    if (!h)
        tern_tcp_abort(st, c);
    return h;
}

/* Send what the backlog holds, then parse and answer held requests a
 * slice at a time; once both are empty, reopen the window (and close if
 * a request asked for it). Runs from `acked` and `writable`. */
static void srv_drain(tern_stack *st, tern_conn *c, hconn *h)
{
    for (;;) {
        while (h->pend.out.len) {
            long s = tern_tcp_send(st, c, bb_data(&h->pend.out),
                                   h->pend.out.len);
            if (s <= 0)
                return;
            bb_consume(&h->pend.out, (size_t)s);
        }
        if (!h->in.len || h->closing)
            break;
        size_t n = h->in.len < HTTPD_SLICE ? h->in.len : HTTPD_SLICE;
        if (http_conn_input(&h->http, &srv, bb_data(&h->in), n,
                            &h->pend.out) == HTTP_CLOSE)
            h->closing = true;
        bb_consume(&h->in, n);
    }
    bb_free(&h->in);                    /* empty, or ignored after a close */
    if (h->pend.held) {
        tern_tcp_consumed(st, c, h->pend.held);
        h->pend.held = 0;
    }
    if (h->closing || h->peer_fin)
        tern_tcp_close(st, c);          /* FIN after the responses */
}

static size_t srv_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                       const uint8_t *d, size_t len)
{
    (void)b;
    hconn *h = user;
    if (!h || h->closing)
        return len;
    if (h->pend.out.len || h->in.len) {
        /* Behind a backlog: keep the requests, in order, unparsed, and the
         * window shut. */
        bb_append(&h->in, d, len, SIZE_MAX);
        h->pend.held += len;
        return 0;
    }
    size_t off = 0;
    while (off < len && !h->pend.out.len && !h->closing) {
        size_t n = len - off < HTTPD_SLICE ? len - off : HTTPD_SLICE;
        scratch.len = scratch.off = 0;
        int r = http_conn_input(&h->http, &srv, (const char *)d + off, n,
                                &scratch);
        off += n;
        if (r == HTTP_CLOSE)
            h->closing = true;
        if (!scratch.len)
            continue;
        long s = tern_tcp_send(st, c, bb_data(&scratch), scratch.len);
        if (s < 0)
            s = 0;
        if ((size_t)s < scratch.len)
            bb_append(&h->pend.out, bb_data(&scratch) + s,
                      scratch.len - (size_t)s, SIZE_MAX);
    }
    if (!h->pend.out.len) {
        if (h->closing)
            tern_tcp_close(st, c);      /* FIN after the queued responses */
        return len;
    }
    /* the send space ran out: the rest waits for `acked` or `writable` */
    if (!h->closing)
        bb_append(&h->in, d + off, len - off, SIZE_MAX);
    h->pend.held += len;
    return 0;
}

static void srv_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    (void)bytes;
    hconn *h = user;
    if (h && (h->pend.out.len || h->in.len || h->pend.held))
        srv_drain(st, c, h);
}

static void srv_writable(tern_stack *st, tern_conn *c, void *user)
{
    hconn *h = user;
    if (h)
        srv_drain(st, c, h);
}

static void srv_peer_closed(tern_stack *st, tern_conn *c, void *user)
{
    hconn *h = user;
    if (!h) {
        tern_tcp_close(st, c);
        return;
    }
    /* answer the requests already received, then close */
    h->peer_fin = true;
    if (!h->pend.out.len && !h->in.len)
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
        bb_free(&h->in);
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
    /* Each endpoint gets its role's callbacks, so none asks which
     * endpoint it runs for. */
    if (ep->role == RT_SERVER) {
        cfg->cb.accepted = srv_accepted;
        cfg->cb.recv = srv_recv;
        cfg->cb.acked = srv_acked;
        cfg->cb.writable = srv_writable;
        cfg->cb.peer_closed = srv_peer_closed;
        cfg->cb.closed = srv_closed;
    } else {
        cfg->cb.connected = cli_connected;
        cfg->cb.recv = cli_recv;
        cfg->cb.acked = cli_acked;
        cfg->cb.writable = cli_writable;
        cfg->cb.closed = cli_closed;
    }
    rt_app_conn_defaults(ep, cfg, ho.conns * 2 + 64);
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
                   ho.mode == MODE_CLIENT ? rt_app_addr(&ho.peer.addr)
                                          : rt_app_mem_server(&co),
                   ho.mode == MODE_CLIENT ? ho.peer.port : (uint16_t)ho.port))
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
