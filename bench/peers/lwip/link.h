/* link.h - two lwIP Ethernet interfaces in one process joined by an
 * in-memory link, as tern's mem driver joins two tern stacks: every frame
 * a stack sends is copied into a new pbuf (what an lwIP driver does with a
 * received frame) and queued; lwip_link_deliver hands the queued frames to
 * the other interface's input. No checksum is done by the link: lwIP
 * computes and checks them in software. */
#ifndef LWIP_PEER_LINK_H
#define LWIP_PEER_LINK_H

#include <stdint.h>

#include "lwip/ip_addr.h"
#include "lwip/netif.h"

#define LINK_CLIENT 0      /* 198.18.0.1 */
#define LINK_SERVER 1      /* 198.18.0.2 */

/* lwip_init and the two interfaces, up. */
void lwip_link_init(void);
struct netif *lwip_link_netif(int side);
const ip_addr_t *lwip_link_addr(int side);
/* One receive burst per side, as tern's loop does per turn: up to `burst`
 * of the frames queued towards each side before the call (frames the
 * stacks send meanwhile wait for the next turn). Returns how many. */
unsigned lwip_link_deliver(unsigned burst);
/* lwIP's timers, when due (call every loop turn; it reads the clock). */
void lwip_link_timers(uint64_t now_ns);
/* Frames the link dropped (queue full, no pbuf). */
uint64_t lwip_link_drops(void);

#endif
