/* The runtime's optional parts as an embedder uses them from the installed
 * library: software steering over two CPUs, a small pool, the per-loop
 * hook, the work counter and per-core statistics, during and after a run.
 *
 *     rt_extras                         checks that need no device
 *     rt_extras DRIVER IFACE A.B.C.D    and a run on that interface (root)
 *
 * The loop hook counts its turns per core and stops the run once every
 * core made TURNS of them; the statistics must then agree. Exit 0, or 1
 * with the reason. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <tern_linux.h>

#define TURNS 2000u

static unsigned cpus[2], ncpus;
static volatile unsigned long long turns[2];
static volatile int bad_live;        /* a live statistics call misbehaved */

static void loop(void *app, unsigned core, tern_stack *st, uint64_t now)
{
    (void)app;
    (void)now;
    tern_rt_core_stats s;
    /* Its own figures so far; another core's are not readable here. */
    if (tern_rt_get_core_stats(core, &s) != 0 || s.cpu != cpus[core] ||
        tern_rt_core(st) != core)
        bad_live = 1;
    if (ncpus > 1 && tern_rt_get_core_stats(1 - core, &s) != -TERN_EINVAL)
        bad_live = 1;
    turns[core]++;
    unsigned done = 0;
    for (unsigned i = 0; i < ncpus; i++)
        done += turns[i] >= TURNS;
    if (done == ncpus)
        tern_rt_stop();
}

static uint64_t work(void *app, unsigned core)
{
    (void)app;
    return turns[core];
}

static int fail(const char *why)
{
    fprintf(stderr, "rt_extras: %s\n", why);
    return 1;
}

int main(int argc, char **argv)
{
    tern_rt_core_stats s;
    tern_rt_link_stats l;
    int e = tern_rt_get_core_stats(0, &s);
    if (e != -TERN_EINVAL || tern_rt_get_link_stats(&l) != -TERN_EINVAL ||
        tern_rt_ncores() != 0) {
        fprintf(stderr, "rt_extras: %s\n", tern_strerror(e));
        return fail("statistics before any run");
    }
    if (argc < 4) {
        printf("rt_extras: checks without a device passed\n");
        return 0;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set))
        return fail("sched_getaffinity");
    for (unsigned c = 0; c < CPU_SETSIZE && ncpus < 2; c++)
        if (CPU_ISSET(c, &set))
            cpus[ncpus++] = c;
    unsigned a, b, c, d;
    if (sscanf(argv[3], "%u.%u.%u.%u", &a, &b, &c, &d) != 4)
        return fail("address A.B.C.D expected");
    tern_rt_config cfg;
    tern_rt_config_defaults(&cfg);
    cfg.driver = argv[1];
    cfg.iface = argv[2];
    cfg.ip = TERN_IP4(a, b, c, d);
    cfg.prefix_len = 24;
    cfg.cpus = cpus;
    cfg.ncpus = ncpus;
    cfg.busy_poll = true;        /* the hook turns without traffic */
    cfg.steer = true;            /* a veth has one queue */
    cfg.pool_size = 1024;
    cfg.loop = loop;
    cfg.work = work;
    char err[256];
    if (tern_rt_run(&cfg, err, sizeof err))
        return fail(err);
    if (bad_live)
        return fail("statistics on a runtime thread during the run");
    if (tern_rt_ncores() != ncpus)
        return fail("tern_rt_ncores after the run");
    for (unsigned i = 0; i < ncpus; i++) {
        if (tern_rt_get_core_stats(i, &s))
            return fail("no statistics after the run");
        if (s.cpu != cpus[i] || s.loops < turns[i] || turns[i] < TURNS)
            return fail("a core's turns and its statistics disagree");
    }
    if (tern_rt_get_core_stats(ncpus, &s) != -TERN_EINVAL ||
        tern_rt_get_link_stats(&l) != 0)
        return fail("statistics out of range, or no link figures");
    printf("rt_extras: %u core(s), %llu turns on core 0, steering %s\n",
           ncpus, turns[0], ncpus > 1 ? "on" : "off (one CPU)");
    return 0;
}
