/* rt.c - runtime life cycle: open the device, start one pinned thread per
 * core, wait for them, sum their figures, free everything. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_int.h"

unsigned rt_ncores(const rt *r) { return r->p.ncores; }
rt_core *rt_core_at(rt *r, unsigned i) { return &r->core[i]; }
void *rt_app(const rt *r) { return r->p.app; }
const rt_params *rt_params_of(const rt *r) { return &r->p; }

unsigned rt_default_cpu(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (unsigned cpu = 0; cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &set))
                return cpu;
    return 0;
}

void rt_speed_summary(const rt *r, speed_summary *out)
{
    const speed_stats *s[RT_MAX_CORES];
    unsigned n = r->p.ncores < RT_MAX_CORES ? r->p.ncores : RT_MAX_CORES;
    for (unsigned i = 0; i < n; i++)
        s[i] = &r->core[i].speed;
    speed_summarize(s, n, out);
}

static int open_pcaps(rt *r, char *err, size_t errlen)
{
    if (!r->p.pcap)
        return 0;
    for (unsigned i = 0; i < r->p.ncores; i++) {
        /* One file per core: core 0 gets FILE, core i gets FILE.i. */
        char path[4096];
        if (i == 0)
            snprintf(path, sizeof path, "%s", r->p.pcap);
        else
            snprintf(path, sizeof path, "%s.%u", r->p.pcap, i);
        char e[128];
        r->pcap[i] = tern_pcap_open(path, e, sizeof e);
        if (!r->pcap[i]) {
            snprintf(err, errlen, "--pcap: %s", e);
            return -1;
        }
    }
    return 0;
}

static int open_device(rt *r, char *err, size_t errlen)
{
    if (strcmp(r->p.driver, "mem") == 0)
        return 0;
    r->drv = tern_driver_find(r->p.driver);
    if (!r->drv) {
        snprintf(err, errlen, "driver '%s' is not built in (built: %s)",
                 r->p.driver, tern_driver_list());
        return -1;
    }
    tern_dev_args a;
    memset(&a, 0, sizeof a);
    a.iface = r->p.iface;
    a.queues = r->p.ncores;
    if (r->p.steer) {
        /* Steering: the queues asked for (1 by default), read by the
         * first cores; every core still runs a stack. */
        a.queues = r->p.steer_queues ? r->p.steer_queues : 1;
        if (a.queues > r->p.ncores) {
            snprintf(err, errlen, "--steer-queues %u is more than the %u "
                     "cores", a.queues, r->p.ncores);
            return -1;
        }
    }
    a.pool_size = r->p.pool_size;
    a.extra = r->p.extra;
    char e[200] = "";
    r->dev = r->drv->open(&a, e, sizeof e);
    if (!r->dev) {
        snprintf(err, errlen, "%s on %s: %s", r->p.driver,
                 r->p.iface ? r->p.iface : "?", e);
        return -1;
    }
    if (r->dev->queues < a.queues) {
        snprintf(err, errlen, "%s on %s: %u queues for %u cores%s",
                 r->p.driver, r->p.iface, r->dev->queues, r->p.ncores,
                 r->p.steer ? "" : " (--steer spreads one queue's flows)");
        return -1;
    }
    r->nq = a.queues;
    return 0;
}

rt *rt_create(const rt_params *p, const rt_hooks *h, char *err, size_t errlen)
{
    if (p->ncores == 0 || p->ncores > RT_MAX_CORES) {
        snprintf(err, errlen, "between 1 and %d cores", RT_MAX_CORES);
        return NULL;
    }
    rt *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->p = *p;
    r->h = *h;
    memcpy(r->cores, p->cores, p->ncores * sizeof p->cores[0]);
    r->p.cores = r->cores;
    r->core = aligned_alloc(64, ((sizeof(rt_core) * p->ncores + 63) / 64) * 64);
    r->threads = calloc(p->ncores, sizeof *r->threads);
    if (!r->core || !r->threads) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    memset(r->core, 0, sizeof(rt_core) * p->ncores);
    for (unsigned i = 0; i < p->ncores; i++) {
        r->core[i].rt = r;
        r->core[i].idx = i;
        r->core[i].cpu = p->cores[i];
        r->core[i].wake_fd = -1;
    }
    r->nq = p->ncores;
    if (rt_signal_setup(err, errlen) || open_pcaps(r, err, errlen) ||
        open_device(r, err, errlen) || rt_steer_create(r, err, errlen))
        goto fail;
    return r;
fail:
    rt_destroy(r);
    return NULL;
}

static void *core_main(void *arg)
{
    rt_core *c = arg;
    rt *r = c->rt;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c->cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        snprintf(c->errmsg, sizeof c->errmsg, "cannot pin a thread to CPU %u",
                 c->cpu);
        c->err = 1;
        rt_stop();
        rt_steer_drained(r, 1);
        return NULL;
    }
    /* A connect from the start hook needs no clock yet: the stack moves
     * what it stamped before its first tern_poll/tern_input to that time. */
    if (rt_core_init(c) || (r->h.start && r->h.start(c))) {
        c->err = 1;
        rt_stop();
        rt_steer_drained(r, 1);  /* nobody waits for this core */
        return NULL;
    }
    rt_core_loop(c);
    for (unsigned i = 0; i < c->nep; i++) {
        uint32_t tw = tern_tcp_time_wait_count(c->ep[i].st);
        c->ep[i].stop_time_wait = tw;
        c->ep[i].stop_open = tern_tcp_conn_count(c->ep[i].st) - tw;
    }
    if (r->h.finish)
        r->h.finish(c);
    rt_core_drain(c);
    for (unsigned i = 0; i < c->nep; i++) {
        c->ep[i].final = *tern_get_counters(c->ep[i].st);
        c->ep[i].final_conns = tern_tcp_conn_count(c->ep[i].st);
    }
    return NULL;
}

int rt_run(rt *r, char *err, size_t errlen)
{
    unsigned started = 0;
    for (; started < r->p.ncores; started++) {
        int rc = pthread_create(&r->threads[started], NULL, core_main,
                                &r->core[started]);
        if (rc) {
            snprintf(err, errlen, "pthread_create: %s", strerror(rc));
            rt_stop();
            break;
        }
    }
    if (started < r->p.ncores)
        rt_steer_drained(r, r->p.ncores - started);
    for (unsigned i = 0; i < started; i++)
        pthread_join(r->threads[i], NULL);
    rt_steer_settle(r);
    for (unsigned i = 0; i < r->p.ncores; i++) {
        if (r->core[i].err) {
            snprintf(err, errlen, "%s", r->core[i].errmsg[0]
                                            ? r->core[i].errmsg
                                            : "a core failed to start");
            return -1;
        }
    }
    return started == r->p.ncores ? 0 : -1;
}

void rt_destroy(rt *r)
{
    if (!r)
        return;
    if (r->core)
        for (unsigned i = 0; i < r->p.ncores; i++)
            rt_core_fini(&r->core[i]);
    /* before the device: rings and pools hold the device's buffers */
    rt_steer_destroy(r);
    if (r->core)
        for (unsigned i = 0; i < r->p.ncores; i++)
            if (r->core[i].wake_fd >= 0)
                close(r->core[i].wake_fd);
    if (r->dev)
        r->drv->close(r->dev);
    for (unsigned i = 0; i < RT_MAX_CORES; i++)
        tern_pcap_close(r->pcap[i]);
    free(r->core);
    free(r->threads);
    free(r);
}

/* Add the final counters of core c's endpoints with `role` (-1 = all). */
static void add_core_counters(const rt_core *c, int role, tern_counters *out)
{
    uint64_t *o = (uint64_t *)out;
    for (unsigned e = 0; e < c->nep; e++) {
        if (role >= 0 && c->ep[e].role != role)
            continue;
        const uint64_t *s = (const uint64_t *)&c->ep[e].final;
        for (size_t k = 0; k < sizeof *out / sizeof *o; k++)
            o[k] += s[k];
    }
}

void rt_counters(const rt *r, int role, tern_counters *out)
{
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < r->p.ncores; i++)
        add_core_counters(&r->core[i], role, out);
}

void rt_core_counters(const rt *r, unsigned i, tern_counters *out)
{
    memset(out, 0, sizeof *out);
    add_core_counters(&r->core[i], -1, out);
}

uint64_t rt_conn_count(const rt *r, int role)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < r->p.ncores; i++) {
        const rt_core *c = &r->core[i];
        for (unsigned e = 0; e < c->nep; e++)
            if (role < 0 || c->ep[e].role == role)
                n += c->ep[e].final_conns;
    }
    return n;
}

void rt_stop_conns(const rt *r, uint64_t *open, uint64_t *time_wait)
{
    *open = *time_wait = 0;
    for (unsigned i = 0; i < r->p.ncores; i++)
        for (unsigned e = 0; e < r->core[i].nep; e++) {
            *open += r->core[i].ep[e].stop_open;
            *time_wait += r->core[i].ep[e].stop_time_wait;
        }
}

bool rt_link_rx_drop_causes(const rt *r, uint64_t *nobuf, uint64_t *vlan)
{
    *nobuf = *vlan = 0;
    if (!r->dev)
        return false;
    *nobuf = r->dev->rx_drop_nobuf;
    *vlan = r->dev->rx_drop_vlan;
    return true;
}

bool rt_link_tso(const rt *r, uint64_t *frames, uint64_t *drops)
{
    *frames = *drops = 0;
    if (!r->dev)
        return false;
    *frames = r->dev->tx_tso_frames;
    *drops = r->dev->tx_tso_drops;
    return true;
}

void rt_link_stats(const rt *r, uint64_t *rx, uint64_t *tx, uint64_t *drops)
{
    *rx = *tx = *drops = 0;
    if (r->dev) {
        *rx = r->dev->rx_frames;
        *tx = r->dev->tx_frames;
        *drops = r->dev->rx_drops + r->dev->tx_drops;
        return;
    }
    for (unsigned i = 0; i < r->p.ncores; i++) {
        tern_memlink *ml = r->core[i].ml;
        if (!ml)
            continue;
        for (int end = 0; end < 2; end++) {
            const tern_memlink_stats *s = tern_memlink_get_stats(ml, end);
            *tx += s->sent;
            *rx += s->delivered;
            *drops += s->lost + s->queue_drops + s->pool_drops +
                      s->oversize_drops;
        }
    }
}
