/* Unit tests of the TCP building blocks through their internal interfaces:
 * option parsing and building, the SACK scoreboard (RFC 6675 queries),
 * the RTT estimator, congestion control and the timer wheel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"

static void options_roundtrip(void **s)
{
    (void)s;
    uint8_t o[40];
    uint32_t n = tcp_opts_syn(o, 1460, 7, true, true, 111, 222);
    assert_int_equal(n % 4, 0);
    tcp_opts p;
    assert_true(tcp_opts_parse(o, n, true, &p));
    assert_int_equal(p.has, OPT_MSS | OPT_WS | OPT_SACK_PERM | OPT_TS);
    assert_int_equal(p.mss, 1460);
    assert_int_equal(p.ws, 7);
    assert_int_equal(p.tsval, 111);
    assert_int_equal(p.tsecr, 222);
    uint32_t blk[3][2] = {{10, 20}, {30, 40}, {50, 60}};
    n = tcp_opts_est(o, true, 5, 6, (const uint32_t(*)[2])blk, 3);
    assert_int_equal(n, 40);
    assert_true(tcp_opts_parse(o, n, false, &p));
    assert_int_equal(p.nsack, 3);
    assert_int_equal(p.sack[2][1], 60);
    /* malformed: zero length, past the end, wrong sizes */
    uint8_t bad1[4] = {8, 0, 0, 0}, bad2[3] = {1, 5, 10}, bad3[4] = {3, 4, 1, 1};
    assert_false(tcp_opts_parse(bad1, 4, true, &p));
    assert_false(tcp_opts_parse(bad2, 3, false, &p));
    assert_false(tcp_opts_parse(bad3, 4, true, &p));
    uint8_t ws[4] = {1, 3, 3, 200};
    assert_true(tcp_opts_parse(ws, 4, true, &p));
    assert_int_equal(p.ws, 14);
    uint8_t unk[4] = {99, 4, 0, 0};
    assert_true(tcp_opts_parse(unk, 4, false, &p));
}

static void scoreboard(void **s)
{
    (void)s;
    struct tern_conn c;
    memset(&c, 0, sizeof c);
    c.snd_una = 1000;
    c.snd_max = 1000 + 20 * 100;
    sb_clear(&c);
    tcp_opts o;
    memset(&o, 0, sizeof o);
    o.nsack = 2;
    o.sack[0][0] = 1200; o.sack[0][1] = 1300;
    o.sack[1][0] = 1500; o.sack[1][1] = 1600;
    assert_int_equal(sb_update(NULL, &c, &o), 200);
    o.nsack = 1;
    o.sack[0][0] = 1250; o.sack[0][1] = 1550;   /* bridges both */
    assert_int_equal(sb_update(NULL, &c, &o), 200);
    assert_int_equal(c.nsb, 1);
    assert_int_equal(c.sb[0][0], 1200);
    assert_int_equal(c.sb[0][1], 1600);
    assert_int_equal(c.fack, 1600);
    /* 400 bytes SACKed above 1000 with mss 100: lost (> 2 * mss) */
    assert_true(sb_is_lost(&c, 1000, 100));
    assert_false(sb_is_lost(&c, 1700, 100));
    uint32_t seq, len;
    c.rxt_next = 1000;
    assert_true(sb_next_hole(&c, 1000, 100, &seq, &len));
    assert_int_equal(seq, 1000);
    assert_int_equal(len, 100);
    assert_true(sb_next_hole(&c, 1150, 100, &seq, &len));
    assert_int_equal(seq, 1150);
    assert_int_equal(len, 50);
    assert_false(sb_next_hole(&c, 1200, 100, &seq, &len));
    /* pipe: 2000 out - 400 sacked - 200 lost */
    assert_int_equal(sb_pipe(&c, 100), 1400);
    c.rxt_next = 1100;                          /* 100 resent */
    assert_int_equal(sb_pipe(&c, 100), 1500);
    assert_int_equal(sb_skip(&c, 1300), 1600);
    assert_int_equal(sb_skip(&c, 1100), 1100);
    c.snd_una = 1400;
    sb_ack(&c);
    assert_int_equal(c.sb[0][0], 1400);
    assert_int_equal(c.sacked, 200);
    c.snd_una = 1600;
    sb_ack(&c);
    assert_int_equal(c.nsb, 0);
    /* D-SACK and blocks beyond snd_max are ignored */
    o.nsack = 2;
    o.sack[0][0] = 900; o.sack[0][1] = 1000;
    o.sack[1][0] = 2900; o.sack[1][1] = 4000;
    assert_int_equal(sb_update(NULL, &c, &o), 0);
    /* more ranges than kept: the highest go */
    for (uint32_t k = 0; k < TCP_SB_MAX + 3; k++) {
        o.nsack = 1;
        o.sack[0][0] = 1700 + k * 20;
        o.sack[0][1] = 1710 + k * 20;
        sb_update(NULL, &c, &o);
    }
    assert_int_equal(c.nsb, TCP_SB_MAX);
    assert_int_equal(c.sb[0][0], 1700);
}

static uint32_t g_rto_min, g_rto_max;
static void rto_tweak(tern_config *c)
{
    c->rto_min_ms = g_rto_min;
    c->rto_max_ms = g_rto_max;
}

static uint32_t g_rto_init;
static void rto_init_tweak(tern_config *c)
{
    c->rto_initial_ms = g_rto_init;
    c->rto_max_ms = 500;
}

/* The RTO before the first RTT sample obeys rto_max_ms like every later
 * one: an initial RTO above the maximum is cut to it, one below is kept. */
static void rto_initial_capped(void **s)
{
    (void)s;
    static const uint32_t inits[][2] = {{3000, 500}, {400, 400}, {500, 500}};
    for (size_t k = 0; k < sizeof inits / sizeof inits[0]; k++) {
        g_rto_init = inits[k][0];
        th *t = th_new(rto_init_tweak);
        int err = 0;
        tern_conn *c = tern_tcp_connect(t->st, A4(TH_PEER_IP), 80, 0, NULL, &err);
        assert_non_null(c);
        tern_tcp_info info;
        tern_tcp_get_info(t->st, c, &info);
        assert_int_equal(info.rto_ms, inits[k][1]);
        tern_tcp_abort(t->st, c);
        th_free(t);
    }
}

/* rtt_sample's RTO is ceil((SRTT + max(4 RTTVAR, G)) / 1 ms) clamped to
 * rto_min, then to rto_max (which wins if the config has min > max), for
 * every first sample of 1 us .. 400 ms: the floor's boundary (a third of
 * rto_min) and the ceiling's are both crossed one microsecond apart. */
static void rto_rounding(void **s)
{
    (void)s;
    static const uint32_t cfgs[][2] = {{200, 60000}, {1, 1}, {500, 300},
                                       {150, 250}};
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
        g_rto_min = cfgs[k][0];
        g_rto_max = cfgs[k][1];
        th *t = th_new(rto_tweak);
        int at_min = 0, above = 0;
        for (uint32_t r = 1; r <= 400000; r++) {
            struct tern_conn c;
            memset(&c, 0, sizeof c);
            rtt_sample(t->st, &c, r);
            uint64_t var4 = (uint64_t)c.rttvar_us * 4;
            uint64_t us = c.srtt_us + (var4 > 1000 ? var4 : 1000);
            uint64_t want = (us + 999) / 1000;
            if (want < g_rto_min)
                want = g_rto_min;
            if (want > g_rto_max)
                want = g_rto_max;
            assert_int_equal(c.rto_ms, want);
            at_min += c.rto_ms == g_rto_min;
            above += c.rto_ms > g_rto_min;
        }
        if (g_rto_min < g_rto_max) {    /* both sides were visited */
            assert_true(at_min > 0);
            assert_true(above > 0);
        }
        assert_int_equal(th_free(t), 0);
    }
}

static int g_cc;
static void tweak(tern_config *c) { c->cc = (uint8_t)g_cc; }

static void rtt_and_cc(void **s)
{
    (void)s;
    th *t = th_new(tweak);
    struct tern_conn c;
    memset(&c, 0, sizeof c);
    rtt_init(t->st, &c);
    assert_int_equal(c.rto_ms, 1000);
    rtt_sample(t->st, &c, 100000);              /* 100 ms */
    assert_int_equal(c.srtt_us, 100000);
    assert_int_equal(c.rttvar_us, 50000);
    assert_int_equal(c.rto_ms, 300);
    for (int i = 0; i < 50; i++)
        rtt_sample(t->st, &c, 1000);
    assert_int_equal(c.rto_ms, 200);            /* rto_min */
    /* NewReno: slow start, reduction, avoidance */
    c.mss = 1000;
    tcp_cc_newreno.init(&c);
    assert_int_equal(c.cwnd, 10000);
    tcp_cc_newreno.on_ack(&c, 1000, 0, 0);
    assert_int_equal(c.cwnd, 11000);
    c.snd_una = 0;
    c.snd_max = 11000;
    tcp_cc_newreno.on_loss(&c, 0);
    assert_int_equal(c.ssthresh, 5500);
    c.cwnd = c.ssthresh;
    for (int i = 0; i < 6; i++)
        tcp_cc_newreno.on_ack(&c, 1000, 0, 0);
    assert_int_equal(c.cwnd, 6500);             /* +1 MSS per cwnd acked */
    tcp_cc_newreno.on_rto(&c, 0);
    assert_int_equal(c.cwnd, 1000);
    /* CUBIC: beta 0.7, growth back towards w_max over time */
    tcp_cc_cubic.init(&c);
    c.cwnd = 100000;
    c.snd_max = c.snd_una + 100000;
    tcp_cc_cubic.on_loss(&c, 0);
    assert_int_equal(c.ssthresh, 70019);
    c.cwnd = c.ssthresh;
    uint64_t now = 1000 * TERN_NS_PER_SEC;
    uint32_t prev = c.cwnd;
    for (int i = 0; i < 2000; i++) {
        now += TERN_NS_PER_MS * 5;
        tcp_cc_cubic.on_ack(&c, 1000, 10000, now);
        assert_true(c.cwnd >= prev);
        prev = c.cwnd;
    }
    assert_true(c.cwnd > 100000);               /* past w_max after ~10 s */
    th_free(t);
}

static uint32_t fired[8];
static void fire(tern_stack *st, struct tern_conn *c, uint64_t now)
{
    (void)st; (void)now;
    fired[c->idx]++;
    c->t_rtx = TERN_NEVER;
}

static void wheel(void **s)
{
    (void)s;
    th *t = th_new(NULL);
    struct tcp_layer *tl = t->st->tcp;
    uint64_t now = t->now;
    tern_poll(t->st, now);
    struct tern_conn *c = tl->conns;
    memset(fired, 0, sizeof fired);
    for (int i = 0; i < 3; i++) {
        c[i].t_rtx = c[i].t_ack = c[i].t_wheel = TERN_NEVER;
        c[i].flags = 0;
    }
    c[0].t_rtx = now + 10 * TERN_NS_PER_MS;
    c[1].t_rtx = now + 5000 * TERN_NS_PER_MS;   /* beyond the horizon */
    c[2].t_rtx = now + 20 * TERN_NS_PER_MS;
    for (int i = 0; i < 3; i++)
        conn_timer_update(t->st, &c[i]);
    uint64_t d = tw_next(tl, now);
    assert_true(d > now && d <= now + 12 * TERN_NS_PER_MS);
    tw_run(t->st, now + 5 * TERN_NS_PER_MS, fire);
    assert_int_equal(fired[0], 0);
    tw_run(t->st, now + 12 * TERN_NS_PER_MS, fire);
    assert_int_equal(fired[0], 1);
    tw_cancel(tl, &c[2]);
    tw_run(t->st, now + 4000 * TERN_NS_PER_MS, fire);
    assert_int_equal(fired[2], 0);
    assert_int_equal(fired[1], 0);
    tw_run(t->st, now + 5010 * TERN_NS_PER_MS, fire);
    assert_int_equal(fired[1], 1);
    assert_int_equal(tw_next(tl, now), TERN_NEVER);
    th_free(t);
}

/* tw_next's kept answer equals a fresh scan of the bitmap after every
 * filing, cancel and run, in a pseudo-random mix over eight conns. */
static void refire(tern_stack *st, struct tern_conn *c, uint64_t now)
{
    (void)now;
    c->t_rtx = TERN_NEVER;
    if (c->idx & 1)                 /* half of them re-arm from the handler */
        c->t_rtx = st->now + (c->idx + 1) * 3 * TERN_NS_PER_MS;
    conn_timer_update(st, c);
}
static void wheel_next_kept(void **s)
{
    (void)s;
    th *t = th_new(NULL);
    struct tcp_layer *tl = t->st->tcp;
    tern_poll(t->st, t->now);
    struct tern_conn *c = tl->conns;
    for (int i = 0; i < 8; i++) {
        c[i].t_rtx = c[i].t_ack = c[i].t_wheel = TERN_NEVER;
        c[i].flags = 0;
    }
    uint64_t now = t->now;
    uint32_t x = 12345;
    unsigned rescans = 0;
    for (int step = 0; step < 4000; step++) {
        x = x * 1103515245u + 12345u;
        struct tern_conn *k = &c[(x >> 8) % 8];
        switch ((x >> 16) % 4) {
        case 0:
        case 1:
            k->t_rtx = now + (uint64_t)((x >> 4) % 3000) * TERN_NS_PER_MS;
            conn_timer_update(t->st, k);
            break;
        case 2:
            tw_cancel(tl, k);
            k->t_rtx = TERN_NEVER;
            break;
        default:
            now += (uint64_t)((x >> 3) % 40) * TERN_NS_PER_MS;
            t->st->now = now;
            tw_run(t->st, now, refire);
            break;
        }
        rescans += tl->wheel.first == 0;
        uint64_t kept = tw_next(tl, now);
        tl->wheel.first = 0;
        assert_true(tw_next(tl, now) == kept);
    }
    assert_true(rescans > 0);       /* cancels of the earliest were met */
    for (int i = 0; i < 8; i++)
        tw_cancel(tl, &c[i]);
    assert_true(tw_next(tl, now) == TERN_NEVER);
    th_free(t);
}

/* tcp_arm_rto_lone sets what tcp_arm_rto sets (deadline, probe/persist/
 * RACK marks, wheel filing) for a one-segment flight, across the RTOs,
 * backoffs, RTT estimates and stale marks it may meet, including those it
 * hands to tcp_arm_rto. */
static void lone_conn(struct tern_conn *c, uint32_t rto, uint8_t backoff,
                      uint32_t srtt, uint32_t flags)
{
    c->state = TERN_TCP_ESTABLISHED;
    c->mss = 1448;
    c->snd_una = 1000;
    c->snd_nxt = c->snd_max = c->sq_end = 1064;
    c->rto_ms = rto;
    c->backoff = backoff;
    c->srtt_us = srtt;
    c->flags = flags;
    c->t_rtx = c->t_ack = c->t_wheel = TERN_NEVER;
}
static void arm_rto_lone(void **s)
{
    (void)s;
    th *t = th_new(NULL);
    struct tcp_layer *tl = t->st->tcp;
    tern_poll(t->st, t->now);
    struct tern_conn *a = &tl->conns[0], *b = &tl->conns[1];
    static const uint32_t rtos[] = {150, 200, 201, 1000};
    static const uint32_t srtts[] = {0, 1000, 60000};
    static const uint32_t marks[] = {0, TF_TLP | TF_RACK | TF_PERSIST,
                                     TF_TLP_SENT, TF_TLP_SENT | TF_TLP};
    static const uint32_t maxes[] = {60000, 120};
    unsigned probes = 0, fast = 0;
    for (unsigned m = 0; m < 2; m++)
        for (unsigned r = 0; r < 4; r++)
            for (uint8_t bo = 0; bo < 2; bo++)
                for (unsigned v = 0; v < 3; v++)
                    for (unsigned k = 0; k < 4; k++) {
                        tl->rto_max_ms = maxes[m];
                        lone_conn(a, rtos[r], bo, srtts[v], marks[k]);
                        lone_conn(b, rtos[r], bo, srtts[v], marks[k]);
                        tcp_arm_rto(t->st, a);
                        tcp_arm_rto_lone(t->st, b);
                        assert_true(a->t_rtx == b->t_rtx);
                        assert_int_equal(a->flags, b->flags);
                        assert_true(a->t_wheel == b->t_wheel);
                        assert_true(b->flags & TF_IN_WHEEL);
                        probes += !!(a->flags & TF_TLP);
                        fast += rtos[r] <= 200 && !bo;
                        tw_cancel(tl, a);
                        tw_cancel(tl, b);
                    }
    assert_true(probes > 0);        /* the slow path's probe case is met */
    assert_true(fast > 0);
    /* a later deadline leaves an earlier filing; an earlier one moves it */
    lone_conn(b, 200, 0, 1000, 0);
    tl->rto_max_ms = 60000;
    tcp_set_rtx(t->st, b, t->now + 50 * TERN_NS_PER_MS);
    tcp_set_rtx(t->st, b, t->now + 80 * TERN_NS_PER_MS);
    assert_true(b->t_wheel == t->now + 50 * TERN_NS_PER_MS);
    assert_true(b->t_rtx == t->now + 80 * TERN_NS_PER_MS);
    tcp_set_rtx(t->st, b, t->now + 20 * TERN_NS_PER_MS);
    assert_true(b->t_wheel == t->now + 20 * TERN_NS_PER_MS);
    tw_cancel(tl, b);
    th_free(t);
}

/* The transmit folds agree with csum_fold64 on the values their callers
 * can pass (any 32-bit sum; a 64-bit sum of 32-bit words), edges first. */
static void tx_folds(void **s)
{
    (void)s;
    static const uint32_t e32[] = {0,          1,          0xffff,
                                   0x10000,    0x1ffff,    0xfffe0001u,
                                   0xffff0001u, 0xffff0000u, 0xffffffffu,
                                   0x8000ffffu, 0x0001ffffu};
    for (size_t i = 0; i < sizeof e32 / sizeof e32[0]; i++)
        assert_int_equal(tx_fold32(e32[i]), csum_fold64(e32[i]));
    static const uint64_t e64[] = {0, 0xffffffffull, 0x100000000ull,
                                   0xffffffff00000001ull, 0x7ffffffffull,
                                   0xffffffffffffffffull, 0x1fffffffeull};
    for (size_t i = 0; i < sizeof e64 / sizeof e64[0]; i++)
        assert_int_equal(tx_fold64(e64[i]), csum_fold64(e64[i]));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        assert_int_equal(tx_fold32((uint32_t)x), csum_fold64((uint32_t)x));
        /* up to 16 words of 32 bits: below 2^36 */
        uint64_t sum = x >> 28;
        assert_int_equal(tx_fold64(sum), csum_fold64(sum));
        assert_int_equal(tx_fold64(x), csum_fold64(x));
    }
    /* 0 only for a zero sum: a nonzero one folds to 1..0xffff */
    assert_int_equal(tx_fold32(0xffff), 0xffff);
    assert_int_equal(tx_fold64(0xffffull << 32), 0xffff);
}

/* tern_tcp_send fills a fresh pool buffer only up to its own end: its
 * room is measured from its data, not from the cb[1] a previous owner
 * left (0 here, as in a buffer never used). Buffers of 700 bytes with
 * 192 of headroom hold 508 bytes, less than one MSS. */
#define SMALL_BUF 700
static tern_buf *(*pool_alloc)(void *ctx);
static tern_buf *small_alloc(void *ctx)
{
    tern_buf *b = pool_alloc(ctx);
    if (b) {
        b->size = SMALL_BUF;
        b->cb[1] = 0;
        memset(b->head + SMALL_BUF, 0xa5, 64);     /* past the end */
    }
    return b;
}

/* A fresh test stack with an established connection from a scripted
 * peer (port 40000 to 80); captured frames cleared. */
static struct tern_conn *connected_conn(th **tp)
{
    peer p;
    return peer_connected(tp, &p, true);
}

/* conn_hash: every tuple lands inside the table, the tuples of a typical
 * many-connection mix (one peer's ephemeral ports, or one port on many
 * addresses) spread over the buckets, and a different secret places them
 * differently. */
static void conn_hash_spread(void **s)
{
    (void)s;
    static uint32_t count[4096];
    for (int key = 0; key < 2; key++) {
        th *t = th_new(NULL);
        struct tcp_layer *tl = t->st->tcp;
        if (key)
            tl->hk1 = (tl->hk1 * 0x9e3779b97f4a7c15ull) | 1;
        uint32_t buckets = 1u << (64 - tl->hash_shift);
        assert_true(buckets >= 2 && buckets <= 4096);
        for (int mix = 0; mix < 2; mix++) {
            memset(count, 0, sizeof count);
            uint32_t most = 0, n = 2 * buckets;
            for (uint32_t i = 0; i < n; i++) {
                uint32_t h = mix ? conn_hash(tl, TH_PEER_IP, (uint16_t)(32768 + i), 80)
                                 : conn_hash(tl, TERN_IP4(10, 0, 0, 0) + i * 256, 443, 80);
                assert_true(h < buckets);
                if (++count[h] > most)
                    most = count[h];
            }
            /* two per bucket on average; a chain of 12 would be a sign of
             * a broken mix (for a random function it is far below 1e-3) */
            assert_true(most <= 12);
        }
        assert_int_equal(th_free(t), 0);
    }
    th *t = th_new(NULL);
    struct tcp_layer *tl = t->st->tcp;
    uint32_t a = conn_hash(tl, TH_PEER_IP, 40000, 80);
    uint32_t same = 0;
    for (int k = 0; k < 64; k++) {
        tl->hk1 = (tl->hk1 * 0x9e3779b97f4a7c15ull + 2) | 1;
        same += conn_hash(tl, TH_PEER_IP, 40000, 80) == a;
    }
    assert_true(same < 8);
    assert_int_equal(th_free(t), 0);
}

/* The send queue's tail ends at sq_end (acks_whole_flight relies on it):
 * after sends that open buffers, coalesce into the tail, and after ACKs
 * that release buffers whole or in part. */
static void sq_tail_ends_at_sq_end(void **s)
{
    (void)s;
    th *t;
    struct tern_conn *c = connected_conn(&t);
    uint8_t d[5000];
    memset(d, 0x5a, sizeof d);
    static const uint32_t sizes[] = {1, 100, 1448, 1449, 3000, 7, 5000, 64};
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        assert_true(tern_tcp_send(t->st, c, d, sizes[i]) > 0);
        assert_non_null(c->sq_tail);
        assert_int_equal(bq_end(c->sq_tail), c->sq_end);
    }
    peer p;
    peer_init(&p, t);
    p.lport = 80;
    p.port = 40000;
    p.seq = c->rcv_nxt;
    p.tsval = c->ts_recent + 1;
    p.wnd = 65535;
    for (uint32_t acked = 700; c->sq_head; acked += 2000) {
        p.ack = seq_lt(c->snd_una + acked, c->snd_max) ? c->snd_una + acked
                                                        : c->snd_max;
        peer_send(&p, 0x10, NULL, 0);
        th_poll(t);
        if (c->sq_tail)
            assert_int_equal(bq_end(c->sq_tail), c->sq_end);
        p.tsval++;
    }
    assert_int_equal(c->snd_una, c->sq_end);
    assert_int_equal(th_free(t), 0);
}

static void send_small_buffers(void **s)
{
    (void)s;
    th *t;
    struct tern_conn *c = connected_conn(&t);
    pool_alloc = t->st->cfg.buf_ops.alloc;
    t->st->cfg.buf_ops.alloc = small_alloc;
    uint8_t d[1400], got[1400];
    for (size_t i = 0; i < sizeof d; i++)
        d[i] = (uint8_t)(i * 7 + 3);
    assert_int_equal(tern_tcp_send(t->st, c, d, sizeof d), sizeof d);
    int bufs = 0;
    for (tern_buf *q = c->sq_head; q; q = bq_next(q), bufs++) {
        assert_true(bq_data(q) + bq_len(q) <= q->head + SMALL_BUF);
        for (int i = 0; i < 64; i++)
            assert_int_equal(q->head[SMALL_BUF + i], 0xa5);
    }
    assert_int_equal(bufs, 3);
    th_poll(t);
    size_t n = 0;
    for (unsigned i = 0; i < tp_count(t); i++) {
        tpkt f;
        assert_true(tp_get(t, (int)i, &f));
        assert_true(f.len <= SMALL_BUF - TERN_HEADROOM);
        assert_true(n + f.len <= sizeof got);
        memcpy(got + n, f.data, f.len);
        n += f.len;
    }
    assert_int_equal(n, sizeof d);
    assert_memory_equal(got, d, sizeof d);
    t->st->cfg.buf_ops.alloc = pool_alloc;
    tern_tcp_abort(t->st, c);
    assert_int_equal(th_free(t), 0);
}


/* Whole MSS buffers leave one segment each, in order and in place, as far
 * as cwnd allows and no further; only the last segment carries PSH. */
static void send_whole_buffers(void **s)
{
    (void)s;
    th *t;
    struct tern_conn *c = connected_conn(&t);
    uint32_t mss = c->mss, una = c->snd_una;
    static uint8_t d[5 * 1460 + 100];
    size_t total = 5 * mss + 100;
    for (size_t i = 0; i < total; i++)
        d[i] = (uint8_t)(i * 13 + 5);
    c->cwnd = 3 * mss + mss / 2;            /* room for 3 whole segments */
    assert_int_equal(tern_tcp_send(t->st, c, d, total), total);
    th_poll(t);
    assert_int_equal(tp_count(t), 3);
    for (unsigned i = 0; i < 3; i++) {
        tpkt f;
        assert_true(tp_get(t, (int)i, &f));
        assert_true(f.csum_ok);
        assert_int_equal(f.seq, una + i * mss);
        assert_int_equal(f.len, mss);
        assert_int_equal(f.flags, F_ACK);
        assert_memory_equal(f.data, d + i * mss, mss);
    }
    assert_int_equal(c->snd_nxt, una + 3 * mss);
    assert_int_equal(c->snd_max, una + 3 * mss);
    assert_int_equal(bq_seq(c->sq_cur), una + 3 * mss);
    assert_int_equal(c->bytes_sent, 3 * mss);
    th_clear(t);
    c->cwnd = 10 * mss;
    tcp_output(t->st, c);
    th_poll(t);
    assert_int_equal(tp_count(t), 3);
    for (unsigned i = 0; i < 3; i++) {
        tpkt f;
        assert_true(tp_get(t, (int)i, &f));
        uint32_t len = i < 2 ? mss : 100;
        assert_int_equal(f.seq, una + (3 + i) * mss);
        assert_int_equal(f.len, len);
        assert_int_equal(f.flags, i < 2 ? F_ACK : F_ACK | F_PSH);
        assert_memory_equal(f.data, d + (3 + i) * mss, len);
    }
    assert_int_equal(c->snd_max, una + total);
    assert_int_equal(t->st->ctr.tcp_data_segs_out, 6);
    tern_tcp_abort(t->st, c);
    assert_int_equal(th_free(t), 0);
}

/* tcp_output's lone-segment shortcut (send_lone) against the path it
 * replaces (output_one): twin stacks in the same state queue the same
 * request inside an input burst; on twin b the template is made stale, so
 * tcp_lone_ready refuses it and output_one (which rebuilds the template:
 * the same bytes) sends it. Same frames byte for byte, same counters and
 * the same connection state, for each case the shortcut meets: timestamps
 * or not (the RTT timed by snd_max then), an RTO above the probe bound
 * and a backoff (tcp_arm_rto's own path), a window or cwnd of exactly the
 * request, a full MSS, a keep-alive deadline in t_rtx, an ACK owed for
 * the peer's data. Each twin first sends one request and has it acked
 * (the template is built by the first segment of a conn). */
typedef struct lone_case {
    bool no_ts, reply_data;
    uint32_t rto_ms, len, wnd, cwnd;
    uint8_t backoff;
    uint64_t keepalive;
} lone_case;

static struct tern_conn *lone_twin(th **tp, peer *p, const lone_case *k)
{
    return peer_connected(tp, p, !k->no_ts);
}

/* The conn with what may differ between twins cleared: buffer and user
 * pointers, the template's validity and progress mark. */
static void lone_norm(const struct tern_conn *c, struct tern_conn *out)
{
    memcpy(out, c, sizeof *out);
    out->sq_head = out->sq_tail = out->sq_cur = NULL;
    out->ooo_head = out->ooo_tail = NULL;
    out->user = NULL;
    out->tx_arp_until = 0;
    out->tx_arp_gen = 0;
    out->tx_progress = 0;
}

static void lone_request(th *t, struct tern_conn *c, const lone_case *k,
                         bool stale, const uint8_t *d, bool *took)
{
    struct tcp_layer *tl = t->st->tcp;
    c->rto_ms = k->rto_ms ? k->rto_ms : c->rto_ms;
    c->backoff = k->backoff;
    if (k->wnd)
        c->snd_wnd = k->wnd;
    if (k->cwnd)
        c->cwnd = k->cwnd;
    if (k->keepalive)
        c->t_rtx = t->now + k->keepalive;
    if (stale)
        c->tx_arp_gen--;
    tl->in_input = true;            /* as from a recv callback */
    assert_int_equal(tern_tcp_send(t->st, c, d, k->len), k->len);
    *took = tcp_lone_ready(t->st, c);
    tl->in_input = false;
    tcp_input_done(t->st);
    th_poll(t);
}

static void lone_compare(th *a, struct tern_conn *ca, th *b,
                         struct tern_conn *cb)
{
    assert_true(th_same_output(a, b));
    assert_memory_equal(a->st->ip_ids, b->st->ip_ids, sizeof a->st->ip_ids);
    static struct tern_conn na, nb;
    lone_norm(ca, &na);
    lone_norm(cb, &nb);
    assert_memory_equal(&na, &nb, sizeof na);
    assert_int_equal(ca->sq_head->refs, cb->sq_head->refs);
    assert_int_equal(ca->sq_head->cb32, cb->sq_head->cb32);
    assert_true(ca->sq_head->cb[0] == cb->sq_head->cb[0]);
    assert_true(ca->sq_head->cb[1] == cb->sq_head->cb[1]);
}

static void lone_send_same(void **s)
{
    (void)s;
    static const lone_case cases[] = {
        {.len = 64},
        {.len = 64, .no_ts = true},
        {.len = 64, .rto_ms = 300},
        {.len = 64, .backoff = 2},
        {.len = 64, .wnd = 64, .cwnd = 64},
        {.len = 1448},
        {.len = 1460, .no_ts = true},
        {.len = 64, .keepalive = 7200 * TERN_NS_PER_SEC},
        {.len = 100, .reply_data = true},
        {.len = 100, .reply_data = true, .no_ts = true},
    };
    uint8_t d[1460];
    for (size_t i = 0; i < sizeof d; i++)
        d[i] = (uint8_t)(i * 31 + 7);
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
        const lone_case *k = &cases[n];
        th *a, *b;
        peer pa, pb;
        struct tern_conn *ca = lone_twin(&a, &pa, k);
        struct tern_conn *cb = lone_twin(&b, &pb, k);
        bool took_a, took_b;
        /* one request and its ACK first: the template, an RTT sample,
         * the whole-flight ACK, the timer left filed */
        lone_request(a, ca, &(lone_case){.len = 50}, false, d, &took_a);
        lone_request(b, cb, &(lone_case){.len = 50}, false, d, &took_b);
        th_advance_us(a, 300);
        th_advance_us(b, 300);
        pa.ack += 50;
        pb.ack += 50;
        size_t rn = k->reply_data ? 20 : 0;
        peer_send(&pa, rn ? F_ACK | F_PSH : F_ACK, d, rn);
        peer_send(&pb, rn ? F_ACK | F_PSH : F_ACK, d, rn);
        th_clear(a);
        th_clear(b);
        lone_request(a, ca, k, false, d, &took_a);
        lone_request(b, cb, k, true, d, &took_b);
        assert_true(took_a);
        assert_false(took_b);
        assert_int_equal(a->nout, 1);
        tpkt f;
        assert_true(tp_get(a, 0, &f));
        assert_true(f.csum_ok);
        assert_int_equal(f.flags, F_ACK | F_PSH);
        assert_int_equal(f.len, k->len);
        assert_memory_equal(f.data, d, k->len);
        assert_int_equal(f.has_ts, !k->no_ts);
        lone_compare(a, ca, b, cb);
        assert_true(ca->t_rtx != TERN_NEVER);
        tern_tcp_abort(a->st, ca);
        tern_tcp_abort(b->st, cb);
        assert_int_equal(th_free(a), 0);
        assert_int_equal(th_free(b), 0);
    }
}

/* tcp_rcv_window against the rule written out step by step: the edge
 * never shrinks, and moves only by min(rcv_buf / 2, rcv_mss) or more. */
static uint32_t rcv_window_ref(uint32_t buf, uint32_t unread, uint8_t ws,
                               uint32_t adv, uint32_t nxt, uint16_t mss)
{
    uint32_t avail = buf > unread ? buf - unread : 0;
    if (avail > 65535u << ws)
        avail = 65535u << ws;
    uint32_t old = (int32_t)(adv - nxt) > 0 ? adv - nxt : 0;
    if (avail <= old)
        return old;
    uint32_t step = buf / 2 < mss ? buf / 2 : mss;
    return avail - old < step ? old : avail;
}

/* Calls fn for each receive state of a grid: buffer sizes, window
 * scales, unread bytes, and the advertised edge ahead of or behind
 * rcv_nxt (edges wrap). */
typedef void (*rcv_state_fn)(struct tcp_layer *tl, struct tern_conn *c,
                             uint32_t off, int behind, void *ctx);
static void for_each_rcv_state(rcv_state_fn fn, void *ctx)
{
    struct tcp_layer tl;
    struct tern_conn c;
    memset(&tl, 0, sizeof tl);
    memset(&c, 0, sizeof c);
    static const uint32_t bufs[] = {0, 1, 2, 1000, 3001, 65535, 262144,
                                    4u << 20};
    static const uint32_t offs[] = {0, 1, 100, 127, 129, 1447, 1448, 1449,
                                    30000, 65535, 131072, 262143, 262144,
                                    5u << 20};
    static const uint8_t wss[] = {0, 2, 7, 14};
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++)
        for (size_t w = 0; w < sizeof wss / sizeof wss[0]; w++)
            for (size_t u = 0; u < sizeof offs / sizeof offs[0]; u++)
                for (size_t a = 0; a < sizeof offs / sizeof offs[0]; a++)
                    for (int behind = 0; behind < 2; behind++) {
                        tl.rcv_buf = bufs[b];
                        c.rcv_ws = wss[w];
                        c.rcv_mss = 1448;
                        c.rcv_unread = offs[u];
                        c.rcv_nxt = 0xfffff000u;
                        c.rcv_adv = behind ? c.rcv_nxt - offs[a]
                                           : c.rcv_nxt + offs[a];
                        fn(&tl, &c, offs[a], behind, ctx);
                    }
}

static void check_rcv_window(struct tcp_layer *tl, struct tern_conn *c,
                             uint32_t off, int behind, void *ctx)
{
    int *counts = ctx;                  /* moved, kept */
    uint32_t want = rcv_window_ref(tl->rcv_buf, c->rcv_unread, c->rcv_ws,
                                   c->rcv_adv, c->rcv_nxt, c->rcv_mss);
    assert_int_equal(tcp_rcv_window(tl, c), want);
    uint32_t old = behind ? 0 : off;
    counts[want != old ? 0 : 1]++;
}

static void rcv_window(void **s)
{
    (void)s;
    int counts[2] = {0, 0};
    for_each_rcv_state(check_rcv_window, counts);
    assert_true(counts[0] > 100 && counts[1] > 100);  /* both outcomes */
}


/* What the whole-buffer send run relies on (output.c send_run): with the
 * receive state unchanged, the window field announced again after the
 * first segment's ack_sent is the same, and its edge moves nothing. */
static uint32_t field_and_note(const struct tcp_layer *tl, struct tern_conn *c)
{
    uint32_t wnd = tcp_rcv_window(tl, c) >> c->rcv_ws;     /* ack_fields_est */
    if (wnd > 65535)
        wnd = 65535;
    uint32_t edge = c->rcv_nxt + (wnd << c->rcv_ws);     /* ack_sent */
    if ((int32_t)(edge - c->rcv_adv) > 0)
        c->rcv_adv = edge;
    return wnd;
}

static void check_field_repeat(struct tcp_layer *tl, struct tern_conn *c,
                               uint32_t off, int behind, void *ctx)
{
    (void)off;
    (void)behind;
    uint32_t adv0 = c->rcv_adv;
    uint32_t first = field_and_note(tl, c);
    uint32_t adv1 = c->rcv_adv;
    assert_int_equal(field_and_note(tl, c), first);
    assert_int_equal(c->rcv_adv, adv1);
    if (adv1 != adv0)
        ++*(int *)ctx;
}

/* tcp_wnd_field (and the ack_sent rule: the edge moves only forward)
 * against the field and edge computed the long way, field_and_note. */
static void check_wnd_field(struct tcp_layer *tl, struct tern_conn *c,
                            uint32_t off, int behind, void *ctx)
{
    (void)off;
    (void)behind;
    struct tern_conn ref = *c;
    uint32_t adv0 = c->rcv_adv;
    uint32_t edge, wnd = tcp_wnd_field(tl, c, &edge);
    assert_int_equal(wnd, field_and_note(tl, &ref));
    if ((int32_t)(edge - c->rcv_adv) > 0)
        c->rcv_adv = edge;
    assert_int_equal(c->rcv_adv, ref.rcv_adv);
    if (edge == adv0 && wnd)
        ++*(int *)ctx;
}

static void wnd_field(void **s)
{
    (void)s;
    int kept = 0;
    for_each_rcv_state(check_wnd_field, &kept);
    assert_true(kept > 100);            /* the shortcut's case is met */
}

static void ack_fields_repeat(void **s)
{
    (void)s;
    int moved = 0;
    for_each_rcv_state(check_field_repeat, &moved);
    assert_true(moved > 100);           /* the first call moved the edge */
}

/* conn_pend links a conn once (LIFO) and keeps adding reasons; the end of
 * the burst unlinks every conn, and a closed one keeps TF_OUTPUT but
 * leaves the list; a later conn_pend links it again. */
static void expect_pending(struct tcp_layer *tl, struct tern_conn *c,
                           const int *order, int n)
{
    struct tern_conn *p = tl->pend_head;
    for (int i = 0; i < n; i++, p = p->pend_next) {
        assert_ptr_equal(p, &c[order[i]]);
        assert_true(p->flags & TF_PENDING);
    }
    assert_null(p);
}

static void pending_list(void **s)
{
    (void)s;
    th *t = th_new(NULL);
    struct tcp_layer *tl = t->st->tcp;
    tern_poll(t->st, t->now);
    assert_null(tl->pend_head);
    struct tern_conn *c = tl->conns;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c[i].state, TERN_TCP_CLOSED);
        c[i].flags = 0;
    }
    conn_pend(t->st, &c[2], TF_OUTPUT);
    conn_pend(t->st, &c[0], TF_ACK_DELAYED);
    conn_pend(t->st, &c[2], TF_ACK_NOW);        /* linked already */
    conn_pend(t->st, &c[3], TF_OUTPUT);
    expect_pending(tl, c, (const int[]){3, 0, 2}, 3);
    assert_int_equal(c[2].flags, TF_OUTPUT | TF_ACK_NOW | TF_PENDING);
    assert_int_equal(c[1].flags, 0);
    tcp_input_done(t->st);
    assert_null(tl->pend_head);
    assert_int_equal(c[2].flags, TF_OUTPUT | TF_ACK_NOW);
    assert_int_equal(c[0].flags, TF_ACK_DELAYED);
    assert_int_equal(c[3].flags, TF_OUTPUT);
    conn_pend(t->st, &c[0], TF_OUTPUT);         /* stale link overwritten */
    conn_pend(t->st, &c[1], TF_OUTPUT);
    expect_pending(tl, c, (const int[]){1, 0}, 2);
    tcp_input_done(t->st);
    assert_null(tl->pend_head);
    for (int i = 0; i < 4; i++)
        assert_false(c[i].flags & TF_PENDING);
    th_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(options_roundtrip),
        cmocka_unit_test(conn_hash_spread),
        cmocka_unit_test(sq_tail_ends_at_sq_end),
        cmocka_unit_test(send_whole_buffers),
        cmocka_unit_test(ack_fields_repeat),
        cmocka_unit_test(wnd_field),
        cmocka_unit_test(scoreboard),
        cmocka_unit_test(rtt_and_cc),
        cmocka_unit_test(rto_rounding),
        cmocka_unit_test(rto_initial_capped),
        cmocka_unit_test(wheel),
        cmocka_unit_test(pending_list),
        cmocka_unit_test(wheel_next_kept),
        cmocka_unit_test(arm_rto_lone),
        cmocka_unit_test(lone_send_same),
        cmocka_unit_test(tx_folds),
        cmocka_unit_test(send_small_buffers),
        cmocka_unit_test(rcv_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
