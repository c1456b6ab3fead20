/* harness.c - see harness.h. */
#include "harness.h"
#include "tcp/tcp.h"

#include <stdlib.h>
#include <string.h>

static void w16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void w32(uint8_t *p, uint32_t v) { w16(p, (uint16_t)(v >> 16)); w16(p + 2, (uint16_t)v); }

size_t tp_frame(uint8_t *out, uint32_t src, uint32_t dst, uint16_t sport,
                uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
                uint16_t wnd, const uint8_t *opt, size_t optlen,
                const void *data, size_t len)
{
    size_t hl = 20 + ((optlen + 3) & ~(size_t)3);
    size_t n = th_eth(out, TH_MAC, TH_PEER_MAC, 0x0800);
    th_ip4(out + n, src, dst, 6, (uint16_t)(hl + len));
    uint8_t *t = out + n + 20;
    memset(t, 0, hl);
    w16(t, sport);
    w16(t + 2, dport);
    w32(t + 4, seq);
    w32(t + 8, ack);
    t[12] = (uint8_t)((hl / 4) << 4);
    t[13] = flags;
    w16(t + 14, wnd);
    if (optlen)
        memcpy(t + 20, opt, optlen);
    if (len)
        memcpy(t + hl, data, len);
    uint8_t ph[12];
    w32(ph, src);
    w32(ph + 4, dst);
    ph[8] = 0;
    ph[9] = 6;
    w16(ph + 10, (uint16_t)(hl + len));
    uint32_t s = 0;
    for (int i = 0; i < 12; i += 2)
        s += (uint32_t)(ph[i] << 8 | ph[i + 1]);
    w16(t + 16, th_csum_ref(t, hl + len, s));
    return n + 20 + hl + len;
}

bool tp_parse(const uint8_t *f, size_t len, tpkt *p)
{
    memset(p, 0, sizeof *p);
    if (len < 14 + 20 + 20 || th_rd16(f + 12) != 0x0800 || f[14 + 9] != 6)
        return false;
    const uint8_t *ip = f + 14;
    size_t ihl = (size_t)(ip[0] & 15) * 4, tot = th_rd16(ip + 2);
    const uint8_t *t = ip + ihl;
    size_t tl = tot - ihl, hl = (size_t)(t[12] >> 4) * 4;
    p->src = th_rd32(ip + 12);
    p->dst = th_rd32(ip + 16);
    p->sport = th_rd16(t);
    p->dport = th_rd16(t + 2);
    p->seq = th_rd32(t + 4);
    p->ack = th_rd32(t + 8);
    p->flags = t[13];
    p->wnd = th_rd16(t + 14);
    p->data = t + hl;
    p->len = (uint32_t)(tl - hl);
    p->csum_ok = th_frame_csums_ok(f, len);
    for (size_t i = 20; i < hl;) {
        uint8_t k = t[i];
        if (k == 0)
            break;
        if (k == 1) {
            i++;
            continue;
        }
        uint8_t ol = t[i + 1];
        if (k == 2) { p->has_mss = true; p->mss = th_rd16(t + i + 2); }
        if (k == 3) { p->has_ws = true; p->ws = t[i + 2]; }
        if (k == 4) p->sack_ok = true;
        if (k == 8) { p->has_ts = true; p->tsval = th_rd32(t + i + 2); p->tsecr = th_rd32(t + i + 6); }
        if (k == 5) {
            p->nsack = (ol - 2) / 8;
            for (uint32_t j = 0; j < p->nsack && j < 4; j++) {
                p->sack[j][0] = th_rd32(t + i + 2 + 8 * j);
                p->sack[j][1] = th_rd32(t + i + 6 + 8 * j);
            }
        }
        i += ol ? ol : 1;
    }
    return true;
}

void tp_arp(th *t)
{
    uint8_t f[64];
    static const uint8_t zero[6];
    size_t n = th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, zero, TH_IP);
    th_input(t, f, n);
    th_clear(t);
}

unsigned tp_count(th *t)
{
    unsigned n = 0;
    tpkt p;
    for (unsigned i = 0; i < t->nout; i++)
        n += tp_parse(t->out[i], t->out_len[i], &p);
    return n;
}

bool tp_get(th *t, int i, tpkt *p)
{
    int n = (int)tp_count(t);
    if (i < 0)
        i += n;
    if (i < 0 || i >= n)
        return false;
    int k = 0;
    for (unsigned j = 0; j < t->nout; j++)
        if (tp_parse(t->out[j], t->out_len[j], p) && k++ == i)
            return true;
    return false;
}

void peer_send_opts(peer *p, uint8_t flags, const uint8_t *opt, size_t olen,
                    const void *data, size_t len)
{
    uint8_t f[9100];
    size_t n = tp_frame(f, TH_PEER_IP, TH_IP, p->port, p->lport, p->seq,
                        (flags & F_ACK) ? p->ack : 0, flags, p->wnd, opt, olen,
                        data, len);
    th_input(p->t, f, n);
    p->seq += (uint32_t)len + ((flags & F_SYN) ? 1 : 0) + ((flags & F_FIN) ? 1 : 0);
}

void peer_init(peer *p, th *t)
{
    memset(p, 0, sizeof *p);
    p->t = t;
    p->seq = 1000;
    p->ts = true;
    p->tsval = 500;
}

void peer_send(peer *p, uint8_t flags, const void *data, size_t len)
{
    uint8_t opt[12];
    size_t ol = 0;
    if (p->ts) {
        opt[0] = opt[1] = 1;
        opt[2] = 8;
        opt[3] = 10;
        w32(opt + 4, p->tsval);
        w32(opt + 8, p->tsecr);
        ol = 12;
    }
    peer_send_opts(p, flags, opt, ol, data, len);
}

struct tern_conn *peer_connected(th **tp, peer *p, bool ts)
{
    th *t = *tp = th_new(NULL);
    peer_init(p, t);
    p->ts = ts;
    peer_connect(p, 80, 40000);
    struct tern_conn *c = conn_lookup(t->st, TH_PEER_IP, 40000, 80);
    if (!c)
        abort();
    return c;
}

void peer_connect(peer *p, uint16_t lport, uint16_t port)
{
    p->lport = lport;
    p->port = port;
    if (!p->wnd)
        p->wnd = 65535;
    tern_tcp_listen(p->t->st, lport, NULL);
    tp_arp(p->t);
    uint8_t opt[20] = {2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10};
    w32(opt + 12, p->tsval);
    w32(opt + 16, 0);
    size_t ol = 20;
    if (!p->ts) {
        opt[8] = opt[9] = 1;
        opt[10] = 4;
        opt[11] = 2;
        ol = 12;
    }
    peer_send_opts(p, F_SYN, opt, ol, NULL, 0);
    tpkt s;
    if (tp_get(p->t, -1, &s)) {
        p->ack = s.seq + 1;
        p->tsecr = s.tsval;
    }
    th_clear(p->t);
    peer_send(p, F_ACK, NULL, 0);
}

/* ---- pair ---- */

pair *pair_new(const tern_memlink_faults *f, uint64_t seed, pair_tweak tw,
               const tern_callbacks *cb, void *user0, void *user1)
{
    static const uint32_t none[2] = {0, 0};
    return pair_new_caps(f, seed, none, false, tw, cb, user0, user1);
}

unsigned pair_buf_size;
unsigned pair_pool_size;
bool pair_by_ref;

pair *pair_new_caps(const tern_memlink_faults *f, uint64_t seed,
                    const uint32_t caps[2], bool no_poll, pair_tweak tw,
                    const tern_callbacks *cb, void *user0, void *user1)
{
    pair *p = calloc(1, sizeof *p);
    tern_memlink_config lc;
    tern_memlink_config_defaults(&lc);
    if (f)
        lc.faults = *f;
    lc.seed = seed;
    lc.pool_size = 8192;
    if (pair_buf_size) {
        lc.buf_size = pair_buf_size;
        lc.pool_size = 512;
    }
    if (pair_pool_size)
        lc.pool_size = pair_pool_size;
    lc.caps[0] = caps[0];
    lc.caps[1] = caps[1];
    lc.by_ref = pair_by_ref;
    char err[128];
    p->link = tern_memlink_create(&lc, err, sizeof err);
    if (!p->link)
        abort();
    p->now = 1000 * TERN_NS_PER_SEC;
    for (int e = 0; e < 2; e++) {
        tern_config c;
        tern_config_defaults(&c);
        c.ip = e ? PAIR_IP1 : PAIR_IP0;
        uint8_t mac[6] = {2, 0, 0, 0, 0, (uint8_t)(e + 1)};
        memcpy(c.mac, mac, 6);
        c.buf_ops = tern_memlink_buf_ops(p->link, e);
        c.caps = tern_memlink_caps(p->link, e);
        c.tx = tern_memlink_tx;
        c.tx_ctx = tern_memlink_tx_ctx(p->link, e);
        for (int i = 0; i < 16; i++)
            c.secret[i] = (uint8_t)(e * 31 + i * 3 + 5);
        if (cb)
            c.cb = *cb;
        if (tw)
            tw(&c, e);
        size_t size = tern_stack_size(&c);
        p->mem[e] = aligned_alloc(TERN_STACK_ALIGN, (size + 63) & ~(size_t)63);
        int er;
        p->st[e] = tern_stack_init(p->mem[e], size, &c, &er);
        if (!p->st[e])
            abort();
        tern_set_user(p->st[e], e ? user1 : user0);
        if (!no_poll)
            tern_poll(p->st[e], p->now);
    }
    return p;
}

void pair_free(pair *p)
{
    for (int e = 0; e < 2; e++)
        tern_stack_fini(p->st[e]);
    tern_memlink_destroy(p->link);
    free(p->mem[0]);
    free(p->mem[1]);
    free(p);
}

bool pair_step(pair *p)
{
    tern_buf *fr[64];
    bool any = false;
    for (int e = 0; e < 2; e++) {
        unsigned n = tern_memlink_rx(p->link, e, fr, 64, p->now);
        if (n) {
            tern_input(p->st[e], fr, n, p->now);
            any = true;
        }
    }
    uint64_t next = UINT64_MAX;
    for (int e = 0; e < 2; e++) {
        uint64_t d = tern_poll(p->st[e], p->now);
        if (d < next)
            next = d;
        d = tern_memlink_next_event(p->link, e);
        if (d < next)
            next = d;
    }
    if (any)
        return true;
    if (next == UINT64_MAX)
        return false;
    if (next > p->now)
        p->now = next;
    return true;
}

bool pair_run(pair *p, bool (*done)(void *), void *arg, uint64_t limit_ns)
{
    while (!done(arg)) {
        if (!pair_step(p))
            return done(arg);
        if (p->now > limit_ns)
            return false;
    }
    return true;
}

#include <stdio.h>
void tp_dump(const tern_stack *st)
{
    const tern_counters *c = tern_get_counters(st);
#define P_(n) if (c->n) fprintf(stderr, "  %s=%llu\n", #n, (unsigned long long)c->n);
    TERN_COUNTERS(P_)
#undef P_
}

bool th_same_output(const th *a, const th *b)
{
    if (a->nout != b->nout ||
        memcmp(tern_get_counters(a->st), tern_get_counters(b->st),
               sizeof(tern_counters)))
        return false;
    for (unsigned i = 0; i < a->nout; i++)
        if (a->out_len[i] != b->out_len[i] ||
            memcmp(a->out[i], b->out[i], a->out_len[i]))
            return false;
    return true;
}
