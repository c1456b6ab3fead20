/* opts.h - command-line flags shared by every tern and kern program.
 *
 * Each program describes its own flags in a table of opt_def and passes it
 * with the common table (common_opts) to opts_parse().  A bad flag or value
 * prints ONE line on stderr and exits with status 2; --help prints the
 * usage on stdout and exits 0. */
#ifndef APPS_OPTS_H
#define APPS_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OPTS_MAX_CORES 256

typedef enum opt_type {
    OT_FLAG,    /* bool, no value */
    OT_STR,     /* const char * */
    OT_UINT,    /* uint64_t, min..max */
    OT_SIZE,    /* uint64_t with K/M/G suffix (powers of 1024) */
    OT_RATE,    /* double bit/s with K/M/G/T suffix (powers of 1000) */
    OT_DOUBLE,  /* double, >= 0 */
    OT_PROB,    /* double in [0, 1] */
    OT_MS,      /* long, -1 allowed ("block forever") */
    OT_CHOICE,  /* int index into choices "a|b|c" */
    OT_CUSTOM,  /* parse() fills dst */
} opt_type;

typedef struct opt_def {
    const char *name;      /* without the leading "--"; NULL ends a table */
    opt_type type;
    void *dst;
    const char *meta;      /* value placeholder for --help, e.g. "N" */
    const char *help;
    const char *choices;   /* OT_CHOICE */
    uint64_t min, max;     /* OT_UINT / OT_SIZE; max 0 = unbounded */
    /* OT_CUSTOM: return false and write a reason into err on bad input. */
    bool (*parse)(const char *val, void *dst, char *err, size_t errlen);
    bool *seen;            /* set to true when the flag is given (optional) */
} opt_def;

/* Table entry: name, type, destination, value placeholder, help, then
 * optional positional `choices` or designated fields (.min, .max, .parse,
 * .seen). */
#define OPT(n, t, d, m, h, ...)                                            \
    {.name = (n), .type = (t), .dst = (d), .meta = (m), .help = (h),     \
     __VA_ARGS__}
#define OPT_END {.name = NULL}

/* Which family a program belongs to: tern programs run the tern stack over
 * a driver, kern programs use kernel sockets and ignore driver flags. */
enum { FAMILY_TERN = 0, FAMILY_KERN = 1 };

enum { POLL_BUSY = 0, POLL_BLOCK = 1 };

/* Flags every program takes. */
typedef struct common_opts {
    int family;
    const char *prog;
    /* link (tern) */
    const char *driver;
    const char *iface;
    const char *driver_opts; /* tern_dev_args.extra "k=v,..." */
    uint32_t ip;          /* host order */
    unsigned prefix;
    bool ip_set;
    uint32_t gw;
    uint8_t ip6[16];      /* --ip6: a global IPv6 address, network order */
    unsigned prefix6;
    bool ip6_set;
    uint8_t gw6[16];      /* --gw6: the IPv6 default router */
    bool gw6_set;
    uint8_t mac[6];
    bool mac_set;
    /* threads */
    unsigned cores[OPTS_MAX_CORES];
    unsigned ncores;
    int poll;             /* POLL_BUSY / POLL_BLOCK */
    long poll_timeout_ms; /* -1: tern = until the stack's deadline, kern = forever */
    uint64_t busy_poll_us; /* kern: SO_BUSY_POLL; tern: rt spin_us */
    const char *pcap;
    bool json;
    /* mem link faults and offloads (tern --driver mem only) */
    double loss, dup, reorder, corrupt;
    uint64_t delay_us;
    uint64_t seed;
    const char *offload;
    double link_bps;      /* --link: line rate for the payload limit, 0 = none */
    uint64_t time_wait_ms; /* tern: TIME_WAIT duration, 0 = the stack's default */
    uint64_t max_conns;   /* tern: connection slots per core, 0 = the app's */
    bool steer;           /* tern: software steering over the cores */
    uint64_t steer_queues; /* tern --steer: device queues to read, 0 = 1 */
    int cc;               /* tern: enum tern_cc (cubic|newreno|bbr order) */
    /* which were given, for "ignored"/"rejected" notes */
    bool seen_driver, seen_driver_opts, seen_iface, seen_ip, seen_gw, seen_ip6, seen_gw6,
         seen_mac, seen_pcap,
         seen_fault, seen_offload, seen_busy_poll, seen_time_wait,
         seen_steer, seen_steer_queues, seen_max_conns, seen_cc;
} common_opts;

/* Fill defaults: driver mem, cores 0, poll block, ip 198.18.0.2/24 ... */
void common_defaults(common_opts *co, const char *prog, int family);

/*
 * Parse argv against the program's table and the common flags. `usage` is
 * the one-paragraph description printed first by --help. Exits 2 on error,
 * 0 after --help. Afterwards checks the common flags' consistency for the
 * family (e.g. fault flags need --driver mem) and prints one note on stderr
 * listing flags a kern program ignores.
 */
void opts_parse(common_opts *co, const opt_def *app, const char *usage,
                int argc, char **argv);

/* Print "prog: msg" on stderr and exit 2 (for checks after parsing). */
void opts_fail(const common_opts *co, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#endif
