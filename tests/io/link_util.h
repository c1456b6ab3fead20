/* link_util.h - small helpers shared by the memlink tests. */
#ifndef TERN_TEST_LINK_UTIL_H
#define TERN_TEST_LINK_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "frames.h"
#include "mem.h"

static inline tern_memlink *link_new(const tern_memlink_config *c)
{
    char err[160] = "";
    tern_memlink *l = tern_memlink_create(c, err, sizeof(err));
    if (!l)
        fail_msg("tern_memlink_create: %s", err);
    return l;
}

/* Send n bytes from `end` as one frame (a chain if a buffer is too small). */
static inline void send_bytes(tern_memlink *l, int end, const void *p, size_t n)
{
    tern_buf *b = f_chain(tern_memlink_pool(l, end), p, n);
    assert_non_null(b);
    tern_memlink_tx(tern_memlink_tx_ctx(l, end), &b, 1);
}

/* Receive exactly one frame towards `end` at now (fails otherwise). */
static inline tern_buf *recv_one(tern_memlink *l, int end, uint64_t now)
{
    tern_buf *b[2];
    unsigned n = tern_memlink_rx(l, end, b, 2, now);
    if (n != 1)
        fail_msg("expected 1 frame towards end %d, got %u", end, n);
    return b[0];
}

static inline void release(tern_memlink *l, int end, tern_buf *b)
{
    tern_pool_release(tern_memlink_pool(l, end), b);
}

/* Every buffer back home: nothing leaked or double counted. */
static inline void assert_pools_full(tern_memlink *l)
{
    for (int e = 0; e < 2; e++)
        assert_int_equal(tern_pool_available(tern_memlink_pool(l, e)),
                         tern_pool_count(tern_memlink_pool(l, e)));
}

#endif
