/* test_bulk_verify.c - bulk_report's "verified" in hash mode with both ends
 * in one process (apps/common bulk.c): true only when every sent stream
 * arrived whole with the same SHA-256, in any order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bulk.h"

/* Stream s's bytes: n bytes of a value that depends on s. */
static void feed(bulk_rx *r, int s, size_t n)
{
    uint8_t buf[1000];
    memset(buf, 'a' + s, sizeof buf);
    for (size_t off = 0; off < n; off += sizeof buf) {
        size_t k = n - off < sizeof buf ? n - off : sizeof buf;
        bulk_rx_data(r, buf, k, 1 + off);
    }
    bulk_rx_end(r, 1 + n);
}

static void hash_of(sha256 *h, int s, size_t n)
{
    bulk_rx r;
    bulk_rx_init(&r, VERIFY_HASH);
    feed(&r, s, n);
    *h = r.hash;
}

/* bulk_report's verdict, its JSON thrown away. */
static bool verdict(const bulk_total *t)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    report rp;
    rep_begin(&rp, f, true, "test");
    bool v = bulk_report(&rp, t, VERIFY_HASH, 0, 1500, true);
    rep_end(&rp);
    fclose(f);
    return v;
}

/* Received streams (s, n) against sent streams (s, n). */
static bool run(const int (*rx)[2], int nrx, const int (*tx)[2], int ntx)
{
    bulk_total t;
    bulk_total_init(&t);
    for (int i = 0; i < nrx; i++) {
        bulk_rx r;
        bulk_rx_init(&r, VERIFY_HASH);
        feed(&r, rx[i][0], (size_t)rx[i][1]);
        bulk_total_add(&t, &r);
    }
    for (int i = 0; i < ntx; i++) {
        sha256 h;
        hash_of(&h, tx[i][0], (size_t)tx[i][1]);
        bulk_total_sent(&t, &h);
    }
    return verdict(&t);
}

static void same_streams_any_order(void **state)
{
    (void)state;
    const int tx[3][2] = {{0, 5000}, {1, 7000}, {2, 1}};
    const int rx[3][2] = {{2, 1}, {0, 5000}, {1, 7000}};
    assert_true(run(rx, 3, tx, 3));
}

static void a_short_stream_fails(void **state)
{
    (void)state;
    const int tx[2][2] = {{0, 5000}, {1, 7000}};
    const int rx[2][2] = {{0, 5000}, {1, 6999}};
    assert_false(run(rx, 2, tx, 2));
}

static void other_bytes_fail(void **state)
{
    (void)state;
    const int tx[2][2] = {{0, 5000}, {1, 7000}};
    const int rx[2][2] = {{0, 5000}, {3, 7000}};
    assert_false(run(rx, 2, tx, 2));
}

static void a_missing_stream_fails(void **state)
{
    (void)state;
    const int tx[2][2] = {{0, 5000}, {1, 7000}};
    const int rx[1][2] = {{0, 5000}};
    assert_false(run(rx, 1, tx, 2));
}

static void nothing_sent_is_not_verified(void **state)
{
    (void)state;
    /* A receiver alone (--server) cannot know what was sent. */
    const int rx[1][2] = {{0, 5000}};
    assert_false(run(rx, 1, NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_streams_any_order),
        cmocka_unit_test(a_short_stream_fails),
        cmocka_unit_test(other_bytes_fail),
        cmocka_unit_test(a_missing_stream_fails),
        cmocka_unit_test(nothing_sent_is_not_verified),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
