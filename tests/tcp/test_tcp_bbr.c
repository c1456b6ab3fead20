/* test_tcp_bbr.c - the model-based congestion control (cc_bbr.c,
 * cc_rate.c) between two tern stacks over the mem link on the simulated
 * clock: startup finds the link's rate and grows the window, random loss
 * does not shrink it as it does CUBIC's, ProbeRTT comes after 10 s
 * without a lower round trip, and application-limited samples do not
 * lower the estimate. Bounded by progress (bytes delivered) and the
 * simulated clock, never by wall-clock time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "tcp/cc.h"

typedef struct xfer {
    tern_conn *cli, *srv;
    uint64_t total, sent, rcvd;
    size_t chunk;               /* at most this much per send call */
    bool one_at_a_time;         /* the next chunk once all is acked */
    /* sampled after every step while data is in flight */
    uint64_t cwnd_sum, steps;
    uint32_t cwnd_max;
    bool saw_probe_rtt, probe_rtt_floor_ok, left_probe_rtt;
} xfer;

static struct tern_conn *conn_of(tern_conn *k) { return (struct tern_conn *)k; }

static void pump(tern_stack *st, xfer *x)
{
    static uint8_t buf[65536];
    while (x->cli && x->sent < x->total) {
        struct tern_conn *c = conn_of(x->cli);
        if (x->one_at_a_time && x->sent != c->bytes_acked)
            break;
        size_t n = x->total - x->sent, space = tern_tcp_send_space(st, x->cli);
        if (n > x->chunk)
            n = x->chunk;
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
    pump(st, x);
}
static void on_acked(tern_stack *st, tern_conn *c, void *u, size_t n)
{
    (void)c; (void)n;
    pump(st, u);
}
static size_t on_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                      const uint8_t *d, size_t len)
{
    (void)st; (void)c; (void)b; (void)d;
    ((xfer *)u)->rcvd += len;
    return len;
}

static const tern_callbacks CB = {
    .accepted = on_accepted, .connected = on_connected, .recv = on_recv,
    .acked = on_acked,
};

static uint8_t cc_choice;
static void tw(tern_config *c, int end)
{
    (void)end;
    c->cc = cc_choice;
}

static bool delivered_all(void *arg)
{
    xfer *x = arg;
    return x->total && x->rcvd >= x->total;
}

/* Move x->total bytes from end 0 to end 1 of a fresh pair with cc, link
 * rate mbps and one-way delay delay_us, loss each way; samples the
 * sender's window and BBR's mode after every step. Returns the pair. */
static pair *run(xfer *x, uint8_t cc, uint64_t mbps, uint64_t delay_us,
                 double loss, uint64_t seed)
{
    tern_memlink_faults f = {0};
    f.loss = loss;
    f.delay_ns = delay_us * 1000;
    f.rate_bps = mbps * 1000000;
    cc_choice = cc;
    pair *p = pair_new(&f, seed, tw, &CB, x, x);
    tern_tcp_listen(p->st[1], 5001, x);
    tern_tcp_connect(p->st[0], A4(PAIR_IP1), 5001, 0, x, NULL);
    tern_flush(p->st[0]);
    uint64_t limit = p->now + 1000 * TERN_NS_PER_SEC;
    while (!delivered_all(x) && p->now < limit) {
        if (!pair_step(p))
            break;
        if (!x->cli)
            continue;
        struct tern_conn *c = conn_of(x->cli);
        if (c->snd_max != c->snd_una) {
            x->cwnd_sum += c->cwnd;
            x->steps++;
        }
        if (c->cwnd > x->cwnd_max)
            x->cwnd_max = c->cwnd;
        if (cc == TERN_CC_BBR) {
            tcp_bbr *b = bbr_of(p->st[0], c);
            if (b->mode == BBR_PROBE_RTT) {
                if (!x->saw_probe_rtt)
                    x->probe_rtt_floor_ok = true;
                x->saw_probe_rtt = true;
                if (c->cwnd > 4u * c->mss)
                    x->probe_rtt_floor_ok = false;
            } else if (x->saw_probe_rtt) {
                x->left_probe_rtt = true;
            }
        }
        pump(p->st[0], x);
    }
    assert_true(delivered_all(x));
    return p;
}

/* Startup: from the initial 10 segments the window grows to the path's
 * BDP and more; the model holds the link's rate and round trip. */
static void startup_finds_the_path(void **s)
{
    (void)s;
    xfer x = {.total = 8u << 20, .chunk = 65536};
    pair *p = run(&x, TERN_CC_BBR, 1000, 100, 0, 1);
    struct tern_conn *c = conn_of(x.cli);
    tcp_bbr *b = bbr_of(p->st[0], c);
    /* 1 Gbit/s = 125 MB/s; the estimate counts payload */
    assert_true(b->max_bw > 100000000ull);
    assert_true(b->max_bw < 130000000ull);
    /* the round trip is at least the two delays */
    assert_true(b->min_rtt_us >= 200);
    assert_true(b->min_rtt_us < 2000);
    uint32_t bdp = (uint32_t)(b->max_bw * b->min_rtt_us / 1000000);
    assert_true(x.cwnd_max > 10u * c->mss);
    assert_true(x.cwnd_max >= bdp);
    assert_true(b->filled_pipe);
    assert_int_equal(tern_get_counters(p->st[0])->tcp_retransmits, 0);
    pair_free(p);
}

/* Random loss (2% each way) leaves BBR's window near the path's BDP,
 * while CUBIC's collapses on the same path and the same losses. */
static void random_loss_keeps_the_window(void **s)
{
    (void)s;
    xfer xb = {.total = 16u << 20, .chunk = 65536};
    pair *p = run(&xb, TERN_CC_BBR, 1000, 100, 0.02, 3);
    tcp_bbr *b = bbr_of(p->st[0], conn_of(xb.cli));
    uint64_t bw = b->max_bw, bdp = bw * b->min_rtt_us / 1000000;
    uint64_t mean_bbr = xb.cwnd_sum / xb.steps;
    assert_true(tern_get_counters(p->st[0])->tcp_retransmits > 100);
    pair_free(p);
    xfer xc = {.total = 16u << 20, .chunk = 65536};
    p = run(&xc, TERN_CC_CUBIC, 1000, 100, 0.02, 3);
    uint64_t mean_cubic = xc.cwnd_sum / xc.steps;
    pair_free(p);
    /* the estimate is still the link's rate */
    assert_true(bw > 80000000ull);
    assert_true(mean_bbr >= bdp);
    assert_true(mean_bbr > 3 * mean_cubic);
}

/* After 10 s without a lower round trip: ProbeRTT, with cwnd at 4
 * segments, and back out of it. */
static void probe_rtt_comes(void **s)
{
    (void)s;
    /* 12 MiB at 8 Mbit/s: about 12.6 s of simulated time */
    xfer x = {.total = 12u << 20, .chunk = 65536};
    pair *p = run(&x, TERN_CC_BBR, 8, 100, 0, 5);
    assert_true(x.saw_probe_rtt);
    assert_true(x.probe_rtt_floor_ok);
    assert_true(x.left_probe_rtt);
    pair_free(p);
}

/* A sender that measured the link, then sends 3-segment messages one at
 * a time: those samples are application-limited and far below the link's
 * rate; the estimate stays. */
static void app_limited_samples_keep_the_estimate(void **s)
{
    (void)s;
    xfer x = {.total = 4u << 20, .chunk = 65536};
    pair *p = run(&x, TERN_CC_BBR, 1000, 100, 0, 7);
    tcp_bbr *b = bbr_of(p->st[0], conn_of(x.cli));
    uint64_t bw0 = b->max_bw;
    uint32_t round0 = b->round, delivered0 = b->rate.delivered;
    assert_true(bw0 > 100000000ull);
    x.total += 200u * 4000;
    x.chunk = 4000;
    x.one_at_a_time = true;
    pump(p->st[0], &x);
    uint64_t limit = p->now + 1000 * TERN_NS_PER_SEC;
    while (!delivered_all(&x) && p->now < limit) {
        if (!pair_step(p))
            break;
        pump(p->st[0], &x);
    }
    assert_true(delivered_all(&x));
    /* the messages were measured (many rounds) and did not lower it */
    assert_true(b->round > round0 + 2 * BBR_BW_ROUNDS);
    assert_true(b->rate.delivered - delivered0 >= 200u * 4000);
    assert_true(b->max_bw >= bw0);
    pair_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(startup_finds_the_path),
        cmocka_unit_test(random_loss_keeps_the_window),
        cmocka_unit_test(probe_rtt_comes),
        cmocka_unit_test(app_limited_samples_keep_the_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
