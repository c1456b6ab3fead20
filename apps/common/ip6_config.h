/* ip6_config.h - --ip6 and --gw6 into a stack's configuration, for the
 * tern programs on real drivers (the mem link's ends stay IPv4 only). */
#ifndef APPS_IP6_CONFIG_H
#define APPS_IP6_CONFIG_H

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
 * (out holds EP_STRLEN + 1). */
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

#endif
