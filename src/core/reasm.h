/* reasm.h - the reassembly both IP versions share (reasm.c): up to
 * cfg.reasm_slots datagrams at once, each kept as its received fragment
 * buffers in offset order, with the checks that need no header (overlaps,
 * duplicates, the known length, at most REASM_MAX_FRAGS buffers), eviction
 * of the oldest datagram for a new one and a time limit. ip4_frag.c and
 * ip6_frag.c read their headers into a key and an offset and length, and
 * write the header of the whole datagram. Not part of the public API. */
#ifndef TERN_REASM_H
#define TERN_REASM_H

#include "tern.h"

struct carve;

#define REASM_MAX_FRAGS 64

/* What names one datagram: IPv4's (source, destination, identification,
 * protocol) with the addresses in the first 4 bytes and the rest zero;
 * IPv6's (source, destination, identification) with protocol 0. */
struct reasm_key {
    uint8_t src[16], dst[16];
    uint32_t id;
    uint8_t proto;
};

/* One datagram being put together. */
struct reasm {
    tern_buf *frags;      /* sorted by offset, linked by next */
    uint64_t expires;
    struct reasm_key key;
    uint32_t total;       /* payload length, known once the last came */
    uint32_t have;        /* payload bytes held */
    uint16_t nfrags;
    bool used;
    bool dead;            /* overlapped: refusing the rest until expiry */
};

/* One IP version's counters, in st->ctr. */
struct reasm_ctrs {
    uint64_t *ok, *bad, *overlap, *too_big, *timeout, *evicted;
    uint64_t *dup;        /* NULL: an exact duplicate is dropped uncounted */
};

/* One IP version's datagrams; all zero until reasm_table_init. */
struct reasm_table {
    struct reasm *slot;   /* cfg.reasm_slots of them */
    uint64_t next;        /* earliest expiry held; no scan before it */
    uint64_t timeout;     /* ns a datagram has to complete */
    /* After an overlap, RFC 5722 (IPv6): the slot refuses the rest of the
     * datagram until it expires. Otherwise (IPv4) it is freed at once and
     * later fragments start the datagram afresh. */
    bool overlap_refuses;
    struct reasm_ctrs ctr;
};

/* Carve cfg.reasm_slots slots, given to t when t is (not in the sizing
 * pass); the caller sets t's time limit, policy and counters. */
void reasm_table_mem(struct reasm_table *t, const tern_config *cfg,
                     struct carve *c);
/* Fill k: source and destination of alen bytes (4 or 16), the rest
 * zero. */
void reasm_key_make(struct reasm_key *k, const uint8_t *src,
                    const uint8_t *dst, uint32_t alen, uint32_t id,
                    uint8_t proto);
/* Take fragment b of datagram k: bytes [off, off + len) of its payload,
 * found at b->data + at; more when fragments follow it. Consumes b. The
 * datagram's slot is the one held, else a free one, else the oldest
 * (evicted and counted). Returns join(st, r) once the datagram is
 * complete (then frees it); NULL when b is held, or dropped and counted
 * (with the whole datagram where it broke the rules). */
tern_buf *reasm_take(tern_stack *st, struct reasm_table *t,
                     const struct reasm_key *k, tern_buf *b, uint32_t off,
                     uint32_t len, uint32_t at, bool more,
                     tern_buf *(*join)(tern_stack *st, struct reasm *r));
/* The whole datagram in fresh buffers: the first fragment's hlen header
 * bytes (for the caller to rewrite), then every fragment's data; one over
 * a buffer becomes a chain (frag links) when chain_ok. NULL when it does
 * not fit or no buffer is left (counted). Counts ok otherwise. */
tern_buf *reasm_join(tern_stack *st, struct reasm_table *t, struct reasm *r,
                     uint32_t hlen, bool chain_ok);
/* Free the datagrams past their time limit (counted), each handed to
 * expired first when given; returns the next expiry. */
uint64_t reasm_expire(tern_stack *st, struct reasm_table *t, uint64_t now,
                      void (*expired)(tern_stack *st, struct reasm *r));
/* reasm_expire from every tern_poll: inline, since nothing is to be done
 * before the earliest expiry (never while no datagram is held). */
static inline uint64_t reasm_poll(tern_stack *st, struct reasm_table *t,
                                  uint64_t now,
                                  void (*expired)(tern_stack *st,
                                                  struct reasm *r))
{
    return now < t->next ? t->next : reasm_expire(st, t, now, expired);
}
void reasm_table_fini(tern_stack *st, struct reasm_table *t);

/* A held fragment's offset in the datagram, and where its data starts in
 * its buffer (kept in the buffer's scratch words). */
static inline uint32_t reasm_off(const tern_buf *b) { return (uint32_t)b->cb[0]; }
static inline uint32_t reasm_at(const tern_buf *b) { return (uint32_t)b->cb[2]; }

#endif
