/* ip6_frag.c - bounded IPv6 reassembly (RFC 8200 4.5) and fragmentation
 * by the source (ICMPv6 and UDP datagrams over the path MTU).
 *
 * Fragments are kept as the received buffers, in offset order, in one of
 * cfg.reasm_slots slots keyed by (source, destination, identification):
 *   - any overlap but an exact duplicate drops the whole datagram, and the
 *     slot refuses the rest of its fragments until it expires (RFC 5722);
 *   - a first fragment holds the whole header chain (checked in
 *     ip6_ext.c, RFC 7112), a non-last fragment a multiple of 8 bytes, and
 *     no datagram ends past 65,535 bytes of payload;
 *   - at most REASM6_MAX_FRAGS buffers per datagram, the oldest datagram
 *     is evicted for a new one, 60 s to complete (then a Time Exceeded
 *     when the first fragment came);
 *   - atomic fragments never get here (ip6_ext.c, RFC 6946).
 * A complete datagram is copied into one fresh buffer (a chain for
 * ICMPv6, answered in fragments); one that does not fit is dropped. */
#include "ip6.h"

#define REASM6_MAX_FRAGS 64
#define REASM6_TIMEOUT_NS (60 * TERN_NS_PER_SEC)
#define FRAG6_OUT_MAX 64

struct reasm6 {
    tern_buf *frags;      /* sorted by offset, linked by next */
    uint64_t expires;
    uint8_t src[16], dst[16];
    uint32_t id;
    bool used;
    bool dead;            /* overlapped: refuse the rest until expiry */
    uint32_t total;       /* fragmentable bytes, known once the last came */
    uint32_t have;
    uint16_t nfrags;
};

/* Per fragment, in the buffer's scratch words: offset, length and where
 * its data starts (after its fragment header). */
static uint32_t f_off(const tern_buf *b) { return (uint32_t)b->cb[0]; }
static uint32_t f_len(const tern_buf *b) { return (uint32_t)b->cb[1]; }
static uint32_t f_at(const tern_buf *b) { return (uint32_t)b->cb[2]; }

void reasm6_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    struct reasm6 *r = carve_take(c, cfg->reasm_slots * sizeof *r, 8);
    if (st)
        st->ip6->reasm = r;
}

static void free_frags(tern_stack *st, struct reasm6 *r)
{
    tern_buf *b = r->frags;
    while (b) {
        tern_buf *next = b->next;
        b->next = NULL;
        tern_buf_release(st, b);
        b = next;
    }
    r->frags = NULL;
}

static void reasm6_free(tern_stack *st, struct reasm6 *r)
{
    free_frags(st, r);
    tern_memset(r, 0, sizeof *r);
}

static struct reasm6 *slot_for(tern_stack *st, const uint8_t *h, uint32_t id)
{
    struct ip6_layer *l = st->ip6;
    struct reasm6 *free_slot = NULL, *oldest = NULL;
    for (uint32_t i = 0; i < st->cfg.reasm_slots; i++) {
        struct reasm6 *r = &l->reasm[i];
        if (!r->used) {
            if (!free_slot)
                free_slot = r;
            continue;
        }
        if (r->id == id && ip6_eq(r->src, h + 8) && ip6_eq(r->dst, h + 24))
            return r;
        if (!oldest || r->expires < oldest->expires)
            oldest = r;
    }
    struct reasm6 *r = free_slot;
    if (!r) {
        CTR(st, ip6_frag_evicted);
        reasm6_free(st, oldest);
        r = oldest;
    }
    r->used = true;
    tern_memcpy(r->src, h + 8, 16);
    tern_memcpy(r->dst, h + 24, 16);
    r->id = id;
    r->expires = st->now + REASM6_TIMEOUT_NS;
    if (r->expires < l->reasm_next)
        l->reasm_next = r->expires;
    return r;
}

/* Put b in offset order: 1 when held, 0 for an exact duplicate (dropped
 * alone), -1 when it overlaps another. */
static int frag_insert(tern_stack *st, struct reasm6 *r, tern_buf *b)
{
    uint32_t off = f_off(b), end = off + f_len(b);
    tern_buf **link = &r->frags;
    while (*link && f_off(*link) + f_len(*link) <= off)
        link = &(*link)->next;
    tern_buf *next = *link;
    if (next && f_off(next) == off && f_len(next) == f_len(b)) {
        tern_buf_release(st, b);
        return 0;
    }
    if (next && f_off(next) < end)
        return -1;
    b->next = next;
    *link = b;
    r->have += f_len(b);
    r->nfrags++;
    return 1;
}

/* Offset of the Next Header byte that names the fragment header at foff
 * (in the fixed header or the extension header before it). */
static uint32_t nh_field(const uint8_t *h, uint32_t foff)
{
    uint32_t at = 6, off = IP6_HDR_LEN;
    while (off < foff) {
        at = off;
        off += (h[off + 1] + 1u) * 8;
    }
    return at;
}

/* The whole datagram: the first fragment's headers before its fragment
 * header, then every fragment's data. */
static tern_buf *reasm6_join(tern_stack *st, struct reasm6 *r)
{
    tern_buf *first = r->frags;
    uint32_t hlen = f_at(first) - IP6_FRAG_HDR_LEN;
    uint8_t proto = first->data[hlen];
    uint32_t total = hlen + r->total, left = total;
    if (total - IP6_HDR_LEN > 0xffff) {
        CTR(st, ip6_drop_frag_too_big);
        return NULL;
    }
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
        if (room < hlen + 8 || (left > room && proto != IP_PROTO_ICMP6)) {
            CTR(st, ip6_drop_frag_too_big);
            tern_buf_release(st, out);
            return NULL;
        }
        b->len = left < room ? left : room;
        left -= b->len;
    }
    uint8_t *h = out->data;
    tern_memcpy(h, first->data, hlen);
    h[nh_field(h, hlen)] = proto;
    wr16(h + 4, (uint16_t)(total - IP6_HDR_LEN));
    for (tern_buf *b = r->frags; b; b = b->next)
        chain_copy(out, hlen + f_off(b), b->data + f_at(b), f_len(b), true);
    CTR(st, ip6_reasm_ok);
    return out;
}

tern_buf *ip6_reasm(tern_stack *st, tern_buf *b, uint32_t foff)
{
    CTR(st, ip6_frag_in);
    const uint8_t *h = b->data, *fh = h + foff;
    uint16_t fo = rd16(fh + 2);
    bool more = fo & 1;
    uint32_t off = fo & 0xfff8u, at = foff + IP6_FRAG_HDR_LEN;
    uint32_t len = b->len - at;
    if (len == 0 || (more && (len & 7)) || off + len > 0xffff) {
        CTR(st, ip6_drop_frag_bad);
        tern_buf_release(st, b);
        return NULL;
    }
    struct reasm6 *r = slot_for(st, h, rd32(fh + 4));
    if (r->dead) {
        CTR(st, ip6_drop_frag_overlap);
        tern_buf_release(st, b);
        return NULL;
    }
    b->cb[0] = off;
    b->cb[1] = len;
    b->cb[2] = at;
    b->next = NULL;
    bool bad = r->nfrags >= REASM6_MAX_FRAGS ||
               (!more && r->total && r->total != off + len) ||
               (r->total && off + len > r->total);
    if (!more && r->frags) {    /* nothing held may lie past the end */
        tern_buf *last = r->frags;
        while (last->next)
            last = last->next;
        bad |= f_off(last) + f_len(last) > off + len;
    }
    int ins = bad ? -1 : frag_insert(st, r, b);
    if (ins < 0) {
        if (bad) {
            CTR(st, ip6_drop_frag_bad);
        } else {
            CTR(st, ip6_drop_frag_overlap);
            r->dead = true;
        }
        tern_buf_release(st, b);
        free_frags(st, r);
        if (bad)
            reasm6_free(st, r);
        return NULL;
    }
    if (!more)
        r->total = off + len;
    if (!r->total || r->have != r->total)
        return NULL;
    tern_buf *whole = reasm6_join(st, r);
    reasm6_free(st, r);
    return whole;
}

/* RFC 8200 4.5: a datagram that timed out with its first fragment held
 * gets a Time Exceeded (fragment reassembly) quoting that fragment. */
static void reasm6_expired(tern_stack *st, struct reasm6 *r)
{
    CTR(st, ip6_frag_timeout);
    tern_buf *first = r->frags;
    if (first && f_off(first) == 0) {
        ip6_rx ip;
        tern_memset(&ip, 0, sizeof ip);
        ip.ip_hdr = first->data;
        ip.src = first->data + 8;
        ip.dst = first->data + 24;
        ip.proto = IP6_EXT_FRAGMENT;
        ip.multicast = ip6_is_mcast(ip.dst);
        icmp6_send_error(st, &ip, ICMP6_TIME_EXCEEDED, ICMP6_TIME_REASM, 0,
                         first->data, first->len);
    }
    reasm6_free(st, r);
}

uint64_t reasm6_poll(tern_stack *st, uint64_t now)
{
    struct ip6_layer *l = st->ip6;
    if (now < l->reasm_next)
        return l->reasm_next;
    uint64_t next = TERN_NEVER;
    for (uint32_t i = 0; i < st->cfg.reasm_slots; i++) {
        struct reasm6 *r = &l->reasm[i];
        if (!r->used)
            continue;
        if (now >= r->expires)
            reasm6_expired(st, r);
        else if (r->expires < next)
            next = r->expires;
    }
    l->reasm_next = next;
    return next;
}

void reasm6_fini(tern_stack *st)
{
    for (uint32_t i = 0; i < st->cfg.reasm_slots; i++)
        if (st->ip6->reasm[i].used)
            reasm6_free(st, &st->ip6->reasm[i]);
}

/* ---- fragmentation by the source ---- */

/* RFC 7739: identifications nobody can predict, that do not repeat soon
 * towards one destination: a keyed hash of (destination, counter). */
static uint32_t frag_id(tern_stack *st, const uint8_t dst[16])
{
    uint8_t in[20];
    tern_memcpy(in, dst, 16);
    wr32(in + 16, st->ip6->frag_id++);
    return (uint32_t)tern_siphash(st->cfg.secret, in, sizeof in);
}

int ip6_frag_out(tern_stack *st, tern_buf *b, uint32_t mtu)
{
    const uint8_t *hdr = b->data;
    uint32_t len = buf_chain_len(b) - IP6_HDR_LEN;
    uint32_t step = (mtu - IP6_HDR_LEN - IP6_FRAG_HDR_LEN) & ~7u;
    uint32_t n = (len + step - 1) / step;
    tern_buf *fr[FRAG6_OUT_MAX];
    if (n > FRAG6_OUT_MAX ||
        !frag_bufs(st, fr, n, IP6_HDR_LEN + IP6_FRAG_HDR_LEN + step)) {
        CTR(st, ip6_drop_frag_out);
        tern_buf_release(st, b);
        return -TERN_ENOBUFS;
    }
    CTR(st, ip6_frag_out);
    uint32_t id = frag_id(st, hdr + 24);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t off = k * step, part = len - off < step ? len - off : step;
        tern_buf *f = fr[k];
        uint8_t *h = f->data, *fh = h + IP6_HDR_LEN;
        tern_memcpy(h, hdr, IP6_HDR_LEN);
        h[6] = IP6_EXT_FRAGMENT;
        wr16(h + 4, (uint16_t)(IP6_FRAG_HDR_LEN + part));
        fh[0] = hdr[6];
        fh[1] = 0;
        wr16(fh + 2, (uint16_t)(off | (k + 1 < n ? 1u : 0)));
        wr32(fh + 4, id);
        chain_copy(b, IP6_HDR_LEN + off, fh + IP6_FRAG_HDR_LEN, part, false);
        f->len = IP6_HDR_LEN + IP6_FRAG_HDR_LEN + part;
        CTR(st, ip6_frag_created);
        ip6_send(st, f);
    }
    tern_buf_release(st, b);
    return 0;
}
