/* nd6.c - Neighbor Discovery (first version: nothing is resolved). */
#include "ip6.h"

void nd6_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    (void)st, (void)cfg, (void)c;
}

void nd6_input(tern_stack *st, tern_buf *b, const ip6_rx *ip)
{
    (void)ip;
    CTR(st, nd_in);
    tern_buf_release(st, b);
}

void nd6_resolve_and_send(tern_stack *st, tern_buf *b, const uint8_t nh[16])
{
    (void)nh;
    CTR(st, nd_resolve_failed);
    tern_buf_release(st, b);
}

uint64_t nd6_poll(tern_stack *st, uint64_t now)
{
    (void)st, (void)now;
    return TERN_NEVER;
}

void nd6_clock_start(tern_stack *st, uint64_t shift) { (void)st, (void)shift; }
void nd6_fini(tern_stack *st) { (void)st; }
