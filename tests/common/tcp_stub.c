/* Placeholder TCP layer for builds with -DTERN_NO_TCP=ON (testing the
 * lower layers alone). Every TCP
 * segment is dropped and counted. */
#include "ip6.h"

void tcp_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    (void)st; (void)cfg; (void)c;
}

void tcp_input(tern_stack *st, tern_buf *b, const ip4_rx *ip)
{
    (void)ip;
    CTR(st, tcp_drop_no_conn);
    tern_buf_release(st, b);
}

uint64_t tcp_poll(tern_stack *st, uint64_t now)
{
    (void)st; (void)now;
    return TERN_NEVER;
}

void tcp_icmp_error(tern_stack *st, uint8_t type, uint8_t code, uint32_t mtu,
                    const uint8_t *quoted_ip, uint32_t quoted_len)
{
    (void)st; (void)type; (void)code; (void)mtu; (void)quoted_ip;
    (void)quoted_len;
}

void tcp_input6(tern_stack *st, tern_buf *b, const ip6_rx *ip)
{
    (void)ip;
    CTR(st, tcp_drop_no_conn);
    tern_buf_release(st, b);
}

void tcp_icmp6_error(tern_stack *st, uint8_t type, uint8_t code, uint32_t mtu,
                     const uint8_t *quoted_ip6, uint32_t quoted_len)
{
    (void)st; (void)type; (void)code; (void)mtu; (void)quoted_ip6;
    (void)quoted_len;
}

void tcp_input_done(tern_stack *st)
{
    (void)st;
}

void tcp_fini(tern_stack *st)
{
    (void)st;
}

int tern_tcp_listen(tern_stack *st, uint16_t port, void *user)
{
    (void)st; (void)port; (void)user;
    return -TERN_EINVAL;
}

long tern_tcp_send(tern_stack *st, tern_conn *c, const void *data, size_t len)
{
    (void)st; (void)c; (void)data; (void)len;
    return -TERN_ENOTCONN;
}
