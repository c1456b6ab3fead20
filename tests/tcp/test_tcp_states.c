/* State machine and option paths of one stack driven by hand-built
 * segments from a scripted peer; what the stack sends is captured and
 * checked field by field. Time is simulated (t->now). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "conn_log.h"
#include "harness.h"
#include "tcp/tcp.h"
#include <stdio.h>

static int cfg_mode;
static void tweak(tern_config *c)
{
    conn_log_callbacks(&c->cb);
    c->time_wait_ms = 1000;
    if (cfg_mode == 1)
        c->max_half_open = 1;
    if (cfg_mode == 2)
        c->keepalive_ms = 1000;
    if (cfg_mode == 3)
        c->no_delayed_ack = true;
    if (cfg_mode == 4)
        c->gateway = TERN_IP4(198, 18, 0, 254);
    if (cfg_mode == 5)
        c->ooo_max_bufs = 2;
}

static th *T;
static peer P;

static int setup(void **s)
{
    (void)s;
    memset(&E, 0, sizeof E);
    T = th_new(tweak);
    memset(&P, 0, sizeof P);
    P.t = T;
    P.seq = 1000;
    P.ts = true;
    P.tsval = 500;
    return 0;
}
static int teardown(void **s)
{
    (void)s;
    if (!T)                     /* a failed one_pass test freed it */
        return 0;
    th *t = T;
    T = NULL;
    assert_int_equal(th_free(t), 0);
    cfg_mode = 0;
    return 0;
}
static const tern_counters *ctr(void) { return tern_get_counters(T->st); }
static void advance_ms(uint64_t ms)
{
    uint64_t end = T->now + ms * TERN_NS_PER_MS;
    while (T->now < end) {
        uint64_t d = th_poll(T);
        T->now = d < end && d > T->now ? d : end;
    }
    th_poll(T);
}

/* ---- tests ---- */

static void passive_open(void **s)
{
    (void)s;
    tern_tcp_listen(T->st, 80, NULL);
    tp_arp(T);
    P.lport = 80;
    P.port = 40000;
    P.wnd = 1000;
    uint8_t opt[20] = {2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10, 0, 0, 1, 244, 0, 0, 0, 0};
    peer_send_opts(&P, F_SYN, opt, 20, NULL, 0);
    tpkt p;
    assert_int_equal(tp_count(T), 1);
    assert_true(tp_get(T, 0, &p));
    assert_int_equal(p.flags, F_SYN | F_ACK);
    assert_int_equal(p.ack, 1001);
    assert_true(p.has_mss && p.mss == 1460);
    assert_true(p.has_ws && p.sack_ok && p.has_ts);
    assert_int_equal(p.tsecr, 500);
    assert_true(p.csum_ok);
    assert_int_equal(E.accepted, 0);
    assert_int_equal(tern_tcp_conn_count(T->st), 1);
    P.ack = p.seq + 1;
    P.tsecr = p.tsval;
    th_clear(T);
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.accepted, 1);
    assert_int_equal(tp_count(T), 0);
    tern_tcp_info i;
    tern_tcp_get_info(T->st, E.conn, &i);
    assert_int_equal(i.state, TERN_TCP_ESTABLISHED);
    assert_int_equal(i.snd_wnd, 1000u << 7);
    assert_int_equal(i.mss, 1460 - 12);
    assert_int_equal(tern_tcp_mss(E.conn), 1460 - 12);  /* the same figure */
    assert_true(i.sack && i.timestamps);
    assert_int_equal(ctr()->tcp_passive_opens, 1);
    assert_int_equal(ctr()->tcp_conns_established, 1);
}

static void data_in_place_delack(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40001);
    assert_int_equal(E.accepted, 1);
    uint8_t d[3000];
    for (int i = 0; i < 3000; i++)
        d[i] = (uint8_t)i;
    peer_send(&P, F_ACK | F_PSH, d, 100);
    assert_int_equal(E.nrx, 100);
    assert_memory_equal(E.rx, d, 100);
    assert_int_equal(tp_count(T), 0);       /* delayed */
    advance_ms(50);
    tpkt p;
    assert_int_equal(tp_count(T), 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.flags, F_ACK);
    assert_int_equal(p.ack, P.seq);
    assert_int_equal(ctr()->tcp_delayed_acks, 1);
    th_clear(T);
    /* two full segments: ACK at once */
    peer_send(&P, F_ACK, d + 100, 1448);
    assert_int_equal(tp_count(T), 0);
    peer_send(&P, F_ACK, d + 1548, 1448);
    assert_int_equal(tp_count(T), 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.ack, P.seq);
    assert_int_equal(E.nrx, 2996);
    assert_memory_equal(E.rx, d, 2996);
}

static void echo_piggyback(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40002);
    E.echo = true;
    for (int r = 0; r < 5; r++) {
        th_clear(T);
        peer_send(&P, F_ACK | F_PSH, "hello world", 11);
        assert_int_equal(tp_count(T), 1);   /* data with the ACK, no pure ACK */
        tpkt p;
        tp_get(T, 0, &p);
        assert_int_equal(p.len, 11);
        assert_memory_equal(p.data, "hello world", 11);
        assert_int_equal(p.ack, P.seq);
        assert_true(p.flags & F_ACK);
        assert_true(p.csum_ok);
        P.ack = p.seq + p.len;
        P.tsecr = p.tsval;
    }
    assert_int_equal(ctr()->tcp_pure_acks_out, 0);
    th_clear(T);
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.acked, 55);
}

static void active_open(void **s)
{
    (void)s;
    tp_arp(T);
    int err = -1;
    tern_conn *c = tern_tcp_connect(T->st, A4(TH_PEER_IP), 443, 0, &E, &err);
    assert_non_null(c);
    assert_int_equal(err, 0);
    tern_flush(T->st);
    tpkt p;
    assert_int_equal(tp_count(T), 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.flags, F_SYN);
    assert_true(p.sport >= 49152);
    assert_true(p.has_mss && p.has_ws && p.sack_ok && p.has_ts);
    P.port = 443;
    P.lport = p.sport;
    P.seq = 7000;
    P.ack = p.seq + 1;
    P.wnd = 2000;
    th_clear(T);
    uint8_t opt[8] = {2, 4, 0x02, 0x18, 1, 3, 3, 2};   /* mss 536, ws 2 */
    peer_send_opts(&P, F_SYN | F_ACK, opt, 8, NULL, 0);
    assert_int_equal(E.connected, 1);
    assert_int_equal(tp_count(T), 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.flags, F_ACK);
    assert_int_equal(p.ack, 7001);
    assert_false(p.has_ts);
    tern_tcp_info i;
    tern_tcp_get_info(T->st, c, &i);
    assert_int_equal(i.mss, 536);
    assert_int_equal(i.snd_wnd, 2000);      /* SYN-ACK window is unscaled */
    assert_false(i.timestamps);
    assert_false(i.sack);
    assert_int_equal(ctr()->tcp_active_opens, 1);
}

static void rst_rules(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40003);
    /* in window but not exact: challenge ACK, second one rate-limited */
    uint32_t seq = P.seq;
    P.seq = seq + 10;
    peer_send(&P, F_RST, NULL, 0);
    assert_int_equal(ctr()->tcp_challenge_acks, 1);
    assert_int_equal(tp_count(T), 1);
    P.seq = seq + 20;
    peer_send(&P, F_RST, NULL, 0);
    assert_int_equal(ctr()->tcp_challenge_acks_limited, 1);
    assert_int_equal(E.closed, 0);
    /* out of window: ignored */
    P.seq = seq + 10000000;
    peer_send(&P, F_RST, NULL, 0);
    assert_int_equal(E.closed, 0);
    /* SYN in ESTABLISHED: challenge ACK (after the per-conn interval) */
    advance_ms(200);
    P.seq = seq;
    peer_send(&P, F_SYN, NULL, 0);
    assert_int_equal(ctr()->tcp_challenge_acks, 2);
    assert_int_equal(E.closed, 0);
    /* exact: reset */
    P.seq = seq;
    peer_send(&P, F_RST, NULL, 0);
    assert_int_equal(E.closed, 1);
    assert_int_equal(E.close_reason, TERN_CLOSE_RESET);
    assert_int_equal(tern_tcp_conn_count(T->st), 0);
    assert_int_equal(ctr()->tcp_estab_resets, 1);
}

static void active_close(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40004);
    tern_conn *c = E.conn;
    tern_tcp_send(T->st, c, "bye", 3);
    tern_tcp_close(T->st, c);
    tern_flush(T->st);
    tpkt p;
    assert_int_equal(tp_count(T), 2);       /* data, then FIN */
    tp_get(T, 0, &p);
    assert_int_equal(p.len, 3);
    tp_get(T, -1, &p);
    assert_true(p.flags & F_FIN);
    th_clear(T);
    P.ack = p.seq + p.len + 1;
    peer_send(&P, F_ACK, NULL, 0);          /* FIN_WAIT_2 */
    assert_int_equal(E.closed, 0);
    peer_send(&P, F_ACK | F_FIN, NULL, 0);  /* TIME_WAIT */
    assert_int_equal(E.closed, 1);
    assert_int_equal(E.close_reason, TERN_CLOSE_NORMAL);
    assert_int_equal(tp_count(T), 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.ack, P.seq);
    assert_int_equal(tern_tcp_conn_count(T->st), 1);
    /* FIN again in TIME_WAIT: ACKed again */
    th_clear(T);
    P.seq--;
    peer_send(&P, F_ACK | F_FIN, NULL, 0);
    assert_int_equal(tp_count(T), 1);
    advance_ms(1100);
    assert_int_equal(tern_tcp_conn_count(T->st), 0);
    assert_int_equal(ctr()->tcp_conns_closed, 1);
}

static void passive_close(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40005);
    tern_conn *c = E.conn;
    peer_send(&P, F_ACK | F_FIN, "x", 1);
    assert_int_equal(E.peer_closed, 1);
    assert_int_equal(E.nrx, 1);
    tpkt p;
    assert_int_equal(tp_count(T), 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.ack, P.seq);
    tern_tcp_info i;
    tern_tcp_get_info(T->st, c, &i);
    assert_int_equal(i.state, TERN_TCP_CLOSE_WAIT);
    /* half-close: we can still send */
    assert_true(tern_tcp_send(T->st, c, "ok", 2) == 2);
    tern_tcp_close(T->st, c);
    tern_flush(T->st);
    tp_get(T, -1, &p);
    assert_true(p.flags & F_FIN);
    P.ack = p.seq + p.len + 1;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.closed, 1);
    assert_int_equal(tern_tcp_conn_count(T->st), 0);
}

static void simultaneous_close(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40006);
    tern_conn *c = E.conn;
    tern_tcp_close(T->st, c);
    tern_flush(T->st);
    tpkt p;
    tp_get(T, -1, &p);
    assert_true(p.flags & F_FIN);
    uint32_t our_fin = p.seq;
    th_clear(T);
    peer_send(&P, F_ACK | F_FIN, NULL, 0);  /* does not ack our FIN */
    tern_tcp_info i;
    tern_tcp_get_info(T->st, c, &i);
    assert_int_equal(i.state, TERN_TCP_CLOSING);
    P.ack = our_fin + 1;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.closed, 1);
    /* TIME_WAIT keeps a record, not the slot; the count includes it */
    assert_int_equal(tern_tcp_time_wait_count(T->st), 1);
    assert_int_equal(tern_tcp_conn_count(T->st), 1);
    advance_ms(1100);
    assert_int_equal(tern_tcp_conn_count(T->st), 0);
}

static void simultaneous_open(void **s)
{
    (void)s;
    tp_arp(T);
    tern_conn *c = tern_tcp_connect(T->st, A4(TH_PEER_IP), 5000, 6000, &E, NULL);
    tern_flush(T->st);
    tpkt p;
    tp_get(T, 0, &p);
    uint32_t iss = p.seq;
    th_clear(T);
    P.port = 5000;
    P.lport = 6000;
    P.seq = 300;
    P.wnd = 4000;
    P.ts = false;
    peer_send_opts(&P, F_SYN, (const uint8_t *)"\x02\x04\x05\xb4", 4, NULL, 0);
    assert_int_equal(tp_count(T), 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.flags, F_SYN | F_ACK);
    assert_int_equal(p.seq, iss);
    assert_int_equal(p.ack, 301);
    th_clear(T);
    P.seq = 300;
    P.ack = iss + 1;
    peer_send_opts(&P, F_SYN | F_ACK, (const uint8_t *)"\x02\x04\x05\xb4", 4,
                   NULL, 0);
    assert_int_equal(E.connected, 1);
    tern_tcp_info i;
    tern_tcp_get_info(T->st, c, &i);
    assert_int_equal(i.state, TERN_TCP_ESTABLISHED);
}

static void syn_cookies(void **s)
{
    (void)s;
    cfg_mode = 1;
    teardown(s);
    cfg_mode = 1;
    setup(s);
    tern_tcp_listen(T->st, 80, NULL);
    tp_arp(T);
    P.lport = 80;
    P.port = 1111;
    P.wnd = 65535;
    uint8_t opt[20] = {2, 4, 0x05, 0xb4, 1, 3, 3, 5, 4, 2, 8, 10, 0, 0, 0, 9, 0, 0, 0, 0};
    peer_send_opts(&P, F_SYN, opt, 20, NULL, 0);   /* half-open 1 */
    assert_int_equal(ctr()->tcp_syn_cookies_sent, 0);
    peer q = P;
    q.port = 2222;
    q.seq = 50000;
    th_clear(T);
    peer_send_opts(&q, F_SYN, opt, 20, NULL, 0);
    assert_int_equal(ctr()->tcp_syn_cookies_sent, 1);
    assert_int_equal(tern_tcp_conn_count(T->st), 1);
    tpkt p;
    tp_get(T, 0, &p);
    assert_int_equal(p.flags, F_SYN | F_ACK);
    assert_true(p.has_ts && p.has_ws && p.sack_ok);
    /* a forged ACK fails */
    q.ack = p.seq + 2;
    q.ts = true;
    q.tsval = 10;
    q.tsecr = p.tsval;
    th_clear(T);
    peer_send(&q, F_ACK, NULL, 0);
    assert_int_equal(ctr()->tcp_syn_cookies_bad, 1);
    /* the right one opens the connection with the options recovered */
    q.ack = p.seq + 1;
    peer_send(&q, F_ACK, "data", 4);
    assert_int_equal(ctr()->tcp_syn_cookies_ok, 1);
    assert_int_equal(E.accepted, 1);
    assert_int_equal(E.nrx, 4);
    tern_tcp_info i;
    tern_tcp_get_info(T->st, E.conn, &i);
    assert_int_equal(i.state, TERN_TCP_ESTABLISHED);
    assert_int_equal(i.snd_wscale, 5);
    assert_true(i.sack && i.timestamps);
    assert_int_equal(i.mss, 1460 - 12);
}

/* A conn from port whose peer has sent "a" with TSval tsval (TS.Recent),
 * captured frames cleared. */
static void connected_with_ts(uint16_t port, uint32_t tsval)
{
    peer_connect(&P, 80, port);
    P.tsval = tsval;
    peer_send(&P, F_ACK, "a", 1);
    assert_int_equal(E.nrx, 1);
    th_clear(T);
}

static void paws_drop(void **s)
{
    (void)s;
    connected_with_ts(40007, 1000);
    P.tsval = 900;                          /* older: PAWS */
    peer_send(&P, F_ACK, "b", 1);
    assert_int_equal(E.nrx, 1);
    assert_int_equal(ctr()->tcp_drop_paws, 1);
    assert_int_equal(tp_count(T), 1);       /* with an ACK */
}

/* ACKs that a newer ACK overtook on the way (older TSval, ack below
 * snd_una): dropped for PAWS without an ACK in reply and counted apart;
 * an old ACK carrying data still gets the ACK. */
static void paws_old_ack(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40099);
    tern_conn *c = E.conn;
    static uint8_t d[3000];
    assert_int_equal(tern_tcp_send(T->st, c, d, sizeof d), (int)sizeof d);
    tern_flush(T->st);
    assert_int_equal(tp_count(T), 3);       /* 1448 + 1448 + 104 */
    tpkt p;
    tp_get(T, 0, &p);
    uint32_t una = p.seq;
    th_clear(T);
    P.tsval = 1001;                         /* the newer ACK first */
    P.ack = una + 2896;
    peer_send(&P, F_ACK, NULL, 0);
    P.tsval = 1000;                         /* then the one it overtook */
    P.ack = una + 1448;
    peer_send(&P, F_ACK, NULL, 0);
    tern_flush(T->st);
    assert_int_equal(ctr()->tcp_drop_paws_old_ack, 1);
    assert_int_equal(ctr()->tcp_drop_paws, 0);
    assert_int_equal(tp_count(T), 0);       /* no ACK for it */
    P.ack = una + 2896;                     /* old TSval on data: ACKed */
    peer_send(&P, F_ACK, "x", 1);
    tern_flush(T->st);
    assert_int_equal(ctr()->tcp_drop_paws, 1);
    assert_int_equal(tp_count(T), 1);
    P.tsval = 1002;                         /* the tail's ACK is taken */
    P.seq -= 1;
    P.ack = una + sizeof d;
    peer_send(&P, F_ACK, "x", 1);
    assert_int_equal(E.nrx, 1);
    assert_int_equal(ctr()->tcp_drop_paws_old_ack, 1);
}

/* A SYN at RCV.NXT (challenge ACK, RFC 5961 4.2) or a segment without
 * ACK carrying a far-ahead TSval leaves TS.Recent alone: the peer's next
 * segments still pass PAWS. */
static void ts_recent_not_from_syn(void **s)
{
    (void)s;
    connected_with_ts(40098, 600);
    P.tsval = 600 + 0x40000000u;
    peer_send(&P, F_SYN, NULL, 0);
    P.seq -= 1;                             /* the SYN took no sequence */
    assert_int_equal(ctr()->tcp_challenge_acks, 1);
    tpkt p;
    assert_true(tp_get(T, -1, &p));
    assert_int_equal(p.tsecr, 600);         /* echoes the last valid one */
    peer_send(&P, 0, "b", 1);               /* no ACK flag: dropped */
    P.seq -= 1;
    assert_int_equal(ctr()->tcp_drop_flags, 1);
    P.tsval = 601;
    peer_send(&P, F_ACK, "c", 1);
    assert_int_equal(ctr()->tcp_drop_paws, 0);
    assert_int_equal(E.nrx, 2);
    assert_int_equal(E.rx[1], 'c');
}

static void ooo_and_sack(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40008);
    uint8_t d[300];
    for (int i = 0; i < 300; i++)
        d[i] = (uint8_t)(i * 7);
    uint32_t base = P.seq;
    P.seq = base + 100;
    peer_send(&P, F_ACK, d + 100, 100);
    P.seq = base + 250;
    peer_send(&P, F_ACK, d + 250, 50);
    assert_int_equal(E.nrx, 0);
    assert_int_equal(ctr()->tcp_ooo_segments, 2);
    tpkt p;
    tp_get(T, -1, &p);
    assert_int_equal(p.ack, base);
    assert_int_equal(p.nsack, 2);
    assert_int_equal(p.sack[0][0], base + 250);   /* the latest first */
    assert_int_equal(p.sack[0][1], base + 300);
    assert_int_equal(p.sack[1][0], base + 100);
    assert_int_equal(p.sack[1][1], base + 200);
    /* duplicate of a held one */
    P.seq = base + 100;
    peer_send(&P, F_ACK, d + 100, 100);
    assert_int_equal(ctr()->tcp_dup_data_in, 1);
    /* fill the first hole */
    th_clear(T);
    P.seq = base;
    peer_send(&P, F_ACK, d, 100);
    assert_int_equal(E.nrx, 200);
    tp_get(T, -1, &p);
    assert_int_equal(p.ack, base + 200);
    assert_int_equal(p.nsack, 1);
    P.seq = base + 200;
    peer_send(&P, F_ACK, d + 200, 50);
    assert_int_equal(E.nrx, 300);
    assert_memory_equal(E.rx, d, 300);
}

/* ooo_max_bufs bounds the out-of-order buffers of all conns together:
 * past it a segment is dropped and counted, whichever conn it is for;
 * delivering or resetting a conn gives its share back. */
static void ooo_limit_for_the_stack(void **s)
{
    cfg_mode = 5;
    teardown(s);
    cfg_mode = 5;
    setup(s);
    peer Q = P;
    Q.seq = 7000;
    peer_connect(&P, 80, 40020);
    peer_connect(&Q, 80, 40021);
    uint8_t d[100];
    memset(d, 'x', sizeof d);
    uint32_t base = P.seq;
    P.seq = base + 10;
    peer_send(&P, F_ACK, d, 10);
    P.seq = base + 30;
    peer_send(&P, F_ACK, d, 10);
    assert_int_equal(ctr()->tcp_ooo_segments, 2);
    assert_int_equal(T->st->tcp->ooo_bufs, 2);
    /* the other conn finds the stack's limit reached */
    uint32_t qbase = Q.seq;
    Q.seq = qbase + 10;
    peer_send(&Q, F_ACK, d, 10);
    assert_int_equal(ctr()->tcp_drop_ooo_full, 1);
    assert_int_equal(ctr()->tcp_ooo_segments, 2);
    /* the first hole filled: one buffer delivered, one still held */
    P.seq = base;
    peer_send(&P, F_ACK, d, 10);
    assert_int_equal(T->st->tcp->ooo_bufs, 1);
    Q.seq = qbase + 10;
    peer_send(&Q, F_ACK, d, 10);
    assert_int_equal(ctr()->tcp_ooo_segments, 3);
    assert_int_equal(T->st->tcp->ooo_bufs, 2);
    /* a reset conn gives its held buffer back */
    Q.seq = qbase;
    peer_send(&Q, F_RST, NULL, 0);
    assert_int_equal(T->st->tcp->ooo_bufs, 1);
}

static void rto_backoff_timeout(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40009);
    tern_conn *c = E.conn;
    assert_int_equal(tern_tcp_send(T->st, c, "zzz", 3), 3);
    tern_flush(T->st);
    assert_int_equal(tp_count(T), 1);
    th_clear(T);
    advance_ms(1500);                       /* initial RTO: 1 s */
    assert_true(ctr()->tcp_rto_expiries >= 1);
    assert_true(ctr()->tcp_retransmits >= 1);
    tpkt p;
    tp_get(T, 0, &p);
    assert_int_equal(p.len, 3);
    advance_ms(600000);
    assert_int_equal(E.closed, 1);
    assert_int_equal(E.close_reason, TERN_CLOSE_TIMEOUT);
    assert_int_equal(ctr()->tcp_timeouts, 1);
    assert_int_equal(tern_tcp_conn_count(T->st), 0);
}

static void zero_window_probe(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40010);
    tern_conn *c = E.conn;
    P.wnd = 0;
    peer_send(&P, F_ACK, NULL, 0);          /* the peer's window closes */
    assert_int_equal(tern_tcp_send(T->st, c, "abcdef", 6), 6);
    tern_flush(T->st);
    assert_int_equal(tp_count(T), 0);
    advance_ms(1200);
    assert_true(ctr()->tcp_zero_window_probes >= 1);
    tpkt p;
    tp_get(T, -1, &p);
    assert_int_equal(p.len, 0);
    assert_int_equal(p.seq, P.ack - 1);
    th_clear(T);
    P.wnd = 1000;
    peer_send(&P, F_ACK, NULL, 0);          /* window opens */
    assert_int_equal(tp_count(T), 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.len, 6);
}

static void keepalive_dead_peer(void **s)
{
    (void)s;
    cfg_mode = 2;
    teardown(s);
    cfg_mode = 2;
    setup(s);
    peer_connect(&P, 80, 40011);
    advance_ms(1100);
    assert_true(ctr()->tcp_keepalive_probes >= 1);
    tpkt p;
    tp_get(T, -1, &p);
    assert_int_equal(p.seq, P.ack - 1);
    peer_send(&P, F_ACK, NULL, 0);           /* answered: alive */
    assert_int_equal(E.closed, 0);
    advance_ms(30000);
    assert_int_equal(E.closed, 1);
    assert_int_equal(E.close_reason, TERN_CLOSE_TIMEOUT);
    assert_int_equal(ctr()->tcp_timeouts, 1);
}

static void fast_retransmit_sack(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40012);
    tern_conn *c = E.conn;
    static uint8_t d[10 * 1448];
    for (size_t i = 0; i < sizeof d; i++)
        d[i] = (uint8_t)i;
    assert_int_equal(tern_tcp_send(T->st, c, d, sizeof d), (long)sizeof d);
    tern_flush(T->st);
    assert_int_equal(tp_count(T), 10);      /* IW10 */
    tpkt p;
    tp_get(T, 0, &p);
    uint32_t una = p.seq;
    th_clear(T);
    /* segment 0 lost: SACKs for 1, 1-2, 1-3 */
    for (int k = 1; k <= 3; k++) {
        uint8_t o[12] = {1, 1, 5, 10};
        uint32_t a = una + 1448, b = una + 1448 * (uint32_t)(k + 1);
        o[4] = (uint8_t)(a >> 24); o[5] = (uint8_t)(a >> 16); o[6] = (uint8_t)(a >> 8); o[7] = (uint8_t)a;
        o[8] = (uint8_t)(b >> 24); o[9] = (uint8_t)(b >> 16); o[10] = (uint8_t)(b >> 8); o[11] = (uint8_t)b;
        P.ack = una;
        peer_send_opts(&P, F_ACK, o, 12, NULL, 0);
    }
    assert_int_equal(ctr()->tcp_fast_retransmits, 1);
    assert_int_equal(ctr()->tcp_sack_recoveries, 1);
    assert_true(tp_count(T) >= 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.seq, una);
    assert_int_equal(p.len, 1448);
    assert_memory_equal(p.data, d, 1448);
    th_clear(T);
    P.ack = una + sizeof d;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.acked, sizeof d);
}

static void bad_options(void **s)
{
    (void)s;
    tern_tcp_listen(T->st, 80, NULL);
    tp_arp(T);
    P.lport = 80;
    P.port = 3333;
    P.wnd = 100;
    uint8_t bad[4] = {2, 9, 5, 0};          /* length past the header */
    peer_send_opts(&P, F_SYN, bad, 4, NULL, 0);
    assert_int_equal(ctr()->tcp_drop_options, 1);
    assert_int_equal(tp_count(T), 0);
    uint8_t bad2[4] = {2, 3, 5, 0};         /* MSS of the wrong length */
    peer_send_opts(&P, F_SYN, bad2, 4, NULL, 0);
    assert_int_equal(ctr()->tcp_drop_options, 2);
    /* ws 15 clamps to 14, mss 10 floors at 64 */
    uint8_t ok[8] = {2, 4, 0, 10, 1, 3, 3, 15};
    P.ts = false;
    peer_send_opts(&P, F_SYN, ok, 8, NULL, 0);
    tpkt p;
    assert_true(tp_get(T, -1, &p));
    assert_int_equal(p.flags, F_SYN | F_ACK);
    P.ack = p.seq + 1;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.accepted, 1);
    tern_tcp_info i;
    tern_tcp_get_info(T->st, E.conn, &i);
    assert_int_equal(i.snd_wscale, 14);
    assert_int_equal(i.mss, 64);
}

static void rst_for_closed_port(void **s)
{
    (void)s;
    tp_arp(T);
    P.lport = 9;
    P.port = 4444;
    P.wnd = 100;
    P.ts = false;
    peer_send(&P, F_SYN, NULL, 0);
    tpkt p;
    assert_int_equal(tp_count(T), 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.flags, F_RST | F_ACK);
    assert_int_equal(p.ack, P.seq);
    assert_int_equal(p.seq, 0);
    th_clear(T);
    P.ack = 77777;
    peer_send(&P, F_ACK, "x", 1);
    tp_get(T, 0, &p);
    assert_int_equal(p.flags, F_RST);
    assert_int_equal(p.seq, 77777);
    th_clear(T);
    peer_send(&P, F_RST, NULL, 0);          /* never answer a RST */
    assert_int_equal(tp_count(T), 0);
    assert_int_equal(ctr()->tcp_drop_no_conn, 3);
}

static void partial_consume_window(void **s)
{
    (void)s;
    P.ts = false;
    peer_connect(&P, 80, 40013);
    tern_conn *c = E.conn;
    E.consume_limit = 1;                    /* keep almost everything */
    static uint8_t d[1460];
    uint32_t total = 0;
    tpkt p;
    for (int k = 0; k < 400 && total < 300000; k++) {
        th_clear(T);
        peer_send(&P, F_ACK, d, sizeof d);
        total += sizeof d;
    }
    advance_ms(100);
    /* the window closed: the last ACK says 0 and data beyond is refused */
    tp_get(T, -1, &p);
    assert_int_equal(p.wnd, 0);
    size_t got = E.nrx;
    assert_true(got < 300000);
    assert_true(got >= 256 * 1024 - 1460);
    th_clear(T);
    tern_tcp_consumed(T->st, c, 200000);
    tern_flush(T->st);
    assert_int_equal(tp_count(T), 1);       /* window update */
    tp_get(T, 0, &p);
    assert_true(p.wnd > 0);
}

static void syn_retries_dead_peer(void **s)
{
    (void)s;
    tp_arp(T);
    tern_conn *c = tern_tcp_connect(T->st, A4(TH_PEER_IP), 443, 0, &E, NULL);
    assert_non_null(c);
    advance_ms(200000);
    assert_int_equal(E.closed, 1);
    assert_int_equal(E.close_reason, TERN_CLOSE_TIMEOUT);
    assert_int_equal(ctr()->tcp_attempt_fails, 1);
    assert_int_equal(ctr()->tcp_timeouts, 1);
    assert_int_equal(tp_count(T), 6);       /* SYN + 5 retries */
}

static void bad_checksum_dropped(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40014);
    uint8_t f[200];
    size_t n = tp_frame(f, TH_PEER_IP, TH_IP, P.port, P.lport, P.seq, P.ack,
                        F_ACK, 1000, NULL, 0, "abc", 3);
    f[n - 1] ^= 1;
    th_input(T, f, n);
    assert_int_equal(ctr()->tcp_drop_csum, 1);
    assert_int_equal(E.nrx, 0);
}

static void no_delack_mode(void **s)
{
    (void)s;
    cfg_mode = 3;
    teardown(s);
    cfg_mode = 3;
    setup(s);
    peer_connect(&P, 80, 40015);
    peer_send(&P, F_ACK, "q", 1);
    assert_int_equal(tp_count(T), 1);
}

/* The next four bytes from P as a frame (Ethernet first) with the usual
 * options: the shape the one-pass receive (tcp_input_frame) takes. */
static size_t usual_frame(uint8_t *f)
{
    uint8_t opt[12] = {1, 1, 8, 10};
    th_put32(opt + 4, P.tsval);
    th_put32(opt + 8, P.tsecr);
    return tp_frame(f, TH_PEER_IP, TH_IP, P.port, P.lport, P.seq, P.ack,
                    F_ACK | F_PSH, P.wnd, opt, sizeof opt, "abcd", 4);
}

/* Feed f (n bytes); returns whether its four bytes reached the app. */
static bool fed_delivers(const uint8_t *f, size_t n)
{
    size_t before = E.nrx;
    th_input(T, f, n);
    if (E.nrx == before)
        return false;
    assert_int_equal(E.nrx, before + 4);
    assert_memory_equal(E.rx + before, "abcd", 4);
    P.seq += 4;
    return true;
}

/* The usual segment is taken in one pass with the counters of the layered
 * path; variants it must decline (padding aside) get the layered path's
 * verdict and counter: delivered, or dropped under their own reason. */
static void one_pass_receive(void **s)
{
    (void)s;
    peer_connect(&P, 80, 40016);
    const tern_counters *k = ctr();
    uint64_t eth = k->eth_in, ip = k->ip_in, tcp = k->tcp_in;
    uint8_t f[256];
    size_t n = usual_frame(f);
    assert_true(fed_delivers(f, n));
    assert_int_equal(k->eth_in, eth + 1);
    assert_int_equal(k->ip_in, ip + 1);
    assert_int_equal(k->tcp_in, tcp + 1);
    assert_int_equal(k->tcp_bytes_in, 4);
    /* Ethernet padding after the datagram: dropped, not delivered */
    n = usual_frame(f);
    memset(f + n, 0xee, 10);
    assert_true(fed_delivers(f, n + 10));
    assert_int_equal(k->tcp_bytes_in, 8);
    /* broadcast MAC: not the one-pass shape, accepted by eth_input */
    n = usual_frame(f);
    memset(f, 0xff, 6);
    assert_true(fed_delivers(f, n));
    /* bad IPv4 header sum, bad TCP sum, NIC's bad-sum flag aside */
    n = usual_frame(f);
    f[24] ^= 0x10;
    assert_false(fed_delivers(f, n));
    assert_int_equal(k->ip_drop_csum, 1);
    n = usual_frame(f);
    f[50] ^= 0x10;
    assert_false(fed_delivers(f, n));
    assert_int_equal(k->tcp_drop_csum, 1);
    /* total length past the frame */
    n = usual_frame(f);
    f[17] += 1;
    th_fix_ip_csum(f);
    assert_false(fed_delivers(f, n));
    assert_int_equal(k->ip_drop_total_len, 1);
    /* a fragment (MF): the layered path reassembles, so nothing yet */
    n = usual_frame(f);
    f[20] = 0x20;
    th_fix_ip_csum(f);
    assert_false(fed_delivers(f, n));
    /* source 127.0.0.1 */
    n = usual_frame(f);
    f[26] = 127;
    f[27] = 0;
    f[28] = 0;
    f[29] = 1;
    th_fix_ip_csum(f);
    assert_false(fed_delivers(f, n));
    assert_int_equal(k->ip_drop_bad_src, 1);
    /* and the usual shape still goes through */
    n = usual_frame(f);
    assert_true(fed_delivers(f, n));
    assert_int_equal(k->tcp_bytes_in, 16);
    assert_int_equal(k->ip_in, ip + 9);
    assert_int_equal(k->tcp_in, tcp + 5);
}

/* What one run of declined_script leaves: the counters, every frame the
 * stack sent (FNV-1a over the bytes), what reached the app. */
typedef struct verdict {
    tern_counters k;
    uint64_t wire;
    unsigned frames;
    size_t nrx, acked;
    int peer_closed;
    uint64_t predicted;
} verdict;

/* The counters, the frames sent since the last th_clear and the bytes
 * delivered, into v. */
static void take_verdict(verdict *v)
{
    memset(v, 0, sizeof *v);
    v->k = *ctr();
    v->wire = 0xcbf29ce484222325ull;
    for (unsigned i = 0; i < T->nout; i++)
        for (uint32_t j = 0; j < T->out_len[i]; j++)
            v->wire = (v->wire ^ T->out[i][j]) * 0x100000001b3ull;
    v->frames = T->nout;
    v->nrx = E.nrx;
    v->acked = E.acked;
    v->peer_closed = E.peer_closed;
    v->predicted = T->st->tcp->predicted;
}

/* One frame in the one-pass shape, changed by `edit`, fed to a fresh
 * stack with a connection from P, to our MAC or (bcast_mac, which the
 * one-pass receive never takes) to the broadcast MAC: the layered path's
 * verdict. The counters and every frame sent in answer go to v. */
typedef void (*frame_edit)(uint8_t *f);
static void feed_variant(frame_edit edit, bool bcast_mac, verdict *v)
{
    setup(NULL);
    peer_connect(&P, 80, 40018);
    th_clear(T);
    uint8_t f[256];
    size_t n = usual_frame(f);
    edit(f);
    if (bcast_mac)
        memset(f, 0xff, 6);
    th_input(T, f, n);
    th_poll(T);
    take_verdict(v);
    teardown(NULL);
}

/* Rewrite the TCP checksum of a usual_frame after an edit. */
static void fix_tcp_sum(uint8_t *f)
{
    size_t len = 20 + 12 + 4;
    uint32_t sum = (uint32_t)th_rd16(f + 26) + th_rd16(f + 28) +
                   th_rd16(f + 30) + th_rd16(f + 32) + 6 + (uint32_t)len;
    f[50] = f[51] = 0;
    uint16_t c = th_csum_ref(f + 34, len, sum);
    f[50] = (uint8_t)(c >> 8);
    f[51] = (uint8_t)c;
}
static void set_src(uint8_t *f, uint32_t ip)
{
    th_put32(f + 26, ip);
    th_fix_ip_csum(f);
    fix_tcp_sum(f);
}
static void edit_none(uint8_t *f) { (void)f; }
static void edit_sport0(uint8_t *f)
{
    f[34] = f[35] = 0;
    fix_tcp_sum(f);
}
static void edit_dport0(uint8_t *f)
{
    f[36] = f[37] = 0;
    fix_tcp_sum(f);
}
static void edit_dport81(uint8_t *f)
{
    f[37] = 81;
    fix_tcp_sum(f);
}
static void edit_src_loop(uint8_t *f) { set_src(f, TERN_IP4(127, 0, 0, 1)); }
static void edit_src_zero_net(uint8_t *f) { set_src(f, TERN_IP4(0, 1, 2, 3)); }
static void edit_src_class_e(uint8_t *f) { set_src(f, TERN_IP4(240, 0, 0, 1)); }
static void edit_src_ours(uint8_t *f) { set_src(f, TH_IP); }
static void edit_src_bcast(uint8_t *f) { set_src(f, TERN_IP4(198, 18, 0, 255)); }
static void edit_src_other(uint8_t *f) { set_src(f, TERN_IP4(198, 18, 0, 9)); }

/* The tests the one-pass receive leaves to the TCP layer (the source
 * address, zero ports) and a segment for no conn: for each, the same
 * counters and answer as the layered path. */
static void one_pass_like_layered(void **s)
{
    (void)s;
    static const frame_edit edits[] = {
        edit_none, edit_sport0, edit_dport0, edit_dport81, edit_src_loop,
        edit_src_zero_net, edit_src_class_e, edit_src_ours, edit_src_bcast,
        edit_src_other,
    };
    teardown(NULL);
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        verdict one, layered;
        feed_variant(edits[i], false, &one);
        feed_variant(edits[i], true, &layered);
        /* the broadcast MAC is not counted apart: all else must match */
        assert_memory_equal(&one.k, &layered.k, sizeof one.k);
        assert_true(one.wire == layered.wire);
        assert_int_equal(one.frames, layered.frames);
        assert_int_equal(one.nrx, layered.nrx);
        assert_int_equal(one.nrx, i == 0 ? 4 : 0);
        assert_int_equal(one.k.ip_drop_csum + one.k.tcp_drop_csum, 0);
        assert_int_equal(one.k.ip_drop_bad_src, i >= 4 && i <= 8);
        assert_int_equal(one.k.tcp_drop_port0, i == 1 || i == 2);
        /* no listener on 81; the listener on 80 resets a bare ACK */
        assert_int_equal(one.k.tcp_drop_no_conn, i == 3);
        assert_int_equal(one.k.tcp_rst_out, i == 3 || i == 9);
    }
    setup(NULL);
}


/* Segments in the one-pass shape (32-byte header, NOP NOP TS, good sums)
 * that the fast path's prediction refuses, between ones it takes: the
 * raw receive path hands them on parsed (tcp_input_parsed, or the general
 * ACK path for a new ACK of part of the flight). */
static void declined_script(bool no_predict, verdict *v)
{
    setup(NULL);
    T->st->tcp->no_predict = no_predict;
    peer_connect(&P, 80, 40017);
    uint8_t d[3000];
    for (size_t i = 0; i < sizeof d; i++)
        d[i] = (uint8_t)(i * 13 + 1);
    peer_send(&P, F_ACK | F_PSH, d, 100);           /* predicted */
    /* three segments out (two full), then an ACK of the first only: a
     * new ACK that is not the whole flight */
    assert_int_equal(tern_tcp_send(T->st, E.conn, d, 3000), 3000);
    th_poll(T);
    P.ack += 1448;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.acked, 1448);
    P.ack += 1448;
    peer_send(&P, F_ACK | F_PSH, d, 10);            /* with data */
    assert_int_equal(E.acked, 2896);
    /* out of order, then the hole filled */
    uint32_t base = P.seq;
    P.seq = base + 50;
    peer_send(&P, F_ACK, d + 50, 50);
    P.seq = base;
    peer_send(&P, F_ACK, d, 50);
    P.seq = base + 100;
    /* an old timestamp (PAWS), an old duplicate, data beyond the window */
    P.seq = base + 100;
    P.tsval -= 10;
    peer_send(&P, F_ACK, d, 20);
    P.tsval += 20;
    P.seq = base + 80;
    peer_send(&P, F_ACK, d, 20);
    P.seq = base + 100 + 0x40000000;
    peer_send(&P, F_ACK, d, 20);
    P.seq = base + 100;
    /* an ACK beyond what was sent, then the rest of the flight's ACK */
    P.ack += 5000;
    peer_send(&P, F_ACK, NULL, 0);
    P.ack -= 5000;
    P.ack += 104;
    peer_send(&P, F_ACK | F_PSH, d, 30);            /* predicted again */
    /* URG, and no connection on the port */
    uint8_t f[256];
    uint8_t opt[12] = {1, 1, 8, 10};
    th_put32(opt + 4, P.tsval);
    th_put32(opt + 8, P.tsecr);
    size_t n = tp_frame(f, TH_PEER_IP, TH_IP, P.port, P.lport, P.seq, P.ack,
                        F_ACK | 0x20, P.wnd, opt, sizeof opt, d, 5);
    th_input(T, f, n);
    P.seq += 5;
    n = tp_frame(f, TH_PEER_IP, TH_IP, P.port, 81, P.seq, P.ack, F_ACK,
                 P.wnd, opt, sizeof opt, d, 5);
    th_input(T, f, n);
    /* and the peer's FIN with its last bytes */
    peer_send(&P, F_ACK | F_FIN, d, 7);
    th_poll(T);
    take_verdict(v);
    assert_memory_equal(E.rx, d, 100);
    teardown(NULL);
}

/* The same script with the fast path and with the layered path alone:
 * the same frames, counters and deliveries. */
static void one_pass_declined(void **s)
{
    (void)s;
    verdict fast, slow;
    teardown(NULL);
    declined_script(false, &fast);
    declined_script(true, &slow);
    setup(NULL);
    assert_true(fast.predicted >= 2);
    assert_int_equal(slow.predicted, 0);
    assert_memory_equal(&fast.k, &slow.k, sizeof fast.k);
    assert_true(fast.wire == slow.wire);
    assert_int_equal(fast.frames, slow.frames);
    assert_int_equal(fast.nrx, slow.nrx);
    assert_int_equal(fast.acked, 3000);
    assert_int_equal(slow.acked, 3000);
    assert_int_equal(fast.peer_closed, 1);
    assert_int_equal(slow.peer_closed, 1);
    assert_int_equal(fast.k.tcp_drop_paws, 1);
    assert_int_equal(fast.k.tcp_drop_no_conn, 1);
    assert_int_equal(fast.k.tcp_dup_data_in, 1);
    assert_int_equal(fast.k.tcp_ooo_segments, 1);
    assert_int_equal(fast.k.tcp_drop_bad_ack, 1);
    assert_int_equal(fast.k.tcp_drop_out_of_window, 1);
    assert_int_equal(fast.nrx, 252);
}

/* tern_tcp_connect refuses every destination whose replies the receive
 * path would drop (ip4_src_ok), even with a gateway that could reach
 * anything, and a zero port; a good one still connects. */
static void connect_refuses_bad_destinations(void **state)
{
    (void)state;
    th_free(T);
    cfg_mode = 4;
    T = th_new(tweak);
    cfg_mode = 0;
    const uint32_t bad[] = {0, TERN_IP4(0, 1, 2, 3), TERN_IP4(127, 0, 0, 1),
                            TERN_IP4(224, 0, 0, 1), TERN_IP4(240, 0, 0, 1),
                            0xffffffffu, TH_IP};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int err = 0;
        assert_null(tern_tcp_connect(T->st, A4(bad[i]), 80, 0, NULL, &err));
        assert_int_equal(err, TERN_EINVAL);
    }
    int err = 0;
    assert_null(tern_tcp_connect(T->st, A4(TH_PEER_IP), 0, 0, NULL, &err));
    assert_int_equal(err, TERN_EINVAL);
    assert_null(tern_tcp_connect(T->st, NULL, 80, 0, NULL, &err));
    assert_int_equal(err, TERN_EINVAL);
    tern_addr odd = tern_addr_v4(TH_PEER_IP);
    odd.family = 5;
    assert_null(tern_tcp_connect(T->st, &odd, 80, 0, NULL, &err));
    assert_int_equal(err, TERN_EINVAL);
    assert_non_null(tern_tcp_connect(T->st, A4(TH_PEER_IP), 80, 0, NULL, &err));
    assert_non_null(tern_tcp_connect(T->st, A4(TERN_IP4(198, 19, 0, 1)), 80, 0,
                                     NULL, &err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(passive_open, setup, teardown),
        cmocka_unit_test_setup_teardown(connect_refuses_bad_destinations, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(data_in_place_delack, setup, teardown),
        cmocka_unit_test_setup_teardown(echo_piggyback, setup, teardown),
        cmocka_unit_test_setup_teardown(active_open, setup, teardown),
        cmocka_unit_test_setup_teardown(rst_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(active_close, setup, teardown),
        cmocka_unit_test_setup_teardown(passive_close, setup, teardown),
        cmocka_unit_test_setup_teardown(simultaneous_close, setup, teardown),
        cmocka_unit_test_setup_teardown(simultaneous_open, setup, teardown),
        cmocka_unit_test_setup_teardown(syn_cookies, setup, teardown),
        cmocka_unit_test_setup_teardown(paws_drop, setup, teardown),
        cmocka_unit_test_setup_teardown(paws_old_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(ts_recent_not_from_syn, setup, teardown),
        cmocka_unit_test_setup_teardown(ooo_and_sack, setup, teardown),
        cmocka_unit_test_setup_teardown(ooo_limit_for_the_stack, setup, teardown),
        cmocka_unit_test_setup_teardown(rto_backoff_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(zero_window_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(keepalive_dead_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(fast_retransmit_sack, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_options, setup, teardown),
        cmocka_unit_test_setup_teardown(rst_for_closed_port, setup, teardown),
        cmocka_unit_test_setup_teardown(partial_consume_window, setup, teardown),
        cmocka_unit_test_setup_teardown(syn_retries_dead_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_checksum_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(no_delack_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(one_pass_receive, setup, teardown),
        cmocka_unit_test_setup_teardown(one_pass_declined, setup, teardown),
        cmocka_unit_test_setup_teardown(one_pass_like_layered, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
