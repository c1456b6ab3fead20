/* test_tcp_resend_once.c - a sender with a large send queue (4 MiB) over
 * a lossy mem link (5% each way, 50 us one way, 10 Gbit/s; simulated
 * clock, seeded faults) resends what was lost and little else: the
 * receiver sees few segments twice (each one a resend it did not need),
 * with CUBIC and with BBR, whose window does not shrink on loss and keeps
 * hundreds of segments and dozens of holes in flight. A retransmission
 * still in flight is lost again only when RACK says so: a new recovery
 * starting over, or RFC 6675's count of SACKed data above it, must not
 * send it a second time. And each ACK's SACK walks stay short however
 * long the queue (sack_walk_bounded). Bounded by bytes delivered, not by
 * time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "tcp/tcp.h"
#include "xfer.h"

#define SND_BUF (4u << 20)

static uint8_t cc_choice;
static void tweak(tern_config *c, int end)
{
    c->cc = cc_choice;
    if (end == 0)
        c->snd_buf = SND_BUF;
}

typedef struct result {
    uint64_t rtx, dup, lost;
    uint64_t walked, acks;  /* SACK walk steps; ACKs the sender took in */
} result;

/* One transfer of `mib` MiB from end 0 to end 1; what it took. */
static result transfer(uint8_t cc, uint64_t seed, unsigned mib)
{
    cc_choice = cc;
    tern_memlink_faults f = {.loss = 0.05, .delay_ns = 50000,
                             .rate_bps = 10000000000ull};
    xfer x;
    memset(&x, 0, sizeof x);
    x.total = (uint64_t)mib << 20;
    pair *p = pair_new(&f, seed, tweak, &XFER_CB, &x, &x);
    xfer_start(p, &x);
    assert_true(pair_run(p, xfer_delivered, &x, p->now + 600 * TERN_NS_PER_SEC));
    assert_int_equal(x.rcvd, x.total);
    result r = {
        .rtx = tern_get_counters(p->st[0])->tcp_retransmits,
        .dup = tern_get_counters(p->st[1])->tcp_dup_data_in,
        .lost = tern_memlink_get_stats(p->link, 0)->lost,
        .walked = p->st[0]->tcp->sack_walked,
        .acks = tern_memlink_get_stats(p->link, 1)->delivered,
    };
    pair_free(p);
    return r;
}

static void few_needless(uint8_t cc)
{
    unsigned mib = 16;
    result sum = {0};
    for (uint64_t seed = 1; seed <= 3; seed++) {
        result r = transfer(cc, seed, mib);
        sum.rtx += r.rtx;
        sum.dup += r.dup;
        sum.lost += r.lost;
    }
    /* the losses were repaired (every data frame the link dropped was
     * sent again at least once) ... */
    assert_true(sum.lost > 100);
    assert_true(sum.rtx >= sum.lost / 2);
    /* ... and at most one resend in 20 was one the receiver already had
     * (the loss-free path and tail probes leave a few) */
    assert_true(sum.dup * 20 <= sum.rtx);
}

/* The per-ACK SACK walks (marking the buffers a block covers, RACK's
 * search for what the ACK delivered) visit the buffers the ACK newly
 * acknowledges or SACKs and a few around them, not the send queue from
 * snd_una up: with 4 MiB queued (~2,900 segments) and dozens of holes,
 * walks from the head visited 174 buffers per ACK on this transfer; from
 * where the last walks stopped, 11. */
static void sack_walk_bounded(void **s)
{
    (void)s;
    result r = transfer(TERN_CC_BBR, 1, 16);
    assert_true(r.acks > 1000);
    assert_true(r.walked <= 16 * r.acks);
}

static void cubic_few_needless(void **s) { (void)s; few_needless(TERN_CC_CUBIC); }
static void bbr_few_needless(void **s) { (void)s; few_needless(TERN_CC_BBR); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cubic_few_needless),
        cmocka_unit_test(bbr_few_needless),
        cmocka_unit_test(sack_walk_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
