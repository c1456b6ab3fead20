/* The smallest embedder: builds an instance from the installed library
 * and checks the size query and init agree; it defines two names the core
 * uses internally, which must not clash. */
#include <stdio.h>
#include <stdlib.h>
#include <tern.h>

/* Names the core uses inside: an embedder may have its own. With the
 * core's names left global, the static link would fail (two definitions)
 * and the shared one would call these instead of the core's. */
int eth_input(void);
int conn_alloc(void);
int eth_input(void) { return 0; }
int conn_alloc(void) { return 0; }

static tern_buf *no_alloc(void *ctx) { (void)ctx; return NULL; }
static void no_free(void *ctx, tern_buf *b) { (void)ctx; (void)b; }
static void no_tx(void *ctx, tern_buf **f, unsigned n) { (void)ctx; (void)f; (void)n; }

int main(void)
{
    tern_config cfg;
    tern_config_defaults(&cfg);
    cfg.ip = TERN_IP4(198, 18, 0, 2);
    cfg.buf_ops.alloc = no_alloc;
    cfg.buf_ops.free = no_free;
    cfg.tx = no_tx;
    size_t size = tern_stack_size(&cfg);
    void *mem = aligned_alloc(TERN_STACK_ALIGN, (size + 63) & ~(size_t)63);
    int err = -1;
    tern_stack *st = tern_stack_init(mem, size, &cfg, &err);
    if (!st || err) {
        fprintf(stderr, "embed: init failed (%d)\n", err);
        return 1;
    }
    tern_stack_fini(st);
    free(mem);
    return eth_input() + conn_alloc();
}
