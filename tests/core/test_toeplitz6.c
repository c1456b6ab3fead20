/* tern_toeplitz over IPv6 tuples: the IPv6 vectors of Microsoft's RSS
 * verification suite ("Verifying the RSS Hash Calculation"), addresses
 * only (32 bytes) and with the TCP ports (36 bytes: the whole 40-byte key
 * is used). Input order: source address, destination address, source
 * port, destination port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <string.h>

#include "tern.h"

static const uint8_t MS_KEY[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
    0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
    0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
    0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

static const struct {
    const char *dst;
    uint16_t dport;
    const char *src;
    uint16_t sport;
    uint32_t ip_only, with_tcp;
} V6[] = {
    {"3ffe:2501:200:3::1", 1766, "3ffe:2501:200:1fff::7", 2794,
     0x2cc18cd5, 0x40207d3d},
    {"ff02::1", 4739, "3ffe:501:8::260:97ff:fe40:efab", 14230,
     0x0f0c461c, 0xdde51bbf},
    {"fe80::200:f8ff:fe21:67cf", 38024, "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
     44251, 0x4b61e985, 0x02d1feef},
};

static void test_ms_ipv6_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof V6 / sizeof V6[0]; i++) {
        uint8_t in[36];
        assert_int_equal(inet_pton(AF_INET6, V6[i].src, in), 1);
        assert_int_equal(inet_pton(AF_INET6, V6[i].dst, in + 16), 1);
        in[32] = (uint8_t)(V6[i].sport >> 8);
        in[33] = (uint8_t)V6[i].sport;
        in[34] = (uint8_t)(V6[i].dport >> 8);
        in[35] = (uint8_t)V6[i].dport;
        assert_int_equal(tern_toeplitz(MS_KEY, in, 32), V6[i].ip_only);
        assert_int_equal(tern_toeplitz(MS_KEY, in, 36), V6[i].with_tcp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ms_ipv6_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
