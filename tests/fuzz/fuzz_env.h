/* fuzz_env.h - a stack instance for fuzzing: checksums not verified (so
 * mutated frames reach deep code), a UDP port bound, a TCP listener on
 * port 80 and one established connection (198.18.0.1:40000 -> :80) built
 * by a scripted ARP request and handshake (peer ISS 1000). Everything
 * it sends is released at once. */
#ifndef TERN_FUZZ_ENV_H
#define TERN_FUZZ_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "fuzz_pool.h"
#include "tern.h"

#define FZ_IP TERN_IP4(198, 18, 0, 2)
#define FZ_PEER TERN_IP4(198, 18, 0, 1)
/* The established connection's ISS; make_corpus.py builds its seeds with
 * it, and fz_reset warns if the stack picks another one. */
#define FZ_ISS 0x8043e63eu

/* The start state above, the same on every call: built and checked once,
 * then restored from a snapshot (fuzz_env.c). Call tern_stack_fini on the
 * previous one first, so its buffers come back. */
tern_stack *fz_reset(void);
/* Feed one frame of len bytes at time now. */
void fz_frame(tern_stack *st, const uint8_t *data, size_t len, uint64_t now);
/* The same flagged TERN_BUF_RX_SUM, as a copying driver hands a frame
 * (through tern_input_begin/one/end, as such a driver may),
 * with the sum of its bytes after the Ethernet header plus `wrong` (0: the
 * right sum). */
void fz_frame_sum(tern_stack *st, const uint8_t *data, size_t len,
                  uint64_t now, uint16_t wrong);

#endif
