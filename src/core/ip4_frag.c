/* ip4_frag.c - bounded IPv4 reassembly (RFC 791, RFC 815), and
 * fragmentation on output (for ICMP and UDP datagrams over the MTU).
 *
 * Fragments are kept as the received buffers themselves, in offset order,
 * in one of cfg.reasm_slots slots. The defences against the classic
 * attacks are the ones Linux and RFC 5722 settled on:
 *   - any overlap other than an exact duplicate drops the whole datagram
 *     (teardrop, overlapping-header tricks);
 *   - a datagram may not end past 65535 bytes (ping of death), a non-last
 *     fragment must carry a multiple of 8 bytes, a TCP first fragment must
 *     hold the whole TCP header and no fragment may start at offset 8
 *     (RFC 1858 tiny fragments);
 *   - at most REASM_MAX_FRAGS buffers per datagram, cfg.reasm_slots
 *     datagrams at once (the oldest is evicted), cfg.reasm_timeout_ms to
 *     complete: memory is bounded whatever arrives.
 * A complete datagram is copied into one fresh buffer; one that does not
 * fit is dropped and counted. */
#include "stack.h"

#define REASM_MAX_FRAGS 64
#define IP_MAX_LEN 65535

struct reasm {
    tern_buf *frags;      /* sorted by offset, linked by next */
    uint64_t expires;
    uint32_t src, dst;
    uint16_t id;
    uint8_t proto;
    bool used;
    uint32_t total;       /* payload length, known once the last arrived */
    uint32_t have;        /* payload bytes held */
    uint16_t nfrags;
};

/* Per-fragment bookkeeping lives in the buffer's scratch words. */
static uint32_t f_off(const tern_buf *b) { return (uint32_t)b->cb[0]; }
static uint32_t f_len(const tern_buf *b) { return (uint32_t)b->cb[1]; }
static uint32_t f_hlen(const tern_buf *b) { return (uint32_t)b->cb[2]; }

void reasm_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    struct reasm *r = carve_take(c, cfg->reasm_slots * sizeof *r, 8);
    if (st)
        st->reasm = r;
}

static void reasm_free(tern_stack *st, struct reasm *r)
{
    tern_buf *b = r->frags;
    while (b) {
        tern_buf *next = b->next;
        b->next = NULL;
        tern_buf_release(st, b);
        b = next;
    }
    tern_memset(r, 0, sizeof *r);
}

static struct reasm *reasm_slot(tern_stack *st, const uint8_t *h)
{
    uint32_t src = rd32(h + 12), dst = rd32(h + 16);
    uint16_t id = rd16(h + 4);
    struct reasm *free_slot = NULL, *oldest = NULL;
    for (uint32_t i = 0; i < st->cfg.reasm_slots; i++) {
        struct reasm *r = &st->reasm[i];
        if (!r->used) {
            if (!free_slot)
                free_slot = r;
            continue;
        }
        if (r->src == src && r->dst == dst && r->id == id && r->proto == h[9])
            return r;
        if (!oldest || r->expires < oldest->expires)
            oldest = r;
    }
    struct reasm *r = free_slot;
    if (!r) {
        CTR(st, ip_frag_evicted);
        reasm_free(st, oldest);
        r = oldest;
    }
    r->used = true;
    r->src = src;
    r->dst = dst;
    r->id = id;
    r->proto = h[9];
    r->expires = st->now + (uint64_t)st->cfg.reasm_timeout_ms * TERN_NS_PER_MS;
    if (r->expires < st->reasm_next)
        st->reasm_next = r->expires;
    return r;
}

/* Checks that need only the fragment itself. */
static bool frag_sane(const uint8_t *h, uint32_t off, uint32_t len, bool mf,
                      uint32_t hlen)
{
    if (len == 0 || (mf && (len & 7)))
        return false;
    if (hlen + off + len > IP_MAX_LEN)
        return false;                           /* ping of death */
    if (h[9] == IP_PROTO_TCP && (off == 8 || (off == 0 && len < 20)))
        return false;                           /* RFC 1858 */
    return true;
}

/* Put b in offset order. Returns false (and counts) when it overlaps a
 * fragment already held; an exact duplicate is dropped on its own. */
static int frag_insert(tern_stack *st, struct reasm *r, tern_buf *b)
{
    uint32_t off = f_off(b), end = off + f_len(b);
    tern_buf **link = &r->frags;
    while (*link && f_off(*link) + f_len(*link) <= off)
        link = &(*link)->next;
    tern_buf *next = *link;
    if (next && next->cb[0] == b->cb[0] && next->cb[1] == b->cb[1]) {
        CTR(st, ip_drop_frag_dup);
        tern_buf_release(st, b);
        return 0;
    }
    if (next && f_off(next) < end) {
        CTR(st, ip_drop_frag_overlap);
        return -1;
    }
    b->next = next;
    *link = b;
    r->have += f_len(b);
    r->nfrags++;
    return 1;
}

/* Copy len bytes between p and the chain c at byte offset off (into the
 * chain when to_chain): a datagram over one buffer lives in a chain. */
void chain_copy(tern_buf *c, uint32_t off, uint8_t *p, uint32_t len,
                bool to_chain)
{
    for (; c && len; c = c->frag) {
        if (off >= c->len) {
            off -= c->len;
            continue;
        }
        uint32_t n = c->len - off < len ? c->len - off : len;
        if (to_chain)
            tern_memcpy(c->data + off, p, n);
        else
            tern_memcpy(p, c->data + off, n);
        p += n;
        len -= n;
        off = 0;
    }
}

/* Copy the held fragments into one buffer with the first fragment's
 * header, now describing the whole datagram; an ICMP or UDP one too large
 * for a buffer (an echo request of a few KB, answered in fragments; a
 * large datagram, handed to cb.udp_recv as a chain) goes into a chain of
 * them. TCP never sends fragments (DF): one over a buffer is dropped. */
static tern_buf *reasm_join(tern_stack *st, struct reasm *r)
{
    tern_buf *first = r->frags;
    uint32_t hlen = f_hlen(first), total = hlen + r->total, left = total;
    tern_buf *out = NULL, **link = &out;
    while (left) {
        tern_buf *b = tern_buf_alloc(st);
        if (!b) {
            CTR(st, tx_drop_nobuf);
            tern_buf_release(st, out);
            return NULL;
        }
        *link = b;
        link = &b->frag;
        uint32_t room = b->size - (uint32_t)(b->data - b->head);
        if (room < hlen + 8 || (left > room && first->data[9] == IP_PROTO_TCP)) {
            CTR(st, ip_drop_frag_too_big);
            tern_buf_release(st, out);
            return NULL;
        }
        b->len = left < room ? left : room;
        left -= b->len;
    }
    uint8_t *h = out->data;
    tern_memcpy(h, first->data, hlen);
    for (tern_buf *b = r->frags; b; b = b->next)
        chain_copy(out, hlen + f_off(b), b->data + f_hlen(b), f_len(b), true);
    wr16(h + 2, (uint16_t)total);
    wr16(h + 6, 0);
    wr16(h + 10, 0);
    wr16(h + 10, (uint16_t)~tern_csum_fold(tern_csum_partial(h, hlen, 0)));
    CTR(st, ip_reasm_ok);
    return out;
}

tern_buf *ip4_reasm(tern_stack *st, tern_buf *b)
{
    CTR(st, ip_frag_in);
    const uint8_t *h = b->data;
    uint32_t hlen = (uint32_t)(h[0] & 0xf) * 4;
    uint16_t fl = rd16(h + 6);
    bool mf = fl & 0x2000;
    uint32_t off = (uint32_t)(fl & 0x1fff) * 8, len = b->len - hlen;
    if (!frag_sane(h, off, len, mf, hlen)) {
        CTR(st, ip_drop_frag_bad);
        tern_buf_release(st, b);
        return NULL;
    }
    struct reasm *r = reasm_slot(st, h);
    b->cb[0] = off;
    b->cb[1] = len;
    b->cb[2] = hlen;
    b->next = NULL;
    bool bad = r->nfrags >= REASM_MAX_FRAGS ||
               (!mf && r->total && r->total != off + len) ||
               (r->total && off + len > r->total);
    if (!mf && r->frags) {   /* nothing held may lie past the end */
        tern_buf *last = r->frags;
        while (last->next)
            last = last->next;
        bad |= f_off(last) + f_len(last) > off + len;
    }
    if (bad)
        CTR(st, ip_drop_frag_bad);
    int ins = bad ? -1 : frag_insert(st, r, b);
    if (ins < 0) {
        tern_buf_release(st, b);
        reasm_free(st, r);
        return NULL;
    }
    if (!mf)
        r->total = off + len;
    if (!r->total || r->have != r->total)
        return NULL;
    tern_buf *whole = reasm_join(st, r);
    reasm_free(st, r);
    return whole;
}

/* Called from every tern_poll: nothing to do before the earliest expiry,
 * and nothing at all while no datagram is held. */
uint64_t reasm_poll(tern_stack *st, uint64_t now)
{
    if (now < st->reasm_next)
        return st->reasm_next;
    uint64_t next = TERN_NEVER;
    for (uint32_t i = 0; i < st->cfg.reasm_slots; i++) {
        struct reasm *r = &st->reasm[i];
        if (!r->used)
            continue;
        if (now >= r->expires) {
            CTR(st, ip_frag_timeout);
            reasm_free(st, r);
        } else if (r->expires < next) {
            next = r->expires;
        }
    }
    st->reasm_next = next;
    return next;
}

void reasm_fini(tern_stack *st)
{
    for (uint32_t i = 0; i < st->cfg.reasm_slots; i++)
        if (st->reasm[i].used)
            reasm_free(st, &st->reasm[i]);
}

/* ---- fragmentation on output ---- */

#define FRAG_OUT_MAX 45   /* 65,515 payload bytes in 1,480-byte pieces */

bool frag_bufs(tern_stack *st, tern_buf **fr, uint32_t n, uint32_t room)
{
    uint32_t got = 0;
    while (got < n) {
        tern_buf *f = tern_buf_alloc(st);
        if (!f || f->size - (uint32_t)(f->data - f->head) < room ||
            f->data - f->head < ETH_HDR_LEN) {
            if (f)
                tern_buf_release(st, f);
            break;
        }
        fr[got++] = f;
    }
    if (got == n)
        return true;
    while (got)
        tern_buf_release(st, fr[--got]);
    return false;
}

int ip4_frag_out(tern_stack *st, tern_buf *b, const uint8_t *hdr,
                 uint32_t nh, bool bcast)
{
    uint32_t len = buf_chain_len(b), step = (st->cfg.mtu - IP4_HDR_LEN) & ~7u;
    uint32_t n = (len + step - 1) / step;
    tern_buf *fr[FRAG_OUT_MAX];
    if (n > FRAG_OUT_MAX || !frag_bufs(st, fr, n, IP4_HDR_LEN + step)) {
        CTR(st, ip_drop_frag_out);
        tern_buf_release(st, b);
        return -TERN_ENOBUFS;
    }
    CTR(st, ip_frag_out);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t off = k * step, part = len - off < step ? len - off : step;
        tern_buf *f = fr[k];
        uint8_t *h = f->data;
        tern_memcpy(h, hdr, IP4_HDR_LEN);
        chain_copy(b, off, h + IP4_HDR_LEN, part, false);
        wr16(h + 2, (uint16_t)(IP4_HDR_LEN + part));
        wr16(h + 6, (uint16_t)((k + 1 < n ? 0x2000u : 0) | off / 8));
        f->len = IP4_HDR_LEN + part;
        CTR(st, ip_frag_created);
        ip4_send(st, f, nh, bcast);
    }
    tern_buf_release(st, b);
    return 0;
}
