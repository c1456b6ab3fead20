/*
 * tern.h - the public interface of the tern TCP/IP stack core.
 *
 * tern is a freestanding C11 library: it includes nothing but <stdint.h>,
 * <stddef.h> and <stdbool.h>, never allocates, never starts a thread and never
 * calls the operating system.  An embedder (your program, or tern's own
 * Linux runtime in src/rt) owns everything the stack touches:
 *
 *   - memory: ask tern_stack_size() how much an instance needs for a config,
 *     hand that much to tern_stack_init();
 *   - packet buffers: the stack borrows them through tern_buf_ops (alloc and
 *     free) and hands received payload to you in place (zero copy);
 *   - time: every entry point takes `now` in nanoseconds from any monotonic
 *     clock; tern_poll() returns the next deadline so your loop can sleep or
 *     busy-poll;
 *   - threads: one instance is used by one thread; run one instance per core
 *     and nothing is shared.
 *
 * The loop of an embedder looks like this:
 *
 *     for (;;) {
 *         n = my_nic_rx(frames, 32);                 // your driver
 *         tern_input(st, frames, n, now());          // callbacks run here
 *         deadline = tern_poll(st, now());           // timers, tx flush
 *     }
 *
 * Frames the stack sends leave through the `tx` function of the config, in
 * bursts, at the end of tern_input(), tern_poll() and tern_flush().  A reply
 * sent from inside a receive callback therefore leaves in the same burst as
 * the ACK it carries.
 *
 * Addresses and ports in this API are in host byte order
 * (e.g. TERN_IP4(198, 18, 0, 1)); on the wire tern converts them itself.
 */
#ifndef TERN_H
#define TERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TERN_VERSION_MAJOR 0
#define TERN_VERSION_MINOR 1

/* An IPv4 address in host byte order from its four dotted parts. */
#define TERN_IP4(a, b, c, d)                                             \
    (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | \
     (uint32_t)(d))

/*
 * An IP address of either family: what every call of this API takes and
 * reports (connect, UDP send and receive, ping, connection info).
 *   - IPv4: family TERN_AF_INET, u.v4 in host byte order, as TERN_IP4 and
 *     tern_ip4_parse give it;
 *   - IPv6: family TERN_AF_INET6, u.v6 the 16 bytes in network order (the
 *     order they are written in text: 2001:db8::1 is 20 01 0d b8 0 ... 01).
 * Build one with tern_addr_v4 / tern_addr_v6 / tern_addr_parse; pad and the
 * unused bytes of the union are zero in addresses the stack hands out, but
 * compare with tern_addr_eq rather than memcmp.
 */
enum tern_af { TERN_AF_INET = 4, TERN_AF_INET6 = 6 };
typedef struct tern_addr {
    uint8_t family;          /* TERN_AF_INET or TERN_AF_INET6 */
    uint8_t pad[3];
    union {
        uint32_t v4;         /* host order */
        uint8_t v6[16];      /* network order */
    } u;
} tern_addr;                 /* 20 bytes */

/* Longest text tern_addr_format writes, with the terminating NUL
 * (an IPv6 address with an embedded IPv4 one, as inet6 INET6_ADDRSTRLEN). */
#define TERN_ADDR_STRLEN 46

/* The address of each family from its parts (all other bytes zero). */
tern_addr tern_addr_v4(uint32_t host_order);
tern_addr tern_addr_v6(const uint8_t bytes[16]);
/* Same family and same address (pad and unused bytes are ignored). */
bool tern_addr_eq(const tern_addr *a, const tern_addr *b);
/* Parse dotted IPv4 ("198.18.0.1") or IPv6 text as RFC 4291 section 2.2
 * writes it ("2001:db8::1", "::ffff:198.18.0.1"; hex digits of either
 * case). No brackets, no port, no zone ("%eth0"), no prefix ("/64").
 * Returns false on anything else and leaves *out unchanged. */
bool tern_addr_parse(const char *text, tern_addr *out);
/* Write the address as text into out (at least TERN_ADDR_STRLEN bytes) and
 * return out: dotted IPv4, or IPv6 in the RFC 5952 form (lower case, no
 * leading zeros, the longest run of two or more zero groups as "::",
 * the first such run on a tie; ::ffff:a.b.c.d for IPv4-mapped addresses).
 * An address of unknown family gives "?". */
char *tern_addr_format(const tern_addr *a, char *out);

/* Bytes every transmit buffer must keep free in front of `data` so the
 * stack can prepend Ethernet, IP and TCP headers (14 + 60 + 60, rounded). */
#define TERN_HEADROOM 192

/* Time: nanoseconds of a monotonic clock chosen by the embedder. */
#define TERN_NS_PER_MS 1000000ull
#define TERN_NS_PER_SEC 1000000000ull
/* Returned by tern_poll() when no timer is armed. */
#define TERN_NEVER UINT64_MAX

/* ------------------------------------------------------------------------ */
/* Packet buffers                                                            */
/* ------------------------------------------------------------------------ */

/* Flags on a tern_buf. RX_* are set by the driver on received frames, TX_*
 * by the stack on frames it asks the driver to send. */
enum tern_buf_flag {
    /* Receive: the NIC verified the IPv4 header checksum. */
    TERN_BUF_RX_IP_CSUM_OK = 1u << 0,
    /* Receive: the NIC verified the TCP/UDP checksum (good). */
    TERN_BUF_RX_L4_CSUM_OK = 1u << 1,
    /* Receive: the NIC found the TCP/UDP checksum bad; the frame is dropped. */
    TERN_BUF_RX_L4_CSUM_BAD = 1u << 2,
    /* Transmit: the NIC must fill the IPv4 header checksum. */
    TERN_BUF_TX_IP_CSUM = 1u << 3,
    /* Transmit: the NIC must finish the TCP/UDP checksum. The checksum field
     * holds the pseudo-header sum (Linux CHECKSUM_PARTIAL convention); the
     * header offsets are in l2_len/l3_len. */
    TERN_BUF_TX_L4_CSUM = 1u << 4,
    /* Transmit: the NIC must cut this TCP frame into tso_mss sized segments. */
    TERN_BUF_TX_TSO = 1u << 5,
    /* Receive: the frame is several TCP segments merged by LRO/GRO. */
    TERN_BUF_RX_LRO = 1u << 6,
    /* Receive: rx_sum holds the Internet checksum sum of the frame's bytes
     * after its first 14 (the untagged Ethernet header) to its end, as
     * tern_csum_fold(tern_csum_partial(data + 14, len - 14, 0)) gives it:
     * Linux's CHECKSUM_COMPLETE. A driver that copies frames computes it
     * in the same pass (tern_csum_copy); the stack then checks a flat TCP
     * segment's checksum from it and the headers, without reading the
     * payload again. */
    TERN_BUF_RX_SUM = 1u << 7,
};

/*
 * One packet buffer, owned by the embedder and lent to the stack.
 *
 * The embedder places a tern_buf in front of (or beside) its buffer memory,
 * e.g. in an mbuf's private area. `head`/`size` bound the memory, `data`/`len`
 * are the valid bytes.  A frame may be a chain of buffers linked by `frag`
 * (scatter-gather); only drivers that declare TERN_CAP_SG receive chains.
 *
 * Reference counting: `refs` counts owners. tern_buf_ref() adds one,
 * tern_buf_release() drops one and hands the buffer back through
 * tern_buf_ops.free when the count reaches zero.  A driver's alloc must
 * return buffers with refs == 1.  Nothing here is atomic: a buffer belongs to
 * one thread at a time.
 */
typedef struct tern_buf {
    uint8_t *data;          /* first valid byte */
    uint32_t len;           /* valid bytes at data (this segment) */
    uint32_t size;          /* bytes of memory at head */
    uint8_t *head;          /* start of the memory */
    struct tern_buf *frag;  /* next segment of the same frame, or NULL */
    struct tern_buf *next;  /* queue link; belongs to whoever queues it */
    uint16_t refs;          /* number of owners */
    uint16_t flags;         /* enum tern_buf_flag */
    uint16_t tso_mss;       /* TX_TSO: payload bytes per segment */
    uint8_t l2_len;         /* TX offloads: bytes of the Ethernet header */
    uint8_t l3_len;         /* TX offloads: bytes of the IP header */
    uint8_t l4_len;         /* TX_TSO: bytes of the TCP header */
    uint8_t pad_;
    uint16_t rx_sum;        /* RX_SUM: the frame's sum after byte 14 */
    uint32_t cb32;          /* scratch too (TCP send queue: last transmit time) */
    uint64_t cb[3];         /* scratch for the stack while it holds the buffer */
    void *user;             /* the embedder's own (e.g. its mbuf) */
} tern_buf;

/* refs of a buffer that sits on a tern_buf_stack (free, in the pool). */
#define TERN_BUF_FREE_REFS 0xFFFFu

/*
 * Optional: the pool's LIFO of free buffers, which the stack then pops and
 * pushes inline instead of calling alloc/free for every buffer (a pool
 * whose alloc/free are this LIFO saves two indirect calls per buffer).
 * free[top - 1] is the next buffer to give; free has cap entries.  Buffers
 * on it have refs == TERN_BUF_FREE_REFS.  The stack
 *   - pops only a top buffer whose refs is TERN_BUF_FREE_REFS and sets it
 *     up as tern_buf_fresh() does; otherwise (empty stack, or a free buffer
 *     that was written to: use after free) it calls alloc, which decides;
 *   - pushes a buffer whose refs fell to 0 when it lies in [base, base +
 *     span), setting refs to TERN_BUF_FREE_REFS and flags to 0; otherwise
 *     it calls free (which catches a foreign buffer).
 * The push does not test for room: free must have an entry for every
 * buffer in [base, base + span) (cap at least their number). A buffer whose
 * refs just fell to 0 is not on the LIFO, so such a LIFO always has room
 * for it. The embedder's own alloc/free must use the same LIFO the same
 * way. A LIFO over no buffers (span 0) makes the stack call alloc and free
 * for every buffer.
 */
typedef struct tern_buf_stack {
    struct tern_buf **free;
    uint32_t top;           /* free buffers on the LIFO */
    uint32_t cap;           /* entries of free: at least the buffers in
                               [base, base + span) */
    const uint8_t *base;    /* the pool's buffers lie in [base, base+span) */
    size_t span;
} tern_buf_stack;

/* How the stack gets and returns buffers. Both run on the instance's
 * thread. alloc returns a buffer whose data points TERN_HEADROOM bytes (or
 * more) past head with len 0 and refs 1, or NULL when the pool is empty (the
 * stack counts that and copes). free takes back a buffer whose refs fell to
 * 0. stack is optional (NULL: alloc/free for every buffer). */
typedef struct tern_buf_ops {
    tern_buf *(*alloc)(void *ctx);
    void (*free)(void *ctx, tern_buf *buf);
    void *ctx;
    tern_buf_stack *stack;
} tern_buf_ops;

/* What a pool's alloc does to a free buffer it hands out: data at
 * TERN_HEADROOM, no length, chain or queue link, one owner, no flags or
 * offload fields. */
static inline tern_buf *tern_buf_fresh(tern_buf *b)
{
    b->data = b->head + TERN_HEADROOM;
    b->len = 0;
    b->frag = NULL;
    b->next = NULL;
    b->refs = 1;
    b->flags = 0;
    b->tso_mss = 0;
    b->l2_len = b->l3_len = b->l4_len = 0;
    return b;
}

/* Pop the LIFO's top buffer, fresh, when there is one and it is still
 * marked free; NULL otherwise (the caller then asks alloc). */
static inline tern_buf *tern_buf_stack_pop(tern_buf_stack *s)
{
    if (s->top == 0)
        return NULL;
    tern_buf *b = s->free[s->top - 1];
    if (b->refs != TERN_BUF_FREE_REFS)
        return NULL;
    s->top--;
    return tern_buf_fresh(b);
}

/* A compile-time check that reads the same in C11 and C++11. */
#ifdef __cplusplus
#define TERN_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define TERN_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* tern_buf_mark_free stores refs and flags together. */
TERN_STATIC_ASSERT(offsetof(tern_buf, flags) ==
                       offsetof(tern_buf, refs) + sizeof(uint16_t),
                   "flags follows refs");

/* refs = TERN_BUF_FREE_REFS and flags = 0 (unused while free) as one 32-bit
 * store: gcc merges the two 16-bit stores but loads the merged constant
 * from memory first, one instruction more on every push. */
static inline void tern_buf_mark_free(tern_buf *b)
{
#if defined(__GNUC__)
    const uint16_t pair[2] = {TERN_BUF_FREE_REFS, 0};
    __builtin_memcpy(&b->refs, pair, sizeof pair);
#else
    b->refs = TERN_BUF_FREE_REFS;
    b->flags = 0;
#endif
}

/* Whether b lies in the LIFO's pool, [base, base + span): one compare. */
static inline bool tern_buf_stack_spans(const tern_buf_stack *s,
                                        const tern_buf *b)
{
    return (uintptr_t)b - (uintptr_t)s->base < s->span;
}

/* Push b (refs fell to 0) when it lies in the LIFO's pool; false otherwise
 * (the caller then calls free). No room test: the LIFO holds every buffer
 * of its pool (see tern_buf_stack). */
static inline bool tern_buf_stack_push(tern_buf_stack *s, tern_buf *b)
{
    if (!tern_buf_stack_spans(s, b))
        return false;
    tern_buf_mark_free(b);
    s->free[s->top++] = b;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

/* What the NIC (driver) can do. The stack does in software whatever is not
 * declared. */
enum tern_cap {
    TERN_CAP_RX_IP_CSUM = 1u << 0,  /* sets TERN_BUF_RX_IP_CSUM_OK */
    TERN_CAP_RX_L4_CSUM = 1u << 1,  /* sets TERN_BUF_RX_L4_CSUM_OK/BAD */
    TERN_CAP_TX_IP_CSUM = 1u << 2,  /* honours TERN_BUF_TX_IP_CSUM */
    TERN_CAP_TX_L4_CSUM = 1u << 3,  /* honours TERN_BUF_TX_L4_CSUM */
    TERN_CAP_TSO = 1u << 4,         /* honours TERN_BUF_TX_TSO */
    TERN_CAP_LRO = 1u << 5,         /* may deliver TERN_BUF_RX_LRO frames */
    TERN_CAP_SG = 1u << 6,          /* sends and receives frag chains */
};

/* Transmit a burst. The driver takes over one reference of each frame (it
 * calls tern_buf_release() when the NIC is done) and must take all n; a
 * driver whose ring is full drops and counts, as a NIC would. */
typedef void (*tern_tx_fn)(void *ctx, tern_buf **frames, unsigned n);

typedef struct tern_stack tern_stack;
typedef struct tern_conn tern_conn;
typedef struct tern_udp tern_udp;

/* Why a TCP connection ended (tern_callbacks.closed). */
enum tern_close_reason {
    TERN_CLOSE_NORMAL = 0,     /* both sides closed, all data acknowledged */
    TERN_CLOSE_RESET = 1,      /* the peer sent a valid RST */
    TERN_CLOSE_TIMEOUT = 2,    /* retransmissions or keep-alives exhausted */
    TERN_CLOSE_REFUSED = 3,    /* active open answered by RST */
    TERN_CLOSE_ABORTED = 4,    /* tern_tcp_abort() by the application */
    TERN_CLOSE_NO_ROUTE = 5,   /* ARP never resolved the next hop */
};

/* Metadata of a received UDP datagram. */
typedef struct tern_udp_meta {
    tern_addr src, dst;      /* the sender, and our address it was sent to */
    uint16_t src_port, dst_port;
} tern_udp_meta;

/*
 * Application callbacks. Any may be NULL. They run inside tern_input(),
 * tern_poll() or tern_flush() on the instance's thread; they may call any
 * tern_* function of the same instance (send, close...).  `user` is the
 * pointer set with tern_tcp_set_user() / given at listen, connect or bind.
 */
typedef struct tern_callbacks {
    /* A passive open completed on a listener. Return the user pointer for the
     * new connection. The connection is usable at once. */
    void *(*accepted)(tern_stack *st, tern_conn *c, void *listener_user);
    /* An active open completed (SYN-ACK received). */
    void (*connected)(tern_stack *st, tern_conn *c, void *user);
    /*
     * In-order payload arrived. `data`/`len` point into `buf`, which is
     * valid only during the call unless the application takes a reference
     * with tern_buf_ref(). Return how many of the `len` bytes are consumed
     * now; bytes not consumed stay counted against the receive window until
     * tern_tcp_consumed() reports them, so a reader that keeps buffers slows
     * the sender instead of losing data.
     */
    size_t (*recv)(tern_stack *st, tern_conn *c, void *user, tern_buf *buf,
                   const uint8_t *data, size_t len);
    /* `bytes` more of the sent stream were acknowledged by the peer: send
     * buffers covering them have been released and send space reopened. */
    void (*acked)(tern_stack *st, tern_conn *c, void *user, size_t bytes);
    /* A send of this connection was refused or cut short because the
     * buffer pool was down to its receive reserve
     * (tern_config.rx_reserve_bufs) or empty; there is room again, so
     * retry it now.
     * Runs once per refusal, at the end of an input burst or in
     * tern_poll. Sends refused by the connection's own snd_buf are
     * retried from `acked` instead: its data in flight brings ACKs. */
    void (*writable)(tern_stack *st, tern_conn *c, void *user);
    /* The peer sent FIN: no more data will arrive (half-close). */
    void (*peer_closed)(tern_stack *st, tern_conn *c, void *user);
    /* The connection is gone; `c` is invalid after this returns. */
    void (*closed)(tern_stack *st, tern_conn *c, void *user, int reason);
    /* A UDP datagram arrived on a bound port; same buffer rules as recv.
     * `data`/`len` are its payload in `buf`. A datagram larger than one
     * buffer (reassembled from IPv4 fragments, up to 64 KiB) arrives as a
     * chain: `data`/`len` are its first part, and the rest follows in
     * buf->frag, buf->frag->frag, ... (each segment's bytes at its own
     * data/len). buf->frag is NULL for every datagram that fits in one
     * buffer. tern_udp_len() gives the whole payload's length and
     * tern_udp_copy() copies it out contiguous. */
    void (*udp_recv)(tern_stack *st, tern_udp *sock, void *user,
                     const tern_udp_meta *meta, tern_buf *buf,
                     const uint8_t *data, size_t len);
    /* One of our IPv6 addresses left Duplicate Address Detection:
     * `state` is TERN_ADDR_USABLE (it may be used from now on, e.g. to
     * connect) or TERN_ADDR_DUPLICATE (another node uses it; it never
     * will be). See tern_addr_state. */
    void (*addr_state)(tern_stack *st, const tern_addr *addr, int state);
} tern_callbacks;

/* Optional log hook: level 0 = error, 1 = warning, 2 = info, 3 = debug. */
typedef void (*tern_log_fn)(void *ctx, int level, const char *msg);

/* Congestion control algorithms. */
enum tern_cc {
    TERN_CC_CUBIC = 0,     /* RFC 9438, the default */
    TERN_CC_NEWRENO = 1,   /* RFC 5681 / RFC 6582 */
    TERN_CC_BBR = 2,       /* model-based, after BBR v1 (no pacing: the
                            * window alone; docs/tcp.md). Adds 552 B per
                            * connection slot to the instance. */
};

/*
 * Everything an instance needs. Fill with tern_config_defaults() and change
 * what you need. Zero in a sizing field means "the default".
 */
typedef struct tern_config {
    /* Interface identity. */
    uint8_t mac[6];
    uint32_t ip;              /* our IPv4 address; 0 = no IPv4 (an
                                 IPv6-only stack: IPv4 and ARP frames are
                                 dropped as an unknown EtherType and IPv4
                                 destinations get TERN_EAFNOSUPPORT) */
    uint8_t prefix_len;       /* on-link prefix, e.g. 24 */
    uint32_t gateway;         /* default route, 0 = none (on-link only) */
    uint16_t mtu;             /* IP MTU, default 1500 */
    uint32_t caps;            /* enum tern_cap */

    /* Embedder hooks. */
    tern_buf_ops buf_ops;
    tern_tx_fn tx;
    void *tx_ctx;
    tern_callbacks cb;
    tern_log_fn log;
    void *log_ctx;
    int log_level;

    /* Secret key for initial sequence numbers, SYN cookies and port
     * randomisation (RFC 6528, RFC 6056). Fill with random bytes. */
    uint8_t secret[16];

    /* Sizing: all memory is reserved at init; exhaustion is counted. */
    uint32_t max_conns;       /* TCP connections, default 1024. A connection
                                 in TIME_WAIT gives its slot back at once
                                 and keeps a small record instead (below) */
    uint32_t max_time_wait;   /* TIME_WAIT records (48 B each), default
                                 max_conns. When full, the oldest record is
                                 recycled (tcp_time_wait_recycled): new
                                 connections never wait for TIME_WAIT */
    uint32_t max_listeners;   /* listening ports, default 16 */
    uint32_t max_half_open;   /* SYN_RECEIVED before SYN cookies, default 256 */
    uint32_t accept_backlog;  /* unaccepted per listener (informational) */
    uint32_t max_udp;         /* bound UDP ports, default 16 */
    uint32_t arp_entries;     /* neighbor (ARP) cache size, default 64; at
                                 most half of it resolving at once */
    uint32_t arp_pending;     /* frames waiting for ARP, default 64; at most
                                 3/4 of them for one address */
    uint32_t tx_burst;        /* frames per tx call, default 32 */
    uint32_t rx_burst;        /* frames per tern_input call the driver asks
                                 for, default 32: a call this long had more
                                 queued behind it (see tern_input) */

    /* TCP behaviour. */
    uint32_t rcv_buf;         /* receive window bytes per conn, default 256 KiB */
    uint32_t snd_buf;         /* send queue bytes per conn, default 256 KiB */
    uint32_t rx_reserve_bufs; /* free pool buffers tern_tcp_send leaves to
                                 input, counted on buf_ops.stack: set it
                                 (an eighth of the pool is a good value)
                                 when that LIFO holds every free buffer of
                                 the pool, so that data queued for slow
                                 readers never takes the buffers input
                                 needs (among them the ACKs that free the
                                 queues). 0, the default: no reserve (for a
                                 LIFO that is only a cache in front of the
                                 pool, whose top says nothing of it; and
                                 without buf_ops.stack).
                                 Below twice the reserve the pool is under
                                 pressure: only connections with less than
                                 16 KiB queued get buffers (a new request's
                                 answer goes out while slow readers' queues
                                 wait), and none below the reserve itself.
                                 A refused send is cut short or fails
                                 (-TERN_ENOBUFS, counted in
                                 tcp_send_rx_reserve) and cb.writable
                                 follows once the pool is out of pressure.
                                 Buffers the app allocates itself
                                 (tern_buf_alloc, tern_tcp_send_buf) are
                                 not held back */
    uint32_t ooo_max_segs;    /* out-of-order segments kept per conn, default
                                 rcv_buf / 1024 (at least 64). Each holds
                                 its receive buffer */
    uint32_t ooo_max_bufs;    /* out-of-order segments kept by all conns
                                 together; more are dropped (counted in
                                 tcp_drop_ooo_full) and sent again by the
                                 peer. Default: half of buf_ops.stack's cap
                                 (the pool's buffers) when there is one, so
                                 held out-of-order data never takes the
                                 buffer the segment filling the gap needs;
                                 else no limit: then keep conns x
                                 ooo_max_segs well below the pool, or such a
                                 conn stalls and times out */
    uint32_t time_wait_ms;    /* TIME_WAIT duration, default 2 * 30 s */
    uint32_t rto_min_ms;      /* default 200 */
    uint32_t rto_max_ms;      /* default 60000 */
    uint32_t rto_initial_ms;  /* default 1000; at most rto_max_ms */
    uint32_t max_retries;     /* RTO expiries before giving up, default 8 */
    uint32_t syn_retries;     /* SYN retransmissions, default 5 */
    uint32_t delack_ms;       /* delayed ACK timer, default 40; 0 = default */
    bool no_delayed_ack;      /* ACK every segment at once */
    bool nagle;               /* Nagle's algorithm, default off */
    bool no_sack;             /* do not offer/accept SACK */
    bool no_timestamps;       /* do not offer/accept RFC 7323 timestamps */
    bool no_window_scale;     /* do not offer/accept window scaling */
    bool no_flow_label;       /* IPv6: send flow label 0 instead of a keyed
                                 hash of each connection's addresses and
                                 ports (RFC 6437) */
    uint8_t cc;               /* enum tern_cc */
    uint32_t keepalive_ms;    /* idle before probes, 0 = off */

    /* TCP Fast Open (RFC 7413; docs/tcp.md). tfo_server: listeners hand
     * out cookies and take the data of a SYN that carries a valid one
     * (cb.accepted and cb.recv run before the handshake completes); off
     * by default. tfo_max_pending: such connections still in SYN_RECEIVED
     * at once, default 16; beyond it a SYN's data is left for the usual
     * handshake (tcp_tfo_pending_full). tfo_cache_entries: destinations
     * whose cookie the client side (tern_tcp_connect_data) remembers,
     * default 16, the least recently used replaced. */
    bool tfo_server;
    uint32_t tfo_max_pending;
    uint32_t tfo_cache_entries;

    /* IPv4 reassembly: datagrams being reassembled at once (default 8;
     * the oldest is evicted when a new one needs a slot), how long an
     * incomplete one is kept (default 30 s), and whether to reassemble at
     * all (when off, every fragment is dropped, counted in
     * ip_drop_fragment). A reassembled UDP or ICMP datagram over one
     * buffer is a chain of buffers (see cb.udp_recv); TCP, which never
     * fragments, must fit in one (else ip_drop_frag_too_big). */
    uint32_t reasm_slots;
    uint32_t reasm_timeout_ms;
    bool no_reassembly;

    /* ICMP. */
    uint32_t icmp_rate_per_sec;  /* errors sent per second, default 100
                                    (ICMPv6 errors have a bucket of their
                                    own with the same rate) */

    /* IPv6. On when n_ip6 > 0 or ip6_enable is set; otherwise IPv6 frames
     * are dropped as an unknown EtherType and the stack is IPv4 only.
     * ip6[] are global addresses (network order) with their on-link
     * prefix lengths (64 when 0). The link-local fe80::/64 address made
     * from the MAC (EUI-64) is added unless ip6_no_link_local. Every
     * address goes through Duplicate Address Detection (RFC 4862) first:
     * dad_transmits Neighbor Solicitations a second apart (default 1) and
     * the address is usable when none was answered; ip6_no_dad makes them
     * usable at once (tests, links where DAD is done elsewhere). */
#define TERN_MAX_IP6 4
    uint8_t ip6[TERN_MAX_IP6][16];
    uint8_t ip6_prefix_len[TERN_MAX_IP6];
    unsigned n_ip6;
    bool ip6_enable;
    bool ip6_no_link_local;
    bool ip6_no_dad;
    uint8_t dad_transmits;
    uint8_t ip6_gateway[16];  /* default router (link-local), all zero = none */
    bool ip6_accept_ra;       /* learn a default router and an autoconf
                                 prefix from Router Advertisements; off by
                                 default */
    uint32_t nd_entries;      /* IPv6 neighbor cache size, default 64; at
                                 most half of it resolving at once */
    uint32_t nd_pending;      /* frames waiting for neighbor resolution,
                                 default 64; at most 3/4 for one address */

    /* RSS: if rss_queues > 1, active opens pick local ports whose Toeplitz
     * hash (with rss_key and rss_reta) maps to rss_queue. */
    uint16_t rss_queues;
    uint16_t rss_queue;
    uint8_t rss_key[40];
    uint16_t rss_reta_size;   /* entries in rss_reta, <= 512 */
    uint16_t rss_reta[512];

    /* Testing: skip software checksum verification of received frames
     * (fuzzers use it to reach deeper code). Never set in production. */
    bool fuzz_skip_csum;
} tern_config;

/* Fill `cfg` with the defaults above (all other fields zero). */
void tern_config_defaults(tern_config *cfg);

/* ------------------------------------------------------------------------ */
/* Instance life cycle                                                       */
/* ------------------------------------------------------------------------ */

/* Error codes returned (negated) by functions that can fail, or stored in
 * *err. tern_strerror() names them in words for messages. */
enum tern_err {
    TERN_OK = 0,
    TERN_EINVAL = 1,     /* bad argument or configuration */
    TERN_ENOMEM = 2,     /* a table is full or no buffer was available */
    TERN_EADDRINUSE = 3, /* port already bound or listening */
    TERN_ENOTCONN = 4,   /* connection not in a state that allows this */
    TERN_EAGAIN = 5,     /* no send space now; wait for `acked` */
    TERN_EMSGSIZE = 6,   /* datagram too large (MTU for TCP, one buffer or
                            64 KiB for fragmented UDP/ICMP) */
    TERN_ENOBUFS = 7,    /* the buffer pool is empty or down to its receive
                            reserve; wait for `writable` */
    TERN_EAFNOSUPPORT = 8, /* address family not supported (an IPv6
                              destination on a config without IPv6, an
                              IPv4 one on a config without cfg.ip) */
};

/* A short text for a tern_err, positive or negated (e.g. -TERN_EAGAIN gives
 * "no send space"); "unknown error" for other values. */
const char *tern_strerror(int err);
/* A short text for a tern_close_reason, e.g. "no route (ARP unanswered)". */
const char *tern_close_reason_name(int reason);

/* Bytes an instance needs for `cfg`: always a multiple of TERN_STACK_ALIGN,
 * so aligned_alloc(TERN_STACK_ALIGN, tern_stack_size(&cfg)) is valid. */
size_t tern_stack_size(const tern_config *cfg);
/* The alignment the instance memory must have (a cache line). */
#define TERN_STACK_ALIGN 64

/* What tern_stack_init would refuse in `cfg`, in words (e.g. "no address:
 * set ip (IPv4), or ip6[] (IPv6) ..."), or NULL when the config is valid.
 * A stack needs an IPv4 address (cfg.ip), an IPv6 one (cfg.ip6[], or
 * ip6_enable with the link-local address), or both. */
const char *tern_config_check(const tern_config *cfg);

/*
 * Build an instance in `mem` (tern_stack_size(cfg) bytes, TERN_STACK_ALIGN
 * aligned). Returns NULL and sets *err (if not NULL) to a tern_err when the
 * config is invalid (TERN_EINVAL, also for misaligned mem; see
 * tern_config_check for why) or mem too small (TERN_ENOMEM). The config is
 * copied; nothing else is allocated.
 */
tern_stack *tern_stack_init(void *mem, size_t size, const tern_config *cfg,
                            int *err);

/* Release every buffer the instance still holds (frames waiting for ARP,
 * TCP send, retransmit and out-of-order queues) back through buf_ops.free,
 * without sending anything. Call before freeing the instance memory and the
 * pool; the instance must not be used afterwards. */
void tern_stack_fini(tern_stack *st);

/* Our addresses and whether they can be used yet. cfg.ip is usable at
 * once. Each IPv6 address (cfg.ip6[], the link-local one, one from a
 * Router Advertisement) is tentative while Duplicate Address Detection
 * runs: from the first tern_input/tern_poll, cfg.dad_transmits
 * solicitations a second apart (about 1 s by default; MLD reports go
 * first). A tentative address receives nothing and is no source: an
 * IPv6 tern_tcp_connect/tern_udp_send that needs it gets TERN_EINVAL
 * until it is usable, so wait for TERN_ADDR_USABLE before connecting
 * (cb.addr_state tells when; tern_poll's deadline covers the DAD steps). An address another node
 * answered for, or was testing at the same time, is duplicate and never
 * used (counted in nd_dad_conflict); cfg.ip6_no_dad skips DAD. */
enum tern_addr_state {
    TERN_ADDR_NOT_OURS = 0,
    TERN_ADDR_TENTATIVE = 1,
    TERN_ADDR_USABLE = 2,
    TERN_ADDR_DUPLICATE = 3,
};
/* The state of address a on this instance (TERN_ADDR_NOT_OURS for any
 * address it does not have, and for NULL). */
int tern_addr_state(const tern_stack *st, const tern_addr *a);
/* Our addresses (IPv4 first, then IPv6 in any state but not ours),
 * at most max of them into out (and their tern_addr_state into state
 * when not NULL); returns how many there are, which may exceed max. */
unsigned tern_addr_list(const tern_stack *st, tern_addr *out, int *state,
                        unsigned max);

/*
 * Feed a burst of received Ethernet frames. The stack takes one reference of
 * each (it releases or keeps them). Callbacks run inside; queued transmit
 * frames are flushed before it returns.
 *
 * Hand over whole bursts, as the driver gave them: a connection gets at most
 * one pure ACK per call (plus one every 4 full segments inside it, so that a
 * sender whose whole flight came in one call is not left waiting on one lost
 * ACK). A call of cfg.rx_burst frames or more (default 32: set it to the burst
 * your driver asks for) means the driver had more queued, so the ACKs inside
 * it stretch to a quarter window (at most 64 KiB): bulk receive then sends
 * about one ACK per call. Feeding frames one at a time works but costs an
 * ACK every second segment.
 */
void tern_input(tern_stack *st, tern_buf **frames, unsigned n, uint64_t now);

/*
 * tern_input in three steps, for a driver that makes each frame ready just
 * before the stack reads it (a copying link that lands frame k into the
 * buffer frame k - 1 just freed, so both copies stay in L1): begin with the
 * burst's frame count n (the ACK policy above counts it), then each frame,
 * then end (ACKs, callbacks' output and the transmit flush). A frame the
 * driver drops after begin is simply not passed. Callbacks run inside
 * tern_input_one as inside tern_input; tern_input and tern_poll wait until
 * end.
 */
void tern_input_begin(tern_stack *st, unsigned n, uint64_t now);
void tern_input_one(tern_stack *st, tern_buf *frame);
void tern_input_end(tern_stack *st);

/*
 * Run timers due at `now` (retransmissions, delayed ACKs, ARP, TIME_WAIT)
 * and flush transmit frames. Returns the absolute time of the next deadline
 * or TERN_NEVER. Call it at least by that time.
 */
uint64_t tern_poll(tern_stack *st, uint64_t now);

/*
 * Hand the frames waiting in the transmit burst to cfg.tx now.
 *
 * Sends inside a callback (during tern_input, tern_poll or tern_flush) are
 * gathered: the segments are built when the call returns, full-sized, with
 * the ACK riding on them. Sends outside callbacks (from your loop, another
 * event source, right after tern_tcp_connect) build their segments at once,
 * so two sends of 10 bytes there make two 10-byte segments: send a message
 * whole in one call, or set cfg.nagle. Those frames wait in the transmit
 * burst until it fills or until tern_flush, tern_input or tern_poll: call
 * tern_flush after sending outside callbacks so they leave now.
 */
void tern_flush(tern_stack *st);

/* Take or drop a reference on a buffer (see tern_buf). A buffer holds at
 * most 65,534 owners: refs is 16 bits and 0xFFFF marks a buffer in a pool
 * (TERN_BUF_FREE_REFS), so an application that keeps more references to
 * one buffer must copy instead. */
static inline void tern_buf_ref(tern_buf *b) { b->refs++; }
void tern_buf_release(tern_stack *st, tern_buf *b);

/* A buffer from the embedder's pool via the instance's buf_ops, ready for
 * payload at data (TERN_HEADROOM bytes of headroom), or NULL. */
tern_buf *tern_buf_alloc(tern_stack *st);
/* Up to n such buffers into bufs; returns how many (fewer when the pool
 * runs dry). One call for a batch a sender fills and then queues with
 * tern_tcp_send_bufs. */
unsigned tern_buf_alloc_n(tern_stack *st, tern_buf **bufs, unsigned n);

/* The instance's `user` pointer, for callbacks that need their context. */
void tern_set_user(tern_stack *st, void *user);
void *tern_get_user(const tern_stack *st);

/* ------------------------------------------------------------------------ */
/* Neighbors (ARP)                                                           */
/* ------------------------------------------------------------------------ */

/*
 * A static neighbor: frames to `ip` (a host on the subnet, or the gateway)
 * go to `mac` without ARP, and nothing received changes or expires the
 * entry. Replaces a learned entry for ip (frames waiting for its
 * resolution leave at once). Returns 0, -TERN_EINVAL for an address that
 * is no unicast host or a multicast MAC, or -TERN_ENOMEM when the cache
 * slots ip may use all hold static entries (cfg.arp_entries sizes it).
 */
int tern_neigh_add_static(tern_stack *st, uint32_t ip, const uint8_t mac[6]);
/* Forget the neighbor entry of ip, static or learned (frames waiting for
 * it are dropped). Returns 0, or -TERN_EINVAL when there is none. */
int tern_neigh_del(tern_stack *st, uint32_t ip);

/* ------------------------------------------------------------------------ */
/* UDP                                                                       */
/* ------------------------------------------------------------------------ */

/* Receive datagrams for `port` through cb.udp_recv. NULL when the port is
 * taken or the table is full (*err says which). */
tern_udp *tern_udp_bind(tern_stack *st, uint16_t port, void *user, int *err);
void tern_udp_unbind(tern_stack *st, tern_udp *sock);

/* Inside cb.udp_recv: the length of the whole payload (len plus the
 * buffers chained on buf->frag), and a copy of up to cap bytes of it into
 * out (returns the bytes copied). */
size_t tern_udp_len(const tern_buf *buf, size_t len);
size_t tern_udp_copy(const tern_buf *buf, const uint8_t *data, size_t len,
                     void *out, size_t cap);

/* Send `len` bytes copied from `data` to dst, IPv4 or IPv6
 * (-TERN_EAFNOSUPPORT for a family the config has no address of,
 * -TERN_EINVAL for a NULL dst or an unknown family).
 * A datagram larger than the MTU
 * leaves in fragments (it must fit in one buffer; -TERN_EMSGSIZE
 * otherwise, -TERN_ENOBUFS when the pool has too few buffers for the
 * fragments, counted in ip_drop_frag_out). Returns 0 or -tern_err. */
int tern_udp_send(tern_stack *st, uint16_t src_port, const tern_addr *dst,
                  uint16_t dst_port, const void *data, size_t len);

/* Send a buffer the application filled (payload at buf->data, headroom
 * kept). The stack owns the reference on success and on failure. dst as
 * for tern_udp_send. */
int tern_udp_send_buf(tern_stack *st, uint16_t src_port, const tern_addr *dst,
                      uint16_t dst_port, tern_buf *buf);

/* ------------------------------------------------------------------------ */
/* ICMP                                                                      */
/* ------------------------------------------------------------------------ */

/* Send an ICMP echo request (ping); over the MTU it leaves in fragments,
 * as tern_udp_send. Replies are counted in counters.icmp_echo_reply_in
 * (icmp6_echo_reply_in for an IPv6 dst, which needs IPv6 configured, else
 * -TERN_EAFNOSUPPORT). Returns 0 or -tern_err (dst as for tern_udp_send). */
int tern_icmp_echo(tern_stack *st, const tern_addr *dst, uint16_t id,
                   uint16_t seq, const void *data, size_t len);

/* ------------------------------------------------------------------------ */
/* TCP                                                                       */
/* ------------------------------------------------------------------------ */

/* Accept connections on `port`; cb.accepted runs for each. Returns 0 or
 * -tern_err. */
int tern_tcp_listen(tern_stack *st, uint16_t port, void *user);
int tern_tcp_unlisten(tern_stack *st, uint16_t port);

/* Open a connection. local_port 0 picks one (RFC 6056, RSS-aware). The
 * handle is valid at once; cb.connected or cb.closed follows. NULL on error
 * (*err set): TERN_EINVAL for port 0 or a destination that is not a unicast
 * host (0/8, 127/8, multicast, class E, broadcast, our own address) or off
 * the subnet without a gateway, or a NULL dst; TERN_EAFNOSUPPORT for an
 * IPv6 dst on a config without IPv6 or an IPv4 one on a config without
 * cfg.ip; TERN_EADDRINUSE; TERN_ENOMEM when
 * the conn table is full. */
tern_conn *tern_tcp_connect(tern_stack *st, const tern_addr *dst,
                            uint16_t dst_port, uint16_t local_port, void *user,
                            int *err);

/*
 * tern_tcp_connect with TCP Fast Open (RFC 7413): `len` bytes copied from
 * `data` are queued whole before the SYN leaves (all or nothing: len at
 * most cfg.snd_buf, else TERN_EMSGSIZE; TERN_ENOBUFS when the pool cannot
 * hold them). When the instance holds a cookie for dst (from an
 * earlier connect_data to it), the SYN carries the cookie and the first
 * bytes of the data (up to the peer's MSS less 40), and the server hands
 * them to its application one round trip earlier. Otherwise the SYN asks
 * for a cookie (remembered for the next connect, cfg.tfo_cache_entries
 * destinations), and the data follows the handshake as after
 * tern_tcp_connect. Data the server does not acknowledge in its SYN-ACK
 * (a bad cookie, a server over its limit) is sent again at once, so the
 * peer always receives the whole stream once. len 0 only asks for a
 * cookie. cb.connected follows as for tern_tcp_connect; the counters
 * tcp_tfo_* tell what happened. Other errors as tern_tcp_connect.
 */
tern_conn *tern_tcp_connect_data(tern_stack *st, const tern_addr *dst,
                                 uint16_t dst_port, uint16_t local_port,
                                 void *user, const void *data, size_t len,
                                 int *err);

/*
 * Queue `len` bytes copied from `data`. Returns bytes taken or -tern_err.
 * A partial send is normal: when the send buffer (cfg.snd_buf) fills, fewer
 * than len bytes are taken (0 with no space). Keep the rest and send it
 * when cb.acked reports space again (tern_tcp_send_space says how much);
 * an echo that returns len from cb.recv after a short send loses bytes
 * (examples/core_echo.c keeps them). When the buffer pool is low
 * (cfg.rx_reserve_bufs) the send is cut short or fails with
 * -TERN_ENOBUFS: then cb.writable says when to retry (a connection with
 * nothing in flight gets no cb.acked). Outside callbacks each call builds
 * its own segments; see tern_flush.
 */
long tern_tcp_send(tern_stack *st, tern_conn *c, const void *data, size_t len);

/*
 * Queue a buffer the application built (payload at buf->data, buf->len
 * bytes, TERN_HEADROOM kept in front). No copy: the stack keeps the buffer
 * until the peer acknowledges it, then releases it. Returns 0 (the stack owns
 * the reference) or -tern_err (the caller keeps it).
 */
int tern_tcp_send_buf(tern_stack *st, tern_conn *c, tern_buf *buf);

/*
 * tern_tcp_send_buf for an application that computed the payload's
 * checksum while writing it: `payload_sum` is the Internet checksum of the
 * buf->len bytes at buf->data, as tern_csum_partial(buf->data, buf->len, 0)
 * returns it (any value that folds to the same 16 bits will do). The stack
 * then sums only the headers, on the first transmission and on every
 * retransmission, and never reads the payload for the checksum. The buffer
 * must not change while the stack holds it. A wrong sum is trusted as a
 * NIC trusts bad offload metadata: the segments carry a bad checksum and
 * the peer drops them (its tcp_drop_csum), so the connection stalls and
 * times out. A core built with TERN_CHECK_APP_CSUM defined recomputes the
 * sum and refuses a wrong one with -TERN_EINVAL (for debugging). With
 * TERN_CAP_TX_L4_CSUM the NIC sums and the value is not used. Returns as
 * tern_tcp_send_buf.
 */
int tern_tcp_send_buf_sum(tern_stack *st, tern_conn *c, tern_buf *buf,
                          uint32_t payload_sum);

/*
 * Queue up to n application-built buffers in order: what n calls of
 * tern_tcp_send_buf_sum (sums[i] the payload sum of bufs[i]) or, with
 * sums NULL, of tern_tcp_send_buf would do, with the connection's tests
 * and the output made once for the batch. Queueing stops at the first
 * buffer that does not fit the send space or is not a valid one. Returns
 * how many were queued, 1..n (the stack owns those; the caller keeps the
 * rest), or -tern_err when none was: the error tern_tcp_send_buf would
 * give for bufs[0] (-TERN_EINVAL for n == 0).
 *
 * A queued buffer belongs to the stack (this holds for tern_tcp_send_buf
 * and tern_tcp_send_buf_sum too): its data and len change as headers are
 * prepended for each transmission and as the peer acknowledges parts of
 * it, and it is released when fully acknowledged. Do not read a buffer's
 * len after the call to learn what was sent: add up the lens before it,
 * and keep nothing but the pointer you may no longer use.
 */
long tern_tcp_send_bufs(tern_stack *st, tern_conn *c, tern_buf *const *bufs,
                        const uint32_t *sums, unsigned n);

/* Bytes that may be queued now without exceeding snd_buf. */
size_t tern_tcp_send_space(const tern_stack *st, const tern_conn *c);

/* Report `bytes` of earlier received data as consumed (see cb.recv): the
 * receive window reopens by that much. A recv callback that returned less
 * than len must call this once the rest is used, or the window stays
 * closed and the peer stops sending. */
void tern_tcp_consumed(tern_stack *st, tern_conn *c, size_t bytes);

/* Half-close: send FIN after queued data. The connection stays readable. */
int tern_tcp_shutdown(tern_stack *st, tern_conn *c);
/* Close: shutdown, and no more data is delivered. cb.closed follows. */
int tern_tcp_close(tern_stack *st, tern_conn *c);
/* Send RST and free the connection now; cb.closed runs before return. */
void tern_tcp_abort(tern_stack *st, tern_conn *c);

void tern_tcp_set_user(tern_conn *c, void *user);
void *tern_tcp_get_user(const tern_conn *c);

/* Connection details for display and tests. */
typedef struct tern_tcp_info {
    tern_addr local, remote;
    uint16_t local_port, remote_port;
    uint8_t state;            /* enum tern_tcp_state */
    uint32_t mss;             /* effective send MSS */
    uint32_t srtt_us, rttvar_us, rto_ms;
    uint32_t cwnd, ssthresh;  /* bytes */
    uint32_t snd_wnd, rcv_wnd;
    uint8_t snd_wscale, rcv_wscale;
    bool sack, timestamps;
    uint64_t bytes_sent, bytes_acked, bytes_received;
    uint32_t retransmits;
} tern_tcp_info;

enum tern_tcp_state {
    TERN_TCP_CLOSED = 0, TERN_TCP_LISTEN, TERN_TCP_SYN_SENT,
    TERN_TCP_SYN_RECEIVED, TERN_TCP_ESTABLISHED, TERN_TCP_FIN_WAIT_1,
    TERN_TCP_FIN_WAIT_2, TERN_TCP_CLOSE_WAIT, TERN_TCP_CLOSING,
    TERN_TCP_LAST_ACK, TERN_TCP_TIME_WAIT,
};

void tern_tcp_get_info(const tern_stack *st, const tern_conn *c,
                       tern_tcp_info *info);
/* Name of a tern_tcp_state, e.g. "ESTABLISHED". */
const char *tern_tcp_state_name(int state);

/* The connection's send MSS: payload bytes in a full segment (after the
 * peer's MSS option, IP options and timestamps). A sender that sizes its
 * own buffers (tern_tcp_send_bufs) fills them to this. 0 for NULL. */
uint32_t tern_tcp_mss(const tern_conn *c);

/* Connections in use (all states) plus TIME_WAIT records. */
uint32_t tern_tcp_conn_count(const tern_stack *st);
/* Connections the app closed whose FIN exchange is not finished yet
 * (FIN_WAIT_1, FIN_WAIT_2, CLOSING, LAST_ACK): a program about to exit
 * keeps calling tern_input / tern_poll until this is 0 (or a limit of a
 * few RTOs passes), or the peer may never see our FIN. Walks every
 * connection slot. */
uint32_t tern_tcp_closing_count(const tern_stack *st);
/* TIME_WAIT records held (part of tern_tcp_conn_count). */
uint32_t tern_tcp_time_wait_count(const tern_stack *st);

/* ------------------------------------------------------------------------ */
/* Counters                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Every counter of an instance, as an X-macro so embedders can print names
 * and values: #define P(n) printf("%s %llu\n", #n, c->n); TERN_COUNTERS(P)
 * Names ending in _drop_<reason> count dropped input by reason.
 */
#define TERN_COUNTERS(X)                                                    \
    /* Ethernet */                                                          \
    X(eth_in) X(eth_out) X(eth_drop_short) X(eth_drop_not_ours)            \
    X(eth_drop_ethertype) X(tx_drop_nobuf) X(tx_frames_dropped)            \
    /* ARP */                                                               \
    X(arp_in) X(arp_out) X(arp_request_in) X(arp_reply_in)                 \
    X(arp_request_out) X(arp_reply_out) X(arp_drop_short)                  \
    X(arp_drop_format) X(arp_drop_not_ours) X(arp_drop_bad_sender)         \
    X(arp_drop_addr_conflict) X(arp_cache_full) X(arp_pending_full)        \
    X(arp_pending_expired) X(arp_entries_expired) X(arp_evicted)           \
    X(arp_request_limited) X(arp_resolve_failed)                           \
    X(arp_evicted_resolved)  /* of arp_evicted: learned or STALE ones */    \
    X(arp_tcp_confirms)  /* entries kept reachable by TCP's progress */     \
    /* IPv4 */                                                              \
    X(ip_in) X(ip_out) X(ip_drop_short) X(ip_drop_version)                 \
    X(ip_drop_hdr_len) X(ip_drop_total_len) X(ip_drop_csum)                \
    X(ip_drop_not_ours) X(ip_drop_bad_src) X(ip_drop_options)              \
    X(ip_drop_fragment) X(ip_drop_proto) X(ip_drop_no_route)               \
    X(ip_drop_ttl) X(ip_drop_too_big)                                       \
    /* IPv4 reassembly */                                                   \
    X(ip_frag_in) X(ip_reasm_ok) X(ip_drop_frag_bad) X(ip_drop_frag_overlap)\
    X(ip_drop_frag_dup) X(ip_drop_frag_too_big) X(ip_frag_timeout)         \
    X(ip_frag_evicted)                                                      \
    /* IPv4 fragmentation on output: datagrams cut, fragments made, and   \
     * datagrams dropped for want of buffers */                            \
    X(ip_frag_out) X(ip_frag_created) X(ip_drop_frag_out)                  \
    /* ICMP */                                                              \
    X(icmp_in) X(icmp_out) X(icmp_drop_short) X(icmp_drop_csum)            \
    X(icmp_echo_in) X(icmp_echo_reply_out) X(icmp_echo_reply_in)           \
    X(icmp_unreach_out) X(icmp_rate_limited) X(icmp_error_in)              \
    X(icmp_drop_type) X(icmp_drop_quote) X(icmp_drop_quote_seq)            \
    X(icmp_pmtu_floored) X(icmp_echo_reply_drop)                           \
    /* IPv6 */                                                              \
    X(ip6_in) X(ip6_out) X(ip6_drop_short) X(ip6_drop_version)             \
    X(ip6_drop_len) X(ip6_drop_not_ours) X(ip6_drop_bad_src)               \
    X(ip6_drop_hop_limit) X(ip6_drop_ext_hdr) X(ip6_drop_ext_chain)        \
    X(ip6_drop_option) X(ip6_drop_routing) X(ip6_drop_proto)               \
    X(ip6_drop_no_route) X(ip6_drop_too_big) X(ip6_drop_no_l4)             \
    X(ip6_drop_tentative) X(ip6_drop_mcast_mac)                            \
    /* IPv6 fragments: in, reassembled, atomic, drops, out */              \
    X(ip6_frag_in) X(ip6_reasm_ok) X(ip6_frag_atomic) X(ip6_drop_frag_bad) \
    X(ip6_drop_frag_overlap) X(ip6_drop_frag_too_big) X(ip6_frag_timeout)  \
    X(ip6_frag_evicted) X(ip6_drop_frag_chain) X(ip6_frag_out)             \
    X(ip6_frag_created) X(ip6_drop_frag_out)                               \
    /* ICMPv6 */                                                            \
    X(icmp6_in) X(icmp6_out) X(icmp6_drop_short) X(icmp6_drop_csum)        \
    X(icmp6_drop_type) X(icmp6_echo_in) X(icmp6_echo_reply_out)            \
    X(icmp6_echo_reply_in) X(icmp6_echo_reply_drop) X(icmp6_error_in)      \
    X(icmp6_error_out) X(icmp6_rate_limited) X(icmp6_drop_quote)           \
    X(icmp6_ptb_in) X(icmp6_pmtu_floored)                                  \
    /* Neighbor Discovery, DAD, router discovery, MLD */                    \
    X(nd_in) X(nd_drop_bad) X(nd_ns_in) X(nd_na_in) X(nd_ns_out)           \
    X(nd_na_out) X(nd_cache_full) X(nd_pending_full) X(nd_pending_expired) \
    X(nd_evicted) X(nd_resolve_failed) X(nd_request_limited)               \
    X(nd_tcp_confirms)  /* entries kept reachable by TCP's progress */      \
    X(nd_dad_ok) X(nd_dad_conflict) X(nd_ra_in) X(nd_rs_out)               \
    X(mld_report_out) X(mld_query_in)                                      \
    /* UDP */                                                               \
    X(udp_in) X(udp_out) X(udp_drop_short) X(udp_drop_len)                 \
    X(udp_drop_csum) X(udp_drop_no_port) X(udp_drop_port0)                 \
    /* TCP */                                                               \
    X(tcp_in) X(tcp_out) X(tcp_drop_short) X(tcp_drop_csum)                \
    X(tcp_drop_hdr_len) X(tcp_drop_flags) X(tcp_drop_port0)                \
    X(tcp_drop_no_conn) X(tcp_drop_out_of_window) X(tcp_drop_paws)         \
    X(tcp_drop_paws_old_ack)                                               \
    X(tcp_drop_bad_ack) X(tcp_drop_options) X(tcp_drop_ooo_full)           \
    X(tcp_drop_conn_table_full) X(tcp_drop_listen_overflow)                \
    X(tcp_active_opens) X(tcp_passive_opens) X(tcp_attempt_fails)          \
    X(tcp_estab_resets) X(tcp_conns_established) X(tcp_conns_closed)       \
    X(tcp_retransmits) X(tcp_rto_expiries) X(tcp_tail_loss_probes) X(tcp_fast_retransmits)         \
    X(tcp_rack_lost) X(tcp_rack_recoveries) X(tcp_rack_timeouts)           \
    X(tcp_dsacks_out) X(tcp_dsacks_in) X(tcp_reordering_seen)              \
    X(tcp_sack_recoveries) X(tcp_dup_acks_in) X(tcp_ooo_segments)          \
    X(tcp_ooo_bytes) X(tcp_challenge_acks) X(tcp_challenge_acks_limited)   \
    X(tcp_syn_cookies_sent) X(tcp_syn_cookies_ok) X(tcp_syn_cookies_bad)   \
    X(tcp_rst_in) X(tcp_rst_out) X(tcp_timeouts) X(tcp_keepalive_probes)   \
    X(tcp_zero_window_probes) X(tcp_delayed_acks) X(tcp_pure_acks_out)     \
    X(tcp_data_segs_in) X(tcp_data_segs_out) X(tcp_bytes_in)               \
    X(tcp_bytes_out) X(tcp_dup_data_in) X(tcp_time_wait_reuse)             \
    X(tcp_nobuf) X(tcp_time_wait_recycled) X(tcp_time_wait_acks)           \
    X(tcp_send_rx_reserve) X(tcp_writable_calls)                           \
    /* TCP Fast Open (RFC 7413), server then client side */                \
    X(tcp_tfo_cookie_req_in) X(tcp_tfo_cookie_bad) X(tcp_tfo_syn_data_in)  \
    X(tcp_tfo_pending_full) X(tcp_tfo_cookie_req_out)                      \
    X(tcp_tfo_syn_data_out) X(tcp_tfo_syn_data_acked)                      \
    X(tcp_tfo_syn_data_unacked) X(tcp_tfo_cookies_cached)                  \
    /* segments with URG set (data delivered inline, RFC 6093) */          \
    X(tcp_urg_in)

typedef struct tern_counters {
#define TERN_COUNTER_FIELD_(n) uint64_t n;
    TERN_COUNTERS(TERN_COUNTER_FIELD_)
#undef TERN_COUNTER_FIELD_
} tern_counters;

/* The live counters of an instance (read at any time on its thread). */
const tern_counters *tern_get_counters(const tern_stack *st);

/* ------------------------------------------------------------------------ */
/* Helpers the core exports because embedders need them too                 */
/* ------------------------------------------------------------------------ */

/* Internet checksum (RFC 1071) of len bytes folded into 16 bits, not
 * inverted, starting from `sum`. Works on odd lengths and any alignment. */
uint32_t tern_csum_partial(const void *data, size_t len, uint32_t sum);
uint16_t tern_csum_fold(uint32_t sum);
/* Copy len bytes from src to dst (which do not overlap) and return their
 * sum plus `sum`, as tern_csum_partial(dst, len, sum) would: one pass over
 * the bytes, for a driver that copies received frames (TERN_BUF_RX_SUM). */
uint32_t tern_csum_copy(void *dst, const void *src, size_t len, uint32_t sum);

/* Toeplitz hash (Microsoft RSS) of `len` bytes with a 40-byte key. */
uint32_t tern_toeplitz(const uint8_t key[40], const uint8_t *data, size_t len);

/* Format a host-order IPv4 address as dotted text into out (>= 16 bytes);
 * returns out. Parse dotted text; returns false on bad input. */
char *tern_ip4_format(uint32_t ip, char *out);
bool tern_ip4_parse(const char *text, uint32_t *ip);

#ifdef __cplusplus
}
#endif

#endif /* TERN_H */
