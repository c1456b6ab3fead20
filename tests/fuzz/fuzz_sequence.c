/* libFuzzer: a sequence of frames with time steps. Each record is
 * [time step in 8 ms units: 1 byte][length: 2 bytes][frame], so timers
 * (RTO, delayed ACK, TIME_WAIT, ARP) run between frames. */
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
    /* let the timers run out (RTO backoff up to giving up, TIME_WAIT, ARP
     * refresh and expiry, reassembly): steps doubling from 50 ms to
     * 1638 s. A late poll fires a due timer once and re-arms it from then,
     * so doubling steps keep pace with the RTO's doubling and an RTO of
     * 1 s fires 10 times, more than max_retries, in 16 polls (a poll
     * every 5 s took 40 for 200 s). */
    for (int i = 0; i < 16; i++) {
        now += (50 * TERN_NS_PER_MS) << i;
        tern_poll(st, now);
    }
    tern_stack_fini(st);
    if (fz_outstanding() != 0)
        abort();
    return 0;
}
