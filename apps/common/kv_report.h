/* kv_report.h - the figures tern-kv and kern-kv both print on exit, so the
 * twins compare field by field. Header-only: the fuzzer and unit tests
 * build the kv_*.c files without the report printer. */
#ifndef APPS_KV_REPORT_H
#define APPS_KV_REPORT_H

#include <stddef.h>

#include "kv_cmd.h"
#include "kv_opts.h"
#include "report.h"

static inline void kv_report(report *rp, kv_server *srv, const kv_opts *ko)
{
    rep_str(rp, "mode", "server");
    rep_u64(rp, "port", ko->port);
    rep_u64(rp, "accepted", kv_total(srv, offsetof(kv_ctx, conns_opened)));
    rep_u64(rp, "commands", kv_total(srv, offsetof(kv_ctx, commands)));
    rep_u64(rp, "keys", kv_keys(srv->store));
    rep_u64(rp, "used_memory", kv_used(srv->store));
    rep_u64(rp, "maxmemory", ko->maxmemory);
    rep_u64(rp, "oom_rejections", atomic_load(&srv->store->oom));
    rep_u64(rp, "bytes_in", kv_total(srv, offsetof(kv_ctx, bytes_in)));
    rep_u64(rp, "bytes_out", kv_total(srv, offsetof(kv_ctx, bytes_out)));
    /* Input not served in place (zero copy): requests split across
     * segments, and input kept behind unsent replies. */
    rep_u64(rp, "bytes_copied", kv_total(srv, offsetof(kv_ctx, bytes_copied)));
}

#endif
