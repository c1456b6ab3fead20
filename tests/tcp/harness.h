/* harness.h - TCP test helpers on top of tests/common/th.h: build TCP
 * frames, parse what the stack sent, play a scripted peer, and drive two
 * stacks over the mem link with a simulated clock. */
#ifndef TERN_TCP_HARNESS_H
#define TERN_TCP_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "tern.h"
#include "th.h"

#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_PSH 0x08
#define F_ACK 0x10

typedef struct tpkt {
    uint32_t src, dst;
    uint16_t sport, dport;
    uint32_t seq, ack;
    uint8_t flags;
    uint16_t wnd;
    const uint8_t *data;
    uint32_t len;
    bool has_mss, has_ws, sack_ok, has_ts;
    uint16_t mss;
    uint8_t ws;
    uint32_t tsval, tsecr;
    uint32_t nsack;
    uint32_t sack[4][2];
    bool csum_ok;
} tpkt;

/* Parse a captured Ethernet frame; false if it is not IPv4/TCP. */
bool tp_parse(const uint8_t *frame, size_t len, tpkt *p);
/* Build Ethernet+IPv4+TCP with a correct checksum (peer -> us). */
size_t tp_frame(uint8_t *out, uint32_t src, uint32_t dst, uint16_t sport,
                uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
                uint16_t wnd, const uint8_t *opt, size_t optlen,
                const void *data, size_t len);
/* Let the stack learn the peer's MAC (an ARP request from the peer). */
void tp_arp(th *t);
/* Number of captured TCP frames, and the i-th one (negative: from end). */
unsigned tp_count(th *t);
bool tp_get(th *t, int i, tpkt *p);

/* A scripted peer at TH_PEER_IP:port talking to the stack's lport. */
typedef struct peer {
    th *t;
    uint16_t port, lport;
    uint32_t seq;        /* next seq we send */
    uint32_t ack;        /* next seq we expect from the stack */
    uint16_t wnd;
    bool ts;
    uint32_t tsval, tsecr;
} peer;

/* A fresh peer on t: seq 1000, timestamps on (TSval 500). */
void peer_init(peer *p, th *t);
/* Send a segment from the peer with its current seq/ack (+ TS option if
 * p->ts); seq advances by len (+1 for SYN/FIN). */
void peer_send(peer *p, uint8_t flags, const void *data, size_t len);
/* Same with explicit options (no TS added). */
void peer_send_opts(peer *p, uint8_t flags, const uint8_t *opt, size_t olen,
                    const void *data, size_t len);
/* Passive open on the stack: listen on lport, SYN (mss 1460, ws 7, sack,
 * ts), read SYN-ACK, ACK. Leaves captured frames cleared. */
void peer_connect(peer *p, uint16_t lport, uint16_t port);
/* A fresh th whose scripted peer (with timestamps or not) connected from
 * port 40000 to the stack's port 80: the stack's conn, never NULL. */
struct tern_conn *peer_connected(th **tp, peer *p, bool ts);

/* ---- two stacks over the mem link ---- */
typedef struct pair {
    tern_memlink *link;
    tern_stack *st[2];
    void *mem[2];
    uint64_t now;
} pair;

typedef void (*pair_tweak)(tern_config *cfg, int end);
pair *pair_new(const tern_memlink_faults *f, uint64_t seed, pair_tweak tw,
               const tern_callbacks *cb, void *user0, void *user1);
/* The same with per-end NIC caps (the mem link emulates them) and, with
 * no_poll, without the first tern_poll (the stacks have no clock yet). */
pair *pair_new_caps(const tern_memlink_faults *f, uint64_t seed,
                    const uint32_t caps[2], bool no_poll, pair_tweak tw,
                    const tern_callbacks *cb, void *user0, void *user1);
void pair_free(pair *p);
/* Bytes per link buffer (headroom included) of the pairs made next;
 * 0: the link's default. */
extern unsigned pair_buf_size;
/* Buffers per link pool of the pairs made next; 0: 8192 (512 with
 * pair_buf_size). */
extern unsigned pair_pool_size;
/* tern_memlink_config.by_ref of the pairs made next. */
extern bool pair_by_ref;
/* One round: rx+input on both ends, poll both; when nothing is due, jump
 * the clock to the next deadline. Returns false if nothing at all is
 * pending (no frames, no timers). */
bool pair_step(pair *p);
/* Step until done(arg) or the simulated clock passes limit_ns. */
bool pair_run(pair *p, bool (*done)(void *), void *arg, uint64_t limit_ns);

#define PAIR_IP0 TERN_IP4(198, 18, 0, 1)
#define PAIR_IP1 TERN_IP4(198, 18, 0, 2)

void tp_dump(const tern_stack *st);
/* Twin-stack tests: a and b sent the same frames byte for byte and hold
 * the same counters. */
bool th_same_output(const th *a, const th *b);
#endif
