/* bi.h - the bad-input suite's shared pieces: an instance that echoes on
 * TCP port 80 and has UDP port 53 bound, a health check, and a case table
 * that can print itself as Markdown (docs/robustness.md). */
#ifndef TERN_BI_H
#define TERN_BI_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "harness.h"

#define C(t) tern_get_counters((t)->st)

typedef struct bi_case {
    const char *name;
    const char *input;       /* what is sent */
    const char *required;    /* the behaviour asserted */
    void (*run)(void **state);
} bi_case;

/* An instance with an echo listener on 80 and UDP 53 bound, ARP for the
 * peer resolved, capture cleared. */
th *bi_new(void);
/* The same with a config tweak. */
th *bi_new_with(void (*tweak)(tern_config *cfg));
/* A peer with an established connection to port 80 from `port`. */
void bi_connect(th *t, peer *p, uint16_t port);
/* A fresh connection completes and echoes data; every captured frame has
 * correct checksums. Then the instance is freed with no buffer leaked. */
void bi_healthy_and_free(th *t);
/* Feed a raw frame of n bytes. */
void bi_feed(th *t, const uint8_t *f, size_t n);
/* The suite's recv callback (echo, counted); overriding callbacks call it. */
size_t bi_echo_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                    const uint8_t *d, size_t len);
/* Bytes the echo server received on all connections. */
size_t bi_received(void);
/* Run the table: as cmocka tests, or with --markdown print it. */
int bi_main(int argc, char **argv, const char *group, const bi_case *cases,
            size_t n);

#endif
