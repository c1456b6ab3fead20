/* tern-kv - a key-value server speaking the Redis protocol on the tern
 * stack, for redis-cli, redis-benchmark and client libraries. Built as any
 * program embedding tern would be: tern.h and tern_linux.h's runtime
 * (tern_rt_run, with software steering, the per-loop hook and per-core
 * statistics), nothing of the library's inside.
 *
 * Requests are parsed in place inside the recv callback and the replies to
 * everything a segment carried leave in one send, with the ACK
 * (kv_conn.h). Replies the send buffer or the buffer pool refuses wait in
 * the connection's backlog and are retried from cb.acked and cb.writable;
 * input that arrives meanwhile is kept unconsumed, so the receive window
 * closes and a client that does not read its replies slows itself down.
 * Every core serves its own connections from one shared table (kv_store.h
 * says why). */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_report.h"
#include "ip6_config.h"
#include "kv_conn.h"
#include "kv_opts.h"
#include "kv_report.h"
#include "parse.h"
#include "results.h"
#include "tern.h"
#include "tern_linux.h"

typedef struct kvc {
    kv_conn kv;
    bytebuf out;            /* replies the send buffer refused */
    size_t held;            /* input bytes not yet reported consumed */
    bool paused;            /* kv.in may hold requests to serve */
    bool fin;               /* the peer sent FIN */
    bool shut;              /* we sent ours (after QUIT or an error) */
    kv_ctx *cx;
} kvc;

static common_opts co;
static kv_opts ko;
static kv_server *srv;
static kv_ctx *core_ctx[OPTS_MAX_CORES];   /* per runtime core */
static __thread bytebuf scratch;           /* the replies of one callback */

static int64_t now_ms(void) { return (int64_t)(tern_now_ns() / 1000000); }

/* The clock for expiry is read once per loop turn, by the first callback
 * after the loop hook (the loop may have slept since), not once per
 * request: the requests of one turn are microseconds apart, and at
 * pipeline depth 16 a turn serves hundreds. Each core is one thread. */
static __thread bool clock_stale = true;

static void clock_fresh(kv_ctx *cx)
{
    if (clock_stale) {
        cx->now_ms = now_ms();
        clock_stale = false;
    }
}

/* Send what the backlog holds; false when the stack refused some (no send
 * space, or -TERN_ENOBUFS: acked or writable comes back). */
static bool drain(tern_stack *st, tern_conn *c, kvc *k)
{
    while (k->out.len) {
        long s = tern_tcp_send(st, c, bb_data(&k->out), k->out.len);
        if (s <= 0)
            return false;
        bb_consume(&k->out, (size_t)s);
    }
    return true;
}

/* Send replies, behind any backlog; keep what the stack refuses.
 * false when memory ran out and the connection was aborted (k is gone). */
static bool transmit(tern_stack *st, tern_conn *c, kvc *k, const bytebuf *b)
{
    if (!b->len)
        return true;
    kv_count(&k->cx->bytes_out, b->len);
    size_t s = 0;
    if (!k->out.len) {
        long r = tern_tcp_send(st, c, bb_data(b), b->len);
        s = r > 0 ? (size_t)r : 0;
    }
    if (s < b->len && !bb_append(&k->out, bb_data(b) + s, b->len - s,
                                 SIZE_MAX)) {
        tern_tcp_abort(st, c);
        return false;
    }
    return true;
}

/* Once the replies are out and no kept request waits: after QUIT or a
 * protocol error send FIN but keep reading (and dropping) until the
 * client's, so its unread input cannot turn our close into a reset that
 * destroys the error reply; after the client's FIN, close. */
static void maybe_close(tern_stack *st, tern_conn *c, kvc *k)
{
    if (k->out.len || k->paused)
        return;
    if (k->fin) {
        tern_tcp_close(st, c);
    } else if (k->kv.closing && !k->shut) {
        k->shut = true;
        tern_tcp_shutdown(st, c);
    }
}

static void *srv_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)lu;
    kvc *k = calloc(1, sizeof *k);
    if (!k) {
        tern_tcp_abort(st, c);
        return NULL;
    }
    k->cx = core_ctx[tern_rt_core(st)];
    kv_count(&k->cx->conns_opened, 1);
    return k;
}

static size_t srv_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                       const uint8_t *d, size_t len)
{
    (void)b;
    kvc *k = user;
    if (!k || k->kv.closing)
        return len;
    kv_ctx *cx = k->cx;
    kv_count(&cx->bytes_in, len);
    if (k->out.len || k->paused) {
        /* Behind unsent replies: keep the input, keep the window shut. */
        if (!kv_conn_keep(&k->kv, cx, (const char *)d, len)) {
            tern_tcp_abort(st, c);
            return len;
        }
        k->held += len;
        k->paused = true;
        return 0;
    }
    clock_fresh(cx);
    scratch.len = scratch.off = 0;
    int r = kv_conn_input(&k->kv, cx, (const char *)d, len, &scratch);
    if (!transmit(st, c, k, &scratch))
        return len;
    size_t hold = 0;
    if (r == KV_PAUSED) {
        k->paused = true;
        hold = k->kv.in.len < len ? k->kv.in.len : len;
        k->held += hold;
    }
    maybe_close(st, c, k);
    return len - hold;
}

/* The backlog drained: serve the kept requests, then reopen the window
 * for the input no longer kept (an incomplete request is consumed).
 * false when the connection was aborted (k is gone). */
static bool resume(tern_stack *st, tern_conn *c, kvc *k)
{
    kv_ctx *cx = k->cx;
    clock_fresh(cx);
    while (k->paused && !k->out.len) {
        scratch.len = scratch.off = 0;
        int r = kv_conn_input(&k->kv, cx, NULL, 0, &scratch);
        k->paused = r == KV_PAUSED;
        if (!transmit(st, c, k, &scratch))
            return false;
    }
    size_t keep = k->paused ? (k->kv.in.len < k->held ? k->kv.in.len
                                                      : k->held)
                            : 0;
    if (k->held > keep) {
        tern_tcp_consumed(st, c, k->held - keep);
        k->held = keep;
    }
    return true;
}

/* Send space or buffers came back (acked, writable): the backlog first,
 * then the requests kept behind it. */
static void retry(tern_stack *st, tern_conn *c, kvc *k)
{
    if (!k || !drain(st, c, k))
        return;
    if (k->paused && !resume(st, c, k))
        return;
    maybe_close(st, c, k);
}

static void srv_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    (void)bytes;
    retry(st, c, user);
}

static void srv_writable(tern_stack *st, tern_conn *c, void *user)
{
    retry(st, c, user);
}

static void srv_peer_closed(tern_stack *st, tern_conn *c, void *user)
{
    kvc *k = user;
    if (!k) {
        tern_tcp_close(st, c);
        return;
    }
    k->fin = true;
    maybe_close(st, c, k);
}

static void srv_closed(tern_stack *st, tern_conn *c, void *user, int reason)
{
    (void)st;
    (void)c;
    (void)reason;
    kvc *k = user;
    if (!k)
        return;
    kv_count(&k->cx->conns_closed, 1);
    kv_conn_free(&k->kv);
    bb_free(&k->out);
    free(k);
}

/* ---- the runtime's callbacks (tern_rt_config) ---- */

static void configure(void *app, unsigned core, tern_config *cfg)
{
    (void)app;
    (void)core;
    app_ip6_config(&co, cfg);
    cfg->cb.accepted = srv_accepted;
    cfg->cb.recv = srv_recv;
    cfg->cb.acked = srv_acked;
    cfg->cb.writable = srv_writable;
    cfg->cb.peer_closed = srv_peer_closed;
    cfg->cb.closed = srv_closed;
    if (co.max_conns)
        cfg->max_conns = (uint32_t)co.max_conns;
    else if (cfg->max_conns < 4096)
        cfg->max_conns = 4096;        /* redis-benchmark opens many */
    if (co.time_wait_ms)
        cfg->time_wait_ms = (uint32_t)co.time_wait_ms;
}

static int start(void *app, unsigned core, tern_stack *st)
{
    (void)app;
    kv_ctx *cx = kv_ctx_new(srv);
    if (!cx) {
        fprintf(stderr, "%s: out of memory\n", co.prog);
        return -1;
    }
    cx->now_ms = now_ms();
    core_ctx[core] = cx;
    int rc = tern_tcp_listen(st, (uint16_t)ko.port, NULL);
    if (rc) {
        fprintf(stderr, "%s: listen on port %u: %s\n", co.prog,
                (unsigned)ko.port, tern_strerror(rc));
        return -1;
    }
    return 0;
}

/* Every loop turn: expiry sweeps (kv_tick). */
static void loop(void *app, unsigned core, tern_stack *st, uint64_t now_ns)
{
    (void)app;
    (void)st;
    kv_tick(core_ctx[core], (int64_t)(now_ns / 1000000));
    clock_stale = true;
}

/* Commands served on a core (the work rate of the speed figures). */
static uint64_t work(void *app, unsigned core)
{
    (void)app;
    kv_ctx *cx = core_ctx[core];
    return cx ? atomic_load_explicit(&cx->commands, memory_order_relaxed) : 0;
}

/* ---- the report, from the runtime's statistics ---- */

static void report_core(report *rp, unsigned i, const tern_rt_core_stats *s)
{
    rep_core_begin(rp, i);
    rep_u64(rp, "cpu", s->cpu);
    rep_u64(rp, "rx_frames", s->rx_frames);
    rep_core_tcp(rp, &s->counters);
    if (co.steer) {
        const uint64_t v[CORE_STEER_FIGURES] = {
            s->steer_kept, s->steer_out, s->steer_in, s->steer_broadcast,
            s->steer_ring_drops, s->steer_copy_drops, s->steer_tx_forwarded,
            s->steer_tx_drops};
        rep_core_steer(rp, v);
    }
    rep_f(rp, "best_ghz", s->best_ghz, 2);
    rep_f(rp, "full_share", s->full_share, 3);
    rep_f(rp, "rate_full", s->rate_full, 0);
    rep_obj_end(rp);
}

static void add_counters(tern_counters *sum, const tern_counters *c)
{
    uint64_t *o = (uint64_t *)sum;
    const uint64_t *s = (const uint64_t *)c;
    for (size_t k = 0; k < sizeof *sum / sizeof *o; k++)
        o[k] += s[k];
}

static void report_out(void)
{
    unsigned n = tern_rt_ncores();
    tern_rt_core_stats s;
    tern_counters all;
    memset(&all, 0, sizeof all);
    uint64_t conns = 0, sleeps = 0, spin_hits = 0;
    double best = 0, share = 1, rate_full = 0, rate_all = 0;
    for (unsigned i = 0; i < n; i++) {
        if (tern_rt_get_core_stats(i, &s))
            continue;
        add_counters(&all, &s.counters);
        conns += s.conns;
        sleeps += s.sleeps;
        spin_hits += s.spin_hits;
        best = s.best_ghz > best ? s.best_ghz : best;
        share = s.full_share < share ? s.full_share : share;
        rate_full += s.rate_full;
        rate_all += s.rate_all;
    }
    report rp;
    rep_begin(&rp, stdout, co.json, co.prog);
    rep_str(&rp, "driver", co.driver);
    rep_u64(&rp, "cores", co.ncores);
    /* who ended the run: a server found gone says so in its report */
    int sender = 0, sig = tern_rt_stop_signal(&sender);
    rep_u64(&rp, "stop_signal", (uint64_t)sig);
    rep_u64(&rp, "stop_sender_pid", (uint64_t)sender);
    kv_report(&rp, srv, &ko);
    rep_u64(&rp, "retransmits", all.tcp_retransmits);
    rep_u64(&rp, "tcp_conns", conns);
    /* How the loops waited: sleeps, and turns whose frames came while
     * spinning (--busy-poll) instead of after a wake-up. */
    rep_u64(&rp, "sleeps", sleeps);
    rep_u64(&rp, "spin_hits", spin_hits);
    tern_rt_link_stats ls;
    if (tern_rt_get_link_stats(&ls) == 0) {
        rep_obj_begin(&rp, "link");
        rep_u64(&rp, "frames_tx", ls.tx_frames);
        rep_u64(&rp, "frames_rx", ls.rx_frames);
        rep_u64(&rp, "drops", ls.drops);
        rep_obj_end(&rp);
    }
    if (n > 1) {
        rep_obj_begin(&rp, "per_core");
        for (unsigned i = 0; i < n; i++)
            if (tern_rt_get_core_stats(i, &s) == 0)
                report_core(&rp, i, &s);
        rep_obj_end(&rp);
    }
    /* Over the cores: the fastest probe, the least share of time at full
     * speed, commands per second summed. */
    rep_obj_begin(&rp, "host_speed");
    rep_f(&rp, "best_ghz", best, 2);
    rep_f(&rp, "full_share", share, 3);
    rep_f(&rp, "rate_full", rate_full, 0);
    rep_f(&rp, "rate_all", rate_all, 0);
    rep_obj_end(&rp);
    report_counters(&rp, "counters", &all);
    rep_end(&rp);
}

/* Flags of the common set that the runtime of tern_linux.h has no use
 * for: refused in words rather than ignored. */
static void refuse_internal_flags(void)
{
    if (co.seen_mac)
        opts_fail(&co, "--mac: tern-kv takes the interface's own MAC");
    if (co.seen_pcap)
        opts_fail(&co, "--pcap: not available in tern-kv (capture on the "
                       "peer's side with tcpdump)");
    if (co.poll_timeout_ms >= 0)
        opts_fail(&co, "--poll-timeout: tern-kv sleeps until a frame or the "
                       "stack's next deadline (or use --poll busy)");
}

int main(int argc, char **argv)
{
    common_defaults(&co, "tern-kv", FAMILY_TERN);
    kv_opts_parse(&co, &ko, argc, argv);
    refuse_internal_flags();
    srv = kv_server_new(co.prog, ko.maxmemory, now_ms());
    if (!srv) {
        fprintf(stderr, "%s: out of memory\n", co.prog);
        return 1;
    }
    tern_rt_config rc;
    tern_rt_config_defaults(&rc);
    rc.driver = co.driver;
    rc.iface = co.iface;
    rc.ip = co.ip;
    rc.prefix_len = (uint8_t)co.prefix;
    rc.gateway = co.gw;
    rc.cpus = co.cores;
    rc.ncpus = co.ncores;
    rc.busy_poll = co.poll == POLL_BUSY;
    rc.spin_us = (unsigned)co.busy_poll_us;
    rc.steer = co.steer;
    rc.steer_queues = (unsigned)co.steer_queues;
    rc.pool_size = (unsigned)ko.pool_size;
    rc.extra = co.driver_opts;
    rc.configure = configure;
    rc.start = start;
    rc.loop = loop;
    rc.work = work;
    if (!co.json) {
        char at[APP_ENDPOINTS_LEN];
        fprintf(stderr, "%s: serving %s on %s %s (Ctrl-C prints the "
                "figures)\n", co.prog, app_endpoints(&co, (unsigned)ko.port, at),
                co.driver, co.iface ? co.iface : "");
    }
    char err[256];
    int rc_ = tern_rt_run(&rc, err, sizeof err);
    if (rc_) {
        fprintf(stderr, "%s: %s\n", co.prog, err);
    } else {
        int sender = 0, sig = tern_rt_stop_signal(&sender);
        if (sig && sig != SIGINT)   /* Ctrl-C is the usual way out */
            fprintf(stderr, "%s: stopped by signal %d (%s) from pid %d\n",
                    co.prog, sig, strsignal(sig), sender);
        report_out();
    }
    kv_server_free(srv);
    return rc_ ? 1 : 0;
}
