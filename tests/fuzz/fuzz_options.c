/* libFuzzer: the TCP option parser alone (first byte chooses SYN or not).
 * Every field it reports must have come from inside the option bytes:
 * SACK blocks at most 4, window scale at most 14. */
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
        if (!syn && (o.has & (OPT_MSS | OPT_WS | OPT_SACK_PERM)))
            abort();                 /* SYN-only options outside a SYN */
    }
    return 0;
}
