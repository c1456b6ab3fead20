/* Whole-buffer send runs (output.c send_run) as a bulk sender sees them:
 * full-MSS queue buffers leave back to back in place, the last one with
 * PSH; the first segment starts the retransmission timer and the counters
 * and snd_max follow every segment. Sent again after snd_nxt is rewound
 * (as an RTO does), every segment counts as a retransmission and snd_max
 * stays. A FIN queued behind the last buffer before output rides on it
 * (the run leaves that buffer to the general loop). All of this is what the general send loop did before the
 * run took these buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"

#define NBUF 4

static uint8_t data[NBUF * 1460];

static struct tern_conn *connected(th **tp, peer *p)
{
    struct tern_conn *c = peer_connected(tp, p, true);
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 29 + 11);
    return c;
}

/* NBUF whole-MSS buffers queued, cwnd open: frames i..NBUF-1 as sent. */
static void expect_frames(th *t, uint32_t una, uint32_t mss, uint8_t last)
{
    assert_int_equal(tp_count(t), NBUF);
    for (unsigned i = 0; i < NBUF; i++) {
        tpkt f;
        assert_true(tp_get(t, (int)i, &f));
        assert_true(f.csum_ok);
        assert_int_equal(f.seq, una + i * mss);
        assert_int_equal(f.len, mss);
        assert_int_equal(f.flags, i + 1 < NBUF ? F_ACK : last);
        assert_memory_equal(f.data, data + i * mss, mss);
    }
}

static void run_and_resend(void **s)
{
    (void)s;
    th *t;
    peer p;
    struct tern_conn *c = connected(&t, &p);
    uint32_t mss = c->mss, una = c->snd_una;
    c->cwnd = 2 * NBUF * mss;
    assert_int_equal(tern_tcp_send(t->st, c, data, NBUF * mss), NBUF * mss);
    th_poll(t);
    expect_frames(t, una, mss, F_ACK | F_PSH);
    assert_int_not_equal(c->t_rtx, TERN_NEVER);     /* the RTO runs */
    assert_true(c->t_rtx > t->now);
    assert_int_equal(c->snd_nxt, una + NBUF * mss);
    assert_int_equal(c->snd_max, una + NBUF * mss);
    assert_null(c->sq_cur);
    assert_int_equal(c->bytes_sent, NBUF * mss);
    assert_int_equal(t->st->ctr.tcp_data_segs_out, NBUF);
    assert_int_equal(t->st->ctr.tcp_bytes_out, NBUF * mss);
    assert_int_equal(t->st->ctr.tcp_retransmits, 0);

    /* rewound as after an RTO: the same segments again, as resends */
    th_clear(t);
    c->snd_nxt = c->snd_una;
    c->sq_cur = c->sq_head;
    tcp_output(t->st, c);
    th_poll(t);
    expect_frames(t, una, mss, F_ACK | F_PSH);
    assert_int_equal(c->snd_max, una + NBUF * mss);
    assert_int_equal(c->retransmits, NBUF);
    assert_int_equal(t->st->ctr.tcp_retransmits, NBUF);
    assert_int_equal(t->st->ctr.tcp_data_segs_out, 2 * NBUF);
    assert_int_equal(c->bytes_sent, 2 * NBUF * mss);
    tern_tcp_abort(t->st, c);
    assert_int_equal(th_free(t), 0);
}

static void fin_rides_on_last(void **s)
{
    (void)s;
    th *t;
    peer p;
    struct tern_conn *c = connected(&t, &p);
    uint32_t mss = c->mss, una = c->snd_una;
    c->cwnd = 0;                    /* data and FIN queued before output */
    assert_int_equal(tern_tcp_send(t->st, c, data, NBUF * mss), NBUF * mss);
    assert_int_equal(tern_tcp_shutdown(t->st, c), 0);
    th_poll(t);
    assert_int_equal(tp_count(t), 0);
    c->cwnd = 2 * NBUF * mss;
    tcp_output(t->st, c);
    th_poll(t);
    expect_frames(t, una, mss, F_ACK | F_PSH | F_FIN);
    assert_int_equal(c->snd_max, una + NBUF * mss + 1);
    assert_int_equal(t->st->ctr.tcp_data_segs_out, NBUF);
    tern_tcp_abort(t->st, c);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_and_resend),
        cmocka_unit_test(fin_rides_on_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
