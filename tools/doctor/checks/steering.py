"""Which CPU does the receive work: irqbalance, IRQ affinity, L3 sharing of the
IRQ cores, and the software steering RPS/RFS/XPS."""
from __future__ import annotations

from .. import persist
from ..model import Action, Finding, by_profile, unknown
from ..procfs import format_cpulist, format_cpumask, parse_cpulist, parse_cpumask

NET = "/sys/class/net"
RFS_ENTRIES = 32768  # the usual global flow table size


def check_host(facts):
    return [irqbalance(facts)]


def check(facts, iface):
    out = [rps(facts, iface), rfs(facts, iface), xps(facts, iface)]
    if facts.is_physical(iface):
        out += [irq_affinity(facts, iface), irq_l3(facts, iface)]
    return out


def irqbalance(f):
    why = ("irqbalance re-assigns IRQs to CPUs every 10 s, so the receive core moves under a "
           "running benchmark and undoes manual pinning.")
    if not f.host.glob("/proc/[0-9]*"):
        return unknown("irq.irqbalance", "no process list under /proc", why)
    pids = f.irqbalance_pids
    if not pids:
        return Finding("irq.irqbalance", "ok", "not running", "stopped", why, data={"pids": []})
    sev = by_profile(f.profile, throughput="warn", latency="warn", default="crit")
    return Finding("irq.irqbalance", sev, "running (pid %s)" % ", ".join(map(str, pids)),
                   "stopped", why, fix="systemctl disable --now irqbalance",
                   fix_kind="manual", data={"pids": pids}, persist=[persist.service("irqbalance")])


def _rps_state(f, iface):
    """[(queue, path, cpus)] for every rx queue; cpus None when unreadable."""
    out = []
    for q in f.rx_queues(iface):
        path = "%s/%s/queues/%s/rps_cpus" % (NET, iface, q)
        out.append((q, path, parse_cpumask(f.host.read_line(path))))
    return out


def _needs_rps(f, iface, nrx):
    cores = len(f.app_cores) or len(f.cpus)
    return len(f.cpus) > 1 and nrx < cores


def rps(f, iface):
    why = ("With fewer receive queues than busy cores, the queue's CPU does all protocol work "
           "while others idle; RPS hashes flows to other CPUs in software.")
    state = _rps_state(f, iface)
    if not state or all(c is None for _, _, c in state):
        return unknown("nic.rps", "no readable %s/%s/queues/rx-*/rps_cpus" % (NET, iface), why,
                       subject=iface)
    on = {q: c for q, _, c in state if c}
    data = {"rx_queues": len(state), "rps_cpus": {q: format_cpulist(c or []) for q, _, c in state}}
    want = format_cpumask(f.cpus)
    if on:
        cur = "on: " + ", ".join("%s -> %s" % (q, format_cpulist(c)) for q, c in list(on.items())[:4])
        return Finding("nic.rps", "ok", cur, None, why, subject=iface, data=data)
    if not _needs_rps(f, iface, len(state)):
        return Finding("nic.rps", "ok", "off (%d rx queues for %d core(s): RSS spreads)"
                       % (len(state), len(f.app_cores) or len(f.cpus)), "off", why,
                       subject=iface, data=data)
    sev = "info" if f.profile == "latency" or not f.is_physical(iface) else "warn"
    acts = [Action("write", path=p, value=want) for _, p, c in state if c is not None]
    return Finding("nic.rps", sev, "off on %d rx queue(s) for %d CPUs" % (len(state), len(f.cpus)),
                   "rps_cpus=%s (CPUs %s)" % (want, format_cpulist(f.cpus)), why, fix=_echo_lines(acts),
                   fix_kind="runtime", subject=iface, data=data, actions=acts)


def rfs(f, iface):
    why = ("RFS sends each flow's packets to the CPU where its reader last ran, so protocol "
           "work and the application share caches; RPS alone picks a random CPU.")
    entries_path = "/proc/sys/net/core/rps_sock_flow_entries"
    entries = f.host.read_int(entries_path)
    state = _rps_state(f, iface)
    cnts = {q: f.host.read_int("%s/%s/queues/%s/rps_flow_cnt" % (NET, iface, q)) for q, _, _ in state}
    if entries is None or not state:
        return unknown("nic.rfs", "cannot read rps_sock_flow_entries or rps_flow_cnt", why, subject=iface)
    data = {"rps_sock_flow_entries": entries, "rps_flow_cnt": cnts}
    vals = sorted({"?" if c is None else str(c) for c in cnts.values()})
    cur = "rps_sock_flow_entries=%d, rps_flow_cnt=%s on %d queue(s)" % (entries, "/".join(vals), len(cnts))
    rps_on = any(c for _, _, c in state)
    if not rps_on and not _needs_rps(f, iface, len(state)):
        return Finding("nic.rfs", "ok", cur, "not needed without RPS", why, subject=iface, data=data)
    per_q = max(RFS_ENTRIES // max(len(state), 1), 1)
    if entries > 0 and all(c for c in cnts.values()):
        return Finding("nic.rfs", "ok", cur, None, why, subject=iface, data=data)
    sev = "info" if f.profile == "latency" or not f.is_physical(iface) else "warn"
    acts = [] if entries else [Action("write", path=entries_path, value=str(RFS_ENTRIES))]
    acts += [Action("write", path="%s/%s/queues/%s/rps_flow_cnt" % (NET, iface, q), value=str(per_q))
             for q, c in cnts.items() if not c and c is not None]
    return Finding("nic.rfs", sev, cur, "rps_sock_flow_entries=%d, rps_flow_cnt=%d per queue"
                   % (RFS_ENTRIES, per_q), why, fix=_echo_lines(acts) or None,
                   fix_kind="runtime", subject=iface, data=data, actions=acts)


def xps(f, iface):
    why = ("XPS maps each CPU to its own transmit queue so senders on different cores do not "
           "contend for one queue lock.")
    txq = f.tx_queues(iface)
    if not txq:
        return unknown("nic.xps", "no tx queues under %s/%s/queues" % (NET, iface), why, subject=iface)
    masks = {q: parse_cpumask(f.host.read_line("%s/%s/queues/%s/xps_cpus" % (NET, iface, q))) for q in txq}
    data = {"tx_queues": len(txq), "xps_cpus": {q: format_cpulist(m) if m is not None else None
                                                for q, m in masks.items()}}
    if len(txq) == 1:
        return Finding("nic.xps", "ok", "1 tx queue (XPS not needed)", None, why, subject=iface, data=data)
    if any(masks.values()):
        cur = "on: " + ", ".join("%s -> %s" % (q, format_cpulist(m)) for q, m in list(masks.items())[:4] if m)
        return Finding("nic.xps", "ok", cur, None, why, subject=iface, data=data)
    per_q = _xps_plan(f, iface, len(txq))
    acts = [Action("write", path="%s/%s/queues/%s/xps_cpus" % (NET, iface, q), value=format_cpumask(per_q[i]))
            for i, q in enumerate(txq) if per_q[i] and masks[q] is not None]
    return Finding("nic.xps", "info", "off on %d tx queues" % len(txq),
                   "each CPU sends on one queue: " + ", ".join(
                       "%s -> CPU %s" % (q, format_cpulist(per_q[i])) for i, q in enumerate(txq[:4]) if per_q[i])
                   + (", ..." if len(txq) > 4 else ""), why, fix=_echo_lines(acts) or None,
                   fix_kind="runtime", subject=iface, data=data, actions=acts)


def _xps_plan(f, iface, ntx):
    """{tx queue index: [CPUs]}: a CPU that nic.irq_affinity gives queue i sends on
    tx-i too (its completions stay on that core); the other CPUs round-robin."""
    targets, _ = irq_targets(f, iface)
    owner = {}
    for i in range(ntx if targets else 0):
        owner.setdefault(targets[i % len(targets)], i)
    per_q = {i: [] for i in range(ntx)}
    for n, cpu in enumerate(f.cpus):
        per_q[owner.get(cpu, n % ntx)].append(cpu)
    return per_q


def _local_cpus(f, iface):
    local = parse_cpulist(f.host.read_line("%s/%s/device/local_cpulist" % (NET, iface)))
    local = [c for c in local if c in f.cpus]
    return local or f.cpus


def irq_targets(f, iface):
    """(CPUs the queues are spread over, what they are): the app cores when
    given, else the CPUs local to the device, else every online CPU."""
    if f.app_cores:
        return list(f.app_cores), "app cores"
    local = _local_cpus(f, iface)
    return local, "device-local CPUs" if local != f.cpus else "online CPUs"


def _queue_state(f, group):
    """'spread' (an IRQ allowed on several CPUs), 'split' (the queue's IRQs
    pinned to different CPUs), or None (one CPU for the whole queue)."""
    affs = [f.irq_affinity(i["irq"]) for i in group]
    if any(len(a) > 1 for a in affs):
        return "spread"
    if len({a[0] for a in affs if a}) > 1:
        return "split"
    return None


def irq_affinity(f, iface):
    why = ("A queue IRQ allowed on many CPUs lands anywhere and moves, so the core doing the receive "
           "work changes between runs; the receive and transmit IRQs of one queue belong on one CPU "
           "and different queues on different cores.")
    queues = f.irq_queues(iface)
    if not queues:
        return unknown("nic.irq_affinity", "no queue IRQs for %s in /proc/interrupts" % iface, why,
                       subject=iface)
    targets, source = irq_targets(f, iface)
    if not targets:
        return unknown("nic.irq_affinity", "no online CPU list (%s/online) to spread the queues over"
                       % "/sys/devices/system/cpu", why, subject=iface)
    rows, qrows, acts, bad = [], [], [], []
    for n, (queue, group) in enumerate(queues):
        state = _queue_state(f, group)
        target = targets[n % len(targets)] if state else None
        for irq in group:
            aff = f.irq_affinity(irq["irq"])
            rows.append({"irq": irq["irq"], "name": irq["name"], "queue": queue, "kind": irq["kind"],
                         "affinity": format_cpulist(aff) if aff else None})
            if state and aff != [target]:
                acts.append(Action("write", path="/proc/irq/%d/smp_affinity_list" % irq["irq"],
                                   value=str(target)))
        qrows.append({"queue": queue, "irqs": [i["irq"] for i in group],
                      "names": [i["name"] for i in group],
                      "affinity": [format_cpulist(f.irq_affinity(i["irq"])) or None for i in group],
                      "problem": state, "target": target})
        if state:
            bad.append(qrows[-1])
    data = {"irqs": rows, "queues": qrows, "targets": format_cpulist(targets), "target_source": source}
    if not bad:
        return Finding("nic.irq_affinity", "ok", "%d queue(s), each queue's IRQs pinned to one CPU"
                       % len(qrows), "one CPU per queue", why, subject=iface, data=data)
    shown = "; ".join("queue %s IRQ%s %s on %s" % (
        q["queue"] if q["queue"] is not None else "?", "s" if len(q["irqs"]) > 1 else "",
        ",".join(map(str, q["irqs"])),
        "/".join(a or "?" for a in q["affinity"])) for q in bad[:3])
    cur = "%d of %d queue(s) not on one CPU: %s%s" % (len(bad), len(qrows), shown,
                                                     "; ..." if len(bad) > 3 else "")
    plan = ", ".join("queue %s -> CPU %d" % (q["queue"] if q["queue"] is not None else "?", q["target"])
                     for q in bad[:4]) + (", ..." if len(bad) > 4 else "")
    rec = "each queue's IRQs on one CPU, queues round-robin over the %s %s: %s" % (
        source, format_cpulist(targets), plan)
    return Finding("nic.irq_affinity", "warn", cur, rec, why, fix=_echo_lines(acts),
                   fix_kind="runtime", subject=iface, data=data, actions=acts)


def _echo_lines(acts):
    """The shell form of write Actions, one command per line."""
    return "\n".join("echo %s > %s" % (a.value, a.path) for a in acts)


def irq_l3(f, iface):
    why = ("Cores sharing the IRQ core's L3 find the packet data already in cache; elsewhere "
           "it crosses the interconnect (one measured 100G case: 52.3 vs 37.9 Gbit/s).")
    irqs = f.irqs(iface)
    if not irqs:
        return unknown("nic.irq_l3", "no queue IRQs for %s" % iface, why, subject=iface)
    cores, source = f.irq_cores(iface)
    if not cores:
        return unknown("nic.irq_l3", "no CPU serviced or allowed for %s's IRQs" % iface, why, subject=iface)
    groups = []
    for c in cores:
        g = f.l3_of(c)
        if g and g not in groups:
            groups.append(g)
    data = {"irq_cores": cores, "source": source, "l3_groups": [format_cpulist(g) for g in groups]}
    if not groups:
        return unknown("nic.irq_l3", "no cache/index*/shared_cpu_list for the IRQ cores", why,
                       subject=iface, data=data)
    cur = "IRQ cores %s (%s) share L3 with: %s" % (
        format_cpulist(cores), source, "; ".join(format_cpulist(g) for g in groups))
    return Finding("nic.irq_l3", "ok", cur, "application cores inside these L3 groups", why,
                   subject=iface, data=data)
