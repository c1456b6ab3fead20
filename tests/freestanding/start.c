/* A program with no libc at all: it provides the four memory functions a
 * C compiler may call by itself, builds a tern instance and exits through
 * a raw system call. Linking it proves the core needs nothing else. */
#include "tern.h"

/* volatile keeps the compiler from turning these loops into calls to
 * themselves. */
void *memcpy(void *dst, const void *src, unsigned long n)
{
    volatile unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--)
        *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, unsigned long n)
{
    volatile unsigned char *d = dst;
    const unsigned char *s = src;
    if (d < s)
        while (n--)
            *d++ = *s++;
    else
        while (n--)
            d[n] = s[n];
    return dst;
}

void *memset(void *dst, int c, unsigned long n)
{
    volatile unsigned char *d = dst;
    while (n--)
        *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, unsigned long n)
{
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y)
            return *x < *y ? -1 : 1;
    return 0;
}

static _Alignas(64) unsigned char instance[64u << 20];
static _Alignas(64) unsigned char bufmem[4][2048];
static tern_buf bufs[4];
static unsigned nfree;

static tern_buf *take(void *ctx)
{
    (void)ctx;
    if (!nfree)
        return 0;
    tern_buf *b = &bufs[--nfree];
    b->head = bufmem[nfree];
    b->size = sizeof bufmem[0];
    b->data = b->head + TERN_HEADROOM;
    b->len = 0;
    b->refs = 1;
    return b;
}

static void give(void *ctx, tern_buf *b)
{
    (void)ctx;
    (void)b;
    nfree++;
}

static unsigned sent;
static tern_stack *st;
static void tx(void *ctx, tern_buf **frames, unsigned n)
{
    (void)ctx;
    for (unsigned i = 0; i < n; i++)
        tern_buf_release(st, frames[i]);
    sent += n;
}

static void sys_exit(long code)
{
#if defined(__x86_64__)
    __asm__ volatile("syscall" : : "a"(60), "D"(code) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x0 __asm__("x0") = code;
    register long x8 __asm__("x8") = 93;
    __asm__ volatile("svc 0" : : "r"(x0), "r"(x8) : "memory");
#endif
    for (;;) {
    }
}

/* The kernel enters _start with the stack not aligned for a call. */
__attribute__((force_align_arg_pointer)) void _start(void)
{
    tern_config cfg;
    tern_config_defaults(&cfg);
    cfg.ip = TERN_IP4(198, 18, 0, 2);
    cfg.buf_ops.alloc = take;
    cfg.buf_ops.free = give;
    cfg.tx = tx;
    nfree = 4;
    int err = 0;
    if (tern_stack_size(&cfg) > sizeof instance)
        sys_exit(2);
    st = tern_stack_init(instance, sizeof instance, &cfg, &err);
    if (!st)
        sys_exit(3);
    /* Exercise a transmit path: a UDP datagram needs ARP first. */
    tern_addr peer = tern_addr_v4(TERN_IP4(198, 18, 0, 1));
    tern_udp_send(st, 1000, &peer, 7, "x", 1);
    tern_poll(st, 0);
    sys_exit(tern_get_counters(st)->arp_request_out == 1 ? 0 : 4);
}
