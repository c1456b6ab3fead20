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
#include "xfer.h"

/* A transfer (xfer.h) and what was sampled after every step while data
 * was in flight. */
typedef struct sampled {
    xfer x;
    uint64_t cwnd_sum, steps;
    uint32_t cwnd_max;
    bool saw_probe_rtt, probe_rtt_floor_ok, left_probe_rtt;
} sampled;

static struct tern_conn *conn_of(tern_conn *k) { return (struct tern_conn *)k; }

static uint8_t cc_choice;
/* Simulated time that passes, unpolled, between the pair's set-up and the
 * connect: the stack's clock is that much behind when the conn starts. */
static uint64_t idle_before_ns;
static void tw(tern_config *c, int end)
{
    (void)end;
    c->cc = cc_choice;
}

/* Move r->x.total bytes from end 0 to end 1 of a fresh pair with cc, link
 * rate mbps and one-way delay delay_us, loss each way; samples the
 * sender's window and BBR's mode after every step. Returns the pair. */
static pair *run(sampled *r, uint8_t cc, uint64_t mbps, uint64_t delay_us,
                 double loss, uint64_t seed)
{
    xfer *x = &r->x;
    tern_memlink_faults f = {0};
    f.loss = loss;
    f.delay_ns = delay_us * 1000;
    f.rate_bps = mbps * 1000000;
    cc_choice = cc;
    pair *p = pair_new(&f, seed, tw, &XFER_CB, x, x);
    p->now += idle_before_ns;
    xfer_start(p, x);
    uint64_t limit = p->now + 1000 * TERN_NS_PER_SEC;
    while (!xfer_delivered(x) && p->now < limit) {
        if (!pair_step(p))
            break;
        if (!x->cli)
            continue;
        struct tern_conn *c = conn_of(x->cli);
        if (c->snd_max != c->snd_una) {
            r->cwnd_sum += c->cwnd;
            r->steps++;
        }
        if (c->cwnd > r->cwnd_max)
            r->cwnd_max = c->cwnd;
        if (cc == TERN_CC_BBR) {
            tcp_bbr *b = bbr_of(p->st[0], c);
            if (b->mode == BBR_PROBE_RTT) {
                if (!r->saw_probe_rtt)
                    r->probe_rtt_floor_ok = true;
                r->saw_probe_rtt = true;
                if (c->cwnd > 4u * c->mss)
                    r->probe_rtt_floor_ok = false;
            } else if (r->saw_probe_rtt) {
                r->left_probe_rtt = true;
            }
        }
        xfer_pump(p->st[0], x);
    }
    assert_true(xfer_delivered(x));
    return p;
}

/* Startup: from the initial 10 segments the window grows to the path's
 * BDP and more; the model holds the link's rate and round trip. */
static void startup_finds_the_path(void **s)
{
    (void)s;
    sampled x = {.x = {.total = 8u << 20, .chunk = 65536}};
    pair *p = run(&x, TERN_CC_BBR, 1000, 100, 0, 1);
    struct tern_conn *c = conn_of(x.x.cli);
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
    sampled xb = {.x = {.total = 16u << 20, .chunk = 65536}};
    pair *p = run(&xb, TERN_CC_BBR, 1000, 100, 0.02, 3);
    tcp_bbr *b = bbr_of(p->st[0], conn_of(xb.x.cli));
    uint64_t bw = b->max_bw, bdp = bw * b->min_rtt_us / 1000000;
    uint64_t mean_bbr = xb.cwnd_sum / xb.steps;
    assert_true(tern_get_counters(p->st[0])->tcp_retransmits > 100);
    pair_free(p);
    sampled xc = {.x = {.total = 16u << 20, .chunk = 65536}};
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
    sampled x = {.x = {.total = 12u << 20, .chunk = 65536}};
    pair *p = run(&x, TERN_CC_BBR, 8, 100, 0, 5);
    assert_true(x.saw_probe_rtt);
    assert_true(x.probe_rtt_floor_ok);
    assert_true(x.left_probe_rtt);
    pair_free(p);
}

/* A connection opened long after the stack last saw the time (its clock
 * is behind until the next poll) does not take its first round trip for a
 * 10 s old estimate: no ProbeRTT (cwnd at 4 segments) in a short transfer. */
static void stale_clock_at_connect_no_probe_rtt(void **s)
{
    (void)s;
    sampled x = {.x = {.total = 8u << 20, .chunk = 65536}};
    idle_before_ns = 30 * TERN_NS_PER_SEC;
    pair *p = run(&x, TERN_CC_BBR, 1000, 100, 0, 9);
    idle_before_ns = 0;
    assert_false(x.saw_probe_rtt);
    tcp_bbr *b = bbr_of(p->st[0], conn_of(x.x.cli));
    assert_true(b->max_bw > 100000000ull);
    assert_true(x.cwnd_max >= b->max_bw * b->min_rtt_us / 1000000);
    pair_free(p);
}

/* A sender that measured the link, then sends 3-segment messages one at
 * a time: those samples are application-limited and far below the link's
 * rate; the estimate stays. */
static void app_limited_samples_keep_the_estimate(void **s)
{
    (void)s;
    sampled x = {.x = {.total = 4u << 20, .chunk = 65536}};
    pair *p = run(&x, TERN_CC_BBR, 1000, 100, 0, 7);
    tcp_bbr *b = bbr_of(p->st[0], conn_of(x.x.cli));
    uint64_t bw0 = b->max_bw;
    uint32_t round0 = b->round, delivered0 = b->rate.delivered;
    assert_true(bw0 > 100000000ull);
    x.x.total += 200u * 4000;
    x.x.chunk = 4000;
    x.x.one_at_a_time = true;
    xfer_pump(p->st[0], &x.x);
    uint64_t limit = p->now + 1000 * TERN_NS_PER_SEC;
    while (!xfer_delivered(&x.x) && p->now < limit) {
        if (!pair_step(p))
            break;
        xfer_pump(p->st[0], &x.x);
    }
    assert_true(xfer_delivered(&x.x));
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
        cmocka_unit_test(stale_clock_at_connect_no_probe_rtt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
