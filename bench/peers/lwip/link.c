/* link.c - the in-memory link between two lwIP interfaces (link.h). */
#include "link.h"

#include <string.h>

#include "lwip/etharp.h"
#include "lwip/init.h"
#include "lwip/pbuf.h"
#include "lwip/timeouts.h"
#include "netif/ethernet.h"

#define QUEUE 4096                  /* frames in flight per direction */

typedef struct dir {
    struct pbuf *q[QUEUE];
    unsigned head, tail;
} dir;

static struct netif nif[2];
static ip_addr_t addr[2];
static dir dirs[2];                 /* dirs[s]: frames towards side s */
static uint64_t drops;
static uint64_t next_tmr;

/* A frame from side `from`: copied into a fresh pbuf for the other side. */
static err_t link_output(struct netif *n, struct pbuf *p)
{
    int to = n == &nif[0] ? 1 : 0;
    dir *d = &dirs[to];
    if (d->tail - d->head == QUEUE) {
        drops++;
        return ERR_OK;              /* a full wire drops, as a NIC would */
    }
    struct pbuf *c = pbuf_alloc(PBUF_RAW, p->tot_len, PBUF_RAM);
    if (!c) {
        drops++;
        return ERR_OK;
    }
    pbuf_copy(c, p);
    d->q[d->tail++ % QUEUE] = c;
    return ERR_OK;
}

static err_t nif_init(struct netif *n)
{
    int side = n == &nif[0] ? 0 : 1;
    static const uint8_t mac[2][6] = {{0x02, 0, 0, 0, 0, 1}, {0x02, 0, 0, 0, 0, 2}};
    n->hwaddr_len = 6;
    memcpy(n->hwaddr, mac[side], 6);
    n->mtu = 1500;
    n->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET |
               NETIF_FLAG_LINK_UP;
    n->name[0] = 'm';
    n->name[1] = (char)('0' + side);
    n->output = etharp_output;
    n->linkoutput = link_output;
    return ERR_OK;
}

void lwip_link_init(void)
{
    lwip_init();
    ip4_addr_t mask, gw;
    IP4_ADDR(&mask, 255, 255, 255, 0);
    IP4_ADDR(&gw, 0, 0, 0, 0);
    for (int s = 0; s < 2; s++) {
        IP_ADDR4(&addr[s], 198, 18, 0, s + 1);
        netif_add(&nif[s], ip_2_ip4(&addr[s]), &mask, &gw, NULL, nif_init,
                  ethernet_input);
        netif_set_up(&nif[s]);
        netif_set_link_up(&nif[s]);
    }
    /* Each side learns the other's MAC first: lwIP queues only a few
     * frames per unresolved address, and a dropped SYN would cost the
     * connection a retransmission timeout. */
    for (int s = 0; s < 2; s++)
        etharp_request(&nif[s], ip_2_ip4(&addr[!s]));
    for (int turn = 0; turn < 4; turn++)
        lwip_link_deliver(QUEUE);
}

struct netif *lwip_link_netif(int side)
{
    return &nif[side];
}

const ip_addr_t *lwip_link_addr(int side)
{
    return &addr[side];
}

unsigned lwip_link_deliver(unsigned burst)
{
    unsigned n = 0;
    for (int s = 0; s < 2; s++) {
        dir *d = &dirs[s];
        unsigned end = d->tail - d->head > burst ? d->head + burst : d->tail;
        while (d->head != end) {
            struct pbuf *p = d->q[d->head++ % QUEUE];
            if (nif[s].input(p, &nif[s]) != ERR_OK)
                pbuf_free(p);
            n++;
        }
    }
    return n;
}

void lwip_link_timers(uint64_t now_ns)
{
    if (now_ns < next_tmr)
        return;
    next_tmr = now_ns + 1000000;    /* lwIP's finest timer is 250 ms */
    sys_check_timeouts();
}

uint64_t lwip_link_drops(void)
{
    return drops;
}
