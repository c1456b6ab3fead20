/* libFuzzer: the TCP option parser alone (first byte chooses SYN or not).
 * Every field it reports must have come from inside the option bytes:
 * SACK blocks at most 4, window scale at most 14, a Fast Open cookie
 * inside the bytes with a length RFC 7413 allows. */
#include <stdlib.h>

#include "tcp/tcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 41)
        return 0;
    tcp_opts o;
    bool syn = data[0] & 1;
    if (tcp_opts_parse(data + 1, (uint32_t)(size - 1), syn, &o)) {
        if (((o.has & OPT_SACK) && o.nsack > 4) ||
            ((o.has & OPT_WS) && o.ws > 14))
            abort();
        if (!syn && (o.has & (OPT_MSS | OPT_WS | OPT_SACK_PERM | OPT_TFO)))
            abort();                 /* SYN-only options outside a SYN */
        /* a Fast Open cookie: a request or 4..16 bytes, all inside */
        if ((o.has & OPT_TFO) &&
            ((o.tfo_len && (o.tfo_len < 4 || o.tfo_len > TFO_COOKIE_MAX)) ||
             o.tfo < data + 1 || o.tfo + o.tfo_len > data + size))
            abort();
    }
    return 0;
}
