/* Two stack instances joined by the mem link exchange UDP datagrams and
 * ICMP echoes: cleanly, and with 10% loss and 10% reordering. What arrives
 * is checked datagram by datagram. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "tern.h"

#define N_DGRAMS 2000
#define N_PINGS 500
#define IP_A TERN_IP4(198, 18, 0, 1)
#define IP_B TERN_IP4(198, 18, 0, 2)
#define A4(ip) (&(tern_addr){.family = TERN_AF_INET, .u = {.v4 = (ip)}})

typedef struct pair {
    tern_memlink *link;
    tern_stack *st[2];
    void *mem[2];
    uint64_t now;
    unsigned seen[N_DGRAMS];  /* times datagram i arrived at B */
    unsigned bad;             /* datagrams whose bytes were wrong */
} pair;

/* Datagram i: 4-byte index then (i + k) & 0xff for 100 + i % 300 bytes. */
static size_t make_dgram(uint8_t *out, uint32_t i)
{
    size_t len = 4 + 100 + i % 300;
    memcpy(out, &i, 4);
    for (size_t k = 4; k < len; k++)
        out[k] = (uint8_t)(i + k);
    return len;
}

static void on_udp(tern_stack *st, tern_udp *s, void *user,
                   const tern_udp_meta *meta, tern_buf *buf,
                   const uint8_t *data, size_t len)
{
    (void)st; (void)s; (void)buf;
    pair *p = user;
    uint32_t i;
    uint8_t want[512];
    if (len < 4 || meta->src.family != TERN_AF_INET || meta->src.u.v4 != IP_A || meta->dst_port != 9000) {
        p->bad++;
        return;
    }
    memcpy(&i, data, 4);
    if (i >= N_DGRAMS || make_dgram(want, i) != len ||
        memcmp(want, data, len) != 0) {
        p->bad++;
        return;
    }
    p->seen[i]++;
}

static pair *pair_new(double loss, double reorder, uint64_t seed)
{
    pair *p = calloc(1, sizeof *p);
    tern_memlink_config lc;
    tern_memlink_config_defaults(&lc);
    lc.faults.loss = loss;
    lc.faults.reorder = reorder;
    lc.seed = seed;
    char err[128];
    p->link = tern_memlink_create(&lc, err, sizeof err);
    assert_non_null(p->link);
    for (int e = 0; e < 2; e++) {
        tern_config c;
        tern_config_defaults(&c);
        c.ip = e ? IP_B : IP_A;
        uint8_t mac[6] = {2, 0, 0, 0, 0, (uint8_t)(e + 1)};
        memcpy(c.mac, mac, 6);
        c.buf_ops = tern_memlink_buf_ops(p->link, e);
        c.caps = tern_memlink_caps(p->link, e);
        c.tx = tern_memlink_tx;
        c.tx_ctx = tern_memlink_tx_ctx(p->link, e);
        c.cb.udp_recv = on_udp;
        c.icmp_rate_per_sec = 100000;
        c.arp_pending = 256;
        size_t size = tern_stack_size(&c);
        p->mem[e] = aligned_alloc(TERN_STACK_ALIGN, (size + 63) & ~(size_t)63);
        p->st[e] = tern_stack_init(p->mem[e], size, &c, NULL);
        assert_non_null(p->st[e]);
    }
    p->now = TERN_NS_PER_SEC;
    return p;
}

/* Move frames both ways until the link is quiet, stepping time. */
static void run(pair *p, uint64_t for_ns)
{
    uint64_t end = p->now + for_ns;
    tern_buf *frames[32];
    while (p->now < end) {
        unsigned moved = 0;
        for (int e = 0; e < 2; e++) {
            unsigned n = tern_memlink_rx(p->link, e, frames, 32, p->now);
            tern_input(p->st[e], frames, n, p->now);
            moved += n;
        }
        for (int e = 0; e < 2; e++)
            tern_poll(p->st[e], p->now);
        if (!moved)
            p->now += TERN_NS_PER_MS;
    }
}

static void pair_free(pair *p)
{
    for (int e = 0; e < 2; e++) {
        tern_stack_fini(p->st[e]);
        free(p->mem[e]);
    }
    tern_memlink_destroy(p->link);
    free(p);
}

static void exchange(double loss, double reorder, uint64_t seed)
{
    pair *p = pair_new(loss, reorder, seed);
    int err = -1;
    assert_non_null(tern_udp_bind(p->st[1], 9000, p, &err));
    /* resolve ARP first with one ping (retried until it is answered) */
    for (int tries = 0; tries < 20 &&
         !tern_get_counters(p->st[0])->icmp_echo_reply_in; tries++) {
        tern_icmp_echo(p->st[0], A4(IP_B), 1, 0, "arp", 3);
        run(p, 1500 * TERN_NS_PER_MS);
    }
    assert_true(tern_get_counters(p->st[0])->icmp_echo_reply_in >= 1);
    uint64_t replies0 = tern_get_counters(p->st[0])->icmp_echo_reply_in;

    uint8_t d[512];
    for (uint32_t i = 0; i < N_DGRAMS; i++) {
        size_t len = make_dgram(d, i);
        assert_int_equal(
            tern_udp_send(p->st[0], 5555, A4(IP_B), 9000, d, len), 0);
        if (i % 16 == 15)
            run(p, 0 + TERN_NS_PER_MS);
    }
    for (uint16_t s = 1; s <= N_PINGS; s++) {
        tern_icmp_echo(p->st[0], A4(IP_B), 7, s, "ping-payload", 12);
        if (s % 16 == 0)
            run(p, TERN_NS_PER_MS);
    }
    run(p, 50 * TERN_NS_PER_MS);

    unsigned got = 0, twice = 0;
    for (int i = 0; i < N_DGRAMS; i++) {
        got += p->seen[i] > 0;
        twice += p->seen[i] > 1;
    }
    uint64_t replies = tern_get_counters(p->st[0])->icmp_echo_reply_in - replies0;
    assert_int_equal(p->bad, 0);        /* nothing mangled or misdelivered */
    assert_int_equal(twice, 0);         /* no duplication configured */
    if (loss == 0) {
        assert_int_equal(got, N_DGRAMS);
        assert_int_equal(replies, N_PINGS);
    } else {
        /* each datagram crosses once (p = 0.9); each echo twice (0.81) */
        assert_in_range(got, N_DGRAMS * 85 / 100, N_DGRAMS * 95 / 100);
        assert_in_range(replies, N_PINGS * 72 / 100, N_PINGS * 90 / 100);
        assert_true(tern_memlink_get_stats(p->link, 0)->reordered > 0);
    }
    assert_int_equal(tern_get_counters(p->st[1])->udp_drop_csum, 0);
    assert_int_equal(tern_get_counters(p->st[1])->udp_in, got);
    pair_free(p);
}

static void test_clean(void **state) { (void)state; exchange(0, 0, 1); }
static void test_loss_and_reorder(void **state) { (void)state; exchange(0.10, 0.10, 42); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean),
        cmocka_unit_test(test_loss_and_reorder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
