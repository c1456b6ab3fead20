/* TCP Fast Open (RFC 7413) on both sides and urgent data (RFC 6093), one
 * stack driven by a scripted peer: cookies asked for, given, checked and
 * cached, a SYN's data delivered once, the pending bound, the client's SYN
 * with data and the SYN-ACK that takes none of it; URG segments delivered
 * inline; over IPv6, the cookie of a whole address and a Fast Open
 * between two stacks. Time is simulated (t->now). */
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

enum { MODE_SERVER = 1, MODE_BOUND = 2, MODE_SMALL_CACHE = 4, MODE_FLOOD = 8 };
static int cfg_mode;
static void tweak(tern_config *c)
{
    conn_log_callbacks(&c->cb);
    c->tfo_server = (cfg_mode & MODE_SERVER) != 0;
    if (cfg_mode & MODE_BOUND)
        c->tfo_max_pending = 2;
    if (cfg_mode & MODE_SMALL_CACHE)
        c->tfo_cache_entries = 2;
    if (cfg_mode & MODE_FLOOD)
        c->max_half_open = 1;
}

static th *T;
static peer P;

static int setup_mode(int mode)
{
    memset(&E, 0, sizeof E);
    cfg_mode = mode;
    T = th_new(tweak);
    peer_init(&P, T);
    tern_tcp_listen(T->st, 80, NULL);
    tp_arp(T);
    P.lport = 80;
    P.wnd = 65535;
    return 0;
}
static int setup_server(void **s) { (void)s; return setup_mode(MODE_SERVER); }
static int setup_bound(void **s)
{
    (void)s;
    return setup_mode(MODE_SERVER | MODE_BOUND);
}
static int setup_flood(void **s)
{
    (void)s;
    return setup_mode(MODE_SERVER | MODE_FLOOD);
}
static int setup_off(void **s) { (void)s; return setup_mode(0); }
static int setup_small_cache(void **s)
{
    (void)s;
    return setup_mode(MODE_SMALL_CACHE);
}
static int teardown(void **s)
{
    (void)s;
    th *t = T;
    T = NULL;
    assert_int_equal(th_free(t), 0);
    cfg_mode = 0;
    return 0;
}

static const tern_counters *ctr(void) { return tern_get_counters(T->st); }

/* The client cache's cookie for the IPv4 peer ip (tfo_cache_get). */
static uint32_t cache_get4(uint32_t ip, uint8_t *cookie, uint16_t *mss)
{
    struct tern_conn view;
    memset(&view, 0, sizeof view);
    view.raddr = ip;
    return tfo_cache_get(T->st, &view, cookie, mss);
}

/* The TFO option of captured TCP frame i (negative: from the end): its
 * cookie length (0 for a request) or -1 when there is none; the cookie
 * into ck, *exp set for the experimental form. */
static int tfo_of(int i, uint8_t *ck, bool *exp)
{
    int n = (int)T->nout;
    if (i < 0)
        i += n;
    assert_true(i >= 0 && i < n);
    const uint8_t *t = T->out[i] + 14 + 20;
    size_t hl = (size_t)(t[12] >> 4) * 4;
    for (size_t k = 20; k < hl;) {
        uint8_t kind = t[k];
        if (kind == 0)
            break;
        if (kind == 1) {
            k++;
            continue;
        }
        uint8_t ol = t[k + 1];
        if (kind == 34) {
            if (exp)
                *exp = false;
            memcpy(ck, t + k + 2, (size_t)ol - 2);
            return ol - 2;
        }
        if (kind == 254 && th_rd16(t + k + 2) == 0xF989) {
            if (exp)
                *exp = true;
            memcpy(ck, t + k + 4, (size_t)ol - 4);
            return ol - 4;
        }
        k += ol;
    }
    return -1;
}

/* A SYN from peer port `port` (seq 1000) with MSS, SACK, TS and a TFO
 * option carrying cklen cookie bytes (0: a request; -1: no option), exp
 * for the experimental form, and len bytes of data. */
static void syn_tfo(uint16_t port, const uint8_t *ck, int cklen, bool exp,
                    const void *data, size_t len)
{
    uint8_t opt[40] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 1, 244,
                       0, 0, 0, 0, 1, 3, 3, 7};
    size_t ol = 20;
    if (cklen >= 0) {
        if (exp) {
            opt[ol++] = 254;
            opt[ol++] = (uint8_t)(4 + cklen);
            opt[ol++] = 0xF9;
            opt[ol++] = 0x89;
        } else {
            opt[ol++] = 34;
            opt[ol++] = (uint8_t)(2 + cklen);
        }
        if (cklen)
            memcpy(opt + ol, ck, (size_t)cklen);
        ol += (size_t)cklen;
        while (ol % 4)
            opt[ol++] = 1;
    }
    P.port = port;
    P.seq = 1000;
    peer_send_opts(&P, F_SYN, opt, ol, data, len);
}

/* The last frame sent, parsed; fails the test when there is none. */
static tpkt last(void)
{
    tpkt p;
    assert_true(tp_get(T, -1, &p));
    return p;
}

/* A cookie from the stack, asked for with a request from port 39999. */
static int get_cookie(uint8_t ck[16])
{
    syn_tfo(39999, NULL, 0, false, NULL, 0);
    int n = tfo_of(-1, ck, NULL);
    th_clear(T);
    return n;
}

/* ---- server ---- */

static void server_cookie_request(void **s)
{
    (void)s;
    uint8_t ck[16];
    /* data with a request is not taken: the client has no cookie */
    syn_tfo(40000, NULL, 0, false, "early", 5);
    tpkt p = last();
    assert_int_equal(p.flags, F_SYN | F_ACK);
    assert_int_equal(p.ack, 1001);
    assert_int_equal(tfo_of(-1, ck, NULL), TFO_COOKIE_LEN);
    assert_true(p.csum_ok);
    assert_int_equal(ctr()->tcp_tfo_cookie_req_in, 1);
    assert_int_equal(ctr()->tcp_tfo_syn_data_in, 0);
    assert_int_equal(E.accepted, 0);
    assert_int_equal(E.nrx, 0);
    /* the same client gets the same cookie; the options fit 40 bytes */
    uint8_t ck2[16];
    th_clear(T);
    syn_tfo(40001, NULL, 0, false, NULL, 0);
    assert_int_equal(tfo_of(-1, ck2, NULL), TFO_COOKIE_LEN);
    assert_memory_equal(ck, ck2, TFO_COOKIE_LEN);
    p = last();
    assert_true(p.has_mss && p.has_ts && p.sack_ok && p.has_ws);
}

static void server_valid_cookie_data(void **s)
{
    (void)s;
    uint8_t ck[16];
    assert_int_equal(get_cookie(ck), TFO_COOKIE_LEN);
    E.echo = true;
    syn_tfo(40000, ck, TFO_COOKIE_LEN, false, "hello", 5);
    /* delivered before the handshake completes, after cb.accepted */
    assert_int_equal(E.accepted, 1);
    assert_int_equal(E.nrx, 5);
    assert_memory_equal(E.rx, "hello", 5);
    assert_int_equal(E.accepted_before_recv, 1);
    assert_int_equal(ctr()->tcp_tfo_syn_data_in, 1);
    /* the SYN-ACK acknowledges the data and carries no cookie */
    tpkt p;
    assert_true(tp_get(T, 0, &p));
    assert_int_equal(p.flags, F_SYN | F_ACK);
    assert_int_equal(p.ack, 1006);
    assert_int_equal(tfo_of(0, ck, NULL), -1);
    assert_int_equal(TL(T->st)->tfo_pending, 1);
    /* the app's answer follows the SYN-ACK at once */
    tpkt d;
    assert_int_equal(tp_count(T), 2);
    assert_true(tp_get(T, 1, &d));
    assert_int_equal(d.flags & (F_SYN | F_ACK), F_ACK);
    assert_int_equal(d.seq, p.seq + 1);
    assert_int_equal(d.ack, 1006);
    assert_int_equal(d.len, 5);
    assert_memory_equal(d.data, "hello", 5);
    /* the final ACK covers it: no second accepted, nothing resent */
    P.ack = p.seq + 6;
    P.tsecr = p.tsval;
    th_clear(T);
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.accepted, 1);
    assert_int_equal(E.connected, 0);
    assert_int_equal(E.acked, 5);
    assert_int_equal(TL(T->st)->tfo_pending, 0);
    tern_tcp_info i;
    tern_tcp_get_info(T->st, E.conn, &i);
    assert_int_equal(i.state, TERN_TCP_ESTABLISHED);
    th_clear(T);
    th_advance_us(T, 3000 * 1000);
    tern_tcp_get_info(T->st, E.conn, &i);
    assert_int_equal(i.retransmits, 0);
    tpkt q;
    for (unsigned k = 0; k < tp_count(T); k++)   /* only the other conn's */
        assert_true(tp_get(T, (int)k, &q) && q.dport != 40000);
}

static void server_early_answer_lost(void **s)
{
    (void)s;
    uint8_t ck[16];
    get_cookie(ck);
    E.echo = true;
    syn_tfo(40000, ck, TFO_COOKIE_LEN, false, "again", 5);
    tpkt sa;
    assert_true(tp_get(T, 0, &sa));
    assert_int_equal(tp_count(T), 2);
    /* the answer was lost: the final ACK takes the SYN-ACK only */
    P.ack = sa.seq + 1;
    P.tsecr = sa.tsval;
    th_clear(T);
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.accepted, 1);
    th_advance_us(T, 1500 * 1000);
    tpkt d = last();
    assert_int_equal(d.seq, sa.seq + 1);
    assert_int_equal(d.len, 5);
    assert_memory_equal(d.data, "again", 5);
    tern_tcp_info i;
    tern_tcp_get_info(T->st, E.conn, &i);
    assert_true(i.retransmits >= 1);
    P.ack = sa.seq + 6;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.acked, 5);
}

static void server_synack_lost_answer_after(void **s)
{
    (void)s;
    uint8_t ck[16];
    get_cookie(ck);
    E.echo = true;
    syn_tfo(40000, ck, TFO_COOKIE_LEN, false, "late", 4);
    tpkt sa;
    assert_true(tp_get(T, 0, &sa));
    th_clear(T);
    /* neither reached the client: our SYN-ACK timer sends the SYN-ACK
     * again; the answer follows the handshake */
    th_advance_us(T, 1100 * 1000);
    tpkt r = last();
    assert_int_equal(r.flags, F_SYN | F_ACK);
    assert_int_equal(r.ack, 1005);
    P.ack = sa.seq + 1;
    P.tsecr = r.tsval;
    th_clear(T);
    peer_send(&P, F_ACK, NULL, 0);
    tpkt d = last();
    assert_int_equal(d.seq, sa.seq + 1);
    assert_int_equal(d.len, 4);
    assert_memory_equal(d.data, "late", 4);
    assert_int_equal(E.nrx, 4);
}

static void server_syn_retransmitted(void **s)
{
    (void)s;
    uint8_t ck[16];
    get_cookie(ck);
    syn_tfo(40000, ck, TFO_COOKIE_LEN, false, "once", 4);
    tpkt a = last();
    th_clear(T);
    /* the SYN-ACK was lost: the client sends the SYN (and data) again */
    syn_tfo(40000, ck, TFO_COOKIE_LEN, false, "once", 4);
    tpkt b = last();
    assert_int_equal(b.flags, F_SYN | F_ACK);
    assert_int_equal(b.seq, a.seq);
    assert_int_equal(b.ack, 1005);
    assert_int_equal(E.accepted, 1);
    assert_int_equal(E.recv_calls, 1);
    assert_int_equal(E.nrx, 4);
    assert_int_equal(ctr()->tcp_tfo_syn_data_in, 1);
    /* and a bare SYN sent again (Linux's retransmission) is no different */
    th_clear(T);
    syn_tfo(40000, NULL, -1, false, NULL, 0);
    assert_int_equal(last().ack, 1005);
    assert_int_equal(E.nrx, 4);
    /* our own SYN-ACK timeout resends it acknowledging the data too */
    th_clear(T);
    th_advance_us(T, 1100 * 1000);
    assert_true(tp_count(T) >= 1);
    assert_int_equal(last().ack, 1005);
    assert_int_equal(E.nrx, 4);
}

static void server_invalid_cookie(void **s)
{
    (void)s;
    uint8_t ck[16], bad[16], fresh[16];
    get_cookie(ck);
    memcpy(bad, ck, sizeof bad);
    bad[3] ^= 0x40;
    syn_tfo(40000, bad, TFO_COOKIE_LEN, false, "ignored", 7);
    tpkt p = last();
    assert_int_equal(p.ack, 1001);                  /* SYN only */
    assert_int_equal(tfo_of(-1, fresh, NULL), TFO_COOKIE_LEN);
    assert_memory_equal(fresh, ck, TFO_COOKIE_LEN);
    assert_int_equal(E.accepted, 0);
    assert_int_equal(E.nrx, 0);
    assert_int_equal(ctr()->tcp_tfo_cookie_bad, 1);
    /* a cookie of another length is bad too */
    th_clear(T);
    syn_tfo(40001, ck, 4, false, "x", 1);
    assert_int_equal(last().ack, 1001);
    assert_int_equal(ctr()->tcp_tfo_cookie_bad, 2);
    /* the normal handshake then delivers the data the client resends */
    P.port = 40000;
    P.seq = 1001;
    P.ack = p.seq + 1;
    P.tsecr = p.tsval;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.accepted, 1);
    peer_send(&P, F_ACK | F_PSH, "ignored", 7);
    assert_int_equal(E.nrx, 7);
}

static void server_experimental_form(void **s)
{
    (void)s;
    uint8_t ck[16];
    bool exp = false;
    syn_tfo(40000, NULL, 0, true, NULL, 0);
    assert_int_equal(tfo_of(-1, ck, &exp), TFO_COOKIE_LEN);
    assert_true(exp);
    th_clear(T);
    syn_tfo(40001, ck, TFO_COOKIE_LEN, true, "exp", 3);
    assert_int_equal(last().ack, 1004);
    assert_int_equal(E.nrx, 3);
}

static void server_pending_bound(void **s)
{
    (void)s;
    uint8_t ck[16];
    get_cookie(ck);
    syn_tfo(40000, ck, TFO_COOKIE_LEN, false, "a", 1);
    syn_tfo(40001, ck, TFO_COOKIE_LEN, false, "b", 1);
    assert_int_equal(E.accepted, 2);
    th_clear(T);
    syn_tfo(40002, ck, TFO_COOKIE_LEN, false, "c", 1);
    assert_int_equal(last().ack, 1001);             /* over: SYN only */
    assert_int_equal(E.accepted, 2);
    assert_int_equal(ctr()->tcp_tfo_pending_full, 1);
    assert_int_equal(ctr()->tcp_tfo_syn_data_in, 2);
    /* one of the two completes: room for the next */
    P.port = 40000;
    P.seq = 1002;
    P.ack = last().seq;                 /* any: recomputed below */
    struct tern_conn *c = conn_lookup(T->st, TH_PEER_IP, 40000, 80);
    assert_non_null(c);
    P.ack = c->iss + 1;
    P.tsecr = 0;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(c->state, TERN_TCP_ESTABLISHED);
    assert_int_equal(TL(T->st)->tfo_pending, 1);
    th_clear(T);
    syn_tfo(40003, ck, TFO_COOKIE_LEN, false, "d", 1);
    assert_int_equal(last().ack, 1002);
    assert_int_equal(ctr()->tcp_tfo_syn_data_in, 3);
    /* an RST on a pending one frees its place */
    struct tern_conn *d = conn_lookup(T->st, TH_PEER_IP, 40003, 80);
    assert_non_null(d);
    P.port = 40003;
    P.seq = 1002;
    peer_send(&P, F_RST, NULL, 0);
    assert_int_equal(TL(T->st)->tfo_pending, 1);
}

static void server_syn_cookie_mode(void **s)
{
    (void)s;
    uint8_t ck[16];
    /* the cookie request takes the one half-open place: the next SYN is
     * answered by a SYN cookie, which takes no data and gives no cookie */
    assert_int_equal(get_cookie(ck), TFO_COOKIE_LEN);
    syn_tfo(40000, ck, TFO_COOKIE_LEN, false, "flood", 5);
    tpkt p = last();
    assert_int_equal(p.flags, F_SYN | F_ACK);
    assert_int_equal(p.ack, 1001);
    assert_int_equal(tfo_of(-1, ck, NULL), -1);
    assert_int_equal(ctr()->tcp_syn_cookies_sent, 1);
    assert_int_equal(ctr()->tcp_tfo_syn_data_in, 0);
    assert_int_equal(E.accepted, 0);
    assert_int_equal(E.nrx, 0);
    th_clear(T);
    syn_tfo(40001, NULL, 0, false, NULL, 0);
    assert_int_equal(tfo_of(-1, ck, NULL), -1);
    /* the cookie's ACK opens it; the data comes again after it */
    P.port = 40000;
    P.seq = 1001;
    P.ack = p.seq + 1;
    P.tsecr = p.tsval;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.accepted, 1);
    peer_send(&P, F_ACK | F_PSH, "flood", 5);
    assert_int_equal(E.nrx, 5);
}

static void server_off_ignores(void **s)
{
    (void)s;
    uint8_t ck[16] = {1, 2, 3, 4, 5, 6, 7, 8};
    syn_tfo(40000, NULL, 0, false, NULL, 0);
    assert_int_equal(tfo_of(-1, ck, NULL), -1);
    th_clear(T);
    syn_tfo(40001, ck, TFO_COOKIE_LEN, false, "no", 2);
    assert_int_equal(last().ack, 1001);
    assert_int_equal(tfo_of(-1, ck, NULL), -1);
    assert_int_equal(E.nrx, 0);
    assert_int_equal(ctr()->tcp_tfo_cookie_req_in, 0);
}

/* ---- client ---- */

/* The SYN-ACK of the peer to our last SYN: ack `ack`, with a TFO cookie
 * of cklen bytes (-1: none). */
static void synack(tpkt syn, uint32_t ack, const uint8_t *ck, int cklen)
{
    uint8_t opt[40] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 77};
    th_put32(opt + 12, syn.tsval);
    size_t ol = 16;
    opt[ol++] = 1;
    opt[ol++] = 3;
    opt[ol++] = 3;
    opt[ol++] = 7;
    if (cklen >= 0) {
        opt[ol++] = 34;
        opt[ol++] = (uint8_t)(2 + cklen);
        memcpy(opt + ol, ck, (size_t)cklen);
        ol += (size_t)cklen;
        while (ol % 4)
            opt[ol++] = 1;
    }
    P.port = syn.dport;
    P.lport = syn.sport;
    P.seq = 5000;
    P.ack = ack;
    P.tsval = 77;
    P.tsecr = syn.tsval;
    peer_send_opts(&P, F_SYN | F_ACK, opt, ol, NULL, 0);
}

static const uint8_t COOKIE[8] = {0xc0, 0x0c, 0x1e, 0x5a, 0xfe, 0x12, 0x34, 0x56};

static tern_conn *connect_data(const char *msg)
{
    int err = -1;
    tern_conn *c = tern_tcp_connect_data(T->st, A4(TH_PEER_IP), 80, 0, NULL, msg,
                                         msg ? strlen(msg) : 0, &err);
    assert_non_null(c);
    assert_int_equal(err, 0);
    tern_flush(T->st);
    return c;
}

static void client_cookie_request_then_data(void **s)
{
    (void)s;
    uint8_t ck[16];
    connect_data("GET /");
    tpkt syn = last();
    assert_int_equal(syn.flags, F_SYN);
    assert_int_equal(syn.len, 0);                   /* no cookie yet */
    assert_int_equal(tfo_of(-1, ck, NULL), 0);      /* a request */
    assert_int_equal(ctr()->tcp_tfo_cookie_req_out, 1);
    th_clear(T);
    synack(syn, syn.seq + 1, COOKIE, 8);
    assert_int_equal(E.connected, 1);
    assert_int_equal(ctr()->tcp_tfo_cookies_cached, 1);
    tpkt d = last();                    /* the data after the handshake */
    assert_int_equal(d.len, 5);
    assert_int_equal(d.seq, syn.seq + 1);
    assert_memory_equal(d.data, "GET /", 5);
    tern_tcp_abort(T->st, E.conn);
    tern_flush(T->st);
    th_clear(T);

    /* the second connect: cookie and data in the SYN */
    memset(&E, 0, sizeof E);
    connect_data("GET /2");
    syn = last();
    assert_int_equal(syn.flags, F_SYN);
    assert_int_equal(syn.len, 6);
    assert_memory_equal(syn.data, "GET /2", 6);
    assert_int_equal(tfo_of(-1, ck, NULL), 8);
    assert_memory_equal(ck, COOKIE, 8);
    assert_true(syn.csum_ok);
    assert_int_equal(ctr()->tcp_tfo_syn_data_out, 1);
    th_clear(T);
    /* the SYN-ACK acknowledges it all: nothing is sent again */
    synack(syn, syn.seq + 7, NULL, -1);
    assert_int_equal(E.connected, 1);
    assert_int_equal(E.acked, 6);
    assert_int_equal(ctr()->tcp_tfo_syn_data_acked, 1);
    tpkt a = last();
    assert_int_equal(a.len, 0);
    assert_int_equal(a.seq, syn.seq + 7);
    assert_int_equal(tp_count(T), 1);
    /* and later data follows in sequence */
    th_clear(T);
    assert_int_equal(tern_tcp_send(T->st, E.conn, "more", 4), 4);
    tern_flush(T->st);
    assert_int_equal(last().seq, syn.seq + 7);
}

/* A connect with no data asks for a cookie; the peer gives COOKIE and the
 * connection is aborted: the cache holds it, the log is fresh. */
static void prime_cookie(void)
{
    uint8_t ck[16];
    connect_data(NULL);
    tpkt syn = last();
    assert_int_equal(tfo_of(-1, ck, NULL), 0);
    th_clear(T);
    synack(syn, syn.seq + 1, COOKIE, 8);
    tern_tcp_abort(T->st, E.conn);
    tern_flush(T->st);
    th_clear(T);
    memset(&E, 0, sizeof E);
}

static void client_synack_only_syn(void **s)
{
    (void)s;
    uint8_t ck[16];
    prime_cookie();
    connect_data("request");
    tpkt syn = last();
    assert_int_equal(syn.len, 7);
    th_clear(T);
    /* the server took none of it (as Linux with a bad cookie), and gives
     * a new cookie: the data leaves again at once, and the new cookie is
     * the one cached */
    uint8_t nk[8] = {9, 9, 9, 9, 8, 8, 8, 8};
    synack(syn, syn.seq + 1, nk, 8);
    assert_int_equal(E.connected, 1);
    assert_int_equal(ctr()->tcp_tfo_syn_data_unacked, 1);
    tpkt d = last();
    assert_int_equal(d.seq, syn.seq + 1);
    assert_int_equal(d.len, 7);
    assert_memory_equal(d.data, "request", 7);
    assert_int_equal(E.acked, 0);
    uint16_t mss;
    assert_int_equal(cache_get4(TH_PEER_IP, ck, &mss), 8);
    assert_memory_equal(ck, nk, 8);
    assert_int_equal(mss, 1460);
    /* the peer acknowledges it: the stream is whole once */
    P.ack = syn.seq + 8;
    peer_send(&P, F_ACK, NULL, 0);
    assert_int_equal(E.acked, 7);
}

static void client_data_larger_than_syn(void **s)
{
    (void)s;
    prime_cookie();
    static uint8_t big[2000];
    for (unsigned i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 13);
    int err = -1;
    assert_non_null(tern_tcp_connect_data(T->st, A4(TH_PEER_IP), 80, 0, NULL, big,
                                          sizeof big, &err));
    tern_flush(T->st);
    /* the SYN takes what fits the peer's MSS (1460) less 40 */
    tpkt syn = last();
    assert_int_equal(syn.len, 1420);
    assert_memory_equal(syn.data, big, 1420);
    assert_true(syn.csum_ok);
    th_clear(T);
    synack(syn, syn.seq + 1 + 1420, NULL, -1);
    assert_int_equal(E.acked, 1420);
    /* the rest follows the handshake, in sequence */
    tpkt d = last();
    assert_int_equal(d.seq, syn.seq + 1 + 1420);
    assert_int_equal(d.len, 580);
    assert_memory_equal(d.data, big + 1420, 580);
}

static void client_syn_timeout_bare(void **s)
{
    (void)s;
    uint8_t ck[16];
    prime_cookie();
    connect_data("lost");
    assert_int_equal(last().len, 4);
    th_clear(T);
    /* no answer: the SYN goes again without data or cookie */
    th_advance_us(T, 1100 * 1000);
    tpkt syn = last();
    assert_int_equal(syn.flags, F_SYN);
    assert_int_equal(syn.len, 0);
    assert_int_equal(tfo_of(-1, ck, NULL), -1);
    th_clear(T);
    /* a SYN-ACK for the bare SYN: the data follows */
    synack(syn, syn.seq + 1, NULL, -1);
    tpkt d = last();
    assert_int_equal(d.len, 4);
    assert_int_equal(d.seq, syn.seq + 1);
}

static void client_cache_bound(void **s)
{
    (void)s;
    /* three destinations through a two-entry cache: the least recently
     * used goes */
    struct tern_conn view;
    memset(&view, 0, sizeof view);
    tcp_seg sa;
    memset(&sa, 0, sizeof sa);
    uint8_t ck[16], got[16];
    uint16_t mss;
    sa.o.has = OPT_TFO | OPT_MSS;
    sa.o.mss = 1400;
    sa.o.tfo = ck;
    sa.o.tfo_len = 8;
    for (uint32_t i = 1; i <= 3; i++) {
        memset(ck, (int)i, sizeof ck);
        view.raddr = TERN_IP4(198, 18, 0, 10 + i);
        tfo_synack_cookie(T->st, &view, &sa);
        if (i == 2) /* touch the first: the second is now the oldest */
            assert_int_equal(cache_get4(TERN_IP4(198, 18, 0, 11),
                                           got, &mss), 8);
    }
    assert_int_equal(ctr()->tcp_tfo_cookies_cached, 3);
    assert_int_equal(cache_get4(TERN_IP4(198, 18, 0, 12), got, &mss),
                     0);
    assert_int_equal(cache_get4(TERN_IP4(198, 18, 0, 11), got, &mss),
                     8);
    assert_int_equal(got[0], 1);
    assert_int_equal(cache_get4(TERN_IP4(198, 18, 0, 13), got, &mss),
                     8);
    assert_int_equal(got[0], 3);
    assert_int_equal(mss, 1400);
    /* a cookie again for a cached destination replaces it in place */
    memset(ck, 7, sizeof ck);
    view.raddr = TERN_IP4(198, 18, 0, 13);
    tfo_synack_cookie(T->st, &view, &sa);
    assert_int_equal(ctr()->tcp_tfo_cookies_cached, 3);
    assert_int_equal(cache_get4(view.raddr, got, &mss), 8);
    assert_int_equal(got[0], 7);
}

static void client_connect_data_errors(void **s)
{
    (void)s;
    int err = 0;
    static uint8_t big[300 * 1024];
    assert_null(tern_tcp_connect_data(T->st, A4(TH_PEER_IP), 80, 0, NULL, big,
                                      sizeof big, &err));
    assert_int_equal(err, TERN_EMSGSIZE);
    assert_null(tern_tcp_connect_data(T->st, A4(TH_PEER_IP), 0, 0, NULL, "x", 1,
                                      &err));
    assert_int_equal(err, TERN_EINVAL);
    assert_null(tern_tcp_connect_data(T->st, A4(TH_PEER_IP), 80, 0, NULL, NULL, 1,
                                      &err));
    assert_int_equal(err, TERN_EINVAL);
    assert_int_equal(tern_tcp_conn_count(T->st), 0);
}

/* ---- urgent data (RFC 6093: inline, the pointer not used) ---- */

/* An established conn from the scripted peer. */
static void established(void)
{
    P.port = 41000;
    P.ts = true;
    peer_connect(&P, 80, 41000);
    assert_int_equal(E.accepted, 1);
}

/* A data segment from the peer with URG set and urgent pointer ptr. */
static void send_urg(const void *data, size_t len, uint16_t ptr, uint8_t fl)
{
    uint8_t f[2048], opt[12] = {1, 1, 8, 10};
    th_put32(opt + 4, P.tsval);
    th_put32(opt + 8, P.tsecr);
    size_t n = tp_frame(f, TH_PEER_IP, TH_IP, P.port, P.lport, P.seq, P.ack,
                        fl, P.wnd, opt, sizeof opt, data, len);
    uint8_t *t = f + 14 + 20;
    t[18] = (uint8_t)(ptr >> 8);
    t[19] = (uint8_t)ptr;
    t[16] = t[17] = 0;
    uint32_t ps = (TH_PEER_IP >> 16) + (TH_PEER_IP & 0xffff) +
                  (TH_IP >> 16) + (TH_IP & 0xffff) + 6 +
                  (uint32_t)(n - 14 - 20);
    uint16_t c = th_csum_ref(t, n - 14 - 20, ps);
    t[16] = (uint8_t)(c >> 8);
    t[17] = (uint8_t)c;
    th_input(T, f, n);
    P.seq += (uint32_t)len;
}

static void urgent_inline(void **s)
{
    (void)s;
    established();
    /* the pointer inside the data, beyond it, zero, and URG without data:
     * every byte is read in order, once, none taken out of band */
    send_urg("ab!cd", 5, 3, F_ACK | F_PSH | 0x20);
    send_urg("efgh", 4, 4000, F_ACK | 0x20);
    send_urg("ij", 2, 0, F_ACK | 0x20);
    send_urg(NULL, 0, 1, F_ACK | 0x20);
    send_urg("kl", 2, 0, F_ACK);
    assert_int_equal(E.nrx, 13);
    assert_memory_equal(E.rx, "ab!cdefghijkl", 13);
    assert_int_equal(ctr()->tcp_urg_in, 4);
    assert_int_equal(ctr()->tcp_drop_flags, 0);
    /* the stream goes on: the ACK covers everything */
    th_poll(T);
    th_advance_us(T, 100 * 1000);
    assert_int_equal(last().ack, P.seq);
}


/* ---- over IPv6 ---- */
static const uint8_t V6[2][16] = {
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2},
};

/* Whether the server takes `cookie` in a SYN from the IPv6 address src
 * whose fold (tcp_seg.src) is fold, or from the IPv4 address fold when
 * src is NULL; the SYN carries no data, so only tcp_tfo_cookie_bad
 * tells. */
static bool cookie_taken(const uint8_t *src, uint32_t fold,
                         const uint8_t cookie[8])
{
    ip6_rx ip;
    memset(&ip, 0, sizeof ip);
    ip.src = src;
    ip.dst = V6[1];
    tcp_seg sg;
    memset(&sg, 0, sizeof sg);
    sg.ip6 = src ? &ip : NULL;
    sg.src = fold;
    sg.o.has = OPT_TFO;
    sg.o.tfo = cookie;
    sg.o.tfo_len = 8;
    struct tern_conn *c = conn_alloc(T->st, TH_PEER_IP, 1234, 80);
    assert_non_null(c);
    uint64_t bad = ctr()->tcp_tfo_cookie_bad;
    tfo_passive(T->st, c, &sg);
    conn_free(T->st, c);
    return ctr()->tcp_tfo_cookie_bad == bad;
}

/* The server's cookie for an IPv6 client is a keyed hash of its whole
 * address: the 32-bit fold the connection table keys on plays no part
 * (an address with the same fold and one other byte is refused), and the
 * family is in it (the fold as an IPv4 address is refused). */
static void server_cookie_over_ipv6_address(void **s)
{
    (void)s;
    struct tern_conn *c = conn_alloc6(T->st, V6[0], V6[1], 40000, 80);
    assert_non_null(c);
    c->flags |= TF_PASSIVE;
    c->tfo = TFO_OPT;
    uint8_t opt[40];
    uint32_t n = tfo_syn_option(T->st, c, opt);
    uint32_t fold = c->raddr;
    conn_free(T->st, c);
    assert_int_equal(n, 12);                   /* NOP NOP 34 10 cookie */
    assert_int_equal(opt[2], 34);
    assert_int_equal(opt[3], 10);
    const uint8_t *ck = opt + 4;
    assert_true(cookie_taken(V6[0], fold, ck));
    assert_true(cookie_taken(V6[0], fold ^ 0x5a5a, ck));
    uint8_t other[16];
    memcpy(other, V6[0], 16);
    other[7] ^= 1;                             /* outside the low bytes */
    assert_false(cookie_taken(other, fold, ck));
    assert_false(cookie_taken(NULL, fold, ck));
}

/* The client cache keys IPv6 peers by their whole address: two peers of
 * one fold have an entry each, and neither is the IPv4 address equal to
 * the fold. */
static void client_cache_keyed_by_ipv6_address(void **s)
{
    (void)s;
    struct tern_conn a, b;
    memset(&a, 0, sizeof a);
    a.flags = TF_V6;
    a.raddr = 0x123456;
    memcpy(a.raddr6, V6[0], 16);
    b = a;
    b.raddr6[7] ^= 1;
    tcp_seg sa;
    memset(&sa, 0, sizeof sa);
    uint8_t ck[8] = {1, 1, 1, 1, 1, 1, 1, 1}, got[16];
    uint16_t mss = 0;
    sa.o.has = OPT_TFO | OPT_MSS;
    sa.o.mss = 1440;
    sa.o.tfo = ck;
    sa.o.tfo_len = 8;
    tfo_synack_cookie(T->st, &a, &sa);
    assert_int_equal(tfo_cache_get(T->st, &b, got, &mss), 0);
    assert_int_equal(cache_get4(a.raddr, got, &mss), 0);
    memset(ck, 2, sizeof ck);
    tfo_synack_cookie(T->st, &b, &sa);
    assert_int_equal(ctr()->tcp_tfo_cookies_cached, 2);
    assert_int_equal(tfo_cache_get(T->st, &a, got, &mss), 8);
    assert_int_equal(got[0], 1);
    assert_int_equal(mss, 1440);
    assert_int_equal(tfo_cache_get(T->st, &b, got, &mss), 8);
    assert_int_equal(got[0], 2);
}

/* Two stacks over the mem link, IPv6 only: the first Fast Open connect
 * asks for a cookie (its data after the handshake), the second carries
 * its data in the SYN and the server takes it there. */
static void tw_tfo6(tern_config *c, int end)
{
    c->ip = 0;
    memcpy(c->ip6[0], V6[end], 16);
    c->ip6_prefix_len[0] = 64;
    c->n_ip6 = 1;
    c->ip6_no_dad = true;
    c->tfo_server = end == 0;
}

static bool got_n(void *a) { return E.nrx >= *(size_t *)a && E.connected; }

static void fast_open_over_ipv6(void **s)
{
    (void)s;
    memset(&E, 0, sizeof E);
    tern_callbacks cb = {0};
    conn_log_callbacks(&cb);
    pair *p = pair_new(NULL, 1, tw_tfo6, &cb, &E, &E);
    assert_non_null(p);
    assert_int_equal(tern_tcp_listen(p->st[0], 80, &E), 0);
    tern_addr srv = tern_addr_v6(V6[0]);
    int err = -1;
    assert_non_null(tern_tcp_connect_data(p->st[1], &srv, 80, 0, &E, "hello",
                                          5, &err));
    size_t want = 5;
    assert_true(pair_run(p, got_n, &want, p->now + 10 * TERN_NS_PER_SEC));
    const tern_counters *cs = tern_get_counters(p->st[0]);
    const tern_counters *cc = tern_get_counters(p->st[1]);
    assert_int_equal(cc->tcp_tfo_cookie_req_out, 1);
    assert_int_equal(cc->tcp_tfo_cookies_cached, 1);
    assert_int_equal(cs->tcp_tfo_cookie_req_in, 1);
    assert_int_equal(cs->tcp_tfo_syn_data_in, 0);
    E.connected = 0;
    assert_non_null(tern_tcp_connect_data(p->st[1], &srv, 80, 0, &E, "world",
                                          5, &err));
    want = 10;
    assert_true(pair_run(p, got_n, &want, p->now + 10 * TERN_NS_PER_SEC));
    assert_memory_equal(E.rx, "helloworld", 10);
    assert_int_equal(cc->tcp_tfo_syn_data_out, 1);
    assert_int_equal(cc->tcp_tfo_syn_data_acked, 1);
    assert_int_equal(cs->tcp_tfo_syn_data_in, 1);
    assert_int_equal(cs->tcp_tfo_cookie_bad, 0);
    pair_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(server_cookie_request, setup_server,
                                        teardown),
        cmocka_unit_test_setup_teardown(server_valid_cookie_data, setup_server,
                                        teardown),
        cmocka_unit_test_setup_teardown(server_early_answer_lost,
                                        setup_server, teardown),
        cmocka_unit_test_setup_teardown(server_synack_lost_answer_after,
                                        setup_server, teardown),
        cmocka_unit_test_setup_teardown(server_syn_retransmitted, setup_server,
                                        teardown),
        cmocka_unit_test_setup_teardown(server_invalid_cookie, setup_server,
                                        teardown),
        cmocka_unit_test_setup_teardown(server_experimental_form, setup_server,
                                        teardown),
        cmocka_unit_test_setup_teardown(server_pending_bound, setup_bound,
                                        teardown),
        cmocka_unit_test_setup_teardown(server_syn_cookie_mode, setup_flood,
                                        teardown),
        cmocka_unit_test_setup_teardown(server_off_ignores, setup_off,
                                        teardown),
        cmocka_unit_test_setup_teardown(client_cookie_request_then_data,
                                        setup_off, teardown),
        cmocka_unit_test_setup_teardown(client_synack_only_syn, setup_off,
                                        teardown),
        cmocka_unit_test_setup_teardown(client_data_larger_than_syn,
                                        setup_off, teardown),
        cmocka_unit_test_setup_teardown(client_syn_timeout_bare, setup_off,
                                        teardown),
        cmocka_unit_test_setup_teardown(client_cache_bound, setup_small_cache,
                                        teardown),
        cmocka_unit_test_setup_teardown(client_connect_data_errors, setup_off,
                                        teardown),
        cmocka_unit_test_setup_teardown(urgent_inline, setup_off, teardown),
        cmocka_unit_test_setup_teardown(server_cookie_over_ipv6_address,
                                        setup_server, teardown),
        cmocka_unit_test_setup_teardown(client_cache_keyed_by_ipv6_address,
                                        setup_off, teardown),
        cmocka_unit_test(fast_open_over_ipv6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
