/* steer.c - software receive steering over SPSC rings (steer.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steer.h"

#define STEER_STAGE 64   /* frames classified per step */

/* Microsoft's default RSS key (also what the dpdk driver programs). */
static const uint8_t ms_key[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
    0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
    0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
    0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/* ---------------- ring ---------------- */

steer_ring *steer_ring_create(unsigned size)
{
    if (size < 2 || (size & (size - 1)) || size > (1u << 30))
        return NULL;
    steer_ring *r = aligned_alloc(64, sizeof(*r));
    if (!r)
        return NULL;
    memset(r, 0, sizeof(*r));
    r->slots = calloc(size, sizeof(tern_buf *));
    if (!r->slots) {
        free(r);
        return NULL;
    }
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    r->size = size;
    r->mask = size - 1;
    return r;
}

void steer_ring_destroy(steer_ring *r)
{
    if (!r)
        return;
    free(r->slots);
    free(r);
}

/* ---------------- steering state ---------------- */

typedef struct steer_core {
    alignas(64) steer *s;
    unsigned me;
    tern_pool *pool;
    tern_buf *pending;     /* returns that found their ring full */
    unsigned next_src;     /* round-robin start of the pull */
    uint64_t dirty;        /* cores handed frames since steer_take_dirty */
    steer_stats st;
    unsigned nstage[STEER_MAX_CORES];
    tern_buf *stage[STEER_MAX_CORES][STEER_STAGE];
} steer_core;

struct steer {
    steer_config cfg;
    /* Toeplitz is linear in its input bits: lut[i][v] is the hash of 36
     * zero bytes with byte i = v, so a tuple's hash is the XOR of one
     * entry per byte (12 loads instead of 96 bit steps for IPv4, 36 for
     * IPv6; bench_steer_cost measured ~370 ns per IPv4 frame bit by bit).
     * Byte i's entry does not depend on the input's length, so the IPv4
     * tuple uses the first 12 rows. */
    uint32_t lut[36][256];
    unsigned n;
    steer_ring **fwd;      /* fwd[src * n + dst]: frames src -> dst */
    steer_ring **ret;      /* ret[src * n + owner]: buffers going home */
    steer_core *core;      /* n of them */
};

void steer_config_defaults(steer_config *cfg, unsigned ncores)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->ncores = ncores;
    memcpy(cfg->key, ms_key, sizeof cfg->key);
    cfg->reta_size = 128;
    for (unsigned i = 0; i < 128; i++)
        cfg->reta[i] = (uint16_t)(ncores ? i % ncores : 0);
    cfg->ring_size = 1024;
}

static void errf(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "steer: %s", msg);
}

/* lut[i][v]: input bit b of byte i (b = 0 the most significant) adds the
 * 32 key bits from bit 8 i + b on (Toeplitz's definition; the same as
 * tern_toeplitz of 36 bytes with byte i = v, at a 40th of its cost). */
static void fill_lut(uint32_t lut[36][256], const uint8_t key[40])
{
    for (unsigned i = 0; i < 36; i++) {
        uint64_t k = (uint64_t)key[i] << 32 | (uint64_t)key[i + 1] << 24 |
                     (uint64_t)key[i + 2] << 16 | (uint64_t)key[i + 3] << 8 |
                     key[i + 4];
        uint32_t win[8];
        for (unsigned b = 0; b < 8; b++)
            win[b] = (uint32_t)(k >> (8 - b));
        for (unsigned v = 0; v < 256; v++) {
            uint32_t h = 0;
            for (unsigned b = 0; b < 8; b++)
                if (v & (0x80u >> b))
                    h ^= win[b];
            lut[i][v] = h;
        }
    }
}

steer *steer_create(const steer_config *cfg, tern_pool *const *pools,
                    char *err, size_t errlen)
{
    if (!cfg || cfg->ncores == 0 || cfg->ncores > STEER_MAX_CORES) {
        errf(err, errlen, "ncores must be 1..64");
        return NULL;
    }
    if (cfg->reta_size > 512) {
        errf(err, errlen, "reta_size must be <= 512");
        return NULL;
    }
    for (unsigned i = 0; i < cfg->reta_size; i++)
        if (cfg->reta[i] >= cfg->ncores) {
            errf(err, errlen, "a reta entry names a core that does not exist");
            return NULL;
        }
    for (unsigned i = 0; i < cfg->ncores; i++)
        if (!pools || !pools[i]) {
            errf(err, errlen, "every core needs a pool");
            return NULL;
        }
    unsigned rs = cfg->ring_size ? cfg->ring_size : 1024;
    steer *s = calloc(1, sizeof(*s));
    if (!s) {
        errf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->cfg.ring_size = rs;
    s->n = cfg->ncores;
    fill_lut(s->lut, s->cfg.key);
    size_t nn = (size_t)s->n * s->n;
    s->fwd = calloc(nn, sizeof(steer_ring *));
    s->ret = calloc(nn, sizeof(steer_ring *));
    s->core = aligned_alloc(64, sizeof(steer_core) * s->n);
    if (!s->fwd || !s->ret || !s->core) {
        errf(err, errlen, "out of memory");
        steer_destroy(s);
        return NULL;
    }
    memset(s->core, 0, sizeof(steer_core) * s->n);
    for (unsigned i = 0; i < s->n; i++) {
        s->core[i].s = s;
        s->core[i].me = i;
        s->core[i].pool = pools[i];
    }
    for (unsigned src = 0; src < s->n; src++)
        for (unsigned dst = 0; dst < s->n; dst++) {
            if (src == dst)
                continue;
            s->fwd[src * s->n + dst] = steer_ring_create(rs);
            s->ret[src * s->n + dst] = steer_ring_create(rs);
            if (!s->fwd[src * s->n + dst] || !s->ret[src * s->n + dst]) {
                errf(err, errlen, "bad ring_size (a power of two) or out of "
                                  "memory");
                steer_destroy(s);
                return NULL;
            }
        }
    return s;
}

void steer_settle(steer *s)
{
    tern_buf *b[64];
    unsigned k;
    if (s->fwd && s->core) {
        for (unsigned src = 0; src < s->n; src++)
            for (unsigned dst = 0; dst < s->n; dst++) {
                steer_ring *r = s->fwd[src * s->n + dst];
                /* frames in flight belong to the sender's pool */
                while (r && (k = steer_ring_dequeue(r, b, 64)))
                    for (unsigned i = 0; i < k; i++)
                        tern_pool_release(s->core[src].pool, b[i]);
                r = s->ret ? s->ret[src * s->n + dst] : NULL;
                while (r && (k = steer_ring_dequeue(r, b, 64)))
                    for (unsigned i = 0; i < k; i++)
                        tern_pool_put(s->core[dst].pool, b[i]);
            }
    }
    if (s->core) {
        for (unsigned c = 0; c < s->n; c++) {
            tern_buf *p = s->core[c].pending;
            while (p) {
                tern_buf *nx = p->next;
                for (unsigned o = 0; o < s->n; o++)
                    if (tern_pool_owns(s->core[o].pool, p)) {
                        tern_pool_put(s->core[o].pool, p);
                        break;
                    }
                p = nx;
            }
            s->core[c].pending = NULL;
        }
    }
}

void steer_destroy(steer *s)
{
    if (!s)
        return;
    steer_settle(s);
    if (s->fwd)
        for (size_t i = 0; i < (size_t)s->n * s->n; i++)
            steer_ring_destroy(s->fwd[i]);
    if (s->ret)
        for (size_t i = 0; i < (size_t)s->n * s->n; i++)
            steer_ring_destroy(s->ret[i]);
    free(s->fwd);
    free(s->ret);
    free(s->core);
    free(s);
}

/* ---------------- classification ---------------- */

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static unsigned core_of_hash(const steer *s, uint32_t h)
{
    unsigned size = s->cfg.reta_size;
    if (size == 0)
        return h % s->n;
    unsigned idx = (size & (size - 1)) == 0 ? (h & (size - 1)) : h % size;
    return s->cfg.reta[idx];
}

/* Hash of (src, dst[, sport, dport]) as the stack's rss_queue_of() and a
 * NIC compute it (tern_toeplitz of the fields in network order, in that
 * order), through the table. */
static uint32_t tuple_hash(const steer *s, const uint8_t *src,
                           const uint8_t *dst, const uint8_t *sport,
                           const uint8_t *dport)
{
    uint32_t h = 0;
    for (unsigned i = 0; i < 4; i++)
        h ^= s->lut[i][src[i]] ^ s->lut[4 + i][dst[i]];
    if (sport)
        h ^= s->lut[8][sport[0]] ^ s->lut[9][sport[1]] ^
             s->lut[10][dport[0]] ^ s->lut[11][dport[1]];
    return h;
}

/* The same for IPv6: (src, dst[, sport, dport]) with 16-byte addresses,
 * the input of the stack's rss_queue_of6(). */
static uint32_t tuple_hash6(const steer *s, const uint8_t *src,
                            const uint8_t *dst, const uint8_t *sport,
                            const uint8_t *dport)
{
    uint32_t h = 0;
    for (unsigned i = 0; i < 16; i++)
        h ^= s->lut[i][src[i]] ^ s->lut[16 + i][dst[i]];
    if (sport)
        h ^= s->lut[32][sport[0]] ^ s->lut[33][sport[1]] ^
             s->lut[34][dport[0]] ^ s->lut[35][dport[1]];
    return h;
}

enum { K_NONE, K_HASH, K_CORE, K_ALL };

/* classify() for an IPv6 packet ip of len bytes (after Ethernet). */
static int classify6(const steer *s, const uint8_t *ip, uint32_t len,
                     uint32_t *out)
{
    if (len < 40 || (ip[0] >> 4) != 6)
        return K_NONE;
    const uint8_t *l4 = ip + 40;
    uint32_t l4len = len - 40;
    uint8_t nh = ip[6]; /* an extension header (fragment, ...): 2-tuple */
    if ((nh == 6 || nh == 17) && l4len >= 4) {
        *out = tuple_hash6(s, ip + 8, ip + 24, l4, l4 + 2);
        return K_HASH;
    }
    if (nh == 58 && l4len >= 8) {
        uint8_t t = l4[0];
        if (t == 129) { /* echo reply: the identifier names the core */
            *out = rd16(l4 + 4) % s->n;
            return K_CORE;
        }
        if (t == 136) /* NA: every core's neighbor cache may wait for it */
            return K_ALL;
        if (t >= 130 && t <= 137) /* MLD query, RS, RA, NS, redirect */
            return K_NONE;        /* one answer, from core 0 */
        if (t >= 1 && t <= 4 && l4len >= 8 + 40 + 4) {
            /* an error quoting one of our packets: its flow's core (the
             * peer's packets of it have the addresses and ports swapped) */
            const uint8_t *in = l4 + 8;
            if ((in[0] >> 4) == 6 && (in[6] == 6 || in[6] == 17)) {
                *out = tuple_hash6(s, in + 24, in + 8, in + 42, in + 40);
                return K_HASH;
            }
        }
    }
    *out = tuple_hash6(s, ip + 8, ip + 24, NULL, NULL);
    return K_HASH;
}

/* What a frame is: K_HASH with *out a hash, K_CORE with *out a core,
 * K_ALL, or K_NONE (core 0). */
static int classify(const steer *s, const tern_buf *f, uint32_t *out)
{
    const uint8_t *p = f->data;
    uint32_t len = f->len;
    if (len < 14)
        return K_NONE;
    uint16_t type = rd16(p + 12);
    if (type == 0x0806) {
        /* ARP: replies to every core, requests to one */
        if (len >= 22 && rd16(p + 20) == 2)
            return K_ALL;
        return K_NONE;
    }
    if (type != 0x0800)
        return type == 0x86dd ? classify6(s, p + 14, len - 14, out) : K_NONE;
    if (len < 34)
        return K_NONE;
    const uint8_t *ip = p + 14;
    uint32_t ihl = (uint32_t)(ip[0] & 15) * 4;
    if ((ip[0] >> 4) != 4 || ihl < 20 || len < 14 + ihl)
        return K_NONE;
    bool frag = (rd16(ip + 6) & 0x3fff) != 0; /* MF or an offset */
    const uint8_t *l4 = ip + ihl;
    uint32_t l4len = len - 14 - ihl;
    uint8_t proto = ip[9];
    if (!frag && (proto == 6 || proto == 17) && l4len >= 4) {
        *out = tuple_hash(s, ip + 12, ip + 16, l4, l4 + 2);
        return K_HASH;
    }
    if (!frag && proto == 1 && l4len >= 8) {
        uint8_t t = l4[0];
        if (t == 0) { /* echo reply: the identifier names the core */
            *out = rd16(l4 + 4) % s->n;
            return K_CORE;
        }
        if ((t == 3 || t == 4 || t == 5 || t == 11 || t == 12) &&
            l4len >= 8 + 20 + 4) {
            /* an error quoting one of our packets: its flow's core */
            const uint8_t *in = l4 + 8;
            uint32_t ihl2 = (uint32_t)(in[0] & 15) * 4;
            if ((in[0] >> 4) == 4 && ihl2 >= 20 &&
                l4len >= 8 + ihl2 + 4 && (in[9] == 6 || in[9] == 17)) {
                const uint8_t *ports = in + ihl2;
                /* we sent src=us, dst=peer: the peer's packets of that
                 * flow have them swapped */
                *out = tuple_hash(s, in + 16, in + 12, ports + 2, ports);
                return K_HASH;
            }
        }
    }
    *out = tuple_hash(s, ip + 12, ip + 16, NULL, NULL);
    return K_HASH;
}

bool steer_hash(const steer *s, const tern_buf *frame, uint32_t *hash)
{
    return classify(s, frame, hash) == K_HASH;
}

unsigned steer_core_of(const steer *s, const tern_buf *frame)
{
    uint32_t v = 0;
    switch (classify(s, frame, &v)) {
    case K_HASH: return core_of_hash(s, v);
    case K_CORE: return v;
    case K_ALL: return STEER_TO_ALL;
    default: return 0;
    }
}

/* ---------------- the per-core step ---------------- */

/* Send the staged frames; a full ring drops the rest (my buffers). */
static void flush_stage(steer *s, steer_core *c)
{
    for (unsigned d = 0; d < s->n; d++) {
        unsigned k = c->nstage[d];
        if (!k)
            continue;
        unsigned put = steer_ring_enqueue(s->fwd[c->me * s->n + d],
                                          c->stage[d], k);
        c->st.sent += put;
        if (put)
            c->dirty |= 1ull << d;
        for (unsigned i = put; i < k; i++) {
            tern_pool_release(c->pool, c->stage[d][i]);
            c->st.ring_drops++;
        }
        c->nstage[d] = 0;
    }
}

static void stage(steer *s, steer_core *c, unsigned d, tern_buf *b)
{
    if (c->nstage[d] == STEER_STAGE)
        flush_stage(s, c);
    c->stage[d][c->nstage[d]++] = b;
}

/* A copy of a frame (all segments) in one buffer of my pool, or NULL. */
static tern_buf *copy_frame(steer_core *c, const tern_buf *f)
{
    tern_buf *b = tern_pool_alloc(c->pool);
    if (!b)
        return NULL;
    size_t room = b->size - (size_t)(b->data - b->head);
    size_t len = 0;
    for (const tern_buf *x = f; x; x = x->frag) {
        if (len + x->len > room) {
            tern_pool_release(c->pool, b);
            return NULL;
        }
        memcpy(b->data + len, x->data, x->len);
        len += x->len;
    }
    b->len = (uint32_t)len;
    b->flags = f->flags;
    return b;
}

static bool send_home(steer *s, steer_core *c, tern_buf *b)
{
    for (unsigned o = 0; o < s->n; o++) {
        if (o == c->me || !tern_pool_owns(s->core[o].pool, b))
            continue;
        if (steer_ring_enqueue(s->ret[c->me * s->n + o], &b, 1) == 1) {
            c->st.returned++;
            return true;
        }
        return false;
    }
    return true; /* no pool owns it: not ours to keep (cannot happen) */
}

void steer_reclaim(steer *s, unsigned me)
{
    steer_core *c = &s->core[me];
    tern_buf *b[64];
    unsigned k;
    for (unsigned src = 0; src < s->n; src++) {
        if (src == me)
            continue;
        steer_ring *r = s->ret[src * s->n + me];
        while ((k = steer_ring_dequeue(r, b, 64)))
            for (unsigned i = 0; i < k; i++)
                tern_pool_put(c->pool, b[i]);
    }
}

bool steer_pending(steer *s, unsigned me)
{
    for (unsigned src = 0; src < s->n; src++)
        if (src != me && steer_ring_count(s->fwd[src * s->n + me]))
            return true;
    return false;
}

uint64_t steer_take_dirty(steer *s, unsigned me)
{
    uint64_t d = s->core[me].dirty;
    s->core[me].dirty = 0;
    return d;
}

unsigned steer_rx(steer *s, unsigned me, tern_buf **in, unsigned n,
                  tern_buf **out, unsigned max)
{
    steer_core *c = &s->core[me];
    unsigned k, nout = 0;
    /* 1. buffers other cores are done with come home */
    steer_reclaim(s, me);
    /* 2. earlier returns that found a full ring */
    tern_buf *p = c->pending, **link = &c->pending;
    while (p) {
        tern_buf *nx = p->next;
        if (send_home(s, c, p))
            *link = nx;
        else
            link = &p->next;
        p = nx;
    }
    /* 3. my burst: keep mine, stage the others */
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = in[i];
        unsigned d = steer_core_of(s, f);
        if (d == me) {
            out[nout++] = f;
            c->st.kept++;
        } else if (d == STEER_TO_ALL) {
            for (unsigned o = 0; o < s->n; o++) {
                if (o == me)
                    continue;
                tern_buf *cp = copy_frame(c, f);
                if (cp)
                    stage(s, c, o, cp);
                else
                    c->st.copy_drops++;
            }
            out[nout++] = f;
            c->st.broadcast++;
        } else {
            stage(s, c, d, f);
        }
    }
    flush_stage(s, c);
    /* 4. what the others sent me, round robin over them */
    for (unsigned j = 0; j < s->n && nout < max; j++) {
        unsigned src = (c->next_src + j) % s->n;
        if (src == me)
            continue;
        k = steer_ring_dequeue(s->fwd[src * s->n + me], out + nout,
                               max - nout);
        nout += k;
        c->st.received += k;
    }
    c->next_src = (c->next_src + 1) % s->n;
    return nout;
}

/* ---------------- buffer ops ---------------- */

static tern_buf *ops_alloc(void *ctx)
{
    steer_core *c = ctx;
    return tern_pool_alloc(c->pool);
}

static void ops_free(void *ctx, tern_buf *b)
{
    steer_core *c = ctx;
    if (tern_pool_owns(c->pool, b)) {
        tern_pool_put(c->pool, b);
        return;
    }
    if (!send_home(c->s, c, b)) {
        c->st.return_stalls++;
        b->next = c->pending;
        c->pending = b;
    }
}

tern_buf_ops steer_buf_ops(steer *s, unsigned me)
{
    return (tern_buf_ops){.alloc = ops_alloc, .free = ops_free,
                          .ctx = &s->core[me]};
}

const steer_config *steer_get_config(const steer *s) { return &s->cfg; }

const steer_stats *steer_get_stats(const steer *s, unsigned me)
{
    return &s->core[me].st;
}
