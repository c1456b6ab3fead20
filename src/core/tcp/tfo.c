/* tfo.c - TCP Fast Open (RFC 7413): the server's cookies (a keyed hash
 * of the client's address) and its decision on a SYN's data, and the
 * client's cookie cache (a small table in the instance memory, the least
 * recently used entry replaced when full). */
#include "tcp.h"

/* An address as the cookie and the cache key take it: the family, then
 * its bytes (4 for IPv4, 16 for IPv6: ip6 non-NULL), so both families
 * share one key space without colliding. Returns the bytes written to
 * out (at most TFO_KEY_LEN). */
#define TFO_KEY_LEN 17
static uint32_t addr_key(uint32_t raddr, const uint8_t *ip6, uint8_t *out)
{
    if (ip6) {
        out[0] = 6;
        tern_memcpy(out + 1, ip6, 16);
        return 17;
    }
    out[0] = 4;
    wr32(out + 1, raddr);
    return 5;
}

/* The key of a conn's peer. */
static uint32_t conn_key(const struct tern_conn *c, uint8_t *out)
{
    return addr_key(c->raddr, (c->flags & TF_V6) ? c->raddr6 : NULL, out);
}

/* Our cookie for a client: the keyed hash (cfg.secret) of its whole
 * address (family and bytes) with a tag of its own, so it reveals
 * nothing of the ISNs or SYN cookies made with the same key. */
static void cookie_of(tern_stack *st, const uint8_t *key, uint32_t klen,
                      uint8_t out[TFO_COOKIE_LEN])
{
    uint8_t in[4 + TFO_KEY_LEN] = {'t', 'f', 'o', 0};
    tern_memcpy(in + 4, key, klen);
    uint64_t h = tern_siphash(st->cfg.secret, in, 4 + klen);
    wr32(out, (uint32_t)(h >> 32));
    wr32(out + 4, (uint32_t)h);
}

static bool cookie_valid(tern_stack *st, const tcp_seg *s)
{
    if (s->o.tfo_len != TFO_COOKIE_LEN)
        return false;
    uint8_t key[TFO_KEY_LEN], want[TFO_COOKIE_LEN];
    uint32_t klen = addr_key(s->src, s->ip6 ? s->ip6->src : NULL, key);
    cookie_of(st, key, klen, want);
    uint8_t diff = 0;                   /* no early exit: no timing hint */
    for (uint32_t i = 0; i < TFO_COOKIE_LEN; i++)
        diff |= (uint8_t)(want[i] ^ s->o.tfo[i]);
    return diff == 0;
}

bool tfo_passive(tern_stack *st, struct tern_conn *c, const tcp_seg *s)
{
    struct tcp_layer *tl = TL(st);
    c->tfo = (uint8_t)(TFO_OPT | (s->o.tfo_exp ? TFO_EXP : 0));
    if (s->o.tfo_len == 0) {
        CTR(st, tcp_tfo_cookie_req_in);
        return false;
    }
    if (!cookie_valid(st, s)) {
        CTR(st, tcp_tfo_cookie_bad);      /* a fresh one in the SYN-ACK */
        return false;
    }
    c->tfo &= (uint8_t)~TFO_OPT;          /* it has ours: none sent */
    if (!s->len || s->len > tl->rcv_buf)
        return false;
    if (tl->tfo_pending >= tl->tfo_max_pending) {
        CTR(st, tcp_tfo_pending_full);    /* the usual handshake */
        return false;
    }
    c->tfo |= TFO_DATA | TFO_PENDING;
    tl->tfo_pending++;
    CTR(st, tcp_tfo_syn_data_in);
    return true;
}

/* ---- the client's cookie cache ---- */
struct tfo_entry {
    uint8_t key[TFO_KEY_LEN]; /* addr_key; key[0] == 0: empty */
    uint8_t len;              /* cookie bytes */
    uint16_t mss;             /* the peer's MSS option with it */
    uint32_t used;            /* tcp_layer.tfo_clock when last used */
    uint8_t cookie[TFO_COOKIE_MAX];
};

void tfo_mem(struct tcp_layer *tl, const tern_config *cfg, carve *cv)
{
    uint32_t n = cfg->tfo_cache_entries ? cfg->tfo_cache_entries
                                        : DEF_TFO_CACHE;
    struct tfo_entry *e = carve_take(cv, (size_t)n * sizeof *e, 8);
    if (!tl)
        return;
    tl->tfo_cache = e;
    tl->tfo_cache_n = n;
    tern_memset(e, 0, (size_t)n * sizeof *e);
}

static bool key_eq(const uint8_t *a, const uint8_t *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* The entry of a destination, or NULL. */
static struct tfo_entry *cache_find(struct tcp_layer *tl, const uint8_t *key,
                                    uint32_t klen)
{
    for (uint32_t i = 0; i < tl->tfo_cache_n; i++)
        if (key_eq(tl->tfo_cache[i].key, key, klen))
            return &tl->tfo_cache[i];
    return NULL;
}

uint32_t tfo_cache_get(tern_stack *st, const struct tern_conn *c,
                       uint8_t cookie[TFO_COOKIE_MAX], uint16_t *mss)
{
    struct tcp_layer *tl = TL(st);
    uint8_t key[TFO_KEY_LEN];
    uint32_t klen = conn_key(c, key);
    struct tfo_entry *e = cache_find(tl, key, klen);
    if (!e)
        return 0;
    e->used = ++tl->tfo_clock;
    tern_memcpy(cookie, e->cookie, e->len);
    *mss = e->mss;
    return e->len;
}

void tfo_synack_cookie(tern_stack *st, struct tern_conn *c, const tcp_seg *s)
{
    struct tcp_layer *tl = TL(st);
    if (!(s->o.has & OPT_TFO) || !s->o.tfo_len || !tl->tfo_cache_n)
        return;
    uint8_t key[TFO_KEY_LEN];
    uint32_t klen = conn_key(c, key);
    struct tfo_entry *e = cache_find(tl, key, klen);
    if (!e) {                            /* an empty or the oldest entry */
        e = &tl->tfo_cache[0];
        for (uint32_t i = 1; i < tl->tfo_cache_n && e->key[0]; i++) {
            struct tfo_entry *x = &tl->tfo_cache[i];
            if (!x->key[0] || (int32_t)(x->used - e->used) < 0)
                e = x;
        }
        tern_memset(e, 0, sizeof *e);
        tern_memcpy(e->key, key, klen);
        CTR(st, tcp_tfo_cookies_cached);
    }
    e->len = s->o.tfo_len;
    tern_memcpy(e->cookie, s->o.tfo, e->len);
    e->mss = (s->o.has & OPT_MSS) ? s->o.mss : TCP_MSS_DEFAULT;
    e->used = ++tl->tfo_clock;
}

uint32_t tfo_syn_option(tern_stack *st, const struct tern_conn *c, uint8_t *p)
{
    if (!(c->tfo & TFO_OPT))
        return 0;
    bool exp = (c->tfo & TFO_EXP) != 0;
    if (c->flags & TF_PASSIVE) {          /* our SYN-ACK: our cookie */
        uint8_t key[TFO_KEY_LEN], ck[TFO_COOKIE_LEN];
        cookie_of(st, key, conn_key(c, key), ck);
        return tcp_opts_tfo(p, ck, TFO_COOKIE_LEN, exp);
    }
    if (c->state != TERN_TCP_SYN_SENT)    /* a simultaneous open's SYN-ACK */
        return 0;
    uint8_t ck[TFO_COOKIE_MAX];
    uint16_t mss;
    uint32_t n = (c->tfo & TFO_DATA) ? tfo_cache_get(st, c, ck, &mss)
                                     : 0;
    return tcp_opts_tfo(p, ck, n, exp);
}
