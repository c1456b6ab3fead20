/* rt_api.c - tern_rt_run and friends (tern_linux.h): the runtime behind a
 * small config and a few callbacks, for programs outside this tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_int.h"

/* rt_params.app while tern_rt_run runs: the embedder's config. */
typedef struct {
    tern_rt_config cfg;
} rt_api;

/* The core whose thread this is, during a run (tern_rt_get_core_stats). */
static __thread rt_core *tl_core;
/* The last run's final figures (tern_rt_get_core_stats after the run). */
static tern_rt_core_stats *g_final;
static tern_rt_link_stats g_final_link;
static unsigned g_ncores;

static const rt_api *api_of(const rt *r) { return rt_app(r); }

static void api_configure(rt_ep *ep, tern_config *cfg)
{
    const rt_api *a = api_of(ep->core->rt);
    if (a->cfg.configure)
        a->cfg.configure(a->cfg.app, ep->core->idx, cfg);
}

static int api_start(rt_core *c)
{
    const rt_api *a = api_of(c->rt);
    tl_core = c;
    for (unsigned i = 0; i < c->nep; i++) {
        if (a->cfg.start && a->cfg.start(a->cfg.app, c->idx, c->ep[i].st)) {
            snprintf(c->errmsg, sizeof c->errmsg,
                     "the start callback of core %u failed", c->idx);
            return -1;
        }
    }
    return 0;
}

static void api_loop(rt_core *c)
{
    const rt_api *a = api_of(c->rt);
    a->cfg.loop(a->cfg.app, c->idx, c->ep[0].st, c->now);
}

static uint64_t api_work(rt_core *c)
{
    const rt_api *a = api_of(c->rt);
    return a->cfg.work(a->cfg.app, c->idx);
}

static void api_finish(rt_core *c)
{
    const rt_api *a = api_of(c->rt);
    for (unsigned i = 0; a->cfg.finish && i < c->nep; i++)
        a->cfg.finish(a->cfg.app, c->idx, c->ep[i].st);
}

/* Core c's figures; `final`: from the copies taken when it stopped. */
static void core_stats(rt *r, rt_core *c, bool final, tern_rt_core_stats *o)
{
    memset(o, 0, sizeof *o);
    o->cpu = c->cpu;
    o->loops = c->iterations;
    o->rx_frames = c->rx_frames;
    o->sleeps = c->sleeps;
    o->spin_hits = c->spin_hits;
    const steer_stats *s = rt_steer_stats(r, c->idx);
    if (s) {
        o->steer_kept = s->kept;
        o->steer_out = s->sent;
        o->steer_in = s->received;
        o->steer_broadcast = s->broadcast;
        o->steer_ring_drops = s->ring_drops;
        o->steer_copy_drops = s->copy_drops;
        o->steer_tx_forwarded = c->tx_forwarded;
        o->steer_tx_drops = c->tx_ring_drops;
    }
    const speed_stats *sp = &c->speed;
    speed_summary sum;
    speed_summarize(&sp, 1, &sum);
    o->best_ghz = sum.best_ghz;
    o->median_ghz = sum.median_ghz;
    o->full_share = sum.full_share;
    o->rate_full = sum.rate_full;
    o->rate_all = sum.rate_all;
    const rt_ep *ep = &c->ep[0];
    o->counters = final ? ep->final : *tern_get_counters(ep->st);
    o->conns = final ? ep->final_conns : tern_tcp_conn_count(ep->st);
}

static void link_stats(const rt *r, tern_rt_link_stats *o)
{
    rt_link_stats(r, &o->rx_frames, &o->tx_frames, &o->drops);
}

/* Keep the run's figures for tern_rt_get_core_stats after it. */
static void keep_final(rt *r)
{
    unsigned n = rt_ncores(r);
    tern_rt_core_stats *f = calloc(n, sizeof *f);
    free(g_final);
    g_final = f;
    g_ncores = f ? n : 0;
    for (unsigned i = 0; f && i < n; i++)
        core_stats(r, rt_core_at(r, i), true, &f[i]);
    link_stats(r, &g_final_link);
}

void tern_rt_config_defaults(tern_rt_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
}

int tern_rt_run(const tern_rt_config *cfg, char *err, size_t errlen)
{
    if (!cfg->driver || !strcmp(cfg->driver, "mem")) {
        snprintf(err, errlen, "tern_rt_run needs a device driver (%s); for "
                 "mem use tern_dev_open", tern_driver_list());
        return -1;
    }
    if (!cfg->iface) {
        snprintf(err, errlen, "driver %s needs an interface name",
                 cfg->driver);
        return -1;
    }
    rt_api a = {.cfg = *cfg};
    unsigned one = rt_default_cpu();
    rt_params p;
    memset(&p, 0, sizeof p);
    p.driver = cfg->driver;
    p.iface = cfg->iface;
    p.extra = cfg->extra;
    p.ip = cfg->ip;
    p.prefix = cfg->prefix_len;
    p.gw = cfg->gateway;
    p.cores = cfg->cpus ? cfg->cpus : &one;
    p.ncores = cfg->cpus ? cfg->ncpus : 1;
    p.busy = cfg->busy_poll;
    p.spin_us = cfg->spin_us;
    p.poll_timeout_ms = -1;
    p.role = RT_SERVER;
    p.pool_size = cfg->pool_size;
    p.steer = cfg->steer && p.ncores > 1;
    p.steer_queues = cfg->steer_queues;
    p.app = &a;
    rt_hooks h = {.configure = api_configure, .start = api_start,
                  .iter = cfg->loop ? api_loop : NULL,
                  .work = cfg->work ? api_work : NULL,
                  .finish = api_finish};
    rt *r = rt_create(&p, &h, err, errlen);
    if (!r)
        return -1;
    int rc = rt_run(r, err, errlen);
    keep_final(r);
    rt_destroy(r);
    return rc;
}

void tern_rt_stop(void) { rt_stop(); }

int tern_rt_stop_signal(int *pid) { return rt_stop_signal(pid); }

void *tern_rt_app(const tern_stack *st)
{
    const rt_ep *ep = tern_get_user(st);
    return api_of(ep->core->rt)->cfg.app;
}

unsigned tern_rt_core(const tern_stack *st)
{
    const rt_ep *ep = tern_get_user(st);
    return ep->core->idx;
}

unsigned tern_rt_ncores(void)
{
    return tl_core ? rt_ncores(tl_core->rt) : g_ncores;
}

int tern_rt_get_core_stats(unsigned core, tern_rt_core_stats *out)
{
    rt_core *c = tl_core;
    if (c && c->idx == core) {
        core_stats(c->rt, c, false, out);
        return 0;
    }
    if (c || !g_final || core >= g_ncores)
        return -TERN_EINVAL;
    *out = g_final[core];
    return 0;
}

int tern_rt_get_link_stats(tern_rt_link_stats *out)
{
    if (tl_core) {
        link_stats(tl_core->rt, out);
        return 0;
    }
    if (!g_final)
        return -TERN_EINVAL;
    *out = g_final_link;
    return 0;
}
