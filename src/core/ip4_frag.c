/* ip4_frag.c - IPv4 reassembly (RFC 791, RFC 815) on the shared core of
 * reasm.c, and fragmentation on output (for ICMP and UDP datagrams over
 * the MTU).
 *
 * Here are the checks that need the IPv4 header: a datagram may not end
 * past 65535 bytes (ping of death), a non-last fragment must carry a
 * multiple of 8 bytes, a TCP first fragment must hold the whole TCP
 * header and no TCP fragment may start at offset 8 (RFC 1858 tiny
 * fragments). An overlap drops the datagram held and frees its slot
 * (reasm.h); cfg.reasm_timeout_ms to complete. A complete datagram is
 * copied into one fresh buffer, or a chain of them for ICMP and UDP; one
 * that does not fit is dropped and counted. */
#include "stack.h"

#define IP_MAX_LEN 65535

void reasm4_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    reasm_table_mem(st ? &st->reasm : NULL, cfg, c);
    if (!st)
        return;
    st->reasm.timeout = (uint64_t)cfg->reasm_timeout_ms * TERN_NS_PER_MS;
    st->reasm.ctr = (struct reasm_ctrs){
        .ok = &st->ctr.ip_reasm_ok,
        .bad = &st->ctr.ip_drop_frag_bad,
        .overlap = &st->ctr.ip_drop_frag_overlap,
        .too_big = &st->ctr.ip_drop_frag_too_big,
        .timeout = &st->ctr.ip_frag_timeout,
        .evicted = &st->ctr.ip_frag_evicted,
        .dup = &st->ctr.ip_drop_frag_dup,
    };
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

/* The whole datagram behind the first fragment's header, now describing
 * it. An ICMP or UDP one too large for a buffer (an echo request of a few
 * KB, answered in fragments; a large datagram, handed to cb.udp_recv as a
 * chain) goes into a chain. TCP never sends fragments (DF): one over a
 * buffer is dropped. */
static tern_buf *reasm4_join(tern_stack *st, struct reasm *r)
{
    uint32_t hlen = reasm_at(r->frags);
    tern_buf *out = reasm_join(st, &st->reasm, r, hlen,
                               r->key.proto != IP_PROTO_TCP);
    if (!out)
        return NULL;
    uint8_t *h = out->data;
    wr16(h + 2, (uint16_t)(hlen + r->total));
    wr16(h + 6, 0);
    wr16(h + 10, 0);
    wr16(h + 10, (uint16_t)~tern_csum_fold(tern_csum_partial(h, hlen, 0)));
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
    struct reasm_key k;
    reasm_key_make(&k, h + 12, h + 16, 4, rd16(h + 4), h[9]);
    return reasm_take(st, &st->reasm, &k, b, off, len, hlen, mf, reasm4_join);
}

uint64_t reasm4_poll(tern_stack *st, uint64_t now)
{
    return reasm_poll(st, &st->reasm, now, NULL);
}

void reasm4_fini(tern_stack *st)
{
    reasm_table_fini(st, &st->reasm);
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
