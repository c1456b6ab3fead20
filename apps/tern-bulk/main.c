/* tern-bulk - bulk transfer on the tern stack with every byte verified.
 * Sender: writes each segment's payload into a pool buffer (a generator:
 * pattern_fill at the stream offset, timed and reported as gen_s) and
 * queues it with tern_tcp_send_buf, no copy; the stack computes the TCP
 * checksum by reading the payload, as for any application's bytes.
 * Receiver: checks every byte in place in the recv callback, or SHA-256s
 * the stream (--verify hash, for kernel peers like nc or Python). With
 * --driver mem both stacks run in one thread per core; --link RATE then
 * also limits the mem link to that line rate.
 *
 * Shortcuts, each named in the output's data_path: --app-sum (the fill
 * works out the payload's checksum from the pattern's arithmetic and hands
 * it over with tern_tcp_send_bufs, so the stack does not read the payload
 * to send it) and the mem link's --offload (checksums, TSO/LRO, payload by
 * reference, rxsum: the link sums what it copies). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_opts.h"
#include "bulk.h"
#include "clock.h"
#include "pattern.h"
#include "results.h"
#include "rt_app.h"

typedef struct bcore bcore;

typedef struct cstream {        /* sender side of one connection */
    tern_conn *c;
    bcore *bc;                  /* its core, for the acked callback */
    uint64_t off, total;
    uint32_t chunk;             /* payload per buffer: MSS or less, or with
                                   big_bufs whole segments up to a TSO frame */
    bool fin, closed, copy_mode;
    bool pattern;               /* --verify pattern */
    bool summed;                /* --app-sum: the app hands the sums */
    sha256 hash;                /* --verify hash: SHA-256 of what was sent */
} cstream;

/* Receiver side of one connection: the stream and the core whose clock
 * stamps it (rx first: stream_end and cb_closed take it as a bulk_rx). */
typedef struct rstream {
    bulk_rx rx;
    rt_core *core;
} rstream;

struct bcore {
    cstream *cli;
    unsigned ncli, closed;
    uint64_t sent, t_start, t_end;
    uint64_t gen_ns;            /* time spent writing payload (the fill) */
    bulk_rx *ended;             /* finished receive streams */
    size_t nended, cap;
    bool failed;
    rt_ep *dad_ep;              /* connects put off while our IPv6
                                   addresses pass DAD (rt_app_dad_wait) */
    uint64_t dad_since;
};

static common_opts co;
static bulk_opts bo;
static bcore *cores;
static atomic_uint streams_ended;
static uint8_t *copy_src;       /* pattern scratch for the copying fallback */
static bool nic_sums;           /* the (mem) NIC computes TCP checksums */
/* The mem NIC does TSO and LRO: buffers of 64 KiB, as a driver with large
 * receive buffers and a GSO-sized send path use; the wire still carries
 * MSS-sized segments. */
static bool big_bufs;
#define BIG_BUF_SIZE (TERN_HEADROOM + 65536u)
#define BIG_BUF_CONNS 16        /* more conns keep 2 KiB buffers (memory) */
/* Segments per send buffer: a 256 KiB window holds 11, so the sender
 * rarely has room for only part of one (which goes out segment by
 * segment); TSO frames take several (a frame's payload is < 64 KiB). */
#define BIG_CHUNK_SEGS 16u

/* ---- sender ---- */

/* A zero-copy send of b failed with rc: b goes back. true: wait (acked
 * or iter retries); false: the stack takes no buffers, copy instead. */
static bool send_refused(tern_stack *st, cstream *s, tern_buf *b, long rc)
{
    tern_buf_release(st, b);
    if (rc == -TERN_EAGAIN || rc == -TERN_ENOBUFS || rc == -TERN_ENOMEM)
        return true;
    s->copy_mode = true;
    return false;
}

/* Buffers pump_pattern allocates, fills and queues per call to the stack. */
#define PUMP_BATCH 16u

/* pump's usual case (--verify pattern, zero copy): whole chunks while the
 * space lasts, a batch at a time: allocated with one call, each filled
 * (and with --app-sum summed; the fill timed per batch), queued with one
 * call; no test of
 * pump_any's other modes. true: stop here; false: pump_any takes over
 * (the last, short chunk, or a buffer the stack refused). */
static bool pump_pattern(tern_stack *st, cstream *s, size_t *space)
{
    tern_buf *bufs[PUMP_BATCH];
    uint32_t sums[PUMP_BATCH];
    const uint32_t n = s->chunk;
    while (s->c && s->total - s->off >= n) {
        uint64_t whole = (s->total - s->off) / n;
        size_t fit = *space / n;
        unsigned want = fit < PUMP_BATCH ? (unsigned)fit : PUMP_BATCH;
        if (whole < want)
            want = (unsigned)whole;
        if (!want)
            return true;                      /* wait for acked */
        unsigned got = tern_buf_alloc_n(st, bufs, want);
        if (!got)
            return true;                      /* pool dry: retried by iter */
        uint64_t t0 = now_ns();
        for (unsigned i = 0; i < got; i++) {
            uint64_t off = s->off + (uint64_t)i * n;
            if (s->summed)
                sums[i] = pattern_fill_sum(bufs[i]->data, off, n);
            else
                pattern_fill(bufs[i]->data, off, n);
            bufs[i]->len = n;
        }
        s->bc->gen_ns += now_ns() - t0;
        long rc = tern_tcp_send_bufs(st, s->c, bufs, s->summed ? sums : NULL,
                                     got);
        unsigned sent = rc > 0 ? (unsigned)rc : 0;
        s->off += (uint64_t)sent * n;
        *space -= (size_t)sent * n;
        if (sent < got) {                     /* refused: the rest back */
            for (unsigned i = sent + 1; i < got; i++)
                tern_buf_release(st, bufs[i]);
            return send_refused(st, s, bufs[sent], rc > 0 ? -TERN_EAGAIN : rc);
        }
    }
    return false;
}

/* Every other mode (and the FIN), out of line: pump_pattern's loop saves
 * no registers for it. */
static __attribute__((noinline)) void pump_any(tern_stack *st, cstream *s,
                                               size_t space)
{
    while (s->c && s->off < s->total) {
        uint64_t left = s->total - s->off;
        size_t n = left < s->chunk ? (size_t)left : s->chunk;
        if (space < n)
            return;                           /* wait for acked */
        long rc;
        if (!s->copy_mode) {
            tern_buf *b = tern_buf_alloc(st);
            if (!b)
                return;                       /* pool dry: retried by iter */
            bool summed = s->summed;
            uint32_t sum = 0;
            uint64_t t0 = now_ns();
            if (summed)
                sum = pattern_fill_sum(b->data, s->off, n);
            else if (bo.verify != VERIFY_NONE)
                pattern_fill(b->data, s->off, n);
            s->bc->gen_ns += now_ns() - t0;
            b->len = (uint32_t)n;
            sha256 before;
            if (bo.verify == VERIFY_HASH) {   /* the stack owns b after send */
                before = s->hash;
                sha256_update(&s->hash, b->data, n);
            }
            rc = summed ? tern_tcp_send_buf_sum(st, s->c, b, sum)
                        : tern_tcp_send_buf(st, s->c, b);
            if (rc == 0) {
                s->off += n;
                space -= n;
                continue;
            }
            if (bo.verify == VERIFY_HASH)
                s->hash = before;             /* not sent after all */
            if (send_refused(st, s, b, rc))
                return;
        }
        if (bo.verify != VERIFY_NONE)
            bulk_fill_timed(copy_src, s->off, n, &s->bc->gen_ns);
        rc = tern_tcp_send(st, s->c, copy_src, n);
        if (rc <= 0)
            return;
        if (bo.verify == VERIFY_HASH)
            sha256_update(&s->hash, copy_src, (size_t)rc);
        s->off += (uint64_t)rc;
        space -= (size_t)rc;
    }
    if (s->c && !s->fin && s->off >= s->total) {
        s->fin = true;
        tern_tcp_shutdown(st, s->c);
    }
}

static void pump(tern_stack *st, cstream *s)
{
    /* Asked once: only our own sends below use the space up. */
    size_t space = s->c ? tern_tcp_send_space(st, s->c) : 0;
    if (s->pattern && !s->copy_mode && pump_pattern(st, s, &space))
        return;
    pump_any(st, s, space);
}

/* ---- receiver ---- */

static void stream_end(rt_ep *ep, tern_conn *c, bulk_rx *rx)
{
    bcore *bc = &cores[ep->core->idx];
    bulk_rx_end(rx, ep->core->now);
    if (bc->nended == bc->cap) {
        bc->cap = bc->cap ? bc->cap * 2 : 16;
        bc->ended = realloc(bc->ended, bc->cap * sizeof *bc->ended);
    }
    bc->ended[bc->nended++] = *rx;
    tern_tcp_set_user(c, NULL);
    free(rx);
    unsigned n = atomic_fetch_add(&streams_ended, 1) + 1;
    if (bo.mode == MODE_SERVER && !co.json)
        fprintf(stderr, "%s: stream %u ended\n", co.prog, n);
    if (bo.mode == MODE_SERVER && bo.once && n >= bo.conns)
        rt_stop();
}

/* Payload bytes a pool buffer holds after the headroom. */
static size_t buf_room(tern_stack *st)
{
    tern_buf *b = tern_buf_alloc(st);
    if (!b)
        return 1024;
    size_t room = b->size - (size_t)(b->data - b->head);
    tern_buf_release(st, b);
    return room;
}

/* ---- callbacks ---- */

/* Callbacks per role (configure): a server endpoint only receives, a
 * client only sends, so the per-segment ones need not look up the
 * endpoint. */
static void *srv_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)c; (void)lu;
    rstream *r = malloc(sizeof *r);
    if (r) {
        bulk_rx_init(&r->rx, bo.verify);
        r->core = rt_ep_of(st)->core;
    }
    return r;
}

static void cb_connected(tern_stack *st, tern_conn *c, void *user)
{
    rt_ep *ep = rt_ep_of(st);
    bcore *bc = &cores[ep->core->idx];
    cstream *s = user;
    tern_tcp_info info;
    tern_tcp_get_info(st, c, &info);
    size_t room = buf_room(st);
    s->chunk = info.mss && info.mss < room ? info.mss : (uint32_t)room;
    if (big_bufs && info.mss) {         /* whole segments */
        size_t most = room < BIG_CHUNK_SEGS * info.mss ? room
                                                        : BIG_CHUNK_SEGS * info.mss;
        s->chunk = (uint32_t)(most / info.mss * info.mss);
    }
    s->pattern = bo.verify == VERIFY_PATTERN;
    s->summed = s->pattern && bo.app_sum && !nic_sums;
    if (!bc->t_start)
        bc->t_start = ep->core->now;
    pump(st, s);
}

static size_t srv_recv(tern_stack *st, tern_conn *c, void *user,
                       tern_buf *b, const uint8_t *d, size_t len)
{
    (void)st; (void)c; (void)b;
    rstream *r = user;
    if (r)
        bulk_rx_data_inline(&r->rx, d, len, r->core->now);
    return len;
}

static size_t cli_recv(tern_stack *st, tern_conn *c, void *user, tern_buf *b,
                       const uint8_t *d, size_t len)
{
    (void)st; (void)c; (void)user; (void)b; (void)d;
    return len;                 /* a sender ignores stray bytes */
}

static void cli_acked(tern_stack *st, tern_conn *c, void *user, size_t bytes)
{
    (void)c;
    cstream *s = user;
    s->bc->sent += bytes;
    pump(st, s);
}

static void cb_peer_closed(tern_stack *st, tern_conn *c, void *user)
{
    rt_ep *ep = rt_ep_of(st);
    if (ep->role == RT_SERVER && user)
        stream_end(ep, c, user);
    tern_tcp_close(st, c);
}

static void cb_closed(tern_stack *st, tern_conn *c, void *user, int reason)
{
    (void)c;
    rt_ep *ep = rt_ep_of(st);
    if (ep->role == RT_SERVER) {
        if (user) {                 /* ended without FIN: count it, bad */
            bcore *bc = &cores[ep->core->idx];
            bulk_rx *rx = user;
            if (bc->nended == bc->cap) {
                bc->cap = bc->cap ? bc->cap * 2 : 16;
                bc->ended = realloc(bc->ended, bc->cap * sizeof *bc->ended);
            }
            bc->ended[bc->nended++] = *rx;
            free(rx);
        }
        return;
    }
    bcore *bc = &cores[ep->core->idx];
    cstream *s = user;
    if (!s || s->closed)
        return;
    s->closed = true;
    s->c = NULL;
    bc->t_end = ep->core->now;
    if (s->off < s->total || reason != TERN_CLOSE_NORMAL) {
        if (!rt_stopping() && !ep->core->stop)
            fprintf(stderr, "%s: a stream closed early (%s)\n", co.prog,
                    rt_close_reason(reason));
        bc->failed = true;
    }
    if (++bc->closed == bc->ncli)
        rt_core_stop(ep->core);
}

/* ---- runtime hooks ---- */

/* The work hook (rt_hooks.work): payload bytes this core's receivers took
 * in; a core with only senders counts the bytes acked. */
static uint64_t work(rt_core *core)
{
    uint64_t in = 0;
    bool receives = false;
    for (unsigned e = 0; e < core->nep; e++)
        if (core->ep[e].role == RT_SERVER) {
            receives = true;
            in += tern_get_counters(core->ep[e].st)->tcp_bytes_in;
        }
    return receives ? in : cores[core->idx].sent;
}

static void configure(rt_ep *ep, tern_config *cfg)
{
    rt_app_ip6(&co, ep, cfg);
    if (ep->role == RT_SERVER) {
        cfg->cb.accepted = srv_accepted;
        cfg->cb.recv = srv_recv;
    } else {
        cfg->cb.connected = cb_connected;
        cfg->cb.recv = cli_recv;
        cfg->cb.acked = cli_acked;
    }
    cfg->cb.peer_closed = cb_peer_closed;
    cfg->cb.closed = cb_closed;
    if (bo.snd_buf)
        cfg->snd_buf = (uint32_t)bo.snd_buf;
    uint64_t need = bo.conns * 2 + 64;
    if (need > cfg->max_conns)
        cfg->max_conns = (uint32_t)need;
}

static tern_addr peer_addr(void)
{
    return bo.mode == MODE_CLIENT ? rt_app_addr(&bo.peer.addr)
                                  : rt_app_mem_server(&co);
}

static uint16_t peer_port(void)
{
    return bo.mode == MODE_CLIENT ? bo.peer.port : (uint16_t)bo.port;
}

/* Connect the streams not yet connected; 0 or the first tern_err. */
static int open_streams(rt_ep *ep, bcore *bc)
{
    tern_addr dst = peer_addr();
    for (unsigned k = 0; k < bc->ncli; k++) {
        int err = 0;
        if (bc->cli[k].c)
            continue;
        bc->cli[k].c = tern_tcp_connect(ep->st, &dst, peer_port(), 0,
                                        &bc->cli[k], &err);
        if (!bc->cli[k].c)
            return err ? err : TERN_ENOMEM;
    }
    return 0;
}

static int start(rt_core *core)
{
    bcore *bc = &cores[core->idx];
    for (unsigned e = 0; e < core->nep; e++) {
        rt_ep *ep = &core->ep[e];
        if (ep->role == RT_SERVER) {
            int rc = tern_tcp_listen(ep->st, (uint16_t)bo.port, NULL);
            if (rc) {
                snprintf(core->errmsg, sizeof core->errmsg,
                         "listen on port %u: %s", (unsigned)bo.port,
                         tern_strerror(rc));
                return -1;
            }
            continue;
        }
        int err = open_streams(ep, bc);
        if (err) {
            tern_addr dst = peer_addr();
            if (rt_app_dad_wait(ep->st, &dst, err, core->now,
                                &bc->dad_since)) {
                bc->dad_ep = ep;                /* iter tries again */
                continue;
            }
            rt_app_connect_error(core->errmsg, sizeof core->errmsg, ep, &dst,
                                 peer_port(), err);
            return -1;
        }
    }
    return 0;
}

/* Streams that stalled on an empty pool get another go every iteration. */
static void iter(rt_core *core)
{
    bcore *bc = &cores[core->idx];
    if (bc->dad_ep) {                   /* connects put off by DAD */
        int err = open_streams(bc->dad_ep, bc);
        tern_addr dst = peer_addr();
        if (!err || !rt_app_dad_wait(bc->dad_ep->st, &dst, err, core->now,
                                     &bc->dad_since)) {
            if (err) {
                char msg[200];
                rt_app_connect_error(msg, sizeof msg, bc->dad_ep, &dst,
                                     peer_port(), err);
                fprintf(stderr, "%s: %s\n", co.prog, msg);
                bc->failed = true;
                rt_core_stop(core);
            }
            bc->dad_ep = NULL;
        }
    }
    for (unsigned e = 0; e < core->nep; e++) {
        if (core->ep[e].role != RT_CLIENT)
            continue;
        /* (the counter first: this runs on every turn of a busy loop) */
        if (!bc->failed && bo.mode == MODE_CLIENT &&
            tern_get_counters(core->ep[e].st)->arp_resolve_failed) {
            char why[200];
            tern_addr peer = rt_app_addr(&bo.peer.addr);
            if (rt_app_arp_failed(&core->ep[e], &peer, why, sizeof why)) {
                fprintf(stderr, "%s: %s\n", co.prog, why);
                bc->failed = true;
                rt_core_stop(core);
                return;
            }
        }
        for (unsigned k = 0; k < bc->ncli; k++) {
            cstream *s = &bc->cli[k];
            if (s->c && s->chunk && !s->fin)
                pump(core->ep[e].st, s);
        }
    }
}

/* What the run's data path did beyond an application's ordinary work, as
 * "+"-joined names of the shortcuts taken; "application" when none: the
 * sender wrote the bytes, the stacks computed and checked every checksum
 * by reading the payload, every frame was copied, the receiver read every
 * byte. */
static void data_path(char *out, size_t n, const rt_params *p)
{
    out[0] = 0;
#define SHORTCUT_(cond, name)                                                \
    if (cond)                                                                \
        snprintf(out + strlen(out), n - strlen(out), "%s%s", *out ? "+" : "", \
                 name)
    bool mem = !strcmp(p->driver, "mem");
    uint32_t caps = mem ? p->mem_caps : 0;
    SHORTCUT_(bo.app_sum && bo.verify == VERIFY_PATTERN && !nic_sums,
              "app-sum");
    SHORTCUT_(caps & TERN_CAP_TX_L4_CSUM, "tx-csum-offload");
    SHORTCUT_(caps & TERN_CAP_RX_L4_CSUM, "rx-csum-offload");
    SHORTCUT_(mem && p->mem_rx_sum, "link-rx-sum");
    SHORTCUT_(caps & TERN_CAP_TSO, "tso");
    SHORTCUT_(caps & TERN_CAP_LRO, "lro");
    SHORTCUT_((caps & TERN_CAP_TSO) && (caps & TERN_CAP_LRO) && !p->mem_copy,
              "by-ref");
#undef SHORTCUT_
    if (!out[0])
        snprintf(out, n, "application");
}

static bool report_out(rt *r)
{
    report rp;
    tern_counters all;
    rt_counters(r, -1, &all);
    rep_begin(&rp, stdout, co.json, co.prog);
    rep_str(&rp, "driver", co.driver);
    rep_str(&rp, "mode", bo.mode == MODE_SERVER ? "server"
                         : bo.mode == MODE_CLIENT ? "client" : "both");
    rep_u64(&rp, "cores", co.ncores);
    rep_u64(&rp, "conns", bo.conns);
    if (co.offload)
        rep_str(&rp, "offload", co.offload);
    char path[128];
    data_path(path, sizeof path, rt_params_of(r));
    rep_str(&rp, "data_path", path);
    bulk_total tot;
    bulk_total_init(&tot);
    bool ok = true;
    unsigned mtu = 1500;
    if (bo.mode == MODE_CLIENT) {
        for (unsigned i = 0; i < co.ncores; i++) {
            tot.bytes += cores[i].sent;
            tot.streams += cores[i].ncli;
            ok &= !cores[i].failed;
            if (cores[i].t_start &&
                (!tot.t_first || cores[i].t_start < tot.t_first))
                tot.t_first = cores[i].t_start;
            if (cores[i].t_end > tot.t_last)
                tot.t_last = cores[i].t_end;
        }
        /* --verify hash: name what was sent, for the receiver to compare. */
        for (unsigned i = 0; bo.verify == VERIFY_HASH && i < co.ncores; i++)
            for (unsigned k = 0; k < cores[i].ncli && tot.nhash < 8; k++) {
                uint8_t d[32];
                sha256_final(&cores[i].cli[k].hash, d);
                sha256_hex(d, tot.hashes[tot.nhash++]);
            }
        bulk_report(&rp, &tot, bo.verify == VERIFY_HASH ? VERIFY_HASH
                                                        : VERIFY_NONE,
                    co.link_bps, mtu, true);
        ok &= tot.bytes == bo.bytes;
    } else {
        for (unsigned i = 0; i < co.ncores; i++) {
            for (size_t k = 0; k < cores[i].nended; k++)
                bulk_total_add(&tot, &cores[i].ended[k]);
            ok &= !cores[i].failed;
        }
        for (unsigned i = 0; bo.mode == MODE_BOTH && bo.verify == VERIFY_HASH &&
                             i < co.ncores; i++)
            for (unsigned k = 0; k < cores[i].ncli; k++)
                bulk_total_sent(&tot, &cores[i].cli[k].hash);
        bool verified = bulk_report(&rp, &tot, bo.verify, co.link_bps, mtu,
                                    true);
        if (bo.mode == MODE_BOTH)
            ok &= tot.bytes == bo.bytes &&
                  (bo.verify == VERIFY_NONE || verified);
        else if (bo.verify == VERIFY_PATTERN)
            ok &= tot.all_ok;
    }
    uint64_t gen_ns = 0;
    for (unsigned i = 0; i < co.ncores; i++)
        gen_ns += cores[i].gen_ns;
    if (bo.mode != MODE_SERVER)
        bulk_report_gen(&rp, &tot, gen_ns, co.ncores);
    double full;
    if (rt_rate_full(r, &full))             /* see rt_report_speed */
        rep_f(&rp, "gbps_full", full * 8 / 1e9, 3);
    rt_report_end(&rp, r, &all);
    return ok;
}

int main(int argc, char **argv)
{
    common_defaults(&co, "tern-bulk", FAMILY_TERN);
    bulk_opts_parse(&co, &bo, argc, argv);
    cores = calloc(co.ncores, sizeof *cores);
    copy_src = malloc(65536);
    if (!cores || !copy_src)
        return 1;
    unsigned n = co.ncores;
    for (unsigned i = 0; i < n && bo.mode != MODE_SERVER; i++) {
        bcore *bc = &cores[i];
        bc->ncli = (unsigned)(bo.conns / n + (i < bo.conns % n));
        bc->cli = calloc(bc->ncli ? bc->ncli : 1, sizeof *bc->cli);
        for (unsigned k = 0; k < bc->ncli; k++) {
            bc->cli[k].bc = bc;
            bc->cli[k].total = bulk_share(bo.bytes, bo.conns,
                                          (uint64_t)k * n + i);
            sha256_init(&bc->cli[k].hash);
        }
    }
    if (bo.mode != MODE_SERVER && bo.conns < n)
        opts_fail(&co, "--conns %llu is less than the %u cores",
                  (unsigned long long)bo.conns, n);

    rt_params p;
    rt_params_from_opts(&p, &co, bo.mode == MODE_SERVER ? RT_SERVER
                                                         : RT_CLIENT);
    nic_sums = !strcmp(co.driver, "mem") && (p.mem_caps & TERN_CAP_TX_L4_CSUM);
    /* Enough buffers for every stream's send window plus reordering. */
    p.pool_size = (unsigned)(8192 + bo.conns * 512);
    uint32_t tso_lro = TERN_CAP_TSO | TERN_CAP_LRO;
    big_bufs = !strcmp(co.driver, "mem") && bo.mode == MODE_BOTH &&
               (p.mem_caps & tso_lro) == tso_lro && bo.conns <= BIG_BUF_CONNS;
    if (big_bufs) {
        /* A 256 KiB window can arrive as 181 single-segment frames (a
         * partial send, retransmissions), each in a 64 KiB buffer. The
         * stack keeps at most half the pool out of order (tern.h,
         * ooo_max_bufs) and drops the rest: room for a window of them
         * per conn spares the peer those resends. */
        p.buf_size = BIG_BUF_SIZE;
        p.pool_size = (unsigned)(256 + bo.conns * 192);
    }
    if (!strcmp(co.driver, "mem") && co.link_bps > 0)
        p.faults.rate_bps = (uint64_t)co.link_bps;
    rt_hooks h = {.configure = configure, .start = start, .iter = iter,
                  .work = work};
    char banner[128] = "";
    if (bo.mode == MODE_SERVER && !co.json)
        rt_app_banner(banner, sizeof banner, &co, "receiving on",
                      (unsigned)bo.port);
    return rt_app_run(&co, &p, &h, banner, report_out);
}
