/* core_echo.c - the tern core alone: your buffers, your "NIC", your loop.
 *
 * Two stack instances in one process, wired back to back by a few lines
 * that stand in for a NIC driver. Host 1 (198.18.0.1) serves TCP echo on
 * port 7; host 2 (198.18.0.2) connects, sends 4 MiB and checks that every
 * byte comes back. Only libtern (tern.h) is used: no libtern-linux, no
 * root. Build and run:
 *
 *     cc -std=c11 core_echo.c $(pkg-config --cflags --libs tern) -o core_echo
 *     ./core_echo
 */
#define _DEFAULT_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <tern.h>

#define NBUF 1024          /* buffers per host */
#define BUF_SIZE 2048      /* bytes per buffer, TERN_HEADROOM included */
#define RING 256           /* frames the wire holds towards one host */
#define RCV_BUF 65536      /* receive window per connection */
#define TOTAL (4u << 20)   /* bytes the client sends */

/* ---- Your buffers: fixed-size, on a free list. The stack borrows them
 * through cfg.buf_ops and gives them back through free. ---- */
typedef struct pool {
    tern_buf desc[NBUF];
    tern_buf *free[NBUF];
    unsigned top;
    uint8_t *mem;
} pool;

static tern_buf *pool_alloc(void *ctx)
{
    pool *p = ctx;
    /* tern_buf_fresh: data at TERN_HEADROOM, len 0, refs 1, no flags */
    return p->top ? tern_buf_fresh(p->free[--p->top]) : NULL;
}

static void pool_free(void *ctx, tern_buf *b)
{
    pool *p = ctx;
    p->free[p->top++] = b;
}

static void pool_init(pool *p)
{
    p->mem = malloc((size_t)NBUF * BUF_SIZE);
    if (!p->mem)
        exit(1);
    for (unsigned i = 0; i < NBUF; i++) {
        p->desc[i] = (tern_buf){.head = p->mem + (size_t)i * BUF_SIZE,
                                .size = BUF_SIZE};
        p->free[i] = &p->desc[i];
    }
    p->top = NBUF;
}

/* ---- Your NIC: each host's transmit copies frames into the other host's
 * receive ring, as a wire between two NICs would. ---- */
typedef struct host {
    tern_stack *st;
    void *mem;
    pool pool;
    struct host *peer;
    tern_buf *ring[RING];
    unsigned nring;
} host;

static void wire_tx(void *ctx, tern_buf **frames, unsigned n)
{
    host *h = ctx, *to = h->peer;
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        tern_buf *copy = to->nring < RING ? pool_alloc(&to->pool) : NULL;
        if (copy) {       /* else dropped, as a NIC with a full ring does */
            memcpy(copy->data, f->data, f->len);
            copy->len = f->len;
            to->ring[to->nring++] = copy;
        }
        /* The driver owns one reference of every frame it is given and
         * drops it when done (TCP may still hold the buffer to resend). */
        tern_buf_release(h->st, f);
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TERN_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* -- README.md shows from here ------------------------------------------ */
/* The echo server. tern_tcp_send may take fewer bytes than offered (the
 * send buffer is full): keep the rest and send it when `acked` reports
 * space. Consume (return) only what was sent, so the receive window - and
 * the peer - wait for the rest; that also bounds what we keep. */
static unsigned long short_sends;   /* how often the rest had to wait */

typedef struct echo {
    uint8_t pend[RCV_BUF];   /* received, not yet sent back */
    size_t len;
    bool closing;            /* the peer closed: close once pend is sent */
} echo;

static void *on_accepted(tern_stack *st, tern_conn *c, void *listener_user)
{
    (void)st, (void)c, (void)listener_user;
    return calloc(1, sizeof(echo));          /* the connection's user */
}

static size_t on_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *buf,
                      const uint8_t *data, size_t len)
{
    echo *e = user;
    (void)buf;
    long sent = e->len ? 0 : tern_tcp_send(st, c, data, len); /* in order */
    if (sent < 0)
        sent = 0;
    if ((size_t)sent < len)
        short_sends++;
    memcpy(e->pend + e->len, data + sent, len - (size_t)sent);
    e->len += len - (size_t)sent;
    return (size_t)sent;   /* the rest is reported by tern_tcp_consumed */
}

static void on_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    echo *e = user;
    (void)bytes;
    long sent = e->len ? tern_tcp_send(st, c, e->pend, e->len) : 0;
    if (sent <= 0)
        return;
    memmove(e->pend, e->pend + sent, e->len - (size_t)sent);
    e->len -= (size_t)sent;
    tern_tcp_consumed(st, c, (size_t)sent);  /* the window reopens */
    if (e->closing && e->len == 0)
        tern_tcp_close(st, c);
}

static void on_peer_closed(tern_stack *st, tern_conn *c, void *user)
{
    echo *e = user;
    e->closing = true;
    if (e->len == 0)
        tern_tcp_close(st, c);     /* FIN after what is queued */
}

static void on_server_closed(tern_stack *st, tern_conn *c, void *user,
                             int reason)
{
    (void)st, (void)c, (void)reason;
    free(user);
}

/* A host's instance: cfg has its address and callbacks; add your
 * buffers, your NIC and a secret, and give it memory. */
static tern_stack *host_start(host *h, tern_config *cfg, const uint8_t mac[6])
{
    memcpy(cfg->mac, mac, 6);
    cfg->buf_ops = (tern_buf_ops){pool_alloc, pool_free, &h->pool, NULL};
    cfg->tx = wire_tx;                  /* your NIC's transmit */
    cfg->tx_ctx = h;
    cfg->rx_burst = RING;               /* the most one tern_input gets */
    if (getrandom(cfg->secret, sizeof cfg->secret, 0) != sizeof cfg->secret)
        return NULL;
    size_t size = tern_stack_size(cfg); /* a multiple of TERN_STACK_ALIGN */
    h->mem = aligned_alloc(TERN_STACK_ALIGN, size);
    int err = 0;
    h->st = tern_stack_init(h->mem, size, cfg, &err);
    if (!h->st)
        fprintf(stderr, "core_echo: %s\n", tern_strerror(err));
    return h->st;
}

static tern_stack *server_start(host *h, const uint8_t mac[6])
{
    tern_config cfg;
    tern_config_defaults(&cfg);
    cfg.ip = TERN_IP4(198, 18, 0, 1);
    cfg.prefix_len = 24;
    cfg.rcv_buf = RCV_BUF;
    cfg.snd_buf = RCV_BUF / 4;          /* small, so short sends happen */
    cfg.cb.accepted = on_accepted;
    cfg.cb.recv = on_recv;
    cfg.cb.acked = on_acked;
    cfg.cb.peer_closed = on_peer_closed;
    cfg.cb.closed = on_server_closed;
    tern_stack *st = host_start(h, &cfg, mac);
    int err = st ? tern_tcp_listen(st, 7, NULL) : 0;
    if (err)
        fprintf(stderr, "core_echo: listen: %s\n", tern_strerror(err));
    return err ? NULL : st;
}

/* The loop: hand each host what its ring received, run the timers. A real
 * driver would read its NIC here, and sleep until the deadline tern_poll
 * returns or the next frame. */
static void run_once(host *hosts, unsigned n)
{
    uint64_t now = now_ns();
    for (unsigned i = 0; i < n; i++) {
        host *h = &hosts[i];
        tern_buf *frames[RING];
        unsigned k = h->nring;
        memcpy(frames, h->ring, k * sizeof frames[0]);
        h->nring = 0;             /* its transmit may refill the peer now */
        tern_input(h->st, frames, k, now);
        tern_poll(h->st, now);
    }
}
/* -- README.md shows up to here ----------------------------------------- */

/* The client: sends TOTAL bytes of a known pattern, checks the echo. */
typedef struct client {
    size_t sent, received, bad;
} client;

static uint8_t pattern(size_t i) { return (uint8_t)(i * 7 + (i >> 11)); }

static void client_push(tern_stack *st, tern_conn *c, client *k)
{
    uint8_t chunk[16384];
    while (k->sent < TOTAL) {
        size_t n = TOTAL - k->sent < sizeof chunk ? TOTAL - k->sent : sizeof chunk;
        for (size_t i = 0; i < n; i++)
            chunk[i] = pattern(k->sent + i);
        long took = tern_tcp_send(st, c, chunk, n);
        if (took <= 0)
            return;                /* full: `acked` calls again */
        k->sent += (size_t)took;
    }
}

static void on_connected(tern_stack *st, tern_conn *c, void *user)
{
    client_push(st, c, user);
}

static void on_client_acked(tern_stack *st, tern_conn *c, void *user,
                            size_t bytes)
{
    (void)bytes;
    client_push(st, c, user);
}

static size_t on_client_recv(tern_stack *st, tern_conn *c, void *user,
                             tern_buf *buf, const uint8_t *data, size_t len)
{
    client *k = user;
    (void)buf;
    for (size_t i = 0; i < len; i++)
        k->bad += data[i] != pattern(k->received + i);
    k->received += len;
    if (k->received == TOTAL)
        tern_tcp_close(st, c);
    return len;
}


static tern_stack *client_start(host *h, const uint8_t mac[6], client *k)
{
    tern_config cfg;
    tern_config_defaults(&cfg);
    cfg.ip = TERN_IP4(198, 18, 0, 2);
    cfg.prefix_len = 24;
    cfg.cb.connected = on_connected;
    cfg.cb.recv = on_client_recv;
    cfg.cb.acked = on_client_acked;
    tern_stack *st = host_start(h, &cfg, mac);
    int err = 0;
    if (!st)
        return NULL;
    tern_addr server = tern_addr_v4(TERN_IP4(198, 18, 0, 1));
    if (!tern_tcp_connect(st, &server, 7, 0, k, &err)) {
        fprintf(stderr, "core_echo: connect: %s\n", tern_strerror(err));
        return NULL;
    }
    tern_flush(st);            /* the connect was made outside a callback */
    return st;
}

int main(void)
{
    static host hosts[2];
    static const uint8_t mac[2][6] = {{0x02, 0, 0, 0, 0, 1},
                                      {0x02, 0, 0, 0, 0, 2}};
    client k = {0};
    hosts[0].peer = &hosts[1];
    hosts[1].peer = &hosts[0];
    pool_init(&hosts[0].pool);
    pool_init(&hosts[1].pool);
    if (!server_start(&hosts[0], mac[0]) || !client_start(&hosts[1], mac[1], &k))
        return 1;
    /* Until the echo is back and both sides closed: the server's
     * connection is then gone (the client's waits in TIME_WAIT). Bounded by
     * rounds, not by time: the transfer needs a few thousand. */
    unsigned round = 0;
    while (++round < 1000000 && (k.received < TOTAL ||
                                 tern_tcp_conn_count(hosts[0].st) != 0))
        run_once(hosts, 2);
    int closed = tern_tcp_conn_count(hosts[0].st) == 0;
    int ok = k.received == TOTAL && k.bad == 0 && closed;
    printf("core_echo: %zu of %u bytes echoed in %u rounds, %zu wrong, %s; "
           "%lu short sends kept\n", k.received, TOTAL, round, k.bad,
           closed ? "closed" : "not closed", short_sends);
    for (int i = 0; i < 2; i++) {
        tern_stack_fini(hosts[i].st);   /* every buffer back to its pool */
        free(hosts[i].mem);
    }
    /* TIME_WAIT and the like hold no buffer after fini: all are back. */
    ok = ok && hosts[0].pool.top == NBUF && hosts[1].pool.top == NBUF;
    free(hosts[0].pool.mem);
    free(hosts[1].pool.mem);
    return ok ? 0 : 1;
}
