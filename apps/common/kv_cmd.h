/* kv_cmd.h - the commands of tern-kv and kern-kv: the table that names
 * them and what each does to the store (kv_store.h), with the reply it
 * writes (resp.h). One kv_ctx per server thread: its parse space and its
 * counters, which INFO sums over the threads. */
#ifndef APPS_KV_CMD_H
#define APPS_KV_CMD_H

#include <stdatomic.h>
#include <stdint.h>

#include "bytebuf.h"
#include "kv_store.h"
#include "resp.h"

#define KV_MAX_THREADS 256

struct kv_ctx;

/* What every thread shares. */
typedef struct kv_server {
    kv_store *store;
    const char *name;                   /* the program, for INFO */
    int64_t start_ms;
    struct kv_ctx *ctx[KV_MAX_THREADS]; /* for INFO's sums */
    _Atomic unsigned nctx;
} kv_server;

/* One thread's: written by it only (relaxed atomics so INFO on another
 * thread may read them). */
typedef struct kv_ctx {
    kv_server *srv;
    unsigned idx;                       /* 0, 1, ...: INFO's server_thread */
    int64_t now_ms;                     /* the loop's clock, milliseconds */
    _Atomic uint64_t commands, conns_opened, conns_closed;
    _Atomic uint64_t bytes_in, bytes_out;
    _Atomic uint64_t bytes_copied;      /* input kept: split requests,
                                           input behind unsent replies */
    unsigned sweep_cursor;
    int64_t next_sweep_ms;
    resp_req req;                       /* the request being served */
} kv_ctx;

/* Create the shared part (and its store); NULL when out of memory. */
kv_server *kv_server_new(const char *name, uint64_t maxmemory, int64_t now_ms);
void kv_server_free(kv_server *srv);
/* A thread's context, registered for INFO; NULL when out of memory. */
kv_ctx *kv_ctx_new(kv_server *srv);

/* Bump a counter of the calling thread's own context. */
static inline void kv_count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Sum a counter over every thread (offsetof one of kv_ctx's). */
uint64_t kv_total(kv_server *srv, size_t offset);

enum { KV_CONT = 0, KV_QUIT = 1 };

/* Execute the parsed request cx->req, appending its reply to out.
 * Returns KV_QUIT after QUIT (close once the reply is out). */
int kv_exec(kv_ctx *cx, bytebuf *out);

/* Once per loop iteration: every 100 ms, free the expired keys of a few
 * stripes (kv_sweep). */
void kv_tick(kv_ctx *cx, int64_t now_ms);

#endif
