/* kv_cmd.c - the command table and what each command does (see kv_cmd.h).
 * Replies and error texts follow Redis's, so clients and tools that check
 * them behave as they would against redis-server. */
#include "kv_cmd.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KV_VERSION "0.1"

static const char oom_msg[] =
    "OOM command not allowed when used memory > 'maxmemory'.";
static const char not_int[] = "ERR value is not an integer or out of range";
static const char syntax[] = "ERR syntax error";

kv_server *kv_server_new(const char *name, uint64_t maxmemory, int64_t now_ms)
{
    kv_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return NULL;
    srv->store = kv_store_new(maxmemory);
    if (!srv->store) {
        free(srv);
        return NULL;
    }
    srv->name = name;
    srv->start_ms = now_ms;
    return srv;
}

void kv_server_free(kv_server *srv)
{
    if (!srv)
        return;
    for (unsigned i = 0; i < srv->nctx; i++)
        free(srv->ctx[i]);
    kv_store_free(srv->store);
    free(srv);
}

kv_ctx *kv_ctx_new(kv_server *srv)
{
    unsigned i = atomic_fetch_add(&srv->nctx, 1);
    if (i >= KV_MAX_THREADS)
        return NULL;
    kv_ctx *cx = calloc(1, sizeof *cx);
    if (!cx)
        return NULL;
    cx->srv = srv;
    cx->idx = i;
    srv->ctx[i] = cx;
    return cx;
}

uint64_t kv_total(kv_server *srv, size_t offset)
{
    uint64_t sum = 0;
    unsigned n = atomic_load(&srv->nctx);
    for (unsigned i = 0; i < n && i < KV_MAX_THREADS; i++) {
        kv_ctx *cx = srv->ctx[i];
        if (cx)
            sum += atomic_load_explicit(
                (_Atomic uint64_t *)((char *)cx + offset),
                memory_order_relaxed);
    }
    return sum;
}

void kv_tick(kv_ctx *cx, int64_t now_ms)
{
    cx->now_ms = now_ms;
    if (now_ms < cx->next_sweep_ms)
        return;
    cx->next_sweep_ms = now_ms + 100;
    kv_sweep(cx->srv->store, &cx->sweep_cursor, 4, now_ms);
}

/* ---- helpers ---- */

/* A strict decimal int64: optional '-', digits, no spaces, no overflow. */
static bool to_i64(const char *p, size_t n, int64_t *v)
{
    if (!n || n > 20)
        return false;
    bool neg = p[0] == '-';
    size_t i = neg;
    if (i == n)
        return false;
    uint64_t x = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        unsigned d = (unsigned)(p[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    if (neg ? x > (uint64_t)INT64_MAX + 1 : x > (uint64_t)INT64_MAX)
        return false;
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    return true;
}

#define ARG(i) cx->req.argv[i], cx->req.argl[i]

static uint64_t hash_arg(kv_ctx *cx, unsigned i)
{
    return kv_hash(cx->srv->store, ARG(i));
}

/* Expiry `amount` (seconds, or ms with ms) from now in ms; false when it
 * does not fit. */
static bool expire_at(kv_ctx *cx, int64_t amount, bool ms, int64_t *at)
{
    const int64_t max = INT64_MAX / 2;
    if (!ms && (amount > max / 1000 || amount < -max / 1000))
        return false;
    int64_t d = ms ? amount : amount * 1000;
    if (d > max - cx->now_ms || d < -max)
        return false;
    *at = cx->now_ms + d;
    return true;
}

/* ---- commands: each gets the request in cx->req ---- */

static int c_ping(kv_ctx *cx, bytebuf *out)
{
    if (cx->req.argc == 2)
        resp_bulk(out, ARG(1));
    else
        bb_append(out, "+PONG\r\n", 7, SIZE_MAX);
    return KV_CONT;
}

static int c_echo(kv_ctx *cx, bytebuf *out)
{
    resp_bulk(out, ARG(1));
    return KV_CONT;
}

static int c_quit(kv_ctx *cx, bytebuf *out)
{
    (void)cx;
    resp_ok(out);
    return KV_QUIT;
}

static int c_get(kv_ctx *cx, bytebuf *out)
{
    kv_store *s = cx->srv->store;
    uint64_t h = hash_arg(cx, 1);
    kv_stripe *st = kv_lock(s, h);
    kv_entry *e = kv_find(s, st, ARG(1), h, cx->now_ms);
    if (e)
        resp_bulk(out, kv_val(e), e->vlen);
    else
        resp_nil(out);
    kv_unlock(st);
    return KV_CONT;
}

/* SET key value [EX s | PX ms | KEEPTTL] [NX | XX] */
static int c_set(kv_ctx *cx, bytebuf *out)
{
    bool nx = false, xx = false, keep = false, ttl = false;
    int64_t at = 0;
    for (unsigned i = 3; i < cx->req.argc; i++) {
        const char *a = cx->req.argv[i];
        size_t l = cx->req.argl[i];
        if (resp_is(a, l, "NX") && !xx) {
            nx = true;
        } else if (resp_is(a, l, "XX") && !nx) {
            xx = true;
        } else if (resp_is(a, l, "KEEPTTL") && !ttl) {
            keep = true;
        } else if ((resp_is(a, l, "EX") || resp_is(a, l, "PX")) && !keep &&
                   !ttl && i + 1 < cx->req.argc) {
            int64_t v;
            if (!to_i64(ARG(i + 1), &v)) {
                resp_error(out, not_int);
                return KV_CONT;
            }
            if (v <= 0 || !expire_at(cx, v, (a[0] | 0x20) == 'p', &at)) {
                resp_error(out, "ERR invalid expire time in 'set' command");
                return KV_CONT;
            }
            ttl = true;
            i++;
        } else {
            resp_error(out, syntax);
            return KV_CONT;
        }
    }
    kv_store *s = cx->srv->store;
    uint64_t h = hash_arg(cx, 1);
    kv_stripe *st = kv_lock(s, h);
    kv_entry *old = nx || xx || keep ? kv_find(s, st, ARG(1), h, cx->now_ms)
                                     : NULL;
    if ((nx && old) || (xx && !old)) {
        kv_unlock(st);
        resp_nil(out);
        return KV_CONT;
    }
    if (keep && old)
        at = old->expire_ms;
    kv_entry *e = kv_put(s, st, ARG(1), h, ARG(2), at);
    kv_unlock(st);
    if (e)
        resp_ok(out);
    else
        resp_error(out, oom_msg);
    return KV_CONT;
}

/* DEL and EXISTS: how many of the keys are there (a key named twice
 * counts twice), removing them for DEL. */
static int count_keys(kv_ctx *cx, bytebuf *out, bool remove)
{
    kv_store *s = cx->srv->store;
    int64_t n = 0;
    for (unsigned i = 1; i < cx->req.argc; i++) {
        uint64_t h = hash_arg(cx, i);
        kv_stripe *st = kv_lock(s, h);
        n += remove ? kv_del(s, st, ARG(i), h, cx->now_ms)
                    : kv_find(s, st, ARG(i), h, cx->now_ms) != NULL;
        kv_unlock(st);
    }
    resp_int(out, n);
    return KV_CONT;
}

static int c_del(kv_ctx *cx, bytebuf *out) { return count_keys(cx, out, 1); }
static int c_exists(kv_ctx *cx, bytebuf *out) { return count_keys(cx, out, 0); }

/* INCR, DECR, INCRBY, DECRBY: add by to the key's integer (0 if absent),
 * keeping its time to live. */
static int add_to(kv_ctx *cx, bytebuf *out, int64_t by)
{
    kv_store *s = cx->srv->store;
    uint64_t h = hash_arg(cx, 1);
    kv_stripe *st = kv_lock(s, h);
    kv_entry *e = kv_find(s, st, ARG(1), h, cx->now_ms);
    int64_t v = 0, at = 0;
    if (e) {
        at = e->expire_ms;
        if (!to_i64(kv_val(e), e->vlen, &v)) {
            kv_unlock(st);
            resp_error(out, not_int);
            return KV_CONT;
        }
    }
    if ((by > 0 && v > INT64_MAX - by) || (by < 0 && v < INT64_MIN - by)) {
        kv_unlock(st);
        resp_error(out, "ERR increment or decrement would overflow");
        return KV_CONT;
    }
    v += by;
    char num[24];
    size_t n = resp_fmt_i64(num, v);
    e = kv_put(s, st, ARG(1), h, num, n, at);
    kv_unlock(st);
    if (e)
        resp_int(out, v);
    else
        resp_error(out, oom_msg);
    return KV_CONT;
}

static int c_incr(kv_ctx *cx, bytebuf *out) { return add_to(cx, out, 1); }
static int c_decr(kv_ctx *cx, bytebuf *out) { return add_to(cx, out, -1); }

static int c_incrby(kv_ctx *cx, bytebuf *out, bool neg)
{
    int64_t by;
    if (!to_i64(ARG(2), &by) || (neg && by == INT64_MIN)) {
        resp_error(out, not_int);
        return KV_CONT;
    }
    return add_to(cx, out, neg ? -by : by);
}

static int c_incrby_(kv_ctx *cx, bytebuf *out) { return c_incrby(cx, out, 0); }
static int c_decrby(kv_ctx *cx, bytebuf *out) { return c_incrby(cx, out, 1); }

/* The stripes of the keys at arguments first, first + step, ... */
static void lock_keys(kv_ctx *cx, unsigned first, unsigned step,
                      kv_lockset *ls)
{
    memset(ls, 0, sizeof *ls);
    for (unsigned i = first; i < cx->req.argc; i += step)
        kv_lockset_add(ls, hash_arg(cx, i));
    kv_lock_set(cx->srv->store, ls);
}

/* MGET reads every key under all their stripes' locks: one moment. */
static int c_mget(kv_ctx *cx, bytebuf *out)
{
    kv_store *s = cx->srv->store;
    kv_lockset ls;
    lock_keys(cx, 1, 1, &ls);
    resp_array(out, cx->req.argc - 1);
    for (unsigned i = 1; i < cx->req.argc; i++) {
        uint64_t h = hash_arg(cx, i);
        kv_stripe *st = &s->stripe[h & (KV_STRIPES - 1)];
        kv_entry *e = kv_find(s, st, ARG(i), h, cx->now_ms);
        if (e)
            resp_bulk(out, kv_val(e), e->vlen);
        else
            resp_nil(out);
    }
    kv_unlock_set(s, &ls);
    return KV_CONT;
}

/* MSET sets every pair under all their stripes' locks, all or none: a
 * reader on another core sees the keys before it or after it, never a
 * mix, and -OOM leaves every key as it was. */
static int c_mset(kv_ctx *cx, bytebuf *out)
{
    if (cx->req.argc % 2 == 0) {
        resp_error(out, "ERR wrong number of arguments for 'mset' command");
        return KV_CONT;
    }
    kv_store *s = cx->srv->store;
    size_t n = (cx->req.argc - 1) / 2;
    kv_pair *p = malloc(n * sizeof *p);
    if (!p) {
        resp_error(out, oom_msg);
        return KV_CONT;
    }
    for (size_t j = 0; j < n; j++) {
        unsigned i = 1 + 2 * (unsigned)j;
        p[j] = (kv_pair){.k = cx->req.argv[i], .kl = cx->req.argl[i],
                         .v = cx->req.argv[i + 1], .vl = cx->req.argl[i + 1],
                         .h = hash_arg(cx, i)};
    }
    kv_lockset ls;
    lock_keys(cx, 1, 2, &ls);
    bool ok = kv_put_all(s, p, n, 0);
    kv_unlock_set(s, &ls);
    free(p);
    if (ok)
        resp_ok(out);
    else
        resp_error(out, oom_msg);
    return KV_CONT;
}

/* EXPIRE / PEXPIRE key amount: a time in the past deletes the key. */
static int set_expire(kv_ctx *cx, bytebuf *out, bool ms)
{
    int64_t v, at;
    if (!to_i64(ARG(2), &v)) {
        resp_error(out, not_int);
        return KV_CONT;
    }
    if (!expire_at(cx, v, ms, &at)) {
        resp_error(out, ms ? "ERR invalid expire time in 'pexpire' command"
                           : "ERR invalid expire time in 'expire' command");
        return KV_CONT;
    }
    kv_store *s = cx->srv->store;
    uint64_t h = hash_arg(cx, 1);
    kv_stripe *st = kv_lock(s, h);
    kv_entry *e = kv_find(s, st, ARG(1), h, cx->now_ms);
    if (e && at <= cx->now_ms)
        kv_del(s, st, ARG(1), h, cx->now_ms);
    else if (e)
        kv_set_expire(s, e, at);
    kv_unlock(st);
    resp_int(out, e != NULL);
    return KV_CONT;
}

static int c_expire(kv_ctx *cx, bytebuf *out) { return set_expire(cx, out, 0); }
static int c_pexpire(kv_ctx *cx, bytebuf *out) { return set_expire(cx, out, 1); }

/* TTL / PTTL: -2 no key, -1 no expiry, else the time left (TTL rounds to
 * the nearest second, as Redis does). */
static int get_ttl(kv_ctx *cx, bytebuf *out, bool ms)
{
    kv_store *s = cx->srv->store;
    uint64_t h = hash_arg(cx, 1);
    kv_stripe *st = kv_lock(s, h);
    kv_entry *e = kv_find(s, st, ARG(1), h, cx->now_ms);
    int64_t r = !e ? -2 : !e->expire_ms ? -1 : e->expire_ms - cx->now_ms;
    kv_unlock(st);
    if (r >= 0 && !ms)
        r = (r + 500) / 1000;
    resp_int(out, r);
    return KV_CONT;
}

static int c_ttl(kv_ctx *cx, bytebuf *out) { return get_ttl(cx, out, 0); }
static int c_pttl(kv_ctx *cx, bytebuf *out) { return get_ttl(cx, out, 1); }

static int c_dbsize(kv_ctx *cx, bytebuf *out)
{
    resp_int(out, (int64_t)kv_keys(cx->srv->store));
    return KV_CONT;
}

static int c_flushall(kv_ctx *cx, bytebuf *out)
{
    if (cx->req.argc == 2 && !resp_is(ARG(1), "ASYNC") &&
        !resp_is(ARG(1), "SYNC")) {
        resp_error(out, syntax);
        return KV_CONT;
    }
    kv_flush(cx->srv->store);
    resp_ok(out);
    return KV_CONT;
}

static int c_select(kv_ctx *cx, bytebuf *out)
{
    int64_t db;
    if (!to_i64(ARG(1), &db))
        resp_error(out, not_int);
    else if (db != 0)
        resp_error(out, "ERR DB index is out of range");
    else
        resp_ok(out);
    return KV_CONT;
}

#define TOTAL(f) kv_total(cx->srv, offsetof(kv_ctx, f))

static int c_info(kv_ctx *cx, bytebuf *out)
{
    kv_server *srv = cx->srv;
    kv_store *s = srv->store;
    uint64_t opened = TOTAL(conns_opened), closed = TOTAL(conns_closed);
    char text[1024];
    int n = snprintf(text, sizeof text,
        "# Server\r\nserver_name:%s\r\nserver_version:" KV_VERSION "\r\n"
        "uptime_in_seconds:%lld\r\nserver_thread:%u\r\n"
        "# Clients\r\nconnected_clients:%llu\r\n"
        "# Memory\r\nused_memory:%llu\r\nmaxmemory:%llu\r\n"
        "maxmemory_policy:noeviction\r\n"
        "# Stats\r\ntotal_connections_received:%llu\r\n"
        "total_commands_processed:%llu\r\nexpired_keys:%llu\r\n"
        "rejected_writes_oom:%llu\r\n"
        "# Keyspace\r\ndb0:keys=%llu,expires=%llu,avg_ttl=0\r\n",
        srv->name, (long long)((cx->now_ms - srv->start_ms) / 1000),
        cx->idx,
        (unsigned long long)(opened - closed),
        (unsigned long long)kv_used(s), (unsigned long long)s->maxmemory,
        (unsigned long long)opened, (unsigned long long)TOTAL(commands),
        (unsigned long long)atomic_load(&s->expired),
        (unsigned long long)atomic_load(&s->oom),
        (unsigned long long)kv_keys(s),
        (unsigned long long)atomic_load(&s->expires));
    resp_bulk(out, text, (size_t)n);
    return KV_CONT;
}

static int ncommands(void);

/* COMMAND COUNT answers; COMMAND, COMMAND DOCS and the rest get an empty
 * list (redis-cli then uses its built-in help). */
static int c_command(kv_ctx *cx, bytebuf *out)
{
    if (cx->req.argc == 2 && resp_is(ARG(1), "COUNT"))
        resp_int(out, ncommands());
    else
        resp_array(out, 0);
    return KV_CONT;
}

/* CONFIG GET for what redis-benchmark asks (save, appendonly) and
 * maxmemory; the rest of CONFIG is not there. */
static int c_config(kv_ctx *cx, bytebuf *out)
{
    if (!resp_is(ARG(1), "GET") || cx->req.argc != 3) {
        resp_error(out, "ERR only CONFIG GET parameter is supported");
        return KV_CONT;
    }
    char mm[24];
    snprintf(mm, sizeof mm, "%llu",
             (unsigned long long)cx->srv->store->maxmemory);
    const char *names[] = {"save", "appendonly", "maxmemory"};
    const char *vals[] = {"", "no", mm};
    bool all = cx->req.argl[2] == 1 && cx->req.argv[2][0] == '*';
    unsigned hit = 0;
    for (unsigned i = 0; i < 3; i++)
        hit += all || resp_is(ARG(2), names[i]);
    resp_array(out, hit * 2);
    for (unsigned i = 0; i < 3; i++)
        if (all || resp_is(ARG(2), names[i])) {
            resp_bulk(out, names[i], strlen(names[i]));
            resp_bulk(out, vals[i], strlen(vals[i]));
        }
    return KV_CONT;
}

/* CLIENT SETNAME / SETINFO (client libraries send them) say OK. */
static int c_client(kv_ctx *cx, bytebuf *out)
{
    if (resp_is(ARG(1), "SETNAME") || resp_is(ARG(1), "SETINFO"))
        resp_ok(out);
    else
        resp_error(out, "ERR only CLIENT SETNAME and SETINFO are supported");
    return KV_CONT;
}

typedef struct kv_command {
    const char *name;
    int arity;          /* as Redis counts: > 0 exactly, < 0 at least -n */
    int (*fn)(kv_ctx *cx, bytebuf *out);
} kv_command;

/* The most used first: the lookup walks the table. */
static const kv_command commands[] = {
    {"get", 2, c_get},         {"set", -3, c_set},
    {"ping", -1, c_ping},      {"incr", 2, c_incr},
    {"mget", -2, c_mget},      {"mset", -3, c_mset},
    {"del", -2, c_del},        {"exists", -2, c_exists},
    {"decr", 2, c_decr},       {"incrby", 3, c_incrby_},
    {"decrby", 3, c_decrby},   {"expire", 3, c_expire},
    {"pexpire", 3, c_pexpire}, {"ttl", 2, c_ttl},
    {"pttl", 2, c_pttl},       {"echo", 2, c_echo},
    {"dbsize", 1, c_dbsize},   {"flushall", -1, c_flushall},
    {"flushdb", -1, c_flushall}, {"info", -1, c_info},
    {"select", 2, c_select},   {"quit", 1, c_quit},
    {"command", -1, c_command}, {"config", -2, c_config},
    {"client", -2, c_client},
};

static int ncommands(void) { return sizeof commands / sizeof commands[0]; }

static const kv_command *lookup(const char *name, size_t n)
{
    for (int i = 0; i < ncommands(); i++)
        if (resp_is(name, n, commands[i].name))
            return &commands[i];
    return NULL;
}

/* "ERR unknown command 'x', with args beginning with: 'a' 'b' " with the
 * echoed parts shortened and stripped of bytes that would break the
 * reply line. */
static void unknown(kv_ctx *cx, bytebuf *out)
{
    char msg[256];
    size_t m = 0;
    m += (size_t)snprintf(msg, sizeof msg, "ERR unknown command '");
    for (unsigned i = 0; i < cx->req.argc && i < 4; i++) {
        if (i == 1)
            m += (size_t)snprintf(msg + m, sizeof msg - m,
                                  "', with args beginning with: '");
        else if (i > 1)
            m += (size_t)snprintf(msg + m, sizeof msg - m, "' '");
        for (uint32_t k = 0; k < cx->req.argl[i] && k < 32 &&
                             m < sizeof msg - 8; k++) {
            unsigned char c = (unsigned char)cx->req.argv[i][k];
            msg[m++] = c < 0x20 || c > 0x7e ? '?' : (char)c;
        }
    }
    m += (size_t)snprintf(msg + m, sizeof msg - m, "'");
    resp_error(out, msg);
}

int kv_exec(kv_ctx *cx, bytebuf *out)
{
    const resp_req *r = &cx->req;
    if (!r->argc)
        return KV_CONT;
    kv_count(&cx->commands, 1);
    const kv_command *c = lookup(r->argv[0], r->argl[0]);
    if (!c) {
        unknown(cx, out);
        return KV_CONT;
    }
    if (c->arity > 0 ? (int)r->argc != c->arity : (int)r->argc < -c->arity) {
        char msg[80];
        snprintf(msg, sizeof msg,
                 "ERR wrong number of arguments for '%s' command", c->name);
        resp_error(out, msg);
        return KV_CONT;
    }
    return c->fn(cx, out);
}
