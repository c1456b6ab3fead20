/* ooo.c - the out-of-order receive queue: the received buffers themselves
 * (no copy), sorted by sequence, at most cfg.ooo_max_segs of them, and at
 * most cfg.ooo_max_bufs in all of a stack's queues together. Appends
 * behind the last one are O(1); other inserts walk the (bounded) queue.
 * Overlaps are kept and trimmed when the data becomes in-order. */
#include "tcp.h"

/* Nothing out of order left: no block to remember. */
static void rsack_clear(struct tern_conn *c)
{
    for (uint32_t i = 0; i < TCP_RSACK_MRU; i++)
        c->rsack[i][0] = c->rsack[i][1] = 0;
}

void ooo_insert(tern_stack *st, struct tern_conn *c, tern_buf *b,
                uint8_t *data, uint32_t seq, uint32_t len, bool fin)
{
    struct tcp_layer *tl = TL(st);
    if (c->ooo_n >= tl->ooo_max || tl->ooo_bufs >= tl->ooo_bufs_max) {
        CTR(st, tcp_drop_ooo_full);
        tern_buf_release(st, b);
        return;
    }
    uint32_t end = seq + len;
    tern_buf *prev = NULL, *cur = c->ooo_head;
    if (c->ooo_tail && seq_ge(seq, bq_end(c->ooo_tail))) {
        prev = c->ooo_tail;
        cur = NULL;
    } else {
        while (cur && seq_lt(bq_seq(cur), seq)) {
            prev = cur;
            cur = bq_next(cur);
        }
    }
    /* already held: covered by the previous or next kept segment */
    if ((prev && seq_le(end, bq_end(prev))) ||
        (cur && bq_seq(cur) == seq && seq_le(end, bq_end(cur)))) {
        CTR(st, tcp_dup_data_in);
        tern_buf_release(st, b);
        sack_note_dup(st, c, seq, end);
        sack_note_recent(c, seq, end);
        return;
    }
    bq_set(b, seq, len, data);
    if (fin)
        b->cb[1] |= BQ_FIN;
    bq_set_next(b, cur);
    if (prev)
        bq_set_next(prev, b);
    else
        c->ooo_head = b;
    if (!cur)
        c->ooo_tail = b;
    c->flags |= TF_OOO;
    c->ooo_n++;
    tl->ooo_bufs++;
    sack_note_recent(c, seq, end);
    CTR(st, tcp_ooo_segments);
    st->ctr.tcp_ooo_bytes += len;
}

tern_buf *ooo_pop(tern_stack *st, struct tern_conn *c, uint8_t **data,
                  uint32_t *len, bool *fin)
{
    tern_buf *b;
    while ((b = c->ooo_head) && seq_le(bq_seq(b), c->rcv_nxt)) {
        c->ooo_head = bq_next(b);
        if (!c->ooo_head) {
            c->ooo_tail = NULL;
            c->flags &= ~(uint32_t)TF_OOO;
            rsack_clear(c);
        }
        c->ooo_n--;
        TL(st)->ooo_bufs--;
        bool f = (b->cb[1] & BQ_FIN) != 0;
        uint32_t end = bq_end(b);
        if (seq_gt(end, c->rcv_nxt) || (f && end == c->rcv_nxt)) {
            uint32_t off = c->rcv_nxt - bq_seq(b);
            *data = bq_data(b) + off;
            *len = bq_len(b) - off;
            *fin = f;
            return b;
        }
        tern_buf_release(st, b);    /* wholly old */
    }
    return NULL;
}

void ooo_purge(tern_stack *st, struct tern_conn *c)
{
    tern_buf *b = c->ooo_head;
    while (b) {
        tern_buf *n = bq_next(b);
        tern_buf_release(st, b);
        b = n;
    }
    c->ooo_head = c->ooo_tail = NULL;
    c->flags &= ~(uint32_t)TF_OOO;
    rsack_clear(c);
    TL(st)->ooo_bufs -= c->ooo_n;
    c->ooo_n = 0;
}
