/* server_conn.h - for tests that drive one server connection by hand: the
 * accepted connection in `conn`, the bytes it got acknowledged in `acked`,
 * and tweak() to install both callbacks (TIME_WAIT shortened to 1 s). */
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

#endif
