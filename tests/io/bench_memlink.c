/* bench_memlink.c - frames per second through an unfaulted mem link, one
 * thread: allocate, fill the length, tx from end 0, rx at end 1, release;
 * and a ping-pong (0 -> 1 -> 0) as two stacks would see it. Reports only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mem.h"

#define BURST 32

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One way, bursts of BURST frames of len bytes. */
static double one_way(tern_memlink *l, uint32_t len, unsigned long frames)
{
    tern_pool *p0 = tern_memlink_pool(l, 0), *p1 = tern_memlink_pool(l, 1);
    void *tx = tern_memlink_tx_ctx(l, 0);
    tern_buf *b[BURST];
    double t0 = now_s();
    for (unsigned long i = 0; i < frames; i += BURST) {
        for (int j = 0; j < BURST; j++) {
            b[j] = tern_pool_alloc(p0);
            b[j]->len = len;
        }
        tern_memlink_tx(tx, b, BURST);
        unsigned n = tern_memlink_rx(l, 1, b, BURST, 0);
        for (unsigned j = 0; j < n; j++)
            tern_pool_release(p1, b[j]);
    }
    return frames / (now_s() - t0);
}

/* Request/response: one frame each way per round trip. */
static double ping_pong(tern_memlink *l, uint32_t len, unsigned long rtts)
{
    tern_buf *b;
    double t0 = now_s();
    for (unsigned long i = 0; i < rtts; i++) {
        for (int e = 0; e < 2; e++) {
            b = tern_pool_alloc(tern_memlink_pool(l, e));
            b->len = len;
            tern_memlink_tx(tern_memlink_tx_ctx(l, e), &b, 1);
            tern_memlink_rx(l, !e, &b, 1, 0);
            tern_pool_release(tern_memlink_pool(l, !e), b);
        }
    }
    return rtts / (now_s() - t0);
}

int main(int argc, char **argv)
{
    unsigned long frames = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000000;
    tern_memlink_config c;
    tern_memlink_config_defaults(&c);
    char err[128];
    tern_memlink *l = tern_memlink_create(&c, err, sizeof(err));
    if (!l) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const uint32_t sizes[] = {64, 1514};
    for (int i = 0; i < 2; i++) {
        one_way(l, sizes[i], frames / 10);  /* warm up */
        printf("one-way  %4u B: %6.2f Mframes/s\n", sizes[i],
               one_way(l, sizes[i], frames) / 1e6);
        printf("pingpong %4u B: %6.2f M round trips/s\n", sizes[i],
               ping_pong(l, sizes[i], frames / 4) / 1e6);
    }
    tern_memlink_destroy(l);
    return 0;
}
