/* eth.c - Ethernet II framing. */
#include "ip6.h"

const uint8_t eth_broadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/* Whether a frame to neither our MAC nor broadcast is to the MAC of an
 * IPv6 group we joined (33:33 and the group's last 4 bytes); counts the
 * drop when not. */
static bool mcast_ours(tern_stack *st, const tern_buf *b)
{
    const uint8_t *h = b->data;
    if (h[0] != 0x33 || h[1] != 0x33 || !st->ip6) {
        CTR(st, eth_drop_not_ours);
        return false;
    }
    uint8_t g[16] = {0xff, 2};
    tern_memcpy(g + 12, h + 2, 4);
    if (h[2] == 0xff)             /* solicited-node: ff02::1:ffXX:XXXX */
        g[11] = 1;
    if (!ip6_mcast_joined(st, g)) {
        CTR(st, ip6_drop_mcast_mac);
        return false;
    }
    return true;
}

void eth_input(tern_stack *st, tern_buf *b)
{
    if (b->len < ETH_HDR_LEN) {
        CTR(st, eth_drop_short);
        tern_buf_release(st, b);
        return;
    }
    const uint8_t *h = b->data;
    /* Ours, broadcast, or an IPv6 group we joined. */
    bool ours = tern_memcmp(h, st->cfg.mac, 6) == 0;
    if (!ours && tern_memcmp(h, eth_broadcast, 6) != 0 && !mcast_ours(st, b)) {
        tern_buf_release(st, b);
        return;
    }
    uint16_t type = rd16(h + 12);
    b->data += ETH_HDR_LEN;
    b->len -= ETH_HDR_LEN;
    /* a stack without an IPv4 address (cfg.ip 0) drops IPv4 and ARP as
     * one without IPv6 drops IPv6: as an unknown EtherType */
    if (type == ETH_TYPE_IPV4 && st->cfg.ip) {
        ip4_input(st, b);
    } else if (type == ETH_TYPE_ARP && st->cfg.ip) {
        arp_input(st, b);
    } else if (type == ETH_TYPE_IPV6 && st->ip6) {
        ip6_input(st, b);
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
