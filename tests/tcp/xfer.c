/* xfer.c - see xfer.h. */
#include "xfer.h"

#include "tcp/tcp.h"

void xfer_pump(tern_stack *st, xfer *x)
{
    static uint8_t buf[65536];
    size_t chunk = x->chunk && x->chunk < sizeof buf ? x->chunk : sizeof buf;
    while (x->cli && x->sent < x->total) {
        if (x->one_at_a_time &&
            x->sent != ((struct tern_conn *)x->cli)->bytes_acked)
            break;
        size_t n = x->total - x->sent, space = tern_tcp_send_space(st, x->cli);
        if (n > chunk)
            n = chunk;
        if (n > space)
            n = space;
        if (!n)
            break;
        long r = tern_tcp_send(st, x->cli, buf, n);
        if (r <= 0)
            break;
        x->sent += (uint64_t)r;
        if (x->one_at_a_time)
            break;
    }
    if (x->close_at_end && x->cli && x->sent == x->total)
        tern_tcp_shutdown(st, x->cli);
}

static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)lu;
    xfer *x = tern_get_user(st);
    x->srv = c;
    return x;
}

static void on_connected(tern_stack *st, tern_conn *c, void *u)
{
    xfer *x = u;
    x->cli = c;
    xfer_pump(st, x);
}

static void on_acked(tern_stack *st, tern_conn *c, void *u, size_t n)
{
    (void)c; (void)n;
    xfer_pump(st, u);
}

static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t len)
{
    (void)st; (void)c; (void)b; (void)d;
    ((xfer *)u)->rcvd += len;
    return len;
}

static void on_peer_closed(tern_stack *st, tern_conn *c, void *u)
{
    if (((xfer *)u)->close_at_end)
        tern_tcp_close(st, c);
}

static void on_closed(tern_stack *st, tern_conn *c, void *u, int reason)
{
    (void)st; (void)reason;
    xfer *x = u;
    if (c == x->cli)
        x->cli = NULL;
    else
        x->srv = NULL;
    x->closed++;
}

const tern_callbacks XFER_CB = {
    .accepted = on_accepted, .connected = on_connected, .recv = on_recv,
    .acked = on_acked, .peer_closed = on_peer_closed, .closed = on_closed,
};

void xfer_start(pair *p, xfer *x)
{
    tern_tcp_listen(p->st[1], XFER_PORT, x);
    tern_tcp_connect(p->st[0], A4(PAIR_IP1), XFER_PORT, 0, x, NULL);
    tern_flush(p->st[0]);
}

bool xfer_delivered(void *arg)
{
    xfer *x = arg;
    return x->total && x->rcvd >= x->total;
}
