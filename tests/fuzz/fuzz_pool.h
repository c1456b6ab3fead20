/* fuzz_pool.h - the buffers of the stack harnesses: a fixed array made
 * once per process, so a sequence of frames can run the pool dry, and a
 * count of the buffers lent and not returned (a leak). */
#ifndef TERN_FUZZ_POOL_H
#define TERN_FUZZ_POOL_H

#include "tern.h"

#define FZ_POOL_MAX 512
#define FZ_BUF_SIZE 2048

/* Make n buffers (at most FZ_POOL_MAX) on the first call, and point c's
 * buffer ops at them. */
void fz_pool_use(tern_config *c, unsigned n);
/* A buffer (data at TERN_HEADROOM, empty), or NULL when the pool is dry;
 * the alloc op of fz_pool_use. */
tern_buf *fz_alloc(void *ctx);
/* Buffers lent and not returned: must be 0 after tern_stack_fini. */
long fz_outstanding(void);
/* Keep the pool as it stands (beside a snapshot of an instance), and put
 * it back so (with that snapshot). */
void fz_pool_save(void);
void fz_pool_restore(void);

#endif
