/* bytebuf.h - a growable byte buffer for the rare slow paths (a request
 * split across segments, output the transport could not take yet). The hot
 * path never touches it: complete requests are parsed in place. */
#ifndef APPS_BYTEBUF_H
#define APPS_BYTEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct bytebuf {
    char *p;
    size_t off;   /* first valid byte */
    size_t len;   /* valid bytes at p + off */
    size_t cap;
} bytebuf;

/* Append n bytes; false (nothing appended) when len would pass limit or
 * memory runs out. */
static inline bool bb_append(bytebuf *b, const void *d, size_t n, size_t limit)
{
    if (b->len + n > limit)
        return false;
    if (b->off + b->len + n > b->cap) {
        if (b->off) {
            memmove(b->p, b->p + b->off, b->len);
            b->off = 0;
        }
        if (b->len + n > b->cap) {
            size_t cap = b->cap ? b->cap : 1024;
            while (cap < b->len + n)
                cap *= 2;
            char *np = realloc(b->p, cap);
            if (!np)
                return false;
            b->p = np;
            b->cap = cap;
        }
    }
    memcpy(b->p + b->off + b->len, d, n);
    b->len += n;
    return true;
}

static inline void bb_consume(bytebuf *b, size_t n)
{
    b->off += n;
    b->len -= n;
    if (!b->len)
        b->off = 0;
}

static inline const char *bb_data(const bytebuf *b) { return b->p + b->off; }

static inline void bb_free(bytebuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

#endif
