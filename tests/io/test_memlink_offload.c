/* test_memlink_offload.c - the NIC offloads the mem link emulates:
 * checksum completion, RX checksum flags, TSO, LRO, scatter-gather. Every
 * checksum is checked with the naive routine of frames.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link_util.h"

#define CSUM_CAPS (TERN_CAP_TX_IP_CSUM | TERN_CAP_TX_L4_CSUM | \
                   TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM)
#define RX_GOOD (TERN_BUF_RX_IP_CSUM_OK | TERN_BUF_RX_L4_CSUM_OK)

static tern_memlink *link_caps(uint32_t caps0, uint32_t caps1)
{
    tern_memlink_config c;
    tern_memlink_config_defaults(&c);
    c.pool_size = 64;
    c.queue_len = 64;
    c.caps[0] = caps0;
    c.caps[1] = caps1;
    return link_new(&c);
}

/* Send a frame with offload flags from end 0. */
static void send_flagged(tern_memlink *l, const uint8_t *f, size_t n,
                         uint16_t flags, uint8_t l2, uint8_t l3)
{
    tern_buf *b = f_buf(tern_memlink_pool(l, 0), f, n);
    b->flags = flags;
    b->l2_len = l2;
    b->l3_len = l3;
    tern_memlink_tx(tern_memlink_tx_ctx(l, 0), &b, 1);
}

static void csum_completion(void **state)
{
    (void)state;
    tern_memlink *l = link_caps(CSUM_CAPS, CSUM_CAPS);
    uint8_t part[1600], full[1600];
    for (size_t plen = 0; plen < 1400; plen += plen < 40 ? 1 : 97) {
        for (int tcp = 0; tcp < 2; tcp++) {
            size_t n = tcp ? f_tcp(part, plen, 1000 + (uint32_t)plen, 0x18, 8, (uint32_t)plen, true)
                           : f_udp(part, plen, (uint32_t)plen, true);
            size_t m = tcp ? f_tcp(full, plen, 1000 + (uint32_t)plen, 0x18, 8, (uint32_t)plen, false)
                           : f_udp(full, plen, (uint32_t)plen, false);
            assert_int_equal(n, m);
            /* l2/l3 given, or left 0 for the link to parse. */
            uint8_t l2 = plen & 1 ? 14 : 0, l3 = plen & 1 ? 20 : 0;
            send_flagged(l, part, n, TERN_BUF_TX_IP_CSUM | TERN_BUF_TX_L4_CSUM, l2, l3);
            tern_buf *b = recv_one(l, 1, 0);
            assert_int_equal(b->len, n);
            assert_true(ip_ok(b->data));
            assert_true(l4_ok(b->data));
            assert_memory_equal(b->data, full, n);  /* same bytes as software */
            assert_int_equal(b->flags, RX_GOOD);
            release(l, 1, b);
        }
    }
    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->offload_errors, 0);
    assert_int_equal(st->csum_filled, st->sent);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

/* partial_csum (as veth): a TX_L4_CSUM frame reaches a receiver that
 * trusts RX_L4_CSUM with the sender's partial sum untouched and flagged
 * good; a receiver without that cap, or verify_csum, gets the full sum. */
static void partial_csum_like_veth(void **state)
{
    (void)state;
    uint8_t part[400], full[400];
    size_t n = f_tcp(part, 200, 77, 0x18, 8, 5, true);
    assert_int_equal(f_tcp(full, 200, 77, 0x18, 8, 5, false), n);
    const uint32_t rx_caps[2] = {CSUM_CAPS, TERN_CAP_RX_IP_CSUM};
    for (int verify = 0; verify < 2; verify++) {
        for (int c = 0; c < 2; c++) {
            tern_memlink_config cfg;
            tern_memlink_config_defaults(&cfg);
            cfg.pool_size = 64;
            cfg.queue_len = 64;
            cfg.caps[0] = CSUM_CAPS;
            cfg.caps[1] = rx_caps[c];
            cfg.partial_csum = true;
            cfg.verify_csum = verify;
            tern_memlink *l = link_new(&cfg);
            send_flagged(l, part, n, TERN_BUF_TX_IP_CSUM | TERN_BUF_TX_L4_CSUM,
                         14, 20);
            tern_buf *b = recv_one(l, 1, 0);
            assert_int_equal(b->len, n);
            assert_true(ip_ok(b->data));
            if (c == 0 && !verify) {
                /* Left partial: the bytes as sent, save the IP checksum. */
                assert_false(l4_ok(b->data));
                assert_memory_equal(b->data + 34, part + 34, n - 34);
                assert_true(b->flags & TERN_BUF_RX_L4_CSUM_OK);
            } else {
                assert_true(l4_ok(b->data));
                assert_memory_equal(b->data, full, n);
            }
            release(l, 1, b);
            assert_int_equal(tern_memlink_get_stats(l, 0)->offload_errors, 0);
            assert_pools_full(l);
            tern_memlink_destroy(l);
        }
    }
}

static void offload_flag_without_cap(void **state)
{
    (void)state;
    tern_memlink *l = link_caps(0, TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM);
    uint8_t part[200];
    size_t n = f_udp(part, 50, 1, true);
    send_flagged(l, part, n, TERN_BUF_TX_L4_CSUM | TERN_BUF_TX_IP_CSUM, 14, 20);
    tern_buf *b = recv_one(l, 1, 0);
    /* Sent as is, like a NIC that was never asked properly, and caught. */
    assert_memory_equal(b->data, part, n);
    assert_int_equal(tern_memlink_get_stats(l, 0)->offload_errors, 1);
    assert_int_equal(b->flags & (TERN_BUF_RX_IP_CSUM_OK | TERN_BUF_RX_L4_CSUM_OK), 0);
    assert_true(b->flags & TERN_BUF_RX_L4_CSUM_BAD);
    release(l, 1, b);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void rx_trust_or_verify(void **state)
{
    (void)state;
    uint8_t f[200];
    size_t n = f_tcp(f, 100, 1, 0x10, 0, 1, false);
    f[n - 1] ^= 0xff;  /* sender bug: checksum no longer matches */
    for (int verify = 0; verify < 2; verify++) {
        tern_memlink_config c;
        tern_memlink_config_defaults(&c);
        c.pool_size = 8;
        c.caps[1] = TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM;
        c.verify_csum = verify;
        tern_memlink *l = link_new(&c);
        send_bytes(l, 0, f, n);
        tern_buf *b = recv_one(l, 1, 0);
        assert_int_equal(b->flags, verify ? (TERN_BUF_RX_IP_CSUM_OK | TERN_BUF_RX_L4_CSUM_BAD)
                                          : RX_GOOD);
        release(l, 1, b);
        tern_memlink_destroy(l);
    }
}

static void corrupted_frames_flagged(void **state)
{
    (void)state;
    tern_memlink_config c;
    tern_memlink_config_defaults(&c);
    c.pool_size = 8;
    c.caps[1] = TERN_CAP_RX_IP_CSUM | TERN_CAP_RX_L4_CSUM;
    c.faults.corrupt = 1.0;
    c.seed = 99;
    tern_memlink *l = link_new(&c);
    uint8_t f[400];
    unsigned l4_hits = 0, ip_hits = 0;
    for (int i = 0; i < 500; i++) {
        size_t n = i & 1 ? f_tcp(f, 200, (uint32_t)i, 0x10, 0, (uint32_t)i, false)
                         : f_udp(f, 200, (uint32_t)i, false);
        send_bytes(l, 0, f, n);
        tern_buf *b = recv_one(l, 1, 0);
        size_t pos = 0;
        while (pos < n && b->data[pos] == f[pos])
            pos++;
        assert_true(pos >= F_ETH && pos < n);
        if (pos >= F_ETH + F_IP) {  /* L4 header or payload: always caught */
            assert_int_equal(b->flags, TERN_BUF_RX_IP_CSUM_OK | TERN_BUF_RX_L4_CSUM_BAD);
            l4_hits++;
        } else {
            assert_false(b->flags & TERN_BUF_RX_IP_CSUM_OK);
            ip_hits++;
        }
        release(l, 1, b);
    }
    assert_true(l4_hits > 300 && ip_hits > 10);
    tern_memlink_destroy(l);
}

/* A TSO frame from end 0: TCP with `opt` option bytes and plen payload,
 * built as a chain of three buffers (headers + some payload, then two
 * pieces of the rest). */
static void send_tso(tern_memlink *l, size_t plen, uint16_t mss, uint32_t seq,
                     uint8_t flags, size_t opt, uint8_t *frame)
{
    size_t n = f_tcp(frame, plen, seq, flags, opt, 5, true);
    size_t cut = n / 3;
    tern_pool *p = tern_memlink_pool(l, 0);
    tern_buf *a = f_buf(p, frame, cut), *b = f_buf(p, frame + cut, cut);
    a->frag = b;
    b->frag = f_buf(p, frame + 2 * cut, n - 2 * cut);
    a->flags = TERN_BUF_TX_TSO | TERN_BUF_TX_IP_CSUM | TERN_BUF_TX_L4_CSUM;
    a->tso_mss = mss;
    a->l2_len = F_ETH;
    a->l3_len = F_IP;
    a->l4_len = (uint8_t)(F_TCP + opt);
    tern_memlink_tx(tern_memlink_tx_ctx(l, 0), &a, 1);
}

static void tso_segments(void **state)
{
    (void)state;
    tern_memlink *l = link_caps(CSUM_CAPS | TERN_CAP_TSO | TERN_CAP_SG, CSUM_CAPS);
    enum { OPT = 12, HDR = F_ETH + F_IP + F_TCP + OPT, PLEN = 3500, MSS = 1448 };
    static uint8_t frame[HDR + PLEN];
    const uint32_t seq0 = 0xfffffa00u;  /* wraps inside the burst */
    const uint8_t fl = 0x80 | 0x10 | 0x08 | 0x01;  /* CWR ACK PSH FIN */
    send_tso(l, PLEN, MSS, seq0, fl, OPT, frame);
    tern_buf *r[8];
    assert_int_equal(tern_memlink_rx(l, 1, r, 8, 0), 3);
    const uint32_t sizes[3] = {MSS, MSS, PLEN - 2 * MSS};
    uint32_t off = 0;
    for (int i = 0; i < 3; i++) {
        uint8_t *s = r[i]->data, *ip = s + F_ETH, *tcp = ip + F_IP;
        assert_null(r[i]->frag);
        assert_int_equal(r[i]->len, HDR + sizes[i]);
        assert_memory_equal(s, frame, F_ETH);
        assert_int_equal(f_rd16(ip + 2), F_IP + F_TCP + OPT + sizes[i]);
        assert_int_equal(f_rd16(ip + 4), 0x1234 + i);
        assert_int_equal(f_rd32(tcp + 4), seq0 + off);
        uint8_t want = fl;
        if (i < 2)
            want &= (uint8_t)~(0x08 | 0x01);
        if (i > 0)
            want &= (uint8_t)~0x80;
        assert_int_equal(tcp[13], want);
        assert_memory_equal(tcp + F_TCP, frame + F_ETH + F_IP + F_TCP, OPT);
        assert_memory_equal(s + HDR, frame + HDR + off, sizes[i]);
        assert_true(ip_ok(s));
        assert_true(l4_ok(s));
        assert_int_equal(r[i]->flags, RX_GOOD);
        off += sizes[i];
        release(l, 1, r[i]);
    }
    const tern_memlink_stats *st = tern_memlink_get_stats(l, 0);
    assert_int_equal(st->sent, 1);
    assert_int_equal(st->tso_frames, 1);
    assert_int_equal(st->tso_segments, 3);
    assert_int_equal(st->wire, 3);
    /* Payload of exactly one MSS, and none at all. */
    send_tso(l, MSS, MSS, 1, 0x10, 0, frame);
    tern_buf *b = recv_one(l, 1, 0);
    assert_int_equal(b->len, F_ETH + F_IP + F_TCP + MSS);
    assert_true(l4_ok(b->data));
    release(l, 1, b);
    send_tso(l, 0, MSS, 1, 0x11, 0, frame);
    b = recv_one(l, 1, 0);
    assert_int_equal(b->len, F_ETH + F_IP + F_TCP);
    assert_int_equal(b->data[F_ETH + F_IP + 13], 0x11);
    assert_true(l4_ok(b->data));
    release(l, 1, b);
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void lro_delivers_whole(void **state)
{
    (void)state;
    tern_memlink *l = link_caps(CSUM_CAPS | TERN_CAP_TSO | TERN_CAP_SG,
                                CSUM_CAPS | TERN_CAP_LRO | TERN_CAP_SG);
    enum { HDR = F_ETH + F_IP + F_TCP, PLEN = 5000 };
    static uint8_t frame[HDR + PLEN], got[HDR + PLEN];
    send_tso(l, PLEN, 1000, 77, 0x18, 0, frame);
    tern_buf *b = recv_one(l, 1, 0);
    assert_non_null(b->frag);  /* larger than one buffer: a chain */
    assert_int_equal(f_flat(b, got), HDR + PLEN);
    assert_int_equal(b->flags, TERN_BUF_RX_LRO | RX_GOOD);
    assert_int_equal(b->tso_mss, 1000);
    assert_int_equal(f_rd16(got + F_ETH + 2), F_IP + F_TCP + PLEN);
    assert_true(ip_ok(got));
    assert_true(l4_ok(got));
    assert_memory_equal(got + HDR, frame + HDR, PLEN);
    assert_int_equal(tern_memlink_get_stats(l, 0)->lro_frames, 1);
    release(l, 1, b);
    tern_memlink_destroy(l);

    /* LRO without SG cannot take a frame larger than a buffer: segments. */
    l = link_caps(CSUM_CAPS | TERN_CAP_TSO | TERN_CAP_SG, TERN_CAP_LRO);
    send_tso(l, PLEN, 1000, 77, 0x18, 0, frame);
    tern_buf *r[8];
    assert_int_equal(tern_memlink_rx(l, 1, r, 8, 0), 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r[i]->flags, 0);
        release(l, 1, r[i]);
    }
    assert_pools_full(l);
    tern_memlink_destroy(l);
}

static void sg_chains_and_oversize(void **state)
{
    (void)state;
    static uint8_t f[3000], got[3000];
    size_t n = f_udp(f, 2900, 4, false);
    for (int sg = 0; sg < 2; sg++) {
        tern_memlink *l = link_caps(TERN_CAP_SG, sg ? TERN_CAP_SG : 0);
        tern_pool *p = tern_memlink_pool(l, 0);
        tern_buf *a = f_buf(p, f, 1000), *b = f_buf(p, f + 1000, 1000),
                 *c = f_buf(p, f + 2000, n - 2000);
        a->frag = b;
        b->frag = c;
        tern_memlink_tx(tern_memlink_tx_ctx(l, 0), &a, 1);
        tern_buf *r[2];
        unsigned k = tern_memlink_rx(l, 1, r, 2, 0);
        if (!sg) {
            assert_int_equal(k, 0);
            assert_int_equal(tern_memlink_get_stats(l, 0)->oversize_drops, 1);
        } else {
            assert_int_equal(k, 1);
            assert_int_equal(r[0]->len, 2048 - TERN_HEADROOM);  /* refilled */
            assert_int_equal(f_flat(r[0], got), n);
            assert_memory_equal(got, f, n);
            release(l, 1, r[0]);
        }
        assert_pools_full(l);
        tern_memlink_destroy(l);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(csum_completion),
        cmocka_unit_test(partial_csum_like_veth),
        cmocka_unit_test(offload_flag_without_cap),
        cmocka_unit_test(rx_trust_or_verify),
        cmocka_unit_test(corrupted_frames_flagged),
        cmocka_unit_test(tso_segments),
        cmocka_unit_test(lro_delivers_whole),
        cmocka_unit_test(sg_chains_and_oversize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
