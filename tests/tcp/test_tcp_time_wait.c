/* The TIME_WAIT table and the receive reserve, on one stack driven by a
 * scripted peer: a connection that closes first frees its slot and leaves
 * a record; the record answers per RFC 9293, lets a newer SYN in per RFC
 * 6191, is recycled oldest first when the table is full and expires on
 * time; a cookie handshake that finds no slot is reset; sends past the
 * send budget are refused and cb.writable calls them back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"

#define MAX_CONNS 4

static struct ev {
    tern_conn *conn;           /* the latest accepted */
    tern_conn *writable[8];    /* writable calls, in order */
    int nwritable;
    int closed;
} E;

static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)lu;
    E.conn = c;
    return NULL;
}
static void on_closed(tern_stack *st, tern_conn *c, void *u, int reason)
{
    (void)st; (void)c; (void)u; (void)reason;
    E.closed++;
}
static void on_writable(tern_stack *st, tern_conn *c, void *u)
{
    (void)st; (void)u;
    if (E.nwritable < 8)
        E.writable[E.nwritable] = c;
    E.nwritable++;
}

static uint32_t max_tw;        /* config of the next stack */
static bool with_lifo;         /* send_reserve's stand-in pool LIFO */
static tern_buf_stack lifo;

static void tweak(tern_config *c)
{
    c->cb.accepted = on_accepted;
    c->cb.closed = on_closed;
    c->cb.writable = on_writable;
    c->time_wait_ms = 1000;
    c->max_conns = MAX_CONNS;
    c->max_time_wait = max_tw ? max_tw : 16;
    if (with_lifo) {
        c->buf_ops.stack = &lifo;
        c->rx_reserve_bufs = 4;
    }
}

static th *T;

static int setup(void **s)
{
    (void)s;
    memset(&E, 0, sizeof E);
    T = th_new(tweak);
    return 0;
}
static int teardown(void **s)
{
    (void)s;
    assert_int_equal(th_free(T), 0);
    max_tw = 0;
    with_lifo = false;
    return 0;
}
static const tern_counters *ctr(void) { return tern_get_counters(T->st); }
static void advance_ms(uint64_t ms) { th_advance_us(T, ms * 1000); }

/* A peer on port `port` connects; the stack closes first and the peer
 * answers with ACK+FIN: the conn goes to TIME_WAIT. */
static void close_first(peer *p, uint16_t port)
{
    peer_init(p, T);
    p->seq = 1000u + port * 100000u;
    peer_connect(p, 80, port);
    assert_non_null(E.conn);
    tern_tcp_close(T->st, E.conn);
    tern_flush(T->st);
    tpkt f;
    assert_true(tp_get(T, -1, &f));
    assert_true(f.flags & F_FIN);
    p->ack = f.seq + 1;
    th_clear(T);
    peer_send(p, F_ACK | F_FIN, NULL, 0);
    /* the FIN's ACK left at once */
    assert_int_equal(tp_count(T), 1);
    assert_true(tp_get(T, 0, &f));
    assert_int_equal(f.flags, F_ACK);
    assert_int_equal(f.ack, p->seq);
    th_clear(T);
}

static void slot_freed_at_once(void **s)
{
    (void)s;
    peer p[MAX_CONNS + 2];
    for (int i = 0; i < MAX_CONNS + 2; i++)
        close_first(&p[i], (uint16_t)(40000 + i));
    /* more connections closed through TIME_WAIT than the table has slots,
     * and each record is still held */
    assert_int_equal(E.closed, MAX_CONNS + 2);
    assert_int_equal(tern_tcp_time_wait_count(T->st), MAX_CONNS + 2);
    assert_int_equal(ctr()->tcp_drop_conn_table_full, 0);
    assert_int_equal(ctr()->tcp_conns_closed, MAX_CONNS + 2);
    /* a fresh connection gets a slot */
    peer q;
    peer_init(&q, T);
    peer_connect(&q, 80, 41000);
    assert_int_equal(tern_tcp_conn_count(T->st), MAX_CONNS + 3);
}

static void record_answers(void **s)
{
    (void)s;
    peer p;
    close_first(&p, 40000);
    /* the peer's FIN again: ACKed again */
    p.seq--;
    peer_send(&p, F_ACK | F_FIN, NULL, 0);
    tpkt a;
    assert_int_equal(tp_count(T), 1);
    assert_true(tp_get(T, 0, &a));
    assert_int_equal(a.flags, F_ACK);
    assert_int_equal(a.ack, p.seq);
    assert_int_equal(a.seq, p.ack);
    assert_true(a.has_ts);
    assert_int_equal(a.tsecr, p.tsval);
    th_clear(T);
    /* a bare ACK at rcv_nxt: no answer */
    peer_send(&p, F_ACK, NULL, 0);
    assert_int_equal(tp_count(T), 0);
    /* stray data: ACKed, not delivered */
    peer_send(&p, F_ACK, "xy", 2);
    assert_int_equal(tp_count(T), 1);
    th_clear(T);
    /* an exact RST ends it; nothing answers a RST */
    p.seq -= 2;
    peer_send(&p, F_RST, NULL, 0);
    assert_int_equal(tp_count(T), 0);
    assert_int_equal(tern_tcp_time_wait_count(T->st), 0);
    assert_int_equal(ctr()->tcp_time_wait_acks, 2);
}

/* A SYN on the tuple: accepted when newer (RFC 6191), else ACKed. */
static void syn_rfc6191(void **s)
{
    (void)s;
    peer p;
    close_first(&p, 40000);
    uint32_t next = p.seq;        /* the record's rcv_nxt */
    /* an older timestamp: the old incarnation's ACK, no SYN-ACK */
    peer_init(&p, T);
    p.port = 40000;
    p.lport = 80;
    p.tsval = 100;
    uint8_t opt[12] = {1, 1, 8, 10, 0, 0, 0, 100, 0, 0, 0, 0};
    peer_send_opts(&p, F_SYN, opt, sizeof opt, NULL, 0);
    tpkt a;
    assert_int_equal(tp_count(T), 1);
    assert_true(tp_get(T, 0, &a));
    assert_int_equal(a.flags, F_ACK);
    assert_int_equal(ctr()->tcp_time_wait_reuse, 0);
    assert_int_equal(tern_tcp_time_wait_count(T->st), 1);
    th_clear(T);
    /* the same TSval (one tick later) and an ISN below the old rcv_nxt:
     * no newer than the old connection */
    p.seq = next - 10;
    opt[7] = 0xf4;
    opt[6] = 0x01;                /* TSval 500 */
    peer_send_opts(&p, F_SYN, opt, sizeof opt, NULL, 0);
    assert_true(tp_get(T, -1, &a));
    assert_int_equal(a.flags, F_ACK);
    th_clear(T);
    /* a newer one: a new connection */
    p.seq = 7;                    /* below the old rcv_nxt: TS decides */
    opt[7] = 0;
    opt[6] = 0x10;                /* TSval 4096 > 500 */
    peer_send_opts(&p, F_SYN, opt, sizeof opt, NULL, 0);
    assert_true(tp_get(T, -1, &a));
    assert_int_equal(a.flags, F_SYN | F_ACK);
    assert_int_equal(a.ack, 8);
    assert_int_equal(ctr()->tcp_time_wait_reuse, 1);
    assert_int_equal(tern_tcp_time_wait_count(T->st), 0);
    th_clear(T);
}

/* The same TSval with a newer ISN is accepted (a client reconnecting
 * from its port within one tick of its timestamp clock), as Linux does. */
static void syn_same_ts_newer_isn(void **s)
{
    (void)s;
    peer p;
    close_first(&p, 40000);
    uint32_t next = p.seq;
    p.seq = next + 100000;
    uint8_t opt[12] = {1, 1, 8, 10, 0, 0, 0x01, 0xf4, 0, 0, 0, 0};
    peer_send_opts(&p, F_SYN, opt, sizeof opt, NULL, 0);
    tpkt a;
    assert_true(tp_get(T, -1, &a));
    assert_int_equal(a.flags, F_SYN | F_ACK);
    assert_int_equal(ctr()->tcp_time_wait_reuse, 1);
}

/* Without timestamps the ISN decides. */
static void syn_rfc6191_isn(void **s)
{
    (void)s;
    peer p;
    peer_init(&p, T);
    p.ts = false;
    peer_connect(&p, 80, 40000);
    tern_tcp_close(T->st, E.conn);
    tern_flush(T->st);
    tpkt f;
    assert_true(tp_get(T, -1, &f));
    p.ack = f.seq + 1;
    peer_send(&p, F_ACK | F_FIN, NULL, 0);
    th_clear(T);
    uint32_t next = p.seq;
    p.seq = next - 10;                        /* not above rcv_nxt */
    peer_send_opts(&p, F_SYN, NULL, 0, NULL, 0);
    assert_true(tp_get(T, -1, &f));
    assert_int_equal(f.flags, F_ACK);
    assert_int_equal(f.ack, next);
    th_clear(T);
    p.seq = next + 100000;                    /* above */
    peer_send_opts(&p, F_SYN, NULL, 0, NULL, 0);
    assert_true(tp_get(T, -1, &f));
    assert_int_equal(f.flags, F_SYN | F_ACK);
    assert_int_equal(ctr()->tcp_time_wait_reuse, 1);
}

static void full_table_recycles_oldest(void **s)
{
    (void)s;
    teardown(s);
    max_tw = 2;
    setup(s);
    peer p[3];
    for (int i = 0; i < 3; i++)
        close_first(&p[i], (uint16_t)(40000 + i));
    assert_int_equal(tern_tcp_time_wait_count(T->st), 2);
    assert_int_equal(ctr()->tcp_time_wait_recycled, 1);
    /* the first (oldest) went: its tuple is unknown, so an ACK gets a RST */
    peer_send(&p[0], F_ACK, NULL, 0);
    tpkt a;
    assert_true(tp_get(T, -1, &a));
    assert_true(a.flags & F_RST);
    th_clear(T);
    /* the second is still there: answered with an ACK */
    peer_send(&p[1], F_ACK, "z", 1);
    assert_true(tp_get(T, -1, &a));
    assert_int_equal(a.flags, F_ACK);
}

static void expiry_and_restart(void **s)
{
    (void)s;
    peer a, b;
    close_first(&a, 40000);
    advance_ms(600);
    close_first(&b, 40001);
    advance_ms(300);
    /* a's FIN again at 900 ms: its wait starts over */
    a.seq--;
    peer_send(&a, F_ACK | F_FIN, NULL, 0);
    advance_ms(800);          /* 1700: b (600 + 1000) is due, a is not */
    assert_int_equal(tern_tcp_time_wait_count(T->st), 1);
    th_clear(T);
    peer_send(&b, F_ACK, NULL, 0);
    tpkt r;
    assert_true(tp_get(T, -1, &r));
    assert_true(r.flags & F_RST);
    advance_ms(300);          /* 2000: a (900 + 1000) is due */
    assert_int_equal(tern_tcp_time_wait_count(T->st), 0);
    assert_int_equal(tern_tcp_conn_count(T->st), 0);
}

/* A valid cookie ACK with no free slot gets a RST, never silence. */
static void cookie_without_slot_reset(void **s)
{
    (void)s;
    peer p[MAX_CONNS];
    for (int i = 0; i < MAX_CONNS; i++) {
        peer_init(&p[i], T);
        peer_connect(&p[i], 80, (uint16_t)(40000 + i));
    }
    assert_int_equal(tern_tcp_conn_count(T->st), MAX_CONNS);
    peer q;
    peer_init(&q, T);
    q.port = 41000;
    q.lport = 80;
    q.wnd = 65535;
    uint8_t opt[4] = {2, 4, 0x05, 0xb4};
    q.ts = false;
    peer_send_opts(&q, F_SYN, opt, sizeof opt, NULL, 0);
    tpkt sa;
    assert_true(tp_get(T, -1, &sa));
    assert_int_equal(sa.flags, F_SYN | F_ACK);    /* a cookie */
    assert_int_equal(ctr()->tcp_syn_cookies_sent, 1);
    q.ack = sa.seq + 1;
    th_clear(T);
    uint64_t full = ctr()->tcp_drop_conn_table_full;
    peer_send(&q, F_ACK, NULL, 0);
    tpkt r;
    assert_int_equal(tp_count(T), 1);
    assert_true(tp_get(T, 0, &r));
    assert_true(r.flags & F_RST);
    assert_int_equal(ctr()->tcp_drop_conn_table_full, full + 1);
}

/* Sends leave the pool's last rx_reserve_bufs buffers to input: with the
 * pool's LIFO below it they are refused, and writable calls each refused
 * conn back, oldest first, once the pool has room again. The harness
 * allocates with calloc, so the LIFO here is a stand-in that only says
 * how many buffers are free (top): no buffer lies in its span, so the
 * stack never pops or pushes it. */
static tern_buf lifo_dummy = {.refs = 1};
static tern_buf *lifo_slots[16] = {
    &lifo_dummy, &lifo_dummy, &lifo_dummy, &lifo_dummy, &lifo_dummy,
    &lifo_dummy, &lifo_dummy, &lifo_dummy, &lifo_dummy, &lifo_dummy,
    &lifo_dummy, &lifo_dummy, &lifo_dummy, &lifo_dummy, &lifo_dummy,
    &lifo_dummy};
static tern_buf_stack lifo = {.free = lifo_slots, .cap = 16};


static void send_reserve(void **s)
{
    (void)s;
    teardown(s);
    lifo.top = 10;
    with_lifo = true;
    setup(s);
    peer p[2];
    tern_conn *c[2];
    for (int i = 0; i < 2; i++) {
        peer_init(&p[i], T);
        peer_connect(&p[i], 80, (uint16_t)(40000 + i));
        c[i] = E.conn;
    }
    static uint8_t data[4000];
    memset(data, 'd', sizeof data);
    assert_int_equal(tern_tcp_send(T->st, c[0], data, 100), 100);
    lifo.top = 3;                         /* below the reserve of 4 */
    assert_int_equal(tern_tcp_send(T->st, c[0], data, 100), -TERN_ENOBUFS);
    assert_int_equal(tern_tcp_send(T->st, c[1], data, 4000), -TERN_ENOBUFS);
    assert_int_equal(ctr()->tcp_send_rx_reserve, 2);
    /* input with the pool still low: nobody is called */
    peer_send(&p[1], F_ACK, NULL, 0);
    assert_int_equal(E.nwritable, 0);
    /* under pressure (below twice the reserve) is not room enough to
     * call them back */
    lifo.top = 7;
    peer_send(&p[1], F_ACK, NULL, 0);
    assert_int_equal(E.nwritable, 0);
    /* room again: the next input's end calls both, c0 (refused first)
     * first */
    lifo.top = 8;
    peer_send(&p[1], F_ACK, NULL, 0);
    assert_int_equal(E.nwritable, 2);
    assert_ptr_equal(E.writable[0], c[0]);
    assert_ptr_equal(E.writable[1], c[1]);
    assert_int_equal(ctr()->tcp_writable_calls, 2);
    /* once each: a later input calls nobody */
    peer_send(&p[1], F_ACK, NULL, 0);
    assert_int_equal(E.nwritable, 2);
    /* and a retry now succeeds */
    assert_int_equal(tern_tcp_send(T->st, c[1], data, 4000), 4000);
    /* under pressure, a short queue still gets buffers, a long one not */
    static uint8_t big[20000];
    assert_int_equal(tern_tcp_send(T->st, c[1], big, sizeof big),
                     (long)sizeof big);
    lifo.top = 5;
    /* (what fits the unsent tail buffer is taken: no buffer needed) */
    assert_true(tern_tcp_send(T->st, c[1], data, 4000) < 4000);
    assert_int_equal(tern_tcp_send(T->st, c[0], data, 4000), 4000);
    /* a closed conn leaves the wait list: only the other is called */
    lifo.top = 0;
    assert_int_equal(tern_tcp_send(T->st, c[0], data, 10), -TERN_ENOBUFS);
    tern_tcp_abort(T->st, c[0]);
    lifo.top = 10;
    th_poll(T);
    assert_int_equal(E.nwritable, 3);
    assert_ptr_equal(E.writable[2], c[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(slot_freed_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(record_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(syn_rfc6191, setup, teardown),
        cmocka_unit_test_setup_teardown(syn_rfc6191_isn, setup, teardown),
        cmocka_unit_test_setup_teardown(syn_same_ts_newer_isn, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(full_table_recycles_oldest, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(expiry_and_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(cookie_without_slot_reset, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(send_reserve, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
