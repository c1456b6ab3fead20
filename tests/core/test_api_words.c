/* test_api_words.c - the calls that turn codes into words
 * (tern_strerror, tern_close_reason_name) and the instance size an
 * embedder hands to aligned_alloc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tern.h"

static void strerror_names_every_code(void **state)
{
    (void)state;
    const char *seen[9] = {0};
    for (int e = TERN_OK; e <= TERN_EAFNOSUPPORT; e++) {
        const char *s = tern_strerror(-e);
        assert_non_null(s);
        assert_string_equal(s, tern_strerror(e));     /* sign does not matter */
        assert_string_not_equal(s, "unknown error");
        for (int k = 0; k < e; k++)                   /* each its own words */
            assert_string_not_equal(s, seen[k]);
        seen[e] = s;
    }
    assert_string_equal(tern_strerror(-TERN_EAGAIN), "no send space");
    assert_string_equal(tern_strerror(99), "unknown error");
    assert_string_equal(tern_strerror(-99), "unknown error");
    assert_string_equal(tern_strerror(INT32_MIN), "unknown error");
}

static void close_reasons_have_names(void **state)
{
    (void)state;
    for (int r = TERN_CLOSE_NORMAL; r <= TERN_CLOSE_NO_ROUTE; r++)
        assert_string_not_equal(tern_close_reason_name(r), "unknown reason");
    assert_non_null(strstr(tern_close_reason_name(TERN_CLOSE_NO_ROUTE), "ARP"));
    assert_string_equal(tern_close_reason_name(-1), "unknown reason");
    assert_string_equal(tern_close_reason_name(6), "unknown reason");
}

static tern_buf *no_alloc(void *ctx) { (void)ctx; return NULL; }
static void no_free(void *ctx, tern_buf *b) { (void)ctx; (void)b; }
static void no_tx(void *ctx, tern_buf **f, unsigned n)
{
    (void)ctx; (void)f; (void)n;
}

/* aligned_alloc wants a size that is a multiple of the alignment: every
 * size the stack asks for is one, and an instance fits in exactly it. */
static void stack_size_is_whole_lines(void **state)
{
    (void)state;
    static const uint32_t conns[] = {1, 2, 3, 7, 100, 1000, 1024, 4097};
    for (size_t i = 0; i < sizeof conns / sizeof conns[0]; i++) {
        tern_config cfg;
        tern_config_defaults(&cfg);
        cfg.ip = TERN_IP4(198, 18, 0, 2);
        cfg.prefix_len = 24;
        cfg.buf_ops.alloc = no_alloc;
        cfg.buf_ops.free = no_free;
        cfg.tx = no_tx;
        cfg.max_conns = conns[i];
        size_t size = tern_stack_size(&cfg);
        assert_int_equal(size % TERN_STACK_ALIGN, 0);
        void *mem = aligned_alloc(TERN_STACK_ALIGN, size);
        assert_non_null(mem);
        int err = -1;
        tern_stack *st = tern_stack_init(mem, size, &cfg, &err);
        assert_non_null(st);
        assert_int_equal(err, TERN_OK);
        tern_stack_fini(st);
        free(mem);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strerror_names_every_code),
        cmocka_unit_test(close_reasons_have_names),
        cmocka_unit_test(stack_size_is_whole_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
