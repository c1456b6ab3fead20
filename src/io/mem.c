/* mem.c - the in-memory link between two stacks, with a seeded fault
 * injector (mem.h, docs/mem-driver.md).
 *
 * Each direction is a bounded FIFO ring of frames and their due times (two
 * arrays: rx hands out the frames as one run of pointers). Delivery order
 * is ring order and due times never decrease along the ring, so rx is a scan
 * from the head. Reordering holds one frame aside and puts it in the ring
 * after the next frame. Unfaulted, untimed frames take the short path: pool
 * alloc, memcpy, ring push; the PRNG is not touched. */
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_offload.h"

#define DEFAULT_POOL 4096u
#define DEFAULT_BUF 2048u
#define DEFAULT_QUEUE 1024u
#define MIN_CAPACITY 256u          /* all headers fit in a first segment */
#define WIRE_OVERHEAD 24u          /* FCS 4 + preamble 8 + inter-frame gap 12 */
#define DEFAULT_HOLD_NS 1000000u
#define TX_OFFLOAD_FLAGS \
    (TERN_BUF_TX_IP_CSUM | TERN_BUF_TX_L4_CSUM | TERN_BUF_TX_TSO)

/* Frames sent by one end towards the other (the sending end's tx_ctx). */
typedef struct ml_dir {
    tern_buf **ring;           /* the frames, mask + 1 slots */
    uint64_t *due;             /* due[i]: when ring[i] may be delivered,
                                  for indices head..dated-1 */
    uint32_t mask, head, tail, limit;
    uint32_t dated;            /* head <= dated <= tail: frames from here
                                  on are due at once (due[] not written:
                                  tx_plain stores none) */
    tern_pool *src, *dst;      /* sender's and receiver's pools */
    uint32_t src_caps, dst_caps;
    uint32_t capacity;         /* payload bytes of one receiver buffer */
    bool faulty;               /* some probability > 0 */
    bool timed;                /* delay or rate */
    bool plain;                /* none of: faults, time, capture, RX checksum
                                  flags (tx_plain may run; see set_plain) */
    uint64_t ring_bytes;       /* bytes of the frames in the ring */
    uint32_t unlanded;         /* frames in the ring that are still the
                                  sender's buffers (see land) */
    tern_memlink *link;
    tern_memlink_faults f;
    uint64_t thr_loss, thr_dup, thr_reorder, thr_corrupt; /* of 2^53 */
    uint64_t rng;
    uint64_t busy_until, rate_rem;  /* rate limiter: wire free at, carry */
    tern_buf *held;            /* frame waiting to follow the next one */
    uint64_t held_deadline;
    tern_pcap *pcap;
    bool own_pcap;
    tern_memlink_stats st;
    /* by_ref: receive descriptors that view the sender's buffers */
    tern_buf *views;           /* nviews descriptors, no memory of their own */
    tern_buf **view_free;      /* LIFO of the unused ones */
    uint32_t nviews, view_top;
} __attribute__((aligned(64))) ml_dir;  /* each direction on its own lines */

struct tern_memlink {
    ml_dir dir[2];             /* dir[e]: frames sent by end e */
    tern_pool *pool[2];
    uint32_t caps[2];
    uint64_t now;
    bool verify;
    bool partial_csum;
    bool by_ref;
    bool rx_sum;
};

/* ---- PRNG: splitmix64 seeding, xorshift64* stream ---- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rnd(ml_dir *d)
{
    d->rng ^= d->rng >> 12;
    d->rng ^= d->rng << 25;
    d->rng ^= d->rng >> 27;
    return d->rng * 0x2545f4914f6cdd1dull;
}

/* true with probability thr / 2^53. */
static bool chance(ml_dir *d, uint64_t thr)
{
    return thr && (rnd(d) >> 11) < thr;
}

static uint64_t threshold(double p)
{
    if (!(p > 0))
        return 0;
    if (p >= 1)
        return 1ull << 53;
    return (uint64_t)(p * 9007199254740992.0);
}

/* ---- configuration ---- */

/* Whether frames of d can take tx_plain: the one test of the fast path,
 * redone whenever what it depends on changes. */
static void set_plain(ml_dir *d)
{
    d->plain = !d->faulty && !d->timed && !d->pcap && !d->link->by_ref &&
               !(d->dst_caps & (TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM));
}

void tern_memlink_config_defaults(tern_memlink_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->pool_size = DEFAULT_POOL;
    cfg->buf_size = DEFAULT_BUF;
    cfg->queue_len = DEFAULT_QUEUE;
}

void tern_memlink_set_faults(tern_memlink *l, int from_end,
                             const tern_memlink_faults *f)
{
    ml_dir *d = &l->dir[from_end & 1];
    d->f = *f;
    if (!d->f.reorder_hold_ns)
        d->f.reorder_hold_ns = DEFAULT_HOLD_NS;
    d->thr_loss = threshold(f->loss);
    d->thr_dup = threshold(f->dup);
    d->thr_reorder = threshold(f->reorder);
    d->thr_corrupt = threshold(f->corrupt);
    d->faulty = d->thr_loss || d->thr_dup || d->thr_reorder || d->thr_corrupt;
    d->timed = f->delay_ns || f->rate_bps;
    set_plain(d);
}

static bool fail(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "memlink: %s", msg);
    return false;
}

static bool check_config(const tern_memlink_config *c, char *err, size_t n)
{
    const tern_memlink_faults *f = &c->faults;
    if (c->buf_size && c->buf_size < TERN_HEADROOM + MIN_CAPACITY)
        return fail(err, n, "buf_size must be at least TERN_HEADROOM + 256");
    if (c->queue_len > (1u << 30))
        return fail(err, n, "queue_len too large");
    if (!(f->loss >= 0 && f->loss <= 1) || !(f->dup >= 0 && f->dup <= 1) ||
        !(f->reorder >= 0 && f->reorder <= 1) ||
        !(f->corrupt >= 0 && f->corrupt <= 1))
        return fail(err, n, "fault probabilities must be within 0..1");
    return true;
}

tern_memlink *tern_memlink_create(const tern_memlink_config *cfg, char *err,
                                  size_t errlen)
{
    if (!check_config(cfg, err, errlen))
        return NULL;
    unsigned pool_size = cfg->pool_size ? cfg->pool_size : DEFAULT_POOL;
    unsigned buf_size = cfg->buf_size ? cfg->buf_size : DEFAULT_BUF;
    unsigned qlen = cfg->queue_len ? cfg->queue_len : DEFAULT_QUEUE;
    uint32_t ring = 1;
    while (ring < qlen)
        ring <<= 1;

    /* aligned as its directions are (a cache line each) */
    tern_memlink *l = aligned_alloc(_Alignof(tern_memlink), sizeof(*l));
    if (l)
        memset(l, 0, sizeof(*l));
    if (!l) {
        fail(err, errlen, "out of memory");
        return NULL;
    }
    uint64_t seed = cfg->seed;
    l->verify = cfg->verify_csum;
    l->partial_csum = cfg->partial_csum;
    l->rx_sum = cfg->rx_sum;
    /* by_ref only where a TSO frame can meet an LRO+SG receiver: other
     * links keep tx_plain (see set_plain) */
    const uint32_t lro_sg = TERN_CAP_LRO | TERN_CAP_SG;
    l->by_ref = cfg->by_ref &&
                (((cfg->caps[0] & TERN_CAP_TSO) &&
                  (cfg->caps[1] & lro_sg) == lro_sg) ||
                 ((cfg->caps[1] & TERN_CAP_TSO) &&
                  (cfg->caps[0] & lro_sg) == lro_sg));
    for (int e = 0; e < 2; e++) {
        l->caps[e] = cfg->caps[e];
        l->dir[e].link = l;
        l->pool[e] = tern_pool_create(pool_size, buf_size);
        l->dir[e].ring = calloc(ring, sizeof(tern_buf *));
        l->dir[e].due = calloc(ring, sizeof(uint64_t));
        if (l->by_ref) {
            /* a view per receiver buffer and as many again: a frame's
             * payload may span two sender buffers */
            uint32_t n = 2 * pool_size;
            ml_dir *d = &l->dir[e];
            d->views = calloc(n, sizeof(tern_buf));
            d->view_free = calloc(n, sizeof(tern_buf *));
            if (d->views && d->view_free) {
                for (uint32_t i = 0; i < n; i++) {
                    d->views[i].refs = TERN_BUF_FREE_REFS;
                    d->view_free[n - 1 - i] = &d->views[i];
                }
                d->nviews = d->view_top = n;
            }
        }
        if (!l->pool[e] || !l->dir[e].ring || !l->dir[e].due ||
            (l->by_ref && !l->dir[e].nviews)) {
            fail(err, errlen, "out of memory for pools or rings");
            tern_memlink_destroy(l);
            return NULL;
        }
    }
    for (int e = 0; e < 2; e++) {
        ml_dir *d = &l->dir[e];
        d->mask = ring - 1;
        d->limit = qlen;
        d->src = l->pool[e];
        d->dst = l->pool[!e];
        d->src_caps = l->caps[e];
        d->dst_caps = l->caps[!e];
        d->capacity = buf_size - TERN_HEADROOM;
        /* One stream per direction: traffic one way does not shift the
         * faults of the other. xorshift must not start at 0. */
        uint64_t s = seed ^ (e ? 0x5ca1ab1e0ddba11ull : 0);
        d->rng = splitmix64(&s) | 1;
        tern_memlink_set_faults(l, e, &cfg->faults);
    }
    return l;
}

void tern_memlink_destroy(tern_memlink *l)
{
    if (!l)
        return;
    for (int e = 0; e < 2; e++) {
        ml_dir *d = &l->dir[e];
        if (d->own_pcap)
            tern_pcap_close(d->pcap);
        free(d->ring);
        free(d->due);
        free(d->views);
        free(d->view_free);
        tern_pool_destroy(l->pool[e]);  /* frames in flight go with it */
    }
    free(l);
}

/* ---- views (by_ref): a receive descriptor over a sender's buffer ---- */

static inline bool is_view(const ml_dir *d, const tern_buf *b)
{
    return (uintptr_t)b - (uintptr_t)d->views <
           (uintptr_t)d->nviews * sizeof(tern_buf);
}

/* A view whose last owner left: drop its hold on the sender's buffer. */
static void view_put(ml_dir *d, tern_buf *v)
{
    tern_pool_release_one(d->src, (tern_buf *)v->user);
    v->refs = TERN_BUF_FREE_REFS;
    v->user = NULL;
    d->view_free[d->view_top++] = v;
}

/* Drop one reference of each piece of frame b: views of `views` (a
 * direction), or buffers of pool `own`. */
static void release_mixed(ml_dir *views, tern_pool *own, tern_buf *b)
{
    while (b) {
        tern_buf *next = b->frag;
        if (!is_view(views, b))
            tern_pool_release_one(own, b);
        else if (--b->refs == 0)
            view_put(views, b);
        b = next;
    }
}

/* Release a frame towards d's receiver that may hold views. */
static void ml_release(ml_dir *d, tern_buf *b) { release_mixed(d, d->dst, b); }

/* Drop the link's reference on a frame sent through d: its pieces are the
 * sender's buffers, or views it received from the other direction (an
 * application may send what it got). */
static void src_release(tern_memlink *l, ml_dir *d, tern_buf *f)
{
    if (l->by_ref)
        release_mixed(&l->dir[d == &l->dir[0]], d->src, f);
    else
        tern_pool_release(d->src, f);
}

/* Views of len bytes at offset off of chain f, each holding a reference on
 * the sender's buffer it shows; NULL when views run out or a piece is not
 * the sender's own (then the frame is copied). */
static tern_buf *view_chain(ml_dir *d, const tern_buf *f, uint32_t off,
                            uint32_t len)
{
    tern_buf *first = NULL, **link = &first;
    for (tern_buf *s = (tern_buf *)f; s && len; s = s->frag) {
        if (off >= s->len) {
            off -= s->len;
            continue;
        }
        if (!d->view_top || !tern_pool_owns(d->src, s)) {
            ml_release(d, first);
            return NULL;
        }
        uint32_t n = s->len - off < len ? s->len - off : len;
        tern_buf *v = d->view_free[--d->view_top];
        /* no headroom: headers written before data would land in the
         * sender's bytes */
        *v = (tern_buf){.data = s->data + off, .len = n, .size = n,
                        .head = s->data + off, .refs = 1, .user = s};
        tern_buf_ref(s);
        *link = v;
        link = &v->frag;
        off = 0;
        len -= n;
    }
    return first;
}

/* Buffer ops of the end that d delivers to. */
static tern_buf *view_ops_alloc(void *ctx)
{
    return tern_pool_alloc(((ml_dir *)ctx)->dst);
}

static void view_ops_free(void *ctx, tern_buf *b)
{
    ml_dir *d = ctx;
    if (is_view(d, b))
        view_put(d, b);
    else
        tern_pool_put(d->dst, b);
}

tern_buf_ops tern_memlink_buf_ops(tern_memlink *l, int end)
{
    if (!l->by_ref)
        return tern_pool_ops(l->pool[end & 1]);
    tern_buf_ops o = tern_pool_ops(l->pool[end & 1]);
    o.alloc = view_ops_alloc;
    o.free = view_ops_free;
    o.ctx = &l->dir[!(end & 1)];
    return o;
}

/* ---- accessors ---- */

tern_pool *tern_memlink_pool(tern_memlink *l, int end) { return l->pool[end & 1]; }
uint32_t tern_memlink_caps(const tern_memlink *l, int end) { return l->caps[end & 1]; }
void *tern_memlink_tx_ctx(tern_memlink *l, int end) { return &l->dir[end & 1]; }
const tern_memlink_stats *tern_memlink_get_stats(const tern_memlink *l, int from_end)
{
    return &l->dir[from_end & 1].st;
}

void tern_memlink_set_time(tern_memlink *l, uint64_t now_ns)
{
    if (now_ns > l->now)
        l->now = now_ns;
}

void tern_memlink_attach_pcap(tern_memlink *l, int end, tern_pcap *pc)
{
    ml_dir *d = &l->dir[end & 1];
    if (d->own_pcap)
        tern_pcap_close(d->pcap);
    d->pcap = pc;
    d->own_pcap = false;
    set_plain(d);
}

int tern_memlink_set_pcap(tern_memlink *l, int end, const char *path,
                          char *err, size_t errlen)
{
    tern_pcap *pc = NULL;
    if (path && !(pc = tern_pcap_open(path, err, errlen)))
        return -1;
    tern_memlink_attach_pcap(l, end, pc);
    l->dir[end & 1].own_pcap = pc != NULL;
    return 0;
}

/* ---- the wire ---- */

/* 16 bytes: compilers make this one unaligned vector load and store. */
static inline void copy16(uint8_t *dst, const uint8_t *src)
{
    memcpy(dst, src, 16);
}

/* The link copy of a flat frame. Frames of 17 to 256 bytes (requests,
 * replies, ACKs) are moved inline 16 bytes at a time: a jump into a run of
 * moves copies the whole 16-byte blocks before the last one, and the last
 * move ends at the frame's end (overlapping the one before). A libc call
 * cost about as much as the moves and made the compiler spill the caller's
 * registers around it. src and dst never overlap (two buffers). */
#define SMALL_MIN 17u
#define SMALL_MAX 256u

/* Whether ml_copy_small takes a frame of len bytes. */
static inline bool small_frame(uint32_t len)
{
    return len - SMALL_MIN <= SMALL_MAX - SMALL_MIN;
}

static inline void ml_copy_small(uint8_t *dst, const uint8_t *src,
                                 uint32_t len)
{
    /* Whole 16-byte blocks before the last move, minus one: 0..14. With
     * the range known, gcc 12 still tests it again before the jump; hidden
     * behind an empty asm, the index is only known to fit the mask, and
     * the 16 cases (15 is never taken) need no test. */
    uint32_t blocks = (len - SMALL_MIN) / 16;
#if defined(__GNUC__)
    __asm__("" : "+r"(blocks));
#endif
    switch (blocks & 15) {
    case 15: copy16(dst + 240, src + 240); /* fall through */
    case 14: copy16(dst + 224, src + 224); /* fall through */
    case 13: copy16(dst + 208, src + 208); /* fall through */
    case 12: copy16(dst + 192, src + 192); /* fall through */
    case 11: copy16(dst + 176, src + 176); /* fall through */
    case 10: copy16(dst + 160, src + 160); /* fall through */
    case 9: copy16(dst + 144, src + 144); /* fall through */
    case 8: copy16(dst + 128, src + 128); /* fall through */
    case 7: copy16(dst + 112, src + 112); /* fall through */
    case 6: copy16(dst + 96, src + 96); /* fall through */
    case 5: copy16(dst + 80, src + 80); /* fall through */
    case 4: copy16(dst + 64, src + 64); /* fall through */
    case 3: copy16(dst + 48, src + 48); /* fall through */
    case 2: copy16(dst + 32, src + 32); /* fall through */
    case 1: copy16(dst + 16, src + 16); /* fall through */
    default: copy16(dst, src);
    }
    copy16(dst + len - 16, src + len - 16);
}

static inline void ml_copy(uint8_t *dst, const uint8_t *src, uint32_t len)
{
    if (small_frame(len))
        ml_copy_small(dst, src, len);
    else
        memcpy(dst, src, len);
}

/* When a frame of len bytes pushed now arrives. */
static uint64_t due_time(tern_memlink *l, ml_dir *d, uint32_t len)
{
    uint64_t t = l->now;
    if (d->f.rate_bps) {
        uint64_t bits = (uint64_t)(len + WIRE_OVERHEAD) * 8 * 1000000000ull +
                        d->rate_rem;
        if (d->busy_until > t)
            t = d->busy_until;
        t += bits / d->f.rate_bps;
        d->rate_rem = bits % d->f.rate_bps;
        d->busy_until = t;
    }
    return t + d->f.delay_ns;
}

/* Append a frame to the ring (its place in delivery order). */
static void push(tern_memlink *l, ml_dir *d, tern_buf *b)
{
    if (d->tail - d->head >= d->limit) {
        d->st.queue_drops++;
        ml_release(d, b);
        return;
    }
    uint64_t due = 0;  /* untimed: deliverable whatever `now` rx gets */
    uint32_t len = b->frag ? ml_frame_len(b) : b->len;
    if (d->timed)
        due = due_time(l, d, len);
    if (due) {
        /* Frames since the last dated one had no due stored: 0. */
        for (uint32_t k = d->dated; k != d->tail; k++)
            d->due[k & d->mask] = 0;
        d->due[d->tail & d->mask] = due;
        d->dated = d->tail + 1;
    }
    d->ring[d->tail++ & d->mask] = b;
    d->ring_bytes += len;
    if (d->pcap)
        tern_pcap_write(d->pcap, b, due > l->now ? due : l->now);
}

static void release_held(tern_memlink *l, ml_dir *d)
{
    tern_buf *h = d->held;
    d->held = NULL;
    push(l, d, h);
}

/* A fresh receiver frame of len bytes (a chain if it needs several buffers
 * and the receiver takes them), or NULL counted as a drop. */
static tern_buf *rx_frame(ml_dir *d, uint32_t len)
{
    if (len > d->capacity && !(d->dst_caps & TERN_CAP_SG)) {
        d->st.oversize_drops++;
        return NULL;
    }
    tern_buf *first = NULL, **link = &first;
    do {
        tern_buf *b = tern_pool_alloc(d->dst);
        if (!b) {
            d->st.pool_drops++;
            if (first)
                tern_pool_release(d->dst, first);
            return NULL;
        }
        b->len = len < d->capacity ? len : d->capacity;
        len -= b->len;
        *link = b;
        link = &b->frag;
    } while (len);
    return first;
}

static tern_buf *copy_frame(ml_dir *d, const tern_buf *src)
{
    uint32_t len = ml_frame_len(src);
    tern_buf *b = rx_frame(d, len);
    if (b) {
        ml_chain_copy(b, 0, src, 0, len);
        b->flags = src->flags & (TERN_BUF_RX_LRO);
        b->tso_mss = src->tso_mss;
    }
    return b;
}

/* Flip one random bit of one random byte past the Ethernet header. */
static void corrupt(ml_dir *d, tern_buf *b)
{
    uint32_t len = ml_frame_len(b), skip = len > 14 ? 14 : 0;
    if (len == 0)
        return;
    uint64_t r = rnd(d);
    uint32_t pos = skip + (uint32_t)((r >> 3) % (len - skip));
    for (; pos >= b->len; b = b->frag)
        pos -= b->len;
    b->data[pos] ^= (uint8_t)(1u << (r & 7));
    d->st.corrupted++;
}

/* One copy of a frame after the loss/dup decisions: corruption, receive
 * flags, then in the ring now or held behind the next frame. */
static void deliver_copy(tern_memlink *l, ml_dir *d, tern_buf *b, bool suspect)
{
    if (chance(d, d->thr_corrupt)) {
        corrupt(d, b);
        suspect = true;
    }
    if (d->dst_caps & (TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM))
        b->flags |= ml_rx_flags(b, d->dst_caps, suspect || l->verify);
    if (chance(d, d->thr_reorder) && !d->held) {
        d->held = b;
        d->held_deadline = l->now + d->f.reorder_hold_ns;
        return;
    }
    push(l, d, b);
    if (d->held) {  /* b overtook the held frame */
        d->st.reordered++;
        release_held(l, d);
    }
}

/* A frame enters the wire (after offloads). suspect: its checksums are not
 * known to be right (offload error), so RX flags must really verify. */
static void wire_out(tern_memlink *l, ml_dir *d, tern_buf *b, bool suspect)
{
    d->st.wire++;
    if (!d->faulty && !d->held) {
        if (d->dst_caps & (TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM))
            b->flags |= ml_rx_flags(b, d->dst_caps, suspect || l->verify);
        push(l, d, b);
        return;
    }
    if (d->held && l->now >= d->held_deadline)
        release_held(l, d);
    if (chance(d, d->thr_loss)) {
        d->st.lost++;
        ml_release(d, b);
        return;
    }
    tern_buf *twin = NULL;
    if (chance(d, d->thr_dup)) {
        d->st.duplicated++;
        twin = copy_frame(d, b);  /* before b can be corrupted */
    }
    deliver_copy(l, d, b, suspect);
    if (twin)
        deliver_copy(l, d, twin, suspect);
}

/* Whether the emulated NIC must really sum the L4 checksums of d's frames.
 * With partial_csum it skips that when nothing on the way reads them (see
 * mem.h): no capture, no corruption, no verify_csum, and a receiver that
 * trusts RX_L4_CSUM. */
static bool l4_sum_needed(const tern_memlink *l, const ml_dir *d)
{
    return !l->partial_csum || d->pcap || d->thr_corrupt || l->verify ||
           !(d->dst_caps & TERN_CAP_RX_L4_CSUM);
}

/* by_ref: an LRO frame of TSO frame f as a receiver buffer for the headers
 * (written by the caller) followed by views of f's payload; NULL when it
 * must be copied (no by_ref, no SG, faults or a capture on the way, or no
 * views or buffer left). */
static tern_buf *lro_by_ref(tern_memlink *l, ml_dir *d, const tern_buf *f,
                            const ml_tso *t)
{
    if (!l->by_ref || !(d->dst_caps & TERN_CAP_SG) || d->faulty || d->pcap)
        return NULL;
    tern_buf *v = view_chain(d, f, t->hdr, t->payload);
    tern_buf *b = v ? rx_frame(d, t->hdr) : NULL;
    if (!b) {
        ml_release(d, v);
        return NULL;
    }
    b->frag = v;
    d->st.by_ref_frames++;
    return b;
}

/* Cut a TSO frame into segments, or pass it whole as LRO when the receiver
 * takes that. false when the frame's headers do not allow TSO. */
static bool tx_tso(tern_memlink *l, ml_dir *d, const tern_buf *f)
{
    ml_tso t;
    if (!f->tso_mss || !ml_tso_parse(f, &t))
        return false;
    d->st.tso_frames++;
    bool l4_sum = l4_sum_needed(l, d);
    uint32_t total = t.hdr + t.payload;
    if ((d->dst_caps & TERN_CAP_LRO) && total - t.l2 <= 0xffff &&
        (total <= d->capacity || (d->dst_caps & TERN_CAP_SG))) {
        tern_buf *b = lro_by_ref(l, d, f, &t);
        if (!b && (b = rx_frame(d, total)))
            ml_chain_copy(b, t.hdr, f, t.hdr, t.payload);
        if (b) {
            ml_tso_headers(b, &t, 0, 0, t.payload, l4_sum);
            b->flags = TERN_BUF_RX_LRO;
            b->tso_mss = f->tso_mss;
            d->st.lro_frames++;
            wire_out(l, d, b, false);
        }
        return true;
    }
    uint32_t off = 0, idx = 0;
    do {
        uint32_t n = t.payload - off < f->tso_mss ? t.payload - off : f->tso_mss;
        tern_buf *b = rx_frame(d, t.hdr + n);
        if (b) {
            ml_chain_copy(b, t.hdr, f, t.hdr + off, n);
            ml_tso_headers(b, &t, idx, off, n, l4_sum);
            d->st.tso_segments++;
            wire_out(l, d, b, false);
        }
        off += n;
        idx++;
    } while (off < t.payload);
    return true;
}

/* Frames with chains or offload flags. */
static void tx_slow(tern_memlink *l, ml_dir *d, tern_buf *f)
{
    uint16_t want = f->flags & TX_OFFLOAD_FLAGS;
    uint32_t have = (d->src_caps & TERN_CAP_TX_IP_CSUM ? TERN_BUF_TX_IP_CSUM : 0) |
                    (d->src_caps & TERN_CAP_TX_L4_CSUM ? TERN_BUF_TX_L4_CSUM : 0) |
                    (d->src_caps & TERN_CAP_TSO ? TERN_BUF_TX_TSO : 0);
    bool suspect = false;
    if (want & ~have) {  /* a real NIC would send the bytes as they are */
        d->st.offload_errors++;
        suspect = true;
        want &= have;
    }
    if ((want & TERN_BUF_TX_TSO) && tx_tso(l, d, f))
        return;
    if (want & TERN_BUF_TX_TSO) {
        d->st.offload_errors++;
        suspect = true;
    }
    tern_buf *b = copy_frame(d, f);
    if (!b)
        return;
    b->flags = 0;
    b->tso_mss = 0;
    want &= TERN_BUF_TX_IP_CSUM | TERN_BUF_TX_L4_CSUM;
    if (want) {
        uint16_t fill = want;
        if (!suspect && !l4_sum_needed(l, d))
            fill &= (uint16_t)~TERN_BUF_TX_L4_CSUM;  /* stays partial */
        if (ml_tx_csum(b, f, fill)) {
            d->st.csum_filled++;
        } else {
            d->st.offload_errors++;
            suspect = true;
        }
    }
    wire_out(l, d, b, suspect);
}

/* One small frame of tx_plain: into the receiver's buffer b, in the ring
 * at slot, and the sender's reference dropped. */
static inline void plain_frame(tern_pool *dst, tern_pool *src, tern_buf *b,
                               tern_buf *f, uint32_t len, tern_buf **slot)
{
    b = tern_pool_ready(dst, b);
    b->len = len;   /* before the byte stores, which may alias it */
    ml_copy_small(b->data, f->data, len);
    *slot = b;
    tern_pool_release_one(src, f);
}

/* The common case, kept tight: nothing to inject, time or capture (d->plain,
 * no held frame), and flat frames without offload flags. Stops at the first
 * frame it cannot take as simply, and at the ring's end, so that the slots
 * it fills are one run (tern_memlink_tx goes on with the rest).
 *
 * Small frames (requests, replies, ACKs) are copied now. Larger ones go in
 * the ring as they are, still the sender's, and are copied when the
 * receiver takes them (land): then the receiver reads its copy while it
 * is still in cache, rather than a window's worth of frames later, and the
 * link holds one copy of the data in flight, not two. */
static unsigned tx_plain(ml_dir *d, tern_buf **frames, unsigned n)
{
    tern_pool *dst = d->dst, *src = d->src;
    uint32_t tail = d->tail, at = tail & d->mask;
    uint32_t room = d->limit - (tail - d->head);
    uint32_t run = d->mask + 1 - at;   /* slots before the ring wraps */
    if (n > room)
        n = room;               /* the general path counts the queue drops */
    if (n > run)
        n = run;
    /* The receiver's free stack, its top kept here for the burst: only
     * this loop takes from it (the releases go to src, the other pool).
     * A buffer for every frame, though only small ones take one now: one
     * bound for both loops (the general path counts the pool drops). */
    if (n > dst->stack.top)
        n = dst->stack.top;
    tern_buf **top = dst->stack.free + dst->stack.top;
    tern_buf **slot = d->ring + at;
    uint32_t cap = d->capacity;
    uint64_t bytes = 0;
    unsigned i = 0, start, later = 0;
    do {
        start = i;
        /* Frames of SMALL_MIN..SMALL_MAX bytes (requests, replies, ACKs):
         * no call here, so the loop's values stay in registers. */
        for (; i < n; i++) {
            tern_buf *f = frames[i];
            uint32_t len = f->len;
            if (f->frag || (f->flags & TX_OFFLOAD_FLAGS) || !small_frame(len))
                break;
            bytes += len;
            plain_frame(dst, src, *--top, f, len, slot + i);
        }
        /* Longer ones that fit a receiver buffer (bulk data): queued as
         * they are, the link keeping the sender's reference. (Frames below
         * SMALL_MIN bytes, not Ethernet frames, go to tx_general.) */
        for (; i < n; i++) {
            tern_buf *f = frames[i];
            uint32_t len = f->len;
            if (f->frag || (f->flags & TX_OFFLOAD_FLAGS) || len <= SMALL_MAX ||
                len > cap)
                break;
            bytes += len;
            slot[i] = f;
            later++;
        }
    } while (i < n && i > start);   /* stopped at a frame for tx_general */
    dst->stack.top = (unsigned)(top - dst->stack.free);
    d->unlanded += later;
    d->tail = tail + i;
    d->ring_bytes += bytes;
    d->st.sent += i;
    d->st.wire += i;
    d->st.sent_bytes += bytes;
    return i;
}

/* Everything else, one frame at a time. Out of line: it makes calls, and
 * would make tx_plain keep its registers on the stack. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void tx_general(tern_memlink *l, ml_dir *d, tern_buf **frames,
                       unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        tern_buf *f = frames[i];
        d->st.sent++;
        if (!f->frag && !(f->flags & TX_OFFLOAD_FLAGS) && f->len <= d->capacity) {
            d->st.sent_bytes += f->len;
            tern_buf *b = tern_pool_alloc(d->dst);
            if (b) {
                ml_copy(b->data, f->data, f->len);
                b->len = f->len;
                wire_out(l, d, b, false);
            } else {
                d->st.pool_drops++;
            }
        } else {
            d->st.sent_bytes += ml_frame_len(f);
            tx_slow(l, d, f);
        }
        src_release(l, d, f);
    }
}

void tern_memlink_tx(void *ctx, tern_buf **frames, unsigned n)
{
    ml_dir *d = ctx;
    unsigned i = 0;
    /* A second turn only when the first stopped at the ring's end. */
    for (int turn = 0; turn < 2 && i < n && d->plain && !d->held; turn++) {
        unsigned k = tx_plain(d, frames + i, n - i);
        i += k;
        if (!k || (d->tail & d->mask) != 0)
            break;
    }
    if (i < n)
        tx_general(d->link, d, frames + i, n - i);
}

/* Copy a frame tx_plain queued as the sender's buffer f (more than
 * SMALL_MAX bytes) into a buffer of the receiver; with rx_sum, summing it
 * in the same pass for the receiver's checksum test (RX_SUM), else a plain
 * copy whose checksum the receiving stack computes itself. The sender's
 * reference is dropped. NULL when the receiver has no buffer: a drop. */
static tern_buf *land_one(ml_dir *d, tern_buf *f)
{
    tern_buf *b = tern_pool_alloc(d->dst);
    if (b && d->link->rx_sum) {
        tern_frame_copy_sum(b, f->data, f->len);
    } else if (b) {
        b->len = f->len;
        b->flags = 0;
        memcpy(b->data, f->data, f->len);
    }
    tern_pool_release_one(d->src, f);
    return b;
}

/* A frame rx took, as the receiver's frame: copied (land_one) if it is
 * still the sender's; NULL when the receiver has no buffer, a drop counted
 * and taken back out of what rx_take counted delivered. */
static inline tern_buf *land_frame(ml_dir *d, tern_buf *f)
{
    /* a frame in the ring is the sender's (not landed yet), the receiver's
     * or a view: the sender's pool's range tells */
    if (!tern_buf_stack_spans(&d->src->stack, f))
        return f;
    d->unlanded--;
    uint32_t len = f->len;
    tern_buf *b = land_one(d, f);
    if (!b) {
        d->st.pool_drops++;
        d->st.delivered--;
        d->st.delivered_bytes -= len;
    }
    return b;
}

/* The n frames rx took: those still the sender's are copied (land_one);
 * ones the receiver has no buffer for are dropped and counted. Returns
 * the frames left, in order. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static unsigned land(ml_dir *d, tern_buf **frames, unsigned n)
{
    unsigned out = 0;
    for (unsigned k = 0; k < n; k++) {
        tern_buf *b = land_frame(d, frames[k]);
        if (b)
            frames[out++] = b;
    }
    return out;
}

/* n frame pointers, two per 16-byte move. */
static inline void copy_frames(tern_buf **dst, tern_buf *const *src,
                               uint32_t n)
{
    uint32_t k = 0;
    for (; k + 2 <= n; k += 2)
        memcpy(dst + k, src + k, 2 * sizeof(*dst));
    if (k < n)
        dst[k] = src[k];
}

/* When the queued frame at ring index k is due. */
static inline uint64_t due_of(const ml_dir *d, uint32_t k)
{
    return k - d->head < d->dated - d->head ? d->due[k & d->mask] : 0;
}

/* Take the first n frames of d's ring into frames, of bytes bytes. */
static inline unsigned rx_take(ml_dir *d, tern_buf **frames, uint32_t n,
                               uint64_t bytes)
{
    uint32_t head = d->head, at = head & d->mask, first = d->mask + 1 - at;
    if (first > n)
        first = n;
    copy_frames(frames, d->ring + at, first);
    copy_frames(frames + first, d->ring, n - first);
    d->head = head + n;
    if (d->dated - head < n)     /* keep head <= dated */
        d->dated = head + n;
    d->ring_bytes -= bytes;
    d->st.delivered += n;
    d->st.delivered_bytes += bytes;
    return n;
}

/* take_frames when a frame is held back for reordering, or when not all
 * of the ring can go: more frames than max, or some not due yet. Out of
 * line, so the usual case makes no call. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static unsigned rx_general(tern_memlink *l, ml_dir *d, tern_buf **frames,
                           unsigned max, uint64_t now_ns)
{
    if (d->held && l->now >= d->held_deadline)
        release_held(l, d);
    uint32_t head = d->head, mask = d->mask;
    uint32_t queued = d->tail - head, n = queued;
    if (!n)
        return 0;
    if (n > max)
        n = max;
    /* Due times never decrease along the ring: when the last frame to take
     * is due, all are, and no frame needs its own test. */
    if (due_of(d, head + n - 1) > now_ns) {
        uint32_t k = 0;
        while (k < n && due_of(d, head + k) <= now_ns)
            k++;
        n = k;
    }
    uint64_t bytes = d->ring_bytes;
    if (n != queued) {
        bytes = 0;
        for (uint32_t k = 0; k < n; k++) {
            const tern_buf *b = d->ring[(head + k) & mask];
            bytes += b->frag ? ml_frame_len(b) : b->len;
        }
    }
    return rx_take(d, frames, n, bytes);
}

/* Up to max due frames of d's ring, not landed: some may still be the
 * sender's buffers (d->unlanded). */
static inline unsigned take_frames(tern_memlink *l, ml_dir *d,
                                   tern_buf **frames, unsigned max,
                                   uint64_t now_ns)
{
    if (now_ns > l->now)
        l->now = now_ns;
    uint32_t queued = d->tail - d->head;
    /* The usual case: no held frame, and the whole ring fits and is due
     * (no frame in it has a due time); its bytes are the running
     * ring_bytes, no frame is read. */
    if (!d->held && queued <= max) {
        if (!queued)
            return 0;
        if (d->dated == d->head)
            return rx_take(d, frames, queued, d->ring_bytes);
    }
    return rx_general(l, d, frames, max, now_ns);
}

unsigned tern_memlink_rx(tern_memlink *l, int end, tern_buf **frames,
                         unsigned max, uint64_t now_ns)
{
    ml_dir *d = &l->dir[!(end & 1)];
    unsigned n = take_frames(l, d, frames, max, now_ns);
    return d->unlanded ? land(d, frames, n) : n;
}

unsigned tern_memlink_rx_unlanded(tern_memlink *l, int end,
                                  tern_buf **frames, unsigned max,
                                  uint64_t now_ns, bool *unlanded)
{
    ml_dir *d = &l->dir[!(end & 1)];
    *unlanded = d->unlanded != 0;
    return take_frames(l, d, frames, max, now_ns);
}

tern_buf *tern_memlink_land(tern_memlink *l, int end, tern_buf *f)
{
    return land_frame(&l->dir[!(end & 1)], f);
}

uint64_t tern_memlink_next_event(const tern_memlink *l, int end)
{
    const ml_dir *d = &l->dir[!(end & 1)];
    uint64_t t = UINT64_MAX;
    if (d->head != d->tail)
        t = due_of(d, d->head);
    if (d->held && d->held_deadline < t)
        t = d->held_deadline;
    return t;
}

unsigned tern_memlink_pending(const tern_memlink *l, int end)
{
    const ml_dir *d = &l->dir[!(end & 1)];
    return d->tail - d->head + (d->held != NULL);
}
