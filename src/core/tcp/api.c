/* api.c - the public tern_tcp_* functions. Sends made inside tern_input
 * (from callbacks) are deferred to the end of the burst, so several sends
 * coalesce and the pending ACK rides on the data; outside it they go out at
 * once (queued until tern_flush / the next input or poll). */
#include "cc.h"

#if defined(__GNUC__)
#define OUT_OF_LINE __attribute__((noinline))
#else
#define OUT_OF_LINE
#endif

static bool alive(const struct tern_conn *c)
{
    return c && c->state != TERN_TCP_CLOSED && !(c->flags & TF_CLOSED_CB);
}

static void kick(tern_stack *st, struct tern_conn *c, uint32_t why)
{
    if (TL(st)->in_input) {
        conn_pend(st, c, why);
        return;
    }
    c->flags |= why & TF_LONE;
    if (why & TF_OUTPUT)
        tcp_output(st, c);
    if (why & TF_WND_UPDATE)
        tcp_send_ack(st, c);
}

int tern_tcp_listen(tern_stack *st, uint16_t port, void *user)
{
    if (!port)
        return -TERN_EINVAL;
    if (listener_find(st, port))
        return -TERN_EADDRINUSE;
    struct tcp_listener *l = listener_find(st, 0);
    if (!l)
        return -TERN_ENOMEM;
    l->port = port;
    l->user = user;
    return 0;
}

int tern_tcp_unlisten(tern_stack *st, uint16_t port)
{
    struct tcp_listener *l = port ? listener_find(st, port) : NULL;
    if (!l)
        return -TERN_EINVAL;
    l->port = 0;
    l->user = NULL;
    return 0;
}

/* The tests of an active open's destination and local port: 0 or the
 * tern_err. src6: our address towards an IPv6 destination. A destination
 * whose replies the receive path drops could only time out: refused with
 * the same tests (ip4_src_ok; ip6_unicast_ok). */
static int connect_check(tern_stack *st, const tern_addr *dst,
                         uint16_t dst_port, uint16_t local_port,
                         uint8_t src6[16])
{
    if (!dst || !dst_port)
        return TERN_EINVAL;
    if (dst->family == TERN_AF_INET6) {
        const uint8_t *ip6 = dst->u.v6;
        if (!st->ip6)
            return TERN_EAFNOSUPPORT;
        if (!ip6_unicast_ok(ip6) || ip6_is_local(st, ip6) ||
            ip6_src_for(st, ip6, src6) != 0)
            return TERN_EINVAL;
        if (local_port &&
            conn_lookup6(st, ip6, src6, (uint32_t)dst_port << 16 | local_port))
            return TERN_EADDRINUSE;
    } else if (dst->family == TERN_AF_INET) {
        uint32_t ip = dst->u.v4;
        if (!st->cfg.ip)
            return TERN_EAFNOSUPPORT;
        if (!ip4_src_ok(st, ip) || (!ip4_is_local(st, ip) && !st->cfg.gateway))
            return TERN_EINVAL;
        if (local_port && conn_lookup(st, ip, dst_port, local_port))
            return TERN_EADDRINUSE;
    } else {
        return TERN_EINVAL;
    }
    return TL(st)->free_head == TCP_NIL ? TERN_ENOMEM : 0;
}

/* A conn in SYN_SENT for tern_tcp_connect and tern_tcp_connect_data,
 * its SYN not sent yet; NULL with *err set. */
static struct tern_conn *active_open(tern_stack *st, const tern_addr *dst,
                                     uint16_t dst_port, uint16_t local_port,
                                     void *user, int *err)
{
    struct tcp_layer *tl = TL(st);
    uint8_t src6[16] = {0};
    struct tern_conn *c = NULL;
    int e = connect_check(st, dst, dst_port, local_port, src6);
    if (!e) {
        bool v6 = dst->family == TERN_AF_INET6;
        uint32_t ip = v6 ? 0 : dst->u.v4;
        const uint8_t *ip6 = v6 ? dst->u.v6 : NULL;
        uint16_t port = local_port ? local_port
                                   : tcp_pick_port(st, ip, dst_port, ip6, src6);
        if (!port)
            e = TERN_EADDRINUSE;
        else if (!(c = v6 ? conn_alloc6(st, ip6, src6, dst_port, port)
                          : conn_alloc(st, ip, dst_port, port)))
            e = TERN_ENOMEM;
        /* a port asked for by number may end its own TIME_WAIT: our new
         * ISN and timestamps run ahead of the old ones (RFC 6191) */
        else if (local_port)
            twr_forget(st, c);
    }
    if (err)
        *err = e;
    if (!c)
        return NULL;
    c->user = user;
    c->flags |= TF_APP;
    c->iss = (c->flags & TF_V6)
                 ? tcp_isn6(st, c->laddr6, c->lport, c->raddr6, c->rport,
                            st->now)
                 : tcp_isn(st, st->cfg.ip, c->lport, c->raddr, c->rport,
                           st->now);
    c->snd_una = c->snd_nxt = c->snd_max = c->iss;
    c->sq_end = c->iss + 1;
    c->recover = c->iss;
    c->ts_off = c->iss * HASH_MUL32;
    c->rcv_mss = conn_our_mss(tl, c);
    conn_set_state(st, c, TERN_TCP_SYN_SENT);
    CTR(st, tcp_active_opens);
    return c;
}

/* The first SYN of an active open, and its timer. */
static void send_first_syn(tern_stack *st, struct tern_conn *c)
{
    c->rtt_at = st->now;
    tcp_send_syn(st, c);
    tcp_arm_rto(st, c);
}

tern_conn *tern_tcp_connect(tern_stack *st, const tern_addr *dst,
                            uint16_t dst_port, uint16_t local_port, void *user,
                            int *err)
{
    struct tern_conn *c = active_open(st, dst, dst_port, local_port, user,
                                      err);
    if (c)
        send_first_syn(st, c);
    return c;
}

/* Alive, no FIN queued, and in a state that takes data: one mask test. */
#define QUEUE_STATES                                                        \
    (1u << TERN_TCP_ESTABLISHED | 1u << TERN_TCP_CLOSE_WAIT |               \
     1u << TERN_TCP_SYN_SENT | 1u << TERN_TCP_SYN_RECEIVED)
static bool can_queue(const struct tern_conn *c)
{
    return c && !(c->flags & (TF_CLOSED_CB | TF_FIN_QUEUED)) &&
           ((QUEUE_STATES >> c->state) & 1u);
}

static uint32_t queued(const struct tern_conn *c)
{
    return c->sq_head ? c->sq_end - bq_seq(c->sq_head) : 0;
}

/* Send buffer room of a conn that can_queue. */
static uint32_t room_of(const struct tcp_layer *tl, const struct tern_conn *c)
{
    uint32_t q = queued(c);
    return q < tl->snd_buf ? tl->snd_buf - q : 0;
}

size_t tern_tcp_send_space(const tern_stack *st, const tern_conn *c)
{
    return can_queue(c) ? room_of(st->tcp, c) : 0;
}

/* Bytes of payload a queue buffer may hold: one segment, so it can leave
 * in place. */
static uint32_t buf_cap(const struct tern_conn *c, const tern_buf *b)
{
    uint32_t room = b->size - (uint32_t)(bq_data(b) - b->head);
    return room < c->mss ? room : c->mss;
}

/* The same for a fresh buffer, whose payload will start at b->data (its
 * cb[1] is still the previous owner's). */
static inline uint32_t fresh_cap(const struct tern_conn *c, const tern_buf *b)
{
    uint32_t room = b->size - (uint32_t)(b->data - b->head);
    return room < c->mss ? room : c->mss;
}

static void sq_append(struct tern_conn *c, tern_buf *b)
{
    bq_set_next(b, NULL);
    if (c->sq_tail)
        bq_set_next(c->sq_tail, b);
    else
        c->sq_head = b;
    c->sq_tail = b;
    if (!c->sq_cur && seq_ge(c->snd_nxt, bq_seq(b)))
        c->sq_cur = b;
}

/* Copy n bytes to payload offset `at` of queue buffer b. Unless the NIC
 * does the checksum, the payload sum is taken in the same pass and kept in
 * cb[1] (send_data then never reads the payload again): a sum of bytes
 * starting at an odd offset is byte-swapped before it is added. */
static inline void sq_copy_in(tern_stack *st, tern_buf *b, uint32_t at,
                              const uint8_t *src, uint32_t n)
{
    uint8_t *dst = bq_data(b) + at;
    bool valid = at == 0 || (b->cb[1] & BQ_CSUM_OK);
    if ((st->cfg.caps & TERN_CAP_TX_L4_CSUM) || !valid) {
        tern_memcpy(dst, src, n);
        b->cb[1] &= ~(BQ_CSUM_OK | (0xffffull << 32));
        return;
    }
    uint32_t s = tern_csum_copy(dst, src, n, 0);
    if (at & 1)
        s = ((s & 0xff) << 8) | (s >> 8);
    if (at)
        s = csum_fold64((uint64_t)s + ((b->cb[1] >> 32) & 0xffff));
    b->cb[1] = (b->cb[1] & 0xffffffffu) | BQ_CSUM_OK | (uint64_t)s << 32;
}

/* ---- the receive reserve: pool buffers that sends leave to input ---- */

/* c's send was refused for the reserve or an empty pool: put it on the
 * wait list, whose conns cb.writable calls back once there is room. */
static OUT_OF_LINE void send_block(struct tcp_layer *tl,
                                     struct tern_conn *c)
{
    if (c->flags & TF_BLOCKED)
        return;
    c->flags |= TF_BLOCKED;
    c->blk_next = TCP_NIL;
    c->blk_prev = tl->blk_tail;
    if (tl->blk_tail != TCP_NIL)
        tl->conns[tl->blk_tail].blk_next = c->idx;
    else
        tl->blk_head = c->idx;
    tl->blk_tail = c->idx;
}

void tcp_send_unblock(struct tcp_layer *tl, struct tern_conn *c)
{
    if (c->blk_prev != TCP_NIL)
        tl->conns[c->blk_prev].blk_next = c->blk_next;
    else
        tl->blk_head = c->blk_next;
    if (c->blk_next != TCP_NIL)
        tl->conns[c->blk_next].blk_prev = c->blk_prev;
    else
        tl->blk_tail = c->blk_prev;
    c->flags &= ~(uint32_t)TF_BLOCKED;
}

/* Whether any send may take a pool buffer: the pool's LIFO holds at least
 * twice the reserve (send_floor; always so without a LIFO, where both are
 * 0). Below that the pool is under pressure (sq_low_room). */
static inline bool send_room_ok(const tern_stack *st)
{
    return st->cfg.buf_ops.stack->top >= st->send_floor;
}

void tcp_send_wake(tern_stack *st)
{
    struct tcp_layer *tl = TL(st);
    /* oldest first; a conn that blocks again in its callback goes to the
     * back, so each runs at most once a call */
    uint32_t n = 0;
    for (uint32_t i = tl->blk_head; i != TCP_NIL; i = tl->conns[i].blk_next)
        n++;
    while (n-- && tl->blk_head != TCP_NIL && send_room_ok(st)) {
        struct tern_conn *c = &tl->conns[tl->blk_head];
        tcp_send_unblock(tl, c);
        if (st->cfg.cb.writable && alive(c) && (c->flags & TF_APP)) {
            CTR(st, tcp_writable_calls);
            st->cfg.cb.writable(st, c, c->user);
        }
    }
}

/* No queue buffer for c: count why (ctr), and c waits for cb.writable.
 * Returns NULL. Out of line: the usual send never comes here. */
static OUT_OF_LINE tern_buf *sq_refused(tern_stack *st, struct tern_conn *c,
                                        uint64_t *ctr)
{
    (*ctr)++;
    send_block(TL(st), c);
    return NULL;
}

/* Queued bytes up to which a conn may still take buffers while the pool
 * is under pressure: a new or quiet conn (a request's response) is served
 * while the conns with long queues (slow readers) wait. */
#define SQ_SMALL 16384u

/* The pool under pressure (below twice the reserve): the reserve itself
 * is input's, and the room above it goes to conns with short queues. */
static OUT_OF_LINE bool sq_low_room(const tern_stack *st,
                                    const struct tern_conn *c)
{
    return st->cfg.buf_ops.stack->top >= st->cfg.rx_reserve_bufs &&
           queued(c) < SQ_SMALL;
}

/* A fresh buffer for the send queue of c, with room for the headers;
 * NULL (counted; c then waits for cb.writable) when the pool is under
 * pressure and c may not take one (sq_low_room), or when it is empty.
 * Without a pool LIFO, top and the reserve are both 0 and the test never
 * refuses. */
static inline tern_buf *sq_buf_alloc(tern_stack *st, struct tern_conn *c)
{
    if (!send_room_ok(st) && !sq_low_room(st, c))
        return sq_refused(st, c, &st->ctr.tcp_send_rx_reserve);
    tern_buf *b = buf_alloc(st);
    if (b && (b->data - b->head < TCP_MAX_HDRS || b->frag)) {
        tern_buf_release(st, b);
        b = NULL;
    }
    if (!b)
        return sq_refused(st, c, &st->ctr.tcp_nobuf);
    return b;
}

/* Put n bytes from src (n <= fresh_cap) at the data of the fresh buffer b
 * and append it to the queue: sq_copy_in's work for offset 0, with the
 * queue fields written once. empty: the queue has no buffer (then it has
 * no tail and no sq_cur either). */
static inline void sq_push(tern_stack *st, struct tern_conn *c, tern_buf *b,
                           const uint8_t *src, uint32_t n, bool empty)
{
    uint32_t seq = c->sq_end;
    b->cb[0] = (uint64_t)seq | (uint64_t)n << 32;
    b->len = n;
    if (empty) {
        /* sq_append's work on an empty queue (no tail, no sq_cur) */
        bq_set_next(b, NULL);
        c->sq_head = c->sq_tail = b;
        if (seq_ge(c->snd_nxt, seq))
            c->sq_cur = b;
    } else {
        sq_append(c, b);
    }
    c->sq_end = seq + n;
    /* the copy last: only b lives across it (the offset is taken again) */
    uint64_t sum_bits = 0;
    if (st->cfg.caps & TERN_CAP_TX_L4_CSUM)
        tern_memcpy(b->data, src, n);
    else
        sum_bits = BQ_CSUM_OK |
                   (uint64_t)tern_csum_copy(b->data, src, n, 0) << 32;
    b->cb[1] = (uint32_t)(b->data - b->head) | sum_bits;
}

/* Any send: coalesce into the unsent tail, then fresh buffers as far as
 * the send buffer and the pool allow. */
static OUT_OF_LINE long send_queue(tern_stack *st, struct tern_conn *c,
                                   const uint8_t *src, size_t len)
{
    if (!can_queue(c))
        return -TERN_ENOTCONN;
    size_t space = room_of(TL(st), c);
    size_t left = len < space ? len : space, taken = 0;
    tern_buf *t = c->sq_tail;
    if (left && t && t->refs == 1 && seq_ge(bq_seq(t), c->snd_max) &&
        bq_len(t) < buf_cap(c, t)) {
        /* coalesce into the unsent tail */
        uint32_t n = buf_cap(c, t) - bq_len(t);
        if (n > left)
            n = (uint32_t)left;
        sq_copy_in(st, t, bq_len(t), src, n);
        t->cb[0] += (uint64_t)n << 32;
        c->sq_end += n;
        taken += n;
    }
    while (taken < left) {
        tern_buf *b = sq_buf_alloc(st, c);
        if (!b)
            break;
        uint32_t n = fresh_cap(c, b);
        if (n > left - taken)
            n = (uint32_t)(left - taken);
        sq_push(st, c, b, src + taken, n, false);
        taken += n;
    }
    if (taken)
        kick(st, c, TF_OUTPUT);
    if (!taken && left)
        return -TERN_ENOBUFS;
    return (long)taken;
}

/* The request/response case: an ESTABLISHED conn with nothing queued, and
 * at most one segment of data that fits the send buffer. */
static inline bool one_buf_case(const tern_stack *st,
                                const struct tern_conn *c, size_t len)
{
    return c && !c->sq_head && c->state == TERN_TCP_ESTABLISHED &&
           !(c->flags & (TF_CLOSED_CB | TF_FIN_QUEUED)) &&
           len - 1 < c->mss &&              /* 1 <= len <= mss */
           len <= st->tcp->snd_buf;
}

/*
 * send_queue would put the data whole in one fresh buffer without
 * coalescing or looping; this does the same with fewer tests, out of line
 * so that the general path's register saves are not paid here. A buffer
 * too small for the data (tiny pools) is given back and the general path
 * runs; a dry pool counts tcp_nobuf once and returns -TERN_ENOBUFS, as the
 * general path does.
 */
static OUT_OF_LINE long send_one_buf(tern_stack *st, struct tern_conn *c,
                                     const uint8_t *src, size_t len)
{
    tern_buf *b = sq_buf_alloc(st, c);
    if (!b)
        return -TERN_ENOBUFS;
    /* fresh_cap(c, b) < len, as len <= mss: the room alone decides */
    if (b->size - (uint32_t)(b->data - b->head) < len) {
        tern_buf_release(st, b);
        return send_queue(st, c, src, len);
    }
    sq_push(st, c, b, src, (uint32_t)len, true);
    /* the lone segment's mark (tcp_lone_ready): b is the only buffer and,
     * when it is sq_cur, unsent */
    kick(st, c, c->sq_cur ? TF_OUTPUT | TF_LONE : TF_OUTPUT);
    return (long)len;
}

tern_conn *tern_tcp_connect_data(tern_stack *st, const tern_addr *dst,
                                 uint16_t dst_port, uint16_t local_port,
                                 void *user, const void *data, size_t len,
                                 int *err)
{
    struct tcp_layer *tl = TL(st);
    if (len > tl->snd_buf || (len && !data)) {
        if (err)
            *err = len > tl->snd_buf ? TERN_EMSGSIZE : TERN_EINVAL;
        return NULL;
    }
    struct tern_conn *c = active_open(st, dst, dst_port, local_port, user,
                                      err);
    if (!c)
        return NULL;
    uint8_t ck[TFO_COOKIE_MAX];
    uint16_t mss;
    c->tfo = TFO_OPT;                   /* a cookie request ... */
    if (len && tfo_cache_get(st, c, ck, &mss)) {
        c->tfo |= TFO_DATA;             /* ... or the cookie and data */
        /* queue buffers as large as the SYN takes (c->mss is set again
         * from the SYN-ACK) */
        uint32_t room = tfo_syn_room(tl, c, mss);
        if (room > c->mss)
            c->mss = (uint16_t)room;
    }
    long n = len ? send_queue(st, c, data, len) : 0;
    if (n != (long)len) {
        /* the pool refused: nothing was sent yet, so nothing is owed */
        conn_free(st, c);
        if (err)
            *err = TERN_ENOBUFS;
        return NULL;
    }
    send_first_syn(st, c);
    return c;
}

long tern_tcp_send(tern_stack *st, tern_conn *c, const void *data, size_t len)
{
    if (one_buf_case(st, c, len))
        return send_one_buf(st, c, data, len);
    return send_queue(st, c, data, len);
}

/* Whether an app's buffer is unfit to queue, whatever the conn: none, a
 * chain, empty, or too little headroom for the headers. */
static inline bool app_buf_bad(const tern_buf *b)
{
    return !b || b->frag || b->len == 0 || b->data - b->head < TCP_MAX_HDRS;
}

/* The sum bits tern_tcp_send_buf_sum gives (BQ_CSUM_OK and the folded
 * payload sum), wrong for b's payload: only a TERN_CHECK_APP_CSUM core
 * looks. */
static inline bool app_sum_wrong(const tern_buf *b, uint64_t sum_bits)
{
#ifdef TERN_CHECK_APP_CSUM
    return sum_bits && (sum_bits >> 32 & 0xffff) !=
                           csum_fold64(tern_csum_partial(b->data, b->len, 0));
#else
    (void)b;
    (void)sum_bits;
    return false;
#endif
}

/* An app's buffer at stream position seq, appended to the send queue with
 * its sum bits; the caller moves sq_end. */
static inline void sq_append_app(struct tern_conn *c, tern_buf *b,
                                 uint32_t seq, uint64_t sum_bits)
{
    bq_set(b, seq, b->len, b->data);
    b->cb[1] |= sum_bits;
    sq_append(c, b);
}

/* tern_tcp_send_buf with the payload sum's cb[1] bits: BQ_CSUM_OK and the
 * folded sum when the application gave it (output then sums the header
 * only, as for data tern_tcp_send copied), 0 when it did not. */
static inline int queue_app_buf(tern_stack *st, struct tern_conn *c,
                                tern_buf *buf, uint64_t sum_bits)
{
    if (!can_queue(c))
        return -TERN_ENOTCONN;
    if (app_buf_bad(buf))
        return -TERN_EINVAL;
    if (room_of(TL(st), c) < buf->len)     /* can_queue holds: the space */
        return -TERN_EAGAIN;
    if (app_sum_wrong(buf, sum_bits))
        return -TERN_EINVAL;
    sq_append_app(c, buf, c->sq_end, sum_bits);
    c->sq_end += buf->len;
    kick(st, c, TF_OUTPUT);
    return 0;
}

int tern_tcp_send_buf(tern_stack *st, tern_conn *c, tern_buf *buf)
{
    return queue_app_buf(st, c, buf, 0);
}

int tern_tcp_send_buf_sum(tern_stack *st, tern_conn *c, tern_buf *buf,
                          uint32_t payload_sum)
{
    return queue_app_buf(st, c, buf,
                         BQ_CSUM_OK | (uint64_t)csum_fold64(payload_sum) << 32);
}

long tern_tcp_send_bufs(tern_stack *st, tern_conn *c, tern_buf *const *bufs,
                        const uint32_t *sums, unsigned n)
{
    if (!can_queue(c))
        return -TERN_ENOTCONN;
    if (!bufs || n == 0)
        return -TERN_EINVAL;
    uint32_t room = room_of(TL(st), c), end = c->sq_end;
    unsigned i = 0;
    for (; i < n; i++) {
        tern_buf *b = bufs[i];
        if (app_buf_bad(b) || room < b->len)
            break;
        uint64_t sum_bits =
            sums ? BQ_CSUM_OK | (uint64_t)csum_fold64(sums[i]) << 32 : 0;
        if (app_sum_wrong(b, sum_bits))
            break;
        sq_append_app(c, b, end, sum_bits);
        end += b->len;
        room -= b->len;
    }
    if (i == 0)         /* as tern_tcp_send_buf would refuse bufs[0] */
        return !app_buf_bad(bufs[0]) && room < bufs[0]->len ? -TERN_EAGAIN
                                                            : -TERN_EINVAL;
    c->sq_end = end;
    kick(st, c, TF_OUTPUT);
    return (long)i;
}

void tern_tcp_consumed(tern_stack *st, tern_conn *c, size_t bytes)
{
    if (!alive(c))
        return;
    struct tcp_layer *tl = TL(st);
    uint32_t old = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
    c->rcv_unread = bytes >= c->rcv_unread ? 0 : c->rcv_unread - (uint32_t)bytes;
    uint32_t nw = tcp_rcv_window(tl, c);
    uint32_t big = tl->rcv_buf >> 2;
    if (big < 2u * c->rcv_mss)
        big = 2u * c->rcv_mss;
    if (nw > old && (nw - old >= big || old < c->rcv_mss) &&
        c->state != TERN_TCP_SYN_SENT && c->state != TERN_TCP_SYN_RECEIVED)
        kick(st, c, TF_WND_UPDATE);
}

int tern_tcp_shutdown(tern_stack *st, tern_conn *c)
{
    if (!alive(c))
        return -TERN_ENOTCONN;
    if (c->flags & TF_FIN_QUEUED)
        return 0;
    switch (c->state) {
    case TERN_TCP_ESTABLISHED:
        conn_set_state(st, c, TERN_TCP_FIN_WAIT_1);
        break;
    case TERN_TCP_CLOSE_WAIT:
        conn_set_state(st, c, TERN_TCP_LAST_ACK);
        break;
    case TERN_TCP_SYN_SENT:
    case TERN_TCP_SYN_RECEIVED:
        break;                      /* FIN follows the handshake */
    default:
        return -TERN_ENOTCONN;
    }
    c->flags |= TF_FIN_QUEUED;
    kick(st, c, TF_OUTPUT);
    return 0;
}

int tern_tcp_close(tern_stack *st, tern_conn *c)
{
    if (!alive(c))
        return -TERN_ENOTCONN;
    c->flags |= TF_APP_CLOSED;
    c->rcv_unread = 0;
    if (c->state == TERN_TCP_SYN_SENT) {
        conn_close(st, c, TERN_CLOSE_NORMAL);
        return 0;
    }
    int r = tern_tcp_shutdown(st, c);
    if (alive(c))
        tcp_rearm(st, c);
    return r == -TERN_ENOTCONN ? 0 : r;
}

void tern_tcp_abort(tern_stack *st, tern_conn *c)
{
    if (!c || c->state == TERN_TCP_CLOSED)
        return;
    if (c->state != TERN_TCP_SYN_SENT && c->state != TERN_TCP_TIME_WAIT)
        tcp_send_rst_conn(st, c);
    if (c->state == TERN_TCP_ESTABLISHED || c->state == TERN_TCP_CLOSE_WAIT)
        CTR(st, tcp_estab_resets);
    conn_close(st, c, TERN_CLOSE_ABORTED);
}

void tern_tcp_set_user(tern_conn *c, void *user) { c->user = user; }
void *tern_tcp_get_user(const tern_conn *c) { return c->user; }

void tern_tcp_get_info(const tern_stack *st, const tern_conn *c,
                       tern_tcp_info *i)
{
    const struct tcp_layer *tl = st->tcp;
    tern_memset(i, 0, sizeof *i);
    if (c->flags & TF_V6) {
        i->local = tern_addr_v6(c->laddr6);
        i->remote = tern_addr_v6(c->raddr6);
    } else {
        i->local = tern_addr_v4(st->cfg.ip);
        i->remote = tern_addr_v4(c->raddr);
    }
    i->local_port = c->lport;
    i->remote_port = c->rport;
    i->state = c->state;
    i->mss = c->mss;
    i->srtt_us = c->srtt_us;
    i->rttvar_us = c->rttvar_us;
    i->rto_ms = c->rto_ms;
    i->cwnd = c->cwnd;
    i->ssthresh = c->ssthresh;
    i->snd_wnd = c->snd_wnd;
    i->rcv_wnd = tl->rcv_buf > c->rcv_unread ? tl->rcv_buf - c->rcv_unread : 0;
    i->snd_wscale = c->snd_ws;
    i->rcv_wscale = c->rcv_ws;
    i->sack = (c->flags & TF_SACK) != 0;
    i->timestamps = (c->flags & TF_TS) != 0;
    i->bytes_sent = c->bytes_sent;
    i->bytes_acked = c->bytes_acked;
    i->bytes_received = c->bytes_received;
    i->retransmits = c->retransmits;
}

uint32_t tern_tcp_mss(const tern_conn *c)
{
    return c ? c->mss : 0;
}

const char *tern_tcp_state_name(int s)
{
    static const char *const names[] = {
        "CLOSED", "LISTEN", "SYN_SENT", "SYN_RECEIVED", "ESTABLISHED",
        "FIN_WAIT_1", "FIN_WAIT_2", "CLOSE_WAIT", "CLOSING", "LAST_ACK",
        "TIME_WAIT",
    };
    if (s < 0 || s > TERN_TCP_TIME_WAIT)
        return "UNKNOWN";
    return names[s];
}

uint32_t tern_tcp_conn_count(const tern_stack *st)
{
    return st->tcp ? st->tcp->used + twr_count(st->tcp) : 0;
}
