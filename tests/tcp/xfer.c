/* xfer.c - see xfer.h. */
#include "xfer.h"

#include "pattern.h"
#include "tcp/tcp.h"

/* Copies of the stream into the send queue, as much as it takes. */
static void send_copies(tern_stack *st, xfer *x)
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
        if (x->pattern)
            pattern_fill(buf, x->sent, n);
        long r = tern_tcp_send(st, x->cli, buf, n);
        if (r <= 0)
            break;
        x->sent += (uint64_t)r;
        if (x->one_at_a_time)
            break;
    }
}

void xfer_pump(tern_stack *st, xfer *x)
{
    if (x->send)
        x->send(st, x);
    else
        send_copies(st, x);
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
    (void)st; (void)c; (void)b;
    xfer *x = u;
    if (x->pattern && x->good == x->rcvd)
        x->good += pattern_check(d, x->rcvd, len);
    x->rcvd += len;
    if (x->slow) {
        x->unconsumed += len;
        return 0;
    }
    return len;
}

static void on_peer_closed(tern_stack *st, tern_conn *c, void *u)
{
    if (((xfer *)u)->close_at_end)
        tern_tcp_close(st, c);
}

static void on_closed(tern_stack *st, tern_conn *c, void *u, int reason)
{
    (void)st;
    xfer *x = u;
    int end = c == x->cli ? 0 : 1;
    if (end == 0)
        x->cli = NULL;
    else
        x->srv = NULL;
    x->closes[end]++;
    x->reason[end] = reason;
    x->closed++;
}

const tern_callbacks XFER_CB = {
    .accepted = on_accepted, .connected = on_connected, .recv = on_recv,
    .acked = on_acked, .peer_closed = on_peer_closed, .closed = on_closed,
};

bool xfer_start(pair *p, xfer *x)
{
    x->p = p;
    bool ok = tern_tcp_listen(p->st[1], XFER_PORT, x) == 0;
    ok = tern_tcp_connect(p->st[0], A4(PAIR_IP1), XFER_PORT, 0, x, NULL) && ok;
    tern_flush(p->st[0]);
    return ok;
}

bool xfer_delivered(void *arg)
{
    xfer *x = arg;
    return x->total && x->rcvd >= x->total;
}

bool xfer_closed(void *arg)
{
    xfer *x = arg;
    if (x->slow && x->srv && x->unconsumed) {
        uint64_t n = x->unconsumed < 65536 ? x->unconsumed : 65536;
        x->unconsumed -= n;
        tern_tcp_consumed(x->p->st[1], x->srv, n);
        tern_flush(x->p->st[1]);
    }
    return x->closes[0] && x->closes[1];
}
