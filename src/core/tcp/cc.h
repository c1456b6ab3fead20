/* cc.h - helpers shared by the congestion control modules. The ops table
 * (tcp_cc_ops) is in tcp.h: init, on_ack (bytes acked outside recovery),
 * on_loss (sets ssthresh when recovery starts), on_rto. */
#ifndef TERN_TCP_CC_H
#define TERN_TCP_CC_H

#include "tcp.h"

#define CC_SSTHRESH_INF 0x7fffffffu
#define CC_CWND_MAX (1u << 30)

void cc_initial_window(struct tern_conn *c);
/* Slow start growth (ABC, L = 2 SMSS) capped at ssthresh; returns the acked
 * bytes left over for congestion avoidance. */
uint32_t cc_slow_start(struct tern_conn *c, uint32_t acked);
/* The window a reduction is computed from: FlightSize, at most cwnd. */
uint32_t cc_flight_base(const struct tern_conn *c);

#endif
