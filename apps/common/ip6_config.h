/* ip6_config.h - --ip6 and --gw6 into a stack's configuration, for the
 * tern programs on real drivers (the mem link's ends stay IPv4 only). */
#ifndef APPS_IP6_CONFIG_H
#define APPS_IP6_CONFIG_H

#include <stdio.h>
#include <string.h>

#include "endpoint.h"
#include "opts.h"
#include "tern.h"

static inline void app_ip6_config(const common_opts *co, tern_config *cfg)
{
    if (co->ip6_set) {
        memcpy(cfg->ip6[0], co->ip6, 16);
        cfg->ip6_prefix_len[0] = (uint8_t)co->prefix6;
        cfg->n_ip6 = 1;
    }
    if (co->gw6_set) {
        memcpy(cfg->ip6_gateway, co->gw6, 16);
        cfg->ip6_enable = true;
    }
}

/* " [ADDR6]:PORT" when --ip6 was given, else "": for the servers' banner
 * (out holds EP_STRLEN + 1). APP_ENDPOINTS_LEN: room for both families. */
#define APP_ENDPOINTS_LEN (24 + EP_STRLEN + 1)
static inline char *app_ip6_endpoint(const common_opts *co, unsigned port,
                                     char *out)
{
    out[0] = 0;
    if (co->ip6_set) {
        endpoint e = {{.family = EP_AF_INET6}, (uint16_t)port};
        memcpy(e.addr.v6, co->ip6, 16);
        out[0] = ' ';
        ep_format(&e, out + 1);
    }
    return out;
}

/* "A.B.C.D:PORT [ADDR6]:PORT", the addresses a server listens on; only
 * the IPv6 one on an IPv6-only stack (no IPv4 address: co->ip 0). */
static inline char *app_endpoints(const common_opts *co, unsigned port,
                                  char out[APP_ENDPOINTS_LEN])
{
    char a[16], a6[EP_STRLEN + 1];
    app_ip6_endpoint(co, port, a6);
    if (co->ip)
        snprintf(out, APP_ENDPOINTS_LEN, "%s:%u%s",
                 tern_ip4_format(co->ip, a), port, a6);
    else
        snprintf(out, APP_ENDPOINTS_LEN, "%s", a6[0] ? a6 + 1 : "");
    return out;
}

#endif
