/* libFuzzer: one frame into a stack with a UDP port, a TCP listener and
 * an established connection; then the same frame again into a fresh one,
 * flagged TERN_BUF_RX_SUM as a copying driver hands it, with the right
 * sum of the bytes after the Ethernet header or (by the first byte's low
 * bit) a wrong one, so the receive path's trust in a driver's sum and its
 * recheck from the bytes run on every input too. Afterwards no buffer may
 * be leaked. */
#include <stdlib.h>

#include "fuzz_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tern_stack *st = fz_reset();
    fz_frame(st, data, size, 10);
    tern_poll(st, 20);
    tern_stack_fini(st);
    if (fz_outstanding() != 0)
        abort();
    if (size > 14) {
        st = fz_reset();
        uint16_t wrong = data[0] & 1 ? (uint16_t)(1 + data[14]) : 0;
        fz_frame_sum(st, data, size, 10, wrong);
        tern_poll(st, 20);
        tern_stack_fini(st);
        if (fz_outstanding() != 0)
            abort();
    }
    return 0;
}
