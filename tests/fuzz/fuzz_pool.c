/* fuzz_pool.c - see fuzz_pool.h. */
#include "fuzz_pool.h"

#include <stdlib.h>
#include <string.h>

static tern_buf bufs[FZ_POOL_MAX];
static tern_buf *free_list[FZ_POOL_MAX];
static unsigned nbufs, nfree;
static long outstanding;

/* the saved state */
static tern_buf saved_bufs[FZ_POOL_MAX];
static tern_buf *saved_free_list[FZ_POOL_MAX];
static unsigned saved_nfree;
static long saved_outstanding;

tern_buf *fz_alloc(void *ctx)
{
    (void)ctx;
    if (!nfree)
        return NULL;
    tern_buf *b = free_list[--nfree];
    b->data = b->head + TERN_HEADROOM;
    b->len = 0;
    b->refs = 1;
    b->flags = 0;
    b->frag = b->next = NULL;
    outstanding++;
    return b;
}

static void fz_free(void *ctx, tern_buf *b)
{
    (void)ctx;
    free_list[nfree++] = b;
    outstanding--;
}

void fz_pool_use(tern_config *c, unsigned n)
{
    if (!nbufs) {
        nbufs = n < FZ_POOL_MAX ? n : FZ_POOL_MAX;
        for (unsigned i = 0; i < nbufs; i++) {
            bufs[i].head = malloc(FZ_BUF_SIZE);
            if (!bufs[i].head)
                abort();
            bufs[i].size = FZ_BUF_SIZE;
            free_list[nfree++] = &bufs[i];
        }
    }
    c->buf_ops.alloc = fz_alloc;
    c->buf_ops.free = fz_free;
}

long fz_outstanding(void)
{
    return outstanding;
}

void fz_pool_save(void)
{
    memcpy(saved_bufs, bufs, sizeof bufs);
    memcpy(saved_free_list, free_list, sizeof free_list);
    saved_nfree = nfree;
    saved_outstanding = outstanding;
}

void fz_pool_restore(void)
{
    memcpy(bufs, saved_bufs, sizeof bufs);
    memcpy(free_list, saved_free_list, sizeof free_list);
    nfree = saved_nfree;
    outstanding = saved_outstanding;
}
