"""Per-interface NIC settings read with ethtool: driver, link, queues,
coalescing, rings, flow control, offloads, ntuple rules, RSS."""
from __future__ import annotations

import os

from .. import persist, rate
from ..procfs import format_cpulist
from ..model import Action, Finding, by_profile, unknown

NET = "/sys/class/net"
NTUPLE_NOTE = ("or steer the benchmark's flows to the app cores' queues with ntuple rules: "
               "ethtool -U %s flow-type tcp4 dst-port (the port) action (the queue)")


def check(facts, iface):
    out = [driver(facts, iface), link(facts, iface)]
    if not facts.is_physical(iface):
        return out  # veth/bridge/ifb: no rings, coalescing or PCIe to speak of
    return out + [queues(facts, iface), coalesce(facts, iface), rings(facts, iface),
                  flow_control(facts, iface), offloads(facts, iface),
                  ntuple(facts, iface), rss(facts, iface)]


def _unknown(fid, iface, answer, opt, why):
    return unknown(fid, answer.reason(opt), why, subject=iface)


def driver(f, iface):
    why = "Driver and firmware decide the defaults of everything below; record them with every result."
    info = f.ethtool.query("-i", iface)
    d = dict(info.data) if info.ok else {}
    if not d.get("driver"):
        drv = os.path.basename(f.host.realpath("%s/%s/device/driver" % (NET, iface)))
        d["driver"] = drv if f.is_physical(iface) and drv != "driver" else None
    kind = "physical" if f.is_physical(iface) else "virtual"
    cur = "%s (%s%s%s)" % (d.get("driver") or "unknown driver", kind,
                           ", fw " + d["firmware-version"] if d.get("firmware-version") else "",
                           ", bus " + d["bus-info"] if d.get("bus-info") else "")
    data = {"driver": d.get("driver"), "version": d.get("version"),
            "firmware": d.get("firmware-version"), "bus": d.get("bus-info"), "kind": kind}
    return Finding("nic.driver", "ok", cur, None, why, subject=iface, data=data)


def link(f, iface):
    why = ("The link rate and MTU set the ceiling: TCP payload can never exceed "
           "link x MSS / (MTU + 38).")
    mbps = f.link_mbps(iface)
    mtu = f.mtu(iface)
    state = f.host.read_line("%s/%s/operstate" % (NET, iface)) or "?"
    data = {"speed_mbps": mbps, "mtu": mtu, "operstate": state}
    if mtu is None:
        return unknown("nic.link", "no %s/%s/mtu" % (NET, iface), why, subject=iface, data=data)
    ts = f.tcp_timestamps
    cur = "%s, %s, MTU %d" % ("%d Mb/s" % mbps if mbps else "speed unknown", state, mtu)
    if mbps and mtu > 52:
        limit = rate.payload_rate(mbps * 1e6, mtu, ts)
        other = rate.payload_rate(mbps * 1e6, mtu, not ts)
        data["payload_limit_bps"] = limit
        data["payload_limit_bps_timestamps"] = limit if ts else other
        data["payload_limit_bps_no_timestamps"] = other if ts else limit
        cur += "; TCP payload limit %s with timestamps (on here), %s without" % (
            rate.fmt_rate(data["payload_limit_bps_timestamps"]),
            rate.fmt_rate(data["payload_limit_bps_no_timestamps"])) if ts else \
            "; TCP payload limit %s without timestamps (off here), %s with" % (
            rate.fmt_rate(limit), rate.fmt_rate(other))
    return Finding("nic.link", "ok", cur, None, why, subject=iface, data=data)


def queues(f, iface):
    why = ("Each queue interrupts its own CPU: fewer queues than cores leaves cores without "
           "receive work, more queues than the application's cores hashes flows elsewhere.")
    ans = f.ethtool.query("-l", iface)
    cores = len(f.app_cores) or len(f.cpus)
    if ans.ok:
        cur_d, max_d = ans.data.get("current", {}), ans.data.get("max", {})
        key = "combined" if cur_d.get("combined") else "rx"
        n, nmax = cur_d.get(key), max_d.get(key)
        source = "ethtool -l"
    else:
        key, n, nmax, source = "combined", len(f.rx_queues(iface)) or None, None, "sysfs rx-* queues"
    if not isinstance(n, int):
        return _unknown("nic.queues", iface, ans, "-l", why)
    want = min(cores, nmax) if isinstance(nmax, int) and nmax > 0 else cores
    steered = f.ntuple_queues(iface)
    data = {"current": n, "max": nmax, "kind": key, "cores_used": cores, "source": source,
            "ntuple_queues": steered}
    cur = "%d %s (max %s) for %d %s" % (n, key, nmax if nmax is not None else "?", cores,
                                        "app core(s)" if f.app_cores else "CPU(s)")
    argv = ["ethtool", "-L", iface, key, str(want)]
    acts = [Action("run", argv=argv, undo=["ethtool", "-L", iface, key, str(n)])] if ans.ok else []
    keep = [persist.udev(f, iface, [argv])]
    if n < want:
        return Finding("nic.queues", "warn", cur, "%d (one per core used)" % want, why, fix=" ".join(argv),
                       fix_kind="runtime", subject=iface, data=data, actions=acts, persist=keep)
    if n > want and f.app_cores and not steered and f.profile != "throughput":
        # not applied: whether to shrink or to add ntuple rules is the user's call
        return Finding("nic.queues", "warn", cur + ", no ntuple rules",
                       "%d, or ntuple rules steering the flows to the app's queues" % want, why,
                       fix=" ".join(argv), note=NTUPLE_NOTE % iface,
                       fix_kind="manual", subject=iface, data=data, persist=keep)
    return Finding("nic.queues", "ok", cur, "%d (one per core used)" % want, why,
                   subject=iface, data=data)


def coalesce(f, iface):
    why = ("Interrupt coalescing trades latency for fewer interrupts; adaptive mode changes "
           "it with load, so the same test sees different delays (one measured case: 24.6 vs 29.2 us).")
    ans = f.ethtool.query("-c", iface)
    if not ans.ok:
        return _unknown("nic.coalesce", iface, ans, "-c", why)
    d = ans.data
    adaptive, usecs, frames = d.get("adaptive-rx"), d.get("rx-usecs"), d.get("rx-frames")
    data = {"adaptive_rx": adaptive, "rx_usecs": usecs, "rx_frames": frames,
            "adaptive_tx": d.get("adaptive-tx"), "tx_usecs": d.get("tx-usecs")}
    cur = "adaptive-rx %s, rx-usecs %s, rx-frames %s" % (adaptive or "n/a", usecs, frames)
    if f.profile == "latency":
        rec, bad = "adaptive-rx off, rx-usecs 0", adaptive == "on" or (usecs or 0) > 0
        argv, undo = (["rx-usecs", "0"], ["rx-usecs", str(usecs)]) if usecs is not None else ([], [])
    elif f.profile == "reproducible":
        rec, bad = "adaptive-rx off (a fixed rx-usecs)", adaptive == "on"
        argv, undo = [], []
    else:
        return Finding("nic.coalesce", "ok", cur, "adaptive, or rx-usecs >= 8 to save interrupts",
                       why, subject=iface, data=data)
    if not bad:
        return Finding("nic.coalesce", "ok", cur, rec, why, subject=iface, data=data)
    if adaptive == "on":
        argv, undo = ["adaptive-rx", "off"] + argv, ["adaptive-rx", "on"] + undo
    full = ["ethtool", "-C", iface] + argv
    return Finding("nic.coalesce", "warn", cur, rec, why, fix=" ".join(full), fix_kind="runtime",
                   subject=iface, data=data,
                   actions=[Action("run", argv=full, undo=["ethtool", "-C", iface] + undo)])


def rings(f, iface):
    why = ("Short rings overflow during bursts and the NIC drops before the kernel sees the "
           "packets; raise them to the hardware maximum.")
    ans = f.ethtool.query("-g", iface)
    if not ans.ok:
        return _unknown("nic.rings", iface, ans, "-g", why)
    cur_d, max_d = ans.data.get("current", {}), ans.data.get("max", {})
    pairs = [(k, cur_d.get(k), max_d.get(k)) for k in ("rx", "tx")
             if isinstance(cur_d.get(k), int) and isinstance(max_d.get(k), int)]
    if not pairs:
        return _unknown("nic.rings", iface, ans, "-g", why)
    data = {k: {"current": c, "max": m} for k, c, m in pairs}
    cur = ", ".join("%s %d/%d" % (k, c, m) for k, c, m in pairs)
    rec = by_profile(f.profile, latency="any (the maximum only matters under overload)",
                     default=", ".join("%s %d" % (k, m) for k, _, m in pairs))
    short = [(k, c, m) for k, c, m in pairs if c < m]
    if not short or f.profile == "latency":
        return Finding("nic.rings", "ok", cur, rec, why, subject=iface, data=data)
    argv = ["ethtool", "-G", iface] + [t for k, _, m in short for t in (k, str(m))]
    undo = ["ethtool", "-G", iface] + [t for k, c, _ in short for t in (k, str(c))]
    return Finding("nic.rings", "warn", cur + " (current/max)", rec, why, fix=" ".join(argv),
                   fix_kind="runtime", subject=iface, data=data,
                   actions=[Action("run", argv=argv, undo=undo)])


def flow_control(f, iface):
    why = ("Pause frames let a full NIC stop its link partner instead of dropping (turn them "
           "on, switch side too, for throughput), but they also stall traffic and add latency.")
    ans = f.ethtool.query("-a", iface)
    if not ans.ok:
        return _unknown("nic.flow_control", iface, ans, "-a", why)
    rx, tx = ans.data.get("rx"), ans.data.get("tx")
    data = {"autoneg": ans.data.get("autonegotiate"), "rx": rx, "tx": tx}
    cur = "rx %s, tx %s" % ("on" if rx else "off", "on" if tx else "off")
    if f.profile == "throughput":
        rec, good, fix = "rx on, tx on (and on the switch port)", rx and tx, "ethtool -A %s rx on tx on" % iface
    elif f.profile == "latency":
        rec, good, fix = "rx off, tx off", not rx and not tx, "ethtool -A %s rx off tx off" % iface
    else:
        return Finding("nic.flow_control", "ok", cur, "the same on both ends (record it)", why,
                       subject=iface, data=data)
    if good:
        return Finding("nic.flow_control", "ok", cur, rec, why, subject=iface, data=data)
    return Finding("nic.flow_control", "info", cur, rec, why, fix=fix, fix_kind="manual",
                   subject=iface, data=data, persist=[persist.udev(f, iface, [fix.split()])])


OFFLOADS = (("generic-receive-offload", "gro"), ("large-receive-offload", "lro"),
            ("tcp-segmentation-offload", "tso"), ("generic-segmentation-offload", "gso"),
            ("rx-checksumming", "rx-csum"), ("tx-checksumming", "tx-csum"),
            ("receive-hashing", "rxhash"), ("ntuple-filters", "ntuple"))


def offloads(f, iface):
    why = ("GRO/TSO batch segments so per-packet cost is paid per 64 KB; LRO also merges but "
           "delays packets; both sides of a comparison need the same offloads.")
    ans = f.ethtool.query("-k", iface)
    if not ans.ok:
        return _unknown("nic.offloads", iface, ans, "-k", why)
    feats = {short: ans.data[name] for name, short in OFFLOADS if name in ans.data}
    data = {short: v["on"] for short, v in feats.items()}
    cur = " ".join("%s=%s" % (k, "on" if v["on"] else "off") for k, v in feats.items())
    if f.profile == "throughput":
        off = [k for k in ("gro", "tso", "gso") if k in feats and not feats[k]["on"] and not feats[k]["fixed"]]
        if off:
            argv = ["ethtool", "-K", iface] + [t for k in off for t in (k, "on")]
            undo = ["ethtool", "-K", iface] + [t for k in off for t in (k, "off")]
            return Finding("nic.offloads", "warn", cur, "gro, tso, gso on", why, fix=" ".join(argv),
                           fix_kind="runtime", subject=iface, data=data,
                           actions=[Action("run", argv=argv, undo=undo)])
        return Finding("nic.offloads", "ok", cur, "gro, tso, gso on", why, subject=iface, data=data)
    if f.profile == "latency" and feats.get("lro", {}).get("on") and not feats["lro"]["fixed"]:
        argv = ["ethtool", "-K", iface, "lro", "off"]
        return Finding("nic.offloads", "warn", cur, "lro off", why, fix=" ".join(argv),
                       fix_kind="runtime", subject=iface, data=data,
                       actions=[Action("run", argv=argv, undo=["ethtool", "-K", iface, "lro", "on"])])
    return Finding("nic.offloads", "ok", cur, "the same on both hosts (record them)", why,
                   subject=iface, data=data)


def ntuple(f, iface):
    why = ("ntuple rules pin a flow to a chosen queue, so its softirq runs on a known core "
           "next to the application (ethtool -U ... action 2).")
    ans = f.ethtool.query("-n", iface)
    if not ans.ok:
        return _unknown("nic.ntuple", iface, ans, "-n", why)
    rules = ans.data.get("rules")
    data = {"rings": ans.data.get("rings"), "rules": rules}
    if rules is None:
        return Finding("nic.ntuple", "ok", "rule listing not supported (%s rings)" % ans.data.get("rings"),
                       None, why, subject=iface, data=data)
    cur = "%d rule(s)%s" % (len(rules), (": " + ", ".join(
        "%s -> queue %s" % (r.get("type") or "?", r.get("queue")) for r in rules[:4])) if rules else "")
    if not rules and f.app_cores and f.profile == "reproducible" and (ans.data.get("rings") or 0) > 1:
        return Finding("nic.ntuple", "info", cur, "a rule steering the test flow to the app's queue",
                       why, note=NTUPLE_NOTE % iface, fix_kind="manual", subject=iface, data=data,
                       persist=[persist.manual("ntuple rules are lost at reboot: add the ethtool -U "
                                               "command to %s as a RUN line" % persist.UDEV_FILE)])
    return Finding("nic.ntuple", "ok", cur, None, why, subject=iface, data=data)


def rss(f, iface):
    why = "The RSS indirection table decides which queue (and so which core) each flow hash lands on."
    ans = f.ethtool.query("-x", iface)
    if not ans.ok:
        return _unknown("nic.rss", iface, ans, "-x", why)
    table, rings = ans.data.get("table"), ans.data.get("rings")
    data = {"rings": rings, "entries": len(table) if table else None,
            "queues": sorted(set(table)) if table else None, "hfunc": ans.data.get("hfunc")}
    if not table:
        return Finding("nic.rss", "ok", "no indirection table (%s rings)" % rings, None, why,
                       subject=iface, data=data)
    used = sorted(set(table))
    cur = "%d entries over queues %s (%s)" % (len(table), format_cpulist(used), data["hfunc"] or "?")
    if rings and len(used) < rings:
        argv = ["ethtool", "-X", iface, "equal", str(rings)]
        return Finding("nic.rss", "info", cur, "all %d queues, unless restricted on purpose" % rings,
                       why, fix=" ".join(argv), fix_kind="manual", subject=iface, data=data,
                       persist=[persist.udev(f, iface, [argv])])
    return Finding("nic.rss", "ok", cur, None, why, subject=iface, data=data)
