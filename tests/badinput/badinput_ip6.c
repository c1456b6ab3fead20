/* Bad input to the IPv6 layer: fixed header, extension headers, fragments,
 * ICMPv6 and neighbor discovery. Each case asserts the exact counter (and
 * what is or is not sent), then that an IPv6 echo and a fresh TCP
 * connection (over IPv4) still work. */
#include "bi.h"
#include "th6.h"

static const uint8_t MC[16] = {0xff, 2, [15] = 1};

static void ip6_cfg(tern_config *c)
{
    memcpy(c->ip6[0], TH6_IP, 16);
    c->ip6_prefix_len[0] = 64;
    c->n_ip6 = 1;
    c->ip6_no_dad = 1;
    c->reasm_slots = 4;
}

static th *new6(void)
{
    th *t = bi_new_with(ip6_cfg);
    th6_resolved(t);
    return t;
}

static uint64_t ctr(th *t, size_t off)
{
    return *(const uint64_t *)((const uint8_t *)C(t) + off);
}

/* Still answers an IPv6 echo, then the IPv4 health check. */
static void healthy6(th *t)
{
    uint8_t f[256];
    th_clear(t);
    uint64_t before = C(t)->icmp6_echo_reply_out;
    bi_feed(t, f, th6_ping(f, TH6_PEER, TH6_IP, 1, 1, 16));
    assert_int_equal(C(t)->icmp6_echo_reply_out, before + 1);
    assert_true(th6_csum_ok(t->out[0], t->out_len[0]));
    th_clear(t);
    bi_healthy_and_free(t);
}

/* Feed a ping edited by `edit`: the counter at off is 1, nothing is sent
 * (or, when err_type, one ICMPv6 error of that type). */
static void edited(void (*edit)(uint8_t *f, size_t *n), size_t off, int err_type)
{
    th *t = new6();
    uint8_t f[512];
    size_t n = th6_ping(f, TH6_PEER, TH6_IP, 1, 1, 16);
    edit(f, &n);
    bi_feed(t, f, n);
    assert_int_equal(ctr(t, off), 1);
    assert_int_equal(C(t)->icmp6_echo_reply_out, 0);
    if (err_type) {
        assert_int_equal(t->nout, 1);
        assert_int_equal(t->out[0][54], err_type);
    } else {
        assert_int_equal(t->nout, 0);
    }
    healthy6(t);
}
#define EDIT6(fn, body, counter, err)                                      \
    static void e_##fn(uint8_t *f, size_t *n) { (void)f; (void)n; body; }  \
    static void fn(void **s) { (void)s; edited(e_##fn, offsetof(tern_counters, counter), err); }

/* Insert len bytes of extension headers before the ICMPv6 message; the
 * fixed header's next header becomes nh. */
static void put_ext(uint8_t *f, size_t *n, uint8_t nh, const uint8_t *ext, size_t len)
{
    memmove(f + 54 + len, f + 54, *n - 54);
    memcpy(f + 54, ext, len);
    f[20] = nh;
    size_t pl = (size_t)(f[18] << 8 | f[19]) + len;
    f[18] = (uint8_t)(pl >> 8);
    f[19] = (uint8_t)pl;
    *n += len;
}

static const uint8_t HBH_SECOND[16] = {0, 0, 1, 4, 0, 0, 0, 0, 58, 0, 1, 4, 0, 0, 0, 0};
static const uint8_t RT0[8] = {58, 0, 0, 1, 0, 0, 0, 0};
static const uint8_t OPT10[8] = {58, 0, 0x9e, 2, 0, 0, 1, 0};
static uint8_t chain9[72];
static void make_chain9(void)
{
    for (int i = 0; i < 9; i++) {
        uint8_t h[8] = {i == 8 ? 58 : 60, 0, 1, 4, 0, 0, 0, 0};
        memcpy(chain9 + 8 * i, h, 8);
    }
}

EDIT6(ip6_short, *n = 14 + 39, ip6_drop_short, 0)
EDIT6(ip6_version4, f[14] = 0x40, ip6_drop_version, 0)
EDIT6(ip6_payload_past_frame, *n -= 1, ip6_drop_len, 0)
EDIT6(ip6_src_multicast, memcpy(f + 22, MC, 16), ip6_drop_bad_src, 0)
EDIT6(ip6_src_ours, memcpy(f + 22, TH6_IP, 16), ip6_drop_bad_src, 0)
EDIT6(ip6_dst_other, f[53] = 9, ip6_drop_not_ours, 0)
EDIT6(ip6_group_not_joined, f[0] = 0x33; f[1] = 0x33; f[2] = 0xff; f[3] = 0x12, ip6_drop_mcast_mac, 0)
EDIT6(ip6_chain_too_long, make_chain9(); put_ext(f, n, 60, chain9, sizeof chain9), ip6_drop_ext_chain, 0)
EDIT6(ip6_hbh_not_first, put_ext(f, n, 60, HBH_SECOND, 16), ip6_drop_proto, 4)
EDIT6(ip6_routing_type0, put_ext(f, n, 43, RT0, 8), ip6_drop_routing, 4)
EDIT6(ip6_option_unknown_10, put_ext(f, n, 60, OPT10, 8), ip6_drop_option, 4)
EDIT6(ip6_unknown_next_header, f[20] = 200, ip6_drop_proto, 4)
EDIT6(icmp6_bad_csum, f[*n - 1] ^= 1, icmp6_drop_csum, 0)
EDIT6(icmp6_too_short, f[19] = 3; *n = 14 + 40 + 3, icmp6_drop_short, 0)

/* Fragment [off, off + len) of a 3,000-byte payload, M flag more. */
static size_t frag6(uint8_t *f, uint32_t off, uint32_t len, int more, uint32_t id)
{
    uint8_t pl[1300] = {58, 0, (uint8_t)(off >> 8), (uint8_t)((off & 0xf8) | more),
                        (uint8_t)(id >> 24), (uint8_t)(id >> 16), (uint8_t)(id >> 8),
                        (uint8_t)id};
    for (uint32_t i = 0; i < len; i++)
        pl[8 + i] = (uint8_t)(off + i);
    return th6_pkt(f, TH6_PEER, TH6_IP, 44, 64, pl, 8 + len);
}

static void frag6_overlap(void **s)
{
    (void)s;
    th *t = new6();
    uint8_t f[1400];
    bi_feed(t, f, frag6(f, 0, 1232, 1, 1));
    bi_feed(t, f, frag6(f, 1224, 1232, 1, 1));
    bi_feed(t, f, frag6(f, 2456, 8, 0, 1));
    assert_int_equal(C(t)->ip6_drop_frag_overlap, 2);
    assert_int_equal(C(t)->ip6_reasm_ok, 0);
    healthy6(t);
}

static void frag6_chain_cut(void **s)
{
    (void)s;
    th *t = new6();
    uint8_t f[256];
    /* first fragment: a destination options header claiming 48 bytes
     * in a fragment of 16 */
    uint8_t pl[24] = {60, 0, 0, 1, 0, 0, 0, 9, 58, 5};
    bi_feed(t, f, th6_pkt(f, TH6_PEER, TH6_IP, 44, 64, pl, sizeof pl));
    assert_int_equal(C(t)->ip6_drop_frag_chain, 1);
    assert_int_equal(t->nout, 1);
    assert_int_equal(t->out[0][55], 3);
    healthy6(t);
}

static void frag6_incomplete_flood(void **s)
{
    (void)s;
    th *t = new6();
    uint8_t f[1400];
    for (uint32_t id = 0; id < 1000; id++)
        bi_feed(t, f, frag6(f, 1232, 1232, 1, id));
    assert_int_equal(C(t)->ip6_frag_evicted, 1000 - 4);
    th_advance_us(t, 61u * 1000 * 1000);
    assert_int_equal(C(t)->ip6_frag_timeout, 4);
    healthy6(t);
}

static void nd_ns_not_from_link(void **s)
{
    (void)s;
    th *t = new6();
    uint8_t f[256];
    size_t n = th6_ns(f, TH6_PEER, TH6_IP, TH6_IP, TH_PEER_MAC);
    f[21] = 254;
    bi_feed(t, f, n);
    assert_int_equal(C(t)->nd_drop_bad, 1);
    assert_int_equal(t->nout, 0);
    healthy6(t);
}

static void nd_ns_flood_new_sources(void **s)
{
    (void)s;
    th *t = new6();
    uint8_t f[256], src[16];
    memcpy(src, TH6_PEER, 16);
    for (int i = 0; i < 5000; i++) {
        src[13] = (uint8_t)(i >> 8);
        src[14] = (uint8_t)i;
        src[15] = 7;
        bi_feed(t, f, th6_ns(f, src, TH6_IP, TH6_IP, TH_PEER_MAC));
    }
    /* every one answered; the cache stayed within its slots */
    assert_int_equal(C(t)->nd_na_out, 5000 + 2);
    assert_true(C(t)->nd_evicted > 0);
    healthy6(t);
}

static void nd_na_unsolicited_flood(void **s)
{
    (void)s;
    th *t = new6();
    uint8_t f[256], tgt[16];
    memcpy(tgt, TH6_PEER, 16);
    for (int i = 0; i < 5000; i++) {
        tgt[13] = 0x55;
        tgt[14] = (uint8_t)(i >> 8);
        tgt[15] = (uint8_t)(i + 2);
        bi_feed(t, f, th6_na(f, tgt, MC, tgt, 0x20, TH_PEER_MAC));
    }
    /* nobody asked: nothing learned, nothing evicted, nothing sent */
    assert_int_equal(C(t)->nd_na_in, 5000);
    assert_int_equal(C(t)->nd_evicted, 0);
    assert_int_equal(t->nout, 0);
    healthy6(t);
}

static void icmp6_ptb_tiny_mtu(void **s)
{
    (void)s;
    th *t = new6();
    uint8_t f[256];
    uint8_t m[8 + 48] = {2, 0, 0, 0, 0, 0, 0, 68};
    m[8] = 0x60;
    m[13] = 8;
    m[14] = 58;
    memcpy(m + 16, TH6_IP, 16);
    memcpy(m + 32, TH6_PEER, 16);
    bi_feed(t, f, th6_icmp(f, TH6_PEER, TH6_IP, 64, m, sizeof m));
    assert_int_equal(C(t)->icmp6_pmtu_floored, 1);
    assert_int_equal(t->nout, 0);
    healthy6(t);
}

static const bi_case cases[] = {
    {"ip6_short", "39 bytes of IPv6 header", "dropped, ip6_drop_short", ip6_short},
    {"ip6_version4", "version 4 under EtherType 0x86DD", "dropped, ip6_drop_version", ip6_version4},
    {"ip6_payload_past_frame", "payload length 1 byte past the frame", "dropped, ip6_drop_len", ip6_payload_past_frame},
    {"ip6_src_multicast", "source ff02::1", "dropped, ip6_drop_bad_src", ip6_src_multicast},
    {"ip6_src_ours", "source = our address", "dropped, ip6_drop_bad_src", ip6_src_ours},
    {"ip6_dst_other", "destination another host", "dropped, ip6_drop_not_ours", ip6_dst_other},
    {"ip6_group_not_joined", "to a solicited-node MAC we did not join", "dropped, ip6_drop_mcast_mac", ip6_group_not_joined},
    {"ip6_chain_too_long", "9 destination options headers", "dropped, ip6_drop_ext_chain", ip6_chain_too_long},
    {"ip6_hbh_not_first", "hop-by-hop after destination options", "dropped, ip6_drop_proto, parameter problem", ip6_hbh_not_first},
    {"ip6_routing_type0", "routing header type 0, segments left 1", "dropped, ip6_drop_routing, parameter problem", ip6_routing_type0},
    {"ip6_option_unknown_10", "unknown option, action bits 10", "dropped, ip6_drop_option, parameter problem", ip6_option_unknown_10},
    {"ip6_unknown_next_header", "next header 200", "dropped, ip6_drop_proto, parameter problem", ip6_unknown_next_header},
    {"icmp6_bad_csum", "ICMPv6 echo with a bad checksum", "dropped, icmp6_drop_csum, no reply", icmp6_bad_csum},
    {"icmp6_too_short", "ICMPv6 message of 3 bytes", "dropped, icmp6_drop_short", icmp6_too_short},
    {"frag6_overlap", "IPv6 fragment overlapping the first by 8 bytes, then the rest", "datagram dropped with its later fragments (RFC 5722)", frag6_overlap},
    {"frag6_chain_cut", "first fragment whose header chain runs past it", "dropped, ip6_drop_frag_chain, parameter problem code 3 (RFC 7112)", frag6_chain_cut},
    {"frag6_incomplete_flood", "1000 incomplete IPv6 datagrams", "at most reasm_slots held; all freed by the 60 s timeout", frag6_incomplete_flood},
    {"nd_ns_not_from_link", "neighbor solicitation with hop limit 254", "dropped, nd_drop_bad", nd_ns_not_from_link},
    {"nd_ns_flood_new_sources", "5000 solicitations from new sources", "all answered; neighbor cache bounded", nd_ns_flood_new_sources},
    {"nd_na_unsolicited_flood", "5000 unsolicited advertisements", "nothing learned or evicted", nd_na_unsolicited_flood},
    {"icmp6_ptb_tiny_mtu", "Packet Too Big with MTU 68", "path MTU floored at 1280", icmp6_ptb_tiny_mtu},
};

int main(int argc, char **argv)
{
    return bi_main(argc, argv, "ipv6", cases, sizeof cases / sizeof cases[0]);
}
