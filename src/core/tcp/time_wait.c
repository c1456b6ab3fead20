/* time_wait.c - TIME_WAIT without a connection slot. A connection that
 * closes first (RFC 9293 3.10.7.4) leaves a 48-byte record: its tuple, the
 * sequence numbers after both FINs and its timestamp state (an IPv6
 * record's addresses take 32 bytes more, in tw6: a stack with IPv6 on
 * spends 80 bytes per record). The slot goes
 * back to the free list at once, so closed connections never crowd out new
 * ones. Records sit in a hash of their own (looked up only for segments no
 * connection claims) and on an age list: every record lives the same
 * time_wait_ms, so the oldest is always the next to expire (twr_poll pops
 * from its head, never walks) and the one recycled when the table is full
 * (counted in tcp_time_wait_recycled). */
#include "cc.h"

static uint32_t twr_bucket(const struct tcp_layer *tl, uint32_t raddr,
                          uint16_t rport, uint16_t lport)
{
    uint64_t x = (uint64_t)raddr << 32 | (uint32_t)rport << 16 | lport;
    return (uint32_t)(((x ^ tl->hk0) * tl->hk1) >> tl->tw_shift);
}

void twr_mem(struct tcp_layer *tl, uint32_t n, bool ip6, carve *cv)
{
    uint32_t hsize = 1;
    while (hsize < 2 * n)
        hsize <<= 1;
    tcp_tw *recs = carve_take(cv, (size_t)n * sizeof *recs, 64);
    uint32_t *hash = carve_take(cv, (size_t)hsize * sizeof *hash, 64);
    uint8_t(*a6)[32] = ip6 ? carve_take(cv, (size_t)n * 32, 8) : NULL;
    if (!tl)
        return;
    tl->tw = recs;
    tl->tw6 = a6;
    tl->tw_hash = hash;
    tl->tw_n = n;
    tl->tw_used = 0;
    tl->tw_shift = 64;
    for (uint32_t m = hsize; m > 1; m >>= 1)
        tl->tw_shift--;
    for (uint32_t i = 0; i < hsize; i++)
        hash[i] = TCP_NIL;
    tern_memset(recs, 0, (size_t)n * sizeof *recs);
    for (uint32_t i = 0; i < n; i++)
        recs[i].hnext = i + 1 < n ? i + 1 : TCP_NIL;
    tl->tw_free = n ? 0 : TCP_NIL;
    tl->tw_oldest = tl->tw_newest = TCP_NIL;
}

uint32_t twr_lookup(tern_stack *st, uint32_t raddr, uint16_t rport,
                   uint16_t lport)
{
    struct tcp_layer *tl = TL(st);
    if (!tl->tw_used)
        return TCP_NIL;
    uint32_t i = tl->tw_hash[twr_bucket(tl, raddr, rport, lport)];
    while (i != TCP_NIL) {
        const tcp_tw *r = &tl->tw[i];
        if (r->raddr == raddr && r->rport == rport && r->lport == lport)
            return i;
        i = r->hnext;
    }
    return TCP_NIL;
}

uint32_t twr_lookup6(tern_stack *st, const uint8_t *raddr6,
                     const uint8_t *laddr6, uint16_t rport, uint16_t lport)
{
    struct tcp_layer *tl = TL(st);
    if (!tl->tw_used || !tl->tw6)
        return TCP_NIL;
    uint32_t f = conn_fold6(tl, raddr6);
    uint32_t i = tl->tw_hash[twr_bucket(tl, f, rport, lport)];
    while (i != TCP_NIL) {
        const tcp_tw *r = &tl->tw[i];
        /* a fold is in 0/8: only IPv6 records carry one */
        if (r->raddr == f && r->rport == rport && r->lport == lport &&
            addr6_eq(tl->tw6[i], raddr6) && addr6_eq(tl->tw6[i] + 16, laddr6))
            return i;
        i = r->hnext;
    }
    return TCP_NIL;
}

static void age_unlink(struct tcp_layer *tl, tcp_tw *r)
{
    if (r->older != TCP_NIL)
        tl->tw[r->older].newer = r->newer;
    else
        tl->tw_oldest = r->newer;
    if (r->newer != TCP_NIL)
        tl->tw[r->newer].older = r->older;
    else
        tl->tw_newest = r->older;
}

/* File record i as the newest, expiring time_wait_ms from now. */
static void age_push(tern_stack *st, uint32_t i)
{
    struct tcp_layer *tl = TL(st);
    tcp_tw *r = &tl->tw[i];
    r->expire = st->now + tl->time_wait_ns;
    r->newer = TCP_NIL;
    r->older = tl->tw_newest;
    if (tl->tw_newest != TCP_NIL)
        tl->tw[tl->tw_newest].newer = i;
    else
        tl->tw_oldest = i;
    tl->tw_newest = i;
}

static void twr_remove(struct tcp_layer *tl, uint32_t i)
{
    tcp_tw *r = &tl->tw[i];
    uint32_t *pp = &tl->tw_hash[twr_bucket(tl, r->raddr, r->rport, r->lport)];
    while (*pp != i)
        pp = &tl->tw[*pp].hnext;
    *pp = r->hnext;
    age_unlink(tl, r);
    r->raddr = 0;
    r->rport = r->lport = 0;
    r->hnext = tl->tw_free;
    tl->tw_free = i;
    tl->tw_used--;
}

void twr_enter(tern_stack *st, const struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    if (!tl->tw_n || ((c->flags & TF_V6) && !tl->tw6))
        return;
    if (tl->tw_free == TCP_NIL) {         /* full: the oldest makes room */
        CTR(st, tcp_time_wait_recycled);
        twr_remove(tl, tl->tw_oldest);
    }
    uint32_t i = tl->tw_free;
    tcp_tw *r = &tl->tw[i];
    tl->tw_free = r->hnext;
    r->raddr = c->raddr;
    r->rport = c->rport;
    r->lport = c->lport;
    r->snd_nxt = c->snd_max;
    r->rcv_nxt = c->rcv_nxt;
    r->ts_recent = c->ts_recent;
    r->ts_off = c->ts_off;
    r->ts = (c->flags & TF_TS) != 0;
    r->rcv_ws = c->rcv_ws;
    r->v6 = (c->flags & TF_V6) != 0;
    if (r->v6) {
        tern_memcpy(tl->tw6[i], c->raddr6, 16);
        tern_memcpy(tl->tw6[i] + 16, c->laddr6, 16);
    }
    uint32_t h = twr_bucket(tl, r->raddr, r->rport, r->lport);
    r->hnext = tl->tw_hash[h];
    tl->tw_hash[h] = i;
    tl->tw_used++;
    age_push(st, i);
}

/* The record's ACK: what the conn would have sent in TIME_WAIT. */
static void twr_ack(tern_stack *st, const tcp_tw *r)
{
    struct tcp_layer *tl = TL(st);
    struct tern_conn v;
    tern_memset(&v, 0, sizeof v);
    if (r->v6) {
        const uint8_t *a = tl->tw6[r - tl->tw];
        tern_memcpy(v.raddr6, a, 16);
        tern_memcpy(v.laddr6, a + 16, 16);
        v.flow6 = tcp_flow_label(st, v.laddr6, r->lport, v.raddr6, r->rport);
    }
    v.raddr = r->raddr;
    v.rport = r->rport;
    v.lport = r->lport;
    v.state = TERN_TCP_TIME_WAIT;
    v.rcv_nxt = v.rcv_adv = r->rcv_nxt;
    v.ts_recent = r->ts_recent;
    v.ts_off = r->ts_off;
    v.flags = (r->ts ? TF_TS : 0) | (r->v6 ? TF_V6 : 0);
    v.rcv_ws = r->rcv_ws;
    v.rcv_mss = conn_our_mss(tl, &v);
    CTR(st, tcp_time_wait_acks);
    CTR(st, tcp_pure_acks_out);
    tcp_send_view(st, &v, r->snd_nxt, TCP_ACK);
}

/* RFC 6191: a SYN may open a new incarnation of the tuple when it is
 * newer than the old one: a timestamp above the last one seen, or an ISN
 * above rcv_nxt. As Linux does, either will do unless the timestamp is
 * older (PAWS): a client that reconnects from the same port within one
 * tick of its timestamp clock sends the same TSval, with a new ISN. */
static bool syn_acceptable(const tcp_tw *r, const tcp_seg *s)
{
    bool ts = r->ts && (s->o.has & OPT_TS);
    if (ts && seq_lt(s->o.tsval, r->ts_recent))
        return false;
    return seq_gt(s->seq, r->rcv_nxt) ||
           (ts && seq_gt(s->o.tsval, r->ts_recent));
}

void twr_input(tern_stack *st, uint32_t i, tcp_seg *s, struct tcp_listener *l)
{
    struct tcp_layer *tl = TL(st);
    tcp_tw *r = &tl->tw[i];
    uint8_t fl = s->flags;
    if (fl & TCP_RST) {
        /* an exact RST ends TIME_WAIT early (as Linux does); others are
         * ignored, never answered */
        if (s->seq == r->rcv_nxt)
            twr_remove(tl, i);
        return;
    }
    if ((fl & TCP_SYN) && !(fl & TCP_ACK)) {
        if (l && syn_acceptable(r, s)) {
            CTR(st, tcp_time_wait_reuse);
            twr_remove(tl, i);
            tcp_input_listen(st, s, l);
            return;
        }
        twr_ack(st, r);
        return;
    }
    bool paws = r->ts && (s->o.has & OPT_TS) &&
                seq_lt(s->o.tsval, r->ts_recent);
    if (!paws && (fl & TCP_FIN) && s->seq + s->len + 1 == r->rcv_nxt) {
        /* the peer's FIN again: our last ACK was lost; answer and restart
         * the 2 MSL wait (RFC 9293) as the newest record */
        if (r->ts && (s->o.has & OPT_TS))
            r->ts_recent = s->o.tsval;
        age_unlink(tl, r);
        age_push(st, i);
        twr_ack(st, r);
        return;
    }
    /* an old duplicate or stray data: ACK it, as the conn would; a bare
     * ACK at rcv_nxt needs no answer */
    if (paws || s->len || (fl & (TCP_FIN | TCP_SYN)) || s->seq != r->rcv_nxt)
        twr_ack(st, r);
}

uint64_t twr_poll(tern_stack *st, uint64_t now)
{
    struct tcp_layer *tl = TL(st);
    while (tl->tw_oldest != TCP_NIL) {
        const tcp_tw *r = &tl->tw[tl->tw_oldest];
        if (r->expire > now)
            return r->expire;
        twr_remove(tl, tl->tw_oldest);
    }
    return TERN_NEVER;
}

uint32_t twr_count(const struct tcp_layer *tl) { return tl->tw_used; }

void twr_forget(tern_stack *st, const struct tern_conn *c)
{
    uint32_t i = (c->flags & TF_V6) ? twr_lookup6(st, c->raddr6, c->laddr6,
                                                  c->rport, c->lport)
                                    : twr_lookup(st, c->raddr, c->rport,
                                                 c->lport);
    if (i != TCP_NIL) {
        CTR(st, tcp_time_wait_reuse);
        twr_remove(TL(st), i);
    }
}

void tcp_enter_time_wait(tern_stack *st, struct tern_conn *c)
{
    /* the ACK of the peer's FIN, which the end of the burst would have
     * sent had the conn stayed */
    if (c->flags & (TF_ACK_NOW | TF_ACK_DELAYED))
        tcp_send_ack(st, c);
    conn_set_state(st, c, TERN_TCP_TIME_WAIT);
    uint32_t gen = c->gen;
    conn_notify_closed(st, c, TERN_CLOSE_NORMAL);
    if (c->gen != gen)
        return;
    twr_enter(st, c);
    conn_free(st, c);
}

uint32_t tern_tcp_time_wait_count(const tern_stack *st)
{
    return st->tcp ? twr_count(st->tcp) : 0;
}
