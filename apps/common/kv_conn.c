/* kv_conn.c - input assembly and pipelined serving of one connection (see
 * kv_conn.h). */
#include "kv_conn.h"

#include <stdint.h>
#include <stdio.h>

/* Serve requests from p[0..n) into out until they run out, out is full
 * or the connection must close. Returns the bytes used; *st says why it
 * stopped. */
static size_t serve(kv_conn *kc, kv_ctx *cx, const char *p, size_t n,
                    bytebuf *out, int *st)
{
    size_t i = 0;
    *st = KV_MORE;
    kc->need = 0;
    while (i < n) {
        if (out->len >= KV_OUT_PAUSE) {
            *st = KV_PAUSED;
            break;
        }
        long r = resp_parse(p + i, n - i, &cx->req);
        if (r == 0) {
            kc->need = cx->req.need;
            break;
        }
        if (r < 0) {
            char msg[96];
            snprintf(msg, sizeof msg, "ERR Protocol error: %s",
                     cx->req.err);
            resp_error(out, msg);
            kc->closing = true;
            *st = KV_CLOSE;
            return n;
        }
        i += (size_t)r;
        if (kv_exec(cx, out) == KV_QUIT) {
            kc->closing = true;
            *st = KV_CLOSE;
            return n;
        }
    }
    return i;
}

bool kv_conn_keep(kv_conn *kc, kv_ctx *cx, const char *data, size_t n)
{
    if (!bb_append(&kc->in, data, n, SIZE_MAX))
        return false;
    kv_count(&cx->bytes_copied, n);
    return true;
}

int kv_conn_input(kv_conn *kc, kv_ctx *cx, const char *data, size_t n,
                  bytebuf *out)
{
    if (kc->closing)
        return KV_CLOSE;
    int st;
    if (!kc->in.len) {
        /* The usual case: requests served where they arrived. */
        size_t used = serve(kc, cx, data, n, out, &st);
        if (used < n) {
            if (!bb_append(&kc->in, data + used, n - used, SIZE_MAX))
                goto no_memory;
            kv_count(&cx->bytes_copied, n - used);
        }
        return st;
    }
    if (n && !kv_conn_keep(kc, cx, data, n))
        goto no_memory;
    /* A large value arriving: wait until all of it is here. */
    if (kc->need && kc->in.len < kc->need && out->len < KV_OUT_PAUSE)
        return KV_MORE;
    size_t used = serve(kc, cx, bb_data(&kc->in), kc->in.len, out, &st);
    bb_consume(&kc->in, used);
    if (st == KV_CLOSE)
        bb_free(&kc->in);
    return st;
no_memory:
    resp_error(out, "ERR out of memory for this request");
    kc->closing = true;
    bb_free(&kc->in);
    return KV_CLOSE;
}

void kv_conn_free(kv_conn *kc)
{
    bb_free(&kc->in);
}
