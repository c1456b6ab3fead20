/* app_opts.c - flag tables of the three workloads (see app_opts.h). */
#include "app_opts.h"

#include <stdio.h>
#include <string.h>


static bool p_endpoint(const char *v, void *dst, char *err, size_t n)
{
    endpoint e;
    if (!ep_parse(v, &e, err, n))
        return false;
    *(const char **)dst = v;
    return true;
}

/* Resolve --server / --client into a mode (after parsing). */
static int mode_of(const common_opts *co, bool server, const char *client,
                   endpoint *peer)
{
    char err[160];
    if (server && client)
        opts_fail(co, "--server and --client exclude each other");
    if (client) {
        if (!ep_parse(client, peer, err, sizeof err))
            opts_fail(co, "--client: %s", err);
        return MODE_CLIENT;
    }
    if (server)
        return MODE_SERVER;
    if (co->family == FAMILY_TERN && strcmp(co->driver, "mem") != 0)
        opts_fail(co, "--driver %s needs --server or --client HOST:PORT "
                      "(only mem runs both ends)", co->driver);
    return MODE_BOTH;
}

static void mem_needs_both(const common_opts *co, int mode)
{
    if (co->family == FAMILY_TERN && strcmp(co->driver, "mem") == 0 &&
        mode != MODE_BOTH)
        opts_fail(co, "--driver mem runs both ends in this process; drop "
                      "--server/--client or pick a real driver");
}

void echo_opts_parse(common_opts *co, echo_opts *eo, int argc, char **argv)
{
    memset(eo, 0, sizeof *eo);
    eo->conns = 16;
    eo->size = 64;
    eo->depth = 1;
    bool dur_seen = false;
    const opt_def tab[] = {
        OPT("server", OT_FLAG, &eo->server, NULL, "serve: echo every byte back"),
        OPT("client", OT_CUSTOM, &eo->client, "HOST:PORT",
         "generate load against a server (IPv6: [ADDR]:PORT)",
         .parse = p_endpoint),
        OPT("port", OT_UINT, &eo->port, "P",
         "server port (default 7007; both ends in-process: any free)",
         .min = 1, .max = 65535),
        OPT("conns", OT_UINT, &eo->conns, "N",
         "client connections over all cores (default 16)", .min = 1,
         .max = 1000000),
        OPT("size", OT_UINT, &eo->size, "B", "request = response bytes (default 64)",
         .min = 1, .max = 65536),
        OPT("depth", OT_UINT, &eo->depth, "D",
         "requests in flight per connection (default 1)", .min = 1,
         .max = 64),
        OPT("duration", OT_DOUBLE, &eo->duration, "S",
         "seconds of load (default 10; with --requests: unlimited)",
         .seen = &dur_seen),
        OPT("requests", OT_UINT, &eo->requests, "N",
         "stop after exactly N completed round trips", .min = 1),
        OPT("tfo", OT_FLAG, &eo->tfo, NULL,
         "TCP Fast Open (tern-echo): the server takes data in SYNs with a "
         "valid cookie; the client's first connection asks for a cookie, "
         "the others open after it with their first request in the SYN"),
        OPT_END,
    };
    const char *usage =
        "Request/response benchmark: every client connection sends --size\n"
        "bytes and waits for them to come back, with --depth requests in\n"
        "flight. Prints requests/s and latency percentiles. With neither\n"
        "--server nor --client both ends run in this process.";
    opts_parse(co, tab, usage, argc, argv);
    eo->mode = mode_of(co, eo->server, eo->client, &eo->peer);
    mem_needs_both(co, eo->mode);
    if (!dur_seen)
        eo->duration = eo->requests ? 0 : 10;
    if (eo->mode == MODE_SERVER && (eo->requests || dur_seen))
        opts_fail(co, "--requests/--duration are client flags");
    if (!eo->port && eo->mode == MODE_SERVER)
        eo->port = 7007;
    if (eo->tfo && co->family != FAMILY_TERN)
        opts_fail(co, "--tfo is tern-echo's (for Linux set "
                      "net.ipv4.tcp_fastopen)");
}

void bulk_opts_parse(common_opts *co, bulk_opts *bo, int argc, char **argv)
{
    memset(bo, 0, sizeof *bo);
    bo->bytes = 1ull << 30;
    bo->conns = 1;
    const opt_def tab[] = {
        OPT("server", OT_FLAG, &bo->server, NULL,
         "receive streams (from nc, Python, a bulk client) and verify them"),
        OPT("client", OT_CUSTOM, &bo->client, "HOST:PORT",
         "send --bytes to a server (IPv6: [ADDR]:PORT)",
         .parse = p_endpoint),
        OPT("port", OT_UINT, &bo->port, "P", "server port (default 5001)",
         .min = 1, .max = 65535, .seen = &bo->port_seen),
        OPT("bytes", OT_SIZE, &bo->bytes, "N",
         "payload bytes over all connections (default 1G; 256M, 4K...)",
         .min = 1),
        OPT("conns", OT_UINT, &bo->conns, "N",
         "parallel connections (default 1)", .min = 1, .max = 4096,
         .seen = &bo->conns_seen),
        OPT("verify", OT_CHOICE, &bo->verify, "none|pattern|hash",
         "check every byte against the pattern, or SHA-256 what arrived "
         "(default: pattern; --server: hash)",
         "none|pattern|hash", .seen = &bo->verify_seen),
        OPT("once", OT_FLAG, &bo->once, NULL,
         "server: exit after --conns streams ended, printing the result"),
        OPT("app-sum", OT_FLAG, &bo->app_sum, NULL,
         "tern: the sender hands the stack each buffer's checksum, worked "
         "out from the pattern's arithmetic, so the stack does not read the "
         "payload to send it (a shortcut: named in the output)"),
        OPT("snd-buf", OT_SIZE, &bo->snd_buf, "N",
         "tern: send queue bytes per connection (cfg.snd_buf; default "
         "the stack's, 256K); what may be unacknowledged at once",
         .min = 16384, .max = 1ull << 30),
        OPT_END,
    };
    const char *usage =
        "Bulk transfer benchmark: the sender writes every payload byte\n"
        "(a generator of a verifiable pattern: byte i of a stream is a\n"
        "function of i; its time is reported as gen_s), the stacks compute\n"
        "every checksum, and the receiver checks every byte, or hashes the\n"
        "stream with SHA-256. Prints Gbit/s, against the line-rate payload\n"
        "limit with --link. Shortcuts (--app-sum, --offload) are named in\n"
        "data_path.";
    opts_parse(co, tab, usage, argc, argv);
    bo->mode = mode_of(co, bo->server, bo->client, &bo->peer);
    mem_needs_both(co, bo->mode);
    if (!bo->verify_seen)
        bo->verify = bo->mode == MODE_SERVER ? VERIFY_HASH : VERIFY_PATTERN;
    if (!bo->port)
        bo->port = 5001;
    if (bo->once && bo->mode != MODE_SERVER)
        opts_fail(co, "--once is a --server flag");
}

void httpd_opts_parse(common_opts *co, httpd_opts *ho, int argc, char **argv)
{
    memset(ho, 0, sizeof *ho);
    ho->body_size = 64;
    ho->conns = 16;
    ho->depth = 1;
    bool dur_seen = false;
    const opt_def tab[] = {
        OPT("server", OT_FLAG, &ho->server, NULL, "serve HTTP (the default "
                                              "with a real driver)"),
        OPT("client", OT_CUSTOM, &ho->client, "HOST:PORT",
         "built-in keep-alive GET load generator against a server "
         "(IPv6: [ADDR]:PORT)",
         .parse = p_endpoint),
        OPT("port", OT_UINT, &ho->port, "P", "listen port (default 8080)",
         .min = 1, .max = 65535),
        OPT("body-size", OT_UINT, &ho->body_size, "N",
         "response body bytes (default 64)", .max = 1 << 20),
        OPT("conns", OT_UINT, &ho->conns, "N",
         "load generator connections (default 16)", .min = 1,
         .max = 1000000),
        OPT("depth", OT_UINT, &ho->depth, "D",
         "load generator: pipelined requests per connection (default 1)",
         .min = 1, .max = 64),
        OPT("duration", OT_DOUBLE, &ho->duration, "S",
         "load generator seconds (default 10; with --requests: unlimited)",
         .seen = &dur_seen),
        OPT("requests", OT_UINT, &ho->requests, "N",
         "load generator: stop after exactly N responses", .min = 1),
        OPT_END,
    };
    const char *usage =
        "HTTP/1.1 keep-alive server with a fixed response (drive it with\n"
        "wrk or curl). Pipelining, requests split across segments and\n"
        "Connection: close are handled; malformed requests get 400 and the\n"
        "connection closes. With neither --server nor --client, a built-in\n"
        "load generator runs in the same process.";
    opts_parse(co, tab, usage, argc, argv);
    /* A server is what an httpd is: with a real driver (or kernel sockets)
     * and no --client, serve. */
    if (!ho->client && (co->family == FAMILY_KERN || strcmp(co->driver, "mem")))
        ho->server = true;
    ho->mode = mode_of(co, ho->server, ho->client, &ho->peer);
    mem_needs_both(co, ho->mode);
    if (!dur_seen)
        ho->duration = ho->requests ? 0 : 10;
    if (!ho->port)
        ho->port = 8080;
}
