/* A SACK scoreboard that forgets nothing, against a scripted peer on
 * simulated time: a 40-segment flight loses every other segment (20
 * holes, more than the TCP_SB_MAX ranges), the receiver reports the 20
 * SACKed segments three blocks per ACK as real receivers do (the newest
 * first, then the two before it), and afterwards reports only the blocks
 * of its latest arrivals. Whatever RACK, the recovery, a probe or an RTO decide,
 * the sender resends each hole and never a segment it was told is SACKed,
 * and the transfer completes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"
#include "server_conn.h"

#define SEG 1448u
#define NSEG 160u           /* queued: 231,680 bytes, under snd_buf */
#define FIRST 30u           /* the lossy flight: segments [30, 70) */
#define LAST 70u


static uint8_t data[NSEG * SEG];
static uint32_t una;            /* the stack's first data byte */
static unsigned sends[NSEG];    /* transmissions of each segment */
static bool got[NSEG];          /* the receiver holds the segment */
static uint32_t arrivals[4 * NSEG]; /* the receiver's arrivals in order */
static unsigned narr;
static uint32_t heldk[NSEG];    /* sent while the SACKs came, in order */
static unsigned nheld;

static int setup(void **s)
{
    (void)s;
    memset(sends, 0, sizeof sends);
    memset(got, 0, sizeof got);
    narr = nheld = 0;
    server_conn_open(40200, data, sizeof data);
    return 0;
}

/* Count the captured data segments (all whole segments), let `deliver`
 * decide which arrive, clear the capture; returns how many there were. */
static unsigned take(bool (*deliver)(uint32_t k))
{
    unsigned n = 0;
    for (unsigned i = 0; i < tp_count(T); i++) {
        tpkt p;
        if (!tp_get(T, (int)i, &p) || !p.len)
            continue;
        uint32_t off = p.seq - una;
        assert_int_equal(off % SEG, 0);
        uint32_t k = off / SEG;
        assert_true(k < NSEG);
        sends[k]++;
        n++;
        if (deliver(k)) {
            got[k] = true;
            if (narr < sizeof arrivals / sizeof arrivals[0])
                arrivals[narr++] = k;
        }
    }
    th_clear(T);
    return n;
}
static bool all(uint32_t k) { (void)k; return true; }
/* the lossy flight: every even segment in it is lost once */
static bool odd_only(uint32_t k)
{
    return k < FIRST || k >= LAST || (k & 1) || sends[k] > 1;
}

/* sent in the round of the SACKs: arrives after it */
static bool held(uint32_t k)
{
    if (nheld < NSEG)
        heldk[nheld++] = k;
    return false;
}

/* An ACK for the receiver's state, with blocks [b[i][0], b[i][1]) in
 * segments. */
static void ack_blocks(uint32_t (*b)[2], unsigned nb)
{
    uint32_t ack = 0;
    while (ack < NSEG && got[ack])
        ack++;
    uint8_t o[2 + 2 + 8 * 3] = {1, 1, 5, (uint8_t)(2 + 8 * nb)};
    for (unsigned i = 0; i < nb; i++) {
        th_put32(o + 4 + 8 * i, una + b[i][0] * SEG);
        th_put32(o + 8 + 8 * i, una + b[i][1] * SEG);
    }
    P.ack = una + ack * SEG;
    peer_send_opts(&P, F_ACK, o, nb ? 4 + 8 * nb : 0, NULL, 0);
}

/* The ACK a receiver sends later (RFC 2018 4): the blocks holding its
 * three most recent arrivals above the cumulative ACK, newest first. */
static void ack_recent(void)
{
    uint32_t b[3][2];
    unsigned nb = 0;
    uint32_t ack = 0;
    while (ack < NSEG && got[ack])
        ack++;
    for (unsigned i = narr; i-- > 0 && nb < 3;) {
        uint32_t k = arrivals[i], s = k, e = k + 1;
        if (k <= ack)
            continue;
        while (s > ack + 1 && got[s - 1])
            s--;
        while (e < NSEG && got[e])
            e++;
        bool dup = false;
        for (unsigned j = 0; j < nb; j++)
            dup = dup || b[j][0] == s;
        if (dup)
            continue;
        b[nb][0] = s;
        b[nb][1] = e;
        nb++;
    }
    ack_blocks(b, nb);
}

static void twenty_holes_reported_three_at_a_time(void **s)
{
    (void)s;
    assert_int_equal(tern_tcp_send(T->st, conn, data, sizeof data),
                     (long)sizeof data);
    tern_flush(T->st);
    tpkt p;
    assert_true(tp_get(T, 0, &p));
    una = p.seq;
    /* slow start to a 40-segment flight, nothing lost: 10, 20, then the
     * 40 of [30, 70) */
    assert_int_equal(take(all), 10);
    th_advance_us(T, 1000);
    ack_blocks(NULL, 0);
    assert_int_equal(take(all), 20);
    th_advance_us(T, 1000);
    ack_blocks(NULL, 0);
    assert_int_equal(take(odd_only), LAST - FIRST);
    th_advance_us(T, 1000);
    /* the 20 odd segments arrive; each ACK reports the newest block and
     * the two before it */
    for (uint32_t k = FIRST + 1; k < LAST; k += 2) {
        uint32_t b[3][2];
        unsigned nb = 0;
        for (uint32_t j = k; nb < 3 && j > FIRST; j -= 2) {
            b[nb][0] = j;
            b[nb][1] = j + 1;
            nb++;
        }
        ack_blocks(b, nb);
        take(held);             /* what leaves arrives a round trip later */
    }
    assert_int_equal(ctr()->tcp_sack_recoveries, 1);
    th_advance_us(T, 1000);
    for (unsigned i = 0; i < nheld; i++) {
        got[heldk[i]] = true;
        arrivals[narr++] = heldk[i];
    }
    /* from now on nothing is lost; the receiver reports the blocks of
     * its latest arrivals, one ACK per round of segments: the SACKed
     * segments far above the holes are not reported again */
    for (int round = 0; round < 2000 && acked < sizeof data; round++) {
        ack_recent();
        if (!take(all))
            th_advance_us(T, 1000);
    }
    assert_int_equal(acked, sizeof data);
    assert_int_equal(ctr()->tcp_retransmits, 20);
    for (uint32_t k = 0; k < NSEG; k++) {
        bool hole = k >= FIRST && k < LAST && !(k & 1);
        if (hole)
            assert_int_equal(sends[k], 2);
        else
            assert_int_equal(sends[k], 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(twenty_holes_reported_three_at_a_time,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
