/* dev_api.c - the device calls of tern_linux.h over the driver table
 * (io.h): open by name, the link fields of a tern_config, bursts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io.h"

/* tx_ctx of a queue: tern_tx_fn has one pointer for both. */
struct tern_dev_txq {
    tern_dev *dev;
    unsigned q;
};

uint64_t tern_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TERN_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

tern_dev *tern_dev_open(const char *driver, const tern_dev_args *args,
                        char *err, size_t errlen)
{
    const tern_driver *drv = tern_driver_find(driver);
    if (!drv) {
        snprintf(err, errlen, "driver '%s' is not built in (built: %s)",
                 driver ? driver : "(none)", tern_driver_list());
        return NULL;
    }
    tern_dev_args none;
    if (!args) {
        memset(&none, 0, sizeof none);
        args = &none;
    }
    char e[200] = "";
    tern_dev *d = drv->open(args, e, sizeof e);
    if (!d) {
        snprintf(err, errlen, "%s%s%s: %s", driver, args->iface ? " on " : "",
                 args->iface ? args->iface : "", e[0] ? e : "cannot open");
        return NULL;
    }
    return d;
}

void tern_dev_close(tern_dev *d)
{
    if (!d)
        return;
    free(d->api_txq);
    d->api_txq = NULL;
    d->drv->close(d);
}

unsigned tern_dev_queues(const tern_dev *d) { return d->queues; }
uint16_t tern_dev_mtu(const tern_dev *d) { return d->mtu; }
uint32_t tern_dev_caps(const tern_dev *d) { return d->caps; }
void tern_dev_mac(const tern_dev *d, uint8_t mac[6]) { memcpy(mac, d->mac, 6); }

static void txq_send(void *ctx, tern_buf **frames, unsigned n)
{
    struct tern_dev_txq *t = ctx;
    t->dev->drv->tx_burst(t->dev, t->q, frames, n);
}

void tern_dev_setup(tern_dev *d, unsigned q, tern_config *cfg)
{
    if (!d->api_txq) {
        d->api_txq = calloc(d->queues, sizeof *d->api_txq);
        if (!d->api_txq)
            abort();    /* a few bytes: nothing sensible is left to do */
        for (unsigned i = 0; i < d->queues; i++)
            d->api_txq[i] = (struct tern_dev_txq){d, i};
    }
    memcpy(cfg->mac, d->mac, 6);
    /* The mem device's two queues are two hosts on one wire. */
    if (d->drv == tern_driver_find("mem"))
        cfg->mac[5] = (uint8_t)(cfg->mac[5] + q + 1);
    if (d->mtu)
        cfg->mtu = d->mtu;
    cfg->caps = d->caps;
    cfg->buf_ops = tern_pool_ops(d->pools[q]);
    cfg->tx = txq_send;
    cfg->tx_ctx = &d->api_txq[q];
}

unsigned tern_dev_rx(tern_dev *d, unsigned q, tern_buf **frames, unsigned max)
{
    return d->drv->rx_burst(d, q, frames, max);
}

int tern_dev_wait_fd(tern_dev *d, unsigned q)
{
    return d->drv->wait_fd ? d->drv->wait_fd(d, q) : -1;
}

void tern_dev_get_stats(const tern_dev *d, tern_dev_stats *out)
{
    out->rx_frames = d->rx_frames;
    out->tx_frames = d->tx_frames;
    out->rx_drops = d->rx_drops;
    out->tx_drops = d->tx_drops;
    out->rx_drop_nobuf = d->rx_drop_nobuf;
    out->rx_drop_vlan = d->rx_drop_vlan;
    out->tx_tso_frames = d->tx_tso_frames;
    out->tx_tso_drops = d->tx_tso_drops;
}
