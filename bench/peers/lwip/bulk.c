/* bulk.c - bulk transfer over lwIP with the application work of
 * tern-bulk: the sender writes every byte (pattern_fill into a source
 * buffer, timed as gen_s) and hands it to tcp_write, which copies it into
 * lwIP's segments; the receiver checks every byte of every pbuf against
 * the pattern (pattern_check) before it frees it. */
#include <stdio.h>
#include <stdlib.h>

#include "link.h"
#include "lwip/tcp.h"
#include "pattern.h"
#include "peer.h"
#include "report.h"

#define PORT 5001
#define SRC_BYTES 65536u            /* the sender's source buffer */

typedef struct bconn {
    struct tcp_pcb *pcb;
    uint64_t sent, total, got;
    bool bad;
} bconn;

static const peer_opts *opt;
static bconn *conns;
static uint8_t *src;
static uint64_t received, gen_ns, t_start, t_last;

/* Writes as much of the stream as lwIP's send buffer takes. */
static void pump(bconn *c)
{
    while (c->sent < c->total) {
        uint64_t left = c->total - c->sent;
        uint32_t room = tcp_sndbuf(c->pcb);
        uint32_t n = left < room ? (uint32_t)left : room;
        if (n > SRC_BYTES)
            n = SRC_BYTES;
        if (n < left && n < TCP_MSS)
            break;                  /* wait for room for a whole segment */
        uint64_t t0 = peer_now();
        pattern_fill(src, c->sent, n);
        gen_ns += peer_now() - t0;
        err_t e = tcp_write(c->pcb, src, (u16_t)n,
                            TCP_WRITE_FLAG_COPY | (n < left ? TCP_WRITE_FLAG_MORE : 0));
        if (e == ERR_MEM)
            break;                  /* segment queue full: on_sent goes on */
        if (e != ERR_OK) {
            peer_fail("bulk: tcp_write failed");
            return;
        }
        c->sent += n;
    }
    tcp_output(c->pcb);
}

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
    (void)pcb;
    (void)len;
    pump(arg);
    return ERR_OK;
}

static err_t srv_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    bconn *c = arg;
    (void)err;
    if (!p) {
        tcp_close(pcb);
        return ERR_OK;
    }
    if (!c) {
        pbuf_free(p);
        peer_fail("bulk: data on an unknown connection");
        return ERR_OK;
    }
    for (struct pbuf *q = p; q; q = q->next) {
        if (!c->bad && pattern_check(q->payload, c->got, q->len) != q->len)
            c->bad = true;
        c->got += q->len;
    }
    received += p->tot_len;
    t_last = peer_clock;
    tcp_recved(pcb, p->tot_len);
    pbuf_free(p);
    return ERR_OK;
}

/* The accepted connection is the client connection with its port. */
static err_t on_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    (void)arg;
    if (err != ERR_OK || !pcb)
        return ERR_VAL;
    bconn *c = NULL;
    for (unsigned i = 0; i < opt->conns && !c; i++)
        if (conns[i].pcb && conns[i].pcb->local_port == pcb->remote_port)
            c = &conns[i];
    tcp_arg(pcb, c);
    tcp_recv(pcb, srv_recv);
    tcp_err(pcb, peer_on_err);
    return ERR_OK;
}

static bool all_received(void)
{
    return received >= opt->bytes || peer_failed;
}

int run_bulk(const peer_opts *o)
{
    opt = o;
    conns = calloc(o->conns, sizeof *conns);
    src = malloc(SRC_BYTES);
    if (!conns || !src)
        return 1;
    if (!peer_listen(PORT, on_accept))
        return fprintf(stderr, "lwip-peer: cannot bind the server\n"), 1;
    for (unsigned i = 0; i < o->conns; i++) {
        bconn *c = &conns[i];
        c->total = o->bytes / o->conns + (i < o->bytes % o->conns);
        c->pcb = peer_connect(c, PORT);
        tcp_sent(c->pcb, on_sent);
    }
    if (!peer_loop(peer_all_connected, 10) || peer_failed)
        return fprintf(stderr, "lwip-peer: bulk: connections not established\n"), 1;
    t_start = t_last = peer_now();
    for (unsigned i = 0; i < o->conns; i++)
        pump(&conns[i]);
    if (!peer_loop(all_received, 10))
        peer_fail("bulk: stalled");
    if (peer_failed)
        return 1;
    bool verified = received == o->bytes;
    for (unsigned i = 0; i < o->conns; i++)
        verified &= !conns[i].bad && conns[i].got == conns[i].total;
    double secs = t_last > t_start ? (double)(t_last - t_start) / 1e9 : 0;
    report r;
    rep_begin(&r, stdout, o->json, "lwip-peer");
    rep_str(&r, "driver", "mem");
    rep_u64(&r, "conns", o->conns);
    rep_str(&r, "data_path", "application");
    rep_u64(&r, "bytes", received);
    rep_u64(&r, "streams", o->conns);
    rep_f(&r, "duration_s", secs, 3);
    rep_f(&r, "gbps", secs > 0 ? (double)received * 8 / secs / 1e9 : 0, 3);
    rep_str(&r, "verify", "pattern");
    rep_bool(&r, "verified", verified);
    rep_f(&r, "gen_s", (double)gen_ns / 1e9, 4);
    rep_f(&r, "gen_pct", secs > 0 ? 100 * (double)gen_ns / 1e9 / secs : 0, 1);
    rep_u64(&r, "link_drops", lwip_link_drops());
    rep_end(&r);
    return verified ? 0 : 1;
}
