/* rt_signal.c - stopping the runtime: a global flag plus an eventfd that
 * every sleeping core also waits on, set from SIGINT/SIGTERM handlers or
 * from any thread (rt_stop). A second signal gets the default action, so a
 * wedged program still dies on the second Ctrl-C. A crash prints the stack
 * first. */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "rt_int.h"

static volatile sig_atomic_t g_stop;
static int g_stop_fd = -1;
/* the signal that stopped the run and who sent it (rt_stop_signal) */
static volatile sig_atomic_t g_stop_sig, g_stop_pid;

void rt_stop(void)
{
    g_stop = 1;
    if (g_stop_fd >= 0) {
        uint64_t one = 1;
        ssize_t rc = write(g_stop_fd, &one, sizeof one);
        (void)rc;
    }
}

bool rt_stopping(void) { return g_stop != 0; }

int rt_stop_fd(void) { return g_stop_fd; }

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    if (!g_stop_sig) {
        g_stop_pid = si ? (sig_atomic_t)si->si_pid : 0;
        g_stop_sig = sig;
    }
    rt_stop();
}

int rt_stop_signal(int *pid)
{
    if (pid)
        *pid = (int)g_stop_pid;
    return (int)g_stop_sig;
}

/* A crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE) writes the stack to stderr
 * before the default action runs, so a failure seen once in a test log
 * can be traced (addresses resolve with addr2line -e the binary). */
static void on_crash(int sig)
{
    static const char head[] = "tern: fatal signal, stack:\n";
    void *frames[48];
    ssize_t rc = write(STDERR_FILENO, head, sizeof head - 1);
    (void)rc;
    backtrace_symbols_fd(frames, backtrace(frames, 48), STDERR_FILENO);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void crash_report_setup(void)
{
    void *warm[1];
    backtrace(warm, 1);   /* loads the unwinder now, not inside a crash */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
}

int rt_signal_setup(char *err, size_t errlen)
{
    crash_report_setup();
    if (g_stop_fd < 0) {
        g_stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (g_stop_fd < 0) {
            snprintf(err, errlen, "eventfd: %s", strerror(errno));
            return -1;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

uint64_t rt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
