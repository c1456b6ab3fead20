/* test_memlink_byref.c - the mem link's by_ref mode (as Linux veth): a TSO
 * frame reaching an LRO+SG receiver on a clean link arrives as a header
 * buffer of the receiver's own followed by views of the sender's buffers,
 * which stay held until the receiver frees the views; every other case is
 * copied, and a frame holding views can be sent back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link_util.h"

#define CSUM_CAPS (TERN_CAP_TX_IP_CSUM | TERN_CAP_TX_L4_CSUM | \
                   TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM)
#define NIC_CAPS (CSUM_CAPS | TERN_CAP_TSO | TERN_CAP_LRO | TERN_CAP_SG)
enum { HDR = F_ETH + F_IP + F_TCP, PLEN = 5000, MSS = 1000 };

static tern_memlink *link_byref(bool by_ref, const tern_memlink_faults *f)
{
    tern_memlink_config c;
    tern_memlink_config_defaults(&c);
    c.pool_size = 32;
    c.queue_len = 32;
    c.caps[0] = c.caps[1] = NIC_CAPS;
    c.by_ref = by_ref;
    if (f)
        c.faults = *f;
    return link_new(&c);
}

/* What a stack does with a frame it is done with: drop one reference of
 * each piece, and give the ones nobody holds to the end's buffer ops. */
static void stack_free(tern_memlink *l, int end, tern_buf *b)
{
    tern_buf_ops ops = tern_memlink_buf_ops(l, end);
    while (b) {
        tern_buf *next = b->frag;
        b->frag = NULL;
        if (--b->refs == 0)
            ops.free(ops.ctx, b);
        b = next;
    }
}

/* Flags of a TSO frame of MSS segments with plain TCP headers. */
static void mark_tso(tern_buf *a)
{
    a->flags = TERN_BUF_TX_TSO | TERN_BUF_TX_IP_CSUM | TERN_BUF_TX_L4_CSUM;
    a->tso_mss = MSS;
    a->l2_len = F_ETH;
    a->l3_len = F_IP;
    a->l4_len = F_TCP;
}

/* A TSO frame from `end` of PLEN payload bytes as three of its buffers
 * (headers and some payload, then two pieces of the rest); *piece gets
 * them. */
static void send_tso_from(tern_memlink *l, int end, uint8_t *frame,
                          tern_buf *piece[3])
{
    size_t n = f_tcp(frame, PLEN, 1000, 0x18, 0, 5, true);
    size_t cut = n / 3;
    tern_pool *p = tern_memlink_pool(l, end);
    for (int i = 0; i < 3; i++) {
        size_t from = (size_t)i * cut;
        piece[i] = f_buf(p, frame + from, i < 2 ? cut : n - from);
        if (i)
            piece[i - 1]->frag = piece[i];
    }
    tern_buf *a = piece[0];
    mark_tso(a);
    tern_memlink_tx(tern_memlink_tx_ctx(l, end), &a, 1);
}

static void lro_frame_by_reference(void **state)
{
    (void)state;
    tern_memlink *l = link_byref(true, NULL);
    static uint8_t frame[HDR + PLEN], got[HDR + PLEN];
    tern_buf *sent[3];
    send_tso_from(l, 0, frame, sent);
    tern_buf *b = recv_one(l, 1, 0);
    /* headers in a buffer of the receiver's pool, nothing else */
    assert_true(tern_pool_owns(tern_memlink_pool(l, 1), b));
    assert_int_equal(b->len, HDR);
    assert_int_equal(b->flags & TERN_BUF_RX_LRO, TERN_BUF_RX_LRO);
    assert_int_equal(b->tso_mss, MSS);
    /* then the payload where the sender wrote it */
    tern_buf *v = b->frag;
    for (int i = 0; i < 3; i++, v = v->frag) {
        assert_non_null(v);
        uint32_t skip = i ? 0 : HDR;
        assert_ptr_equal(v->data, sent[i]->data + skip);
        assert_int_equal(v->len, sent[i]->len - skip);
        /* a view offers no headroom: nothing may write before its data */
        assert_ptr_equal(v->head, v->data);
        assert_false(tern_pool_owns(tern_memlink_pool(l, 1), v));
        /* the views hold the sender's buffers: the link let go of its own */
        assert_int_equal(sent[i]->refs, 1);
    }
    assert_null(v);
    tern_pool *p0 = tern_memlink_pool(l, 0);
    assert_int_equal(tern_pool_available(p0), tern_pool_count(p0) - 3);
    /* the bytes a copy would have delivered */
    assert_int_equal(f_flat(b, got), HDR + PLEN);
    assert_int_equal(f_rd16(got + F_ETH + 2), F_IP + F_TCP + PLEN);
    assert_true(ip_ok(got));
    assert_memory_equal(got + HDR, frame + HDR, PLEN);
    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->lro_frames, 1);
    assert_int_equal(st->by_ref_frames, 1);
    /* freeing the views gives the sender its buffers back */
    stack_free(l, 1, b);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* Copied: by_ref off, a link with faults, or one being captured. */
static void copied_when_it_must(void **state)
{
    (void)state;
    static uint8_t frame[HDR + PLEN], got[HDR + PLEN];
    tern_memlink_faults f = {0};
    f.loss = 1e-12;  /* faulty, but this frame is not lost */
    char path[] = "/tmp/tern-byref-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    for (int k = 0; k < 3; k++) {
        tern_memlink *l = link_byref(k != 0, k == 1 ? &f : NULL);
        if (k == 2) {
            char err[128];
            assert_int_equal(tern_memlink_set_pcap(l, 0, path, err, sizeof err), 0);
        }
        tern_buf *sent[3];
        send_tso_from(l, 0, frame, sent);
        tern_buf *b = recv_one(l, 1, 0);
        for (tern_buf *x = b; x; x = x->frag)
            assert_true(tern_pool_owns(tern_memlink_pool(l, 1), x));
        assert_int_equal(f_flat(b, got), HDR + PLEN);
        assert_memory_equal(got + HDR, frame + HDR, PLEN);
        assert_int_equal(tern_memlink_get_stats(l, 0)->lro_frames, 1);
        assert_int_equal(tern_memlink_get_stats(l, 0)->by_ref_frames, 0);
        stack_free(l, 1, b);
        assert_pools_full(l);
        tern_memlink_destroy(l);
    }
    close(fd);
    unlink(path);
}

/* An application may send on what it received: a frame whose payload is
 * views of the other direction is copied (never a view of a view), and
 * the link's release of it frees the views. */
static void views_sent_back(void **state)
{
    (void)state;
    tern_memlink *l = link_byref(true, NULL);
    static uint8_t frame[HDR + PLEN], got[HDR + PLEN];
    tern_buf *sent[3];
    send_tso_from(l, 0, frame, sent);
    tern_buf *b = recv_one(l, 1, 0);
    assert_int_equal(tern_memlink_get_stats(l, 0)->by_ref_frames, 1);
    /* back as a TSO frame from end 1, headers as they arrived */
    mark_tso(b);
    tern_memlink_tx(tern_memlink_tx_ctx(l, 1), &b, 1);
    assert_int_equal(tern_memlink_get_stats(l, 1)->lro_frames, 1);
    assert_int_equal(tern_memlink_get_stats(l, 1)->by_ref_frames, 0);
    tern_buf *r = recv_one(l, 0, 0);
    for (tern_buf *x = r; x; x = x->frag)
        assert_true(tern_pool_owns(tern_memlink_pool(l, 0), x));
    assert_int_equal(f_flat(r, got), HDR + PLEN);
    assert_memory_equal(got + HDR, frame + HDR, PLEN);
    stack_free(l, 0, r);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* Frames the link drops (its queue full) free their views too. */
static void dropped_frames_free_views(void **state)
{
    (void)state;
    tern_memlink_config c;
    tern_memlink_config_defaults(&c);
    c.pool_size = 32;
    c.queue_len = 1;
    c.caps[0] = c.caps[1] = NIC_CAPS;
    c.by_ref = true;
    tern_memlink *l = link_new(&c);
    static uint8_t frame[HDR + PLEN];
    tern_buf *sent[3];
    send_tso_from(l, 0, frame, sent);
    send_tso_from(l, 0, frame, sent);  /* no room: dropped */
    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->queue_drops, 1);
    assert_int_equal(st->by_ref_frames, 2);
    stack_free(l, 1, recv_one(l, 1, 0));
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* by_ref asked on a link where no TSO frame can meet an LRO+SG receiver
 * changes nothing: plain pool ops, so small frames keep the link's fast
 * path (tern-echo's link copy is part of its instruction count). */
static void by_ref_needs_tso_and_lro(void **state)
{
    (void)state;
    const uint32_t caps[4][2] = {
        {0, 0},
        {CSUM_CAPS, CSUM_CAPS},
        {TERN_CAP_TSO | TERN_CAP_SG, TERN_CAP_LRO},       /* no SG */
        {TERN_CAP_LRO | TERN_CAP_SG, TERN_CAP_LRO | TERN_CAP_SG}, /* no TSO */
    };
    for (int k = 0; k < 5; k++) {
        tern_memlink_config c;
        tern_memlink_config_defaults(&c);
        c.pool_size = 8;
        c.by_ref = true;
        c.caps[0] = k < 4 ? caps[k][0] : TERN_CAP_TSO;
        c.caps[1] = k < 4 ? caps[k][1] : TERN_CAP_LRO | TERN_CAP_SG;
        tern_memlink *l = link_new(&c);
        for (int e = 0; e < 2; e++) {
            tern_buf_ops o = tern_memlink_buf_ops(l, e);
            bool plain = o.ctx == (void *)tern_memlink_pool(l, e);
            assert_int_equal(plain, k < 4);  /* the last one qualifies */
        }
        tern_memlink_destroy(l);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lro_frame_by_reference),
        cmocka_unit_test(copied_when_it_must),
        cmocka_unit_test(views_sent_back),
        cmocka_unit_test(dropped_frames_free_views),
        cmocka_unit_test(by_ref_needs_tso_and_lro),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
