/* ip6_l4_stub.c - stand-ins for TCP and UDP over IPv6 until the transport
 * layers implement them: every datagram is counted and dropped. */
#include "ip6.h"

void tcp_input6(tern_stack *st, tern_buf *b, const ip6_rx *ip)
{
    (void)ip;
    CTR(st, ip6_drop_no_l4);
    tern_buf_release(st, b);
}

void udp_input6(tern_stack *st, tern_buf *b, const ip6_rx *ip)
{
    (void)ip;
    CTR(st, ip6_drop_no_l4);
    tern_buf_release(st, b);
}

void tcp_icmp6_error(tern_stack *st, uint8_t type, uint8_t code, uint32_t mtu,
                     const uint8_t *quoted_ip6, uint32_t quoted_len)
{
    (void)type, (void)code, (void)mtu, (void)quoted_ip6, (void)quoted_len;
    CTR(st, ip6_drop_no_l4);
}
