/* Resource exhaustion and predictability: SYN floods, out-of-order
 * floods, peers that never ACK or never read, a full connection table,
 * and initial sequence numbers / ephemeral ports an attacker cannot guess.
 * Memory must stay bounded and legitimate peers must still be served. */
#include "bi.h"

#include <stdlib.h>

static void cfg_small(tern_config *c)
{
    c->max_half_open = 16;
    c->max_conns = 64;
    c->ooo_max_segs = 16;
    c->max_retries = 4;
    c->snd_buf = 32 * 1024;
}

static void syn_flood(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_small);
    uint8_t f[128];
    srand(3);
    for (int i = 0; i < 5000; i++) {
        uint32_t src = TERN_IP4(198, 18, 0, 1);   /* spoofed ports */
        size_t n = tp_frame(f, src, TH_IP, (uint16_t)(1024 + i), 80,
                            (uint32_t)rand(), 0, F_SYN, 65535, NULL, 0, NULL, 0);
        bi_feed(t, f, n);
        if (t->nout > 1000)
            th_clear(t);
    }
    assert_true(C(t)->tcp_syn_cookies_sent > 4000);  /* table full: cookies */
    assert_true(tern_tcp_conn_count(t->st) <= 64);
    assert_true(t->bufs_out < 64);                   /* nothing piles up */
    bi_healthy_and_free(t);                          /* a real client works */
}

static void ooo_flood(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_small);
    peer p;
    bi_connect(t, &p, 7001);
    uint32_t base = p.seq;
    srand(4);
    for (int i = 0; i < 2000; i++) {
        p.seq = base + 100 + (uint32_t)(rand() % 60000);
        peer_send(&p, F_ACK, "ooo-data", 8);
        th_clear(t);
    }
    p.seq = base;
    assert_true(C(t)->tcp_drop_ooo_full > 0);
    assert_true(t->bufs_out <= 16 + 4);              /* ooo_max_segs */
    peer_send(&p, F_ACK | F_PSH, "in-order", 8);     /* still delivers */
    assert_true(bi_received() >= 8);
    bi_healthy_and_free(t);
}

static int closed_reason = -1;
static tern_conn *conn;
static void *keep_conn(tern_stack *st, tern_conn *c, void *lu) { (void)st; conn = c; return lu; }
static void on_closed(tern_stack *st, tern_conn *c, void *u, int reason)
{
    (void)st; (void)c; (void)u;
    closed_reason = reason;
}
static void cfg_peer_tests(tern_config *c)
{
    cfg_small(c);
    c->cb.accepted = keep_conn;
    c->cb.closed = on_closed;
}

static void peer_never_acks(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_peer_tests);
    peer p;
    bi_connect(t, &p, 7002);
    static uint8_t data[20000];
    memset(data, 'n', sizeof data);
    long sent = tern_tcp_send(t->st, conn, data, sizeof data);
    assert_true(sent > 0);
    tern_flush(t->st);
    closed_reason = -1;
    for (int i = 0; i < 400 && closed_reason < 0; i++) {
        t->now += 500 * TERN_NS_PER_MS;
        th_poll(t);
        th_clear(t);
    }
    assert_int_equal(closed_reason, TERN_CLOSE_TIMEOUT);
    assert_int_equal(C(t)->tcp_timeouts, 1);
    assert_true(C(t)->tcp_rto_expiries >= 4);
    assert_int_equal(tern_tcp_conn_count(t->st), 0);
    assert_int_equal(t->bufs_out, 0);                /* every buffer back */
    bi_healthy_and_free(t);
}

static void peer_never_reads(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_peer_tests);
    peer p;
    bi_connect(t, &p, 7003);
    p.wnd = 0;                                       /* window shut */
    peer_send(&p, F_ACK, NULL, 0);
    static uint8_t data[4096];
    long total = 0;
    for (int i = 0; i < 100; i++) {
        long n = tern_tcp_send(t->st, conn, data, sizeof data);
        if (n <= 0)
            break;
        total += n;
    }
    assert_true(total <= 32 * 1024);                 /* bounded by snd_buf */
    assert_int_equal(tern_tcp_send_space(t->st, conn), 0);
    uint64_t probes0 = C(t)->tcp_zero_window_probes;
    for (int i = 0; i < 20; i++) {                   /* probes, answered */
        t->now += 2 * TERN_NS_PER_SEC;
        th_poll(t);
        if (tp_count(t))
            peer_send(&p, F_ACK, NULL, 0);
        th_clear(t);
    }
    assert_true(C(t)->tcp_zero_window_probes > probes0);
    assert_int_equal(tern_tcp_conn_count(t->st), 1); /* still alive */
    assert_true(t->bufs_out <= 64);
    bi_healthy_and_free(t);
}

static void cfg_tiny_table(tern_config *c) { c->max_conns = 8; c->max_half_open = 4; }

static void conn_table_full(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_tiny_table);
    peer p[12];
    for (int i = 0; i < 12; i++)
        bi_connect(t, &p[i], (uint16_t)(7100 + i));
    assert_true(tern_tcp_conn_count(t->st) <= 8);
    assert_true(C(t)->tcp_drop_conn_table_full > 0);
    for (int i = 0; i < 12; i++)                     /* peers leave */
        peer_send(&p[i], F_RST, NULL, 0);
    assert_int_equal(tern_tcp_conn_count(t->st), 0);
    bi_healthy_and_free(t);
}

/* Are the deltas of a sequence something an attacker could extrapolate?
 * Counts distinct consecutive differences. */
static unsigned distinct_deltas(const uint32_t *v, unsigned n)
{
    unsigned distinct = 0;
    for (unsigned i = 1; i < n; i++) {
        uint32_t d = v[i] - v[i - 1];
        bool seen = false;
        for (unsigned j = 1; j < i; j++)
            seen |= (v[j] - v[j - 1]) == d;
        distinct += !seen;
    }
    return distinct;
}

static void isn_unpredictable(void **s)
{
    (void)s;
    th *t = bi_new();
    uint32_t isn[64];
    uint8_t f[128];
    for (unsigned i = 0; i < 64; i++) {
        /* consecutive connections, some at the same instant, some 1 ms apart */
        if (i % 2)
            t->now += TERN_NS_PER_MS;
        bi_feed(t, f, tp_frame(f, TH_PEER_IP, TH_IP, (uint16_t)(9000 + i), 80,
                               1, 0, F_SYN, 65535, NULL, 0, NULL, 0));
        tpkt sa;
        assert_true(tp_get(t, -1, &sa));
        isn[i] = sa.seq;
        th_clear(t);
    }
    /* not a counter, not a clock: almost every step differs, and the
     * values are not ordered by time */
    assert_true(distinct_deltas(isn, 64) >= 60);
    unsigned rising = 0;
    for (unsigned i = 1; i < 64; i++)
        rising += (int32_t)(isn[i] - isn[i - 1]) > 0;
    assert_in_range(rising, 12, 51);
    bi_healthy_and_free(t);
}

static void ephemeral_ports_unpredictable(void **s)
{
    (void)s;
    th *t = bi_new();
    uint32_t ports[64];
    for (unsigned i = 0; i < 64; i++) {
        int err = 0;
        tern_conn *c = tern_tcp_connect(t->st, A4(TH_PEER_IP), 443, 0, NULL, &err);
        assert_non_null(c);
        tern_tcp_info info;
        tern_tcp_get_info(t->st, c, &info);
        ports[i] = info.local_port;
        assert_true(info.local_port >= 1024);
    }
    assert_true(distinct_deltas(ports, 64) >= 50);
    tern_flush(t->st);
    bi_healthy_and_free(t);
}

static const bi_case cases[] = {
    {"syn_flood", "5000 SYNs from spoofed ports, half-open table of 16", "SYN cookies; table and buffers bounded; a real client still connects", syn_flood},
    {"ooo_flood", "2000 out-of-order segments across the window", "at most ooo_max_segs kept, rest counted; in-order data still delivered", ooo_flood},
    {"peer_never_acks", "peer stops acknowledging 20 KB", "RTO backoff, then closed with TERN_CLOSE_TIMEOUT; every buffer released", peer_never_acks},
    {"peer_never_reads", "peer advertises a zero window forever", "send queue bounded by snd_buf; zero-window probes; connection kept", peer_never_reads},
    {"conn_table_full", "12 connections into a table of 8", "excess refused and counted; table frees when peers leave", conn_table_full},
    {"isn_unpredictable", "64 consecutive passive opens", "ISNs are neither a counter nor a clock (RFC 6528)", isn_unpredictable},
    {"ephemeral_ports_unpredictable", "64 active opens", "local ports not sequential (RFC 6056)", ephemeral_ports_unpredictable},
};

int main(int argc, char **argv)
{
    return bi_main(argc, argv, "exhaustion", cases, sizeof cases / sizeof cases[0]);
}
