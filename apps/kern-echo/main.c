/* kern-echo - the Linux-kernel twin of tern-echo: the same flags and output,
 * on epoll + kernel TCP, one pinned thread per --cores CPU, SO_REUSEPORT
 * listeners. With neither --server nor --client each thread runs a listener
 * and client connections over loopback in one epoll loop: the kernel
 * counterpart of tern-echo's one-thread mem link. */
#include <stdio.h>
#include <stdlib.h>

#include "app_opts.h"
#include "kern_rr.h"
#include "results.h"

static bool echo_serve(void **state, const char *d, size_t n, bytebuf *out)
{
    (void)state;
    bb_append(out, d, n, SIZE_MAX);
    return true;
}

int main(int argc, char **argv)
{
    common_opts co;
    echo_opts eo;
    common_defaults(&co, "kern-echo", FAMILY_KERN);
    echo_opts_parse(&co, &eo, argc, argv);
    uint8_t *req = malloc(eo.size);
    if (!req)
        return 1;
    for (uint64_t i = 0; i < eo.size; i++)
        req[i] = (uint8_t)('a' + i % 26);
    kern_rr_cfg k = {
        .mode = eo.mode, .peer = eo.peer,
        .port = (uint16_t)eo.port, .conns = eo.conns,
        .requests = eo.requests, .duration = eo.duration, .req = req,
        .req_len = (uint32_t)eo.size, .resp_len = (uint32_t)eo.size,
        .depth = (uint32_t)eo.depth, .serve = echo_serve,
    };
    if (eo.mode == MODE_SERVER && !co.json)
        fprintf(stderr, "%s: serving *:%u, every IPv4 and IPv6 address "
                "of this host (Ctrl-C prints the figures)\n", co.prog,
                (unsigned)eo.port);
    kern_rr_result res;
    int rc = kern_rr_run(&co, &k, &res);
    if (rc && (eo.mode == MODE_SERVER || !res.tot.completed)) {
        fprintf(stderr, "%s: %s\n", co.prog, res.err);
        return 1;
    }
    report r;
    rep_begin(&r, stdout, co.json, co.prog);
    rep_str(&r, "driver", "kernel");
    rep_str(&r, "mode", eo.mode == MODE_BOTH ? "both"
                        : eo.mode == MODE_SERVER ? "server" : "client");
    rep_u64(&r, "cores", co.ncores);
    rep_u64(&r, "conns", eo.conns);
    rep_u64(&r, "size", eo.size);
    rep_u64(&r, "depth", eo.depth);
    if (eo.mode != MODE_SERVER) {
        report_rr(&r, &res.tot);
    } else {
        rep_u64(&r, "requests", res.bytes_in / eo.size);
        rep_u64(&r, "bytes_echoed", res.bytes_out);
        rep_u64(&r, "accepted", res.accepted);
    }
    rep_u64(&r, "retransmits", res.retransmits);
    rep_end(&r);
    if (rc) {
        fprintf(stderr, "%s: %s\n", co.prog, res.err);
        return 1;
    }
    if (eo.mode != MODE_SERVER && eo.requests &&
        res.tot.completed != eo.requests) {
        fprintf(stderr, "%s: %llu of %llu requests completed\n", co.prog,
                (unsigned long long)res.tot.completed,
                (unsigned long long)eo.requests);
        return 1;
    }
    return 0;
}
