/* echo.c - request/response over lwIP: --conns client connections each
 * send --size bytes and wait for all of them back before the next; the
 * server echoes what it receives. Latency per round trip, timed by the
 * loop's clock (read once per turn, as tern-echo does). */
#include <stdio.h>
#include <stdlib.h>

#include "hist.h"
#include "link.h"
#include "lwip/tcp.h"
#include "peer.h"
#include "report.h"

#define PORT 7

typedef struct econn {
    struct tcp_pcb *pcb;
    uint64_t t_sent;
    uint32_t got;
} econn;

static const peer_opts *opt;
static econn *conns;
static uint8_t *req;
static uint64_t issued, completed, t_start, t_stop, t_last;
static bool stopping;
static hist lat;

static uint64_t now;                /* the loop's clock (peer_clock) */

static void send_req(econn *c)
{
    if (stopping || (opt->requests && issued >= opt->requests))
        return;
    if (tcp_write(c->pcb, req, (u16_t)opt->size, TCP_WRITE_FLAG_COPY) != ERR_OK) {
        peer_fail("echo: tcp_write refused a request");
        return;
    }
    tcp_output(c->pcb);
    c->t_sent = now;
    issued++;
}

static err_t cli_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    econn *c = arg;
    (void)err;
    if (!p) {
        peer_fail("echo: the server closed a connection");
        return ERR_OK;
    }
    now = peer_clock;
    c->got += p->tot_len;
    tcp_recved(pcb, p->tot_len);
    pbuf_free(p);
    while (c->got >= opt->size) {
        c->got -= opt->size;
        hist_add(&lat, now - c->t_sent);
        completed++;
        t_last = now;
        send_req(c);
    }
    return ERR_OK;
}

static err_t srv_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    (void)arg;
    (void)err;
    if (!p) {
        tcp_close(pcb);
        return ERR_OK;
    }
    for (struct pbuf *q = p; q; q = q->next)
        if (tcp_write(pcb, q->payload, q->len, TCP_WRITE_FLAG_COPY) != ERR_OK)
            peer_fail("echo: tcp_write refused an echo");
    tcp_recved(pcb, p->tot_len);
    pbuf_free(p);
    tcp_output(pcb);
    return ERR_OK;
}

static err_t on_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    (void)arg;
    if (err != ERR_OK || !pcb)
        return ERR_VAL;
    tcp_nagle_disable(pcb);
    tcp_recv(pcb, srv_recv);
    tcp_err(pcb, peer_on_err);
    return ERR_OK;
}

static bool finished(void)
{
    if (peer_failed)
        return true;
    if (opt->requests)
        return completed >= opt->requests;
    if (!stopping && peer_clock >= t_stop)
        stopping = true;
    return stopping;
}

int run_echo(const peer_opts *o)
{
    opt = o;
    hist_init(&lat);
    conns = calloc(o->conns, sizeof *conns);
    req = calloc(1, o->size);
    if (!conns || !req)
        return 1;
    if (!peer_listen(PORT, on_accept))
        return fprintf(stderr, "lwip-peer: cannot bind the server\n"), 1;
    for (unsigned i = 0; i < o->conns; i++) {
        econn *c = &conns[i];
        c->pcb = peer_connect(c, PORT);
        tcp_nagle_disable(c->pcb);
        tcp_recv(c->pcb, cli_recv);
    }
    if (!peer_loop(peer_all_connected, 10) || peer_failed)
        return fprintf(stderr, "lwip-peer: echo: connections not established\n"), 1;
    now = t_start = peer_now();
    t_stop = t_start + (uint64_t)(o->duration * 1e9);
    for (unsigned i = 0; i < o->conns; i++)
        send_req(&conns[i]);
    if (!peer_loop(finished, 10))
        peer_fail("echo: stalled");
    if (peer_failed)
        return 1;
    hist_flush(&lat);
    double secs = t_last > t_start ? (double)(t_last - t_start) / 1e9 : 0;
    report r;
    rep_begin(&r, stdout, o->json, "lwip-peer");
    rep_str(&r, "driver", "mem");
    rep_u64(&r, "conns", o->conns);
    rep_u64(&r, "size", o->size);
    rep_u64(&r, "requests", completed);
    rep_f(&r, "duration_s", secs, 3);
    rep_f(&r, "rps", secs > 0 ? (double)completed / secs : 0, 0);
    rep_f(&r, "p50_us", (double)hist_percentile(&lat, 50) / 1e3, 2);
    rep_f(&r, "p99_us", (double)hist_percentile(&lat, 99) / 1e3, 2);
    rep_f(&r, "p999_us", (double)hist_percentile(&lat, 99.9) / 1e3, 2);
    rep_f(&r, "mean_us", hist_mean(&lat) / 1e3, 2);
    rep_f(&r, "max_us", lat.count ? (double)lat.max / 1e3 : 0, 2);
    rep_u64(&r, "link_drops", lwip_link_drops());
    rep_end(&r);
    return 0;
}
