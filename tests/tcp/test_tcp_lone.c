/* The lone-segment mark (TF_LONE, tcp.h tcp_lone_ready): send_one_buf
 * marks the request it queued, and tcp_output trusts the mark instead of
 * re-testing the queue, the sequence numbers and the buffer. These tests
 * put every event that may come between the send and the end of the input
 * burst (peer segments of the same burst, more sends, shutdown, close,
 * ICMP's mss, the windows, ARP, a pure ACK leaving) between the two and
 * check that
 *  - the mark never claims the case when the field-by-field test
 *    (tcp_lone_full) refuses it, and claims it whenever that test holds
 *    unless a segment left in between;
 *  - twin stacks, one keeping the mark and one with the mark taken away
 *    (so tcp_output takes the path it took before the mark existed),
 *    send the same frames byte for byte and end with the same counters
 *    and the same connection state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"
#include "tcp/tcp.h"

enum lone_event {
    EV_NONE,
    EV_COALESCE,        /* a second small send joins the buffer */
    EV_APPEND,          /* a second send needs a second buffer */
    EV_SEND_BUF,        /* tern_tcp_send_buf appends the app's buffer */
    EV_SHUTDOWN,
    EV_CLOSE,
    EV_PEER_ACK,        /* a pure ACK, same window */
    EV_PEER_ZERO_WND,   /* a pure ACK closing the window */
    EV_PEER_DATA,       /* in-order data from the peer */
    EV_PEER_OOO,        /* out-of-order data from the peer */
    EV_PEER_OOO_FILL,   /* out-of-order data, then the gap filled */
    EV_PEER_FIN,
    EV_PEER_DUPACKS,    /* three duplicate ACKs (nothing in flight) */
    EV_PEER_SACK,       /* duplicate ACKs with SACK blocks (nothing in
                         * flight: the scoreboard must stay empty) */
    EV_ICMP_MTU,        /* fragmentation needed, quoting the unsent
                         * segment: RFC 5927 ignores it (nothing in flight),
                         * so mss cannot fall under the marked buffer */
    EV_CWND_DOWN,
    EV_ARP_STALE,
    EV_ACK_LEAVES,      /* a pure ACK is sent in between */
    EV_COUNT
};

typedef struct lone_case {
    enum lone_event ev;
    uint32_t len;
    bool no_ts;
    bool want_full;     /* tcp_lone_full holds after the event */
    bool want_mark;     /* and tcp_lone_ready */
    bool ooo_before;    /* out-of-order data held before the send */
} lone_case;

static const lone_case cases[] = {
    {EV_NONE, 64, false, true, true, false},
    {EV_NONE, 64, true, true, true, false},
    {EV_NONE, 1448, false, true, true, false},
    {EV_COALESCE, 64, false, true, true, false},
    {EV_COALESCE, 64, true, true, true, false},
    {EV_APPEND, 1448, false, false, false, false},
    {EV_SEND_BUF, 64, false, false, false, false},
    {EV_SHUTDOWN, 64, false, false, false, false},
    {EV_CLOSE, 64, false, false, false, false},
    {EV_PEER_ACK, 64, false, true, true, false},
    {EV_PEER_ZERO_WND, 64, false, false, false, false},
    {EV_PEER_DATA, 64, false, true, true, false},
    {EV_PEER_DATA, 64, true, true, true, false},
    {EV_PEER_OOO, 64, false, false, false, false},
    {EV_PEER_OOO, 64, true, false, false, false},
    {EV_PEER_OOO_FILL, 64, false, true, true, false},
    {EV_NONE, 64, false, false, false, true},
    {EV_PEER_DATA, 64, false, false, false, true},
    {EV_PEER_OOO_FILL, 64, false, false, false, true},
    {EV_PEER_FIN, 64, false, false, false, false},
    {EV_PEER_DUPACKS, 64, false, true, true, false},
    {EV_PEER_SACK, 64, false, true, true, false},
    {EV_PEER_SACK, 64, true, true, true, false},
    {EV_ICMP_MTU, 64, false, true, true, false},
    {EV_ICMP_MTU, 64, true, true, true, false},
    {EV_ICMP_MTU, 1448, false, true, true, false},
    {EV_CWND_DOWN, 64, false, false, false, false},
    {EV_ARP_STALE, 64, false, false, false, false},
    {EV_ACK_LEAVES, 64, false, true, false, false},
};

static uint8_t payload[2048];

/* One peer segment into the burst that is open (no end-of-burst work),
 * with one SACK block [sl, sr) when sl != sr. */
static void peer_in_burst_sack(peer *p, uint8_t flags, uint32_t seq,
                               const void *data, size_t len, uint32_t sl,
                               uint32_t sr)
{
    static const uint8_t nop_nop_ts[4] = {1, 1, 8, 10};
    static const uint8_t nop_nop_sack[4] = {1, 1, 5, 10};
    uint8_t opt[24], f[2048];
    size_t on = 0;
    if (p->ts) {
        memcpy(opt, nop_nop_ts, sizeof nop_nop_ts);
        th_put32(opt + 4, p->tsval);
        th_put32(opt + 8, p->tsecr);
        on = 12;
    }
    if (sl != sr) {
        memcpy(opt + on, nop_nop_sack, sizeof nop_nop_sack);
        th_put32(opt + on + 4, sl);
        th_put32(opt + on + 8, sr);
        on += 12;
    }
    size_t n = tp_frame(f, TH_PEER_IP, TH_IP, p->port, p->lport, seq, p->ack,
                        flags, p->wnd, opt, on, data, len);
    tern_buf *b = tern_buf_alloc(p->t->st);
    assert_non_null(b);
    memcpy(b->data, f, n);
    b->len = (uint32_t)n;
    if (!tcp_input_frame(p->t->st, b))
        eth_input(p->t->st, b);
}

static void peer_in_burst(peer *p, uint8_t flags, uint32_t seq,
                          const void *data, size_t len)
{
    peer_in_burst_sack(p, flags, seq, data, len, 0, 0);
}

static void apply_event(th *t, peer *p, struct tern_conn *c,
                        enum lone_event ev)
{
    tern_stack *st = t->st;
    switch (ev) {
    case EV_NONE:
        break;
    case EV_COALESCE:
        assert_int_equal(tern_tcp_send(st, c, payload + 100, 10), 10);
        break;
    case EV_APPEND:
        assert_int_equal(tern_tcp_send(st, c, payload + 100, 10), 10);
        break;
    case EV_SEND_BUF: {
        tern_buf *b = tern_buf_alloc(st);
        assert_non_null(b);
        memcpy(b->data, payload, 30);
        b->len = 30;
        assert_int_equal(tern_tcp_send_buf(st, c, b), 0);
        break;
    }
    case EV_SHUTDOWN:
        assert_int_equal(tern_tcp_shutdown(st, c), 0);
        break;
    case EV_CLOSE:
        assert_int_equal(tern_tcp_close(st, c), 0);
        break;
    case EV_PEER_ACK:
        peer_in_burst(p, F_ACK, p->seq, NULL, 0);
        break;
    case EV_PEER_ZERO_WND:
        p->wnd = 0;
        peer_in_burst(p, F_ACK, p->seq, NULL, 0);
        break;
    case EV_PEER_DATA:
        peer_in_burst(p, F_ACK | F_PSH, p->seq, payload, 40);
        p->seq += 40;
        break;
    case EV_PEER_OOO:
        peer_in_burst(p, F_ACK | F_PSH, p->seq + 100, payload, 40);
        break;
    case EV_PEER_OOO_FILL:
        peer_in_burst(p, F_ACK | F_PSH, p->seq + 40, payload, 40);
        peer_in_burst(p, F_ACK | F_PSH, p->seq, payload, 40);
        p->seq += 80;
        break;
    case EV_PEER_FIN:
        peer_in_burst(p, F_ACK | F_FIN, p->seq, NULL, 0);
        p->seq += 1;
        break;
    case EV_PEER_DUPACKS:
        for (int i = 0; i < 3; i++)
            peer_in_burst(p, F_ACK, p->seq, NULL, 0);
        break;
    case EV_PEER_SACK:
        /* above what was sent, then below snd_una (a D-SACK) */
        peer_in_burst_sack(p, F_ACK, p->seq, NULL, 0, c->snd_max + 100,
                           c->snd_max + 200);
        peer_in_burst_sack(p, F_ACK, p->seq, NULL, 0, c->snd_una - 30,
                           c->snd_una - 10);
        peer_in_burst_sack(p, F_ACK, p->seq, NULL, 0, c->snd_una,
                           c->snd_una + 10);
        break;
    case EV_ICMP_MTU: {
        uint8_t q[28] = {0x45};
        q[9] = 6;                                   /* TCP */
        th_put32(q + 12, TH_IP);
        th_put32(q + 16, TH_PEER_IP);
        q[20] = (uint8_t)(c->lport >> 8);
        q[21] = (uint8_t)c->lport;
        q[22] = (uint8_t)(c->rport >> 8);
        q[23] = (uint8_t)c->rport;
        th_put32(q + 24, c->snd_una);
        uint16_t mss = c->mss;
        tcp_icmp_error(st, 3, 4, 576, q, sizeof q);
        assert_int_equal(c->mss, mss);
        break;
    }
    case EV_CWND_DOWN:
        c->cwnd = 10;
        break;
    case EV_ARP_STALE:
        c->tx_arp_gen--;
        break;
    case EV_ACK_LEAVES:
        tcp_send_ack(st, c);
        break;
    case EV_COUNT:
        break;
    }
}

static struct tern_conn *twin(th **tp, peer *p, const lone_case *k)
{
    struct tern_conn *c = peer_connected(tp, p, !k->no_ts);
    th *t = *tp;
    /* one request and its ACK first: the template is built, the queue
     * emptied by the whole-flight ACK, the timer left filed */
    assert_int_equal(tern_tcp_send(t->st, c, payload, 50), 50);
    th_poll(t);
    th_advance_us(t, 300);
    p->ack += 50;
    peer_send(p, F_ACK, NULL, 0);
    if (k->ooo_before) {    /* out-of-order data waits for a gap */
        p->seq += 200;
        peer_send(p, F_ACK | F_PSH, payload, 30);
        p->seq -= 230;
        assert_non_null(c->ooo_head);
    }
    th_clear(t);
    return c;
}

/* TF_OOO stands for a non-empty out-of-order queue (tcp_lone_ready and
 * the prediction test the flag, not the queue). */
static void ooo_flag_agrees(const struct tern_conn *c)
{
    assert_int_equal((c->flags & TF_OOO) != 0, c->ooo_head != NULL);
}

/* The request inside a burst, the event, the end of the burst. keep:
 * leave the mark; otherwise take it away after the send. */
static void run_case(th *t, peer *p, struct tern_conn *c, const lone_case *k,
                     bool keep)
{
    tern_stack *st = t->st;
    st->tcp->in_input = true;               /* as from a recv callback */
    assert_int_equal(tern_tcp_send(st, c, payload, k->len), k->len);
    /* held out-of-order data refuses the case from the start */
    assert_int_equal(tcp_lone_full(st, c), !k->ooo_before);
    assert_int_equal(tcp_lone_ready(st, c), !k->ooo_before);
    if (!keep)
        c->flags &= ~(uint32_t)TF_LONE;
    apply_event(t, p, c, k->ev);
    if (keep) {
        bool full = tcp_lone_full(st, c), mark = tcp_lone_ready(st, c);
        assert_int_equal(full, k->want_full);
        assert_int_equal(mark, k->want_mark);
        assert_true(!mark || full);
    }
    ooo_flag_agrees(c);
    tcp_input_done(st);
    th_poll(t);
    ooo_flag_agrees(c);
}

static void conn_norm(const struct tern_conn *c, struct tern_conn *out)
{
    memcpy(out, c, sizeof *out);
    out->sq_head = out->sq_tail = out->sq_cur = NULL;
    out->ooo_head = out->ooo_tail = NULL;
    out->user = NULL;
    out->flags &= ~(uint32_t)TF_LONE;
}

static void same_outcome(th *a, struct tern_conn *ca, th *b,
                         struct tern_conn *cb)
{
    assert_true(a->nout > 0 || ca->state != TERN_TCP_ESTABLISHED ||
                ca->snd_wnd < 64 || ca->cwnd < 64 || ca->mss < 64);
    assert_true(th_same_output(a, b));
    assert_memory_equal(a->st->ip_ids, b->st->ip_ids, sizeof a->st->ip_ids);
    static struct tern_conn na, nb;
    conn_norm(ca, &na);
    conn_norm(cb, &nb);
    assert_memory_equal(&na, &nb, sizeof na);
    assert_int_equal(ca->flags & TF_LONE, cb->flags & TF_LONE);
    for (tern_buf *qa = ca->sq_head, *qb = cb->sq_head; qa || qb;
         qa = bq_next(qa), qb = bq_next(qb)) {
        assert_true(qa && qb);
        assert_int_equal(qa->refs, qb->refs);
        assert_int_equal(qa->cb32, qb->cb32);
        assert_true(qa->cb[0] == qb->cb[0]);
        assert_true(qa->cb[1] == qb->cb[1]);
    }
}

static void lone_mark_events(void **s)
{
    (void)s;
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 29 + 3);
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
        const lone_case *k = &cases[n];
        th *a, *b;
        peer pa, pb;
        struct tern_conn *ca = twin(&a, &pa, k);
        struct tern_conn *cb = twin(&b, &pb, k);
        run_case(a, &pa, ca, k, true);
        run_case(b, &pb, cb, k, false);
        same_outcome(a, ca, b, cb);
        /* the mark never outlives the burst's output */
        assert_int_equal(ca->flags & TF_LONE, 0);
        tern_tcp_abort(a->st, ca);
        tern_tcp_abort(b->st, cb);
        assert_int_equal(th_free(a), 0);
        assert_int_equal(th_free(b), 0);
    }
}

/* Outside a burst the send goes out at once, through the mark. */
static void lone_mark_outside_burst(void **s)
{
    (void)s;
    const lone_case k = {EV_NONE, 64, false, true, true, false};
    th *t;
    peer p;
    struct tern_conn *c = twin(&t, &p, &k);
    assert_int_equal(tern_tcp_send(t->st, c, payload, 64), 64);
    th_poll(t);
    assert_int_equal(tp_count(t), 1);
    tpkt f;
    assert_true(tp_get(t, 0, &f));
    assert_int_equal(f.flags, F_ACK | F_PSH);
    assert_int_equal(f.len, 64);
    assert_memory_equal(f.data, payload, 64);
    assert_int_equal(c->flags & TF_LONE, 0);
    assert_int_equal(c->snd_max, c->snd_nxt);
    assert_null(c->sq_cur);
    tern_tcp_abort(t->st, c);
    assert_int_equal(th_free(t), 0);
}

/* TF_OOO follows the out-of-order queue through insert, pop and purge. */
static void ooo_flag_tracks_queue(void **s)
{
    (void)s;
    const lone_case k = {EV_NONE, 64, false, true, true, true};
    th *t;
    peer p;
    struct tern_conn *c = twin(&t, &p, &k);
    ooo_flag_agrees(c);
    assert_true(c->flags & TF_OOO);
    ooo_purge(t->st, c);
    assert_null(c->ooo_head);
    ooo_flag_agrees(c);
    tern_tcp_abort(t->st, c);
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lone_mark_events),
        cmocka_unit_test(lone_mark_outside_burst),
        cmocka_unit_test(ooo_flag_tracks_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
