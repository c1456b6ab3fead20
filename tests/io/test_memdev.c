/* test_memdev.c - the "mem" driver through the common tern_driver interface
 * and the driver registry. */
#include <stdio.h>
#include <string.h>

#include "link_util.h"

static void registry_finds_mem(void **state)
{
    (void)state;
    assert_ptr_equal(tern_driver_find("mem"), &tern_driver_mem);
    assert_null(tern_driver_find("no-such-driver"));
    assert_null(tern_driver_find(NULL));
    const char *list = tern_driver_list();
    assert_non_null(strstr(list, "mem"));
    assert_true(list[0] != ',');
    /* Every listed name is found. */
    char names[128];
    snprintf(names, sizeof(names), "%s", list);
    for (char *s = strtok(names, ","); s; s = strtok(NULL, ","))
        assert_non_null(tern_driver_find(s));
}

static void open_send_receive(void **state)
{
    (void)state;
    const tern_driver *drv = tern_driver_find("mem");
    char err[160] = "";
    tern_dev_args args = {.pool_size = 32, .extra = "seed=7,caps=0x3,dup=1"};
    tern_dev *d = drv->open(&args, err, sizeof(err));
    if (!d)
        fail_msg("%s", err);
    assert_int_equal(d->queues, 2);
    assert_int_equal(d->caps, 0x3);
    assert_int_equal(drv->wait_fd(d, 0), -1);
    uint8_t f[200];
    size_t n = f_udp(f, 100, 2, false);
    tern_buf_ops ops = tern_dev_buf_ops(d, 0);
    tern_buf *b = ops.alloc(ops.ctx);
    memcpy(b->data, f, n);
    b->len = (uint32_t)n;
    drv->tx_burst(d, 0, &b, 1);
    tern_buf *r[4];
    assert_int_equal(drv->rx_burst(d, 1, r, 4), 2);  /* dup=1 */
    assert_memory_equal(r[0]->data, f, n);
    assert_int_equal(r[0]->flags, TERN_BUF_RX_IP_CSUM_OK | TERN_BUF_RX_L4_CSUM_OK);
    tern_pool_release(d->pools[1], r[0]);
    tern_pool_release(d->pools[1], r[1]);
    assert_int_equal(tern_memlink_get_stats(tern_memdev_link(d), 0)->duplicated, 1);
    drv->close(d);
}

static void bad_options_rejected(void **state)
{
    (void)state;
    char err[160] = "";
    tern_dev_args args = {.extra = "loss=0.1,bogus=3"};
    assert_null(tern_driver_mem.open(&args, err, sizeof(err)));
    assert_non_null(strstr(err, "bogus"));
    args = (tern_dev_args){.extra = "loss=7"};
    assert_null(tern_driver_mem.open(&args, err, sizeof(err)));
    args = (tern_dev_args){.queues = 3};
    assert_null(tern_driver_mem.open(&args, err, sizeof(err)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry_finds_mem),
        cmocka_unit_test(open_send_receive),
        cmocka_unit_test(bad_options_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
