/* bench_steer_cost.c - what software steering costs per frame, without a
 * network: one thread plays two cores. Core 0 "receives" bursts of 32
 * TCP frames of 1024 flows (a frame is a pool buffer with a 54-byte
 * header copied in, as a driver's rx copy would leave it) and steers them;
 * core 1 takes its half and frees it, and the buffers return home.
 * Printed: ns per frame for
 *   hash      steer_core_of() alone (Toeplitz over the 4-tuple, table)
 *   baseline  rx stand-in + free, no steering
 *   steer     the same through steer_rx on both cores, frees through
 *             steer_buf_ops (half the frames cross to core 1 and back)
 * Not a test (no assertion on time): run it by hand, e.g.
 *   build/tests/bench_steer_cost [rounds]                              */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "steer.h"

#define FLOWS 1024u
#define BURST 32u

static uint8_t hdr[FLOWS][54];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void make_headers(void)
{
    for (unsigned f = 0; f < FLOWS; f++) {
        uint8_t *p = hdr[f];
        memset(p, 0, sizeof hdr[f]);
        p[12] = 0x08;                       /* IPv4 */
        p[14] = 0x45;
        p[17] = 40;
        p[22] = 64;
        p[23] = 6;                          /* TCP */
        p[26] = 198, p[27] = 18, p[28] = 0, p[29] = 1;
        p[30] = 198, p[31] = 18, p[32] = 0, p[33] = 2;
        unsigned sport = 32768 + f * 7;
        p[34] = (uint8_t)(sport >> 8), p[35] = (uint8_t)sport;
        p[36] = 0x1b, p[37] = 0x5f;         /* 7007 */
    }
}

static unsigned rx_standin(tern_pool *p, tern_buf **b, unsigned round)
{
    for (unsigned i = 0; i < BURST; i++) {
        b[i] = tern_pool_alloc(p);
        memcpy(b[i]->data, hdr[(round * BURST + i) % FLOWS], 54);
        b[i]->len = 54;
    }
    return BURST;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 200000;
    tern_pool *pools[2] = {tern_pool_create(2048, 2048),
                           tern_pool_create(2048, 2048)};
    steer_config cfg;
    steer_config_defaults(&cfg, 2);
    steer *s = steer_create(&cfg, pools, NULL, 0);
    if (!pools[0] || !pools[1] || !s)
        return 1;
    make_headers();
    tern_buf *in[BURST], *out[2 * BURST];
    tern_buf_ops ops0 = steer_buf_ops(s, 0), ops1 = steer_buf_ops(s, 1);
    double frames = (double)rounds * BURST;

    /* hash alone, over frames already in buffers */
    rx_standin(pools[0], in, 0);
    volatile unsigned sink = 0;
    double t = now_s();
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < BURST; i++) {
            memcpy(in[i]->data + 34, hdr[(r * BURST + i) % FLOWS] + 34, 2);
            sink += steer_core_of(s, in[i]);
        }
    double hash_ns = (now_s() - t) / frames * 1e9;
    for (unsigned i = 0; i < BURST; i++)
        tern_pool_release(pools[0], in[i]);

    t = now_s();
    for (unsigned r = 0; r < rounds; r++) {
        unsigned n = rx_standin(pools[0], in, r);
        for (unsigned i = 0; i < n; i++)
            tern_pool_release(pools[0], in[i]);
    }
    double base_ns = (now_s() - t) / frames * 1e9;

    t = now_s();
    for (unsigned r = 0; r < rounds; r++) {
        unsigned n = rx_standin(pools[0], in, r);
        unsigned k = steer_rx(s, 0, in, n, out, 2 * BURST);
        for (unsigned i = 0; i < k; i++) {
            out[i]->refs = 0;
            ops0.free(ops0.ctx, out[i]);
        }
        k = steer_rx(s, 1, NULL, 0, out, 2 * BURST);
        for (unsigned i = 0; i < k; i++) {
            out[i]->refs = 0;
            ops1.free(ops1.ctx, out[i]);
        }
    }
    double steer_ns = (now_s() - t) / frames * 1e9;
    const steer_stats *st = steer_get_stats(s, 0);
    printf("frames %.0f (handed to core 1: %llu)\n", frames,
           (unsigned long long)st->sent);
    printf("hash      %6.1f ns/frame\n", hash_ns);
    printf("baseline  %6.1f ns/frame\n", base_ns);
    printf("steer     %6.1f ns/frame (+%.1f)\n", steer_ns, steer_ns - base_ns);
    (void)sink;
    steer_destroy(s);
    tern_pool_destroy(pools[0]);
    tern_pool_destroy(pools[1]);
    return 0;
}
