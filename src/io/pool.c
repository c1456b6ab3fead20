/* pool.c - the LIFO buffer pool (io.h). The hot calls are static inline in
 * io.h; this file builds and tears down pools.
 *
 * One anonymous mapping holds the pool header, the free stack and the slots.
 * A slot is a tern_buf descriptor padded to a cache-line multiple followed by
 * the buffer memory, so a buffer's descriptor and its headroom (where the
 * headers go) sit on neighbouring cache lines. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "io.h"

#define CACHE_LINE 64u
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define DESC_SIZE ALIGN_UP(sizeof(tern_buf), CACHE_LINE)

_Noreturn void tern_pool_panic_(const tern_pool *p, const tern_buf *b,
                                const char *what)
{
    fprintf(stderr, "tern pool %p: %s (buffer %p, refs %u)\n", (void *)p,
            what, (const void *)b, b ? (unsigned)b->refs : 0u);
    abort();
}

_Noreturn void tern_pool_put_panic_(const tern_pool *p, const tern_buf *b)
{
    if ((uintptr_t)b - (uintptr_t)p->slots >= p->stack.span)
        tern_pool_panic_(p, b, "buffer is not from this pool");
    tern_pool_panic_(p, b, b->refs == TERN_POOL_FREE_REFS
                               ? "double free"
                               : "free of a referenced buffer");
}

void tern_pool_view(tern_pool *p, uint8_t *slots, unsigned count,
                    unsigned slot_size, unsigned buf_size, tern_buf **free)
{
    p->stack.free = free;
    p->stack.top = 0;
    p->stack.cap = count;
    p->stack.base = slots;
    p->stack.span = (size_t)count * slot_size;
    p->count = count;
    p->buf_size = buf_size;
    p->slot_size = slot_size;
    p->slots = slots;
    p->map_len = 0;
}

tern_pool *tern_pool_create(unsigned count, unsigned buf_size)
{
    if (count == 0 || buf_size <= TERN_HEADROOM)
        return NULL;
    size_t slot = DESC_SIZE + ALIGN_UP((size_t)buf_size, CACHE_LINE);
    size_t hdr = ALIGN_UP(sizeof(tern_pool), CACHE_LINE);
    size_t stack = ALIGN_UP((size_t)count * sizeof(tern_buf *), CACHE_LINE);
    if (slot > UINT32_MAX || (SIZE_MAX - hdr - stack) / slot < count)
        return NULL;
    size_t len = hdr + stack + slot * count;
    /* MAP_POPULATE: fault the memory in now, not during a benchmark. */
    uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;

    tern_pool *p = (tern_pool *)m;
    tern_pool_view(p, m + hdr + stack, count, (unsigned)slot, buf_size,
                   (tern_buf **)(m + hdr));
    p->map_len = len;
    p->stack.top = count;
    for (unsigned i = 0; i < count; i++) {
        tern_buf *b = (tern_buf *)(p->slots + (size_t)i * slot);
        b->head = (uint8_t *)b + DESC_SIZE;
        b->size = buf_size;
        b->data = b->head + TERN_HEADROOM;
        b->refs = TERN_POOL_FREE_REFS;
        /* Reversed so the first allocations walk memory upwards. */
        p->stack.free[count - 1 - i] = b;
    }
    return p;
}

void tern_pool_destroy(tern_pool *p)
{
    if (p)
        munmap(p, p->map_len);
}

static tern_buf *ops_alloc(void *ctx) { return tern_pool_alloc(ctx); }
static void ops_free(void *ctx, tern_buf *b) { tern_pool_put(ctx, b); }

tern_buf_ops tern_pool_ops(tern_pool *p)
{
    return (tern_buf_ops){
        .alloc = ops_alloc, .free = ops_free, .ctx = p, .stack = &p->stack};
}

unsigned tern_pool_available(const tern_pool *p) { return p->stack.top; }
unsigned tern_pool_count(const tern_pool *p) { return p->count; }
unsigned tern_pool_buf_size(const tern_pool *p) { return p->buf_size; }

bool tern_pool_owns(const tern_pool *p, const tern_buf *b)
{
    uintptr_t off = (uintptr_t)b - (uintptr_t)p->slots;
    return off < p->stack.span && off % p->slot_size == 0;
}
