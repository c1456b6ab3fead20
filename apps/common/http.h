/* http.h - the HTTP/1.1 server side shared by tern-httpd and kern-httpd:
 * an incremental request parser (zero copy when a request head arrives in
 * one piece; only a head split across segments is copied) and the fixed
 * responses. Pipelining: every complete request in the input gets its
 * response appended to the output in order. */
#ifndef APPS_HTTP_H
#define APPS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bytebuf.h"

#define HTTP_MAX_HEAD 8192

/* What the parser learned from one request head. */
typedef struct http_req {
    bool keep_alive;       /* after version and Connection: header */
    uint64_t body_len;     /* Content-Length, 0 if none */
} http_req;

/* Parse a complete head candidate p[0..len). Returns the head's length
 * (through the empty line) when complete, 0 when more bytes are needed,
 * -1 when malformed. */
long http_parse(const char *p, size_t len, http_req *req);

/* The fixed responses, built once per process. */
typedef struct http_srv {
    char *ok_keep;
    size_t ok_keep_len;
    char *ok_close;
    size_t ok_close_len;
    const char *bad;
    size_t bad_len;
    size_t body_size;
} http_srv;

/* Body byte i is 'a' + i % 26, except the last, which is '\n'. */
int http_srv_init(http_srv *s, size_t body_size);
/* The request a built-in load generator sends (keep-alive GET /). */
extern const char http_get_req[];
extern const size_t http_get_req_len;

/* Per-connection parser state. */
typedef struct http_conn {
    bytebuf in;            /* a head split across segments */
    size_t scan;           /* bytes of `in` already searched */
    uint64_t skip;         /* request body bytes still to skip */
    bool closing;          /* close after the queued responses */
    uint64_t requests;
} http_conn;

enum { HTTP_MORE = 0, HTTP_CLOSE = 1 };

/* Feed received bytes; responses are appended to out. Returns HTTP_CLOSE
 * once the connection must close after out is sent (Connection: close,
 * HTTP/1.0 without keep-alive, or a 400); input after that is ignored. */
int http_conn_input(http_conn *hc, const http_srv *s, const char *data,
                    size_t len, bytebuf *out);
void http_conn_free(http_conn *hc);

#endif
