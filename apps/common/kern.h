/* kern.h - kernel-socket plumbing for the kern-* twins: pinned threads,
 * SO_REUSEPORT listeners, non-blocking connects, the epoll wait that
 * honours --poll busy|block / --epoll-timeout, and stopping on SIGINT or
 * SIGTERM through an eventfd every thread's epoll also watches. */
#ifndef APPS_KERN_H
#define APPS_KERN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "endpoint.h"
#include "opts.h"

/* Install SIGINT/SIGTERM handlers and create the stop eventfd. */
void kern_stop_setup(void);
void kern_stop(void);
bool kern_stopping(void);
/* Add the stop eventfd to an epoll set with data.ptr = tag. */
int kern_stop_watch(int epfd, void *tag);

int kern_pin(unsigned cpu);

/* Listening socket on port (0 = ephemeral) with SO_REUSEPORT,
 * non-blocking. addr NULL = every address of both families: one IPv6
 * socket with IPV6_V6ONLY off (IPv4 clients arrive as ::ffff:A.B.C.D), or
 * an IPv4 socket when the host has IPv6 off. A given addr binds that
 * address, in its family only. -1 with err. */
int kern_listen(const ep_addr *addr, uint16_t port, char *err, size_t errlen);
uint16_t kern_local_port(int fd);
/* Non-blocking connect to an IPv4 or IPv6 endpoint; -1 with err on
 * immediate failure. */
int kern_connect(const endpoint *dst, char *err, size_t errlen);
/* TCP_NODELAY and, if us > 0, SO_BUSY_POLL on a connection. */
void kern_tune(int fd, uint64_t busy_poll_us);

/* epoll_wait with the timeout the flags ask for: busy -> 0, block with
 * --epoll-timeout MS -> MS, block otherwise -> -1 (the stop fd wakes it). */
int kern_wait(int epfd, struct epoll_event *ev, int max,
              const common_opts *co);

/* Start one pinned thread per CPU of co->cores running fn(arg_i), where
 * arg_i = (char *)args + i * argsize; join them all. */
int kern_run_threads(const common_opts *co, void *(*fn)(void *), void *args,
                     size_t argsize);

/* TCP retransmitted segments of this network namespace (/proc/net/snmp),
 * for a before/after difference. */
uint64_t kern_retrans_segs(void);

/* Write all of len bytes or stash what the socket did not take. Returns
 * false on a fatal error (peer gone). */
#include "bytebuf.h"
bool kern_send(int fd, const void *data, size_t len, bytebuf *pending);
/* Flush pending; true when it is empty afterwards. *err on a fatal error. */
bool kern_flush(int fd, bytebuf *pending, bool *err);

#endif
