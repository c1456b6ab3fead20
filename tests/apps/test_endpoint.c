/* test_endpoint.c - the programs' address and endpoint syntax (apps/common
 * endpoint.h): IPv4, IPv6 with and without brackets, prefixes, and that
 * every bad input is refused with a reason that names the problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "endpoint.h"

static const uint8_t DB8_2[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 2};

static void endpoints_v4(void **state)
{
    (void)state;
    endpoint e;
    char err[128], txt[EP_STRLEN];
    assert_true(ep_parse("198.18.0.2:7007", &e, err, sizeof err));
    assert_int_equal(e.addr.family, EP_AF_INET);
    assert_int_equal(e.addr.v4, 0xc6120002u);
    assert_int_equal(e.port, 7007);
    assert_string_equal(ep_format(&e, txt), "198.18.0.2:7007");
    assert_true(ep_parse("localhost:1", &e, err, sizeof err));
    assert_int_equal(e.addr.v4, 0x7f000001u);
    assert_int_equal(e.port, 1);
    assert_true(ep_parse("0.0.0.0:65535", &e, err, sizeof err));
    assert_int_equal(e.port, 65535);
}

static void endpoints_v6(void **state)
{
    (void)state;
    endpoint e;
    char err[128], txt[EP_STRLEN];
    assert_true(ep_parse("[2001:db8::2]:7007", &e, err, sizeof err));
    assert_int_equal(e.addr.family, EP_AF_INET6);
    assert_memory_equal(e.addr.v6, DB8_2, 16);
    assert_int_equal(e.port, 7007);
    assert_string_equal(ep_format(&e, txt), "[2001:db8::2]:7007");
    /* Upper case and a long form come back in the RFC 5952 form. */
    assert_true(ep_parse("[2001:DB8:0:0:0:0:0:2]:80", &e, err, sizeof err));
    assert_memory_equal(e.addr.v6, DB8_2, 16);
    assert_string_equal(ep_format(&e, txt), "[2001:db8::2]:80");
    assert_true(ep_parse("[::1]:8080", &e, err, sizeof err));
    assert_int_equal(e.addr.v6[15], 1);
    assert_true(ep_parse("[::ffff:198.18.0.2]:9", &e, err, sizeof err));
    assert_int_equal(e.addr.family, EP_AF_INET6);
    assert_int_equal(e.addr.v6[10], 0xff);
    assert_int_equal(e.addr.v6[12], 198);
}

static void addresses(void **state)
{
    (void)state;
    ep_addr a;
    char err[128], txt[EP_STRLEN];
    assert_true(ep_addr_parse("2001:db8::2", &a, err, sizeof err));
    assert_true(ep_addr_is_v6(&a));
    assert_memory_equal(a.v6, DB8_2, 16);
    assert_true(ep_addr_parse("[2001:db8::2]", &a, err, sizeof err));
    assert_memory_equal(a.v6, DB8_2, 16);
    assert_true(ep_addr_parse("198.18.0.1", &a, err, sizeof err));
    assert_false(ep_addr_is_v6(&a));
    assert_string_equal(ep_addr_format(&a, txt), "198.18.0.1");
    assert_true(ep_addr_parse("fe80::1", &a, err, sizeof err));
    assert_string_equal(ep_addr_format(&a, txt), "fe80::1");
    ep_addr v4 = ep_addr_v4(0x01020304u);
    assert_string_equal(ep_addr_format(&v4, txt), "1.2.3.4");
}

static void prefixes(void **state)
{
    (void)state;
    uint8_t ip6[16];
    unsigned p = 0;
    char err[128];
    assert_true(ep_prefix6_parse("2001:db8::2/64", ip6, &p, err, sizeof err));
    assert_memory_equal(ip6, DB8_2, 16);
    assert_int_equal(p, 64);
    assert_true(ep_prefix6_parse("2001:db8::2", ip6, &p, err, sizeof err));
    assert_int_equal(p, 64);
    assert_true(ep_prefix6_parse("2001:db8::2/128", ip6, &p, err, sizeof err));
    assert_int_equal(p, 128);
}

/* A bad input is refused and its reason contains `why`. */
static void refused(const char *in, const char *why)
{
    endpoint e;
    char err[128] = "";
    if (ep_parse(in, &e, err, sizeof err))
        fail_msg("'%s' was accepted", in);
    if (!strstr(err, why))
        fail_msg("'%s': reason '%s' lacks '%s'", in, err, why);
}

static void bad_endpoints(void **state)
{
    (void)state;
    refused("", "empty endpoint");
    refused("198.18.0.2", "missing ':PORT'");
    refused("198.18.0.2:", "missing port number");
    refused("198.18.0.2:0", "not a number 1..65535");
    refused("198.18.0.2:65536", "not a number 1..65535");
    refused("198.18.0.2:7x", "not a number 1..65535");
    refused("198.18.0.2:-1", "not a number 1..65535");
    refused(":7007", "empty address");
    refused("198.18.0.256:1", "not an IPv4 address");
    refused("198.18.0:1", "not an IPv4 address");
    refused("example.com:80", "host names other than localhost");
    refused("2001:db8::2:7007", "needs brackets");
    refused("[2001:db8::2:7007", "missing ']'");
    refused("[2001:db8::2]", "missing ':PORT' after ']'");
    refused("[2001:db8::2]7007", "expected ':PORT' after ']'");
    refused("[2001:db8::2]:", "missing port number");
    refused("[198.18.0.2]:80", "brackets are for IPv6");
    refused("[]:80", "empty address");
    refused("[2001:db8:::2]:80", "not an IPv6 address");
    refused("[2001:db8::g]:80", "not an IPv6 address");
    refused("[1:2:3:4:5:6:7:8:9]:80", "not an IPv6 address");
    refused("[fe80::1%eth0]:80", "zone indexes");
}

static void bad_addresses(void **state)
{
    (void)state;
    ep_addr a;
    uint8_t ip6[16];
    unsigned p;
    char err[128] = "";
    assert_false(ep_addr_parse("", &a, err, sizeof err));
    assert_non_null(strstr(err, "empty address"));
    assert_false(ep_addr_parse("[2001:db8::2]:80", &a, err, sizeof err));
    assert_non_null(strstr(err, "not an endpoint"));
    assert_false(ep_addr_parse("2001:db8::2/64", &a, err, sizeof err));
    assert_non_null(strstr(err, "not an IPv6 address"));
    assert_false(ep_prefix6_parse("198.18.0.2/24", ip6, &p, err, sizeof err));
    assert_non_null(strstr(err, "not an IPv6 address"));
    assert_false(ep_prefix6_parse("2001:db8::2/129", ip6, &p, err, sizeof err));
    assert_non_null(strstr(err, "1..128"));
    assert_false(ep_prefix6_parse("2001:db8::2/0", ip6, &p, err, sizeof err));
    assert_false(ep_prefix6_parse("2001:db8::2/", ip6, &p, err, sizeof err));
    assert_false(ep_prefix6_parse("2001:db8::zz/64", ip6, &p, err, sizeof err));
    /* Far too long: refused, not overflowed. */
    char big[300];
    memset(big, '1', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_false(ep_addr_parse(big, &a, err, sizeof err));
    assert_non_null(strstr(err, "too long"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(endpoints_v4),  cmocka_unit_test(endpoints_v6),
        cmocka_unit_test(addresses),     cmocka_unit_test(prefixes),
        cmocka_unit_test(bad_endpoints), cmocka_unit_test(bad_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
