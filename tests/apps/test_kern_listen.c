/* test_kern_listen.c - the kern twins' listener (apps/common kern.c) on
 * loopback: one socket takes IPv4 and IPv6 clients; on a host without
 * IPv6 sockets (socket(AF_INET6) fails with EAFNOSUPPORT, as with
 * ipv6.disable=1; simulated by wrapping socket()) it falls back to IPv4;
 * kern_connect reaches it over either family. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kern.h"

static bool no_ipv6;

int __real_socket(int domain, int type, int protocol);
int __wrap_socket(int domain, int type, int protocol)
{
    if (no_ipv6 && domain == AF_INET6) {
        errno = EAFNOSUPPORT;
        return -1;
    }
    return __real_socket(domain, type, protocol);
}

static int family_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
    return ss.ss_family;
}

/* A client of `addr` connects and the listener accepts it. */
static void reaches(int lfd, ep_addr addr)
{
    char err[160];
    endpoint dst = {addr, kern_local_port(lfd)};
    int c = kern_connect(&dst, err, sizeof err);
    assert_true(c >= 0);
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    int a = accept(lfd, NULL, NULL);
    assert_true(a >= 0);
    close(a);
    close(c);
}

/* This host has IPv6 on loopback (::1 can be bound). */
static bool host_has_ipv6(void)
{
    int fd = __real_socket(AF_INET6, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in6 a = {.sin6_family = AF_INET6,
                             .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static void dual_stack(void **state)
{
    (void)state;
    char err[160];
    no_ipv6 = false;
    if (!host_has_ipv6())
        skip();
    int fd = kern_listen(NULL, 0, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(family_of(fd), AF_INET6);
    assert_int_not_equal(kern_local_port(fd), 0);
    reaches(fd, ep_addr_v4(0x7f000001u));
    ep_addr lo6 = {.family = EP_AF_INET6};
    lo6.v6[15] = 1;                  /* ::1 */
    reaches(fd, lo6);
    close(fd);
}

static void ipv4_fallback(void **state)
{
    (void)state;
    char err[160];
    no_ipv6 = true;
    int fd = kern_listen(NULL, 0, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(family_of(fd), AF_INET);
    reaches(fd, ep_addr_v4(0x7f000001u));
    /* An IPv6 client fails in words. */
    ep_addr lo6 = {.family = EP_AF_INET6};
    lo6.v6[15] = 1;
    endpoint dst = {lo6, kern_local_port(fd)};
    assert_int_equal(kern_connect(&dst, err, sizeof err), -1);
    assert_non_null(strstr(err, "socket:"));
    close(fd);
    no_ipv6 = false;
}

static void bound_address(void **state)
{
    (void)state;
    char err[160];
    ep_addr lo = ep_addr_v4(0x7f000001u);
    int fd = kern_listen(&lo, 0, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(family_of(fd), AF_INET);
    reaches(fd, lo);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dual_stack),
        cmocka_unit_test(ipv4_fallback),
        cmocka_unit_test(bound_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
