/* kern-bulk - the Linux-kernel twin of tern-bulk: bulk streams over kernel
 * TCP with every byte verified (pattern) or hashed (SHA-256). Server mode
 * accepts streams from anything (nc, Python, a bulk client); client mode
 * sends --bytes over --conns streams; with neither, both ends run in this
 * process over loopback. One pinned epoll thread per --cores CPU. The
 * application work is tern-bulk's: the sender writes every byte (the same
 * generator, timed as gen_s) and the receiver reads and checks every
 * byte; the kernel copies and sums as it does for any socket. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app_opts.h"
#include "bulk.h"
#include "clock.h"
#include "kern.h"
#include "pattern.h"

#define TXBUF (256 * 1024)
#define RXBUF (256 * 1024)

enum { K_STOP, K_LISTEN, K_SRV, K_CLI };

typedef struct bconn {
    int fd;
    int kind;
    bool connected, sent_all;
    bulk_rx rx;               /* server: the stream being received */
    uint64_t off, total;      /* client: bytes sent / to send */
    uint8_t *buf;             /* client: pattern for [bstart, bstart+blen) */
    uint64_t bstart;
    size_t blen;
    sha256 hash;              /* client, --verify hash: what was sent */
} bconn;

typedef struct bthread {
    int epfd, lfd;
    bconn lconn, stopc;
    unsigned ncli;
    bconn *cli;
    bulk_rx *ended;           /* finished server streams */
    size_t nended, cap;
    uint64_t t_start, t_end;  /* client: first connect .. last close */
    uint64_t sent;
    uint64_t gen_ns;          /* client: time spent writing payload */
} bthread;

static common_opts co;
static bulk_opts bo;
static atomic_uint streams_ended, clients_done;
static unsigned clients_total;
static char failure[200];
static atomic_flag failed_once = ATOMIC_FLAG_INIT;

static void fail(const char *what, const char *detail)
{
    if (!atomic_flag_test_and_set(&failed_once))
        snprintf(failure, sizeof failure, "%s: %s", what, detail);
    kern_stop();
}

static void watch(bthread *t, bconn *c, uint32_t events, int op)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(t->epfd, op, c->fd, &ev);
}

static void on_accept(bthread *t)
{
    for (;;) {
        int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        bconn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        c->fd = fd;
        c->kind = K_SRV;
        bulk_rx_init(&c->rx, bo.verify);
        kern_tune(fd, co.busy_poll_us);
        watch(t, c, EPOLLIN, EPOLL_CTL_ADD);
    }
}

static void stream_ended(bthread *t, bconn *c, uint64_t now)
{
    bulk_rx_end(&c->rx, now);
    if (t->nended == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->ended = realloc(t->ended, t->cap * sizeof *t->ended);
    }
    t->ended[t->nended++] = c->rx;
    epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
    unsigned n = atomic_fetch_add(&streams_ended, 1) + 1;
    if (bo.mode == MODE_SERVER && bo.once && n >= bo.conns)
        kern_stop();
    if (bo.mode == MODE_SERVER && !co.json)
        fprintf(stderr, "%s: stream %u ended\n", co.prog, n);
}

static void on_srv(bthread *t, bconn *c, uint8_t *buf, uint64_t now)
{
    ssize_t n = recv(c->fd, buf, RXBUF, 0);
    if (n > 0)
        bulk_rx_data(&c->rx, buf, (size_t)n, now);
    else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        stream_ended(t, c, now);
}

static void cli_closed(bthread *t, bconn *c, uint64_t now)
{
    epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    t->t_end = now;
    if (atomic_fetch_add(&clients_done, 1) + 1 == clients_total)
        kern_stop();
}

/* Send until the socket is full or the stream is out. */
static void cli_send(bthread *t, bconn *c)
{
    while (c->off < c->total) {
        if (c->off >= c->bstart + c->blen) {
            c->bstart = c->off;
            c->blen = c->total - c->off < TXBUF ? (size_t)(c->total - c->off)
                                                : TXBUF;
            if (bo.verify != VERIFY_NONE)
                bulk_fill_timed(c->buf, c->bstart, c->blen, &t->gen_ns);
            if (bo.verify == VERIFY_HASH)   /* every block is sent whole */
                sha256_update(&c->hash, c->buf, c->blen);
        }
        size_t at = (size_t)(c->off - c->bstart);
        ssize_t n = send(c->fd, c->buf + at, c->blen - at, MSG_NOSIGNAL);
        if (n > 0) {
            c->off += (uint64_t)n;
            t->sent += (uint64_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        fail("send", strerror(errno));
        return;
    }
    /* All sent: half-close and wait for the receiver to close. */
    c->sent_all = true;
    shutdown(c->fd, SHUT_WR);
    watch(t, c, EPOLLIN, EPOLL_CTL_MOD);
}

static void on_cli(bthread *t, bconn *c, uint8_t *buf, uint64_t now)
{
    if (!c->connected) {
        int err = 0;
        socklen_t l = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err) {
            fail("connect", strerror(err));
            return;
        }
        c->connected = true;
        kern_tune(c->fd, co.busy_poll_us);
        if (!t->t_start)
            t->t_start = now;
    }
    if (!c->sent_all) {
        cli_send(t, c);
        return;
    }
    ssize_t n = recv(c->fd, buf, RXBUF, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        cli_closed(t, c, now);
}

static void *thread_main(void *arg)
{
    bthread *t = arg;
    uint8_t *buf = malloc(RXBUF);
    struct epoll_event ev[64];
    if (!buf)
        return NULL;
    while (!kern_stopping()) {
        int n = kern_wait(t->epfd, ev, 64, &co);
        uint64_t now = now_ns();
        for (int i = 0; i < n; i++) {
            bconn *c = ev[i].data.ptr;
            if (c->kind == K_LISTEN)
                on_accept(t);
            else if (c->kind == K_SRV)
                on_srv(t, c, buf, now);
            else if (c->kind == K_CLI)
                on_cli(t, c, buf, now);
        }
    }
    free(buf);
    return NULL;
}

static void setup(bthread *t, unsigned i, unsigned n, uint16_t *port)
{
    char err[200];
    t->lfd = -1;
    t->epfd = epoll_create1(EPOLL_CLOEXEC);
    t->stopc.kind = K_STOP;
    kern_stop_watch(t->epfd, &t->stopc);
    if (bo.mode != MODE_CLIENT) {
        ep_addr lo = ep_addr_v4(0x7f000001u);
        t->lfd = kern_listen(bo.mode == MODE_BOTH ? &lo : NULL, *port, err,
                             sizeof err);
        if (t->lfd < 0)
            opts_fail(&co, "%s", err);
        if (!*port)
            *port = kern_local_port(t->lfd);
        t->lconn = (bconn){.fd = t->lfd, .kind = K_LISTEN};
        watch(t, &t->lconn, EPOLLIN, EPOLL_CTL_ADD);
    }
    if (bo.mode == MODE_SERVER)
        return;
    endpoint dst = {ep_addr_v4(0x7f000001u), *port};
    if (bo.mode == MODE_CLIENT)
        dst = bo.peer;
    t->ncli = (unsigned)(bo.conns / n + (i < bo.conns % n));
    t->cli = calloc(t->ncli ? t->ncli : 1, sizeof *t->cli);
    for (unsigned k = 0; k < t->ncli; k++) {
        bconn *c = &t->cli[k];
        /* Stream j = the k-th connection of thread i, round robin. */
        uint64_t j = (uint64_t)k * n + i;
        c->kind = K_CLI;
        c->total = bulk_share(bo.bytes, bo.conns, j);
        sha256_init(&c->hash);
        c->buf = malloc(TXBUF);
        c->fd = kern_connect(&dst, err, sizeof err);
        if (c->fd < 0 || !c->buf) {
            fprintf(stderr, "%s: %s\n", co.prog, err);
            exit(1);
        }
        watch(t, c, EPOLLOUT, EPOLL_CTL_ADD);
        clients_total++;
    }
}

int main(int argc, char **argv)
{
    common_defaults(&co, "kern-bulk", FAMILY_KERN);
    bulk_opts_parse(&co, &bo, argc, argv);
    if (bo.app_sum)
        opts_fail(&co, "--app-sum is a tern-bulk shortcut: the kernel "
                       "computes its own checksums");
    if (bo.snd_buf)
        opts_fail(&co, "--snd-buf is a tern-bulk flag: the kernel sizes its "
                       "send buffer itself (net.ipv4.tcp_wmem)");
    if (bo.mode == MODE_BOTH && !bo.port_seen)
        bo.port = 0;
    kern_stop_setup();
    unsigned n = co.ncores;
    bthread *t = calloc(n, sizeof *t);
    if (!t)
        return 1;
    uint16_t port = (uint16_t)bo.port;
    uint64_t retrans0 = kern_retrans_segs();
    for (unsigned i = 0; i < n; i++)
        setup(&t[i], i, n, &port);
    if (bo.mode == MODE_SERVER && !co.json)
        fprintf(stderr, "%s: receiving on *:%u, every address of this host "
                "(verify %s)%s\n", co.prog,
                port, bo.verify == VERIFY_HASH ? "hash"
                      : bo.verify == VERIFY_PATTERN ? "pattern" : "none",
                bo.once ? "" : "; Ctrl-C prints the figures");
    kern_run_threads(&co, thread_main, t, sizeof *t);
    uint64_t retrans = kern_retrans_segs() - retrans0;
    if (failure[0]) {
        fprintf(stderr, "%s: %s\n", co.prog, failure);
        return 1;
    }
    report r;
    rep_begin(&r, stdout, co.json, co.prog);
    rep_str(&r, "driver", "kernel");
    rep_str(&r, "mode", bo.mode == MODE_SERVER ? "server"
                        : bo.mode == MODE_CLIENT ? "client" : "both");
    rep_u64(&r, "cores", co.ncores);
    rep_u64(&r, "conns", bo.conns);
    rep_str(&r, "data_path", "application");
    bool ok = true;
    uint64_t gen_ns = 0;
    for (unsigned i = 0; i < n; i++)
        gen_ns += t[i].gen_ns;
    if (bo.mode == MODE_CLIENT) {
        /* The sender knows what it sent, not what arrived intact. */
        bulk_total tot;
        bulk_total_init(&tot);
        for (unsigned i = 0; i < n; i++) {
            tot.bytes += t[i].sent;
            tot.streams += t[i].ncli;
            if (t[i].t_start && (!tot.t_first || t[i].t_start < tot.t_first))
                tot.t_first = t[i].t_start;
            if (t[i].t_end > tot.t_last)
                tot.t_last = t[i].t_end;
        }
        /* --verify hash: name what was sent, for the receiver to compare. */
        for (unsigned i = 0; bo.verify == VERIFY_HASH && i < n; i++)
            for (unsigned k = 0; k < t[i].ncli && tot.nhash < 8; k++) {
                uint8_t d[32];
                sha256_final(&t[i].cli[k].hash, d);
                sha256_hex(d, tot.hashes[tot.nhash++]);
            }
        bulk_report(&r, &tot, bo.verify == VERIFY_HASH ? VERIFY_HASH
                                                       : VERIFY_NONE,
                    co.link_bps, 1500, true);
        ok = tot.bytes == bo.bytes;
        bulk_report_gen(&r, &tot, gen_ns, n);
    } else {
        bulk_total tot;
        bulk_total_init(&tot);
        for (unsigned i = 0; i < n; i++)
            for (size_t k = 0; k < t[i].nended; k++)
                bulk_total_add(&tot, &t[i].ended[k]);
        for (unsigned i = 0; bo.mode == MODE_BOTH && bo.verify == VERIFY_HASH &&
                             i < n; i++)
            for (unsigned k = 0; k < t[i].ncli; k++)
                bulk_total_sent(&tot, &t[i].cli[k].hash);
        bool verified = bulk_report(&r, &tot, bo.verify, co.link_bps, 1500,
                                    true);
        if (bo.mode == MODE_BOTH)
            ok = tot.bytes == bo.bytes &&
                 (bo.verify == VERIFY_NONE || verified);
        else if (bo.verify == VERIFY_PATTERN)
            ok = tot.all_ok;
        if (bo.mode == MODE_BOTH)
            bulk_report_gen(&r, &tot, gen_ns, n);
    }
    rep_u64(&r, "retransmits", retrans);
    rep_end(&r);
    return ok ? 0 : 1;
}
