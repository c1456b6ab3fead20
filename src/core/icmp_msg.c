/* icmp_msg.c - what ICMP (RFC 792) and ICMPv6 (RFC 4443) build alike: an
 * echo request, an error quoting the datagram that caused it, and the
 * token bucket that limits errors. Each version checksums and sends the
 * message its own way (icmp.c, icmp6.c). */
#include "stack.h"

tern_buf *icmp_echo_msg(tern_stack *st, uint8_t type, uint16_t id,
                        uint16_t seq, const void *data, size_t len, int *err)
{
    tern_buf *b = tern_buf_alloc(st);
    if (!b) {
        CTR(st, tx_drop_nobuf);
        *err = -TERN_ENOBUFS;
        return NULL;
    }
    if (ICMP_MSG_HDR_LEN + len > b->size - (uint32_t)(b->data - b->head)) {
        tern_buf_release(st, b);
        *err = -TERN_EMSGSIZE;    /* over the MTU is fine: one buffer is not */
        return NULL;
    }
    uint8_t *m = b->data;
    m[0] = type;
    m[1] = 0;
    wr16(m + 4, id);
    wr16(m + 6, seq);
    tern_memcpy(m + ICMP_MSG_HDR_LEN, data, len);
    b->len = (uint32_t)(ICMP_MSG_HDR_LEN + len);
    return b;
}

tern_buf *icmp_error_msg(tern_stack *st, uint8_t type, uint8_t code,
                         uint32_t word, const uint8_t *hdr, uint32_t hdr_len,
                         const uint8_t *l4, uint32_t l4_len,
                         uint32_t quote_max)
{
    tern_buf *b = tern_buf_alloc(st);
    if (!b) {
        CTR(st, tx_drop_nobuf);
        return NULL;
    }
    uint32_t room = b->size - (uint32_t)(b->data - b->head) - ICMP_MSG_HDR_LEN;
    uint32_t max = room < quote_max ? room : quote_max;
    uint32_t hl = hdr_len < max ? hdr_len : max;
    uint32_t n = l4_len < max - hl ? l4_len : max - hl;
    uint8_t *m = b->data;
    m[0] = type;
    m[1] = code;
    wr32(m + 4, word);
    tern_memcpy(m + ICMP_MSG_HDR_LEN, hdr, hl);
    tern_memcpy(m + ICMP_MSG_HDR_LEN + hl, l4, n);
    b->len = ICMP_MSG_HDR_LEN + hl + n;
    return b;
}

bool icmp_rate_ok(tern_stack *st, uint32_t *tokens, uint64_t *refill,
                  uint64_t *limited)
{
    if (token_take(tokens, refill, st->cfg.icmp_rate_per_sec, st->now))
        return true;
    (*limited)++;
    return false;
}
