/* loss_sim.c - not a test: measures loss recovery on the simulated clock.
 * Two stacks over the mem link (loss each way, 100 us one-way delay) move
 * a byte stream from end 0 to end 1; prints the time, RTOs, recoveries,
 * retransmissions and, with -t, one line per recovery start/end and RTO
 * with the sender's cwnd, ssthresh, pipe and flight before and after.
 *   loss_sim [-t] [-v] [-r] [-l loss] [-s seed] [-m MiB] [-d delay_us]
 *            [-b Mbit/s] [-S snd_buf] [-w prefix]
 * -v: also the last steps before each RTO; -r: NewReno instead of CUBIC,
 * -B: BBR (with BBR_TRACE=1 in the environment, its model every 500
 * steps);
 * -w: capture what each end's frames delivered (prefix.0.pcap: the
 * sender's, prefix.1.pcap: the receiver's), stamped on the simulated clock;
 * -S: the sender's send queue in bytes (cfg.snd_buf; default the stack's);
 * -b: a link rate (default none: a whole flight arrives at one instant
 * and the receiver answers it with one ACK). The time includes the
 * handshake (a lost SYN costs a second). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tcp/cc.h"
#include "xfer.h"

static uint8_t cc_choice;
static uint32_t snd_buf;
static void tw(tern_config *c, int end)
{
    c->time_wait_ms = 100;
    c->cc = cc_choice;
    if (end == 0 && snd_buf)
        c->snd_buf = snd_buf;
}

typedef struct snap {
    uint32_t cwnd, ssthresh, pipe, flight, flags;
    uint64_t rto, rtx;
} snap;

static snap take(tern_stack *st, tern_conn *k)
{
    struct tern_conn *c = (struct tern_conn *)k;
    snap s = {0};
    if (!c)
        return s;
    uint32_t m = c->mss;
    s.cwnd = c->cwnd / m;
    s.ssthresh = c->ssthresh >= 0x7fffffffu ? 9999 : c->ssthresh / m;
    s.pipe = sb_pipe(c, m) / m;
    s.flight = (c->snd_max - c->snd_una) / m;
    s.flags = c->flags;
    s.rto = tern_get_counters(st)->tcp_rto_expiries;
    s.rtx = tern_get_counters(st)->tcp_retransmits;
    return s;
}

/* -v: the state after each of the last RING steps before an RTO (time of
 * the step's input and poll): the sender's window in segments from snd_una,
 * the receiver's rcv_nxt, and what the link carried and dropped each way. */
#define RING 40
static char ring[RING][320];
static unsigned ring_n;
static bool verbose;

static void ring_add(pair *p, tern_conn *k, tern_conn *rk, uint64_t at,
                     uint64_t t0)
{
    struct tern_conn *c = (struct tern_conn *)k;
    struct tern_conn *r = (struct tern_conn *)rk;
    const tern_memlink_stats *d = tern_memlink_get_stats(p->link, 0);
    const tern_memlink_stats *a = tern_memlink_get_stats(p->link, 1);
    const tern_counters *n = tern_get_counters(p->st[0]);
    uint32_t m = c->mss, u = c->snd_una;
    double t_rtx = c->t_rtx == TERN_NEVER ? -1.0
                                          : (double)(c->t_rtx - t0) / 1e9;
    snprintf(ring[ring_n++ % RING], sizeof ring[0],
             "%10.6f una %u max +%u nxt +%u cwnd %u pipe %u sacked %u "
             "rec %d recover +%u rtx %llu tlp %llu srtt %u us t_rtx %.6f | "
             "rcv_nxt +%d | data sent %llu lost %llu | acks sent %llu "
             "lost %llu",
             (double)(at - t0) / 1e9, u / m, (c->snd_max - u) / m,
             (c->snd_nxt - u) / m, c->cwnd / m, sb_pipe(c, m) / m,
             c->sacked / m, !!(c->flags & TF_RECOVERY),
             (c->recover - u) / m,
             (unsigned long long)n->tcp_retransmits,
             (unsigned long long)n->tcp_tail_loss_probes, c->srtt_us, t_rtx,
             r ? (int32_t)(r->rcv_nxt - u) / (int32_t)m : 0,
             (unsigned long long)d->wire, (unsigned long long)d->lost,
             (unsigned long long)a->wire, (unsigned long long)a->lost);
}

static void ring_dump(void)
{
    for (unsigned i = 0; i < RING; i++)
        if (ring[(ring_n + i) % RING][0])
            printf("   %s\n", ring[(ring_n + i) % RING]);
}

int main(int argc, char **argv)
{
    double loss = 0.02;
    uint64_t seed = 1, mb = 64, delay_us = 100, mbps = 0;
    bool trace = false;
    const char *pcap = NULL;
    int o;
    while ((o = getopt(argc, argv, "tvrBl:s:m:d:b:S:w:")) != -1) {
        switch (o) {
        case 't': trace = true; break;
        case 'v': trace = verbose = true; break;
        case 'r': cc_choice = TERN_CC_NEWRENO; break;
        case 'B': cc_choice = TERN_CC_BBR; break;
        case 'l': loss = atof(optarg); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'm': mb = strtoull(optarg, NULL, 10); break;
        case 'd': delay_us = strtoull(optarg, NULL, 10); break;
        case 'b': mbps = strtoull(optarg, NULL, 10); break;
        case 'S': snd_buf = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'w': pcap = optarg; break;
        default: return 2;
        }
    }
    tern_memlink_faults f = {0};
    f.loss = loss;
    f.delay_ns = delay_us * 1000;
    f.rate_bps = mbps * 1000000;
    xfer x = {.total = mb << 20, .close_at_end = true};
    pair *p = pair_new(&f, seed, tw, &XFER_CB, &x, &x);
    for (int e = 0; pcap && e < 2; e++) {
        char path[512], err[128];
        snprintf(path, sizeof path, "%s.%d.pcap", pcap, e);
        if (tern_memlink_set_pcap(p->link, e, path, err, sizeof err)) {
            fprintf(stderr, "loss_sim: %s\n", err);
            return 2;
        }
    }
    xfer_start(p, &x);
    uint64_t t0 = p->now, limit = p->now + 100000 * TERN_NS_PER_SEC;
    unsigned entries = 0, sum_ss = 0, entries_dbg = 0;
    snap prev = take(p->st[0], x.cli);
    while (x.closed < 2 && p->now < limit) {
        uint64_t at = p->now;
        if (!pair_step(p))
            break;
        if (!x.cli)
            continue;
        snap cur = take(p->st[0], x.cli);
        if (getenv("BBR_TRACE") && cc_choice == TERN_CC_BBR &&
            !(++entries_dbg % 500)) {
            tcp_bbr *b = bbr_of(p->st[0], (struct tern_conn *)x.cli);
            printf("%10.6f mode %u cwnd %u bw %llu Mbit/s min_rtt %u us "
                   "round %u flight %u\n", (double)(at - t0) / 1e9, b->mode,
                   cur.cwnd, (unsigned long long)(b->max_bw * 8 / 1000000),
                   b->min_rtt_us, b->round, cur.flight);
        }
        if (verbose)
            ring_add(p, x.cli, x.srv, at, t0);
        if (verbose && cur.rto != prev.rto)
            ring_dump();
        bool rec0 = prev.flags & TF_RECOVERY, rec1 = cur.flags & TF_RECOVERY;
        if (rec1 && !rec0) {
            entries++;
            sum_ss += cur.ssthresh;
        }
        if (trace && (rec0 != rec1 || cur.rto != prev.rto))
            printf("%10.6f %-5s cwnd %u->%u ssthresh %u->%u pipe %u->%u "
                   "flight %u->%u rtx +%llu\n",
                   (double)(at - t0) / 1e9,
                   cur.rto != prev.rto ? (rec0 ? "RTO/R" : "RTO")
                                       : rec1 ? "ENTER" : "EXIT",
                   prev.cwnd, cur.cwnd, prev.ssthresh, cur.ssthresh,
                   prev.pipe, cur.pipe, prev.flight, cur.flight,
                   (unsigned long long)(cur.rtx - prev.rtx));
        prev = cur;
    }
    const tern_counters *c0 = tern_get_counters(p->st[0]);
    double secs = (double)(p->now - t0) / 1e9;
    printf("loss %.3f seed %llu %s: %.2f s, %.0f Mbit/s, rto %llu, "
           "recoveries %u (mean ssthresh at entry %.1f seg), rtx %llu, "
           "tlp %llu, rack_lost %llu, dup segs at receiver %llu%s\n",
           loss, (unsigned long long)seed,
           cc_choice == TERN_CC_BBR ? "bbr"
           : cc_choice == TERN_CC_NEWRENO ? "newreno" : "cubic",
           secs, (double)x.rcvd * 8 / secs / 1e6,
           (unsigned long long)c0->tcp_rto_expiries, entries,
           entries ? (double)sum_ss / entries : 0.0,
           (unsigned long long)c0->tcp_retransmits,
           (unsigned long long)c0->tcp_tail_loss_probes,
           (unsigned long long)c0->tcp_rack_lost,
           (unsigned long long)tern_get_counters(p->st[1])->tcp_dup_data_in,
           x.rcvd == x.total ? "" : " INCOMPLETE");
    pair_free(p);
    return x.rcvd == x.total ? 0 : 1;
}
