/* kv_opts.c - the flag table of the key-value servers (see kv_opts.h). */
#include "kv_opts.h"

#include <string.h>

void kv_opts_parse(common_opts *co, kv_opts *ko, int argc, char **argv)
{
    memset(ko, 0, sizeof *ko);
    ko->port = 6379;
    ko->maxmemory = 1ull << 30;
    const opt_def tab[] = {
        OPT("server", OT_FLAG, &ko->server, NULL,
            "serve (the only mode; accepted like the other servers')"),
        OPT("port", OT_UINT, &ko->port, "P", "listen port (default 6379)",
            .min = 1, .max = 65535),
        OPT("maxmemory", OT_SIZE, &ko->maxmemory, "N",
            "bound on the keys' memory (default 1G; 0 = none): a write "
            "that would pass it gets -OOM"),
        OPT("pool-size", OT_UINT, &ko->pool_size, "N",
            "tern-kv: buffers in each core's pool (default: the driver's); "
            "kern-kv ignores it", .max = 1u << 24),
        OPT_END,
    };
    const char *usage =
        "Key-value server speaking the Redis protocol (RESP2): PING ECHO GET\n"
        "SET (EX PX NX XX KEEPTTL) DEL EXISTS INCR DECR INCRBY DECRBY MGET\n"
        "MSET EXPIRE PEXPIRE TTL PTTL DBSIZE FLUSHALL INFO SELECT 0 QUIT,\n"
        "COMMAND and CONFIG GET for redis-cli and redis-benchmark. Pipelined\n"
        "requests are answered together. One table shared by all --cores.\n"
        "Ctrl-C prints the figures.";
    opts_parse(co, tab, usage, argc, argv);
    if (co->family == FAMILY_TERN && strcmp(co->driver, "mem") == 0)
        opts_fail(co, "--driver mem has no client to serve: pick a real "
                      "driver (afxdp, afpacket, tap) and --iface");
}
