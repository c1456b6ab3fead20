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

typedef struct xfer xfer;
struct xfer {
    pair *p;                    /* set by xfer_start */
    tern_conn *cli, *srv;       /* NULL once closed */
    uint64_t total, sent, rcvd;
    size_t chunk;               /* at most this much per send call; 0: 64 KiB */
    bool one_at_a_time;         /* the next chunk once all is acked */
    bool close_at_end;          /* FIN once all is queued; each end closes
                                   on the other's FIN */
    bool pattern;               /* send the bulk pattern (apps/common/
                                   pattern.h) at its stream offsets; the
                                   receiver checks every byte into good */
    bool slow;                  /* the receiver holds what arrives; each
                                   xfer_closed call frees 64 KiB of it */
    /* The sender's own way to queue data (buffers, batches) in place of
     * xfer_pump's copies; NULL: copies. */
    void (*send)(tern_stack *st, xfer *x);
    uint64_t good;              /* with pattern: bytes that matched before
                                   the first that did not */
    uint64_t unconsumed;        /* what a slow receiver holds */
    int closed;                 /* connections closed */
    int closes[2];              /* of end 0 (the client) and of end 1 */
    int reason[2];              /* each end's last close reason */
};

/* The callbacks, each end's user pointer the xfer. */
extern const tern_callbacks XFER_CB;
/* Listen on end 1 and connect from end 0 (XFER_PORT), x the user of
 * both; p made with XFER_CB and x as both ends' user. False when the
 * listen or the connect failed. */
bool xfer_start(pair *p, xfer *x);
/* Queue what the sender may (called on connect and on every ack). */
void xfer_pump(tern_stack *st, xfer *x);
/* Whether all total bytes arrived (a pair_run condition). */
bool xfer_delivered(void *x);
/* Whether both ends closed (a pair_run condition); frees a slow
 * receiver's next 64 KiB first. */
bool xfer_closed(void *x);

#endif
