/* test_memlink.c - the mem link: copying, bounds, timing and the seeded
 * fault injector (offloads: test_memlink_offload.c, pcap: test_pcap.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link_util.h"

static tern_memlink_config small_cfg(void)
{
    tern_memlink_config c;
    tern_memlink_config_defaults(&c);
    c.pool_size = 64;
    c.queue_len = 64;
    return c;
}

static void bad_config_rejected(void **state)
{
    (void)state;
    char err[160] = "";
    tern_memlink_config c = small_cfg();
    c.buf_size = TERN_HEADROOM + 100;
    assert_null(tern_memlink_create(&c, err, sizeof(err)));
    assert_non_null(strstr(err, "buf_size"));
    c = small_cfg();
    c.faults.loss = 1.5;
    assert_null(tern_memlink_create(&c, err, sizeof(err)));
    assert_non_null(strstr(err, "probabilit"));
}

static void frames_cross_copied(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    tern_memlink *l = link_new(&c);
    uint8_t f[1600], g[1600];
    size_t n = f_udp(f, 100, 1, false);
    tern_buf *s = f_buf(tern_memlink_pool(l, 0), f, n);
    tern_memlink_tx(tern_memlink_tx_ctx(l, 0), &s, 1);
    /* The sender's frame went home; the copy sits in the receiver's pool. */
    assert_int_equal(tern_pool_available(tern_memlink_pool(l, 0)), 64);
    assert_int_equal(tern_pool_available(tern_memlink_pool(l, 1)), 63);
    assert_int_equal(tern_memlink_next_event(l, 1), 0);
    assert_int_equal(tern_memlink_next_event(l, 0), UINT64_MAX);
    tern_buf *r[4];
    assert_int_equal(tern_memlink_rx(l, 0, r, 4, 0), 0);
    tern_buf *b = recv_one(l, 1, 0);
    assert_true(tern_pool_owns(tern_memlink_pool(l, 1), b));
    assert_false(tern_pool_owns(tern_memlink_pool(l, 0), b));
    assert_int_equal(b->len, n);
    assert_memory_equal(b->data, f, n);
    assert_ptr_equal(b->data, b->head + TERN_HEADROOM);
    assert_int_equal(b->flags, 0);
    assert_int_equal(b->refs, 1);
    release(l, 1, b);

    /* And the other way. */
    size_t m = f_tcp(g, 1000, 7, 0x18, 0, 9, false);
    send_bytes(l, 1, g, m);
    b = recv_one(l, 0, 0);
    assert_true(tern_pool_owns(tern_memlink_pool(l, 0), b));
    assert_memory_equal(b->data, g, m);
    release(l, 0, b);

    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->sent, 1);
    assert_int_equal(st->wire, 1);
    assert_int_equal(st->delivered, 1);
    assert_int_equal(st->sent_bytes, n);
    assert_int_equal(st->delivered_bytes, n);
    assert_int_equal(tern_memlink_get_stats(l, 1)->delivered, 1);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* n frames of len bytes from end 0, frame i filled with byte i. */
static void numbered_frames(tern_memlink *l, tern_buf **s, int n, uint32_t len)
{
    for (int i = 0; i < n; i++) {
        s[i] = tern_pool_alloc(tern_memlink_pool(l, 0));
        assert_non_null(s[i]);
        s[i]->len = len;
        memset(s[i]->data, i, len);
    }
}

static void burst_keeps_order(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    tern_memlink *l = link_new(&c);
    tern_buf *s[32], *r[32];
    numbered_frames(l, s, 32, 60);
    tern_memlink_tx(tern_memlink_tx_ctx(l, 0), s, 32);
    assert_int_equal(tern_memlink_pending(l, 1), 32);
    assert_int_equal(tern_memlink_rx(l, 1, r, 20, 0), 20);
    assert_int_equal(tern_memlink_rx(l, 1, r + 20, 20, 0), 12);
    for (int i = 0; i < 32; i++) {
        assert_int_equal(r[i]->data[59], i);
        release(l, 1, r[i]);
    }
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void queue_bound_counted(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.queue_len = 8;
    tern_memlink *l = link_new(&c);
    uint8_t f[64] = {0};
    for (int i = 0; i < 20; i++) {
        f[20] = (uint8_t)i;
        send_bytes(l, 0, f, sizeof(f));
    }
    assert_int_equal(tern_memlink_get_stats(l, 0)->queue_drops, 12);
    assert_int_equal(tern_memlink_pending(l, 1), 8);
    tern_buf *r[32];
    assert_int_equal(tern_memlink_rx(l, 1, r, 32, 0), 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(r[i]->data[20], i);
        release(l, 1, r[i]);
    }
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void receiver_pool_empty_counted(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.pool_size = 4;
    tern_memlink *l = link_new(&c);
    uint8_t f[64] = {0};
    for (int i = 0; i < 10; i++)
        send_bytes(l, 0, f, sizeof(f));
    assert_int_equal(tern_memlink_get_stats(l, 0)->pool_drops, 6);
    tern_buf *r[16];
    unsigned n = tern_memlink_rx(l, 1, r, 16, 0);
    assert_int_equal(n, 4);
    for (unsigned i = 0; i < n; i++)
        release(l, 1, r[i]);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* A small link with three frames sent from end 0: big, small, and big of
 * odd length; rx_sum as the link's option. */
typedef struct three {
    tern_memlink *l;
    tern_pool *p0, *p1;
    uint8_t f[3][1600];
    size_t len[3], total;
    bool rx_sum;
} three;

static void three_sent(three *t, bool rx_sum)
{
    tern_memlink_config c = small_cfg();
    c.rx_sum = rx_sum;
    t->rx_sum = rx_sum;
    t->l = link_new(&c);
    t->p0 = tern_memlink_pool(t->l, 0);
    t->p1 = tern_memlink_pool(t->l, 1);
    t->len[0] = f_tcp(t->f[0], 1000, 7, 0x18, 0, 9, false);
    t->len[1] = f_udp(t->f[1], 100, 1, false);
    t->len[2] = f_tcp(t->f[2], 1441, 8, 0x18, 12, 3, false);
    t->total = t->len[0] + t->len[1] + t->len[2];
    tern_buf *s[3];
    for (int i = 0; i < 3; i++)
        s[i] = f_buf(t->p0, t->f[i], t->len[i]);
    tern_memlink_tx(tern_memlink_tx_ctx(t->l, 0), s, 3);
}

/* Frame i of t as received in b: its bytes, and with rx_sum for the big
 * ones their sum after the Ethernet header (RX_SUM); the small one, and
 * every frame without rx_sum, has no flag: the stack sums it. */
static void three_frame_ok(const three *t, int i, const tern_buf *b)
{
    assert_true(tern_pool_owns(t->p1, b));
    assert_int_equal(b->len, t->len[i]);
    assert_memory_equal(b->data, t->f[i], t->len[i]);
    assert_int_equal(b->refs, 1);
    bool summed = t->rx_sum && i != 1;
    assert_int_equal(b->flags, summed ? TERN_BUF_RX_SUM : 0);
    if (summed)
        assert_int_equal(b->rx_sum,
                         tern_csum_fold(tern_csum_partial(b->data + 14,
                                                          t->len[i] - 14, 0)));
}

/* A frame longer than the small ones (bulk data) stays the sender's buffer
 * in the ring and is copied when the receiver takes it, with rx_sum with
 * the sum of its bytes after the Ethernet header (RX_SUM), without it as
 * a plain copy; small frames are copied at once and carry no flag. Order
 * and bytes are kept either way. */
static void big_frames_land(bool rx_sum)
{
    three t;
    three_sent(&t, rx_sum);
    assert_int_equal(tern_pool_available(t.p0), 62);   /* held by the link */
    assert_int_equal(tern_pool_available(t.p1), 63);   /* the small copy */
    tern_buf *r[4];
    assert_int_equal(tern_memlink_rx(t.l, 1, r, 4, 0), 3);
    assert_int_equal(tern_pool_available(t.p0), 64);
    for (int i = 0; i < 3; i++) {
        assert_ptr_equal(r[i]->data, r[i]->head + TERN_HEADROOM);
        three_frame_ok(&t, i, r[i]);
    }
    const tern_memlink_stats *st = tern_memlink_get_stats(t.l, 0);
    assert_int_equal(st->delivered, 3);
    assert_int_equal(st->delivered_bytes, t.total);
    for (int i = 0; i < 3; i++)
        release(t.l, 1, r[i]);
    assert_pools_full(t.l);
    tern_memlink_destroy(t.l);
}

static void big_frames_land_on_receive(void **state)
{
    (void)state;
    big_frames_land(false);
}

static void big_frames_land_summed_with_rx_sum(void **state)
{
    (void)state;
    big_frames_land(true);
}

/* The same frames taken in two steps (tern_memlink_rx_unlanded, then
 * tern_memlink_land each): the big ones stay the sender's until landed,
 * each lands into the receiver buffer the previous frame freed (so it is
 * still in cache), with the same bytes and sum as tern_memlink_rx gives.
 * A frame with no receiver buffer left is a counted drop; a burst of small
 * frames only needs no landing. */
static void frames_land_one_by_one(void **state)
{
    (void)state;
    three t;
    three_sent(&t, true);
    tern_memlink *l = t.l;
    tern_buf *r[4];
    bool unlanded = false;
    assert_int_equal(tern_memlink_rx_unlanded(l, 1, r, 4, 0, &unlanded), 3);
    assert_true(unlanded);
    assert_true(tern_pool_owns(t.p0, r[0]));         /* not copied yet */
    assert_true(tern_pool_owns(t.p1, r[1]));         /* copied when sent */
    assert_int_equal(tern_pool_available(t.p1), 63);
    tern_buf *prev = NULL;
    for (int i = 0; i < 3; i++) {
        tern_buf *b = tern_memlink_land(l, 1, r[i]);
        assert_non_null(b);
        if (i == 2)
            assert_ptr_equal(b, prev);               /* the freed one */
        three_frame_ok(&t, i, b);
        prev = b;
        release(l, 1, b);
    }
    assert_int_equal(tern_pool_available(t.p0), 64);
    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->delivered, 3);
    assert_int_equal(st->delivered_bytes, t.total);

    /* no receiver buffer: the big frame is dropped and counted */
    send_bytes(l, 0, t.f[0], t.len[0]);
    assert_int_equal(tern_memlink_rx_unlanded(l, 1, r, 4, 0, &unlanded), 1);
    tern_buf *held[65];     /* the pool's 64, and the NULL that ends it */
    unsigned nh = 0;
    while (nh < 65 && (held[nh] = tern_pool_alloc(t.p1)) != NULL)
        nh++;
    assert_int_equal(nh, 64);
    assert_null(tern_memlink_land(l, 1, r[0]));
    assert_int_equal(st->pool_drops, 1);
    assert_int_equal(st->delivered, 3);
    assert_int_equal(st->delivered_bytes, t.total);
    for (unsigned i = 0; i < nh; i++)
        release(l, 1, held[i]);

    /* only small frames: nothing left to land */
    send_bytes(l, 0, t.f[1], t.len[1]);
    assert_int_equal(tern_memlink_rx_unlanded(l, 1, r, 4, 0, &unlanded), 1);
    assert_false(unlanded);
    assert_memory_equal(r[0]->data, t.f[1], t.len[1]);
    release(l, 1, r[0]);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* A receiver without a free buffer when it takes a big frame loses it:
 * counted as a pool drop, not delivered, the sender's buffer home. */
static void big_frame_without_receiver_buffer(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.pool_size = 4;
    tern_memlink *l = link_new(&c);
    tern_pool *p0 = tern_memlink_pool(l, 0), *p1 = tern_memlink_pool(l, 1);
    uint8_t f[1600];
    size_t n = f_tcp(f, 1200, 7, 0x18, 0, 9, false);
    send_bytes(l, 0, f, n);
    send_bytes(l, 0, f, n);
    tern_buf *held[4];
    for (int i = 0; i < 3; i++)
        held[i] = tern_pool_alloc(p1);
    tern_buf *r[4];
    assert_int_equal(tern_memlink_rx(l, 1, r, 4, 0), 1);   /* one buffer */
    assert_memory_equal(r[0]->data, f, n);
    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->pool_drops, 1);
    assert_int_equal(st->delivered, 1);
    assert_int_equal(st->delivered_bytes, n);
    assert_int_equal(tern_pool_available(p0), 4);
    assert_int_equal(tern_memlink_pending(l, 1), 0);
    release(l, 1, r[0]);
    for (int i = 0; i < 3; i++)
        release(l, 1, held[i]);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void delay_holds_frames(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.faults.delay_ns = 1000;
    tern_memlink *l = link_new(&c);
    uint8_t f[100] = {1};
    tern_memlink_set_time(l, 5000);
    send_bytes(l, 0, f, sizeof(f));
    tern_memlink_set_time(l, 5500);
    send_bytes(l, 0, f, sizeof(f));
    assert_int_equal(tern_memlink_next_event(l, 1), 6000);
    tern_buf *r[4];
    assert_int_equal(tern_memlink_rx(l, 1, r, 4, 5999), 0);
    assert_int_equal(tern_memlink_rx(l, 1, r, 4, 6000), 1);
    release(l, 1, r[0]);
    assert_int_equal(tern_memlink_next_event(l, 1), 6500);
    assert_int_equal(tern_memlink_rx(l, 1, r, 4, 6499), 0);
    assert_int_equal(tern_memlink_rx(l, 1, r, 4, 7000), 1);
    release(l, 1, r[0]);
    assert_int_equal(tern_memlink_next_event(l, 1), UINT64_MAX);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void rate_spaces_frames(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.faults.rate_bps = 1000000000;  /* 1 Gbit/s: 1 ns per bit */
    c.faults.delay_ns = 100;
    tern_memlink *l = link_new(&c);
    uint8_t f[1000] = {0};
    /* (1000 + 24) bytes * 8 = 8192 ns on the wire each, back to back. */
    for (int i = 0; i < 3; i++)
        send_bytes(l, 0, f, sizeof(f));
    tern_buf *r[4];
    for (uint64_t i = 1; i <= 3; i++) {
        uint64_t due = i * 8192 + 100;
        assert_int_equal(tern_memlink_next_event(l, 1), due);
        assert_int_equal(tern_memlink_rx(l, 1, r, 4, due - 1), 0);
        assert_int_equal(tern_memlink_rx(l, 1, r, 4, due), 1);
        release(l, 1, r[0]);
    }
    /* An idle wire does not bank credit: the next frame starts now. */
    tern_memlink_set_time(l, 1000000);
    send_bytes(l, 0, f, sizeof(f));
    assert_int_equal(tern_memlink_next_event(l, 1), 1000000 + 8192 + 100);
    assert_int_equal(tern_memlink_rx(l, 1, r, 4, 2000000), 1);
    release(l, 1, r[0]);
    /* Fractional nanoseconds carry over: 3 frames at 3 bit/ns... */
    tern_memlink_faults fl = {.rate_bps = 3000000000};
    tern_memlink_set_faults(l, 0, &fl);
    tern_memlink_set_time(l, 3000000);
    for (int i = 0; i < 3; i++)
        send_bytes(l, 0, f, 1);  /* 25 bytes = 200 bits = 66.67 ns */
    assert_int_equal(tern_memlink_rx(l, 1, r, 4, 3000000 + 199), 2);
    assert_int_equal(tern_memlink_rx(l, 1, r + 2, 4, 3000000 + 200), 1);
    for (int i = 0; i < 3; i++)
        release(l, 1, r[i]);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void reorder_swaps_with_next(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.faults.reorder = 1.0;
    c.faults.reorder_hold_ns = 50000;
    tern_memlink *l = link_new(&c);
    uint8_t f[64] = {0};
    tern_memlink_set_time(l, 1000);
    for (int i = 1; i <= 5; i++) {
        f[30] = (uint8_t)i;
        send_bytes(l, 0, f, sizeof(f));
    }
    /* Every frame is chosen: 1 is held, 2 finds the slot taken and passes
     * it, 3 is held, 4 passes it, 5 waits for a successor. */
    tern_buf *r[8];
    assert_int_equal(tern_memlink_rx(l, 1, r, 8, 1000), 4);
    const int want[4] = {2, 1, 4, 3};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r[i]->data[30], want[i]);
        release(l, 1, r[i]);
    }
    assert_int_equal(tern_memlink_pending(l, 1), 1);
    assert_int_equal(tern_memlink_next_event(l, 1), 51000);
    assert_int_equal(tern_memlink_rx(l, 1, r, 8, 50999), 0);
    assert_int_equal(tern_memlink_rx(l, 1, r, 8, 51000), 1);
    assert_int_equal(r[0]->data[30], 5);
    release(l, 1, r[0]);
    assert_int_equal(tern_memlink_get_stats(l, 0)->reordered, 2);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void dup_delivers_twice(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.faults.dup = 1.0;
    tern_memlink *l = link_new(&c);
    uint8_t f[200];
    size_t n = f_udp(f, 150, 3, false);
    send_bytes(l, 0, f, n);
    tern_buf *r[4];
    assert_int_equal(tern_memlink_rx(l, 1, r, 4, 0), 2);
    assert_ptr_not_equal(r[0], r[1]);
    assert_memory_equal(r[0]->data, f, n);
    assert_memory_equal(r[1]->data, f, n);
    release(l, 1, r[0]);
    release(l, 1, r[1]);
    assert_int_equal(tern_memlink_get_stats(l, 0)->duplicated, 1);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* Every frame length the inline copy handles (17..256) and its edges, from
 * a source that is not 16-byte aligned: exact bytes, and nothing written
 * past the frame's end in the receiver's buffer. */
static void every_length_copied_exactly(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    tern_memlink *l = link_new(&c);
    tern_pool *rp = tern_memlink_pool(l, 1);
    /* Poison the receiver's buffers to see stray writes. */
    tern_buf *all[64];
    for (int i = 0; i < 64; i++) {
        all[i] = tern_pool_alloc(rp);
        memset(all[i]->head, 0xee, all[i]->size);
    }
    for (int i = 0; i < 64; i++)
        tern_pool_release(rp, all[i]);
    for (uint32_t len = 1; len <= 1514; len += len < 300 ? 1 : 97) {
        tern_buf *s = tern_pool_alloc(tern_memlink_pool(l, 0));
        s->data += 3;   /* unaligned source */
        for (uint32_t k = 0; k < len; k++)
            s->data[k] = (uint8_t)(k * 7 + len);
        s->len = len;
        tern_memlink_tx(tern_memlink_tx_ctx(l, 0), &s, 1);
        tern_buf *b = recv_one(l, 1, 0);
        assert_int_equal(b->len, len);
        for (uint32_t k = 0; k < len; k++)
            if (b->data[k] != (uint8_t)(k * 7 + len))
                fail_msg("length %u: byte %u differs", len, k);
        for (uint32_t k = len; k < len + 64; k++)
            if (b->data[k] != 0xee)
                fail_msg("length %u: byte %u past the end written", len, k);
        memset(b->data, 0xee, len);   /* poisoned again for its next use */
        release(l, 1, b);
    }
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* delivered_bytes counts exactly the frames rx returned: a whole ring, a
 * part of it, frames that took the faulty path, and frag chains. */
static void delivered_bytes_exact(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.caps[0] = c.caps[1] = TERN_CAP_SG;
    c.buf_size = TERN_HEADROOM + 512;   /* 1000-byte frames are chains */
    tern_memlink *l = link_new(&c);
    const uint32_t lens[] = {60, 130, 1000, 17, 256, 1000, 64};
    uint8_t f[1000];
    memset(f, 0x5a, sizeof f);
    uint64_t sent = 0;
    for (unsigned i = 0; i < 7; i++) {
        send_bytes(l, 0, f, lens[i]);
        sent += lens[i];
    }
    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->sent_bytes, sent);
    tern_buf *r[8];
    /* Part of the ring: 60 + 130 + 1000. */
    assert_int_equal(tern_memlink_rx(l, 1, r, 3, 0), 3);
    assert_int_equal(st->delivered_bytes, 1190);
    assert_non_null(r[2]->frag);
    for (int i = 0; i < 3; i++)
        release(l, 1, r[i]);
    /* The rest of it at once. */
    assert_int_equal(tern_memlink_rx(l, 1, r, 8, 0), 4);
    assert_int_equal(st->delivered_bytes, sent);
    for (int i = 0; i < 4; i++)
        release(l, 1, r[i]);
    /* Frames through the fault path (every one duplicated), then a plain
     * one behind them in the same ring. */
    tern_memlink_faults dup = {.dup = 1.0};
    tern_memlink_set_faults(l, 0, &dup);
    send_bytes(l, 0, f, 100);
    send_bytes(l, 0, f, 1000);
    tern_memlink_faults none = {0};
    tern_memlink_set_faults(l, 0, &none);
    send_bytes(l, 0, f, 40);
    assert_int_equal(tern_memlink_pending(l, 1), 5);
    assert_int_equal(tern_memlink_rx(l, 1, r, 8, 0), 5);
    assert_int_equal(st->delivered_bytes, sent + 2 * 1100 + 40);
    assert_int_equal(st->delivered, 12);
    for (int i = 0; i < 5; i++)
        release(l, 1, r[i]);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* Bursts that cross the ring's end (16 slots), taken back in two pieces
 * each: every frame arrives once, in order, with its bytes, and the
 * counters add up. Half of the sent frames keep a second owner (as the
 * TCP send queue does): the link drops only its own reference. */
static void bursts_across_ring_end(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.queue_len = 16;
    tern_memlink *l = link_new(&c);
    tern_pool *sp = tern_memlink_pool(l, 0);
    uint64_t bytes = 0;
    unsigned seq = 0;
    for (unsigned round = 0; round < 12; round++) {
        tern_buf *s[7], *kept[7], *r[8];
        unsigned nkept = 0;
        for (unsigned i = 0; i < 7; i++) {
            uint32_t len = 20 + (seq * 37) % 240;
            s[i] = tern_pool_alloc(sp);
            s[i]->len = len;
            memset(s[i]->data, (int)(seq & 0xff), len);
            s[i]->data[len - 1] = (uint8_t)len;
            if (seq % 2) {
                s[i]->refs++;
                kept[nkept++] = s[i];
            }
            bytes += len;
            seq++;
        }
        tern_memlink_tx(tern_memlink_tx_ctx(l, 0), s, 7);
        for (unsigned k = 0; k < nkept; k++) {
            assert_int_equal(kept[k]->refs, 1);
            tern_pool_release_one(sp, kept[k]);
        }
        assert_int_equal(tern_pool_available(sp), tern_pool_count(sp));
        assert_int_equal(tern_memlink_rx(l, 1, r, 3, 0), 3);
        assert_int_equal(tern_memlink_rx(l, 1, r + 3, 8, 0), 4);
        for (unsigned i = 0; i < 7; i++) {
            unsigned q = seq - 7 + i;
            uint32_t len = 20 + (q * 37) % 240;
            assert_int_equal(r[i]->len, len);
            assert_int_equal(r[i]->data[0], q & 0xff);
            assert_int_equal(r[i]->data[len - 1], (uint8_t)len);
            release(l, 1, r[i]);
        }
    }
    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->sent, seq);
    assert_int_equal(st->wire, seq);
    assert_int_equal(st->delivered, seq);
    assert_int_equal(st->sent_bytes, bytes);
    assert_int_equal(st->delivered_bytes, bytes);
    assert_int_equal(st->queue_drops + st->pool_drops, 0);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* One burst mixing the fast path's two copies (17..256 bytes inline,
 * others by memcpy) back and forth: order, bytes and counters. */
static void burst_mixed_lengths(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    tern_memlink *l = link_new(&c);
    const uint32_t lens[] = {60, 1000, 1400, 130, 8, 256, 257, 17, 1514, 16};
    enum { N = sizeof lens / sizeof lens[0] };
    tern_buf *s[N], *r[N + 1];
    uint64_t bytes = 0;
    for (unsigned i = 0; i < N; i++) {
        s[i] = tern_pool_alloc(tern_memlink_pool(l, 0));
        s[i]->len = lens[i];
        for (uint32_t k = 0; k < lens[i]; k++)
            s[i]->data[k] = (uint8_t)(k * 3 + i);
        bytes += lens[i];
    }
    tern_memlink_tx(tern_memlink_tx_ctx(l, 0), s, N);
    assert_int_equal(tern_memlink_rx(l, 1, r, N + 1, 0), N);
    for (unsigned i = 0; i < N; i++) {
        assert_int_equal(r[i]->len, lens[i]);
        for (uint32_t k = 0; k < lens[i]; k++)
            if (r[i]->data[k] != (uint8_t)(k * 3 + i))
                fail_msg("frame %u: byte %u differs", i, k);
        release(l, 1, r[i]);
    }
    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->sent, N);
    assert_int_equal(st->wire, N);
    assert_int_equal(st->sent_bytes, bytes);
    assert_int_equal(st->delivered_bytes, bytes);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* Frames with a due time and plain ones (which store none) in the same
 * ring slots, lap after lap: a plain frame is due at once even where an
 * earlier lap left a due time far ahead in its slot, and a delayed frame
 * is still the next event. (Not checked: rx before that time. It takes
 * the whole ring when its last frame is due, and plain frames queued
 * behind a delayed one are: an old shortcut, kept as it was.) */
static void delayed_and_plain_frames_share_slots(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.queue_len = 8;
    tern_memlink *l = link_new(&c);
    const tern_memlink_faults slow = {.delay_ns = 1000000000}, none = {0};
    uint8_t f[64] = {0};
    tern_buf *r[16];
    for (uint64_t lap = 0; lap < 3; lap++) {
        uint64_t t0 = lap * 10000000000ull, t1 = t0 + 1000000000;
        tern_memlink_set_time(l, t0);
        tern_memlink_set_faults(l, 0, &slow);
        for (int i = 0; i < 8; i++)       /* every slot: due at t1 */
            send_bytes(l, 0, f, sizeof f);
        assert_int_equal(tern_memlink_rx(l, 1, r, 16, t0), 0);
        assert_int_equal(tern_memlink_next_event(l, 1), t1);
        assert_int_equal(tern_memlink_rx(l, 1, r, 16, t1), 8);
        for (int i = 0; i < 8; i++)
            release(l, 1, r[i]);
        tern_memlink_set_faults(l, 0, &none);
        for (int i = 0; i < 3; i++) {     /* plain, in slots due at t1 */
            f[20] = (uint8_t)(lap * 16 + i);
            send_bytes(l, 0, f, sizeof f);
        }
        assert_int_equal(tern_memlink_next_event(l, 1), 0);
        tern_memlink_set_faults(l, 0, &slow);
        f[20] = (uint8_t)(lap * 16 + 3);
        send_bytes(l, 0, f, sizeof f);    /* due at t1 + 1 s */
        tern_memlink_set_faults(l, 0, &none);
        for (int i = 4; i < 6; i++) {
            f[20] = (uint8_t)(lap * 16 + i);
            send_bytes(l, 0, f, sizeof f);
        }
        tern_buf *p[3];
        /* Taken at t0, before the stale due times of their slots. */
        assert_int_equal(tern_memlink_rx(l, 1, p, 2, t0), 2);
        assert_int_equal(tern_memlink_rx(l, 1, p + 2, 1, t0), 1);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(p[i]->data[20], lap * 16 + i);
            release(l, 1, p[i]);
        }
        assert_int_equal(tern_memlink_next_event(l, 1), t1 + 1000000000);
        assert_int_equal(tern_memlink_rx(l, 1, r, 16, t1 + 1000000000), 3);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(r[i]->data[20], lap * 16 + 3 + i);
            release(l, 1, r[i]);
        }
        assert_int_equal(tern_memlink_next_event(l, 1), UINT64_MAX);
    }
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* A burst larger than the queue or the receiver's pool: the fast path
 * takes what fits, the rest is counted as before. */
static void burst_over_limits_counted(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    c.queue_len = 8;
    tern_memlink *l = link_new(&c);
    tern_buf *s[20], *r[20];
    numbered_frames(l, s, 20, 100);
    tern_memlink_tx(tern_memlink_tx_ctx(l, 0), s, 20);
    assert_int_equal(tern_memlink_get_stats(l, 0)->queue_drops, 12);
    assert_int_equal(tern_memlink_get_stats(l, 0)->sent, 20);
    assert_int_equal(tern_memlink_rx(l, 1, r, 20, 0), 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(r[i]->data[99], i);
        release(l, 1, r[i]);
    }
    tern_memlink_destroy(l);

    c = small_cfg();
    c.pool_size = 6;
    l = link_new(&c);
    numbered_frames(l, s, 6, 100);
    /* The receiver's pool holds 5 free buffers. */
    tern_buf *hold = tern_pool_alloc(tern_memlink_pool(l, 1));
    tern_memlink_tx(tern_memlink_tx_ctx(l, 0), s, 6);
    assert_int_equal(tern_memlink_get_stats(l, 0)->pool_drops, 1);
    assert_int_equal(tern_memlink_rx(l, 1, r, 20, 0), 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r[i]->data[0], i);
        release(l, 1, r[i]);
    }
    release(l, 1, hold);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void faults_per_direction(void **state)
{
    (void)state;
    tern_memlink_config c = small_cfg();
    tern_memlink *l = link_new(&c);
    tern_memlink_faults lossy = {.loss = 1.0};
    tern_memlink_set_faults(l, 0, &lossy);
    uint8_t f[64] = {0};
    send_bytes(l, 0, f, sizeof(f));
    send_bytes(l, 1, f, sizeof(f));
    tern_buf *r[4];
    assert_int_equal(tern_memlink_rx(l, 1, r, 4, 0), 0);
    assert_int_equal(tern_memlink_rx(l, 0, r, 4, 0), 1);
    release(l, 0, r[0]);
    assert_int_equal(tern_memlink_get_stats(l, 0)->lost, 1);
    assert_int_equal(tern_memlink_get_stats(l, 1)->lost, 0);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* ---- the injector over many frames ---- */

/* 64-bit FNV-1a, to fingerprint what was delivered. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Send `frames` numbered frames with every fault on; fingerprint the
 * delivered sequence. */
static uint64_t faulty_run(uint64_t seed, unsigned frames, tern_memlink_stats *st)
{
    tern_memlink_config c = small_cfg();
    c.pool_size = 256;
    c.queue_len = 256;
    c.seed = seed;
    c.faults = (tern_memlink_faults){.loss = 0.05, .dup = 0.05,
                                     .reorder = 0.05, .corrupt = 0.05};
    tern_memlink *l = link_new(&c);
    uint64_t h = 0xcbf29ce484222325ull, now = 0;
    uint8_t f[300];
    tern_buf *r[8];
    for (unsigned i = 0; i < frames; i++) {
        size_t n = f_udp(f, 20 + i % 200, i, false);
        send_bytes(l, 0, f, n);
        now += 1000;
        unsigned k = tern_memlink_rx(l, 1, r, 8, now);
        for (unsigned j = 0; j < k; j++) {
            h = fnv(h, &r[j]->len, sizeof(r[j]->len));
            h = fnv(h, r[j]->data, r[j]->len);
            release(l, 1, r[j]);
        }
    }
    unsigned k;
    while ((k = tern_memlink_rx(l, 1, r, 8, now + 10000000)))
        for (unsigned j = 0; j < k; j++) {
            h = fnv(h, r[j]->data, r[j]->len);
            release(l, 1, r[j]);
        }
    assert_int_equal(tern_memlink_pending(l, 1), 0);
    *st = *tern_memlink_get_stats(l, 0);
    assert_pools_full(l);
    tern_memlink_destroy(l);
    return h;
}

static void injector_deterministic(void **state)
{
    (void)state;
    tern_memlink_stats a, b, c;
    uint64_t ha = faulty_run(42, 5000, &a);
    uint64_t hb = faulty_run(42, 5000, &b);
    uint64_t hc = faulty_run(43, 5000, &c);
    assert_int_equal(ha, hb);
    assert_memory_equal(&a, &b, sizeof(a));
    assert_true(ha != hc);
    assert_true(memcmp(&a, &c, sizeof(a)) != 0);
    /* Everything happened, and the books balance. */
    assert_true(a.lost && a.duplicated && a.reordered && a.corrupted);
    assert_int_equal(a.delivered, a.sent - a.lost + a.duplicated);
}

#define RATE_FRAMES 100000

static void assert_rate(uint64_t count, double p)
{
    double r = (double)count / RATE_FRAMES;
    if (r < p - 0.015 || r > p + 0.015)
        fail_msg("rate %.4f outside %.3f +- 0.015", r, p);
}

/* Send RATE_FRAMES numbered 64-byte frames under `f`, one at a time;
 * check() sees every delivered frame with the frame it was sent as. */
typedef struct rate_ctx {
    uint64_t diff_frames;   /* delivered frames whose bytes changed */
    uint64_t late;          /* frames delivered after a later-numbered one */
    uint32_t max_seen;
    uint8_t *seen;          /* deliveries per number */
} rate_ctx;

static void frame_bytes(uint8_t f[64], uint32_t i)
{
    memset(f, 0x5a, 64);
    memcpy(f + 20, &i, 4);
}

static void check_delivered(rate_ctx *x, tern_buf *b, uint32_t sent_index,
                            bool by_position)
{
    uint8_t want[64];
    uint32_t id;
    memcpy(&id, b->data + 20, 4);
    assert_int_equal(b->len, 64);
    frame_bytes(want, by_position ? sent_index : id);
    int bits = 0, pos = -1;
    for (int i = 0; i < 64; i++) {
        int d = __builtin_popcount(want[i] ^ b->data[i]);
        if (d)
            pos = i;
        bits += d;
    }
    if (bits) {
        assert_int_equal(bits, 1);  /* exactly one bit */
        assert_true(pos >= 14);     /* never the Ethernet header */
        x->diff_frames++;
    }
    if (!by_position) {
        assert_true(id < RATE_FRAMES);
        x->seen[id]++;
        if (id < x->max_seen)
            x->late++;
        else
            x->max_seen = id;
    }
}

static tern_memlink_stats rate_run(const tern_memlink_faults *f, rate_ctx *x,
                                   bool by_position)
{
    tern_memlink_config c = small_cfg();
    c.seed = 7;
    c.faults = *f;
    tern_memlink *l = link_new(&c);
    uint8_t fr[64];
    tern_buf *r[8];
    uint64_t now = 0;
    uint32_t pos = 0;
    memset(x, 0, sizeof(*x));
    x->seen = calloc(RATE_FRAMES, 1);
    for (uint32_t i = 0; i < RATE_FRAMES; i++) {
        frame_bytes(fr, i);
        send_bytes(l, 0, fr, 64);
        now += 100;
        unsigned k = tern_memlink_rx(l, 1, r, 8, now);
        for (unsigned j = 0; j < k; j++) {
            check_delivered(x, r[j], pos++, by_position);
            release(l, 1, r[j]);
        }
    }
    unsigned k;
    while ((k = tern_memlink_rx(l, 1, r, 8, now + 100000000)))
        for (unsigned j = 0; j < k; j++) {
            check_delivered(x, r[j], pos++, by_position);
            release(l, 1, r[j]);
        }
    tern_memlink_stats st = *tern_memlink_get_stats(l, 0);
    assert_int_equal(st.delivered, pos);
    assert_pools_full(l);
    tern_memlink_destroy(l);
    return st;
}

static void loss_rate(void **state)
{
    (void)state;
    rate_ctx x;
    tern_memlink_stats st = rate_run(&(tern_memlink_faults){.loss = 0.1}, &x, false);
    assert_rate(st.lost, 0.1);
    assert_int_equal(st.delivered, RATE_FRAMES - st.lost);
    assert_int_equal(x.late, 0);
    assert_int_equal(x.diff_frames, 0);
    free(x.seen);
}

static void dup_rate(void **state)
{
    (void)state;
    rate_ctx x;
    tern_memlink_stats st = rate_run(&(tern_memlink_faults){.dup = 0.1}, &x, false);
    assert_rate(st.duplicated, 0.1);
    assert_int_equal(st.delivered, RATE_FRAMES + st.duplicated);
    uint64_t twice = 0;
    for (uint32_t i = 0; i < RATE_FRAMES; i++) {
        assert_true(x.seen[i] == 1 || x.seen[i] == 2);
        twice += x.seen[i] == 2;
    }
    assert_int_equal(twice, st.duplicated);
    free(x.seen);
}

static void corrupt_rate_one_bit(void **state)
{
    (void)state;
    rate_ctx x;
    tern_memlink_stats st = rate_run(&(tern_memlink_faults){.corrupt = 0.1}, &x, true);
    assert_rate(st.corrupted, 0.1);
    assert_int_equal(x.diff_frames, st.corrupted);
    assert_int_equal(st.delivered, RATE_FRAMES);
    free(x.seen);
}

static void reorder_rate(void **state)
{
    (void)state;
    rate_ctx x;
    tern_memlink_stats st = rate_run(&(tern_memlink_faults){.reorder = 0.1}, &x, false);
    /* A frame chosen while another is held passes it instead of being
     * held, so the share of reordered frames is p / (1 + p). */
    assert_rate(st.reordered, 0.1 / 1.1);
    assert_int_equal(x.late, st.reordered);
    for (uint32_t i = 0; i < RATE_FRAMES; i++)
        assert_int_equal(x.seen[i], 1);
    free(x.seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_config_rejected),
        cmocka_unit_test(frames_cross_copied),
        cmocka_unit_test(burst_keeps_order),
        cmocka_unit_test(queue_bound_counted),
        cmocka_unit_test(receiver_pool_empty_counted),
        cmocka_unit_test(big_frames_land_on_receive),
        cmocka_unit_test(big_frames_land_summed_with_rx_sum),
        cmocka_unit_test(frames_land_one_by_one),
        cmocka_unit_test(big_frame_without_receiver_buffer),
        cmocka_unit_test(delay_holds_frames),
        cmocka_unit_test(rate_spaces_frames),
        cmocka_unit_test(reorder_swaps_with_next),
        cmocka_unit_test(dup_delivers_twice),
        cmocka_unit_test(faults_per_direction),
        cmocka_unit_test(every_length_copied_exactly),
        cmocka_unit_test(delivered_bytes_exact),
        cmocka_unit_test(burst_over_limits_counted),
        cmocka_unit_test(bursts_across_ring_end),
        cmocka_unit_test(burst_mixed_lengths),
        cmocka_unit_test(delayed_and_plain_frames_share_slots),
        cmocka_unit_test(injector_deterministic),
        cmocka_unit_test(loss_rate),
        cmocka_unit_test(dup_rate),
        cmocka_unit_test(corrupt_rate_one_bit),
        cmocka_unit_test(reorder_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
