/* test_resp.c - the RESP2 request parser (apps/common/resp.c): requests
 * parsed in place, every prefix of a request asks for more, every bound
 * and malformation is an error, and the reply writers' exact bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resp.h"

static resp_req req;

static long parse(const char *s) { return resp_parse(s, strlen(s), &req); }

static void assert_arg(unsigned i, const char *s)
{
    assert_int_equal(req.argl[i], strlen(s));
    assert_memory_equal(req.argv[i], s, strlen(s));
}

static void multibulk_in_place(void **state)
{
    (void)state;
    const char *s = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
    assert_int_equal(parse(s), strlen(s));
    assert_int_equal(req.argc, 3);
    assert_arg(0, "SET");
    assert_arg(1, "k");
    assert_arg(2, "hello");
    assert_ptr_equal(req.argv[2], s + strlen(s) - 7);   /* no copy */
}

/* Two pipelined requests: the first parse stops at the first's end. */
static void pipelined(void **state)
{
    (void)state;
    const char *s = "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    long a = parse(s);
    assert_int_equal(a, 14);
    assert_int_equal(resp_parse(s + a, strlen(s) - a, &req), strlen(s) - a);
    assert_arg(0, "GET");
}

/* Every strict prefix needs more bytes, and says at least one more. */
static void every_prefix_incomplete(void **state)
{
    (void)state;
    const char *s = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\n0123456789\r\n";
    for (size_t n = 0; n < strlen(s); n++) {
        assert_int_equal(resp_parse(s, n, &req), 0);
        assert_true(req.need > n);
        assert_true(req.need <= strlen(s));
    }
    assert_int_equal(resp_parse(s, strlen(s), &req), strlen(s));
}

/* A large value's header tells the whole size at once. */
static void need_counts_the_value(void **state)
{
    (void)state;
    assert_int_equal(parse("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nabc"), 0);
    assert_int_equal(req.need, 29 + 100000 + 2);
}

static void inline_commands(void **state)
{
    (void)state;
    assert_int_equal(parse("PING\r\n"), 6);
    assert_int_equal(req.argc, 1);
    assert_arg(0, "PING");
    assert_int_equal(parse("  set  a\tb \n"), 12);
    assert_int_equal(req.argc, 3);
    assert_arg(1, "a");
    assert_arg(2, "b");
    assert_int_equal(parse("\r\n"), 2);
    assert_int_equal(req.argc, 0);
    assert_int_equal(parse("GET k"), 0);
}

static void empty_arrays_are_skipped(void **state)
{
    (void)state;
    assert_int_equal(parse("*0\r\n"), 4);
    assert_int_equal(req.argc, 0);
    assert_int_equal(parse("*-1\r\n"), 5);
    assert_int_equal(req.argc, 0);
}

static void expect_error(const char *s)
{
    assert_int_equal(resp_parse(s, strlen(s), &req), -1);
    assert_non_null(req.err);
}

static void malformed_is_an_error(void **state)
{
    (void)state;
    expect_error("*x\r\n");
    expect_error("*1\n");
    expect_error("*1\r\nX");
    expect_error("*1\r\n:1\r\n");
    expect_error("*1\r\n$-1\r\n");                 /* negative bulk */
    expect_error("*1\r\n$3\r\nabcd\r\n");          /* no CRLF after it */
    expect_error("*2\r\n*1\r\n$1\r\na\r\n");       /* nested array */
    expect_error("*99999999999999999999\r\n");     /* huge count */
    expect_error("*1\r\n$99999999999\r\n");        /* huge bulk */
    expect_error("*1\r\n$1\r\n\r\n\r\n");
    expect_error("*1\r\n$\r\n");
    char over[48];
    snprintf(over, sizeof over, "*%u\r\n", RESP_MAX_ARGS + 1);
    expect_error(over);
    snprintf(over, sizeof over, "*1\r\n$%u\r\n", RESP_MAX_BULK + 1);
    expect_error(over);
}

/* Many large arguments: refused once the request passes its bound, when
 * the header that passes it arrives (not after its bytes). */
static void request_size_is_bounded(void **state)
{
    (void)state;
    size_t big = RESP_MAX_BULK;
    char *s = malloc(2 * big + 64);
    size_t n = (size_t)sprintf(s, "*3\r\n$%zu\r\n", big);
    memset(s + n, 'v', big);
    n += big;
    n += (size_t)sprintf(s + n, "\r\n$%zu\r\n", big);
    /* The second header: the whole would pass RESP_MAX_REQUEST. */
    assert_int_equal(resp_parse(s, n, &req), -1);
    /* One byte less for it fits. */
    n = (size_t)sprintf(s, "*2\r\n$%zu\r\n", big);
    memset(s + n, 'v', big);
    n += big;
    n += (size_t)sprintf(s + n, "\r\n$%zu\r\n", big - 64);
    assert_int_equal(resp_parse(s, n, &req), 0);
    free(s);
}

static void inline_line_is_bounded(void **state)
{
    (void)state;
    size_t n = RESP_MAX_INLINE;
    char *s = malloc(n);
    memset(s, 'a', n);
    assert_int_equal(resp_parse(s, n - 1, &req), 0);
    assert_int_equal(resp_parse(s, n, &req), -1);
    free(s);
}

static void reply_bytes(void **state)
{
    (void)state;
    bytebuf b = {0};
    resp_ok(&b);
    resp_nil(&b);
    resp_int(&b, 7);
    resp_int(&b, -12345);
    resp_bulk(&b, "ab", 2);
    resp_bulk(&b, "", 0);
    resp_array(&b, 2);
    resp_error(&b, "ERR x");
    resp_simple(&b, "PONG");
    const char *want = "+OK\r\n$-1\r\n:7\r\n:-12345\r\n$2\r\nab\r\n$0\r\n\r\n"
                       "*2\r\n-ERR x\r\n+PONG\r\n";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(bb_data(&b), want, b.len);
    bb_free(&b);
}

static void words(void **state)
{
    (void)state;
    assert_true(resp_is("gEt", 3, "GET"));
    assert_false(resp_is("GETX", 4, "GET"));
    assert_false(resp_is("GE", 2, "GET"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(multibulk_in_place),
        cmocka_unit_test(pipelined),
        cmocka_unit_test(every_prefix_incomplete),
        cmocka_unit_test(need_counts_the_value),
        cmocka_unit_test(inline_commands),
        cmocka_unit_test(empty_arrays_are_skipped),
        cmocka_unit_test(malformed_is_an_error),
        cmocka_unit_test(request_size_is_bounded),
        cmocka_unit_test(inline_line_is_bounded),
        cmocka_unit_test(reply_bytes),
        cmocka_unit_test(words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
