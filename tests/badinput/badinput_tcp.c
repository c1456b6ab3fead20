/* Bad input to TCP: malformed headers and options, forbidden flag
 * combinations, and the RFC 9293 / RFC 5961 rules for RST, SYN and ACK on
 * an established connection. Each case asserts the exact response, then a
 * fresh connection still works. */
#include "bi.h"

#define LPORT 80

static void w16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

/* Recompute the TCP checksum of a frame after editing it. */
static void fix_tcp(uint8_t *f, size_t n)
{
    uint8_t *ip = f + 14;
    size_t hl = (size_t)(ip[0] & 0xf) * 4;
    uint8_t *tcp = ip + hl;
    uint32_t len = (uint32_t)(n - 14 - hl);
    uint32_t src = th_rd32(ip + 12), dst = th_rd32(ip + 16);
    uint32_t ps = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 6 + len;
    w16(tcp + 16, 0);
    w16(tcp + 16, th_csum_ref(tcp, len, ps));
}

/* A segment from a peer at `sport` to LPORT. */
static size_t seg(uint8_t *f, uint16_t sport, uint32_t seq, uint32_t ack,
                  uint8_t flags, const uint8_t *opt, size_t olen,
                  const void *data, size_t len)
{
    return tp_frame(f, TH_PEER_IP, TH_IP, sport, LPORT, seq, ack, flags, 65535,
                    opt, olen, data, len);
}

static unsigned rst_count(th *t)
{
    unsigned n = 0;
    tpkt s;
    for (unsigned i = 0; i < tp_count(t); i++)
        n += tp_get(t, (int)i, &s) && (s.flags & F_RST);
    return n;
}

/* ---- malformed headers: dropped, counted, nothing sent ---- */
static void drop_case(void (*edit)(uint8_t *f, size_t *n), size_t off)
{
    th *t = bi_new();
    uint8_t f[256];
    size_t n = seg(f, 4000, 1, 0, F_SYN, NULL, 0, NULL, 0);
    edit(f, &n);
    bi_feed(t, f, n);
    const uint64_t *ctr = (const uint64_t *)((const uint8_t *)C(t) + off);
    assert_int_equal(*ctr, 1);
    assert_int_equal(t->nout, 0);
    assert_int_equal(tern_tcp_conn_count(t->st), 0);
    bi_healthy_and_free(t);
}
#define DROP_CASE(fn, body, counter)                                         \
    static void e_##fn(uint8_t *f, size_t *n) { (void)f; (void)n; body; }   \
    static void fn(void **s) { (void)s; drop_case(e_##fn, offsetof(tern_counters, counter)); }

DROP_CASE(tcp_short, f[16] = 0; f[17] = 20 + 10; th_fix_ip_csum(f); *n = 34 + 10, tcp_drop_short)
DROP_CASE(tcp_doff_below_5, f[46] = 0x40; fix_tcp(f, *n), tcp_drop_hdr_len)
DROP_CASE(tcp_doff_past_segment, f[46] = 0xf0; fix_tcp(f, *n), tcp_drop_hdr_len)
DROP_CASE(tcp_bad_csum, f[40] ^= 0x10, tcp_drop_csum)
DROP_CASE(tcp_syn_fin, f[47] = F_SYN | F_FIN; fix_tcp(f, *n), tcp_drop_flags)
DROP_CASE(tcp_syn_rst, f[47] = F_SYN | F_RST; fix_tcp(f, *n), tcp_drop_flags)
DROP_CASE(tcp_all_flags, f[47] = 0x3f; fix_tcp(f, *n), tcp_drop_flags)
DROP_CASE(tcp_dst_port0, f[36] = 0; f[37] = 0; fix_tcp(f, *n), tcp_drop_port0)
DROP_CASE(tcp_src_port0, f[34] = 0; f[35] = 0; fix_tcp(f, *n), tcp_drop_port0)

/* Options in a SYN. */
static void syn_with(const uint8_t *opt, size_t olen, bool expect_synack)
{
    th *t = bi_new();
    uint8_t f[256];
    bi_feed(t, f, seg(f, 4100, 77, 0, F_SYN, opt, olen, NULL, 0));
    tpkt s;
    if (expect_synack) {
        assert_int_equal(tp_count(t), 1);
        assert_true(tp_get(t, 0, &s));
        assert_int_equal(s.flags, F_SYN | F_ACK);
        assert_int_equal(s.ack, 78);
    } else {
        assert_int_equal(C(t)->tcp_drop_options, 1);
        assert_int_equal(t->nout, 0);
    }
    bi_healthy_and_free(t);
}
static void tcp_opt_len0(void **s) { (void)s; const uint8_t o[4] = {2, 0, 5, 0xb4}; syn_with(o, 4, false); }
static void tcp_opt_len1(void **s) { (void)s; const uint8_t o[4] = {1, 1, 8, 1}; syn_with(o, 4, false); }
static void tcp_opt_past_header(void **s) { (void)s; const uint8_t o[4] = {1, 1, 3, 9}; syn_with(o, 4, false); }
static void tcp_mss_wrong_len(void **s) { (void)s; const uint8_t o[4] = {2, 3, 5, 1}; syn_with(o, 4, false); }
static void tcp_ts_wrong_len(void **s) { (void)s; const uint8_t o[8] = {8, 8, 0, 0, 0, 1, 0, 0}; syn_with(o, 8, false); }
static void tcp_unknown_option(void **s) { (void)s; const uint8_t o[8] = {99, 6, 1, 2, 3, 4, 1, 0}; syn_with(o, 8, true); }

static tern_conn *last_conn;
static void *remember(tern_stack *st, tern_conn *c, void *lu) { (void)st; last_conn = c; return lu; }
static void cfg_remember(tern_config *c) { c->cb.accepted = remember; }

static void tcp_mss_zero(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_remember);
    uint8_t f[2048];
    const uint8_t o[4] = {2, 4, 0, 0};
    bi_feed(t, f, seg(f, 4200, 100, 0, F_SYN, o, 4, NULL, 0));
    tpkt sa;
    assert_true(tp_get(t, -1, &sa));
    bi_feed(t, f, seg(f, 4200, 101, sa.seq + 1, F_ACK, NULL, 0, NULL, 0));
    tern_tcp_info info;
    tern_tcp_get_info(t->st, last_conn, &info);
    assert_true(info.mss >= 64);                     /* clamped to the floor */
    th_clear(t);
    static uint8_t data[300];
    memset(data, 'm', sizeof data);
    bi_feed(t, f, seg(f, 4200, 101, sa.seq + 1, F_ACK | F_PSH, NULL, 0, data, sizeof data));
    tpkt e;
    size_t echoed = 0;
    for (unsigned i = 0; i < tp_count(t); i++)
        if (tp_get(t, (int)i, &e)) {
            assert_true(e.len == 0 || e.len >= 64 || echoed + e.len == sizeof data);
            echoed += e.len;
        }
    assert_true(echoed > 0);
    bi_healthy_and_free(t);
}

static void tcp_wscale_15(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_remember);
    uint8_t f[256];
    const uint8_t o[4] = {1, 3, 3, 15};
    bi_feed(t, f, seg(f, 4300, 100, 0, F_SYN, o, 4, NULL, 0));
    tpkt sa;
    assert_true(tp_get(t, -1, &sa));
    assert_true(sa.has_ws);
    bi_feed(t, f, seg(f, 4300, 101, sa.seq + 1, F_ACK, NULL, 0, NULL, 0));
    tern_tcp_info info;
    tern_tcp_get_info(t->st, last_conn, &info);
    assert_int_equal(info.snd_wscale, 14);           /* RFC 7323 2.3 */
    bi_healthy_and_free(t);
}

/* ---- on an established connection ---- */
static void tcp_reserved_bits(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5001);
    uint8_t f[256];
    size_t n = tp_frame(f, TH_PEER_IP, TH_IP, 5001, LPORT, p.seq, p.ack,
                        F_ACK | F_PSH, 65535, NULL, 0, "rsvd", 4);
    f[46] |= 0x0e;                                   /* reserved bits */
    fix_tcp(f, n);
    bi_feed(t, f, n);
    assert_int_equal(bi_received(), 4);              /* ignored, delivered */
    bi_healthy_and_free(t);
}

static void tcp_null_flags(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5002);
    peer_send(&p, 0, "null", 4);
    assert_int_equal(bi_received(), 0);              /* no ACK bit: dropped */
    assert_int_equal(rst_count(t), 0);
    assert_int_equal(tern_tcp_conn_count(t->st), 1);
    bi_healthy_and_free(t);
}

static void tcp_sack_invalid_blocks(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5003);
    peer_send(&p, F_ACK | F_PSH, "0123456789", 10); /* the stack echoes */
    p.ack += 10;                                     /* acknowledge it all */
    peer_send(&p, F_ACK, NULL, 0);
    th_clear(t);
    /* SACK blocks beyond what was sent, reversed, and overlapping */
    uint8_t o[28] = {1, 1, 5, 26};
    uint32_t blocks[3][2] = {{p.ack + 5000, p.ack + 6000},
                             {p.ack + 8, p.ack + 2},
                             {p.ack - 100, p.ack + 100}};
    for (int i = 0; i < 3; i++) {
        uint8_t *b = o + 4 + 8 * i;
        b[0] = (uint8_t)(blocks[i][0] >> 24); b[1] = (uint8_t)(blocks[i][0] >> 16);
        b[2] = (uint8_t)(blocks[i][0] >> 8); b[3] = (uint8_t)blocks[i][0];
        b[4] = (uint8_t)(blocks[i][1] >> 24); b[5] = (uint8_t)(blocks[i][1] >> 16);
        b[6] = (uint8_t)(blocks[i][1] >> 8); b[7] = (uint8_t)blocks[i][1];
    }
    for (int i = 0; i < 4; i++)
        peer_send_opts(&p, F_ACK, o, sizeof o, NULL, 0);
    assert_int_equal(C(t)->tcp_retransmits, 0);     /* nothing invented */
    assert_int_equal(rst_count(t), 0);
    assert_int_equal(tern_tcp_conn_count(t->st), 1);
    bi_healthy_and_free(t);
}

static void tcp_paws_old_timestamp(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5004);
    p.tsval = 4000;                                 /* older than 5000 */
    peer_send(&p, F_ACK | F_PSH, "old!", 4);
    assert_int_equal(C(t)->tcp_drop_paws, 1);
    assert_int_equal(bi_received(), 0);
    tpkt a;
    assert_true(tp_get(t, -1, &a));                 /* answered by an ACK */
    assert_int_equal(a.flags & (F_ACK | F_RST), F_ACK);
    bi_healthy_and_free(t);
}

static void tcp_rst_in_window_not_exact(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5005);
    uint32_t seq = p.seq;
    p.seq += 100;
    peer_send(&p, F_RST, NULL, 0);
    p.seq = seq;
    assert_int_equal(C(t)->tcp_challenge_acks, 1);  /* RFC 5961 3.2 */
    tpkt a;
    assert_true(tp_get(t, -1, &a));
    assert_int_equal(a.flags, F_ACK);
    assert_int_equal(a.ack, seq);
    assert_int_equal(tern_tcp_conn_count(t->st), 1);
    bi_healthy_and_free(t);
}

static void tcp_rst_exact(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5006);
    peer_send(&p, F_RST, NULL, 0);
    assert_int_equal(tern_tcp_conn_count(t->st), 0);
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);
}

static void tcp_rst_out_of_window(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5007);
    p.seq += 10000000;
    peer_send(&p, F_RST, NULL, 0);
    p.seq -= 10000000;
    assert_int_equal(t->nout, 0);                    /* silently dropped */
    assert_int_equal(tern_tcp_conn_count(t->st), 1);
    bi_healthy_and_free(t);
}

static void tcp_syn_in_established(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5008);
    peer_send(&p, F_SYN, NULL, 0);
    p.seq -= 1;
    assert_int_equal(C(t)->tcp_challenge_acks, 1);  /* RFC 5961 4.2 */
    tpkt a;
    assert_true(tp_get(t, -1, &a));
    assert_int_equal(a.flags, F_ACK);
    assert_int_equal(tern_tcp_conn_count(t->st), 1);
    bi_healthy_and_free(t);
}

static void tcp_ack_of_unsent_data(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5009);
    uint32_t ack = p.ack;
    p.ack += 100000;
    peer_send(&p, F_ACK | F_PSH, "bogus", 5);
    p.ack = ack;
    assert_int_equal(bi_received(), 0);             /* RFC 9293 3.10.7.4 */
    tpkt a;
    assert_true(tp_get(t, -1, &a));
    assert_int_equal(a.flags & F_RST, 0);
    assert_int_equal(a.ack, p.seq - 5);             /* data not accepted */
    assert_int_equal(tern_tcp_conn_count(t->st), 1);
    bi_healthy_and_free(t);
}

static uint8_t got[64];
static size_t ngot;
static size_t keep(tern_stack *st, tern_conn *c, void *u, tern_buf *b, const uint8_t *d, size_t len)
{
    if (ngot + len <= sizeof got)
        memcpy(got + ngot, d, len);
    ngot += len;
    return bi_echo_recv(st, c, u, b, d, len);
}
static void cfg_keep(tern_config *c) { c->cb.recv = keep; }

static void tcp_overlap_different_bytes(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_keep);
    ngot = 0;
    peer p;
    bi_connect(t, &p, 5010);
    uint32_t start = p.seq;
    peer_send(&p, F_ACK | F_PSH, "AAAAAAAA", 8);
    p.seq = start + 4;                               /* overlap 4 old bytes */
    peer_send(&p, F_ACK | F_PSH, "BBBBBBBB", 8);
    assert_int_equal(ngot, 12);
    assert_memory_equal(got, "AAAAAAAABBBB", 12);    /* first copy wins */
    bi_healthy_and_free(t);
}

static void tcp_urgent_beyond_data(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 5011);
    uint8_t f[256];
    size_t n = tp_frame(f, TH_PEER_IP, TH_IP, 5011, LPORT, p.seq, p.ack,
                        F_ACK | F_PSH | 0x20, 65535, NULL, 0, "urg!", 4);
    f[52] = 0x13;                                    /* urgent ptr 5000 */
    f[53] = 0x88;
    fix_tcp(f, n);
    bi_feed(t, f, n);
    assert_int_equal(bi_received(), 4);              /* data, in line */
    assert_int_equal(tern_tcp_conn_count(t->st), 1);
    bi_healthy_and_free(t);
}

static void tcp_closed_port_rst_numbers(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t f[256];
    /* no ACK bit: RST+ACK, seq 0, ack = seq + len (+SYN) */
    size_t n = tp_frame(f, TH_PEER_IP, TH_IP, 6000, 81, 5000, 0, F_SYN, 65535,
                        NULL, 0, NULL, 0);
    bi_feed(t, f, n);
    tpkt r;
    assert_true(tp_get(t, -1, &r));
    assert_int_equal(r.flags, F_RST | F_ACK);
    assert_int_equal(r.seq, 0);
    assert_int_equal(r.ack, 5001);
    /* with ACK: RST, seq = the segment's ack */
    th_clear(t);
    n = tp_frame(f, TH_PEER_IP, TH_IP, 6000, 81, 5000, 777, F_ACK, 65535, NULL, 0, "xy", 2);
    bi_feed(t, f, n);
    assert_true(tp_get(t, -1, &r));
    assert_int_equal(r.flags, F_RST);
    assert_int_equal(r.seq, 777);
    /* a RST to a closed port is never answered */
    th_clear(t);
    n = tp_frame(f, TH_PEER_IP, TH_IP, 6000, 81, 5000, 0, F_RST, 65535, NULL, 0, NULL, 0);
    bi_feed(t, f, n);
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);
}

static void tcp_ack_to_listener(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t f[256];
    bi_feed(t, f, seg(f, 6100, 5000, 4242, F_ACK, NULL, 0, NULL, 0));
    tpkt r;
    assert_true(tp_get(t, -1, &r));
    assert_int_equal(r.flags, F_RST);
    assert_int_equal(r.seq, 4242);
    assert_int_equal(tern_tcp_conn_count(t->st), 0);
    bi_healthy_and_free(t);
}

/* TIME_WAIT: the stack closes first; then a RST arrives. */
static void *close_now(tern_stack *st, tern_conn *c, void *lu) { (void)lu; last_conn = c; (void)st; return NULL; }
static void cfg_close(tern_config *c) { c->cb.accepted = close_now; }

static void tcp_rst_in_time_wait(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_close);
    peer p;
    bi_connect(t, &p, 5012);
    tern_tcp_close(t->st, last_conn);
    tern_flush(t->st);
    tpkt fin;
    assert_true(tp_get(t, -1, &fin));
    assert_true(fin.flags & F_FIN);
    p.ack = fin.seq + 1;
    peer_send(&p, F_ACK | F_FIN, NULL, 0);           /* -> TIME_WAIT */
    assert_int_equal(tern_tcp_time_wait_count(t->st), 1);
    th_clear(t);
    peer_send(&p, F_RST, NULL, 0);
    assert_int_equal(rst_count(t), 0);               /* never answered */
    assert_true(tern_tcp_conn_count(t->st) <= 1);
    bi_healthy_and_free(t);
}

static const bi_case cases[] = {
    {"tcp_short", "TCP segment of 10 bytes", "dropped, tcp_drop_short, nothing sent", tcp_short},
    {"tcp_doff_below_5", "data offset 4", "dropped, tcp_drop_hdr_len", tcp_doff_below_5},
    {"tcp_doff_past_segment", "data offset 15 in a 20-byte segment", "dropped, tcp_drop_hdr_len", tcp_doff_past_segment},
    {"tcp_bad_csum", "SYN with a bad checksum", "dropped, tcp_drop_csum, no SYN-ACK or RST", tcp_bad_csum},
    {"tcp_syn_fin", "SYN+FIN", "dropped, tcp_drop_flags", tcp_syn_fin},
    {"tcp_syn_rst", "SYN+RST", "dropped, tcp_drop_flags", tcp_syn_rst},
    {"tcp_all_flags", "every flag set (Christmas tree)", "dropped, tcp_drop_flags", tcp_all_flags},
    {"tcp_dst_port0", "destination port 0", "dropped, tcp_drop_port0, no RST", tcp_dst_port0},
    {"tcp_src_port0", "source port 0", "dropped, tcp_drop_port0, no RST", tcp_src_port0},
    {"tcp_opt_len0", "SYN with an option of length 0", "dropped, tcp_drop_options", tcp_opt_len0},
    {"tcp_opt_len1", "SYN with an option of length 1", "dropped, tcp_drop_options", tcp_opt_len1},
    {"tcp_opt_past_header", "SYN with an option running past the header", "dropped, tcp_drop_options", tcp_opt_past_header},
    {"tcp_mss_wrong_len", "MSS option of length 3", "dropped, tcp_drop_options", tcp_mss_wrong_len},
    {"tcp_ts_wrong_len", "timestamp option of length 8", "dropped, tcp_drop_options", tcp_ts_wrong_len},
    {"tcp_unknown_option", "unknown option kind 99", "skipped by its length; SYN-ACK sent", tcp_unknown_option},
    {"tcp_mss_zero", "SYN with MSS 0", "MSS clamped to the floor (64); data still flows", tcp_mss_zero},
    {"tcp_wscale_15", "window scale 15", "clamped to 14 (RFC 7323 2.3)", tcp_wscale_15},
    {"tcp_reserved_bits", "data segment with reserved bits set", "bits ignored, data delivered", tcp_reserved_bits},
    {"tcp_null_flags", "segment with no flags on a connection", "dropped (no ACK bit), no RST", tcp_null_flags},
    {"tcp_sack_invalid_blocks", "SACK blocks beyond snd_nxt, reversed, below snd_una", "ignored: no retransmission, no reset", tcp_sack_invalid_blocks},
    {"tcp_paws_old_timestamp", "data with an older TSval", "dropped, tcp_drop_paws, ACK sent (RFC 7323 5)", tcp_paws_old_timestamp},
    {"tcp_rst_in_window_not_exact", "RST in window, seq not exact", "challenge ACK (RFC 5961 3.2), connection kept", tcp_rst_in_window_not_exact},
    {"tcp_rst_exact", "RST with the exact next seq", "connection reset, nothing sent", tcp_rst_exact},
    {"tcp_rst_out_of_window", "RST far outside the window", "silently dropped, connection kept", tcp_rst_out_of_window},
    {"tcp_syn_in_established", "SYN on an established connection", "challenge ACK (RFC 5961 4.2), connection kept", tcp_syn_in_established},
    {"tcp_ack_of_unsent_data", "data acknowledging bytes never sent", "ACK sent, data dropped (RFC 9293 3.10.7.4)", tcp_ack_of_unsent_data},
    {"tcp_overlap_different_bytes", "retransmission overlapping with different bytes", "bytes first received win; only new bytes delivered", tcp_overlap_different_bytes},
    {"tcp_urgent_beyond_data", "URG with urgent pointer 5000 in 4 bytes", "data delivered in line, connection kept", tcp_urgent_beyond_data},
    {"tcp_closed_port_rst_numbers", "SYN, ACK and RST to a closed port", "RST+ACK seq 0 ack seq+1; RST seq=SEG.ACK; RST not answered", tcp_closed_port_rst_numbers},
    {"tcp_ack_to_listener", "ACK to a listening port, no connection", "RST with seq = SEG.ACK, nothing created", tcp_ack_to_listener},
    {"tcp_rst_in_time_wait", "RST to a connection in TIME_WAIT", "never answered", tcp_rst_in_time_wait},
};

int main(int argc, char **argv)
{
    return bi_main(argc, argv, "tcp", cases, sizeof cases / sizeof cases[0]);
}
