/* timer_wheel.c - one hashed wheel of TW_SLOTS ticks (~1 ms each) for all
 * connections. A conn sits in at most one slot, filed at the earliest of
 * its deadlines; moving a deadline later leaves it where it is (it fires
 * early, finds nothing due and is re-filed), so the per-ACK cost of
 * re-arming the RTO is a store. Deadlines beyond the horizon are filed at
 * the horizon and re-filed when it comes. Timers fire in the first tick
 * after the one they fall in is processed (at most one tick late), which
 * also guarantees a handler that re-arms "now" cannot loop. tcp_poll never
 * walks idle connections: it visits the slots of the ticks that passed,
 * skipping empty ones through the bitmap (a poll after a long idle gap
 * reads 32 words, not 2048 slots). */
#include "tcp.h"

#define TW_MASK (TW_SLOTS - 1)

void tw_init(struct tcp_layer *tl, uint64_t now)
{
    tl->wheel.cur = now >> TW_SHIFT;
    tl->wheel.first = UINT64_MAX;
    for (uint32_t i = 0; i < TW_SLOTS; i++)
        tl->wheel.slot[i] = TCP_NIL;
    for (uint32_t i = 0; i < TW_SLOTS / 64; i++)
        tl->wheel.bits[i] = 0;
}

void tw_cancel(struct tcp_layer *tl, struct tern_conn *c)
{
    if (!(c->flags & TF_IN_WHEEL))
        return;
    tcp_wheel *w = &tl->wheel;
    if (c->w_prev != TCP_NIL) {
        tl->conns[c->w_prev].w_next = c->w_next;
    } else {
        w->slot[c->w_slot] = c->w_next;
        if (c->w_next == TCP_NIL)
            w->bits[c->w_slot >> 6] &= ~(1ull << (c->w_slot & 63));
    }
    if (c->w_next != TCP_NIL)
        tl->conns[c->w_next].w_prev = c->w_prev;
    if ((uint32_t)w->first % TW_SLOTS == c->w_slot)
        w->first = 0;           /* maybe the earliest left: scan again */
    c->flags &= ~(uint32_t)TF_IN_WHEEL;
}

void tw_schedule(struct tcp_layer *tl, struct tern_conn *c, uint64_t at)
{
    tcp_wheel *w = &tl->wheel;
    tw_cancel(tl, c);
    uint64_t tick = at >> TW_SHIFT;
    if (tick <= w->cur)
        tick = w->cur + 1;
    else if (tick > w->cur + TW_SLOTS - 1)
        tick = w->cur + TW_SLOTS - 1;
    uint32_t s = (uint32_t)tick & TW_MASK;
    c->w_slot = s;
    c->w_prev = TCP_NIL;
    c->w_next = w->slot[s];
    if (c->w_next != TCP_NIL)
        tl->conns[c->w_next].w_prev = c->idx;
    w->slot[s] = c->idx;
    w->bits[s >> 6] |= 1ull << (s & 63);
    if (w->first && tick < w->first)
        w->first = tick;
    c->t_wheel = at;
    c->flags |= TF_IN_WHEEL;
}

/* The earliest filed tick, by a scan of the bitmap. */
static uint64_t tw_scan(const tcp_wheel *w)
{
    uint32_t from = (uint32_t)(w->cur + 1) & TW_MASK;
    /* scan the bitmap from `from`, wrapping once */
    for (uint32_t k = 0; k <= TW_SLOTS / 64; k++) {
        uint32_t word = ((from >> 6) + k) & (TW_SLOTS / 64 - 1);
        uint64_t bits = w->bits[word];
        if (k == 0)
            bits &= ~0ull << (from & 63);
        else if (k == TW_SLOTS / 64)
            bits &= (from & 63) ? ~(~0ull << (from & 63)) : 0;
        if (bits) {
            uint32_t s = word * 64 + (uint32_t)__builtin_ctzll(bits);
            uint64_t dist = (s - from) & TW_MASK;
            return w->cur + 1 + dist;
        }
    }
    return UINT64_MAX;
}

/* Kept in w->first between changes: most polls find the wheel as the last
 * one left it. */
uint64_t tw_next(struct tcp_layer *tl, uint64_t now)
{
    tcp_wheel *w = &tl->wheel;
    (void)now;
    if (!w->first)
        w->first = tw_scan(w);
    return w->first == UINT64_MAX ? TERN_NEVER : w->first << TW_SHIFT;
}

/* The first tick in [p, last] whose slot holds a conn, or last + 1. A word
 * of the bitmap covers 64 consecutive ticks, so one word per step. */
static uint64_t tw_busy(const tcp_wheel *w, uint64_t p, uint64_t last)
{
    while (p <= last) {
        uint32_t s = (uint32_t)p & TW_MASK;
        uint64_t bits = w->bits[s >> 6] >> (s & 63);
        if (bits) {
            p += (uint64_t)__builtin_ctzll(bits);
            return p <= last ? p : last + 1;
        }
        p += 64 - (s & 63);
    }
    return last + 1;
}

uint64_t tw_run(tern_stack *st, uint64_t now,
                void (*fn)(tern_stack *, struct tern_conn *, uint64_t))
{
    struct tcp_layer *tl = TL(st);
    tcp_wheel *w = &tl->wheel;
    uint64_t now_tick = now >> TW_SHIFT;
    if (now_tick <= w->cur)
        return tw_next(tl, now);
    uint64_t p = w->cur + 1;
    if (now_tick - w->cur > TW_SLOTS)
        p = now_tick - TW_SLOTS + 1;
    for (p = tw_busy(w, p, now_tick); p <= now_tick;
         p = tw_busy(w, p + 1, now_tick)) {
        w->cur = p;             /* anything filed now lands after p */
        uint32_t s = (uint32_t)p & TW_MASK;
        /* take entries one at a time: handlers may cancel or re-file
         * other conns of this slot */
        while (w->slot[s] != TCP_NIL) {
            struct tern_conn *c = &tl->conns[w->slot[s]];
            tw_cancel(tl, c);
            if ((c->t_wheel >> TW_SHIFT) <= now_tick)
                fn(st, c, now);
            else
                tw_schedule(tl, c, c->t_wheel);
        }
    }
    w->cur = now_tick;
    return tw_next(tl, now);
}

void conn_timer_update(tern_stack *st, struct tern_conn *c)
{
    uint64_t at = c->t_rtx < c->t_ack ? c->t_rtx : c->t_ack;
    if (at == TERN_NEVER)
        return;                 /* a stale filing fires and finds nothing */
    if (!(c->flags & TF_IN_WHEEL) || at < c->t_wheel)
        tw_schedule(TL(st), c, at);
}
