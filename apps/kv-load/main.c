/* kv-load - a lean Redis-protocol load client for the kv benchmark: N
 * kernel TCP connections on one epoll thread, each keeping D requests in
 * flight (one write per connection per round of D replies, read with large
 * buffers, no allocation per request), GET or SET of one key with a small
 * value. It costs less CPU per request than redis-benchmark, so one client
 * core can outrun one server core. Prints one JSON line (stdout) and one
 * line in words (stderr): requests/s, errors, and its own CPU time. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "endpoint.h"
#include "kern.h"
#include "reply_count.h"

#define READ_BUF (64u << 10)
#define MAX_CONNS 10000
#define MAX_DEPTH 1024
#define MAX_VALUE 4096

typedef struct lconn {
    int fd;
    unsigned inflight;      /* requests sent, replies not yet counted */
    size_t sent;            /* bytes of the current batch written */
    size_t batch;           /* bytes of the current batch */
    size_t have;            /* bytes in in[] not yet counted */
    bool out_wait;          /* EPOLLOUT asked for (a batch half written) */
    char *in;
} lconn;

static const char usage[] =
"usage: kv-load [options] HOST:PORT\n"
"\n"
"Load a Redis-protocol server: --conns connections, each keeping --depth\n"
"requests in flight (a new batch of --depth is written once the previous\n"
"batch's replies are all in, as redis-benchmark -P does), GET or SET of one\n"
"key with a --value-size byte value, for --requests requests or --duration\n"
"seconds. HOST:PORT is 198.18.0.2:6379, [2001:db8::2]:6379 or\n"
"localhost:6379.\n"
"\n"
"  -c, --conns N        connections (default 50)\n"
"  -P, --depth D        requests in flight per connection (default 1)\n"
"  -t, --test get|set   request (default get)\n"
"  -n, --requests N     stop after N replies\n"
"  -d, --duration S     stop after S seconds (default 5 when no --requests)\n"
"  -k, --key K          key (default key:__rand_int__, redis-benchmark's)\n"
"  -s, --value-size B   SET value bytes, 'x' each (default 3)\n"
"  -h, --help           this text\n"
"\n"
"Output: one JSON line on stdout {requests, errors, seconds, rps,\n"
"cpu_user_s, cpu_sys_s, cpu_us_per_request, ...} and the same in words on\n"
"stderr. A -ERR reply, a reply this client does not expect, or a closed\n"
"connection fails the run: exit 1 with the reason. Bad flags exit 2.\n";

static void bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "kv-load: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (kv-load --help)\n");
    exit(2);
}

static unsigned long num(const char *s, const char *flag, unsigned long lo,
                         unsigned long hi)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || *s == '-' || v < lo || v > hi) {
        char m[96];
        snprintf(m, sizeof m, "%s takes a number %lu..%lu, not '%%s'", flag,
                 lo, hi);
        bad(m, s);
    }
    return v;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void cpu_s(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int fail(const char *what, const char *detail)
{
    fprintf(stderr, "kv-load: %s%s%s\n", what, detail ? ": " : "",
            detail ? detail : "");
    return 1;
}

/* The request for one test in RESP, repeated depth times into out. */
static size_t build_batch(char *out, size_t cap, bool set, const char *key,
                          size_t vlen, unsigned depth)
{
    char one[MAX_VALUE + 512];
    size_t klen = strlen(key);
    int n = set ? snprintf(one, sizeof one, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n",
                           klen, key, vlen)
                : snprintf(one, sizeof one, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n",
                           klen, key);
    size_t len = (size_t)n;
    if (set) {
        memset(one + len, 'x', vlen);
        len += vlen;
        memcpy(one + len, "\r\n", 2);
        len += 2;
    }
    if (len * depth > cap)
        return 0;
    for (unsigned i = 0; i < depth; i++)
        memcpy(out + i * len, one, len);
    return len;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"conns", 1, 0, 'c'}, {"depth", 1, 0, 'P'}, {"test", 1, 0, 't'},
        {"requests", 1, 0, 'n'}, {"duration", 1, 0, 'd'}, {"key", 1, 0, 'k'},
        {"value-size", 1, 0, 's'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    unsigned conns = 50, depth = 1;
    unsigned long requests = 0;
    double duration = 0;
    bool set = false;
    const char *key = "key:__rand_int__";
    size_t vlen = 3;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "c:P:t:n:d:k:s:h", lo, NULL)) != -1) {
        switch (c) {
        case 'c': conns = (unsigned)num(optarg, "--conns", 1, MAX_CONNS); break;
        case 'P': depth = (unsigned)num(optarg, "--depth", 1, MAX_DEPTH); break;
        case 't':
            if (strcmp(optarg, "get") && strcmp(optarg, "set"))
                bad("--test takes get or set, not '%s'", optarg);
            set = !strcmp(optarg, "set");
            break;
        case 'n': requests = num(optarg, "--requests", 1, 1ul << 40); break;
        case 'd': duration = (double)num(optarg, "--duration", 1, 86400); break;
        case 'k':
            if (!*optarg || strlen(optarg) > 256 || strpbrk(optarg, "\r\n"))
                bad("--key takes 1..256 bytes without CR/LF, not '%s'", optarg);
            key = optarg;
            break;
        case 's': vlen = num(optarg, "--value-size", 0, MAX_VALUE); break;
        case 'h': fputs(usage, stdout); return 0;
        default:
            bad("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        bad("takes one HOST:PORT%s", optind < argc - 1 ? ", not several" : "");
    if (requests && duration)
        bad("%s", "--requests and --duration exclude each other");
    if (!requests && !duration)
        duration = 5;
    endpoint dst;
    char err[160];
    if (!ep_parse(argv[optind], &dst, err, sizeof err))
        bad("%s", err);

    size_t batch_cap = (size_t)depth * (MAX_VALUE + 512 + 300);
    char *batch = malloc(batch_cap);
    lconn *cs = calloc(conns, sizeof *cs);
    char *inbufs = malloc((size_t)conns * READ_BUF);
    struct epoll_event *evs = calloc(conns, sizeof *evs);
    if (!batch || !cs || !inbufs || !evs)
        return fail("out of memory", NULL);
    size_t req_len = build_batch(batch, batch_cap, set, key, vlen, depth);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return fail("epoll_create1", strerror(errno));

    /* Connect every connection before the clock starts. */
    for (unsigned i = 0; i < conns; i++) {
        cs[i].in = inbufs + (size_t)i * READ_BUF;
        cs[i].fd = kern_connect(&dst, err, sizeof err);
        if (cs[i].fd < 0)
            return fail(err, NULL);
        kern_tune(cs[i].fd, 0);
        struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = i};
        epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
    }
    char at[EP_STRLEN];
    ep_format(&dst, at);
    for (unsigned up = 0; up < conns;) {
        int n = epoll_wait(ep, evs, (int)conns, 10000);
        if (n <= 0)
            return fail("connect: no answer within 10 s from", at);
        for (int k = 0; k < n; k++) {
            lconn *l = &cs[evs[k].data.u32];
            int e = 0;
            socklen_t el = sizeof e;
            getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &e, &el);
            if (e) {
                snprintf(err, sizeof err, "connect to %s: %s", at, strerror(e));
                return fail(err, NULL);
            }
            struct epoll_event ev = {.events = EPOLLIN, .data.u32 = evs[k].data.u32};
            epoll_ctl(ep, EPOLL_CTL_MOD, l->fd, &ev);
            up++;
        }
    }

    reply_tally t = {0};
    unsigned long issued = 0;
    bool stopping = false;
    const char *why = NULL;
    double u0, s0, u1, s1;
    cpu_s(&u0, &s0);
    double t0 = now_s(), end = t0 + duration, t1;
    unsigned long inflight = 0;

    /* Start (or continue) a connection's batch; false when it cannot. */
#define SEND_BATCH(l) do {                                                   \
        if (!(l)->batch) {                                                   \
            unsigned long want = depth;                                      \
            if (requests && requests - issued < want)                        \
                want = requests - issued;                                    \
            if (stopping || !want)                                           \
                break;                                                       \
            (l)->batch = want * req_len;                                     \
            (l)->sent = 0;                                                   \
            (l)->inflight = (unsigned)want;                                  \
            issued += want;                                                  \
            inflight += want;                                                \
        }                                                                    \
        ssize_t w = write((l)->fd, batch + (l)->sent, (l)->batch - (l)->sent); \
        if (w < 0 && errno != EAGAIN) {                                      \
            why = strerror(errno);                                           \
            stopping = true;                                                 \
            break;                                                           \
        }                                                                    \
        (l)->sent += w > 0 ? (size_t)w : 0;                                  \
        bool ow = (l)->sent < (l)->batch;                                    \
        if (ow != (l)->out_wait) {      /* a syscall only on a change */     \
            struct epoll_event ev = {.events = EPOLLIN | (ow ? EPOLLOUT : 0), \
                                     .data.u32 = (unsigned)((l) - cs)};      \
            epoll_ctl(ep, EPOLL_CTL_MOD, (l)->fd, &ev);                      \
            (l)->out_wait = ow;                                              \
        }                                                                    \
    } while (0)

    for (unsigned i = 0; i < conns; i++)
        SEND_BATCH(&cs[i]);
    double drain_end = 0;
    while (inflight) {
        int n = epoll_wait(ep, evs, (int)conns, 100);
        if (n < 0 && errno != EINTR)
            return fail("epoll_wait", strerror(errno));
        double now = now_s();
        if (!requests && !stopping && now >= end)
            stopping = true;
        if (stopping && !drain_end)
            drain_end = now + 10;
        if (drain_end && now > drain_end) {
            why = why ? why : "replies still missing 10 s after the end";
            break;
        }
        for (int k = 0; k < n; k++) {
            lconn *l = &cs[evs[k].data.u32];
            if ((evs[k].events & EPOLLOUT) && l->sent < l->batch)
                SEND_BATCH(l);
            if (!(evs[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                continue;
            ssize_t r = read(l->fd, l->in + l->have, READ_BUF - l->have);
            if (r <= 0) {
                if (r < 0 && errno == EAGAIN)
                    continue;
                why = r ? strerror(errno) : "the server closed a connection";
                inflight = 0;
                break;
            }
            l->have += (size_t)r;
            unsigned long before = t.ok + t.errors;
            long used = reply_count(l->in, l->have, &t);
            unsigned long got = t.ok + t.errors - before;
            if (used < 0 || got > l->inflight ||
                (used == 0 && l->have == READ_BUF)) {
                why = "a reply this client does not expect (not +, :, $ or -)";
                if (got > l->inflight)
                    why = "more replies than requests";
                inflight = 0;
                break;
            }
            memmove(l->in, l->in + used, l->have - (size_t)used);
            l->have -= (size_t)used;
            l->inflight -= (unsigned)got;
            inflight -= got;
            if (t.errors && !stopping)
                stopping = true;
            if (!l->inflight && l->sent == l->batch) {
                l->batch = 0;
                SEND_BATCH(l);
            }
        }
    }
    t1 = now_s();
    cpu_s(&u1, &s1);
    unsigned long done = t.ok + t.errors;
    double secs = t1 - t0, cpu = (u1 - u0) + (s1 - s0);
    printf("{\"server\":\"%s\",\"test\":\"%s\",\"conns\":%u,\"depth\":%u,"
           "\"requests\":%lu,\"errors\":%lu,\"seconds\":%.6f,\"rps\":%.1f,"
           "\"cpu_user_s\":%.6f,\"cpu_sys_s\":%.6f,\"cpu_us_per_request\":%.3f}\n",
           at, set ? "set" : "get", conns, depth, done, t.errors, secs,
           secs > 0 ? done / secs : 0.0, u1 - u0, s1 - s0,
           done ? cpu * 1e6 / done : 0.0);
    fflush(stdout);
    fprintf(stderr, "kv-load %s %s: %lu requests (%lu errors) over %u conns at "
            "depth %u in %.2f s: %.0f requests/s; client CPU %.2f s user + %.2f s "
            "system = %.2f us per request\n", at, set ? "SET" : "GET", done, t.errors,
            conns, depth, secs, secs > 0 ? done / secs : 0.0, u1 - u0, s1 - s0,
            done ? cpu * 1e6 / done : 0.0);
    if (t.errors)
        return fail("the server replied with an error", t.first_error);
    if (why)
        return fail(why, NULL);
    return 0;
}
