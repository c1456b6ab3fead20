/* kern-httpd - the Linux-kernel twin of tern-httpd: HTTP/1.1 keep-alive
 * server with a fixed response on epoll + kernel TCP, one pinned thread per
 * --cores CPU with SO_REUSEPORT; same flags, parser and responses as
 * tern-httpd. --client HOST:PORT runs the built-in keep-alive GET load
 * generator instead (the same one tern-httpd uses). */
#include <stdio.h>
#include <stdlib.h>

#include "app_opts.h"
#include "http.h"
#include "kern_rr.h"
#include "results.h"

static http_srv srv;

static bool http_serve(void **state, const char *d, size_t n, bytebuf *out)
{
    http_conn *hc = *state;
    if (!hc) {
        hc = calloc(1, sizeof *hc);
        if (!hc)
            return false;
        *state = hc;
    }
    return http_conn_input(hc, &srv, d, n, out) == HTTP_MORE;
}

static void http_state_free(void *state)
{
    http_conn_free(state);
    free(state);
}

int main(int argc, char **argv)
{
    common_opts co;
    httpd_opts ho;
    common_defaults(&co, "kern-httpd", FAMILY_KERN);
    httpd_opts_parse(&co, &ho, argc, argv);
    if (http_srv_init(&srv, ho.body_size))
        return 1;
    kern_rr_cfg k = {
        .mode = ho.mode, .peer = ho.peer,
        .port = (uint16_t)ho.port, .conns = ho.conns,
        .requests = ho.requests, .duration = ho.duration,
        .req = (const uint8_t *)http_get_req,
        .req_len = (uint32_t)http_get_req_len,
        .resp_len = (uint32_t)srv.ok_keep_len, .depth = (uint32_t)ho.depth,
        .serve = http_serve, .state_free = http_state_free,
    };
    if (ho.mode == MODE_SERVER && !co.json)
        fprintf(stderr, "%s: serving *:%u, every IPv4 and IPv6 address "
                "of this host (Ctrl-C prints the figures)\n", co.prog,
                (unsigned)ho.port);
    kern_rr_result res;
    int rc = kern_rr_run(&co, &k, &res);
    if (rc && (ho.mode == MODE_SERVER || !res.tot.completed)) {
        fprintf(stderr, "%s: %s\n", co.prog, res.err);
        return 1;
    }
    report r;
    rep_begin(&r, stdout, co.json, co.prog);
    rep_str(&r, "driver", "kernel");
    rep_str(&r, "mode", ho.mode == MODE_SERVER ? "server"
                        : ho.mode == MODE_CLIENT ? "client" : "both");
    rep_u64(&r, "cores", co.ncores);
    rep_u64(&r, "body_size", ho.body_size);
    if (ho.mode != MODE_SERVER) {
        rep_u64(&r, "conns", ho.conns);
        rep_u64(&r, "depth", ho.depth);
        report_rr(&r, &res.tot);
    } else {
        rep_u64(&r, "accepted", res.accepted);
        rep_u64(&r, "bytes_in", res.bytes_in);
        rep_u64(&r, "bytes_out", res.bytes_out);
    }
    rep_u64(&r, "retransmits", res.retransmits);
    rep_end(&r);
    if (rc) {
        fprintf(stderr, "%s: %s\n", co.prog, res.err);
        return 1;
    }
    return 0;
}
