/* Bad input below TCP: Ethernet, ARP, IPv4, fragments, ICMP and UDP. Each
 * case asserts the exact counter (and what is or is not sent), then that
 * a fresh TCP connection still works. */
#include "bi.h"

static const uint8_t ZERO[6];

/* A valid UDP datagram to the bound port 53 with 16 bytes. */
static size_t udp53(uint8_t *f)
{
    return th_udp_frame(f, TH_PEER_IP, TH_IP, 4000, 53, "0123456789abcdef", 16);
}

static void set32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

/* Feed a UDP frame edited by `edit`; assert the counter at `off` is 1. */
static void edited(void (*edit)(uint8_t *f, size_t *n), size_t off)
{
    th *t = bi_new();
    uint8_t f[2048];
    size_t n = udp53(f);
    edit(f, &n);
    bi_feed(t, f, n);
    const uint64_t *ctr = (const uint64_t *)((const uint8_t *)C(t) + off);
    assert_int_equal(*ctr, 1);
    if (off < offsetof(tern_counters, udp_in))
        assert_int_equal(C(t)->udp_in, 0);     /* stopped below UDP */
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);
}
#define EDIT_CASE(fn, body, counter)                                        \
    static void e_##fn(uint8_t *f, size_t *n) { (void)f; (void)n; body; }  \
    static void fn(void **s) { (void)s; edited(e_##fn, offsetof(tern_counters, counter)); }

EDIT_CASE(eth_empty, *n = 0, eth_drop_short)
EDIT_CASE(eth_13, *n = 13, eth_drop_short)
EDIT_CASE(eth_unknown_type, f[12] = 0x88; f[13] = 0xb5, eth_drop_ethertype)
EDIT_CASE(eth_multicast_dst, f[0] = 0x01, eth_drop_not_ours)
EDIT_CASE(ip_short, *n = 14 + 19, ip_drop_short)
EDIT_CASE(ip_frame_shorter_than_total, *n -= 1, ip_drop_total_len)
EDIT_CASE(ip_version6, f[14] = 0x65; th_fix_ip_csum(f), ip_drop_version)
EDIT_CASE(ip_ihl4, f[14] = 0x44, ip_drop_hdr_len)
EDIT_CASE(ip_ihl_past_frame, f[14] = 0x4f; *n = 14 + 40, ip_drop_hdr_len)
EDIT_CASE(ip_total_below_ihl, f[16] = 0; f[17] = 12; th_fix_ip_csum(f), ip_drop_total_len)
EDIT_CASE(ip_bad_csum, f[22] ^= 1, ip_drop_csum)
EDIT_CASE(ip_land, set32(f + 26, TH_IP); th_fix_ip_csum(f), ip_drop_bad_src)
EDIT_CASE(ip_src_loopback, set32(f + 26, TERN_IP4(127, 0, 0, 1)); th_fix_ip_csum(f), ip_drop_bad_src)
EDIT_CASE(ip_src_broadcast, set32(f + 26, 0xffffffffu); th_fix_ip_csum(f), ip_drop_bad_src)
EDIT_CASE(ip_src_multicast, set32(f + 26, TERN_IP4(239, 1, 2, 3)); th_fix_ip_csum(f), ip_drop_bad_src)
EDIT_CASE(ip_dst_other, set32(f + 30, TERN_IP4(198, 18, 0, 99)); th_fix_ip_csum(f), ip_drop_not_ours)
EDIT_CASE(udp_len_past_datagram, f[38] = 0; f[39] = 200, udp_drop_len)
EDIT_CASE(udp_len_below_8, f[38] = 0; f[39] = 4, udp_drop_len)
EDIT_CASE(udp_bad_csum, f[*n - 1] ^= 0x20, udp_drop_csum)

/* IPv4 options: frame with a 4- or 8-byte option block before UDP. */
static void with_options(const uint8_t *opt, size_t olen, size_t off)
{
    th *t = bi_new();
    uint8_t f[256], g[256];
    size_t n = udp53(f);
    memcpy(g, f, 34);
    memcpy(g + 34, opt, olen);
    memcpy(g + 34 + olen, f + 34, n - 34);
    g[14] = (uint8_t)(0x40 | (20 + olen) / 4);
    g[17] = (uint8_t)(g[17] + olen);
    th_fix_ip_csum(g);
    bi_feed(t, g, n + olen);
    const uint64_t *ctr = (const uint64_t *)((const uint8_t *)C(t) + off);
    assert_int_equal(*ctr, 1);
    bi_healthy_and_free(t);
}
static void ip_opt_len0(void **s) { (void)s; const uint8_t o[4] = {0x44, 0, 5, 0}; with_options(o, 4, offsetof(tern_counters, ip_drop_options)); }
static void ip_opt_len1(void **s) { (void)s; const uint8_t o[4] = {0x44, 1, 5, 0}; with_options(o, 4, offsetof(tern_counters, ip_drop_options)); }
static void ip_opt_past_header(void **s) { (void)s; const uint8_t o[4] = {7, 12, 4, 0}; with_options(o, 4, offsetof(tern_counters, ip_drop_options)); }
static void ip_opt_lsrr(void **s) { (void)s; const uint8_t o[8] = {131, 7, 4, 10, 0, 0, 1, 0}; with_options(o, 8, offsetof(tern_counters, ip_drop_options)); }
static void ip_opt_nops_ok(void **s) { (void)s; const uint8_t o[4] = {1, 1, 1, 0}; with_options(o, 4, offsetof(tern_counters, udp_in)); }

/* Ethernet padding: a 60-byte frame around a short datagram is accepted. */
static void eth_padding(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t f[128] = {0};
    size_t n = th_udp_frame(f, TH_PEER_IP, TH_IP, 4000, 53, "x", 1);
    memset(f + n, 0xee, 64 - n);
    bi_feed(t, f, 64);
    assert_int_equal(C(t)->udp_in, 1);
    assert_int_equal(C(t)->udp_drop_len + C(t)->udp_drop_csum, 0);
    bi_healthy_and_free(t);
}

/* ---- ARP ---- */
static void arp_feed_and_check(size_t n_edit, int field, uint8_t value, size_t off)
{
    th *t = bi_new();
    uint8_t f[64];
    size_t n = th_arp(f, 1, TH_PEER_MAC, TH_PEER_IP, ZERO, TH_IP);
    if (field >= 0)
        f[field] = value;
    bi_feed(t, f, n_edit ? n_edit : n);
    const uint64_t *ctr = (const uint64_t *)((const uint8_t *)C(t) + off);
    assert_int_equal(*ctr, 1);
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);
}
static void arp_truncated(void **s) { (void)s; arp_feed_and_check(14 + 20, -1, 0, offsetof(tern_counters, arp_drop_short)); }
static void arp_bad_hlen(void **s) { (void)s; arp_feed_and_check(0, 14 + 4, 8, offsetof(tern_counters, arp_drop_format)); }
static void arp_bad_plen(void **s) { (void)s; arp_feed_and_check(0, 14 + 5, 6, offsetof(tern_counters, arp_drop_format)); }
static void arp_bad_op(void **s) { (void)s; arp_feed_and_check(0, 14 + 7, 9, offsetof(tern_counters, arp_drop_format)); }
static void arp_broadcast_sender(void **s) { (void)s; arp_feed_and_check(0, 14 + 8, 0xff, offsetof(tern_counters, arp_drop_bad_sender)); }

static void arp_claims_our_address(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t f[64];
    const uint8_t thief[6] = {2, 6, 6, 6, 6, 6};
    bi_feed(t, f, th_arp(f, 1, thief, TH_IP, ZERO, TH_IP));
    assert_int_equal(C(t)->arp_drop_addr_conflict, 1);
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);     /* the peer's entry was not overwritten */
}

static void cfg_small_arp(tern_config *c) { c->arp_entries = 16; }

static void arp_flood_other_targets(void **s)
{
    (void)s;
    th *t = bi_new_with(cfg_small_arp);
    uint8_t f[64];
    for (uint32_t i = 0; i < 5000; i++) {
        uint8_t mac[6] = {2, 9, 0, 0, (uint8_t)(i >> 8), (uint8_t)i};
        bi_feed(t, f, th_arp(f, 1, mac, TERN_IP4(198, 18, 0, 10) + (i % 200), ZERO,
                             TERN_IP4(198, 18, 0, 250)));
    }
    assert_int_equal(C(t)->arp_drop_not_ours, 5000);
    assert_int_equal(C(t)->arp_cache_full, 0);   /* nothing was learned */
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);
}

/* ---- fragments (a UDP datagram of 1008 bytes to port 53) ---- */

static size_t udp_payload(uint8_t *pl)
{
    uint8_t f[1600], d[1000];
    for (int i = 0; i < 1000; i++)
        d[i] = (uint8_t)(i * 13);
    size_t n = th_udp_frame(f, TH_PEER_IP, TH_IP, 4000, 53, d, sizeof d);
    memcpy(pl, f + 34, n - 34);
    return n - 34;
}

static void frag_ping_of_death(void **s)
{
    (void)s;
    th *t = bi_new();
    static uint8_t pl[70000];
    uint8_t f[1600];
    bi_feed(t, f, th_frag(f, pl, 0, 1400, 1, 1, 1));
    bi_feed(t, f, th_frag(f, pl, 65520, 100, 0, 1, 1));
    assert_int_equal(C(t)->ip_drop_frag_bad, 1);
    assert_int_equal(C(t)->icmp_in, 0);
    bi_healthy_and_free(t);
}

static void frag_teardrop(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t pl[1100], f[1600];
    udp_payload(pl);
    bi_feed(t, f, th_frag(f, pl, 0, 504, 1, 2, 17));
    bi_feed(t, f, th_frag(f, pl, 256, 400, 0, 2, 17));
    assert_int_equal(C(t)->ip_drop_frag_overlap, 1);
    assert_int_equal(C(t)->udp_in, 0);
    assert_int_equal(t->bufs_out, 0);
    bi_healthy_and_free(t);
}

static void frag_duplicates_out_of_order(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t pl[1100], f[1600];
    size_t n = udp_payload(pl);
    bi_feed(t, f, th_frag(f, pl, 504, (uint32_t)n - 504, 0, 3, 17));
    bi_feed(t, f, th_frag(f, pl, 504, (uint32_t)n - 504, 0, 3, 17));
    bi_feed(t, f, th_frag(f, pl, 0, 504, 1, 3, 17));
    assert_int_equal(C(t)->ip_drop_frag_dup, 1);
    assert_int_equal(C(t)->ip_reasm_ok, 1);
    assert_int_equal(C(t)->udp_in, 1);
    assert_int_equal(C(t)->udp_drop_csum, 0);
    bi_healthy_and_free(t);
}

static void frag_not_multiple_of_8(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t pl[1100], f[1600];
    udp_payload(pl);
    bi_feed(t, f, th_frag(f, pl, 0, 500, 1, 4, 17));
    assert_int_equal(C(t)->ip_drop_frag_bad, 1);
    bi_healthy_and_free(t);
}

static void frag_tiny_tcp_first(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t pl[64] = {0}, f[256];
    bi_feed(t, f, th_frag(f, pl, 0, 8, 1, 5, 6));    /* ports only */
    bi_feed(t, f, th_frag(f, pl, 8, 16, 0, 6, 6));   /* rewrites flags */
    assert_int_equal(C(t)->ip_drop_frag_bad, 2);
    bi_healthy_and_free(t);
}

static void frag_incomplete_timeout(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t pl[1100], f[1600];
    udp_payload(pl);
    for (uint16_t id = 0; id < 1000; id++)
        bi_feed(t, f, th_frag(f, pl, 0, 504, 1, (uint16_t)(100 + id), 17));
    assert_true(t->bufs_out <= 8);                /* reasm_slots */
    t->now += 31 * TERN_NS_PER_SEC;
    th_poll(t);
    assert_int_equal(t->bufs_out, 0);
    assert_true(C(t)->ip_frag_timeout >= 1);
    bi_healthy_and_free(t);
}

/* ---- ICMP ---- */
static void icmp_too_short(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t f[128];
    size_t n = th_ping_frame(f, TH_PEER_IP, TH_IP, 1, 1, "", 0);
    f[17] = 20 + 4;
    th_fix_ip_csum(f);
    bi_feed(t, f, n - 4);
    assert_int_equal(C(t)->icmp_drop_short, 1);
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);
}

static void icmp_bad_csum(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t f[128];
    size_t n = th_ping_frame(f, TH_PEER_IP, TH_IP, 1, 1, "abcd", 4);
    f[n - 1] ^= 0xff;
    bi_feed(t, f, n);
    assert_int_equal(C(t)->icmp_drop_csum, 1);
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);
}

/* An ICMP error: type/code, quoting a TCP segment src->dst ports. */
static size_t icmp_error(uint8_t *f, uint8_t type, uint8_t code, uint16_t mtu,
                         uint16_t sport, uint16_t dport)
{
    size_t n = th_eth(f, TH_MAC, TH_PEER_MAC, 0x0800);
    th_ip4(f + n, TH_PEER_IP, TH_IP, 1, 8 + 28);
    uint8_t *m = f + n + 20;
    memset(m, 0, 36);
    m[0] = type;
    m[1] = code;
    m[6] = (uint8_t)(mtu >> 8);
    m[7] = (uint8_t)mtu;
    th_ip4(m + 8, TH_IP, TH_PEER_IP, 6, 8);
    m[28] = (uint8_t)(sport >> 8); m[29] = (uint8_t)sport;
    m[30] = (uint8_t)(dport >> 8); m[31] = (uint8_t)dport;
    uint16_t c = th_csum_ref(m, 36, 0);
    m[2] = (uint8_t)(c >> 8);
    m[3] = (uint8_t)c;
    return n + 20 + 36;
}

static void icmp_error_unknown_conn(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 40001);
    uint8_t f[128];
    bi_feed(t, f, icmp_error(f, 3, 1, 0, 80, 9999));   /* host unreachable */
    assert_int_equal(C(t)->icmp_error_in, 1);
    assert_int_equal(t->nout, 0);                       /* nothing answered */
    size_t before = bi_received();
    peer_send(&p, F_ACK | F_PSH, "still", 5);           /* conn unaffected */
    assert_int_equal(bi_received() - before, 5);
    bi_healthy_and_free(t);
}

static void icmp_frag_needed_tiny_mtu(void **s)
{
    (void)s;
    th *t = bi_new();
    peer p;
    bi_connect(t, &p, 40002);
    uint8_t f[128];
    bi_feed(t, f, icmp_error(f, 3, 4, 20, 80, 40002));   /* MTU 20 < 68 */
    assert_int_equal(C(t)->icmp_error_in, 1);
    /* the connection still sends full-size segments, never tiny ones */
    static uint8_t big[1400];
    memset(big, 'z', sizeof big);
    th_clear(t);
    peer_send(&p, F_ACK | F_PSH, big, sizeof big);
    tpkt sg;
    size_t largest = 0;
    for (unsigned i = 0; i < tp_count(t); i++)
        if (tp_get(t, (int)i, &sg) && sg.len > largest)
            largest = sg.len;
    assert_true(largest >= 536);
    bi_healthy_and_free(t);
}

static void icmp_no_error_about_error(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t f[128];
    /* an ICMP error quoting an ICMP error, to a closed "port": silence */
    size_t n = icmp_error(f, 3, 3, 0, 1, 2);
    f[14 + 20 + 8 + 9] = 1;                      /* quoted proto ICMP */
    uint8_t *m = f + 34;
    m[2] = m[3] = 0;
    uint16_t c = th_csum_ref(m, 36, 0);
    m[2] = (uint8_t)(c >> 8);
    m[3] = (uint8_t)c;
    bi_feed(t, f, n);
    /* a datagram with an unknown protocol to the broadcast address */
    n = th_udp_frame(f, TH_PEER_IP, TERN_IP4(198, 18, 0, 255), 1, 9, "b", 1);
    memset(f, 0xff, 6);
    f[23] = 200;
    th_fix_ip_csum(f);
    bi_feed(t, f, n);
    assert_int_equal(C(t)->ip_drop_proto, 1);
    assert_int_equal(C(t)->icmp_unreach_out, 0);
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);
}

static void icmp_echo_broadcast(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t f[128];
    size_t n = th_ping_frame(f, TH_PEER_IP, 0xffffffffu, 1, 1, "smurf", 5);
    memset(f, 0xff, 6);
    bi_feed(t, f, n);
    assert_int_equal(C(t)->icmp_echo_in, 1);
    assert_int_equal(C(t)->icmp_echo_reply_out, 0);
    assert_int_equal(t->nout, 0);
    bi_healthy_and_free(t);
}

static void udp_closed_port(void **s)
{
    (void)s;
    th *t = bi_new();
    uint8_t f[128];
    bi_feed(t, f, th_udp_frame(f, TH_PEER_IP, TH_IP, 4000, 54, "x", 1));
    assert_int_equal(C(t)->udp_drop_no_port, 1);
    assert_int_equal(C(t)->icmp_unreach_out, 1);
    assert_int_equal(t->out[0][34], 3);
    assert_int_equal(t->out[0][35], 3);
    bi_healthy_and_free(t);
}

static const bi_case cases[] = {
    {"eth_empty", "a 0-byte frame", "dropped, eth_drop_short", eth_empty},
    {"eth_13", "a 13-byte frame", "dropped, eth_drop_short", eth_13},
    {"eth_unknown_type", "EtherType 0x88b5", "dropped, eth_drop_ethertype", eth_unknown_type},
    {"eth_multicast_dst", "multicast destination MAC", "dropped, eth_drop_not_ours", eth_multicast_dst},
    {"eth_padding", "60-byte frame padding a 1-byte UDP datagram", "padding trimmed, datagram delivered", eth_padding},
    {"ip_short", "19 bytes of IPv4 header", "dropped, ip_drop_short", ip_short},
    {"ip_frame_shorter_than_total", "frame 1 byte shorter than the IP total length", "dropped, ip_drop_total_len", ip_frame_shorter_than_total},
    {"ip_version6", "version field 6", "dropped, ip_drop_version", ip_version6},
    {"ip_ihl4", "IHL 4 (16-byte header)", "dropped, ip_drop_hdr_len", ip_ihl4},
    {"ip_ihl_past_frame", "IHL 15 in a 40-byte frame", "dropped, ip_drop_hdr_len", ip_ihl_past_frame},
    {"ip_total_below_ihl", "total length 12 < header", "dropped, ip_drop_total_len", ip_total_below_ihl},
    {"ip_bad_csum", "header checksum off by one bit", "dropped, ip_drop_csum", ip_bad_csum},
    {"ip_opt_len0", "IP option with length 0", "dropped, ip_drop_options", ip_opt_len0},
    {"ip_opt_len1", "IP option with length 1", "dropped, ip_drop_options", ip_opt_len1},
    {"ip_opt_past_header", "IP option running past the header", "dropped, ip_drop_options", ip_opt_past_header},
    {"ip_opt_lsrr", "loose source route", "dropped, ip_drop_options", ip_opt_lsrr},
    {"ip_opt_nops_ok", "NOP NOP NOP EOL options", "accepted, datagram delivered", ip_opt_nops_ok},
    {"ip_land", "source = our address (LAND)", "dropped, ip_drop_bad_src", ip_land},
    {"ip_src_loopback", "source 127.0.0.1", "dropped, ip_drop_bad_src", ip_src_loopback},
    {"ip_src_broadcast", "source 255.255.255.255", "dropped, ip_drop_bad_src", ip_src_broadcast},
    {"ip_src_multicast", "source 239.1.2.3", "dropped, ip_drop_bad_src", ip_src_multicast},
    {"ip_dst_other", "destination another host", "dropped, ip_drop_not_ours", ip_dst_other},
    {"arp_truncated", "ARP of 20 bytes", "dropped, arp_drop_short, no reply", arp_truncated},
    {"arp_bad_hlen", "ARP hlen 8", "dropped, arp_drop_format, no reply", arp_bad_hlen},
    {"arp_bad_plen", "ARP plen 6", "dropped, arp_drop_format, no reply", arp_bad_plen},
    {"arp_bad_op", "ARP opcode 9", "dropped, arp_drop_format, no reply", arp_bad_op},
    {"arp_broadcast_sender", "ARP sender MAC broadcast", "dropped, arp_drop_bad_sender", arp_broadcast_sender},
    {"arp_claims_our_address", "ARP request claiming our IP", "dropped, arp_drop_addr_conflict; cache unchanged", arp_claims_our_address},
    {"arp_flood_other_targets", "5000 requests from new senders for another host", "none answered or learned; cache does not grow", arp_flood_other_targets},
    {"frag_ping_of_death", "fragment ending past 65535", "dropped, ip_drop_frag_bad", frag_ping_of_death},
    {"frag_teardrop", "second fragment overlapping the first", "datagram dropped, ip_drop_frag_overlap, buffers freed", frag_teardrop},
    {"frag_duplicates_out_of_order", "last fragment twice, then the first", "duplicate dropped, datagram reassembled once", frag_duplicates_out_of_order},
    {"frag_not_multiple_of_8", "non-final fragment of 500 bytes", "dropped, ip_drop_frag_bad", frag_not_multiple_of_8},
    {"frag_tiny_tcp_first", "TCP first fragment of 8 bytes; TCP fragment at offset 8", "both dropped, ip_drop_frag_bad (RFC 1858)", frag_tiny_tcp_first},
    {"frag_incomplete_timeout", "1000 incomplete datagrams", "at most reasm_slots held; all freed by the timeout", frag_incomplete_timeout},
    {"icmp_too_short", "ICMP message of 4 bytes", "dropped, icmp_drop_short", icmp_too_short},
    {"icmp_bad_csum", "ICMP echo with a bad checksum", "dropped, icmp_drop_csum, no reply", icmp_bad_csum},
    {"icmp_error_unknown_conn", "host unreachable quoting an unknown connection", "counted, ignored; connections unaffected", icmp_error_unknown_conn},
    {"icmp_frag_needed_tiny_mtu", "frag needed with MTU 20", "MSS not lowered below the floor", icmp_frag_needed_tiny_mtu},
    {"icmp_no_error_about_error", "ICMP error quoting an ICMP error; unknown protocol to broadcast", "no ICMP error sent", icmp_no_error_about_error},
    {"icmp_echo_broadcast", "echo request to 255.255.255.255", "not answered", icmp_echo_broadcast},
    {"udp_len_past_datagram", "UDP length 200 in a 24-byte datagram", "dropped, udp_drop_len", udp_len_past_datagram},
    {"udp_len_below_8", "UDP length 4", "dropped, udp_drop_len", udp_len_below_8},
    {"udp_bad_csum", "UDP checksum wrong", "dropped, udp_drop_csum", udp_bad_csum},
    {"udp_closed_port", "UDP to a closed port", "dropped, ICMP port unreachable sent", udp_closed_port},
};

int main(int argc, char **argv)
{
    return bi_main(argc, argv, "network", cases, sizeof cases / sizeof cases[0]);
}
