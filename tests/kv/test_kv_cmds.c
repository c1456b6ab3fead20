/* test_kv_cmds.c - the commands and a connection's input handling
 * (apps/common kv_cmd.c, kv_conn.c): exact replies as Redis gives them,
 * pipelined requests answered in order, input fed one byte at a time
 * answered the same, protocol errors closing, and serving pausing at
 * KV_OUT_PAUSE until the output drains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kv_conn.h"

static kv_server *srv;
static kv_ctx *cx;
static kv_conn kc;
static bytebuf out;

static int setup(void **state)
{
    (void)state;
    srv = kv_server_new("test", 0, 1000);
    cx = kv_ctx_new(srv);
    cx->now_ms = 1000;
    memset(&kc, 0, sizeof kc);
    memset(&out, 0, sizeof out);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kv_conn_free(&kc);
    bb_free(&out);
    kv_server_free(srv);
    return 0;
}

/* Feed s whole; the replies must be exactly want. */
static void io(const char *s, const char *want)
{
    out.len = out.off = 0;
    int r = kv_conn_input(&kc, cx, s, strlen(s), &out);
    assert_int_not_equal(r, KV_PAUSED);
    if (out.len != strlen(want) || memcmp(bb_data(&out), want, out.len))
        fail_msg("sent %s\n got  [%.*s]\n want [%s]", s, (int)out.len,
                 bb_data(&out), want);
}

/* The same as a multibulk request of the given words. */
static void cmd(const char *want, int argc, ...)
{
    char req[4096];
    size_t n = (size_t)sprintf(req, "*%d\r\n", argc);
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++) {
        const char *a = va_arg(ap, const char *);
        n += (size_t)sprintf(req + n, "$%zu\r\n%s\r\n", strlen(a), a);
    }
    va_end(ap);
    io(req, want);
}

static void strings(void **state)
{
    (void)state;
    cmd("+PONG\r\n", 1, "PING");
    cmd("$2\r\nhi\r\n", 2, "ping", "hi");
    cmd("$3\r\nabc\r\n", 2, "ECHO", "abc");
    cmd("$-1\r\n", 2, "GET", "k");
    cmd("+OK\r\n", 3, "SET", "k", "v1");
    cmd("$2\r\nv1\r\n", 2, "GET", "k");
    cmd("$-1\r\n", 4, "SET", "k", "v2", "NX");
    cmd("+OK\r\n", 4, "SET", "k", "v2", "XX");
    cmd("$-1\r\n", 4, "SET", "new", "v", "XX");
    cmd("+OK\r\n", 4, "SET", "new", "v", "NX");
    cmd("-ERR syntax error\r\n", 5, "SET", "k", "v", "NX", "XX");
    cmd("-ERR syntax error\r\n", 4, "SET", "k", "v", "EX");
    cmd("-ERR value is not an integer or out of range\r\n", 5, "SET", "k",
        "v", "EX", "x");
    cmd("-ERR invalid expire time in 'set' command\r\n", 5, "SET", "k", "v",
        "EX", "0");
    cmd(":2\r\n", 1, "DBSIZE");
    cmd(":3\r\n", 4, "EXISTS", "k", "new", "k");
    cmd(":2\r\n", 4, "DEL", "k", "new", "nothere");
    cmd(":0\r\n", 1, "DBSIZE");
    cmd("+OK\r\n", 5, "MSET", "a", "1", "b", "2");
    cmd("*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n", 4, "MGET", "a", "x", "b");
    cmd("-ERR wrong number of arguments for 'mset' command\r\n", 4, "MSET",
        "a", "1", "b");
    cmd("-ERR wrong number of arguments for 'get' command\r\n", 1, "GET");
}

static void unknown_command(void **state)
{
    (void)state;
    cmd("-ERR unknown command 'NOPE', with args beginning with: 'a' 'b'\r\n",
        3, "NOPE", "a", "b");
    cmd("-ERR unknown command 'X'\r\n", 1, "X");
}

static void counters(void **state)
{
    (void)state;
    cmd(":1\r\n", 2, "INCR", "n");
    cmd(":11\r\n", 3, "INCRBY", "n", "10");
    cmd(":10\r\n", 2, "DECR", "n");
    cmd(":-5\r\n", 3, "DECRBY", "n", "15");
    cmd("+OK\r\n", 3, "SET", "s", "abc");
    cmd("-ERR value is not an integer or out of range\r\n", 2, "INCR", "s");
    cmd("+OK\r\n", 3, "SET", "m", "9223372036854775807");
    cmd("-ERR increment or decrement would overflow\r\n", 2, "INCR", "m");
    cmd("+OK\r\n", 3, "SET", "z", "-9223372036854775808");
    cmd("-ERR increment or decrement would overflow\r\n", 2, "DECR", "z");
    cmd("-ERR value is not an integer or out of range\r\n", 3, "DECRBY", "z",
        "-9223372036854775808");
    cmd("+OK\r\n", 3, "SET", "lead", " 1");
    cmd("-ERR value is not an integer or out of range\r\n", 2, "INCR",
        "lead");
}

static void expiry(void **state)
{
    (void)state;
    cmd("+OK\r\n", 5, "SET", "e", "v", "EX", "10");
    cmd(":10\r\n", 2, "TTL", "e");
    cmd(":10000\r\n", 2, "PTTL", "e");
    cmd(":-2\r\n", 2, "TTL", "none");
    cmd("+OK\r\n", 3, "SET", "p", "v");
    cmd(":-1\r\n", 2, "TTL", "p");
    cmd(":1\r\n", 3, "EXPIRE", "p", "5");
    cmd(":0\r\n", 3, "EXPIRE", "none", "5");
    cmd(":1\r\n", 2, "INCR", "cnt");
    cmd(":1\r\n", 3, "PEXPIRE", "cnt", "300");
    cmd(":2\r\n", 2, "INCR", "cnt");          /* INCR keeps the TTL */
    cmd(":300\r\n", 2, "PTTL", "cnt");
    cx->now_ms += 5000;
    cmd("$-1\r\n", 2, "GET", "p");
    cmd(":5\r\n", 2, "TTL", "e");
    cmd("+OK\r\n", 4, "SET", "e", "w", "KEEPTTL");
    cmd(":5\r\n", 2, "TTL", "e");
    cmd("+OK\r\n", 3, "SET", "e", "w");       /* plain SET clears it */
    cmd(":-1\r\n", 2, "TTL", "e");
    cmd(":1\r\n", 3, "EXPIRE", "e", "-1");    /* past: deleted */
    cmd(":0\r\n", 2, "EXISTS", "e");
    cmd("+OK\r\n", 5, "SET", "q", "v", "PX", "1");
    cx->now_ms += 1;
    cmd(":0\r\n", 2, "EXISTS", "q");
}

static void server_commands(void **state)
{
    (void)state;
    cmd("+OK\r\n", 3, "SET", "a", "1");
    cmd("+OK\r\n", 1, "FLUSHALL");
    cmd(":0\r\n", 1, "DBSIZE");
    cmd("-ERR syntax error\r\n", 2, "FLUSHALL", "NOW");
    cmd("+OK\r\n", 2, "SELECT", "0");
    cmd("-ERR DB index is out of range\r\n", 2, "SELECT", "1");
    cmd("*0\r\n", 1, "COMMAND");
    cmd("*0\r\n", 2, "COMMAND", "DOCS");
    cmd("+OK\r\n", 3, "CLIENT", "SETNAME", "x");
    cmd("+OK\r\n", 3, "SET", "a", "1");
    out.len = out.off = 0;
    const char info[] = "*1\r\n$4\r\nINFO\r\n";
    kv_conn_input(&kc, cx, info, sizeof info - 1, &out);
    char *text = strndup(bb_data(&out), out.len);
    assert_non_null(strstr(text, "server_name:test\r\n"));
    assert_non_null(strstr(text, "db0:keys=1,expires=0"));
    assert_non_null(strstr(text, "total_commands_processed:"));
    assert_non_null(strstr(text, "used_memory:"));
    assert_non_null(strstr(text, "connected_clients:"));
    free(text);
}

static void config_get(void **state)
{
    (void)state;
    cmd("*2\r\n$4\r\nsave\r\n$0\r\n\r\n", 3, "CONFIG", "GET", "save");
    cmd("*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n", 3, "CONFIG", "GET",
        "appendonly");
    cmd("*0\r\n", 3, "CONFIG", "GET", "other");
}

/* Pipelined: answers in order in one output; inline works alongside. */
static void pipelined_and_split(void **state)
{
    (void)state;
    const char *reqs = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nabc\r\n"
                       "PING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
                       "*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n";
    const char *want = "+OK\r\n+PONG\r\n$3\r\nabc\r\n:1\r\n";
    io(reqs, want);
    /* The same bytes one at a time: the same replies overall. */
    cmd("+OK\r\n", 1, "FLUSHALL");
    out.len = out.off = 0;
    for (size_t i = 0; i < strlen(reqs); i++)
        assert_int_equal(kv_conn_input(&kc, cx, reqs + i, 1, &out), KV_MORE);
    assert_int_equal(out.len, strlen(want));
    assert_memory_equal(bb_data(&out), want, out.len);
    assert_int_equal(kc.in.len, 0);
}

/* A 1 MiB value in 1448-byte pieces: kept until whole, then stored. */
static void large_value_in_pieces(void **state)
{
    (void)state;
    size_t vl = 1 << 20;
    char *req = malloc(vl + 64);
    size_t n = (size_t)sprintf(req, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%zu\r\n",
                               vl);
    for (size_t i = 0; i < vl; i++)
        req[n + i] = (char)('a' + i % 26);
    n += vl;
    memcpy(req + n, "\r\n", 2);
    n += 2;
    out.len = out.off = 0;
    for (size_t i = 0; i < n; i += 1448) {
        size_t k = n - i < 1448 ? n - i : 1448;
        assert_int_equal(kv_conn_input(&kc, cx, req + i, k, &out), KV_MORE);
        assert_true(i + k == n || out.len == 0);
    }
    assert_int_equal(out.len, 5);
    out.len = out.off = 0;
    const char get[] = "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n";
    kv_conn_input(&kc, cx, get, sizeof get - 1, &out);
    assert_int_equal(out.len, vl + 12);
    assert_memory_equal(bb_data(&out) + 10, req + n - vl - 2, vl);
    free(req);
}

static void protocol_error_closes(void **state)
{
    (void)state;
    out.len = out.off = 0;
    const char bad[] = "PING\r\n*1\r\n$-5\r\n";
    assert_int_equal(kv_conn_input(&kc, cx, bad, sizeof bad - 1, &out),
                     KV_CLOSE);
    const char want[] = "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n";
    assert_int_equal(out.len, sizeof want - 1);
    assert_memory_equal(bb_data(&out), want, out.len);
    /* Later input is ignored. */
    assert_int_equal(kv_conn_input(&kc, cx, "PING\r\n", 6, &out), KV_CLOSE);
    assert_int_equal(out.len, sizeof want - 1);
}

static void quit_closes(void **state)
{
    (void)state;
    out.len = out.off = 0;
    assert_int_equal(kv_conn_input(&kc, cx, "QUIT\r\nPING\r\n", 12, &out),
                     KV_CLOSE);
    assert_int_equal(out.len, 5);
}

/* GETs of a 64 KiB value: serving stops past KV_OUT_PAUSE, the rest is
 * kept, and resumes (no new input) once the output is taken away. */
static void output_pause(void **state)
{
    (void)state;
    size_t vl = 64 << 10;
    char *v = malloc(vl);
    memset(v, 'x', vl);
    uint64_t h = kv_hash(srv->store, "v", 1);
    kv_stripe *st = kv_lock(srv->store, h);
    kv_put(srv->store, st, "v", 1, h, v, vl, 0);
    kv_unlock(st);
    free(v);
    const char get[] = "*2\r\n$3\r\nGET\r\n$1\r\nv\r\n";
    enum { N = 100 };
    char *reqs = malloc(N * (sizeof get - 1));
    for (int i = 0; i < N; i++)
        memcpy(reqs + i * (sizeof get - 1), get, sizeof get - 1);
    size_t answered = 0, rounds = 0;
    out.len = out.off = 0;
    int r = kv_conn_input(&kc, cx, reqs, N * (sizeof get - 1), &out);
    while (r == KV_PAUSED) {
        assert_true(out.len < KV_OUT_PAUSE + vl + 64);
        answered += out.len / (vl + 10);
        out.len = out.off = 0;
        rounds++;
        r = kv_conn_input(&kc, cx, NULL, 0, &out);
    }
    answered += out.len / (vl + 10);
    assert_int_equal(r, KV_MORE);
    assert_int_equal(answered, N);
    assert_true(rounds >= N * vl / (KV_OUT_PAUSE + vl) - 1);
    assert_int_equal(kc.in.len, 0);
    free(reqs);
}

static void oom_reply(void **state)
{
    (void)state;
    kv_server_free(srv);
    srv = kv_server_new("test", 1, 1000);     /* no room at all */
    cx = kv_ctx_new(srv);
    cmd("-OOM command not allowed when used memory > 'maxmemory'.\r\n", 3,
        "SET", "a", "1");
    cmd("$-1\r\n", 2, "GET", "a");
    cmd(":0\r\n", 2, "DEL", "a");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(strings), T(unknown_command), T(counters), T(expiry),
        T(server_commands), T(config_get), T(pipelined_and_split),
        T(large_value_in_pieces), T(protocol_error_closes), T(quit_closes),
        T(output_pause), T(oom_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
