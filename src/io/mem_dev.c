/* mem_dev.c - the mem link behind the common tern_driver interface: one
 * device, two queues, queue q = end q, timed by CLOCK_MONOTONIC. For apps
 * that pick a driver by name; tests use the tern_memlink API directly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mem.h"

typedef struct mem_dev {
    tern_dev dev;              /* first: drivers extend tern_dev */
    tern_memlink *link;
    tern_pool *pools[2];
} mem_dev;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Apply one key=value of args->extra. */
static bool set_opt(tern_memlink_config *c, const char *k, const char *v)
{
    char *end;
    double dv = strtod(v, &end);
    if (end == v)
        return false;
    unsigned long long uv = strtoull(v, NULL, 0);
    if (!strcmp(k, "loss")) c->faults.loss = dv;
    else if (!strcmp(k, "dup")) c->faults.dup = dv;
    else if (!strcmp(k, "reorder")) c->faults.reorder = dv;
    else if (!strcmp(k, "corrupt")) c->faults.corrupt = dv;
    else if (!strcmp(k, "delay_ns")) c->faults.delay_ns = uv;
    else if (!strcmp(k, "rate_bps")) c->faults.rate_bps = uv;
    else if (!strcmp(k, "seed")) c->seed = uv;
    else if (!strcmp(k, "buf_size")) c->buf_size = (unsigned)uv;
    else if (!strcmp(k, "caps")) c->caps[0] = c->caps[1] = (uint32_t)uv;
    else if (!strcmp(k, "partial_csum")) c->partial_csum = uv != 0;
    else return false;
    return true;
}

static bool parse_extra(const char *extra, tern_memlink_config *c,
                        char *pcap[2], char *err, size_t errlen)
{
    if (!extra || !*extra)
        return true;
    char *s = strdup(extra), *save = NULL;
    bool ok = s != NULL;
    for (char *kv = s ? strtok_r(s, ",", &save) : NULL; kv && ok;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            ok = false;
        } else {
            *eq = 0;
            if (!strcmp(kv, "pcap0") || !strcmp(kv, "pcap1")) {
                free(pcap[kv[4] - '0']);
                ok = (pcap[kv[4] - '0'] = strdup(eq + 1)) != NULL;
            } else {
                ok = set_opt(c, kv, eq + 1);
            }
        }
        if (!ok)
            snprintf(err, errlen, "mem: bad option '%s'", kv);
    }
    free(s);
    return ok;
}

static void mem_close(tern_dev *d)
{
    if (!d)
        return;
    tern_memlink_destroy(((mem_dev *)d)->link);
    free(d);
}

static tern_dev *mem_open(const tern_dev_args *args, char *err, size_t errlen)
{
    if (args->queues && args->queues != 2) {
        snprintf(err, errlen, "mem: a link has exactly 2 queues (its ends)");
        return NULL;
    }
    tern_memlink_config c;
    tern_memlink_config_defaults(&c);
    if (args->pool_size)
        c.pool_size = args->pool_size;
    if (args->ring_size)
        c.queue_len = args->ring_size;
    char *pcap[2] = {NULL, NULL};
    mem_dev *m = NULL;
    if (!parse_extra(args->extra, &c, pcap, err, errlen))
        goto out;
    if (!(m = calloc(1, sizeof(*m)))) {
        snprintf(err, errlen, "mem: out of memory");
        goto out;
    }
    if (!(m->link = tern_memlink_create(&c, err, errlen)))
        goto fail;
    for (int e = 0; e < 2; e++) {
        m->pools[e] = tern_memlink_pool(m->link, e);
        if (pcap[e] && tern_memlink_set_pcap(m->link, e, pcap[e], err, errlen))
            goto fail;
    }
    m->dev.drv = &tern_driver_mem;
    m->dev.caps = c.caps[0];
    memcpy(m->dev.mac, (uint8_t[6]){0x02, 't', 'e', 'r', 'n', 0}, 6);
    m->dev.mtu = 1500;
    m->dev.queues = 2;
    m->dev.pools = m->pools;
    goto out;
fail:
    mem_close(&m->dev);
    m = NULL;
out:
    free(pcap[0]);
    free(pcap[1]);
    return m ? &m->dev : NULL;
}

static unsigned mem_rx(tern_dev *d, unsigned q, tern_buf **frames,
                       unsigned max)
{
    mem_dev *m = (mem_dev *)d;
    unsigned n = tern_memlink_rx(m->link, (int)q, frames, max, mono_ns());
    d->rx_frames += n;
    return n;
}

static void mem_tx(tern_dev *d, unsigned q, tern_buf **frames, unsigned n)
{
    mem_dev *m = (mem_dev *)d;
    tern_memlink_set_time(m->link, mono_ns());
    tern_memlink_tx(tern_memlink_tx_ctx(m->link, (int)q), frames, n);
    d->tx_frames += n;
}

static int mem_wait_fd(tern_dev *d, unsigned q)
{
    (void)d;
    (void)q;
    return -1;  /* both ends live in one thread: nothing to sleep on */
}

tern_memlink *tern_memdev_link(tern_dev *d) { return ((mem_dev *)d)->link; }

const tern_driver tern_driver_mem = {
    .name = "mem",
    .open = mem_open,
    .close = mem_close,
    .rx_burst = mem_rx,
    .tx_burst = mem_tx,
    .wait_fd = mem_wait_fd,
};
