/* eth.c - Ethernet II framing. */
#include "stack.h"

const uint8_t eth_broadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

void eth_input(tern_stack *st, tern_buf *b)
{
    if (b->len < ETH_HDR_LEN) {
        CTR(st, eth_drop_short);
        tern_buf_release(st, b);
        return;
    }
    const uint8_t *h = b->data;
    /* Ours or broadcast; we join no multicast groups. */
    bool ours = tern_memcmp(h, st->cfg.mac, 6) == 0;
    if (!ours && tern_memcmp(h, eth_broadcast, 6) != 0) {
        CTR(st, eth_drop_not_ours);
        tern_buf_release(st, b);
        return;
    }
    uint16_t type = rd16(h + 12);
    b->data += ETH_HDR_LEN;
    b->len -= ETH_HDR_LEN;
    if (type == ETH_TYPE_IPV4) {
        ip4_input(st, b);
    } else if (type == ETH_TYPE_ARP) {
        arp_input(st, b);
    } else {
        CTR(st, eth_drop_ethertype);
        tern_buf_release(st, b);
    }
}

void eth_output(tern_stack *st, tern_buf *b, const uint8_t dst_mac[6],
                uint16_t ethertype)
{
    if (b->data - b->head < ETH_HDR_LEN) {
        CTR(st, tx_frames_dropped);
        tern_buf_release(st, b);
        return;
    }
    b->data -= ETH_HDR_LEN;
    b->len += ETH_HDR_LEN;
    uint8_t *h = b->data;
    tern_memcpy(h, dst_mac, 6);
    tern_memcpy(h + 6, st->cfg.mac, 6);
    wr16(h + 12, ethertype);
    b->l2_len = ETH_HDR_LEN;
    CTR(st, eth_out);
    stack_tx(st, b);
}
