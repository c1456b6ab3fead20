/* ip6_frag.c - IPv6 reassembly (RFC 8200 4.5) on the shared core of
 * reasm.c, and fragmentation by the source (ICMPv6 and UDP datagrams over
 * the path MTU).
 *
 * Datagrams are keyed by (source, destination, identification):
 *   - any overlap but an exact duplicate drops the whole datagram, and the
 *     slot refuses the rest of its fragments until it expires (RFC 5722);
 *   - a first fragment holds the whole header chain (checked in
 *     ip6_ext.c, RFC 7112), a non-last fragment a multiple of 8 bytes, and
 *     no datagram ends past 65,535 bytes of payload;
 *   - 60 s to complete (then a Time Exceeded when the first fragment
 *     came);
 *   - atomic fragments never get here (ip6_ext.c, RFC 6946).
 * A complete datagram is copied into one fresh buffer (a chain for
 * ICMPv6, answered in fragments); one that does not fit is dropped. */
#include "ip6.h"

#define REASM6_TIMEOUT_NS (60 * TERN_NS_PER_SEC)
#define FRAG6_OUT_MAX 64

void reasm6_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    reasm_table_mem(st ? &st->ip6->reasm : NULL, cfg, c);
    if (!st)
        return;
    struct reasm_table *t = &st->ip6->reasm;
    t->timeout = REASM6_TIMEOUT_NS;
    t->overlap_refuses = true;
    t->ctr = (struct reasm_ctrs){
        .ok = &st->ctr.ip6_reasm_ok,
        .bad = &st->ctr.ip6_drop_frag_bad,
        .overlap = &st->ctr.ip6_drop_frag_overlap,
        .too_big = &st->ctr.ip6_drop_frag_too_big,
        .timeout = &st->ctr.ip6_frag_timeout,
        .evicted = &st->ctr.ip6_frag_evicted,
    };
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
static tern_buf *reasm6_join(tern_stack *st, struct reasm *r)
{
    uint32_t hlen = reasm_at(r->frags) - IP6_FRAG_HDR_LEN;
    uint8_t proto = r->frags->data[hlen];
    uint32_t total = hlen + r->total;
    if (total - IP6_HDR_LEN > 0xffff) {
        CTR(st, ip6_drop_frag_too_big);
        return NULL;
    }
    tern_buf *out = reasm_join(st, &st->ip6->reasm, r, hlen,
                               proto == IP_PROTO_ICMP6);
    if (!out)
        return NULL;
    uint8_t *h = out->data;
    h[nh_field(h, hlen)] = proto;
    wr16(h + 4, (uint16_t)(total - IP6_HDR_LEN));
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
    struct reasm_key k;
    reasm_key_make(&k, h + 8, h + 24, 16, rd32(fh + 4), 0);
    return reasm_take(st, &st->ip6->reasm, &k, b, off, len, at, more,
                      reasm6_join);
}

/* RFC 8200 4.5: a datagram that timed out with its first fragment held
 * gets a Time Exceeded (fragment reassembly) quoting that fragment. */
static void reasm6_expired(tern_stack *st, struct reasm *r)
{
    tern_buf *first = r->frags;
    if (!first || reasm_off(first) != 0)
        return;
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

uint64_t reasm6_poll(tern_stack *st, uint64_t now)
{
    return reasm_poll(st, &st->ip6->reasm, now, reasm6_expired);
}

void reasm6_fini(tern_stack *st)
{
    reasm_table_fini(st, &st->ip6->reasm);
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
