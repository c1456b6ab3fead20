/* test_dpdk_ring.c - the dpdk driver's buffer scheme, in one process, on
 * net_ring (a virtual port whose tx ring is its rx ring: what it sends
 * comes back, as the very same mbuf). No stack involved.
 *
 *   open_info        queues, pools, MAC, honest caps for a PMD without
 *                    checksum offloads
 *   zero_copy        a buffer the stack allocated is sent and received
 *                    back as the same tern_buf: no copy anywhere
 *   held_is_cloned   a buffer still referenced (refs 2) leaves through an
 *                    extbuf clone; the driver's reference is dropped when
 *                    the clone is freed; the memory is never reused early
 *   chain            a two-segment frame (SG) goes out as an mbuf chain
 *                    and comes back as a frag chain
 *   burst_and_stock  thousands of frames through the port: the stock and
 *                    the mempool trade buffers, nothing leaks
 *   hotplug          a second port added later by eal=--vdev (EAL is up),
 *                    closed and added again
 *
 * Needs root (DPDK EAL); exits 77 (SKIP) otherwise or without DPDK.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io.h"
#ifdef TERN_HAVE_DPDK
#include "dpdk.h"

#define EAL "--no-huge -m 256 --no-pci --no-shconf --no-telemetry " \
            "--vdev=net_ring0"

static tern_dev *dev;
static tern_buf_ops ops;

static tern_buf *alloc_frame(uint32_t len, uint8_t seed)
{
    tern_buf *b = ops.alloc(ops.ctx);
    assert_non_null(b);
    assert_int_equal(b->refs, 1);
    assert_true(b->data - b->head >= TERN_HEADROOM);
    for (uint32_t i = 0; i < len; i++)
        b->data[i] = (uint8_t)(seed + i);
    b->len = len;
    return b;
}

static unsigned rx_all(tern_buf **frames, unsigned max)
{
    unsigned n = 0;
    for (int t = 0; t < 100 && n < max; t++)
        n += dev->drv->rx_burst(dev, 0, frames + n, max - n);
    return n;
}

static void assert_no_leak(void)
{
    unsigned mp, stock, clones;
    tern_buf *f[8];
    /* a burst call rebalances the stock */
    assert_int_equal(dev->drv->rx_burst(dev, 0, f, 8), 0);
    tern_dpdk_buffers(dev, 0, &mp, &stock, &clones);
    assert_int_equal(mp + stock, tern_pool_count(dev->pools[0]));
    assert_int_equal(clones, 2048);
}

static void open_info(void **state)
{
    (void)state;
    assert_int_equal(dev->queues, 1);
    assert_non_null(dev->pools);
    assert_non_null(dev->pools[0]);
    assert_true(tern_pool_count(dev->pools[0]) >= 1024);
    /* net_ring checks no checksum: none may be declared */
    assert_int_equal(dev->caps & (TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM |
                                  TERN_CAP_TX_IP_CSUM | TERN_CAP_TX_L4_CSUM |
                                  TERN_CAP_TSO | TERN_CAP_LRO), 0);
    assert_true(dev->mtu >= 1500);
    uint8_t key[40];
    uint16_t reta[512], rs = 99;
    assert_int_equal(tern_dpdk_rss(dev, key, reta, &rs), -1);
    assert_int_equal(rs, 0);
    assert_no_leak();
}

static void zero_copy(void **state)
{
    (void)state;
    tern_buf *b = alloc_frame(60, 1);
    tern_buf *sent = b;
    dev->drv->tx_burst(dev, 0, &b, 1);
    tern_buf *f[4];
    assert_int_equal(rx_all(f, 4), 1);
    assert_ptr_equal(f[0], sent);            /* the same buffer came back */
    assert_int_equal(f[0]->len, 60);
    assert_int_equal(f[0]->refs, 1);
    assert_null(f[0]->frag);
    for (uint32_t i = 0; i < 60; i++)
        assert_int_equal(f[0]->data[i], (uint8_t)(1 + i));
    tern_dpdk_stats s;
    tern_dpdk_get_stats(dev, &s);
    assert_true(s.tx_direct >= 1);
    assert_int_equal(s.rx_copied, 0);
    tern_pool_release(dev->pools[0], f[0]);
    assert_no_leak();
}

static void held_is_cloned(void **state)
{
    (void)state;
    tern_dpdk_stats s0, s1;
    tern_dpdk_get_stats(dev, &s0);
    tern_buf *b = alloc_frame(200, 7);
    tern_buf_ref(b);                     /* the stack keeps it (refs 2) */
    tern_buf *tx = b;
    dev->drv->tx_burst(dev, 0, &tx, 1);
    /* one reference is kept for the clone in flight */
    assert_int_equal(b->refs, 2);
    /* send it again while the first clone is still in the ring */
    tern_buf_ref(b);
    tx = b;
    dev->drv->tx_burst(dev, 0, &tx, 1);
    assert_int_equal(b->refs, 2);        /* still one for all clones */
    tern_dpdk_get_stats(dev, &s1);
    assert_int_equal(s1.tx_cloned - s0.tx_cloned, 2);
    tern_buf *f[4];
    assert_int_equal(rx_all(f, 4), 2);
    for (int k = 0; k < 2; k++) {
        /* clones come back copied into buffers of our own */
        assert_ptr_not_equal(f[k], b);
        assert_int_equal(f[k]->len, 200);
        for (uint32_t i = 0; i < 200; i++)
            assert_int_equal(f[k]->data[i], (uint8_t)(7 + i));
        tern_pool_release(dev->pools[0], f[k]);
    }
    /* both clones freed: the driver's reference went with the last */
    assert_int_equal(b->refs, 1);
    tern_pool_release(dev->pools[0], b);
    assert_no_leak();
}

static void chain(void **state)
{
    (void)state;
    if (!(dev->caps & TERN_CAP_SG))
        skip();
    tern_buf *h = alloc_frame(54, 3);
    tern_buf *p = alloc_frame(1000, 9);
    h->frag = p;
    tern_buf *tx = h;
    dev->drv->tx_burst(dev, 0, &tx, 1);
    tern_buf *f[4];
    assert_int_equal(rx_all(f, 4), 1);
    assert_ptr_equal(f[0], h);
    assert_ptr_equal(f[0]->frag, p);
    assert_int_equal(f[0]->len + f[0]->frag->len, 1054);
    assert_int_equal(p->data[999], (uint8_t)(9 + 999));
    tern_pool_release(dev->pools[0], f[0]);
    assert_no_leak();
}

static void burst_and_stock(void **state)
{
    (void)state;
    tern_buf *f[32];
    unsigned total = 0;
    for (int round = 0; round < 400; round++) {
        tern_buf *b[32];
        unsigned n = 0;
        for (; n < 32; n++) {
            b[n] = ops.alloc(ops.ctx);
            if (!b[n])
                break;
            b[n]->len = 64 + (uint32_t)n;
            b[n]->data[0] = (uint8_t)round;
        }
        dev->drv->tx_burst(dev, 0, b, n);
        unsigned got = rx_all(f, 32);
        assert_int_equal(got, n);
        for (unsigned i = 0; i < got; i++) {
            assert_int_equal(f[i]->len, 64 + i);
            assert_int_equal(f[i]->data[0], (uint8_t)round);
            tern_pool_release(dev->pools[0], f[i]);
        }
        total += got;
    }
    assert_int_equal(total, 400 * 32);
    assert_no_leak();
}

static void hotplug(void **state)
{
    (void)state;
    for (int pass = 0; pass < 2; pass++) {
        tern_dev_args a = {.iface = "net_ring1", .queues = 1,
                           .pool_size = 2048,
                           .extra = "eal=--vdev=net_ring1"};
        char err[256] = "";
        tern_dev *d2 = tern_driver_dpdk.open(&a, err, sizeof err);
        if (!d2)
            fail_msg("second port (pass %d): %s", pass, err);
        assert_int_not_equal(tern_dpdk_port(d2), tern_dpdk_port(dev));
        tern_buf_ops o2 = tern_dev_buf_ops(d2, 0);
        tern_buf *b = o2.alloc(o2.ctx);
        b->len = 42;
        d2->drv->tx_burst(d2, 0, &b, 1);
        tern_buf *f[2];
        unsigned n = 0;
        for (int t = 0; t < 100 && !n; t++)
            n = d2->drv->rx_burst(d2, 0, f, 2);
        assert_int_equal(n, 1);
        assert_int_equal(f[0]->len, 42);
        tern_pool_release(d2->pools[0], f[0]);
        d2->drv->close(d2);
    }
}
#endif

int main(void)
{
#ifndef TERN_HAVE_DPDK
    printf("SKIP: built without DPDK\n");
    return 77;
#else
    if (geteuid() != 0) {
        printf("SKIP: DPDK's EAL needs root here\n");
        return 77;
    }
    tern_dev_args a = {.iface = "net_ring0", .queues = 1, .pool_size = 4096,
                       .extra = "eal=" EAL};
    char err[512] = "";
    dev = tern_driver_dpdk.open(&a, err, sizeof err);
    if (!dev) {
        printf("SKIP: cannot open net_ring0: %s\n", err);
        return 77;
    }
    ops = tern_dev_buf_ops(dev, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_info),
        cmocka_unit_test(zero_copy),
        cmocka_unit_test(held_is_cloned),
        cmocka_unit_test(chain),
        cmocka_unit_test(burst_and_stock),
        cmocka_unit_test(hotplug),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dev->drv->close(dev);
    return rc;
#endif
}
