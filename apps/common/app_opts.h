/* app_opts.h - the flags of each workload, shared by the tern-* program and
 * its kern-* twin so both accept exactly the same command lines. */
#ifndef APPS_APP_OPTS_H
#define APPS_APP_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "endpoint.h"
#include "opts.h"

/* Who runs: --server, --client HOST:PORT ([IPV6]:PORT), or neither = both ends in this
 * process (mem link for tern, loopback for kern). */
enum { MODE_BOTH = 0, MODE_SERVER = 1, MODE_CLIENT = 2 };

typedef struct echo_opts {
    int mode;
    endpoint peer;          /* --client */
    uint64_t port;          /* --port, 0 = default (7 / ephemeral) */
    uint64_t conns, size, depth;
    double duration;        /* seconds, 0 = until --requests */
    uint64_t requests;      /* 0 = until --duration */
    bool server;
    const char *client;
    bool tfo;               /* TCP Fast Open (tern-echo only) */
} echo_opts;

typedef struct bulk_opts {
    int mode;
    endpoint peer;          /* --client */
    uint64_t port;
    uint64_t bytes;         /* total over all connections */
    uint64_t conns;
    int verify;             /* VERIFY_* */
    bool once;              /* server: exit after --conns streams */
    bool app_sum;           /* tern: payload sums from the app (shortcut) */
    uint64_t snd_buf;       /* tern: cfg.snd_buf, 0 = the stack's default */
    bool server;
    const char *client;
    bool verify_seen, conns_seen, port_seen;
} bulk_opts;

enum { VERIFY_NONE = 0, VERIFY_PATTERN = 1, VERIFY_HASH = 2 };

typedef struct httpd_opts {
    int mode;
    uint64_t port;
    uint64_t body_size;
    /* built-in load generator (both ends in one process) */
    uint64_t conns, depth;
    double duration;
    uint64_t requests;
    const char *client;
    endpoint peer;          /* --client */
    bool server;
} httpd_opts;

void echo_opts_parse(common_opts *co, echo_opts *eo, int argc, char **argv);
void bulk_opts_parse(common_opts *co, bulk_opts *bo, int argc, char **argv);
void httpd_opts_parse(common_opts *co, httpd_opts *ho, int argc, char **argv);

#endif
