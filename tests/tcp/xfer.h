/* xfer.h - a byte stream from end 0 to end 1 of a pair (harness.h): the
 * callbacks that connect, send all of it and count what arrives, for the
 * tests and tools that move bulk data over the mem link. */
#ifndef TERN_TCP_XFER_H
#define TERN_TCP_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"

#define XFER_PORT 5001

typedef struct xfer {
    tern_conn *cli, *srv;       /* NULL once closed */
    uint64_t total, sent, rcvd;
    size_t chunk;               /* at most this much per send call; 0: 64 KiB */
    bool one_at_a_time;         /* the next chunk once all is acked */
    bool close_at_end;          /* FIN once all is queued; each end closes
                                   on the other's FIN */
    int closed;                 /* connections closed */
} xfer;

/* The callbacks, each end's user pointer the xfer. */
extern const tern_callbacks XFER_CB;
/* Listen on end 1 and connect from end 0 (XFER_PORT), x the user of
 * both; p made with XFER_CB and x as both ends' user. */
void xfer_start(pair *p, xfer *x);
/* Queue what the sender may (called on connect and on every ack). */
void xfer_pump(tern_stack *st, xfer *x);
/* Whether all total bytes arrived (a pair_run condition). */
bool xfer_delivered(void *x);

#endif
