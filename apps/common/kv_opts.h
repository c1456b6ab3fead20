/* kv_opts.h - the flags of tern-kv and kern-kv (the same for both). */
#ifndef APPS_KV_OPTS_H
#define APPS_KV_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "opts.h"

typedef struct kv_opts {
    bool server;            /* accepted for symmetry: serving is the mode */
    uint64_t port;          /* --port, default 6379 */
    uint64_t maxmemory;     /* --maxmemory bytes, 0 = no bound */
    uint64_t pool_size;     /* --pool-size: tern-kv's buffers per core */
} kv_opts;

void kv_opts_parse(common_opts *co, kv_opts *ko, int argc, char **argv);

#endif
