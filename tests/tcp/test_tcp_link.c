/* Two stacks over the mem link move a byte stream (every byte checked
 * against its position, so loss, duplication or reordering of delivered
 * data is caught) under faults: none, loss, reordering, duplication,
 * corruption, all at once, a slow reader holding the window shut; and a
 * connection to a peer that dies ends with a counted timeout. The clock is
 * simulated; sizes shrink under the sanitizers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "xfer.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static uint64_t total_bytes(void)
{
    const char *e = getenv("TERN_TCP_TEST_MB");
    uint64_t mb = e ? strtoull(e, NULL, 10) : (SANITIZED ? 16 : 256);
    return mb << 20;
}

static int cc_choice;
static uint32_t xfer_caps[2];       /* NIC caps of both ends (0: none) */
static void tw(tern_config *c, int end)
{
    (void)end;
    /* longer than the RTO: a lost last ACK makes the peer resend its FIN
     * after an RTO, which TIME_WAIT must still answer (after it, an RST:
     * the peer's close would read as a reset) */
    c->time_wait_ms = 1000;
    c->cc = (uint8_t)cc_choice;
}

/* The stream in 16 KiB sends, every byte checked against the pattern at
 * its offset; each end closes on the other's FIN. */
static void run_xfer(const tern_memlink_faults *f, uint64_t seed, bool slow,
                     uint64_t total)
{
    xfer x;
    memset(&x, 0, sizeof x);
    x.total = total;
    x.chunk = 16384;
    x.close_at_end = true;
    x.pattern = true;
    x.slow = slow;
    pair *p = pair_new_caps(f, seed, xfer_caps, false, tw, &XFER_CB, &x, &x);
    assert_true(xfer_start(p, &x));
    bool ok = pair_run(p, xfer_closed, &x, p->now + 100000 * TERN_NS_PER_SEC);
    const tern_counters *c0 = tern_get_counters(p->st[0]);
    const tern_counters *c1 = tern_get_counters(p->st[1]);
    if (!ok || x.rcvd != total || x.good != total) {
        fprintf(stderr, "sent %llu rcvd %llu good %llu closed %d/%d t=%llu s\n",
                (unsigned long long)x.sent, (unsigned long long)x.rcvd,
                (unsigned long long)x.good, x.closes[0], x.closes[1],
                (unsigned long long)(p->now / TERN_NS_PER_SEC));
        for (int e = 0; e < 2; e++) {
            tern_conn *k = e ? x.srv : x.cli;
            if (!k)
                continue;
            tern_tcp_info i;
            tern_tcp_get_info(p->st[e], k, &i);
            fprintf(stderr, " end%d %s cwnd %u ssthresh %u snd_wnd %u rcv_wnd %u rto %u\n",
                    e, tern_tcp_state_name(i.state), i.cwnd, i.ssthresh,
                    i.snd_wnd, i.rcv_wnd, i.rto_ms);
            tp_dump(p->st[e]);
        }
    }
    assert_true(ok);
    assert_int_equal(x.good, total);
    assert_int_equal(x.rcvd, total);
    assert_int_equal(x.reason[0], TERN_CLOSE_NORMAL);
    assert_int_equal(x.reason[1], TERN_CLOSE_NORMAL);
    if (f && f->loss > 0)
        assert_true(c0->tcp_retransmits > 0);
    if (f && (f->reorder > 0 || f->loss > 0))
        assert_true(c1->tcp_ooo_segments > 0);
    if (f && f->dup > 0)
        assert_true(c1->tcp_dup_data_in > 0 || c0->tcp_dup_acks_in > 0);
    uint64_t corrupted = tern_memlink_get_stats(p->link, 0)->corrupted +
                         tern_memlink_get_stats(p->link, 1)->corrupted;
    if (corrupted)
        assert_true(c0->tcp_drop_csum + c1->tcp_drop_csum +
                    c0->ip_drop_csum + c1->ip_drop_csum > 0);
    if (f && f->corrupt > 0 && total >= (64u << 20))
        assert_true(corrupted > 0);
    if (slow)
        assert_true(c0->tcp_zero_window_probes > 0 || c1->tcp_pure_acks_out > 0);
    if (pair_by_ref)
        assert_true(tern_memlink_get_stats(p->link, 0)->by_ref_frames > 0);
    /* let TIME_WAIT expire: nothing left */
    p->now += 10 * TERN_NS_PER_SEC;
    pair_step(p);
    assert_int_equal(tern_tcp_conn_count(p->st[0]), 0);
    assert_int_equal(tern_tcp_conn_count(p->st[1]), 0);
    pair_free(p);
}

static void clean(void **s) { (void)s; run_xfer(NULL, 1, false, total_bytes()); }

static void clean_newreno(void **s)
{
    (void)s;
    cc_choice = TERN_CC_NEWRENO;
    run_xfer(NULL, 2, false, total_bytes());
    cc_choice = 0;
}

static void loss5(void **s)
{
    (void)s;
    tern_memlink_faults f = {0};
    f.loss = 0.05;
    run_xfer(&f, 3, false, total_bytes());
}

static void loss5_newreno(void **s)
{
    (void)s;
    tern_memlink_faults f = {0};
    f.loss = 0.05;
    cc_choice = TERN_CC_NEWRENO;
    run_xfer(&f, 4, false, total_bytes());
    cc_choice = 0;
}

static void reorder5(void **s)
{
    (void)s;
    tern_memlink_faults f = {0};
    f.reorder = 0.05;
    run_xfer(&f, 5, false, total_bytes());
}

static void dup1(void **s)
{
    (void)s;
    tern_memlink_faults f = {0};
    f.dup = 0.01;
    run_xfer(&f, 6, false, total_bytes());
}

static void corrupt01(void **s)
{
    (void)s;
    tern_memlink_faults f = {0};
    f.corrupt = 0.001;
    run_xfer(&f, 7, false, total_bytes());
}

static void everything(void **s)
{
    (void)s;
    tern_memlink_faults f = {0};
    f.loss = 0.05;
    f.reorder = 0.05;
    f.dup = 0.01;
    f.corrupt = 0.001;
    f.delay_ns = 100000;
    run_xfer(&f, 8, false, total_bytes());
}

/* Pools of 64 buffers against a window of ~180 segments, under loss:
 * the transfer completes (test_tcp_fast's big_buffers_small_pool_loss is
 * the case that used to stall). */
static void small_pool_loss(void **s)
{
    (void)s;
    tern_memlink_faults f = {0};
    f.loss = 0.05;
    pair_pool_size = 64;
    run_xfer(&f, 14, false, 4u << 20);
    pair_pool_size = 0;
}

static void slow_reader(void **s)
{
    (void)s;
    run_xfer(NULL, 9, true, total_bytes());
}

/* The slow reader on a link that passes TSO frames by reference: the
 * receiver holds views of the sender's buffers while it does not consume,
 * and the sender still finishes (its pool holds the send queue and what
 * the reader holds). */
static void slow_reader_by_reference(void **s)
{
    (void)s;
    const uint32_t nic = TERN_CAP_TSO | TERN_CAP_LRO | TERN_CAP_SG |
                         TERN_CAP_TX_IP_CSUM | TERN_CAP_TX_L4_CSUM |
                         TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM;
    xfer_caps[0] = xfer_caps[1] = nic;
    pair_by_ref = true;
    run_xfer(NULL, 16, true, 16u << 20);
    pair_by_ref = false;
    xfer_caps[0] = xfer_caps[1] = 0;
}

/* The server vanishes mid-transfer: the client gives up with a timeout. */
static void dead_peer(void **s)
{
    (void)s;
    xfer x;
    memset(&x, 0, sizeof x);
    x.total = 1u << 30;
    x.chunk = 16384;
    x.close_at_end = true;
    x.pattern = true;
    pair *p = pair_new(NULL, 10, tw, &XFER_CB, &x, &x);
    assert_true(xfer_start(p, &x));
    for (int i = 0; i < 200; i++)
        pair_step(p);
    assert_true(x.rcvd > 0);
    tern_memlink_faults f = {0};
    f.loss = 1.0;
    tern_memlink_set_faults(p->link, 0, &f);
    tern_memlink_set_faults(p->link, 1, &f);
    uint64_t limit = p->now + 7200 * TERN_NS_PER_SEC;
    while (!x.closes[0] && p->now < limit)
        pair_step(p);
    assert_int_equal(x.closes[0], 1);
    assert_int_equal(x.reason[0], TERN_CLOSE_TIMEOUT);
    assert_int_equal(tern_get_counters(p->st[0])->tcp_timeouts, 1);
    pair_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clean),
        cmocka_unit_test(clean_newreno),
        cmocka_unit_test(loss5),
        cmocka_unit_test(loss5_newreno),
        cmocka_unit_test(reorder5),
        cmocka_unit_test(dup1),
        cmocka_unit_test(corrupt01),
        cmocka_unit_test(everything),
        cmocka_unit_test(small_pool_loss),
        cmocka_unit_test(slow_reader),
        cmocka_unit_test(slow_reader_by_reference),
        cmocka_unit_test(dead_peer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
