/* ip6_config.h - --ip6 and --gw6 into a stack's configuration, for the
 * tern programs on real drivers (the mem link's ends stay IPv4 only). */
#ifndef APPS_IP6_CONFIG_H
#define APPS_IP6_CONFIG_H

#include <string.h>

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

#endif
