/* test_rr.c - the request/response generator's bookkeeping (apps/common
 * rr.h, hist.h): the run-length histogram gives exactly the figures of
 * adding every value on its own, and rr_issue/rr_recv keep the depth,
 * quota and stopping limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hist.h"
#include "rr.h"

/* The reference: every value straight into the buckets. */
static void add_plain(hist *h, uint64_t v) { hist_add_n(h, v, 1); }

static void assert_same_figures(const hist *a, const hist *b)
{
    assert_int_equal(hist_count(a), hist_count(b));
    const double ps[] = {0, 1, 50, 90, 99, 99.9, 100};
    for (unsigned i = 0; i < sizeof ps / sizeof ps[0]; i++)
        assert_int_equal(hist_percentile(a, ps[i]), hist_percentile(b, ps[i]));
    assert_true(hist_mean(a) == hist_mean(b));
}

static hist ha, hb, hm;

static void runs_equal_single_adds(void **state)
{
    (void)state;
    hist_init(&ha);
    hist_init(&hb);
    /* Runs of equal values, a zero first (the initial run value), big
     * values, alternation. */
    const uint64_t vals[] = {0, 0, 7, 7, 7, 1000, 1000, 31, 32, 33, 33,
                             123456789, 5, 5, 5, 5, 0, 1ull << 40, 7};
    for (unsigned i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        hist_add(&ha, vals[i]);
        add_plain(&hb, vals[i]);
        assert_same_figures(&ha, &hb);  /* readers count the pending run */
    }
    assert_int_equal(hist_count(&ha), sizeof vals / sizeof vals[0]);
    assert_true(ha.run_n > 0);
    hist_flush(&ha);
    assert_int_equal(ha.run_n, 0);
    assert_int_equal(ha.count, hb.count);
    assert_int_equal(ha.sum, hb.sum);
    assert_int_equal(ha.min, hb.min);
    assert_int_equal(ha.max, hb.max);
    assert_memory_equal(ha.b, hb.b, sizeof ha.b);
}

/* hist_new_run records the pending run and starts an empty one: values
 * added after it count once each, as plain adds. */
static void new_run_is_empty(void **state)
{
    (void)state;
    hist_init(&ha);
    hist_init(&hb);
    const uint64_t vals[] = {3, 3, 40, 40, 40, 2, 1ull << 33};
    for (unsigned i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint64_t before = hist_count(&ha);
        hist_new_run(&ha, vals[i]);
        assert_int_equal(hist_count(&ha), before);   /* nothing added */
        assert_int_equal(ha.run_v, vals[i]);
        assert_int_equal(ha.run_n, 0);
        hist_add(&ha, vals[i]);                      /* one increment */
        hist_add(&ha, vals[i]);
        add_plain(&hb, vals[i]);
        add_plain(&hb, vals[i]);
        assert_same_figures(&ha, &hb);
    }
}

static void merge_takes_the_pending_run(void **state)
{
    (void)state;
    hist_init(&ha);
    hist_init(&hb);
    hist_init(&hm);
    for (unsigned i = 0; i < 10; i++) {
        hist_add(&ha, 500);
        add_plain(&hb, 500);
    }
    hist_add(&ha, 9);
    add_plain(&hb, 9);
    assert_int_equal(ha.count, 10);  /* the 9 is still a run */
    hist_merge(&hm, &ha);
    assert_int_equal(hm.count, 11);
    assert_int_equal(hm.run_n, 0);
    assert_same_figures(&hm, &hb);
    assert_int_equal(hm.min, 9);
    assert_int_equal(hm.max, 500);
}

static void empty_hist_reads_zero(void **state)
{
    (void)state;
    hist_init(&ha);
    assert_int_equal(hist_count(&ha), 0);
    assert_int_equal(hist_percentile(&ha, 50), 0);
    assert_true(hist_mean(&ha) == 0.0);
}

static rr_thread t;

static void issue_keeps_depth_and_quota(void **state)
{
    (void)state;
    rr_conn c;
    memset(&c, 0, sizeof c);
    rr_thread_init(&t, 64, 64, 4, 6);
    assert_int_equal(rr_start(&t, &c, 100), 4);      /* depth */
    assert_int_equal(c.inflight, 4);
    assert_int_equal(rr_issue(&t, &c, 3, 100), 0);  /* pipeline full */
    /* One response and a half: one completion, one new request. */
    assert_int_equal(rr_recv(&t, &c, 96, 150), 1);
    assert_int_equal(c.rx, 32);
    assert_int_equal(c.inflight, 4);
    /* Two more responses (32 + 128 bytes): two completions, but the quota
     * (6) allows one more request. */
    assert_int_equal(rr_recv(&t, &c, 128, 170), 1);
    assert_int_equal(rr_completed(&t) + c.inflight, 6);  /* issued */
    assert_int_equal(rr_completed(&t), 3);
    assert_int_equal(c.inflight, 3);
    assert_int_equal(rr_issue(&t, &c, 5, 180), 0);  /* quota used up */
    /* Latencies: 50, 70, 70 (stamps 100, 100, 100). */
    assert_int_equal(hist_count(&t.h), 3);
    assert_int_equal(t.h.sum + t.h.run_v * t.h.run_n, 190);
    assert_int_equal(t.t_last, 170);
    assert_false(rr_quota_done(&t));
}

static void stopping_issues_nothing(void **state)
{
    (void)state;
    rr_conn c;
    memset(&c, 0, sizeof c);
    rr_thread_init(&t, 10, 20, 2, 0);
    assert_int_equal(rr_start(&t, &c, 1), 2);
    rr_stop(&t);
    assert_int_equal(rr_recv(&t, &c, 20, 5), 0);     /* completed, none new */
    assert_int_equal(c.inflight, 1);
    assert_int_equal(rr_completed(&t), 1);
    assert_int_equal(rr_recv(&t, &c, 20, 6), 0);
    assert_int_equal(c.inflight, 0);
    assert_false(rr_overrun(&c, &t));
    assert_int_equal(rr_recv(&t, &c, 25, 7), 0);     /* nothing was asked */
    assert_true(rr_overrun(&c, &t));
}

/* rr_stop ends issuing through left alone, with quota left or none, and
 * leaves the quota unfinished. */
static void stop_empties_left(void **state)
{
    (void)state;
    for (uint64_t quota = 0; quota <= 100; quota += 100) {
        rr_conn c;
        memset(&c, 0, sizeof c);
        rr_thread_init(&t, 8, 8, 4, quota);
        assert_int_equal(rr_start(&t, &c, 1), 4);
        assert_int_equal(rr_recv_any(&t, &c, 8, 3), 1);
        rr_stop(&t);
        assert_true(t.stopping);
        assert_int_equal(t.left, 0);
        assert_true(rr_one_response(&t, &c, 8, 3));  /* latency 2 again */
        assert_int_equal(rr_complete_one(&t, &c, 3), 0);
        assert_int_equal(c.inflight, 3);
        assert_int_equal(rr_issue(&t, &c, 2, 4), 0);   /* room for one */
        assert_int_equal(c.inflight, 3);
        assert_int_equal(rr_completed(&t), 2);
        assert_false(rr_quota_done(&t));
    }
}

/* trr_recv's usual case skips the overrun check: one whole response that
 * answers the last request in flight is never an overrun. */
static void one_response_never_overruns(void **state)
{
    (void)state;
    rr_conn c;
    memset(&c, 0, sizeof c);
    rr_thread_init(&t, 8, 8, 1, 1);
    assert_int_equal(rr_start(&t, &c, 7), 1);
    assert_true(rr_one_response(&t, &c, 8, 7));     /* latency 0 = run_v */
    assert_int_equal(rr_complete_one(&t, &c, 7), 0);  /* quota used */
    assert_int_equal(c.inflight, 0);
    assert_false(rr_overrun(&c, &t));
    assert_false(rr_one_response(&t, &c, 8, 7));    /* none in flight */
    assert_int_equal(rr_recv_any(&t, &c, 1, 8), 0);
    assert_false(rr_overrun(&c, &t));              /* 1 byte: not yet */
    assert_int_equal(rr_recv_any(&t, &c, 7, 8), 0);
    assert_true(rr_overrun(&c, &t));               /* a whole extra one */
}

static void stamps_wrap_the_ring(void **state)
{
    (void)state;
    rr_conn c;
    memset(&c, 0, sizeof c);
    rr_thread_init(&t, 1, 1, RR_MAX_DEPTH, 0);
    assert_int_equal(rr_start(&t, &c, 0), RR_MAX_DEPTH);
    for (uint64_t now = 1; now <= 3 * RR_MAX_DEPTH; now++)
        assert_int_equal(rr_recv(&t, &c, 1, now), 1);
    /* Request i (0-based) was issued at max(0, i - 63) and answered at
     * i + 1: latencies 1..64 for the first 64, then 64 every time. */
    assert_int_equal(rr_completed(&t), 3 * RR_MAX_DEPTH);
    hist_flush(&t.h);
    assert_int_equal(rr_completed(&t), 3 * RR_MAX_DEPTH);  /* run counted */
    assert_int_equal(t.h.min, 1);
    assert_int_equal(t.h.max, RR_MAX_DEPTH);
    assert_int_equal(t.h.count, 3 * RR_MAX_DEPTH);
}

static rr_thread ta, tb;

static void assert_same_state(const rr_thread *a, const rr_conn *ca,
                              const rr_thread *b, const rr_conn *cb)
{
    assert_int_equal(rr_completed(a), rr_completed(b));   /* with inflight: issued */
    assert_int_equal(a->left, b->left);
    assert_int_equal(a->t_last, b->t_last);
    assert_int_equal(hist_count(&a->h), hist_count(&b->h));
    assert_int_equal(a->h.sum + a->h.run_v * a->h.run_n,
                     b->h.sum + b->h.run_v * b->h.run_n);
    assert_int_equal(ca->inflight, cb->inflight);
    assert_int_equal(ca->head, cb->head);
    assert_int_equal(ca->rx, cb->rx);
    for (uint32_t k = 0; k < ca->inflight; k++) {
        uint32_t i = (ca->head + k) & (RR_MAX_DEPTH - 1);
        assert_int_equal(ca->stamp[i], cb->stamp[i]);
    }
}

typedef unsigned recv_fn(rr_thread *t, rr_conn *c, uint64_t len,
                         uint64_t now);

/* Feed ta through recv_a and tb through rr_recv_any alike (8-byte requests
 * and responses, depths 1 to 3, a quota, the end of the run at step 10)
 * and check after every step that both hold the same state. `vary`: a new
 * latency in every loop iteration and now and then half a response. */
static void run_twins(recv_fn *recv_a, uint64_t quota, bool vary)
{
    for (uint32_t depth = 1; depth <= 3; depth++) {
        rr_conn ca, cb;
        memset(&ca, 0, sizeof ca);
        memset(&cb, 0, sizeof cb);
        rr_thread_init(&ta, 8, 8, depth, quota);
        rr_thread_init(&tb, 8, 8, depth, quota);
        assert_int_equal(rr_start(&ta, &ca, 0), depth);
        assert_int_equal(rr_start(&tb, &cb, 0), depth);
        uint64_t now = 0;
        for (unsigned step = 0; step < 14; step++) {
            if (step % 3 == 0)
                now += vary ? 5 + step : 5;   /* a new loop iteration */
            if (step == 10)
                rr_stop(&ta), rr_stop(&tb);
            uint64_t len = vary && step % 5 == 4 ? 4 : 8;
            unsigned ka = recv_a(&ta, &ca, len, now);
            unsigned kb = rr_recv_any(&tb, &cb, len, now);
            assert_int_equal(ka, kb);
            assert_same_state(&ta, &ca, &tb, &cb);
            assert_same_figures(&ta.h, &tb.h);
        }
        assert_true(ta.left == 0 || ta.stopping);
    }
}

static unsigned recv_inline(rr_thread *t, rr_conn *c, uint64_t len,
                            uint64_t now)
{
    return rr_recv(t, c, len, now);
}

/* rr_recv's inline case (one whole response, the run's latency) leaves
 * exactly the state rr_recv_any leaves, through equal latencies, a new
 * latency, the quota running out and the end of the run. */
static void inline_case_matches_general(void **state)
{
    (void)state;
    run_twins(recv_inline, 9, false);
}

/* trr_recv_any's order: the usual case, else one whole response with a
 * new latency (rr_new_latency, then the usual case), else rr_recv_any. */
static unsigned new_latencies;

static unsigned recv_as_trr(rr_thread *t, rr_conn *c, uint64_t len,
                            uint64_t now)
{
    if (rr_one_response(t, c, len, now))
        return rr_complete_one(t, c, now);
    if (!rr_one_whole(t, c, len))
        return rr_recv_any(t, c, len, now);
    rr_new_latency(t, c, now);
    new_latencies++;
    assert_true(rr_one_response(t, c, len, now));
    return rr_complete_one(t, c, now);
}

/* That order leaves exactly rr_recv_any's state and histogram through new
 * latencies, split responses, the quota and the end of the run. */
static void new_latency_matches_general(void **state)
{
    (void)state;
    new_latencies = 0;
    run_twins(recv_as_trr, 11, true);
    assert_true(new_latencies > 0);
}

/* rr_one_response: only exactly one whole response, with a request in
 * flight, whose latency is the histogram's current run; rr_complete_one
 * then answers it and issues one request while the quota lasts. */
static void one_response_test_and_commit(void **state)
{
    (void)state;
    rr_conn c;
    memset(&c, 0, sizeof c);
    rr_thread_init(&t, 8, 8, 2, 3);
    assert_false(rr_one_response(&t, &c, 8, 0));   /* nothing in flight */
    assert_int_equal(rr_start(&t, &c, 10), 2);
    assert_int_equal(rr_recv_any(&t, &c, 8, 15), 1);  /* run_v = 5 */
    assert_true(rr_one_response(&t, &c, 8, 15));
    assert_false(rr_one_response(&t, &c, 8, 16));  /* another latency */
    assert_false(rr_one_response(&t, &c, 7, 15));  /* part of one */
    assert_false(rr_one_response(&t, &c, 16, 15)); /* two */
    c.rx = 3;
    assert_false(rr_one_response(&t, &c, 5, 15));  /* the rest of one */
    assert_false(rr_one_response(&t, &c, 8, 15));
    c.rx = 0;
    assert_int_equal(rr_complete_one(&t, &c, 15), 0);  /* quota of 3 used */
    assert_int_equal(c.inflight, 1);
    assert_int_equal(rr_completed(&t), 2);
    assert_int_equal(t.t_last, 15);
    rr_thread_init(&t, 8, 8, 2, 0);
    memset(&c, 0, sizeof c);
    assert_int_equal(rr_start(&t, &c, 20), 2);
    assert_int_equal(rr_recv_any(&t, &c, 8, 21), 1);  /* run_v = 1 */
    assert_true(rr_one_response(&t, &c, 8, 21));
    assert_int_equal(rr_complete_one(&t, &c, 21), 1);
    assert_int_equal(c.inflight, 2);
    assert_int_equal(c.stamp[(c.head + 1) & (RR_MAX_DEPTH - 1)], 21);
    rr_stop(&t);
    assert_false(rr_one_response(&t, &c, 8, 21));  /* stamped 21: 0 */
    assert_true(rr_one_response(&t, &c, 8, 22));
    assert_int_equal(rr_complete_one(&t, &c, 22), 0);
    assert_int_equal(c.inflight, 1);
    assert_int_equal(rr_completed(&t), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runs_equal_single_adds),
        cmocka_unit_test(new_run_is_empty),
        cmocka_unit_test(merge_takes_the_pending_run),
        cmocka_unit_test(empty_hist_reads_zero),
        cmocka_unit_test(issue_keeps_depth_and_quota),
        cmocka_unit_test(stopping_issues_nothing),
        cmocka_unit_test(stop_empties_left),
        cmocka_unit_test(new_latency_matches_general),
        cmocka_unit_test(one_response_never_overruns),
        cmocka_unit_test(stamps_wrap_the_ring),
        cmocka_unit_test(inline_case_matches_general),
        cmocka_unit_test(one_response_test_and_commit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
