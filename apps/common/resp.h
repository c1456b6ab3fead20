/* resp.h - RESP2, the Redis protocol: the request parser and the reply
 * writers shared by tern-kv and kern-kv (and their fuzzer and unit tests).
 *
 * A request is an array of bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
 * what every client library sends) or an inline command line ("PING\r\n",
 * what a person types into nc). The parser works in place: the arguments
 * point into the caller's buffer, so a request that arrived whole in one
 * segment is never copied. Every size is bounded; anything else is a
 * protocol error, after which the server replies and closes. Nested arrays
 * are not requests: a '*' where a bulk string belongs is an error. */
#ifndef APPS_RESP_H
#define APPS_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "bytebuf.h"

#define RESP_MAX_ARGS 4096              /* arguments of one request */
#define RESP_MAX_BULK (8u << 20)        /* bytes of one argument */
#define RESP_MAX_REQUEST (16u << 20)    /* bytes of one whole request */
#define RESP_MAX_INLINE (64u << 10)     /* bytes of one inline line */

typedef struct resp_req {
    unsigned argc;                      /* 0: an empty request, skip it */
    const char *argv[RESP_MAX_ARGS];    /* into the parsed buffer */
    uint32_t argl[RESP_MAX_ARGS];
    size_t need;      /* after 0 (incomplete): bytes the request needs at
                         least, counted from its start */
    const char *err;  /* after -1: why, for "-ERR Protocol error: ..." */
} resp_req;

/* Parse one request at p[0..n). Returns its length (> 0) with argc/argv
 * set, 0 when more bytes are needed (need set), or -1 on a protocol error
 * (err set). */
long resp_parse(const char *p, size_t n, resp_req *r);

/* Reply writers: each appends one RESP2 value to out. */
void resp_ok(bytebuf *out);                                /* +OK */
void resp_simple(bytebuf *out, const char *s);             /* +s */
void resp_error(bytebuf *out, const char *s);              /* -s */
void resp_int(bytebuf *out, int64_t v);                    /* :v */
void resp_bulk(bytebuf *out, const char *p, size_t n);     /* $n p */
void resp_nil(bytebuf *out);                               /* $-1 */
void resp_array(bytebuf *out, size_t n);                   /* *n */

/* Write v in decimal at buf (at least 20 bytes); returns its length. */
size_t resp_fmt_i64(char *buf, int64_t v);

/* Case-insensitive: does argument a[0..n) spell the word w (ASCII)? */
int resp_is(const char *a, size_t n, const char *w);

#endif
