/* ip6_frag.c - IPv6 reassembly and fragmentation (first version: every
 * fragment is dropped and nothing is cut). */
#include "ip6.h"

void reasm6_mem(tern_stack *st, const tern_config *cfg, carve *c)
{
    (void)st, (void)cfg, (void)c;
}

tern_buf *ip6_reasm(tern_stack *st, tern_buf *b, uint32_t foff)
{
    (void)foff;
    CTR(st, ip6_drop_frag_bad);
    tern_buf_release(st, b);
    return NULL;
}

uint64_t reasm6_poll(tern_stack *st, uint64_t now)
{
    (void)st, (void)now;
    return TERN_NEVER;
}

void reasm6_fini(tern_stack *st) { (void)st; }

int ip6_frag_out(tern_stack *st, tern_buf *b, uint32_t mtu)
{
    (void)mtu;
    CTR(st, ip6_drop_frag_out);
    tern_buf_release(st, b);
    return -TERN_EMSGSIZE;
}
