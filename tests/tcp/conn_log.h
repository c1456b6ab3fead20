/* conn_log.h - for tests that drive a stack by hand and check what its
 * callbacks saw: the log E (how often each callback ran, the last
 * connection, the bytes acknowledged, what arrived) and the callbacks that
 * write it, every connection's user pointer &E. E's switches make recv
 * echo, close or hold data back. conn_log_callbacks() installs them. */
#ifndef TERN_TEST_CONN_LOG_H
#define TERN_TEST_CONN_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"

static struct conn_log {
    tern_conn *conn;            /* the last accepted or connected; NULL
                                   once one closes */
    int accepted, connected, peer_closed, closed, close_reason;
    int recv_calls;
    int accepted_before_recv;   /* cb.accepted ran before the first recv */
    size_t acked;
    uint8_t rx[65536];          /* what arrived, as far as it fits */
    size_t nrx;
    size_t consume_limit;       /* recv returns at most this (0 = all) */
    bool echo;                  /* recv sends the data back */
    bool close_in_recv;         /* recv closes the connection */
} E;

static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)lu;
    E.accepted++;
    E.conn = c;
    return &E;
}
static void on_connected(tern_stack *st, tern_conn *c, void *u)
{
    (void)st; (void)u;
    E.connected++;
    E.conn = c;
}
static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t len)
{
    (void)b;
    if (!E.recv_calls++ && E.accepted && u == &E)
        E.accepted_before_recv = 1;
    if (E.nrx + len <= sizeof E.rx)
        memcpy(E.rx + E.nrx, d, len);
    E.nrx += len;
    if (E.echo)
        tern_tcp_send(st, c, d, len);
    if (E.close_in_recv)
        tern_tcp_close(st, c);
    if (E.consume_limit)
        return len < E.consume_limit ? len : E.consume_limit;
    return len;
}
static void on_acked(tern_stack *st, tern_conn *c, void *u, size_t n)
{
    (void)st; (void)c; (void)u;
    E.acked += n;
}
static void on_peer_closed(tern_stack *st, tern_conn *c, void *u)
{
    (void)st; (void)c; (void)u;
    E.peer_closed++;
}
static void on_closed(tern_stack *st, tern_conn *c, void *u, int reason)
{
    (void)st; (void)c; (void)u;
    E.closed++;
    E.close_reason = reason;
    E.conn = NULL;
}

/* The log's callbacks in cb (the others left as they are). */
static void conn_log_callbacks(tern_callbacks *cb)
{
    cb->accepted = on_accepted;
    cb->connected = on_connected;
    cb->recv = on_recv;
    cb->acked = on_acked;
    cb->peer_closed = on_peer_closed;
    cb->closed = on_closed;
}

#endif
