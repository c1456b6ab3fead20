/* kern.c - kernel-socket helpers for the kern-* programs (see kern.h). */
#include "kern.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;
static int g_stop_fd = -1;

void kern_stop(void)
{
    g_stop = 1;
    if (g_stop_fd >= 0) {
        uint64_t one = 1;
        ssize_t rc = write(g_stop_fd, &one, sizeof one);
        (void)rc;
    }
}

bool kern_stopping(void) { return g_stop != 0; }

static void on_signal(int sig)
{
    signal(sig, SIG_DFL);   /* a second signal kills a wedged program */
    kern_stop();
}

void kern_stop_setup(void)
{
    g_stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int kern_stop_watch(int epfd, void *tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, g_stop_fd, &ev);
}

int kern_pin(unsigned cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The socket address of addr:port; its length. */
static socklen_t fill_sa(struct sockaddr_storage *ss, const ep_addr *addr,
                         uint16_t port)
{
    memset(ss, 0, sizeof *ss);
    if (addr->family == EP_AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        memcpy(&s6->sin6_addr, addr->v6, 16);
        return sizeof *s6;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    s4->sin_addr.s_addr = htonl(addr->v4);
    return sizeof *s4;
}

/* socket + bind + listen for one family; -1 with errno kept. */
static int listen_on(const ep_addr *addr, uint16_t port, bool dual)
{
    int af = addr->family == EP_AF_INET6 ? AF_INET6 : AF_INET;
    int fd = socket(af, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (dual)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_storage ss;
    socklen_t len = fill_sa(&ss, addr, port);
    if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 4096)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int kern_listen(const ep_addr *addr, uint16_t port, char *err, size_t errlen)
{
    int fd;
    if (addr) {
        fd = listen_on(addr, port, false);
    } else {
        /* Both families on one socket; IPv4 alone where IPv6 is off
         * (ipv6.disable=1: no AF_INET6 sockets; disable_ipv6: no ::). */
        ep_addr any6 = {.family = EP_AF_INET6};
        fd = listen_on(&any6, port, true);
        if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
            ep_addr any4 = ep_addr_v4(0);
            fd = listen_on(&any4, port, false);
        }
    }
    if (fd < 0)
        snprintf(err, errlen, "listen on port %u: %s", port, strerror(errno));
    return fd;
}

uint16_t kern_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len))
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int kern_connect(const endpoint *dst, char *err, size_t errlen)
{
    int af = dst->addr.family == EP_AF_INET6 ? AF_INET6 : AF_INET;
    int fd = socket(af, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t len = fill_sa(&ss, &dst->addr, dst->port);
    if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
        char at[EP_STRLEN];
        snprintf(err, errlen, "connect to %s: %s", ep_format(dst, at),
                 strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

void kern_tune(int fd, uint64_t busy_poll_us)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (busy_poll_us) {
        int us = (int)busy_poll_us;
        setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof us);
    }
}

int kern_wait(int epfd, struct epoll_event *ev, int max,
              const common_opts *co)
{
    int timeout = co->poll == POLL_BUSY ? 0 : (int)co->poll_timeout_ms;
    int n = epoll_wait(epfd, ev, max, timeout);
    return n < 0 ? 0 : n;
}

typedef struct thr_arg {
    void *(*fn)(void *);
    void *arg;
    unsigned cpu;
} thr_arg;

static void *thr_main(void *p)
{
    thr_arg *a = p;
    if (kern_pin(a->cpu))
        fprintf(stderr, "note: cannot pin a thread to CPU %u\n", a->cpu);
    return a->fn(a->arg);
}

int kern_run_threads(const common_opts *co, void *(*fn)(void *), void *args,
                     size_t argsize)
{
    pthread_t *t = calloc(co->ncores, sizeof *t);
    thr_arg *a = calloc(co->ncores, sizeof *a);
    unsigned started = 0;
    if (!t || !a)
        goto out;
    for (; started < co->ncores; started++) {
        a[started] = (thr_arg){fn, (char *)args + started * argsize,
                               co->cores[started]};
        if (pthread_create(&t[started], NULL, thr_main, &a[started])) {
            kern_stop();
            break;
        }
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(t[i], NULL);
out:
    free(t);
    free(a);
    return started == co->ncores ? 0 : -1;
}

uint64_t kern_retrans_segs(void)
{
    FILE *f = fopen("/proc/net/snmp", "r");
    if (!f)
        return 0;
    char names[1024], vals[1024];
    uint64_t r = 0;
    while (fgets(names, sizeof names, f) && fgets(vals, sizeof vals, f)) {
        if (strncmp(names, "Tcp:", 4) != 0)
            continue;
        /* Find the column named RetransSegs. */
        char *sn, *sv, *n = strtok_r(names, " \n", &sn);
        char *v = strtok_r(vals, " \n", &sv);
        while (n && v) {
            if (strcmp(n, "RetransSegs") == 0) {
                r = strtoull(v, NULL, 10);
                break;
            }
            n = strtok_r(NULL, " \n", &sn);
            v = strtok_r(NULL, " \n", &sv);
        }
        break;
    }
    fclose(f);
    return r;
}

bool kern_send(int fd, const void *data, size_t len, bytebuf *pending)
{
    if (pending->len)
        return bb_append(pending, data, len, SIZE_MAX);
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n > 0) {
            data = (const char *)data + n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return bb_append(pending, data, len, SIZE_MAX);
        return false;
    }
    return true;
}

bool kern_flush(int fd, bytebuf *pending, bool *err)
{
    *err = false;
    while (pending->len) {
        ssize_t n = send(fd, bb_data(pending), pending->len, MSG_NOSIGNAL);
        if (n > 0) {
            bb_consume(pending, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return false;
        *err = true;
        return false;
    }
    return true;
}
