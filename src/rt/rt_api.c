/* rt_api.c - tern_rt_run and friends (tern_linux.h): the runtime behind a
 * small config and three callbacks, for programs outside this tree. */
#include <stdio.h>
#include <string.h>

#include "rt_int.h"

/* rt_params.app while tern_rt_run runs: the embedder's config. */
typedef struct {
    tern_rt_config cfg;
} rt_api;

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
    for (unsigned i = 0; i < c->nep; i++) {
        if (a->cfg.start && a->cfg.start(a->cfg.app, c->idx, c->ep[i].st)) {
            snprintf(c->errmsg, sizeof c->errmsg,
                     "the start callback of core %u failed", c->idx);
            return -1;
        }
    }
    return 0;
}

static void api_finish(rt_core *c)
{
    const rt_api *a = api_of(c->rt);
    for (unsigned i = 0; a->cfg.finish && i < c->nep; i++)
        a->cfg.finish(a->cfg.app, c->idx, c->ep[i].st);
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
    p.poll_timeout_ms = -1;
    p.role = RT_SERVER;
    p.app = &a;
    rt_hooks h = {.configure = api_configure, .start = api_start,
                  .finish = api_finish};
    rt *r = rt_create(&p, &h, err, errlen);
    if (!r)
        return -1;
    int rc = rt_run(r, err, errlen);
    rt_destroy(r);
    return rc;
}

void tern_rt_stop(void) { rt_stop(); }

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
