/* pattern.c - fill and verify the bulk stream pattern (see pattern.h).
 * Little-endian byte order of each word is fixed by shifting, so sender and
 * receiver agree on any host. */
#include "pattern.h"

#include <string.h>

static inline uint8_t pattern_byte(uint64_t i)
{
    return (uint8_t)(pattern_word(i >> 3) >> ((i & 7) * 8));
}

static inline uint64_t load_le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void store_le(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

void pattern_fill(uint8_t *dst, uint64_t off, size_t len)
{
    size_t i = 0;
    for (; i < len && ((off + i) & 7); i++)
        dst[i] = pattern_byte(off + i);
    for (; i + 8 <= len; i += 8)
        store_le(dst + i, pattern_word((off + i) >> 3));
    for (; i < len; i++)
        dst[i] = pattern_byte(off + i);
}

size_t pattern_check(const uint8_t *src, uint64_t off, size_t len)
{
    size_t i = 0;
    for (; i < len && ((off + i) & 7); i++)
        if (src[i] != pattern_byte(off + i))
            return i;
    for (; i + 8 <= len; i += 8)
        if (load_le(src + i) != pattern_word((off + i) >> 3))
            break;
    for (; i < len; i++)
        if (src[i] != pattern_byte(off + i))
            return i;
    return len;
}
