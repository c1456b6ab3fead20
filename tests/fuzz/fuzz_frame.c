/* libFuzzer: one frame into a stack with a UDP port, a TCP listener and
 * an established connection. Afterwards no buffer may be leaked. */
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
    return 0;
}
