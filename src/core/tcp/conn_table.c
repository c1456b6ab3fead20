/* conn_table.c - the TCP layer's memory, the connection table (a fixed
 * array, a LIFO free list, a keyed hash of the 4-tuple with chains through
 * indices), listeners and the end-of-burst pending list. */
#include "cc.h"

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static void tcp_config(struct tcp_layer *tl, const tern_config *cfg)
{
    tl->rcv_buf = cfg->rcv_buf ? cfg->rcv_buf : DEF_SOCK_BUF;
    if (tl->rcv_buf > (1u << 30))
        tl->rcv_buf = 1u << 30;
    if (tl->rcv_buf < 1024)
        tl->rcv_buf = 1024;
    tl->snd_buf = cfg->snd_buf ? cfg->snd_buf : DEF_SOCK_BUF;
    tl->ooo_max = cfg->ooo_max_segs ? cfg->ooo_max_segs : DEF_OOO_SEGS;
    /* half of a pool the stack can see, so the segment that fills a gap
     * always finds a buffer */
    const tern_buf_stack *pool = cfg->buf_ops.stack;
    tl->blk_head = tl->blk_tail = TCP_NIL;
    tl->ooo_bufs_max = cfg->ooo_max_bufs   ? cfg->ooo_max_bufs
                       : pool && pool->cap ? pool->cap / 2
                                           : UINT32_MAX;
    tl->rto_min_ms = cfg->rto_min_ms ? cfg->rto_min_ms : DEF_RTO_MIN_MS;
    tl->rto_max_ms = cfg->rto_max_ms ? cfg->rto_max_ms : DEF_RTO_MAX_MS;
    tl->rto_init_ms = cfg->rto_initial_ms ? cfg->rto_initial_ms
                                         : DEF_RTO_INITIAL_MS;
    if (tl->rto_init_ms > tl->rto_max_ms)       /* as every later RTO */
        tl->rto_init_ms = tl->rto_max_ms;
    tl->rto_floor_us = (uint64_t)tl->rto_min_ms * 1000;
    tl->rto_floor_ms = tl->rto_min_ms < tl->rto_max_ms ? tl->rto_min_ms
                                                        : tl->rto_max_ms;
    tl->max_retries = cfg->max_retries ? cfg->max_retries : DEF_MAX_RETRIES;
    tl->syn_retries = cfg->syn_retries ? cfg->syn_retries : DEF_SYN_RETRIES;
    tl->delack_ns = ms_ns(cfg->delack_ms ? cfg->delack_ms : DEF_DELACK_MS);
    tl->keepalive_ns = ms_ns(cfg->keepalive_ms);
    tl->time_wait_ns = ms_ns(cfg->time_wait_ms ? cfg->time_wait_ms
                                            : DEF_TIME_WAIT_MS);
    uint32_t mtu = cfg->mtu ? cfg->mtu : DEF_MTU;
    tl->our_mss = (uint16_t)(mtu - IP4_HDR_LEN - TCP_HDR_LEN);
    tl->our_mss6 = (uint16_t)max_u32(mtu - TCP6_HDRS, TCP6_MSS_MIN);
    tl->sack = !cfg->no_sack;
    tl->ts = !cfg->no_timestamps;
    tl->ws = !cfg->no_window_scale;
    tl->nagle = cfg->nagle;
    tl->delack = !cfg->no_delayed_ack;
    uint8_t ws = 0;
    while (ws < TCP_MAX_WS && (65535u << ws) < tl->rcv_buf)
        ws++;
    tl->rcv_ws = tl->ws ? ws : 0;
    if (!tl->ws && tl->rcv_buf > 65535)
        tl->rcv_buf = 65535;
    /* Inside a full input burst (rx_burst frames: the flight spans
     * bursts) the receiver ACKs every quarter window (so a lost ACK leaves
     * the sender three more per window), and at least every 64 KiB, as a
     * GRO receiver ACKs each aggregate; not below two full segments (RFC
     * 5681 4.2's floor). Inside a shorter one, every 4 full segments. See
     * ack_policy (input_estab.c). */
    tl->ack_stretch = max_u32(min_u32(tl->rcv_buf / 4, TCP_ACK_STRETCH_MAX),
                              2u * tl->our_mss);
    /* a full segment's payload: the MSS less the timestamp option */
    tl->short_stretch = TCP_ACK_STRETCH_SEGS *
                        (uint32_t)(tl->our_mss - (tl->ts ? TCP_TS_LEN : 0));
    tl->burst_stretch = tl->short_stretch;
    tl->cc = cfg->cc == TERN_CC_NEWRENO ? &tcp_cc_newreno
             : cfg->cc == TERN_CC_BBR   ? &tcp_cc_bbr
                                        : &tcp_cc_cubic;
    tl->cc_model = tl->cc->on_delivery != NULL;
    tl->tfo_server = cfg->tfo_server;
    tl->tfo_max_pending = cfg->tfo_max_pending ? cfg->tfo_max_pending
                                               : DEF_TFO_PENDING;
}

void tcp_mem(tern_stack *st, const tern_config *cfg, carve *cv)
{
    uint32_t n = cfg->max_conns ? cfg->max_conns : 1024;
    uint32_t nl = cfg->max_listeners ? cfg->max_listeners : 16;
    uint32_t ntw = cfg->max_time_wait ? cfg->max_time_wait : n;
    uint32_t hsize = pow2_at_least(n * 2);
    bool ip6 = cfg->n_ip6 || cfg->ip6_enable;
    struct tcp_layer *tl = carve_take(cv, sizeof *tl, 64);
    struct tern_conn *conns = carve_take(cv, (size_t)n * sizeof *conns, 64);
    uint32_t *hash = carve_take(cv, (size_t)hsize * sizeof *hash, 64);
    struct tcp_listener *lis = carve_take(cv, (size_t)nl * sizeof *lis, 8);
    /* a model-based controller's state, only when it is configured */
    struct tcp_bbr *bbr = cfg->cc == TERN_CC_BBR
                              ? carve_take(cv, (size_t)n * sizeof *bbr, 64)
                              : NULL;
    if (!st || !cv->base) {
        twr_mem(NULL, ntw, ip6, cv);
        tfo_mem(NULL, cfg, cv);
        return;
    }
    tern_memset(tl, 0, sizeof *tl);
    st->tcp = tl;
    tcp_config(tl, cfg);
    tl->conns = conns;
    tl->bbr = bbr;
    tl->nconns = n;
    tl->hash = hash;
    tl->hash_shift = 64;
    for (uint32_t m = hsize; m > 1; m >>= 1)
        tl->hash_shift--;
    tl->lis = lis;
    tl->nlis = nl;
    tern_memset(lis, 0, (size_t)nl * sizeof *lis);
    for (uint32_t i = 0; i < hsize; i++)
        hash[i] = TCP_NIL;
    tern_memset(conns, 0, (size_t)n * sizeof *conns);
    for (uint32_t i = 0; i < n; i++) {
        conns[i].idx = i;
        conns[i].hnext = i + 1 < n ? i + 1 : TCP_NIL;
    }
    tl->free_head = 0;
    tl->pend_head = NULL;
    uint64_t k = tern_siphash(cfg->secret, (const uint8_t *)"tern-tcp-hash", 13);
    tl->hk0 = k;
    tl->hk1 = (k * 0x9e3779b97f4a7c15ull) | 1;
    tl->port_next = (uint32_t)(k >> 32);
    for (int i = 0; i < 4; i++)
        tl->hk6[i] = tern_siphash(cfg->secret, (const uint8_t *)"tern-fold6-key",
                                  11 + (size_t)i) | (i & 1);  /* odd factors */
    tl->chack_tokens = 1000;
    tw_init(tl, st->now);
    twr_mem(tl, ntw, ip6, cv);    /* after the keys: it hashes with them */
    tfo_mem(tl, cfg, cv);
}

struct tern_conn *conn_alloc(tern_stack *st, uint32_t raddr, uint16_t rport,
                             uint16_t lport)
{
    struct tcp_layer *tl = TL(st);
    if (tl->free_head == TCP_NIL)
        return NULL;
    struct tern_conn *c = &tl->conns[tl->free_head];
    tl->free_head = c->hnext;
    /* a freed conn may still sit on the pending list: keep its link */
    uint32_t keep = c->flags & TF_PENDING;
    struct tern_conn *pn = c->pend_next;
    uint32_t gen = c->gen, idx = c->idx;
    tern_memset(c, 0, sizeof *c);
    c->flags = keep;
    c->pend_next = pn;
    c->gen = gen;
    c->idx = idx;
    c->raddr = raddr;
    c->rport = rport;
    c->lport = lport;
    c->t_rtx = c->t_ack = c->t_wheel = TERN_NEVER;
    c->w_prev = c->w_next = TCP_NIL;
    c->mss = TCP_MSS_DEFAULT;
    c->rcv_ws = tl->rcv_ws;
    c->last_rcv = st->now;
    uint32_t h = conn_hash(tl, raddr, rport, lport);
    c->hnext = tl->hash[h];
    tl->hash[h] = idx;
    tl->used++;
    rtt_init(st, c);
    tl->cc->init(c);
    if (tl->cc->attach)
        tl->cc->attach(st, c);
    return c;
}

struct tern_conn *conn_alloc6(tern_stack *st, const uint8_t raddr6[16],
                              const uint8_t laddr6[16], uint16_t rport,
                              uint16_t lport)
{
    struct tern_conn *c = conn_alloc(st, conn_fold6(TL(st), raddr6), rport,
                                     lport);
    if (!c)
        return NULL;
    c->flags |= TF_V6;
    tern_memcpy(c->raddr6, raddr6, 16);
    tern_memcpy(c->laddr6, laddr6, 16);
    c->flow6 = tcp_flow_label(st, laddr6, lport, raddr6, rport);
    return c;
}

static void release_chain(tern_stack *st, tern_buf *b)
{
    while (b) {
        tern_buf *n = bq_next(b);
        sq_put(st, b);
        b = n;
    }
}

void conn_free(tern_stack *st, struct tern_conn *c)
{
    struct tcp_layer *tl = TL(st);
    if (c->state == TERN_TCP_CLOSED && !c->raddr && !c->rport)
        return;
    uint32_t *pp = &tl->hash[conn_hash(tl, c->raddr, c->rport, c->lport)];
    while (*pp != TCP_NIL && *pp != c->idx)
        pp = &tl->conns[*pp].hnext;
    if (*pp == c->idx)
        *pp = c->hnext;
    tw_cancel(tl, c);
    release_chain(st, c->sq_head);
    c->sq_head = c->sq_tail = c->sq_cur = NULL;
    ooo_purge(st, c);
    if (c->flags & TF_BLOCKED)
        tcp_send_unblock(tl, c);
    if (c->flags & TF_HALF_OPEN)
        tl->half_open--;
    if (c->tfo & TFO_PENDING)
        tl->tfo_pending--;
    c->tfo = 0;
    if (c->flags & TF_WAS_EST)
        CTR(st, tcp_conns_closed);
    c->flags &= TF_PENDING;
    c->state = TERN_TCP_CLOSED;
    c->raddr = 0;
    c->rport = c->lport = 0;
    c->user = NULL;
    c->gen++;
    c->hnext = tl->free_head;
    tl->free_head = c->idx;
    tl->used--;
}

void conn_notify_closed(tern_stack *st, struct tern_conn *c, int reason)
{
    if ((c->flags & (TF_APP | TF_CLOSED_CB)) != TF_APP)
        return;
    c->flags |= TF_CLOSED_CB;
    if (st->cfg.cb.closed)
        st->cfg.cb.closed(st, c, c->user, reason);
}

void conn_close(tern_stack *st, struct tern_conn *c, int reason)
{
    uint32_t gen = c->gen;
    conn_notify_closed(st, c, reason);
    if (c->gen == gen)
        conn_free(st, c);
}

void conn_set_state(tern_stack *st, struct tern_conn *c, uint8_t state)
{
    if ((c->flags & TF_HALF_OPEN) && state != TERN_TCP_SYN_RECEIVED) {
        c->flags &= ~(uint32_t)TF_HALF_OPEN;
        TL(st)->half_open--;
    }
    if ((c->tfo & TFO_PENDING) && state != TERN_TCP_SYN_RECEIVED) {
        c->tfo &= (uint8_t)~TFO_PENDING;
        TL(st)->tfo_pending--;
    }
    c->flags &= ~(uint32_t)TF_LONE;  /* the mark holds for ESTABLISHED */
    c->state = state;
}

struct tcp_listener *listener_find(tern_stack *st, uint16_t port)
{
    struct tcp_layer *tl = TL(st);
    for (uint32_t i = 0; i < tl->nlis; i++)
        if (tl->lis[i].port == port)
            return &tl->lis[i];
    return NULL;
}

void tcp_fini(tern_stack *st)
{
    struct tcp_layer *tl = TL(st);
    if (!tl)
        return;
    for (uint32_t i = 0; i < tl->nconns; i++)
        if (tl->conns[i].state != TERN_TCP_CLOSED || tl->conns[i].raddr)
            conn_free(st, &tl->conns[i]);
}

/* Called by the first tern_input/tern_poll, with st->now still the old
 * time: move every deadline and time stamp by shift and re-file the wheel
 * at the new time. The TSval offset absorbs the jump so the timestamps we
 * already sent (the SYN's) stay in sequence with the next ones, and the
 * peer's echo of them still measures the real round trip. */
void tcp_clock_start(tern_stack *st, uint64_t shift)
{
    struct tcp_layer *tl = TL(st);
    if (!tl)
        return;
    uint32_t ticks = ts_now(st->now + shift) - ts_now(st->now);
    for (uint32_t i = 0; i < tl->nconns; i++) {
        struct tern_conn *c = &tl->conns[i];
        c->flags &= ~(uint32_t)TF_IN_WHEEL;     /* the wheel is rebuilt */
        if (c->state == TERN_TCP_CLOSED)
            continue;
        if (c->t_rtx != TERN_NEVER)
            c->t_rtx += shift;
        if (c->t_ack != TERN_NEVER)
            c->t_ack += shift;
        if (c->rtt_at)
            c->rtt_at += shift;
        c->last_rcv += shift;
        c->ts_off -= ticks;
    }
    tw_init(tl, st->now + shift);
    for (uint32_t i = 0; i < tl->nconns; i++)
        if (tl->conns[i].state != TERN_TCP_CLOSED)
            conn_timer_update(st, &tl->conns[i]);
}
