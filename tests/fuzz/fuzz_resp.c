/* libFuzzer: the key-value servers' request path (apps/common resp.c,
 * kv_conn.c, kv_cmd.c, kv_store.c) as a connection sees it. The first byte
 * sets the segment size the rest arrives in; replies are taken away after
 * every segment, as a transport would send them. Checked: every parsed
 * argument lies inside the parsed bytes, kept input stays within the
 * request bound, output within the pause bound plus one reply, and the
 * store's memory within --maxmemory. */
#include <stdlib.h>
#include <string.h>

#include "kv_conn.h"

static kv_server *srv;
static kv_ctx *cx;

#define FZ_MAXMEMORY (1u << 20)

static void check_parse(const uint8_t *d, size_t n)
{
    static resp_req r;
    long k = resp_parse((const char *)d, n, &r);
    if (k > (long)n || (k == 0 && r.need <= n))
        abort();
    for (unsigned i = 0; k > 0 && i < r.argc; i++)
        if (r.argv[i] < (const char *)d ||
            r.argv[i] + r.argl[i] > (const char *)d + k)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!srv) {
        srv = kv_server_new("fuzz", FZ_MAXMEMORY, 0);
        cx = kv_ctx_new(srv);
    }
    if (size < 1)
        return 0;
    check_parse(data + 1, size - 1);
    size_t piece = data[0] ? data[0] : size;
    kv_conn kc = {0};
    bytebuf out = {0};
    cx->now_ms = 1000;
    for (size_t i = 1; i < size; i += piece) {
        size_t n = size - i < piece ? size - i : piece;
        int r = kv_conn_input(&kc, cx, (const char *)data + i, n, &out);
        while (r == KV_PAUSED) {
            out.len = out.off = 0;
            r = kv_conn_input(&kc, cx, NULL, 0, &out);
        }
        if (out.len > KV_OUT_PAUSE + RESP_MAX_BULK + 64 ||
            kc.in.len > RESP_MAX_REQUEST + piece)
            abort();
        out.len = out.off = 0;
        cx->now_ms += data[i];
        if (r == KV_CLOSE)
            break;
    }
    if (kv_used(srv->store) > FZ_MAXMEMORY)
        abort();
    kv_conn_free(&kc);
    bb_free(&out);
    kv_flush(srv->store);
    return 0;
}
