/* mem_pair.c - two tern stacks talking over the in-memory link, with
 * libtern-linux's device calls and a loop of your own. No NIC, no root.
 *
 * The "mem" device has two queues that are the two ends of one Ethernet
 * wire. Queue 0 gets a server (198.18.0.1, echo on port 7), queue 1 a
 * client (198.18.0.2) that sends 1,000 requests of 64 bytes, one at a
 * time, and checks each answer. The same calls drive a real NIC: open
 * "afpacket" or "afxdp" with an interface name instead (see
 * echo_server.c for the runtime that also pins one thread per CPU).
 *
 *     cc -std=c11 mem_pair.c $(pkg-config --cflags --libs tern-linux) -o mem_pair
 *     ./mem_pair
 *
 * The link can also lose, delay, reorder or corrupt frames: open it with
 * args.extra = "loss=0.01,delay_ns=50000" (docs/mem-driver.md).
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <tern_linux.h>

#define BURST 32
#define REQUESTS 1000
#define SIZE 64

typedef struct client {
    tern_conn *conn;
    unsigned done;            /* answers received and checked */
    size_t got;               /* bytes of the current answer */
    unsigned bad;
} client;

/* Server: echo. Requests are small and one at a time, so a send never
 * comes up short here; core_echo.c shows the general case. */
static size_t server_recv(tern_stack *st, tern_conn *c, void *user,
                          tern_buf *buf, const uint8_t *data, size_t len)
{
    (void)user, (void)buf;
    long sent = tern_tcp_send(st, c, data, len);
    return sent > 0 ? (size_t)sent : 0;
}

static void server_peer_closed(tern_stack *st, tern_conn *c, void *user)
{
    (void)user;
    tern_tcp_close(st, c);
}

/* Client: send request k (bytes k, k+1, ...) in one call, so it leaves as
 * one segment. */
static void send_request(tern_stack *st, tern_conn *c, unsigned k)
{
    uint8_t req[SIZE];
    for (unsigned i = 0; i < SIZE; i++)
        req[i] = (uint8_t)(k + i);
    if (tern_tcp_send(st, c, req, SIZE) != SIZE)
        fprintf(stderr, "mem_pair: short send\n");   /* cannot happen here */
}

static void client_connected(tern_stack *st, tern_conn *c, void *user)
{
    client *k = user;
    printf("mem_pair: connected, MSS %u\n", (unsigned)tern_tcp_mss(c));
    send_request(st, c, k->done);   /* inside a callback: leaves with the ACK */
}

static size_t client_recv(tern_stack *st, tern_conn *c, void *user,
                          tern_buf *buf, const uint8_t *data, size_t len)
{
    client *k = user;
    (void)buf;
    for (size_t i = 0; i < len; i++, k->got++)
        k->bad += data[i] != (uint8_t)(k->done + k->got);
    if (k->got == SIZE) {           /* a whole answer: the next request */
        k->got = 0;
        if (++k->done < REQUESTS)
            send_request(st, c, k->done);
        else
            tern_tcp_close(st, c);
    }
    return len;
}

/* One stack on queue q of the device. */
static tern_stack *stack_on(tern_dev *dev, unsigned q, uint32_t ip,
                            const tern_callbacks *cb, void **mem)
{
    tern_config cfg;
    tern_config_defaults(&cfg);
    tern_dev_setup(dev, q, &cfg);   /* MAC, MTU, offloads, buffers, transmit */
    cfg.ip = ip;
    cfg.prefix_len = 24;
    cfg.rx_burst = BURST;           /* what we ask tern_dev_rx for */
    cfg.cb = *cb;
    if (getrandom(cfg.secret, sizeof cfg.secret, 0) != sizeof cfg.secret)
        return NULL;
    size_t size = tern_stack_size(&cfg);
    *mem = aligned_alloc(TERN_STACK_ALIGN, size);
    int err = 0;
    tern_stack *st = tern_stack_init(*mem, size, &cfg, &err);
    if (!st)
        fprintf(stderr, "mem_pair: tern_stack_init: %s\n", tern_strerror(err));
    return st;
}

int main(void)
{
    char err[256];
    tern_dev *dev = tern_dev_open("mem", NULL, err, sizeof err);
    if (!dev) {
        fprintf(stderr, "mem_pair: %s\n", err);
        return 1;
    }
    client k = {0};
    void *mem[2] = {NULL, NULL};
    tern_callbacks scb = {.recv = server_recv, .peer_closed = server_peer_closed};
    tern_callbacks ccb = {.connected = client_connected, .recv = client_recv};
    tern_stack *st[2];
    st[0] = stack_on(dev, 0, TERN_IP4(198, 18, 0, 1), &scb, &mem[0]);
    st[1] = stack_on(dev, 1, TERN_IP4(198, 18, 0, 2), &ccb, &mem[1]);
    if (!st[0] || !st[1])
        return 1;
    tern_addr server = tern_addr_v4(TERN_IP4(198, 18, 0, 1));
    int e = tern_tcp_listen(st[0], 7, NULL);
    if (!e && !(k.conn = tern_tcp_connect(st[1], &server, 7, 0, &k, &e)))
        e = e ? e : TERN_EINVAL;
    if (e) {
        fprintf(stderr, "mem_pair: %s\n", tern_strerror(e));
        return 1;
    }
    tern_flush(st[1]);   /* made outside a callback: send its ARP request now */

    /* The loop: each queue's burst into its stack, then the timers. Both
     * ends live in this one thread, so it never sleeps (a real NIC's
     * tern_dev_wait_fd could be polled until tern_poll's deadline).
     * It ends when every answer is back and the server's side of the
     * connection is gone (the client's waits in TIME_WAIT). Bounded by
     * rounds, not by time: the exchange needs a few thousand. */
    for (unsigned round = 0; round < 1000000 &&
                             (k.done < REQUESTS || tern_tcp_conn_count(st[0]));
         round++) {
        uint64_t now = tern_now_ns();
        for (unsigned q = 0; q < 2; q++) {
            tern_buf *frames[BURST];
            unsigned n = tern_dev_rx(dev, q, frames, BURST);
            tern_input(st[q], frames, n, now);
            tern_poll(st[q], now);
        }
    }
    tern_dev_stats ds;
    tern_dev_get_stats(dev, &ds);
    int closed = tern_tcp_conn_count(st[0]) == 0;
    printf("mem_pair: %u of %u answers, %u bytes wrong, %s; %llu frames "
           "sent\n", k.done, REQUESTS, k.bad, closed ? "closed" : "not closed",
           (unsigned long long)ds.tx_frames);
    int ok = k.done == REQUESTS && k.bad == 0 && closed;
    for (unsigned q = 0; q < 2; q++) {
        tern_stack_fini(st[q]);   /* buffers back to the device's pools */
        free(mem[q]);
    }
    tern_dev_close(dev);
    return ok ? 0 : 1;
}
