/* kv_conn.h - one client connection of tern-kv or kern-kv: requests are
 * parsed in place in the received bytes; only a request split across
 * segments (or input waiting behind a full output) is copied, into the
 * connection's own buffer, which RESP_MAX_REQUEST bounds. The replies of
 * all the requests served from one input go out together. Serving pauses
 * once KV_OUT_PAUSE reply bytes wait to be sent, so a client that never
 * reads its replies holds a bounded amount of memory; the transport then
 * stops reading (kernel) or keeps its receive window shut (tern). */
#ifndef APPS_KV_CONN_H
#define APPS_KV_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "bytebuf.h"
#include "kv_cmd.h"

#define KV_OUT_PAUSE (256u << 10)

typedef struct kv_conn {
    bytebuf in;         /* input not served yet, oldest first */
    size_t need;        /* in must hold this much before parsing again */
    bool closing;       /* QUIT or a protocol error: input is ignored */
} kv_conn;

enum {
    KV_MORE = 0,        /* all complete requests served */
    KV_PAUSED = 1,      /* out reached KV_OUT_PAUSE: call again, with no
                           new input, once it has drained */
    KV_CLOSE = 2,       /* close once out is sent */
};

/* Serve the requests in the kept input followed by data[0..n) (n may be
 * 0), appending the replies to out. What cannot be served yet is kept. */
int kv_conn_input(kv_conn *kc, kv_ctx *cx, const char *data, size_t n,
                  bytebuf *out);
/* Keep data for later without serving it (behind unsent replies); false
 * when out of memory. */
bool kv_conn_keep(kv_conn *kc, kv_ctx *cx, const char *data, size_t n);
void kv_conn_free(kv_conn *kc);

#endif
