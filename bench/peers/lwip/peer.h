/* peer.h - the lwIP peer's flags and workloads (main.c, echo.c, bulk.c). */
#ifndef LWIP_PEER_H
#define LWIP_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "lwip/tcp.h"

typedef struct peer_opts {
    unsigned conns;
    unsigned size;          /* echo: bytes per request */
    double duration;        /* echo: seconds, when requests is 0 */
    uint64_t requests;      /* echo: round trips, 0 = until duration */
    uint64_t bytes;         /* bulk: payload over all connections */
    bool json;
} peer_opts;

/* Each runs its workload over the in-memory link, prints its figures
 * (report.h: text, or one JSON object) and returns the exit status. */
int run_echo(const peer_opts *o);
int run_bulk(const peer_opts *o);

/* Monotonic nanoseconds. */
uint64_t peer_now(void);
/* peer_now() as peer_loop read it at the start of its current turn. */
extern uint64_t peer_clock;
/* The server's listener on `port` (false: it cannot bind), and a client
 * connection to it with arg set; peer_connected counts the connections
 * established. */
bool peer_listen(uint16_t port, tcp_accept_fn accept);
struct tcp_pcb *peer_connect(void *arg, uint16_t port);
extern unsigned peer_connected;

/* A run that went wrong: the first reason printed, peer_failed set. The
 * err callback of every connection calls it. */
void peer_fail(const char *what);
void peer_on_err(void *arg, err_t err);
extern bool peer_failed;
/* peer_loop's done() while connecting: every connection up, or a failure. */
bool peer_all_connected(void);

/* Runs the link and lwIP's timers until done() or `limit_s` seconds pass
 * without progress; false on such a stall. */
bool peer_loop(bool (*done)(void), double limit_s);

#endif
