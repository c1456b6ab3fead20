"""softnet_stat since boot, and where NET_RX softirqs have run since boot.

These are cumulative since boot, so they only hint; `--during CMD` diffs the
same counters around a run and is the real test.
"""
from __future__ import annotations

from .. import persist, procfs
from ..model import Finding, unknown

# One CPU taking this share of all NET_RX work is "the hot core".
HOT_SHARE = 0.6
HOT_MIN_EVENTS = 100


def check(facts):
    return [drops(facts), net_rx_since_boot(facts)]


def drops(f):
    why = ("Column 2 counts packets dropped because a CPU's backlog was full, column 3 "
           "the NAPI rounds cut short by netdev_budget.")
    layout, rows = f.softnet
    if not rows:
        return unknown("softnet.drops", "no /proc/net/softnet_stat", why)
    dropped = {r["cpu"]: r.get("dropped", 0) for r in rows if r.get("dropped")}
    squeezed = {r["cpu"]: r.get("time_squeeze", 0) for r in rows if r.get("time_squeeze")}
    data = {"layout": layout, "cpus": len(rows), "dropped": sum(dropped.values()),
            "time_squeeze": sum(squeezed.values()),
            "per_cpu": {str(r["cpu"]): {"dropped": r.get("dropped", 0),
                                        "time_squeeze": r.get("time_squeeze", 0)} for r in rows}}
    cur = "since boot: %d dropped, %d time squeezes (%s layout, %d CPUs)" % (
        data["dropped"], data["time_squeeze"], layout, len(rows))
    rec = "0; check with --during CMD that the benchmark itself adds none"
    if not dropped and not squeezed:
        return Finding("softnet.drops", "ok", cur, rec, why, data=data)
    hot = ", ".join("cpu%d" % c for c in sorted(set(dropped) | set(squeezed)))
    return Finding("softnet.drops", "info", cur + " on " + hot, rec, why,
                   fix="sysctl -w net.core.netdev_max_backlog=10000 net.core.netdev_budget=600",
                   fix_kind="runtime", data=data,
                   persist=[persist.sysctl([("/proc/sys/net/core/netdev_max_backlog", "10000"),
                                            ("/proc/sys/net/core/netdev_budget", "600")])])


def hot_cpu(per_cpu):
    """(cpu, share, total) of the busiest CPU in {cpu: count}, or None."""
    total = sum(per_cpu.values())
    if not total:
        return None
    cpu = max(per_cpu, key=per_cpu.get)
    return cpu, per_cpu[cpu] / total, total


def net_rx_since_boot(f):
    why = ("When one CPU runs most NET_RX softirqs it saturates while the others idle: "
           "the single-core bottleneck RSS/RPS/RFS exist to spread.")
    soft = procfs.parse_softirqs(f.host.read("/proc/softirqs"))
    row = soft["rows"].get("NET_RX")
    if not row:
        return unknown("softirq.net_rx", "no NET_RX row in /proc/softirqs", why)
    per_cpu = dict(zip(soft["cpus"], row))
    data = {"per_cpu": {str(c): n for c, n in per_cpu.items()}}
    hot = hot_cpu(per_cpu)
    if hot is None:
        return Finding("softirq.net_rx", "ok", "no NET_RX softirqs since boot", "spread over cores", why, data=data)
    cpu, share, total = hot
    cur = "since boot cpu%d ran %.0f%% of %d NET_RX softirqs" % (cpu, 100 * share, total)
    busy = share >= HOT_SHARE and len(per_cpu) > 1 and total >= HOT_MIN_EVENTS
    return Finding("softirq.net_rx", "info" if busy else "ok", cur,
                   "spread over the cores that run the application", why, data=data)
