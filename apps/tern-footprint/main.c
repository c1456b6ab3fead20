/* tern-footprint - how many bytes a tern instance and its buffers occupy
 * per core, and how a many-core machine's working set compares with its
 * last-level cache (what limits request/response scaling past ~16 cores).
 *
 * Only public API is used: the instance size comes from tern_stack_size()
 * for the given configuration, and the per-connection cost is the growth of
 * that size with max_conns. Buffers live outside the instance (the driver's
 * pool), so their share is modelled from the flags: a NIC receive ring is
 * walked in full by the hardware, so every descriptor's buffer head ends up
 * in the cache; transmit buffers come from a LIFO pool, so only a burst's
 * worth stays hot. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern.h"

#define CACHE_LINE 64u
#define MAX_PROJ 16

typedef struct fp_opts {
    uint64_t max_conns;   /* the instance's connection table */
    uint64_t active;      /* connections each core works on at once */
    uint64_t msg;         /* payload bytes per request and response */
    uint64_t rx_ring;     /* receive descriptors per queue */
    uint64_t buf_meta;    /* per-buffer metadata bytes (mbuf: 128) */
    uint64_t tx_burst;    /* transmit buffers kept hot by the LIFO pool */
    double l3_mib;        /* last-level cache of the whole machine */
    unsigned cores[MAX_PROJ];
    unsigned ncores;
    bool json;
} fp_opts;

/* Bytes per core, split by what they are. */
typedef struct fp_core {
    uint64_t instance;      /* tern_stack_size() */
    uint64_t fixed;         /* instance with one connection slot */
    double per_conn;        /* growth per max_conns */
    uint64_t hot_stack;     /* instance lines a busy core touches */
    uint64_t hot_rx;        /* receive ring buffers' touched lines */
    uint64_t hot_tx;        /* transmit buffers' touched lines */
} fp_core;

static const char usage[] =
    "usage: tern-footprint [flags]\n"
    "\n"
    "Per-core memory footprint of tern and a projection of the working set\n"
    "of N cores against the machine's last-level cache.\n"
    "\n"
    "flags:\n"
    "  --max-conns N     connection table per instance (default 1024)\n"
    "  --active N        connections each core serves at once (default 16,\n"
    "                    as in the echo benchmark)\n"
    "  --msg B           payload bytes per message (default 64)\n"
    "  --rx-ring N       receive descriptors per queue (default 1024)\n"
    "  --buf-meta B      metadata bytes per buffer, e.g. an mbuf (default 128)\n"
    "  --tx-burst N      transmit buffers the LIFO pool keeps hot (default 32)\n"
    "  --l3 MIB          last-level cache of the machine in MiB (default 48:\n"
    "                    two 24 MB Xeon Gold 6326)\n"
    "  --cores LIST      core counts to project, e.g. 1,8,16,32\n"
    "                    (default 1,2,4,8,16,32)\n"
    "  --json            one JSON object on stdout\n"
    "  --help            this text\n";

static _Noreturn void die(const char *msg, const char *arg)
{
    fprintf(stderr, "tern-footprint: %s '%s' (see --help)\n", msg, arg);
    exit(2);
}

static uint64_t parse_count(const char *v, const char *flag, uint64_t min)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *end || v[0] == '-' || x < min || x > UINT32_MAX)
        die(flag, v);
    return x;
}

static void parse_core_list(fp_opts *o, const char *v)
{
    char copy[256];
    if (strlen(v) >= sizeof copy)
        die("--cores: list too long", v);
    strcpy(copy, v);
    o->ncores = 0;
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        if (o->ncores == MAX_PROJ)
            die("--cores: too many entries in", v);
        o->cores[o->ncores++] = (unsigned)parse_count(tok, "--cores: bad count", 1);
    }
    if (!o->ncores)
        die("--cores: empty list", v);
}

static void parse_args(fp_opts *o, int argc, char **argv)
{
    static const struct option longs[] = {
        {"max-conns", required_argument, 0, 'c'},
        {"active", required_argument, 0, 'a'},
        {"msg", required_argument, 0, 'm'},
        {"rx-ring", required_argument, 0, 'r'},
        {"buf-meta", required_argument, 0, 'b'},
        {"tx-burst", required_argument, 0, 't'},
        {"l3", required_argument, 0, 'l'},
        {"cores", required_argument, 0, 'n'},
        {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    *o = (fp_opts){.max_conns = 1024, .active = 16, .msg = 64,
                   .rx_ring = 1024, .buf_meta = 128, .tx_burst = 32,
                   .l3_mib = 48, .cores = {1, 2, 4, 8, 16, 32}, .ncores = 6};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
        switch (c) {
        case 'c': o->max_conns = parse_count(optarg, "--max-conns: bad count", 1); break;
        case 'a': o->active = parse_count(optarg, "--active: bad count", 0); break;
        case 'm': o->msg = parse_count(optarg, "--msg: bad size", 0); break;
        case 'r': o->rx_ring = parse_count(optarg, "--rx-ring: bad count", 1); break;
        case 'b': o->buf_meta = parse_count(optarg, "--buf-meta: bad size", 0); break;
        case 't': o->tx_burst = parse_count(optarg, "--tx-burst: bad count", 1); break;
        case 'l': {
            char *end;
            o->l3_mib = strtod(optarg, &end);
            if (*end || !(o->l3_mib > 0))
                die("--l3: bad size", optarg);
            break;
        }
        case 'n': parse_core_list(o, optarg); break;
        case 'j': o->json = true; break;
        case 'h': fputs(usage, stdout); exit(0);
        case ':': die("missing value for", argv[optind - 1]);
        default: die("unknown flag", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die("unexpected argument", argv[optind]);
    if (o->active > o->max_conns)
        die("--active exceeds --max-conns", "");
}

static uint64_t instance_size(uint64_t max_conns)
{
    tern_config cfg;
    tern_config_defaults(&cfg);
    cfg.max_conns = (uint32_t)max_conns;
    return tern_stack_size(&cfg);
}

static uint64_t lines(uint64_t bytes)
{
    return (bytes + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
}

static fp_core measure(const fp_opts *o)
{
    fp_core c = {0};
    c.instance = instance_size(o->max_conns);
    c.fixed = instance_size(1);
    c.per_conn = (double)(instance_size(2 * o->max_conns) - c.instance) /
                 (double)o->max_conns;
    /* Frame of one message: Ethernet + IPv4 + TCP with timestamps. */
    uint64_t frame = 14 + 20 + 32 + o->msg;
    /* A busy core touches its active connections (struct + table slot),
     * and the instance's fixed part (counters, wheel slots, ARP) at most. */
    c.hot_stack = lines((uint64_t)(c.per_conn * (double)o->active)) +
                  lines(c.fixed);
    c.hot_rx = o->rx_ring * (lines(o->buf_meta) + lines(frame));
    c.hot_tx = o->tx_burst * (lines(o->buf_meta) + lines(frame));
    return c;
}

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

static void print_text(const fp_opts *o, const fp_core *c)
{
    uint64_t per_core = c->hot_stack + c->hot_rx + c->hot_tx;
    printf("instance (max_conns %llu): %llu bytes; fixed part %llu; "
           "%.0f bytes per connection slot\n",
           (unsigned long long)o->max_conns, (unsigned long long)c->instance,
           (unsigned long long)c->fixed, c->per_conn);
    printf("hot per core: stack %llu + rx ring %llu + tx %llu = %.2f MiB\n",
           (unsigned long long)c->hot_stack, (unsigned long long)c->hot_rx,
           (unsigned long long)c->hot_tx, mib((double)per_core));
    printf("%6s %12s %12s %8s\n", "cores", "hot MiB", "alloc MiB", "of L3");
    for (unsigned i = 0; i < o->ncores; i++) {
        double n = o->cores[i];
        double hot = n * (double)per_core;
        printf("%6u %12.2f %12.2f %7.0f%%\n", o->cores[i], mib(hot),
               mib(n * (double)c->instance), 100.0 * mib(hot) / o->l3_mib);
    }
}

static void print_json(const fp_opts *o, const fp_core *c)
{
    uint64_t per_core = c->hot_stack + c->hot_rx + c->hot_tx;
    printf("{\"max_conns\":%llu,\"instance_bytes\":%llu,\"fixed_bytes\":%llu,"
           "\"per_conn_bytes\":%.1f,\"hot_stack_bytes\":%llu,"
           "\"hot_rx_bytes\":%llu,\"hot_tx_bytes\":%llu,\"l3_mib\":%.1f,"
           "\"projection\":[",
           (unsigned long long)o->max_conns, (unsigned long long)c->instance,
           (unsigned long long)c->fixed, c->per_conn,
           (unsigned long long)c->hot_stack, (unsigned long long)c->hot_rx,
           (unsigned long long)c->hot_tx, o->l3_mib);
    for (unsigned i = 0; i < o->ncores; i++)
        printf("%s{\"cores\":%u,\"hot_mib\":%.3f,\"alloc_mib\":%.3f}",
               i ? "," : "", o->cores[i],
               mib((double)o->cores[i] * (double)per_core),
               mib((double)o->cores[i] * (double)c->instance));
    printf("]}\n");
}

int main(int argc, char **argv)
{
    fp_opts o;
    parse_args(&o, argc, argv);
    fp_core c = measure(&o);
    if (o.json)
        print_json(&o, &c);
    else
        print_text(&o, &c);
    return 0;
}
