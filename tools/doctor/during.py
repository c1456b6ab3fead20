"""--during CMD: counters before and after a command, and what changed.

Snapshots: /proc/net/softnet_stat, /proc/interrupts, /proc/softirqs,
/sys/class/net/IF/statistics/* and `ethtool -S IF`.  The command runs through
the shell with TERN_ROOT set to the audited root (fixture tests use it to
swap counter files between the two snapshots).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from . import procfs, rate
from .checks.softnet import HOT_MIN_EVENTS, HOT_SHARE, hot_cpu
from .model import Finding

NET = "/sys/class/net"
DROP_STAT = re.compile(r"drop|discard|miss|no_buf|nobuf|out_of_buffer|fifo|over_errors|alloc_fail", re.I)


def snapshot(facts):
    h = facts.host
    snap = {"time": time.monotonic(),
            "softnet": procfs.parse_softnet(h.read("/proc/net/softnet_stat"), facts.cpus)[1],
            "interrupts": procfs.parse_interrupts(h.read("/proc/interrupts")),
            "softirqs": procfs.parse_softirqs(h.read("/proc/softirqs")),
            "nic": {}}
    for iface in facts.ifaces:
        stats = {}
        for name in h.listdir("%s/%s/statistics" % (NET, iface)):
            val = h.read_int("%s/%s/statistics/%s" % (NET, iface, name))
            if val is not None:
                stats[name] = val
        snap["nic"][iface] = {"sys": stats, "ethtool": facts.ethtool.stats(iface)}
    return snap


def run_command(command, root, quiet_stdout=False):
    """Run COMMAND via the shell; with quiet_stdout its output goes to stderr
    (so it cannot corrupt a JSON report on stdout)."""
    env = dict(os.environ, TERN_ROOT=root)
    out = None
    if quiet_stdout:
        try:
            out = sys.stderr.fileno()
        except (AttributeError, ValueError, OSError):  # stderr is not a file (tests)
            out = subprocess.DEVNULL
    start = time.monotonic()
    try:
        rc = subprocess.call(command, shell=True, env=env, stdout=out)
    except OSError as exc:
        sys.stderr.write("tern doctor: cannot run %r: %s\n" % (command, exc))
        rc = 127
    return rc, time.monotonic() - start


def _per_cpu_diff(before, after, cpus_b, cpus_a):
    """{cpu: after - before} for per-CPU rows keyed by the header's CPU list."""
    b = dict(zip(cpus_b, before))
    return {cpu: val - b.get(cpu, 0) for cpu, val in zip(cpus_a, after)}


def _fmt_dist(per_cpu, top=4):
    total = sum(per_cpu.values())
    if not total:
        return "none"
    items = sorted(per_cpu.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join("cpu%d %.0f%%" % (c, 100 * n / total) for c, n in items if n)


def findings(facts, before, after, command, rc, seconds):
    out = [Finding("during.command", "ok" if rc == 0 else "warn",
                   "exit %d after %.2f s" % (rc, seconds), "exit 0",
                   "The counters below only mean something if the workload ran as intended.",
                   data={"command": command, "exit_code": rc, "seconds": round(seconds, 3)})]
    out.append(_softnet(before, after))
    for name in ("NET_RX", "NET_TX"):
        out.append(_softirq(facts, before, after, name))
    for iface in facts.ifaces:
        out += _nic(facts, iface, before, after, seconds)
    return out


def _softnet(before, after):
    why = "Backlog drops and budget squeezes during the run mean the kernel lost or delayed packets."
    b = {r["cpu"]: r for r in before["softnet"]}
    per_cpu = {}
    for r in after["softnet"]:
        old = b.get(r["cpu"], {})
        d = r.get("dropped", 0) - old.get("dropped", 0)
        s = r.get("time_squeeze", 0) - old.get("time_squeeze", 0)
        p = r.get("processed", 0) - old.get("processed", 0)
        per_cpu[r["cpu"]] = {"processed": p, "dropped": d, "time_squeeze": s}
    drops = sum(v["dropped"] for v in per_cpu.values())
    squeezes = sum(v["time_squeeze"] for v in per_cpu.values())
    data = {"dropped": drops, "time_squeeze": squeezes,
            "per_cpu": {str(c): v for c, v in per_cpu.items()}}
    cur = "%d dropped, %d time squeezes" % (drops, squeezes)
    bad = [c for c, v in per_cpu.items() if v["dropped"] or v["time_squeeze"]]
    if bad:
        cur += " (on %s)" % ", ".join("cpu%d" % c for c in bad)
        return Finding("during.softnet", "warn", cur, "0 and 0", why,
                       note="raise net.core.netdev_max_backlog and net.core.netdev_budget "
                            "(sysctl.netdev_max_backlog, sysctl.netdev_budget) and spread the "
                            "receive work over more cores (nic.queues, nic.rps)",
                       fix_kind="manual", data=data)
    return Finding("during.softnet", "ok", cur, "0 and 0", why, data=data)


def _softirq(facts, before, after, name):
    fid = "during." + name.lower()
    why = ("One CPU running most %s softirqs is the hot core: it saturates while "
           "the others idle; spread it with RSS queues or RPS/RFS." % name)
    sb, sa = before["softirqs"], after["softirqs"]
    if name not in sa["rows"]:
        return Finding(fid, "unknown", "unknown (no %s row in /proc/softirqs)" % name, None, why)
    per_cpu = _per_cpu_diff(sb["rows"].get(name, []), sa["rows"][name], sb["cpus"], sa["cpus"])
    data = {"per_cpu": {str(c): n for c, n in per_cpu.items()}}
    hot = hot_cpu(per_cpu)
    if hot is None:
        return Finding(fid, "ok", "no %s softirqs during the run" % name, "spread", why, data=data)
    cpu, share, total = hot
    data.update({"hot_cpu": cpu, "hot_share": round(share, 3), "total": total})
    cur = "%d %s softirqs: %s" % (total, name, _fmt_dist(per_cpu))
    if _is_hot(per_cpu, share, total):
        sev = "info" if facts.profile == "latency" else "warn"
        return Finding(fid, sev, cur + " -> cpu%d is the hot core" % cpu,
                       "no CPU above %d%%" % (100 * HOT_SHARE), why,
                       note="more receive queues (nic.queues: ethtool -L) or RPS/RFS (nic.rps, "
                            "nic.rfs); run the doctor with --profile throughput for the commands",
                       fix_kind="manual", data=data)
    return Finding(fid, "ok", cur, "spread", why, data=data)


def _is_hot(per_cpu, share, total):
    return share >= HOT_SHARE and len(per_cpu) > 1 and total >= HOT_MIN_EVENTS


def _irq_finding(iface, irqs, per_cpu):
    why = ("Which CPUs took this interface's interrupts during the run; with several queues, "
           "one CPU taking most of them means RSS or the IRQ affinity funnels flows to one core.")
    data = {"per_cpu": {str(c): n for c, n in per_cpu.items()}, "queue_irqs": len(irqs)}
    hot = hot_cpu(per_cpu)
    if hot is None:
        return Finding("during.interrupts", "ok", "no interrupts", None, why, subject=iface, data=data)
    cpu, share, total = hot
    data.update({"hot_cpu": cpu, "hot_share": round(share, 3), "total": total})
    cur = "%d interrupts: %s" % (total, _fmt_dist(per_cpu))
    if len({i["queue"] for i in irqs}) > 1 and _is_hot(per_cpu, share, total):
        return Finding("during.interrupts", "warn", cur + " -> cpu%d is the hot core" % cpu,
                       "spread over the queues' CPUs", why,
                       note="check the RSS table (nic.rss: ethtool -x %s) and the queue IRQs' "
                            "affinity (nic.irq_affinity)" % iface,
                       fix_kind="manual", subject=iface, data=data)
    return Finding("during.interrupts", "ok", cur, None, why, subject=iface, data=data)


def _nic(facts, iface, before, after, seconds):
    out = []
    irqs = facts.irqs(iface) if facts.is_physical(iface) else []
    if irqs:
        ib, ia = before["interrupts"], after["interrupts"]
        per_cpu = {c: 0 for c in ia["cpus"]}
        for irq in irqs:
            key = str(irq["irq"])
            if key in ia["irqs"]:
                diff = _per_cpu_diff(ib["irqs"].get(key, {}).get("counts", []),
                                     ia["irqs"][key]["counts"], ib["cpus"], ia["cpus"])
                for c, n in diff.items():
                    per_cpu[c] += n
        out.append(_irq_finding(iface, irqs, per_cpu))
    nb, na = before["nic"].get(iface, {}), after["nic"].get(iface, {})
    sys_d = {k: v - nb.get("sys", {}).get(k, 0) for k, v in na.get("sys", {}).items()}
    eth_d = {k: v - nb.get("ethtool", {}).get(k, 0) for k, v in na.get("ethtool", {}).items()}
    drops = {k: v for k, v in list(sys_d.items()) + list(eth_d.items())
             if v > 0 and DROP_STAT.search(k)}
    rx_b, tx_b = sys_d.get("rx_bytes", 0), sys_d.get("tx_bytes", 0)
    data = {"rx_bytes": rx_b, "tx_bytes": tx_b, "rx_packets": sys_d.get("rx_packets", 0),
            "tx_packets": sys_d.get("tx_packets", 0), "drops": drops, "seconds": round(seconds, 3)}
    cur = "rx %s, tx %s" % (rate.fmt_rate(rx_b * 8 / seconds) if seconds > 0 else "?",
                            rate.fmt_rate(tx_b * 8 / seconds) if seconds > 0 else "?")
    why = "NIC and driver drop counters that grew during the run: packets lost before the stack."
    if drops:
        cur += "; drops: " + ", ".join("%s +%d" % kv for kv in sorted(drops.items())[:5])
        out.append(Finding("during.nic", "warn", cur, "no drop counter grows", why,
                           note="raise the rings to the hardware maximum (nic.rings) and consider "
                                "flow control (nic.flow_control)",
                           fix_kind="manual", subject=iface, data=data))
    else:
        out.append(Finding("during.nic", "ok", cur, "no drop counter grows", why, subject=iface, data=data))
    return out
