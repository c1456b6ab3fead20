/* test_addr.c - tern_addr: RFC 4291 text in, RFC 5952 text out (the
 * examples of RFC 5952 sections 2 and 4), bad text refused, comparison,
 * and the calls that take an address refusing what they cannot send to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"

/* parse `in`, format it, expect `want` (and the same address again from
 * the formatted text) */
static void check_canon(const char *in, const char *want)
{
    tern_addr a, b;
    char text[TERN_ADDR_STRLEN];
    if (!tern_addr_parse(in, &a))
        fail_msg("refused \"%s\"", in);
    tern_addr_format(&a, text);
    if (strcmp(text, want) != 0)
        fail_msg("\"%s\" formatted as \"%s\", want \"%s\"", in, text, want);
    assert_true(tern_addr_parse(text, &b));
    assert_true(tern_addr_eq(&a, &b));
}

/* RFC 5952 section 2: the many texts of one address, and section 4: the
 * one text to write. */
static void rfc5952_examples(void **state)
{
    (void)state;
    static const char *const one[] = {
        "2001:db8:0:0:1:0:0:1", "2001:0db8:0:0:1:0:0:1", "2001:db8::1:0:0:1",
        "2001:db8::0:1:0:0:1", "2001:0db8::1:0:0:1", "2001:db8:0:0:1::1",
        "2001:db8:0000:0:1::1", "2001:DB8:0:0:1::1",
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        check_canon(one[i], "2001:db8::1:0:0:1");
    /* 2.2: leading zeros */
    check_canon("2001:db8:aaaa:bbbb:cccc:dddd:eeee:0001",
                "2001:db8:aaaa:bbbb:cccc:dddd:eeee:1");
    check_canon("2001:db8:aaaa:bbbb:cccc:dddd:eeee:001",
                "2001:db8:aaaa:bbbb:cccc:dddd:eeee:1");
    check_canon("2001:db8:aaaa:bbbb:cccc:dddd:eeee:01",
                "2001:db8:aaaa:bbbb:cccc:dddd:eeee:1");
    /* 2.2 / 4.2.2: "::" never stands for one group */
    check_canon("2001:db8:aaaa:bbbb:cccc:dddd::1",
                "2001:db8:aaaa:bbbb:cccc:dddd:0:1");
    check_canon("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1");
    /* 2.2 / 4.2.1: as short as possible */
    check_canon("2001:db8:0:0:0::1", "2001:db8::1");
    check_canon("2001:db8:0:0::1", "2001:db8::1");
    check_canon("2001:db8:0::1", "2001:db8::1");
    check_canon("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1");
    check_canon("2001:db8:0:0:0:0:2:1", "2001:db8::2:1");
    /* 2.2 / 4.2.3: the longest run; the first of equal runs */
    check_canon("2001:db8:0:0:aaaa::1", "2001:db8::aaaa:0:0:1");
    check_canon("2001:0:0:1:0:0:0:1", "2001:0:0:1::1");
    check_canon("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1");
    /* 4.3: lower case */
    check_canon("2001:DB8::ABCD:eF01", "2001:db8::abcd:ef01");
    /* the ends */
    check_canon("::", "::");
    check_canon("0:0:0:0:0:0:0:0", "::");
    check_canon("::1", "::1");
    check_canon("1::", "1::");
    check_canon("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0");
    check_canon("::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8");
    check_canon("fe80::0200:00ff:fe00:0002", "fe80::200:ff:fe00:2");
    check_canon("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    /* RFC 4291 2.2 (3) dotted tail; RFC 5952 section 5 writes only the
     * IPv4-mapped form that way */
    check_canon("::ffff:192.0.2.1", "::ffff:192.0.2.1");
    check_canon("0:0:0:0:0:FFFF:192.0.2.1", "::ffff:192.0.2.1");
    check_canon("::ffff:c000:0201", "::ffff:192.0.2.1");
    check_canon("64:ff9b::192.0.2.33", "64:ff9b::c000:221");
    check_canon("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304");
    /* IPv4 */
    check_canon("198.18.0.1", "198.18.0.1");
    check_canon("0.0.0.0", "0.0.0.0");
}

static void bytes_and_family(void **state)
{
    (void)state;
    tern_addr a;
    assert_true(tern_addr_parse("2001:db8::102:304", &a));
    static const uint8_t want[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                     0,    0,    0,    0,    1, 2, 3, 4};
    assert_int_equal(a.family, TERN_AF_INET6);
    assert_memory_equal(a.u.v6, want, 16);
    assert_true(tern_addr_parse("198.18.0.1", &a));
    assert_int_equal(a.family, TERN_AF_INET);
    assert_int_equal(a.u.v4, TERN_IP4(198, 18, 0, 1));
    assert_int_equal(sizeof(tern_addr), 20);
}

static void bad_text_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", ":", ":::", "1:::2", "1::2::3", ":1::", "1:", ":1", "1:2",
        "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1::2:3:4:5:6:7:8",
        "::1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8::", "12345::", "g::", "::g",
        "::1.2.3", "::1.2.3.4.5", "::1.2.3.256", "1.2.3.4::", "::1.2.3.4:1",
        "1:2:3:4:5:6:7:1.2.3.4", "[::1]", "::1%eth0", "2001:db8::/32",
        " ::1", "::1 ", "1::2 ", "256.1.1.1", "1.2.3", "1.2.3.4.", "-1::",
        "0x1::", "1:2:3:4:5:6:7:8:", "2001:db8::1:",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tern_addr a = tern_addr_v4(7);
        if (tern_addr_parse(bad[i], &a))
            fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(a.family, TERN_AF_INET);   /* left unchanged */
        assert_int_equal(a.u.v4, 7);
    }
    tern_addr a;
    assert_false(tern_addr_parse(NULL, &a));
    assert_false(tern_addr_parse("::1", NULL));
}

/* Every 16-byte pattern of zero and non-zero groups formats to text that
 * parses back to the same bytes, within TERN_ADDR_STRLEN. */
static void every_zero_pattern_round_trips(void **state)
{
    (void)state;
    for (unsigned mask = 0; mask < 256; mask++) {
        uint8_t b[16] = {0};
        for (int g = 0; g < 8; g++)
            if (mask & (1u << g)) {
                b[2 * g] = (uint8_t)(0x10 * g + 1);
                b[2 * g + 1] = (uint8_t)mask;
            }
        tern_addr a = tern_addr_v6(b), back;
        char text[TERN_ADDR_STRLEN + 8];
        memset(text, 'x', sizeof text);
        tern_addr_format(&a, text);
        assert_true(strlen(text) < TERN_ADDR_STRLEN);
        if (!tern_addr_parse(text, &back))
            fail_msg("pattern %02x: \"%s\" does not parse", mask, text);
        assert_memory_equal(back.u.v6, b, 16);
        assert_null(strstr(text, ":::"));
    }
    /* the longest text: a mapped address of wide parts */
    uint8_t m[16] = {[10] = 0xff, [11] = 0xff, 255, 255, 255, 255};
    tern_addr a = tern_addr_v6(m);
    char text[TERN_ADDR_STRLEN];
    assert_string_equal(tern_addr_format(&a, text), "::ffff:255.255.255.255");
}

static void equality(void **state)
{
    (void)state;
    tern_addr a, b;
    assert_true(tern_addr_parse("2001:db8::1", &a));
    assert_true(tern_addr_parse("2001:DB8:0::0:1", &b));
    assert_true(tern_addr_eq(&a, &b));
    b.pad[0] = 9;                         /* padding does not count */
    assert_true(tern_addr_eq(&a, &b));
    assert_true(tern_addr_parse("2001:db8::2", &b));
    assert_false(tern_addr_eq(&a, &b));
    /* ::ffff:198.18.0.1 is an IPv6 address, not the IPv4 one */
    assert_true(tern_addr_parse("::ffff:198.18.0.1", &a));
    b = tern_addr_v4(TERN_IP4(198, 18, 0, 1));
    assert_false(tern_addr_eq(&a, &b));
    b.u.v6[15] = 0xaa;          /* bytes after v4 do not count for IPv4 */
    tern_addr c = tern_addr_v4(TERN_IP4(198, 18, 0, 1));
    assert_true(tern_addr_eq(&b, &c));
    c.family = 0;
    char text[TERN_ADDR_STRLEN];
    assert_string_equal(tern_addr_format(&c, text), "?");
    assert_false(tern_addr_eq(&c, &c));
}

/* The calls that send to an address: IPv6 gets "address family not
 * supported", NULL or an unknown family "invalid argument"; nothing is
 * sent and no buffer is kept. */
static void senders_refuse_what_they_cannot_reach(void **state)
{
    (void)state;
    th *t = th_new(NULL);
    tern_addr v6, odd = tern_addr_v4(TH_PEER_IP);
    assert_true(tern_addr_parse("2001:db8::1", &v6));
    odd.family = 0;
    assert_int_equal(tern_udp_send(t->st, 1, &v6, 2, "x", 1),
                     -TERN_EAFNOSUPPORT);
    assert_int_equal(tern_udp_send(t->st, 1, NULL, 2, "x", 1), -TERN_EINVAL);
    assert_int_equal(tern_udp_send(t->st, 1, &odd, 2, "x", 1), -TERN_EINVAL);
    assert_int_equal(tern_icmp_echo(t->st, &v6, 1, 1, "x", 1),
                     -TERN_EAFNOSUPPORT);
    assert_int_equal(tern_icmp_echo(t->st, NULL, 1, 1, "x", 1), -TERN_EINVAL);
    tern_buf *b = tern_buf_alloc(t->st);
    assert_non_null(b);
    assert_int_equal(tern_udp_send_buf(t->st, 1, &v6, 2, b),
                     -TERN_EAFNOSUPPORT);
    th_poll(t);
    assert_int_equal(t->nout, 0);
    assert_string_equal(tern_strerror(-TERN_EAFNOSUPPORT),
                        "address family not supported");
    assert_int_equal(th_free(t), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc5952_examples),
        cmocka_unit_test(bytes_and_family),
        cmocka_unit_test(bad_text_refused),
        cmocka_unit_test(every_zero_pattern_round_trips),
        cmocka_unit_test(equality),
        cmocka_unit_test(senders_refuse_what_they_cannot_reach),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
