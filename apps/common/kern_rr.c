/* kern_rr.c - epoll request/response engine for the kern-* twins (see
 * kern_rr.h). Level-triggered epoll, one recv per readiness event, as a
 * plain epoll server does. Input goes to the server in slices, and only
 * while the replies its socket refused stay under SERVE_OUT_BOUND: past
 * that, the rest of the received bytes is held (unparsed) and the
 * connection stops reading until EPOLLOUT drained its replies. A client that
 * pipelines and never reads so costs at most one recv of held input and
 * the bound of replies, as tern-httpd holds unparsed requests, not
 * responses. */
#include "kern_rr.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app_opts.h"
#include "clock.h"
#include "kern.h"

enum { K_STOP, K_LISTEN, K_SERVER, K_CLIENT };

typedef struct kconn {
    int fd;
    int kind;
    bool connected, writing, closing, draining;
    rr_conn rr;
    bytebuf out;             /* bytes the socket did not take yet */
    bytebuf held;            /* received, not yet served (out was full) */
    void *state;             /* the server program's per-connection state */
} kconn;

typedef struct kthread {
    int epfd, lfd;
    kconn lconn, stopc;
    unsigned nclients;
    kconn *clients;
    rr_thread rr;
    bool client_done;
    uint64_t deadline;       /* end of --duration (0 = none) */
    uint64_t bytes_in, bytes_out, accepted;
    bytebuf scratch;         /* server replies of one slice */
} kthread;

static const common_opts *co;
static const kern_rr_cfg *cfg;
static uint8_t *train;       /* RR_MAX_DEPTH requests back to back */
static atomic_uint clients_done;
static unsigned client_threads;
static atomic_flag failed_once = ATOMIC_FLAG_INIT;
static kern_rr_result *result;

static void fail(const char *what, const char *detail)
{
    if (!atomic_flag_test_and_set(&failed_once))
        snprintf(result->err, sizeof result->err, "%s%s%s", what,
                 detail ? ": " : "", detail ? detail : "");
    kern_stop();
}

static void watch(kthread *t, kconn *c, uint32_t events, int op)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(t->epfd, op, c->fd, &ev);
}

/* Replies a connection may have queued (refused by its socket) before its
 * input is held instead of served. Input is served a slice at a time; a
 * slice of requests makes about a quarter of the bound in replies
 * (serve_slice, from the sizes of a request and its reply), between
 * SLICE_MIN and SLICE_MAX bytes. */
#define SERVE_OUT_BOUND (256u * 1024u)
#define SLICE_MIN 64u
#define SLICE_MAX 2048u
static size_t serve_slice = SLICE_MAX;

static void server_close(kthread *t, kconn *c)
{
    epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    bb_free(&c->out);
    bb_free(&c->held);
    if (cfg->state_free && c->state)
        cfg->state_free(c->state);
    free(c);
}

/* Replies are out: half-close and read until the peer closes, so unread
 * input does not turn our close into a RST that destroys the reply. */
static void server_finish(kthread *t, kconn *c)
{
    shutdown(c->fd, SHUT_WR);
    c->draining = true;
    watch(t, c, EPOLLIN, EPOLL_CTL_MOD);
}

/* Queue output; on a full socket wait for EPOLLOUT (and stop reading). */
static bool conn_send(kthread *t, kconn *c, const void *d, size_t n)
{
    if (!kern_send(c->fd, d, n, &c->out))
        return false;
    if (c->out.len && !c->writing) {
        c->writing = true;
        watch(t, c, EPOLLOUT, EPOLL_CTL_MOD);
    }
    return true;
}

/* EPOLLOUT on a connection with a backlog. Returns false on error. */
static bool conn_drain_out(kthread *t, kconn *c)
{
    bool err;
    if (kern_flush(c->fd, &c->out, &err)) {
        c->writing = false;
        watch(t, c, EPOLLIN, EPOLL_CTL_MOD);
    }
    return !err;
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
            return;
        }
        c->fd = fd;
        c->kind = K_SERVER;
        kern_tune(fd, co->busy_poll_us);
        t->accepted++;
        watch(t, c, EPOLLIN, EPOLL_CTL_ADD);
    }
}

/* Serve up to n received bytes, a slice at a time, while the connection's
 * refused replies stay under the bound. Returns the bytes served (all of
 * them once the connection is closing: input after that is ignored), or
 * -1 when the connection failed. */
static long serve_some(kthread *t, kconn *c, const char *d, size_t n)
{
    size_t done = 0;
    while (done < n && !c->closing && c->out.len < SERVE_OUT_BOUND) {
        size_t k = n - done < serve_slice ? n - done : serve_slice;
        t->scratch.len = t->scratch.off = 0;
        bool keep = cfg->serve(&c->state, d + done, k, &t->scratch);
        done += k;
        t->bytes_out += t->scratch.len;
        if (t->scratch.len && !conn_send(t, c, bb_data(&t->scratch),
                                         t->scratch.len))
            return -1;
        if (!keep)
            c->closing = true;
    }
    return c->closing ? (long)n : (long)done;
}

/* Replies drained: serve the input held meanwhile. false on error. */
static bool serve_held(kthread *t, kconn *c)
{
    long used = serve_some(t, c, bb_data(&c->held), c->held.len);
    if (used < 0)
        return false;
    bb_consume(&c->held, (size_t)used);
    return true;
}

static void on_server(kthread *t, kconn *c, char *buf, size_t cap)
{
    if (c->writing) {
        if (!conn_drain_out(t, c) || (!c->writing && !serve_held(t, c)))
            server_close(t, c);
        else if (!c->writing && c->closing)
            server_finish(t, c);
        return;
    }
    ssize_t n = recv(c->fd, buf, cap, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        server_close(t, c);
        return;
    }
    if (n < 0 || c->draining)
        return;
    t->bytes_in += (uint64_t)n;
    long used = serve_some(t, c, buf, (size_t)n);
    /* Not all served: the replies are over the bound, so c is writing
     * (EPOLLOUT only) and reads nothing until they drain. */
    if (used < 0 || ((size_t)used < (size_t)n &&
                     !bb_append(&c->held, buf + used, (size_t)n - (size_t)used,
                                SIZE_MAX))) {
        server_close(t, c);
        return;
    }
    if (c->closing && !c->writing)
        server_finish(t, c);
}

static void client_up(kthread *t, kconn *c, uint64_t now)
{
    int err = 0;
    socklen_t l = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
    if (err) {
        fail("connect", strerror(err));
        return;
    }
    c->connected = true;
    kern_tune(c->fd, co->busy_poll_us);
    watch(t, c, EPOLLIN, EPOLL_CTL_MOD);
    unsigned k = rr_start(&t->rr, &c->rr, now);
    if (k && !conn_send(t, c, train, (size_t)k * cfg->req_len))
        fail("send", strerror(errno));
}

static void on_client(kthread *t, kconn *c, char *buf, size_t cap,
                      uint64_t now)
{
    if (!c->connected) {
        client_up(t, c, now);
        return;
    }
    if (c->writing) {
        if (!conn_drain_out(t, c))
            fail("send", "connection lost");
        return;
    }
    ssize_t n = recv(c->fd, buf, cap, 0);
    if (n > 0) {
        unsigned k = rr_recv(&t->rr, &c->rr, (uint64_t)n, now);
        if (rr_overrun(&c->rr, &t->rr))
            fail("server sent more bytes than were requested", NULL);
        else if (k && !conn_send(t, c, train, (size_t)k * cfg->req_len))
            fail("send", strerror(errno));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        fail(n == 0 ? "the server closed a connection" : "connection lost",
             NULL);
    }
}

/* Has this thread's load ended (all answered, or given up)? */
static void client_check(kthread *t, uint64_t now)
{
    if (t->client_done || !t->nclients)
        return;
    if (!t->deadline && t->rr.t_first && cfg->duration > 0)
        t->deadline = t->rr.t_first + (uint64_t)(cfg->duration * 1e9);
    if (t->deadline && now >= t->deadline)
        rr_stop(&t->rr);
    bool idle = true;
    for (unsigned i = 0; i < t->nclients && idle; i++)
        idle = t->clients[i].rr.inflight == 0;
    /* Requests still unanswered 5 s after the end: give up on them. */
    bool late = t->deadline && now > t->deadline + 5000000000ull;
    if (rr_quota_done(&t->rr) || (t->rr.stopping && idle) || late) {
        t->client_done = true;
        if (atomic_fetch_add(&clients_done, 1) + 1 == client_threads)
            kern_stop();
    }
}

static int open_clients(kthread *t)
{
    endpoint dst = {ep_addr_v4(0x7f000001u), cfg->port};
    if (cfg->mode == MODE_CLIENT)
        dst = cfg->peer;
    for (unsigned i = 0; i < t->nclients; i++) {
        kconn *c = &t->clients[i];
        char err[160];
        c->kind = K_CLIENT;
        c->fd = kern_connect(&dst, err, sizeof err);
        if (c->fd < 0) {
            fail(err, NULL);
            return -1;
        }
        watch(t, c, EPOLLOUT, EPOLL_CTL_ADD);
    }
    return 0;
}

static void *thread_main(void *arg)
{
    kthread *t = arg;
    char *buf = malloc(65536);
    struct epoll_event ev[64];
    if (!buf || (t->nclients && open_clients(t))) {
        free(buf);
        return NULL;
    }
    common_opts wait_co = *co;
    /* A client must notice its deadline even when nothing arrives. */
    if (t->nclients && wait_co.poll == POLL_BLOCK &&
        (wait_co.poll_timeout_ms < 0 || wait_co.poll_timeout_ms > 100))
        wait_co.poll_timeout_ms = 100;
    while (!kern_stopping()) {
        int n = kern_wait(t->epfd, ev, 64, &wait_co);
        uint64_t now = now_ns();
        for (int i = 0; i < n; i++) {
            kconn *c = ev[i].data.ptr;
            switch (c->kind) {
            case K_LISTEN: on_accept(t); break;
            case K_SERVER: on_server(t, c, buf, 65536); break;
            case K_CLIENT: on_client(t, c, buf, 65536, now); break;
            default: break;
            }
        }
        client_check(t, now);
    }
    free(buf);
    return NULL;
}

static int setup_thread(kthread *t, unsigned i, unsigned n, uint16_t *port)
{
    char err[200];
    t->lfd = -1;
    t->epfd = epoll_create1(EPOLL_CLOEXEC);
    t->stopc.kind = K_STOP;
    kern_stop_watch(t->epfd, &t->stopc);
    if (cfg->mode != MODE_CLIENT) {
        /* No --port in-process: the first listener picks a free port, the
         * others share it through SO_REUSEPORT. */
        ep_addr lo = ep_addr_v4(0x7f000001u);
        t->lfd = kern_listen(cfg->mode == MODE_BOTH ? &lo : NULL, *port, err,
                             sizeof err);
        if (t->lfd < 0) {
            fail(err, NULL);
            return -1;
        }
        if (!*port)
            *port = kern_local_port(t->lfd);
        t->lconn = (kconn){.fd = t->lfd, .kind = K_LISTEN};
        watch(t, &t->lconn, EPOLLIN, EPOLL_CTL_ADD);
    }
    if (cfg->mode != MODE_SERVER) {
        uint64_t quota = cfg->requests ? cfg->requests / n +
                                             (i < cfg->requests % n) : 0;
        t->nclients = (unsigned)(cfg->conns / n + (i < cfg->conns % n));
        if (cfg->requests && !quota)
            t->nclients = 0;
        t->clients = calloc(t->nclients ? t->nclients : 1, sizeof *t->clients);
        rr_thread_init(&t->rr, cfg->req_len, cfg->resp_len, cfg->depth, quota);
        if (t->nclients)
            client_threads++;
    }
    return 0;
}

int kern_rr_run(const common_opts *c, const kern_rr_cfg *k,
                kern_rr_result *res)
{
    co = c;
    result = res;
    memset(res, 0, sizeof *res);
    rr_total_init(&res->tot);
    kern_stop_setup();
    unsigned n = co->ncores;
    kthread *t = calloc(n, sizeof *t);
    static kern_rr_cfg local;
    local = *k;
    cfg = &local;
    if (local.resp_len && local.req_len) {
        uint64_t sl = (uint64_t)SERVE_OUT_BOUND / 4 * local.req_len /
                      local.resp_len;
        serve_slice = sl < SLICE_MIN ? SLICE_MIN
                      : sl > SLICE_MAX ? SLICE_MAX : (size_t)sl;
    }
    train = rr_request_train(k->req, k->req_len, RR_MAX_DEPTH);
    if (!t || !train) {
        snprintf(res->err, sizeof res->err, "out of memory");
        return -1;
    }
    uint64_t retrans0 = kern_retrans_segs();
    for (unsigned i = 0; i < n; i++)
        if (setup_thread(&t[i], i, n, &local.port))
            return -1;
    if (cfg->mode != MODE_SERVER && client_threads == 0) {
        snprintf(res->err, sizeof res->err,
                 "no client connections (--conns too small for --cores?)");
        return -1;
    }
    kern_run_threads(co, thread_main, t, sizeof *t);
    res->retransmits = kern_retrans_segs() - retrans0;
    for (unsigned i = 0; i < n; i++) {
        rr_total_add(&res->tot, &t[i].rr);
        res->bytes_in += t[i].bytes_in;
        res->bytes_out += t[i].bytes_out;
        res->accepted += t[i].accepted;
    }
    return res->err[0] ? -1 : 0;
}
