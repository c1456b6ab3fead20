/* server_conn.h - for tests that drive one server connection by hand: the
 * accepted connection in `conn`, the bytes it got acknowledged in `acked`,
 * tweak() to install both callbacks (TIME_WAIT shortened to 1 s), and the
 * stack `T` with its hand-driven peer `P`, opened by server_conn_open. */
#ifndef TERN_TEST_SERVER_CONN_H
#define TERN_TEST_SERVER_CONN_H

#include "harness.h"

static tern_conn *conn;
static uint64_t acked;
static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)lu;
    conn = c;
    return NULL;
}
static void on_acked(tern_stack *st, tern_conn *c, void *u, size_t n)
{
    (void)st; (void)c; (void)u;
    acked += n;
}
static void tweak(tern_config *c)
{
    c->cb.accepted = on_accepted;
    c->cb.acked = on_acked;
    c->time_wait_ms = 1000;
}

static th *T;
static peer P;

/* A fresh stack whose port 80 has accepted P's connection from `port`;
 * data[0, n) gets the bytes i * 7 for the test to send. */
static void server_conn_open(uint16_t port, uint8_t *data, size_t n)
{
    conn = NULL;
    acked = 0;
    T = th_new(tweak);
    peer_init(&P, T);
    peer_connect(&P, 80, port);
    assert_non_null(conn);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 7);
}

static int teardown(void **s)
{
    (void)s;
    assert_int_equal(th_free(T), 0);
    return 0;
}

static const tern_counters *ctr(void) { return tern_get_counters(T->st); }

#endif
