/* sack.c - RFC 2018 SACK. Sender: every send-queue buffer that a SACK
 * block covers wholly is marked (BQ_SACKED) until it is cumulatively
 * acked, so nothing SACKed is forgotten however many holes there are;
 * beside the marks a cache of at most TCP_SB_MAX disjoint SACKed ranges
 * above snd_una, kept sorted and merged, answers the RFC 6675 queries
 * (IsLost, NextSeg rule 1, pipe). NextSeg and pipe walk the send-queue
 * buffers of the ranges' holes, passing over marked buffers, for those
 * RACK declares lost (rack.c). Receiver:
 * the blocks we announce, built from the out-of-order queue in the order
 * their data last arrived, after a D-SACK block for data that came twice
 * (RFC 2018 4, RFC 2883). */
#include "tcp.h"

static bool pos_valid(const struct tern_conn *c, int i);

void sb_clear(struct tern_conn *c)
{
    c->sb_pos[0] = c->sb_pos[1] = NULL;
    c->nsb = 0;
    c->sacked = 0;
    c->fack = c->snd_una;
}

static void sb_sum(struct tern_conn *c)
{
    uint32_t sum = 0;
    for (uint32_t i = 0; i < c->nsb; i++)
        sum += c->sb[i][1] - c->sb[i][0];
    /* marks cover the ranges' whole segments and what the ranges forgot */
    c->sacked = sum > c->sb_marked ? sum : c->sb_marked;
    c->fack = c->nsb ? c->sb[c->nsb - 1][1] : c->snd_una;
}

/* Insert [s, e) keeping the array sorted and disjoint. */
static void sb_insert(struct tern_conn *c, uint32_t s, uint32_t e)
{
    uint32_t n = c->nsb, i = 0;
    while (i < n && seq_lt(c->sb[i][1], s))
        i++;
    /* ranges i..j-1 overlap or touch [s, e) */
    uint32_t j = i;
    while (j < n && seq_le(c->sb[j][0], e)) {
        if (seq_lt(c->sb[j][0], s))
            s = c->sb[j][0];
        if (seq_gt(c->sb[j][1], e))
            e = c->sb[j][1];
        j++;
    }
    if (j == i) {               /* no overlap: open a slot at i */
        if (n == TCP_SB_MAX) {
            if (i == n)
                return;         /* above everything kept: forget it */
            n--;                /* drop the highest range */
        }
        for (uint32_t k = n; k > i; k--) {
            c->sb[k][0] = c->sb[k - 1][0];
            c->sb[k][1] = c->sb[k - 1][1];
        }
        n++;
    } else if (j > i + 1) {     /* merged several: close the gap */
        uint32_t gone = j - i - 1;
        for (uint32_t k = i + 1; k + gone < n; k++) {
            c->sb[k][0] = c->sb[k + gone][0];
            c->sb[k][1] = c->sb[k + gone][1];
        }
        n -= gone;
    }
    c->sb[i][0] = s;
    c->sb[i][1] = e;
    c->nsb = (uint8_t)n;
}

static bool pos_valid(const struct tern_conn *c, int i)
{
    return c->sb_pos[i] && seq_gt(c->sb_pos_end[i], c->snd_una);
}

uint32_t sb_new_parts(const struct tern_conn *c, uint32_t s, uint32_t e,
                      uint32_t (*out)[2])
{
    /* what is known SACKed: the ranges and the spans the last marking
     * walks covered, sorted by start (insertion: at most 10) */
    uint32_t k[TCP_SB_MAX + 2][2], nk = 0;
    /* out has room for SB_PARTS_MAX = nk + 1 */
    for (uint32_t i = 0; i < c->nsb; i++) {
        k[nk][0] = c->sb[i][0];
        k[nk][1] = c->sb[i][1];
        nk++;
    }
    for (int p = 0; p < 2; p++) {
        if (!pos_valid(c, p))
            continue;
        uint32_t j = nk++;
        for (; j > 0 && seq_gt(k[j - 1][0], c->sb_pos_from[p]); j--) {
            k[j][0] = k[j - 1][0];
            k[j][1] = k[j - 1][1];
        }
        k[j][0] = c->sb_pos_from[p];
        k[j][1] = c->sb_pos_end[p];
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < nk && seq_lt(s, e); i++) {
        uint32_t rs = k[i][0], re = k[i][1];
        if (seq_le(re, s))
            continue;
        if (seq_ge(rs, e))
            break;
        if (seq_lt(s, rs)) {
            out[n][0] = s;
            out[n][1] = rs;
            n++;
        }
        s = re;
    }
    if (seq_lt(s, e)) {
        out[n][0] = s;
        out[n][1] = e;
        n++;
    }
    return n;
}

tern_buf *sb_seek(const struct tern_conn *c, uint32_t seq, uint64_t *steps)
{
    tern_buf *q = c->sq_head;
    if (!q)
        return NULL;
    for (int i = 0; i < 2; i++)
        if (pos_valid(c, i) && seq_le(bq_seq(c->sb_pos[i]), seq) &&
            seq_gt(bq_seq(c->sb_pos[i]), bq_seq(q)))
            q = c->sb_pos[i];
    while (q && seq_le(bq_end(q), seq)) {
        q = bq_next(q);
        (*steps)++;
    }
    return q;
}

void sb_stop(struct tern_conn *c, tern_buf *q, uint32_t from)
{
    if (!q || !seq_gt(bq_end(q), c->snd_una))
        return;
    /* the highest goes to [1]; a lower one (a resend filling a hole
     * below it) to [0], so both regions keep their place */
    int i = pos_valid(c, 1) && seq_lt(bq_seq(q), bq_seq(c->sb_pos[1])) ? 0 : 1;
    c->sb_pos[i] = q;
    c->sb_pos_end[i] = bq_end(q);
    c->sb_pos_from[i] = from;
}

/* Mark the unmarked send-queue buffers that block [s, e) covers wholly,
 * walking its parts outside the ranges known before this ACK. */
static void sb_mark(struct tcp_layer *tl, struct tern_conn *c, uint32_t s,
                    uint32_t e)
{
    uint32_t part[SB_PARTS_MAX][2];
    uint32_t np = sb_new_parts(c, s, e, part);
    uint64_t steps = 0;
    for (uint32_t k = 0; k < np; k++) {
        tern_buf *last = NULL;
        for (tern_buf *q = sb_seek(c, part[k][0], &steps);
             q && seq_lt(bq_seq(q), part[k][1]); q = bq_next(q)) {
            steps++;
            last = q;
            uint32_t qs = bq_seq(q), qe = bq_end(q);
            if (bq_sacked(q) || qs == qe || seq_lt(qs, s) || seq_gt(qe, e))
                continue;
            q->cb[1] |= BQ_SACKED;
            c->sb_marked += qe - qs;
        }
        /* marked up to last's end: all of [s, that end) is SACKed and
         * marked where whole buffers lie in it */
        if (last && seq_le(bq_end(last), e))
            sb_stop(c, last, s);
    }
    if (tl)
        tl->sack_walked += steps;
}

uint32_t sb_update(struct tcp_layer *tl, struct tern_conn *c, const tcp_opts *o)
{
    uint32_t before = c->sacked;
    for (uint32_t k = 0; k < o->nsack && k < 4; k++) {
        uint32_t s = o->sack[k][0], e = o->sack[k][1];
        /* ignore D-SACKs and blocks outside what we sent */
        if (!seq_lt(s, e) || seq_le(e, c->snd_una) || seq_gt(e, c->snd_max))
            continue;
        if (seq_lt(s, c->snd_una))
            s = c->snd_una;
        sb_mark(tl, c, s, e);       /* before the ranges learn it */
        sb_insert(c, s, e);
    }
    sb_sum(c);
    return c->sacked > before ? c->sacked - before : 0;
}

void sb_ack(struct tern_conn *c)
{
    uint32_t i = 0, n = c->nsb;
    while (i < n && seq_le(c->sb[i][1], c->snd_una))
        i++;
    if (i) {
        for (uint32_t k = i; k < n; k++) {
            c->sb[k - i][0] = c->sb[k][0];
            c->sb[k - i][1] = c->sb[k][1];
        }
        n -= i;
    }
    if (n && seq_lt(c->sb[0][0], c->snd_una))
        c->sb[0][0] = c->snd_una;
    if (!n && c->sb_marked) {
        /* the ranges forgot marked data: restore its lowest run, so a
         * scoreboard exists wherever marks do (the send paths that skip
         * SACKed data test nsb) */
        const tern_buf *q = c->sq_head;
        while (q && !bq_sacked(q))
            q = bq_next(q);
        if (q) {
            uint32_t s = bq_seq(q), e = bq_end(q);
            for (q = bq_next(q); q && bq_sacked(q) && bq_seq(q) == e;
                 q = bq_next(q))
                e = bq_end(q);
            c->sb[0][0] = seq_lt(s, c->snd_una) ? c->snd_una : s;
            c->sb[0][1] = e;
            n = 1;
        }
    }
    c->nsb = (uint8_t)n;
    sb_sum(c);
    /* forget the walk positions snd_una passed (their buffers are freed
     * now), and all of them with the scoreboard: the loss-free path's
     * ACKs (ack_whole_flight) free buffers without looking at them, and
     * a stale end would compare wrongly once the sequence space wraps */
    for (int i = 0; i < 2; i++)
        if (!n || !pos_valid(c, i))
            c->sb_pos[i] = NULL;
}

uint32_t sb_skip(const struct tern_conn *c, uint32_t seq)
{
    for (uint32_t i = 0; i < c->nsb; i++) {
        if (seq_lt(seq, c->sb[i][0]))
            break;
        if (seq_lt(seq, c->sb[i][1]))
            return c->sb[i][1];
    }
    return seq;
}

/* Every unSACKed byte below the returned seq is lost (RFC 6675 IsLost is
 * monotone: more is SACKed above a lower byte). */
static uint32_t sb_loss_bound(const struct tern_conn *c, uint32_t mss)
{
    uint32_t above = 0;
    for (uint32_t i = c->nsb; i-- > 0;) {
        above += c->sb[i][1] - c->sb[i][0];
        if (c->nsb - i >= TCP_DUPTHRESH ||
            above > (TCP_DUPTHRESH - 1) * mss)
            return c->sb[i][0];
    }
    return c->snd_una;
}

bool sb_is_lost(const struct tern_conn *c, uint32_t seq, uint32_t mss)
{
    return seq_lt(seq, sb_loss_bound(c, mss));
}

/*
 * Walk the unSACKed parts of [snd_una, snd_max), hole by hole, and within
 * a hole buffer by buffer (a segment never spans two send-queue buffers,
 * and each buffer carries the stamp of its last transmission). A part is
 * to be sent again when
 *  - RACK declares its buffer lost (rack_lost: stamped before
 *    rack_lost_before, set by rack_detect; a retransmission restamps the
 *    buffer, so a part stays lost only until it is resent, and a resend
 *    that is lost again is found again once data sent after it is
 *    delivered), or
 *  - RFC 6675 IsLost holds for it and it lies at or above `from` (rule 1:
 *    not yet resent in this recovery).
 * Returns the bytes to be sent again; with seq != NULL stops at the first
 * such part (*seq, *len capped by mss). A marked buffer is SACKed even
 * where the ranges forgot it, and is passed over. Without RACK state only
 * the RFC 6675 rule applies.
 */
static uint32_t sb_scan(const struct tern_conn *c, uint32_t from, uint32_t mss,
                        uint32_t *seq, uint32_t *len)
{
    uint32_t bound = sb_loss_bound(c, mss);
    bool rack = c->rack_rtt != 0;
    const tern_buf *q = c->sq_head;
    uint32_t lost = 0, hs = c->snd_una;
    for (uint32_t i = 0; i <= c->nsb; i++) {
        uint32_t he = i < c->nsb ? c->sb[i][0] : c->snd_max;
        if (!rack && !seq_lt(hs, bound))
            break;
        for (uint32_t s = hs; seq_lt(s, he);) {
            uint32_t pe = he;
            bool rl = false;
            while (q && seq_le(bq_end(q), s))
                q = bq_next(q);
            if (q && seq_le(bq_seq(q), s)) {
                /* past the IsLost bound, a first transmission RACK does
                 * not call lost ends the walk: nothing above is lost
                 * (sb_rack_lost says why) */
                if (rack && !(q->cb32 & 1u) && !seq_lt(s, bound) &&
                    !rack_lost(c, q))
                    return lost;
                if (seq_lt(bq_end(q), pe))
                    pe = bq_end(q);
                /* SACKed where the ranges forgot it, or resent and
                 * in flight (rack_resent) */
                if (bq_sacked(q) || rack_resent(c, q)) {
                    s = pe;
                    continue;
                }
                rl = rack && rack_lost(c, q);
            }
            uint32_t ls = s, le = pe;
            if (!rl) {
                if (seq_lt(ls, from))
                    ls = from;
                if (seq_gt(le, bound))
                    le = bound;
            }
            if (seq_lt(ls, le)) {
                if (seq) {
                    *seq = ls;
                    *len = le - ls < mss ? le - ls : mss;
                    return le - ls;
                }
                lost += le - ls;
            }
            s = pe;
        }
        if (i == c->nsb)
            break;
        hs = c->sb[i][1];
    }
    return lost;
}

bool sb_next_hole(const struct tern_conn *c, uint32_t from, uint32_t mss,
                  uint32_t *seq, uint32_t *len)
{
    return sb_scan(c, from, mss, seq, len) != 0;
}

uint32_t sb_pipe(const struct tern_conn *c, uint32_t mss)
{
    /* in flight: everything sent and not acked, minus SACKed bytes,
     * minus lost bytes not yet resent (RACK-lost anywhere, RFC 6675-lost
     * at or above rxt_next) */
    uint32_t from = seq_gt(c->rxt_next, c->snd_una) ? c->rxt_next : c->snd_una;
    uint32_t lost = sb_scan(c, from, mss, NULL, NULL);
    uint32_t out = c->snd_max - c->snd_una;
    uint32_t sub = c->sacked + lost;
    return out > sub ? out - sub : 0;
}

uint32_t sb_rack_lost(const struct tern_conn *c, uint32_t since,
                      uint32_t *fresh)
{
    uint32_t lost = 0, nf = 0, i = 0, n = c->nsb;
    *fresh = 0;
    if (!c->rack_rtt)
        return 0;
    for (const tern_buf *q = c->sq_head; q; q = bq_next(q)) {
        uint32_t s = bq_seq(q), e = bq_end(q);
        if (!seq_lt(s, c->snd_max))
            break;
        /* first transmissions leave in sequence order, so their stamps
         * grow along the queue, and a resend is stamped after the first
         * transmissions below it: past a first transmission RACK does not
         * call lost (the same stamp and a higher end, or a later stamp),
         * nothing is */
        if (!(q->cb32 & 1u) && !rack_lost(c, q))
            break;
        if (!seq_gt(e, c->snd_una) || bq_sacked(q) || !rack_lost(c, q))
            continue;
        if (seq_lt(s, c->snd_una))
            s = c->snd_una;
        while (i < n && seq_le(c->sb[i][1], s))
            i++;
        if (i < n && seq_le(c->sb[i][0], s) && seq_ge(c->sb[i][1], e))
            continue;                           /* wholly SACKed */
        lost++;
        if (!stamp_lt(q->cb32 & ~1u, since))
            nf++;
    }
    *fresh = nf;
    return lost;
}

void sack_note_dup(tern_stack *st, struct tern_conn *c, uint32_t s,
                   uint32_t e)
{
    (void)st;
    if (!(c->flags & TF_SACK) || !seq_lt(s, e))
        return;
    c->dsack[0] = s;
    c->dsack[1] = e;
    c->flags |= TF_DSACK;
}

void sack_note_recent(struct tern_conn *c, uint32_t s, uint32_t e)
{
    /* merge the slots it overlaps or touches, then put it first */
    uint32_t n = 0, keep[TCP_RSACK_MRU][2];
    for (uint32_t i = 0; i < TCP_RSACK_MRU; i++) {
        uint32_t rs = c->rsack[i][0], re = c->rsack[i][1];
        if (rs == re)
            continue;
        if (seq_le(rs, e) && seq_ge(re, s)) {
            if (seq_lt(rs, s))
                s = rs;
            if (seq_gt(re, e))
                e = re;
            continue;
        }
        keep[n][0] = rs;
        keep[n][1] = re;
        n++;
    }
    c->rsack[0][0] = s;
    c->rsack[0][1] = e;
    for (uint32_t i = 1; i < TCP_RSACK_MRU; i++) {
        bool k = i - 1 < n;
        c->rsack[i][0] = k ? keep[i - 1][0] : 0;
        c->rsack[i][1] = k ? keep[i - 1][1] : 0;
    }
}

/* The block (a run of touching or overlapping queued segments) that
 * starts at queue buffer b: [*s, *e); returns the buffer after it. */
static const tern_buf *ooo_block(const tern_buf *b, uint32_t *s, uint32_t *e)
{
    *s = bq_seq(b);
    *e = bq_end(b);
    for (b = bq_next(b); b && seq_le(bq_seq(b), *e); b = bq_next(b))
        if (seq_gt(bq_end(b), *e))
            *e = bq_end(b);
    return b;
}

/* The out-of-order queue's block that holds seq, or false. */
static bool ooo_block_of(const struct tern_conn *c, uint32_t seq,
                         uint32_t *bs, uint32_t *be)
{
    const tern_buf *b = c->ooo_head;
    while (b) {
        uint32_t s, e;
        b = ooo_block(b, &s, &e);
        if (seq_lt(seq, s))
            return false;
        if (seq_lt(seq, e)) {
            *bs = s;
            *be = e;
            return true;
        }
    }
    return false;
}

/* Is a block starting at s among out[from..n)? */
static bool have_block(uint32_t (*out)[2], uint32_t from, uint32_t n,
                       uint32_t s)
{
    for (uint32_t i = from; i < n; i++)
        if (out[i][0] == s)
            return true;
    return false;
}

uint32_t sack_blocks(const struct tern_conn *c, uint32_t (*out)[2],
                     uint32_t max)
{
    uint32_t n = 0;
    if (c->flags & TF_DSACK) {          /* RFC 2883: first, once */
        out[0][0] = c->dsack[0];
        out[0][1] = c->dsack[1];
        n = 1;
    }
    uint32_t first = n;
    /* the blocks whose data arrived last, newest first; a slot whose
     * data has since become in order, or was merged into a block already
     * listed, adds nothing */
    for (uint32_t i = 0; i < TCP_RSACK_MRU && n < max; i++) {
        uint32_t bs, be, rs = c->rsack[i][0], re = c->rsack[i][1];
        if (rs == re || !seq_gt(re, c->rcv_nxt))
            continue;
        if (seq_lt(rs, c->rcv_nxt))
            rs = c->rcv_nxt;
        if (!ooo_block_of(c, rs, &bs, &be) || have_block(out, first, n, bs))
            continue;
        out[n][0] = bs;
        out[n][1] = be;
        n++;
    }
    /* room left: the other blocks, lowest first */
    const tern_buf *b = c->ooo_head;
    while (b && n < max) {
        uint32_t s, e;
        b = ooo_block(b, &s, &e);
        if (!have_block(out, first, n, s)) {
            out[n][0] = s;
            out[n][1] = e;
            n++;
        }
    }
    return n;
}
