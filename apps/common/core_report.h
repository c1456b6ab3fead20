/* core_report.h - the figures of one core in a "per_core" report object,
 * the same names for the same counters in every server: the programs on
 * the internal runtime (rt_app.h) and tern-kv (on tern_linux.h).
 * Header-only, like rt_app.h: the kern-* twins do not link tern. */
#ifndef APPS_CORE_REPORT_H
#define APPS_CORE_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "report.h"
#include "tern.h"

/* Open core i's object in "per_core" ("0", "1", ...); rep_obj_end closes
 * it. */
static inline void rep_core_begin(report *rp, unsigned i)
{
    char name[16];
    snprintf(name, sizeof name, "%u", i);
    rep_obj_begin(rp, name);
}

/* Connections opened, refused and reset, resends and bytes taken in:
 * where a connection's packets reached the wrong core, these show it. */
static inline void rep_core_tcp(report *rp, const tern_counters *k)
{
    rep_u64(rp, "active_opens", k->tcp_active_opens);
    rep_u64(rp, "passive_opens", k->tcp_passive_opens);
    rep_u64(rp, "established", k->tcp_conns_established);
    rep_u64(rp, "attempt_fails", k->tcp_attempt_fails);
    rep_u64(rp, "rst_out", k->tcp_rst_out);
    rep_u64(rp, "rst_in", k->tcp_rst_in);
    rep_u64(rp, "drop_no_conn", k->tcp_drop_no_conn);
    rep_u64(rp, "retransmits", k->tcp_retransmits);
    rep_u64(rp, "bytes_in", k->tcp_bytes_in);
}

/* Software steering's hand-overs, in this order: frames of the core's
 * queue kept, handed to other cores, taken from them, sent to every core,
 * lost to a full ring, lost to no buffer for a copy; transmit bursts
 * handed to the core owning a queue, and those lost to a full ring. */
enum { CORE_STEER_FIGURES = 8 };

static inline void rep_core_steer(report *rp,
                                  const uint64_t v[CORE_STEER_FIGURES])
{
    static const char *const name[CORE_STEER_FIGURES] = {
        "steer_kept", "steer_out", "steer_in", "steer_broadcast",
        "steer_ring_drops", "steer_copy_drops", "steer_tx_forwarded",
        "steer_tx_drops"};
    for (int i = 0; i < CORE_STEER_FIGURES; i++)
        rep_u64(rp, name[i], v[i]);
}

#endif
