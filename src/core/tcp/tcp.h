/* tcp.h - internal types of the TCP layer: the connection (hot fields
 * first), the layer state, the timer wheel and the helpers the files of
 * src/core/tcp share. Not part of the public API. */
#ifndef TERN_TCP_H
#define TERN_TCP_H

#include "ip6.h"

/* Always inlined: a hot body shared by two entries (or used once per
 * segment by several callers), so neither pays a call for it. */
#if defined(__GNUC__)
#define HOT_INLINE inline __attribute__((always_inline))
#else
#define HOT_INLINE inline
#endif

/* ---- wire ---- */
#define TCP_HDR_LEN 20
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_URG 0x20

#define TCPOPT_EOL 0
#define TCPOPT_NOP 1
#define TCPOPT_MSS 2
#define TCPOPT_WS 3
#define TCPOPT_SACK_PERM 4
#define TCPOPT_SACK 5
#define TCPOPT_TS 8
#define TCPOPT_TFO 34         /* TCP Fast Open cookie (RFC 7413) */
#define TCPOPT_EXP 254        /* experimental (RFC 6994), TFO's before 34 */
#define TFO_EXP_MAGIC 0xF989u /* the ExID of TFO in an experimental option */
#define TFO_COOKIE_LEN 8      /* the cookies we make */
#define TFO_COOKIE_MAX 16     /* the longest a peer may give (RFC 7413 4.1.1) */

#define TCP_MAX_WS 14
#define TCP_MSS_FLOOR 64      /* smallest peer MSS we accept (see docs) */
#define TCP_ACK_STRETCH_MAX 65536u  /* most bytes one in-burst ACK covers */
#define TCP_ACK_STRETCH_SEGS 4u /* in-burst ACK distance, in full segments */
#define TCP_MSS_DEFAULT 536   /* RFC 9293: when the peer sends none */
#define TCP_TS_LEN 12         /* NOP NOP TS(10) */
/* Headroom a buffer needs for the largest headers (Ethernet, IPv6 without
 * extension headers, TCP with 40 option bytes) to be sent in place. */
#define TCP_MAX_HDRS (ETH_HDR_LEN + IP6_HDR_LEN + 60)
#define TCP_DUPTHRESH 3
#define TCP_SB_MAX 8          /* SACK scoreboard ranges kept */
#define TCP_RSACK_MRU 4       /* received blocks remembered for SACK order */
#define TCP_NIL 0xffffffffu
#define TCP_TMPL_LEN (ETH_HDR_LEN + IP4_HDR_LEN + 4)
#define TCP_TMPL6_LEN (ETH_HDR_LEN + IP6_HDR_LEN + 4)
/* MSS of IPv6 conns: the MTU less 60 header bytes, never below what the
 * IPv6 minimum MTU gives (RFC 8200 5). */
#define TCP6_HDRS (IP6_HDR_LEN + TCP_HDR_LEN)
#define TCP6_MSS_MIN (IP6_MIN_MTU - TCP6_HDRS)

/* ---- parsed options and segment ---- */
enum {
    OPT_MSS = 1, OPT_WS = 2, OPT_SACK_PERM = 4, OPT_TS = 8, OPT_SACK = 16,
    OPT_TFO = 32,             /* a Fast Open option (SYN only) */
};

typedef struct tcp_opts {
    uint8_t has;              /* OPT_* */
    uint8_t ws;
    uint8_t nsack;
    uint16_t mss;
    uint32_t tsval, tsecr;
    uint32_t sack[4][2];      /* [start, end) */
    /* OPT_TFO: the cookie (tfo_len bytes, 0 = a cookie request) inside
     * the received header, and whether it came in the experimental form */
    const uint8_t *tfo;
    uint8_t tfo_len;
    bool tfo_exp;
} tcp_opts;

typedef struct tcp_seg {
    tern_buf *buf;
    uint8_t *payload;
    uint32_t len;             /* payload bytes */
    uint32_t seq, ack;
    uint32_t wnd;             /* raw window field */
    uint8_t flags;
    uint16_t sport, dport;
    uint32_t src;             /* IPv4: the peer; IPv6: conn_fold6 of it */
    const ip6_rx *ip6;        /* IPv6: its addresses; NULL for IPv4 */
    tcp_opts o;
} tcp_seg;

/* ---- connection flags (tern_conn.flags) ---- */
enum {
    TF_SACK = 1u << 0,        /* SACK permitted both ways */
    TF_TS = 1u << 1,          /* timestamps negotiated */
    TF_WS = 1u << 2,          /* window scaling negotiated */
    TF_ACK_NOW = 1u << 3,     /* an ACK must leave at the end of the burst */
    TF_ACK_DELAYED = 1u << 4, /* an ACK is owed, delack timer armed */
    TF_FIN_QUEUED = 1u << 5,  /* the app shut down: FIN after sq_end */
    TF_FIN_SENT = 1u << 6,
    TF_FIN_RCVD = 1u << 7,    /* peer's FIN consumed (rcv_nxt covers it) */
    TF_APP_CLOSED = 1u << 8,  /* tern_tcp_close: deliver nothing more */
    TF_CLOSED_CB = 1u << 9,   /* cb.closed has run; the handle is dead */
    TF_PENDING = 1u << 10,    /* on the end-of-burst list */
    TF_RECOVERY = 1u << 11,   /* fast recovery (RFC 6582 / 6675) */
    TF_RTT_TIMING = 1u << 12, /* rtt_seq/rtt_at time a segment (Karn) */
    TF_PASSIVE = 1u << 13,    /* made by a listener */
    TF_OUTPUT = 1u << 14,     /* run output at the end of the burst */
    TF_WND_UPDATE = 1u << 15, /* window grew: advertise it */
    TF_HALF_OPEN = 1u << 16,  /* counted in tcp_layer.half_open */
    TF_IN_WHEEL = 1u << 17,
    TF_APP = 1u << 18,        /* the app holds the handle */
    TF_WAS_EST = 1u << 19,    /* reached ESTABLISHED once */
    TF_PERSIST = 1u << 20,    /* t_rtx is the zero-window probe timer */
    TF_TLP = 1u << 21,        /* t_rtx is a tail loss probe timeout */
    TF_TLP_SENT = 1u << 22,   /* a probe is out */
    TF_TLP_SENT2 = 1u << 28,  /* a second probe is out: next is the RTO */
    TF_RACK = 1u << 23,       /* t_rtx is the RACK reordering timer */
    TF_REORDER = 1u << 24,    /* RACK saw the peer's data arrive reordered */
    TF_LONE = 1u << 25,       /* send_one_buf queued a lone segment (sq_cur),
                               * nothing sent or appended since: see
                               * tcp_lone_ready */
    TF_OOO = 1u << 26,        /* ooo_head != NULL (ooo.c keeps it): one mask
                               * bit for tcp_lone_ready and the prediction */
    TF_DSACK = 1u << 27,      /* a D-SACK block (dsack) waits for our next
                               * ACK (RFC 2883); set only with TF_SACK */
    TF_BLOCKED = 1u << 29,    /* on the send wait list (api.c) */
    TF_V6 = 1u << 30,         /* IPv6: raddr is conn_fold6 of raddr6, the
                               * addresses are in the conn's IPv6 part */
};

/* ---- congestion control ---- */
typedef struct tcp_cubic {
    uint32_t w_max;           /* bytes before the last reduction */
    uint32_t k;               /* 2^-10 s until cwnd regains w_max */
    uint32_t acc;             /* growth remainder (bytes * 2^10 or bytes) */
    uint32_t cwnd_prior;      /* cwnd at the last reduction (RFC 9438) */
    uint64_t w_est;           /* Reno-friendly estimate, bytes * 2^10 */
    uint64_t epoch;           /* ns start of avoidance epoch, 0 = none */
} tcp_cubic;

struct tern_conn;
typedef struct tcp_cc_ops {
    const char *name;
    void (*init)(struct tern_conn *c);
    /* bytes newly acked outside recovery; rtt_us 0 = no sample */
    void (*on_ack)(struct tern_conn *c, uint32_t acked, uint32_t rtt_us,
                   uint64_t now);
    /* loss detected by dupacks/SACK: set ssthresh (cwnd set by caller) */
    void (*on_loss)(struct tern_conn *c, uint64_t now);
    /* retransmission timeout */
    void (*on_rto)(struct tern_conn *c, uint64_t now);
    /* Model-based controllers only (NULL for the others, which then cost
     * one test): attach runs when a conn slot is taken; on_sent after an
     * output pass (other than the lone segment's, tcp_lone_ready);
     * on_delivery after every ACK that may deliver data (cumulatively or
     * by SACK), in recovery too. Such a controller owns cwnd: PRR is off
     * and recovery's exit leaves cwnd to it (input_ack.c). */
    void (*attach)(tern_stack *st, struct tern_conn *c);
    void (*on_sent)(tern_stack *st, struct tern_conn *c);
    void (*on_delivery)(tern_stack *st, struct tern_conn *c);
} tcp_cc_ops;

extern const tcp_cc_ops tcp_cc_newreno;
extern const tcp_cc_ops tcp_cc_cubic;
extern const tcp_cc_ops tcp_cc_bbr;
struct tcp_bbr;

/* ---- the connection: hot receive/ACK fields first ---- */
struct tern_conn {
    /* cache line 0: demux, sequence space, the per-segment fast path */
    uint32_t raddr;           /* peer, host order */
    uint16_t rport, lport;
    uint32_t hnext;           /* hash chain */
    uint32_t flags;           /* TF_* */
    uint8_t state;            /* enum tern_tcp_state */
    uint8_t snd_ws, rcv_ws;
    uint8_t dupacks;
    uint8_t quickacks;        /* segments still ACKed at once after a loss */
    uint16_t ip_id;           /* IPv4 IDs sent: tcp_ip_id */
    uint32_t rcv_nxt;
    uint32_t rcv_adv;         /* right edge we advertised */
    uint32_t rcv_unread;      /* handed to recv, not consumed */
    uint32_t rcv_unacked;     /* bytes received since our last ACK */
    uint32_t ts_recent;
    uint32_t last_ack_sent;
    uint32_t snd_una, snd_nxt, snd_max;
    uint32_t snd_wnd;         /* bytes */
    uint32_t cwnd;
    uint16_t mss;             /* payload per segment (options deducted) */
    uint16_t rcv_mss;         /* what we announced */

    /* cache line 1: send queue and window bookkeeping */
    tern_buf *sq_head, *sq_tail;
    tern_buf *sq_cur;         /* buffer holding snd_nxt, or NULL */
    uint32_t sq_end;          /* seq after the last queued byte */
    uint32_t snd_wl1, snd_wl2;
    uint32_t ssthresh;
    uint32_t max_sndwnd;
    uint32_t ts_off;          /* our TSval offset (RFC 7323 5.4) */
    uint32_t recover;         /* RFC 6582 */
    uint32_t rxt_next;        /* RFC 6675: next hole seq to retransmit */
    uint32_t rxt_mark;        /* snd_max when snd_una was last resent */
    uint32_t rtt_seq;
    uint64_t rtt_at;
    void *user;

    /* timers */
    uint64_t t_rtx;           /* RTO / persist / keepalive / 2MSL */
    uint64_t t_ack;           /* delayed ACK */
    uint64_t t_wheel;         /* deadline the wheel entry was filed at */
    uint64_t last_rcv;        /* time of the last segment (keep-alive) */
    uint32_t w_prev, w_next;
    uint32_t w_slot;          /* wheel slot the conn is filed in */
    uint32_t srtt_us, rttvar_us, rto_ms;
    uint8_t backoff;          /* RTO expiries in a row */
    uint8_t probes;           /* unanswered persist/keep-alive probes */
    uint8_t syn_tries;
    uint8_t nsb;              /* scoreboard ranges */
    uint32_t iss, irs;
    struct tern_conn *pend_next; /* end-of-burst list (TF_PENDING) */
    uint32_t gen;             /* bumped when the slot is freed */
    uint32_t idx;
    uint32_t blk_prev, blk_next; /* send wait list (TF_BLOCKED, api.c) */

    /* SACK scoreboard (sender side): ranges above snd_una, sorted */
    uint32_t sb[TCP_SB_MAX][2];
    uint32_t sacked;          /* SACKed bytes: sb's or sb_marked */
    uint32_t fack;            /* highest SACKed seq */
    uint32_t sb_marked;       /* bytes of send-queue buffers BQ_SACKED */
    /* where the last per-ACK SACK marking walks stopped (sb_seek), each
     * with the end it had then: valid while that end lies above snd_una
     * (the buffer is still queued); [1] the highest. sb_pos_from: the
     * start of the block that walk marked, up to that end (known SACKed
     * even where a full range cache forgot it) */
    uint32_t sb_pos_end[2];
    tern_buf *sb_pos[2];
    uint32_t sb_pos_from[2];

    /* RACK (rack.c, RFC 8985 section 6). Times are tx_stamp() values. */
    uint32_t rack_xmit;       /* stamp of the latest-sent delivered data */
    uint32_t rack_end;        /* and its end (ties: same stamp, lower end) */
    uint32_t rack_rtt;        /* its round trip; 0 = no RACK state yet */
    uint32_t rack_min_rtt;    /* smallest unambiguous RACK round trip */
    uint32_t rack_lost_before;/* unSACKed data stamped before this is lost */

    /* PRR (RFC 6937, input_ack.c) during a SACK recovery; cwnd is set to
     * pipe + sndcnt on every ACK. Sent bytes are bytes_sent - prr_base. */
    uint32_t prr_delivered;   /* bytes delivered since recovery began */
    uint32_t prr_base;        /* low 32 bits of bytes_sent at its start */
    uint32_t recover_fs;      /* RecoverFS: flight when it began */

    /* out-of-order receive queue: the received buffers themselves */
    tern_buf *ooo_head, *ooo_tail;
    uint32_t ooo_n;
    /* received blocks whose data arrived most recently, newest first
     * (RFC 2018 4: the first SACK block holds the latest arrival, the
     * next ones repeat the most recently reported); an empty slot is
     * [0, 0). Kept by ooo.c, read by sack_blocks. */
    uint32_t rsack[TCP_RSACK_MRU][2];
    uint32_t dsack[2];        /* the D-SACK block (TF_DSACK) */

    uint64_t chack_at;        /* last challenge ACK (RFC 5961) */
    tcp_cubic cc;

    uint64_t bytes_sent, bytes_acked, bytes_received;
    uint32_t retransmits;
    uint32_t tx_progress;     /* snd_una + rcv_nxt at the template's last
                                 build (tmpl_progress, output.c) */

    /* transmit template (output.c): the bytes every segment of the conn
     * starts with, Ethernet + IPv4 (or IPv6: TF_V6) + TCP ports, and the
     * sums of their constant parts, so a segment's headers are a copy and
     * a few stores. Valid while tx_arp_gen == st->arp_gen (bumped by ARP
     * and neighbor discovery) and now < tx_arp_until. */
    uint64_t tx_arp_until;
    uint32_t tx_arp_gen;
    uint32_t tx_ip_sum;       /* IPv4 header without length, id, checksum
                                 (IPv6 has no header sum) */
    uint32_t tx_tcp_sum;      /* pseudo header without length, ports, and
                                 the TS option's kind/length when TF_TS */
    /* The template's bytes. IPv6 (TF_V6) conns keep their full addresses
     * (the hash key holds conn_fold6 of raddr6 in raddr) inside it, where
     * its fixed header has them: building the template leaves them in
     * place. An IPv4 conn's template covers laddr6: it has none. */
    union {
        uint8_t tx_hdr[TCP_TMPL6_LEN];
        struct {
            uint8_t tx_hdr6[ETH_HDR_LEN + 8];   /* up to the addresses */
            uint8_t laddr6[16], raddr6[16];
            uint8_t tx_ports6[4];
        };
    };
    uint8_t tfo;              /* TFO_* (tfo.c): Fast Open state */
    /* IPv6 only: the flow label of every segment (RFC 6437, 0 = none) */
    uint32_t flow6;
};
_Static_assert(ETH_HDR_LEN + 8 + 16 == TCP_TMPL_LEN,
               "an IPv4 template ends where raddr6 starts");

/* ---- TCP Fast Open state of a conn (tern_conn.tfo, tfo.c) ---- */
enum {
    TFO_OPT = 1u << 0,        /* our SYN / SYN-ACK carries a TFO option:
                                 passive, our cookie (the peer asked or
                                 sent a bad one); active, the cached
                                 cookie or a request */
    TFO_DATA = 1u << 1,       /* passive: the SYN's data was taken and the
                                 app told; active: our SYN carries data */
    TFO_EXP = 1u << 2,        /* the option in the experimental form */
    TFO_PENDING = 1u << 3,    /* counted in tcp_layer.tfo_pending */
};

/* ---- send / ooo queue metadata kept in tern_buf.cb ---- */
/* cb32 of a send-queue buffer: when it was last (re)sent, in units of
 * 1024 ns (wraps after ~73 minutes; compare with stamp_lt), bit 0 set when
 * that transmission was a retransmission. Written by output.c, read by
 * RACK (rack.c, sack.c). */
static inline uint32_t tx_stamp(uint64_t now, bool rtx)
{
    return ((uint32_t)(now >> 10) & ~1u) | (rtx ? 1u : 0u);
}
static inline bool stamp_lt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}
/* RACK: is send-queue buffer q (sent, not SACKed) lost? Stamped before
 * rack_lost_before (bit 0 masked); with bit 0 set that threshold is
 * RACK.xmit_ts itself, and data first sent in the same tick counts as
 * sent before it when it ends at or below RACK.end_seq (RFC 8985 6.2: the
 * sequence breaks time ties). A retransmission in that tick does not: it
 * may have left after RACK.xmit_ts, and counting it lost again would
 * resend it in a loop until the clock moves. */
static inline bool rack_lost(const struct tern_conn *c, const tern_buf *q)
{
    uint32_t x = q->cb32 & ~1u, lb = c->rack_lost_before;
    return c->rack_rtt &&
           (stamp_lt(x, lb & ~1u) ||
            ((lb & 1u) && !(q->cb32 & 1u) && x == (lb & ~1u) &&
             seq_le((uint32_t)q->cb[0] + (uint32_t)(q->cb[0] >> 32),
                    c->rack_end)));
}
/* Is q's last transmission a retransmission still in flight (RACK has
 * not declared it lost)? Then only RACK may call it lost again: RFC
 * 6675's IsLost, which counts SACKed data above, says the same of it as
 * of the original and would resend it at once when a new recovery
 * starts over (RFC 8985 leaves lost retransmissions to RACK alone). */
static inline bool rack_resent(const struct tern_conn *c, const tern_buf *q)
{
    return c->rack_rtt && (q->cb32 & 1u) && !rack_lost(c, q);
}
/* cb[0] = seq | len << 32; cb[1] = payload offset from head | csum << 32
 * (bit 48 = csum valid, bit 49 = FIN after this segment (ooo)); cb[2] =
 * next buffer of our queue (we never use tern_buf.next, which the driver
 * may own while a frame of ours is in flight). */
#define BQ_CSUM_OK (1ull << 48)
#define BQ_FIN (1ull << 49)
/* bit 50 (send queue): a SACK block covered the whole buffer; kept until
 * the buffer is cumulatively acked (the ranges forget, the mark does not) */
#define BQ_SACKED (1ull << 50)
static inline bool bq_sacked(const tern_buf *b)
{
    return (b->cb[1] & BQ_SACKED) != 0;
}
static inline uint32_t bq_seq(const tern_buf *b) { return (uint32_t)b->cb[0]; }
static inline uint32_t bq_len(const tern_buf *b) { return (uint32_t)(b->cb[0] >> 32); }
static inline uint32_t bq_end(const tern_buf *b) { return bq_seq(b) + bq_len(b); }
static inline uint8_t *bq_data(const tern_buf *b)
{
    return b->head + (uint32_t)b->cb[1];
}
static inline tern_buf *bq_next(const tern_buf *b)
{
    return (tern_buf *)(uintptr_t)b->cb[2];
}
static inline void bq_set_next(tern_buf *b, tern_buf *n)
{
    b->cb[2] = (uint64_t)(uintptr_t)n;
}
static inline void bq_set(tern_buf *b, uint32_t seq, uint32_t len,
                          const uint8_t *data)
{
    b->cb[0] = (uint64_t)seq | (uint64_t)len << 32;
    b->cb[1] = (uint64_t)(uint32_t)(data - b->head);
}

/* ---- timer wheel ---- */
#define TW_BITS 11
#define TW_SLOTS (1u << TW_BITS)
#define TW_SHIFT 20           /* ~1.05 ms per tick */
typedef struct tcp_wheel {
    uint64_t cur;             /* tick processed last */
    uint64_t first;           /* earliest filed tick; 0: unknown (scan),
                                 UINT64_MAX: none filed */
    uint32_t slot[TW_SLOTS];  /* head conn index per slot */
    uint64_t bits[TW_SLOTS / 64];
} tcp_wheel;

struct tcp_listener {
    uint16_t port;            /* 0 = free */
    void *user;
};

/* A connection in TIME_WAIT without its slot (time_wait.c): what is needed
 * to answer the peer's last segments (RFC 9293 3.10.7.4) and to judge a
 * new SYN for the same tuple (RFC 6191). 48 bytes against a conn's ~500. */
typedef struct tcp_tw {
    uint32_t raddr;
    uint16_t rport, lport;    /* the key, in a conn's order */
    uint32_t snd_nxt;         /* after our FIN */
    uint32_t rcv_nxt;         /* after the peer's FIN */
    uint32_t ts_recent;       /* the peer's last TSval */
    uint32_t ts_off;          /* our TSval offset */
    uint32_t hnext;           /* hash chain, or the free list */
    uint32_t older, newer;    /* age list: expiry order */
    uint8_t ts;               /* timestamps were in use */
    uint8_t rcv_ws;
    uint8_t v6;               /* IPv6: raddr is a fold, the addresses are
                                 in tcp_layer.tw6[index] */
    uint8_t pad_;
    uint64_t expire;          /* ns */
} tcp_tw;

/* ---- the layer ---- */
struct tcp_layer {
    struct tern_conn *conns;
    uint32_t nconns;
    uint32_t free_head;       /* LIFO free list through hnext */
    uint32_t used;
    uint32_t half_open;
    uint32_t *hash;
    uint32_t hash_shift;      /* 64 - log2(buckets): conn_hash's top bits */
    uint64_t hk0, hk1;        /* table hash keys (from the secret) */
    uint64_t hk6[4];          /* conn_fold6 keys */
    struct tcp_listener *lis;
    uint32_t nlis;
    struct tern_conn *pend_head; /* conns needing output/ACK at burst end */
    bool in_input;
    bool in_chain;            /* inside an LRO chain, before its last piece */
    const tcp_cc_ops *cc;
    struct tcp_bbr *bbr;      /* per conn slot, only with TERN_CC_BBR */
    bool cc_model;            /* cc has the model hooks (on_sent ...) */
    uint32_t port_next;       /* RFC 6056 algorithm 3 counter */
    uint32_t chack_tokens;    /* global challenge-ACK budget */
    uint64_t chack_refill;
    /* config, normalised */
    uint32_t rcv_buf, snd_buf, ooo_max;
    uint32_t rto_min_ms, rto_max_ms, rto_init_ms;
    uint32_t rto_floor_ms;    /* the RTO at the floor: min(min, max) */
    uint64_t rto_floor_us;    /* rto_min_ms in us: at or below, the floor */
    uint32_t max_retries, syn_retries;
    uint64_t delack_ns, keepalive_ns, time_wait_ns;
    uint16_t our_mss;         /* MTU - 40 */
    uint16_t our_mss6;        /* MTU - 60, at least TCP6_MSS_MIN */
    uint8_t rcv_ws;
    uint32_t ack_stretch;     /* bytes in one big burst that draw an ACK */
    uint32_t short_stretch;   /* the same in a short burst: 4 full segments */
    uint32_t burst_stretch;   /* the one for this burst (tcp_input_begin) */
    bool sack, ts, ws, nagle, delack;
    bool no_predict;          /* tests: every segment takes the general path */
    uint64_t predicted;       /* segments the fast path took (tests) */
    uint64_t sack_walked;     /* send-queue buffers the per-ACK SACK walks
                                 (marking, RACK) visited (tests) */
    tcp_wheel wheel;
    /* behind the hot fields: only out-of-order data touches these */
    uint32_t ooo_bufs;        /* buffers in every conn's out-of-order queue */
    uint32_t ooo_bufs_max;    /* at most this many (cfg.ooo_max_bufs) */
    /* the conns a send refused for the receive reserve put on the wait
     * list (api.c), oldest first */
    uint32_t blk_head, blk_tail;
    /* TIME_WAIT records (time_wait.c) */
    tcp_tw *tw;
    uint8_t (*tw6)[32];       /* remote and local IPv6 address of each
                                 record, when IPv6 is on (else NULL) */
    uint32_t *tw_hash;
    /* TCP Fast Open (tfo.c) */
    bool tfo_server;
    uint32_t tfo_pending;     /* passive conns that took data in the SYN,
                                 still in SYN_RECEIVED */
    uint32_t tfo_max_pending;
    struct tfo_entry *tfo_cache; /* the client's cookies by destination */
    uint32_t tfo_cache_n;
    uint32_t tfo_clock;       /* use stamps for the cache's LRU */
    uint32_t tw_n, tw_used, tw_free;
    uint32_t tw_oldest, tw_newest;
    uint32_t tw_shift;
};

static inline struct tcp_layer *TL(tern_stack *st) { return st->tcp; }
/* Drop the send queue's reference on q. A TSO frame (output.c) chains
 * queue buffers through `frag`; the driver's release of that frame walks
 * the chain but leaves the links in place. While another owner remains
 * (refs > 1, the frame is still in flight) the link is live and must not
 * be followed from here, so only our count drops; once we are the only
 * owner the link is stale and is cleared before the release. */
static inline void sq_put(tern_stack *st, tern_buf *q)
{
    if (q->refs > 1) {
        q->refs--;
        return;
    }
    q->frag = NULL;
    buf_release(st, q);
}
static inline uint32_t conn_flight(const struct tern_conn *c)
{
    return c->snd_nxt - c->snd_una;
}
static inline uint64_t ms_ns(uint64_t ms) { return ms * TERN_NS_PER_MS; }
/* TSval clock: ~1 ms ticks of 2^20 ns (1,048.576 us, rounded up). */
#define TS_TICK_US 1049u
static inline uint32_t ts_now(uint64_t now) { return (uint32_t)(now >> 20); }

/* ---- conn_table.c ---- */
/* Bucket of a 4-tuple, given as raddr and ports = rport << 16 | lport
 * (the two port fields of a received header as one big-endian word):
 * multiply-shift hashing (Dietzfelbinger et al.) keyed from the secret,
 * the top bits of the tuple (xor hk0) times the random odd hk1. Two
 * tuples share a bucket with probability at most 2 / buckets over the
 * key, so a peer cannot aim its tuples at a chain. A size_t: the
 * shift leaves it below the bucket count, so indexing needs no
 * zero-extension. */
static inline size_t conn_hash_ports(const struct tcp_layer *tl,
                                     uint32_t raddr, uint32_t ports)
{
    uint64_t x = (uint64_t)raddr << 32 | ports;
    return (size_t)(((x ^ tl->hk0) * tl->hk1) >> tl->hash_shift);
}
static inline uint32_t conn_hash(const struct tcp_layer *tl, uint32_t raddr,
                                 uint16_t rport, uint16_t lport)
{
    return (uint32_t)conn_hash_ports(tl, raddr, (uint32_t)rport << 16 | lport);
}
/* A tuple as one word, equal exactly when raddr, rport and lport all are:
 * one compare per chain entry instead of three. The fields lead the conn
 * in this order, so on a little-endian machine gcc reads a conn's key
 * with one 8-byte load. */
static inline uint64_t conn_tuple_key(uint32_t raddr, uint16_t rport,
                                      uint16_t lport)
{
    return (uint64_t)lport << 48 | (uint64_t)rport << 32 | raddr;
}
static inline uint64_t conn_key_of(const struct tern_conn *c)
{
    return conn_tuple_key(c->raddr, c->rport, c->lport);
}
/* The same key from raddr and ports as for conn_hash_ports (rport in the
 * high half): the halves swapped by one rotation. */
static inline uint64_t conn_ports_key(uint32_t raddr, uint32_t ports)
{
    return (uint64_t)(ports >> 16 | ports << 16) << 32 | raddr;
}
/* The conn of a 4-tuple (ports as for conn_hash_ports), or NULL. Inline:
 * once per received segment. */
static inline struct tern_conn *conn_lookup_ports(tern_stack *st,
                                                  uint32_t raddr,
                                                  uint32_t ports)
{
    struct tcp_layer *tl = TL(st);
    uint64_t key = conn_ports_key(raddr, ports);
    uint32_t i = tl->hash[conn_hash_ports(tl, raddr, ports)];
    while (i != TCP_NIL) {
        struct tern_conn *c = &tl->conns[i];
        if (conn_key_of(c) == key)
            return c;
        i = c->hnext;
    }
    return NULL;
}
static inline struct tern_conn *conn_lookup(tern_stack *st, uint32_t raddr,
                                            uint16_t rport, uint16_t lport)
{
    return conn_lookup_ports(st, raddr, (uint32_t)rport << 16 | lport);
}
/*
 * IPv6 conns share the table and its 64-bit key: their raddr is a keyed
 * 24-bit fold of the peer's address, in 0.0.0.1-0.255.255.255, a range no
 * IPv4 peer can have (ip4_src_ok refuses 0/8 before any IPv4 segment
 * reaches a conn; the raw path's prediction refuses TF_V6 conns). So an
 * IPv4 key never matches an IPv6 conn, and an IPv6 key match is confirmed
 * by comparing the full addresses (folds of two peers may collide).
 */
static inline uint32_t conn_fold6(const struct tcp_layer *tl,
                                  const uint8_t a[16])
{
    uint64_t w0, w1;
    tern_memcpy(&w0, a, 8);
    tern_memcpy(&w1, a + 8, 8);
    uint64_t h = ((w0 ^ tl->hk6[0]) * tl->hk6[1]) ^
                 ((w1 ^ tl->hk6[2]) * tl->hk6[3]);
    uint32_t f = (uint32_t)(h >> 40);
    return f ? f : 1;
}
static inline bool addr6_eq(const uint8_t *a, const uint8_t *b)
{
    uint64_t a0, a1, b0, b1;
    tern_memcpy(&a0, a, 8);
    tern_memcpy(&a1, a + 8, 8);
    tern_memcpy(&b0, b, 8);
    tern_memcpy(&b1, b + 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}
/* The IPv6 conn of a tuple (ports as for conn_hash_ports; raddr6 the
 * peer, laddr6 ours), or NULL. */
static inline struct tern_conn *conn_lookup6(tern_stack *st,
                                             const uint8_t *raddr6,
                                             const uint8_t *laddr6,
                                             uint32_t ports)
{
    struct tcp_layer *tl = TL(st);
    uint32_t f = conn_fold6(tl, raddr6);
    uint64_t key = conn_ports_key(f, ports);
    uint32_t i = tl->hash[conn_hash_ports(tl, f, ports)];
    while (i != TCP_NIL) {
        struct tern_conn *c = &tl->conns[i];
        if (conn_key_of(c) == key && addr6_eq(c->raddr6, raddr6) &&
            addr6_eq(c->laddr6, laddr6))
            return c;
        i = c->hnext;
    }
    return NULL;
}
/* The conn of a parsed segment's tuple, either family. */
static inline struct tern_conn *conn_lookup_seg(tern_stack *st,
                                                const tcp_seg *s)
{
    uint32_t ports = (uint32_t)s->sport << 16 | s->dport;
    if (s->ip6)
        return conn_lookup6(st, s->ip6->src, s->ip6->dst, ports);
    return conn_lookup_ports(st, s->src, ports);
}
struct tern_conn *conn_alloc(tern_stack *st, uint32_t raddr, uint16_t rport,
                             uint16_t lport);
/* conn_alloc for an IPv6 tuple: TF_V6, the addresses and the flow label
 * set. */
struct tern_conn *conn_alloc6(tern_stack *st, const uint8_t raddr6[16],
                              const uint8_t laddr6[16], uint16_t rport,
                              uint16_t lport);
/* The conn's MSS to announce and to cap the peer's by: our_mss or, for
 * IPv6, our_mss6. */
static inline uint16_t conn_our_mss(const struct tcp_layer *tl,
                                    const struct tern_conn *c)
{
    return (c->flags & TF_V6) ? tl->our_mss6 : tl->our_mss;
}
/* Drop everything the conn holds, unlink it and put it on the free list. */
void conn_free(tern_stack *st, struct tern_conn *c);
/* Run cb.closed once (if the app still holds the handle), then free. */
void conn_close(tern_stack *st, struct tern_conn *c, int reason);
/* Tell the app the connection ended, but keep the conn (TIME_WAIT). */
void conn_notify_closed(tern_stack *st, struct tern_conn *c, int reason);
void conn_set_state(tern_stack *st, struct tern_conn *c, uint8_t state);
struct tcp_listener *listener_find(tern_stack *st, uint16_t port);
/* Mark what the end of the burst owes c (TF_OUTPUT, TF_ACK_*) and put it
 * on the pending list once. Inline: several calls per segment. */
static inline void conn_pend(tern_stack *st, struct tern_conn *c,
                             uint32_t why)
{
    uint32_t was = c->flags;
    c->flags = was | why | TF_PENDING;
    if (!(was & TF_PENDING)) {
        struct tcp_layer *tl = TL(st);
        c->pend_next = tl->pend_head;
        tl->pend_head = c;
    }
}

/* ---- timer_wheel.c ---- */
void tw_init(struct tcp_layer *tl, uint64_t now);
void tw_schedule(struct tcp_layer *tl, struct tern_conn *c, uint64_t at);
void tw_cancel(struct tcp_layer *tl, struct tern_conn *c);
/* Fire due conns through fn; returns the next deadline or TERN_NEVER. */
uint64_t tw_run(tern_stack *st, uint64_t now,
                void (*fn)(tern_stack *, struct tern_conn *, uint64_t));
uint64_t tw_next(struct tcp_layer *tl, uint64_t now);
/* Re-file the conn at min(t_rtx, t_ack) if that is earlier than filed. */
void conn_timer_update(tern_stack *st, struct tern_conn *c);

/* ---- timers.c ---- */
void tcp_timer_fire(tern_stack *st, struct tern_conn *c, uint64_t now);
/* (Re)start the retransmission timer: the RTO, or a tail loss probe
 * (RFC 8985 7.2) when that comes first. */
void tcp_arm_rto(tern_stack *st, struct tern_conn *c);
/* What a tail loss probe for a lone segment adds for the peer's delayed
 * ACK (timers.c). */
#define TCP_TLP_DELACK_US 200000u
/* Set t_rtx to `at` and file the conn earlier if it now comes before its
 * filing; a filing that is earlier already stays (it fires, finds nothing
 * due and is re-filed). A pending delayed ACK is filed already (at t_ack
 * or before), so a later `at` never needs the wheel. */
static inline void tcp_set_rtx(tern_stack *st, struct tern_conn *c,
                               uint64_t at)
{
    c->t_rtx = at;
    if (!(c->flags & TF_IN_WHEEL) || at < c->t_wheel)
        tw_schedule(TL(st), c, at);
}
/* tcp_arm_rto for a flight that is one segment of at most an MSS with
 * nothing queued behind it (a request or a response). Its probe would wait
 * 2 SRTT + 200 ms, so with an RTO of at most 200 ms and no backoff the RTO
 * comes first and tcp_arm_rto arms no probe: the same result without the
 * probe arithmetic and the call. */
static inline void tcp_arm_rto_lone(tern_stack *st, struct tern_conn *c)
{
    uint32_t ms = c->rto_ms, max = TL(st)->rto_max_ms;
    if (ms > TCP_TLP_DELACK_US / 1000 || c->backoff) {
        tcp_arm_rto(st, c);
        return;
    }
    c->flags &= ~(uint32_t)(TF_PERSIST | TF_TLP | TF_RACK);
    tcp_set_rtx(st, c, st->now + ms_ns(ms < max ? ms : max));
}
/* Arm or disarm t_rtx to fit the state (RTO, persist, keepalive). */
void tcp_rearm(tern_stack *st, struct tern_conn *c);
/* The conn enters TIME_WAIT: the app is told it closed, an ACK leaves if
 * one is owed, a TIME_WAIT record takes over and the slot is freed. */
void tcp_enter_time_wait(tern_stack *st, struct tern_conn *c);

/* ---- time_wait.c ---- */
/* ip6: keep the IPv6 addresses of the records too (32 bytes each). */
void twr_mem(struct tcp_layer *tl, uint32_t n, bool ip6, carve *cv);
/* Record c (its tuple, sequence and timestamp state) until now + the
 * TIME_WAIT time; the oldest record is recycled when the table is full. */
void twr_enter(tern_stack *st, const struct tern_conn *c);
/* The record of a tuple, or TCP_NIL. */
uint32_t twr_lookup(tern_stack *st, uint32_t raddr, uint16_t rport,
                   uint16_t lport);
/* The same for an IPv6 tuple (peer raddr6, ours laddr6). */
uint32_t twr_lookup6(tern_stack *st, const uint8_t *raddr6,
                     const uint8_t *laddr6, uint16_t rport, uint16_t lport);
/* The record of a segment's tuple, either family. */
static inline uint32_t twr_lookup_seg(tern_stack *st, const tcp_seg *s)
{
    if (s->ip6)
        return twr_lookup6(st, s->ip6->src, s->ip6->dst, s->sport, s->dport);
    return twr_lookup(st, s->src, s->sport, s->dport);
}
/* A segment for the record i: answered per RFC 9293 (ACK, restart on a
 * FIN, RST ends it), or a new SYN accepted per RFC 6191 (the record goes,
 * the SYN goes on to the listener l, which may be NULL). */
void twr_input(tern_stack *st, uint32_t i, tcp_seg *s, struct tcp_listener *l);
/* Expire records due at now; returns the next expiry or TERN_NEVER. */
uint64_t twr_poll(tern_stack *st, uint64_t now);
/* Records held. */
uint32_t twr_count(const struct tcp_layer *tl);
/* Drop the record of a tuple a new active open takes (c: its conn, the
 * tuple set), if any. */
void twr_forget(tern_stack *st, const struct tern_conn *c);

/* ---- api.c: the receive reserve ---- */
/* Run cb.writable for the conns a refused send put on the wait list, while
 * the pool holds more than the reserve (end of each burst, tern_poll). */
void tcp_send_wake(tern_stack *st);
static inline void tcp_send_wake_check(tern_stack *st)
{
    struct tcp_layer *tl = TL(st);
    if (tl->blk_head != TCP_NIL)
        tcp_send_wake(st);
}
/* Take c off the wait list (conn_free). */
void tcp_send_unblock(struct tcp_layer *tl, struct tern_conn *c);

/* ---- options.c ---- */
/* Parse the options of a header of hlen bytes. false = malformed. */
bool tcp_opts_parse(const uint8_t *opt, uint32_t len, bool syn, tcp_opts *o);
/* Write the options of a SYN / SYN-ACK; returns bytes (multiple of 4). */
uint32_t tcp_opts_syn(uint8_t *p, uint16_t mss, int ws, bool sack, bool ts,
                      uint32_t tsval, uint32_t tsecr);
/* A TFO option with len cookie bytes (0: a request), in kind 34 or the
 * experimental form, behind NOPs to a multiple of 4; returns bytes. */
uint32_t tcp_opts_tfo(uint8_t *p, const uint8_t *cookie, uint32_t len,
                      bool exp);
/* TS and SACK blocks of an established segment; returns bytes. */
uint32_t tcp_opts_est(uint8_t *p, bool ts, uint32_t tsval, uint32_t tsecr,
                      const uint32_t (*sack)[2], uint32_t nsack);

/* ---- tfo.c: TCP Fast Open (RFC 7413) ---- */
/* The client's cookie cache (cfg.tfo_cache_entries) from the carve. */
void tfo_mem(struct tcp_layer *tl, const tern_config *cfg, carve *cv);
/* Server: a SYN with a TFO option made the half-open conn c. Decides
 * whether the SYN-ACK carries our cookie (TFO_OPT) and whether the SYN's
 * data is taken (true: TFO_DATA set, counted pending; the caller
 * delivers it). */
bool tfo_passive(tern_stack *st, struct tern_conn *c, const tcp_seg *s);
/* Client: the cached cookie of the conn's peer (IPv4 or IPv6 address)
 * and the peer MSS seen with it; 0 when none is cached, else the cookie's
 * length (copied to cookie). */
uint32_t tfo_cache_get(tern_stack *st, const struct tern_conn *c,
                       uint8_t cookie[TFO_COOKIE_MAX], uint16_t *mss);
/* Client: a SYN-ACK s answered our SYN with TFO_OPT: keep its cookie. */
void tfo_synack_cookie(tern_stack *st, struct tern_conn *c, const tcp_seg *s);
/* Payload bytes the conn's SYN may carry to a peer whose MSS option was
 * mss: room for the largest options (40 bytes) is kept, so the segment
 * fits whatever the SYN's options come to. */
static inline uint32_t tfo_syn_room(const struct tcp_layer *tl,
                                    const struct tern_conn *c, uint32_t mss)
{
    uint32_t ours = conn_our_mss(tl, c);
    uint32_t m = mss < ours ? mss : ours;
    return m > 40 ? m - 40 : 0;
}
/* The TFO option of the conn's SYN or SYN-ACK at p (NOP-padded to a
 * multiple of 4); returns its bytes, 0 when it carries none. */
uint32_t tfo_syn_option(tern_stack *st, const struct tern_conn *c,
                        uint8_t *p);

/* ---- rtt.c ---- */
void rtt_init(tern_stack *st, struct tern_conn *c);
/* Take one RTT sample (us) into srtt/rttvar and recompute the RTO
 * (RFC 6298 2.3, G = 1 ms); clears the backoff. */
static inline void rtt_sample(tern_stack *st, struct tern_conn *c,
                              uint32_t r)
{
    struct tcp_layer *tl = TL(st);
    if (r == 0)
        r = 1;
    if (c->srtt_us == 0) {
        c->srtt_us = r;
        c->rttvar_us = r >> 1;
    } else {
        uint32_t delta = c->srtt_us > r ? c->srtt_us - r : r - c->srtt_us;
        c->rttvar_us = c->rttvar_us - (c->rttvar_us >> 2) + (delta >> 2);
        c->srtt_us = c->srtt_us - (c->srtt_us >> 3) + (r >> 3);
    }
    /* G (clock granularity) is 1 ms: our TSval tick */
    uint32_t var4 = c->rttvar_us << 2;
    uint64_t rto_us = (uint64_t)c->srtt_us + (var4 > 1000 ? var4 : 1000);
    /* rounded up to ms, at least rto_min, then at most rto_max; the usual
     * RTO is the floor, decided without the division (ceil(x/1000) <= m
     * iff x <= m * 1000), both bounds applied in advance */
    if (rto_us <= tl->rto_floor_us) {
        c->rto_ms = tl->rto_floor_ms;
    } else {
        uint64_t ms = (rto_us + 999) / 1000;
        c->rto_ms = ms > tl->rto_max_ms ? tl->rto_max_ms : (uint32_t)ms;
    }
    c->backoff = 0;
}

/* ---- sack.c ---- */
void sb_clear(struct tern_conn *c);
/* Merge received SACK blocks and mark the buffers they cover; returns
 * bytes newly SACKed. tl (NULL: not counted) counts the walk. */
uint32_t sb_update(struct tcp_layer *tl, struct tern_conn *c, const tcp_opts *o);
/* The parts of [s, e) (at or above snd_una) outside what is known SACKed
 * (the scoreboard's ranges and the spans of the last marking walks),
 * ascending, into out (room for SB_PARTS_MAX); their number. A per-ACK
 * walk visits only these: the rest was marked when its blocks came. */
#define SB_PARTS_MAX (TCP_SB_MAX + 3)
uint32_t sb_new_parts(const struct tern_conn *c, uint32_t s, uint32_t e,
                      uint32_t (*out)[2]);
/* The first send-queue buffer that ends above seq (seq >= snd_una),
 * walked from the nearest position a walk stopped at (sb_pos) at or
 * below seq, else from the head; *steps counts the buffers visited. */
tern_buf *sb_seek(const struct tern_conn *c, uint32_t seq, uint64_t *steps);
/* A marking walk stopped at q, every buffer in [from, q's end) marked:
 * remember it for the next sb_seek and sb_new_parts. */
void sb_stop(struct tern_conn *c, tern_buf *q, uint32_t from);
/* Drop scoreboard parts at or below snd_una. */
void sb_ack(struct tern_conn *c);
/* If seq is inside a SACKed range, the end of it; else seq. */
uint32_t sb_skip(const struct tern_conn *c, uint32_t seq);
/* RFC 6675: IsLost(seq) */
bool sb_is_lost(const struct tern_conn *c, uint32_t seq, uint32_t mss);
/* NextSeg: the first unSACKed byte that RACK declares lost (its buffer
 * stamped before rack_lost_before), or that RFC 6675 IsLost declares lost
 * at or above from (rule 1, not yet resent in this recovery); with the
 * length of its hole (capped by mss); false if none. */
bool sb_next_hole(const struct tern_conn *c, uint32_t from, uint32_t mss,
                  uint32_t *seq, uint32_t *len);
/* RFC 6675 pipe, RACK-lost bytes counted as out of the network. */
uint32_t sb_pipe(const struct tern_conn *c, uint32_t mss);
/* Unsent-again buffers RACK declares lost; *fresh: how many of them were
 * stamped at or after since (newly lost since the caller last looked). */
uint32_t sb_rack_lost(const struct tern_conn *c, uint32_t since,
                      uint32_t *fresh);
/* Receiver side: the blocks of our next ACK, at most max: the D-SACK
 * block if one waits, then the out-of-order queue's blocks in the order
 * their data last arrived (RFC 2018 4, RFC 2883). */
uint32_t sack_blocks(const struct tern_conn *c, uint32_t (*out)[2],
                     uint32_t max);
/* Does our next ACK carry SACK blocks (out-of-order data or a D-SACK)? */
static inline bool sack_out(const struct tern_conn *c)
{
    return (c->flags & TF_SACK) && (c->flags & (TF_OOO | TF_DSACK));
}
/* Data [s, e) arrived again: report it in the next ACK's D-SACK block. */
void sack_note_dup(tern_stack *st, struct tern_conn *c, uint32_t s,
                   uint32_t e);
/* Data [s, e) arrived out of order: its block moves to the front. */
void sack_note_recent(struct tern_conn *c, uint32_t s, uint32_t e);

/* ---- rack.c (RFC 8985 section 6) ---- */
/* Before an ACK's SACK blocks and cumulative ACK are applied: note the
 * latest-sent data it delivers (RACK.xmit_ts, RACK.rtt, min RTT). */
void rack_on_ack(tern_stack *st, struct tern_conn *c, const tcp_seg *s);
/* After the ACK: recompute the loss threshold, enter recovery when RACK
 * finds a loss, arm the reordering timer for data not yet old enough. */
void rack_detect(tern_stack *st, struct tern_conn *c);
/* The reordering timer fired. */
void rack_timeout(tern_stack *st, struct tern_conn *c);

/* ---- ooo.c ---- */
/* Keep an out-of-order segment (takes the buffer reference or releases). */
void ooo_insert(tern_stack *st, struct tern_conn *c, tern_buf *b,
                uint8_t *data, uint32_t seq, uint32_t len, bool fin);
/* Next queued buffer that starts at or below rcv_nxt (trimming stale
 * ones), or NULL. Unlinked; data and len describe the new bytes. */
tern_buf *ooo_pop(tern_stack *st, struct tern_conn *c, uint8_t **data,
                  uint32_t *len, bool *fin);
void ooo_purge(tern_stack *st, struct tern_conn *c);

/* ---- output.c ---- */
/* Send what the windows allow; ACK rides on data. */
void tcp_output(tern_stack *st, struct tern_conn *c);
/* A pure ACK now (or a window probe / keep-alive with seq). */
void tcp_send_ack(tern_stack *st, struct tern_conn *c);
void tcp_send_probe(tern_stack *st, struct tern_conn *c);
void tcp_send_syn(tern_stack *st, struct tern_conn *c);
/* RST for a conn (seq snd_nxt) */
void tcp_send_rst_conn(tern_stack *st, struct tern_conn *c);
/* RST (or RST|ACK) in answer to a segment with no conn (RFC 9293 3.10.7.1). */
void tcp_send_rst_reply(tern_stack *st, const tcp_seg *s);
/* Send a control segment (no payload) from a conn view that has no table
 * slot (a TIME_WAIT record's answer). */
void tcp_send_view(tern_stack *st, struct tern_conn *view, uint32_t seq,
                   uint8_t flags);
/* Retransmit up to len bytes at seq (one segment, FIN included when it
 * follows); returns the sequence space sent, 0 if nothing left. */
uint32_t tcp_retransmit(tern_stack *st, struct tern_conn *c, uint32_t seq,
                        uint32_t len);
/* The send-queue buffer holding seq, or NULL. */
tern_buf *sq_find(struct tern_conn *c, uint32_t seq);
/* The receive window to announce (bytes, not scaled), and in *kept
 * whether that is the advertised edge's distance (the edge stays).
 * Inline: every segment we send carries it. */
static inline uint32_t tcp_rcv_window_kept(const struct tcp_layer *tl,
                                           const struct tern_conn *c,
                                           bool *kept)
{
    uint32_t avail = tl->rcv_buf > c->rcv_unread ? tl->rcv_buf - c->rcv_unread
                                                 : 0;
    uint32_t old = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt
                                                  : 0;
    /* never shrink the right edge, and move it only by a useful amount
     * (receiver SWS avoidance, RFC 9293 3.8.6.2.2): one test for both,
     * made first without the scale cap (which only lowers avail) since
     * the edge usually stays */
    uint32_t step = tl->rcv_buf >> 1;
    if (step > c->rcv_mss)
        step = c->rcv_mss;
    *kept = avail < old + step;
    if (*kept)
        return old;
    uint32_t max = 65535u << c->rcv_ws;
    if (avail > max)
        avail = max;
    *kept = avail < old + step;
    return *kept ? old : avail;
}
static inline uint32_t tcp_rcv_window(const struct tcp_layer *tl,
                                      const struct tern_conn *c)
{
    bool kept;
    return tcp_rcv_window_kept(tl, c, &kept);
}
/* The window field of an established segment (tcp_rcv_window scaled and
 * capped) and in *edge the right edge it announces, rcv_nxt + (field <<
 * rcv_ws); the sender moves rcv_adv up to it (ack_sent). When the edge
 * stays (the usual case: it moves only by a step) and is ahead of
 * rcv_nxt, *edge is rcv_adv itself, as the scaled field does not reach
 * past it: the same outcome without the shift and the sum. */
static inline uint32_t tcp_wnd_field(const struct tcp_layer *tl,
                                     const struct tern_conn *c,
                                     uint32_t *edge)
{
    bool kept;
    uint32_t r = tcp_rcv_window_kept(tl, c, &kept);
    uint32_t wnd = r >> c->rcv_ws;
    if (wnd > 65535)
        wnd = 65535;
    *edge = kept && r ? c->rcv_adv : c->rcv_nxt + (wnd << c->rcv_ws);
    return wnd;
}
/*
 * tcp_output's shortcut (output.c send_lone): the request or response of
 * a request/response flow. The only queue buffer, nothing in flight
 * before it (snd_una = snd_nxt = snd_max = its seq), at most one MSS that
 * both windows take (Nagle holds nothing back with nothing in flight),
 * not empty, its payload sum known, room for the largest headers in front
 * of it, no SACK blocks to send and a valid transmit template (not
 * rebuilt here: the general path does that). output_one then sends it in
 * place with ACK|PSH and takes its lone-segment bookkeeping. (Any
 * out-of-order data is left to output_one, SACK or not: one test.)
 * tcp_lone_ready tests this through the TF_LONE mark; tcp_lone_full is
 * the same case tested field by field (the tests hold the two together).
 */
static inline bool tcp_lone_full(const tern_stack *st,
                                 const struct tern_conn *c)
{
    const tern_buf *q = c->sq_cur;
    uint32_t seq = c->snd_nxt;
    if (!q || q != c->sq_tail || bq_seq(q) != seq || seq != c->snd_una ||
        seq != c->snd_max || q->refs != 1 ||
        c->state != TERN_TCP_ESTABLISHED || c->nsb ||
        (c->flags & (TF_RECOVERY | TF_FIN_QUEUED | TF_DSACK)) || c->ooo_head)
        return false;
    uint32_t len = bq_len(q);
    return len && len <= c->mss && len <= c->cwnd && len <= c->snd_wnd &&
           (uint32_t)q->cb[1] >= TCP_MAX_HDRS &&
           ((q->cb[1] & BQ_CSUM_OK) || (st->cfg.caps & TERN_CAP_TX_L4_CSUM)) &&
           c->tx_arp_gen == st->arp_gen && st->now < c->tx_arp_until;
}
/*
 * TF_LONE: send_one_buf put a fresh buffer (refs 1, 1 <= len <= mss, the
 * header room tested, the payload sum taken unless the NIC sums) on the
 * empty queue of an ESTABLISHED conn without a FIN queued, and it became
 * sq_cur. An empty queue then means nothing in flight (every sent byte
 * stays queued until acked, and only ACKs and conn_free empty the
 * queue), so snd_una = snd_nxt = snd_max = sq_end = its seq. Until a
 * segment leaves (ack_sent clears the mark; every segment of a conn
 * carries an ACK) none of that can change: an ACK cannot advance past
 * snd_max, only sending moves snd_nxt/snd_max (the RTO timer too, but it
 * sends), and more data either joins the buffer (keeping len <= mss and
 * the sum) or goes into another one, which the tail test here sees. What
 * input or the app can still change is tested too: FIN queued,
 * recovery, out-of-order data (TF_OOO), both windows and the template.
 * Not mss: send_one_buf took len <= mss, coalescing keeps it, and ICMP
 * lowers mss only for an error quoting data in flight (RFC 5927), of
 * which there is none. The state needs no test: conn_set_state ends the mark (it
 * was set in ESTABLISHED, and every change leaves it). Nor the SACK
 * scoreboard: its ranges lie in (snd_una, snd_max] (sb_update clips,
 * sb_ack drops what an ACK covers), so it is empty when snd_una =
 * snd_max, and stays so while nothing is sent. tcp_output clears the
 * mark when it takes the general path.
 */
/* not: flags that also rule the case out (TF_V6: tcp_output's inline
 * case is IPv4's; output_rest takes IPv6's). */
static inline bool tcp_lone_ready_not(const tern_stack *st,
                                      const struct tern_conn *c, uint32_t not)
{
    if ((c->flags & (TF_LONE | TF_RECOVERY | TF_FIN_QUEUED | TF_OOO |
                     TF_DSACK | not)) != TF_LONE)
        return false;
    const tern_buf *q = c->sq_cur;
    uint32_t len = bq_len(q);
    return q == c->sq_tail && len <= c->cwnd && len <= c->snd_wnd &&
           c->tx_arp_gen == st->arp_gen && st->now < c->tx_arp_until;
}
static inline bool tcp_lone_ready(const tern_stack *st,
                                  const struct tern_conn *c)
{
    return tcp_lone_ready_not(st, c, 0);
}
/* Send a SYN-ACK from a listener without a conn (SYN cookie). */
void tcp_send_synack_cookie(tern_stack *st, const tcp_seg *s, uint32_t iss,
                            uint16_t mss, int ws, bool sack, bool ts,
                            uint32_t tsval);
/* Fused copy and Internet checksum; returns the folded partial sum. */
uint32_t tcp_copy_csum(uint8_t *dst, const uint8_t *src, uint32_t len);
/* Transmit-side checksum folds (output.c), cheaper than csum_fold64 for
 * sums known to be small. tx_fold32: any 32-bit sum of 16-bit words to 16
 * bits, not inverted: the high half is added to the low one in the top
 * half of one 32-bit add, and that add's carry wraps around. */
static inline uint32_t tx_fold32(uint32_t s)
{
    uint32_t lo = s << 16;
    uint32_t t = s + lo;
    return (t >> 16) + (t < lo);
}
/* A 64-bit sum of 32-bit words folded to 16 bits: its halves are added
 * with the carry wrapped around, then tx_fold32. */
static inline uint32_t tx_fold64(uint64_t s)
{
    uint32_t hi = (uint32_t)(s >> 32);
    uint32_t t = (uint32_t)s + hi;
    return tx_fold32(t + (t < hi));
}

/* ---- input*.c ---- */
/* Start fast recovery (RFC 6675 / 6582); resend_una: retransmit the
 * segment at snd_una at once (dupACK entry), else leave the choice to
 * NextSeg (RACK entry). */
void tcp_enter_recovery(tern_stack *st, struct tern_conn *c, bool resend_una);
void tcp_input_listen(tern_stack *st, tcp_seg *s, struct tcp_listener *l);
void tcp_input_syn_sent(tern_stack *st, struct tern_conn *c, tcp_seg *s);
void tcp_input_sync(tern_stack *st, struct tern_conn *c, tcp_seg *s);
/* Both handshakes end here (input_estab.c): s acknowledges our SYN up to
 * una and offers wnd bytes, scaled as the state calls for; timed: rtt_at
 * holds when our SYN left. */
void tcp_establish(tern_stack *st, struct tern_conn *c, const tcp_seg *s,
                   uint32_t una, uint32_t wnd, bool timed);
/* Negotiated parameters from a SYN's options. */
void tcp_apply_syn_opts(tern_stack *st, struct tern_conn *c,
                        const tcp_opts *o);
/* ACK processing; false when the segment must go no further (bad ACK,
 * or the conn was closed). */
bool tcp_ack(tern_stack *st, struct tern_conn *c, const tcp_seg *s);
/* The send window update of RFC 9293 3.10.7.4 (SND.WL1/WL2 rule) for a
 * segment's seq, ack and raw window field. Inline: every segment with an
 * ACK runs it. */
static inline void snd_wnd_update(tern_stack *st, struct tern_conn *c,
                                  uint32_t seq, uint32_t ack, uint32_t wnd_raw)
{
    if (seq_lt(c->snd_wl1, seq) ||
        (c->snd_wl1 == seq && seq_le(c->snd_wl2, ack))) {
        uint32_t wnd = wnd_raw << c->snd_ws;
        if (wnd > c->snd_wnd && c->sq_end != c->snd_nxt)
            conn_pend(st, c, TF_OUTPUT);
        c->snd_wnd = wnd;
        c->snd_wl1 = seq;
        if (wnd > c->max_sndwnd)
            c->max_sndwnd = wnd;
        /* apart from wl1: gcc would pair the two stores through a vector
         * register, four instructions for two */
        c->snd_wl2 = ack;
    }
}
static inline void tcp_snd_wnd_update(tern_stack *st, struct tern_conn *c,
                                      const tcp_seg *s)
{
    snd_wnd_update(st, c, s->seq, s->ack, s->wnd);
}
/* The RTT sample (us, +1 so that 0 means none) an ACK gives: from its
 * timestamp echo tsecr (ts: the conn uses timestamps and the segment has
 * the option; the fast path knows the first from prediction), else from
 * the timed segment (Karn). */
static inline uint32_t rtt_of_ack(tern_stack *st, struct tern_conn *c,
                                  bool ts, uint32_t tsecr, uint32_t ack)
{
    if (ts && tsecr) {
        uint32_t ticks = ts_now(st->now) + c->ts_off - tsecr;
        if (ticks < (1u << 22))
            return ticks * TS_TICK_US + 1;
        return 0;
    }
    if ((c->flags & TF_RTT_TIMING) && seq_ge(ack, c->rtt_seq)) {
        c->flags &= ~(uint32_t)TF_RTT_TIMING;
        return (uint32_t)((st->now - c->rtt_at) / 1000) + 1;
    }
    return 0;
}
static inline uint32_t rtt_of(tern_stack *st, struct tern_conn *c,
                              const tcp_seg *s)
{
    return rtt_of_ack(st, c, (c->flags & TF_TS) && (s->o.has & OPT_TS),
                      s->o.tsecr, s->ack);
}
/* RFC 7661 / RFC 9438 5.8: cwnd grows only while it limits the sender.
 * A request/response flow keeps a segment or two in flight whatever cwnd
 * is; growing it there would only make a later burst unsafe (and costs a
 * congestion-control call per ACK). Limited: the flight before this ACK
 * reached half the window. */
static inline bool cwnd_limited(const struct tern_conn *c, uint32_t flight)
{
    return flight >= c->cwnd >> 1;
}
/* What every ACK that moves snd_una clears: RTO backoff, probe counts,
 * and the tail-probe mark (the tail moved: it may probe again). */
static inline void ack_clear_probes(struct tern_conn *c)
{
    c->backoff = 0;
    c->probes = 0;
    c->flags &= ~(uint32_t)(TF_TLP_SENT | TF_TLP_SENT2);
}
/* Report `data` newly acked bytes to the app. false: the conn is gone. */
static inline bool ack_report(tern_stack *st, struct tern_conn *c,
                              uint32_t data)
{
    c->bytes_acked += data;
    uint32_t gen = c->gen;
    if (st->cfg.cb.acked && (c->flags & TF_APP) && !(c->flags & TF_CLOSED_CB))
        st->cfg.cb.acked(st, c, c->user, data);
    return c->gen == gen;
}
/* The usual ACK of a request/response flow: it covers the whole flight,
 * which is all of the one send-queue buffer, with nothing unusual going on
 * (no FIN sent, recovery, scoreboard or rewound snd_nxt) and cwnd not
 * limiting. tcp_new_ack_general would then take none of its branches but
 * the ones ack_whole_flight keeps. */
static inline bool acks_whole_flight(const struct tern_conn *c, uint32_t ack)
{
    /* q ends at sq_end, as the queue's tail always does (api.c) */
    const tern_buf *q = c->sq_head;
    return ack == c->snd_max && c->snd_nxt == c->snd_max && q &&
           q == c->sq_tail && c->sq_end == ack &&
           !c->nsb && !(c->flags & (TF_FIN_SENT | TF_RECOVERY)) &&
           !cwnd_limited(c, c->snd_max - c->snd_una);
}
/* tcp_new_ack_general for such an ACK, same effects: take the RTT
 * sample, release the buffer, clear the loss state, stop the RTO
 * (nothing is left in flight), report the acked data. ts, tsecr: as for
 * rtt_of_ack. false: the conn is gone. */
static HOT_INLINE bool ack_whole_flight(tern_stack *st, struct tern_conn *c,
                                    uint32_t ack, bool ts, uint32_t tsecr)
{
    tern_buf *q = c->sq_head;
    uint32_t data = ack - c->snd_una;
    c->snd_una = ack;
    /* the sample before the release: the pool's free callback then has
     * nothing of the ACK's to keep across it */
    uint32_t rtt = rtt_of_ack(st, c, ts, tsecr, ack);
    if (rtt)
        rtt_sample(st, c, rtt);
    sq_put(st, q);
    /* sq_cur was q or NULL: the queue is empty now */
    c->sq_head = c->sq_tail = c->sq_cur = NULL;
    ack_clear_probes(c);
    c->fack = c->snd_una;
    c->dupacks = 0;
    c->t_rtx = TERN_NEVER;
    conn_pend(st, c, TF_OUTPUT);
    return ack_report(st, c, data);
}
/* The part of tcp_ack for an ACK that advances snd_una (acceptability
 * and the window already checked). false: the conn is gone.
 * tcp_new_ack_general (input_ack.c) takes any ACK; the usual one is
 * handled inline, in the fast receive path's own body. */
bool tcp_new_ack_general(tern_stack *st, struct tern_conn *c,
                         const tcp_seg *s);
static inline bool tcp_new_ack(tern_stack *st, struct tern_conn *c,
                               const tcp_seg *s)
{
    if (acks_whole_flight(c, s->ack))
        return ack_whole_flight(st, c, s->ack,
                                (c->flags & TF_TS) && (s->o.has & OPT_TS),
                                s->o.tsecr);
    return tcp_new_ack_general(st, c, s);
}
/* Hand len bytes at p (inside b) to the app. false: the conn is gone.
 * Inline: once per data segment, from the fast path (input_estab.c);
 * also the data of a Fast Open SYN (input_listen.c). */
static inline bool tcp_deliver(tern_stack *st, struct tern_conn *c,
                               tern_buf *b, uint8_t *p, uint32_t len)
{
    c->rcv_nxt += len;
    c->rcv_unacked += len;
    c->bytes_received += len;
    CTR(st, tcp_data_segs_in);
    st->ctr.tcp_bytes_in += len;
    if ((c->flags & (TF_APP | TF_APP_CLOSED | TF_CLOSED_CB)) != TF_APP ||
        !st->cfg.cb.recv)
        return true;                        /* nobody reads: discarded */
    uint32_t gen = c->gen;
    size_t used = st->cfg.cb.recv(st, c, c->user, b, p, len);
    if (c->gen != gen)
        return false;
    if (used < len)
        c->rcv_unread += len - (uint32_t)used;
    return true;
}

/* Header prediction (input_estab.c): when s is the segment an established
 * conn expects next, handle it and return true; else do nothing. */
bool tcp_input_fast(tern_stack *st, struct tern_conn *c, tcp_seg *s);
/* NOP NOP TS(10): the options of nearly every segment, as one word. */
#define TS_LAYOUT_WORD 0x0101080au
/* The usual header: 20 bytes and the TS_LAYOUT_WORD options. */
#define TCP_TS_HDR_LEN (TCP_HDR_LEN + TCP_TS_LEN)
/* The fixed fields of the segment at b->data: len bytes, a doff-byte
 * header, from src. */
static inline void seg_fields(tcp_seg *s, tern_buf *b, uint32_t len,
                              uint32_t doff, uint32_t src)
{
    const uint8_t *h = b->data;
    s->sport = rd16(h);
    s->dport = rd16(h + 2);
    s->flags = h[13];
    s->seq = rd32(h + 4);
    s->ack = rd32(h + 8);
    s->wnd = rd16(h + 14);
    s->src = src;
    s->ip6 = NULL;
    s->buf = b;
    s->payload = b->data + doff;
    s->len = len - doff;
}
/* Options in the TS_LAYOUT_WORD layout. */
static inline void seg_ts_opts(tcp_seg *s, const uint8_t *opt)
{
    s->o.has = OPT_TS;
    s->o.nsack = 0;
    s->o.tsval = rd32(opt + 4);
    s->o.tsecr = rd32(opt + 8);
}
/* The TCP half of the one-pass receive's field tests (both families), on the header h of a
 * segment known to be at least 32 bytes long: a 32-byte header with the
 * NOP NOP TS layout, neither SYN nor RST, not flagged bad by the NIC.
 * Then parse could not drop it but for the checksum and zero ports (which
 * no conn has: tcp_input_parsed tests them). */
static inline bool tcp_common_shape(const tern_buf *b, const uint8_t *h)
{
    /* data offset 8 words (the reserved bits are free), SYN and RST */
    bool shape = (rd16(h + 12) & 0xf006u) == (TCP_TS_HDR_LEN / 4) << 12;
    return shape && rd32(h + TCP_HDR_LEN) == TS_LAYOUT_WORD &&
           !(b->flags & TERN_BUF_RX_L4_CSUM_BAD);
}

/* Whether the received segment in b needs no checksum test (the NIC's, or
 * fuzzing). */
static inline bool csum_checked(const tern_stack *st, const tern_buf *b)
{
    return (b->flags & TERN_BUF_RX_L4_CSUM_OK) || st->cfg.fuzz_skip_csum;
}
/* Whether the len-byte segment after the 34 bytes of Ethernet and IPv4
 * headers in the flat frame b (the header's sum already checked) sums
 * right with its pseudo header's sum ps. With the driver's sum of
 * everything after the Ethernet header (RX_SUM) and no bytes after the
 * segment (Ethernet padding), the segment's sum is that sum: a good IPv4
 * header sums to -0. */
static inline bool raw_sum_ok(const tern_stack *st, const tern_buf *b,
                              uint32_t len, uint32_t ps)
{
    enum { HDRS = ETH_HDR_LEN + IP4_HDR_LEN };
    /* one flag test on the usual path (neither flag), as csum_checked */
    if (b->flags & (TERN_BUF_RX_L4_CSUM_OK | TERN_BUF_RX_SUM)) {
        if (b->flags & TERN_BUF_RX_L4_CSUM_OK)
            return true;
        if (b->len == HDRS + len)
            return csum_fold64((uint64_t)ps + b->rx_sum) == 0xffff;
    } else if (st->cfg.fuzz_skip_csum) {
        return true;
    }
    return tern_csum_partial(b->data + HDRS, len, ps) == 0xffff;
}
/* Whether the checksum of the len-byte segment at h (in b, maybe a chain)
 * is good, or need not be checked. ps: the pseudo header's sum
 * (ip4_pseudo_sum32: both sums take it unfolded and fold mod 0xffff). */
static inline bool csum_ok(const tern_stack *st, const tern_buf *b,
                           const uint8_t *h, uint32_t len, uint32_t ps)
{
    return csum_checked(st, b) ||
           (b->frag ? csum_chain(b, h, len, ps)
                    : tern_csum_partial(h, len, ps)) == 0xffff;
}

/* The usual frame, as tcp_input_frame takes it: b->data at its Ethernet
 * header, the IPv4 header and the TCP shape checked; a len-byte segment
 * from src (not yet tested with ip4_src_ok) whose pseudo header sums to
 * ps. A bad TCP checksum: hands the frame, unchanged, to eth_input (as
 * tern_input would). Else counts ip_in, moves b->data to the TCP header
 * (b->len: len) and handles the segment like a parsed one (prediction,
 * or tcp_input_parsed), the fast path reading the header in place.
 * Consumes b; returns true. */
bool tcp_input_raw(tern_stack *st, tern_buf *b, uint32_t src, uint32_t len,
                   uint32_t ps);
/*
 * The IPv6 one-pass receive, from tcp_input_frame when its IPv4 tests
 * fail: one buffer to our MAC, IPv6 with TCP right after the fixed
 * header, the usual TCP shape (as tcp_common_shape), a segment that an
 * established conn of that exact tuple predicts (tcp_predicted), to an
 * address of ours (ip6_conn_addr_ok) and with a good TCP sum. Counts
 * ip6_in and handles it as the prediction of the layered path would
 * (ip6_input, tcp_input6, tcp_input_fast), reading the header in place;
 * returns true. Anything else: false, nothing changed, nothing summed
 * but a segment with a bad sum, and eth_input takes the frame (its
 * general path decides, counts and answers). The source needs no test:
 * it is the peer of an established conn, whose SYN or SYN-ACK passed
 * ip6_input's tests.
 */
bool tcp_input_frame6(tern_stack *st, tern_buf *b);
/* tcp_input_raw's way out: c (NULL: none) and that segment, parsed and
 * handed to the general path (input.c). Returns true. */
bool tcp_input_parsed(tern_stack *st, struct tern_conn *c, tern_buf *b,
                      uint32_t src);
/* Rate-limited challenge ACK (RFC 5961). */
void tcp_challenge_ack(tern_stack *st, struct tern_conn *c);

/* ---- isn.c ---- */
uint32_t tcp_isn(tern_stack *st, uint32_t laddr, uint16_t lport,
                 uint32_t raddr, uint16_t rport, uint64_t now);
/* The same over IPv6 addresses (RFC 6528 names the whole 4-tuple). */
uint32_t tcp_isn6(tern_stack *st, const uint8_t laddr[16], uint16_t lport,
                  const uint8_t raddr[16], uint16_t rport, uint64_t now);
/* The ISN of a segment's tuple (a SYN), either family. */
uint32_t tcp_isn_seg(tern_stack *st, const tcp_seg *s);
/* RFC 6437 flow label of an IPv6 tuple: a keyed hash, 20 bits, never 0
 * (0 when cfg.no_flow_label). */
uint32_t tcp_flow_label(tern_stack *st, const uint8_t laddr[16],
                        uint16_t lport, const uint8_t raddr[16],
                        uint16_t rport);
uint32_t tcp_cookie_make(tern_stack *st, const tcp_seg *s, uint32_t mss_idx,
                         uint64_t now);
/* Returns the MSS of a valid cookie (ack-1) or 0. */
uint16_t tcp_cookie_check(tern_stack *st, const tcp_seg *s, uint32_t cookie,
                          uint64_t now);
uint32_t tcp_cookie_mss_idx(uint16_t mss);
/* RFC 6056 ephemeral port; 0 when none is free. IPv6: raddr6 and laddr6
 * (else NULL) name the tuple, raddr is ignored. */
uint16_t tcp_pick_port(tern_stack *st, uint32_t raddr, uint16_t rport,
                       const uint8_t *raddr6, const uint8_t *laddr6);

/* ---- rss.c ---- */
/* Queue a received 4-tuple (reply direction src=peer) lands on. */
uint16_t rss_queue_of(const tern_config *cfg, uint32_t src, uint32_t dst,
                      uint16_t sport, uint16_t dport);
/* The same for an IPv6 4-tuple: Toeplitz over the 16-byte source and
 * destination and the ports (36 bytes, as NICs hash TCP over IPv6). */
uint16_t rss_queue_of6(const tern_config *cfg, const uint8_t src[16],
                       const uint8_t dst[16], uint16_t sport, uint16_t dport);

/* The IPv4 ID of the conn's next datagram: a counter of its own from a
 * start set by the keyed ISN (RFC 7739 5.3, RFC 6864), so an outsider
 * can neither count the stack's traffic nor guess another conn's IDs. */
static inline uint16_t tcp_ip_id(struct tern_conn *c)
{
    return (uint16_t)(c->iss + c->ip_id++);
}

#endif
