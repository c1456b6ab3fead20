/* libFuzzer: a sequence of frames with time steps. Each record is
 * [time step in ms: 1 byte][length: 2 bytes][frame], so timers (RTO,
 * delayed ACK, TIME_WAIT, ARP) run between frames. */
#include <stdlib.h>

#include "fuzz_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tern_stack *st = fz_reset();
    uint64_t now = 10;
    while (size >= 3) {
        now += (uint64_t)data[0] * TERN_NS_PER_MS * 8;
        size_t len = (size_t)data[1] << 8 | data[2];
        data += 3;
        size -= 3;
        if (len > size)
            len = size;
        fz_frame(st, data, len, now);
        tern_poll(st, now);
        data += len;
        size -= len;
    }
    /* let every timer run out: connections must end, nothing may hang */
    for (int i = 0; i < 40; i++) {
        now += 5 * TERN_NS_PER_SEC;
        tern_poll(st, now);
    }
    tern_stack_fini(st);
    if (fz_outstanding() != 0)
        abort();
    return 0;
}
