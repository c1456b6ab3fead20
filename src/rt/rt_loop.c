/* rt_loop.c - the per-core loop: rx burst -> tern_input -> app iter ->
 * tern_poll -> sleep (block mode) or spin (busy mode). The clock is read once
 * per iteration; apps stamp their requests with core->now. Block mode with
 * rt_params.spin_us first spins a while after the last frame (spin_adapt). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <time.h>

#include "rt_int.h"

/* Sleep until traffic on a driver fd, the stop event, or `next`; false
 * when it did not sleep (a deadline is due, or a link cannot wake us). */
static bool core_sleep(rt_core *c, uint64_t next, uint64_t now)
{
    rt *r = c->rt;
    struct pollfd fds[RT_MAX_EPS + 2];
    unsigned n = 0;
    for (unsigned i = 0; i < c->nep; i++) {
        if (r->steer && c->idx >= r->nq)
            break;             /* steering: no queue, the rings wake us */
        int fd = rt_ep_wait_fd(&c->ep[i]);
        if (fd < 0)
            return false;      /* this link cannot wake us: keep spinning */
        fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
    }
    if (r->steer)
        fds[n++] = (struct pollfd){.fd = c->wake_fd, .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = rt_stop_fd(), .events = POLLIN};
    struct timespec ts, *tsp = &ts;
    if (r->p.poll_timeout_ms >= 0) {
        /* Fixed timeout, like epoll_wait(..., timeout) in a kernel program. */
        ts.tv_sec = r->p.poll_timeout_ms / 1000;
        ts.tv_nsec = (r->p.poll_timeout_ms % 1000) * 1000000L;
        if (next != TERN_NEVER && next > now &&
            next - now < (uint64_t)r->p.poll_timeout_ms * 1000000ull) {
            ts.tv_sec = (time_t)((next - now) / 1000000000ull);
            ts.tv_nsec = (long)((next - now) % 1000000000ull);
        }
    } else if (next == TERN_NEVER) {
        tsp = NULL;
    } else {
        uint64_t d = next > now ? next - now : 0;
        ts.tv_sec = (time_t)(d / 1000000000ull);
        ts.tv_nsec = (long)(d % 1000000000ull);
    }
    if (tsp && tsp->tv_sec == 0 && tsp->tv_nsec == 0)
        return false;
    if (r->steer && rt_steer_sleep_begin(c))
        return false;
    c->sleeps++;
    ppoll(fds, n, tsp, NULL);
    if (r->steer)
        rt_steer_sleep_end(c);
    return true;
}

/* One iteration; returns frames received. */
static unsigned core_step(rt_core *c, bool run_iter, uint64_t *next_out)
{
    rt *r = c->rt;
    tern_buf *frames[2 * RT_BURST];
    uint64_t now = rt_now_ns();
    unsigned got = 0;
    c->now = now;
    if (r->steer) {
        got = rt_steer_rx(c, frames);
        if (got)
            tern_input(c->ep[0].st, frames, got, now);
    }
    for (unsigned i = 0; i < c->nep && !r->steer; i++)
        got += rt_ep_input(&c->ep[i], frames, now);
    if (run_iter && r->h.iter)
        r->h.iter(c);
    uint64_t next = TERN_NEVER;
    for (unsigned i = 0; i < c->nep; i++) {
        uint64_t d = tern_poll(c->ep[i].st, now);
        if (d < next)
            next = d;
    }
    if (c->ml) {
        for (int end = 0; end < 2; end++) {
            uint64_t d = tern_memlink_next_event(c->ml, end);
            if (d < next)
                next = d;
        }
    }
    if (r->steer)
        rt_steer_kick(c);
    c->iterations++;
    c->rx_frames += got;
    *next_out = next;
    return got;
}

/* The app's work so far, for the speed windows. */
static uint64_t core_work(rt_core *c)
{
    rt *r = c->rt;
    return r->h.work ? r->h.work(c) : c->rx_frames;
}

/* The spin window, after cpuidle's haltpoll governor, adjusted at each
 * wake-up: `gap` is the time from the last frame before the sleep to the
 * first after it (UINT64_MAX: the wake-up brought none, a timer or the
 * stop event). A gap within the maximum means a spin that long would have
 * caught the frame without the sleep and wake-up: the window doubles
 * (from a quarter of the maximum). A longer gap halves it, down to none,
 * so a server whose traffic pauses or trickles stops spinning. A spin
 * that finds it lost the CPU for a while (another task wants it) stops
 * and starts over from none. */
#define SPIN_MIN_NS 1000u
#define SPIN_PREEMPT_NS 100000u

static void spin_adapt(rt_core *c, uint64_t gap, uint64_t max)
{
    if (gap <= max) {
        uint64_t w = c->spin_win ? 2 * c->spin_win : max / 4;
        c->spin_win = w < max && w >= SPIN_MIN_NS ? w : max;
    } else {
        c->spin_win /= 2;
        if (c->spin_win < SPIN_MIN_NS)
            c->spin_win = 0;
    }
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

void rt_core_loop(rt_core *c)
{
    bool busy = c->rt->p.busy || c->ml;
    const uint64_t spin_max = busy ? 0 : (uint64_t)c->rt->p.spin_us * 1000u;
    bool woke = false, spinning = false;
    uint64_t spun_at = 0;
    c->last_rx = rt_now_ns();
    speed_start(&c->speed, rt_now_ns(), core_work(c), c->iterations);
    while (!rt_stopping() && !c->stop) {
        uint64_t next;
        unsigned got = core_step(c, true, &next);
        if (speed_due(&c->speed, c->now, c->iterations))
            speed_tick(&c->speed, rt_now_ns(), core_work(c), c->iterations);
        if (spin_max) {
            if (woke)
                spin_adapt(c, got ? c->now - c->last_rx : UINT64_MAX,
                           spin_max);
            woke = false;
            if (got) {
                c->spin_hits += spinning;
                c->last_rx = c->now;
                spinning = false;
            } else if (spinning && c->now - spun_at > SPIN_PREEMPT_NS) {
                /* A turn without frames takes well under a microsecond:
                 * this one lost the CPU to another task, which a spin
                 * only delays further. Sleep, and adapt from scratch. */
                c->spin_win = 0;
                spinning = false;
            } else if (c->now - c->last_rx < c->spin_win) {
                spinning = true;
                spun_at = c->now;
                cpu_relax();
                continue;
            }
        }
        if (!got && !busy) {
            woke = core_sleep(c, next, c->now);
            spinning = false;
        }
    }
    /* the last, partial window too: a short run may have no other */
    speed_tick(&c->speed, rt_now_ns(), core_work(c), c->iterations);
}

/* Connections of this core's stacks whose FIN exchange is unfinished. */
static uint32_t core_closing(const rt_core *c)
{
    uint32_t n = 0;
    for (unsigned i = 0; i < c->nep; i++)
        n += tern_tcp_closing_count(c->ep[i].st);
    return n;
}

/* The drain's bound: 15 RTOs at the core's default minimum (200 ms), i.e.
 * the first RTO and three backed-off ones (1 + 2 + 4 + 8). */
#define DRAIN_RTO_MS 200u
#define DRAIN_LIMIT_MS (15u * DRAIN_RTO_MS)

/* After the app's finish hook: keep the stacks running so FINs, ACKs and
 * retransmissions leave. Stop once no connection is still closing (its
 * FIN exchanged and acknowledged, FIN_WAIT_2 and LAST_ACK included: a
 * lost FIN or ACK costs an RTO, and a peer that never sees our FIN may
 * wait for it for good) and the link has been quiet for a moment; or at
 * DRAIN_LIMIT_MS, saying so. */
void rt_core_drain(rt_core *c)
{
    uint64_t start = rt_now_ns(), quiet_since = start, checked = 0;
    /* In-process links answer within microseconds; a real peer needs time
     * to send its FIN after ours, and that FIN must still be ACKed. */
    const uint64_t max_ns = (uint64_t)DRAIN_LIMIT_MS * 1000000ull;
    const uint64_t quiet_ns = (c->ml ? 2 : 100) * 1000000ull;
    uint32_t closing = core_closing(c);
    for (;;) {
        uint64_t next;
        unsigned got = core_step(c, false, &next);
        uint64_t now = c->now;
        if (got)
            quiet_since = now;
        bool pending = c->ml && (tern_memlink_pending(c->ml, 0) ||
                                 tern_memlink_pending(c->ml, 1));
        if (pending)
            quiet_since = now;
        if (now - checked >= 1000000ull) {      /* a walk of every slot */
            closing = core_closing(c);
            checked = now;
        }
        if (!closing && now - quiet_since > quiet_ns)
            break;
        if (now - start > max_ns) {
            if (closing)
                fprintf(stderr, "tern: %u connection(s) still closing "
                        "after %u ms (no ACK of our FIN, or no FIN from "
                        "the peer); exiting anyway\n", closing,
                        DRAIN_LIMIT_MS);
            break;
        }
    }
    /* Steering: the other cores may still need this one (it reads their
     * frames or sends them): keep serving until every core is done. */
    rt *r = c->rt;
    rt_steer_drained(r, 1);
    while (r->steer && atomic_load(&r->drained) < r->p.ncores) {
        uint64_t next;
        if (!core_step(c, false, &next))
            core_sleep(c, next, c->now);
    }
}
