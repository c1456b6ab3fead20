/* kern_rr.h - the epoll engine of the kern-* request/response twins
 * (kern-echo, kern-httpd): one pinned thread per core, each with an
 * SO_REUSEPORT listener (server, both) and its share of client connections
 * (client, both) driven by the rr load generator, all in one epoll loop.
 * The program supplies only what a server does with received bytes. */
#ifndef APPS_KERN_RR_H
#define APPS_KERN_RR_H

#include <stdbool.h>
#include <stdint.h>

#include "bytebuf.h"
#include "endpoint.h"
#include "opts.h"
#include "rr.h"

typedef struct kern_rr_cfg {
    int mode;                    /* MODE_BOTH / MODE_SERVER / MODE_CLIENT */
    endpoint peer;               /* client mode */
    uint16_t port;               /* listen port; 0 = any (both mode) */
    uint64_t conns, requests;
    double duration;
    const uint8_t *req;          /* one request */
    uint32_t req_len, resp_len, depth;
    /* Server: n bytes arrived on a connection whose state is *state (NULL
     * at first; the callee may allocate). Append replies to out. Return
     * false to close once out is sent. */
    bool (*serve)(void **state, const char *d, size_t n, bytebuf *out);
    void (*state_free)(void *state);
} kern_rr_cfg;

typedef struct kern_rr_result {
    rr_total tot;                /* client side */
    uint64_t bytes_in, bytes_out, accepted;  /* server side */
    uint64_t retransmits;        /* namespace's TCP RetransSegs delta */
    char err[200];               /* first failure, "" if none */
} kern_rr_result;

/* Run until the clients are done (client/both) or SIGINT/SIGTERM. Returns
 * 0, or -1 with res->err (e.g. connect refused). */
int kern_rr_run(const common_opts *co, const kern_rr_cfg *cfg,
                kern_rr_result *res);

#endif
