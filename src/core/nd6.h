/* nd6.h - what the Neighbor Discovery files (nd6.c: the neighbor cache,
 * nd6_dad.c: DAD, router advertisements, MLD) share. */
#ifndef TERN_ND6_H
#define TERN_ND6_H

#include "ip6.h"

/* options (RFC 4861 4.6) */
#define ND_OPT_SLLA 1
#define ND_OPT_TLLA 2
#define ND_OPT_PREFIX 3
#define ND_OPT_MTU 5
/* advertisement flags, byte 4 */
#define ND_NA_R 0x80
#define ND_NA_S 0x40
#define ND_NA_O 0x20

/* Options in [p, p + len): each with a nonzero length inside. */
bool nd6_opts_ok(const uint8_t *p, uint32_t len);
/* A neighbor's MAC seen in a solicitation or advertisement from it:
 * create the entry STALE, or make it STALE with the new MAC. */
void nd6_learn_lla(tern_stack *st, const uint8_t ip[16], const uint8_t mac[6]);

/* nd6_dad.c */
/* The clock started: DAD of every tentative address and the MLD reports. */
void nd6_dad_begin(tern_stack *st);
uint64_t nd6_dad_poll(tern_stack *st, uint64_t now);
/* Someone else uses (or is testing) address a: a tentative one becomes a
 * duplicate and is never used; for one in use the conflict is counted. */
void nd6_dad_conflict(tern_stack *st, struct ip6_addr *a);
void nd6_ra_input(tern_stack *st, const uint8_t *m, uint32_t len, const ip6_rx *ip);
void mld_query_input(tern_stack *st, const uint8_t *m, uint32_t len, const ip6_rx *ip);

#endif
