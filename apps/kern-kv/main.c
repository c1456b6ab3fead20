/* kern-kv - the Linux-kernel twin of tern-kv: the same Redis-protocol
 * server (parser, table and commands from apps/common kv_*.c, resp.c) on
 * epoll and kernel TCP sockets, one pinned thread per --cores CPU with an
 * SO_REUSEPORT listener each, all sharing one table. Same flags and
 * figures as tern-kv. A connection whose replies the socket does not take
 * stops being read until they drain (kv_conn.h's bound). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "kern.h"
#include "kv_conn.h"
#include "kv_opts.h"
#include "kv_report.h"
#include "report.h"

#define RECV_BUF (64u << 10)

typedef struct kconn {
    int fd;
    kv_conn kv;
    bytebuf out;            /* replies not sent yet */
    bool writing;           /* waiting for EPOLLOUT, not reading */
    bool paused;            /* kv.in may hold requests to serve */
    bool shut;              /* FIN sent after QUIT or an error */
} kconn;

typedef struct kthread {
    int epfd, lfd;
    kv_ctx *cx;
    char err[160];
} kthread;

static common_opts co;
static kv_opts ko;
static kv_server *srv;
static int listen_tag, stop_tag;

static void watch(kthread *t, kconn *c, uint32_t ev, int op)
{
    struct epoll_event e = {.events = ev, .data.ptr = c};
    epoll_ctl(t->epfd, op, c->fd, &e);
}

static void conn_close(kthread *t, kconn *c)
{
    epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    kv_conn_free(&c->kv);
    bb_free(&c->out);
    kv_count(&t->cx->conns_closed, 1);
    free(c);
}

/* Send what out holds; with some left, wait for EPOLLOUT and stop reading.
 * false when the connection is gone. */
static bool conn_flush(kthread *t, kconn *c)
{
    bool err;
    kern_flush(c->fd, &c->out, &err);
    if (err)
        return false;
    bool want = c->out.len > 0;
    if (want != c->writing) {
        c->writing = want;
        watch(t, c, want ? EPOLLOUT : EPOLLIN, EPOLL_CTL_MOD);
    }
    return true;
}

/* After QUIT or a protocol error, once the replies are out: send FIN
 * but read (and drop) until the client's, so its unread input cannot
 * turn our close into a reset that destroys the error reply. */
static void maybe_shut(kconn *c)
{
    if (c->kv.closing && !c->out.len && !c->shut) {
        c->shut = true;
        shutdown(c->fd, SHUT_WR);
    }
}

/* Serve (new input or, with n == 0, the kept requests) and send. Returns
 * false once the connection is closed. */
static bool conn_serve(kthread *t, kconn *c, const char *d, size_t n)
{
    size_t before = c->out.len;
    int r = kv_conn_input(&c->kv, t->cx, d, n, &c->out);
    c->paused = r == KV_PAUSED;
    kv_count(&t->cx->bytes_out, c->out.len - before);
    if (!conn_flush(t, c)) {
        conn_close(t, c);
        return false;
    }
    maybe_shut(c);
    return true;
}

static void on_accept(kthread *t)
{
    for (;;) {
        int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        kconn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        kern_tune(fd, co.busy_poll_us);
        kv_count(&t->cx->conns_opened, 1);
        watch(t, c, EPOLLIN, EPOLL_CTL_ADD);
    }
}

static void on_conn(kthread *t, kconn *c, char *buf)
{
    t->cx->now_ms = (int64_t)(now_ns() / 1000000);
    if (c->writing) {
        /* EPOLLOUT: drain, then serve what was kept meanwhile. */
        if (!conn_flush(t, c)) {
            conn_close(t, c);
            return;
        }
        while (!c->writing && c->paused)
            if (!conn_serve(t, c, NULL, 0))
                return;
        maybe_shut(c);
        return;
    }
    ssize_t n = recv(c->fd, buf, RECV_BUF, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        conn_close(t, c);
        return;
    }
    if (n < 0)
        return;
    kv_count(&t->cx->bytes_in, (uint64_t)n);
    if (!conn_serve(t, c, buf, (size_t)n))
        return;
    while (c->paused && !c->writing)
        if (!conn_serve(t, c, NULL, 0))
            return;
}

static void *thread_main(void *arg)
{
    kthread *t = arg;
    char *buf = malloc(RECV_BUF);
    struct epoll_event ev[64];
    if (!buf) {
        snprintf(t->err, sizeof t->err, "out of memory");
        kern_stop();
        return NULL;
    }
    while (!kern_stopping()) {
        int n = kern_wait(t->epfd, ev, 64, &co);
        for (int i = 0; i < n; i++) {
            void *tag = ev[i].data.ptr;
            if (tag == &stop_tag)
                break;
            if (tag == &listen_tag)
                on_accept(t);
            else
                on_conn(t, tag, buf);
        }
        kv_tick(t->cx, (int64_t)(now_ns() / 1000000));
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    common_defaults(&co, "kern-kv", FAMILY_KERN);
    kv_opts_parse(&co, &ko, argc, argv);
    srv = kv_server_new(co.prog, ko.maxmemory, (int64_t)(now_ns() / 1000000));
    kthread *t = calloc(co.ncores, sizeof *t);
    if (!srv || !t) {
        fprintf(stderr, "%s: out of memory\n", co.prog);
        return 1;
    }
    kern_stop_setup();
    uint64_t retrans0 = kern_retrans_segs();
    for (unsigned i = 0; i < co.ncores; i++) {
        char err[160];
        t[i].cx = kv_ctx_new(srv);
        t[i].lfd = kern_listen(NULL, (uint16_t)ko.port, err, sizeof err);
        t[i].epfd = epoll_create1(EPOLL_CLOEXEC);
        if (t[i].lfd < 0 || t[i].epfd < 0 || !t[i].cx) {
            fprintf(stderr, "%s: %s\n", co.prog,
                    t[i].lfd < 0 ? err : "out of memory");
            return 1;
        }
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = &listen_tag};
        epoll_ctl(t[i].epfd, EPOLL_CTL_ADD, t[i].lfd, &e);
        kern_stop_watch(t[i].epfd, &stop_tag);
    }
    if (!co.json)
        fprintf(stderr, "%s: serving *:%u, every IPv4 and IPv6 address "
                "of this host (Ctrl-C prints the figures)\n", co.prog,
                (unsigned)ko.port);
    int rc = kern_run_threads(&co, thread_main, t, sizeof *t);
    report r;
    rep_begin(&r, stdout, co.json, co.prog);
    rep_str(&r, "driver", "kernel");
    rep_u64(&r, "cores", co.ncores);
    kv_report(&r, srv, &ko);
    rep_u64(&r, "retransmits", kern_retrans_segs() - retrans0);
    rep_end(&r);
    for (unsigned i = 0; i < co.ncores; i++)
        if (t[i].err[0]) {
            fprintf(stderr, "%s: %s\n", co.prog, t[i].err);
            rc = -1;
        }
    return rc ? 1 : 0;
}
