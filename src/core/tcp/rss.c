/* rss.c - the Toeplitz hash of Microsoft RSS, and the queue a flow lands
 * on, so active opens can pick ports that come back to this core. */
#include "tcp.h"

uint32_t tern_toeplitz(const uint8_t key[40], const uint8_t *data, size_t len)
{
    /* window = the 32 key bits aligned with the current input bit;
     * the key is shifted in one bit at a time. Input beyond 36 bytes would
     * need more than 40 key bytes: such bits use zero key bits. */
    uint32_t hash = 0;
    uint32_t win = rd32(key);
    size_t next = 4;              /* next key byte to shift in */
    for (size_t i = 0; i < len; i++) {
        uint8_t kb = next < 40 ? key[next] : 0;
        next++;
        for (int bit = 7; bit >= 0; bit--) {
            if (data[i] & (1u << bit))
                hash ^= win;
            win = win << 1 | ((kb >> bit) & 1u);
        }
    }
    return hash;
}

/* The queue of a flow whose Toeplitz hash is h: the indirection table's
 * entry, or h mod the queue count without one. */
static uint16_t rss_queue_of_hash(const tern_config *cfg, uint32_t h)
{
    if (cfg->rss_reta_size == 0)
        return (uint16_t)(h % cfg->rss_queues);
    uint32_t size = cfg->rss_reta_size;
    uint32_t idx = (size & (size - 1)) == 0 ? (h & (size - 1)) : h % size;
    return cfg->rss_reta[idx];
}

uint16_t rss_queue_of(const tern_config *cfg, uint32_t src, uint32_t dst,
                      uint16_t sport, uint16_t dport)
{
    if (cfg->rss_queues <= 1)
        return 0;
    uint8_t in[12];
    wr32(in, src);
    wr32(in + 4, dst);
    wr16(in + 8, sport);
    wr16(in + 10, dport);
    return rss_queue_of_hash(cfg, tern_toeplitz(cfg->rss_key, in, sizeof in));
}

uint16_t rss_queue_of6(const tern_config *cfg, const uint8_t src[16],
                       const uint8_t dst[16], uint16_t sport, uint16_t dport)
{
    if (cfg->rss_queues <= 1)
        return 0;
    uint8_t in[36];
    tern_memcpy(in, src, 16);
    tern_memcpy(in + 16, dst, 16);
    wr16(in + 32, sport);
    wr16(in + 34, dport);
    return rss_queue_of_hash(cfg, tern_toeplitz(cfg->rss_key, in, sizeof in));
}
