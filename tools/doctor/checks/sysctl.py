"""Network sysctls: socket buffers, TCP options, backlog, budget, busy polling."""
from __future__ import annotations

from .. import persist, rate
from ..model import Action, Finding, by_profile, unknown

MiB = 1 << 20
# A measured 100G reader saw the receive buffer autotune to 44.5 MB on one 50 Gbit/s flow,
# so a 64 MiB ceiling keeps buffers from capping a 100G flow on a LAN.
BUFFER_MAX = 64 * MiB
BACKLOG = 10000
BUDGET = 600
BUSY_US = 50


def check(facts):
    return [tcp_mem(facts, "tcp_rmem"), tcp_mem(facts, "tcp_wmem"),
            core_max(facts, "rmem_max"), core_max(facts, "wmem_max"),
            timestamps(facts), window_scaling(facts),
            backlog(facts), budget(facts), busy(facts)]


def _path(name):
    return ("/proc/sys/net/ipv4/" if name.startswith("tcp_") else "/proc/sys/net/core/") + name


def _sysctl_name(name):
    return ("net.ipv4." if name.startswith("tcp_") else "net.core.") + name


def tcp_mem(f, name):
    fid, path = "sysctl." + name, _path(name)
    why = ("The third value caps TCP buffer autotuning; below the bandwidth-delay product "
           "the window, not the stack, limits a fast flow.")
    vals = (f.host.read_line(path) or "").split()
    if len(vals) != 3 or not all(v.isdigit() for v in vals):
        return unknown(fid, "cannot read " + path, why)
    lo, mid, hi = (int(v) for v in vals)
    cur = "%d %d %d (max %d MiB)" % (lo, mid, hi, hi // MiB)
    want = "%d %d %d" % (lo, mid, max(hi, BUFFER_MAX))
    rec = by_profile(f.profile, latency="defaults are fine",
                     default="max >= %d MiB: %s" % (BUFFER_MAX // MiB, want))
    data = {"min": lo, "default": mid, "max": hi}
    if hi >= BUFFER_MAX or f.profile == "latency":
        return Finding(fid, "ok", cur, rec, why, data=data)
    sev = by_profile(f.profile, throughput="warn", default="info")
    return Finding(fid, sev, cur, rec, why,
                   fix="sysctl -w %s='%s'" % (_sysctl_name(name), want), fix_kind="runtime",
                   data=data, actions=[Action("write", path=path, value=want)])


def core_max(f, name):
    fid, path = "sysctl." + name, _path(name)
    why = "Caps what an application may ask for with SO_RCVBUF/SO_SNDBUF (autotuning ignores it)."
    val = f.host.read_int(path)
    if val is None:
        return unknown(fid, "cannot read " + path, why)
    rec = by_profile(f.profile, latency="defaults are fine", default=">= %d" % BUFFER_MAX)
    if val >= BUFFER_MAX or f.profile == "latency":
        return Finding(fid, "ok", str(val), rec, why, data={"value": val})
    sev = by_profile(f.profile, throughput="warn", default="info")
    return Finding(fid, sev, "%d (%d MiB)" % (val, val // MiB), rec, why,
                   fix="sysctl -w %s=%d" % (_sysctl_name(name), BUFFER_MAX), fix_kind="runtime",
                   data={"value": val}, actions=[Action("write", path=path, value=str(BUFFER_MAX))])


def timestamps(f):
    why = ("Timestamps cost 12 bytes of every segment (MSS 1448 instead of 1460 at MTU 1500: "
           "94.1 vs 94.9 Gbit/s on 100GbE) and both ends must agree.")
    val = f.host.read_int("/proc/sys/net/ipv4/tcp_timestamps")
    if val is None:
        return unknown("sysctl.tcp_timestamps", "cannot read tcp_timestamps", why)
    on = val != 0
    cur = "%d (%s: MSS %d at MTU 1500; payload limit at 100G %s with timestamps, %s without)" % (
        val, "on" if on else "off", rate.mss(1500, on),
        rate.fmt_rate(rate.payload_rate(100e9, 1500, True)),
        rate.fmt_rate(rate.payload_rate(100e9, 1500, False)))
    sev = "ok" if on else "info"
    return Finding("sysctl.tcp_timestamps", sev, cur, "1 (the default), the same on both ends",
                   why, fix=None if on else "sysctl -w net.ipv4.tcp_timestamps=1",
                   fix_kind="runtime", data={"value": val},
                   persist=[] if on else [persist.sysctl([("/proc/sys/net/ipv4/tcp_timestamps", "1")])])


def window_scaling(f):
    why = "Without window scaling the TCP window stops at 64 KiB, far below any fast link's BDP."
    path = "/proc/sys/net/ipv4/tcp_window_scaling"
    val = f.host.read_int(path)
    if val is None:
        return unknown("sysctl.tcp_window_scaling", "cannot read tcp_window_scaling", why)
    if val:
        return Finding("sysctl.tcp_window_scaling", "ok", str(val), "1", why, data={"value": val})
    sev = by_profile(f.profile, latency="warn", default="crit")
    return Finding("sysctl.tcp_window_scaling", sev, "0", "1", why,
                   fix="sysctl -w net.ipv4.tcp_window_scaling=1", fix_kind="runtime",
                   data={"value": val}, actions=[Action("write", path=path, value="1")])


def _softnet_totals(f):
    _, rows = f.softnet
    return (sum(r.get("dropped", 0) for r in rows), sum(r.get("time_squeeze", 0) for r in rows))


def backlog(f):
    why = ("Packets queued for a CPU's backlog (RPS, veth, non-NAPI) beyond this are dropped "
           "and counted in softnet_stat column 2.")
    path = "/proc/sys/net/core/netdev_max_backlog"
    val = f.host.read_int(path)
    if val is None:
        return unknown("sysctl.netdev_max_backlog", "cannot read netdev_max_backlog", why)
    drops, _ = _softnet_totals(f)
    want = BACKLOG if f.profile == "throughput" else val
    if drops:
        want = max(want, val * 2)
    data = {"value": val, "softnet_dropped_since_boot": drops}
    if val >= want:
        return Finding("sysctl.netdev_max_backlog", "ok", str(val), ">= %d" % want, why, data=data)
    cur = "%d%s" % (val, " (softnet drops since boot: %d)" % drops if drops else "")
    # drops since boot are only a hint (they may predate this workload): --during decides
    sev = "warn" if f.profile == "throughput" else "info"
    return Finding("sysctl.netdev_max_backlog", sev, cur, ">= %d" % want, why,
                   fix="sysctl -w net.core.netdev_max_backlog=%d" % want, fix_kind="runtime",
                   data=data, actions=[Action("write", path=path, value=str(want))])


def budget(f):
    why = ("NAPI polls at most this many packets per softirq round; when it runs out with work "
           "left the round counts a time squeeze (softnet_stat column 3) and packets wait.")
    path = "/proc/sys/net/core/netdev_budget"
    val = f.host.read_int(path)
    if val is None:
        return unknown("sysctl.netdev_budget", "cannot read netdev_budget", why)
    _, squeezes = _softnet_totals(f)
    usecs = f.host.read_int("/proc/sys/net/core/netdev_budget_usecs")
    data = {"value": val, "usecs": usecs, "time_squeeze_since_boot": squeezes}
    want = BUDGET if (f.profile == "throughput" or squeezes) else val
    cur = "%d%s%s" % (val, " (budget_usecs %d)" % usecs if usecs is not None else "",
                      " (time squeezes since boot: %d)" % squeezes if squeezes else "")
    if val >= want:
        return Finding("sysctl.netdev_budget", "ok", cur, ">= %d" % want, why, data=data)
    sev = "warn" if f.profile == "throughput" else "info"
    return Finding("sysctl.netdev_budget", sev, cur, ">= %d" % want, why,
                   fix="sysctl -w net.core.netdev_budget=%d" % want, fix_kind="runtime",
                   data=data, actions=[Action("write", path=path, value=str(want))])


def busy(f):
    why = ("Busy polling spins on the socket instead of sleeping for the interrupt: lower "
           "latency at the price of a burning core, and it changes what is measured.")
    poll = f.host.read_int("/proc/sys/net/core/busy_poll")
    read = f.host.read_int("/proc/sys/net/core/busy_read")
    if poll is None and read is None:
        return unknown("sysctl.busy_poll", "cannot read busy_poll/busy_read", why)
    data = {"busy_poll": poll, "busy_read": read}
    cur = "busy_poll=%s busy_read=%s" % (poll, read)
    if f.profile == "latency":
        if poll and read:
            return Finding("sysctl.busy_poll", "ok", cur, "busy_poll=busy_read=%d" % BUSY_US, why, data=data)
        actions = [Action("write", path="/proc/sys/net/core/" + n, value=str(BUSY_US))
                   for n, v in (("busy_poll", poll), ("busy_read", read)) if not v and v is not None]
        return Finding("sysctl.busy_poll", "warn", cur, "busy_poll=busy_read=%d" % BUSY_US, why,
                       fix="sysctl -w net.core.busy_poll=%d net.core.busy_read=%d" % (BUSY_US, BUSY_US),
                       fix_kind="runtime", data=data, actions=actions,
                       persist=[persist.sysctl([("/proc/sys/net/core/" + n, str(BUSY_US))
                                                for n in ("busy_poll", "busy_read")])])
    rec = "0 (or the same on every run and stack compared)"
    sev = "ok" if not poll and not read else "info"
    return Finding("sysctl.busy_poll", sev, cur, rec, why, data=data)
