/* libFuzzer: a sequence of IPv6 frames into a stack with IPv6 on
 * (2001:db8::2/64, its link-local address, router advertisements
 * accepted, checksums not verified), so state built by one frame
 * (neighbor entries, fragments held, a router, an autoconf address) meets
 * the next. Input: records [gap in seconds (1 byte)][length (2 bytes)]
 * [frame], the Ethernet header given or, when the frame does not start
 * with one, ours and the IPv6 EtherType put in front. After the last
 * frame two minutes pass (every timer runs); then no buffer may be
 * leaked. Buffers are a fixed array: the pool runs dry too. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_pool.h"
#include "tern.h"

#define BUFS 256

static void *mem;
static size_t mem_size;
static tern_stack *cur;

static const uint8_t us_mac[6] = {2, 0, 0, 0, 0, 2};

static void fz_tx(void *ctx, tern_buf **frames, unsigned n)
{
    (void)ctx;
    for (unsigned i = 0; i < n; i++)
        tern_buf_release(cur, frames[i]);
}

static tern_stack *make(void)
{
    tern_config c;
    tern_config_defaults(&c);
    c.ip = TERN_IP4(198, 18, 0, 2);
    memcpy(c.mac, us_mac, 6);
    static const uint8_t a[16] = {0x20, 1, 0xd, 0xb8, [15] = 2};
    memcpy(c.ip6[0], a, 16);
    c.ip6_prefix_len[0] = 64;
    c.n_ip6 = 1;
    c.ip6_accept_ra = true;
    fz_pool_use(&c, BUFS);
    c.tx = fz_tx;
    c.max_conns = 4;
    c.max_udp = 2;
    c.nd_entries = 8;
    c.nd_pending = 8;
    c.reasm_slots = 4;
    c.fuzz_skip_csum = true;
    if (!mem) {
        mem_size = tern_stack_size(&c);
        mem = aligned_alloc(TERN_STACK_ALIGN, (mem_size + 63) & ~(size_t)63);
    }
    cur = tern_stack_init(mem, mem_size, &c, NULL);
    if (!cur)
        abort();
    return cur;
}

static void feed(tern_stack *st, const uint8_t *f, size_t len, uint64_t now)
{
    tern_buf *b = fz_alloc(NULL);
    if (!b)
        return;
    size_t room = FZ_BUF_SIZE - TERN_HEADROOM;
    /* no Ethernet header of its own (not to us, a group or broadcast):
     * ours and IPv6 in front */
    if (len < 14 || (f[0] != 2 && f[0] != 0x33 && f[0] != 0xff)) {
        memcpy(b->data, us_mac, 6);
        memset(b->data + 6, 0, 6);
        b->data[6] = 2;
        b->data[12] = 0x86;
        b->data[13] = 0xdd;
        b->len = 14;
    }
    if (len > room - b->len)
        len = room - b->len;
    memcpy(b->data + b->len, f, len);
    b->len += (uint32_t)len;
    tern_input(st, &b, 1, now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tern_stack *st = make();
    uint64_t now = TERN_NS_PER_SEC;
    tern_poll(st, now);
    while (size >= 3) {
        now += (uint64_t)data[0] * TERN_NS_PER_SEC / 4;
        size_t len = (size_t)data[1] << 8 | data[2];
        data += 3;
        size -= 3;
        if (len > size)
            len = size;
        feed(st, data, len, now);
        tern_poll(st, now);
        data += len;
        size -= len;
    }
    for (int i = 0; i < 120; i++)
        tern_poll(st, now += TERN_NS_PER_SEC);
    tern_stack_fini(st);
    if (fz_outstanding() != 0)
        abort();
    return 0;
}
