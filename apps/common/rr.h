/* rr.h - the request/response load generator shared by the echo and http
 * clients, tern and kernel alike: each connection keeps `depth` requests
 * of req_len bytes in flight; every resp_len bytes received complete the
 * oldest one. Latency = completion time - send time, both taken from the
 * loop's clock of that iteration (no clock read per request), recorded in
 * a log-linear histogram. No allocation, no syscalls: a few adds per
 * request. */
#ifndef APPS_RR_H
#define APPS_RR_H

#include <stdbool.h>
#include <stdint.h>

#include "hist.h"

#define RR_MAX_DEPTH 64

/* One load-generating thread (core). */
typedef struct rr_thread {
    uint32_t req_len, resp_len, depth;
    uint64_t quota;          /* requests this thread may issue, 0 = no limit */
    uint64_t left;           /* requests that may still go out: the quota's
                                rest (UINT64_MAX without one), 0 once
                                stopping */
    bool stopping;           /* duration over: issue no more (rr_stop) */
    uint64_t t_first;        /* first connection up (ns) */
    uint64_t t_last;         /* last completion (ns) */
    hist h;
} rr_thread;

/* One connection. */
typedef struct rr_conn {
    uint32_t inflight;
    uint32_t head;           /* ring index of the oldest stamp */
    uint64_t rx;             /* bytes toward the current response */
    uint64_t stamp[RR_MAX_DEPTH];
} rr_conn;

void rr_thread_init(rr_thread *t, uint32_t req_len, uint32_t resp_len,
                    uint32_t depth, uint64_t quota);

/* How many requests may go out now (and stamp them): the caller then sends
 * that many requests back to back. The limits (depth, quota, stopping) are
 * taken once, not per request. */
static inline unsigned rr_issue(rr_thread *t, rr_conn *c, unsigned want,
                                uint64_t now)
{
    uint64_t n = t->depth - c->inflight;   /* inflight never exceeds depth */
    if (want < n)
        n = want;
    if (t->left < n)
        n = t->left;            /* also 0 once stopping */
    for (uint32_t k = 0; k < n; k++)
        c->stamp[(c->head + c->inflight + k) & (RR_MAX_DEPTH - 1)] = now;
    c->inflight += (uint32_t)n;
    t->left -= n;
    return (unsigned)n;
}

/* The run is over: issue no more. left drops to 0 too, so issuing tests
 * one limit, not two. */
static inline void rr_stop(rr_thread *t)
{
    t->stopping = true;
    t->left = 0;
}

/* A connection came up: requests to send now (fills the pipeline). */
static inline unsigned rr_start(rr_thread *t, rr_conn *c, uint64_t now)
{
    if (!t->t_first)
        t->t_first = now;
    return rr_issue(t, c, t->depth, now);
}

/* len response bytes arrived: complete requests, return how many new
 * requests to send now (one per completed one while running). Bytes beyond
 * what was asked for are a protocol error the caller may check with
 * rr_overrun(). Out of line: the general case (rr.c). */
unsigned rr_recv_any(rr_thread *t, rr_conn *c, uint64_t len, uint64_t now);

/* The bytes are exactly one whole response, none of it received before
 * (so rx stays 0), and a request is in flight. */
static inline bool rr_one_whole(const rr_thread *t, const rr_conn *c,
                                uint64_t len)
{
    return !c->rx && len == t->resp_len && c->inflight;
}

/* Whether rr_recv's usual case applies: one whole response whose latency
 * equals the histogram's current run. */
static inline bool rr_one_response(const rr_thread *t, const rr_conn *c,
                                   uint64_t len, uint64_t now)
{
    return rr_one_whole(t, c, len) && now - c->stamp[c->head] == t->h.run_v;
}

/* One whole response (rr_one_whole) with a new latency: make that latency
 * the histogram's current run, so rr_one_response holds and
 * rr_complete_one records it. Once per loop iteration, not per request. */
static inline void rr_new_latency(rr_thread *t, const rr_conn *c,
                                  uint64_t now)
{
    hist_new_run(&t->h, now - c->stamp[c->head]);
}

/* rr_recv's usual case (rr_one_response): complete the oldest request,
 * return whether one new request may go out (and stamp it). */
static inline unsigned rr_complete_one(rr_thread *t, rr_conn *c, uint64_t now)
{
    t->h.run_n++;
    uint32_t head = (c->head + 1) & (RR_MAX_DEPTH - 1);
    c->head = head;
    t->t_last = now;
    /* One request replaces it: the pipeline has room (one just left), so
     * only the quota and the end of the run (left 0 for both) can say no. */
    if (!t->left) {
        c->inflight--;
        return 0;
    }
    c->stamp[(head + c->inflight - 1) & (RR_MAX_DEPTH - 1)] = now;
    t->left--;
    return 1;
}

/* Inline, the usual case (rr_one_response); rr_recv_any otherwise. */
static inline unsigned rr_recv(rr_thread *t, rr_conn *c, uint64_t len,
                               uint64_t now)
{
    if (!rr_one_response(t, c, len, now))
        return rr_recv_any(t, c, len, now);
    return rr_complete_one(t, c, now);
}

/* More bytes arrived than requests were outstanding. */
static inline bool rr_overrun(const rr_conn *c, const rr_thread *t)
{
    return c->inflight == 0 && c->rx >= t->resp_len;
}

/* Requests answered: each one's latency went into the histogram (its
 * pending run included), so no counter of its own per request. Issued =
 * this + the connections' inflight. */
static inline uint64_t rr_completed(const rr_thread *t)
{
    return t->h.count + t->h.run_n;
}

/* Every allowed request issued and answered. */
static inline bool rr_quota_done(const rr_thread *t)
{
    return t->quota && rr_completed(t) >= t->quota;
}

/* Sum of several threads' figures (histograms merged). */
typedef struct rr_total {
    uint64_t completed;
    uint64_t t_first, t_last;  /* earliest start, latest completion */
    hist h;
} rr_total;

void rr_total_init(rr_total *tot);
void rr_total_add(rr_total *tot, const rr_thread *t);

/* Build a buffer holding `count` copies of a request, so `n` requests go
 * out in one send of n * len bytes. NULL on ENOMEM. */
uint8_t *rr_request_train(const uint8_t *req, uint32_t len, unsigned count);

#endif
