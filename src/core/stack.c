/* stack.c - instance life cycle, the input/poll entry points, the transmit
 * burst and buffer helpers. */
#include "ip6.h"

void tern_config_defaults(tern_config *cfg)
{
    tern_memset(cfg, 0, sizeof *cfg);
    cfg->prefix_len = 24;
    cfg->mtu = DEF_MTU;
    cfg->cc = TERN_CC_CUBIC;
}

/* Zero sizing fields mean "the default". */
static void fill_defaults(tern_config *c)
{
#define DEF(field, value) if (!c->field) c->field = (value)
    DEF(mtu, DEF_MTU);
    DEF(max_conns, 1024);
    DEF(max_listeners, 16);
    DEF(max_half_open, 256);
    DEF(accept_backlog, 128);
    DEF(max_udp, 16);
    DEF(arp_entries, 64);
    DEF(arp_pending, 64);
    DEF(tx_burst, 32);
    DEF(rx_burst, 32);
    DEF(rcv_buf, DEF_SOCK_BUF);
    DEF(snd_buf, DEF_SOCK_BUF);
    /* room for a whole window of out-of-order segments, or a loss makes
     * the peer resend most of the window */
    DEF(ooo_max_segs, c->rcv_buf / 1024 > DEF_OOO_SEGS ? c->rcv_buf / 1024
                                                       : DEF_OOO_SEGS);
    DEF(time_wait_ms, DEF_TIME_WAIT_MS);
    DEF(rto_min_ms, DEF_RTO_MIN_MS);
    DEF(rto_max_ms, DEF_RTO_MAX_MS);
    DEF(rto_initial_ms, DEF_RTO_INITIAL_MS);
    DEF(max_retries, DEF_MAX_RETRIES);
    DEF(syn_retries, DEF_SYN_RETRIES);
    DEF(delack_ms, DEF_DELACK_MS);
    DEF(tfo_max_pending, DEF_TFO_PENDING);
    DEF(tfo_cache_entries, DEF_TFO_CACHE);
    DEF(icmp_rate_per_sec, 100);
    DEF(reasm_slots, 8);
    DEF(reasm_timeout_ms, 30000);
    DEF(rss_queues, 1);
    DEF(nd_entries, 64);
    DEF(nd_pending, 64);
    DEF(dad_transmits, 1);
#undef DEF
}

/* Whether the config gives the stack an IPv6 address of its own: a
 * global one, the link-local one, or one Router Advertisements bring. */
static bool ip6_has_address(const tern_config *c)
{
    return c->n_ip6 > 0 ||
           (c->ip6_enable && (!c->ip6_no_link_local || c->ip6_accept_ra));
}

/* What is wrong with a config whose defaults are filled, in words; NULL
 * when nothing is. */
static const char *config_problem(const tern_config *c)
{
    if (!c->buf_ops.alloc || !c->buf_ops.free)
        return "buf_ops.alloc and buf_ops.free are required";
    if (!c->tx)
        return "tx is required";
    if (!c->ip && !ip6_has_address(c))
        return "no address: set ip (IPv4), or ip6[] (IPv6) or ip6_enable "
               "with the link-local address";
    if (c->prefix_len > 32)
        return "prefix_len is over 32";
    if (c->n_ip6 > TERN_MAX_IP6)
        return "n_ip6 is over TERN_MAX_IP6";
    for (unsigned i = 0; i < c->n_ip6; i++) {
        if (!ip6_unicast_ok(c->ip6[i]))
            return "an ip6[] address is not unicast";
        if (c->ip6_prefix_len[i] > 128)
            return "an ip6_prefix_len is over 128";
    }
    if (c->mtu < 576 || c->mtu > 9000)
        return "mtu is outside 576..9000";
    if (c->rss_reta_size > 512)
        return "rss_reta_size is over 512";
    if (c->rss_queue >= c->rss_queues)
        return "rss_queue is not below rss_queues";
    if (c->rss_queues > 1 && !c->rss_reta_size)
        return "rss_queues over 1 needs rss_reta";
    return NULL;
}

const char *tern_config_check(const tern_config *cfg)
{
    if (!cfg)
        return "no config";
    tern_config c = *cfg;
    fill_defaults(&c);
    return config_problem(&c);
}

void *carve_take(carve *c, size_t size, size_t align)
{
    c->off = (c->off + align - 1) & ~(align - 1);
    void *p = c->base ? c->base + c->off : NULL;
    c->off += size;
    return p;
}

/* Lay out every table of an instance; measures when c->base is NULL. */
static void layout(tern_stack *st, const tern_config *cfg, carve *c)
{
    carve_take(c, sizeof(tern_stack), TERN_STACK_ALIGN);
    tern_buf **txq = carve_take(c, cfg->tx_burst * sizeof(tern_buf *), 8);
    if (st)
        st->txq = txq;
    arp_mem(st, cfg, c);
    udp_mem(st, cfg, c);
    reasm4_mem(st, cfg, c);
    tcp_mem(st, cfg, c);
    ip6_mem(st, cfg, c);
}

size_t tern_stack_size(const tern_config *cfg)
{
    tern_config c = *cfg;
    fill_defaults(&c);
    carve cv = {0, 0};
    layout(NULL, &c, &cv);
    /* A whole number of cache lines: aligned_alloc needs a multiple. */
    return (cv.off + TERN_STACK_ALIGN - 1) & ~(size_t)(TERN_STACK_ALIGN - 1);
}

tern_stack *tern_stack_init(void *mem, size_t size, const tern_config *cfg,
                            int *err)
{
    tern_config c = *cfg;
    fill_defaults(&c);
    int e = TERN_OK;
    if (!mem || ((uintptr_t)mem & (TERN_STACK_ALIGN - 1)) || config_problem(&c))
        e = TERN_EINVAL;
    else if (size < tern_stack_size(&c))
        e = TERN_ENOMEM;
    if (err)
        *err = e;
    if (e)
        return NULL;
    tern_memset(mem, 0, size);
    tern_stack *st = mem;
    st->cfg = c;
    if (!st->cfg.buf_ops.stack) {
        st->cfg.buf_ops.stack = &st->no_lifo;
        st->cfg.rx_reserve_bufs = 0;    /* nothing to count it on */
    }
    st->send_floor = 2 * st->cfg.rx_reserve_bufs;
    st->netmask = c.prefix_len ? ~0u << (32 - c.prefix_len) : 0;
    /* without IPv4, 0: the receive path's "to us and not broadcast" test
     * then refuses every IPv4 destination, 0.0.0.0 included */
    st->bcast = c.ip ? (c.ip & st->netmask) | ~st->netmask : 0;
    st->icmp_tokens = c.icmp_rate_per_sec;
    carve cv = {mem, 0};
    layout(st, &c, &cv);
    return st;
}

void tern_stack_fini(tern_stack *st)
{
    stack_flush(st);
    arp_fini(st);
    reasm4_fini(st);
    tcp_fini(st);
    ip6_fini(st);
}

void tern_set_user(tern_stack *st, void *user) { st->user = user; }
void *tern_get_user(const tern_stack *st) { return st->user; }
const tern_counters *tern_get_counters(const tern_stack *st) { return &st->ctr; }

/*
 * The stack learns the time only from tern_input() and tern_poll(). Calls
 * made before the first of them (typically tern_tcp_connect() right after
 * init) stamp their deadlines with time 0: the first SYN's RTO, the ARP
 * retry, the RTT timer. With a monotonic clock far from 0 all of them would
 * then be due at once (a spurious SYN and ARP retransmission on every
 * connection). So the first call moves them to its own time, as if those
 * calls had happened then.
 */
static void stack_clock(tern_stack *st, uint64_t now)
{
    if (!st->clock_ok) {
        st->clock_ok = true;
        uint64_t shift = now > st->now ? now - st->now : 0;
        if (shift) {
            arp_clock_start(st, shift);
            tcp_clock_start(st, shift);
        }
        st->now = now;
        ip6_clock_start(st, shift);   /* may send (DAD): at the new time */
    }
    st->now = now;
}

/* The three steps of tern_input, inlined there and in the exported
 * step-by-step calls (an exported function is not inlined into another
 * with -fPIC). */
static inline void input_begin(tern_stack *st, unsigned n, uint64_t now)
{
    stack_clock(st, now);
    tcp_input_begin(st, n);
}

static inline void input_one(tern_stack *st, tern_buf *frame)
{
    CTR(st, eth_in);
    if (!tcp_input_frame(st, frame))
        eth_input(st, frame);
}

static inline void input_end(tern_stack *st)
{
    tcp_input_done(st);
    stack_flush(st);
}

void tern_input(tern_stack *st, tern_buf **frames, unsigned n, uint64_t now)
{
    input_begin(st, n, now);
    for (unsigned i = 0; i < n; i++)
        input_one(st, frames[i]);
    input_end(st);
}

void tern_input_begin(tern_stack *st, unsigned n, uint64_t now)
{
    input_begin(st, n, now);
}

void tern_input_one(tern_stack *st, tern_buf *frame)
{
    input_one(st, frame);
}

void tern_input_end(tern_stack *st)
{
    input_end(st);
}

uint64_t tern_poll(tern_stack *st, uint64_t now)
{
    stack_clock(st, now);
    uint64_t next = arp_poll(st, now);
    uint64_t t = tcp_poll(st, now);
    if (t < next)
        next = t;
    t = reasm4_poll(st, now);
    if (t < next)
        next = t;
    t = ip6_poll(st, now);
    if (t < next)
        next = t;
    stack_flush(st);
    return next;
}

void tern_flush(tern_stack *st) { stack_flush(st); }

void stack_flush(tern_stack *st)
{
    if (st->txn) {
        unsigned n = st->txn;
        st->txn = 0;
        st->cfg.tx(st->cfg.tx_ctx, st->txq, n);
    }
}

void stack_log(tern_stack *st, int level, const char *msg)
{
    if (st->cfg.log && level <= st->cfg.log_level)
        st->cfg.log(st->cfg.log_ctx, level, msg);
}

void tern_buf_release(tern_stack *st, tern_buf *b)
{
    while (b) {
        tern_buf *next = b->frag;
        if (--b->refs == 0)
            buf_free(st, b);
        b = next;
    }
}

uint32_t csum_chain(const tern_buf *b, const uint8_t *from, uint32_t len,
                    uint32_t sum)
{
    uint32_t off = 0;       /* bytes summed so far: their parity says
                               whether the next piece starts mid-word */
    for (; b && len; b = b->frag) {
        const uint8_t *p = off ? b->data : from;
        uint32_t n = (uint32_t)(b->data + b->len - p);
        if (n > len)
            n = len;
        uint32_t s = tern_csum_partial(p, n, 0);
        if (off & 1)
            s = ((s & 0xff) << 8) | (s >> 8);
        sum = csum_fold64((uint64_t)sum + s);
        off += n;
        len -= n;
    }
    return sum;
}

tern_buf *tern_buf_alloc(tern_stack *st)
{
    return buf_alloc(st);
}

unsigned tern_buf_alloc_n(tern_stack *st, tern_buf **bufs, unsigned n)
{
    unsigned i = 0;
    for (; i < n; i++) {
        tern_buf *b = buf_alloc(st);
        if (!b)
            break;
        bufs[i] = b;
    }
    return i;
}
