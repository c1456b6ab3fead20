/* rr.c - the cold parts of the request/response generator (see rr.h). */
#include "rr.h"

#include <stdlib.h>
#include <string.h>

void rr_thread_init(rr_thread *t, uint32_t req_len, uint32_t resp_len,
                    uint32_t depth, uint64_t quota)
{
    memset(t, 0, sizeof *t);
    t->req_len = req_len;
    t->resp_len = resp_len;
    t->depth = depth > RR_MAX_DEPTH ? RR_MAX_DEPTH : depth;
    t->quota = quota;
    t->left = quota ? quota : UINT64_MAX;
    hist_init(&t->h);
}

unsigned rr_recv_any(rr_thread *t, rr_conn *c, uint64_t len, uint64_t now)
{
    uint64_t rx = c->rx + len;
    unsigned done = 0;
    while (rx >= t->resp_len && c->inflight) {
        rx -= t->resp_len;
        hist_add(&t->h, now - c->stamp[c->head]);
        c->head = (c->head + 1) & (RR_MAX_DEPTH - 1);
        c->inflight--;
        done++;
    }
    c->rx = rx;
    if (!done)
        return 0;
    t->t_last = now;
    return rr_issue(t, c, done, now);
}

void rr_total_init(rr_total *tot)
{
    memset(tot, 0, sizeof *tot);
    hist_init(&tot->h);
}

void rr_total_add(rr_total *tot, const rr_thread *t)
{
    tot->completed += rr_completed(t);
    if (t->t_first && (!tot->t_first || t->t_first < tot->t_first))
        tot->t_first = t->t_first;
    if (t->t_last > tot->t_last)
        tot->t_last = t->t_last;
    hist_merge(&tot->h, &t->h);
}

uint8_t *rr_request_train(const uint8_t *req, uint32_t len, unsigned count)
{
    uint8_t *b = malloc((size_t)len * count + 1);
    if (!b)
        return NULL;
    for (unsigned i = 0; i < count; i++)
        memcpy(b + (size_t)i * len, req, len);
    return b;
}
