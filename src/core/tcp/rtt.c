/* rtt.c - RFC 6298 round-trip estimator in integer microseconds (shifts
 * only). Samples come from timestamp echoes (RFC 7323) or from one timed
 * segment at a time when timestamps are off (Karn: never a retransmitted
 * one). The RTO is clamped to [rto_min, rto_max]; backoff doubles it per
 * expiry and is cleared by the next valid sample. rtt_sample itself is
 * inline in tcp.h (one per ACK). */
#include "tcp.h"

void rtt_init(tern_stack *st, struct tern_conn *c)
{
    c->srtt_us = 0;
    c->rttvar_us = 0;
    c->rto_ms = TL(st)->rto_init_ms;
    c->backoff = 0;
}
